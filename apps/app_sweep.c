/* `mbk sweep`: many runs of one model with varied parameters, on every core
 * and, under mpirun, on every rank (the library's ensembles, mbk/ensemble.h).
 *
 *   mbk sweep [MODEL] --samples N --seed S --vary NAME=DIST ... [run options]
 *
 * Members are the samples times the grid and list points; member i's random
 * values are draw j (the j-th --vary) of member i under the seed, so they do
 * not depend on threads, ranks or order. One CSV row per member, sorted by
 * member, with no wall-clock figures: two runs of one sweep give the same
 * bytes, and --resume reads finished rows back and runs only the others. */
#define _POSIX_C_SOURCE 200809L
#include <errno.h>
#include <stdarg.h>
#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include <mbk/ensemble.h>
#ifdef MBK_HAVE_MPI
#include <mbk/ensemble_mpi.h>
#endif

#include "app.h"

#define MAX_VARS 32
#define MAX_MEMBERS 100000000L
#define ROW_MSG 400

typedef enum { V_Q0, V_U0, V_GRAVITY, V_PARAM, V_MASS, V_ENABLED } var_kind;
typedef enum { D_UNIFORM, D_NORMAL, D_GRID, D_LIST } dist_kind;

typedef struct sweep_var {
    char name[160];     /* as given: the column's name */
    char dist_text[200];
    var_kind kind;
    int index;          /* q or u index, gravity component, body */
    int element, param; /* force element and parameter */
    dist_kind dist;
    double a, b;        /* uniform(a,b), normal(a=mean,b=sd), grid(a,b,n) */
    int n;              /* grid and list points */
    double *list;
    long stride;        /* grid and list: members per step of this variable (times samples) */
} sweep_var;

typedef struct sweep {
    /* options */
    const char *model_spec;
    app_model_options mo;
    double t_final, accuracy, step;
    const char *integrator;
    bool have_gravity;
    mbk_vec3 gravity;
    const char *q0_text, *u0_text;
    long samples;
    uint64_t seed;
    int threads;
    const char *output, *plot;
    char *output_target; /* where --output's rows go, a symlink's target (malloc'd): w->output then */
    bool resume, quiet;
    sweep_var vars[MAX_VARS];
    int nvars;
    /* the model and the members */
    app_model m;
    int nq, nu, nconstraints;
    long n_members, combos;
    app_assign *q0, *u0; /* --q0, --u0 */
    int nq0, nu0;
    size_t record_size;
    mbk_ensemble *e;
    /* rank 0: the output being written */
    FILE *out;
    long *offset;       /* per member: where its row starts in the output, -1 if none */
    long n_prev;        /* rows read back (--resume) */
    long n_done, n_failed;
    double t_start, last_progress;
    bool tty, shown;
    int rank, ranks;
    int write_error;
} sweep;

static int usage_error(const char *fmt, const char *arg)
{
    fprintf(stderr, "mbk sweep: ");
    fprintf(stderr, fmt, arg);
    fprintf(stderr, " (see mbk sweep --help)\n");
    return APP_USAGE;
}

static void sweep_usage(FILE *f)
{
    fprintf(f,
            "usage: mbk sweep [MODEL] [options]   run many members of one model, one CSV row each\n"
            "\n"
            "Members: --samples times the points of every grid and list; member i's random values\n"
            "are draws of a counter-based generator keyed by (seed, i), the same on any number of\n"
            "threads or MPI ranks.\n"
            "  --samples N          members per grid point (default 1)\n"
            "  --seed S             seed of the random draws (default 1)\n"
            "  --vary NAME=DIST     vary a parameter (repeatable); DIST is one of\n"
            "                         uniform(a,b)   a <= b\n"
            "                         normal(m,s)    s >= 0\n"
            "                         grid(a,b,n)    n points from a to b (a <= b, n >= 1)\n"
            "                         list(v1,v2,..) the given values\n"
            "                       NAME is one of\n"
            "                         q0:JOINT[k]    initial coordinate k (default 0) of a joint\n"
            "                         u0:JOINT[k]    initial speed k of a joint\n"
            "                         gravity.x|y|z  a component of gravity\n"
            "                         ELEMENT.PARAM  a force element's parameter, e.g. spring1.k\n"
            "                                        (docs/forces.md names each element's parameters)\n"
            "                         mass:BODY      a body's mass (its inertia scaled with it)\n"
            "                         enabled:ELEMENT  0 disables a force element, other values enable it\n"
            "  --threads N          worker threads (default 0: all cores; under mpirun: the cores\n"
            "                       shared among the ranks of a host)\n"
            "  --output FILE        CSV, one row per member (default mbk-out/sweep.csv): member, the\n"
            "                       varied values, final q and u, energy_drift, t_end, steps, status,\n"
            "                       message; no wall-clock figures, so runs compare byte for byte\n"
            "  --plot FILE          SVG summary (default mbk-out/sweep.svg; 'none' writes nothing)\n"
            "  --resume             read the finished rows of --output back and run only the others;\n"
            "                       the file ends as an uninterrupted run's (the run options must be\n"
            "                       those FILE.settings recorded when the sweep started)\n"
            "  --quiet              no progress line (shown on a terminal only)\n"
            "run options: --t-final T, --integrator NAME, --accuracy A, --step H, --gravity X,Y,Z,\n"
            "  --q0 LIST, --u0 LIST, --floating-base, --no-limits, --no-damping (see mbk --help)\n"
            "\n"
            "Under MPI: mpirun -np 4 mbk sweep ... spreads the members over the ranks (rank 0 writes).\n"
            "Exit status: 0 every member succeeded; 1 some members failed (their rows say why) or\n"
            "an output could not be written; 2 bad usage (unknown parameter, bad distribution).\n");
}

/* ---- parsing ---------------------------------------------------------------- */

static int number(const char *text, double *out) { return app_parse_number("", text, out, NULL, 0); }

static int option_number(const char *name, const char *text, double *out)
{
    char why[320];
    if (app_parse_number(name, text, out, why, sizeof why) == 0) return 0;
    fprintf(stderr, "mbk sweep: %s (see mbk sweep --help)\n", why);
    return -1;
}

/* Split "a,b,c" (modifiable) into numbers; the count or -1 (what names the culprit). */
static int number_list(char *text, double *out, int cap, const char **bad)
{
    int n = 0;
    for (char *save = NULL, *item = strtok_r(text, ",", &save); item; item = strtok_r(NULL, ",", &save)) {
        while (*item == ' ') ++item;
        size_t len = strlen(item);
        while (len > 0 && item[len - 1] == ' ') item[--len] = '\0';
        if (n == cap || number(item, &out[n])) {
            *bad = item;
            return -1;
        }
        ++n;
    }
    return n;
}

/* NAME=DIST(args): the distribution part. */
static int parse_dist(sweep_var *v, const char *spec)
{
    snprintf(v->dist_text, sizeof v->dist_text, "%s", spec);
    const char *open = strchr(spec, '(');
    size_t len = strlen(spec);
    if (!open || len < 2 || spec[len - 1] != ')') {
        fprintf(stderr, "mbk sweep: --vary %s: '%s' is not uniform(a,b), normal(m,s), grid(a,b,n) or list(...) "
                        "(see mbk sweep --help)\n", v->name, spec);
        return APP_USAGE;
    }
    size_t kl = (size_t)(open - spec);
    char kind[16] = "";
    if (kl < sizeof kind) memcpy(kind, spec, kl), kind[kl] = '\0';
    char args[4096];
    size_t al = len - kl - 2;
    if (al >= sizeof args) return usage_error("--vary: the argument list of '%s' is too long", v->name);
    memcpy(args, open + 1, al);
    args[al] = '\0';
    double vals[1024];
    const char *bad = NULL;
    int n = number_list(args, vals, 1024, &bad);
    if (n < 0) {
        fprintf(stderr, "mbk sweep: --vary %s=%s: '%s' is not a finite number%s (see mbk sweep --help)\n", v->name, spec,
                bad, !strcmp(kind, "list") ? " (lists hold at most 1024 values)" : "");
        return APP_USAGE;
    }
    int want = !strcmp(kind, "uniform") || !strcmp(kind, "normal") ? 2 : !strcmp(kind, "grid") ? 3
               : !strcmp(kind, "list")                                   ? -1
                                                                         : 0;
    if (want == 0) {
        fprintf(stderr, "mbk sweep: --vary %s: unknown distribution '%s'; use uniform(a,b), normal(m,s), grid(a,b,n) "
                        "or list(v1,v2,...) (see mbk sweep --help)\n", v->name, kind);
        return APP_USAGE;
    }
    if ((want > 0 && n != want) || (want < 0 && n < 1)) {
        fprintf(stderr, "mbk sweep: --vary %s=%s: %s takes %s, got %d (see mbk sweep --help)\n", v->name, spec, kind,
                want == 2 ? "2 numbers" : want == 3 ? "3 numbers" : "at least one number", n);
        return APP_USAGE;
    }
    if (want < 0) {
        v->dist = D_LIST;
        v->n = n;
        v->list = malloc(sizeof(double) * (size_t)n);
        if (!v->list) return APP_FAILED;
        memcpy(v->list, vals, sizeof(double) * (size_t)n);
        return APP_OK;
    }
    v->a = vals[0], v->b = vals[1];
    if (!strcmp(kind, "normal")) {
        v->dist = D_NORMAL;
        if (v->b < 0) {
            fprintf(stderr, "mbk sweep: --vary %s=%s: the standard deviation %g is negative (see mbk sweep --help)\n",
                    v->name, spec, v->b);
            return APP_USAGE;
        }
        return APP_OK;
    }
    if (v->a > v->b) {
        fprintf(stderr, "mbk sweep: --vary %s=%s: a = %g is greater than b = %g; give a <= b (see mbk sweep --help)\n",
                v->name, spec, v->a, v->b);
        return APP_USAGE;
    }
    v->dist = kind[0] == 'u' ? D_UNIFORM : D_GRID;
    if (v->dist == D_GRID) {
        if (!(vals[2] >= 1 && vals[2] <= 1e6 && vals[2] == floor(vals[2]))) {
            fprintf(stderr, "mbk sweep: --vary %s=%s: n = %g must be a whole number from 1 to 1000000 (see mbk "
                            "sweep --help)\n", v->name, spec, vals[2]);
            return APP_USAGE;
        }
        v->n = (int)vals[2];
    }
    return APP_OK;
}

/* --samples, --seed or --threads a: a whole number v in its range. */
static int count_option(const char *a, const char *v, sweep *w)
{
    double x;
    if (option_number(a, v, &x)) return APP_USAGE;
    const bool whole = x == floor(x);
    if (!strcmp(a, "--samples")) {
        if (!whole || x < 1 || x > MAX_MEMBERS)
            return usage_error("--samples must be a whole number from 1 to 100000000, got '%s'", v);
        w->samples = (long)x;
    } else if (!strcmp(a, "--seed")) {
        if (!whole || x < 0 || x > 9007199254740992.0)
            return usage_error("--seed must be a whole number from 0 to 2^53, got '%s'", v);
        w->seed = (uint64_t)x;
    } else {
        if (!whole || x < 0 || x > 4096) return usage_error("--threads must be 0 (all cores) to 4096, got '%s'", v);
        w->threads = (int)x;
    }
    return APP_OK;
}

/* --vary NAME=DIST: a new varied parameter (at most MAX_VARS, each name once). */
static int vary_option(const char *a, const char *v, sweep *w)
{
    if (!v) return usage_error("%s needs NAME=DIST", a);
    if (w->nvars == MAX_VARS) return usage_error("%s", "at most 32 --vary options");
    const char *eq = strchr(v, '=');
    if (!eq || eq == v) return usage_error("--vary needs NAME=DIST, got '%s'", v);
    sweep_var *sv = &w->vars[w->nvars++];
    size_t nl = (size_t)(eq - v);
    if (nl >= sizeof sv->name) return usage_error("--vary: the name '%s' is too long", v);
    memcpy(sv->name, v, nl);
    sv->name[nl] = '\0';
    for (int k = 0; k + 1 < w->nvars; ++k)
        if (!strcmp(w->vars[k].name, sv->name)) return usage_error("--vary %s is given twice", sv->name);
    return parse_dist(sv, eq + 1);
}

/* An option that takes a value v: APP_OK or APP_USAGE. */
static int value_option(const char *a, const char *v, sweep *w)
{
    if (!strcmp(a, "--t-final")) return option_number(a, v, &w->t_final) ? APP_USAGE : APP_OK;
    if (!strcmp(a, "--accuracy")) return option_number(a, v, &w->accuracy) ? APP_USAGE : APP_OK;
    if (!strcmp(a, "--step")) {
        if (option_number(a, v, &w->step)) return APP_USAGE;
        return w->step > 0 ? APP_OK : usage_error("%s", "--step must be > 0 (leave it out for error-controlled steps)");
    }
    if (!strcmp(a, "--samples") || !strcmp(a, "--seed") || !strcmp(a, "--threads")) return count_option(a, v, w);
    if (!strcmp(a, "--vary")) return vary_option(a, v, w);
    if (!strcmp(a, "--integrator")) {
        if (!v) return usage_error("%s needs a name", a);
        w->integrator = v;
    } else if (!strcmp(a, "--gravity")) {
        char why[256];
        if (app_parse_vec3(a, v, &w->gravity, why, sizeof why)) return usage_error("%s", why);
        w->have_gravity = true;
    } else if (!strcmp(a, "--q0") || !strcmp(a, "--u0")) {
        if (!v) return usage_error("%s needs a list", a);
        if (a[2] == 'q') w->q0_text = v;
        else w->u0_text = v;
    } else if (!strcmp(a, "--output") || !strcmp(a, "--plot")) {
        if (!v || !*v) return usage_error("%s needs a file name", a);
        if (a[2] == 'o') w->output = v;
        else w->plot = v;
    } else {
        return usage_error("unknown option '%s'", a);
    }
    return APP_OK;
}

/* Option a (v the next argument; *takes: it took v): APP_OK or APP_USAGE. */
static int sweep_option(const char *a, const char *v, sweep *w, bool *takes)
{
    *takes = false;
    if (!strcmp(a, "--floating-base")) w->mo.floating_base = true;
    else if (!strcmp(a, "--no-limits")) w->mo.no_limits = true;
    else if (!strcmp(a, "--no-damping")) w->mo.no_damping = true;
    else if (!strcmp(a, "--quiet")) w->quiet = true;
    else if (!strcmp(a, "--resume")) w->resume = true;
    else {
        *takes = true;
        return value_option(a, v, w);
    }
    return APP_OK;
}

/* The values checked together; the number of members and each grid's or list's
   stride (the first varies slowest). */
static int check_sweep(sweep *w)
{
    char why[256];
    if (app_check_integration(w->t_final, w->accuracy, w->step, w->integrator, why, sizeof why))
        return usage_error("%s", why);
    double n = (double)w->samples;
    for (int k = 0; k < w->nvars; ++k)
        if (w->vars[k].dist == D_GRID || w->vars[k].dist == D_LIST) n *= w->vars[k].n;
    if (n > MAX_MEMBERS) return usage_error("%s", "the sweep has more than 100000000 members");
    w->n_members = (long)n;
    w->combos = w->n_members / w->samples;
    long stride = w->samples;
    for (int k = w->nvars - 1; k >= 0; --k)
        if (w->vars[k].dist == D_GRID || w->vars[k].dist == D_LIST) {
            w->vars[k].stride = stride;
            stride *= w->vars[k].n;
        }
    return APP_OK;
}

static int parse_args(int argc, char **argv, sweep *w)
{
    w->t_final = 10.0, w->accuracy = 1e-6, w->integrator = app_integrator_default();
    w->samples = 1, w->seed = 1, w->output = "mbk-out/sweep.csv", w->plot = "mbk-out/sweep.svg";
    for (int i = 0; i < argc; ++i) {
        const char *a = argv[i], *v = i + 1 < argc ? argv[i + 1] : NULL;
        if (a[0] != '-' || !strcmp(a, "-")) {
            if (w->model_spec) return usage_error("more than one model given ('%s')", a);
            w->model_spec = a;
            continue;
        }
        bool takes;
        if (sweep_option(a, v, w, &takes) != APP_OK) return APP_USAGE;
        if (takes) ++i;
    }
    return check_sweep(w);
}

/* ---- names of the varied parameters ---------------------------------------- */

/* "JOINT" or "JOINT[k]": body and k; -1 if no such joint. */
static int find_joint(const app_model *m, const char *text, int *k)
{
    char name[160];
    snprintf(name, sizeof name, "%s", text);
    *k = 0;
    char *br = strchr(name, '[');
    if (br) {
        char *end = NULL;
        long v = strtol(br + 1, &end, 10);
        if (end == br + 1 || *end != ']' || end[1] || v < 0 || v > 6) return -2;
        *k = (int)v;
        *br = '\0';
    }
    for (int b = 1; b < m->n_bodies; ++b)
        if (!strcmp(m->joint_name[b], name) || (!m->joint_name[b][0] && !strcmp(m->body_name[b], name))) return b;
    for (int b = 1; b < m->n_bodies; ++b)
        if (!strcmp(m->body_name[b], name)) return b;
    return -1;
}

static void list_elements(const mbk_forces *f)
{
    int n = mbk_forces_get_num_elements(f), shown = 0;
    fprintf(stderr, "  the model's named force elements:");
    for (int i = 0; i < n; ++i) {
        const char *name = mbk_force_get_name(f, i);
        if (!name || !name[0] || mbk_force_get_num_parameters(f, i) <= 0) continue;
        fprintf(stderr, "%s %s (", shown ? "," : "", name);
        for (int j = 0; j < mbk_force_get_num_parameters(f, i); ++j)
            fprintf(stderr, "%s%s", j ? " " : "", mbk_force_get_parameter_name(f, i, j));
        fprintf(stderr, ")");
        if (++shown == 12) {
            fprintf(stderr, " ...");
            break;
        }
    }
    fprintf(stderr, "%s\n", shown ? "" : " none");
}

/* Whether a distribution gives values below zero for sure (a normal one may, member by
   member: those members fail and say why). */
static bool below_zero(const sweep_var *v)
{
    if (v->dist == D_UNIFORM || v->dist == D_GRID) return v->a < 0;
    for (int k = 0; v->dist == D_LIST && k < v->n; ++k)
        if (v->list[k] < 0) return true;
    return false;
}

static int resolve_var(sweep *w, sweep_var *v, const mbk_state *s)
{
    const app_model *m = &w->m;
    const mbk_matter *mt = mbk_multibody_get_matter(m->sys);
    const mbk_forces *f = mbk_multibody_get_forces(m->sys);
    const char *name = v->name;
    if (!strncmp(name, "q0:", 3) || !strncmp(name, "u0:", 3)) {
        int k, b = find_joint(m, name + 3, &k);
        if (b == -2) return usage_error("--vary %s: write JOINT[k] with k a coordinate index", name);
        if (b < 0) {
            fprintf(stderr, "mbk sweep: --vary %s: the model has no joint named '%s' (mbk info lists them)\n", name, name + 3);
            return APP_USAGE;
        }
        bool q = name[0] == 'q';
        int n = q ? mbk_matter_get_body_num_q(mt, s, b) : mbk_matter_get_body_num_u(mt, s, b);
        if (k >= n) {
            fprintf(stderr, "mbk sweep: --vary %s: joint '%s' has %d %s\n", name, m->joint_name[b], n, q ? "q" : "u");
            return APP_USAGE;
        }
        v->kind = q ? V_Q0 : V_U0;
        v->index = k + (q ? mbk_matter_get_body_q_start(mt, s, b) : mbk_matter_get_body_u_start(mt, s, b));
        return APP_OK;
    }
    if (!strncmp(name, "mass:", 5)) {
        int k, b = find_joint(m, name + 5, &k);
        if (b < 0 || k != 0) {
            fprintf(stderr, "mbk sweep: --vary %s: the model has no body named '%s' (mbk info lists them)\n", name, name + 5);
            return APP_USAGE;
        }
        if (below_zero(v)) {
            fprintf(stderr, "mbk sweep: --vary %s: masses are >= 0\n", name);
            return APP_USAGE;
        }
        v->kind = V_MASS, v->index = b;
        return APP_OK;
    }
    if (!strncmp(name, "enabled:", 8)) {
        int e = mbk_force_find(f, name + 8);
        if (e < 0) {
            fprintf(stderr, "mbk sweep: --vary %s: the model has no force element named '%s'\n", name, name + 8);
            list_elements(f);
            return APP_USAGE;
        }
        v->kind = V_ENABLED, v->element = e;
        return APP_OK;
    }
    if (!strcmp(name, "gravity.x") || !strcmp(name, "gravity.y") || !strcmp(name, "gravity.z")) {
        if (m->gravity_force < 0) {
            fprintf(stderr, "mbk sweep: --vary %s: this model has no gravity element\n", name);
            return APP_USAGE;
        }
        v->kind = V_GRAVITY, v->index = name[8] - 'x', v->element = m->gravity_force;
        return APP_OK;
    }
    const char *dot = strrchr(name, '.');
    if (dot && dot != name && dot[1]) {
        char elem[160];
        snprintf(elem, sizeof elem, "%.*s", (int)(dot - name), name);
        int e = mbk_force_find(f, elem);
        if (e >= 0) {
            int p = mbk_force_find_parameter(f, e, dot + 1);
            if (p < 0) {
                fprintf(stderr, "mbk sweep: --vary %s: force element '%s' (%s) has no parameter '%s'; its parameters:",
                        name, elem, mbk_force_get_kind_name(f, e), dot + 1);
                int np = mbk_force_get_num_parameters(f, e);
                for (int j = 0; j < np; ++j) fprintf(stderr, " %s", mbk_force_get_parameter_name(f, e, j));
                fprintf(stderr, "%s\n", np > 0 ? "" : " none (a custom element)");
                return APP_USAGE;
            }
            v->kind = V_PARAM, v->element = e, v->param = p;
            return APP_OK;
        }
    }
    fprintf(stderr, "mbk sweep: --vary: unknown parameter '%s'; use q0:JOINT, u0:JOINT, gravity.x|y|z, "
                    "ELEMENT.PARAM, mass:BODY or enabled:ELEMENT (see mbk sweep --help)\n", name);
    list_elements(f);
    return APP_USAGE;
}

/* Whether two resolved variables set the same value (q0:elbow and q0:elbow[0]). */
static bool same_target(const sweep_var *a, const sweep_var *b)
{
    if (a->kind != b->kind) return false;
    if (a->kind == V_PARAM) return a->element == b->element && a->param == b->param;
    if (a->kind == V_ENABLED) return a->element == b->element;
    return a->index == b->index; /* q0, u0, a gravity component, a body's mass */
}

/* Two --vary names of one value are refused: the later would set it, the CSV would show both. */
static int check_distinct(const sweep *w)
{
    for (int j = 1; j < w->nvars; ++j)
        for (int k = 0; k < j; ++k)
            if (same_target(&w->vars[j], &w->vars[k])) {
                fprintf(stderr, "mbk sweep: --vary %s and --vary %s name the same value; give it once (see mbk "
                                "sweep --help)\n", w->vars[k].name, w->vars[j].name);
                return APP_USAGE;
            }
    return APP_OK;
}

/* --q0 / --u0 for the model in s (app_parse_initial), kept to set each member's State. */
static int parse_initial(sweep *w, const mbk_state *s, const char *text, bool is_q, app_assign **out, int *nout)
{
    const int n = is_q ? mbk_state_get_nq(s) : mbk_state_get_nu(s);
    *out = calloc((size_t)n + 1, sizeof **out);
    if (!*out) return APP_FAILED;
    return app_parse_initial(&w->m, s, "sweep", text, is_q, *out, nout);
}

/* ---- members ------------------------------------------------------------------ */

static double var_value(const sweep *w, int j, long member)
{
    const sweep_var *v = &w->vars[j];
    long k;
    switch (v->dist) {
    case D_UNIFORM:
        return v->a + (v->b - v->a) * mbk_random_uniform(w->seed, (uint64_t)member, (uint64_t)j);
    case D_NORMAL:
        return v->a + v->b * mbk_random_normal(w->seed, (uint64_t)member, (uint64_t)j);
    case D_GRID:
        k = (member / v->stride) % v->n;
        return v->n == 1 ? v->a : v->a + (v->b - v->a) * (double)k / (double)(v->n - 1);
    case D_LIST:
    default:
        k = (member / v->stride) % v->n;
        return v->list[k];
    }
}

static int member_init(void *user, const mbk_system *sys, int member, mbk_state *s)
{
    const sweep *w = user;
    const app_model *m = &w->m;
    const mbk_matter *mt = mbk_multibody_get_matter(sys);
    const mbk_forces *f = mbk_multibody_get_forces(sys);
    if (m->init_state && m->init_state(m, s)) return mbk_last_status() < 0 ? mbk_last_status() : MBK_EUSER;
    if (w->have_gravity && mbk_force_set_gravity(f, s, m->gravity_force, w->gravity) < 0) return -1;
    bool moved = w->nq0 > 0 || w->nu0 > 0;
    bool *locked = NULL;
    if (w->nconstraints > 0) {
        locked = calloc((size_t)w->nq + 1, sizeof *locked);
        if (!locked) return mbk_set_error(MBK_ENOMEM, "out of memory");
    }
    double *q = mbk_state_upd_q(s), *u = mbk_state_upd_u(s);
    for (int i = 0; i < w->nq0; ++i) {
        q[w->q0[i].index] = w->q0[i].value;
        if (locked) locked[w->q0[i].index] = true;
    }
    for (int i = 0; i < w->nu0; ++i) u[w->u0[i].index] = w->u0[i].value;
    int rc = 0;
    for (int j = 0; j < w->nvars && rc >= 0; ++j) {
        const sweep_var *v = &w->vars[j];
        double x = var_value(w, j, member);
        double p[16];
        mbk_mass_props mp;
        switch (v->kind) {
        case V_Q0:
            mbk_state_upd_q(s)[v->index] = x;
            if (locked) locked[v->index] = true;
            moved = true;
            break;
        case V_U0:
            mbk_state_upd_u(s)[v->index] = x;
            moved = true;
            break;
        case V_GRAVITY:
        case V_PARAM: {
            int np = mbk_force_get_num_parameters(f, v->element);
            if ((rc = mbk_force_get_parameters(f, s, v->element, p, np)) < 0) break;
            p[v->kind == V_GRAVITY ? v->index : v->param] = x;
            if ((rc = mbk_force_set_parameters(f, s, v->element, p, np)) < 0)
                mbk_set_error(rc, "--vary %s = %.17g: %s", v->name, x, mbk_last_error());
            break;
        }
        case V_MASS:
            if ((rc = mbk_matter_get_state_body_mass_props(mt, s, v->index, &mp)) < 0) break;
            if (mp.mass > 0) mp.inertia = mbk_mat33_scale(mp.inertia, x / mp.mass);
            mp.mass = x;
            if ((rc = mbk_matter_set_body_mass_props(mt, s, v->index, &mp)) < 0)
                mbk_set_error(rc, "--vary %s = %.17g: %s", v->name, x, mbk_last_error());
            break;
        case V_ENABLED:
            rc = mbk_force_set_enabled(f, s, v->element, x != 0.0);
            break;
        }
    }
    if (rc >= 0 && locked && moved) {
        /* close the loops again around the coordinates given */
        if ((rc = mbk_system_assemble_locked(sys, s, 1e-12, locked)) >= 0) rc = mbk_system_project(sys, s, 1e-12);
    }
    free(locked);
    return rc < 0 ? rc : 0;
}

/* Append printf output to the record, keeping room for the end of the row. */
typedef struct buf {
    char *p;
    size_t n, cap;
} buf;

static void put(buf *b, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
static void put(buf *b, const char *fmt, ...)
{
    if (b->n >= b->cap) return;
    va_list ap;
    va_start(ap, fmt);
    int k = vsnprintf(b->p + b->n, b->cap - b->n, fmt, ap);
    va_end(ap);
    if (k > 0) b->n = b->n + (size_t)k < b->cap ? b->n + (size_t)k : b->cap - 1;
}

static const char *status_word(int status)
{
    return status == MBK_OK ? "ok" : status == MBK_TERMINATED ? "terminated" : mbk_status_name(status);
}

static int member_pack(void *user, const mbk_system *sys, int member, const mbk_state *s, int status, void *record,
                       size_t size)
{
    const sweep *w = user;
    char msg[ROW_MSG];
    snprintf(msg, sizeof msg, "%s", status < 0 ? mbk_last_error() : "");
    buf b = {record, 0, size - ROW_MSG * 2 - 64}; /* the message has its own room at the end */
    put(&b, "%d", member);
    for (int j = 0; j < w->nvars; ++j) put(&b, ",%.17g", var_value(w, j, member));
    const double *q = mbk_state_get_q(s), *u = mbk_state_get_u(s);
    bool have = q && u && mbk_state_get_nq(s) == w->nq && mbk_state_get_nu(s) == w->nu;
    for (int i = 0; i < w->nq; ++i) have ? put(&b, ",%.17g", q[i]) : put(&b, ",");
    for (int i = 0; i < w->nu; ++i) have ? put(&b, ",%.17g", u[i]) : put(&b, ",");
    /* energy drift E(end) - E(0), when both States were realized far enough */
    const mbk_state *s0 = mbk_ensemble_get_member_initial_state(w->e, member);
    double ke0, pe0, ke1, pe1;
    if (s0 && mbk_state_get_stage(s) >= MBK_STAGE_VELOCITY && mbk_system_calc_energy(sys, s0, &ke0, &pe0) == MBK_OK &&
        mbk_system_calc_energy(sys, s, &ke1, &pe1) == MBK_OK)
        put(&b, ",%.17g", (ke1 + pe1) - (ke0 + pe0));
    else
        put(&b, ",");
    mbk_integrator_stats st;
    long steps = mbk_ensemble_get_member_stats(w->e, member, &st) == MBK_OK ? st.steps_taken : 0;
    put(&b, ",%.17g,%ld,%s,", mbk_state_get_time(s), steps, status_word(status));
    /* the message, quoted, on one line */
    b.cap = size;
    if (msg[0]) {
        put(&b, "\"");
        for (const char *c = msg; *c; ++c) {
            if (*c == '"') put(&b, "\"\"");
            else if (*c == '\n' || *c == '\r') put(&b, " ");
            else put(&b, "%c", *c);
        }
        put(&b, "\"");
    }
    put(&b, "\n");
    return 0;
}

/* ---- the output ------------------------------------------------------------------ */

static void header(const sweep *w, FILE *f)
{
    fprintf(f, "member");
    for (int j = 0; j < w->nvars; ++j) fprintf(f, ",%s", w->vars[j].name);
    for (int i = 0; i < w->nq; ++i) fprintf(f, ",q%d", i);
    for (int i = 0; i < w->nu; ++i) fprintf(f, ",u%d", i);
    fprintf(f, ",energy_drift,t_end,steps,status,message\n");
}

static void format_duration(double s, char *out, size_t n)
{
    if (!isfinite(s) || s < 0) snprintf(out, n, "?");
    else if (s < 60) snprintf(out, n, "%.0f s", s);
    else if (s < 3600) snprintf(out, n, "%d min %02d s", (int)(s / 60), (int)fmod(s, 60));
    else snprintf(out, n, "%d h %02d min", (int)(s / 3600), (int)fmod(s / 60, 60));
}

static void progress(sweep *w, bool force)
{
    if (!w->tty) return;
    double now = app_now();
    if (!force && now - w->last_progress < 0.1) return;
    w->last_progress = now;
    long total = w->n_members - w->n_prev, done = w->n_done;
    double el = now - w->t_start, left = done > 0 ? el / (double)done * (double)(total - done) : NAN;
    char a[32], b[32];
    format_duration(el, a, sizeof a);
    format_duration(left, b, sizeof b);
    fprintf(stderr, "\r  sweep: %ld of %ld members done, %ld failed, %s elapsed, about %s left   ", done + w->n_prev,
            w->n_members, w->n_failed, a, done > 0 ? b : "?");
    w->shown = true;
}

static int member_collect(void *user, int member, int status, const void *record, size_t size)
{
    sweep *w = user;
    const char *row = record;
    size_t len = strnlen(row, size);
    long at = ftell(w->out);
    if (at < 0 || fwrite(row, 1, len, w->out) != len || fflush(w->out) != 0) {
        if (!w->write_error) fprintf(stderr, "\nmbk sweep: cannot write %s: %s\n", w->output, strerror(errno));
        w->write_error = 1;
        return mbk_set_error(MBK_EIO, "cannot write %s", w->output);
    }
    if (w->offset[member] < 0) w->offset[member] = at;
    w->n_done++;
    if (status < 0) w->n_failed++;
    progress(w, false);
    return 0;
}

/* The value text of field k (0-based) of a row; its length in *len. */
static const char *field(const char *row, int k, size_t *len)
{
    const char *p = row;
    for (int i = 0; i < k; ++i) {
        p = strchr(p, ',');
        if (!p) return NULL;
        ++p;
    }
    *len = strcspn(p, ",\n");
    return p;
}

/* ---- the settings a resumed sweep must share ------------------------------------ */

/* x as the shortest of %.15g and %.17g that reads back as x (settings are compared as text). */
static void put_number(FILE *f, double x)
{
    char t[40];
    snprintf(t, sizeof t, "%.15g", x);
    if (strtod(t, NULL) != x) snprintf(t, sizeof t, "%.17g", x);
    fputs(t, f);
}

/* What decides the rows besides the varied values each row shows, one option a line:
   FILE.settings beside the output, written when a sweep starts and compared by
   --resume (the CSV itself stays byte for byte what an uninterrupted run writes). */
static char *settings_text(const sweep *w)
{
    char *text = NULL;
    size_t len = 0;
    FILE *f = open_memstream(&text, &len);
    if (!f) return NULL;
    fprintf(f, "mbk sweep settings 1\nmodel %s\n", w->m.spec);
    fprintf(f, "--floating-base %d\n--no-limits %d\n--no-damping %d\n", w->mo.floating_base, w->mo.no_limits,
            w->mo.no_damping);
    fprintf(f, "--t-final "), put_number(f, w->t_final);
    fprintf(f, "\n--integrator %s\n--accuracy ", w->integrator), put_number(f, w->accuracy);
    fprintf(f, "\n--step "), put_number(f, w->step);
    fprintf(f, "\n--gravity ");
    if (!w->have_gravity) fprintf(f, "(the model's)");
    for (int k = 0; w->have_gravity && k < 3; ++k) {
        if (k) fputc(',', f);
        put_number(f, (&w->gravity.x)[k]);
    }
    fprintf(f, "\n--q0 %s\n--u0 %s\n", w->q0_text ? w->q0_text : "(the model's)",
            w->u0_text ? w->u0_text : "(the model's)");
    fprintf(f, "--samples %ld\n--seed %llu\n", w->samples, (unsigned long long)w->seed);
    for (int j = 0; j < w->nvars; ++j) fprintf(f, "--vary %s=%s\n", w->vars[j].name, w->vars[j].dist_text);
    if (fclose(f) != 0) {
        free(text);
        return NULL;
    }
    return text;
}

/* FILE.settings for the output FILE (freed by the caller). */
static char *settings_path(const sweep *w)
{
    size_t n = strlen(w->output) + sizeof ".settings";
    char *p = malloc(n);
    if (p) snprintf(p, n, "%s.settings", w->output);
    return p;
}

/* When a sweep starts into a regular file: its settings beside it (written whole, then
   renamed into place). APP_OK or APP_OUTPUT. */
static int write_settings(const sweep *w)
{
    struct stat st;
    if (stat(w->output, &st) != 0 || !S_ISREG(st.st_mode)) return APP_OK; /* a pipe or device: nothing to resume */
    char *path = settings_path(w), *text = settings_text(w);
    int status = path && text ? APP_OK : APP_FAILED;
    if (status == APP_OK && app_write_text(path, text) != 0) {
        fprintf(stderr, "mbk sweep: cannot write %s: %s\n", path, strerror(errno));
        status = APP_OUTPUT;
    }
    free(text), free(path);
    return status;
}

/* The next line of *p (its newline cut, *p moved past it); NULL at the end. */
static char *next_line(char **p)
{
    if (!*p || !**p) return NULL;
    char *line = *p, *nl = strchr(line, '\n');
    if (nl) *nl = '\0';
    *p = nl ? nl + 1 : line + strlen(line);
    return line;
}

/* The settings file's lines against this sweep's, in order (the model's spelling only
   warns, as in mbk run --resume): APP_OK, or APP_USAGE with the first difference said. */
static int compare_settings(const sweep *w, const char *path, char *file, char *want)
{
    char *a, *b;
    while ((b = next_line(&want)) != NULL) {
        a = next_line(&file);
        if (a && !strcmp(a, b)) continue;
        if (a && !strncmp(a, "model ", 6) && !strncmp(b, "model ", 6)) {
            fprintf(stderr, "mbk sweep: warning: %s was started with the model '%s'; continuing it with '%s'\n",
                    w->output, a + 6, b + 6);
            continue;
        }
        fprintf(stderr, "mbk sweep: --resume: %s was started with %s (%s), this sweep has %s: its rows would mix "
                        "the two; run without --resume to start again, or give another --output\n",
                w->output, a ? a : "fewer settings", path, b);
        return APP_USAGE;
    }
    if ((a = next_line(&file)) != NULL) {
        fprintf(stderr, "mbk sweep: --resume: %s was started with %s (%s), which this sweep does not have; run "
                        "without --resume to start again, or give another --output\n", w->output, a, path);
        return APP_USAGE;
    }
    return APP_OK;
}

/* --resume of an output with rows: its settings must be this sweep's. */
static int check_settings(const sweep *w)
{
    char *path = settings_path(w), *want = settings_text(w), *file = NULL;
    int status = path && want ? APP_OK : APP_FAILED;
    if (status == APP_OK && !(file = app_read_text(path, NULL))) {
        fprintf(stderr, "mbk sweep: --resume: cannot read %s (%s), so the settings the rows of %s were made with "
                        "cannot be checked; run without --resume to start again\n", path, strerror(errno), w->output);
        status = APP_USAGE;
    }
    if (file) status = compare_settings(w, path, file, want);
    free(file), free(want), free(path);
    return status;
}

/* --resume: read the finished rows back. APP_OK, or a reason to stop (nothing changed). */
static int read_back(sweep *w, bool *fresh)
{
    *fresh = true;
    FILE *f = fopen(w->output, "r");
    if (!f) {
        if (errno == ENOENT) return APP_OK; /* nothing to resume: start */
        fprintf(stderr, "mbk sweep: --resume: cannot read %s: %s\n", w->output, strerror(errno));
        return APP_MODEL;
    }
    char *expect = NULL, *line = NULL;
    size_t elen = 0, cap = 0;
    FILE *h = open_memstream(&expect, &elen);
    if (!h) {
        fclose(f);
        return APP_FAILED;
    }
    header(w, h);
    fclose(h);
    int status = APP_OK;
    ssize_t n = getline(&line, &cap, f);
    long good_end = 0;
    if (n <= 0 || line[n - 1] != '\n') {
        /* an empty or cut header: start again */
        fclose(f);
        free(line);
        free(expect);
        return APP_OK;
    }
    if (strcmp(line, expect) != 0) {
        fprintf(stderr, "mbk sweep: --resume: the columns of %s are not this sweep's (another model or other --vary "
                        "options?); run without --resume to start again, or give another --output\n", w->output);
        status = APP_USAGE;
    }
    if (status == APP_OK) status = check_settings(w);
    good_end = n;
    long rows = 0;
    char want[64];
    while (status == APP_OK && (n = getline(&line, &cap, f)) > 0) {
        if (line[n - 1] != '\n') break; /* a row cut by the interruption: run that member again */
        char *end = NULL;
        long member = strtol(line, &end, 10);
        if (end == line || *end != ',' || member < 0 || member >= w->n_members) {
            fprintf(stderr, "mbk sweep: --resume: %s has a row that is not a member of this sweep (row %ld); run "
                            "without --resume to start again\n", w->output, rows + 1);
            status = APP_USAGE;
            break;
        }
        /* its parameters must be the ones this sweep gives that member */
        for (int j = 0; j < w->nvars && status == APP_OK; ++j) {
            size_t len;
            const char *v = field(line, j + 1, &len);
            snprintf(want, sizeof want, "%.17g", var_value(w, j, member));
            if (!v || len != strlen(want) || strncmp(v, want, len)) {
                fprintf(stderr, "mbk sweep: --resume: member %ld of %s has %s = %.*s, but this sweep gives it %s "
                                "(another --seed, --samples or distribution?); run without --resume to start "
                                "again\n", member, w->output, w->vars[j].name, v ? (int)len : 0, v ? v : "", want);
                status = APP_USAGE;
            }
        }
        if (status != APP_OK) break;
        if (w->offset[member] < 0) {
            w->offset[member] = good_end;
            w->n_prev++;
        }
        good_end += n;
        ++rows;
    }
    fclose(f);
    free(line);
    free(expect);
    if (status != APP_OK) return status;
    /* drop a cut last row, then append */
    if (truncate(w->output, good_end) != 0) {
        fprintf(stderr, "mbk sweep: --resume: cannot truncate %s: %s\n", w->output, strerror(errno));
        return APP_FAILED;
    }
    *fresh = false;
    return APP_OK;
}

/* ---- the SVG summary --------------------------------------------------------- */

typedef struct plot_data {
    long n;
    double *x;     /* n x nx: the first varied values */
    int nx;
    double *q0, *drift;
    unsigned char *ok;
} plot_data;

static double pdata_x(const plot_data *d, long i, int k) { return d->x[i * d->nx + k]; }

static void svg_escape(FILE *f, const char *s)
{
    for (; *s; ++s) {
        if (*s == '&') fputs("&amp;", f);
        else if (*s == '<') fputs("&lt;", f);
        else if (*s == '>') fputs("&gt;", f);
        else fputc(*s, f);
    }
}

/* One scatter panel: ys against xs (member index when xs is NULL). */
static void scatter(FILE *f, double x0, double y0, double pw, double ph, const plot_data *d, int xk, const double *ys,
                    const char *xlabel, const char *ylabel)
{
    double xlo = INFINITY, xhi = -INFINITY, ylo = INFINITY, yhi = -INFINITY;
    for (long i = 0; i < d->n; ++i) {
        double x = xk >= 0 ? pdata_x(d, i, xk) : (double)i, y = ys[i];
        if (!isfinite(x) || !isfinite(y)) continue;
        xlo = fmin(xlo, x), xhi = fmax(xhi, x), ylo = fmin(ylo, y), yhi = fmax(yhi, y);
    }
    if (!(xhi >= xlo)) xlo = 0, xhi = 1;
    if (!(yhi >= ylo)) ylo = 0, yhi = 1;
    if (xhi - xlo <= 1e-12 * fmax(1, fabs(xhi))) xlo -= 0.5, xhi += 0.5;
    if (yhi - ylo <= 1e-12 * fmax(1, fabs(yhi))) ylo -= fmax(1e-9, fabs(ylo) * 1e-3), yhi += fmax(1e-9, fabs(yhi) * 1e-3);
    fprintf(f, "<rect x=\"%.1f\" y=\"%.1f\" width=\"%.1f\" height=\"%.1f\" fill=\"#fff\" stroke=\"#444\"/>\n", x0, y0, pw, ph);
    fprintf(f, "<text x=\"%.1f\" y=\"%.1f\" font-size=\"11\" text-anchor=\"middle\">", x0 + pw / 2, y0 + ph + 30);
    svg_escape(f, xlabel);
    fprintf(f, "</text>\n<text x=\"%.1f\" y=\"%.1f\" font-size=\"11\" text-anchor=\"middle\" transform=\"rotate(-90 %.1f "
               "%.1f)\">", x0 - 48, y0 + ph / 2, x0 - 48, y0 + ph / 2);
    svg_escape(f, ylabel);
    fprintf(f, "</text>\n");
    fprintf(f, "<text x=\"%.1f\" y=\"%.1f\" font-size=\"10\" text-anchor=\"start\">%.4g</text>"
               "<text x=\"%.1f\" y=\"%.1f\" font-size=\"10\" text-anchor=\"end\">%.4g</text>\n"
               "<text x=\"%.1f\" y=\"%.1f\" font-size=\"10\" text-anchor=\"end\">%.4g</text>"
               "<text x=\"%.1f\" y=\"%.1f\" font-size=\"10\" text-anchor=\"end\">%.4g</text>\n",
            x0, y0 + ph + 14, xlo, x0 + pw, y0 + ph + 14, xhi, x0 - 4, y0 + ph, ylo, x0 - 4, y0 + 10, yhi);
    long step = d->n > 5000 ? d->n / 5000 + 1 : 1;
    for (long i = 0; i < d->n; i += step) {
        double x = xk >= 0 ? pdata_x(d, i, xk) : (double)i, y = ys[i];
        if (!isfinite(x)) continue;
        double px = x0 + (x - xlo) / (xhi - xlo) * pw;
        if (!d->ok[i] || !isfinite(y)) { /* failed members: a red cross on the axis */
            double py = isfinite(y) ? y0 + ph - (y - ylo) / (yhi - ylo) * ph : y0 + ph;
            fprintf(f, "<path d=\"M%.1f %.1fl6 6m0 -6l-6 6\" stroke=\"#d62728\" transform=\"translate(-3 -3)\"/>\n", px, py);
            continue;
        }
        double py = y0 + ph - (y - ylo) / (yhi - ylo) * ph;
        fprintf(f, "<circle cx=\"%.1f\" cy=\"%.1f\" r=\"2.2\" fill=\"#1f77b4\" fill-opacity=\"0.7\"/>\n", px, py);
    }
}

static int write_plot(const sweep *w, const plot_data *d)
{
    FILE *f = fopen(w->plot, "w");
    if (!f) return -1;
    int panels = d->nx > 0 ? d->nx : 1;
    double W = 360.0 * panels + 40, H = 600;
    fprintf(f, "<?xml version=\"1.0\" encoding=\"UTF-8\"?>\n<svg xmlns=\"http://www.w3.org/2000/svg\" width=\"%.0f\" "
               "height=\"%.0f\" viewBox=\"0 0 %.0f %.0f\" font-family=\"sans-serif\">\n<rect width=\"100%%\" "
               "height=\"100%%\" fill=\"#fafafa\"/>\n<text x=\"%.1f\" y=\"24\" font-size=\"14\" text-anchor=\"middle\">",
            W, H, W, H, W / 2);
    char title[700];
    long failed = 0;
    for (long i = 0; i < d->n; ++i) failed += !d->ok[i];
    snprintf(title, sizeof title, "mbk sweep %s: %ld members, %ld failed (red), t = %g s", w->m.spec, d->n, failed, w->t_final);
    svg_escape(f, title);
    fprintf(f, "</text>\n");
    for (int k = 0; k < panels; ++k) {
        double x0 = 70 + 360.0 * k;
        const char *xl = d->nx > 0 ? w->vars[k].name : "member";
        scatter(f, x0, 50, 270, 210, d, d->nx > 0 ? k : -1, d->q0, xl, w->nq > 0 ? "final q0" : "final t");
        scatter(f, x0, 330, 270, 210, d, d->nx > 0 ? k : -1, d->drift, xl, "energy drift E(end) - E(0) (J)");
    }
    fprintf(f, "</svg>\n");
    int err = ferror(f);
    return fclose(f) != 0 || err ? -1 : 0;
}

/* The rows in member order into FILE.tmp, then over FILE; gathers the plot's data. */
static int finish_output(sweep *w, plot_data *d)
{
    char tmp[4200];
    snprintf(tmp, sizeof tmp, "%s.tmp", w->output);
    FILE *in = fopen(w->output, "r"), *out = fopen(tmp, "w");
    if (!in || !out) {
        fprintf(stderr, "mbk sweep: cannot write %s: %s\n", in ? tmp : w->output, strerror(errno));
        if (in) fclose(in);
        if (out) fclose(out);
        return APP_OUTPUT;
    }
    header(w, out);
    d->nx = w->nvars < 4 ? w->nvars : 4;
    d->x = malloc(sizeof(double) * (size_t)(w->n_members * (d->nx ? d->nx : 1)));
    d->q0 = malloc(sizeof(double) * (size_t)w->n_members);
    d->drift = malloc(sizeof(double) * (size_t)w->n_members);
    d->ok = malloc((size_t)w->n_members);
    char *line = NULL;
    size_t cap = 0;
    int status = d->x && d->q0 && d->drift && d->ok ? APP_OK : APP_FAILED;
    for (long i = 0; i < w->n_members && status == APP_OK; ++i) {
        if (w->offset[i] < 0) continue;
        if (fseek(in, w->offset[i], SEEK_SET) != 0 || getline(&line, &cap, in) <= 0) {
            fprintf(stderr, "mbk sweep: cannot read %s back: %s\n", w->output, strerror(errno));
            status = APP_FAILED;
            break;
        }
        fputs(line, out);
        long k = d->n++;
        size_t len;
        for (int j = 0; j < d->nx; ++j) d->x[k * d->nx + j] = var_value(w, j, i);
        const char *v = field(line, 1 + w->nvars, &len);
        d->q0[k] = v && len && w->nq > 0 ? strtod(v, NULL) : NAN;
        v = field(line, 1 + w->nvars + w->nq + w->nu, &len);
        d->drift[k] = v && len ? strtod(v, NULL) : NAN;
        v = field(line, 1 + w->nvars + w->nq + w->nu + 3, &len);
        d->ok[k] = v && ((len == 2 && !strncmp(v, "ok", 2)) || (len == 10 && !strncmp(v, "terminated", 10)));
    }
    free(line);
    fclose(in);
    int err = ferror(out);
    if (fclose(out) != 0 || err) status = APP_OUTPUT;
    if (status == APP_OK && rename(tmp, w->output) != 0) {
        fprintf(stderr, "mbk sweep: cannot replace %s: %s\n", w->output, strerror(errno));
        status = APP_OUTPUT;
    }
    if (status != APP_OK) remove(tmp);
    return status;
}

/* ---- the command ---------------------------------------------------------------- */

static int integrator_setup(void *user, mbk_integrator *ig)
{
    const sweep *w = user;
    return w->step > 0 ? mbk_integrator_set_fixed_step(ig, w->step) : 0;
}

static void free_sweep(sweep *w)
{
    for (int j = 0; j < w->nvars; ++j) free(w->vars[j].list);
    free(w->q0);
    free(w->u0);
    free(w->offset);
    free(w->output_target);
    if (w->out) fclose(w->out);
    mbk_ensemble_destroy(w->e);
    app_model_free(&w->m);
}

/* Every rank: the model, the varied parameters and the ensemble (w->e). */
static int sweep_prepare(sweep *w)
{
    int status = app_model_load(w->model_spec, &w->mo, &w->m);
    if (status) return status;
    mbk_state *s = app_model_initial_state(&w->m);
    if (!s) return APP_FAILED;
    w->nq = mbk_state_get_nq(s), w->nu = mbk_state_get_nu(s);
    w->nconstraints = mbk_matter_get_num_constraints(mbk_multibody_get_matter(w->m.sys));
    if (w->have_gravity && w->m.gravity_force < 0) {
        fprintf(stderr, "mbk sweep: --gravity: this model has no gravity element\n");
        status = APP_USAGE;
    }
    for (int j = 0; j < w->nvars && status == APP_OK; ++j) status = resolve_var(w, &w->vars[j], s);
    if (status == APP_OK) status = check_distinct(w);
    if (status == APP_OK && w->q0_text) status = parse_initial(w, s, w->q0_text, true, &w->q0, &w->nq0);
    if (status == APP_OK && w->u0_text) status = parse_initial(w, s, w->u0_text, false, &w->u0, &w->nu0);
    mbk_state_destroy(s);
    if (status) return status;
    w->record_size = (size_t)(w->nvars + w->nq + w->nu + 8) * 28 + 2 * ROW_MSG + 256;

    mbk_ensemble *e = mbk_ensemble_create(w->m.sys, (int)w->n_members);
    if (!e) return app_fail("creating the ensemble");
    w->e = e;
    int threads = w->threads;
#ifdef MBK_HAVE_MPI
    if (threads == 0 && w->ranks > 1) {
        long cores = sysconf(_SC_NPROCESSORS_ONLN);
        threads = (int)(cores / mbk_mpi_local_size());
        if (threads < 1) threads = 1;
    }
#endif
    if (mbk_ensemble_set_integrator(e, w->integrator, w->accuracy) < 0 || mbk_ensemble_set_threads(e, threads) < 0 ||
        mbk_ensemble_set_integrator_setup(e, integrator_setup, w) < 0)
        return app_fail("setting up the ensemble");
    return APP_OK;
}

/* The output is read back to sort its rows (and truncated by --resume): a regular file,
   or a symlink to one, which is then written through its target (the sorted rows are
   renamed over the target, not over the link). APP_OK or APP_USAGE. */
static int regular_output(sweep *w)
{
    struct stat st;
    if (stat(w->output, &st) == 0 && !S_ISREG(st.st_mode)) {
        fprintf(stderr, "mbk sweep: --output %s is not a regular file (the sweep reads its rows back to sort "
                        "them); give a file\n", w->output);
        return APP_USAGE;
    }
    if (!(w->output_target = app_output_target(w->output))) return APP_FAILED; /* out of memory */
    w->output = w->output_target;
    return APP_OK;
}

/* Rank 0: the output file (read back with --resume); finished members are skipped. */
static int open_output(sweep *w)
{
    int status = regular_output(w);
    if (status) return status;
    w->offset = malloc(sizeof(long) * (size_t)w->n_members);
    if (!w->offset) return APP_FAILED;
    for (long i = 0; i < w->n_members; ++i) w->offset[i] = -1;
    bool fresh = true;
    app_make_parent_dir(w->output);
    if (w->resume) status = read_back(w, &fresh);
    if (status) return status;
    w->out = fopen(w->output, fresh ? "w" : "a");
    if (!w->out) {
        fprintf(stderr, "mbk sweep: cannot write %s: %s\n", w->output, strerror(errno));
        return APP_OUTPUT;
    }
    if (fresh) {
        if ((status = write_settings(w)) != APP_OK) return status;
        header(w, w->out);
        fflush(w->out); /* a failure shows at the first row: the run stops then */
    }
    for (long i = 0; i < w->n_members; ++i)
        if (w->offset[i] >= 0) mbk_ensemble_skip_member(w->e, (int)i);
    return APP_OK;
}

/* Run (rank 0 writes), report. */
static int sweep_run(sweep *w)
{
    mbk_ensemble *e = w->e;
    w->t_start = app_now();
    w->tty = w->rank == 0 && !w->quiet && isatty(STDERR_FILENO);
    int rc;
#ifdef MBK_HAVE_MPI
    if (w->ranks > 1)
        rc = mbk_ensemble_run_mpi(e, w->t_final, w->record_size, member_init, member_pack, member_collect, w);
    else
#endif
        rc = mbk_ensemble_run_records(e, w->t_final, w->record_size, member_init, member_pack, member_collect, w);
    double wall = app_now() - w->t_start;
    if (w->shown) fprintf(stderr, "\r%*s\r", 100, "");
    int n_failed = mbk_ensemble_get_num_failed(e), n_run = mbk_ensemble_get_num_run(e), n_threads = mbk_ensemble_get_threads(e);
    mbk_ensemble_destroy(e);
    w->e = NULL;
    if (rc < 0) {
        if (w->rank == 0 && !w->write_error) fprintf(stderr, "mbk sweep: the sweep stopped: %s\n", mbk_last_error());
        return w->write_error ? APP_OUTPUT : APP_FAILED;
    }
    if (w->rank != 0) return n_failed > 0 ? APP_FAILED : APP_OK;

    /* rank 0: the rows in member order, the plot, the summary */
    fclose(w->out);
    w->out = NULL;
    plot_data d = {0};
    int status = finish_output(w, &d);
    bool plotted = false;
    if (status == APP_OK && strcmp(w->plot, "none")) {
        app_make_parent_dir(w->plot);
        if (write_plot(w, &d)) {
            fprintf(stderr, "mbk sweep: cannot write %s: %s\n", w->plot, strerror(errno));
            status = APP_OUTPUT;
        } else {
            plotted = true;
        }
    }
    long failed_total = 0;
    for (long i = 0; i < d.n; ++i) failed_total += !d.ok[i];
    free(d.x), free(d.q0), free(d.drift), free(d.ok);
    printf("mbk %s: swept %s\n", mbk_version(), w->m.spec);
    printf("  model        %s\n", w->m.title);
    printf("  members      %ld (%ld sample%s x %ld grid/list point%s), t = 0 -> %g s, %s, accuracy %g%s\n",
           w->n_members, w->samples, w->samples == 1 ? "" : "s", w->combos, w->combos == 1 ? "" : "s", w->t_final,
           w->integrator, w->accuracy, w->step > 0 ? " (fixed step)" : "");
    for (int j = 0; j < w->nvars; ++j) printf("  varied       %s = %s\n", w->vars[j].name, w->vars[j].dist_text);
    printf("  run          %d member%s on %d thread%s", n_run, n_run == 1 ? "" : "s", n_threads, n_threads == 1 ? "" : "s");
    if (w->ranks > 1) printf(" per rank, %d MPI ranks", w->ranks);
    if (w->n_prev) printf("; %ld read back from the output (--resume)", w->n_prev);
    printf(", %.3f s wall\n", wall);
    printf("  results      %ld ok, %ld failed%s\n", d.n - failed_total, failed_total,
           failed_total ? " (their rows give the status and message)" : "");
    if (status == APP_OK) printf("  output       %s (%ld rows)\n", w->output, d.n);
    if (plotted) printf("  plot         %s\n", w->plot);
    if (status == APP_OK && failed_total > 0) {
        fprintf(stderr, "mbk sweep: %ld of %ld members failed; see the status and message columns of %s\n", failed_total,
                w->n_members, w->output);
        status = APP_FAILED;
    }
    return status;
}

/* Whether --help (or -h) is among the arguments. */
static bool wants_help(int argc, char **argv)
{
    for (int i = 0; i < argc; ++i)
        if (!strcmp(argv[i], "--help") || !strcmp(argv[i], "-h")) return true;
    return false;
}

int app_sweep_main(int argc, char **argv)
{
    app_ranks ranks;
    int status = app_ranks_start(&ranks);
    if (status == APP_OK && wants_help(argc, argv)) { /* after the ranks start: rank 0 alone prints it */
        sweep_usage(stdout);
        return app_ranks_finish(&ranks, APP_OK);
    }
    sweep *w = calloc(1, sizeof *w);
    if (!w) return app_ranks_finish(&ranks, APP_FAILED);
    w->rank = ranks.rank, w->ranks = ranks.size, w->quiet = ranks.quiet;
    /* every rank could start (under MPI: a rank that cannot stops them all), then rank 0's output */
    if (status == APP_OK) status = parse_args(argc, argv, w);
    if (status == APP_OK) status = sweep_prepare(w);
    status = app_ranks_agree(&ranks, status, "sweep");
    if (status == APP_OK && w->rank == 0) status = open_output(w);
    status = app_ranks_agree(&ranks, status, "sweep");
    app_ranks_quiet(&ranks);
    if (status == APP_OK) status = sweep_run(w);
    free_sweep(w);
    free(w);
    return app_ranks_finish(&ranks, status);
}
