/* Regression tests for the reliability defects of issue 18: a fatal error is
 * never swallowed, an event whose handler failed is handled on resume,
 * failed ODE/DAE-view calls leave the State as it was, non-finite numbers
 * are reported instead of returned as success, and a long chain of mimic
 * couplers is judged consistent. */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include <mbk/mbk.h>

#include "integrator_table.h"
#include "mbk_test.h"
#include "test_util.h"

/* CHECK_INT that also says whether it held. */
#define CHECK_INT_RET(a, b) CHECK((long)(a) == (long)(b))

/* ------------------------------------------------------------------ */
/* A pendulum with a custom force element that can misbehave            */
/* ------------------------------------------------------------------ */

typedef enum { F_NONE, F_ONE_SHOT, F_NAN, F_ALWAYS } fault;

typedef struct faulty {
    fault mode;
    double t_fault; /* from this time on */
    int fired;      /* one-shot: how often it failed (test-only memory) */
} faulty;

static int faulty_force(void *impl, const mbk_force_ctx *c, const mbk_state *s, mbk_spatial_vec *F,
                        double *tau)
{
    (void)c, (void)F;
    faulty *f = impl;
    double t = mbk_state_get_time(s);
    tau[0] += -0.1 * mbk_state_get_u(s)[0];
    if (t < f->t_fault) return 0;
    switch (f->mode) {
    case F_ONE_SHOT:
        if (f->fired++ == 0) return mbk_set_error(MBK_EUSER, "injected one-shot fault at t = %g", t);
        return 0;
    case F_ALWAYS: return mbk_set_error(MBK_EUSER, "injected fault at t = %g", t);
    case F_NAN: tau[0] = NAN; return 0;
    default: return 0;
    }
}

static const mbk_force_ops faulty_ops = {.name = "faulty", .calc_force = faulty_force};

/* A 2-link planar pendulum under gravity plus the faulty element. */
static mbk_system *make_pendulum(faulty *f) { return test_pendulum2(f ? &faulty_ops : NULL, f); }

/* A State at q = (0.6, -0.3), u = 0. */
static mbk_state *start_state(const mbk_system *sys)
{
    static const double q[2] = {0.6, -0.3};
    return test_state_from_default(sys, q, 2, NULL, 0);
}

/* Defect 1: a force element that fails once (fatal status) stops every integrator. */
static void test_one_shot_fault_is_reported(void)
{
    for (int w = 0; w < I_COUNT; ++w) {
        faulty f = {F_ONE_SHOT, 1.0, 0};
        mbk_system *sys = make_pendulum(&f);
        mbk_state *s = start_state(sys);
        mbk_integrator *ig = make((which)w, sys);
        mbk_integrator_set_accuracy(ig, 1e-6);
        if (w == I_RK4 || w == I_EULER || w == I_SEMI) mbk_integrator_set_fixed_step(ig, 1e-3);
        CHECK_INT(mbk_integrator_initialize(ig, s), MBK_OK);
        int rc = mbk_integrator_step_to(ig, 2.0);
        if (!CHECK(rc < 0)) printf("  %s: a one-shot fatal fault returned %d (%s)\n", names[w], rc, mbk_status_name(rc));
        CHECK(f.fired >= 1);
        CHECK(strstr(mbk_last_error(), "one-shot") != NULL);
        /* the last good State is kept, before the fault */
        CHECK(mbk_state_get_time(mbk_integrator_get_state(ig)) <= 1.0 + 1e-12);
        mbk_integrator_destroy(ig);
        mbk_state_destroy(s);
        mbk_system_destroy(sys);
    }
}

/* ------------------------------------------------------------------ */
/* Defect 2: an event whose handler failed is handled when resumed      */
/* ------------------------------------------------------------------ */

typedef struct flaky {
    int calls;      /* handler calls */
    int failures;   /* calls to fail first */
    int handled;    /* successful calls */
    double t_seen;  /* time of the last successful call */
} flaky;

static double witness_q0(void *user, const mbk_system *sys, const mbk_state *s)
{
    (void)user, (void)sys;
    return mbk_state_get_q(s)[0]; /* the first link swings through 0 */
}

static int flaky_handler(void *user, const mbk_system *sys, mbk_state *s, mbk_event_result *r)
{
    (void)sys, (void)r;
    flaky *f = user;
    if (f->calls++ < f->failures) return mbk_set_error(MBK_EUSER, "injected handler failure");
    f->handled++;
    f->t_seen = mbk_state_get_time(s);
    return 0;
}

static void test_failed_handler_event_not_lost(void)
{
    for (int kind = 0; kind < 2; ++kind) {   /* 0 triggered, 1 scheduled */
        for (int w = 0; w < I_COUNT; ++w) {
            flaky fl = {0, 1, 0, NAN};
            mbk_system *sys = mbk_multibody_create("pendulum");
            mbk_matter *m = mbk_multibody_upd_matter(sys);
            mbk_mass_props mp = mbk_mass_props_from_central(1.0, (mbk_vec3){0, -0.5, 0}, mbk_mat33_diag(0.02, 0.01, 0.02));
            mbk_transform X0 = mbk_transform_identity();
            mbk_matter_add_body(m, 0, &X0, &mp, &X0, mbk_mobilizer_pin());
            mbk_force_add_gravity(mbk_multibody_upd_forces(sys), (mbk_vec3){0, -9.81, 0});
            if (kind == 0) mbk_system_add_event_handler(sys, MBK_STAGE_POSITION, MBK_ANY, witness_q0, flaky_handler, &fl);
            else mbk_system_add_scheduled_event(sys, 0.25, flaky_handler, &fl);
            mbk_system_realize_topology(sys);
            mbk_state *s = mbk_state_create();
            mbk_state_copy(s, mbk_system_get_default_state(sys));
            mbk_system_realize(sys, s, MBK_STAGE_MODEL);
            double q0 = 0.5;
            mbk_state_set_q(s, &q0, 1);
            mbk_integrator *ig = make((which)w, sys);
            mbk_integrator_set_accuracy(ig, 1e-7);
            if (w == I_RK4 || w == I_EULER || w == I_SEMI) mbk_integrator_set_fixed_step(ig, 1e-3);
            mbk_integrator_initialize(ig, s);
            int rc = mbk_integrator_step_to(ig, 1.0);
            CHECK_INT(rc, MBK_EUSER);
            double t_fail = mbk_state_get_time(mbk_integrator_get_state(ig));
            CHECK_INT(fl.handled, 0);
            /* resume: the pending event is handled first, at the same time */
            rc = mbk_integrator_step_to(ig, 1.0);
            CHECK(rc == MBK_EVENT || rc == MBK_OK);
            if (!CHECK_INT_RET(fl.handled, 1))
                printf("  %s (%s event): the event whose handler failed was not handled on resume\n", names[w],
                       kind ? "scheduled" : "triggered");
            CHECK(fl.t_seen == t_fail);
            if (kind == 1) CHECK(fl.t_seen == 0.25);
            /* and it is handled once only: finish the run */
            while (rc == MBK_EVENT) rc = mbk_integrator_step_to(ig, 1.0);
            CHECK_INT(rc, MBK_OK);
            if (kind == 1) CHECK_INT(fl.handled, 1);
            mbk_integrator_destroy(ig);
            mbk_state_destroy(s);
            mbk_system_destroy(sys);
        }
    }
}

/* ------------------------------------------------------------------ */
/* Defect 3: failed ODE/DAE-view calls leave the State as it was        */
/* ------------------------------------------------------------------ */

/* The State's t, y and stage against a saved copy. */
static void check_unchanged(const mbk_state *s, double t, const double *y, int ny, mbk_stage stage)
{
    CHECK(mbk_state_get_time(s) == t);
    CHECK(memcmp(mbk_state_get_y(s), y, (size_t)ny * sizeof(double)) == 0);
    CHECK_INT(mbk_state_get_stage(s), stage);
}

static void test_failed_calls_leave_state(void)
{
    for (int mode = 0; mode < 2; ++mode) { /* a failing element; a NaN force */
        faulty f = {mode == 0 ? F_ALWAYS : F_NAN, 1.0, 0};
        mbk_system *sys = make_pendulum(&f);
        mbk_state *s = start_state(sys);
        CHECK_INT(mbk_system_realize(sys, s, MBK_STAGE_ACCELERATION), MBK_OK);
        int ny = mbk_state_get_ny(s);
        double y0[4], y1[4], ydot[4], yp[4] = {0, 0, 0, 0}, r[4];
        memcpy(y0, mbk_state_get_y(s), sizeof y0);
        for (int i = 0; i < ny; ++i) y1[i] = y0[i] + 0.1;
        /* at t = 1.5 the element fails: nothing of the caller's changes */
        int rc = mbk_system_calc_ydot(sys, s, 1.5, y1, ydot);
        CHECK_INT(rc, mode == 0 ? MBK_EUSER : MBK_ENOTFINITE);
        check_unchanged(s, 0.0, y0, ny, MBK_STAGE_ACCELERATION);
        rc = mbk_system_calc_dae_residual(sys, s, 1.5, y1, yp, r);
        CHECK_INT(rc, mode == 0 ? MBK_EUSER : MBK_ENOTFINITE);
        check_unchanged(s, 0.0, y0, ny, MBK_STAGE_ACCELERATION);
        if (mode == 1) CHECK(strstr(mbk_last_error(), "faulty") != NULL); /* names the element */
        /* and a good call afterwards gives the same bits as on a fresh State */
        CHECK_INT(mbk_system_calc_ydot(sys, s, 0.5, y1, ydot), MBK_OK);
        mbk_state *fresh = start_state(sys);
        double ydot2[4];
        CHECK_INT(mbk_system_calc_ydot(sys, fresh, 0.5, y1, ydot2), MBK_OK);
        CHECK(memcmp(ydot, ydot2, (size_t)ny * sizeof(double)) == 0);
        mbk_state_destroy(fresh);
        mbk_state_destroy(s);
        mbk_system_destroy(sys);
    }
}

/* ------------------------------------------------------------------ */
/* Defect 5: NaN and infinity never pass as success                     */
/* ------------------------------------------------------------------ */

/* A custom constraint whose position error is NaN (a bug in its callback). */
static int nan_perr(void *impl, const mbk_constraint_args *a, double *e) { (void)impl, (void)a; e[0] = NAN; return 0; }
static int zero_err(void *impl, const mbk_constraint_args *a, double *e) { (void)impl, (void)a; e[0] = 0; return 0; }
static int no_force(void *impl, const mbk_constraint_args *a, const double *l, mbk_spatial_vec *F, double *t)
{
    (void)impl, (void)a, (void)l, (void)F, (void)t;
    return 0;
}
static const mbk_constraint_ops nan_constraint = {.name = "nan-bug", .mp = 1, .calc_perr = nan_perr,
                                                  .calc_pverr = zero_err, .calc_paerr = zero_err,
                                                  .apply_position_forces = no_force};

static void test_nonfinite_is_an_error(void)
{
    mbk_mass_props mp = mbk_mass_props_from_central(10.0, (mbk_vec3){0, -0.5, 0}, mbk_mat33_diag(0.2, 0.1, 0.2));
    mbk_transform X0 = mbk_transform_identity();
    /* gravity whose forces overflow (10 kg at 1e308 m/s^2), and a spring that overflows */
    for (int which = 0; which < 2; ++which) {
        mbk_system *sys = mbk_multibody_create("overflow");
        mbk_matter *m = mbk_multibody_upd_matter(sys);
        int b = mbk_matter_add_body(m, 0, &X0, &mp, &X0, mbk_mobilizer_pin());
        if (which == 0) mbk_force_add_gravity(mbk_multibody_upd_forces(sys), (mbk_vec3){0, -1e308, 0});
        else mbk_force_add_two_point_linear_spring(mbk_multibody_upd_forces(sys), 0, (mbk_vec3){5, 0, 0}, b,
                                                   (mbk_vec3){0, -1, 0}, 1e308, 0.0);
        mbk_system_realize_topology(sys);
        mbk_state *s = start_state(sys);
        int rc = mbk_system_realize(sys, s, MBK_STAGE_ACCELERATION);
        CHECK_INT(rc, MBK_ENOTFINITE);
        CHECK(strstr(mbk_last_error(), which == 0 ? "gravity" : "spring") != NULL);
        CHECK(mbk_state_get_stage(s) < MBK_STAGE_DYNAMICS);
        mbk_state_destroy(s);
        mbk_system_destroy(sys);
    }
    /* a custom element writing NaN: named */
    faulty f = {F_NAN, 0.0, 0};
    mbk_system *sys = make_pendulum(&f);
    mbk_state *s = start_state(sys);
    CHECK_INT(mbk_system_realize(sys, s, MBK_STAGE_ACCELERATION), MBK_ENOTFINITE);
    CHECK(strstr(mbk_last_error(), "faulty") != NULL);
    mbk_state_destroy(s);
    mbk_system_destroy(sys);

    /* a custom constraint returning NaN: named as a bug, not "start closer" */
    sys = mbk_multibody_create("nan constraint");
    mbk_matter *m = mbk_multibody_upd_matter(sys);
    int b = mbk_matter_add_body(m, 0, &X0, &mp, &X0, mbk_mobilizer_pin());
    mbk_constraint_add_custom(m, &nan_constraint, NULL, &b, 1);
    mbk_system_realize_topology(sys);
    s = start_state(sys);
    CHECK_INT(mbk_system_realize(sys, s, MBK_STAGE_POSITION), MBK_ENOTFINITE);
    CHECK(strstr(mbk_last_error(), "nan-bug") != NULL);
    CHECK(strstr(mbk_last_error(), "closer") == NULL);
    mbk_state_destroy(s);
    mbk_system_destroy(sys);

    /* operators: NaN in M^-1 v, an infinite known udot, NaN yp */
    sys = make_pendulum(NULL);
    s = start_state(sys);
    mbk_system_realize(sys, s, MBK_STAGE_VELOCITY);
    const mbk_matter *cm = mbk_multibody_get_matter(sys);
    double v[2] = {1.0, NAN}, out[2] = {7, 7}, udot[2] = {0, INFINITY};
    CHECK_INT(mbk_matter_multiply_by_M_inverse(cm, s, v, out), MBK_ENOTFINITE);
    CHECK(strstr(mbk_last_error(), "v[1]") != NULL);
    CHECK_INT(mbk_matter_multiply_by_M(cm, s, v, out), MBK_ENOTFINITE);
    CHECK_INT(mbk_matter_calc_residual_force(cm, s, NULL, NULL, udot, out), MBK_ENOTFINITE);
    CHECK(strstr(mbk_last_error(), "known_udot[1]") != NULL);
    double y[4], yp[4] = {0, NAN, 0, 0}, r[4];
    memcpy(y, mbk_state_get_y(s), sizeof y);
    mbk_stage before = mbk_state_get_stage(s);
    CHECK_INT(mbk_system_calc_dae_residual(sys, s, 0.0, y, yp, r), MBK_ENOTFINITE);
    CHECK(strstr(mbk_last_error(), "yp[1]") != NULL);
    CHECK_INT(mbk_state_get_stage(s), before);
    /* a NaN written straight into u is refused at Velocity, naming the speed */
    mbk_state_upd_u(s)[1] = NAN;
    CHECK_INT(mbk_system_realize(sys, s, MBK_STAGE_VELOCITY), MBK_ENOTFINITE);
    CHECK(strstr(mbk_last_error(), "u[1]") != NULL);
    /* ... also right after set_u and set_q scanned what they wrote (realize skips that scan) */
    const double q_ok[2] = {0.1, 0.2}, u_ok[2] = {0.3, 0.4};
    CHECK_INT(mbk_state_set_q(s, q_ok, 2), MBK_OK);
    CHECK_INT(mbk_state_set_u(s, u_ok, 2), MBK_OK);
    mbk_state_upd_q(s)[0] = INFINITY;
    CHECK_INT(mbk_system_realize(sys, s, MBK_STAGE_POSITION), MBK_ENOTFINITE);
    CHECK(strstr(mbk_last_error(), "q[0]") != NULL);
    CHECK_INT(mbk_state_set_q(s, q_ok, 2), MBK_OK);
    mbk_state_upd_subsystem_u(s, mbk_matter_get_subsystem_index(cm))[1] = NAN;
    CHECK_INT(mbk_system_realize(sys, s, MBK_STAGE_VELOCITY), MBK_ENOTFINITE);
    CHECK(strstr(mbk_last_error(), "u[1]") != NULL);
    /* the System's own force sums, written NaN through upd after Dynamics: the residual
       scans them again (it skips the scan only while they are as the forces made them) */
    CHECK_INT(mbk_state_set_u(s, u_ok, 2), MBK_OK);
    CHECK_INT(mbk_system_realize(sys, s, MBK_STAGE_DYNAMICS), MBK_OK);
    double zero[2] = {0, 0};
    CHECK_INT(mbk_matter_calc_residual_force(cm, s, mbk_multibody_get_mobility_forces(sys, s),
                                             mbk_multibody_get_body_forces(sys, s), zero, out), MBK_OK);
    mbk_multibody_upd_body_forces(sys, s)[1].v.z = NAN;
    CHECK_INT(mbk_matter_calc_residual_force(cm, s, mbk_multibody_get_mobility_forces(sys, s),
                                             mbk_multibody_get_body_forces(sys, s), zero, out), MBK_ENOTFINITE);
    CHECK(strstr(mbk_last_error(), "body_forces") != NULL);
    mbk_multibody_upd_mobility_forces(sys, s)[0] = -INFINITY;
    CHECK_INT(mbk_matter_calc_residual_force(cm, s, mbk_multibody_get_mobility_forces(sys, s), NULL, zero, out),
              MBK_ENOTFINITE);
    CHECK(strstr(mbk_last_error(), "mobility_forces[0]") != NULL);
    mbk_state_destroy(s);
    mbk_system_destroy(sys);

    /* quaternions: zero, and NaN through normalize */
    sys = mbk_multibody_create("ball");
    m = mbk_multibody_upd_matter(sys);
    mbk_matter_add_body(m, 0, &X0, &mp, &X0, mbk_mobilizer_ball());
    mbk_system_realize_topology(sys);
    s = start_state(sys);
    double q0[4] = {0, 0, 0, 0};
    mbk_state_set_q(s, q0, 4);
    CHECK_INT(mbk_system_realize(sys, s, MBK_STAGE_POSITION), MBK_EINVAL);
    CHECK(strstr(mbk_last_error(), "quaternion") != NULL);
    CHECK(mbk_matter_normalize_quaternions(mbk_multibody_get_matter(sys), s) < 0);
    mbk_state_upd_q(s)[2] = NAN;
    CHECK_INT(mbk_matter_normalize_quaternions(mbk_multibody_get_matter(sys), s), MBK_ENOTFINITE);
    CHECK(isnan(mbk_state_get_q(s)[2])); /* left as it was, and reported */
    mbk_state_destroy(s);
    mbk_system_destroy(sys);

    /* a coupler naming one coordinate twice */
    sys = mbk_multibody_create("coupler");
    m = mbk_multibody_upd_matter(sys);
    b = mbk_matter_add_body(m, 0, &X0, &mp, &X0, mbk_mobilizer_pin());
    double coef[3] = {1.0, -1.0, 0.0};
    int bodies[2] = {b, b}, qs[2] = {0, 0};
    CHECK_INT(mbk_constraint_add_coordinate_coupler(m, mbk_function_linear(coef, 2), bodies, qs, 2), MBK_EINVAL);
    CHECK(strstr(mbk_last_error(), "twice") != NULL || strstr(mbk_last_error(), "once") != NULL);
    mbk_system_destroy(sys);
}

/* ------------------------------------------------------------------ */
/* Defect 7: a long chain of couplers is consistent                     */
/* ------------------------------------------------------------------ */

/* n pins, each coupled to the one before (q_i = q_{i-1}): 1 dof and n-1 independent,
   consistent equations whose matrix is ill-conditioned. The solve is full rank and must
   not be called inconsistent; returns the acceleration error it leaves (a round-off
   quantity, so main asks that some chain leave more than the old fixed 1e-8). */
static double long_coupler_chain(int n, double L, double I)
{
    double left = 0;
    mbk_system *sys = mbk_multibody_create("mimic chain");
    mbk_matter *m = mbk_multibody_upd_matter(sys);
    mbk_mass_props mp = mbk_mass_props_from_central(1.0, (mbk_vec3){L / 2, 0, 0}, mbk_mat33_diag(I, I, I));
    mbk_transform X0 = mbk_transform_identity(), X1 = mbk_transform_from_p((mbk_vec3){L, 0, 0});
    int prev = 0;
    for (int i = 0; i < n; ++i) prev = mbk_matter_add_body(m, prev, i ? &X1 : &X0, &mp, &X0, mbk_mobilizer_pin());
    for (int i = 2; i <= n; ++i) {
        int bodies[2] = {i, i - 1}, qs[2] = {0, 0};
        double coef[3] = {1.0, -1.0, 0.0};
        mbk_constraint_add_coordinate_coupler(m, mbk_function_linear(coef, 2), bodies, qs, 2);
    }
    mbk_force_add_gravity(mbk_multibody_upd_forces(sys), (mbk_vec3){0, -9.81, 0});
    mbk_system_realize_topology(sys);
    mbk_state *s = start_state(sys);
    double *q = mbk_state_upd_q(s);
    for (int i = 0; i < n; ++i) q[i] = 0.01;
    int rc = mbk_system_realize(sys, s, MBK_STAGE_ACCELERATION);
    if (!CHECK_INT_RET(rc, MBK_OK)) printf("  %d-link coupler chain: %s\n", n, mbk_last_error());
    if (rc == MBK_OK) {
        int rank = -1, mt = -1;
        mbk_matter_get_constraint_rank(mbk_multibody_get_matter(sys), s, &rank, &mt);
        CHECK_INT(rank, n - 1);
        /* what is left over (relative to 1 + |b|)... */
        const double *e = mbk_state_get_udoterr(s);
        for (int i = 0; i < mt; ++i) left = fmax(left, fabs(e[i]));
        /* ...yet every coordinate accelerates alike to a few parts in 10^5 of udot */
        const double *ud = mbk_state_get_udot(s);
        double spread = 0;
        for (int i = 1; i < n; ++i) spread = fmax(spread, fabs(ud[i] - ud[0]));
        if (!CHECK(spread <= 1e-4 * fabs(ud[0]))) printf("  spread %g, udot %g\n", spread, ud[0]);
    }
    mbk_state_destroy(s);
    mbk_system_destroy(sys);
    return left;
}

/* Chains of 300 and 400 links, 5 and 7 cm long: each is solved, and at least one leaves
   more than a fixed 1e-8 would have allowed (which one depends on the build's rounding:
   fused multiply-adds or not). */
static void test_long_coupler_chains(void)
{
    double most = 0;
    for (int n = 300; n <= 400; n += 100)
        for (int k = 0; k < 2; ++k) most = fmax(most, long_coupler_chain(n, 0.05 + 0.02 * k, 1.0));
    if (!CHECK(most > 1e-8)) printf("  largest left-over %g\n", most);
}

/* Conflicting equations are still refused: two prescribed accelerations of one pin. */
static int prescribe_aerr(void *impl, const mbk_constraint_args *a, double *e)
{
    *e = mbk_constraint_get_udot(a, 0) - *(const double *)impl;
    return 0;
}
static int prescribe_force(void *impl, const mbk_constraint_args *a, const double *l, mbk_spatial_vec *F, double *t)
{
    (void)impl, (void)a, (void)F;
    t[0] += l[0];
    return 0;
}
static const mbk_constraint_ops prescribe_ops = {.name = "prescribed udot", .ma = 1, .calc_aerr = prescribe_aerr,
                                                 .apply_acceleration_forces = prescribe_force};

static void test_conflicting_constraints_refused(void)
{
    static const double a1 = 1.0, a2 = 2.0;
    mbk_system *sys = make_pendulum(NULL);
    mbk_system_invalidate_topology(sys);
    mbk_matter *m = mbk_multibody_upd_matter(sys);
    int body = 1, coord = 0;
    mbk_constraint_add_custom_with_mobilities(m, &prescribe_ops, (void *)&a1, NULL, 0, &body, &coord, 1);
    mbk_constraint_add_custom_with_mobilities(m, &prescribe_ops, (void *)&a2, NULL, 0, &body, &coord, 1);
    mbk_system_realize_topology(sys);
    mbk_state *s = start_state(sys);
    CHECK_INT(mbk_system_realize(sys, s, MBK_STAGE_ACCELERATION), MBK_ESINGULAR);
    CHECK(strstr(mbk_last_error(), "inconsistent") != NULL);
    mbk_state_destroy(s);
    mbk_system_destroy(sys);
}

int main(void)
{
    test_one_shot_fault_is_reported();
    test_failed_handler_event_not_lost();
    test_failed_calls_leave_state();
    test_nonfinite_is_an_error();
    test_long_coupler_chains();
    test_conflicting_constraints_refused();
    return mbk_test_finish();
}
