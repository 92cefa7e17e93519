/* A System with no continuous variables (everything welded) still integrates
 * with every integrator of the library, the RK family, CVODE (BDF, Adams) and
 * IDA alike: time reaches t_report, scheduled events are handled at their
 * exact times, an event whose witness depends on t only is located (to the
 * event tolerance or better) and handled, periodic reporters run at k times
 * their interval, and stepping allocates nothing. */
#include <mbk/mbk.h>
#include <string.h>

#include "mbk_test.h"
#include "integrator_table.h"

enum { MAX_SEEN = 16 };

/* Times at which the handlers and the reporter were called. */
typedef struct seen {
    int n;
    double t[MAX_SEEN];
} seen;

static seen scheduled, triggered, reported;

static void note(seen *w, const mbk_state *s)
{
    if (w->n < MAX_SEEN) w->t[w->n] = mbk_state_get_time(s);
    w->n++;
}

static int on_scheduled(void *user, const mbk_system *sys, mbk_state *s, mbk_event_result *r)
{
    (void)user, (void)sys, (void)r; /* changes nothing: r stays {Infinity, false} */
    note(&scheduled, s);
    return 0;
}

static const double T_CROSS = 0.55; /* the triggered event's witness t^2 - T_CROSS^2 rises there */

static double witness(void *user, const mbk_system *sys, const mbk_state *s)
{
    (void)user, (void)sys;
    double t = mbk_state_get_time(s);
    return t * t - T_CROSS * T_CROSS;
}

static int on_triggered(void *user, const mbk_system *sys, mbk_state *s, mbk_event_result *r)
{
    (void)user, (void)sys;
    note(&triggered, s);
    r->lowest_modified = MBK_STAGE_DYNAMICS; /* as a handler that changed a parameter: a restart */
    return 0;
}

static void count(void *user, const mbk_system *sys, const mbk_state *s)
{
    (void)user, (void)sys;
    note(&reported, s);
}

int main(void)
{
    const double event_tol = 1e-9;
    for (int k = 0; k < I_COUNT; ++k) {
        which w = (which)k;
        mbk_system *sys = mbk_multibody_create("welded");
        mbk_matter *m = mbk_multibody_upd_matter(sys);
        mbk_mass_props mp = mbk_mass_props_from_central(1, mbk_vec3_zero(), mbk_mat33_diag(1, 1, 1));
        mbk_transform I = mbk_transform_identity();
        mbk_matter_add_body(m, 0, &I, &mp, &I, mbk_mobilizer_weld());
        mbk_force_add_gravity(mbk_multibody_upd_forces(sys), mbk_vec3_make(0, 0, -9.81));
        memset(&scheduled, 0, sizeof scheduled);
        memset(&triggered, 0, sizeof triggered);
        memset(&reported, 0, sizeof reported);
        mbk_system_add_periodic_reporter(sys, 0.25, count, NULL);
        mbk_system_add_scheduled_event(sys, 0.3, on_scheduled, NULL);
        mbk_system_add_scheduled_event(sys, 0.7, on_scheduled, NULL);
        mbk_system_add_event_handler(sys, MBK_STAGE_TIME, MBK_RISING, witness, on_triggered, NULL);
        CHECK_INT(mbk_system_realize_topology(sys), MBK_OK);
        mbk_state *s = mbk_state_create();
        mbk_state_init(s, sys);
        mbk_system_realize(sys, s, MBK_STAGE_INSTANCE);
        CHECK_INT(mbk_state_get_ny(s), 0);
        mbk_integrator *ig = make(w, sys);
        if (!CHECK(ig != NULL)) continue;
        if (w == I_RK4) mbk_integrator_set_fixed_step(ig, 0.01);
        mbk_integrator_set_event_tolerance(ig, event_tol);
        int rc = mbk_integrator_initialize(ig, s);
        if (!CHECK(rc == MBK_OK)) fprintf(stderr, "    %s: %s\n", names[w], mbk_last_error());

        long before = mbk_get_allocation_count();
        int events = 0;
        while ((rc = mbk_integrator_step_to(ig, 1.0)) == MBK_EVENT) events++;
        long allocations = mbk_get_allocation_count() - before;
        if (!CHECK(rc == MBK_OK)) fprintf(stderr, "    %s: %s\n", names[w], mbk_last_error());
        CHECK_NEAR(mbk_state_get_time(mbk_integrator_get_state(ig)), 1.0, 1e-12);
        CHECK(reported.n >= 4);
        /* the driver stops at scheduled events and reporter times exactly */
        CHECK_INT(scheduled.n, 2);
        CHECK(scheduled.n == 2 && scheduled.t[0] == 0.3 && scheduled.t[1] == 0.7);
        CHECK_INT(reported.n, 4);
        for (int i = 0; i < reported.n && i < MAX_SEEN; ++i) CHECK(reported.t[i] == 0.25 * (i + 1));
        /* the witness rises once; the handler runs just past it: within the event
           tolerance (RK family), to about 100 ulps (CVODE and IDA, as their root finding) */
        CHECK_INT(triggered.n, 1);
        double late = triggered.n ? triggered.t[0] - T_CROSS : -1;
        double within = w == I_BDF || w == I_ADAMS || w == I_IDA ? 1e-13 : event_tol;
        if (!CHECK(late >= -1e-15 && late <= within))
            fprintf(stderr, "    %s: triggered event handled %.3g s after the crossing\n", names[w], late);
        CHECK_INT(events, 3);
        mbk_integrator_stats st;
        mbk_integrator_get_stats(ig, &st);
        CHECK_INT(st.events_handled, 3);
        CHECK_INT(st.reports, 4);
        CHECK_INT(allocations, 0);
        printf("%-20s t = %g: %ld steps, scheduled at %g and %g, triggered %.2g s after the crossing, "
               "%d reports, %ld allocations\n", names[w], mbk_integrator_get_time(ig), st.steps_taken,
               scheduled.t[0], scheduled.t[1], late, reported.n, allocations);
        mbk_integrator_destroy(ig);
        mbk_state_destroy(s);
        mbk_system_destroy(sys);
    }
    return mbk_test_finish();
}
