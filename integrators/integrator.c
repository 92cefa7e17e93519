/* The integrator driver: settings, States, the time stepper
 * (mbk_integrator_step_to), triggered and scheduled events, reporters and
 * failure handling, shared by every integrator. */
#include <float.h>
#include <math.h>
#include <stdio.h>
#include <string.h>

#include "integrator_impl.h"
#include "mbk/alloc.h"
#include "mbk/constraints.h"
#include "mbk/status.h"

enum { DRIVE_STEPPED = 100, MAX_LOCALIZE_BACKUPS = 4 };

/* ------------------------------------------------------------------ */
/* Creation and settings                                                */
/* ------------------------------------------------------------------ */

mbk_integrator *ig_create(const mbk_system *sys, const mbk_integrator_ops *ops, void *impl, int flags)
{
    const char *fn = "mbk_integrator_create";
    if (!sys || !ops || !ops->step) {
        if (ops && ops->destroy && impl) ops->destroy(impl);
        mbk_set_error(MBK_EINVAL, "%s: %s", fn,
                      !sys ? "system is NULL" : !ops ? "ops table is NULL" : "ops->step is NULL");
        return NULL;
    }
    mbk_integrator *ig = mbk_calloc(1, sizeof *ig);
    if (!ig) {
        if (ops->destroy && impl) ops->destroy(impl);
        return NULL;
    }
    ig->sys = sys;
    ig->ops = *ops;
    if (!ig->ops.name) ig->ops.name = "custom integrator";
    if (ig->ops.order < 1) ig->ops.order = 1;
    ig->impl = impl;
    ig->flags = flags;
    ig->set = (mbk_integrator_settings){.accuracy = 1e-3, .rel_tol = 1e-3, .abs_tol = 1e-3,
                                        .constraint_tol = 1e-3, .event_tol = 1e-4,
                                        .fixed_step = 0, .initial_step = 0, .min_step = 0,
                                        .max_step = INFINITY, .max_steps = 100000,
                                        .use_system_jacobian = true, .project_error_estimate = true,
                                        .jacobian_source = MBK_JACOBIAN_ANALYTIC};
    ig->cur = mbk_state_create();
    ig->prev = mbk_state_create();
    ig->spare = mbk_state_create();
    ig->scratch = mbk_state_create();
    ig->probe = mbk_state_create();
    ig->ev_index = -1;
    ig->loc_target = INFINITY;
    if (!ig->cur || !ig->prev || !ig->spare || !ig->scratch || !ig->probe) {
        mbk_integrator_destroy(ig);
        return NULL;
    }
    return ig;
}

mbk_integrator *mbk_integrator_create_custom(const mbk_system *sys, const mbk_integrator_ops *ops,
                                             void *impl)
{
    return ig_create(sys, ops, impl, 0);
}

void ig_free_sched(mbk_integrator *ig)
{
    for (int k = 0; ig->sched_ids && k < ig->nsub; ++k) mbk_free(ig->sched_ids[k]);
    mbk_free(ig->sched_ids);
    mbk_free(ig->sched_t);
    mbk_free(ig->sched_n);
    mbk_free(ig->sched_cap);
    mbk_free(ig->acc);
    ig->sched_ids = NULL;
    ig->sched_t = NULL;
    ig->sched_n = ig->sched_cap = ig->acc = NULL;
}

void mbk_integrator_destroy(mbk_integrator *ig)
{
    if (!ig) return;
    if (ig->ops.destroy && ig->impl) ig->ops.destroy(ig->impl);
    mbk_state_destroy(ig->cur);
    mbk_state_destroy(ig->prev);
    mbk_state_destroy(ig->spare);
    mbk_state_destroy(ig->scratch);
    mbk_state_destroy(ig->probe);
    mbk_free(ig->w_sub);
    mbk_free(ig->w_id);
    mbk_free(ig->w_off);
    mbk_free(ig->w_stage);
    mbk_free(ig->w_dir);
    mbk_free(ig->w_rep);
    mbk_free(ig->fired);
    mbk_free(ig->w0);
    mbk_free(ig->w1);
    mbk_free(ig->wlo);
    mbk_free(ig->whi);
    mbk_free(ig->wmid);
    mbk_free(ig->yh);
    mbk_free(ig->ids);
    ig_free_sched(ig);
    mbk_free(ig);
}

const char *mbk_integrator_get_name(const mbk_integrator *ig) { return ig ? ig->ops.name : NULL; }

#define NEED_IG(ig, fn)                                                              \
    do {                                                                             \
        if (!(ig)) return mbk_set_error(MBK_EINVAL, "%s: integrator is NULL", fn);   \
    } while (0)

static int changed(mbk_integrator *ig)
{
    ig->settings_changed = true;
    return MBK_OK;
}

int mbk_integrator_set_accuracy(mbk_integrator *ig, double acc)
{
    const char *fn = "mbk_integrator_set_accuracy";
    NEED_IG(ig, fn);
    if (!(acc > 0 && acc < 1))
        return mbk_set_error(MBK_EINVAL, "%s: accuracy %g must be in (0, 1); 1e-3 is the default, "
                                         "1e-6 to 1e-8 for precise work", fn, acc);
    ig->set.accuracy = ig->set.rel_tol = ig->set.abs_tol = acc;
    if (!ig->cons_tol_given) ig->set.constraint_tol = acc;
    if (!ig->event_tol_given) ig->set.event_tol = 0.1 * acc;
    return changed(ig);
}

int mbk_integrator_set_tolerances(mbk_integrator *ig, double rel_tol, double abs_tol)
{
    const char *fn = "mbk_integrator_set_tolerances";
    NEED_IG(ig, fn);
    if (!(rel_tol >= 0 && abs_tol >= 0 && rel_tol < 1 && isfinite(abs_tol)) ||
        (rel_tol == 0 && abs_tol == 0))
        return mbk_set_error(MBK_EINVAL, "%s: tolerances rel %g, abs %g: need 0 <= rel < 1, "
                                         "finite abs >= 0, not both 0", fn, rel_tol, abs_tol);
    ig->set.rel_tol = rel_tol;
    ig->set.abs_tol = abs_tol;
    ig->set.accuracy = rel_tol > 0 ? rel_tol : abs_tol;
    return changed(ig);
}

static int positive(mbk_integrator *ig, double v, bool allow_zero, bool allow_inf, const char *fn,
                    const char *what)
{
    NEED_IG(ig, fn);
    if ((allow_zero ? !(v >= 0) : !(v > 0)) || (!allow_inf && !isfinite(v)))
        return mbk_set_error(MBK_EINVAL, "%s: %s %g must be %s", fn, what, v,
                             allow_zero ? "finite and >= 0" : allow_inf ? "> 0" : "finite and > 0");
    return MBK_OK;
}

int mbk_integrator_set_constraint_tolerance(mbk_integrator *ig, double tol)
{
    int rc = positive(ig, tol, false, false, "mbk_integrator_set_constraint_tolerance", "tolerance");
    if (rc < 0) return rc;
    ig->set.constraint_tol = tol;
    ig->cons_tol_given = true;
    return changed(ig);
}

int mbk_integrator_set_event_tolerance(mbk_integrator *ig, double dt)
{
    int rc = positive(ig, dt, false, false, "mbk_integrator_set_event_tolerance", "tolerance");
    if (rc < 0) return rc;
    ig->set.event_tol = dt;
    ig->event_tol_given = true;
    return changed(ig);
}

int mbk_integrator_set_fixed_step(mbk_integrator *ig, double h)
{
    const char *fn = "mbk_integrator_set_fixed_step";
    int rc = positive(ig, h, true, false, fn, "step");
    if (rc < 0) return rc;
    if (h > 0 && (ig->flags & IG_IN_PLACE))
        return mbk_set_error(MBK_EINVAL, "%s: %s is a variable-step method; limit its steps with "
                                         "mbk_integrator_set_max_step instead", fn, ig->ops.name);
    ig->set.fixed_step = h;
    return changed(ig);
}

int mbk_integrator_set_initial_step(mbk_integrator *ig, double h)
{
    int rc = positive(ig, h, true, false, "mbk_integrator_set_initial_step", "step");
    if (rc < 0) return rc;
    ig->set.initial_step = h;
    return changed(ig);
}

int mbk_integrator_set_min_step(mbk_integrator *ig, double h)
{
    int rc = positive(ig, h, true, false, "mbk_integrator_set_min_step", "step");
    if (rc < 0) return rc;
    if (h > ig->set.max_step)
        return mbk_set_error(MBK_EINVAL, "mbk_integrator_set_min_step: %g is above the maximum step %g",
                             h, ig->set.max_step);
    ig->set.min_step = h;
    return changed(ig);
}

int mbk_integrator_set_max_step(mbk_integrator *ig, double h)
{
    int rc = positive(ig, h, false, true, "mbk_integrator_set_max_step", "step");
    if (rc < 0) return rc;
    if (h < ig->set.min_step)
        return mbk_set_error(MBK_EINVAL, "mbk_integrator_set_max_step: %g is below the minimum step %g",
                             h, ig->set.min_step);
    ig->set.max_step = h;
    return changed(ig);
}

int mbk_integrator_set_max_steps(mbk_integrator *ig, long n)
{
    NEED_IG(ig, "mbk_integrator_set_max_steps");
    if (n <= 0) return mbk_set_error(MBK_EINVAL, "mbk_integrator_set_max_steps: %ld must be > 0", n);
    ig->set.max_steps = n;
    return changed(ig);
}

int mbk_integrator_set_use_system_jacobian(mbk_integrator *ig, bool on)
{
    NEED_IG(ig, "mbk_integrator_set_use_system_jacobian");
    /* on keeps a chosen mbk source (analytic or mbk's differences); off is SUNDIALS' */
    if (!on) ig->set.jacobian_source = MBK_JACOBIAN_SUNDIALS_DQ;
    else if (ig->set.jacobian_source == MBK_JACOBIAN_SUNDIALS_DQ) ig->set.jacobian_source = MBK_JACOBIAN_ANALYTIC;
    ig->set.use_system_jacobian = on;
    return changed(ig);
}

int mbk_integrator_set_jacobian_source(mbk_integrator *ig, mbk_jacobian_source source)
{
    NEED_IG(ig, "mbk_integrator_set_jacobian_source");
    if (source != MBK_JACOBIAN_ANALYTIC && source != MBK_JACOBIAN_FD && source != MBK_JACOBIAN_SUNDIALS_DQ)
        return mbk_set_error(MBK_EINVAL, "mbk_integrator_set_jacobian_source: %d is not MBK_JACOBIAN_ANALYTIC, "
                                         "MBK_JACOBIAN_FD or MBK_JACOBIAN_SUNDIALS_DQ", (int)source);
    ig->set.jacobian_source = source;
    ig->set.use_system_jacobian = source != MBK_JACOBIAN_SUNDIALS_DQ;
    return changed(ig);
}

int mbk_integrator_set_project_error_estimate(mbk_integrator *ig, bool on)
{
    NEED_IG(ig, "mbk_integrator_set_project_error_estimate");
    ig->set.project_error_estimate = on;
    return changed(ig);
}

int mbk_integrator_get_settings(const mbk_integrator *ig, mbk_integrator_settings *out)
{
    NEED_IG(ig, "mbk_integrator_get_settings");
    if (!out) return mbk_set_error(MBK_EINVAL, "mbk_integrator_get_settings: out is NULL");
    *out = ig->set;
    return MBK_OK;
}

/* ------------------------------------------------------------------ */
/* Small accessors                                                      */
/* ------------------------------------------------------------------ */

const mbk_state *mbk_integrator_get_state(const mbk_integrator *ig)
{
    if (!ig || !ig->initialized) {
        mbk_set_error(MBK_EINVAL, "mbk_integrator_get_state: %s",
                      ig ? "call mbk_integrator_initialize first" : "integrator is NULL");
        return NULL;
    }
    return ig->cur;
}

double mbk_integrator_get_time(const mbk_integrator *ig)
{
    return ig && ig->initialized ? mbk_state_get_time(ig->cur) : NAN;
}

double mbk_integrator_get_previous_step_size(const mbk_integrator *ig) { return ig ? ig->h_prev : 0; }
double mbk_integrator_get_predicted_step_size(const mbk_integrator *ig) { return ig ? ig->h_pred : 0; }

void mbk_integrator_get_stats(const mbk_integrator *ig, mbk_integrator_stats *stats)
{
    if (!stats) return;
    if (ig) *stats = ig->stats;
    else memset(stats, 0, sizeof *stats);
}

void *mbk_integrator_get_impl(const mbk_integrator *ig) { return ig ? ig->impl : NULL; }
const mbk_system *mbk_integrator_get_system(const mbk_integrator *ig) { return ig ? ig->sys : NULL; }
mbk_integrator_stats *mbk_integrator_upd_stats(mbk_integrator *ig) { return ig ? &ig->stats : NULL; }
mbk_state *ig_upd_cur(mbk_integrator *ig) { return ig->cur; }

double ig_min_step(const mbk_integrator *ig, double t)
{
    double round = 32.0 * DBL_EPSILON * fmax(1.0, fabs(t));
    return fmax(ig->set.min_step, round);
}

/* Stage `cur` must reach after a step: Acceleration, or the witnesses' stage. */
static mbk_stage needed_stage(const mbk_integrator *ig)
{
    return ig->w_max_stage > MBK_STAGE_ACCELERATION ? ig->w_max_stage : MBK_STAGE_ACCELERATION;
}

int ig_read_witnesses(const mbk_integrator *ig, const mbk_state *s, double *w)
{
    for (int i = 0; i < ig->nw; ++i) {
        const double *p = mbk_state_get_event_triggers(s, ig->w_stage[i]);
        if (!p) return mbk_last_status();
        w[i] = p[ig->w_off[i]];
    }
    return MBK_OK;
}

/* Realize `s` to what the driver needs and check its derivative. */
int ig_realize_full(mbk_integrator *ig, mbk_state *s)
{
    int rc = mbk_system_realize(ig->sys, s, needed_stage(ig));
    if (rc < 0) return rc;
    return mbk_state_check_ydot(s);
}

/* Copy cur into every other State and read the witnesses. */
int ig_resync(mbk_integrator *ig)
{
    int rc;
    if ((rc = mbk_state_copy(ig->prev, ig->cur)) < 0 || (rc = mbk_state_copy(ig->spare, ig->cur)) < 0 ||
        (rc = mbk_state_copy(ig->scratch, ig->cur)) < 0 || (rc = mbk_state_copy(ig->probe, ig->cur)) < 0)
        return rc;
    ig->prev_valid = false;
    return ig_read_witnesses(ig, ig->cur, ig->w0);
}

/* ------------------------------------------------------------------ */
/* Initialization                                                       */
/* ------------------------------------------------------------------ */

static int init_fail(mbk_integrator *ig, int rc)
{
    ig->initialized = false;
    return mbk_set_error(rc, "mbk_integrator_initialize (%s): %s", ig->ops.name, mbk_last_error());
}

/* A State initialize refuses before it changes anything (the run so far goes on). */
static int init_refused(const mbk_integrator *ig, int rc)
{
    return mbk_set_error(rc, "mbk_integrator_initialize (%s): %s; the integrator was not changed", ig->ops.name,
                         mbk_last_error());
}

int mbk_integrator_initialize(mbk_integrator *ig, const mbk_state *initial)
{
    NEED_IG(ig, "mbk_integrator_initialize");
    int rc = mbk_system_check_state(ig->sys, initial);
    if (rc < 0) return init_refused(ig, rc);
    const double t = mbk_state_get_time(initial);
    if (!isfinite(t)) return init_refused(ig, mbk_set_error(MBK_ENOTFINITE, "the initial time is %g", t));
    ig->initialized = false;
    ig->terminated = false;
    ig->pending.any = false;
    memset(&ig->stats, 0, sizeof ig->stats);
    if ((rc = mbk_state_copy(ig->cur, initial)) < 0) return init_fail(ig, rc);
    if ((rc = mbk_system_realize(ig->sys, ig->cur, MBK_STAGE_INSTANCE)) < 0) return init_fail(ig, rc);
    if ((rc = ig_setup_layout(ig)) < 0) return init_fail(ig, rc);
    rc = mbk_system_project(ig->sys, ig->cur, ig->set.constraint_tol);
    ig->stats.projections++;
    if (rc < 0) return init_fail(ig, rc);
    if ((rc = ig_realize_full(ig, ig->cur)) < 0) return init_fail(ig, rc);
    ig->stats.rhs_evaluations++;
    if ((rc = ig_resync(ig)) < 0) return init_fail(ig, rc);
    ig->t_init = t;
    ig->h_prev = ig->h_pred = 0;
    ig->loc_target = INFINITY;
    ig->t_hard_stop = INFINITY;
    ig->loc_count = 0;
    ig->settings_changed = false;
    ig->initialized = true; /* the op may use the services */
    if (ig->ops.initialize) {
        mbk_clear_error();
        rc = ig->ops.initialize(ig->impl, ig);
        if (rc != 0) return init_fail(ig, rc < 0 ? rc : MBK_EINTEGRATOR);
    }
    return MBK_OK;
}

/* ------------------------------------------------------------------ */
/* The time stepper                                                     */
/* ------------------------------------------------------------------ */

/* A failure: for an in-place step, go back to the backup taken before it. */
static int failed(mbk_integrator *ig, int rc, bool restore, const char *fn)
{
    char msg[MBK_ERROR_MAX];
    snprintf(msg, sizeof msg, "%s", mbk_last_error());
    if (rc >= 0) rc = MBK_EINTEGRATOR;
    if (restore && (ig->flags & IG_IN_PLACE)) {
        mbk_state_copy(ig->cur, ig->prev);
        if (ig->ops.reinitialize) ig->ops.reinitialize(ig->impl, ig, MBK_STAGE_TIME);
    }
    ig->prev_valid = false;
    ig_read_witnesses(ig, ig->cur, ig->w0);
    /* what happened to the State first: the cause after it may be long */
    return mbk_set_error(rc, "%s (%s): stopped; the integrator's State is the last good one, at t = %.17g. "
                             "Cause: %s",
                         fn, ig->ops.name, mbk_state_get_time(ig->cur), msg);
}

static int step_failed(mbk_integrator *ig, int rc, const char *fn) { return failed(ig, rc, false, fn); }

static int call_reporters(mbk_integrator *ig, bool any_fired, bool rep_due, double t)
{
    if (ig->ev_index < 0) return MBK_OK;
    int n = 0;
    if (any_fired)
        for (int i = 0; i < ig->nw; ++i)
            if (ig->fired[i] && ig->w_rep[i]) ig->ids[n++] = ig->w_id[i];
    if (n == 0 && !rep_due) return MBK_OK;
    int rc = mbk_system_realize(ig->sys, ig->cur, MBK_STAGE_REPORT);
    if (rc < 0) return rc;
    if (n) ig->stats.reports += mbk_system_call_event_reporters(ig->sys, ig->cur, ig->ids, n);
    if (rep_due) ig->stats.reports += mbk_system_call_periodic_reporters(ig->sys, ig->cur, t);
    return MBK_OK;
}

/* The events at t1, the end of a step: the handlers of the witnesses that fired
   and of the scheduled events due, then the reporters. A handler that fails
   leaves them pending (the State is the one before the handlers): the next call
   handles them first, so resuming after a failure loses no event. Returns
   DRIVE_STEPPED to go on, MBK_TERMINATED, or a negative status. */
static int events_at(mbk_integrator *ig, double t1, bool any_fired, bool sched_due, bool rep_due,
                     const char *fn)
{
    int rc;
    bool term = false;
    ig->last_handled = 0;
    if (any_fired || sched_due) {
        if ((rc = ig_handle_events(ig, t1, sched_due, &ig->last_handled, &term)) < 0) {
            ig->pending = (ig_pending){true, any_fired, sched_due, rep_due};
            return mbk_set_error(rc, "%s (%s): stopped in the event handlers; the integrator's State is "
                                     "the last good one, at t = %.17g, before the handlers ran, and the "
                                     "events there are still pending (handled first when you call again). "
                                     "Cause: %s",
                                 fn, ig->ops.name, t1, mbk_last_error());
        }
    } else if (!(ig->flags & IG_IN_PLACE) && ig->nw > 0) {
        double *tmp = ig->w0;
        ig->w0 = ig->w1;
        ig->w1 = tmp;
    }
    if ((rc = call_reporters(ig, any_fired, rep_due, t1)) < 0) return step_failed(ig, rc, fn);
    for (int i = 0; i < ig->nw; ++i) ig->fired[i] = false;
    if (term) {
        ig->terminated = true;
        return MBK_TERMINATED;
    }
    return DRIVE_STEPPED;
}

/* What a call may not start from: an integrator not initialized or terminated, or a
   t_report behind the current time. */
static int check_drive(mbk_integrator *ig, double t_report, const char *fn)
{
    if (!ig->initialized)
        return mbk_set_error(MBK_EINVAL, "%s (%s): call mbk_integrator_initialize with an initial State first",
                             fn, ig->ops.name);
    double t = mbk_state_get_time(ig->cur);
    if (ig->terminated)
        return mbk_set_error(MBK_TERMINATED, "%s (%s): an event handler terminated the integration at "
                                             "t = %.17g; call mbk_integrator_initialize to start again",
                             fn, ig->ops.name, t);
    if (!isfinite(t_report) || t_report < t)
        return mbk_set_error(MBK_EINVAL, "%s (%s): t_report = %.17g is before the current time %.17g "
                                         "(or not finite); integrators only go forward",
                             fn, ig->ops.name, t_report, t);
    return MBK_OK;
}

/* The step op once from t toward t_stop, its end *t1 checked to lie in (t, t_stop]. */
static int take_step(mbk_integrator *ig, double t, double t_stop, double *t1, const char *fn)
{
    const bool in_place = (ig->flags & IG_IN_PLACE) != 0;
    int rc;
    if (in_place && (rc = mbk_state_copy(ig->prev, ig->cur)) < 0) return step_failed(ig, rc, fn);
    ig->roots_reported = false;
    mbk_clear_error();
    rc = ig->ops.step(ig->impl, ig, t_stop);
    ig->steps_this_call++;
    if (rc < 0) return failed(ig, rc, true, fn);
    *t1 = mbk_state_get_time(ig->cur);
    if (!(*t1 > t && *t1 <= t_stop)) {
        if (!in_place) ig_uncommit(ig);
        return failed(ig, mbk_set_error(MBK_EINTEGRATOR, "the step op went from t = %.17g to "
                                        "%.17g, outside (t, t_stop = %.17g]", t, *t1, t_stop),
                      true, fn);
    }
    ig->h_prev = *t1 - t;
    if (!in_place) ig->stats.steps_taken++; /* in-place integrators report their own */
    return MBK_OK;
}

/* What a step's witnesses say: nothing, events at its end, or step again to just past
   an event found inside it. */
enum { CROSS_NONE, CROSS_FIRED, CROSS_AGAIN };

/* The witnesses after a step to t1 (by the driver's own crossing checks; in-place
   integrators find their roots themselves). An event inside the step, localized by
   interpolation, undoes the step (while backups are left) so that the next one ends
   just past it; without interpolation the events are taken at t1. Returns CROSS_* or a
   negative status. */
static int step_crossings(mbk_integrator *ig, double t1, const char *fn)
{
    if (ig->nw == 0) return CROSS_NONE;
    if (ig->flags & IG_IN_PLACE) return ig->roots_reported ? CROSS_FIRED : CROSS_NONE;
    int rc;
    if ((rc = ig_read_witnesses(ig, ig->cur, ig->w1)) < 0) {
        ig_uncommit(ig);
        return step_failed(ig, rc, fn);
    }
    bool any = false;
    for (int i = 0; i < ig->nw && !any; ++i) any = ig_crossing(ig->w0[i], ig->w1[i], ig->w_dir[i]);
    if (!any) return CROSS_NONE;
    double tlo, thi;
    rc = ig->prev_valid ? ig_localize(ig, &tlo, &thi) : MBK_ERETRY;
    if (rc == MBK_ERETRY) { /* cannot interpolate: take the event at t1 */
        for (int i = 0; i < ig->nw; ++i) ig->fired[i] = ig_crossing(ig->w0[i], ig->w1[i], ig->w_dir[i]);
        thi = t1;
    } else if (rc < 0) {
        return step_failed(ig, rc, fn);
    }
    if (!(thi < t1 && ig->loc_count < MAX_LOCALIZE_BACKUPS)) return CROSS_FIRED;
    /* step again from the start of this step to just past the event */
    mbk_state *tmp = ig->cur;
    ig->cur = ig->prev;
    ig->prev = tmp;
    ig->prev_valid = false;
    ig->loc_target = thi;
    ig->loc_count++;
    ig->stats.steps_taken--;
    for (int i = 0; i < ig->nw; ++i) ig->fired[i] = false;
    if (ig->ops.reinitialize && (rc = ig->ops.reinitialize(ig->impl, ig, MBK_STAGE_TIME)) != 0)
        return step_failed(ig, rc, fn);
    return CROSS_AGAIN;
}

/* Steps until t_report (MBK_OK), an event handled (MBK_EVENT), one step taken
   (one_step: DRIVE_STEPPED), termination or a failure. */
static int drive(mbk_integrator *ig, double t_report, bool one_step, const char *fn)
{
    NEED_IG(ig, fn);
    int rc = check_drive(ig, t_report, fn);
    if (rc != MBK_OK) return rc; /* MBK_TERMINATED is not negative */
    double t = mbk_state_get_time(ig->cur);
    if (ig->settings_changed) {
        ig->settings_changed = false;
        if (ig->ops.reinitialize && (rc = ig->ops.reinitialize(ig->impl, ig, MBK_STAGE_INFINITY)) != 0)
            return step_failed(ig, rc, fn);
    }
    if (ig->pending.any) {
        /* events left pending by a handler that failed in the last call */
        ig_pending p = ig->pending;
        ig->pending.any = false;
        rc = events_at(ig, t, p.fired, p.sched_due, p.rep_due, fn);
        if (rc != DRIVE_STEPPED) return rc;
        if (ig->last_handled > 0) return t >= t_report ? MBK_OK : MBK_EVENT;
    }
    for (;;) {
        t = mbk_state_get_time(ig->cur);
        if (t >= t_report) return MBK_OK;
        /* the step stops at the report time, the next scheduled event or report, or an
           event being localized */
        double t_sched = INFINITY;
        if ((rc = ig_query_scheduled(ig, &t_sched)) < 0) return step_failed(ig, rc, fn);
        double t_rep = ig->ev_index >= 0 ? mbk_system_get_next_report_time(ig->sys, t) : INFINITY;
        double t_stop = fmin(fmin(t_report, t_sched), fmin(t_rep, ig->loc_target));
        ig->t_hard_stop = fmin(t_sched, ig->loc_target);
        if (ig->steps_this_call >= ig->set.max_steps)
            return mbk_set_error(MBK_EINTEGRATOR,
                                 "%s (%s): took %ld steps (the maximum per call) without reaching "
                                 "t = %.17g; the State is good, at t = %.17g (last step %g). Call "
                                 "again to continue, raise the limit with "
                                 "mbk_integrator_set_max_steps, loosen the accuracy, or look for "
                                 "stiffness or a discontinuity in the model",
                                 fn, ig->ops.name, ig->steps_this_call, t_report, t, ig->h_prev);
        double t1 = t;
        if ((rc = take_step(ig, t, t_stop, &t1, fn)) < 0) return rc;
        const int cross = step_crossings(ig, t1, fn);
        if (cross < 0) return cross;
        if (cross == CROSS_AGAIN) continue;
        const bool any_fired = cross == CROSS_FIRED;
        if (any_fired || t1 >= ig->loc_target) {
            ig->loc_target = INFINITY;
            ig->loc_count = 0;
        }
        rc = events_at(ig, t1, any_fired, t1 == t_sched, t1 == t_rep, fn);
        if (rc != DRIVE_STEPPED) return rc;
        if (t1 >= t_report) return MBK_OK;
        if (ig->last_handled > 0) return MBK_EVENT;
        if (one_step) return DRIVE_STEPPED;
    }
}

int mbk_integrator_step_to(mbk_integrator *ig, double t_report)
{
    if (ig) ig->steps_this_call = 0;
    return drive(ig, t_report, false, "mbk_integrator_step_to");
}

int mbk_integrator_integrate(mbk_integrator *ig, double t_final, mbk_reporter_fn report, void *user)
{
    const char *fn = "mbk_integrator_integrate";
    for (;;) {
        if (ig) ig->steps_this_call = 0;
        int rc = drive(ig, t_final, report != NULL, fn);
        if (rc < 0) return rc;
        if (report) {
            int r2 = mbk_system_realize(ig->sys, ig->cur, MBK_STAGE_REPORT);
            if (r2 < 0) return step_failed(ig, r2, fn);
            report(user, ig->sys, ig->cur);
            ig->stats.reports++;
        }
        if (rc == MBK_TERMINATED || rc == MBK_OK) return rc;
    }
}
