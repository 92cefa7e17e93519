/* Discrete variables of a State: typed values that invalidate a stage when changed. */
#include "state_impl.h"

#include "mbk/status.h"

/* ------------------------------------------------------------------ */
/* Discrete variables                                                   */
/* ------------------------------------------------------------------ */

int mbk_state_get_num_discrete(const mbk_state *s, int subsystem)
{
    const st_sub *b = st_need_sub(s, subsystem, "mbk_state_get_num_discrete");
    return b ? b->ndisc : mbk_last_status();
}

static st_disc *disc_rec(const mbk_state *s, int sub, int index, const char *fn)
{
    const st_sub *b = st_need_sub(s, sub, fn);
    if (!b) return NULL;
    if (index < 0 || index >= b->ndisc) {
        mbk_set_error(MBK_EINVAL,
                      "%s: discrete variable %d of subsystem %d is out of range; it has %d", fn,
                      index, sub, b->ndisc);
        return NULL;
    }
    return &st_disc_recs(s)[b->disc0 + index];
}

const void *mbk_state_get_discrete(const mbk_state *s, int sub, int index)
{
    const st_disc *d = disc_rec(s, sub, index, "mbk_state_get_discrete");
    return d ? s->block + d->off : NULL;
}

void *mbk_state_upd_discrete(mbk_state *s, int sub, int index)
{
    const st_disc *d = disc_rec(s, sub, index, "mbk_state_upd_discrete");
    if (!d) return NULL;
    /* A Model-stage change re-lays out the block, so find the variable again afterwards. */
    if (st_invalidate_stage(s, d->invalidates) < 0) return NULL;
    d = disc_rec(s, sub, index, "mbk_state_upd_discrete");
    return d ? s->block + d->off : NULL;
}

/* The variable if it has that type (messages name fn, the caller). */
static const void *discrete_as(const mbk_state *s, int sub, int index, const mbk_value_type *type, const char *fn)
{
    const st_disc *d = disc_rec(s, sub, index, fn);
    if (!d || !st_type_matches(&d->type, type, fn, "discrete variable", sub, index)) return NULL;
    return s->block + d->off;
}

const void *mbk_state_get_discrete_as(const mbk_state *s, int sub, int index,
                                      const mbk_value_type *type)
{
    return discrete_as(s, sub, index, type, "mbk_state_get_discrete_as");
}

void *mbk_state_upd_discrete_as(mbk_state *s, int sub, int index, const mbk_value_type *type)
{
    if (!discrete_as(s, sub, index, type, "mbk_state_upd_discrete_as")) return NULL;
    return mbk_state_upd_discrete(s, sub, index);
}

int mbk_state_set_discrete(mbk_state *s, int sub, int index, const mbk_value_type *type,
                           const void *value)
{
    if (!value) return mbk_set_error(MBK_EINVAL, "mbk_state_set_discrete: value is NULL");
    if (!discrete_as(s, sub, index, type, "mbk_state_set_discrete")) return mbk_last_status();
    void *dst = mbk_state_upd_discrete(s, sub, index);
    if (!dst) return mbk_last_status();
    if (dst == value) return MBK_OK;
    st_value_destroy(type, dst);
    st_value_copy(type, dst, value);
    return MBK_OK;
}

mbk_stage mbk_state_get_discrete_stage(const mbk_state *s, int sub, int index)
{
    const st_disc *d = disc_rec(s, sub, index, "mbk_state_get_discrete_stage");
    return d ? (mbk_stage)d->invalidates : MBK_STAGE_EMPTY;
}
