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

#ifdef __cplusplus
}
#endif
#endif
