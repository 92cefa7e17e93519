/* Private pieces of the constraint code, shared by its source files. */
#ifndef MBK_CONSTRAINTS_IMPL_H
#define MBK_CONSTRAINTS_IMPL_H

#include "mbk/constraints.h"
#include "../matter/matter_impl.h"

/* Most bodies and mobilities one constraint may name. */
#define CT_MAX_BODIES 8

/* One constraint (topology). */
typedef struct ct_constraint {
    mbk_constraint_ops ops;       /* what it does (built-ins are ops tables too) */
    void *impl;                   /* its data, owned */
    int nb;                       /* constrained bodies */
    int body[CT_MAX_BODIES];     /* their body indices */
    int nmob;                     /* constrained mobilities */
    int mob_body[CT_MAX_BODIES]; /* body of each */
    int mob_coord[CT_MAX_BODIES];/* coordinate within that body's mobilizer */
    int ancestor;                 /* nearest common ancestor of everything it names */
    int kin0;                     /* its bodies' first slot in the cache_pose and cache_vel entries */
    bool builtin;                 /* added by a built-in's add function, not add_custom (messages) */
} ct_constraint;

/* Where each enabled constraint's equations sit (Instance stage): starts within
   the holonomic, nonholonomic and acceleration-only groups, -1 when disabled. */
typedef struct ct_cslots {
    int mp, mv, ma;               /* totals over enabled constraints */
    int rank;                     /* rank found by the last acceleration solve */
} ct_cslots;

/* The constraint code's data for one matter subsystem (matter's `con`). */
typedef struct ct_set {
    ct_constraint *cons;   /* constraints in the order added */
    int ncons, ccap;       /* count and capacity */
    int mmax;              /* equations of all constraints (all enabled) */
    int enabled_var;       /* discrete variable (Instance): one int per constraint */
    int lwork;             /* LAPACK workspace size for the m x m solves */
    int cache_slots;       /* cache entry: ct_cslots and the slot starts (Instance) */
    int cache_solve;       /* cache entry: the solve work space (lazy, never valid) */
    int cache_pose;        /* cache entry: constrained bodies' X_AB (Position), from kin0 */
    int cache_vel;         /* cache entry: their ct_body_vel (Velocity), from kin0 */
} ct_set;

/* The constraint data of m (installed by ct_attach). */
static inline ct_set *ct_of(const mbk_matter *m) { return (ct_set *)m->con; }

/* What a constraint callback gets: the State, the constraint, and for the
   acceleration level the trial body accelerations (in G) and udot. */
struct mbk_constraint_args {
    const mbk_matter *m;       /* matter subsystem */
    const mbk_state *s;        /* the State (positions, velocities) */
    const ct_constraint *c;    /* the constraint */
    const mbk_spatial_vec *A;  /* body accelerations in G (acceleration level), else NULL */
    const double *udot;        /* udot giving A (acceleration level), else NULL */
};

/* Velocity-stage kinematics of one constrained body relative to its constraint's
   ancestor A, both in A (cache_vel; cache_pose holds its pose X_AB from Position). */
typedef struct ct_body_vel {
    mbk_spatial_vec V_AB;   /* velocity of B's origin as seen in A */
    mbk_spatial_vec A_bias; /* the velocity-product part of its acceleration in A */
} ct_body_vel;

/* Views of the solve work space (one cache blob, sized at Topology). */
typedef struct ct_solve_ws {
    double *W;               /* m x m: G M^-1 G^T (column-major for LAPACK) */
    double *X;               /* nu per multiplier: M^-1 G^T e_j; also P or V rows in projection */
    double *e0, *e1, *lambda;/* m each */
    double *work;            /* LAPACK work, lwork */
    double *g, *udot_t;      /* nu each */
    mbk_spatial_vec *A_t, *F, *S; /* nb, nb, 2 nb */
    int *jpvt;               /* m: LAPACK pivots */
} ct_solve_ws;

/* The enabled flags (one int per constraint). */
const int *ct_enabled(const mbk_matter *m, const mbk_state *s);
/* Totals and rank of the enabled constraints. */
ct_cslots *ct_slots(const mbk_matter *m, const mbk_state *s);
/* Errors of a level for all enabled constraints: 0 perr; 1 [pverr, verr]; 2 [paerr, vaerr, aerr]. */
int ct_eval(const mbk_matter *m, const mbk_state *s, int level, const mbk_spatial_vec *A,
            const double *udot, double *out);
/* Add the forces multipliers produce (G^T lambda split into body forces in G and mobility
   forces); levels 2: holonomic and nonholonomic rows only, 3: all. */
int ct_apply(const mbk_matter *m, const mbk_state *s, const double *lambda, int levels,
             mbk_spatial_vec *F, double *tau);
/* Work space views. */
ct_solve_ws ct_workspace(const mbk_matter *m, const mbk_state *s);
/* mbk_constraint_add_custom_with_mobilities for the built-ins: fn, the public function
   called ("mbk_constraint_add_rod"), is the one its error messages name. */
int ct_add(mbk_matter *m, const mbk_constraint_ops *ops, void *impl, const int *bodies, int n_bodies,
           const int *mob_bodies, const int *coords, int n_mobilities, const char *fn);

/* Give m its constraint data and install matter's hooks into this code (once;
   mbk_multibody_create calls it, so every multibody System has constraints). */
int ct_attach(mbk_matter *m);
/* The stage work matter calls through its hooks (mt_constraint_hooks). */
int ct_topology(mbk_matter *m, mbk_state *s);
int ct_instance(const mbk_matter *m, mbk_state *s);
int ct_position(const mbk_matter *m, const mbk_state *s);
int ct_velocity(const mbk_matter *m, const mbk_state *s);
int ct_solve(const mbk_matter *m, const mbk_state *s, double *udot, mbk_spatial_vec *A);
int ct_project(const mbk_matter *m, mbk_state *s, double tol);
void ct_destroy(mbk_matter *m);
/* Remove from the error estimate parts qerr, uerr (matter's slices) their components
   normal to the constraint manifold (Velocity); no allocation. */
int ct_project_error(const mbk_matter *m, const mbk_state *s, double *qerr, double *uerr);
/* g = G^T lambda (m multipliers in the State's order; levels as ct_apply), O(n + m);
   uses the work space's F, udot_t and S. */
int ct_g_transpose(const mbk_matter *m, const mbk_state *s, const double *lambda, int levels, double *g);
/* u alone onto the velocity constraints (one least-squares correction when an error
   exceeds tol); on failure u is put back. Leaves the State at Velocity. */
int ct_project_u(const mbk_matter *m, mbk_state *s, double tol);
/* Body accelerations for a trial udot, with velocity terms (base to tip). */
void ct_accel_kinematics(const mbk_matter *m, const mbk_state *s, const double *udot, mbk_spatial_vec *A);

#endif
