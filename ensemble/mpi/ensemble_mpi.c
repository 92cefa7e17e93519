/* Ensembles over MPI ranks (library mbk_mpi): a driver for mbk_ensemble_run_driver.
 *
 * Rank 0 is the master: it owns the member counter, answers the other ranks'
 * requests for work with chunks of member indices (guided: about a quarter of
 * the remaining members per rank, shrinking to one), receives their records
 * and hands them, and its own, to collect. The other ranks ask for as many
 * members as their work queue has room for, run them on their threads and send
 * each record to rank 0 as it is done. Only each rank's coordinating thread
 * calls MPI (MPI_THREAD_FUNNELED); it never blocks in MPI for long: it polls
 * (MPI_Iprobe, MPI_Test) between short waits for its workers, so a rank does not
 * spin a core that its workers need. */
#define _POSIX_C_SOURCE 200809L
#include <mpi.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "mbk/alloc.h"
#include "mbk/ensemble_mpi.h"
#include "mbk/status.h"

enum { TAG_REQ = 7101, TAG_WORK = 7102, TAG_REC = 7103, TAG_DONE = 7104 };
enum { MAX_CHUNK = 4096 };

static int started_here; /* mbk_mpi_init called MPI_Init_thread */

static bool mpi_up(void)
{
    int init = 0, fin = 0;
    MPI_Initialized(&init);
    MPI_Finalized(&fin);
    return init && !fin;
}

int mbk_mpi_init(int *argc, char ***argv)
{
    if (mpi_up()) return MBK_OK;
    int provided = 0;
    if (MPI_Init_thread(argc, argv, MPI_THREAD_FUNNELED, &provided) != MPI_SUCCESS)
        return mbk_set_error(MBK_EINVAL, "mbk_mpi_init: MPI could not start");
    started_here = 1;
    return MBK_OK;
}

int mbk_mpi_finalize(void)
{
    if (started_here && mpi_up()) MPI_Finalize();
    started_here = 0;
    return MBK_OK;
}

int mbk_mpi_rank(void)
{
    int r = 0;
    if (mpi_up()) MPI_Comm_rank(MPI_COMM_WORLD, &r);
    return r;
}

int mbk_mpi_size(void)
{
    int n = 1;
    if (mpi_up()) MPI_Comm_size(MPI_COMM_WORLD, &n);
    return n;
}

bool mbk_mpi_launched(void)
{
    static const char *const vars[] = {"OMPI_COMM_WORLD_SIZE", "PMI_SIZE", "PMIX_RANK", "PMI_RANK",
                                       "MPI_LOCALNRANKS", "SLURM_STEP_NUM_TASKS"};
    for (size_t i = 0; i < sizeof vars / sizeof *vars; ++i)
        if (getenv(vars[i])) return true;
    return false;
}

int mbk_mpi_local_size(void)
{
    static const char *const vars[] = {"OMPI_COMM_WORLD_LOCAL_SIZE", "MPI_LOCALNRANKS", "SLURM_NTASKS_PER_NODE"};
    for (size_t i = 0; i < sizeof vars / sizeof *vars; ++i) {
        const char *v = getenv(vars[i]);
        int n = v ? atoi(v) : 0;
        if (n > 0) return n;
    }
    return 1;
}

int mbk_mpi_broadcast_int(int *value)
{
    if (!value) return mbk_set_error(MBK_EINVAL, "mbk_mpi_broadcast_int: value is NULL");
    if (!mpi_up()) return MBK_OK;
    return MPI_Bcast(value, 1, MPI_INT, 0, MPI_COMM_WORLD) == MPI_SUCCESS
               ? MBK_OK
               : mbk_set_error(MBK_EINVAL, "mbk_mpi_broadcast_int: MPI_Bcast failed");
}

/* ------------------------------------------------------------------ */
/* The driver                                                           */
/* ------------------------------------------------------------------ */

typedef struct mpi_driver {
    mbk_ensemble *e;
    int rank, size, n;
    size_t record_size;
    mbk_member_collect_fn collect;
    void *user;
    unsigned char *msg;          /* member, status, record */
    size_t msg_size;
    int abort_status;            /* a collect callback asked to stop */
    /* rank 0 */
    int next;                    /* next member to hand out */
    int remaining;               /* members not yet handed out (not skipped) */
    int ranks_done;              /* other ranks that said they are done */
    int n_run, n_failed;         /* every rank's */
    /* other ranks */
    bool requested, exhausted, done_sent;
    MPI_Request req;
    int work[MAX_CHUNK + 1];
} mpi_driver;

/* Up to k members not skipped, from the counter. */
static int take(mpi_driver *d, int *out, int k)
{
    int got = 0;
    while (got < k && d->next < d->n) {
        if (!mbk_ensemble_is_skipped(d->e, d->next)) {
            out[got++] = d->next;
            d->remaining--;
        }
        d->next++;
    }
    return got;
}

/* A record reached rank 0 (from this rank or another). */
static int collect_one(mpi_driver *d, int member, int status, const void *record)
{
    d->n_run++;
    if (status < 0) d->n_failed++;
    if (!d->collect || d->abort_status) return 0;
    int rc = d->collect(d->user, member, status, record, d->record_size);
    if (rc != 0) d->abort_status = mbk_last_status() < 0 ? mbk_last_status() : MBK_EUSER;
    return 0; /* keep serving the other ranks; the run ends with the status afterwards */
}

/* Rank 0: answer whatever arrived from the other ranks. */
static int master_serve(mpi_driver *d)
{
    for (;;) {
        int flag = 0;
        MPI_Status st;
        if (MPI_Iprobe(MPI_ANY_SOURCE, MPI_ANY_TAG, MPI_COMM_WORLD, &flag, &st) != MPI_SUCCESS)
            return mbk_set_error(MBK_EIO, "mbk_ensemble_run_mpi: MPI_Iprobe failed");
        if (!flag) return 0;
        if (st.MPI_TAG == TAG_REQ) {
            int want = 0;
            MPI_Recv(&want, 1, MPI_INT, st.MPI_SOURCE, TAG_REQ, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
            /* guided chunks: a share of what is left, so the ranks finish together */
            int k = d->remaining / (4 * d->size);
            if (k < 1) k = 1;
            if (k > want) k = want;
            if (k > MAX_CHUNK) k = MAX_CHUNK;
            int got = take(d, d->work, k);
            MPI_Send(d->work, got, MPI_INT, st.MPI_SOURCE, TAG_WORK, MPI_COMM_WORLD);
        } else if (st.MPI_TAG == TAG_REC) {
            MPI_Recv(d->msg, (int)d->msg_size, MPI_BYTE, st.MPI_SOURCE, TAG_REC, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
            int head[2];
            memcpy(head, d->msg, sizeof head);
            collect_one(d, head[0], head[1], d->msg + sizeof head);
        } else if (st.MPI_TAG == TAG_DONE) {
            int counts[2];
            MPI_Recv(counts, 2, MPI_INT, st.MPI_SOURCE, TAG_DONE, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
            d->ranks_done++;
        } else {
            return mbk_set_error(MBK_EIO, "mbk_ensemble_run_mpi: unexpected message (tag %d) from rank %d",
                                 st.MPI_TAG, st.MPI_SOURCE);
        }
    }
}

static int master_fetch(void *data, int *members, int cap)
{
    mpi_driver *d = data;
    if (master_serve(d) < 0) return -1;
    /* rank 0 keeps only a small share for itself, like any other rank */
    int k = d->remaining / (4 * d->size);
    if (k < 1) k = 1;
    if (k > cap) k = cap;
    int got = take(d, members, k);
    return got > 0 ? got : -1;
}

static int master_deliver(void *data, int member, int status, const void *record, size_t size)
{
    (void)size;
    mpi_driver *d = data;
    return collect_one(d, member, status, record);
}

static int master_poll(void *data, double seconds)
{
    (void)seconds;
    return master_serve(data) < 0 ? -1 : 0;
}

static bool master_finished(void *data)
{
    mpi_driver *d = data;
    master_serve(d);
    return d->next >= d->n && d->ranks_done == d->size - 1;
}

static int worker_fetch(void *data, int *members, int cap)
{
    mpi_driver *d = data;
    if (d->exhausted) return -1;
    if (!d->requested) {
        int want = cap < MAX_CHUNK ? cap : MAX_CHUNK;
        MPI_Send(&want, 1, MPI_INT, 0, TAG_REQ, MPI_COMM_WORLD);
        MPI_Irecv(d->work, MAX_CHUNK, MPI_INT, 0, TAG_WORK, MPI_COMM_WORLD, &d->req);
        d->requested = true;
    }
    int flag = 0;
    MPI_Status st;
    MPI_Test(&d->req, &flag, &st);
    if (!flag) return 0;
    d->requested = false;
    int got = 0;
    MPI_Get_count(&st, MPI_INT, &got);
    if (got == 0) {
        d->exhausted = true;
        return -1;
    }
    if (got > cap) got = cap; /* cannot happen: we asked for at most cap */
    memcpy(members, d->work, sizeof(int) * (size_t)got);
    return got;
}

static int worker_deliver(void *data, int member, int status, const void *record, size_t size)
{
    mpi_driver *d = data;
    int head[2] = {member, status};
    memcpy(d->msg, head, sizeof head);
    memcpy(d->msg + sizeof head, record, size);
    d->n_run++;
    if (status < 0) d->n_failed++;
    return MPI_Send(d->msg, (int)d->msg_size, MPI_BYTE, 0, TAG_REC, MPI_COMM_WORLD) == MPI_SUCCESS ? 0 : -1;
}

static int worker_poll(void *data, double seconds)
{
    (void)data, (void)seconds;
    return 0;
}

static bool worker_finished(void *data)
{
    mpi_driver *d = data;
    if (!d->done_sent) {
        int counts[2] = {d->n_run, d->n_failed};
        MPI_Send(counts, 2, MPI_INT, 0, TAG_DONE, MPI_COMM_WORLD);
        d->done_sent = true;
    }
    return true;
}

int mbk_ensemble_run_mpi(mbk_ensemble *e, double t_final, size_t record_size, mbk_member_init_fn init,
                         mbk_member_pack_fn pack, mbk_member_collect_fn collect, void *user)
{
    const char *fn = "mbk_ensemble_run_mpi";
    if (!e) return mbk_set_error(MBK_EINVAL, "%s: ensemble is NULL", fn);
    if (!mpi_up()) /* no MPI: one process, the threads alone */
        return mbk_ensemble_run_records(e, t_final, record_size, init, pack, collect, user);
    if (record_size > ((size_t)1 << 24))
        return mbk_set_error(MBK_EINVAL, "%s: records of %zu bytes; keep them under 16 MiB", fn, record_size);
    mpi_driver d;
    memset(&d, 0, sizeof d);
    d.e = e;
    d.rank = mbk_mpi_rank();
    d.size = mbk_mpi_size();
    d.n = mbk_ensemble_get_num_members(e);
    d.record_size = record_size;
    d.collect = collect;
    d.user = user;
    d.remaining = d.n - mbk_ensemble_get_num_skipped(e);
    d.msg_size = 2 * sizeof(int) + record_size;
    d.msg = mbk_calloc(1, d.msg_size);
    int rc = d.msg ? MBK_OK : MBK_ENOMEM;
    /* every rank must agree to start: any rank without memory stops them all */
    int ok = rc == MBK_OK, all_ok = 0;
    MPI_Allreduce(&ok, &all_ok, 1, MPI_INT, MPI_MIN, MPI_COMM_WORLD);
    if (!all_ok) {
        mbk_free(d.msg);
        return mbk_set_error(MBK_ENOMEM, "%s: a rank is out of memory; nothing was run", fn);
    }
    if (d.size == 1) {
        const mbk_ensemble_driver drv = {master_fetch, master_deliver, master_poll, master_finished};
        rc = mbk_ensemble_run_driver(e, t_final, record_size, init, pack, &drv, &d, user);
    } else if (d.rank == 0) {
        const mbk_ensemble_driver drv = {master_fetch, master_deliver, master_poll, master_finished};
        rc = mbk_ensemble_run_driver(e, t_final, record_size, init, pack, &drv, &d, user);
    } else {
        const mbk_ensemble_driver drv = {worker_fetch, worker_deliver, worker_poll, worker_finished};
        rc = mbk_ensemble_run_driver(e, t_final, record_size, init, pack, &drv, &d, user);
        if (d.requested) { /* a failed run left a request open: take its answer */
            MPI_Wait(&d.req, MPI_STATUS_IGNORE);
            d.requested = false;
        }
        worker_finished(&d); /* rank 0 waits for this, whatever happened here */
    }
    if (rc == MBK_OK && d.abort_status) rc = mbk_set_error(d.abort_status, "%s: the collect callback asked to stop", fn);
    /* one outcome and the whole ensemble's counts on every rank */
    int local[3] = {rc, d.rank == 0 ? d.n_run : 0, d.rank == 0 ? d.n_failed : 0}, global[3];
    MPI_Allreduce(&local[0], &global[0], 1, MPI_INT, MPI_MIN, MPI_COMM_WORLD);
    MPI_Bcast(&local[1], 2, MPI_INT, 0, MPI_COMM_WORLD);
    global[1] = local[1], global[2] = local[2];
    mbk_ensemble_set_result_counts(e, global[1], global[2]);
    mbk_free(d.msg);
    if (rc == MBK_OK && global[0] < 0) rc = mbk_set_error(global[0], "%s: another rank failed (%s)", fn, mbk_status_name(global[0]));
    return rc;
}
