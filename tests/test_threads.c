/* Concurrency: one System shared read-only by several threads, each
 * realizing and stepping its own States. Results must be bit-for-bit the
 * same as the same computation done serially on the main thread, and the
 * last-error record must be per thread. Run under ThreadSanitizer too
 * (ctest label "threads"). */
#define _POSIX_C_SOURCE 200809L

#include "mbk/alloc.h"
#include "mbk/stage.h"
#include "mbk/state.h"
#include "mbk/status.h"
#include "mbk/system.h"
#include "mbk/value.h"
#include "mbk_test.h"

#include <math.h>
#include <pthread.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

enum { NT = 4 };          /* worker threads */
enum { NB = 12 };         /* oscillators in the chain */
enum { STEPS = 10000 };   /* integration steps per trajectory */
enum { NOUT = 4 * NB + 16 }; /* doubles recorded per trajectory */

/* ------------------------------------------------------------------ */
/* Subsystem "chain": NB pendulum-oscillators coupled by nonlinear       */
/* springs, with work integrals in z. Parameters in impl are read-only   */
/* after topology; per-State parameters are discrete variables.          */
/* ------------------------------------------------------------------ */

typedef struct chain {
    double mass[NB], k[NB + 1], k3[NB + 1], len[NB];
    int q, u, z;
    int d_gravity;  /* double, Dynamics */
    int d_scale;    /* double, Instance: stiffness scale */
    int c_geom;     /* double[2*NB+1]: stretches and sin(q) (Position) */
    int c_ke;       /* double (Velocity) */
    int c_force;    /* double[NB] (Dynamics, depends on Position) */
    int c_pe;       /* lazy double (depends on Position) */
    int c_kscaled;  /* double[NB+1] (Instance) */
    int c_trig;     /* int (Instance): where the Instance-allocated witness starts; kept in
                       the State, not in impl, since impl is shared by all threads */
} chain;

static int chain_topology(void *impl, const mbk_subsystem_ctx *c, mbk_state *s)
{
    chain *p = impl;
    int k = mbk_subsystem_ctx_get_index(c);
    double zero[NB] = {0};
    const double g = 9.81, scale = 1.0;
    const mbk_value_type geom = mbk_value_array_of_double(2 * NB + 1);
    const mbk_value_type force = mbk_value_array_of_double(NB);
    const mbk_value_type ks = mbk_value_array_of_double(NB + 1);
    p->q = mbk_state_allocate_q(s, k, NB, zero);
    p->u = mbk_state_allocate_u(s, k, NB, zero);
    p->z = mbk_state_allocate_z(s, k, 2, zero);
    p->d_gravity = mbk_state_allocate_discrete(s, k, MBK_STAGE_DYNAMICS, &mbk_value_double, &g);
    p->d_scale = mbk_state_allocate_discrete(s, k, MBK_STAGE_INSTANCE, &mbk_value_double, &scale);
    p->c_geom = mbk_state_allocate_cache(s, k, MBK_STAGE_POSITION, MBK_STAGE_POSITION, &geom, NULL);
    p->c_ke = mbk_state_allocate_cache(s, k, MBK_STAGE_VELOCITY, MBK_STAGE_VELOCITY, &mbk_value_double, NULL);
    p->c_force = mbk_state_allocate_cache(s, k, MBK_STAGE_POSITION, MBK_STAGE_DYNAMICS, &force, NULL);
    p->c_pe = mbk_state_allocate_lazy_cache(s, k, MBK_STAGE_POSITION, &mbk_value_double, NULL);
    p->c_kscaled = mbk_state_allocate_cache(s, k, MBK_STAGE_INSTANCE, MBK_STAGE_INSTANCE, &ks, NULL);
    p->c_trig = mbk_state_allocate_cache(s, k, MBK_STAGE_INSTANCE, MBK_STAGE_INSTANCE, &mbk_value_int, NULL);
    const int got[] = {p->q, p->u, p->z, p->d_gravity, p->d_scale, p->c_geom, p->c_ke,
                       p->c_force, p->c_pe, p->c_kscaled, p->c_trig};
    for (size_t i = 0; i < sizeof got / sizeof got[0]; ++i)
        if (got[i] < 0) return got[i];
    return 0;
}

static int chain_instance(void *impl, const mbk_subsystem_ctx *c, mbk_state *s)
{
    const chain *p = impl;
    int k = mbk_subsystem_ctx_get_index(c);
    int trig = mbk_state_allocate_event_triggers(s, k, MBK_STAGE_POSITION, 1);
    if (trig < 0) return trig;
    *(int *)mbk_state_upd_cache(s, k, p->c_trig) = trig;
    double scale = *(const double *)mbk_state_get_discrete(s, k, p->d_scale);
    double *ks = mbk_state_upd_cache(s, k, p->c_kscaled);
    for (int i = 0; i <= NB; ++i) ks[i] = p->k[i] * scale;
    return 0;
}

static int chain_position(void *impl, const mbk_subsystem_ctx *c, mbk_state *s)
{
    const chain *p = impl;
    int k = mbk_subsystem_ctx_get_index(c);
    const double *q = mbk_state_get_subsystem_q(s, k) + p->q;
    double *geom = mbk_state_upd_cache(s, k, p->c_geom);
    /* walls at both ends */
    geom[0] = q[0];
    for (int i = 1; i < NB; ++i) geom[i] = q[i] - q[i - 1];
    geom[NB] = -q[NB - 1];
    for (int i = 0; i < NB; ++i) geom[NB + 1 + i] = sin(q[i] / p->len[i]);
    int trig = *(const int *)mbk_state_get_cache(s, k, p->c_trig);
    mbk_state_upd_event_triggers(s, k, MBK_STAGE_POSITION)[trig] = q[0] - q[NB - 1];
    return 0;
}

static int chain_velocity(void *impl, const mbk_subsystem_ctx *c, mbk_state *s)
{
    const chain *p = impl;
    int k = mbk_subsystem_ctx_get_index(c);
    const double *u = mbk_state_get_subsystem_u(s, k) + p->u;
    double *qdot = mbk_state_upd_subsystem_qdot(s, k) + p->q;
    double ke = 0.0;
    for (int i = 0; i < NB; ++i) {
        qdot[i] = u[i];
        ke += 0.5 * p->mass[i] * u[i] * u[i];
    }
    *(double *)mbk_state_upd_cache(s, k, p->c_ke) = ke;
    return 0;
}

static double spring(double k, double k3, double d) { return k * d + k3 * d * d * d + 0.05 * tanh(4.0 * d); }

static int chain_dynamics(void *impl, const mbk_subsystem_ctx *c, mbk_state *s)
{
    const chain *p = impl;
    int k = mbk_subsystem_ctx_get_index(c);
    const double *geom = mbk_state_get_cache(s, k, p->c_geom);
    const double *ks = mbk_state_get_cache(s, k, p->c_kscaled);
    const double *u = mbk_state_get_subsystem_u(s, k) + p->u;
    double g = *(const double *)mbk_state_get_discrete(s, k, p->d_gravity);
    if (!geom || !ks) return -1;
    double t[NB + 1];
    for (int i = 0; i <= NB; ++i) t[i] = spring(ks[i], p->k3[i], geom[i]);
    double *f = mbk_state_upd_cache(s, k, p->c_force);
    for (int i = 0; i < NB; ++i)
        f[i] = -t[i] + t[i + 1] - p->mass[i] * g * geom[NB + 1 + i] -
               0.02 * u[i] * exp(-u[i] * u[i]);
    return 0;
}

static int chain_acceleration(void *impl, const mbk_subsystem_ctx *c, mbk_state *s)
{
    const chain *p = impl;
    int k = mbk_subsystem_ctx_get_index(c);
    const double *f = mbk_state_get_cache(s, k, p->c_force);
    const double *u = mbk_state_get_subsystem_u(s, k) + p->u;
    if (!f) return -1;
    double *udot = mbk_state_upd_subsystem_udot(s, k) + p->u;
    double *qdd = mbk_state_upd_subsystem_qdotdot(s, k) + p->q;
    double power = 0.0, sq = 0.0;
    for (int i = 0; i < NB; ++i) {
        udot[i] = qdd[i] = f[i] / p->mass[i];
        power += f[i] * u[i];
        sq += udot[i] * udot[i];
    }
    double *zdot = mbk_state_upd_subsystem_zdot(s, k) + p->z;
    zdot[0] = power;
    zdot[1] = sqrt(sq);
    return 0;
}

static int chain_pe(void *impl, const mbk_subsystem_ctx *c, const mbk_state *s, double *pe)
{
    const chain *p = impl;
    int k = mbk_subsystem_ctx_get_index(c);
    /* lazy entry: computed on first request, then cached until q changes */
    if (!mbk_state_is_cache_realized(s, k, p->c_pe)) {
        const double *geom = mbk_state_get_cache(s, k, p->c_geom);
        const double *ks = mbk_state_get_cache(s, k, p->c_kscaled);
        const double *q = mbk_state_get_subsystem_q(s, k) + p->q;
        double g = *(const double *)mbk_state_get_discrete(s, k, p->d_gravity);
        if (!geom || !ks) return -1;
        double e = 0.0;
        for (int i = 0; i <= NB; ++i) {
            double d = geom[i];
            e += 0.5 * ks[i] * d * d + 0.25 * p->k3[i] * d * d * d * d +
                 0.0125 * log(cosh(4.0 * d));
        }
        for (int i = 0; i < NB; ++i)
            e += p->mass[i] * g * p->len[i] * (1.0 - cos(q[i] / p->len[i]));
        *(double *)mbk_state_upd_cache(s, k, p->c_pe) = e;
        mbk_state_mark_cache_realized(s, k, p->c_pe);
    }
    const double *e = mbk_state_get_cache(s, k, p->c_pe);
    if (!e) return -1;
    *pe += *e;
    return 0;
}

static int chain_ke(void *impl, const mbk_subsystem_ctx *c, const mbk_state *s, double *ke)
{
    const chain *p = impl;
    const double *v = mbk_state_get_cache(s, mbk_subsystem_ctx_get_index(c), p->c_ke);
    if (!v) return -1;
    *ke += *v;
    return 0;
}

static void chain_destroy(void *impl) { free(impl); }

static const mbk_subsystem_ops chain_ops = {
    .name = "chain",
    .realize_topology = chain_topology,
    .realize_instance = chain_instance,
    .realize_position = chain_position,
    .realize_velocity = chain_velocity,
    .realize_dynamics = chain_dynamics,
    .realize_acceleration = chain_acceleration,
    .calc_potential_energy = chain_pe,
    .calc_kinetic_energy = chain_ke,
    .destroy = chain_destroy,
};

static chain *new_chain(double variant)
{
    chain *p = calloc(1, sizeof *p);
    if (!p) return NULL;
    for (int i = 0; i < NB; ++i) {
        p->mass[i] = 1.0 + 0.1 * i + variant;
        p->len[i] = 0.5 + 0.05 * (i % 3);
    }
    for (int i = 0; i <= NB; ++i) {
        p->k[i] = 30.0 + 2.0 * i;
        p->k3[i] = 5.0 + 0.5 * (i % 4) + variant;
    }
    return p;
}

/* The shared System: two chains (so realization order across subsystems matters). */
static mbk_system *make_system(void)
{
    mbk_system *sys = mbk_system_create("threads");
    if (!sys) return NULL;
    chain *a = new_chain(0.0), *b = new_chain(0.25);
    if (mbk_system_add_subsystem(sys, &chain_ops, a) != 0 ||
        mbk_system_add_subsystem(sys, &chain_ops, b) != 1 ||
        mbk_system_realize_topology(sys) != MBK_OK) {
        mbk_system_destroy(sys);
        return NULL;
    }
    return sys;
}

/* ------------------------------------------------------------------ */
/* One trajectory: realize / modify cycles on States of its own          */
/* ------------------------------------------------------------------ */

typedef struct job {
    const mbk_system *sys;
    int seed;
    double out[NOUT];
    int failures;    /* calls that did not return MBK_OK */
    char first_error[256];
} job;

static void note_failure(job *j, int rc, const char *what)
{
    if (j->failures++ == 0)
        snprintf(j->first_error, sizeof j->first_error, "%s: %s: %s", what, mbk_status_name(rc),
                 mbk_last_error());
}

#define RUN(j, call)                                 \
    do {                                             \
        int rc_ = (call);                            \
        if (rc_ != MBK_OK) note_failure((j), rc_, #call); \
    } while (0)

/* Deterministic pseudo-random numbers in [-1, 1) from a seed. */
static double lcg(uint64_t *x)
{
    *x = *x * 6364136223846793005ull + 1442695040888963407ull;
    return (double)(*x >> 11) / 4503599627370496.0 - 1.0;
}

static void run_job(job *j)
{
    const mbk_system *sys = j->sys;
    mbk_state *s = mbk_state_create(), *chk = mbk_state_create();
    uint64_t rng = 0x9E3779B97F4A7C15ull * (uint64_t)(j->seed + 1);
    const double h = 1e-3;
    memset(j->out, 0, sizeof j->out);
    if (!s || !chk) {
        note_failure(j, MBK_ENOMEM, "mbk_state_create");
        mbk_state_destroy(s);
        mbk_state_destroy(chk);
        return;
    }
    RUN(j, mbk_state_init(s, sys));
    RUN(j, mbk_system_realize(sys, s, MBK_STAGE_INSTANCE));
    int nq = mbk_state_get_nq(s), nu = mbk_state_get_nu(s);
    double q[2 * NB], u[2 * NB];
    if (nq != 2 * NB || nu != 2 * NB) {
        note_failure(j, MBK_EINVAL, "sizes");
        goto done;
    }
    for (int i = 0; i < nq; ++i) q[i] = 0.3 * lcg(&rng);
    for (int i = 0; i < nu; ++i) u[i] = 0.5 * lcg(&rng);
    RUN(j, mbk_state_set_q(s, q, nq));
    RUN(j, mbk_state_set_u(s, u, nu));
    double g = 9.81 + 0.1 * j->seed;
    RUN(j, mbk_state_set_discrete(s, 0, 0, &mbk_value_double, &g));
    RUN(j, mbk_system_realize(sys, s, MBK_STAGE_ACCELERATION));
    RUN(j, mbk_state_copy(chk, s)); /* checkpoint */

    double e0k = 0, e0p = 0, hash = 0.0;
    RUN(j, mbk_system_calc_energy(sys, s, &e0k, &e0p));
    for (int step = 1; step <= STEPS && j->failures == 0; ++step) {
        RUN(j, mbk_system_realize(sys, s, MBK_STAGE_ACCELERATION));
        const double *udot = mbk_state_get_udot(s), *zdot = mbk_state_get_zdot(s);
        const double *qv = mbk_state_get_q(s), *uv = mbk_state_get_u(s), *zv = mbk_state_get_z(s);
        if (!udot || !zdot || !qv || !uv || !zv) {
            note_failure(j, mbk_last_status(), "getters");
            break;
        }
        /* semi-implicit Euler */
        for (int i = 0; i < nu; ++i) u[i] = uv[i] + h * udot[i];
        for (int i = 0; i < nq; ++i) q[i] = qv[i] + h * u[i];
        double z[4];
        for (int i = 0; i < 4; ++i) z[i] = zv[i] + h * zdot[i];
        for (int i = 0; i < nu; ++i) hash = hash * 0.999 + udot[i] * (i + 1);
        RUN(j, mbk_state_set_u(s, u, nu));
        RUN(j, mbk_state_set_q(s, q, nq));
        RUN(j, mbk_state_set_time(s, step * h));
        RUN(j, mbk_state_set_z(s, z, 4));
        if (mbk_state_get_zdot(s)) /* the changes invalidated the derivatives */
            note_failure(j, MBK_EINVAL, "zdot readable after set_z");
        if (step % 97 == 0) { /* change a Dynamics-stage parameter */
            g = 9.81 + 0.5 * sin(step * 0.01 + j->seed);
            RUN(j, mbk_state_set_discrete(s, 1, 0, &mbk_value_double, &g));
        }
        if (step % 500 == 0) { /* an Instance-stage parameter: re-lays out the State */
            double scale = 1.0 + 0.05 * (step / 500) * (j->seed % 2 ? 1 : -1);
            RUN(j, mbk_state_set_discrete(s, 0, 1, &mbk_value_double, &scale));
        }
        if (step % 250 == 0) { /* energy (lazy cache) and a checkpoint round trip */
            double ke = 0, pe = 0;
            RUN(j, mbk_system_realize(sys, s, MBK_STAGE_VELOCITY));
            RUN(j, mbk_system_calc_energy(sys, s, &ke, &pe));
            int slot = 2 * NB + (step / 250) % 8;
            j->out[slot] = ke + pe;
            RUN(j, mbk_state_copy(chk, s));
            RUN(j, mbk_state_copy(s, chk));
        }
    }
    RUN(j, mbk_system_realize(sys, s, MBK_STAGE_REPORT));
    const double *y = mbk_state_get_y(s);
    const double *ydot = mbk_state_get_ydot(s);
    if (y && ydot) {
        for (int i = 0; i < NB; ++i) j->out[i] = y[i];                     /* some q */
        for (int i = 0; i < NB; ++i) j->out[NB + i] = ydot[2 * NB + i];   /* some udot */
        for (int i = 0; i < 2 * NB && 2 * NB + 8 + i < NOUT - 4; ++i)
            j->out[2 * NB + 8 + i] = y[2 * NB + i];                        /* u */
    }
    const double *z = mbk_state_get_z(s);
    if (z) {
        j->out[NOUT - 4] = z[0];
        j->out[NOUT - 3] = z[3];
    }
    j->out[NOUT - 2] = hash;
    j->out[NOUT - 1] = e0k + e0p;
done:
    mbk_state_destroy(chk);
    mbk_state_destroy(s);
}

static void *job_thread(void *arg)
{
    run_job(arg);
    return NULL;
}

/* Threads realizing States of one System agree bit for bit with a serial run. */
static void test_parallel_equals_serial(void)
{
    mbk_system *sys = make_system();
    if (!CHECK(sys != NULL)) return;
    static job serial[NT], parallel[NT];
    for (int i = 0; i < NT; ++i) {
        serial[i].sys = parallel[i].sys = sys;
        serial[i].seed = parallel[i].seed = i;
        run_job(&serial[i]);
    }
    pthread_t th[NT];
    int started[NT];
    for (int i = 0; i < NT; ++i) started[i] = pthread_create(&th[i], NULL, job_thread, &parallel[i]) == 0;
    for (int i = 0; i < NT; ++i)
        if (started[i]) pthread_join(th[i], NULL);
    for (int i = 0; i < NT; ++i) {
        CHECK(started[i]);
        if (!CHECK(serial[i].failures == 0)) fprintf(stderr, "    serial %d: %s\n", i, serial[i].first_error);
        if (!CHECK(parallel[i].failures == 0)) fprintf(stderr, "    thread %d: %s\n", i, parallel[i].first_error);
        CHECK(memcmp(serial[i].out, parallel[i].out, sizeof serial[i].out) == 0);
        int finite = 1;
        for (int k = 0; k < NOUT; ++k) finite &= isfinite(serial[i].out[k]);
        CHECK(finite);
        CHECK(serial[i].out[NOUT - 2] != 0.0 && serial[i].out[0] != 0.0);
    }
    /* different seeds give different trajectories (the comparison is not vacuous) */
    for (int i = 1; i < NT; ++i)
        CHECK(memcmp(serial[0].out, serial[i].out, sizeof serial[0].out) != 0);
    /* energy is roughly conserved over the short run (the physics is sane) */
    CHECK(fabs(serial[0].out[2 * NB + 1] - serial[0].out[NOUT - 1]) <
          0.5 * fabs(serial[0].out[NOUT - 1]) + 1.0);
    mbk_system_destroy(sys);
}

/* ------------------------------------------------------------------ */
/* Thread-local errors                                                  */
/* ------------------------------------------------------------------ */

enum { ROUNDS = 400 };

typedef struct err_job {
    const mbk_system *sys;
    pthread_barrier_t *barrier;
    int kind;      /* 0: wrong count, 1: stage error, 2: no error */
    int wrong;     /* rounds in which this thread saw a message that was not its own */
    int rounds;
    char seen[256];
} err_job;

static void *err_thread(void *arg)
{
    err_job *e = arg;
    mbk_state *s = mbk_state_create();
    int ok = s && mbk_state_init(s, e->sys) == MBK_OK &&
             mbk_system_realize(e->sys, s, MBK_STAGE_POSITION) == MBK_OK;
    double q[64] = {0};
    for (int r = 0; r < ROUNDS; ++r) {
        mbk_clear_error();
        /* everyone provokes (or not) at the same time ... */
        pthread_barrier_wait(e->barrier);
        if (ok && e->kind == 0) (void)mbk_state_set_q(s, q, 37);
        if (ok && e->kind == 1) (void)mbk_state_get_qdot(s);
        if (ok && e->kind == 2) (void)mbk_state_get_q(s);
        pthread_barrier_wait(e->barrier);
        /* ... then everyone reads its own record */
        const char *msg = mbk_last_error();
        int st = mbk_last_status();
        int mine = e->kind == 0   ? st == MBK_EINVAL && strstr(msg, "got 37 values") != NULL
                   : e->kind == 1 ? st == MBK_ESTAGE && strstr(msg, "Velocity") != NULL &&
                                        strstr(msg, "got 37") == NULL
                                  : st == MBK_OK && msg[0] == '\0';
        if (!mine && e->wrong++ == 0) snprintf(e->seen, sizeof e->seen, "%s: %s", mbk_status_name(st), msg);
        e->rounds++;
        pthread_barrier_wait(e->barrier);
    }
    if (!ok) e->wrong = -1;
    mbk_state_destroy(s);
    return NULL;
}

static void test_thread_local_errors(void)
{
    mbk_system *sys = make_system();
    if (!CHECK(sys != NULL)) return;
    pthread_barrier_t barrier;
    CHECK_INT(pthread_barrier_init(&barrier, NULL, 3), 0);
    err_job jobs[3];
    pthread_t th[3];
    for (int i = 0; i < 3; ++i) {
        memset(&jobs[i], 0, sizeof jobs[i]);
        jobs[i].sys = sys;
        jobs[i].barrier = &barrier;
        jobs[i].kind = i;
    }
    /* the main thread's own record is untouched by the workers */
    mbk_set_error(MBK_EIO, "main thread message");
    int started = 0;
    for (int i = 0; i < 3; ++i) started += pthread_create(&th[i], NULL, err_thread, &jobs[i]) == 0;
    if (!CHECK(started == 3)) {
        /* the others would wait at the barrier for ever */
        fprintf(stderr, "    could not start the threads\n");
        mbk_test_finish();
        exit(1);
    }
    for (int i = 0; i < started; ++i) pthread_join(th[i], NULL);
    pthread_barrier_destroy(&barrier);
    for (int i = 0; i < 3; ++i) {
        CHECK_INT(jobs[i].rounds, ROUNDS);
        if (!CHECK(jobs[i].wrong == 0))
            fprintf(stderr, "    thread %d saw: %s\n", i, jobs[i].seen);
    }
    CHECK_INT(mbk_last_status(), MBK_EIO);
    CHECK(strcmp(mbk_last_error(), "main thread message") == 0);
    mbk_clear_error();
    mbk_system_destroy(sys);
}

int main(void)
{
    test_parallel_equals_serial();
    test_thread_local_errors();
    return mbk_test_finish();
}
