/* Built-in mobilizers: Screw, Universal, Cylinder, Planar, Gimbal, Bushing.
 * Coordinates follow Simbody (verified against it in tests/oracle); all have
 * u = qdot. Fitting follows Simbody: rotation first, then translation, the
 * later part winning where both fix the same coordinate (Screw). */
#include <math.h>
#include <string.h>

#include "mbk/alloc.h"
#include "mbk/mobilizer.h"
#include "mbk/status.h"
#include "mobilizer_util.h"

/* ---- shared pieces ------------------------------------------------------- */

static const mbk_vec3 z_axis = {0, 0, 1};

/* The angle about z that best fits R (exact for rotations about z). */
static double z_angle(const mbk_mat33 *R)
{
    return atan2(R->m[1][0] - R->m[0][1], R->m[0][0] + R->m[1][1]);
}

/* X_FM = (R_z(angle), p). */
static mbk_transform z_rotation(double angle, mbk_vec3 p)
{
    return mbk_transform_from_axis_angle(z_axis, angle, p);
}

/* H[j] = (column j of W(angles), 0) for j < n: angle rates to w_FM. */
static void angle_columns(const double *angles, int n, mbk_spatial_vec *H)
{
    mbk_mat33 W = euler_W(angles);
    for (int j = 0; j < n; ++j) H[j] = mbk_spatial_vec_make(mbk_mat33_column(W, j), mbk_vec3_zero());
}

/* d/dt(W) qd: the velocity-product angular acceleration of angle rates qd. */
static mbk_vec3 angle_Wdot_qd(const double *angles, const double *qd)
{
    return mbk_mat33_mul_vec(euler_Wdot(angles, qd), vec3_of(qd));
}

/* Angle rates giving w_FM at body-xyz angles q; fails at gimbal lock. */
static int angle_rates_fit(const char *who, const double *q, mbk_vec3 w, double *u)
{
    if (fabs(cos(q[1])) < 1e-12)
        return mbk_set_error(MBK_ESINGULAR, "%s: set_u_to_fit_velocity at gimbal lock (q1 = %g); "
                             "move q1 away from +-pi/2 first", who, q[1]);
    put_vec3(u, mbk_mat33_mul_vec(mbk_mat33_inverse(euler_W(q)), w));
    return 0;
}

/* dRz/dq for the rotation by q about z. */
static mbk_mat33 dRz(double q)
{
    double c = cos(q), sn = sin(q);
    mbk_mat33 D = {{{-sn, -c, 0}, {c, -sn, 0}, {0, 0, 0}}};
    return D;
}

/* Derivatives of n body-fixed XYZ angles q[0..n) with u their rates (u = qdot):
   dR, dH of the angular columns, HDot u and its derivatives (Universal, Gimbal,
   Bushing; written at q and u index 0). */
static void angle_derivs(const double *q, const double *u, int n, mbk_mobilizer_derivatives *d)
{
    static const double zero[3] = {0, 0, 0};
    const double *w = u ? u : zero;
    double a[3] = {q[0], q[1], n > 2 ? q[2] : 0.0};
    mbk_mat33 dW[3];
    euler_rotation_derivs(a, n, 0, d);
    euler_dW(a, dW);
    for (int k = 0; k < n; ++k)
        for (int j = 0; j < n; ++j) d->dH[k][j] = mbk_spatial_vec_make(mbk_mat33_column(dW[k], j), mbk_vec3_zero());
    mbk_vec3 du[3], dq[3];
    euler_hdot(q, w, n, du, dq);
    for (int k = 0; k < n; ++k) {
        d->dHdot_u_dq[k] = mbk_spatial_vec_make(dq[k], mbk_vec3_zero());
        d->dHdot_u_du[k] = mbk_spatial_vec_make(du[k], mbk_vec3_zero());
    }
}

/* ---- Screw: rotation q about z, translation pitch*q along z -------------- */

typedef struct screw_impl { double pitch; } screw_impl;

static double pitch_of(const void *impl) { return ((const screw_impl *)impl)->pitch; }

static void screw_X(const void *impl, bool euler, const double *q, mbk_transform *X)
{
    (void)euler;
    *X = z_rotation(q[0], mbk_vec3_make(0, 0, pitch_of(impl) * q[0]));
}

static void screw_H(const void *impl, bool euler, const double *q, mbk_spatial_vec *H)
{
    (void)euler; (void)q;
    H[0] = mbk_spatial_vec_make(z_axis, mbk_vec3_make(0, 0, pitch_of(impl)));
}

/* With a pitch the translation fixes q without the angle's 2 pi ambiguity. */
static int screw_fit_X(const void *impl, bool euler, const mbk_transform *X, double *q)
{
    (void)euler;
    double pitch = pitch_of(impl);
    q[0] = pitch != 0.0 ? X->p.z / pitch : z_angle(&X->R);
    return 0;
}

static int screw_fit_V(const void *impl, bool euler, const double *q, const mbk_spatial_vec *V, double *u)
{
    (void)euler; (void)q;
    double pitch = pitch_of(impl);
    u[0] = pitch != 0.0 ? V->v.z / pitch : V->w.z;
    return 0;
}

static void screw_destroy(void *impl) { mbk_free(impl); }

static int screw_derivs(const void *impl, bool euler, const double *q, const double *u,
                        mbk_mobilizer_derivatives *d)
{
    (void)euler; (void)u;
    deriv_clear(d, 1, 1);
    d->dR[0] = dRz(q[0]);
    d->dp[0] = mbk_vec3_make(0, 0, pitch_of(impl));
    return 0;
}

static const mbk_mobilizer_ops screw_ops = {
    .name = "Screw", .nu = 1, .nq = 1, .calc_X_FM = screw_X, .calc_H_FM = screw_H,
    .set_q_to_fit_transform = screw_fit_X, .set_u_to_fit_velocity = screw_fit_V,
    .destroy = screw_destroy, .calc_derivatives = screw_derivs};

/* ---- Universal: R_x(q0) then R_y(q1) about the new y --------------------- */

static void universal_X(const void *impl, bool euler, const double *q, mbk_transform *X)
{
    (void)impl; (void)euler;
    X->R = mbk_mat33_from_body_xyz(mbk_vec3_make(q[0], q[1], 0));
    X->p = mbk_vec3_zero();
}

static void universal_H(const void *impl, bool euler, const double *q, mbk_spatial_vec *H)
{
    (void)impl; (void)euler;
    const double a[3] = {q[0], q[1], 0};
    angle_columns(a, 2, H);
}

static void universal_Hdot_u(const void *impl, bool euler, const double *q, const double *u,
                             mbk_spatial_vec *Hdot_u)
{
    (void)impl; (void)euler;
    const double a[3] = {q[0], q[1], 0}, ad[3] = {u[0], u[1], 0};
    *Hdot_u = mbk_spatial_vec_make(angle_Wdot_qd(a, ad), mbk_vec3_zero());
}

/* Exact for R = R_x(a) R_y(b): column y is (0, cos a, sin a), row x (cos b, 0, sin b). */
static int universal_fit_X(const void *impl, bool euler, const mbk_transform *X, double *q)
{
    (void)impl; (void)euler;
    q[0] = atan2(X->R.m[2][1], X->R.m[1][1]);
    q[1] = atan2(X->R.m[0][2], X->R.m[0][0]);
    return 0;
}

/* Least squares: the two axes (x and M's y) are orthogonal unit vectors. */
static int universal_fit_V(const void *impl, bool euler, const double *q, const mbk_spatial_vec *V, double *u)
{
    (void)impl; (void)euler;
    u[0] = V->w.x;
    u[1] = cos(q[0]) * V->w.y + sin(q[0]) * V->w.z;
    return 0;
}

static int universal_derivs(const void *impl, bool euler, const double *q, const double *u,
                            mbk_mobilizer_derivatives *d)
{
    (void)impl; (void)euler;
    deriv_clear(d, 2, 2);
    angle_derivs(q, u, 2, d);
    return 0;
}

static const mbk_mobilizer_ops universal_ops = {
    .name = "Universal", .nu = 2, .nq = 2, .calc_X_FM = universal_X, .calc_H_FM = universal_H,
    .calc_Hdot_u = universal_Hdot_u, .set_q_to_fit_transform = universal_fit_X,
    .set_u_to_fit_velocity = universal_fit_V, .calc_derivatives = universal_derivs};

/* ---- Cylinder: rotation q0 about z, translation q1 along z ---------------- */

static void cylinder_X(const void *impl, bool euler, const double *q, mbk_transform *X)
{
    (void)impl; (void)euler;
    *X = z_rotation(q[0], mbk_vec3_make(0, 0, q[1]));
}

static void cylinder_H(const void *impl, bool euler, const double *q, mbk_spatial_vec *H)
{
    (void)impl; (void)euler; (void)q;
    H[0] = mbk_spatial_vec_make(z_axis, mbk_vec3_zero());
    H[1] = mbk_spatial_vec_make(mbk_vec3_zero(), z_axis);
}

static int cylinder_fit_X(const void *impl, bool euler, const mbk_transform *X, double *q)
{
    (void)impl; (void)euler;
    q[0] = z_angle(&X->R);
    q[1] = X->p.z;
    return 0;
}

static int cylinder_fit_V(const void *impl, bool euler, const double *q, const mbk_spatial_vec *V, double *u)
{
    (void)impl; (void)euler; (void)q;
    u[0] = V->w.z;
    u[1] = V->v.z;
    return 0;
}

static int cylinder_derivs(const void *impl, bool euler, const double *q, const double *u,
                           mbk_mobilizer_derivatives *d)
{
    (void)impl; (void)euler; (void)u;
    deriv_clear(d, 2, 2);
    d->dR[0] = dRz(q[0]);
    d->dp[1] = z_axis;
    return 0;
}

static const mbk_mobilizer_ops cylinder_ops = {
    .name = "Cylinder", .nu = 2, .nq = 2, .calc_X_FM = cylinder_X, .calc_H_FM = cylinder_H,
    .set_q_to_fit_transform = cylinder_fit_X, .set_u_to_fit_velocity = cylinder_fit_V,
    .calc_derivatives = cylinder_derivs};

/* ---- Planar: rotation q0 about z, translation (q1, q2) along F's x, y ----- */

static void planar_X(const void *impl, bool euler, const double *q, mbk_transform *X)
{
    (void)impl; (void)euler;
    *X = z_rotation(q[0], mbk_vec3_make(q[1], q[2], 0));
}

static void planar_H(const void *impl, bool euler, const double *q, mbk_spatial_vec *H)
{
    (void)impl; (void)euler; (void)q;
    H[0] = mbk_spatial_vec_make(z_axis, mbk_vec3_zero());
    set_unit_columns(H, 0, 1, 2);
}

static int planar_fit_X(const void *impl, bool euler, const mbk_transform *X, double *q)
{
    (void)impl; (void)euler;
    q[0] = z_angle(&X->R);
    q[1] = X->p.x;
    q[2] = X->p.y;
    return 0;
}

static int planar_fit_V(const void *impl, bool euler, const double *q, const mbk_spatial_vec *V, double *u)
{
    (void)impl; (void)euler; (void)q;
    u[0] = V->w.z;
    u[1] = V->v.x;
    u[2] = V->v.y;
    return 0;
}

static int planar_derivs(const void *impl, bool euler, const double *q, const double *u,
                         mbk_mobilizer_derivatives *d)
{
    (void)impl; (void)euler; (void)u;
    deriv_clear(d, 3, 3);
    d->dR[0] = dRz(q[0]);
    d->dp[1] = mbk_vec3_make(1, 0, 0);
    d->dp[2] = mbk_vec3_make(0, 1, 0);
    return 0;
}

static const mbk_mobilizer_ops planar_ops = {
    .name = "Planar", .nu = 3, .nq = 3, .calc_X_FM = planar_X, .calc_H_FM = planar_H,
    .set_q_to_fit_transform = planar_fit_X, .set_u_to_fit_velocity = planar_fit_V,
    .calc_derivatives = planar_derivs};

/* ---- Gimbal: body-fixed XYZ angles, u = angle rates ----------------------- */

static void gimbal_X(const void *impl, bool euler, const double *q, mbk_transform *X)
{
    (void)impl; (void)euler;
    X->R = mbk_mat33_from_body_xyz(vec3_of(q));
    X->p = mbk_vec3_zero();
}

static void gimbal_H(const void *impl, bool euler, const double *q, mbk_spatial_vec *H)
{
    (void)impl; (void)euler;
    angle_columns(q, 3, H);
}

static void gimbal_Hdot_u(const void *impl, bool euler, const double *q, const double *u,
                          mbk_spatial_vec *Hdot_u)
{
    (void)impl; (void)euler;
    *Hdot_u = mbk_spatial_vec_make(angle_Wdot_qd(q, u), mbk_vec3_zero());
}

static int gimbal_fit_X(const void *impl, bool euler, const mbk_transform *X, double *q)
{
    (void)impl; (void)euler;
    put_vec3(q, mbk_mat33_to_body_xyz(X->R));
    return 0;
}

static int gimbal_fit_V(const void *impl, bool euler, const double *q, const mbk_spatial_vec *V, double *u)
{
    (void)impl; (void)euler;
    return angle_rates_fit("Gimbal", q, V->w, u);
}

static int gimbal_derivs(const void *impl, bool euler, const double *q, const double *u,
                         mbk_mobilizer_derivatives *d)
{
    (void)impl; (void)euler;
    deriv_clear(d, 3, 3);
    angle_derivs(q, u, 3, d);
    return 0;
}

static const mbk_mobilizer_ops gimbal_ops = {
    .name = "Gimbal", .nu = 3, .nq = 3, .calc_X_FM = gimbal_X, .calc_H_FM = gimbal_H,
    .calc_Hdot_u = gimbal_Hdot_u, .set_q_to_fit_transform = gimbal_fit_X,
    .set_u_to_fit_velocity = gimbal_fit_V, .calc_derivatives = gimbal_derivs};

/* ---- Bushing: Gimbal angles, then p_FM in F; u = qdot --------------------- */

static void bushing_X(const void *impl, bool euler, const double *q, mbk_transform *X)
{
    (void)impl; (void)euler;
    X->R = mbk_mat33_from_body_xyz(vec3_of(q));
    X->p = vec3_of(q + 3);
}

static void bushing_H(const void *impl, bool euler, const double *q, mbk_spatial_vec *H)
{
    (void)impl; (void)euler;
    angle_columns(q, 3, H);
    set_unit_columns(H, 0, 3, 3);
}

static int bushing_fit_X(const void *impl, bool euler, const mbk_transform *X, double *q)
{
    (void)impl; (void)euler;
    put_vec3(q, mbk_mat33_to_body_xyz(X->R));
    put_vec3(q + 3, X->p);
    return 0;
}

static int bushing_fit_V(const void *impl, bool euler, const double *q, const mbk_spatial_vec *V, double *u)
{
    (void)impl; (void)euler;
    put_vec3(u + 3, V->v);
    return angle_rates_fit("Bushing", q, V->w, u);
}

static int bushing_derivs(const void *impl, bool euler, const double *q, const double *u,
                          mbk_mobilizer_derivatives *d)
{
    (void)impl; (void)euler;
    deriv_clear(d, 6, 6);
    angle_derivs(q, u, 3, d);
    d->dp[3] = mbk_vec3_make(1, 0, 0);
    d->dp[4] = mbk_vec3_make(0, 1, 0);
    d->dp[5] = mbk_vec3_make(0, 0, 1);
    return 0;
}

static const mbk_mobilizer_ops bushing_ops = {
    .name = "Bushing", .nu = 6, .nq = 6, .calc_X_FM = bushing_X, .calc_H_FM = bushing_H,
    .calc_Hdot_u = gimbal_Hdot_u, .set_q_to_fit_transform = bushing_fit_X,
    .set_u_to_fit_velocity = bushing_fit_V, .calc_derivatives = bushing_derivs};

/* ---- constructors --------------------------------------------------------- */

static mbk_mobilizer stateless(const mbk_mobilizer_ops *ops)
{
    mbk_mobilizer m = {ops, NULL};
    return m;
}

mbk_mobilizer mbk_mobilizer_screw(double pitch)
{
    mbk_mobilizer m = {NULL, NULL};
    if (!isfinite(pitch)) {
        mbk_set_error(MBK_EINVAL, "mbk_mobilizer_screw: pitch must be finite (got %g)", pitch);
        return m;
    }
    screw_impl *s = mbk_malloc(sizeof *s);
    if (!s) return m;
    s->pitch = pitch;
    m.ops = &screw_ops;
    m.impl = s;
    return m;
}

mbk_mobilizer mbk_mobilizer_universal(void) { return stateless(&universal_ops); }
mbk_mobilizer mbk_mobilizer_cylinder(void) { return stateless(&cylinder_ops); }
mbk_mobilizer mbk_mobilizer_planar(void) { return stateless(&planar_ops); }
mbk_mobilizer mbk_mobilizer_gimbal(void) { return stateless(&gimbal_ops); }
mbk_mobilizer mbk_mobilizer_bushing(void) { return stateless(&bushing_ops); }
