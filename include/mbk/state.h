/* mbk/state.h - the State: every variable of a System and a cache of results.
 *
 * A State is one flat, self-describing memory block holding time t, the
 * continuous variables y = [q u z], discrete variables, cache entries, the
 * derivative caches (qdot, udot, zdot, qdotdot), constraint-error slots,
 * multipliers, event witnesses and the stage bookkeeping. It holds no
 * pointer into a System, so it is valid for any System of the same
 * topology, and copying it is a memcpy plus the copy ops of custom values.
 *
 * get_* never invalidates; upd_* on a variable returns a writable view and
 * invalidates what depends on it; set_* copies in and invalidates. Cache
 * views (derivatives, errors, cache entries) are writable through a const
 * State and upd_* on them invalidates nothing. Pointers returned by any of
 * these stay valid until the State is re-laid out: by an allocation, by
 * realizing Model or Instance, by a change of a Model-stage variable, or by
 * mbk_state_init / mbk_state_copy into it. */
#ifndef MBK_STATE_H
#define MBK_STATE_H

#include <stdbool.h>
#include "mbk/stage.h"
#include "mbk/value.h"

/* Declarations here are the public API: exported from the shared library, whose
   other symbols are hidden (CMakeLists.txt, "symbol visibility"). */
#if defined(__GNUC__)
#pragma GCC visibility push(default)
#endif
#ifdef __cplusplus
extern "C" {
#endif

typedef struct mbk_state mbk_state;
typedef struct mbk_system mbk_system;

/* ---- lifecycle ---- */
/* New, empty State (stage Empty); give it to mbk_state_init before use. */
mbk_state *mbk_state_create(void);
/* Destroy a State and every value in it; NULL is ignored. */
void mbk_state_destroy(mbk_state *s);
/* Make s a copy of the System's default State (stage Topology). */
int mbk_state_init(mbk_state *s, const mbk_system *sys);
/* Make dst a copy of src, cache validity included; reuses dst's memory when large enough. */
int mbk_state_copy(mbk_state *dst, const mbk_state *src);
/* Bytes of the State's memory block (for memory reports). */
size_t mbk_state_get_size_in_bytes(const mbk_state *s);

/* ---- stages ---- */
/* Stage the whole State is realized to: the lowest of its subsystems'. */
mbk_stage mbk_state_get_stage(const mbk_state *s);
/* Stage one subsystem is realized to (Empty if the index is bad). */
mbk_stage mbk_state_get_subsystem_stage(const mbk_state *s, int subsystem);
/* Number of subsystems the State was made for (0 if not initialized). */
int mbk_state_get_num_subsystems(const mbk_state *s);
/* Version counter of a subsystem's stage; bumped whenever that stage is invalidated. */
long mbk_state_get_stage_version(const mbk_state *s, int subsystem, mbk_stage stage);
/* Revert every subsystem to stage - 1 at most, as changing a stage-`stage` variable would. */
int mbk_state_invalidate(mbk_state *s, mbk_stage stage);

/* ---- time (Time stage: changing t reverts to Instance) ---- */
/* Current time; NaN for an uninitialized State. */
double mbk_state_get_time(const mbk_state *s);
/* Set t (finite); invalidates Time. */
int mbk_state_set_time(mbk_state *s, double t);

/* ---- continuous variables y = [q u z] (sizes known from Model stage) ---- */
/* Number of q (negative status below Model). */
int mbk_state_get_nq(const mbk_state *s);
/* Number of u (negative status below Model). */
int mbk_state_get_nu(const mbk_state *s);
/* Number of z (negative status below Model). */
int mbk_state_get_nz(const mbk_state *s);
/* ny = nq + nu + nz (negative status below Model). */
int mbk_state_get_ny(const mbk_state *s);
/* Generalized coordinates q (NULL below Model). */
const double *mbk_state_get_q(const mbk_state *s);
/* Generalized speeds u (NULL below Model). */
const double *mbk_state_get_u(const mbk_state *s);
/* Auxiliary variables z (NULL below Model). */
const double *mbk_state_get_z(const mbk_state *s);
/* All continuous variables y = [q u z] (NULL below Model). */
const double *mbk_state_get_y(const mbk_state *s);
/* Writable q; invalidates Position. */
double *mbk_state_upd_q(mbk_state *s);
/* Writable u; invalidates Velocity. */
double *mbk_state_upd_u(mbk_state *s);
/* Writable z; invalidates Dynamics. */
double *mbk_state_upd_z(mbk_state *s);
/* Writable y; invalidates Position. */
double *mbk_state_upd_y(mbk_state *s);
/* Copy n = nq finite values into q; invalidates Position. */
int mbk_state_set_q(mbk_state *s, const double *q, int n);
/* Copy n = nu finite values into u; invalidates Velocity. */
int mbk_state_set_u(mbk_state *s, const double *u, int n);
/* Copy n = nz finite values into z; invalidates Dynamics. */
int mbk_state_set_z(mbk_state *s, const double *z, int n);
/* Copy n = ny finite values into y; invalidates Position. */
int mbk_state_set_y(mbk_state *s, const double *y, int n);

/* ---- per-subsystem views ---- */
/* A subsystem's own q (NULL below Model or for a bad index); also _u, _z. */
const double *mbk_state_get_subsystem_q(const mbk_state *s, int subsystem);
const double *mbk_state_get_subsystem_u(const mbk_state *s, int subsystem);
const double *mbk_state_get_subsystem_z(const mbk_state *s, int subsystem);
/* Writable subsystem q (invalidates Position); also _u (Velocity), _z (Dynamics). */
double *mbk_state_upd_subsystem_q(mbk_state *s, int subsystem);
double *mbk_state_upd_subsystem_u(mbk_state *s, int subsystem);
double *mbk_state_upd_subsystem_z(mbk_state *s, int subsystem);
/* Number of q, u, z a subsystem owns (negative status below Model). */
int mbk_state_get_subsystem_nq(const mbk_state *s, int subsystem);
int mbk_state_get_subsystem_nu(const mbk_state *s, int subsystem);
int mbk_state_get_subsystem_nz(const mbk_state *s, int subsystem);
/* Where a subsystem's q, u, z start in the global q, u, z arrays (Model). */
int mbk_state_get_subsystem_q_start(const mbk_state *s, int subsystem);
int mbk_state_get_subsystem_u_start(const mbk_state *s, int subsystem);
int mbk_state_get_subsystem_z_start(const mbk_state *s, int subsystem);

/* ---- derivative caches ---- */
/* qdot (valid at Velocity; NULL below). */
const double *mbk_state_get_qdot(const mbk_state *s);
/* udot (valid at Acceleration; NULL below). */
const double *mbk_state_get_udot(const mbk_state *s);
/* zdot (valid at Acceleration; NULL below). */
const double *mbk_state_get_zdot(const mbk_state *s);
/* ydot = [qdot udot zdot] (valid at Acceleration; NULL below). */
const double *mbk_state_get_ydot(const mbk_state *s);
/* MBK_OK when ydot is finite, else MBK_ENOTFINITE naming the first entry that is not
   (q[i], u[i] or z[i]) and the time (at Acceleration; MBK_ESTAGE below). */
int mbk_state_check_ydot(const mbk_state *s);
/* qdotdot (valid at Acceleration; NULL below). */
const double *mbk_state_get_qdotdot(const mbk_state *s);
/* Writable derivative caches for subsystems that compute them (Model or later; no invalidation). */
double *mbk_state_upd_qdot(const mbk_state *s);
double *mbk_state_upd_udot(const mbk_state *s);
double *mbk_state_upd_zdot(const mbk_state *s);
double *mbk_state_upd_qdotdot(const mbk_state *s);
/* A subsystem's slice of the writable derivative caches. */
double *mbk_state_upd_subsystem_qdot(const mbk_state *s, int subsystem);
double *mbk_state_upd_subsystem_udot(const mbk_state *s, int subsystem);
double *mbk_state_upd_subsystem_zdot(const mbk_state *s, int subsystem);
double *mbk_state_upd_subsystem_qdotdot(const mbk_state *s, int subsystem);

/* ---- allocation (from realize ops of the stage named) ----
   q/u/z, discrete variables and cache entries: realize_topology or realize_model.
   Each returns the new index within the subsystem (>= 0) or a negative status.
   init may be NULL (zeros). Values allocated at Model stage are discarded when
   a Model-stage variable changes and allocated again by the next realize_model. */
/* Allocate n q's; returns the start index within the subsystem's own q. */
int mbk_state_allocate_q(mbk_state *s, int subsystem, int n, const double *init);
/* Allocate n u's; returns the start index within the subsystem's own u. */
int mbk_state_allocate_u(mbk_state *s, int subsystem, int n, const double *init);
/* Allocate n z's; returns the start index within the subsystem's own z. */
int mbk_state_allocate_z(mbk_state *s, int subsystem, int n, const double *init);
/* Allocate a discrete variable whose change invalidates stage `invalidates` (Model..Report). */
int mbk_state_allocate_discrete(mbk_state *s, int subsystem, mbk_stage invalidates,
                                const mbk_value_type *type, const void *init);
/* Allocate a cache entry computed from stage depends_on up to computed_by. */
int mbk_state_allocate_cache(mbk_state *s, int subsystem, mbk_stage depends_on,
                             mbk_stage computed_by, const mbk_value_type *type,
                             const void *init);
/* Allocate a lazy cache entry (computed_by = Infinity): computed on first request. */
int mbk_state_allocate_lazy_cache(mbk_state *s, int subsystem, mbk_stage depends_on,
                                  const mbk_value_type *type, const void *init);
/* Allocate `bytes` of work space (aligned as values are: `align` a power of two up to 64) that a
   subsystem's ops write and then read within one call: a cache entry no stage computes,
   whose contents are undefined at the start of every call, and which mbk_state_copy does
   not copy (nor checkpoints save): it costs a State memory but not copies. Returns its
   cache index (mbk_state_upd_cache gives the bytes). */
int mbk_state_allocate_scratch(mbk_state *s, int subsystem, size_t bytes, size_t align);
/* From realize_instance: n position-constraint errors; returns the start within the subsystem's. */
int mbk_state_allocate_qerr(mbk_state *s, int subsystem, int n);
/* From realize_instance: n velocity-constraint errors. */
int mbk_state_allocate_uerr(mbk_state *s, int subsystem, int n);
/* From realize_instance: n acceleration-constraint errors, each with one multiplier. */
int mbk_state_allocate_udoterr(mbk_state *s, int subsystem, int n);
/* From realize_instance: n event witnesses evaluated at `stage` (Time..Report). */
int mbk_state_allocate_event_triggers(mbk_state *s, int subsystem, mbk_stage stage, int n);

/* ---- discrete variables ---- */
/* Number of discrete variables a subsystem has. */
int mbk_state_get_num_discrete(const mbk_state *s, int subsystem);
/* Read a discrete variable (NULL on a bad index). */
const void *mbk_state_get_discrete(const mbk_state *s, int subsystem, int index);
/* Writable discrete variable; invalidates its stage. */
void *mbk_state_upd_discrete(mbk_state *s, int subsystem, int index);
/* Type-checked read: NULL (MBK_EINVAL) when the variable is not of `type`. */
const void *mbk_state_get_discrete_as(const mbk_state *s, int subsystem, int index,
                                      const mbk_value_type *type);
/* Type-checked writable view; invalidates its stage. */
void *mbk_state_upd_discrete_as(mbk_state *s, int subsystem, int index,
                                const mbk_value_type *type);
/* Type-checked copy-in; invalidates its stage. Nothing changes on failure. */
int mbk_state_set_discrete(mbk_state *s, int subsystem, int index, const mbk_value_type *type,
                           const void *value);
/* Stage a discrete variable invalidates when changed (Empty on a bad index). */
mbk_stage mbk_state_get_discrete_stage(const mbk_state *s, int subsystem, int index);

/* ---- cache entries ---- */
/* Number of cache entries a subsystem has. */
int mbk_state_get_num_cache(const mbk_state *s, int subsystem);
/* Read a valid cache entry; NULL with MBK_ESTAGE (naming the stage needed) when not valid. */
const void *mbk_state_get_cache(const mbk_state *s, int subsystem, int index);
/* Type-checked read of a valid cache entry. */
const void *mbk_state_get_cache_as(const mbk_state *s, int subsystem, int index,
                                   const mbk_value_type *type);
/* Writable cache entry, valid or not (for computing it); invalidates nothing. */
void *mbk_state_upd_cache(const mbk_state *s, int subsystem, int index);
/* Type-checked writable cache entry. */
void *mbk_state_upd_cache_as(const mbk_state *s, int subsystem, int index,
                             const mbk_value_type *type);
/* True when the entry may be read: realized to computed_by, or marked and not since invalidated. */
bool mbk_state_is_cache_realized(const mbk_state *s, int subsystem, int index);
/* Mark an entry computed; needs the subsystem at depends_on - 1 or later. */
void mbk_state_mark_cache_realized(const mbk_state *s, int subsystem, int index);

/* ---- constraint errors and multipliers (slots allocated at Instance) ---- */
/* Counts (negative status below Instance). */
int mbk_state_get_nqerr(const mbk_state *s);
int mbk_state_get_nuerr(const mbk_state *s);
int mbk_state_get_nudoterr(const mbk_state *s);
/* Position-constraint errors (valid at Position; NULL below). */
const double *mbk_state_get_qerr(const mbk_state *s);
/* Velocity-constraint errors (valid at Velocity; NULL below). */
const double *mbk_state_get_uerr(const mbk_state *s);
/* Acceleration-constraint errors (valid at Acceleration; NULL below). */
const double *mbk_state_get_udoterr(const mbk_state *s);
/* Number of multipliers (= nudoterr; negative status below Instance). */
int mbk_state_get_num_multipliers(const mbk_state *s);
/* Multipliers, one per udoterr in the same order (valid at Acceleration; NULL below). */
const double *mbk_state_get_multipliers(const mbk_state *s);
/* Writable slices of a subsystem's errors and multipliers (Instance or later). */
double *mbk_state_upd_subsystem_qerr(const mbk_state *s, int subsystem);
double *mbk_state_upd_subsystem_uerr(const mbk_state *s, int subsystem);
double *mbk_state_upd_subsystem_udoterr(const mbk_state *s, int subsystem);
double *mbk_state_upd_subsystem_multipliers(const mbk_state *s, int subsystem);
/* Where a subsystem's qerr, uerr, udoterr start in the global arrays (Instance). */
int mbk_state_get_subsystem_qerr_start(const mbk_state *s, int subsystem);
int mbk_state_get_subsystem_uerr_start(const mbk_state *s, int subsystem);
int mbk_state_get_subsystem_udoterr_start(const mbk_state *s, int subsystem);

/* ---- event witnesses ---- */
/* Number of witnesses evaluated at `stage` (negative status below Instance). */
int mbk_state_get_num_event_triggers(const mbk_state *s, mbk_stage stage);
/* Witness values of `stage`, all subsystems in order (valid once `stage` is realized). */
const double *mbk_state_get_event_triggers(const mbk_state *s, mbk_stage stage);
/* A subsystem's writable witnesses of `stage` (Instance or later). */
double *mbk_state_upd_event_triggers(const mbk_state *s, int subsystem, mbk_stage stage);

#ifdef __cplusplus
}
#endif
#if defined(__GNUC__)
#pragma GCC visibility pop
#endif
#endif
