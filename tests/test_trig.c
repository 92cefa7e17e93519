/* The Pin sweep's own sine and cosine (subsystems/matter/mt_trig.h) against
 * libm: at most 2 ulp over the range it takes, NaN in and NaN out, and angles
 * beyond its range handed to libm (bitwise libm's result through the matter
 * subsystem). */
#include <float.h>
#include <math.h>
#include <stdint.h>

#include <mbk/mbk.h>

#include "../subsystems/matter/mt_trig.h"
#include "mbk_test.h"

/* |a - b| in units of the last place of b (b's ulp, at least the smallest normal's). */
static double ulps(double a, double b)
{
    if (a == b) return 0.0;
    double ulp = nextafter(fabs(b), INFINITY) - fabs(b);
    if (ulp < DBL_MIN) ulp = DBL_MIN;
    return fabs(a - b) / ulp;
}

static uint64_t rng = 88172645463325252ull;
static double uniform(void) /* in [-1, 1) */
{
    rng ^= rng << 13;
    rng ^= rng >> 7;
    rng ^= rng << 17;
    return 2.0 * (double)(rng >> 11) / 9007199254740992.0 - 1.0;
}

static void test_against_libm(void)
{
    const double scale[] = {1e-8, 1e-3, 0.5, 0.785398, 4.0, 10.0, 1e3, MT_TRIG_MAX};
    double worst = 0.0;
    for (int k = 0; k < 8; ++k)
        for (int i = 0; i < 250000; ++i) {
            double x = scale[k] * uniform(), s, c;
            mt_sincos(x, &s, &c);
            worst = fmax(worst, fmax(ulps(s, sin(x)), ulps(c, cos(x))));
        }
    /* multiples of pi/4 and quadrant boundaries, where the reduction and the
       quadrant choice meet */
    for (int n = -400; n <= 400; ++n) {
        double x = n * 0.78539816339744831, s, c; /* n pi/4 */
        for (int d = -2; d <= 2; ++d) {
            double y = x + d * 1e-15 * (1 + fabs(x)), sy, cy;
            mt_sincos(y, &sy, &cy);
            worst = fmax(worst, fmax(ulps(sy, sin(y)), ulps(cy, cos(y))));
        }
        mt_sincos(x, &s, &c);
        CHECK(fabs(s * s + c * c - 1.0) < 4e-16);
    }
    printf("mt_sincos: worst %.2f ulp against libm\n", worst);
    CHECK(worst <= 2.0);
    double s, c;
    mt_sincos(NAN, &s, &c);
    CHECK(isnan(s) && isnan(c));
    mt_sincos(0.0, &s, &c);
    CHECK(s == 0.0 && c == 1.0);
}

/* One Pin on Ground; X_GB's rotation is Rz(q): beyond MT_TRIG_MAX it is libm's exactly. */
static void test_through_matter(void)
{
    mbk_system *sys = mbk_multibody_create("pin angles");
    mbk_matter *m = mbk_multibody_upd_matter(sys);
    mbk_mass_props mp = mbk_mass_props_from_central(1.0, mbk_vec3_make(0.5, 0, 0), mbk_mat33_diag(0.1, 0.2, 0.3));
    mbk_transform I = mbk_transform_identity();
    CHECK_INT(mbk_matter_add_body(m, 0, &I, &mp, &I, mbk_mobilizer_pin()), 1);
    CHECK_INT(mbk_system_realize_topology(sys), MBK_OK);
    mbk_state *s = mbk_state_create();
    CHECK_INT(mbk_state_copy(s, mbk_system_get_default_state(sys)), MBK_OK);
    const double angles[] = {0.3, -2.5, 1e4 + 0.1, 3e5 + 0.3, -7e8};
    for (int k = 0; k < 5; ++k) {
        double q = angles[k];
        mbk_transform X;
        CHECK_INT(mbk_system_realize(sys, s, MBK_STAGE_MODEL), MBK_OK);
        CHECK_INT(mbk_state_set_q(s, &q, 1), MBK_OK);
        CHECK_INT(mbk_system_realize(sys, s, MBK_STAGE_POSITION), MBK_OK);
        CHECK_INT(mbk_matter_get_body_transform(m, s, 1, &X), MBK_OK);
        if (fabs(q) > MT_TRIG_MAX) {
            CHECK(X.R.m[0][0] == cos(q) && X.R.m[1][0] == sin(q));
        } else {
            CHECK(ulps(X.R.m[0][0], cos(q)) <= 2.0 && ulps(X.R.m[1][0], sin(q)) <= 2.0);
        }
    }
    mbk_state_destroy(s);
    mbk_system_destroy(sys);
}

int main(void)
{
    test_against_libm();
    test_through_matter();
    return mbk_test_finish();
}
