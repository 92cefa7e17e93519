/* Built-in body constraints, each an mbk_constraint_ops table like a custom
 * one: Rod, Ball, Weld, PointInPlane, PointOnLine, ConstantAngle,
 * ConstantOrientation, NoSlip1D. Equations and multiplier signs are
 * Simbody's (tests/oracle/simbody_constraints_oracle.h is the spec, checked
 * against Simbody in tests/oracle/test_constraints_vs_simbody.c). Everything
 * is measured and expressed in the ancestor frame A; "the material point of
 * body i at X" is the point of body i that is at X right now. */
#include <math.h>
#include <string.h>

#include "mbk/alloc.h"
#include "mbk/status.h"
#include "constraints_impl.h"

static void free_impl(void *impl) { mbk_free(impl); }

static void put3(double *o, mbk_vec3 v)
{
    o[0] = v.x;
    o[1] = v.y;
    o[2] = v.z;
}

/* ---- shared kinematics --------------------------------------------------------- */

/* Velocity and acceleration (in A) of body i's material point at location X_A. */
static mbk_vec3 point_velocity(const mbk_constraint_args *a, int i, mbk_vec3 X_A)
{
    return mbk_constraint_get_station_velocity(a, i, mbk_constraint_find_station(a, i, X_A));
}

static mbk_vec3 point_acceleration(const mbk_constraint_args *a, int i, mbk_vec3 X_A)
{
    return mbk_constraint_get_station_acceleration(a, i, mbk_constraint_find_station(a, i, X_A));
}

/* Force f (in A) at location X_A on body i, at its material point there. */
static void force_at(const mbk_constraint_args *a, int i, mbk_vec3 X_A, mbk_vec3 f, mbk_spatial_vec *F)
{
    mbk_constraint_add_station_force(a, i, mbk_constraint_find_station(a, i, X_A), f, F);
}

/* ---- Rod: perr = |p2 - p1| - L; tension multiplier -------------------------------- */

typedef struct two_stations {
    mbk_vec3 s1, s2; /* station on the first and on the second constrained body */
    double length;   /* Rod only */
} two_stations;

static mbk_vec3 rod_d(const mbk_constraint_args *a, const two_stations *t, mbk_vec3 *dv)
{
    if (dv)
        *dv = mbk_vec3_sub(mbk_constraint_get_station_velocity(a, 1, t->s2),
                           mbk_constraint_get_station_velocity(a, 0, t->s1));
    return mbk_vec3_sub(mbk_constraint_get_station_location(a, 1, t->s2), mbk_constraint_get_station_location(a, 0, t->s1));
}

static int rod_perr(void *impl, const mbk_constraint_args *a, double *perr)
{
    const two_stations *t = impl;
    *perr = mbk_vec3_norm(rod_d(a, t, NULL)) - t->length;
    return 0;
}

static int rod_pverr(void *impl, const mbk_constraint_args *a, double *pverr)
{
    mbk_vec3 dv, d = rod_d(a, impl, &dv);
    *pverr = mbk_vec3_dot(mbk_vec3_normalize(d), dv);
    return 0;
}

static int rod_paerr(void *impl, const mbk_constraint_args *a, double *paerr)
{
    const two_stations *t = impl;
    mbk_vec3 dv, d = rod_d(a, t, &dv);
    mbk_vec3 da = mbk_vec3_sub(mbk_constraint_get_station_acceleration(a, 1, t->s2),
                               mbk_constraint_get_station_acceleration(a, 0, t->s1));
    double len = mbk_vec3_norm(d), ev = mbk_vec3_dot(d, dv) / len;
    *paerr = mbk_vec3_dot(d, da) / len + (mbk_vec3_norm2(dv) - ev * ev) / len;
    return 0;
}

static int rod_forces(void *impl, const mbk_constraint_args *a, const double *lambda, mbk_spatial_vec *F, double *mf)
{
    (void)mf;
    const two_stations *t = impl;
    mbk_vec3 f = mbk_vec3_scale(mbk_vec3_normalize(rod_d(a, t, NULL)), lambda[0]);
    mbk_constraint_add_station_force(a, 1, t->s2, f, F);
    mbk_constraint_add_station_force(a, 0, t->s1, mbk_vec3_neg(f), F);
    return 0;
}

/* ---- Ball: perr = S - P; rates use C, body 0's material point at S ----------------- */
/* Shared by Weld's position rows: body 0 carries P = s1, body 1 carries S = s2. */

static mbk_vec3 ball_S(const mbk_constraint_args *a, const two_stations *t)
{
    return mbk_constraint_get_station_location(a, 1, t->s2);
}

static void ball_perr3(const mbk_constraint_args *a, const two_stations *t, double *perr)
{
    put3(perr, mbk_vec3_sub(ball_S(a, t), mbk_constraint_get_station_location(a, 0, t->s1)));
}

static void ball_pverr3(const mbk_constraint_args *a, const two_stations *t, double *pverr)
{
    mbk_vec3 S = ball_S(a, t);
    put3(pverr, mbk_vec3_sub(mbk_constraint_get_station_velocity(a, 1, t->s2), point_velocity(a, 0, S)));
}

static void ball_paerr3(const mbk_constraint_args *a, const two_stations *t, double *paerr)
{
    mbk_vec3 S = ball_S(a, t);
    put3(paerr, mbk_vec3_sub(mbk_constraint_get_station_acceleration(a, 1, t->s2), point_acceleration(a, 0, S)));
}

static void ball_forces3(const mbk_constraint_args *a, const two_stations *t, const double *lambda, mbk_spatial_vec *F)
{
    mbk_vec3 f = mbk_vec3_make(lambda[0], lambda[1], lambda[2]), S = ball_S(a, t);
    mbk_constraint_add_station_force(a, 1, t->s2, f, F);
    force_at(a, 0, S, mbk_vec3_neg(f), F);
}

static int ball_perr(void *impl, const mbk_constraint_args *a, double *e) { ball_perr3(a, impl, e); return 0; }
static int ball_pverr(void *impl, const mbk_constraint_args *a, double *e) { ball_pverr3(a, impl, e); return 0; }
static int ball_paerr(void *impl, const mbk_constraint_args *a, double *e) { ball_paerr3(a, impl, e); return 0; }

static int ball_forces(void *impl, const mbk_constraint_args *a, const double *lambda, mbk_spatial_vec *F, double *mf)
{
    (void)mf;
    ball_forces3(a, impl, lambda, F);
    return 0;
}

/* ---- orientation rows (Weld, ConstantOrientation) ------------------------------------ */
/* Pairs (f_k, g_k) = (Mx, Fy), (My, Fz), (Mz, Fx): M's axes on body 1, F's on body 0. */

typedef struct frames {
    mbk_mat33 R_B1F, R_B2M; /* frame orientations on bodies 0 and 1 */
    two_stations origins;   /* Weld: F's and M's origins (position rows as a Ball) */
} frames;

static void axis_pairs(const mbk_constraint_args *a, const frames *fr, mbk_vec3 f[3], mbk_vec3 g[3])
{
    mbk_mat33 RF = mbk_mat33_mul(mbk_constraint_get_body_transform(a, 0).R, fr->R_B1F);
    mbk_mat33 RM = mbk_mat33_mul(mbk_constraint_get_body_transform(a, 1).R, fr->R_B2M);
    for (int k = 0; k < 3; ++k) {
        f[k] = mbk_mat33_column(RM, k);
        g[k] = mbk_mat33_column(RF, (k + 1) % 3);
    }
}

static void orient_perr(const mbk_constraint_args *a, const frames *fr, double *e)
{
    mbk_vec3 f[3], g[3];
    axis_pairs(a, fr, f, g);
    for (int k = 0; k < 3; ++k) e[k] = mbk_vec3_dot(f[k], g[k]);
}

static void orient_pverr(const mbk_constraint_args *a, const frames *fr, double *e)
{
    mbk_vec3 f[3], g[3];
    axis_pairs(a, fr, f, g);
    mbk_vec3 w = mbk_vec3_sub(mbk_constraint_get_body_angular_velocity(a, 1), mbk_constraint_get_body_angular_velocity(a, 0));
    for (int k = 0; k < 3; ++k) e[k] = mbk_vec3_dot(w, mbk_vec3_cross(f[k], g[k]));
}

static void orient_paerr(const mbk_constraint_args *a, const frames *fr, double *e)
{
    mbk_vec3 f[3], g[3];
    axis_pairs(a, fr, f, g);
    mbk_vec3 w1 = mbk_constraint_get_body_angular_velocity(a, 0), w2 = mbk_constraint_get_body_angular_velocity(a, 1);
    mbk_vec3 al = mbk_vec3_sub(mbk_constraint_get_body_acceleration(a, 1).w, mbk_constraint_get_body_acceleration(a, 0).w);
    mbk_vec3 w = mbk_vec3_sub(w2, w1);
    for (int k = 0; k < 3; ++k) {
        mbk_vec3 rate = mbk_vec3_sub(mbk_vec3_cross(mbk_vec3_cross(w2, f[k]), g[k]),
                                     mbk_vec3_cross(mbk_vec3_cross(w1, g[k]), f[k]));
        e[k] = mbk_vec3_dot(al, mbk_vec3_cross(f[k], g[k])) + mbk_vec3_dot(w, rate);
    }
}

static void orient_forces(const mbk_constraint_args *a, const frames *fr, const double *lambda, mbk_spatial_vec *F)
{
    mbk_vec3 f[3], g[3], t = mbk_vec3_zero();
    axis_pairs(a, fr, f, g);
    for (int k = 0; k < 3; ++k) t = mbk_vec3_add(t, mbk_vec3_scale(mbk_vec3_cross(f[k], g[k]), lambda[k]));
    mbk_constraint_add_body_torque(a, 1, t, F);
    mbk_constraint_add_body_torque(a, 0, mbk_vec3_neg(t), F);
}

static int co_perr(void *impl, const mbk_constraint_args *a, double *e) { orient_perr(a, impl, e); return 0; }
static int co_pverr(void *impl, const mbk_constraint_args *a, double *e) { orient_pverr(a, impl, e); return 0; }
static int co_paerr(void *impl, const mbk_constraint_args *a, double *e) { orient_paerr(a, impl, e); return 0; }
static int co_forces(void *impl, const mbk_constraint_args *a, const double *l, mbk_spatial_vec *F, double *mf)
{
    (void)mf;
    orient_forces(a, impl, l, F);
    return 0;
}

/* Weld: orientation rows 0-2, then a Ball between the frame origins. */
static int weld_perr(void *impl, const mbk_constraint_args *a, double *e)
{
    const frames *fr = impl;
    orient_perr(a, fr, e);
    ball_perr3(a, &fr->origins, e + 3);
    return 0;
}

static int weld_pverr(void *impl, const mbk_constraint_args *a, double *e)
{
    const frames *fr = impl;
    orient_pverr(a, fr, e);
    ball_pverr3(a, &fr->origins, e + 3);
    return 0;
}

static int weld_paerr(void *impl, const mbk_constraint_args *a, double *e)
{
    const frames *fr = impl;
    orient_paerr(a, fr, e);
    ball_paerr3(a, &fr->origins, e + 3);
    return 0;
}

static int weld_forces(void *impl, const mbk_constraint_args *a, const double *l, mbk_spatial_vec *F, double *mf)
{
    (void)mf;
    const frames *fr = impl;
    orient_forces(a, fr, l, F);
    ball_forces3(a, &fr->origins, l + 3, F);
    return 0;
}

/* ---- PointInPlane / PointOnLine: normals fixed on body 0, a station of body 1 -------- */

typedef struct point_follower {
    mbk_vec3 n[2];   /* unit normals in body 0 (one for a plane, two for a line) */
    double h[2];     /* plane heights (PointInPlane) */
    mbk_vec3 point;  /* a point on the line, in body 0 (PointOnLine) */
    mbk_vec3 s;      /* the follower's station, in body 1 */
    int rows;        /* 1 plane, 2 line */
} point_follower;

static mbk_vec3 normal_A(const mbk_constraint_args *a, const point_follower *p, int k)
{
    return mbk_mat33_mul_vec(mbk_constraint_get_body_transform(a, 0).R, p->n[k]);
}

static int pf_perr(void *impl, const mbk_constraint_args *a, double *e)
{
    const point_follower *p = impl;
    mbk_vec3 S_B = mbk_constraint_find_station(a, 0, mbk_constraint_get_station_location(a, 1, p->s));
    for (int k = 0; k < p->rows; ++k) e[k] = mbk_vec3_dot(p->n[k], mbk_vec3_sub(S_B, p->point)) - p->h[k];
    return 0;
}

/* Velocity of the follower's point relative to body 0's material point under it. */
static mbk_vec3 pf_dv(const mbk_constraint_args *a, const point_follower *p, mbk_vec3 *S)
{
    *S = mbk_constraint_get_station_location(a, 1, p->s);
    return mbk_vec3_sub(mbk_constraint_get_station_velocity(a, 1, p->s), point_velocity(a, 0, *S));
}

static int pf_pverr(void *impl, const mbk_constraint_args *a, double *e)
{
    const point_follower *p = impl;
    mbk_vec3 S, dv = pf_dv(a, p, &S);
    for (int k = 0; k < p->rows; ++k) e[k] = mbk_vec3_dot(normal_A(a, p, k), dv);
    return 0;
}

static int pf_paerr(void *impl, const mbk_constraint_args *a, double *e)
{
    const point_follower *p = impl;
    mbk_vec3 S, dv = pf_dv(a, p, &S);
    mbk_vec3 da = mbk_vec3_sub(mbk_constraint_get_station_acceleration(a, 1, p->s), point_acceleration(a, 0, S));
    mbk_vec3 w0 = mbk_constraint_get_body_angular_velocity(a, 0);
    mbk_vec3 rel = mbk_vec3_sub(da, mbk_vec3_scale(mbk_vec3_cross(w0, dv), 2.0));
    for (int k = 0; k < p->rows; ++k) e[k] = mbk_vec3_dot(normal_A(a, p, k), rel);
    return 0;
}

static int pf_forces(void *impl, const mbk_constraint_args *a, const double *l, mbk_spatial_vec *F, double *mf)
{
    (void)mf;
    const point_follower *p = impl;
    mbk_vec3 f = mbk_vec3_zero(), S = mbk_constraint_get_station_location(a, 1, p->s);
    for (int k = 0; k < p->rows; ++k) f = mbk_vec3_add(f, mbk_vec3_scale(normal_A(a, p, k), l[k]));
    mbk_constraint_add_station_force(a, 1, p->s, f, F);
    force_at(a, 0, S, mbk_vec3_neg(f), F);
    return 0;
}

/* ---- ConstantAngle: b . f = cos(angle) ------------------------------------------------- */

typedef struct angle_axes {
    mbk_vec3 axis_b, axis_f; /* unit axes on body 0 (base) and body 1 (follower) */
    double cos_angle;
} angle_axes;

static void ca_axes(const mbk_constraint_args *a, const angle_axes *c, mbk_vec3 *b, mbk_vec3 *f)
{
    *b = mbk_mat33_mul_vec(mbk_constraint_get_body_transform(a, 0).R, c->axis_b);
    *f = mbk_mat33_mul_vec(mbk_constraint_get_body_transform(a, 1).R, c->axis_f);
}

static int ca_perr(void *impl, const mbk_constraint_args *a, double *e)
{
    const angle_axes *c = impl;
    mbk_vec3 b, f;
    ca_axes(a, c, &b, &f);
    *e = mbk_vec3_dot(b, f) - c->cos_angle;
    return 0;
}

static int ca_pverr(void *impl, const mbk_constraint_args *a, double *e)
{
    mbk_vec3 b, f;
    ca_axes(a, impl, &b, &f);
    mbk_vec3 w = mbk_vec3_sub(mbk_constraint_get_body_angular_velocity(a, 1), mbk_constraint_get_body_angular_velocity(a, 0));
    *e = mbk_vec3_dot(w, mbk_vec3_cross(f, b));
    return 0;
}

static int ca_paerr(void *impl, const mbk_constraint_args *a, double *e)
{
    mbk_vec3 b, f;
    ca_axes(a, impl, &b, &f);
    mbk_vec3 wB = mbk_constraint_get_body_angular_velocity(a, 0), wF = mbk_constraint_get_body_angular_velocity(a, 1);
    mbk_vec3 al = mbk_vec3_sub(mbk_constraint_get_body_acceleration(a, 1).w, mbk_constraint_get_body_acceleration(a, 0).w);
    mbk_vec3 rate = mbk_vec3_sub(mbk_vec3_cross(mbk_vec3_cross(wF, f), b), mbk_vec3_cross(mbk_vec3_cross(wB, b), f));
    *e = mbk_vec3_dot(al, mbk_vec3_cross(f, b)) + mbk_vec3_dot(mbk_vec3_sub(wF, wB), rate);
    return 0;
}

static int ca_forces(void *impl, const mbk_constraint_args *a, const double *l, mbk_spatial_vec *F, double *mf)
{
    (void)mf;
    mbk_vec3 b, f;
    ca_axes(a, impl, &b, &f);
    mbk_vec3 t = mbk_vec3_scale(mbk_vec3_cross(f, b), l[0]);
    mbk_constraint_add_body_torque(a, 1, t, F);
    mbk_constraint_add_body_torque(a, 0, mbk_vec3_neg(t), F);
    return 0;
}

/* ---- NoSlip1D: equal velocity along n of two bodies at a point of the case ---------- */

typedef struct no_slip {
    mbk_vec3 point, dir; /* on the case body; dir a unit vector */
    int kc, k0, k1;      /* indices of the case, B0 and B1 in the constrained-body list */
} no_slip;

static void ns_geom(const mbk_constraint_args *a, const no_slip *c, mbk_vec3 *P, mbk_vec3 *n)
{
    mbk_transform X = mbk_constraint_get_body_transform(a, c->kc);
    *P = mbk_transform_apply_point(X, c->point);
    *n = mbk_mat33_mul_vec(X.R, c->dir);
}

static int ns_verr(void *impl, const mbk_constraint_args *a, double *e)
{
    const no_slip *c = impl;
    mbk_vec3 P, n;
    ns_geom(a, c, &P, &n);
    *e = mbk_vec3_dot(n, mbk_vec3_sub(point_velocity(a, c->k1, P), point_velocity(a, c->k0, P)));
    return 0;
}

static int ns_vaerr(void *impl, const mbk_constraint_args *a, double *e)
{
    const no_slip *c = impl;
    mbk_vec3 P, n;
    ns_geom(a, c, &P, &n);
    mbk_vec3 dv = mbk_vec3_sub(point_velocity(a, c->k1, P), point_velocity(a, c->k0, P));
    mbk_vec3 da = mbk_vec3_sub(point_acceleration(a, c->k1, P), point_acceleration(a, c->k0, P));
    mbk_vec3 wc = mbk_constraint_get_body_angular_velocity(a, c->kc);
    *e = mbk_vec3_dot(n, mbk_vec3_sub(da, mbk_vec3_cross(wc, dv)));
    return 0;
}

static int ns_forces(void *impl, const mbk_constraint_args *a, const double *l, mbk_spatial_vec *F, double *mf)
{
    (void)mf;
    const no_slip *c = impl;
    mbk_vec3 P, n;
    ns_geom(a, c, &P, &n);
    mbk_vec3 f = mbk_vec3_scale(n, l[0]);
    force_at(a, c->k1, P, f, F);
    force_at(a, c->k0, P, mbk_vec3_neg(f), F);
    return 0;
}

/* ---- ops tables -------------------------------------------------------------------- */

static const mbk_constraint_ops rod_ops = {"Rod", 1, 0, 0, rod_perr, rod_pverr, rod_paerr, rod_forces,
                                           NULL, NULL, NULL, NULL, NULL, free_impl};
static const mbk_constraint_ops ball_ops = {"Ball", 3, 0, 0, ball_perr, ball_pverr, ball_paerr, ball_forces,
                                            NULL, NULL, NULL, NULL, NULL, free_impl};
static const mbk_constraint_ops weld_ops = {"Weld", 6, 0, 0, weld_perr, weld_pverr, weld_paerr, weld_forces,
                                            NULL, NULL, NULL, NULL, NULL, free_impl};
static const mbk_constraint_ops orientation_ops = {"ConstantOrientation", 3, 0, 0, co_perr, co_pverr, co_paerr,
                                                   co_forces, NULL, NULL, NULL, NULL, NULL, free_impl};
static const mbk_constraint_ops plane_ops = {"PointInPlane", 1, 0, 0, pf_perr, pf_pverr, pf_paerr, pf_forces,
                                             NULL, NULL, NULL, NULL, NULL, free_impl};
static const mbk_constraint_ops line_ops = {"PointOnLine", 2, 0, 0, pf_perr, pf_pverr, pf_paerr, pf_forces,
                                            NULL, NULL, NULL, NULL, NULL, free_impl};
static const mbk_constraint_ops angle_ops = {"ConstantAngle", 1, 0, 0, ca_perr, ca_pverr, ca_paerr, ca_forces,
                                             NULL, NULL, NULL, NULL, NULL, free_impl};
static const mbk_constraint_ops no_slip_ops = {"NoSlip1D", 0, 1, 0, NULL, NULL, NULL, NULL, ns_verr, ns_vaerr,
                                               ns_forces, NULL, NULL, free_impl};

/* ---- constructors -------------------------------------------------------------------- */

/* Copy impl to the heap and add the constraint; frees the copy if it is refused. */
static int add_with(mbk_matter *m, const mbk_constraint_ops *ops, const void *data, size_t size, const int *bodies,
                    int nb, const char *fn)
{
    void *impl = mbk_malloc(size);
    if (!impl) return MBK_ENOMEM;
    memcpy(impl, data, size);
    int rc = ct_add(m, ops, impl, bodies, nb, NULL, NULL, 0, fn);
    if (rc < 0) mbk_free(impl);
    return rc;
}

static int finite3(mbk_vec3 a, mbk_vec3 b) { return mbk_vec3_is_finite(a) && mbk_vec3_is_finite(b); }

/* A unit vector, or MBK_EINVAL for a zero or non-finite one. */
static int unit(mbk_vec3 v, mbk_vec3 *out, const char *fn, const char *what)
{
    double n = mbk_vec3_norm(v);
    if (!(n > 0) || !isfinite(n)) return mbk_set_error(MBK_EINVAL, "%s: %s must be a finite, nonzero vector", fn, what);
    *out = mbk_vec3_scale(v, 1.0 / n);
    return MBK_OK;
}

static int rotation_ok(const mbk_mat33 *R)
{
    if (!R || !mbk_mat33_is_finite(*R)) return 0;
    mbk_mat33 E = mbk_mat33_sub(mbk_mat33_mul_transpose(*R, *R), mbk_mat33_identity());
    return mbk_mat33_max_abs(E) < 1e-10 && mbk_mat33_det(*R) > 0;
}

int mbk_constraint_add_rod(mbk_matter *m, int b1, mbk_vec3 s1, int b2, mbk_vec3 s2, double length)
{
    const char *fn = "mbk_constraint_add_rod";
    if (!(length > 0) || !isfinite(length))
        return mbk_set_error(MBK_EINVAL, "%s: length %g must be finite and > 0; for coincident points use "
                             "mbk_constraint_add_ball", fn, length);
    if (!finite3(s1, s2)) return mbk_set_error(MBK_EINVAL, "%s: stations must be finite", fn);
    const two_stations t = {s1, s2, length};
    const int bodies[2] = {b1, b2};
    return add_with(m, &rod_ops, &t, sizeof t, bodies, 2, fn);
}

int mbk_constraint_add_ball(mbk_matter *m, int b1, mbk_vec3 s1, int b2, mbk_vec3 s2)
{
    if (!finite3(s1, s2)) return mbk_set_error(MBK_EINVAL, "mbk_constraint_add_ball: stations must be finite");
    const two_stations t = {s1, s2, 0.0};
    const int bodies[2] = {b1, b2};
    return add_with(m, &ball_ops, &t, sizeof t, bodies, 2, "mbk_constraint_add_ball");
}

int mbk_constraint_add_weld(mbk_matter *m, int b1, const mbk_transform *X_B1F, int b2, const mbk_transform *X_B2M)
{
    const char *fn = "mbk_constraint_add_weld";
    if (!X_B1F || !X_B2M || !rotation_ok(&X_B1F->R) || !rotation_ok(&X_B2M->R) || !finite3(X_B1F->p, X_B2M->p))
        return mbk_set_error(MBK_EINVAL, "%s: frames must be finite rigid transforms", fn);
    frames fr = {X_B1F->R, X_B2M->R, {X_B1F->p, X_B2M->p, 0.0}};
    const int bodies[2] = {b1, b2};
    return add_with(m, &weld_ops, &fr, sizeof fr, bodies, 2, fn);
}

int mbk_constraint_add_constant_orientation(mbk_matter *m, int b1, const mbk_mat33 *R_B1F, int b2,
                                            const mbk_mat33 *R_B2M)
{
    if (!rotation_ok(R_B1F) || !rotation_ok(R_B2M))
        return mbk_set_error(MBK_EINVAL, "mbk_constraint_add_constant_orientation: give two rotation matrices");
    frames fr;
    memset(&fr, 0, sizeof fr);
    fr.R_B1F = *R_B1F;
    fr.R_B2M = *R_B2M;
    const int bodies[2] = {b1, b2};
    return add_with(m, &orientation_ops, &fr, sizeof fr, bodies, 2, "mbk_constraint_add_constant_orientation");
}

int mbk_constraint_add_point_in_plane(mbk_matter *m, int plane_body, mbk_vec3 normal, double height, int follower,
                                      mbk_vec3 station)
{
    const char *fn = "mbk_constraint_add_point_in_plane";
    point_follower p;
    memset(&p, 0, sizeof p);
    int rc = unit(normal, &p.n[0], fn, "normal");
    if (rc < 0) return rc;
    if (!isfinite(height) || !mbk_vec3_is_finite(station))
        return mbk_set_error(MBK_EINVAL, "%s: height and station must be finite", fn);
    p.h[0] = height;
    p.s = station;
    p.rows = 1;
    const int bodies[2] = {plane_body, follower};
    return add_with(m, &plane_ops, &p, sizeof p, bodies, 2, fn);
}

int mbk_constraint_add_point_on_line(mbk_matter *m, int line_body, mbk_vec3 direction, mbk_vec3 point, int follower,
                                     mbk_vec3 station)
{
    const char *fn = "mbk_constraint_add_point_on_line";
    point_follower p;
    memset(&p, 0, sizeof p);
    mbk_vec3 z = {0, 0, 0};
    int rc = unit(direction, &z, fn, "direction");
    if (rc < 0) return rc;
    if (!finite3(point, station)) return mbk_set_error(MBK_EINVAL, "%s: point and station must be finite", fn);
    /* the two normals as Simbody builds them: x across the smallest component of z */
    double ax = fabs(z.x), ay = fabs(z.y), az = fabs(z.z);
    int k = ax <= ay ? (ax <= az ? 0 : 2) : (ay <= az ? 1 : 2);
    mbk_vec3 e = mbk_vec3_make(k == 0, k == 1, k == 2);
    p.n[0] = mbk_vec3_normalize(mbk_vec3_cross(z, e));
    p.n[1] = mbk_vec3_normalize(mbk_vec3_cross(z, p.n[0]));
    p.point = point;
    p.s = station;
    p.rows = 2;
    const int bodies[2] = {line_body, follower};
    return add_with(m, &line_ops, &p, sizeof p, bodies, 2, fn);
}

int mbk_constraint_add_constant_angle(mbk_matter *m, int base, mbk_vec3 base_axis, int follower, mbk_vec3 follower_axis,
                                      double angle)
{
    const char *fn = "mbk_constraint_add_constant_angle";
    angle_axes c = {{0, 0, 0}, {0, 0, 0}, 0};
    int rc = unit(base_axis, &c.axis_b, fn, "base axis");
    if (rc < 0 || (rc = unit(follower_axis, &c.axis_f, fn, "follower axis")) < 0) return rc;
    if (!isfinite(angle)) return mbk_set_error(MBK_EINVAL, "%s: angle must be finite", fn);
    c.cos_angle = cos(angle);
    const int bodies[2] = {base, follower};
    return add_with(m, &angle_ops, &c, sizeof c, bodies, 2, fn);
}

int mbk_constraint_add_no_slip_1d(mbk_matter *m, int case_body, mbk_vec3 point, mbk_vec3 direction, int b0, int b1)
{
    const char *fn = "mbk_constraint_add_no_slip_1d";
    no_slip c = {{0, 0, 0}, {0, 0, 0}, 0, 0, 0};
    int rc = unit(direction, &c.dir, fn, "direction");
    if (rc < 0) return rc;
    if (!mbk_vec3_is_finite(point)) return mbk_set_error(MBK_EINVAL, "%s: point must be finite", fn);
    if (b0 == b1) return mbk_set_error(MBK_EINVAL, "%s: the two moving bodies must differ", fn);
    c.point = point;
    /* the case may be one of the moving bodies: name each body once */
    int bodies[3] = {b0, b1, case_body}, n = 2;
    c.k0 = 0;
    c.k1 = 1;
    c.kc = case_body == b0 ? 0 : case_body == b1 ? 1 : (n++, 2);
    return add_with(m, &no_slip_ops, &c, sizeof c, bodies, n, fn);
}
