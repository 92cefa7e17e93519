/* mbk/ensemble.h - many States of one System: ensembles of trajectories.
 *
 * An ensemble runs N members, each one State of the same System integrated
 * from t = 0 to t_final by its own integrator, on a pool of threads. A
 * System is read-only once its topology is realized and a State holds no
 * pointer into it, so members share nothing but the System.
 *
 *   - Setup: an init callback fills member i's State (a copy of the System's
 *     default State, realized to Instance): initial q, u, z, Instance- and
 *     later-stage parameters (force parameters, enable flags, gravity, body
 *     mass properties: mbk_force_set_parameters, mbk_matter_set_body_mass_props).
 *   - Results: a done callback reads the final State, on the worker thread
 *     that ran the member (callbacks of different members run concurrently:
 *     they must touch only their own data, or lock). Or, with
 *     mbk_ensemble_run_records, a pack callback turns the final State into a
 *     fixed-size record on the worker, and a collect callback receives the
 *     records one at a time on the calling thread (the form that travels
 *     between MPI ranks: mbk/ensemble_mpi.h).
 *   - Scheduling is dynamic: a free thread takes the next member, so members
 *     of unequal cost keep every thread busy. Memory is bounded by the number
 *     of threads, not by N: each thread keeps one State and one integrator.
 *   - Determinism: every member's result is bitwise the same whatever the
 *     number of threads (or of MPI processes) and whatever the order members
 *     ran in: each member starts from the same default State and a fresh
 *     integrator. Random parameters must come from mbk_random_*(seed, member,
 *     draw) (below), never from a generator shared between members.
 *   - Failure isolation: a member whose init, realization or integration
 *     fails is reported with its negative status (its message in
 *     mbk_last_error() during the done/pack call); the others go on.
 *
 * User callbacks of the System (event handlers, custom forces) run on many
 * threads at once: they must not write shared data without a lock. */
#ifndef MBK_ENSEMBLE_H
#define MBK_ENSEMBLE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "mbk/integrator.h"
#include "mbk/state.h"
#include "mbk/system.h"

/* Declarations here are the public API: exported from the shared library, whose
   other symbols are hidden (CMakeLists.txt, "symbol visibility"). */
#if defined(__GNUC__)
#pragma GCC visibility push(default)
#endif
#ifdef __cplusplus
extern "C" {
#endif

typedef struct mbk_ensemble mbk_ensemble;

/* Member setup: fill member i's State (a fresh copy of the default State, at
   Instance): q, u, z, parameters. Return 0, or nonzero to fail the member (a
   negative status with mbk_set_error tells why). */
typedef int (*mbk_member_init_fn)(void *user, const mbk_system *sys, int member, mbk_state *s);
/* Member result: read the final State, realized to Acceleration when the member
   succeeded. status is MBK_OK (reached t_final), MBK_TERMINATED (an event handler
   stopped it) or negative (failed: s is the last good State, or the initial one
   if it failed before the first step; mbk_last_error() holds the message). Runs
   on the worker thread; may call mbk_ensemble_get_member_stats and
   mbk_ensemble_get_member_initial_state. Nonzero aborts the whole run. */
typedef int (*mbk_member_done_fn)(void *user, const mbk_system *sys, int member, const mbk_state *s,
                                  int status);
/* Records: like done, but write what the member's result is into record (size
   bytes, zeroed before the call). */
typedef int (*mbk_member_pack_fn)(void *user, const mbk_system *sys, int member, const mbk_state *s,
                                  int status, void *record, size_t size);
/* Records: one member's record, on the thread that called run (under MPI: on
   rank 0), one call at a time, in the order members finished. Nonzero aborts
   the run. */
typedef int (*mbk_member_collect_fn)(void *user, int member, int status, const void *record,
                                     size_t size);
/* Called with each member's integrator after it is created and its accuracy
   set, before it is initialized: further settings (fixed step, max step,
   tolerances). Nonzero fails the member. */
typedef int (*mbk_integrator_setup_fn)(void *user, mbk_integrator *ig);

/* An ensemble of n_members (> 0) members of a System whose topology is realized.
   Defaults: integrator "rkmerson" with accuracy 1e-3, threads 0 (all cores).
   NULL on failure (mbk_last_error()). */
mbk_ensemble *mbk_ensemble_create(const mbk_system *sys, int n_members);
/* Choose the integrator by name: "rkmerson", "rk4", "euler", "semi-euler",
   "cvode-bdf", "cvode-adams", "ida" (or the library's display names, "RK-Merson",
   "CVODE BDF", ...), and its accuracy (0 < accuracy < 1). */
int mbk_ensemble_set_integrator(mbk_ensemble *e, const char *name, double accuracy);
/* Extra settings for every member's integrator (NULL: none). */
int mbk_ensemble_set_integrator_setup(mbk_ensemble *e, mbk_integrator_setup_fn setup, void *user);
/* Number of worker threads (0: all cores; never more than the members). */
int mbk_ensemble_set_threads(mbk_ensemble *e, int n_threads);
/* The number of threads a run uses (n_threads resolved, capped at the members). */
int mbk_ensemble_get_threads(const mbk_ensemble *e);
/* Number of members. */
int mbk_ensemble_get_num_members(const mbk_ensemble *e);
/* Run every member from t = 0 to t_final (> 0); done may be NULL. Returns MBK_OK
   when every member was run and reported (whether it succeeded or not: count the
   failures with mbk_ensemble_get_num_failed), or a negative status when the run
   itself could not go on (a thread could not start, out of memory, a callback
   asked to abort). */
int mbk_ensemble_run(mbk_ensemble *e, double t_final, mbk_member_init_fn init,
                     mbk_member_done_fn done, void *user);
/* The same with results as records of record_size bytes: pack on the workers,
   collect on this thread. */
int mbk_ensemble_run_records(mbk_ensemble *e, double t_final, size_t record_size,
                             mbk_member_init_fn init, mbk_member_pack_fn pack,
                             mbk_member_collect_fn collect, void *user);
/* Leave a member out of every later run (it finished before: resuming a sweep). */
int mbk_ensemble_skip_member(mbk_ensemble *e, int member);
/* Whether a member is left out. */
bool mbk_ensemble_is_skipped(const mbk_ensemble *e, int member);
/* How many members are left out. */
int mbk_ensemble_get_num_skipped(const mbk_ensemble *e);
/* Members run by the last run (those whose results went to the done or pack callback,
   on every rank, also when the run stopped before their records were collected) and,
   of those, how many failed (negative status). */
int mbk_ensemble_get_num_run(const mbk_ensemble *e);
int mbk_ensemble_get_num_failed(const mbk_ensemble *e);
/* During a done or pack call for `member` (on its thread): the statistics of its
   integrator (zeros if it failed before one started). */
int mbk_ensemble_get_member_stats(const mbk_ensemble *e, int member, mbk_integrator_stats *stats);
/* During a done or pack call for `member`: the State its init callback filled,
   realized to Velocity when that succeeded (for initial energies); NULL otherwise. */
const mbk_state *mbk_ensemble_get_member_initial_state(const mbk_ensemble *e, int member);
/* Free the ensemble (NULL is fine); the System stays. */
void mbk_ensemble_destroy(mbk_ensemble *e);

/* ---- distributing members yourself (MPI, a job queue) ---------------------
   The calling thread runs the driver: it asks fetch for members to run, hands
   finished records to deliver, and calls poll while it waits. Every call comes
   from the thread that called mbk_ensemble_run_driver. */
typedef struct mbk_ensemble_driver {
    /* Write up to cap member indices to run here; return how many, 0 for "none
       now, ask again after poll", or -1 for "no more, ever". */
    int (*fetch)(void *data, int *members, int cap);
    /* A member finished here: its record (size bytes). Nonzero aborts. */
    int (*deliver)(void *data, int member, int status, const void *record, size_t size);
    /* Nothing to do for now: progress communication, for at most `seconds`.
       NULL: wait for the workers without polling. Nonzero aborts. */
    int (*poll)(void *data, double seconds);
    /* Whether the driver is finished once fetch said -1 and every member run here
       was delivered (rank 0 waits for the other ranks' records). NULL: yes. */
    bool (*finished)(void *data);
} mbk_ensemble_driver;
/* For drivers whose members ran elsewhere too (MPI): set the counts that
   mbk_ensemble_get_num_run and _num_failed report. */
int mbk_ensemble_set_result_counts(mbk_ensemble *e, int n_run, int n_failed);
int mbk_ensemble_run_driver(mbk_ensemble *e, double t_final, size_t record_size,
                            mbk_member_init_fn init, mbk_member_pack_fn pack,
                            const mbk_ensemble_driver *driver, void *driver_data, void *user);

/* ---- counter-based random numbers -----------------------------------------
   Philox4x32-10 (Salmon et al., SC'11): the `draw`-th number of `member` under
   `seed` is a pure function of the three, so it is the same on any thread or
   rank, in any order; members never share a generator's state. Use one draw
   index per random parameter. */
/* 64 random bits. */
uint64_t mbk_random_bits(uint64_t seed, uint64_t member, uint64_t draw);
/* Uniform on [0, 1), 53 random bits. */
double mbk_random_uniform(uint64_t seed, uint64_t member, uint64_t draw);
/* Standard normal (mean 0, standard deviation 1), by Box-Muller from one Philox block. */
double mbk_random_normal(uint64_t seed, uint64_t member, uint64_t draw);
/* The raw generator: 10 rounds of Philox4x32 on counter ctr with key key (out may be ctr). */
void mbk_philox4x32(const uint32_t ctr[4], const uint32_t key[2], uint32_t out[4]);

#ifdef __cplusplus
}
#endif
#if defined(__GNUC__)
#pragma GCC visibility pop
#endif
#endif
