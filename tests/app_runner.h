/* The mbk program run as a user would, for the tests of the program
 * (tests/test_app*.c): found beside the test in the build tree (../apps/mbk),
 * started in a scratch directory of its own with stdout and stderr captured
 * apart, and waited for under a time limit, so that a program that blocks (on
 * a FIFO given as the model, say) fails the test instead of hanging it.
 * Include after mbk_test.h; define _POSIX_C_SOURCE 200809L before any header. */
#ifndef MBK_TEST_APP_RUNNER_H
#define MBK_TEST_APP_RUNNER_H

#include <fcntl.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

/* The program, the scratch directory and tests/urdf (the models the tests share). */
static char app_bin[4200], app_dir[256], app_models[1024];

/* The longest a run may take before it is killed and counted as hung. */
enum { APP_TIME_LIMIT_S = 60, APP_HUNG = 124 /* as timeout(1) says it */ };

/* What a run gave: its exit status (128 + signal when one ended it, APP_HUNG when
   it ran past the time limit) and its stdout and stderr. */
typedef struct app_result {
    int code;
    char out[65536], err[65536];
} app_result;

/* Find the program beside this test and make the scratch directory
   /tmp/mbk-test-NAME-XXXXXX; 0, or -1 after a failed check. */
static int app_setup(const char *argv0, const char *name)
{
    /* this test is <build>/tests/test_app..., the program <build>/apps/mbk */
    char self[4096];
    ssize_t n = readlink("/proc/self/exe", self, sizeof self - 1);
    if (n <= 0) snprintf(self, sizeof self, "%s", argv0);
    else self[n] = '\0';
    char *slash = strrchr(self, '/');
    if (slash) *slash = '\0';
    snprintf(app_bin, sizeof app_bin, "%s/../apps/mbk", self);
    const char *f = __FILE__, *fs = strrchr(f, '/');
    snprintf(app_models, sizeof app_models, "%.*s/urdf", fs ? (int)(fs - f) : 1, fs ? f : ".");
    snprintf(app_dir, sizeof app_dir, "/tmp/mbk-test-%s-XXXXXX", name);
    if (!CHECK(access(app_bin, X_OK) == 0) || !CHECK(mkdtemp(app_dir) != NULL)) return -1;
    return 0;
}

/* Remove the scratch directory and all in it. */
static void app_cleanup(void)
{
    char cmd[600];
    snprintf(cmd, sizeof cmd, "rm -rf '%s'", app_dir);
    if (system(cmd) != 0) fprintf(stderr, "could not remove %s\n", app_dir);
}

/* Start "mbk ARGS" in the scratch directory (ARGS split as the shell splits them),
   its stdout and stderr into the files out and err (relative to the scratch
   directory, or absolute). The pid is the program's own (the shell execs it), so
   it can be killed; -1 if it could not be started. */
static pid_t app_start(const char *args, const char *out, const char *err)
{
    char cmd[8192];
    snprintf(cmd, sizeof cmd, "exec '%s' %s", app_bin, args);
    pid_t pid = fork();
    if (pid != 0) return pid;
    if (chdir(app_dir) != 0) _exit(127);
    int fo = open(out, O_WRONLY | O_CREAT | O_TRUNC, 0644), fe = open(err, O_WRONLY | O_CREAT | O_TRUNC, 0644);
    if (fo < 0 || fe < 0 || dup2(fo, 1) < 0 || dup2(fe, 2) < 0) _exit(127);
    execl("/bin/sh", "sh", "-c", cmd, (char *)NULL);
    _exit(127);
}

/* The exit status of a waitpid status, or 128 + the signal that ended the program. */
static int app_status(int st) { return WIFEXITED(st) ? WEXITSTATUS(st) : WIFSIGNALED(st) ? 128 + WTERMSIG(st) : -1; }

/* Exit status of pid, 128 + the signal that ended it, or APP_HUNG (and killed)
   when it is still running after APP_TIME_LIMIT_S seconds. */
static int app_wait(pid_t pid)
{
    if (pid < 0) return -1;
    int st = 0;
    /* poll: 1 ms steps, so that short runs are not slowed down */
    for (long waited_ms = 0; waitpid(pid, &st, WNOHANG) == 0; ++waited_ms) {
        if (waited_ms >= APP_TIME_LIMIT_S * 1000L) {
            kill(pid, SIGKILL);
            waitpid(pid, &st, 0);
            return APP_HUNG;
        }
        nanosleep(&(struct timespec){0, 1000000L}, NULL);
    }
    return app_status(st);
}

/* The file name (in the scratch directory, or absolute) into buf, NUL-terminated
   and cut at cap - 1 bytes; empty when there is no such file. */
static void app_slurp(const char *name, char *buf, size_t cap)
{
    char path[1024];
    snprintf(path, sizeof path, "%s/%s", app_dir, name);
    FILE *f = fopen(name[0] == '/' ? name : path, "r");
    size_t n = f ? fread(buf, 1, cap - 1, f) : 0;
    buf[n] = '\0';
    if (f) fclose(f);
}

/* Run "mbk ARGS" to its end in the scratch directory: exit status, stdout, stderr. */
static void app_run(app_result *r, const char *args)
{
    r->code = app_wait(app_start(args, "out.txt", "err.txt"));
    app_slurp("out.txt", r->out, sizeof r->out);
    app_slurp("err.txt", r->err, sizeof r->err);
}

#endif
