/* sundials_lapack.h - SUNDIALS' Newton matrix, solved through its q blocks and LAPACK. */
#ifndef MBK_SUNDIALS_LAPACK_H
#define MBK_SUNDIALS_LAPACK_H

#include <sundials/sundials_linearsolver.h>
#include <sundials/sundials_matrix.h>

/* A direct linear solver of n x n SUNDIALS dense matrices (SUNDenseMatrix) through LAPACK,
   for CVodeSetLinearSolver / IDASetLinearSolver, that eliminates the leading nq (q) rows
   block by block when they are block-diagonal in q (0: plain LU); NULL when out of memory.
   Allocates its work space here, nothing per setup or solve. */
SUNLinearSolver sd_lapack_dense_solver(int n, int nq, SUNContext ctx);

/* Whether the last setup factored the Schur complement S as a band matrix, and S's
   bandwidths below (kl) and above (ku) the diagonal then. */
int sd_lapack_schur_bands(SUNLinearSolver S, int *kl, int *ku);

/* An n x n SUNDIALS dense matrix (SUNDenseMatrix) whose zero, copy and scale-add-identity
   operations (and its clones') run over the contiguous storage; NULL when out of memory. */
SUNMatrix sd_dense_matrix(int n, SUNContext ctx);

#endif
