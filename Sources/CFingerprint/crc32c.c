#include "attache_crc32c.h"

#include <string.h>

#if defined(__x86_64__)
#include <nmmintrin.h>

int attache_crc32c_hardware_available(void) {
    __builtin_cpu_init();
    return __builtin_cpu_supports("sse4.2") ? 1 : 0;
}

__attribute__((target("sse4.2")))
uint32_t attache_crc32c_hardware_update(uint32_t state, const unsigned char *bytes, size_t count) {
    uint64_t crc = state;
    // Eight bytes an instruction; the few bytes before and after go one at a time.
    while (count > 0 && ((uintptr_t)bytes & 7) != 0) {
        crc = _mm_crc32_u8((uint32_t)crc, *bytes++);
        count--;
    }
    while (count >= 8) {
        uint64_t word;
        memcpy(&word, bytes, 8);
        crc = _mm_crc32_u64(crc, word);
        bytes += 8;
        count -= 8;
    }
    while (count > 0) {
        crc = _mm_crc32_u8((uint32_t)crc, *bytes++);
        count--;
    }
    return (uint32_t)crc;
}

#else

int attache_crc32c_hardware_available(void) { return 0; }

uint32_t attache_crc32c_hardware_update(uint32_t state, const unsigned char *bytes, size_t count) {
    (void)bytes;
    (void)count;
    return state;
}

#endif
