/* Projection of the integrator's error estimate onto the constraint manifold
 * (issue 6, as Simbody does before its error test):
 * (1) four-bar (3 Pins + Ball, rank 2 of 3) and a free body on a Rod
 *     (quaternion, N != I): after projection P N^+ dq = 0 (checked with G's rows,
 *     and by central differences of perr for the quaternion body) and
 *     [P; V] du = 0; projecting twice changes nothing; a tangent vector and z
 *     are unchanged;
 * (2) without constraints it is a no-op;
 * (3) RK-Merson on the four-bar meets its accuracy with and without the
 *     projection, taking no more steps with it (counts printed);
 * (4) steps with the projection allocate nothing. */
#include "mbk/alloc.h"
#include "mbk/constraints.h"
#include "mbk/forces.h"
#include "mbk/integrator.h"
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

enum { NY_MAX = 32, M_MAX = 8 };

static unsigned long seed = 12345;
static double rnd(void) { return lcg_uniform(&seed); } /* uniform in [-1, 1) */

/* max |R x| over rows r0..r1-1 of G (nu columns). */
static double row_residual(const double *G, int nu, int r0, int r1, const double *x)
{
    double worst = 0;
    for (int j = r0; j < r1; ++j) {
        double d = 0;
        for (int i = 0; i < nu; ++i) d += G[j * nu + i] * x[i];
        worst = fmax(worst, fabs(d));
    }
    return worst;
}

static double max_diff(const double *a, const double *b, int n)
{
    double d = 0;
    for (int i = 0; i < n; ++i) d = fmax(d, fabs(a[i] - b[i]));
    return d;
}

/* (1) four-bar: N = I, so P dq = 0 and [P; V] du = 0 with G's rows. */
static void test_fourbar_projection(void)
{
    mbk_system *sys = fourbar();
    const mbk_matter *m = mbk_multibody_get_matter(sys);
    mbk_state *s = fourbar_state(sys, MBK_STAGE_VELOCITY);
    int ny = mbk_state_get_ny(s), nq = mbk_state_get_nq(s), nu = mbk_state_get_nu(s);
    int mp = mbk_state_get_nqerr(s), k = mbk_state_get_nuerr(s);
    CHECK_INT(nq, 3);
    CHECK_INT(mp, 3);
    double G[M_MAX * NY_MAX], y[NY_MAX], y2[NY_MAX], t[NY_MAX];
    CHECK(ok(mbk_matter_calc_G(m, s, G), "calc_G"));
    double worst_q = 0, worst_u = 0, worst_twice = 0, before = 0;
    for (int trial = 0; trial < 5; ++trial) {
        for (int i = 0; i < ny; ++i) y[i] = rnd();
        before = fmax(before, row_residual(G, nu, 0, mp, y));
        CHECK(ok(mbk_system_project_error_estimate(sys, s, y), "project error"));
        worst_q = fmax(worst_q, row_residual(G, nu, 0, mp, y));
        worst_u = fmax(worst_u, row_residual(G, nu, 0, k, y + nq));
        memcpy(y2, y, (size_t)ny * sizeof(double));
        CHECK(ok(mbk_system_project_error_estimate(sys, s, y2), "project again"));
        worst_twice = fmax(worst_twice, max_diff(y, y2, ny));
    }
    CHECK(before > 1e-3); /* the random vectors did have normal parts */
    CHECK(worst_q < 1e-12);
    CHECK(worst_u < 1e-12);
    CHECK(worst_twice < 1e-14);
    /* a tangent vector (the state's own velocity: qdot = u here) is unchanged */
    const double *u = mbk_state_get_u(s);
    for (int i = 0; i < nq; ++i) t[i] = u[i], t[nq + i] = 0.5 * u[i];
    memcpy(y, t, (size_t)ny * sizeof(double));
    CHECK(ok(mbk_system_project_error_estimate(sys, s, y), "project tangent"));
    CHECK(max_diff(y, t, ny) < 1e-14);
    printf("(1) four-bar: normal parts before %.2g; after |P dq| %.2g, |[P;V] du| %.2g; twice %.2g\n",
           before, worst_q, worst_u, worst_twice);
    /* argument checks */
    CHECK(mbk_system_project_error_estimate(sys, s, NULL) == MBK_EINVAL);
    mbk_state_set_time(s, 0.5);
    mbk_state_upd_u(s);
    CHECK(mbk_system_project_error_estimate(sys, s, y) == MBK_ESTAGE);
    mbk_state_destroy(s);
    mbk_system_destroy(sys);
}

/* perr at q (Position realized). */
static void perr_at(const mbk_system *sys, mbk_state *s, const double *q, int nq, double *perr, int mp)
{
    mbk_state_set_q(s, q, nq);
    mbk_system_realize(sys, s, MBK_STAGE_POSITION);
    memcpy(perr, mbk_state_get_qerr(s), (size_t)mp * sizeof(double));
}

/* (1) free body on a Rod: N maps 6 u to 7 q; the q part is checked by differences of perr. */
static void test_quaternion_projection(void)
{
    mbk_system *sys = rod_pendulum();
    const mbk_matter *m = mbk_multibody_get_matter(sys);
    mbk_state *s = mbk_state_create();
    mbk_state_init(s, sys);
    mbk_system_realize(sys, s, MBK_STAGE_MODEL);
    double q0[NY_MAX], y[NY_MAX], y2[NY_MAX], G[M_MAX * NY_MAX];
    int nq = mbk_state_get_nq(s), nu = mbk_state_get_nu(s), ny = mbk_state_get_ny(s);
    CHECK_INT(nq, 7);
    memcpy(q0, mbk_state_get_q(s), (size_t)nq * sizeof(double));
    const double qq[7] = {0.9, 0.2, -0.3, 0.1, 0.1, 0.3, 0.2};
    mbk_state_set_q(s, qq, nq);
    for (int i = 0; i < nu; ++i) mbk_state_upd_u(s)[i] = rnd();
    CHECK(ok(mbk_system_assemble(sys, s, 1e-13), "assembly"));
    CHECK(ok(mbk_system_project(sys, s, 1e-13), "projection"));
    CHECK(ok(mbk_system_realize(sys, s, MBK_STAGE_VELOCITY), "realize"));
    CHECK(ok(mbk_matter_calc_G(m, s, G), "calc_G"));
    memcpy(q0, mbk_state_get_q(s), (size_t)nq * sizeof(double));
    for (int i = 0; i < ny; ++i) y[i] = rnd();
    /* d perr/dq . dq by central differences, before the projection */
    const double eps = 1e-6;
    double qp[NY_MAX], qm[NY_MAX], pp[M_MAX], pm[M_MAX];
    for (int i = 0; i < nq; ++i) qp[i] = q0[i] + eps * y[i], qm[i] = q0[i] - eps * y[i];
    perr_at(sys, s, qp, nq, pp, 1);
    perr_at(sys, s, qm, nq, pm, 1);
    double slope0 = fabs(pp[0] - pm[0]) / (2 * eps);
    CHECK(slope0 > 1e-3);
    mbk_state_set_q(s, q0, nq);
    CHECK(ok(mbk_system_realize(sys, s, MBK_STAGE_VELOCITY), "realize"));
    /* the quaternion's normal part (along q) is kept: it is not a constraint direction */
    double along0 = 0, along1 = 0;
    for (int i = 0; i < 4; ++i) along0 += q0[i] * y[i];
    CHECK(ok(mbk_system_project_error_estimate(sys, s, y), "project error"));
    for (int i = 0; i < 4; ++i) along1 += q0[i] * y[i];
    CHECK(fabs(along1 - along0) < 1e-14);
    double worst_u = row_residual(G, nu, 0, mbk_state_get_nuerr(s), y + nq);
    memcpy(y2, y, (size_t)ny * sizeof(double));
    CHECK(ok(mbk_system_project_error_estimate(sys, s, y2), "project again"));
    double twice = max_diff(y, y2, ny);
    /* and after it */
    for (int i = 0; i < nq; ++i) qp[i] = q0[i] + eps * y[i], qm[i] = q0[i] - eps * y[i];
    perr_at(sys, s, qp, nq, pp, 1);
    perr_at(sys, s, qm, nq, pm, 1);
    double slope = fabs(pp[0] - pm[0]) / (2 * eps);
    CHECK(slope < 1e-8);
    CHECK(worst_u < 1e-12);
    CHECK(twice < 1e-14);
    printf("(1) free body on a Rod (quaternion): d perr/dq . dq %.2g before, %.2g after; |[P;V] du| %.2g; "
           "twice %.2g\n", slope0, slope, worst_u, twice);
    mbk_state_destroy(s);
    mbk_system_destroy(sys);
}

/* (2) no constraints: yerr unchanged. */
static void test_no_constraints(void)
{
    mbk_system *sys = fourbar_chain(false);
    mbk_state *s = mbk_state_create();
    mbk_state_init(s, sys);
    CHECK(ok(mbk_system_realize(sys, s, MBK_STAGE_VELOCITY), "realize"));
    double y[NY_MAX], y0[NY_MAX];
    int ny = mbk_state_get_ny(s);
    for (int i = 0; i < ny; ++i) y[i] = y0[i] = rnd();
    CHECK(ok(mbk_system_project_error_estimate(sys, s, y), "no constraints"));
    CHECK(max_diff(y, y0, ny) == 0.0);
    mbk_state_destroy(s);
    mbk_system_destroy(sys);
}

/* Counting allocator for (4). */
static long allocations;
static void *c_malloc(size_t n, void *u) { (void)u; allocations++; return malloc(n); }
static void *c_realloc(void *p, size_t n, void *u) { (void)u; allocations++; return realloc(p, n); }
static void c_free(void *p, void *u) { (void)u; free(p); }

/* RK-Merson on the four-bar to t = 2 (accuracy acc); final q into q, stats into st. */
static void run_merson(const mbk_system *sys, const mbk_state *s0, double acc, bool project, double *q,
                       mbk_integrator_stats *st, long *allocs)
{
    mbk_integrator *ig = mbk_integrator_create_rkmerson(sys);
    mbk_integrator_set_accuracy(ig, acc);
    mbk_integrator_set_project_error_estimate(ig, project);
    mbk_integrator_settings set;
    mbk_integrator_get_settings(ig, &set);
    CHECK(set.project_error_estimate == project);
    CHECK(ok(mbk_integrator_initialize(ig, s0), "initialize"));
    CHECK(ok(mbk_integrator_step_to(ig, 0.2), "first steps"));
    mbk_set_allocator(c_malloc, c_realloc, c_free, NULL);
    allocations = 0;
    CHECK(ok(mbk_integrator_step_to(ig, 2.0), "integrate"));
    mbk_set_allocator(NULL, NULL, NULL, NULL);
    *allocs = allocations;
    const mbk_state *s = mbk_integrator_get_state(ig);
    memcpy(q, mbk_state_get_q(s), 3 * sizeof(double));
    mbk_integrator_get_stats(ig, st);
    mbk_integrator_destroy(ig);
}

/* (3) accuracy and step counts with and without; (4) no allocation per step. */
static void test_merson(void)
{
    mbk_system *sys = fourbar();
    mbk_state *s = fourbar_state(sys, MBK_STAGE_VELOCITY);
    double qref[3], qon[3], qoff[3];
    mbk_integrator_stats ref, on, off;
    long aref, aon, aoff;
    mbk_integrator *ig = mbk_integrator_create_rkmerson(sys);
    mbk_integrator_settings set;
    mbk_integrator_get_settings(ig, &set);
    CHECK(set.project_error_estimate); /* default on */
    mbk_integrator_destroy(ig);
    run_merson(sys, s, 1e-10, true, qref, &ref, &aref);
    const double accs[2] = {1e-3, 1e-5};
    for (int a = 0; a < 2; ++a) {
        run_merson(sys, s, accs[a], true, qon, &on, &aon);
        run_merson(sys, s, accs[a], false, qoff, &off, &aoff);
        double eon = max_diff(qon, qref, 3), eoff = max_diff(qoff, qref, 3);
        CHECK(eon < 20 * accs[a]);
        CHECK(eoff < 20 * accs[a]);
        CHECK(on.steps_taken <= off.steps_taken);
        CHECK(on.steps_attempted <= off.steps_attempted);
        CHECK_INT(aon, 0);
        CHECK_INT(aoff, 0);
        printf("(3) RK-Merson, accuracy %g, t = 0..2: with projection %ld steps (%ld attempted, %ld "
               "rejected), error %.2g; without %ld steps (%ld attempted, %ld rejected), error %.2g\n",
               accs[a], on.steps_taken, on.steps_attempted, on.error_test_failures, eon, off.steps_taken,
               off.steps_attempted, off.error_test_failures, eoff);
    }
    printf("(4) allocations while stepping: %ld (with projection)\n", aon);
    mbk_state_destroy(s);
    mbk_system_destroy(sys);
}

int main(void)
{
    test_fourbar_projection();
    test_quaternion_projection();
    test_no_constraints();
    test_merson();
    return mbk_test_finish();
}
