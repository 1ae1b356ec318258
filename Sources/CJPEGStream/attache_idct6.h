// Private to CJPEGStream: the AVX2 6×6 inverse DCT (idct6.c), used by jpeg_stream.c.
#ifndef ATTACHE_IDCT6_H
#define ATTACHE_IDCT6_H

#include <stdio.h>
#include <jpeglib.h>

typedef void (*attache_idct_method)(j_decompress_ptr, jpeg_component_info *, JCOEFPTR, JSAMPARRAY, JDIMENSION);

/// The AVX2 + FMA 6×6 inverse DCT, or NULL when this CPU cannot run it.
attache_idct_method attache_idct6_method(void);

#endif
