/* The mbk command-line program: simulate a model, describe it, time it.
 *
 *   mbk run [MODEL] [options]   simulate, print a summary, write CSV and SVG (and --html)
 *   mbk view [MODEL] [options]  a short run shown in a 3-D viewer page (docs/viewer.md)
 *   mbk info MODEL              bodies, joints, dofs, mass, the tree as text
 *   mbk bench MODEL             time the realize cycle and the operators
 *   mbk version | --help
 *
 * MODEL is a URDF file or a built-in (builtin:chain:N, builtin:tree:DEPTH,
 * builtin:fourbar); `mbk run` with no MODEL simulates builtin:chain:5, a
 * 5-link 3-D pendulum. Exit codes (app.h, docs/cli.md): 0 success, 1 the
 * simulation failed, 2 bad usage, 3 the model could not be loaded, 4 an
 * output could not be written. */
#define _POSIX_C_SOURCE 200809L
#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "app.h"

static void usage(FILE *f)
{
    fprintf(f,
            "usage: mbk run [MODEL] [options]   simulate MODEL, print a summary, write its trajectory\n"
            "       mbk view [MODEL] [options]  a short run (2 s) in a 3-D viewer page, mbk-out/view.html\n"
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
            "  --html FILE          a self-contained 3-D viewer page of the run (docs/viewer.md); mbk view\n"
            "                       writes mbk-out/view.html unless told, with the run options of mbk run\n"
            "                       (default --t-final 2, no CSV or SVG)\n"
            "  --max-steps N        most integrator steps per output interval before the run stops\n"
            "                       (default 100000)\n"
            "  --quiet              no progress line (it appears on stderr only when stderr is a\n"
            "                       terminal and the run takes more than a second) and no loader warnings\n"
            "  --checkpoint FILE    write a checkpoint of the run (State, integrator, sampling) to FILE\n"
            "                       at the end, and every --checkpoint-every T simulated seconds\n"
            "                       (at the first sample from each multiple of T on); the trajectory\n"
            "                       CSV is written first, so the two always agree\n"
            "  --checkpoint-every T simulated seconds between checkpoints (needs --checkpoint)\n"
            "  --resume FILE        continue the run FILE holds up to --t-final, appending to the\n"
            "                       trajectory CSV; the integrator, its settings and the State come\n"
            "                       from FILE (not with --integrator, --accuracy, --step, --gravity,\n"
            "                       --q0, --u0); give MODEL as for the run that wrote it\n",
            app_integrator_names());
    fprintf(f,
            "URDF options (run, info, bench):\n"
            "  --floating-base      mount the root link on a free joint instead of welding it\n"
            "  --no-limits          do not turn joint limits into stops\n"
            "  --no-damping         do not turn joint damping into dampers\n"
            "  --max-urdf-bytes N   largest URDF file read (default 16777216, 16 MiB)\n"
            "  --friction           turn joint friction into Coulomb friction elements (off: ignored)\n"
            "  --ground [HEIGHT]    a ground at z = HEIGHT (default 0) and contact for the <collision>\n"
            "                       spheres, boxes and cylinders; a floating robot starts standing on it\n"
            "  --strict-inertia     refuse every link whose inertia no rigid body has (default: warn)\n"
            "  --min-mass [KG]      links of moving bodies lighter than KG (default 0.01) get KG; also\n"
            "                       sets --min-inertia 1e-6 unless given\n"
            "  --min-inertia [I]    their principal moments below I kg m^2 (default 1e-6) are raised to I\n"
            "  --balance-inertia    replace an inertia no rigid body has by the nearest one that it has\n"
            "  --verbose            show every warning of the loader (default: a count and the first %d)\n"
            "  --quiet              (info, bench) show none\n"
            "\n"
            "The summary gives the model size, what the default pose changed (URDF: joints moved into\n"
            "their limits, a floating robot set on the ground), the integrator's statistics, the energy\n"
            "drift (E(t) - E(0), relative when E(0) is not near 0; exact energy conservation is expected\n"
            "only without dampers, stops, friction and contact), the energy joint friction dissipated,\n"
            "the wall time and the real-time factor (simulated seconds per wall-clock second).\n"
            "\n"
            "Exit status (docs/cli.md):\n"
            "  0  success\n"
            "  1  the simulation (or what info or bench computes) failed; what was simulated is\n"
            "     still written\n"
            "  2  bad usage: unknown command or option, bad value, a value that does not fit the model\n"
            "  3  the model could not be loaded: missing or unreadable file, not a regular file,\n"
            "     too large, malformed or unsupported URDF\n"
            "  4  an output (--output, --plot, standard output) could not be written\n"
            "When several apply, the first failure decides.\n",
            3);
}

typedef struct run_options {
    const char *model;                  /* MODEL: a URDF file or builtin:... */
    double t_final, accuracy, step, interval; /* --t-final, --accuracy, --step (0: none), --interval */
    const char *integrator;             /* --integrator */
    bool have_gravity;                  /* --gravity given */
    mbk_vec3 gravity;                   /* its value */
    const char *q0, *u0;                /* --q0, --u0 (NULL: the model's) */
    const char *output, *plot, *html;   /* --output, --plot, --html ("none": not written) */
    bool view;                          /* mbk view: a run shown in the viewer page */
    long max_steps;                     /* --max-steps */
    bool quiet, all;                    /* --quiet (no progress line), --all (mbk info) */
    double bench_time;                  /* --time (mbk bench) */
    app_model_options mo;               /* how the model is loaded (URDF options) */
    const char *checkpoint, *resume; /* --checkpoint FILE, --resume FILE */
    double checkpoint_every;         /* 0: only at the end */
    bool interval_given;
    const char *fixed_by_resume;     /* an option --resume cannot take, if given */
} run_options;

static int usage_error(const char *cmd, const char *fmt, const char *arg)
{
    fprintf(stderr, "mbk %s: ", cmd);
    fprintf(stderr, fmt, arg);
    fprintf(stderr, " (see mbk --help)\n");
    return APP_USAGE;
}

/* A whole number in [lo, hi]. */
static int parse_count(const char *cmd, const char *name, const char *text, double lo, double hi, double *out)
{
    char *end = NULL;
    errno = 0;
    double v = text ? strtod(text, &end) : NAN;
    if (!text || errno || end == text || *end || !(v >= lo && v <= hi) || v != floor(v)) {
        fprintf(stderr, "mbk %s: %s needs a whole number from %.0f to %.0f, got '%s' (see mbk --help)\n", cmd, name,
                lo, hi, text ? text : "");
        return -1;
    }
    *out = v;
    return 0;
}

static int parse_number(const char *cmd, const char *name, const char *text, double *out)
{
    char why[320];
    if (app_parse_number(name, text, out, why, sizeof why) == 0) return 0;
    fprintf(stderr, "mbk %s: %s (see mbk --help)\n", cmd, why);
    return -1;
}

/* An optional number after a flag: taken when the next argument is one. */
static bool optional_number(const char *text, double *out)
{
    char *end = NULL;
    errno = 0;
    double v = text ? strtod(text, &end) : NAN;
    if (!text || errno || end == text || *end || !isfinite(v)) return false;
    *out = v;
    return true;
}

/* What an option handler returns when the option is not one of its own. */
enum { OPT_UNKNOWN = -1 };

/* The commands an option may belong to. */
typedef struct opt_cmd {
    const char *name; /* run, view, info, bench */
    bool run;         /* run or view */
    bool info, bench;
} opt_cmd;

/* An option of the model's loading (all commands), or of info or bench: APP_OK,
   APP_USAGE or OPT_UNKNOWN; *takes: it took the next argument v. */
static int model_option(const opt_cmd *c, const char *a, const char *v, run_options *o, bool *takes,
                        bool *min_inertia_given)
{
    *takes = false;
    if (!strcmp(a, "--floating-base")) o->mo.floating_base = true;
    else if (!strcmp(a, "--no-limits")) o->mo.no_limits = true;
    else if (!strcmp(a, "--no-damping")) o->mo.no_damping = true;
    else if (!strcmp(a, "--friction")) o->mo.friction = true;
    else if (!strcmp(a, "--strict-inertia")) o->mo.strict_inertia = true;
    else if (!strcmp(a, "--balance-inertia")) o->mo.balance_inertia = true;
    else if (!strcmp(a, "--verbose")) o->mo.warnings = 1;
    else if (!strcmp(a, "--ground")) o->mo.ground = true, *takes = optional_number(v, &o->mo.ground_height);
    else if (!strcmp(a, "--min-mass") || !strcmp(a, "--min-inertia")) {
        bool mass = a[6] == 'm';
        double x = mass ? 0.01 : 1e-6;
        *takes = optional_number(v, &x);
        if (!(x > 0)) return usage_error(c->name, "%s needs a value > 0", a);
        if (mass) o->mo.min_mass = x;
        else o->mo.min_inertia = x, *min_inertia_given = true;
    } else if (!c->run && !strcmp(a, "--quiet")) o->mo.warnings = -1;
    else if (c->info && !strcmp(a, "--all")) o->all = true;
    else if (!strcmp(a, "--max-urdf-bytes")) {
        double n = 0;
        *takes = true;
        if (parse_count(c->name, a, v, 1, 1e15, &n)) return APP_USAGE;
        o->mo.max_urdf_bytes = (size_t)n;
    } else if (c->bench && !strcmp(a, "--time")) {
        *takes = true;
        if (parse_number(c->name, a, v, &o->bench_time)) return APP_USAGE;
    } else {
        return OPT_UNKNOWN;
    }
    return APP_OK;
}

/* A file name v for option a: into *dst, or a usage error if missing. */
static int file_option(const char *cmd, const char *a, const char *v, const char **dst)
{
    if (!v || !*v) return usage_error(cmd, "%s needs a file name", a);
    *dst = v;
    return APP_OK;
}


/* An option of mbk run and mbk view (each takes the next argument v, but --quiet):
   APP_OK, APP_USAGE or OPT_UNKNOWN. */
static int run_option(const char *cmd, const char *a, const char *v, run_options *o, bool *takes)
{
    double n = 0;
    *takes = true;
    if (!strcmp(a, "--quiet")) {
        o->quiet = true, o->mo.warnings = -1, *takes = false;
        return APP_OK;
    }
    if (!strcmp(a, "--max-steps")) {
        if (parse_count(cmd, a, v, 1, 1e15, &n)) return APP_USAGE;
        o->max_steps = (long)n;
        return APP_OK;
    }
    double *number = !strcmp(a, "--t-final")           ? &o->t_final
                     : !strcmp(a, "--accuracy")         ? &o->accuracy
                     : !strcmp(a, "--step")             ? &o->step
                     : !strcmp(a, "--interval")         ? &o->interval
                     : !strcmp(a, "--checkpoint-every") ? &o->checkpoint_every
                                                        : NULL;
    if (number) {
        if (number == &o->interval) o->interval_given = true;
        if (parse_number(cmd, a, v, number)) return APP_USAGE;
        /* 0 is no step or interval (it once meant the default silently) */
        if (number == &o->step && !(*number > 0))
            return usage_error(cmd, "%s", "--step must be > 0 (leave it out for error-controlled steps)");
        if (number == &o->interval && !(*number > 0))
            return usage_error(cmd, "%s", "--interval must be > 0 (leave it out for t-final / 1000)");
        return APP_OK;
    }
    if (!strcmp(a, "--checkpoint")) return file_option(cmd, a, v, &o->checkpoint);
    if (!strcmp(a, "--resume")) return file_option(cmd, a, v, &o->resume);
    if (!strcmp(a, "--html")) return file_option(cmd, a, v, &o->html);
    if (!strcmp(a, "--output")) return file_option(cmd, a, v, &o->output);
    if (!strcmp(a, "--plot")) return file_option(cmd, a, v, &o->plot);
    if (!strcmp(a, "--gravity")) {
        char why[256];
        if (app_parse_vec3(a, v, &o->gravity, why, sizeof why)) return usage_error(cmd, "%s", why);
        o->have_gravity = true;
        return APP_OK;
    }
    if (!strcmp(a, "--integrator")) {
        if (!v) return usage_error(cmd, "%s needs a name", a);
        o->integrator = v;
        return APP_OK;
    }
    if (!strcmp(a, "--q0") || !strcmp(a, "--u0")) {
        if (!v) return usage_error(cmd, "%s needs a list", a);
        *(a[2] == 'q' ? &o->q0 : &o->u0) = v;
        return APP_OK;
    }
    return OPT_UNKNOWN;
}

/* The run options' values, checked together once all are read; the default interval. */
static int check_run_options(const char *cmd, run_options *o)
{
    char why[256];
    if (app_check_integration(o->t_final, o->accuracy, o->step, o->integrator, why, sizeof why))
        return usage_error(cmd, "%s", why);
    if (o->interval < 0 || o->interval > o->t_final) return usage_error(cmd, "%s", "--interval must be in (0, t-final]");
    if (o->checkpoint_every < 0 || (o->checkpoint_every > 0 && !o->checkpoint))
        return usage_error(cmd, "%s", "--checkpoint-every needs --checkpoint FILE and a time > 0");
    if (o->resume && o->fixed_by_resume)
        return usage_error(cmd, "%s cannot be combined with --resume: the checkpoint holds the State, the "
                           "integrator and its settings", o->fixed_by_resume);
    if (o->interval == 0) o->interval = o->t_final / 1000;
    if ((o->t_final / o->interval) > 1e7) return usage_error(cmd, "%s", "--interval gives more than 1e7 samples");
    return APP_OK;
}

static int parse_options(const char *cmd, int argc, char **argv, run_options *o)
{
    memset(o, 0, sizeof *o);
    o->t_final = 10.0, o->accuracy = 1e-6, o->integrator = app_integrator_default(), o->bench_time = 0.25;
    o->output = "mbk-out/trajectory.csv", o->plot = "mbk-out/plot.svg";
    const opt_cmd c = {cmd, !strcmp(cmd, "run") || !strcmp(cmd, "view"), !strcmp(cmd, "info"), !strcmp(cmd, "bench")};
    if (!strcmp(cmd, "view")) /* a short run, shown: only the page unless told */
        o->view = true, o->t_final = 2, o->output = "none", o->plot = "none", o->html = "mbk-out/view.html";
    bool min_inertia_given = false;
    const char *optional_before = NULL; /* the option with an optional number just before the model */
    for (int i = 0; i < argc; ++i) {
        const char *a = argv[i], *v = i + 1 < argc ? argv[i + 1] : NULL;
        if (a[0] != '-' || !strcmp(a, "-")) {
            if (o->model && optional_before) { /* "--ground abc model.urdf": abc was no number */
                fprintf(stderr, "mbk %s: more than one model given ('%s' and '%s'); %s takes an optional number, "
                        "and '%s' is not one (see mbk --help)\n", cmd, o->model, a, optional_before, o->model);
                return APP_USAGE;
            }
            if (o->model) return usage_error(cmd, "more than one model given ('%s')", a);
            o->model = a;
            const char *prev = i > 0 ? argv[i - 1] : "";
            optional_before = !strcmp(prev, "--ground") || !strcmp(prev, "--min-mass") ||
                                      !strcmp(prev, "--min-inertia") ? prev : NULL;
            continue;
        }
        bool takes = false;
        int rc = model_option(&c, a, v, o, &takes, &min_inertia_given);
        if (rc == OPT_UNKNOWN && c.run) rc = run_option(cmd, a, v, o, &takes);
        if (rc == OPT_UNKNOWN) return usage_error(cmd, "unknown option '%s'", a);
        if (rc) return APP_USAGE;
        if (!strcmp(a, "--integrator") || !strcmp(a, "--accuracy") || !strcmp(a, "--step") ||
            !strcmp(a, "--gravity") || !strcmp(a, "--q0") || !strcmp(a, "--u0"))
            o->fixed_by_resume = a;
        if (takes) ++i;
    }
    if (c.run && check_run_options(cmd, o)) return APP_USAGE;
    if (c.bench && !(o->bench_time > 0 && o->bench_time <= 60)) return usage_error(cmd, "%s", "--time must be in (0, 60]");
    /* a mass alone leaves a point mass on a joint axis without inertia */
    if (o->mo.min_mass > 0 && !min_inertia_given) o->mo.min_inertia = 1e-6;
    return APP_OK;
}

/* --q0 / --u0 into the State: n plain numbers, or JOINT=V[:V...] pairs. */
static int apply_list(const app_model *m, mbk_state *s, const char *text, bool is_q, bool *held)
{
    const int n = is_q ? mbk_state_get_nq(s) : mbk_state_get_nu(s);
    app_assign *as = malloc(sizeof *as * ((size_t)n + 1));
    if (!as) {
        fprintf(stderr, "mbk run: out of memory\n");
        return APP_FAILED;
    }
    int k = 0, status = app_parse_initial(m, s, "run", text, is_q, as, &k);
    double *dst = is_q ? mbk_state_upd_q(s) : mbk_state_upd_u(s);
    for (int i = 0; status == APP_OK && i < k; ++i) {
        dst[as[i].index] = as[i].value;
        if (held) held[as[i].index] = true;
    }
    free(as);
    return status;
}

/* Friction elements keep the energy they dissipated: the total and the balance. */
static void print_dissipation(const app_model *m, const mbk_state *s, double e0, double e_end)
{
    const mbk_forces *f = mbk_multibody_get_forces(m->sys);
    double total = 0;
    int n = 0;
    for (int i = 0; i < mbk_forces_get_num_elements(f); ++i) {
        double w;
        if (mbk_force_get_dissipated_energy(f, s, i, &w) == MBK_OK) total += w, n++;
    }
    mbk_clear_error();
    if (n)
        printf("  friction     %.6g J dissipated by %d joint friction element%s; E(end) + dissipated - E(0) = %.3e J\n",
               total, n, n == 1 ? "" : "s", e_end + total - e0);
}

/* What a run carries from its start through its summary and outputs. */
typedef struct run_ctx {
    const run_options *o;
    app_model m;
    mbk_state *s0;         /* the initial State (a fresh run) */
    app_integrator *ig;
    app_series ser;        /* the samples */
    app_resumed rs;        /* what a resumed run took from its file; the metadata to write */
    double t0;             /* the wall clock when the integration started */
    double t_begin;        /* the simulated time it started from */
    double wall;           /* wall seconds the simulation took */
    double e0;             /* the energy at the first sample */
    double max_drift;      /* max |E - E(0)| over the samples */
    int checkpoints;       /* checkpoints written */
    double t_checkpoint;   /* the time of the last */
    char pose_note[1024];  /* how the initial pose was chosen ("" for the model's own, or resumed) */
    char why[1024];        /* why the simulation stopped early ("" if it did not) */
    FILE *say;             /* the summary's stream: stdout, or stderr when an output goes there */
} run_ctx;

/* --q0 and --u0 into s; a model with constraints (a URDF mimic joint, the four-bar)
   then has its loops closed again with the coordinates given held, and its speeds
   projected, so that the run starts where it was asked to (the integrator's own
   projection would move every coordinate, the given ones too). */
static int apply_initial(run_ctx *r)
{
    const run_options *o = r->o;
    const int nq = mbk_state_get_nq(r->s0);
    bool *held = calloc((size_t)nq + 1, sizeof *held);
    if (!held) return app_fail("out of memory");
    int status = o->q0 ? apply_list(&r->m, r->s0, o->q0, true, held) : APP_OK;
    if (!status && o->u0) status = apply_list(&r->m, r->s0, o->u0, false, NULL);
    const mbk_system *sys = r->m.sys;
    if (!status && (o->q0 || o->u0) && mbk_matter_get_num_constraints(mbk_multibody_get_matter(sys)) > 0) {
        if (mbk_system_assemble_locked(sys, r->s0, 1e-12, held) < 0 || mbk_system_project(sys, r->s0, 1e-12) < 0)
            status = app_fail("closing the constraints around --q0 (the coordinates given are held)");
        else
            snprintf(r->pose_note + strlen(r->pose_note), sizeof r->pose_note - strlen(r->pose_note), "%s%s",
                     r->pose_note[0] ? "; " : "", o->q0 ? "the constraints closed with the --q0 coordinates held"
                                                        : "--u0 projected onto the constraints");
    }
    free(held);
    return status;
}

/* A fresh run's initial State (gravity, pose, --q0, --u0), its integrator, the first
   sample and the metadata a checkpoint keeps. */
static int start_fresh(run_ctx *r)
{
    const run_options *o = r->o;
    app_model *m = &r->m;
    r->s0 = app_model_initial_state(m);
    if (!r->s0) return APP_FAILED;
    if (o->have_gravity) {
        if (m->gravity_force < 0) {
            fprintf(stderr, "mbk run: --gravity: this model has no gravity element\n");
            return APP_USAGE;
        }
        if (mbk_force_set_gravity(mbk_multibody_get_forces(m->sys), r->s0, m->gravity_force, o->gravity) < 0)
            return app_fail("setting gravity");
    }
    if (app_model_default_pose(m, r->s0, r->pose_note, sizeof r->pose_note)) return APP_FAILED;
    int status = apply_initial(r);
    if (status) return status;
    if (mbk_system_realize(m->sys, r->s0, MBK_STAGE_VELOCITY) < 0) return app_fail("realizing the initial State");
    r->t0 = app_now();
    r->ig = app_integrator_start(m->sys, o->integrator, o->accuracy, o->step, o->max_steps, r->s0);
    if (!r->ig) return app_fail("starting the integrator");
    if (o->checkpoint && !app_integrator_library(r->ig)) {
        fprintf(stderr, "mbk run: --checkpoint: the model has no state variables; there is nothing to checkpoint\n");
        return APP_FAILED;
    }
    const mbk_state *s = app_integrator_state(r->ig);
    r->ser.nq = mbk_state_get_nq(s), r->ser.nu = mbk_state_get_nu(s);
    if ((status = app_series_sample(&r->ser, m->sys, s))) return status;
    snprintf(r->rs.meta.integrator, sizeof r->rs.meta.integrator, "%s", o->integrator);
    r->rs.meta.t0 = r->ser.t[0], r->rs.meta.e0 = r->ser.ke[0] + r->ser.pe[0];
    return APP_OK;
}

/* The energy's drift over the samples from `from` on. */
static void track_energy(run_ctx *r, long from)
{
    for (long j = from; j < r->ser.n; ++j)
        r->max_drift = fmax(r->max_drift, fabs(r->ser.ke[j] + r->ser.pe[j] - r->e0));
}

/* Sample k's time reached: say why not, or sample it. */
static int step_to_sample(run_ctx *r, double t, bool shown)
{
    if (app_integrator_step_to(r->ig, t) < 0) {
        const double t_fail = mbk_state_get_time(app_integrator_state(r->ig));
        fprintf(stderr, "%smbk run: the simulation failed at t = %.6g s: %s (%s)\n", shown ? "\n" : "", t_fail,
                mbk_last_error(), mbk_status_name(mbk_last_status()));
        app_hint(mbk_last_error());
        snprintf(r->why, sizeof r->why, "the simulation failed at t = %.6g s: %s (%s)", t_fail, mbk_last_error(),
                 mbk_status_name(mbk_last_status()));
        return APP_FAILED;
    }
    int status = app_series_sample(&r->ser, r->m.sys, app_integrator_state(r->ig));
    if (!status) track_energy(r, r->ser.n - 1);
    return status;
}

/* From the first sample to t_final: a sample every interval, checkpoints when due,
   and a progress line on a terminal. */
static int simulate(run_ctx *r)
{
    const run_options *o = r->o;
    snprintf(r->rs.meta.model, sizeof r->rs.meta.model, "%s", r->m.spec);
    r->rs.meta.interval = r->rs.interval;
    r->t_begin = mbk_state_get_time(app_integrator_state(r->ig));
    const double every = o->checkpoint_every;
    const bool tty = isatty(STDERR_FILENO) && !o->quiet;
    bool shown = false;
    double last_shown = r->t0;
    const long n = (long)ceil(o->t_final / r->rs.interval - 1e-9);
    r->e0 = isfinite(r->rs.meta.e0) ? r->rs.meta.e0 : r->ser.ke[0] + r->ser.pe[0];
    track_energy(r, 0);
    double next_checkpoint = every > 0 ? (floor(r->t_begin / every) + 1) * every : INFINITY;
    int status = APP_OK;
    for (long k = r->rs.k_first; k <= n; ++k) {
        const double t = k == n ? o->t_final : k * r->rs.interval;
        if ((status = step_to_sample(r, t, shown))) break;
        if (o->checkpoint && (t >= next_checkpoint || k == n)) {
            r->rs.meta.sample = k;
            if ((status = app_checkpoint_write(o->checkpoint, r->ig, &r->rs.meta, o->output, &r->ser, r->rs.kept,
                                               r->rs.kept_rows)))
                break;
            ++r->checkpoints, r->t_checkpoint = t;
            if (every > 0) next_checkpoint = (floor(t / every) + 1) * every;
        }
        const double now = app_now();
        if (tty && now - r->t0 > 1.0 && now - last_shown > 0.1) {
            fprintf(stderr, "\r  t = %.4g of %.4g s (%3.0f%%), %.1f s wall ", t, o->t_final, 100 * t / o->t_final,
                    now - r->t0);
            last_shown = now, shown = true;
        }
    }
    r->wall = app_now() - r->t0;
    if (shown) fprintf(stderr, "\r%*s\r", 60, "");
    return status;
}

/* The summary on standard output: the model, the integrator's work, the energy, the
   wall time. */
static void print_summary(const run_ctx *r, const app_stats *st, int status)
{
    const run_options *o = r->o;
    const app_model *m = &r->m;
    const app_series *ser = &r->ser;
    const mbk_matter *mt = mbk_multibody_get_matter(m->sys);
    const double t_end = ser->t[ser->n - 1], e_end = ser->ke[ser->n - 1] + ser->pe[ser->n - 1], e0 = r->e0;
    fprintf(r->say, "mbk %s: %s %s\n", mbk_version(), status ? "simulation stopped early:" : "simulated", m->spec);
    fprintf(r->say, "  model        %s\n", m->title);
    if (r->pose_note[0]) fprintf(r->say, "  start        %s\n", r->pose_note);
    fprintf(r->say, "  size         %d bod%s + Ground, nq = %d, nu = %d, %d constraint%s, %.6g kg\n", m->n_bodies - 1,
           m->n_bodies == 2 ? "y" : "ies", ser->nq, ser->nu, mbk_matter_get_num_constraints(mt),
           mbk_matter_get_num_constraints(mt) == 1 ? "" : "s", mbk_matter_get_total_mass(mt));
    fprintf(r->say, "  integrator   %s", st->integrator);
    mbk_integrator_settings set = {.accuracy = o->accuracy, .fixed_step = o->step};
    if (app_integrator_library(r->ig)) mbk_integrator_get_settings(app_integrator_library(r->ig), &set); /* resumed: the file's */
    if (st->integrated && set.fixed_step > 0) fprintf(r->say, ", fixed step %g s", set.fixed_step);
    else if (st->integrated) fprintf(r->say, ", accuracy %g (error-controlled steps)", set.accuracy);
    fprintf(r->say, "\n");
    fprintf(r->say, "  steps        %ld taken, %ld attempted (%ld rejected by the error test), %ld ydot evaluations",
           st->steps, st->attempts, st->rejected, st->rhs);
    if (st->integrated) fprintf(r->say, ", %ld projections", st->projections);
    if (st->convergence_failures) fprintf(r->say, ", %ld convergence failures", st->convergence_failures);
    fprintf(r->say, "\n");
    fprintf(r->say, "  time         0 -> %g s\n", t_end);
    /* a relative drift only means something when E(0) is not tiny next to the energies involved */
    char relative[64] = "";
    /* against the energies at the start (not the run's: a run that blew up has huge ones) */
    if (fabs(e0) > 1e-6 * (fabs(ser->ke[0]) + fabs(ser->pe[0])) && fabs(e0) > 0)
        snprintf(relative, sizeof relative, " (%.2e relative)", fabs(e_end - e0) / fabs(e0));
    fprintf(r->say, "  energy       E(0) = %.10g J, E(end) = %.10g J: drift %.3e J%s, max |E - E(0)| %.3e J%s%s\n",
           e0, e_end, e_end - e0, relative, r->max_drift,
           relative[0] ? "" : "\n               (no relative drift: E(0) is too near 0 to divide by)",
           m->dissipative ? "\n               (the model has dampers, stops, friction or contact: energy is not conserved)"
                          : "");
    print_dissipation(m, app_integrator_state(r->ig), e0, e_end);
    fprintf(r->say, "  wall time    %.3f s, real-time factor %.3g (simulated s per wall s)\n", r->wall,
           r->wall > 0 ? (t_end - r->t_begin) / r->wall : INFINITY);
    if (o->resume) fprintf(r->say, "  resumed      from %s at t = %.10g s\n", o->resume, r->rs.t);
    if (r->checkpoints)
        fprintf(r->say, "  checkpoint   %s (%d written, the last at t = %.10g s)\n", o->checkpoint, r->checkpoints,
               r->t_checkpoint);
}

/* The trajectory, the plot and the viewer page (also after a failure: what was
   simulated is still worth looking at). */
static int write_outputs(const run_ctx *r, const app_stats *st, int status)
{
    const run_options *o = r->o;
    const bool stopped_early = status != APP_OK; /* the simulation's, before an output fails */
    if (strcmp(o->output, "none")) {
        app_make_parent_dir(o->output);
        if (app_write_trajectory(o->output, &r->ser, r->rs.kept, r->rs.kept_rows)) {
            fprintf(stderr, "mbk run: cannot write %s: %s\n", o->output, strerror(errno));
            if (!status) status = APP_OUTPUT;
        } else {
            fprintf(r->say, "  trajectory   %s (%ld rows: t, %d q, %d u, energy)\n", o->output, r->ser.n, r->ser.nq,
                   r->ser.nu);
        }
    }
    if (strcmp(o->plot, "none")) {
        app_make_parent_dir(o->plot);
        char t2[700];
        snprintf(t2, sizeof t2, "mbk run %s: q and energy against time (%s)", r->m.spec, st->integrator);
        if (app_write_svg(o->plot, &r->ser, t2)) {
            fprintf(stderr, "mbk run: cannot write %s: %s\n", o->plot, strerror(errno));
            if (!status) status = APP_OUTPUT;
        } else {
            fprintf(r->say, "  plot         %s\n", o->plot);
        }
    }
    if (o->html && strcmp(o->html, "none")) {
        app_run_info ri = {o->view ? "view" : "run", st->integrator, o->t_final, stopped_early, r->why,
                           o->have_gravity, o->gravity, !o->view};
        char err[1024];
        if (app_write_html(o->html, &r->m, &r->ser, &ri, err, sizeof err)) {
            fprintf(stderr, "mbk %s: --html: %s\n", ri.command, err);
            if (!status) status = APP_OUTPUT;
        } else {
            fprintf(r->say, "  viewer       %s (open it in a browser)\n", o->html);
        }
    }
    return status;
}

/* Whether path is where standard output goes (--html /dev/stdout, or the file standard
   output is redirected to): the summary must not be written into it. */
static bool is_stdout(const char *path)
{
    struct stat a, b;
    return path && strcmp(path, "none") && fstat(STDOUT_FILENO, &b) == 0 && stat(path, &a) == 0 &&
           a.st_dev == b.st_dev && a.st_ino == b.st_ino;
}

static int cmd_run(const run_options *o)
{
    run_ctx r;
    memset(&r, 0, sizeof r);
    r.o = o;
    r.say = is_stdout(o->output) || is_stdout(o->plot) || is_stdout(o->html) || is_stdout(o->checkpoint) ? stderr
                                                                                                       : stdout;
    r.rs = (app_resumed){.k_first = 1, .interval = o->interval, .meta = {.t0 = NAN, .e0 = NAN}};
    r.t_checkpoint = NAN;
    int status = app_model_load(o->model, &o->mo, &r.m);
    if (status) return status;
    r.t0 = app_now();
    if (o->resume) {
        status = app_resume(o->resume, &r.m, o->output, o->interval, o->interval_given, o->t_final, &r.ser, &r.rs);
        r.ig = r.rs.ig; /* freed below: also when the resume was refused */
    } else {
        status = start_fresh(&r);
    }
    if (!status) {
        status = simulate(&r);
        app_stats st;
        app_integrator_stats(r.ig, &st);
        print_summary(&r, &st, status);
        status = write_outputs(&r, &st, status);
    }
    free(r.rs.kept);
    app_series_free(&r.ser);
    app_integrator_free(r.ig);
    mbk_state_destroy(r.s0);
    app_model_free(&r.m);
    return status;
}

/* Everything printed reached standard output (a full disk, a closed pipe): else
   APP_OUTPUT, unless the command had already failed. */
static int finish(int rc)
{
    errno = 0;
    if (fflush(stdout) != 0 || ferror(stdout)) {
        fprintf(stderr, "mbk: cannot write to standard output: %s\n", errno ? strerror(errno) : "write error");
        return rc ? rc : APP_OUTPUT;
    }
    return rc;
}

static int dispatch(int argc, char **argv)
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
    if (strcmp(cmd, "run") && strcmp(cmd, "view") && strcmp(cmd, "info") && strcmp(cmd, "bench")) {
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
    if (!strcmp(cmd, "run") || !strcmp(cmd, "view")) return cmd_run(&o);
    app_model m;
    rc = app_model_load(o.model, &o.mo, &m);
    if (rc) return rc;
    rc = !strcmp(cmd, "info") ? app_info(&m, o.all) : app_bench(&m, o.bench_time);
    app_model_free(&m);
    return rc;
}

int main(int argc, char **argv) { return finish(dispatch(argc, argv)); }
