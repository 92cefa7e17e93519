/* simbody_oracle.h -- a plain-C window onto Simbody 3.7, used by mbk's tests
 * as an independent reference ("oracle").
 *
 * Every function builds (or reuses, see below) a SimTK::MultibodySystem from
 * an orc_model description, loads the given q and u into a State, realizes it
 * and copies results into caller-provided double arrays. No mbk types are
 * used, so this header can be included from C and C++.
 *
 * Conventions shared with mbk (DESIGN.md section 2 and 6):
 *   - Bodies are numbered 1..n_bodies, Ground is 0; a parent precedes its
 *     children. X_GB = X_GP * X_PF * X_FM(q) * X_MB  (X_MB = inverse of X_BM).
 *   - A transform is 12 doubles: R (row-major 3x3, R_AB, columns are B's axes
 *     expressed in A) then p (p_AB, B's origin in A).
 *   - A spatial vector is 6 doubles (angular, linear). A body spatial force is
 *     (moment about the body ORIGIN, force), both expressed in Ground.
 *   - q and u of all bodies are concatenated in body order (orc_layout gives
 *     each body's start and count).
 *   - Mass properties are given about the centre of mass (mbk's convention);
 *     the oracle shifts them to the body origin for Simbody.
 *
 * ---------------------------------------------------------------------------
 * MOBILIZER CONVENTIONS, verified numerically against Simbody 3.7 by
 * test_oracle_selfcheck.c (X_FM(q), V_FM = H u column by column, qdot = N u
 * column by column, V_FM = d/dt X_FM and qdotdot = d/dt qdot by central
 * differences). R_x(a), R_y(a), R_z(a) are right-handed rotations by angle a
 * about the named axis; all vectors are expressed in F. V_FM is Simbody's
 * getMobilizerVelocity(): (w_FM, v_FM) with v_FM = d/dt p_FM, the velocity of
 * M's origin measured in F. "u = qdot" means N = identity.
 *
 *   WELD         nq=0 nu=0   X_FM = identity.
 *   PIN          nq=1 nu=1   R_FM = R_z(q), p_FM = 0.  u = qdot;
 *                            V_FM = (0,0,u, 0,0,0).
 *   SLIDER       nq=1 nu=1   R_FM = I, p_FM = (q,0,0) (along F's x).  u = qdot;
 *                            V_FM = (0,0,0, u,0,0).
 *   SCREW(pitch) nq=1 nu=1   R_FM = R_z(q), p_FM = (0,0,pitch*q).  u = qdot;
 *                            V_FM = (0,0,u, 0,0,pitch*u).
 *   UNIVERSAL    nq=2 nu=2   R_FM = R_x(q0) R_y(q1) (about F's x, then the new
 *                            y), p_FM = 0.  u = qdot (angle rates, not angular
 *                            velocity): w_FM = u0*(1,0,0) + u1*(0,cos q0,sin q0).
 *   CYLINDER     nq=2 nu=2   q0 = angle about z, q1 = translation along z:
 *                            R_FM = R_z(q0), p_FM = (0,0,q1).  u = qdot;
 *                            V_FM = (0,0,u0, 0,0,u1).
 *   PLANAR       nq=3 nu=3   q0 = angle about z, then translations along F's x
 *                            and y (F's axes, NOT rotated by q0):
 *                            R_FM = R_z(q0), p_FM = (q1,q2,0).  u = qdot;
 *                            V_FM = (0,0,u0, u1,u2,0).
 *   GIMBAL       nq=3 nu=3   body-fixed X-Y-Z angles:
 *                            R_FM = R_x(q0) R_y(q1) R_z(q2), p_FM = 0.
 *                            u = qdot (angle rates): w_FM = W(q) u with
 *                              W = [1  0        sin q1         ]
 *                                  [0  cos q0  -sin q0 cos q1  ]
 *                                  [0  sin q0   cos q0 cos q1  ]
 *                            (columns: x, R_x(q0) y, R_x(q0) R_y(q1) z).
 *                            Singular at q1 = +-pi/2.
 *   BALL  quaternion mode:   nq=4 nu=3   q = (w,x,y,z), scalar FIRST, the
 *                            quaternion of R_FM; p_FM = 0.  u = w_FM in F.
 *                            qdot = 0.5 * (0,u) (x) q  (Hamilton product, the
 *                            pure quaternion u on the LEFT because u is in F).
 *                            Default q = (1,0,0,0).
 *         Euler mode:        nq=3 nu=3   q = body-fixed X-Y-Z angles as for
 *                            GIMBAL.  u is STILL w_FM in F, so
 *                            qdot = W(q)^-1 u (W as for GIMBAL).
 *   TRANSLATION  nq=3 nu=3   R_FM = I, p_FM = q.  u = qdot = v_FM;
 *                            V_FM = (0,0,0, u).
 *   FREE  quaternion mode:   nq=7 nu=6   q = (qw,qx,qy,qz, px,py,pz):
 *                            quaternion of R_FM as for BALL, then p_FM.
 *                            u = (w_FM, v_FM), both in F; qdot[0..3] as for
 *                            BALL, qdot[4..6] = u[3..5].
 *                            Default q = (1,0,0,0, 0,0,0).
 *         Euler mode:        nq=6 nu=6   q = (X-Y-Z angles, p_FM); u unchanged
 *                            (w_FM, v_FM in F); qdot = (W(q)^-1 u[0..2], u[3..5]).
 *   BUSHING      nq=6 nu=6   q = (ax,ay,az, px,py,pz):
 *                            R_FM = R_x(ax) R_y(ay) R_z(az), p_FM = (px,py,pz)
 *                            (translation NOT rotated by the angles).
 *                            u = qdot: w_FM = W(angles) u[0..2] (as GIMBAL),
 *                            v_FM = u[3..5].
 *
 * EULER-MODE q LAYOUT: Simbody itself always allocates 4 q slots for a Ball
 * and 7 for a Free mobilizer (its maximum) and, in Euler mode, leaves the
 * LAST slot of the body's block unused (angles in the first 3 slots; for Free
 * p_FM in slots 3..5, slot 6 unused). The oracle hides this: its q arrays,
 * nq and orc_layout are compact (3 and 6 q), as mbk's design specifies.
 *
 * Body quantities: X_GB = X_GP X_PF X_FM(q) X_MB (X_MB = X_BM^-1); V_GB and
 * A_GB are the spatial velocity/acceleration of B's ORIGIN in G, expressed in
 * G, (angular, linear). System Jacobian J: V_GB = J u, 6 rows per body.
 *
 * QUATERNION NORMALIZATION: Simbody does NOT modify the State's q while
 * realizing. At Position stage it builds R_FM from the quaternion divided by
 * its norm (so X_GB is that of the normalized quaternion), but qdot is then
 * formed from the raw, unnormalized q. To give one unambiguous answer the
 * oracle calls SimbodyMatterSubsystem::normalizeQuaternions() on the State
 * before realizing, so every result corresponds to the normalized q, which
 * orc_eval returns in orc_result.q. A zero or non-finite quaternion is an
 * error. (Without normalization Simbody 3.7 gives qdot = 0.5 (0,u) (x) q_raw,
 * scaled by |q_raw|, while X_FM uses q_raw/|q_raw|.)
 *
 * FORCES: the caller's mobility and body forces are applied through one
 * Force::DiscreteForces element (setAllMobilityForces / setAllBodyForces);
 * gravity, if nonzero, is a Force::UniformGravity element (zero height 0, so
 * PE = -sum m_i * dot(g, p_G_com_i)).
 *
 * CACHING: the most recently built Simbody system is kept and reused when the
 * next call describes an identical model (compared field by field, not by
 * pointer), so the caller may change the model between calls freely. Not
 * thread-safe: call from one thread at a time.
 *
 * BUILD NOTE: Debian's libsimbody-dev is built without -DNDEBUG; this
 * library is compiled without NDEBUG too (see CMakeLists.txt), but callers in
 * C only see this header, so their own flags do not matter.
 * ------------------------------------------------------------------------- */
#ifndef MBK_SIMBODY_ORACLE_H
#define MBK_SIMBODY_ORACLE_H

#ifdef __cplusplus
extern "C" {
#endif

/* Mobilizer (joint) types, each Simbody's MobilizedBody of the same name. */
typedef enum orc_mobilizer {
    ORC_WELD,        /* MobilizedBody::Weld: no motion */
    ORC_PIN,         /* MobilizedBody::Pin: rotation about z */
    ORC_SLIDER,      /* MobilizedBody::Slider: translation along x */
    ORC_SCREW,       /* MobilizedBody::Screw: rotation about z + pitch*q along z */
    ORC_UNIVERSAL,   /* MobilizedBody::Universal: rotation about x then new y */
    ORC_CYLINDER,    /* MobilizedBody::Cylinder: rotation about and translation along z */
    ORC_PLANAR,      /* MobilizedBody::Planar: rotation about z, translation along F's x, y */
    ORC_GIMBAL,      /* MobilizedBody::Gimbal: body-fixed XYZ angles, u = qdot */
    ORC_BALL,        /* MobilizedBody::Ball: quaternion (or XYZ angles), u = w_FM in F */
    ORC_TRANSLATION, /* MobilizedBody::Translation: p_FM, u = v_FM in F */
    ORC_FREE,        /* MobilizedBody::Free: quaternion + p_FM, u = (w_FM, v_FM) in F */
    ORC_BUSHING      /* MobilizedBody::Bushing: XYZ angles then p_FM, u = qdot */
} orc_mobilizer;

/* One mobilized body: its mobilizer to the parent and its mass properties. */
typedef struct orc_body {
    int parent;                /* parent body index: 0 = Ground; bodies are 1..n, parent < own index */
    orc_mobilizer type;        /* mobilizer connecting frame F on the parent to frame M on this body */
    double screw_pitch;        /* translation per radian along z, used only by ORC_SCREW */
    double X_PF[12];           /* pose of F in the parent frame: R (row-major 9) then p (3) */
    double X_BM[12];           /* pose of M in this body's frame: R (row-major 9) then p (3) */
    double mass;               /* body mass (> 0 for terminal bodies, as Simbody requires) */
    double com[3];             /* centre of mass, measured from the body origin, in B */
    double inertia_about_com[9]; /* central inertia, expressed in B, row-major, symmetric */
} orc_body;

/* A tree of bodies, a quaternion/Euler-angle choice and uniform gravity. */
typedef struct orc_model {
    int n_bodies;              /* number of bodies, not counting Ground */
    const orc_body *bodies;    /* bodies[0] is body 1, ..., bodies[n_bodies-1] is body n_bodies */
    int use_euler_angles;      /* nonzero: Ball and Free use XYZ body-fixed angles (3 q) not quaternions */
    double gravity[3];         /* uniform gravity in Ground (Force::UniformGravity); all zero = none */
} orc_model;

/* Outputs of orc_eval. Each pointer is caller-provided storage of the size
 * given; any pointer may be NULL to skip that output. nb = n_bodies + 1
 * (Ground included at index 0). */
typedef struct orc_result {
    double *q;        /* nq: q actually used (quaternions normalized) */
    double *X_GB;     /* 12*nb: body poses in Ground, Ground (identity) first */
    double *V_GB;     /* 6*nb: (w, v) of each body origin, in Ground */
    double *A_GB;     /* 6*nb: (alpha, a) of each body origin, in Ground */
    double *X_FM;     /* 12*nb: mobilizer poses X_FM(q) (Ground's entry is identity) */
    double *V_FM;     /* 6*nb: mobilizer velocities (w_FM, v_FM) expressed in F (Ground: 0) */
    double *qdot;     /* nq: qdot = N(q) u */
    double *udot;     /* nu: forward dynamics accelerations (no constraints) */
    double *qdotdot;  /* nq: second time derivative of q */
    double *M;        /* nu*nu: mass matrix, row-major */
    double *J;        /* 6*nb*nu: system Jacobian, row-major; rows 6i..6i+5 map u to V_GB of body i */
    double kinetic_energy;   /* 0.5 u^T M u (always written) */
    double potential_energy; /* gravity potential, -sum m dot(g, p_com) (always written) */
} orc_result;

/* Message of the most recent call if it failed; "" after a successful call. */
const char *orc_last_error(void);

/* Total q and u counts of the model (depend on use_euler_angles). */
int orc_sizes(const orc_model *model, int *nq, int *nu);

/* Per-body q/u layout, arrays of n_bodies+1 ints (Ground at 0, counts 0); any may be NULL. */
int orc_layout(const orc_model *model, int *q_start, int *body_nq, int *u_start, int *body_nu);

/* The default q of the model (Simbody's: zero angles, identity quaternions), nq values. */
int orc_default_q(const orc_model *model, double *q);

/* Realize to Acceleration at (q, u) with the given applied forces and fill *out.
 * q: nq; u: nu (NULL = zero); mobility_forces: nu (NULL = none);
 * body_forces: 6*(n_bodies+1) (moment about body origin, force) in Ground,
 * Ground's entry first and ignored (NULL = none). Gravity comes from the model. */
int orc_eval(const orc_model *model, const double *q, const double *u,
             const double *mobility_forces, const double *body_forces, orc_result *out);

/* Inverse dynamics via calcResidualForceIgnoringConstraints: residual (nu) =
 * M known_udot + C(q,u) - f, where f = gravity + mobility_forces + body_forces
 * (same shapes and NULL rules as orc_eval; known_udot NULL = zero). */
int orc_inverse_dynamics(const orc_model *model, const double *q, const double *u,
                         const double *known_udot, const double *mobility_forces,
                         const double *body_forces, double *residual);

/* Mass matrix M(q) via SimbodyMatterSubsystem::calcM, nu*nu row-major. */
int orc_mass_matrix(const orc_model *model, const double *q, double *M);

/* Drop the cached Simbody system (frees memory; optional). */
void orc_release(void);

#ifdef __cplusplus
}
#endif

#endif /* MBK_SIMBODY_ORACLE_H */
