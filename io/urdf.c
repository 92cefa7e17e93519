/* URDF loader: expat (SAX) reads the file into flat link and joint records,
 * which are checked as a whole (names, tree, inertias, mimic chains) and
 * then turned into a multibody System. No recursion anywhere, so deep
 * documents and long chains cannot exhaust the stack; name lookups are
 * sorted (O(n log n)), so huge inputs cannot make it quadratic. */
#define _POSIX_C_SOURCE 200809L /* open, fstat, fdopen: the file check before reading */
#include "mbk/urdf.h"

#include <errno.h>
#include <expat.h>
#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>
#include <limits.h>
#include <math.h>
#include <stdarg.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "mbk/alloc.h"
#include "mbk/constraints.h"
#include "mbk/forces.h"
#include "mbk/function.h"
#include "mbk/matter.h"
#include "mbk/status.h"

#include "urdf_impl.h"

#define UR_MAX_DEPTH 256          /* deepest element nesting accepted */
#define UR_CHUNK (1 << 20)        /* bytes fed to expat per call */
#define UR_MAX_ITEMS (INT_MAX / 4) /* most links or joints */
#define UR_PI 3.14159265358979323846

/* ------------------------------------------------------------------ */
/* Records (urdf_impl.h)                                                */
/* ------------------------------------------------------------------ */

static const char *const joint_type_names[J_NTYPES] = {"revolute", "continuous", "prismatic",
                                                       "fixed",    "floating",   "planar"};

/* What an open element is. */
enum { K_ROBOT, K_LINK, K_INERTIAL, K_JOINT, K_LEAF, K_IGNORE, K_COLLISION, K_GEOMETRY };

#define UR_MAX_ERRORS 1000     /* errors kept (more are counted) */
#define UR_MAX_WARNINGS 10000  /* warnings kept (more are counted) */

/* ------------------------------------------------------------------ */
/* Errors and warnings                                                  */
/* ------------------------------------------------------------------ */

const char *ur_str(const ur_ctx *c, size_t off) { return c->pool + off; }
#define str ur_str

/* Keep one message; false when memory ran out (then the caller records MBK_ENOMEM). */
static bool msgs_add(ur_msgs *ms, long cap, long line, long seq, int status, const char *text)
{
    if (ms->n >= cap) {
        ms->dropped++;
        return true;
    }
    if (ms->n == ms->cap) {
        int nc = ms->cap ? 2 * ms->cap : 16;
        ur_msg *v = mbk_realloc(ms->v, (size_t)nc * sizeof *v);
        if (!v) return false;
        ms->v = v;
        ms->cap = nc;
    }
    size_t len = strlen(text) + 1;
    char *t = mbk_malloc(len);
    if (!t) return false;
    memcpy(t, text, len);
    ms->v[ms->n++] = (ur_msg){line, seq, status, t};
    return true;
}

static void msgs_free(ur_msgs *ms)
{
    for (int i = 0; i < ms->n; ++i) mbk_free(ms->v[i].text);
    mbk_free(ms->v);
    memset(ms, 0, sizeof *ms);
}

static int cmp_msg(const void *a, const void *b)
{
    const ur_msg *x = a, *y = b;
    if (x->line != y->line) return x->line < y->line ? -1 : 1;
    return (x->seq > y->seq) - (x->seq < y->seq);
}

/* File order: by line, then in the order found. */
static void msgs_sort(ur_msgs *ms)
{
    if (ms->n > 1) qsort(ms->v, (size_t)ms->n, sizeof *ms->v, cmp_msg);
}

/* Out of memory: nothing more can be done; this status wins. */
static void out_of_memory(ur_ctx *c)
{
    c->status = MBK_ENOMEM;
    c->fatal = true;
    if (c->parser) XML_StopParser((XML_Parser)c->parser, XML_FALSE);
}

/* "src:line: where: " + the formatted text into m. */
static void format_msg(const ur_ctx *c, char *m, size_t cap, long line, const char *where, const char *fmt,
                       va_list ap)
{
    int n;
    if (line > 0)
        n = snprintf(m, cap, "%s:%ld: %s%s", c->src, line, where ? where : "", where ? ": " : "");
    else
        n = snprintf(m, cap, "%s: %s%s", c->src, where ? where : "", where ? ": " : "");
    if (n < 0) n = 0;
    if ((size_t)n < cap) vsnprintf(m + n, cap - (size_t)n, fmt, ap);
}

/* Record an error. Malformed XML, a document type declaration, too deep nesting or too
   many elements, and running out of memory are fatal: reading stops there. Every
   other error is kept and reading goes on, so that all of them are reported at once. */
int ur_fail(ur_ctx *c, int status, long line, const char *where, const char *fmt, ...)
{
    if (c->fatal) return c->status;
    if (status == MBK_ENOMEM) {
        out_of_memory(c);
        return c->status;
    }
    char m[1024];
    va_list ap;
    va_start(ap, fmt);
    format_msg(c, m, sizeof m, line, where, fmt, ap);
    va_end(ap);
    if (!msgs_add(&c->errors, UR_MAX_ERRORS, line, c->seq++, status, m)) {
        out_of_memory(c);
        return c->status;
    }
    if (!c->status) c->status = status;
    return status;
}
#define fail ur_fail

/* An error after which the document is not read further. */
static int fail_fatal(ur_ctx *c, int status, long line, const char *where, const char *msg)
{
    int rc = ur_fail(c, status, line, where, "%s", msg);
    c->fatal = true;
    if (c->parser) XML_StopParser((XML_Parser)c->parser, XML_FALSE);
    return rc;
}

void ur_warn(ur_ctx *c, long line, const char *where, const char *fmt, ...)
{
    if (c->fatal) return;
    char m[1024];
    va_list ap;
    va_start(ap, fmt);
    format_msg(c, m, sizeof m, line, where, fmt, ap);
    va_end(ap);
    if (!msgs_add(&c->warnings, UR_MAX_WARNINGS, line, c->seq++, 0, m)) out_of_memory(c);
}

const char *ur_where_elem(where_buf *w, const char *elem, const char *name)
{
    if (name) snprintf(w->s, sizeof w->s, "<%s name=\"%.200s\">", elem, name);
    else snprintf(w->s, sizeof w->s, "<%s>", elem);
    return w->s;
}
#define where_elem ur_where_elem

const char *ur_where_in(where_buf *w, const char *elem, const char *outer, const char *name)
{
    snprintf(w->s, sizeof w->s, "<%s> in <%s name=\"%.200s\">", elem, outer, name);
    return w->s;
}
#define where_in ur_where_in

/* ------------------------------------------------------------------ */
/* Storage                                                              */
/* ------------------------------------------------------------------ */

/* Copy a string into the pool; returns its offset, or 0 with the error recorded. */
static size_t pool_add(ur_ctx *c, const char *s)
{
    size_t n = strlen(s) + 1;
    if (c->pool_len + n > c->pool_cap) {
        size_t cap = c->pool_cap ? c->pool_cap : 4096;
        while (cap < c->pool_len + n) {
            if (cap > SIZE_MAX / 2) {
                fail(c, MBK_ENOMEM, 0, NULL, "out of memory");
                return 0;
            }
            cap *= 2;
        }
        char *p = mbk_realloc(c->pool, cap);
        if (!p) {
            fail(c, MBK_ENOMEM, 0, NULL, "out of memory for names");
            return 0;
        }
        c->pool = p;
        c->pool_cap = cap;
    }
    memcpy(c->pool + c->pool_len, s, n);
    size_t off = c->pool_len;
    c->pool_len += n;
    return off;
}

/* Grow an array of records by one; returns the new slot or NULL with the error recorded. */
static void *grow(ur_ctx *c, void **items, int *n, int *cap, size_t size, long line, const char *what)
{
    if (*n == *cap) {
        if (*cap >= UR_MAX_ITEMS) {
            char m[96];
            snprintf(m, sizeof m, "more than %d %s", UR_MAX_ITEMS, what);
            fail_fatal(c, MBK_EPARSE, line, NULL, m);
            return NULL;
        }
        int nc = *cap ? 2 * *cap : 16;
        void *p = mbk_realloc(*items, (size_t)nc * size);
        if (!p) {
            fail(c, MBK_ENOMEM, line, NULL, "out of memory for %s", what);
            return NULL;
        }
        *items = p;
        *cap = nc;
    }
    void *slot = (char *)*items + (size_t)(*n)++ * size;
    memset(slot, 0, size);
    return slot;
}

/* ------------------------------------------------------------------ */
/* Attributes and numbers                                               */
/* ------------------------------------------------------------------ */

static const char *attr(const XML_Char **a, const char *name)
{
    for (int i = 0; a[i]; i += 2)
        if (strcmp(a[i], name) == 0) return a[i + 1];
    return NULL;
}

static int is_space(char ch) { return ch == ' ' || ch == '\t' || ch == '\n' || ch == '\r'; }

/* Whether a number is C's hexadecimal form: [+-]0x... */
static bool is_hex(const char *tok)
{
    if (*tok == '+' || *tok == '-') ++tok;
    return tok[0] == '0' && (tok[1] == 'x' || tok[1] == 'X');
}

/* Parse exactly n finite numbers separated by white space from attribute
   `name` (text); 0 on success, else the error is recorded. */
static int parse_numbers(ur_ctx *c, long line, const char *where, const char *name, const char *text,
                         double *out, int n)
{
    const char *p = text;
    int k = 0;
    for (;;) {
        while (is_space(*p)) ++p;
        if (!*p) break;
        const char *start = p;
        while (*p && !is_space(*p)) ++p;
        size_t len = (size_t)(p - start);
        char tok[64];
        if (len >= sizeof tok)
            return fail(c, MBK_EPARSE, line, where, "%s=\"%.40s...\": a number is too long", name, text);
        memcpy(tok, start, len);
        tok[len] = '\0';
        char *end = NULL;
        double v = strtod(tok, &end);
        if (end != tok + len)
            return fail(c, MBK_EPARSE, line, where, "%s=\"%.80s\": '%s' is not a number", name, text, tok);
        /* strtod reads C's hexadecimal floats, URDF (urdfdom) does not: a file must mean one thing */
        if (is_hex(tok))
            return fail(c, MBK_EPARSE, line, where, "%s=\"%.80s\": '%s' is a hexadecimal number, which URDF does "
                        "not have; write it in decimal (%.17g)", name, text, tok, v);
        if (!isfinite(v))
            return fail(c, MBK_EPARSE, line, where, "%s=\"%.80s\": '%s' is not a finite number", name, text,
                        tok);
        if (k == n)
            return fail(c, MBK_EPARSE, line, where, "%s=\"%.80s\" has more than %d number%s", name, text, n,
                        n == 1 ? "" : "s");
        out[k++] = v;
    }
    if (k != n)
        return fail(c, MBK_EPARSE, line, where, "%s=\"%.80s\" needs %d number%s, found %d", name, text, n,
                    n == 1 ? "" : "s", k);
    return 0;
}

/* Optional numeric attribute: leaves *out alone when absent. */
static int opt_numbers(ur_ctx *c, long line, const char *where, const XML_Char **a, const char *name,
                       double *out, int n)
{
    const char *v = attr(a, name);
    return v ? parse_numbers(c, line, where, name, v, out, n) : 0;
}

static int req_numbers(ur_ctx *c, long line, const char *where, const XML_Char **a, const char *name,
                       double *out, int n)
{
    const char *v = attr(a, name);
    if (!v) return fail(c, MBK_EPARSE, line, where, "attribute %s is missing", name);
    return parse_numbers(c, line, where, name, v, out, n);
}

static int parse_origin(ur_ctx *c, long line, const char *where, const XML_Char **a, ur_origin *o)
{
    if (o->line) return fail(c, MBK_EPARSE, line, where, "a second <origin> (the first is on line %ld)", o->line);
    o->line = line;
    if (opt_numbers(c, line, where, a, "xyz", o->xyz, 3)) return -1;
    return opt_numbers(c, line, where, a, "rpy", o->rpy, 3);
}

/* ------------------------------------------------------------------ */
/* SAX handlers                                                         */
/* ------------------------------------------------------------------ */

static int once(ur_ctx *c, long *seen, long line, const char *where, const char *elem)
{
    if (*seen) return fail(c, MBK_EPARSE, line, where, "a second <%s> (the first is on line %ld)", elem, *seen);
    *seen = line;
    return 0;
}

static int start_link(ur_ctx *c, long line, const XML_Char **a)
{
    const char *name = attr(a, "name");
    if (!name || !*name) return fail(c, MBK_EPARSE, line, "<link>", "attribute name is missing or empty");
    ur_link *l = grow(c, (void **)&c->links, &c->nlinks, &c->cap_links, sizeof *l, line, "links");
    if (!l) return -1;
    l->line = line;
    l->parent_joint = -1;
    l->name = pool_add(c, name);
    return c->fatal ? -1 : 0;
}

static int start_joint(ur_ctx *c, long line, const XML_Char **a)
{
    const char *name = attr(a, "name"), *type = attr(a, "type");
    where_buf w;
    if (!name || !*name) return fail(c, MBK_EPARSE, line, "<joint>", "attribute name is missing or empty");
    const char *wh = where_elem(&w, "joint", name);
    if (!type) return fail(c, MBK_EPARSE, line, wh, "attribute type is missing");
    int t = -1;
    for (int i = 0; i < J_NTYPES; ++i)
        if (strcmp(type, joint_type_names[i]) == 0) t = i;
    if (t < 0)
        return fail(c, MBK_EPARSE, line, wh,
                    "unknown joint type '%.60s'; supported: revolute, continuous, prismatic, fixed, "
                    "floating, planar", type);
    ur_joint *j = grow(c, (void **)&c->joints, &c->njoints, &c->cap_joints, sizeof *j, line, "joints");
    if (!j) return -1;
    j->line = line;
    j->type = t;
    j->axis[0] = 1.0; /* URDF's default axis */
    j->multiplier = 1.0;
    j->parent_link = j->child_link = j->mimic_joint = -1;
    j->name = pool_add(c, name);
    return c->fatal ? -1 : 0;
}

static int start_inertial_child(ur_ctx *c, long line, const char *el, const XML_Char **a)
{
    ur_link *l = &c->links[c->nlinks - 1];
    where_buf w;
    const char *wh = where_in(&w, el, "link", str(c, l->name));
    if (strcmp(el, "origin") == 0) return parse_origin(c, line, wh, a, &l->inertial_origin);
    if (strcmp(el, "mass") == 0) {
        if (once(c, &l->mass_line, line, wh, el)) return -1;
        if (req_numbers(c, line, wh, a, "value", &l->mass, 1)) return -1;
        if (l->mass < 0) return fail(c, MBK_EPARSE, line, wh, "mass %g is negative", l->mass);
        return 0;
    }
    if (strcmp(el, "inertia") == 0) {
        static const char *const names[6] = {"ixx", "iyy", "izz", "ixy", "ixz", "iyz"};
        if (once(c, &l->inertia_line, line, wh, el)) return -1;
        for (int i = 0; i < 6; ++i)
            if (req_numbers(c, line, wh, a, names[i], &l->I[i], 1)) return -1;
        return 0;
    }
    return 0;
}

static int start_joint_child(ur_ctx *c, long line, const char *el, const XML_Char **a)
{
    ur_joint *j = &c->joints[c->njoints - 1];
    where_buf w;
    const char *wh = where_in(&w, el, "joint", str(c, j->name));
    if (strcmp(el, "origin") == 0) return parse_origin(c, line, wh, a, &j->origin);
    if (strcmp(el, "parent") == 0 || strcmp(el, "child") == 0) {
        bool parent = el[0] == 'p';
        if (once(c, parent ? &j->parent_line : &j->child_line, line, wh, el)) return -1;
        const char *link = attr(a, "link");
        if (!link || !*link) return fail(c, MBK_EPARSE, line, wh, "attribute link is missing or empty");
        size_t off = pool_add(c, link);
        if (parent) j->parent = off;
        else j->child = off;
        return c->fatal ? -1 : 0;
    }
    if (strcmp(el, "axis") == 0) {
        if (once(c, &j->axis_line, line, wh, el)) return -1;
        return opt_numbers(c, line, wh, a, "xyz", j->axis, 3);
    }
    if (strcmp(el, "limit") == 0) {
        double effort = 0, velocity = 0;
        if (once(c, &j->limit_line, line, wh, el)) return -1;
        if (opt_numbers(c, line, wh, a, "lower", &j->lower, 1) || opt_numbers(c, line, wh, a, "upper", &j->upper, 1) ||
            opt_numbers(c, line, wh, a, "effort", &effort, 1) || opt_numbers(c, line, wh, a, "velocity", &velocity, 1))
            return -1;
        if (j->lower > j->upper && (j->type == J_REVOLUTE || j->type == J_PRISMATIC))
            return fail(c, MBK_EPARSE, line, wh, "lower limit %g is above upper limit %g", j->lower, j->upper);
        return 0;
    }
    if (strcmp(el, "dynamics") == 0) {
        if (once(c, &j->dynamics_line, line, wh, el)) return -1;
        if (opt_numbers(c, line, wh, a, "damping", &j->damping, 1) ||
            opt_numbers(c, line, wh, a, "friction", &j->friction, 1))
            return -1;
        if (j->damping < 0) return fail(c, MBK_EPARSE, line, wh, "damping %g is negative", j->damping);
        if (j->friction < 0) return fail(c, MBK_EPARSE, line, wh, "friction %g is negative", j->friction);
        return 0;
    }
    if (strcmp(el, "mimic") == 0) {
        if (once(c, &j->mimic_line, line, wh, el)) return -1;
        const char *other = attr(a, "joint");
        if (!other || !*other) return fail(c, MBK_EPARSE, line, wh, "attribute joint is missing or empty");
        if (opt_numbers(c, line, wh, a, "multiplier", &j->multiplier, 1) ||
            opt_numbers(c, line, wh, a, "offset", &j->offset, 1))
            return -1;
        j->mimic_name = pool_add(c, other);
        return c->fatal ? -1 : 0;
    }
    return 0; /* calibration, safety_controller, ...: not used */
}

/* <collision> (with options.ground_contact): a record for its shape. */
static int start_collision(ur_ctx *c, long line)
{
    ur_collision *k = grow(c, (void **)&c->cols, &c->ncols, &c->cap_cols, sizeof *k, line, "collisions");
    if (!k) return -1;
    k->link = c->nlinks - 1;
    k->line = line;
    return 0;
}

static int start_collision_child(ur_ctx *c, long line, const char *el, const XML_Char **a, int *kind)
{
    ur_collision *k = &c->cols[c->ncols - 1];
    where_buf w;
    const char *wh = where_in(&w, el, "link", str(c, c->links[k->link].name));
    if (strcmp(el, "origin") == 0) return parse_origin(c, line, wh, a, &k->origin);
    if (strcmp(el, "geometry") == 0) {
        if (k->geometry_line)
            return fail(c, MBK_EPARSE, line, wh, "a second <geometry> in one <collision> (the first is on line %ld)",
                        k->geometry_line);
        k->geometry_line = line;
        *kind = K_GEOMETRY;
    }
    return 0;
}

/* The shape in a <geometry>: sphere radius, box size, cylinder radius and length, mesh. */
static int start_geometry_child(ur_ctx *c, long line, const char *el, const XML_Char **a)
{
    ur_collision *k = &c->cols[c->ncols - 1];
    where_buf w;
    const char *wh = where_in(&w, el, "link", str(c, c->links[k->link].name));
    if (k->type != G_NONE)
        return fail(c, MBK_EPARSE, line, wh, "a second shape in one <geometry> (line %ld)", k->geometry_line);
    k->geometry_line = line;
    int rc = 0, n = 0;
    if (strcmp(el, "sphere") == 0) {
        k->type = G_SPHERE, n = 1;
        rc = req_numbers(c, line, wh, a, "radius", k->dims, 1);
    } else if (strcmp(el, "box") == 0) {
        k->type = G_BOX, n = 3;
        rc = req_numbers(c, line, wh, a, "size", k->dims, 3);
    } else if (strcmp(el, "cylinder") == 0) {
        k->type = G_CYLINDER, n = 2;
        rc = req_numbers(c, line, wh, a, "radius", k->dims, 1) || req_numbers(c, line, wh, a, "length", k->dims + 1, 1);
    } else if (strcmp(el, "mesh") == 0) {
        k->type = G_MESH;
        k->dims[0] = k->dims[1] = k->dims[2] = 1;
        rc = opt_numbers(c, line, wh, a, "scale", k->dims, 3);
        const char *file = attr(a, "filename");
        if (!rc && file && file[0]) {
            k->mesh_file = pool_add(c, file);
            if (!k->mesh_file) return -1;
        }
    } else {
        k->type = G_OTHER;
    }
    if (rc) return -1;
    for (int i = 0; i < n; ++i)
        if (!(k->dims[i] > 0))
            return fail(c, MBK_EPARSE, line, wh, "the %s's %s %g must be > 0", el,
                        k->type == G_BOX ? "size" : i == 0 ? "radius" : "length", k->dims[i]);
    return 0;
}

static void XMLCALL on_start(void *user, const XML_Char *el, const XML_Char **a)
{
    ur_ctx *c = user;
    if (c->fatal) return;
    long line = (long)XML_GetCurrentLineNumber(c->parser);
    int d = c->depth;
    if (d >= UR_MAX_DEPTH) {
        char m[80];
        snprintf(m, sizeof m, "elements are nested deeper than %d levels", UR_MAX_DEPTH);
        fail_fatal(c, MBK_EPARSE, line, NULL, m);
        return;
    }
    int kind = K_IGNORE;
    if (d == 0) {
        if (strcmp(el, "robot") != 0) {
            char m[160];
            snprintf(m, sizeof m, "the root element is <%.60s>; a URDF document has <robot>", el);
            fail_fatal(c, MBK_EPARSE, line, NULL, m);
            return;
        }
        const char *name = attr(a, "name");
        c->robot_line = line;
        c->robot_name = name ? pool_add(c, name) : 0;
        kind = K_ROBOT;
    } else {
        int outer = c->kind[d - 1];
        int rc = 0;
        if (outer == K_ROBOT) {
            if (strcmp(el, "link") == 0) rc = start_link(c, line, a), kind = K_LINK;
            else if (strcmp(el, "joint") == 0) rc = start_joint(c, line, a), kind = K_JOINT;
        } else if (outer == K_LINK) {
            if (strcmp(el, "inertial") == 0) {
                ur_link *l = &c->links[c->nlinks - 1];
                where_buf w;
                rc = once(c, &l->inertial_line, line, where_in(&w, el, "link", str(c, l->name)), el);
                kind = K_INERTIAL;
            } else if (strcmp(el, "collision") == 0 && c->o->ground_contact) {
                rc = start_collision(c, line);
                kind = K_COLLISION;
            }
        } else if (outer == K_INERTIAL) {
            rc = start_inertial_child(c, line, el, a);
            kind = K_LEAF;
        } else if (outer == K_JOINT) {
            rc = start_joint_child(c, line, el, a);
            kind = K_LEAF;
        } else if (outer == K_COLLISION) {
            kind = K_LEAF;
            rc = start_collision_child(c, line, el, a, &kind);
        } else if (outer == K_GEOMETRY) {
            rc = start_geometry_child(c, line, el, a);
            kind = K_LEAF;
        }
        if (c->fatal) return;
        if (rc) kind = K_IGNORE; /* the error is recorded; what is inside is not read */
    }
    c->kind[d] = (unsigned char)kind;
    c->depth = d + 1;
}

static void XMLCALL on_end(void *user, const XML_Char *el)
{
    (void)el;
    ur_ctx *c = user;
    if (c->depth > 0) c->depth--;
}

static void XMLCALL on_doctype(void *user, const XML_Char *name, const XML_Char *sysid, const XML_Char *pubid,
                               int has_internal_subset)
{
    (void)name; (void)sysid; (void)pubid; (void)has_internal_subset;
    ur_ctx *c = user;
    fail_fatal(c, MBK_EPARSE, (long)XML_GetCurrentLineNumber(c->parser), "<!DOCTYPE>",
               "document type declarations are not accepted (URDF has none; entities are refused)");
}

static void XMLCALL on_entity(void *user, const XML_Char *name, int is_param, const XML_Char *value, int len,
                              const XML_Char *base, const XML_Char *sysid, const XML_Char *pubid,
                              const XML_Char *notation)
{
    (void)name; (void)is_param; (void)value; (void)len; (void)base; (void)sysid; (void)pubid; (void)notation;
    ur_ctx *c = user;
    fail_fatal(c, MBK_EPARSE, (long)XML_GetCurrentLineNumber(c->parser), "<!ENTITY>", "entity declarations are refused");
}

/* expat allocates through mbk's hooks too. */
static void *ur_malloc(size_t n) { return mbk_malloc(n); }
static void *ur_realloc(void *p, size_t n) { return mbk_realloc(p, n); }
static void ur_free(void *p) { mbk_free(p); }

static int parse_xml(ur_ctx *c, const char *text, size_t len)
{
    XML_Memory_Handling_Suite mem = {ur_malloc, ur_realloc, ur_free};
    /* NULL: the document's encoding declaration or BOM decides (UTF-8 without either) */
    c->parser = XML_ParserCreate_MM(NULL, &mem, NULL);
    if (!c->parser) return fail(c, MBK_ENOMEM, 0, NULL, "cannot create the XML parser (out of memory)");
    XML_SetUserData(c->parser, c);
    XML_SetElementHandler(c->parser, on_start, on_end);
    XML_SetStartDoctypeDeclHandler(c->parser, on_doctype);
    XML_SetEntityDeclHandler(c->parser, on_entity);
    XML_SetParamEntityParsing(c->parser, XML_PARAM_ENTITY_PARSING_NEVER);
    size_t done = 0;
    do {
        size_t n = len - done < UR_CHUNK ? len - done : UR_CHUNK;
        int final = done + n == len;
        if (XML_Parse(c->parser, text + done, (int)n, final) != XML_STATUS_OK) {
            if (!c->fatal) {
                enum XML_Error e = XML_GetErrorCode(c->parser);
                char m[300];
                /* an encoding expat lacks: say which it has, so the file can be converted */
                snprintf(m, sizeof m, "malformed XML at column %ld: %s%s",
                         (long)XML_GetCurrentColumnNumber(c->parser) + 1, XML_ErrorString(e),
                         e == XML_ERROR_UNKNOWN_ENCODING ? " (the encodings read are UTF-8, UTF-16, ISO-8859-1 and "
                                                           "US-ASCII; convert the file to UTF-8)" : "");
                fail_fatal(c, MBK_EPARSE, (long)XML_GetCurrentLineNumber(c->parser), NULL, m);
            }
            break;
        }
        done += n;
    } while (done < len);
    XML_ParserFree(c->parser);
    c->parser = NULL;
    if (!c->fatal && c->robot_line == 0) fail(c, MBK_EPARSE, 0, NULL, "no <robot> element");
    return c->status;
}

/* ------------------------------------------------------------------ */
/* Checks on the whole robot                                            */
/* ------------------------------------------------------------------ */

typedef struct name_ix { const char *name; int index; } name_ix;

static int cmp_name_ix(const void *a, const void *b)
{
    const name_ix *x = a, *y = b;
    int r = strcmp(x->name, y->name);
    return r ? r : (x->index > y->index) - (x->index < y->index);
}

static int find_name(const name_ix *ix, int n, const char *name)
{
    int lo = 0, hi = n - 1;
    while (lo <= hi) {
        int mid = lo + (hi - lo) / 2, r = strcmp(ix[mid].name, name);
        if (r == 0) {
            while (mid > 0 && strcmp(ix[mid - 1].name, name) == 0) --mid;
            return ix[mid].index;
        }
        if (r < 0) lo = mid + 1;
        else hi = mid - 1;
    }
    return -1;
}

/* Sorted name index of links (joints = false) or joints; reports duplicates. */
static name_ix *build_index(ur_ctx *c, bool joints)
{
    int n = joints ? c->njoints : c->nlinks;
    name_ix *ix = mbk_malloc((size_t)(n ? n : 1) * sizeof *ix);
    if (!ix) {
        fail(c, MBK_ENOMEM, 0, NULL, "out of memory");
        return NULL;
    }
    for (int i = 0; i < n; ++i) {
        ix[i].name = str(c, joints ? c->joints[i].name : c->links[i].name);
        ix[i].index = i;
    }
    qsort(ix, (size_t)n, sizeof *ix, cmp_name_ix);
    for (int i = 1; i < n; ++i)
        if (strcmp(ix[i].name, ix[i - 1].name) == 0) {
            int first = ix[i - 1].index, second = ix[i].index;
            long l1 = joints ? c->joints[first].line : c->links[first].line;
            long l2 = joints ? c->joints[second].line : c->links[second].line;
            where_buf w;
            fail(c, MBK_EPARSE, l2, where_elem(&w, joints ? "joint" : "link", ix[i].name),
                 "duplicate %s name (also on line %ld)", joints ? "joint" : "link", l1);
        }
    return ix;
}

static bool one_dof(int type) { return type == J_REVOLUTE || type == J_CONTINUOUS || type == J_PRISMATIC; }

/* Mimic tags. One that cannot couple anything (it names a joint that does not exist,
   or either joint is fixed) is a warning and is ignored, couplers or not. With
   options.mimic_as_couplers the others must make sense (single-dof joints, no loops);
   without it they are ignored. */
static int check_mimic(ur_ctx *c, const name_ix *jix)
{
    where_buf w;
    for (int i = 0; i < c->njoints; ++i) {
        ur_joint *j = &c->joints[i];
        if (!j->mimic_line) continue;
        const char *wm = where_in(&w, "mimic", "joint", str(c, j->name));
        int k = find_name(jix, c->njoints, str(c, j->mimic_name));
        if (k < 0) {
            ur_warn(c, j->mimic_line, wm, "joint '%.200s' does not exist; this <mimic> couples nothing and is ignored",
                    str(c, j->mimic_name));
            continue;
        }
        if (j->type == J_FIXED || c->joints[k].type == J_FIXED) {
            ur_warn(c, j->mimic_line, wm, "'%.200s' is fixed, so there is no coordinate to couple; this <mimic> is "
                    "ignored", str(c, j->type == J_FIXED ? j->name : c->joints[k].name));
            continue;
        }
        if (!c->o->mimic_as_couplers) continue;
        if (k == i) {
            fail(c, MBK_EPARSE, j->mimic_line, wm, "a joint cannot mimic itself");
            continue;
        }
        const ur_joint *o = &c->joints[k];
        if (!one_dof(j->type) || !one_dof(o->type)) {
            fail(c, MBK_EPARSE, j->mimic_line, wm,
                 "mimic needs two revolute, continuous or prismatic joints ('%.200s' is %s, '%.200s' is %s)",
                 str(c, j->name), joint_type_names[j->type], str(c, o->name), joint_type_names[o->type]);
            continue;
        }
        j->mimic_joint = k;
    }
    if (c->status || c->fatal) return -1;
    /* no chain loops back; colours: 0 unvisited, 1 on the current walk, 2 done */
    unsigned char *col = mbk_calloc((size_t)c->njoints + 1, 1);
    if (!col) return fail(c, MBK_ENOMEM, 0, NULL, "out of memory");
    for (int i = 0; i < c->njoints; ++i) {
        int k = i;
        while (k >= 0 && col[k] == 0) col[k] = 1, k = c->joints[k].mimic_joint;
        if (k >= 0 && col[k] == 1)
            fail(c, MBK_EPARSE, c->joints[k].mimic_line, where_in(&w, "mimic", "joint", str(c, c->joints[k].name)),
                 "mimic joints form a loop through '%.200s'; each chain must end at a joint that mimics none",
                 str(c, c->joints[k].name));
        for (k = i; k >= 0 && col[k] == 1; k = c->joints[k].mimic_joint) col[k] = 2;
    }
    mbk_free(col);
    return c->status ? -1 : 0;
}

/* The shortest axis taken as a direction: below it, an axis is refused as none. */
#define UR_MIN_AXIS 1e-12

/* Make joint j's axis unit length; 0, or -1 with the error recorded for a too-short one. */
static int normalize_axis(ur_ctx *c, ur_joint *j)
{
    double *a = j->axis;
    /* scaled by the largest component first: squares of 1e200 overflow, of 1e-200 underflow */
    double big = fmax(fabs(a[0]), fmax(fabs(a[1]), fabs(a[2])));
    double x = big > 0 ? a[0] / big : 0, y = big > 0 ? a[1] / big : 0, z = big > 0 ? a[2] / big : 0;
    double n = big * sqrt(x * x + y * y + z * z);
    where_buf w;
    const char *wh = where_in(&w, "axis", "joint", str(c, j->name));
    long line = j->axis_line ? j->axis_line : j->line;
    if (n > UR_MIN_AXIS) {
        for (int k = 0; k < 3; ++k) a[k] /= n;
        return 0;
    }
    if (n == 0)
        fail(c, MBK_EPARSE, line, wh, "the axis has zero length; give the joint's direction (any length above %g: "
             "it is normalized)", UR_MIN_AXIS);
    else
        fail(c, MBK_EPARSE, line, wh, "the axis has length %.3g, not above %g, the shortest taken as a direction; "
             "give the joint's direction (any length above that: it is normalized)", n, UR_MIN_AXIS);
    return -1;
}

/* Resolve links of joints, parents, roots, cycles and mimic references; every
   problem of a kind is recorded before giving up. */
static int check_robot(ur_ctx *c, const name_ix *lix, const name_ix *jix, int *root_out)
{
    where_buf w;
    if (c->nlinks == 0) return fail(c, MBK_EPARSE, c->robot_line, "<robot>", "the robot has no <link>");
    for (int i = 0; i < c->njoints; ++i) {
        ur_joint *j = &c->joints[i];
        const char *wh = where_elem(&w, "joint", str(c, j->name));
        if (!j->parent_line) {
            fail(c, MBK_EPARSE, j->line, wh, "<parent> is missing");
            continue;
        }
        if (!j->child_line) {
            fail(c, MBK_EPARSE, j->line, wh, "<child> is missing");
            continue;
        }
        j->parent_link = find_name(lix, c->nlinks, str(c, j->parent));
        j->child_link = find_name(lix, c->nlinks, str(c, j->child));
        if (j->parent_link < 0)
            fail(c, MBK_EPARSE, j->parent_line, wh, "parent link '%.200s' does not exist", str(c, j->parent));
        if (j->child_link < 0)
            fail(c, MBK_EPARSE, j->child_line, wh, "child link '%.200s' does not exist", str(c, j->child));
        if (j->parent_link < 0 || j->child_link < 0) continue;
        if (j->parent_link == j->child_link) {
            fail(c, MBK_EPARSE, j->child_line, wh, "link '%.200s' is both parent and child", str(c, j->child));
            continue;
        }
        ur_link *ch = &c->links[j->child_link];
        if (ch->parent_joint >= 0) {
            fail(c, MBK_EPARSE, j->child_line, wh,
                 "link '%.200s' already has parent joint '%.200s' (line %ld); a link has one parent",
                 str(c, j->child), str(c, c->joints[ch->parent_joint].name), c->joints[ch->parent_joint].line);
            continue;
        }
        ch->parent_joint = i;
        if ((j->type == J_REVOLUTE || j->type == J_CONTINUOUS || j->type == J_PRISMATIC || j->type == J_PLANAR) &&
            normalize_axis(c, j))
            continue;
    }
    if (c->status || c->fatal) return -1;
    if (check_mimic(c, jix)) return -1;
    /* exactly one root */
    int root = -1;
    for (int i = 0; i < c->nlinks; ++i) {
        if (c->links[i].parent_joint >= 0) continue;
        if (root >= 0)
            fail(c, MBK_EPARSE, c->links[i].line, where_elem(&w, "link", str(c, c->links[i].name)),
                 "this link and link '%.200s' (line %ld) both have no parent joint; a URDF robot is one "
                 "tree with one root link", str(c, c->links[root].name), c->links[root].line);
        else root = i;
    }
    if (c->status) return -1;
    if (root < 0) {
        /* every link has a parent: follow parents from link 0 until one repeats */
        int k = 0;
        for (int steps = 0; steps < c->nlinks; ++steps) k = c->joints[c->links[k].parent_joint].parent_link;
        const ur_joint *j = &c->joints[c->links[k].parent_joint];
        return fail(c, MBK_EPARSE, j->line, where_elem(&w, "joint", str(c, j->name)),
                    "the joints form a cycle through link '%.200s' and no link is the root; a URDF robot is a tree",
                    str(c, c->links[k].name));
    }
    *root_out = root;
    return 0;
}

/* ------------------------------------------------------------------ */
/* Names kept with the System                                           */
/* ------------------------------------------------------------------ */

typedef struct urdf_info {
    char *pool;                     /* the names, each NUL-terminated (the parser's pool) */
    int nb;                         /* bodies, Ground included */
    size_t robot;                   /* the robot's name: offset into pool */
    size_t *link_name, *joint_name; /* per body: offsets into pool (0: "", none) */
    unsigned char *type;            /* per body: J_*, or J_NTYPES for Ground */
    double *limits;                 /* per body: lower, upper (lower >= upper: none) */
    char *warning_text;             /* the warnings, each NUL-terminated, in file order */
    size_t *warning;                /* offsets into warning_text */
    int nwarnings;
} urdf_info;

static void info_destroy(void *impl)
{
    urdf_info *u = impl;
    if (!u) return;
    mbk_free(u->pool);
    mbk_free(u->link_name);
    mbk_free(u->joint_name);
    mbk_free(u->type);
    mbk_free(u->limits);
    mbk_free(u->warning_text);
    mbk_free(u->warning);
    mbk_free(u);
}

static const mbk_subsystem_ops urdf_info_ops = {.name = "urdf names", .destroy = info_destroy};

static const urdf_info *info_of(const mbk_system *sys)
{
    int k = sys ? mbk_system_find_subsystem(sys, &urdf_info_ops) : -1;
    return k < 0 ? NULL : mbk_system_get_subsystem_impl(sys, k);
}

int mbk_urdf_find_joint(const mbk_system *sys, const char *joint_name)
{
    const urdf_info *u = info_of(sys);
    if (!u || !joint_name || !*joint_name) return -1;
    for (int b = 0; b < u->nb; ++b)
        if (strcmp(u->pool + u->joint_name[b], joint_name) == 0) return b;
    return -1;
}

const char *mbk_urdf_get_joint_name(const mbk_system *sys, int body)
{
    const urdf_info *u = info_of(sys);
    return u && body >= 0 && body < u->nb ? u->pool + u->joint_name[body] : NULL;
}

const char *mbk_urdf_get_joint_type(const mbk_system *sys, int body)
{
    const urdf_info *u = info_of(sys);
    if (!u || body < 0 || body >= u->nb) return NULL;
    return u->type[body] < J_NTYPES ? joint_type_names[u->type[body]] : "";
}

const char *mbk_urdf_get_link_name(const mbk_system *sys, int body)
{
    const urdf_info *u = info_of(sys);
    return u && body >= 0 && body < u->nb ? u->pool + u->link_name[body] : NULL;
}

const char *mbk_urdf_get_robot_name(const mbk_system *sys)
{
    const urdf_info *u = info_of(sys);
    return u ? u->pool + u->robot : NULL;
}

int mbk_urdf_get_joint_limits(const mbk_system *sys, int body, double *lower, double *upper)
{
    const urdf_info *u = info_of(sys);
    if (!u) return mbk_set_error(MBK_EINVAL, "mbk_urdf_get_joint_limits: the System was not built from URDF");
    if (body < 0 || body >= u->nb)
        return mbk_set_error(MBK_EINVAL, "mbk_urdf_get_joint_limits: body %d is out of range; there are %d", body,
                             u->nb);
    double lo = u->limits[2 * body], hi = u->limits[2 * body + 1];
    if (!(lo < hi)) return 0;
    if (lower) *lower = lo;
    if (upper) *upper = hi;
    return 1;
}

int mbk_urdf_get_num_warnings(const mbk_system *sys)
{
    const urdf_info *u = info_of(sys);
    return u ? u->nwarnings : 0;
}

const char *mbk_urdf_get_warning(const mbk_system *sys, int i)
{
    const urdf_info *u = info_of(sys);
    return u && i >= 0 && i < u->nwarnings ? u->warning_text + u->warning[i] : NULL;
}

/* ------------------------------------------------------------------ */
/* Building the System                                                  */
/* ------------------------------------------------------------------ */

/* R = Rz(yaw) Ry(pitch) Rx(roll): URDF's fixed-axis roll, pitch, yaw. */
static mbk_mat33 rpy_matrix(const double rpy[3])
{
    mbk_mat33 Rx = mbk_mat33_from_axis_angle(mbk_vec3_make(1, 0, 0), rpy[0]);
    mbk_mat33 Ry = mbk_mat33_from_axis_angle(mbk_vec3_make(0, 1, 0), rpy[1]);
    mbk_mat33 Rz = mbk_mat33_from_axis_angle(mbk_vec3_make(0, 0, 1), rpy[2]);
    return mbk_mat33_mul(Rz, mbk_mat33_mul(Ry, Rx));
}

mbk_transform ur_origin_transform(const ur_origin *o)
{
    return mbk_transform_make(rpy_matrix(o->rpy), mbk_vec3_make(o->xyz[0], o->xyz[1], o->xyz[2]));
}
#define origin_transform ur_origin_transform

/* The smallest rotation taking unit vector `from` onto unit vector `to`
   (a half turn about `fallback` when they are opposite). */
static mbk_mat33 rotation_onto(mbk_vec3 from, mbk_vec3 to, mbk_vec3 fallback)
{
    mbk_vec3 k = mbk_vec3_cross(from, to);
    double s = mbk_vec3_norm(k), cth = mbk_vec3_dot(from, to);
    if (s < 1e-10) return cth > 0 ? mbk_mat33_identity() : mbk_mat33_from_axis_angle(fallback, UR_PI);
    return mbk_mat33_from_axis_angle(mbk_vec3_scale(k, 1.0 / s), atan2(s, cth));
}

mbk_mass_props ur_link_mass_props(const ur_link *l)
{
    if (!l->inertial_line) return mbk_mass_props_from_central(0.0, mbk_vec3_zero(), mbk_mat33_zero());
    mbk_transform X = origin_transform(&l->inertial_origin);
    const double *I6 = l->I;
    mbk_mat33 Ii = {{{I6[0], I6[3], I6[4]}, {I6[3], I6[1], I6[5]}, {I6[4], I6[5], I6[2]}}};
    mbk_mat33 I = mbk_mat33_rotate_congruence(X.R, Ii);
    /* exact symmetry after the rotation */
    for (int r = 0; r < 3; ++r)
        for (int k = r + 1; k < 3; ++k) I.m[r][k] = I.m[k][r] = 0.5 * (I.m[r][k] + I.m[k][r]);
    return mbk_mass_props_from_central(l->mass, X.p, I);
}

/* Passes the library's own message on with the URDF context in front. */
static int lib_fail(ur_ctx *c, long line, const char *where, const char *what)
{
    int st = mbk_last_status();
    return fail(c, st < 0 ? st : MBK_EINVAL, line, where, "%s: %s", what, mbk_last_error());
}

int ur_name_force(mbk_forces *f, int e, const char *prefix, const char *name)
{
    /* most names fit on the stack; a longer one is copied whole to the heap */
    char small[128];
    size_t np = strlen(prefix), nn = strlen(name);
    char *buf = np + nn + 2 <= sizeof small ? small : mbk_malloc(np + nn + 2);
    if (!buf) return MBK_ENOMEM;
    memcpy(buf, prefix, np);
    buf[np] = ':';
    memcpy(buf + np + 1, name, nn + 1);
    int rc = mbk_force_set_name(f, e, buf);
    if (buf != small) mbk_free(buf);
    return rc;
}

/* Joint friction without options.friction_as_elements: one warning for all joints. */
static void warn_friction_ignored(ur_ctx *c)
{
    int first = -1, more = 0;
    char lines[160] = "";
    size_t len = 0;
    for (int i = 0; i < c->njoints; ++i) {
        const ur_joint *j = &c->joints[i];
        if (j->friction == 0 || j->type == J_FIXED) continue;
        if (first < 0) {
            first = i;
            continue;
        }
        if (more++ < 8 && len < sizeof lines)
            len += (size_t)snprintf(lines + len, sizeof lines - len, "%s%ld", more > 1 ? ", " : "", j->dynamics_line);
    }
    if (first < 0) return;
    where_buf w;
    const ur_joint *j = &c->joints[first];
    if (more)
        ur_warn(c, j->dynamics_line, where_elem(&w, "joint", str(c, j->name)),
                "friction is ignored, here and on %d more joint%s (line%s %s%s); options.friction_as_elements turns "
                "it into friction elements", more, more == 1 ? "" : "s", more == 1 ? "" : "s", lines,
                more > 8 ? ", ..." : "");
    else
        ur_warn(c, j->dynamics_line, where_elem(&w, "joint", str(c, j->name)),
                "friction is ignored; options.friction_as_elements turns it into a friction element");
}

/* The warnings, in file order, copied into the System's info. */
static int keep_warnings(ur_ctx *c, urdf_info *info)
{
    msgs_sort(&c->warnings);
    size_t total = 1;
    for (int i = 0; i < c->warnings.n; ++i) total += strlen(c->warnings.v[i].text) + 1;
    char more[96] = "";
    if (c->warnings.dropped)
        total += (size_t)snprintf(more, sizeof more, "%s: and %ld more warnings (not kept)", c->src,
                                  c->warnings.dropped) + 1;
    int n = c->warnings.n + (more[0] ? 1 : 0);
    info->warning_text = mbk_malloc(total);
    info->warning = mbk_malloc((size_t)(n ? n : 1) * sizeof *info->warning);
    if (!info->warning_text || !info->warning) return fail(c, MBK_ENOMEM, 0, NULL, "out of memory");
    size_t at = 0;
    for (int i = 0; i < n; ++i) {
        const char *t = i < c->warnings.n ? c->warnings.v[i].text : more;
        size_t len = strlen(t) + 1;
        memcpy(info->warning_text + at, t, len);
        info->warning[i] = at;
        at += len;
    }
    info->nwarnings = n;
    return 0;
}

/* Depth-first order from the root, children in file order (like MuJoCo). */
static int dfs_order(ur_ctx *c, int root, int *order, int *count)
{
    int nl = c->nlinks, nj = c->njoints;
    int *start = mbk_calloc((size_t)nl + 1, sizeof *start);
    int *kids = mbk_malloc((size_t)(nj ? nj : 1) * sizeof *kids);
    int *stack = mbk_malloc((size_t)nl * sizeof *stack);
    if (!start || !kids || !stack) {
        mbk_free(start), mbk_free(kids), mbk_free(stack);
        return fail(c, MBK_ENOMEM, 0, NULL, "out of memory");
    }
    for (int j = 0; j < nj; ++j) start[c->joints[j].parent_link + 1]++;
    for (int i = 0; i < nl; ++i) start[i + 1] += start[i];
    {
        int *fill = stack; /* reuse as a cursor array */
        for (int i = 0; i < nl; ++i) fill[i] = start[i];
        for (int j = 0; j < nj; ++j) kids[fill[c->joints[j].parent_link]++] = c->joints[j].child_link;
    }
    int sp = 0, n = 0;
    stack[sp++] = root;
    while (sp > 0) {
        int l = stack[--sp];
        order[n++] = l;
        for (int k = start[l + 1] - 1; k >= start[l]; --k) stack[sp++] = kids[k];
    }
    *count = n;
    mbk_free(start), mbk_free(kids), mbk_free(stack);
    return 0;
}

/* A link the depth-first order did not reach sits on a cycle: walk its parents
   until inside the cycle and say where it is. */
static int fail_cycle(ur_ctx *c, int root, const int *order, int count)
{
    const int nl = c->nlinks;
    char *seen = mbk_calloc((size_t)nl, 1);
    if (!seen) return fail(c, MBK_ENOMEM, 0, NULL, "out of memory");
    for (int i = 0; i < count; ++i) seen[order[i]] = 1;
    int k = 0;
    while (seen[k]) ++k;
    for (int steps = 0; steps < nl; ++steps) k = c->joints[c->links[k].parent_joint].parent_link;
    mbk_free(seen);
    const ur_joint *j = &c->joints[c->links[k].parent_joint];
    where_buf w;
    return fail(c, MBK_EPARSE, j->line, where_elem(&w, "joint", str(c, j->name)),
                "the joints form a cycle through link '%.200s' (not connected to root link '%.200s'); a URDF "
                "robot is a tree", str(c, c->links[k].name), str(c, c->links[root].name));
}

/* A root link named 'world' is Ground: what it carries or asks for that has no effect. */
static void warn_world_root(ur_ctx *c, const ur_link *root)
{
    if (root->inertial_line)
        ur_warn(c, root->inertial_line, "<link name=\"world\">",
                "the <inertial> of link 'world' is ignored: 'world' is Ground");
    if (c->o->floating_base)
        ur_warn(c, root->line, "<link name=\"world\">",
                "options.floating_base has no effect: the root link 'world' is Ground, and the robot is mounted "
                "by the joints from it");
}

/* How a link's body is mounted: its mobilizer, frames and parent body. */
typedef struct ur_mount {
    mbk_mobilizer mob;    /* the joint's mobilizer (the root's: Free or Weld by the options) */
    mbk_transform X_PF;   /* F in the parent body's frame */
    mbk_transform X_BM;   /* M in the body's (the link's) frame */
    int parent;           /* the parent body */
    int type;             /* J_*: the joint's type */
} ur_mount;

/* The mount of link l (the root when j is NULL): the mobilizer's axis turned onto
   the joint's axis on both sides, so that B is the child link's frame. */
static ur_mount link_mount(const ur_ctx *c, const ur_joint *j, const int *body)
{
    const mbk_vec3 ex = mbk_vec3_make(1, 0, 0), ey = mbk_vec3_make(0, 1, 0), ez = mbk_vec3_make(0, 0, 1);
    ur_mount mt = {mbk_mobilizer_weld(), mbk_transform_identity(), mbk_transform_identity(), 0, J_FIXED};
    if (!j) {
        if (c->o->floating_base) mt.mob = mbk_mobilizer_free(), mt.type = J_FLOATING;
        return mt;
    }
    mt.type = j->type;
    mt.parent = body[j->parent_link];
    mt.X_PF = origin_transform(&j->origin);
    const mbk_vec3 a = mbk_vec3_make(j->axis[0], j->axis[1], j->axis[2]);
    mbk_mat33 R = mbk_mat33_identity();
    switch (j->type) {
    case J_REVOLUTE:
    case J_CONTINUOUS: mt.mob = mbk_mobilizer_pin(), R = rotation_onto(ez, a, ex); break;
    case J_PRISMATIC: mt.mob = mbk_mobilizer_slider(), R = rotation_onto(ex, a, ey); break;
    case J_PLANAR: mt.mob = mbk_mobilizer_planar(), R = rotation_onto(ez, a, ex); break;
    case J_FLOATING: mt.mob = mbk_mobilizer_free(); break;
    default: break;
    }
    mt.X_PF.R = mbk_mat33_mul(mt.X_PF.R, R);
    mt.X_BM.R = R;
    return mt;
}

/* Link l's body (j its joint, NULL for the root) into matter, named, and into info;
   body[li] gets its index. */
static int add_link_body(ur_ctx *c, mbk_matter *m, int li, const ur_joint *j, const mbk_mass_props *mp, int *body,
                         urdf_info *info)
{
    const ur_link *l = &c->links[li];
    where_buf wlb, wjb;
    const char *wl = where_elem(&wlb, "link", str(c, l->name));
    const ur_mount mt = link_mount(c, j, body);
    /* a body whose inertia breaks the triangle inequality (judged usable) goes in as it is */
    int b = mbk_mass_props_is_valid(*mp) ? mbk_matter_add_body(m, mt.parent, &mt.X_PF, mp, &mt.X_BM, mt.mob)
                                         : mbk_matter_add_body_unrealizable(m, mt.parent, &mt.X_PF, mp, &mt.X_BM, mt.mob);
    if (b < 0) return j ? lib_fail(c, j->line, where_elem(&wjb, "joint", str(c, j->name)), "adding the body")
                        : lib_fail(c, l->line, wl, "adding the body");
    body[li] = b;
    info->link_name[b] = l->name;
    info->type[b] = (unsigned char)mt.type;
    if (j) {
        info->joint_name[b] = j->name;
        bool limited = j->limit_line && (j->type == J_REVOLUTE || j->type == J_PRISMATIC) && j->lower < j->upper;
        info->limits[2 * b] = limited ? j->lower : 0.0;
        info->limits[2 * b + 1] = limited ? j->upper : 0.0;
    }
    if (mbk_matter_set_body_name(m, b, str(c, l->name)) < 0) return lib_fail(c, l->line, wl, "naming the body");
    return 0;
}

/* Every link's body, in depth-first order; a root named 'world' is Ground. */
static int add_bodies(ur_ctx *c, mbk_matter *m, const int *order, bool world, const ur_bodies *bodies, int *body,
                      urdf_info *info)
{
    info->type[0] = J_NTYPES;
    for (int i = 0; i < c->nlinks; ++i) {
        const int li = order[i];
        const ur_link *l = &c->links[li];
        if (i == 0 && world) {
            body[li] = 0;
            info->link_name[0] = l->name;
            where_buf w;
            if (mbk_matter_set_body_name(m, 0, str(c, l->name)) < 0)
                return lib_fail(c, l->line, where_elem(&w, "link", str(c, l->name)), "naming Ground");
            continue;
        }
        const ur_joint *j = i == 0 ? NULL : &c->joints[l->parent_joint];
        if (add_link_body(c, m, li, j, &bodies->mp[li], body, info)) return c->status;
    }
    return 0;
}

/* One element per mobility of joint j on body b, each named prefix:joint: the
   dampers (friction false) or the Coulomb friction elements. */
static int add_per_mobility(ur_ctx *c, mbk_forces *f, const ur_joint *j, int b, int nu, bool friction)
{
    where_buf w;
    for (int k = 0; k < nu; ++k) {
        int e = friction ? mbk_force_add_mobility_coulomb_friction(f, b, k, j->friction,
                                                                    c->o->friction_transition_velocity)
                         : mbk_force_add_mobility_linear_damper(f, b, k, j->damping);
        if (e < 0 || ur_name_force(f, e, friction ? "friction" : "damping", str(c, j->name)) < 0)
            return lib_fail(c, j->dynamics_line, where_elem(&w, "joint", str(c, j->name)),
                            friction ? "adding the friction element" : "adding the damper");
    }
    return 0;
}

/* Joint j's elements, as the options ask: its limits as a stop, its damping and
   friction as elements, its mimic as a coupler. */
static int add_joint_elements(ur_ctx *c, mbk_matter *m, mbk_forces *f, const ur_joint *j, const int *body)
{
    const mbk_urdf_options *o = c->o;
    const int b = body[j->child_link];
    where_buf w;
    const char *wj = where_elem(&w, "joint", str(c, j->name));
    const int nu = j->type == J_PLANAR ? 3 : j->type == J_FLOATING ? 6 : j->type == J_FIXED ? 0 : 1;
    if (o->limits_as_stops && j->limit_line && (j->type == J_REVOLUTE || j->type == J_PRISMATIC) &&
        j->lower < j->upper) {
        int k = mbk_force_add_mobility_linear_stop(f, b, 0, o->stop_stiffness, o->stop_dissipation, j->lower, j->upper);
        if (k < 0 || ur_name_force(f, k, "limit", str(c, j->name)) < 0)
            return lib_fail(c, j->limit_line, wj, "adding the limit stop");
    }
    if (j->limit_line && j->type == J_CONTINUOUS && j->lower < j->upper)
        ur_warn(c, j->limit_line, wj, "the limits of a continuous joint are ignored");
    if (j->friction != 0 && nu == 0) ur_warn(c, j->dynamics_line, wj, "friction is ignored (the joint is fixed)");
    if (o->damping_as_dampers && j->damping > 0 && nu > 0 && add_per_mobility(c, f, j, b, nu, false)) return c->status;
    if (o->friction_as_elements && j->friction > 0 && nu > 0 && add_per_mobility(c, f, j, b, nu, true))
        return c->status;
    if (o->mimic_as_couplers && j->mimic_joint >= 0) {
        /* q = multiplier q_other + offset as the coupler f(q, q_other) = q - multiplier q_other - offset = 0 */
        const double coef[3] = {1.0, -j->multiplier, -j->offset};
        const int cb[2] = {b, body[c->joints[j->mimic_joint].child_link]}, cq[2] = {0, 0};
        if (mbk_constraint_add_coordinate_coupler(m, mbk_function_linear(coef, 2), cb, cq, 2) < 0)
            return lib_fail(c, j->mimic_line, wj, "adding the mimic coupler");
    }
    return 0;
}

/* Gravity, then each joint's elements, then the ground contact. */
static int add_forces(ur_ctx *c, mbk_matter *m, mbk_forces *f, const int *body, const ur_bodies *bodies)
{
    int g = mbk_force_add_gravity(f, c->o->gravity);
    if (g < 0 || mbk_force_set_name(f, g, "gravity") < 0) return lib_fail(c, c->robot_line, "<robot>", "adding gravity");
    for (int ji = 0; ji < c->njoints; ++ji)
        if (add_joint_elements(c, m, f, &c->joints[ji], body)) return c->status;
    if (c->o->ground_contact && ur_add_ground_contact(c, f, body, bodies)) return c->status;
    if (!c->o->friction_as_elements) warn_friction_ignored(c);
    return 0;
}

/* The per-body arrays of the names kept with the System. */
static int alloc_info(ur_ctx *c, urdf_info *info, int nb)
{
    info->nb = nb;
    info->link_name = mbk_calloc((size_t)nb, sizeof *info->link_name);
    info->joint_name = mbk_calloc((size_t)nb, sizeof *info->joint_name);
    info->type = mbk_calloc((size_t)nb, 1);
    info->limits = mbk_calloc(2 * (size_t)nb, sizeof *info->limits);
    if (!info->link_name || !info->joint_name || !info->type || !info->limits)
        return fail(c, MBK_ENOMEM, 0, NULL, "out of memory");
    return 0;
}

/* The names and the warnings go with the System: the info subsystem takes the pool
   (and *info: NULL once the System owns it). */
static int attach_info(ur_ctx *c, mbk_system *sys, urdf_info **info)
{
    if (keep_warnings(c, *info)) return c->status;
    (*info)->robot = c->robot_name;
    (*info)->pool = c->pool;
    if (mbk_system_add_subsystem(sys, &urdf_info_ops, *info) < 0) {
        (*info)->pool = NULL;
        return lib_fail(c, 0, NULL, "adding the names");
    }
    c->pool = NULL;
    *info = NULL;
    return 0;
}

/* The System from the parsed and checked robot: bodies in depth-first order from
   the root, forces, the names; realized to Topology if the options ask. */
static int build_system(ur_ctx *c, int root, const int *order, int *body, urdf_info **info, mbk_system **sys)
{
    const bool world = strcmp(str(c, c->links[root].name), "world") == 0;
    if (world) warn_world_root(c, &c->links[root]);
    ur_bodies bodies = {NULL, NULL};
    if (ur_judge_bodies(c, order, world, &bodies)) return c->status;
    *sys = mbk_multibody_create(c->robot_name ? str(c, c->robot_name) : "urdf");
    mbk_matter *m = *sys ? mbk_multibody_upd_matter(*sys) : NULL;
    mbk_forces *f = *sys ? mbk_multibody_upd_forces(*sys) : NULL;
    if (!*sys) lib_fail(c, 0, NULL, "creating the System");
    else if (!m || !f) fail(c, MBK_ENOMEM, 0, NULL, "out of memory");
    /* each step says what failed; the first failure ends the build */
    const bool built = !c->status && !alloc_info(c, *info, c->nlinks + (world ? 0 : 1)) &&
                       !add_bodies(c, m, order, world, &bodies, body, *info) && !add_forces(c, m, f, body, &bodies) &&
                       !attach_info(c, *sys, info);
    ur_bodies_free(&bodies);
    if (built && c->o->realize_topology && mbk_system_realize_topology(*sys) < 0)
        lib_fail(c, c->robot_line, "<robot>", "realizing the topology");
    return c->status;
}

static int build(ur_ctx *c, int root, mbk_system **out)
{
    const int nl = c->nlinks;
    int *order = mbk_malloc((size_t)nl * sizeof *order), *body = mbk_malloc((size_t)nl * sizeof *body);
    urdf_info *info = mbk_calloc(1, sizeof *info);
    mbk_system *sys = NULL;
    int count = 0;
    if (!order || !body || !info) fail(c, MBK_ENOMEM, 0, NULL, "out of memory");
    else if (!dfs_order(c, root, order, &count)) {
        if (count != nl) fail_cycle(c, root, order, count);
        else build_system(c, root, order, body, &info, &sys);
    }
    mbk_free(order);
    mbk_free(body);
    if (info) info_destroy(info);
    if (c->status) {
        mbk_system_destroy(sys);
        return c->status;
    }
    *out = sys;
    return MBK_OK;
}

/* ------------------------------------------------------------------ */
/* Entry points                                                         */
/* ------------------------------------------------------------------ */

mbk_urdf_options mbk_urdf_options_default(void)
{
    mbk_urdf_options o;
    memset(&o, 0, sizeof o);
    o.floating_base = false;
    o.gravity = mbk_vec3_make(0, 0, -9.81);
    o.limits_as_stops = true;
    o.stop_stiffness = 1e4;
    o.stop_dissipation = 1.0;
    o.damping_as_dampers = true;
    o.mimic_as_couplers = true;
    o.realize_topology = true;
    o.max_bytes = (size_t)16 << 20;
    o.source_name = "<string>";
    o.friction_transition_velocity = 0.01;
    o.contact_modulus = 1e8;
    o.contact_dissipation = 1.0;
    o.contact_static_friction = 1.0;
    o.contact_dynamic_friction = 0.8;
    o.contact_viscous_friction = 0.0;
    o.contact_transition_velocity = 0.01;
    o.contact_point_radius = 0.005;
    return o;
}

static bool finite_nonneg(double x) { return isfinite(x) && x >= 0; }

static int check_options(const mbk_urdf_options *o, const char *fn)
{
    if (!mbk_vec3_is_finite(o->gravity))
        return mbk_set_error(MBK_EINVAL, "%s: options.gravity must be finite", fn);
    if (!(o->stop_stiffness >= 0) || !isfinite(o->stop_stiffness) || !(o->stop_dissipation >= 0) ||
        !isfinite(o->stop_dissipation))
        return mbk_set_error(MBK_EINVAL, "%s: options.stop_stiffness and stop_dissipation must be finite and >= 0",
                             fn);
    if (o->max_bytes == 0) return mbk_set_error(MBK_EINVAL, "%s: options.max_bytes must be > 0", fn);
    if (!finite_nonneg(o->min_mass) || !finite_nonneg(o->min_inertia))
        return mbk_set_error(MBK_EINVAL, "%s: options.min_mass and min_inertia must be finite and >= 0 (0: off)", fn);
    if (o->friction_as_elements && !(isfinite(o->friction_transition_velocity) && o->friction_transition_velocity > 0))
        return mbk_set_error(MBK_EINVAL, "%s: options.friction_transition_velocity must be finite and > 0", fn);
    if (o->ground_contact &&
        (!isfinite(o->ground_height) || !(isfinite(o->contact_modulus) && o->contact_modulus > 0) ||
         !finite_nonneg(o->contact_dissipation) || !finite_nonneg(o->contact_static_friction) ||
         !finite_nonneg(o->contact_dynamic_friction) || !finite_nonneg(o->contact_viscous_friction) ||
         !(isfinite(o->contact_transition_velocity) && o->contact_transition_velocity > 0) ||
         !(isfinite(o->contact_point_radius) && o->contact_point_radius > 0)))
        return mbk_set_error(MBK_EINVAL, "%s: the contact options must be finite, with ground_height any, "
                             "contact_modulus, contact_transition_velocity and contact_point_radius > 0, and the "
                             "dissipation and friction coefficients >= 0", fn);
    return MBK_OK;
}

/* Give the warnings (and, on failure, the errors) to the callbacks in file order, and
   set the last error to the first error with a count of the others. */
static int finish(ur_ctx *c, int status)
{
    const mbk_urdf_options *o = c->o;
    msgs_sort(&c->warnings);
    msgs_sort(&c->errors);
    if (o->warning) {
        for (int i = 0; i < c->warnings.n; ++i) o->warning(o->warning_user, c->warnings.v[i].text);
        if (c->warnings.dropped) {
            char m[160];
            snprintf(m, sizeof m, "%s: and %ld more warnings (not kept)", c->src, c->warnings.dropped);
            o->warning(o->warning_user, m);
        }
    }
    if (status == MBK_OK) return MBK_OK;
    long more = (long)c->errors.n - 1 + c->errors.dropped;
    if (o->error) {
        for (int i = 0; i < c->errors.n; ++i) o->error(o->error_user, c->errors.v[i].text);
        if (c->errors.dropped) {
            char m[160];
            snprintf(m, sizeof m, "%s: and %ld more errors (not kept)", c->src, c->errors.dropped);
            o->error(o->error_user, m);
        }
    }
    if (status == MBK_ENOMEM || c->errors.n == 0)
        return mbk_set_error(status, "%s: out of memory while loading the robot", c->src);
    /* the first problem in the file; its status */
    status = c->errors.v[0].status;
    if (more > 0)
        return mbk_set_error(status, "%s (and %ld more problem%s%s)", c->errors.v[0].text, more, more == 1 ? "" : "s",
                             o->error ? "" : "; options.error receives each one");
    return mbk_set_error(status, "%s", c->errors.v[0].text);
}

static int load_text(const char *src, const char *path, const char *text, size_t len, const mbk_urdf_options *o,
                     mbk_system **out)
{
    ur_ctx c;
    memset(&c, 0, sizeof c);
    c.o = o;
    c.src = src;
    c.path = path;
    name_ix *lix = NULL, *jix = NULL;
    int root = -1;
    if (pool_add(&c, "") != 0 || c.status) goto done; /* offset 0 is "" */
    if (parse_xml(&c, text, len)) goto done;
    lix = build_index(&c, false);
    jix = lix ? build_index(&c, true) : NULL;
    if (!lix || !jix || c.status) goto done;
    if (check_robot(&c, lix, jix, &root)) goto done;
    build(&c, root, out);
done:
    mbk_free(lix);
    mbk_free(jix);
    mbk_free(c.links);
    mbk_free(c.joints);
    mbk_free(c.cols);
    mbk_free(c.pool);
    int rc = finish(&c, c.status);
    msgs_free(&c.warnings);
    msgs_free(&c.errors);
    return rc;
}

int mbk_urdf_load_string(const char *xml, const mbk_urdf_options *opts, mbk_system **out)
{
    const char *fn = "mbk_urdf_load_string";
    mbk_urdf_options d = mbk_urdf_options_default();
    const mbk_urdf_options *o = opts ? opts : &d;
    if (!out) return mbk_set_error(MBK_EINVAL, "%s: out is NULL", fn);
    *out = NULL;
    if (!xml) return mbk_set_error(MBK_EINVAL, "%s: xml is NULL", fn);
    int rc = check_options(o, fn);
    if (rc < 0) return rc;
    const char *src = o->source_name ? o->source_name : "<string>";
    size_t len = strlen(xml);
    if (len > o->max_bytes)
        return mbk_set_error(MBK_EPARSE, "%s: the input is %zu bytes; the limit is %zu (options.max_bytes)", src,
                             len, o->max_bytes);
    return load_text(src, NULL, xml, len, o, out);
}

/* What a file system entry is, for messages ("a directory"). */
static const char *file_kind(mode_t mode)
{
    if (S_ISDIR(mode)) return "a directory";
    if (S_ISFIFO(mode)) return "a FIFO (named pipe)";
    if (S_ISCHR(mode)) return "a character device";
    if (S_ISBLK(mode)) return "a block device";
    if (S_ISSOCK(mode)) return "a socket";
    return "not a regular file";
}

/* Open path for reading only when it is a regular file. Anything else is refused
   before reading: a FIFO or a device could block forever or never end, a directory
   cannot be read. The open itself never blocks (O_NONBLOCK), so a FIFO swapped in
   after the stat is caught by the fstat instead of hanging. */
static int open_regular_file(const char *path, FILE **out, size_t *size)
{
    *out = NULL;
    struct stat st;
    if (stat(path, &st) != 0) {
        int e = errno;
        if (e == ENOENT)
            return mbk_set_error(MBK_EIO, "%s: cannot open the file: no such file; expected the path of a URDF file "
                                          "(check the spelling and the working directory)", path);
        if (e == ENOTDIR)
            return mbk_set_error(MBK_EIO, "%s: cannot open the file: a part of the path is not a directory; "
                                          "expected the path of a URDF file", path);
        if (e == EACCES)
            return mbk_set_error(MBK_EIO, "%s: cannot open the file: permission denied on a directory of the path; "
                                          "make the directories searchable (chmod +x) or copy the file", path);
        return mbk_set_error(MBK_EIO, "%s: cannot open the file: %s", path, strerror(e));
    }
    if (!S_ISREG(st.st_mode))
        return mbk_set_error(MBK_EIO, "%s: cannot read it as a URDF file: it is %s; expected a regular file "
                                      "(give the path of the .urdf file itself)", path, file_kind(st.st_mode));
    int fd = open(path, O_RDONLY | O_NONBLOCK | O_NOCTTY);
    if (fd < 0) {
        int e = errno;
        if (e == EACCES)
            return mbk_set_error(MBK_EIO, "%s: cannot open the file: permission denied (the file is not readable); "
                                          "make it readable (chmod +r) or copy it", path);
        return mbk_set_error(MBK_EIO, "%s: cannot open the file: %s", path, strerror(e));
    }
    if (fstat(fd, &st) != 0) {
        int e = errno;
        close(fd);
        return mbk_set_error(MBK_EIO, "%s: cannot open the file: %s", path, strerror(e));
    }
    if (!S_ISREG(st.st_mode)) { /* replaced between the stat and the open */
        close(fd);
        return mbk_set_error(MBK_EIO, "%s: cannot read it as a URDF file: it is %s; expected a regular file "
                                      "(give the path of the .urdf file itself)", path, file_kind(st.st_mode));
    }
    FILE *fp = fdopen(fd, "rb");
    if (!fp) {
        int e = errno;
        close(fd);
        return mbk_set_error(e == ENOMEM ? MBK_ENOMEM : MBK_EIO, "%s: cannot open the file: %s", path, strerror(e));
    }
    *out = fp;
    *size = st.st_size > 0 ? (size_t)st.st_size : 0;
    return MBK_OK;
}

int mbk_urdf_load(const char *path, const mbk_urdf_options *opts, mbk_system **out)
{
    const char *fn = "mbk_urdf_load";
    mbk_urdf_options d = mbk_urdf_options_default();
    const mbk_urdf_options *o = opts ? opts : &d;
    if (!out) return mbk_set_error(MBK_EINVAL, "%s: out is NULL", fn);
    *out = NULL;
    if (!path) return mbk_set_error(MBK_EINVAL, "%s: path is NULL", fn);
    int rc = check_options(o, fn);
    if (rc < 0) return rc;
    FILE *fp = NULL;
    size_t size = 0;
    rc = open_regular_file(path, &fp, &size);
    if (rc < 0) return rc;
    if (size > o->max_bytes) {
        fclose(fp);
        return mbk_set_error(MBK_EPARSE, "%s: the file is %zu bytes, larger than the limit of %zu bytes "
                                         "(options.max_bytes; raise it to load this file)", path, size, o->max_bytes);
    }
    size_t cap = 65536, len = 0;
    char *buf = mbk_malloc(cap);
    if (!buf) {
        fclose(fp);
        return mbk_set_error(MBK_ENOMEM, "%s: out of memory for a %zu-byte read buffer", path, cap);
    }
    for (;;) {
        if (len == cap) {
            if (cap > o->max_bytes) break;
            size_t nc = cap > SIZE_MAX / 2 ? SIZE_MAX : 2 * cap;
            char *nb = mbk_realloc(buf, nc);
            if (!nb) {
                mbk_free(buf);
                fclose(fp);
                return mbk_set_error(MBK_ENOMEM, "%s: out of memory for a %zu-byte read buffer", path, nc);
            }
            buf = nb;
            cap = nc;
        }
        size_t n = fread(buf + len, 1, cap - len, fp);
        len += n;
        if (n == 0) break;
        if (len > o->max_bytes) break;
    }
    int read_error = ferror(fp), e = errno;
    fclose(fp);
    if (read_error) {
        mbk_free(buf);
        return mbk_set_error(MBK_EIO, "%s: read error after %zu bytes: %s", path, len, strerror(e));
    }
    if (len > o->max_bytes) {
        mbk_free(buf);
        return mbk_set_error(MBK_EPARSE, "%s: the file is larger than the limit of %zu bytes "
                                         "(options.max_bytes; raise it to load this file)", path, o->max_bytes);
    }
    rc = load_text(path, path, buf, len, o, out);
    mbk_free(buf);
    return rc;
}
