/* Symmetric inertias stored by their unique entries, and the kernels the
 * O(n) sweeps run on them. Private to the matter subsystem.
 *
 * A spatial inertia about a point is the symmetric 6x6 [[A, B], [B^T, D]]
 * acting on (angular, linear) motion: 6 + 9 + 6 = 21 numbers instead of 36
 * (mt_inertia, for articulated inertias). A rigid or composite rigid body's
 * needs only 10: mass, first mass moment and inertia (mt_composite). */
#ifndef MBK_MT_INERTIA_H
#define MBK_MT_INERTIA_H

#include "mbk/spatial.h"

/* Symmetric 3x3 matrix. */
typedef struct mt_sym3 {
    double xx, yy, zz; /* diagonal */
    double xy, xz, yz; /* off-diagonal (each stands for both halves) */
} mt_sym3;

/* Symmetric spatial inertia [[A, B], [B^T, D]] about a point, all in one frame. */
typedef struct mt_inertia {
    mt_sym3 A;   /* angular-angular block */
    mbk_mat33 B; /* angular-linear block (the linear-angular block is its transpose) */
    mt_sym3 D;   /* linear-linear block */
} mt_inertia;

/* The unique entries of a 3x3 matrix taken as symmetric (upper triangle). */
static inline mt_sym3 mt_sym3_of(const mbk_mat33 *S)
{
    mt_sym3 r = {S->m[0][0], S->m[1][1], S->m[2][2], S->m[0][1], S->m[0][2], S->m[1][2]};
    return r;
}

/* The full 3x3 matrix. */
static inline mbk_mat33 mt_sym3_full(const mt_sym3 *S)
{
    mbk_mat33 r = {{{S->xx, S->xy, S->xz}, {S->xy, S->yy, S->yz}, {S->xz, S->yz, S->zz}}};
    return r;
}

/* S v */
static inline mbk_vec3 mt_sym3_mul(const mt_sym3 *S, mbk_vec3 v)
{
    return mbk_vec3_make(S->xx * v.x + S->xy * v.y + S->xz * v.z,
                         S->xy * v.x + S->yy * v.y + S->yz * v.z,
                         S->xz * v.x + S->yz * v.y + S->zz * v.z);
}

/* R S R^T: M = R S once, then only the six unique entries of M R^T. */
static inline mt_sym3 mt_sym3_rotate(const mbk_mat33 *R, const mt_sym3 *S)
{
    double M[3][3];
    for (int i = 0; i < 3; ++i) {
        const double *r = R->m[i];
        M[i][0] = r[0] * S->xx + r[1] * S->xy + r[2] * S->xz;
        M[i][1] = r[0] * S->xy + r[1] * S->yy + r[2] * S->yz;
        M[i][2] = r[0] * S->xz + r[1] * S->yz + r[2] * S->zz;
    }
#define MT_ROW_DOT(i, j) (M[i][0] * R->m[j][0] + M[i][1] * R->m[j][1] + M[i][2] * R->m[j][2])
    mt_sym3 out = {MT_ROW_DOT(0, 0), MT_ROW_DOT(1, 1), MT_ROW_DOT(2, 2),
                   MT_ROW_DOT(0, 1), MT_ROW_DOT(0, 2), MT_ROW_DOT(1, 2)};
#undef MT_ROW_DOT
    return out;
}

/* R S R^T for a diagonal S (an inertia on its principal axes, the usual case):
   entry (i, j) is sum_k R_ik S_kk R_jk, half the work of mt_sym3_rotate. */
static inline mt_sym3 mt_sym3_rotate_diagonal(const mbk_mat33 *R, const mt_sym3 *S)
{
    double t[3][3];
    for (int i = 0; i < 3; ++i) {
        t[i][0] = R->m[i][0] * S->xx;
        t[i][1] = R->m[i][1] * S->yy;
        t[i][2] = R->m[i][2] * S->zz;
    }
#define MT_ROW_DOT(i, j) (t[i][0] * R->m[j][0] + t[i][1] * R->m[j][1] + t[i][2] * R->m[j][2])
    mt_sym3 out = {MT_ROW_DOT(0, 0), MT_ROW_DOT(1, 1), MT_ROW_DOT(2, 2),
                   MT_ROW_DOT(0, 1), MT_ROW_DOT(0, 2), MT_ROW_DOT(1, 2)};
#undef MT_ROW_DOT
    return out;
}

/* P V = (A w + B v, B^T w + D v), through a pointer: no 168-byte copies. */
static inline mbk_spatial_vec mt_inertia_mul(const mt_inertia *P, const mbk_spatial_vec *V)
{
    const double(*B)[3] = P->B.m;
    mbk_vec3 w = V->w, v = V->v;
    mbk_spatial_vec r;
    r.w = mbk_vec3_add(mt_sym3_mul(&P->A, w),
                       mbk_vec3_make(B[0][0] * v.x + B[0][1] * v.y + B[0][2] * v.z,
                                     B[1][0] * v.x + B[1][1] * v.y + B[1][2] * v.z,
                                     B[2][0] * v.x + B[2][1] * v.y + B[2][2] * v.z));
    r.v = mbk_vec3_add(mt_sym3_mul(&P->D, v),
                       mbk_vec3_make(B[0][0] * w.x + B[1][0] * w.y + B[2][0] * w.z,
                                     B[0][1] * w.x + B[1][1] * w.y + B[2][1] * w.z,
                                     B[0][2] * w.x + B[1][2] * w.y + B[2][2] * w.z));
    return r;
}

/* A rigid body's inertia about its origin: [[I, m c~], [-m c~, m 1]] with c the
   centre of mass from the origin; I is about the origin too. */
static inline void mt_inertia_set_rigid(mt_inertia *P, const mt_sym3 *I, double mass, mbk_vec3 c)
{
    mbk_vec3 mc = mbk_vec3_scale(c, mass);
    P->A = *I;
    P->B.m[0][0] = 0.0;   P->B.m[0][1] = -mc.z; P->B.m[0][2] = mc.y;
    P->B.m[1][0] = mc.z;  P->B.m[1][1] = 0.0;   P->B.m[1][2] = -mc.x;
    P->B.m[2][0] = -mc.y; P->B.m[2][1] = mc.x;  P->B.m[2][2] = 0.0;
    P->D.xx = P->D.yy = P->D.zz = mass;
    P->D.xy = P->D.xz = P->D.yz = 0.0;
}

/* S - the upper triangle of g h^T (a symmetric update when g and h are parallel). */
static inline mt_sym3 mt_sym3_minus_outer(const mt_sym3 *S, const double g[3], const double h[3])
{
    mt_sym3 r = {S->xx - g[0] * h[0], S->yy - g[1] * h[1], S->zz - g[2] * h[2],
                 S->xy - g[0] * h[1], S->xz - g[0] * h[2], S->yz - g[1] * h[2]};
    return r;
}

/* P+ = P - g h^T with g = h / d, the articulated inertia a one-dof joint passes
   on (symmetric because g and h are parallel). */
static inline void mt_inertia_downdate(mt_inertia *Pplus, const mt_inertia *P, const mbk_spatial_vec *g,
                                       const mbk_spatial_vec *h)
{
    const double gw[3] = {g->w.x, g->w.y, g->w.z}, gv[3] = {g->v.x, g->v.y, g->v.z};
    const double hw[3] = {h->w.x, h->w.y, h->w.z}, hv[3] = {h->v.x, h->v.y, h->v.z};
    Pplus->A = mt_sym3_minus_outer(&P->A, gw, hw);
    for (int i = 0; i < 3; ++i)
        for (int j = 0; j < 3; ++j) Pplus->B.m[i][j] = P->B.m[i][j] - gw[i] * hv[j];
    Pplus->D = mt_sym3_minus_outer(&P->D, gv, hv);
}

/* S taken from a child's origin to its parent's, r = r_PB from the parent's
   origin to the child's. With r~ = skew(r) and T = B + r~ D the shifted
   inertia is [[A + r~ B^T - T r~, T], [T^T, D]]; entry (i, j) of the angular
   block is A_ij + (r x B_j)_i + (r x T_i)_j with B_j, T_i rows. */
static inline mt_inertia mt_inertia_shifted(const mt_inertia *S, mbk_vec3 r)
{
    const double(*B)[3] = S->B.m;
    const mbk_mat33 D = mt_sym3_full(&S->D);
    double rb[3][3], rt[3][3];
    mt_inertia out;
    for (int j = 0; j < 3; ++j) { /* column j of r~ D */
        mbk_vec3 kd = mbk_vec3_cross(r, mbk_vec3_make(D.m[0][j], D.m[1][j], D.m[2][j]));
        out.B.m[0][j] = B[0][j] + kd.x; out.B.m[1][j] = B[1][j] + kd.y; out.B.m[2][j] = B[2][j] + kd.z;
    }
    const double(*T)[3] = (const double(*)[3])out.B.m;
    for (int i = 0; i < 3; ++i) {
        mbk_vec3 a = mbk_vec3_cross(r, mbk_vec3_make(B[i][0], B[i][1], B[i][2]));
        mbk_vec3 b = mbk_vec3_cross(r, mbk_vec3_make(T[i][0], T[i][1], T[i][2]));
        rb[i][0] = a.x; rb[i][1] = a.y; rb[i][2] = a.z; /* rb[j][i] = (r x B_j)_i */
        rt[i][0] = b.x; rt[i][1] = b.y; rt[i][2] = b.z; /* rt[i][j] = (r x T_i)_j */
    }
    out.A.xx = S->A.xx + rb[0][0] + rt[0][0];
    out.A.yy = S->A.yy + rb[1][1] + rt[1][1];
    out.A.zz = S->A.zz + rb[2][2] + rt[2][2];
    out.A.xy = S->A.xy + rb[1][0] + rt[0][1];
    out.A.xz = S->A.xz + rb[2][0] + rt[0][2];
    out.A.yz = S->A.yz + rb[2][1] + rt[1][2];
    out.D = S->D;
    return out;
}

/* P += S */
static inline void mt_inertia_add(mt_inertia *P, const mt_inertia *S)
{
    P->A.xx += S->A.xx; P->A.yy += S->A.yy; P->A.zz += S->A.zz;
    P->A.xy += S->A.xy; P->A.xz += S->A.xz; P->A.yz += S->A.yz;
    for (int i = 0; i < 3; ++i)
        for (int j = 0; j < 3; ++j) P->B.m[i][j] += S->B.m[i][j];
    P->D.xx += S->D.xx; P->D.yy += S->D.yy; P->D.zz += S->D.zz;
    P->D.xy += S->D.xy; P->D.xz += S->D.xz; P->D.yz += S->D.yz;
}

/* Pp += S taken from a child's origin to its parent's (r = r_PB). */
static inline void mt_inertia_add_shifted(mt_inertia *Pp, const mt_inertia *S, mbk_vec3 r)
{
    mt_inertia shifted = mt_inertia_shifted(S, r);
    mt_inertia_add(Pp, &shifted);
}

/* A rigid (or composite rigid) body's spatial inertia about a point, by its
   10 numbers: mass, first mass moment and inertia about the point. Shifting
   it costs a quarter of shifting a general articulated inertia. */
typedef struct mt_composite {
    double m;  /* mass */
    mbk_vec3 h; /* m c, c the centre of mass from the point */
    mt_sym3 I; /* inertia about the point */
} mt_composite;

/* P += S taken from a child's origin to its parent's, r = r_PB from the
   parent's origin to the child's (parallel axes: I' = I + (2 h.r + m r.r) 1
   - (h r^T + r h^T) - m r r^T, h' = h + m r). */
static inline void mt_composite_add_shifted(mt_composite *P, const mt_composite *S, mbk_vec3 r)
{
    mbk_vec3 h = S->h, mr = mbk_vec3_scale(r, S->m);
    double sdiag = 2.0 * mbk_vec3_dot(h, r) + mbk_vec3_dot(mr, r);
    P->m += S->m;
    P->h = mbk_vec3_add(P->h, mbk_vec3_add(h, mr));
    P->I.xx += S->I.xx + sdiag - 2.0 * h.x * r.x - mr.x * r.x;
    P->I.yy += S->I.yy + sdiag - 2.0 * h.y * r.y - mr.y * r.y;
    P->I.zz += S->I.zz + sdiag - 2.0 * h.z * r.z - mr.z * r.z;
    P->I.xy += S->I.xy - h.x * r.y - r.x * h.y - mr.x * r.y;
    P->I.xz += S->I.xz - h.x * r.z - r.x * h.z - mr.x * r.z;
    P->I.yz += S->I.yz - h.y * r.z - r.y * h.z - mr.y * r.z;
}

/* The momentum (I w + h x v, m v - h x w) of motion V = (w, v) at the point. */
static inline mbk_spatial_vec mt_composite_mul(const mt_composite *R, const mbk_spatial_vec *V)
{
    mbk_spatial_vec f;
    f.w = mbk_vec3_add(mt_sym3_mul(&R->I, V->w), mbk_vec3_cross(R->h, V->v));
    f.v = mbk_vec3_sub(mbk_vec3_scale(V->v, R->m), mbk_vec3_cross(R->h, V->w));
    return f;
}

#endif
