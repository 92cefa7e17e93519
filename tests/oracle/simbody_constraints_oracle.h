/* simbody_constraints_oracle.h -- Simbody 3.7's built-in constraints as a
 * plain-C oracle, and the exact equations Simbody uses for each (the spec
 * mbk's constraints follow).
 *
 * orc_eval_constraints() builds the bodies of an orc_model (simbody_oracle.h:
 * same body numbering, q/u layout, Euler-angle flag, quaternion
 * normalization and model gravity as orc_eval) plus a list of orc_constraint,
 * loads t, q, u and applied forces, realizes Stage::Acceleration and returns
 * Simbody's constraint errors, multipliers, constrained accelerations,
 * constraint Jacobian and the reaction forces of every constraint.
 *
 * Every formula below was checked numerically against Simbody 3.7 (Debian's
 * libsimbody-dev) by test_constraints_oracle_selfcheck.c, which re-implements
 * it in plain C from body poses, velocities and accelerations and compares to
 * 1e-12 (relative to max(1,|value|)) at random, unsatisfied states, for
 * every built-in in several placements (Ancestor = Ground, = a constrained
 * body, = another body), in quaternion and Euler-angle mode; the derivative
 * relations by central differences (1e-7 / 1e-6). Where the public Simbody
 * source differs from 3.7 (Rod), 3.7 is what is written here.
 *
 * ===========================================================================
 * EQUATIONS OF MOTION AND THE SIGN OF THE MULTIPLIERS
 *   M(q) udot + C(q,u) + G^T lambda = f_applied      (gravity + applied forces)
 *   G udot + bias = udoterr  (= 0 when the constraints can be met)
 * G (m x nu) = [P; V; A]: P = d(pverr)/du (holonomic), V = d(verr)/du
 * (nonholonomic), A = d(aerr)/d(udot) (acceleration-only); bias = the
 * acceleration errors at udot = 0 (calcBiasForAccelerationConstraints).
 * The constraint forces are on the LEFT-hand side: for each constraint the
 * oracle returns F_c (c_body_forces) and f_c (c_mobility_forces) with
 *   G^T lambda = sum over constraints of ( J^T F_c + f_c )
 * so the forces a constraint actually EXERTS on the bodies are -F_c, -f_c
 * (negate them to use them as applied forces): inverse dynamics with
 * f_applied - sum(F_c, f_c) at the constrained udot leaves zero residual.
 *   F_c: one spatial force per body, (moment about the BODY ORIGIN, force),
 *        expressed in GROUND (Simbody builds them in the Ancestor frame and
 *        re-expresses them; these are its getConstrainedBodyForcesAsVector),
 *        scattered to entry 6*b of a 6*(n_bodies+1) array; Ground's entry is
 *        filled when Ground is a constrained body; zero for bodies the
 *        constraint does not touch.
 *   f_c: one generalized force per u (getConstrainedMobilityForcesAsVector
 *        scattered to system u indices); a q-level force g_q is converted
 *        to u-forces as N^T g_q (= g_q where qdot = u).
 *   c_power = Constraint::calcPower = -(sum_b F_c,b . V_GB + f_c . u)
 *           = -lambda . (G u) over the constraint's rows.
 * Examples (checked): a body hanging from Ground by a Rod has lambda = +m g
 * (tension); hanging as body2 of a Ball, lambda = (0,0,-m g) (minus the
 * force the Ball exerts on body2); with body1/body2 swapped, (0,0,+m g);
 * held by ConstantSpeed(vertical u, 0), lambda = -m g (M udot + lambda = f).
 *
 * ===========================================================================
 * LAYOUT (Simbody's system arrays; n constraints in the order given)
 *   qerr (n_qerr = mp + n_quat):  [perr of each HOLONOMIC constraint, in
 *       constraint order] then one |q|-1 per quaternion-using mobilizer (in
 *       body order as seen with raw q outside the self-test; ~0 here because
 *       the oracle normalizes q).
 *   uerr (mp + mv):   [pverr of the holonomic constraints, in order]
 *                     [verr of the nonholonomic constraints, in order]
 *   udoterr, multipliers (m = mp + mv + ma):
 *                     [paerr holonomic...] [vaerr nonholonomic...] [aerr acc-only...]
 *   Constraint i's slots (getIndexOfMultipliersInUse; -1 when it has none):
 *       c_p_start = sum_{j<i} mp_j,   c_v_start = mp + sum_{j<i} mv_j,
 *       c_a_start = mp + mv + sum_{j<i} ma_j.
 *   Rows of G, bias: in the udoterr order. Pq (calcPq): mp rows, holonomic
 *   order, nq compact columns; Pq qdot = pverr(u) - pverr(u=0), i.e. Pq is
 *   P N^-1 built from the VELOCITY equations -- it is d(perr)/dq only where
 *   pverr = d/dt perr (not Ball / Weld rows 3-5 when perr != 0, see there).
 *   Per-constraint vectors (c_perr, c_pverr, c_pvaerr, c_multipliers, E =
 *   ORC_CON_MAX_EQ slots each, unused slots 0): that constraint's equations
 *   in the order [position..., velocity..., acceleration-only...] -- which for
 *   the built-ins (each of one kind) is just its equations in the order below.
 *
 * ===========================================================================
 * NOTATION for the definitions. All vectors are in Ground (G) unless noted.
 * Body b: R_b, p_b (pose), w_b, v_b (angular velocity, velocity of its
 * origin), al_b, a_b (accelerations) -- orc_eval's X_GB, V_GB, A_GB. A station
 * s of b is at p_b + R_b s. "The material point of b at X" (X a location) has
 *     velocity  v_b + w_b x r,   acceleration  a_b + al_b x r + w_b x (w_b x r),
 *     r = X - p_b.
 * A = the constraint's ANCESTOR (c_ancestor): the innermost body that is an
 * ancestor of, or equal to, all its constrained bodies (Ground when a branch
 * meets only at Ground or when Ground is constrained; may itself be one of the
 * constrained bodies). Simbody works in A; scalar errors come out the same as
 * if A were Ground, but the VECTOR errors (Ball, Weld rows 3-5) have A's
 * components and NoSlip1D's vaerr depends on w_A -- formulas below give the
 * Ground-based equivalents. Coordinate-level constraints have no Ancestor
 * (-1). "Forces" list the LEFT-hand-side F_c, f_c generated by lambda.
 * Directions given as vectors (normals, axes) are normalized by Simbody.
 *
 * ---------------------------------------------------------------------------
 * ROD (b1, s1, b2, s2, L)                                   mp=1 mv=0 ma=0
 *   P1, P2 = the stations; d = P2 - P1; e = d/|d|; v1, v2, a1, a2 their
 *   velocities/accelerations (material points); dv = v2-v1, da = a2-a1.
 *   perr  = |d| - L           (length units; NOT (|d|^2-L^2)/2 as in older
 *                              public source)
 *   pverr = e . dv
 *   paerr = e . da + (|dv|^2 - (e . dv)^2) / |d|
 *   Forces: +lambda e at P2 on b2, -lambda e at P1 on b1 (at the stations).
 *   lambda > 0 = TENSION: the rod pulls the points together.
 *   Exact: pverr = d/dt perr, paerr = d/dt pverr.
 *
 * BALL (b1, s1, b2, s2)                                     mp=3
 *   P = station s1 on b1, S = station s2 on b2, C = material point of b1 at
 *   S (not P: they differ while perr != 0).
 *   perr  = R_A^T (S - P)                      (P -> S, components in A)
 *   pverr = R_A^T (v_S - v_C)
 *   paerr = R_A^T [ (a_S - a_C) - 2 w_A x (v_S - v_C) ]
 *           (= Simbody's a_AS - a_AC, accelerations measured in A)
 *   Forces: f = R_A lambda (lambda = a force in A's components):
 *           +f at S on b2, -f at S on b1 (at C, not at P).
 *   Derivatives (w = R_A^T (w_b1 - w_A), b1's angular velocity in A):
 *       d/dt perr  = pverr + w x perr     (A components differentiated)
 *       d/dt pverr = paerr - w x pverr
 *   so each is the exact derivative only once the previous level is met.
 *
 * WELD (b1, X_B1F, b2, X_B2M)                               mp=6
 *   Frame F on b1: axes Fx,Fy,Fz = columns of R_b1 R_B1F, origin OF = station
 *   p(X_B1F) of b1; frame M on b2 likewise (Mx,My,Mz, OM).
 *   Rows 0-2 (orientation), pairs (f_k, g_k) = (Mx,Fy), (My,Fz), (Mz,Fx):
 *     perr[k]  = f_k . g_k
 *     pverr[k] = (w_b2 - w_b1) . (f_k x g_k)
 *     paerr[k] = (al_b2 - al_b1) . (f_k x g_k)
 *              + (w_b2 - w_b1) . ( (w_b2 x f_k) x g_k - (w_b1 x g_k) x f_k )
 *     For a small rotation theta of M relative to F (theta in F):
 *     perr[0..2] = (theta_z, theta_x, theta_y) + O(theta^2) -- z FIRST. They
 *     also vanish for a half turn about any of F's axes (not an assembly
 *     measure).
 *   Rows 3-5 (position): exactly BALL with P = OF, S = OM (perr = OM - OF in
 *     A's components; -f applied on b1 at the point of b1 coincident with OM).
 *   Forces: torque t = sum_k lambda[k] (f_k x g_k): +t on b2, -t on b1;
 *     plus the Ball force from lambda[3..5].
 *   Rows 0-2 are exact derivatives; rows 3-5 as BALL.
 *
 * CONSTANT_ORIENTATION (b1, R_B1F, b2, R_B2M)               mp=3
 *   Exactly WELD rows 0-2 with F = R_b1 R_B1F, M = R_b2 R_B2M.
 *
 * POINT_IN_PLANE (B, normal, h, F, s)                       mp=1
 *   n = unit(normal) (in B), n_G = R_B n; S = station s of F; C = material
 *   point of B at S.
 *   perr  = n . (R_B^T (S - p_B)) - h        (height of S above the plane)
 *   pverr = n_G . (v_S - v_C)
 *   paerr = n_G . [ (a_S - a_C) - 2 w_B x (v_S - v_C) ]
 *   Forces: +lambda n_G at S on F, -lambda n_G at S on B. Exact derivatives.
 *
 * POINT_ON_LINE (B, direction, P0, F, s)                    mp=2
 *   z = unit(direction); x = unit(z x e_k) with k the axis of smallest |z_k|
 *   (k = |z0|<=|z1| ? (|z0|<=|z2| ? 0 : 2) : (|z1|<=|z2| ? 1 : 2), Simbody's
 *   UnitVec3::perp); y = unit(z x x); all in B. With S, C as PointInPlane and
 *   p = R_B^T (S - p_B) - P0:
 *   perr  = (x . p, y . p)
 *   pverr, paerr = PointInPlane's with n = x, then n = y.
 *   Forces: f = lambda0 x_G + lambda1 y_G: +f at S on F, -f at S on B.
 *   Exact derivatives.
 *
 * CONSTANT_ANGLE (B, axis_b, F, axis_f, theta)              mp=1
 *   b = R_B unit(axis_b), f = R_F unit(axis_f).
 *   perr  = b . f - cos(theta)
 *   pverr = (w_F - w_B) . (f x b)
 *   paerr = (al_F - al_B) . (f x b) + (w_F - w_B) . ( (w_F x f) x b - (w_B x b) x f )
 *   Forces: torque +lambda (f x b) on F, -lambda (f x b) on B. Exact.
 *
 * CONSTANT_COORDINATE (B, which_q, value)                   mp=1
 *   perr = q - value, pverr = qdot, paerr = qdotdot (of that q).
 *   Forces: q-force lambda on that q (-> u-forces N^T; = lambda on u_which_q
 *   where qdot = u).
 *
 * CONSTANT_SPEED (B, which_u, s)                            mv=1
 *   verr = u - s,  vaerr = udot.   Forces: lambda on that u.
 *
 * CONSTANT_ACCELERATION (B, which_u, a)                     ma=1
 *   aerr = udot - a.               Forces: lambda on that u.
 *
 * NO_SLIP_1D (Cb, P, direction, B0, B1)                     mv=1
 *   P_G = station P of the case body Cb; n = R_Cb unit(direction); v0, v1,
 *   a0, a1 = velocities/accelerations of the material points of B0 and B1 at
 *   P_G; dv = v1 - v0.
 *   verr  = n . dv
 *   vaerr = n . [ (a1 - a0) - (w_A + w_Cb) x dv ]
 *           (Simbody: n_A . (a_AP1 - a_AP0 - w_ACb x (v_AP1 - v_AP0)) in A;
 *            it DEPENDS ON THE ANCESTOR through w_A)
 *   Forces: +lambda n at P_G on B1, -lambda n at P_G on B0 (none on the case
 *   body unless it is B0 or B1).
 *   NOT the exact derivative, even where verr = 0:
 *       d/dt verr = vaerr + n . [ w_B1 x (vc - v1) - w_B0 x (vc - v0) + w_A x dv ],
 *       vc = velocity of the case body's material point at P_G.
 *
 * COORDINATE_COUPLER (n args (body, which_q, coef), constant)  mp=1
 *   Function::Linear: f(q) = sum_i coef_i q_i + constant.
 *   perr = f(q), pverr = sum coef_i qdot_i, paerr = sum coef_i qdotdot_i
 *   (Simbody: sum df/dq_i qdot_i, plus sum d2f/dq_i dq_j qdot_i qdot_j at
 *   the acceleration level -- zero for a linear f).
 *   Forces: q-force lambda coef_i on each q_i (-> N^T).
 *
 * SPEED_COUPLER (n speeds (body, which_u, coef), n_q coordinates (q_body,
 * which_q, q_coef), constant)                                mv=1
 *   verr  = sum coef_i u_i + sum q_coef_j q_j + constant
 *   vaerr = sum coef_i udot_i + sum q_coef_j qdot_j
 *   Forces: lambda coef_i on each u_i (the q arguments generate none).
 *
 * PRESCRIBED_MOTION (B, which_q, f(t))                      mp=1
 *   perr = q - f(t), pverr = qdot - f'(t), paerr = qdotdot - f''(t).
 *   Forces: q-force lambda on that q (-> N^T).
 *   f: Function::Sinusoid a sin(w t + p), or Function::Polynomial (this API
 *   takes increasing powers; Simbody's constructor takes decreasing ones).
 *
 * For the coordinate-level constraints, q indices are within the body's
 * compact q (Euler-mode Ball/Free: 3/6), qdot = N(q) u and qdotdot are
 * Simbody's; on quaternion or Euler-angle coordinates these are not u or
 * udot.
 *
 * ===========================================================================
 * REDUNDANT AND INCONSISTENT CONSTRAINTS
 * Simbody never refuses them: realize succeeds and returns the LEAST-SQUARES
 * accelerations with LEAST-NORM multipliers:
 *   - lambda lies in range(G) (no component along null(G^T));
 *   - udoterr is the unweighted least-squares residual, G^T udoterr = 0; it
 *     is 0 when rank G = m (and whenever the equations are consistent).
 * Checked cases: a planar four-bar (three parallel pins from Ground) closed
 * by a Ball at the fourth joint -- the Ball's z row of G is identically zero,
 * lambda_z = 0, and udot and (lambda_x, lambda_y) equal those of the same
 * loop closed by two PointInPlane (x and y); the same Ball added twice (6
 * rows, rank 2): udot unchanged, each copy carries half; the loop closed by
 * a Weld (rank 3 of 6): the out-of-plane rows are zero rows with zero
 * multipliers; two ConstantAcceleration on one u asking 1 and 3: udot = 2,
 * udoterr = (+1, -1), equal multipliers; single constraints with more
 * equations than participating mobilities (a Ball between a body and its
 * 2-dof Cylinder child; a Weld over 5 mobilities): udoterr != 0 with
 * G^T udoterr = 0. (The residual is unweighted: rows of different units, as
 * in a Weld, are mixed as they come.)
 *
 * ===========================================================================
 * Quaternions are normalized before realizing (as orc_eval); time t is set on
 * the State. The model's gravity is applied (Force::UniformGravity) and the
 * caller's mobility/body forces through one Force::DiscreteForces, as in
 * orc_eval, so the unconstrained part matches orc_eval/orc_inverse_dynamics.
 * BUILD: the .cpp must be compiled without NDEBUG (see CMakeLists.txt).
 * ===========================================================================
 */
#ifndef MBK_SIMBODY_CONSTRAINTS_ORACLE_H
#define MBK_SIMBODY_CONSTRAINTS_ORACLE_H

#include "simbody_oracle.h"

#ifdef __cplusplus
extern "C" {
#endif

/* Which Simbody constraint an orc_constraint describes (0 is invalid). */
typedef enum orc_constraint_kind {
    ORC_CON_ROD = 1,              /* Constraint::Rod                  -> .rod */
    ORC_CON_BALL,                 /* Constraint::Ball                 -> .ball */
    ORC_CON_WELD,                 /* Constraint::Weld                 -> .weld */
    ORC_CON_POINT_IN_PLANE,       /* Constraint::PointInPlane         -> .point_in_plane */
    ORC_CON_POINT_ON_LINE,        /* Constraint::PointOnLine          -> .point_on_line */
    ORC_CON_CONSTANT_ANGLE,       /* Constraint::ConstantAngle        -> .constant_angle */
    ORC_CON_CONSTANT_ORIENTATION, /* Constraint::ConstantOrientation  -> .constant_orientation */
    ORC_CON_CONSTANT_COORDINATE,  /* Constraint::ConstantCoordinate   -> .constant_coordinate */
    ORC_CON_CONSTANT_SPEED,       /* Constraint::ConstantSpeed        -> .constant_speed */
    ORC_CON_CONSTANT_ACCELERATION,/* Constraint::ConstantAcceleration -> .constant_acceleration */
    ORC_CON_NO_SLIP_1D,           /* Constraint::NoSlip1D             -> .no_slip */
    ORC_CON_COORDINATE_COUPLER,   /* Constraint::CoordinateCoupler, Function::Linear -> .coordinate_coupler */
    ORC_CON_SPEED_COUPLER,        /* Constraint::SpeedCoupler, Function::Linear      -> .speed_coupler */
    ORC_CON_PRESCRIBED_MOTION     /* Constraint::PrescribedMotion     -> .prescribed_motion */
} orc_constraint_kind;

#define ORC_CON_MAX_EQ 6        /* most equations of one constraint (Weld) */
#define ORC_COUPLER_MAX_ARGS 8  /* most coordinates/speeds of one coupler */
#define ORC_POLY_MAX 8          /* most polynomial coefficients of a PrescribedMotion */

/* Bodies are 0 (Ground) .. n_bodies; points and directions are in the named body's frame. */
typedef struct orc_con_rod {
    int body1, body2;            /* distinct */
    double station1[3], station2[3];
    double length;               /* > 0 */
} orc_con_rod;

typedef struct orc_con_ball {
    int body1, body2;            /* distinct */
    double station1[3], station2[3];
} orc_con_ball;

typedef struct orc_con_weld {
    int body1, body2;            /* distinct */
    double X_B1F[12];            /* frame F on body 1: R (row-major) then p */
    double X_B2M[12];            /* frame M on body 2 */
} orc_con_weld;

typedef struct orc_con_point_in_plane {
    int plane_body;
    double normal[3];            /* in plane_body; normalized by Simbody (must be nonzero) */
    double height;               /* plane: dot(p, n) = height, p measured from plane_body's origin */
    int follower_body;           /* != plane_body */
    double follower_point[3];    /* in follower_body */
} orc_con_point_in_plane;

typedef struct orc_con_point_on_line {
    int line_body;
    double direction[3];         /* in line_body; normalized (nonzero) */
    double point_on_line[3];     /* in line_body */
    int follower_body;           /* != line_body */
    double follower_point[3];    /* in follower_body */
} orc_con_point_on_line;

typedef struct orc_con_constant_angle {
    int base_body;
    double base_axis[3];         /* in base_body; normalized (nonzero) */
    int follower_body;           /* != base_body */
    double follower_axis[3];     /* in follower_body; normalized (nonzero) */
    double angle;                /* radians */
} orc_con_constant_angle;

typedef struct orc_con_constant_orientation {
    int base_body;
    double R_B1F[9];             /* rotation fixed on base body, row-major */
    int follower_body;           /* != base_body */
    double R_B2M[9];             /* rotation fixed on follower body, row-major */
} orc_con_constant_orientation;

typedef struct orc_con_constant_coordinate {
    int body;                    /* 1..n_bodies */
    int which_q;                 /* q index within the body's mobilizer */
    double value;
} orc_con_constant_coordinate;

typedef struct orc_con_constant_speed {
    int body;                    /* 1..n_bodies */
    int which_u;                 /* u index within the body's mobilizer */
    double speed;
} orc_con_constant_speed;

typedef struct orc_con_constant_acceleration {
    int body;                    /* 1..n_bodies */
    int which_u;
    double acceleration;
} orc_con_constant_acceleration;

typedef struct orc_con_no_slip {
    int case_body;
    double point[3];             /* contact point P, in case_body */
    double direction[3];         /* no-slip direction n, in case_body; normalized (nonzero) */
    int moving_body0, moving_body1; /* distinct (either may equal case_body) */
} orc_con_no_slip;

typedef struct orc_con_coordinate_coupler {
    int n;                       /* 1..ORC_COUPLER_MAX_ARGS arguments */
    int body[ORC_COUPLER_MAX_ARGS];    /* 1..n_bodies */
    int which_q[ORC_COUPLER_MAX_ARGS]; /* q index within that body's mobilizer */
    double coef[ORC_COUPLER_MAX_ARGS]; /* f = sum_i coef[i] q_i + constant */
    double constant;
} orc_con_coordinate_coupler;

typedef struct orc_con_speed_coupler {
    int n;                       /* 1..ORC_COUPLER_MAX_ARGS speed arguments */
    int body[ORC_COUPLER_MAX_ARGS];    /* 1..n_bodies */
    int which_u[ORC_COUPLER_MAX_ARGS];
    double coef[ORC_COUPLER_MAX_ARGS];
    int n_q;                     /* 0..ORC_COUPLER_MAX_ARGS coordinate arguments (may be 0) */
    int q_body[ORC_COUPLER_MAX_ARGS];
    int which_q[ORC_COUPLER_MAX_ARGS];
    double q_coef[ORC_COUPLER_MAX_ARGS];
    double constant;             /* f = sum coef[i] u_i + sum q_coef[j] q_j + constant */
} orc_con_speed_coupler;

typedef enum orc_motion_function {
    ORC_MOTION_SINUSOID = 1,     /* f(t) = amplitude * sin(frequency * t + phase)  (Function::Sinusoid) */
    ORC_MOTION_POLYNOMIAL        /* f(t) = sum_k poly[k] t^k, k = 0..n_poly-1       (Function::Polynomial) */
} orc_motion_function;

typedef struct orc_con_prescribed_motion {
    int body;                    /* 1..n_bodies */
    int which_q;
    orc_motion_function function;
    double amplitude, frequency, phase;  /* ORC_MOTION_SINUSOID */
    int n_poly;                  /* ORC_MOTION_POLYNOMIAL: 1..ORC_POLY_MAX */
    double poly[ORC_POLY_MAX];   /* INCREASING powers: poly[0] + poly[1] t + ... */
} orc_con_prescribed_motion;

/* One constraint: set .kind and the matching member. */
typedef struct orc_constraint {
    orc_constraint_kind kind;
    union {
        orc_con_rod rod;
        orc_con_ball ball;
        orc_con_weld weld;
        orc_con_point_in_plane point_in_plane;
        orc_con_point_on_line point_on_line;
        orc_con_constant_angle constant_angle;
        orc_con_constant_orientation constant_orientation;
        orc_con_constant_coordinate constant_coordinate;
        orc_con_constant_speed constant_speed;
        orc_con_constant_acceleration constant_acceleration;
        orc_con_no_slip no_slip;
        orc_con_coordinate_coupler coordinate_coupler;
        orc_con_speed_coupler speed_coupler;
        orc_con_prescribed_motion prescribed_motion;
    };
} orc_constraint;

/* Outputs of orc_eval_constraints. The int counts are always written; every
 * pointer is caller storage of the size given, or NULL to skip. Sizes:
 * nb = n_bodies + 1, nq/nu as orc_sizes, n = number of constraints,
 * m = mp + mv + ma, E = ORC_CON_MAX_EQ. */
typedef struct orc_constraint_result {
    /* ---- counts (always written) ---- */
    int mp, mv, ma;        /* totals: holonomic, nonholonomic, acceleration-only equations */
    int n_qerr;            /* length of qerr = mp + number of quaternions in use */

    /* ---- system-level vectors, Simbody's own arrays ---- */
    double *qerr;          /* n_qerr: State::getQErr() */
    double *uerr;          /* mp + mv: State::getUErr() */
    double *udoterr;       /* m: State::getUDotErr() (at the constrained udot) */
    double *multipliers;   /* m: State::getMultipliers() */
    double *udot;          /* nu: constrained forward dynamics */
    double *qdotdot;       /* nq: constrained */
    double *X_GB;          /* 12*nb: body poses (as orc_eval) */
    double *V_GB;          /* 6*nb: body velocities */
    double *A_GB;          /* 6*nb: body accelerations under the constraints */
    double *G;             /* m*nu row-major: SimbodyMatterSubsystem::calcG */
    double *bias;          /* m: calcBiasForAccelerationConstraints, = udoterr at udot = 0 */
    double *Pq;            /* mp*nq row-major: calcPq = d(perr)/dq (compact q columns) */

    /* ---- per constraint (index i = 0..n-1) ---- */
    int *c_mp, *c_mv, *c_ma;     /* n each: getNumConstraintEquationsInUse */
    int *c_p_start, *c_v_start, *c_a_start; /* n each: getIndexOfMultipliersInUse, -1 if none */
    int *c_ancestor;             /* n: body index of the constraint's Ancestor A, -1 if
                                    it has no constrained bodies */
    double *c_perr;              /* E*n: entry E*i+k: getPositionErrorsAsVector (mp_i) */
    double *c_pverr;             /* E*n: getVelocityErrorsAsVector (mp_i + mv_i) */
    double *c_pvaerr;            /* E*n: getAccelerationErrorsAsVector (mp_i + mv_i + ma_i) */
    double *c_multipliers;       /* E*n: getMultipliersAsVector (mp_i + mv_i + ma_i) */
    double *c_body_forces;       /* 6*nb*n: getConstrainedBodyForcesAsVector scattered to
                                    bodies, entry 6*nb*i + 6*b; zero for other bodies */
    double *c_mobility_forces;   /* nu*n: getConstrainedMobilityForcesAsVector scattered to
                                    system u indices, entry nu*i + j */
    double *c_power;             /* n: Constraint::calcPower */
} orc_constraint_result;

/* Build model's bodies (with model->gravity as orc_eval does) plus the n
 * constraints, load q (compact layout, quaternions normalized), u (NULL =
 * 0), the applied mobility_forces (nu, NULL = none) and body_forces (6*nb in
 * Ground, moment about body origin, Ground's entry ignored, NULL = none) and
 * time t; realize Stage::Acceleration and fill *out. n may be 0 (c may then
 * be NULL). Returns 0, or -1 with orc_constraints_last_error() set. The last
 * system built is cached and reused while the model and the constraint
 * list compare equal field by field. Not thread-safe. */
int orc_eval_constraints(const orc_model *model, const orc_constraint *c, int n,
                         const double *q, const double *u, const double *mobility_forces,
                         const double *body_forces, double t, orc_constraint_result *out);

/* Message of the most recent orc_eval_constraints call if it failed; "" after success. */
const char *orc_constraints_last_error(void);

/* Drop the cached system (optional). */
void orc_constraints_release(void);

#ifdef __cplusplus
}
#endif

#endif /* MBK_SIMBODY_CONSTRAINTS_ORACLE_H */
