/* `mbk run --checkpoint FILE --checkpoint-every T` and `mbk run --resume FILE`, run
 * as a user would (the program is found beside this test: ../apps/mbk):
 *
 *   - kill and resume: a run killed with SIGKILL once a checkpoint exists (at a
 *     random moment after it, perhaps mid-write), resumed, killed again, and
 *     resumed to the end writes a trajectory CSV byte-identical to an
 *     uninterrupted run's, final row included (RK-Merson, the default);
 *   - a finished run continued to a later time (four-bar: constraints) equals one
 *     run straight there; CVODE continues too;
 *   - bad usage (exit 2), refused checkpoints (exit 3) and unwritable ones (exit 4) with their messages. */
#define _POSIX_C_SOURCE 200809L
#include <fcntl.h>
#include <signal.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "mbk_test.h"
#include "app_runner.h"

static int has(const char *s, const char *sub) { return strstr(s, sub) != NULL; }

/* Only tabs, newlines and printable ASCII (the summary is plain text). */
static int printable(const char *s)
{
    for (; *s; ++s)
        if (!(*s == '\t' || *s == '\n' || (*s >= 0x20 && *s <= 0x7e))) return 0;
    return 1;
}

static void sleep_ms(long ms)
{
    struct timespec ts = {ms / 1000, (ms % 1000) * 1000000L};
    nanosleep(&ts, NULL);
}

static bool exists(const char *name)
{
    char path[512];
    struct stat st;
    snprintf(path, sizeof path, "%s/%s", app_dir, name);
    return stat(path, &st) == 0;
}

/* Start a run, wait until `file` exists, then SIGKILL it `delay_ms` later. Returns the
   run's status (128 + 9 when it was killed). */
static int run_and_kill(const char *args, const char *file, long delay_ms)
{
    pid_t pid = app_start(args, "out.txt", "err.txt");
    int st = 0;
    for (int i = 0; i < 120000 && !exists(file); ++i) {
        if (waitpid(pid, &st, WNOHANG) == pid) return app_status(st);
        sleep_ms(1);
    }
    sleep_ms(delay_ms);
    kill(pid, SIGKILL);
    return app_wait(pid);
}

static char *read_all(const char *name, size_t *n)
{
    char path[512];
    snprintf(path, sizeof path, "%s/%s", app_dir, name);
    FILE *f = fopen(path, "rb");
    if (!f) return *n = 0, NULL;
    fseek(f, 0, SEEK_END);
    long len = ftell(f);
    fseek(f, 0, SEEK_SET);
    char *b = malloc((size_t)len + 1);
    *n = b ? fread(b, 1, (size_t)len, f) : 0;
    if (b) b[*n] = '\0';
    fclose(f);
    return b;
}

static const char *last_row(const char *csv)
{
    size_t n = strlen(csv);
    if (n < 2) return csv;
    const char *p = csv + n - 2;
    while (p > csv && *p != '\n') --p;
    return *p == '\n' ? p + 1 : p;
}

/* Two files with the same bytes (and their last rows shown when not). */
static int same_files(const char *a, const char *b)
{
    size_t na = 0, nb = 0;
    char *x = read_all(a, &na), *y = read_all(b, &nb);
    int same = x && y && na == nb && !memcmp(x, y, na);
    if (!same && x && y) fprintf(stderr, "  %s ends with %s  %s ends with %s", a, last_row(x), b, last_row(y));
    free(x);
    free(y);
    return same;
}

static void test_kill_and_resume(void)
{
    app_result r;
    /* an uninterrupted run: a tree of ball joints (quaternions), the default integrator */
    app_run(&r, "run builtin:tree:5 --t-final 10 --accuracy 1e-9 --output ref.csv --plot none --quiet");
    CHECK_INT(r.code, 0);
    /* the same, checkpointing every 0.5 s, killed at random moments after its first checkpoint */
    srand((unsigned)time(NULL));
    long d1 = rand() % 40;
    int k1 = run_and_kill("run builtin:tree:5 --t-final 10 --accuracy 1e-9 --output ck.csv --plot none --quiet "
                          "--checkpoint ck.mbkrun --checkpoint-every 0.5",
                          "ck.mbkrun", d1);
    if (!CHECK(k1 == 128 + SIGKILL)) fprintf(stderr, "  the first run ended with %d before it was killed\n", k1);
    /* resumed, killed again mid-way, resumed to the end */
    const char *resume = "run builtin:tree:5 --resume ck.mbkrun --t-final 10 --output ck.csv --plot none --quiet "
                         "--checkpoint ck.mbkrun --checkpoint-every 0.5";
    long d2 = 100 + rand() % 400;
    int k2 = run_and_kill(resume, "ck.mbkrun", d2);
    CHECK(k2 == 128 + SIGKILL || k2 == 0);
    int resumes = 1;
    if (k2 != 0) {
        app_run(&r, resume);
        resumes = 2;
        CHECK_INT(r.code, 0);
        CHECK(has(r.out, "resumed      from ck.mbkrun at t = "));
        if (r.code) fprintf(stderr, "  stdout: %s\n  stderr: %s\n", r.out, r.err);
    }
    CHECK(same_files("ref.csv", "ck.csv"));
    size_t n = 0;
    char *csv = read_all("ck.csv", &n);
    printf("  killed with SIGKILL after %ld ms and %ld ms, resumed %d time%s: the trajectory is byte-identical "
           "to the uninterrupted run's; final row\n    %.100s...\n", d1, d2, resumes, resumes == 1 ? "" : "s",
           csv ? last_row(csv) : "?");
    free(csv);
}

static void test_continue_finished_run(void)
{
    app_result r;
    /* four-bar (a constraint loop): 1 s with a checkpoint at the end, continued to 2 s */
    app_run(&r, "run builtin:fourbar --t-final 2 --interval 0.01 --output fb-ref.csv --plot none");
    CHECK_INT(r.code, 0);
    app_run(&r, "run builtin:fourbar --t-final 1 --interval 0.01 --output fb.csv --plot none --checkpoint fb.mbkrun");
    CHECK(r.code == 0 && has(r.out, "checkpoint   fb.mbkrun (1 written, the last at t = 1 s)"));
    app_run(&r, "run builtin:fourbar --resume fb.mbkrun --t-final 2 --output fb.csv --plot fb.svg");
    CHECK(r.code == 0 && has(r.out, "resumed      from fb.mbkrun at t = 1 s") && has(r.out, "201 rows"));
    if (r.code) fprintf(stderr, "  stdout: %s\n  stderr: %s\n", r.out, r.err);
    /* a resumed run chose no initial pose: no "start" line (it once printed an
       uninitialized note there) */
    if (!CHECK(!has(r.out, "\n  start ") && printable(r.out))) fprintf(stderr, "  stdout: %s\n", r.out);
    CHECK(same_files("fb-ref.csv", "fb.csv"));
    /* CVODE continues from where it stopped (not bitwise: it restarts its history) */
    app_run(&r, "run builtin:chain:3 --t-final 1 --integrator cvode-bdf --output cv.csv --plot none "
                "--checkpoint cv.mbkrun");
    CHECK_INT(r.code, 0);
    app_run(&r, "run builtin:chain:3 --resume cv.mbkrun --t-final 2 --output cv.csv --plot none");
    CHECK(r.code == 0 && has(r.out, "CVODE BDF") && has(r.out, "2001 rows"));
    if (r.code) fprintf(stderr, "  stdout: %s\n  stderr: %s\n", r.out, r.err);
    /* a run that ended between two samples (1.005 s, samples every 0.01 s) continues at
       the next sample of the grid, 1.01 s (it once went on at 1.02 s) */
    app_run(&r, "run builtin:chain:2 --t-final 1.005 --interval 0.01 --output odd.csv --plot none "
                "--checkpoint odd.mbkrun");
    CHECK_INT(r.code, 0);
    app_run(&r, "run builtin:chain:2 --resume odd.mbkrun --t-final 1.05 --output odd.csv --plot none");
    CHECK(r.code == 0 && has(r.out, "107 rows"));
    size_t n = 0;
    char *csv = read_all("odd.csv", &n);
    const char *at = csv ? strstr(csv, "\n1.005,") : NULL;
    if (!CHECK(at && strncmp(strchr(at + 1, '\n'), "\n1.01,", 6) == 0))
        fprintf(stderr, "  the row after t = 1.005: %.40s\n", at ? strchr(at + 1, '\n') + 1 : "(none)");
    free(csv);
    printf("  a finished run continued: four-bar equal to one run straight to 2 s; CVODE BDF continued; a run "
           "ended between samples goes on at the next one\n");
}

static void expect(const char *args, int code, const char *message)
{
    app_result r;
    app_run(&r, args);
    int c1 = CHECK(r.code == code), c2 = CHECK(has(r.err, message));
    if (!c1 || !c2)
        fprintf(stderr, "  mbk %s -> %d\n  stderr: %s\n", args, r.code, r.err);
}

static void test_refusals(void)
{
    app_result r;
    /* bad usage */
    expect("run --resume fb.mbkrun --q0 1,2,3", 2, "--q0 cannot be combined with --resume");
    expect("run --resume fb.mbkrun --integrator rk4", 2, "--integrator cannot be combined");
    expect("run --checkpoint-every 1", 2, "--checkpoint-every needs --checkpoint");
    expect("run --checkpoint", 2, "--checkpoint needs a file name");
    expect("run builtin:fourbar --resume fb.mbkrun --t-final 0.5 --output none", 2,
           "give a --t-final after it");
    /* refused checkpoints */
    FILE *f;
    char path[512];
    snprintf(path, sizeof path, "%s/garbage.mbkrun", app_dir);
    f = fopen(path, "w");
    if (f) {
        fputs("this is not a checkpoint at all, just some text that is long enough\n", f);
        fclose(f);
    }
    expect("run --resume garbage.mbkrun --output none --plot none", 3, "not an mbk checkpoint");
    expect("run --resume missing.mbkrun --output none --plot none", 3, "No such file");
    expect("run builtin:chain:3 --resume fb.mbkrun --t-final 3 --output none --plot none",
           3, "another System");
    size_t n = 0;
    char *img = read_all("fb.mbkrun", &n);
    if (img && n > 100) {
        img[n / 2] ^= 0x20;
        snprintf(path, sizeof path, "%s/flipped.mbkrun", app_dir);
        f = fopen(path, "wb");
        if (f) {
            fwrite(img, 1, n, f);
            fclose(f);
        }
        expect("run builtin:fourbar --resume flipped.mbkrun --t-final 3 --output none --plot none",
               3, "checksum");
    }
    free(img);
    /* a trajectory that does not continue the checkpoint's run */
    snprintf(path, sizeof path, "%s/short.csv", app_dir);
    f = fopen(path, "w");
    if (f) {
        fputs("t,q0,q1,q2,u0,u1,u2,energy,kinetic,potential\n0,0,0,0,0,0,0,0,0,0\n", f);
        fclose(f);
    }
    expect("run builtin:fourbar --resume fb.mbkrun --t-final 3 --output short.csv --plot none",
           3, "cannot be continued");
    /* the same model's trajectory written by another run (mbk-out/trajectory.csv is shared by
       default): its last sample is not the checkpoint's State */
    app_run(&r, "run builtin:fourbar --t-final 1 --interval 0.01 --gravity 0,0,-5 --output other.csv --plot none");
    CHECK_INT(r.code, 0);
    expect("run builtin:fourbar --resume fb.mbkrun --t-final 3 --output other.csv --plot none",
           3, "another run wrote it");
    /* a directory is not a checkpoint file */
    expect("run builtin:fourbar --t-final 0.1 --output none --plot none --checkpoint .", 4,
           "directory");
    printf("  usage errors (exit 2), refused checkpoints (exit 3) and unwritable ones (exit 4) say why\n");
}

int main(int argc, char **argv)
{
    (void)argc;
    if (app_setup(argv[0], "app-checkpoint") != 0) return mbk_test_finish();
    test_kill_and_resume();
    test_continue_finished_run();
    test_refusals();
    app_cleanup();
    return mbk_test_finish();
}
