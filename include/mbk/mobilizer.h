/* mbk/mobilizer.h - mobilizers (joints): the ops every mobilizer implements.
 *
 * A mobilizer connects frame F on the parent to frame M on the body. Its q
 * give X_FM(q); its u give the velocity of M in F, V_FM = H_FM(q) u, with
 * both parts expressed in F and the linear part the velocity of M's origin.
 * Built-in mobilizers are ops tables like any custom one. Coordinates follow
 * Simbody (see docs/matter.md for every built-in). `euler` is the matter
 * subsystem's Model-stage choice of Euler angles instead of quaternions;
 * mobilizers without quaternions ignore it. */
#ifndef MBK_MOBILIZER_H
#define MBK_MOBILIZER_H

#include <stdbool.h>
#include "mbk/function.h"
#include "mbk/spatial.h"

/* Declarations here are the public API: exported from the shared library, whose
   other symbols are hidden (CMakeLists.txt, "symbol visibility"). */
#if defined(__GNUC__)
#pragma GCC visibility push(default)
#endif
#ifdef __cplusplus
extern "C" {
#endif

/* The most q and u one mobilizer may have. */
#define MBK_MOBILIZER_MAX_Q 7
#define MBK_MOBILIZER_MAX_U 6

/* Derivatives of a mobilizer's kinematics at (q, u), for the analytic
   derivatives of the dynamics (mbk/derivatives.h, docs/derivatives.md). q
   are the coordinates as the State holds them: a mobilizer with normalize_q
   gives the derivatives of X_FM(normalize(q)), H_FM(normalize(q)), ... with
   respect to q before normalization (so, for a quaternion, nothing changes
   along q itself). Everything is expressed in F, H and HDot_u at M's origin,
   as the ops below return them. Entries beyond nq and nu are not read. */
typedef struct mbk_mobilizer_derivatives {
    mbk_mat33 dR[MBK_MOBILIZER_MAX_Q];   /* d R_FM / d q_k */
    mbk_vec3 dp[MBK_MOBILIZER_MAX_Q];    /* d p_FM / d q_k */
    mbk_spatial_vec dH[MBK_MOBILIZER_MAX_Q][MBK_MOBILIZER_MAX_U]; /* d H_j / d q_k at [k][j] */
    mbk_spatial_vec dHdot_u_dq[MBK_MOBILIZER_MAX_Q]; /* d (HDot u) / d q_k (zero if HDot is) */
    mbk_spatial_vec dHdot_u_du[MBK_MOBILIZER_MAX_U]; /* d (HDot u) / d u_j */
    double dqdot_dq[MBK_MOBILIZER_MAX_Q][MBK_MOBILIZER_MAX_Q]; /* d qdot_i / d q_k at [i][k] */
    int numeric; /* set nonzero by an op that found some part by finite differences */
} mbk_mobilizer_derivatives;

typedef struct mbk_mobilizer_ops {
    const char *name; /* shown in messages */
    int nu;           /* number of u (0..6) */
    int nq;           /* number of q (0..7) when get_nq is NULL */
    /* Number of q for the quaternion (euler = false) or Euler-angle mode; NULL: nq. */
    int (*get_nq)(const void *impl, bool euler);
    /* Default q (zero rotation); NULL: zeros. */
    void (*default_q)(const void *impl, bool euler, double *q);
    /* X_FM(q). q is normalized first when normalize_q is set. */
    void (*calc_X_FM)(const void *impl, bool euler, const double *q, mbk_transform *X_FM);
    /* The nu columns of H_FM(q): V_FM = sum_j H[j] u_j, in F. */
    void (*calc_H_FM)(const void *impl, bool euler, const double *q, mbk_spatial_vec *H);
    /* HDot_FM(q, u) u, the velocity-product part of A_FM, in F; NULL: zero (constant H). */
    void (*calc_Hdot_u)(const void *impl, bool euler, const double *q, const double *u,
                        mbk_spatial_vec *Hdot_u);
    /* qdot = N(q) u; NULL: qdot = u (needs nq == nu). */
    void (*calc_qdot)(const void *impl, bool euler, const double *q, const double *u, double *qdot);
    /* qdotdot = N udot + NDot u; NULL: qdotdot = udot. */
    void (*calc_qdotdot)(const void *impl, bool euler, const double *q, const double *u,
                         const double *udot, double *qdotdot);
    /* u that best gives qdot (N's inverse or pseudo-inverse); NULL: u = qdot. */
    void (*calc_u_from_qdot)(const void *impl, bool euler, const double *q, const double *qdot,
                             double *u);
    /* Put q back on its manifold (unit quaternions); NULL: nothing to do. */
    void (*normalize_q)(const void *impl, bool euler, double *q);
    /* q whose X_FM best fits the given one; 0 or a negative status. */
    int (*set_q_to_fit_transform)(const void *impl, bool euler, const mbk_transform *X_FM,
                                  double *q);
    /* u whose V_FM best fits the given one at q; 0 or a negative status. */
    int (*set_u_to_fit_velocity)(const void *impl, bool euler, const double *q,
                                 const mbk_spatial_vec *V_FM, double *u);
    /* Free impl; called when the owning System is destroyed. */
    void (*destroy)(void *impl);
    /* Optional: the derivatives above at the State's q (not normalized) and u;
       return 0, >0 for a recoverable failure or <0 for a fatal one. NULL: the
       kernel finds them by central differences of the ops above (Richardson
       extrapolated, about 1e-10 relative) and says so (mbk_derivative_info). */
    int (*calc_derivatives)(const void *impl, bool euler, const double *q, const double *u,
                            mbk_mobilizer_derivatives *d);
} mbk_mobilizer_ops;

/* A mobilizer: ops plus the implementation data the ops receive. */
typedef struct mbk_mobilizer {
    const mbk_mobilizer_ops *ops; /* what it does */
    void *impl;                   /* its data (owned by the System once added) */
} mbk_mobilizer;

/* No relative motion. */
mbk_mobilizer mbk_mobilizer_weld(void);
/* Rotation q about F's z (= M's z). */
mbk_mobilizer mbk_mobilizer_pin(void);
/* Translation q along F's x. */
mbk_mobilizer mbk_mobilizer_slider(void);
/* p_FM = q (3), no rotation; u = v_FM in F. */
mbk_mobilizer mbk_mobilizer_translation(void);
/* Quaternion of R_FM (or body-fixed XYZ angles); u = w_FM in F. */
mbk_mobilizer mbk_mobilizer_ball(void);
/* Ball then p_FM: q = (quaternion or angles, p_FM); u = (w_FM, v_FM) in F. */
mbk_mobilizer mbk_mobilizer_free(void);
/* Rotation q about z with translation pitch*q along z (pitch: length per radian). */
mbk_mobilizer mbk_mobilizer_screw(double pitch);
/* Rotation q0 about F's x, then q1 about the new y; u = qdot. */
mbk_mobilizer mbk_mobilizer_universal(void);
/* Rotation q0 about z and translation q1 along z; u = qdot. */
mbk_mobilizer mbk_mobilizer_cylinder(void);
/* Rotation q0 about z, then translation (q1, q2) along F's x and y; u = qdot. */
mbk_mobilizer mbk_mobilizer_planar(void);
/* Body-fixed XYZ angles (3 q); u = qdot (singular at q1 = +-pi/2). */
mbk_mobilizer mbk_mobilizer_gimbal(void);
/* Body-fixed XYZ angles then p_FM in F (6 q); u = qdot. */
mbk_mobilizer mbk_mobilizer_bushing(void);
/* Like Simbody's MobilizedBody::FunctionBased: six scalar functions of the
   mobilizer's nq coordinates (1..6) give three angles s0..s2 and three
   lengths s3..s5, s_i = fns[i](q[coord_indices[i][0]], ...,
   q[coord_indices[i][n_coords[i] - 1]]), and
       R_FM = R(a0, s0) R(a1, s1) R(a2, s2),   p_FM = s3 a3 + s4 a4 + s5 a5,
   where a_i = axes[i] normalized and R(a, s) is the right-handed rotation by
   s about a. The rotations are a body-fixed sequence: a0 is fixed in F, a1
   in the frame after the first rotation, a2 in the frame after the second;
   the translation axes a3..a5 are fixed in F. axes == NULL means the
   defaults x, y, z, x, y, z. u = qdot (nu = nq); V_FM = H u with H from the
   functions' first partial derivatives and HDot u from their second.
   Needs: each fns[i] valid with max_derivative_order >= 2 and n_args ==
   n_coords[i]; each list of distinct indices in [0, nq) (coord_indices[i]
   may be NULL when n_coords[i] == 0); every q read by some function; axes
   finite and nonzero, the three rotation axes pairwise non-parallel and so
   the three translation axes (|a_i x a_j| > 1e-5, as Simbody); a separate
   function in every slot. The mobilizer takes ownership of the functions
   (the System destroys them with the mobilizer). On bad input it returns
   {NULL, NULL} with MBK_EINVAL recorded (MBK_ENOMEM if out of memory) and
   destroys the functions. Fitting: u by least squares on H; q by
   Gauss-Newton from q = 0 (a local best fit). See docs/custom_mobilizers.md. */
mbk_mobilizer mbk_mobilizer_function_based(int nq, const mbk_function fns[6],
                                           const int *const coord_indices[6],
                                           const int n_coords[6], const mbk_vec3 axes[6]);
/* A custom mobilizer from an ops table; impl is owned by the System once added. */
mbk_mobilizer mbk_mobilizer_custom(const mbk_mobilizer_ops *ops, void *impl);
/* Number of q of a mobilizer in the given mode. */
int mbk_mobilizer_get_nq(const mbk_mobilizer *m, bool euler);
/* The derivatives of a mobilizer's kinematics at (q, u) (q as the State holds it,
   u may be NULL for zero): from its calc_derivatives op, or by central
   differences when it has none (d->numeric is then 1). MBK_OK, MBK_ERETRY or
   MBK_EUSER when the op failed (recoverable or fatal), MBK_EINVAL on bad input. */
int mbk_mobilizer_calc_derivatives(const mbk_mobilizer *m, bool euler, const double *q,
                                   const double *u, mbk_mobilizer_derivatives *d);
/* The same always by central differences of the mobilizer's other ops (to check
   a calc_derivatives op against). */
int mbk_mobilizer_calc_derivatives_numeric(const mbk_mobilizer *m, bool euler, const double *q,
                                           const double *u, mbk_mobilizer_derivatives *d);

#ifdef __cplusplus
}
#endif
#if defined(__GNUC__)
#pragma GCC visibility pop
#endif
#endif
