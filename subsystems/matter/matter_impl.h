/* Private layout of the matter subsystem, shared by its source files. */
#ifndef MBK_MATTER_IMPL_H
#define MBK_MATTER_IMPL_H

#include <stddef.h>

#include "mbk/matter.h"
#include "state_impl.h"
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
    bool quat;             /* its first four q are a quaternion unless Euler angles are on */
    int nqmax;             /* its most q over the Euler choice */
    int ds0;               /* start of its nqmax x nu block in the derivative work space's dS */
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

/* The vector sweeps (mt_v4.h) read r_PB, I_G and c_G with loads that run into the next field. */
_Static_assert(offsetof(mt_pos, I_G) == offsetof(mt_pos, r_PB) + sizeof(mbk_vec3) &&
               offsetof(mt_pos, c_G) == offsetof(mt_pos, I_G) + sizeof(mt_sym3), "mt_pos: r_PB, I_G, c_G adjacent");

/* A body's mass properties as the sweeps use them (about B's origin, in B). */
typedef struct mt_massprops {
    double mass;           /* body mass */
    mbk_vec3 com;          /* centre of mass from B's origin, in B */
    mt_sym3 I_B;           /* inertia about B's origin, in B */
    int diagonal;          /* I_B has no off-diagonal entries */
} mt_massprops;

/* The per-State mass properties: a table of every body's, allocated only when a
   State sets mass properties of its own. */
typedef struct mt_mass_table {
    int nb;                /* records */
    int pad;
    mt_massprops body[];   /* nb records, Ground's first */
} mt_mass_table;

/* Matter's discrete variable (Instance stage) for them: a pointer to the State's own
   table, NULL while every body keeps the System's values (so a State that changes
   nothing carries 16 bytes, and Position reads the bodies: the fast path). Copying
   a State copies the table. Matter's Instance op records whether there is one in
   the q layout (mt_mass_custom), where Position finds it without a lookup. */
typedef struct mt_mass_ref {
    mt_mass_table *table;  /* owned; NULL: the bodies' own values */
    int lost;              /* a copy could not allocate the table: realizing fails */
} mt_mass_ref;
extern const mbk_value_type mt_value_mass_ref;

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

/* C_SCRATCH_MAT is shared: the mass matrix's work space, or the derivatives' (mt_dws). */
enum { C_QLAYOUT, C_QN, C_TRIG, C_JOINT, C_POS, C_H, C_VEL, C_ABI, C_FORCES, C_ACC, C_SCRATCH, C_SCRATCH_MAT,
       NUM_CACHE };

/* What the constraint code (subsystems/constraints/) does at matter's stages.
   Constraints sit on top of matter: the constraint code installs this table and
   its own data (ct_attach, called when a multibody System is made), so matter
   reaches it only through these pointers and never names it. */
typedef struct mt_constraint_hooks {
    int (*topology)(mbk_matter *m, mbk_state *s);        /* allocate its State entries */
    int (*instance)(const mbk_matter *m, mbk_state *s);  /* lay out the enabled constraints' slots */
    int (*position)(const mbk_matter *m, const mbk_state *s); /* position errors */
    int (*velocity)(const mbk_matter *m, const mbk_state *s); /* velocity errors */
    /* constrained udot and multipliers from the unconstrained udot and body accelerations */
    int (*solve)(const mbk_matter *m, const mbk_state *s, double *udot, mbk_spatial_vec *A);
    int (*project)(const mbk_matter *m, mbk_state *s, double tol); /* q then u onto the manifold */
    void (*destroy)(mbk_matter *m);                      /* free its data */
} mt_constraint_hooks;

struct mbk_matter {
    mbk_system *sys;       /* owning System */
    int sub;               /* subsystem index */
    mt_body *bodies;       /* bodies[0] is Ground */
    mt_node *nodes;        /* the sweeps' copy of each body's hot fields (same indices) */
    int nb, cap;           /* body count (with Ground) and capacity */
    int nu;                /* total u */
    int nd;                /* total size of the D^-1 blocks (sum of nu_b^2) */
    int npin;              /* number of built-in Pins */
    int nquat;             /* number of bodies whose mobilizer has a quaternion (mt_body.quat) */
    int *fed;              /* the bodies whose node says fed (their sums are zeroed before a sweep) */
    int nfed;              /* how many */
    int *fed_slot;         /* per body: its place in fed (-1: not fed), after fed's nb entries */
    int euler_var;         /* discrete variable (Model): use Euler angles */
    int mass_var;          /* discrete variable (Instance): the State's mass properties (mt_mass_ref) */
    int *pre, *order, *size; /* preorder position of each body, the body at each position and its
                              subtree's size: subtree(b) = order[pre[b] .. pre[b] + size[b]) */
    int nqmax, nds;        /* sums over bodies of nqmax and nqmax * nu (derivative work space) */
    bool *contig;          /* per body: its subtree is the bodies b .. b + size[b] - 1 */
    int *lam, *loff;       /* per u: the u it hangs from in the tree (-1: none) and where its
                              row of the sparse factor M = L^T D L starts */
    int nl;                /* entries of L (the sum over u of their depth in u) */
    int *lanc;             /* per entry of L: the u it multiplies (row k holds k's u above it) */
    int *ldoff, *ldrow;    /* L by columns: for each u i from ldoff[i] to ldoff[i + 1], the u
                              below it (ldrow) */
    int *lcol;             /* per entry of L (by rows): where it sits by columns */
    bool ltdl;             /* factor M sparsely for the derivatives' M^-1 (nl small enough) */
    size_t dws_off[10];    /* byte offsets of the derivatives' work space sections, and its size */
    int dws_vlen;          /* the length of its vectors (mt_dws.vlen) */
    const mt_constraint_hooks *con_hooks; /* installed by the constraint code; NULL: none */
    void *con;             /* the constraint code's data (its ct_set), owned through con_hooks */
    int cache[NUM_CACHE];  /* cache entry indices (allocated at Topology) */
};

/* ------------------------------------------------------------------ */
/* Derivatives (matter_deriv*.c; matter_deriv.h lists them)            */
/* ------------------------------------------------------------------ */

/* Everything below is in Ground, at Ground's origin (Pluecker coordinates), where
   spatial vectors of different bodies add without shifting: S the columns of H,
   v, a the body velocities and accelerations, forces with moments about the origin. */

/* Per body. */
typedef struct mt_dbody {
    mbk_spatial_vec v;   /* velocity */
    mbk_spatial_vec a;   /* acceleration, minus the gravity field */
    mbk_spatial_vec F;   /* subtree sum of Y a + v x* Y v */
    mbk_spatial_vec Phi; /* subtree sum of the applied forces held fixed (geometric term) */
    mt_composite Yc;     /* subtree inertia */
    /* The subtree sum Bc of B, B w = Y (w x v) + w x* (Y v) + v x* (Y w), which is
       [[Bs - [hn x], 0], [-2 [hf x], 0]] with Bs symmetric and (hn, hf) = Y v: */
    mt_sym3 Bs;          /* its symmetric part, summed */
    mbk_spatial_vec hc;  /* the subtree's momentum Y v, summed */
} mt_dbody;

/* Per derivative column of q (by matter q index). */
typedef struct mt_dcol {
    mbk_spatial_vec T;     /* the twist of the subtree per unit q */
    mbk_spatial_vec w;     /* the subtree's extra velocity (dv_i = T x v_i + w) */
    mbk_spatial_vec alpha; /* its extra acceleration (da_i = T x a_i + alpha + w x v_i) */
} mt_dcol;

/* Per u: a u column has T = 0 and w = S, the column of H. */
typedef struct mt_ducol {
    mbk_spatial_vec T;     /* S (named T so that rows read S_r as ucol[r].T) */
    mbk_spatial_vec alpha;
} mt_ducol;

/* Per u: Yc_i S and Bc_i^T S (whose linear part is zero). */
typedef struct mt_drow {
    mbk_spatial_vec YcS;
    mbk_vec3 BtS;
} mt_drow;

/* The scratch vectors of the derivative work space, by use. */
enum { MT_V_Q0, MT_V_U0, MT_V_VAL, MT_V_ACC, MT_V_UFREE, MT_V_TAU, MT_V_TAU2, MT_DWS_NVEC };

/* The sweep's column arrays, by components in groups of eight columns: per q column
   alpha (6), w's angular part (3), g (6), T (6); per u column alpha (6), S's angular
   part (3), g (6). */
enum { MT_QS = 21, MT_US = 15 };

/* Views of the derivative work space (C_SCRATCH_MAT). */
typedef struct mt_dws {
    mt_dbody *body;        /* nb */
    mt_dcol *qcol;         /* nqmax (by matter q index) */
    mt_ducol *ucol;        /* nu */
    mt_drow *row;          /* nu */
    mbk_spatial_vec *dS;   /* nds: body b's dS/dq_k column j at bodies[b].ds0 + k nu + j */
    mbk_spatial_vec *sp;   /* 2 nb spatial vectors of scratch */
    double *qs, *us;       /* the sweep's columns: per group of eight q (u) columns, MT_QS
                              (MT_US) components of eight lanes (see mt_deriv_sweep); they
                              share memory with sp and vec, so those hold nothing across a
                              sweep */
    double *vec;           /* MT_DWS_NVEC vectors of vlen doubles for callers */
    int vlen;
    int numeric;           /* bodies whose mobilizer was differentiated numerically */
    bool with_velocity;
} mt_dws;

/* An element's forces and their derivatives, on at most two bodies: the force on
   body b at Ground's origin, F0_b, and its derivatives with respect to a small
   displacement (twist at Ground's origin, angular first) of body c at fixed body
   velocities, K[b][c], and to body c's velocity, D[b][c] (6 x 6, row-major). */
typedef struct mt_pair_jac {
    int n;                  /* 1 or 2 */
    int body[2];
    mbk_spatial_vec F0[2];
    double K[2][2][6][6];
    double D[2][2][6][6];
    bool has_K, has_D;
    bool opposite;          /* n = 2 and body 0's force and derivatives are body 1's negated */
} mt_pair_jac;

mt_dws mt_dws_of(const mbk_matter *m, const mbk_state *s);
/* Kinematics and inertia sums for the derivative sweeps at the State (Velocity),
   with known udot (NULL: zero), a uniform gravity field g and (with_velocity false)
   velocities taken as zero. Phi is zeroed. MBK_OK or the failure of a custom
   mobilizer's calc_derivatives op. */
int mt_deriv_setup(const mbk_matter *m, const mbk_state *s, const double *udot, mbk_vec3 g, bool with_velocity);
/* After setup: ADD scale * the derivatives of M udot + C - J^T (F_gravity + Phi)
   (Phi: the forces given to mt_deriv_add_phi, held fixed in Ground) to dr_dq
   (nu x nq, row stride ldq) and dr_du (nu x nu, row stride ldu); either may be NULL.
   wq >= nq, wu >= nu: how many doubles from each row's start may be read and written
   (zeros are added past nq and nu: the work space's block lets the sweep take whole
   vectors of eight there). */
void mt_deriv_sweep(const mbk_matter *m, const mbk_state *s, double scale, double *dr_dq, int ldq, int wq,
                    double *dr_du, int ldu, int wu);
/* After setup: add a force (at Ground's origin) on a body to Phi. */
void mt_deriv_add_phi(const mbk_matter *m, const mbk_state *s, int body, mbk_spatial_vec F0);
/* After setup: ADD scale * the mobility-space Jacobians of an element's body forces
   (without the geometric part, which Phi carries) to df_dq and df_du. */
void mt_deriv_add_pair(const mbk_matter *m, const mbk_state *s, const mt_pair_jac *J, double scale,
                       double *df_dq, int ldq, double *df_du, int ldu);
/* After setup: X <- scale M^-1 X for the n1 columns of X1 (row stride ld1) and the n2
   of X2 (ld2), either may be NULL: the sparse L^T D L factor of M read off the
   articulated-body inertias (the State is at Acceleration) and applied row by row (or,
   for deep trees whose factor would be too big to keep in the State, the
   articulated-body sweeps on up to eight groups of eight columns at a time). Wide arrays
   are solved in place from their first 32-byte-aligned column, the few columns around in
   the work space; the bits do not depend on where the arrays sit. 0 or a negative
   status. */
int mt_deriv_solve(const mbk_matter *m, const mbk_state *s, double scale, double *X1, int ld1, int n1, double *X2,
                    int ld2, int n2);
/* The work space's block for mt_deriv_solve_block: nu rows of n columns, *ld apart,
   zeroed, with eight zeros after the last row (so a row from column c may be read and
   written as far as *ld - c + 8); NULL when the factor is not kept (deep trees) or n is more than the block
   takes (then use mt_deriv_solve). */
double *mt_deriv_block(const mbk_matter *m, const mbk_state *s, int n, int *ld);
/* After setup, with the right-hand side in the block (its first n1 columns, then n2):
   X1 <- scale M^-1 (the first n1 columns), X2 <- the next n2. 0, 1 if a result is not
   finite (NaN or infinite, to be found and reported by the caller), or a negative status. */
int mt_deriv_solve_block(const mbk_matter *m, const mbk_state *s, double scale, double *X1, int ld1, int n1,
                         double *X2, int ld2, int n2);
/* Byte size of the derivative work space; keeps its layout in m (dws_off, dws_vlen). */
size_t mt_dws_bytes(mbk_matter *m);

/* ------------------------------------------------------------------ */
/* Cache access                                                         */
/* ------------------------------------------------------------------ */

/* Unchecked (st_cache_bytes): every matter entry point checks the State first, and these
   lookups are a fixed cost of every call, most of it on small models. */
static inline void *mt_cache(const mbk_matter *m, const mbk_state *s, int which)
{
    return st_cache_bytes(s, m->sub, m->cache[which]);
}

/* Per body: q start and q count within matter's q, then each Pin's q index,
   then the Euler-angle choice (Model stage). */
static inline int *qlayout(const mbk_matter *m, const mbk_state *s) { return mt_cache(m, s, C_QLAYOUT); }

/* Whether the State's mass properties differ from the bodies' (written at Instance). */
static inline bool mt_mass_custom(const mbk_matter *m, const int *lay) { return lay[2 * m->nb + m->npin + 1] != 0; }

/* The Euler-angle choice as the q layout recorded it: one lookup fewer per sweep. */
static inline bool layout_euler(const mbk_matter *m, const int *lay) { return lay[2 * m->nb + m->npin] != 0; }

/* The State's mass properties, or NULL while they are the System's own (read mt_body). */
static inline const mt_massprops *mt_state_mass(const mbk_matter *m, const mbk_state *s)
{
    const mt_mass_ref *r = mbk_state_get_discrete(s, m->sub, m->mass_var);
    return r && r->table ? r->table->body : NULL;
}

static inline bool use_euler(const mbk_matter *m, const mbk_state *s)
{
    return *(const bool *)mbk_state_get_discrete(s, m->sub, m->euler_var);
}

/* Sizes of the cache blobs; forces = body forces (nb), mobility forces (nu, and one spare),
   then the flag of mt_forces_checked. */
static inline size_t forces_bytes(const mbk_matter *m)
{
    return (size_t)m->nb * sizeof(mbk_spatial_vec) + (size_t)(m->nu + 2) * sizeof(double);
}

/* The mobility forces of a force blob, right after its nb body forces. */
static inline double *mt_mobility_forces(mbk_spatial_vec *F, int nb) { return (double *)(F + nb); }

/* The force blob's flag: 1.0 while its sums are known finite (the last force subsystem to
   realize Dynamics scanned them, and no one has asked for them writable since), else 0.0;
   then the operators given the System's own sums need not scan them again. */
static inline double *mt_forces_checked(const mbk_matter *m, mbk_spatial_vec *F)
{
    return mt_mobility_forces(F, m->nb) + m->nu + 1;
}

/* The State's own body masses (Position): nb doubles right after the nb poses in the
   Position blob, so the sweeps find them without a lookup and mt_pos stays 192 bytes.
   Entry 0 (Ground's) says whether they are there: 1 when the State has mass
   properties of its own, 0 when the sweeps read the bodies' (mt_node.mass), the fast
   path of every State that keeps the defaults. */
static inline double *mt_pos_mass(const mbk_matter *m, const mt_pos *pos) { return (double *)(pos + m->nb); }

/* Body i's mass in this State (Position). */
static inline double mt_mass_of(const mbk_matter *m, const mt_pos *pos, int i)
{
    const double *pm = mt_pos_mass(m, pos);
    return pm[0] != 0.0 ? pm[i] : m->nodes[i].mass;
}

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

/* Copy a few doubles (a body's q or u): a loop beats a memcpy call here. */
static inline void copy_small(double *dst, const double *src, int n)
{
    for (int i = 0; i < n; ++i) dst[i] = src[i];
}

/* MBK_OK unless q give no pose: NaN or infinity anywhere (MBK_ENOTFINITE; looked for
   only with scan_finite, as realize_position need not: the System checks every q before
   Position), or a zero quaternion (MBK_EINVAL); the message names the body. */
int mt_check_q(const mbk_matter *m, const int *lay, bool euler, const double *q, int nq, bool scan_finite);
/* Matter's realize ops of the later stages (matter_kinematics.c, matter_dynamics.c). */
int mt_realize_position(void *impl, const mbk_subsystem_ctx *c, mbk_state *s);
int mt_realize_velocity(void *impl, const mbk_subsystem_ctx *c, mbk_state *s);
int mt_realize_dynamics(void *impl, const mbk_subsystem_ctx *c, mbk_state *s);
int mt_realize_acceleration(void *impl, const mbk_subsystem_ctx *c, mbk_state *s);

/* MBK_OK if (m, s) are usable and matter is realized to `stage`. */
int mt_need(const mbk_matter *m, const mbk_state *s, mbk_stage stage, const char *fn);
/* MBK_OK if v[0..n) are all finite; else MBK_ENOTFINITE naming fn, the array and the entry. */
int mt_need_finite(const double *v, int n, const char *fn, const char *name);
/* MBK_OK if body is a valid index. */
int mt_need_body(const mbk_matter *m, int body, const char *fn);

/* Whether a mobilizer is the built-in Pin (rotation about F's z, q = angle). */
bool mt_mobilizer_is_pin(const mbk_mobilizer *mob);
/* Whether a mobilizer is the built-in Free one. */
bool mt_mobilizer_is_free(const mbk_mobilizer *mob);
/* Whether a mobilizer is a built-in whose first four q are a quaternion (Ball, Free)
   when Euler angles are off. */
bool mt_mobilizer_has_quaternion(const mbk_mobilizer *mob);

/* Whether a function-based mobilizer's functions all have third derivatives. */
bool mt_fb_has_third_derivatives(const void *impl);
/* Whether a mobilizer's calc_derivatives op is there and exact (no finite differences). */
bool mt_mobilizer_derivatives_exact(const mbk_mobilizer *mob);

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
