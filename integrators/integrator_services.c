/* Services the driver gives step ops (built-in and custom integrators):
 * derivatives and qdot on the scratch State, error norms and error
 * projection, committing a step, and root finding for in-place steppers. */
#include <math.h>
#include <stdio.h>
#include <string.h>

#include "integrator_impl.h"
#include "mbk/alloc.h"
#include "mbk/constraints.h"
#include "mbk/status.h"

/* Services for step ops                                                */
/* ------------------------------------------------------------------ */

int mbk_integrator_calc_ydot(mbk_integrator *ig, double t, const double *y, double *ydot)
{
    if (!ig || !ig->initialized)
        return mbk_set_error(MBK_EINVAL, "mbk_integrator_calc_ydot: integrator not initialized");
    ig->stats.rhs_evaluations++;
    int rc = mbk_system_calc_ydot(ig->sys, ig->scratch, t, y, ydot); /* MBK_ENOTFINITE for a NaN ydot */
    if (rc == MBK_ERETRY || rc == MBK_ENOTFINITE) ig->stats.realization_failures++;
    return rc;
}

int ig_calc_qdot(mbk_integrator *ig, double t, const double *y, double *qdot)
{
    mbk_state *s = ig->scratch;
    int rc;
    if (mbk_state_get_time(s) != t && (rc = mbk_state_set_time(s, t)) < 0) return rc;
    if ((rc = mbk_state_set_y(s, y, ig->ny)) < 0) return rc;
    if ((rc = mbk_system_realize(ig->sys, s, MBK_STAGE_VELOCITY)) < 0) {
        if (rc == MBK_ERETRY) ig->stats.realization_failures++;
        return rc;
    }
    int nq = mbk_state_get_nq(s);
    const double *qd = mbk_state_get_qdot(s);
    if (!qd) return mbk_last_status();
    for (int i = 0; i < nq; ++i) {
        if (!isfinite(qd[i])) {
            ig->stats.realization_failures++;
            return mbk_set_error(MBK_ENOTFINITE, "qdot[%d] is %g at t = %g", i, qd[i], t);
        }
        qdot[i] = qd[i];
    }
    return MBK_OK;
}

double mbk_integrator_calc_error_norm(const mbk_integrator *ig, const double *err, const double *y0,
                                      const double *y1)
{
    if (!ig || ig->ny == 0) return 0.0;
    double sum = 0.0, rtol = ig->set.rel_tol, atol = ig->set.abs_tol;
    for (int i = 0; i < ig->ny; ++i) {
        double scale = rtol * fmax(fabs(y0[i]), y1 ? fabs(y1[i]) : 0.0) + atol;
        double e = err[i] / scale;
        sum += e * e;
    }
    double n = sqrt(sum / ig->ny);
    return isfinite(n) ? n : INFINITY;
}

int ig_project_error(mbk_integrator *ig, double t, const double *y, double *err)
{
    mbk_state *s = ig->scratch;
    int rc;
    if (!ig->set.project_error_estimate || mbk_state_get_nqerr(s) + mbk_state_get_nuerr(s) <= 0) return MBK_OK;
    /* the tangent space at the new point, where Simbody projects it */
    if (mbk_state_get_time(s) != t && (rc = mbk_state_set_time(s, t)) < 0) return rc;
    if ((rc = mbk_state_set_y(s, y, ig->ny)) < 0) return rc;
    if ((rc = mbk_system_realize(ig->sys, s, MBK_STAGE_VELOCITY)) < 0) {
        if (rc == MBK_ERETRY) ig->stats.realization_failures++;
        return rc;
    }
    return mbk_system_project_error_estimate(ig->sys, s, err);
}

int mbk_integrator_commit_step(mbk_integrator *ig, double t1, const double *y1)
{
    const char *fn = "mbk_integrator_commit_step";
    if (!ig || !ig->initialized) return mbk_set_error(MBK_EINVAL, "%s: integrator not initialized", fn);
    if (ig->flags & IG_IN_PLACE)
        return mbk_set_error(MBK_EINVAL, "%s: %s advances its State in place", fn, ig->ops.name);
    mbk_state *n = ig->spare;
    double t0 = mbk_state_get_time(ig->cur);
    int rc;
    if (!(t1 > t0)) return mbk_set_error(MBK_EINVAL, "%s: t1 = %.17g is not after t = %.17g", fn, t1, t0);
    if ((rc = mbk_state_set_time(n, t1)) < 0) return rc;
    if ((rc = mbk_state_set_y(n, y1, ig->ny)) < 0) {
        if (rc == MBK_ENOTFINITE) ig->stats.realization_failures++;
        return rc;
    }
    rc = mbk_system_project(ig->sys, n, ig->set.constraint_tol);
    ig->stats.projections++;
    if (rc == MBK_OK) {
        ig->stats.rhs_evaluations++;
        rc = ig_realize_full(ig, n);
    }
    if (rc < 0) {
        if (rc == MBK_ERETRY || rc == MBK_ENOTFINITE || rc == MBK_ECONVERGE) {
            ig->stats.realization_failures++;
            return rc == MBK_ECONVERGE ? mbk_set_error(MBK_ERETRY, "%s", mbk_last_error()) : rc;
        }
        return rc;
    }
    ig->spare = ig->prev;
    ig->prev = ig->cur;
    ig->cur = n;
    ig->prev_valid = true;
    ig->h_prev = t1 - t0;
    return MBK_OK;
}

void ig_uncommit(mbk_integrator *ig)
{
    mbk_state *n = ig->cur;
    ig->cur = ig->prev;
    ig->prev = ig->spare;
    ig->spare = n;
    ig->prev_valid = false;
}

int ig_num_roots(const mbk_integrator *ig) { return ig->nw; }
mbk_event_direction ig_root_direction(const mbk_integrator *ig, int i) { return ig->w_dir[i]; }

int ig_calc_roots(mbk_integrator *ig, double t, const double *y, double *g)
{
    mbk_state *s = ig->scratch;
    int rc;
    if (mbk_state_get_time(s) != t && (rc = mbk_state_set_time(s, t)) < 0) return rc;
    if ((rc = mbk_state_set_y(s, y, ig->ny)) < 0) return rc;
    ig->stats.witness_evaluations++;
    mbk_stage st = ig->w_max_stage > MBK_STAGE_TIME ? ig->w_max_stage : MBK_STAGE_TIME;
    if ((rc = mbk_system_realize(ig->sys, s, st)) < 0) return rc;
    return ig_read_witnesses(ig, s, g);
}

void ig_report_roots(mbk_integrator *ig, const int *flags)
{
    ig->roots_reported = false;
    for (int i = 0; i < ig->nw; ++i) {
        ig->fired[i] = flags[i] != 0;
        if (ig->fired[i]) ig->roots_reported = true;
    }
}

int ig_finish_in_place(mbk_integrator *ig, double t)
{
    mbk_state *s = ig->cur;
    if (!mbk_state_upd_y(s)) return mbk_last_status();
    int rc = mbk_state_set_time(s, t);
    if (rc < 0) return rc;
    ig->stats.rhs_evaluations++;
    return ig_realize_full(ig, s);
}
