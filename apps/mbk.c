/* The mbk command-line program: simulate a model, describe it, time it.
 *
 *   mbk run [MODEL] [options]   simulate, print a summary, write CSV and SVG
 *   mbk info MODEL              bodies, joints, dofs, mass, the tree as text
 *   mbk bench MODEL             time the realize cycle and the operators
 *   mbk version | --help
 *
 * MODEL is a URDF file or a built-in (builtin:chain:N, builtin:tree:DEPTH,
 * builtin:fourbar); `mbk run` with no MODEL simulates builtin:chain:5, a
 * 5-link 3-D pendulum. Exit codes: 0 success, 1 failure, 2 bad usage. */
#define _POSIX_C_SOURCE 200809L
#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "app.h"

static void usage(FILE *f)
{
    fprintf(f,
            "usage: mbk run [MODEL] [options]   simulate MODEL, print a summary, write its trajectory\n"
            "       mbk info [MODEL] [--all]    bodies, joints, dofs, mass and the tree as text\n"
            "       mbk bench [MODEL] [--time S] time the realize cycle and the matter operators\n"
            "       mbk sweep [MODEL] [options] many runs with varied parameters (mbk sweep --help)\n"
            "       mbk version                 print the library version\n"
            "       mbk --help                  this text\n"
            "\n"
            "MODEL (default builtin:chain:5, a 5-link 3-D pendulum under gravity):\n");
    app_model_list_builtins(f);
    fprintf(f,
            "\n"
            "run options:\n"
            "  --t-final T          simulated time in seconds (default 10)\n"
            "  --integrator NAME    %s\n"
            "  --accuracy A         relative accuracy of the error-controlled integrators, 0 < A < 1\n"
            "                       (default 1e-6)\n"
            "  --step H             fixed step in seconds (rk4, euler, semi-euler; rkmerson too); without it\n"
            "                       the steps are error-controlled\n"
            "  --gravity X,Y,Z      gravity in m/s^2 (default: the model's, (0,0,-9.81) for most)\n"
            "  --q0 LIST            initial q: nq comma-separated numbers, or JOINT=V[:V...] pairs\n"
            "                       (e.g. --q0 shoulder=0.5,elbow=-1); a free joint takes 7 numbers\n"
            "  --u0 LIST            initial u, the same way\n"
            "  --interval DT        time between output samples (default t-final/1000)\n"
            "  --output FILE        trajectory CSV: t,q0..,u0..,energy,kinetic,potential\n"
            "                       (default mbk-out/trajectory.csv; 'none' writes nothing)\n"
            "  --plot FILE          SVG plot of q and energy against time (default mbk-out/plot.svg;\n"
            "                       'none' writes nothing)\n"
            "  --quiet              no progress line (it appears on stderr only when stderr is a\n"
            "                       terminal and the run takes more than a second)\n"
            "URDF options (run, info, bench):\n"
            "  --floating-base      mount the root link on a free joint instead of welding it\n"
            "  --no-limits          do not turn joint limits into stops\n"
            "  --no-damping         do not turn joint damping into dampers\n"
            "\n"
            "The summary gives the model size, the integrator's statistics, the energy drift\n"
            "(E(t) - E(0); exact energy conservation is expected only without dampers and stops),\n"
            "the wall time and the real-time factor (simulated seconds per wall-clock second).\n"
            "\n"
            "Exit status: 0 success; 1 the model could not be loaded, the simulation failed or an\n"
            "output could not be written; 2 bad usage (unknown command or option, bad value).\n",
            app_integrator_names());
}

typedef struct run_options {
    const char *model;
    double t_final, accuracy, step, interval;
    const char *integrator;
    bool have_gravity;
    mbk_vec3 gravity;
    const char *q0, *u0;
    const char *output, *plot;
    bool quiet, all;
    double bench_time;
    app_model_options mo;
} run_options;

static int usage_error(const char *cmd, const char *fmt, const char *arg)
{
    fprintf(stderr, "mbk %s: ", cmd);
    fprintf(stderr, fmt, arg);
    fprintf(stderr, " (see mbk --help)\n");
    return APP_USAGE;
}

static int parse_number(const char *cmd, const char *name, const char *text, double *out)
{
    char *end = NULL;
    errno = 0;
    double v = text ? strtod(text, &end) : NAN;
    if (!text || errno || end == text || *end || !isfinite(v)) {
        fprintf(stderr, "mbk %s: %s needs a finite number, got '%s' (see mbk --help)\n", cmd, name, text ? text : "");
        return -1;
    }
    *out = v;
    return 0;
}

/* Comma-separated finite numbers into out (at most cap); returns the count or -1. */
static int parse_list(const char *text, double *out, int cap)
{
    int n = 0;
    const char *p = text;
    while (*p) {
        char *end = NULL;
        errno = 0;
        double v = strtod(p, &end);
        if (errno || end == p || !isfinite(v) || n == cap) return -1;
        out[n++] = v;
        p = end;
        if (*p == ',') {
            ++p;
            if (!*p) return -1;
        } else if (*p) {
            return -1;
        }
    }
    return n;
}

static int parse_options(const char *cmd, int argc, char **argv, run_options *o)
{
    memset(o, 0, sizeof *o);
    o->t_final = 10.0, o->accuracy = 1e-6, o->integrator = app_integrator_default(), o->bench_time = 0.25;
    o->output = "mbk-out/trajectory.csv", o->plot = "mbk-out/plot.svg";
    bool run = !strcmp(cmd, "run"), info = !strcmp(cmd, "info"), bench = !strcmp(cmd, "bench");
    for (int i = 0; i < argc; ++i) {
        const char *a = argv[i], *v = i + 1 < argc ? argv[i + 1] : NULL;
        int rc = 0;
        bool takes = true;
        if (a[0] != '-' || !strcmp(a, "-")) {
            if (o->model) return usage_error(cmd, "more than one model given ('%s')", a);
            o->model = a;
            continue;
        }
        if (!strcmp(a, "--floating-base")) o->mo.floating_base = true, takes = false;
        else if (!strcmp(a, "--no-limits")) o->mo.no_limits = true, takes = false;
        else if (!strcmp(a, "--no-damping")) o->mo.no_damping = true, takes = false;
        else if (info && !strcmp(a, "--all")) o->all = true, takes = false;
        else if (bench && !strcmp(a, "--time")) rc = parse_number(cmd, a, v, &o->bench_time);
        else if (run && !strcmp(a, "--quiet")) o->quiet = true, takes = false;
        else if (run && !strcmp(a, "--t-final")) rc = parse_number(cmd, a, v, &o->t_final);
        else if (run && !strcmp(a, "--accuracy")) rc = parse_number(cmd, a, v, &o->accuracy);
        else if (run && !strcmp(a, "--step")) rc = parse_number(cmd, a, v, &o->step);
        else if (run && !strcmp(a, "--interval")) rc = parse_number(cmd, a, v, &o->interval);
        else if (run && !strcmp(a, "--integrator")) {
            if (!v) return usage_error(cmd, "%s needs a name", a);
            o->integrator = v;
        } else if (run && !strcmp(a, "--gravity")) {
            double g[3];
            if (!v || parse_list(v, g, 3) != 3) return usage_error(cmd, "--gravity needs X,Y,Z, got '%s'", v ? v : "");
            o->have_gravity = true, o->gravity = mbk_vec3_make(g[0], g[1], g[2]);
        } else if (run && (!strcmp(a, "--q0") || !strcmp(a, "--u0"))) {
            if (!v) return usage_error(cmd, "%s needs a list", a);
            if (a[2] == 'q') o->q0 = v;
            else o->u0 = v;
        } else if (run && (!strcmp(a, "--output") || !strcmp(a, "--plot"))) {
            if (!v || !*v) return usage_error(cmd, "%s needs a file name", a);
            if (a[2] == 'o') o->output = v;
            else o->plot = v;
        } else {
            return usage_error(cmd, "unknown option '%s'", a);
        }
        if (rc) return APP_USAGE;
        if (takes) ++i;
    }
    if (run) {
        if (!(o->t_final > 0)) return usage_error(cmd, "%s", "--t-final must be > 0");
        if (!(o->accuracy > 0 && o->accuracy < 1)) return usage_error(cmd, "%s", "--accuracy must be in (0, 1)");
        if (o->step < 0 || o->step > o->t_final) return usage_error(cmd, "%s", "--step must be in (0, t-final]");
        if (o->interval < 0 || o->interval > o->t_final)
            return usage_error(cmd, "%s", "--interval must be in (0, t-final]");
        if (!app_integrator_known(o->integrator))
            return usage_error(cmd, "unknown integrator '%s'", o->integrator);
        if (o->interval == 0) o->interval = o->t_final / 1000;
        if ((o->t_final / o->interval) > 1e7) return usage_error(cmd, "%s", "--interval gives more than 1e7 samples");
    }
    if (bench && !(o->bench_time > 0 && o->bench_time <= 60)) return usage_error(cmd, "%s", "--time must be in (0, 60]");
    return APP_OK;
}

/* --q0 / --u0: either n plain numbers, or JOINT=V[:V...] pairs. */
static int apply_list(const app_model *m, mbk_state *s, const char *text, bool is_q)
{
    const char *what = is_q ? "--q0" : "--u0";
    int n = is_q ? mbk_state_get_nq(s) : mbk_state_get_nu(s);
    double *dst = is_q ? mbk_state_upd_q(s) : mbk_state_upd_u(s);
    if (!strchr(text, '=')) {
        double *v = malloc(sizeof(double) * ((size_t)n + 1));
        int k = v ? parse_list(text, v, n + 1) : -1;
        if (k != n) {
            fprintf(stderr, "mbk run: %s needs %d comma-separated numbers for this model (or JOINT=V pairs)%s\n", what, n,
                    k > n || k < 0 ? "" : ", got fewer");
            free(v);
            return APP_USAGE;
        }
        memcpy(dst, v, sizeof(double) * (size_t)n);
        free(v);
        return APP_OK;
    }
    char *copy = malloc(strlen(text) + 1);
    if (!copy) return APP_FAIL;
    strcpy(copy, text);
    int status = APP_OK;
    const mbk_matter *mt = mbk_multibody_get_matter(m->sys);
    for (char *save = NULL, *item = strtok_r(copy, ",", &save); item; item = strtok_r(NULL, ",", &save)) {
        char *eq = strchr(item, '=');
        if (!eq) {
            fprintf(stderr, "mbk run: %s: '%s' is not JOINT=VALUE\n", what, item);
            status = APP_USAGE;
            break;
        }
        *eq = '\0';
        int nq = 0, start = app_model_find_joint_q(m, s, item, &nq);
        if (start >= 0 && !is_q) {
            int b = 1;
            while (b < m->n_bodies && strcmp(m->joint_name[b], item) && strcmp(m->body_name[b], item)) ++b;
            start = mbk_matter_get_body_u_start(mt, s, b), nq = mbk_matter_get_body_num_u(mt, s, b);
        }
        if (start < 0) {
            fprintf(stderr, "mbk run: %s: the model has no joint named '%s' (mbk info lists them)\n", what, item);
            status = APP_USAGE;
            break;
        }
        for (char *p = eq + 1; *p; ++p)
            if (*p == ':') *p = ',';
        double v[8];
        int k = parse_list(eq + 1, v, 8);
        if (k != nq) {
            fprintf(stderr, "mbk run: %s: joint '%s' has %d %s; give %d number%s separated by ':'\n", what, item, nq,
                    is_q ? "q" : "u", nq, nq == 1 ? "" : "s");
            status = APP_USAGE;
            break;
        }
        memcpy(dst + start, v, sizeof(double) * (size_t)k);
    }
    free(copy);
    return status;
}

static int sample(app_series *ser, const mbk_system *sys, const mbk_state *s)
{
    double ke = 0, pe = 0;
    if (mbk_system_calc_energy(sys, s, &ke, &pe) < 0) return app_fail("computing the energy");
    if (app_series_add(ser, mbk_state_get_time(s), mbk_state_get_q(s), mbk_state_get_u(s), ke, pe)) {
        fprintf(stderr, "mbk: out of memory for the trajectory\n");
        return APP_FAIL;
    }
    return APP_OK;
}

static int cmd_run(const run_options *o)
{
    app_model m;
    int status = app_model_load(o->model, &o->mo, &m);
    if (status) return status;
    mbk_state *s0 = app_model_initial_state(&m);
    app_integrator *ig = NULL;
    app_series ser = {0};
    if (!s0) {
        status = APP_FAIL;
        goto out;
    }
    if (o->have_gravity) {
        if (m.gravity_force < 0) {
            fprintf(stderr, "mbk run: --gravity: this model has no gravity element\n");
            status = APP_USAGE;
            goto out;
        }
        if (mbk_force_set_gravity(mbk_multibody_get_forces(m.sys), s0, m.gravity_force, o->gravity) < 0) {
            status = app_fail("setting gravity");
            goto out;
        }
    }
    if ((o->q0 && (status = apply_list(&m, s0, o->q0, true))) || (o->u0 && (status = apply_list(&m, s0, o->u0, false))))
        goto out;
    if (mbk_system_realize(m.sys, s0, MBK_STAGE_VELOCITY) < 0) {
        status = app_fail("realizing the initial State");
        goto out;
    }

    double t0 = app_now();
    ig = app_integrator_start(m.sys, o->integrator, o->accuracy, o->step, s0);
    if (!ig) {
        status = app_fail("starting the integrator");
        goto out;
    }
    const mbk_state *s = app_integrator_state(ig);
    ser.nq = mbk_state_get_nq(s), ser.nu = mbk_state_get_nu(s);
    if ((status = sample(&ser, m.sys, s))) goto out;
    bool tty = isatty(STDERR_FILENO) && !o->quiet, shown = false;
    double last_shown = t0;
    long n = (long)ceil(o->t_final / o->interval - 1e-9);
    double max_drift = 0, e0 = ser.ke[0] + ser.pe[0];
    for (long k = 1; k <= n; ++k) {
        double t = k == n ? o->t_final : k * o->interval;
        if (app_integrator_step_to(ig, t) < 0) {
            fprintf(stderr, "\nmbk run: the simulation failed at t = %.6g s: %s (%s)\n",
                    mbk_state_get_time(app_integrator_state(ig)), mbk_last_error(), mbk_status_name(mbk_last_status()));
            status = APP_FAIL;
            break;
        }
        s = app_integrator_state(ig);
        if ((status = sample(&ser, m.sys, s))) break;
        max_drift = fmax(max_drift, fabs(ser.ke[ser.n - 1] + ser.pe[ser.n - 1] - e0));
        double now = app_now();
        if (tty && now - t0 > 1.0 && now - last_shown > 0.1) {
            fprintf(stderr, "\r  t = %.4g of %.4g s (%3.0f%%), %.1f s wall ", t, o->t_final, 100 * t / o->t_final,
                    now - t0);
            last_shown = now, shown = true;
        }
    }
    double wall = app_now() - t0;
    if (shown) fprintf(stderr, "\r%*s\r", 60, "");

    /* summary */
    app_stats st;
    app_integrator_stats(ig, &st);
    const mbk_matter *mt = mbk_multibody_get_matter(m.sys);
    double t_end = ser.t[ser.n - 1], e_end = ser.ke[ser.n - 1] + ser.pe[ser.n - 1];
    printf("mbk %s: %s %s\n", mbk_version(), status ? "simulation stopped early:" : "simulated", m.spec);
    printf("  model        %s\n", m.title);
    printf("  size         %d bod%s + Ground, nq = %d, nu = %d, %d constraint%s, %.6g kg\n", m.n_bodies - 1,
           m.n_bodies == 2 ? "y" : "ies", ser.nq, ser.nu, mbk_matter_get_num_constraints(mt), mbk_matter_get_num_constraints(mt) == 1 ? "" : "s",
           mbk_matter_get_total_mass(mt));
    printf("  integrator   %s", st.integrator);
    if (st.integrated && o->step > 0) printf(", fixed step %g s", o->step);
    else if (st.integrated) printf(", accuracy %g (error-controlled steps)", o->accuracy);
    printf("\n");
    printf("  steps        %ld taken, %ld attempted (%ld rejected by the error test), %ld ydot evaluations",
           st.steps, st.attempts, st.rejected, st.rhs);
    if (st.integrated) printf(", %ld projections", st.projections);
    if (st.convergence_failures) printf(", %ld convergence failures", st.convergence_failures);
    printf("\n");
    printf("  time         0 -> %g s\n", t_end);
    printf("  energy       E(0) = %.10g J, E(end) = %.10g J: drift %.3e J (%.2e relative), max |E - E(0)| %.3e J%s\n",
           e0, e_end, e_end - e0, fabs(e_end - e0) / fmax(fabs(e0), 1e-300), max_drift,
           m.dissipative ? "\n               (the model has dampers or stops: energy is not conserved)" : "");
    printf("  wall time    %.3f s, real-time factor %.3g (simulated s per wall s)\n", wall,
           wall > 0 ? t_end / wall : INFINITY);

    /* outputs (also after a failure: what was simulated is still worth looking at) */
    const char *title = m.spec;
    if (strcmp(o->output, "none")) {
        app_make_parent_dir(o->output);
        if (app_write_csv(o->output, &ser)) {
            fprintf(stderr, "mbk run: cannot write %s: %s\n", o->output, strerror(errno));
            status = APP_FAIL;
        } else {
            printf("  trajectory   %s (%ld rows: t, %d q, %d u, energy)\n", o->output, ser.n, ser.nq, ser.nu);
        }
    }
    if (strcmp(o->plot, "none")) {
        app_make_parent_dir(o->plot);
        char t2[700];
        snprintf(t2, sizeof t2, "mbk run %s: q and energy against time (%s)", title, st.integrator);
        if (app_write_svg(o->plot, &ser, t2)) {
            fprintf(stderr, "mbk run: cannot write %s: %s\n", o->plot, strerror(errno));
            status = APP_FAIL;
        } else {
            printf("  plot         %s\n", o->plot);
        }
    }
out:
    app_series_free(&ser);
    app_integrator_free(ig);
    mbk_state_destroy(s0);
    app_model_free(&m);
    return status;
}

int main(int argc, char **argv)
{
    if (argc < 2) {
        usage(stderr);
        return APP_USAGE;
    }
    const char *cmd = argv[1];
    if (!strcmp(cmd, "--help") || !strcmp(cmd, "-h") || !strcmp(cmd, "help")) {
        usage(stdout);
        return APP_OK;
    }
    if (!strcmp(cmd, "version") || !strcmp(cmd, "--version")) {
        printf("mbk %s\n", mbk_version());
        return APP_OK;
    }
    if (!strcmp(cmd, "sweep")) return app_sweep_main(argc - 2, argv + 2); /* app_sweep.c */
    if (strcmp(cmd, "run") && strcmp(cmd, "info") && strcmp(cmd, "bench")) {
        fprintf(stderr, "mbk: unknown command '%s' (see mbk --help)\n", cmd);
        return APP_USAGE;
    }
    for (int i = 2; i < argc; ++i)
        if (!strcmp(argv[i], "--help") || !strcmp(argv[i], "-h")) {
            usage(stdout);
            return APP_OK;
        }
    run_options o;
    int rc = parse_options(cmd, argc - 2, argv + 2, &o);
    if (rc) return rc;
    if (!strcmp(cmd, "run")) return cmd_run(&o);
    app_model m;
    rc = app_model_load(o.model, &o.mo, &m);
    if (rc) return rc;
    rc = !strcmp(cmd, "info") ? app_info(&m, o.all) : app_bench(&m, o.bench_time);
    app_model_free(&m);
    return rc;
}
