/* mbk/integrator.h - time integrators, the time stepper, and the plain ODE/DAE view.
 *
 * Every integrator has the same interface: create one for a System whose
 * topology is realized, choose its settings, give it an initial State
 * (mbk_integrator_initialize copies it, realizes it and projects it onto the
 * constraint manifold), then advance with mbk_integrator_step_to. The
 * integrator owns its own States; mbk_integrator_get_state gives the current
 * one, realized to Acceleration (or Report when reporters or Report-stage
 * witnesses need it).
 *
 * Built in (docs/integrators.md compares them):
 *   RK-Merson        5-stage, 4th order, embedded error estimate (Simbody's default)
 *   RK4              classical 4th-order Runge-Kutta: fixed step; with no fixed
 *                    step set it is error-controlled by step doubling
 *   explicit Euler   1st order; error-controlled by h/2 |ydot(t+h) - ydot(t)|
 *                    (free: it is the next step's first evaluation) or fixed step
 *   semi-explicit    u first, then q from N(q) times the new u; same control
 *   Euler
 *   CVODE BDF/Adams  SUNDIALS variable-order multistep methods on the State's y
 *                    (no copy), root finding for triggered events
 *   IDA              SUNDIALS BDF on the DAE F(t, y, y') = y' - ydot(t, y)
 *
 * Step sizes, tolerances and the step driver:
 *   - error control uses the weighted RMS norm of the local error estimate,
 *     weights 1 / (rel_tol * max(|y0_i|, |y1_i|) + abs_tol): a step is
 *     accepted when the norm is <= 1;
 *   - after every accepted step the State is projected (mbk_system_project
 *     with the constraint tolerance): quaternions normalized, q then u back on
 *     the constraint manifold;
 *   - the State is at report times, scheduled events and reporter times
 *     exactly: the RK family shortens the last step before one; CVODE and
 *     IDA land only on scheduled events (their stop time) and interpolate
 *     back to report and reporter times with their own interpolant, going
 *     on from their own step's end without a restart;
 *   - no heap allocation per step after mbk_integrator_initialize (except
 *     when an event handler changes a Model- or Instance-stage variable,
 *     which re-lays out the State);
 *   - a System with no state variables (ny = 0) integrates with every one of
 *     them: time advances, scheduled events, triggered events (witnesses of
 *     t only) and reporters run as usual (CVODE and IDA then set up no
 *     SUNDIALS solver; docs/integrators.md section 3).
 *
 * Events (mbk/events.h): triggered events are located to the event
 * tolerance (CVODE and IDA: by their own root finding, to about 100 ulp of
 * t; the RK family: Illinois/secant search on the cubic Hermite
 * interpolant of the step, then the step is taken again to end just past
 * the event), scheduled events are hit exactly, and after handlers the
 * integrator restarts from the lowest stage they changed. Handlers at one
 * time run before reporters at that time; reporters are not events.
 *
 * Failures: step_to returns a negative status and keeps the last good
 * State (mbk_integrator_get_state returns it, realized); mbk_last_error()
 * says what failed, when, and what to do. */
#ifndef MBK_INTEGRATOR_H
#define MBK_INTEGRATOR_H

#include <stdbool.h>
#include <stddef.h>
#include "mbk/events.h"
#include "mbk/state.h"
#include "mbk/system.h"

/* Declarations here are the public API: exported from the shared library, whose
   other symbols are hidden (CMakeLists.txt, "symbol visibility"). */
#if defined(__GNUC__)
#pragma GCC visibility push(default)
#endif
#ifdef __cplusplus
extern "C" {
#endif

typedef struct mbk_integrator mbk_integrator;

typedef enum mbk_cvode_method {
    MBK_CVODE_BDF,  /* stiff: backward differentiation formulas (orders 1-5), Newton iteration */
    MBK_CVODE_ADAMS /* non-stiff: Adams-Moulton (orders 1-12), fixed-point iteration */
} mbk_cvode_method;

/* Where CVODE BDF and IDA take the Jacobian d ydot / d y of their Newton iteration from. */
typedef enum mbk_jacobian_source {
    MBK_JACOBIAN_ANALYTIC,   /* mbk_system_calc_ydot_jacobian (the default; allocation-free) */
    MBK_JACOBIAN_FD,         /* mbk_system_calc_ydot_jacobian_fd: mbk's forward differences */
    MBK_JACOBIAN_SUNDIALS_DQ /* SUNDIALS' own difference quotients (malloc per Jacobian) */
} mbk_jacobian_source;

/* ---- creating ---------------------------------------------------------- */
/* Each returns NULL on failure (mbk_last_error() says why). The System must
   outlive the integrator; its topology may be realized later, before
   mbk_integrator_initialize. */
mbk_integrator *mbk_integrator_create_cvode(const mbk_system *sys, mbk_cvode_method method);
mbk_integrator *mbk_integrator_create_ida(const mbk_system *sys);
/* The integrator of a short name ("rkmerson", "rk4", "euler", "semi-euler", "cvode-bdf",
   "cvode-adams", "ida") or of its display name ("RK-Merson", ...); NULL and MBK_EINVAL
   for an unknown name. */
mbk_integrator *mbk_integrator_create_by_name(const mbk_system *sys, const char *name);
/* The short name of a short or display name (a static string), or NULL and MBK_EINVAL. */
const char *mbk_integrator_find_name(const char *name);
/* The index-th short name (0, 1, ...), NULL past the last: the list of what exists. */
const char *mbk_integrator_get_name_at(int index);
mbk_integrator *mbk_integrator_create_rk4(const mbk_system *sys);
mbk_integrator *mbk_integrator_create_rkmerson(const mbk_system *sys);
mbk_integrator *mbk_integrator_create_semi_explicit_euler(const mbk_system *sys);
mbk_integrator *mbk_integrator_create_explicit_euler(const mbk_system *sys);
/* Destroy an integrator and its States; NULL is ignored. */
void mbk_integrator_destroy(mbk_integrator *ig);
/* "RK-Merson", "RK4", "explicit Euler", "semi-explicit Euler", "CVODE BDF",
   "CVODE Adams", "IDA", or a custom integrator's name. */
const char *mbk_integrator_get_name(const mbk_integrator *ig);

/* ---- settings ---------------------------------------------------------- */
/* Settings may be changed at any time; they take effect at the next step.
   Defaults: accuracy 1e-3 (rel_tol = abs_tol = 1e-3), constraint tolerance =
   accuracy, event tolerance = 0.1 s x accuracy, no fixed step, automatic
   initial step, minimum step 0 (only round-off limits it), no maximum step,
   100000 steps per step_to call, CVODE/IDA Jacobians from
   mbk_system_calc_ydot_jacobian, error estimate projected onto the constraint
   manifold. */
typedef struct mbk_integrator_settings {
    double accuracy;       /* last value given to set_accuracy (or rel_tol) */
    double rel_tol;        /* relative tolerance of the local error */
    double abs_tol;        /* absolute tolerance (same for every y_i, in its units) */
    double constraint_tol; /* projection tolerance for position/velocity constraint errors */
    double event_tol;      /* width of the time window an event is located to (s) */
    double fixed_step;     /* > 0: fixed step size (RK family); 0: variable */
    double initial_step;   /* > 0: first trial step; 0: automatic */
    double min_step;       /* smallest step before failing (0: round-off only) */
    double max_step;       /* largest step (INFINITY: none) */
    long max_steps;        /* steps one step_to call may take before failing */
    bool use_system_jacobian; /* CVODE BDF/IDA: Jacobian from mbk (analytic by default, or
                                 mbk's finite differences); false: SUNDIALS' difference quotients */
    bool project_error_estimate; /* RK family: error estimate projected before the error test */
    mbk_jacobian_source jacobian_source; /* CVODE BDF/IDA: which Jacobian (use_system_jacobian
                                            is false exactly for MBK_JACOBIAN_SUNDIALS_DQ) */
} mbk_integrator_settings;

/* rel_tol = abs_tol = accuracy (Simbody's convention: relative error for values
   above 1 unit, absolute below); also resets the constraint and event
   tolerances unless they were set explicitly. 0 < accuracy < 1. */
int mbk_integrator_set_accuracy(mbk_integrator *ig, double accuracy);
/* Separate relative and absolute tolerances (>= 0, not both 0). */
int mbk_integrator_set_tolerances(mbk_integrator *ig, double rel_tol, double abs_tol);
/* Tolerance of position/velocity constraint errors after projection (> 0). */
int mbk_integrator_set_constraint_tolerance(mbk_integrator *ig, double tol);
/* Width of the time window a triggered event is located to (> 0). */
int mbk_integrator_set_event_tolerance(mbk_integrator *ig, double dt);
/* Fixed step h > 0 (RK family; CVODE and IDA refuse it with MBK_EINVAL);
   0 returns to variable steps. Steps are still shortened to hit report
   times, scheduled events and reporters exactly. */
int mbk_integrator_set_fixed_step(mbk_integrator *ig, double h);
/* First trial step (> 0), or 0 for automatic. */
int mbk_integrator_set_initial_step(mbk_integrator *ig, double h);
/* Smallest step (>= 0); an integrator that needs a smaller one fails. */
int mbk_integrator_set_min_step(mbk_integrator *ig, double h);
/* Largest step (> 0; INFINITY for none). */
int mbk_integrator_set_max_step(mbk_integrator *ig, double h);
/* Most steps one mbk_integrator_step_to call may take (> 0). */
int mbk_integrator_set_max_steps(mbk_integrator *ig, long n);
/* CVODE BDF and IDA: Jacobians from mbk (on, the default: mbk_system_calc_ydot_jacobian, or
   mbk_system_calc_ydot_jacobian_fd when set_jacobian_source chose MBK_JACOBIAN_FD;
   allocation-free) or, off, from SUNDIALS' own difference quotients (which allocate a
   vector wrapper with plain malloc at every Jacobian). Ignored by Adams and the RK family. */
int mbk_integrator_set_use_system_jacobian(mbk_integrator *ig, bool on);
/* CVODE BDF and IDA: the Jacobian's source (mbk_jacobian_source; default
   MBK_JACOBIAN_ANALYTIC); MBK_EINVAL for another value. Ignored by Adams and the RK family. */
int mbk_integrator_set_jacobian_source(mbk_integrator *ig, mbk_jacobian_source source);
/* RK family (default on): before the error test, remove from the local error estimate its
   components normal to the constraint manifold (mbk_system_project_error_estimate), as
   Simbody does; the projection after each step removes those errors anyway. Off: the
   raw estimate is tested. Ignored without constraints and by CVODE/IDA. */
int mbk_integrator_set_project_error_estimate(mbk_integrator *ig, bool on);
/* Copy the current settings out. */
int mbk_integrator_get_settings(const mbk_integrator *ig, mbk_integrator_settings *out);

/* ---- running ----------------------------------------------------------- */
/* Copy `initial` (any initialized State of the System), realize it, project
   it (q then u, constraint tolerance) and realize it to Acceleration; reset
   statistics. May allocate. Can be called again to restart. A State that is
   NULL, of another System or layout, or at a non-finite time is refused with the
   integrator unchanged; a failure after that (realizing, projecting) leaves it
   needing another initialize. */
int mbk_integrator_initialize(mbk_integrator *ig, const mbk_state *initial);
/* Advance to t_report (>= the current time):
     MBK_OK          the State is at t_report (events there already handled);
     MBK_EVENT       stopped early, at an event that was handled; call again;
     MBK_TERMINATED  a handler asked to stop (the State is at that time);
     negative        failure: the State is the last good one, and mbk_last_error()
                     says what happened. After MBK_EINTEGRATOR for too many steps
                     you may simply call again. */
int mbk_integrator_step_to(mbk_integrator *ig, double t_report);
/* Advance to t_final handling every event, calling report(user, sys, state)
   after every step (NULL: no per-step report). Returns MBK_OK at t_final,
   MBK_TERMINATED, or a negative status as step_to does. */
int mbk_integrator_integrate(mbk_integrator *ig, double t_final, mbk_reporter_fn report,
                             void *user);
/* The current State, realized to Acceleration; valid until the next call
   on the integrator (NULL before initialize). */
const mbk_state *mbk_integrator_get_state(const mbk_integrator *ig);
/* Time of the current State (NaN before initialize). */
double mbk_integrator_get_time(const mbk_integrator *ig);
/* Size of the last step taken (how far the State advanced: CVODE and IDA step past report
   times and interpolate back to them; 0 before the first) and of the method's next trial
   step (for CVODE and IDA, the step the solver will try next). */
double mbk_integrator_get_previous_step_size(const mbk_integrator *ig);
double mbk_integrator_get_predicted_step_size(const mbk_integrator *ig);

typedef struct mbk_integrator_stats {
    long steps_taken;          /* accepted steps */
    long steps_attempted;      /* accepted + rejected */
    long rhs_evaluations;      /* realizations to Acceleration for a derivative */
    long error_test_failures;  /* steps rejected by the error test */
    long convergence_failures; /* CVODE/IDA nonlinear-solver failures */
    long projections;          /* calls of mbk_system_project */
    long events_handled;       /* events whose handlers ran (triggered + scheduled) */
    long realization_failures; /* recoverable failures (realize >0, NaN; CVODE/IDA also
                                  MBK_ESINGULAR, MBK_ECONVERGE): step retried smaller */
    long reinitializations;    /* restarts of any cause, history dropped: CVODE/IDA every
                                  CVodeReInit/IDAReInit or solver rebuild after initialize
                                  (handlers, an undone step, projection drift); RK family
                                  and custom integrators after handlers changed the State */
    long jacobian_evaluations; /* CVODE/IDA Jacobians */
    long witness_evaluations;  /* extra realizations to locate events */
    long reports;              /* reporter calls (periodic and event reporters) */
} mbk_integrator_stats;
/* Statistics since the last mbk_integrator_initialize (zeros on NULL). */
void mbk_integrator_get_stats(const mbk_integrator *ig, mbk_integrator_stats *stats);

/* ---- custom integrators -------------------------------------------------
   An integrator is an ops table plus impl. The driver (mbk_integrator_step_to)
   owns the States, the stop times, events, reporters and failures; the step
   op advances the current State by one step:

     1. read the current State (mbk_integrator_get_state: realized to
        Acceleration, so ydot = mbk_state_get_ydot(s) is the first stage);
     2. evaluate stages with mbk_integrator_calc_ydot (on a scratch State);
     3. measure the local error with mbk_integrator_calc_error_norm;
     4. commit an accepted step with mbk_integrator_commit_step(t1, y1), which
        projects and realizes the new State and makes it current.

   Never step past t_stop; land on it exactly when it is within reach.
   MBK_ERETRY (from calc_ydot or commit) means: retry with a smaller step.
   The driver locates events on the cubic Hermite interpolant between the
   last two States and may move back to the previous State to step again to
   the event; it then calls reinitialize (as it does after event handlers). */
typedef struct mbk_integrator_ops {
    const char *name; /* shown in messages */
    int order;        /* order of accuracy (>= 1) */
    /* After mbk_integrator_initialize set the current State up (realized, projected).
       Allocate work space here. May be NULL. */
    int (*initialize)(void *impl, mbk_integrator *ig);
    /* The current State was changed from outside the step op: by event handlers
       (lowest_modified is the lowest stage they changed: Model means sizes may have
       changed), or by the driver moving back a step (Time), or settings changed
       (Infinity). Forget history. May be NULL. */
    int (*reinitialize)(void *impl, mbk_integrator *ig, mbk_stage lowest_modified);
    /* Take one step toward t_stop (> current t); return MBK_OK after a commit,
       a negative status on failure (the current State must not have changed). */
    int (*step)(void *impl, mbk_integrator *ig, double t_stop);
    /* Free impl (called by mbk_integrator_destroy). May be NULL. */
    void (*destroy)(void *impl);
    /* Checkpoints (mbk/checkpoint.h), both optional: save writes the step op's own
       state (what, beyond the current State and the driver's, decides its next steps:
       the next step size, ...) into buf (capacity bytes) and sets *size; with buf NULL
       it only sets *size. NULL: nothing of its own is saved. */
    int (*save)(void *impl, const mbk_integrator *ig, void *buf, size_t capacity, size_t *size);
    /* load restores what save wrote, after mbk_integrator_load has set the current
       State up and called initialize; refuse (negative status, message set) bytes it
       cannot use. NULL: the op starts afresh after a load, as after initialize. */
    int (*load)(void *impl, mbk_integrator *ig, const void *buf, size_t size);
} mbk_integrator_ops;

/* Integrator from an ops table (copied) and impl (owned from now on, even on failure). */
mbk_integrator *mbk_integrator_create_custom(const mbk_system *sys,
                                             const mbk_integrator_ops *ops, void *impl);
/* The impl given at creation. */
void *mbk_integrator_get_impl(const mbk_integrator *ig);
/* The System integrated. */
const mbk_system *mbk_integrator_get_system(const mbk_integrator *ig);
/* Writable statistics, for step ops to count attempts and failures (the driver
   counts steps_taken, rhs_evaluations, projections, events and reports). */
mbk_integrator_stats *mbk_integrator_upd_stats(mbk_integrator *ig);
/* ydot at (t, y) on a scratch State (counts one rhs evaluation). MBK_ERETRY when
   a subsystem reported a recoverable failure, MBK_ENOTFINITE when y or the
   derivative is not finite (retry smaller too), other negatives are fatal. */
int mbk_integrator_calc_ydot(mbk_integrator *ig, double t, const double *y, double *ydot);
/* Weighted RMS norm of an error estimate err for a step from y0 to y1. */
double mbk_integrator_calc_error_norm(const mbk_integrator *ig, const double *err,
                                      const double *y0, const double *y1);
/* Make (t1, y1) the current State: projected and realized to Acceleration; the
   former current State becomes the previous one. MBK_ERETRY (recoverable) or a
   negative status leave the current State as it was. */
int mbk_integrator_commit_step(mbk_integrator *ig, double t1, const double *y1);

/* ---- the plain ODE/DAE view for external integrators ---------------------
   y = [q u z] (nq + nu + nz = ny, mbk_state_get_ny); ydot = [qdot udot zdot].
   Each function sets t and y in s, realizes it to Acceleration and leaves it
   there; mbk_system_calc_ydot and mbk_system_project are in mbk/system.h. */

/* DAE residual r = yp - ydot(t, y), length ny: F(t, y, y') = 0 is the ODE.
   With constraints the residual keeps this form and length: ydot comes from
   the constrained acceleration solve (M udot + G^T lambda = f, G udot = b:
   index 1, multipliers inside the State), and position and velocity
   constraints are enforced by projection (mbk_system_project) after each
   step: the "index-1 plus projection" formulation docs/integrators.md
   explains. Solvers that want the constraint rows and the multipliers in
   the residual (index 3, stabilized index 2) use
   mbk_system_calc_constrained_dae_residual (mbk/external.h). */
int mbk_system_calc_dae_residual(const mbk_system *sys, mbk_state *s, double t,
                                 const double *y, const double *yp, double *r);
/* Jacobian of ydot at the State's own t and y (realized as needed), row-major:
   J[i*ny + j] = d ydot_i / d y_j. J has ny*ny entries. Analytic for a multibody
   System (mbk/derivatives.h: the q rows from d(N u)/dq and N, the u rows from
   mbk_system_calc_acceleration_derivatives, with the numeric pieces that
   mbk_system_get_derivative_info reports; the z rows and columns by central
   differences); other Systems fall back to mbk_system_calc_ydot_jacobian_fd.
   Allocation-free; the State is left at Acceleration at its original y. */
int mbk_system_calc_ydot_jacobian(const mbk_system *sys, mbk_state *s, double *J);
/* The same by forward differences with steps sqrt(eps) * max(|y_j|, 1) (about
   1e-8 accurate): each q column realizes from Position, each u column from
   Velocity, each z column from Dynamics. */
int mbk_system_calc_ydot_jacobian_fd(const mbk_system *sys, mbk_state *s, double *J);

#ifdef __cplusplus
}
#endif
#if defined(__GNUC__)
#pragma GCC visibility pop
#endif
#endif
