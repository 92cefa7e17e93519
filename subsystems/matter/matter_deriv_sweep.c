/* The derivatives' sweeps (matter_deriv.h has the derivation): dr/dq and dr/du row
 * by row from the setup's columns and sums, and the pair elements' Jacobians
 * (forces between two bodies, mt_pair_jac) taken to mobility space. */
#include <string.h>

#include "matter_deriv.h"
#include "mt_v4.h"

/* ---- small spatial helpers ------------------------------------------------ */

/* M x for a 6 x 6 row-major M and a spatial vector x. */
static inline mbk_spatial_vec mat6_mul(const double M[6][6], mbk_spatial_vec x)
{
    const double v[6] = {x.w.x, x.w.y, x.w.z, x.v.x, x.v.y, x.v.z};
    double r[6];
    for (int i = 0; i < 6; ++i)
        r[i] = M[i][0] * v[0] + M[i][1] * v[1] + M[i][2] * v[2] + M[i][3] * v[3] + M[i][4] * v[4] + M[i][5] * v[5];
    return mbk_spatial_vec_make(mbk_vec3_make(r[0], r[1], r[2]), mbk_vec3_make(r[3], r[4], r[5]));
}

/* Bc w for a subtree: (Bs a + a x hn, 2 a x hf) with a = w's angular part. */
static inline mbk_spatial_vec Bc_mul(const mt_dbody *d, mbk_spatial_vec w)
{
    return mbk_spatial_vec_make(mbk_vec3_add(mt_sym3_mul(&d->Bs, w.w), mbk_vec3_cross(w.w, d->hc.w)),
                                mbk_vec3_scale(mbk_vec3_cross(w.w, d->hc.v), 2.0));
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
