/* The dense linear solver CVODE BDF and IDA use for their Newton matrix (sundials.c):
 * SUNDIALS' SUNLinearSolver interface over LAPACK's LU. */
#include <nvector/nvector_serial.h>
#include <sunmatrix/sunmatrix_dense.h>

#include "mbk/alloc.h"
#include "sundials_lapack.h"

/* LAPACK's LU (mbk links it, OpenBLAS on Debian): 10-20 times faster than SUNDIALS' own
   dense factorization on the matrices of multibody models (ny of 50-300), whose LU and
   solves were most of a stiff run's time (docs/benchmarks_stiff.md). */
extern void dgetrf_(const int *m, const int *n, double *a, const int *lda, int *ipiv, int *info);
extern void dgetrs_(const char *trans, const int *n, const int *nrhs, const double *a, const int *lda,
                    const int *ipiv, double *b, const int *ldb, int *info);

typedef struct lapack_ls {
    int n;
    int *pivots;
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

/* Factor A (SUNDIALS' column-major dense matrix, LAPACK's layout) in place, as SUNDIALS'
   dense solver does; a singular matrix is a recoverable failure (SUNDIALS cuts the step). */
static int lls_setup(SUNLinearSolver S, SUNMatrix A)
{
    lapack_ls *c = S->content;
    int info = 0;
    dgetrf_(&c->n, &c->n, SM_DATA_D(A), &c->n, c->pivots, &info);
    c->last_flag = info;
    return info < 0 ? SUNLS_PACKAGE_FAIL_UNREC : info > 0 ? SUNLS_LUFACT_FAIL : SUNLS_SUCCESS;
}

static int lls_solve(SUNLinearSolver S, SUNMatrix A, N_Vector x, N_Vector b, realtype tol)
{
    (void)tol;
    lapack_ls *c = S->content;
    int info = 0, one = 1;
    N_VScale(1.0, b, x);
    dgetrs_("N", &c->n, &one, SM_DATA_D(A), &c->n, c->pivots, N_VGetArrayPointer(x), &c->n, &info);
    c->last_flag = info;
    return info < 0 ? SUNLS_PACKAGE_FAIL_UNREC : SUNLS_SUCCESS;
}

static sunindextype lls_last_flag(SUNLinearSolver S) { return ((lapack_ls *)S->content)->last_flag; }

static int lls_free(SUNLinearSolver S)
{
    if (!S) return SUNLS_SUCCESS;
    if (S->content) mbk_free(((lapack_ls *)S->content)->pivots);
    mbk_free(S->content);
    S->content = NULL;
    SUNLinSolFreeEmpty(S);
    return SUNLS_SUCCESS;
}

SUNLinearSolver sd_lapack_dense_solver(int n, SUNContext ctx)
{
    SUNLinearSolver S = SUNLinSolNewEmpty(ctx);
    lapack_ls *c = mbk_calloc(1, sizeof *c);
    int *piv = mbk_malloc((size_t)n * sizeof *piv);
    if (!S || !c || !piv) {
        mbk_free(piv);
        mbk_free(c);
        if (S) SUNLinSolFreeEmpty(S);
        return NULL;
    }
    c->n = n;
    c->pivots = piv;
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
