/* Outputs of the mbk program: the sampled trajectory, its CSV file and an SVG
 * plot of the coordinates and the energy against time. */
#define _XOPEN_SOURCE 700 /* POSIX 2008 with realpath */
#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "app.h"

char *app_read_text(const char *path, size_t *len)
{
    FILE *f = fopen(path, "rb");
    if (!f) return NULL;
    char *buf = NULL;
    size_t n = 0, cap = 0;
    for (;;) {
        if (cap - n < 65536) {
            size_t nc = cap ? 2 * cap : 1 << 20;
            char *nb = realloc(buf, nc + 1);
            if (!nb) {
                free(buf);
                fclose(f);
                return NULL;
            }
            buf = nb, cap = nc;
        }
        size_t got = fread(buf + n, 1, cap - n, f);
        n += got;
        if (got == 0) break;
    }
    bool bad = ferror(f);
    fclose(f);
    if (bad) {
        free(buf);
        return NULL;
    }
    buf[n] = '\0';
    if (len) *len = n;
    return buf;
}

char *app_output_target(const char *path)
{
    struct stat st;
    if (stat(path, &st) == 0 && !S_ISREG(st.st_mode)) return NULL; /* written in place */
    if (lstat(path, &st) != 0 || !S_ISLNK(st.st_mode)) return strdup(path);
    char *real = realpath(path, NULL);
    if (real) return real;
    /* a link to a file not made yet: the file it names, beside the link when relative */
    char t[4096];
    ssize_t n = readlink(path, t, sizeof t - 1);
    if (n < 0) return strdup(path);
    t[n] = '\0';
    const char *slash = strrchr(path, '/');
    size_t cap = strlen(path) + (size_t)n + 2;
    char *out = malloc(cap);
    if (out && (t[0] == '/' || !slash)) snprintf(out, cap, "%s", t);
    else if (out) snprintf(out, cap, "%.*s/%s", (int)(slash - path), path, t);
    return out;
}

int app_write_file(const char *path, int (*put)(FILE *f, const void *data), const void *data)
{
    char *target = app_output_target(path), *tmp = NULL;
    if (target) { /* a new file beside the old, renamed over it: never a torn file */
        size_t n = strlen(target) + sizeof ".partial";
        if (!(tmp = malloc(n))) {
            free(target);
            return -1;
        }
        snprintf(tmp, n, "%s.partial", target);
    }
    FILE *f = fopen(tmp ? tmp : path, "w");
    int rc = f && put(f, data) == 0 ? 0 : -1;
    if (f && (ferror(f) | fclose(f))) rc = -1;
    if (rc == 0 && tmp && rename(tmp, target) != 0) rc = -1;
    if (rc != 0 && tmp) { /* errno: the failure's, not remove's */
        int e = errno;
        remove(tmp);
        errno = e;
    }
    free(tmp), free(target);
    return rc;
}

static int put_text(FILE *f, const void *text) { return fputs(text, f) < 0 ? -1 : 0; }

int app_write_text(const char *path, const char *text) { return app_write_file(path, put_text, text); }

double app_now(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + 1e-9 * (double)ts.tv_nsec;
}

int app_fail(const char *what)
{
    fprintf(stderr, "mbk: %s: %s (%s)\n", what, mbk_last_error(), mbk_status_name(mbk_last_status()));
    app_hint(mbk_last_error());
    return APP_FAILED;
}

void app_hint(const char *message)
{
    if (strstr(message, "mbk_integrator_set_max_steps"))
        fprintf(stderr, "mbk: hint: the step limit above is --max-steps N in mbk run: the most steps per output "
                        "interval (default %ld); a shorter --interval (fewer steps each) or a looser --accuracy also helps\n",
                app_integrator_default_max_steps());
    if (strstr(message, "options.max_bytes"))
        fprintf(stderr, "mbk: hint: the size limit above is --max-urdf-bytes N in mbk run, info and bench "
                        "(default 16 MiB)\n");
}

void app_make_parent_dir(const char *path)
{
    const char *slash = strrchr(path, '/');
    if (!slash || slash == path) return;
    char dir[4096];
    size_t n = (size_t)(slash - path);
    if (n >= sizeof dir) return;
    memcpy(dir, path, n);
    dir[n] = '\0';
    mkdir(dir, 0777);
}

/* ---- samples ------------------------------------------------------------------ */

int app_series_add(app_series *ser, double t, const double *q, const double *u, double ke, double pe)
{
    if (ser->n == ser->cap) {
        long cap = ser->cap ? 2 * ser->cap : 1024;
        double *nt = realloc(ser->t, sizeof(double) * (size_t)cap);
        if (nt) ser->t = nt;
        double *nk = realloc(ser->ke, sizeof(double) * (size_t)cap);
        if (nk) ser->ke = nk;
        double *np = realloc(ser->pe, sizeof(double) * (size_t)cap);
        if (np) ser->pe = np;
        double *nq = realloc(ser->q, sizeof(double) * (size_t)cap * (size_t)(ser->nq ? ser->nq : 1));
        if (nq) ser->q = nq;
        double *nu = realloc(ser->u, sizeof(double) * (size_t)cap * (size_t)(ser->nu ? ser->nu : 1));
        if (nu) ser->u = nu;
        if (!nt || !nk || !np || !nq || !nu) return -1;
        ser->cap = cap;
    }
    ser->t[ser->n] = t;
    ser->ke[ser->n] = ke;
    ser->pe[ser->n] = pe;
    memcpy(ser->q + ser->n * ser->nq, q, sizeof(double) * (size_t)ser->nq);
    memcpy(ser->u + ser->n * ser->nu, u, sizeof(double) * (size_t)ser->nu);
    ser->n++;
    return 0;
}

int app_series_sample(app_series *ser, const mbk_system *sys, const mbk_state *s)
{
    double ke = 0, pe = 0;
    if (mbk_system_calc_energy(sys, s, &ke, &pe) < 0) return app_fail("computing the energy");
    if (app_series_add(ser, mbk_state_get_time(s), mbk_state_get_q(s), mbk_state_get_u(s), ke, pe)) {
        fprintf(stderr, "mbk: out of memory for the trajectory\n");
        return APP_FAILED;
    }
    return APP_OK;
}

void app_series_free(app_series *ser)
{
    free(ser->t), free(ser->q), free(ser->u), free(ser->ke), free(ser->pe);
    memset(ser, 0, sizeof *ser);
}

/* ---- CSV ---------------------------------------------------------------------- */

void app_write_csv_rows(FILE *f, const app_series *ser, long from)
{
    for (long k = from; k < ser->n; ++k) {
        fprintf(f, "%.10g", ser->t[k]);
        for (int i = 0; i < ser->nq; ++i) fprintf(f, ",%.12g", ser->q[k * ser->nq + i]);
        for (int i = 0; i < ser->nu; ++i) fprintf(f, ",%.12g", ser->u[k * ser->nu + i]);
        fprintf(f, ",%.15g,%.15g,%.15g\n", ser->ke[k] + ser->pe[k], ser->ke[k], ser->pe[k]);
    }
}

void app_write_csv_header(FILE *f, const app_series *ser)
{
    fprintf(f, "t");
    for (int i = 0; i < ser->nq; ++i) fprintf(f, ",q%d", i);
    for (int i = 0; i < ser->nu; ++i) fprintf(f, ",u%d", i);
    fprintf(f, ",energy,kinetic,potential\n");
}

/* ---- SVG ---------------------------------------------------------------------- */

static const char *const palette[] = {"#1f77b4", "#ff7f0e", "#2ca02c", "#d62728", "#9467bd",
                                      "#8c564b", "#e377c2", "#7f7f7f", "#bcbd22", "#17becf"};
enum { MAX_Q_LINES = 10, MAX_POINTS = 1500 };

typedef struct panel {
    double x0, y0, w, h;       /* pixels */
    double t0, t1, lo, hi;     /* data range */
} panel;

static double px(const panel *p, double t) { return p->x0 + (t - p->t0) / (p->t1 - p->t0) * p->w; }
static double py(const panel *p, double v) { return p->y0 + p->h - (v - p->lo) / (p->hi - p->lo) * p->h; }

/* A round tick step giving about n ticks over [lo, hi]. */
static double tick_step(double lo, double hi, int n)
{
    double raw = (hi - lo) / n, mag = pow(10.0, floor(log10(raw))), r = raw / mag;
    return (r < 1.5 ? 1 : r < 3.5 ? 2 : r < 7.5 ? 5 : 10) * mag;
}

static void nice_range(double *lo, double *hi)
{
    if (!isfinite(*lo) || !isfinite(*hi)) *lo = -1, *hi = 1;
    double span = *hi - *lo, mid = 0.5 * (*hi + *lo);
    if (span <= 1e-12 * fmax(1.0, fabs(mid))) {
        double d = fmax(1e-9, 1e-6 * fabs(mid));
        *lo = mid - d, *hi = mid + d;
    }
    double pad = 0.05 * (*hi - *lo);
    *lo -= pad, *hi += pad;
}

static void svg_text_escaped(FILE *f, const char *s)
{
    for (; *s; ++s) {
        if (*s == '&') fputs("&amp;", f);
        else if (*s == '<') fputs("&lt;", f);
        else if (*s == '>') fputs("&gt;", f);
        else if (*s == '"') fputs("&quot;", f);
        else fputc(*s, f);
    }
}

static void svg_axes(FILE *f, const panel *p, const char *ylabel, bool xlabels)
{
    fprintf(f, "<rect x=\"%.1f\" y=\"%.1f\" width=\"%.1f\" height=\"%.1f\" fill=\"#ffffff\" stroke=\"#444\"/>\n",
            p->x0, p->y0, p->w, p->h);
    double st = tick_step(p->t0, p->t1, 8);
    for (double t = ceil(p->t0 / st) * st; t <= p->t1 + 1e-9 * st; t += st) {
        double x = px(p, t);
        fprintf(f, "<line x1=\"%.1f\" y1=\"%.1f\" x2=\"%.1f\" y2=\"%.1f\" stroke=\"#e5e5e5\"/>\n", x, p->y0, x, p->y0 + p->h);
        if (xlabels)
            fprintf(f, "<text x=\"%.1f\" y=\"%.1f\" font-size=\"11\" text-anchor=\"middle\">%g</text>\n", x,
                    p->y0 + p->h + 14, fabs(t) < 1e-12 * st ? 0.0 : t);
    }
    double sv = tick_step(p->lo, p->hi, 5);
    for (double v = ceil(p->lo / sv) * sv; v <= p->hi + 1e-9 * sv; v += sv) {
        double y = py(p, v);
        fprintf(f, "<line x1=\"%.1f\" y1=\"%.1f\" x2=\"%.1f\" y2=\"%.1f\" stroke=\"#e5e5e5\"/>\n", p->x0, y, p->x0 + p->w, y);
        fprintf(f, "<text x=\"%.1f\" y=\"%.1f\" font-size=\"11\" text-anchor=\"end\">%.4g</text>\n", p->x0 - 5, y + 4,
                fabs(v) < 1e-9 * sv ? 0.0 : v);
    }
    fprintf(f, "<text x=\"%.1f\" y=\"%.1f\" font-size=\"12\" text-anchor=\"middle\" transform=\"rotate(-90 %.1f %.1f)\">%s</text>\n",
            p->x0 - 62, p->y0 + p->h / 2, p->x0 - 62, p->y0 + p->h / 2, ylabel);
}

static void svg_line(FILE *f, const panel *p, const app_series *s, const double *v, long stride_v, const char *color)
{
    long step = s->n > MAX_POINTS ? (s->n + MAX_POINTS - 1) / MAX_POINTS : 1;
    fprintf(f, "<polyline fill=\"none\" stroke=\"%s\" stroke-width=\"1.4\" points=\"", color);
    for (long k = 0; k < s->n; k += step) fprintf(f, "%.2f,%.2f ", px(p, s->t[k]), py(p, v[k * stride_v]));
    if ((s->n - 1) % step) fprintf(f, "%.2f,%.2f", px(p, s->t[s->n - 1]), py(p, v[(s->n - 1) * stride_v]));
    fprintf(f, "\"/>\n");
}

int app_write_svg(const char *path, const app_series *s, const char *title)
{
    FILE *f = fopen(path, "w");
    if (!f) return -1;
    const double W = 980, H = 680;
    int nlines = s->nq < MAX_Q_LINES ? s->nq : MAX_Q_LINES;
    double t0 = s->n ? s->t[0] : 0, t1 = s->n ? s->t[s->n - 1] : 1;
    if (!(t1 > t0)) t1 = t0 + 1;
    panel pq = {80, 50, 740, 330, t0, t1, INFINITY, -INFINITY};
    panel pe = {80, 440, 740, 180, t0, t1, INFINITY, -INFINITY};
    double *e = malloc(sizeof(double) * (size_t)(s->n ? s->n : 1));
    if (!e) {
        fclose(f);
        errno = ENOMEM;
        return -1;
    }
    for (long k = 0; k < s->n; ++k) {
        for (int i = 0; i < nlines; ++i) {
            double v = s->q[k * s->nq + i];
            pq.lo = fmin(pq.lo, v), pq.hi = fmax(pq.hi, v);
        }
        e[k] = s->ke[k] + s->pe[k] - (s->ke[0] + s->pe[0]); /* the change of energy reads better than E */
        pe.lo = fmin(pe.lo, e[k]), pe.hi = fmax(pe.hi, e[k]);
    }
    if (nlines == 0) pq.lo = -1, pq.hi = 1;
    nice_range(&pq.lo, &pq.hi);
    nice_range(&pe.lo, &pe.hi);
    fprintf(f, "<?xml version=\"1.0\" encoding=\"UTF-8\"?>\n"
               "<svg xmlns=\"http://www.w3.org/2000/svg\" width=\"%.0f\" height=\"%.0f\" viewBox=\"0 0 %.0f %.0f\" "
               "font-family=\"sans-serif\">\n<rect width=\"100%%\" height=\"100%%\" fill=\"#fafafa\"/>\n",
            W, H, W, H);
    fprintf(f, "<text x=\"%.1f\" y=\"28\" font-size=\"16\" text-anchor=\"middle\">", W / 2);
    svg_text_escaped(f, title);
    fprintf(f, "</text>\n");
    svg_axes(f, &pq, "generalized coordinates q", false);
    svg_axes(f, &pe, "E(t) - E(0) (J)", true);
    fprintf(f, "<text x=\"%.1f\" y=\"%.1f\" font-size=\"12\" text-anchor=\"middle\">time (s)</text>\n",
            pe.x0 + pe.w / 2, pe.y0 + pe.h + 34);
    for (int i = 0; i < nlines; ++i) {
        const char *c = palette[i % 10];
        svg_line(f, &pq, s, s->q + i, s->nq, c);
        fprintf(f, "<line x1=\"%.1f\" y1=\"%.1f\" x2=\"%.1f\" y2=\"%.1f\" stroke=\"%s\" stroke-width=\"3\"/>"
                   "<text x=\"%.1f\" y=\"%.1f\" font-size=\"12\">q%d</text>\n",
                pq.x0 + pq.w + 15, pq.y0 + 12 + 18.0 * i, pq.x0 + pq.w + 35, pq.y0 + 12 + 18.0 * i, c,
                pq.x0 + pq.w + 40, pq.y0 + 16 + 18.0 * i, i);
    }
    if (s->nq > nlines)
        fprintf(f, "<text x=\"%.1f\" y=\"%.1f\" font-size=\"11\" fill=\"#555\">(+%d more in the CSV)</text>\n",
                pq.x0 + pq.w + 15, pq.y0 + 16 + 18.0 * nlines, s->nq - nlines);
    svg_line(f, &pe, s, e, 1, "#d62728");
    if (s->n > 0) {
        double drift = e[s->n - 1];
        fprintf(f, "<text x=\"%.1f\" y=\"%.1f\" font-size=\"11\" fill=\"#555\">E(0) = %.9g J</text>\n"
                   "<text x=\"%.1f\" y=\"%.1f\" font-size=\"11\" fill=\"#555\">E(end) - E(0) =</text>\n"
                   "<text x=\"%.1f\" y=\"%.1f\" font-size=\"11\" fill=\"#555\">%.3g J</text>\n",
                pe.x0 + pe.w + 12, pe.y0 + 14, s->ke[0] + s->pe[0], pe.x0 + pe.w + 12, pe.y0 + 32, pe.x0 + pe.w + 12, pe.y0 + 48,
                drift);
    }
    fprintf(f, "</svg>\n");
    free(e);
    int err = ferror(f);
    if (fclose(f) != 0 || err) return -1;
    return 0;
}
