/* bench_timing.c - timing: batches sized by calibration, sides interleaved batch by
 * batch, a model's operations taking turns, medians and minima; and the State copy
 * against memcpy. */
#define _POSIX_C_SOURCE 200809L
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <time.h>

#include "bench_driver.h"

double bench_now(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + 1e-9 * (double)ts.tv_nsec;
}

int bench_cmp_double(const void *a, const void *b)
{
    double x = *(const double *)a, y = *(const double *)b;
    return (x > y) - (x < y);
}

double bench_median_sorted(const double *x, int n) { return n % 2 ? x[n / 2] : 0.5 * (x[n / 2 - 1] + x[n / 2]); }

static int run_mb(void *s, bench_op op, long reps) { return mb_run(s, op, reps); }
static int run_sb(void *s, bench_op op, long reps) { return sb_run(s, op, reps); }
static int run_mj(void *s, bench_op op, long reps) { (void)op; return mjb_run_full(s, reps); }
static int run_mj4(void *s, bench_op op, long reps) { (void)op; return mj4b_run_full(s, reps); }
static int run_pin(void *s, bench_op op, long reps) { return pin_run(s, op, reps); }
static int run_df(void *s, bench_op op, long reps) { return bench_default_run(s, op, reps); }
static int run_copy(void *s, bench_op op, long reps) { (void)op; return mb_run_state_copy(s, reps); }
static int run_memcpy(void *s, bench_op op, long reps) { (void)op; return mb_run_memcpy(s, reps); }

static double time_batch(run_fn run, void *side, bench_op op, long reps, const char *who)
{
    double t0 = bench_now();
    if (run(side, op, reps) < 0)
        bench_die("%s failed: %s", who, run == run_sb ? sb_last_error() : run == run_mj ? mjb_last_error()
                  : run == run_mj4 ? mj4b_last_error() : run == run_pin ? pin_last_error() : run == run_df ? bench_default_last_error() : mb_last_error());
    return bench_now() - t0;
}

/* Warm up and find the repetitions that make a batch last about g_opt.batch_s. */
static long calibrate(run_fn run, void *side, bench_op op, const char *who, double *t_call)
{
    long reps = 1;
    double t = time_batch(run, side, op, reps, who); /* warm-up */
    for (;;) {
        t = time_batch(run, side, op, reps, who);
        if (t >= 0.5 * g_opt.batch_s || reps >= (1L << 40)) break;
        double f = t > 0 ? g_opt.batch_s / t : 1000.0;
        if (f > 1000.0) f = 1000.0;
        long next = (long)ceil((double)reps * f);
        reps = next > 2 * reps ? next : 2 * reps;
    }
    *t_call = t / (double)reps;
    if (t > g_opt.batch_s * 2.0) return reps;
    long r = (long)llround(g_opt.batch_s / *t_call);
    return r < 1 ? 1 : r;
}

static void summarize(bstat *st, double *per_call, int n, long reps)
{
    qsort(per_call, (size_t)n, sizeof(double), bench_cmp_double);
    st->valid = 1;
    st->reps = reps;
    st->batches = n;
    st->min = per_call[0] * 1e6;
    st->med = bench_median_sorted(per_call, n) * 1e6;
}

static void timing_start(timing *tm)
{
    double tc[NSIDES] = {0}, per_batch = 0;
    tm->na = 0;
    tm->nalloc = 0;
    for (int j = 0; j < tm->k; ++j)
        if (tm->side[j]) {
            tm->active[tm->na++] = j;
            tm->reps[j] = calibrate(tm->run[j], tm->side[j], tm->op, tm->who[j], &tc[j]);
            per_batch += (double)tm->reps[j] * tc[j];
        }
    tm->batches = g_opt.batches;
    if (per_batch * tm->batches > g_opt.cap_s) {
        tm->batches = (int)(g_opt.cap_s / per_batch);
        if (tm->batches < 3) tm->batches = 3;
    }
    for (int j = 0; j < NSIDES; ++j) tm->t[j] = bench_xcalloc((size_t)tm->batches, sizeof(double));
}

/* Batch b of every side, rotating which side goes first; one untimed call first warms the
   caches with this op's data (the previous batch may have run another op or library). */
static void timing_batch(timing *tm, int b)
{
    for (int i = 0; i < tm->na; ++i) {
        int j = tm->active[(i + b) % tm->na];
        (void)time_batch(tm->run[j], tm->side[j], tm->op, 1, tm->who[j]);
        long a0 = mb_allocation_count();
        tm->t[j][b] = time_batch(tm->run[j], tm->side[j], tm->op, tm->reps[j], tm->who[j]) / (double)tm->reps[j];
        if (j == 0) tm->nalloc += mb_allocation_count() - a0;
    }
}

static void timing_finish(timing *tm)
{
    if (tm->allocs) *tm->allocs = (double)tm->nalloc / ((double)tm->reps[0] * tm->batches);
    for (int j = 0; j < tm->k; ++j)
        if (tm->side[j]) summarize(tm->out[j], tm->t[j], tm->batches, tm->reps[j]);
    for (int j = 0; j < NSIDES; ++j) free(tm->t[j]);
}

/* Time up to NSIDES sides of one operation on their own, interleaved batch by batch. */
static void bench_sides_n(int k, run_fn *run, void **side, const char **who, bench_op op, bstat **out,
                          double *allocs)
{
    timing tm = {.k = k, .allocs = allocs, .op = op};
    for (int j = 0; j < k; ++j) {
        tm.run[j] = run[j];
        tm.side[j] = side[j];
        tm.who[j] = who[j];
        tm.out[j] = out[j];
    }
    timing_start(&tm);
    for (int b = 0; b < tm.batches; ++b) timing_batch(&tm, b);
    timing_finish(&tm);
}

void bench_state_copy(result *res, mb_side *mb)
{
    char w1[64], w2[64];
    snprintf(w1, sizeof w1, "mbk %s state copy", res->name);
    snprintf(w2, sizeof w2, "%s memcpy", res->name);
    run_fn run[2] = {run_copy, run_memcpy};
    void *side[2] = {mb, mb};
    const char *who[2] = {w1, w2};
    bstat *out[2] = {&res->copy, &res->mcpy};
    res->state_bytes = mb_state_bytes(mb);
    double allocs = 0;
    bench_sides_n(2, run, side, who, OP_FULL, out, &allocs);
    printf("  state copy   %zu bytes (%.0f per body): mbk_state_copy %.3f us, memcpy %.3f us, ratio %.2f, allocs/copy %g\n",
           res->state_bytes, (double)res->state_bytes / res->bodies, res->copy.med, res->mcpy.med,
           res->copy.med / res->mcpy.med, allocs);
}

/* Warm up every operation that applies (mbk and Simbody, and MuJoCo on the full cycle)
   and size its batches. */
void bench_ops_start(model_run *mr)
{
    result *res = mr->res;
    mr->nt = mr->most = 0;
    for (int op = 0; op < NUM_OPS; ++op) {
        if (!bench_op_applies(res, (bench_op)op)) continue;
        char (*w)[64] = mr->names[op];
        snprintf(w[0], sizeof w[0], "mbk %s %s", res->name, OPS[op].name);
        snprintf(w[1], sizeof w[1], "Simbody %s %s", res->name, OPS[op].name);
        snprintf(w[2], sizeof w[2], "MuJoCo %s mj_forward", res->name);
        snprintf(w[3], sizeof w[3], "MuJoCo (PyPI) %s mj_forward", res->name);
        snprintf(w[4], sizeof w[4], "Pinocchio %s %s", res->name, OPS[op].name);
        snprintf(w[5], sizeof w[5], "mbk default build %s %s", res->name, OPS[op].name);
        timing *t = &mr->tm[mr->nt++];
        /* Simbody's calcM is n products M v: timed once (OP_MASS), not again from scratch; Simbody
           has no derivatives */
        *t = (timing){.k = NSIDES, .run = {run_mb, run_sb, run_mj, run_mj4, run_pin, run_df},
                      .side = {mr->mb, op == OP_MASS_KIN || OPS[op].no_simbody ? NULL : mr->sb, op == OP_FULL ? mr->mj : NULL,
                               op == OP_FULL ? mr->mj4 : NULL, pin_runs_op((bench_op)op, res->nu) ? mr->pn : NULL, mr->df},
                      .who = {w[0], w[1], w[2], w[3], w[4], w[5]},
                      .out = {&res->mb[op], &res->sb[op], &res->mj, &res->mj4, &res->pn[op], &res->df[op]},
                      .allocs = &res->allocs[op], .op = (bench_op)op};
        bench_prepare_op(res, mr->mb, mr->sb, (bench_op)op);
        if (mr->df && bench_default_prepare(mr->df, (bench_op)op) < 0)
            bench_die("mbk default build %s %s: prepare: %s", res->name, OPS[op].name, bench_default_last_error());
        timing_start(t);
        if (t->batches > mr->most) mr->most = t->batches;
    }
}

/* Batches b0..b1-1 of every operation, the operations taking turns batch by batch (each
   prepared again before its batch). */
void bench_ops_batches(model_run *mr, int b0, int b1)
{
    for (int b = b0; b < b1; ++b)
        for (int i = 0; i < mr->nt; ++i)
            if (b < mr->tm[i].batches) {
                if (mr->nt > 1) {
                    bench_prepare_op(mr->res, mr->mb, mr->sb, mr->tm[i].op);
                    if (mr->df && bench_default_prepare(mr->df, mr->tm[i].op) < 0)
                        bench_die("mbk default build: prepare: %s", bench_default_last_error());
                }
                timing_batch(&mr->tm[i], b);
            }
}

void bench_ops_finish(model_run *mr)
{
    const result *res = mr->res;
    printf("%s:\n", res->name);
    for (int i = 0; i < mr->nt; ++i) {
        bench_op op = mr->tm[i].op;
        timing_finish(&mr->tm[i]);
        const bstat *a = &res->mb[op];
        printf("  %-12s mbk %10.3f us (min %10.3f, %ld x %d)", OPS[op].name, a->med, a->min, a->reps, a->batches);
        if (mr->tm[i].side[SIDE_SB])
            printf("   Simbody %10.3f us (min %10.3f)  ratio %6.2f", res->sb[op].med, res->sb[op].min, res->sb[op].med / a->med);
        if (mr->tm[i].side[SIDE_MJ]) printf("   MuJoCo %10.3f us  ratio %6.2f", res->mj.med, res->mj.med / a->med);
        if (mr->tm[i].side[SIDE_MJ4]) printf("   MuJoCo PyPI %10.3f us  ratio %6.2f", res->mj4.med, res->mj4.med / a->med);
        if (mr->tm[i].side[SIDE_PIN]) printf("   Pinocchio %10.3f us  ratio %6.2f", res->pn[op].med, res->pn[op].med / a->med);
        if (mr->tm[i].side[SIDE_DF]) printf("   default build %10.3f us  ratio %6.2f", res->df[op].med, res->df[op].med / a->med);
        printf("   allocs/call %g\n", res->allocs[op]);
    }
    fflush(stdout);
}
