/* The State object: create, destroy, copy and size, and the type check of the _as
 * accessors.
 *
 * The State is one flat block of variables, cache and stage bookkeeping. Its layout
 * and the argument checks every state_*.c file shares are in state_impl.h; its parts
 * in state_block.c (layout and rebuild), state_alloc.c (allocation), state_stage.c
 * (stages and invalidation), state_vars.c (t, q, u, z and derivatives),
 * state_discrete.c, state_cache.c and state_slots.c (constraint errors, multipliers,
 * witnesses). */
#include "state_impl.h"

#include <string.h>

#include "mbk/alloc.h"
#include "mbk/status.h"

/* ------------------------------------------------------------------ */
/* Type check shared by the _as functions                               */
/* ------------------------------------------------------------------ */

/* Type check shared by the _as functions. */
int st_type_matches(const mbk_value_type *have, const mbk_value_type *want, const char *fn,
                    const char *what, int sub, int index)
{
    if (!want) {
        mbk_set_error(MBK_EINVAL, "%s: expected value type is NULL", fn);
        return 0;
    }
    if (mbk_value_type_equal(have, want)) return 1;
    mbk_set_error(MBK_EINVAL, "%s: %s %d of subsystem %d holds '%s' (%zu bytes), not '%s' (%zu bytes)",
                  fn, what, index, sub, have->name, have->size, want->name ? want->name : "?",
                  want->size);
    return 0;
}

/* ------------------------------------------------------------------ */
/* Lifecycle                                                            */
/* ------------------------------------------------------------------ */

mbk_state *mbk_state_create(void)
{
    mbk_state *s = mbk_calloc(1, sizeof *s);
    return s;
}

void mbk_state_destroy(mbk_state *s)
{
    if (!s) return;
    st_destroy_values(s);
    st_block_free(s->block);
    mbk_free(s);
}

int mbk_state_copy(mbk_state *dst, const mbk_state *src)
{
    if (!dst) return mbk_set_error(MBK_EINVAL, "mbk_state_copy: destination state is NULL");
    const st_hdr *h = st_need_state(src, "mbk_state_copy");
    if (!h) return mbk_last_status();
    if (dst == src) return MBK_OK;
    /* Reuse the destination's memory when it is big enough: copies in a loop allocate nothing. */
    st_destroy_values(dst);
    if (dst->capacity < h->size) {
        unsigned char *nb = st_block_alloc(h->size);
        if (!nb) {
            st_block_free(dst->block);
            dst->block = NULL;
            dst->capacity = 0;
            return MBK_ENOMEM;
        }
        st_block_free(dst->block);
        dst->block = nb;
        dst->capacity = h->size;
    }
    /* everything but the scratch values at the end (work space, undefined at each call's start) */
    memcpy(dst->block, src->block, h->copy_size);
    /* Values with copy ops are constructed again from the source (their bytes may own memory). */
    for (int i = 0; i < h->ndisc; ++i) {
        const st_disc *d = &st_disc_recs(src)[i];
        if (d->type.copy) d->type.copy(dst->block + d->off, src->block + d->off);
    }
    for (int i = 0; i < h->ncache; ++i) {
        const st_cache *c = &st_cache_recs(src)[i];
        if (c->type.copy) c->type.copy(dst->block + c->off, src->block + c->off);
    }
    return MBK_OK;
}

size_t mbk_state_get_size_in_bytes(const mbk_state *s)
{
    return s && s->block ? st_hdr_of(s)->size : 0;
}
