/* mbk/ensemble_mpi.h - ensembles across hosts with MPI (library mbk_mpi).
 *
 * Built when CMake finds MPI; link mbk::mbk_mpi (it brings MPI with it). The
 * core library never depends on MPI, and this header does not need <mpi.h>:
 * the ensemble runs on MPI_COMM_WORLD.
 *
 * Every rank builds the same System and the same ensemble and calls
 * mbk_ensemble_run_mpi with the same arguments. Rank 0 hands out members on
 * request, in chunks that shrink as the work runs out (dynamic load
 * balancing), and runs members itself too; every rank runs its members on its
 * own pool of threads (mbk_ensemble_set_threads). The pack callback runs where
 * a member ran; its record travels to rank 0, where collect receives every
 * member's record (in the order they arrive). Results are bitwise the same as
 * on one thread of one process, when every rank runs the same binary on the
 * same kind of CPU (build with -DMBK_NATIVE=OFF for a mixed cluster).
 *
 *     mbk_mpi_init(&argc, &argv);
 *     ... build sys, e = mbk_ensemble_create(sys, n) ...
 *     mbk_ensemble_run_mpi(e, t_final, sizeof(rec), init, pack, collect, &user);
 *     mbk_mpi_finalize();
 *
 * run with `mpirun -np 4 ./program`. Members skipped with
 * mbk_ensemble_skip_member on rank 0 are not run.
 *
 * Failures are collective: a member whose own run fails keeps its status (the
 * others go on), but anything that stops the run on one rank (a pack or
 * collect callback returning nonzero, memory or threads running out, a bad
 * argument on that rank) stops it on every rank, after the members running
 * there finish: every rank returns the same negative status, with a message
 * that names the rank and the cause. A rank that can no longer communicate
 * says so on stderr and ends the job with MPI_Abort. Work the ranks do
 * outside the run must agree too (mbk_mpi_agree): a rank that leaves before
 * a collective call leaves the others waiting in it. */
#ifndef MBK_ENSEMBLE_MPI_H
#define MBK_ENSEMBLE_MPI_H

#include <stdbool.h>
#include <stddef.h>

#include "mbk/ensemble.h"

/* Declarations here are the public API: exported from the shared library, whose
   other symbols are hidden (CMakeLists.txt, "symbol visibility"). */
#if defined(__GNUC__)
#pragma GCC visibility push(default)
#endif
#ifdef __cplusplus
extern "C" {
#endif

/* Initialize MPI (threads funneled through the calling thread) unless it already
   is; MBK_OK or MBK_EINVAL when MPI cannot start. */
int mbk_mpi_init(int *argc, char ***argv);
/* Finalize MPI if mbk_mpi_init started it. */
int mbk_mpi_finalize(void);
/* This process's rank and the number of ranks in MPI_COMM_WORLD (0 and 1 before init). */
int mbk_mpi_rank(void);
int mbk_mpi_size(void);
/* Whether this process was started by an MPI launcher (mpirun, mpiexec, srun):
   read from the environment, without starting MPI. */
bool mbk_mpi_launched(void);
/* Ranks on this host (the launcher's local size; 1 if unknown). */
int mbk_mpi_local_size(void);
/* Rank 0's *value on every rank (a collective call). */
int mbk_mpi_broadcast_int(int *value);
/* Agree on a failure (a collective call): every rank passes its own status (0 when
   fine) and, when nonzero, a message. Returns 0 on every rank when every rank passed
   0; otherwise, on every rank, the status of the lowest failing rank, whose rank is
   put in *failed_rank (-1 when none failed; may be NULL) and whose message becomes
   mbk_last_error() as "rank K: message". Without MPI: status itself. */
int mbk_mpi_agree(int status, const char *message, int *failed_rank);
/* Run the ensemble over every rank (a collective call). collect runs on rank 0
   only. Every rank returns the same status (a failure anywhere fails every rank,
   promptly, with the rank and the cause in mbk_last_error()); afterwards
   mbk_ensemble_get_num_run and _num_failed give the whole ensemble's counts (of
   the members collected, when the run failed) on every rank. */
int mbk_ensemble_run_mpi(mbk_ensemble *e, double t_final, size_t record_size,
                         mbk_member_init_fn init, mbk_member_pack_fn pack,
                         mbk_member_collect_fn collect, void *user);

#ifdef __cplusplus
}
#endif
#if defined(__GNUC__)
#pragma GCC visibility pop
#endif
#endif
