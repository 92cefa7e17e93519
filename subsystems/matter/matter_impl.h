/* Private layout of the matter subsystem, shared by its source files. */
#ifndef MBK_MATTER_IMPL_H
#define MBK_MATTER_IMPL_H

#include "mbk/constraints.h"
#include "mbk/matter.h"
#include "mt_inertia.h"

/* Topology data of one body. */
typedef struct mt_body {
    int parent;            /* parent body index (-1 for Ground) */
    mbk_transform X_PF;    /* F on the parent */
    mbk_transform X_MB;    /* B in M (inverse of the X_BM given) */
    mt_sym3 I_B;           /* inertia about B's origin, in B */
    double mass;           /* body mass */
    mbk_vec3 com;          /* centre of mass from B's origin, in B */
    mbk_mobilizer mob;     /* the joint */
    int nu, u0;            /* u count and start (independent of the Euler choice) */
    int d0;                /* start of its nu x nu block in the D^-1 array */
    int run0;              /* first body of the unbranched run ending here: each of
                              bodies run0+1..this has the one before as parent */
    char *name;            /* optional name (mbk_matter_set_body_name), owned; NULL if none */
    bool pf_turns, mb_turns; /* X_PF, X_MB rotate (false: pure translations, composed cheaply) */
    bool pin;              /* built-in Pin: its kinematics are inlined in the sweeps */
    bool spin;             /* a Pin with M's origin at B's: H = (axis, 0), so the
                              sweeps skip the linear half of H */
    int pin_slot;          /* a Pin's index among the Pins (their sines and cosines) */
    bool I_diagonal;       /* I_B has no off-diagonal entries (rotated at half the cost) */
} mt_body;

/* The fields of a body the sweeps read, packed (32 bytes, two per cache line):
   a copy of mt_body's, so that long chains stream less memory per sweep. */
typedef struct mt_node {
    int parent, nu, u0, d0; /* as in mt_body */
    int pin_slot;           /* as in mt_body */
    bool pin, spin;         /* as in mt_body */
    bool fed;               /* a child other than the next body adds into this body's
                               tip-to-base sums through memory (not along a run) */
    double mass;            /* as in mt_body */
} mt_node;

/* Position-stage results of one body. */
typedef struct mt_pos {
    mbk_transform X_GB;    /* pose in Ground */
    mbk_vec3 r_PB;         /* parent origin to body origin, in G */
    mt_sym3 I_G;           /* inertia about B's origin, in G */
    mbk_vec3 c_G;          /* centre of mass from B's origin, in G */
} mt_pos;

/* Position-stage frame data of a joint that is not a spin (a spin needs neither:
   no HDot, no offset), kept apart from mt_pos so the sweeps of long chains of
   spins stream less memory. */
typedef struct mt_joint_frame {
    mbk_mat33 R_GF;        /* orientation of the mobilizer's F frame in Ground */
    mbk_vec3 p_MB_G;       /* M origin to B origin, in G */
} mt_joint_frame;

/* Velocity-stage results of one body. */
typedef struct mt_vel {
    mbk_spatial_vec V_GB;  /* velocity of B's origin in G */
    mbk_spatial_vec a_c;   /* velocity-product ("coriolis") acceleration */
    mbk_spatial_vec b;     /* gyroscopic force (w x I_o w, m w x (w x c)) */
} mt_vel;

/* Articulated-body results (depend on q only), one cache blob:
   P per body, then G = P H D^-1 per u, then D^-1 blocks per body. */
typedef struct mt_abi {
    mt_inertia *P;         /* articulated inertia about each body's origin, in G */
    mbk_spatial_vec *G;    /* P H D^-1, one column per u, shifted (as a force) to the parent's origin */
    double *Dinv;          /* nu_b x nu_b per body, at bodies[b].d0 */
} mt_abi;

enum { C_QLAYOUT, C_QN, C_TRIG, C_JOINT, C_POS, C_H, C_VEL, C_ABI, C_FORCES, C_ACC, C_SCRATCH, C_SCRATCH_MAT,
       C_CSLOTS, C_CSOLVE, C_CPOSE, C_CVEL, NUM_CACHE };

/* Most bodies and mobilities one constraint may name. */
#define MT_MAX_CBODIES 8

/* One constraint (topology). */
typedef struct mt_constraint {
    mbk_constraint_ops ops;       /* what it does (built-ins are ops tables too) */
    void *impl;                   /* its data, owned */
    int nb;                       /* constrained bodies */
    int body[MT_MAX_CBODIES];     /* their body indices */
    int nmob;                     /* constrained mobilities */
    int mob_body[MT_MAX_CBODIES]; /* body of each */
    int mob_coord[MT_MAX_CBODIES];/* coordinate within that body's mobilizer */
    int ancestor;                 /* nearest common ancestor of everything it names */
    int kin0;                     /* its bodies' first slot in the C_CPOSE and C_CVEL caches */
} mt_constraint;

/* Where each enabled constraint's equations sit (Instance stage): starts within
   the holonomic, nonholonomic and acceleration-only groups, -1 when disabled. */
typedef struct mt_cslots {
    int mp, mv, ma;               /* totals over enabled constraints */
    int rank;                     /* rank found by the last acceleration solve */
} mt_cslots;

struct mbk_matter {
    mbk_system *sys;       /* owning System */
    int sub;               /* subsystem index */
    mt_body *bodies;       /* bodies[0] is Ground */
    mt_node *nodes;        /* the sweeps' copy of each body's hot fields (same indices) */
    int nb, cap;           /* body count (with Ground) and capacity */
    int nu;                /* total u */
    int nd;                /* total size of the D^-1 blocks (sum of nu_b^2) */
    int npin;              /* number of built-in Pins */
    int *fed;              /* the bodies whose node says fed (their sums are zeroed before a sweep) */
    int nfed;              /* how many */
    int euler_var;         /* discrete variable (Model): use Euler angles */
    mt_constraint *cons;   /* constraints in the order added */
    int ncons, ccap;       /* count and capacity */
    int mmax;              /* equations of all constraints (all enabled) */
    int cons_enabled_var;  /* discrete variable (Instance): one int per constraint */
    int lwork;             /* LAPACK workspace size for the m x m solves */
    int cache[NUM_CACHE];  /* cache entry indices (allocated at Topology) */
};

/* ------------------------------------------------------------------ */
/* Cache access                                                         */
/* ------------------------------------------------------------------ */

static inline void *mt_cache(const mbk_matter *m, const mbk_state *s, int which)
{
    return mbk_state_upd_cache(s, m->sub, m->cache[which]);
}

/* Per body: q start and q count within matter's q, then each Pin's q index,
   then the Euler-angle choice (Model stage). */
static inline int *qlayout(const mbk_matter *m, const mbk_state *s) { return mt_cache(m, s, C_QLAYOUT); }

/* The Euler-angle choice as the q layout recorded it: one lookup fewer per sweep. */
static inline bool layout_euler(const mbk_matter *m, const int *lay) { return lay[2 * m->nb + m->npin] != 0; }

static inline bool use_euler(const mbk_matter *m, const mbk_state *s)
{
    return *(const bool *)mbk_state_get_discrete(s, m->sub, m->euler_var);
}

/* Sizes of the cache blobs; forces = body forces (nb) then mobility forces (nu). */
static inline size_t forces_bytes(const mbk_matter *m)
{
    return (size_t)m->nb * sizeof(mbk_spatial_vec) + (size_t)(m->nu + 1) * sizeof(double);
}

/* The mobility forces of a force blob, right after its nb body forces. */
static inline double *mt_mobility_forces(mbk_spatial_vec *F, int nb) { return (double *)(F + nb); }

/* Views of the articulated-body blob. */
static inline mt_abi mt_abi_of(const mbk_matter *m, const mbk_state *s)
{
    mt_abi a;
    a.P = mt_cache(m, s, C_ABI);
    a.G = (mbk_spatial_vec *)(a.P + m->nb);
    a.Dinv = (double *)(a.G + m->nu);
    return a;
}

/* Rigid-body spatial inertia times V, about B's origin in G:
   (I w + c x m v, m (v + w x c)) with c the centre of mass offset. */
static inline mbk_spatial_vec mt_rigid_mul(double mass, const mt_pos *p, mbk_spatial_vec V)
{
    const mt_composite body = {mass, mbk_vec3_scale(p->c_G, mass), p->I_G};
    return mt_composite_mul(&body, &V);
}

/* MBK_OK if (m, s) are usable and matter is realized to `stage`. */
int mt_need(const mbk_matter *m, const mbk_state *s, mbk_stage stage, const char *fn);
/* MBK_OK if body is a valid index. */
int mt_need_body(const mbk_matter *m, int body, const char *fn);

/* ---- constraints (subsystems/constraints) ---- */
/* Allocate the constraints' State entries (Topology). */
int mt_constraints_topology(mbk_matter *m, mbk_state *s);
/* Lay out the enabled constraints' error slots (Instance). */
int mt_constraints_instance(const mbk_matter *m, mbk_state *s);
/* Position errors into qerr (Position). */
int mt_constraints_position(const mbk_matter *m, const mbk_state *s);
/* Velocity errors into uerr (Velocity). */
int mt_constraints_velocity(const mbk_matter *m, const mbk_state *s);
/* Constrained udot and multipliers from the unconstrained udot and body accelerations
   (Acceleration); updates udot and A in place and fills udoterr and the multipliers. */
int mt_constraints_solve(const mbk_matter *m, const mbk_state *s, double *udot, mbk_spatial_vec *A);
/* Project q then u onto the constraint manifold (tol on the largest error). */
int mt_constraints_project(const mbk_matter *m, mbk_state *s, double tol);
/* Remove from the error estimate parts qerr, uerr (matter's slices) their components
   normal to the constraint manifold (Velocity); no allocation. */
int mt_constraints_project_error(const mbk_matter *m, const mbk_state *s, double *qerr, double *uerr);
/* Body accelerations for a trial udot, with velocity terms (base to tip). */
void mt_accel_kinematics(const mbk_matter *m, const mbk_state *s, const double *udot, mbk_spatial_vec *A);
/* Free the constraints. */
void mt_constraints_destroy(mbk_matter *m);

/* Whether a mobilizer is the built-in Pin (rotation about F's z, q = angle). */
bool mt_mobilizer_is_pin(const mbk_mobilizer *mob);

/* Add a matter subsystem to sys; returns its index. */
int mt_add_matter(mbk_system *sys);
/* Articulated-body inertias, tip to base, once per Position realization. */
int mt_realize_abi(const mbk_matter *m, const mbk_state *s);
/* Articulated-body sweeps: udot from mobility forces tau, body forces F and
   (when with_velocity) the velocity terms; A and z are nb-long scratch arrays. */
void mt_aba_solve(const mbk_matter *m, const mbk_state *s, const double *tau,
                  const mbk_spatial_vec *F, bool with_velocity, mbk_spatial_vec *A,
                  mbk_spatial_vec *z, double *udot);
/* Newton-Euler: residual = M udot (+ C if with_velocity) - tau - J^T F. */
void mt_rnea(const mbk_matter *m, const mbk_state *s, const double *udot, const double *tau,
             const mbk_spatial_vec *F, bool with_velocity, mbk_spatial_vec *A,
             mbk_spatial_vec *Fb, double *residual);

#endif
