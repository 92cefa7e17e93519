/* The Newton-matrix solver CVODE BDF and IDA use (integrators/sundials_lapack.c, linked
 * statically: it is internal) against the plain dense system it solves: on matrices with
 * the structure of I - gamma J for y = [q; u; z] (small q blocks, A12 beside each block),
 * with large q blocks (factored whole), with no q, with a singular q block or Schur
 * complement (a recoverable failure), with a banded Schur complement (factored as a band
 * matrix); and the dense-matrix and vector operations it gives
 * SUNDIALS (integrators/sundials_vector.c) against SUNDIALS' own. */
#include <math.h>
#include <string.h>

#include <nvector/nvector_serial.h>
#include <sundials/sundials_context.h>
#include <sunmatrix/sunmatrix_dense.h>

#include "mbk/mbk.h"
#include "../integrators/sundials_lapack.h"
#include "../integrators/sundials_vector.h"
#include "mbk_test.h"
#include "test_util.h"

enum { NMAX = 64 };

/* A Newton-like matrix, column-major (n x n): q blocks of the sizes given (summing to nq)
   near the identity, each coupled to a run of u columns, then dense u and z rows. */
static void make_matrix(double *a, int n, int nq, const int *blocks, int nblocks, unsigned long long *rng)
{
    memset(a, 0, sizeof(double) * (size_t)n * (size_t)n);
    for (int b = 0, s = 0; b < nblocks; s += blocks[b++]) {
        int cols = nq < n ? 1 + b % 3 : 0, c0 = nq + (b * 2) % (n - nq > 0 ? n - nq : 1);
        for (int j = s; j < s + blocks[b]; ++j) {
            for (int i = s; i < s + blocks[b]; ++i) a[j * n + i] = (i == j ? 1.0 : 0.0) + 0.3 * test_rand_uniform(rng);
            for (int c = c0; c < c0 + cols && c < n; ++c) a[c * n + j] = test_rand_uniform(rng);
        }
    }
    for (int j = 0; j < n; ++j)
        for (int i = nq; i < n; ++i) a[j * n + i] = (i == j ? 4.0 : 0.0) + 0.5 * test_rand_uniform(rng);
}

/* max_i |(A x - b)_i| / (|A| |x| + |b|)_i */
static double residual(const double *a, int n, const double *x, const double *b)
{
    double worst = 0;
    for (int i = 0; i < n; ++i) {
        double r = -b[i], scale = fabs(b[i]);
        for (int j = 0; j < n; ++j) {
            r += a[j * n + i] * x[j];
            scale += fabs(a[j * n + i] * x[j]);
        }
        worst = fmax(worst, fabs(r) / scale);
    }
    return worst;
}

/* Factor and solve (twice, two right-hand sides, as Newton iterations do); returns the
   setup status, and the worst residual through *res. */
static int solve_case(SUNContext ctx, int n, int nq, const double *a0, unsigned long long *rng, double *res)
{
    SUNMatrix A = sd_dense_matrix(n, ctx);
    SUNLinearSolver LS = sd_lapack_dense_solver(n, nq, ctx);
    N_Vector x = N_VNew_Serial(n, ctx), b = N_VNew_Serial(n, ctx);
    CHECK(A && LS && x && b);
    memcpy(SM_DATA_D(A), a0, sizeof(double) * (size_t)n * (size_t)n);
    CHECK_INT(SUNLinSolInitialize(LS), SUNLS_SUCCESS);
    int rc = SUNLinSolSetup(LS, A);
    *res = 0;
    for (int k = 0; rc == SUNLS_SUCCESS && k < 2; ++k) {
        for (int i = 0; i < n; ++i) NV_Ith_S(b, i) = test_rand_uniform(rng);
        CHECK_INT(SUNLinSolSolve(LS, A, x, b, 0.0), SUNLS_SUCCESS);
        *res = fmax(*res, residual(a0, n, NV_DATA_S(x), NV_DATA_S(b)));
    }
    N_VDestroy(x);
    N_VDestroy(b);
    SUNLinSolFree(LS);
    SUNMatDestroy(A);
    return rc;
}

static void test_solves(SUNContext ctx)
{
    unsigned long long rng = 42;
    double a[NMAX * NMAX], res;
    /* mixed: a Free (quaternion block and three translations), a Ball, two Pins, and z rows */
    const int mixed[] = {4, 1, 1, 1, 4, 1, 1}, ones[] = {1, 1, 1, 1, 1, 1, 1, 1}, big[] = {20, 2};
    /* the structured case on 20 matrices, then: at rest A11 is the identity (every q its own
       block); a q block larger than the solver takes apart (a custom mobilizer coupling
       20 q: factored whole, same answer); no q at all; only q (nothing to eliminate onto) */
    const struct { int n, nq, nblocks; const int *blocks; } cases[] = {
        {30, 13, 7, mixed}, {20, 8, 8, ones}, {40, 22, 2, big}, {12, 0, 0, NULL}, {8, 8, 8, ones}};
    for (int k = 0; k < 24; ++k) {
        int c = k < 20 ? 0 : k - 19;
        make_matrix(a, cases[c].n, cases[c].nq, cases[c].blocks, cases[c].nblocks, &rng);
        CHECK_INT(solve_case(ctx, cases[c].n, cases[c].nq, a, &rng, &res), SUNLS_SUCCESS);
        CHECK(res < 1e-13);
    }
    /* the residual check can fail: a solution checked against a matrix one entry off */
    make_matrix(a, 30, 13, mixed, 7, &rng);
    {
        SUNMatrix A = sd_dense_matrix(30, ctx);
        SUNLinearSolver LS = sd_lapack_dense_solver(30, 13, ctx);
        N_Vector x = N_VNew_Serial(30, ctx), b = N_VNew_Serial(30, ctx);
        memcpy(SM_DATA_D(A), a, 30 * 30 * sizeof(double));
        for (int i = 0; i < 30; ++i) NV_Ith_S(b, i) = 1.0;
        CHECK_INT(SUNLinSolSetup(LS, A), SUNLS_SUCCESS);
        CHECK_INT(SUNLinSolSolve(LS, A, x, b, 0.0), SUNLS_SUCCESS);
        CHECK(residual(a, 30, NV_DATA_S(x), NV_DATA_S(b)) < 1e-13);
        a[20 * 30 + 2] += 1e-6; /* an A12 entry */
        CHECK(residual(a, 30, NV_DATA_S(x), NV_DATA_S(b)) > 1e-9);
        N_VDestroy(x);
        N_VDestroy(b);
        SUNLinSolFree(LS);
        SUNMatDestroy(A);
    }
}

/* A chain's Newton matrix: q row i (a 1 x 1 block) coupled to u column i, u row i to
   q and u columns i - 2 .. i + 2: the Schur complement is banded (kl = ku = 2), and the
   solver factors it as a band matrix (a dense one has the same solution); a matrix with
   dense u rows is factored dense. */
static void test_banded(SUNContext ctx)
{
    enum { NQ = 40, N = 2 * NQ };
    unsigned long long rng = 11;
    static double a[N * N];
    memset(a, 0, sizeof a);
    for (int i = 0; i < NQ; ++i) {
        a[i * N + i] = 1.0 + 0.1 * test_rand_uniform(&rng);        /* A11: diagonal */
        a[(NQ + i) * N + i] = -0.05 * (1.0 + test_rand_uniform(&rng)); /* A12: q_i <- u_i */
        for (int j = i - 2; j <= i + 2; ++j) {
            if (j < 0 || j >= NQ) continue;
            a[j * N + NQ + i] = 0.3 * test_rand_uniform(&rng);                             /* A21 */
            a[(NQ + j) * N + NQ + i] = (i == j ? 4.0 : 0.0) + 0.5 * test_rand_uniform(&rng); /* A22 */
        }
    }
    SUNMatrix A = sd_dense_matrix(N, ctx);
    SUNLinearSolver LS = sd_lapack_dense_solver(N, NQ, ctx);
    N_Vector x = N_VNew_Serial(N, ctx), b = N_VNew_Serial(N, ctx);
    CHECK(A && LS && x && b);
    memcpy(SM_DATA_D(A), a, sizeof a);
    CHECK_INT(SUNLinSolSetup(LS, A), SUNLS_SUCCESS);
    int kl = -1, ku = -1;
    CHECK(sd_lapack_schur_bands(LS, &kl, &ku) == 1);
    CHECK(kl == 2 && ku == 2);
    for (int k = 0; k < 2; ++k) {
        for (int i = 0; i < N; ++i) NV_Ith_S(b, i) = test_rand_uniform(&rng);
        CHECK_INT(SUNLinSolSolve(LS, A, x, b, 0.0), SUNLS_SUCCESS);
        CHECK(residual(a, N, NV_DATA_S(x), NV_DATA_S(b)) < 1e-13);
    }
    a[(NQ + 5) * N + NQ + 7] += 1e-6; /* the check can fail: an A22 entry in the band, off */
    CHECK(residual(a, N, NV_DATA_S(x), NV_DATA_S(b)) > 1e-9);
    /* a u row of zeros: the banded S is singular, a recoverable failure */
    for (int j = 0; j < N; ++j) a[j * N + NQ + 10] = 0.0;
    memcpy(SM_DATA_D(A), a, sizeof a);
    CHECK(SUNLinSolSetup(LS, A) > 0);
    /* dense u rows: factored dense */
    const int mixed[] = {4, 1, 1, 1, 4, 1, 1};
    make_matrix(a, 30, 13, mixed, 7, &rng);
    SUNLinearSolver LS2 = sd_lapack_dense_solver(30, 13, ctx);
    SUNMatrix A2 = sd_dense_matrix(30, ctx);
    CHECK(LS2 && A2);
    memcpy(SM_DATA_D(A2), a, 30 * 30 * sizeof(double));
    CHECK_INT(SUNLinSolSetup(LS2, A2), SUNLS_SUCCESS);
    CHECK(sd_lapack_schur_bands(LS2, &kl, &ku) == 0);
    SUNLinSolFree(LS2);
    SUNMatDestroy(A2);
    N_VDestroy(x);
    N_VDestroy(b);
    SUNLinSolFree(LS);
    SUNMatDestroy(A);
}

/* A singular q block or Schur complement is SUNDIALS' recoverable "LU failed" (it cuts the
   step), not a crash or an unrecoverable error. */
static void test_singular(SUNContext ctx)
{
    unsigned long long rng = 7;
    double a[NMAX * NMAX], res;
    const int mixed[] = {4, 1, 1, 1, 4, 1, 1};
    make_matrix(a, 30, 13, mixed, 7, &rng);
    for (int i = 0; i < 30; ++i) a[4 * 30 + i] = 0.0; /* column 4: the 1x1 block at q row 4 */
    CHECK(solve_case(ctx, 30, 13, a, &rng, &res) > 0);
    make_matrix(a, 30, 13, mixed, 7, &rng);
    for (int j = 0; j < 30; ++j) a[j * 30 + 25] = 0.0; /* a u row of zeros: S singular */
    CHECK(solve_case(ctx, 30, 13, a, &rng, &res) > 0);
}

/* copy, zero, scale-add-identity and clone match SUNDIALS' own dense operations */
static void test_matrix_ops(SUNContext ctx)
{
    unsigned long long rng = 3;
    SUNMatrix A = sd_dense_matrix(9, ctx), ref = SUNDenseMatrix(9, 9, ctx);
    for (int k = 0; k < 81; ++k) SM_DATA_D(A)[k] = SM_DATA_D(ref)[k] = test_rand_uniform(&rng);
    SUNMatrix B = SUNMatClone(A);
    CHECK(B && B->ops->copy == A->ops->copy);
    CHECK_INT(SUNMatCopy(A, B), SUNMAT_SUCCESS);
    CHECK_INT(SUNMatScaleAddI(-0.25, B), SUNMAT_SUCCESS);
    CHECK_INT(SUNMatScaleAddI_Dense(-0.25, ref), SUNMAT_SUCCESS);
    CHECK(memcmp(SM_DATA_D(B), SM_DATA_D(ref), 81 * sizeof(double)) == 0);
    SUNMatrix small = SUNDenseMatrix(3, 3, ctx);
    CHECK_INT(SUNMatCopy(A, small), SUNMAT_ILL_INPUT); /* shapes differ: refused, nothing written */
    CHECK_INT(SUNMatZero(B), SUNMAT_SUCCESS);
    double sum = 0;
    for (int k = 0; k < 81; ++k) sum += fabs(SM_DATA_D(B)[k]);
    CHECK(sum == 0.0);
    SUNMatDestroy(small);
    SUNMatDestroy(B);
    SUNMatDestroy(ref);
    SUNMatDestroy(A);
}

/* mbk's vector operations against SUNDIALS' (z may be an input, as CVODE passes it) */
static void test_vector_ops(SUNContext ctx)
{
    enum { N = 37 };
    unsigned long long rng = 5;
    N_Vector v[4], r[4];
    for (int k = 0; k < 4; ++k) {
        v[k] = N_VNew_Serial(N, ctx);
        r[k] = N_VNew_Serial(N, ctx);
        sd_fast_vector_ops(v[k]);
        for (int i = 0; i < N; ++i) NV_Ith_S(v[k], i) = NV_Ith_S(r[k], i) = test_rand_uniform(&rng) * (k + 1);
    }
    N_Vector c = N_VClone(v[0]);
    CHECK(c && c->ops->nvwrmsnorm == v[0]->ops->nvwrmsnorm); /* SUNDIALS' clones keep them */
    CHECK(mbk_test_close(N_VWrmsNorm(v[1], v[2]), N_VWrmsNorm_Serial(r[1], r[2]), 1e-15));
    N_VLinearSum(0.5, v[1], -2.0, v[2], v[0]);
    N_VLinearSum_Serial(0.5, r[1], -2.0, r[2], r[0]);
    double coef[3] = {0.5, -1.5, 3.0}, worst = 0;
    N_VLinearCombination(3, coef, (N_Vector[]){v[0], v[1], v[2]}, v[0]); /* z is X[0] */
    N_VLinearCombination_Serial(3, coef, (N_Vector[]){r[0], r[1], r[2]}, r[0]);
    N_VScaleAddMulti(2, coef, v[3], (N_Vector[]){v[1], v[2]}, (N_Vector[]){v[1], v[2]});
    N_VScaleAddMulti_Serial(2, coef, r[3], (N_Vector[]){r[1], r[2]}, (N_Vector[]){r[1], r[2]});
    N_VScale(-3.0, v[3], v[3]);
    N_VScale_Serial(-3.0, r[3], r[3]);
    for (int k = 0; k < 4; ++k)
        for (int i = 0; i < N; ++i) worst = fmax(worst, fabs(NV_Ith_S(v[k], i) - NV_Ith_S(r[k], i)));
    CHECK(worst < 1e-14);
    N_VConst(2.5, c);
    CHECK(NV_Ith_S(c, 0) == 2.5 && NV_Ith_S(c, N - 1) == 2.5);
    N_VDestroy(c);
    for (int k = 0; k < 4; ++k) {
        N_VDestroy(v[k]);
        N_VDestroy(r[k]);
    }
}

int main(void)
{
    SUNContext ctx;
    if (SUNContext_Create(NULL, &ctx) != 0) return 1;
    test_solves(ctx);
    test_singular(ctx);
    test_banded(ctx);
    test_matrix_ops(ctx);
    test_vector_ops(ctx);
    SUNContext_Free(&ctx);
    return mbk_test_finish();
}
