/* oracle_test_util.h -- helpers shared by the oracle self-tests
 * (test_oracle_selfcheck.c, test_forces_oracle_selfcheck.c,
 * test_constraints_oracle_selfcheck.c): small 3-D algebra, rotations, and,
 * when the test defines ORC_TEST_RNG_SEED before including this header, a
 * deterministic random-number generator seeded with it, xf_set() from angles
 * and mk(), a body with random frames and mass properties. Header-only
 * (static inline); internal to tests/oracle. */
#ifndef MBK_ORACLE_TEST_UTIL_H
#define MBK_ORACLE_TEST_UTIL_H

#include "simbody_oracle.h"

#include <math.h>
#include <string.h>

/* ---- small 3-D helpers: R row-major 3x3, transform = R then p ---- */

static inline void mat_mul(const double *A, const double *B, double *C) /* C = A B */
{
    double T[9];
    for (int i = 0; i < 3; ++i)
        for (int j = 0; j < 3; ++j) {
            T[3 * i + j] = 0;
            for (int k = 0; k < 3; ++k) T[3 * i + j] += A[3 * i + k] * B[3 * k + j];
        }
    memcpy(C, T, sizeof T);
}

static inline void mat_tmul(const double *A, const double *B, double *C) /* C = A^T B */
{
    double T[9];
    for (int i = 0; i < 3; ++i)
        for (int j = 0; j < 3; ++j) {
            T[3 * i + j] = 0;
            for (int k = 0; k < 3; ++k) T[3 * i + j] += A[3 * k + i] * B[3 * k + j];
        }
    memcpy(C, T, sizeof T);
}

static inline void mat_vec(const double *A, const double *v, double *w)
{
    double t[3];
    for (int i = 0; i < 3; ++i) t[i] = A[3 * i] * v[0] + A[3 * i + 1] * v[1] + A[3 * i + 2] * v[2];
    memcpy(w, t, sizeof t);
}

static inline void mat_tvec(const double *A, const double *v, double *w) /* w = A^T v */
{
    double t[3];
    for (int i = 0; i < 3; ++i) t[i] = A[i] * v[0] + A[3 + i] * v[1] + A[6 + i] * v[2];
    memcpy(w, t, sizeof t);
}

static inline void cross(const double *a, const double *b, double *c)
{
    double t[3] = {a[1] * b[2] - a[2] * b[1], a[2] * b[0] - a[0] * b[2], a[0] * b[1] - a[1] * b[0]};
    memcpy(c, t, sizeof t);
}

static inline double dot3(const double *a, const double *b) { return a[0] * b[0] + a[1] * b[1] + a[2] * b[2]; }
static inline double norm3(const double *a) { return sqrt(dot3(a, a)); }

static inline void sub3(const double *a, const double *b, double *c)
{
    for (int i = 0; i < 3; ++i) c[i] = a[i] - b[i];
}

static inline void add3(const double *a, const double *b, double *c)
{
    for (int i = 0; i < 3; ++i) c[i] = a[i] + b[i];
}

static inline void scale3(double s, const double *a, double *c)
{
    for (int i = 0; i < 3; ++i) c[i] = s * a[i];
}

static inline void unit3(const double *a, double *c)
{
    const double n = norm3(a);
    scale3(1.0 / n, a, c);
}

static inline void col3(const double *R, int j, double *c) /* column j of R */
{
    c[0] = R[j];
    c[1] = R[3 + j];
    c[2] = R[6 + j];
}

static inline void rot_axis(int axis, double a, double *R)
{
    const double c = cos(a), s = sin(a);
    static const double I[9] = {1, 0, 0, 0, 1, 0, 0, 0, 1};
    memcpy(R, I, sizeof I);
    const int i = (axis + 1) % 3, j = (axis + 2) % 3;
    R[3 * i + i] = c;
    R[3 * i + j] = -s;
    R[3 * j + i] = s;
    R[3 * j + j] = c;
}

static inline void rot_xyz(double a, double b, double c, double *R) /* R_x(a) R_y(b) R_z(c) */
{
    double Ry[9], Rz[9];
    rot_axis(0, a, R);
    rot_axis(1, b, Ry);
    rot_axis(2, c, Rz);
    mat_mul(R, Ry, R);
    mat_mul(R, Rz, R);
}

static inline double max_abs(const double *a, int n)
{
    double m = 0;
    for (int i = 0; i < n; ++i)
        if (fabs(a[i]) > m) m = fabs(a[i]);
    return m;
}

#ifdef ORC_TEST_RNG_SEED

static inline void xf_set(double *X, double a, double b, double c, double px, double py, double pz)
{
    rot_xyz(a, b, c, X);
    X[9] = px;
    X[10] = py;
    X[11] = pz;
}

/* deterministic pseudo-random numbers in [lo, hi] */
static unsigned long long rng_state = ORC_TEST_RNG_SEED;
static inline double rnd(double lo, double hi)
{
    rng_state = rng_state * 6364136223846793005ull + 1442695040888963407ull;
    return lo + (hi - lo) * ((double)(rng_state >> 11) / 9007199254740992.0);
}

static inline void rnd3(double *v, double lo, double hi)
{
    for (int i = 0; i < 3; ++i) v[i] = rnd(lo, hi);
}

/* a body with random frames X_PF, X_BM, COM and a valid inertia */
static inline orc_body mk(int parent, orc_mobilizer type, double mass)
{
    orc_body b;
    memset(&b, 0, sizeof b);
    b.parent = parent;
    b.type = type;
    xf_set(b.X_PF, rnd(-1, 1), rnd(-1, 1), rnd(-1, 1), rnd(-0.5, 0.5), rnd(-0.5, 0.5), rnd(-0.5, 0.5));
    xf_set(b.X_BM, rnd(-1, 1), rnd(-1, 1), rnd(-1, 1), rnd(-0.3, 0.3), rnd(-0.3, 0.3), rnd(-0.3, 0.3));
    b.mass = mass;
    for (int i = 0; i < 3; ++i) b.com[i] = rnd(-0.2, 0.2);
    const double a = rnd(0.1, 0.3), c = rnd(0.1, 0.3), x = rnd(-0.02, 0.02);
    b.inertia_about_com[0] = a;
    b.inertia_about_com[4] = c;
    b.inertia_about_com[8] = a + c - 0.05;
    b.inertia_about_com[1] = b.inertia_about_com[3] = x;
    return b;
}

#endif /* ORC_TEST_RNG_SEED */

#endif /* MBK_ORACLE_TEST_UTIL_H */
