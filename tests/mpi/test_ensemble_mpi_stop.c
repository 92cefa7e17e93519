/* A failure on one MPI rank ends the run on every rank (mbk_ensemble_run_mpi),
 * run by ctest as mpirun -np 2 and 3 under a short timeout, so that a rank left
 * waiting for work or records fails the test instead of hanging it. Each case
 * plants one failure on one rank part-way through the ensemble of
 * tests/ensemble_model.h: a pack callback failing on that rank's second member
 * (rank 0 and the last rank), rank 0's collect callback failing after three
 * records, memory running out in the run's setup on one rank, a bad t_final on
 * one rank only. Every rank must return the same failing status, with a
 * message naming the failing rank and the cause (a pack callback's own status
 * and message when it sets them), having run fewer than all members (every
 * rank's members counted); and a clean run afterwards (one member whose init fails: a
 * member's failure, not the run's) must still give every member, so the stop
 * left no message behind. The case to run alone can be given as an argument
 * (0..7; all when none). */
#define _POSIX_C_SOURCE 200809L
#include <mbk/ensemble_mpi.h>
#include <mpi.h>
#include <stdatomic.h>

#include "mbk_test.h"
#include "ensemble_model.h"

enum { NM = 48 };                 /* members: enough that every rank runs several */
enum { BIG_RECORD = 64 * 1024 };  /* the record size of the out-of-memory cases */

typedef enum { FAIL_PACK, FAIL_PACK_SAYS, FAIL_COLLECT, FAIL_ALLOC, FAIL_TFINAL } failure;

typedef struct scenario {
    const char *name;
    failure what;
    int rank;                     /* the failing rank; -1: the last one */
    int status;                   /* what every rank must return */
    const char *cause;            /* in every rank's message */
} scenario;

static const scenario cases[] = {
    {"pack fails on rank 0", FAIL_PACK, 0, MBK_EUSER, "result callback returned -1"},
    {"collect fails on rank 0", FAIL_COLLECT, 0, MBK_EIO, "the test's collect cannot write"},
    {"pack fails on the last rank", FAIL_PACK, -1, MBK_EUSER, "result callback returned -1"},
    {"pack fails on the last rank, saying why", FAIL_PACK_SAYS, -1, MBK_EIO, "the test's pack cannot store"},
    {"memory runs out on rank 0", FAIL_ALLOC, 0, MBK_ENOMEM, "out of memory"},
    {"memory runs out on the last rank", FAIL_ALLOC, -1, MBK_ENOMEM, "out of memory"},
    {"bad t_final on the last rank", FAIL_TFINAL, -1, MBK_EINVAL, "t_final = -1"},
    {"bad t_final on rank 0", FAIL_TFINAL, 0, MBK_EINVAL, "t_final = -1"},
};
enum { NCASES = sizeof cases / sizeof *cases };

/* ---- allocations that fail on demand ------------------------------------------ */

static atomic_size_t fail_from; /* allocations of at least this many bytes fail (0: none) */

static void *test_malloc(size_t size, void *user)
{
    (void)user;
    size_t limit = atomic_load(&fail_from);
    return limit && size >= limit ? NULL : malloc(size);
}

static void *test_realloc(void *p, size_t size, void *user)
{
    (void)user;
    size_t limit = atomic_load(&fail_from);
    return limit && size >= limit ? NULL : realloc(p, size);
}

static void test_free(void *p, void *user)
{
    (void)user;
    free(p);
}

/* ---- members ------------------------------------------------------------------- */

typedef struct rec {
    int member, status;
    double t;
} rec;

typedef struct plan {
    sweep w;                      /* the model's members (ensemble_model.h) */
    bool fail_pack;               /* this rank's pack fails on its second member */
    bool pack_says;               /* ... setting its own status and message */
    atomic_int packed;            /* pack calls on this rank */
    int collect_fail_after;       /* rank 0's collect fails after this many records (-1: never) */
    int collected;
} plan;

static int plan_init(void *user, const mbk_system *sys, int i, mbk_state *s)
{
    return member_init(&((plan *)user)->w, sys, i, s);
}

static int plan_pack(void *user, const mbk_system *sys, int i, const mbk_state *s, int status, void *record,
                     size_t size)
{
    (void)sys;
    plan *p = user;
    if (size < sizeof(rec)) return -1;
    if (atomic_fetch_add(&p->packed, 1) == 1 && p->fail_pack)
        return p->pack_says ? mbk_set_error(MBK_EIO, "the test's pack cannot store its record") : -1;
    rec r = {i, status, mbk_state_get_time(s)};
    memcpy(record, &r, sizeof r);
    return 0;
}

static int plan_collect(void *user, int i, int status, const void *record, size_t size)
{
    plan *p = user;
    rec r;
    memcpy(&r, record, sizeof r);
    if (size < sizeof r || r.member != i || r.status != status) return mbk_set_error(MBK_EINVAL, "a record is garbled");
    if (p->collect_fail_after >= 0 && p->collected == p->collect_fail_after)
        return mbk_set_error(MBK_EIO, "the test's collect cannot write its output");
    p->collected++;
    return 0;
}

/* One run over every rank; the failure of `c` planted on its rank (c NULL: a clean run). */
static int run(model *m, const scenario *c, int rank, int size, int *n_run)
{
    static plan p;
    memset(&p, 0, sizeof p);
    p.w.m = m, p.w.fail_init = c ? -1 : 5, p.w.fail_run = -1;
    p.collect_fail_after = -1;
    bool here = c && (c->rank < 0 ? size - 1 : c->rank) == rank;
    size_t record_size = c && c->what == FAIL_ALLOC ? BIG_RECORD : sizeof(rec);
    double t_final = here && c->what == FAIL_TFINAL ? -1.0 : T_FINAL;
    if (here && (c->what == FAIL_PACK || c->what == FAIL_PACK_SAYS)) p.fail_pack = true;
    p.pack_says = c && c->what == FAIL_PACK_SAYS;
    if (here && c->what == FAIL_COLLECT) p.collect_fail_after = 3;
    mbk_ensemble *e = mbk_ensemble_create(m->sys, NM);
    mbk_ensemble_set_integrator(e, "rkmerson", 1e-5);
    mbk_ensemble_set_threads(e, 2);
    /* the driver's own buffers fit; the run's queues of records (2 per thread) do not */
    if (here && c->what == FAIL_ALLOC) atomic_store(&fail_from, (size_t)3 * BIG_RECORD);
    int rc = mbk_ensemble_run_mpi(e, t_final, record_size, plan_init, plan_pack, plan_collect, &p);
    atomic_store(&fail_from, 0);
    *n_run = mbk_ensemble_get_num_run(e);
    /* every rank's members whose results went to pack are counted, whatever the stop
       did with their records (they were once counted only as rank 0 collected them) */
    int packed = atomic_load(&p.packed), all = 0;
    MPI_Allreduce(&packed, &all, 1, MPI_INT, MPI_SUM, MPI_COMM_WORLD);
    CHECK_INT(*n_run, all);
    if (!c) CHECK_INT(mbk_ensemble_get_num_failed(e), 1);
    mbk_ensemble_destroy(e);
    return rc;
}

/* A planted failure: every rank fails with the case's status, rank and cause. */
static void check_case(model *m, const scenario *c, int rank, int size)
{
    int n_run = 0;
    int rc = run(m, c, rank, size, &n_run);
    char where[64];
    snprintf(where, sizeof where, "rank %d", c->rank < 0 ? size - 1 : c->rank);
    const char *msg = mbk_last_error();
    bool ok = rc == c->status && strstr(msg, where) && strstr(msg, c->cause) && n_run < NM;
    if (!ok)
        fprintf(stderr, "rank %d, %s: status %s, %d of %d members run, message \"%s\"\n", rank, c->name,
                mbk_status_name(rc), n_run, NM, msg);
    if (rank == 0) printf("  %s: %s, %d of %d members run: %s\n", c->name, mbk_status_name(rc), n_run, NM, msg);
    CHECK_INT(rc, c->status);
    CHECK(strstr(msg, where) != NULL);
    CHECK(strstr(msg, c->cause) != NULL);
    CHECK(n_run < NM);
    /* the communicator is clean afterwards: a plain run gives every member */
    rc = run(m, NULL, rank, size, &n_run);
    CHECK_INT(rc, MBK_OK);
    CHECK_INT(n_run, NM);
}

int main(int argc, char **argv)
{
    mbk_set_allocator(test_malloc, test_realloc, test_free, NULL); /* before any object */
    if (mbk_mpi_init(&argc, &argv) != MBK_OK) {
        fprintf(stderr, "MPI did not start: %s\n", mbk_last_error());
        return 1;
    }
    int rank = mbk_mpi_rank(), size = mbk_mpi_size();
    int only = argc > 1 ? atoi(argv[1]) : -1;
    model m = build();
    for (int k = 0; k < NCASES; ++k) {
        if (only >= 0 && k != only) continue;
        check_case(&m, &cases[k], rank, size);
    }
    mbk_system_destroy(m.sys);
    /* one verdict for all ranks */
    int failed_rank = -1;
    int verdict = mbk_mpi_agree(mbk_test_failed_count != 0, "checks failed (its messages above)", &failed_rank);
    int rc = 0;
    if (rank == 0) {
        if (verdict) fprintf(stderr, "%s\n", mbk_last_error());
        printf("(%d ranks) ", size);
        rc = mbk_test_finish();
    }
    mbk_mpi_finalize();
    return verdict != 0 || rc != 0;
}
