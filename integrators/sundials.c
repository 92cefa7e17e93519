/* SUNDIALS integrators: CVODE (BDF and Adams) on y' = ydot(t, y) and IDA on
 * F(t, y, y') = y' - ydot(t, y) = 0, both on the State's own y (the
 * N_Vector wraps its memory: no copies) with root finding for the
 * triggered events.
 *
 *   - BDF uses Newton with a dense linear solver, Adams fixed-point
 *     iteration; IDA Newton with the dense solver. The dense solver is
 *     LAPACK's LU (dgetrf/dgetrs, sundials_lapack.c), not SUNDIALS'
 *     own, which was most of a stiff run's time. Jacobians come from the
 *     settings' jacobian_source: mbk_system_calc_ydot_jacobian (analytic, the
 *     default) or mbk_system_calc_ydot_jacobian_fd (both allocation-free), or
 *     SUNDIALS' difference quotients (those allocate a vector wrapper per
 *     Jacobian with plain malloc).
 *   - Projection (mbk_system_project): CVODE BDF projects inside the step
 *     (CVodeSetProjFn, so the projected solution feeds the history), to 1%
 *     of the integration tolerance; CVODE supports that only for BDF, so
 *     Adams and IDA keep their own solution, as SUNDIALS alone would, and
 *     project the State they return; they restart from it only when the
 *     projection moved y by a weighted RMS norm above 1/sqrt(tol)
 *     (docs/integrators.md section 6).
 *   - Steps run in CV_ONE_STEP / IDA_ONE_STEP mode. Only the driver's hard
 *     stop (scheduled events) is a SUNDIALS stop time; report and reporter
 *     times are interpolated back to from the step that passed them, and
 *     the solver goes on from its own step's end: no restart, no shortened
 *     step (docs/integrators.md section 3).
 *   - Every restart (CVodeReInit/IDAReInit, or a new solver after a layout
 *     change) is counted in the statistics' reinitializations.
 *   - A System with no continuous variables (ny = 0; SUNDIALS cannot take
 *     empty vectors) gets no solver: each step goes straight to the driver's
 *     stop time (or max_step), and witnesses, which can then depend only on
 *     t and discrete variables, are compared at both ends and their roots
 *     located in t by the Illinois method to about 100 ulps, as SUNDIALS'
 *     root finding would.
 *   - SUNDIALS' messages go to mbk's error record, never to stderr. */
#include <float.h>
#include <math.h>
#include <stdio.h>
#include <string.h>

#include <cvode/cvode.h>
#include <cvode/cvode_ls.h>
#include <cvode/cvode_proj.h>
#include <ida/ida.h>
#include <ida/ida_ls.h>
#include <nvector/nvector_serial.h>
#include <sunmatrix/sunmatrix_dense.h>
#include <sunnonlinsol/sunnonlinsol_fixedpoint.h>

#include "integrator_impl.h"
#include "sundials_lapack.h"
#include "sundials_vector.h"
#include "mbk/alloc.h"
#include "mbk/derivatives.h"
#include "mbk/status.h"

typedef enum { SD_BDF, SD_ADAMS, SD_IDA } sd_kind;

typedef struct sd_impl {
    sd_kind kind;
    mbk_integrator *ig;
    SUNContext ctx;
    void *mem;
    N_Vector y, yp;
    SUNMatrix A;
    SUNLinearSolver LS;
    SUNNonlinearSolver NLS;
    int ny, nroots;
    int *roots, *rootdir;
    double *jac, *ybuf;
    double *g;                 /* ny = 0: witness values at three times (3 nroots) */
    bool need_reinit, use_jac;
    double t_ret;              /* time of the solver's last return: the State's time, or later
                                  when the State was interpolated back from it */
    bool root_pending;         /* that return was at roots the driver has not been given yet */
    bool tstop_set;            /* a stop time may be active in the solver */
    double restart_norm;       /* projection drift (weighted RMS norm) that restarts the solver */
    double proj_tol;           /* CVODE BDF: constraint tolerance of the projection in the step */
    bool restored_step;        /* loaded from a checkpoint: the first step tries restored_h */
    double restored_h;
    long nst, netf, ncfn, nje; /* SUNDIALS counters at the last look */
    int cb_status;             /* mbk status of the last failed callback */
    char cb_msg[MBK_ERROR_MAX], sd_msg[1024];
} sd_impl;

static const char *sd_name(const sd_impl *d)
{
    return d->kind == SD_BDF ? "CVODE BDF" : d->kind == SD_ADAMS ? "CVODE Adams" : "IDA";
}

/* ------------------------------------------------------------------ */
/* Callbacks                                                            */
/* ------------------------------------------------------------------ */

static void sd_err(int code, const char *module, const char *function, char *msg, void *user)
{
    sd_impl *d = user;
    if (code == CV_WARNING) return; /* warnings are not errors; mbk never prints */
    snprintf(d->sd_msg, sizeof d->sd_msg, "%s in %s: %s", module, function, msg);
}

/* Statuses SUNDIALS may recover from by cutting the step (its convention: the
   callback returns > 0): a retry asked for, a non-finite derivative, and a
   singular or unconverged solve at a trial point of the Newton iteration. */
static bool recoverable(int rc)
{
    return rc == MBK_ERETRY || rc == MBK_ENOTFINITE || rc == MBK_ESINGULAR || rc == MBK_ECONVERGE;
}

/* Remember a callback's failure; SUNDIALS gets 1 (recoverable) or -1. A fatal
   status is kept even if later callbacks of the step fail recoverably, so that
   sd_step can refuse the step whatever the solver made of the -1. A recoverable
   one is counted in realization_failures unless `counted` says the callee did
   (mbk_integrator_calc_ydot counts its own MBK_ERETRY and MBK_ENOTFINITE). */
static int cb_fail_counted(sd_impl *d, int rc, bool counted)
{
    if (recoverable(rc) && !counted) d->ig->stats.realization_failures++;
    if (d->cb_status == 0 || recoverable(d->cb_status)) {
        d->cb_status = rc;
        snprintf(d->cb_msg, sizeof d->cb_msg, "%s", mbk_last_error());
    }
    return recoverable(rc) ? 1 : -1;
}

static int cb_fail(sd_impl *d, int rc) { return cb_fail_counted(d, rc, false); }

/* A failure of mbk_integrator_calc_ydot, which counted its own recoverable ones. */
static int ydot_fail(sd_impl *d, int rc) { return cb_fail_counted(d, rc, rc == MBK_ERETRY || rc == MBK_ENOTFINITE); }

/* True when a callback failed fatally during the last solver call. */
static bool fatal_callback(const sd_impl *d) { return d->cb_status != 0 && !recoverable(d->cb_status); }

static int cv_rhs(realtype t, N_Vector y, N_Vector ydot, void *user)
{
    sd_impl *d = user;
    int rc = mbk_integrator_calc_ydot(d->ig, t, N_VGetArrayPointer(y), N_VGetArrayPointer(ydot));
    return rc == MBK_OK ? 0 : ydot_fail(d, rc);
}

static int ida_res(realtype t, N_Vector y, N_Vector yp, N_Vector r, void *user)
{
    sd_impl *d = user;
    double *rr = N_VGetArrayPointer(r);
    const double *ypd = N_VGetArrayPointer(yp);
    int rc = mbk_integrator_calc_ydot(d->ig, t, N_VGetArrayPointer(y), rr);
    if (rc != MBK_OK) return ydot_fail(d, rc);
    for (int i = 0; i < d->ny; ++i) rr[i] = ypd[i] - rr[i];
    return 0;
}

static int sd_g(sd_impl *d, realtype t, N_Vector y, realtype *g)
{
    int rc = ig_calc_roots(d->ig, t, N_VGetArrayPointer(y), g);
    /* SUNDIALS' root functions cannot fail recoverably: any failure ends the step */
    return rc == MBK_OK ? 0 : (cb_fail_counted(d, rc, true), -1);
}

static int cv_g(realtype t, N_Vector y, realtype *g, void *user) { return sd_g(user, t, y, g); }

static int ida_g(realtype t, N_Vector y, N_Vector yp, realtype *g, void *user)
{
    (void)yp;
    return sd_g(user, t, y, g);
}

/* Realizations to Acceleration a Jacobian took beyond its base point's: differences take one
   per column and one back at the base point; the analytic one none, except its central
   differences over z (two per column of y and two more back at y) and, for a System that is
   not multibody, the differences it falls back to. (Numeric pieces inside the derivatives,
   mbk_system_get_derivative_info, are not counted.) */
static long sd_jac_realizations(const sd_impl *d, const mbk_state *s, bool fd)
{
    mbk_derivative_info info;
    if (fd || mbk_system_get_derivative_info(d->ig->sys, s, &info) < 0 || !info.multibody) return d->ny + 1;
    int nz = d->ny - mbk_state_get_nq(s) - mbk_state_get_nu(s);
    return nz > 0 ? 2L * d->ny + 2 : 0;
}

/* Row-major d ydot / d y at (t, y) into d->jac, on the scratch State. Allocation-free.
   SUNDIALS asks for it right after evaluating f at the same point on that State, whose
   realization is then reused. */
static int sd_calc_jac(sd_impl *d, realtype t, N_Vector y)
{
    mbk_state *s = d->ig->scratch;
    const double *yv = N_VGetArrayPointer(y);
    int rc;
    bool same = mbk_state_get_time(s) == t && memcmp(mbk_state_get_y(s), yv, (size_t)d->ny * sizeof(double)) == 0;
    if (!same && ((rc = mbk_state_set_time(s, t)) < 0 || (rc = mbk_state_set_y(s, yv, d->ny)) < 0))
        return cb_fail(d, rc);
    bool base = mbk_state_get_stage(s) < MBK_STAGE_ACCELERATION;
    bool fd = d->ig->set.jacobian_source == MBK_JACOBIAN_FD;
    rc = fd ? mbk_system_calc_ydot_jacobian_fd(d->ig->sys, s, d->jac)
            : mbk_system_calc_ydot_jacobian(d->ig->sys, s, d->jac);
    if (rc < 0) return cb_fail(d, rc);
    d->ig->stats.rhs_evaluations += (base ? 1 : 0) + sd_jac_realizations(d, s, fd);
    return 0;
}

static int cv_jac(realtype t, N_Vector y, N_Vector fy, SUNMatrix J, void *user, N_Vector t1, N_Vector t2,
                  N_Vector t3)
{
    (void)fy, (void)t1, (void)t2, (void)t3;
    sd_impl *d = user;
    int rc = sd_calc_jac(d, t, y);
    if (rc != 0) return rc;
    for (int j = 0; j < d->ny; ++j)
        for (int i = 0; i < d->ny; ++i) SM_ELEMENT_D(J, i, j) = d->jac[i * d->ny + j];
    return 0;
}

static int ida_jac(realtype t, realtype cj, N_Vector y, N_Vector yp, N_Vector r, SUNMatrix J, void *user,
                   N_Vector t1, N_Vector t2, N_Vector t3)
{
    (void)yp, (void)r, (void)t1, (void)t2, (void)t3;
    sd_impl *d = user;
    int rc = sd_calc_jac(d, t, y);
    if (rc != 0) return rc;
    for (int j = 0; j < d->ny; ++j)
        for (int i = 0; i < d->ny; ++i) SM_ELEMENT_D(J, i, j) = (i == j ? cj : 0.0) - d->jac[i * d->ny + j];
    return 0;
}

/* CVODE BDF projection: ycur onto the constraint manifold through the scratch State. */
static int cv_proj(realtype t, N_Vector ycur, N_Vector corr, realtype eps, N_Vector err, void *user)
{
    (void)eps, (void)err;
    sd_impl *d = user;
    mbk_integrator *ig = d->ig;
    mbk_state *s = ig->scratch;
    double *y = N_VGetArrayPointer(ycur), *c = N_VGetArrayPointer(corr);
    int rc;
    if ((rc = mbk_state_set_time(s, t)) < 0 || (rc = mbk_state_set_y(s, y, d->ny)) < 0) return cb_fail(d, rc);
    ig->stats.projections++;
    /* Projected well inside the integration tolerance (d->proj_tol), so that what the
       projection leaves is no noise in the history; the constraint tolerance if that fails. */
    rc = mbk_system_project(ig->sys, s, d->proj_tol);
    if (rc == MBK_ECONVERGE && d->proj_tol < ig->set.constraint_tol) {
        ig->stats.projections++;
        rc = mbk_system_project(ig->sys, s, ig->set.constraint_tol);
    }
    if (rc < 0) return cb_fail(d, rc == MBK_ECONVERGE ? MBK_ERETRY : rc);
    const double *yp = mbk_state_get_y(s);
    for (int i = 0; i < d->ny; ++i) {
        c[i] = yp[i] - y[i];
        y[i] = yp[i];
    }
    return 0;
}

/* ------------------------------------------------------------------ */
/* Setup                                                                */
/* ------------------------------------------------------------------ */

static void sd_free_solver(sd_impl *d)
{
    if (d->mem) {
        if (d->kind == SD_IDA) IDAFree(&d->mem);
        else CVodeFree(&d->mem);
    }
    d->mem = NULL;
    if (d->LS) SUNLinSolFree(d->LS);
    if (d->NLS) SUNNonlinSolFree(d->NLS);
    if (d->A) SUNMatDestroy(d->A);
    if (d->y) N_VDestroy(d->y); /* made on the State's memory: only the wrapper goes */
    if (d->yp) N_VDestroy(d->yp);
    d->LS = NULL;
    d->NLS = NULL;
    d->A = NULL;
    d->y = d->yp = NULL;
    mbk_free(d->roots);
    mbk_free(d->rootdir);
    mbk_free(d->jac);
    mbk_free(d->ybuf);
    mbk_free(d->g);
    d->roots = d->rootdir = NULL;
    d->jac = d->ybuf = d->g = NULL;
}

/* MBK status for a SUNDIALS failure flag, with the message recorded. */
static int sd_fail(sd_impl *d, int flag, const char *what, double t)
{
    int status = MBK_EINTEGRATOR;
    bool cb = d->cb_status != 0;
    if (cb) status = fatal_callback(d) ? d->cb_status : d->cb_status == MBK_ENOTFINITE ? MBK_ENOTFINITE : MBK_EINTEGRATOR;
    bool ida = d->kind == SD_IDA;
    if (flag == (ida ? IDA_MEM_FAIL : CV_MEM_FAIL)) status = MBK_ENOMEM;
    if (flag == CV_ILL_INPUT || (!ida && flag == CV_TOO_CLOSE)) status = MBK_EINVAL;
    if (!ida && (flag == CV_PROJFUNC_FAIL || flag == CV_REPTD_PROJFUNC_ERR))
        status = cb && d->cb_status != MBK_ERETRY ? d->cb_status : MBK_ECONVERGE;
    const char *hint = "";
    char min_hint[200];
    double hmin = d->ig->set.min_step;
    bool at_min = flag == (ida ? IDA_ERR_FAIL : CV_ERR_FAILURE) || flag == (ida ? IDA_CONV_FAIL : CV_CONV_FAILURE);
    if (flag == CV_TOO_MUCH_ACC) hint = "; loosen the tolerances";
    else if (at_min && hmin > 0) { /* SUNDIALS stops at the user's minimum step: say so first */
        snprintf(min_hint, sizeof min_hint, "; a minimum step of %g is set with mbk_integrator_set_min_step: "
                 "lower it, or set 0 to allow steps down to round-off", hmin);
        hint = min_hint;
    } else if (!cb && at_min)
        hint = "; the tolerances may be too tight, or the model has a discontinuity or a singularity here";
    return mbk_set_error(status, "%s %s failed at t = %.17g (flag %d): %s%s%s%s", sd_name(d), what, t, flag,
                         d->sd_msg[0] ? d->sd_msg : "no message", hint, cb ? "; after: " : "",
                         cb ? d->cb_msg : "");
}

#define SD_TRY(call, what)                                                      \
    do {                                                                        \
        int flag_ = (call);                                                     \
        if (flag_ < 0) return sd_fail(d, flag_, what, t0);                      \
    } while (0)

/* Tolerances, step limits and the Jacobian choice. */
static int sd_apply_settings(sd_impl *d)
{
    const mbk_integrator_settings *set = &d->ig->set;
    double t0 = mbk_state_get_time(d->ig->cur);
    bool ida = d->kind == SD_IDA;
    /* Restart when the output's projection moved y by more than 1/sqrt(tol) in the error
       test's norm: the projection removes a drift normal to the constraint manifold to first
       order, and what it leaves, about |drift|^2 / L for a model of size L, stays within the
       tolerance (docs/integrators.md, section 3). */
    double tol_hi = fmax(set->rel_tol, set->abs_tol);
    double tol_lo = set->rel_tol > 0 && set->abs_tol > 0 ? fmin(set->rel_tol, set->abs_tol) : tol_hi;
    d->restart_norm = 1.0 / sqrt(tol_hi);
    d->proj_tol = fmin(set->constraint_tol, fmax(0.01 * tol_lo, 1e3 * DBL_EPSILON));
    if (!d->mem) return MBK_OK; /* ny = 0: no solver; the empty step reads the settings */
    double maxh = isfinite(set->max_step) ? set->max_step : 0.0;
    if (ida) {
        SD_TRY(IDASStolerances(d->mem, set->rel_tol, set->abs_tol), "setting tolerances");
        SD_TRY(IDASetMaxStep(d->mem, maxh), "setting the maximum step");
        SD_TRY(IDASetMinStep(d->mem, set->min_step), "setting the minimum step");
        SD_TRY(IDASetInitStep(d->mem, d->restored_step ? d->restored_h : set->initial_step), "setting the initial step");
        SD_TRY(IDASetJacFn(d->mem, set->jacobian_source != MBK_JACOBIAN_SUNDIALS_DQ ? ida_jac : NULL),
               "setting the Jacobian");
    } else {
        SD_TRY(CVodeSStolerances(d->mem, set->rel_tol, set->abs_tol), "setting tolerances");
        SD_TRY(CVodeSetMaxStep(d->mem, maxh), "setting the maximum step");
        SD_TRY(CVodeSetMinStep(d->mem, set->min_step), "setting the minimum step");
        SD_TRY(CVodeSetInitStep(d->mem, d->restored_step ? d->restored_h : set->initial_step), "setting the initial step");
        if (d->kind == SD_BDF) {
            SD_TRY(CVodeSetJacFn(d->mem, set->jacobian_source != MBK_JACOBIAN_SUNDIALS_DQ ? cv_jac : NULL),
                   "setting the Jacobian");
            /* An analytic Jacobian costs about as much as factorizing the Newton matrix, so every
               setup gets a fresh one (fewer Newton failures and steps: 330 -> 270 on the
               20-link stiff chain, 0.85x the time); differences cost ny ydots each and keep
               SUNDIALS' reuse for up to 51 steps (docs/derivatives.md, "A stiff whole run"). */
            SD_TRY(CVodeSetJacEvalFrequency(d->mem, set->jacobian_source == MBK_JACOBIAN_ANALYTIC ? 1 : 51),
                   "setting the Jacobian's evaluation frequency");
        }
    }
    d->use_jac = set->jacobian_source != MBK_JACOBIAN_SUNDIALS_DQ;
    return MBK_OK;
}

/* IDA on y and yp (from the State's ydot) at t0, with the dense LAPACK solver and the
   witnesses as roots. */
static int ida_create(sd_impl *d, const mbk_state *s, double t0)
{
    d->yp = N_VClone(d->y);
    d->mem = IDACreate(d->ctx);
    if (!d->yp || !d->mem) return mbk_set_error(MBK_ENOMEM, "IDA: out of memory");
    memcpy(N_VGetArrayPointer(d->yp), mbk_state_get_ydot(s), (size_t)d->ny * sizeof(double));
    SD_TRY(IDASetErrHandlerFn(d->mem, sd_err, d), "setting the error handler");
    SD_TRY(IDAInit(d->mem, ida_res, t0, d->y, d->yp), "initializing");
    SD_TRY(IDASetUserData(d->mem, d), "setting user data");
    SD_TRY(IDASetMaxNumSteps(d->mem, -1), "setting the step limit");
    d->A = sd_dense_matrix(d->ny, d->ctx);
    d->LS = d->A ? sd_lapack_dense_solver(d->ny, mbk_state_get_nq(s), d->ctx) : NULL;
    if (!d->LS) return mbk_set_error(MBK_ENOMEM, "IDA: could not make the dense linear solver");
    SD_TRY(IDASetLinearSolver(d->mem, d->LS, d->A), "attaching the linear solver");
    if (d->nroots > 0) {
        SD_TRY(IDARootInit(d->mem, d->nroots, ida_g), "setting up root finding");
        SD_TRY(IDASetRootDirection(d->mem, d->rootdir), "setting root directions");
        SD_TRY(IDASetNoInactiveRootWarn(d->mem), "setting root warnings");
    }
    return MBK_OK;
}

/* CVODE on y at t0: BDF with the dense LAPACK solver and mbk's projection, or Adams
   with the fixed-point iteration; the witnesses as roots. */
static int cvode_create(sd_impl *d, const mbk_state *s, double t0)
{
    d->mem = CVodeCreate(d->kind == SD_BDF ? CV_BDF : CV_ADAMS, d->ctx);
    if (!d->mem) return mbk_set_error(MBK_ENOMEM, "CVODE: out of memory");
    SD_TRY(CVodeSetErrHandlerFn(d->mem, sd_err, d), "setting the error handler");
    SD_TRY(CVodeInit(d->mem, cv_rhs, t0, d->y), "initializing");
    SD_TRY(CVodeSetUserData(d->mem, d), "setting user data");
    SD_TRY(CVodeSetMaxNumSteps(d->mem, -1), "setting the step limit");
    if (d->kind == SD_BDF) {
        d->A = sd_dense_matrix(d->ny, d->ctx);
        d->LS = d->A ? sd_lapack_dense_solver(d->ny, mbk_state_get_nq(s), d->ctx) : NULL;
        if (!d->LS) return mbk_set_error(MBK_ENOMEM, "CVODE: could not make the dense linear solver");
        SD_TRY(CVodeSetLinearSolver(d->mem, d->LS, d->A), "attaching the linear solver");
        SD_TRY(CVodeSetProjFn(d->mem, cv_proj), "setting the projection");
        SD_TRY(CVodeSetProjErrEst(d->mem, SUNFALSE), "setting the projection error estimate");
    } else {
        d->NLS = SUNNonlinSol_FixedPoint(d->y, 0, d->ctx);
        if (!d->NLS) return mbk_set_error(MBK_ENOMEM, "CVODE: could not make the fixed-point solver");
        SD_TRY(CVodeSetNonlinearSolver(d->mem, d->NLS), "attaching the fixed-point solver");
    }
    if (d->nroots > 0) {
        SD_TRY(CVodeRootInit(d->mem, d->nroots, cv_g), "setting up root finding");
        SD_TRY(CVodeSetRootDirection(d->mem, d->rootdir), "setting root directions");
        SD_TRY(CVodeSetNoInactiveRootWarn(d->mem), "setting root warnings");
    }
    return MBK_OK;
}

/* A fresh run's bookkeeping at t0: counters, flags, messages, and the roots' storage and
   directions (one per witness). */
static int reset_run(sd_impl *d, mbk_integrator *ig, double t0)
{
    d->ny = ig->ny;
    d->nroots = ig_num_roots(ig);
    d->nst = d->netf = d->ncfn = d->nje = 0;
    d->need_reinit = false;
    d->restored_step = false;
    d->t_ret = t0;
    d->root_pending = false;
    d->tstop_set = false;
    d->sd_msg[0] = d->cb_msg[0] = '\0';
    d->cb_status = 0;
    size_t nr = d->nroots > 0 ? (size_t)d->nroots : 1;
    d->roots = mbk_malloc(nr * sizeof *d->roots);
    d->rootdir = mbk_malloc(nr * sizeof *d->rootdir);
    if (!d->roots || !d->rootdir) return MBK_ENOMEM;
    for (int i = 0; i < d->nroots; ++i) {
        mbk_event_direction dir = ig_root_direction(ig, i);
        d->rootdir[i] = dir == MBK_RISING ? 1 : dir == MBK_FALLING ? -1 : 0;
    }
    return MBK_OK;
}

/* Build the solver for the current State (sizes, witnesses, y pointer). */
static int sd_setup(void *impl, mbk_integrator *ig)
{
    sd_impl *d = impl;
    d->ig = ig;
    sd_free_solver(d);
    mbk_state *s = ig_upd_cur(ig);
    const double t0 = mbk_state_get_time(s);
    int rc = reset_run(d, ig, t0);
    if (rc < 0) return rc;
    if (d->ny == 0) { /* nothing for SUNDIALS to integrate: see sd_step_empty */
        d->g = mbk_malloc(3 * (size_t)(d->nroots > 0 ? d->nroots : 1) * sizeof *d->g);
        return d->g ? MBK_OK : MBK_ENOMEM;
    }
    d->jac = mbk_malloc((size_t)d->ny * (size_t)d->ny * sizeof *d->jac);
    d->ybuf = mbk_malloc(2 * (size_t)d->ny * sizeof *d->ybuf);
    if (!d->jac || !d->ybuf) return MBK_ENOMEM;
    d->y = N_VMake_Serial(d->ny, (double *)mbk_state_get_y(s), d->ctx);
    if (!d->y) return mbk_set_error(MBK_ENOMEM, "%s: could not make the state vector", sd_name(d));
    sd_fast_vector_ops(d->y); /* SUNDIALS clones its own vectors from this one */
    rc = d->kind == SD_IDA ? ida_create(d, s, t0) : cvode_create(d, s, t0);
    return rc < 0 ? rc : sd_apply_settings(d);
}

/* Restart at the current State (history dropped, as after a discontinuity); counted in
   the statistics' reinitializations, whatever asked for it. */
static int sd_restart(sd_impl *d)
{
    mbk_state *s = ig_upd_cur(d->ig);
    double t0 = mbk_state_get_time(s);
    N_VSetArrayPointer((double *)mbk_state_get_y(s), d->y);
    if (d->kind == SD_IDA) {
        memcpy(N_VGetArrayPointer(d->yp), mbk_state_get_ydot(s), (size_t)d->ny * sizeof(double));
        SD_TRY(IDAReInit(d->mem, t0, d->y, d->yp), "restarting");
    } else {
        SD_TRY(CVodeReInit(d->mem, t0, d->y), "restarting");
    }
    d->nst = d->netf = d->ncfn = d->nje = 0;
    d->need_reinit = false;
    d->t_ret = t0;
    d->root_pending = false;
    d->ig->stats.reinitializations++;
    return MBK_OK;
}

static int sd_reinit(void *impl, mbk_integrator *ig, mbk_stage lowest)
{
    sd_impl *d = impl;
    if (lowest == MBK_STAGE_INFINITY) return sd_apply_settings(d);
    if (lowest <= MBK_STAGE_INSTANCE || ig->ny != d->ny || ig_num_roots(ig) != d->nroots) {
        ig->stats.reinitializations++; /* a new solver for the new layout: a restart too */
        return sd_setup(d, ig);
    }
    d->need_reinit = true;
    return MBK_OK;
}

/* Add SUNDIALS' counters since the last look to the integrator's statistics. */
static void sd_stats(sd_impl *d)
{
    long nst = 0, netf = 0, ncfn = 0, nje = 0;
    if (d->kind == SD_IDA) {
        IDAGetNumSteps(d->mem, &nst);
        IDAGetNumErrTestFails(d->mem, &netf);
        IDAGetNumNonlinSolvConvFails(d->mem, &ncfn);
        IDAGetNumJacEvals(d->mem, &nje);
    } else {
        CVodeGetNumSteps(d->mem, &nst);
        CVodeGetNumErrTestFails(d->mem, &netf);
        CVodeGetNumNonlinSolvConvFails(d->mem, &ncfn);
        if (d->kind == SD_BDF) CVodeGetNumJacEvals(d->mem, &nje);
    }
    mbk_integrator_stats *st = &d->ig->stats;
    st->steps_taken += nst - d->nst;
    st->error_test_failures += netf - d->netf;
    st->convergence_failures += ncfn - d->ncfn;
    st->steps_attempted += (nst - d->nst) + (netf - d->netf) + (ncfn - d->ncfn);
    st->jacobian_evaluations += nje - d->nje;
    d->nst = nst;
    d->netf = netf;
    d->ncfn = ncfn;
    d->nje = nje;
}

/* Whether a witness going from a to b crosses zero in direction dir (rootdir's sign
   convention), as the driver counts crossings for the RK family. */
static bool sd_crossing(double a, double b, int dir)
{
    bool rising = a < 0 && b >= 0, falling = a > 0 && b <= 0;
    return dir > 0 ? rising : dir < 0 ? falling : (rising || falling);
}

/* A step of a System with no continuous variables: straight to t_stop (or one maximum
   step). Its witnesses can only change with t (and discrete variables, which only
   handlers change), so they are compared at both ends; a crossing is narrowed with the
   Illinois method (bisection after 12 tries) to about 100 ulps of t, and the step ends
   just past the first one, with its roots reported to the driver. */
static int sd_step_empty(sd_impl *d, mbk_integrator *ig, double t_stop)
{
    mbk_state *s = ig_upd_cur(ig);
    const double t0 = mbk_state_get_time(s), *y = mbk_state_get_y(s);
    double t1 = t_stop;
    int n = d->nroots, rc;
    if (isfinite(ig->set.max_step) && t0 + ig->set.max_step < t_stop) t1 = t0 + ig->set.max_step;
    d->need_reinit = false;
    ig->stats.steps_attempted++;
    ig->stats.steps_taken++;
    double *lo = d->g, *hi = d->g + n, *mid = d->g + 2 * n;
    bool any = false;
    if (n > 0) {
        if ((rc = ig_calc_roots(ig, t0, y, lo)) < 0 || (rc = ig_calc_roots(ig, t1, y, hi)) < 0) return rc;
        for (int i = 0; i < n && !any; ++i) any = sd_crossing(lo[i], hi[i], d->rootdir[i]);
    }
    if (any) {
        double tlo = t0, thi = t1, tol = 4.0 * ig_min_step(ig, t1), alo = 1.0, ahi = 1.0;
        int last = 0;
        for (int iter = 0; thi - tlo > tol && iter < 200; ++iter) {
            double tg = thi;
            for (int i = 0; i < n; ++i) {
                if (!sd_crossing(lo[i], hi[i], d->rootdir[i])) continue;
                double a = alo * lo[i], b = ahi * hi[i];
                double tc = tlo + (a == b ? 0.5 : a / (a - b)) * (thi - tlo);
                if (tc < tg) tg = tc;
            }
            if (iter >= 12 || !isfinite(tg)) tg = 0.5 * (tlo + thi);
            tg = fmin(fmax(tg, tlo + 0.5 * tol), thi - 0.5 * tol);
            if ((rc = ig_calc_roots(ig, tg, y, mid)) < 0) return rc;
            bool cross = false;
            for (int i = 0; i < n && !cross; ++i) cross = sd_crossing(lo[i], mid[i], d->rootdir[i]);
            double *spare = cross ? hi : lo; /* the end that moves to tg */
            if (cross) {
                thi = tg;
                hi = mid;
                ahi = 1.0;
                if (last == 1) alo *= 0.5;
                last = 1;
            } else {
                tlo = tg;
                lo = mid;
                alo = 1.0;
                if (last == -1) ahi *= 0.5;
                last = -1;
            }
            mid = spare;
        }
        for (int i = 0; i < n; ++i) d->roots[i] = sd_crossing(lo[i], hi[i], d->rootdir[i]);
        ig_report_roots(ig, d->roots);
        t1 = thi;
    }
    return ig_finish_in_place(ig, t1);
}

/* After the first step from a checkpoint, restarts go back to the settings' initial step. */
static void sd_end_restored_step(sd_impl *d)
{
    if (!d->restored_step) return;
    d->restored_step = false;
    double h0 = d->ig->set.initial_step;
    if (d->kind == SD_IDA) IDASetInitStep(d->mem, h0);
    else CVodeSetInitStep(d->mem, h0);
}

/* The solver's solution at t (within its last step) into the State's y. */
static int sd_interpolate(sd_impl *d, double t)
{
    int flag = d->kind == SD_IDA ? IDAGetDky(d->mem, t, 0, d->y) : CVodeGetDky(d->mem, t, 0, d->y);
    return flag < 0 ? sd_fail(d, flag, "interpolating", t) : MBK_OK;
}

/* One solver step from t0 (SUNDIALS' one-step mode) into the State's y: never past the
   driver's hard stop, which it lands on exactly; report times and reporter times do not
   bound it (sd_step interpolates back to them). *root: the step ended at roots. */
static int sd_advance(sd_impl *d, double t0, double t_stop, double *tret, bool *root)
{
    const bool ida = d->kind == SD_IDA;
    const double t_hard = d->ig->t_hard_stop;
    if (isfinite(t_hard) || d->tstop_set) {
        /* SUNDIALS 6 has no way to clear a stop time: one no longer wanted is moved out of reach */
        double ts = isfinite(t_hard) ? t_hard : DBL_MAX;
        SD_TRY(ida ? IDASetStopTime(d->mem, ts) : CVodeSetStopTime(d->mem, ts), "setting the stop time");
        d->tstop_set = isfinite(t_hard);
    }
    int flag = ida ? IDASolve(d->mem, t_stop, tret, d->y, d->yp, IDA_ONE_STEP)
                   : CVode(d->mem, t_stop, d->y, tret, CV_ONE_STEP);
    sd_stats(d);
    if (flag >= 0) sd_end_restored_step(d);
    /* CVODE's fixed-point solver (Adams) can treat a callback's -1 as a failed iteration and
       go on with a smaller step: a fatal status ends the run here. */
    if (flag >= 0 && fatal_callback(d)) flag = ida ? IDA_RES_FAIL : CV_RHSFUNC_FAIL;
    if (flag < 0) return sd_fail(d, flag, "step", *tret);
    *root = flag == (ida ? IDA_ROOT_RETURN : CV_ROOT_RETURN);
    /* the step the solver will try next: the integrator's predicted step size */
    realtype h_next = 0;
    if (ida) IDAGetCurrentStep(d->mem, &h_next);
    else CVodeGetCurrentStep(d->mem, &h_next);
    d->ig->h_pred = h_next;
    if (*root) {
        if (ida) IDAGetRootInfo(d->mem, d->roots);
        else CVodeGetRootInfo(d->mem, d->roots);
    }
    if (!(*tret > t0)) {
        /* the step size fell below round-off (e.g. every step past here fails) */
        snprintf(d->sd_msg, sizeof d->sd_msg, "its step size fell below round-off at t = %.17g", *tret);
        return sd_fail(d, CV_ERR_FAILURE, "could not advance:", *tret);
    }
    return MBK_OK;
}

/* Advance the State to t1 <= t_stop. The solver steps as it would on its own, and the State
   is interpolated back to t_stop when a step passed it (a report or reporter time); the
   solver then goes on from its own step's end, with its history, and no restart. */
static int sd_step(void *impl, mbk_integrator *ig, double t_stop)
{
    sd_impl *d = impl;
    if (d->ny == 0) return sd_step_empty(d, ig, t_stop);
    mbk_state *s = ig_upd_cur(ig);
    double t0 = mbk_state_get_time(s), t1;
    int rc;
    if (d->need_reinit && (rc = sd_restart(d)) < 0) return rc;
    N_VSetArrayPointer((double *)mbk_state_get_y(s), d->y);
    d->cb_status = 0;
    d->sd_msg[0] = d->cb_msg[0] = '\0';
    if (d->t_ret > t0) {
        /* The solver's last step ended at t_ret, past the State: interpolate again, or give
           that step's end and the roots it stopped at. */
        t1 = fmin(t_stop, d->t_ret);
        if ((rc = sd_interpolate(d, t1)) < 0) return rc;
        if (t1 == d->t_ret && d->root_pending) {
            d->root_pending = false;
            ig_report_roots(ig, d->roots);
        }
    } else if (t_stop - t0 <= 8 * DBL_EPSILON * fmax(1.0, fabs(t_stop))) {
        /* A stop a few ulps away (e.g. 7 * 0.1 after 0.7): too close for SUNDIALS to step;
           y does not change at this scale. Move the time and restart from there. */
        t1 = t_stop;
        d->need_reinit = true;
    } else {
        double tret = t0;
        bool root = false;
        if ((rc = sd_advance(d, t0, t_stop, &tret, &root)) < 0) return rc;
        d->t_ret = tret;
        t1 = fmin(t_stop, tret);
        if (t1 < tret && (rc = sd_interpolate(d, t1)) < 0) return rc;
        d->root_pending = root && t1 < tret;
        if (root && t1 == tret) ig_report_roots(ig, d->roots);
    }
    /* The solver wrote y into the State's memory: invalidate, project, realize. */
    if (!mbk_state_upd_y(s)) return mbk_last_status();
    if ((rc = mbk_state_set_time(s, t1)) < 0) return rc;
    memcpy(d->ybuf, mbk_state_get_y(s), (size_t)d->ny * sizeof(double));
    ig->stats.projections++;
    if ((rc = mbk_system_project(ig->sys, s, ig->set.constraint_tol)) < 0) return rc;
    /* The solver keeps its own solution (CVODE BDF projects it inside its steps, so only
       interpolated points move here; Adams and IDA drift off the constraint manifold as
       they would on their own): restart it from the projected one once the two differ by
       more than restart_norm. */
    const double *y = mbk_state_get_y(s);
    double *delta = d->ybuf + d->ny;
    for (int i = 0; i < d->ny; ++i) delta[i] = y[i] - d->ybuf[i];
    if (mbk_integrator_calc_error_norm(ig, delta, d->ybuf, y) > d->restart_norm) d->need_reinit = true;
    return ig_finish_in_place(ig, t1);
}

/* Checkpoints: SUNDIALS' step size to try next, its order and internal time (the
   order, the history and the Nordsieck array cannot be put back into SUNDIALS). */
typedef struct sd_saved {
    double h_next, t_solver;
    int order, pad;
} sd_saved;

static int sd_save(void *impl, const mbk_integrator *ig, void *buf, size_t capacity, size_t *size)
{
    (void)ig;
    const sd_impl *d = impl;
    sd_saved v = {0, 0, 0, 0};
    if (d->mem && d->kind == SD_IDA) {
        IDAGetCurrentStep(d->mem, &v.h_next);
        IDAGetCurrentOrder(d->mem, &v.order);
        IDAGetCurrentTime(d->mem, &v.t_solver);
    } else if (d->mem) {
        CVodeGetCurrentStep(d->mem, &v.h_next);
        CVodeGetCurrentOrder(d->mem, &v.order);
        CVodeGetCurrentTime(d->mem, &v.t_solver);
    }
    *size = sizeof v;
    if (buf && capacity >= sizeof v) memcpy(buf, &v, sizeof v);
    return MBK_OK;
}

/* After a load the solver was set up afresh (sd_setup) at the saved State: its first
   step tries the saved step size. */
static int sd_load(void *impl, mbk_integrator *ig, const void *buf, size_t size)
{
    sd_impl *d = impl;
    sd_saved v;
    if (size != sizeof v)
        return mbk_set_error(MBK_EPARSE, "%s expects %zu bytes of its own state, got %zu", sd_name(d), sizeof v, size);
    memcpy(&v, buf, sizeof v);
    if (!(isfinite(v.h_next) && v.h_next >= 0))
        return mbk_set_error(MBK_EPARSE, "%s: the saved step size %g is not finite and >= 0", sd_name(d), v.h_next);
    if (!d->mem || v.h_next == 0) return MBK_OK;
    d->restored_h = isfinite(ig->set.max_step) ? fmin(v.h_next, ig->set.max_step) : v.h_next;
    d->restored_step = true; /* kept by sd_apply_settings until the first step */
    return sd_apply_settings(d);
}

static void sd_destroy(void *impl)
{
    sd_impl *d = impl;
    sd_free_solver(d);
    if (d->ctx) SUNContext_Free(&d->ctx);
    mbk_free(d);
}

static mbk_integrator *sd_create(const mbk_system *sys, sd_kind kind)
{
    sd_impl *d = mbk_calloc(1, sizeof *d);
    if (!d) return NULL;
    d->kind = kind;
    if (SUNContext_Create(NULL, &d->ctx) != 0) {
        mbk_free(d);
        mbk_set_error(MBK_ENOMEM, "%s: could not create the SUNDIALS context", sd_name(d));
        return NULL;
    }
    mbk_integrator_ops ops = {.name = kind == SD_BDF ? "CVODE BDF" : kind == SD_ADAMS ? "CVODE Adams" : "IDA",
                              .order = kind == SD_ADAMS ? 12 : 5,
                              .initialize = sd_setup,
                              .reinitialize = sd_reinit,
                              .step = sd_step,
                              .destroy = sd_destroy,
                              .save = sd_save,
                              .load = sd_load};
    mbk_integrator *ig = ig_create(sys, &ops, d, IG_IN_PLACE);
    if (ig) d->ig = ig;
    return ig;
}

mbk_integrator *mbk_integrator_create_cvode(const mbk_system *sys, mbk_cvode_method method)
{
    if (method != MBK_CVODE_BDF && method != MBK_CVODE_ADAMS) {
        mbk_set_error(MBK_EINVAL, "mbk_integrator_create_cvode: method %d is not MBK_CVODE_BDF or "
                                  "MBK_CVODE_ADAMS", (int)method);
        return NULL;
    }
    return sd_create(sys, method == MBK_CVODE_BDF ? SD_BDF : SD_ADAMS);
}

mbk_integrator *mbk_integrator_create_ida(const mbk_system *sys) { return sd_create(sys, SD_IDA); }
