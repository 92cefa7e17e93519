/* The linear solver CVODE BDF and IDA use for their Newton matrix (sundials.c): SUNDIALS'
 * SUNLinearSolver interface over LAPACK, exploiting the structure of multibody ODEs.
 *
 * y = [q; u; z] and qdot = N(q) u couples each mobilizer's q only to its own q and u, so the
 * Newton matrix A = I - gamma J (CVODE) or cj I - J (IDA) has a block-diagonal q-q part A11
 * with small blocks, and a q-u part A12 that is nonzero only beside each block:
 *
 *     A = [ A11  A12 ]      S = A22 - A21 A11^-1 A12   (the Schur complement, nu + nz square)
 *         [ A21  A22 ]
 *
 * Setup factors each q block, overwrites A12 with A11^-1 A12 (block by block, only over the
 * columns the block touches), forms S in place of A22 and factors it; a solve eliminates q
 * forward and substitutes it back. The LU is then of order nu + nz instead of ny (about 10
 * times fewer flops with quaternions, nq + nu = 2.2 nu) and a solve about half the work.
 * The blocks are read off A's nonzeros at every setup, so the result is exact for any
 * pattern; when A11 is not block-diagonal with blocks of at most QBLOCK_MAX rows (a custom
 * mobilizer coupling many q), A is factored whole. S is factored as a band matrix when its
 * nonzeros lie in a band narrow enough for that to pay (a chain of bodies coupled only to
 * their neighbours, through bushings or springs: M^-1 and the couplings are banded there),
 * else as a dense one. */
#include <stdbool.h>
#include <string.h>

#include <nvector/nvector_serial.h>
#include <sunmatrix/sunmatrix_dense.h>

#include "mbk/alloc.h"
#include "sundials_lapack.h"

/* LAPACK and BLAS (mbk links them, OpenBLAS on Debian): 10-20 times faster than SUNDIALS' own
   dense factorization on the matrices of multibody models (ny of 50-300), whose LU and
   solves were most of a stiff run's time (docs/benchmarks_stiff.md). */
extern void dgetrf_(const int *m, const int *n, double *a, const int *lda, int *ipiv, int *info);
extern void dgetrs_(const char *trans, const int *n, const int *nrhs, const double *a, const int *lda,
                    const int *ipiv, double *b, const int *ldb, int *info);
extern void dgemv_(const char *t, const int *m, const int *n, const double *alpha, const double *a, const int *lda,
                   const double *x, const int *incx, const double *beta, double *y, const int *incy);
extern void dgbtrf_(const int *m, const int *n, const int *kl, const int *ku, double *ab, const int *ldab, int *ipiv,
                    int *info);
extern void dgbtrs_(const char *trans, const int *n, const int *kl, const int *ku, const int *nrhs, const double *ab,
                    const int *ldab, const int *ipiv, double *b, const int *ldb, int *info);

/* Largest q block factored on its own: mobilizers have at most 7 q (Free with a quaternion). */
enum { QBLOCK_MAX = 16 };

typedef struct lapack_ls {
    int n;                /* order of the Newton matrix (ny) */
    int nq;               /* its leading q rows and columns (0: always factor A whole) */
    int nblocks;          /* q blocks of the last setup; 0 when A was factored whole */
    int *pivots;          /* n LU pivots: each q block's at its rows, then S's (or A's) */
    int *block_end;       /* nq: q block b is rows [block_end[b-1], block_end[b]) (from 0) */
    int *col_lo, *col_hi; /* nq each: the columns (>= nq) of A12 block b touches, [lo, hi) */
    int *block_of;        /* nq: the q block of each q row (setup scratch before that) */
    int *col_last;        /* nq, setup scratch: each A11 column's last nonzero row */
    double *band;         /* S's band LU (LAPACK band storage, ldab rows), (n - nq)^2 doubles */
    int kl, ku, ldab;     /* S's bandwidths below and above the diagonal at the last setup;
                             ldab = 0: S was factored dense */
    sunindextype last_flag;
} lapack_ls;

static SUNLinearSolver_Type lls_type(SUNLinearSolver S)
{
    (void)S;
    return SUNLINEARSOLVER_DIRECT;
}

static SUNLinearSolver_ID lls_id(SUNLinearSolver S)
{
    (void)S;
    return SUNLINEARSOLVER_CUSTOM;
}

static int lls_init(SUNLinearSolver S)
{
    ((lapack_ls *)S->content)->last_flag = 0;
    return SUNLS_SUCCESS;
}

static int lapack_status(lapack_ls *c, int info)
{
    c->last_flag = info;
    return info < 0 ? SUNLS_PACKAGE_FAIL_UNREC : info > 0 ? SUNLS_LUFACT_FAIL : SUNLS_SUCCESS;
}

/* The first and last rows of col[0, n) that are not zero (*first > *last when none), as
   min/max reductions the compiler vectorizes: the setup scans nq (nq + nu) entries. */
static void nonzero_extent(const double *col, int n, int *first, int *last)
{
    long lo = n, hi = -1; /* 64-bit, as wide as the doubles, so the loop vectorizes */
    for (long i = 0; i < n; ++i) {
        long as_first = col[i] != 0.0 ? i : n, as_last = col[i] != 0.0 ? i : -1;
        lo = as_first < lo ? as_first : lo;
        hi = as_last > hi ? as_last : hi;
    }
    *first = (int)lo;
    *last = (int)hi;
}

/* Split A11 into the finest contiguous diagonal blocks its nonzeros allow: a block ends
   before k when no column left of k has a nonzero at or below row k and no column from k on
   has one above row k. Leaves block_of[i] = the block of q row i. Returns the number of
   blocks, or 0 when one is larger than QBLOCK_MAX. */
static int find_q_blocks(lapack_ls *c, const double *a)
{
    int *first = c->block_of, *last = c->col_last;
    for (int j = 0; j < c->nq; ++j) {
        nonzero_extent(a + (size_t)j * (size_t)c->n, c->nq, first + j, last + j);
        if (first[j] > j) first[j] = j;
        if (last[j] < j) last[j] = j;
    }
    /* first becomes its suffix minimum, so "no column from k on reaches above k" is a look-up */
    for (int j = c->nq - 2; j >= 0; --j)
        if (first[j + 1] < first[j]) first[j] = first[j + 1];
    int nb = 0, start = 0, reach = 0;
    for (int k = 1; k <= c->nq; ++k) {
        if (last[k - 1] > reach) reach = last[k - 1];
        if (k < c->nq && (reach >= k || first[k] < k)) continue;
        if (k - start > QBLOCK_MAX) return 0;
        c->block_end[nb++] = k;
        start = k;
    }
    for (int b = 0, i = 0; b < nb; ++b)
        for (; i < c->block_end[b]; ++i) c->block_of[i] = b;
    return nb;
}

/* The columns (>= nq) of A12 each q block's rows touch, as [col_lo, col_hi); empty when
   col_lo >= col_hi. A column reaching several blocks counts for each block between its first
   and last nonzero row (zeros among them only cost work). */
static void find_block_columns(lapack_ls *c, const double *a)
{
    for (int b = 0; b < c->nblocks; ++b) {
        c->col_lo[b] = c->n;
        c->col_hi[b] = c->nq;
    }
    for (int j = c->nq; j < c->n; ++j) {
        int f, l;
        nonzero_extent(a + (size_t)j * (size_t)c->n, c->nq, &f, &l);
        for (int b = f <= l ? c->block_of[f] : c->nblocks, bl = f <= l ? c->block_of[l] : -1; b <= bl; ++b) {
            if (j < c->col_lo[b]) c->col_lo[b] = j;
            c->col_hi[b] = j + 1;
        }
    }
}

/* x = B^-1 x for a k x k q block B factored by dgetrf (column-major, leading dimension ld:
   row interchanges piv, 1-based; unit L below the diagonal, U on and above). By hand: the
   blocks have 1 to 7 rows, where a LAPACK call costs more than its work. */
static void block_solve(int k, const double *lu, int ld, const int *piv, double *x)
{
    for (int i = 0; i < k; ++i) {
        int p = piv[i] - 1;
        double t = x[i];
        x[i] = x[p];
        x[p] = t;
    }
    for (int j = 0; j < k; ++j)
        for (int i = j + 1; i < k; ++i) x[i] -= lu[(size_t)j * (size_t)ld + (size_t)i] * x[j];
    for (int j = k - 1; j >= 0; --j) {
        x[j] /= lu[(size_t)j * (size_t)ld + (size_t)j];
        for (int i = 0; i < j; ++i) x[i] -= lu[(size_t)j * (size_t)ld + (size_t)i] * x[j];
    }
}

/* Block b's part of the Schur step: factor A11_b, overwrite its columns of A12 with
   X = A11_b^-1 A12 and subtract A21[:, block] X from those columns of A22, a column at a
   time (contiguous columns of length n - nq: these vectorize). */
static int eliminate_block(lapack_ls *c, double *a, int s, int e, int col_lo, int col_hi)
{
    const size_t n = (size_t)c->n, nq = (size_t)c->nq;
    int k = e - s, ld = c->n, info = 0;
    double *a11 = a + (size_t)s * n + (size_t)s;
    dgetrf_(&k, &k, a11, &ld, c->pivots + s, &info);
    if (info != 0) return info;
    for (int j = col_lo; j < col_hi; ++j) {
        double *col = a + (size_t)j * n;
        block_solve(k, a11, ld, c->pivots + s, col + s);
        for (int r = s; r < e; ++r) {
            const double x = col[r], *a21 = a + (size_t)r * n;
            if (x == 0.0) continue;
            for (size_t i = nq; i < n; ++i) col[i] -= a21[i] * x;
        }
    }
    return 0;
}

/* S's bandwidths (ns x ns at s, leading dimension ld): the farthest nonzero below and
   above the diagonal over its columns. */
static void bandwidths(const double *s, int ns, int ld, int *kl, int *ku)
{
    *kl = *ku = 0;
    for (int j = 0; j < ns; ++j) {
        int first, last;
        nonzero_extent(s + (size_t)j * (size_t)ld, ns, &first, &last);
        if (first > last) continue;
        if (last - j > *kl) *kl = last - j;
        if (j - first > *ku) *ku = j - first;
    }
}

/* Factor S (ns x ns at s, leading dimension ld) as a band matrix when that pays: band LU
   costs about 2 ns kl (kl + ku) flops against dense LU's 2/3 ns^3, at a lower rate (no
   blocked updates); asking for a third of the dense flops leaves room for that, the scan
   and the copy into band storage (the stiff chain of benchmarks_stiff.md: 10 links,
   kl = ku = 11, ns = 60, a third of a ms less; 20 links, ns = 120, 1.7 ms less). Else
   dense, in place. */
static int factor_s(lapack_ls *c, double *s, int ns, int ld, int *piv)
{
    int info = 0;
    bandwidths(s, ns, ld, &c->kl, &c->ku);
    const double band_flops = 2.0 * ns * c->kl * (double)(c->kl + c->ku + 1), dense_flops = 2.0 / 3.0 * ns * (double)ns * ns;
    c->ldab = 2 * c->kl + c->ku + 1 <= ns && band_flops * 3.0 <= dense_flops ? 2 * c->kl + c->ku + 1 : 0;
    if (!c->ldab) {
        dgetrf_(&ns, &ns, s, &ld, piv, &info);
        return info;
    }
    /* band storage: entry (i, j) at row kl + ku + i - j of column j; the first kl rows are
       the room LAPACK's pivoting fills in */
    for (int j = 0; j < ns; ++j) {
        const int i0 = j - c->ku > 0 ? j - c->ku : 0, i1 = j + c->kl < ns - 1 ? j + c->kl : ns - 1;
        double *col = c->band + (size_t)j * (size_t)c->ldab + (size_t)(c->kl + c->ku - j);
        for (int i = i0; i <= i1; ++i) col[i] = s[(size_t)j * (size_t)ld + (size_t)i];
    }
    dgbtrf_(&ns, &ns, &c->kl, &c->ku, c->band, &c->ldab, piv, &info);
    return info;
}

/* Eliminate every q block, then factor S (in A22's place, or banded apart). */
static int factor_schur(lapack_ls *c, double *a)
{
    const int nq = c->nq, ns = c->n - nq;
    int info = 0;
    for (int b = 0, s = 0; b < c->nblocks; s = c->block_end[b++]) {
        info = eliminate_block(c, a, s, c->block_end[b], c->col_lo[b], c->col_hi[b]);
        if (info != 0) return lapack_status(c, info);
    }
    info = factor_s(c, a + (size_t)nq * (size_t)c->n + (size_t)nq, ns, c->n, c->pivots + nq);
    return lapack_status(c, info);
}

int sd_lapack_schur_bands(SUNLinearSolver S, int *kl, int *ku)
{
    const lapack_ls *c = S->content;
    *kl = c->kl, *ku = c->ku;
    return c->nblocks > 0 && c->ldab > 0;
}

/* Factor A in place, as SUNDIALS' dense solver does (through the q blocks and S when A11
   has small blocks); a singular matrix is a recoverable failure (SUNDIALS cuts the step). */
static int lls_setup(SUNLinearSolver S, SUNMatrix A)
{
    lapack_ls *c = S->content;
    double *a = SM_DATA_D(A);
    int info = 0;
    c->nblocks = c->nq > 0 ? find_q_blocks(c, a) : 0;
    if (c->nblocks > 0) {
        find_block_columns(c, a);
        return factor_schur(c, a);
    }
    dgetrf_(&c->n, &c->n, a, &c->n, c->pivots, &info);
    return lapack_status(c, info);
}

/* x = A^-1 x with the factors of factor_schur: q forward (w = A11^-1 x1), the Schur solve
   of x2 - A21 w, then x1 = w - (A11^-1 A12) x2. */
static int solve_schur(lapack_ls *c, const double *a, double *x)
{
    const size_t n = (size_t)c->n;
    const int nq = c->nq, ns = c->n - nq, inc = 1;
    const double minus_one = -1.0, one = 1.0;
    int info = 0;
    for (int b = 0, s = 0; b < c->nblocks; s = c->block_end[b++])
        block_solve(c->block_end[b] - s, a + (size_t)s * n + (size_t)s, c->n, c->pivots + s, x + s);
    dgemv_("N", &ns, &nq, &minus_one, a + nq, &c->n, x, &inc, &one, x + nq, &inc);
    if (c->ldab)
        dgbtrs_("N", &ns, &c->kl, &c->ku, &inc, c->band, &c->ldab, c->pivots + nq, x + nq, &ns, &info);
    else
        dgetrs_("N", &ns, &inc, a + (size_t)nq * n + (size_t)nq, &c->n, c->pivots + nq, x + nq, &ns, &info);
    if (info != 0) return info;
    for (int b = 0, s = 0; b < c->nblocks; s = c->block_end[b++])
        for (int j = c->col_lo[b]; j < c->col_hi[b]; ++j) {
            const double *xcol = a + (size_t)j * n;
            for (int r = s; r < c->block_end[b]; ++r) x[r] -= xcol[r] * x[j];
        }
    return 0;
}

static int lls_solve(SUNLinearSolver S, SUNMatrix A, N_Vector x, N_Vector b, realtype tol)
{
    (void)tol;
    lapack_ls *c = S->content;
    int info = 0, one = 1;
    double *xv = N_VGetArrayPointer(x);
    N_VScale(1.0, b, x);
    if (c->nblocks > 0)
        info = solve_schur(c, SM_DATA_D(A), xv);
    else
        dgetrs_("N", &c->n, &one, SM_DATA_D(A), &c->n, c->pivots, xv, &c->n, &info);
    c->last_flag = info;
    return info < 0 ? SUNLS_PACKAGE_FAIL_UNREC : SUNLS_SUCCESS;
}

/* ---- The Newton matrix: SUNDIALS' dense matrix with its whole-matrix operations made
   contiguous. CVODE copies the saved Jacobian into A and adds -gamma J + I at every setup
   (IDA zeroes it before each Jacobian); SUNDIALS' element loops took a third of a stiff
   run at ny = 260, several times memcpy's time. The storage is one column-major block. */

static bool same_dense_shape(SUNMatrix A, SUNMatrix B)
{
    return SUNMatGetID(A) == SUNMATRIX_DENSE && SUNMatGetID(B) == SUNMATRIX_DENSE &&
           SM_ROWS_D(A) == SM_ROWS_D(B) && SM_COLUMNS_D(A) == SM_COLUMNS_D(B);
}

static int dm_zero(SUNMatrix A)
{
    memset(SM_DATA_D(A), 0, (size_t)SM_LDATA_D(A) * sizeof(realtype));
    return SUNMAT_SUCCESS;
}

static int dm_copy(SUNMatrix A, SUNMatrix B)
{
    if (!same_dense_shape(A, B)) return SUNMAT_ILL_INPUT;
    memcpy(SM_DATA_D(B), SM_DATA_D(A), (size_t)SM_LDATA_D(A) * sizeof(realtype));
    return SUNMAT_SUCCESS;
}

/* A = c A + I */
static int dm_scale_add_identity(realtype c, SUNMatrix A)
{
    realtype *a = SM_DATA_D(A);
    sunindextype nr = SM_ROWS_D(A), nc = SM_COLUMNS_D(A), len = SM_LDATA_D(A);
    for (sunindextype k = 0; k < len; ++k) a[k] *= c;
    for (sunindextype j = 0; j < nc && j < nr; ++j) a[j * nr + j] += 1.0;
    return SUNMAT_SUCCESS;
}

/* A (when made) with the operations above, its clones too; returns A. */
static SUNMatrix dm_with_ops(SUNMatrix A);

static SUNMatrix dm_clone(SUNMatrix A) { return dm_with_ops(SUNMatClone_Dense(A)); }

static SUNMatrix dm_with_ops(SUNMatrix A)
{
    if (A) {
        A->ops->zero = dm_zero;
        A->ops->copy = dm_copy;
        A->ops->scaleaddi = dm_scale_add_identity;
        A->ops->clone = dm_clone;
    }
    return A;
}

SUNMatrix sd_dense_matrix(int n, SUNContext ctx) { return dm_with_ops(SUNDenseMatrix(n, n, ctx)); }

static sunindextype lls_last_flag(SUNLinearSolver S) { return ((lapack_ls *)S->content)->last_flag; }

static int lls_free(SUNLinearSolver S)
{
    if (!S) return SUNLS_SUCCESS;
    if (S->content) {
        mbk_free(((lapack_ls *)S->content)->pivots);
        mbk_free(((lapack_ls *)S->content)->band);
    }
    mbk_free(S->content);
    S->content = NULL;
    SUNLinSolFreeEmpty(S);
    return SUNLS_SUCCESS;
}

SUNLinearSolver sd_lapack_dense_solver(int n, int nq, SUNContext ctx)
{
    SUNLinearSolver S = SUNLinSolNewEmpty(ctx);
    lapack_ls *c = mbk_calloc(1, sizeof *c);
    /* one block of ints: the pivots, then five per q row; S's band storage (it is used
       only when 2 kl + ku + 1 <= ns, so ns^2 doubles hold it) */
    int *ints = mbk_malloc(((size_t)n + 5 * (size_t)nq) * sizeof *ints);
    const size_t ns = nq > 0 && nq < n ? (size_t)(n - nq) : 0;
    double *band = ns ? mbk_malloc(ns * ns * sizeof *band) : NULL;
    if (!S || !c || !ints || (ns && !band)) {
        mbk_free(band);
        mbk_free(ints);
        mbk_free(c);
        if (S) SUNLinSolFreeEmpty(S);
        return NULL;
    }
    c->n = n;
    c->nq = nq > 0 && nq < n ? nq : 0;
    c->pivots = ints;
    c->block_end = ints + n;
    c->col_lo = c->block_end + nq;
    c->col_hi = c->col_lo + nq;
    c->block_of = c->col_hi + nq;
    c->col_last = c->block_of + nq;
    c->band = band;
    S->content = c;
    S->ops->gettype = lls_type;
    S->ops->getid = lls_id;
    S->ops->initialize = lls_init;
    S->ops->setup = lls_setup;
    S->ops->solve = lls_solve;
    S->ops->lastflag = lls_last_flag;
    S->ops->free = lls_free;
    return S;
}
