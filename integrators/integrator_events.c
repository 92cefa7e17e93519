/* The integrator driver's events: the layout of the active witnesses, the
 * subsystems' scheduled events, handlers and the restart after them, and
 * locating a triggered event on the step's Hermite interpolant. */
#include <math.h>
#include <stdio.h>
#include <string.h>

#include "integrator_impl.h"
#include "mbk/alloc.h"
#include "mbk/constraints.h"
#include "mbk/status.h"

/* ------------------------------------------------------------------ */
/* Layout: witnesses and per-subsystem buffers                          */
/* ------------------------------------------------------------------ */

int ig_grow_arr(void **p, int *cap, int n, size_t elem)
{
    if (n <= *cap) return MBK_OK;
    int c = *cap > 0 ? *cap : 8;
    while (c < n) c *= 2;
    void *q = mbk_realloc(*p, (size_t)c * elem);
    if (!q) return MBK_ENOMEM;
    *p = q;
    *cap = c;
    return MBK_OK;
}

/* Capacity for n witnesses in every witness array. */
static int reserve_witnesses(mbk_integrator *ig, int n)
{
    if (n <= ig->cap_w) return MBK_OK;
    int c = ig->cap_w > 0 ? ig->cap_w : 8;
    while (c < n) c *= 2;
#define RE(p)                                                                  \
    do {                                                                       \
        void *q = mbk_realloc(ig->p, (size_t)c * sizeof *ig->p);               \
        if (!q) return MBK_ENOMEM;                                             \
        ig->p = q;                                                             \
    } while (0)
    RE(w_sub);
    RE(w_id);
    RE(w_off);
    RE(w_stage);
    RE(w_dir);
    RE(w_rep);
    RE(fired);
    RE(w0);
    RE(w1);
    RE(wlo);
    RE(whi);
    RE(wmid);
#undef RE
    ig->cap_w = c;
    return MBK_OK;
}

/* Subsystem k's ops table (public: the integrators see the System through its API). */
static const mbk_subsystem_ops *ops_of(const mbk_integrator *ig, int k)
{
    return mbk_system_get_subsystem_ops(ig->sys, k);
}

/* Sizes, witnesses and buffers from `cur` (at Instance or later). May allocate. */
int ig_setup_layout(mbk_integrator *ig)
{
    mbk_state *s = ig->cur;
    int ny = mbk_state_get_ny(s);
    if (ny < 0) return ny;
    ig->ny = ny;
    int rc = ig_grow_arr((void **)&ig->yh, &ig->cap_y, ny > 0 ? ny : 1, sizeof *ig->yh);
    if (rc < 0) return rc;
    int nsub = mbk_system_get_num_subsystems(ig->sys);
    if (nsub != ig->nsub || !ig->acc) {
        ig_free_sched(ig);
        ig->nsub = nsub;
        int n = nsub > 0 ? nsub : 1;
        ig->acc = mbk_calloc((size_t)n, sizeof *ig->acc);
        ig->sched_t = mbk_calloc((size_t)n, sizeof *ig->sched_t);
        ig->sched_n = mbk_calloc((size_t)n, sizeof *ig->sched_n);
        ig->sched_cap = mbk_calloc((size_t)n, sizeof *ig->sched_cap);
        ig->sched_ids = mbk_calloc((size_t)n, sizeof *ig->sched_ids);
        if (!ig->acc || !ig->sched_t || !ig->sched_n || !ig->sched_cap || !ig->sched_ids) return MBK_ENOMEM;
        for (int k = 0; k < nsub; ++k) {
            if (!ops_of(ig, k)->next_scheduled_event) continue;
            ig->sched_ids[k] = mbk_malloc(8 * sizeof **ig->sched_ids);
            if (!ig->sched_ids[k]) return MBK_ENOMEM;
            ig->sched_cap[k] = 8;
        }
    }
    ig->ev_index = mbk_system_get_events_subsystem(ig->sys);

    int total = 0;
    for (int g = MBK_STAGE_TIME; g <= MBK_STAGE_REPORT; ++g) {
        int n = mbk_state_get_num_event_triggers(s, (mbk_stage)g);
        if (n < 0) return n;
        total += n;
    }
    if ((rc = reserve_witnesses(ig, total > 0 ? total : 1)) < 0) return rc;
    for (int k = 0; k < nsub; ++k) ig->acc[k] = 0;
    int nw = 0;
    ig->w_max_stage = MBK_STAGE_EMPTY;
    for (int g = MBK_STAGE_TIME; g <= MBK_STAGE_REPORT; ++g) {
        int n = mbk_state_get_num_event_triggers(s, (mbk_stage)g);
        if (n == 0) continue;
        const double *base = mbk_state_upd_event_triggers(s, 0, (mbk_stage)g);
        if (!base) return mbk_last_status();
        for (int k = 0; k < nsub; ++k) {
            int start = (int)(mbk_state_upd_event_triggers(s, k, (mbk_stage)g) - base);
            int end = k + 1 < nsub ? (int)(mbk_state_upd_event_triggers(s, k + 1, (mbk_stage)g) - base) : n;
            for (int j = start; j < end; ++j) {
                int local = ig->acc[k] + (j - start);
                bool active = k == ig->ev_index || ops_of(ig, k)->handle_events != NULL;
                if (!active) continue;
                mbk_event_direction dir = mbk_system_get_witness_direction(ig->sys, k, local);
                if ((int)dir == 0) return mbk_last_status();
                ig->w_sub[nw] = k;
                ig->w_id[nw] = local;
                ig->w_off[nw] = j;
                ig->w_stage[nw] = (mbk_stage)g;
                ig->w_dir[nw] = dir;
                ig->w_rep[nw] = k == ig->ev_index && mbk_system_is_event_reporter(ig->sys, local);
                ig->fired[nw] = false;
                ig->w_max_stage = (mbk_stage)g;
                ++nw;
            }
            ig->acc[k] += end - start;
        }
    }
    ig->nw = nw;
    return ig_grow_arr((void **)&ig->ids, &ig->cap_ids, nw + 16, sizeof *ig->ids);
}

/* ------------------------------------------------------------------ */
/* Events                                                               */
/* ------------------------------------------------------------------ */

bool ig_crossing(double a, double b, mbk_event_direction dir)
{
    bool rising = a < 0 && b >= 0, falling = a > 0 && b <= 0;
    return dir == MBK_RISING ? rising : dir == MBK_FALLING ? falling : (rising || falling);
}

/* Earliest scheduled event of every subsystem, after cur's time. */
int ig_query_scheduled(mbk_integrator *ig, double *t_sched)
{
    const mbk_state *s = ig->cur;
    double t = mbk_state_get_time(s), best = INFINITY;
    for (int k = 0; k < ig->nsub; ++k) {
        ig->sched_t[k] = INFINITY;
        ig->sched_n[k] = 0;
        if (!ops_of(ig, k)->next_scheduled_event) continue;
        double tn = INFINITY;
        int n = 0;
        for (int attempt = 0; attempt < 3; ++attempt) {
            tn = INFINITY;
            n = ig->sched_cap[k];
            mbk_clear_error();
            int rc = mbk_system_next_scheduled_event(ig->sys, k, s, &tn, ig->sched_ids[k], &n);
            if (rc != 0) {
                const char *why = mbk_last_error();
                return mbk_set_error(rc < 0 && rc == mbk_last_status() ? rc : MBK_EUSER,
                                     "subsystem %d ('%s') failed to report its next scheduled event "
                                     "(returned %d)%s%s", k, mbk_system_get_subsystem_name(ig->sys, k),
                                     rc, why[0] ? ": " : "", why);
            }
            if (tn == INFINITY || n <= ig->sched_cap[k]) break;
            int cap = ig->sched_cap[k];
            int rc2 = ig_grow_arr((void **)&ig->sched_ids[k], &cap, n, sizeof **ig->sched_ids);
            if (rc2 < 0) return rc2;
            ig->sched_cap[k] = cap;
        }
        if (tn == INFINITY) continue;
        if (!(tn > t) || n < 0 || n > ig->sched_cap[k])
            return mbk_set_error(MBK_EINVAL,
                                 "subsystem %d ('%s'): next_scheduled_event returned t_next = %.17g "
                                 "with %d events at t = %.17g; report a time after the State's time "
                                 "(or leave INFINITY) and at most the capacity asked for",
                                 k, mbk_system_get_subsystem_name(ig->sys, k), tn, n, t);
        ig->sched_t[k] = tn;
        ig->sched_n[k] = n;
        if (tn < best) best = tn;
    }
    *t_sched = best;
    return MBK_OK;
}

static int need_ids(mbk_integrator *ig, int n) { return ig_grow_arr((void **)&ig->ids, &ig->cap_ids, n, sizeof *ig->ids); }

/* After handlers changed the State from stage `lowest`: realize, project, resync, restart. */
static int after_change(mbk_integrator *ig, mbk_stage lowest)
{
    int rc;
    if (lowest <= MBK_STAGE_INSTANCE) {
        if ((rc = mbk_system_realize(ig->sys, ig->cur, MBK_STAGE_INSTANCE)) < 0) return rc;
        if ((rc = ig_setup_layout(ig)) < 0) return rc;
    }
    rc = mbk_system_project(ig->sys, ig->cur, ig->set.constraint_tol);
    ig->stats.projections++;
    if (rc < 0) return rc;
    ig->stats.rhs_evaluations++;
    if ((rc = ig_realize_full(ig, ig->cur)) < 0) return rc;
    if ((rc = ig_resync(ig)) < 0) return rc;
    if (lowest <= MBK_STAGE_ACCELERATION) {
        /* in-place integrators (CVODE, IDA) count their own restarts, when they happen */
        if (!(ig->flags & IG_IN_PLACE)) ig->stats.reinitializations++;
        if (ig->ops.reinitialize) {
            mbk_clear_error();
            rc = ig->ops.reinitialize(ig->impl, ig, lowest);
            if (rc != 0) return rc < 0 ? rc : MBK_EINTEGRATOR;
        }
    }
    return MBK_OK;
}

/* Run the handlers of the fired witnesses and of the scheduled events due at t.
   *nhandled counts the events given to handlers. */
int ig_handle_events(mbk_integrator *ig, double t, bool sched_due, int *nhandled, bool *terminate)
{
    *nhandled = 0;
    *terminate = false;
    mbk_state *s = ig->cur;
    int rc = mbk_state_copy(ig->spare, s); /* backup: the last good State */
    if (rc < 0) return rc;
    mbk_stage before = mbk_state_get_stage(s);
    mbk_event_result total = {MBK_STAGE_INFINITY, false};
    for (int k = 0; k < ig->nsub; ++k) {
        if (!ops_of(ig, k)->handle_events) continue;
        int n = 0;
        int extra = sched_due && ig->sched_t[k] == t ? ig->sched_n[k] : 0;
        if ((rc = need_ids(ig, ig->nw + extra + 1)) < 0) return rc;
        for (int i = 0; i < ig->nw; ++i)
            if (ig->fired[i] && ig->w_sub[i] == k && !ig->w_rep[i]) ig->ids[n++] = ig->w_id[i];
        for (int i = 0; i < extra; ++i) ig->ids[n++] = ig->sched_ids[k][i];
        if (n == 0) continue;
        mbk_event_result r = {MBK_STAGE_INFINITY, false};
        mbk_clear_error();
        rc = mbk_system_handle_events(ig->sys, k, s, ig->ids, n, &r);
        if (rc != 0) {
            const char *why = mbk_last_error();
            rc = mbk_set_error(rc < 0 && rc == mbk_last_status() ? rc : MBK_EUSER,
                               "subsystem %d ('%s') failed to handle %d event%s at t = %.17g "
                               "(returned %d)%s%s", k, mbk_system_get_subsystem_name(ig->sys, k), n,
                               n == 1 ? "" : "s", t, rc, why[0] ? ": " : "", why);
            goto restore;
        }
        if (r.lowest_modified < total.lowest_modified) total.lowest_modified = r.lowest_modified;
        total.terminate = total.terminate || r.terminate;
        *nhandled += n;
    }
    ig->stats.events_handled += *nhandled;
    if (mbk_state_get_time(s) != t) {
        rc = mbk_set_error(MBK_EUSER, "an event handler changed the time from %.17g to %.17g; "
                                      "handlers must not change t", t, mbk_state_get_time(s));
        goto restore;
    }
    mbk_stage now = mbk_state_get_stage(s);
    if (now < before && (int)now + 1 < (int)total.lowest_modified) total.lowest_modified = (mbk_stage)(now + 1);
    if (total.lowest_modified < MBK_STAGE_MODEL) total.lowest_modified = MBK_STAGE_MODEL;
    if (total.lowest_modified <= MBK_STAGE_REPORT) {
        rc = after_change(ig, total.lowest_modified);
        if (rc < 0) {
            rc = mbk_set_error(rc, "after the event handlers at t = %.17g: %s", t, mbk_last_error());
            goto restore;
        }
    } else if (!(ig->flags & IG_IN_PLACE)) {
        memcpy(ig->w0, ig->w1, (size_t)ig->nw * sizeof *ig->w0);
    }
    *terminate = total.terminate;
    return MBK_OK;

restore: {
    char msg[MBK_ERROR_MAX];
    snprintf(msg, sizeof msg, "%s", mbk_last_error());
    mbk_state_copy(s, ig->spare);
    /* the layout is rebuilt for the restored State (same witnesses as before the
       handlers); which ones fired is kept, so the events can be handled again */
    int nw = ig->nw;
    for (int i = 0; i < nw; ++i) ig->wmid[i] = ig->fired[i];
    if (ig_setup_layout(ig) == MBK_OK && ig_resync(ig) == MBK_OK && ig->ops.reinitialize)
        ig->ops.reinitialize(ig->impl, ig, MBK_STAGE_MODEL);
    if (ig->nw == nw)
        for (int i = 0; i < nw; ++i) ig->fired[i] = ig->wmid[i] != 0;
    return mbk_set_error(rc, "%s", msg);
}
}

/* Cubic Hermite interpolation of y between prev and cur. */
static void hermite(const mbk_integrator *ig, double t, double *y)
{
    double t0 = mbk_state_get_time(ig->prev), t1 = mbk_state_get_time(ig->cur), h = t1 - t0;
    const double *y0 = mbk_state_get_y(ig->prev), *y1 = mbk_state_get_y(ig->cur);
    const double *f0 = mbk_state_get_ydot(ig->prev), *f1 = mbk_state_get_ydot(ig->cur);
    double s = (t - t0) / h, s1 = 1.0 - s;
    double h00 = (1 + 2 * s) * s1 * s1, h10 = s * s1 * s1, h01 = s * s * (3 - 2 * s), h11 = s * s * (s - 1);
    for (int i = 0; i < ig->ny; ++i) y[i] = h00 * y0[i] + h01 * y1[i] + h * (h10 * f0[i] + h11 * f1[i]);
}

/* Witnesses at time t on the interpolant. */
static int probe(mbk_integrator *ig, double t, double *w)
{
    mbk_state *p = ig->probe;
    hermite(ig, t, ig->yh);
    int rc;
    if ((rc = mbk_state_set_time(p, t)) < 0 || (rc = mbk_state_set_y(p, ig->yh, ig->ny)) < 0) return rc;
    ig->stats.witness_evaluations++;
    mbk_stage st = ig->w_max_stage > MBK_STAGE_TIME ? ig->w_max_stage : MBK_STAGE_TIME;
    if ((rc = mbk_system_realize(ig->sys, p, st)) < 0) return rc;
    return ig_read_witnesses(ig, p, w);
}

/* Narrow the first crossing between prev (w0) and cur (w1) to a window of
   the event tolerance; fired[] gets the witnesses that cross in it. */
int ig_localize(mbk_integrator *ig, double *tlo_out, double *thi_out)
{
    int nw = ig->nw;
    double tlo = mbk_state_get_time(ig->prev), thi = mbk_state_get_time(ig->cur);
    memcpy(ig->wlo, ig->w0, (size_t)nw * sizeof(double));
    memcpy(ig->whi, ig->w1, (size_t)nw * sizeof(double));
    double tol = fmax(ig->set.event_tol, 4 * ig_min_step(ig, thi));
    /* Illinois: the end that stays put has its witness values halved in the secant
       formula each further time, so neither end stalls; bisection as a fallback. */
    double alo = 1.0, ahi = 1.0;
    int last = 0;
    for (int iter = 0; thi - tlo > tol && iter < 200; ++iter) {
        double tg = thi;
        for (int i = 0; i < nw; ++i) {
            if (!ig_crossing(ig->wlo[i], ig->whi[i], ig->w_dir[i])) continue;
            double a = alo * ig->wlo[i], b = ahi * ig->whi[i];
            double frac = a == b ? 0.5 : a / (a - b);
            double tc = tlo + frac * (thi - tlo);
            if (tc < tg) tg = tc;
        }
        if (iter >= 12 || !isfinite(tg)) tg = 0.5 * (tlo + thi);
        double half = 0.5 * tol;
        if (tg < tlo + half) tg = tlo + half;
        if (tg > thi - half) tg = thi - half;
        int rc = probe(ig, tg, ig->wmid);
        if (rc < 0) return rc;
        bool cross = false;
        for (int i = 0; i < nw && !cross; ++i) cross = ig_crossing(ig->wlo[i], ig->wmid[i], ig->w_dir[i]);
        if (cross) {
            thi = tg;
            memcpy(ig->whi, ig->wmid, (size_t)nw * sizeof(double));
            ahi = 1.0;
            if (last == 1) alo *= 0.5;
            last = 1;
        } else {
            tlo = tg;
            memcpy(ig->wlo, ig->wmid, (size_t)nw * sizeof(double));
            alo = 1.0;
            if (last == -1) ahi *= 0.5;
            last = -1;
        }
    }
    for (int i = 0; i < nw; ++i) ig->fired[i] = ig_crossing(ig->wlo[i], ig->whi[i], ig->w_dir[i]);
    *tlo_out = tlo;
    *thi_out = thi;
    return MBK_OK;
}

/* ------------------------------------------------------------------ */
