/* A damped harmonic oscillator written as a custom subsystem: the built-in
 * demo model of the mbk program until the matter subsystem arrives. */
#ifndef MBK_APP_OSCILLATOR_H
#define MBK_APP_OSCILLATOR_H

#include <mbk/mbk.h>

typedef struct oscillator {
    double mass;       /* topology-stage parameter (kg) */
    double default_k;  /* stiffness new States start with (N/m) */
    double default_c;  /* damping new States start with (N s/m) */
    int stiffness_var; /* discrete variable: k (N/m), invalidates Dynamics */
    int damping_var;   /* discrete variable: c (N s/m), invalidates Dynamics */
    int force_cache;   /* cache entry: spring-damper force, Velocity..Dynamics */
    int q, u;          /* indices of x and v within the subsystem */
} oscillator;

/* Add an oscillator of the given mass, stiffness and damping; returns its subsystem index. */
int oscillator_add(mbk_system *sys, double mass, double k, double c);
/* Analytic position and velocity at time t for x(0) = x0, v(0) = v0. */
void oscillator_exact(double m, double k, double c, double x0, double v0, double t, double *x,
                      double *v);

#endif
