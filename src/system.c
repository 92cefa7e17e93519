/* The System: ordered subsystems, topology versioning and stage-by-stage
 * realization of States. */
#include "system_impl.h"

#include <math.h>
#include <stdio.h>
#include <string.h>

#include "mbk/alloc.h"
#include "mbk/checkpoint.h"
#include "mbk/status.h"
#include "state_impl.h"
#include "status_impl.h"

const mbk_system *mbk_subsystem_ctx_get_system(const mbk_subsystem_ctx *c) { return c ? c->sys : NULL; }

int mbk_subsystem_ctx_get_index(const mbk_subsystem_ctx *c) { return c ? c->index : -1; }

/* ------------------------------------------------------------------ */
/* Lifecycle                                                            */
/* ------------------------------------------------------------------ */

mbk_system *mbk_system_create(const char *name)
{
    mbk_system *sys = mbk_calloc(1, sizeof *sys);
    if (!sys) return NULL;
    const char *n = name ? name : "system";
    size_t len = strlen(n);
    sys->name = mbk_malloc(len + 1);
    if (!sys->name) {
        mbk_free(sys);
        return NULL;
    }
    memcpy(sys->name, n, len + 1);
    sys->topology_version = 1;
    return sys;
}

void mbk_system_destroy(mbk_system *sys)
{
    if (!sys) return;
    for (int k = sys->nsub - 1; k >= 0; --k) {
        sys_sub *b = sys->subs[k];
        if (b->ops.destroy) b->ops.destroy(b->impl);
        mbk_free(b);
    }
    mbk_free(sys->subs);
    mbk_state_destroy(sys->default_state);
    mbk_free(sys->name);
    mbk_free(sys);
}

const char *mbk_system_get_name(const mbk_system *sys)
{
    if (!sys) mbk_set_error(MBK_EINVAL, "mbk_system_get_name: system is NULL");
    return sys ? sys->name : NULL;
}

/* The realize op of stage g. */
static mbk_realize_fn stage_op(const mbk_subsystem_ops *ops, int g)
{
    switch (g) {
    case MBK_STAGE_TOPOLOGY: return ops->realize_topology;
    case MBK_STAGE_MODEL: return ops->realize_model;
    case MBK_STAGE_INSTANCE: return ops->realize_instance;
    case MBK_STAGE_TIME: return ops->realize_time;
    case MBK_STAGE_POSITION: return ops->realize_position;
    case MBK_STAGE_VELOCITY: return ops->realize_velocity;
    case MBK_STAGE_DYNAMICS: return ops->realize_dynamics;
    case MBK_STAGE_ACCELERATION: return ops->realize_acceleration;
    case MBK_STAGE_REPORT: return ops->realize_report;
    default: return NULL;
    }
}

int mbk_system_add_subsystem(mbk_system *sys, const mbk_subsystem_ops *ops, void *impl)
{
    if (!sys) return mbk_set_error(MBK_EINVAL, "mbk_system_add_subsystem: system is NULL");
    if (!ops) return mbk_set_error(MBK_EINVAL, "mbk_system_add_subsystem: ops table is NULL");
    if (sys->nsub == sys->cap) {
        int cap = sys->cap ? 2 * sys->cap : 4;
        sys_sub **subs = mbk_realloc(sys->subs, (size_t)cap * sizeof *subs);
        if (!subs) return MBK_ENOMEM;
        sys->subs = subs;
        sys->cap = cap;
    }
    sys_sub *b = mbk_calloc(1, sizeof *b);
    if (!b) return MBK_ENOMEM;
    b->ops = *ops;
    b->ops_source = ops;
    for (int g = 0; g < MBK_NUM_STAGES; ++g) b->realize[g] = stage_op(ops, g);
    b->impl = impl;
    b->ctx.sys = sys;
    b->ctx.index = sys->nsub;
    sys->subs[sys->nsub] = b;
    mbk_system_invalidate_topology(sys);
    return sys->nsub++;
}

int mbk_system_get_num_subsystems(const mbk_system *sys) { return sys ? sys->nsub : 0; }

/* Subsystem record or NULL with MBK_EINVAL. */
static sys_sub *sub_at(const mbk_system *sys, int k, const char *fn)
{
    if (!sys) {
        mbk_set_error(MBK_EINVAL, "%s: system is NULL", fn);
        return NULL;
    }
    if (k < 0 || k >= sys->nsub) {
        mbk_set_error(MBK_EINVAL, "%s: subsystem index %d is out of range; the system has %d", fn,
                      k, sys->nsub);
        return NULL;
    }
    return sys->subs[k];
}

void *mbk_system_upd_subsystem_impl(mbk_system *sys, int k)
{
    sys_sub *b = sub_at(sys, k, "mbk_system_upd_subsystem_impl");
    return b ? b->impl : NULL;
}

const void *mbk_system_get_subsystem_impl(const mbk_system *sys, int k)
{
    const sys_sub *b = sub_at(sys, k, "mbk_system_get_subsystem_impl");
    return b ? b->impl : NULL;
}

const mbk_subsystem_ops *mbk_system_get_subsystem_ops(const mbk_system *sys, int k)
{
    const sys_sub *b = sub_at(sys, k, "mbk_system_get_subsystem_ops");
    return b ? b->ops_source : NULL;
}

const char *mbk_system_get_subsystem_name(const mbk_system *sys, int k)
{
    const sys_sub *b = sub_at(sys, k, "mbk_system_get_subsystem_name");
    return b ? (b->ops.name ? b->ops.name : "(unnamed)") : NULL;
}

int mbk_system_find_subsystem(const mbk_system *sys, const mbk_subsystem_ops *ops)
{
    for (int k = 0; sys && k < sys->nsub; ++k)
        if (sys->subs[k]->ops_source == ops) return k;
    return -1;
}

/* ------------------------------------------------------------------ */
/* Topology                                                             */
/* ------------------------------------------------------------------ */

void mbk_system_invalidate_topology(mbk_system *sys)
{
    if (!sys) return;
    if (sys->topology_realized) sys->topology_version++;
    sys->topology_realized = false;
}

void mbk_system_invalidate_subsystem_topology(mbk_system *sys, int subsystem)
{
    if (sub_at(sys, subsystem, "mbk_system_invalidate_subsystem_topology"))
        mbk_system_invalidate_topology(sys);
}

bool mbk_system_is_topology_realized(const mbk_system *sys) { return sys && sys->topology_realized; }

long mbk_system_get_topology_version(const mbk_system *sys) { return sys ? sys->topology_version : -1; }

/* Status an op's return value becomes, with a message naming the subsystem.
   A negative return passes through only when the op recorded that status. */
static int op_failure(const mbk_system *sys, int k, const char *what, int rc)
{
    int status = rc > 0 ? MBK_ERETRY : (rc == mbk_last_status() ? rc : MBK_EUSER);
    const char *why = mbk_last_error();
    return mbk_set_error(status, "subsystem %d ('%s') failed to %s (returned %d)%s%s", k,
                         mbk_system_get_subsystem_name(sys, k), what, rc, why[0] ? ": " : "", why);
}

/* Advance every subsystem from g - 1 to g, in order. On failure every
   subsystem goes back to g - 1 so that a retry starts clean. *cleared is the error
   count (st_errors) read just before the thread's error record was last cleared. */
static int realize_stage(const mbk_system *sys, mbk_state *s, int g, unsigned long *cleared)
{
    if (g == MBK_STAGE_MODEL || g == MBK_STAGE_INSTANCE) {
        int rc = st_drop_allocations(s, (mbk_stage)g);
        if (rc < 0) return rc;
    }
    /* the stage's variables must be finite; set_q, set_u, ... scanned what they wrote */
    int rc = st_y_known_finite(s, g) ? MBK_OK : st_check_finite(s, (mbk_stage)g);
    if (rc < 0) return rc;
    st_hdr_of(s)->alloc_stage = g <= MBK_STAGE_INSTANCE ? g : MBK_STAGE_EMPTY;
    st_hdr_of(s)->realizing = g;
    for (int k = 0; k < sys->nsub; ++k) {
        if (st_sub_of(s, k)->stage >= g) continue;
        const sys_sub *b = sys->subs[k];
        mbk_realize_fn op = b->realize[g];
        if (!op) {
            st_sub_of(s, k)->stage = g;
            continue;
        }
        /* Any invalidation bumps the Report version: ops may write only cache. */
        long before = st_sub_of(s, k)->version[MBK_STAGE_REPORT];
        /* each op starts with a clear record (op_failure tells its message from an older
           one); cleared again only if an error was recorded anywhere since the last clear */
        if (st_errors() != *cleared) {
            *cleared = st_errors();
            mbk_clear_error();
        }
        rc = op(b->impl, &b->ctx, s);
        if (rc == 0 && st_sub_of(s, k)->version[MBK_STAGE_REPORT] != before && g > MBK_STAGE_INSTANCE)
            rc = mbk_set_error(MBK_EUSER, "it changed a state variable; realize ops of Time and "
                                          "later may write only cache entries");
        if (rc != 0) {
            char what[64];
            snprintf(what, sizeof what, "realize %s", mbk_stage_name((mbk_stage)g));
            rc = op_failure(sys, k, what, rc);
            st_hdr_of(s)->alloc_stage = MBK_STAGE_EMPTY;
            st_hdr_of(s)->realizing = MBK_STAGE_EMPTY;
            if (g > MBK_STAGE_TOPOLOGY) mbk_state_invalidate(s, (mbk_stage)g);
            return rc;
        }
        /* The op may have re-laid out the block: look the record up again. */
        st_sub_of(s, k)->stage = g;
    }
    st_hdr *h = st_hdr_of(s);
    h->alloc_stage = MBK_STAGE_EMPTY;
    h->realizing = MBK_STAGE_EMPTY;
    if (sys->nsub == 0) h->stage = g;
    else st_update_stage(s);
    return MBK_OK;
}

int mbk_system_realize_topology(mbk_system *sys)
{
    if (!sys) return mbk_set_error(MBK_EINVAL, "mbk_system_realize_topology: system is NULL");
    if (sys->topology_realized) return MBK_OK;
    mbk_state *s = mbk_state_create();
    if (!s) return MBK_ENOMEM;
    int rc = st_init_empty(s, sys->nsub);
    if (rc == MBK_OK) {
        unsigned long cleared = st_errors();
        mbk_clear_error();
        rc = realize_stage(sys, s, MBK_STAGE_TOPOLOGY, &cleared);
    }
    if (rc < 0) {
        mbk_state_destroy(s);
        return rc;
    }
    /* Two Systems built alike get the same stamp; any topology change gives another. */
    uint64_t v = (uint64_t)sys->topology_version;
    st_hdr_of(s)->stamp = st_layout_hash(s, 0) ^ (v * 0x9E3779B97F4A7C15ull);
    mbk_state_destroy(sys->default_state);
    sys->default_state = s;
    sys->stamp = st_hdr_of(s)->stamp;
    sys->topology_realized = true;
    return MBK_OK;
}

const mbk_state *mbk_system_get_default_state(const mbk_system *sys)
{
    if (!sys) mbk_set_error(MBK_EINVAL, "mbk_system_get_default_state: system is NULL");
    else if (!sys->topology_realized)
        mbk_set_error(MBK_ESTAGE, "mbk_system_get_default_state: call mbk_system_realize_topology first");
    return sys && sys->topology_realized ? sys->default_state : NULL;
}

uint64_t mbk_system_get_fingerprint(const mbk_system *sys)
{
    const char *fn = "mbk_system_get_fingerprint";
    if (!sys) return mbk_set_error(MBK_EINVAL, "%s: system is NULL", fn), 0;
    if (!sys->topology_realized)
        return mbk_set_error(MBK_ESTAGE, "%s: system '%s' has no realized topology; call "
                             "mbk_system_realize_topology first", fn, sys->name), 0;
    /* the layout of the default State once Model has allocated what its choices ask */
    mbk_state *s = mbk_state_create();
    int rc = s ? mbk_state_copy(s, sys->default_state) : MBK_ENOMEM;
    if (rc == MBK_OK) rc = mbk_system_realize(sys, s, MBK_STAGE_MODEL);
    uint64_t x = rc == MBK_OK ? st_layout_hash(s, 1) : 0;
    if (rc == MBK_OK && x == 0) x = 1; /* 0 means failure */
    if (rc != MBK_OK) mbk_set_error(rc < 0 ? rc : MBK_EINVAL, "%s: realizing the default State of "
                                    "system '%s' to Model failed: %s", fn, sys->name, mbk_last_error());
    mbk_state_destroy(s);
    return x;
}

int mbk_state_init(mbk_state *s, const mbk_system *sys)
{
    if (!s) return mbk_set_error(MBK_EINVAL, "mbk_state_init: state is NULL");
    if (!sys) return mbk_set_error(MBK_EINVAL, "mbk_state_init: system is NULL");
    if (!sys->topology_realized)
        return mbk_set_error(MBK_ESTAGE,
                             "mbk_state_init: system '%s' has no realized topology; call "
                             "mbk_system_realize_topology first",
                             sys->name);
    return mbk_state_copy(s, sys->default_state);
}

int mbk_system_check_state(const mbk_system *sys, const mbk_state *s)
{
    if (sys_state_current(sys, s)) return MBK_OK;
    if (!sys) return mbk_set_error(MBK_EINVAL, "system is NULL");
    if (!s) return mbk_set_error(MBK_EINVAL, "state is NULL");
    if (!sys->topology_realized)
        return mbk_set_error(MBK_ESTALE,
                             "system '%s' changed since its topology was realized; call "
                             "mbk_system_realize_topology, then mbk_state_init for new States",
                             sys->name);
    const st_hdr *h = st_hdr_of(s);
    if (!h)
        return mbk_set_error(MBK_EINVAL, "state is not initialized; call mbk_state_init(state, system)");
    if (h->stamp != sys->stamp)
        return mbk_set_error(MBK_ESTALE,
                             "state was made for an older or different topology than system "
                             "'%s'; call mbk_state_init(state, system) for a fresh State",
                             sys->name);
    return MBK_OK;
}

/* ------------------------------------------------------------------ */
/* Realization                                                          */
/* ------------------------------------------------------------------ */

int mbk_system_realize(const mbk_system *sys, mbk_state *s, mbk_stage stage)
{
    if (stage < MBK_STAGE_TOPOLOGY || stage > MBK_STAGE_REPORT)
        return mbk_set_error(MBK_EINVAL,
                             "mbk_system_realize: cannot realize to stage %d (%s); choose "
                             "Topology..Report",
                             (int)stage, mbk_stage_name(stage));
    int rc = mbk_system_check_state(sys, s);
    if (rc < 0) return rc;
    unsigned long cleared = st_errors();
    mbk_clear_error();
    for (int g = st_hdr_of(s)->stage + 1; g <= (int)stage; ++g) {
        rc = realize_stage(sys, s, g, &cleared);
        if (rc < 0) return rc;
    }
    return MBK_OK;
}

/* One energy op into *sum: the op gets its own accumulator starting at 0.0, so it
   may set it or add into it. A missing op adds nothing. */
static int add_energy(const sys_sub *b,
                      int (*op)(void *, const mbk_subsystem_ctx *, const mbk_state *, double *),
                      const mbk_state *s, double *sum)
{
    double e = 0.0;
    int rc = op ? op(b->impl, &b->ctx, s, &e) : 0;
    if (rc == 0) *sum += e;
    return rc;
}

int mbk_system_calc_energy(const mbk_system *sys, const mbk_state *s, double *kinetic,
                           double *potential)
{
    int rc = mbk_system_check_state(sys, s);
    if (rc < 0) return rc;
    mbk_stage need = kinetic ? MBK_STAGE_VELOCITY : MBK_STAGE_POSITION;
    if (mbk_state_get_stage(s) < need)
        return mbk_set_error(MBK_ESTAGE,
                             "mbk_system_calc_energy: state is realized only to %s; realize to %s",
                             mbk_stage_name(mbk_state_get_stage(s)), mbk_stage_name(need));
    double ke = 0.0, pe = 0.0;
    for (int k = 0; k < sys->nsub; ++k) {
        const sys_sub *b = sys->subs[k];
        mbk_clear_error();
        rc = kinetic ? add_energy(b, b->ops.calc_kinetic_energy, s, &ke) : 0;
        if (rc == 0 && potential) rc = add_energy(b, b->ops.calc_potential_energy, s, &pe);
        if (rc != 0) return op_failure(sys, k, "calculate its energy", rc);
    }
    if (kinetic) *kinetic = ke;
    if (potential) *potential = pe;
    return MBK_OK;
}

/* After a call failed with rc: t and (bak unless NULL) y as they were, realized to the
   stage the State had (it got there before with these variables); rc and the failure's
   message are kept. */
static int put_back(const mbk_system *sys, mbk_state *s, double t_was, const double *bak, int ny, mbk_stage was,
                    int rc)
{
    char msg[MBK_ERROR_MAX];
    snprintf(msg, sizeof msg, "%s", mbk_last_error());
    if (mbk_state_get_time(s) != t_was) mbk_state_set_time(s, t_was);
    if (bak) mbk_state_set_y(s, bak, ny);
    mbk_system_realize(sys, s, was);
    return mbk_set_error(rc, "%s", msg);
}

/* Set t and y (y NULL, or the State's own y written in place: keep it), then realize to
   `stage` (finite_ydot: and find ydot finite). On failure t and y are put back and s is
   realized again to the stage it had, so the caller's variables are as they were; the
   failure's message is kept. */
static int set_and_realize(const mbk_system *sys, mbk_state *s, double t, const double *y, int ny,
                           mbk_stage stage, bool finite_ydot)
{
    mbk_stage was = mbk_state_get_stage(s);
    double t_was = mbk_state_get_time(s);
    bool own = y == mbk_state_get_y(s), replace = y && !own;
    double *bak = st_y_backup(s);
    if (replace && ny > 0) memcpy(bak, mbk_state_get_y(s), (size_t)ny * sizeof(double));
    int rc = MBK_OK;
    if (t != t_was) rc = mbk_state_set_time(s, t);
    if (rc == MBK_OK && replace) rc = mbk_state_set_y(s, y, ny);
    if (rc == MBK_OK && own && !mbk_state_upd_y(s)) rc = mbk_last_status();
    if (rc == MBK_OK) rc = mbk_system_realize(sys, s, stage);
    if (rc >= 0 && finite_ydot) rc = mbk_state_check_ydot(s);
    if (rc >= 0) return rc;
    return put_back(sys, s, t_was, replace ? bak : NULL, ny, was, rc);
}

int mbk_system_calc_ydot(const mbk_system *sys, mbk_state *s, double t, const double *y,
                         double *ydot)
{
    int rc = mbk_system_realize(sys, s, MBK_STAGE_MODEL);
    if (rc < 0) return rc;
    if (!ydot && mbk_state_get_ny(s) > 0) return mbk_set_error(MBK_EINVAL, "mbk_system_calc_ydot: ydot is NULL");
    /* Check everything before changing anything: a refused call leaves the State alone. */
    int ny = mbk_state_get_ny(s);
    if (!isfinite(t)) return mbk_set_error(MBK_ENOTFINITE, "mbk_system_calc_ydot: t = %g is not finite", t);
    int k = y ? mbk_find_nonfinite(y, ny) : -1;
    if (k >= 0)
        return mbk_set_error(MBK_ENOTFINITE, "mbk_system_calc_ydot: y[%d] = %g is not finite; "
                             "the State was not changed", k, y[k]);
    if ((rc = set_and_realize(sys, s, t, y, ny, MBK_STAGE_ACCELERATION, true)) < 0) return rc;
    if (ny > 0) memcpy(ydot, mbk_state_get_ydot(s), (size_t)ny * sizeof(double));
    return MBK_OK;
}

int mbk_system_set_y_and_realize(const mbk_system *sys, mbk_state *s, double t, const double *y,
                                 mbk_stage stage)
{
    const char *fn = "mbk_system_set_y_and_realize";
    int rc = mbk_system_realize(sys, s, MBK_STAGE_MODEL);
    if (rc < 0) return rc;
    if (stage < MBK_STAGE_TIME || stage > MBK_STAGE_REPORT)
        return mbk_set_error(MBK_EINVAL, "%s: stage %s is not Time..Report", fn, mbk_stage_name(stage));
    int ny = mbk_state_get_ny(s);
    if (!isfinite(t)) return mbk_set_error(MBK_ENOTFINITE, "%s: t = %g is not finite", fn, t);
    int k = y ? mbk_find_nonfinite(y, ny) : -1;
    if (k >= 0)
        return mbk_set_error(MBK_ENOTFINITE, "%s: y[%d] = %g is not finite; the State was not changed", fn,
                             k, y[k]);
    return set_and_realize(sys, s, t, y, ny, stage, false);
}

int mbk_system_project(const mbk_system *sys, mbk_state *s, double tol)
{
    int rc = mbk_system_realize(sys, s, MBK_STAGE_INSTANCE);
    if (rc < 0) return rc;
    if (!(tol > 0)) return mbk_set_error(MBK_EINVAL, "mbk_system_project: tol = %g; give a tolerance > 0", tol);
    /* y as it was, put back when a projection fails: one op may have moved the State
       (matter normalizes quaternions) before another (the constraints') fails */
    const mbk_stage was = mbk_state_get_stage(s);
    const int ny = mbk_state_get_ny(s);
    double *bak = st_y_backup(s);
    if (ny > 0) memcpy(bak, mbk_state_get_y(s), (size_t)ny * sizeof(double));
    for (int k = 0; k < sys->nsub; ++k) {
        const sys_sub *b = sys->subs[k];
        if (!b->ops.project) continue;
        mbk_clear_error();
        rc = b->ops.project(b->impl, &b->ctx, s, tol);
        if (rc != 0) return put_back(sys, s, mbk_state_get_time(s), bak, ny, was, op_failure(sys, k, "project", rc));
    }
    return mbk_system_realize(sys, s, MBK_STAGE_VELOCITY);
}

/* The subsystem at index k, or NULL with MBK_EINVAL set. */
static const sys_sub *checked_sub(const mbk_system *sys, int k, const char *fn)
{
    if (!sys) return mbk_set_error(MBK_EINVAL, "%s: system is NULL", fn), NULL;
    if (k < 0 || k >= sys->nsub)
        return mbk_set_error(MBK_EINVAL, "%s: subsystem %d is out of range; the system has %d",
                             fn, k, sys->nsub), NULL;
    return sys->subs[k];
}

/* The subsystem at index k, for an event call on s (a State of sys), or NULL with the
   error set. */
static const sys_sub *event_sub(const mbk_system *sys, int k, const mbk_state *s, const char *fn)
{
    const sys_sub *b = checked_sub(sys, k, fn);
    if (!b) return NULL;
    int rc = mbk_system_check_state(sys, s);
    if (rc < 0) return mbk_set_error(rc, "%s: %s", fn, mbk_last_error()), NULL;
    return b;
}

int mbk_system_handle_events(const mbk_system *sys, int subsystem, mbk_state *s,
                             const int *event_ids, int n_events, mbk_event_result *result)
{
    const char *fn = "mbk_system_handle_events";
    const sys_sub *b = event_sub(sys, subsystem, s, fn);
    if (!b) return mbk_last_status();
    if (!result || n_events < 0 || (n_events > 0 && !event_ids))
        return mbk_set_error(MBK_EINVAL, "%s: give a result, n_events >= 0 and (with events) their ids; got "
                             "result %s, n_events %d, event_ids %s", fn, result ? "set" : "NULL", n_events,
                             event_ids ? "set" : "NULL");
    if (!b->ops.handle_events) return MBK_OK;
    return b->ops.handle_events(b->impl, &b->ctx, s, event_ids, n_events, result);
}

int mbk_system_next_scheduled_event(const mbk_system *sys, int subsystem, const mbk_state *s,
                                    double *t_next, int *event_ids, int *n_events)
{
    const char *fn = "mbk_system_next_scheduled_event";
    const sys_sub *b = event_sub(sys, subsystem, s, fn);
    if (!b) return mbk_last_status();
    if (!t_next || !n_events || *n_events < 0 || (*n_events > 0 && !event_ids))
        return mbk_set_error(MBK_EINVAL, "%s: give t_next, n_events (the capacity of event_ids, >= 0) and, "
                             "with room, event_ids", fn);
    *t_next = INFINITY;
    if (!b->ops.next_scheduled_event) {
        *n_events = 0;
        return MBK_OK;
    }
    return b->ops.next_scheduled_event(b->impl, &b->ctx, s, t_next, event_ids, n_events);
}
