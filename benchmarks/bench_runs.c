/* bench_runs.c - whole runs: chain10 for RUN_T s with every integrator, at accuracy 1e-6
 * and at matched energy drift (the accuracy searched for each library on its own). */
#include <stdio.h>
#include <stdlib.h>

#include "bench_driver.h"

const run_def RUNS[NUM_RUNS] = {
    {"mbk RK-Merson", "run_10s_rkmerson", "mbk", 0, RUN_RKMERSON, 0, RUN_SB_RKM},
    {"mbk CVODE BDF", "run_10s_cvode_bdf", "mbk", 0, RUN_CVODE_BDF, 0, RUN_SB_RKM},
    {"mbk CVODE Adams", "run_10s_cvode_adams", "mbk", 0, RUN_CVODE_ADAMS, 0, RUN_SB_RKM},
    {"Simbody RK-Merson (apt build)", "run_10s_rkmerson", "simbody_apt", 1, RUN_RKMERSON, 0, RUN_SB_RKM},
    {"mbk RK-Merson, matched drift", "run_10s_rkmerson_matched_drift", "mbk", 0, RUN_RKMERSON, 1, RUN_SB_RKM_MATCHED},
    {"Simbody RK-Merson (apt build), matched drift", "run_10s_rkmerson_matched_drift", "simbody_apt", 1, RUN_RKMERSON,
     1, RUN_SB_RKM_MATCHED},
};
run_stat g_runs[NUM_RUNS];

/* One whole run of a kind at an accuracy. */
static void integrate(int k, const bm_model *model, const double *q, const double *u, double acc, run_result *rr)
{
    const run_def *d = &RUNS[k];
    int rc = d->simbody ? sb_integrate(model, q, u, acc, RUN_T, rr) : mb_integrate(model, q, u, d->kind, acc, RUN_T, rr);
    if (rc < 0) bench_die("%s at accuracy %g: %s", d->title, acc, d->simbody ? sb_last_error() : mb_last_error());
}

/* Deterministic accuracy search for a matched run: 1e-6, halved until the drift over RUN_T
   is <= DRIFT_TARGET (at most MAX_HALVINGS times). */
static void match_drift(int k, const bm_model *model, const double *q, const double *u)
{
    run_stat *g = &g_runs[k];
    double acc = RUN_ACC;
    for (g->searched = 1;; ++g->searched, acc *= 0.5) {
        integrate(k, model, q, u, acc, &g->r);
        printf("  %-46s accuracy %.3g: drift %.2e%s\n", RUNS[k].title, acc, g->r.drift,
               g->r.drift <= DRIFT_TARGET ? " (matched)" : "");
        if (g->r.drift <= DRIFT_TARGET || g->searched > MAX_HALVINGS) break;
    }
    g->accuracy = acc;
    g->reached = g->r.drift <= DRIFT_TARGET;
}

/* Whole runs: chain10 for RUN_T s, every run kind, repetitions interleaved; the median wall
   time is reported. Matched runs first search their accuracy (untimed). */
void bench_run_whole(void)
{
    bm_model model;
    if (bm_make_chain(&model, 10) < 0) bench_die("out of memory");
    double *q = bench_xcalloc((size_t)model.nq, sizeof(double)), *u = bench_xcalloc((size_t)model.nu, sizeof(double));
    bm_rng rng = {0x6D626B2D62656E63ull};
    bm_random_state(&model, &rng, q, u);
    enum { MAX_REPS = 8 };
    int reps = g_quick ? 1 : 5;
    double walls[NUM_RUNS][MAX_REPS];
    printf("whole runs: chain10, %g s; accuracy %g, and matched to drift <= %g; %d repetitions\n", RUN_T, RUN_ACC,
           DRIFT_TARGET, reps);
    for (int k = 0; k < NUM_RUNS; ++k) {
        g_runs[k].accuracy = RUN_ACC;
        if (RUNS[k].matched) match_drift(k, &model, q, u);
    }
    for (int r = 0; r < reps; ++r)
        for (int k = 0; k < NUM_RUNS; ++k) {
            integrate(k, &model, q, u, g_runs[k].accuracy, &g_runs[k].r);
            walls[k][r] = g_runs[k].r.wall_s;
        }
    for (int k = 0; k < NUM_RUNS; ++k) {
        run_stat *g = &g_runs[k];
        qsort(walls[k], (size_t)reps, sizeof(double), bench_cmp_double);
        g->valid = 1;
        g->reps = reps;
        g->reached = g->r.drift <= DRIFT_TARGET;
        g->wall_min = walls[k][0];
        g->wall_med = bench_median_sorted(walls[k], reps);
        printf("  %-46s accuracy %-9.3g wall %.4f s (min %.4f)  steps %5ld  E0 %.4f  drift %.2e  allocs/step %g\n",
               RUNS[k].title, g->accuracy, g->wall_med, g->wall_min, g->r.steps, g->r.e0, g->r.drift,
               g->r.allocs_per_step);
    }
    free(q);
    free(u);
    bm_free(&model);
}
