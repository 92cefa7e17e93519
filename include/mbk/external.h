/* mbk/external.h - what an outside integrator or solver needs beyond the
 * plain ODE view (mbk_system_calc_ydot, mbk/integrator.h): the kinematic
 * coupling qdot = N(q) u, the constraint matrix G as operators, a
 * velocity-only projection, the forces and accelerations of given
 * multipliers, the DAE residual with the constraint rows in it (index 3 and
 * the stabilized index-2 GGL form) and the event witnesses and handlers as
 * calls an outside event driver can make. docs/integrators.md section 8
 * shows how they fit together and maps ArtiSynth's MechSystem and SOFA's
 * solver operations onto them.
 *
 * Sizes. In a System from mbk_multibody_create the matter subsystem owns
 * every q and u, so matter's arrays below are the State's q (nq =
 * mbk_state_get_nq) and u (nu = mbk_state_get_nu). Otherwise they are
 * matter's slices, starting at mbk_state_get_subsystem_q_start(s, k) and
 * _u_start(s, k) with k = mbk_matter_get_subsystem_index(m). m is the
 * number of multipliers (mbk_state_get_num_multipliers), in the State's
 * order: [holonomic rows (mp), nonholonomic rows (mv), acceleration-only
 * rows (ma)], the order of udoterr (mbk/constraints.h).
 *
 * Every call checks its arguments before it changes anything: NULL arrays
 * give MBK_EINVAL, a State below the stage named MBK_ESTAGE, a stale one
 * MBK_ESTALE, NaN or infinity in an input MBK_ENOTFINITE, and the State's
 * variables are then as they were. None allocates: work space lives in the
 * State's cache entries. Input and output arrays must not overlap unless
 * a comment says they may. */
#ifndef MBK_EXTERNAL_H
#define MBK_EXTERNAL_H

#include <stdbool.h>
#include "mbk/constraints.h"
#include "mbk/events.h"
#include "mbk/matter.h"
#include "mbk/system.h"

/* Declarations here are the public API: exported from the shared library, whose
   other symbols are hidden (CMakeLists.txt, "symbol visibility"). */
#if defined(__GNUC__)
#pragma GCC visibility push(default)
#endif
#ifdef __cplusplus
extern "C" {
#endif

/* ---- sizes ---------------------------------------------------------------- */
/* Matter's number of q (Model): 4 per quaternion, so nq >= nu. */
int mbk_matter_get_num_q(const mbk_matter *m, const mbk_state *s);
/* The matter subsystem's index in its System (0 in a multibody System). */
int mbk_matter_get_subsystem_index(const mbk_matter *m);

/* ---- kinematic coupling qdot = N(q) u (Position) --------------------------
   N is nq x nu, block diagonal by body: each block is the body's mobilizer's
   N at the State's normalized q (identity for Pin, Slider and every mobilizer
   with qdot = u; 4 x 3 for a quaternion: qdot = 1/2 (0, w) * q). Quaternion
   and Euler-angle modes give different N: both are exactly what realizing
   Velocity uses. N^+ is the pseudo-inverse (N^+ N = I, nu x nu); for a
   quaternion block N^+ = 2 E^T (u = 2 (qdot q*)_vec), which annihilates the
   direction of q itself, so N N^+ is the projection onto the unit sphere's
   tangent space.
     transpose = false: out = N in     (in: nu values, out: nq)
     transpose = true:  out = N^T in   (in: nq values, out: nu)   */
int mbk_matter_multiply_by_N(const mbk_matter *m, const mbk_state *s, bool transpose, const double *in,
                             double *out);
/*   transpose = false: out = N^+ in     (in: nq values, out: nu)
     transpose = true:  out = (N^+)^T in (in: nu values, out: nq)  */
int mbk_matter_multiply_by_N_pinv(const mbk_matter *m, const mbk_state *s, bool transpose, const double *in,
                                  double *out);

/* ---- the constraint matrix G (m x nu) as operators (Velocity) --------------
   G's rows are the multipliers' equations in u space: the acceleration errors
   are G udot + bias (mbk_matter_calc_constraint_bias), the velocity errors of
   the first mp + mv rows G u + c(t), and the position errors' derivative
   d perr/dq = P N^+ (P = the first mp rows). mbk_matter_calc_G forms it. */
/* Gv = G v (v: nu values, Gv: m), O(n + m), without forming G: the acceleration
   errors at udot = v minus those at udot = 0 (their difference loses about
   eps |bias| to round-off). */
int mbk_matter_multiply_by_G(const mbk_matter *m, const mbk_state *s, const double *v, double *Gv);
/* f = G^T lambda (lambda: m values, f: nu), O(n + m): the generalized forces the
   multipliers' force callbacks produce. lambda and f may overlap. (The same as
   mbk_matter_calc_G_transpose_times, under the operator's name.) */
int mbk_matter_multiply_by_G_transpose(const mbk_matter *m, const mbk_state *s, const double *lambda,
                                       double *f);

/* ---- multipliers given from outside ----------------------------------------
   The State's multipliers are a result of realizing Acceleration (the solve
   M udot + G^T lambda = f, G udot = b). A solver that carries lambda as its
   own unknowns (index-3 and GGL forms below, ArtiSynth's setBilateralForces,
   SOFA's constraint solvers) "sets" them through these two calls. */
/* The forces that multipliers lambda (m values) make the constraints apply:
   body_forces (one per body, Ground at 0, in G, moment about the body origin)
   and, if not NULL, mobility_forces (nu), such that M udot = f_applied - C +
   these; together they are -G^T lambda (the sign of
   mbk_constraint_calc_reaction_forces) (Velocity). */
int mbk_matter_calc_constraint_forces_from_multipliers(const mbk_matter *m, const mbk_state *s,
                                                       const double *lambda, mbk_spatial_vec *body_forces,
                                                       double *mobility_forces);
/* udot (nu) = M^-1 (f_applied - C - G^T lambda) for the given multipliers
   instead of the solved ones, in O(n + m) by the articulated-body sweeps
   (Dynamics: the applied forces of the State). With the State's own
   multipliers it reproduces the State's udot. The State is not changed. */
int mbk_matter_calc_udot_given_multipliers(const mbk_matter *m, const mbk_state *s, const double *lambda,
                                           double *udot);

/* ---- projection ------------------------------------------------------------ */
/* u alone onto the velocity constraints: when some velocity error (uerr:
   holonomic pverr and nonholonomic verr) exceeds tol, one minimum-norm
   correction du (R du = -uerr, R = the first mp + mv rows of G) makes them
   vanish. q, z and t are untouched (mbk_system_project moves q first). Only
   the matter subsystem's constraints: other subsystems' project ops are not
   called. Realizes s to Velocity first and leaves it there; MBK_ECONVERGE
   when the errors stay above tol (inconsistent constraints), with u as it
   was. */
int mbk_system_project_u(const mbk_system *sys, mbk_state *s, double tol);

/* ---- a non-redundant set of constraint rows (Velocity) ---------------------
   A rank-revealing QR factorization with column pivoting of G^T (LAPACK
   dgeqp3): rows gets the indices (multiplier order, ascending) of rank rows
   of G that are linearly independent, *n_rows their number; a pivot below
   1e-9 of the largest counts as dependent. rows needs room for m entries.
   Give the result to the DAE forms below (mbk_dae_options.rows) when
   constraints are redundant (mbk_matter_get_constraint_rank < m): their
   Newton matrices are then nonsingular. The choice depends on q: compute it
   once, on a consistent State, and keep it while the motion stays away from
   the singular configurations where the rank changes. */
int mbk_matter_select_independent_constraints(const mbk_matter *m, const mbk_state *s, int *rows,
                                              int *n_rows);

/* ---- the DAE with the constraint rows in it --------------------------------
   For solvers that want the constraints in the residual (IDA with algebraic
   components, a hand-written index-3 Newton, ArtiSynth's and SOFA's
   constraint solvers) rather than solved inside the State. F(t, y, yp) = 0
   with y, yp and r of length n:

     y = [ q (nq) | u (nu) | z (nz) | lambda (nlambda) | mu (nmu, GGL only) ]
     r = [ r_q    | r_u    | r_z    | r_lambda         | r_mu               ]

   q, u, z are the State's y (mbk_state_get_y); lambda holds the multipliers of
   the kept constraint rows K (mbk_dae_options.rows, all m rows by default), in
   the multiplier order; mu (GGL) one second multiplier per kept holonomic row.
   Rows not kept have multiplier zero and no equation: keep a non-redundant set
   (mbk_matter_select_independent_constraints) when rows are redundant. The
   entries of yp past nq + nu + nz are not read (they have no derivative).

   MBK_DAE_INDEX3 (nlambda = |K|, nmu = 0):
     r_q      = qp - N(q) u                        (= qp - qdot)
     r_u      = M(q) up + C(q, u) - f(t, q, u) + G_K(q)^T lambda
     r_z      = zp - zdot(t, y)
     r_lambda = [ perr(t, q)          for the kept holonomic rows,
                  verr(t, q, u)       for the kept nonholonomic rows,
                  aerr(t, q, u, up)   for the kept acceleration-only rows ]
   MBK_DAE_GGL (stabilized index 2: nlambda = |K|, nmu = kept holonomic rows):
     r_q      = qp - N(q) (u - P_K(q)^T mu)
     r_u, r_z   as above
     r_lambda = [ pverr(t, q, u) = P u + c(t); verr; aerr(up) ]   (velocity level)
     r_mu     = perr(t, q) of the kept holonomic rows
   MBK_DAE_INDEX1: y = [q u z], r = yp - ydot(t, y): mbk_system_calc_dae_residual.

   Here f is the applied forces of every force element (mobility forces plus
   J^T body forces), C the velocity terms, M the mass matrix: the second block
   is the inverse-dynamics residual of mbk_matter_calc_residual_force plus the
   multipliers' generalized forces, so it has the units of force and the sign
   of "left side minus right side" (M up + G^T lambda = f - C), as every other
   block has (yp - what the model says). P is the holonomic rows of G (u
   space), so d perr/dq = P N^+. On an exact solution mu = 0, and r = 0 at
   y, yp from mbk_system_get_dae_values.

   Jacobian structure (dense blocks, - for zero; G_K, P_K, V_K, A_K the kept
   rows of G and of its holonomic, nonholonomic and acceleration-only parts):
     dr/dyp:        q       u        z     lambda  mu
       r_q          I       -        -       -      -
       r_u          -       M        -       -      -
       r_z          -       -        I       -      -
       r_lambda     -    A_K rows    -       -      -   (only acceleration-only rows)
       r_mu         -       -        -       -      -
     dr/dy:         q       u        z     lambda  mu
       r_q          *      -N        -       -    N P_K^T (GGL)
       r_u          *       *        *     G_K^T    -
       r_z          *       *        *       -      -
       r_lambda   (index 3) holonomic rows P_K N^+ | - | - | - | -
                  (GGL) holonomic rows        *    | P_K | - | - | -
                  nonholonomic rows           *    | V_K | - | - | -
                  acceleration-only rows      *    |  *  | - | - | -
       r_mu       P_K N^+   -        -       -      -
   (* a block that is in general dense: the derivatives of N, M, C, f, G with q,
   u; mbk_system_calc_ydot_jacobian and docs/derivatives.md give them.) The
   index-3 Newton matrix dr/dy + a dr/dyp is the saddle-point system
   [a M + ..., G^T; P N^+ ..., 0], nonsingular when the kept rows are
   independent. */
typedef enum mbk_dae_form {
    MBK_DAE_INDEX1 = 1, /* y = [q u z]: r = yp - ydot (constraints solved inside the State) */
    MBK_DAE_GGL = 2,    /* stabilized index 2: y = [q u z lambda mu] */
    MBK_DAE_INDEX3 = 3  /* index 3: y = [q u z lambda] */
} mbk_dae_form;

typedef struct mbk_dae_options {
    mbk_dae_form form;
    const int *rows; /* kept constraint rows, multiplier indices strictly increasing;
                        NULL: all m rows */
    int n_rows;      /* how many (ignored when rows is NULL) */
} mbk_dae_options;

typedef struct mbk_dae_layout {
    int n;          /* length of y, yp and r: ny + nlambda + nmu */
    int ny;         /* nq + nu + nz: the State's y, first in y */
    int nq, nu, nz; /* y[0, nq) = q, then u, then z */
    int nlambda;    /* y[ny, ny + nlambda): multipliers of the kept rows */
    int nmu;        /* y[ny + nlambda, n): GGL's mu, one per kept holonomic row */
    int np, nv, na; /* kept rows by kind: lambda's first np are holonomic, the next nv
                       nonholonomic, the last na acceleration-only */
    int m;          /* the State's number of multipliers (all rows) */
} mbk_dae_layout;

/* The sizes of a form (realizes s to Instance; checks the options: MBK_EINVAL for
   an unknown form or rows not strictly increasing in 0..m-1). */
int mbk_system_get_dae_layout(const mbk_system *sys, mbk_state *s, const mbk_dae_options *opt,
                              mbk_dae_layout *layout);
/* The residual r (n values) of the form at (t, y, yp), as above. Sets t and the
   State's y = [q u z] from y and realizes s to Dynamics (Acceleration when the
   System has z, or speeds outside matter, or for MBK_DAE_INDEX1), leaving it
   there; no constraint solve runs at Dynamics, so any y is fine. Input is
   checked before anything changes; a failed realization puts t and y back.
   O(n + m) after the realization. */
int mbk_system_calc_constrained_dae_residual(const mbk_system *sys, mbk_state *s,
                                             const mbk_dae_options *opt, double t, const double *y,
                                             const double *yp, double *r);
/* Consistent y and yp (n values each) of the form from the State (realized to
   Acceleration): [q u z] and [qdot udot zdot], the State's multipliers on the
   kept rows (when rows are left out, the multipliers of the kept ones that give
   the same constraint forces, G_K^T lambda_K = G^T lambda, by least squares),
   mu = 0 and yp's lambda and mu parts 0. Initial values for IDA or any DAE
   solver. */
int mbk_system_get_dae_values(const mbk_system *sys, mbk_state *s, const mbk_dae_options *opt, double *y,
                              double *yp);

/* ---- events for an outside driver --------------------------------------------
   The library's integrators watch the *active* witnesses: every witness of the
   events subsystem and those of other subsystems that have a handle_events op.
   These calls give an outside integrator the same list, in the same order
   (stage by stage, Time..Report; within a stage by subsystem; within a
   subsystem by slot), numbered 0..nw-1, so its root finder can watch them, and
   then dispatch what it found exactly as mbk_integrator_step_to does. A
   driver (docs/integrators.md section 8.4):
     1. before a step from State s0: t_s = mbk_system_get_next_scheduled_time and
        the next periodic report time (mbk_system_get_next_report_time); do not
        step past them; w0 = the witnesses at s0;
     2. after the step to s1: w1 = mbk_system_calc_witnesses at (t1, y1) (or
        mbk_system_get_witnesses on s1 realized to mbk_system_get_witness_stage);
        mbk_system_find_witness_crossings(w0, w1) says which crossed;
     3. if any did, locate the first crossing on the step (any root finder
        calling mbk_system_calc_witnesses on a scratch State), step again to just
        past it, and find the crossings over that shorter step;
     4. mbk_system_handle_events_at(sys, s0, s, fired, &result) runs the
        handlers of the fired witnesses and of the scheduled events due at s's
        time (one handle_events call per subsystem, triggered ids first);
     5. if result.lowest_modified <= Report: re-realize, mbk_system_project,
        and restart the integrator when lowest_modified <= Acceleration (after
        Instance or Model changes the witness list itself may change: read
        mbk_system_get_num_witnesses again);
     6. realize to Report and call mbk_system_call_witness_reporters(fired) and
        mbk_system_call_periodic_reporters at reporter times;
     7. stop when result.terminate.
   Crossings follow events.h: rising from < 0 to >= 0, falling from > 0 to <= 0. */

/* Most fired witnesses, and most events of one subsystem, that
   mbk_system_handle_events_at takes at one time (MBK_EINVAL beyond). */
#define MBK_MAX_SIMULTANEOUS_EVENTS 256

typedef struct mbk_witness_info {
    int subsystem;                 /* the subsystem whose witness it is */
    int event_id;                  /* its id there: what handle_events receives */
    mbk_stage stage;               /* realize to this stage to evaluate it */
    mbk_event_direction direction; /* the crossings that count */
    bool reporter;                 /* an event reporter (report it, do not handle it) */
} mbk_witness_info;

/* Number of active witnesses nw (Instance; after a handler changed an Instance- or
   Model-stage variable it may change). */
int mbk_system_get_num_witnesses(const mbk_system *sys, const mbk_state *s);
/* The active witnesses' descriptions, nw entries (Instance). */
int mbk_system_get_witness_info(const mbk_system *sys, const mbk_state *s, mbk_witness_info *info);
/* The highest stage of an active witness (Time when there is none): realize to it
   before reading the witnesses (Instance). */
int mbk_system_get_witness_stage(const mbk_system *sys, const mbk_state *s, mbk_stage *stage);
/* The active witnesses' values w (nw) and, if not NULL, directions, from the State
   (realized to every witness's stage, else MBK_ESTAGE); w may be NULL to read the
   directions only (Instance). */
int mbk_system_get_witnesses(const mbk_system *sys, const mbk_state *s, double *w,
                             mbk_event_direction *directions);
/* The witnesses at (t, y): sets t and y (y NULL: keep the State's), realizes s to
   the witness stage and reads them (nw values): a root finder's function. Refused
   input and failed realizations leave t and y as they were. */
int mbk_system_calc_witnesses(const mbk_system *sys, mbk_state *s, double t, const double *y, double *w);
/* fired[i] = 1 when witness i crossed from w_before[i] to w_after[i] in its direction,
   else 0 (fired may be NULL); returns how many crossed (Instance). */
int mbk_system_find_witness_crossings(const mbk_system *sys, const mbk_state *s, const double *w_before,
                                      const double *w_after, int *fired);
/* Run the handlers of the events that occurred at s's time: the active witnesses
   with fired[i] != 0 (nw flags, e.g. SUNDIALS' rootsfound; NULL: none), reporters
   among them skipped, and, when `from` (a State of the step's start, earlier than
   s) is given, the scheduled events the subsystems report after from's time that
   are due at exactly s's time (MBK_EINVAL if one is due before s: step to it
   first). Each subsystem's handle_events op gets all of its ids in one call,
   triggered ones first, in subsystem order. *result is the merge of what the
   handlers report (lowest stage changed, terminate). The fired witnesses are
   read before any handler runs, so a handler may change Instance- or Model-stage
   variables (the State then drops below Instance). Returns the number of events
   handled (>= 0), or a negative status; a handler that changes t is an error
   (MBK_EUSER). On failure handlers that ran may have changed s: copy the State
   first (mbk_state_copy) if you need to go back. */
int mbk_system_handle_events_at(const mbk_system *sys, const mbk_state *from, mbk_state *s, const int *fired,
                                mbk_event_result *result);
/* Call the event reporters among the fired witnesses (fired: nw flags) on s,
   realized to Report. Returns how many ran. The flags refer to the witness list
   they were found with: if handlers changed Model- or Instance-stage variables
   in between, the list may have changed; then take the reporters' event ids from
   mbk_system_get_witness_info before the handlers and call
   mbk_system_call_event_reporters (events.h) with them. */
int mbk_system_call_witness_reporters(const mbk_system *sys, const mbk_state *s, const int *fired);
/* The earliest time after s's time at which some subsystem has a scheduled event
   (INFINITY when none). Periodic reporters: mbk_system_get_next_report_time. */
int mbk_system_get_next_scheduled_time(const mbk_system *sys, const mbk_state *s, double *t_next);

#ifdef __cplusplus
}
#endif
#if defined(__GNUC__)
#pragma GCC visibility pop
#endif
#endif
