/* Custom and function-based mobilizers.
 *
 * (a) Random trees built twice, with the built-in Translation and with the
 *     example's CustomTranslation (examples/custom_mobilizer.c) in the same
 *     places: X_GB, V_GB, A_GB, udot, qdotdot, mass matrix and inverse
 *     dynamics agree to 1e-14 (quaternion and Euler modes).
 * (b) A function-based mobilizer that reproduces Pin (rotation about z =
 *     q0, all else 0) against the built-in Pin on random chains: 1e-13.
 * (c) Function-based mobilizers with nonlinear functions of several q
 *     (sinusoid, polynomial, spline, linear, a two-argument user function
 *     with mixed partials): the documented convention by hand; H against
 *     finite differences of X_FM; Hdot u against finite differences of H u;
 *     in a tree, V_GB against central differences of X_GB along qdot, A_GB
 *     against central differences of V_GB (q +- h qdot, u +- h udot), qdot
 *     = u, qdotdot = udot, the residual zero at the ABA's udot; the fits.
 * (d) Bad input to mbk_mobilizer_function_based: {NULL, NULL}, MBK_EINVAL
 *     (MBK_ENOMEM when allocation fails), and the functions destroyed. */
#include <mbk/mbk.h>
#include <stdlib.h>
#include <string.h>

#include "mbk_test.h"

/* The example's CustomTranslation ops table, without its main(). */
#define CUSTOM_MOBILIZER_NO_MAIN
#include "../examples/custom_mobilizer.c"

#define MAX_B 32

/* ---- random numbers (fixed seed) ------------------------------------------ */

static unsigned long long rng_state;
static void rng_seed(unsigned long long s) { rng_state = s * 2862933555777941757ull + 3037000493ull; }
static double rnd(void) /* uniform in [-1, 1) */
{
    rng_state = rng_state * 6364136223846793005ull + 1442695040888963407ull;
    return (double)(rng_state >> 11) / 4503599627370496.0 - 1.0;
}
static int rnd_int(int n) { return (int)((rnd() + 1.0) * 0.5 * n) % n; }
static mbk_vec3 rvec(double scale) { return mbk_vec3_make(scale * rnd(), scale * rnd(), scale * rnd()); }
static mbk_mat33 rrot(void) { return mbk_mat33_from_axis_angle(mbk_vec3_normalize(rvec(1.0)), 3.0 * rnd()); }
static mbk_transform rframe(double reach) { return mbk_transform_make(rrot(), rvec(reach)); }

static mbk_mass_props rmass(void)
{
    mbk_mat33 R = rrot();
    double a = 0.2 + 0.1 * (rnd() + 1), b = 0.2 + 0.1 * (rnd() + 1), c = 0.2 + 0.1 * (rnd() + 1);
    mbk_mat33 I = mbk_mat33_mul_transpose(mbk_mat33_mul(R, mbk_mat33_diag(b + c, a + c, a + b)), R);
    return mbk_mass_props_from_central(1.0 + 0.5 * rnd(), rvec(0.4), I);
}

/* ---- applied forces, through a force subsystem ----------------------------- */

typedef struct applied {
    double tau[6 * MAX_B];
    mbk_spatial_vec F[MAX_B + 1];
} applied;

static int apply_forces(void *impl, const mbk_subsystem_ctx *c, mbk_state *s)
{
    const applied *a = impl;
    const mbk_system *sys = mbk_subsystem_ctx_get_system(c);
    double *tau = mbk_multibody_upd_mobility_forces(sys, s);
    mbk_spatial_vec *F = mbk_multibody_upd_body_forces(sys, s);
    int nu = mbk_state_get_nu(s), nb = mbk_matter_get_num_bodies(mbk_multibody_get_matter(sys));
    for (int i = 0; i < nu; ++i) tau[i] += a->tau[i];
    for (int b = 1; b < nb; ++b) F[b] = mbk_spatial_vec_add(F[b], a->F[b]);
    return 0;
}

static const mbk_subsystem_ops force_ops = {.name = "test forces", .realize_dynamics = apply_forces};

static void random_forces(applied *a, int nu, int nb)
{
    memset(a, 0, sizeof *a);
    for (int i = 0; i < nu; ++i) a->tau[i] = rnd();
    for (int b = 1; b < nb; ++b) a->F[b] = mbk_spatial_vec_make(rvec(1.0), rvec(1.0));
}

/* ---- everything the kernel computes, flattened --------------------------- */

typedef struct results {
    int nq, nu, nb;
    double X[12 * (MAX_B + 1)], V[6 * (MAX_B + 1)], A[6 * (MAX_B + 1)];
    double qdot[7 * MAX_B], udot[6 * MAX_B], qdotdot[7 * MAX_B];
    double M[36 * MAX_B * MAX_B], residual[6 * MAX_B];
} results;

static void put_transform(double *o, const mbk_transform *X)
{
    for (int r = 0; r < 3; ++r)
        for (int c = 0; c < 3; ++c) o[3 * r + c] = X->R.m[r][c];
    o[9] = X->p.x;
    o[10] = X->p.y;
    o[11] = X->p.z;
}

/* Realized to Acceleration: read it all; residual at the given known udot. */
static void collect(const mbk_system *sys, const mbk_state *s, const applied *ap, const double *known,
                    results *r)
{
    const mbk_matter *m = mbk_multibody_get_matter(sys);
    r->nq = mbk_state_get_nq(s);
    r->nu = mbk_state_get_nu(s);
    r->nb = mbk_matter_get_num_bodies(m);
    for (int b = 0; b < r->nb; ++b) {
        mbk_transform X;
        mbk_spatial_vec V, A;
        CHECK_INT(mbk_matter_get_body_transform(m, s, b, &X), MBK_OK);
        CHECK_INT(mbk_matter_get_body_velocity(m, s, b, &V), MBK_OK);
        CHECK_INT(mbk_matter_get_body_acceleration(m, s, b, &A), MBK_OK);
        put_transform(r->X + 12 * b, &X);
        memcpy(r->V + 6 * b, &V, sizeof V);
        memcpy(r->A + 6 * b, &A, sizeof A);
    }
    memcpy(r->qdot, mbk_state_get_qdot(s), (size_t)r->nq * sizeof(double));
    memcpy(r->udot, mbk_state_get_udot(s), (size_t)r->nu * sizeof(double));
    memcpy(r->qdotdot, mbk_state_get_qdotdot(s), (size_t)r->nq * sizeof(double));
    CHECK_INT(mbk_matter_calc_mass_matrix(m, s, r->M), MBK_OK);
    CHECK_INT(mbk_matter_calc_residual_force(m, s, ap->tau, ap->F, known, r->residual), MBK_OK);
}

/* Largest |a - b| relative to max(1, max |b|). */
static double rel_err(const double *a, const double *b, int n)
{
    double e = 0, s = 1;
    for (int i = 0; i < n; ++i) {
        e = fmax(e, fabs(a[i] - b[i]));
        s = fmax(s, fabs(b[i]));
    }
    return e / s;
}

static double worst_ab[2];

static void compare(const char *what, const results *x, const results *y, double tol, int slot)
{
    struct { const char *name; const double *a, *b; int n; } items[] = {
        {"X_GB", x->X, y->X, 12 * x->nb}, {"V_GB", x->V, y->V, 6 * x->nb},
        {"A_GB", x->A, y->A, 6 * x->nb},  {"qdot", x->qdot, y->qdot, x->nq},
        {"udot", x->udot, y->udot, x->nu}, {"qdotdot", x->qdotdot, y->qdotdot, x->nq},
        {"M", x->M, y->M, x->nu * x->nu}, {"residual", x->residual, y->residual, x->nu},
    };
    CHECK_INT(x->nq, y->nq);
    CHECK_INT(x->nu, y->nu);
    CHECK_INT(x->nb, y->nb);
    for (size_t i = 0; i < sizeof items / sizeof items[0]; ++i) {
        double e = rel_err(items[i].a, items[i].b, items[i].n);
        worst_ab[slot] = fmax(worst_ab[slot], e);
        if (!CHECK(e <= tol)) fprintf(stderr, "    %s: %s differs by %.3g\n", what, items[i].name, e);
    }
}

/* A system from the builder, with random q, u and forces (from `seed`), realized
   to Acceleration; fills r. The builder draws the tree from its own seed. */
typedef void (*builder_fn)(mbk_matter *m, int nbodies, int variant);

static void run_built(builder_fn build, int nbodies, int variant, int euler, unsigned long long seed,
                      results *r)
{
    static applied ap;
    mbk_system *sys = mbk_multibody_create("test");
    build(mbk_multibody_upd_matter(sys), nbodies, variant);
    mbk_system_add_subsystem(sys, &force_ops, &ap);
    CHECK_INT(mbk_system_realize_topology(sys), MBK_OK);
    mbk_state *s = mbk_state_create();
    CHECK_INT(mbk_state_init(s, sys), MBK_OK);
    CHECK_INT(mbk_matter_set_use_euler_angles(mbk_multibody_get_matter(sys), s, euler != 0), MBK_OK);
    CHECK_INT(mbk_system_realize(sys, s, MBK_STAGE_MODEL), MBK_OK);
    rng_seed(seed);
    int nq = mbk_state_get_nq(s), nu = mbk_state_get_nu(s);
    double *q = mbk_state_upd_q(s), *u = mbk_state_upd_u(s), known[6 * MAX_B];
    for (int i = 0; i < nq; ++i) q[i] = rnd();
    for (int i = 0; i < nu; ++i) u[i] = rnd();
    for (int i = 0; i < nu; ++i) known[i] = rnd();
    random_forces(&ap, nu, mbk_matter_get_num_bodies(mbk_multibody_get_matter(sys)));
    CHECK_INT(mbk_system_realize(sys, s, MBK_STAGE_ACCELERATION), MBK_OK);
    collect(sys, s, &ap, known, r);
    mbk_state_destroy(s);
    mbk_system_destroy(sys);
}

/* ====================================================================== */
/* (a) CustomTranslation == Translation                                    */
/* ====================================================================== */

/* variant 0: built-in Translation; 1: CustomTranslation. Same random tree. */
static void build_translation_tree(mbk_matter *m, int nbodies, int variant)
{
    rng_seed(1000u + (unsigned)nbodies);
    for (int i = 0; i < nbodies; ++i) {
        int parent = rnd_int(i + 1);
        int kind = rnd_int(8); /* 0-2 Translation, 3 Pin, 4 Slider, 5 Ball, 6 Free, 7 Weld */
        if (i == nbodies - 1 && kind == 7) kind = 0;
        mbk_transform X_PF = rframe(0.7), X_BM = rframe(0.3);
        mbk_mass_props mp = rmass();
        mbk_mobilizer mob = kind <= 2 ? (variant ? custom_translation() : mbk_mobilizer_translation())
                          : kind == 3 ? mbk_mobilizer_pin() : kind == 4 ? mbk_mobilizer_slider()
                          : kind == 5 ? mbk_mobilizer_ball() : kind == 6 ? mbk_mobilizer_free()
                          : mbk_mobilizer_weld();
        CHECK_INT(mbk_matter_add_body(m, parent, &X_PF, &mp, &X_BM, mob), i + 1);
    }
}

static void test_custom_translation(void)
{
    static results a, b;
    static const int sizes[] = {1, 2, 3, 5, 8, 13, 21, 30};
    for (int euler = 0; euler <= 1; ++euler)
        for (size_t k = 0; k < sizeof sizes / sizeof sizes[0]; ++k) {
            run_built(build_translation_tree, sizes[k], 0, euler, 77u + k, &a);
            run_built(build_translation_tree, sizes[k], 1, euler, 77u + k, &b);
            compare("CustomTranslation vs Translation", &b, &a, 1e-14, 0);
        }
}

/* ====================================================================== */
/* Functions for the function-based mobilizers                              */
/* ====================================================================== */

/* A user function with a counted destroy, to check ownership:
   f(x) = c[n] + sum_j c[j] x_j + k * prod_j sin(x_j)   (mixed partials when n >= 2).
   Derivatives up to max_order (set below 2 to test the rejection). */
typedef struct counted {
    mbk_function_ops ops; /* n_args varies, so each instance has its own table */
    double c[7], k;
} counted;

static int destroyed_count;

static double counted_eval(const counted *f, const int *comp, int order, const double *x)
{
    int n = f->ops.n_args, times[6] = {0};
    for (int i = 0; i < order; ++i) times[comp[i]]++;
    /* linear part */
    double lin = 0.0;
    if (order == 0) {
        lin = f->c[n];
        for (int j = 0; j < n; ++j) lin += f->c[j] * x[j];
    } else if (order == 1) {
        lin = f->c[comp[0]];
    }
    /* product part: d^m/dx^m sin(x) = sin(x + m pi/2) */
    double prod = n > 0 ? f->k : 0.0;
    for (int j = 0; j < n; ++j) prod *= sin(x[j] + times[j] * 1.5707963267948966);
    return lin + prod;
}

static double counted_value(const void *impl, const double *x) { return counted_eval(impl, NULL, 0, x); }

static double counted_derivative(const void *impl, const int *comp, int order, const double *x)
{
    const counted *f = impl;
    if (order < 0 || order > f->ops.max_derivative_order || (order > 0 && !comp)) return NAN;
    for (int i = 0; i < order; ++i)
        if (comp[i] < 0 || comp[i] >= f->ops.n_args) return NAN;
    return counted_eval(f, comp, order, x);
}

static void counted_destroy(void *impl)
{
    destroyed_count++;
    free(impl);
}

static mbk_function counted_fn(int n_args, const double *c, double k, int max_order)
{
    counted *f = calloc(1, sizeof *f);
    mbk_function out = {NULL, NULL};
    if (!f) return out;
    f->ops.n_args = n_args;
    f->ops.max_derivative_order = max_order;
    f->ops.value = counted_value;
    f->ops.derivative = counted_derivative;
    f->ops.destroy = counted_destroy;
    if (c) memcpy(f->c, c, (size_t)(n_args + 1) * sizeof(double));
    f->k = k;
    out.ops = &f->ops;
    out.impl = f;
    return out;
}

/* Rotation about z = q0, nothing else: a Pin. The rotation sits in `slot`
   (0, 1 or 2) with axes[slot] along z (not unit length); the other rotation
   functions are 0 about x and y. */
static mbk_mobilizer fb_pin(int slot)
{
    const double one[2] = {1.0, 0.0};
    static const int i0[1] = {0};
    mbk_function fns[6] = {mbk_function_constant(0, 0), mbk_function_constant(0, 0),
                           mbk_function_constant(0, 0), mbk_function_constant(0, 0),
                           mbk_function_constant(0, 0), mbk_function_constant(0, 0)};
    mbk_function_destroy(&fns[slot]);
    fns[slot] = mbk_function_linear(one, 1);
    const int *idx[6] = {NULL, NULL, NULL, NULL, NULL, NULL};
    int n[6] = {0, 0, 0, 0, 0, 0};
    idx[slot] = i0;
    n[slot] = 1;
    mbk_vec3 axes[6] = {{1, 0, 0}, {0, 1, 0}, {0, 0, 1}, {1, 0, 0}, {0, 1, 0}, {0, 0, 1}};
    axes[2] = axes[slot];
    axes[slot] = mbk_vec3_make(0, 0, 2.5);
    return mbk_mobilizer_function_based(1, fns, idx, n, axes);
}

/* Nonlinear function-based mobilizers; `which` 0: nq = 2, 1: nq = 3. Axes are
   fixed (not unit length, to exercise normalization). */
static const mbk_vec3 nl_axes[2][6] = {
    {{0.3, 0.2, 2.0}, {1.0, -0.4, 0.3}, {0.1, 1.5, -0.2}, {2.0, 0.1, 0.0}, {0.2, 1.0, 0.5}, {-0.3, 0.1, 1.2}},
    {{1.0, 0.0, 0.0}, {0.0, 0.0, 3.0}, {0.4, 0.9, 0.1}, {0.5, 0.5, 0.0}, {0.0, 1.0, 1.0}, {1.0, 0.0, 1.0}},
};

static mbk_mobilizer fb_nonlinear(int which)
{
    static const double kx[5] = {-1.0, -0.3, 0.2, 0.8, 1.5}, ky[5] = {0.0, 0.25, -0.1, 0.4, 0.3};
    static const double poly[4] = {0.2, -0.5, 1.0, 0.1};
    const double g_c[3] = {0.3, -0.2, 0.1};
    mbk_function spline = mbk_function_spline(kx, ky, 5);
    if (which == 0) {
        /* nq = 2:  s0 = sin of q1 (sinusoid), s1 = g(q0, q1), s2 = spline(q0),
                    s3 = poly(q0), s4 = linear(q1, q0), s5 = 0.25 */
        const double lin[3] = {0.4, -0.3, 0.05};
        static const int i_q1[1] = {1}, i_q0q1[2] = {0, 1}, i_q0[1] = {0}, i_q1q0[2] = {1, 0};
        mbk_function fns[6] = {mbk_function_sinusoid(0.7, 1.3, 0.2), counted_fn(2, g_c, 0.6, 2), spline,
                               mbk_function_polynomial(poly, 3), mbk_function_linear(lin, 2),
                               mbk_function_constant(0.25, 0)};
        const int *idx[6] = {i_q1, i_q0q1, i_q0, i_q0, i_q1q0, NULL};
        const int n[6] = {1, 2, 1, 1, 2, 0};
        return mbk_mobilizer_function_based(2, fns, idx, n, nl_axes[0]);
    }
    /* nq = 3:  s0 = poly(q2), s1 = g(q2, q0), s2 = sinusoid(q1), s3 = spline(q1),
                s4 = -0.1, s5 = linear(q0, q1, q2) */
    const double lin[4] = {0.3, 0.2, -0.4, 0.0};
    static const int i_q2[1] = {2}, i_q2q0[2] = {2, 0}, i_q1[1] = {1}, i_q012[3] = {0, 1, 2};
    mbk_function fns[6] = {mbk_function_polynomial(poly, 3), counted_fn(2, g_c, -0.8, 2),
                           mbk_function_sinusoid(0.9, 0.7, -0.4), spline, mbk_function_constant(-0.1, 0),
                           mbk_function_linear(lin, 3)};
    const int *idx[6] = {i_q2, i_q2q0, i_q1, i_q1, NULL, i_q012};
    const int n[6] = {1, 2, 1, 1, 0, 3};
    return mbk_mobilizer_function_based(3, fns, idx, n, nl_axes[1]);
}

/* ====================================================================== */
/* (b) function-based Pin == Pin                                            */
/* ====================================================================== */

/* A random chain of Pins (some Sliders and Balls between); variant 1 replaces
   every Pin by the function-based Pin. */
static void build_pin_chain(mbk_matter *m, int nbodies, int variant)
{
    rng_seed(5000u + (unsigned)nbodies);
    for (int i = 0; i < nbodies; ++i) {
        int kind = rnd_int(6); /* 0-3 Pin, 4 Slider, 5 Ball */
        mbk_transform X_PF = rframe(0.7), X_BM = rframe(0.3);
        mbk_mass_props mp = rmass();
        mbk_mobilizer mob = kind <= 3 ? (variant ? fb_pin(i % 3) : mbk_mobilizer_pin())
                          : kind == 4 ? mbk_mobilizer_slider() : mbk_mobilizer_ball();
        CHECK(mob.ops != NULL);
        CHECK_INT(mbk_matter_add_body(m, i, &X_PF, &mp, &X_BM, mob), i + 1);
    }
}

static void test_function_based_pin(void)
{
    static results a, b;
    static const int sizes[] = {1, 2, 4, 7, 12, 20, 30};
    for (int euler = 0; euler <= 1; ++euler)
        for (size_t k = 0; k < sizeof sizes / sizeof sizes[0]; ++k) {
            run_built(build_pin_chain, sizes[k], 0, euler, 91u + k, &a);
            run_built(build_pin_chain, sizes[k], 1, euler, 91u + k, &b);
            compare("function-based Pin vs Pin", &b, &a, 1e-13, 1);
        }
}

/* ====================================================================== */
/* (c) nonlinear function-based mobilizers                                  */
/* ====================================================================== */

static double max_abs_diff_X(const mbk_transform *a, const mbk_transform *b)
{
    double e = mbk_mat33_max_abs(mbk_mat33_sub(a->R, b->R));
    e = fmax(e, fabs(a->p.x - b->p.x));
    e = fmax(e, fabs(a->p.y - b->p.y));
    return fmax(e, fabs(a->p.z - b->p.z));
}

static double max_abs_diff_V(mbk_spatial_vec a, mbk_spatial_vec b)
{
    mbk_spatial_vec d = mbk_spatial_vec_sub(a, b);
    double e = 0;
    const double *p = &d.w.x;
    for (int i = 0; i < 6; ++i) e = fmax(e, fabs(p[i]));
    return e;
}

/* Angular velocity from a central difference of R: w = vee(Rdot R^T). */
static mbk_vec3 fd_omega(mbk_mat33 Rp, mbk_mat33 Rm, mbk_mat33 R, double h)
{
    mbk_mat33 W = mbk_mat33_mul_transpose(mbk_mat33_scale(mbk_mat33_sub(Rp, Rm), 0.5 / h), R);
    return mbk_vec3_make(0.5 * (W.m[2][1] - W.m[1][2]), 0.5 * (W.m[0][2] - W.m[2][0]),
                         0.5 * (W.m[1][0] - W.m[0][1]));
}

/* The mobilizer's own ops against the documented convention and against
   finite differences; then the fits. */
static void check_fb_ops(int which)
{
    mbk_mobilizer mob = fb_nonlinear(which);
    if (!CHECK(mob.ops != NULL && mob.impl != NULL)) {
        fprintf(stderr, "    %s\n", mbk_last_error());
        return;
    }
    const mbk_mobilizer_ops *o = mob.ops;
    int nq = mbk_mobilizer_get_nq(&mob, false);
    CHECK_INT(nq, which ? 3 : 2);
    CHECK_INT(o->nu, nq);
    CHECK(o->calc_qdot == NULL && o->calc_qdotdot == NULL); /* qdot = u */
    rng_seed(31u + (unsigned)which);
    for (int trial = 0; trial < 20; ++trial) {
        double q[6], u[6], qp[6], qm[6];
        for (int k = 0; k < nq; ++k) q[k] = 0.9 * rnd(), u[k] = rnd();

        /* The convention by hand: s_i from the same functions rebuilt here. */
        double s[6];
        double x0 = q[0], x1 = q[1], x2 = which ? q[2] : 0.0, g;
        mbk_function fs[2];
        {
            static const double kx[5] = {-1.0, -0.3, 0.2, 0.8, 1.5}, ky[5] = {0.0, 0.25, -0.1, 0.4, 0.3};
            static const double poly[4] = {0.2, -0.5, 1.0, 0.1};
            fs[0] = mbk_function_spline(kx, ky, 5);
            fs[1] = mbk_function_polynomial(poly, 3);
        }
        if (which == 0) {
            g = 0.3 * x0 - 0.2 * x1 + 0.1 + 0.6 * sin(x0) * sin(x1);
            s[0] = 0.7 * sin(1.3 * x1 + 0.2);
            s[1] = g;
            s[2] = mbk_function_value(&fs[0], &x0);
            s[3] = mbk_function_value(&fs[1], &x0);
            s[4] = 0.4 * x1 - 0.3 * x0 + 0.05;
            s[5] = 0.25;
        } else {
            g = 0.3 * x2 - 0.2 * x0 + 0.1 - 0.8 * sin(x2) * sin(x0);
            s[0] = mbk_function_value(&fs[1], &x2);
            s[1] = g;
            s[2] = 0.9 * sin(0.7 * x1 - 0.4);
            s[3] = mbk_function_value(&fs[0], &x1);
            s[4] = -0.1;
            s[5] = 0.3 * x0 + 0.2 * x1 - 0.4 * x2;
        }
        mbk_function_destroy(&fs[0]);
        mbk_function_destroy(&fs[1]);
        const mbk_vec3 *ax = nl_axes[which];
        mbk_mat33 R = mbk_mat33_mul(mbk_mat33_mul(mbk_mat33_from_axis_angle(ax[0], s[0]),
                                                  mbk_mat33_from_axis_angle(ax[1], s[1])),
                                    mbk_mat33_from_axis_angle(ax[2], s[2]));
        mbk_vec3 p = mbk_vec3_zero();
        for (int i = 3; i < 6; ++i) p = mbk_vec3_add(p, mbk_vec3_scale(mbk_vec3_normalize(ax[i]), s[i]));
        mbk_transform X_hand = mbk_transform_make(R, p), X;
        o->calc_X_FM(mob.impl, false, q, &X);
        if (!CHECK(max_abs_diff_X(&X, &X_hand) < 1e-14))
            fprintf(stderr, "    X_FM differs from the convention by %.3g\n", max_abs_diff_X(&X, &X_hand));

        /* H column k against a central difference of X_FM along q_k. */
        const double h = 1e-6;
        mbk_spatial_vec H[6], Hp[6], Hm[6], Hdot_u;
        o->calc_H_FM(mob.impl, false, q, H);
        for (int k = 0; k < nq; ++k) {
            mbk_transform Xp, Xm;
            memcpy(qp, q, sizeof q);
            memcpy(qm, q, sizeof q);
            qp[k] += h;
            qm[k] -= h;
            o->calc_X_FM(mob.impl, false, qp, &Xp);
            o->calc_X_FM(mob.impl, false, qm, &Xm);
            mbk_spatial_vec fd = mbk_spatial_vec_make(fd_omega(Xp.R, Xm.R, X.R, h),
                                                      mbk_vec3_scale(mbk_vec3_sub(Xp.p, Xm.p), 0.5 / h));
            if (!CHECK(max_abs_diff_V(H[k], fd) < 1e-8))
                fprintf(stderr, "    H column %d vs finite difference: %.3g\n", k, max_abs_diff_V(H[k], fd));
        }
        /* Hdot u against d/dt (H(q) u) with q moving at qdot = u, u fixed. */
        for (int k = 0; k < nq; ++k) qp[k] = q[k] + h * u[k], qm[k] = q[k] - h * u[k];
        o->calc_H_FM(mob.impl, false, qp, Hp);
        o->calc_H_FM(mob.impl, false, qm, Hm);
        o->calc_Hdot_u(mob.impl, false, q, u, &Hdot_u);
        mbk_spatial_vec fd = mbk_spatial_vec_zero();
        for (int k = 0; k < nq; ++k)
            fd = mbk_spatial_vec_add(fd, mbk_spatial_vec_scale(mbk_spatial_vec_sub(Hp[k], Hm[k]), 0.5 / h * u[k]));
        if (!CHECK(max_abs_diff_V(Hdot_u, fd) < 1e-8))
            fprintf(stderr, "    Hdot u vs finite difference: %.3g\n", max_abs_diff_V(Hdot_u, fd));

        /* Fits: u from V_FM = H u exactly; q from X_FM(q) (q near 0, so the
           Gauss-Newton fit from 0 should find X again). */
        mbk_spatial_vec V = mbk_spatial_vec_zero();
        for (int k = 0; k < nq; ++k) V = mbk_spatial_vec_add(V, mbk_spatial_vec_scale(H[k], u[k]));
        double uf[6], qf[6];
        CHECK_INT(o->set_u_to_fit_velocity(mob.impl, false, q, &V, uf), 0);
        for (int k = 0; k < nq; ++k) CHECK_NEAR(uf[k], u[k], 1e-12);
        double qs[6];
        for (int k = 0; k < nq; ++k) qs[k] = 0.3 * q[k];
        mbk_transform Xs, Xf;
        o->calc_X_FM(mob.impl, false, qs, &Xs);
        CHECK_INT(o->set_q_to_fit_transform(mob.impl, false, &Xs, qf), 0);
        o->calc_X_FM(mob.impl, false, qf, &Xf);
        if (!CHECK(max_abs_diff_X(&Xf, &Xs) < 1e-12))
            fprintf(stderr, "    q fit leaves %.3g\n", max_abs_diff_X(&Xf, &Xs));
    }
    /* An unreachable velocity: the fit is the least-squares u, so H^T (H u - V) = 0. */
    {
        double q[6] = {0.1, -0.2, 0.3}, uf[6];
        mbk_spatial_vec H[6], V = mbk_spatial_vec_make(mbk_vec3_make(1, 2, 3), mbk_vec3_make(-1, 0.5, 2));
        o->calc_H_FM(mob.impl, false, q, H);
        CHECK_INT(o->set_u_to_fit_velocity(mob.impl, false, q, &V, uf), 0);
        mbk_spatial_vec r = mbk_spatial_vec_scale(V, -1.0);
        for (int k = 0; k < nq; ++k) r = mbk_spatial_vec_add(r, mbk_spatial_vec_scale(H[k], uf[k]));
        for (int k = 0; k < nq; ++k) CHECK(fabs(mbk_spatial_vec_dot(H[k], r)) < 1e-12);
    }
    /* Non-finite targets are refused. */
    {
        double q[6] = {0.1, -0.2, 0.3}, uf[6] = {0}, qf[6] = {0};
        mbk_spatial_vec V = mbk_spatial_vec_make(mbk_vec3_make(NAN, 0, 0), mbk_vec3_zero());
        mbk_transform X = mbk_transform_from_p(mbk_vec3_make(0, INFINITY, 0));
        CHECK_INT(o->set_u_to_fit_velocity(mob.impl, false, q, &V, uf), MBK_ENOTFINITE);
        CHECK_INT(o->set_q_to_fit_transform(mob.impl, false, &X, qf), MBK_ENOTFINITE);
    }
    int before = destroyed_count;
    o->destroy(mob.impl); /* never added to a System: destroy it ourselves */
    CHECK_INT(destroyed_count, before + 1);
}

/* A tree with nonlinear function-based mobilizers among built-ins; the kind
   of each body is kept in nl_kind. */
static int nl_kind[MAX_B + 1];

static void build_nonlinear_tree(mbk_matter *m, int nbodies, int variant)
{
    (void)variant;
    rng_seed(9000u + (unsigned)nbodies);
    for (int i = 0; i < nbodies; ++i) {
        int parent = rnd_int(i + 1);
        int kind = rnd_int(5); /* 0 FB nq=2, 1 FB nq=3, 2 Pin, 3 Ball, 4 Free */
        nl_kind[i + 1] = kind;
        mbk_transform X_PF = rframe(0.7), X_BM = rframe(0.3);
        mbk_mass_props mp = rmass();
        mbk_mobilizer mob = kind <= 1 ? fb_nonlinear(kind) : kind == 2 ? mbk_mobilizer_pin()
                          : kind == 3 ? mbk_mobilizer_ball() : mbk_mobilizer_free();
        CHECK(mob.ops != NULL);
        CHECK_INT(mbk_matter_add_body(m, parent, &X_PF, &mp, &X_BM, mob), i + 1);
    }
}

static void test_nonlinear_tree(int nbodies, int euler)
{
    static applied ap;
    mbk_system *sys = mbk_multibody_create("nonlinear function-based");
    mbk_matter *m = mbk_multibody_upd_matter(sys);
    build_nonlinear_tree(m, nbodies, 0);
    mbk_system_add_subsystem(sys, &force_ops, &ap);
    CHECK_INT(mbk_system_realize_topology(sys), MBK_OK);
    mbk_state *s = mbk_state_create(), *t = mbk_state_create();
    CHECK_INT(mbk_state_init(s, sys), MBK_OK);
    CHECK_INT(mbk_matter_set_use_euler_angles(m, s, euler != 0), MBK_OK);
    CHECK_INT(mbk_system_realize(sys, s, MBK_STAGE_MODEL), MBK_OK);
    int nq = mbk_state_get_nq(s), nu = mbk_state_get_nu(s), nb = mbk_matter_get_num_bodies(m);
    double *q = mbk_state_upd_q(s), *u = mbk_state_upd_u(s);
    for (int i = 0; i < nq; ++i) q[i] = 0.8 * rnd();
    for (int i = 0; i < nu; ++i) u[i] = rnd();
    /* Unit quaternions, so that q +- h qdot moves the pose at the rate qdot describes. */
    for (int b = 1; b < nb && !euler; ++b) {
        if (nl_kind[b] < 3) continue;
        double *qb = q + mbk_matter_get_body_q_start(m, s, b);
        mbk_quat n = mbk_quat_normalize(mbk_quat_make(qb[0], qb[1], qb[2], qb[3]));
        qb[0] = n.w, qb[1] = n.x, qb[2] = n.y, qb[3] = n.z;
    }
    random_forces(&ap, nu, nb);
    CHECK_INT(mbk_system_realize(sys, s, MBK_STAGE_ACCELERATION), MBK_OK);

    static double qdot[7 * MAX_B], udot[6 * MAX_B], q0[7 * MAX_B], u0[6 * MAX_B], res[6 * MAX_B];
    memcpy(qdot, mbk_state_get_qdot(s), (size_t)nq * sizeof(double));
    memcpy(udot, mbk_state_get_udot(s), (size_t)nu * sizeof(double));
    memcpy(q0, mbk_state_get_q(s), (size_t)nq * sizeof(double));
    memcpy(u0, mbk_state_get_u(s), (size_t)nu * sizeof(double));

    /* qdot = u and qdotdot = udot for every function-based body. */
    int n_fb = 0;
    for (int b = 1; b < nb; ++b) {
        if (nl_kind[b] > 1) continue;
        n_fb++;
        int nqb = mbk_matter_get_body_num_q(m, s, b), nub = mbk_matter_get_body_num_u(m, s, b);
        CHECK_INT(nqb, nl_kind[b] + 2);
        CHECK_INT(nub, nqb);
        int q0b = mbk_matter_get_body_q_start(m, s, b), u0b = mbk_matter_get_body_u_start(m, s, b);
        for (int k = 0; k < nqb; ++k) {
            CHECK_NEAR(qdot[q0b + k], u0[u0b + k], 1e-15);
            CHECK_NEAR(mbk_state_get_qdotdot(s)[q0b + k], udot[u0b + k], 1e-15);
        }
    }

    /* The residual vanishes at the ABA's udot. */
    CHECK_INT(mbk_matter_calc_residual_force(m, s, ap.tau, ap.F, udot, res), MBK_OK);
    double rmax = 0;
    for (int i = 0; i < nu; ++i) rmax = fmax(rmax, fabs(res[i]));
    if (!CHECK(rmax < 1e-10)) fprintf(stderr, "    residual at ABA udot: %.3g\n", rmax);

    /* Central differences: X_GB along qdot gives V_GB; V_GB along (qdot, udot) gives A_GB. */
    const double h = 1e-5;
    mbk_transform Xp[MAX_B + 1], Xm[MAX_B + 1];
    mbk_spatial_vec Vp[MAX_B + 1], Vm[MAX_B + 1];
    for (int sign = -1; sign <= 1; sign += 2) {
        CHECK_INT(mbk_state_copy(t, s), MBK_OK);
        double *tq = mbk_state_upd_q(t), *tu = mbk_state_upd_u(t);
        for (int i = 0; i < nq; ++i) tq[i] = q0[i] + sign * h * qdot[i];
        for (int i = 0; i < nu; ++i) tu[i] = u0[i] + sign * h * udot[i];
        CHECK_INT(mbk_system_realize(sys, t, MBK_STAGE_VELOCITY), MBK_OK);
        for (int b = 0; b < nb; ++b) {
            mbk_matter_get_body_transform(m, t, b, sign > 0 ? &Xp[b] : &Xm[b]);
            mbk_matter_get_body_velocity(m, t, b, sign > 0 ? &Vp[b] : &Vm[b]);
        }
    }
    double ev = 0, ea = 0;
    for (int b = 1; b < nb; ++b) {
        mbk_transform X;
        mbk_spatial_vec V, A;
        mbk_matter_get_body_transform(m, s, b, &X);
        mbk_matter_get_body_velocity(m, s, b, &V);
        mbk_matter_get_body_acceleration(m, s, b, &A);
        mbk_spatial_vec Vfd = mbk_spatial_vec_make(fd_omega(Xp[b].R, Xm[b].R, X.R, h),
                                                   mbk_vec3_scale(mbk_vec3_sub(Xp[b].p, Xm[b].p), 0.5 / h));
        mbk_spatial_vec Afd = mbk_spatial_vec_scale(mbk_spatial_vec_sub(Vp[b], Vm[b]), 0.5 / h);
        ev = fmax(ev, max_abs_diff_V(V, Vfd) / fmax(1.0, max_abs_diff_V(V, mbk_spatial_vec_zero())));
        ea = fmax(ea, max_abs_diff_V(A, Afd) / fmax(1.0, max_abs_diff_V(A, mbk_spatial_vec_zero())));
    }
    if (!CHECK(ev < 1e-7)) fprintf(stderr, "    %d bodies (euler %d): V_GB vs d/dt X_GB: %.3g\n", nbodies, euler, ev);
    if (!CHECK(ea < 1e-6)) fprintf(stderr, "    %d bodies (euler %d): A_GB vs d/dt V_GB: %.3g\n", nbodies, euler, ea);

    /* Fitting through the matter API on the first function-based body. */
    for (int b = 1; b < nb; ++b) {
        if (nl_kind[b] != 0) continue; /* the nq = 2 function-based mobilizer */
        int qb = mbk_matter_get_body_q_start(m, s, b), ub = mbk_matter_get_body_u_start(m, s, b);
        double qwant[2] = {0.2, -0.15};
        CHECK_INT(mbk_state_copy(t, s), MBK_OK);
        memcpy(mbk_state_upd_q(t) + qb, qwant, sizeof qwant);
        CHECK_INT(mbk_system_realize(sys, t, MBK_STAGE_POSITION), MBK_OK);
        mbk_transform X_GB_want;
        mbk_matter_get_body_transform(m, t, b, &X_GB_want);
        /* X_FM of those q, computed by the kernel's own op */
        mbk_transform X_FM;
        {
            mbk_mobilizer probe = fb_nonlinear(0);
            probe.ops->calc_X_FM(probe.impl, false, qwant, &X_FM);
            probe.ops->destroy(probe.impl);
        }
        CHECK_INT(mbk_state_copy(t, s), MBK_OK);
        CHECK_INT(mbk_matter_set_body_q_to_fit_transform(m, t, b, &X_FM), MBK_OK);
        CHECK_NEAR(mbk_state_get_q(t)[qb], qwant[0], 1e-10);
        CHECK_NEAR(mbk_state_get_q(t)[qb + 1], qwant[1], 1e-10);
        CHECK_INT(mbk_system_realize(sys, t, MBK_STAGE_POSITION), MBK_OK);
        mbk_transform X_GB_got;
        mbk_matter_get_body_transform(m, t, b, &X_GB_got);
        CHECK(max_abs_diff_X(&X_GB_got, &X_GB_want) < 1e-10);
        /* u fit: V_FM = 0 gives u = 0 */
        mbk_spatial_vec zero = mbk_spatial_vec_zero();
        CHECK_INT(mbk_matter_set_body_u_to_fit_velocity(m, t, b, &zero), MBK_OK);
        CHECK_NEAR(mbk_state_get_u(t)[ub], 0.0, 1e-15);
        CHECK_NEAR(mbk_state_get_u(t)[ub + 1], 0.0, 1e-15);
        break;
    }

    mbk_state_destroy(t);
    mbk_state_destroy(s);
    int before = destroyed_count;
    mbk_system_destroy(sys);
    /* every function-based body owned one counted function */
    CHECK_INT(destroyed_count - before, n_fb);
}

/* ====================================================================== */
/* (d) bad input                                                            */
/* ====================================================================== */

/* Six counted functions: f_i reads n[i] arguments, max derivative order 2. */
static void make_counted(mbk_function fns[6], const int n[6])
{
    static const double c[7] = {0.5, -0.25, 0.125, 0.3, 0.2, 0.1, 0.0};
    for (int i = 0; i < 6; ++i) fns[i] = counted_fn(n[i], c, 0.1, 2);
}

/* Expect failure with `status`, a message, and `destroyed` functions destroyed. */
static void expect_rejected(const char *what, int nq, const mbk_function fns[6], const int *const idx[6],
                            const int n[6], const mbk_vec3 *axes, int destroyed, int status)
{
    int before = destroyed_count;
    mbk_clear_error();
    mbk_mobilizer mob = mbk_mobilizer_function_based(nq, fns, idx, n, axes);
    if (!CHECK(mob.ops == NULL && mob.impl == NULL)) {
        fprintf(stderr, "    %s: accepted\n", what);
        if (mob.ops) mob.ops->destroy(mob.impl);
        return;
    }
    if (!CHECK(mbk_last_status() == status)) fprintf(stderr, "    %s: status %d\n", what, mbk_last_status());
    CHECK(strlen(mbk_last_error()) > 20);
    if (!CHECK(destroyed_count - before == destroyed))
        fprintf(stderr, "    %s: %d functions destroyed, expected %d\n", what, destroyed_count - before, destroyed);
}

/* Allocation hooks that can be told to fail. */
static int fail_allocations;
static void *t_malloc(size_t n, void *user) { (void)user; return fail_allocations ? NULL : malloc(n); }
static void *t_realloc(void *p, size_t n, void *user) { (void)user; return fail_allocations ? NULL : realloc(p, n); }
static void t_free(void *p, void *user) { (void)user; free(p); }

static void test_bad_input(void)
{
    static const int q0[1] = {0}, q1[1] = {1}, q01[2] = {0, 1}, q00[2] = {0, 0}, qbad[1] = {2}, qneg[1] = {-1};
    const int *idx[6] = {q0, q1, NULL, NULL, NULL, q01};
    const int n[6] = {1, 1, 0, 0, 0, 2};
    mbk_function fns[6];
    const mbk_vec3 good_axes[6] = {{1, 0, 0}, {0, 1, 0}, {0, 0, 1}, {1, 0, 0}, {0, 1, 0}, {0, 0, 1}};

    /* A good one first: accepted; destroying the System destroys all six. */
    make_counted(fns, n);
    {
        mbk_system *sys = mbk_multibody_create("good");
        mbk_transform I = mbk_transform_identity();
        mbk_mass_props mp = mbk_mass_props_from_central(1, mbk_vec3_zero(), mbk_mat33_diag(1, 1, 1));
        mbk_mobilizer mob = mbk_mobilizer_function_based(2, fns, idx, n, good_axes);
        CHECK(mob.ops != NULL && mob.impl != NULL);
        CHECK_INT(mbk_matter_add_body(mbk_multibody_upd_matter(sys), 0, &I, &mp, &I, mob), 1);
        int before = destroyed_count;
        mbk_system_destroy(sys);
        CHECK_INT(destroyed_count - before, 6);
    }

    make_counted(fns, n);
    expect_rejected("nq = 0", 0, fns, idx, n, NULL, 6, MBK_EINVAL);
    make_counted(fns, n);
    expect_rejected("nq = 7", 7, fns, idx, n, NULL, 6, MBK_EINVAL);
    make_counted(fns, n);
    expect_rejected("n_coords NULL", 2, fns, idx, NULL, NULL, 6, MBK_EINVAL);
    expect_rejected("fns NULL", 2, NULL, idx, n, NULL, 0, MBK_EINVAL);
    {
        const int *bad[6] = {qbad, q1, NULL, NULL, NULL, q01};
        make_counted(fns, n);
        expect_rejected("index >= nq", 2, fns, bad, n, NULL, 6, MBK_EINVAL);
        bad[0] = qneg;
        make_counted(fns, n);
        expect_rejected("negative index", 2, fns, bad, n, NULL, 6, MBK_EINVAL);
        bad[0] = q0;
        bad[5] = q00;
        make_counted(fns, n);
        expect_rejected("index listed twice", 2, fns, bad, n, NULL, 6, MBK_EINVAL);
        bad[5] = NULL;
        make_counted(fns, n);
        expect_rejected("NULL list with n_coords > 0", 2, fns, bad, n, NULL, 6, MBK_EINVAL);
        make_counted(fns, n);
        expect_rejected("coord_indices NULL", 2, fns, NULL, n, NULL, 6, MBK_EINVAL);
    }
    {
        /* n_coords disagrees with the function's n_args */
        const int n_wrong[6] = {1, 1, 0, 0, 1, 2};
        const int *idx2[6] = {q0, q1, NULL, NULL, q0, q01};
        make_counted(fns, n);
        expect_rejected("n_coords != n_args", 2, fns, idx2, n_wrong, NULL, 6, MBK_EINVAL);
        /* q1 read by no function */
        const int n_un[6] = {1, 0, 0, 0, 0, 0};
        const int *idx_un[6] = {q0, NULL, NULL, NULL, NULL, NULL};
        make_counted(fns, n_un);
        expect_rejected("unused q", 2, fns, idx_un, n_un, NULL, 6, MBK_EINVAL);
    }
    /* a function with only first derivatives */
    make_counted(fns, n);
    mbk_function_destroy(&fns[2]);
    fns[2] = counted_fn(0, NULL, 0.0, 1);
    expect_rejected("max_derivative_order 1", 2, fns, idx, n, NULL, 6, MBK_EINVAL);
    /* an empty function in a slot */
    make_counted(fns, n);
    mbk_function_destroy(&fns[3]);
    expect_rejected("empty function", 2, fns, idx, n, NULL, 5, MBK_EINVAL);
    /* the same function in two slots: destroyed once */
    make_counted(fns, n);
    mbk_function_destroy(&fns[4]);
    fns[4] = fns[3];
    expect_rejected("shared function", 2, fns, idx, n, NULL, 5, MBK_EINVAL);
    /* axes */
    {
        mbk_vec3 a[6];
        memcpy(a, good_axes, sizeof a);
        a[4] = mbk_vec3_zero();
        make_counted(fns, n);
        expect_rejected("zero axis", 2, fns, idx, n, a, 6, MBK_EINVAL);
        a[4] = mbk_vec3_make(NAN, 1, 0);
        make_counted(fns, n);
        expect_rejected("NaN axis", 2, fns, idx, n, a, 6, MBK_EINVAL);
        a[4] = mbk_vec3_make(INFINITY, 0, 0);
        make_counted(fns, n);
        expect_rejected("infinite axis", 2, fns, idx, n, a, 6, MBK_EINVAL);
        memcpy(a, good_axes, sizeof a);
        a[2] = mbk_vec3_make(-2, 0, 0); /* rotation axes 0 and 2 parallel */
        make_counted(fns, n);
        expect_rejected("parallel rotation axes", 2, fns, idx, n, a, 6, MBK_EINVAL);
        memcpy(a, good_axes, sizeof a);
        a[5] = mbk_vec3_make(0, 3, 1e-9); /* translation axes 1 and 2 parallel */
        make_counted(fns, n);
        expect_rejected("parallel translation axes", 2, fns, idx, n, a, 6, MBK_EINVAL);
        /* nearly but not quite parallel is fine */
        memcpy(a, good_axes, sizeof a);
        a[5] = mbk_vec3_make(0, 1, 1e-3);
        make_counted(fns, n);
        mbk_mobilizer ok = mbk_mobilizer_function_based(2, fns, idx, n, a);
        CHECK(ok.ops != NULL);
        if (ok.ops) ok.ops->destroy(ok.impl);
    }
    /* out of memory: the functions are still destroyed */
    make_counted(fns, n);
    mbk_set_allocator(t_malloc, t_realloc, t_free, NULL);
    fail_allocations = 1;
    expect_rejected("out of memory", 2, fns, idx, n, NULL, 6, MBK_ENOMEM);
    fail_allocations = 0;
    mbk_set_allocator(NULL, NULL, NULL, NULL);

    /* add_body takes the mobilizer: a refused body destroys it (and its functions). */
    {
        mbk_system *sys = mbk_multibody_create("refused");
        mbk_transform I = mbk_transform_identity(), bad = mbk_transform_from_p(mbk_vec3_make(NAN, 0, 0));
        mbk_mass_props mp = mbk_mass_props_from_central(1, mbk_vec3_zero(), mbk_mat33_diag(1, 1, 1));
        make_counted(fns, n);
        mbk_mobilizer mob = mbk_mobilizer_function_based(2, fns, idx, n, NULL);
        int before = destroyed_count;
        CHECK_INT(mbk_matter_add_body(mbk_multibody_upd_matter(sys), 0, &bad, &mp, &I, mob), MBK_EINVAL);
        CHECK_INT(destroyed_count - before, 6);
        mbk_system_destroy(sys);
        CHECK_INT(destroyed_count - before, 6);
    }
    /* A failed mobilizer is refused by add_body. */
    {
        mbk_system *sys = mbk_multibody_create("bad");
        mbk_transform I = mbk_transform_identity();
        mbk_mass_props mp = mbk_mass_props_from_central(1, mbk_vec3_zero(), mbk_mat33_diag(1, 1, 1));
        mbk_mobilizer none = {NULL, NULL};
        CHECK_INT(mbk_matter_add_body(mbk_multibody_upd_matter(sys), 0, &I, &mp, &I, none), MBK_EINVAL);
        mbk_system_destroy(sys);
    }
}

int main(void)
{
    test_custom_translation();
    test_function_based_pin();
    for (int which = 0; which <= 1; ++which) check_fb_ops(which);
    static const int sizes[] = {1, 2, 3, 5, 8, 13, 20};
    for (int euler = 0; euler <= 1; ++euler)
        for (size_t k = 0; k < sizeof sizes / sizeof sizes[0]; ++k) test_nonlinear_tree(sizes[k], euler);
    test_bad_input();
    printf("worst relative difference: CustomTranslation vs Translation %.2e, "
           "function-based Pin vs Pin %.2e\n", worst_ab[0], worst_ab[1]);
    return mbk_test_finish();
}
