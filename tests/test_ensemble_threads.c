/* Ensembles (mbk/ensemble.h) on threads; label "threads", so it also runs under
 * ThreadSanitizer (make test-tsan).
 *
 * (1) Bitwise determinism: a model with a loop constraint (a four-bar closed by
 *     a ball constraint), Hunt-Crossley contact (a free sphere dropped on the
 *     ground), a triggered event (the crank reverses when the sphere passes a
 *     height) and a scheduled event, its members differing in initial
 *     conditions, gravity, contact stiffness and a body's mass (random draws
 *     from mbk_random_*), gives bitwise the same final y and step counts on 1,
 *     2 and 4 threads, with members handed out in reverse and shuffled order
 *     by a custom driver, and through the done and the records interfaces; the
 *     same as each member integrated alone, serially, on the main thread.
 * (2) Failure isolation: a member whose init fails and one whose integration
 *     fails (a custom force gives up at t > 0.2) keep their status and message;
 *     every other member's result is unchanged.
 * (3) Counter-based random numbers: Random123's known answers for
 *     Philox4x32-10; uniform and normal draws' ranges, means and variances.
 * (4) Bad arguments: N = 0, a bad integrator name or accuracy, t_final <= 0.
 * (5) A pack or done callback that fails: its own status and message, and the
 *     count of members run.
 */
#define _POSIX_C_SOURCE 200809L
#include <mbk/mbk.h>
#include <pthread.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "mbk_test.h"

#include "ensemble_model.h"

/* A driver handing out members in a given order, one at a time. */
typedef struct order_driver {
    const int *order;
    int next;
    done_ctx *d;
} order_driver;

static int order_fetch(void *data, int *members, int cap)
{
    order_driver *o = data;
    if (o->next >= N) return -1;
    (void)cap;
    members[0] = o->order[o->next++];
    return 1;
}

static int order_deliver(void *data, int member, int status, const void *record, size_t size)
{
    order_driver *o = data;
    return member_collect(o->d, member, status, record, size);
}

static int order_poll(void *data, double seconds)
{
    (void)data, (void)seconds;
    return 0;
}

/* mode 0: done callbacks; 1: records; 2: driver in reverse order; 3: driver shuffled */
static void run_sweep(model *m, int threads, int mode, int fail_init, int fail_run, sweep *w)
{
    memset(w->res, 0, sizeof w->res);
    memset(w->calls, 0, sizeof w->calls);
    w->m = m, w->fail_init = fail_init, w->fail_run = fail_run;
    pthread_mutex_init(&w->lock, NULL);
    mbk_ensemble *e = mbk_ensemble_create(m->sys, N);
    CHECK(e != NULL);
    CHECK(mbk_ensemble_set_integrator(e, "rkmerson", 1e-5) == MBK_OK);
    CHECK(mbk_ensemble_set_threads(e, threads) == MBK_OK);
    CHECK_INT(mbk_ensemble_get_threads(e), threads);
    done_ctx d = {w, e};
    int rc;
    if (mode == 0) {
        rc = mbk_ensemble_run(e, T_FINAL, done_init, member_done, &d);
    } else if (mode == 1) {
        rc = mbk_ensemble_run_records(e, T_FINAL, sizeof(result), done_init, member_pack, member_collect, &d);
    } else {
        int order[N];
        for (int k = 0; k < N; ++k) order[k] = mode == 2 ? N - 1 - k : (int)((k * 5 + 3) % N);
        order_driver o = {order, 0, &d};
        const mbk_ensemble_driver drv = {order_fetch, order_deliver, order_poll, NULL};
        rc = mbk_ensemble_run_driver(e, T_FINAL, sizeof(result), done_init, member_pack, &drv, &o, &d);
    }
    if (rc != MBK_OK) fprintf(stderr, "run: %s\n", mbk_last_error());
    CHECK_INT(rc, MBK_OK);
    CHECK_INT(mbk_ensemble_get_num_run(e), N);
    for (int i = 0; i < N; ++i) CHECK_INT(w->calls[i], 1);
    mbk_ensemble_destroy(e);
    pthread_mutex_destroy(&w->lock);
}

static int same_result(const result *a, const result *b)
{
    return a->status == b->status && a->steps == b->steps && a->ny == b->ny && memcmp(&a->t, &b->t, sizeof a->t) == 0 &&
           memcmp(a->y, b->y, sizeof(double) * (size_t)a->ny) == 0;
}

/* Member i alone, serially, with the library's integrator. */
static void run_alone(model *m, int i, result *r)
{
    sweep w;
    memset(&w, 0, sizeof w);
    w.m = m, w.fail_init = w.fail_run = -1;
    mbk_state *s = mbk_state_create();
    mbk_state_init(s, m->sys);
    mbk_system_realize(m->sys, s, MBK_STAGE_INSTANCE);
    CHECK(member_init(&w, m->sys, i, s) == 0);
    mbk_integrator *ig = mbk_integrator_create_rkmerson(m->sys);
    mbk_integrator_set_accuracy(ig, 1e-5);
    CHECK(mbk_integrator_initialize(ig, s) == MBK_OK);
    int rc = mbk_integrator_integrate(ig, T_FINAL, NULL, NULL);
    const mbk_state *f = mbk_integrator_get_state(ig);
    memset(r, 0, sizeof *r);
    r->status = rc;
    mbk_integrator_stats st;
    mbk_integrator_get_stats(ig, &st);
    r->steps = st.steps_taken;
    r->ny = mbk_state_get_ny(f);
    r->t = mbk_state_get_time(f);
    memcpy(r->y, mbk_state_get_y(f), sizeof(double) * (size_t)r->ny);
    mbk_integrator_destroy(ig);
    mbk_state_destroy(s);
}

static void test_determinism(model *m)
{
    static sweep ref, other;
    run_sweep(m, 1, 0, -1, -1, &ref);
    int events = 0;
    for (int i = 0; i < N; ++i) {
        CHECK_INT(ref.res[i].status, MBK_OK);
        CHECK(ref.res[i].t == T_FINAL);
        CHECK(ref.res[i].steps > 10);
        CHECK(ref.res[i].ny <= NY_MAX);
        events += ref.res[i].y[1] != ref.res[0].y[1];
    }
    CHECK(events > 0); /* members do differ */
    /* every thread count and interface and order: bitwise equal */
    const int threads[] = {1, 2, 4};
    for (int t = 0; t < 3; ++t)
        for (int mode = 0; mode < 4; ++mode) {
            if (t == 0 && mode == 0) continue;
            run_sweep(m, threads[t], mode, -1, -1, &other);
            int same = 0;
            for (int i = 0; i < N; ++i) same += same_result(&ref.res[i], &other.res[i]);
            if (same != N) fprintf(stderr, "threads %d mode %d: %d of %d members equal\n", threads[t], mode, same, N);
            CHECK_INT(same, N);
        }
    /* and each member integrated alone on this thread */
    for (int i = 0; i < N; i += 5) {
        result r;
        run_alone(m, i, &r);
        CHECK(same_result(&ref.res[i], &r));
    }
}

static void test_failures(model *m)
{
    static sweep ref, w;
    run_sweep(m, 1, 0, -1, -1, &ref);
    run_sweep(m, 2, 1, 3, 7, &w);
    for (int i = 0; i < N; ++i) {
        if (i == 3) {
            CHECK_INT(w.res[i].status, MBK_EINVAL);
            CHECK(strstr(w.res[i].msg, "refused by the test's init") != NULL);
        } else if (i == 7) {
            CHECK(w.res[i].status < 0);
            CHECK(strstr(w.res[i].msg, "failing force gave up") != NULL);
            CHECK(w.res[i].t > 0.1 && w.res[i].t < 0.25); /* the last good State */
        } else {
            CHECK(same_result(&ref.res[i], &w.res[i]));
        }
    }
    if (strlen(w.res[7].msg) == 0 || !strstr(w.res[7].msg, "gave up")) fprintf(stderr, "member 7: %s\n", w.res[7].msg);
    /* the count of failures */
    mbk_ensemble *e = mbk_ensemble_create(m->sys, N);
    done_ctx d = {&w, e};
    w.fail_init = 0, w.fail_run = -1;
    pthread_mutex_init(&w.lock, NULL);
    mbk_ensemble_set_threads(e, 2);
    mbk_ensemble_set_integrator(e, "rkmerson", 1e-5);
    CHECK_INT(mbk_ensemble_run(e, 0.05, done_init, member_done, &d), MBK_OK);
    CHECK_INT(mbk_ensemble_get_num_failed(e), 1);
    /* a result callback that aborts ends the run with an error */
    CHECK(mbk_ensemble_run_records(e, 0.05, 8, done_init, member_pack, member_collect, &d) < 0);
    mbk_ensemble_destroy(e);
    pthread_mutex_destroy(&w.lock);
}

static void test_random(void)
{
    const uint32_t c0[4] = {0, 0, 0, 0}, k0[2] = {0, 0};
    const uint32_t c1[4] = {0xffffffffu, 0xffffffffu, 0xffffffffu, 0xffffffffu}, k1[2] = {0xffffffffu, 0xffffffffu};
    const uint32_t c2[4] = {0x243f6a88u, 0x85a308d3u, 0x13198a2eu, 0x03707344u}, k2[2] = {0xa4093822u, 0x299f31d0u};
    uint32_t o[4];
    mbk_philox4x32(c0, k0, o);
    CHECK(o[0] == 0x6627e8d5u && o[1] == 0xe169c58du && o[2] == 0xbc57ac4cu && o[3] == 0x9b00dbd8u);
    mbk_philox4x32(c1, k1, o);
    CHECK(o[0] == 0x408f276du && o[1] == 0x41c83b0eu && o[2] == 0xa20bc7c6u && o[3] == 0x6d5451fdu);
    mbk_philox4x32(c2, k2, o);
    CHECK(o[0] == 0xd16cfe09u && o[1] == 0x94fdccebu && o[2] == 0x5001e420u && o[3] == 0x24126ea1u);
    double su = 0, su2 = 0, sn = 0, sn2 = 0, lo = 1, hi = 0;
    const int n = 200000;
    for (int i = 0; i < n; ++i) {
        double u = mbk_random_uniform(7, (uint64_t)i, 3), z = mbk_random_normal(7, (uint64_t)i, 4);
        lo = fmin(lo, u), hi = fmax(hi, u);
        su += u, su2 += u * u, sn += z, sn2 += z * z;
    }
    CHECK(lo >= 0 && hi < 1);
    CHECK_NEAR(su / n, 0.5, 0.005);
    CHECK_NEAR(su2 / n - (su / n) * (su / n), 1.0 / 12, 0.002);
    CHECK_NEAR(sn / n, 0.0, 0.01);
    CHECK_NEAR(sn2 / n, 1.0, 0.01);
    CHECK(mbk_random_bits(1, 2, 3) == mbk_random_bits(1, 2, 3));
    CHECK(mbk_random_bits(1, 2, 3) != mbk_random_bits(1, 2, 4));
    CHECK(mbk_random_bits(1, 2, 3) != mbk_random_bits(1, 3, 3));
    CHECK(mbk_random_bits(1, 2, 3) != mbk_random_bits(2, 2, 3));
}

static void test_bad_arguments(model *m)
{
    CHECK(mbk_ensemble_create(m->sys, 0) == NULL);
    CHECK_INT(mbk_last_status(), MBK_EINVAL);
    CHECK(mbk_ensemble_create(NULL, 3) == NULL);
    mbk_ensemble *e = mbk_ensemble_create(m->sys, 3);
    CHECK_INT(mbk_ensemble_set_integrator(e, "leapfrog", 1e-3), MBK_EINVAL);
    CHECK_INT(mbk_ensemble_set_integrator(e, "rk4", 0), MBK_EINVAL);
    CHECK_INT(mbk_ensemble_set_integrator(e, "CVODE BDF", 1e-4), MBK_OK);
    CHECK_INT(mbk_ensemble_set_threads(e, -1), MBK_EINVAL);
    CHECK_INT(mbk_ensemble_run(e, 0.0, NULL, NULL, NULL), MBK_EINVAL);
    CHECK_INT(mbk_ensemble_run(e, NAN, NULL, NULL, NULL), MBK_EINVAL);
    mbk_integrator_stats st;
    CHECK_INT(mbk_ensemble_get_member_stats(e, 0, &st), MBK_EINVAL); /* not inside a callback */
    CHECK(mbk_ensemble_get_member_initial_state(e, 0) == NULL);
    mbk_ensemble_destroy(e);
}

/* Many short runs: every record arrives and no run hangs, whatever the timing
   (the coordinator once missed a record that arrived while it asked for more work). */
static int count_collect(void *user, int i, int status, const void *record, size_t size)
{
    (void)status, (void)record, (void)size;
    ((int *)user)[i]++;
    return 0;
}

static int quick_init(void *user, const mbk_system *sys, int i, mbk_state *s)
{
    (void)user, (void)sys, (void)i, (void)s;
    return 0;
}

static void test_many_short_runs(model *m)
{
    int bad = 0;
    for (int run = 0; run < 60; ++run) {
        int n = 1 + run % 4, seen[4] = {0};
        mbk_ensemble *e = mbk_ensemble_create(m->sys, n);
        mbk_ensemble_set_threads(e, 1 + run % 3);
        mbk_ensemble_set_integrator(e, "rk4", 1e-3);
        if (mbk_ensemble_run_records(e, 1e-3, 16, quick_init, NULL, count_collect, seen) != MBK_OK) ++bad;
        for (int i = 0; i < n; ++i) bad += seen[i] != 1;
        mbk_ensemble_destroy(e);
    }
    CHECK_INT(bad, 0);
}

/* A pack or done callback that fails at member 3 (of 12, on 2 threads): the run's status
   and message are the callback's own when it set them (they were once replaced by "the
   result callback returned -9"), and the members counted as run are those whose
   results reached the callback (once only those the coordinator had taken before the
   stop: 0 here). */
typedef struct fail_ctx {
    pthread_mutex_t lock;
    int calls;      /* pack or done calls */
    bool set_error; /* the failing call says why (MBK_EIO), or returns -1 alone */
} fail_ctx;

static int failing_pack(void *user, const mbk_system *sys, int i, const mbk_state *s, int status, void *record,
                        size_t size)
{
    (void)sys, (void)s, (void)status, (void)record, (void)size;
    fail_ctx *f = user;
    pthread_mutex_lock(&f->lock);
    f->calls++;
    pthread_mutex_unlock(&f->lock);
    if (i != 3) return 0;
    return f->set_error ? mbk_set_error(MBK_EIO, "the pack callback cannot store member 3") : -1;
}

static int failing_done(void *user, const mbk_system *sys, int i, const mbk_state *s, int status)
{
    return failing_pack(user, sys, i, s, status, NULL, 0);
}

static void test_callback_failures(model *m)
{
    for (int mode = 0; mode < 3; ++mode) {
        fail_ctx f = {.set_error = mode != 2};
        pthread_mutex_init(&f.lock, NULL);
        mbk_ensemble *e = mbk_ensemble_create(m->sys, 12);
        mbk_ensemble_set_threads(e, 2);
        mbk_ensemble_set_integrator(e, "rk4", 1e-3);
        int rc = mode == 1 ? mbk_ensemble_run(e, 0.01, quick_init, failing_done, &f)
                           : mbk_ensemble_run_records(e, 0.01, 16, quick_init, failing_pack, NULL, &f);
        if (mode != 2) {
            CHECK_INT(rc, MBK_EIO);
            if (!CHECK(strstr(mbk_last_error(), "cannot store member 3") != NULL)) fprintf(stderr, "  %s\n", mbk_last_error());
        } else {
            CHECK_INT(rc, MBK_EUSER);
            CHECK(strstr(mbk_last_error(), "returned -1 (member 3)") != NULL);
        }
        CHECK_INT(mbk_ensemble_get_num_run(e), f.calls);
        CHECK(f.calls >= 1);
        mbk_ensemble_destroy(e);
        pthread_mutex_destroy(&f.lock);
    }
}

int main(void)
{
    model m = build();
    test_random();
    test_bad_arguments(&m);
    test_determinism(&m);
    test_failures(&m);
    test_many_short_runs(&m);
    test_callback_failures(&m);
    mbk_system_destroy(m.sys);
    return mbk_test_finish();
}
