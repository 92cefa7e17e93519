/* bench_main.c - side-by-side benchmark of mbk against Simbody.
 *
 * For every model of /work/shared/ANCHORS.md: build it in both libraries from
 * one description, check that mbk's udot (and residual, M^-1 v, M) agree
 * with Simbody's to 1e-9 relative (stop otherwise), then time five
 * operations with interleaved batches. Prints Markdown tables and writes the
 * Markdown report and a CSV.
 *
 * usage: mbk_bench [--md FILE] [--csv FILE] [--batches N] [--batch-ms T]
 *                  [--quick] [--only NAME]
 */
#define _POSIX_C_SOURCE 200809L
#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/utsname.h>
#include <time.h>

#include "bench_sides.h"

#ifndef MBK_BENCH_CFLAGS
#define MBK_BENCH_CFLAGS "?"
#endif

enum { MASS_MATRIX_MAX_NU = 1000 };
static const double TOL = 1e-9;

static const char *op_name[NUM_OPS] = {"full", "u_only", "rnea", "mass_matrix", "minv_v"};
static const char *op_title[NUM_OPS] = {
    "Forward dynamics, full cycle (set q and u, realize to Acceleration)",
    "Forward dynamics, u-only cycle (set u, realize to Acceleration; position work cached)",
    "Inverse dynamics (mbk_matter_calc_residual_force vs calcResidualForceIgnoringConstraints, state at Velocity or later)",
    "Mass matrix (mbk_matter_calc_mass_matrix vs calcM)",
    "M^-1 v (mbk_matter_multiply_by_M_inverse vs multiplyByMInv)",
};

typedef struct model_spec {
    const char *kind; /* "chain", "tree", "humanoid" */
    int param;
    int mbk_only;
} model_spec;

static const model_spec SPECS[] = {
    {"chain", 1, 0},    {"chain", 10, 0},   {"chain", 30, 0},  {"chain", 100, 0},
    {"chain", 300, 0},  {"chain", 1000, 0}, {"chain", 3000, 1}, {"chain", 10000, 1},
    {"tree", 4, 0},     {"tree", 6, 0},     {"tree", 8, 0},    {"humanoid", 0, 0},
};
enum { NUM_MODELS = sizeof SPECS / sizeof SPECS[0] };

/* ANCHORS.md full-cycle figures (us): Simbody 3.7 apt build, Simbody release, Pinocchio aba. */
typedef struct anchor {
    const char *model;
    double sb_apt, sb_rel, pin;
    int pin_estimated; /* Pinocchio figure from the ~310 ns/body long-chain rate */
} anchor;
static const anchor ANCHORS[] = {
    {"chain10", 15.5, 5.63, 3.03, 0},  {"chain100", 102, 49.2, 32.1, 0},
    {"chain1000", 897, 466, 310, 1},   {"tree255", 241, 107, 78.2, 0},
    {"humanoid", 37.6, 13.4, 9.71, 0},
};

typedef struct bstat {
    int valid;
    long reps;       /* per batch */
    int batches;
    double med, min; /* us per call */
} bstat;

typedef struct result {
    char name[32];
    int bodies, nu, mbk_only;
    double err_udot, err_res, err_minv, err_M, self_check;
    bstat mb[NUM_OPS], sb[NUM_OPS];
    double allocs[NUM_OPS]; /* mbk heap allocations per call */
} result;

static struct {
    int batches;
    double batch_s;
    double cap_s; /* wall budget per (model, op), both libraries */
    const char *md, *csv, *only;
} opt = {15, 0.030, 5.0, NULL, NULL, NULL};

static double now(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + 1e-9 * (double)ts.tv_nsec;
}

static void die(const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    fprintf(stderr, "mbk_bench: ");
    vfprintf(stderr, fmt, ap);
    fprintf(stderr, "\n");
    va_end(ap);
    exit(1);
}

static int cmp_double(const void *a, const void *b)
{
    double x = *(const double *)a, y = *(const double *)b;
    return (x > y) - (x < y);
}

/* Relative difference: max |a - b| / max(max |b|, tiny). NaN counts as infinite. */
static double rel_diff(const double *a, const double *b, size_t n)
{
    double num = 0.0, den = 1e-300;
    for (size_t i = 0; i < n; ++i) {
        double d = fabs(a[i] - b[i]);
        if (!(d == d)) return INFINITY;
        if (d > num) num = d;
        if (fabs(b[i]) > den) den = fabs(b[i]);
    }
    return num / den;
}

typedef int (*run_fn)(void *side, bench_op op, long reps);
static int run_mb(void *s, bench_op op, long reps) { return mb_run(s, op, reps); }
static int run_sb(void *s, bench_op op, long reps) { return sb_run(s, op, reps); }

static double time_batch(run_fn run, void *side, bench_op op, long reps, const char *who)
{
    double t0 = now();
    if (run(side, op, reps) < 0) die("%s failed: %s", who, run == run_mb ? mb_last_error() : sb_last_error());
    return now() - t0;
}

/* Warm up and find the repetitions that make a batch last about opt.batch_s. */
static long calibrate(run_fn run, void *side, bench_op op, const char *who, double *t_call)
{
    long reps = 1;
    double t = time_batch(run, side, op, reps, who); /* warm-up */
    for (;;) {
        t = time_batch(run, side, op, reps, who);
        if (t >= 0.5 * opt.batch_s || reps >= (1L << 40)) break;
        double f = t > 0 ? opt.batch_s / t : 1000.0;
        if (f > 1000.0) f = 1000.0;
        long next = (long)ceil((double)reps * f);
        reps = next > 2 * reps ? next : 2 * reps;
    }
    *t_call = t / (double)reps;
    if (t > opt.batch_s * 2.0) return reps;
    long r = (long)llround(opt.batch_s / *t_call);
    return r < 1 ? 1 : r;
}

static void summarize(bstat *st, double *per_call, int n, long reps)
{
    qsort(per_call, (size_t)n, sizeof(double), cmp_double);
    st->valid = 1;
    st->reps = reps;
    st->batches = n;
    st->min = per_call[0] * 1e6;
    st->med = (n % 2 ? per_call[n / 2] : 0.5 * (per_call[n / 2 - 1] + per_call[n / 2])) * 1e6;
}

static void bench_op_pair(result *res, mb_side *mb, sb_side *sb, bench_op op)
{
    char who_mb[64], who_sb[64];
    snprintf(who_mb, sizeof who_mb, "mbk %s %s", res->name, op_name[op]);
    snprintf(who_sb, sizeof who_sb, "Simbody %s %s", res->name, op_name[op]);
    if (mb_prepare(mb, op) < 0) die("%s: prepare: %s", who_mb, mb_last_error());
    if (sb && sb_prepare(sb, op) < 0) die("%s: prepare: %s", who_sb, sb_last_error());
    double tc_mb = 0, tc_sb = 0;
    long r_mb = calibrate(run_mb, mb, op, who_mb, &tc_mb);
    long r_sb = sb ? calibrate(run_sb, sb, op, who_sb, &tc_sb) : 0;
    double per_batch = (double)r_mb * tc_mb + (double)r_sb * tc_sb;
    int batches = opt.batches;
    if (per_batch * batches > opt.cap_s) {
        batches = (int)(opt.cap_s / per_batch);
        if (batches < 3) batches = 3;
    }
    double *t_mb = calloc((size_t)batches, sizeof(double)), *t_sb = calloc((size_t)batches, sizeof(double));
    if (!t_mb || !t_sb) die("out of memory");
    long allocs = 0;
    for (int b = 0; b < batches; ++b) {
        /* interleave, alternating which library goes first */
        for (int k = 0; k < 2; ++k) {
            if ((k == 0) == (b % 2 == 0)) {
                long a0 = mb_allocation_count();
                t_mb[b] = time_batch(run_mb, mb, op, r_mb, who_mb) / (double)r_mb;
                allocs += mb_allocation_count() - a0;
            } else if (sb) {
                t_sb[b] = time_batch(run_sb, sb, op, r_sb, who_sb) / (double)r_sb;
            }
        }
    }
    res->allocs[op] = (double)allocs / ((double)r_mb * batches);
    summarize(&res->mb[op], t_mb, batches, r_mb);
    if (sb) summarize(&res->sb[op], t_sb, batches, r_sb);
    free(t_mb);
    free(t_sb);
    printf("  %-12s mbk %10.3f us (min %10.3f, %ld x %d)", op_name[op], res->mb[op].med, res->mb[op].min, r_mb, batches);
    if (sb) printf("   Simbody %10.3f us (min %10.3f)   ratio %6.2f", res->sb[op].med, res->sb[op].min, res->sb[op].med / res->mb[op].med);
    printf("   allocs/call %g\n", res->allocs[op]);
    fflush(stdout);
}

static int build_model(bm_model *m, const model_spec *sp)
{
    if (!strcmp(sp->kind, "chain")) return bm_make_chain(m, sp->param);
    if (!strcmp(sp->kind, "tree")) return bm_make_tree(m, sp->param);
    return bm_make_humanoid(m);
}

static void run_model(const model_spec *sp, result *res)
{
    bm_model model;
    if (build_model(&model, sp) < 0) die("out of memory building a model");
    memset(res, 0, sizeof *res);
    snprintf(res->name, sizeof res->name, "%s", model.name);
    res->bodies = model.n;
    res->nu = model.nu;
    res->mbk_only = sp->mbk_only;
    printf("%s: %d bodies, nq %d, nu %d%s\n", model.name, model.n, model.nq, model.nu,
           sp->mbk_only ? " (mbk only)" : "");
    size_t nu = (size_t)model.nu;
    double *q = calloc((size_t)model.nq, sizeof(double)), *u = calloc(nu, sizeof(double));
    double *v = calloc(nu, sizeof(double)), *kud = calloc(nu, sizeof(double));
    if (!q || !u || !v || !kud) die("out of memory");
    bm_rng rng = {0x6D626B2D62656E63ull}; /* same seed for every model */
    bm_random_state(&model, &rng, q, u);
    for (size_t i = 0; i < nu; ++i) v[i] = bm_rand(&rng);
    for (size_t i = 0; i < nu; ++i) kud[i] = bm_rand(&rng);

    mb_side *mb = mb_create(&model);
    if (!mb) die("%s: %s", model.name, mb_last_error());
    if (mb_set_inputs(mb, q, u, v, kud) < 0) die("%s: %s", model.name, mb_last_error());
    if (mb_self_check(mb, &res->self_check) < 0) die("%s: %s", model.name, mb_last_error());
    sb_side *sb = NULL;
    if (!sp->mbk_only) {
        sb = sb_create(&model);
        if (!sb) die("%s: %s", model.name, sb_last_error());
        if (sb_set_inputs(sb, q, u, v, kud) < 0) die("%s: %s", model.name, sb_last_error());
        /* cross-check before timing */
        int with_M = model.nu <= MASS_MATRIX_MAX_NU;
        double *a = calloc(4 * nu, sizeof(double)), *b = calloc(4 * nu, sizeof(double));
        double *Ma = with_M ? calloc(nu * nu, sizeof(double)) : NULL;
        double *Mb = with_M ? calloc(nu * nu, sizeof(double)) : NULL;
        if (!a || !b || (with_M && (!Ma || !Mb))) die("out of memory");
        bench_out oa = {a, a + nu, Ma, a + 2 * nu}, ob = {b, b + nu, Mb, b + 2 * nu};
        if (mb_eval(mb, &oa) < 0) die("%s: %s", model.name, mb_last_error());
        if (sb_eval(sb, &ob) < 0) die("%s: %s", model.name, sb_last_error());
        res->err_udot = rel_diff(a, b, nu);
        res->err_res = rel_diff(a + nu, b + nu, nu);
        res->err_minv = rel_diff(a + 2 * nu, b + 2 * nu, nu);
        res->err_M = with_M ? rel_diff(Ma, Mb, nu * nu) : NAN;
        printf("  cross-check vs Simbody (relative): udot %.1e  residual %.1e  M^-1 v %.1e  M %.1e\n",
               res->err_udot, res->err_res, res->err_minv, res->err_M);
        if (!(res->err_udot <= TOL))
            die("%s: mbk's udot differs from Simbody's by %.3e relative (tolerance %.0e); not timing a wrong answer",
                model.name, res->err_udot, TOL);
        if (!(res->err_res <= TOL) || !(res->err_minv <= TOL) || (with_M && !(res->err_M <= TOL)))
            die("%s: mbk's residual/M^-1 v/M differ from Simbody's (%.3e, %.3e, %.3e; tolerance %.0e)",
                model.name, res->err_res, res->err_minv, res->err_M, TOL);
        free(a);
        free(b);
        free(Ma);
        free(Mb);
    }
    printf("  self-check |residual(udot)| relative: %.1e\n", res->self_check);
    if (!(res->self_check <= TOL)) die("%s: mbk's residual at its own udot is %.3e relative", model.name, res->self_check);
    for (int op = 0; op < NUM_OPS; ++op) {
        if (op == OP_MASS && model.nu > MASS_MATRIX_MAX_NU) continue;
        bench_op_pair(res, mb, sb, (bench_op)op);
    }
    sb_destroy(sb);
    mb_destroy(mb);
    free(q);
    free(u);
    free(v);
    free(kud);
    bm_free(&model);
}

/* ------------------------------------------------------------------ */
/* Reporting                                                            */
/* ------------------------------------------------------------------ */

static char *cpu_name(char *buf, size_t n)
{
    snprintf(buf, n, "unknown CPU");
    FILE *f = fopen("/proc/cpuinfo", "r");
    if (!f) return buf;
    char line[512];
    while (fgets(line, sizeof line, f))
        if (!strncmp(line, "model name", 10)) {
            char *c = strchr(line, ':');
            if (c) {
                c += 2;
                c[strcspn(c, "\n")] = 0;
                snprintf(buf, n, "%s", c);
            }
            break;
        }
    fclose(f);
    return buf;
}

static int num_cpus(void)
{
    FILE *f = fopen("/proc/cpuinfo", "r");
    if (!f) return 0;
    char line[512];
    int n = 0;
    while (fgets(line, sizeof line, f))
        if (!strncmp(line, "processor", 9)) ++n;
    fclose(f);
    return n;
}

static const anchor *find_anchor(const char *name)
{
    for (size_t i = 0; i < sizeof ANCHORS / sizeof ANCHORS[0]; ++i)
        if (!strcmp(ANCHORS[i].model, name)) return &ANCHORS[i];
    return NULL;
}

static void fmt_us(char *buf, size_t n, double us)
{
    if (us >= 1000) snprintf(buf, n, "%.0f", us);
    else if (us >= 100) snprintf(buf, n, "%.1f", us);
    else if (us >= 10) snprintf(buf, n, "%.2f", us);
    else snprintf(buf, n, "%.3f", us);
}

static void write_report(FILE *f, const result *rs, int n, double wall)
{
    char cpu[256], date[64];
    struct utsname un;
    uname(&un);
    time_t t = time(NULL);
    strftime(date, sizeof date, "%Y-%m-%d %H:%M UTC", gmtime(&t));
    fprintf(f, "# Benchmarks: mbk side by side with Simbody\n\n");
    fprintf(f, "Generated by `make bench` (benchmarks/bench_main.c) on %s; the whole run took %.0f s.\n"
               "Raw numbers: benchmarks/results.csv. **Do not compare absolute times across runs**: the\n"
               "machine is shared and noisy (ANCHORS.md saw 0.55x-1.8x between passes); the ratios are\n"
               "measured side by side in one run and are the meaningful figures.\n\n", date, wall);
    fprintf(f, "Reproduce: `make bench` (about a minute; `make bench BENCH_ARGS=--quick` for a smoke run).\n\n");
    fprintf(f, "## Setup\n\n");
    fprintf(f, "- Machine: %s, %d logical CPUs, %s %s. Single-threaded.\n", cpu_name(cpu, sizeof cpu), num_cpus(),
            un.sysname, un.release);
    fprintf(f, "- Compiler: gcc %s. mbk (static library and benchmark driver) built with `%s`.\n", __VERSION__,
            MBK_BENCH_CFLAGS);
    fprintf(f, "- Simbody %s is **Debian's libsimbody build (apt), which is compiled without -DNDEBUG**;\n"
               "  bench_simbody.cpp is compiled without NDEBUG too (required for the SimTK class layouts).\n"
               "  **Every Simbody/mbk ratio below is against that build.** ANCHORS.md measured the apt build\n"
               "  1.9x-2.8x slower than a Simbody release build, so the ratio against a release build would be\n"
               "  about 2-3 times smaller (estimated in the targets table).\n", sb_version());
    fprintf(f, "- Models exactly as in ANCHORS.md, built from one description for both libraries: 1 kg boxes\n"
               "  1 x 0.1 x 0.1 m, central inertia diag(0.02/12, 1.01/12, 1.01/12), COM (0.5, 0, 0), joint at\n"
               "  the body origin, children at (1, 0, 0), pin axes alternating y, z, y, ... (pin about F's z with\n"
               "  X_PF = X_BM = R_x(-90 deg) for axis y); chainN, treeK (breadth-first numbering, root and left\n"
               "  children y, right children z), humanoid (free base + 4 x 6 pins at (+-0.5, +-0.05, 0) + 3 pins\n"
               "  at (0, 0, 0.05): 28 bodies, nu 33, nq 34). Gravity 9.81 along -z: Force::UniformGravity in\n"
               "  Simbody; in mbk a small subsystem that adds m g at each COM into the body-force accumulator\n"
               "  at Dynamics. q, u in [-1, 1) from a fixed seed; free base: random position, normalized\n"
               "  random quaternion. chain3000 and chain10000 are run for mbk only.\n");
    fprintf(f, "- Check before timing: mbk's udot, inverse-dynamics residual, M^-1 v and (nu <= %d) M agree with\n"
               "  Simbody's to 1e-9 relative (max abs difference / max abs value) on every model, or the run stops.\n"
               "  mbk-only models are checked for self-consistency (residual at mbk's own udot).\n", MASS_MATRIX_MAX_NU);
    fprintf(f, "- Method: each operation is warmed up, then the repetitions per batch are sized so that a batch\n"
               "  takes about %.0f ms; %d batches per library (fewer, at least 3, when one call is very slow), the\n"
               "  two libraries interleaved batch by batch, alternating which goes first. Reported: median and\n"
               "  minimum over batches of the time per call, ns per body (median / bodies, Ground excluded), and\n"
               "  the ratio Simbody/mbk of the medians (>1: mbk faster). The mass matrix is timed for nu <= %d.\n",
            opt.batch_s * 1e3, opt.batches, MASS_MATRIX_MAX_NU);
    fprintf(f, "- Operations: **full** = set q and u, realize to Acceleration (Simbody: State::setQ/setU +\n"
               "  realize(Acceleration)); **u-only** = set u, realize to Acceleration; **RNEA** = residual\n"
               "  forces M udot + C - f with the gravity body forces and a random known udot, at a realized\n"
               "  state; **M** = explicit mass matrix; **M^-1 v** at a realized state.\n\n");

    /* targets */
    fprintf(f, "## Targets (issue): full cycle\n\n");
    fprintf(f, "Target 1: mbk's full cycle at least 5x faster than Simbody's setQ/setU + realize(Acceleration)\n"
               "(here against the Debian apt build). Target 2: within 1.3x of Pinocchio's bare ABA figures in\n"
               "ANCHORS.md. Those were measured on another machine (Cooper Lake), so target 2 is shown twice:\n"
               "against the raw ANCHORS figure, and against that figure scaled by this run's Simbody apt time over\n"
               "ANCHORS' Simbody apt time for the model (a machine-speed normalization). The last column estimates\n"
               "the ratio against a Simbody **release** build, dividing by ANCHORS' apt/release factor.\n\n");
    fprintf(f, "| model | mbk full µs | Simbody apt µs | Simbody/mbk | >= 5x | Pinocchio aba µs (ANCHORS) | mbk/Pinocchio raw | within 1.3x raw | Pinocchio scaled µs | mbk/Pinocchio scaled | within 1.3x scaled | est. Simbody release/mbk |\n");
    fprintf(f, "|---|--:|--:|--:|:-:|--:|--:|:-:|--:|--:|:-:|--:|\n");
    for (int i = 0; i < n; ++i) {
        const result *r = &rs[i];
        if (r->mbk_only) continue;
        const bstat *a = &r->mb[OP_FULL], *b = &r->sb[OP_FULL];
        double ratio = b->med / a->med;
        char s1[32], s2[32];
        fmt_us(s1, sizeof s1, a->med);
        fmt_us(s2, sizeof s2, b->med);
        fprintf(f, "| %s | %s | %s | %.2f | %s |", r->name, s1, s2, ratio, ratio >= 5.0 ? "met" : "**not met**");
        const anchor *an = find_anchor(r->name);
        if (an) {
            double scale = b->med / an->sb_apt, pin_s = an->pin * scale;
            fprintf(f, " %.3g%s | %.2f | %s | %.3g | %.2f | %s | %.2f |\n", an->pin, an->pin_estimated ? " (310 ns/body)" : "",
                    a->med / an->pin, a->med <= 1.3 * an->pin ? "met" : "**not met**", pin_s, a->med / pin_s,
                    a->med <= 1.3 * pin_s ? "met" : "**not met**", ratio / (an->sb_apt / an->sb_rel));
        } else {
            fprintf(f, " – | – | no anchor | – | – | no anchor | – |\n");
        }
    }
    fprintf(f, "\n");

    /* one table per operation */
    for (int op = 0; op < NUM_OPS; ++op) {
        fprintf(f, "## %s\n\n", op_title[op]);
        fprintf(f, "| model | bodies | mbk µs median | mbk µs min | mbk ns/body | Simbody µs median | Simbody µs min | Simbody ns/body | Simbody/mbk median | Simbody/mbk min |\n");
        fprintf(f, "|---|--:|--:|--:|--:|--:|--:|--:|--:|--:|\n");
        for (int i = 0; i < n; ++i) {
            const result *r = &rs[i];
            const bstat *a = &r->mb[op], *b = &r->sb[op];
            if (!a->valid) continue;
            char m1[32], m2[32], s1[32], s2[32];
            fmt_us(m1, sizeof m1, a->med);
            fmt_us(m2, sizeof m2, a->min);
            fprintf(f, "| %s | %d | %s | %s | %.0f |", r->name, r->bodies, m1, m2, a->med * 1e3 / r->bodies);
            if (b->valid) {
                fmt_us(s1, sizeof s1, b->med);
                fmt_us(s2, sizeof s2, b->min);
                fprintf(f, " %s | %s | %.0f | %.2f | %.2f |\n", s1, s2, b->med * 1e3 / r->bodies, b->med / a->med,
                        b->min / a->min);
            } else {
                fprintf(f, " – | – | – | – | – |\n");
            }
        }
        fprintf(f, "\n");
    }

    /* checks and allocations */
    fprintf(f, "## Agreement with Simbody and heap allocations\n\n");
    fprintf(f, "Relative differences (max abs difference / max abs Simbody value) at the benchmark state, and mbk\n"
               "heap allocations per call counted with mbk_get_allocation_count() over all timed batches (a\n"
               "realize cycle must allocate nothing).\n\n");
    fprintf(f, "| model | udot | residual | M^-1 v | M | self-check | allocs/full | allocs/u-only | allocs/RNEA | allocs/M | allocs/M^-1 v |\n");
    fprintf(f, "|---|--:|--:|--:|--:|--:|--:|--:|--:|--:|--:|\n");
    for (int i = 0; i < n; ++i) {
        const result *r = &rs[i];
        if (r->mbk_only) fprintf(f, "| %s | – | – | – | – | %.1e |", r->name, r->self_check);
        else {
            fprintf(f, "| %s | %.1e | %.1e | %.1e | ", r->name, r->err_udot, r->err_res, r->err_minv);
            if (r->err_M == r->err_M) fprintf(f, "%.1e |", r->err_M);
            else fprintf(f, "– |");
            fprintf(f, " %.1e |", r->self_check);
        }
        for (int op = 0; op < NUM_OPS; ++op) {
            if (r->mb[op].valid) fprintf(f, " %g |", r->allocs[op]);
            else fprintf(f, " – |");
        }
        fprintf(f, "\n");
    }
    fprintf(f, "\n");
}

static void write_csv(FILE *f, const result *rs, int n)
{
    fprintf(f, "model,bodies,nu,op,library,reps_per_batch,batches,median_us,min_us,ns_per_body,ratio_simbody_over_mbk_median,allocs_per_call\n");
    for (int i = 0; i < n; ++i) {
        const result *r = &rs[i];
        for (int op = 0; op < NUM_OPS; ++op) {
            const bstat *a = &r->mb[op], *b = &r->sb[op];
            if (!a->valid) continue;
            fprintf(f, "%s,%d,%d,%s,mbk,%ld,%d,%.6g,%.6g,%.6g,%s,%g\n", r->name, r->bodies, r->nu, op_name[op], a->reps,
                    a->batches, a->med, a->min, a->med * 1e3 / r->bodies, "", r->allocs[op]);
            if (b->valid)
                fprintf(f, "%s,%d,%d,%s,simbody_apt,%ld,%d,%.6g,%.6g,%.6g,%.6g,\n", r->name, r->bodies, r->nu, op_name[op],
                        b->reps, b->batches, b->med, b->min, b->med * 1e3 / r->bodies, b->med / a->med);
        }
    }
}

int main(int argc, char **argv)
{
    for (int i = 1; i < argc; ++i) {
        const char *a = argv[i];
        const char *val = i + 1 < argc ? argv[i + 1] : NULL;
        if (!strcmp(a, "--md") && val) opt.md = argv[++i];
        else if (!strcmp(a, "--csv") && val) opt.csv = argv[++i];
        else if (!strcmp(a, "--batches") && val) opt.batches = atoi(argv[++i]);
        else if (!strcmp(a, "--batch-ms") && val) opt.batch_s = atof(argv[++i]) * 1e-3;
        else if (!strcmp(a, "--only") && val) opt.only = argv[++i];
        else if (!strcmp(a, "--quick")) {
            opt.batches = 3;
            opt.batch_s = 0.005;
            opt.cap_s = 1.0;
        } else {
            fprintf(stderr, "usage: %s [--md FILE] [--csv FILE] [--batches N] [--batch-ms T] [--quick] [--only MODEL]\n", argv[0]);
            return 2;
        }
    }
    if (opt.batches < 3) opt.batches = 3;
    if (opt.batch_s <= 0) opt.batch_s = 0.030;
    double t0 = now();
    result *rs = calloc(NUM_MODELS, sizeof *rs);
    if (!rs) die("out of memory");
    int n = 0;
    for (int i = 0; i < NUM_MODELS; ++i) {
        bm_model probe;
        if (opt.only) {
            if (build_model(&probe, &SPECS[i]) < 0) die("out of memory");
            int skip = strcmp(probe.name, opt.only) != 0;
            bm_free(&probe);
            if (skip) continue;
        }
        run_model(&SPECS[i], &rs[n++]);
    }
    double wall = now() - t0;
    write_report(stdout, rs, n, wall);
    if (opt.md) {
        FILE *f = fopen(opt.md, "w");
        if (!f) die("cannot write %s", opt.md);
        write_report(f, rs, n, wall);
        fclose(f);
        printf("wrote %s\n", opt.md);
    }
    if (opt.csv) {
        FILE *f = fopen(opt.csv, "w");
        if (!f) die("cannot write %s", opt.csv);
        write_csv(f, rs, n);
        fclose(f);
        printf("wrote %s\n", opt.csv);
    }
    int bad_alloc = 0;
    for (int i = 0; i < n; ++i)
        if (rs[i].allocs[OP_FULL] != 0 || rs[i].allocs[OP_UONLY] != 0) bad_alloc = 1;
    free(rs);
    if (bad_alloc) {
        fprintf(stderr, "mbk_bench: a realize cycle allocated heap memory (see the allocation table)\n");
        return 3;
    }
    return 0;
}
