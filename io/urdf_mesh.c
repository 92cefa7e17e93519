/* Mesh files named by URDF <mesh filename>: where they are and the bounding box of
 * their vertices (mbk_urdf_mesh_bounding_box). STL (binary or ASCII) and Wavefront
 * OBJ are read; only the vertices matter. Serves the loader's ground contact
 * (urdf_contact.c) and the trajectory viewer (apps/app_visual.c). */
#define _POSIX_C_SOURCE 200809L /* fstat, fileno */
#include "mbk/urdf.h"

#include <ctype.h>
#include <errno.h>
#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "mbk/status.h"

enum { MESH_PATH_MAX = 4096, MESH_LINE_MAX = 1024 };

static int regular_file(const char *path)
{
    struct stat st;
    return stat(path, &st) == 0 && S_ISREG(st.st_mode);
}

/* Where a mesh file named in a URDF is: file://PATH and absolute names as they are;
   package://PKG/REST and relative names are looked for in the URDF file's folder and
   up to two folders above it (REST first, then PKG/REST). Returns 1 with the path in
   out, or 0 when no regular file is found (out holds the first place tried). */
static int resolve(const char *urdf_path, const char *name, char *out, size_t cap)
{
    if (!strncmp(name, "file://", 7)) {
        snprintf(out, cap, "%s", name + 7);
        return regular_file(out);
    }
    if (name[0] == '/') {
        snprintf(out, cap, "%s", name);
        return regular_file(out);
    }
    char dir[MESH_PATH_MAX];
    const char *slash = urdf_path ? strrchr(urdf_path, '/') : NULL;
    if (!urdf_path || !slash) snprintf(dir, sizeof dir, ".");
    else if (slash == urdf_path) snprintf(dir, sizeof dir, "/");
    else snprintf(dir, sizeof dir, "%.*s", (int)(slash - urdf_path), urdf_path);
    const char *rest = name, *pkg_rest = NULL;
    if (!strncmp(name, "package://", 10)) {
        pkg_rest = name + 10;
        const char *s = strchr(pkg_rest, '/');
        rest = s ? s + 1 : pkg_rest;
    }
    static const char *const up[] = {"", "../", "../../"};
    char first[MESH_PATH_MAX] = "";
    for (int i = 0; i < 3; ++i) {
        for (int k = 0; k < 2; ++k) {
            const char *r = k ? pkg_rest : rest;
            if (!r) continue;
            if ((size_t)snprintf(out, cap, "%s/%s%s", dir, up[i], r) >= cap) continue;
            if (!first[0]) snprintf(first, sizeof first, "%s", out);
            if (regular_file(out)) return 1;
        }
    }
    snprintf(out, cap, "%s", first);
    return 0;
}

/* Lower-case extension of a path ("" when none or longer than 7 bytes). */
static void extension(const char *path, char e[8])
{
    e[0] = 0;
    const char *dot = strrchr(path, '.'), *slash = strrchr(path, '/');
    if (!dot || (slash && dot < slash) || strlen(dot + 1) > 7) return;
    size_t i = 0;
    for (; dot[i + 1]; ++i) e[i] = (char)tolower((unsigned char)dot[i + 1]);
    e[i] = 0;
}

/* Exactly n finite numbers from text (more after them are allowed when extra). */
static int read_numbers(const char *text, double *v, int n)
{
    const char *p = text;
    for (int k = 0; k < n; ++k) {
        char *end;
        errno = 0;
        double x = strtod(p, &end);
        if (end == p || !isfinite(x)) return 0;
        if (*end && !isspace((unsigned char)*end)) return 0;
        v[k] = x;
        p = end;
    }
    return 1;
}

typedef struct bounds {
    double lo[3], hi[3];
    long n;
} bounds;

static void add_vertex(bounds *b, const double v[3])
{
    for (int k = 0; k < 3; ++k) b->lo[k] = fmin(b->lo[k], v[k]), b->hi[k] = fmax(b->hi[k], v[k]);
    b->n++;
}

static uint32_t le32(const unsigned char *b)
{
    return (uint32_t)b[0] | (uint32_t)b[1] << 8 | (uint32_t)b[2] << 16 | (uint32_t)b[3] << 24;
}

/* Lines of a text mesh: "vertex x y z" (ASCII STL, after blanks) or "v x y z" (OBJ). */
static int read_text(FILE *f, const char *name, const char *path, int obj, bounds *b)
{
    char line[MESH_LINE_MAX];
    long ln = 0;
    while (fgets(line, sizeof line, f)) {
        ++ln;
        const char *p = line;
        while (*p == ' ' || *p == '\t') ++p;
        const char *nums = NULL;
        if (obj && p[0] == 'v' && (p[1] == ' ' || p[1] == '\t')) nums = p + 2;
        else if (!obj && !strncmp(p, "vertex", 6) && isspace((unsigned char)p[6])) nums = p + 7;
        if (!nums) continue;
        double v[3];
        if (!read_numbers(nums, v, 3)) {
            size_t len = strcspn(p, "\r\n");
            return mbk_set_error(MBK_EPARSE, "mesh '%s' (%s):%ld: '%.*s' needs three finite numbers", name, path, ln,
                                 (int)(len > 80 ? 80 : len), p);
        }
        add_vertex(b, v);
    }
    if (ferror(f)) return mbk_set_error(MBK_EIO, "mesh '%s' (%s): read error after line %ld", name, path, ln);
    return MBK_OK;
}

static int read_stl(FILE *f, const char *name, const char *path, bounds *b)
{
    unsigned char head[84];
    struct stat st;
    size_t got = fread(head, 1, sizeof head, f);
    if (got == sizeof head && fstat(fileno(f), &st) == 0 &&
        (uint64_t)st.st_size == 84 + 50 * (uint64_t)le32(head + 80)) {
        uint32_t ntri = le32(head + 80);
        unsigned char tri[50];
        for (uint32_t t = 0; t < ntri; ++t) {
            if (fread(tri, 1, sizeof tri, f) != sizeof tri)
                return mbk_set_error(MBK_EIO, "mesh '%s' (%s): read error in triangle %lu of %lu", name, path,
                                     (unsigned long)t, (unsigned long)ntri);
            for (int k = 0; k < 3; ++k) {
                double v[3];
                for (int i = 0; i < 3; ++i) {
                    uint32_t bits = le32(tri + 12 * (k + 1) + 4 * i);
                    float x;
                    memcpy(&x, &bits, sizeof x);
                    v[i] = x;
                }
                if (!isfinite(v[0]) || !isfinite(v[1]) || !isfinite(v[2]))
                    return mbk_set_error(MBK_EPARSE, "mesh '%s' (%s): binary STL triangle %lu has a vertex that "
                                         "is not finite", name, path, (unsigned long)t);
                add_vertex(b, v);
            }
        }
        return MBK_OK;
    }
    size_t i = 0;
    while (i < got && isspace(head[i])) ++i;
    if (got - i < 5 || memcmp(head + i, "solid", 5) != 0) {
        if (got < sizeof head)
            return mbk_set_error(MBK_EPARSE, "mesh '%s' (%s): not an STL file: %zu bytes, too short for a binary "
                                 "STL and not starting with 'solid' as an ASCII STL does", name, path, got);
        return mbk_set_error(MBK_EPARSE, "mesh '%s' (%s): not an STL file: its size does not match the %lu "
                             "triangles a binary STL header says, and it does not start with 'solid' as an ASCII "
                             "STL does", name, path, (unsigned long)le32(head + 80));
    }
    rewind(f);
    return read_text(f, name, path, 0, b);
}

int mbk_urdf_mesh_bounding_box(const char *urdf_path, const char *filename, const double scale[3], mbk_vec3 *min,
                               mbk_vec3 *max)
{
    const char *fn = "mbk_urdf_mesh_bounding_box";
    if (!filename || !filename[0]) return mbk_set_error(MBK_EINVAL, "%s: filename is NULL or empty", fn);
    if (!min || !max) return mbk_set_error(MBK_EINVAL, "%s: min or max is NULL", fn);
    double s[3] = {1, 1, 1};
    if (scale) {
        for (int k = 0; k < 3; ++k)
            if (!isfinite(scale[k])) return mbk_set_error(MBK_EINVAL, "%s: scale must be finite", fn);
        memcpy(s, scale, sizeof s);
    }
    char path[MESH_PATH_MAX];
    if (!resolve(urdf_path, filename, path, sizeof path)) {
        int as_is = !strncmp(filename, "file://", 7) || filename[0] == '/';
        int pkg = !strncmp(filename, "package://", 10);
        return mbk_set_error(MBK_EIO, "mesh '%s': file not found (looked for %s%s%s)", filename, path,
                             as_is ? "" : " and up to two folders above",
                             pkg ? ", with and without the package name" : "");
    }
    char e[8];
    extension(path, e);
    int obj = !strcmp(e, "obj");
    if (!obj && strcmp(e, "stl"))
        return mbk_set_error(MBK_EPARSE, "mesh '%s' (%s): unsupported format '%s'; mbk reads STL (binary or ASCII) "
                             "and OBJ", filename, path, e[0] ? e : "(no extension)");
    FILE *f = fopen(path, "rb");
    if (!f) return mbk_set_error(MBK_EIO, "mesh '%s' (%s): cannot open the file: %s", filename, path, strerror(errno));
    bounds b = {{INFINITY, INFINITY, INFINITY}, {-INFINITY, -INFINITY, -INFINITY}, 0};
    int rc = obj ? read_text(f, filename, path, 1, &b) : read_stl(f, filename, path, &b);
    fclose(f);
    if (rc < 0) return rc;
    if (b.n == 0)
        return mbk_set_error(MBK_EPARSE, "mesh '%s' (%s): the mesh is empty (no vertices)", filename, path);
    double lo[3], hi[3];
    for (int k = 0; k < 3; ++k) {
        double a = b.lo[k] * s[k], c = b.hi[k] * s[k];
        lo[k] = fmin(a, c), hi[k] = fmax(a, c);
    }
    *min = mbk_vec3_make(lo[0], lo[1], lo[2]);
    *max = mbk_vec3_make(hi[0], hi[1], hi[2]);
    return MBK_OK;
}
