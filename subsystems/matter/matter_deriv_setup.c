/* The derivatives' setup (matter_deriv.h has the derivation): base to tip, each
 * body's velocity and acceleration in Ground and its joint's columns T, w and alpha;
 * each body's inertia, force and B about Ground's origin; then tip to base, the
 * subtree sums and each row's Yc S and Bc^T S. Everything the sweep reads. */
#include <string.h>

#include "mbk/status.h"
#include "matter_deriv.h"
#include "mt_v4.h"

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
