/* Helpers shared by the built-in mobilizers (mobilizers.c, mobilizers_more.c).
 * Private to the matter subsystem. */
#ifndef MBK_MOBILIZER_UTIL_H
#define MBK_MOBILIZER_UTIL_H

#include <math.h>
#include <string.h>

#include "mbk/mobilizer.h"
#include "mbk/spatial.h"

/* Columns first..first+n-1 of H: unit angular (angular != 0) or linear axes x, y, z. */
static inline void set_unit_columns(mbk_spatial_vec *H, int angular, int first, int n)
{
    for (int j = 0; j < n; ++j) {
        double *w = &H[first + j].w.x, *v = &H[first + j].v.x;
        memset(&H[first + j], 0, sizeof H[first + j]);
        (angular ? w : v)[j] = 1.0;
    }
}

static inline mbk_vec3 vec3_of(const double *a) { return mbk_vec3_make(a[0], a[1], a[2]); }

static inline void put_vec3(double *a, mbk_vec3 v)
{
    a[0] = v.x;
    a[1] = v.y;
    a[2] = v.z;
}

/* W(q) maps body-xyz angle rates to w_FM in F. */
static inline mbk_mat33 euler_W(const double *q)
{
    double s0 = sin(q[0]), c0 = cos(q[0]), s1 = sin(q[1]), c1 = cos(q[1]);
    mbk_mat33 W = {{{1, 0, s1}, {0, c0, -s0 * c1}, {0, s0, c0 * c1}}};
    return W;
}

/* dW/dt for angle rates qd. */
static inline mbk_mat33 euler_Wdot(const double *q, const double *qd)
{
    double s0 = sin(q[0]), c0 = cos(q[0]), s1 = sin(q[1]), c1 = cos(q[1]);
    mbk_mat33 D = {{{0, 0, c1 * qd[1]},
                    {0, -s0 * qd[0], -c0 * c1 * qd[0] + s0 * s1 * qd[1]},
                    {0, c0 * qd[0], -s0 * c1 * qd[0] - c0 * s1 * qd[1]}}};
    return D;
}

/* dW/dq_k for k = 0..2 (dW/dq2 = 0): column j of W is the axis of angle j in F. */
static inline void euler_dW(const double *q, mbk_mat33 dW[3])
{
    double s0 = sin(q[0]), c0 = cos(q[0]), s1 = sin(q[1]), c1 = cos(q[1]);
    mbk_mat33 d0 = {{{0, 0, 0}, {0, -s0, -c0 * c1}, {0, c0, -s0 * c1}}};
    mbk_mat33 d1 = {{{0, 0, c1}, {0, 0, s0 * s1}, {0, 0, -c0 * s1}}};
    dW[0] = d0;
    dW[1] = d1;
    memset(&dW[2], 0, sizeof dW[2]);
}

/* d2W/dq_k dq_m for k, m = 0..2 (zero when either is 2). */
static inline void euler_ddW(const double *q, mbk_mat33 ddW[3][3])
{
    double s0 = sin(q[0]), c0 = cos(q[0]), s1 = sin(q[1]), c1 = cos(q[1]);
    mbk_mat33 d00 = {{{0, 0, 0}, {0, -c0, s0 * c1}, {0, -s0, -c0 * c1}}};
    mbk_mat33 d01 = {{{0, 0, 0}, {0, 0, c0 * s1}, {0, 0, s0 * s1}}};
    mbk_mat33 d11 = {{{0, 0, -s1}, {0, 0, s0 * c1}, {0, 0, -c0 * c1}}};
    memset(ddW, 0, 9 * sizeof(mbk_mat33));
    ddW[0][0] = d00;
    ddW[0][1] = ddW[1][0] = d01;
    ddW[1][1] = d11;
}

/* Zero the entries of d an op with nq coordinates and nu speeds fills in. */
static inline void deriv_clear(mbk_mobilizer_derivatives *d, int nq, int nu)
{
    for (int k = 0; k < nq; ++k) {
        memset(&d->dR[k], 0, sizeof d->dR[k]);
        d->dp[k] = mbk_vec3_zero();
        for (int j = 0; j < nu; ++j) d->dH[k][j] = mbk_spatial_vec_zero();
        d->dHdot_u_dq[k] = mbk_spatial_vec_zero();
        for (int i = 0; i < nq; ++i) d->dqdot_dq[i][k] = 0.0;
    }
    for (int j = 0; j < nu; ++j) d->dHdot_u_du[j] = mbk_spatial_vec_zero();
}

/* Body-fixed XYZ angles a[0..n) (n = 2 or 3, the others 0) starting at q index k0:
   dR/dq_{k0+k} = [W_k x] R. */
static inline void euler_rotation_derivs(const double *a, int n, int k0, mbk_mobilizer_derivatives *d)
{
    double full[3] = {a[0], a[1], n > 2 ? a[2] : 0.0};
    mbk_mat33 W = euler_W(full), R = mbk_mat33_from_body_xyz(vec3_of(full));
    for (int k = 0; k < n; ++k) d->dR[k0 + k] = mbk_mat33_mul(mbk_mat33_skew(mbk_mat33_column(W, k)), R);
}

/* HDot u = sum_{j,k} dW_j/dq_k u_j u_k over angles 0..n-1 (u = angle rates), and its
   derivatives: with respect to u_l into du[l], to q_m into dq[m] (l, m < n). */
static inline mbk_vec3 euler_hdot(const double *q, const double *u, int n, mbk_vec3 *du, mbk_vec3 *dq)
{
    double a[3] = {q[0], q[1], n > 2 ? q[2] : 0.0}, w[3] = {u[0], u[1], n > 2 ? u[2] : 0.0};
    mbk_mat33 dW[3], ddW[3][3];
    euler_dW(a, dW);
    euler_ddW(a, ddW);
    mbk_vec3 uv = vec3_of(w), hd = mbk_vec3_zero();
    for (int k = 0; k < 3; ++k) hd = mbk_vec3_add(hd, mbk_vec3_scale(mbk_mat33_mul_vec(dW[k], uv), w[k]));
    for (int l = 0; l < n; ++l) {
        /* sum_j dW_j/dq_l u_j + sum_k dW_l/dq_k u_k */
        mbk_vec3 t = mbk_mat33_mul_vec(dW[l], uv);
        for (int k = 0; k < 3; ++k) t = mbk_vec3_add(t, mbk_vec3_scale(mbk_mat33_column(dW[k], l), w[k]));
        du[l] = t;
    }
    for (int m = 0; m < n; ++m) {
        mbk_vec3 t = mbk_vec3_zero();
        for (int k = 0; k < 3; ++k) t = mbk_vec3_add(t, mbk_vec3_scale(mbk_mat33_mul_vec(ddW[k][m], uv), w[k]));
        dq[m] = t;
    }
    return hd;
}

#endif
