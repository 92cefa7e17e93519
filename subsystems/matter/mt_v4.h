/* Four doubles as one vector, for the sweeps that do 3-vector arithmetic: GCC's vector
 * extension (as in matter_operators.c's mirror), where AVX makes it one register (and
 * passing one is no ABI question); MT_V4 is defined then, and the sweeps take their scalar
 * code elsewhere. A 3-vector sits in lanes 0..2; lane 3 holds whatever the load brought and
 * is never stored. Each lane does the scalar code's products and sums in the same order
 * (no contraction: ISO C mode), so the results are the same bits. Private to matter. */
#ifndef MBK_MT_V4_H
#define MBK_MT_V4_H

#if defined(__GNUC__) && !defined(__clang__) && defined(__AVX__)
#define MT_V4 1

#include <string.h>

#include "mbk/spatial.h"
#include "mt_inertia.h"

typedef double mt_v4 __attribute__((vector_size(32)));
typedef long long mt_v4i __attribute__((vector_size(32)));

/* A spatial vector as two vectors. */
typedef struct mt_sv4 {
    mt_v4 w, v; /* angular and linear parts */
} mt_sv4;

/* The 3-vector of lanes 0..2. */
static inline mbk_vec3 v4_vec3(mt_v4 a) { return mbk_vec3_make(a[0], a[1], a[2]); }

/* Lane k of a, in every lane. */
static inline mt_v4 v4_lane(mt_v4 a, long long k) { return __builtin_shuffle(a, (mt_v4i){k, k, k, k}); }

/* Four doubles from p (all four must lie in the object read). */
static inline mt_v4 v4_load(const double *p)
{
    mt_v4 a;
    memcpy(&a, p, sizeof a);
    return a;
}

/* The 3-vector at p + 1 whose object ends there: loads p[0..3] and moves lanes 1..3 down. */
static inline mt_v4 v4_load_after(const double *p)
{
    return __builtin_shuffle(v4_load(p), (mt_v4i){1, 2, 3, 3});
}

/* a x b in mbk_vec3_cross's order: (a_y b_z - a_z b_y, a_z b_x - a_x b_z, a_x b_y - a_y b_x). */
static inline mt_v4 v4_cross(mt_v4 a, mt_v4 b)
{
    const mt_v4i yzx = {1, 2, 0, 3}, zxy = {2, 0, 1, 3};
    return __builtin_shuffle(a, yzx) * __builtin_shuffle(b, zxy) - __builtin_shuffle(a, zxy) * __builtin_shuffle(b, yzx);
}

/* a . b in mbk_vec3_dot's order. */
static inline double v4_dot(mt_v4 a, mt_v4 b)
{
    mt_v4 p = a * b;
    return p[0] + p[1] + p[2];
}

/* A spatial vector (both parts read with two loads inside its 48 bytes). */
static inline mt_sv4 sv4_load(const mbk_spatial_vec *x)
{
    mt_sv4 r = {v4_load(&x->w.x), v4_load_after(&x->w.z)};
    return r;
}

/* Store a spatial vector: one 4-double store and two scalars. */
static inline void sv4_store(mbk_spatial_vec *x, mt_sv4 a)
{
    mt_v4 lo = __builtin_shuffle(a.w, a.v, (mt_v4i){0, 1, 2, 4});
    double *d = &x->w.x;
    memcpy(d, &lo, sizeof lo);
    d[4] = a.v[1];
    d[5] = a.v[2];
}

/* A symmetric 3 x 3 by columns from its six numbers {xx, yy, zz, xy, xz, yz}. */
static inline void sym3_cols(const mt_sym3 *S, mt_v4 c[3])
{
    const mt_v4 a = v4_load(&S->xx), b = v4_load(&S->zz); /* xx yy zz xy, zz xy xz yz */
    c[0] = __builtin_shuffle(a, b, (mt_v4i){0, 5, 6, 6});  /* xx xy xz */
    c[1] = __builtin_shuffle(a, b, (mt_v4i){3, 1, 7, 7});  /* xy yy yz */
    c[2] = __builtin_shuffle(a, b, (mt_v4i){6, 7, 2, 2});  /* xz yz zz */
}

/* S v in mt_sym3_mul's order, S by columns (sym3_cols). */
static inline mt_v4 sym3_cols_mul(const mt_v4 c[3], mt_v4 v)
{
    return c[0] * v4_lane(v, 0) + c[1] * v4_lane(v, 1) + c[2] * v4_lane(v, 2);
}

/* a + b. */
static inline mt_sv4 sv4_add(mt_sv4 a, mt_sv4 b)
{
    mt_sv4 r = {a.w + b.w, a.v + b.v};
    return r;
}

/* a - b. */
static inline mt_sv4 sv4_sub(mt_sv4 a, mt_sv4 b)
{
    mt_sv4 r = {a.w - b.w, a.v - b.v};
    return r;
}

/* s a (s in every lane). */
static inline mt_sv4 sv4_scale(mt_sv4 a, double s)
{
    mt_sv4 r = {a.w * s, a.v * s};
    return r;
}

/* a x b for motions, in mbk_spatial_cross_motion's order: (a.w x b.w, a.w x b.v + a.v x b.w). */
static inline mt_sv4 sv4_cross_motion(mt_sv4 a, mt_sv4 b)
{
    mt_sv4 r = {v4_cross(a.w, b.w), v4_cross(a.w, b.v) + v4_cross(a.v, b.w)};
    return r;
}

/* a x* f for a motion and a force, in mbk_spatial_cross_force's order:
   (a.w x f.w + a.v x f.v, a.w x f.v). */
static inline mt_sv4 sv4_cross_force(mt_sv4 a, mt_sv4 f)
{
    mt_sv4 r = {v4_cross(a.w, f.w) + v4_cross(a.v, f.v), v4_cross(a.w, f.v)};
    return r;
}

/* A composite inertia (mt_composite) as vectors. */
typedef struct mt_comp4 {
    mt_v4 I[3]; /* the inertia by columns (sym3_cols) */
    mt_v4 h;    /* the first mass moment */
    double m;   /* the mass */
} mt_comp4;

/* A composite inertia's vectors (its loads stay inside the struct). */
static inline mt_comp4 comp4_load(const mt_composite *Y)
{
    mt_comp4 r;
    sym3_cols(&Y->I, r.I);
    r.h = v4_load(&Y->h.x);
    r.m = Y->m;
    return r;
}

/* Y V in mt_composite_mul's order: (I w + h x v, m v - h x w). */
static inline mt_sv4 comp4_mul(const mt_comp4 *Y, mt_sv4 V)
{
    mt_sv4 r = {sym3_cols_mul(Y->I, V.w) + v4_cross(Y->h, V.v), V.v * Y->m - v4_cross(Y->h, V.w)};
    return r;
}
#endif

#endif
