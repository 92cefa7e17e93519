/* Finding NaN and infinity in arrays of results: the cheap output checks every
 * public call that produces numbers makes before it reports success. */
#include <stdint.h>
#include <string.h>

#include "mbk/status.h"

/* An exponent of all ones is NaN or infinity; testing the bits (not the value)
   lets the compiler vectorize the scan, and finite values never overflow it. */
#define EXP_MASK UINT64_C(0x7ff0000000000000)

int mbk_find_nonfinite(const double *v, int n)
{
    if (!v || n <= 0) return -1;
    const int block = 512; /* long enough that the reduction at its end costs little */
    for (int start = 0; start < n; start += block) {
        int end = start + block < n ? start + block : n;
        uint64_t bad = 0;
        for (int i = start; i < end; ++i) {
            uint64_t bits;
            memcpy(&bits, &v[i], sizeof bits);
            bad |= (uint64_t)((bits & EXP_MASK) == EXP_MASK);
        }
        if (!bad) continue;
        for (int i = start; i < end; ++i) {
            uint64_t bits;
            memcpy(&bits, &v[i], sizeof bits);
            if ((bits & EXP_MASK) == EXP_MASK) return i;
        }
    }
    return -1;
}
