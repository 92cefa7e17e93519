/* The vector operations CVODE and IDA spend their own time in, on SUNDIALS' serial N_Vector,
 * compiled with mbk's flags. Debian's SUNDIALS is built for a generic CPU, its fused
 * operations are off by default (so N_VLinearCombination becomes a chain of N_VLinearSum
 * calls) and its weighted norm is one dependent chain of adds: together about a sixth of a
 * stiff run at ny = 260 (docs/benchmarks_stiff.md). The results are those of SUNDIALS' own
 * operations up to the order of summation in the norm, and the same on every run. */
#include <math.h>

#include <nvector/nvector_serial.h>

#include "sundials_vector.h"

/* Lanes of the norm's partial sums: enough independent adds to hide their latency and let
   the compiler use whole vector registers. */
enum { NORM_LANES = 8 };

static void v_linear_sum(realtype a, N_Vector x, realtype b, N_Vector y, N_Vector z)
{
    const realtype *xd = NV_DATA_S(x), *yd = NV_DATA_S(y);
    realtype *zd = NV_DATA_S(z);
    for (sunindextype i = 0, n = NV_LENGTH_S(z); i < n; ++i) zd[i] = a * xd[i] + b * yd[i];
}

static void v_scale(realtype c, N_Vector x, N_Vector z)
{
    const realtype *xd = NV_DATA_S(x);
    realtype *zd = NV_DATA_S(z);
    for (sunindextype i = 0, n = NV_LENGTH_S(z); i < n; ++i) zd[i] = c * xd[i];
}

static void v_const(realtype c, N_Vector z)
{
    realtype *zd = NV_DATA_S(z);
    for (sunindextype i = 0, n = NV_LENGTH_S(z); i < n; ++i) zd[i] = c;
}

/* sqrt(sum (x_i w_i)^2 / n), summed in NORM_LANES interleaved partial sums. */
static realtype v_wrms_norm(N_Vector x, N_Vector w)
{
    const realtype *xd = NV_DATA_S(x), *wd = NV_DATA_S(w);
    sunindextype n = NV_LENGTH_S(x), i = 0;
    realtype part[NORM_LANES] = {0}, sum = 0.0;
    for (; i + NORM_LANES <= n; i += NORM_LANES)
        for (int l = 0; l < NORM_LANES; ++l) part[l] += (xd[i + l] * wd[i + l]) * (xd[i + l] * wd[i + l]);
    for (; i < n; ++i) sum += (xd[i] * wd[i]) * (xd[i] * wd[i]);
    for (int l = 0; l < NORM_LANES; ++l) sum += part[l];
    return n > 0 ? sqrt(sum / (realtype)n) : 0.0;
}

/* z = sum_j c_j X_j, element by element (z may be any X_j). */
static int v_linear_combination(int nvec, realtype *c, N_Vector *X, N_Vector z)
{
    realtype *zd = NV_DATA_S(z);
    sunindextype n = NV_LENGTH_S(z);
    if (nvec < 1) return -1;
    const realtype *x0 = NV_DATA_S(X[0]);
    for (sunindextype i = 0; i < n; ++i) zd[i] = c[0] * x0[i];
    for (int j = 1; j < nvec; ++j) {
        const realtype *xj = NV_DATA_S(X[j]);
        for (sunindextype i = 0; i < n; ++i) zd[i] += c[j] * xj[i];
    }
    return 0;
}

/* Z_j = a_j x + Y_j (Z_j may be Y_j). */
static int v_scale_add_multi(int nvec, realtype *a, N_Vector x, N_Vector *Y, N_Vector *Z)
{
    const realtype *xd = NV_DATA_S(x);
    sunindextype n = NV_LENGTH_S(x);
    if (nvec < 1) return -1;
    for (int j = 0; j < nvec; ++j) {
        const realtype *yd = NV_DATA_S(Y[j]);
        realtype *zd = NV_DATA_S(Z[j]);
        for (sunindextype i = 0; i < n; ++i) zd[i] = a[j] * xd[i] + yd[i];
    }
    return 0;
}

void sd_fast_vector_ops(N_Vector v)
{
    v->ops->nvlinearsum = v_linear_sum;
    v->ops->nvscale = v_scale;
    v->ops->nvconst = v_const;
    v->ops->nvwrmsnorm = v_wrms_norm;
    v->ops->nvlinearcombination = v_linear_combination;
    v->ops->nvscaleaddmulti = v_scale_add_multi;
}
