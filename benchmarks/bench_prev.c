/* bench_prev.c - the previous run's benchmarks/results.csv (--prev-csv), read before this run
 * writes its own, so that the report can show each figure's ratio to the previous one and a
 * regression is visible in review. Only (model, op, library) -> median is kept. The previous
 * run was on another day, perhaps another machine: its ratios are a hint, not a measurement
 * side by side. */
#define _POSIX_C_SOURCE 200809L
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "bench_driver.h"

typedef struct prev_row {
    char model[32], op[32], library[48];
    double median_us;
} prev_row;

static prev_row *g_rows;
static int g_n, g_cap;

/* Split a CSV line (no quoting in results.csv) into at most n fields, in place. */
static int split(char *line, char **field, int n)
{
    int k = 0;
    field[k++] = line;
    for (char *c = line; *c && k < n; ++c)
        if (*c == ',') {
            *c = 0;
            field[k++] = c + 1;
        }
    return k;
}

void bench_prev_load(const char *path)
{
    FILE *f = fopen(path, "r");
    if (!f) {
        printf("no previous results at %s: no ratios to them\n", path);
        return;
    }
    char line[1024];
    while (fgets(line, sizeof line, f)) {
        line[strcspn(line, "\r\n")] = 0;
        char *fld[16];
        if (split(line, fld, 16) < 8 || !strcmp(fld[0], "model")) continue;
        if (g_n == g_cap) {
            g_cap = g_cap ? 2 * g_cap : 256;
            prev_row *r = realloc(g_rows, (size_t)g_cap * sizeof *r);
            if (!r) bench_die("out of memory");
            g_rows = r;
        }
        prev_row *r = &g_rows[g_n++];
        snprintf(r->model, sizeof r->model, "%s", fld[0]);
        snprintf(r->op, sizeof r->op, "%s", fld[3]);
        snprintf(r->library, sizeof r->library, "%s", fld[4]);
        r->median_us = atof(fld[7]);
    }
    fclose(f);
    printf("previous results: %d rows from %s\n", g_n, path);
}

int bench_prev_loaded(void) { return g_n > 0; }

double bench_prev_median(const char *model, const char *op, const char *library)
{
    for (int i = 0; i < g_n; ++i)
        if (!strcmp(g_rows[i].model, model) && !strcmp(g_rows[i].op, op) && !strcmp(g_rows[i].library, library))
            return g_rows[i].median_us;
    return NAN;
}
