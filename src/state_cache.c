/* Cache entries of a State: typed values computed from the variables, and their
 * validity (stage reached, or marked realized at the current version of the stage
 * they depend on). */
#include "state_impl.h"

#include "mbk/status.h"

/* ------------------------------------------------------------------ */
/* Cache entries                                                        */
/* ------------------------------------------------------------------ */

int mbk_state_get_num_cache(const mbk_state *s, int subsystem)
{
    const st_sub *b = st_need_sub(s, subsystem, "mbk_state_get_num_cache");
    return b ? b->ncache : mbk_last_status();
}

static st_cache *cache_rec(const mbk_state *s, int sub, int index, const char *fn)
{
    const st_sub *b = st_need_sub(s, sub, fn);
    if (!b) return NULL;
    if (index < 0 || index >= b->ncache) {
        mbk_set_error(MBK_EINVAL, "%s: cache entry %d of subsystem %d is out of range; it has %d",
                      fn, index, sub, b->ncache);
        return NULL;
    }
    return &st_cache_recs(s)[b->cache0 + index];
}

/* Validity rule of DESIGN.md §3. */
static bool cache_valid(const st_sub *b, const st_cache *c)
{
    if (b->stage >= c->computed_by) return true;
    return c->marked && c->mark_version == b->version[c->depends_on];
}

bool mbk_state_is_cache_realized(const mbk_state *s, int sub, int index)
{
    const st_cache *c = cache_rec(s, sub, index, "mbk_state_is_cache_realized");
    return c && cache_valid(st_sub_of(s, sub), c);
}

void mbk_state_mark_cache_realized(const mbk_state *s, int sub, int index)
{
    const char *fn = "mbk_state_mark_cache_realized";
    st_cache *c = cache_rec(s, sub, index, fn);
    if (!c) return;
    const st_sub *b = st_sub_of(s, sub);
    if (b->stage < c->depends_on - 1) {
        mbk_set_error(MBK_ESTAGE,
                      "%s: cache entry %d of subsystem %d depends on %s but the subsystem is "
                      "realized only to %s; realize to %s before computing it",
                      fn, index, sub, mbk_stage_name((mbk_stage)c->depends_on),
                      mbk_stage_name((mbk_stage)b->stage),
                      mbk_stage_name((mbk_stage)(c->depends_on - 1)));
        return;
    }
    c->marked = 1;
    c->mark_version = b->version[c->depends_on];
}

const void *mbk_state_get_cache(const mbk_state *s, int sub, int index)
{
    const char *fn = "mbk_state_get_cache";
    const st_cache *c = cache_rec(s, sub, index, fn);
    if (!c) return NULL;
    const st_sub *b = st_sub_of(s, sub);
    if (cache_valid(b, c)) return s->block + c->off;
    if (c->computed_by == MBK_STAGE_INFINITY)
        mbk_set_error(MBK_ESTAGE,
                      "%s: lazy cache entry %d of subsystem %d (depends on %s) has not been "
                      "computed since its inputs changed; compute it and mark it realized",
                      fn, index, sub, mbk_stage_name((mbk_stage)c->depends_on));
    else
        mbk_set_error(MBK_ESTAGE,
                      "%s: cache entry %d of subsystem %d is not valid: subsystem is realized "
                      "only to %s; realize to %s (it depends on %s)",
                      fn, index, sub, mbk_stage_name((mbk_stage)b->stage),
                      mbk_stage_name((mbk_stage)c->computed_by),
                      mbk_stage_name((mbk_stage)c->depends_on));
    return NULL;
}

const void *mbk_state_get_cache_as(const mbk_state *s, int sub, int index,
                                   const mbk_value_type *type)
{
    const char *fn = "mbk_state_get_cache_as";
    const st_cache *c = cache_rec(s, sub, index, fn);
    if (!c || !st_type_matches(&c->type, type, fn, "cache entry", sub, index)) return NULL;
    return mbk_state_get_cache(s, sub, index);
}

void *mbk_state_upd_cache(const mbk_state *s, int sub, int index)
{
    const st_cache *c = cache_rec(s, sub, index, "mbk_state_upd_cache");
    return c ? s->block + c->off : NULL;
}

void *mbk_state_upd_cache_as(const mbk_state *s, int sub, int index, const mbk_value_type *type)
{
    const char *fn = "mbk_state_upd_cache_as";
    const st_cache *c = cache_rec(s, sub, index, fn);
    if (!c || !st_type_matches(&c->type, type, fn, "cache entry", sub, index)) return NULL;
    return s->block + c->off;
}
