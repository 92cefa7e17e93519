/* Helpers shared by the built-in mobilizers (mobilizers.c, mobilizers_more.c).
 * Private to the matter subsystem. */
#ifndef MBK_MOBILIZER_UTIL_H
#define MBK_MOBILIZER_UTIL_H

#include <math.h>
#include <string.h>

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

#endif
