/* Finding NaN and infinity in arrays of results: the cheap output checks every
 * public call that produces numbers makes before it reports success. */
#include <stdint.h>
#include <string.h>

#include "mbk/status.h"

/* An exponent of all ones is NaN or infinity: adding one to the exponent field then
   carries into the sign bit, and only then. Testing the bits (not the value) this way,
   with an OR of the sums, lets the compiler vectorize the scan with plain integer adds;
   finite values never set the sign bit of the sum. */
#define EXP_MASK UINT64_C(0x7ff0000000000000)
#define EXP_ONE UINT64_C(0x0010000000000000)

/* OR of the exponent-plus-one of v[0..n): its sign bit is set iff some v[i] is not finite. */
static inline uint64_t carry_of(const double *v, int n)
{
    uint64_t carry = 0;
    for (int i = 0; i < n; ++i) {
        uint64_t bits;
        memcpy(&bits, &v[i], sizeof bits);
        carry |= (bits & EXP_MASK) + EXP_ONE;
    }
    return carry;
}

int mbk_find_nonfinite(const double *v, int n)
{
    if (!v || n <= 0) return -1;
    /* runs of 32 (a loop of fixed length, unrolled), then the rest: little set-up for the
       short arrays of most calls, full vectors for long ones */
    uint64_t carry = 0;
    int i = 0;
    for (; i + 32 <= n; i += 32) carry |= carry_of(v + i, 32);
    carry |= carry_of(v + i, n - i);
    if (!(carry >> 63)) return -1;
    /* a bad value somewhere (the failure path): the first one */
    for (int k = 0; k < n; ++k) {
        uint64_t bits;
        memcpy(&bits, &v[k], sizeof bits);
        if ((bits & EXP_MASK) == EXP_MASK) return k;
    }
    return -1;
}
