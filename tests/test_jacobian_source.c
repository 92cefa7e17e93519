/* The Jacobian source of CVODE BDF and IDA (mbk_integrator_set_jacobian_source): the
 * settings agree with mbk_integrator_set_use_system_jacobian, bad values are refused, the
 * three sources (analytic, mbk's forward differences, SUNDIALS' difference quotients) give
 * the same configuration within the tolerance on a stiff model (checked against an
 * independent tight RK-Merson reference), and the statistics count what really happened:
 * Jacobians, and realizations (a custom force element counts its own calls); and on a
 * longer chain, whose Newton matrix is solved through a band LU, the Newton iterations
 * converge. */
#include <math.h>
#include <stdio.h>
#include <string.h>

#include "mbk/mbk.h"
#include "mbk_test.h"

enum { LINKS = 3, NSRC = 3 };
static const mbk_jacobian_source SRC[NSRC] = {MBK_JACOBIAN_ANALYTIC, MBK_JACOBIAN_FD, MBK_JACOBIAN_SUNDIALS_DQ};
static const char *const SRC_NAME[NSRC] = {"analytic", "mbk FD", "SUNDIALS DQ"};
static const double T_END = 0.3, TOL = 1e-6;

/* A force element that adds nothing and counts its calls: one per realization of Dynamics. */
static long FORCE_CALLS;

static int count_force(void *impl, const mbk_force_ctx *c, const mbk_state *s, mbk_spatial_vec *bf, double *mf)
{
    (void)impl, (void)c, (void)s, (void)bf, (void)mf;
    FORCE_CALLS++;
    return 0;
}

/* Its Jacobian is zero (given, so the analytic Jacobian stays exact). */
static int count_jacobian(void *impl, const mbk_force_ctx *c, const mbk_state *s, double *dq, int ldq, double *du,
                          int ldu)
{
    (void)impl, (void)c, (void)s, (void)dq, (void)ldq, (void)du, (void)ldu;
    return 0;
}

/* n 0.5 kg, 0.2 m links on Free mobilizers from Ground, joined end to end and to Ground
   by stiff damped bushings, under gravity (the model of benchmarks/bench_stiff.c, shorter). */
static mbk_system *make_chain(int n, mbk_state **s0)
{
    mbk_system *sys = mbk_multibody_create("bushing_chain");
    mbk_matter *mt = mbk_multibody_upd_matter(sys);
    mbk_forces *f = mbk_multibody_upd_forces(sys);
    mbk_mass_props link = mbk_mass_props_from_central(0.5, mbk_vec3_make(0.1, 0, 0),
                                                      mbk_mat33_diag(3.3e-5, 1.7e-3, 1.7e-3));
    const double k[6] = {200, 200, 200, 1e5, 1e5, 1e5}, c[6] = {2, 2, 2, 1000, 1000, 1000};
    mbk_transform id = mbk_transform_identity(), tip = mbk_transform_from_p(mbk_vec3_make(0.2, 0, 0));
    for (int i = 0; i < n; ++i) {
        int b = mbk_matter_add_body(mt, 0, &id, &link, &id, mbk_mobilizer_free());
        CHECK(b == i + 1);
        CHECK(mbk_force_add_linear_bushing(f, i, i == 0 ? &id : &tip, b, &id, k, c) >= 0);
    }
    mbk_force_ops ops = {.name = "counter", .calc_force = count_force, .calc_jacobian = count_jacobian};
    CHECK(mbk_force_add_gravity(f, mbk_vec3_make(0, 0, -9.81)) >= 0);
    CHECK(mbk_force_add_custom(f, &ops, NULL) >= 0);
    CHECK_INT(mbk_system_realize_topology(sys), MBK_OK);
    *s0 = mbk_state_create();
    CHECK_INT(mbk_state_init(*s0, sys), MBK_OK);
    CHECK_INT(mbk_system_realize(sys, *s0, MBK_STAGE_MODEL), MBK_OK);
    for (int i = 0; i < n; ++i) {
        /* straight along x, the middle link a little bent so that every bushing works */
        mbk_transform X = mbk_transform_from_axis_angle(mbk_vec3_make(0, 0, 1), i == 1 ? 0.05 : 0.0,
                                                        mbk_vec3_make(0.2 * i, 0, 0));
        CHECK_INT(mbk_matter_set_body_q_to_fit_transform(mt, *s0, i + 1, &X), MBK_OK);
    }
    CHECK_INT(mbk_system_realize(sys, *s0, MBK_STAGE_INSTANCE), MBK_OK);
    return sys;
}

static void test_settings(void)
{
    mbk_state *s0;
    mbk_system *sys = make_chain(LINKS, &s0);
    mbk_integrator *ig = mbk_integrator_create_cvode(sys, MBK_CVODE_BDF);
    mbk_integrator_settings set;
    CHECK_INT(mbk_integrator_get_settings(ig, &set), MBK_OK);
    CHECK(set.jacobian_source == MBK_JACOBIAN_ANALYTIC && set.use_system_jacobian);
    /* mbk's differences are mbk's Jacobian: use_system_jacobian stays on */
    CHECK_INT(mbk_integrator_set_jacobian_source(ig, MBK_JACOBIAN_FD), MBK_OK);
    mbk_integrator_get_settings(ig, &set);
    CHECK(set.jacobian_source == MBK_JACOBIAN_FD && set.use_system_jacobian);
    /* turning it on again keeps the chosen mbk source */
    CHECK_INT(mbk_integrator_set_use_system_jacobian(ig, true), MBK_OK);
    mbk_integrator_get_settings(ig, &set);
    CHECK(set.jacobian_source == MBK_JACOBIAN_FD);
    /* off is SUNDIALS' difference quotients; on again from there is the analytic one */
    CHECK_INT(mbk_integrator_set_use_system_jacobian(ig, false), MBK_OK);
    mbk_integrator_get_settings(ig, &set);
    CHECK(set.jacobian_source == MBK_JACOBIAN_SUNDIALS_DQ && !set.use_system_jacobian);
    CHECK_INT(mbk_integrator_set_use_system_jacobian(ig, true), MBK_OK);
    mbk_integrator_get_settings(ig, &set);
    CHECK(set.jacobian_source == MBK_JACOBIAN_ANALYTIC && set.use_system_jacobian);
    CHECK_INT(mbk_integrator_set_jacobian_source(ig, MBK_JACOBIAN_SUNDIALS_DQ), MBK_OK);
    mbk_integrator_get_settings(ig, &set);
    CHECK(!set.use_system_jacobian);
    /* bad input: refused with a message, the settings unchanged */
    CHECK_INT(mbk_integrator_set_jacobian_source(ig, (mbk_jacobian_source)7), MBK_EINVAL);
    CHECK(strstr(mbk_last_error(), "MBK_JACOBIAN_ANALYTIC") != NULL);
    mbk_integrator_get_settings(ig, &set);
    CHECK(set.jacobian_source == MBK_JACOBIAN_SUNDIALS_DQ);
    CHECK_INT(mbk_integrator_set_jacobian_source(NULL, MBK_JACOBIAN_FD), MBK_EINVAL);
    mbk_integrator_destroy(ig);
    mbk_state_destroy(s0);
    mbk_system_destroy(sys);
}

/* max_i |a_i - b_i| / (TOL |b_i| + TOL): the error test's weights, in units of the tolerance */
static double weighted_diff(const double *a, const double *b, int n)
{
    double m = 0;
    for (int i = 0; i < n; ++i) m = fmax(m, fabs(a[i] - b[i]) / (TOL * fabs(b[i]) + TOL));
    return m;
}

/* Run ig from s0 to T_END; the final y into y, the statistics into st, the force's calls
   during the steps (after initialize) into *calls. */
static void run(mbk_integrator *ig, const mbk_state *s0, double *y, mbk_integrator_stats *st, long *calls)
{
    CHECK_INT(mbk_integrator_initialize(ig, s0), MBK_OK);
    long c0 = FORCE_CALLS;
    CHECK_INT(mbk_integrator_step_to(ig, T_END), MBK_OK);
    *calls = FORCE_CALLS - c0;
    mbk_integrator_get_stats(ig, st);
    const mbk_state *s = mbk_integrator_get_state(ig);
    memcpy(y, mbk_state_get_y(s), sizeof(double) * (size_t)mbk_state_get_ny(s));
}

static void test_same_trajectory_and_counts(void)
{
    mbk_state *s0;
    mbk_system *sys = make_chain(LINKS, &s0);
    const int ny = mbk_state_get_ny(s0), nq = mbk_state_get_nq(s0);
    double yref[13 * LINKS], y[13 * LINKS];
    CHECK_INT(ny, 13 * LINKS);
    /* the reference: RK-Merson (no Jacobian at all) at 1e-4 x the tolerance */
    mbk_integrator *rk = mbk_integrator_create_rkmerson(sys);
    mbk_integrator_stats st;
    long calls;
    mbk_integrator_set_accuracy(rk, 1e-4 * TOL);
    mbk_integrator_set_max_steps(rk, 10000000);
    run(rk, s0, yref, &st, &calls);
    mbk_integrator_destroy(rk);
    printf("  reference: RK-Merson at %g, %ld steps (the bushings' stiffness)\n", 1e-4 * TOL, st.steps_taken);
    for (int ida = 0; ida < 2; ++ida) {
        double err[NSRC], yan[13 * LINKS];
        for (int j = 0; j < NSRC; ++j) {
            mbk_integrator *ig = ida ? mbk_integrator_create_ida(sys) : mbk_integrator_create_cvode(sys, MBK_CVODE_BDF);
            mbk_integrator_set_accuracy(ig, TOL);
            CHECK_INT(mbk_integrator_set_jacobian_source(ig, SRC[j]), MBK_OK);
            run(ig, s0, y, &st, &calls);
            if (j == 0) memcpy(yan, y, sizeof yan);
            err[j] = weighted_diff(y, yref, ny);
            printf("  %-9s %-11s: %4ld steps, %5ld ydot counted, %5ld force calls, %3ld Jacobians, %ld Newton "
                   "failures, final |dy| = %.3f tol from the reference, %.3f tol from the analytic run's\n",
                   mbk_integrator_get_name(ig), SRC_NAME[j], st.steps_taken, st.rhs_evaluations, calls,
                   st.jacobian_evaluations, st.convergence_failures, err[j], weighted_diff(y, yan, ny));
            /* The same answer whatever the Jacobian: the configuration within the tolerance of
               the reference (0.13 to 0.83 tolerances in runs at 1e-7 to 1e-6). The velocities
               are not compared: they carry BDF's error on the bushings' stiff modes, which its
               long steps damp rather than resolve, 3 to 105 tolerances in those runs and moving
               with the step sequence, which round-off in SUNDIALS' own vector operations
               changes (holding each source to the analytic run's error held only by chance) */
            CHECK(weighted_diff(y, yref, nq) <= 1.0);
            /* Jacobians are counted, and so is every realization (the force element's calls) to
               within one: a column each and one back at the base point for mbk's differences,
               a column each for SUNDIALS', none for the analytic Jacobian (exact, no z) */
            CHECK(st.jacobian_evaluations > 0);
            /* the Newton iteration converges: the dense solve (LAPACK's LU,
               integrators/sundials_lapack.c) is right (a transposed solve, planted, left every
               run short of T_END after 100000 steps and thousands of Newton failures) */
            CHECK(st.convergence_failures <= 1);
            CHECK(st.rhs_evaluations - calls >= 0 && st.rhs_evaluations - calls <= 1);
            /* the check fails when the analytic Jacobian is counted as differences (as it was) */
            long planted = st.rhs_evaluations + (j == 0 ? st.jacobian_evaluations * (ny + 1) : 0);
            if (j == 0) CHECK(!(planted - calls >= 0 && planted - calls <= 1));
            mbk_integrator_destroy(ig);
        }
        /* the check can fail: the analytic run at 1000 times the tolerance misses by more */
        mbk_integrator *loose = ida ? mbk_integrator_create_ida(sys) : mbk_integrator_create_cvode(sys, MBK_CVODE_BDF);
        mbk_integrator_set_accuracy(loose, 1000 * TOL);
        run(loose, s0, y, &st, &calls);
        printf("  %-9s at 1000 x tol: configuration %.3f tol from the reference\n", mbk_integrator_get_name(loose),
               weighted_diff(y, yref, nq));
        CHECK(weighted_diff(y, yref, nq) > 1.0);
        mbk_integrator_destroy(loose);
    }
    mbk_state_destroy(s0);
    mbk_system_destroy(sys);
}

/* A chain long enough (12 links, nu = 72) that the Newton matrix's Schur complement is
   factored as a band matrix (integrators/sundials_lapack.c; tests/test_newton_solver.c
   checks that choice and the solves to round-off): CVODE BDF and IDA converge in their
   Newton iterations (2 and 5 failures; a transposed band solve, planted, gave 4583 and
   22710 over 39414 and 45417 steps) and end near the reference in the configuration
   (0.13 and 1.02 tolerances: BDF bounds each step's error, not the whole run's; planted,
   7.2 and 10.6). */
static void test_banded_newton(void)
{
    enum { N = 12 };
    mbk_state *s0;
    mbk_system *sys = make_chain(N, &s0);
    const int nq = mbk_state_get_nq(s0);
    double yref[13 * N], y[13 * N];
    mbk_integrator_stats st;
    long calls;
    mbk_integrator *rk = mbk_integrator_create_rkmerson(sys);
    mbk_integrator_set_accuracy(rk, 1e-4 * TOL);
    mbk_integrator_set_max_steps(rk, 10000000);
    run(rk, s0, yref, &st, &calls);
    mbk_integrator_destroy(rk);
    for (int ida = 0; ida < 2; ++ida) {
        mbk_integrator *ig = ida ? mbk_integrator_create_ida(sys) : mbk_integrator_create_cvode(sys, MBK_CVODE_BDF);
        mbk_integrator_set_accuracy(ig, TOL);
        run(ig, s0, y, &st, &calls);
        printf("  %d links, %-9s: %4ld steps, %ld Newton failures, configuration %.3f tol from the reference\n", N,
               mbk_integrator_get_name(ig), st.steps_taken, st.convergence_failures, weighted_diff(y, yref, nq));
        CHECK(st.convergence_failures <= 10);
        CHECK(st.steps_taken < 1000);
        CHECK(weighted_diff(y, yref, nq) <= 2.0);
        mbk_integrator_destroy(ig);
    }
    mbk_state_destroy(s0);
    mbk_system_destroy(sys);
}

int main(void)
{
    test_settings();
    test_same_trajectory_and_counts();
    test_banded_newton();
    return mbk_test_finish();
}
