/* Private pieces of the constraint code, shared by its source files. */
#ifndef MBK_CONSTRAINTS_IMPL_H
#define MBK_CONSTRAINTS_IMPL_H

#include "../matter/matter_impl.h"

/* What a constraint callback gets: the State, the constraint, and for the
   acceleration level the trial body accelerations (in G) and udot. */
struct mbk_constraint_args {
    const mbk_matter *m;       /* matter subsystem */
    const mbk_state *s;        /* the State (positions, velocities) */
    const mt_constraint *c;    /* the constraint */
    const mbk_spatial_vec *A;  /* body accelerations in G (acceleration level), else NULL */
    const double *udot;        /* udot giving A (acceleration level), else NULL */
};

/* Velocity-stage kinematics of one constrained body relative to its constraint's
   ancestor A, both in A (C_CVEL; C_CPOSE holds its pose X_AB from Position). */
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
mt_cslots *ct_slots(const mbk_matter *m, const mbk_state *s);
/* Errors of a level for all enabled constraints: 0 perr; 1 [pverr, verr]; 2 [paerr, vaerr, aerr]. */
int ct_eval(const mbk_matter *m, const mbk_state *s, int level, const mbk_spatial_vec *A,
            const double *udot, double *out);
/* Add the forces multipliers produce (G^T lambda split into body forces in G and mobility
   forces); levels 2: holonomic and nonholonomic rows only, 3: all. */
int ct_apply(const mbk_matter *m, const mbk_state *s, const double *lambda, int levels,
             mbk_spatial_vec *F, double *tau);
/* Work space views. */
ct_solve_ws ct_workspace(const mbk_matter *m, const mbk_state *s);

#endif
