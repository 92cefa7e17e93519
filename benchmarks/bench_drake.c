/* bench_drake.c - Drake's MultibodyPlant beside mbk, through pydrake (bench_drake.py).
 *
 * Drake comes from PyPI as a Python package (pydrake); its C++ headers are not in the wheel, so it
 * is timed from Python, with the interpreter's and the bindings' overhead per call measured and
 * subtracted (bench_drake.py says how). make bench runs, before the main run:
 *   mbk_bench --dump-models DIR       every plain model (bodies, q, u, known udot) and mbk's
 *                                     results (udot, inverse dynamics, M) as text, one file each
 *   python bench_drake.py DIR         builds each in a MultibodyPlant, checks Drake's results
 *                                     against mbk's (1e-9 relative, or it stops), times them and
 *                                     writes DIR/drake.csv
 * and the main run reads DIR/drake.csv (--drake-csv) for its report. Drake is therefore timed in
 * its own process just before the main run, not interleaved with the other libraries. */
#define _POSIX_C_SOURCE 200809L
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "bench_driver.h"

static void put_vec(FILE *f, const char *tag, const double *x, int n)
{
    fprintf(f, "%s %d", tag, n);
    for (int i = 0; i < n; ++i) fprintf(f, " %.17g", x[i]);
    fprintf(f, "\n");
}

/* One model's description, inputs and mbk's results into DIR/NAME.txt. */
void bench_drake_dump(const char *dir, const bm_model *m, mb_side *mb, const double *q, const double *u,
                      const double *kud)
{
    char path[1024];
    snprintf(path, sizeof path, "%s/%s.txt", dir, m->name);
    FILE *f = fopen(path, "w");
    if (!f) bench_die("cannot write %s", path);
    fprintf(f, "model %s %d %d %d\n", m->name, m->n, m->nq, m->nu);
    fprintf(f, "gravity %.17g %.17g %.17g\n", m->gravity[0], m->gravity[1], m->gravity[2]);
    for (int i = 1; i <= m->n; ++i) {
        const bm_body *b = &m->bodies[i - 1];
        fprintf(f, "body %d %d %d %d %d", i, b->parent, b->type, m->q0[i], m->u0[i]);
        for (int k = 0; k < 12; ++k) fprintf(f, " %.17g", b->X_PF[k]);
        for (int k = 0; k < 12; ++k) fprintf(f, " %.17g", b->X_BM[k]);
        fprintf(f, " %.17g", b->mass);
        for (int k = 0; k < 3; ++k) fprintf(f, " %.17g", b->com[k]);
        for (int k = 0; k < 9; ++k) fprintf(f, " %.17g", b->inertia[k]);
        fprintf(f, "\n");
    }
    put_vec(f, "q", q, m->nq);
    put_vec(f, "u", u, m->nu);
    put_vec(f, "known_udot", kud, m->nu);
    const bench_op ops[3] = {OP_FULL, OP_ID, OP_MASS_KIN};
    const char *tags[3] = {"udot", "id", "M"};
    for (int k = 0; k < 3; ++k) {
        if (ops[k] == OP_MASS_KIN && m->nu > MASS_MATRIX_MAX_NU) continue;
        int len = mb_result_len(mb, ops[k]);
        double *r = bench_xcalloc((size_t)len, sizeof(double));
        if (mb_eval(mb, ops[k], r) < 0) bench_die("%s: %s", m->name, mb_last_error());
        put_vec(f, tags[k], r, len);
        free(r);
    }
    fclose(f);
}

/* ---- DIR/drake.csv: model,op,raw_us,overhead_us,us,rel_diff ---- */
typedef struct drake_row {
    char model[32], op[16];
    double raw, overhead, us, diff;
} drake_row;
static drake_row *g_rows;
static int g_n;
static char g_version[64] = "?";
static double g_call_ns = NAN;

void bench_drake_load(const char *path)
{
    FILE *f = fopen(path, "r");
    if (!f) {
        printf("no Drake results at %s: the Drake section is left out\n", path);
        return;
    }
    char line[512];
    while (fgets(line, sizeof line, f)) {
        drake_row r;
        if (!strncmp(line, "# drake ", 8)) {
            sscanf(line + 8, "%63s %lf", g_version, &g_call_ns);
            continue;
        }
        if (line[0] == '#' || !strncmp(line, "model,", 6)) continue;
        if (sscanf(line, "%31[^,],%15[^,],%lf,%lf,%lf,%lf", r.model, r.op, &r.raw, &r.overhead, &r.us, &r.diff) != 6)
            continue;
        drake_row *p = realloc(g_rows, (size_t)(g_n + 1) * sizeof *p);
        if (!p) bench_die("out of memory");
        g_rows = p;
        g_rows[g_n++] = r;
    }
    fclose(f);
    printf("Drake results: %d rows from %s\n", g_n, path);
}

static const drake_row *find(const char *model, const char *op)
{
    for (int i = 0; i < g_n; ++i)
        if (!strcmp(g_rows[i].model, model) && !strcmp(g_rows[i].op, op)) return &g_rows[i];
    return NULL;
}

const char *bench_drake_version(void) { return g_version; }

int bench_drake_get(const char *model, const char *op, double *us, double *diff)
{
    const drake_row *r = find(model, op);
    if (!r) return 0;
    *us = r->us;
    *diff = r->diff;
    return 1;
}

void bench_write_drake(FILE *f, const result *rs, int n)
{
    fprintf(f, "## Drake %s (pydrake), Python call overhead subtracted\n\n", g_version);
    if (!g_n) {
        fprintf(f, "Not run (make bench runs benchmarks/bench_drake.py when the drake wheel is installed in\n"
                   "build-bench/venv).\n\n");
        return;
    }
    fprintf(f, "Drake from PyPI (the drake wheel, pinned in benchmarks/requirements-bench.txt) carries no C++\n"
               "headers, so its MultibodyPlant is **timed through pydrake**, in its own process just before\n"
               "this run (benchmarks/bench_drake.py), **not interleaved** with the other libraries. The same\n"
               "models (RevoluteJoint between FixedOffsetFrames F and M, free base as Drake's quaternion\n"
               "floating joint, whose q = (quaternion, p) and v = (w, v) in World are mbk's), the same q, u and\n"
               "known udot; Drake's results were checked against mbk's to 1e-9 relative before timing. Each op\n"
               "as a user calls it from scratch: **FD** = SetPositionsAndVelocities + the generalized\n"
               "acceleration output port's Eval; **ID** = SetPositionsAndVelocities +\n"
               "CalcForceElementsContribution (gravity) + CalcInverseDynamics; **M** = SetPositions +\n"
               "CalcMassMatrix. **Overhead subtracted**: the interpreter's loop and one bound call per call\n"
               "made (a no-op-sized call, `context.get_time()`, measured at %.0f ns), so the figures still hold\n"
               "the copies of q, v in and of the results out into new numpy arrays (for M: nu^2 doubles).\n"
               "Median of 7 batches; ratios are Drake / mbk (this run's mbk medians; > 1: mbk faster).\n\n",
            g_call_ns);
    fprintf(f, "| model | bodies | FD mbk µs | Drake FD µs (raw) | Drake/mbk | ID mbk µs | Drake ID µs (raw) | Drake/mbk | M mbk µs | Drake M µs (raw) | Drake/mbk | rel. diff udot / ID / M |\n");
    fprintf(f, "|---|--:|--:|--:|--:|--:|--:|--:|--:|--:|--:|--:|\n");
    for (int i = 0; i < n; ++i) {
        const result *r = &rs[i];
        const drake_row *d[3] = {find(r->name, "fd"), find(r->name, "id"), find(r->name, "mass")};
        if (!d[0] && !d[1] && !d[2]) continue;
        const bench_op ops[3] = {OP_FULL, OP_ID, OP_MASS_KIN};
        fprintf(f, "| %s | %d |", r->name, r->bodies);
        for (int k = 0; k < 3; ++k) {
            const bstat *a = &r->mb[ops[k]];
            if (a->valid) fprintf(f, " %.3g |", a->med);
            else fprintf(f, " – |");
            if (d[k] && d[k]->raw >= 100) fprintf(f, " %.0f (%.0f) |", d[k]->us, d[k]->raw);
            else if (d[k]) fprintf(f, " %.3g (%.3g) |", d[k]->us, d[k]->raw);
            else fprintf(f, " – |");
            if (d[k] && a->valid) fprintf(f, " %.2f |", d[k]->us / a->med);
            else fprintf(f, " – |");
        }
        for (int k = 0; k < 3; ++k) {
            if (d[k]) fprintf(f, "%s%.0e", k ? " / " : " ", d[k]->diff);
            else fprintf(f, "%s–", k ? " / " : " ");
        }
        fprintf(f, " |\n");
    }
    fprintf(f, "\n");
}
