/* Checkpoints of a run for the mbk program: `mbk run --checkpoint FILE` writes
 * the integrator's checkpoint (mbk_integrator_serialize) carrying a few lines of
 * the run's own (which integrator, the model, the sampling interval, the index
 * of the sample at the checkpoint, the start time and energy), after writing the
 * trajectory so far; `mbk run --resume FILE` reads it back and continues the
 * trajectory CSV from that sample (docs/checkpoints.md). */
#define _POSIX_C_SOURCE 200809L
#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <mbk/checkpoint.h>

#include "app.h"

static const char meta_magic[] = "mbk run checkpoint 1";

/* ---- the trajectory ------------------------------------------------------------ */

/* What a trajectory file holds: the kept text of a resumed run (header and rows) or a
   header, then the rows from kept_rows on. */
typedef struct traj_out {
    const app_series *ser;
    const char *kept;
    long kept_rows;
} traj_out;

static int put_trajectory(FILE *f, const void *data)
{
    const traj_out *t = data;
    if (t->kept) fputs(t->kept, f);
    else app_write_csv_header(f, t->ser);
    app_write_csv_rows(f, t->ser, t->kept ? t->kept_rows : 0);
    return 0;
}

int app_write_trajectory(const char *path, const app_series *ser, const char *kept, long kept_rows)
{
    const traj_out t = {ser, kept, kept_rows};
    return app_write_file(path, put_trajectory, &t);
}

/* One line (without its newline) into *line; 0 at end of file. */
static int read_line(FILE *f, char **line, size_t *cap, ssize_t *len)
{
    *len = getline(line, cap, f);
    if (*len <= 0) return 0;
    if ((*line)[*len - 1] != '\n') return 0; /* a torn last line */
    (*line)[--*len] = '\0';
    return 1;
}

int app_read_csv(const char *path, long rows, app_series *ser, char **kept, char *why, size_t n)
{
    *kept = NULL;
    FILE *f = fopen(path, "r");
    if (!f) {
        if (errno == ENOENT) return 1;
        snprintf(why, n, "cannot open it: %s", strerror(errno));
        return -1;
    }
    int cols = 1 + ser->nq + ser->nu + 3, status = 0;
    char *line = NULL;
    size_t cap = 0, used = 0, room = 4096;
    ssize_t len = 0;
    char *text = malloc(room);
    double *v = malloc(sizeof(double) * (size_t)cols);
    if (!text || !v) {
        snprintf(why, n, "out of memory");
        status = -1;
    }
    for (long r = -1; status == 0 && r < rows; ++r) {
        if (!read_line(f, &line, &cap, &len)) {
            snprintf(why, n, "it has %ld complete samples; the checkpoint is at sample %ld, so it does not "
                     "continue this checkpoint's run (give another --output)", r < 0 ? 0 : r, rows - 1);
            status = -1;
            break;
        }
        if (r < 0) {
            int c = 1;
            for (char *p = line; *p; ++p) c += *p == ',';
            if (strncmp(line, "t,", 2) != 0 || c != cols) {
                snprintf(why, n, "its header has %d columns, this model's trajectory %d (t, %d q, %d u, "
                         "energy, kinetic, potential)", c, cols, ser->nq, ser->nu);
                status = -1;
            }
        } else {
            char *p = line, *end = NULL;
            for (int c = 0; c < cols && status == 0; ++c) {
                errno = 0;
                v[c] = strtod(p, &end);
                if (end == p || errno || *end != (c + 1 < cols ? ',' : '\0')) {
                    snprintf(why, n, "its sample %ld is malformed", r);
                    status = -1;
                }
                p = end + 1;
            }
            if (status == 0 && app_series_add(ser, v[0], v + 1, v + 1 + ser->nq, v[cols - 2], v[cols - 1]) != 0) {
                snprintf(why, n, "out of memory");
                status = -1;
            }
        }
        while (status == 0 && used + (size_t)len + 2 > room) {
            char *t = realloc(text, room *= 2);
            if (!t) {
                snprintf(why, n, "out of memory");
                status = -1;
            } else {
                text = t;
            }
        }
        if (status == 0) {
            memcpy(text + used, line, (size_t)len);
            used += (size_t)len;
            text[used++] = '\n';
            text[used] = '\0';
        }
    }
    free(line);
    free(v);
    fclose(f);
    if (status == 0) *kept = text;
    else free(text);
    return status;
}

/* ---- the checkpoint ------------------------------------------------------------ */

int app_checkpoint_write(const char *path, const app_integrator *ig, const app_run_meta *meta, const char *csv,
                         const app_series *ser, const char *kept, long kept_rows)
{
    mbk_integrator *lib = app_integrator_library(ig);
    if (!lib) {
        fprintf(stderr, "mbk run: --checkpoint: the model has no state variables; there is nothing to checkpoint\n");
        return APP_FAILED;
    }
    if (csv && strcmp(csv, "none")) {
        app_make_parent_dir(csv);
        if (app_write_trajectory(csv, ser, kept, kept_rows)) {
            fprintf(stderr, "mbk run: cannot write %s: %s\n", csv, strerror(errno));
            return APP_OUTPUT;
        }
    }
    char text[1024], model[512];
    snprintf(model, sizeof model, "%s", meta->model);
    for (char *p = model; *p; ++p)
        if (*p == '\n') *p = '?';
    int len = snprintf(text, sizeof text, "%s\nintegrator %s\nmodel %s\ninterval %a\nsample %ld\nt0 %a\ne0 %a\n",
                       meta_magic, meta->integrator, model, meta->interval, meta->sample, meta->t0, meta->e0);
    size_t n = 0;
    unsigned char *buf = NULL;
    int rc = mbk_integrator_serialize(lib, text, (size_t)len, NULL, 0, &n);
    if (rc == MBK_OK && !(buf = malloc(n))) rc = mbk_set_error(MBK_ENOMEM, "out of memory");
    if (rc == MBK_OK) rc = mbk_integrator_serialize(lib, text, (size_t)len, buf, n, &n);
    app_make_parent_dir(path);
    if (rc == MBK_OK) rc = mbk_checkpoint_write_file(path, buf, n);
    free(buf);
    if (rc < 0) {
        fprintf(stderr, "mbk run: writing the checkpoint %s: %s (%s)\n", path, mbk_last_error(), mbk_status_name(rc));
        return rc == MBK_ENOMEM ? APP_FAILED : APP_OUTPUT;
    }
    return APP_OK;
}

/* The run's own lines; unknown keys are skipped, a foreign first line leaves meta as it is. */
static void parse_meta(const char *data, size_t n, app_run_meta *meta)
{
    char *text = malloc(n + 1);
    if (!text) return;
    memcpy(text, data, n);
    text[n] = '\0';
    size_t m = strlen(meta_magic);
    if (strncmp(text, meta_magic, m) == 0 && text[m] == '\n') {
        for (char *save = NULL, *line = strtok_r(text + m + 1, "\n", &save); line; line = strtok_r(NULL, "\n", &save)) {
            char *sp = strchr(line, ' ');
            if (!sp) continue;
            *sp++ = '\0';
            if (!strcmp(line, "integrator")) snprintf(meta->integrator, sizeof meta->integrator, "%s", sp);
            else if (!strcmp(line, "model")) snprintf(meta->model, sizeof meta->model, "%s", sp);
            else if (!strcmp(line, "interval")) meta->interval = strtod(sp, NULL);
            else if (!strcmp(line, "sample")) meta->sample = strtol(sp, NULL, 10);
            else if (!strcmp(line, "t0")) meta->t0 = strtod(sp, NULL);
            else if (!strcmp(line, "e0")) meta->e0 = strtod(sp, NULL);
        }
        if (!(meta->interval > 0 && isfinite(meta->interval))) meta->interval = 0;
        if (meta->sample < 0) meta->sample = -1;
    }
    free(text);
}

app_integrator *app_checkpoint_read(const char *path, const mbk_system *sys, app_run_meta *meta)
{
    memset(meta, 0, sizeof *meta);
    meta->sample = -1;
    meta->t0 = meta->e0 = NAN;
    void *buf = NULL;
    size_t n = 0;
    const void *data = NULL;
    size_t dn = 0;
    app_integrator *ig = NULL;
    if (mbk_checkpoint_read_file(path, &buf, &n) < 0 || mbk_integrator_get_checkpoint_app_data(buf, n, &data, &dn) < 0) {
        fprintf(stderr, "mbk run: --resume %s: %s (%s)\n", path, mbk_last_error(), mbk_status_name(mbk_last_status()));
        mbk_free(buf);
        return NULL;
    }
    parse_meta(data, dn, meta);
    if (!meta->integrator[0] || !app_integrator_known(meta->integrator)) {
        /* written by mbk_integrator_save: the integrator from its own name */
        char name[64] = "";
        mbk_integrator_get_checkpoint_name(buf, n, name, sizeof name);
        const char *app = app_integrator_from_library_name(name);
        if (!app) {
            fprintf(stderr, "mbk run: --resume %s: it was written by the integrator '%s', which mbk run does not "
                    "offer\n", path, name);
            mbk_free(buf);
            return NULL;
        }
        snprintf(meta->integrator, sizeof meta->integrator, "%s", app);
    }
    ig = app_integrator_resume(sys, meta->integrator, buf, n);
    if (!ig)
        fprintf(stderr, "mbk run: --resume %s: %s (%s)\n", path, mbk_last_error(), mbk_status_name(mbk_last_status()));
    mbk_free(buf);
    return ig;
}

/* ---- resuming a run ------------------------------------------------------------- */

/* Whether x, read back from the CSV (printed with 10 or 12 digits), is the value v. */
static bool same_printed(double x, double v) { return fabs(x - v) <= 1e-9 * fmax(1.0, fabs(v)); }

/* Whether the trajectory read back ends at the checkpoint's State (t, q, u): a CSV
   of the same model written by another run (the default output is shared) does not,
   and continuing it would splice two runs together. */
static bool continues(const app_series *ser, const mbk_state *s, char *why, size_t n)
{
    const long k = ser->n - 1;
    const int nq = ser->nq, nu = ser->nu;
    const double *q = mbk_state_get_q(s), *u = mbk_state_get_u(s);
    for (int j = 0; j <= nq + nu; ++j) { /* t, then q, then u */
        const double file = j == 0 ? ser->t[k] : j <= nq ? ser->q[k * nq + j - 1] : ser->u[k * nu + j - 1 - nq];
        const double ck = j == 0 ? mbk_state_get_time(s) : j <= nq ? q[j - 1] : u[j - 1 - nq];
        if (same_printed(file, ck)) continue;
        char name[32];
        if (j == 0) snprintf(name, sizeof name, "t");
        else snprintf(name, sizeof name, "%c%d", j <= nq ? 'q' : 'u', j <= nq ? j - 1 : j - 1 - nq);
        snprintf(why, n, "its sample %ld has %s = %.12g, the checkpoint's State %.12g: another run wrote it (give "
                 "the --output the checkpoint's run wrote, or another file to start a new one)", k, name, file, ck);
        return false;
    }
    return true;
}

int app_resume(const char *path, const app_model *m, const char *csv, double interval, bool interval_given,
               double t_final, app_series *ser, app_resumed *r)
{
    memset(r, 0, sizeof *r);
    r->ig = app_checkpoint_read(path, m->sys, &r->meta);
    if (!r->ig) return APP_MODEL;
    if (r->meta.model[0] && strcmp(r->meta.model, m->spec))
        fprintf(stderr, "mbk run: warning: %s was written for the model '%s'; continuing it with '%s'\n", path,
                r->meta.model, m->spec);
    const mbk_state *s = app_integrator_state(r->ig);
    double tc = mbk_state_get_time(s);
    r->t = tc;
    if (!(t_final > tc)) {
        fprintf(stderr, "mbk run: --resume: the checkpoint %s is at t = %.17g; give a --t-final after it "
                "(see mbk --help)\n", path, tc);
        return APP_USAGE;
    }
    r->interval = interval_given || !(r->meta.interval > 0) ? interval : r->meta.interval;
    if (r->interval == r->meta.interval && r->meta.sample >= 0) {
        /* the sample after the checkpoint's; a run that ended between two samples of the
           grid (t-final not a multiple of the interval) wrote its last one, number
           `sample`, at t-final, before the grid's time for it: that one comes again */
        r->k_first = r->meta.sample + (tc < (double)r->meta.sample * r->interval ? 0 : 1);
    } else {
        long k = (long)floor(tc / r->interval);
        while (k > 0 && k * r->interval > tc) --k;
        while (k * r->interval <= tc) ++k;
        r->k_first = k;
    }
    ser->nq = mbk_state_get_nq(s), ser->nu = mbk_state_get_nu(s);
    if (csv && strcmp(csv, "none") && r->meta.sample >= 0) {
        char why[400];
        int rc = app_read_csv(csv, r->meta.sample + 1, ser, &r->kept, why, sizeof why);
        if (rc < 0) {
            fprintf(stderr, "mbk run: --resume: the trajectory %s cannot be continued: %s\n", csv, why);
            return APP_MODEL;
        }
        if (rc == 0 && !continues(ser, s, why, sizeof why)) {
            fprintf(stderr, "mbk run: --resume: the trajectory %s cannot be continued: %s\n", csv, why);
            return APP_MODEL;
        }
        if (rc == 0) r->kept_rows = ser->n;
    }
    /* without the trajectory so far, it starts at the checkpoint */
    return ser->n == 0 ? app_series_sample(ser, m->sys, s) : APP_OK;
}
