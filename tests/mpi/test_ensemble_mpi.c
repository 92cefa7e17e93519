/* Ensembles over MPI ranks (mbk_mpi), run by ctest as mpirun -np 1, 2 and 3:
 * the model of tests/ensemble_model.h (constraint, contact, events) gives on
 * every number of ranks bitwise the same records, gathered on rank 0, as the
 * same ensemble on one thread of one process; members made to fail keep their
 * status and message, the others are unchanged; skipped members are not run;
 * every rank reports the whole ensemble's counts. Rank 0 prints the result. */
#define _POSIX_C_SOURCE 200809L
#include <mbk/ensemble_mpi.h>

#include "mbk_test.h"
#include "ensemble_model.h"

static int same_result(const result *a, const result *b)
{
    return a->status == b->status && a->steps == b->steps && a->ny == b->ny && memcmp(&a->t, &b->t, sizeof a->t) == 0 &&
           memcmp(a->y, b->y, sizeof(double) * (size_t)a->ny) == 0 && strcmp(a->msg, b->msg) == 0;
}

/* One ensemble: over MPI (mpi) or on one thread here; results in w->res (rank 0). */
static int run(model *m, bool mpi, int fail_init, int fail_run, int skip, sweep *w)
{
    memset(w->res, 0, sizeof w->res);
    memset(w->calls, 0, sizeof w->calls);
    w->m = m, w->fail_init = fail_init, w->fail_run = fail_run;
    mbk_ensemble *e = mbk_ensemble_create(m->sys, N);
    mbk_ensemble_set_integrator(e, "rkmerson", 1e-5);
    mbk_ensemble_set_threads(e, mpi ? 2 : 1);
    if (skip >= 0) mbk_ensemble_skip_member(e, skip);
    done_ctx d = {w, e};
    int rc = mpi ? mbk_ensemble_run_mpi(e, T_FINAL, sizeof(result), done_init, member_pack, member_collect, &d)
                 : mbk_ensemble_run_records(e, T_FINAL, sizeof(result), done_init, member_pack, member_collect, &d);
    CHECK_INT(rc, MBK_OK);
    CHECK_INT(mbk_ensemble_get_num_run(e), skip >= 0 ? N - 1 : N);
    CHECK_INT(mbk_ensemble_get_num_failed(e), (fail_init >= 0) + (fail_run >= 0));
    mbk_ensemble_destroy(e);
    return rc;
}

int main(int argc, char **argv)
{
    if (mbk_mpi_init(&argc, &argv) != MBK_OK) {
        fprintf(stderr, "MPI did not start: %s\n", mbk_last_error());
        return 1;
    }
    int rank = mbk_mpi_rank(), size = mbk_mpi_size();
    model m = build();
    static sweep ref, got;
    /* plain */
    run(&m, true, -1, -1, -1, &got);
    if (rank == 0) {
        run(&m, false, -1, -1, -1, &ref);
        for (int i = 0; i < N; ++i) {
            CHECK_INT(got.calls[i], 1);
            CHECK_INT(ref.res[i].status, MBK_OK);
            if (!same_result(&ref.res[i], &got.res[i])) fprintf(stderr, "member %d differs on %d ranks\n", i, size);
            CHECK(same_result(&ref.res[i], &got.res[i]));
        }
    }
    /* failures and a skipped member */
    run(&m, true, 3, 7, 5, &got);
    if (rank == 0) {
        run(&m, false, 3, 7, 5, &ref);
        for (int i = 0; i < N; ++i) {
            CHECK_INT(got.calls[i], i == 5 ? 0 : 1);
            if (i != 5) CHECK(same_result(&ref.res[i], &got.res[i]));
        }
        CHECK_INT(got.res[3].status, MBK_EINVAL);
        CHECK(strstr(got.res[7].msg, "failing force gave up") != NULL);
    }
    mbk_system_destroy(m.sys);
    int failed = mbk_test_failed_count;
    mbk_mpi_broadcast_int(&failed);
    int rc = 0;
    if (rank == 0) {
        printf("(%d ranks) ", size);
        rc = mbk_test_finish();
    }
    mbk_mpi_finalize();
    return rank == 0 ? rc : failed != 0;
}
