/* simbody_forces_oracle.h -- Simbody 3.7's built-in force elements as a
 * plain-C oracle, and the exact definition of each element (the spec mbk's
 * force elements follow).
 *
 * orc_eval_forces() builds the bodies of an orc_model (simbody_oracle.h: same
 * body numbering, q/u layout, Euler-angle flag and quaternion normalization
 * as orc_eval) plus a list of orc_force elements, loads q and u, realizes
 * Stage::Dynamics and returns Simbody's accumulated rigid-body forces
 * (MultibodySystem::getRigidBodyForces), mobility forces (getMobilityForces)
 * and calcPotentialEnergy(). The model's own gravity field is IGNORED here:
 * add an ORC_FORCE_UNIFORM_GRAVITY element instead.
 *
 * Every formula below was checked numerically against Simbody 3.7 (Debian's
 * libsimbody-dev) by test_forces_oracle_selfcheck.c, which re-implements it
 * in plain C from body poses and velocities and compares to 1e-12 relative,
 * every branch of the piecewise laws included. Only the remarks about
 * degenerate inputs (coincident points, gimbal lock) come from reading
 * Simbody's source rather than from the test.
 *
 * ===========================================================================
 * NOTATION. Everything is in Ground (G) unless a frame is named. For body B:
 * R_GB, p_GB = its pose (X_GB), w_B, v_B = angular velocity and velocity of
 * its ORIGIN (V_GB). A station s (a point fixed on B, given in B) is at
 *     P = p_GB + R_GB s,  with velocity  v_P = v_B + w_B x (R_GB s).
 * A force f applied at P on B contributes the body spatial force
 *     F_B += ( (R_GB s) x f ,  f )          (moment about B's ORIGIN, force)
 * ("apply f at s on B" below means exactly this). Ground (body 0) is a body
 * like any other: forces applied to it are accumulated in entry 0 of the
 * body-force array (they never move anything). Mobility forces are indexed
 * like u; "on u_j of body B" means index u_start[B] + j. Elements ADD into
 * the arrays; PE of the system is the sum over elements.
 *
 * ---------------------------------------------------------------------------
 * ORC_FORCE_UNIFORM_GRAVITY  (Force::UniformGravity(forces, matter, g, h0))
 *   For every body B >= 1 with mass m, COM c (in B), c_G = R_GB c:
 *       F_B += ( c_G x (m g),  m g ).        Nothing on Ground.
 *   PE = - sum_B m * ( dot(g, p_GB + c_G) + h0 ).
 *   NOTE h0 is ADDED to dot(g, p_com), not multiplied by |g|: Simbody calls
 *   zeroHeight "a height at which the gravitational PE is zero", but 3.7
 *   computes -m (g.p + h0), which is zero where dot(g, p) = -h0, i.e. at
 *   height h0/|g| along -g. The PE offset is -M_total h0. With h0 = 0:
 *   PE = -sum m dot(g, p_com). The force does not depend on h0.
 *
 * ORC_FORCE_TWO_POINT_SPRING  (Force::TwoPointLinearSpring(b1,s1,b2,s2,k,x0))
 *   P1, P2 = the two stations in G; r = P2 - P1; d = |r|; e = r/d.
 *   t = k (d - x0)   (tension: > 0 when stretched)
 *   Apply  +t e at s1 on b1  and  -t e at s2 on b2  (stretched => pulls the
 *   points together).  PE = k (d - x0)^2 / 2.  Coincident points (d = 0)
 *   give NaN: Simbody does not guard it (nor do the damper and constant
 *   force below).
 *
 * ORC_FORCE_TWO_POINT_DAMPER  (Force::TwoPointLinearDamper(b1,s1,b2,s2,c))
 *   e = (P2 - P1)/|P2 - P1|; v1, v2 = velocities of the two station points;
 *   t = c dot(v2 - v1, e)   (= c * d/dt |P2 - P1|, > 0 while separating)
 *   Apply +t e at s1 on b1 and -t e at s2 on b2 (opposes the separation
 *   rate).  PE = 0.  c >= 0 required.
 *
 * ORC_FORCE_TWO_POINT_CONSTANT  (Force::TwoPointConstantForce(b1,s1,b2,s2,f))
 *   e = (P2 - P1)/|P2 - P1|.  Apply  -f e at s1 on b1  and  +f e at s2 on b2:
 *   POSITIVE f PUSHES THE POINTS APART (the opposite sign convention to the
 *   spring's tension).  PE = 0.
 *
 * ORC_FORCE_MOBILITY_SPRING  (Force::MobilityLinearSpring(B, whichQ, k, q0))
 *   q = q[q_start[B] + whichQ].  Mobility force -k (q - q0) added on u_whichQ
 *   of B (the SAME index used as a u index: only meaningful where qdot = u).
 *   PE = k (q - q0)^2 / 2.
 *
 * ORC_FORCE_MOBILITY_DAMPER  (Force::MobilityLinearDamper(B, whichU, c))
 *   Mobility force -c u_whichU on u_whichU of B.  PE = 0.  c >= 0 required.
 *
 * ORC_FORCE_MOBILITY_CONSTANT  (Force::MobilityConstantForce(B, whichU, f))
 *   Mobility force +f on u_whichU of B.  PE = 0.
 *
 * ORC_FORCE_MOBILITY_STOP  (Force::MobilityLinearStop(B, whichQ, k, d, qlo, qhi))
 *   q = q[q_start[B] + whichQ], qd = qdot of that same q (= u_whichQ for
 *   qdot = u mobilizers; Simbody reads qdot, and uses 0 when d == 0).
 *   Requires k >= 0, d >= 0, qlo <= qhi. If k == 0: no force, PE = 0.
 *     q > qhi:  x = q - qhi (> 0);  f = min(0, -k x (1 + d qd))
 *     q < qlo:  x = q - qlo (< 0);  f = max(0, -k x (1 - d qd))
 *     else:     f = 0
 *   (strict inequalities: at q == qhi exactly, nothing.) f is added on
 *   u_whichQ of B. Dissipation is Hunt-Crossley-like: it multiplies the
 *   elastic force, so it is zero at first touch, grows with penetration, and
 *   the clamp (min/max) means the stop never pulls (no sticking) however
 *   fast it is leaving.
 *   PE = k x^2 / 2 with the same x when a bound is exceeded, else 0 (the
 *   dissipation term stores nothing).
 *
 * ORC_FORCE_CONSTANT_FORCE  (Force::ConstantForce(B, station, f))
 *   f is a constant vector in GROUND; apply f at station on B:
 *   F_B += ( (R_GB s) x f, f ).  PE = 0.
 *
 * ORC_FORCE_CONSTANT_TORQUE  (Force::ConstantTorque(B, torque))
 *   torque is a constant vector in GROUND:  F_B += ( torque, 0 ).  PE = 0.
 *
 * ORC_FORCE_LINEAR_BUSHING  (Force::LinearBushing(b1, X_B1F, b2, X_B2M, k[6], c[6]))
 *   Frames: X_GF = X_GB1 X_B1F,  X_GM = X_GB2 X_B2M,  X_FM = X_GF^-1 X_GM.
 *   Coordinates q[6] (all from X_FM):
 *     q0,q1,q2 = body-fixed (M-fixed) X-Y-Z Euler angles of R_FM, i.e.
 *        R_FM = R_x(q0) R_y(q1) R_z(q2), extracted as (R = R_FM, row-major)
 *          q1 = atan2(R02, sqrt((R00^2 + R01^2 + R12^2 + R22^2)/2))  in [-pi/2, pi/2]
 *          q0 = atan2(-R12, R22),  q2 = atan2(-R01, R00)             in [-pi, pi]
 *        (when that square root is <= 4*DBL_EPSILON, gimbal lock, Simbody
 *         puts the whole rotation into q0 and sets q2 = 0);
 *     q3,q4,q5 = p_FM expressed in F (M's origin measured from F's origin).
 *   Rates qdot[6]:
 *     w_F = w_B1, w_M = w_B2 (angular velocities of the bodies);
 *     v_F = v_B1 + w_B1 x (R_GB1 p_B1F), v_M = v_B2 + w_B2 x (R_GB2 p_B2M)
 *       (velocities of the frames' origins);
 *     p_FM_G = R_GF p_FM;
 *     w_FM_F = R_GF^T (w_M - w_F);
 *     v_FM_F = R_GF^T ((v_M - v_F) - w_F x p_FM_G)   (= d/dt of p_FM in F);
 *     w_FM_M = R_FM^T w_FM_F;
 *     (qdot0,qdot1,qdot2) = N(q) w_FM_M with, s_i = sin q_i, c_i = cos q_i,
 *         N = (1/c1) [ c2      -s2      0  ]
 *                    [ c1 s2    c1 c2   0  ]
 *                    [ -s1 c2   s1 s2   c1 ]
 *       (the inverse of the map qdot -> angular velocity in M);
 *     (qdot3,qdot4,qdot5) = v_FM_F.
 *   Generalized forces on body 2 (one per coordinate, uncoupled, diagonal):
 *       f_i = -(k_i q_i + c_i qdot_i),   i = 0..5.
 *   Turned into a spatial force:
 *       moment on b2 (in M):  m_M = N(q)^T (f0, f1, f2);  m_G = R_GM m_M;
 *       force on b2:          f_G = R_GF (f3, f4, f5)   (f3..f5 are along F's
 *                             axes), applied at M's origin;
 *       body 2:  F_B2 += ( m_G + (R_GB2 p_B2M) x f_G ,  f_G )
 *       body 1:  the exact opposite wrench at M's origin, written at F's
 *                origin as ( -(m_G + p_FM_G x f_G), -f_G ), then
 *                F_B1 += ( -(m_G + p_FM_G x f_G) + (R_GB1 p_B1F) x (-f_G), -f_G ).
 *     So the torque generated by the angular stiffness is k_i q_i per Euler
 *     angle mapped through N^T (not a rotation vector), and the linear
 *     stiffness acts along F's axes on p_FM.
 *   PE = 0.5 * sum_i k_i q_i^2  (the damping stores nothing; Simbody also
 *   keeps a dissipated-energy z, sum c_i qdot_i^2, not exposed here).
 *   Singular (NaN/Inf) when |q1| = pi/2. k_i, c_i >= 0 required.
 *
 * ORC_FORCE_HUNT_CROSSLEY  (HuntCrossleyForce on a GeneralContactSubsystem
 *   contact set holding ONE ContactGeometry::HalfSpace on Ground and ONE
 *   ContactGeometry::Sphere on body B)
 *   Geometry as built here: Simbody's HalfSpace occupies x >= 0 of its frame
 *   H, outward normal -x_H. The oracle attaches it to Ground with
 *       X_GH = ( R_y(+pi/2) = [[0,0,1],[0,1,0],[-1,0,0]],  p = (0,0,h) ),
 *   so x_H = (0,0,-1), H's -x is +z: the half-space is z <= h, outward
 *   normal n = (0,0,1). The sphere (radius r) is centred at station `center`
 *   of B with identity orientation (X_BS = (I, center)).
 *   Contact exists only when depth > 0 (strict):
 *       C = sphere centre in G;   depth = r - (C_z - h).
 *   Materials: plane (surface 1) E_p, c_p, us_p, ud_p, uv_p; sphere
 *   (surface 2) E_s, c_s, us_s, ud_s, uv_s (E = the `stiffness` given to
 *   setBodyParameters, a plane-strain modulus); transition velocity vt.
 *   Simbody STORES K = E^(2/3) for each surface, then combines:
 *       s1 = K_s / (K_p + K_s),  s2 = 1 - s1
 *       k  = K_p s1 = K_p K_s / (K_p + K_s)        (equal materials: E^(2/3)/2)
 *       c  = c_p s1 + c_s s2                        (equal materials: c)
 *       mu = 2 mu_p mu_s / (mu_p + mu_s) for each of us, ud, uv, or 0 when
 *            both are 0 (harmonic mean: equal materials give mu; if only
 *            one of the two is zero the result is 0)
 *   Contact point (where the force acts; fixed to neither body):
 *       P = (C_x, C_y, h - s1*depth)   (equal materials: h - depth/2,
 *                                       midway through the overlap)
 *   Velocities: v_S = velocity of the material point of B at P
 *       = v_B + w_B x (P - p_GB);  relative velocity of plane w.r.t. sphere
 *       v = -v_S (Ground does not move);  vn = dot(v, n) = -v_S,z  (> 0 while
 *       the sphere moves into the plane);  vt_vec = v - vn n = -(v_S,x, v_S,y, 0).
 *   Normal force (Hertz, R = r, with Hunt-Crossley dissipation):
 *       fH = (4/3) k depth sqrt(R k depth)  = (4/3) sqrt(R) k^(3/2) depth^(3/2)
 *            (equal materials: fH = (sqrt(2)/3) E sqrt(R) depth^(3/2))
 *       f  = fH (1 + 1.5 c vn)
 *   If f <= 0 (penetrating but leaving fast, 1.5 c vn < -1): NO force at
 *   all -- neither normal nor friction (checked against the 3.7 library;
 *   some versions of the public source apply friction with the negative f).
 *   Otherwise Fn = f n, and friction, only when vs = |vt_vec| != 0:
 *       vr  = vs / vt
 *       ffr = f ( min(vr, 1) (ud + 2 (us - ud)/(1 + vr^2)) + uv vs )
 *       Ff  = ffr vt_vec / vs   (opposes the sphere's slip at P)
 *     (vr -> 0: 0;  vr = 1: us;  vr -> inf: ud; plus viscous uv vs.)
 *   Total F = Fn + Ff: apply +F at P on B (moment (P - p_GB) x F about B's
 *   origin) and -F at P on Ground.
 *   PE = (2/5) fH depth (elastic part only, whatever the velocity, also
 *   when f <= 0; 0 without contact).
 *
 * ---------------------------------------------------------------------------
 * POWER output of orc_eval_forces: the mechanical power the elements deliver
 * to the bodies,  sum over bodies B >= 1 of dot(F_B, V_GB)  +  dot(f_mob, u)
 * (Ground does not move). For conservative elements (gravity, springs,
 * stiffness-only bushing/stop/contact, on coordinates with qdot = u) it equals
 * -dPE/dt; the self-test checks that by finite differences.
 * ===========================================================================
 */
#ifndef MBK_SIMBODY_FORCES_ORACLE_H
#define MBK_SIMBODY_FORCES_ORACLE_H

#include "simbody_oracle.h"

#ifdef __cplusplus
extern "C" {
#endif

/* Which Simbody force element an orc_force describes (0 is invalid). */
typedef enum orc_force_kind {
    ORC_FORCE_UNIFORM_GRAVITY = 1, /* Force::UniformGravity          -> .gravity */
    ORC_FORCE_TWO_POINT_SPRING,    /* Force::TwoPointLinearSpring    -> .spring */
    ORC_FORCE_TWO_POINT_DAMPER,    /* Force::TwoPointLinearDamper    -> .damper */
    ORC_FORCE_TWO_POINT_CONSTANT,  /* Force::TwoPointConstantForce   -> .two_point_force */
    ORC_FORCE_MOBILITY_SPRING,     /* Force::MobilityLinearSpring    -> .mobility_spring */
    ORC_FORCE_MOBILITY_DAMPER,     /* Force::MobilityLinearDamper    -> .mobility_damper */
    ORC_FORCE_MOBILITY_CONSTANT,   /* Force::MobilityConstantForce   -> .mobility_force */
    ORC_FORCE_MOBILITY_STOP,       /* Force::MobilityLinearStop      -> .stop */
    ORC_FORCE_CONSTANT_FORCE,      /* Force::ConstantForce           -> .constant_force */
    ORC_FORCE_CONSTANT_TORQUE,     /* Force::ConstantTorque          -> .constant_torque */
    ORC_FORCE_LINEAR_BUSHING,      /* Force::LinearBushing           -> .bushing */
    ORC_FORCE_HUNT_CROSSLEY        /* HuntCrossleyForce, sphere vs z<=h half-space -> .contact */
} orc_force_kind;

/* Bodies are 0 (Ground) .. n_bodies; stations and frames are in the body frame. */
typedef struct orc_uniform_gravity {
    double g[3];          /* gravity in Ground */
    double zero_height;   /* Simbody's zeroHeight h0 (see PE formula above) */
} orc_uniform_gravity;

typedef struct orc_two_point_spring {
    int body1, body2;
    double station1[3], station2[3];
    double k, x0;         /* stiffness, rest length */
} orc_two_point_spring;

typedef struct orc_two_point_damper {
    int body1, body2;
    double station1[3], station2[3];
    double c;             /* damping >= 0 */
} orc_two_point_damper;

typedef struct orc_two_point_constant {
    int body1, body2;
    double station1[3], station2[3];
    double f;             /* > 0 pushes the points apart */
} orc_two_point_constant;

typedef struct orc_mobility_spring {
    int body;             /* 1..n_bodies */
    int which_q;          /* q index within the body's mobilizer (also used as the u index) */
    double k, q_zero;
} orc_mobility_spring;

typedef struct orc_mobility_damper {
    int body;             /* 1..n_bodies */
    int which_u;          /* u index within the body's mobilizer */
    double c;             /* >= 0 */
} orc_mobility_damper;

typedef struct orc_mobility_constant {
    int body;             /* 1..n_bodies */
    int which_u;
    double f;
} orc_mobility_constant;

typedef struct orc_mobility_stop {
    int body;             /* 1..n_bodies */
    int which_q;          /* q index within the body (also used as the u index) */
    double stiffness, dissipation;  /* >= 0 */
    double q_low, q_high;           /* q_low <= q_high; +-HUGE_VAL allowed */
} orc_mobility_stop;

typedef struct orc_constant_force {
    int body;
    double station[3];    /* in B */
    double force[3];      /* in Ground */
} orc_constant_force;

typedef struct orc_constant_torque {
    int body;
    double torque[3];     /* in Ground */
} orc_constant_torque;

typedef struct orc_linear_bushing {
    int body1, body2;
    double X_B1F[12];     /* frame F on body 1: R (row-major) then p */
    double X_B2M[12];     /* frame M on body 2 */
    double stiffness[6];  /* per bushing coordinate: angles q0,q1,q2 then p_FM x,y,z; >= 0 */
    double damping[6];    /* >= 0 */
} orc_linear_bushing;

typedef struct orc_hc_material {
    double stiffness;         /* HuntCrossleyForce::setBodyParameters stiffness (> 0) */
    double dissipation;       /* c, 1/velocity */
    double static_friction;   /* us */
    double dynamic_friction;  /* ud */
    double viscous_friction;  /* uv, 1/velocity */
} orc_hc_material;

typedef struct orc_hunt_crossley {
    int body;                 /* body carrying the sphere, 1..n_bodies */
    double center[3];         /* sphere centre, station on body */
    double radius;            /* > 0 */
    double plane_height;      /* h: the half-space fixed on Ground is z <= h */
    orc_hc_material sphere;   /* surface 2 */
    orc_hc_material plane;    /* surface 1 (set equal to .sphere for one material) */
    double transition_velocity; /* vt > 0 (Simbody's default is 0.01) */
} orc_hunt_crossley;

/* One force element: set .kind and the matching member. */
typedef struct orc_force {
    orc_force_kind kind;
    union {
        orc_uniform_gravity gravity;
        orc_two_point_spring spring;
        orc_two_point_damper damper;
        orc_two_point_constant two_point_force;
        orc_mobility_spring mobility_spring;
        orc_mobility_damper mobility_damper;
        orc_mobility_constant mobility_force;
        orc_mobility_stop stop;
        orc_constant_force constant_force;
        orc_constant_torque constant_torque;
        orc_linear_bushing bushing;
        orc_hunt_crossley contact;
    };
} orc_force;

/* Build model's bodies (model->gravity ignored) plus forces[0..n_forces-1],
 * load q (compact layout of orc_layout; quaternions normalized as orc_eval
 * does) and u (NULL = zero), realize Dynamics and return:
 *   body_forces      6*(n_bodies+1): (moment about body origin, force) in
 *                    Ground, Ground's entry first (it holds reactions applied
 *                    to Ground);
 *   mobility_forces  nu;
 *   potential_energy MultibodySystem::calcPotentialEnergy;
 *   power            sum_B dot(F_B, V_GB) + dot(f_mob, u) (see above).
 * Any output may be NULL. n_forces may be 0 (forces may then be NULL).
 * Returns 0, or -1 with orc_forces_last_error() set (bad descriptor, Simbody
 * error).
 * The last built system is cached and reused when the model and the force
 * list compare equal field by field. Not thread-safe. */
int orc_eval_forces(const orc_model *model, const orc_force *forces, int n_forces,
                    const double *q, const double *u, double *body_forces,
                    double *mobility_forces, double *potential_energy, double *power);

/* Message of the most recent orc_eval_forces call if it failed; "" after a
 * successful call. (orc_last_error() covers simbody_oracle.h's functions.) */
const char *orc_forces_last_error(void);

/* Drop the cached force system (optional). */
void orc_forces_release(void);

#ifdef __cplusplus
}
#endif

#endif /* MBK_SIMBODY_FORCES_ORACLE_H */
