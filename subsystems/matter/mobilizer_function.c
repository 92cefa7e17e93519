/* Function-based mobilizer: six scalar functions of the mobilizer's q give
 * three rotation angles and three translations, as in Simbody's
 * MobilizedBody::FunctionBased (Simbody/src/MobilizedBodyImpl.h,
 * FunctionBasedImpl):
 *
 *   s_i = f_i(q[idx_i[0]], ..., q[idx_i[n_i - 1]])            i = 0..5
 *   R_FM = R(a0, s0) * R(a1, s1) * R(a2, s2)                   body-fixed sequence
 *   p_FM = s3 a3 + s4 a4 + s5 a5                               axes fixed in F
 *
 * R(a, s) is the right-handed rotation by s about the unit axis a. Each
 * rotation is about its axis in the frame the previous rotations produced,
 * so in F the three rotation axes are
 *
 *   e0 = a0,  e1 = R1 a1,  e2 = R2 a2,   R1 = R(a0, s0),  R2 = R1 R(a1, s1),
 *
 * and w_FM = sdot0 e0 + sdot1 e1 + sdot2 e2, v_FM = sdot3 a3 + sdot4 a4 +
 * sdot5 a5 (velocity of M's origin in F). With qdot = u and
 * ds_i/dq_k = sum over the arguments j of f_i reading q_k of df_i/dx_j:
 *
 *   H column k = ( sum_{i<3} ds_i/dq_k e_i ,  sum_{i>=3} ds_i/dq_k a_i )
 *
 * and the velocity-product part of A_FM (u fixed, q moving with qdot = u):
 *
 *   Hdot u = ( sum_{i<3} sdd_i e_i + sdot1 (w1 x e1) + sdot2 (w2 x e2) ,
 *              sum_{i>=3} sdd_i a_i )
 *   sdot_i = sum_j df_i/dx_j u[idx_i[j]]
 *   sdd_i  = sum_{j,l} d2f_i/dx_j dx_l u[idx_i[j]] u[idx_i[l]]
 *   w1 = sdot0 e0 (angular velocity of the once-rotated frame),
 *   w2 = w1 + sdot1 e1 (of the twice-rotated frame),
 *
 * since d/dt e1 = w1 x e1 and d/dt e2 = w2 x e2.
 *
 * X_FM and H agree with Simbody 3.7 to 1e-16 (checked with Simbody's own
 * FunctionBased). Hdot u differs from Simbody's when the rotation functions
 * share coordinates: Simbody forms w1 and w2 as H times u with entries of u
 * zeroed (u1.. for w1, u2 for w2), which equals the w1, w2 above when, for
 * example, rotation function i reads q_i alone, but not in general. With all
 * three angles functions of q0 (a one-coordinate knee) Simbody's angular
 * part is larger by sdot1 sdot2 (e2 x e1) (verified numerically); the
 * expression above matches finite differences of H u. */
#include <math.h>
#include <stdio.h>
#include <string.h>

#include "mbk/alloc.h"
#include "mbk/mobilizer.h"
#include "mbk/status.h"
#include "matter_impl.h"

enum { FB_NF = 6, FB_MAX_NQ = 6 };

/* Everything lives in one block: the functions (owned), their coordinate
   lists (in args[], after the struct) and the unit axes. */
typedef struct fb_impl {
    int nq;                   /* number of q = number of u (1..6) */
    mbk_function fn[FB_NF];   /* s_i = fn[i](...); owned, destroyed with the mobilizer */
    int n_args[FB_NF];        /* how many q each function reads */
    const int *idx[FB_NF];    /* which q, pointing into args[] */
    mbk_vec3 axis[FB_NF];     /* unit axes: rotations 0..2, translations 3..5 */
    int args[];               /* all coordinate lists, one after another */
} fb_impl;

/* ---- evaluation ----------------------------------------------------------- */

/* The arguments of function i at q. */
static void gather(const fb_impl *fb, int i, const double *q, double *x)
{
    for (int j = 0; j < fb->n_args[i]; ++j) x[j] = q[fb->idx[i][j]];
}

static double value_of(const fb_impl *fb, int i, const double *x)
{
    return fb->fn[i].ops->value(fb->fn[i].impl, x);
}

static double partial1(const fb_impl *fb, int i, int j, const double *x)
{
    const int comp[1] = {j};
    return fb->fn[i].ops->derivative(fb->fn[i].impl, comp, 1, x);
}

static double partial2(const fb_impl *fb, int i, int j, int l, const double *x)
{
    const int comp[2] = {j, l};
    return fb->fn[i].ops->derivative(fb->fn[i].impl, comp, 2, x);
}

/* R(a, s) for a unit axis a: cos s I + sin s [a]x + (1 - cos s) a a^T. */
static mbk_mat33 rot_about(mbk_vec3 a, double s)
{
    double c = cos(s), sn = sin(s);
    mbk_mat33 R = mbk_mat33_add(mbk_mat33_scale(mbk_mat33_identity(), c),
                                mbk_mat33_scale(mbk_mat33_skew(a), sn));
    return mbk_mat33_add(R, mbk_mat33_scale(mbk_mat33_outer(a, a), 1.0 - c));
}

/* The rotation axes in F (e0, e1, e2) from the first two angles; R2 optional. */
static void rotation_axes(const fb_impl *fb, double s0, double s1, mbk_vec3 e[3], mbk_mat33 *R2_out)
{
    mbk_mat33 R1 = rot_about(fb->axis[0], s0);
    mbk_mat33 R2 = mbk_mat33_mul(R1, rot_about(fb->axis[1], s1));
    e[0] = fb->axis[0];
    e[1] = mbk_mat33_mul_vec(R1, fb->axis[1]);
    e[2] = mbk_mat33_mul_vec(R2, fb->axis[2]);
    if (R2_out) *R2_out = R2;
}

/* ds_i/dq_k for every function i (rows) and coordinate k (columns); also s0, s1. */
static void spatial_partials(const fb_impl *fb, const double *q, double dsdq[FB_NF][FB_MAX_NQ],
                             double *s0, double *s1)
{
    double x[FB_MAX_NQ];
    memset(dsdq, 0, sizeof(double) * FB_NF * FB_MAX_NQ);
    for (int i = 0; i < FB_NF; ++i) {
        gather(fb, i, q, x);
        if (i == 0) *s0 = value_of(fb, 0, x);
        if (i == 1) *s1 = value_of(fb, 1, x);
        for (int j = 0; j < fb->n_args[i]; ++j) dsdq[i][fb->idx[i][j]] += partial1(fb, i, j, x);
    }
}

static void fb_X(const void *impl, bool euler, const double *q, mbk_transform *X)
{
    (void)euler;
    const fb_impl *fb = impl;
    double s[FB_NF], x[FB_MAX_NQ];
    for (int i = 0; i < FB_NF; ++i) {
        gather(fb, i, q, x);
        s[i] = value_of(fb, i, x);
    }
    mbk_mat33 R2;
    mbk_vec3 e[3];
    rotation_axes(fb, s[0], s[1], e, &R2);
    X->R = mbk_mat33_mul(R2, rot_about(fb->axis[2], s[2]));
    X->p = mbk_vec3_zero();
    for (int i = 3; i < FB_NF; ++i) X->p = mbk_vec3_add(X->p, mbk_vec3_scale(fb->axis[i], s[i]));
}

static void fb_H(const void *impl, bool euler, const double *q, mbk_spatial_vec *H)
{
    (void)euler;
    const fb_impl *fb = impl;
    double dsdq[FB_NF][FB_MAX_NQ], s0 = 0, s1 = 0;
    spatial_partials(fb, q, dsdq, &s0, &s1);
    mbk_vec3 e[3];
    rotation_axes(fb, s0, s1, e, NULL);
    for (int k = 0; k < fb->nq; ++k) {
        mbk_spatial_vec h = mbk_spatial_vec_zero();
        for (int i = 0; i < 3; ++i) h.w = mbk_vec3_add(h.w, mbk_vec3_scale(e[i], dsdq[i][k]));
        for (int i = 3; i < FB_NF; ++i) h.v = mbk_vec3_add(h.v, mbk_vec3_scale(fb->axis[i], dsdq[i][k]));
        H[k] = h;
    }
}

static void fb_Hdot_u(const void *impl, bool euler, const double *q, const double *u,
                      mbk_spatial_vec *Hdot_u)
{
    (void)euler;
    const fb_impl *fb = impl;
    double x[FB_MAX_NQ], sdot[FB_NF], sdd[FB_NF], s0 = 0, s1 = 0;
    for (int i = 0; i < FB_NF; ++i) {
        const int *id = fb->idx[i];
        int n = fb->n_args[i];
        gather(fb, i, q, x);
        if (i == 0) s0 = value_of(fb, 0, x);
        if (i == 1) s1 = value_of(fb, 1, x);
        sdot[i] = sdd[i] = 0.0;
        for (int j = 0; j < n; ++j) {
            sdot[i] += partial1(fb, i, j, x) * u[id[j]];
            for (int l = 0; l < n; ++l) sdd[i] += partial2(fb, i, j, l, x) * u[id[j]] * u[id[l]];
        }
    }
    mbk_vec3 e[3];
    rotation_axes(fb, s0, s1, e, NULL);
    mbk_vec3 w1 = mbk_vec3_scale(e[0], sdot[0]);
    mbk_vec3 w2 = mbk_vec3_add(w1, mbk_vec3_scale(e[1], sdot[1]));
    mbk_vec3 a = mbk_vec3_add(mbk_vec3_scale(mbk_vec3_cross(w1, e[1]), sdot[1]),
                              mbk_vec3_scale(mbk_vec3_cross(w2, e[2]), sdot[2]));
    for (int i = 0; i < 3; ++i) a = mbk_vec3_add(a, mbk_vec3_scale(e[i], sdd[i]));
    mbk_vec3 v = mbk_vec3_zero();
    for (int i = 3; i < FB_NF; ++i) v = mbk_vec3_add(v, mbk_vec3_scale(fb->axis[i], sdd[i]));
    Hdot_u->w = a;
    Hdot_u->v = v;
}

/* ---- fitting --------------------------------------------------------------- */

/* Least squares with a 6 x n matrix (column j = cols[j]): x minimizing |A x - b|.
   Householder QR with column pivoting; columns whose remaining norm is at most
   1e-12 of the largest are treated as dependent and get x = 0. Returns the rank.
   A[j] holds column j; as the factorization proceeds its rows 0..k hold R's
   column, and swapping whole columns keeps R consistent with the pivoting. */
static int lsq6(const mbk_spatial_vec *cols, int n, const mbk_spatial_vec *rhs, double *x)
{
    double A[FB_MAX_NQ][6], b[6], z[FB_MAX_NQ];
    int perm[FB_MAX_NQ], rank = 0;
    double big = 0.0;
    for (int j = 0; j < n; ++j) {
        memcpy(A[j], &cols[j], sizeof A[j]);
        perm[j] = j;
    }
    memcpy(b, rhs, sizeof b);
    for (int k = 0; k < n; ++k) {
        /* pivot: the column with the largest norm in rows k..5 */
        int p = k;
        double best = -1.0;
        for (int j = k; j < n; ++j) {
            double nn = 0.0;
            for (int r = k; r < 6; ++r) nn += A[j][r] * A[j][r];
            if (nn > best) { best = nn; p = j; }
        }
        double norm = sqrt(best);
        if (k == 0) big = norm;
        if (!(big > 0.0) || !(norm > 1e-12 * big)) break;
        if (p != k) {
            double t[6];
            memcpy(t, A[k], sizeof t); memcpy(A[k], A[p], sizeof t); memcpy(A[p], t, sizeof t);
            int ti = perm[k]; perm[k] = perm[p]; perm[p] = ti;
        }
        /* reflector v = A[k][k..5] - alpha e_k maps the column onto alpha e_k */
        double alpha = A[k][k] > 0 ? -norm : norm, v[6], vv = 0.0;
        for (int r = k; r < 6; ++r) v[r] = A[k][r];
        v[k] -= alpha;
        for (int r = k; r < 6; ++r) vv += v[r] * v[r];
        for (int j = k + 1; j < n; ++j) {
            double d = 0.0;
            for (int r = k; r < 6; ++r) d += v[r] * A[j][r];
            for (int r = k; r < 6; ++r) A[j][r] -= 2.0 * d / vv * v[r];
        }
        double d = 0.0;
        for (int r = k; r < 6; ++r) d += v[r] * b[r];
        for (int r = k; r < 6; ++r) b[r] -= 2.0 * d / vv * v[r];
        A[k][k] = alpha;
        for (int r = k + 1; r < 6; ++r) A[k][r] = 0.0;
        rank = k + 1;
    }
    /* back substitution with R[i][j] = A[j][i] */
    for (int k = rank - 1; k >= 0; --k) {
        double t = b[k];
        for (int j = k + 1; j < rank; ++j) t -= A[j][k] * z[j];
        z[k] = t / A[k][k];
    }
    for (int j = 0; j < n; ++j) x[perm[j]] = j < rank ? z[j] : 0.0;
    return rank;
}

/* u minimizing |H u - V_FM| (both parts weighted alike); exact when V_FM is
   a velocity this mobilizer can have at q. */
static int fb_fit_V(const void *impl, bool euler, const double *q, const mbk_spatial_vec *V, double *u)
{
    const fb_impl *fb = impl;
    mbk_spatial_vec H[FB_MAX_NQ];
    if (!mbk_vec3_is_finite(V->w) || !mbk_vec3_is_finite(V->v))
        return mbk_set_error(MBK_ENOTFINITE, "FunctionBased: cannot fit u to a V_FM that is not finite");
    fb_H(impl, euler, q, H);
    for (int k = 0; k < fb->nq; ++k)
        if (!mbk_vec3_is_finite(H[k].w) || !mbk_vec3_is_finite(H[k].v))
            return mbk_set_error(MBK_ENOTFINITE, "FunctionBased: H is not finite at this q (a "
                                 "function's first derivative is NaN or infinite); cannot fit u");
    double x[FB_MAX_NQ];
    lsq6(H, fb->nq, V, x);
    memcpy(u, x, (size_t)fb->nq * sizeof *u);
    return 0;
}

/* Pose error (rotation vector of R_target R^T, p_target - p), both in F. */
static mbk_spatial_vec pose_error(const mbk_transform *target, const mbk_transform *X)
{
    mbk_quat e = mbk_mat33_to_quat(mbk_mat33_mul_transpose(target->R, X->R));
    if (e.w < 0) e = mbk_quat_make(-e.w, -e.x, -e.y, -e.z);
    mbk_vec3 v = mbk_vec3_make(e.x, e.y, e.z);
    double sn = mbk_vec3_norm(v), angle = 2.0 * atan2(sn, e.w);
    mbk_vec3 rv = sn > 0.0 ? mbk_vec3_scale(v, angle / sn) : mbk_vec3_zero();
    return mbk_spatial_vec_make(rv, mbk_vec3_sub(target->p, X->p));
}

static double err_norm(mbk_spatial_vec e) { return sqrt(mbk_spatial_vec_dot(e, e)); }

/* Gauss-Newton from q = 0 on the pose error, with step halving: the q near 0
   whose X_FM fits the target best (exact when the target is reachable). */
static int fb_fit_X(const void *impl, bool euler, const mbk_transform *target, double *q)
{
    const fb_impl *fb = impl;
    int n = fb->nq;
    double qc[FB_MAX_NQ] = {0}, qt[FB_MAX_NQ], dq[FB_MAX_NQ];
    mbk_transform X;
    if (!mbk_mat33_is_finite(target->R) || !mbk_vec3_is_finite(target->p))
        return mbk_set_error(MBK_ENOTFINITE, "FunctionBased: cannot fit q to an X_FM that is not finite");
    fb_X(impl, euler, qc, &X);
    mbk_spatial_vec e = pose_error(target, &X);
    double en = err_norm(e);
    if (!isfinite(en))
        return mbk_set_error(MBK_ENOTFINITE, "FunctionBased: X_FM is not finite at q = 0; "
                             "cannot fit a transform");
    for (int it = 0; it < 100 && en > 1e-15; ++it) {
        mbk_spatial_vec H[FB_MAX_NQ];
        fb_H(impl, euler, qc, H);
        if (lsq6(H, n, &e, dq) == 0) break;
        double step = 1.0, en_new = en;
        mbk_spatial_vec e_new = e;
        for (int half = 0; half < 40; ++half, step *= 0.5) {
            for (int k = 0; k < n; ++k) qt[k] = qc[k] + step * dq[k];
            fb_X(impl, euler, qt, &X);
            e_new = pose_error(target, &X);
            en_new = err_norm(e_new);
            if (en_new < en) break;
        }
        if (!(en_new < en)) break; /* no decrease along the step: a (local) best fit */
        double dn = 0.0, qn = 0.0;
        for (int k = 0; k < n; ++k) {
            dn = fmax(dn, fabs(qt[k] - qc[k]));
            qn = fmax(qn, fabs(qt[k]));
            qc[k] = qt[k];
        }
        e = e_new;
        en = en_new;
        if (dn <= 1e-15 * (1.0 + qn)) break;
    }
    memcpy(q, qc, (size_t)n * sizeof *q);
    return 0;
}

/* ---- derivatives ----------------------------------------------------------- */

static double partial3(const fb_impl *fb, int i, int j, int l, int n, const double *x)
{
    const int comp[3] = {j, l, n};
    return fb->fn[i].ops->derivative(fb->fn[i].impl, comp, 3, x);
}

/* Whether every function has third derivatives (d(HDot u)/dq is then analytic). */
bool mt_fb_has_third_derivatives(const void *impl)
{
    const fb_impl *fb = impl;
    for (int i = 0; i < FB_NF; ++i)
        if (fb->fn[i].ops->max_derivative_order < 3 && fb->n_args[i] > 0) return false;
    return true;
}

/* The partials of s_i in q: S1[i][k] = ds_i/dq_k, S2[i][k][m], and S3 (when wanted). */
typedef struct fb_partials {
    double s[FB_NF];
    double S1[FB_NF][FB_MAX_NQ];
    double S2[FB_NF][FB_MAX_NQ][FB_MAX_NQ];
} fb_partials;

static void fb_all_partials(const fb_impl *fb, const double *q, fb_partials *P)
{
    double x[FB_MAX_NQ];
    memset(P, 0, sizeof *P);
    for (int i = 0; i < FB_NF; ++i) {
        const int *id = fb->idx[i];
        int n = fb->n_args[i];
        gather(fb, i, q, x);
        P->s[i] = value_of(fb, i, x);
        for (int j = 0; j < n; ++j) {
            P->S1[i][id[j]] = partial1(fb, i, j, x);
            for (int l = 0; l < n; ++l) P->S2[i][id[j]][id[l]] = partial2(fb, i, j, l, x);
        }
    }
}

/* sum_{k,n} d3 s_i / dq_k dq_n dq_m u_k u_n for function i. */
static double fb_third_uu(const fb_impl *fb, int i, int m, const double *q, const double *u)
{
    double x[FB_MAX_NQ], t = 0.0;
    const int *id = fb->idx[i];
    int n = fb->n_args[i], jm = -1;
    for (int j = 0; j < n; ++j)
        if (id[j] == m) jm = j;
    if (jm < 0) return 0.0;
    gather(fb, i, q, x);
    for (int j = 0; j < n; ++j)
        for (int l = 0; l < n; ++l) t += partial3(fb, i, j, l, jm, x) * u[id[j]] * u[id[l]];
    return t;
}

/* X_FM, H and HDot u differentiated through the functions' first, second and third
   partials (rotation axes e_i in F as in the notes at the top):
     dR/dq_m = [w_m x] R with w_m = sum_{i<3} ds_i/dq_m e_i,
     de1/dq_m = ds0/dq_m (e0 x e1),  de2/dq_m = (ds0/dq_m e0 + ds1/dq_m e1) x e2,
   and the products in HDot u differentiated term by term. Without third
   derivatives, d(HDot u)/dq is taken by central differences (numeric = 1). */
/* What the derivatives share: the rotation axes and their changes, and the
   functions' rates at (q, u). */
typedef struct fb_dctx {
    const fb_impl *fb;
    fb_partials P;                 /* the functions' first and second partials at q */
    mbk_vec3 e[3];                 /* the rotation axes in F */
    mbk_vec3 de[3][FB_MAX_NQ];     /* their derivatives along each q */
    mbk_mat33 R;                   /* R_FM */
    const double *w;               /* u (zeros for none) */
    double sdot[FB_NF], sdd[FB_NF];/* sdot_i = S1_i . u, sdd_i = u^T S2_i u */
    double S2u[FB_NF][FB_MAX_NQ];  /* S2_i u */
    mbk_vec3 w2;                   /* sdot0 e0 + sdot1 e1 */
    mbk_vec3 e01, w2e2;            /* e0 x e1, w2 x e2 */
} fb_dctx;

/* X_FM and H along each q: dR, dp and dH. */
static void fb_dX_dH(const fb_dctx *c, mbk_mobilizer_derivatives *d)
{
    const fb_impl *fb = c->fb;
    const int nq = fb->nq;
    for (int m = 0; m < nq; ++m) {
        mbk_vec3 wm = mbk_vec3_zero(), dp = mbk_vec3_zero();
        for (int i = 0; i < 3; ++i) wm = mbk_vec3_add(wm, mbk_vec3_scale(c->e[i], c->P.S1[i][m]));
        for (int i = 3; i < FB_NF; ++i) dp = mbk_vec3_add(dp, mbk_vec3_scale(fb->axis[i], c->P.S1[i][m]));
        d->dR[m] = mbk_mat33_mul(mbk_mat33_skew(wm), c->R);
        d->dp[m] = dp;
        for (int k = 0; k < nq; ++k) { /* d H_k / d q_m */
            mbk_spatial_vec h = mbk_spatial_vec_zero();
            for (int i = 0; i < 3; ++i)
                h.w = mbk_vec3_add(h.w, mbk_vec3_add(mbk_vec3_scale(c->e[i], c->P.S2[i][k][m]),
                                                     mbk_vec3_scale(c->de[i][m], c->P.S1[i][k])));
            for (int i = 3; i < FB_NF; ++i) h.v = mbk_vec3_add(h.v, mbk_vec3_scale(fb->axis[i], c->P.S2[i][k][m]));
            d->dH[m][k] = h;
        }
        for (int i = 0; i < nq; ++i) d->dqdot_dq[i][m] = 0.0;
    }
}

/* HDot u along each u: with a = sum_{i<3} sdd_i e_i + sdot1 sdot0 (e0 x e1) + sdot2 (w2 x e2)
   and v = sum sdd_i a_i, each term differentiated. */
static void fb_dHdotu_du(const fb_dctx *c, mbk_mobilizer_derivatives *d)
{
    const fb_impl *fb = c->fb;
    const mbk_vec3 *e = c->e;
    for (int m = 0; m < fb->nq; ++m) {
        double ds[FB_NF], dsd[FB_NF];
        for (int i = 0; i < FB_NF; ++i) {
            ds[i] = c->P.S1[i][m];
            dsd[i] = 2.0 * c->S2u[i][m];
        }
        mbk_vec3 a = mbk_vec3_scale(c->e01, ds[1] * c->sdot[0] + c->sdot[1] * ds[0]);
        a = mbk_vec3_add(a, mbk_vec3_scale(c->w2e2, ds[2]));
        mbk_vec3 dw2 = mbk_vec3_add(mbk_vec3_scale(e[0], ds[0]), mbk_vec3_scale(e[1], ds[1]));
        a = mbk_vec3_add(a, mbk_vec3_scale(mbk_vec3_cross(dw2, e[2]), c->sdot[2]));
        for (int i = 0; i < 3; ++i) a = mbk_vec3_add(a, mbk_vec3_scale(e[i], dsd[i]));
        mbk_vec3 v = mbk_vec3_zero();
        for (int i = 3; i < FB_NF; ++i) v = mbk_vec3_add(v, mbk_vec3_scale(fb->axis[i], dsd[i]));
        d->dHdot_u_du[m] = mbk_spatial_vec_make(a, v);
    }
}

/* HDot u along each q without third derivatives: central differences at h and h/2,
   Richardson extrapolated. */
static void fb_dHdotu_dq_numeric(const fb_dctx *c, bool euler, const double *q, mbk_mobilizer_derivatives *d)
{
    const int nq = c->fb->nq;
    for (int m = 0; m < nq; ++m) {
        double qp[FB_MAX_NQ], h0 = 1e-3 * fmax(1.0, fabs(q[m]));
        mbk_spatial_vec D[2];
        for (int r = 0; r < 2; ++r) {
            double h = r ? 0.5 * h0 : h0;
            mbk_spatial_vec fp, fm;
            memcpy(qp, q, (size_t)nq * sizeof *qp);
            qp[m] = q[m] + h;
            fb_Hdot_u(c->fb, euler, qp, c->w, &fp);
            qp[m] = q[m] - h;
            fb_Hdot_u(c->fb, euler, qp, c->w, &fm);
            D[r] = mbk_spatial_vec_scale(mbk_spatial_vec_sub(fp, fm), 0.5 / h);
        }
        d->dHdot_u_dq[m] = mbk_spatial_vec_sub(mbk_spatial_vec_scale(D[1], 4.0 / 3.0),
                                               mbk_spatial_vec_scale(D[0], 1.0 / 3.0));
    }
    d->numeric = 1;
}

/* HDot u along each q from the third partials: the terms of a and v differentiated,
   the axes' changes included. */
static void fb_dHdotu_dq(const fb_dctx *c, const double *q, mbk_mobilizer_derivatives *d)
{
    const fb_impl *fb = c->fb;
    const mbk_vec3 *e = c->e;
    const double *sdot = c->sdot;
    for (int m = 0; m < fb->nq; ++m) {
        double dsdot[FB_NF], dsdd[FB_NF];
        for (int i = 0; i < FB_NF; ++i) {
            dsdot[i] = c->S2u[i][m];
            dsdd[i] = fb_third_uu(fb, i, m, q, c->w);
        }
        mbk_vec3 a = mbk_vec3_zero();
        for (int i = 0; i < 3; ++i)
            a = mbk_vec3_add(a, mbk_vec3_add(mbk_vec3_scale(e[i], dsdd[i]), mbk_vec3_scale(c->de[i][m], c->sdd[i])));
        a = mbk_vec3_add(a, mbk_vec3_scale(c->e01, dsdot[1] * sdot[0] + sdot[1] * dsdot[0]));
        a = mbk_vec3_add(a, mbk_vec3_scale(mbk_vec3_cross(e[0], c->de[1][m]), sdot[1] * sdot[0]));
        a = mbk_vec3_add(a, mbk_vec3_scale(c->w2e2, dsdot[2]));
        mbk_vec3 dw2 = mbk_vec3_add(mbk_vec3_add(mbk_vec3_scale(e[0], dsdot[0]), mbk_vec3_scale(e[1], dsdot[1])),
                                    mbk_vec3_scale(c->de[1][m], sdot[1]));
        a = mbk_vec3_add(a, mbk_vec3_scale(mbk_vec3_add(mbk_vec3_cross(dw2, e[2]), mbk_vec3_cross(c->w2, c->de[2][m])),
                                           sdot[2]));
        mbk_vec3 v = mbk_vec3_zero();
        for (int i = 3; i < FB_NF; ++i) v = mbk_vec3_add(v, mbk_vec3_scale(fb->axis[i], dsdd[i]));
        d->dHdot_u_dq[m] = mbk_spatial_vec_make(a, v);
    }
}

/* X_FM, H and HDot u differentiated through the functions' first, second and third
   partials (rotation axes e_i in F as in the notes at the top):
     dR/dq_m = [w_m x] R with w_m = sum_{i<3} ds_i/dq_m e_i,
     de1/dq_m = ds0/dq_m (e0 x e1),  de2/dq_m = (ds0/dq_m e0 + ds1/dq_m e1) x e2,
   and the products in HDot u differentiated term by term. Without third
   derivatives, d(HDot u)/dq is taken by central differences (numeric = 1). */
static int fb_derivs(const void *impl, bool euler, const double *q, const double *u, mbk_mobilizer_derivatives *d)
{
    static const double zero[FB_MAX_NQ] = {0};
    fb_dctx c;
    c.fb = impl;
    c.w = u ? u : zero;
    const int nq = c.fb->nq;
    fb_all_partials(c.fb, q, &c.P);
    mbk_mat33 R2;
    rotation_axes(c.fb, c.P.s[0], c.P.s[1], c.e, &R2);
    c.R = mbk_mat33_mul(R2, rot_about(c.fb->axis[2], c.P.s[2]));
    for (int m = 0; m < nq; ++m) { /* the axes along q_m */
        c.de[0][m] = mbk_vec3_zero();
        c.de[1][m] = mbk_vec3_scale(mbk_vec3_cross(c.e[0], c.e[1]), c.P.S1[0][m]);
        c.de[2][m] = mbk_vec3_cross(mbk_vec3_add(mbk_vec3_scale(c.e[0], c.P.S1[0][m]), mbk_vec3_scale(c.e[1], c.P.S1[1][m])),
                                    c.e[2]);
    }
    fb_dX_dH(&c, d);
    /* rates: sdot_i = S1_i . u, sdd_i = u^T S2_i u, and (S2_i u) */
    for (int i = 0; i < FB_NF; ++i) {
        c.sdot[i] = c.sdd[i] = 0.0;
        for (int k = 0; k < nq; ++k) {
            c.sdot[i] += c.P.S1[i][k] * c.w[k];
            c.S2u[i][k] = 0.0;
            for (int l = 0; l < nq; ++l) c.S2u[i][k] += c.P.S2[i][k][l] * c.w[l];
            c.sdd[i] += c.S2u[i][k] * c.w[k];
        }
    }
    c.w2 = mbk_vec3_add(mbk_vec3_scale(c.e[0], c.sdot[0]), mbk_vec3_scale(c.e[1], c.sdot[1]));
    c.e01 = mbk_vec3_cross(c.e[0], c.e[1]);
    c.w2e2 = mbk_vec3_cross(c.w2, c.e[2]);
    fb_dHdotu_du(&c, d);
    if (!mt_fb_has_third_derivatives(impl)) fb_dHdotu_dq_numeric(&c, euler, q, d);
    else fb_dHdotu_dq(&c, q, d);
    return 0;
}

/* ---- ops tables, one per nq (nu = nq; qdot = u, so N, NDot are identities) --- */

static void fb_destroy(void *impl)
{
    fb_impl *fb = impl;
    if (!fb) return;
    for (int i = 0; i < FB_NF; ++i) mbk_function_destroy(&fb->fn[i]);
    mbk_free(fb);
}

#define FB_OPS(N)                                                                          \
    {.name = "FunctionBased", .nu = (N), .nq = (N), .calc_X_FM = fb_X, .calc_H_FM = fb_H, \
     .calc_Hdot_u = fb_Hdot_u, .set_q_to_fit_transform = fb_fit_X,                         \
     .set_u_to_fit_velocity = fb_fit_V, .destroy = fb_destroy, .calc_derivatives = fb_derivs}

static const mbk_mobilizer_ops fb_ops[FB_MAX_NQ] = {FB_OPS(1), FB_OPS(2), FB_OPS(3),
                                                    FB_OPS(4), FB_OPS(5), FB_OPS(6)};

/* ---- construction ---------------------------------------------------------- */

static const char *const slot_name[FB_NF] = {"rotation 0", "rotation 1", "rotation 2",
                                             "translation 0", "translation 1", "translation 2"};

/* Pairwise |a x b| of unit axes must exceed this (Simbody's tolerance). */
#define FB_PARALLEL_TOL 1e-5

/* Destroy every distinct function once (slots sharing an impl are destroyed once). */
static void destroy_all(const mbk_function fns[FB_NF])
{
    for (int i = 0; i < FB_NF; ++i) {
        bool seen = false;
        for (int j = 0; j < i && fns[i].impl; ++j) seen = seen || fns[j].impl == fns[i].impl;
        if (seen) continue;
        mbk_function f = fns[i];
        mbk_function_destroy(&f);
    }
}

/* The failed result; the error is already recorded. */
static mbk_mobilizer fail(const mbk_function fns[FB_NF])
{
    mbk_mobilizer m = {NULL, NULL};
    if (fns) destroy_all(fns);
    return m;
}

/* Check everything; MBK_OK or MBK_EINVAL with a message. */
static int validate(int nq, const mbk_function fns[FB_NF], const int *const coord_indices[FB_NF],
                    const int n_coords[FB_NF], const mbk_vec3 unit[FB_NF], const mbk_vec3 *axes)
{
    const char *fn = "mbk_mobilizer_function_based";
    if (!fns) return mbk_set_error(MBK_EINVAL, "%s: fns is NULL; pass 6 functions", fn);
    if (nq < 1 || nq > FB_MAX_NQ)
        return mbk_set_error(MBK_EINVAL, "%s: nq = %d; need 1..6 coordinates", fn, nq);
    if (!n_coords) return mbk_set_error(MBK_EINVAL, "%s: n_coords is NULL; pass 6 counts", fn);
    for (int i = 0; i < FB_NF; ++i)
        for (int j = 0; j < i; ++j)
            if (fns[i].impl && fns[i].impl == fns[j].impl)
                return mbk_set_error(MBK_EINVAL, "%s: fns[%d] and fns[%d] are the same function; the "
                                     "mobilizer owns and destroys each one, so pass a separate "
                                     "function for every slot", fn, j, i);
    bool used[FB_MAX_NQ] = {false};
    for (int i = 0; i < FB_NF; ++i) {
        if (mbk_function_check(&fns[i], 2) != MBK_OK) {
            char why[MBK_ERROR_MAX];
            snprintf(why, sizeof why, "%s", mbk_last_error());
            return mbk_set_error(MBK_EINVAL, "%s: fns[%d] (%s): %s; each function needs value, "
                                 "first and second derivatives", fn, i, slot_name[i], why);
        }
        int n = n_coords[i];
        if (n < 0 || n > nq)
            return mbk_set_error(MBK_EINVAL, "%s: n_coords[%d] = %d; need 0..nq (%d) distinct "
                                 "coordinates", fn, i, n, nq);
        if (n != fns[i].ops->n_args)
            return mbk_set_error(MBK_EINVAL, "%s: fns[%d] (%s) takes %d argument(s) but n_coords[%d] "
                                 "= %d", fn, i, slot_name[i], fns[i].ops->n_args, i, n);
        if (n > 0 && (!coord_indices || !coord_indices[i]))
            return mbk_set_error(MBK_EINVAL, "%s: coord_indices[%d] is NULL but n_coords[%d] = %d",
                                 fn, i, i, n);
        for (int j = 0; j < n; ++j) {
            int k = coord_indices[i][j];
            if (k < 0 || k >= nq)
                return mbk_set_error(MBK_EINVAL, "%s: coord_indices[%d][%d] = %d is outside [0, %d)",
                                     fn, i, j, k, nq);
            for (int l = 0; l < j; ++l)
                if (coord_indices[i][l] == k)
                    return mbk_set_error(MBK_EINVAL, "%s: coord_indices[%d] lists q%d twice; a "
                                         "function reads each coordinate at most once", fn, i, k);
            used[k] = true;
        }
    }
    for (int k = 0; k < nq; ++k)
        if (!used[k])
            return mbk_set_error(MBK_EINVAL, "%s: no function reads q%d, so its mobility would not "
                                 "move the body (a zero column of H); use nq = the number of "
                                 "coordinates the functions read", fn, k);
    if (axes) {
        for (int i = 0; i < FB_NF; ++i)
            if (!mbk_vec3_is_finite(axes[i]) || !(mbk_vec3_norm(axes[i]) > 0.0))
                return mbk_set_error(MBK_EINVAL, "%s: axes[%d] (%s) must be finite and nonzero",
                                     fn, i, slot_name[i]);
        for (int g = 0; g < FB_NF; g += 3)
            for (int i = g; i < g + 3; ++i)
                for (int j = g; j < i; ++j)
                    if (!(mbk_vec3_norm(mbk_vec3_cross(unit[i], unit[j])) > FB_PARALLEL_TOL))
                        return mbk_set_error(MBK_EINVAL, "%s: axes[%d] and axes[%d] (%s, %s) are "
                                             "parallel; the three %s axes must be pairwise "
                                             "non-parallel", fn, j, i, slot_name[j], slot_name[i],
                                             g ? "translation" : "rotation");
    }
    return MBK_OK;
}

mbk_mobilizer mbk_mobilizer_function_based(int nq, const mbk_function fns[6],
                                           const int *const coord_indices[6],
                                           const int n_coords[6], const mbk_vec3 axes[6])
{
    mbk_vec3 unit[FB_NF];
    for (int i = 0; i < FB_NF; ++i) {
        mbk_vec3 d = mbk_vec3_make(i % 3 == 0, i % 3 == 1, i % 3 == 2);
        unit[i] = axes ? mbk_vec3_normalize(axes[i]) : d;
    }
    if (validate(nq, fns, coord_indices, n_coords, unit, axes) != MBK_OK) return fail(fns);
    int total = 0;
    for (int i = 0; i < FB_NF; ++i) total += n_coords[i];
    fb_impl *fb = mbk_malloc(sizeof *fb + (size_t)total * sizeof(int));
    if (!fb) {
        mbk_set_error(MBK_ENOMEM, "mbk_mobilizer_function_based: out of memory");
        return fail(fns);
    }
    fb->nq = nq;
    int at = 0;
    for (int i = 0; i < FB_NF; ++i) {
        fb->fn[i] = fns[i];
        fb->n_args[i] = n_coords[i];
        fb->idx[i] = fb->args + at;
        if (n_coords[i] > 0) memcpy(fb->args + at, coord_indices[i], (size_t)n_coords[i] * sizeof(int));
        at += n_coords[i];
        fb->axis[i] = unit[i];
    }
    mbk_mobilizer m = {&fb_ops[nq - 1], fb};
    return m;
}

bool mt_mobilizer_derivatives_exact(const mbk_mobilizer *mob)
{
    if (!mob->ops->calc_derivatives) return false;
    if (mob->ops >= fb_ops && mob->ops < fb_ops + FB_MAX_NQ) return mt_fb_has_third_derivatives(mob->impl);
    return true;
}
