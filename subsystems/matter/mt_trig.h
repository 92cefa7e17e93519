/* Sine and cosine written so that a loop over an array of angles vectorizes:
 * no calls and no branches. Private to the matter subsystem, which takes the
 * sines and cosines of all Pin angles in one such loop per Position sweep.
 *
 * x = k pi/2 + r with |r| <= pi/4: pi/2 is split in three parts (the first two
 * with 33 significant bits, so k times them is exact), which keeps r accurate
 * to far below an ulp for |x| <= MT_TRIG_MAX. The Taylor series of sin and cos
 * on |r| <= pi/4 are cut where the next term is below 1e-19 of the result.
 * Agreement with libm is tested to 2 ulp (tests/test_trig.c). */
#ifndef MBK_MT_TRIG_H
#define MBK_MT_TRIG_H

#include <math.h>

/* Largest |x| taken by mt_sincos; larger angles go to libm. */
#define MT_TRIG_MAX 1.0e5

/* sin x and cos x for |x| <= MT_TRIG_MAX (NaN in, NaN out). */
static inline void mt_sincos(double x, double *s, double *c)
{
    const double two_over_pi = 0x1.45f306dc9c883p-1;
    const double p1 = 0x1.921fb544p+0, p2 = 0x1.0b4611a6p-34, p3 = 0x1.3198a2e037073p-69;
    double k = nearbyint(x * two_over_pi);
    double r = ((x - k * p1) - k * p2) - k * p3;
    double z = r * r;
    double sp = -1.0 / 6 + z * (1.0 / 120 + z * (-1.0 / 5040 + z * (1.0 / 362880 +
                z * (-1.0 / 39916800 + z * (1.0 / 6227020800.0 + z * (-1.0 / 1307674368000.0 +
                z * (1.0 / 355687428096000.0)))))));
    double cp = 1.0 / 24 + z * (-1.0 / 720 + z * (1.0 / 40320 + z * (-1.0 / 3628800 +
                z * (1.0 / 479001600 + z * (-1.0 / 87178291200.0 + z * (1.0 / 20922789888000.0 +
                z * (-1.0 / 6402373705728000.0)))))));
    double sr = r + r * z * sp;
    double cr = 1.0 - 0.5 * z + z * z * cp;
    /* quadrant n = k mod 4: (sin, cos) = (sr, cr), (cr, -sr), (-sr, -cr), (-cr, sr);
       (k - 1.5) / 4 is never halfway between integers, so nearbyint is floor(k / 4)
       here, and unlike floor it vectorizes */
    double n = k - 4.0 * nearbyint((k - 1.5) * 0.25);
    int odd = n == 1.0 || n == 3.0;
    double sv = odd ? cr : sr, cv = odd ? sr : cr;
    *s = n >= 2.0 ? -sv : sv;
    *c = n == 1.0 || n == 2.0 ? -cv : cv;
}

#endif
