/* The State block: its geometry, and rebuilding it with one edit (an allocation or
 * dropped allocations), the empty layout, the lifetimes of the values it holds and the
 * fingerprint of its layout.
 *
 * Layout changes (allocation at Topology, Model and Instance, and dropping
 * Model/Instance allocations) rebuild the block from the old one; they
 * happen only while a State is being set up. Everything after Instance
 * works in place and allocates nothing. */
#include "state_impl.h"

#include <stdint.h>
#include <string.h>

#include "mbk/alloc.h"
#include "mbk/status.h"

/* ------------------------------------------------------------------ */
/* Block geometry                                                       */
/* ------------------------------------------------------------------ */

static size_t align_up(size_t n, size_t a) { return (n + a - 1) & ~(a - 1); }

/* The allocator hooks give malloc's alignment (16 bytes, or whatever a user's hook
   gives): ask for room to align and to keep the pointer they returned in the bytes just
   before the aligned block. */
unsigned char *st_block_alloc(size_t size)
{
    unsigned char *raw;
    const size_t line = 64, pad = line + sizeof raw;
    if (size > SIZE_MAX - pad) {
        mbk_set_error(MBK_ENOMEM, "a State block of %zu bytes is too large", size);
        return NULL;
    }
    if (!(raw = mbk_calloc(1, size + pad))) return NULL;
    /* the first line boundary with room for raw before it */
    unsigned char *block = raw + sizeof raw + (line - ((uintptr_t)(raw + sizeof raw) & (line - 1))) % line;
    memcpy(block - sizeof raw, &raw, sizeof raw);
    return block;
}

void st_block_free(unsigned char *block)
{
    if (!block) return;
    unsigned char *raw;
    memcpy(&raw, block - sizeof raw, sizeof raw);
    mbk_free(raw);
}

/* Per-subsystem counts after the edit, and where kept items come from. */
typedef struct st_plan {
    st_sub *subs;                /* new subsystem records */
    int nq, nu, nz, nqerr, nuerr, nudoterr, ndisc, ncache, ntrig_total;
    int ntrig[ST_NUM_EVENT_STAGES];
} st_plan;

/* Apply drops and the addition to a copy of each subsystem's counts. */
static void plan_counts(const mbk_state *s, const st_edit *e, st_sub *subs, int nsub)
{
    int alloc_stage = s->block ? st_hdr_of(s)->alloc_stage : MBK_STAGE_TOPOLOGY;
    for (int k = 0; k < nsub; ++k) {
        st_sub *b = &subs[k];
        if (e->drop_from && e->drop_from <= MBK_STAGE_MODEL) {
            b->nq = b->nq_topo;
            b->nu = b->nu_topo;
            b->nz = b->nz_topo;
            b->ndisc = b->ndisc_topo;
            b->ncache = b->ncache_topo;
        }
        if (e->drop_from && e->drop_from <= MBK_STAGE_INSTANCE) {
            b->nqerr = b->nuerr = b->nudoterr = 0;
            for (int j = 0; j < ST_NUM_EVENT_STAGES; ++j) b->ntrig[j] = 0;
        }
    }
    if (e->kind == EDIT_NONE) return;
    st_sub *b = &subs[e->sub];
    int topo = alloc_stage == MBK_STAGE_TOPOLOGY;
    switch (e->kind) {
    case EDIT_Q: b->nq += e->n; if (topo) b->nq_topo += e->n; break;
    case EDIT_U: b->nu += e->n; if (topo) b->nu_topo += e->n; break;
    case EDIT_Z: b->nz += e->n; if (topo) b->nz_topo += e->n; break;
    case EDIT_DISC: b->ndisc += 1; if (topo) b->ndisc_topo += 1; break;
    case EDIT_CACHE: b->ncache += 1; if (topo) b->ncache_topo += 1; break;
    case EDIT_QERR: b->nqerr += e->n; break;
    case EDIT_UERR: b->nuerr += e->n; break;
    case EDIT_UDOTERR: b->nudoterr += e->n; break;
    case EDIT_TRIG: b->ntrig[e->stage_a - ST_FIRST_EVENT_STAGE] += e->n; break;
    default: break;
    }
}

/* Prefix sums: where each subsystem's items start in the global arrays. */
static void plan_starts(st_plan *p, int nsub)
{
    memset(&p->nq, 0, sizeof *p - offsetof(st_plan, nq));
    for (int k = 0; k < nsub; ++k) {
        st_sub *b = &p->subs[k];
        b->q0 = p->nq; p->nq += b->nq;
        b->u0 = p->nu; p->nu += b->nu;
        b->z0 = p->nz; p->nz += b->nz;
        b->qerr0 = p->nqerr; p->nqerr += b->nqerr;
        b->uerr0 = p->nuerr; p->nuerr += b->nuerr;
        b->udoterr0 = p->nudoterr; p->nudoterr += b->nudoterr;
        b->disc0 = p->ndisc; p->ndisc += b->ndisc;
        b->cache0 = p->ncache; p->ncache += b->ncache;
        for (int j = 0; j < ST_NUM_EVENT_STAGES; ++j) {
            b->trig0[j] = p->ntrig[j];
            p->ntrig[j] += b->ntrig[j];
        }
    }
    for (int j = 0; j < ST_NUM_EVENT_STAGES; ++j) p->ntrig_total += p->ntrig[j];
}

/* Offsets of every section of the new block; returns the byte size of the
   fixed part (values follow). */
static size_t plan_offsets(const st_plan *p, int nsub, st_hdr *h)
{
    int ny = p->nq + p->nu + p->nz;
    size_t o = align_up(sizeof(st_hdr), 64);
    h->sub_off = o; o = align_up(o + (size_t)nsub * sizeof(st_sub), 64);
    h->disc_off = o; o = align_up(o + (size_t)p->ndisc * sizeof(st_disc), 64);
    h->cache_off = o; o = align_up(o + (size_t)p->ncache * sizeof(st_cache), 64);
    h->y_off = o; o = align_up(o + (size_t)ny * sizeof(double), 64);
    h->ydot_off = o; o = align_up(o + (size_t)ny * sizeof(double), 64);
    h->qdd_off = o; o = align_up(o + (size_t)p->nq * sizeof(double), 64);
    h->ybak_off = o; o = align_up(o + (size_t)ny * sizeof(double), 64);
    h->err_off = o;
    o = align_up(o + (size_t)(p->nqerr + p->nuerr + p->nudoterr) * sizeof(double), 64);
    h->mult_off = o; o = align_up(o + (size_t)p->nudoterr * sizeof(double), 64);
    h->trig_off = o; o = align_up(o + (size_t)p->ntrig_total * sizeof(double), 64);
    return o;
}

/* Whether cache entry i of subsystem k is scratch in the new block (the added one: the edit says). */
static int cache_is_scratch(const mbk_state *s, const st_edit *e, const st_sub *b, int k, int i)
{
    if (e->kind == EDIT_CACHE && e->sub == k && i == b->ncache - 1) return e->scratch;
    return st_cache_recs(s)[st_sub_of(s, k)->cache0 + i].scratch;
}

/* Bytes needed by the values of the kept and added records: every value that is copied,
   then (after *copy_size) the scratch values. */
static size_t plan_values(const mbk_state *s, const st_plan *p, int nsub, const st_edit *e,
                          size_t o, size_t *copy_size)
{
    for (int pass = 0; pass < 2; ++pass) {
        for (int k = 0; k < nsub; ++k) {
            const st_sub *b = &p->subs[k];
            int added_d = e->kind == EDIT_DISC && e->sub == k;
            for (int i = 0; pass == 0 && i < b->ndisc; ++i) {
                const mbk_value_type *t =
                    (added_d && i == b->ndisc - 1) ? e->type
                                                   : &st_disc_recs(s)[st_sub_of(s, k)->disc0 + i].type;
                o = align_up(o, t->align) + t->size;
            }
            int added_c = e->kind == EDIT_CACHE && e->sub == k;
            for (int i = 0; i < b->ncache; ++i) {
                if (cache_is_scratch(s, e, b, k, i) != pass) continue;
                const mbk_value_type *t =
                    (added_c && i == b->ncache - 1) ? e->type
                                                    : &st_cache_recs(s)[st_sub_of(s, k)->cache0 + i].type;
                o = align_up(o, t->align) + t->size;
            }
        }
        if (pass == 0) *copy_size = o = align_up(o, 64);
    }
    return align_up(o, 64);
}

/* Copy-construct a value into raw memory. */
void st_value_copy(const mbk_value_type *t, void *dst, const void *src)
{
    if (t->copy) t->copy(dst, src);
    else memcpy(dst, src, t->size);
}

void st_value_destroy(const mbk_value_type *t, void *v)
{
    if (t->destroy) t->destroy(v);
}

/* Fill a value from its initializer, or zero bytes. */
static void value_init(const mbk_value_type *t, void *dst, const void *init)
{
    if (init) st_value_copy(t, dst, init);
    else memset(dst, 0, t->size);
}

/* Copy kept doubles of one subsystem section (q, u, ...) and the added ones. */
static void fill_doubles(double *dst, const double *src, int kept, int added, const double *init)
{
    if (kept > 0) memcpy(dst, src, (size_t)kept * sizeof(double));
    for (int i = 0; i < added; ++i) dst[kept + i] = init ? init[i] : 0.0;
}

/* Move one subsystem's records and values from the old block to the new: pass 0 the
   values that are copied, pass 1 the scratch entries (placed after them, contents not
   kept: scratch is undefined at every call's start). */
static void fill_records(const mbk_state *s, unsigned char *nb, const st_hdr *nh,
                         const st_sub *nbsub, int k, const st_edit *e, size_t *voff, int pass)
{
    st_disc *nd = (st_disc *)(nb + nh->disc_off) + nbsub->disc0;
    for (int i = 0; pass == 0 && i < nbsub->ndisc; ++i) {
        size_t *o = &nd[i].off;
        if (e->kind == EDIT_DISC && e->sub == k && i == nbsub->ndisc - 1) {
            nd[i].type = *e->type;
            nd[i].alloc_stage = st_hdr_of(s) ? st_hdr_of(s)->alloc_stage : MBK_STAGE_TOPOLOGY;
            nd[i].invalidates = e->stage_a;
            *o = align_up(*voff, e->type->align);
            value_init(e->type, nb + *o, e->vinit);
        } else {
            const st_disc *od = &st_disc_recs(s)[st_sub_of(s, k)->disc0 + i];
            nd[i] = *od;
            *o = align_up(*voff, od->type.align);
            st_value_copy(&od->type, nb + *o, s->block + od->off);
        }
        *voff = *o + nd[i].type.size;
    }
    st_cache *nc = (st_cache *)(nb + nh->cache_off) + nbsub->cache0;
    for (int i = 0; i < nbsub->ncache; ++i) {
        if (cache_is_scratch(s, e, nbsub, k, i) != pass) continue;
        size_t *o = &nc[i].off;
        if (e->kind == EDIT_CACHE && e->sub == k && i == nbsub->ncache - 1) {
            memset(&nc[i], 0, sizeof nc[i]);
            nc[i].type = *e->type;
            nc[i].alloc_stage = st_hdr_of(s) ? st_hdr_of(s)->alloc_stage : MBK_STAGE_TOPOLOGY;
            nc[i].depends_on = e->stage_a;
            nc[i].computed_by = e->stage_b;
            nc[i].scratch = e->scratch;
            *o = align_up(*voff, e->type->align);
            if (!e->scratch) value_init(e->type, nb + *o, e->vinit);
        } else {
            const st_cache *oc = &st_cache_recs(s)[st_sub_of(s, k)->cache0 + i];
            nc[i] = *oc;
            *o = align_up(*voff, oc->type.align);
            if (!oc->scratch) st_value_copy(&oc->type, nb + *o, s->block + oc->off);
        }
        *voff = *o + nc[i].type.size;
    }
}

/* Copy one subsystem's continuous variables (kept + added) into the new y. */
static void fill_y(const mbk_state *s, double *ny_arr, const st_plan *p, int k, const st_edit *e)
{
    const st_sub *b = &p->subs[k];
    const st_sub *ob = st_sub_of(s, k);
    const double *oy = st_dbl_at(s, st_hdr_of(s)->y_off);
    const st_hdr *oh = st_hdr_of(s);
    int add = (e->sub == k) ? e->n : 0;
    int aq = e->kind == EDIT_Q ? add : 0, au = e->kind == EDIT_U ? add : 0,
        az = e->kind == EDIT_Z ? add : 0;
    fill_doubles(ny_arr + b->q0, oy + ob->q0, b->nq - aq, aq, e->init);
    fill_doubles(ny_arr + p->nq + b->u0, oy + oh->nq + ob->u0, b->nu - au, au, e->init);
    fill_doubles(ny_arr + p->nq + p->nu + b->z0, oy + oh->nq + oh->nu + ob->z0, b->nz - az, az,
                 e->init);
}

/* Destroy every value in a block (before it is freed or overwritten). */
void st_destroy_values(const mbk_state *s)
{
    const st_hdr *h = st_hdr_of(s);
    if (!h) return;
    for (int i = 0; i < h->ndisc; ++i)
        st_value_destroy(&st_disc_recs(s)[i].type, s->block + st_disc_recs(s)[i].off);
    for (int i = 0; i < h->ncache; ++i)
        st_value_destroy(&st_cache_recs(s)[i].type, s->block + st_cache_recs(s)[i].off);
}

/* Build a new block from the old one with the edit applied, then swap. */
int st_rebuild(mbk_state *s, const st_edit *e)
{
    st_hdr *oh = st_hdr_of(s);
    int nsub = oh->nsub;
    st_plan p;
    memset(&p, 0, sizeof p);
    p.subs = mbk_malloc((size_t)(nsub > 0 ? nsub : 1) * sizeof(st_sub));
    if (!p.subs) return MBK_ENOMEM;
    for (int k = 0; k < nsub; ++k) p.subs[k] = *st_sub_of(s, k);
    plan_counts(s, e, p.subs, nsub);
    plan_starts(&p, nsub);

    st_hdr nh = *oh;
    size_t fixed = plan_offsets(&p, nsub, &nh);
    size_t copy_size = 0, total = plan_values(s, &p, nsub, e, fixed, &copy_size);
    unsigned char *nb = st_block_alloc(total);
    if (!nb) {
        mbk_free(p.subs);
        return MBK_ENOMEM;
    }
    nh.size = total;
    nh.copy_size = copy_size;
    nh.y_checked = 0; /* y has new entries, from initial values nobody scanned */
    nh.nq = p.nq; nh.nu = p.nu; nh.nz = p.nz;
    nh.nqerr = p.nqerr; nh.nuerr = p.nuerr; nh.nudoterr = p.nudoterr;
    nh.ndisc = p.ndisc; nh.ncache = p.ncache;
    for (int j = 0, acc = 0; j < ST_NUM_EVENT_STAGES; ++j) {
        nh.ntrig[j] = p.ntrig[j];
        nh.trig0[j] = acc;
        acc += p.ntrig[j];
    }
    memcpy(nb, &nh, sizeof nh);
    memcpy(nb + nh.sub_off, p.subs, (size_t)nsub * sizeof(st_sub));

    size_t voff = fixed;
    for (int k = 0; k < nsub; ++k) {
        fill_records(s, nb, &nh, &p.subs[k], k, e, &voff, 0);
        fill_y(s, (double *)(nb + nh.y_off), &p, k, e);
    }
    voff = copy_size;
    for (int k = 0; k < nsub; ++k) fill_records(s, nb, &nh, &p.subs[k], k, e, &voff, 1);
    mbk_free(p.subs);

    st_destroy_values(s);
    st_block_free(s->block);
    s->block = nb;
    s->capacity = total;
    return MBK_OK;
}

int st_init_empty(mbk_state *s, int nsub)
{
    st_hdr h;
    memset(&h, 0, sizeof h);
    h.nsub = nsub;
    h.stage = MBK_STAGE_EMPTY;
    h.t = 0.0;
    st_sub *subs = mbk_calloc((size_t)(nsub > 0 ? nsub : 1), sizeof(st_sub));
    if (!subs) return MBK_ENOMEM;
    st_plan p;
    memset(&p, 0, sizeof p);
    p.subs = subs;
    plan_starts(&p, nsub);
    size_t total = plan_offsets(&p, nsub, &h);
    unsigned char *nb = st_block_alloc(total);
    if (!nb) {
        mbk_free(subs);
        return MBK_ENOMEM;
    }
    h.size = h.copy_size = total;
    memcpy(nb, &h, sizeof h);
    memcpy(nb + h.sub_off, subs, (size_t)nsub * sizeof(st_sub));
    mbk_free(subs);
    st_destroy_values(s);
    st_block_free(s->block);
    s->block = nb;
    s->capacity = total;
    return MBK_OK;
}

/* FNV-1a over bytes, for the topology stamp. */
static uint64_t fnv(uint64_t h, const void *data, size_t n)
{
    const unsigned char *p = data;
    for (size_t i = 0; i < n; ++i) h = (h ^ p[i]) * 1099511628211ull;
    return h;
}

uint64_t st_layout_hash(const mbk_state *s, int full)
{
    const st_hdr *h = st_hdr_of(s);
    uint64_t x = 1469598103934665603ull;
    x = fnv(x, &h->nsub, sizeof h->nsub);
    for (int k = 0; k < h->nsub; ++k) {
        const st_sub *b = st_sub_of(s, k);
        int counts[6] = {b->nq_topo, b->nu_topo, b->nz_topo, b->ndisc_topo, b->ncache_topo, k};
        if (full) {
            counts[0] = b->nq, counts[1] = b->nu, counts[2] = b->nz;
            counts[3] = b->ndisc, counts[4] = b->ncache;
        }
        x = fnv(x, counts, sizeof counts);
    }
    /* sizes as 64 bits, so that the hash does not depend on the width of size_t */
    for (int i = 0; i < h->ndisc; ++i) {
        const st_disc *d = &st_disc_recs(s)[i];
        uint64_t size = d->type.size;
        x = fnv(x, &size, sizeof size);
        x = fnv(x, &d->invalidates, sizeof d->invalidates);
        x = fnv(x, d->type.name, strlen(d->type.name));
    }
    for (int i = 0; i < h->ncache; ++i) {
        const st_cache *c = &st_cache_recs(s)[i];
        uint64_t size = c->type.size;
        x = fnv(x, &size, sizeof size);
        x = fnv(x, &c->depends_on, sizeof c->depends_on);
        x = fnv(x, &c->computed_by, sizeof c->computed_by);
        x = fnv(x, c->type.name, strlen(c->type.name));
    }
    return x;
}
