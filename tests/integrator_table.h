/* The library's integrators as a table, for tests that run every one of them. */
#ifndef MBK_TEST_INTEGRATOR_TABLE_H
#define MBK_TEST_INTEGRATOR_TABLE_H

#include <mbk/integrator.h>

typedef enum { I_MERSON, I_RK4, I_EULER, I_SEMI, I_BDF, I_ADAMS, I_IDA, I_COUNT } which;
static const char *names[I_COUNT] = {"RK-Merson", "RK4", "explicit Euler", "semi-explicit Euler",
                                     "CVODE BDF", "CVODE Adams", "IDA"};

/* A new integrator of kind w on sys (NULL on failure). */
static mbk_integrator *make(which w, const mbk_system *sys)
{
    switch (w) {
    case I_MERSON: return mbk_integrator_create_rkmerson(sys);
    case I_RK4: return mbk_integrator_create_rk4(sys);
    case I_EULER: return mbk_integrator_create_explicit_euler(sys);
    case I_SEMI: return mbk_integrator_create_semi_explicit_euler(sys);
    case I_BDF: return mbk_integrator_create_cvode(sys, MBK_CVODE_BDF);
    case I_ADAMS: return mbk_integrator_create_cvode(sys, MBK_CVODE_ADAMS);
    case I_IDA: return mbk_integrator_create_ida(sys);
    default: return NULL;
    }
}

#endif
