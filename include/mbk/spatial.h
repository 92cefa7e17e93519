/* mbk/spatial.h - small value types of spatial algebra, with static inline
 * operations. Spatial vectors are (angular, linear). Frame names follow
 * Simbody's monogram notation: X_AB is the pose of frame B in frame A. */
#ifndef MBK_SPATIAL_H
#define MBK_SPATIAL_H

#include <float.h>
#include <math.h>

/* Declarations here are the public API: exported from the shared library, whose
   other symbols are hidden (CMakeLists.txt, "symbol visibility"). */
#if defined(__GNUC__)
#pragma GCC visibility push(default)
#endif
#ifdef __cplusplus
extern "C" {
#endif

typedef struct mbk_vec3 { double x, y, z; } mbk_vec3;                  /* 3-vector */
typedef struct mbk_quat { double w, x, y, z; } mbk_quat;              /* unit quaternion, scalar first */
typedef struct mbk_mat33 { double m[3][3]; } mbk_mat33;               /* 3x3 matrix, row-major */
typedef struct mbk_transform { mbk_mat33 R; mbk_vec3 p; } mbk_transform; /* X_AB: R_AB and p_AB */
typedef struct mbk_spatial_vec { mbk_vec3 w, v; } mbk_spatial_vec;     /* (angular, linear) */
typedef struct mbk_mass_props {
    double mass;       /* mass */
    mbk_vec3 com;      /* centre of mass, in B */
    mbk_mat33 inertia; /* about the centre of mass, expressed in B */
} mbk_mass_props;

/* A 6x6 matrix acting on spatial vectors (angular, linear), stored as four
 * 3x3 blocks: M*(w,v) = (m00 w + m01 v, m10 w + m11 v). */
typedef struct mbk_spatial_mat {
    mbk_mat33 m00; /* angular row, angular column (top left) */
    mbk_mat33 m01; /* angular row, linear column (top right) */
    mbk_mat33 m10; /* linear row, angular column (bottom left) */
    mbk_mat33 m11; /* linear row, linear column (bottom right) */
} mbk_spatial_mat;

/* Relative tolerance used by the validity checks (symmetry, definiteness,
 * triangle inequalities): differences below MBK_SPATIAL_RTOL times the
 * matrix scale count as round-off. */
#define MBK_SPATIAL_RTOL 1e-12

/* ---- 3-vectors ---- */

/* (x, y, z) */
static inline mbk_vec3 mbk_vec3_make(double x, double y, double z)
{
    mbk_vec3 r;
    r.x = x; r.y = y; r.z = z;
    return r;
}

/* the zero vector */
static inline mbk_vec3 mbk_vec3_zero(void) { return mbk_vec3_make(0.0, 0.0, 0.0); }

/* a + b */
static inline mbk_vec3 mbk_vec3_add(mbk_vec3 a, mbk_vec3 b)
{
    return mbk_vec3_make(a.x + b.x, a.y + b.y, a.z + b.z);
}

/* a - b */
static inline mbk_vec3 mbk_vec3_sub(mbk_vec3 a, mbk_vec3 b)
{
    return mbk_vec3_make(a.x - b.x, a.y - b.y, a.z - b.z);
}

/* s * a */
static inline mbk_vec3 mbk_vec3_scale(mbk_vec3 a, double s)
{
    return mbk_vec3_make(s * a.x, s * a.y, s * a.z);
}

/* -a */
static inline mbk_vec3 mbk_vec3_neg(mbk_vec3 a) { return mbk_vec3_make(-a.x, -a.y, -a.z); }

/* a . b */
static inline double mbk_vec3_dot(mbk_vec3 a, mbk_vec3 b)
{
    return a.x * b.x + a.y * b.y + a.z * b.z;
}

/* a x b (right-handed cross product) */
static inline mbk_vec3 mbk_vec3_cross(mbk_vec3 a, mbk_vec3 b)
{
    return mbk_vec3_make(a.y * b.z - a.z * b.y, a.z * b.x - a.x * b.z, a.x * b.y - a.y * b.x);
}

/* |a|^2 */
static inline double mbk_vec3_norm2(mbk_vec3 a) { return mbk_vec3_dot(a, a); }

/* sqrt(s) for s = a sum of squares, or the overflow- and underflow-safe norm
   from hypot when s is out of the range where squaring is exact enough
   (sqrt of the sum is within an ulp or two there, and much cheaper) */
static inline double mbk_norm_from_squares(double s, double a, double b, double c, double d)
{
    if (s > 1e-290 && s < 1e290) return sqrt(s);
    return hypot(hypot(a, b), hypot(c, d));
}

/* |a| (overflow-safe) */
static inline double mbk_vec3_norm(mbk_vec3 a)
{
    return mbk_norm_from_squares(a.x * a.x + a.y * a.y + a.z * a.z, a.x, a.y, a.z, 0.0);
}

/* a / |a|; the zero vector if |a| is 0 */
static inline mbk_vec3 mbk_vec3_normalize(mbk_vec3 a)
{
    double n = mbk_vec3_norm(a);
    return n > 0.0 ? mbk_vec3_scale(a, 1.0 / n) : mbk_vec3_zero();
}

/* 1 if every component is finite (no NaN or infinity), else 0 */
static inline int mbk_vec3_is_finite(mbk_vec3 a)
{
    return isfinite(a.x) && isfinite(a.y) && isfinite(a.z);
}

/* ---- 3x3 matrices ---- */

/* the zero matrix */
static inline mbk_mat33 mbk_mat33_zero(void)
{
    mbk_mat33 r;
    int i, j;
    for (i = 0; i < 3; i++)
        for (j = 0; j < 3; j++) r.m[i][j] = 0.0;
    return r;
}

/* diag(a, b, c) */
static inline mbk_mat33 mbk_mat33_diag(double a, double b, double c)
{
    mbk_mat33 r = mbk_mat33_zero();
    r.m[0][0] = a; r.m[1][1] = b; r.m[2][2] = c;
    return r;
}

/* the identity matrix */
static inline mbk_mat33 mbk_mat33_identity(void) { return mbk_mat33_diag(1.0, 1.0, 1.0); }

/* the matrix whose rows are r0, r1, r2 */
static inline mbk_mat33 mbk_mat33_from_rows(mbk_vec3 r0, mbk_vec3 r1, mbk_vec3 r2)
{
    mbk_mat33 r;
    r.m[0][0] = r0.x; r.m[0][1] = r0.y; r.m[0][2] = r0.z;
    r.m[1][0] = r1.x; r.m[1][1] = r1.y; r.m[1][2] = r1.z;
    r.m[2][0] = r2.x; r.m[2][1] = r2.y; r.m[2][2] = r2.z;
    return r;
}

/* row i of A */
static inline mbk_vec3 mbk_mat33_row(mbk_mat33 A, int i)
{
    return mbk_vec3_make(A.m[i][0], A.m[i][1], A.m[i][2]);
}

/* column j of A */
static inline mbk_vec3 mbk_mat33_column(mbk_mat33 A, int j)
{
    return mbk_vec3_make(A.m[0][j], A.m[1][j], A.m[2][j]);
}

/* A^T */
static inline mbk_mat33 mbk_mat33_transpose(mbk_mat33 A)
{
    mbk_mat33 r;
    int i, j;
    for (i = 0; i < 3; i++)
        for (j = 0; j < 3; j++) r.m[i][j] = A.m[j][i];
    return r;
}

/* A * B */
static inline mbk_mat33 mbk_mat33_mul(mbk_mat33 A, mbk_mat33 B)
{
    mbk_mat33 r;
    int i, j;
    for (i = 0; i < 3; i++)
        for (j = 0; j < 3; j++)
            r.m[i][j] = A.m[i][0] * B.m[0][j] + A.m[i][1] * B.m[1][j] + A.m[i][2] * B.m[2][j];
    return r;
}

/* A^T * B */
static inline mbk_mat33 mbk_mat33_transpose_mul(mbk_mat33 A, mbk_mat33 B)
{
    mbk_mat33 r;
    int i, j;
    for (i = 0; i < 3; i++)
        for (j = 0; j < 3; j++)
            r.m[i][j] = A.m[0][i] * B.m[0][j] + A.m[1][i] * B.m[1][j] + A.m[2][i] * B.m[2][j];
    return r;
}

/* A * B^T */
static inline mbk_mat33 mbk_mat33_mul_transpose(mbk_mat33 A, mbk_mat33 B)
{
    mbk_mat33 r;
    int i, j;
    for (i = 0; i < 3; i++)
        for (j = 0; j < 3; j++)
            r.m[i][j] = A.m[i][0] * B.m[j][0] + A.m[i][1] * B.m[j][1] + A.m[i][2] * B.m[j][2];
    return r;
}

/* A * v */
static inline mbk_vec3 mbk_mat33_mul_vec(mbk_mat33 A, mbk_vec3 v)
{
    return mbk_vec3_make(A.m[0][0] * v.x + A.m[0][1] * v.y + A.m[0][2] * v.z,
                         A.m[1][0] * v.x + A.m[1][1] * v.y + A.m[1][2] * v.z,
                         A.m[2][0] * v.x + A.m[2][1] * v.y + A.m[2][2] * v.z);
}

/* A^T * v */
static inline mbk_vec3 mbk_mat33_transpose_mul_vec(mbk_mat33 A, mbk_vec3 v)
{
    return mbk_vec3_make(A.m[0][0] * v.x + A.m[1][0] * v.y + A.m[2][0] * v.z,
                         A.m[0][1] * v.x + A.m[1][1] * v.y + A.m[2][1] * v.z,
                         A.m[0][2] * v.x + A.m[1][2] * v.y + A.m[2][2] * v.z);
}

/* A + B */
static inline mbk_mat33 mbk_mat33_add(mbk_mat33 A, mbk_mat33 B)
{
    int i, j;
    for (i = 0; i < 3; i++)
        for (j = 0; j < 3; j++) A.m[i][j] += B.m[i][j];
    return A;
}

/* A - B */
static inline mbk_mat33 mbk_mat33_sub(mbk_mat33 A, mbk_mat33 B)
{
    int i, j;
    for (i = 0; i < 3; i++)
        for (j = 0; j < 3; j++) A.m[i][j] -= B.m[i][j];
    return A;
}

/* s * A */
static inline mbk_mat33 mbk_mat33_scale(mbk_mat33 A, double s)
{
    int i, j;
    for (i = 0; i < 3; i++)
        for (j = 0; j < 3; j++) A.m[i][j] *= s;
    return A;
}

/* a b^T (outer product) */
static inline mbk_mat33 mbk_mat33_outer(mbk_vec3 a, mbk_vec3 b)
{
    return mbk_mat33_from_rows(mbk_vec3_scale(b, a.x), mbk_vec3_scale(b, a.y),
                               mbk_vec3_scale(b, a.z));
}

/* trace(A) */
static inline double mbk_mat33_trace(mbk_mat33 A) { return A.m[0][0] + A.m[1][1] + A.m[2][2]; }

/* det(A) */
static inline double mbk_mat33_det(mbk_mat33 A)
{
    return mbk_vec3_dot(mbk_mat33_row(A, 0),
                        mbk_vec3_cross(mbk_mat33_row(A, 1), mbk_mat33_row(A, 2)));
}

/* cross-product matrix of v: skew(v) * b = v x b */
static inline mbk_mat33 mbk_mat33_skew(mbk_vec3 v)
{
    return mbk_mat33_from_rows(mbk_vec3_make(0.0, -v.z, v.y), mbk_vec3_make(v.z, 0.0, -v.x),
                               mbk_vec3_make(-v.y, v.x, 0.0));
}

/* A^-1 = adj(A) / det(A) for a general 3x3; the caller checks det(A) != 0 */
static inline mbk_mat33 mbk_mat33_inverse(mbk_mat33 A)
{
    /* the columns of the inverse are the cross products of pairs of rows */
    mbk_vec3 r0 = mbk_mat33_row(A, 0), r1 = mbk_mat33_row(A, 1), r2 = mbk_mat33_row(A, 2);
    mbk_vec3 c0 = mbk_vec3_cross(r1, r2), c1 = mbk_vec3_cross(r2, r0), c2 = mbk_vec3_cross(r0, r1);
    double inv_det = 1.0 / mbk_vec3_dot(r0, c0);
    return mbk_mat33_scale(mbk_mat33_transpose(mbk_mat33_from_rows(c0, c1, c2)), inv_det);
}

/* 1 if every element is finite, else 0 */
static inline int mbk_mat33_is_finite(mbk_mat33 A)
{
    return mbk_vec3_is_finite(mbk_mat33_row(A, 0)) && mbk_vec3_is_finite(mbk_mat33_row(A, 1)) &&
           mbk_vec3_is_finite(mbk_mat33_row(A, 2));
}

/* largest |A_ij| */
static inline double mbk_mat33_max_abs(mbk_mat33 A)
{
    double s = 0.0;
    int i, j;
    for (i = 0; i < 3; i++)
        for (j = 0; j < 3; j++)
            if (fabs(A.m[i][j]) > s) s = fabs(A.m[i][j]);
    return s;
}

/* rotation matrix by `angle` (right-handed) about `axis` (normalized here;
 * a zero axis gives the identity): Rodrigues' formula */
static inline mbk_mat33 mbk_mat33_from_axis_angle(mbk_vec3 axis, double angle)
{
    mbk_vec3 k = mbk_vec3_normalize(axis);
    double c = cos(angle), s = sin(angle);
    mbk_mat33 R;
    if (mbk_vec3_norm2(k) == 0.0) return mbk_mat33_identity();
    R = mbk_mat33_add(mbk_mat33_scale(mbk_mat33_identity(), c),
                      mbk_mat33_scale(mbk_mat33_skew(k), s));
    return mbk_mat33_add(R, mbk_mat33_scale(mbk_mat33_outer(k, k), 1.0 - c));
}

/* ---- quaternions (w, x, y, z), scalar first ---- */

/* (w, x, y, z) */
static inline mbk_quat mbk_quat_make(double w, double x, double y, double z)
{
    mbk_quat q;
    q.w = w; q.x = x; q.y = y; q.z = z;
    return q;
}

/* the identity rotation (1, 0, 0, 0) */
static inline mbk_quat mbk_quat_identity(void) { return mbk_quat_make(1.0, 0.0, 0.0, 0.0); }

/* q / |q|; the identity if |q| is 0 */
static inline mbk_quat mbk_quat_normalize(mbk_quat q)
{
    double n = mbk_norm_from_squares(q.w * q.w + q.x * q.x + q.y * q.y + q.z * q.z, q.w, q.x, q.y, q.z);
    if (!(n > 0.0)) return mbk_quat_identity();
    return mbk_quat_make(q.w / n, q.x / n, q.y / n, q.z / n);
}

/* Hamilton product a*b (rotation b first, then a: R(a*b) = R(a) R(b)) */
static inline mbk_quat mbk_quat_mul(mbk_quat a, mbk_quat b)
{
    return mbk_quat_make(a.w * b.w - a.x * b.x - a.y * b.y - a.z * b.z,
                         a.w * b.x + a.x * b.w + a.y * b.z - a.z * b.y,
                         a.w * b.y - a.x * b.z + a.y * b.w + a.z * b.x,
                         a.w * b.z + a.x * b.y - a.y * b.x + a.z * b.w);
}

/* conjugate (w, -x, -y, -z): the inverse rotation of a unit quaternion */
static inline mbk_quat mbk_quat_conj(mbk_quat q) { return mbk_quat_make(q.w, -q.x, -q.y, -q.z); }

/* rotation by `angle` (right-handed) about `axis` (normalized here; a zero
 * axis gives the identity) */
static inline mbk_quat mbk_quat_from_axis_angle(mbk_vec3 axis, double angle)
{
    mbk_vec3 k = mbk_vec3_normalize(axis);
    double s = sin(0.5 * angle);
    if (mbk_vec3_norm2(k) == 0.0) return mbk_quat_identity();
    return mbk_quat_make(cos(0.5 * angle), s * k.x, s * k.y, s * k.z);
}

/* rotation matrix of the unit quaternion q */
static inline mbk_mat33 mbk_quat_to_mat33(mbk_quat q)
{
    double xx = q.x * q.x, yy = q.y * q.y, zz = q.z * q.z;
    double xy = q.x * q.y, xz = q.x * q.z, yz = q.y * q.z;
    double wx = q.w * q.x, wy = q.w * q.y, wz = q.w * q.z;
    return mbk_mat33_from_rows(mbk_vec3_make(1.0 - 2.0 * (yy + zz), 2.0 * (xy - wz), 2.0 * (xz + wy)),
                               mbk_vec3_make(2.0 * (xy + wz), 1.0 - 2.0 * (xx + zz), 2.0 * (yz - wx)),
                               mbk_vec3_make(2.0 * (xz - wy), 2.0 * (yz + wx), 1.0 - 2.0 * (xx + yy)));
}

/* unit quaternion of the rotation matrix R (Shepperd's method: pivot on the
 * largest of trace and diagonal), normalized, with w >= 0 */
static inline mbk_quat mbk_mat33_to_quat(mbk_mat33 R)
{
    double (*m)[3] = R.m;
    double tr = m[0][0] + m[1][1] + m[2][2], s;
    mbk_quat q;
    if (tr >= m[0][0] && tr >= m[1][1] && tr >= m[2][2]) {
        s = 2.0 * sqrt(1.0 + tr); /* s = 4w */
        q = mbk_quat_make(0.25 * s, (m[2][1] - m[1][2]) / s, (m[0][2] - m[2][0]) / s,
                          (m[1][0] - m[0][1]) / s);
    } else if (m[0][0] >= m[1][1] && m[0][0] >= m[2][2]) {
        s = 2.0 * sqrt(1.0 + m[0][0] - m[1][1] - m[2][2]); /* s = 4x */
        q = mbk_quat_make((m[2][1] - m[1][2]) / s, 0.25 * s, (m[0][1] + m[1][0]) / s,
                          (m[0][2] + m[2][0]) / s);
    } else if (m[1][1] >= m[2][2]) {
        s = 2.0 * sqrt(1.0 - m[0][0] + m[1][1] - m[2][2]); /* s = 4y */
        q = mbk_quat_make((m[0][2] - m[2][0]) / s, (m[0][1] + m[1][0]) / s, 0.25 * s,
                          (m[1][2] + m[2][1]) / s);
    } else {
        s = 2.0 * sqrt(1.0 - m[0][0] - m[1][1] + m[2][2]); /* s = 4z */
        q = mbk_quat_make((m[1][0] - m[0][1]) / s, (m[0][2] + m[2][0]) / s,
                          (m[1][2] + m[2][1]) / s, 0.25 * s);
    }
    if (q.w < 0.0) q = mbk_quat_make(-q.w, -q.x, -q.y, -q.z);
    return mbk_quat_normalize(q);
}

/* ---- body-fixed X-Y-Z Euler angles: R = Rx(a) * Ry(b) * Rz(c) ---- */

/* rotation matrix of body-fixed XYZ angles (a, b, c) = (angles.x, .y, .z) */
static inline mbk_mat33 mbk_mat33_from_body_xyz(mbk_vec3 angles)
{
    double ca = cos(angles.x), sa = sin(angles.x), cb = cos(angles.y), sb = sin(angles.y);
    double cc = cos(angles.z), sc = sin(angles.z);
    return mbk_mat33_from_rows(
        mbk_vec3_make(cb * cc, -cb * sc, sb),
        mbk_vec3_make(ca * sc + sa * sb * cc, ca * cc - sa * sb * sc, -sa * cb),
        mbk_vec3_make(sa * sc - ca * sb * cc, sa * cc + ca * sb * sc, ca * cb));
}

/* body-fixed XYZ angles of R, with a, c in [-pi, pi] and b in [-pi/2, pi/2].
 * At gimbal lock (cos b = 0) a is set to 0 and c carries the whole rotation
 * about the locked axis; the angles always reproduce R. */
static inline mbk_vec3 mbk_mat33_to_body_xyz(mbk_mat33 R)
{
    double (*m)[3] = R.m;
    double cb = hypot(m[0][0], m[0][1]);
    double b = atan2(m[0][2], cb);
    double a = hypot(m[1][2], m[2][2]) > 4.0 * DBL_EPSILON ? atan2(-m[1][2], m[2][2]) : 0.0;
    double ca = cos(a), sa = sin(a);
    /* Rx(a)^T R = Ry(b) Rz(c); its row 1 is (sin c, cos c, 0) */
    double c = atan2(ca * m[1][0] + sa * m[2][0], ca * m[1][1] + sa * m[2][1]);
    return mbk_vec3_make(a, b, c);
}

/* ---- rigid transforms X_AB = (R_AB, p_AB) ---- */

/* X_AB from R_AB and p_AB */
static inline mbk_transform mbk_transform_make(mbk_mat33 R, mbk_vec3 p)
{
    mbk_transform X;
    X.R = R; X.p = p;
    return X;
}

/* the identity transform */
static inline mbk_transform mbk_transform_identity(void)
{
    return mbk_transform_make(mbk_mat33_identity(), mbk_vec3_zero());
}

/* pure translation: R_AB = 1, p_AB = p */
static inline mbk_transform mbk_transform_from_p(mbk_vec3 p)
{
    return mbk_transform_make(mbk_mat33_identity(), p);
}

/* R_AB rotates by `angle` (right-handed) about the unit `axis` expressed in
 * A; p_AB = p */
static inline mbk_transform mbk_transform_from_axis_angle(mbk_vec3 axis, double angle, mbk_vec3 p)
{
    return mbk_transform_make(mbk_mat33_from_axis_angle(axis, angle), p);
}

/* X_AC = X_AB * X_BC */
static inline mbk_transform mbk_transform_compose(mbk_transform X_AB, mbk_transform X_BC)
{
    return mbk_transform_make(mbk_mat33_mul(X_AB.R, X_BC.R),
                              mbk_vec3_add(X_AB.p, mbk_mat33_mul_vec(X_AB.R, X_BC.p)));
}

/* X_BA = X_AB^-1 = (R_AB^T, -R_AB^T p_AB) */
static inline mbk_transform mbk_transform_invert(mbk_transform X_AB)
{
    return mbk_transform_make(mbk_mat33_transpose(X_AB.R),
                              mbk_vec3_neg(mbk_mat33_transpose_mul_vec(X_AB.R, X_AB.p)));
}

/* p_AQ = p_AB + R_AB p_BQ: station Q given in B, re-measured from A */
static inline mbk_vec3 mbk_transform_apply_point(mbk_transform X_AB, mbk_vec3 p_BQ)
{
    return mbk_vec3_add(X_AB.p, mbk_mat33_mul_vec(X_AB.R, p_BQ));
}

/* v_A = R_AB v_B: re-express a free vector (rotation only) */
static inline mbk_vec3 mbk_transform_apply_vec(mbk_transform X_AB, mbk_vec3 v_B)
{
    return mbk_mat33_mul_vec(X_AB.R, v_B);
}

/* p_BQ = R_AB^T (p_AQ - p_AB): station Q given in A, re-measured from B */
static inline mbk_vec3 mbk_transform_invert_apply_point(mbk_transform X_AB, mbk_vec3 p_AQ)
{
    return mbk_mat33_transpose_mul_vec(X_AB.R, mbk_vec3_sub(p_AQ, X_AB.p));
}

/* v_B = R_AB^T v_A: re-express a free vector (rotation only) */
static inline mbk_vec3 mbk_transform_invert_apply_vec(mbk_transform X_AB, mbk_vec3 v_A)
{
    return mbk_mat33_transpose_mul_vec(X_AB.R, v_A);
}

/* ---- spatial vectors (angular, linear) ---- */

/* (w, v) */
static inline mbk_spatial_vec mbk_spatial_vec_make(mbk_vec3 w, mbk_vec3 v)
{
    mbk_spatial_vec r;
    r.w = w; r.v = v;
    return r;
}

/* the zero spatial vector */
static inline mbk_spatial_vec mbk_spatial_vec_zero(void)
{
    return mbk_spatial_vec_make(mbk_vec3_zero(), mbk_vec3_zero());
}

/* a + b */
static inline mbk_spatial_vec mbk_spatial_vec_add(mbk_spatial_vec a, mbk_spatial_vec b)
{
    return mbk_spatial_vec_make(mbk_vec3_add(a.w, b.w), mbk_vec3_add(a.v, b.v));
}

/* a - b */
static inline mbk_spatial_vec mbk_spatial_vec_sub(mbk_spatial_vec a, mbk_spatial_vec b)
{
    return mbk_spatial_vec_make(mbk_vec3_sub(a.w, b.w), mbk_vec3_sub(a.v, b.v));
}

/* s * a */
static inline mbk_spatial_vec mbk_spatial_vec_scale(mbk_spatial_vec a, double s)
{
    return mbk_spatial_vec_make(mbk_vec3_scale(a.w, s), mbk_vec3_scale(a.v, s));
}

/* a.w . b.w + a.v . b.v (e.g. power F . V of a force on a motion) */
static inline double mbk_spatial_vec_dot(mbk_spatial_vec a, mbk_spatial_vec b)
{
    return mbk_vec3_dot(a.w, b.w) + mbk_vec3_dot(a.v, b.v);
}

/* a x b for motion vectors: (a.w x b.w, a.w x b.v + a.v x b.w) */
static inline mbk_spatial_vec mbk_spatial_cross_motion(mbk_spatial_vec a, mbk_spatial_vec b)
{
    return mbk_spatial_vec_make(mbk_vec3_cross(a.w, b.w),
                                mbk_vec3_add(mbk_vec3_cross(a.w, b.v), mbk_vec3_cross(a.v, b.w)));
}

/* a x* f for motion a and force f: (a.w x f.w + a.v x f.v, a.w x f.v) */
static inline mbk_spatial_vec mbk_spatial_cross_force(mbk_spatial_vec a, mbk_spatial_vec f)
{
    return mbk_spatial_vec_make(mbk_vec3_add(mbk_vec3_cross(a.w, f.w), mbk_vec3_cross(a.v, f.v)),
                                mbk_vec3_cross(a.w, f.v));
}

/* (R w, R v): re-express both parts, e.g. V_A = R_AB V_B (same point) */
static inline mbk_spatial_vec mbk_spatial_rotate(mbk_mat33 R, mbk_spatial_vec V)
{
    return mbk_spatial_vec_make(mbk_mat33_mul_vec(R, V.w), mbk_mat33_mul_vec(R, V.v));
}

/* spatial velocity at P -> at Q: (w, v + w x r_PQ), all in one frame */
static inline mbk_spatial_vec mbk_spatial_shift_motion(mbk_spatial_vec V_P, mbk_vec3 r_PQ)
{
    return mbk_spatial_vec_make(V_P.w, mbk_vec3_add(V_P.v, mbk_vec3_cross(V_P.w, r_PQ)));
}

/* spatial force with moment about P -> same force with moment about Q:
 * (m - r_PQ x f, f), all in one frame */
static inline mbk_spatial_vec mbk_spatial_shift_force(mbk_spatial_vec F_P, mbk_vec3 r_PQ)
{
    return mbk_spatial_vec_make(mbk_vec3_sub(F_P.w, mbk_vec3_cross(r_PQ, F_P.v)), F_P.v);
}

/* ---- spatial 6x6 matrices (four 3x3 blocks) ---- */

/* M from its four blocks */
static inline mbk_spatial_mat mbk_spatial_mat_make(mbk_mat33 m00, mbk_mat33 m01, mbk_mat33 m10,
                                                   mbk_mat33 m11)
{
    mbk_spatial_mat M;
    M.m00 = m00; M.m01 = m01; M.m10 = m10; M.m11 = m11;
    return M;
}

/* the 6x6 zero matrix */
static inline mbk_spatial_mat mbk_spatial_mat_zero(void)
{
    mbk_mat33 Z = mbk_mat33_zero();
    return mbk_spatial_mat_make(Z, Z, Z, Z);
}

/* the 6x6 identity matrix */
static inline mbk_spatial_mat mbk_spatial_mat_identity(void)
{
    mbk_mat33 Z = mbk_mat33_zero(), I = mbk_mat33_identity();
    return mbk_spatial_mat_make(I, Z, Z, I);
}

/* A + B */
static inline mbk_spatial_mat mbk_spatial_mat_add(mbk_spatial_mat A, mbk_spatial_mat B)
{
    return mbk_spatial_mat_make(mbk_mat33_add(A.m00, B.m00), mbk_mat33_add(A.m01, B.m01),
                                mbk_mat33_add(A.m10, B.m10), mbk_mat33_add(A.m11, B.m11));
}

/* A - B */
static inline mbk_spatial_mat mbk_spatial_mat_sub(mbk_spatial_mat A, mbk_spatial_mat B)
{
    return mbk_spatial_mat_make(mbk_mat33_sub(A.m00, B.m00), mbk_mat33_sub(A.m01, B.m01),
                                mbk_mat33_sub(A.m10, B.m10), mbk_mat33_sub(A.m11, B.m11));
}

/* s * A */
static inline mbk_spatial_mat mbk_spatial_mat_scale(mbk_spatial_mat A, double s)
{
    return mbk_spatial_mat_make(mbk_mat33_scale(A.m00, s), mbk_mat33_scale(A.m01, s),
                                mbk_mat33_scale(A.m10, s), mbk_mat33_scale(A.m11, s));
}

/* M * V with V = (w, v) */
static inline mbk_spatial_vec mbk_spatial_mat_mul_vec(mbk_spatial_mat M, mbk_spatial_vec V)
{
    return mbk_spatial_vec_make(
        mbk_vec3_add(mbk_mat33_mul_vec(M.m00, V.w), mbk_mat33_mul_vec(M.m01, V.v)),
        mbk_vec3_add(mbk_mat33_mul_vec(M.m10, V.w), mbk_mat33_mul_vec(M.m11, V.v)));
}

/* A * B (6x6 product, blockwise) */
static inline mbk_spatial_mat mbk_spatial_mat_mul(mbk_spatial_mat A, mbk_spatial_mat B)
{
    return mbk_spatial_mat_make(
        mbk_mat33_add(mbk_mat33_mul(A.m00, B.m00), mbk_mat33_mul(A.m01, B.m10)),
        mbk_mat33_add(mbk_mat33_mul(A.m00, B.m01), mbk_mat33_mul(A.m01, B.m11)),
        mbk_mat33_add(mbk_mat33_mul(A.m10, B.m00), mbk_mat33_mul(A.m11, B.m10)),
        mbk_mat33_add(mbk_mat33_mul(A.m10, B.m01), mbk_mat33_mul(A.m11, B.m11)));
}

/* M^T (6x6 transpose: blocks transposed and the off-diagonal ones swapped) */
static inline mbk_spatial_mat mbk_spatial_mat_transpose(mbk_spatial_mat M)
{
    return mbk_spatial_mat_make(mbk_mat33_transpose(M.m00), mbk_mat33_transpose(M.m10),
                                mbk_mat33_transpose(M.m01), mbk_mat33_transpose(M.m11));
}

/* a b^T for spatial vectors a, b */
static inline mbk_spatial_mat mbk_spatial_mat_outer(mbk_spatial_vec a, mbk_spatial_vec b)
{
    return mbk_spatial_mat_make(mbk_mat33_outer(a.w, b.w), mbk_mat33_outer(a.w, b.v),
                                mbk_mat33_outer(a.v, b.w), mbk_mat33_outer(a.v, b.v));
}

/* ---- mass properties and spatial inertia ---- */

/* inertia of a point mass m at position p about the origin: m(|p|^2 1 - p p^T) */
static inline mbk_mat33 mbk_inertia_of_point_mass(double m, mbk_vec3 p)
{
    return mbk_mat33_scale(mbk_mat33_sub(mbk_mat33_scale(mbk_mat33_identity(), mbk_vec3_norm2(p)),
                                         mbk_mat33_outer(p, p)), m);
}

/* mass properties from mass, com (in B) and inertia about the com (in B) */
static inline mbk_mass_props mbk_mass_props_from_central(double m, mbk_vec3 com, mbk_mat33 I_com)
{
    mbk_mass_props mp;
    mp.mass = m; mp.com = com; mp.inertia = I_com;
    return mp;
}

/* mass properties from mass, com and inertia about the body origin (all in
 * B), by the parallel axis theorem: I_com = I_o - m(|c|^2 1 - c c^T) */
static inline mbk_mass_props mbk_mass_props_from_origin(double m, mbk_vec3 com, mbk_mat33 I_origin)
{
    return mbk_mass_props_from_central(m, com,
                                       mbk_mat33_sub(I_origin, mbk_inertia_of_point_mass(m, com)));
}

/* inertia about the body origin, expressed in B: I_com + m(|c|^2 1 - c c^T) */
static inline mbk_mat33 mbk_mass_props_inertia_about_origin(mbk_mass_props mp)
{
    return mbk_mat33_add(mp.inertia, mbk_inertia_of_point_mass(mp.mass, mp.com));
}

/* 6x6 spatial inertia about the body origin, expressed in B:
 * [[I_o, m skew(c)], [-m skew(c), m 1]], so M*(w, v) = (I_o w + m c x v, m v - m c x w) */
static inline mbk_spatial_mat mbk_spatial_inertia_from_mass_props(mbk_mass_props mp)
{
    mbk_mat33 mc = mbk_mat33_skew(mbk_vec3_scale(mp.com, mp.mass));
    return mbk_spatial_mat_make(mbk_mass_props_inertia_about_origin(mp), mc,
                                mbk_mat33_scale(mc, -1.0),
                                mbk_mat33_scale(mbk_mat33_identity(), mp.mass));
}

/* R X R^T */
static inline mbk_mat33 mbk_mat33_rotate_congruence(mbk_mat33 R, mbk_mat33 X)
{
    return mbk_mat33_mul_transpose(mbk_mat33_mul(R, X), R);
}

/* M_A = diag(R_AB, R_AB) M_B diag(R_AB, R_AB)^T: re-express a spatial inertia
 * (same point) from B to A */
static inline mbk_spatial_mat mbk_spatial_inertia_rotate(mbk_mat33 R_AB, mbk_spatial_mat M_B)
{
    return mbk_spatial_mat_make(mbk_mat33_rotate_congruence(R_AB, M_B.m00),
                                mbk_mat33_rotate_congruence(R_AB, M_B.m01),
                                mbk_mat33_rotate_congruence(R_AB, M_B.m10),
                                mbk_mat33_rotate_congruence(R_AB, M_B.m11));
}

/* spatial inertia about P -> about Q (r_PQ, everything in one frame):
 * M_Q = S M_P S^T with the force shift S = [[1, -skew(r)], [0, 1]], so that
 * momentum shifts like a force while velocity shifts like a motion. Valid for
 * any symmetric spatial inertia, rigid or articulated. */
static inline mbk_spatial_mat mbk_spatial_inertia_shift(mbk_spatial_mat M_P, mbk_vec3 r_PQ)
{
    mbk_mat33 K = mbk_mat33_skew(r_PQ);
    mbk_mat33 top_left = mbk_mat33_sub(M_P.m00, mbk_mat33_mul(K, M_P.m10));  /* A - K C */
    mbk_mat33 top_right = mbk_mat33_sub(M_P.m01, mbk_mat33_mul(K, M_P.m11)); /* B - K D */
    return mbk_spatial_mat_make(mbk_mat33_add(top_left, mbk_mat33_mul(top_right, K)), top_right,
                                mbk_mat33_add(M_P.m10, mbk_mat33_mul(M_P.m11, K)), M_P.m11);
}

/* 1 if A is symmetric to round-off, else 0 (also 0 if not finite) */
static inline int mbk_mat33_is_symmetric(mbk_mat33 A)
{
    double tol = MBK_SPATIAL_RTOL * mbk_mat33_max_abs(A);
    return mbk_mat33_is_finite(A) && fabs(A.m[0][1] - A.m[1][0]) <= tol &&
           fabs(A.m[0][2] - A.m[2][0]) <= tol && fabs(A.m[1][2] - A.m[2][1]) <= tol;
}

/* 1 if A is symmetric positive definite (Sylvester: leading minors above a
 * small relative tolerance), else 0 (also 0 if not finite); any finite scale */
static inline int mbk_mat33_is_spd(mbk_mat33 A)
{
    double s = mbk_mat33_max_abs(A), t = MBK_SPATIAL_RTOL;
    int i, j;
    if (!mbk_mat33_is_symmetric(A) || !(s > 0.0)) return 0;
    for (i = 0; i < 3; i++) /* scaled to max |entry| = 1: the minors cannot overflow */
        for (j = 0; j < 3; j++) A.m[i][j] /= s;
    return A.m[0][0] > t && A.m[0][0] * A.m[1][1] - A.m[0][1] * A.m[1][0] > t && mbk_mat33_det(A) > t;
}

/* 1 if A is symmetric positive semidefinite (all principal minors at least
 * minus a small relative tolerance), else 0 (also 0 if not finite); any finite scale */
static inline int mbk_mat33_is_psd(mbk_mat33 A)
{
    double (*a)[3] = A.m;
    double s = mbk_mat33_max_abs(A), t = MBK_SPATIAL_RTOL;
    int i, j;
    if (!mbk_mat33_is_symmetric(A)) return 0;
    if (s == 0.0) return 1;
    for (i = 0; i < 3; i++) /* scaled to max |entry| = 1: the minors cannot overflow */
        for (j = 0; j < 3; j++) a[i][j] /= s;
    return a[0][0] >= -t && a[1][1] >= -t && a[2][2] >= -t &&
           a[0][0] * a[1][1] - a[0][1] * a[1][0] >= -t &&
           a[0][0] * a[2][2] - a[0][2] * a[2][0] >= -t &&
           a[1][1] * a[2][2] - a[1][2] * a[2][1] >= -t && mbk_mat33_det(A) >= -t;
}

/* 1 if mp is physically valid: finite, mass >= 0, central inertia symmetric
 * and positive semidefinite, and its principal moments satisfy the triangle
 * inequalities (all to round-off); else 0. The triangle inequalities hold iff
 * the second-moment matrix S = tr(I)/2 1 - I is positive semidefinite, and
 * then I = tr(S) 1 - S is positive semidefinite too, so one test covers all. */
static inline int mbk_mass_props_is_valid(mbk_mass_props mp)
{
    mbk_mat33 S = mbk_mat33_sub(mbk_mat33_scale(mbk_mat33_identity(),
                                                0.5 * mbk_mat33_trace(mp.inertia)), mp.inertia);
    if (!isfinite(mp.mass) || !(mp.mass >= 0.0) || !mbk_vec3_is_finite(mp.com)) return 0;
    return mbk_mat33_is_psd(S); /* also 0 if the inertia is not finite */
}

#ifdef __cplusplus
}
#endif
#if defined(__GNUC__)
#pragma GCC visibility pop
#endif
#endif
