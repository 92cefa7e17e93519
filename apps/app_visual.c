/* Shapes of the bodies for the trajectory viewer (app_html.c).
 *
 * A URDF model is drawn from its links' <visual> elements, which the library's
 * loader does not keep (it builds dynamics only): this file reads them again
 * from the file with expat, the XML parser the loader uses. Boxes, cylinders
 * and spheres are drawn as they are; a <mesh> is drawn as the bounding box of
 * its vertices when its file is found and is STL (binary or ASCII) or OBJ
 * (mbk_urdf_mesh_bounding_box, the reader and file rules ground contact uses),
 * otherwise left out and said so. Bodies that end up with no shape, and every
 * body of a model that is not a URDF file, get a box fitted to their mass
 * properties: the uniform box with the same mass and central principal
 * moments of inertia, along the principal axes. */
#define _POSIX_C_SOURCE 200809L
#include <ctype.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <expat.h>
#include <mbk/urdf.h>

#include "app.h"

/* ---- the list ------------------------------------------------------------------ */

static app_shape *push(app_shapes *sh)
{
    if (sh->n == sh->cap) {
        int cap = sh->cap ? 2 * sh->cap : 16;
        app_shape *v = realloc(sh->v, sizeof *v * (size_t)cap);
        if (!v) return NULL;
        sh->v = v, sh->cap = cap;
    }
    app_shape *s = &sh->v[sh->n++];
    memset(s, 0, sizeof *s);
    s->X_BS = mbk_transform_identity();
    s->rgba[3] = -1; /* no colour given */
    return s;
}

void app_shapes_free(app_shapes *sh)
{
    free(sh->v);
    memset(sh, 0, sizeof *sh);
}

/* ---- a box fitted to mass properties ----------------------------------------------- */

/* Eigenvalues (ascending not required) and eigenvectors (columns of V) of a
   symmetric 3x3 matrix, by cyclic Jacobi rotations. */
static void sym_eigen(const mbk_mat33 *A, double d[3], mbk_mat33 *V)
{
    double a[3][3];
    memcpy(a, A->m, sizeof a);
    *V = mbk_mat33_diag(1, 1, 1);
    for (int sweep = 0; sweep < 50; ++sweep) {
        double off = fabs(a[0][1]) + fabs(a[0][2]) + fabs(a[1][2]);
        if (off < 1e-300 || off < 1e-15 * (fabs(a[0][0]) + fabs(a[1][1]) + fabs(a[2][2]))) break;
        for (int p = 0; p < 2; ++p)
            for (int q = p + 1; q < 3; ++q) {
                if (a[p][q] == 0) continue;
                double theta = (a[q][q] - a[p][p]) / (2 * a[p][q]);
                double t = (theta >= 0 ? 1 : -1) / (fabs(theta) + sqrt(theta * theta + 1));
                double c = 1 / sqrt(t * t + 1), s = t * c;
                for (int k = 0; k < 3; ++k) { /* A <- A J */
                    double akp = a[k][p], akq = a[k][q];
                    a[k][p] = c * akp - s * akq, a[k][q] = s * akp + c * akq;
                }
                for (int k = 0; k < 3; ++k) { /* A <- J^T A */
                    double apk = a[p][k], aqk = a[q][k];
                    a[p][k] = c * apk - s * aqk, a[q][k] = s * apk + c * aqk;
                }
                for (int k = 0; k < 3; ++k) {
                    double vkp = V->m[k][p], vkq = V->m[k][q];
                    V->m[k][p] = c * vkp - s * vkq, V->m[k][q] = s * vkp + c * vkq;
                }
            }
    }
    for (int i = 0; i < 3; ++i) d[i] = a[i][i];
    /* a proper rotation: flip the last axis if needed */
    double det = V->m[0][0] * (V->m[1][1] * V->m[2][2] - V->m[1][2] * V->m[2][1]) -
                 V->m[0][1] * (V->m[1][0] * V->m[2][2] - V->m[1][2] * V->m[2][0]) +
                 V->m[0][2] * (V->m[1][0] * V->m[2][1] - V->m[1][1] * V->m[2][0]);
    if (det < 0)
        for (int k = 0; k < 3; ++k) V->m[k][2] = -V->m[k][2];
}

int app_shape_mass_box(const app_model *m, int body, app_shapes *sh)
{
    mbk_mass_props mp;
    if (mbk_matter_get_body_mass_props(mbk_multibody_get_matter(m->sys), body, &mp) < 0) return -1;
    app_shape *s = push(sh);
    if (!s) return -1;
    s->body = body;
    s->type = APP_SHAPE_BOX;
    s->mass_box = true;
    if (!(mp.mass > 0) || !isfinite(mp.mass)) {
        /* no mass: a small marker at the origin */
        s->type = APP_SHAPE_SPHERE;
        s->size[0] = s->size[1] = s->size[2] = 0.03;
        snprintf(s->note, sizeof s->note, "massless: a small sphere at its origin");
        return 0;
    }
    double d[3];
    mbk_mat33 V;
    sym_eigen(&mp.inertia, d, &V);
    /* uniform box a x b x c along the principal axes: I0 = m (b^2 + c^2) / 12, ... */
    double e[3], big = 0;
    for (int i = 0; i < 3; ++i) {
        double sq = 6 * (d[(i + 1) % 3] + d[(i + 2) % 3] - d[i]) / mp.mass;
        e[i] = sq > 0 ? sqrt(sq) : 0;
        big = fmax(big, e[i]);
    }
    if (!(big > 0)) big = 0.05; /* a point mass */
    for (int i = 0; i < 3; ++i) s->size[i] = fmax(e[i], 0.04 * big);
    s->X_BS.R = V;
    s->X_BS.p = mp.com;
    return 0;
}

/* ---- URDF <visual> -------------------------------------------------------------- */

typedef struct material {
    char name[APP_NAME_MAX];
    float rgba[4];
} material;

typedef struct visual_parse {
    XML_Parser xp;
    const app_model *m;
    app_shapes *sh;
    int depth;
    int link_depth, visual_depth, robot_material_depth;
    int body;                       /* body of the current link, -1 if none */
    char link[APP_NAME_MAX];
    /* the visual being read */
    bool have_geom;
    app_shape cur;
    char mesh_file[1024];
    double mesh_scale[3];
    char material_ref[APP_NAME_MAX];
    /* robot-level materials */
    material *mats;
    int nmats, capmats;
    material cur_mat;
    /* what happened, for the page */
    int meshes_boxed, meshes_missing, links_unmapped;
    char first_missing[256], first_unmapped[APP_NAME_MAX];
    bool oom;
} visual_parse;

static const char *attr(const XML_Char **a, const char *name)
{
    for (; a && a[0]; a += 2)
        if (!strcmp(a[0], name)) return a[1];
    return NULL;
}

static int parse_numbers(const char *text, double *v, int n)
{
    if (!text) return 0;
    int k = 0;
    const char *p = text;
    while (k < n) {
        char *end;
        double x = strtod(p, &end);
        if (end == p) break;
        if (!isfinite(x)) return k;
        v[k++] = x;
        p = end;
    }
    return k;
}

/* URDF rpy: fixed axes x, y, z, so R = Rz(yaw) Ry(pitch) Rx(roll). */
static mbk_mat33 rpy_matrix(double r, double p, double y)
{
    double cr = cos(r), sr = sin(r), cp = cos(p), sp = sin(p), cy = cos(y), sy = sin(y);
    mbk_mat33 R = {{{cy * cp, cy * sp * sr - sy * cr, cy * sp * cr + sy * sr},
                    {sy * cp, sy * sp * sr + cy * cr, sy * sp * cr - cy * sr},
                    {-sp, cp * sr, cp * cr}}};
    return R;
}

static int find_body(const app_model *m, const char *link)
{
    for (int b = 0; b < m->n_bodies; ++b) {
        const char *name = mbk_urdf_get_link_name(m->sys, b);
        if (name && !strcmp(name, link)) return b;
    }
    return -1;
}

static void XMLCALL on_start(void *user, const XML_Char *name, const XML_Char **a)
{
    visual_parse *P = user;
    P->depth++;
    if (P->depth == 2 && !strcmp(name, "link")) {
        const char *n = attr(a, "name");
        snprintf(P->link, sizeof P->link, "%s", n ? n : "");
        P->link_depth = P->depth;
        P->body = n ? find_body(P->m, n) : -1;
        return;
    }
    if (P->depth == 2 && !strcmp(name, "material")) {
        P->robot_material_depth = P->depth;
        memset(&P->cur_mat, 0, sizeof P->cur_mat);
        const char *n = attr(a, "name");
        snprintf(P->cur_mat.name, sizeof P->cur_mat.name, "%s", n ? n : "");
        P->cur_mat.rgba[3] = -1;
        return;
    }
    if (P->robot_material_depth && !strcmp(name, "color")) {
        double c[4];
        if (parse_numbers(attr(a, "rgba"), c, 4) == 4)
            for (int k = 0; k < 4; ++k) P->cur_mat.rgba[k] = (float)c[k];
        return;
    }
    if (P->link_depth && P->depth == P->link_depth + 1 && !strcmp(name, "visual")) {
        P->visual_depth = P->depth;
        P->have_geom = false;
        memset(&P->cur, 0, sizeof P->cur);
        P->cur.X_BS = mbk_transform_identity();
        P->cur.rgba[3] = -1;
        P->mesh_file[0] = 0;
        P->material_ref[0] = 0;
        P->mesh_scale[0] = P->mesh_scale[1] = P->mesh_scale[2] = 1;
        return;
    }
    if (!P->visual_depth) return;
    double v[3] = {0, 0, 0};
    if (P->depth == P->visual_depth + 1 && !strcmp(name, "origin")) {
        parse_numbers(attr(a, "xyz"), v, 3);
        P->cur.X_BS.p = mbk_vec3_make(v[0], v[1], v[2]);
        v[0] = v[1] = v[2] = 0;
        parse_numbers(attr(a, "rpy"), v, 3);
        P->cur.X_BS.R = rpy_matrix(v[0], v[1], v[2]);
    } else if (!strcmp(name, "box")) {
        if (parse_numbers(attr(a, "size"), v, 3) == 3) {
            P->cur.type = APP_SHAPE_BOX, P->have_geom = true;
            memcpy(P->cur.size, v, sizeof v);
        }
    } else if (!strcmp(name, "cylinder")) {
        double r = 0, l = 0;
        if (parse_numbers(attr(a, "radius"), &r, 1) == 1 && parse_numbers(attr(a, "length"), &l, 1) == 1) {
            P->cur.type = APP_SHAPE_CYLINDER, P->have_geom = true;
            P->cur.size[0] = P->cur.size[1] = r, P->cur.size[2] = l;
        }
    } else if (!strcmp(name, "sphere")) {
        double r = 0;
        if (parse_numbers(attr(a, "radius"), &r, 1) == 1) {
            P->cur.type = APP_SHAPE_SPHERE, P->have_geom = true;
            P->cur.size[0] = P->cur.size[1] = P->cur.size[2] = r;
        }
    } else if (!strcmp(name, "mesh")) {
        const char *fn = attr(a, "filename");
        snprintf(P->mesh_file, sizeof P->mesh_file, "%s", fn ? fn : "");
        double s[3];
        int k = parse_numbers(attr(a, "scale"), s, 3);
        if (k == 3) memcpy(P->mesh_scale, s, sizeof s);
        else if (k == 1) P->mesh_scale[0] = P->mesh_scale[1] = P->mesh_scale[2] = s[0];
    } else if (!strcmp(name, "material")) {
        const char *n = attr(a, "name");
        snprintf(P->material_ref, sizeof P->material_ref, "%s", n ? n : "");
    } else if (!strcmp(name, "color")) {
        double c[4];
        if (parse_numbers(attr(a, "rgba"), c, 4) == 4)
            for (int k = 0; k < 4; ++k) P->cur.rgba[k] = (float)c[k];
    }
}

static void finish_visual(visual_parse *P)
{
    if (P->body < 0) {
        if (!P->links_unmapped++) snprintf(P->first_unmapped, sizeof P->first_unmapped, "%s", P->link);
        return;
    }
    if (P->mesh_file[0]) {
        mbk_vec3 vlo, vhi; /* the library's reader and file rules (mbk_urdf_mesh_bounding_box) */
        if (mbk_urdf_mesh_bounding_box(P->m->spec, P->mesh_file, P->mesh_scale, &vlo, &vhi) != MBK_OK) {
            if (!P->meshes_missing++)
                snprintf(P->first_missing, sizeof P->first_missing, "%.200s", P->mesh_file);
            return;
        }
        /* the box of the scaled vertices, centred where they are */
        P->cur.type = APP_SHAPE_BOX, P->have_geom = true, P->cur.from_mesh = true;
        double lo[3] = {vlo.x, vlo.y, vlo.z}, hi[3] = {vhi.x, vhi.y, vhi.z}, c[3];
        for (int k = 0; k < 3; ++k) {
            P->cur.size[k] = fmax(hi[k] - lo[k], 1e-4);
            c[k] = 0.5 * (lo[k] + hi[k]);
        }
        P->cur.X_BS.p = mbk_vec3_add(P->cur.X_BS.p, mbk_mat33_mul_vec(P->cur.X_BS.R, mbk_vec3_make(c[0], c[1], c[2])));
        const char *base = strrchr(P->mesh_file, '/');
        snprintf(P->cur.note, sizeof P->cur.note, "mesh %.100s: its bounding box", base ? base + 1 : P->mesh_file);
        P->meshes_boxed++;
    }
    if (!P->have_geom) return;
    if (P->cur.rgba[3] < 0 && P->material_ref[0])
        for (int i = 0; i < P->nmats; ++i)
            if (!strcmp(P->mats[i].name, P->material_ref)) memcpy(P->cur.rgba, P->mats[i].rgba, sizeof P->cur.rgba);
    app_shape *s = push(P->sh);
    if (!s) {
        P->oom = true;
        return;
    }
    P->cur.body = P->body;
    *s = P->cur;
}

static void XMLCALL on_end(void *user, const XML_Char *name)
{
    visual_parse *P = user;
    if (P->visual_depth && P->depth == P->visual_depth) {
        finish_visual(P);
        P->visual_depth = 0;
    } else if (P->link_depth && P->depth == P->link_depth) {
        P->link_depth = 0;
    } else if (P->robot_material_depth && P->depth == P->robot_material_depth) {
        P->robot_material_depth = 0;
        if (P->nmats == P->capmats) {
            int cap = P->capmats ? 2 * P->capmats : 8;
            material *v = realloc(P->mats, sizeof *v * (size_t)cap);
            if (!v) {
                P->oom = true;
                P->depth--;
                return;
            }
            P->mats = v, P->capmats = cap;
        }
        P->mats[P->nmats++] = P->cur_mat;
    }
    (void)name;
    P->depth--;
}

int app_shapes_from_urdf(const app_model *m, app_shapes *sh, char *notes, size_t cap)
{
    notes[0] = 0;
    FILE *f = fopen(m->spec, "rb");
    if (!f) return -1;
    visual_parse *P = calloc(1, sizeof *P);
    if (!P) {
        fclose(f);
        return -1;
    }
    P->m = m, P->sh = sh, P->body = -1;
    P->xp = XML_ParserCreate(NULL);
    int rc = 0;
    if (!P->xp) rc = -1;
    else {
        /* robot-level materials may follow the links that name them: read the file twice */
        for (int pass = 0; pass < 2 && rc == 0; ++pass) {
            XML_SetUserData(P->xp, P);
            XML_SetElementHandler(P->xp, on_start, on_end);
            int saved_n = sh->n;
            char buf[65536];
            size_t got;
            rewind(f);
            do {
                got = fread(buf, 1, sizeof buf, f);
                if (XML_Parse(P->xp, buf, (int)got, got == 0) == XML_STATUS_ERROR) {
                    rc = -1;
                    break;
                }
            } while (got > 0);
            if (pass == 0) {
                /* keep only the materials; the shapes come from the second pass */
                sh->n = saved_n;
                P->meshes_boxed = P->meshes_missing = P->links_unmapped = 0;
                XML_ParserReset(P->xp, NULL);
                P->depth = P->link_depth = P->visual_depth = P->robot_material_depth = 0;
            }
        }
        XML_ParserFree(P->xp);
    }
    fclose(f);
    if (P->oom) rc = -1;
    size_t used = 0;
    if (P->meshes_boxed)
        used += (size_t)snprintf(notes + used, cap - used, "%d mesh%s drawn as %s bounding box%s. ", P->meshes_boxed,
                                 P->meshes_boxed == 1 ? "" : "es", P->meshes_boxed == 1 ? "its" : "their",
                                 P->meshes_boxed == 1 ? "" : "es");
    if (P->meshes_missing && used < cap)
        used += (size_t)snprintf(notes + used, cap - used,
                                 "%d mesh%s not drawn (file not found or not STL/OBJ, e.g. %s). ", P->meshes_missing,
                                 P->meshes_missing == 1 ? "" : "es", P->first_missing);
    if (P->links_unmapped && used < cap)
        snprintf(notes + used, cap - used, "%d visual%s of links that are no body of the model (e.g. %s) not drawn. ",
                 P->links_unmapped, P->links_unmapped == 1 ? "" : "s", P->first_unmapped);
    free(P->mats);
    free(P);
    return rc;
}
