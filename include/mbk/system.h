/* mbk/system.h - a System is an ordered list of Subsystems.
 *
 * Subsystems are ops tables (every op optional) plus an impl pointer that
 * the System owns once added. Realizing a State advances every subsystem
 * one stage at a time, calling their ops in the order they were added. After
 * mbk_system_realize_topology the System is read-only, so States may be
 * realized concurrently on different threads. */
#ifndef MBK_SYSTEM_H
#define MBK_SYSTEM_H

#include "mbk/events.h"
#include "mbk/state.h"

/* Declarations here are the public API: exported from the shared library, whose
   other symbols are hidden (CMakeLists.txt, "symbol visibility"). */
#if defined(__GNUC__)
#pragma GCC visibility push(default)
#endif
#ifdef __cplusplus
extern "C" {
#endif

typedef struct mbk_subsystem_ctx mbk_subsystem_ctx;

/* The System a subsystem belongs to. */
const mbk_system *mbk_subsystem_ctx_get_system(const mbk_subsystem_ctx *c);
/* The subsystem's index in its System (its index in State calls). */
int mbk_subsystem_ctx_get_index(const mbk_subsystem_ctx *c);

/* Realize op: return 0 on success, >0 for a recoverable failure, <0 for a fatal one.
   Only realize_topology and realize_model may allocate variables and cache
   entries; realize_instance may allocate constraint-error slots and witnesses.
   Ops of Time and later write cache only (q, u, z and discrete variables stay). */
typedef int (*mbk_realize_fn)(void *impl, const mbk_subsystem_ctx *c, mbk_state *s);

typedef struct mbk_subsystem_ops {
    const char *name; /* shown in messages */
    mbk_realize_fn realize_topology, realize_model, realize_instance, realize_time,
        realize_position, realize_velocity, realize_dynamics, realize_acceleration,
        realize_report; /* one per stage; NULL: nothing to do */
    /* This subsystem's potential energy: *pe arrives 0.0; set it or add to it (Position). */
    int (*calc_potential_energy)(void *impl, const mbk_subsystem_ctx *c, const mbk_state *s,
                                 double *pe);
    /* This subsystem's kinetic energy: *ke arrives 0.0; set it or add to it (Velocity). */
    int (*calc_kinetic_energy)(void *impl, const mbk_subsystem_ctx *c, const mbk_state *s,
                               double *ke);
    /* Handle this subsystem's events that occurred (ids it created). */
    int (*handle_events)(void *impl, const mbk_subsystem_ctx *c, mbk_state *s,
                         const int *event_ids, int n_events, mbk_event_result *result);
    /* Time of the next scheduled event and its ids (capacity in *n_events on entry). */
    int (*next_scheduled_event)(void *impl, const mbk_subsystem_ctx *c, const mbk_state *s,
                                double *t_next, int *event_ids, int *n_events);
    /* Move this subsystem's q, then u, back onto its constraint manifold (errors within
       tol) and normalize what needs it; called by mbk_system_project. */
    int (*project)(void *impl, const mbk_subsystem_ctx *c, mbk_state *s, double tol);
    /* Free impl; called by mbk_system_destroy. */
    void (*destroy)(void *impl);
} mbk_subsystem_ops;

/* New, empty System. The name is copied. */
mbk_system *mbk_system_create(const char *name);
/* Destroy the System and every subsystem it owns (their destroy ops); NULL ignored. */
void mbk_system_destroy(mbk_system *sys);
/* The System's name. */
const char *mbk_system_get_name(const mbk_system *sys);
/* Add a subsystem (ops copied; impl owned from now on); returns its index or a negative status.
   Adding to a realized System invalidates its topology. */
int mbk_system_add_subsystem(mbk_system *sys, const mbk_subsystem_ops *ops, void *impl);
/* Number of subsystems. */
int mbk_system_get_num_subsystems(const mbk_system *sys);
/* A subsystem's impl pointer (NULL for a bad index). */
void *mbk_system_upd_subsystem_impl(mbk_system *sys, int subsystem);
/* A subsystem's impl pointer, read-only use (NULL for a bad index). */
const void *mbk_system_get_subsystem_impl(const mbk_system *sys, int subsystem);
/* A subsystem's ops table as passed to mbk_system_add_subsystem (NULL for a bad index). */
const mbk_subsystem_ops *mbk_system_get_subsystem_ops(const mbk_system *sys, int subsystem);
/* A subsystem's name (NULL for a bad index). */
const char *mbk_system_get_subsystem_name(const mbk_system *sys, int subsystem);
/* Index of the first subsystem whose ops table is `ops` (-1 if none). */
int mbk_system_find_subsystem(const mbk_system *sys, const mbk_subsystem_ops *ops);

/* Mark the topology changed: every existing State becomes stale (MBK_ESTALE). */
void mbk_system_invalidate_topology(mbk_system *sys);
/* Same, naming the subsystem whose topology-stage data changed. */
void mbk_system_invalidate_subsystem_topology(mbk_system *sys, int subsystem);
/* True once the topology is realized and not invalidated since. */
bool mbk_system_is_topology_realized(const mbk_system *sys);
/* Topology version: bumped each time a realized topology is invalidated. */
long mbk_system_get_topology_version(const mbk_system *sys);
/* Run every realize_topology op on a fresh default State; the System is then read-only. */
int mbk_system_realize_topology(mbk_system *sys);
/* The default State built by mbk_system_realize_topology (NULL before). */
const mbk_state *mbk_system_get_default_state(const mbk_system *sys);
/* Realize s up to `stage` (Topology..Report); MBK_OK if already there. Checks
   that t, q, u, z are finite before Time, Position, Velocity, Dynamics
   (MBK_ENOTFINITE). An op's positive return becomes MBK_ERETRY, a negative mbk
   status it recorded with mbk_set_error passes through, any other negative value
   becomes MBK_EUSER; after a
   failure at stage g every subsystem is back at g - 1, ready for a retry. */
int mbk_system_realize(const mbk_system *sys, mbk_state *s, mbk_stage stage);
/* MBK_OK if s belongs to this System's current topology, else MBK_ESTALE with a message. */
int mbk_system_check_state(const mbk_system *sys, const mbk_state *s);
/* Kinetic and potential energy summed over subsystems (either pointer may be NULL).
   Needs Velocity, or Position when kinetic is NULL. */
int mbk_system_calc_energy(const mbk_system *sys, const mbk_state *s, double *kinetic,
                           double *potential);
/* Plain ODE view y' = f(t, y), y = [q u z]: sets t and y (y NULL: keep the
   State's), realizes to Acceleration and copies [qdot udot zdot] into ydot.
   MBK_ENOTFINITE (the State as it was) when an entry of ydot is not finite. */
int mbk_system_calc_ydot(const mbk_system *sys, mbk_state *s, double t, const double *y,
                         double *ydot);
/* Set t and y = [q u z] (y NULL: keep the State's) and realize s to `stage`
   (Time..Report): the first step of an outside solver's callback that needs
   less than Acceleration (witnesses at (t, y), a residual built at Dynamics).
   Non-finite t or y is refused before anything changes (MBK_ENOTFINITE); when
   the realization fails, t and y are put back and s is realized again to the
   stage it had, so its variables are as they were. */
int mbk_system_set_y_and_realize(const mbk_system *sys, mbk_state *s, double t, const double *y,
                                 mbk_stage stage);
/* Put s back on the constraint manifold: every subsystem's project op in order
   (quaternions normalized, q then u projected so position and velocity errors
   are within tol). Leaves the State realized to Velocity. MBK_ECONVERGE if a
   projection fails; the State is then unchanged. */
int mbk_system_project(const mbk_system *sys, mbk_state *s, double tol);
/* Call a subsystem's handle_events op with the ids of its events that occurred at
   the State's time (for integrators, built-in or your own). Returns what the op
   returned (MBK_OK when it has none), MBK_EINVAL for a bad subsystem index or a NULL
   result (or event ids), MBK_ESTALE for a State of another System or layout. */
int mbk_system_handle_events(const mbk_system *sys, int subsystem, mbk_state *s,
                             const int *event_ids, int n_events, mbk_event_result *result);
/* Call a subsystem's next_scheduled_event op (its contract is in mbk_subsystem_ops).
   *t_next is set to INFINITY first; with no op, *n_events is set to 0. Returns what
   the op returned, MBK_EINVAL for a bad subsystem index or NULL t_next or n_events,
   MBK_ESTALE for a State of another System or layout. */
int mbk_system_next_scheduled_event(const mbk_system *sys, int subsystem, const mbk_state *s,
                                    double *t_next, int *event_ids, int *n_events);

#ifdef __cplusplus
}
#endif
#if defined(__GNUC__)
#pragma GCC visibility pop
#endif
#endif
