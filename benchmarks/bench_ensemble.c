/* Ensemble throughput, overhead and memory (issue 15):
 *
 *   mbk_bench_ensemble [--members N] [--t-final T] [--threads LIST] [--repeat R]
 *   mpirun -np 2 mbk_bench_ensemble --mpi     (when built with mbk_mpi)
 *
 * Model: chain10 (ten 1 kg, 1 m links on pins about alternating y and z axes,
 * gravity; the program's builtin:chain:10), RK-Merson at accuracy 1e-6, every
 * member from its own random initial angles, t = 0 to T (default 64 members
 * for 10 s).
 *
 *   serial       the members integrated one after another by plain library
 *                calls (State, integrator, integrate) on this thread: the
 *                reference, no ensemble
 *   threads = k  mbk_ensemble_run on k threads: members per second, speed-up
 *                over the ensemble on one thread, and the ensemble's overhead
 *                per member on one thread, (ensemble - serial) / serial
 *   memory       bytes the ensemble holds while it runs, per thread (one State,
 *                one integrator, the queues' records), measured through the
 *                allocator hooks for N and 4N members: it does not grow with N
 *
 * Best of R repeats (default 3). Keep OPENBLAS_NUM_THREADS=1. */
#define _POSIX_C_SOURCE 200809L
#include <mbk/mbk.h>
#include <math.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "bench_chain.h"
#ifdef MBK_HAVE_MPI
#include <mbk/ensemble_mpi.h>
#endif


/* ---- counting allocator: live and peak bytes ---- */
static atomic_long live_bytes, peak_bytes;

static void note(long delta)
{
    long now = atomic_fetch_add(&live_bytes, delta) + delta, peak = atomic_load(&peak_bytes);
    while (now > peak && !atomic_compare_exchange_weak(&peak_bytes, &peak, now)) {
    }
}

static void *count_malloc(size_t n, void *u)
{
    (void)u;
    size_t *p = malloc(n + 16);
    if (!p) return NULL;
    p[0] = n;
    note((long)n);
    return (char *)p + 16;
}

static void count_free(void *ptr, void *u)
{
    (void)u;
    if (!ptr) return;
    size_t *p = (size_t *)((char *)ptr - 16);
    note(-(long)p[0]);
    free(p);
}

static void *count_realloc(void *ptr, size_t n, void *u)
{
    if (!ptr) return count_malloc(n, u);
    size_t *p = (size_t *)((char *)ptr - 16), old = p[0];
    size_t *q = realloc(p, n + 16);
    if (!q) return NULL;
    q[0] = n;
    note((long)n - (long)old);
    return (char *)q + 16;
}

static double now(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + 1e-9 * (double)ts.tv_nsec;
}

/* ---- chain10 ---- */
/* chainN (bench_chain.h), or the program stops with the library's message. */
static mbk_system *build_chain(int n)
{
    mbk_system *sys = bench_chain_system(n);
    if (!sys) {
        fprintf(stderr, "%s\n", mbk_last_error());
        exit(1);
    }
    return sys;
}

static int member_init(void *user, const mbk_system *sys, int i, mbk_state *s)
{
    (void)user, (void)sys;
    double *q = mbk_state_upd_q(s);
    for (int k = 0; k < mbk_state_get_nq(s); ++k) q[k] = 0.3 * (k % 5 + 1) + 0.1 * mbk_random_normal(1, (uint64_t)i, (uint64_t)k);
    return 0;
}

static atomic_long total_steps;

static int member_done(void *user, const mbk_system *sys, int i, const mbk_state *s, int status)
{
    (void)user, (void)sys, (void)s;
    if (status < 0) fprintf(stderr, "member %d failed\n", i);
    return 0;
}

static double run_serial(const mbk_system *sys, int n, double t_final)
{
    double t0 = now();
    for (int i = 0; i < n; ++i) {
        mbk_state *s = mbk_state_create();
        mbk_state_init(s, sys);
        mbk_system_realize(sys, s, MBK_STAGE_INSTANCE);
        member_init(NULL, sys, i, s);
        mbk_integrator *ig = mbk_integrator_create_rkmerson(sys);
        mbk_integrator_set_accuracy(ig, 1e-6);
        mbk_integrator_initialize(ig, s);
        if (mbk_integrator_integrate(ig, t_final, NULL, NULL) < 0) fprintf(stderr, "serial %d failed\n", i);
        mbk_integrator_stats st;
        mbk_integrator_get_stats(ig, &st);
        atomic_fetch_add(&total_steps, st.steps_taken);
        mbk_integrator_destroy(ig);
        mbk_state_destroy(s);
    }
    return now() - t0;
}

static double run_ensemble(const mbk_system *sys, int n, double t_final, int threads, bool mpi, long *mem)
{
    mbk_ensemble *e = mbk_ensemble_create(sys, n);
    mbk_ensemble_set_integrator(e, "rkmerson", 1e-6);
    mbk_ensemble_set_threads(e, threads);
    long before = atomic_load(&live_bytes);
    atomic_store(&peak_bytes, before);
    double t0 = now();
    int rc;
    (void)mpi;
#ifdef MBK_HAVE_MPI
    if (mpi) rc = mbk_ensemble_run_mpi(e, t_final, 8, member_init, NULL, NULL, NULL);
    else
#endif
        rc = mbk_ensemble_run(e, t_final, member_init, member_done, NULL);
    double t = now() - t0;
    if (rc < 0) fprintf(stderr, "ensemble: %s\n", mbk_last_error());
    if (mem) *mem = atomic_load(&peak_bytes) - before;
    mbk_ensemble_destroy(e);
    return t;
}

int main(int argc, char **argv)
{
    int n = 64, repeat = 3;
    double t_final = 10.0;
    const char *threads_list = "1,2";
    bool mpi = false;
    for (int i = 1; i < argc; ++i) {
        if (!strcmp(argv[i], "--members") && i + 1 < argc) n = atoi(argv[++i]);
        else if (!strcmp(argv[i], "--t-final") && i + 1 < argc) t_final = atof(argv[++i]);
        else if (!strcmp(argv[i], "--threads") && i + 1 < argc) threads_list = argv[++i];
        else if (!strcmp(argv[i], "--repeat") && i + 1 < argc) repeat = atoi(argv[++i]);
        else if (!strcmp(argv[i], "--mpi")) mpi = true;
        else {
            fprintf(stderr, "usage: mbk_bench_ensemble [--members N] [--t-final T] [--threads 1,2,...] [--repeat R] [--mpi]\n");
            return 2;
        }
    }
    if (n < 1 || repeat < 1 || !(t_final > 0)) return 2;
    mbk_set_allocator(count_malloc, count_realloc, count_free, NULL);
#ifdef MBK_HAVE_MPI
    if (mpi) {
        mbk_mpi_init(&argc, &argv);
        mbk_system *sys = build_chain(10);
        double best = INFINITY;
        for (int r = 0; r < repeat; ++r) best = fmin(best, run_ensemble(sys, n, t_final, 1, true, NULL));
        double serial = mbk_mpi_rank() == 0 ? run_serial(sys, n, t_final) : 0;
        if (mbk_mpi_rank() == 0)
            printf("MPI: %d ranks x 1 thread: %d members of chain10 for %g s in %.3f s: %.2f members/s, %.2fx the "
                   "serial loop (%.3f s)\n", mbk_mpi_size(), n, t_final, best, n / best, serial / best, serial);
        mbk_system_destroy(sys);
        mbk_mpi_finalize();
        return 0;
    }
#else
    if (mpi) {
        fprintf(stderr, "built without MPI\n");
        return 2;
    }
#endif
    mbk_system *sys = build_chain(10);
    double serial = INFINITY;
    for (int r = 0; r < repeat; ++r) serial = fmin(serial, run_serial(sys, n, t_final));
    long steps = atomic_load(&total_steps) / repeat;
    printf("chain10, %d members, t = 0 -> %g s, RK-Merson 1e-6 (%.0f steps per member)\n", n, t_final, (double)steps / n);
    printf("  serial loop, no ensemble     %8.3f s  %8.2f members/s\n", serial, n / serial);
    double one = NAN;
    char list[256];
    snprintf(list, sizeof list, "%s", threads_list);
    for (char *save = NULL, *tok = strtok_r(list, ",", &save); tok; tok = strtok_r(NULL, ",", &save)) {
        int k = atoi(tok);
        double best = INFINITY;
        for (int r = 0; r < repeat; ++r) best = fmin(best, run_ensemble(sys, n, t_final, k, false, NULL));
        if (k == 1) one = best;
        printf("  ensemble, %2d thread%s         %8.3f s  %8.2f members/s", k, k == 1 ? " " : "s", best, n / best);
        if (k == 1) printf("  overhead per member %+.2f %% of its run\n", 100 * (best - serial) / serial);
        else printf("  %.2fx one thread\n", isfinite(one) ? one / best : serial / best);
    }
    long m1 = 0, m4 = 0;
    run_ensemble(sys, n, t_final, 1, false, &m1);
    run_ensemble(sys, 4 * n, t_final / 8, 1, false, &m4);
    printf("  memory per member in flight  %ld bytes (one State, one integrator, queue records; %d members: %ld "
           "bytes, %d members: %ld bytes per thread)\n", m1, n, m1, 4 * n, m4);
    mbk_system_destroy(sys);
    return 0;
}
