/* The mbk program on robot descriptions (issue 20), run as a user would: the
 * loader's warnings on stderr (a count and the first few; all with --verbose;
 * none with --quiet), every error at once, the inertia flags (--strict-inertia,
 * --min-mass, --min-inertia, --balance-inertia), --friction, --ground, the
 * default pose clamped into the joint limits, the energy drift line when E(0)
 * is 0, and --floating-base on a robot rooted at world. The program is found
 * beside this test in the build tree (../apps/mbk). */
#define _POSIX_C_SOURCE 200809L
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include "mbk_test.h"
#include "app_runner.h"

static int has(const char *s, const char *sub) { return strstr(s, sub) != NULL; }

static void show(const char *args, const app_result *r)
{
    fprintf(stderr, "  mbk %s -> %d\n  stdout: %s\n  stderr: %s\n", args, r->code, r->out, r->err);
}

static void write_file(const char *name, const char *text)
{
    char path[512];
    snprintf(path, sizeof path, "%s/%s", app_dir, name);
    FILE *f = fopen(path, "w");
    if (CHECK(f != NULL)) {
        fputs(text, f);
        fclose(f);
    }
}

/* The numbers of the CSV's row k (0: header; -1: the last). */
static int csv_row(const char *path, int k, double *v, int cap)
{
    FILE *f = fopen(path, "r");
    if (!f) return -1;
    static char line[1 << 16], last[1 << 16];
    int row = 0, n = -1;
    last[0] = '\0';
    while (fgets(line, sizeof line, f)) {
        if (row == k) {
            strcpy(last, line);
            break;
        }
        strcpy(last, line);
        row++;
    }
    fclose(f);
    if (k >= 0 && row != k) return -1;
    n = 0;
    for (char *p = last; *p && n < cap;) {
        char *end;
        v[n++] = strtod(p, &end);
        p = *end == ',' ? end + 1 : end;
        if (*end != ',') break;
    }
    return n;
}

/* Five links on pins: inertias breaking the triangle inequality by 4.8 % .. 20 %, friction
   on every joint, and the first two joints limited to [0.2, 1] (q = 0 lies outside). */
static void write_five(void)
{
    char text[8192];
    size_t n = (size_t)snprintf(text, sizeof text, "<robot name=\"five\">\n<link name=\"world\"/>\n");
    for (int i = 0; i < 5; ++i) {
        char parent[16];
        if (i) snprintf(parent, sizeof parent, "l%d", i - 1);
        else snprintf(parent, sizeof parent, "world");
        n += (size_t)snprintf(text + n, sizeof text - n,
                              "<link name=\"l%d\"><inertial><mass value=\"1\"/><inertia ixx=\"1\" iyy=\"1\" izz=\"2.%d\" "
                              "ixy=\"0\" ixz=\"0\" iyz=\"0\"/></inertial></link>\n"
                              "<joint name=\"j%d\" type=\"revolute\"><parent link=\"%s\"/><child link=\"l%d\"/>"
                              "<origin xyz=\"0 0 -0.5\"/><axis xyz=\"0 1 0\"/><limit lower=\"%s\" upper=\"%s\"/>"
                              "<dynamics friction=\"0.1\"/></joint>\n",
                              i, i + 1, i, parent, i, i < 2 ? "0.2" : "-1", "1");
    }
    snprintf(text + n, sizeof text - n, "</robot>\n");
    write_file("five.urdf", text);
}

int main(int argc, char **argv)
{
    (void)argc;
    if (app_setup(argv[0], "app-robots") != 0) return mbk_test_finish();
    write_five();

    app_result r;
    char args[2048], path[512];
    double v[64];
    const char *quiet_out = "--t-final 0.2 --output none --plot none";

    /* warnings: a count and the first three; all with --verbose; none with --quiet */
    snprintf(args, sizeof args, "run five.urdf %s", quiet_out);
    app_run(&r, args);
    if (!CHECK(r.code == 0) | !CHECK(has(r.err, "mbk: the model loaded with 6 warnings (--verbose shows all")) |
        !CHECK(has(r.err, "five.urdf:3: <inertia> in <link name=\"l0\">: the principal moments 1, 1, 2.1 break")) |
        !CHECK(has(r.err, "five.urdf:4: <joint name=\"j0\">: friction is ignored, here and on 4 more joints")) |
        !CHECK(has(r.err, "five.urdf:5: <inertia> in <link name=\"l1\">")) | !CHECK(has(r.err, "... and 3 more")) |
        !CHECK(!has(r.err, "<link name=\"l4\">")) | !CHECK(has(r.err, "--balance-inertia")))
        show(args, &r);
    snprintf(args, sizeof args, "run five.urdf %s --verbose", quiet_out);
    app_run(&r, args);
    if (!CHECK(r.code == 0) | !CHECK(has(r.err, "6 warnings:")) |
        !CHECK(has(r.err, "five.urdf:11: <inertia> in <link name=\"l4\">: the principal moments 1, 1, 2.5")) |
        !CHECK(has(r.err, "short by 20% of the largest")) | !CHECK(!has(r.err, "  ... and")))
        show(args, &r);
    snprintf(args, sizeof args, "run five.urdf %s --quiet", quiet_out);
    app_run(&r, args);
    if (!CHECK(r.code == 0 && r.err[0] == '\0')) show(args, &r);
    app_run(&r, "info five.urdf");
    CHECK(r.code == 0 && has(r.err, "6 warnings") && has(r.out, "l4 [j4: revolute]"));
    app_run(&r, "info five.urdf --quiet");
    CHECK(r.code == 0 && r.err[0] == '\0');
    app_run(&r, "info five.urdf --balance-inertia --friction --quiet");
    CHECK(r.code == 0 && r.err[0] == '\0');
    app_run(&r, "info five.urdf --balance-inertia --friction");
    if (!CHECK(r.code == 0 && has(r.err, "5 warnings") && has(r.err, "options.balance_inertia replaced the principal")))
        show("info five.urdf --balance-inertia --friction", &r);
    /* models that load cleanly print nothing on stderr */
    snprintf(args, sizeof args, "run '%s/validation/point_mass.urdf' %s", app_models, quiet_out);
    app_run(&r, args);
    CHECK(r.code == 0 && r.err[0] == '\0');

    /* the default pose: q = 0 lies outside j0's and j1's limits [0.2, 1]; they move to 0.2 */
    snprintf(path, sizeof path, "%s/five.csv", app_dir);
    app_run(&r, "run five.urdf --t-final 0.01 --output five.csv --plot none --quiet");
    if (!CHECK(r.code == 0) | !CHECK(has(r.out, "  start        joints moved into their limits: j0 0 -> 0.2, j1 0 -> 0.2\n")))
        show("run five.urdf", &r);
    CHECK(csv_row(path, 1, v, 64) > 6 && v[0] == 0 && v[1] == 0.2 && v[2] == 0.2 && v[3] == 0 && v[4] == 0);
    /* a joint the user places is theirs */
    app_run(&r, "run five.urdf --t-final 0.01 --output five.csv --plot none --quiet --q0 j0=0.5");
    CHECK(r.code == 0 && csv_row(path, 1, v, 64) > 6 && v[1] == 0.5 && v[2] == 0.2);
    /* inside the limits: nothing said */
    snprintf(args, sizeof args, "run '%s/arm7.urdf' %s", app_models, quiet_out);
    app_run(&r, args);
    CHECK(r.code == 0 && !has(r.out, "start"));

    /* the drift line: no relative drift when E(0) is 0 (a free body at rest at the origin) */
    write_file("single.urdf", "<robot name=\"single\"><link name=\"body\"><inertial><mass value=\"2\"/><inertia "
                              "ixx=\"0.1\" iyy=\"0.1\" izz=\"0.1\" ixy=\"0\" ixz=\"0\" iyz=\"0\"/></inertial></link></robot>\n");
    app_run(&r, "run single.urdf --floating-base --t-final 0.5 --output none --plot none");
    if (!CHECK(r.code == 0) | !CHECK(has(r.out, "E(0) = 0 J")) | !CHECK(!has(r.out, "relative)")) |
        !CHECK(has(r.out, "(no relative drift: E(0) is too near 0 to divide by)")))
        show("run single.urdf --floating-base", &r);
    snprintf(args, sizeof args, "run '%s/double_pendulum.urdf' %s", app_models, quiet_out);
    app_run(&r, args);
    CHECK(r.code == 0 && has(r.out, "relative), max |E - E(0)|") && !has(r.out, "no relative drift"));

    /* --floating-base on a robot rooted at world: no effect, and said so */
    snprintf(args, sizeof args, "run '%s/double_pendulum.urdf' --floating-base %s", app_models, quiet_out);
    app_run(&r, args);
    if (!CHECK(r.code == 0) | !CHECK(has(r.out, "(--floating-base had no effect: the root link is 'world')")) |
        !CHECK(!has(r.out, ", floating base")) | !CHECK(has(r.out, "nq = 2, nu = 2")) |
        !CHECK(has(r.err, "options.floating_base has no effect")))
        show(args, &r);

    /* refused: every problem at once, with the flag that helps */
    write_file("two_fingers.urdf",
               "<robot name=\"g\"><link name=\"world\"/>\n"
               "<link name=\"palm\"><inertial><mass value=\"1\"/><inertia ixx=\"0.01\" iyy=\"0.01\" izz=\"0.01\" "
               "ixy=\"0\" ixz=\"0\" iyz=\"0\"/></inertial></link>\n"
               "<joint name=\"wrist\" type=\"revolute\"><parent link=\"world\"/><child link=\"palm\"/></joint>\n"
               "<link name=\"left\"/>\n<joint name=\"left_slide\" type=\"prismatic\"><parent link=\"palm\"/>"
               "<child link=\"left\"/></joint>\n"
               "<link name=\"right\"/>\n<joint name=\"right_slide\" type=\"prismatic\"><parent link=\"palm\"/>"
               "<child link=\"right\"/></joint>\n</robot>\n");
    app_run(&r, "run two_fingers.urdf --t-final 0.1 --output none --plot none");
    if (!CHECK(r.code == 3) | !CHECK(has(r.err, "mbk: cannot load the model:\n")) |
        !CHECK(has(r.err, "two_fingers.urdf:5: <joint name=\"left_slide\">: the joint moves only links without mass")) |
        !CHECK(has(r.err, "two_fingers.urdf:7: <joint name=\"right_slide\">")) | !CHECK(has(r.err, "(2 problems)")) |
        !CHECK(has(r.err, "--min-mass")) | !CHECK(r.out[0] == '\0'))
        show("run two_fingers.urdf", &r);
    app_run(&r, "run two_fingers.urdf --min-mass --t-final 0.1 --output none --plot none");
    if (!CHECK(r.code == 0) | !CHECK(has(r.err, "2 warnings")) |
        !CHECK(has(r.err, "<link name=\"left\">: mass 0 kg raised to options.min_mass = 0.01 kg")))
        show("run two_fingers.urdf --min-mass", &r);
    app_run(&r, "run two_fingers.urdf --min-mass 0.05 --min-inertia 1e-5 --t-final 0.1 --output none --plot none --verbose");
    CHECK(r.code == 0 && has(r.err, "min_mass = 0.05 kg") && has(r.err, "min_inertia = 1e-05"));
    app_run(&r, "run two_fingers.urdf --min-mass 0");
    CHECK(r.code == 2 && has(r.err, "--min-mass needs a value > 0"));

    /* --strict-inertia refuses what loads with a warning; --balance-inertia repairs it */
    snprintf(args, sizeof args, "run '%s/validation/triangle.urdf' %s --strict-inertia", app_models, quiet_out);
    app_run(&r, args);
    CHECK(r.code == 3 && has(r.err, "triangle.urdf:12: <inertia> in <link name=\"plate\">") &&
          has(r.err, "(options.strict_inertia)"));
    snprintf(args, sizeof args, "run '%s/validation/triangle.urdf' %s --balance-inertia", app_models, quiet_out);
    app_run(&r, args);
    CHECK(r.code == 0 && has(r.err, "1 warning:") && has(r.err, "nearest realizable ones, 1.16667, 1.16667, 2.33333"));

    /* --friction: friction elements, and the energy they took */
    snprintf(args, sizeof args, "run five.urdf %s --friction --quiet", quiet_out);
    app_run(&r, args);
    if (!CHECK(r.code == 0) | !CHECK(has(r.out, "J dissipated by 5 joint friction elements")))
        show(args, &r);

    /* --ground: the quadruped starts standing and stays at the height its feet give */
    snprintf(path, sizeof path, "%s/quad.csv", app_dir);
    snprintf(args, sizeof args, "run '%s/quadruped.urdf' --floating-base --ground --t-final 1 --output quad.csv "
                                "--plot none", app_models);
    app_run(&r, args);
    if (!CHECK(r.code == 0) | !CHECK(has(r.out, "the robot stands on the ground: moved 0.355 m up, its lowest contact point touches it")) |
        !CHECK(has(r.err, "mesh takes no part in ground contact")))
        show(args, &r);
    CHECK(csv_row(path, -1, v, 64) > 8 && fabs(v[7] - 0.355) < 2e-3); /* t, q0..q6: the base height */
    snprintf(args, sizeof args, "run '%s/quadruped.urdf' --floating-base --ground -0.5 --t-final 0.1 --output quad.csv "
                                "--plot none --quiet", app_models);
    app_run(&r, args);
    CHECK(r.code == 0 && has(r.out, "moved 0.145 m down"));
    CHECK(csv_row(path, 1, v, 64) > 8 && fabs(v[7] - (0.355 - 0.5)) < 1e-12);

    app_cleanup();
    return mbk_test_finish();
}
