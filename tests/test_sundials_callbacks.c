/* What CVODE and IDA are told when a callback fails (docs/integrators.md
 * section 5): a force element of a double pendulum fails once, at its first
 * evaluation after t = 1, with a given status. MBK_ERETRY, MBK_ENOTFINITE,
 * MBK_ESINGULAR and MBK_ECONVERGE are recoverable: CVODE BDF, CVODE Adams and
 * IDA cut the step, go on to t = 2, count the failure, and end where an
 * undisturbed run ends (within the tolerance). Every other status (here
 * MBK_EUSER, MBK_EINVAL, MBK_ENOMEM) is fatal: step_to returns that status
 * with the element's message, and the State is the last good one, before
 * the fault; for Adams too, whose fixed-point iteration would otherwise take
 * the -1 for one more failed iteration and go on. */
#include <math.h>
#include <string.h>

#include "mbk/mbk.h"
#include "integrator_table.h"
#include "mbk_test.h"
#include "test_util.h"

typedef struct fault {
    int status; /* MBK_OK: never fails */
    double t_fault;
    int fired; /* times it failed (test-only memory) */
} fault;

static int faulty_force(void *impl, const mbk_force_ctx *c, const mbk_state *s, mbk_spatial_vec *F, double *tau)
{
    (void)c, (void)F;
    fault *f = impl;
    tau[0] += -0.1 * mbk_state_get_u(s)[0];
    if (f->status == MBK_OK || mbk_state_get_time(s) < f->t_fault || f->fired) return 0;
    f->fired++;
    return mbk_set_error(f->status, "injected %s at t = %.17g", mbk_status_name(f->status), mbk_state_get_time(s));
}

static const mbk_force_ops faulty_ops = {.name = "faulty", .calc_force = faulty_force};

/* The 2-link pendulum with the faulty element. */
static mbk_system *make_pendulum(fault *f) { return test_pendulum2(&faulty_ops, f); }

typedef struct outcome {
    int rc;
    double t, y[4];
    long failures; /* realization_failures: recoverable failures, step retried */
    char msg[512];
} outcome;

static outcome run(which w, int status)
{
    outcome o;
    memset(&o, 0, sizeof o);
    fault f = {status, 1.0, 0};
    mbk_system *sys = make_pendulum(&f);
    mbk_state *s = mbk_state_create();
    mbk_state_init(s, sys);
    mbk_system_realize(sys, s, MBK_STAGE_MODEL);
    const double q[2] = {0.6, -0.3};
    mbk_state_set_q(s, q, 2);
    mbk_integrator *ig = make(w, sys);
    mbk_integrator_set_accuracy(ig, 1e-8);
    CHECK_INT(mbk_integrator_initialize(ig, s), MBK_OK);
    o.rc = mbk_integrator_step_to(ig, 2.0);
    snprintf(o.msg, sizeof o.msg, "%s", mbk_last_error());
    const mbk_state *r = mbk_integrator_get_state(ig);
    o.t = mbk_state_get_time(r);
    memcpy(o.y, mbk_state_get_y(r), sizeof o.y);
    mbk_integrator_stats st;
    mbk_integrator_get_stats(ig, &st);
    o.failures = st.realization_failures;
    if (status != MBK_OK) CHECK_INT(f.fired, 1);
    mbk_integrator_destroy(ig);
    mbk_state_destroy(s);
    mbk_system_destroy(sys);
    return o;
}

int main(void)
{
    const which kinds[3] = {I_BDF, I_ADAMS, I_IDA};
    const int recoverable[4] = {MBK_ERETRY, MBK_ENOTFINITE, MBK_ESINGULAR, MBK_ECONVERGE};
    const int fatal[3] = {MBK_EUSER, MBK_EINVAL, MBK_ENOMEM};
    for (int c = 0; c < 3; ++c) {
        which w = kinds[c];
        outcome ref = run(w, MBK_OK);
        CHECK_INT(ref.rc, MBK_OK);
        for (int k = 0; k < 4; ++k) {
            outcome o = run(w, recoverable[k]);
            double d = 0;
            for (int i = 0; i < 4; ++i) d = fmax(d, fabs(o.y[i] - ref.y[i]));
            printf("  %-12s %-15s recovered: %s, at t = %g, %ld counted in realization_failures, |y - y_undisturbed| = %.1e\n",
                   names[w], mbk_status_name(recoverable[k]), o.rc == MBK_OK ? "yes" : "NO", o.t, o.failures, d);
            if (o.rc != MBK_OK) fprintf(stderr, "    %s\n", o.msg);
            CHECK_INT(o.rc, MBK_OK);
            CHECK(o.t == 2.0);
            CHECK(o.failures >= 1);
            CHECK(d < 1e-5);
        }
        for (int k = 0; k < 3; ++k) {
            outcome o = run(w, fatal[k]);
            printf("  %-12s %-15s fatal: step_to returned %s at t = %g\n", names[w], mbk_status_name(fatal[k]),
                   mbk_status_name(o.rc), o.t);
            CHECK_INT(o.rc, fatal[k]);
            CHECK(strstr(o.msg, "injected") != NULL);
            CHECK(o.t <= 1.0);
        }
    }
    return mbk_test_finish();
}
