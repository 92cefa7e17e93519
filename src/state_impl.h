/* Private layout of the State block, shared by state.c and system.c.
 *
 * The whole State lives in one malloc'd block: a header, one record per
 * subsystem, one record per discrete variable and per cache entry, the
 * double arrays, then the values. Every reference inside is an offset, so
 * the block can be copied with memcpy. */
#ifndef MBK_STATE_IMPL_H
#define MBK_STATE_IMPL_H

#include <stdint.h>
#include "mbk/state.h"

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
} st_cache;

typedef struct st_hdr {
    size_t size;          /* bytes used in the block */
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
    size_t sub_off, disc_off, cache_off; /* record arrays */
    size_t y_off, ydot_off, qdd_off;     /* y, ydot = [qdot udot zdot], qdotdot */
    size_t err_off, mult_off, trig_off;  /* [qerr uerr udoterr], multipliers, witnesses */
} st_hdr;

struct mbk_state {
    unsigned char *block; /* the State; NULL while Empty */
    size_t capacity;      /* bytes allocated for block */
};

/* Lay out a fresh block with nsub empty subsystems at stage Empty. */
int st_init_empty(mbk_state *s, int nsub);
/* Header of an initialized State (NULL if Empty). */
static inline st_hdr *st_hdr_of(const mbk_state *s) { return s && s->block ? (st_hdr *)s->block : NULL; }
/* Subsystem record k of an initialized State. */
static inline st_sub *st_sub_of(const mbk_state *s, int k)
{
    return (st_sub *)(s->block + ((st_hdr *)s->block)->sub_off) + k;
}
/* Drop allocations made at stage `from` or later (Model or Instance). */
int st_drop_allocations(mbk_state *s, mbk_stage from);
/* True if any allocation was made at stage `from` or later. */
int st_has_allocations_from(const mbk_state *s, mbk_stage from);
/* Recompute hdr->stage from the subsystem stages. */
void st_update_stage(mbk_state *s);
/* Fingerprint of the layout made at Topology (counts, types, stages). */
uint64_t st_layout_hash(const mbk_state *s);
/* MBK_OK if the variables of `stage` (t, q, u or z) are all finite, else MBK_ENOTFINITE. */
int st_check_finite(const mbk_state *s, mbk_stage stage);

#endif
