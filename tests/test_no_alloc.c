/* Allocation discipline: after a State is realized to Instance, changing
 * t, q, u, z and Dynamics-stage discrete variables, realizing Time..Report,
 * every getter, energy, mbk_system_calc_ydot and mbk_state_copy into a State
 * of the same layout allocate nothing. Every allocation goes through the
 * hooks and is freed, and a failing allocator (at every allocation of the
 * set-up, failing for good or just once) gives MBK_ENOMEM without crashing
 * or leaking, and a retry after a one-off failure builds the same State.
 *
 * Process-wide: this program defines malloc, calloc, realloc, free,
 * posix_memalign and aligned_alloc itself (forwarding to the C library's
 * __libc_* entry points), so it sees allocations that bypass mbk's hooks,
 * SUNDIALS' above all. With them, steps of every integrator (CVODE BDF and
 * Adams, IDA, the RK family) on a Hunt-Crossley contact model and on a
 * constrained four-bar allocate nothing at all after initialization, and
 * SUNDIALS' own difference-quotient Jacobian, when chosen, is seen
 * allocating at every Jacobian (the reason mbk's is the default). Under
 * AddressSanitizer or ThreadSanitizer, which replace malloc themselves, the
 * process-wide counts are skipped (the library's own counts still run). */
#define _GNU_SOURCE
#include "mbk/alloc.h"
#include "mbk/spatial.h"
#include "mbk/stage.h"
#include "mbk/state.h"
#include "mbk/status.h"
#include "mbk/system.h"
#include "mbk/value.h"
#include "mbk/mbk.h"
#include "integrator_table.h"
#include "mbk_test.h"
#include "test_util.h"
#include "test_models.h"

#include <errno.h>
#include <math.h>
#include <stdatomic.h>
#include <stdlib.h>
#include <string.h>

/* ------------------------------------------------------------------ */
/* Process-wide allocation counter                                      */
/* ------------------------------------------------------------------ */

#if defined(__SANITIZE_ADDRESS__) || defined(__SANITIZE_THREAD__)
#define MBK_TEST_NO_INTERPOSE 1
#elif defined(__has_feature)
#if __has_feature(address_sanitizer) || __has_feature(thread_sanitizer) || __has_feature(memory_sanitizer)
#define MBK_TEST_NO_INTERPOSE 1
#endif
#endif

#ifndef MBK_TEST_NO_INTERPOSE
/* glibc's allocator under its internal names: what malloc & co. would have called */
extern void *__libc_malloc(size_t n);
extern void *__libc_calloc(size_t n, size_t size);
extern void *__libc_realloc(void *p, size_t n);
extern void *__libc_memalign(size_t align, size_t n);
extern void __libc_free(void *p);

static atomic_long process_allocs; /* successful allocations anywhere in the process */

static void *counted(void *p)
{
    if (p) atomic_fetch_add_explicit(&process_allocs, 1, memory_order_relaxed);
    return p;
}

void *malloc(size_t n) { return counted(__libc_malloc(n)); }
void *calloc(size_t n, size_t size) { return counted(__libc_calloc(n, size)); }
void *realloc(void *p, size_t n) { return counted(__libc_realloc(p, n)); }
void free(void *p) { __libc_free(p); }
void *aligned_alloc(size_t align, size_t n) { return counted(__libc_memalign(align, n)); }
int posix_memalign(void **out, size_t align, size_t n)
{
    void *p = counted(__libc_memalign(align, n));
    if (!p) return ENOMEM;
    *out = p;
    return 0;
}

static const bool process_counted = true;
static long process_allocations(void) { return atomic_load(&process_allocs); }
#else
static const bool process_counted = false;
static long process_allocations(void) { return 0; }
#endif

/* ------------------------------------------------------------------ */
/* Counting allocator                                                   */
/* ------------------------------------------------------------------ */

typedef struct counters {
    long attempts;   /* hook calls (malloc + realloc) */
    long armed;      /* hook calls since fail_after was set (see arm()) */
    long mallocs;    /* successful mallocs */
    long reallocs;   /* successful reallocs */
    long from_null;  /* successful reallocs of NULL (new blocks) */
    long frees;      /* frees of non-NULL blocks */
    long live;       /* blocks currently allocated */
    long fail_after; /* attempts after which allocation fails (-1: never) */
    int fail_once;   /* fail only attempt number fail_after + 1 */
} counters;

static counters cnt = {0, 0, 0, 0, 0, 0, 0, -1, 0};

static int should_fail(counters *c)
{
    c->attempts++;
    c->armed++;
    if (c->fail_after < 0) return 0;
    return c->fail_once ? c->armed == c->fail_after + 1 : c->armed > c->fail_after;
}

/* From now on, allocation number n + 1 fails (and every later one unless once). */
static void arm(long n, int once)
{
    cnt.armed = 0;
    cnt.fail_after = n;
    cnt.fail_once = once;
}

static void disarm(void) { cnt.fail_after = -1; }

static void *cnt_malloc(size_t n, void *user)
{
    counters *c = user;
    if (should_fail(c)) return NULL;
    void *p = malloc(n);
    if (p) {
        c->mallocs++;
        c->live++;
    }
    return p;
}

static void *cnt_realloc(void *ptr, size_t n, void *user)
{
    counters *c = user;
    if (should_fail(c)) return NULL;
    void *p = realloc(ptr, n);
    if (p) {
        c->reallocs++;
        if (!ptr) {
            c->live++;
            c->from_null++;
        }
    }
    return p;
}

static void cnt_free(void *ptr, void *user)
{
    counters *c = user;
    if (ptr) {
        c->frees++;
        c->live--;
    }
    free(ptr);
}

static long successful(void) { return cnt.mallocs + cnt.reallocs; }

/* ------------------------------------------------------------------ */
/* Value type with a copy op (no memory of its own, so copies are free) */
/* ------------------------------------------------------------------ */

typedef struct ring { double v[4]; int head; } ring;
static long ring_copies;
static void ring_copy(void *dst, const void *src)
{
    memcpy(dst, src, sizeof(ring));
    ring_copies++;
}
static const mbk_value_type ring_type = {"ring", sizeof(ring), _Alignof(ring), ring_copy, NULL, NULL, NULL};

/* ------------------------------------------------------------------ */
/* Subsystem "springs": three masses on springs under gravity           */
/* ------------------------------------------------------------------ */

enum { NM = 3 };

typedef struct springs {
    double mass[NM];
    int q, u;                  /* Topology */
    int d_k, d_g, d_mode, d_c; /* discrete: k (Instance), g vec3 (Dynamics), mode int (Model),
                                  damping (Velocity) */
    int c_stretch, c_ke, c_force, c_lazy; /* Position, Velocity, Dynamics (depends Position), lazy */
    int z_model, c_model;      /* allocated at Model: one z, an Instance cache entry */
    int qerr, uerr, udoterr, trig_pos, trig_vel, trig_acc; /* Instance */
} springs;

#define TRY(x)                      \
    do {                            \
        int rc_ = (x);              \
        if (rc_ < 0) return rc_;    \
    } while (0)
#define TRY_SET(var, x)             \
    do {                            \
        (var) = (x);                \
        if ((var) < 0) return (var); \
    } while (0)

static int springs_topology(void *impl, const mbk_subsystem_ctx *c, mbk_state *s)
{
    springs *p = impl;
    int k = mbk_subsystem_ctx_get_index(c);
    const double q0[NM] = {0.1, -0.2, 0.3}, u0[NM] = {0, 0.5, -0.5};
    const double stiff = 40.0, damp = 0.3;
    const mbk_vec3 g = {0, -9.81, 0};
    const int mode = 0;
    const mbk_value_type arr = mbk_value_array_of_double(NM);
    TRY_SET(p->q, mbk_state_allocate_q(s, k, NM, q0));
    TRY_SET(p->u, mbk_state_allocate_u(s, k, NM, u0));
    TRY_SET(p->d_k, mbk_state_allocate_discrete(s, k, MBK_STAGE_INSTANCE, &mbk_value_double, &stiff));
    TRY_SET(p->d_g, mbk_state_allocate_discrete(s, k, MBK_STAGE_DYNAMICS, &mbk_value_vec3, &g));
    TRY_SET(p->d_mode, mbk_state_allocate_discrete(s, k, MBK_STAGE_MODEL, &mbk_value_int, &mode));
    TRY_SET(p->d_c, mbk_state_allocate_discrete(s, k, MBK_STAGE_VELOCITY, &mbk_value_double, &damp));
    TRY_SET(p->c_stretch, mbk_state_allocate_cache(s, k, MBK_STAGE_POSITION, MBK_STAGE_POSITION, &arr, NULL));
    TRY_SET(p->c_ke, mbk_state_allocate_cache(s, k, MBK_STAGE_VELOCITY, MBK_STAGE_VELOCITY, &mbk_value_double, NULL));
    TRY_SET(p->c_force, mbk_state_allocate_cache(s, k, MBK_STAGE_POSITION, MBK_STAGE_DYNAMICS, &arr, NULL));
    TRY_SET(p->c_lazy, mbk_state_allocate_lazy_cache(s, k, MBK_STAGE_POSITION, &mbk_value_double, NULL));
    return 0;
}

static int springs_model(void *impl, const mbk_subsystem_ctx *c, mbk_state *s)
{
    springs *p = impl;
    int k = mbk_subsystem_ctx_get_index(c);
    const double z0 = 0.0;
    TRY_SET(p->z_model, mbk_state_allocate_z(s, k, 1, &z0));
    TRY_SET(p->c_model, mbk_state_allocate_cache(s, k, MBK_STAGE_INSTANCE, MBK_STAGE_INSTANCE,
                                                 &mbk_value_double, NULL));
    return 0;
}

static int springs_instance(void *impl, const mbk_subsystem_ctx *c, mbk_state *s)
{
    springs *p = impl;
    int k = mbk_subsystem_ctx_get_index(c);
    TRY_SET(p->qerr, mbk_state_allocate_qerr(s, k, 1));
    TRY_SET(p->uerr, mbk_state_allocate_uerr(s, k, 1));
    TRY_SET(p->udoterr, mbk_state_allocate_udoterr(s, k, 1));
    TRY_SET(p->trig_pos, mbk_state_allocate_event_triggers(s, k, MBK_STAGE_POSITION, 1));
    TRY_SET(p->trig_vel, mbk_state_allocate_event_triggers(s, k, MBK_STAGE_VELOCITY, 1));
    TRY_SET(p->trig_acc, mbk_state_allocate_event_triggers(s, k, MBK_STAGE_ACCELERATION, 1));
    double total = 0.0;
    for (int i = 0; i < NM; ++i) total += p->mass[i];
    *(double *)mbk_state_upd_cache(s, k, p->c_model) =
        total * *(const double *)mbk_state_get_discrete(s, k, p->d_k);
    return 0;
}

static int springs_position(void *impl, const mbk_subsystem_ctx *c, mbk_state *s)
{
    springs *p = impl;
    int k = mbk_subsystem_ctx_get_index(c);
    const double *q = mbk_state_get_subsystem_q(s, k) + p->q;
    double *st = mbk_state_upd_cache(s, k, p->c_stretch);
    st[0] = q[0];
    st[1] = q[1] - q[0];
    st[2] = q[2] - q[1];
    mbk_state_upd_subsystem_qerr(s, k)[p->qerr] = q[0] - q[2];
    mbk_state_upd_event_triggers(s, k, MBK_STAGE_POSITION)[p->trig_pos] = q[0];
    return 0;
}

static int springs_velocity(void *impl, const mbk_subsystem_ctx *c, mbk_state *s)
{
    springs *p = impl;
    int k = mbk_subsystem_ctx_get_index(c);
    const double *u = mbk_state_get_subsystem_u(s, k) + p->u;
    double *qdot = mbk_state_upd_subsystem_qdot(s, k) + p->q;
    double ke = 0.0;
    for (int i = 0; i < NM; ++i) {
        qdot[i] = u[i];
        ke += 0.5 * p->mass[i] * u[i] * u[i];
    }
    *(double *)mbk_state_upd_cache(s, k, p->c_ke) = ke;
    mbk_state_upd_subsystem_uerr(s, k)[p->uerr] = u[0] - u[2];
    mbk_state_upd_event_triggers(s, k, MBK_STAGE_VELOCITY)[p->trig_vel] = u[0];
    return 0;
}

static int springs_dynamics(void *impl, const mbk_subsystem_ctx *c, mbk_state *s)
{
    springs *p = impl;
    int k = mbk_subsystem_ctx_get_index(c);
    const double *st = mbk_state_get_cache(s, k, p->c_stretch);
    const double *u = mbk_state_get_subsystem_u(s, k) + p->u;
    double kk = *(const double *)mbk_state_get_discrete(s, k, p->d_k);
    double cc = *(const double *)mbk_state_get_discrete(s, k, p->d_c);
    const mbk_vec3 *g = mbk_state_get_discrete_as(s, k, p->d_g, &mbk_value_vec3);
    if (!st || !g) return -1;
    double *f = mbk_state_upd_cache(s, k, p->c_force);
    double t[NM + 1] = {kk * st[0], kk * st[1], kk * st[2], 0.0};
    for (int i = 0; i < NM; ++i) f[i] = -t[i] + t[i + 1] + p->mass[i] * g->y - cc * u[i];
    return 0;
}

static int springs_acceleration(void *impl, const mbk_subsystem_ctx *c, mbk_state *s)
{
    springs *p = impl;
    int k = mbk_subsystem_ctx_get_index(c);
    const double *f = mbk_state_get_cache(s, k, p->c_force);
    if (!f) return -1;
    double *udot = mbk_state_upd_subsystem_udot(s, k) + p->u;
    double *qdd = mbk_state_upd_subsystem_qdotdot(s, k) + p->q;
    for (int i = 0; i < NM; ++i) udot[i] = qdd[i] = f[i] / p->mass[i];
    mbk_state_upd_subsystem_zdot(s, k)[p->z_model] = *(const double *)mbk_state_get_cache(s, k, p->c_ke);
    mbk_state_upd_subsystem_udoterr(s, k)[p->udoterr] = udot[0] - udot[2];
    mbk_state_upd_subsystem_multipliers(s, k)[p->udoterr] = 0.0;
    mbk_state_upd_event_triggers(s, k, MBK_STAGE_ACCELERATION)[p->trig_acc] = udot[0];
    return 0;
}

static int springs_pe(void *impl, const mbk_subsystem_ctx *c, const mbk_state *s, double *pe)
{
    const springs *p = impl;
    int k = mbk_subsystem_ctx_get_index(c);
    const double *st = mbk_state_get_cache(s, k, p->c_stretch);
    const double *q = mbk_state_get_subsystem_q(s, k) + p->q;
    double kk = *(const double *)mbk_state_get_discrete(s, k, p->d_k);
    const mbk_vec3 *g = mbk_state_get_discrete(s, k, p->d_g);
    if (!st) return -1;
    for (int i = 0; i < NM; ++i) *pe += 0.5 * kk * st[i] * st[i] - p->mass[i] * g->y * q[i];
    return 0;
}

static int springs_ke(void *impl, const mbk_subsystem_ctx *c, const mbk_state *s, double *ke)
{
    const springs *p = impl;
    const double *v = mbk_state_get_cache(s, mbk_subsystem_ctx_get_index(c), p->c_ke);
    if (!v) return -1;
    *ke += *v;
    return 0;
}

static void springs_destroy(void *impl) { free(impl); }

static const mbk_subsystem_ops springs_ops = {
    .name = "springs",
    .realize_topology = springs_topology,
    .realize_model = springs_model,
    .realize_instance = springs_instance,
    .realize_position = springs_position,
    .realize_velocity = springs_velocity,
    .realize_dynamics = springs_dynamics,
    .realize_acceleration = springs_acceleration,
    .calc_potential_energy = springs_pe,
    .calc_kinetic_energy = springs_ke,
    .destroy = springs_destroy,
};

/* ------------------------------------------------------------------ */
/* Subsystem "clock": time-driven z, a custom-copy discrete, Report cache */
/* ------------------------------------------------------------------ */

typedef struct clock_sub {
    int z, d_ring, c_sin, c_report, trig_time, trig_report;
} clock_sub;

static int clock_topology(void *impl, const mbk_subsystem_ctx *c, mbk_state *s)
{
    clock_sub *p = impl;
    int k = mbk_subsystem_ctx_get_index(c);
    const double z0[2] = {1.0, 2.0};
    const ring r = {{1, 2, 3, 4}, 0};
    TRY_SET(p->z, mbk_state_allocate_z(s, k, 2, z0));
    TRY_SET(p->d_ring, mbk_state_allocate_discrete(s, k, MBK_STAGE_REPORT, &ring_type, &r));
    TRY_SET(p->c_sin, mbk_state_allocate_cache(s, k, MBK_STAGE_TIME, MBK_STAGE_TIME, &mbk_value_double, NULL));
    TRY_SET(p->c_report, mbk_state_allocate_cache(s, k, MBK_STAGE_ACCELERATION, MBK_STAGE_REPORT, &mbk_value_double, NULL));
    return 0;
}

static int clock_instance(void *impl, const mbk_subsystem_ctx *c, mbk_state *s)
{
    clock_sub *p = impl;
    int k = mbk_subsystem_ctx_get_index(c);
    TRY_SET(p->trig_time, mbk_state_allocate_event_triggers(s, k, MBK_STAGE_TIME, 1));
    TRY_SET(p->trig_report, mbk_state_allocate_event_triggers(s, k, MBK_STAGE_REPORT, 1));
    return 0;
}

static int clock_time(void *impl, const mbk_subsystem_ctx *c, mbk_state *s)
{
    clock_sub *p = impl;
    int k = mbk_subsystem_ctx_get_index(c);
    double t = mbk_state_get_time(s);
    *(double *)mbk_state_upd_cache(s, k, p->c_sin) = sin(t);
    mbk_state_upd_event_triggers(s, k, MBK_STAGE_TIME)[p->trig_time] = t - 1.0;
    return 0;
}

static int clock_acceleration(void *impl, const mbk_subsystem_ctx *c, mbk_state *s)
{
    clock_sub *p = impl;
    int k = mbk_subsystem_ctx_get_index(c);
    const double *z = mbk_state_get_subsystem_z(s, k) + p->z;
    double *zdot = mbk_state_upd_subsystem_zdot(s, k) + p->z;
    zdot[0] = *(const double *)mbk_state_get_cache(s, k, p->c_sin);
    zdot[1] = -z[1];
    return 0;
}

static int clock_report(void *impl, const mbk_subsystem_ctx *c, mbk_state *s)
{
    clock_sub *p = impl;
    int k = mbk_subsystem_ctx_get_index(c);
    const double *zdot = mbk_state_get_zdot(s);
    if (!zdot) return -1;
    const ring *r = mbk_state_get_discrete_as(s, k, p->d_ring, &ring_type);
    *(double *)mbk_state_upd_cache(s, k, p->c_report) = zdot[0] + r->v[r->head];
    mbk_state_upd_event_triggers(s, k, MBK_STAGE_REPORT)[p->trig_report] = mbk_state_get_subsystem_z(s, k)[p->z];
    return 0;
}

static void clock_destroy(void *impl) { free(impl); }

static const mbk_subsystem_ops clock_ops = {
    .name = "clock",
    .realize_topology = clock_topology,
    .realize_instance = clock_instance,
    .realize_time = clock_time,
    .realize_acceleration = clock_acceleration,
    .realize_report = clock_report,
    .destroy = clock_destroy,
};

/* ------------------------------------------------------------------ */
/* Set-up and tear-down                                                 */
/* ------------------------------------------------------------------ */

typedef struct world {
    mbk_system *sys;
    mbk_state *s, *s2;
    springs *sp;    /* owned by sys once added */
    clock_sub *ck;
    int failed_step; /* set-up step that failed (0: none) */
} world;

static springs *new_springs(void)
{
    springs *p = calloc(1, sizeof *p);
    if (p) {
        p->mass[0] = 1.0;
        p->mass[1] = 2.0;
        p->mass[2] = 0.5;
    }
    return p;
}

/* One set-up step: on failure, retry once when `retry` (for the one-off
   failure mode). Returns the status of the last attempt. */
#define STEP(n, expr)                                     \
    do {                                                  \
        int rc_ = (expr);                                 \
        if (rc_ < 0 && retry) rc_ = (expr);               \
        if (rc_ < 0) {                                    \
            w->failed_step = (n);                         \
            return rc_;                                   \
        }                                                 \
    } while (0)

static int make_system(world *w, int retry)
{
    w->sys = mbk_system_create("noalloc");
    if (!w->sys && retry) w->sys = mbk_system_create("noalloc");
    if (!w->sys) {
        w->failed_step = 1;
        return mbk_last_status() ? mbk_last_status() : -999;
    }
    return 0;
}

static int add_sub(world *w, const mbk_subsystem_ops *ops, void *impl)
{
    int rc = mbk_system_add_subsystem(w->sys, ops, impl);
    return rc < 0 ? rc : 0;
}

static int make_state(mbk_state **s, int retry)
{
    *s = mbk_state_create();
    if (!*s && retry) *s = mbk_state_create();
    if (!*s) return mbk_last_status() ? mbk_last_status() : -999;
    return 0;
}

static int setup(world *w, int retry)
{
    memset(w, 0, sizeof *w);
    mbk_clear_error();
    int rc = make_system(w, retry);
    if (rc < 0) return rc;
    /* impls are the test's own (plain malloc), owned by the System once added */
    springs *sp = new_springs();
    clock_sub *ck = calloc(1, sizeof *ck);
    rc = add_sub(w, &springs_ops, sp);
    if (rc < 0 && retry) rc = add_sub(w, &springs_ops, sp);
    if (rc < 0) { /* not added: still ours */
        free(sp);
        free(ck);
        w->failed_step = 2;
        return rc;
    }
    w->sp = sp;
    rc = add_sub(w, &clock_ops, ck);
    if (rc < 0 && retry) rc = add_sub(w, &clock_ops, ck);
    if (rc < 0) {
        free(ck);
        w->failed_step = 3;
        return rc;
    }
    w->ck = ck;
    STEP(4, mbk_system_realize_topology(w->sys));
    STEP(5, make_state(&w->s, 0));
    STEP(6, mbk_state_init(w->s, w->sys));
    STEP(7, mbk_system_realize(w->sys, w->s, MBK_STAGE_INSTANCE));
    STEP(8, make_state(&w->s2, 0));
    STEP(9, mbk_state_init(w->s2, w->sys));
    STEP(10, mbk_system_realize(w->sys, w->s2, MBK_STAGE_INSTANCE));
    return MBK_OK;
}

static void teardown(world *w)
{
    mbk_state_destroy(w->s2);
    mbk_state_destroy(w->s);
    mbk_system_destroy(w->sys);
    memset(w, 0, sizeof *w);
}

/* ------------------------------------------------------------------ */
/* Tests                                                                */
/* ------------------------------------------------------------------ */

/* The hooks see every library allocation (so a zero count means something). */
static void test_hooks_count(void)
{
    long lib0 = mbk_get_allocation_count(), ok0 = successful(), live0 = cnt.live;
    void *a = mbk_malloc(24);
    void *b = mbk_calloc(3, 8);
    a = mbk_realloc(a, 48);
    CHECK(a && b);
    CHECK_INT(successful() - ok0, 3);
    CHECK_INT(mbk_get_allocation_count() - lib0, 3);
    CHECK_INT(cnt.live - live0, 2);
    mbk_free(a);
    mbk_free(b);
    mbk_free(NULL);
    CHECK_INT(cnt.live, live0);
    /* a whole System and State allocate through the hooks */
    world w;
    long before = successful();
    CHECK_INT(setup(&w, 0), MBK_OK);
    CHECK(successful() - before >= 8);
    CHECK(cnt.live > live0);
    teardown(&w);
    CHECK_INT(cnt.live, live0);
}

static double sum(const double *v, int n)
{
    double x = 0.0;
    for (int i = 0; i < n; ++i) x += v[i];
    return x;
}

/* Read every getter of a State at Report; returns a checksum (NaN if a getter failed). */
static double read_everything(const mbk_system *sys, const mbk_state *s, const springs *sp,
                              const clock_sub *ck)
{
    /* the lazy entry: compute on first request */
    if (!mbk_state_is_cache_realized(s, 0, sp->c_lazy)) {
        const double *q = mbk_state_get_subsystem_q(s, 0);
        *(double *)mbk_state_upd_cache_as(s, 0, sp->c_lazy, &mbk_value_double) = q[0] * q[1] * q[2];
        mbk_state_mark_cache_realized(s, 0, sp->c_lazy);
    }
    double acc = 0.0;
    int nq = mbk_state_get_nq(s), nu = mbk_state_get_nu(s), nz = mbk_state_get_nz(s);
    int ny = mbk_state_get_ny(s);
    const double *ptrs[] = {mbk_state_get_q(s), mbk_state_get_u(s), mbk_state_get_z(s),
                            mbk_state_get_y(s), mbk_state_get_qdot(s), mbk_state_get_udot(s),
                            mbk_state_get_zdot(s), mbk_state_get_ydot(s),
                            mbk_state_get_qdotdot(s), mbk_state_get_qerr(s),
                            mbk_state_get_uerr(s), mbk_state_get_udoterr(s),
                            mbk_state_get_multipliers(s)};
    const int lens[] = {nq, nu, nz, ny, nq, nu, nz, ny, nq, mbk_state_get_nqerr(s),
                        mbk_state_get_nuerr(s), mbk_state_get_nudoterr(s),
                        mbk_state_get_num_multipliers(s)};
    for (size_t i = 0; i < sizeof ptrs / sizeof ptrs[0]; ++i) {
        if (!ptrs[i] || lens[i] < 0) return NAN;
        acc += sum(ptrs[i], lens[i]);
    }
    for (int g = MBK_STAGE_TIME; g <= MBK_STAGE_REPORT; ++g) {
        int n = mbk_state_get_num_event_triggers(s, (mbk_stage)g);
        const double *w = mbk_state_get_event_triggers(s, (mbk_stage)g);
        if (n < 0 || !w) return NAN;
        acc += sum(w, n);
    }
    for (int k = 0; k < mbk_state_get_num_subsystems(s); ++k) {
        const double *sq = mbk_state_get_subsystem_q(s, k), *su = mbk_state_get_subsystem_u(s, k);
        const double *sz = mbk_state_get_subsystem_z(s, k);
        int snq = mbk_state_get_subsystem_nq(s, k), snu = mbk_state_get_subsystem_nu(s, k);
        int snz = mbk_state_get_subsystem_nz(s, k);
        if (!sq || !su || !sz || snq < 0 || snu < 0 || snz < 0) return NAN;
        acc += sum(sq, snq) + sum(su, snu) + sum(sz, snz);
        acc += mbk_state_get_subsystem_q_start(s, k) + mbk_state_get_subsystem_u_start(s, k) +
               mbk_state_get_subsystem_z_start(s, k) + mbk_state_get_subsystem_qerr_start(s, k) +
               mbk_state_get_subsystem_uerr_start(s, k) +
               mbk_state_get_subsystem_udoterr_start(s, k);
        acc += (double)mbk_state_get_subsystem_stage(s, k);
        acc += (double)(mbk_state_get_stage_version(s, k, MBK_STAGE_POSITION) % 7);
        for (int i = 0; i < mbk_state_get_num_discrete(s, k); ++i) {
            if (!mbk_state_get_discrete(s, k, i)) return NAN;
            acc += (double)mbk_state_get_discrete_stage(s, k, i);
        }
        for (int i = 0; i < mbk_state_get_num_cache(s, k); ++i)
            acc += mbk_state_is_cache_realized(s, k, i) ? 1.0 : 0.0;
    }
    /* typed reads of every cache entry and discrete variable */
    const mbk_value_type arr = mbk_value_array_of_double(NM);
    const double *st = mbk_state_get_cache_as(s, 0, sp->c_stretch, &arr);
    const double *ke = mbk_state_get_cache_as(s, 0, sp->c_ke, &mbk_value_double);
    const double *f = mbk_state_get_cache(s, 0, sp->c_force);
    const double *cm = mbk_state_get_cache(s, 0, sp->c_model);
    const double *cs = mbk_state_get_cache(s, 1, ck->c_sin);
    const double *cr = mbk_state_get_cache_as(s, 1, ck->c_report, &mbk_value_double);
    const double *kk = mbk_state_get_discrete_as(s, 0, sp->d_k, &mbk_value_double);
    const mbk_vec3 *g = mbk_state_get_discrete_as(s, 0, sp->d_g, &mbk_value_vec3);
    const int *mode = mbk_state_get_discrete_as(s, 0, sp->d_mode, &mbk_value_int);
    const ring *r = mbk_state_get_discrete_as(s, 1, ck->d_ring, &ring_type);
    if (!st || !ke || !f || !cm || !cs || !cr || !kk || !g || !mode || !r) return NAN;
    acc += sum(st, NM) + *ke + sum(f, NM) + *cm + *cs + *cr + *kk + g->y + *mode + r->v[r->head];
    const double *lz = mbk_state_get_cache(s, 0, sp->c_lazy);
    if (!lz) return NAN;
    acc += *lz;
    double kin = 0.0, pot = 0.0;
    if (mbk_system_calc_energy(sys, s, &kin, &pot) != MBK_OK) return NAN;
    acc += kin + pot;
    if (mbk_system_check_state(sys, s) != MBK_OK) return NAN;
    acc += (double)(mbk_state_get_size_in_bytes(s) % 1000);
    acc += mbk_state_get_time(s);
    return acc;
}

/* The loop after Instance: zero allocations. */
static void test_no_alloc_after_instance(void)
{
    world w;
    if (!CHECK(setup(&w, 0) == MBK_OK)) {
        teardown(&w);
        return;
    }
    mbk_system *sys = w.sys;
    mbk_state *s = w.s, *s2 = w.s2;
    const springs *sp = w.sp;
    const clock_sub *ck = w.ck;
    int nq = mbk_state_get_nq(s), nu = mbk_state_get_nu(s), nz = mbk_state_get_nz(s);
    int ny = mbk_state_get_ny(s);
    CHECK_INT(nq, 3);
    CHECK_INT(nu, 3);
    CHECK_INT(nz, 3);
    CHECK(mbk_state_get_size_in_bytes(s) == mbk_state_get_size_in_bytes(s2));
    double q[8], u[8], z[8], y[16], ydot[16];
    long ok0 = successful(), lib0 = mbk_get_allocation_count(), att0 = cnt.attempts;
    long copies0 = ring_copies;
    int bad_reads = 0, bad_calls = 0, mismatches = 0;
    double checksum = 0.0;

    for (int it = 0; it < 300; ++it) {
        double t = 0.01 * it;
        for (int i = 0; i < nq; ++i) q[i] = 0.1 * sin(0.3 * it + i);
        for (int i = 0; i < nu; ++i) u[i] = 0.2 * cos(0.7 * it - i);
        for (int i = 0; i < nz; ++i) z[i] = 1.0 + 0.01 * i * it;
        bad_calls += mbk_state_set_time(s, t) != MBK_OK;
        bad_calls += mbk_state_set_q(s, q, nq) != MBK_OK;
        bad_calls += mbk_state_set_u(s, u, nu) != MBK_OK;
        bad_calls += mbk_state_set_z(s, z, nz) != MBK_OK;
        mbk_vec3 g = {0.0, -9.81 - 0.001 * it, 0.0};
        bad_calls += mbk_state_set_discrete(s, 0, sp->d_g, &mbk_value_vec3, &g) != MBK_OK;
        if (it % 3 == 0) { /* writable views too */
            mbk_vec3 *gp = mbk_state_upd_discrete_as(s, 0, sp->d_g, &mbk_value_vec3);
            if (gp) gp->x = 0.0;
            double *dc = mbk_state_upd_discrete(s, 0, sp->d_c);
            if (dc) *dc = 0.3 + 0.001 * it;
            ring *r = mbk_state_upd_discrete_as(s, 1, ck->d_ring, &ring_type);
            if (r) r->head = it % 4;
            mbk_state_upd_q(s)[0] += 1e-3;
            mbk_state_upd_subsystem_u(s, 0)[1] -= 1e-3;
            mbk_state_upd_subsystem_z(s, 1)[0] += 1e-3;
            mbk_state_upd_y(s)[nq] += 1e-3;
            bad_calls += mbk_state_invalidate(s, MBK_STAGE_VELOCITY) != MBK_OK;
        }
        /* stage by stage, then all at once */
        for (int g2 = MBK_STAGE_TIME; g2 <= MBK_STAGE_REPORT; ++g2)
            bad_calls += mbk_system_realize(sys, s, (mbk_stage)g2) != MBK_OK;
        double c1 = read_everything(sys, s, sp, ck);
        bad_reads += isnan(c1);
        checksum += c1;
        /* physics sanity: qdot = u, udot = qdotdot */
        mismatches += memcmp(mbk_state_get_qdot(s), mbk_state_get_u(s), (size_t)nq * sizeof(double)) != 0;
        mismatches += memcmp(mbk_state_get_udot(s), mbk_state_get_qdotdot(s), (size_t)nq * sizeof(double)) != 0;

        /* copy into the second State and read it there */
        bad_calls += mbk_state_copy(s2, s) != MBK_OK;
        double c2 = read_everything(sys, s2, sp, ck);
        mismatches += !(c1 == c2);
        mismatches += memcmp(mbk_state_get_ydot(s2), mbk_state_get_ydot(s), (size_t)ny * sizeof(double)) != 0;

        /* the plain ODE view */
        memcpy(y, mbk_state_get_y(s), (size_t)ny * sizeof(double));
        y[0] += 1e-4;
        bad_calls += mbk_system_calc_ydot(sys, s, t + 0.005, y, ydot) != MBK_OK;
        bad_calls += mbk_system_calc_ydot(sys, s2, t, NULL, ydot) != MBK_OK;
        mismatches += ydot[0] != mbk_state_get_u(s2)[0];
    }
    long allocs = successful() - ok0;
    CHECK_INT(allocs, 0);
    CHECK_INT(mbk_get_allocation_count() - lib0, 0);
    CHECK_INT(cnt.attempts - att0, 0);
    CHECK_INT(bad_calls, 0);
    CHECK_INT(bad_reads, 0);
    CHECK_INT(mismatches, 0);
    CHECK(isfinite(checksum));
    CHECK(ring_copies > copies0); /* the copy op ran (and allocated nothing) */
    CHECK_INT(mbk_state_get_stage(s2), MBK_STAGE_REPORT);
    teardown(&w);
}

/* Everything allocated is freed, and the library's count agrees with the hooks'. */
static void test_all_freed(void)
{
    long lib0 = mbk_get_allocation_count(), ok0 = successful();
    long live0 = cnt.live, frees0 = cnt.frees, m0 = cnt.mallocs + cnt.from_null;
    world w;
    CHECK_INT(setup(&w, 0), MBK_OK);
    /* layout changes: a Model-stage variable and an Instance-stage one */
    CHECK_INT(mbk_system_realize(w.sys, w.s, MBK_STAGE_REPORT), MBK_OK);
    int one = 1;
    CHECK_INT(mbk_state_set_discrete(w.s, 0, w.sp->d_mode, &mbk_value_int, &one), MBK_OK);
    CHECK_INT(mbk_system_realize(w.sys, w.s, MBK_STAGE_REPORT), MBK_OK);
    double k2 = 55.0;
    CHECK_INT(mbk_state_set_discrete(w.s, 0, w.sp->d_k, &mbk_value_double, &k2), MBK_OK);
    CHECK_INT(mbk_system_realize(w.sys, w.s, MBK_STAGE_REPORT), MBK_OK);
    CHECK_INT(mbk_state_copy(w.s2, w.s), MBK_OK);
    mbk_state *s3 = mbk_state_create();
    CHECK_INT(mbk_state_copy(s3, w.s), MBK_OK); /* into an empty State */
    CHECK_INT(mbk_system_realize(w.sys, s3, MBK_STAGE_REPORT), MBK_OK);
    mbk_state_destroy(s3);
    teardown(&w);
    CHECK_INT(cnt.live, live0);
    CHECK_INT((cnt.mallocs + cnt.from_null - m0) - (cnt.frees - frees0), 0);
    CHECK_INT(mbk_get_allocation_count() - lib0, successful() - ok0);
}

/* Allocation number n+1 fails (for good, or just once with a retry). */
static void test_failing_allocator(void)
{
    world w;
    /* how many allocations set-up takes */
    long att0 = cnt.attempts;
    CHECK_INT(setup(&w, 0), MBK_OK);
    long needed = cnt.attempts - att0;
    /* reference values to compare retried set-ups with */
    double yref[16];
    size_t bytes_ref = mbk_state_get_size_in_bytes(w.s);
    int ny = mbk_state_get_ny(w.s);
    memcpy(yref, mbk_state_get_y(w.s), (size_t)ny * sizeof(double));
    teardown(&w);
    CHECK(needed >= 10);

    int wrong_status = 0, no_message = 0, leaks = 0, succeeded = 0, retried_wrong = 0;
    int steps_seen[16] = {0};
    for (long n = 0; n < needed; ++n) {
        long live0 = cnt.live;
        /* failing for good */
        arm(n, 0);
        int rc = setup(&w, 0);
        int status = mbk_last_status();
        int has_msg = mbk_last_error()[0] != '\0';
        disarm();
        if (rc == MBK_OK) succeeded++;
        if (rc != MBK_ENOMEM || status != MBK_ENOMEM) {
            wrong_status++;
            fprintf(stderr, "    allocation %ld failing: step %d returned %s, last status %s (%s)\n",
                    n + 1, w.failed_step, mbk_status_name(rc), mbk_status_name(status),
                    mbk_last_error());
        }
        if (!has_msg) no_message++;
        if (w.failed_step > 0 && w.failed_step < 16) steps_seen[w.failed_step]++;
        teardown(&w);
        if (cnt.live != live0) {
            leaks++;
            fprintf(stderr, "    allocation %ld failing: %ld blocks leaked\n", n + 1, cnt.live - live0);
        }

        /* failing once: the retried step succeeds and builds the same State */
        arm(n, 1);
        rc = setup(&w, 1);
        disarm();
        if (rc != MBK_OK || mbk_system_realize(w.sys, w.s, MBK_STAGE_REPORT) != MBK_OK ||
            mbk_state_get_size_in_bytes(w.s) != bytes_ref || mbk_state_get_ny(w.s) != ny ||
            memcmp(mbk_state_get_y(w.s), yref, (size_t)ny * sizeof(double)) != 0 ||
            mbk_state_get_nqerr(w.s) != 1 ||
            mbk_state_get_num_event_triggers(w.s, MBK_STAGE_REPORT) != 1 ||
            mbk_system_realize(w.sys, w.s2, MBK_STAGE_REPORT) != MBK_OK) {
            retried_wrong++;
            fprintf(stderr, "    allocation %ld failing once: retry gave %s at step %d (%s)\n", n + 1,
                    mbk_status_name(rc), w.failed_step, mbk_last_error());
        }
        teardown(&w);
        if (cnt.live != live0) {
            leaks++;
            fprintf(stderr, "    allocation %ld failing once: %ld blocks leaked\n", n + 1,
                    cnt.live - live0);
        }
    }
    CHECK_INT(succeeded, 0);
    CHECK_INT(wrong_status, 0);
    CHECK_INT(no_message, 0);
    CHECK_INT(leaks, 0);
    CHECK_INT(retried_wrong, 0);
    /* failures were injected into every kind of set-up step */
    for (int st = 1; st <= 10; ++st)
        if (!CHECK(steps_seen[st] > 0)) fprintf(stderr, "    step %d never failed\n", st);

    /* with exactly enough allocations, set-up succeeds */
    arm(needed, 0);
    CHECK_INT(setup(&w, 0), MBK_OK);
    disarm();
    teardown(&w);
}

/* A failing allocator during a layout change of a used State (Model-stage
   variable changed, realize again): MBK_ENOMEM, no leak, and the State can be
   realized once memory is back. */
static void test_failing_relayout(void)
{
    world w;
    if (!CHECK(setup(&w, 0) == MBK_OK)) {
        teardown(&w);
        return;
    }
    CHECK_INT(mbk_system_realize(w.sys, w.s, MBK_STAGE_REPORT), MBK_OK);
    long live0 = cnt.live;
    int enomem = 0, other = 0;
    for (long n = 0; n < 40; ++n) {
        mbk_state *s = w.s2;
        CHECK_INT(mbk_state_copy(s, w.s), MBK_OK);
        int mode = (int)(n % 2) + 1;
        arm(n, 0);
        int rc = mbk_state_set_discrete(s, 0, w.sp->d_mode, &mbk_value_int, &mode);
        if (rc == MBK_OK) rc = mbk_system_realize(w.sys, s, MBK_STAGE_REPORT);
        disarm();
        if (rc == MBK_ENOMEM) enomem++;
        else if (rc != MBK_OK) other++;
        /* memory is back: the State recovers */
        if (rc != MBK_OK) {
            int rc2 = mbk_state_set_discrete(s, 0, w.sp->d_mode, &mbk_value_int, &mode);
            if (rc2 == MBK_OK) rc2 = mbk_system_realize(w.sys, s, MBK_STAGE_REPORT);
            CHECK_INT(rc2, MBK_OK);
        }
        CHECK_INT(*(const int *)mbk_state_get_discrete(s, 0, w.sp->d_mode), mode);
        CHECK_INT(mbk_state_get_stage(s), MBK_STAGE_REPORT);
        CHECK_INT(mbk_state_get_nz(s), 3);
    }
    CHECK(enomem > 0);
    CHECK_INT(other, 0);
    CHECK(cnt.live >= live0 - 2 && cnt.live <= live0 + 2); /* a State is one or two blocks */
    teardown(&w);
}

/* ------------------------------------------------------------------ */
/* Integrator steps: nothing allocated, process-wide                    */
/* ------------------------------------------------------------------ */

/* A free body (quaternion) carrying a Hunt-Crossley sphere (r = 0.1 m), set down
   pressed into the ground half-space, sliding at 0.5 m/s and spinning at 3 rad/s:
   Hertz contact and friction act at every step. */
static mbk_system *contact_model(mbk_state **s0)
{
    mbk_system *sys = mbk_multibody_create("contact");
    mbk_matter *m = mbk_multibody_upd_matter(sys);
    mbk_forces *f = mbk_multibody_upd_forces(sys);
    mbk_mass_props mp = mbk_mass_props_from_central(1.0, mbk_vec3_zero(), mbk_mat33_diag(0.004, 0.004, 0.004));
    mbk_transform I = mbk_transform_identity();
    int b = mbk_matter_add_body(m, 0, &I, &mp, &I, mbk_mobilizer_free());
    mbk_force_add_gravity(f, mbk_vec3_make(0, 0, -9.81));
    const double params[6] = {1e7, 0.5, 0.8, 0.5, 0.0, 0.1};
    CHECK(mbk_force_add_hunt_crossley_sphere(f, b, mbk_vec3_zero(), 0.1, 0.0, params) >= 0);
    mbk_system_realize_topology(sys);
    mbk_state *s = test_new_state(sys);
    CHECK_INT(mbk_state_get_nq(s), 7);
    mbk_state_upd_q(s)[6] = 0.1 - 5e-4;  /* q = (quaternion, p): 0.5 mm into the ground */
    mbk_state_upd_u(s)[2] = 3.0;         /* u = (w, v) */
    mbk_state_upd_u(s)[3] = 0.5;
    *s0 = s;
    return sys;
}

/* The four-bar of `mbk run builtin:fourbar`: three pins, the loop closed by a ball. */
static mbk_system *fourbar_model(mbk_state **s0)
{
    mbk_system *sys = mbk_multibody_create("fourbar");
    builtin_fourbar_add(sys, mbk_vec3_make(0, -9.81, 0), NULL);
    mbk_system_realize_topology(sys);
    mbk_state *s = test_new_state(sys);
    const double u[3] = {3.0, 0, 0};
    builtin_fourbar_start(sys, s, u, true);
    *s0 = s;
    return sys;
}

typedef struct step_allocs {
    long library, process, steps, jacobians, projections;
    double q_last; /* the last q at the end (the contact model's height) */
    int rc;
} step_allocs;

/* Initialize, step to 0.02 s (warm-up: first calls of everything), then count what
   20 more report intervals of 0.01 s allocate. */
static step_allocs count_step_allocations(which w, const mbk_system *sys, const mbk_state *s0, bool system_jac)
{
    step_allocs r = {0, 0, 0, 0, 0, NAN, MBK_OK};
    mbk_integrator *ig = make(w, sys);
    if (!ig) {
        r.rc = mbk_last_status();
        return r;
    }
    mbk_integrator_set_accuracy(ig, w == I_EULER || w == I_SEMI ? 1e-3 : 1e-5);
    if (w == I_RK4) mbk_integrator_set_fixed_step(ig, 2e-4);
    mbk_integrator_set_use_system_jacobian(ig, system_jac);
    r.rc = mbk_integrator_initialize(ig, s0);
    if (r.rc == MBK_OK) r.rc = mbk_integrator_step_to(ig, 0.02);
    mbk_integrator_stats st0, st1;
    mbk_integrator_get_stats(ig, &st0);
    long lib0 = mbk_get_allocation_count(), proc0 = process_allocations();
    for (int k = 1; k <= 20 && r.rc == MBK_OK; ++k) r.rc = mbk_integrator_step_to(ig, 0.02 + 0.01 * k);
    r.process = process_allocations() - proc0;
    r.library = mbk_get_allocation_count() - lib0;
    mbk_integrator_get_stats(ig, &st1);
    r.steps = st1.steps_taken - st0.steps_taken;
    r.jacobians = st1.jacobian_evaluations - st0.jacobian_evaluations;
    r.projections = st1.projections - st0.projections;
    const mbk_state *s = mbk_integrator_get_state(ig);
    if (s) r.q_last = mbk_state_get_q(s)[mbk_state_get_nq(s) - 1];
    if (r.rc != MBK_OK) fprintf(stderr, "    %s: %s\n", names[w], mbk_last_error());
    mbk_integrator_destroy(ig);
    return r;
}

static void test_integrator_steps_allocate_nothing(void)
{
    if (!process_counted) printf("  (process-wide counts skipped: a sanitizer replaces malloc)\n");
    for (int model = 0; model < 2; ++model) {
        mbk_state *s0 = NULL;
        mbk_system *sys = model == 0 ? contact_model(&s0) : fourbar_model(&s0);
        for (int w = 0; w < I_COUNT; ++w) {
            step_allocs r = count_step_allocations((which)w, sys, s0, true);
            printf("  %-8s %-20s %5ld steps, %3ld Jacobians: %ld allocations (library %ld)\n",
                   model == 0 ? "contact" : "four-bar", names[w], r.steps, r.jacobians, r.process, r.library);
            CHECK_INT(r.rc, MBK_OK);
            CHECK(r.steps >= 20);
            CHECK_INT(r.library, 0);
            CHECK_INT(r.process, 0);
            /* the Jacobian path ran in the counted steps */
            if (w == I_BDF || w == I_IDA) CHECK(r.jacobians > 0);
            if (model == 0) CHECK(r.q_last < 0.1); /* still pressed into the ground */
            if (model == 1) CHECK(r.projections >= r.steps);
        }
        /* SUNDIALS' own difference-quotient Jacobian allocates with plain malloc at every
           Jacobian, which only the process-wide count sees: the counter works */
        const which sd[2] = {I_BDF, I_IDA};
        for (int c = 0; c < 2; ++c) {
            step_allocs r = count_step_allocations(sd[c], sys, s0, false);
            printf("  %-8s %-20s %5ld steps, %3ld Jacobians (SUNDIALS' difference quotients): %ld allocations "
                   "(library %ld)\n", model == 0 ? "contact" : "four-bar", names[sd[c]], r.steps, r.jacobians,
                   r.process, r.library);
            CHECK_INT(r.rc, MBK_OK);
            CHECK(r.jacobians > 0);
            CHECK_INT(r.library, 0);
            if (process_counted) CHECK(r.process >= r.jacobians);
        }
        mbk_state_destroy(s0);
        mbk_system_destroy(sys);
    }
}

int main(void)
{
    mbk_set_allocator(cnt_malloc, cnt_realloc, cnt_free, &cnt);
    long lib0 = mbk_get_allocation_count();
    test_hooks_count();
    test_no_alloc_after_instance();
    test_all_freed();
    test_failing_allocator();
    test_failing_relayout();
    test_integrator_steps_allocate_nothing();
    CHECK_INT(cnt.live, 0);
    CHECK_INT(mbk_get_allocation_count() - lib0, cnt.mallocs + cnt.reallocs);
    mbk_set_allocator(NULL, NULL, NULL, NULL);
    return mbk_test_finish();
}
