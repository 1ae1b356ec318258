#ifndef ATTACHE_CTURBOJPEG_SHIM_H
#define ATTACHE_CTURBOJPEG_SHIM_H

#include <stddef.h>
#include <turbojpeg.h>

// TJSCALED and TJPAD are macros; Swift cannot import function-like macros.
static inline int attache_tj_scaled(int dimension, tjscalingfactor sf) { return TJSCALED(dimension, sf); }
static inline int attache_tj_pad(int width) { return TJPAD(width); }

#endif
