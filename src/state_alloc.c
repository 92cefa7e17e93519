/* Allocation in the State: continuous variables, discrete variables and cache entries
 * (Topology, Model), constraint-error slots and event witnesses (Instance), and dropping
 * what Model and Instance allocated. Each allocation rebuilds the block (state_block.c). */
#include "state_impl.h"

#include <math.h>
#include <string.h>

#include "mbk/status.h"

/* ------------------------------------------------------------------ */
/* Allocation                                                           */
/* ------------------------------------------------------------------ */

/* Allocation is allowed only while realizing the given stages. */
static st_sub *need_alloc(mbk_state *s, int sub, int lo, int hi, const char *fn, const char *where)
{
    st_sub *b = st_need_sub(s, sub, fn);
    if (!b) return NULL;
    int a = st_hdr_of(s)->alloc_stage;
    if (a < lo || a > hi) {
        int now = st_hdr_of(s)->realizing;
        mbk_set_error(MBK_ESTAGE, "%s: allocation is only allowed from a subsystem's %s op (%s%s)",
                      fn, where, now ? "now realizing " : "no realization is running now",
                      now ? mbk_stage_name((mbk_stage)now) : "");
        return NULL;
    }
    return b;
}

/* Initial values of q, u or z must be finite. */
static int check_doubles(const st_edit *e, const char *fn)
{
    for (int i = 0; e->init && i < e->n; ++i)
        if (!isfinite(e->init[i]))
            return mbk_set_error(MBK_ENOTFINITE, "%s: initial value %d is %g", fn, i, e->init[i]);
    return MBK_OK;
}

/* A discrete variable invalidates a stage after the one allocating it. */
static int check_discrete(const mbk_state *s, const st_edit *e, const char *fn)
{
    int a = st_hdr_of(s)->alloc_stage;
    if (e->stage_a <= a || e->stage_a > MBK_STAGE_REPORT)
        return mbk_set_error(MBK_EINVAL,
                             "%s: a discrete variable allocated at %s must invalidate a later "
                             "stage up to Report, not %s",
                             fn, mbk_stage_name((mbk_stage)a), mbk_stage_name((mbk_stage)e->stage_a));
    return mbk_value_type_check(e->type);
}

/* A cache entry is computed at or after the stage it depends on. */
static int check_cache(const st_edit *e, const char *fn)
{
    mbk_stage depends_on = (mbk_stage)e->stage_a, computed_by = (mbk_stage)e->stage_b;
    if (depends_on < MBK_STAGE_TOPOLOGY || depends_on > MBK_STAGE_REPORT ||
        computed_by < depends_on || computed_by > MBK_STAGE_INFINITY)
        return mbk_set_error(MBK_EINVAL,
                             "%s: need Topology <= depends_on (%s) <= computed_by (%s), "
                             "depends_on <= Report",
                             fn, mbk_stage_name(depends_on), mbk_stage_name(computed_by));
    int rc = mbk_value_type_check(e->type);
    /* work space: the type is made from the caller's size and alignment, so say whose they are */
    if (rc < 0 && e->scratch) return mbk_set_error(rc, "%s: %s", fn, mbk_last_error());
    return rc;
}

/* The index the first new item of e gets in subsystem b. */
static int first_index(const st_sub *b, const st_edit *e)
{
    switch (e->kind) {
    case EDIT_Q: return b->nq;
    case EDIT_U: return b->nu;
    case EDIT_Z: return b->nz;
    case EDIT_DISC: return b->ndisc;
    case EDIT_CACHE: return b->ncache;
    case EDIT_QERR: return b->nqerr;
    case EDIT_UERR: return b->nuerr;
    case EDIT_UDOTERR: return b->nudoterr;
    case EDIT_TRIG: return b->ntrig[e->stage_a - ST_FIRST_EVENT_STAGE];
    default: return 0;
    }
}

/* Every allocation: the checks (a subsystem of s, while realizing the stages that
   allocate this kind, n not negative, then the kind's own), then the block rebuilt
   with e. Returns the index of the first new item, or the failure. */
static int allocate(mbk_state *s, const st_edit *e, const char *fn)
{
    /* Instance allocates the error slots and witnesses, Topology and Model the rest */
    bool instance = e->kind == EDIT_QERR || e->kind == EDIT_UERR || e->kind == EDIT_UDOTERR || e->kind == EDIT_TRIG;
    st_sub *b = need_alloc(s, e->sub, instance ? MBK_STAGE_INSTANCE : MBK_STAGE_TOPOLOGY,
                           instance ? MBK_STAGE_INSTANCE : MBK_STAGE_MODEL, fn,
                           instance ? "realize_instance" : "realize_topology or realize_model");
    if (!b) return mbk_last_status();
    if (e->n < 0) return mbk_set_error(MBK_EINVAL, "%s: n = %d is negative", fn, e->n);
    int rc = e->kind == EDIT_DISC    ? check_discrete(s, e, fn)
             : e->kind == EDIT_CACHE ? check_cache(e, fn)
                                     : check_doubles(e, fn);
    if (rc < 0) return rc;
    int start = first_index(b, e);
    /* none of a counted kind changes nothing; a value is always one */
    bool value = e->kind == EDIT_DISC || e->kind == EDIT_CACHE;
    if (e->n == 0 && !value) return start;
    rc = st_rebuild(s, e);
    return rc < 0 ? rc : start;
}

static int alloc_doubles(mbk_state *s, int sub, int n, const double *init, edit_kind kind, const char *fn)
{
    return allocate(s, &(st_edit){.kind = kind, .sub = sub, .n = n, .init = init}, fn);
}

int mbk_state_allocate_q(mbk_state *s, int k, int n, const double *init) { return alloc_doubles(s, k, n, init, EDIT_Q, "mbk_state_allocate_q"); }
int mbk_state_allocate_u(mbk_state *s, int k, int n, const double *init) { return alloc_doubles(s, k, n, init, EDIT_U, "mbk_state_allocate_u"); }
int mbk_state_allocate_z(mbk_state *s, int k, int n, const double *init) { return alloc_doubles(s, k, n, init, EDIT_Z, "mbk_state_allocate_z"); }

int mbk_state_allocate_discrete(mbk_state *s, int sub, mbk_stage invalidates,
                                const mbk_value_type *type, const void *init)
{
    st_edit e = {.kind = EDIT_DISC, .sub = sub, .stage_a = (int)invalidates, .type = type, .vinit = init};
    return allocate(s, &e, "mbk_state_allocate_discrete");
}

int mbk_state_allocate_cache(mbk_state *s, int sub, mbk_stage depends_on, mbk_stage computed_by,
                             const mbk_value_type *type, const void *init)
{
    st_edit e = {.kind = EDIT_CACHE, .sub = sub, .stage_a = (int)depends_on, .stage_b = (int)computed_by,
                 .type = type, .vinit = init};
    return allocate(s, &e, "mbk_state_allocate_cache");
}

/* Work space: a cache entry that no stage computes, kept after the values a copy carries. */
int mbk_state_allocate_scratch(mbk_state *s, int sub, size_t bytes, size_t align)
{
    mbk_value_type t = mbk_value_bytes(bytes, align);
    t.name = "scratch";
    st_edit e = {.kind = EDIT_CACHE, .sub = sub, .stage_a = MBK_STAGE_TOPOLOGY, .stage_b = MBK_STAGE_INFINITY,
                 .type = &t, .scratch = 1};
    return allocate(s, &e, "mbk_state_allocate_scratch");
}

int mbk_state_allocate_lazy_cache(mbk_state *s, int subsystem, mbk_stage depends_on,
                                  const mbk_value_type *type, const void *init)
{
    return mbk_state_allocate_cache(s, subsystem, depends_on, MBK_STAGE_INFINITY, type, init);
}

static int alloc_instance(mbk_state *s, int sub, int n, edit_kind kind, int stage, const char *fn)
{
    return allocate(s, &(st_edit){.kind = kind, .sub = sub, .n = n, .stage_a = stage}, fn);
}

int mbk_state_allocate_qerr(mbk_state *s, int k, int n) { return alloc_instance(s, k, n, EDIT_QERR, 0, "mbk_state_allocate_qerr"); }
int mbk_state_allocate_uerr(mbk_state *s, int k, int n) { return alloc_instance(s, k, n, EDIT_UERR, 0, "mbk_state_allocate_uerr"); }
int mbk_state_allocate_udoterr(mbk_state *s, int k, int n) { return alloc_instance(s, k, n, EDIT_UDOTERR, 0, "mbk_state_allocate_udoterr"); }

int mbk_state_allocate_event_triggers(mbk_state *s, int sub, mbk_stage stage, int n)
{
    if (stage < MBK_STAGE_TIME || stage > MBK_STAGE_REPORT)
        return mbk_set_error(MBK_EINVAL,
                             "mbk_state_allocate_event_triggers: witnesses are evaluated at "
                             "Time..Report, not %s",
                             mbk_stage_name(stage));
    return alloc_instance(s, sub, n, EDIT_TRIG, (int)stage, "mbk_state_allocate_event_triggers");
}

/* ------------------------------------------------------------------ */
/* Dropping what Model and Instance allocated                         */
/* ------------------------------------------------------------------ */

int st_drop_allocations(mbk_state *s, mbk_stage from)
{
    if (!st_has_allocations_from(s, from)) return MBK_OK;
    st_edit e;
    memset(&e, 0, sizeof e);
    e.kind = EDIT_NONE;
    e.drop_from = (int)from;
    return st_rebuild(s, &e);
}

int st_has_allocations_from(const mbk_state *s, mbk_stage from)
{
    const st_hdr *h = st_hdr_of(s);
    for (int k = 0; k < h->nsub; ++k) {
        const st_sub *b = st_sub_of(s, k);
        if (from <= MBK_STAGE_MODEL &&
            (b->nq != b->nq_topo || b->nu != b->nu_topo || b->nz != b->nz_topo ||
             b->ndisc != b->ndisc_topo || b->ncache != b->ncache_topo))
            return 1;
        if (from <= MBK_STAGE_INSTANCE && (b->nqerr || b->nuerr || b->nudoterr)) return 1;
        for (int j = 0; from <= MBK_STAGE_INSTANCE && j < ST_NUM_EVENT_STAGES; ++j)
            if (b->ntrig[j]) return 1;
    }
    return 0;
}
