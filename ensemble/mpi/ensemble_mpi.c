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
 * spin a core that its workers need.
 *
 * Failures are collective: whatever stops one rank stops them all, and every
 * rank returns the same failing status and message. Before the run the ranks
 * agree that each could start (arguments, memory, the same ensemble). During
 * it, a rank other than 0 that fails reports it to rank 0 (DONE with its
 * status and message); rank 0, on that or on a failure of its own, sends STOP
 * to every rank still running, keeps answering them (requests get no members,
 * records are dropped) until each has reported DONE, and only then sends every
 * rank the outcome (END). So no rank waits for a message that never comes and
 * no message is left unreceived. The ranks talk on their own duplicate of
 * MPI_COMM_WORLD whose MPI errors are returned: a rank that cannot
 * communicate any more says so on stderr and calls MPI_Abort, the last resort. */
#define _POSIX_C_SOURCE 200809L
#include <math.h>
#include <mpi.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "mbk/alloc.h"
#include "mbk/ensemble_mpi.h"
#include "mbk/status.h"

enum { TAG_REQ = 7101, TAG_WORK = 7102, TAG_REC = 7103, TAG_DONE = 7104, TAG_STOP = 7105, TAG_END = 7106 };
enum { MAX_CHUNK = 4096, REPORT_MSG = 1024 };

/* What a rank says when it leaves the run (DONE), why the run stops (STOP), and
   the outcome every rank returns (END). */
typedef struct report {
    int status;                  /* MBK_OK, or the failure's negative status */
    int rank;                    /* where the failure happened */
    int n_run, n_failed;         /* members: this rank's (DONE), the ensemble's (END) */
    char msg[REPORT_MSG];        /* the failure's message */
} report;

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
/* The last resort and the agreement                                    */
/* ------------------------------------------------------------------ */

/* A rank that cannot communicate cannot tell the others: it stops them all. */
static _Noreturn void abort_all(const char *call, int err)
{
    char text[MPI_MAX_ERROR_STRING] = "";
    int len = 0;
    MPI_Error_string(err, text, &len);
    fprintf(stderr, "mbk_mpi: rank %d cannot communicate with the other ranks (%s: %s); stopping every rank "
                    "with MPI_Abort\n", mbk_mpi_rank(), call, text);
    fflush(stderr);
    MPI_Abort(MPI_COMM_WORLD, 1);
    exit(1); /* MPI_Abort does not return */
}

/* Every MPI call of the run goes through here. */
static void check(int err, const char *call)
{
    if (err != MPI_SUCCESS) abort_all(call, err);
}

/* The agreement on communicator comm (see mbk_mpi_agree). */
static int agree_on(MPI_Comm comm, int status, const char *message, int *failed_rank)
{
    int rank = 0, size = 1;
    MPI_Comm_rank(comm, &rank);
    MPI_Comm_size(comm, &size);
    /* the lowest failing rank speaks for all */
    int mine = status != 0 ? rank : size, first = size;
    check(MPI_Allreduce(&mine, &first, 1, MPI_INT, MPI_MIN, comm), "MPI_Allreduce");
    if (failed_rank) *failed_rank = first < size ? first : -1;
    if (first == size) return 0;
    report r;
    memset(&r, 0, sizeof r);
    if (rank == first) {
        r.status = status, r.rank = rank;
        snprintf(r.msg, sizeof r.msg, "%s", message && message[0] ? message : "failed");
    }
    check(MPI_Bcast(&r, (int)sizeof r, MPI_BYTE, first, comm), "MPI_Bcast");
    mbk_set_error(r.status, "rank %d: %s", first, r.msg);
    return r.status;
}

int mbk_mpi_agree(int status, const char *message, int *failed_rank)
{
    if (mpi_up()) return agree_on(MPI_COMM_WORLD, status, message, failed_rank);
    if (failed_rank) *failed_rank = status != 0 ? 0 : -1;
    return status != 0 ? mbk_set_error(status, "rank 0: %s", message && message[0] ? message : "failed") : 0;
}

/* Wait a little for messages or for this rank's workers, without spinning. */
static void nap(void)
{
    const struct timespec ts = {0, 2000000};
    nanosleep(&ts, NULL);
}

/* ------------------------------------------------------------------ */
/* The driver                                                           */
/* ------------------------------------------------------------------ */

typedef struct mpi_driver {
    mbk_ensemble *e;
    MPI_Comm comm;               /* the run's own duplicate of MPI_COMM_WORLD, MPI errors returned */
    int rank, size, n;
    size_t record_size;
    mbk_member_collect_fn collect;
    void *user;
    unsigned char *msg;          /* member, status, record */
    size_t msg_size;
    report stop;                 /* the failure that stops the run (status < 0 once stopped) */
    /* rank 0 */
    int next;                    /* next member to hand out */
    int remaining;               /* members not yet handed out (not skipped) */
    int ranks_done;              /* other ranks that said they are done */
    unsigned char *rank_done;    /* per rank: its DONE arrived */
    MPI_Request *stop_req;       /* per rank: the STOP sent to it */
    int n_run, n_failed;         /* rank 0: every rank's members run; others: its own */
    /* other ranks */
    bool requested, exhausted;
    MPI_Request req;
    int work[MAX_CHUNK + 1];
} mpi_driver;

static bool stopped(const mpi_driver *d) { return d->stop.status < 0; }

/* Keep the first failure that stops the run. */
static void record_stop(mpi_driver *d, int status, int rank, const char *msg)
{
    if (stopped(d)) return;
    d->stop.status = status < 0 ? status : MBK_EUSER;
    d->stop.rank = rank;
    snprintf(d->stop.msg, sizeof d->stop.msg, "%s", msg && msg[0] ? msg : mbk_status_name(d->stop.status));
}

/* The stop as this rank's last error (for the driver's abort path); returns -1. */
static int stop_error(const mpi_driver *d)
{
    mbk_set_error(d->stop.status, "the run failed on rank %d: %s", d->stop.rank, d->stop.msg);
    return -1;
}

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

/* Rank 0: the run stops; tell every rank still running (once). */
static void master_stop(mpi_driver *d, int status, int rank, const char *msg)
{
    if (stopped(d)) return;
    record_stop(d, status, rank, msg);
    /* not blocking: a rank busy sending its records must not hold rank 0 up */
    for (int k = 1; k < d->size; ++k)
        if (!d->rank_done[k])
            check(MPI_Isend(&d->stop, (int)sizeof d->stop, MPI_BYTE, k, TAG_STOP, d->comm, &d->stop_req[k]),
                  "MPI_Isend");
}

/* A record reached rank 0 (from this rank or another): 0, or -1 once the run stops. */
static int collect_one(mpi_driver *d, int member, int status, const void *record)
{
    if (stopped(d)) return -1; /* records after a stop are dropped */
    if (!d->collect) return 0;
    mbk_clear_error();
    int rc = d->collect(d->user, member, status, record, d->record_size);
    if (rc == 0) return 0;
    char why[REPORT_MSG];
    int st = mbk_last_status() < 0 ? mbk_last_status() : MBK_EUSER;
    snprintf(why, sizeof why, "the collect callback returned %d for member %d%s%.900s", rc, member,
             mbk_last_error()[0] ? ": " : "", mbk_last_error());
    master_stop(d, st, 0, why);
    return -1;
}

/* Rank 0: a request for work (none once the run stops: that answer ends the asking). */
static void serve_request(mpi_driver *d, int src)
{
    int want = 0;
    check(MPI_Recv(&want, 1, MPI_INT, src, TAG_REQ, d->comm, MPI_STATUS_IGNORE), "MPI_Recv");
    int got = 0;
    if (!stopped(d)) {
        /* guided chunks: a share of what is left, so the ranks finish together */
        int k = d->remaining / (4 * d->size);
        if (k < 1) k = 1;
        if (k > want) k = want;
        if (k > MAX_CHUNK) k = MAX_CHUNK;
        got = take(d, d->work, k);
    }
    check(MPI_Send(d->work, got, MPI_INT, src, TAG_WORK, d->comm), "MPI_Send");
}

/* Rank 0: a rank left the run; a failure there stops every rank. */
static void receive_done(mpi_driver *d, int src)
{
    report r;
    check(MPI_Recv(&r, (int)sizeof r, MPI_BYTE, src, TAG_DONE, d->comm, MPI_STATUS_IGNORE), "MPI_Recv");
    r.msg[sizeof r.msg - 1] = '\0';
    if (!d->rank_done[src]) {
        d->ranks_done++;
        d->n_run += r.n_run, d->n_failed += r.n_failed;
    }
    d->rank_done[src] = 1;
    if (r.status < 0) master_stop(d, r.status, src, r.msg);
}

/* Rank 0: answer whatever arrived from the other ranks; how many messages. */
static int master_serve(mpi_driver *d)
{
    for (int got = 0;; ++got) {
        int flag = 0;
        MPI_Status st;
        check(MPI_Iprobe(MPI_ANY_SOURCE, MPI_ANY_TAG, d->comm, &flag, &st), "MPI_Iprobe");
        if (!flag) return got;
        if (st.MPI_TAG == TAG_REQ) {
            serve_request(d, st.MPI_SOURCE);
        } else if (st.MPI_TAG == TAG_REC) {
            check(MPI_Recv(d->msg, (int)d->msg_size, MPI_BYTE, st.MPI_SOURCE, TAG_REC, d->comm, MPI_STATUS_IGNORE),
                  "MPI_Recv");
            int head[2];
            memcpy(head, d->msg, sizeof head);
            collect_one(d, head[0], head[1], d->msg + sizeof head);
        } else if (st.MPI_TAG == TAG_DONE) {
            receive_done(d, st.MPI_SOURCE);
        } else {
            abort_all("a message with an unknown tag", MPI_ERR_TAG); /* only a bug gets here */
        }
    }
}

static int master_fetch(void *data, int *members, int cap)
{
    mpi_driver *d = data;
    master_serve(d);
    if (stopped(d)) return -1;
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
    return collect_one(d, member, status, record) == 0 ? 0 : stop_error(d);
}

static int master_poll(void *data, double seconds)
{
    (void)seconds;
    mpi_driver *d = data;
    master_serve(d);
    return stopped(d) ? stop_error(d) : 0;
}

static bool master_finished(void *data)
{
    mpi_driver *d = data;
    master_serve(d);
    return stopped(d) || (d->next >= d->n && d->ranks_done == d->size - 1);
}

/* Rank 0 after its own run: stop the others if it failed, wait until every rank
   has left the run, then send them all the outcome. */
static void master_finish(mpi_driver *d, int rc, report *end)
{
    if (rc < 0) master_stop(d, rc, 0, mbk_last_error());
    while (d->ranks_done < d->size - 1)
        if (master_serve(d) == 0) nap();
    /* every rank took its STOP before its END (a rank done before the stop takes it then) */
    check(MPI_Waitall(d->size, d->stop_req, MPI_STATUSES_IGNORE), "MPI_Waitall");
    memset(end, 0, sizeof *end);
    if (stopped(d)) *end = d->stop;
    end->n_run = d->n_run, end->n_failed = d->n_failed;
    for (int k = 1; k < d->size; ++k) check(MPI_Send(end, (int)sizeof *end, MPI_BYTE, k, TAG_END, d->comm), "MPI_Send");
}

/* A rank other than 0: whether rank 0 stopped the run (taking its STOP, sent once). */
static bool worker_stopped(mpi_driver *d)
{
    int flag = 0;
    check(MPI_Iprobe(0, TAG_STOP, d->comm, &flag, MPI_STATUS_IGNORE), "MPI_Iprobe");
    if (!flag) return stopped(d);
    report r;
    check(MPI_Recv(&r, (int)sizeof r, MPI_BYTE, 0, TAG_STOP, d->comm, MPI_STATUS_IGNORE), "MPI_Recv");
    r.msg[sizeof r.msg - 1] = '\0';
    record_stop(d, r.status, r.rank, r.msg);
    return true;
}

static int worker_fetch(void *data, int *members, int cap)
{
    mpi_driver *d = data;
    if (d->exhausted || worker_stopped(d)) return -1;
    if (!d->requested) {
        int want = cap < MAX_CHUNK ? cap : MAX_CHUNK;
        check(MPI_Send(&want, 1, MPI_INT, 0, TAG_REQ, d->comm), "MPI_Send");
        check(MPI_Irecv(d->work, MAX_CHUNK, MPI_INT, 0, TAG_WORK, d->comm, &d->req), "MPI_Irecv");
        d->requested = true;
    }
    int flag = 0;
    MPI_Status st;
    check(MPI_Test(&d->req, &flag, &st), "MPI_Test");
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
    if (worker_stopped(d)) return stop_error(d);
    int head[2] = {member, status};
    memcpy(d->msg, head, sizeof head);
    memcpy(d->msg + sizeof head, record, size);
    check(MPI_Send(d->msg, (int)d->msg_size, MPI_BYTE, 0, TAG_REC, d->comm), "MPI_Send");
    return 0;
}

static int worker_poll(void *data, double seconds)
{
    (void)seconds;
    mpi_driver *d = data;
    return worker_stopped(d) ? stop_error(d) : 0;
}

static bool worker_finished(void *data)
{
    (void)data;
    return true; /* rank 0 learns it from DONE, sent after the run */
}

/* A rank other than 0 after its run: close an open request, report DONE (with
   this rank's failure, if any), and wait for the outcome. */
static void worker_finish(mpi_driver *d, int rc, report *end)
{
    /* rank 0 answers every request, also after a stop */
    while (d->requested) {
        int flag = 0;
        check(MPI_Test(&d->req, &flag, MPI_STATUS_IGNORE), "MPI_Test");
        if (flag) d->requested = false;
        else nap();
    }
    report done;
    memset(&done, 0, sizeof done);
    done.rank = d->rank, done.n_run = d->n_run, done.n_failed = d->n_failed;
    if (rc < 0) {
        done.status = rc;
        snprintf(done.msg, sizeof done.msg, "%s", mbk_last_error()[0] ? mbk_last_error() : mbk_status_name(rc));
    }
    check(MPI_Send(&done, (int)sizeof done, MPI_BYTE, 0, TAG_DONE, d->comm), "MPI_Send");
    /* a STOP that crossed the DONE comes first, then the outcome */
    for (;;) {
        int flag = 0;
        MPI_Status st;
        check(MPI_Iprobe(0, MPI_ANY_TAG, d->comm, &flag, &st), "MPI_Iprobe");
        if (!flag) {
            nap();
            continue;
        }
        if (st.MPI_TAG == TAG_STOP) {
            worker_stopped(d);
            continue;
        }
        if (st.MPI_TAG != TAG_END) abort_all("a message with an unknown tag", MPI_ERR_TAG); /* only a bug */
        check(MPI_Recv(end, (int)sizeof *end, MPI_BYTE, 0, TAG_END, d->comm, MPI_STATUS_IGNORE), "MPI_Recv");
        end->msg[sizeof end->msg - 1] = '\0';
        return;
    }
}

/* What this rank can check alone before the run: MBK_OK or a failure with its message. */
static int check_arguments(mbk_ensemble *e, double t_final, size_t record_size)
{
    const char *fn = "mbk_ensemble_run_mpi";
    if (!e) return mbk_set_error(MBK_EINVAL, "%s: ensemble is NULL", fn);
    if (!(t_final > 0) || !isfinite(t_final))
        return mbk_set_error(MBK_EINVAL, "%s: t_final = %g; give a finite time > 0", fn, t_final);
    if (record_size > ((size_t)1 << 24))
        return mbk_set_error(MBK_EINVAL, "%s: records of %zu bytes; keep them under 16 MiB", fn, record_size);
    return MBK_OK;
}

/* Set the driver up on this rank: MBK_OK, or a failure with its message. */
static int driver_setup(mpi_driver *d, mbk_ensemble *e, size_t record_size, mbk_member_collect_fn collect, void *user)
{
    d->e = e;
    MPI_Comm_rank(d->comm, &d->rank);
    MPI_Comm_size(d->comm, &d->size);
    d->stop.status = MBK_OK;
    d->n = mbk_ensemble_get_num_members(e);
    d->record_size = record_size;
    d->collect = collect;
    d->user = user;
    d->remaining = d->n - mbk_ensemble_get_num_skipped(e);
    d->msg_size = 2 * sizeof(int) + record_size;
    d->msg = mbk_calloc(1, d->msg_size);
    d->rank_done = mbk_calloc((size_t)d->size, 1);
    d->stop_req = mbk_calloc((size_t)d->size, sizeof *d->stop_req);
    if (!d->msg || !d->rank_done || !d->stop_req)
        return mbk_set_error(MBK_ENOMEM, "mbk_ensemble_run_mpi: out of memory for the driver");
    for (int k = 0; k < d->size; ++k) d->stop_req[k] = MPI_REQUEST_NULL;
    return MBK_OK;
}

/* Every rank must run the same ensemble: the same members and record size. */
static int check_same_ensemble(const mpi_driver *d)
{
    long mine[2] = {d->n, (long)d->record_size}, lo[2], hi[2];
    check(MPI_Allreduce(mine, lo, 2, MPI_LONG, MPI_MIN, d->comm), "MPI_Allreduce");
    check(MPI_Allreduce(mine, hi, 2, MPI_LONG, MPI_MAX, d->comm), "MPI_Allreduce");
    if (lo[0] == hi[0] && lo[1] == hi[1]) return MBK_OK;
    return mbk_set_error(MBK_EINVAL, "mbk_ensemble_run_mpi: the ranks' ensembles differ (%ld to %ld members, records "
                         "of %ld to %ld bytes); every rank must build the same ensemble", lo[0], hi[0], lo[1], hi[1]);
}

int mbk_ensemble_run_mpi(mbk_ensemble *e, double t_final, size_t record_size, mbk_member_init_fn init,
                         mbk_member_pack_fn pack, mbk_member_collect_fn collect, void *user)
{
    const char *fn = "mbk_ensemble_run_mpi";
    if (!mpi_up()) /* no MPI: one process, the threads alone */
        return mbk_ensemble_run_records(e, t_final, record_size, init, pack, collect, user);
    mpi_driver d;
    memset(&d, 0, sizeof d);
    MPI_Comm world = MPI_COMM_WORLD;
    check(MPI_Comm_dup(world, &d.comm), "MPI_Comm_dup");
    check(MPI_Comm_set_errhandler(d.comm, MPI_ERRORS_RETURN), "MPI_Comm_set_errhandler");
    /* every rank must be able to start: one that cannot stops them all before anything runs */
    int rc = check_arguments(e, t_final, record_size);
    if (rc == MBK_OK) rc = driver_setup(&d, e, record_size, collect, user);
    int failed_rank = -1;
    rc = agree_on(d.comm, rc, rc < 0 ? mbk_last_error() : NULL, &failed_rank);
    if (rc == MBK_OK) rc = check_same_ensemble(&d);
    if (rc != MBK_OK) {
        char why[REPORT_MSG];
        snprintf(why, sizeof why, "%s", mbk_last_error());
        mbk_free(d.msg), mbk_free(d.rank_done), mbk_free(d.stop_req);
        MPI_Comm_free(&d.comm);
        return mbk_set_error(rc, "%s: nothing was run: %s", fn, why);
    }
    /* the run; then every rank leaves with the same outcome */
    const mbk_ensemble_driver master = {master_fetch, master_deliver, master_poll, master_finished};
    const mbk_ensemble_driver worker = {worker_fetch, worker_deliver, worker_poll, worker_finished};
    rc = mbk_ensemble_run_driver(e, t_final, record_size, init, pack, d.rank == 0 ? &master : &worker, &d, user);
    /* the members this rank ran (its DONE tells rank 0, which adds them up) */
    d.n_run += mbk_ensemble_get_num_run(e), d.n_failed += mbk_ensemble_get_num_failed(e);
    report end;
    if (d.rank == 0) master_finish(&d, rc, &end);
    else worker_finish(&d, rc, &end);
    mbk_ensemble_set_result_counts(e, end.n_run, end.n_failed);
    mbk_free(d.msg), mbk_free(d.rank_done), mbk_free(d.stop_req);
    MPI_Comm_free(&d.comm);
    if (end.status < 0) return mbk_set_error(end.status, "%s: the run failed on rank %d: %s", fn, end.rank, end.msg);
    return MBK_OK;
}
