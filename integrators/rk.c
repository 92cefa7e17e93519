/* The explicit one-step family: RK-Merson (error-controlled, Simbody's
 * default), RK4 (fixed step, or step doubling without one), explicit Euler
 * and semi-explicit Euler (both error-controlled by the first-order local
 * error estimate h/2 |ydot(t+h) - ydot(t)|, or fixed step).
 *
 * Each step starts from the driver's current State (realized, so its ydot
 * is the first stage), evaluates stages on the scratch State and commits
 * the result; the driver does events, stop times and projection. */
#include <math.h>
#include <stdio.h>
#include <string.h>

#include "integrator_impl.h"
#include "mbk/alloc.h"
#include "mbk/status.h"

typedef enum { RK_MERSON, RK_4, RK_EULER, RK_SEMI_EULER } rk_kind;

enum { RK_NVEC = 10, RK_MAX_FAILURES = 60 };

typedef struct rk_impl {
    rk_kind kind;
    int ny, cap;
    double *block;
    double *v[RK_NVEC]; /* k2..k5, yt, y1, err, ym, fm, yf */
    double h_next;
    char reason[MBK_ERROR_MAX];
} rk_impl;

#define K2 v[0]
#define K3 v[1]
#define K4 v[2]
#define K5 v[3]
#define YT v[4]
#define Y1 v[5]
#define ERR v[6]
#define YM v[7]
#define FM v[8]
#define YF v[9]

static int rk_workspace(rk_impl *r, int ny)
{
    r->ny = ny;
    if (ny > r->cap) {
        double *b = mbk_realloc(r->block, (size_t)RK_NVEC * (size_t)ny * sizeof *b);
        if (!b) return MBK_ENOMEM;
        r->block = b;
        r->cap = ny;
    }
    for (int i = 0; i < RK_NVEC; ++i) r->v[i] = r->block + (size_t)i * (size_t)r->cap;
    return MBK_OK;
}

static int rk_init(void *impl, mbk_integrator *ig)
{
    rk_impl *r = impl;
    r->h_next = 0;
    int ny = mbk_state_get_ny(mbk_integrator_get_state(ig));
    return ny < 0 ? ny : rk_workspace(r, ny);
}

static int rk_reinit(void *impl, mbk_integrator *ig, mbk_stage lowest)
{
    rk_impl *r = impl;
    /* After a discontinuity (event handlers) start again with a fresh step estimate, as
       at initialization; moving back a step (Time) or new settings keep the step size. */
    if (lowest <= MBK_STAGE_ACCELERATION && lowest != MBK_STAGE_TIME) r->h_next = 0;
    if (lowest <= MBK_STAGE_MODEL) {
        int ny = mbk_state_get_ny(mbk_integrator_get_state(ig));
        if (ny < 0) return ny;
        return rk_workspace(r, ny);
    }
    return MBK_OK;
}

static void rk_destroy(void *impl)
{
    rk_impl *r = impl;
    mbk_free(r->block);
    mbk_free(r);
}

/* out = y + h * sum c_j k_j over the given vectors */
static void axpy(int n, double *out, const double *y, double h, int m, const double *c,
                 const double *const *k)
{
    for (int i = 0; i < n; ++i) {
        double acc = 0;
        for (int j = 0; j < m; ++j) acc += c[j] * k[j][i];
        out[i] = y[i] + h * acc;
    }
}

/* One classical RK4 step of size h from (t, y) with ydot f into out. */
static int rk4_core(rk_impl *r, mbk_integrator *ig, double t, const double *y, const double *f,
                    double h, double *out)
{
    int n = r->ny, rc;
    for (int i = 0; i < n; ++i) r->YT[i] = y[i] + 0.5 * h * f[i];
    if ((rc = mbk_integrator_calc_ydot(ig, t + 0.5 * h, r->YT, r->K2)) < 0) return rc;
    for (int i = 0; i < n; ++i) r->YT[i] = y[i] + 0.5 * h * r->K2[i];
    if ((rc = mbk_integrator_calc_ydot(ig, t + 0.5 * h, r->YT, r->K3)) < 0) return rc;
    for (int i = 0; i < n; ++i) r->YT[i] = y[i] + h * r->K3[i];
    if ((rc = mbk_integrator_calc_ydot(ig, t + h, r->YT, r->K4)) < 0) return rc;
    for (int i = 0; i < n; ++i) out[i] = y[i] + h / 6.0 * (f[i] + 2.0 * r->K2[i] + 2.0 * r->K3[i] + r->K4[i]);
    return MBK_OK;
}

/* Kutta-Merson: 4th-order result with the error estimate h/30 (2k1 - 9k3 + 8k4 - k5). */
static int merson(rk_impl *r, mbk_integrator *ig, double t, const double *y, const double *k1,
                  double h)
{
    int n = r->ny, rc;
    const double *ks[4];
    ks[0] = k1;
    axpy(n, r->YT, y, h / 3.0, 1, (const double[]){1}, ks);
    if ((rc = mbk_integrator_calc_ydot(ig, t + h / 3.0, r->YT, r->K2)) < 0) return rc;
    ks[1] = r->K2;
    axpy(n, r->YT, y, h / 6.0, 2, (const double[]){1, 1}, ks);
    if ((rc = mbk_integrator_calc_ydot(ig, t + h / 3.0, r->YT, r->K3)) < 0) return rc;
    ks[1] = r->K3;
    axpy(n, r->YT, y, h / 8.0, 2, (const double[]){1, 3}, ks);
    if ((rc = mbk_integrator_calc_ydot(ig, t + 0.5 * h, r->YT, r->K4)) < 0) return rc;
    ks[2] = r->K4;
    axpy(n, r->YT, y, h, 3, (const double[]){0.5, -1.5, 2}, ks);
    if ((rc = mbk_integrator_calc_ydot(ig, t + h, r->YT, r->K5)) < 0) return rc;
    for (int i = 0; i < n; ++i) {
        r->Y1[i] = y[i] + h / 6.0 * (k1[i] + 4.0 * r->K4[i] + r->K5[i]);
        r->ERR[i] = h / 30.0 * (2.0 * k1[i] - 9.0 * r->K3[i] + 8.0 * r->K4[i] - r->K5[i]);
    }
    return MBK_OK;
}

/* RK4 by step doubling: two half steps (kept) against one full step. */
static int rk4_doubling(rk_impl *r, mbk_integrator *ig, double t, const double *y, const double *f,
                        double h)
{
    int n = r->ny, rc;
    if ((rc = rk4_core(r, ig, t, y, f, h, r->YF)) < 0) return rc;
    if ((rc = rk4_core(r, ig, t, y, f, 0.5 * h, r->YM)) < 0) return rc;
    if ((rc = mbk_integrator_calc_ydot(ig, t + 0.5 * h, r->YM, r->FM)) < 0) return rc;
    if ((rc = rk4_core(r, ig, t + 0.5 * h, r->YM, r->FM, 0.5 * h, r->Y1)) < 0) return rc;
    for (int i = 0; i < n; ++i) r->ERR[i] = (r->Y1[i] - r->YF[i]) / 15.0;
    return MBK_OK;
}

/* Semi-explicit Euler: u and z first, then q with qdot = N(q0) u1. */
static int semi_euler(rk_impl *r, mbk_integrator *ig, double t, const double *y, const double *f,
                      double h)
{
    const mbk_state *s = mbk_integrator_get_state(ig);
    int nq = mbk_state_get_nq(s), n = r->ny, rc;
    for (int i = 0; i < n; ++i) r->YT[i] = i < nq ? y[i] : y[i] + h * f[i];
    if ((rc = ig_calc_qdot(ig, t, r->YT, r->K2)) < 0) return rc;
    for (int i = 0; i < n; ++i) r->Y1[i] = i < nq ? y[i] + h * r->K2[i] : r->YT[i];
    return MBK_OK;
}

/* Hairer and Wanner's starting step for a method of order q. */
static double start_step(rk_impl *r, mbk_integrator *ig, const mbk_integrator_settings *set,
                         double t, const double *y, const double *f, int q)
{
    if (set->initial_step > 0) return set->initial_step;
    int n = r->ny;
    if (n == 0) return 0.01;
    double d0 = 0, d1 = 0;
    for (int i = 0; i < n; ++i) {
        double sc = set->rel_tol * fabs(y[i]) + set->abs_tol;
        d0 += (y[i] / sc) * (y[i] / sc);
        d1 += (f[i] / sc) * (f[i] / sc);
    }
    d0 = sqrt(d0 / n);
    d1 = sqrt(d1 / n);
    double h0 = (d0 < 1e-5 || d1 < 1e-5) ? 1e-6 : 0.01 * d0 / d1;
    h0 = fmin(h0, set->max_step);
    for (int i = 0; i < n; ++i) r->YT[i] = y[i] + h0 * f[i];
    if (mbk_integrator_calc_ydot(ig, t + h0, r->YT, r->K2) < 0) return h0;
    double d2 = 0;
    for (int i = 0; i < n; ++i) {
        double sc = set->rel_tol * fabs(y[i]) + set->abs_tol;
        double e = (r->K2[i] - f[i]) / sc;
        d2 += e * e;
    }
    d2 = sqrt(d2 / n) / h0;
    double dm = fmax(d1, d2);
    double h1 = dm <= 1e-15 ? fmax(1e-6, h0 * 1e-3) : pow(0.01 / dm, 1.0 / (q + 1));
    return fmin(fmin(100 * h0, h1), set->max_step);
}

/* A step that failed its error test: counted, its reason kept (the weighted norm, the
   tolerances, then advice), and the smaller step to try next returned. */
static double reject_step(rk_impl *r, mbk_integrator_stats *st, const mbk_integrator_settings *set, double norm,
                          double h, double order, const char *advice)
{
    st->error_test_failures++;
    snprintf(r->reason, sizeof r->reason, "the error test kept failing (weighted error norm %.3g > 1 with rel tol %g, "
             "abs tol %g)%s", norm, set->rel_tol, set->abs_tol, advice);
    return h * fmax(0.1, 0.9 * pow(norm, -1.0 / order));
}

static int give_up(rk_impl *r, mbk_integrator *ig, int status, double t, double h, double hmin)
{
    mbk_integrator_settings set;
    mbk_integrator_get_settings(ig, &set);
    /* the minimum is the user's setting, not round-off: that is the first thing to change */
    if (set.min_step > 0 && hmin <= set.min_step)
        return mbk_set_error(status, "%s could not take a step from t = %.17g: the step size came to %g, "
                                     "below the minimum step %g set with mbk_integrator_set_min_step; lower the "
                                     "minimum step (0 allows steps down to round-off)%s%s",
                             mbk_integrator_get_name(ig), t, h, hmin,
                             r->reason[0] ? ". It shrank the step because " : "", r->reason);
    return mbk_set_error(status, "%s could not take a step from t = %.17g: the step size fell to %g "
                                 "(minimum %g, round-off) because %s",
                         mbk_integrator_get_name(ig), t, h, hmin, r->reason);
}

/* Where a trial step of h from t0 toward t_stop ends: at t_stop when it is near
   enough (*land), else at t0 + h, or halfway when a whole h would leave a sliver. */
static double trial_end(double t0, double t_stop, double h, double hmin, bool fixed, bool *land)
{
    const double remaining = t_stop - t0;
    double ht = h;
    *land = false;
    if (remaining <= 2.0 * hmin) *land = true;
    else if (fixed) *land = remaining <= ht * (1 + 1e-9);
    else if (remaining <= 1.1 * ht) *land = true;
    else if (remaining < 2.0 * ht) ht = 0.5 * remaining;
    return *land ? t_stop : t0 + ht;
}

/* The method once from (t0, y0, f0) over he: the end in r->Y1, the error estimate
   (if the method has one) in r->ERR. */
static int rk_trial(rk_impl *r, mbk_integrator *ig, double t0, const double *y0, const double *f0, double he,
                    bool fixed)
{
    switch (r->kind) {
    case RK_MERSON: return merson(r, ig, t0, y0, f0, he); /* with a fixed step the estimate is unused */
    case RK_4: return fixed ? rk4_core(r, ig, t0, y0, f0, he, r->Y1) : rk4_doubling(r, ig, t0, y0, f0, he);
    case RK_EULER:
        for (int i = 0; i < r->ny; ++i) r->Y1[i] = y0[i] + he * f0[i];
        return MBK_OK;
    default: return semi_euler(r, ig, t0, y0, f0, he);
    }
}

/* The next step after one of he accepted with error norm: the usual controller,
   between 0.2 and 5 times he (at most he after an error failure), no smaller than h
   after a short landing step, and within max_step. p: the estimate's order. */
static double next_h(const mbk_integrator_settings *set, double norm, double he, double h, double p, bool land,
                     int error_failures)
{
    double fac = norm > 0 ? 0.9 * pow(norm, -1.0 / p) : 5.0;
    fac = fmin(5.0, fmax(0.2, fac));
    if (error_failures > 0) fac = fmin(fac, 1.0);
    double hn = he * fac;
    if (land && he < h) hn = fmax(hn, fmin(h, h * fac)); /* a short landing step is no evidence */
    return fmin(hn, set->max_step);
}

/* A step from the integrator's State toward t_stop: trials from the proposed size,
   halved after recoverable failures and shrunk after error failures, until one is
   accepted and committed or the size falls below the minimum. */
static int rk_step(void *impl, mbk_integrator *ig, double t_stop)
{
    rk_impl *r = impl;
    mbk_integrator_settings set;
    mbk_integrator_get_settings(ig, &set);
    mbk_integrator_stats *st = mbk_integrator_upd_stats(ig);
    const mbk_state *s = mbk_integrator_get_state(ig);
    double t0 = mbk_state_get_time(s);
    const double *y0 = mbk_state_get_y(s), *f0 = mbk_state_get_ydot(s);
    if (!y0 || !f0) return mbk_last_status();
    const bool fixed = set.fixed_step > 0;
    const bool euler_kind = r->kind == RK_EULER || r->kind == RK_SEMI_EULER;
    /* exponent of the step-size controller: the order of the error estimate */
    const double p = r->kind == RK_MERSON ? 4.0 : r->kind == RK_4 ? 5.0 : 2.0;
    double h = fixed ? set.fixed_step
                     : fmin(r->h_next > 0 ? r->h_next : start_step(r, ig, &set, t0, y0, f0, euler_kind ? 1 : 4),
                            set.max_step);
    int failures = 0, error_failures = 0, status = MBK_EINTEGRATOR;
    r->reason[0] = '\0';
    for (;;) {
        const double hmin = ig_min_step(ig, t0);
        bool land;
        const double t1 = trial_end(t0, t_stop, h, hmin, fixed, &land), he = t1 - t0;
        if (!(he > 0) || (he < hmin && !land) || failures > RK_MAX_FAILURES) {
            if (!r->reason[0] && !(set.min_step > 0 && hmin <= set.min_step))
                snprintf(r->reason, sizeof r->reason, "the step could not be made small enough");
            return give_up(r, ig, status, t0, he, hmin);
        }
        st->steps_attempted++;
        double norm = 0;
        int rc = rk_trial(r, ig, t0, y0, f0, he, fixed);
        /* the error of the higher-order methods, before committing */
        if (rc == MBK_OK && !fixed && !euler_kind) rc = ig_project_error(ig, t1, r->Y1, r->ERR);
        if (rc == MBK_OK && !fixed && !euler_kind) {
            norm = mbk_integrator_calc_error_norm(ig, r->ERR, y0, r->Y1);
            if (norm > 1.0) {
                h = reject_step(r, st, &set, norm, he, p,
                                ": the accuracy asked for may be too tight for double precision, or the "
                                "solution is not smooth here; loosen the tolerances or look for a discontinuity");
                failures++;
                error_failures++;
                status = MBK_EINTEGRATOR;
                continue;
            }
        }
        if (rc == MBK_OK) rc = mbk_integrator_commit_step(ig, t1, r->Y1);
        /* Euler's error from the change of ydot over the committed step */
        if (rc == MBK_OK && euler_kind && !fixed) {
            const double *f1 = mbk_state_get_ydot(mbk_integrator_get_state(ig));
            for (int i = 0; i < r->ny; ++i) r->ERR[i] = 0.5 * he * (f1[i] - f0[i]);
            rc = ig_project_error(ig, t1, r->Y1, r->ERR);
            norm = rc == MBK_OK ? mbk_integrator_calc_error_norm(ig, r->ERR, y0, r->Y1) : 0.0;
            if (rc < 0) ig_uncommit(ig);
            if (rc == MBK_OK && norm > 1.0) {
                ig_uncommit(ig);
                h = reject_step(r, st, &set, norm, he, p,
                                "; loosen the tolerances or use a higher-order integrator");
                failures++;
                error_failures++;
                status = MBK_EINTEGRATOR;
                continue;
            }
        }
        if (rc == MBK_ERETRY || rc == MBK_ENOTFINITE) {
            failures++;
            status = rc == MBK_ENOTFINITE ? MBK_ENOTFINITE : MBK_EINTEGRATOR;
            snprintf(r->reason, sizeof r->reason, "of repeated recoverable failures, the last one: %s",
                     mbk_last_error());
            h = he * 0.5;
            continue;
        }
        if (rc < 0) return rc;
        r->h_next = fixed ? set.fixed_step : next_h(&set, norm, he, h, p, land, error_failures);
        ig->h_pred = r->h_next;
        return MBK_OK;
    }
}

/* Checkpoints: the step op's own state is the next step size (0: estimate it afresh). */
static int rk_save(void *impl, const mbk_integrator *ig, void *buf, size_t capacity, size_t *size)
{
    (void)ig;
    const rk_impl *r = impl;
    *size = sizeof r->h_next;
    if (buf && capacity >= sizeof r->h_next) memcpy(buf, &r->h_next, sizeof r->h_next);
    return MBK_OK;
}

static int rk_load(void *impl, mbk_integrator *ig, const void *buf, size_t size)
{
    rk_impl *r = impl;
    double h;
    if (size != sizeof h)
        return mbk_set_error(MBK_EPARSE, "%s expects %zu bytes (its next step size), got %zu",
                             mbk_integrator_get_name(ig), sizeof h, size);
    memcpy(&h, buf, sizeof h);
    if (!(isfinite(h) && h >= 0))
        return mbk_set_error(MBK_EPARSE, "%s: the saved next step size %g is not finite and >= 0",
                             mbk_integrator_get_name(ig), h);
    r->h_next = h;
    return MBK_OK;
}

static mbk_integrator *rk_create(const mbk_system *sys, rk_kind kind, const char *name, int order)
{
    rk_impl *r = mbk_calloc(1, sizeof *r);
    if (!r) return NULL;
    r->kind = kind;
    mbk_integrator_ops ops = {.name = name,
                              .order = order,
                              .initialize = rk_init,
                              .reinitialize = rk_reinit,
                              .step = rk_step,
                              .destroy = rk_destroy,
                              .save = rk_save,
                              .load = rk_load};
    return ig_create(sys, &ops, r, 0);
}

mbk_integrator *mbk_integrator_create_rkmerson(const mbk_system *sys) { return rk_create(sys, RK_MERSON, "RK-Merson", 4); }
mbk_integrator *mbk_integrator_create_rk4(const mbk_system *sys) { return rk_create(sys, RK_4, "RK4", 4); }
mbk_integrator *mbk_integrator_create_explicit_euler(const mbk_system *sys) { return rk_create(sys, RK_EULER, "explicit Euler", 1); }
mbk_integrator *mbk_integrator_create_semi_explicit_euler(const mbk_system *sys)
{
    return rk_create(sys, RK_SEMI_EULER, "semi-explicit Euler", 1);
}
