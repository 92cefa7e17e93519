/* bench_main.c - side-by-side benchmark of mbk against Simbody (and MuJoCo).
 *
 * For every model of /work/shared/ANCHORS.md, plus the constraint and contact
 * models of issue 7 (fourbar, chain10loop, humanoid_contact): build it in
 * both libraries from one description, run every operation once on each side
 * and check that the results agree to 1e-9 relative (stop otherwise), then
 * time the operations with interleaved batches. Whole runs (chain10, 10 s)
 * at accuracy 1e-6 and at matched energy drift. Prints Markdown tables and
 * writes the Markdown report, an SVG plot and a CSV.
 *
 * This file: the options, the list of models, the rounds over all models and the
 * outputs; bench_driver.h lists the other files of the driver.
 *
 * usage: mbk_bench [--md FILE] [--csv FILE] [--batches N] [--batch-ms T]
 *                  [--quick] [--only NAME] [--default-side MODULE] [--prev-csv FILE]
 */
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "bench_driver.h"

/* The models of the run, in order. */
static const model_spec SPECS[] = {
    {"chain", 1, 0},    {"chain", 10, 0},   {"chain", 30, 0},     {"chain", 100, 0},
    {"chain", 300, 0},  {"chain", 1000, 0}, {"chain", 3000, 1},   {"chain", 10000, 1},
    {"tree", 4, 0},     {"tree", 6, 0},     {"tree", 8, 0},       {"humanoid", 0, 0},
    {"fourbar", 0, 0},  {"chainloop", 10, 0}, {"humanoid_contact", 0, 0},
};
enum { NUM_MODELS = sizeof SPECS / sizeof SPECS[0] };

int g_quick = 0; /* --quick */
bench_options g_opt = {15, 0.030, 5.0, NULL, NULL, NULL, NULL, NULL, NULL, NULL};

_Noreturn void bench_die(const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    fprintf(stderr, "mbk_bench: ");
    vfprintf(stderr, fmt, ap);
    fprintf(stderr, "\n");
    va_end(ap);
    exit(1);
}

void *bench_xcalloc(size_t n, size_t size)
{
    void *p = calloc(n + 1, size);
    if (!p) bench_die("out of memory");
    return p;
}

int main(int argc, char **argv)
{
    for (int i = 1; i < argc; ++i) {
        const char *a = argv[i];
        const char *val = i + 1 < argc ? argv[i + 1] : NULL;
        if (!strcmp(a, "--md") && val) g_opt.md = argv[++i];
        else if (!strcmp(a, "--csv") && val) g_opt.csv = argv[++i];
        else if (!strcmp(a, "--batches") && val) g_opt.batches = atoi(argv[++i]);
        else if (!strcmp(a, "--batch-ms") && val) g_opt.batch_s = atof(argv[++i]) * 1e-3;
        else if (!strcmp(a, "--only") && val) g_opt.only = argv[++i];
        else if (!strcmp(a, "--default-side") && val) g_opt.default_side = argv[++i];
        else if (!strcmp(a, "--prev-csv") && val) g_opt.prev_csv = argv[++i];
        else if (!strcmp(a, "--dump-models") && val) g_opt.dump_dir = argv[++i];
        else if (!strcmp(a, "--drake-csv") && val) g_opt.drake_csv = argv[++i];
        else if (!strcmp(a, "--quick")) {
            g_opt.batches = 3;
            g_opt.batch_s = 0.005;
            g_opt.cap_s = 1.0;
            g_quick = 1;
        } else {
            fprintf(stderr, "usage: %s [--md FILE] [--csv FILE] [--batches N] [--batch-ms T] [--quick] [--only MODEL]\n"
                            "       [--default-side MODULE] [--prev-csv FILE] [--dump-models DIR] [--drake-csv FILE]\n", argv[0]);
            return 2;
        }
    }
    if (g_opt.batches < 3) g_opt.batches = 3;
    if (g_opt.batch_s <= 0) g_opt.batch_s = 0.030;
    if (g_opt.default_side) bench_default_load(g_opt.default_side);
    if (g_opt.prev_csv) bench_prev_load(g_opt.prev_csv);
    if (g_opt.drake_csv) bench_drake_load(g_opt.drake_csv);
    if (g_opt.dump_dir) { /* the plain models, inputs and mbk's results for bench_drake.py */
        for (int i = 0; i < NUM_MODELS; ++i) {
            bm_model m;
            if (SPECS[i].mbk_only) continue;
            if (bench_build_model(&m, &SPECS[i]) < 0) bench_die("out of memory");
            if (m.n_balls || m.n_spheres || (g_opt.only && strcmp(m.name, g_opt.only))) {
                bm_free(&m);
                continue;
            }
            double *q = bench_xcalloc((size_t)m.nq, sizeof(double)), *u = bench_xcalloc((size_t)m.nu, sizeof(double));
            double *v = bench_xcalloc((size_t)m.nu, sizeof(double)), *kud = bench_xcalloc((size_t)m.nu, sizeof(double));
            bench_model_inputs(&m, q, u, v, kud);
            mb_side *mb = mb_create(&m);
            if (!mb || mb_set_inputs(mb, q, u, v, kud) < 0) bench_die("%s: %s", m.name, mb_last_error());
            bench_drake_dump(g_opt.dump_dir, &m, mb, q, u, kud);
            printf("wrote %s/%s.txt\n", g_opt.dump_dir, m.name);
            mb_destroy(mb);
            free(q), free(u), free(v), free(kud);
            bm_free(&m);
        }
        return 0;
    }
    double t0 = bench_now();
    result *rs = bench_xcalloc(NUM_MODELS, sizeof *rs);
    model_run *runs = bench_xcalloc(NUM_MODELS, sizeof *runs);
    int n = 0;
    for (int i = 0; i < NUM_MODELS; ++i) {
        bm_model probe;
        if (g_opt.only) {
            if (bench_build_model(&probe, &SPECS[i]) < 0) bench_die("out of memory");
            int skip = strcmp(probe.name, g_opt.only) != 0;
            bm_free(&probe);
            if (skip) continue;
        }
        bench_model_open(&SPECS[i], &rs[n], &runs[n]);
        ++n;
    }
    /* Every model's batches in ROUNDS rounds over all models: a noisy spell of the shared
       machine then touches a few batches of many models, not all batches of one. */
    enum { ROUNDS = 3 };
    printf("timing: %d rounds over %d models\n", ROUNDS, n);
    for (int r = 0; r < ROUNDS; ++r)
        for (int i = 0; i < n; ++i)
            bench_ops_batches(&runs[i], runs[i].most * r / ROUNDS, runs[i].most * (r + 1) / ROUNDS);
    for (int i = 0; i < n; ++i) bench_model_close(&runs[i]);
    free(runs);
    if (!g_opt.only || !strcmp(g_opt.only, "chain10")) bench_run_whole();
    double wall = bench_now() - t0;
    bench_write_report(stdout, rs, n, wall);
    if (g_opt.md) {
        FILE *f = fopen(g_opt.md, "w");
        if (!f) bench_die("cannot write %s", g_opt.md);
        bench_write_report(f, rs, n, wall);
        fclose(f);
        printf("wrote %s\n", g_opt.md);
        /* the plot goes next to the report */
        char svg[1024];
        const char *slash = strrchr(g_opt.md, '/');
        snprintf(svg, sizeof svg, "%.*sbenchmarks_ns_per_body.svg", slash ? (int)(slash - g_opt.md + 1) : 0, g_opt.md);
        bench_write_svg(svg, rs, n);
        printf("wrote %s\n", svg);
    }
    if (g_opt.csv) {
        FILE *f = fopen(g_opt.csv, "w");
        if (!f) bench_die("cannot write %s", g_opt.csv);
        bench_write_csv(f, rs, n);
        fclose(f);
        printf("wrote %s\n", g_opt.csv);
    }
    int ok = bench_allocations_ok(rs, n);
    free(rs);
    if (!ok) {
        fprintf(stderr, "mbk_bench: an mbk operation or integrator step allocated heap memory (see the allocation table)\n");
        return 3;
    }
    return 0;
}
