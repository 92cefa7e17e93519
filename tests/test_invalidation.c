/* Staged realization rules: what each change invalidates, stage versions,
 * cache-entry validity (including lazy entries and entries with
 * depends_on < computed_by), Model-stage variables that change the number
 * of q's, State copies that keep their cache, and stale States. */
#include <mbk/mbk.h>
#include <stdlib.h>
#include <string.h>

#include "mbk_test.h"

/* ---- subsystem "probe": one variable of every kind and stage ---------- */

enum { NUM_DISC = MBK_STAGE_REPORT - MBK_STAGE_MODEL + 1 }; /* one discrete var per stage */

enum { C_POS_POS, C_POS_DYN_MARKED, C_POS_DYN, C_VEL_VEL, C_DYN_ACC, C_LAZY_POS, C_LAZY_VEL, NUM_CACHE };

typedef struct probe {
    int disc[NUM_DISC];              /* discrete var invalidating Model + i */
    int cache[NUM_CACHE];            /* cache entries, see enum */
    int calls[MBK_NUM_STAGES];       /* realize op calls per stage */
    int qerr, uerr, udoterr, trig;   /* Instance-stage allocations */
} probe;

static int probe_topology(void *impl, const mbk_subsystem_ctx *c, mbk_state *s)
{
    probe *p = impl;
    int k = mbk_subsystem_ctx_get_index(c);
    const double q0[2] = {0.5, -0.25}, u0[2] = {1.0, 2.0}, z0 = 3.0;
    p->calls[MBK_STAGE_TOPOLOGY]++;
    if (mbk_state_allocate_q(s, k, 2, q0) != 0 || mbk_state_allocate_u(s, k, 2, u0) != 0 ||
        mbk_state_allocate_z(s, k, 1, &z0) != 0)
        return -1;
    for (int i = 0; i < NUM_DISC; ++i) {
        double v = 10.0 + i;
        p->disc[i] = mbk_state_allocate_discrete(s, k, (mbk_stage)(MBK_STAGE_MODEL + i),
                                                 &mbk_value_double, &v);
        if (p->disc[i] != i) return -1;
    }
    static const int dep[NUM_CACHE] = {MBK_STAGE_POSITION, MBK_STAGE_POSITION, MBK_STAGE_POSITION,
                                       MBK_STAGE_VELOCITY, MBK_STAGE_DYNAMICS, MBK_STAGE_POSITION,
                                       MBK_STAGE_VELOCITY};
    static const int by[NUM_CACHE] = {MBK_STAGE_POSITION, MBK_STAGE_DYNAMICS, MBK_STAGE_DYNAMICS,
                                      MBK_STAGE_VELOCITY, MBK_STAGE_ACCELERATION, MBK_STAGE_INFINITY,
                                      MBK_STAGE_INFINITY};
    for (int i = 0; i < NUM_CACHE; ++i) {
        p->cache[i] = mbk_state_allocate_cache(s, k, (mbk_stage)dep[i], (mbk_stage)by[i],
                                               &mbk_value_double, NULL);
        if (p->cache[i] != i) return -1;
    }
    return 0;
}

static int probe_count(void *impl, int stage)
{
    ((probe *)impl)->calls[stage]++;
    return 0;
}

static int probe_model(void *impl, const mbk_subsystem_ctx *c, mbk_state *s)
{
    (void)c; (void)s;
    return probe_count(impl, MBK_STAGE_MODEL);
}

static int probe_instance(void *impl, const mbk_subsystem_ctx *c, mbk_state *s)
{
    probe *p = impl;
    int k = mbk_subsystem_ctx_get_index(c);
    p->qerr = mbk_state_allocate_qerr(s, k, 2);
    p->uerr = mbk_state_allocate_uerr(s, k, 1);
    p->udoterr = mbk_state_allocate_udoterr(s, k, 3);
    p->trig = mbk_state_allocate_event_triggers(s, k, MBK_STAGE_POSITION, 2);
    return probe_count(impl, MBK_STAGE_INSTANCE) || p->qerr || p->uerr || p->udoterr || p->trig;
}

static int probe_time(void *impl, const mbk_subsystem_ctx *c, mbk_state *s)
{
    (void)c; (void)s;
    return probe_count(impl, MBK_STAGE_TIME);
}

static double *cache_d(const mbk_state *s, int k, int i) { return mbk_state_upd_cache(s, k, i); }

static int probe_position(void *impl, const mbk_subsystem_ctx *c, mbk_state *s)
{
    int k = mbk_subsystem_ctx_get_index(c);
    const double *q = mbk_state_get_subsystem_q(s, k);
    *cache_d(s, k, C_POS_POS) = q[0] + q[1];
    double *qerr = mbk_state_upd_subsystem_qerr(s, k);
    qerr[0] = q[0];
    qerr[1] = q[1];
    mbk_state_upd_event_triggers(s, k, MBK_STAGE_POSITION)[0] = q[0] - 1.0;
    mbk_state_upd_event_triggers(s, k, MBK_STAGE_POSITION)[1] = q[1] + 1.0;
    return probe_count(impl, MBK_STAGE_POSITION);
}

static int probe_velocity(void *impl, const mbk_subsystem_ctx *c, mbk_state *s)
{
    int k = mbk_subsystem_ctx_get_index(c);
    const double *u = mbk_state_get_subsystem_u(s, k);
    *cache_d(s, k, C_VEL_VEL) = u[0] * u[1];
    memcpy(mbk_state_upd_subsystem_qdot(s, k), u, 2 * sizeof(double));
    mbk_state_upd_subsystem_uerr(s, k)[0] = u[0] - u[1];
    return probe_count(impl, MBK_STAGE_VELOCITY);
}

static int probe_dynamics(void *impl, const mbk_subsystem_ctx *c, mbk_state *s)
{
    int k = mbk_subsystem_ctx_get_index(c);
    const double *q = mbk_state_get_subsystem_q(s, k);
    *cache_d(s, k, C_POS_DYN_MARKED) = 2.0 * q[0];
    mbk_state_mark_cache_realized(s, k, C_POS_DYN_MARKED);
    *cache_d(s, k, C_POS_DYN) = 3.0 * q[0];
    return probe_count(impl, MBK_STAGE_DYNAMICS);
}

static int probe_acceleration(void *impl, const mbk_subsystem_ctx *c, mbk_state *s)
{
    int k = mbk_subsystem_ctx_get_index(c);
    const double *z = mbk_state_get_subsystem_z(s, k);
    *cache_d(s, k, C_DYN_ACC) = z[0] * z[0];
    double *udot = mbk_state_upd_subsystem_udot(s, k);
    udot[0] = -1.0;
    udot[1] = -2.0;
    mbk_state_upd_subsystem_zdot(s, k)[0] = -z[0];
    memcpy(mbk_state_upd_subsystem_qdotdot(s, k), udot, 2 * sizeof(double));
    mbk_state_upd_subsystem_udoterr(s, k)[2] = 7.0;
    mbk_state_upd_subsystem_multipliers(s, k)[2] = 8.0;
    return probe_count(impl, MBK_STAGE_ACCELERATION);
}

static int probe_report(void *impl, const mbk_subsystem_ctx *c, mbk_state *s)
{
    (void)c; (void)s;
    return probe_count(impl, MBK_STAGE_REPORT);
}

static const mbk_subsystem_ops probe_ops = {
    .name = "probe",
    .realize_topology = probe_topology,
    .realize_model = probe_model,
    .realize_instance = probe_instance,
    .realize_time = probe_time,
    .realize_position = probe_position,
    .realize_velocity = probe_velocity,
    .realize_dynamics = probe_dynamics,
    .realize_acceleration = probe_acceleration,
    .realize_report = probe_report,
};

/* ---- subsystem "rotation": 3 or 4 q depending on a Model-stage flag ---- */

typedef struct rotation {
    int use_euler;   /* discrete (Model): 1 -> 3 angles, 0 -> quaternion */
    int sizes_cache; /* Topology-allocated cache holding the Model-stage q start */
    int model_calls; /* realize_model calls */
} rotation;

static int rotation_topology(void *impl, const mbk_subsystem_ctx *c, mbk_state *s)
{
    rotation *r = impl;
    int k = mbk_subsystem_ctx_get_index(c);
    const int euler = 0;
    r->use_euler = mbk_state_allocate_discrete(s, k, MBK_STAGE_MODEL, &mbk_value_int, &euler);
    r->sizes_cache = mbk_state_allocate_cache(s, k, MBK_STAGE_MODEL, MBK_STAGE_MODEL,
                                              &mbk_value_int, NULL);
    return r->use_euler < 0 || r->sizes_cache < 0;
}

static int rotation_model(void *impl, const mbk_subsystem_ctx *c, mbk_state *s)
{
    rotation *r = impl;
    int k = mbk_subsystem_ctx_get_index(c);
    r->model_calls++;
    int euler = *(const int *)mbk_state_get_discrete(s, k, r->use_euler);
    const double quat[4] = {1, 0, 0, 0}, angles[3] = {0.1, 0.2, 0.3};
    int start = mbk_state_allocate_q(s, k, euler ? 3 : 4, euler ? angles : quat);
    int ustart = mbk_state_allocate_u(s, k, 3, NULL);
    /* Indices found at Model stage live in the State, never in impl. */
    *(int *)mbk_state_upd_cache(s, k, r->sizes_cache) = start;
    return start < 0 || ustart < 0;
}

static const mbk_subsystem_ops rotation_ops = {
    .name = "rotation",
    .realize_topology = rotation_topology,
    .realize_model = rotation_model,
};

/* ---- fixtures ---------------------------------------------------------- */

typedef struct fixture {
    mbk_system *sys;
    probe *p;
    rotation *r;
    int kp, kr; /* subsystem indices */
} fixture;

static void free_impl(void *impl) { free(impl); }

static fixture make_fixture(void)
{
    fixture f;
    mbk_subsystem_ops pops = probe_ops, rops = rotation_ops;
    pops.destroy = rops.destroy = free_impl;
    f.sys = mbk_system_create("invalidation");
    f.p = calloc(1, sizeof *f.p);
    f.r = calloc(1, sizeof *f.r);
    f.kp = mbk_system_add_subsystem(f.sys, &pops, f.p);
    f.kr = mbk_system_add_subsystem(f.sys, &rops, f.r);
    CHECK_INT(mbk_system_realize_topology(f.sys), MBK_OK);
    return f;
}

static mbk_state *new_state(const fixture *f, mbk_stage stage)
{
    mbk_state *s = mbk_state_create();
    CHECK_INT(mbk_state_init(s, f->sys), MBK_OK);
    CHECK_INT(mbk_state_get_stage(s), MBK_STAGE_TOPOLOGY);
    CHECK_INT(mbk_system_realize(f->sys, s, stage), MBK_OK);
    return s;
}

/* Every subsystem's stage and the State's stage equal `want`. */
static void check_stage(const mbk_state *s, mbk_stage want)
{
    CHECK_INT(mbk_state_get_stage(s), want);
    for (int k = 0; k < mbk_state_get_num_subsystems(s); ++k)
        CHECK_INT(mbk_state_get_subsystem_stage(s, k), want);
}

/* ---- tests --------------------------------------------------------------- */

/* Each kind of variable reverts the State to the stage before its own. */
static void test_variable_invalidation(void)
{
    fixture f = make_fixture();
    mbk_state *s = new_state(&f, MBK_STAGE_REPORT);
    check_stage(s, MBK_STAGE_REPORT);

    CHECK_INT(mbk_state_set_time(s, 1.5), MBK_OK);
    check_stage(s, MBK_STAGE_INSTANCE);
    CHECK(mbk_state_get_time(s) == 1.5);

    const double q[6] = {1, 2, 3, 4, 5, 6}, u[5] = {1, 2, 3, 4, 5}, z[1] = {9};
    struct { const char *what; int (*set)(mbk_state *, const double *, int); const double *v; int n; mbk_stage after; } setters[] = {
        {"q", mbk_state_set_q, q, 6, MBK_STAGE_TIME},
        {"u", mbk_state_set_u, u, 5, MBK_STAGE_POSITION},
        {"z", mbk_state_set_z, z, 1, MBK_STAGE_VELOCITY},
    };
    for (size_t i = 0; i < sizeof setters / sizeof setters[0]; ++i) {
        CHECK_INT(mbk_system_realize(f.sys, s, MBK_STAGE_REPORT), MBK_OK);
        CHECK_INT(setters[i].set(s, setters[i].v, setters[i].n), MBK_OK);
        check_stage(s, setters[i].after);
    }
    /* The writable views invalidate like the setters. */
    double *(*upd[])(mbk_state *) = {mbk_state_upd_q, mbk_state_upd_u, mbk_state_upd_z, mbk_state_upd_y};
    const mbk_stage upd_after[] = {MBK_STAGE_TIME, MBK_STAGE_POSITION, MBK_STAGE_VELOCITY, MBK_STAGE_TIME};
    for (int i = 0; i < 4; ++i) {
        CHECK_INT(mbk_system_realize(f.sys, s, MBK_STAGE_REPORT), MBK_OK);
        CHECK(upd[i](s) != NULL);
        check_stage(s, upd_after[i]);
    }
    double *(*upd_sub[])(mbk_state *, int) = {mbk_state_upd_subsystem_q, mbk_state_upd_subsystem_u,
                                              mbk_state_upd_subsystem_z};
    for (int i = 0; i < 3; ++i) {
        CHECK_INT(mbk_system_realize(f.sys, s, MBK_STAGE_REPORT), MBK_OK);
        CHECK(upd_sub[i](s, f.kp) != NULL);
        check_stage(s, upd_after[i]);
    }
    /* A discrete variable of stage g reverts every subsystem to g - 1. */
    for (int i = 0; i < NUM_DISC; ++i) {
        mbk_stage g = (mbk_stage)(MBK_STAGE_MODEL + i);
        CHECK_INT(mbk_system_realize(f.sys, s, MBK_STAGE_REPORT), MBK_OK);
        CHECK_INT(mbk_state_get_discrete_stage(s, f.kp, f.p->disc[i]), g);
        double v = 100.0 + i;
        CHECK_INT(mbk_state_set_discrete(s, f.kp, f.p->disc[i], &mbk_value_double, &v), MBK_OK);
        check_stage(s, (mbk_stage)(g - 1));
        CHECK(*(const double *)mbk_state_get_discrete(s, f.kp, f.p->disc[i]) == v);
        /* get never invalidates */
        CHECK_INT(mbk_system_realize(f.sys, s, MBK_STAGE_REPORT), MBK_OK);
        CHECK(mbk_state_get_discrete(s, f.kp, f.p->disc[i]) != NULL);
        check_stage(s, MBK_STAGE_REPORT);
    }
    mbk_state_destroy(s);
    mbk_system_destroy(f.sys);
}

/* Re-realizing calls exactly the ops of the invalidated stages. */
static void test_realize_calls_only_what_changed(void)
{
    fixture f = make_fixture();
    mbk_state *s = new_state(&f, MBK_STAGE_REPORT);
    int before[MBK_NUM_STAGES];
    memcpy(before, f.p->calls, sizeof before);
    CHECK_INT(mbk_system_realize(f.sys, s, MBK_STAGE_REPORT), MBK_OK);
    CHECK(memcmp(before, f.p->calls, sizeof before) == 0);
    CHECK_INT(mbk_system_realize(f.sys, s, MBK_STAGE_POSITION), MBK_OK); /* backwards: no-op */
    check_stage(s, MBK_STAGE_REPORT);

    mbk_state_upd_u(s)[0] = 4.0;
    CHECK_INT(mbk_system_realize(f.sys, s, MBK_STAGE_REPORT), MBK_OK);
    for (int g = MBK_STAGE_TOPOLOGY; g <= MBK_STAGE_REPORT; ++g)
        CHECK_INT(f.p->calls[g] - before[g], g >= MBK_STAGE_VELOCITY ? 1 : 0);
    mbk_state_destroy(s);
    mbk_system_destroy(f.sys);
}

/* Changing stage g bumps the versions of g..Report in every subsystem and no others. */
static void test_stage_versions(void)
{
    fixture f = make_fixture();
    mbk_state *s = new_state(&f, MBK_STAGE_REPORT);
    for (int g = MBK_STAGE_MODEL; g <= MBK_STAGE_REPORT; ++g) {
        long v[2][MBK_NUM_STAGES];
        for (int k = 0; k < 2; ++k)
            for (int j = 0; j < MBK_NUM_STAGES; ++j) v[k][j] = mbk_state_get_stage_version(s, k, (mbk_stage)j);
        CHECK_INT(mbk_state_invalidate(s, (mbk_stage)g), MBK_OK);
        for (int k = 0; k < 2; ++k)
            for (int j = 0; j < MBK_NUM_STAGES; ++j)
                CHECK_INT(mbk_state_get_stage_version(s, k, (mbk_stage)j) - v[k][j], j >= g ? 1 : 0);
        CHECK_INT(mbk_system_realize(f.sys, s, MBK_STAGE_REPORT), MBK_OK);
    }
    mbk_state_destroy(s);
    mbk_system_destroy(f.sys);
}

static bool valid(const mbk_state *s, int k, int i) { return mbk_state_is_cache_realized(s, k, i); }

/* Which cache entries stay valid after each kind of change. */
static void test_cache_validity(void)
{
    fixture f = make_fixture();
    int k = f.kp;
    mbk_state *s = new_state(&f, MBK_STAGE_TIME);
    /* Nothing computed yet: reading fails and says what to realize. */
    CHECK(mbk_state_get_cache(s, k, C_POS_POS) == NULL);
    CHECK_INT(mbk_last_status(), MBK_ESTAGE);
    CHECK(strstr(mbk_last_error(), "Position") != NULL);

    CHECK_INT(mbk_system_realize(f.sys, s, MBK_STAGE_REPORT), MBK_OK);
    for (int i = 0; i < NUM_CACHE; ++i) CHECK(valid(s, k, i) == (i != C_LAZY_POS && i != C_LAZY_VEL));
    CHECK(*(const double *)mbk_state_get_cache(s, k, C_POS_POS) == 0.5 - 0.25);
    CHECK(mbk_state_get_cache(s, k, C_LAZY_POS) == NULL);
    CHECK_INT(mbk_last_status(), MBK_ESTAGE);
    CHECK(strstr(mbk_last_error(), "lazy") != NULL);

    /* Compute the lazy entries on demand, as the Guide's getCE() does. */
    *cache_d(s, k, C_LAZY_POS) = 42.0;
    mbk_state_mark_cache_realized(s, k, C_LAZY_POS);
    *cache_d(s, k, C_LAZY_VEL) = 43.0;
    mbk_state_mark_cache_realized(s, k, C_LAZY_VEL);
    CHECK(valid(s, k, C_LAZY_POS) && valid(s, k, C_LAZY_VEL));
    CHECK(*(const double *)mbk_state_get_cache(s, k, C_LAZY_POS) == 42.0);

    /* z change (Dynamics): Position- and Velocity-dependent results survive. */
    mbk_state_upd_z(s)[0] = 5.0;
    CHECK(valid(s, k, C_POS_POS) && valid(s, k, C_VEL_VEL) && valid(s, k, C_LAZY_POS) &&
          valid(s, k, C_LAZY_VEL) && valid(s, k, C_POS_DYN_MARKED));
    CHECK(!valid(s, k, C_DYN_ACC));
    CHECK(!valid(s, k, C_POS_DYN)); /* computed by Dynamics, not marked: gone with the stage */

    /* u change (Velocity): lazy Position entry and the marked Position->Dynamics entry survive. */
    CHECK_INT(mbk_system_realize(f.sys, s, MBK_STAGE_REPORT), MBK_OK);
    mbk_state_upd_u(s)[1] = 1.0;
    CHECK(valid(s, k, C_POS_POS) && valid(s, k, C_LAZY_POS) && valid(s, k, C_POS_DYN_MARKED));
    CHECK(*(const double *)mbk_state_get_cache(s, k, C_POS_DYN_MARKED) == 2.0 * 0.5);
    CHECK(!valid(s, k, C_VEL_VEL) && !valid(s, k, C_LAZY_VEL) && !valid(s, k, C_POS_DYN) &&
          !valid(s, k, C_DYN_ACC));

    /* q change (Position): every entry depending on Position or later is invalid. */
    CHECK_INT(mbk_system_realize(f.sys, s, MBK_STAGE_REPORT), MBK_OK);
    mbk_state_upd_q(s)[0] = 0.75;
    for (int i = 0; i < NUM_CACHE; ++i) CHECK(!valid(s, k, i));
    CHECK(mbk_state_get_cache(s, k, C_POS_DYN_MARKED) == NULL);

    /* Re-realizing brings the computed entries back with new values, not the lazy ones. */
    CHECK_INT(mbk_system_realize(f.sys, s, MBK_STAGE_REPORT), MBK_OK);
    CHECK(*(const double *)mbk_state_get_cache(s, k, C_POS_DYN) == 3.0 * 0.75);
    CHECK(!valid(s, k, C_LAZY_POS));

    /* A lazy entry can be marked once its inputs' stage is realized, not before. */
    mbk_state_upd_q(s);
    CHECK_INT(mbk_system_realize(f.sys, s, MBK_STAGE_INSTANCE), MBK_OK);
    mbk_clear_error();
    mbk_state_mark_cache_realized(s, k, C_LAZY_VEL); /* needs Position (= Velocity - 1) */
    CHECK_INT(mbk_last_status(), MBK_ESTAGE);
    CHECK(!valid(s, k, C_LAZY_VEL));
    mbk_clear_error();
    mbk_state_mark_cache_realized(s, k, C_LAZY_POS); /* Time (= Position - 1) is enough */
    CHECK_INT(mbk_last_status(), MBK_OK);
    CHECK(valid(s, k, C_LAZY_POS));

    /* Time change: Instance results remain, Time and later go. */
    CHECK_INT(mbk_system_realize(f.sys, s, MBK_STAGE_REPORT), MBK_OK);
    CHECK_INT(mbk_state_set_time(s, 2.0), MBK_OK);
    CHECK(!valid(s, k, C_POS_POS));
    CHECK(mbk_state_is_cache_realized(s, f.kr, f.r->sizes_cache)); /* Model entry survives */
    mbk_state_destroy(s);
    mbk_system_destroy(f.sys);
}

/* Derivatives, constraint errors, multipliers and witnesses follow their stages. */
static void test_derived_arrays(void)
{
    fixture f = make_fixture();
    mbk_state *s = new_state(&f, MBK_STAGE_INSTANCE);
    CHECK_INT(mbk_state_get_nqerr(s), 2);
    CHECK_INT(mbk_state_get_nuerr(s), 1);
    CHECK_INT(mbk_state_get_nudoterr(s), 3);
    CHECK_INT(mbk_state_get_num_multipliers(s), 3);
    CHECK_INT(mbk_state_get_num_event_triggers(s, MBK_STAGE_POSITION), 2);
    CHECK_INT(mbk_state_get_num_event_triggers(s, MBK_STAGE_VELOCITY), 0);
    CHECK(mbk_state_get_qerr(s) == NULL && mbk_state_get_qdot(s) == NULL);

    CHECK_INT(mbk_system_realize(f.sys, s, MBK_STAGE_POSITION), MBK_OK);
    CHECK(mbk_state_get_qerr(s)[0] == 0.5 && mbk_state_get_qerr(s)[1] == -0.25);
    CHECK(mbk_state_get_event_triggers(s, MBK_STAGE_POSITION)[0] == -0.5);
    CHECK(mbk_state_get_uerr(s) == NULL && mbk_state_get_qdot(s) == NULL);

    CHECK_INT(mbk_system_realize(f.sys, s, MBK_STAGE_VELOCITY), MBK_OK);
    CHECK(mbk_state_get_qdot(s)[1] == 2.0 && mbk_state_get_uerr(s)[0] == -1.0);
    CHECK(mbk_state_get_udot(s) == NULL && mbk_state_get_multipliers(s) == NULL);

    CHECK_INT(mbk_system_realize(f.sys, s, MBK_STAGE_ACCELERATION), MBK_OK);
    CHECK(mbk_state_get_udot(s)[1] == -2.0 && mbk_state_get_zdot(s)[0] == -3.0);
    CHECK(mbk_state_get_qdotdot(s)[0] == -1.0);
    CHECK(mbk_state_get_udoterr(s)[2] == 7.0 && mbk_state_get_multipliers(s)[2] == 8.0);
    /* ydot = [qdot udot zdot] over all subsystems: probe's 2 q come first. */
    int nq = mbk_state_get_nq(s), nu = mbk_state_get_nu(s);
    CHECK(mbk_state_get_ydot(s)[nq + 1] == -2.0 && mbk_state_get_ydot(s)[nq + nu] == -3.0);

    /* An Instance-stage change re-allocates the same slots rather than adding more. */
    double v = 1.0;
    CHECK_INT(mbk_state_set_discrete(s, f.kp, f.p->disc[MBK_STAGE_INSTANCE - MBK_STAGE_MODEL],
                                     &mbk_value_double, &v), MBK_OK);
    check_stage(s, MBK_STAGE_MODEL);
    CHECK(mbk_state_get_nqerr(s) < 0);
    CHECK_INT(mbk_system_realize(f.sys, s, MBK_STAGE_REPORT), MBK_OK);
    CHECK_INT(mbk_state_get_nqerr(s), 2);
    CHECK_INT(mbk_state_get_num_event_triggers(s, MBK_STAGE_POSITION), 2);
    mbk_state_destroy(s);
    mbk_system_destroy(f.sys);
}

/* A Model-stage flag chooses 3 or 4 q; values allocated at Topology survive. */
static void test_model_stage_changes_sizes(void)
{
    fixture f = make_fixture();
    mbk_state *s = new_state(&f, MBK_STAGE_MODEL);
    CHECK_INT(mbk_state_get_nq(s), 2 + 4);
    CHECK_INT(mbk_state_get_subsystem_nq(s, f.kr), 4);
    CHECK_INT(mbk_state_get_subsystem_q_start(s, f.kr), 2);
    CHECK(mbk_state_get_subsystem_q(s, f.kr)[0] == 1.0);
    CHECK_INT(*(const int *)mbk_state_get_cache(s, f.kr, f.r->sizes_cache), 0);

    /* Keep a probe value and a probe discrete variable to see they survive. */
    mbk_state_upd_subsystem_q(s, f.kp)[1] = -7.0;
    double dv = 55.0;
    CHECK_INT(mbk_state_set_discrete(s, f.kp, f.p->disc[3], &mbk_value_double, &dv), MBK_OK);

    int *flag = mbk_state_upd_discrete_as(s, f.kr, f.r->use_euler, &mbk_value_int);
    CHECK(flag != NULL);
    *flag = 1;
    check_stage(s, MBK_STAGE_TOPOLOGY);
    CHECK(mbk_state_get_nq(s) < 0 && mbk_last_status() == MBK_ESTAGE);
    CHECK(mbk_state_get_q(s) == NULL);

    int calls = f.r->model_calls;
    CHECK_INT(mbk_system_realize(f.sys, s, MBK_STAGE_REPORT), MBK_OK);
    CHECK_INT(f.r->model_calls - calls, 1);
    CHECK_INT(mbk_state_get_nq(s), 2 + 3);
    CHECK_INT(mbk_state_get_nu(s), 2 + 3);
    CHECK_INT(mbk_state_get_ny(s), 5 + 5 + 1);
    CHECK(mbk_state_get_subsystem_q(s, f.kr)[2] == 0.3);
    CHECK(mbk_state_get_subsystem_q(s, f.kp)[1] == -7.0);
    CHECK(*(const double *)mbk_state_get_discrete(s, f.kp, f.p->disc[3]) == 55.0);
    CHECK(*(const int *)mbk_state_get_discrete(s, f.kr, f.r->use_euler) == 1);
    CHECK_INT(mbk_state_get_subsystem_u_start(s, f.kr), 2);
    CHECK_INT(mbk_state_get_subsystem_z_start(s, f.kp), 0);

    /* Back to quaternions. */
    int zero = 0;
    CHECK_INT(mbk_state_set_discrete(s, f.kr, f.r->use_euler, &mbk_value_int, &zero), MBK_OK);
    CHECK_INT(mbk_system_realize(f.sys, s, MBK_STAGE_MODEL), MBK_OK);
    CHECK_INT(mbk_state_get_nq(s), 6);
    mbk_state_destroy(s);
    mbk_system_destroy(f.sys);
}

/* A value type that owns heap memory, to check copies are deep. */
typedef struct owned { double *data; } owned;
static int owned_live;
static void owned_copy(void *dst, const void *src)
{
    const owned *o = src;
    owned *d = dst;
    d->data = NULL;
    if (o->data) {
        d->data = malloc(sizeof(double));
        *d->data = *o->data;
        owned_live++;
    }
}
static void owned_destroy(void *v)
{
    owned *o = v;
    if (o->data) owned_live--;
    free(o->data);
    o->data = NULL;
}
static const mbk_value_type owned_type = {"owned", sizeof(owned), _Alignof(owned), owned_copy, owned_destroy, NULL, NULL};

static int owner_topology(void *impl, const mbk_subsystem_ctx *c, mbk_state *s)
{
    (void)impl;
    double x = 3.25;
    owned init = {&x};
    return mbk_state_allocate_discrete(s, mbk_subsystem_ctx_get_index(c), MBK_STAGE_INSTANCE,
                                       &owned_type, &init) != 0;
}

/* Copies keep values and cache validity; values with copy ops are deep-copied. */
static void test_copy(void)
{
    fixture f = make_fixture();
    static const mbk_subsystem_ops owner_ops = {.name = "owner", .realize_topology = owner_topology};
    int ko = mbk_system_add_subsystem(f.sys, &owner_ops, NULL);
    CHECK_INT(mbk_system_realize_topology(f.sys), MBK_OK);
    CHECK_INT(owned_live, 1); /* the default State's value */

    mbk_state *a = new_state(&f, MBK_STAGE_REPORT);
    CHECK_INT(owned_live, 2);
    *cache_d(a, f.kp, C_LAZY_POS) = 11.0;
    mbk_state_mark_cache_realized(a, f.kp, C_LAZY_POS);

    mbk_state *b = mbk_state_create();
    CHECK_INT(mbk_state_copy(b, a), MBK_OK);
    CHECK_INT(owned_live, 3);
    check_stage(b, MBK_STAGE_REPORT);
    /* Read the copy's cache without realizing it. */
    for (int i = 0; i < NUM_CACHE; ++i) {
        const double *va = mbk_state_get_cache(a, f.kp, i), *vb = mbk_state_get_cache(b, f.kp, i);
        if (i == C_LAZY_VEL) CHECK(!va && !vb); /* never computed in a: not valid in b either */
        else CHECK(va && vb && *va == *vb && va != vb);
    }
    CHECK(mbk_state_get_udot(b)[0] == -1.0);
    CHECK(mbk_state_get_size_in_bytes(b) == mbk_state_get_size_in_bytes(a));

    /* Changing the copy leaves the original alone. */
    mbk_state_upd_q(b)[0] = 9.0;
    CHECK(mbk_state_get_q(a)[0] == 0.5);
    check_stage(a, MBK_STAGE_REPORT);
    const owned *oa = mbk_state_get_discrete(a, ko, 0), *ob = mbk_state_get_discrete(b, ko, 0);
    CHECK(oa->data != ob->data && *oa->data == 3.25 && *ob->data == 3.25);
    *((owned *)mbk_state_upd_discrete(b, ko, 0))->data = 1.0;
    CHECK(*oa->data == 3.25);

    /* Copying over a used State destroys its old values first. */
    CHECK_INT(mbk_state_copy(b, a), MBK_OK);
    CHECK_INT(owned_live, 3);
    mbk_state_destroy(b);
    mbk_state_destroy(a);
    CHECK_INT(owned_live, 1);
    mbk_system_destroy(f.sys);
    CHECK_INT(owned_live, 0);
}

/* States go stale when the topology changes; a twin System accepts them. */
static void test_stale_states(void)
{
    fixture f = make_fixture(), twin = make_fixture();
    mbk_state *s = new_state(&f, MBK_STAGE_REPORT);

    /* Same topology, different System object: accepted. */
    mbk_state_upd_q(s);
    CHECK_INT(mbk_system_realize(twin.sys, s, MBK_STAGE_REPORT), MBK_OK);

    long v = mbk_system_get_topology_version(f.sys);
    mbk_system_invalidate_subsystem_topology(f.sys, f.kp);
    CHECK_INT(mbk_system_get_topology_version(f.sys), v + 1);
    CHECK(!mbk_system_is_topology_realized(f.sys));
    mbk_state_upd_q(s);
    CHECK_INT(mbk_system_realize(f.sys, s, MBK_STAGE_POSITION), MBK_ESTALE);
    CHECK(strstr(mbk_last_error(), "mbk_system_realize_topology") != NULL);

    /* Realized again, the old State is still stale: it was made for the old version. */
    CHECK_INT(mbk_system_realize_topology(f.sys), MBK_OK);
    CHECK_INT(mbk_system_realize(f.sys, s, MBK_STAGE_POSITION), MBK_ESTALE);
    CHECK(strstr(mbk_last_error(), "mbk_state_init") != NULL);
    CHECK_INT(mbk_system_calc_energy(f.sys, s, NULL, NULL), MBK_ESTALE);
    CHECK_INT(mbk_state_init(s, f.sys), MBK_OK);
    CHECK_INT(mbk_system_realize(f.sys, s, MBK_STAGE_REPORT), MBK_OK);

    /* A System with another topology refuses it. */
    mbk_system *other = mbk_system_create("other");
    static const mbk_subsystem_ops rot = {.name = "rotation", .realize_topology = rotation_topology,
                                          .realize_model = rotation_model};
    rotation r = {0};
    mbk_system_add_subsystem(other, &rot, &r);
    CHECK_INT(mbk_system_realize_topology(other), MBK_OK);
    CHECK_INT(mbk_system_realize(other, s, MBK_STAGE_REPORT), MBK_ESTALE);

    /* Adding a subsystem is a topology change too. */
    static const mbk_subsystem_ops empty = {.name = "empty"};
    mbk_system_add_subsystem(twin.sys, &empty, NULL);
    CHECK(!mbk_system_is_topology_realized(twin.sys));
    CHECK_INT(mbk_system_realize(twin.sys, s, MBK_STAGE_REPORT), MBK_ESTALE);
    mbk_state_destroy(s);
    mbk_system_destroy(other);
    mbk_system_destroy(twin.sys);
    mbk_system_destroy(f.sys);
}

int main(void)
{
    test_variable_invalidation();
    test_realize_calls_only_what_changed();
    test_stage_versions();
    test_cache_validity();
    test_derived_arrays();
    test_model_stage_changes_sizes();
    test_copy();
    test_stale_states();
    return mbk_test_finish();
}
