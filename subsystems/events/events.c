/* The events subsystem: user event handlers, event reporters, scheduled
 * events and periodic reporters, added to a System without writing a
 * subsystem. It is a subsystem like any other: realize_instance allocates
 * one trigger slot per witness at the witness's stage, each realize op
 * evaluates the witnesses of its stage, and handle_events /
 * next_scheduled_event serve the integrators. Also the registry of
 * directions for other subsystems' witnesses. */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "mbk/alloc.h"
#include "mbk/events.h"
#include "mbk/state.h"
#include "mbk/status.h"
#include "mbk/system.h"

enum { EV_NSTAGE = MBK_STAGE_REPORT - MBK_STAGE_TIME + 1 };

typedef struct ev_trig {
    mbk_stage stage;
    mbk_event_direction dir;
    mbk_witness_fn witness;
    mbk_handler_fn handler;   /* NULL for a reporter */
    mbk_reporter_fn reporter; /* NULL for a handler */
    void *user;
    int id; /* the id returned to the user */
} ev_trig;

typedef struct ev_sched {
    double t;
    mbk_handler_fn handler;
    void *user;
    int id;
    int order; /* registration order, for a stable sort */
} ev_sched;

typedef struct ev_periodic {
    double interval;
    mbk_reporter_fn reporter;
    void *user;
    int id;
} ev_periodic;

typedef struct ev_dir {
    int subsystem, event_id;
    mbk_event_direction dir;
} ev_dir;

typedef struct ev_subsystem {
    ev_trig *trig;
    int ntrig, cap_trig;
    ev_sched *sched; /* sorted by time by realize_topology */
    int nsched, cap_sched;
    ev_periodic *per;
    int nper, cap_per;
    ev_dir *dirs;
    int ndirs, cap_dirs;
    int next_id;
    /* built by realize_topology */
    int *slot; /* local witness id (stage order) -> index into trig */
    int first[EV_NSTAGE], count[EV_NSTAGE];
} ev_subsystem;

static const mbk_subsystem_ops ev_ops; /* defined below */

/* Grow an array to hold at least n + 1 elements. */
static int grow(void **p, int *cap, int n, size_t elem)
{
    if (n < *cap) return MBK_OK;
    int c = *cap ? 2 * *cap : 8;
    void *q = mbk_realloc(*p, (size_t)c * elem);
    if (!q) return MBK_ENOMEM;
    *p = q;
    *cap = c;
    return MBK_OK;
}

/* ------------------------------------------------------------------ */
/* Ops                                                                  */
/* ------------------------------------------------------------------ */

static int cmp_sched(const void *a, const void *b)
{
    const ev_sched *x = a, *y = b;
    if (x->t < y->t) return -1;
    if (x->t > y->t) return 1;
    return x->order - y->order;
}

static int ev_topology(void *impl, const mbk_subsystem_ctx *c, mbk_state *s)
{
    (void)c;
    (void)s;
    ev_subsystem *ev = impl;
    mbk_free(ev->slot);
    ev->slot = NULL;
    memset(ev->count, 0, sizeof ev->count);
    for (int i = 0; i < ev->ntrig; ++i) ev->count[ev->trig[i].stage - MBK_STAGE_TIME]++;
    int n = 0;
    for (int g = 0; g < EV_NSTAGE; ++g) {
        ev->first[g] = n;
        n += ev->count[g];
    }
    if (n > 0) {
        ev->slot = mbk_malloc((size_t)n * sizeof *ev->slot);
        if (!ev->slot) return MBK_ENOMEM;
        int fill[EV_NSTAGE];
        memcpy(fill, ev->first, sizeof fill);
        for (int i = 0; i < ev->ntrig; ++i) ev->slot[fill[ev->trig[i].stage - MBK_STAGE_TIME]++] = i;
    }
    if (ev->nsched > 1) qsort(ev->sched, (size_t)ev->nsched, sizeof *ev->sched, cmp_sched);
    return 0;
}

static int ev_instance(void *impl, const mbk_subsystem_ctx *c, mbk_state *s)
{
    const ev_subsystem *ev = impl;
    int k = mbk_subsystem_ctx_get_index(c);
    for (int g = 0; g < EV_NSTAGE; ++g) {
        if (ev->count[g] == 0) continue;
        int rc = mbk_state_allocate_event_triggers(s, k, (mbk_stage)(MBK_STAGE_TIME + g), ev->count[g]);
        if (rc < 0) return rc;
    }
    return 0;
}

/* Evaluate the witnesses of stage g into this subsystem's trigger slots. */
static int ev_eval(const ev_subsystem *ev, const mbk_subsystem_ctx *c, const mbk_state *s, int g)
{
    int n = ev->count[g - MBK_STAGE_TIME];
    if (n == 0) return 0;
    int k = mbk_subsystem_ctx_get_index(c);
    const mbk_system *sys = mbk_subsystem_ctx_get_system(c);
    double *w = mbk_state_upd_event_triggers(s, k, (mbk_stage)g);
    if (!w) return mbk_last_status();
    for (int j = 0; j < n; ++j) {
        const ev_trig *e = &ev->trig[ev->slot[ev->first[g - MBK_STAGE_TIME] + j]];
        mbk_clear_error();
        double v = e->witness(e->user, sys, s);
        if (!isfinite(v)) {
            const char *why = mbk_last_error();
            return mbk_set_error(MBK_EUSER,
                                 "the witness of event %d (%s stage) returned %g at t = %g%s%s; "
                                 "witnesses must be finite (one that reads a subsystem added after "
                                 "the first event must be added after it, or use a later stage)",
                                 e->id, mbk_stage_name(e->stage), v, mbk_state_get_time(s),
                                 why[0] ? " after: " : "", why);
        }
        w[j] = v;
    }
    return 0;
}

#define EV_STAGE_OP(name, g)                                                    \
    static int name(void *impl, const mbk_subsystem_ctx *c, mbk_state *s)      \
    {                                                                           \
        return ev_eval(impl, c, s, g);                                          \
    }
EV_STAGE_OP(ev_time, MBK_STAGE_TIME)
EV_STAGE_OP(ev_position, MBK_STAGE_POSITION)
EV_STAGE_OP(ev_velocity, MBK_STAGE_VELOCITY)
EV_STAGE_OP(ev_dynamics, MBK_STAGE_DYNAMICS)
EV_STAGE_OP(ev_acceleration, MBK_STAGE_ACCELERATION)
EV_STAGE_OP(ev_report, MBK_STAGE_REPORT)

static int ntotal(const ev_subsystem *ev) { return ev->first[EV_NSTAGE - 1] + ev->count[EV_NSTAGE - 1]; }

static void merge(mbk_event_result *into, const mbk_event_result *r)
{
    if (r->lowest_modified < into->lowest_modified) into->lowest_modified = r->lowest_modified;
    into->terminate = into->terminate || r->terminate;
}

static int run_handler(mbk_handler_fn h, void *user, int id, const char *kind,
                       const mbk_system *sys, mbk_state *s, mbk_event_result *result)
{
    mbk_event_result r = {MBK_STAGE_INFINITY, false};
    mbk_clear_error();
    int rc = h(user, sys, s, &r);
    if (rc != 0) {
        const char *why = mbk_last_error();
        return mbk_set_error(MBK_EUSER, "the handler of %s event %d failed at t = %g (returned %d)%s%s",
                             kind, id, mbk_state_get_time(s), rc, why[0] ? ": " : "", why);
    }
    merge(result, &r);
    return 0;
}

static int ev_handle(void *impl, const mbk_subsystem_ctx *c, mbk_state *s, const int *ids, int n,
                     mbk_event_result *result)
{
    const ev_subsystem *ev = impl;
    const mbk_system *sys = mbk_subsystem_ctx_get_system(c);
    int nw = ntotal(ev);
    for (int i = 0; i < n; ++i) {
        int id = ids[i], rc = 0;
        if (id >= 0 && id < nw) {
            const ev_trig *e = &ev->trig[ev->slot[id]];
            if (e->handler) rc = run_handler(e->handler, e->user, e->id, "triggered", sys, s, result);
        } else if (id >= nw && id < nw + ev->nsched) {
            const ev_sched *e = &ev->sched[id - nw];
            rc = run_handler(e->handler, e->user, e->id, "scheduled", sys, s, result);
        } else {
            rc = mbk_set_error(MBK_EINVAL, "events subsystem: no event with internal id %d", id);
        }
        if (rc != 0) return rc;
    }
    return 0;
}

static int ev_next(void *impl, const mbk_subsystem_ctx *c, const mbk_state *s, double *t_next,
                   int *ids, int *n)
{
    (void)c;
    const ev_subsystem *ev = impl;
    double t = mbk_state_get_time(s);
    /* first scheduled event strictly after t */
    int lo = 0, hi = ev->nsched;
    while (lo < hi) {
        int mid = (lo + hi) / 2;
        if (ev->sched[mid].t <= t) lo = mid + 1;
        else hi = mid;
    }
    if (lo == ev->nsched) {
        *n = 0;
        return 0;
    }
    int m = 0;
    while (lo + m < ev->nsched && ev->sched[lo + m].t == ev->sched[lo].t) ++m;
    *t_next = ev->sched[lo].t;
    if (m <= *n)
        for (int i = 0; i < m; ++i) ids[i] = ntotal(ev) + lo + i;
    *n = m;
    return 0;
}

static void ev_destroy(void *impl)
{
    ev_subsystem *ev = impl;
    mbk_free(ev->trig);
    mbk_free(ev->sched);
    mbk_free(ev->per);
    mbk_free(ev->dirs);
    mbk_free(ev->slot);
    mbk_free(ev);
}

static const mbk_subsystem_ops ev_ops = {
    .name = "events",
    .realize_topology = ev_topology,
    .realize_instance = ev_instance,
    .realize_time = ev_time,
    .realize_position = ev_position,
    .realize_velocity = ev_velocity,
    .realize_dynamics = ev_dynamics,
    .realize_acceleration = ev_acceleration,
    .realize_report = ev_report,
    .handle_events = ev_handle,
    .next_scheduled_event = ev_next,
    .destroy = ev_destroy,
};

/* ------------------------------------------------------------------ */
/* Adding events                                                        */
/* ------------------------------------------------------------------ */

/* The events subsystem's impl and index (NULL and -1 when the System has none). */
static const ev_subsystem *ev_find(const mbk_system *sys, int *index)
{
    int k = mbk_system_find_subsystem(sys, &ev_ops);
    if (index) *index = k;
    return k >= 0 ? mbk_system_get_subsystem_impl(sys, k) : NULL;
}

/* The events subsystem, added on first use; invalidates a realized topology. */
static ev_subsystem *ev_get(mbk_system *sys, const char *fn)
{
    if (!sys) {
        mbk_set_error(MBK_EINVAL, "%s: system is NULL", fn);
        return NULL;
    }
    int k = mbk_system_find_subsystem(sys, &ev_ops);
    if (k >= 0) {
        mbk_system_invalidate_subsystem_topology(sys, k);
        return mbk_system_upd_subsystem_impl(sys, k);
    }
    ev_subsystem *ev = mbk_calloc(1, sizeof *ev);
    if (!ev) return NULL;
    if (mbk_system_add_subsystem(sys, &ev_ops, ev) < 0) {
        mbk_free(ev);
        return NULL;
    }
    return ev;
}

static int check_stage_dir(mbk_stage stage, mbk_event_direction dir, const char *fn)
{
    if (stage < MBK_STAGE_TIME || stage > MBK_STAGE_REPORT)
        return mbk_set_error(MBK_EINVAL, "%s: witness stage %s is not Time..Report", fn,
                             mbk_stage_name(stage));
    if (dir != MBK_RISING && dir != MBK_FALLING && dir != MBK_ANY)
        return mbk_set_error(MBK_EINVAL,
                             "%s: direction %d is not MBK_RISING, MBK_FALLING or MBK_ANY", fn,
                             (int)dir);
    return MBK_OK;
}

static int add_trig(mbk_system *sys, mbk_stage stage, mbk_event_direction dir, mbk_witness_fn w,
                    mbk_handler_fn h, mbk_reporter_fn r, void *user, const char *fn)
{
    int rc = check_stage_dir(stage, dir, fn);
    if (rc < 0) return rc;
    if (!w) return mbk_set_error(MBK_EINVAL, "%s: witness function is NULL", fn);
    if (!h && !r) return mbk_set_error(MBK_EINVAL, "%s: %s is NULL", fn, h ? "reporter" : "handler");
    ev_subsystem *ev = ev_get(sys, fn);
    if (!ev) return mbk_last_status();
    if ((rc = grow((void **)&ev->trig, &ev->cap_trig, ev->ntrig, sizeof *ev->trig)) < 0) return rc;
    ev_trig *e = &ev->trig[ev->ntrig++];
    *e = (ev_trig){stage, dir, w, h, r, user, ev->next_id};
    return ev->next_id++;
}

int mbk_system_add_event_handler(mbk_system *sys, mbk_stage witness_stage,
                                 mbk_event_direction direction, mbk_witness_fn witness,
                                 mbk_handler_fn handler, void *user)
{
    if (!handler) return mbk_set_error(MBK_EINVAL, "mbk_system_add_event_handler: handler is NULL");
    return add_trig(sys, witness_stage, direction, witness, handler, NULL, user,
                    "mbk_system_add_event_handler");
}

int mbk_system_add_event_reporter(mbk_system *sys, mbk_stage witness_stage,
                                  mbk_event_direction direction, mbk_witness_fn witness,
                                  mbk_reporter_fn reporter, void *user)
{
    if (!reporter) return mbk_set_error(MBK_EINVAL, "mbk_system_add_event_reporter: reporter is NULL");
    return add_trig(sys, witness_stage, direction, witness, NULL, reporter, user,
                    "mbk_system_add_event_reporter");
}

int mbk_system_add_scheduled_event(mbk_system *sys, double t, mbk_handler_fn handler, void *user)
{
    const char *fn = "mbk_system_add_scheduled_event";
    if (!handler) return mbk_set_error(MBK_EINVAL, "%s: handler is NULL", fn);
    if (!isfinite(t)) return mbk_set_error(MBK_EINVAL, "%s: time %g is not finite", fn, t);
    ev_subsystem *ev = ev_get(sys, fn);
    if (!ev) return mbk_last_status();
    int rc = grow((void **)&ev->sched, &ev->cap_sched, ev->nsched, sizeof *ev->sched);
    if (rc < 0) return rc;
    ev->sched[ev->nsched] = (ev_sched){t, handler, user, ev->next_id, ev->nsched};
    ev->nsched++;
    return ev->next_id++;
}

int mbk_system_add_periodic_reporter(mbk_system *sys, double interval, mbk_reporter_fn reporter,
                                     void *user)
{
    const char *fn = "mbk_system_add_periodic_reporter";
    if (!reporter) return mbk_set_error(MBK_EINVAL, "%s: reporter is NULL", fn);
    if (!(interval > 0) || !isfinite(interval))
        return mbk_set_error(MBK_EINVAL, "%s: interval %g must be finite and > 0", fn, interval);
    ev_subsystem *ev = ev_get(sys, fn);
    if (!ev) return mbk_last_status();
    int rc = grow((void **)&ev->per, &ev->cap_per, ev->nper, sizeof *ev->per);
    if (rc < 0) return rc;
    ev->per[ev->nper++] = (ev_periodic){interval, reporter, user, ev->next_id};
    return ev->next_id++;
}

int mbk_system_set_witness_direction(mbk_system *sys, int subsystem, int event_id,
                                     mbk_event_direction direction)
{
    const char *fn = "mbk_system_set_witness_direction";
    int rc = check_stage_dir(MBK_STAGE_TIME, direction, fn);
    if (rc < 0) return rc;
    if (!sys) return mbk_set_error(MBK_EINVAL, "%s: system is NULL", fn);
    if (subsystem < 0 || subsystem >= mbk_system_get_num_subsystems(sys))
        return mbk_set_error(MBK_EINVAL, "%s: subsystem %d is out of range; the system has %d", fn,
                             subsystem, mbk_system_get_num_subsystems(sys));
    if (subsystem == mbk_system_find_subsystem(sys, &ev_ops))
        return mbk_set_error(MBK_EINVAL, "%s: the events subsystem's directions are given when "
                                         "its events are added", fn);
    if (event_id < 0) return mbk_set_error(MBK_EINVAL, "%s: event id %d is negative", fn, event_id);
    ev_subsystem *ev = ev_get(sys, fn);
    if (!ev) return mbk_last_status();
    for (int i = 0; i < ev->ndirs; ++i)
        if (ev->dirs[i].subsystem == subsystem && ev->dirs[i].event_id == event_id) {
            ev->dirs[i].dir = direction;
            return MBK_OK;
        }
    if ((rc = grow((void **)&ev->dirs, &ev->cap_dirs, ev->ndirs, sizeof *ev->dirs)) < 0) return rc;
    ev->dirs[ev->ndirs++] = (ev_dir){subsystem, event_id, direction};
    return MBK_OK;
}

mbk_event_direction mbk_system_get_witness_direction(const mbk_system *sys, int subsystem,
                                                     int event_id)
{
    if (!sys || subsystem < 0 || subsystem >= mbk_system_get_num_subsystems(sys) || event_id < 0) {
        mbk_set_error(MBK_EINVAL, "mbk_system_get_witness_direction: bad system, subsystem %d or "
                                  "event id %d", subsystem, event_id);
        return (mbk_event_direction)0;
    }
    int k;
    const ev_subsystem *ev = ev_find(sys, &k);
    if (!ev) return MBK_ANY;
    if (k == subsystem) {
        if (!ev->slot || event_id >= ntotal(ev)) {
            mbk_set_error(MBK_EINVAL, "mbk_system_get_witness_direction: the events subsystem has no "
                                      "witness %d (is the topology realized?)", event_id);
            return (mbk_event_direction)0;
        }
        return ev->trig[ev->slot[event_id]].dir;
    }
    for (int i = 0; i < ev->ndirs; ++i)
        if (ev->dirs[i].subsystem == subsystem && ev->dirs[i].event_id == event_id) return ev->dirs[i].dir;
    return MBK_ANY;
}

int mbk_system_get_events_subsystem(const mbk_system *sys) { return mbk_system_find_subsystem(sys, &ev_ops); }

/* ------------------------------------------------------------------ */
/* Serving the integrators (and outside drivers)                        */
/* ------------------------------------------------------------------ */

static bool ev_is_reporter(const ev_subsystem *ev, int local_id)
{
    return ev && ev->slot && local_id >= 0 && local_id < ntotal(ev) &&
           ev->trig[ev->slot[local_id]].reporter != NULL;
}

bool mbk_system_is_event_reporter(const mbk_system *sys, int event_id)
{
    return ev_is_reporter(ev_find(sys, NULL), event_id);
}

int mbk_system_call_event_reporters(const mbk_system *sys, const mbk_state *s, const int *event_ids, int n)
{
    const ev_subsystem *ev = ev_find(sys, NULL);
    int ran = 0;
    for (int i = 0; event_ids && i < n; ++i)
        if (ev_is_reporter(ev, event_ids[i])) {
            const ev_trig *e = &ev->trig[ev->slot[event_ids[i]]];
            e->reporter(e->user, sys, s);
            ++ran;
        }
    return ran;
}

/* Smallest k * interval strictly after t. */
static double next_multiple(double interval, double t)
{
    double k = floor(t / interval) + 1.0;
    while ((k - 1.0) * interval > t) k -= 1.0;
    while (k * interval <= t) k += 1.0;
    return k * interval;
}

double mbk_system_get_next_report_time(const mbk_system *sys, double t)
{
    const ev_subsystem *ev = ev_find(sys, NULL);
    double best = INFINITY;
    for (int i = 0; ev && i < ev->nper; ++i) {
        double tn = next_multiple(ev->per[i].interval, t);
        if (tn < best) best = tn;
    }
    return best;
}

int mbk_system_call_periodic_reporters(const mbk_system *sys, const mbk_state *s, double t)
{
    const ev_subsystem *ev = ev_find(sys, NULL);
    int ran = 0;
    for (int i = 0; ev && i < ev->nper; ++i) {
        const ev_periodic *p = &ev->per[i];
        double k = nearbyint(t / p->interval);
        if (k * p->interval == t || (k - 1) * p->interval == t || (k + 1) * p->interval == t) {
            p->reporter(p->user, sys, s);
            ++ran;
        }
    }
    return ran;
}
