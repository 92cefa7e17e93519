/* bench_mbk.c - the mbk side of the benchmark.
 *
 * Gravity is the built-in element (mbk_force_add_gravity); contact spheres are
 * mbk_force_add_hunt_crossley_sphere elements against the ground half-space,
 * loop closures mbk_constraint_add_ball. OP_STEP uses an RK-Merson integrator
 * with a fixed step (see bench_sides.h). */
#define _POSIX_C_SOURCE 200809L
#include <math.h>
#include <stdio.h>
#include <time.h>
#include <stdlib.h>
#include <string.h>

#include <mbk/mbk.h>

#include "bench_sides.h"

struct mb_side {
    mbk_system *sys;
    const mbk_matter *m;
    mbk_state *s;
    mbk_state *copy;         /* destination of the State-copy benchmark */
    mbk_integrator *ig;      /* OP_STEP: fixed-step RK-Merson */
    long steps;              /* OP_STEP: steps since the last reset */
    const bm_model *model;   /* the description (outlives the side) */
    unsigned char *buf_a, *buf_b; /* memcpy benchmark */
    int nb, nq, nu;
    double *q, *u, *v, *kud, *res, *minv, *M, *zeros;
    double *dq, *du;         /* derivatives: d/dq (nu x nq), d/du (nu x nu) */
    double *J;               /* ydot Jacobians (ny x ny) */
    int ny;
    mbk_spatial_vec *F; /* gravity body forces at q (for inverse dynamics) */
    char err[512];
};

static char g_err[512];

#ifndef MBK_BENCH_SIDE_FLAGS
#define MBK_BENCH_SIDE_FLAGS "?"
#endif
/* The flags this side and its library were compiled with (the default build's module). */
const char *mb_build_flags(void);
const char *mb_build_flags(void) { return MBK_BENCH_SIDE_FLAGS; }

const char *mb_last_error(void) { return g_err; }
long mb_allocation_count(void) { return mbk_get_allocation_count(); }

static int fail(const char *what)
{
    snprintf(g_err, sizeof g_err, "mbk: %s: %s (%s)", what, mbk_last_error(),
             mbk_status_name(mbk_last_status()));
    return mbk_last_status() < 0 ? mbk_last_status() : -1;
}

static mbk_transform to_transform(const double *a)
{
    mbk_transform X;
    for (int i = 0; i < 3; ++i)
        for (int j = 0; j < 3; ++j) X.R.m[i][j] = a[3 * i + j];
    X.p = mbk_vec3_make(a[9], a[10], a[11]);
    return X;
}

void mb_destroy(mb_side *s)
{
    if (!s) return;
    mbk_state_destroy(s->s);
    mbk_state_destroy(s->copy);
    mbk_integrator_destroy(s->ig);
    free(s->buf_a);
    free(s->buf_b);
    mbk_system_destroy(s->sys);
    free(s->q);
    free(s->u);
    free(s->v);
    free(s->kud);
    free(s->res);
    free(s->minv);
    free(s->M);
    free(s->dq);
    free(s->du);
    free(s->J);
    free(s->zeros);
    free(s->F);
    free(s);
}

mb_side *mb_create(const bm_model *model)
{
    mb_side *s = calloc(1, sizeof *s);
    if (!s) goto oom;
    s->nb = model->n + 1;
    s->model = model;
    s->sys = mbk_multibody_create(model->name);
    if (!s->sys) { fail("mbk_multibody_create"); goto bad; }
    mbk_matter *m = mbk_multibody_upd_matter(s->sys);
    for (int i = 1; i <= model->n; ++i) {
        const bm_body *b = &model->bodies[i - 1];
        mbk_transform X_PF = to_transform(b->X_PF), X_BM = to_transform(b->X_BM);
        mbk_mat33 I = mbk_mat33_zero();
        for (int r = 0; r < 3; ++r)
            for (int c = 0; c < 3; ++c) I.m[r][c] = b->inertia[3 * r + c];
        mbk_mass_props mp = mbk_mass_props_from_central(b->mass, mbk_vec3_make(b->com[0], b->com[1], b->com[2]), I);
        mbk_mobilizer mob = b->type == BM_FREE ? mbk_mobilizer_free() : mbk_mobilizer_pin();
        if (mbk_matter_add_body(m, b->parent, &X_PF, &mp, &X_BM, mob) != i) { fail("mbk_matter_add_body"); goto bad; }
    }
    /* gravity is the built-in element (zero height 0: PE = -sum m g . p_com) */
    mbk_vec3 g = mbk_vec3_make(model->gravity[0], model->gravity[1], model->gravity[2]);
    if (mbk_force_add_gravity(mbk_multibody_upd_forces(s->sys), g) < 0) { fail("mbk_force_add_gravity"); goto bad; }
    /* contact spheres and loop closures, as described */
    for (int k = 0; k < model->n_spheres; ++k) {
        const double *c = model->spheres[k].center;
        if (mbk_force_add_hunt_crossley_sphere(mbk_multibody_upd_forces(s->sys), model->spheres[k].body,
                                               mbk_vec3_make(c[0], c[1], c[2]), model->spheres[k].radius,
                                               model->ground_z, model->hc) < 0) {
            fail("mbk_force_add_hunt_crossley_sphere");
            goto bad;
        }
    }
    for (int k = 0; k < model->n_balls; ++k) {
        const double *s1 = model->balls[k].s1, *s2 = model->balls[k].s2;
        if (mbk_constraint_add_ball(m, model->balls[k].b1, mbk_vec3_make(s1[0], s1[1], s1[2]), model->balls[k].b2,
                                    mbk_vec3_make(s2[0], s2[1], s2[2])) < 0) {
            fail("mbk_constraint_add_ball");
            goto bad;
        }
    }
    s->m = mbk_multibody_get_matter(s->sys);
    if (mbk_system_realize_topology(s->sys) < 0) { fail("mbk_system_realize_topology"); goto bad; }
    s->s = mbk_state_create();
    if (!s->s || mbk_state_init(s->s, s->sys) < 0) { fail("mbk_state_init"); goto bad; }
    if (mbk_system_realize(s->sys, s->s, MBK_STAGE_INSTANCE) < 0) { fail("realize Instance"); goto bad; }
    s->nq = mbk_state_get_nq(s->s);
    s->nu = mbk_state_get_nu(s->s);
    s->ny = mbk_state_get_ny(s->s);
    if (s->nq != model->nq || s->nu != model->nu) {
        snprintf(g_err, sizeof g_err, "mbk: %s has nq %d nu %d, expected %d %d", model->name, s->nq,
                 s->nu, model->nq, model->nu);
        goto bad;
    }
    for (int i = 1; i <= model->n; ++i)
        if (mbk_matter_get_body_q_start(s->m, s->s, i) != model->q0[i] ||
            mbk_matter_get_body_u_start(s->m, s->s, i) != model->u0[i]) {
            snprintf(g_err, sizeof g_err, "mbk: %s: body %d q/u layout differs from body order", model->name, i);
            goto bad;
        }
    size_t nq = (size_t)s->nq + 1, nu = (size_t)s->nu + 1;
    s->q = calloc(nq, sizeof(double));
    s->u = calloc(nu, sizeof(double));
    s->v = calloc(nu, sizeof(double));
    s->kud = calloc(nu, sizeof(double));
    s->res = calloc(nu, sizeof(double));
    s->minv = calloc(nu, sizeof(double));
    s->zeros = calloc(nu, sizeof(double));
    s->F = calloc((size_t)s->nb, sizeof(mbk_spatial_vec));
    if (!s->q || !s->u || !s->v || !s->kud || !s->res || !s->minv || !s->zeros || !s->F) goto oom;
    return s;
oom:
    snprintf(g_err, sizeof g_err, "mbk bench: out of memory");
bad:
    mb_destroy(s);
    return NULL;
}

/* Set q and u, realize to Acceleration. */
static int load(mb_side *s)
{
    if (mbk_state_set_q(s->s, s->q, s->nq) < 0) return fail("mbk_state_set_q");
    if (mbk_state_set_u(s->s, s->u, s->nu) < 0) return fail("mbk_state_set_u");
    if (mbk_system_realize(s->sys, s->s, MBK_STAGE_ACCELERATION) < 0) return fail("realize Acceleration");
    return 0;
}

int mb_set_inputs(mb_side *s, const double *q, const double *u, const double *v, const double *known_udot)
{
    memcpy(s->q, q, (size_t)s->nq * sizeof(double));
    memcpy(s->u, u, (size_t)s->nu * sizeof(double));
    memcpy(s->v, v, (size_t)s->nu * sizeof(double));
    memcpy(s->kud, known_udot, (size_t)s->nu * sizeof(double));
    int rc = load(s);
    if (rc < 0) return rc;
    const mbk_spatial_vec *F = mbk_multibody_get_body_forces(s->sys, s->s);
    if (!F) return fail("mbk_multibody_get_body_forces");
    memcpy(s->F, F, (size_t)s->nb * sizeof *F);
    return 0;
}

int mb_make_consistent(mb_side *s, double *q, double *u, double tol)
{
    if (s->model->n_balls == 0) return 0;
    if (mbk_state_set_q(s->s, q, s->nq) < 0) return fail("mbk_state_set_q");
    if (mbk_system_assemble(s->sys, s->s, tol) < 0) return fail("mbk_system_assemble");
    /* assembly leaves u alone; projection puts u on the velocity constraints */
    if (mbk_state_set_u(s->s, u, s->nu) < 0) return fail("mbk_state_set_u");
    if (mbk_system_project(s->sys, s->s, tol) < 0) return fail("mbk_system_project");
    memcpy(q, mbk_state_get_q(s->s), (size_t)s->nq * sizeof(double));
    memcpy(u, mbk_state_get_u(s->s), (size_t)s->nu * sizeof(double));
    return 0;
}

int mb_result_len(mb_side *s, bench_op op)
{
    switch (op) {
    case OP_FULL: case OP_UONLY: case OP_RNEA_KIN: case OP_RNEA: case OP_MINV: case OP_ID: return s->nu;
    case OP_POSITION: return 12 * (s->nb - 1);
    case OP_MASS: case OP_MASS_KIN: return s->nu * s->nu;
    case OP_CONSTRAINED: return s->model->n_balls ? s->nu + mbk_state_get_num_multipliers(s->s) : -1;
    case OP_STEP: return s->nq + s->nu;
    case OP_ABA_DERIV: case OP_RNEA_DERIV: return s->nu * (s->nq + s->nu);
    case OP_JAC_FD: case OP_JAC: return s->ny * s->ny;
    default: return -1;
    }
}

int mb_eval(mb_side *s, bench_op op, double *out)
{
    /* exactly what is timed: prepare, one repetition, then read the result */
    int rc = mb_prepare(s, op);
    if (rc == 0) rc = mb_run(s, op, 1);
    if (rc < 0) return rc;
    size_t nu = (size_t)s->nu;
    switch (op) {
    case OP_FULL: case OP_UONLY: memcpy(out, mbk_state_get_udot(s->s), nu * sizeof(double)); break;
    case OP_RNEA_KIN: case OP_RNEA: case OP_ID: memcpy(out, s->res, nu * sizeof(double)); break;
    case OP_MINV: memcpy(out, s->minv, nu * sizeof(double)); break;
    case OP_MASS: case OP_MASS_KIN: memcpy(out, s->M, nu * nu * sizeof(double)); break;
    case OP_POSITION:
        for (int b = 1; b < s->nb; ++b) {
            mbk_transform X;
            if (mbk_matter_get_body_transform(s->m, s->s, b, &X) < 0) return fail("mbk_matter_get_body_transform");
            double *o = out + 12 * (b - 1);
            for (int i = 0; i < 3; ++i)
                for (int j = 0; j < 3; ++j) o[3 * i + j] = X.R.m[i][j];
            o[9] = X.p.x, o[10] = X.p.y, o[11] = X.p.z;
        }
        break;
    case OP_CONSTRAINED:
        memcpy(out, mbk_state_get_udot(s->s), nu * sizeof(double));
        memcpy(out + nu, mbk_state_get_multipliers(s->s), (size_t)mbk_state_get_num_multipliers(s->s) * sizeof(double));
        break;
    case OP_ABA_DERIV: case OP_RNEA_DERIV:
        memcpy(out, s->dq, nu * (size_t)s->nq * sizeof(double));
        memcpy(out + nu * (size_t)s->nq, s->du, nu * nu * sizeof(double));
        break;
    case OP_JAC_FD: case OP_JAC: memcpy(out, s->J, (size_t)s->ny * (size_t)s->ny * sizeof(double)); break;
    case OP_STEP: {
        const mbk_state *st = mbk_integrator_get_state(s->ig);
        memcpy(out, mbk_state_get_q(st), (size_t)s->nq * sizeof(double));
        memcpy(out + s->nq, mbk_state_get_u(st), nu * sizeof(double));
        break;
    }
    default:
        return -1;
    }
    return 0;
}

/* OP_STEP: (re)start the fixed-step integrator from the benchmark state. */
static int step_reset(mb_side *s)
{
    s->steps = 0;
    if (mbk_integrator_initialize(s->ig, s->s) < 0) return fail("mbk_integrator_initialize");
    return 0;
}

/* The dense outputs an op writes, allocated on first need (before any timing). */
static int outputs(mb_side *s, bench_op op)
{
    size_t nq = (size_t)s->nq, nu = (size_t)s->nu, ny = (size_t)s->ny;
    if ((op == OP_MASS || op == OP_MASS_KIN) && !s->M) s->M = malloc(nu * nu * sizeof(double) + sizeof(double));
    if ((op == OP_ABA_DERIV || op == OP_RNEA_DERIV) && !s->dq) {
        s->dq = malloc(nu * nq * sizeof(double) + sizeof(double));
        s->du = malloc(nu * nu * sizeof(double) + sizeof(double));
    }
    if ((op == OP_JAC_FD || op == OP_JAC) && !s->J) s->J = malloc(ny * ny * sizeof(double) + sizeof(double));
    if ((op == OP_MASS || op == OP_MASS_KIN) ? !s->M
        : (op == OP_ABA_DERIV || op == OP_RNEA_DERIV) ? !s->dq || !s->du
        : (op == OP_JAC_FD || op == OP_JAC) ? !s->J : 0) {
        snprintf(g_err, sizeof g_err, "mbk bench: out of memory for the output of op %d", (int)op);
        return -1;
    }
    return 0;
}

int mb_prepare(mb_side *s, bench_op op)
{
    if (outputs(s, op) < 0) return -1;
    int rc = load(s);
    if (rc < 0 || op != OP_STEP) return rc;
    if (!s->ig) {
        s->ig = mbk_integrator_create_rkmerson(s->sys);
        if (!s->ig || mbk_integrator_set_fixed_step(s->ig, BENCH_STEP_H) < 0 ||
            mbk_integrator_set_constraint_tolerance(s->ig, BENCH_STEP_CONS_TOL) < 0)
            return fail("RK-Merson integrator setup");
    }
    return step_reset(s);
}

int mb_run(mb_side *s, bench_op op, long reps)
{
    mbk_state *st = s->s;
    const mbk_system *sys = s->sys;
    const mbk_matter *m = s->m;
    int bad = 0;
    switch (op) {
    case OP_FULL:
    case OP_CONSTRAINED: /* the same cycle; on a model with constraints it solves for the multipliers too */
        for (long r = 0; r < reps; ++r) {
            bad |= mbk_state_set_q(st, s->q, s->nq);
            bad |= mbk_state_set_u(st, s->u, s->nu);
            bad |= mbk_system_realize(sys, st, MBK_STAGE_ACCELERATION);
        }
        break;
    case OP_UONLY:
        for (long r = 0; r < reps; ++r) {
            bad |= mbk_state_set_u(st, s->u, s->nu);
            bad |= mbk_system_realize(sys, st, MBK_STAGE_ACCELERATION);
        }
        break;
    case OP_POSITION:
        for (long r = 0; r < reps; ++r) {
            bad |= mbk_state_set_q(st, s->q, s->nq);
            bad |= mbk_system_realize(sys, st, MBK_STAGE_POSITION);
        }
        break;
    case OP_RNEA_KIN:
        for (long r = 0; r < reps; ++r) {
            bad |= mbk_state_set_q(st, s->q, s->nq);
            bad |= mbk_state_set_u(st, s->u, s->nu);
            bad |= mbk_system_realize(sys, st, MBK_STAGE_VELOCITY);
            bad |= mbk_matter_calc_residual_force(m, st, s->zeros, s->F, s->kud, s->res);
        }
        break;
    case OP_RNEA:
        for (long r = 0; r < reps; ++r)
            bad |= mbk_matter_calc_residual_force(m, st, s->zeros, s->F, s->kud, s->res);
        break;
    case OP_MASS:
        for (long r = 0; r < reps; ++r) bad |= mbk_matter_calc_mass_matrix(m, st, s->M);
        break;
    case OP_MINV:
        for (long r = 0; r < reps; ++r) bad |= mbk_matter_multiply_by_M_inverse(m, st, s->v, s->minv);
        break;
    case OP_ID: /* with the applied forces the System computes at Dynamics (gravity, contact) */
        for (long r = 0; r < reps; ++r) {
            bad |= mbk_state_set_q(st, s->q, s->nq);
            bad |= mbk_state_set_u(st, s->u, s->nu);
            bad |= mbk_system_realize(sys, st, MBK_STAGE_DYNAMICS);
            bad |= mbk_matter_calc_residual_force(m, st, mbk_multibody_get_mobility_forces(sys, st),
                                                  mbk_multibody_get_body_forces(sys, st), s->kud, s->res);
        }
        break;
    case OP_MASS_KIN:
        for (long r = 0; r < reps; ++r) {
            bad |= mbk_state_set_q(st, s->q, s->nq);
            bad |= mbk_system_realize(sys, st, MBK_STAGE_POSITION);
            bad |= mbk_matter_calc_mass_matrix(m, st, s->M);
        }
        break;
    case OP_ABA_DERIV: /* as a user calls it: the function realizes what it needs itself */
        for (long r = 0; r < reps; ++r) {
            bad |= mbk_state_set_q(st, s->q, s->nq);
            bad |= mbk_state_set_u(st, s->u, s->nu);
            bad |= mbk_system_calc_acceleration_derivatives(sys, st, s->dq, s->du);
        }
        break;
    case OP_RNEA_DERIV:
        for (long r = 0; r < reps; ++r) {
            bad |= mbk_state_set_q(st, s->q, s->nq);
            bad |= mbk_state_set_u(st, s->u, s->nu);
            bad |= mbk_system_calc_residual_derivatives(sys, st, s->kud, s->dq, s->du);
        }
        break;
    case OP_JAC_FD:
        for (long r = 0; r < reps; ++r) {
            bad |= mbk_state_set_q(st, s->q, s->nq);
            bad |= mbk_state_set_u(st, s->u, s->nu);
            bad |= mbk_system_calc_ydot_jacobian_fd(sys, st, s->J);
        }
        break;
    case OP_JAC:
        for (long r = 0; r < reps; ++r) {
            bad |= mbk_state_set_q(st, s->q, s->nq);
            bad |= mbk_state_set_u(st, s->u, s->nu);
            bad |= mbk_system_calc_ydot_jacobian(sys, st, s->J);
        }
        break;
    case OP_STEP:
        for (long r = 0; r < reps; ++r) {
            if (s->steps == BENCH_STEP_RESET && step_reset(s) < 0) return -1;
            ++s->steps;
            if (mbk_integrator_step_to(s->ig, mbk_integrator_get_time(s->ig) + BENCH_STEP_H) != MBK_OK)
                return fail("mbk_integrator_step_to");
        }
        break;
    default:
        return -1;
    }
    if (bad) return fail("timed operation");
    return 0;
}

int mb_constraint_info(mb_side *s, int *m, int *rank, double *perr, double *verr)
{
    int rc = load(s);
    if (rc < 0) return rc;
    if (mbk_matter_get_constraint_rank(s->m, s->s, rank, m) < 0) return fail("mbk_matter_get_constraint_rank");
    const double *qe = mbk_state_get_qerr(s->s), *ue = mbk_state_get_uerr(s->s);
    *perr = *verr = 0.0;
    for (int i = 0; i < mbk_state_get_nqerr(s->s); ++i) *perr = fmax(*perr, fabs(qe[i]));
    for (int i = 0; i < mbk_state_get_nuerr(s->s); ++i) *verr = fmax(*verr, fabs(ue[i]));
    return 0;
}

int mb_sphere_depths(mb_side *s, double *depth)
{
    int rc = load(s);
    if (rc < 0) return rc;
    for (int k = 0; k < s->model->n_spheres; ++k) {
        const double *c = s->model->spheres[k].center;
        mbk_vec3 p;
        if (mbk_matter_get_station_location(s->m, s->s, s->model->spheres[k].body, mbk_vec3_make(c[0], c[1], c[2]), &p) < 0)
            return fail("mbk_matter_get_station_location");
        depth[k] = s->model->spheres[k].radius - (p.z - s->model->ground_z);
    }
    return 0;
}

int mb_self_check(mb_side *s, double *rel)
{
    int rc = load(s);
    if (rc < 0) return rc;
    double *r0 = calloc(2 * (size_t)s->nu + 1, sizeof(double)), *gtl = r0 + s->nu;
    if (!r0) return -1;
    double big = 1.0, err = 0.0;
    if (mbk_matter_calc_residual_force(s->m, s->s, s->zeros, s->F, NULL, r0) < 0 ||
        mbk_matter_calc_residual_force(s->m, s->s, s->zeros, s->F, mbk_state_get_udot(s->s), s->res) < 0) {
        free(r0);
        return fail("mbk_matter_calc_residual_force");
    }
    /* with constraints M udot + G^T lambda = f, so the residual (constraints ignored) is -G^T lambda */
    if (mbk_state_get_num_multipliers(s->s) > 0 &&
        mbk_matter_calc_G_transpose_times(s->m, s->s, mbk_state_get_multipliers(s->s), gtl) < 0) {
        free(r0);
        return fail("mbk_matter_calc_G_transpose_times");
    }
    for (int i = 0; i < s->nu; ++i) {
        double a = fabs(r0[i]), e = fabs(s->res[i] + gtl[i]);
        if (a > big) big = a;
        if (e > err || e != e) err = e;
    }
    free(r0);
    *rel = err / big;
    return 0;
}

/* ---- State copy ---- */
size_t mb_state_bytes(const mb_side *s) { return mbk_state_get_size_in_bytes(s->s); }

int mb_run_state_copy(mb_side *s, long reps)
{
    if (!s->copy) {
        s->copy = mbk_state_create();
        if (!s->copy || mbk_state_copy(s->copy, s->s) < 0) return fail("mbk_state_copy");
    }
    int bad = 0;
    for (long r = 0; r < reps; ++r) bad |= mbk_state_copy(s->copy, s->s);
    if (bad) return fail("mbk_state_copy");
    return 0;
}

int mb_run_memcpy(mb_side *s, long reps)
{
    size_t n = mbk_state_get_size_in_bytes(s->s);
    if (!s->buf_a) {
        s->buf_a = calloc(n + 1, 1);
        s->buf_b = calloc(n + 1, 1);
        if (!s->buf_a || !s->buf_b) {
            snprintf(g_err, sizeof g_err, "mbk bench: out of memory");
            return -1;
        }
    }
    for (long r = 0; r < reps; ++r) {
        memcpy(s->buf_b, s->buf_a, n);
        __asm__ __volatile__("" : : "r"(s->buf_b), "r"(s->buf_a) : "memory"); /* keep every copy */
    }
    return 0;
}

/* ---- whole runs ---- */
static double wall_now(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + 1e-9 * (double)ts.tv_nsec;
}

int mb_integrate(const bm_model *model, const double *q, const double *u, int kind, double accuracy,
                 double t_final, run_result *out)
{
    memset(out, 0, sizeof *out);
    mb_side *s = mb_create(model);
    if (!s) return -1;
    mbk_integrator *ig = NULL;
    int rc = -1;
    memcpy(s->q, q, (size_t)s->nq * sizeof(double));
    memcpy(s->u, u, (size_t)s->nu * sizeof(double));
    if (load(s) < 0) goto done;
    double ke = 0, pe = 0;
    if (mbk_system_calc_energy(s->sys, s->s, &ke, &pe) < 0) { fail("mbk_system_calc_energy"); goto done; }
    out->e0 = ke + pe;
    ig = kind == RUN_RKMERSON    ? mbk_integrator_create_rkmerson(s->sys)
         : kind == RUN_CVODE_BDF ? mbk_integrator_create_cvode(s->sys, MBK_CVODE_BDF)
                                 : mbk_integrator_create_cvode(s->sys, MBK_CVODE_ADAMS);
    if (!ig) { fail("mbk_integrator_create"); goto done; }
    if (mbk_integrator_set_accuracy(ig, accuracy) < 0) { fail("mbk_integrator_set_accuracy"); goto done; }
    double t0 = wall_now();
    if (mbk_integrator_initialize(ig, s->s) < 0) { fail("mbk_integrator_initialize"); goto done; }
    long a0 = mbk_get_allocation_count();
    if (mbk_integrator_step_to(ig, t_final) < 0) { fail("mbk_integrator_step_to"); goto done; }
    long a1 = mbk_get_allocation_count();
    out->wall_s = wall_now() - t0;
    mbk_integrator_stats st;
    mbk_integrator_get_stats(ig, &st);
    out->steps = st.steps_taken;
    out->allocs_per_step = st.steps_taken > 0 ? (double)(a1 - a0) / (double)st.steps_taken : 0.0;
    const mbk_state *fin = mbk_integrator_get_state(ig);
    if (fabs(mbk_integrator_get_time(ig) - t_final) > 1e-9) {
        snprintf(g_err, sizeof g_err, "mbk: integration stopped at t = %g", mbk_integrator_get_time(ig));
        goto done;
    }
    if (mbk_system_calc_energy(s->sys, fin, &ke, &pe) < 0) { fail("mbk_system_calc_energy"); goto done; }
    out->e1 = ke + pe;
    out->drift = fabs(out->e1 - out->e0) / fabs(out->e0);
    rc = 0;
done:
    mbk_integrator_destroy(ig);
    mb_destroy(s);
    return rc;
}
