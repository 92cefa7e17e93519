/* Derivatives of the inverse dynamics, r = M udot + C(q, u) - J^T F, with
 * respect to q and u: sweeps beside the Newton-Euler recursion they
 * differentiate (mt_rnea), after Carpentier and Mansard, "Analytical
 * Derivatives of Rigid Body Dynamics Algorithms" (RSS 2018), generalized to
 * mobilizers whose H depends on q, whose q are not their u (quaternions) and
 * whose HDot is not zero. docs/derivatives.md has the derivation; in short:
 *
 * Everything is in Ground at Ground's origin (Pluecker coordinates): S_i the
 * columns of body i's H, v_i and a_i its velocity and acceleration (a_i with
 * the gravity field subtracted), Y_i its inertia, f_i = Y_i a_i + v_i x* Y_i v_i
 * and F_i the sum of f over i's subtree, so r_i = S_i^T F_i - (applied).
 *
 * Changing coordinate k of joint j moves j's subtree rigidly by the twist T
 * (X_FM's derivative in F, taken to Ground), changes j's own H by dS and its
 * velocity-product acceleration by dc. Every body i of the subtree then gets
 *     dv_i = T x v_i + w,   da_i = T x a_i + alpha + w x v_i,
 *     w = dS u_j - T x v_j,  alpha = dS udot_j + v_p x dS u_j + dc - T x a_j - w x v_j,
 * and d f_i = T x* f_i + Y_i alpha + B_i w with B_i w = Y_i (w x v_i) + w x* Y_i v_i
 * + v_i x* Y_i w. The T terms cancel against dS_i = T x S_i in every row of the
 * subtree but j's own, which leaves
 *     dr_i = S_i^T (Yc_i alpha + Bc_i w)               i below j,
 *     dr_j = S_j^T g + dS^T F_j,  dr_a = S_a^T g         a above j,
 *     g = T x* F_j + Yc_j alpha + Bc_j w,
 * with Yc, Bc the subtree sums. A u column is the same with T = 0, dS = 0,
 * w = S_jl and alpha = v_p x S_jl + dc/du_l - S_jl x v_j. Each column costs a
 * dot product per row of j's subtree and ancestors: O(n depth) in all. */
#include <math.h>
#include <stdint.h>
#include <string.h>

#include "mbk/derivatives.h"
#include "mbk/status.h"
#include "matter_impl.h"
#include "mt_v4.h"

/* The hot functions start on a 64-byte boundary: their loops then sit the same way in
   every build, whatever code comes before them (a different placement was seen to double
   the time of factor_block's short loops). */
#if defined(__GNUC__)
#define MT_HOT __attribute__((aligned(64)))
#else
#define MT_HOT
#endif

/* GCC's and Clang's vector extension for the sweep's rows and the solve, unless built
   with MBK_NO_VECTOR_EXTENSION (then plain loops: the same results, up to the sign of
   zeros). */
#if defined(__GNUC__) && !defined(MBK_NO_VECTOR_EXTENSION)
#define MT_VEC8 1
#else
#define MT_VEC8 0
#endif

#if MT_VEC8
/* Eight doubles as one vector (GCC's and Clang's vector extension: one 512-bit register
   where the target has them, narrower ones otherwise), for the sweep's rows and the
   solve: compilers keep a few of these in registers where they would not keep as many
   scalars. mvec8: a lane mask of the same size (all bits or none). */
typedef double dvec8 __attribute__((vector_size(64)));
typedef long long mvec8 __attribute__((vector_size(64)));
/* Only this file's static functions pass or return them, so no ABI crosses the file: GCC's
   warning that such vectors are passed differently with and without AVX-512 (in portable
   and sanitizer builds) does not apply. */
#ifndef __clang__
#pragma GCC diagnostic ignored "-Wpsabi"
#endif
#else
typedef double dvec8; /* without the extension: one double, one column at a time */
#endif

/* Columns a group takes in the articulated-body solve (aba_columns): the lanes of one
   vector; groups it takes at once (8: chain1000 6.0 -> 4.2 ms against 1, 4.8 with 4,
   4.4 with 16). */
enum { LANES = sizeof(dvec8) / sizeof(double), ABA_GROUPS = 8 };

/* A spatial vector of LANES columns: each component the columns' values. */
typedef struct mt_sv8 {
    dvec8 w[3], v[3];
} mt_sv8;

/* ---- work space ----------------------------------------------------------- */

/* What a setup leaves for the sweeps. */
typedef struct mt_dhdr {
    int with_velocity, numeric, has_phi;
} mt_dhdr;

static size_t round64(size_t n) { return (n + 63) & ~(size_t)63; }
static size_t round8(size_t n) { return (n + 7) & ~(size_t)7; }

/* Columns of the right-hand side that M^-1 takes at once (mt_deriv_solve), at most. */
enum { SOLVE_W = 96 };

/* The width of the work space's block of every row (a multiple of 8): all nqmax + nu
   columns when they are at most SOLVE_W, else the 20 at most left over around whole
   groups of eight (3 before and 7 after, of each array: see mt_deriv_solve). */
static int block_width(const mbk_matter *m)
{
    const int n = m->nqmax + m->nu;
    return n <= SOLVE_W ? (n + 7) / 8 * 8 : 24;
}
/* Bytes of the right-hand side a row of the solve may draw on (in the first level of cache). */
enum { SOLVE_L1 = 40960 };

/* Byte offsets of the sections (and the total): header, bodies, q columns, u
   columns, rows, dS, a shared region, the sparse factor and the solve's block. The
   shared region holds either the sweep's column arrays (qs, us: alive only inside
   mt_deriv_sweep) or the scratch spatial vectors and vectors (sp, vec: used before
   the sweep by the numeric pieces and after it by the solve), never both at once.
   Without the sparse factor, its place holds the articulated-body solve's z and A
   of the fed bodies for ABA_GROUPS groups of columns (aba_columns). */
static size_t dws_layout(const mbk_matter *m, size_t off[10], int *vlen)
{
    size_t nb = (size_t)m->nb, nu = (size_t)m->nu + 1, nq = (size_t)m->nqmax + 1;
    *vlen = m->nqmax + m->nu + 1;
    const size_t scratch = round64(2 * nb * sizeof(mbk_spatial_vec)) + MT_DWS_NVEC * (size_t)*vlen * sizeof(double);
    const size_t columns = round64(MT_QS * round8((size_t)m->nqmax) * sizeof(double)) +
                           MT_US * round8((size_t)m->nu) * sizeof(double);
    const size_t sizes[9] = {sizeof(mt_dhdr), nb * sizeof(mt_dbody), nq * sizeof(mt_dcol), nu * sizeof(mt_ducol),
                             nu * sizeof(mt_drow), ((size_t)m->nds + 1) * sizeof(mbk_spatial_vec),
                             scratch > columns ? scratch : columns,
                             m->ltdl ? (2 * (size_t)m->nl + nu) * sizeof(double)
                                     : 2 * (size_t)m->nfed * ABA_GROUPS * sizeof(mt_sv8),
                             m->ltdl ? ((size_t)m->nu * (size_t)block_width(m) + 8) * sizeof(double) : 0};
    size_t o = 0;
    for (int i = 0; i < 9; ++i) {
        off[i] = o;
        o += round64(sizes[i]);
    }
    off[9] = o;
    return o;
}

size_t mt_dws_bytes(mbk_matter *m)
{
    return dws_layout(m, m->dws_off, &m->dws_vlen);
}

/* The sparse factor's storage: D (nu), then L's rows, then L by columns; *block: the
   solve's block of nu rows of block_width (64-byte aligned). */
static double *dws_factor(const mbk_matter *m, const mbk_state *s, double **block)
{
    char *b = mt_cache(m, s, C_SCRATCH_MAT);
    *block = (double *)(b + m->dws_off[8]);
    return (double *)(b + m->dws_off[7]);
}

/* Without the sparse factor, its place: the articulated-body solve's z of the fed bodies
   (ABA_GROUPS each), then their A. */
static mt_sv8 *dws_aba(const mbk_matter *m, const mbk_state *s)
{
    return (mt_sv8 *)((char *)mt_cache(m, s, C_SCRATCH_MAT) + m->dws_off[7]);
}

static mt_dhdr *dws_header(const mbk_matter *m, const mbk_state *s) { return mt_cache(m, s, C_SCRATCH_MAT); }

mt_dws mt_dws_of(const mbk_matter *m, const mbk_state *s)
{
    const size_t *off = m->dws_off;
    mt_dws w;
    w.vlen = m->dws_vlen;
    char *b = mt_cache(m, s, C_SCRATCH_MAT);
    w.body = (mt_dbody *)(b + off[1]);
    w.qcol = (mt_dcol *)(b + off[2]);
    w.ucol = (mt_ducol *)(b + off[3]);
    w.row = (mt_drow *)(b + off[4]);
    w.dS = (mbk_spatial_vec *)(b + off[5]);

    /* the shared region: sp and vec, or qs and us */
    w.sp = (mbk_spatial_vec *)(b + off[6]);
    w.vec = (double *)(b + off[6] + round64(2 * (size_t)m->nb * sizeof(mbk_spatial_vec)));
    w.qs = (double *)(b + off[6]);
    w.us = (double *)(b + off[6] + round64(MT_QS * round8((size_t)m->nqmax) * sizeof(double)));
    const mt_dhdr *h = (const mt_dhdr *)b;
    w.numeric = h->numeric;
    w.with_velocity = h->with_velocity != 0;
    return w;
}

/* ---- small spatial helpers ------------------------------------------------ */

/* A motion given in F at F's origin, in Ground at Ground's origin. */
static inline mbk_spatial_vec from_F(const mbk_mat33 *R, mbk_vec3 p_F, mbk_spatial_vec V)
{
    mbk_vec3 w = mbk_mat33_mul_vec(*R, V.w);
    return mbk_spatial_vec_make(w, mbk_vec3_sub(mbk_mat33_mul_vec(*R, V.v), mbk_vec3_cross(w, p_F)));
}

/* A motion at point p (in G) taken to Ground's origin. */
static inline mbk_spatial_vec motion_at_origin(mbk_spatial_vec V, mbk_vec3 p)
{
    return mbk_spatial_vec_make(V.w, mbk_vec3_sub(V.v, mbk_vec3_cross(V.w, p)));
}

/* M x for a 6 x 6 row-major M and a spatial vector x. */
static inline mbk_spatial_vec mat6_mul(const double M[6][6], mbk_spatial_vec x)
{
    const double v[6] = {x.w.x, x.w.y, x.w.z, x.v.x, x.v.y, x.v.z};
    double r[6];
    for (int i = 0; i < 6; ++i)
        r[i] = M[i][0] * v[0] + M[i][1] * v[1] + M[i][2] * v[2] + M[i][3] * v[3] + M[i][4] * v[4] + M[i][5] * v[5];
    return mbk_spatial_vec_make(mbk_vec3_make(r[0], r[1], r[2]), mbk_vec3_make(r[3], r[4], r[5]));
}

/* Whether the n doubles at a are all zero (either sign), without a branch per value:
   columns that need no work. */
static inline bool all_zero(const double *a, int n)
{
    uint64_t bits = 0;
    for (int k = 0; k < n; ++k) {
        uint64_t t;
        memcpy(&t, a + k, sizeof t);
        bits |= t << 1;
    }
    return bits == 0;
}

static inline bool vec3_zero(mbk_vec3 v) { return all_zero(&v.x, 3); }
static inline bool spatial_zero(const mbk_spatial_vec *v) { return all_zero(&v->w.x, 6); }

/* The axis of the rotation dR R^T (its skew part; exact for a rotation's derivative). */
static inline mbk_vec3 vee_dR(const mbk_mat33 *dR, const mbk_mat33 *R)
{
    mbk_mat33 A = mbk_mat33_mul_transpose(*dR, *R);
    return mbk_vec3_make(0.5 * (A.m[2][1] - A.m[1][2]), 0.5 * (A.m[0][2] - A.m[2][0]), 0.5 * (A.m[1][0] - A.m[0][1]));
}

#ifndef MT_V4 /* (mt_v4.h: body_forces has its own) */
/* The symmetric part of one body's B (see mt_dbody): with v = (w, n), Y = (m, h, I),
   B w' = Y (w' x v) + w' x* Y v + v x* Y w' works out to
   [[[w x] I - I [w x] - ([h x][n x] + [n x][h x]) - [hn x], 0], [-2 [hf x], 0]],
   and [w x] I - I [w x] = M + M^T with M = [w x] I, [h x][n x] + [n x][h x] =
   h n^T + n h^T - 2 (h . n) 1. */
static void add_Bs(mt_sym3 *Bs, const mt_composite *Y, mbk_spatial_vec v)
{
    const mbk_vec3 w = v.w, n = v.v, h = Y->h;
    const mt_sym3 *I = &Y->I;
    const mbk_mat33 M = {{{w.y * I->xz - w.z * I->xy, w.y * I->yz - w.z * I->yy, w.y * I->zz - w.z * I->yz},
                          {w.z * I->xx - w.x * I->xz, w.z * I->xy - w.x * I->yz, w.z * I->xz - w.x * I->zz},
                          {w.x * I->xy - w.y * I->xx, w.x * I->yy - w.y * I->xy, w.x * I->yz - w.y * I->xz}}};
    const double hn = 2.0 * mbk_vec3_dot(h, n);
    Bs->xx += 2.0 * M.m[0][0] - 2.0 * h.x * n.x + hn;
    Bs->yy += 2.0 * M.m[1][1] - 2.0 * h.y * n.y + hn;
    Bs->zz += 2.0 * M.m[2][2] - 2.0 * h.z * n.z + hn;
    Bs->xy += M.m[0][1] + M.m[1][0] - h.x * n.y - n.x * h.y;
    Bs->xz += M.m[0][2] + M.m[2][0] - h.x * n.z - n.x * h.z;
    Bs->yz += M.m[1][2] + M.m[2][1] - h.y * n.z - n.y * h.z;
}
#endif

/* Bc w for a subtree: (Bs a + a x hn, 2 a x hf) with a = w's angular part. */
static inline mbk_spatial_vec Bc_mul(const mt_dbody *d, mbk_spatial_vec w)
{
    return mbk_spatial_vec_make(mbk_vec3_add(mt_sym3_mul(&d->Bs, w.w), mbk_vec3_cross(w.w, d->hc.w)),
                                mbk_vec3_scale(mbk_vec3_cross(w.w, d->hc.v), 2.0));
}

/* The angular part of Bc^T x (its linear part is zero): Bs x1 + hn x x1 + 2 hf x x2. */
static inline mbk_vec3 Bc_tmul(const mt_dbody *d, mbk_spatial_vec x)
{
    return mbk_vec3_add(mbk_vec3_add(mt_sym3_mul(&d->Bs, x.w), mbk_vec3_cross(d->hc.w, x.w)),
                        mbk_vec3_scale(mbk_vec3_cross(d->hc.v, x.v), 2.0));
}

static inline void sym3_add(mt_sym3 *a, const mt_sym3 *b)
{
    a->xx += b->xx; a->yy += b->yy; a->zz += b->zz;
    a->xy += b->xy; a->xz += b->xz; a->yz += b->yz;
}

/* Pc += P (both about Ground's origin). */
static inline void composite_add(mt_composite *Pc, const mt_composite *P)
{
    Pc->m += P->m;
    Pc->h = mbk_vec3_add(Pc->h, P->h);
    Pc->I.xx += P->I.xx; Pc->I.yy += P->I.yy; Pc->I.zz += P->I.zz;
    Pc->I.xy += P->I.xy; Pc->I.xz += P->I.xz; Pc->I.yz += P->I.yz;
}

/* ---- setup ----------------------------------------------------------------- */

/* One joint's columns in Ground from its mobilizer's derivatives (not a Pin):
   per q, T, dS (per u) and, in the w and alpha slots, the joint's own parts
   dS u and dS udot + v_p x dS u + dc (finished by finish_columns); per u, dc/du
   added to alpha. Returns c, the joint's velocity-product acceleration at
   Ground's origin (zero without velocities). */
static int joint_columns(const mbk_matter *m, const mbk_state *s, int i, const mt_dws *ws, const mbk_transform *X_GF,
                         const double *qraw, const double *qn, int nq, const double *u, const double *udot,
                         mbk_spatial_vec v_p, bool euler, mbk_spatial_vec *c_out, int *numeric)
{
    const mt_body *b = &m->bodies[i];
    const mbk_mobilizer_ops *o = b->mob.ops;
    const int nu = b->nu, q0 = qlayout(m, s)[2 * i];
    const mbk_mat33 *R = &X_GF->R;
    const mbk_vec3 pF = X_GF->p;
    mbk_mobilizer_derivatives d;
    int rc = mbk_mobilizer_calc_derivatives(&b->mob, euler, qraw, u, &d);
    if (rc < 0) return mbk_set_error(rc, "body %d: %s", i, mbk_last_error());
    *numeric += d.numeric != 0;
    mbk_transform X;
    mbk_spatial_vec H[MBK_MOBILIZER_MAX_U], hd = mbk_spatial_vec_zero();
    o->calc_X_FM(b->mob.impl, euler, qn, &X);
    if (nu) o->calc_H_FM(b->mob.impl, euler, qn, H);
    if (o->calc_Hdot_u && nu) o->calc_Hdot_u(b->mob.impl, euler, qn, u, &hd);
    const mbk_vec3 p = X.p;
    /* V_FM at M's origin */
    mbk_vec3 wFM = mbk_vec3_zero(), vFM = mbk_vec3_zero();
    for (int l = 0; l < nu; ++l) {
        wFM = mbk_vec3_add(wFM, mbk_vec3_scale(H[l].w, u[l]));
        vFM = mbk_vec3_add(vFM, mbk_vec3_scale(H[l].v, u[l]));
    }
    /* c in F at F's origin: d/dt (H at F's origin) u */
    mbk_spatial_vec cF = mbk_spatial_vec_make(
        hd.w, mbk_vec3_sub(mbk_vec3_sub(hd.v, mbk_vec3_cross(hd.w, p)), mbk_vec3_cross(wFM, vFM)));
    *c_out = ws->with_velocity ? from_F(R, pF, cF) : mbk_spatial_vec_zero();
    mbk_spatial_vec *dS = ws->dS + b->ds0;
    for (int k = 0; k < nq; ++k) {
        mbk_vec3 om = vee_dR(&d.dR[k], &X.R);
        mt_dcol *col = &ws->qcol[q0 + k];
        col->T = from_F(R, pF, mbk_spatial_vec_make(om, mbk_vec3_sub(d.dp[k], mbk_vec3_cross(om, p))));
        mbk_vec3 dwFM = mbk_vec3_zero(), dvFM = mbk_vec3_zero();
        mbk_spatial_vec dv = mbk_spatial_vec_zero(), dsud = mbk_spatial_vec_zero();
        /* dS = 0 where H does not change with q_k and M's origin does not move (or the
           column does not turn) */
        const bool moves = !vec3_zero(d.dp[k]), dh = !all_zero(&d.dH[k][0].w.x, 6 * nu);
        for (int l = 0; l < nu; ++l) {
            const mbk_spatial_vec *g = &d.dH[k][l];
            if (!(moves || dh) || (!(dh && !spatial_zero(g)) && (!moves || vec3_zero(H[l].w)))) {
                dS[k * nu + l] = mbk_spatial_vec_zero();
                continue;
            }
            mbk_spatial_vec dHF = mbk_spatial_vec_make(
                g->w, mbk_vec3_sub(mbk_vec3_sub(g->v, mbk_vec3_cross(g->w, p)), mbk_vec3_cross(H[l].w, d.dp[k])));
            dS[k * nu + l] = from_F(R, pF, dHF);
            dv = mbk_spatial_vec_add(dv, mbk_spatial_vec_scale(dS[k * nu + l], u[l]));
            if (udot) dsud = mbk_spatial_vec_add(dsud, mbk_spatial_vec_scale(dS[k * nu + l], udot[l]));
            dwFM = mbk_vec3_add(dwFM, mbk_vec3_scale(g->w, u[l]));
            dvFM = mbk_vec3_add(dvFM, mbk_vec3_scale(g->v, u[l]));
        }
        if (!ws->with_velocity) {
            col->w = mbk_spatial_vec_zero();
            col->alpha = dsud;
            continue;
        }
        const mbk_spatial_vec *e = &d.dHdot_u_dq[k];
        col->w = dv;
        col->alpha = mbk_spatial_vec_add(dsud, mbk_spatial_cross_motion(v_p, dv));
        if (spatial_zero(e) && !dh && (!moves || vec3_zero(hd.w))) continue; /* dc = 0 */
        mbk_spatial_vec dcF = mbk_spatial_vec_make(
            e->w, mbk_vec3_sub(mbk_vec3_sub(mbk_vec3_sub(e->v, mbk_vec3_cross(e->w, p)), mbk_vec3_cross(hd.w, d.dp[k])),
                               mbk_vec3_add(mbk_vec3_cross(dwFM, vFM), mbk_vec3_cross(wFM, dvFM))));
        col->alpha = mbk_spatial_vec_add(col->alpha, from_F(R, pF, dcF));
    }
    if (!ws->with_velocity) return MBK_OK;
    for (int l = 0; l < nu; ++l) {
        const mbk_spatial_vec *e = &d.dHdot_u_du[l];
        mbk_spatial_vec dcF = mbk_spatial_vec_make(
            e->w, mbk_vec3_sub(mbk_vec3_sub(mbk_vec3_sub(e->v, mbk_vec3_cross(e->w, p)), mbk_vec3_cross(H[l].w, vFM)),
                               mbk_vec3_cross(wFM, H[l].v)));
        mt_ducol *col = &ws->ucol[b->u0 + l];
        col->alpha = mbk_spatial_vec_add(col->alpha, from_F(R, pF, dcF));
    }
    return MBK_OK;
}

#ifdef MT_V4
/* A Pin's velocity, acceleration and columns with vectors (mt_v4.h: the scalar code's
   products and sums in the same order); S from H and the body's origin; v and a also
   returned for body_forces. */
static void pin_body(const mt_dws *ws, int u0, int q0, const mbk_spatial_vec *H, const mbk_vec3 *pB, double u,
                     double udot, const mt_dbody *dp, mt_dbody *di, mt_sv4 *v_out, mt_sv4 *a_out)
{
    const bool vel = ws->with_velocity;
    const mt_sv4 h = sv4_load(H), zero = {{0, 0, 0, 0}, {0, 0, 0, 0}};
    const mt_sv4 S = {h.w, h.v - v4_cross(h.w, v4_load(&pB->x))}, vp = sv4_load(&dp->v);
    const mt_sv4 vS = vel ? sv4_cross_motion(vp, S) : zero;
    /* v_i = v_p + S u, a_i = a_p + S udot + (v_p x S) u */
    const mt_sv4 v = vel ? sv4_add(vp, sv4_scale(S, u)) : zero;
    const mt_sv4 a = sv4_add(sv4_add(sv4_load(&dp->a), sv4_scale(S, udot)), sv4_scale(vS, u));
    sv4_store(&di->v, v);
    sv4_store(&di->a, a);
    mt_ducol *uc = &ws->ucol[u0];
    mt_dcol *qc = &ws->qcol[q0];
    sv4_store(&uc->T, S);
    sv4_store(&qc->T, S);
    sv4_store(&uc->alpha, sv4_add(vS, vS));
    sv4_store(&qc->w, vS);
    /* alpha = -(S x a_i) - w x v_i */
    sv4_store(&qc->alpha, sv4_sub(sv4_scale(sv4_cross_motion(S, a), -1.0), sv4_cross_motion(vS, v)));
    *v_out = v;
    *a_out = a;
}

/* Lanes 0..2 into three doubles. */
static inline void v4_put3(double *d, mt_v4 a) { d[0] = a[0], d[1] = a[1], d[2] = a[2]; }

/* Body i's inertia about Ground's origin (mt_composite_add_shifted into zero), its force
   Y a + v x* Y v, momentum and the symmetric part of its B (add_Bs), with vectors. */
MT_HOT static void body_forces(const mbk_matter *m, const mt_pos *pos, int i, bool vel, mt_sv4 v, mt_sv4 a, mt_dbody *di)
{
    const mt_pos *ps = &pos[i];
    const double mass = mt_mass_of(m, pos, i); /* the State's own, when it has its own */
    const mt_v4 r = v4_load(&ps->X_GB.p.x), hb = v4_load_after(&ps->I_G.yz) * mass, mr = r * mass;
    const mt_v4 Id = v4_load(&ps->I_G.xx), Io = v4_load_after(&ps->I_G.zz); /* xx yy zz, xy xz yz */
    const mt_v4i lo = {0, 0, 1, 3}, hi = {1, 2, 2, 3};
    const double sdiag = 2.0 * v4_dot(hb, r) + v4_dot(mr, r);
    mt_comp4 Y;
    Y.m = mass;
    Y.h = hb + mr;
    const mt_v4 d = ((Id + sdiag) - (hb * 2.0) * r) - mr * r;
    const mt_v4 o = ((Io - __builtin_shuffle(hb, lo) * __builtin_shuffle(r, hi)) -
                     __builtin_shuffle(r, lo) * __builtin_shuffle(hb, hi)) -
                    __builtin_shuffle(mr, lo) * __builtin_shuffle(r, hi);
    Y.I[0] = __builtin_shuffle(d, o, (mt_v4i){0, 4, 5, 5});
    Y.I[1] = __builtin_shuffle(d, o, (mt_v4i){4, 1, 6, 6});
    Y.I[2] = __builtin_shuffle(d, o, (mt_v4i){5, 6, 2, 2});
    di->Yc.m = mass;
    v4_put3(&di->Yc.h.x, Y.h);
    v4_put3(&di->Yc.I.xx, d);
    v4_put3(&di->Yc.I.xy, o);
    const mt_sv4 h = comp4_mul(&Y, v);
    sv4_store(&di->F, sv4_add(comp4_mul(&Y, a), sv4_cross_force(v, h)));
    sv4_store(&di->hc, h);
    memset(&di->Phi, 0, sizeof di->Phi);
    memset(&di->Bs, 0, sizeof di->Bs);
    if (!vel) return;
    /* add_Bs: M = [w x] I by columns, then the diagonal and the off-diagonal lanes */
    const mt_v4 w = v.w, n = v.v, hy = Y.h;
    const mt_v4 M0 = v4_cross(w, Y.I[0]), M1 = v4_cross(w, Y.I[1]), M2 = v4_cross(w, Y.I[2]);
    const double hn = 2.0 * v4_dot(hy, n);
    const mt_v4 Md = {M0[0], M1[1], M2[2], 0.0}, Ma = {M1[0], M2[0], M2[1], 0.0}, Mb = {M0[1], M0[2], M1[2], 0.0};
    v4_put3(&di->Bs.xx, (Md * 2.0 - (hy * 2.0) * n) + hn);
    v4_put3(&di->Bs.xy, ((Ma + Mb) - __builtin_shuffle(hy, lo) * __builtin_shuffle(n, hi)) -
                            __builtin_shuffle(n, lo) * __builtin_shuffle(hy, hi));
}

/* A body's subtree sums (mt_dbody's F, Yc, Bs and hc) as vectors. */
typedef struct mt_sums4 {
    mt_sv4 F, hc;   /* force and momentum */
    mt_v4 h, Id, Io; /* Yc's first moment, its inertia's diagonal and off-diagonal (xy xz yz) */
    mt_v4 Bd, Bo;   /* Bs's diagonal and off-diagonal */
    double m;       /* Yc's mass */
} mt_sums4;

/* The sums as the body holds them. */
static inline mt_sums4 sums4_load(const mt_dbody *d)
{
    mt_sums4 r = {sv4_load(&d->F), sv4_load(&d->hc), v4_load(&d->Yc.h.x), v4_load(&d->Yc.I.xx),
                  v4_load_after(&d->Yc.I.zz), v4_load(&d->Bs.xx), v4_load_after(&d->Bs.zz), d->Yc.m};
    return r;
}

/* a += b, each sum as composite_add, sym3_add and the spatial adds do it. */
static inline void sums4_add(mt_sums4 *a, const mt_sums4 *b, bool vel)
{
    a->F = sv4_add(a->F, b->F);
    a->m += b->m;
    a->h += b->h;
    a->Id += b->Id;
    a->Io += b->Io;
    if (!vel) return;
    a->Bd += b->Bd;
    a->Bo += b->Bo;
    a->hc = sv4_add(a->hc, b->hc);
}

/* Store the sums into the body (without velocities: Bs and hc as they are). */
static inline void sums4_store(mt_dbody *d, const mt_sums4 *x, bool vel)
{
    sv4_store(&d->F, x->F);
    d->Yc.m = x->m;
    v4_put3(&d->Yc.h.x, x->h);
    v4_put3(&d->Yc.I.xx, x->Id);
    v4_put3(&d->Yc.I.xy, x->Io);
    if (!vel) return;
    v4_put3(&d->Bs.xx, x->Bd);
    v4_put3(&d->Bs.xy, x->Bo);
    sv4_store(&d->hc, x->hc);
}

/* A row's Yc S and Bc^T S (Bc_tmul), with vectors, from the sums in registers. */
static void row_terms4(const mt_sums4 *x, const mbk_spatial_vec *S_, bool vel, mt_drow *r)
{
    mt_comp4 Y;
    Y.I[0] = __builtin_shuffle(x->Id, x->Io, (mt_v4i){0, 4, 5, 5});
    Y.I[1] = __builtin_shuffle(x->Id, x->Io, (mt_v4i){4, 1, 6, 6});
    Y.I[2] = __builtin_shuffle(x->Id, x->Io, (mt_v4i){5, 6, 2, 2});
    Y.h = x->h;
    Y.m = x->m;
    const mt_sv4 S = sv4_load(S_);
    sv4_store(&r->YcS, comp4_mul(&Y, S));
    if (!vel) {
        r->BtS = mbk_vec3_zero();
        return;
    }
    const mt_v4 B[3] = {__builtin_shuffle(x->Bd, x->Bo, (mt_v4i){0, 4, 5, 5}),
                        __builtin_shuffle(x->Bd, x->Bo, (mt_v4i){4, 1, 6, 6}),
                        __builtin_shuffle(x->Bd, x->Bo, (mt_v4i){5, 6, 2, 2})};
    v4_put3(&r->BtS.x, (sym3_cols_mul(B, S.w) + v4_cross(x->hc.w, S.w)) + v4_cross(x->hc.v, S.v) * 2.0);
}

/* Tip to base, as the scalar loop in mt_deriv_setup does it (the same sums in the same
   order), the sums of a run carried in registers from a body to its parent (the body
   before it): a body's own and its other children's sums are in memory (those children
   add theirs there), the next body's are added last. */
MT_HOT static void tip_to_base4(const mbk_matter *m, mt_dws *ws, bool vel)
{
    mt_dbody *db = ws->body;
    mt_sums4 carry;
    bool carried = false;
    for (int i = m->nb - 1; i >= 1; --i) {
        const mt_body *b = &m->bodies[i];
        mt_sums4 x = sums4_load(&db[i]);
        if (carried) sums4_add(&x, &carry, vel);
        if (carried) sums4_store(&db[i], &x, vel); /* the sweep reads them */
        for (int l = 0; l < b->nu; ++l) row_terms4(&x, &ws->ucol[b->u0 + l].T, vel, &ws->row[b->u0 + l]);
        carried = b->parent > 0 && b->parent == i - 1;
        if (carried) {
            carry = x;
        } else if (b->parent > 0) { /* into the parent's memory */
            mt_sums4 y = sums4_load(&db[b->parent]);
            sums4_add(&y, &x, vel);
            sums4_store(&db[b->parent], &y, vel);
        }
    }
}
#else
/* A Pin's velocity, acceleration and columns: T = S, dS = 0, c = 0, and with S x S = 0
   the general formulas reduce to w = v_p x S (= -S x v_i) for q, alpha = 2 v_p x S for u. */
static void pin_body(const mt_dws *ws, int u0, int q0, const mbk_spatial_vec *H, const mbk_vec3 *pB, double u,
                     double udot, const mt_dbody *dp, mt_dbody *di)
{
    const mbk_spatial_vec S = motion_at_origin(*H, *pB);
    const bool vel = ws->with_velocity;
    const mbk_spatial_vec vS = vel ? mbk_spatial_cross_motion(dp->v, S) : mbk_spatial_vec_zero();
    /* v_i = v_p + S u, a_i = a_p + S udot + (v_p x S) u */
    di->v = vel ? mbk_spatial_vec_add(dp->v, mbk_spatial_vec_scale(S, u)) : mbk_spatial_vec_zero();
    di->a = mbk_spatial_vec_add(mbk_spatial_vec_add(dp->a, mbk_spatial_vec_scale(S, udot)),
                                mbk_spatial_vec_scale(vS, u));
    mt_ducol *uc = &ws->ucol[u0];
    mt_dcol *qc = &ws->qcol[q0];
    uc->T = qc->T = S;
    uc->alpha = mbk_spatial_vec_add(vS, vS);
    qc->w = vS;
    /* alpha = -(S x a_i) - w x v_i */
    qc->alpha = mbk_spatial_vec_sub(mbk_spatial_vec_scale(mbk_spatial_cross_motion(S, di->a), -1.0),
                                    mbk_spatial_cross_motion(vS, di->v));
}

/* Body i's inertia about Ground's origin, its force Y a + v x* Y v, momentum and the
   symmetric part of its B. */
MT_HOT static void body_forces(const mbk_matter *m, const mt_pos *pos, int i, bool vel, mt_dbody *di)
{
    const double mass = mt_mass_of(m, pos, i); /* the State's own, when it has its own */
    mt_composite Bi = {mass, mbk_vec3_scale(pos[i].c_G, mass), pos[i].I_G};
    mt_composite Y = {0, {0, 0, 0}, {0, 0, 0, 0, 0, 0}};
    mt_composite_add_shifted(&Y, &Bi, pos[i].X_GB.p);
    di->Yc = Y;
    mbk_spatial_vec h = mt_composite_mul(&Y, &di->v);
    di->F = mbk_spatial_vec_add(mt_composite_mul(&Y, &di->a), mbk_spatial_cross_force(di->v, h));
    di->Phi = mbk_spatial_vec_zero();
    memset(&di->Bs, 0, sizeof di->Bs);
    di->hc = h;
    if (vel) add_Bs(&di->Bs, &Y, di->v);
}

/* A row's Yc S and Bc^T S. */
static void row_terms(const mt_dbody *di, const mbk_spatial_vec *S, bool vel, mt_drow *r)
{
    r->YcS = mt_composite_mul(&di->Yc, S);
    r->BtS = vel ? Bc_tmul(di, *S) : mbk_vec3_zero();
}
#endif

/* A body's u columns (T = S at Ground's origin, alpha = v_p x S) and its velocity and
   acceleration without its joint's own velocity-product term: a_i = a_p + S udot + v_p x S u. */
static void own_motion(const mbk_matter *m, int i, mt_dws *ws, const double *ub, const double *udb,
                       const mt_pos *pos, const mbk_spatial_vec *H, const mt_dbody *dp, mt_dbody *di)
{
    const mt_body *b = &m->bodies[i];
    const bool with_velocity = ws->with_velocity;
    const mbk_vec3 pB = pos[i].X_GB.p;
    mbk_spatial_vec vrel = mbk_spatial_vec_zero(), arel = mbk_spatial_vec_zero();
    for (int l = 0; l < b->nu; ++l) {
        mbk_spatial_vec S = motion_at_origin(H[b->u0 + l], pB);
        mt_ducol *uc = &ws->ucol[b->u0 + l];
        uc->T = S;
        uc->alpha = with_velocity ? mbk_spatial_cross_motion(dp->v, S) : mbk_spatial_vec_zero();
        vrel = mbk_spatial_vec_add(vrel, mbk_spatial_vec_scale(S, ub[l]));
        if (udb) arel = mbk_spatial_vec_add(arel, mbk_spatial_vec_scale(S, udb[l]));
    }
    di->v = with_velocity ? mbk_spatial_vec_add(dp->v, vrel) : mbk_spatial_vec_zero();
    di->a = mbk_spatial_vec_add(dp->a, arel);
    if (with_velocity) di->a = mbk_spatial_vec_add(di->a, mbk_spatial_cross_motion(dp->v, vrel));
}

/* A body's q columns finished once its acceleration is complete: w = dS u - T x v_i,
   alpha = (own part) - T x a_i - w x v_i. */
static void finish_q_columns(mt_dws *ws, int q0, int nq, const mt_dbody *di)
{
    for (int k = 0; k < nq; ++k) {
        mt_dcol *qc = &ws->qcol[q0 + k];
        if (ws->with_velocity) qc->w = mbk_spatial_vec_sub(qc->w, mbk_spatial_cross_motion(qc->T, di->v));
        qc->alpha = mbk_spatial_vec_sub(mbk_spatial_vec_sub(qc->alpha, mbk_spatial_cross_motion(qc->T, di->a)),
                                        mbk_spatial_cross_motion(qc->w, di->v));
    }
}

/* Any other body's velocity, acceleration and columns (from its mobilizer's derivatives). */
static int general_body(const mbk_matter *m, const mbk_state *s, int i, mt_dws *ws, const double *q, const double *qn,
                        const int *lay, const double *ub, const double *udb, const mt_pos *pos,
                        const mbk_spatial_vec *H, bool euler, const mt_dbody *dp, mt_dbody *di)
{
    const mt_body *b = &m->bodies[i];
    const bool with_velocity = ws->with_velocity;
    own_motion(m, i, ws, ub, udb, pos, H, dp, di);
    const int q0 = lay[2 * i], nq = lay[2 * i + 1];
    if (nq > 0) {
        mbk_transform X_GF = mbk_transform_compose(pos[b->parent].X_GB, b->X_PF);
        mbk_spatial_vec c = mbk_spatial_vec_zero();
        int rc = joint_columns(m, s, i, ws, &X_GF, q + q0, qn + q0, nq, ub, udb, dp->v, euler, &c, &ws->numeric);
        if (rc < 0) return rc;
        di->a = mbk_spatial_vec_add(di->a, c);
    }
    /* finish the columns; u columns: alpha = v_p x S + dc/du - S x v_i */
    finish_q_columns(ws, q0, nq, di);
    for (int l = 0; with_velocity && l < b->nu; ++l) {
        mt_ducol *uc = &ws->ucol[b->u0 + l];
        uc->alpha = mbk_spatial_vec_sub(uc->alpha, mbk_spatial_cross_motion(uc->T, di->v));
    }
    return MBK_OK;
}

/* A Free joint with a quaternion, as general_body and joint_columns do it, from what the
   mobilizer's form makes known: H is constant in F (angular columns, then linear), HDot is
   zero, and the derivatives need no call of its ops. A quaternion coordinate k turns the
   subtree about omega_k = 2 vec((dq_k) qhat^*), dq_k = (e_k - qhat qhat_k) / |q|, with
   dS = 0; a coordinate of p_FM moves it along e, with dS_l = -(e_l x e) for the angular
   columns l (in F). */
MT_HOT static void free_body(const mbk_matter *m, int i, mt_dws *ws, const double *q, const int *lay, const double *ub,
                      const double *udb, const mt_pos *pos, const mbk_spatial_vec *H, const mt_dbody *dp, mt_dbody *di)
{
    const mt_body *b = &m->bodies[i];
    const bool vel = ws->with_velocity;
    own_motion(m, i, ws, ub, udb, pos, H, dp, di);
    const mbk_transform X_GF = mbk_transform_compose(pos[b->parent].X_GB, b->X_PF);
    const mbk_mat33 *R = &X_GF.R;
    const int q0 = lay[2 * i];
    const double *qb = q + q0;
    const mbk_vec3 p = mbk_vec3_make(qb[4], qb[5], qb[6]), wFM = mbk_vec3_make(ub[0], ub[1], ub[2]),
                   vFM = mbk_vec3_make(ub[3], ub[4], ub[5]);
    const mbk_vec3 udw = udb ? mbk_vec3_make(udb[0], udb[1], udb[2]) : mbk_vec3_zero();
    /* the velocity-product acceleration: -(w_FM x v_FM) in F */
    if (vel)
        di->a = mbk_spatial_vec_add(di->a, from_F(R, X_GF.p, mbk_spatial_vec_make(mbk_vec3_zero(),
                                                                              mbk_vec3_neg(mbk_vec3_cross(wFM, vFM)))));
    /* the quaternion's columns: T alone */
    const double n = mbk_norm_from_squares(qb[0] * qb[0] + qb[1] * qb[1] + qb[2] * qb[2] + qb[3] * qb[3], qb[0], qb[1],
                                           qb[2], qb[3]);
    const mbk_quat qh = mbk_quat_normalize(mbk_quat_make(qb[0], qb[1], qb[2], qb[3])), qc = mbk_quat_conj(qh);
    const double qv[4] = {qh.w, qh.x, qh.y, qh.z};
    mbk_spatial_vec *dS = ws->dS + b->ds0;
    for (int k = 0; k < 4; ++k) {
        double e[4];
        for (int r = 0; r < 4; ++r) e[r] = ((r == k) - qv[r] * qv[k]) / n;
        const mbk_quat o = mbk_quat_mul(mbk_quat_make(e[0], e[1], e[2], e[3]), qc);
        const mbk_vec3 om = mbk_vec3_make(2 * o.x, 2 * o.y, 2 * o.z);
        mt_dcol *col = &ws->qcol[q0 + k];
        col->T = from_F(R, X_GF.p, mbk_spatial_vec_make(om, mbk_vec3_neg(mbk_vec3_cross(om, p))));
        col->w = col->alpha = mbk_spatial_vec_zero();
        for (int l = 0; l < 6; ++l) dS[k * 6 + l] = mbk_spatial_vec_zero();
    }
    /* p_FM's columns: T = (0, R e), dS_l = (0, -R (e_l x e)) for l < 3, so dS u = (0, -R (w_FM x e)) */
    for (int k = 4; k < 7; ++k) {
        const mbk_vec3 ax = mbk_vec3_make(k == 4, k == 5, k == 6);
        mt_dcol *col = &ws->qcol[q0 + k];
        col->T = mbk_spatial_vec_make(mbk_vec3_zero(), mbk_mat33_mul_vec(*R, ax));
        for (int l = 0; l < 6; ++l) {
            const mbk_vec3 el = mbk_vec3_make(l == 0, l == 1, l == 2);
            dS[k * 6 + l] = mbk_spatial_vec_make(
                mbk_vec3_zero(), l < 3 ? mbk_mat33_mul_vec(*R, mbk_vec3_neg(mbk_vec3_cross(el, ax))) : mbk_vec3_zero());
        }
        const mbk_spatial_vec dv = mbk_spatial_vec_make(mbk_vec3_zero(),
                                                        mbk_mat33_mul_vec(*R, mbk_vec3_neg(mbk_vec3_cross(wFM, ax))));
        const mbk_spatial_vec dsud = mbk_spatial_vec_make(mbk_vec3_zero(),
                                                          mbk_mat33_mul_vec(*R, mbk_vec3_neg(mbk_vec3_cross(udw, ax))));
        col->w = vel ? dv : mbk_spatial_vec_zero();
        col->alpha = vel ? mbk_spatial_vec_add(dsud, mbk_spatial_cross_motion(dp->v, dv)) : dsud;
    }
    /* finish the columns as general_body does; the u columns' dc/du: -(H_l.w x v_FM) -
       w_FM x H_l.v in F */
    finish_q_columns(ws, q0, 7, di);
    for (int l = 0; vel && l < 6; ++l) {
        const mbk_vec3 e3 = mbk_vec3_make(l % 3 == 0, l % 3 == 1, l % 3 == 2);
        const mbk_vec3 dc = l < 3 ? mbk_vec3_neg(mbk_vec3_cross(e3, vFM)) : mbk_vec3_neg(mbk_vec3_cross(wFM, e3));
        mt_ducol *uc = &ws->ucol[b->u0 + l];
        uc->alpha = mbk_spatial_vec_add(uc->alpha, mbk_spatial_vec_make(mbk_vec3_zero(), mbk_mat33_mul_vec(*R, dc)));
        uc->alpha = mbk_spatial_vec_sub(uc->alpha, mbk_spatial_cross_motion(uc->T, di->v));
    }
}

MT_HOT int mt_deriv_setup(const mbk_matter *m, const mbk_state *s, const double *udot, mbk_vec3 g, bool with_velocity)
{
    mt_dws ws = mt_dws_of(m, s);
    ws.with_velocity = with_velocity;
    const int *lay = qlayout(m, s);
    const bool euler = layout_euler(m, lay);
    const double *q = mbk_state_get_subsystem_q(s, m->sub), *u = mbk_state_get_subsystem_u(s, m->sub);
    const double *qn = mt_cache(m, s, C_QN);
    const mt_pos *pos = mt_cache(m, s, C_POS);
    const mbk_spatial_vec *H = mt_cache(m, s, C_H);
    mt_dbody *db = ws.body;
    memset(&db[0], 0, sizeof db[0]);
    db[0].a = mbk_spatial_vec_make(mbk_vec3_zero(), mbk_vec3_neg(g));
    /* base to tip: velocities, accelerations, columns, forces, B */
    for (int i = 1; i < m->nb; ++i) {
        const mt_body *b = &m->bodies[i];
        const mt_dbody *dp = &db[b->parent];
        mt_dbody *di = &db[i];
        const double *ub = u + b->u0, *udb = udot ? udot + b->u0 : NULL;
#ifdef MT_V4
        if (b->pin) {
            mt_sv4 v, a;
            pin_body(&ws, b->u0, lay[2 * i], &H[b->u0], &pos[i].X_GB.p, ub[0], udb ? udb[0] : 0.0, dp, di, &v, &a);
            body_forces(m, pos, i, with_velocity, v, a, di);
            continue;
        }
        if (!euler && mt_mobilizer_is_free(&b->mob)) {
            free_body(m, i, &ws, q, lay, ub, udb, pos, H, dp, di);
        } else {
            int rc = general_body(m, s, i, &ws, q, qn, lay, ub, udb, pos, H, euler, dp, di);
            if (rc < 0) return rc;
        }
        body_forces(m, pos, i, with_velocity, sv4_load(&di->v), sv4_load(&di->a), di);
#else
        if (b->pin) {
            pin_body(&ws, b->u0, lay[2 * i], &H[b->u0], &pos[i].X_GB.p, ub[0], udb ? udb[0] : 0.0, dp, di);
        } else if (!euler && mt_mobilizer_is_free(&b->mob)) {
            free_body(m, i, &ws, q, lay, ub, udb, pos, H, dp, di);
        } else {
            int rc = general_body(m, s, i, &ws, q, qn, lay, ub, udb, pos, H, euler, dp, di);
            if (rc < 0) return rc;
        }
        body_forces(m, pos, i, with_velocity, di); /* inertia about Ground's origin, forces, B */
#endif
    }
    /* tip to base: a body's sums are complete when it is reached (its children come
       after it), so its rows' Yc S and Bc^T S, then the sums into its parent's */
#ifdef MT_V4
    tip_to_base4(m, &ws, with_velocity);
#else
    for (int i = m->nb - 1; i >= 1; --i) {
        const mt_body *b = &m->bodies[i];
        const mt_dbody *di = &db[i];
        for (int l = 0; l < b->nu; ++l) {
            mt_drow *r = &ws.row[b->u0 + l];
            const mbk_spatial_vec *S = &ws.ucol[b->u0 + l].T;
            row_terms(di, S, with_velocity, r);
        }
        if (b->parent <= 0) continue;
        mt_dbody *dp = &db[b->parent];
        dp->F = mbk_spatial_vec_add(dp->F, di->F);
        composite_add(&dp->Yc, &di->Yc);
        if (with_velocity) {
            sym3_add(&dp->Bs, &di->Bs);
            dp->hc = mbk_spatial_vec_add(dp->hc, di->hc);
        }
    }
#endif
    mt_dhdr *hdr = dws_header(m, s);
    hdr->with_velocity = with_velocity;
    hdr->numeric = ws.numeric;
    hdr->has_phi = 0;
    return MBK_OK;
}

/* ---- the sweeps ---------------------------------------------------------------- */

void mt_deriv_add_phi(const mbk_matter *m, const mbk_state *s, int body, mbk_spatial_vec F0)
{
    if (body <= 0) return;
    mt_dws ws = mt_dws_of(m, s);
    ws.body[body].Phi = mbk_spatial_vec_add(ws.body[body].Phi, F0);
    dws_header(m, s)->has_phi = 1;
}

/* Component k of column c where columns come in groups of eight of nc components of
   eight lanes each. */
static inline double *col_at(double *X, int nc, int c, int k)
{
    return X + (size_t)(c / 8) * (size_t)(8 * nc) + (size_t)(8 * k + c % 8);
}

/* A spatial vector into components k0 .. k0 + 5 of column c. */
static inline void put_soa(double *X, int nc, int c, int k0, mbk_spatial_vec v)
{
    double *p = col_at(X, nc, c, k0);
    p[0] = v.w.x; p[8] = v.w.y; p[16] = v.w.z; p[24] = v.v.x; p[32] = v.v.y; p[40] = v.v.z;
}

/* row[c] += sum_k a[k] X_k[c] for c in [c0, c1), X_k component k of column c (X at the
   first component, groups of eight columns gs doubles apart), summed in threes (k = 0..2,
   3..5, 6..8, each from its first up), then the threes from the first: three short
   chains instead of one long one for the vector units to wait on. With the vector extension a range of more than two columns goes eight
   columns at a time from a multiple of 8 (the columns of a group outside [c0, c1)
   masked to zero), into a row of n columns (its last group one by one); others column by
   column. as: the coefficients, a: the same in every lane. */
#if MT_VEC8
#define ROW_COMB_VEC(NT)                                                                            \
    const dvec8 lane = {0, 1, 2, 3, 4, 5, 6, 7};                                                    \
    for (int v = c0 & ~7; v < c1; v += 8) {                                                         \
        const double *p = X + (size_t)(v / 8) * gs;                                                 \
        dvec8 c[(NT) / 3], t;                                                                       \
        for (int j = 0; j < (NT) / 3; ++j) {                                                        \
            memcpy(&t, p + 24 * j, sizeof t);                                                       \
            c[j] = a[3 * j] * t;                                                                    \
            memcpy(&t, p + 24 * j + 8, sizeof t);                                                   \
            c[j] += a[3 * j + 1] * t;                                                               \
            memcpy(&t, p + 24 * j + 16, sizeof t);                                                  \
            c[j] += a[3 * j + 2] * t;                                                               \
        }                                                                                           \
        dvec8 x = c[0];                                                                             \
        for (int j = 1; j < (NT) / 3; ++j) x += c[j];                                               \
        if (v < c0 || v + 8 > c1) {                                                                 \
            const dvec8 col = lane + (double)v;                                                     \
            x = (dvec8)((mvec8)x & ((col >= (double)c0) & (col < (double)c1)));                     \
        }                                                                                           \
        if (v + 8 <= n) {                                                                           \
            memcpy(&t, row + v, sizeof t);                                                          \
            t += x;                                                                                 \
            memcpy(row + v, &t, sizeof t);                                                          \
            continue;                                                                               \
        }                                                                                           \
        double e[8];                                                                                \
        memcpy(e, &x, sizeof e);                                                                    \
        for (int l = 0; v + l < n; ++l) row[v + l] += e[l];                                         \
    }
#else
#define ROW_COMB_VEC(NT) (void)a, (void)n;
#endif
#define ROW_COMB(NT)                                                                                \
    static inline void row_comb##NT(double *restrict row, int n, const double *X, size_t gs,        \
                                    const double as[NT], const dvec8 a[NT], int c0, int c1)         \
    {                                                                                               \
        if (c1 - c0 <= 2 || sizeof(dvec8) == sizeof(double)) {                                     \
            for (int c = c0; c < c1; ++c) {                                                         \
                const double *p = X + (size_t)(c / 8) * gs + (size_t)(c % 8);                       \
                double x = 0.0;                                                                     \
                for (int j = 0; j < (NT) / 3; ++j) {                                                \
                    const double *pj = p + 24 * j, *aj = as + 3 * j;                                \
                    const double cj = (aj[0] * pj[0] + aj[1] * pj[8]) + aj[2] * pj[16];             \
                    x = j ? x + cj : cj;                                                            \
                }                                                                                   \
                row[c] += x;                                                                        \
            }                                                                                       \
            return;                                                                                 \
        }                                                                                           \
        ROW_COMB_VEC(NT)                                                                            \
    }
ROW_COMB(6)
ROW_COMB(9)
#undef ROW_COMB
#undef ROW_COMB_VEC

/* x in every lane. */
static inline dvec8 splat(double x)
{
#if MT_VEC8
    return (dvec8){x, x, x, x, x, x, x, x};
#else
    return x;
#endif
}

/* A row's coefficients for row_comb: sc v, as scalars and as vectors of equal lanes. */
static inline void coef_of(double *as, dvec8 *a, mbk_spatial_vec v, double sc)
{
    as[0] = sc * v.w.x; as[1] = sc * v.w.y; as[2] = sc * v.w.z;
    as[3] = sc * v.v.x; as[4] = sc * v.v.y; as[5] = sc * v.v.z;
    for (int k = 0; k < 6; ++k) a[k] = splat(as[k]);
}

/* The columns of q (qs) or u (us) of a body's own joint (q, with self) and its
   descendants, added into row (n columns) as S . g: one contiguous range when the
   subtree is, else body by body. */
static void row_descendants(const mbk_matter *m, const int *lay, int i, bool self, double *row, int n,
                            const double *g, size_t gs, const double *as, const dvec8 *a, bool q)
{
    const int last = i + m->size[i] - 1, from = self ? i : i + 1;
    if (from > last) return;
    if (m->contig[i]) {
        int c0 = q ? lay[2 * from] : m->bodies[from].u0;
        int c1 = q ? lay[2 * last] + lay[2 * last + 1] : m->bodies[last].u0 + m->bodies[last].nu;
        row_comb6(row, n, g, gs, as, a, c0, c1);
        return;
    }
    for (int at = m->pre[i] + (self ? 0 : 1); at < m->pre[i] + m->size[i]; ++at) {
        const int j = m->order[at];
        const int c0 = q ? lay[2 * j] : m->bodies[j].u0, c1 = c0 + (q ? lay[2 * j + 1] : m->bodies[j].nu);
        row_comb6(row, n, g, gs, as, a, c0, c1);
    }
}

/* The last group of eight columns zeroed, before its columns are written: the lanes
   after the n-th column stay zero (the sweep reads them, masked). */
static void pad_columns(double *X, int nc, int n)
{
    if (n % 8) memset(col_at(X, nc, n / 8 * 8, 0), 0, (size_t)(8 * nc) * sizeof *X);
}

#ifdef MT_V4
/* A spatial vector into components 0 .. 5 at p (eight lanes apart). */
static inline void put_soa4(double *p, mt_sv4 v)
{
    p[0] = v.w[0]; p[8] = v.w[1]; p[16] = v.w[2]; p[24] = v.v[0]; p[32] = v.v[1]; p[40] = v.v[2];
}

/* Bc w (Bc_mul) with vectors, Bc's symmetric part by columns. */
static inline mt_sv4 bc4_mul(const mt_v4 B[3], mt_sv4 hc, mt_v4 w)
{
    mt_sv4 r = {sym3_cols_mul(B, w) + v4_cross(w, hc.w), v4_cross(w, hc.v) * 2.0};
    return r;
}

/* Body j's nq columns of q from q0 and nu of u from u0 into the sweep's arrays, as the
   scalar loops in mt_deriv_sweep do (the same products and sums, with vectors). */
MT_HOT static void columns_v4(const mt_dws *ws, const mt_dbody *dj, int q0, int nq, int u0, int nu, bool vel, bool phi)
{
    const mt_comp4 Y = comp4_load(&dj->Yc);
    const mt_sv4 F = sv4_load(&dj->F), hc = sv4_load(&dj->hc);
    mt_v4 B[3];
    sym3_cols(&dj->Bs, B);
    for (int k = 0; k < nq; ++k) {
        const int col = q0 + k;
        const mt_dcol *c = &ws->qcol[col];
        const mt_sv4 T = sv4_load(&c->T), al = sv4_load(&c->alpha), w = sv4_load(&c->w);
        mt_sv4 g = sv4_add(sv4_cross_force(T, F), comp4_mul(&Y, al));
        if (vel) g = sv4_add(g, bc4_mul(B, hc, w.w));
        double *p = col_at(ws->qs, MT_QS, col, 0);
        put_soa4(p, al);
        p[48] = w.w[0]; p[56] = w.w[1]; p[64] = w.w[2];
        put_soa4(p + 72, g);
        if (phi) put_soa4(p + 120, T);
    }
    for (int l = 0; l < nu; ++l) {
        const int col = u0 + l;
        const mt_ducol *c = &ws->ucol[col];
        const mt_sv4 S = sv4_load(&c->T), al = sv4_load(&c->alpha);
        double *p = col_at(ws->us, MT_US, col, 0);
        put_soa4(p, al);
        p[48] = S.w[0]; p[56] = S.w[1]; p[64] = S.w[2];
        put_soa4(p + 72, sv4_add(comp4_mul(&Y, al), bc4_mul(B, hc, S.w)));
    }
}
#endif

MT_HOT void mt_deriv_sweep(const mbk_matter *m, const mbk_state *s, double scale, double *dr_dq, int ldq, int wq,
                    double *dr_du, int ldu, int wu)
{
    mt_dws ws = mt_dws_of(m, s);
    const int *lay = qlayout(m, s);
    mt_dbody *db = ws.body;
    const bool phi = dws_header(m, s)->has_phi != 0, vel = ws.with_velocity;
    const int nq = mbk_state_get_subsystem_nq(s, m->sub), nu = m->nu;
    const size_t qgs = 8 * MT_QS, ugs = 8 * MT_US; /* doubles from one group of columns to the next */
    double *qs = ws.qs, *us = ws.us;
    if (phi) /* subtree sums of the fixed forces */
        for (int i = m->nb - 1; i >= 1; --i) {
            int p = m->bodies[i].parent;
            if (p > 0) db[p].Phi = mbk_spatial_vec_add(db[p].Phi, db[i].Phi);
        }
    /* the columns: alpha, w (angular part), g = T x* F_j + Yc_j alpha + Bc_j w, and T */
    pad_columns(qs, MT_QS, nq);
    pad_columns(us, MT_US, nu);
    for (int j = 1; j < m->nb; ++j) {
        const mt_body *bj = &m->bodies[j];
        const mt_dbody *dj = &db[j];
#ifdef MT_V4
        columns_v4(&ws, dj, lay[2 * j], dr_dq ? lay[2 * j + 1] : 0, bj->u0, dr_du && vel ? bj->nu : 0, vel, phi);
        continue;
#endif
        for (int k = 0; dr_dq && k < lay[2 * j + 1]; ++k) {
            const int col = lay[2 * j] + k;
            const mt_dcol *c = &ws.qcol[col];
            mbk_spatial_vec g = mbk_spatial_vec_add(mbk_spatial_cross_force(c->T, dj->F), mt_composite_mul(&dj->Yc, &c->alpha));
            if (vel) g = mbk_spatial_vec_add(g, Bc_mul(dj, c->w));
            put_soa(qs, MT_QS, col, 0, c->alpha);
            double *w = col_at(qs, MT_QS, col, 6);
            w[0] = c->w.w.x; w[8] = c->w.w.y; w[16] = c->w.w.z;
            put_soa(qs, MT_QS, col, 9, g);
            if (phi) put_soa(qs, MT_QS, col, 15, c->T);
        }
        for (int l = 0; dr_du && vel && l < bj->nu; ++l) {
            const int col = bj->u0 + l;
            const mt_ducol *c = &ws.ucol[col];
            put_soa(us, MT_US, col, 0, c->alpha);
            double *w = col_at(us, MT_US, col, 6);
            w[0] = c->T.w.x; w[8] = c->T.w.y; w[16] = c->T.w.z;
            put_soa(us, MT_US, col, 9, mbk_spatial_vec_add(mt_composite_mul(&dj->Yc, &c->alpha), Bc_mul(dj, c->T)));
        }
    }
    /* row by row: a row of body i takes (Yc S)_r . alpha + (Bc^T S)_r . w from the columns
       of the joints above it, S_r . g from those below and its own joint's q (with dS^T
       F_net), and (Yc S)_r . alpha + (Bc^T S)_r . w from its own joint's u */
    for (int i = 1; i < m->nb; ++i) {
        const mt_body *bi = &m->bodies[i];
        const mt_dbody *di = &db[i];
        const mbk_spatial_vec Fnet = mbk_spatial_vec_sub(di->F, di->Phi);
        for (int r = bi->u0; r < bi->u0 + bi->nu; ++r) {
            const mbk_spatial_vec S = ws.ucol[r].T;
            double a9s[9], sgs[6], psis[6];
            dvec8 a9[9], sg[6], psi[6];
            coef_of(a9s, a9, ws.row[r].YcS, scale);
            a9s[6] = vel ? scale * ws.row[r].BtS.x : 0.0;
            a9s[7] = vel ? scale * ws.row[r].BtS.y : 0.0;
            a9s[8] = vel ? scale * ws.row[r].BtS.z : 0.0;
            for (int k = 6; k < 9; ++k) a9[k] = splat(a9s[k]);
            coef_of(sgs, sg, S, scale);
            if (dr_dq) {
                double *row = dr_dq + (size_t)r * (size_t)ldq;
                if (phi) coef_of(psis, psi, mbk_spatial_cross_force(S, di->Phi), -scale);
                for (int a = bi->parent; a > 0;) { /* ancestors, a run at a time */
                    const int r0 = m->bodies[a].run0, c0 = lay[2 * r0], c1 = lay[2 * a] + lay[2 * a + 1];
                    row_comb9(row, wq, qs, qgs, a9s, a9, c0, c1);
                    if (phi) row_comb6(row, wq, qs + 8 * 15, qgs, psis, psi, c0, c1);
                    a = m->bodies[r0].parent;
                }
                row_descendants(m, lay, i, true, row, wq, qs + 8 * 9, qgs, sgs, sg, true);
                for (int k = 0; !bi->pin && k < lay[2 * i + 1]; ++k) /* its own dS against the net force */
                    row[lay[2 * i] + k] += scale * mbk_spatial_vec_dot(ws.dS[bi->ds0 + k * bi->nu + (r - bi->u0)], Fnet);
            }
            if (dr_du && vel) {
                double *row = dr_du + (size_t)r * (size_t)ldu;
                for (int a = i; a > 0;) { /* itself and the ancestors */
                    const int r0 = m->bodies[a].run0, c0 = m->bodies[r0].u0, c1 = m->bodies[a].u0 + m->bodies[a].nu;
                    row_comb9(row, wu, us, ugs, a9s, a9, c0, c1);
                    a = m->bodies[r0].parent;
                }
                row_descendants(m, lay, i, false, row, wu, us + 8 * 9, ugs, sgs, sg, false);
            }
        }
    }
}

/* Whether body a is body b or one of its ancestors. */
static inline bool is_ancestor(const mbk_matter *m, int a, int b)
{
    return m->pre[a] <= m->pre[b] && m->pre[b] < m->pre[a] + m->size[a];
}

/* dr[r * ld + c0 + k] += scale * S_r . g[k] (k < n) over the rows of body a and its
   ancestors: a row's entries side by side. */
static void add_rows(const mbk_matter *m, const mt_dws *ws, int a, const mbk_spatial_vec *g, int n, double scale,
                     double *dr, int ld, int c0)
{
    for (; a > 0; a = m->bodies[a].parent) {
        const mt_body *b = &m->bodies[a];
        for (int l = 0; l < b->nu; ++l) {
            const mbk_spatial_vec S = ws->ucol[b->u0 + l].T;
            double *row = dr + (size_t)(b->u0 + l) * (size_t)ld + (size_t)c0;
            for (int k = 0; k < n; ++k) row[k] += scale * mbk_spatial_vec_dot(S, g[k]);
        }
    }
}

/* One joint's columns for an element: the forces' changes on each of its bodies (all
   of the joint's columns), then up each body's path to Ground. */
static void pair_joint(const mbk_matter *m, const mt_dws *ws, const int *lay, const mt_pair_jac *J, int j, double scale,
                       double *df_dq, int ldq, double *df_du, int ldu)
{
    const mt_body *bj = &m->bodies[j];
    bool in[2];
    for (int c = 0; c < J->n; ++c) in[c] = J->body[c] > 0 && is_ancestor(m, j, J->body[c]);
    const int nq = df_dq ? lay[2 * j + 1] : 0, nu = df_du && J->has_D ? bj->nu : 0;
    mbk_spatial_vec gq[2][MBK_MOBILIZER_MAX_Q], gu[2][MBK_MOBILIZER_MAX_U];
    /* an opposite pair's body 0 takes body 1's change negated (the same bits as its own
       negated matrices would give) */
    const int b0 = J->opposite ? 1 : 0;
    for (int b = b0; b < J->n; ++b) {
        if (!b0 && J->body[b] <= 0) continue; /* Ground: add_rows below reads nothing for it */
        for (int k = 0; k < nq; ++k) {
            const mt_dcol *c = &ws->qcol[lay[2 * j] + k];
            mbk_spatial_vec g = mbk_spatial_vec_zero();
            for (int e = 0; e < J->n; ++e) {
                if (!in[e]) continue;
                if (J->has_K) g = mbk_spatial_vec_add(g, mat6_mul(J->K[b][e], c->T));
                if (J->has_D) {
                    mbk_spatial_vec dV = mbk_spatial_vec_add(mbk_spatial_cross_motion(c->T, ws->body[J->body[e]].v), c->w);
                    g = mbk_spatial_vec_add(g, mat6_mul(J->D[b][e], dV));
                }
            }
            gq[b][k] = g;
        }
        for (int l = 0; l < nu; ++l) {
            mbk_spatial_vec g = mbk_spatial_vec_zero();
            for (int e = 0; e < J->n; ++e)
                if (in[e]) g = mbk_spatial_vec_add(g, mat6_mul(J->D[b][e], ws->ucol[bj->u0 + l].T));
            gu[b][l] = g;
        }
    }
    for (int k = 0; b0 && k < nq; ++k) gq[0][k] = mbk_spatial_vec_scale(gq[1][k], -1.0);
    for (int l = 0; b0 && l < nu; ++l) gu[0][l] = mbk_spatial_vec_scale(gu[1][l], -1.0);
    for (int b = 0; b < J->n; ++b) {
        if (nq) add_rows(m, ws, J->body[b], gq[b], nq, scale, df_dq, ldq, lay[2 * j]);
        if (nu) add_rows(m, ws, J->body[b], gu[b], nu, scale, df_du, ldu, bj->u0);
    }
}

void mt_deriv_add_pair(const mbk_matter *m, const mbk_state *s, const mt_pair_jac *J, double scale, double *df_dq,
                       int ldq, double *df_du, int ldu)
{
    if (!J->has_K && !J->has_D) return;
    mt_dws ws = mt_dws_of(m, s);
    const int *lay = qlayout(m, s);
    /* every joint above the first body, then those above the second up to the
       first shared one */
    for (int j = J->body[0]; j > 0; j = m->bodies[j].parent)
        pair_joint(m, &ws, lay, J, j, scale, df_dq, ldq, df_du, ldu);
    if (J->n > 1)
        for (int j = J->body[1]; j > 0 && !(J->body[0] > 0 && is_ancestor(m, j, J->body[0])); j = m->bodies[j].parent)
            pair_joint(m, &ws, lay, J, j, scale, df_dq, ldq, df_du, ldu);
}

/* ---- qdot = N(q) u ----------------------------------------------------------------- */

int mbk_matter_calc_qdot_derivatives(const mbk_matter *m, const mbk_state *s, double *dqdot_dq, int ldq,
                                     double *dqdot_du, int ldu)
{
    const char *fn = "mbk_matter_calc_qdot_derivatives";
    int rc = mt_need(m, s, dqdot_dq ? MBK_STAGE_VELOCITY : MBK_STAGE_POSITION, fn);
    if (rc < 0) return rc;
    const int *lay = qlayout(m, s);
    const bool euler = layout_euler(m, lay);
    const int nq = mbk_state_get_subsystem_nq(s, m->sub);
    if ((dqdot_dq && ldq < nq) || (dqdot_du && ldu < m->nu))
        return mbk_set_error(MBK_EINVAL, "%s: row strides %d and %d are below nq = %d and nu = %d", fn, ldq, ldu, nq,
                             m->nu);
    const double *q = mbk_state_get_subsystem_q(s, m->sub), *u = mbk_state_get_subsystem_u(s, m->sub);
    const double *qn = mt_cache(m, s, C_QN);
    for (int i = 0; i < nq; ++i) {
        if (dqdot_dq) memset(dqdot_dq + (size_t)i * (size_t)ldq, 0, (size_t)nq * sizeof(double));
        if (dqdot_du) memset(dqdot_du + (size_t)i * (size_t)ldu, 0, (size_t)m->nu * sizeof(double));
    }
    for (int b = 1; b < m->nb; ++b) {
        const mt_body *bd = &m->bodies[b];
        const mbk_mobilizer_ops *o = bd->mob.ops;
        const int q0 = lay[2 * b], nqb = lay[2 * b + 1], nu = bd->nu;
        if (bd->pin || !o->calc_qdot) { /* qdot = u */
            for (int k = 0; dqdot_du && k < nqb; ++k) dqdot_du[(size_t)(q0 + k) * (size_t)ldu + (size_t)(bd->u0 + k)] = 1.0;
            continue;
        }
        if (dqdot_du) /* N's columns: N u is linear in u */
            for (int l = 0; l < nu; ++l) {
                double e[MBK_MOBILIZER_MAX_U] = {0}, col[MBK_MOBILIZER_MAX_Q];
                e[l] = 1.0;
                o->calc_qdot(bd->mob.impl, euler, qn + q0, e, col);
                for (int k = 0; k < nqb; ++k) dqdot_du[(size_t)(q0 + k) * (size_t)ldu + (size_t)(bd->u0 + l)] = col[k];
            }
        if (dqdot_dq) {
            mbk_mobilizer_derivatives d;
            if ((rc = mbk_mobilizer_calc_derivatives(&bd->mob, euler, q + q0, u + bd->u0, &d)) < 0)
                return mbk_set_error(rc, "%s: body %d: %s", fn, b, mbk_last_error());
            for (int i = 0; i < nqb; ++i)
                for (int k = 0; k < nqb; ++k) dqdot_dq[(size_t)(q0 + i) * (size_t)ldq + (size_t)(q0 + k)] = d.dqdot_dq[i][k];
        }
    }
    return MBK_OK;
}

/* ---- M^-1 on many columns ------------------------------------------------------------- */

/* The two triangular sweeps on a block of NV * 8 columns (rows ld apart): L^T y = x from
   the tips with y scaled by Dsc as each row is finished, then L x = y from the base.
   Each row's columns stay in registers while its entries of L are pulled in, summed as
   two partial sums over alternate entries, the row finished last (the nearest) pulled
   last: the sweeps are a chain of rows, and this keeps the chain short. Every column is
   computed the same way whichever block holds it, so the blocking does not change the
   bits. */
#if MT_VEC8
#define SOLVE_ROW(NV, yi, lo, hi, coef, rows, sc)                                                   \
    do {                                                                                            \
        dvec8 e_[NV], o_[NV];                                                                    \
        for (int j_ = 0; j_ < (NV); ++j_) {                                                         \
            memcpy(&e_[j_], (yi) + 8 * j_, sizeof e_[j_]);                                          \
            o_[j_] = splat(0.0);                                                                    \
        }                                                                                           \
        int t_ = (hi) - 1;                                                                          \
        for (; t_ > (lo); t_ -= 2) {                                                                \
            const double f0_ = -(coef)[t_], f1_ = -(coef)[t_ - 1];                                  \
            const double *y0_ = Y + (size_t)(rows)[t_] * ld, *y1_ = Y + (size_t)(rows)[t_ - 1] * ld; \
            for (int j_ = 0; j_ < (NV); ++j_) {                                                     \
                dvec8 x0_, x1_;                                                                  \
                memcpy(&x0_, y0_ + 8 * j_, sizeof x0_);                                             \
                memcpy(&x1_, y1_ + 8 * j_, sizeof x1_);                                             \
                e_[j_] += f0_ * x0_;                                                                \
                o_[j_] += f1_ * x1_;                                                                \
            }                                                                                       \
        }                                                                                           \
        if (t_ == (lo)) {                                                                           \
            const double f0_ = -(coef)[t_], *y0_ = Y + (size_t)(rows)[t_] * ld;                     \
            for (int j_ = 0; j_ < (NV); ++j_) {                                                     \
                dvec8 x0_;                                                                       \
                memcpy(&x0_, y0_ + 8 * j_, sizeof x0_);                                             \
                e_[j_] += f0_ * x0_;                                                                \
            }                                                                                       \
        }                                                                                           \
        for (int j_ = 0; j_ < (NV); ++j_) {                                                         \
            dvec8 r_ = (sc) * (e_[j_] + o_[j_]);                                                 \
            memcpy((yi) + 8 * j_, &r_, sizeof r_);                                                  \
        }                                                                                           \
    } while (0)
#else
#define SOLVE_ROW(NV, yi, lo, hi, coef, rows, sc)                                                   \
    do {                                                                                            \
        for (int k_ = 0; k_ < 8 * (NV); ++k_) {                                                     \
            double e_ = (yi)[k_], o_ = 0.0;                                                         \
            int t_ = (hi) - 1;                                                                      \
            for (; t_ > (lo); t_ -= 2) {                                                            \
                e_ += -(coef)[t_] * Y[(size_t)(rows)[t_] * ld + (size_t)k_];                        \
                o_ += -(coef)[t_ - 1] * Y[(size_t)(rows)[t_ - 1] * ld + (size_t)k_];                \
            }                                                                                       \
            if (t_ == (lo)) e_ += -(coef)[t_] * Y[(size_t)(rows)[t_] * ld + (size_t)k_];            \
            (yi)[k_] = (sc) * (e_ + o_);                                                            \
        }                                                                                           \
    } while (0)
#endif

#define DEFINE_BLOCK_SOLVE(NV)                                                                      \
    MT_HOT static void block_solve_##NV(const mbk_matter *m, double *Y, size_t ld, const double *LD,\
                                 const double *Dsc, const double *L)                                \
    {                                                                                               \
        for (int i = m->nu - 1; i >= 0; --i)                                                        \
            SOLVE_ROW(NV, Y + (size_t)i * ld, m->ldoff[i], m->ldoff[i + 1], LD, m->ldrow, Dsc[i]);  \
        for (int k = 0; k < m->nu; ++k) {                                                           \
            const int t0 = m->loff[k], t1 = k + 1 < m->nu ? m->loff[k + 1] : m->nl;                 \
            if (t0 < t1) SOLVE_ROW(NV, Y + (size_t)k * ld, t0, t1, L, m->lanc, 1.0);                \
        }                                                                                           \
    }

DEFINE_BLOCK_SOLVE(1)
DEFINE_BLOCK_SOLVE(2)
DEFINE_BLOCK_SOLVE(3)
DEFINE_BLOCK_SOLVE(4)
DEFINE_BLOCK_SOLVE(5)
DEFINE_BLOCK_SOLVE(6)
DEFINE_BLOCK_SOLVE(7)
DEFINE_BLOCK_SOLVE(8)
DEFINE_BLOCK_SOLVE(9)
DEFINE_BLOCK_SOLVE(10)
DEFINE_BLOCK_SOLVE(11)
DEFINE_BLOCK_SOLVE(12)
#undef DEFINE_BLOCK_SOLVE
#undef SOLVE_ROW

typedef void (*block_solve_fn)(const mbk_matter *, double *, size_t, const double *, const double *, const double *);
static const block_solve_fn BLOCK_SOLVE[SOLVE_W / 8 + 1] = {
    NULL,          block_solve_1, block_solve_2, block_solve_3,  block_solve_4,  block_solve_5, block_solve_6,
    block_solve_7, block_solve_8, block_solve_9, block_solve_10, block_solve_11, block_solve_12};

/* dst[0, n) = src[0, n): eight at a time, then the rest one by one (written out, so that
   compilers do not turn these short copies into library calls). With acc, each value
   times zero is added into *acc as well: NaN in a lane exactly when a value copied there
   is infinite or NaN, so that the check of the results rides on the copy's loads. */
static inline void copy_row(double *restrict dst, const double *restrict src, int n, dvec8 *acc)
{
    int k = 0;
#if MT_VEC8
    for (; k + 8 <= n; k += 8) {
        dvec8 t;
        memcpy(&t, src + k, sizeof t);
        memcpy(dst + k, &t, sizeof t);
        if (acc) *acc += t * 0.0;
    }
#endif
    if (acc) { /* the values left, before the copy below moves the pointers */
        double r = 0.0;
        for (int j = k; j < n; ++j) r += src[j] * 0.0;
        *acc += r;
    }
    for (; k + 4 <= n; k += 4) {
        const double t0 = src[k], t1 = src[k + 1], t2 = src[k + 2], t3 = src[k + 3];
        dst[k] = t0, dst[k + 1] = t1, dst[k + 2] = t2, dst[k + 3] = t3;
    }
    dst += k, src += k;
    switch (n - k) {
    case 3: dst[2] = src[2]; /* fall through */
    case 2: dst[1] = src[1]; /* fall through */
    case 1: dst[0] = src[0]; /* fall through */
    default: break;
    }
}

/* Columns of a caller's array that M^-1 takes in the work space: w columns from x, rows
   ld apart. */
typedef struct mt_cols_left {
    double *x; /* the first column's entry in row 0 */
    size_t ld; /* row stride */
    int w;     /* columns */
} mt_cols_left;

/* The ranges r[0..nr) side by side into the work space Y (rows W apart, W a multiple of
   8 and less than their width + 8; the rest of each row zero), or (back) from it. */
static void block_copy(int nu, const mt_cols_left *r, int nr, double *Y, int W, bool back)
{
    static const double zero8[8];
    for (int i = 0; !back && i < nu; ++i) memcpy(Y + (size_t)i * (size_t)W + W - 8, zero8, sizeof zero8);
    /* range by range, so that each loop copies rows of one width */
    for (int k = 0, c = 0; k < nr; c += r[k].w, ++k)
        for (int i = 0; i < nu; ++i) {
            double *x = r[k].x + (size_t)i * r[k].ld, *y = Y + (size_t)i * (size_t)W + c;
            if (back) copy_row(x, y, r[k].w, NULL);
            else copy_row(y, x, r[k].w, NULL);
        }
}

/* How many columns of X to leave before its whole vectors of eight so that they start on a
   32-byte boundary in every row (0 to 3; 0 when the rows are not all aligned alike or
   there is no whole vector): vector loads that cross 32 bytes cost up to 15 % more. */
static int align_head(const double *X, size_t ld, int n)
{
    const uintptr_t a = (uintptr_t)X;
    if (a % sizeof(double) || (ld * sizeof(double)) % 32) return 0;
    const int h = (int)((32 - a % 32) % 32 / sizeof(double));
    return n - h >= 8 ? h : 0;
}

/* The n / 8 whole vectors of columns of X where they are, in as few blocks of at most
   nvmax vectors as will do, sharing the vectors evenly. */
static void solve_in_place(const mbk_matter *m, double *X, size_t ld, int n, int nvmax, const double *LD,
                           const double *Dsc, const double *L)
{
    const int nvec = n / 8, nblk = (nvec + nvmax - 1) / nvmax;
    for (int k = 0, c0 = 0; k < nblk; ++k) {
        const int nv = nvec / nblk + (k < nvec % nblk);
        BLOCK_SOLVE[nv](m, X + c0, ld, LD, Dsc, L);
        c0 += 8 * nv;
    }
}

/* M = L^T D L with L unit lower triangular, nonzero only where a u's row meets the u
   above it (Featherstone's LTDL, "Rigid Body Dynamics Algorithms" 6.5, eliminating from
   the tips). It is read off the articulated-body inertias the Acceleration stage left:
   once everything below a body is eliminated, what couples its u to each other and to
   the u above is its articulated inertia P alone, through U = P H. So a body of one u
   has D = H . U and L_ka = U . S_a / D = G . S_a (G = U / D, as the ABA keeps it), one
   dot product per entry; a body of several u factors its own block K = H^T U =
   L_bb^T D_b L_bb and solves L_bb^T D_b L_ba = U^T S_a for each u above. Every S and U
   is taken at Ground's origin. */
static int row_len(const mbk_matter *m, int k) { return (k + 1 < m->nu ? m->loff[k + 1] : m->nl) - m->loff[k]; }

/* A body of several u: its rows of L and its D. */
MT_HOT static void factor_block(const mbk_matter *m, const mt_node *nd, const mt_inertia *P, const mbk_spatial_vec *H,
                         mbk_vec3 p_B, const mt_dws *ws, double *D, double *L)
{
    const int n = nd->nu, u0 = nd->u0, *off = m->loff, *anc = m->lanc;
    mbk_spatial_vec U[MBK_MOBILIZER_MAX_U];
    double K[MBK_MOBILIZER_MAX_U][MBK_MOBILIZER_MAX_U], Lb[MBK_MOBILIZER_MAX_U][MBK_MOBILIZER_MAX_U] = {{0}};
    for (int j = 0; j < n; ++j) U[j] = mbk_spatial_shift_force(mt_inertia_mul(P, &H[u0 + j]), mbk_vec3_neg(p_B));
    for (int j = 0; j < n; ++j) /* the lower triangle, which is all the factoring reads */
        for (int i = 0; i <= j; ++i) K[j][i] = mbk_spatial_vec_dot(ws->ucol[u0 + j].T, U[i]);
    /* K = Lb^T D Lb from the last u (the tip of the body's chain of u) */
    for (int j = n - 1; j >= 0; --j) {
        double d = K[j][j];
        for (int l = j + 1; l < n; ++l) d -= Lb[l][j] * Lb[l][j] * D[u0 + l];
        D[u0 + j] = d;
        for (int i = 0; i < j; ++i) {
            double x = K[j][i];
            for (int l = j + 1; l < n; ++l) x -= Lb[l][j] * D[u0 + l] * Lb[l][i];
            Lb[j][i] = x / d;
        }
    }
    /* row u0 + j holds the u of its body above it (j - 1 down to 0), then those above the body */
    for (int j = 0; j < n; ++j)
        for (int p = 0; p < j; ++p) L[off[u0 + j] + p] = Lb[j][j - 1 - p];
    for (int p = 0; p < row_len(m, u0); ++p) {
        const mbk_spatial_vec S = ws->ucol[anc[off[u0] + p]].T;
        double z[MBK_MOBILIZER_MAX_U];
        for (int j = n - 1; j >= 0; --j) {
            z[j] = mbk_spatial_vec_dot(U[j], S);
            for (int l = j + 1; l < n; ++l) z[j] -= Lb[l][j] * z[l];
        }
        for (int j = 0; j < n; ++j) L[off[u0 + j] + j + p] = z[j] / D[u0 + j];
    }
}

/* LD (L by columns) for the rows of u0 .. u0 + n - 1: L times D of the row, over scale. */
static void factor_columns(const mbk_matter *m, int u0, int n, const double *D, const double *L, double inv_scale,
                           double *LD)
{
    for (int k = u0; k < u0 + n; ++k) {
        const double f = D[k] * inv_scale;
        for (int t = m->loff[k]; t < m->loff[k] + row_len(m, k); ++t) LD[m->lcol[t]] = L[t] * f;
    }
}

MT_HOT static int factor_mass(const mbk_matter *m, const mbk_state *s, const mt_dws *ws, double inv_scale, double *D,
                       double *L, double *LD)
{
    int rc = mt_realize_abi(m, s); /* already there after Acceleration */
    if (rc < 0) return rc;
    const mt_abi abi = mt_abi_of(m, s);
    const mt_pos *pos = mt_cache(m, s, C_POS);
    const mbk_spatial_vec *H = mt_cache(m, s, C_H);
    for (int b = 1; b < m->nb; ++b) {
        const mt_node *nd = &m->nodes[b];
        if (nd->nu > 1) {
            factor_block(m, nd, &abi.P[b], H, pos[b].X_GB.p, ws, D, L);
            factor_columns(m, nd->u0, nd->nu, D, L, inv_scale, LD);
            continue;
        }
        if (nd->nu == 0) continue;
        /* G is kept at the parent's origin */
        const int k = nd->u0, t0 = m->loff[k], t1 = t0 + row_len(m, k);
        const mbk_vec3 p_P = nd->parent > 0 ? pos[nd->parent].X_GB.p : mbk_vec3_zero();
        const mbk_spatial_vec g = mbk_spatial_shift_force(abi.G[k], mbk_vec3_neg(p_P));
        D[k] = 1.0 / abi.Dinv[nd->d0];
        const double f = D[k] * inv_scale;
        for (int t = t0; t < t1; ++t) {
            L[t] = mbk_spatial_vec_dot(g, ws->ucol[m->lanc[t]].T);
            LD[m->lcol[t]] = L[t] * f;
        }
    }
    return MBK_OK;
}

/* The sparse factor for the solve: L by rows, LD (L by columns, times D_k / scale: back
   substitution pulls the rows below each u already scaled by scale / D, y_k = z_k D_k /
   scale) and Dsc = scale / D, in the work space; *Y: the solve's block. */
MT_HOT static int factor_for_solve(const mbk_matter *m, const mbk_state *s, const mt_dws *ws, double scale, double **L,
                            double **LD, double **Dsc, double **Y)
{
    double *D = dws_factor(m, s, Y);
    *L = D + m->nu;
    *LD = *L + m->nl;
    int rc = factor_mass(m, s, ws, 1.0 / scale, D, *L, *LD);
    if (rc < 0) return rc;
    for (int i = 0; i < m->nu; ++i) D[i] = scale / D[i]; /* D is read only through LD from here */
    *Dsc = D;
    return MBK_OK;
}

double *mt_deriv_block(const mbk_matter *m, const mbk_state *s, int n, int *ld)
{
    if (!m->ltdl || n > block_width(m) || n <= 0) return NULL;
    double *Y;
    dws_factor(m, s, &Y);
    *ld = (n + 7) / 8 * 8;
    memset(Y, 0, ((size_t)m->nu * (size_t)*ld + 8) * sizeof *Y); /* and the eight after the last row */
    return Y;
}

MT_HOT int mt_deriv_solve_block(const mbk_matter *m, const mbk_state *s, double scale, double *X1, int ld1, int n1,
                         double *X2, int ld2, int n2)
{
    mt_dws ws = mt_dws_of(m, s);
    double *L, *LD, *Dsc, *Y;
    int rc = factor_for_solve(m, s, &ws, scale, &L, &LD, &Dsc, &Y);
    if (rc < 0) return rc;
    const int W = (n1 + n2 + 7) / 8 * 8;
    BLOCK_SOLVE[W / 8](m, Y, (size_t)W, LD, Dsc, L);
    dvec8 acc[2] = {splat(0.0), splat(0.0)};
    for (int i = 0; i < m->nu; ++i) {
        const double *y = Y + (size_t)i * (size_t)W;
        copy_row(X1 + (size_t)i * (size_t)ld1, y, n1, &acc[0]);
        copy_row(X2 + (size_t)i * (size_t)ld2, y + n1, n2, &acc[1]);
    }
    /* x * 0 is NaN exactly for an infinite or NaN x, and a NaN stays in the sums */
    double sum = 0.0;
    for (size_t l = 0; l < sizeof(dvec8) / sizeof(double); ++l) sum += ((const double *)&acc[0])[l] + ((const double *)&acc[1])[l];
    return sum == sum ? MBK_OK : 1;
}

/* ---- M^-1 through the articulated-body sweeps, a group of columns at once ---------------- */

static inline dvec8 load8(const double *p)
{
    dvec8 x;
    memcpy(&x, p, sizeof x);
    return x;
}

static inline void store8(double *p, dvec8 x) { memcpy(p, &x, sizeof x); }

/* a . x for a 3-vector a the same in every column. */
static inline dvec8 dot3x8(mbk_vec3 a, const dvec8 x[3]) { return (a.x * x[0] + a.y * x[1]) + a.z * x[2]; }

/* h . x for a spatial vector h the same in every column, summed as two halves: the
   sweeps are a chain from body to body, and this halves its length here. */
static inline dvec8 dot8(const mbk_spatial_vec *h, const mt_sv8 *x) { return dot3x8(h->w, x->w) + dot3x8(h->v, x->v); }

/* y += a e for a 3-vector a the same in every column. */
static inline void axpy3x8(dvec8 y[3], mbk_vec3 a, dvec8 e) { y[0] += a.x * e, y[1] += a.y * e, y[2] += a.z * e; }

/* y += h e. */
static inline void axpy8(mt_sv8 *y, const mbk_spatial_vec *h, dvec8 e)
{
    axpy3x8(y->w, h->w, e);
    axpy3x8(y->v, h->v, e);
}

static inline void add8(mt_sv8 *y, const mt_sv8 *x)
{
    for (int k = 0; k < 3; ++k) y->w[k] += x->w[k], y->v[k] += x->v[k];
}

/* A force taken from a body's origin to its parent's, r from the parent's to the body's:
   the moment gains r x f (mbk_spatial_shift_force by -r). */
static inline void shift_force8(mt_sv8 *f, mbk_vec3 r)
{
    f->w[0] += r.y * f->v[2] - r.z * f->v[1];
    f->w[1] += r.z * f->v[0] - r.x * f->v[2];
    f->w[2] += r.x * f->v[1] - r.y * f->v[0];
}

/* A motion taken from the parent's origin to the body's: v gains w x r
   (mbk_spatial_shift_motion). */
static inline void shift_motion8(mt_sv8 *a, mbk_vec3 r)
{
    a->v[0] += a->w[1] * r.z - a->w[2] * r.y;
    a->v[1] += a->w[2] * r.x - a->w[0] * r.z;
    a->v[2] += a->w[0] * r.y - a->w[1] * r.x;
}

/* X <- scale M^-1 X for ng groups of LANES columns of X side by side (nu rows ld apart,
   in place): mt_aba_solve's sweeps with mobility forces alone and every scalar a vector
   of a group's columns' values. The rows hold eps = tau - H^T z between the sweeps; z and
   A of the fed bodies (those a child reaches through memory rather than along a run) go
   to zm and am (ng per fed body). Each group is a chain from body to body; taking
   several groups body by body lets their chains overlap. M^-1 costs O(n) per column this
   way, where the sparse factor would cost the depth. */
MT_HOT static void aba_columns(const mbk_matter *m, const mbk_state *s, double *X, size_t ld, int ng, double scale,
                               mt_sv8 *zm, mt_sv8 *am)
{
    const mt_pos *pos = mt_cache(m, s, C_POS);
    const mbk_spatial_vec *H = mt_cache(m, s, C_H);
    const mt_abi abi = mt_abi_of(m, s);
    const mt_sv8 zero = {{splat(0.0), splat(0.0), splat(0.0)}, {splat(0.0), splat(0.0), splat(0.0)}};
    for (int k = 0; k < m->nfed * ng; ++k) zm[k] = zero;
    /* tip to base: the articulated bias forces; along a run z is carried, not stored */
    mt_sv8 carry[ABA_GROUPS];
    for (int g = 0; g < ng; ++g) carry[g] = zero;
    for (int i = m->nb - 1; i >= 1; --i) {
        const mt_node *b = &m->nodes[i];
        const mbk_vec3 r = pos[i].r_PB;
        for (int g = 0; g < ng; ++g) {
            mt_sv8 zi = carry[g];
            if (b->fed) add8(&zi, &zm[m->fed_slot[i] * ng + g]);
            mt_sv8 zp = zi;
            shift_force8(&zp, r);
            for (int j = 0; j < b->nu; ++j) { /* H^T G = 1: each eps from the same zi */
                double *row = X + (size_t)(b->u0 + j) * ld + (size_t)(LANES * g);
                const mbk_spatial_vec *h = &H[b->u0 + j];
                /* a spin's H is (a, 0): only the moment counts */
                const dvec8 Hz = b->spin ? dot3x8(h->w, zi.w) : dot8(h, &zi);
                const dvec8 eps = load8(row) - Hz;
                store8(row, eps);
                axpy8(&zp, &abi.G[b->u0 + j], eps);
            }
            if (b->parent == i - 1) {
                carry[g] = zp;
            } else {
                if (b->parent > 0) add8(&zm[m->fed_slot[b->parent] * ng + g], &zp); /* Ground's is unused */
                carry[g] = zero;
            }
        }
    }
    /* base to tip: the accelerations and udot = D^-1 eps - G^T A_parent */
    mt_sv8 prev[ABA_GROUPS];
    for (int g = 0; g < ng; ++g) prev[g] = zero;
    for (int i = 1; i < m->nb; ++i) {
        const mt_node *b = &m->nodes[i];
        const double *Dinv = abi.Dinv + b->d0;
        for (int g = 0; g < ng; ++g) {
            const mt_sv8 *AP = b->parent == i - 1 ? &prev[g] : b->parent > 0 ? &am[m->fed_slot[b->parent] * ng + g] : &zero;
            mt_sv8 Ai = *AP;
            shift_motion8(&Ai, pos[i].r_PB);
            double *X0 = X + (size_t)(LANES * g);
            dvec8 e[MBK_MOBILIZER_MAX_U];
            for (int j = 0; j < b->nu; ++j) e[j] = load8(X0 + (size_t)(b->u0 + j) * ld);
            for (int q = 0; q < b->nu; ++q) {
                dvec8 x = -dot8(&abi.G[b->u0 + q], AP);
                for (int j = 0; j < b->nu; ++j) x += Dinv[q * b->nu + j] * e[j];
                store8(X0 + (size_t)(b->u0 + q) * ld, scale * x);
                if (b->spin) axpy3x8(Ai.w, H[b->u0 + q].w, x);
                else axpy8(&Ai, &H[b->u0 + q], x);
            }
            if (b->fed) am[m->fed_slot[i] * ng + g] = Ai;
            prev[g] = Ai;
        }
    }
}

int mt_deriv_solve(const mbk_matter *m, const mbk_state *s, double scale, double *X1, int ld1, int n1, double *X2,
                   int ld2, int n2)
{
    mt_dws ws = mt_dws_of(m, s);
    if (!m->ltdl) { /* through the articulated-body sweeps: groups of columns, then column by column */
        double *x = ws.vec + (size_t)MT_V_VAL * (size_t)ws.vlen, *y = ws.vec + (size_t)MT_V_ACC * (size_t)ws.vlen;
        mbk_spatial_vec *A = ws.sp, *z = ws.sp + m->nb;
        mt_sv8 *zm = dws_aba(m, s), *am = zm + (size_t)m->nfed * ABA_GROUPS;
        for (int which = 0; which < 2; ++which) {
            double *X = which ? X2 : X1;
            const int ld = which ? ld2 : ld1, n = which ? n2 : n1, ngrouped = X ? n / LANES * LANES : 0;
            for (int j = 0; j < ngrouped; j += ABA_GROUPS * LANES) {
                const int ng = (ngrouped - j) / LANES < ABA_GROUPS ? (ngrouped - j) / LANES : ABA_GROUPS;
                aba_columns(m, s, X + j, (size_t)ld, ng, scale, zm, am);
            }
            for (int j = ngrouped; X && j < n; ++j) {
                for (int i = 0; i < m->nu; ++i) x[i] = X[(size_t)i * (size_t)ld + (size_t)j];
                mt_aba_solve(m, s, x, NULL, false, A, z, y);
                for (int i = 0; i < m->nu; ++i) X[(size_t)i * (size_t)ld + (size_t)j] = scale * y[i];
            }
        }
        return MBK_OK;
    }
    double *L, *LD, *Dsc, *Y;
    int rc = factor_for_solve(m, s, &ws, scale, &L, &LD, &Dsc, &Y);
    if (rc < 0) return rc;
    /* [X1 X2] in one block in the work space when it fits, else the whole vectors of 8
       columns of each where they are and the columns left over in the work space */
    double zero = 0.0;
    if (!X1) X1 = &zero, n1 = 0;
    if (!X2) X2 = &zero, n2 = 0;
    const bool one = n1 + n2 <= block_width(m);
    /* each array: h columns before its whole vectors (to align them), then v in vectors */
    const int h1 = one ? 0 : align_head(X1, (size_t)ld1, n1), h2 = one ? 0 : align_head(X2, (size_t)ld2, n2);
    const int v1 = one ? 0 : (n1 - h1) / 8 * 8, v2 = one ? 0 : (n2 - h2) / 8 * 8;
    const mt_cols_left all[4] = {{X1, (size_t)ld1, h1},
                                 {X1 + h1 + v1, (size_t)ld1, n1 - h1 - v1},
                                 {X2, (size_t)ld2, h2},
                                 {X2 + h2 + v2, (size_t)ld2, n2 - h2 - v2}};
    mt_cols_left left[4];
    int nleft = 0; /* the ranges with columns in them: the copies go row by row through them */
    for (int k = 0; k < 4; ++k)
        if (all[k].w > 0) left[nleft++] = all[k];
    const int nv = (n1 - v1 + n2 - v2 + 7) / 8;
    if (!one) {
        /* a row pulls in the block's rows of every u above it: keep those in the first
           level of cache (about 40 KB) */
        int depth = 1;
        for (int k = 0; k < m->nu; ++k) depth = row_len(m, k) > depth ? row_len(m, k) : depth;
        int nvmax = SOLVE_L1 / (64 * depth);
        nvmax = nvmax < 1 ? 1 : nvmax > SOLVE_W / 8 ? SOLVE_W / 8 : nvmax;
        solve_in_place(m, X1 + h1, (size_t)ld1, v1, nvmax, LD, Dsc, L);
        solve_in_place(m, X2 + h2, (size_t)ld2, v2, nvmax, LD, Dsc, L);
    }
    if (nv == 0) return MBK_OK;
    block_copy(m->nu, left, nleft, Y, 8 * nv, false);
    BLOCK_SOLVE[nv](m, Y, (size_t)(8 * nv), LD, Dsc, L);
    block_copy(m->nu, left, nleft, Y, 8 * nv, true);
    return MBK_OK;
}
