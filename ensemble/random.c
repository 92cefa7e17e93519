/* Counter-based random numbers for ensembles: Philox4x32-10 (Salmon, Moraes,
 * Dror and Shaw, "Parallel random numbers: as easy as 1, 2, 3", SC'11), the
 * generator of Random123, keyed by the seed and counted by (member, draw). */
#include <math.h>

#include "mbk/ensemble.h"

static inline void mulhilo(uint32_t a, uint32_t b, uint32_t *hi, uint32_t *lo)
{
    uint64_t p = (uint64_t)a * b;
    *hi = (uint32_t)(p >> 32);
    *lo = (uint32_t)p;
}

void mbk_philox4x32(const uint32_t ctr[4], const uint32_t key[2], uint32_t out[4])
{
    uint32_t c0 = ctr[0], c1 = ctr[1], c2 = ctr[2], c3 = ctr[3], k0 = key[0], k1 = key[1];
    for (int r = 0; r < 10; ++r) {
        if (r > 0) {
            k0 += 0x9E3779B9u;
            k1 += 0xBB67AE85u;
        }
        uint32_t hi0, lo0, hi1, lo1;
        mulhilo(0xD2511F53u, c0, &hi0, &lo0);
        mulhilo(0xCD9E8D57u, c2, &hi1, &lo1);
        uint32_t n0 = hi1 ^ c1 ^ k0, n2 = hi0 ^ c3 ^ k1;
        c0 = n0, c1 = lo1, c2 = n2, c3 = lo0;
    }
    out[0] = c0, out[1] = c1, out[2] = c2, out[3] = c3;
}

/* The block of (seed, member, draw): counter (member, draw), key seed. */
static void block(uint64_t seed, uint64_t member, uint64_t draw, uint32_t out[4])
{
    const uint32_t ctr[4] = {(uint32_t)member, (uint32_t)(member >> 32), (uint32_t)draw, (uint32_t)(draw >> 32)};
    const uint32_t key[2] = {(uint32_t)seed, (uint32_t)(seed >> 32)};
    mbk_philox4x32(ctr, key, out);
}

uint64_t mbk_random_bits(uint64_t seed, uint64_t member, uint64_t draw)
{
    uint32_t o[4];
    block(seed, member, draw, o);
    return (uint64_t)o[0] << 32 | o[1];
}

/* 53 bits to [0, 1) */
static inline double unit(uint64_t bits) { return (double)(bits >> 11) * 0x1.0p-53; }

double mbk_random_uniform(uint64_t seed, uint64_t member, uint64_t draw)
{
    return unit(mbk_random_bits(seed, member, draw));
}

double mbk_random_normal(uint64_t seed, uint64_t member, uint64_t draw)
{
    uint32_t o[4];
    block(seed, member, draw, o);
    /* u1 in (0, 1], so the logarithm is finite; u2 in [0, 1) */
    double u1 = 1.0 - unit((uint64_t)o[0] << 32 | o[1]);
    double u2 = unit((uint64_t)o[2] << 32 | o[3]);
    return sqrt(-2.0 * log(u1)) * cos(6.283185307179586476925 * u2);
}
