/* sundials_lapack.h - SUNDIALS' dense Newton matrix factorized and solved with LAPACK. */
#ifndef MBK_SUNDIALS_LAPACK_H
#define MBK_SUNDIALS_LAPACK_H

#include <sundials/sundials_linearsolver.h>

/* A direct linear solver of n x n SUNDIALS dense matrices (SUNDenseMatrix) through LAPACK's
   dgetrf/dgetrs, for CVodeSetLinearSolver / IDASetLinearSolver; NULL when out of memory.
   Allocates its pivots here, nothing per setup or solve. */
SUNLinearSolver sd_lapack_dense_solver(int n, SUNContext ctx);

#endif
