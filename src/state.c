/* The State: one flat block of variables, cache and stage bookkeeping.
 *
 * Layout changes (allocation at Topology, Model and Instance, and dropping
 * Model/Instance allocations) rebuild the block from the old one; they
 * happen only while a State is being set up. Everything after Instance
 * works in place and allocates nothing. */
#include "state_impl.h"

#include <math.h>
#include <string.h>

#include "mbk/alloc.h"
#include "mbk/status.h"

/* ------------------------------------------------------------------ */
/* Block geometry                                                       */
/* ------------------------------------------------------------------ */

static size_t align_up(size_t n, size_t a) { return (n + a - 1) & ~(a - 1); }

static st_disc *disc_recs(const mbk_state *s)
{
    return (st_disc *)(s->block + st_hdr_of(s)->disc_off);
}

static st_cache *cache_recs(const mbk_state *s)
{
    return (st_cache *)(s->block + st_hdr_of(s)->cache_off);
}

static double *dbl_at(const mbk_state *s, size_t off) { return (double *)(s->block + off); }

/* What a rebuild adds: at most one allocation per rebuild. */
typedef enum {
    EDIT_NONE,
    EDIT_Q,
    EDIT_U,
    EDIT_Z,
    EDIT_DISC,
    EDIT_CACHE,
    EDIT_QERR,
    EDIT_UERR,
    EDIT_UDOTERR,
    EDIT_TRIG
} edit_kind;

typedef struct st_edit {
    edit_kind kind;              /* what to add */
    int sub;                     /* to which subsystem */
    int n;                       /* how many doubles (q/u/z/err/trig) */
    const double *init;          /* initial doubles, or NULL for zeros */
    int stage_a, stage_b;        /* discrete: invalidates; cache: depends_on, computed_by; trig: stage */
    const mbk_value_type *type;  /* value type (discrete, cache) */
    const void *vinit;           /* initial value, or NULL for zero bytes */
    int drop_from;               /* drop allocations made at this stage or later (Empty: none) */
} st_edit;

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
    h->err_off = o;
    o = align_up(o + (size_t)(p->nqerr + p->nuerr + p->nudoterr) * sizeof(double), 64);
    h->mult_off = o; o = align_up(o + (size_t)p->nudoterr * sizeof(double), 64);
    h->trig_off = o; o = align_up(o + (size_t)p->ntrig_total * sizeof(double), 64);
    return o;
}

/* Bytes needed by the values of the kept and added records. */
static size_t plan_values(const mbk_state *s, const st_plan *p, int nsub, const st_edit *e,
                          size_t o)
{
    for (int k = 0; k < nsub; ++k) {
        const st_sub *b = &p->subs[k];
        int added_d = e->kind == EDIT_DISC && e->sub == k;
        for (int i = 0; i < b->ndisc; ++i) {
            const mbk_value_type *t =
                (added_d && i == b->ndisc - 1) ? e->type
                                               : &disc_recs(s)[st_sub_of(s, k)->disc0 + i].type;
            o = align_up(o, t->align) + t->size;
        }
        int added_c = e->kind == EDIT_CACHE && e->sub == k;
        for (int i = 0; i < b->ncache; ++i) {
            const mbk_value_type *t =
                (added_c && i == b->ncache - 1) ? e->type
                                                : &cache_recs(s)[st_sub_of(s, k)->cache0 + i].type;
            o = align_up(o, t->align) + t->size;
        }
    }
    return align_up(o, 64);
}

/* Copy-construct a value into raw memory. */
static void value_copy(const mbk_value_type *t, void *dst, const void *src)
{
    if (t->copy) t->copy(dst, src);
    else memcpy(dst, src, t->size);
}

static void value_destroy(const mbk_value_type *t, void *v)
{
    if (t->destroy) t->destroy(v);
}

/* Fill a value from its initializer, or zero bytes. */
static void value_init(const mbk_value_type *t, void *dst, const void *init)
{
    if (init) value_copy(t, dst, init);
    else memset(dst, 0, t->size);
}

/* Copy kept doubles of one subsystem section (q, u, ...) and the added ones. */
static void fill_doubles(double *dst, const double *src, int kept, int added, const double *init)
{
    if (kept > 0) memcpy(dst, src, (size_t)kept * sizeof(double));
    for (int i = 0; i < added; ++i) dst[kept + i] = init ? init[i] : 0.0;
}

/* Move one subsystem's records and values from the old block to the new. */
static void fill_records(const mbk_state *s, unsigned char *nb, const st_hdr *nh,
                         const st_sub *nbsub, int k, const st_edit *e, size_t *voff)
{
    st_disc *nd = (st_disc *)(nb + nh->disc_off) + nbsub->disc0;
    for (int i = 0; i < nbsub->ndisc; ++i) {
        size_t *o = &nd[i].off;
        if (e->kind == EDIT_DISC && e->sub == k && i == nbsub->ndisc - 1) {
            nd[i].type = *e->type;
            nd[i].alloc_stage = st_hdr_of(s) ? st_hdr_of(s)->alloc_stage : MBK_STAGE_TOPOLOGY;
            nd[i].invalidates = e->stage_a;
            *o = align_up(*voff, e->type->align);
            value_init(e->type, nb + *o, e->vinit);
        } else {
            const st_disc *od = &disc_recs(s)[st_sub_of(s, k)->disc0 + i];
            nd[i] = *od;
            *o = align_up(*voff, od->type.align);
            value_copy(&od->type, nb + *o, s->block + od->off);
        }
        *voff = *o + nd[i].type.size;
    }
    st_cache *nc = (st_cache *)(nb + nh->cache_off) + nbsub->cache0;
    for (int i = 0; i < nbsub->ncache; ++i) {
        size_t *o = &nc[i].off;
        if (e->kind == EDIT_CACHE && e->sub == k && i == nbsub->ncache - 1) {
            memset(&nc[i], 0, sizeof nc[i]);
            nc[i].type = *e->type;
            nc[i].alloc_stage = st_hdr_of(s) ? st_hdr_of(s)->alloc_stage : MBK_STAGE_TOPOLOGY;
            nc[i].depends_on = e->stage_a;
            nc[i].computed_by = e->stage_b;
            *o = align_up(*voff, e->type->align);
            value_init(e->type, nb + *o, e->vinit);
        } else {
            const st_cache *oc = &cache_recs(s)[st_sub_of(s, k)->cache0 + i];
            nc[i] = *oc;
            *o = align_up(*voff, oc->type.align);
            value_copy(&oc->type, nb + *o, s->block + oc->off);
        }
        *voff = *o + nc[i].type.size;
    }
}

/* Copy one subsystem's continuous variables (kept + added) into the new y. */
static void fill_y(const mbk_state *s, double *ny_arr, const st_plan *p, int k, const st_edit *e)
{
    const st_sub *b = &p->subs[k];
    const st_sub *ob = st_sub_of(s, k);
    const double *oy = dbl_at(s, st_hdr_of(s)->y_off);
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
static void destroy_values(const mbk_state *s)
{
    const st_hdr *h = st_hdr_of(s);
    if (!h) return;
    for (int i = 0; i < h->ndisc; ++i)
        value_destroy(&disc_recs(s)[i].type, s->block + disc_recs(s)[i].off);
    for (int i = 0; i < h->ncache; ++i)
        value_destroy(&cache_recs(s)[i].type, s->block + cache_recs(s)[i].off);
}

/* Build a new block from the old one with the edit applied, then swap. */
static int st_rebuild(mbk_state *s, const st_edit *e)
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
    size_t total = plan_values(s, &p, nsub, e, fixed);
    unsigned char *nb = mbk_calloc(1, total);
    if (!nb) {
        mbk_free(p.subs);
        return MBK_ENOMEM;
    }
    nh.size = total;
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
        fill_records(s, nb, &nh, &p.subs[k], k, e, &voff);
        fill_y(s, (double *)(nb + nh.y_off), &p, k, e);
    }
    mbk_free(p.subs);

    destroy_values(s);
    mbk_free(s->block);
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
    unsigned char *nb = mbk_calloc(1, total);
    if (!nb) {
        mbk_free(subs);
        return MBK_ENOMEM;
    }
    h.size = total;
    memcpy(nb, &h, sizeof h);
    memcpy(nb + h.sub_off, subs, (size_t)nsub * sizeof(st_sub));
    mbk_free(subs);
    destroy_values(s);
    mbk_free(s->block);
    s->block = nb;
    s->capacity = total;
    return MBK_OK;
}

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

void st_update_stage(mbk_state *s)
{
    st_hdr *h = st_hdr_of(s);
    if (h->nsub == 0) return;
    int lo = MBK_STAGE_INFINITY;
    for (int k = 0; k < h->nsub; ++k)
        if (st_sub_of(s, k)->stage < lo) lo = st_sub_of(s, k)->stage;
    h->stage = lo;
}

/* FNV-1a over bytes, for the topology stamp. */
static uint64_t fnv(uint64_t h, const void *data, size_t n)
{
    const unsigned char *p = data;
    for (size_t i = 0; i < n; ++i) h = (h ^ p[i]) * 1099511628211ull;
    return h;
}

uint64_t st_layout_hash(const mbk_state *s)
{
    const st_hdr *h = st_hdr_of(s);
    uint64_t x = 1469598103934665603ull;
    x = fnv(x, &h->nsub, sizeof h->nsub);
    for (int k = 0; k < h->nsub; ++k) {
        const st_sub *b = st_sub_of(s, k);
        int counts[6] = {b->nq_topo, b->nu_topo, b->nz_topo, b->ndisc_topo, b->ncache_topo, k};
        x = fnv(x, counts, sizeof counts);
    }
    for (int i = 0; i < h->ndisc; ++i) {
        const st_disc *d = &disc_recs(s)[i];
        x = fnv(x, &d->type.size, sizeof d->type.size);
        x = fnv(x, &d->invalidates, sizeof d->invalidates);
        x = fnv(x, d->type.name, strlen(d->type.name));
    }
    for (int i = 0; i < h->ncache; ++i) {
        const st_cache *c = &cache_recs(s)[i];
        x = fnv(x, &c->type.size, sizeof c->type.size);
        x = fnv(x, &c->depends_on, sizeof c->depends_on);
        x = fnv(x, &c->computed_by, sizeof c->computed_by);
        x = fnv(x, c->type.name, strlen(c->type.name));
    }
    return x;
}

int st_check_finite(const mbk_state *s, mbk_stage stage)
{
    const st_hdr *h = st_hdr_of(s);
    const double *y = dbl_at(s, h->y_off);
    static const char *const what[] = {"q", "u", "z"};
    int lo, n, which;
    if (stage == MBK_STAGE_TIME) {
        if (isfinite(h->t)) return MBK_OK;
        return mbk_set_error(MBK_ENOTFINITE, "time t is %g; set a finite time with mbk_state_set_time",
                             h->t);
    }
    if (stage == MBK_STAGE_POSITION) { lo = 0; n = h->nq; which = 0; }
    else if (stage == MBK_STAGE_VELOCITY) { lo = h->nq; n = h->nu; which = 1; }
    else if (stage == MBK_STAGE_DYNAMICS) { lo = h->nq + h->nu; n = h->nz; which = 2; }
    else return MBK_OK;
    for (int i = 0; i < n; ++i)
        if (!isfinite(y[lo + i]))
            return mbk_set_error(MBK_ENOTFINITE,
                                 "%s[%d] is %g; cannot realize %s: set finite values first",
                                 what[which], i, y[lo + i], mbk_stage_name(stage));
    return MBK_OK;
}

/* ------------------------------------------------------------------ */
/* Argument and stage checks shared by the public functions             */
/* ------------------------------------------------------------------ */

/* Header of an initialized State, or NULL with MBK_EINVAL recorded. */
static st_hdr *need_state(const mbk_state *s, const char *fn)
{
    if (!s) {
        mbk_set_error(MBK_EINVAL, "%s: state is NULL", fn);
        return NULL;
    }
    if (!s->block) {
        mbk_set_error(MBK_EINVAL, "%s: state is not initialized; call mbk_state_init(state, system)",
                      fn);
        return NULL;
    }
    return st_hdr_of(s);
}

/* Header if the State has reached `stage`, else NULL with MBK_ESTAGE naming it. */
static st_hdr *need_stage(const mbk_state *s, mbk_stage stage, const char *fn, const char *what)
{
    st_hdr *h = need_state(s, fn);
    if (!h) return NULL;
    if (h->stage < (int)stage) {
        mbk_set_error(MBK_ESTAGE, "%s: state is realized only to %s; realize to %s before %s", fn,
                      mbk_stage_name((mbk_stage)h->stage), mbk_stage_name(stage), what);
        return NULL;
    }
    return h;
}

/* Subsystem record, or NULL with MBK_EINVAL for a bad index. */
static st_sub *need_sub(const mbk_state *s, int sub, const char *fn)
{
    st_hdr *h = need_state(s, fn);
    if (!h) return NULL;
    if (sub < 0 || sub >= h->nsub) {
        mbk_set_error(MBK_EINVAL, "%s: subsystem index %d is out of range; the state has %d", fn,
                      sub, h->nsub);
        return NULL;
    }
    return st_sub_of(s, sub);
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
    destroy_values(s);
    mbk_free(s->block);
    mbk_free(s);
}

int mbk_state_copy(mbk_state *dst, const mbk_state *src)
{
    if (!dst) return mbk_set_error(MBK_EINVAL, "mbk_state_copy: destination state is NULL");
    const st_hdr *h = need_state(src, "mbk_state_copy");
    if (!h) return mbk_last_status();
    if (dst == src) return MBK_OK;
    /* Reuse the destination's memory when it is big enough: copies in a loop allocate nothing. */
    destroy_values(dst);
    if (dst->capacity < h->size) {
        unsigned char *nb = mbk_malloc(h->size);
        if (!nb) {
            mbk_free(dst->block);
            dst->block = NULL;
            dst->capacity = 0;
            return MBK_ENOMEM;
        }
        mbk_free(dst->block);
        dst->block = nb;
        dst->capacity = h->size;
    }
    memcpy(dst->block, src->block, h->size);
    /* Values with copy ops are constructed again from the source (their bytes may own memory). */
    for (int i = 0; i < h->ndisc; ++i) {
        const st_disc *d = &disc_recs(src)[i];
        if (d->type.copy) d->type.copy(dst->block + d->off, src->block + d->off);
    }
    for (int i = 0; i < h->ncache; ++i) {
        const st_cache *c = &cache_recs(src)[i];
        if (c->type.copy) c->type.copy(dst->block + c->off, src->block + c->off);
    }
    return MBK_OK;
}

size_t mbk_state_get_size_in_bytes(const mbk_state *s)
{
    return s && s->block ? st_hdr_of(s)->size : 0;
}

/* ------------------------------------------------------------------ */
/* Stages and invalidation                                              */
/* ------------------------------------------------------------------ */

mbk_stage mbk_state_get_stage(const mbk_state *s)
{
    return s && s->block ? (mbk_stage)st_hdr_of(s)->stage : MBK_STAGE_EMPTY;
}

mbk_stage mbk_state_get_subsystem_stage(const mbk_state *s, int subsystem)
{
    const st_sub *b = need_sub(s, subsystem, "mbk_state_get_subsystem_stage");
    return b ? (mbk_stage)b->stage : MBK_STAGE_EMPTY;
}

int mbk_state_get_num_subsystems(const mbk_state *s)
{
    return s && s->block ? st_hdr_of(s)->nsub : 0;
}

long mbk_state_get_stage_version(const mbk_state *s, int subsystem, mbk_stage stage)
{
    const st_sub *b = need_sub(s, subsystem, "mbk_state_get_stage_version");
    if (!b) return -1;
    if (stage < MBK_STAGE_EMPTY || stage > MBK_STAGE_REPORT) {
        mbk_set_error(MBK_EINVAL, "mbk_state_get_stage_version: stage %d is not Empty..Report", (int)stage);
        return -1;
    }
    return b->version[stage];
}

/* Bump versions of g..Report everywhere and revert to g - 1 at most. */
static void invalidate(mbk_state *s, int g)
{
    st_hdr *h = st_hdr_of(s);
    for (int k = 0; k < h->nsub; ++k) {
        st_sub *b = st_sub_of(s, k);
        for (int j = g; j <= MBK_STAGE_REPORT; ++j) b->version[j]++;
        if (b->stage >= g) b->stage = g - 1;
    }
    if (h->stage >= g) h->stage = g - 1;
}

/* Invalidate g; a Model change also discards what Model realization allocated. */
static int invalidate_stage(mbk_state *s, int g)
{
    invalidate(s, g);
    if (g <= MBK_STAGE_MODEL && st_hdr_of(s)->alloc_stage == MBK_STAGE_EMPTY)
        return st_drop_allocations(s, MBK_STAGE_MODEL);
    return MBK_OK;
}

int mbk_state_invalidate(mbk_state *s, mbk_stage stage)
{
    if (!need_state(s, "mbk_state_invalidate")) return mbk_last_status();
    if (stage < MBK_STAGE_MODEL || stage > MBK_STAGE_REPORT)
        return mbk_set_error(MBK_EINVAL,
                             "mbk_state_invalidate: stage %d (%s) is not Model..Report; topology "
                             "changes go through mbk_system_invalidate_topology",
                             (int)stage, mbk_stage_name(stage));
    return invalidate_stage(s, (int)stage);
}

/* ------------------------------------------------------------------ */
/* Time and continuous variables                                        */
/* ------------------------------------------------------------------ */

double mbk_state_get_time(const mbk_state *s) { return s && s->block ? st_hdr_of(s)->t : NAN; }

int mbk_state_set_time(mbk_state *s, double t)
{
    st_hdr *h = need_stage(s, MBK_STAGE_TOPOLOGY, "mbk_state_set_time", "setting time");
    if (!h) return mbk_last_status();
    if (!isfinite(t))
        return mbk_set_error(MBK_ENOTFINITE, "mbk_state_set_time: t = %g is not finite", t);
    h->t = t;
    invalidate(s, MBK_STAGE_TIME);
    return MBK_OK;
}

/* Count below Model is an error (sizes are only known from Model). */
static int model_count(const mbk_state *s, int which, const char *fn)
{
    const st_hdr *h = need_stage(s, MBK_STAGE_MODEL, fn, "asking for sizes");
    if (!h) return mbk_last_status();
    const int v[4] = {h->nq, h->nu, h->nz, h->nq + h->nu + h->nz};
    return v[which];
}

int mbk_state_get_nq(const mbk_state *s) { return model_count(s, 0, "mbk_state_get_nq"); }
int mbk_state_get_nu(const mbk_state *s) { return model_count(s, 1, "mbk_state_get_nu"); }
int mbk_state_get_nz(const mbk_state *s) { return model_count(s, 2, "mbk_state_get_nz"); }
int mbk_state_get_ny(const mbk_state *s) { return model_count(s, 3, "mbk_state_get_ny"); }

/* Start of q, u or z within y (0, nq, nq+nu). */
static int y_section(const st_hdr *h, int which)
{
    return which == 0 ? 0 : which == 1 ? h->nq : h->nq + h->nu;
}

static const double *get_y_part(const mbk_state *s, int which, const char *fn)
{
    const st_hdr *h = need_stage(s, MBK_STAGE_MODEL, fn, "reading continuous variables");
    return h ? dbl_at(s, h->y_off) + y_section(h, which) : NULL;
}

const double *mbk_state_get_q(const mbk_state *s) { return get_y_part(s, 0, "mbk_state_get_q"); }
const double *mbk_state_get_u(const mbk_state *s) { return get_y_part(s, 1, "mbk_state_get_u"); }
const double *mbk_state_get_z(const mbk_state *s) { return get_y_part(s, 2, "mbk_state_get_z"); }
const double *mbk_state_get_y(const mbk_state *s) { return get_y_part(s, 0, "mbk_state_get_y"); }

/* Stage a change of q, u or z invalidates. */
static const int y_stage[3] = {MBK_STAGE_POSITION, MBK_STAGE_VELOCITY, MBK_STAGE_DYNAMICS};

static double *upd_y_part(mbk_state *s, int which, const char *fn)
{
    const double *p = get_y_part(s, which, fn);
    if (!p) return NULL;
    invalidate(s, y_stage[which]);
    return (double *)p;
}

double *mbk_state_upd_q(mbk_state *s) { return upd_y_part(s, 0, "mbk_state_upd_q"); }
double *mbk_state_upd_u(mbk_state *s) { return upd_y_part(s, 1, "mbk_state_upd_u"); }
double *mbk_state_upd_z(mbk_state *s) { return upd_y_part(s, 2, "mbk_state_upd_z"); }
double *mbk_state_upd_y(mbk_state *s) { return upd_y_part(s, 0, "mbk_state_upd_y"); }

/* which: 0 q, 1 u, 2 z, 3 y. Checks everything before changing anything. */
static int set_y_part(mbk_state *s, int which, const double *v, int n, const char *fn)
{
    int want = model_count(s, which, fn);
    if (want < 0) return want;
    if (n != want)
        return mbk_set_error(MBK_EINVAL, "%s: got %d values but the state has %d", fn, n, want);
    if (n > 0 && !v) return mbk_set_error(MBK_EINVAL, "%s: values pointer is NULL", fn);
    for (int i = 0; i < n; ++i)
        if (!isfinite(v[i]))
            return mbk_set_error(MBK_ENOTFINITE, "%s: value %d is %g; nothing was changed", fn, i,
                                 v[i]);
    const st_hdr *h = st_hdr_of(s);
    int part = which == 3 ? 0 : which;
    if (n > 0) memcpy(dbl_at(s, h->y_off) + y_section(h, part), v, (size_t)n * sizeof(double));
    invalidate(s, y_stage[part]);
    return MBK_OK;
}

int mbk_state_set_q(mbk_state *s, const double *q, int n) { return set_y_part(s, 0, q, n, "mbk_state_set_q"); }
int mbk_state_set_u(mbk_state *s, const double *u, int n) { return set_y_part(s, 1, u, n, "mbk_state_set_u"); }
int mbk_state_set_z(mbk_state *s, const double *z, int n) { return set_y_part(s, 2, z, n, "mbk_state_set_z"); }
int mbk_state_set_y(mbk_state *s, const double *y, int n) { return set_y_part(s, 3, y, n, "mbk_state_set_y"); }

/* ------------------------------------------------------------------ */
/* Per-subsystem views of y                                             */
/* ------------------------------------------------------------------ */

/* A subsystem's record if the State is at Model, else NULL with the error. */
static const st_sub *model_sub(const mbk_state *s, int sub, const char *fn)
{
    if (!need_stage(s, MBK_STAGE_MODEL, fn, "using continuous variables")) return NULL;
    return need_sub(s, sub, fn);
}

static const double *sub_y(const mbk_state *s, int sub, int which, const char *fn)
{
    const st_sub *b = model_sub(s, sub, fn);
    if (!b) return NULL;
    const st_hdr *h = st_hdr_of(s);
    const int start[3] = {b->q0, b->u0, b->z0};
    return dbl_at(s, h->y_off) + y_section(h, which) + start[which];
}

const double *mbk_state_get_subsystem_q(const mbk_state *s, int k) { return sub_y(s, k, 0, "mbk_state_get_subsystem_q"); }
const double *mbk_state_get_subsystem_u(const mbk_state *s, int k) { return sub_y(s, k, 1, "mbk_state_get_subsystem_u"); }
const double *mbk_state_get_subsystem_z(const mbk_state *s, int k) { return sub_y(s, k, 2, "mbk_state_get_subsystem_z"); }

static double *upd_sub_y(mbk_state *s, int sub, int which, const char *fn)
{
    const double *p = sub_y(s, sub, which, fn);
    if (!p) return NULL;
    invalidate(s, y_stage[which]);
    return (double *)p;
}

double *mbk_state_upd_subsystem_q(mbk_state *s, int k) { return upd_sub_y(s, k, 0, "mbk_state_upd_subsystem_q"); }
double *mbk_state_upd_subsystem_u(mbk_state *s, int k) { return upd_sub_y(s, k, 1, "mbk_state_upd_subsystem_u"); }
double *mbk_state_upd_subsystem_z(mbk_state *s, int k) { return upd_sub_y(s, k, 2, "mbk_state_upd_subsystem_z"); }

/* which: 0..2 counts of q/u/z, 3..5 their starts. */
static int sub_int(const mbk_state *s, int sub, int which, const char *fn)
{
    const st_sub *b = model_sub(s, sub, fn);
    if (!b) return mbk_last_status();
    const int v[6] = {b->nq, b->nu, b->nz, b->q0, b->u0, b->z0};
    return v[which];
}

int mbk_state_get_subsystem_nq(const mbk_state *s, int k) { return sub_int(s, k, 0, "mbk_state_get_subsystem_nq"); }
int mbk_state_get_subsystem_nu(const mbk_state *s, int k) { return sub_int(s, k, 1, "mbk_state_get_subsystem_nu"); }
int mbk_state_get_subsystem_nz(const mbk_state *s, int k) { return sub_int(s, k, 2, "mbk_state_get_subsystem_nz"); }
int mbk_state_get_subsystem_q_start(const mbk_state *s, int k) { return sub_int(s, k, 3, "mbk_state_get_subsystem_q_start"); }
int mbk_state_get_subsystem_u_start(const mbk_state *s, int k) { return sub_int(s, k, 4, "mbk_state_get_subsystem_u_start"); }
int mbk_state_get_subsystem_z_start(const mbk_state *s, int k) { return sub_int(s, k, 5, "mbk_state_get_subsystem_z_start"); }

/* ------------------------------------------------------------------ */
/* Derivative caches                                                    */
/* ------------------------------------------------------------------ */

/* which: 0 qdot, 1 udot, 2 zdot (in ydot), 3 qdotdot. */
static double *deriv_base(const mbk_state *s, int which)
{
    const st_hdr *h = st_hdr_of(s);
    if (which == 3) return dbl_at(s, h->qdd_off);
    return dbl_at(s, h->ydot_off) + y_section(h, which);
}

static const double *get_deriv(const mbk_state *s, int which, mbk_stage stage, const char *fn)
{
    if (!need_stage(s, stage, fn, "reading derivatives")) return NULL;
    return deriv_base(s, which);
}

const double *mbk_state_get_qdot(const mbk_state *s) { return get_deriv(s, 0, MBK_STAGE_VELOCITY, "mbk_state_get_qdot"); }
const double *mbk_state_get_udot(const mbk_state *s) { return get_deriv(s, 1, MBK_STAGE_ACCELERATION, "mbk_state_get_udot"); }
const double *mbk_state_get_zdot(const mbk_state *s) { return get_deriv(s, 2, MBK_STAGE_ACCELERATION, "mbk_state_get_zdot"); }
const double *mbk_state_get_ydot(const mbk_state *s) { return get_deriv(s, 0, MBK_STAGE_ACCELERATION, "mbk_state_get_ydot"); }
const double *mbk_state_get_qdotdot(const mbk_state *s) { return get_deriv(s, 3, MBK_STAGE_ACCELERATION, "mbk_state_get_qdotdot"); }

static double *upd_deriv(const mbk_state *s, int which, const char *fn)
{
    if (!need_stage(s, MBK_STAGE_MODEL, fn, "writing derivatives")) return NULL;
    return deriv_base(s, which);
}

double *mbk_state_upd_qdot(const mbk_state *s) { return upd_deriv(s, 0, "mbk_state_upd_qdot"); }
double *mbk_state_upd_udot(const mbk_state *s) { return upd_deriv(s, 1, "mbk_state_upd_udot"); }
double *mbk_state_upd_zdot(const mbk_state *s) { return upd_deriv(s, 2, "mbk_state_upd_zdot"); }
double *mbk_state_upd_qdotdot(const mbk_state *s) { return upd_deriv(s, 3, "mbk_state_upd_qdotdot"); }

static double *upd_sub_deriv(const mbk_state *s, int sub, int which, const char *fn)
{
    const st_sub *b = model_sub(s, sub, fn);
    if (!b) return NULL;
    const int start[4] = {b->q0, b->u0, b->z0, b->q0};
    return deriv_base(s, which) + start[which];
}

double *mbk_state_upd_subsystem_qdot(const mbk_state *s, int k) { return upd_sub_deriv(s, k, 0, "mbk_state_upd_subsystem_qdot"); }
double *mbk_state_upd_subsystem_udot(const mbk_state *s, int k) { return upd_sub_deriv(s, k, 1, "mbk_state_upd_subsystem_udot"); }
double *mbk_state_upd_subsystem_zdot(const mbk_state *s, int k) { return upd_sub_deriv(s, k, 2, "mbk_state_upd_subsystem_zdot"); }
double *mbk_state_upd_subsystem_qdotdot(const mbk_state *s, int k) { return upd_sub_deriv(s, k, 3, "mbk_state_upd_subsystem_qdotdot"); }

/* ------------------------------------------------------------------ */
/* Allocation                                                           */
/* ------------------------------------------------------------------ */

/* Allocation is allowed only while realizing the given stages. */
static st_sub *need_alloc(mbk_state *s, int sub, int lo, int hi, const char *fn, const char *where)
{
    st_sub *b = need_sub(s, sub, fn);
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

/* Rebuild with one more discrete variable or cache entry; returns its index. */
static int add_value(mbk_state *s, edit_kind kind, int sub, int stage_a, int stage_b,
                     const mbk_value_type *type, const void *init, int index)
{
    st_edit e;
    memset(&e, 0, sizeof e);
    e.kind = kind;
    e.sub = sub;
    e.stage_a = stage_a;
    e.stage_b = stage_b;
    e.type = type;
    e.vinit = init;
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
    return add_value(s, EDIT_DISC, sub, (int)invalidates, 0, type, init, b->ndisc);
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
    return add_value(s, EDIT_CACHE, sub, (int)depends_on, (int)computed_by, type, init, b->ncache);
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
/* Discrete variables                                                   */
/* ------------------------------------------------------------------ */

int mbk_state_get_num_discrete(const mbk_state *s, int subsystem)
{
    const st_sub *b = need_sub(s, subsystem, "mbk_state_get_num_discrete");
    return b ? b->ndisc : mbk_last_status();
}

static st_disc *disc_rec(const mbk_state *s, int sub, int index, const char *fn)
{
    const st_sub *b = need_sub(s, sub, fn);
    if (!b) return NULL;
    if (index < 0 || index >= b->ndisc) {
        mbk_set_error(MBK_EINVAL,
                      "%s: discrete variable %d of subsystem %d is out of range; it has %d", fn,
                      index, sub, b->ndisc);
        return NULL;
    }
    return &disc_recs(s)[b->disc0 + index];
}

/* Type check shared by the _as functions. */
static int type_matches(const mbk_value_type *have, const mbk_value_type *want, const char *fn,
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
    if (invalidate_stage(s, d->invalidates) < 0) return NULL;
    d = disc_rec(s, sub, index, "mbk_state_upd_discrete");
    return d ? s->block + d->off : NULL;
}

const void *mbk_state_get_discrete_as(const mbk_state *s, int sub, int index,
                                      const mbk_value_type *type)
{
    const char *fn = "mbk_state_get_discrete_as";
    const st_disc *d = disc_rec(s, sub, index, fn);
    if (!d || !type_matches(&d->type, type, fn, "discrete variable", sub, index)) return NULL;
    return s->block + d->off;
}

void *mbk_state_upd_discrete_as(mbk_state *s, int sub, int index, const mbk_value_type *type)
{
    if (!mbk_state_get_discrete_as(s, sub, index, type)) return NULL;
    return mbk_state_upd_discrete(s, sub, index);
}

int mbk_state_set_discrete(mbk_state *s, int sub, int index, const mbk_value_type *type,
                           const void *value)
{
    if (!value) return mbk_set_error(MBK_EINVAL, "mbk_state_set_discrete: value is NULL");
    if (!mbk_state_get_discrete_as(s, sub, index, type)) return mbk_last_status();
    void *dst = mbk_state_upd_discrete(s, sub, index);
    if (!dst) return mbk_last_status();
    if (dst == value) return MBK_OK;
    value_destroy(type, dst);
    value_copy(type, dst, value);
    return MBK_OK;
}

mbk_stage mbk_state_get_discrete_stage(const mbk_state *s, int sub, int index)
{
    const st_disc *d = disc_rec(s, sub, index, "mbk_state_get_discrete_stage");
    return d ? (mbk_stage)d->invalidates : MBK_STAGE_EMPTY;
}

/* ------------------------------------------------------------------ */
/* Cache entries                                                        */
/* ------------------------------------------------------------------ */

int mbk_state_get_num_cache(const mbk_state *s, int subsystem)
{
    const st_sub *b = need_sub(s, subsystem, "mbk_state_get_num_cache");
    return b ? b->ncache : mbk_last_status();
}

static st_cache *cache_rec(const mbk_state *s, int sub, int index, const char *fn)
{
    const st_sub *b = need_sub(s, sub, fn);
    if (!b) return NULL;
    if (index < 0 || index >= b->ncache) {
        mbk_set_error(MBK_EINVAL, "%s: cache entry %d of subsystem %d is out of range; it has %d",
                      fn, index, sub, b->ncache);
        return NULL;
    }
    return &cache_recs(s)[b->cache0 + index];
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
    if (!c || !type_matches(&c->type, type, fn, "cache entry", sub, index)) return NULL;
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
    if (!c || !type_matches(&c->type, type, fn, "cache entry", sub, index)) return NULL;
    return s->block + c->off;
}

/* ------------------------------------------------------------------ */
/* Constraint errors, multipliers, event witnesses                      */
/* ------------------------------------------------------------------ */

/* which: 0 qerr, 1 uerr, 2 udoterr. */
static int err_count(const st_hdr *h, int which)
{
    return which == 0 ? h->nqerr : which == 1 ? h->nuerr : h->nudoterr;
}

static int err_offset(const st_hdr *h, int which)
{
    return which == 0 ? 0 : which == 1 ? h->nqerr : h->nqerr + h->nuerr;
}

static int get_err_count(const mbk_state *s, int which, const char *fn)
{
    const st_hdr *h = need_stage(s, MBK_STAGE_INSTANCE, fn, "asking for constraint counts");
    return h ? err_count(h, which) : mbk_last_status();
}

int mbk_state_get_nqerr(const mbk_state *s) { return get_err_count(s, 0, "mbk_state_get_nqerr"); }
int mbk_state_get_nuerr(const mbk_state *s) { return get_err_count(s, 1, "mbk_state_get_nuerr"); }
int mbk_state_get_nudoterr(const mbk_state *s) { return get_err_count(s, 2, "mbk_state_get_nudoterr"); }
int mbk_state_get_num_multipliers(const mbk_state *s) { return get_err_count(s, 2, "mbk_state_get_num_multipliers"); }

static const double *get_err(const mbk_state *s, int which, mbk_stage stage, const char *fn)
{
    const st_hdr *h = need_stage(s, stage, fn, "reading constraint errors");
    return h ? dbl_at(s, h->err_off) + err_offset(h, which) : NULL;
}

const double *mbk_state_get_qerr(const mbk_state *s) { return get_err(s, 0, MBK_STAGE_POSITION, "mbk_state_get_qerr"); }
const double *mbk_state_get_uerr(const mbk_state *s) { return get_err(s, 1, MBK_STAGE_VELOCITY, "mbk_state_get_uerr"); }
const double *mbk_state_get_udoterr(const mbk_state *s) { return get_err(s, 2, MBK_STAGE_ACCELERATION, "mbk_state_get_udoterr"); }

const double *mbk_state_get_multipliers(const mbk_state *s)
{
    const st_hdr *h = need_stage(s, MBK_STAGE_ACCELERATION, "mbk_state_get_multipliers",
                                 "reading multipliers");
    return h ? dbl_at(s, h->mult_off) : NULL;
}

/* which: 0 qerr, 1 uerr, 2 udoterr, 3 multipliers. */
static double *upd_sub_err(const mbk_state *s, int sub, int which, const char *fn)
{
    if (!need_stage(s, MBK_STAGE_INSTANCE, fn, "writing constraint errors")) return NULL;
    const st_sub *b = need_sub(s, sub, fn);
    if (!b) return NULL;
    const st_hdr *h = st_hdr_of(s);
    if (which == 3) return dbl_at(s, h->mult_off) + b->udoterr0;
    const int start[3] = {b->qerr0, b->uerr0, b->udoterr0};
    return dbl_at(s, h->err_off) + err_offset(h, which) + start[which];
}

double *mbk_state_upd_subsystem_qerr(const mbk_state *s, int k) { return upd_sub_err(s, k, 0, "mbk_state_upd_subsystem_qerr"); }
double *mbk_state_upd_subsystem_uerr(const mbk_state *s, int k) { return upd_sub_err(s, k, 1, "mbk_state_upd_subsystem_uerr"); }
double *mbk_state_upd_subsystem_udoterr(const mbk_state *s, int k) { return upd_sub_err(s, k, 2, "mbk_state_upd_subsystem_udoterr"); }
double *mbk_state_upd_subsystem_multipliers(const mbk_state *s, int k) { return upd_sub_err(s, k, 3, "mbk_state_upd_subsystem_multipliers"); }

static int sub_err_start(const mbk_state *s, int sub, int which, const char *fn)
{
    if (!need_stage(s, MBK_STAGE_INSTANCE, fn, "asking for constraint slots")) return mbk_last_status();
    const st_sub *b = need_sub(s, sub, fn);
    if (!b) return mbk_last_status();
    const int start[3] = {b->qerr0, b->uerr0, b->udoterr0};
    return start[which];
}

int mbk_state_get_subsystem_qerr_start(const mbk_state *s, int k) { return sub_err_start(s, k, 0, "mbk_state_get_subsystem_qerr_start"); }
int mbk_state_get_subsystem_uerr_start(const mbk_state *s, int k) { return sub_err_start(s, k, 1, "mbk_state_get_subsystem_uerr_start"); }
int mbk_state_get_subsystem_udoterr_start(const mbk_state *s, int k) { return sub_err_start(s, k, 2, "mbk_state_get_subsystem_udoterr_start"); }

static int event_stage_ok(mbk_stage stage, const char *fn)
{
    if (stage >= MBK_STAGE_TIME && stage <= MBK_STAGE_REPORT) return 1;
    mbk_set_error(MBK_EINVAL, "%s: witnesses are evaluated at Time..Report, not %s", fn,
                  mbk_stage_name(stage));
    return 0;
}

int mbk_state_get_num_event_triggers(const mbk_state *s, mbk_stage stage)
{
    const char *fn = "mbk_state_get_num_event_triggers";
    const st_hdr *h = need_stage(s, MBK_STAGE_INSTANCE, fn, "asking for witness counts");
    if (!h || !event_stage_ok(stage, fn)) return mbk_last_status();
    return h->ntrig[stage - ST_FIRST_EVENT_STAGE];
}

const double *mbk_state_get_event_triggers(const mbk_state *s, mbk_stage stage)
{
    const char *fn = "mbk_state_get_event_triggers";
    if (!event_stage_ok(stage, fn)) return NULL;
    const st_hdr *h = need_stage(s, stage, fn, "reading its witnesses");
    if (!h) return NULL;
    return dbl_at(s, h->trig_off) + h->trig0[stage - ST_FIRST_EVENT_STAGE];
}

double *mbk_state_upd_event_triggers(const mbk_state *s, int sub, mbk_stage stage)
{
    const char *fn = "mbk_state_upd_event_triggers";
    if (!event_stage_ok(stage, fn)) return NULL;
    if (!need_stage(s, MBK_STAGE_INSTANCE, fn, "writing witnesses")) return NULL;
    const st_sub *b = need_sub(s, sub, fn);
    if (!b) return NULL;
    const st_hdr *h = st_hdr_of(s);
    int j = stage - ST_FIRST_EVENT_STAGE;
    return dbl_at(s, h->trig_off) + h->trig0[j] + b->trig0[j];
}
