/* sundials_vector.h - SUNDIALS' serial vector operations compiled with mbk's flags. */
#ifndef MBK_SUNDIALS_VECTOR_H
#define MBK_SUNDIALS_VECTOR_H

#include <sundials/sundials_nvector.h>

/* Gives a serial N_Vector (and so every clone SUNDIALS makes of it) mbk's own linear sum,
   scale, constant, weighted RMS norm, linear combination and scale-add-multi. */
void sd_fast_vector_ops(N_Vector v);

#endif
