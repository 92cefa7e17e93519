/* The matter subsystem's O(n) dynamics: articulated-body inertias (once per
 * Position realization), the Dynamics stage (zeroed force accumulators) and
 * the articulated-body sweeps that give udot at Acceleration. Conventions are
 * in matter.c. */
#include <math.h>
#include <string.h>

#include "mbk/status.h"

#include "matter_impl.h"
#include "mt_v4.h"

/* Invert a small symmetric positive-definite matrix in place through A = L diag(d) L^T
   (no pivoting: a symmetric positive-definite matrix needs none), a third of the
   flops of Gauss-Jordan; 0 if a pivot d_k is not above tol (singular to round-off).
   Reads the lower triangle; writes the full inverse, exactly symmetric. */
static inline __attribute__((always_inline)) int small_inverse_n(double *A, int n, double tol)
{
    double L[MBK_MOBILIZER_MAX_U][MBK_MOBILIZER_MAX_U], d[MBK_MOBILIZER_MAX_U], dinv[MBK_MOBILIZER_MAX_U];
    /* the factor, column by column: d_k and the column below it (L_ik d_k first, then / d_k) */
    for (int k = 0; k < n; ++k) {
        double dk = A[k * n + k];
        for (int j = 0; j < k; ++j) dk -= L[k][j] * L[k][j] * d[j];
        if (!(dk > tol)) return 0;
        d[k] = dk;
        dinv[k] = 1.0 / dk; /* one division per pivot */
        for (int i = k + 1; i < n; ++i) {
            double x = A[i * n + k];
            for (int j = 0; j < k; ++j) x -= L[i][j] * L[k][j] * d[j];
            L[i][k] = x * dinv[k];
        }
    }
    /* W = L^-1 (unit lower triangular), in place of L's strict lower triangle */
    for (int j = 0; j < n; ++j)
        for (int i = j + 1; i < n; ++i) {
            double x = -L[i][j];
            for (int k = j + 1; k < i; ++k) x -= L[i][k] * L[k][j];
            L[i][j] = x;
        }
    /* A^-1 = W^T diag(1/d) W: entry (i, j), i <= j, sums over k >= j (W_kk = 1) */
    for (int i = 0; i < n; ++i)
        for (int j = i; j < n; ++j) {
            double x = (j == i ? 1.0 : L[j][i]) * dinv[j];
            for (int k = j + 1; k < n; ++k) x += L[k][i] * L[k][j] * dinv[k];
            A[i * n + j] = A[j * n + i] = x;
        }
    return 1;
}

/* small_inverse, unrolled for a free body's six u (the same operations, the same bits). */
static int small_inverse(double *A, int n, double tol)
{
    return n == 6 ? small_inverse_n(A, 6, tol) : small_inverse_n(A, n, tol);
}

#ifdef MT_V4
/* A one-dof body's step of the ABI sweep on vectors (mt_v4.h): the same products and
   sums as abi_one_dof (or abi_spin) and abi_one_dof_pass, in the same order, so the
   same bits. An articulated inertia is read and added to in
   memory as five 4-double chunks and a last double, at the offsets where it is written:
   the parent's loads then take their data from the child's stores. */
_Static_assert(sizeof(mt_inertia) == 21 * sizeof(double) && offsetof(mt_inertia, B) == 6 * sizeof(double) &&
               offsetof(mt_inertia, D) == 15 * sizeof(double), "mt_inertia: 21 packed doubles");

/* An articulated inertia's 21 numbers: {Axx Ayy Azz Axy} {Axz Ayz B00 B01} {B02 B10 B11 B12}
   {B20 B21 B22 Dxx} {Dyy Dzz Dxy Dxz} and Dyz. */
typedef struct mt_ichunks {
    mt_v4 c[5]; /* the first 20 numbers */
    double last; /* Dyz */
} mt_ichunks;

/* An articulated inertia by columns and rows (lane 3 a copy of lane 2). */
typedef struct mt_icols {
    mt_v4 A[3], D[3]; /* columns of the symmetric blocks */
    mt_v4 Br[3], Bc[3]; /* rows and columns of B */
} mt_icols;

static inline mt_ichunks ichunks_load(const mt_inertia *P)
{
    const double *d = &P->A.xx;
    mt_ichunks k = {{v4_load(d), v4_load(d + 4), v4_load(d + 8), v4_load(d + 12), v4_load(d + 16)}, d[20]};
    return k;
}

/* Columns and rows from the chunks. */
static inline mt_icols icols_of(const mt_ichunks *k)
{
    const mt_v4 *c = k->c, l = {k->last, k->last, k->last, k->last};
    mt_icols a;
    a.A[0] = __builtin_shuffle(c[0], c[1], (mt_v4i){0, 3, 4, 4}); /* xx xy xz */
    a.A[1] = __builtin_shuffle(c[0], c[1], (mt_v4i){3, 1, 5, 5}); /* xy yy yz */
    a.A[2] = __builtin_shuffle(c[0], c[1], (mt_v4i){4, 5, 2, 2}); /* xz yz zz */
    a.D[0] = __builtin_shuffle(c[3], c[4], (mt_v4i){3, 6, 7, 7});
    a.D[1] = __builtin_shuffle(c[4], l, (mt_v4i){2, 0, 4, 4});
    a.D[2] = __builtin_shuffle(c[4], l, (mt_v4i){3, 4, 1, 1});
    a.Br[0] = __builtin_shuffle(c[1], c[2], (mt_v4i){2, 3, 4, 4});
    a.Br[1] = __builtin_shuffle(c[2], (mt_v4i){1, 2, 3, 3});
    a.Br[2] = __builtin_shuffle(c[3], (mt_v4i){0, 1, 2, 2});
    const mt_v4 b01 = __builtin_shuffle(c[1], c[2], (mt_v4i){2, 5, 3, 6}); /* B00 B10 B01 B11 */
    a.Bc[0] = __builtin_shuffle(b01, c[3], (mt_v4i){0, 1, 4, 4});
    a.Bc[1] = __builtin_shuffle(b01, c[3], (mt_v4i){2, 3, 5, 5});
    a.Bc[2] = __builtin_shuffle(c[2], c[3], (mt_v4i){0, 3, 6, 6});
    return a;
}

/* P V (mt_inertia_mul's order). */
static inline mt_sv4 icols_mul(const mt_icols *P, mt_sv4 V)
{
    mt_sv4 r;
    r.w = sym3_cols_mul(P->A, V.w) +
          (P->Bc[0] * v4_lane(V.v, 0) + P->Bc[1] * v4_lane(V.v, 1) + P->Bc[2] * v4_lane(V.v, 2));
    r.v = sym3_cols_mul(P->D, V.v) +
          (P->Br[0] * v4_lane(V.w, 0) + P->Br[1] * v4_lane(V.w, 1) + P->Br[2] * v4_lane(V.w, 2));
    return r;
}

/* S taken to the parent's origin (mt_inertia_shifted) as chunks. */
static inline mt_ichunks icols_shifted(const mt_icols *S, mt_v4 r)
{
    const mt_v4 rx = v4_lane(r, 0), ry = v4_lane(r, 1), rz = v4_lane(r, 2);
    mt_v4 Tc[3], Tr[3], SA[3];
    /* T = B + r~ D by columns and by rows (D symmetric: its rows are its columns) */
    for (int j = 0; j < 3; ++j) Tc[j] = S->Bc[j] + v4_cross(r, S->D[j]);
    Tr[0] = S->Br[0] + (ry * S->D[2] - rz * S->D[1]);
    Tr[1] = S->Br[1] + (rz * S->D[0] - rx * S->D[2]);
    Tr[2] = S->Br[2] + (rx * S->D[1] - ry * S->D[0]);
    /* column j of the angular block: A_ij + (r x B_j)_i + (r x T_i)_j */
    SA[0] = (S->A[0] + v4_cross(r, S->Br[0])) + (ry * Tc[2] - rz * Tc[1]);
    SA[1] = (S->A[1] + v4_cross(r, S->Br[1])) + (rz * Tc[0] - rx * Tc[2]);
    SA[2] = (S->A[2] + v4_cross(r, S->Br[2])) + (rx * Tc[1] - ry * Tc[0]);
    mt_ichunks k;
    const mt_v4 a = __builtin_shuffle(SA[0], SA[1], (mt_v4i){0, 5, 0, 4});
    k.c[0] = __builtin_shuffle(a, SA[2], (mt_v4i){0, 1, 6, 3});
    k.c[1] = __builtin_shuffle(SA[2], Tr[0], (mt_v4i){0, 1, 4, 5});
    k.c[2] = __builtin_shuffle(Tr[0], Tr[1], (mt_v4i){2, 4, 5, 6});
    k.c[3] = __builtin_shuffle(Tr[2], S->D[0], (mt_v4i){0, 1, 2, 4});
    const mt_v4 d = __builtin_shuffle(S->D[1], S->D[2], (mt_v4i){1, 6, 1, 6}); /* yy zz */
    k.c[4] = __builtin_shuffle(d, S->D[0], (mt_v4i){0, 1, 5, 6});
    k.last = S->D[1][2];
    return k;
}

/* (P + S) - g h^T in the chunks' layout: the upper triangles of g_w h_w^T and g_v h_v^T
   and all of g_w h_v^T (mt_inertia_downdate's terms). */
static inline mt_ichunks ichunks_add_downdate(const mt_ichunks *P, const mt_ichunks *S, mt_sv4 g, mt_sv4 h)
{
    mt_ichunks r;
    const mt_v4 o[5] = {
        __builtin_shuffle(g.w, (mt_v4i){0, 1, 2, 0}) * __builtin_shuffle(h.w, (mt_v4i){0, 1, 2, 1}),
        __builtin_shuffle(g.w, (mt_v4i){0, 1, 0, 0}) * __builtin_shuffle(h.w, h.v, (mt_v4i){2, 2, 4, 5}),
        __builtin_shuffle(g.w, (mt_v4i){0, 1, 1, 1}) * __builtin_shuffle(h.v, (mt_v4i){2, 0, 1, 2}),
        __builtin_shuffle(g.w, g.v, (mt_v4i){2, 2, 2, 4}) * __builtin_shuffle(h.v, (mt_v4i){0, 1, 2, 0}),
        __builtin_shuffle(g.v, (mt_v4i){1, 2, 0, 0}) * __builtin_shuffle(h.v, (mt_v4i){1, 2, 1, 2})};
    for (int j = 0; j < 5; ++j) r.c[j] = (P->c[j] + S->c[j]) - o[j];
    r.last = (P->last + S->last) - g.v[1] * h.v[2];
    return r;
}

/* Store the chunks as *P, chunk by chunk (a wider copy would be read from the
   stack across narrower stores, which stalls). */
static inline void ichunks_store(mt_inertia *P, const mt_ichunks *k)
{
    double *d = &P->A.xx;
    for (int j = 0; j < 5; ++j) memcpy(d + 4 * j, &k->c[j], sizeof k->c[j]);
    d[20] = k->last;
}

#endif

/* Size of the terms that form H^T P H: max_j |H_j|^2 times the trace of P
   bounds every |H_i^T P H_j| when P is positive semidefinite. A pivot below
   1e-13 of it is round-off: the body has no inertia along that mobility.
   (Sums of squares and a trace: no absolute values or maxima to chain.) */
static inline double pivot_tolerance(const mt_inertia *P, const mbk_spatial_vec *Hb, int nu)
{
    double h = 0.0;
    for (int j = 0; j < nu; ++j) {
        double hj = mbk_vec3_norm2(Hb[j].w) + mbk_vec3_norm2(Hb[j].v);
        h = hj > h ? hj : h;
    }
    return 1e-13 * h * (P->A.xx + P->A.yy + P->A.zz + P->D.xx + P->D.yy + P->D.zz);
}

/* One body's D^-1, G and (when Pplus is not NULL) P+ = P - P H D^-1 H^T P for any
   number of u. A body on Ground passes no P+ on (Ground's is never used). */
static int abi_general(const mt_inertia *P, const mbk_spatial_vec *Hb, int nu, double *Dinv,
                       mbk_spatial_vec *G, mt_inertia *Pplus)
{
    mbk_spatial_vec PH[MBK_MOBILIZER_MAX_U];
#ifdef MT_V4
    /* the same sums on vectors (mt_v4.h), the same bits */
    const mt_ichunks k = ichunks_load(P);
    const mt_icols c = icols_of(&k);
    mt_sv4 PHv[MBK_MOBILIZER_MAX_U], Hv[MBK_MOBILIZER_MAX_U];
    for (int j = 0; j < nu; ++j) {
        Hv[j] = sv4_load(&Hb[j]);
        PHv[j] = icols_mul(&c, Hv[j]);
    }
    for (int r = 0; r < nu; ++r)
        for (int j = 0; j <= r; ++j) Dinv[r * nu + j] = v4_dot(Hv[r].w, PHv[j].w) + v4_dot(Hv[r].v, PHv[j].v);
    if (nu && !small_inverse(Dinv, nu, pivot_tolerance(P, Hb, nu))) return -1;
    for (int j = 0; j < nu; ++j) {
        mt_sv4 g = {{0.0, 0.0, 0.0, 0.0}, {0.0, 0.0, 0.0, 0.0}};
        for (int r = 0; r < nu; ++r) {
            const mt_v4 d = {Dinv[r * nu + j], Dinv[r * nu + j], Dinv[r * nu + j], Dinv[r * nu + j]};
            g = sv4_add(g, (mt_sv4){PHv[r].w * d, PHv[r].v * d});
        }
        sv4_store(&G[j], g);
    }
    if (!Pplus) return 0;
    for (int j = 0; j < nu; ++j) sv4_store(&PH[j], PHv[j]);
#else
    for (int j = 0; j < nu; ++j) PH[j] = mt_inertia_mul(P, &Hb[j]);
    /* D = H^T P H is symmetric: small_inverse reads its lower triangle only */
    for (int r = 0; r < nu; ++r)
        for (int j = 0; j <= r; ++j) Dinv[r * nu + j] = mbk_spatial_vec_dot(Hb[r], PH[j]);
    if (nu && !small_inverse(Dinv, nu, pivot_tolerance(P, Hb, nu))) return -1;
    for (int j = 0; j < nu; ++j) {
        mbk_spatial_vec g = mbk_spatial_vec_zero();
        for (int r = 0; r < nu; ++r) g = mbk_spatial_vec_add(g, mbk_spatial_vec_scale(PH[r], Dinv[r * nu + j]));
        G[j] = g;
    }
#endif
    if (!Pplus) return 0;
    /* one term g_j PH_j^T is not symmetric but their sum is: the upper
       triangle accumulated term by term is all the symmetric storage needs */
    *Pplus = *P;
    for (int j = 0; j < nu; ++j) mt_inertia_downdate(Pplus, Pplus, &G[j], &PH[j]);
    return 0;
}

/* The same for one u, the common case: D is a scalar; gives 1/D and P H. */
static int abi_one_dof(const mt_inertia *P, const mbk_spatial_vec *h, double *Dinv, mbk_spatial_vec *PH)
{
    *PH = mt_inertia_mul(P, h);
    double D = mbk_spatial_vec_dot(*h, *PH);
    if (!(D > pivot_tolerance(P, h, 1))) return -1;
    Dinv[0] = 1.0 / D;
    return 0;
}

/* The same for a spin, H = (a, 0): P H = (A a, B^T a) and D = a . A a. */
static int abi_spin(const mt_inertia *P, const mbk_spatial_vec *h, double *Dinv, mbk_spatial_vec *PH)
{
    mbk_vec3 a = h->w;
    const double(*B)[3] = P->B.m;
    PH->w = mt_sym3_mul(&P->A, a);
    PH->v = mbk_vec3_make(B[0][0] * a.x + B[1][0] * a.y + B[2][0] * a.z,
                          B[0][1] * a.x + B[1][1] * a.y + B[2][1] * a.z,
                          B[0][2] * a.x + B[1][2] * a.y + B[2][2] * a.z);
    double D = mbk_vec3_dot(a, PH->w);
    if (!(D > pivot_tolerance(P, h, 1))) return -1;
    Dinv[0] = 1.0 / D;
    return 0;
}

/* A one-dof body's G and its share of its parent's articulated inertia Pp (NULL on
   Ground), in abi_one_dof_v4's order: X PH is the force P H taken to the parent's
   origin, G = X PH / D is stored there, and P+ taken there is shift(P) - G (X PH)^T,
   so Pp becomes (Pp + shift(P)) - G (X PH)^T. */
static void abi_one_dof_pass(const mt_inertia *P, mbk_spatial_vec PH, double Dinv, mbk_vec3 r_PB,
                             mbk_spatial_vec *G, mt_inertia *Pp)
{
    const mbk_spatial_vec XPH = mbk_spatial_shift_force(PH, mbk_vec3_neg(r_PB));
    *G = mbk_spatial_vec_scale(XPH, Dinv);
    if (!Pp) return;
    mt_inertia_add_shifted(Pp, P, r_PB);
    mt_inertia_downdate(Pp, Pp, G, &XPH);
}

/* Whether every entry of an articulated inertia is finite. */
static bool sym3_finite(const mt_sym3 *a)
{
    return isfinite(a->xx) && isfinite(a->yy) && isfinite(a->zz) && isfinite(a->xy) && isfinite(a->xz) &&
           isfinite(a->yz);
}

static bool inertia_finite(const mt_inertia *P)
{
    return sym3_finite(&P->A) && sym3_finite(&P->D) && mbk_mat33_is_finite(P->B);
}

#ifdef MT_V4
/* One-dof body i's step on vectors (abi_one_dof or abi_spin), reordered so that little
   waits for 1/D: P+ taken to the parent's origin is shift(P) - G' (X PH)^T with X PH
   the force P H shifted there and G' = X PH / D the stored G, so shift(P) and X PH are
   formed alongside the division and the parent gets (P_parent + shift(P)) - G' (X PH)^T.
   P is *carry when carried (the previous step's sum for its parent i), else memory;
   the parent's sum is stored and left in *carry. -1 as abi_one_dof. */
static inline int abi_one_dof_v4(mt_abi *abi, const mt_node *b, int i, const mbk_spatial_vec *h,
                                 const mt_pos *pos, mt_ichunks *carry, bool carried)
{
    const mt_inertia *P = &abi->P[i];
    const mt_ichunks k = carried ? *carry : ichunks_load(P);
    const mt_icols c = icols_of(&k);
    const mt_sv4 hv = sv4_load(h);
    mt_sv4 PH;
    double D;
    if (b->spin) { /* H = (a, 0): P H = (A a, B^T a) and D = a . A a (abi_spin) */
        PH.w = sym3_cols_mul(c.A, hv.w);
        PH.v = c.Br[0] * v4_lane(hv.w, 0) + c.Br[1] * v4_lane(hv.w, 1) + c.Br[2] * v4_lane(hv.w, 2);
        D = v4_dot(hv.w, PH.w);
    } else {
        PH = icols_mul(&c, hv);
        D = v4_dot(hv.w, PH.w) + v4_dot(hv.v, PH.v);
    }
    const mt_v4 r = v4_load(&pos->r_PB.x), nr = -r; /* lane 3: I_G.xx (mt_pos) */
    const mt_sv4 XPH = {PH.w - v4_cross(nr, PH.v), PH.v};
    if (!(D > pivot_tolerance(P, h, 1))) return -1;
    const double Dinv = 1.0 / D;
    abi->Dinv[b->d0] = Dinv;
    const mt_sv4 G = sv4_scale(XPH, Dinv);
    sv4_store(&abi->G[b->u0], G);
    if (b->parent == 0) return 0; /* Ground's articulated inertia is never used */
    const mt_ichunks S = icols_shifted(&c, r), Pp = ichunks_load(&abi->P[b->parent]);
    *carry = ichunks_add_downdate(&Pp, &S, G, XPH);
    ichunks_store(&abi->P[b->parent], carry);
    return 0;
}
#endif

/* Why body i's D could not be inverted: overflow or a singularity. */
static int abi_error(const mt_inertia *P, int i)
{
    if (!inertia_finite(P)) /* not a singularity: the numbers overflowed */
        return mbk_set_error(MBK_ENOTFINITE, "body %d: its articulated inertia overflowed (is not finite): "
                             "the masses, inertias or distances (q, frame offsets) of the bodies it carries "
                             "are too large for double precision; keep mass and inertia below %g "
                             "(MBK_MASS_PROPS_MAX) and distances moderate, e.g. with larger units", i,
                             MBK_MASS_PROPS_MAX);
    return mbk_set_error(MBK_ESINGULAR, "body %d: articulated inertia is singular along its "
                         "mobilities; give massless bodies a massive child or add mass", i);
}

/* Articulated-body inertias, tip to base; computed once per Position realization. */
int mt_realize_abi(const mbk_matter *m, const mbk_state *s)
{
    if (mbk_state_is_cache_realized(s, m->sub, m->cache[C_ABI])) return MBK_OK;
    const mt_pos *pos = mt_cache(m, s, C_POS);
    const mbk_spatial_vec *H = mt_cache(m, s, C_H);
    mt_abi abi = mt_abi_of(m, s);
    const double *pm = mt_pos_mass(m, pos);
    const bool own_mass = pm[0] != 0.0;
    for (int i = 1; i < m->nb; ++i)
        mt_inertia_set_rigid(&abi.P[i], &pos[i].I_G, own_mass ? pm[i] : m->nodes[i].mass, pos[i].c_G);
#ifdef MT_V4
    mt_ichunks carry; /* the articulated inertia of body carried_to, also in memory */
    int carried_to = -1;
#endif
    for (int i = m->nb - 1; i >= 1; --i) {
        const mt_node *b = &m->nodes[i];
        mt_inertia Pplus;
#ifdef MT_V4
        if (b->nu == 1) {
            if (abi_one_dof_v4(&abi, b, i, &H[b->u0], &pos[i], &carry, carried_to == i) < 0)
                return abi_error(&abi.P[i], i);
            carried_to = b->parent;
            continue;
        }
        carried_to = -1; /* the step below adds to its parent in memory only */
#endif
        double *Dinv = abi.Dinv + b->d0;
        mbk_spatial_vec *G = abi.G + b->u0;
        if (b->nu == 1) { /* a spin is one-dof too */
            mbk_spatial_vec PH;
            int rc = b->spin ? abi_spin(&abi.P[i], &H[b->u0], Dinv, &PH) : abi_one_dof(&abi.P[i], &H[b->u0], Dinv, &PH);
            if (rc < 0) return abi_error(&abi.P[i], i);
            abi_one_dof_pass(&abi.P[i], PH, Dinv[0], pos[i].r_PB, G, b->parent ? &abi.P[b->parent] : NULL);
            continue;
        }
        if (abi_general(&abi.P[i], H + b->u0, b->nu, Dinv, G, b->parent ? &Pplus : NULL) < 0)
            return abi_error(&abi.P[i], i);
        for (int j = 0; j < b->nu; ++j) G[j] = mbk_spatial_shift_force(G[j], mbk_vec3_neg(pos[i].r_PB));
        if (b->parent == 0) continue; /* Ground's articulated inertia is never used */
        mt_inertia_add_shifted(&abi.P[b->parent], &Pplus, pos[i].r_PB);
    }
    mbk_state_mark_cache_realized(s, m->sub, m->cache[C_ABI]);
    return MBK_OK;
}

/* Forces accumulate during Dynamics: matter (first) zeroes them. The articulated-body
   inertias are not computed here: they are a lazy cache entry, paid by Acceleration,
   M^-1 v and whoever else needs them, so that inverse dynamics (which needs only the
   forces) does not pay for them (as in Simbody). */
int mt_realize_dynamics(void *impl, const mbk_subsystem_ctx *c, mbk_state *s)
{
    (void)c;
    const mbk_matter *m = impl;
    memset(mt_cache(m, s, C_FORCES), 0, forces_bytes(m));
    return 0;
}

#ifdef MT_V4
/* Tip to base on vectors: the articulated bias forces, the scalar sweep's sums in its
   order (the same bits); udot holds eps = tau - H^T z meanwhile. */
static void aba_bias_v4(const mbk_matter *m, const mt_pos *pos, const mt_vel *vel, const mbk_spatial_vec *H,
                        const mt_abi *abi, const double *tau, const mbk_spatial_vec *F, mbk_spatial_vec *z,
                        double *udot)
{
    const mt_sv4 zero = {{0.0, 0.0, 0.0, 0.0}, {0.0, 0.0, 0.0, 0.0}};
    mt_sv4 carry = zero; /* z passed to body i - 1 */
    for (int i = m->nb - 1; i >= 1; --i) {
        const mt_node *b = &m->nodes[i];
        const mbk_spatial_vec *Hb = H + b->u0, *Gb = abi->G + b->u0;
        mt_sv4 zi = b->fed ? sv4_add(sv4_load(&z[i]), carry) : carry;
        if (vel) {
            const mt_ichunks k = ichunks_load(&abi->P[i]);
            const mt_icols c = icols_of(&k);
            zi = sv4_add(zi, sv4_add(icols_mul(&c, sv4_load(&vel[i].a_c)), sv4_load(&vel[i].b)));
        }
        if (F) zi = sv4_sub(zi, sv4_load(&F[i]));
        const mt_v4 nr = -v4_load(&pos[i].r_PB.x); /* lane 3: I_G.xx (mt_pos) */
        mt_sv4 zp = {zi.w - v4_cross(nr, zi.v), zi.v};
        if (b->spin) { /* H = (a, 0): H^T z is a . z_w */
            const double eps = (tau ? tau[b->u0] : 0.0) - v4_dot(v4_load(&Hb[0].w.x), zi.w);
            udot[b->u0] = eps;
            zp = sv4_add(zp, sv4_scale(sv4_load(&Gb[0]), eps));
        } else for (int j = 0; j < b->nu; ++j) { /* H^T G = 1: each eps from the same zi */
            const mt_sv4 h = sv4_load(&Hb[j]);
            const double eps = (tau ? tau[b->u0 + j] : 0.0) - (v4_dot(h.w, zi.w) + v4_dot(h.v, zi.v));
            udot[b->u0 + j] = eps;
            zp = sv4_add(zp, sv4_scale(sv4_load(&Gb[j]), eps));
        }
        if (b->parent == i - 1) {
            carry = zp;
        } else {
            if (b->parent > 0) sv4_store(&z[b->parent], sv4_add(sv4_load(&z[b->parent]), zp)); /* Ground's is unused */
            carry = zero;
        }
    }
}

/* Base to tip on vectors: the accelerations, the scalar sweep's sums in its order. */
static void aba_accel_v4(const mbk_matter *m, const mt_pos *pos, const mt_vel *vel, const mbk_spatial_vec *H,
                         const mt_abi *abi, mbk_spatial_vec *A, double *udot)
{
    const mt_sv4 zero = {{0.0, 0.0, 0.0, 0.0}, {0.0, 0.0, 0.0, 0.0}};
    A[0] = mbk_spatial_vec_zero();
    mt_sv4 Aprev = zero; /* A of body i - 1 */
    for (int i = 1; i < m->nb; ++i) {
        const mt_node *b = &m->nodes[i];
        const mbk_spatial_vec *Hb = H + b->u0, *Gb = abi->G + b->u0;
        const double *Dinv = abi->Dinv + b->d0;
        double *ud = udot + b->u0;
        const mt_sv4 A_P = b->parent == i - 1 ? Aprev : sv4_load(&A[b->parent]);
        mt_sv4 Ai = {A_P.w, A_P.v + v4_cross(A_P.w, v4_load(&pos[i].r_PB.x))};
        if (vel) Ai = sv4_add(Ai, sv4_load(&vel[i].a_c));
        if (b->nu == 1) {
            const mt_sv4 g = sv4_load(&Gb[0]);
            ud[0] = Dinv[0] * ud[0] - (v4_dot(g.w, A_P.w) + v4_dot(g.v, A_P.v));
            if (b->spin) Ai.w = Ai.w + v4_load(&Hb[0].w.x) * ud[0];
            else Ai = sv4_add(Ai, sv4_scale(sv4_load(&Hb[0]), ud[0]));
        } else {
            double e[MBK_MOBILIZER_MAX_U];
            for (int j = 0; j < b->nu; ++j) e[j] = ud[j];
            for (int r = 0; r < b->nu; ++r) {
                const mt_sv4 g = sv4_load(&Gb[r]);
                double x = -(v4_dot(g.w, A_P.w) + v4_dot(g.v, A_P.v));
                for (int j = 0; j < b->nu; ++j) x += Dinv[r * b->nu + j] * e[j];
                ud[r] = x;
                Ai = sv4_add(Ai, sv4_scale(sv4_load(&Hb[r]), x));
            }
        }
        sv4_store(&A[i], Ai);
        Aprev = Ai;
    }
}
#endif

/* The articulated-body sweeps: udot from mobility forces tau, body forces F
   and (when with_velocity) the velocity terms. A and z are scratch arrays.
   G is stored shifted to the parent's origin, so G^T X A_P needs no shift of
   A_P first; and along unbranched runs (parent = previous body) the value
   passed between bodies stays in registers. Both shorten the dependency chain
   from body to body, which is what bounds these sweeps on long chains. */
void mt_aba_solve(const mbk_matter *m, const mbk_state *s, const double *tau,
                      const mbk_spatial_vec *F, bool with_velocity, mbk_spatial_vec *A,
                      mbk_spatial_vec *z, double *udot)
{
    const mt_pos *pos = mt_cache(m, s, C_POS);
    const mt_vel *vel = with_velocity ? mt_cache(m, s, C_VEL) : NULL;
    const mbk_spatial_vec *H = mt_cache(m, s, C_H);
    const mt_abi abi = mt_abi_of(m, s);
    /* only bodies fed through memory need a zero start; along runs z travels in registers */
    for (int k = 0; k < m->nfed; ++k) z[m->fed[k]] = mbk_spatial_vec_zero();
#ifdef MT_V4
    aba_bias_v4(m, pos, vel, H, &abi, tau, F, z, udot);
    aba_accel_v4(m, pos, vel, H, &abi, A, udot);
#else
    /* tip to base: articulated bias forces; udot holds eps = tau - H^T z meanwhile */
    mbk_spatial_vec carry = mbk_spatial_vec_zero(); /* z passed to body i - 1 */
    for (int i = m->nb - 1; i >= 1; --i) {
        const mt_node *b = &m->nodes[i];
        const mbk_spatial_vec *Hb = H + b->u0, *Gb = abi.G + b->u0;
        mbk_spatial_vec zi = b->fed ? mbk_spatial_vec_add(z[i], carry) : carry;
        if (vel) zi = mbk_spatial_vec_add(zi, mbk_spatial_vec_add(mt_inertia_mul(&abi.P[i], &vel[i].a_c), vel[i].b));
        if (F) zi = mbk_spatial_vec_sub(zi, F[i]);
        mbk_spatial_vec zp = mbk_spatial_shift_force(zi, mbk_vec3_neg(pos[i].r_PB));
        if (b->spin) { /* H = (a, 0): H^T z is a . z_w */
            double eps = (tau ? tau[b->u0] : 0.0) - mbk_vec3_dot(Hb[0].w, zi.w);
            udot[b->u0] = eps;
            zp = mbk_spatial_vec_add(zp, mbk_spatial_vec_scale(Gb[0], eps));
        } else for (int j = 0; j < b->nu; ++j) { /* H^T G = 1: each eps from the same zi */
            double eps = (tau ? tau[b->u0 + j] : 0.0) - mbk_spatial_vec_dot(Hb[j], zi);
            udot[b->u0 + j] = eps;
            zp = mbk_spatial_vec_add(zp, mbk_spatial_vec_scale(Gb[j], eps));
        }
        if (b->parent == i - 1) {
            carry = zp;
        } else {
            if (b->parent > 0) z[b->parent] = mbk_spatial_vec_add(z[b->parent], zp); /* Ground's is unused */
            carry = mbk_spatial_vec_zero();
        }
    }
    /* base to tip: accelerations */
    A[0] = mbk_spatial_vec_zero();
    mbk_spatial_vec Aprev = A[0]; /* A of body i - 1 */
    for (int i = 1; i < m->nb; ++i) {
        const mt_node *b = &m->nodes[i];
        const mbk_spatial_vec *Hb = H + b->u0, *Gb = abi.G + b->u0;
        const double *Dinv = abi.Dinv + b->d0;
        double *ud = udot + b->u0;
        const mbk_spatial_vec A_P = b->parent == i - 1 ? Aprev : A[b->parent];
        mbk_spatial_vec Ai = mbk_spatial_shift_motion(A_P, pos[i].r_PB);
        if (vel) Ai = mbk_spatial_vec_add(Ai, vel[i].a_c);
        if (b->nu == 1) {
            ud[0] = Dinv[0] * ud[0] - mbk_spatial_vec_dot(Gb[0], A_P);
            if (b->spin) Ai.w = mbk_vec3_add(Ai.w, mbk_vec3_scale(Hb[0].w, ud[0]));
            else Ai = mbk_spatial_vec_add(Ai, mbk_spatial_vec_scale(Hb[0], ud[0]));
        } else {
            double e[MBK_MOBILIZER_MAX_U];
            for (int j = 0; j < b->nu; ++j) e[j] = ud[j];
            for (int r = 0; r < b->nu; ++r) {
                double x = -mbk_spatial_vec_dot(Gb[r], A_P);
                for (int j = 0; j < b->nu; ++j) x += Dinv[r * b->nu + j] * e[j];
                ud[r] = x;
                Ai = mbk_spatial_vec_add(Ai, mbk_spatial_vec_scale(Hb[r], x));
            }
        }
        A[i] = Aprev = Ai;
    }
#endif
}

/* udot[k] is NaN or infinite although the forces were finite (they are checked at
   Dynamics): say where, and what usually causes it. */
static int nonfinite_udot(const mbk_matter *m, const mbk_state *s, const double *udot, int k)
{
    int b = 1;
    while (b + 1 < m->nb && m->bodies[b + 1].u0 <= k) ++b;
    return mbk_set_error(MBK_ENOTFINITE, "matter: udot[%d] (body %d, mobility %d) is %g at t = %g; the "
                         "applied forces are finite, so look for a near-singular mass matrix (tiny masses or "
                         "inertias on a moving body), extreme q or u, or a custom mobilizer or constraint "
                         "producing NaN", k, b, k - m->bodies[b].u0, udot[k], mbk_state_get_time(s));
}

int mt_realize_acceleration(void *impl, const mbk_subsystem_ctx *c, mbk_state *s)
{
    (void)c;
    const mbk_matter *m = impl;
    mbk_spatial_vec *F = mt_cache(m, s, C_FORCES);
    const double *tau = mt_mobility_forces(F, m->nb);
    mbk_spatial_vec *A = mt_cache(m, s, C_ACC), *z = A + m->nb;
    double *udot = st_sub_ydot(s, m->sub, 1);
    int rc = mt_realize_abi(m, s);
    if (rc < 0) return rc;
    mt_aba_solve(m, s, tau, F, true, A, z, udot);
    if (m->con_hooks && (rc = m->con_hooks->solve(m, s, udot, A)) < 0) return rc;
    int k = mbk_find_nonfinite(udot, m->nu);
    if (k >= 0) return nonfinite_udot(m, s, udot, k);
    /* qdotdot from udot through each mobilizer's N and NDot */
    const int *lay = qlayout(m, s);
    bool euler = layout_euler(m, lay);
    const double *qn = mt_cache(m, s, C_QN), *u = st_sub_y(s, m->sub, 1);
    double *qdd = st_sub_qdotdot(s, m->sub);
    for (int i = 1; i < m->nb; ++i) {
        const mt_node *b = &m->nodes[i];
        const mbk_mobilizer *mob = &m->bodies[i].mob;
        if (b->pin) qdd[lay[2 * i]] = udot[b->u0];
        else if (mob->ops->calc_qdotdot)
            mob->ops->calc_qdotdot(mob->impl, euler, qn + lay[2 * i], u + b->u0, udot + b->u0, qdd + lay[2 * i]);
        else copy_small(qdd + lay[2 * i], udot + b->u0, b->nu);
    }
    return 0;
}
