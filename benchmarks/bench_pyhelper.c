/* The C side of benchmarks/bench_python.py (make bench): the same models the
 * Python script builds, through the public C API, timed without Python.
 *
 *   mbk_bench_pyhelper ydot N BATCHES CALLS   ns per mbk_system_calc_ydot call on the
 *                                             N-link chain (min over BATCHES batches of CALLS)
 *   mbk_bench_pyhelper run N T_END RTOL       N-link chain from t = 0 to T_END with CVODE BDF
 *                                             and RK-Merson (rel = abs tolerance RTOL):
 *                                             wall time, statistics and the final y
 *
 * The model is apps/app_models.c's builtin:chain:N (N = 1: the 1-link pendulum):
 * 1 kg, 1 m links on pins about alternating y and z axes, gravity -9.81 along z,
 * q_i = 0.3 (i % 5 + 1). Output: one line per figure,
 * "key value ...", for the script to parse. Exit status 1 on an mbk error. */
#define _POSIX_C_SOURCE 199309L
#include <mbk/mbk.h>

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "bench_chain.h"


static double now_s(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + 1e-9 * (double)ts.tv_nsec;
}

static int fail(const char *what)
{
    fprintf(stderr, "mbk_bench_pyhelper: %s: %s\n", what, mbk_last_error());
    return 1;
}


static mbk_state *initial_state(const mbk_system *sys)
{
    mbk_state *s = mbk_state_create();
    if (!s || mbk_state_init(s, sys) < 0 || mbk_system_realize(sys, s, MBK_STAGE_MODEL) < 0) {
        mbk_state_destroy(s);
        return NULL;
    }
    double *q = mbk_state_upd_q(s);
    int nq = mbk_state_get_nq(s);
    for (int i = 0; i < nq; ++i) q[i] = 0.3 * (i % 5 + 1);
    if (mbk_system_realize(sys, s, MBK_STAGE_INSTANCE) < 0) {
        mbk_state_destroy(s);
        return NULL;
    }
    return s;
}

static int time_ydot(const mbk_system *sys, mbk_state *s, long batches, long calls)
{
    int ny = mbk_state_get_ny(s);
    double *y = malloc(sizeof(double) * (size_t)ny), *yd = malloc(sizeof(double) * (size_t)ny);
    if (!y || !yd) {
        free(y);
        free(yd);
        return fail("out of memory");
    }
    memcpy(y, mbk_state_get_y(s), sizeof(double) * (size_t)ny);
    double best = INFINITY, sink = 0;
    for (long b = 0; b < batches; ++b) {
        double t0 = now_s();
        for (long k = 0; k < calls; ++k) {
            if (mbk_system_calc_ydot(sys, s, 0.0, y, yd) < 0) {
                free(y);
                free(yd);
                return fail("mbk_system_calc_ydot");
            }
            sink += yd[0];
        }
        double dt = (now_s() - t0) / (double)calls;
        if (dt < best) best = dt;
    }
    printf("ny %d\nydot_ns %.1f\nsink %g\n", ny, best * 1e9, sink);
    free(y);
    free(yd);
    return 0;
}

static int run_one(const mbk_system *sys, const mbk_state *s0, const char *key, double t_end, double rtol)
{
    mbk_integrator *ig = strcmp(key, "cvode_bdf") == 0 ? mbk_integrator_create_cvode(sys, MBK_CVODE_BDF)
                                                       : mbk_integrator_create_rkmerson(sys);
    if (!ig) return fail("creating the integrator");
    double t0 = now_s();
    if (mbk_integrator_set_tolerances(ig, rtol, rtol) < 0 || mbk_integrator_initialize(ig, s0) < 0 ||
        mbk_integrator_step_to(ig, t_end) < 0) {
        mbk_integrator_destroy(ig);
        return fail(key);
    }
    double wall = now_s() - t0;
    mbk_integrator_stats st;
    mbk_integrator_get_stats(ig, &st);
    const mbk_state *s = mbk_integrator_get_state(ig);
    printf("run %s wall_s %.6f steps %ld rhs %ld jac %ld\ny %s", key, wall, st.steps_taken, st.rhs_evaluations,
           st.jacobian_evaluations, key);
    const double *y = mbk_state_get_y(s);
    for (int i = 0; i < mbk_state_get_ny(s); ++i) printf(" %.17g", y[i]);
    printf("\n");
    mbk_integrator_destroy(ig);
    return 0;
}

int main(int argc, char **argv)
{
    if (argc != 5 || (strcmp(argv[1], "ydot") != 0 && strcmp(argv[1], "run") != 0)) {
        fprintf(stderr, "usage: mbk_bench_pyhelper ydot N BATCHES CALLS | run N T_END RTOL\n");
        return 2;
    }
    int n = atoi(argv[2]);
    if (n < 1 || n > 100000) {
        fprintf(stderr, "mbk_bench_pyhelper: N must be 1..100000\n");
        return 2;
    }
    mbk_system *sys = bench_chain_system(n);
    if (!sys) return fail("building the chain");
    mbk_state *s = initial_state(sys);
    int rc;
    if (!s) {
        rc = fail("creating the State");
    } else if (argv[1][0] == 'y') {
        long batches = atol(argv[3]), calls = atol(argv[4]);
        rc = batches > 0 && calls > 0 ? time_ydot(sys, s, batches, calls) : 2;
    } else {
        double t_end = atof(argv[3]), rtol = atof(argv[4]);
        rc = run_one(sys, s, "cvode_bdf", t_end, rtol);
        if (!rc) rc = run_one(sys, s, "rkmerson", t_end, rtol);
    }
    mbk_state_destroy(s);
    mbk_system_destroy(sys);
    return rc;
}
