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

int mbk_find_nonfinite(const double *v, int n)
{
    if (!v || n <= 0) return -1;
    const int block = 256;
    for (int start = 0; start < n; start += block) {
        int end = n - start > block ? start + block : n;
        uint64_t carry = 0;
        for (int i = start; i < end; ++i) {
            uint64_t bits;
            memcpy(&bits, &v[i], sizeof bits);
            carry |= (bits & EXP_MASK) + EXP_ONE;
        }
        if (!(carry >> 63)) continue;
        /* a bad value in this block: the first one */
        for (int i = start; i < end; ++i) {
            uint64_t bits;
            memcpy(&bits, &v[i], sizeof bits);
            if ((bits & EXP_MASK) == EXP_MASK) return i;
        }
    }
    return -1;
}
