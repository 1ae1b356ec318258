#include "attache_crc32c.h"

#include <pthread.h>
#include <string.h>

#if defined(__x86_64__)
#include <nmmintrin.h>

int attache_crc32c_hardware_available(void) {
    __builtin_cpu_init();
    return __builtin_cpu_supports("sse4.2") ? 1 : 0;
}

// One crc32 instruction takes three cycles before the next can use its result, but the CPU can start
// one every cycle. So long inputs are summed as three runs side by side, each from a zero register, and
// the three registers are joined after: the register after A‖B is the register after A moved across
// |B| zero bytes, xor the register of B alone. Moving across a fixed length is a multiplication by the
// constant x^(8·length) modulo the polynomial, read here from four tables of 256 (one per byte of the
// register). Two run lengths: 3 × 8 KiB for the bulk, 3 × 256 bytes for what is left.
enum { LONG_RUN = 8192, SHORT_RUN = 256 };

static uint32_t long_shift[4][256];
static uint32_t short_shift[4][256];
static pthread_once_t shift_tables_once = PTHREAD_ONCE_INIT;

// a·b modulo the polynomial, both in the reflected bit order the register keeps (x⁰ is the top bit).
static uint32_t multiply(uint32_t a, uint32_t b) {
    uint32_t product = 0;
    for (uint32_t mask = 1u << 31; mask != 0; mask >>= 1) {
        if (a & mask) product ^= b;
        b = (b & 1) ? (b >> 1) ^ 0x82F63B78u : b >> 1;
    }
    return product;
}

// The tables that multiply a register by x^(8·length).
static void fill_shift_table(uint32_t table[4][256], size_t length) {
    uint32_t power = 1u << 31;                       // x⁰
    for (size_t bit = 0; bit < 8 * length; bit++) {  // times x, 8·length times
        power = (power & 1) ? (power >> 1) ^ 0x82F63B78u : power >> 1;
    }
    for (uint32_t byte = 0; byte < 256; byte++) {
        for (int position = 0; position < 4; position++) {
            table[position][byte] = multiply(power, byte << (8 * position));
        }
    }
}

static void fill_shift_tables(void) {
    fill_shift_table(long_shift, LONG_RUN);
    fill_shift_table(short_shift, SHORT_RUN);
}

static inline uint32_t shift(const uint32_t table[4][256], uint32_t crc) {
    return table[0][crc & 0xFF] ^ table[1][(crc >> 8) & 0xFF] ^ table[2][(crc >> 16) & 0xFF] ^ table[3][crc >> 24];
}

static inline uint64_t load64(const unsigned char *bytes) {
    uint64_t word;
    memcpy(&word, bytes, 8);
    return word;
}

__attribute__((target("sse4.2")))
static uint64_t three_runs(uint64_t crc, const unsigned char *bytes, size_t run, const uint32_t table[4][256]) {
    uint64_t first = crc, second = 0, third = 0;
    const unsigned char *end = bytes + run;
    for (; bytes < end; bytes += 8) {
        first = _mm_crc32_u64(first, load64(bytes));
        second = _mm_crc32_u64(second, load64(bytes + run));
        third = _mm_crc32_u64(third, load64(bytes + 2 * run));
    }
    return shift(table, shift(table, (uint32_t)first) ^ (uint32_t)second) ^ (uint32_t)third;
}

__attribute__((target("sse4.2")))
uint32_t attache_crc32c_hardware_update(uint32_t state, const unsigned char *bytes, size_t count) {
    uint64_t crc = state;
    // Eight bytes an instruction; the few bytes before and after go one at a time.
    while (count > 0 && ((uintptr_t)bytes & 7) != 0) {
        crc = _mm_crc32_u8((uint32_t)crc, *bytes++);
        count--;
    }
    if (count >= 3 * SHORT_RUN) {
        pthread_once(&shift_tables_once, fill_shift_tables);
        for (; count >= 3 * LONG_RUN; bytes += 3 * LONG_RUN, count -= 3 * LONG_RUN) {
            crc = three_runs(crc, bytes, LONG_RUN, long_shift);
        }
        for (; count >= 3 * SHORT_RUN; bytes += 3 * SHORT_RUN, count -= 3 * SHORT_RUN) {
            crc = three_runs(crc, bytes, SHORT_RUN, short_shift);
        }
    }
    for (; count >= 8; bytes += 8, count -= 8) {
        crc = _mm_crc32_u64(crc, load64(bytes));
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
