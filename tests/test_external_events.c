/* Events driven from outside (mbk/external.h): an outside integrator (a
 * fixed-step RK4 written here on mbk_system_calc_ydot, with its own bisection
 * root finder) watches the active witnesses, dispatches handlers, scheduled
 * events and reporters through the public calls, and must find the same
 * events at the same times as the library's RK-Merson:
 *   - a bouncing ball (events subsystem: falling witness at Position, handler
 *     reversing u), an apex reporter (falling u, Velocity), a scheduled kick;
 *   - a custom subsystem with its own witness (any direction) and its own
 *     scheduled event, handled by its handle_events op (triggered ids first).
 * Also: the witness list and its order, directions, values at a stage, the
 * crossing rule, bad input (NULL, stage, stale State, `from` not earlier),
 * and a planted error in an event log is caught by the comparison; the
 * outside driver's event calls allocate nothing. */
#include "mbk/alloc.h"
#include "mbk/external.h"
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
#include <string.h>

static const double G = 9.81, REST = 0.8, T_END = 2.2, T_KICK = 0.9, T_SUB = 1.3;

typedef struct event_log {
    char kind[256];
    double t[256];
    int n;
} event_log;

static event_log *cur_log; /* where the handlers of the current run write */

static void note(char kind, double t)
{
    if (cur_log && cur_log->n < 256) {
        cur_log->kind[cur_log->n] = kind;
        cur_log->t[cur_log->n++] = t;
    }
}

static int bounce(void *user, const mbk_system *sys, mbk_state *s, mbk_event_result *r)
{
    (void)user;
    (void)sys;
    note('B', mbk_state_get_time(s));
    double *u = mbk_state_upd_u(s);
    u[0] = -REST * u[0];
    r->lowest_modified = MBK_STAGE_VELOCITY;
    return 0;
}

static void apex(void *user, const mbk_system *sys, const mbk_state *s)
{
    (void)user;
    (void)sys;
    note('A', mbk_state_get_time(s));
}

static int kick(void *user, const mbk_system *sys, mbk_state *s, mbk_event_result *r)
{
    (void)user;
    (void)sys;
    note('S', mbk_state_get_time(s));
    mbk_state_upd_u(s)[0] += 0.5;
    r->lowest_modified = MBK_STAGE_VELOCITY;
    return 0;
}

/* A subsystem with one Position witness (q - 0.25) and one scheduled event (id 1). */
static int sub_instance(void *impl, const mbk_subsystem_ctx *c, mbk_state *s)
{
    (void)impl;
    return mbk_state_allocate_event_triggers(s, mbk_subsystem_ctx_get_index(c), MBK_STAGE_POSITION, 1) < 0 ? -1 : 0;
}

static int sub_position(void *impl, const mbk_subsystem_ctx *c, mbk_state *s)
{
    (void)impl;
    mbk_state_upd_event_triggers(s, mbk_subsystem_ctx_get_index(c), MBK_STAGE_POSITION)[0] = mbk_state_get_q(s)[0] - 0.25;
    return 0;
}

static bool sub_disables_gravity; /* the subsystem's handler switches gravity off (Instance) */

static int sub_handle(void *impl, const mbk_subsystem_ctx *c, mbk_state *s, const int *ids, int n,
                      mbk_event_result *r)
{
    (void)impl;
    for (int i = 0; i < n; ++i) note(ids[i] == 0 ? 'C' : 'D', mbk_state_get_time(s));
    if (sub_disables_gravity) {
        const mbk_system *sys = mbk_subsystem_ctx_get_system(c);
        int rc = mbk_force_set_enabled(mbk_multibody_get_forces(sys), s, 0, false);
        if (rc < 0) return rc;
        r->lowest_modified = MBK_STAGE_INSTANCE;
    }
    return 0;
}

static int sub_next(void *impl, const mbk_subsystem_ctx *c, const mbk_state *s, double *t_next, int *ids, int *n)
{
    (void)impl;
    (void)c;
    if (mbk_state_get_time(s) < T_SUB) {
        *t_next = T_SUB;
        if (*n >= 1) ids[0] = 1;
        *n = 1;
    } else {
        *n = 0;
    }
    return 0;
}

static const mbk_subsystem_ops sub_ops = {.name = "crossings", .realize_instance = sub_instance,
                                          .realize_position = sub_position, .handle_events = sub_handle,
                                          .next_scheduled_event = sub_next};

/* The ball (Slider along x, gravity along -x), the subsystem (index 2), then the events. */
static mbk_system *make_ball(void)
{
    mbk_system *sys = mbk_multibody_create("ball");
    slider_ball_add(sys, G);
    mbk_system_add_subsystem(sys, &sub_ops, NULL);
    mbk_system_add_event_handler(sys, MBK_STAGE_POSITION, MBK_FALLING, q0_witness, bounce, NULL);
    mbk_system_add_event_reporter(sys, MBK_STAGE_VELOCITY, MBK_FALLING, u0_witness, apex, NULL);
    mbk_system_add_scheduled_event(sys, T_KICK, kick, NULL);
    mbk_system_realize_topology(sys);
    return sys;
}

static mbk_state *initial_state(const mbk_system *sys)
{
    mbk_state *s = mbk_state_create();
    mbk_state_init(s, sys);
    mbk_system_realize(sys, s, MBK_STAGE_INSTANCE);
    mbk_state_upd_q(s)[0] = 1.0;
    return s;
}

/* ---- the outside driver ---------------------------------------------------- */

enum { NW_MAX = 8 };

typedef struct driver {
    const mbk_system *sys;
    mbk_state *cur, *prev, *probe;
    double w0[NW_MAX], w1[NW_MAX], wlo[NW_MAX], whi[NW_MAX];
    int fired[NW_MAX], nw;
} driver;

/* One classical RK4 step from cur to t1 (y1 out, 2 entries). */
static int rk4(driver *d, double t1, double *y1)
{
    const mbk_state *s = d->cur;
    double t0 = mbk_state_get_time(s), h = t1 - t0, y[2], k[4][2], yt[2];
    memcpy(y, mbk_state_get_y(s), sizeof y);
    memcpy(k[0], mbk_state_get_ydot(s), sizeof k[0]);
    const double c[3] = {0.5, 0.5, 1.0};
    for (int st = 1; st < 4; ++st) {
        for (int i = 0; i < 2; ++i) yt[i] = y[i] + c[st - 1] * h * k[st - 1][i];
        int rc = mbk_system_calc_ydot(d->sys, d->probe, t0 + c[st - 1] * h, yt, k[st]);
        if (rc < 0) return rc;
    }
    for (int i = 0; i < 2; ++i) y1[i] = y[i] + h / 6 * (k[0][i] + 2 * k[1][i] + 2 * k[2][i] + k[3][i]);
    return MBK_OK;
}

/* Witnesses of the State reached by one RK4 step from cur to t. */
static int witnesses_at(driver *d, double t, double *w, double *y)
{
    int rc = rk4(d, t, y);
    return rc < 0 ? rc : mbk_system_calc_witnesses(d->sys, d->probe, t, y, w);
}

static long driver_allocations = -1; /* allocations while the driver stepped */

/* Run the outside driver with fixed step h to T_END. */
static int drive(const mbk_system *sys, const mbk_state *initial, double h)
{
    driver d = {sys, mbk_state_create(), mbk_state_create(), mbk_state_create(), {0}, {0}, {0}, {0}, {0}, 0};
    int rc = mbk_state_copy(d.cur, initial);
    mbk_state_copy(d.prev, initial);
    mbk_state_copy(d.probe, initial);
    if (rc == 0) rc = mbk_system_project(sys, d.cur, 1e-12);
    if (rc == 0) rc = mbk_system_realize(sys, d.cur, MBK_STAGE_REPORT);
    d.nw = mbk_system_get_num_witnesses(sys, d.cur);
    if (rc == 0 && (d.nw < 0 || d.nw > NW_MAX)) rc = MBK_EINVAL;
    if (rc == 0) rc = mbk_system_get_witnesses(sys, d.cur, d.w0, NULL);
    long alloc0 = mbk_get_allocation_count();
    while (rc >= 0 && mbk_state_get_time(d.cur) < T_END) {
        double t = mbk_state_get_time(d.cur), ts, y1[2];
        if ((rc = mbk_system_get_next_scheduled_time(sys, d.cur, &ts)) < 0) break;
        double t1 = fmin(fmin(t + h, ts), T_END);
        if ((rc = witnesses_at(&d, t1, d.w1, y1)) < 0) break;
        int n = mbk_system_find_witness_crossings(sys, d.cur, d.w0, d.w1, d.fired);
        if (n < 0) { rc = n; break; }
        if (n > 0) { /* bisect to 1e-13 s; the crossings of the last bracket fire */
            double lo = t, hi = t1;
            memcpy(d.wlo, d.w0, sizeof d.wlo);
            memcpy(d.whi, d.w1, sizeof d.whi);
            while (hi - lo > 1e-13) {
                double mid = 0.5 * (lo + hi), wm[NW_MAX], ym[2];
                if ((rc = witnesses_at(&d, mid, wm, ym)) < 0) break;
                if (mbk_system_find_witness_crossings(sys, d.cur, d.wlo, wm, NULL) > 0) {
                    hi = mid;
                    memcpy(d.whi, wm, sizeof wm);
                } else {
                    lo = mid;
                    memcpy(d.wlo, wm, sizeof wm);
                }
            }
            if (rc < 0) break;
            t1 = hi;
            if ((rc = rk4(&d, t1, y1)) < 0) break;
            n = mbk_system_find_witness_crossings(sys, d.cur, d.wlo, d.whi, d.fired);
        }
        /* commit the step */
        mbk_state_copy(d.prev, d.cur);
        if ((rc = mbk_system_set_y_and_realize(sys, d.cur, t1, y1, MBK_STAGE_ACCELERATION)) < 0) break;
        bool sched = t1 == ts;
        if (n > 0 || sched) {
            mbk_event_result r;
            rc = mbk_system_handle_events_at(sys, d.prev, d.cur, n > 0 ? d.fired : NULL, &r);
            if (rc < 0) break;
            if (r.lowest_modified <= MBK_STAGE_REPORT && (rc = mbk_system_project(sys, d.cur, 1e-12)) < 0) break;
            if ((rc = mbk_system_realize(sys, d.cur, MBK_STAGE_REPORT)) < 0) break;
            if (n > 0) mbk_system_call_witness_reporters(sys, d.cur, d.fired);
            if (r.terminate) break;
        }
        if ((rc = mbk_system_realize(sys, d.cur, MBK_STAGE_REPORT)) < 0) break;
        rc = mbk_system_get_witnesses(sys, d.cur, d.w0, NULL);
    }
    driver_allocations = mbk_get_allocation_count() - alloc0;
    mbk_state_destroy(d.cur);
    mbk_state_destroy(d.prev);
    mbk_state_destroy(d.probe);
    return rc;
}

/* The same kinds in the same order, times within tol. */
static bool logs_match(const event_log *a, const event_log *b, double tol)
{
    if (a->n != b->n) return false;
    for (int i = 0; i < a->n; ++i)
        if (a->kind[i] != b->kind[i] || fabs(a->t[i] - b->t[i]) > tol) return false;
    return true;
}

static void print_log(const char *name, const event_log *l)
{
    fprintf(stderr, "    %s:", name);
    for (int i = 0; i < l->n; ++i) fprintf(stderr, " %c@%.10f", l->kind[i], l->t[i]);
    fprintf(stderr, "\n");
}

static void test_same_events(void)
{
    mbk_system *sys = make_ball();
    mbk_state *s0 = initial_state(sys);
    /* the library */
    static event_log lib, out;
    cur_log = &lib;
    mbk_integrator *ig = mbk_integrator_create_rkmerson(sys);
    mbk_integrator_set_accuracy(ig, 1e-11);
    mbk_integrator_set_event_tolerance(ig, 1e-12);
    CHECK_INT(mbk_integrator_initialize(ig, s0), MBK_OK);
    CHECK_INT(mbk_integrator_integrate(ig, T_END, NULL, NULL), MBK_OK);
    mbk_integrator_destroy(ig);
    /* the outside driver (its States are made before it counts allocations) */
    cur_log = &out;
    int rc = drive(sys, s0, 1e-3);
    CHECK_INT(driver_allocations, 0);
    if (!CHECK(rc >= 0)) fprintf(stderr, "    driver: %s\n", mbk_last_error());
    cur_log = NULL;
    /* every kind happened: bounces, apexes, the kick, the subsystem's crossings and its scheduled event */
    int count[128] = {0};
    for (int i = 0; i < lib.n; ++i) count[(int)lib.kind[i]]++;
    CHECK(count['B'] >= 3 && count['A'] >= 3 && count['S'] == 1 && count['C'] >= 4 && count['D'] == 1);
    double worst = 0;
    for (int i = 0; i < lib.n && i < out.n; ++i) worst = fmax(worst, fabs(lib.t[i] - out.t[i]));
    printf("%d events (library) and %d (outside driver); largest time difference %.2g s\n", lib.n, out.n, worst);
    if (!CHECK(logs_match(&lib, &out, 1e-8))) {
        print_log("library", &lib);
        print_log("outside", &out);
    }
    /* the first bounce at the analytic time */
    CHECK(lib.n > 0 && out.n > 0);
    int first = 0;
    while (first < out.n && out.kind[first] != 'B') ++first;
    CHECK(first < out.n && fabs(out.t[first] - sqrt(2.0 / G)) < 1e-9);
    /* a planted error (one event time off by 1e-6) is caught */
    event_log planted = out;
    planted.t[planted.n / 2] += 1e-6;
    CHECK(!logs_match(&lib, &planted, 1e-8));
    planted = out;
    planted.kind[0] = planted.kind[0] == 'B' ? 'C' : 'B';
    CHECK(!logs_match(&lib, &planted, 1e-8));
    mbk_state_destroy(s0);
    mbk_system_destroy(sys);
}

static void test_witness_list(void)
{
    mbk_system *sys = make_ball();
    mbk_state *s = initial_state(sys);
    int nw = mbk_system_get_num_witnesses(sys, s);
    CHECK_INT(nw, 3);
    mbk_witness_info info[3];
    CHECK_INT(mbk_system_get_witness_info(sys, s, info), MBK_OK);
    int ev = mbk_system_get_events_subsystem(sys);
    CHECK_INT(ev, 3);
    /* Position: the subsystem's (2) then the events subsystem's; Velocity: the apex reporter */
    CHECK(info[0].subsystem == 2 && info[0].event_id == 0 && info[0].stage == MBK_STAGE_POSITION &&
          info[0].direction == MBK_ANY && !info[0].reporter);
    CHECK(info[1].subsystem == ev && info[1].stage == MBK_STAGE_POSITION && info[1].direction == MBK_FALLING &&
          !info[1].reporter);
    CHECK(info[2].subsystem == ev && info[2].stage == MBK_STAGE_VELOCITY && info[2].direction == MBK_FALLING &&
          info[2].reporter);
    mbk_stage top = MBK_STAGE_EMPTY;
    CHECK_INT(mbk_system_get_witness_stage(sys, s, &top), MBK_OK);
    CHECK_INT(top, MBK_STAGE_VELOCITY);
    /* values need the stage: at Position the Velocity witness is not there yet */
    double w[3];
    mbk_event_direction dir[3];
    mbk_system_realize(sys, s, MBK_STAGE_POSITION);
    CHECK_INT(mbk_system_get_witnesses(sys, s, w, NULL), MBK_ESTAGE);
    CHECK(strstr(mbk_last_error(), "Velocity") != NULL);
    CHECK_INT(mbk_system_get_witnesses(sys, s, NULL, dir), MBK_ESTAGE);
    mbk_system_realize(sys, s, MBK_STAGE_VELOCITY);
    CHECK_INT(mbk_system_get_witnesses(sys, s, w, dir), MBK_OK);
    CHECK(w[0] == 0.75 && w[1] == 1.0 && w[2] == 0.0);
    CHECK(dir[0] == MBK_ANY && dir[1] == MBK_FALLING && dir[2] == MBK_FALLING);
    /* calc at (t, y) */
    const double y[2] = {0.1, -2.0};
    CHECK_INT(mbk_system_calc_witnesses(sys, s, 0.5, y, w), MBK_OK);
    CHECK(mbk_state_get_time(s) == 0.5 && w[0] == 0.1 - 0.25 && w[1] == 0.1 && w[2] == -2.0);
    /* the crossing rule of events.h */
    const double a[3] = {1, 1, -1}, b[3] = {-1, 0, 0}, c[3] = {0, -1, -2};
    int fired[3];
    CHECK_INT(mbk_system_find_witness_crossings(sys, s, a, b, fired), 2); /* ANY down; falling to 0; -1 -> 0 not falling */
    CHECK(fired[0] == 1 && fired[1] == 1 && fired[2] == 0);
    CHECK_INT(mbk_system_find_witness_crossings(sys, s, c, a, fired), 0); /* starting at 0 is no crossing; rising does not count */
    /* the scheduled times: the kick first, then the subsystem's */
    double ts;
    mbk_state_set_time(s, 0.0);
    CHECK_INT(mbk_system_get_next_scheduled_time(sys, s, &ts), MBK_OK);
    CHECK(ts == T_KICK);
    mbk_state_set_time(s, 1.0);
    CHECK_INT(mbk_system_get_next_scheduled_time(sys, s, &ts), MBK_OK);
    CHECK(ts == T_SUB);
    mbk_state_set_time(s, 2.0);
    CHECK_INT(mbk_system_get_next_scheduled_time(sys, s, &ts), MBK_OK);
    CHECK(isinf(ts));
    mbk_state_destroy(s);
    mbk_system_destroy(sys);
}

/* Simultaneous events where the first subsystem's handler changes an Instance-stage
   variable: the next subsystem's handler still gets its event. */
static void test_instance_change(void)
{
    mbk_system *sys = make_ball();
    mbk_state *s = initial_state(sys);
    mbk_system_realize(sys, s, MBK_STAGE_REPORT);
    static event_log log;
    log.n = 0;
    cur_log = &log;
    sub_disables_gravity = true;
    const int fired[3] = {1, 1, 0}; /* the subsystem's crossing and the bounce */
    mbk_event_result r;
    CHECK_INT(mbk_system_handle_events_at(sys, NULL, s, fired, &r), 2);
    sub_disables_gravity = false;
    cur_log = NULL;
    CHECK(log.n == 2 && log.kind[0] == 'C' && log.kind[1] == 'B');
    CHECK_INT(r.lowest_modified, MBK_STAGE_INSTANCE);
    CHECK(mbk_state_get_stage(s) < MBK_STAGE_INSTANCE);
    CHECK(mbk_state_get_u(s)[0] == 0.0); /* the bounce reversed u = 0 */
    CHECK(!mbk_force_is_enabled(mbk_multibody_get_forces(sys), s, 0));
    mbk_state_destroy(s);
    mbk_system_destroy(sys);
}

static void test_bad_input(void)
{
    mbk_system *sys = make_ball(), *other = make_ball();
    mbk_state *s = initial_state(sys), *early = mbk_state_create();
    mbk_state_init(early, sys);
    double w[3], y0[2];
    int fired[3] = {1, 1, 1};
    mbk_event_result r;
    mbk_system_realize(sys, s, MBK_STAGE_VELOCITY);
    memcpy(y0, mbk_state_get_y(s), sizeof y0);
    CHECK_INT(mbk_system_get_num_witnesses(NULL, s), MBK_EINVAL);
    CHECK_INT(mbk_system_get_num_witnesses(sys, early), MBK_ESTAGE); /* at Topology */
    CHECK(strstr(mbk_last_error(), "Instance") != NULL);
    CHECK_INT(mbk_system_get_witness_info(sys, s, NULL), MBK_EINVAL);
    CHECK_INT(mbk_system_get_witnesses(sys, s, NULL, NULL), MBK_EINVAL);
    CHECK_INT(mbk_system_calc_witnesses(sys, s, 0.1, y0, NULL), MBK_EINVAL);
    const double bad[2] = {NAN, 0};
    CHECK_INT(mbk_system_calc_witnesses(sys, s, 0.1, bad, w), MBK_ENOTFINITE);
    CHECK_INT(mbk_system_calc_witnesses(sys, s, INFINITY, y0, w), MBK_ENOTFINITE);
    CHECK_INT(mbk_system_find_witness_crossings(sys, s, NULL, w, NULL), MBK_EINVAL);
    CHECK_INT(mbk_system_handle_events_at(sys, NULL, s, fired, NULL), MBK_EINVAL);
    CHECK_INT(mbk_system_handle_events_at(sys, s, s, fired, &r), MBK_EINVAL); /* from is not earlier */
    CHECK(strstr(mbk_last_error(), "not before") != NULL);
    CHECK_INT(mbk_system_get_next_scheduled_time(sys, s, NULL), MBK_EINVAL);
    mbk_state *o = initial_state(other);
    mbk_system_invalidate_topology(other);
    mbk_system_realize_topology(other);
    CHECK_INT(mbk_system_get_num_witnesses(other, o), MBK_ESTALE);
    CHECK_INT(mbk_system_calc_witnesses(other, o, 0.1, y0, w), MBK_ESTALE);
    CHECK_INT(mbk_system_handle_events_at(other, NULL, o, fired, &r), MBK_ESTALE);
    /* nothing changed */
    CHECK(memcmp(y0, mbk_state_get_y(s), sizeof y0) == 0 && mbk_state_get_time(s) == 0.0);
    CHECK_INT(mbk_state_get_stage(s), MBK_STAGE_VELOCITY);
    mbk_state_destroy(o);
    mbk_state_destroy(early);
    mbk_state_destroy(s);
    mbk_system_destroy(sys);
    mbk_system_destroy(other);
}

int main(void)
{
    test_witness_list();
    test_same_events();
    test_instance_change();
    test_bad_input();
    return mbk_test_finish();
}
