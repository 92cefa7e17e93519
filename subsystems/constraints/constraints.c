/* Constraints of the matter subsystem: adding them, the arguments their
 * callbacks receive (kinematics relative to the nearest common ancestor),
 * error evaluation at each level and the forces the multipliers produce. */
#include <math.h>
#include <string.h>

#include "mbk/alloc.h"
#include "mbk/status.h"
#include "constraints_impl.h"

/* ------------------------------------------------------------------ */
/* Adding                                                               */
/* ------------------------------------------------------------------ */

/* Nearest common ancestor of two bodies (bodies are in topological order). */
static int common_ancestor(const mbk_matter *m, int a, int b)
{
    while (a != b) {
        if (a > b) a = m->bodies[a].parent;
        else b = m->bodies[b].parent;
    }
    return a;
}

int ct_add(mbk_matter *m, const mbk_constraint_ops *ops, void *impl, const int *bodies, int n_bodies,
           const int *mob_bodies, const int *coords, int n_mobilities, const char *fn)
{
    if (!m) return mbk_set_error(MBK_EINVAL, "%s: matter is NULL", fn);
    if (mbk_system_is_topology_realized(m->sys))
        return mbk_set_error(MBK_ESTAGE, "%s: the System's topology is realized; call "
                             "mbk_system_invalidate_topology before adding constraints", fn);
    if (!ops || ops->mp < 0 || ops->mv < 0 || ops->ma < 0 || ops->mp + ops->mv + ops->ma == 0)
        return mbk_set_error(MBK_EINVAL, "%s: ops must give at least one equation (mp, mv, ma >= 0)", fn);
    if ((ops->mp && (!ops->calc_perr || !ops->calc_pverr || !ops->calc_paerr || !ops->apply_position_forces)) ||
        (ops->mv && (!ops->calc_verr || !ops->calc_vaerr || !ops->apply_velocity_forces)) ||
        (ops->ma && (!ops->calc_aerr || !ops->apply_acceleration_forces)))
        return mbk_set_error(MBK_EINVAL, "%s: constraint '%s' lacks an error or force callback for one of "
                             "its levels", fn, ops->name ? ops->name : "?");
    if (n_bodies < 0 || n_bodies > CT_MAX_BODIES || n_mobilities < 0 || n_mobilities > CT_MAX_BODIES ||
        n_bodies + n_mobilities == 0 || (n_bodies && !bodies) || (n_mobilities && (!mob_bodies || !coords)))
        return mbk_set_error(MBK_EINVAL, "%s: give 1..%d bodies and/or mobilities (arrays not NULL)", fn,
                             CT_MAX_BODIES);
    ct_constraint c;
    memset(&c, 0, sizeof c);
    c.ancestor = -1;
    for (int i = 0; i < n_bodies; ++i) {
        if (bodies[i] < 0 || bodies[i] >= m->nb)
            return mbk_set_error(MBK_EINVAL, "%s: body %d does not exist (0..%d)", fn, bodies[i], m->nb - 1);
        for (int j = 0; j < i; ++j)
            if (bodies[j] == bodies[i])
                return mbk_set_error(MBK_EINVAL, "%s: body %d is named twice; name each body once", fn, bodies[i]);
        c.body[c.nb++] = bodies[i];
        c.ancestor = c.ancestor < 0 ? bodies[i] : common_ancestor(m, c.ancestor, bodies[i]);
    }
    for (int k = 0; k < n_mobilities; ++k) {
        int b = mob_bodies[k];
        if (b < 1 || b >= m->nb || coords[k] < 0 || coords[k] >= m->bodies[b].nu)
            return mbk_set_error(MBK_EINVAL, "%s: mobility %d (body %d, coordinate %d) does not exist", fn, k,
                                 b, coords[k]);
        for (int j = 0; j < k; ++j)
            if (mob_bodies[j] == b && coords[j] == coords[k])
                return mbk_set_error(MBK_EINVAL, "%s: mobility %d and mobility %d are the same (body %d, "
                                     "coordinate %d); name each coordinate once", fn, j, k, b, coords[k]);
        c.mob_body[k] = b;
        c.mob_coord[k] = coords[k];
        c.ancestor = c.ancestor < 0 ? b : common_ancestor(m, c.ancestor, b);
    }
    c.nmob = n_mobilities;
    int rc = ct_attach(m);
    if (rc < 0) return rc;
    ct_set *cs = ct_of(m);
    if (cs->ncons == cs->ccap) {
        int cap = cs->ccap ? 2 * cs->ccap : 8;
        ct_constraint *nc = mbk_realloc(cs->cons, (size_t)cap * sizeof *nc);
        if (!nc) return MBK_ENOMEM;
        cs->cons = nc;
        cs->ccap = cap;
    }
    c.ops = *ops;
    c.impl = impl;
    c.builtin = strncmp(fn, "mbk_constraint_add_custom", 25) != 0;
    cs->cons[cs->ncons] = c;
    cs->mmax += ops->mp + ops->mv + ops->ma;
    return cs->ncons++;
}

int mbk_constraint_add_custom_with_mobilities(mbk_matter *m, const mbk_constraint_ops *ops, void *impl,
                                              const int *bodies, int n_bodies, const int *mob_bodies,
                                              const int *coords, int n_mobilities)
{
    return ct_add(m, ops, impl, bodies, n_bodies, mob_bodies, coords, n_mobilities,
                  "mbk_constraint_add_custom_with_mobilities");
}

int mbk_constraint_add_custom(mbk_matter *m, const mbk_constraint_ops *ops, void *impl, const int *bodies,
                              int n_bodies)
{
    return ct_add(m, ops, impl, bodies, n_bodies, NULL, NULL, 0, "mbk_constraint_add_custom");
}

void ct_destroy(mbk_matter *m)
{
    ct_set *cs = ct_of(m);
    for (int i = 0; i < cs->ncons; ++i)
        if (cs->cons[i].ops.destroy) cs->cons[i].ops.destroy(cs->cons[i].impl);
    mbk_free(cs->cons);
    mbk_free(cs);
    m->con = NULL;
    m->con_hooks = NULL;
}

/* The per-stage work, skipped at once when no constraint was added. */
static int hook_position(const mbk_matter *m, const mbk_state *s)
{
    return ct_of(m)->ncons ? ct_position(m, s) : 0;
}

static int hook_velocity(const mbk_matter *m, const mbk_state *s)
{
    return ct_of(m)->ncons ? ct_velocity(m, s) : 0;
}

static int hook_solve(const mbk_matter *m, const mbk_state *s, double *udot, mbk_spatial_vec *A)
{
    return ct_of(m)->ncons ? ct_solve(m, s, udot, A) : 0;
}

static int hook_project(const mbk_matter *m, mbk_state *s, double tol)
{
    return ct_of(m)->ncons ? ct_project(m, s, tol) : 0;
}

/* Matter's calls into the constraint code, per stage. */
static const mt_constraint_hooks ct_hooks = {
    .topology = ct_topology,
    .instance = ct_instance,
    .position = hook_position,
    .velocity = hook_velocity,
    .solve = hook_solve,
    .project = hook_project,
    .destroy = ct_destroy,
};

int ct_attach(mbk_matter *m)
{
    if (m->con) return MBK_OK;
    ct_set *cs = mbk_calloc(1, sizeof *cs);
    if (!cs) return MBK_ENOMEM;
    cs->enabled_var = cs->cache_slots = cs->cache_solve = -1;
    m->con = cs;
    m->con_hooks = &ct_hooks;
    return MBK_OK;
}

/* ------------------------------------------------------------------ */
/* Arguments                                                            */
/* ------------------------------------------------------------------ */

double mbk_constraint_args_get_time(const mbk_constraint_args *a) { return mbk_state_get_time(a->s); }

/* The accessors read each constrained body's kinematics in A from the caches that
   Position (poses) and Velocity (velocities, velocity products) fill once per
   realization; see ct_cache_poses and ct_cache_velocities below. */

/* The cached pose X_AB of the constraint's body i. */
static const mbk_transform *kin_pose(const mbk_constraint_args *a, int i)
{
    const mbk_transform *X = mbk_state_upd_cache(a->s, a->m->sub, ct_of(a->m)->cache_pose);
    return X + a->c->kin0 + i;
}

/* The cached velocity and velocity products of the constraint's body i. */
static const ct_body_vel *kin_vel(const mbk_constraint_args *a, int i)
{
    const ct_body_vel *kv = mbk_state_upd_cache(a->s, a->m->sub, ct_of(a->m)->cache_vel);
    return kv + a->c->kin0 + i;
}

mbk_transform mbk_constraint_get_body_transform(const mbk_constraint_args *a, int i) { return *kin_pose(a, i); }

mbk_spatial_vec mbk_constraint_get_body_velocity(const mbk_constraint_args *a, int i) { return kin_vel(a, i)->V_AB; }

/* The second derivative of B's origin taken in the moving frame A: the trial
   accelerations' part here, the velocity products from the Velocity cache. */
mbk_spatial_vec mbk_constraint_get_body_acceleration(const mbk_constraint_args *a, int i)
{
    const mt_pos *pos = mt_cache(a->m, a->s, C_POS);
    const ct_body_vel *kv = kin_vel(a, i);
    int A = a->c->ancestor, b = a->c->body[i];
    mbk_spatial_vec AA = a->A[A], AB = a->A[b];
    mbk_vec3 r = mbk_vec3_sub(pos[b].X_GB.p, pos[A].X_GB.p);
    mbk_vec3 dw = mbk_vec3_sub(AB.w, AA.w);
    mbk_vec3 dv = mbk_vec3_sub(mbk_vec3_sub(AB.v, AA.v), mbk_vec3_cross(AA.w, r));
    mbk_mat33 R_GA = pos[A].X_GB.R;
    mbk_spatial_vec R;
    R.w = mbk_vec3_add(mbk_mat33_transpose_mul_vec(R_GA, dw), kv->A_bias.w);
    R.v = mbk_vec3_add(mbk_mat33_transpose_mul_vec(R_GA, dv), kv->A_bias.v);
    return R;
}

mbk_vec3 mbk_constraint_get_station_location(const mbk_constraint_args *a, int i, mbk_vec3 station)
{
    return mbk_transform_apply_point(mbk_constraint_get_body_transform(a, i), station);
}

mbk_vec3 mbk_constraint_get_station_velocity(const mbk_constraint_args *a, int i, mbk_vec3 station)
{
    mbk_vec3 r = mbk_mat33_mul_vec(mbk_constraint_get_body_transform(a, i).R, station);
    return mbk_spatial_shift_motion(mbk_constraint_get_body_velocity(a, i), r).v;
}

mbk_vec3 mbk_constraint_get_station_acceleration(const mbk_constraint_args *a, int i, mbk_vec3 station)
{
    mbk_vec3 r = mbk_mat33_mul_vec(mbk_constraint_get_body_transform(a, i).R, station);
    mbk_vec3 w = mbk_constraint_get_body_velocity(a, i).w;
    mbk_spatial_vec A = mbk_constraint_get_body_acceleration(a, i);
    return mbk_vec3_add(mbk_spatial_shift_motion(A, r).v, mbk_vec3_cross(w, mbk_vec3_cross(w, r)));
}

/* Start of mobility j's q and u in matter's arrays. */
static int mob_q(const mbk_constraint_args *a, int j)
{
    return qlayout(a->m, a->s)[2 * a->c->mob_body[j]] + a->c->mob_coord[j];
}

static int mob_u(const mbk_constraint_args *a, int j)
{
    return a->m->bodies[a->c->mob_body[j]].u0 + a->c->mob_coord[j];
}

double mbk_constraint_get_q(const mbk_constraint_args *a, int j)
{
    return ((const double *)mt_cache(a->m, a->s, C_QN))[mob_q(a, j)];
}

double mbk_constraint_get_qdot(const mbk_constraint_args *a, int j)
{
    return mbk_state_upd_subsystem_qdot(a->s, a->m->sub)[mob_q(a, j)];
}

double mbk_constraint_get_u(const mbk_constraint_args *a, int j)
{
    return mbk_state_get_subsystem_u(a->s, a->m->sub)[mob_u(a, j)];
}

double mbk_constraint_get_udot(const mbk_constraint_args *a, int j) { return a->udot[mob_u(a, j)]; }

double mbk_constraint_get_qdotdot(const mbk_constraint_args *a, int j)
{
    const mt_body *b = &a->m->bodies[a->c->mob_body[j]];
    const int *lay = qlayout(a->m, a->s);
    int q0 = lay[2 * a->c->mob_body[j]];
    if (!b->mob.ops->calc_qdotdot) return a->udot[b->u0 + a->c->mob_coord[j]];
    double qdd[MBK_MOBILIZER_MAX_Q];
    const double *qn = mt_cache(a->m, a->s, C_QN), *u = mbk_state_get_subsystem_u(a->s, a->m->sub);
    b->mob.ops->calc_qdotdot(b->mob.impl, use_euler(a->m, a->s), qn + q0, u + b->u0, a->udot + b->u0, qdd);
    return qdd[a->c->mob_coord[j]];
}

mbk_vec3 mbk_constraint_find_station(const mbk_constraint_args *a, int i, mbk_vec3 p_A)
{
    return mbk_transform_invert_apply_point(mbk_constraint_get_body_transform(a, i), p_A);
}

mbk_vec3 mbk_constraint_get_body_angular_velocity(const mbk_constraint_args *a, int i)
{
    return mbk_constraint_get_body_velocity(a, i).w;
}

void mbk_constraint_add_station_force(const mbk_constraint_args *a, int i, mbk_vec3 station, mbk_vec3 force_A,
                                      mbk_spatial_vec *body_forces_A)
{
    mbk_vec3 r = mbk_mat33_mul_vec(mbk_constraint_get_body_transform(a, i).R, station);
    body_forces_A[i].w = mbk_vec3_add(body_forces_A[i].w, mbk_vec3_cross(r, force_A));
    body_forces_A[i].v = mbk_vec3_add(body_forces_A[i].v, force_A);
}

void mbk_constraint_add_body_torque(const mbk_constraint_args *a, int i, mbk_vec3 torque_A,
                                    mbk_spatial_vec *body_forces_A)
{
    (void)a;
    body_forces_A[i].w = mbk_vec3_add(body_forces_A[i].w, torque_A);
}

void mbk_constraint_add_mobility_force(const mbk_constraint_args *a, int j, double f, double *mobility_forces)
{
    (void)a;
    mobility_forces[j] += f;
}

/* ------------------------------------------------------------------ */
/* Evaluation over all enabled constraints                              */
/* ------------------------------------------------------------------ */

const int *ct_enabled(const mbk_matter *m, const mbk_state *s)
{
    return mbk_state_get_discrete(s, m->sub, ct_of(m)->enabled_var);
}

ct_cslots *ct_slots(const mbk_matter *m, const mbk_state *s) { return mbk_state_upd_cache(s, m->sub, ct_of(m)->cache_slots); }

/* Per-constraint starts within each group: p0, v0, a0 arrays after the header. */
static int *slot_starts(const mbk_matter *m, const mbk_state *s, int group)
{
    return (int *)(ct_slots(m, s) + 1) + group * ct_of(m)->ncons;
}

/* Which callback of which level: 0 perr, 1 pverr, 2 paerr, 3 verr, 4 vaerr, 5 aerr. */
static int call_err(const ct_constraint *c, int which, const mbk_constraint_args *a, double *out)
{
    const mbk_constraint_ops *o = &c->ops;
    int (*fn[6])(void *, const mbk_constraint_args *, double *) = {o->calc_perr, o->calc_pverr, o->calc_paerr,
                                                                   o->calc_verr, o->calc_vaerr, o->calc_aerr};
    return fn[which](c->impl, a, out);
}

/* A callback that reported success must have written finite values: a NaN would
   otherwise surface later as a solve that "does not converge". */
static int check_finite(const ct_constraint *c, int i, int which, const double *out, double t)
{
    static const char *const names[6] = {"calc_perr", "calc_pverr", "calc_paerr",
                                         "calc_verr", "calc_vaerr", "calc_aerr"};
    int n = which < 3 ? c->ops.mp : which < 5 ? c->ops.mv : c->ops.ma;
    for (int k = 0; k < n; ++k) {
        if (isfinite(out[k])) continue;
        if (c->builtin) /* the built-ins are finite except where their geometry degenerates */
            return mbk_set_error(MBK_ENOTFINITE, "constraint %d (%s): its error is not finite here (%s entry %d of "
                                 "%d is %g, at t = %.17g): the configuration is singular for this constraint "
                                 "(e.g. a Rod's two points coincide); start from, or keep to, configurations "
                                 "away from it", i, c->ops.name, names[which], k, n, out[k], t);
        return mbk_set_error(MBK_ENOTFINITE, "constraint %d (%s): its %s callback returned a non-finite error "
                             "value (entry %d of %d is %g, at t = %.17g); this is a bug in that callback: "
                             "constraint errors must be finite in every configuration",
                             i, c->ops.name ? c->ops.name : "custom", names[which], k, n, out[k], t);
    }
    return MBK_OK;
}

/* Constraint i's op failed with rc: its own status and message when it set them
   (mbk_set_error), else MBK_EUSER saying what it returned. */
static int op_failed(const ct_constraint *c, int i, const char *what, int rc)
{
    const char *name = c->ops.name ? c->ops.name : "custom";
    if (rc < 0 && rc == mbk_last_status() && mbk_last_error()[0])
        return mbk_set_error(rc, "constraint %d (%s) failed to %s: %s", i, name, what, mbk_last_error());
    return mbk_set_error(MBK_EUSER, "constraint %d (%s) failed to %s: its op returned %d without saying why "
                         "(an op says why with mbk_set_error)", i, name, what, rc);
}

int ct_eval(const mbk_matter *m, const mbk_state *s, int level, const mbk_spatial_vec *A, const double *udot,
            double *out)
{
    const int *on = ct_enabled(m, s);
    const ct_cslots *sl = ct_slots(m, s);
    const int *p0 = slot_starts(m, s, 0), *v0 = slot_starts(m, s, 1), *a0 = slot_starts(m, s, 2);
    for (int i = 0; i < ct_of(m)->ncons; ++i) {
        if (!on[i]) continue;
        const ct_constraint *c = &ct_of(m)->cons[i];
        mbk_constraint_args a = {m, s, c, A, udot};
        int rc = 0;
        mbk_clear_error(); /* what an op that fails says is its own */
        /* level 0: perr; 1: [pverr, verr]; 2: [paerr, vaerr, aerr] */
        if (c->ops.mp && level <= 2) rc = call_err(c, level, &a, out + p0[i]);
        if (!rc && c->ops.mv && level >= 1) rc = call_err(c, level == 1 ? 3 : 4, &a, out + sl->mp + v0[i]);
        if (!rc && c->ops.ma && level == 2) rc = call_err(c, 5, &a, out + sl->mp + sl->mv + a0[i]);
        if (rc != 0) return op_failed(c, i, "compute its errors", rc);
        double t = mbk_state_get_time(s);
        if (c->ops.mp && level <= 2 && (rc = check_finite(c, i, level, out + p0[i], t)) < 0) return rc;
        if (c->ops.mv && level >= 1 && (rc = check_finite(c, i, level == 1 ? 3 : 4, out + sl->mp + v0[i], t)) < 0)
            return rc;
        if (c->ops.ma && level == 2 && (rc = check_finite(c, i, 5, out + sl->mp + sl->mv + a0[i], t)) < 0)
            return rc;
    }
    return MBK_OK;
}

int ct_apply(const mbk_matter *m, const mbk_state *s, const double *lambda, int levels, mbk_spatial_vec *F,
             double *tau)
{
    const int *on = ct_enabled(m, s);
    const ct_cslots *sl = ct_slots(m, s);
    const mt_pos *pos = mt_cache(m, s, C_POS);
    const int *p0 = slot_starts(m, s, 0), *v0 = slot_starts(m, s, 1), *a0 = slot_starts(m, s, 2);
    for (int i = 0; i < ct_of(m)->ncons; ++i) {
        if (!on[i]) continue;
        const ct_constraint *c = &ct_of(m)->cons[i];
        mbk_constraint_args a = {m, s, c, NULL, NULL};
        mbk_spatial_vec FA[CT_MAX_BODIES];
        double mf[CT_MAX_BODIES];
        memset(FA, 0, sizeof FA);
        memset(mf, 0, sizeof mf);
        int rc = 0;
        mbk_clear_error(); /* what an op that fails says is its own */
        if (c->ops.mp) rc = c->ops.apply_position_forces(c->impl, &a, lambda + p0[i], FA, mf);
        if (!rc && c->ops.mv) rc = c->ops.apply_velocity_forces(c->impl, &a, lambda + sl->mp + v0[i], FA, mf);
        if (!rc && c->ops.ma && levels > 2)
            rc = c->ops.apply_acceleration_forces(c->impl, &a, lambda + sl->mp + sl->mv + a0[i], FA, mf);
        if (rc != 0) return op_failed(c, i, "apply its forces", rc);
        /* forces in A back to Ground, at the same body origins */
        mbk_mat33 R_GA = pos[c->ancestor].X_GB.R;
        for (int k = 0; k < c->nb; ++k) {
            mbk_spatial_vec *f = &F[c->body[k]];
            f->w = mbk_vec3_add(f->w, mbk_mat33_mul_vec(R_GA, FA[k].w));
            f->v = mbk_vec3_add(f->v, mbk_mat33_mul_vec(R_GA, FA[k].v));
        }
        for (int j = 0; j < c->nmob; ++j) tau[m->bodies[c->mob_body[j]].u0 + c->mob_coord[j]] += mf[j];
    }
    return MBK_OK;
}

/* ------------------------------------------------------------------ */
/* Realization                                                          */
/* ------------------------------------------------------------------ */

int ct_instance(const mbk_matter *m, mbk_state *s)
{
    const int *on = ct_enabled(m, s);
    ct_cslots *sl = ct_slots(m, s);
    int *p0 = slot_starts(m, s, 0), *v0 = slot_starts(m, s, 1), *a0 = slot_starts(m, s, 2);
    sl->mp = sl->mv = sl->ma = 0;
    sl->rank = 0;
    for (int i = 0; i < ct_of(m)->ncons; ++i) {
        const mbk_constraint_ops *o = &ct_of(m)->cons[i].ops;
        p0[i] = on[i] ? sl->mp : -1;
        v0[i] = on[i] ? sl->mv : -1;
        a0[i] = on[i] ? sl->ma : -1;
        if (!on[i]) continue;
        sl->mp += o->mp;
        sl->mv += o->mv;
        sl->ma += o->ma;
    }
    int mp = sl->mp, mv = sl->mv, ma = sl->ma;
    if (mbk_state_allocate_qerr(s, m->sub, mp) < 0 || mbk_state_allocate_uerr(s, m->sub, mp + mv) < 0 ||
        mbk_state_allocate_udoterr(s, m->sub, mp + mv + ma) < 0)
        return mbk_last_status();
    return MBK_OK;
}

/* X_AB of every enabled constraint's bodies, X_GA inverted once per constraint. */
static void ct_cache_poses(const mbk_matter *m, const mbk_state *s)
{
    const int *on = ct_enabled(m, s);
    const mt_pos *pos = mt_cache(m, s, C_POS);
    mbk_transform *X = mbk_state_upd_cache(s, m->sub, ct_of(m)->cache_pose);
    for (int i = 0; i < ct_of(m)->ncons; ++i) {
        const ct_constraint *c = &ct_of(m)->cons[i];
        if (!on[i] || c->nb == 0) continue;
        mbk_transform X_AG = mbk_transform_invert(pos[c->ancestor].X_GB);
        for (int k = 0; k < c->nb; ++k) X[c->kin0 + k] = mbk_transform_compose(X_AG, pos[c->body[k]].X_GB);
    }
}

/* Velocities in A of every enabled constraint's bodies and the velocity products of
   their accelerations in A: with w the angular velocity of A, r = p_B - p_A and v_rel
   the velocity of B's origin seen in A (all in G),
       A_bias = R_GA^T (-w x w_B, -w x (w x r) - 2 w x v_rel). */
static void ct_cache_velocities(const mbk_matter *m, const mbk_state *s)
{
    const int *on = ct_enabled(m, s);
    const mt_pos *pos = mt_cache(m, s, C_POS);
    const mt_vel *vel = mt_cache(m, s, C_VEL);
    ct_body_vel *kv = mbk_state_upd_cache(s, m->sub, ct_of(m)->cache_vel);
    for (int i = 0; i < ct_of(m)->ncons; ++i) {
        const ct_constraint *c = &ct_of(m)->cons[i];
        if (!on[i] || c->nb == 0) continue;
        int A = c->ancestor;
        mbk_mat33 R_GA = pos[A].X_GB.R;
        mbk_spatial_vec VA = vel[A].V_GB;
        mbk_vec3 w = VA.w;
        for (int k = 0; k < c->nb; ++k) {
            int b = c->body[k];
            mbk_spatial_vec VB = vel[b].V_GB;
            mbk_vec3 r = mbk_vec3_sub(pos[b].X_GB.p, pos[A].X_GB.p);
            mbk_vec3 w_rel = mbk_vec3_sub(VB.w, VA.w);
            mbk_vec3 v_rel = mbk_vec3_sub(mbk_vec3_sub(VB.v, VA.v), mbk_vec3_cross(w, r));
            mbk_vec3 bw = mbk_vec3_neg(mbk_vec3_cross(w, VB.w));
            mbk_vec3 bv = mbk_vec3_add(mbk_vec3_cross(w, mbk_vec3_cross(w, r)),
                                       mbk_vec3_scale(mbk_vec3_cross(w, v_rel), 2.0));
            ct_body_vel *o = &kv[c->kin0 + k];
            o->V_AB.w = mbk_mat33_transpose_mul_vec(R_GA, w_rel);
            o->V_AB.v = mbk_mat33_transpose_mul_vec(R_GA, v_rel);
            o->A_bias.w = mbk_mat33_transpose_mul_vec(R_GA, bw);
            o->A_bias.v = mbk_vec3_neg(mbk_mat33_transpose_mul_vec(R_GA, bv));
        }
    }
}

int ct_position(const mbk_matter *m, const mbk_state *s)
{
    ct_cache_poses(m, s);
    if (ct_slots(m, s)->mp == 0) return MBK_OK;
    return ct_eval(m, s, 0, NULL, NULL, mbk_state_upd_subsystem_qerr(s, m->sub));
}

int ct_velocity(const mbk_matter *m, const mbk_state *s)
{
    ct_cache_velocities(m, s);
    const ct_cslots *sl = ct_slots(m, s);
    if (sl->mp + sl->mv == 0) return MBK_OK;
    return ct_eval(m, s, 1, NULL, NULL, mbk_state_upd_subsystem_uerr(s, m->sub));
}

/* ------------------------------------------------------------------ */
/* Per-State use                                                        */
/* ------------------------------------------------------------------ */

static int need_constraint(const mbk_matter *m, int i, const char *fn)
{
    if (!m) return mbk_set_error(MBK_EINVAL, "%s: matter is NULL", fn);
    if (i < 0 || i >= ct_of(m)->ncons)
        return mbk_set_error(MBK_EINVAL, "%s: constraint %d does not exist; there are %d", fn, i, ct_of(m)->ncons);
    return MBK_OK;
}

int mbk_matter_get_num_constraints(const mbk_matter *m) { return m && m->con ? ct_of(m)->ncons : 0; }

int mbk_constraint_set_enabled(const mbk_matter *m, mbk_state *s, int constraint, bool on)
{
    const char *fn = "mbk_constraint_set_enabled";
    int rc = need_constraint(m, constraint, fn);
    if (rc < 0 || (rc = mbk_system_check_state(m->sys, s)) < 0) return rc;
    if (!!ct_enabled(m, s)[constraint] == on) return MBK_OK;
    int *flags = mbk_state_upd_discrete(s, m->sub, ct_of(m)->enabled_var);
    if (!flags) return mbk_last_status();
    flags[constraint] = on;
    return MBK_OK;
}

bool mbk_constraint_is_enabled(const mbk_matter *m, const mbk_state *s, int constraint)
{
    return need_constraint(m, constraint, "mbk_constraint_is_enabled") == MBK_OK &&
           mbk_system_check_state(m->sys, s) == MBK_OK && ct_enabled(m, s)[constraint];
}

int mbk_constraint_get_num_equations(const mbk_matter *m, int constraint, int *mp, int *mv, int *ma)
{
    int rc = need_constraint(m, constraint, "mbk_constraint_get_num_equations");
    if (rc < 0) return rc;
    const mbk_constraint_ops *o = &ct_of(m)->cons[constraint].ops;
    if (mp) *mp = o->mp;
    if (mv) *mv = o->mv;
    if (ma) *ma = o->ma;
    return MBK_OK;
}

int mbk_constraint_get_multipliers(const mbk_matter *m, const mbk_state *s, int constraint, double *lambda)
{
    const char *fn = "mbk_constraint_get_multipliers";
    int rc = need_constraint(m, constraint, fn);
    if (rc < 0 || (rc = mt_need(m, s, MBK_STAGE_ACCELERATION, fn)) < 0) return rc;
    if (!lambda) return mbk_set_error(MBK_EINVAL, "%s: lambda is NULL", fn);
    const mbk_constraint_ops *o = &ct_of(m)->cons[constraint].ops;
    const ct_cslots *sl = ct_slots(m, s);
    const double *all = mbk_state_upd_subsystem_multipliers(s, m->sub);
    if (!ct_enabled(m, s)[constraint]) {
        memset(lambda, 0, (size_t)(o->mp + o->mv + o->ma) * sizeof(double));
        return MBK_OK;
    }
    memcpy(lambda, all + slot_starts(m, s, 0)[constraint], (size_t)o->mp * sizeof(double));
    memcpy(lambda + o->mp, all + sl->mp + slot_starts(m, s, 1)[constraint], (size_t)o->mv * sizeof(double));
    memcpy(lambda + o->mp + o->mv, all + sl->mp + sl->mv + slot_starts(m, s, 2)[constraint],
           (size_t)o->ma * sizeof(double));
    return MBK_OK;
}

int mbk_constraint_calc_reaction_forces(const mbk_matter *m, const mbk_state *s, int constraint,
                                        mbk_spatial_vec *body_forces, double *mobility_forces)
{
    const char *fn = "mbk_constraint_calc_reaction_forces";
    int rc = need_constraint(m, constraint, fn);
    if (rc < 0 || (rc = mt_need(m, s, MBK_STAGE_ACCELERATION, fn)) < 0) return rc;
    if (!body_forces) return mbk_set_error(MBK_EINVAL, "%s: body_forces is NULL", fn);
    memset(body_forces, 0, (size_t)m->nb * sizeof *body_forces);
    if (mobility_forces) memset(mobility_forces, 0, (size_t)m->nu * sizeof *mobility_forces);
    if (!ct_enabled(m, s)[constraint]) return MBK_OK;
    /* only this constraint's multipliers: the others are zeroed in a copy */
    const ct_cslots *sl = ct_slots(m, s);
    int mt = sl->mp + sl->mv + sl->ma;
    ct_solve_ws w = ct_workspace(m, s);
    const double *all = mbk_state_upd_subsystem_multipliers(s, m->sub);
    memset(w.lambda, 0, (size_t)mt * sizeof(double));
    const mbk_constraint_ops *o = &ct_of(m)->cons[constraint].ops;
    int pp = slot_starts(m, s, 0)[constraint], vv = sl->mp + slot_starts(m, s, 1)[constraint],
        aa = sl->mp + sl->mv + slot_starts(m, s, 2)[constraint];
    memcpy(w.lambda + pp, all + pp, (size_t)o->mp * sizeof(double));
    memcpy(w.lambda + vv, all + vv, (size_t)o->mv * sizeof(double));
    memcpy(w.lambda + aa, all + aa, (size_t)o->ma * sizeof(double));
    double *tau = w.g;
    memset(tau, 0, (size_t)m->nu * sizeof(double));
    if ((rc = ct_apply(m, s, w.lambda, 3, body_forces, tau)) < 0) return rc;
    /* M udot = f - G^T lambda: the reaction is minus what the multipliers apply */
    for (int b = 0; b < m->nb; ++b) body_forces[b] = mbk_spatial_vec_scale(body_forces[b], -1.0);
    for (int j = 0; mobility_forces && j < m->nu; ++j) mobility_forces[j] = -tau[j];
    return MBK_OK;
}

int mbk_matter_get_constraint_rank(const mbk_matter *m, const mbk_state *s, int *rank, int *m_total)
{
    int rc = mt_need(m, s, MBK_STAGE_ACCELERATION, "mbk_matter_get_constraint_rank");
    if (rc < 0) return rc;
    const ct_cslots *sl = ct_slots(m, s);
    if (rank) *rank = sl->rank;
    if (m_total) *m_total = sl->mp + sl->mv + sl->ma;
    return MBK_OK;
}
