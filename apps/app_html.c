/* The trajectory viewer page of `mbk run --html FILE` and `mbk view` (docs/viewer.md).
 *
 * One self-contained HTML file: the template viewer/viewer.html, with three.js
 * (Debian's libjs-three: three.min.js and OrbitControls.js), the page's own
 * script viewer/viewer.js and the trajectory (JSON) put in its place at
 * generation time. Nothing is fetched when the page is viewed.
 *
 * The files are looked for, in order, in
 *   $MBK_VIEWER_DIR                          (a folder holding them, to override)
 *   <folder of the program>/MBK_VIEWER_REL   (the installed tree, and the build
 *                                             tree, which CMake lays out alike)
 *   MBK_VIEWER_INSTALL_DIR                   (the configured install folder)
 * and three.js, when not found there, in MBK_THREE_DIR (Debian's folder).
 *
 * Body poses come from the public API: the samples' q are set in a State,
 * realized to Position, and read with mbk_matter_get_body_transform, for each
 * frame the page keeps (the trajectory is thinned to a budget of body poses so
 * that a 1000-body chain stays small and smooth; the page states it). */
#define _POSIX_C_SOURCE 200809L
#include <errno.h>
#include <limits.h>
#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "app.h"

#ifndef MBK_VIEWER_REL
#define MBK_VIEWER_REL "../share/mbk/viewer"
#endif
#ifndef MBK_VIEWER_INSTALL_DIR
#define MBK_VIEWER_INSTALL_DIR "/usr/local/share/mbk/viewer"
#endif
#ifndef MBK_THREE_DIR
#define MBK_THREE_DIR "/usr/share/javascript/three"
#endif

enum {
    POSE_BUDGET = 250000, /* body poses in the page at most (frames x moving bodies) */
    MAX_FRAMES = 5000,    /* frames at most, whatever the model */
    PLOT_LINES = 10       /* coordinates plotted (as in the SVG plot) */
};

/* ---- files ------------------------------------------------------------------------ */

static bool is_file(const char *path)
{
    struct stat st;
    return stat(path, &st) == 0 && S_ISREG(st.st_mode);
}

/* The folder holding viewer.html, or false. */
static bool find_viewer_dir(char *out, size_t cap)
{
    char probe[PATH_MAX + 64];
    const char *env = getenv("MBK_VIEWER_DIR");
    if (env && *env) {
        snprintf(out, cap, "%s", env);
        snprintf(probe, sizeof probe, "%s/viewer.html", out);
        if (is_file(probe)) return true;
    }
    char exe[PATH_MAX];
    ssize_t n = readlink("/proc/self/exe", exe, sizeof exe - 1);
    if (n > 0) {
        exe[n] = '\0';
        char *slash = strrchr(exe, '/');
        if (slash) {
            *slash = '\0';
            int k = snprintf(out, cap, "%s/%s", exe, MBK_VIEWER_REL);
            if (k > 0 && (size_t)k < cap && (size_t)snprintf(probe, sizeof probe, "%s/viewer.html", out) < sizeof probe &&
                is_file(probe))
                return true;
        }
    }
    snprintf(out, cap, "%s", MBK_VIEWER_INSTALL_DIR);
    snprintf(probe, sizeof probe, "%s/viewer.html", out);
    return is_file(probe);
}

/* A viewer file: in the viewer folder, else at `fallback` (may be NULL). */
static char *load_asset(const char *dir, const char *name, const char *fallback, char *err, size_t cap)
{
    char path[PATH_MAX + 64];
    snprintf(path, sizeof path, "%s/%s", dir, name);
    if (!is_file(path) && fallback) snprintf(path, sizeof path, "%s", fallback);
    char *text = app_read_text(path, NULL);
    if (!text)
        snprintf(err, cap, "cannot read %s (%s)%s", path, errno ? strerror(errno) : "read error",
                 fallback ? "; three.js comes from Debian's libjs-three: run scripts/install-deps.sh, or point "
                            "MBK_VIEWER_DIR at a folder holding three.min.js and OrbitControls.js"
                          : "");
    return text;
}

/* ---- JSON ----------------------------------------------------------------------- */

/* A JSON string that is also safe inside a <script> element: <, > and & are escaped. */
static void jstr(FILE *f, const char *s)
{
    fputc('"', f);
    for (const unsigned char *p = (const unsigned char *)(s ? s : ""); *p; ++p) {
        if (*p == '"' || *p == '\\') fprintf(f, "\\%c", *p);
        else if (*p < 0x20 || *p == '<' || *p == '>' || *p == '&') fprintf(f, "\\u%04x", *p);
        else fputc(*p, f);
    }
    fputc('"', f);
}

static void jnum(FILE *f, double v, const char *fmt)
{
    if (isfinite(v)) fprintf(f, fmt, v);
    else fputs("null", f);
}

static void jvec(FILE *f, mbk_vec3 v)
{
    fputc('[', f);
    jnum(f, v.x, "%.9g");
    fputc(',', f);
    jnum(f, v.y, "%.9g");
    fputc(',', f);
    jnum(f, v.z, "%.9g");
    fputc(']', f);
}

static void jquat(FILE *f, mbk_mat33 R)
{
    mbk_quat q = mbk_mat33_to_quat(R);
    fprintf(f, "[%.9g,%.9g,%.9g,%.9g]", q.w, q.x, q.y, q.z);
}

/* ---- base64 of float32 (little-endian) ------------------------------------------ */

typedef struct b64 {
    FILE *f;
    unsigned char buf[3];
    int n;
} b64;

static void b64_flush3(b64 *b, int n)
{
    static const char A[] = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";
    unsigned v = (unsigned)b->buf[0] << 16 | (unsigned)(n > 1 ? b->buf[1] : 0) << 8 | (unsigned)(n > 2 ? b->buf[2] : 0);
    char o[4] = {A[v >> 18 & 63], A[v >> 12 & 63], n > 1 ? A[v >> 6 & 63] : '=', n > 2 ? A[v & 63] : '='};
    fwrite(o, 1, 4, b->f);
}

static void b64_byte(b64 *b, unsigned char c)
{
    b->buf[b->n++] = c;
    if (b->n == 3) b64_flush3(b, 3), b->n = 0;
}

static void b64_float(b64 *b, double v)
{
    float x = isfinite(v) ? (float)v : 0.0f;
    uint32_t u;
    memcpy(&u, &x, sizeof u);
    for (int k = 0; k < 4; ++k) b64_byte(b, (unsigned char)(u >> (8 * k)));
}

static void b64_end(b64 *b)
{
    if (b->n) b64_flush3(b, b->n), b->n = 0;
}

/* ---- the data --------------------------------------------------------------------- */

static const float palette[][3] = {{0.12f, 0.47f, 0.71f}, {1.00f, 0.50f, 0.05f}, {0.17f, 0.63f, 0.17f},
                                   {0.84f, 0.15f, 0.16f}, {0.58f, 0.40f, 0.74f}, {0.55f, 0.34f, 0.29f},
                                   {0.89f, 0.47f, 0.76f}, {0.50f, 0.50f, 0.50f}, {0.74f, 0.74f, 0.13f},
                                   {0.09f, 0.75f, 0.81f}};

static const char *shape_name(int type)
{
    return type == APP_SHAPE_CYLINDER ? "cylinder" : type == APP_SHAPE_SPHERE ? "sphere" : "box";
}

/* Which samples the page keeps: all, or evenly spaced ones (first and last kept). */
static long choose_frames(long n, int moving, long **idx)
{
    long nf = n;
    long by_budget = moving > 0 ? POSE_BUDGET / moving : n;
    if (by_budget < 2) by_budget = 2;
    if (nf > by_budget) nf = by_budget;
    if (nf > MAX_FRAMES) nf = MAX_FRAMES;
    *idx = calloc((size_t)(nf > 0 ? nf : 1), sizeof(long));
    if (!*idx) return -1;
    for (long i = 0; i < nf; ++i) (*idx)[i] = nf == n ? i : (long)llround((double)i * (double)(n - 1) / (double)(nf - 1));
    return nf;
}

/* The coordinate names of the plot: "q3 (joint4)", "q7 (root[2])". */
static void q_label(const app_model *m, const mbk_state *s, int qi, char *buf, size_t cap)
{
    const mbk_matter *mt = mbk_multibody_get_matter(m->sys);
    for (int b = 1; b < m->n_bodies; ++b) {
        int q0 = mbk_matter_get_body_q_start(mt, s, b), nq = mbk_matter_get_body_num_q(mt, s, b);
        if (qi >= q0 && qi < q0 + nq) {
            const char *j = m->joint_name[b][0] ? m->joint_name[b] : m->body_name[b];
            if (nq == 1) snprintf(buf, cap, "q%d %s", qi, j);
            else snprintf(buf, cap, "q%d %s[%d]", qi, j, qi - q0);
            return;
        }
    }
    snprintf(buf, cap, "q%d", qi);
}

/* The shapes: URDF visuals, then a box from the mass properties for each body without
   one; notes say what was not drawn as given. */
static int collect_shapes(const app_model *m, app_shapes *sh, char *notes, size_t ncap)
{
    if (m->urdf && app_shapes_from_urdf(m, sh, notes, ncap) < 0)
        snprintf(notes, ncap, "The URDF <visual> elements could not be read: every body is drawn as a box "
                              "fitted to its mass properties. ");
    int fitted = 0;
    for (int b = 1; b < m->n_bodies; ++b) {
        bool has = false;
        for (int k = 0; k < sh->n && !has; ++k) has = sh->v[k].body == b;
        if (has) continue;
        if (app_shape_mass_box(m, b, sh) < 0) return -1;
        fitted++;
    }
    if (m->urdf && fitted) {
        size_t used = strlen(notes);
        snprintf(notes + used, ncap - used, "%d bod%s with no drawable <visual> drawn as a box fitted to %s "
                 "mass properties. ", fitted, fitted == 1 ? "y" : "ies", fitted == 1 ? "its" : "their");
    }
    return 0;
}

/* The run's gravity (the page puts "up" against it): --gravity, else the model's. */
static mbk_vec3 run_gravity(const app_model *m, const mbk_state *s, const app_run_info *ri)
{
    if (ri->have_gravity) return ri->gravity;
    const mbk_forces *fo = mbk_multibody_get_forces(m->sys);
    if (m->gravity_force >= 0) {
        double p[16];
        int np = mbk_force_get_num_parameters(fo, m->gravity_force);
        if (np >= 3 && np <= 16 && mbk_force_get_parameters(fo, s, m->gravity_force, p, np) == MBK_OK)
            return mbk_vec3_make(p[0], p[1], p[2]);
    }
    return mbk_vec3_make(0, 0, -9.81);
}

/* The run's description: program, command, model, integrator, gravity, notes. */
static void write_header(FILE *f, const app_model *m, const app_series *ser, const app_run_info *ri, mbk_vec3 g,
                         const char *notes)
{
    fprintf(f, "{\"format\":1,\"mbk\":");
    jstr(f, mbk_version());
    fprintf(f, ",\"command\":");
    jstr(f, ri->command);
    fprintf(f, ",\"spec\":");
    jstr(f, m->spec);
    fprintf(f, ",\"title\":");
    jstr(f, m->title);
    fprintf(f, ",\"urdf\":%s,\"integrator\":", m->urdf ? "true" : "false");
    jstr(f, ri->integrator);
    fprintf(f, ",\"t_final\":");
    jnum(f, ri->t_final, "%.10g");
    fprintf(f, ",\"stopped_early\":%s,\"why\":", ri->stopped_early ? "true" : "false");
    jstr(f, ri->why);
    fprintf(f, ",\"autoplay\":%s,\"gravity\":", ri->autoplay ? "true" : "false");
    jvec(f, g);
    fprintf(f, ",\"notes\":");
    jstr(f, notes);
    fprintf(f, ",\"nq\":%d,\"nu\":%d", ser->nq, ser->nu);
}

/* The bodies (name, parent, joint, mass) and their shapes. */
static void write_bodies(FILE *f, const app_model *m, const app_shapes *sh)
{
    const mbk_matter *mt = mbk_multibody_get_matter(m->sys);
    fprintf(f, ",\n\"bodies\":[");
    for (int b = 0; b < m->n_bodies; ++b) {
        mbk_mass_props mp = {0};
        mbk_matter_get_body_mass_props(mt, b, &mp);
        fprintf(f, "%s{\"name\":", b ? ",\n" : "");
        jstr(f, m->body_name[b]);
        fprintf(f, ",\"parent\":%d,\"joint\":", b ? mbk_matter_get_parent(mt, b) : -1);
        jstr(f, m->joint_name[b]);
        fprintf(f, ",\"type\":");
        jstr(f, m->joint_type[b]);
        fprintf(f, ",\"mass\":");
        jnum(f, mp.mass, "%.9g");
        fprintf(f, "}");
    }
    fprintf(f, "],\n\"shapes\":[");
    for (int k = 0; k < sh->n; ++k) {
        const app_shape *p = &sh->v[k];
        fprintf(f, "%s{\"body\":%d,\"type\":\"%s\",\"size\":", k ? ",\n" : "", p->body, shape_name(p->type));
        jvec(f, mbk_vec3_make(p->size[0], p->size[1], p->size[2]));
        fprintf(f, ",\"pos\":");
        jvec(f, p->X_BS.p);
        fprintf(f, ",\"quat\":");
        jquat(f, p->X_BS.R);
        const float *c = p->rgba;
        int pc = (p->body + 9) % 10; /* body 1 blue, body 2 orange, ... (as the plot's q0, q1) */
        float pal[4] = {palette[pc][0], palette[pc][1], palette[pc][2], 1};
        if (c[3] < 0) c = pal;
        fprintf(f, ",\"color\":[%.3f,%.3f,%.3f,%.3f]", c[0], c[1], c[2], c[3]);
        if (p->from_mesh) fprintf(f, ",\"mesh\":true");
        if (p->mass_box) fprintf(f, ",\"fitted\":true");
        if (p->note[0]) {
            fprintf(f, ",\"note\":");
            jstr(f, p->note);
        }
        fprintf(f, "}");
    }
    fprintf(f, "]");
}

/* Contact spheres and their ground planes, and the lines drawn between bodies. */
static void write_contacts(FILE *f, const app_model *m)
{
    const mbk_forces *fo = mbk_multibody_get_forces(m->sys);
    fprintf(f, ",\n\"contacts\":[");
    int nc = 0;
    for (int e = 0; e < mbk_forces_get_num_elements(fo); ++e) {
        int body = 0;
        mbk_vec3 c;
        double r = 0, h = 0;
        if (mbk_force_get_hunt_crossley_sphere(fo, e, &body, &c, &r, &h) != MBK_OK) continue;
        fprintf(f, "%s{\"body\":%d,\"center\":", nc++ ? "," : "", body);
        jvec(f, c);
        fprintf(f, ",\"radius\":%.9g,\"height\":%.9g}", r, h);
    }
    fprintf(f, "]");
    fprintf(f, ",\n\"lines\":[");
    for (int k = 0; k < m->n_connections; ++k) {
        const app_connection *cn = &m->connections[k];
        fprintf(f, "%s{\"b1\":%d,\"p1\":", k ? "," : "", cn->b1);
        jvec(f, cn->p1);
        fprintf(f, ",\"b2\":%d,\"p2\":", cn->b2);
        jvec(f, cn->p2);
        fprintf(f, ",\"label\":");
        jstr(f, cn->label);
        fprintf(f, "}");
    }
    fprintf(f, "]");
}

/* x[idx[j] * stride] for the nf frames, as a JSON array's elements. */
static void jseries(FILE *f, const double *x, long stride, const long *idx, long nf, const char *fmt)
{
    for (long j = 0; j < nf; ++j) {
        if (j) fputc(',', f);
        jnum(f, x[idx[j] * stride], fmt);
    }
}

/* The poses of every body (Ground too) at the nf frames, as float32 x y z qw qx qy qz
   in base64; s: a State to realize them in. */
static int write_poses(FILE *f, const app_model *m, const app_series *ser, const long *idx, long nf, mbk_state *s)
{
    const mbk_matter *mt = mbk_multibody_get_matter(m->sys);
    int rc = 0;
    fprintf(f, "],\n\"poses\":\"");
    b64 enc = {f, {0}, 0};
    for (long i = 0; i < nf && rc == 0; ++i) {
        long k = idx[i];
        if (mbk_state_set_time(s, ser->t[k]) < 0) rc = -1;
        if (ser->nq) memcpy(mbk_state_upd_q(s), ser->q + k * ser->nq, sizeof(double) * (size_t)ser->nq);
        if (rc == 0 && mbk_system_realize(m->sys, s, MBK_STAGE_POSITION) < 0) rc = -1;
        for (int b = 0; b < m->n_bodies && rc == 0; ++b) {
            mbk_transform X;
            if (mbk_matter_get_body_transform(mt, s, b, &X) < 0) {
                rc = -1;
                break;
            }
            mbk_quat q = mbk_mat33_to_quat(X.R);
            double v[7] = {X.p.x, X.p.y, X.p.z, q.w, q.x, q.y, q.z};
            for (int j = 0; j < 7; ++j) b64_float(&enc, v[j]);
        }
    }
    b64_end(&enc);
    fprintf(f, "\"");
    return rc;
}

/* The plots: the first coordinates (named), and the energy. */
static void write_plots(FILE *f, const app_model *m, const app_series *ser, const long *idx, long nf,
                        const mbk_state *s)
{
    int nl = ser->nq < PLOT_LINES ? ser->nq : PLOT_LINES;
    fprintf(f, ",\n\"q_names\":[");
    for (int i = 0; i < nl; ++i) {
        char lab[2 * APP_NAME_MAX];
        q_label(m, s, i, lab, sizeof lab);
        if (i) fputc(',', f);
        jstr(f, lab);
    }
    fprintf(f, "],\n\"q\":[");
    for (int i = 0; i < nl; ++i) {
        fprintf(f, "%s[", i ? ",\n" : "");
        jseries(f, ser->q + i, ser->nq, idx, nf, "%.7g");
        fprintf(f, "]");
    }
    fprintf(f, "],\n\"kinetic\":[");
    jseries(f, ser->ke, 1, idx, nf, "%.10g");
    fprintf(f, "],\n\"potential\":[");
    jseries(f, ser->pe, 1, idx, nf, "%.10g");
    fprintf(f, "]}");
}

/* The frames (at most MAX_FRAMES and POSE_BUDGET poses, evenly from the samples): their
   times, the bodies' poses (realized in s) and the plots. */
static int write_frames(FILE *f, const app_model *m, const app_series *ser, mbk_state *s, char *err, size_t cap)
{
    long *idx = NULL;
    const long nf = choose_frames(ser->n, m->n_bodies - 1, &idx);
    if (nf < 0) {
        snprintf(err, cap, "out of memory");
        return -1;
    }
    fprintf(f, ",\n\"samples\":%ld,\"pose_budget\":%d,\"max_frames\":%d,\"frames\":%ld,\n\"t\":[", ser->n,
            POSE_BUDGET, MAX_FRAMES, nf);
    jseries(f, ser->t, 1, idx, nf, "%.10g");
    int rc = write_poses(f, m, ser, idx, nf, s);
    if (rc < 0) snprintf(err, cap, "computing the body poses: %s", mbk_last_error());
    else write_plots(f, m, ser, idx, nf, s);
    free(idx);
    return rc;
}

/* The page's data: the run, the bodies and shapes, then the frames. */
static int write_data(FILE *f, const app_model *m, const app_series *ser, const app_run_info *ri, char *err,
                      size_t cap)
{
    mbk_state *s = app_model_initial_state(m);
    if (!s) {
        snprintf(err, cap, "cannot make a State to compute the body poses: %s", mbk_last_error());
        return -1;
    }
    app_shapes sh = {0};
    char notes[1024] = "";
    int rc = collect_shapes(m, &sh, notes, sizeof notes);
    if (rc < 0) {
        snprintf(err, cap, "out of memory for the body shapes");
    } else {
        write_header(f, m, ser, ri, run_gravity(m, s, ri), notes);
        write_bodies(f, m, &sh);
        write_contacts(f, m);
        rc = write_frames(f, m, ser, s, err, cap);
    }
    app_shapes_free(&sh);
    mbk_state_destroy(s);
    return rc;
}

/* ---- the page --------------------------------------------------------------------- */

/* Write text up to a marker; returns the text after it, or NULL if it is missing. */
static const char *upto(FILE *f, const char *text, const char *marker)
{
    const char *at = strstr(text, marker);
    if (!at) return NULL;
    fwrite(text, 1, (size_t)(at - text), f);
    return at + strlen(marker);
}

int app_write_html(const char *path, const app_model *m, const app_series *ser, const app_run_info *ri, char *err,
                   size_t cap)
{
    char dir[PATH_MAX];
    if (!find_viewer_dir(dir, sizeof dir)) {
        snprintf(err, cap, "the viewer's files (viewer.html) are not installed: looked in $MBK_VIEWER_DIR, "
                           "<program folder>/%s and %s; reinstall mbk, or set MBK_VIEWER_DIR to the source tree's "
                           "viewer/ folder", MBK_VIEWER_REL, MBK_VIEWER_INSTALL_DIR);
        return -1;
    }
    char *tmpl = load_asset(dir, "viewer.html", NULL, err, cap);
    char *js = tmpl ? load_asset(dir, "viewer.js", NULL, err, cap) : NULL;
    char *three = js ? load_asset(dir, "three.min.js", MBK_THREE_DIR "/three.min.js", err, cap) : NULL;
    char *orbit = three ? load_asset(dir, "OrbitControls.js", MBK_THREE_DIR "/examples/js/controls/OrbitControls.js",
                                     err, cap)
                        : NULL;
    int rc = -1;
    FILE *f = NULL;
    if (!orbit) goto done;
    /* a script element ends at the first "</script": none may hide in what is embedded */
    if (strstr(js, "</script") || strstr(three, "</script") || strstr(orbit, "</script")) {
        snprintf(err, cap, "a viewer script contains \"</script\" and cannot be embedded");
        goto done;
    }
    app_make_parent_dir(path);
    f = fopen(path, "w");
    if (!f) {
        snprintf(err, cap, "cannot write %s: %s", path, strerror(errno));
        goto done;
    }
    const char *p = upto(f, tmpl, "<!--mbk:three-->");
    if (p) {
        fputs("<script>\n", f);
        fputs(three, f);
        fputs("\n</script>\n<script>\n", f);
        fputs(orbit, f);
        fputs("\n</script>", f);
        p = upto(f, p, "<!--mbk:data-->");
    }
    if (p) {
        fputs("<script type=\"application/json\" id=\"mbk-data\">", f);
        if (write_data(f, m, ser, ri, err, cap) < 0) goto done;
        fputs("</script>", f);
        p = upto(f, p, "<!--mbk:viewer-->");
    }
    if (!p) {
        snprintf(err, cap, "%s/viewer.html lacks one of the markers <!--mbk:three-->, <!--mbk:data-->, "
                           "<!--mbk:viewer--> (in that order)", dir);
        goto done;
    }
    fputs("<script>\n", f);
    fputs(js, f);
    fputs("\n</script>", f);
    fputs(p, f);
    if (ferror(f)) {
        snprintf(err, cap, "cannot write %s: %s", path, strerror(errno));
        goto done;
    }
    rc = 0;
done:
    if (f && fclose(f) != 0 && rc == 0) {
        snprintf(err, cap, "cannot write %s: %s", path, strerror(errno));
        rc = -1;
    }
    if (f && rc) remove(path);
    free(tmpl), free(js), free(three), free(orbit);
    return rc;
}
