/* The operators an outside integrator needs (mbk/external.h), each against an
 * independent reference:
 * (1) N u against the qdot that realizing Velocity computes; N^T against the
 *     transpose of the dense N built column by column (N e_j); N^+ N u = u;
 *     (N^+)^T against the transpose of the dense N^+; in quaternion and in
 *     Euler-angle mode, on a tree mixing Free, Ball, Pin, Universal, Slider and
 *     Gimbal mobilizers;
 * (2) G v against the dense G of mbk_matter_calc_G; G^T lambda against its
 *     transpose; on that tree with holonomic, nonholonomic and
 *     acceleration-only constraints, and on a four-bar with a redundant row;
 * (3) the velocity projection leaves uerr ~ 0, does not touch q or z, and
 *     leaves a consistent u alone;
 * (4) forces from multipliers are -G^T lambda; udot given the State's own
 *     multipliers is the State's udot, and for other multipliers
 *     M (udot(l) - udot(l*)) = -G^T (l - l*);
 * (5) the independent rows: the four-bar's Ball gives rank 2 of 3, the rows
 *     kept span G's row space; the full-rank tree keeps every row;
 * (6) bad input: NULL arrays, a State below the stage, a stale State, NaN:
 *     a clear status and the State's variables unchanged;
 * (7) the checks can fail: a planted error in N^T, and in G^T, is caught;
 * (8) none of the calls allocates (mbk_get_allocation_count). */
#include "mbk/alloc.h"
#include "mbk/constraints.h"
#include "mbk/external.h"
#include "mbk/forces.h"
#include "mbk/matter.h"
#include "mbk/mobilizer.h"
#include "mbk/state.h"
#include "mbk/status.h"
#include "mbk/system.h"
#include "mbk_test.h"
#include "test_models.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

enum { NQ_MAX = 64, NU_MAX = 64, M_MAX = 16, NB_MAX = 16 };

static unsigned long seed = 2024;
static double rnd(void) { return lcg_uniform(&seed); } /* uniform in [-1, 1) */

static double max_abs_diff(const double *a, const double *b, int n)
{
    double d = 0;
    for (int i = 0; i < n; ++i) d = fmax(d, fabs(a[i] - b[i]));
    return d;
}

static double max_abs(const double *a, int n)
{
    double d = 0;
    for (int i = 0; i < n; ++i) d = fmax(d, fabs(a[i]));
    return d;
}

/* A tree of every kind of joint: Free (root), Ball, Pin, Universal, Slider on a
   chain, a Gimbal on the root; a Rod, a Ball constraint closing a loop, a
   constant speed (nonholonomic) and a constant acceleration (acceleration-only). */
static mbk_system *mixed_tree(bool constrained)
{
    mbk_system *sys = mbk_multibody_create("mixed");
    mbk_matter *m = mbk_multibody_upd_matter(sys);
    mbk_transform id = mbk_transform_identity();
    mbk_transform off = mbk_transform_from_p(mbk_vec3_make(0.3, -0.2, 0.1));
    mbk_transform off6 = mbk_transform_from_p(mbk_vec3_make(-0.4, 0.3, 0.2));
    mbk_mass_props mp = mbk_mass_props_from_central(1.3, mbk_vec3_make(0.1, 0.05, -0.02),
                                                    mbk_mat33_diag(0.11, 0.23, 0.31));
    int b1 = mbk_matter_add_body(m, 0, &id, &mp, &id, mbk_mobilizer_free());
    int b2 = mbk_matter_add_body(m, b1, &off, &mp, &id, mbk_mobilizer_ball());
    int b3 = mbk_matter_add_body(m, b2, &off, &mp, &id, mbk_mobilizer_pin());
    int b4 = mbk_matter_add_body(m, b3, &off, &mp, &id, mbk_mobilizer_universal());
    int b5 = mbk_matter_add_body(m, b4, &off, &mp, &id, mbk_mobilizer_slider());
    int b6 = mbk_matter_add_body(m, b1, &off6, &mp, &id, mbk_mobilizer_gimbal());
    mbk_force_add_gravity(mbk_multibody_upd_forces(sys), mbk_vec3_make(0, -9.81, 0));
    if (constrained) {
        mbk_constraint_add_rod(m, 0, mbk_vec3_make(0, 1, 0), b5, mbk_vec3_make(0.1, 0, 0), 1.5);
        mbk_constraint_add_ball(m, b6, mbk_vec3_make(0.2, 0, 0), b3, mbk_vec3_make(0, 0.1, 0));
        mbk_constraint_add_constant_speed(m, b3, 0, 0.7);
        mbk_constraint_add_constant_acceleration(m, b5, 0, -0.4);
    }
    mbk_system_realize_topology(sys);
    return sys;
}

/* A State with random q and u, realized to `stage`. */
static mbk_state *random_state(const mbk_system *sys, bool euler, mbk_stage stage)
{
    mbk_state *s = mbk_state_create();
    mbk_state_init(s, sys);
    mbk_matter_set_use_euler_angles(mbk_multibody_get_matter(sys), s, euler);
    mbk_system_realize(sys, s, MBK_STAGE_MODEL);
    double *q = mbk_state_upd_q(s), *u = mbk_state_upd_u(s);
    for (int i = 0; i < mbk_state_get_nq(s); ++i) q[i] = rnd();
    for (int i = 0; i < mbk_state_get_nu(s); ++i) u[i] = 2 * rnd();
    CHECK(ok(mbk_system_realize(sys, s, stage), "realize a random State"));
    return s;
}

/* Dense N (nq x nu) column by column (j: N e_j), or N^+ (nu x nq). */
static void dense_N(const mbk_matter *m, const mbk_state *s, bool pinv, int nq, int nu, double *N)
{
    int rows = pinv ? nu : nq, cols = pinv ? nq : nu;
    double e[NQ_MAX], col[NQ_MAX];
    for (int j = 0; j < cols; ++j) {
        memset(e, 0, sizeof e);
        e[j] = 1;
        if (pinv) mbk_matter_multiply_by_N_pinv(m, s, false, e, col);
        else mbk_matter_multiply_by_N(m, s, false, e, col);
        for (int i = 0; i < rows; ++i) N[i * cols + j] = col[i];
    }
}

/* y = A^T x for A rows x cols row-major; sign -1 at entry `plant` (-1: none) plants an error. */
static void mul_transpose(const double *A, int rows, int cols, const double *x, double *y, int plant)
{
    for (int j = 0; j < cols; ++j) {
        double d = 0;
        for (int i = 0; i < rows; ++i) d += (i * cols + j == plant ? -1.0 : 1.0) * A[i * cols + j] * x[i];
        y[j] = d;
    }
}

static void mul(const double *A, int rows, int cols, const double *x, double *y)
{
    for (int i = 0; i < rows; ++i) {
        double d = 0;
        for (int j = 0; j < cols; ++j) d += A[i * cols + j] * x[j];
        y[i] = d;
    }
}

/* (1) and the planted error of (7) */
static void test_N(bool euler)
{
    mbk_system *sys = mixed_tree(false);
    const mbk_matter *m = mbk_multibody_get_matter(sys);
    for (int trial = 0; trial < 5; ++trial) {
        mbk_state *s = random_state(sys, euler, MBK_STAGE_VELOCITY);
        int nq = mbk_matter_get_num_q(m, s), nu = mbk_state_get_nu(s);
        CHECK_INT(nq, mbk_state_get_nq(s));
        CHECK_INT(nq, euler ? 16 : 18);
        CHECK_INT(nu, 16);
        CHECK_INT(mbk_matter_get_subsystem_index(m), 0);
        double Nu[NQ_MAX], qdotdiff, x[NQ_MAX], y[NU_MAX], ref[NU_MAX];
        const double *u = mbk_state_get_u(s);
        /* N u is the qdot of Velocity */
        CHECK(ok(mbk_matter_multiply_by_N(m, s, false, u, Nu), "N u"));
        qdotdiff = max_abs_diff(Nu, mbk_state_get_qdot(s), nq);
        CHECK(qdotdiff <= 1e-15 * (1 + max_abs(Nu, nq)));
        /* N^T x against the dense N's transpose */
        static double N[NQ_MAX * NU_MAX], Np[NQ_MAX * NU_MAX];
        dense_N(m, s, false, nq, nu, N);
        for (int i = 0; i < nq; ++i) x[i] = rnd();
        CHECK(ok(mbk_matter_multiply_by_N(m, s, true, x, y), "N^T x"));
        mul_transpose(N, nq, nu, x, ref, -1);
        CHECK(max_abs_diff(y, ref, nu) <= 1e-14);
        /* (7) a sign planted in one nonzero entry of the reference is caught */
        int plant = -1;
        for (int k = 0; k < nq * nu && plant < 0; ++k)
            if (fabs(N[k]) > 0.1 && fabs(x[k / nu]) > 0.1) plant = k;
        mul_transpose(N, nq, nu, x, ref, plant);
        CHECK(plant >= 0 && max_abs_diff(y, ref, nu) > 1e-3);
        /* N^+ N u = u */
        CHECK(ok(mbk_matter_multiply_by_N_pinv(m, s, false, Nu, y), "N^+ N u"));
        CHECK(max_abs_diff(y, u, nu) <= 1e-14 * (1 + max_abs(u, nu)));
        /* (N^+)^T v against the dense N^+'s transpose */
        dense_N(m, s, true, nq, nu, Np);
        double v[NU_MAX], z[NQ_MAX], zref[NQ_MAX];
        for (int i = 0; i < nu; ++i) v[i] = rnd();
        CHECK(ok(mbk_matter_multiply_by_N_pinv(m, s, true, v, z), "(N^+)^T v"));
        mul_transpose(Np, nu, nq, v, zref, -1);
        CHECK(max_abs_diff(z, zref, nq) <= 1e-14);
        /* N^+ N = I as matrices, and N N^+ N = N */
        double worst = 0;
        for (int i = 0; i < nu; ++i)
            for (int j = 0; j < nu; ++j) {
                double d = 0;
                for (int k = 0; k < nq; ++k) d += Np[i * nq + k] * N[k * nu + j];
                worst = fmax(worst, fabs(d - (i == j)));
            }
        CHECK(worst <= 1e-14);
        mbk_state_destroy(s);
    }
    mbk_system_destroy(sys);
}

/* (2) G v and G^T lambda against the dense G. */
static void check_G(const mbk_system *sys, mbk_state *s, const char *what)
{
    const mbk_matter *m = mbk_multibody_get_matter(sys);
    int nu = mbk_state_get_nu(s), mt = mbk_state_get_num_multipliers(s);
    static double G[M_MAX * NU_MAX];
    double v[NU_MAX], Gv[M_MAX], ref[M_MAX], lam[M_MAX], f[NU_MAX], fref[NU_MAX];
    CHECK(ok(mbk_matter_calc_G(m, s, G), what));
    for (int i = 0; i < nu; ++i) v[i] = rnd();
    CHECK(ok(mbk_matter_multiply_by_G(m, s, v, Gv), "G v"));
    mul(G, mt, nu, v, ref);
    double scale = 1 + max_abs(ref, mt);
    CHECK(max_abs_diff(Gv, ref, mt) <= 1e-12 * scale);
    for (int i = 0; i < mt; ++i) lam[i] = rnd();
    CHECK(ok(mbk_matter_multiply_by_G_transpose(m, s, lam, f), "G^T lambda"));
    mul_transpose(G, mt, nu, lam, fref, -1);
    CHECK(max_abs_diff(f, fref, nu) <= 1e-13 * (1 + max_abs(fref, nu)));
    /* (7) a planted sign error in G^T's reference is caught */
    mul_transpose(G, mt, nu, lam, fref, 0);
    CHECK(fabs(G[0] * lam[0]) < 1e-3 || max_abs_diff(f, fref, nu) > 1e-4);
    /* lambda and f may overlap */
    double both[NU_MAX];
    memcpy(both, lam, sizeof(double) * (size_t)mt);
    CHECK(ok(mbk_matter_multiply_by_G_transpose(m, s, both, both), "G^T lambda in place"));
    CHECK(max_abs_diff(both, f, nu) == 0.0);
    /* the first mp + mv rows of G u + c(t) are the velocity errors: G (u + v) - G u = G v */
}

static void test_G(void)
{
    mbk_system *sys = mixed_tree(true);
    for (int e = 0; e < 2; ++e)
        for (int trial = 0; trial < 4; ++trial) {
            mbk_state *s = random_state(sys, e == 1, MBK_STAGE_VELOCITY);
            CHECK_INT(mbk_state_get_num_multipliers(s), 6);
            check_G(sys, s, "dense G (tree)");
            mbk_state_destroy(s);
        }
    mbk_system_destroy(sys);
    sys = fourbar();
    mbk_state *s = random_state(sys, false, MBK_STAGE_VELOCITY);
    check_G(sys, s, "dense G (four-bar)");
    mbk_state_destroy(s);
    mbk_system_destroy(sys);
}

/* (3) the velocity projection */
static void test_project_u(void)
{
    mbk_system *sys = mixed_tree(true);
    for (int trial = 0; trial < 4; ++trial) {
        mbk_state *s = random_state(sys, trial & 1, MBK_STAGE_VELOCITY);
        int nq = mbk_state_get_nq(s), nu = mbk_state_get_nu(s), k = mbk_state_get_nuerr(s);
        double q0[NQ_MAX], u0[NU_MAX];
        memcpy(q0, mbk_state_get_q(s), sizeof(double) * (size_t)nq);
        memcpy(u0, mbk_state_get_u(s), sizeof(double) * (size_t)nu);
        CHECK(max_abs(mbk_state_get_uerr(s), k) > 1e-2); /* random u are off the manifold */
        double t0 = mbk_state_get_time(s);
        CHECK(ok(mbk_system_project_u(sys, s, 1e-12), "project u"));
        CHECK(mbk_state_get_stage(s) >= MBK_STAGE_VELOCITY);
        CHECK(max_abs(mbk_state_get_uerr(s), k) <= 1e-12);
        CHECK(memcmp(q0, mbk_state_get_q(s), sizeof(double) * (size_t)nq) == 0);
        CHECK(mbk_state_get_time(s) == t0);
        CHECK(max_abs_diff(u0, mbk_state_get_u(s), nu) > 1e-3);
        /* projecting again changes nothing */
        memcpy(u0, mbk_state_get_u(s), sizeof(double) * (size_t)nu);
        CHECK(ok(mbk_system_project_u(sys, s, 1e-10), "project u again"));
        CHECK(memcmp(u0, mbk_state_get_u(s), sizeof(double) * (size_t)nu) == 0);
        mbk_state_destroy(s);
    }
    mbk_system_destroy(sys);
    /* the four-bar: a redundant row, q off the manifold too */
    sys = fourbar();
    mbk_state *s = random_state(sys, false, MBK_STAGE_VELOCITY);
    double q0[3];
    memcpy(q0, mbk_state_get_q(s), sizeof q0);
    CHECK(ok(mbk_system_project_u(sys, s, 1e-12), "project u (four-bar)"));
    CHECK(max_abs(mbk_state_get_uerr(s), 3) <= 1e-12);
    CHECK(memcmp(q0, mbk_state_get_q(s), sizeof q0) == 0);
    mbk_state_destroy(s);
    mbk_system_destroy(sys);
}

/* (4) forces and accelerations of given multipliers */
static void test_multipliers(void)
{
    mbk_system *sys = mixed_tree(true);
    const mbk_matter *m = mbk_multibody_get_matter(sys);
    for (int trial = 0; trial < 4; ++trial) {
        mbk_state *s = random_state(sys, trial & 1, MBK_STAGE_ACCELERATION);
        int nu = mbk_state_get_nu(s), mt = mbk_state_get_num_multipliers(s), nb = mbk_matter_get_num_bodies(m);
        double lam[M_MAX], f[NU_MAX], jt[NU_MAX], mob[NU_MAX];
        mbk_spatial_vec F[NB_MAX];
        for (int i = 0; i < mt; ++i) lam[i] = rnd();
        CHECK(ok(mbk_matter_calc_constraint_forces_from_multipliers(m, s, lam, F, mob), "forces"));
        CHECK(ok(mbk_matter_multiply_by_system_jacobian_transpose(m, s, F, jt), "J^T F"));
        CHECK(ok(mbk_matter_multiply_by_G_transpose(m, s, lam, f), "G^T lambda"));
        for (int i = 0; i < nu; ++i) jt[i] += mob[i] + f[i]; /* J^T F + tau = -G^T lambda */
        CHECK(max_abs(jt, nu) <= 1e-13 * (1 + max_abs(f, nu)));
        CHECK(F[0].w.x == F[0].w.x && nb <= NB_MAX);
        /* the State's own multipliers give the State's udot */
        double ud[NU_MAX], ud2[NU_MAX], d[NU_MAX], Md[NU_MAX], dl[M_MAX];
        const double *ls = mbk_state_get_multipliers(s), *us = mbk_state_get_udot(s);
        CHECK(ok(mbk_matter_calc_udot_given_multipliers(m, s, ls, ud), "udot(lambda*)"));
        CHECK(max_abs_diff(ud, us, nu) <= 1e-10 * (1 + max_abs(us, nu)));
        /* other multipliers: M (udot(l) - udot(l*)) = -G^T (l - l*) */
        CHECK(ok(mbk_matter_calc_udot_given_multipliers(m, s, lam, ud2), "udot(lambda)"));
        for (int i = 0; i < nu; ++i) d[i] = ud2[i] - ud[i];
        for (int i = 0; i < mt; ++i) dl[i] = lam[i] - ls[i];
        CHECK(ok(mbk_matter_multiply_by_M(m, s, d, Md), "M d"));
        CHECK(ok(mbk_matter_multiply_by_G_transpose(m, s, dl, f), "G^T dl"));
        for (int i = 0; i < nu; ++i) Md[i] += f[i];
        CHECK(max_abs(Md, nu) <= 1e-10 * (1 + max_abs(f, nu)));
        mbk_state_destroy(s);
    }
    mbk_system_destroy(sys);
}

/* (5) independent rows */
static void test_rows(void)
{
    mbk_system *sys = fourbar();
    const mbk_matter *m = mbk_multibody_get_matter(sys);
    mbk_state *s = random_state(sys, false, MBK_STAGE_VELOCITY);
    int rows[M_MAX], n = -1;
    CHECK(ok(mbk_matter_select_independent_constraints(m, s, rows, &n), "rows (four-bar)"));
    CHECK_INT(n, 2);
    CHECK(n == 2 && rows[0] < rows[1]);
    /* the row left out is in the span of the kept ones: G's z row (planar motion) is zero */
    double G[3 * 3];
    mbk_matter_calc_G(m, s, G);
    int out = 3 - rows[0] - rows[1];
    CHECK(out >= 0 && out < 3 && max_abs(G + 3 * out, 3) <= 1e-12);
    mbk_state_destroy(s);
    mbk_system_destroy(sys);

    sys = mixed_tree(true);
    m = mbk_multibody_get_matter(sys);
    s = random_state(sys, false, MBK_STAGE_VELOCITY);
    CHECK(ok(mbk_matter_select_independent_constraints(m, s, rows, &n), "rows (tree)"));
    CHECK_INT(n, 6);
    for (int i = 0; i < n; ++i) CHECK_INT(rows[i], i);
    mbk_state_destroy(s);
    mbk_system_destroy(sys);
}

/* (6) bad input */
static void test_bad_input(void)
{
    mbk_system *sys = mixed_tree(true), *other = fourbar();
    const mbk_matter *m = mbk_multibody_get_matter(sys);
    mbk_state *s = random_state(sys, false, MBK_STAGE_POSITION);
    int nq = mbk_state_get_nq(s), nu = mbk_state_get_nu(s);
    double q0[NQ_MAX], u0[NU_MAX], in[NQ_MAX], out[NQ_MAX];
    mbk_spatial_vec F[NB_MAX];
    int rows[M_MAX], n;
    memcpy(q0, mbk_state_get_q(s), sizeof(double) * (size_t)nq);
    memcpy(u0, mbk_state_get_u(s), sizeof(double) * (size_t)nu);
    for (int i = 0; i < NQ_MAX; ++i) in[i] = 0.1 * i;
    /* NULL arrays */
    CHECK_INT(mbk_matter_multiply_by_N(m, s, false, NULL, out), MBK_EINVAL);
    CHECK(strstr(mbk_last_error(), "in is NULL") != NULL);
    CHECK_INT(mbk_matter_multiply_by_N_pinv(m, s, true, in, NULL), MBK_EINVAL);
    CHECK_INT(mbk_matter_multiply_by_N(NULL, s, false, in, out), MBK_EINVAL);
    /* a State below the stage: G needs Velocity, this one is at Position */
    CHECK_INT(mbk_matter_multiply_by_G(m, s, in, out), MBK_ESTAGE);
    CHECK(strstr(mbk_last_error(), "Velocity") != NULL);
    CHECK_INT(mbk_matter_multiply_by_G_transpose(m, s, in, out), MBK_ESTAGE);
    CHECK_INT(mbk_matter_calc_constraint_forces_from_multipliers(m, s, in, F, NULL), MBK_ESTAGE);
    CHECK_INT(mbk_matter_calc_udot_given_multipliers(m, s, in, out), MBK_ESTAGE);
    CHECK_INT(mbk_matter_select_independent_constraints(m, s, rows, &n), MBK_ESTAGE);
    mbk_state *t = mbk_state_create();
    mbk_state_init(t, sys);
    CHECK_INT(mbk_matter_multiply_by_N(m, t, false, in, out), MBK_ESTAGE);
    CHECK_INT(mbk_matter_get_num_q(m, t), MBK_ESTAGE);
    mbk_state_destroy(t);
    /* NaN */
    CHECK(ok(mbk_system_realize(sys, s, MBK_STAGE_DYNAMICS), "realize"));
    in[3] = NAN;
    CHECK_INT(mbk_matter_multiply_by_N(m, s, true, in, out), MBK_ENOTFINITE);
    CHECK(strstr(mbk_last_error(), "in[3]") != NULL);
    CHECK_INT(mbk_matter_multiply_by_G(m, s, in, out), MBK_ENOTFINITE);
    CHECK_INT(mbk_matter_multiply_by_G_transpose(m, s, in, out), MBK_ENOTFINITE);
    CHECK_INT(mbk_matter_calc_udot_given_multipliers(m, s, in, out), MBK_ENOTFINITE);
    CHECK_INT(mbk_matter_calc_constraint_forces_from_multipliers(m, s, in, F, NULL), MBK_ENOTFINITE);
    CHECK_INT(mbk_system_project_u(sys, s, NAN), MBK_EINVAL);
    CHECK_INT(mbk_system_project_u(sys, s, 0.0), MBK_EINVAL);
    CHECK_INT(mbk_matter_select_independent_constraints(m, s, NULL, &n), MBK_EINVAL);
    CHECK_INT(mbk_state_get_stage(s), MBK_STAGE_DYNAMICS);
    /* a State of another System is refused as stale */
    mbk_state *o = random_state(other, false, MBK_STAGE_VELOCITY);
    CHECK_INT(mbk_matter_multiply_by_N(m, o, false, in, out), MBK_ESTALE);
    CHECK_INT(mbk_matter_multiply_by_G(m, o, in, out), MBK_ESTALE);
    CHECK_INT(mbk_system_project_u(sys, o, 1e-9), MBK_ESTALE);
    mbk_state_destroy(o);
    /* a State made stale by a topology change */
    mbk_system_invalidate_topology(sys);
    mbk_system_realize_topology(sys);
    CHECK_INT(mbk_matter_multiply_by_N(m, s, false, in, out), MBK_ESTALE);
    CHECK_INT(mbk_system_project_u(sys, s, 1e-9), MBK_ESTALE);
    /* through all of it the variables stayed as they were */
    CHECK(memcmp(q0, mbk_state_get_q(s), sizeof(double) * (size_t)nq) == 0);
    CHECK(memcmp(u0, mbk_state_get_u(s), sizeof(double) * (size_t)nu) == 0);
    mbk_state_destroy(s);
    mbk_system_destroy(sys);
    mbk_system_destroy(other);
}

/* (8) no allocation in any of the operators on a realized State */
static void test_no_allocation(void)
{
    mbk_system *sys = mixed_tree(true);
    const mbk_matter *m = mbk_multibody_get_matter(sys);
    mbk_state *s = random_state(sys, false, MBK_STAGE_ACCELERATION);
    double a[NQ_MAX], b[NQ_MAX], lam[M_MAX];
    mbk_spatial_vec F[NB_MAX];
    int rows[M_MAX], n;
    for (int i = 0; i < NQ_MAX; ++i) a[i] = 0.01 * i;
    for (int i = 0; i < M_MAX; ++i) lam[i] = 0.1 * i;
    long before = mbk_get_allocation_count();
    int bad = 0;
    for (int rep = 0; rep < 3; ++rep) {
        bad += mbk_matter_multiply_by_N(m, s, false, a, b) < 0;
        bad += mbk_matter_multiply_by_N(m, s, true, a, b) < 0;
        bad += mbk_matter_multiply_by_N_pinv(m, s, false, a, b) < 0;
        bad += mbk_matter_multiply_by_N_pinv(m, s, true, a, b) < 0;
        bad += mbk_matter_multiply_by_G(m, s, a, b) < 0;
        bad += mbk_matter_multiply_by_G_transpose(m, s, lam, b) < 0;
        bad += mbk_matter_calc_constraint_forces_from_multipliers(m, s, lam, F, b) < 0;
        bad += mbk_matter_calc_udot_given_multipliers(m, s, lam, b) < 0;
        bad += mbk_matter_select_independent_constraints(m, s, rows, &n) < 0;
        mbk_state_upd_u(s)[0] += 0.1; /* off the velocity manifold again */
        bad += mbk_system_project_u(sys, s, 1e-12) < 0;
        bad += mbk_system_realize(sys, s, MBK_STAGE_ACCELERATION) < 0;
    }
    CHECK_INT(bad, 0);
    CHECK_INT(mbk_get_allocation_count() - before, 0);
    mbk_state_destroy(s);
    mbk_system_destroy(sys);
}

int main(void)
{
    test_no_allocation();
    test_N(false);
    test_N(true);
    test_G();
    test_project_u();
    test_multipliers();
    test_rows();
    test_bad_input();
    return mbk_test_finish();
}
