/* The program under mpirun (`mpirun -np N mbk sweep ...`): every rank parses
 * the options and loads the model; rank 0 speaks for all. Ranks other than 0
 * write nothing to stdout, and their stderr is held in a temporary file until
 * the ranks agree that every one could start: a rank that cannot (its model
 * unreadable on that host, another option given to it) is then named by rank
 * 0 with its own message, and every rank stops with its status instead of
 * waiting in a collective call the failed rank never makes. Built without
 * MPI, these calls do nothing. */
#define _POSIX_C_SOURCE 200809L
#include <stdio.h>
#include <string.h>
#include <unistd.h>

#include "app.h"
#ifdef MBK_HAVE_MPI
#include <mbk/ensemble_mpi.h>
#endif

int app_ranks_start(app_ranks *r)
{
    memset(r, 0, sizeof *r);
    r->size = 1;
#ifdef MBK_HAVE_MPI
    if (!mbk_mpi_launched()) return APP_OK;
    if (mbk_mpi_init(NULL, NULL) < 0) {
        fprintf(stderr, "mbk: %s\n", mbk_last_error());
        return APP_FAILED;
    }
    r->mpi = true;
    r->rank = mbk_mpi_rank();
    r->size = mbk_mpi_size();
    if (r->rank == 0) return APP_OK;
    /* rank 0 speaks for all; this rank's messages wait for the agreement */
    if (!freopen("/dev/null", "w", stdout)) r->quiet = true;
    r->held = tmpfile();
    fflush(stderr);
    if (!r->held || dup2(fileno(r->held), STDERR_FILENO) < 0) app_ranks_quiet(r);
#endif
    return APP_OK;
}

#ifdef MBK_HAVE_MPI
/* The last line this rank wrote to its held stderr, without the program's prefix. */
static void last_held_line(FILE *held, char *out, size_t n)
{
    char line[1024];
    out[0] = '\0';
    if (!held || fseek(held, 0, SEEK_SET) != 0) return;
    while (fgets(line, sizeof line, held)) {
        line[strcspn(line, "\r\n")] = '\0';
        const char *p = strncmp(line, "mbk sweep: ", 11) ? line : line + 11;
        if (p[0]) snprintf(out, n, "%s", p);
    }
}
#endif

int app_ranks_agree(app_ranks *r, int status, const char *what)
{
#ifdef MBK_HAVE_MPI
    if (!r->mpi) return status;
    char why[1024] = "";
    if (status != 0 && r->rank != 0) {
        fflush(stderr);
        last_held_line(r->held, why, sizeof why);
        if (!why[0]) snprintf(why, sizeof why, "exit status %d", status);
    }
    int who = -1;
    int agreed = mbk_mpi_agree(status, why, &who);
    /* rank 0 printed its own reason; another rank's is printed here */
    if (agreed != 0 && who > 0 && r->rank == 0) fprintf(stderr, "mbk %s: stopped before the run: %s\n", what, mbk_last_error());
    return agreed;
#else
    (void)r, (void)what;
    return status;
#endif
}

void app_ranks_quiet(app_ranks *r)
{
    if (!r->mpi || r->rank == 0) return;
    if (!freopen("/dev/null", "w", stderr)) r->quiet = true;
    if (r->held) fclose(r->held);
    r->held = NULL;
}

int app_ranks_finish(app_ranks *r, int status)
{
#ifdef MBK_HAVE_MPI
    if (!r->mpi) return status;
    app_ranks_quiet(r);
    mbk_mpi_broadcast_int(&status); /* every rank exits as rank 0 does */
    mbk_mpi_finalize();
#else
    (void)r;
#endif
    return status;
}
