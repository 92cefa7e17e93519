/* Private layout of the State block and the helpers shared by the state_*.c files
 * and system.c.
 *
 * The whole State lives in one malloc'd block: a header, one record per
 * subsystem, one record per discrete variable and per cache entry, the
 * double arrays, then the values. Every reference inside is an offset, so
 * the block can be copied with memcpy. */
#ifndef MBK_STATE_IMPL_H
#define MBK_STATE_IMPL_H

#include <stdint.h>

#include "mbk/state.h"
#include "mbk/status.h"

/* Stages that can own event witnesses: Time..Report. */
#define ST_FIRST_EVENT_STAGE MBK_STAGE_TIME
#define ST_NUM_EVENT_STAGES ((int)MBK_STAGE_REPORT - (int)MBK_STAGE_TIME + 1)

typedef struct st_sub {
    int stage;                         /* stage this subsystem is realized to */
    int nq, nu, nz;                    /* continuous variables it owns */
    int q0, u0, z0;                    /* their starts in the global q, u, z */
    int nq_topo, nu_topo, nz_topo;     /* how many of them were allocated at Topology */
    int nqerr, nuerr, nudoterr;        /* constraint-error slots (Instance) */
    int qerr0, uerr0, udoterr0;        /* their starts in the global arrays */
    int ntrig[ST_NUM_EVENT_STAGES];    /* witnesses per stage (Instance) */
    int trig0[ST_NUM_EVENT_STAGES];    /* their starts within that stage's witnesses */
    int ndisc, disc0, ndisc_topo;      /* discrete records: count, first, count from Topology */
    int ncache, cache0, ncache_topo;   /* cache records: count, first, count from Topology */
    long version[MBK_NUM_STAGES];      /* bumped each time the stage is invalidated */
} st_sub;

typedef struct st_disc {
    mbk_value_type type; /* what the value is */
    size_t off;          /* value's offset in the block */
    int alloc_stage;     /* stage at which it was allocated (Topology or Model) */
    int invalidates;     /* stage reverted (to invalidates - 1) when it changes */
} st_disc;

typedef struct st_cache {
    mbk_value_type type; /* what the value is */
    size_t off;          /* value's offset in the block */
    long mark_version;   /* version of depends_on when it was marked realized */
    int alloc_stage;     /* stage at which it was allocated (Topology or Model) */
    int depends_on;      /* earliest stage whose variables it depends on */
    int computed_by;     /* stage whose realization computes it (Infinity: lazy) */
    int marked;          /* marked realized since allocation */
    int scratch;         /* work space (mbk_state_allocate_scratch): its value sits after
                            copy_size and is never copied */
} st_cache;

typedef struct st_hdr {
    size_t size;          /* bytes used in the block */
    size_t copy_size;     /* bytes a copy carries: all but the scratch values, which come last */
    uint64_t stamp;       /* topology stamp of the System that made it */
    int nsub;             /* subsystems */
    int stage;            /* lowest subsystem stage (the State's stage) */
    int alloc_stage;      /* stage being realized while allocation is allowed, else Empty */
    int realizing;        /* stage being realized now, else Empty (for messages) */
    int nq, nu, nz;       /* continuous variable counts */
    int nqerr, nuerr, nudoterr; /* constraint-error counts */
    int ndisc, ncache;    /* record counts, all subsystems */
    int ntrig[ST_NUM_EVENT_STAGES]; /* witnesses per stage, all subsystems */
    int trig0[ST_NUM_EVENT_STAGES]; /* each stage's start in the witness array */
    double t;             /* time */
    int y_checked;        /* ST_CHECKED_* bits: the parts of y known finite since they were last
                             written (set_y scanned them), so realization need not scan again */
    size_t sub_off, disc_off, cache_off; /* record arrays */
    size_t y_off, ydot_off, qdd_off;     /* y, ydot = [qdot udot zdot], qdotdot */
    size_t ybak_off;                     /* y as it was before a call that restores it on failure */
    size_t err_off, mult_off, trig_off;  /* [qerr uerr udoterr], multipliers, witnesses */
} st_hdr;

struct mbk_state {
    unsigned char *block; /* the State; NULL while Empty */
    size_t capacity;      /* bytes allocated for block */
};

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

/* One rebuild: what it adds, where, with which initial values, and what it drops. */
typedef struct st_edit {
    edit_kind kind;              /* what to add */
    int sub;                     /* to which subsystem */
    int n;                       /* how many doubles (q/u/z/err/trig) */
    const double *init;          /* initial doubles, or NULL for zeros */
    int stage_a, stage_b;        /* discrete: invalidates; cache: depends_on, computed_by; trig: stage */
    const mbk_value_type *type;  /* value type (discrete, cache) */
    const void *vinit;           /* initial value, or NULL for zero bytes */
    int drop_from;               /* drop allocations made at this stage or later (Empty: none) */
    int scratch;                 /* the cache entry is work space (placed after copy_size) */
} st_edit;

/* Bits of st_hdr.y_checked, one per part of y, the bit of a part at 1 << (its stage - Position). */
enum { ST_CHECKED_Q = 1, ST_CHECKED_U = 2, ST_CHECKED_Z = 4 };

/* Header of an initialized State (NULL if Empty). */
static inline st_hdr *st_hdr_of(const mbk_state *s) { return s && s->block ? (st_hdr *)s->block : NULL; }
/* Subsystem record k of an initialized State. */
static inline st_sub *st_sub_of(const mbk_state *s, int k)
{
    return (st_sub *)(s->block + ((st_hdr *)s->block)->sub_off) + k;
}
/* Discrete variable records of an initialized State (all subsystems). */
static inline st_disc *st_disc_recs(const mbk_state *s)
{
    return (st_disc *)(s->block + st_hdr_of(s)->disc_off);
}
/* Cache entry records of an initialized State (all subsystems). */
static inline st_cache *st_cache_recs(const mbk_state *s)
{
    return (st_cache *)(s->block + st_hdr_of(s)->cache_off);
}
/* The bytes of cache entry `index` of subsystem `sub`, unchecked: for the library's own
   subsystems, whose indices come from their own allocations and whose public calls have
   already checked the State (mbk_state_upd_cache checks every argument). */
static inline void *st_cache_bytes(const mbk_state *s, int sub, int index)
{
    return s->block + st_cache_recs(s)[st_sub_of(s, sub)->cache0 + index].off;
}
/* The bytes of discrete variable `index` of subsystem `sub`, unchecked, as st_cache_bytes. */
static inline void *st_disc_bytes(const mbk_state *s, int sub, int index)
{
    return s->block + st_disc_recs(s)[st_sub_of(s, sub)->disc0 + index].off;
}
/* The doubles at byte offset `off` of the block. */
static inline double *st_dbl_at(const mbk_state *s, size_t off) { return (double *)(s->block + off); }
/* Subsystem sub's q, u or z (which 0, 1, 2) within y, unchecked: for the realize ops of the
   library's own subsystems, which run on a State the System has checked (at Model or later). */
static inline double *st_sub_y(const mbk_state *s, int sub, int which)
{
    const st_hdr *h = st_hdr_of(s);
    const st_sub *b = st_sub_of(s, sub);
    const int start[3] = {b->q0, h->nq + b->u0, h->nq + h->nu + b->z0};
    return st_dbl_at(s, h->y_off) + start[which];
}
/* Subsystem sub's qdot, udot or zdot (which 0, 1, 2) within ydot, unchecked as st_sub_y. */
static inline double *st_sub_ydot(const mbk_state *s, int sub, int which)
{
    return st_sub_y(s, sub, which) + (st_hdr_of(s)->ydot_off - st_hdr_of(s)->y_off) / sizeof(double);
}
/* Subsystem sub's qdotdot, unchecked as st_sub_y. */
static inline double *st_sub_qdotdot(const mbk_state *s, int sub)
{
    return st_dbl_at(s, st_hdr_of(s)->qdd_off) + st_sub_of(s, sub)->q0;
}
/* Room for a copy of y (ny doubles), for calls that must leave y as it was on failure. */
static inline double *st_y_backup(const mbk_state *s) { return st_dbl_at(s, st_hdr_of(s)->ybak_off); }

/* ---- Argument and stage checks shared by the public functions, and invalidation; inline
   because they sit on the path of every accessor ---- */

/* Header of an initialized State, or NULL with MBK_EINVAL recorded. */
static inline st_hdr *st_need_state(const mbk_state *s, const char *fn)
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
static inline st_hdr *st_need_stage(const mbk_state *s, mbk_stage stage, const char *fn,
                                    const char *what)
{
    st_hdr *h = st_need_state(s, fn);
    if (!h) return NULL;
    if (h->stage < (int)stage) {
        mbk_set_error(MBK_ESTAGE, "%s: state is realized only to %s; realize to %s before %s", fn,
                      mbk_stage_name((mbk_stage)h->stage), mbk_stage_name(stage), what);
        return NULL;
    }
    return h;
}

/* Subsystem record, or NULL with MBK_EINVAL for a bad index. */
static inline st_sub *st_need_sub(const mbk_state *s, int sub, const char *fn)
{
    st_hdr *h = st_need_state(s, fn);
    if (!h) return NULL;
    if (sub < 0 || sub >= h->nsub) {
        mbk_set_error(MBK_EINVAL, "%s: subsystem index %d is out of range; the state has %d", fn,
                      sub, h->nsub);
        return NULL;
    }
    return st_sub_of(s, sub);
}

/* Bump versions of g..Report everywhere and revert to g - 1 at most. Every way to write y
   (upd, set, a load) invalidates its stage, so the checked bits of the parts from g on go. */
static inline void st_invalidate(mbk_state *s, int g)
{
    st_hdr *h = st_hdr_of(s);
    if (g <= MBK_STAGE_DYNAMICS) h->y_checked &= g <= MBK_STAGE_POSITION ? 0 : (1 << (g - MBK_STAGE_POSITION)) - 1;
    for (int k = 0; k < h->nsub; ++k) {
        st_sub *b = st_sub_of(s, k);
        /* g..Report by adding 0 or 1 to every entry: a loop of fixed length, unrolled and vectorized */
        for (int j = 0; j < MBK_NUM_STAGES; ++j) b->version[j] += j >= g;
        if (b->stage >= g) b->stage = g - 1;
    }
    if (h->stage >= g) h->stage = g - 1;
}

/* Recompute hdr->stage from the subsystem stages. */
static inline void st_update_stage(mbk_state *s)
{
    st_hdr *h = st_hdr_of(s);
    if (h->nsub == 0) return;
    int lo = MBK_STAGE_INFINITY;
    for (int k = 0; k < h->nsub; ++k)
        if (st_sub_of(s, k)->stage < lo) lo = st_sub_of(s, k)->stage;
    h->stage = lo;
}

/* Whether the variables of stage g (q at Position, u at Velocity, z at Dynamics) are known
   finite without a scan: set_q, set_u, set_z or set_y scanned them (st_hdr.y_checked), or
   there are none. */
static inline bool st_y_known_finite(const mbk_state *s, int g)
{
    const st_hdr *h = st_hdr_of(s);
    if (g == MBK_STAGE_DYNAMICS && h->nz == 0) return true; /* no z at all */
    return g >= MBK_STAGE_POSITION && g <= MBK_STAGE_DYNAMICS && ((h->y_checked >> (g - MBK_STAGE_POSITION)) & 1);
}

/* ---- state_block.c: layout and rebuild ---- */
/* A zeroed State block of size bytes on a 64-byte boundary, so that the layout's
   64-byte offsets are cache-line aligned in memory (vector loads of the values never
   straddle a line the layout keeps them within); NULL and MBK_ENOMEM's message on failure. */
unsigned char *st_block_alloc(size_t size);
/* Free a block from st_block_alloc (NULL is fine). */
void st_block_free(unsigned char *block);
/* Lay out a fresh block with nsub empty subsystems at stage Empty. */
int st_init_empty(mbk_state *s, int nsub);
/* Build a new block from the old one with the edit applied, then swap. */
int st_rebuild(mbk_state *s, const st_edit *e);
/* Destroy every value in a block (before it is freed or overwritten). */
void st_destroy_values(const mbk_state *s);
/* Copy-construct a value into raw memory. */
void st_value_copy(const mbk_value_type *t, void *dst, const void *src);
/* Destroy a value in place (its type's destroy op, if any). */
void st_value_destroy(const mbk_value_type *t, void *v);
/* Fingerprint of the layout (counts, types, stages): of what Topology allocated, or
   with `full` of everything allocated so far (Topology and Model). */
uint64_t st_layout_hash(const mbk_state *s, int full);

/* ---- state_alloc.c: allocation ---- */
/* Drop allocations made at stage `from` or later (Model or Instance). */
int st_drop_allocations(mbk_state *s, mbk_stage from);
/* True if any allocation was made at stage `from` or later. */
int st_has_allocations_from(const mbk_state *s, mbk_stage from);

/* ---- state.c ---- */
/* Type check shared by the _as functions: 1 if `have` equals `want`, else 0 with MBK_EINVAL. */
int st_type_matches(const mbk_value_type *have, const mbk_value_type *want, const char *fn,
                    const char *what, int sub, int index);

/* ---- state_stage.c: stages and invalidation ---- */
/* Invalidate g; a Model change also discards what Model realization allocated. */
int st_invalidate_stage(mbk_state *s, int g);

/* ---- state_vars.c: continuous variables ---- */
/* MBK_OK if the variables of `stage` (t, q, u or z) are all finite, else MBK_ENOTFINITE. */
int st_check_finite(const mbk_state *s, mbk_stage stage);

#endif
