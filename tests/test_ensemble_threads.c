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
 */
#define _POSIX_C_SOURCE 200809L
#include <mbk/mbk.h>
#include <pthread.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "mbk_test.h"

enum { N = 12, NY_MAX = 32 };
static const uint64_t SEED = 20240917u;
static const double T_FINAL = 0.6;

typedef struct model {
    mbk_system *sys;
    int crank, coupler, rocker, ball, gravity, contact, fail_force;
} model;

typedef struct result {
    int status;
    long steps;
    int ny;
    double t;
    double y[NY_MAX];
    char msg[512];
} result;

/* ---- the model ------------------------------------------------------------ */

static double sphere_height(void *user, const mbk_system *sys, const mbk_state *s)
{
    const model *m = user;
    mbk_transform X;
    mbk_matter_get_body_transform(mbk_multibody_get_matter(sys), s, m->ball, &X);
    return X.p.z - 0.3;
}

static int reverse_crank(void *user, const mbk_system *sys, mbk_state *s, mbk_event_result *r)
{
    (void)user, (void)sys;
    double *u = mbk_state_upd_u(s);
    u[0] = -0.5 * u[0];
    r->lowest_modified = MBK_STAGE_VELOCITY;
    return 0;
}

static int scheduled_kick(void *user, const mbk_system *sys, mbk_state *s, mbk_event_result *r)
{
    (void)user, (void)sys;
    double *u = mbk_state_upd_u(s);
    u[1] += 0.25;
    r->lowest_modified = MBK_STAGE_VELOCITY;
    return 0;
}

/* A custom force that fails once t > 0.2 while its Instance-stage "armed" flag is set. */
typedef struct failing {
    int armed_var, sub;
} failing;

static int failing_topology(void *impl, const mbk_subsystem_ctx *c, mbk_state *s)
{
    failing *f = impl;
    const bool off = false;
    f->sub = mbk_subsystem_ctx_get_index(c);
    f->armed_var = mbk_state_allocate_discrete(s, f->sub, MBK_STAGE_INSTANCE, &mbk_value_bool, &off);
    return f->armed_var < 0 ? -1 : 0;
}

static int failing_force(void *impl, const mbk_force_ctx *c, const mbk_state *s, mbk_spatial_vec *F, double *tau)
{
    (void)c, (void)F, (void)tau;
    const failing *f = impl;
    const bool *armed = mbk_state_get_discrete(s, f->sub, f->armed_var);
    if (*armed && mbk_state_get_time(s) > 0.2) return mbk_set_error(MBK_EUSER, "the test's failing force gave up");
    return 0;
}

static failing failing_impl;

static model build(void)
{
    model m;
    memset(&m, 0, sizeof m);
    m.sys = mbk_multibody_create("ensemble-test");
    mbk_matter *mt = mbk_multibody_upd_matter(m.sys);
    mbk_forces *f = mbk_multibody_upd_forces(m.sys);
    const double len[3] = {0.4, 1.0, 0.8}, mass[3] = {0.5, 1.0, 0.8};
    mbk_transform I = mbk_transform_identity();
    int ids[3];
    for (int i = 0; i < 3; ++i) {
        double L = len[i], mm = mass[i];
        mbk_mass_props mp = mbk_mass_props_from_central(mm, mbk_vec3_make(L / 2, 0, 0),
                                                        mbk_mat33_diag(mm * 0.0004, mm * L * L / 12, mm * L * L / 12));
        mbk_transform X_PF = I;
        int parent = 0;
        if (i == 1) parent = ids[0], X_PF.p = mbk_vec3_make(len[0], 0, 0);
        if (i == 2) X_PF.p = mbk_vec3_make(1.0, 0, 0);
        ids[i] = mbk_matter_add_body(mt, parent, &X_PF, &mp, &I, mbk_mobilizer_pin());
    }
    m.crank = ids[0], m.coupler = ids[1], m.rocker = ids[2];
    mbk_constraint_add_ball(mt, m.coupler, mbk_vec3_make(len[1], 0, 0), m.rocker, mbk_vec3_make(len[2], 0, 0));
    mbk_mass_props ball = mbk_mass_props_from_central(0.3, mbk_vec3_zero(), mbk_mat33_diag(1.2e-3, 1.2e-3, 1.2e-3));
    mbk_transform X_ball = mbk_transform_from_p(mbk_vec3_make(3, 0, 0));
    m.ball = mbk_matter_add_body(mt, 0, &X_ball, &ball, &I, mbk_mobilizer_free());
    m.gravity = mbk_force_add_gravity(f, mbk_vec3_make(0, -2.0, -9.81));
    mbk_force_set_name(f, m.gravity, "gravity");
    const double hc[6] = {2e6, 0.5, 0.8, 0.6, 0.1, 0.05};
    m.contact = mbk_force_add_hunt_crossley_sphere(f, m.ball, mbk_vec3_zero(), 0.1, 0.0, hc);
    mbk_force_set_name(f, m.contact, "contact");
    const mbk_force_ops fops = {.name = "failing", .calc_force = failing_force, .realize_topology = failing_topology};
    m.fail_force = mbk_force_add_custom(f, &fops, &failing_impl);
    static model keep; /* the event callbacks' user data outlives build() */
    keep = m;
    mbk_system_add_event_handler(m.sys, MBK_STAGE_POSITION, MBK_FALLING, sphere_height, reverse_crank, &keep);
    mbk_system_add_scheduled_event(m.sys, 0.35, scheduled_kick, NULL);
    if (mbk_system_realize_topology(m.sys) < 0) {
        fprintf(stderr, "topology: %s\n", mbk_last_error());
        exit(1);
    }
    return m;
}

/* ---- members ------------------------------------------------------------- */

typedef struct sweep {
    model *m;
    int fail_init, fail_run; /* members made to fail (-1: none) */
    result res[N];
    pthread_mutex_t lock;
    int calls[N];
} sweep;

static int member_init(void *user, const mbk_system *sys, int i, mbk_state *s)
{
    sweep *w = user;
    const model *m = w->m;
    if (i == w->fail_init) return mbk_set_error(MBK_EINVAL, "member %d: refused by the test's init", i);
    const mbk_matter *mt = mbk_multibody_get_matter(sys);
    const mbk_forces *f = mbk_multibody_get_forces(sys);
    double *q = mbk_state_upd_q(s), *u = mbk_state_upd_u(s);
    q[0] = 0.5, q[1] = -0.2, q[2] = 1.4;
    u[0] = 2.0 + mbk_random_uniform(SEED, (uint64_t)i, 0);
    int qb = mbk_matter_get_body_q_start(mt, s, m->ball);
    q[qb + 6] = 0.5 + 0.3 * mbk_random_uniform(SEED, (uint64_t)i, 1); /* height */
    int ub = mbk_matter_get_body_u_start(mt, s, m->ball);
    u[ub + 3] = 0.2 * mbk_random_normal(SEED, (uint64_t)i, 2);
    if (mbk_force_set_gravity(f, s, m->gravity, mbk_vec3_make(0, -2.0, -9.81 + mbk_random_normal(SEED, (uint64_t)i, 3))) < 0)
        return -1;
    double hc[6];
    mbk_force_get_parameters(f, s, m->contact, hc, 6);
    hc[0] *= 1.0 + 0.5 * mbk_random_uniform(SEED, (uint64_t)i, 4);
    if (mbk_force_set_parameters(f, s, m->contact, hc, 6) < 0) return -1;
    mbk_mass_props mp;
    mbk_matter_get_state_body_mass_props(mt, s, m->coupler, &mp);
    mp.mass *= 1.0 + 0.2 * mbk_random_uniform(SEED, (uint64_t)i, 5);
    if (mbk_matter_set_body_mass_props(mt, s, m->coupler, &mp) < 0) return -1;
    if (i == w->fail_run) {
        bool on = true;
        if (mbk_state_set_discrete(s, mbk_forces_get_subsystem_index(f), failing_impl.armed_var, &mbk_value_bool, &on) < 0)
            return -1;
    }
    if (mbk_system_realize(sys, s, MBK_STAGE_INSTANCE) < 0) return -1;
    bool locked[3] = {true, false, false};
    double *lk = NULL;
    (void)lk;
    bool *all = calloc((size_t)mbk_state_get_nq(s), sizeof(bool));
    if (!all) return -1;
    memcpy(all, locked, sizeof locked);
    int rc = mbk_system_assemble_locked(sys, s, 1e-12, all);
    free(all);
    return rc < 0 ? rc : 0;
}

static void fill(result *r, const mbk_ensemble *e, int i, const mbk_state *s, int status)
{
    memset(r, 0, sizeof *r);
    r->status = status;
    mbk_integrator_stats st;
    if (mbk_ensemble_get_member_stats(e, i, &st) == MBK_OK) r->steps = st.steps_taken;
    r->ny = mbk_state_get_ny(s);
    r->t = mbk_state_get_time(s);
    if (r->ny > NY_MAX) r->ny = NY_MAX;
    memcpy(r->y, mbk_state_get_y(s), sizeof(double) * (size_t)r->ny);
    if (status < 0) snprintf(r->msg, sizeof r->msg, "%s", mbk_last_error());
}

typedef struct done_ctx {
    sweep *w;
    mbk_ensemble *e;
} done_ctx;

static int member_done(void *user, const mbk_system *sys, int i, const mbk_state *s, int status)
{
    (void)sys;
    done_ctx *d = user;
    fill(&d->w->res[i], d->e, i, s, status); /* each member its own slot: no lock */
    pthread_mutex_lock(&d->w->lock);
    d->w->calls[i]++;
    pthread_mutex_unlock(&d->w->lock);
    return 0;
}

static int done_init(void *user, const mbk_system *sys, int i, mbk_state *s)
{
    return member_init(((done_ctx *)user)->w, sys, i, s);
}

static int member_pack(void *user, const mbk_system *sys, int i, const mbk_state *s, int status, void *record,
                       size_t size)
{
    (void)sys;
    done_ctx *d = user;
    if (size != sizeof(result)) return -1;
    fill(record, d->e, i, s, status);
    return 0;
}

static int member_collect(void *user, int i, int status, const void *record, size_t size)
{
    done_ctx *d = user;
    if (size != sizeof(result) || ((const result *)record)->status != status) return -1;
    memcpy(&d->w->res[i], record, size);
    d->w->calls[i]++; /* the calling thread only */
    return 0;
}

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
    mbk_ensemble_set_threads(e, 2);
    mbk_ensemble_set_integrator(e, "rkmerson", 1e-5);
    CHECK_INT(mbk_ensemble_run(e, 0.05, done_init, member_done, &d), MBK_OK);
    CHECK_INT(mbk_ensemble_get_num_failed(e), 1);
    /* a result callback that aborts ends the run with an error */
    CHECK(mbk_ensemble_run_records(e, 0.05, 8, done_init, member_pack, member_collect, &d) < 0);
    mbk_ensemble_destroy(e);
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

int main(void)
{
    model m = build();
    test_random();
    test_bad_arguments(&m);
    test_determinism(&m);
    test_failures(&m);
    mbk_system_destroy(m.sys);
    return mbk_test_finish();
}
