/* Events with every integrator: a bouncing ball (triggered event, falling
 * witness, handler reversing u with restitution) against the analytic
 * bounce times; scheduled events hit exactly (also at t_report);
 * periodic-reporter call counts and times; termination; direction filters
 * against the analytic zero crossings of a damped oscillator; events
 * defined by a custom subsystem through its ops; handlers changing
 * Velocity-, Dynamics-, Instance- and Model-stage variables mid-run;
 * failing handlers; no allocation while handling Velocity-stage events. */
#include "mbk/mbk.h"
#include "integrator_table.h"
#include "mbk_test.h"
#include "test_models.h"

#include <math.h>
#include <string.h>

static const double PI = 3.14159265358979323846;
static const double G = 9.81, REST = 0.8, H0 = 1.0;

static bool first_order(which w) { return w == I_EULER || w == I_SEMI; }

/* Settings per integrator for the event tests: high-order ones tight, Euler ones as they can. */
static void configure(mbk_integrator *ig, which w)
{
    if (w == I_RK4) mbk_integrator_set_fixed_step(ig, 0.01);
    if (first_order(w)) mbk_integrator_set_accuracy(ig, 1e-7);
    else mbk_integrator_set_accuracy(ig, 1e-8);
    mbk_integrator_set_event_tolerance(ig, 1e-7);
}

static mbk_state *default_state(const mbk_system *sys)
{
    mbk_state *s = mbk_state_create();
    mbk_state_init(s, sys);
    mbk_system_realize(sys, s, MBK_STAGE_INSTANCE);
    return s;
}

/* ------------------------------------------------------------------ */
/* Bouncing ball: a Slider body falling along Ground's -x               */
/* ------------------------------------------------------------------ */

typedef struct bounces {
    double t[64];
    int n;
    double restitution;
} bounces;

static int bounce(void *user, const mbk_system *sys, mbk_state *s, mbk_event_result *r)
{
    (void)sys;
    bounces *b = user;
    if (b->n < 64) b->t[b->n++] = mbk_state_get_time(s);
    double *u = mbk_state_upd_u(s);
    u[0] = -b->restitution * u[0];
    r->lowest_modified = MBK_STAGE_VELOCITY;
    return 0;
}

static mbk_system *make_ball(bounces *b)
{
    mbk_system *sys = mbk_multibody_create("ball");
    slider_ball_add(sys, G);
    b->n = 0;
    b->restitution = REST;
    mbk_system_add_event_handler(sys, MBK_STAGE_POSITION, MBK_FALLING, q0_witness, bounce, b);
    mbk_system_realize_topology(sys);
    return sys;
}

/* Analytic bounce times for a drop from H0 at rest. */
static double bounce_time(int k) { return drop_bounce_time(H0, G, REST, k); }

static bool available(which w)
{
    mbk_system *sys = mbk_system_create("probe");
    mbk_integrator *ig = make(w, sys);
    bool ok = ig != NULL;
    mbk_integrator_destroy(ig);
    mbk_system_destroy(sys);
    return ok;
}

static void test_bouncing_ball(void)
{
    for (int w = 0; w < I_COUNT; ++w) {
        if (!available((which)w)) continue;
        bounces b;
        mbk_system *sys = make_ball(&b);
        mbk_state *s = default_state(sys);
        mbk_state_upd_q(s)[0] = H0;
        mbk_integrator *ig = make((which)w, sys);
        configure(ig, (which)w);
        CHECK_INT(mbk_integrator_initialize(ig, s), MBK_OK);
        int rc, nevent = 0;
        double T = bounce_time(5) + 0.01;
        long allocs = 0;
        while ((rc = mbk_integrator_step_to(ig, T)) == MBK_EVENT) {
            if (++nevent == 1) allocs = mbk_get_allocation_count();
            /* stopped at the bounce: the State is just past contact with u reversed */
            const mbk_state *r = mbk_integrator_get_state(ig);
            CHECK(mbk_state_get_time(r) == b.t[b.n - 1]);
            CHECK(mbk_state_get_u(r)[0] > 0);
            CHECK(mbk_state_get_q(r)[0] <= 0 && mbk_state_get_q(r)[0] > -1e-5);
        }
        if (rc != MBK_OK) fprintf(stderr, "%s: %s\n", names[w], mbk_last_error());
        CHECK_INT(rc, MBK_OK);
        CHECK_INT(b.n, 6);
        CHECK_INT(nevent, 6);
        CHECK_INT(mbk_get_allocation_count() - allocs, 0); /* handling events allocates nothing */
        double emax = 0;
        for (int k = 0; k < b.n && k < 6; ++k) emax = fmax(emax, fabs(b.t[k] - bounce_time(k)));
        mbk_integrator_stats st;
        mbk_integrator_get_stats(ig, &st);
        printf("  %-20s 6 bounces, max |t - t_exact| = %.2e s (event tolerance 1e-7); %ld steps, %ld "
               "witness evaluations, %ld events\n", names[w], emax, st.steps_taken,
               st.witness_evaluations, st.events_handled);
        /* high-order methods: the event tolerance (accumulated over six bounces); Euler
           methods: their own integration error dominates */
        CHECK(emax < (first_order((which)w) ? 1e-2 : 1e-6));
        CHECK_INT(st.events_handled, 6);
        CHECK(st.reinitializations >= 6);
        mbk_integrator_destroy(ig);
        mbk_state_destroy(s);
        mbk_system_destroy(sys);
    }
}

/* ------------------------------------------------------------------ */
/* Oscillator subsystem (x'' = -k x - c x'), with optional own events   */
/* ------------------------------------------------------------------ */

typedef struct osc {
    double k, c;
    bool own_events;  /* witness x at Position, scheduled events every 0.5 s */
    int count_var;    /* discrete: scheduled events handled (Report stage) */
    int kicks_var;    /* discrete: falling crossings handled (Report stage) */
} osc;

static int osc_topology(void *impl, const mbk_subsystem_ctx *c, mbk_state *s)
{
    osc *o = impl;
    int k = mbk_subsystem_ctx_get_index(c);
    const double x0 = 1.0, v0 = 0.0;
    const int zero = 0;
    if (mbk_state_allocate_q(s, k, 1, &x0) < 0 || mbk_state_allocate_u(s, k, 1, &v0) < 0) return -1;
    o->count_var = mbk_state_allocate_discrete(s, k, MBK_STAGE_REPORT, &mbk_value_int, &zero);
    o->kicks_var = mbk_state_allocate_discrete(s, k, MBK_STAGE_REPORT, &mbk_value_int, &zero);
    return o->count_var < 0 || o->kicks_var < 0 ? -1 : 0;
}

static int osc_instance(void *impl, const mbk_subsystem_ctx *c, mbk_state *s)
{
    const osc *o = impl;
    if (!o->own_events) return 0;
    return mbk_state_allocate_event_triggers(s, mbk_subsystem_ctx_get_index(c), MBK_STAGE_POSITION, 1) < 0 ? -1 : 0;
}

static int osc_position(void *impl, const mbk_subsystem_ctx *c, mbk_state *s)
{
    const osc *o = impl;
    int k = mbk_subsystem_ctx_get_index(c);
    if (o->own_events) mbk_state_upd_event_triggers(s, k, MBK_STAGE_POSITION)[0] = mbk_state_get_subsystem_q(s, k)[0];
    return 0;
}

static int osc_velocity(void *impl, const mbk_subsystem_ctx *c, mbk_state *s)
{
    (void)impl;
    int k = mbk_subsystem_ctx_get_index(c);
    mbk_state_upd_subsystem_qdot(s, k)[0] = mbk_state_get_subsystem_u(s, k)[0];
    return 0;
}

static int osc_acceleration(void *impl, const mbk_subsystem_ctx *c, mbk_state *s)
{
    const osc *o = impl;
    int k = mbk_subsystem_ctx_get_index(c);
    double a = -o->k * mbk_state_get_subsystem_q(s, k)[0] - o->c * mbk_state_get_subsystem_u(s, k)[0];
    mbk_state_upd_subsystem_udot(s, k)[0] = a;
    mbk_state_upd_subsystem_qdotdot(s, k)[0] = a;
    return 0;
}

/* Own events: id 0 is the witness (x falling through zero), id 1 the scheduled event. */
static int osc_handle(void *impl, const mbk_subsystem_ctx *c, mbk_state *s, const int *ids, int n,
                      mbk_event_result *r)
{
    const osc *o = impl;
    int k = mbk_subsystem_ctx_get_index(c);
    for (int i = 0; i < n; ++i) {
        int var = ids[i] == 0 ? o->kicks_var : ids[i] == 1 ? o->count_var : -1;
        if (var < 0) return mbk_set_error(MBK_EINVAL, "oscillator: unknown event id %d", ids[i]);
        int *cnt = mbk_state_upd_discrete(s, k, var);
        ++*cnt;
        if (r->lowest_modified > MBK_STAGE_REPORT) r->lowest_modified = MBK_STAGE_REPORT;
    }
    return 0;
}

static int osc_next(void *impl, const mbk_subsystem_ctx *c, const mbk_state *s, double *t_next,
                    int *ids, int *n)
{
    (void)c;
    const osc *o = impl;
    if (!o->own_events) return 0;
    double t = mbk_state_get_time(s), tn = 0.5 * (floor(t / 0.5) + 1);
    if (tn <= t) tn += 0.5;
    if (*n < 1) {
        *n = 1;
        return 0;
    }
    *t_next = tn;
    ids[0] = 1;
    *n = 1;
    return 0;
}

static void osc_destroy(void *impl) { mbk_free(impl); }

static const mbk_subsystem_ops osc_ops = {.name = "oscillator",
                                          .realize_topology = osc_topology,
                                          .realize_instance = osc_instance,
                                          .realize_position = osc_position,
                                          .realize_velocity = osc_velocity,
                                          .realize_acceleration = osc_acceleration,
                                          .handle_events = osc_handle,
                                          .next_scheduled_event = osc_next,
                                          .destroy = osc_destroy};

static const double OK = 10.0, OC = 0.3;

static mbk_system *make_osc(bool own_events, int *index)
{
    mbk_system *sys = mbk_system_create("oscillator");
    osc *o = mbk_calloc(1, sizeof *o);
    o->k = OK;
    o->c = OC;
    o->own_events = own_events;
    int k = mbk_system_add_subsystem(sys, &osc_ops, o);
    if (index) *index = k;
    return sys;
}

/* Exact damped oscillator from (x0, v0) after time t. */
static void osc_exact(double x0, double v0, double t, double *x, double *v)
{
    double w = sqrt(OK), zeta = OC / (2.0 * w), wd = w * sqrt(1.0 - zeta * zeta);
    double a = x0, b = (v0 + zeta * w * x0) / wd, e = exp(-zeta * w * t);
    *x = e * (a * cos(wd * t) + b * sin(wd * t));
    *v = -zeta * w * *x + e * (-a * wd * sin(wd * t) + b * wd * cos(wd * t));
}

/* k-th zero crossing time of x(t) from x0 = 1, v0 = 0 (k = 0 falling, then alternating). */
static double osc_zero(int k)
{
    double w = sqrt(OK), zeta = OC / (2.0 * w), wd = w * sqrt(1.0 - zeta * zeta);
    double b = zeta * w / wd;
    return (PI - atan(1.0 / b) + k * PI) / wd;
}

/* ------------------------------------------------------------------ */
/* Scheduled events, reporters, termination                             */
/* ------------------------------------------------------------------ */

typedef struct log {
    double t[64];
    int n;
    double kick;
    bool terminate_now;
} log_t;

static int sched_handler(void *user, const mbk_system *sys, mbk_state *s, mbk_event_result *r)
{
    (void)sys;
    log_t *l = user;
    if (l->n < 64) l->t[l->n++] = mbk_state_get_time(s);
    if (l->kick != 0) {
        mbk_state_upd_u(s)[0] += l->kick;
        r->lowest_modified = MBK_STAGE_VELOCITY;
    }
    if (l->terminate_now) r->terminate = true;
    return 0;
}

static void reporter(void *user, const mbk_system *sys, const mbk_state *s)
{
    (void)sys;
    log_t *l = user;
    if (l->n < 64) l->t[l->n++] = mbk_state_get_time(s);
}

static void test_scheduled_and_reporters(void)
{
    for (int w = 0; w < I_COUNT; ++w) {
        if (!available((which)w)) continue;
        log_t a = {.kick = 0}, b = {.kick = 1.0}, p1 = {0}, p2 = {0}, at_end = {0};
        mbk_system *sys = make_osc(false, NULL);
        mbk_system_add_scheduled_event(sys, 0.3, sched_handler, &a);
        mbk_system_add_scheduled_event(sys, 0.7, sched_handler, &b); /* kick */
        mbk_system_add_scheduled_event(sys, 0.7, sched_handler, &a); /* simultaneous */
        mbk_system_add_scheduled_event(sys, 2.0, sched_handler, &at_end); /* at t_report */
        mbk_system_add_scheduled_event(sys, 0.0, sched_handler, &at_end); /* at the start: never */
        mbk_system_add_periodic_reporter(sys, 0.1, reporter, &p1);
        mbk_system_add_periodic_reporter(sys, 0.25, reporter, &p2);
        mbk_system_realize_topology(sys);
        mbk_state *s = default_state(sys);
        mbk_integrator *ig = make((which)w, sys);
        configure(ig, (which)w);
        CHECK_INT(mbk_integrator_initialize(ig, s), MBK_OK);
        CHECK_INT(mbk_integrator_step_to(ig, 2.0), MBK_EVENT);
        CHECK(mbk_integrator_get_time(ig) == 0.3);
        CHECK_INT(mbk_integrator_step_to(ig, 2.0), MBK_EVENT);
        CHECK(mbk_integrator_get_time(ig) == 0.7);
        int rc = mbk_integrator_step_to(ig, 2.0); /* the event at 2.0 runs before returning */
        if (rc != MBK_OK) fprintf(stderr, "%s: %s\n", names[w], mbk_last_error());
        CHECK_INT(rc, MBK_OK);
        CHECK_INT(a.n, 2);
        CHECK(a.t[0] == 0.3 && a.t[1] == 0.7);
        CHECK_INT(b.n, 1);
        CHECK(b.t[0] == 0.7);
        CHECK_INT(at_end.n, 1);
        CHECK(at_end.t[0] == 2.0);
        CHECK_INT(p1.n, 20);
        CHECK_INT(p2.n, 8);
        bool exact = true;
        for (int i = 0; i < p1.n; ++i) exact = exact && p1.t[i] == (i + 1) * 0.1;
        for (int i = 0; i < p2.n; ++i) exact = exact && p2.t[i] == (i + 1) * 0.25;
        CHECK(exact);
        mbk_integrator_stats st;
        mbk_integrator_get_stats(ig, &st);
        CHECK_INT(st.events_handled, 4);
        CHECK_INT(st.reports, 28);
        /* the kick at 0.7 was integrated from the right State */
        double x, v, x2, v2;
        osc_exact(1.0, 0.0, 0.7, &x, &v);
        osc_exact(x, v + 1.0, 1.3, &x2, &v2);
        const mbk_state *r = mbk_integrator_get_state(ig);
        double err = fabs(mbk_state_get_q(r)[0] - x2) + fabs(mbk_state_get_u(r)[0] - v2);
        printf("  %-20s scheduled at 0.3, 0.7 (x2), 2.0: exact times; 28 reports; after the kick "
               "error %.2e\n", names[w], err);
        CHECK(err < (first_order((which)w) ? 1e-2 : 1e-5));
        mbk_integrator_destroy(ig);
        mbk_state_destroy(s);
        mbk_system_destroy(sys);
    }
}

static void test_termination(void)
{
    for (int w = 0; w < I_COUNT; ++w) {
        if (!available((which)w)) continue;
        log_t a = {.terminate_now = true};
        bounces b;
        mbk_system *sys = make_ball(&b);
        mbk_system_add_scheduled_event(sys, 0.25, sched_handler, &a);
        mbk_system_realize_topology(sys);
        mbk_state *s = default_state(sys);
        mbk_state_upd_q(s)[0] = H0;
        mbk_integrator *ig = make((which)w, sys);
        configure(ig, (which)w);
        CHECK_INT(mbk_integrator_initialize(ig, s), MBK_OK);
        CHECK_INT(mbk_integrator_step_to(ig, 1.0), MBK_TERMINATED);
        CHECK(mbk_integrator_get_time(ig) == 0.25);
        CHECK_INT(mbk_integrator_step_to(ig, 1.0), MBK_TERMINATED);
        CHECK(strstr(mbk_last_error(), "terminated") != NULL);
        CHECK(mbk_integrator_get_time(ig) == 0.25);
        /* integrate() stops there too, and restarts after initialize */
        CHECK_INT(mbk_integrator_initialize(ig, s), MBK_OK);
        CHECK_INT(mbk_integrator_integrate(ig, 1.0, NULL, NULL), MBK_TERMINATED);
        CHECK(mbk_integrator_get_time(ig) == 0.25);
        mbk_integrator_destroy(ig);
        mbk_state_destroy(s);
        mbk_system_destroy(sys);
    }
}

/* ------------------------------------------------------------------ */
/* Direction filter                                                     */
/* ------------------------------------------------------------------ */

static int record(void *user, const mbk_system *sys, mbk_state *s, mbk_event_result *r)
{
    (void)sys;
    (void)r;
    log_t *l = user;
    if (l->n < 64) l->t[l->n++] = mbk_state_get_time(s);
    return 0;
}

static void test_directions(void)
{
    for (int w = 0; w < I_COUNT; ++w) {
        if (!available((which)w)) continue;
        log_t up = {0}, down = {0}, any = {0}, rep = {0};
        mbk_system *sys = make_osc(false, NULL);
        mbk_system_add_event_handler(sys, MBK_STAGE_POSITION, MBK_RISING, q0_witness, record, &up);
        mbk_system_add_event_handler(sys, MBK_STAGE_POSITION, MBK_FALLING, q0_witness, record, &down);
        mbk_system_add_event_handler(sys, MBK_STAGE_ACCELERATION, MBK_ANY, q0_witness, record, &any);
        mbk_system_add_event_reporter(sys, MBK_STAGE_POSITION, MBK_ANY, q0_witness, reporter, &rep);
        mbk_system_realize_topology(sys);
        mbk_state *s = default_state(sys);
        mbk_integrator *ig = make((which)w, sys);
        configure(ig, (which)w);
        CHECK_INT(mbk_integrator_initialize(ig, s), MBK_OK);
        CHECK_INT(mbk_integrator_integrate(ig, 4.0, NULL, NULL), MBK_OK);
        int nz = 0;
        while (osc_zero(nz) < 4.0) ++nz;
        CHECK_INT(up.n, nz / 2);
        CHECK_INT(down.n, (nz + 1) / 2);
        CHECK_INT(any.n, nz);
        CHECK_INT(rep.n, nz);
        double emax = 0;
        for (int i = 0; i < down.n; ++i) emax = fmax(emax, fabs(down.t[i] - osc_zero(2 * i)));
        for (int i = 0; i < up.n; ++i) emax = fmax(emax, fabs(up.t[i] - osc_zero(2 * i + 1)));
        for (int i = 0; i < any.n && i < rep.n; ++i) CHECK(any.t[i] == rep.t[i]);
        mbk_integrator_stats st;
        mbk_integrator_get_stats(ig, &st);
        printf("  %-20s %d crossings (%d rising, %d falling): max time error %.2e; %ld events, %ld "
               "reports\n", names[w], any.n, up.n, down.n, emax, st.events_handled, st.reports);
        CHECK(emax < (first_order((which)w) ? 1e-3 : 1e-6));
        CHECK_INT(st.events_handled, 2 * nz); /* reporters are not events */
        CHECK_INT(st.reports, nz);
        mbk_integrator_destroy(ig);
        mbk_state_destroy(s);
        mbk_system_destroy(sys);
    }
}

/* ------------------------------------------------------------------ */
/* A subsystem's own events                                             */
/* ------------------------------------------------------------------ */

static void test_subsystem_events(void)
{
    for (int w = 0; w < I_COUNT; ++w) {
        if (!available((which)w)) continue;
        int k;
        mbk_system *sys = make_osc(true, &k);
        CHECK_INT(mbk_system_set_witness_direction(sys, k, 0, MBK_FALLING), MBK_OK);
        log_t all = {0};
        mbk_system_add_event_handler(sys, MBK_STAGE_POSITION, MBK_FALLING, q0_witness, record, &all);
        mbk_system_realize_topology(sys);
        CHECK(mbk_system_get_witness_direction(sys, k, 0) == MBK_FALLING);
        CHECK(mbk_system_get_witness_direction(sys, mbk_system_get_events_subsystem(sys), 0) == MBK_FALLING);
        mbk_state *s = default_state(sys);
        mbk_integrator *ig = make((which)w, sys);
        configure(ig, (which)w);
        CHECK_INT(mbk_integrator_initialize(ig, s), MBK_OK);
        int rc, stops = 0;
        while ((rc = mbk_integrator_step_to(ig, 4.0)) == MBK_EVENT) ++stops;
        CHECK_INT(rc, MBK_OK);
        const mbk_state *r = mbk_integrator_get_state(ig);
        int nz = 0;
        while (osc_zero(nz) < 4.0) ++nz;
        int kicks = *(const int *)mbk_state_get_discrete(r, k, 1);
        int count = *(const int *)mbk_state_get_discrete(r, k, 0);
        CHECK_INT(kicks, (nz + 1) / 2);
        CHECK_INT(all.n, (nz + 1) / 2);
        CHECK_INT(count, 8); /* 0.5, 1.0, ..., 4.0 (4.0 is t_report: handled before returning) */
        CHECK_INT(stops, (nz + 1) / 2 + 7);
        printf("  %-20s subsystem events: %d falling crossings, %d scheduled, %d stops\n", names[w],
               kicks, count, stops);
        mbk_integrator_destroy(ig);
        mbk_state_destroy(s);
        mbk_system_destroy(sys);
    }
}

/* ------------------------------------------------------------------ */
/* Handlers changing Dynamics-, Instance- and Model-stage variables      */
/* ------------------------------------------------------------------ */

typedef struct spring_ctl {
    const mbk_system *sys;
    int spring;
    int action; /* 0 disable (Instance), 1 stiffen x4 (Dynamics) */
} spring_ctl;

static int spring_handler(void *user, const mbk_system *sys, mbk_state *s, mbk_event_result *r)
{
    spring_ctl *c = user;
    const mbk_forces *f = mbk_multibody_get_forces(sys);
    if (c->action == 0) {
        int rc = mbk_force_set_enabled(f, s, c->spring, false);
        if (rc < 0) return rc;
        r->lowest_modified = MBK_STAGE_INSTANCE;
    } else {
        double p[2];
        mbk_force_get_parameters(f, s, c->spring, p, 2);
        p[0] *= 4.0;
        int rc = mbk_force_set_parameters(f, s, c->spring, p, 2);
        if (rc < 0) return rc;
        r->lowest_modified = MBK_STAGE_DYNAMICS;
    }
    return 0;
}

static void test_stage_changes(void)
{
    for (int w = 0; w < I_COUNT; ++w) {
        if (!available((which)w)) continue;
        for (int action = 0; action < 2; ++action) {
            mbk_system *sys = mbk_multibody_create("spring");
            mbk_matter *m = mbk_multibody_upd_matter(sys);
            mbk_mass_props mp = mbk_mass_props_from_central(1.0, mbk_vec3_zero(), mbk_mat33_diag(0.1, 0.1, 0.1));
            mbk_transform X = mbk_transform_identity();
            int body = mbk_matter_add_body(m, 0, &X, &mp, &X, mbk_mobilizer_slider());
            spring_ctl ctl = {sys, 0, action};
            ctl.spring = mbk_force_add_mobility_linear_spring(mbk_multibody_upd_forces(sys), body, 0, 4.0, 0.0);
            mbk_system_add_scheduled_event(sys, 1.0, spring_handler, &ctl);
            mbk_system_realize_topology(sys);
            mbk_state *s = default_state(sys);
            mbk_state_upd_q(s)[0] = 1.0;
            mbk_integrator *ig = make((which)w, sys);
            configure(ig, (which)w);
            CHECK_INT(mbk_integrator_initialize(ig, s), MBK_OK);
            long before = 0;
            CHECK_INT(mbk_integrator_step_to(ig, 2.0), MBK_EVENT);
            before = mbk_get_allocation_count();
            int rc = mbk_integrator_step_to(ig, 2.0);
            if (rc != MBK_OK) fprintf(stderr, "%s: %s\n", names[w], mbk_last_error());
            CHECK_INT(rc, MBK_OK);
            long allocs = mbk_get_allocation_count() - before;
            /* x = cos 2t until 1, then free flight (disabled) or cos of 4t (stiffened) */
            double x1 = cos(2.0), v1 = -2.0 * sin(2.0), x, v;
            if (action == 0) {
                x = x1 + v1;
                v = v1;
            } else {
                x = x1 * cos(4.0) + v1 / 4.0 * sin(4.0);
                v = -4.0 * x1 * sin(4.0) + v1 * cos(4.0);
            }
            const mbk_state *r = mbk_integrator_get_state(ig);
            double err = fabs(mbk_state_get_q(r)[0] - x) + fabs(mbk_state_get_u(r)[0] - v);
            printf("  %-20s spring %s at t = 1 (%s stage): error at t = 2 %.2e, allocations after %ld\n",
                   names[w], action == 0 ? "disabled" : "stiffened", action == 0 ? "Instance" : "Dynamics",
                   err, allocs);
            CHECK(err < (first_order((which)w) ? 2e-2 : 1e-5));
            if (action == 1) CHECK_INT(allocs, 0); /* a Dynamics-stage change allocates nothing */
            mbk_integrator_destroy(ig);
            mbk_state_destroy(s);
            mbk_system_destroy(sys);
        }
    }
}

/* Model stage: switch a Ball mobilizer from quaternions to Euler angles mid-run (nq 4 -> 3). */
static int to_euler(void *user, const mbk_system *sys, mbk_state *s, mbk_event_result *r)
{
    (void)user;
    const mbk_matter *m = mbk_multibody_get_matter(sys);
    mbk_transform X;
    mbk_spatial_vec V;
    int rc;
    if ((rc = mbk_matter_get_body_transform(m, s, 1, &X)) < 0 || (rc = mbk_matter_get_body_velocity(m, s, 1, &V)) < 0)
        return rc;
    if ((rc = mbk_matter_set_use_euler_angles(m, s, true)) < 0) return rc;
    if ((rc = mbk_system_realize(sys, s, MBK_STAGE_INSTANCE)) < 0) return rc;
    if ((rc = mbk_matter_set_body_q_to_fit_transform(m, s, 1, &X)) < 0) return rc;
    if ((rc = mbk_system_realize(sys, s, MBK_STAGE_POSITION)) < 0) return rc;
    if ((rc = mbk_matter_set_body_u_to_fit_velocity(m, s, 1, &V)) < 0) return rc;
    r->lowest_modified = MBK_STAGE_MODEL;
    return 0;
}

static mbk_system *make_top(bool switch_at_half)
{
    mbk_system *sys = mbk_multibody_create("top");
    mbk_matter *m = mbk_multibody_upd_matter(sys);
    mbk_mass_props mp = mbk_mass_props_from_central(1.0, mbk_vec3_make(0, 0, 0.3), mbk_mat33_diag(0.02, 0.03, 0.01));
    mbk_transform X = mbk_transform_identity();
    mbk_matter_add_body(m, 0, &X, &mp, &X, mbk_mobilizer_ball());
    mbk_force_add_gravity(mbk_multibody_upd_forces(sys), mbk_vec3_make(0, 0, -G));
    if (switch_at_half) mbk_system_add_scheduled_event(sys, 0.5, to_euler, NULL);
    mbk_system_realize_topology(sys);
    return sys;
}

static int top_run(which w, bool sw, mbk_transform *X)
{
    mbk_system *sys = make_top(sw);
    mbk_state *s = default_state(sys);
    double *q = mbk_state_upd_q(s);
    double c = cos(0.15), sn = sin(0.15);
    q[0] = c, q[1] = sn, q[2] = 0, q[3] = 0; /* tilted 0.3 rad about x */
    double *u = mbk_state_upd_u(s);
    u[0] = 0.2, u[1] = 0.1, u[2] = 20.0;
    mbk_integrator *ig = make(w, sys);
    configure(ig, w);
    mbk_integrator_set_fixed_step(ig, 0); /* RK4: step doubling, to compare at 1e-8 */
    int rc = mbk_integrator_initialize(ig, s);
    while (rc == MBK_OK || rc == MBK_EVENT) {
        rc = mbk_integrator_step_to(ig, 1.0);
        if (rc == MBK_OK) break;
    }
    if (rc == MBK_OK)
        mbk_matter_get_body_transform(mbk_multibody_get_matter(sys), mbk_integrator_get_state(ig), 1, X);
    else fprintf(stderr, "%s: %s\n", names[w], mbk_last_error());
    int nq = rc == MBK_OK ? mbk_state_get_nq(mbk_integrator_get_state(ig)) : -1;
    mbk_integrator_destroy(ig);
    mbk_state_destroy(s);
    mbk_system_destroy(sys);
    return rc == MBK_OK ? nq : rc;
}

static void test_model_stage_change(void)
{
    for (int w = 0; w < I_COUNT; ++w) {
        if (!available((which)w) || first_order((which)w)) continue;
        mbk_transform A, B;
        CHECK_INT(top_run((which)w, false, &A), 4);
        CHECK_INT(top_run((which)w, true, &B), 3);
        double d = mbk_vec3_norm(mbk_vec3_sub(A.p, B.p));
        for (int i = 0; i < 3; ++i) {
            for (int j = 0; j < 3; ++j) d = fmax(d, fabs(A.R.m[i][j] - B.R.m[i][j]));
        }
        printf("  %-20s spinning top, quaternions -> Euler angles at t = 0.5: pose difference at t = 1 %.2e\n",
               names[w], d);
        CHECK(d < 1e-5);
    }
}

/* ------------------------------------------------------------------ */
/* Failing handlers and witnesses                                       */
/* ------------------------------------------------------------------ */

static int failing_handler(void *user, const mbk_system *sys, mbk_state *s, mbk_event_result *r)
{
    (void)user;
    (void)sys;
    (void)r;
    mbk_state_upd_u(s)[0] = 123.0; /* a change that must not survive the failure */
    return mbk_set_error(MBK_EUSER, "the handler gave up");
}

static double nan_witness(void *user, const mbk_system *sys, const mbk_state *s)
{
    (void)user;
    (void)sys;
    return mbk_state_get_time(s) > 0.5 ? NAN : 1.0;
}

static void test_failing_handlers(void)
{
    for (int w = 0; w < I_COUNT; ++w) {
        if (!available((which)w)) continue;
        mbk_system *sys = make_osc(false, NULL);
        mbk_system_add_scheduled_event(sys, 0.4, failing_handler, NULL);
        mbk_system_realize_topology(sys);
        mbk_state *s = default_state(sys);
        mbk_integrator *ig = make((which)w, sys);
        configure(ig, (which)w);
        CHECK_INT(mbk_integrator_initialize(ig, s), MBK_OK);
        int rc = mbk_integrator_step_to(ig, 1.0);
        CHECK_INT(rc, MBK_EUSER);
        CHECK(strstr(mbk_last_error(), "the handler gave up") != NULL);
        CHECK(strstr(mbk_last_error(), "last good") != NULL);
        const mbk_state *r = mbk_integrator_get_state(ig);
        CHECK(mbk_state_get_time(r) == 0.4);
        CHECK(mbk_state_get_u(r)[0] != 123.0);
        CHECK(mbk_state_get_stage(r) >= MBK_STAGE_ACCELERATION);
        mbk_integrator_destroy(ig);
        mbk_state_destroy(s);
        mbk_system_destroy(sys);

        sys = make_osc(false, NULL);
        mbk_system_add_event_handler(sys, MBK_STAGE_TIME, MBK_ANY, nan_witness, record, NULL);
        mbk_system_realize_topology(sys);
        s = default_state(sys);
        ig = make((which)w, sys);
        configure(ig, (which)w);
        CHECK_INT(mbk_integrator_initialize(ig, s), MBK_OK);
        rc = mbk_integrator_step_to(ig, 1.0);
        CHECK(rc < 0);
        CHECK(strstr(mbk_last_error(), "witness") != NULL);
        CHECK(mbk_integrator_get_time(ig) <= 0.5 + 1e-12);
        if (w == 0) printf("  NaN witness: %s\n", mbk_last_error());
        mbk_integrator_destroy(ig);
        mbk_state_destroy(s);
        mbk_system_destroy(sys);
    }
}

static void test_event_api_bad_input(void)
{
    mbk_system *sys = mbk_system_create("bad");
    CHECK_INT(mbk_system_get_events_subsystem(sys), -1);
    CHECK_INT(mbk_system_add_event_handler(NULL, MBK_STAGE_POSITION, MBK_ANY, q0_witness, record, NULL), MBK_EINVAL);
    CHECK_INT(mbk_system_add_event_handler(sys, MBK_STAGE_MODEL, MBK_ANY, q0_witness, record, NULL), MBK_EINVAL);
    CHECK_INT(mbk_system_add_event_handler(sys, MBK_STAGE_POSITION, (mbk_event_direction)7, q0_witness, record, NULL), MBK_EINVAL);
    CHECK_INT(mbk_system_add_event_handler(sys, MBK_STAGE_POSITION, MBK_ANY, NULL, record, NULL), MBK_EINVAL);
    CHECK_INT(mbk_system_add_event_handler(sys, MBK_STAGE_POSITION, MBK_ANY, q0_witness, NULL, NULL), MBK_EINVAL);
    CHECK_INT(mbk_system_add_scheduled_event(sys, NAN, record, NULL), MBK_EINVAL);
    CHECK_INT(mbk_system_add_periodic_reporter(sys, 0, reporter, NULL), MBK_EINVAL);
    CHECK_INT(mbk_system_add_periodic_reporter(sys, 1, NULL, NULL), MBK_EINVAL);
    CHECK_INT(mbk_system_set_witness_direction(sys, 5, 0, MBK_ANY), MBK_EINVAL);
    CHECK_INT(mbk_system_get_events_subsystem(sys), -1); /* nothing was added */
    CHECK_INT(mbk_system_add_scheduled_event(sys, 1.0, record, NULL), 0);
    CHECK_INT(mbk_system_add_periodic_reporter(sys, 1.0, reporter, NULL), 1);
    CHECK_INT(mbk_system_get_events_subsystem(sys), 0);
    CHECK_INT(mbk_system_realize_topology(sys), MBK_OK);
    long v = mbk_system_get_topology_version(sys);
    CHECK_INT(mbk_system_add_scheduled_event(sys, 2.0, record, NULL), 2);
    CHECK(!mbk_system_is_topology_realized(sys));
    CHECK(mbk_system_get_topology_version(sys) > v);
    mbk_system_destroy(sys);
}

int main(void)
{
    printf("bouncing ball:\n");
    test_bouncing_ball();
    printf("scheduled events and periodic reporters:\n");
    test_scheduled_and_reporters();
    test_termination();
    printf("direction filters:\n");
    test_directions();
    printf("events defined by a subsystem:\n");
    test_subsystem_events();
    printf("handlers changing later-stage variables:\n");
    test_stage_changes();
    test_model_stage_change();
    printf("failing handlers and witnesses:\n");
    test_failing_handlers();
    test_event_api_bad_input();
    return mbk_test_finish();
}
