/* The ensemble tests' model and members (tests/test_ensemble_threads.c and,
 * under MPI, tests/mpi/test_ensemble_mpi.c): a four-bar closed by a ball
 * constraint, a free sphere with Hunt-Crossley contact on the ground, a
 * triggered event (the crank reverses when the sphere passes a height) and a
 * scheduled event; members differ in initial conditions, gravity, contact
 * stiffness and the coupler's mass, drawn with mbk_random_*. */
#ifndef MBK_TEST_ENSEMBLE_MODEL_H
#define MBK_TEST_ENSEMBLE_MODEL_H

#include <mbk/mbk.h>
#include <pthread.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "test_models.h"

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
    int ids[3];
    m.gravity = builtin_fourbar_add(m.sys, mbk_vec3_make(0, -2.0, -9.81), ids);
    mbk_force_set_name(f, m.gravity, "gravity");
    m.crank = ids[0], m.coupler = ids[1], m.rocker = ids[2];
    mbk_transform I = mbk_transform_identity();
    mbk_mass_props ball = mbk_mass_props_from_central(0.3, mbk_vec3_zero(), mbk_mat33_diag(1.2e-3, 1.2e-3, 1.2e-3));
    mbk_transform X_ball = mbk_transform_from_p(mbk_vec3_make(3, 0, 0));
    m.ball = mbk_matter_add_body(mt, 0, &X_ball, &ball, &I, mbk_mobilizer_free());
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

static inline int member_init(void *user, const mbk_system *sys, int i, mbk_state *s)
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

static inline void fill(result *r, const mbk_ensemble *e, int i, const mbk_state *s, int status)
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

static inline int member_done(void *user, const mbk_system *sys, int i, const mbk_state *s, int status)
{
    (void)sys;
    done_ctx *d = user;
    fill(&d->w->res[i], d->e, i, s, status); /* each member its own slot: no lock */
    pthread_mutex_lock(&d->w->lock);
    d->w->calls[i]++;
    pthread_mutex_unlock(&d->w->lock);
    return 0;
}

static inline int done_init(void *user, const mbk_system *sys, int i, mbk_state *s)
{
    return member_init(((done_ctx *)user)->w, sys, i, s);
}

static inline int member_pack(void *user, const mbk_system *sys, int i, const mbk_state *s, int status, void *record,
                       size_t size)
{
    (void)sys;
    done_ctx *d = user;
    if (size != sizeof(result)) return -1;
    fill(record, d->e, i, s, status);
    return 0;
}

static inline int member_collect(void *user, int i, int status, const void *record, size_t size)
{
    done_ctx *d = user;
    if (size != sizeof(result) || ((const result *)record)->status != status) return -1;
    memcpy(&d->w->res[i], record, size);
    d->w->calls[i]++; /* the calling thread only */
    return 0;
}


#endif
