/* Private layout of the matter subsystem, shared by its source files. */
#ifndef MBK_MATTER_IMPL_H
#define MBK_MATTER_IMPL_H

#include "mbk/matter.h"

/* Topology data of one body. */
typedef struct mt_body {
    int parent;            /* parent body index (-1 for Ground) */
    mbk_transform X_PF;    /* F on the parent */
    mbk_transform X_MB;    /* B in M (inverse of the X_BM given) */
    mbk_spatial_mat M_B;   /* spatial inertia about B's origin, in B */
    double mass;           /* body mass */
    mbk_vec3 com;          /* centre of mass from B's origin, in B */
    mbk_mobilizer mob;     /* the joint */
    int nu, u0;            /* u count and start (independent of the Euler choice) */
} mt_body;

/* Position-stage results of one body. */
typedef struct mt_pos {
    mbk_transform X_GB;    /* pose in Ground */
    mbk_mat33 R_GF;        /* orientation of the mobilizer's F frame in Ground */
    mbk_vec3 r_PB;         /* parent origin to body origin, in G */
    mbk_vec3 p_MB_G;       /* M origin to B origin, in G */
    mbk_spatial_mat M_G;   /* spatial inertia about B's origin, in G */
    mbk_vec3 c_G;          /* centre of mass from B's origin, in G */
} mt_pos;

/* Velocity-stage results of one body. */
typedef struct mt_vel {
    mbk_spatial_vec V_GB;  /* velocity of B's origin in G */
    mbk_spatial_vec a_c;   /* velocity-product ("coriolis") acceleration */
    mbk_spatial_vec b;     /* gyroscopic force (w x I_o w, m w x (w x c)) */
} mt_vel;

/* Articulated-body results of one body (depend on q only). */
typedef struct mt_abi {
    mbk_spatial_mat P;     /* articulated inertia about B's origin, in G */
    double Dinv[MBK_MOBILIZER_MAX_U * MBK_MOBILIZER_MAX_U]; /* (H^T P H)^-1, nu x nu */
    mbk_spatial_vec G[MBK_MOBILIZER_MAX_U];                 /* P H D^-1, nu columns */
} mt_abi;

enum { C_QLAYOUT, C_QN, C_POS, C_H, C_VEL, C_ABI, C_FORCES, C_ACC, C_SCRATCH, C_SCRATCH_MAT, NUM_CACHE };

struct mbk_matter {
    mbk_system *sys;       /* owning System */
    int sub;               /* subsystem index */
    mt_body *bodies;       /* bodies[0] is Ground */
    int nb, cap;           /* body count (with Ground) and capacity */
    int nu;                /* total u */
    int euler_var;         /* discrete variable (Model): use Euler angles */
    int cache[NUM_CACHE];  /* cache entry indices (allocated at Topology) */
};

/* ------------------------------------------------------------------ */
/* Cache access                                                         */
/* ------------------------------------------------------------------ */

static inline void *mt_cache(const mbk_matter *m, const mbk_state *s, int which)
{
    return mbk_state_upd_cache(s, m->sub, m->cache[which]);
}

/* Per body: q start and q count within matter's q (Model stage). */
static inline int *qlayout(const mbk_matter *m, const mbk_state *s) { return mt_cache(m, s, C_QLAYOUT); }

static inline bool use_euler(const mbk_matter *m, const mbk_state *s)
{
    return *(const bool *)mbk_state_get_discrete(s, m->sub, m->euler_var);
}

static inline void *vec_of(void *base, size_t off) { return (char *)base + off; }

/* Sizes of the cache blobs; forces = body forces (nb) then mobility forces (nu). */
static inline size_t forces_bytes(const mbk_matter *m)
{
    return (size_t)m->nb * sizeof(mbk_spatial_vec) + (size_t)(m->nu + 1) * sizeof(double);
}

/* MBK_OK if (m, s) are usable and matter is realized to `stage`. */
int mt_need(const mbk_matter *m, const mbk_state *s, mbk_stage stage, const char *fn);
/* MBK_OK if body is a valid index. */
int mt_need_body(const mbk_matter *m, int body, const char *fn);

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
