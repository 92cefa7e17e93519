/* The general force subsystem: an ordered list of force elements, their
 * per-State parameters and enabled flags, and the Dynamics-stage loop that
 * adds every enabled element's forces into matter's accumulators. */
#include <limits.h>
#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>

#include "mbk/alloc.h"
#include "mbk/status.h"
#include "forces_impl.h"
#include "../matter/matter_impl.h"

/* ------------------------------------------------------------------ */
/* Checks                                                               */
/* ------------------------------------------------------------------ */

int fe_check_body(const mbk_forces *f, int body, bool ground_ok, const char *fn)
{
    if (!f) return mbk_set_error(MBK_EINVAL, "%s: force subsystem is NULL", fn);
    int nb = mbk_matter_get_num_bodies(mbk_multibody_get_matter(f->sys));
    if (body < (ground_ok ? 0 : 1) || body >= nb)
        return mbk_set_error(MBK_EINVAL, "%s: body %d does not exist; bodies are %d..%d%s", fn, body,
                             ground_ok ? 0 : 1, nb - 1, ground_ok ? " (0 = Ground)" : "");
    return MBK_OK;
}

int fe_check_finite(const double *v, int n, const char *what)
{
    for (int i = 0; i < n; ++i)
        if (!isfinite(v[i]))
            return mbk_set_error(MBK_EINVAL, "%s: value %d is %g; give finite numbers", what, i, v[i]);
    return MBK_OK;
}

static int need_element(const mbk_forces *f, int force, const char *fn)
{
    if (!f) return mbk_set_error(MBK_EINVAL, "%s: force subsystem is NULL", fn);
    if (force < 0 || force >= f->n)
        return mbk_set_error(MBK_EINVAL, "%s: element %d does not exist; there are %d", fn, force, f->n);
    return MBK_OK;
}

/* An element may be added only while the topology is open. */
static int need_open(const mbk_forces *f, const char *fn)
{
    if (!f) return mbk_set_error(MBK_EINVAL, "%s: force subsystem is NULL", fn);
    if (mbk_system_is_topology_realized(f->sys))
        return mbk_set_error(MBK_ESTAGE, "%s: the System's topology is realized; call "
                             "mbk_system_invalidate_topology before adding force elements", fn);
    return MBK_OK;
}

/* ------------------------------------------------------------------ */
/* Adding elements                                                      */
/* ------------------------------------------------------------------ */

static fe_elem *append(mbk_forces *f)
{
    if (f->n == f->cap) {
        int cap = f->cap ? 2 * f->cap : 8;
        fe_elem *e = mbk_realloc(f->elems, (size_t)cap * sizeof *e);
        if (!e) return NULL;
        f->elems = e;
        f->cap = cap;
    }
    fe_elem *e = &f->elems[f->n];
    memset(e, 0, sizeof *e);
    e->param_off = e->cache = e->z = -1;
    return e;
}

int fe_add(mbk_forces *f, const fe_kind *kind, const fe_elem *where, const double *params)
{
    int rc = need_open(f, kind->add_fn);
    if (rc < 0) return rc;
    if ((rc = fe_check_finite(params, kind->nparams, kind->add_fn)) < 0) return rc;
    if ((rc = kind->check(params)) < 0) return mbk_set_error(rc, "%s: %s", kind->add_fn, mbk_last_error());
    fe_elem *e = append(f);
    if (!e) return MBK_ENOMEM;
    *e = *where;
    e->kind = kind;
    e->impl = NULL;
    e->name = NULL;
    e->param_off = e->cache = e->z = -1;
    memcpy(e->defaults, params, (size_t)kind->nparams * sizeof(double));
    return f->n++;
}

int mbk_force_add_custom(mbk_forces *f, const mbk_force_ops *ops, void *impl)
{
    const char *fn = "mbk_force_add_custom";
    int rc = need_open(f, fn);
    if (rc < 0) return rc;
    if (!ops || (!ops->calc_force && !ops->calc_potential_energy))
        return mbk_set_error(MBK_EINVAL, "%s: give an ops table with calc_force or calc_potential_energy", fn);
    fe_elem *e = append(f);
    if (!e) return MBK_ENOMEM;
    e->ops = *ops;
    e->impl = impl;
    return f->n++;
}

/* ------------------------------------------------------------------ */
/* Realization                                                          */
/* ------------------------------------------------------------------ */

/* Call one of the custom elements' own realize ops. */
static int custom_realize(const mbk_forces *f, const mbk_subsystem_ctx *c, mbk_state *s, int which)
{
    for (int i = 0; i < f->n; ++i) {
        const fe_elem *e = &f->elems[i];
        mbk_realize_fn op = which == 0 ? e->ops.realize_topology
                            : which == 1 ? e->ops.realize_model : e->ops.realize_instance;
        int rc = (!e->kind && op) ? op(e->impl, c, s) : 0;
        if (rc != 0) return rc;
    }
    return 0;
}

/* One flag per element, all on, so enabling never re-lays out the State. */
static int allocate_enabled(mbk_forces *f, int k, mbk_state *s)
{
    mbk_value_type flags = mbk_value_array_of_int(f->n > 0 ? f->n : 1);
    int *on = mbk_calloc((size_t)(f->n > 0 ? f->n : 1), sizeof(int));
    if (!on) return MBK_ENOMEM;
    for (int i = 0; i < f->n; ++i) on[i] = 1;
    f->enabled_var = mbk_state_allocate_discrete(s, k, MBK_STAGE_INSTANCE, &flags, on);
    mbk_free(on);
    return f->enabled_var < 0 ? f->enabled_var : MBK_OK;
}

/* Every built-in's parameters in one discrete variable, each at its param_off: each State
   allocation rebuilds the whole State, so one per element made Topology quadratic. */
static int allocate_params(mbk_forces *f, int k, mbk_state *s)
{
    int total = 0;
    for (int i = 0; i < f->n; ++i) {
        fe_elem *e = &f->elems[i];
        e->param_off = e->kind ? total : -1;
        if (e->kind && e->kind->nparams > INT_MAX - total)
            return mbk_set_error(MBK_EINVAL, "force subsystem: the elements' parameters are more than %d doubles",
                                 INT_MAX);
        total += e->kind ? e->kind->nparams : 0;
    }
    double *init = mbk_malloc((size_t)(total > 0 ? total : 1) * sizeof(double));
    if (!init) return MBK_ENOMEM;
    for (int i = 0; i < f->n; ++i)
        if (f->elems[i].kind)
            memcpy(init + f->elems[i].param_off, f->elems[i].defaults,
                   (size_t)f->elems[i].kind->nparams * sizeof(double));
    mbk_value_type t = mbk_value_array_of_double(total > 0 ? total : 1);
    f->param_var = mbk_state_allocate_discrete(s, k, MBK_STAGE_DYNAMICS, &t, init);
    mbk_free(init);
    return f->param_var < 0 ? f->param_var : MBK_OK;
}

/* The dissipated energies of all dissipating elements: one z allocation, from 0. */
static int allocate_dissipated(mbk_forces *f, int k, mbk_state *s)
{
    int nz = 0;
    for (int i = 0; i < f->n; ++i) nz += f->elems[i].kind && f->elems[i].kind->dissipation;
    if (nz == 0) return MBK_OK;
    int z0 = mbk_state_allocate_z(s, k, nz, NULL);
    if (z0 < 0) return z0;
    for (int i = 0; i < f->n; ++i)
        if (f->elems[i].kind && f->elems[i].kind->dissipation) f->elems[i].z = z0++;
    return MBK_OK;
}

/* Bytes of one slot of force_cache: an element's body forces, then its mobility forces. */
static size_t cache_slot_bytes(const mbk_forces *f)
{
    return (size_t)f->nb * sizeof(mbk_spatial_vec) + (size_t)f->nu * sizeof(double);
}

/* Position-only custom elements' forces in one lazy cache entry: a slot per element, then
   one int per slot saying whether the slot is computed since the entry was last realized. */
static int allocate_force_cache(mbk_forces *f, int k, mbk_state *s)
{
    f->force_cache = -1;
    f->ncached = 0;
    for (int i = 0; i < f->n; ++i) {
        fe_elem *e = &f->elems[i];
        e->cache = !e->kind && e->ops.depends_only_on_positions && e->ops.calc_force ? f->ncached++ : -1;
    }
    if (f->ncached == 0) return MBK_OK;
    size_t slot = cache_slot_bytes(f), n = (size_t)f->ncached;
    if (slot > (SIZE_MAX / 2 - n * sizeof(int)) / n)
        return mbk_set_error(MBK_EINVAL, "force subsystem: %d position-only custom elements on %d bodies need "
                             "more cache memory than can be addressed", f->ncached, f->nb);
    mbk_value_type t = mbk_value_bytes(n * slot + n * sizeof(int), 64);
    f->force_cache = mbk_state_allocate_lazy_cache(s, k, MBK_STAGE_POSITION, &t, NULL);
    return f->force_cache < 0 ? f->force_cache : MBK_OK;
}

static int fs_topology(void *impl, const mbk_subsystem_ctx *c, mbk_state *s)
{
    mbk_forces *f = impl;
    const mbk_matter *m = mbk_multibody_get_matter(f->sys);
    int k = mbk_subsystem_ctx_get_index(c);
    f->sub = k;
    f->matter = m;
    f->nb = mbk_matter_get_num_bodies(m);
    f->nu = mbk_matter_get_num_mobilities(m);
    int rc = allocate_enabled(f, k, s);
    if (rc == MBK_OK) rc = allocate_params(f, k, s);
    if (rc == MBK_OK) rc = allocate_dissipated(f, k, s);
    if (rc == MBK_OK) rc = allocate_force_cache(f, k, s);
    return rc < 0 ? rc : custom_realize(f, c, s, 0);
}

static int fs_model(void *impl, const mbk_subsystem_ctx *c, mbk_state *s)
{
    return custom_realize(impl, c, s, 1);
}

/* Mobility elements need qdot = u on their coordinate: checked once sizes are known. */
static int fs_instance(void *impl, const mbk_subsystem_ctx *c, mbk_state *s)
{
    const mbk_forces *f = impl;
    const mbk_matter *m = mbk_multibody_get_matter(f->sys);
    for (int i = 0; i < f->n; ++i) {
        const fe_elem *e = &f->elems[i];
        if (e->kind != &fe_mob_spring && e->kind != &fe_mob_damper && e->kind != &fe_mob_constant &&
            e->kind != &fe_mob_stop && e->kind != &fe_mob_friction)
            continue;
        int nq = mbk_matter_get_body_num_q(m, s, e->body[0]), nu = mbk_matter_get_body_num_u(m, s, e->body[0]);
        bool uses_q = e->kind == &fe_mob_spring || e->kind == &fe_mob_stop;
        bool qdot_is_u = nq == nu && !m->bodies[e->body[0]].mob.ops->calc_qdot;
        if (e->coord >= nu || (uses_q && (e->coord >= nq || !qdot_is_u)))
            return mbk_set_error(MBK_EINVAL,
                                 "force element %d (%s): body %d has nq = %d, nu = %d and its qdot is %s u; "
                                 "coordinate %d needs qdot = u (Pin, Slider, Universal, Gimbal, ...); use a "
                                 "custom force on other mobilizers", i, e->kind->name, e->body[0], nq, nu,
                                 qdot_is_u ? "" : "not", e->coord);
    }
    return custom_realize(impl, c, s, 2);
}

/* The State's enabled flags, unchecked (st_disc_bytes): every caller has checked the State. */
static const int *enabled_flags(const mbk_forces *f, const mbk_state *s)
{
    return st_disc_bytes(s, f->sub, f->enabled_var);
}

/* An element's parameters in the State, unchecked as enabled_flags. */
const double *fe_params(const mbk_forces *f, const fe_elem *e, const mbk_state *s)
{
    return (const double *)st_disc_bytes(s, f->sub, f->param_var) + e->param_off;
}

/* Status for an element's failure: >0 recoverable, a status it recorded, else MBK_EUSER. */
static int element_failure(const mbk_forces *f, int i, int rc, const char *what)
{
    const fe_elem *e = &f->elems[i];
    const char *name = e->kind ? e->kind->name : e->ops.name ? e->ops.name : "custom";
    int status = rc > 0 ? MBK_ERETRY : (rc == mbk_last_status() ? rc : MBK_EUSER);
    const char *why = mbk_last_error();
    return mbk_set_error(status, "force element %d (%s) failed to %s (returned %d)%s%s", i, name, what, rc,
                         why[0] ? ": " : "", why);
}

/* A position-only custom element: reuse its forces while q and t stay put. */
static int cached_custom_force(const mbk_forces *f, const fe_elem *e, const mbk_force_ctx *c,
                               const mbk_state *s, mbk_spatial_vec *F, double *tau)
{
    unsigned char *blob = mbk_state_upd_cache(s, f->sub, f->force_cache);
    size_t slot = cache_slot_bytes(f);
    int *done = (int *)(blob + (size_t)f->ncached * slot);
    /* the entry went stale (Position changed): every slot must be computed anew */
    if (!mbk_state_is_cache_realized(s, f->sub, f->force_cache)) {
        memset(done, 0, (size_t)f->ncached * sizeof *done);
        mbk_state_mark_cache_realized(s, f->sub, f->force_cache);
    }
    mbk_spatial_vec *cF = (mbk_spatial_vec *)(blob + (size_t)e->cache * slot);
    double *ctau = mt_mobility_forces(cF, f->nb);
    if (!done[e->cache]) {
        memset(cF, 0, slot);
        int rc = e->ops.calc_force(e->impl, c, s, cF, ctau);
        if (rc != 0) return rc;
        done[e->cache] = 1;
    }
    for (int b = 0; b < f->nb; ++b) F[b] = mbk_spatial_vec_add(F[b], cF[b]);
    for (int j = 0; j < f->nu; ++j) tau[j] += ctau[j];
    return 0;
}

/* Add element i's forces into F and tau. */
static int element_force(const mbk_forces *f, int i, const mbk_state *s, mbk_spatial_vec *F, double *tau)
{
    const fe_elem *e = &f->elems[i];
    mbk_force_ctx c = {f, i};
    int rc = 0;
    mbk_clear_error();
    if (e->kind) rc = e->kind->force(e, fe_params(f, e, s), &c, s, F, tau);
    else if (e->cache >= 0) rc = cached_custom_force(f, e, &c, s, F, tau);
    else if (e->ops.calc_force) rc = e->ops.calc_force(e->impl, &c, s, F, tau);
    return rc != 0 ? element_failure(f, i, rc, "compute its forces") : 0;
}

/* Where the first NaN or infinity of the sums F, tau is: a message fragment. */
static int describe_nonfinite(const mbk_forces *f, const mbk_spatial_vec *F, const double *tau, char *buf,
                              size_t n)
{
    int k = mbk_find_nonfinite((const double *)F, 6 * f->nb);
    if (k >= 0) {
        static const char *part[6] = {"moment x", "moment y", "moment z", "force x", "force y", "force z"};
        snprintf(buf, n, "the %s on body %d is %g", part[k % 6], k / 6, ((const double *)F)[k]);
        return 1;
    }
    if ((k = mbk_find_nonfinite(tau, f->nu)) >= 0) {
        snprintf(buf, n, "the mobility force on u[%d] is %g", k, tau[k]);
        return 1;
    }
    return 0;
}

/* The sums hold NaN or infinity: run the elements again one at a time, into the
   zeroed sums, to name the first that makes them so (only on this failure path). */
static int blame_nonfinite(const mbk_forces *f, const mbk_state *s, mbk_spatial_vec *F, double *tau,
                           const int *on)
{
    char where[160];
    describe_nonfinite(f, F, tau, where, sizeof where);
    memset(F, 0, (size_t)f->nb * sizeof *F + (size_t)f->nu * sizeof *tau);
    for (int i = 0; i < f->n; ++i) {
        if (!on[i] || element_force(f, i, s, F, tau) != 0) continue;
        if (!describe_nonfinite(f, F, tau, where, sizeof where)) continue;
        const fe_elem *e = &f->elems[i];
        return mbk_set_error(MBK_ENOTFINITE, "force element %d (%s) produced a non-finite force: %s at t = %g; "
                             "check its parameters (an overflow?) and the State's q and u",
                             i, e->kind ? e->kind->name : e->ops.name ? e->ops.name : "custom", where,
                             mbk_state_get_time(s));
    }
    return mbk_set_error(MBK_ENOTFINITE, "the applied forces are not finite (%s) at t = %g; check the force "
                         "elements' parameters and the State's q and u", where, mbk_state_get_time(s));
}

static int fs_dynamics(void *impl, const mbk_subsystem_ctx *sc, mbk_state *s)
{
    (void)sc;
    const mbk_forces *f = impl;
    /* matter realized its Dynamics (zeroing these) before any force subsystem: use them directly */
    mbk_spatial_vec *F = mt_cache(f->matter, s, C_FORCES);
    double *tau = mt_mobility_forces(F, f->nb);
    const int *on = enabled_flags(f, s);
    if (!F) return mbk_last_status();
    for (int i = 0; i < f->n; ++i) {
        if (!on[i]) continue;
        int rc = element_force(f, i, s, F, tau);
        if (rc != 0) return rc;
    }
    /* a cheap scan of the sums (tau follows F in one blob: one scan); a NaN or infinity must
       not pass as a result */
    if (mbk_find_nonfinite((const double *)F, 6 * f->nb + f->nu) >= 0) return blame_nonfinite(f, s, F, tau, on);
    *mt_forces_checked(f->matter, F) = 1.0; /* scanned: the operators need not scan them again */
    return 0;
}

/* The z of dissipating elements: zdot = the rate of dissipation (0 while disabled). */
static int fs_acceleration(void *impl, const mbk_subsystem_ctx *sc, mbk_state *s)
{
    (void)sc;
    const mbk_forces *f = impl;
    double *zdot = NULL;
    const int *on = enabled_flags(f, s);
    for (int i = 0; i < f->n; ++i) {
        const fe_elem *e = &f->elems[i];
        if (e->z < 0) continue;
        if (!zdot && !(zdot = mbk_state_upd_subsystem_zdot(s, f->sub))) return mbk_last_status();
        mbk_force_ctx c = {f, i};
        zdot[e->z] = on[i] ? e->kind->dissipation(e, fe_params(f, e, s), &c, s) : 0.0;
    }
    return 0;
}

/* One element's potential energy, added into *pe. The element gets its own
   accumulator starting at 0.0, so it may set it or add into it. */
static int element_energy(const mbk_forces *f, int i, const mbk_state *s, double *pe)
{
    const fe_elem *e = &f->elems[i];
    mbk_force_ctx c = {f, i};
    mbk_clear_error();
    int rc = 0;
    double own = 0.0;
    if (e->kind) rc = e->kind->energy ? e->kind->energy(e, fe_params(f, e, s), &c, s, &own) : 0;
    else if (e->ops.calc_potential_energy) rc = e->ops.calc_potential_energy(e->impl, &c, s, &own);
    if (rc) return element_failure(f, i, rc, "compute its potential energy");
    *pe += own;
    return 0;
}

static int fs_potential(void *impl, const mbk_subsystem_ctx *sc, const mbk_state *s, double *pe)
{
    (void)sc;
    const mbk_forces *f = impl;
    const int *on = enabled_flags(f, s);
    for (int i = 0; i < f->n; ++i) {
        int rc = on[i] ? element_energy(f, i, s, pe) : 0;
        if (rc != 0) return rc;
    }
    return 0;
}

static void fs_destroy(void *impl)
{
    mbk_forces *f = impl;
    for (int i = 0; i < f->n; ++i) {
        if (!f->elems[i].kind && f->elems[i].ops.destroy) f->elems[i].ops.destroy(f->elems[i].impl);
        mbk_free(f->elems[i].name);
    }
    mbk_free(f->elems);
    mbk_free(f);
}

static const mbk_subsystem_ops forces_ops = {
    .name = "forces",
    .realize_topology = fs_topology,
    .realize_model = fs_model,
    .realize_instance = fs_instance,
    .realize_dynamics = fs_dynamics,
    .realize_acceleration = fs_acceleration,
    .calc_potential_energy = fs_potential,
    .destroy = fs_destroy,
};

/* ------------------------------------------------------------------ */
/* Finding force subsystems                                             */
/* ------------------------------------------------------------------ */

mbk_forces *mbk_multibody_add_forces(mbk_system *sys, const char *name)
{
    (void)name;
    if (!mbk_multibody_get_matter(sys)) {
        mbk_set_error(MBK_EINVAL, "mbk_multibody_add_forces: the System has no matter subsystem; "
                                  "create it with mbk_multibody_create");
        return NULL;
    }
    mbk_forces *f = mbk_calloc(1, sizeof *f);
    if (!f) return NULL;
    f->sys = sys;
    f->sub = mbk_system_add_subsystem(sys, &forces_ops, f);
    if (f->sub < 0) {
        mbk_free(f);
        return NULL;
    }
    return f;
}

mbk_forces *mbk_multibody_upd_forces(mbk_system *sys)
{
    int k = mbk_system_find_subsystem(sys, &forces_ops);
    return k < 0 ? NULL : mbk_system_upd_subsystem_impl(sys, k);
}

int fe_element_force(const mbk_forces *f, int i, const mbk_state *s, mbk_spatial_vec *F, double *tau)
{
    return element_force(f, i, s, F, tau);
}

const mbk_forces *fe_forces_of(const mbk_system *sys, int subsystem)
{
    return mbk_system_get_subsystem_ops(sys, subsystem) == &forces_ops ? mbk_system_get_subsystem_impl(sys, subsystem)
                                                                         : NULL;
}

const mbk_forces *mbk_multibody_get_forces(const mbk_system *sys)
{
    int k = mbk_system_find_subsystem(sys, &forces_ops);
    return k < 0 ? NULL : mbk_system_get_subsystem_impl(sys, k);
}

int mbk_forces_get_subsystem_index(const mbk_forces *f)
{
    return f ? f->sub : mbk_set_error(MBK_EINVAL, "mbk_forces_get_subsystem_index: force subsystem is NULL");
}

int mbk_forces_get_num_elements(const mbk_forces *f) { return f ? f->n : 0; }

const mbk_system *mbk_force_ctx_get_system(const mbk_force_ctx *c) { return c ? c->f->sys : NULL; }

const mbk_matter *mbk_force_ctx_get_matter(const mbk_force_ctx *c)
{
    if (!c) return NULL;
    return c->f->matter ? c->f->matter : mbk_multibody_get_matter(c->f->sys);
}

int mbk_force_ctx_get_element(const mbk_force_ctx *c) { return c ? c->element : -1; }

int mbk_force_ctx_get_subsystem(const mbk_force_ctx *c) { return c ? c->f->sub : -1; }

/* ------------------------------------------------------------------ */
/* Per-State parameters                                                 */
/* ------------------------------------------------------------------ */

/* Element checks plus a State of this System. */
static int need_state(const mbk_forces *f, const mbk_state *s, int force, const char *fn)
{
    int rc = need_element(f, force, fn);
    if (rc < 0) return rc;
    return mbk_system_check_state(f->sys, s);
}

int mbk_force_set_enabled(const mbk_forces *f, mbk_state *s, int force, bool on)
{
    int rc = need_state(f, s, force, "mbk_force_set_enabled");
    if (rc < 0) return rc;
    if (!!enabled_flags(f, s)[force] == on) return MBK_OK; /* nothing changes: keep the stage */
    int *flags = mbk_state_upd_discrete(s, f->sub, f->enabled_var);
    if (!flags) return mbk_last_status();
    flags[force] = on;
    return MBK_OK;
}

bool mbk_force_is_enabled(const mbk_forces *f, const mbk_state *s, int force)
{
    return need_state(f, s, force, "mbk_force_is_enabled") == MBK_OK && enabled_flags(f, s)[force];
}

int mbk_force_get_num_parameters(const mbk_forces *f, int force)
{
    int rc = need_element(f, force, "mbk_force_get_num_parameters");
    if (rc < 0) return rc;
    return f->elems[force].kind ? f->elems[force].kind->nparams : 0;
}

/* Element, State and parameter count all right. */
static int need_params(const mbk_forces *f, const mbk_state *s, int force, const double *v, int n,
                       const char *fn)
{
    int rc = need_state(f, s, force, fn);
    if (rc < 0) return rc;
    const fe_kind *k = f->elems[force].kind;
    if (!k) return mbk_set_error(MBK_EINVAL, "%s: element %d is custom; it keeps its own parameters", fn, force);
    if (!v || n != k->nparams)
        return mbk_set_error(MBK_EINVAL, "%s: element %d (%s) has %d parameters, got %d%s", fn, force,
                             k->name, k->nparams, n, v ? "" : " and a NULL array");
    return MBK_OK;
}

int mbk_force_get_parameters(const mbk_forces *f, const mbk_state *s, int force, double *values, int n)
{
    int rc = need_params(f, s, force, values, n, "mbk_force_get_parameters");
    if (rc < 0) return rc;
    memcpy(values, fe_params(f, &f->elems[force], s), (size_t)n * sizeof(double));
    return MBK_OK;
}

int mbk_force_set_parameters(const mbk_forces *f, mbk_state *s, int force, const double *values, int n)
{
    const char *fn = "mbk_force_set_parameters";
    int rc = need_params(f, s, force, values, n, fn);
    if (rc < 0) return rc;
    const fe_elem *e = &f->elems[force];
    if ((rc = fe_check_finite(values, n, fn)) < 0) return rc;
    if ((rc = e->kind->check(values)) < 0)
        return mbk_set_error(rc, "%s: element %d (%s): %s", fn, force, e->kind->name, mbk_last_error());
    double *p = mbk_state_upd_discrete(s, f->sub, f->param_var);
    if (!p) return mbk_last_status();
    memcpy(p + e->param_off, values, (size_t)n * sizeof(double));
    return MBK_OK;
}

int mbk_force_set_gravity(const mbk_forces *f, mbk_state *s, int force, mbk_vec3 g)
{
    const char *fn = "mbk_force_set_gravity";
    int rc = need_state(f, s, force, fn);
    if (rc < 0) return rc;
    if (f->elems[force].kind != &fe_gravity)
        return mbk_set_error(MBK_EINVAL, "%s: element %d is not a gravity element", fn, force);
    double p[4];
    memcpy(p, fe_params(f, &f->elems[force], s), sizeof p);
    p[0] = g.x;
    p[1] = g.y;
    p[2] = g.z;
    return mbk_force_set_parameters(f, s, force, p, 4);
}

/* The names of each built-in's parameters, in the order of its parameter array
   (docs/forces.md, section 2). */
static const char *const *param_names(const fe_kind *k)
{
    static const char *const gravity[] = {"gx", "gy", "gz", "z0"}, *const spring[] = {"k", "x0"},
                             *const damper[] = {"c"}, *const constant[] = {"F"}, *const mob_spring[] = {"k", "q0"},
                             *const stop[] = {"k", "d", "q_low", "q_high"}, *const vec[] = {"Fx", "Fy", "Fz"},
                             *const torque[] = {"Tx", "Ty", "Tz"},
                             *const bushing[] = {"k0", "k1", "k2", "k3", "k4", "k5", "c0", "c1", "c2", "c3", "c4", "c5"},
                             *const contact[] = {"E", "c", "mu_s", "mu_d", "mu_v", "vt"},
                             *const friction[] = {"F", "vt"};
    if (k == &fe_gravity) return gravity;
    if (k == &fe_tp_spring) return spring;
    if (k == &fe_tp_damper || k == &fe_mob_damper) return damper;
    if (k == &fe_tp_constant || k == &fe_mob_constant) return constant;
    if (k == &fe_mob_spring) return mob_spring;
    if (k == &fe_mob_stop) return stop;
    if (k == &fe_constant_force) return vec;
    if (k == &fe_constant_torque) return torque;
    if (k == &fe_bushing) return bushing;
    if (k == &fe_hunt_crossley) return contact;
    if (k == &fe_mob_friction) return friction;
    return NULL;
}

const char *mbk_force_get_parameter_name(const mbk_forces *f, int force, int index)
{
    if (need_element(f, force, "mbk_force_get_parameter_name") < 0) return NULL;
    const fe_kind *k = f->elems[force].kind;
    const char *const *names = k ? param_names(k) : NULL;
    if (!names || index < 0 || index >= k->nparams) {
        mbk_set_error(MBK_EINVAL, "mbk_force_get_parameter_name: element %d has %d parameters; %d is none of them",
                      force, k ? k->nparams : 0, index);
        return NULL;
    }
    return names[index];
}

int mbk_force_find_parameter(const mbk_forces *f, int force, const char *name)
{
    int rc = need_element(f, force, "mbk_force_find_parameter");
    if (rc < 0) return rc;
    const fe_kind *k = f->elems[force].kind;
    const char *const *names = k ? param_names(k) : NULL;
    for (int i = 0; names && name && i < k->nparams; ++i)
        if (strcmp(names[i], name) == 0) return i;
    return -1;
}

const char *mbk_force_get_name(const mbk_forces *f, int force)
{
    if (need_element(f, force, "mbk_force_get_name") < 0) return NULL;
    return f->elems[force].name ? f->elems[force].name : "";
}

const char *mbk_force_get_kind_name(const mbk_forces *f, int force)
{
    if (need_element(f, force, "mbk_force_get_kind_name") < 0) return NULL;
    const fe_elem *e = &f->elems[force];
    return e->kind ? e->kind->name : e->ops.name ? e->ops.name : "custom";
}

int mbk_force_set_name(mbk_forces *f, int force, const char *name)
{
    int rc = need_element(f, force, "mbk_force_set_name");
    if (rc < 0) return rc;
    if (!name) return mbk_set_error(MBK_EINVAL, "mbk_force_set_name: name is NULL");
    /* a copy of any length: a cut name could collide with another's (limit:JOINT of long joints) */
    size_t len = strlen(name);
    char *copy = mbk_malloc(len + 1);
    if (!copy) return mbk_set_error(MBK_ENOMEM, "mbk_force_set_name: out of memory copying a name of %zu bytes", len);
    memcpy(copy, name, len + 1);
    mbk_free(f->elems[force].name);
    f->elems[force].name = copy;
    return MBK_OK;
}

int mbk_force_find(const mbk_forces *f, const char *name)
{
    for (int i = 0; f && name && name[0] && i < f->n; ++i)
        if (f->elems[i].name && strcmp(f->elems[i].name, name) == 0) return i;
    return -1;
}

int mbk_force_calc_potential_energy(const mbk_forces *f, const mbk_state *s, int force, double *pe)
{
    const char *fn = "mbk_force_calc_potential_energy";
    int rc = need_state(f, s, force, fn);
    if (rc < 0) return rc;
    if (!pe) return mbk_set_error(MBK_EINVAL, "%s: pe is NULL", fn);
    if (mbk_state_get_stage(s) < MBK_STAGE_POSITION)
        return mbk_set_error(MBK_ESTAGE, "%s: realize to Position first", fn);
    *pe = 0.0;
    return enabled_flags(f, s)[force] ? element_energy(f, force, s, pe) : MBK_OK;
}

int mbk_force_get_dissipated_energy(const mbk_forces *f, const mbk_state *s, int force, double *energy)
{
    const char *fn = "mbk_force_get_dissipated_energy";
    int rc = need_state(f, s, force, fn);
    if (rc < 0) return rc;
    if (!energy) return mbk_set_error(MBK_EINVAL, "%s: energy is NULL", fn);
    const fe_elem *e = &f->elems[force];
    if (e->z < 0)
        return mbk_set_error(MBK_EINVAL, "%s: element %d (%s) does not keep its dissipated energy (friction "
                             "elements do)", fn, force, e->kind ? e->kind->name : e->ops.name ? e->ops.name : "custom");
    if (mbk_state_get_stage(s) < MBK_STAGE_MODEL)
        return mbk_set_error(MBK_ESTAGE, "%s: realize to Model first", fn);
    const double *z = mbk_state_get_subsystem_z(s, f->sub);
    if (!z) return mbk_last_status();
    *energy = z[e->z];
    return MBK_OK;
}
