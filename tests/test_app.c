/* The mbk program, run as a user would: `mbk run` with and without a model,
 * its CSV and SVG outputs, `mbk info`, `mbk bench`, --help, and the exit
 * status of every class docs/cli.md lists, with its messages: 0 success, 1 the
 * simulation failed, 2 bad usage, 3 the model could not be loaded, 4 an output
 * could not be written. Every option --help lists is documented in
 * docs/cli.md. The program is found beside this test in the build tree
 * (../apps/mbk). */
#define _POSIX_C_SOURCE 200809L
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include "mbk_test.h"
#include "app_runner.h"

static int has(const char *s, const char *sub) { return strstr(s, sub) != NULL; }

static long count_lines(const char *path, char *first, size_t cap)
{
    FILE *f = fopen(path, "r");
    if (!f) return -1;
    long n = 0;
    int c, prev = '\n';
    size_t k = 0;
    while ((c = fgetc(f)) != EOF) {
        if (n == 0 && c != '\n' && k + 1 < cap) first[k++] = (char)c;
        if (c == '\n') n++;
        prev = c;
    }
    if (prev != '\n') n++;
    first[k] = '\0';
    fclose(f);
    return n;
}

static void expect_usage_error(const char *args, const char *message)
{
    app_result r;
    app_run(&r, args);
    int ok = CHECK(r.code == 2);
    ok &= CHECK(has(r.err, message));
    ok &= CHECK(r.out[0] == '\0');
    if (!ok)
        fprintf(stderr, "  mbk %s -> %d\n  stderr: %s\n", args, r.code, r.err);
}

int main(int argc, char **argv)
{
    (void)argc;
    if (app_setup(argv[0], "app") != 0) return mbk_test_finish();

    app_result r;
    char args[2048], path[512], first[4096];

    /* the README's first command: no model, default outputs in mbk-out/ */
    app_run(&r, "run --t-final 0.2");
    CHECK(r.code == 0);
    CHECK(has(r.out, "simulated builtin:chain:5") && has(r.out, "5-link 3-D pendulum"));
    CHECK(has(r.out, "nq = 5, nu = 5") && has(r.out, "RK-Merson") && has(r.out, "steps"));
    CHECK(has(r.out, "energy") && has(r.out, "drift") && has(r.out, "wall time") && has(r.out, "real-time factor"));
    CHECK(r.err[0] == '\0'); /* no progress line when stderr is not a terminal */
    snprintf(path, sizeof path, "%s/mbk-out/trajectory.csv", app_dir);
    CHECK(count_lines(path, first, sizeof first) == 1002); /* header + t = 0, 0.0002, ..., 0.2 */
    CHECK(!strcmp(first, "t,q0,q1,q2,q3,q4,u0,u1,u2,u3,u4,energy,kinetic,potential"));
    snprintf(path, sizeof path, "%s/mbk-out/plot.svg", app_dir);
    {
        static char svg[1 << 20];
        app_slurp(path, svg, sizeof svg);
        CHECK(has(svg, "<svg") && has(svg, "</svg>") && has(svg, "<polyline") && has(svg, "q4"));
    }
    if (r.code) fprintf(stderr, "  stdout: %s\n  stderr: %s\n", r.out, r.err);

    /* outputs where asked, fixed-step RK4, gravity and initial conditions by joint name */
    app_run(&r, "run builtin:chain:3 --t-final 0.5 --integrator rk4 --step 0.01 --interval 0.1 --gravity 0,0,-1.62 "
                "--q0 joint1=0.4,joint3=-0.2 --u0 0,1,0 --output out/a.csv --plot out/a.svg");
    CHECK(r.code == 0 && has(r.out, "RK4"));
    snprintf(path, sizeof path, "%s/out/a.csv", app_dir);
    CHECK(count_lines(path, first, sizeof first) == 7);
    {
        char csv[4096];
        app_slurp(path, csv, sizeof csv);
        CHECK(has(csv, "\n0,0.4,0.6,-0.2,0,1,0,")); /* t = 0: q (joint2 keeps its default 0.6), then u */
    }
    if (r.code) fprintf(stderr, "  stdout: %s\n  stderr: %s\n", r.out, r.err);
    static const char *const integrators[][2] = {{"rkmerson", "RK-Merson"}, {"rk4", "RK4"}, {"euler", "explicit Euler"},
                                                 {"semi-euler", "semi-explicit Euler"}, {"cvode-bdf", "CVODE BDF"},
                                                 {"cvode-adams", "CVODE Adams"}, {"ida", "IDA"}};
    for (size_t i = 0; i < sizeof integrators / sizeof *integrators; ++i) {
        snprintf(args, sizeof args, "run --t-final 0.1 --integrator %s --output none --plot none", integrators[i][0]);
        app_run(&r, args);
        if (!CHECK(r.code == 0 && has(r.out, integrators[i][1])))
            fprintf(stderr, "  %s: %d\n  stdout: %s\n  stderr: %s\n", integrators[i][0], r.code, r.out, r.err);
    }
    app_run(&r, "run builtin:chain:2 --t-final 0.1 --output none --plot none");
    CHECK(r.code == 0 && !has(r.out, "trajectory ") && !has(r.out, "plot "));

    /* constraints, quaternions and URDF models */
    app_run(&r, "run builtin:fourbar --t-final 0.5 --output none --plot none");
    CHECK(r.code == 0 && has(r.out, "1 constraint"));
    app_run(&r, "run builtin:tree:3 --t-final 0.2 --output none --plot none");
    CHECK(r.code == 0 && has(r.out, "nq = 28, nu = 21"));
    snprintf(args, sizeof args, "run '%s/arm7.urdf' --t-final 0.2 --q0 j2=0.5,j4=0.05 --output none --plot none", app_models);
    app_run(&r, args);
    CHECK(r.code == 0 && has(r.out, "URDF robot 'arm7'") && has(r.out, "not conserved"));
    snprintf(args, sizeof args, "run '%s/floating_limbs.urdf' --t-final 0.1 --q0 root=1:0:0:0:0:0:2 --output none --plot none",
             app_models);
    app_run(&r, args);
    CHECK(r.code == 0 && has(r.out, "nq = 15, nu = 14"));
    if (r.code) fprintf(stderr, "  stdout: %s\n  stderr: %s\n", r.out, r.err);

    /* info and bench */
    app_run(&r, "info builtin:chain:3");
    CHECK(r.code == 0 && has(r.out, "3 plus Ground") && has(r.out, "nq = 3, nu = 3") && has(r.out, "link3"));
    CHECK(has(r.out, "`-- link1 [joint1: pin (y)] q0, 1 kg"));
    snprintf(args, sizeof args, "info '%s/double_pendulum.urdf'", app_models);
    app_run(&r, args);
    CHECK(r.code == 0 && has(r.out, "world") && has(r.out, "lower [elbow: continuous] q1, 0.8 kg"));
    app_run(&r, "info builtin:tree:9");
    CHECK(r.code == 0 && has(r.out, "mbk info --all"));
    app_run(&r, "bench builtin:chain:3 --time 0.01");
    CHECK(r.code == 0 && has(r.out, "M^-1 v") && has(r.out, "calls/s"));

    /* help and version */
    app_run(&r, "--help");
    CHECK(r.code == 0);
    static const char *const documented[] = {"--t-final", "--integrator", "--accuracy", "--step", "--gravity",
                                             "--q0", "--u0", "--output", "--plot", "--interval", "--quiet",
                                             "--max-steps", "--max-urdf-bytes",
                                             "--floating-base", "builtin:chain:N", "builtin:tree:D",
                                             "builtin:fourbar", "Exit status"};
    for (size_t i = 0; i < sizeof documented / sizeof *documented; ++i) CHECK(has(r.out, documented[i]));
    /* docs/cli.md documents every option --help lists, and every exit status */
    {
        static char doc[1 << 17];
        char docpath[1200];
        snprintf(docpath, sizeof docpath, "%s/../../docs/cli.md", app_models); /* app_models: tests/urdf */
        app_slurp(docpath, doc, sizeof doc);
        CHECK(has(doc, "## Exit status"));
        for (int code = 0; code <= 4; ++code) {
            char row[16];
            snprintf(row, sizeof row, "\n| %d | ", code);
            if (!CHECK(has(doc, row))) fprintf(stderr, "  docs/cli.md: no row for exit status %d\n", code);
        }
        int options = 0;
        for (const char *p = r.out; (p = strstr(p, "--")) != NULL; ++p) {
            char opt[40];
            size_t n = 2;
            while (n < sizeof opt - 1 && (p[n] == '-' || (p[n] >= 'a' && p[n] <= 'z') || (p[n] >= '0' && p[n] <= '9')))
                ++n;
            if (n < 4) continue;
            memcpy(opt, p, n);
            opt[n] = '\0';
            options++;
            char quoted[48];
            snprintf(quoted, sizeof quoted, "`%s", opt);
            if (!CHECK(has(doc, quoted))) fprintf(stderr, "  docs/cli.md does not document %s\n", opt);
        }
        CHECK(options >= 20);
    }
    app_run(&r, "run --help");
    CHECK(r.code == 0 && has(r.out, "usage: mbk run"));
    app_run(&r, "version");
    CHECK(r.code == 0 && has(r.out, "mbk "));

    /* bad usage: exit 2, a message on stderr, nothing on stdout */
    app_run(&r, "");
    CHECK(r.code == 2 && has(r.err, "usage:"));
    expect_usage_error("frobnicate", "unknown command 'frobnicate'");
    expect_usage_error("run --bogus", "unknown option '--bogus'");
    expect_usage_error("run --t-final", "--t-final needs a finite number");
    expect_usage_error("run --t-final -1", "--t-final must be > 0");
    expect_usage_error("run --t-final nan", "--t-final needs a finite number");
    expect_usage_error("run --accuracy 2", "--accuracy must be in (0, 1)");
    expect_usage_error("run --integrator nope", "unknown integrator 'nope'");
    expect_usage_error("run --gravity 1,2", "--gravity needs X,Y,Z");
    expect_usage_error("run --q0 1,2", "--q0 needs 5 comma-separated numbers for this model (nq = 5), got 2");
    /* a value that is not finite is named, not miscounted ("needs 5 numbers" when 5 were given) */
    expect_usage_error("run --q0 1,2,nan,4,5", "--q0: value 3 ('nan') is not a finite number");
    expect_usage_error("run --u0 0,0,0,0,inf", "--u0: value 5 ('inf') is not a finite number");
    expect_usage_error("run --q0 0,0,0,0,-1e999", "value 5 ('-1e999') is not a finite number");
    expect_usage_error("run --q0 1,x,3,4,5", "--q0: value 2 ('x') is not a number");
    expect_usage_error("run --q0 joint2=nan", "joint 'joint2': value 1 ('nan') is not a finite number");
    expect_usage_error("run --gravity 0,0,nan", "--gravity: value 3 ('nan') is not a finite number");
    app_run(&r, "run --q0 1,2,nan,4,5");
    CHECK(!has(r.err, "needs 5"));
    /* settings the library's advice names have program flags */
    expect_usage_error("run --max-steps 0", "--max-steps needs a whole number");
    expect_usage_error("run --max-urdf-bytes -5", "--max-urdf-bytes needs a whole number");
    expect_usage_error("run --integrator ida --step 0.01", "--step: ida chooses its own steps");
    expect_usage_error("run --q0 knee=1", "no joint named 'knee'");
    expect_usage_error("run --q0 joint1=1:2", "joint 'joint1' has 1 q");
    expect_usage_error("run builtin:chain:0", "N must be an integer");
    expect_usage_error("run builtin:nothing", "unknown built-in model");
    expect_usage_error("run builtin:chain:2 builtin:chain:3", "more than one model");
    /* a word after an option whose number is optional is the model: said when two result */
    expect_usage_error("info --ground abc builtin:chain:2", "--ground takes an optional number, and 'abc' is not one");
    expect_usage_error("info --t-final 1", "unknown option '--t-final'");
    expect_usage_error("bench --time 0", "--time must be in (0, 60]");

    /* failures: exit 1 with the reason */
    app_run(&r, "run no/such/model.urdf");
    CHECK(r.code == 3 && has(r.err, "no/such/model.urdf") && has(r.err, "cannot open"));
    snprintf(path, sizeof path, "%s/bad.urdf", app_dir);
    FILE *fb = fopen(path, "w");
    if (fb) {
        fputs("<robot name=\"bad\">\n  <link name=\"a\"/>\n  <joint name=\"j\" type=\"hinge\"/>\n</robot>\n", fb);
        fclose(fb);
    }
    app_run(&r, "info bad.urdf");
    CHECK(r.code == 3 && has(r.err, "bad.urdf:3: <joint name=\"j\">: unknown joint type 'hinge'"));
    /* a model path that is not a regular file: refused at once (a FIFO used to block forever) */
    snprintf(path, sizeof path, "%s/pipe.urdf", app_dir);
    if (CHECK(mkfifo(path, 0600) == 0)) {
        app_run(&r, "run pipe.urdf --t-final 0.1 --output none --plot none");
        if (!CHECK(r.code == 3 && has(r.err, "pipe.urdf") && has(r.err, "it is a FIFO") &&
                   has(r.err, "expected a regular file")))
            fprintf(stderr, "  run pipe.urdf -> %d\n  stderr: %s\n", r.code, r.err);
        app_run(&r, "info pipe.urdf");
        CHECK(r.code == 3 && has(r.err, "it is a FIFO"));
    }
    app_run(&r, "run . --t-final 0.1 --output none --plot none");
    CHECK(r.code == 3 && has(r.err, "it is a directory") && !has(r.err, "read error"));
    app_run(&r, "run missing.urdf --t-final 0.1 --output none --plot none");
    CHECK(r.code == 3 && has(r.err, "missing.urdf") && has(r.err, "no such file"));
    /* a robot with nothing to move still runs */
    snprintf(path, sizeof path, "%s/fixed.urdf", app_dir);
    fb = fopen(path, "w");
    if (fb) {
        fputs("<robot name=\"statue\"><link name=\"base\"/></robot>\n", fb);
        fclose(fb);
    }
    app_run(&r, "run fixed.urdf --t-final 0.1 --output none --plot none");
    CHECK(r.code == 0 && has(r.out, "nq = 0, nu = 0") && has(r.out, "no state variables"));
    app_run(&r, "info bad.urdf");
    CHECK(r.code == 3 && has(r.err, "bad.urdf:3: <joint name=\"j\">: unknown joint type 'hinge'"));
    /* the step limit: the library names mbk_integrator_set_max_steps, the program its own flag */
    app_run(&r, "run --t-final 1 --interval 1 --max-steps 2 --output none --plot none");
    if (!CHECK(r.code == 1 && has(r.err, "took 2 steps") && has(r.err, "mbk: hint:") && has(r.err, "--max-steps N")))
        fprintf(stderr, "  --max-steps 2 -> %d\n  stderr: %s\n", r.code, r.err);
    app_run(&r, "run --t-final 1 --interval 1 --max-steps 1000000 --output none --plot none");
    CHECK(r.code == 0);
    /* the URDF size limit likewise */
    snprintf(args, sizeof args, "info '%s/arm7.urdf' --max-urdf-bytes 100", app_models);
    app_run(&r, args);
    if (!CHECK(r.code == 3 && has(r.err, "larger than the limit of 100 bytes") && has(r.err, "--max-urdf-bytes N")))
        fprintf(stderr, "  --max-urdf-bytes 100 -> %d\n  stderr: %s\n", r.code, r.err);
    snprintf(args, sizeof args, "info '%s/arm7.urdf' --max-urdf-bytes 100000", app_models);
    app_run(&r, args);
    CHECK(r.code == 0);
    /* 1: the simulation failed -- and stays 1 when the outputs cannot be written either
       (the first failure decides); what was simulated is still written */
    app_run(&r, "run --t-final 1 --interval 0.5 --max-steps 2 --output out/partial.csv --plot none");
    CHECK(r.code == 1 && has(r.out, "simulation stopped early") && has(r.err, "the simulation failed at t ="));
    snprintf(path, sizeof path, "%s/out/partial.csv", app_dir);
    CHECK(count_lines(path, first, sizeof first) == 2); /* header + t = 0 */
    app_run(&r, "run --t-final 1 --interval 1 --max-steps 2 --output /nonexistent-dir/x/y.csv --plot none");
    CHECK(r.code == 1 && has(r.err, "cannot write /nonexistent-dir/x/y.csv"));
    /* 3 for every way a model fails to load, on each command */
    static const char *const cmds[] = {"run", "info", "bench"};
    for (int c = 0; c < 3; ++c) {
        snprintf(args, sizeof args, "%s missing.urdf --output none --plot none", cmds[c]);
        if (c) snprintf(args, sizeof args, "%s missing.urdf", cmds[c]);
        app_run(&r, args);
        if (!CHECK(r.code == 3 && has(r.err, "no such file")))
            fprintf(stderr, "  mbk %s -> %d\n  stderr: %s\n", args, r.code, r.err);
    }
    /* 4: standard output that cannot be written */
    if (access("/dev/full", W_OK) == 0) {
        int code = app_wait(app_start("info builtin:chain:3", "/dev/full", "err.txt"));
        app_slurp("err.txt", r.err, sizeof r.err);
        if (!CHECK(code == 4 && has(r.err, "cannot write to standard output")))
            fprintf(stderr, "  info >/dev/full -> %d\n  stderr: %s\n", code, r.err);
    }
    /* 4: an output file that cannot be written (the run itself succeeded) */
    app_run(&r, "run builtin:chain:2 --t-final 0.1 --output /nonexistent-dir/x/y.csv --plot none");
    CHECK(r.code == 4 && has(r.err, "cannot write /nonexistent-dir/x/y.csv"));

    app_cleanup();
    return mbk_test_finish();
}
