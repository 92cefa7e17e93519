/* Where the mbk program's outputs go, and where a run starts; each case was
 * once wrong:
 * (1) an output that is a symlink is written through it (the link stays; the
 *     CSV and the checkpoint were renamed over the link), and one that is not a
 *     regular file (here a link to the program's standard output) is written in
 *     place; an output that is standard output sends the summary to stderr (it
 *     was written into the page); mbk sweep refuses a non-regular --output;
 * (2) --step 0 and --interval 0 are usage errors (they meant the default);
 * (3) --q0 on a URDF with mimic joints starts at the coordinates given, the
 *     mimic joints following (the integrator's projection moved them all);
 * (4) mbk info counts the force elements by kind (every element past gravity
 *     was "limits and dampers");
 * (5) a run that blew up still reports its relative energy drift (the blow-up's
 *     energies were taken as the scale E(0) is measured against);
 * (6) a long UTF-8 name is cut between characters (a stray byte was left). */
#define _POSIX_C_SOURCE 200809L
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "mbk_test.h"
#include "app_runner.h"

static int has(const char *s, const char *sub) { return strstr(s, sub) != NULL; }

/* name (in the scratch directory) is a symlink. */
static bool is_link(const char *name)
{
    char path[1024];
    struct stat st;
    snprintf(path, sizeof path, "%s/%s", app_dir, name);
    return lstat(path, &st) == 0 && S_ISLNK(st.st_mode);
}

/* A symlink name -> target in the scratch directory. */
static void make_link(const char *target, const char *name)
{
    char path[1024];
    snprintf(path, sizeof path, "%s/%s", app_dir, name);
    CHECK(symlink(target, path) == 0);
}

static void report(const app_result *r, const char *what)
{
    fprintf(stderr, "  %s -> %d\n  stdout: %.300s\n  stderr: %.300s\n", what, r->code, r->out, r->err);
}

static void test_links_and_stdout(void)
{
    app_result r;
    char buf[4096];
    /* through symlinks: the links stay, their targets get the files */
    char dir[600];
    snprintf(dir, sizeof dir, "%s/real", app_dir);
    CHECK(mkdir(dir, 0755) == 0);
    make_link("real/traj.csv", "traj.csv");
    make_link("real/run.mbkrun", "run.mbkrun");
    app_run(&r, "run builtin:chain:2 --t-final 0.1 --output traj.csv --plot none --checkpoint run.mbkrun");
    if (!CHECK(r.code == 0)) report(&r, "run through links");
    CHECK(is_link("traj.csv") && is_link("run.mbkrun"));
    app_slurp("real/traj.csv", buf, sizeof buf);
    CHECK(strncmp(buf, "t,q0,q1,u0,u1,energy", 20) == 0);
    app_run(&r, "run builtin:chain:2 --resume run.mbkrun --t-final 0.2 --output traj.csv --plot none");
    if (!CHECK(r.code == 0 && has(r.out, "resumed      from run.mbkrun"))) report(&r, "resume through links");
    CHECK(is_link("traj.csv"));
    /* a link to standard output (not a regular file): the CSV is written there, the
       summary goes to stderr */
    make_link("/proc/self/fd/1", "to_stdout");
    app_run(&r, "run builtin:chain:2 --t-final 0.1 --output to_stdout --plot none");
    if (!CHECK(r.code == 0 && strncmp(r.out, "t,q0,q1,u0,u1", 13) == 0 && has(r.err, "  trajectory   to_stdout")))
        report(&r, "--output to stdout");
    CHECK(is_link("to_stdout"));
    app_run(&r, "run builtin:chain:2 --t-final 0.1 --output none --plot none --html to_stdout");
    if (!CHECK(r.code == 0 && strncmp(r.out, "<!DOCTYPE html>", 15) == 0 && has(r.err, "mbk ")))
        report(&r, "--html to stdout");
    /* mbk sweep reads its output back: a regular file only (a FIFO is refused before it
       is opened, which would wait for a reader) */
    char fifo[600];
    snprintf(fifo, sizeof fifo, "%s/fifo", app_dir);
    CHECK(mkfifo(fifo, 0644) == 0);
    app_run(&r, "sweep builtin:chain:2 --t-final 0.1 --output fifo --plot none");
    if (!CHECK(r.code == 2 && has(r.err, "is not a regular file"))) report(&r, "sweep --output fifo");
    make_link("real/sweep.csv", "sweep.csv");
    app_run(&r, "sweep builtin:chain:2 --samples 2 --t-final 0.1 --output sweep.csv --plot none");
    if (!CHECK(r.code == 0 && is_link("sweep.csv"))) report(&r, "sweep through a link");
    app_slurp("real/sweep.csv", buf, sizeof buf);
    CHECK(strncmp(buf, "member,", 7) == 0);
}

static void test_zero_step_and_interval(void)
{
    app_result r;
    app_run(&r, "run --step 0 --output none --plot none");
    if (!CHECK(r.code == 2 && has(r.err, "--step must be > 0"))) report(&r, "--step 0");
    app_run(&r, "run --interval 0 --output none --plot none");
    if (!CHECK(r.code == 2 && has(r.err, "--interval must be > 0"))) report(&r, "--interval 0");
    app_run(&r, "sweep --step 0 --output none");
    if (!CHECK(r.code == 2 && has(r.err, "--step must be > 0"))) report(&r, "sweep --step 0");
    app_run(&r, "run --interval 1e-320 --output none --plot none");
    if (!CHECK(r.code == 2 && has(r.err, "is out of range"))) report(&r, "--interval 1e-320");
}

/* The CSV's first sample's q into q (n of them). */
static void first_q(const char *csv, double *q, int n)
{
    char buf[8192];
    app_slurp(csv, buf, sizeof buf);
    const char *p = strchr(buf, '\n');
    p = p ? strchr(p, ',') : NULL; /* after t */
    for (int i = 0; i < n; ++i) {
        q[i] = p ? strtod(p + 1, NULL) : NAN;
        p = p ? strchr(p + 1, ',') : NULL;
    }
}

static void test_mimic_start(void)
{
    app_result r;
    char args[2048];
    /* gripper.urdf: wrist q0, finger_left q1, finger_right q2 = q1, thumb q3 = -0.5 wrist + 0.1 */
    snprintf(args, sizeof args, "run '%s/gripper.urdf' --q0 wrist=0.4 --t-final 0.01 --output g.csv --plot none",
             app_models);
    app_run(&r, args);
    if (!CHECK(r.code == 0 && has(r.out, "--q0 coordinates held"))) report(&r, "mimic --q0");
    double q[4];
    first_q("g.csv", q, 4);
    CHECK_NEAR(q[0], 0.4, 1e-11);
    CHECK_NEAR(q[3], -0.5 * 0.4 + 0.1, 1e-11);
    CHECK_NEAR(q[2], q[1], 1e-11);
}

static void test_info_and_drift(void)
{
    app_result r;
    app_run(&r, "info builtin:drop");
    if (!CHECK(r.code == 0 && has(r.out, "9 elements: 1 uniform gravity, 8 Hunt-Crossley contact")))
        report(&r, "info builtin:drop");
    char args[2048];
    snprintf(args, sizeof args, "info '%s/arm7.urdf'", app_models);
    app_run(&r, args);
    if (!CHECK(r.code == 0 && has(r.out, "mobility linear stop") && has(r.out, "mobility linear damper") &&
               !has(r.out, "limits and dampers")))
        report(&r, "info arm7");
    /* explicit Euler with a huge step blows up: E(0) = -48 J is still a scale to divide by */
    app_run(&r, "run builtin:chain:5 --integrator euler --step 0.5 --t-final 100 --interval 0.5 --output none "
                "--plot none");
    if (!CHECK(has(r.out, "relative)") && !has(r.out, "too near 0"))) report(&r, "a blow-up's summary");
}

/* Whether s is valid UTF-8 (well-formed sequences of 1 to 4 bytes). */
static bool valid_utf8(const unsigned char *s)
{
    while (*s) {
        const int n = *s < 0x80 ? 1 : (*s & 0xE0) == 0xC0 ? 2 : (*s & 0xF0) == 0xE0 ? 3 : (*s & 0xF8) == 0xF0 ? 4 : 0;
        if (n == 0) return false;
        for (int k = 1; k < n; ++k)
            if ((s[k] & 0xC0) != 0x80) return false;
        s += n;
    }
    return true;
}

/* (6) a name longer than the program keeps is cut between characters, not inside one
   (a cut 'é' left a stray byte in mbk info's tree and in the viewer page) */
static void test_long_utf8_name(void)
{
    char path[600], name[400] = "elbowx"; /* an odd byte count before the two-byte characters */
    for (int k = 0; k < 70; ++k) strcat(name, "\xc3\xa9"); /* é, two bytes each */
    snprintf(path, sizeof path, "%s/long_name.urdf", app_dir);
    FILE *f = fopen(path, "w");
    if (!CHECK(f != NULL)) return;
    fprintf(f, "<?xml version=\"1.0\" encoding=\"UTF-8\"?>\n<robot name=\"r\"><link name=\"base\"/>\n"
               "<link name=\"arm\"><inertial><mass value=\"1\"/><origin xyz=\"0.5 0 0\"/>"
               "<inertia ixx=\"0.01\" iyy=\"0.1\" izz=\"0.1\" ixy=\"0\" ixz=\"0\" iyz=\"0\"/></inertial></link>\n"
               "<joint name=\"%s\" type=\"continuous\"><parent link=\"base\"/><child link=\"arm\"/>"
               "<axis xyz=\"0 0 1\"/></joint></robot>\n", name);
    fclose(f);
    app_result r;
    app_run(&r, "info long_name.urdf");
    if (!CHECK(r.code == 0 && has(r.out, "elbowx\xc3\xa9") && valid_utf8((const unsigned char *)r.out)))
        report(&r, "info of a long UTF-8 name");
}

int main(int argc, char **argv)
{
    (void)argc;
    if (app_setup(argv[0], "app-outputs") != 0) return mbk_test_finish();
    test_links_and_stdout();
    test_zero_step_and_interval();
    test_mimic_start();
    test_info_and_drift();
    test_long_utf8_name();
    app_cleanup();
    return mbk_test_finish();
}
