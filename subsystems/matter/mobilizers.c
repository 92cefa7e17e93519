/* Built-in mobilizers: Weld, Pin, Slider, Translation, Ball, Free.
 * Coordinates follow Simbody (verified against it in tests/oracle). */
#include <math.h>
#include <string.h>

#include "mbk/mobilizer.h"
#include "mbk/status.h"
#include "matter_impl.h"
#include "mobilizer_util.h"

/* ---- rotations held as quaternions or body-fixed XYZ angles ------------ */
/* Used by Ball (q = rotation) and Free (q = rotation, then p_FM). */

static int rot_nq(bool euler) { return euler ? 3 : 4; }

static mbk_mat33 rot_R(bool euler, const double *q)
{
    if (euler) return mbk_mat33_from_body_xyz(vec3_of(q));
    return mbk_quat_to_mat33(mbk_quat_normalize(mbk_quat_make(q[0], q[1], q[2], q[3])));
}

static void rot_qdot(bool euler, const double *q, const double *w, double *qdot)
{
    if (euler) {
        put_vec3(qdot, mbk_mat33_mul_vec(mbk_mat33_inverse(euler_W(q)), vec3_of(w)));
        return;
    }
    mbk_quat r = mbk_quat_mul(mbk_quat_make(0, w[0], w[1], w[2]), mbk_quat_make(q[0], q[1], q[2], q[3]));
    qdot[0] = 0.5 * r.w;
    qdot[1] = 0.5 * r.x;
    qdot[2] = 0.5 * r.y;
    qdot[3] = 0.5 * r.z;
}

static void rot_qdotdot(bool euler, const double *q, const double *w, const double *wdot,
                        double *qdd)
{
    double qd[4];
    rot_qdot(euler, q, w, qd);
    if (euler) {
        /* W qdd + Wdot qd = wdot */
        mbk_vec3 rhs = mbk_vec3_sub(vec3_of(wdot), mbk_mat33_mul_vec(euler_Wdot(q, qd), vec3_of(qd)));
        put_vec3(qdd, mbk_mat33_mul_vec(mbk_mat33_inverse(euler_W(q)), rhs));
        return;
    }
    mbk_quat a = mbk_quat_mul(mbk_quat_make(0, wdot[0], wdot[1], wdot[2]), mbk_quat_make(q[0], q[1], q[2], q[3]));
    mbk_quat b = mbk_quat_mul(mbk_quat_make(0, w[0], w[1], w[2]), mbk_quat_make(qd[0], qd[1], qd[2], qd[3]));
    qdd[0] = 0.5 * (a.w + b.w);
    qdd[1] = 0.5 * (a.x + b.x);
    qdd[2] = 0.5 * (a.y + b.y);
    qdd[3] = 0.5 * (a.z + b.z);
}

static void rot_w_from_qdot(bool euler, const double *q, const double *qdot, double *w)
{
    if (euler) {
        put_vec3(w, mbk_mat33_mul_vec(euler_W(q), vec3_of(qdot)));
        return;
    }
    /* w = 2 qdot q* (vector part), for a unit q. */
    mbk_quat r = mbk_quat_mul(mbk_quat_make(qdot[0], qdot[1], qdot[2], qdot[3]),
                              mbk_quat_conj(mbk_quat_make(q[0], q[1], q[2], q[3])));
    w[0] = 2 * r.x;
    w[1] = 2 * r.y;
    w[2] = 2 * r.z;
}

static void rot_default(bool euler, double *q)
{
    memset(q, 0, (size_t)rot_nq(euler) * sizeof *q);
    if (!euler) q[0] = 1.0;
}

static void rot_normalize(bool euler, double *q)
{
    if (euler) return;
    mbk_quat n = mbk_quat_normalize(mbk_quat_make(q[0], q[1], q[2], q[3]));
    q[0] = n.w;
    q[1] = n.x;
    q[2] = n.y;
    q[3] = n.z;
}

static void rot_fit(bool euler, const mbk_mat33 *R, double *q)
{
    if (euler) {
        put_vec3(q, mbk_mat33_to_body_xyz(*R));
        return;
    }
    mbk_quat n = mbk_mat33_to_quat(*R);
    q[0] = n.w;
    q[1] = n.x;
    q[2] = n.y;
    q[3] = n.z;
}

/* Derivatives of the rotation part (q[0..rot_nq)) for the given angular velocity w:
   dR/dq_k and d qdot_i / dq_k of the rotation coordinates, written at q index 0.
   Quaternions: R(q / |q|), qdot = (0, w) * qhat / 2, differentiated through the
   normalization: d qhat / d q_k = (e_k - qhat qhat_k) / |q|. */
static void rot_derivs(bool euler, const double *q, const double *w, mbk_mobilizer_derivatives *d)
{
    if (euler) {
        euler_rotation_derivs(q, 3, 0, d);
        /* qdot = W^-1 w: d/dq_k = -W^-1 dW_k W^-1 w */
        mbk_mat33 Wi = mbk_mat33_inverse(euler_W(q)), dW[3];
        euler_dW(q, dW);
        mbk_vec3 qd = mbk_mat33_mul_vec(Wi, vec3_of(w));
        for (int k = 0; k < 3; ++k) {
            mbk_vec3 c = mbk_vec3_neg(mbk_mat33_mul_vec(Wi, mbk_mat33_mul_vec(dW[k], qd)));
            d->dqdot_dq[0][k] = c.x;
            d->dqdot_dq[1][k] = c.y;
            d->dqdot_dq[2][k] = c.z;
        }
        return;
    }
    mbk_quat raw = mbk_quat_make(q[0], q[1], q[2], q[3]);
    double n = mbk_norm_from_squares(q[0] * q[0] + q[1] * q[1] + q[2] * q[2] + q[3] * q[3], q[0], q[1], q[2], q[3]);
    mbk_quat qh = mbk_quat_normalize(raw);
    mbk_mat33 R = mbk_quat_to_mat33(qh);
    const double qv[4] = {qh.w, qh.x, qh.y, qh.z};
    mbk_quat W = mbk_quat_make(0, w[0], w[1], w[2]);
    for (int k = 0; k < 4; ++k) {
        double e[4];
        for (int i = 0; i < 4; ++i) e[i] = ((i == k) - qv[i] * qv[k]) / n;
        mbk_quat dq = mbk_quat_make(e[0], e[1], e[2], e[3]);
        /* the rotation it makes: dR = [omega x] R with (0, omega) = 2 dq * qhat^* */
        mbk_quat o = mbk_quat_mul(dq, mbk_quat_conj(qh));
        d->dR[k] = mbk_mat33_mul(mbk_mat33_skew(mbk_vec3_make(2 * o.x, 2 * o.y, 2 * o.z)), R);
        mbk_quat t = mbk_quat_mul(W, dq);
        d->dqdot_dq[0][k] = 0.5 * t.w;
        d->dqdot_dq[1][k] = 0.5 * t.x;
        d->dqdot_dq[2][k] = 0.5 * t.y;
        d->dqdot_dq[3][k] = 0.5 * t.z;
    }
}

/* ---- Weld ---------------------------------------------------------------- */

static void weld_X(const void *impl, bool euler, const double *q, mbk_transform *X)
{
    (void)impl; (void)euler; (void)q;
    *X = mbk_transform_identity();
}

static int weld_derivs(const void *impl, bool euler, const double *q, const double *u, mbk_mobilizer_derivatives *d)
{
    (void)impl; (void)euler; (void)q; (void)u; (void)d;
    return 0;
}

static const mbk_mobilizer_ops weld_ops = {.name = "Weld", .nu = 0, .nq = 0, .calc_X_FM = weld_X,
                                           .calc_derivatives = weld_derivs};

/* ---- Pin: rotation about z ----------------------------------------------- */

static void pin_X(const void *impl, bool euler, const double *q, mbk_transform *X)
{
    (void)impl; (void)euler;
    double c = cos(q[0]), sn = sin(q[0]);
    mbk_mat33 R = {{{c, -sn, 0}, {sn, c, 0}, {0, 0, 1}}};
    X->R = R;
    X->p = mbk_vec3_zero();
}

static void pin_H(const void *impl, bool euler, const double *q, mbk_spatial_vec *H)
{
    (void)impl; (void)euler; (void)q;
    H[0] = mbk_spatial_vec_make(mbk_vec3_make(0, 0, 1), mbk_vec3_zero());
}

static int pin_fit_X(const void *impl, bool euler, const mbk_transform *X, double *q)
{
    (void)impl; (void)euler;
    q[0] = atan2(X->R.m[1][0], X->R.m[0][0]);
    return 0;
}

static int pin_fit_V(const void *impl, bool euler, const double *q, const mbk_spatial_vec *V, double *u)
{
    (void)impl; (void)euler; (void)q;
    u[0] = V->w.z;
    return 0;
}

/* dRz/dq for the rotation by q about z. */
static mbk_mat33 dRz(double q)
{
    double c = cos(q), sn = sin(q);
    mbk_mat33 D = {{{-sn, -c, 0}, {c, -sn, 0}, {0, 0, 0}}};
    return D;
}

static int pin_derivs(const void *impl, bool euler, const double *q, const double *u, mbk_mobilizer_derivatives *d)
{
    (void)impl; (void)euler; (void)u;
    deriv_clear(d, 1, 1);
    d->dR[0] = dRz(q[0]);
    return 0;
}

static const mbk_mobilizer_ops pin_ops = {
    .name = "Pin", .nu = 1, .nq = 1, .calc_X_FM = pin_X, .calc_H_FM = pin_H,
    .set_q_to_fit_transform = pin_fit_X, .set_u_to_fit_velocity = pin_fit_V,
    .calc_derivatives = pin_derivs};

/* ---- Slider: translation along x ----------------------------------------- */

static void slider_X(const void *impl, bool euler, const double *q, mbk_transform *X)
{
    (void)impl; (void)euler;
    *X = mbk_transform_from_p(mbk_vec3_make(q[0], 0, 0));
}

static void slider_H(const void *impl, bool euler, const double *q, mbk_spatial_vec *H)
{
    (void)impl; (void)euler; (void)q;
    H[0] = mbk_spatial_vec_make(mbk_vec3_zero(), mbk_vec3_make(1, 0, 0));
}

static int slider_fit_X(const void *impl, bool euler, const mbk_transform *X, double *q)
{
    (void)impl; (void)euler;
    q[0] = X->p.x;
    return 0;
}

static int slider_fit_V(const void *impl, bool euler, const double *q, const mbk_spatial_vec *V, double *u)
{
    (void)impl; (void)euler; (void)q;
    u[0] = V->v.x;
    return 0;
}

static int slider_derivs(const void *impl, bool euler, const double *q, const double *u,
                         mbk_mobilizer_derivatives *d)
{
    (void)impl; (void)euler; (void)q; (void)u;
    deriv_clear(d, 1, 1);
    d->dp[0] = mbk_vec3_make(1, 0, 0);
    return 0;
}

static const mbk_mobilizer_ops slider_ops = {
    .name = "Slider", .nu = 1, .nq = 1, .calc_X_FM = slider_X, .calc_H_FM = slider_H,
    .set_q_to_fit_transform = slider_fit_X, .set_u_to_fit_velocity = slider_fit_V,
    .calc_derivatives = slider_derivs};

/* ---- Translation: p_FM = q ----------------------------------------------- */

static void translation_X(const void *impl, bool euler, const double *q, mbk_transform *X)
{
    (void)impl; (void)euler;
    *X = mbk_transform_from_p(vec3_of(q));
}

static void translation_H(const void *impl, bool euler, const double *q, mbk_spatial_vec *H)
{
    (void)impl; (void)euler; (void)q;
    set_unit_columns(H, 0, 0, 3);
}

static int translation_fit_X(const void *impl, bool euler, const mbk_transform *X, double *q)
{
    (void)impl; (void)euler;
    put_vec3(q, X->p);
    return 0;
}

static int translation_fit_V(const void *impl, bool euler, const double *q, const mbk_spatial_vec *V, double *u)
{
    (void)impl; (void)euler; (void)q;
    put_vec3(u, V->v);
    return 0;
}

static int translation_derivs(const void *impl, bool euler, const double *q, const double *u,
                              mbk_mobilizer_derivatives *d)
{
    (void)impl; (void)euler; (void)q; (void)u;
    deriv_clear(d, 3, 3);
    d->dp[0] = mbk_vec3_make(1, 0, 0);
    d->dp[1] = mbk_vec3_make(0, 1, 0);
    d->dp[2] = mbk_vec3_make(0, 0, 1);
    return 0;
}

static const mbk_mobilizer_ops translation_ops = {
    .name = "Translation", .nu = 3, .nq = 3, .calc_X_FM = translation_X, .calc_H_FM = translation_H,
    .set_q_to_fit_transform = translation_fit_X, .set_u_to_fit_velocity = translation_fit_V,
    .calc_derivatives = translation_derivs};

/* ---- Ball: rotation, u = w_FM in F ---------------------------------------- */

static int ball_nq(const void *impl, bool euler) { (void)impl; return rot_nq(euler); }

static void ball_default(const void *impl, bool euler, double *q) { (void)impl; rot_default(euler, q); }

static void ball_X(const void *impl, bool euler, const double *q, mbk_transform *X)
{
    (void)impl;
    X->R = rot_R(euler, q);
    X->p = mbk_vec3_zero();
}

static void ball_H(const void *impl, bool euler, const double *q, mbk_spatial_vec *H)
{
    (void)impl; (void)euler; (void)q;
    set_unit_columns(H, 1, 0, 3);
}

static void ball_qdot(const void *impl, bool euler, const double *q, const double *u, double *qdot)
{
    (void)impl;
    rot_qdot(euler, q, u, qdot);
}

static void ball_qdotdot(const void *impl, bool euler, const double *q, const double *u,
                         const double *udot, double *qdd)
{
    (void)impl;
    rot_qdotdot(euler, q, u, udot, qdd);
}

static void ball_u_from_qdot(const void *impl, bool euler, const double *q, const double *qdot, double *u)
{
    (void)impl;
    rot_w_from_qdot(euler, q, qdot, u);
}

static void ball_normalize(const void *impl, bool euler, double *q) { (void)impl; rot_normalize(euler, q); }

static int ball_fit_X(const void *impl, bool euler, const mbk_transform *X, double *q)
{
    (void)impl;
    rot_fit(euler, &X->R, q);
    return 0;
}

static int ball_fit_V(const void *impl, bool euler, const double *q, const mbk_spatial_vec *V, double *u)
{
    (void)impl; (void)euler; (void)q;
    put_vec3(u, V->w);
    return 0;
}

static const double zero3[3] = {0, 0, 0};

static int ball_derivs(const void *impl, bool euler, const double *q, const double *u, mbk_mobilizer_derivatives *d)
{
    (void)impl;
    deriv_clear(d, rot_nq(euler), 3);
    rot_derivs(euler, q, u ? u : zero3, d);
    return 0;
}

static const mbk_mobilizer_ops ball_ops = {
    .calc_derivatives = ball_derivs,
    .name = "Ball", .nu = 3, .get_nq = ball_nq, .default_q = ball_default, .calc_X_FM = ball_X,
    .calc_H_FM = ball_H, .calc_qdot = ball_qdot, .calc_qdotdot = ball_qdotdot,
    .calc_u_from_qdot = ball_u_from_qdot, .normalize_q = ball_normalize,
    .set_q_to_fit_transform = ball_fit_X, .set_u_to_fit_velocity = ball_fit_V};

/* ---- Free: rotation then p_FM; u = (w_FM, v_FM) in F ---------------------- */

static int free_nq(const void *impl, bool euler) { (void)impl; return rot_nq(euler) + 3; }

static void free_default(const void *impl, bool euler, double *q)
{
    (void)impl;
    rot_default(euler, q);
    memset(q + rot_nq(euler), 0, 3 * sizeof *q);
}

static void free_X(const void *impl, bool euler, const double *q, mbk_transform *X)
{
    (void)impl;
    X->R = rot_R(euler, q);
    X->p = vec3_of(q + rot_nq(euler));
}

static void free_H(const void *impl, bool euler, const double *q, mbk_spatial_vec *H)
{
    (void)impl; (void)euler; (void)q;
    set_unit_columns(H, 1, 0, 3);
    set_unit_columns(H, 0, 3, 3);
}

static void free_qdot(const void *impl, bool euler, const double *q, const double *u, double *qdot)
{
    (void)impl;
    rot_qdot(euler, q, u, qdot);
    memcpy(qdot + rot_nq(euler), u + 3, 3 * sizeof *u);
}

static void free_qdotdot(const void *impl, bool euler, const double *q, const double *u,
                         const double *udot, double *qdd)
{
    (void)impl;
    rot_qdotdot(euler, q, u, udot, qdd);
    memcpy(qdd + rot_nq(euler), udot + 3, 3 * sizeof *udot);
}

static void free_u_from_qdot(const void *impl, bool euler, const double *q, const double *qdot, double *u)
{
    (void)impl;
    rot_w_from_qdot(euler, q, qdot, u);
    memcpy(u + 3, qdot + rot_nq(euler), 3 * sizeof *u);
}

static int free_fit_X(const void *impl, bool euler, const mbk_transform *X, double *q)
{
    (void)impl;
    rot_fit(euler, &X->R, q);
    put_vec3(q + rot_nq(euler), X->p);
    return 0;
}

static int free_fit_V(const void *impl, bool euler, const double *q, const mbk_spatial_vec *V, double *u)
{
    (void)impl; (void)euler; (void)q;
    put_vec3(u, V->w);
    put_vec3(u + 3, V->v);
    return 0;
}

static int free_derivs(const void *impl, bool euler, const double *q, const double *u, mbk_mobilizer_derivatives *d)
{
    (void)impl;
    int nr = rot_nq(euler);
    deriv_clear(d, nr + 3, 6);
    rot_derivs(euler, q, u ? u : zero3, d);
    d->dp[nr] = mbk_vec3_make(1, 0, 0);
    d->dp[nr + 1] = mbk_vec3_make(0, 1, 0);
    d->dp[nr + 2] = mbk_vec3_make(0, 0, 1);
    return 0;
}

static const mbk_mobilizer_ops free_ops = {
    .calc_derivatives = free_derivs,
    .name = "Free", .nu = 6, .get_nq = free_nq, .default_q = free_default, .calc_X_FM = free_X,
    .calc_H_FM = free_H, .calc_qdot = free_qdot, .calc_qdotdot = free_qdotdot,
    .calc_u_from_qdot = free_u_from_qdot, .normalize_q = ball_normalize,
    .set_q_to_fit_transform = free_fit_X, .set_u_to_fit_velocity = free_fit_V};

/* ---- constructors --------------------------------------------------------- */

static mbk_mobilizer builtin(const mbk_mobilizer_ops *ops)
{
    mbk_mobilizer m = {ops, NULL};
    return m;
}

mbk_mobilizer mbk_mobilizer_weld(void) { return builtin(&weld_ops); }
mbk_mobilizer mbk_mobilizer_pin(void) { return builtin(&pin_ops); }
mbk_mobilizer mbk_mobilizer_slider(void) { return builtin(&slider_ops); }
mbk_mobilizer mbk_mobilizer_translation(void) { return builtin(&translation_ops); }
mbk_mobilizer mbk_mobilizer_ball(void) { return builtin(&ball_ops); }
mbk_mobilizer mbk_mobilizer_free(void) { return builtin(&free_ops); }

bool mt_mobilizer_is_pin(const mbk_mobilizer *mob) { return mob->ops == &pin_ops; }
bool mt_mobilizer_is_free(const mbk_mobilizer *mob) { return mob->ops == &free_ops; }

bool mt_mobilizer_has_quaternion(const mbk_mobilizer *mob) { return mob->ops == &ball_ops || mob->ops == &free_ops; }

mbk_mobilizer mbk_mobilizer_custom(const mbk_mobilizer_ops *ops, void *impl)
{
    mbk_mobilizer m = {ops, impl};
    return m;
}

int mbk_mobilizer_get_nq(const mbk_mobilizer *m, bool euler)
{
    if (!m || !m->ops) return mbk_set_error(MBK_EINVAL, "mobilizer has no ops table");
    return m->ops->get_nq ? m->ops->get_nq(m->impl, euler) : m->ops->nq;
}
