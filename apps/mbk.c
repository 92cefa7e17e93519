/* The mbk command-line program.
 *
 *   mbk run [--t-final T] [--step H] [--stiffness K] [--damping C] [--output FILE]
 *   mbk version | --help
 *
 * `mbk run` with no model simulates the built-in model (a damped oscillator
 * written as a custom subsystem), prints a summary that compares the result
 * with the analytic solution, and writes the trajectory as CSV. */
#define _POSIX_C_SOURCE 200809L
#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>

#include "oscillator.h"

typedef struct run_options {
    double t_final;     /* simulated seconds */
    double step;        /* RK4 step */
    double stiffness;   /* N/m */
    double damping;     /* N s/m */
    const char *output; /* CSV path */
} run_options;

static void usage(FILE *f)
{
    fprintf(f,
            "usage: mbk run [options]     simulate the built-in model and write its trajectory\n"
            "       mbk version           print the library version\n"
            "       mbk --help            this text\n"
            "\n"
            "run options:\n"
            "  --t-final T     simulated time in seconds (default 10)\n"
            "  --step H        fixed RK4 step in seconds (default 1e-3)\n"
            "  --stiffness K   spring stiffness in N/m (default 4*pi^2: 1 Hz for 1 kg)\n"
            "  --damping C     damping in N s/m (default 0.2)\n"
            "  --output FILE   trajectory CSV (default mbk-out/trajectory.csv)\n"
            "\n"
            "The built-in model is a 1 kg damped oscillator written as a custom mbk\n"
            "subsystem; the summary compares the simulation with the exact solution.\n");
}

/* Parse a finite number for option `name`; 0 on success. */
static int parse_number(const char *name, const char *text, double *out)
{
    char *end = NULL;
    errno = 0;
    double v = text ? strtod(text, &end) : NAN;
    if (!text || errno || end == text || *end || !isfinite(v)) {
        fprintf(stderr, "mbk: %s needs a finite number, got '%s'\n", name, text ? text : "");
        return -1;
    }
    *out = v;
    return 0;
}

static int parse_run_options(int argc, char **argv, run_options *o)
{
    *o = (run_options){10.0, 1e-3, 39.47841760435743, 0.2, "mbk-out/trajectory.csv"};
    for (int i = 0; i < argc; ++i) {
        const char *a = argv[i], *v = i + 1 < argc ? argv[i + 1] : NULL;
        int rc = 0;
        if (!strcmp(a, "--t-final")) rc = parse_number(a, v, &o->t_final), ++i;
        else if (!strcmp(a, "--step")) rc = parse_number(a, v, &o->step), ++i;
        else if (!strcmp(a, "--stiffness")) rc = parse_number(a, v, &o->stiffness), ++i;
        else if (!strcmp(a, "--damping")) rc = parse_number(a, v, &o->damping), ++i;
        else if (!strcmp(a, "--output") && v) o->output = v, ++i;
        else {
            fprintf(stderr, "mbk run: unknown or incomplete option '%s' (see mbk --help)\n", a);
            return -1;
        }
        if (rc) return -1;
    }
    if (o->t_final <= 0 || o->step <= 0 || o->stiffness <= 0 || o->damping < 0 ||
        o->damping >= 2.0 * sqrt(o->stiffness)) {
        fprintf(stderr, "mbk run: need t-final > 0, step > 0, stiffness > 0 and "
                        "0 <= damping < 2*sqrt(stiffness) (underdamped)\n");
        return -1;
    }
    return 0;
}

/* Create the directory part of a path (one level), so the default output works. */
static void make_parent_dir(const char *path)
{
    const char *slash = strrchr(path, '/');
    if (!slash || slash == path) return;
    char dir[1024];
    size_t n = (size_t)(slash - path);
    if (n >= sizeof dir) return;
    memcpy(dir, path, n);
    dir[n] = '\0';
    mkdir(dir, 0777);
}

/* One classical RK4 step of y' = f(t, y) through the System's ODE view. */
static int rk4_step(const mbk_system *sys, mbk_state *s, double t, double h, double *y, int ny,
                    double *k)
{
    double *k1 = k, *k2 = k + ny, *k3 = k + 2 * ny, *k4 = k + 3 * ny, *tmp = k + 4 * ny;
    int rc = mbk_system_calc_ydot(sys, s, t, y, k1);
    for (int i = 0; rc == 0 && i < ny; ++i) tmp[i] = y[i] + 0.5 * h * k1[i];
    if (rc == 0) rc = mbk_system_calc_ydot(sys, s, t + 0.5 * h, tmp, k2);
    for (int i = 0; rc == 0 && i < ny; ++i) tmp[i] = y[i] + 0.5 * h * k2[i];
    if (rc == 0) rc = mbk_system_calc_ydot(sys, s, t + 0.5 * h, tmp, k3);
    for (int i = 0; rc == 0 && i < ny; ++i) tmp[i] = y[i] + h * k3[i];
    if (rc == 0) rc = mbk_system_calc_ydot(sys, s, t + h, tmp, k4);
    for (int i = 0; rc == 0 && i < ny; ++i) y[i] += h / 6.0 * (k1[i] + 2 * k2[i] + 2 * k3[i] + k4[i]);
    return rc;
}

static int fail(const char *what)
{
    fprintf(stderr, "mbk: %s: %s (%s)\n", what, mbk_last_error(), mbk_status_name(mbk_last_status()));
    return 1;
}

static int cmd_run(const run_options *o)
{
    const double mass = 1.0;
    mbk_system *sys = mbk_system_create("damped oscillator");
    int sub = oscillator_add(sys, mass, o->stiffness, o->damping);
    mbk_state *s = mbk_state_create();
    if (sub < 0 || !s || mbk_system_realize_topology(sys) || mbk_state_init(s, sys) ||
        mbk_system_realize(sys, s, MBK_STAGE_REPORT))
        return fail("setting up the model");

    int ny = mbk_state_get_ny(s);
    double y[2], work[5 * 2], e0, ke, pe;
    memcpy(y, mbk_state_get_y(s), sizeof y);
    mbk_system_calc_energy(sys, s, &ke, &pe);
    e0 = ke + pe;

    make_parent_dir(o->output);
    FILE *csv = fopen(o->output, "w");
    if (!csv) {
        fprintf(stderr, "mbk: cannot write %s: %s\n", o->output, strerror(errno));
        return 1;
    }
    fprintf(csv, "t,q0,u0,energy,q0_exact,u0_exact\n");

    long steps = (long)ceil(o->t_final / o->step - 1e-9), allocs0 = mbk_get_allocation_count();
    double max_err = 0.0, t = 0.0, xe = y[0], ve = y[1];
    clock_t c0 = clock();
    for (long n = 0; n <= steps; ++n) {
        oscillator_exact(mass, o->stiffness, o->damping, 1.0, 0.0, t, &xe, &ve);
        max_err = fmax(max_err, fabs(y[0] - xe));
        if (mbk_system_realize(sys, s, MBK_STAGE_VELOCITY) || mbk_system_calc_energy(sys, s, &ke, &pe))
            return fail("computing energy");
        fprintf(csv, "%.9g,%.17g,%.17g,%.17g,%.17g,%.17g\n", t, y[0], y[1], ke + pe, xe, ve);
        if (n == steps) break;
        double h = fmin(o->step, o->t_final - t);
        if (rk4_step(sys, s, t, h, y, ny, work)) return fail("integrating");
        t = n + 1 == steps ? o->t_final : t + h;
    }
    double wall = (double)(clock() - c0) / CLOCKS_PER_SEC;
    long allocs = mbk_get_allocation_count() - allocs0;
    fclose(csv);

    double e_exact = 0.5 * mass * ve * ve + 0.5 * o->stiffness * xe * xe;
    printf("mbk %s: simulated the built-in model\n", mbk_version());
    printf("  model        %s: 1 kg mass on a spring, k = %g N/m, c = %g N s/m (custom subsystem)\n",
           mbk_system_get_name(sys), o->stiffness, o->damping);
    printf("  state        nq = %d, nu = %d, nz = %d\n", mbk_state_get_nq(s), mbk_state_get_nu(s),
           mbk_state_get_nz(s));
    printf("  integrator   RK4, fixed step %g s, %ld steps to t = %g s\n", o->step, steps, t);
    printf("  final        x = %.12f m, v = %.12f m/s\n", y[0], y[1]);
    printf("  exact        x = %.12f m, v = %.12f m/s\n", xe, ve);
    printf("  max |x - x_exact| over the run: %.3e m\n", max_err);
    printf("  energy       %.9f J -> %.9f J (exact %.9f J)\n", e0, ke + pe, e_exact);
    printf("  wall time    %.3f s (%.0f x real time); heap allocations while stepping: %ld\n", wall,
           wall > 0 ? t / wall : INFINITY, allocs);
    printf("  output       %s\n", o->output);
    mbk_state_destroy(s);
    mbk_system_destroy(sys);
    return 0;
}

int main(int argc, char **argv)
{
    if (argc < 2 || !strcmp(argv[1], "--help") || !strcmp(argv[1], "-h")) {
        usage(argc < 2 ? stderr : stdout);
        return argc < 2 ? 2 : 0;
    }
    if (!strcmp(argv[1], "version")) {
        printf("mbk %s\n", mbk_version());
        return 0;
    }
    if (!strcmp(argv[1], "run")) {
        run_options o;
        if (parse_run_options(argc - 2, argv + 2, &o)) return 2;
        return cmd_run(&o);
    }
    fprintf(stderr, "mbk: unknown command '%s' (see mbk --help)\n", argv[1]);
    return 2;
}
