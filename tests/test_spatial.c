/* test_spatial.c - checks the inline spatial algebra in mbk/spatial.h
 * against hand-computed values and against independent dense 6x6
 * computations and point-mass sums. */
#include "mbk/spatial.h"
#include "mbk_test.h"

#include <stdint.h>

#define PI 3.14159265358979323846
#define TOL 1e-14 /* round-off on O(1) quantities */

/* ---- check helpers (macros, so failures report the caller's line) ---- */

#define CHECK_VEC(a, ex, ey, ez, tol)                                                      \
    do {                                                                                   \
        mbk_vec3 cv_ = (a);                                                                \
        CHECK_NEAR(cv_.x, (ex), (tol));                                                    \
        CHECK_NEAR(cv_.y, (ey), (tol));                                                    \
        CHECK_NEAR(cv_.z, (ez), (tol));                                                    \
    } while (0)

#define CHECK_MAT_ROWS(A, r00, r01, r02, r10, r11, r12, r20, r21, r22, tol)                \
    do {                                                                                   \
        mbk_mat33 cm_ = (A);                                                               \
        CHECK_VEC(mbk_mat33_row(cm_, 0), r00, r01, r02, tol);                              \
        CHECK_VEC(mbk_mat33_row(cm_, 1), r10, r11, r12, tol);                              \
        CHECK_VEC(mbk_mat33_row(cm_, 2), r20, r21, r22, tol);                              \
    } while (0)

/* a (non-negative) error measure that must be below tol */
#define CHECK_SMALL(err, tol) CHECK_NEAR((err), 0.0, (tol))

/* ---- error measures ---- */

static double vec_err(mbk_vec3 a, mbk_vec3 b) { return mbk_vec3_norm(mbk_vec3_sub(a, b)); }

static double mat_err(mbk_mat33 A, mbk_mat33 B) { return mbk_mat33_max_abs(mbk_mat33_sub(A, B)); }

static double svec_err(mbk_spatial_vec a, mbk_spatial_vec b)
{
    double e1 = vec_err(a.w, b.w), e2 = vec_err(a.v, b.v);
    return e1 > e2 ? e1 : e2;
}

static double smat_err(mbk_spatial_mat A, mbk_spatial_mat B)
{
    double e[4], m = 0.0;
    int i;
    e[0] = mat_err(A.m00, B.m00); e[1] = mat_err(A.m01, B.m01);
    e[2] = mat_err(A.m10, B.m10); e[3] = mat_err(A.m11, B.m11);
    for (i = 0; i < 4; i++)
        if (e[i] > m) m = e[i];
    return m;
}

static double quat_err(mbk_quat a, mbk_quat b)
{
    double e = fabs(a.w - b.w);
    if (fabs(a.x - b.x) > e) e = fabs(a.x - b.x);
    if (fabs(a.y - b.y) > e) e = fabs(a.y - b.y);
    if (fabs(a.z - b.z) > e) e = fabs(a.z - b.z);
    return e;
}

/* error up to the sign ambiguity q ~ -q */
static double quat_err_sign(mbk_quat a, mbk_quat b)
{
    double e1 = quat_err(a, b), e2 = quat_err(a, mbk_quat_make(-b.w, -b.x, -b.y, -b.z));
    return e1 < e2 ? e1 : e2;
}

/* max |R R^T - 1| and |det R - 1| */
static double orthonormal_err(mbk_mat33 R)
{
    double e1 = mat_err(mbk_mat33_mul_transpose(R, R), mbk_mat33_identity());
    double e2 = fabs(mbk_mat33_det(R) - 1.0);
    return e1 > e2 ? e1 : e2;
}

/* ---- deterministic random numbers (xorshift64*) ---- */

static uint64_t rng_state = 0x9E3779B97F4A7C15ull;

static double rnd(void) /* uniform in [-1, 1) */
{
    rng_state ^= rng_state >> 12;
    rng_state ^= rng_state << 25;
    rng_state ^= rng_state >> 27;
    return (double)((rng_state * 2685821657736338717ull) >> 11) / 4503599627370496.0 - 1.0;
}

static mbk_vec3 rnd_vec(double scale)
{
    return mbk_vec3_make(scale * rnd(), scale * rnd(), scale * rnd());
}

static mbk_spatial_vec rnd_svec(void) { return mbk_spatial_vec_make(rnd_vec(2.0), rnd_vec(2.0)); }

static mbk_mat33 rnd_mat(void) { return mbk_mat33_from_rows(rnd_vec(1.0), rnd_vec(1.0), rnd_vec(1.0)); }

/* random unit quaternion with w >= 0 (rejection sampling in the 4-ball) */
static mbk_quat rnd_quat(void)
{
    mbk_quat q;
    double n2;
    do {
        q = mbk_quat_make(rnd(), rnd(), rnd(), rnd());
        n2 = q.w * q.w + q.x * q.x + q.y * q.y + q.z * q.z;
    } while (n2 < 0.01 || n2 > 1.0);
    q = mbk_quat_normalize(q);
    if (q.w < 0.0) q = mbk_quat_make(-q.w, -q.x, -q.y, -q.z);
    return q;
}

static mbk_mat33 rnd_rot(void) { return mbk_quat_to_mat33(rnd_quat()); }

/* ---- dense 6x6 reference implementations ---- */

typedef struct { double a[6][6]; } dense6;

static dense6 to_dense(mbk_spatial_mat M)
{
    dense6 D;
    int i, j;
    for (i = 0; i < 3; i++)
        for (j = 0; j < 3; j++) {
            D.a[i][j] = M.m00.m[i][j];
            D.a[i][j + 3] = M.m01.m[i][j];
            D.a[i + 3][j] = M.m10.m[i][j];
            D.a[i + 3][j + 3] = M.m11.m[i][j];
        }
    return D;
}

static mbk_spatial_mat from_dense(dense6 D)
{
    mbk_spatial_mat M;
    int i, j;
    for (i = 0; i < 3; i++)
        for (j = 0; j < 3; j++) {
            M.m00.m[i][j] = D.a[i][j];
            M.m01.m[i][j] = D.a[i][j + 3];
            M.m10.m[i][j] = D.a[i + 3][j];
            M.m11.m[i][j] = D.a[i + 3][j + 3];
        }
    return M;
}

static dense6 dense_mul(dense6 A, dense6 B)
{
    dense6 C;
    int i, j, k;
    for (i = 0; i < 6; i++)
        for (j = 0; j < 6; j++) {
            C.a[i][j] = 0.0;
            for (k = 0; k < 6; k++) C.a[i][j] += A.a[i][k] * B.a[k][j];
        }
    return C;
}

static dense6 dense_transpose(dense6 A)
{
    dense6 T;
    int i, j;
    for (i = 0; i < 6; i++)
        for (j = 0; j < 6; j++) T.a[i][j] = A.a[j][i];
    return T;
}

static mbk_spatial_vec dense_mul_vec(dense6 A, mbk_spatial_vec V)
{
    double x[6], y[6];
    int i, k;
    x[0] = V.w.x; x[1] = V.w.y; x[2] = V.w.z; x[3] = V.v.x; x[4] = V.v.y; x[5] = V.v.z;
    for (i = 0; i < 6; i++) {
        y[i] = 0.0;
        for (k = 0; k < 6; k++) y[i] += A.a[i][k] * x[k];
    }
    return mbk_spatial_vec_make(mbk_vec3_make(y[0], y[1], y[2]), mbk_vec3_make(y[3], y[4], y[5]));
}

static mbk_spatial_mat rnd_smat(void)
{
    return mbk_spatial_mat_make(rnd_mat(), rnd_mat(), rnd_mat(), rnd_mat());
}

/* motion cross-product matrix crm(a) = [[~w, 0], [~v, ~w]] built element by element */
static dense6 dense_crm(mbk_spatial_vec a)
{
    dense6 D;
    double w[3], v[3];
    int i, j;
    w[0] = a.w.x; w[1] = a.w.y; w[2] = a.w.z; v[0] = a.v.x; v[1] = a.v.y; v[2] = a.v.z;
    for (i = 0; i < 6; i++)
        for (j = 0; j < 6; j++) D.a[i][j] = 0.0;
    for (i = 0; i < 2; i++) { /* diagonal blocks ~w */
        int o = 3 * i;
        D.a[o + 0][o + 1] = -w[2]; D.a[o + 0][o + 2] = w[1];
        D.a[o + 1][o + 0] = w[2];  D.a[o + 1][o + 2] = -w[0];
        D.a[o + 2][o + 0] = -w[1]; D.a[o + 2][o + 1] = w[0];
    }
    D.a[3][1] = -v[2]; D.a[3][2] = v[1];
    D.a[4][0] = v[2];  D.a[4][2] = -v[0];
    D.a[5][0] = -v[1]; D.a[5][1] = v[0];
    return D;
}

/* ---- a rigid body made of point masses, everything computed from first principles ---- */

#define NPTS 4
static const double pt_mass[NPTS] = {1.0, 2.0, 0.5, 1.5};
static const double pt_pos[NPTS][3] = {
    {0.3, -0.2, 0.1}, {-0.4, 0.5, 0.2}, {0.1, 0.1, -0.6}, {0.7, 0.0, 0.3}};

/* position of point i relative to a new point O, re-expressed by R: R (p_i - o) */
static mbk_vec3 pt_rel(int i, mbk_mat33 R, mbk_vec3 o)
{
    mbk_vec3 p = mbk_vec3_make(pt_pos[i][0], pt_pos[i][1], pt_pos[i][2]);
    return mbk_mat33_mul_vec(R, mbk_vec3_sub(p, o));
}

/* 6x6 spatial inertia of the point set about O, in the frame given by R,
 * from sum m (|p|^2 delta - p p^T), sum m p, sum m, element by element */
static mbk_spatial_mat pts_spatial_inertia(mbk_mat33 R, mbk_vec3 o)
{
    mbk_mat33 I = mbk_mat33_zero(), Z = mbk_mat33_zero();
    double m = 0.0, h[3] = {0.0, 0.0, 0.0};
    int i, j, k;
    for (k = 0; k < NPTS; k++) {
        mbk_vec3 p = pt_rel(k, R, o);
        double pa[3];
        pa[0] = p.x; pa[1] = p.y; pa[2] = p.z;
        for (i = 0; i < 3; i++) {
            h[i] += pt_mass[k] * pa[i];
            for (j = 0; j < 3; j++)
                I.m[i][j] += pt_mass[k] * ((i == j ? mbk_vec3_norm2(p) : 0.0) - pa[i] * pa[j]);
        }
        m += pt_mass[k];
    }
    {
        /* [[I, ~h], [-~h, m 1]] with ~h written out */
        mbk_mat33 H = mbk_mat33_from_rows(mbk_vec3_make(0.0, -h[2], h[1]),
                                          mbk_vec3_make(h[2], 0.0, -h[0]),
                                          mbk_vec3_make(-h[1], h[0], 0.0));
        mbk_mat33 negH = Z, M1 = Z;
        for (i = 0; i < 3; i++) {
            M1.m[i][i] = m;
            for (j = 0; j < 3; j++) negH.m[i][j] = -H.m[i][j];
        }
        return mbk_spatial_mat_make(I, H, negH, M1);
    }
}

/* momentum (about O, expressed by R) and kinetic energy of the point set
 * moving with spatial velocity V at O (expressed by R), by summing points */
static mbk_spatial_vec pts_momentum(mbk_mat33 R, mbk_vec3 o, mbk_spatial_vec V, double *ke)
{
    mbk_spatial_vec h = mbk_spatial_vec_zero();
    int k;
    *ke = 0.0;
    for (k = 0; k < NPTS; k++) {
        mbk_vec3 p = pt_rel(k, R, o);
        mbk_vec3 vel = mbk_vec3_add(V.v, mbk_vec3_cross(V.w, p));
        mbk_vec3 lin = mbk_vec3_scale(vel, pt_mass[k]);
        h.w = mbk_vec3_add(h.w, mbk_vec3_cross(p, lin));
        h.v = mbk_vec3_add(h.v, lin);
        *ke += 0.5 * pt_mass[k] * mbk_vec3_norm2(vel);
    }
    return h;
}

/* mass properties of the point set in its own frame, via from_origin */
static mbk_mass_props pts_mass_props(void)
{
    mbk_spatial_mat M = pts_spatial_inertia(mbk_mat33_identity(), mbk_vec3_zero());
    double m = M.m11.m[0][0];
    /* ~(m c) is the top-right block: read m c from it */
    mbk_vec3 c = mbk_vec3_make(M.m01.m[2][1] / m, M.m01.m[0][2] / m, M.m01.m[1][0] / m);
    return mbk_mass_props_from_origin(m, c, M.m00);
}

/* ---- tests ---- */

static void test_vec3(void)
{
    mbk_vec3 a = mbk_vec3_make(1.0, 2.0, 3.0), b = mbk_vec3_make(4.0, -5.0, 6.0);
    mbk_vec3 x = mbk_vec3_make(1, 0, 0), y = mbk_vec3_make(0, 1, 0), z = mbk_vec3_make(0, 0, 1);
    mbk_vec3 n;

    CHECK(a.x == 1.0 && a.y == 2.0 && a.z == 3.0);
    CHECK_VEC(mbk_vec3_zero(), 0, 0, 0, 0);
    CHECK_VEC(mbk_vec3_add(a, b), 5, -3, 9, 0);
    CHECK_VEC(mbk_vec3_sub(a, b), -3, 7, -3, 0);
    CHECK_VEC(mbk_vec3_scale(a, -2.0), -2, -4, -6, 0);
    CHECK_VEC(mbk_vec3_neg(b), -4, 5, -6, 0);
    CHECK_NEAR(mbk_vec3_dot(a, b), 12.0, 0);
    CHECK_VEC(mbk_vec3_cross(a, mbk_vec3_make(4, 5, 6)), -3, 6, -3, 0);
    CHECK_VEC(mbk_vec3_cross(a, b), 27, 6, -13, 0); /* (12+15, 12-6, -5-8) */
    CHECK_VEC(mbk_vec3_cross(x, y), 0, 0, 1, 0);
    CHECK_VEC(mbk_vec3_cross(y, z), 1, 0, 0, 0);
    CHECK_VEC(mbk_vec3_cross(z, x), 0, 1, 0, 0);
    CHECK_VEC(mbk_vec3_cross(y, x), 0, 0, -1, 0);
    CHECK_NEAR(mbk_vec3_dot(mbk_vec3_cross(a, b), a), 0.0, TOL);
    CHECK_NEAR(mbk_vec3_norm(mbk_vec3_make(3, 4, 12)), 13.0, TOL);
    CHECK_NEAR(mbk_vec3_norm2(mbk_vec3_make(3, 4, 12)), 169.0, 0);
    CHECK_NEAR(mbk_vec3_norm(mbk_vec3_make(3e200, 4e200, 0)), 5e200, TOL); /* no overflow */
    n = mbk_vec3_normalize(mbk_vec3_make(3, 4, 12));
    CHECK_VEC(n, 3.0 / 13, 4.0 / 13, 12.0 / 13, TOL);
    CHECK_NEAR(mbk_vec3_norm(n), 1.0, TOL);
    n = mbk_vec3_normalize(mbk_vec3_zero());
    CHECK(n.x == 0.0 && n.y == 0.0 && n.z == 0.0);
    CHECK(mbk_vec3_is_finite(a));
    CHECK(!mbk_vec3_is_finite(mbk_vec3_make(1, NAN, 0)));
    CHECK(!mbk_vec3_is_finite(mbk_vec3_make(0, 0, -INFINITY)));
    CHECK(!mbk_vec3_is_finite(mbk_vec3_make(INFINITY, 0, 0)));
}

static void test_mat33(void)
{
    mbk_mat33 A = mbk_mat33_from_rows(mbk_vec3_make(1, 2, 3), mbk_vec3_make(4, 5, 6),
                                      mbk_vec3_make(7, 8, 10));
    mbk_mat33 B = mbk_mat33_from_rows(mbk_vec3_make(2, 0, 1), mbk_vec3_make(1, 3, 0),
                                      mbk_vec3_make(0, 1, 4));
    mbk_vec3 u = mbk_vec3_make(1, -1, 2);
    mbk_mat33 Ai, Bad;
    int i;

    CHECK_MAT_ROWS(mbk_mat33_identity(), 1, 0, 0, 0, 1, 0, 0, 0, 1, 0);
    CHECK_MAT_ROWS(mbk_mat33_zero(), 0, 0, 0, 0, 0, 0, 0, 0, 0, 0);
    CHECK_MAT_ROWS(mbk_mat33_diag(2, 3, 4), 2, 0, 0, 0, 3, 0, 0, 0, 4, 0);
    CHECK(A.m[1][2] == 6.0 && A.m[2][0] == 7.0); /* row-major m[row][col] */
    CHECK_VEC(mbk_mat33_row(A, 2), 7, 8, 10, 0);
    CHECK_VEC(mbk_mat33_column(A, 1), 2, 5, 8, 0);
    CHECK_VEC(mbk_mat33_column(A, 2), 3, 6, 10, 0);
    CHECK_MAT_ROWS(mbk_mat33_transpose(A), 1, 4, 7, 2, 5, 8, 3, 6, 10, 0);
    CHECK_MAT_ROWS(mbk_mat33_mul(A, B), 4, 9, 13, 13, 21, 28, 22, 34, 47, 0);
    CHECK_MAT_ROWS(mbk_mat33_transpose_mul(A, B), 6, 19, 29, 9, 23, 34, 12, 28, 43, 0);
    CHECK_MAT_ROWS(mbk_mat33_mul_transpose(A, B), 5, 7, 14, 14, 19, 29, 24, 31, 48, 0);
    CHECK_VEC(mbk_mat33_mul_vec(A, u), 5, 11, 19, 0);
    CHECK_VEC(mbk_mat33_transpose_mul_vec(A, u), 11, 13, 17, 0);
    CHECK_MAT_ROWS(mbk_mat33_add(A, B), 3, 2, 4, 5, 8, 6, 7, 9, 14, 0);
    CHECK_MAT_ROWS(mbk_mat33_sub(A, B), -1, 2, 2, 3, 2, 6, 7, 7, 6, 0);
    CHECK_MAT_ROWS(mbk_mat33_scale(B, 0.5), 1, 0, 0.5, 0.5, 1.5, 0, 0, 0.5, 2, 0);
    CHECK_MAT_ROWS(mbk_mat33_outer(mbk_vec3_make(1, 2, 3), mbk_vec3_make(1, 0, -1)),
                   1, 0, -1, 2, 0, -2, 3, 0, -3, 0);
    CHECK_NEAR(mbk_mat33_trace(A), 16.0, 0);
    CHECK_NEAR(mbk_mat33_det(A), -3.0, TOL);
    CHECK_NEAR(mbk_mat33_det(B), 2 * 12 - 0 + 1 * 1, TOL); /* 2(12-0) - 0 + 1(1-0) = 25 */
    CHECK_NEAR(mbk_mat33_det(mbk_mat33_diag(2, 3, 4)), 24.0, 0);
    CHECK_NEAR(mbk_mat33_det(mbk_mat33_from_rows(mbk_vec3_make(1, 2, 3), mbk_vec3_make(2, 4, 6),
                                                 mbk_vec3_make(0, 1, 1))), 0.0, 0);

    /* inverse = adj(A)/det(A), computed by hand */
    Ai = mbk_mat33_inverse(A);
    CHECK_MAT_ROWS(Ai, -2.0 / 3, -4.0 / 3, 1, -2.0 / 3, 11.0 / 3, -2, 1, -2, 1, 1e-14);
    CHECK_SMALL(mat_err(mbk_mat33_mul(A, Ai), mbk_mat33_identity()), 1e-14);
    CHECK_SMALL(mat_err(mbk_mat33_mul(Ai, A), mbk_mat33_identity()), 1e-14);
    CHECK_MAT_ROWS(mbk_mat33_inverse(mbk_mat33_diag(2, 4, -8)), 0.5, 0, 0, 0, 0.25, 0, 0, 0, -0.125, 0);
    for (i = 0; i < 20; i++) {
        mbk_mat33 Rm = mbk_mat33_add(rnd_mat(), mbk_mat33_diag(3, 3, 3)); /* well conditioned */
        CHECK_SMALL(mat_err(mbk_mat33_mul(Rm, mbk_mat33_inverse(Rm)), mbk_mat33_identity()), 1e-14);
    }

    /* skew: skew(a) b = a x b */
    CHECK_MAT_ROWS(mbk_mat33_skew(mbk_vec3_make(1, 2, 3)), 0, -3, 2, 3, 0, -1, -2, 1, 0, 0);
    CHECK_VEC(mbk_mat33_mul_vec(mbk_mat33_skew(mbk_vec3_make(1, 2, 3)), mbk_vec3_make(4, 5, 6)),
              -3, 6, -3, 0);
    for (i = 0; i < 10; i++) {
        mbk_vec3 p = rnd_vec(1.0), q = rnd_vec(1.0);
        CHECK_SMALL(vec_err(mbk_mat33_mul_vec(mbk_mat33_skew(p), q), mbk_vec3_cross(p, q)), TOL);
        /* skew(p)^2 = p p^T - |p|^2 1 */
        CHECK_SMALL(mat_err(mbk_mat33_mul(mbk_mat33_skew(p), mbk_mat33_skew(p)),
                            mbk_mat33_sub(mbk_mat33_outer(p, p),
                                          mbk_mat33_scale(mbk_mat33_identity(), mbk_vec3_norm2(p)))),
                    TOL);
    }

    CHECK(mbk_mat33_is_finite(A));
    Bad = A;
    Bad.m[2][1] = NAN;
    CHECK(!mbk_mat33_is_finite(Bad));
    Bad.m[2][1] = -INFINITY;
    CHECK(!mbk_mat33_is_finite(Bad));
    CHECK_NEAR(mbk_mat33_max_abs(mbk_mat33_diag(1, -7, 3)), 7.0, 0);
}

static void test_axis_angle(void)
{
    mbk_vec3 x = mbk_vec3_make(1, 0, 0), y = mbk_vec3_make(0, 1, 0), z = mbk_vec3_make(0, 0, 1);
    mbk_mat33 Rz = mbk_mat33_from_axis_angle(z, PI / 2);
    mbk_mat33 Rx = mbk_mat33_from_axis_angle(x, PI / 2);
    mbk_mat33 Ry = mbk_mat33_from_axis_angle(y, PI / 2);
    mbk_mat33 R;
    double c30 = sqrt(3.0) / 2;
    int i;

    /* 90 deg about z: x -> y, y -> -x, z -> z */
    CHECK_VEC(mbk_mat33_mul_vec(Rz, x), 0, 1, 0, TOL);
    CHECK_VEC(mbk_mat33_mul_vec(Rz, y), -1, 0, 0, TOL);
    CHECK_VEC(mbk_mat33_mul_vec(Rz, z), 0, 0, 1, TOL);
    CHECK_MAT_ROWS(Rz, 0, -1, 0, 1, 0, 0, 0, 0, 1, TOL);
    /* 90 deg about x: y -> z, z -> -y; about y: z -> x, x -> -z */
    CHECK_VEC(mbk_mat33_mul_vec(Rx, y), 0, 0, 1, TOL);
    CHECK_VEC(mbk_mat33_mul_vec(Rx, z), 0, -1, 0, TOL);
    CHECK_VEC(mbk_mat33_mul_vec(Ry, z), 1, 0, 0, TOL);
    CHECK_VEC(mbk_mat33_mul_vec(Ry, x), 0, 0, -1, TOL);
    /* 30 deg about x */
    CHECK_MAT_ROWS(mbk_mat33_from_axis_angle(x, PI / 6), 1, 0, 0, 0, c30, -0.5, 0, 0.5, c30, TOL);
    /* 120 deg about (1,1,1): cyclic permutation x->y->z->x; axis need not be unit */
    R = mbk_mat33_from_axis_angle(mbk_vec3_make(2, 2, 2), 2 * PI / 3);
    CHECK_MAT_ROWS(R, 0, 0, 1, 1, 0, 0, 0, 1, 0, TOL);
    /* zero axis: identity */
    CHECK_MAT_ROWS(mbk_mat33_from_axis_angle(mbk_vec3_zero(), 1.0), 1, 0, 0, 0, 1, 0, 0, 0, 1, 0);
    /* random: orthonormal, axis fixed, angle from trace, composition of angles */
    for (i = 0; i < 20; i++) {
        mbk_vec3 k = mbk_vec3_normalize(rnd_vec(1.0));
        double t = 3.0 * rnd(), t2 = 3.0 * rnd();
        R = mbk_mat33_from_axis_angle(k, t);
        CHECK_SMALL(orthonormal_err(R), 1e-14);
        CHECK_SMALL(vec_err(mbk_mat33_mul_vec(R, k), k), 1e-14);
        CHECK_NEAR(mbk_mat33_trace(R), 1.0 + 2.0 * cos(t), 1e-14);
        CHECK_SMALL(mat_err(mbk_mat33_mul(R, mbk_mat33_from_axis_angle(k, t2)),
                            mbk_mat33_from_axis_angle(k, t + t2)), 1e-14);
    }
}

static void test_quat(void)
{
    mbk_quat i = mbk_quat_make(0, 1, 0, 0), j = mbk_quat_make(0, 0, 1, 0);
    mbk_quat q, r;
    double s = sqrt(0.5), n30 = sqrt(30.0);
    int k;

    q = mbk_quat_identity();
    CHECK(q.w == 1.0 && q.x == 0.0 && q.y == 0.0 && q.z == 0.0);
    CHECK_MAT_ROWS(mbk_quat_to_mat33(q), 1, 0, 0, 0, 1, 0, 0, 0, 1, 0);
    /* Hamilton products: ij = k, ji = -k, ii = -1, and a general one */
    q = mbk_quat_mul(i, j);
    CHECK(q.w == 0 && q.x == 0 && q.y == 0 && q.z == 1);
    q = mbk_quat_mul(j, i);
    CHECK(q.w == 0 && q.x == 0 && q.y == 0 && q.z == -1);
    q = mbk_quat_mul(i, i);
    CHECK(q.w == -1 && q.x == 0 && q.y == 0 && q.z == 0);
    q = mbk_quat_mul(mbk_quat_make(1, 2, 3, 4), mbk_quat_make(5, 6, 7, 8));
    CHECK(q.w == -60 && q.x == 12 && q.y == 30 && q.z == 24);
    q = mbk_quat_conj(mbk_quat_make(1, 2, 3, 4));
    CHECK(q.w == 1 && q.x == -2 && q.y == -3 && q.z == -4);
    q = mbk_quat_normalize(mbk_quat_make(1, 2, 3, 4));
    CHECK_SMALL(quat_err(q, mbk_quat_make(1 / n30, 2 / n30, 3 / n30, 4 / n30)), TOL);
    q = mbk_quat_normalize(mbk_quat_make(0, 0, 0, 0));
    CHECK(q.w == 1 && q.x == 0 && q.y == 0 && q.z == 0);

    /* known matrices: 90 deg about z; 120 deg about (1,1,1); 180 deg about x */
    CHECK_MAT_ROWS(mbk_quat_to_mat33(mbk_quat_make(s, 0, 0, s)), 0, -1, 0, 1, 0, 0, 0, 0, 1, TOL);
    CHECK_MAT_ROWS(mbk_quat_to_mat33(mbk_quat_make(0.5, 0.5, 0.5, 0.5)), 0, 0, 1, 1, 0, 0, 0, 1, 0, 0);
    CHECK_MAT_ROWS(mbk_quat_to_mat33(i), 1, 0, 0, 0, -1, 0, 0, 0, -1, 0);
    q = mbk_quat_from_axis_angle(mbk_vec3_make(0, 0, 3), PI / 2);
    CHECK_SMALL(quat_err(q, mbk_quat_make(s, 0, 0, s)), TOL);
    q = mbk_quat_from_axis_angle(mbk_vec3_make(1, 1, 1), 2 * PI / 3);
    CHECK_SMALL(quat_err(q, mbk_quat_make(0.5, 0.5, 0.5, 0.5)), TOL);

    /* matrix -> quaternion on known matrices, one per Shepperd branch */
    q = mbk_mat33_to_quat(mbk_mat33_from_rows(mbk_vec3_make(0, -1, 0), mbk_vec3_make(1, 0, 0),
                                              mbk_vec3_make(0, 0, 1)));
    CHECK_SMALL(quat_err(q, mbk_quat_make(s, 0, 0, s)), TOL);          /* trace branch */
    q = mbk_mat33_to_quat(mbk_mat33_diag(1, -1, -1));
    CHECK_SMALL(quat_err(q, mbk_quat_make(0, 1, 0, 0)), 0);            /* x branch, w = 0 */
    q = mbk_mat33_to_quat(mbk_mat33_diag(-1, 1, -1));
    CHECK_SMALL(quat_err(q, mbk_quat_make(0, 0, 1, 0)), 0);            /* y branch */
    q = mbk_mat33_to_quat(mbk_mat33_diag(-1, -1, 1));
    CHECK_SMALL(quat_err(q, mbk_quat_make(0, 0, 0, 1)), 0);            /* z branch */
    q = mbk_mat33_to_quat(mbk_mat33_identity());
    CHECK_SMALL(quat_err(q, mbk_quat_identity()), 0);
    for (k = 0; k < 3; k++) { /* 170 deg about each axis: diagonal pivots, w > 0 small */
        mbk_vec3 ax = mbk_vec3_make(k == 0, k == 1, k == 2);
        double h = 0.5 * (PI - 0.1 * (k + 1));
        mbk_quat e = mbk_quat_make(cos(h), sin(h) * ax.x, sin(h) * ax.y, sin(h) * ax.z);
        q = mbk_mat33_to_quat(mbk_mat33_from_axis_angle(ax, 2 * h));
        CHECK_SMALL(quat_err(q, e), 1e-15);
        /* -170 deg gives w > 0 with negated vector part */
        q = mbk_mat33_to_quat(mbk_mat33_from_axis_angle(ax, -2 * h));
        CHECK_SMALL(quat_err(q, mbk_quat_conj(e)), 1e-15);
    }

    /* random unit quaternions: orthonormal matrix, product rule, conjugate,
     * round trip exactly (w >= 0 makes the quaternion unique) */
    for (k = 0; k < 30; k++) {
        mbk_quat a = rnd_quat(), b = rnd_quat();
        mbk_mat33 Ra = mbk_quat_to_mat33(a);
        mbk_vec3 ax = mbk_vec3_make(a.x, a.y, a.z);
        CHECK_SMALL(orthonormal_err(Ra), 1e-14);
        CHECK_SMALL(mat_err(mbk_quat_to_mat33(mbk_quat_mul(a, b)),
                            mbk_mat33_mul(Ra, mbk_quat_to_mat33(b))), 1e-14);
        CHECK_SMALL(mat_err(mbk_quat_to_mat33(mbk_quat_conj(a)), mbk_mat33_transpose(Ra)), 1e-15);
        r = mbk_mat33_to_quat(Ra);
        CHECK(r.w >= 0.0);
        CHECK_SMALL(quat_err(r, a), 1e-15);
        /* axis-angle of a gives back a and its matrix */
        q = mbk_quat_from_axis_angle(ax, 2.0 * atan2(mbk_vec3_norm(ax), a.w));
        CHECK_SMALL(quat_err(q, a), 1e-15);
        CHECK_SMALL(mat_err(mbk_mat33_from_axis_angle(ax, 2.0 * atan2(mbk_vec3_norm(ax), a.w)), Ra),
                    1e-14);
    }
    /* near w = 0 (rotations close to 180 deg): still exact; w = 0 up to sign */
    for (k = 0; k < 30; k++) {
        double w = k < 10 ? 1e-3 * fabs(rnd()) : k < 20 ? 1e-9 * fabs(rnd()) : 0.0;
        mbk_vec3 v = mbk_vec3_scale(mbk_vec3_normalize(rnd_vec(1.0)), sqrt(1.0 - w * w));
        mbk_quat a = mbk_quat_make(w, v.x, v.y, v.z);
        r = mbk_mat33_to_quat(mbk_quat_to_mat33(a));
        CHECK(r.w >= 0.0);
        if (w > 0.0)
            CHECK_SMALL(quat_err(r, a), 1e-15);
        else
            CHECK_SMALL(quat_err_sign(r, a), 1e-15);
    }
    /* a slightly non-orthonormal matrix still gives a unit quaternion */
    {
        mbk_mat33 Rn = mbk_mat33_scale(mbk_quat_to_mat33(rnd_quat()), 1.0 + 1e-9);
        q = mbk_mat33_to_quat(Rn);
        CHECK_NEAR(q.w * q.w + q.x * q.x + q.y * q.y + q.z * q.z, 1.0, 1e-15);
    }
}

static void test_body_xyz(void)
{
    mbk_vec3 ang, back;
    mbk_mat33 R, R2;
    int k;

    /* single-axis cases */
    R = mbk_mat33_from_body_xyz(mbk_vec3_make(PI / 2, 0, 0));
    CHECK_MAT_ROWS(R, 1, 0, 0, 0, 0, -1, 0, 1, 0, TOL);
    R = mbk_mat33_from_body_xyz(mbk_vec3_make(0, PI / 2, 0));
    CHECK_MAT_ROWS(R, 0, 0, 1, 0, 1, 0, -1, 0, 0, TOL);
    R = mbk_mat33_from_body_xyz(mbk_vec3_make(0, 0, PI / 2));
    CHECK_MAT_ROWS(R, 0, -1, 0, 1, 0, 0, 0, 0, 1, TOL);
    /* Rx(90) Ry(90) is the cyclic permutation x->y->z->x */
    R = mbk_mat33_from_body_xyz(mbk_vec3_make(PI / 2, PI / 2, 0));
    CHECK_MAT_ROWS(R, 0, 0, 1, 1, 0, 0, 0, 1, 0, TOL);
    /* order matters: Rz(90) Ry(90) written as body-xyz (0, 90, 90) */
    R = mbk_mat33_from_body_xyz(mbk_vec3_make(0, PI / 2, PI / 2));
    CHECK_MAT_ROWS(R, 0, 0, 1, 1, 0, 0, 0, 1, 0, TOL);
    R = mbk_mat33_from_body_xyz(mbk_vec3_make(PI / 2, 0, PI / 2));
    CHECK_MAT_ROWS(R, 0, -1, 0, 0, 0, -1, 1, 0, 0, TOL);

    /* R = Rx(a) Ry(b) Rz(c) on random angles, and exact round trips */
    for (k = 0; k < 40; k++) {
        mbk_vec3 x = mbk_vec3_make(1, 0, 0), y = mbk_vec3_make(0, 1, 0), z = mbk_vec3_make(0, 0, 1);
        ang = mbk_vec3_make(PI * rnd(), (PI / 2 - 0.01) * rnd(), PI * rnd());
        R = mbk_mat33_from_body_xyz(ang);
        R2 = mbk_mat33_mul(mbk_mat33_mul(mbk_mat33_from_axis_angle(x, ang.x),
                                         mbk_mat33_from_axis_angle(y, ang.y)),
                           mbk_mat33_from_axis_angle(z, ang.z));
        CHECK_SMALL(mat_err(R, R2), 1e-14);
        back = mbk_mat33_to_body_xyz(R);
        CHECK_SMALL(vec_err(back, ang), 1e-13);
    }
    /* angles outside the standard ranges come back in range, same rotation */
    for (k = 0; k < 20; k++) {
        ang = mbk_vec3_make(4.0 * rnd(), 3.0 * rnd(), 4.0 * rnd());
        R = mbk_mat33_from_body_xyz(ang);
        back = mbk_mat33_to_body_xyz(R);
        CHECK(fabs(back.x) <= PI && fabs(back.y) <= PI / 2 && fabs(back.z) <= PI);
        CHECK_SMALL(mat_err(mbk_mat33_from_body_xyz(back), R), 1e-14);
    }
    /* b = pi - b0 is the same rotation as (a + pi, b0, c + pi) */
    back = mbk_mat33_to_body_xyz(mbk_mat33_from_body_xyz(mbk_vec3_make(0.2, PI - 0.3, -0.4)));
    CHECK_VEC(back, 0.2 - PI, 0.3, PI - 0.4, 1e-14);

    /* gimbal lock: b = +-pi/2; a = 0 and c carries a + c (or c - a) */
    back = mbk_mat33_to_body_xyz(mbk_mat33_from_body_xyz(mbk_vec3_make(0.3, PI / 2, 0.5)));
    CHECK_VEC(back, 0.0, PI / 2, 0.8, 1e-14);
    back = mbk_mat33_to_body_xyz(mbk_mat33_from_body_xyz(mbk_vec3_make(0.3, -PI / 2, 0.5)));
    CHECK_VEC(back, 0.0, -PI / 2, 0.2, 1e-14);
    /* exactly singular matrix (Ry(90) times Rz(0.7), built with exact zeros) */
    R = mbk_mat33_from_rows(mbk_vec3_make(0, 0, 1), mbk_vec3_make(sin(0.7), cos(0.7), 0),
                            mbk_vec3_make(-cos(0.7), sin(0.7), 0));
    back = mbk_mat33_to_body_xyz(R);
    CHECK_VEC(back, 0.0, PI / 2, 0.7, 1e-15);
    CHECK(mbk_vec3_is_finite(back));
    /* close to the singularity: still reproduces R */
    for (k = 0; k < 10; k++) {
        double eps = pow(10.0, -3.0 - k);
        ang = mbk_vec3_make(PI * rnd(), (k % 2 ? 1 : -1) * (PI / 2 - eps), PI * rnd());
        R = mbk_mat33_from_body_xyz(ang);
        back = mbk_mat33_to_body_xyz(R);
        CHECK_SMALL(mat_err(mbk_mat33_from_body_xyz(back), R), 1e-14);
    }
}

static void test_transform(void)
{
    mbk_vec3 z = mbk_vec3_make(0, 0, 1);
    mbk_transform X = mbk_transform_identity(), Y, Z;
    int k;

    CHECK_MAT_ROWS(X.R, 1, 0, 0, 0, 1, 0, 0, 0, 1, 0);
    CHECK_VEC(X.p, 0, 0, 0, 0);
    X = mbk_transform_from_p(mbk_vec3_make(1, 2, 3));
    CHECK_MAT_ROWS(X.R, 1, 0, 0, 0, 1, 0, 0, 0, 1, 0);
    CHECK_VEC(mbk_transform_apply_point(X, mbk_vec3_make(1, 1, 1)), 2, 3, 4, 0);
    CHECK_VEC(mbk_transform_apply_vec(X, mbk_vec3_make(1, 1, 1)), 1, 1, 1, 0);

    /* X_AB: 90 deg about z_A, B origin at (1,2,3) in A */
    X = mbk_transform_from_axis_angle(z, PI / 2, mbk_vec3_make(1, 2, 3));
    CHECK_MAT_ROWS(X.R, 0, -1, 0, 1, 0, 0, 0, 0, 1, TOL);
    CHECK_VEC(X.p, 1, 2, 3, 0);
    CHECK_VEC(mbk_transform_apply_point(X, mbk_vec3_make(1, 0, 0)), 1, 3, 3, TOL);
    CHECK_VEC(mbk_transform_apply_point(X, mbk_vec3_make(0, 2, 1)), -1, 2, 4, TOL);
    CHECK_VEC(mbk_transform_apply_vec(X, mbk_vec3_make(1, 0, 0)), 0, 1, 0, TOL);
    CHECK_VEC(mbk_transform_invert_apply_point(X, mbk_vec3_make(1, 3, 3)), 1, 0, 0, TOL);
    CHECK_VEC(mbk_transform_invert_apply_vec(X, mbk_vec3_make(0, 1, 0)), 1, 0, 0, TOL);
    Y = mbk_transform_make(mbk_mat33_identity(), mbk_vec3_make(4, 5, 6));
    CHECK_VEC(Y.p, 4, 5, 6, 0);

    /* compose by hand: X_AB = (Rz90, (1,0,0)), X_BC = (1, (1,0,0)) -> p_AC = (1,1,0) */
    X = mbk_transform_from_axis_angle(z, PI / 2, mbk_vec3_make(1, 0, 0));
    Y = mbk_transform_from_p(mbk_vec3_make(1, 0, 0));
    Z = mbk_transform_compose(X, Y);
    CHECK_VEC(Z.p, 1, 1, 0, TOL);
    CHECK_MAT_ROWS(Z.R, 0, -1, 0, 1, 0, 0, 0, 0, 1, TOL);
    Z = mbk_transform_compose(Y, X); /* translate after rotating: p = (2,0,0) */
    CHECK_VEC(Z.p, 2, 0, 0, TOL);
    /* invert by hand: X_BA = (Rz(-90), (0,1,0)) */
    Z = mbk_transform_invert(X);
    CHECK_MAT_ROWS(Z.R, 0, 1, 0, -1, 0, 0, 0, 0, 1, TOL);
    CHECK_VEC(Z.p, 0, 1, 0, TOL);
    /* two 90 deg turns about z: 180 deg, p = (1,0,0) + Rz90 (1,0,0) = (1,1,0) */
    Z = mbk_transform_compose(X, X);
    CHECK_MAT_ROWS(Z.R, -1, 0, 0, 0, -1, 0, 0, 0, 1, TOL);
    CHECK_VEC(Z.p, 1, 1, 0, TOL);

    /* random transforms: inverse, associativity, point maps */
    for (k = 0; k < 15; k++) {
        mbk_transform A = mbk_transform_make(rnd_rot(), rnd_vec(3.0));
        mbk_transform B = mbk_transform_make(rnd_rot(), rnd_vec(3.0));
        mbk_transform C = mbk_transform_make(rnd_rot(), rnd_vec(3.0));
        mbk_transform L, Rr;
        mbk_vec3 q = rnd_vec(2.0);
        Z = mbk_transform_compose(A, mbk_transform_invert(A));
        CHECK_SMALL(mat_err(Z.R, mbk_mat33_identity()) + mbk_vec3_norm(Z.p), 1e-14);
        Z = mbk_transform_compose(mbk_transform_invert(A), A);
        CHECK_SMALL(mat_err(Z.R, mbk_mat33_identity()) + mbk_vec3_norm(Z.p), 1e-14);
        L = mbk_transform_compose(mbk_transform_compose(A, B), C);
        Rr = mbk_transform_compose(A, mbk_transform_compose(B, C));
        CHECK_SMALL(mat_err(L.R, Rr.R) + vec_err(L.p, Rr.p), 1e-13);
        /* X_AC applied to a point = X_AB applied to X_BC applied to it */
        CHECK_SMALL(vec_err(mbk_transform_apply_point(mbk_transform_compose(A, B), q),
                            mbk_transform_apply_point(A, mbk_transform_apply_point(B, q))), 1e-13);
        CHECK_SMALL(vec_err(mbk_transform_invert_apply_point(A, mbk_transform_apply_point(A, q)), q),
                    1e-14);
        CHECK_SMALL(vec_err(mbk_transform_invert_apply_point(A, q),
                            mbk_transform_apply_point(mbk_transform_invert(A), q)), 1e-14);
        CHECK_SMALL(vec_err(mbk_transform_invert_apply_vec(A, mbk_transform_apply_vec(A, q)), q),
                    1e-14);
        /* vectors are not translated: difference of two points */
        CHECK_SMALL(vec_err(mbk_vec3_sub(mbk_transform_apply_point(A, q),
                                         mbk_transform_apply_point(A, mbk_vec3_zero())),
                            mbk_transform_apply_vec(A, q)), 1e-14);
    }
}

static void test_spatial_vec(void)
{
    mbk_vec3 x = mbk_vec3_make(1, 0, 0), y = mbk_vec3_make(0, 1, 0), z = mbk_vec3_make(0, 0, 1);
    mbk_spatial_vec a = mbk_spatial_vec_make(x, y), b = mbk_spatial_vec_make(y, z), r;
    mbk_mat33 Rz = mbk_mat33_from_axis_angle(z, PI / 2);
    int k;

    CHECK_VEC(a.w, 1, 0, 0, 0);
    CHECK_VEC(a.v, 0, 1, 0, 0);
    r = mbk_spatial_vec_zero();
    CHECK(mbk_vec3_norm2(r.w) == 0.0 && mbk_vec3_norm2(r.v) == 0.0);
    r = mbk_spatial_vec_add(a, b);
    CHECK_VEC(r.w, 1, 1, 0, 0);
    CHECK_VEC(r.v, 0, 1, 1, 0);
    r = mbk_spatial_vec_sub(a, b);
    CHECK_VEC(r.w, 1, -1, 0, 0);
    CHECK_VEC(r.v, 0, 1, -1, 0);
    r = mbk_spatial_vec_scale(a, 3.0);
    CHECK_VEC(r.w, 3, 0, 0, 0);
    CHECK_VEC(r.v, 0, 3, 0, 0);
    CHECK_NEAR(mbk_spatial_vec_dot(mbk_spatial_vec_make(mbk_vec3_make(1, 2, 3), mbk_vec3_make(4, 5, 6)),
                                   mbk_spatial_vec_make(mbk_vec3_make(1, 0, -1), mbk_vec3_make(2, 1, 0))),
               -2.0 + 13.0, 0);

    /* hand-computed cross products */
    r = mbk_spatial_cross_motion(a, b); /* (x*y, x*z + y*y) */
    CHECK_VEC(r.w, 0, 0, 1, 0);
    CHECK_VEC(r.v, 0, -1, 0, 0);
    r = mbk_spatial_cross_force(a, b); /* (x*y + y*z, x*z) */
    CHECK_VEC(r.w, 1, 0, 1, 0);
    CHECK_VEC(r.v, 0, -1, 0, 0);
    r = mbk_spatial_cross_motion(a, a);
    CHECK(mbk_vec3_norm2(r.w) == 0.0 && mbk_vec3_norm2(r.v) == 0.0);

    /* rotate: 90 deg about z re-expresses both parts */
    r = mbk_spatial_rotate(Rz, mbk_spatial_vec_make(x, mbk_vec3_make(0, 2, 5)));
    CHECK_VEC(r.w, 0, 1, 0, TOL);
    CHECK_VEC(r.v, -2, 0, 5, TOL);

    /* shift: spinning about z at P, point Q one unit along x moves along +y */
    r = mbk_spatial_shift_motion(mbk_spatial_vec_make(z, mbk_vec3_zero()), x);
    CHECK_VEC(r.w, 0, 0, 1, 0);
    CHECK_VEC(r.v, 0, 1, 0, 0);
    r = mbk_spatial_shift_motion(mbk_spatial_vec_make(mbk_vec3_make(0, 0, 2), mbk_vec3_make(1, 1, 1)),
                                 mbk_vec3_make(0, 3, 0)); /* v + (0,0,2) x (0,3,0) = v + (-6,0,0) */
    CHECK_VEC(r.v, -5, 1, 1, 0);
    /* force f = y applied at P: about Q = P + x its moment is -(x * y) = -z */
    r = mbk_spatial_shift_force(mbk_spatial_vec_make(mbk_vec3_zero(), y), x);
    CHECK_VEC(r.w, 0, 0, -1, 0);
    CHECK_VEC(r.v, 0, 1, 0, 0);
    r = mbk_spatial_shift_force(mbk_spatial_vec_make(mbk_vec3_make(1, 2, 3), mbk_vec3_make(0, 0, 4)),
                                mbk_vec3_make(1, 0, 0)); /* m - (1,0,0) x (0,0,4) = m - (0,-4,0) */
    CHECK_VEC(r.w, 1, 6, 3, 0);

    for (k = 0; k < 15; k++) {
        mbk_spatial_vec A = rnd_svec(), B = rnd_svec(), F = rnd_svec(), V = rnd_svec();
        dense6 crm = dense_crm(A);
        dense6 crf = dense_transpose(crm);
        mbk_spatial_mat Mcrm = mbk_spatial_mat_make(mbk_mat33_skew(A.w), mbk_mat33_zero(),
                                                    mbk_mat33_skew(A.v), mbk_mat33_skew(A.w));
        mbk_vec3 rr = rnd_vec(2.0);
        mbk_mat33 R = rnd_rot();
        int i, j;
        for (i = 0; i < 6; i++)
            for (j = 0; j < 6; j++) crf.a[i][j] = -crf.a[i][j]; /* crf = -crm^T */
        /* against the 6x6 matrix forms */
        CHECK_SMALL(svec_err(mbk_spatial_cross_motion(A, B), dense_mul_vec(crm, B)), 1e-14);
        CHECK_SMALL(svec_err(mbk_spatial_cross_force(A, F), dense_mul_vec(crf, F)), 1e-14);
        CHECK_SMALL(svec_err(mbk_spatial_cross_motion(A, B), mbk_spatial_mat_mul_vec(Mcrm, B)), 1e-14);
        /* duality (A x B) . F = -B . (A x* F); antisymmetry; no power from gyroscopic term */
        CHECK_NEAR(mbk_spatial_vec_dot(mbk_spatial_cross_motion(A, B), F),
                   -mbk_spatial_vec_dot(B, mbk_spatial_cross_force(A, F)), 1e-13);
        CHECK_SMALL(svec_err(mbk_spatial_cross_motion(A, B),
                             mbk_spatial_vec_scale(mbk_spatial_cross_motion(B, A), -1.0)), 1e-14);
        CHECK_NEAR(mbk_spatial_vec_dot(V, mbk_spatial_cross_force(V, F)), 0.0, 1e-13);
        /* power F.V is independent of the reference point and of the frame */
        CHECK_NEAR(mbk_spatial_vec_dot(F, V),
                   mbk_spatial_vec_dot(mbk_spatial_shift_force(F, rr), mbk_spatial_shift_motion(V, rr)),
                   1e-13);
        CHECK_NEAR(mbk_spatial_vec_dot(F, V),
                   mbk_spatial_vec_dot(mbk_spatial_rotate(R, F), mbk_spatial_rotate(R, V)), 1e-13);
        /* shifting there and back is the identity; shifts add */
        CHECK_SMALL(svec_err(mbk_spatial_shift_motion(mbk_spatial_shift_motion(V, rr), mbk_vec3_neg(rr)),
                             V), 1e-14);
        CHECK_SMALL(svec_err(mbk_spatial_shift_force(mbk_spatial_shift_force(F, rr), x),
                             mbk_spatial_shift_force(F, mbk_vec3_add(rr, x))), 1e-14);
    }
}

static void test_spatial_mat(void)
{
    mbk_spatial_mat Z = mbk_spatial_mat_zero(), I6 = mbk_spatial_mat_identity(), M;
    mbk_spatial_vec V = mbk_spatial_vec_make(mbk_vec3_make(1, 2, 3), mbk_vec3_make(-1, 0, 2)), r;
    int k;

    CHECK_SMALL(mbk_mat33_max_abs(Z.m00) + mbk_mat33_max_abs(Z.m01) + mbk_mat33_max_abs(Z.m10) +
                mbk_mat33_max_abs(Z.m11), 0);
    r = mbk_spatial_mat_mul_vec(I6, V);
    CHECK_SMALL(svec_err(r, V), 0);
    /* blocks act where they should: M = [[2*1, 1], [skew(z), 0]] */
    M = mbk_spatial_mat_make(mbk_mat33_diag(2, 2, 2), mbk_mat33_identity(),
                             mbk_mat33_skew(mbk_vec3_make(0, 0, 1)), mbk_mat33_zero());
    r = mbk_spatial_mat_mul_vec(M, V); /* (2w + v, z x w) */
    CHECK_VEC(r.w, 1, 4, 8, 0);
    CHECK_VEC(r.v, -2, 1, 0, 0);
    r = mbk_spatial_mat_mul_vec(mbk_spatial_mat_transpose(M), V); /* (2w + skew(z)^T v, w) */
    CHECK_VEC(r.w, 2, 5, 6, 0);
    CHECK_VEC(r.v, 1, 2, 3, 0);
    r = mbk_spatial_mat_mul_vec(mbk_spatial_mat_scale(M, -1.0), V);
    CHECK_VEC(r.w, -1, -4, -8, 0);
    /* outer product by hand: a b^T V = a (b . V) */
    {
        mbk_spatial_vec a = mbk_spatial_vec_make(mbk_vec3_make(1, 0, 0), mbk_vec3_make(0, 2, 0));
        mbk_spatial_vec b = mbk_spatial_vec_make(mbk_vec3_make(0, 1, 0), mbk_vec3_make(0, 0, 3));
        mbk_spatial_mat O = mbk_spatial_mat_outer(a, b);
        CHECK(O.m00.m[0][1] == 1.0 && O.m01.m[0][2] == 3.0 && O.m10.m[1][1] == 2.0 &&
              O.m11.m[1][2] == 6.0);
        CHECK_NEAR(mbk_mat33_max_abs(O.m00) + mbk_mat33_max_abs(O.m01) + mbk_mat33_max_abs(O.m10) +
                   mbk_mat33_max_abs(O.m11), 1 + 3 + 2 + 6, 0);
        r = mbk_spatial_mat_mul_vec(O, V); /* b.V = 2 + 6 = 8 */
        CHECK_VEC(r.w, 8, 0, 0, 0);
        CHECK_VEC(r.v, 0, 16, 0, 0);
    }

    /* random: blockwise operations against dense 6x6 ones */
    for (k = 0; k < 20; k++) {
        mbk_spatial_mat A = rnd_smat(), B = rnd_smat();
        mbk_spatial_vec a = rnd_svec(), b = rnd_svec(), c = rnd_svec();
        dense6 Ad = to_dense(A), Bd = to_dense(B), Sd;
        int i, j;
        CHECK_SMALL(smat_err(mbk_spatial_mat_mul(A, B), from_dense(dense_mul(Ad, Bd))), 1e-14);
        CHECK_SMALL(smat_err(mbk_spatial_mat_transpose(A), from_dense(dense_transpose(Ad))), 0);
        CHECK_SMALL(svec_err(mbk_spatial_mat_mul_vec(A, a), dense_mul_vec(Ad, a)), 1e-14);
        for (i = 0; i < 6; i++)
            for (j = 0; j < 6; j++) Sd.a[i][j] = Ad.a[i][j] + Bd.a[i][j];
        CHECK_SMALL(smat_err(mbk_spatial_mat_add(A, B), from_dense(Sd)), 0);
        for (i = 0; i < 6; i++)
            for (j = 0; j < 6; j++) Sd.a[i][j] = Ad.a[i][j] - Bd.a[i][j];
        CHECK_SMALL(smat_err(mbk_spatial_mat_sub(A, B), from_dense(Sd)), 0);
        CHECK_SMALL(svec_err(mbk_spatial_mat_mul_vec(mbk_spatial_mat_outer(a, b), c),
                             mbk_spatial_vec_scale(a, mbk_spatial_vec_dot(b, c))), 1e-14);
        CHECK_SMALL(smat_err(mbk_spatial_mat_mul(A, I6), A), 0);
        /* (AB)^T = B^T A^T */
        CHECK_SMALL(smat_err(mbk_spatial_mat_transpose(mbk_spatial_mat_mul(A, B)),
                             mbk_spatial_mat_mul(mbk_spatial_mat_transpose(B), mbk_spatial_mat_transpose(A))),
                    1e-14);
    }
}

static void test_mass_props(void)
{
    /* uniform box 1 x 0.1 x 0.1 m, 1 kg, spanning x in [0,1]: com (0.5,0,0) */
    mbk_mat33 Ic = mbk_mat33_diag(0.02 / 12, 1.01 / 12, 1.01 / 12);
    mbk_mass_props mp = mbk_mass_props_from_central(1.0, mbk_vec3_make(0.5, 0, 0), Ic), mp2;
    mbk_mat33 Io = mbk_mass_props_inertia_about_origin(mp);

    CHECK(mp.mass == 1.0 && mp.com.x == 0.5 && mp.inertia.m[1][1] == 1.01 / 12);
    /* Ixx unchanged (com on the x axis); Iyy = Izz = m(L^2/3 + h^2/12) = 4.01/12 */
    CHECK_MAT_ROWS(Io, 0.02 / 12, 0, 0, 0, 4.01 / 12, 0, 0, 0, 4.01 / 12, 1e-15);
    mp2 = mbk_mass_props_from_origin(1.0, mbk_vec3_make(0.5, 0, 0), mbk_mat33_diag(0.02 / 12, 4.01 / 12, 4.01 / 12));
    CHECK_SMALL(mat_err(mp2.inertia, Ic), 1e-15);
    CHECK_NEAR(mp2.mass, 1.0, 0);
    /* off-axis com (0.5, 0.2, 0), mass 2: I_o = I_c + 2 [[0.04, -0.1, 0], [-0.1, 0.25, 0], [0, 0, 0.29]] */
    mp = mbk_mass_props_from_central(2.0, mbk_vec3_make(0.5, 0.2, 0), Ic);
    Io = mbk_mass_props_inertia_about_origin(mp);
    CHECK_MAT_ROWS(Io, 0.02 / 12 + 0.08, -0.2, 0, -0.2, 1.01 / 12 + 0.5, 0, 0, 0, 1.01 / 12 + 0.58,
                   1e-15);
    mp2 = mbk_mass_props_from_origin(2.0, mbk_vec3_make(0.5, 0.2, 0), Io);
    CHECK_SMALL(mat_err(mp2.inertia, Ic), 1e-15);
    CHECK_VEC(mp2.com, 0.5, 0.2, 0, 0);
    /* point mass 3 kg at (0,0,2): I_o = diag(12, 12, 0), central 0 */
    CHECK_MAT_ROWS(mbk_inertia_of_point_mass(3.0, mbk_vec3_make(0, 0, 2)), 12, 0, 0, 0, 12, 0, 0, 0, 0, 0);
    mp = mbk_mass_props_from_central(3.0, mbk_vec3_make(0, 0, 2), mbk_mat33_zero());
    CHECK_MAT_ROWS(mbk_mass_props_inertia_about_origin(mp), 12, 0, 0, 0, 12, 0, 0, 0, 0, 0);

    /* the box's spatial inertia about its origin, by hand */
    {
        mbk_spatial_mat M;
        mbk_spatial_vec h;
        mp = mbk_mass_props_from_central(1.0, mbk_vec3_make(0.5, 0, 0), Ic);
        M = mbk_spatial_inertia_from_mass_props(mp);
        CHECK_MAT_ROWS(M.m00, 0.02 / 12, 0, 0, 0, 4.01 / 12, 0, 0, 0, 4.01 / 12, 1e-15);
        CHECK_MAT_ROWS(M.m01, 0, 0, 0, 0, 0, -0.5, 0, 0.5, 0, 0);
        CHECK_MAT_ROWS(M.m10, 0, 0, 0, 0, 0, 0.5, 0, -0.5, 0, 0);
        CHECK_MAT_ROWS(M.m11, 1, 0, 0, 0, 1, 0, 0, 0, 1, 0);
        /* spinning about z at the origin: com moves at (0, 0.5, 0); h_o = (0,0,4.01/12) */
        h = mbk_spatial_mat_mul_vec(M, mbk_spatial_vec_make(mbk_vec3_make(0, 0, 1), mbk_vec3_zero()));
        CHECK_VEC(h.w, 0, 0, 4.01 / 12, 1e-15);
        CHECK_VEC(h.v, 0, 0.5, 0, 1e-15);
        /* translating along y: linear momentum (0,1,0); moment c x p = (0,0,0.5) */
        h = mbk_spatial_mat_mul_vec(M, mbk_spatial_vec_make(mbk_vec3_zero(), mbk_vec3_make(0, 1, 0)));
        CHECK_VEC(h.w, 0, 0, 0.5, 1e-15);
        CHECK_VEC(h.v, 0, 1, 0, 0);
        /* the same spin about the com (shifted to Q = com) has momentum (I_c w, 0) */
        h = mbk_spatial_mat_mul_vec(mbk_spatial_inertia_shift(M, mbk_vec3_make(0.5, 0, 0)),
                                    mbk_spatial_vec_make(mbk_vec3_make(0, 0, 1), mbk_vec3_zero()));
        CHECK_VEC(h.w, 0, 0, 1.01 / 12, 1e-15);
        CHECK_VEC(h.v, 0, 0, 0, 1e-15);
    }
}

static void test_spatial_inertia(void)
{
    mbk_mat33 I3 = mbk_mat33_identity();
    mbk_mass_props mp = pts_mass_props();
    mbk_spatial_mat M = mbk_spatial_inertia_from_mass_props(mp);
    mbk_spatial_mat Mpts = pts_spatial_inertia(I3, mbk_vec3_zero());
    mbk_spatial_vec h;
    double ke;
    int k;

    /* hand-computed small bodies */
    {
        /* unit masses at (+-1,0,0): I_o = diag(0,2,2), com 0 */
        mbk_mass_props two = mbk_mass_props_from_origin(2.0, mbk_vec3_zero(), mbk_mat33_diag(0, 2, 2));
        mbk_mass_props one = mbk_mass_props_from_central(2.0, mbk_vec3_make(0, 1, 0), mbk_mat33_zero());
        h = mbk_spatial_mat_mul_vec(mbk_spatial_inertia_from_mass_props(two),
                                    mbk_spatial_vec_make(mbk_vec3_make(0, 0, 1), mbk_vec3_zero()));
        CHECK_VEC(h.w, 0, 0, 2, 0);
        CHECK_VEC(h.v, 0, 0, 0, 0);
        /* 2 kg at (0,1,0) moving with v = x: h = ((0,1,0) x (2,0,0), (2,0,0)) */
        h = mbk_spatial_mat_mul_vec(mbk_spatial_inertia_from_mass_props(one),
                                    mbk_spatial_vec_make(mbk_vec3_zero(), mbk_vec3_make(1, 0, 0)));
        CHECK_VEC(h.w, 0, 0, -2, 0);
        CHECK_VEC(h.v, 2, 0, 0, 0);
        /* spinning about x: the point moves at x * y = z: h = (y x 2z, 2z) = ((2,0,0), (0,0,2)) */
        h = mbk_spatial_mat_mul_vec(mbk_spatial_inertia_from_mass_props(one),
                                    mbk_spatial_vec_make(mbk_vec3_make(1, 0, 0), mbk_vec3_zero()));
        CHECK_VEC(h.w, 2, 0, 0, 0);
        CHECK_VEC(h.v, 0, 0, 2, 0);
    }

    /* point set: mass props and spatial inertia agree with sums over points */
    CHECK_NEAR(mp.mass, 5.0, 0);
    CHECK_VEC(mp.com, (0.3 - 0.8 + 0.05 + 1.05) / 5, (-0.2 + 1.0 + 0.05 + 0.0) / 5,
              (0.1 + 0.4 - 0.3 + 0.45) / 5, 1e-15);
    CHECK(mbk_mass_props_is_valid(mp));
    CHECK(mbk_mat33_is_spd(mp.inertia));
    CHECK_SMALL(smat_err(M, Mpts), 1e-15);
    CHECK_SMALL(smat_err(M, mbk_spatial_mat_transpose(M)), 0);
    for (k = 0; k < 20; k++) {
        mbk_spatial_vec V = rnd_svec();
        h = pts_momentum(I3, mbk_vec3_zero(), V, &ke);
        CHECK_SMALL(svec_err(mbk_spatial_mat_mul_vec(M, V), h), 1e-14);
        CHECK_NEAR(0.5 * mbk_spatial_vec_dot(V, mbk_spatial_mat_mul_vec(M, V)), ke, 1e-14);
    }

    /* shift: equals the inertia built directly about Q; momentum shifts like a force */
    for (k = 0; k < 20; k++) {
        mbk_vec3 r = rnd_vec(2.0);
        mbk_spatial_mat MQ = mbk_spatial_inertia_shift(M, r);
        mbk_spatial_vec V = rnd_svec(), VQ = mbk_spatial_shift_motion(V, r);
        double ke2;
        CHECK_SMALL(smat_err(MQ, pts_spatial_inertia(I3, r)), 1e-14);
        CHECK_SMALL(svec_err(mbk_spatial_mat_mul_vec(MQ, VQ),
                             mbk_spatial_shift_force(mbk_spatial_mat_mul_vec(M, V), r)), 1e-13);
        h = pts_momentum(I3, r, VQ, &ke2);
        CHECK_SMALL(svec_err(mbk_spatial_mat_mul_vec(MQ, VQ), h), 1e-13);
        CHECK_NEAR(0.5 * mbk_spatial_vec_dot(VQ, mbk_spatial_mat_mul_vec(MQ, VQ)),
                   0.5 * mbk_spatial_vec_dot(V, mbk_spatial_mat_mul_vec(M, V)), 1e-13);
        /* shifting back returns M */
        CHECK_SMALL(smat_err(mbk_spatial_inertia_shift(MQ, mbk_vec3_neg(r)), M), 1e-14);
    }
    /* shift of a general symmetric 6x6 (e.g. articulated) inertia is S M S^T */
    for (k = 0; k < 10; k++) {
        mbk_spatial_mat A = rnd_smat();
        mbk_spatial_mat G = mbk_spatial_mat_add(A, mbk_spatial_mat_transpose(A));
        mbk_vec3 r = rnd_vec(2.0);
        mbk_spatial_mat S = mbk_spatial_mat_make(I3, mbk_mat33_scale(mbk_mat33_skew(r), -1.0),
                                                 mbk_mat33_zero(), I3);
        dense6 Sd = to_dense(S);
        dense6 ref = dense_mul(dense_mul(Sd, to_dense(G)), dense_transpose(Sd));
        CHECK_SMALL(smat_err(mbk_spatial_inertia_shift(G, r), from_dense(ref)), 1e-13);
    }

    /* rotate: equals the inertia built from rotated points; energy invariant */
    for (k = 0; k < 20; k++) {
        mbk_mat33 R = rnd_rot();
        mbk_spatial_mat MA = mbk_spatial_inertia_rotate(R, M);
        mbk_spatial_vec V = rnd_svec(), VA = mbk_spatial_rotate(R, V);
        CHECK_SMALL(smat_err(MA, pts_spatial_inertia(R, mbk_vec3_zero())), 1e-14);
        CHECK_SMALL(svec_err(mbk_spatial_mat_mul_vec(MA, VA),
                             mbk_spatial_rotate(R, mbk_spatial_mat_mul_vec(M, V))), 1e-13);
        CHECK_NEAR(0.5 * mbk_spatial_vec_dot(VA, mbk_spatial_mat_mul_vec(MA, VA)),
                   0.5 * mbk_spatial_vec_dot(V, mbk_spatial_mat_mul_vec(M, V)), 1e-14);
    }
    /* full re-expression in Ground: body at X_GB, V given at Bo in B; move both
     * to Go in G; the kinetic energy is the same */
    for (k = 0; k < 20; k++) {
        mbk_transform X_GB = mbk_transform_make(rnd_rot(), rnd_vec(3.0));
        mbk_spatial_vec V_B = rnd_svec();
        mbk_vec3 r = mbk_vec3_neg(X_GB.p); /* from Bo to Go, in G */
        mbk_spatial_mat M_G = mbk_spatial_inertia_shift(mbk_spatial_inertia_rotate(X_GB.R, M), r);
        mbk_spatial_vec V_G = mbk_spatial_shift_motion(mbk_spatial_rotate(X_GB.R, V_B), r);
        double ke_B = 0.5 * mbk_spatial_vec_dot(V_B, mbk_spatial_mat_mul_vec(M, V_B));
        double ke_G = 0.5 * mbk_spatial_vec_dot(V_G, mbk_spatial_mat_mul_vec(M_G, V_G));
        CHECK_NEAR(ke_G, ke_B, 1e-13);
        /* and M_G built from the points' positions in G directly */
        CHECK_SMALL(smat_err(M_G, pts_spatial_inertia(X_GB.R, mbk_transform_invert_apply_point(
                                                                   X_GB, mbk_vec3_zero()))),
                    1e-13);
    }
}

static void test_validity(void)
{
    mbk_mat33 Ic = mbk_mat33_diag(0.02 / 12, 1.01 / 12, 1.01 / 12), A;
    mbk_vec3 c = mbk_vec3_make(0.5, 0, 0);
    mbk_mass_props mp;
    mbk_mat33 R = mbk_mat33_from_body_xyz(mbk_vec3_make(0.3, -0.7, 1.1));

    /* SPD (Sylvester) */
    CHECK(mbk_mat33_is_spd(mbk_mat33_diag(1, 2, 3)));
    CHECK(mbk_mat33_is_spd(Ic));
    CHECK(mbk_mat33_is_spd(mbk_mat33_from_rows(mbk_vec3_make(2, 1, 0), mbk_vec3_make(1, 2, 0),
                                               mbk_vec3_make(0, 0, 1))));
    CHECK(mbk_mat33_is_spd(mbk_mat33_rotate_congruence(R, mbk_mat33_diag(1e-6, 1, 1))));
    CHECK(!mbk_mat33_is_spd(mbk_mat33_diag(1, 0, 1)));
    CHECK(!mbk_mat33_is_spd(mbk_mat33_diag(1, -1, 1)));
    CHECK(!mbk_mat33_is_spd(mbk_mat33_diag(-1, -1, -1)));
    CHECK(!mbk_mat33_is_spd(mbk_mat33_zero()));
    CHECK(!mbk_mat33_is_spd(mbk_mat33_from_rows(mbk_vec3_make(1, 2, 0), mbk_vec3_make(2, 1, 0),
                                                mbk_vec3_make(0, 0, 1)))); /* minor 2 = -3 */
    CHECK(!mbk_mat33_is_spd(mbk_mat33_from_rows(mbk_vec3_make(1, 2, 0), mbk_vec3_make(2, 1, 0),
                                                mbk_vec3_make(0, 0, -1)))); /* minor 2 < 0, det > 0 */
    CHECK(!mbk_mat33_is_spd(mbk_mat33_from_rows(mbk_vec3_make(2, 1, 1), mbk_vec3_make(1, 2, 1),
                                                mbk_vec3_make(1, 1, 0.5)))); /* det = -0.5 */
    CHECK(!mbk_mat33_is_spd(mbk_mat33_rotate_congruence(R, mbk_mat33_diag(0, 1, 1))));
    /* any finite scale: the minors of 1e110 entries (1e330) must not overflow, nor
       those of 1e-110 entries underflow */
    CHECK(mbk_mat33_is_spd(mbk_mat33_diag(1e110, 1e110, 1e110)));
    CHECK(mbk_mat33_is_spd(mbk_mat33_rotate_congruence(R, mbk_mat33_diag(1e300, 2e300, 3e300))));
    CHECK(mbk_mat33_is_spd(mbk_mat33_diag(1e-110, 2e-110, 3e-110)));
    CHECK(!mbk_mat33_is_spd(mbk_mat33_diag(1e110, 1e110, -1e110)));
    CHECK(mbk_mat33_is_psd(mbk_mat33_diag(1e200, 0, 1e200)));
    CHECK(!mbk_mat33_is_psd(mbk_mat33_rotate_congruence(R, mbk_mat33_diag(1e200, -1e195, 1e200))));
    CHECK(mbk_mat33_is_psd(mbk_mat33_diag(1e-200, 0, 1e-200)));
    CHECK(!mbk_mat33_is_psd(mbk_mat33_diag(-1e-200, 0, 1e-200)));
    A = mbk_mat33_diag(1, 2, 3);
    A.m[0][1] = 0.1; /* not symmetric */
    CHECK(!mbk_mat33_is_spd(A));
    A.m[1][0] = 0.1;
    CHECK(mbk_mat33_is_spd(A));
    A.m[2][2] = NAN;
    CHECK(!mbk_mat33_is_spd(A));
    /* symmetric to round-off counts as symmetric */
    A = mbk_mat33_rotate_congruence(R, mbk_mat33_diag(1, 2, 3));
    A.m[0][1] *= 1.0 + 4 * DBL_EPSILON;
    CHECK(mbk_mat33_is_symmetric(A));
    CHECK(mbk_mat33_is_spd(A));
    A.m[0][1] += 1e-6;
    CHECK(!mbk_mat33_is_symmetric(A));

    /* PSD */
    CHECK(mbk_mat33_is_psd(mbk_mat33_diag(0, 1, 0)));
    CHECK(mbk_mat33_is_psd(mbk_mat33_zero()));
    CHECK(!mbk_mat33_is_psd(mbk_mat33_diag(0, 1, -1e-3)));
    CHECK(!mbk_mat33_is_psd(mbk_mat33_from_rows(mbk_vec3_make(0, 1, 0), mbk_vec3_make(1, 0, 0),
                                                mbk_vec3_make(0, 0, 1)))); /* zero diagonal, minor -1 */
    /* each 2x2 principal minor on its own, with the determinant 0 */
    CHECK(!mbk_mat33_is_psd(mbk_mat33_from_rows(mbk_vec3_make(1, 2, 0), mbk_vec3_make(2, 1, 0),
                                                mbk_vec3_make(0, 0, 0))));
    CHECK(!mbk_mat33_is_psd(mbk_mat33_from_rows(mbk_vec3_make(1, 0, 2), mbk_vec3_make(0, 0, 0),
                                                mbk_vec3_make(2, 0, 1))));
    CHECK(!mbk_mat33_is_psd(mbk_mat33_from_rows(mbk_vec3_make(0, 0, 0), mbk_vec3_make(0, 1, 2),
                                                mbk_vec3_make(0, 2, 1))));
    /* all 1x1 and 2x2 principal minors >= 0, det = 1 - 1.458 - 2.43 < 0 */
    A = mbk_mat33_from_rows(mbk_vec3_make(1, 0.9, 0.9), mbk_vec3_make(0.9, 1, -0.9),
                            mbk_vec3_make(0.9, -0.9, 1));
    CHECK(!mbk_mat33_is_psd(A));
    CHECK(mbk_mat33_is_psd(mbk_mat33_from_rows(mbk_vec3_make(1, 1, 0), mbk_vec3_make(1, 1, 0),
                                               mbk_vec3_make(0, 0, 2)))); /* singular PSD */

    /* mass properties */
    CHECK(mbk_mass_props_is_valid(mbk_mass_props_from_central(1.0, c, Ic)));
    CHECK(mbk_mass_props_is_valid(mbk_mass_props_from_central(1.0, c, mbk_mat33_rotate_congruence(R, Ic))));
    CHECK(mbk_mass_props_is_valid(mbk_mass_props_from_central(2.0, c, mbk_mat33_zero()))); /* point */
    CHECK(mbk_mass_props_is_valid(mbk_mass_props_from_central(0.0, c, mbk_mat33_zero()))); /* massless */
    CHECK(mbk_mass_props_is_valid(mbk_mass_props_from_central(1.0, c, mbk_mat33_diag(0, 1, 1)))); /* rod */
    CHECK(mbk_mass_props_is_valid(mbk_mass_props_from_central(1.0, c, mbk_mat33_diag(1, 2, 3)))); /* plate */
    CHECK(mbk_mass_props_is_valid(
        mbk_mass_props_from_central(1.0, c, mbk_mat33_rotate_congruence(R, mbk_mat33_diag(1, 2, 3)))));
    CHECK(mbk_mass_props_is_valid(mbk_mass_props_from_central(1.0, c, mbk_mat33_diag(1, 2, 3 + 4e-15))));
    CHECK(!mbk_mass_props_is_valid(mbk_mass_props_from_central(1.0, c, mbk_mat33_diag(1, 2, 3.001))));
    CHECK(!mbk_mass_props_is_valid(mbk_mass_props_from_central(1.0, c, mbk_mat33_diag(1, 1, 3))));
    CHECK(!mbk_mass_props_is_valid(
        mbk_mass_props_from_central(1.0, c, mbk_mat33_rotate_congruence(R, mbk_mat33_diag(1, 1, 3)))));
    CHECK(!mbk_mass_props_is_valid(mbk_mass_props_from_central(1.0, c, mbk_mat33_diag(-1, 2, 2))));
    CHECK(!mbk_mass_props_is_valid(mbk_mass_props_from_central(-1.0, c, Ic)));
    CHECK(!mbk_mass_props_is_valid(mbk_mass_props_from_central(NAN, c, Ic)));
    CHECK(!mbk_mass_props_is_valid(mbk_mass_props_from_central(INFINITY, c, Ic)));
    CHECK(!mbk_mass_props_is_valid(mbk_mass_props_from_central(1.0, mbk_vec3_make(0, NAN, 0), Ic)));
    A = Ic;
    A.m[1][1] = INFINITY;
    CHECK(!mbk_mass_props_is_valid(mbk_mass_props_from_central(1.0, c, A)));
    A = mbk_mat33_diag(1, 2, 2);
    A.m[1][2] = 0.5; /* asymmetric */
    CHECK(!mbk_mass_props_is_valid(mbk_mass_props_from_central(1.0, c, A)));
    A.m[2][1] = 0.5;
    CHECK(mbk_mass_props_is_valid(mbk_mass_props_from_central(1.0, c, A)));
    /* a matrix with non-negative diagonal that is not PSD */
    A = mbk_mat33_from_rows(mbk_vec3_make(1, 0.9, 0.9), mbk_vec3_make(0.9, 1, -0.9),
                            mbk_vec3_make(0.9, -0.9, 1));
    CHECK(!mbk_mass_props_is_valid(mbk_mass_props_from_central(1.0, c, A)));
    /* the central inertia recovered from the inertia about the origin is valid */
    mp = pts_mass_props();
    CHECK(mbk_mass_props_is_valid(mbk_mass_props_from_origin(mp.mass, mp.com,
                                                             mbk_mass_props_inertia_about_origin(mp))));
}

int main(void)
{
    test_vec3();
    test_mat33();
    test_axis_angle();
    test_quat();
    test_body_xyz();
    test_transform();
    test_spatial_vec();
    test_spatial_mat();
    test_mass_props();
    test_spatial_inertia();
    test_validity();
    return mbk_test_finish();
}
