/* Derivatives of the dynamics (mbk/derivatives.h, docs/derivatives.md).
 *
 * Part 1: every built-in mobilizer's calc_derivatives op against central
 * differences of its other ops (mbk_mobilizer_calc_derivatives_numeric), at
 * random q and u, with quaternions and with Euler angles. */
#include <mbk/mbk.h>
#include <stdlib.h>
#include <string.h>

#include "mbk_test.h"

/* ---- random numbers (fixed seed) ------------------------------------- */

static unsigned long long rng_state = 0x2545F4914F6CDD1Dull;
static double rnd(void) /* uniform in [-1, 1) */
{
    rng_state = rng_state * 6364136223846793005ull + 1442695040888963407ull;
    return (double)(rng_state >> 11) / 4503599627370496.0 - 1.0;
}

enum kind {
    K_WELD, K_PIN, K_SLIDER, K_TRANSLATION, K_BALL, K_FREE,
    K_SCREW, K_UNIVERSAL, K_CYLINDER, K_PLANAR, K_GIMBAL, K_BUSHING, K_FUNCTION,
    NKINDS
};
static const char *const kind_names[NKINDS] = {"Weld", "Pin", "Slider", "Translation", "Ball", "Free",
                                               "Screw", "Universal", "Cylinder", "Planar", "Gimbal", "Bushing",
                                               "FunctionBased"};

/* A function-based mobilizer of 3 coordinates: angles and lengths read shared
   coordinates through sinusoids, polynomials and a linear function. */
static mbk_mobilizer make_function_based(void)
{
    const double lin2[3] = {0.7, -0.4, 0.1};
    const double poly[4] = {0.2, -0.3, 0.5, 0.05};
    mbk_function fns[6] = {
        mbk_function_sinusoid(0.9, 1.3, 0.2), mbk_function_linear(lin2, 2), mbk_function_polynomial(poly, 3),
        mbk_function_sinusoid(0.3, 0.7, -0.4), mbk_function_polynomial(poly, 3), mbk_function_linear(lin2, 2)};
    static const int i0[1] = {0}, i1[2] = {1, 0}, i2[1] = {2}, i3[1] = {1}, i4[1] = {0}, i5[2] = {2, 1};
    const int *const idx[6] = {i0, i1, i2, i3, i4, i5};
    const int n[6] = {1, 2, 1, 1, 1, 2};
    const mbk_vec3 axes[6] = {{1, 0.2, 0}, {0, 1, 0.3}, {0.1, 0, 1}, {1, 0, 0}, {0.3, 1, 0}, {0, 0.2, 1}};
    return mbk_mobilizer_function_based(3, fns, idx, n, axes);
}

static mbk_mobilizer make_mobilizer(int kind)
{
    switch (kind) {
    case K_WELD: return mbk_mobilizer_weld();
    case K_PIN: return mbk_mobilizer_pin();
    case K_SLIDER: return mbk_mobilizer_slider();
    case K_TRANSLATION: return mbk_mobilizer_translation();
    case K_BALL: return mbk_mobilizer_ball();
    case K_FREE: return mbk_mobilizer_free();
    case K_SCREW: return mbk_mobilizer_screw(0.3 * rnd());
    case K_UNIVERSAL: return mbk_mobilizer_universal();
    case K_CYLINDER: return mbk_mobilizer_cylinder();
    case K_PLANAR: return mbk_mobilizer_planar();
    case K_GIMBAL: return mbk_mobilizer_gimbal();
    case K_BUSHING: return mbk_mobilizer_bushing();
    default: return make_function_based();
    }
}

static void destroy_mobilizer(mbk_mobilizer *m)
{
    if (m->ops && m->ops->destroy && m->impl) m->ops->destroy(m->impl);
}

/* Entry r of a spatial vector (angular 0..2, linear 3..5). */
static double sv(const mbk_spatial_vec *v, int r)
{
    const mbk_vec3 *p = r < 3 ? &v->w : &v->v;
    return r % 3 == 0 ? p->x : r % 3 == 1 ? p->y : p->z;
}

/* Largest difference of two derivative records over the used entries, relative
   to max(1, largest entry). */
static double deriv_diff(const mbk_mobilizer_derivatives *a, const mbk_mobilizer_derivatives *b, int nq, int nu)
{
    double big = 1.0, diff = 0.0;
#define CMP(x, y)                                                       \
    do {                                                                \
        double xa = (x), ya = (y);                                      \
        big = fmax(big, fmax(fabs(xa), fabs(ya)));                      \
        diff = fmax(diff, fabs(xa - ya));                               \
    } while (0)
    for (int k = 0; k < nq; ++k) {
        for (int r = 0; r < 3; ++r)
            for (int c = 0; c < 3; ++c) CMP(a->dR[k].m[r][c], b->dR[k].m[r][c]);
        CMP(a->dp[k].x, b->dp[k].x); CMP(a->dp[k].y, b->dp[k].y); CMP(a->dp[k].z, b->dp[k].z);
        for (int j = 0; j < nu; ++j)
            for (int r = 0; r < 6; ++r) CMP(sv(&a->dH[k][j], r), sv(&b->dH[k][j], r));
        for (int r = 0; r < 6; ++r) CMP(sv(&a->dHdot_u_dq[k], r), sv(&b->dHdot_u_dq[k], r));
        for (int i = 0; i < nq; ++i) CMP(a->dqdot_dq[i][k], b->dqdot_dq[i][k]);
    }
    for (int j = 0; j < nu; ++j)
        for (int r = 0; r < 6; ++r) CMP(sv(&a->dHdot_u_du[j], r), sv(&b->dHdot_u_du[j], r));
#undef CMP
    return diff / big;
}

static void test_mobilizer_derivatives(void)
{
    for (int kind = 0; kind < NKINDS; ++kind) {
        mbk_mobilizer mob = make_mobilizer(kind);
        CHECK(mob.ops != NULL);
        if (!mob.ops) continue;
        double worst = 0.0;
        for (int euler = 0; euler < 2; ++euler) {
            int nq = mbk_mobilizer_get_nq(&mob, euler), nu = mob.ops->nu;
            for (int trial = 0; trial < 20; ++trial) {
                double q[7], u[6];
                for (int k = 0; k < nq; ++k) q[k] = 1.5 * rnd();
                for (int j = 0; j < nu; ++j) u[j] = 2.0 * rnd();
                if (!euler && (kind == K_BALL || kind == K_FREE)) q[0] += 1.5; /* keep |q| away from 0 */
                mbk_mobilizer_derivatives a, n;
                memset(&a, 0, sizeof a);
                memset(&n, 0, sizeof n);
                CHECK_INT(mbk_mobilizer_calc_derivatives(&mob, euler, q, u, &a), MBK_OK);
                CHECK_INT(mbk_mobilizer_calc_derivatives_numeric(&mob, euler, q, u, &n), MBK_OK);
                CHECK_INT(a.numeric, 0);
                CHECK_INT(n.numeric, 1);
                worst = fmax(worst, deriv_diff(&a, &n, nq, nu));
            }
        }
        if (getenv("MBK_TEST_VERBOSE")) printf("  %-13s analytic vs numeric %.2g\n", kind_names[kind], worst);
        if (!CHECK(worst < 1e-8)) fprintf(stderr, "    %s: analytic vs numeric %.3g\n", kind_names[kind], worst);
        destroy_mobilizer(&mob);
    }
}

int main(void)
{
    test_mobilizer_derivatives();
    return mbk_test_finish();
}
