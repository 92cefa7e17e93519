/* Event witnesses and handlers as calls an outside event driver can make
 * (an external integrator with its own root finder): the list of active
 * witnesses with their directions, their values in one call, crossings by
 * the library's own rule, and the handlers, reporters and scheduled events
 * dispatched to their subsystems as the library's driver does.
 *
 * The active witnesses are those the library's integrators watch: every
 * witness of the events subsystem, and the witnesses of other subsystems
 * that have a handle_events op. They are numbered stage by stage (Time ..
 * Report), within a stage by subsystem, within a subsystem by slot: the
 * order of integrators/integrator_events.c. Nothing here allocates: the
 * order is recomputed from the State's trigger layout on each call. */
#include <math.h>
#include <string.h>

#include "mbk/external.h"
#include "mbk/state.h"
#include "mbk/status.h"
#include "mbk/system.h"

/* Most fired witnesses, and most events of one subsystem, at one time (mbk_system_handle_events_at). */
enum { MAX_IDS = MBK_MAX_SIMULTANEOUS_EVENTS };

typedef struct wit {
    int k;       /* subsystem */
    int id;      /* its event id (slot number over its stages in order) */
    int off;     /* offset in the State's triggers of stage g */
    mbk_stage g; /* stage */
} wit;

/* A subsystem's [start, end) among the triggers of stage g (n of them). */
static void span(const mbk_state *s, int nsub, int k, mbk_stage g, int n, const double *base, int *start, int *end)
{
    *start = (int)(mbk_state_upd_event_triggers(s, k, g) - base);
    *end = k + 1 < nsub ? (int)(mbk_state_upd_event_triggers(s, k + 1, g) - base) : n;
}

/* Visit the active witnesses in order; fn returns nonzero to stop (returned). The
   State must be at Instance or later (checked by the callers). */
static int each_witness(const mbk_system *sys, const mbk_state *s, int (*fn)(void *ctx, int i, const wit *w),
                        void *ctx)
{
    int nsub = mbk_system_get_num_subsystems(sys), ev = mbk_system_get_events_subsystem(sys), i = 0;
    for (int g = MBK_STAGE_TIME; g <= MBK_STAGE_REPORT; ++g) {
        int n = mbk_state_get_num_event_triggers(s, (mbk_stage)g);
        if (n < 0) return n;
        if (n == 0) continue;
        const double *base = mbk_state_upd_event_triggers(s, 0, (mbk_stage)g);
        if (!base) return mbk_last_status();
        for (int k = 0; k < nsub; ++k) {
            if (k != ev && !mbk_system_get_subsystem_ops(sys, k)->handle_events) continue;
            int start, end, before = 0;
            span(s, nsub, k, (mbk_stage)g, n, base, &start, &end);
            if (end == start) continue;
            for (int h = MBK_STAGE_TIME; h < g; ++h) { /* k's slots at earlier stages */
                int nh = mbk_state_get_num_event_triggers(s, (mbk_stage)h), a, b;
                if (nh <= 0) continue;
                span(s, nsub, k, (mbk_stage)h, nh, mbk_state_upd_event_triggers(s, 0, (mbk_stage)h), &a, &b);
                before += b - a;
            }
            for (int j = start; j < end; ++j) {
                wit w = {k, before + j - start, j, (mbk_stage)g};
                int rc = fn(ctx, i++, &w);
                if (rc != 0) return rc;
            }
        }
    }
    return MBK_OK;
}

/* sys and s usable, s at Instance or later. */
static int need(const mbk_system *sys, const mbk_state *s, const char *fn)
{
    if (!sys) return mbk_set_error(MBK_EINVAL, "%s: system is NULL", fn);
    int rc = mbk_system_check_state(sys, s);
    if (rc < 0) return rc;
    if (mbk_state_get_stage(s) < MBK_STAGE_INSTANCE)
        return mbk_set_error(MBK_ESTAGE, "%s: the State is realized only to %s; realize to Instance first", fn,
                             mbk_stage_name(mbk_state_get_stage(s)));
    return MBK_OK;
}

static int count_one(void *ctx, int i, const wit *w)
{
    (void)i;
    (void)w;
    ++*(int *)ctx;
    return 0;
}

int mbk_system_get_num_witnesses(const mbk_system *sys, const mbk_state *s)
{
    int rc = need(sys, s, "mbk_system_get_num_witnesses"), n = 0;
    if (rc < 0) return rc;
    rc = each_witness(sys, s, count_one, &n);
    return rc < 0 ? rc : n;
}

typedef struct info_ctx {
    const mbk_system *sys;
    mbk_witness_info *info;
    mbk_stage top;
} info_ctx;

static int info_one(void *ctx, int i, const wit *w)
{
    info_ctx *c = ctx;
    mbk_event_direction dir = mbk_system_get_witness_direction(c->sys, w->k, w->id);
    if ((int)dir == 0) return mbk_last_status();
    if (w->g > c->top) c->top = w->g;
    if (!c->info) return 0;
    int ev = mbk_system_get_events_subsystem(c->sys);
    c->info[i] = (mbk_witness_info){w->k, w->id, w->g, dir, w->k == ev && mbk_system_is_event_reporter(c->sys, w->id)};
    return 0;
}

int mbk_system_get_witness_info(const mbk_system *sys, const mbk_state *s, mbk_witness_info *info)
{
    const char *fn = "mbk_system_get_witness_info";
    int rc = need(sys, s, fn);
    if (rc < 0) return rc;
    if (!info) return mbk_set_error(MBK_EINVAL, "%s: info is NULL", fn);
    info_ctx c = {sys, info, MBK_STAGE_TIME};
    rc = each_witness(sys, s, info_one, &c);
    return rc < 0 ? rc : MBK_OK;
}

int mbk_system_get_witness_stage(const mbk_system *sys, const mbk_state *s, mbk_stage *stage)
{
    const char *fn = "mbk_system_get_witness_stage";
    int rc = need(sys, s, fn);
    if (rc < 0) return rc;
    if (!stage) return mbk_set_error(MBK_EINVAL, "%s: stage is NULL", fn);
    info_ctx c = {sys, NULL, MBK_STAGE_TIME};
    if ((rc = each_witness(sys, s, info_one, &c)) < 0) return rc;
    *stage = c.top;
    return MBK_OK;
}

typedef struct value_ctx {
    const mbk_system *sys;
    const mbk_state *s;
    double *w;
    mbk_event_direction *dir;
} value_ctx;

static int value_one(void *ctx, int i, const wit *w)
{
    value_ctx *c = ctx;
    const double *p = mbk_state_get_event_triggers(c->s, w->g);
    if (!p)
        return mbk_set_error(MBK_ESTAGE, "mbk_system_get_witnesses: witness %d is evaluated at %s and the State "
                             "is realized only to %s; realize to %s first (mbk_system_get_witness_stage)", i,
                             mbk_stage_name(w->g), mbk_stage_name(mbk_state_get_stage(c->s)), mbk_stage_name(w->g));
    if (c->w) c->w[i] = p[w->off];
    if (c->dir) {
        c->dir[i] = mbk_system_get_witness_direction(c->sys, w->k, w->id);
        if ((int)c->dir[i] == 0) return mbk_last_status();
    }
    return 0;
}

int mbk_system_get_witnesses(const mbk_system *sys, const mbk_state *s, double *w, mbk_event_direction *directions)
{
    const char *fn = "mbk_system_get_witnesses";
    int rc = need(sys, s, fn);
    if (rc < 0) return rc;
    if (!w && !directions) return mbk_set_error(MBK_EINVAL, "%s: w and directions are both NULL", fn);
    value_ctx c = {sys, s, w, directions};
    rc = each_witness(sys, s, value_one, &c);
    return rc < 0 ? rc : MBK_OK;
}

int mbk_system_calc_witnesses(const mbk_system *sys, mbk_state *s, double t, const double *y, double *w)
{
    const char *fn = "mbk_system_calc_witnesses";
    if (!sys) return mbk_set_error(MBK_EINVAL, "%s: system is NULL", fn);
    if (!w) return mbk_set_error(MBK_EINVAL, "%s: w is NULL", fn);
    int rc = mbk_system_realize(sys, s, MBK_STAGE_INSTANCE);
    if (rc < 0) return rc;
    mbk_stage top;
    if ((rc = mbk_system_get_witness_stage(sys, s, &top)) < 0) return rc;
    if ((rc = mbk_system_set_y_and_realize(sys, s, t, y, top)) < 0)
        return mbk_set_error(rc, "%s: %s", fn, mbk_last_error());
    return mbk_system_get_witnesses(sys, s, w, NULL);
}

/* The library's rule: rising from < 0 to >= 0, falling from > 0 to <= 0. */
static bool crossing(double a, double b, mbk_event_direction dir)
{
    bool rising = a < 0 && b >= 0, falling = a > 0 && b <= 0;
    return dir == MBK_RISING ? rising : dir == MBK_FALLING ? falling : (rising || falling);
}

typedef struct cross_ctx {
    const mbk_system *sys;
    const double *w0, *w1;
    int *fired;
    int count;
} cross_ctx;

static int cross_one(void *ctx, int i, const wit *w)
{
    cross_ctx *c = ctx;
    mbk_event_direction dir = mbk_system_get_witness_direction(c->sys, w->k, w->id);
    if ((int)dir == 0) return mbk_last_status();
    bool hit = crossing(c->w0[i], c->w1[i], dir);
    if (c->fired) c->fired[i] = hit;
    c->count += hit;
    return 0;
}

int mbk_system_find_witness_crossings(const mbk_system *sys, const mbk_state *s, const double *w_before,
                                      const double *w_after, int *fired)
{
    const char *fn = "mbk_system_find_witness_crossings";
    int rc = need(sys, s, fn);
    if (rc < 0) return rc;
    if (!w_before || !w_after) return mbk_set_error(MBK_EINVAL, "%s: %s is NULL", fn, !w_before ? "w_before" : "w_after");
    const int nw = mbk_system_get_num_witnesses(sys, s);
    if (nw < 0) return nw;
    for (int which = 0; which < 2; ++which) { /* a NaN compares false both ways: it would never cross */
        const double *w = which ? w_after : w_before;
        const int k = mbk_find_nonfinite(w, nw);
        if (k >= 0)
            return mbk_set_error(MBK_ENOTFINITE, "%s: %s[%d] = %g is not finite", fn, which ? "w_after" : "w_before",
                                 k, w[k]);
    }
    cross_ctx c = {sys, w_before, w_after, fired, 0};
    rc = each_witness(sys, s, cross_one, &c);
    return rc < 0 ? rc : c.count;
}

/* Collect the fired witnesses' (subsystem, id): handlers (reporters false) or the
   events subsystem's reporters (reporters true). */
typedef struct collect_ctx {
    const mbk_system *sys;
    const int *fired;
    int ev, n;
    int *sub, *ids;
    bool reporters;
} collect_ctx;

static int collect_one(void *ctx, int i, const wit *w)
{
    collect_ctx *c = ctx;
    if (!c->fired[i]) return 0;
    bool rep = w->k == c->ev && mbk_system_is_event_reporter(c->sys, w->id);
    if (rep != c->reporters) return 0;
    if (c->n == MAX_IDS)
        return mbk_set_error(MBK_EINVAL, "more than %d fired witnesses at one time; handle them in groups "
                             "with mbk_system_handle_events", MAX_IDS);
    c->sub[c->n] = w->k;
    c->ids[c->n++] = w->id;
    return 0;
}

int mbk_system_handle_events_at(const mbk_system *sys, const mbk_state *from, mbk_state *s, const int *fired,
                                mbk_event_result *result)
{
    const char *fn = "mbk_system_handle_events_at";
    int rc = need(sys, s, fn);
    if (rc < 0) return rc;
    if (!result) return mbk_set_error(MBK_EINVAL, "%s: result is NULL", fn);
    if (from && (rc = mbk_system_check_state(sys, from)) < 0) return rc;
    double t = mbk_state_get_time(s);
    if (from && !(mbk_state_get_time(from) < t))
        return mbk_set_error(MBK_EINVAL, "%s: `from` is at t = %.17g, not before the State's t = %.17g; give the "
                             "State the step started from (or NULL for no scheduled events)", fn,
                             mbk_state_get_time(from), t);
    *result = (mbk_event_result){MBK_STAGE_INFINITY, false};
    int nsub = mbk_system_get_num_subsystems(sys), ev = mbk_system_get_events_subsystem(sys), handled = 0;
    /* every fired witness first, while the State's witness layout is the one `fired`
       refers to: a handler may change an Instance-stage variable and drop the State
       below Instance */
    int fsub[MAX_IDS], fid[MAX_IDS], ids[MAX_IDS];
    collect_ctx c = {sys, fired, ev, 0, fsub, fid, false};
    if (fired && (rc = each_witness(sys, s, collect_one, &c)) < 0) return mbk_set_error(rc, "%s: %s", fn, mbk_last_error());
    for (int k = 0; k < nsub; ++k) {
        const mbk_subsystem_ops *ops = mbk_system_get_subsystem_ops(sys, k);
        if (!ops->handle_events) continue;
        int n = 0;
        for (int i = 0; i < c.n; ++i)
            if (fsub[i] == k) ids[n++] = fid[i];
        if (from && ops->next_scheduled_event) { /* those due at exactly t */
            double tn = INFINITY;
            int ns = MAX_IDS - n;
            mbk_clear_error();
            rc = mbk_system_next_scheduled_event(sys, k, from, &tn, ids + n, &ns);
            if (rc != 0)
                return mbk_set_error(rc < 0 && rc == mbk_last_status() ? rc : MBK_EUSER, "%s: subsystem %d failed "
                                     "to report its next scheduled event: %s", fn, k, mbk_last_error());
            if (tn == t) {
                if (ns > MAX_IDS - n)
                    return mbk_set_error(MBK_EINVAL, "%s: more than %d events of subsystem %d at t = %.17g", fn,
                                         MAX_IDS, k, t);
                n += ns;
            } else if (tn < t) {
                return mbk_set_error(MBK_EINVAL, "%s: subsystem %d has a scheduled event at t = %.17g, between "
                                     "`from` and the State (t = %.17g): step to it first "
                                     "(mbk_system_get_next_scheduled_time)", fn, k, tn, t);
            }
        }
        if (n == 0) continue;
        mbk_event_result r = {MBK_STAGE_INFINITY, false};
        mbk_clear_error();
        rc = mbk_system_handle_events(sys, k, s, ids, n, &r);
        if (rc != 0)
            return mbk_set_error(rc < 0 && rc == mbk_last_status() ? rc : MBK_EUSER, "%s: subsystem %d ('%s') "
                                 "failed to handle %d event%s at t = %.17g: %s", fn, k,
                                 mbk_system_get_subsystem_name(sys, k), n, n == 1 ? "" : "s", t,
                                 mbk_last_error());
        if (r.lowest_modified < result->lowest_modified) result->lowest_modified = r.lowest_modified;
        result->terminate = result->terminate || r.terminate;
        handled += n;
    }
    if (mbk_state_get_time(s) != t)
        return mbk_set_error(MBK_EUSER, "%s: an event handler changed the time from %.17g to %.17g; handlers must "
                             "not change t", fn, t, mbk_state_get_time(s));
    return handled;
}

int mbk_system_call_witness_reporters(const mbk_system *sys, const mbk_state *s, const int *fired)
{
    const char *fn = "mbk_system_call_witness_reporters";
    int rc = need(sys, s, fn);
    if (rc < 0) return rc;
    int ev = mbk_system_get_events_subsystem(sys);
    if (!fired || ev < 0) return 0;
    int sub[MAX_IDS], ids[MAX_IDS];
    collect_ctx c = {sys, fired, ev, 0, sub, ids, true};
    if ((rc = each_witness(sys, s, collect_one, &c)) < 0) return rc;
    return mbk_system_call_event_reporters(sys, s, ids, c.n);
}

int mbk_system_get_next_scheduled_time(const mbk_system *sys, const mbk_state *s, double *t_next)
{
    const char *fn = "mbk_system_get_next_scheduled_time";
    int rc = need(sys, s, fn);
    if (rc < 0) return rc;
    if (!t_next) return mbk_set_error(MBK_EINVAL, "%s: t_next is NULL", fn);
    double best = INFINITY;
    int ids[MAX_IDS];
    for (int k = 0; k < mbk_system_get_num_subsystems(sys); ++k) {
        if (!mbk_system_get_subsystem_ops(sys, k)->next_scheduled_event) continue;
        double tn = INFINITY;
        int n = MAX_IDS;
        mbk_clear_error();
        rc = mbk_system_next_scheduled_event(sys, k, s, &tn, ids, &n);
        if (rc != 0)
            return mbk_set_error(rc < 0 && rc == mbk_last_status() ? rc : MBK_EUSER, "%s: subsystem %d failed to "
                                 "report its next scheduled event: %s", fn, k, mbk_last_error());
        if (tn < best) best = tn;
    }
    *t_next = best;
    return MBK_OK;
}
