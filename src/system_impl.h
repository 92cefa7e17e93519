/* Private layout of a System. */
#ifndef MBK_SYSTEM_IMPL_H
#define MBK_SYSTEM_IMPL_H

#include <stdint.h>
#include "mbk/system.h"
#include "state_impl.h"

struct mbk_subsystem_ctx {
    const mbk_system *sys; /* owning System */
    int index;             /* index of the subsystem */
};

typedef struct sys_sub {
    mbk_subsystem_ops ops;                /* copied ops table */
    const mbk_subsystem_ops *ops_source;  /* the table passed in, for lookups by identity */
    void *impl;                           /* owned implementation */
    mbk_realize_fn realize[MBK_NUM_STAGES]; /* ops' realize function of each stage (NULL: none) */
    mbk_subsystem_ctx ctx;                /* handed to every op */
} sys_sub;

struct mbk_system {
    char *name;               /* copied name */
    sys_sub **subs;           /* subsystems in realization order */
    int nsub, cap;            /* count and capacity of subs */
    bool topology_realized;   /* realize_topology done and not invalidated since */
    long topology_version;    /* bumped when a realized topology is invalidated */
    uint64_t stamp;           /* stamp States of this topology carry */
    mbk_state *default_state; /* built by realize_topology */
};

/* Whether s is an initialized State of sys's current topology (what mbk_system_check_state
   checks, without its messages): the test every hot call makes first. */
static inline bool sys_state_current(const mbk_system *sys, const mbk_state *s)
{
    return sys && s && s->block && sys->topology_realized && st_hdr_of(s)->stamp == sys->stamp;
}

#endif
