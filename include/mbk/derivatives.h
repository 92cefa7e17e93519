/* mbk/derivatives.h - analytic first derivatives of the multibody dynamics.
 *
 * At the State's own t, q, u (realized as needed; a State below Instance is
 * refused, a successful call leaves the State at Acceleration with its
 * variables untouched). Matrices are dense and row-major. q-derivatives have
 * nq columns, one per coordinate as the State holds it: a quaternion's four
 * coordinates are differentiated as plain coordinates of the functions the
 * kernel evaluates, which normalize them first (so every derivative along q
 * itself is zero). u-derivatives have nu columns. These functions need a
 * multibody System whose matter subsystem owns every q and u
 * (mbk_multibody_create, plus any force subsystems); mbk_system_calc_ydot_jacobian
 * works on any System. Nothing here allocates. docs/derivatives.md gives the
 * formulas, layouts, conventions and costs.
 *
 * What is exact: every built-in mobilizer and force element, gravity, and
 * custom mobilizers and force elements that supply their derivative ops.
 * What is numeric (central differences, Richardson extrapolated, about 1e-10
 * relative; mbk_system_get_derivative_info says which): a custom mobilizer
 * without calc_derivatives (on its own, cheaply), a custom force element
 * without calc_jacobian and the forces of any subsystem that is not matter, a
 * force subsystem or the events subsystem (perturbing the State and
 * realizing it), and, with constraints enabled, the part of the constrained
 * accelerations the constraints add (through the constrained solve). */
#ifndef MBK_DERIVATIVES_H
#define MBK_DERIVATIVES_H

#include <stdbool.h>
#include "mbk/forces.h"
#include "mbk/matter.h"

/* Declarations here are the public API: exported from the shared library, whose
   other symbols are hidden (CMakeLists.txt, "symbol visibility"). */
#if defined(__GNUC__)
#pragma GCC visibility push(default)
#endif
#ifdef __cplusplus
extern "C" {
#endif

/* Inverse dynamics r(q, u, udot) = M(q) udot + C(q, u) - f_applied(q, u), with
   f_applied the mobility forces plus J^T times the body forces of every enabled
   force element of every force subsystem (their own q and u dependence
   included; constraint forces are not applied forces). dr_dq (nu x nq) and
   dr_du (nu x nu), either may be NULL (not both); udot NULL: the State's udot. */
int mbk_system_calc_residual_derivatives(const mbk_system *sys, mbk_state *s, const double *udot,
                                         double *dr_dq, double *dr_du);
/* Forward dynamics: dudot/dq (nu x nq) and dudot/du (nu x nu) of the State's udot,
   either may be NULL (not both). Unconstrained: -M^-1 (dr/dq, dr/du) at the
   State's udot. With constraints the constrained udot is differentiated (the
   constraints' part numerically). */
int mbk_system_calc_acceleration_derivatives(const mbk_system *sys, mbk_state *s, double *dudot_dq,
                                             double *dudot_du);
/* The same into row-strided arrays: entry (i, j) at dudot_dq[i * ldq + j] (ldq >= nq)
   and dudot_du[i * ldu + j] (ldu >= nu); for writing straight into a bigger matrix. */
int mbk_system_calc_acceleration_derivatives_ld(const mbk_system *sys, mbk_state *s, double *dudot_dq,
                                                int ldq, double *dudot_du, int ldu);
/* Mobility-space Jacobians of the applied forces f_applied(q, u) above (what
   ArtiSynth's MechSystem calls addPosJacobian and addVelJacobian): df/dq (nu x nq)
   and df/du (nu x nu) ADDED into the arrays; either may be NULL (not both). */
int mbk_system_add_force_jacobians(const mbk_system *sys, mbk_state *s, double *df_dq, double *df_du);
/* The same with row strides. */
int mbk_system_add_force_jacobians_ld(const mbk_system *sys, mbk_state *s, double *df_dq, int ldq,
                                      double *df_du, int ldu);

/* Which parts of the derivatives above are exact and which are numeric, for a
   System and a State's enabled elements and constraints (Instance or later). */
typedef struct mbk_derivative_info {
    bool multibody;               /* a matter subsystem owns every q and u (else only
                                     mbk_system_calc_ydot_jacobian works: numerically) */
    bool exact;                   /* nothing below is numeric */
    int numeric_mobilizers;       /* bodies whose mobilizer derivatives are numeric (in part) */
    int first_numeric_body;       /* the first of them, -1 if none */
    int numeric_force_elements;   /* enabled custom force elements without calc_jacobian */
    int first_numeric_force;      /* the first of them (index in its force subsystem), -1 if none */
    int first_numeric_force_subsystem; /* and its force subsystem's index, -1 if none */
    int numeric_subsystems;       /* subsystems that may apply forces that are not
                                     elements (not matter, forces or events, and with a
                                     realize_dynamics op): numeric */
    bool numeric_constraints;     /* constraints are enabled: their part of dudot is numeric */
    bool numeric_z;               /* the State has z: the ydot Jacobian's z rows and columns
                                     are numeric */
} mbk_derivative_info;
int mbk_system_get_derivative_info(const mbk_system *sys, const mbk_state *s, mbk_derivative_info *info);

/* qdot = N(q) u: d qdot / d q (nq x nq, row stride ldq) and N = d qdot / d u
   (nq x nu, row stride ldu), either may be NULL; matter's own q and u (Velocity). */
int mbk_matter_calc_qdot_derivatives(const mbk_matter *m, const mbk_state *s, double *dqdot_dq, int ldq,
                                     double *dqdot_du, int ldu);

#ifdef __cplusplus
}
#endif
#if defined(__GNUC__)
#pragma GCC visibility pop
#endif
#endif
