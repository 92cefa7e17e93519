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

static int alloc_doubles(mbk_state *s, int sub, int n, const double *init, edit_kind kind,
                         const char *fn)
{
    st_sub *b = need_alloc(s, sub, MBK_STAGE_TOPOLOGY, MBK_STAGE_MODEL, fn,
                           "realize_topology or realize_model");
    if (!b) return mbk_last_status();
    if (n < 0) return mbk_set_error(MBK_EINVAL, "%s: n = %d is negative", fn, n);
    for (int i = 0; init && i < n; ++i)
        if (!isfinite(init[i]))
            return mbk_set_error(MBK_ENOTFINITE, "%s: initial value %d is %g", fn, i, init[i]);
    int start = kind == EDIT_Q ? b->nq : kind == EDIT_U ? b->nu : b->nz;
    if (n == 0) return start;
    st_edit e;
    memset(&e, 0, sizeof e);
    e.kind = kind;
    e.sub = sub;
    e.n = n;
    e.init = init;
    int rc = st_rebuild(s, &e);
    return rc < 0 ? rc : start;
}

int mbk_state_allocate_q(mbk_state *s, int k, int n, const double *init) { return alloc_doubles(s, k, n, init, EDIT_Q, "mbk_state_allocate_q"); }
int mbk_state_allocate_u(mbk_state *s, int k, int n, const double *init) { return alloc_doubles(s, k, n, init, EDIT_U, "mbk_state_allocate_u"); }
int mbk_state_allocate_z(mbk_state *s, int k, int n, const double *init) { return alloc_doubles(s, k, n, init, EDIT_Z, "mbk_state_allocate_z"); }

/* Rebuild with one more discrete variable or cache entry (scratch: work space); returns its index. */
static int add_value(mbk_state *s, edit_kind kind, int sub, int stage_a, int stage_b,
                     const mbk_value_type *type, const void *init, int scratch, int index)
{
    st_edit e;
    memset(&e, 0, sizeof e);
    e.kind = kind;
    e.sub = sub;
    e.stage_a = stage_a;
    e.stage_b = stage_b;
    e.type = type;
    e.vinit = init;
    e.scratch = scratch;
    int rc = st_rebuild(s, &e);
    return rc < 0 ? rc : index;
}

int mbk_state_allocate_discrete(mbk_state *s, int sub, mbk_stage invalidates,
                                const mbk_value_type *type, const void *init)
{
    const char *fn = "mbk_state_allocate_discrete";
    st_sub *b = need_alloc(s, sub, MBK_STAGE_TOPOLOGY, MBK_STAGE_MODEL, fn,
                           "realize_topology or realize_model");
    if (!b) return mbk_last_status();
    int a = st_hdr_of(s)->alloc_stage;
    if ((int)invalidates <= a || invalidates > MBK_STAGE_REPORT)
        return mbk_set_error(MBK_EINVAL,
                             "%s: a discrete variable allocated at %s must invalidate a later "
                             "stage up to Report, not %s",
                             fn, mbk_stage_name((mbk_stage)a), mbk_stage_name(invalidates));
    if (mbk_value_type_check(type) < 0) return mbk_last_status();
    return add_value(s, EDIT_DISC, sub, (int)invalidates, 0, type, init, 0, b->ndisc);
}

int mbk_state_allocate_cache(mbk_state *s, int sub, mbk_stage depends_on, mbk_stage computed_by,
                             const mbk_value_type *type, const void *init)
{
    const char *fn = "mbk_state_allocate_cache";
    st_sub *b = need_alloc(s, sub, MBK_STAGE_TOPOLOGY, MBK_STAGE_MODEL, fn,
                           "realize_topology or realize_model");
    if (!b) return mbk_last_status();
    if (depends_on < MBK_STAGE_TOPOLOGY || depends_on > MBK_STAGE_REPORT ||
        computed_by < depends_on || computed_by > MBK_STAGE_INFINITY)
        return mbk_set_error(MBK_EINVAL,
                             "%s: need Topology <= depends_on (%s) <= computed_by (%s), "
                             "depends_on <= Report",
                             fn, mbk_stage_name(depends_on), mbk_stage_name(computed_by));
    if (mbk_value_type_check(type) < 0) return mbk_last_status();
    return add_value(s, EDIT_CACHE, sub, (int)depends_on, (int)computed_by, type, init, 0, b->ncache);
}

/* Work space: a cache entry that no stage computes, kept after the values a copy carries. */
int mbk_state_allocate_scratch(mbk_state *s, int sub, size_t bytes, size_t align)
{
    const char *fn = "mbk_state_allocate_scratch";
    st_sub *b = need_alloc(s, sub, MBK_STAGE_TOPOLOGY, MBK_STAGE_MODEL, fn,
                           "realize_topology or realize_model");
    if (!b) return mbk_last_status();
    mbk_value_type t = mbk_value_bytes(bytes, align);
    t.name = "scratch";
    if (mbk_value_type_check(&t) < 0) return mbk_set_error(mbk_last_status(), "%s: %s", fn, mbk_last_error());
    return add_value(s, EDIT_CACHE, sub, MBK_STAGE_TOPOLOGY, MBK_STAGE_INFINITY, &t, NULL, 1, b->ncache);
}

int mbk_state_allocate_lazy_cache(mbk_state *s, int subsystem, mbk_stage depends_on,
                                  const mbk_value_type *type, const void *init)
{
    return mbk_state_allocate_cache(s, subsystem, depends_on, MBK_STAGE_INFINITY, type, init);
}

static int alloc_instance(mbk_state *s, int sub, int n, edit_kind kind, int stage, const char *fn)
{
    st_sub *b = need_alloc(s, sub, MBK_STAGE_INSTANCE, MBK_STAGE_INSTANCE, fn, "realize_instance");
    if (!b) return mbk_last_status();
    if (n < 0) return mbk_set_error(MBK_EINVAL, "%s: n = %d is negative", fn, n);
    int start = kind == EDIT_QERR      ? b->nqerr
                : kind == EDIT_UERR    ? b->nuerr
                : kind == EDIT_UDOTERR ? b->nudoterr
                                       : b->ntrig[stage - ST_FIRST_EVENT_STAGE];
    if (n == 0) return start;
    st_edit e;
    memset(&e, 0, sizeof e);
    e.kind = kind;
    e.sub = sub;
    e.n = n;
    e.stage_a = stage;
    int rc = st_rebuild(s, &e);
    return rc < 0 ? rc : start;
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
