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

#define UR_MAX_DEPTH 256          /* deepest element nesting accepted */
#define UR_CHUNK (1 << 20)        /* bytes fed to expat per call */
#define UR_MAX_ITEMS (INT_MAX / 4) /* most links or joints */
#define UR_PI 3.14159265358979323846

/* ------------------------------------------------------------------ */
/* Records                                                              */
/* ------------------------------------------------------------------ */

enum { J_REVOLUTE, J_CONTINUOUS, J_PRISMATIC, J_FIXED, J_FLOATING, J_PLANAR, J_NTYPES };
static const char *const joint_type_names[J_NTYPES] = {"revolute", "continuous", "prismatic",
                                                       "fixed",    "floating",   "planar"};

typedef struct ur_origin {
    long line;          /* 0: absent */
    double xyz[3], rpy[3];
} ur_origin;

typedef struct ur_link {
    size_t name;        /* pool offset */
    long line;
    long inertial_line, mass_line, inertia_line; /* 0: absent */
    ur_origin inertial_origin;
    double mass;
    double I[6];        /* ixx iyy izz ixy ixz iyz, in the inertial frame */
    int parent_joint;   /* -1: root */
} ur_link;

typedef struct ur_joint {
    size_t name;
    long line;
    int type;
    ur_origin origin;
    size_t parent, child;       /* link names */
    long parent_line, child_line;
    long axis_line;
    double axis[3];
    long limit_line;
    double lower, upper;
    long dynamics_line;
    double damping, friction;
    long mimic_line;
    size_t mimic_name;
    double multiplier, offset;
    int parent_link, child_link, mimic_joint; /* resolved indices */
} ur_joint;

/* What an open element is. */
enum { K_ROBOT, K_LINK, K_INERTIAL, K_JOINT, K_LEAF, K_IGNORE };

typedef struct ur_ctx {
    const mbk_urdf_options *o;
    const char *src;       /* file name for messages */
    XML_Parser parser;
    int depth;
    unsigned char kind[UR_MAX_DEPTH];
    int status;            /* first error (0: none) */
    char msg[MBK_ERROR_MAX];
    /* string pool: offset 0 is "" */
    char *pool;
    size_t pool_len, pool_cap;
    size_t robot_name;
    long robot_line;
    ur_link *links;
    int nlinks, cap_links;
    ur_joint *joints;
    int njoints, cap_joints;
} ur_ctx;

/* ------------------------------------------------------------------ */
/* Errors and warnings                                                  */
/* ------------------------------------------------------------------ */

static const char *str(const ur_ctx *c, size_t off) { return c->pool + off; }

/* Record the first error: "src:line: <where>: what". */
static int failv(ur_ctx *c, int status, long line, const char *where, const char *fmt, va_list ap)
{
    if (c->status) return c->status;
    c->status = status;
    int n;
    if (line > 0)
        n = snprintf(c->msg, sizeof c->msg, "%s:%ld: %s%s", c->src, line, where ? where : "", where ? ": " : "");
    else
        n = snprintf(c->msg, sizeof c->msg, "%s: %s%s", c->src, where ? where : "", where ? ": " : "");
    if (n < 0) n = 0;
    if ((size_t)n < sizeof c->msg) vsnprintf(c->msg + n, sizeof c->msg - (size_t)n, fmt, ap);
    if (c->parser) XML_StopParser(c->parser, XML_FALSE);
    return status;
}

#if defined(__GNUC__)
__attribute__((format(printf, 5, 6)))
#endif
static int fail(ur_ctx *c, int status, long line, const char *where, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    int rc = failv(c, status, line, where, fmt, ap);
    va_end(ap);
    return rc;
}

#if defined(__GNUC__)
__attribute__((format(printf, 3, 4)))
#endif
static void warn(const ur_ctx *c, long line, const char *fmt, ...)
{
    if (!c->o->warning) return;
    char m[768];
    int n = snprintf(m, sizeof m, "%s:%ld: ", c->src, line);
    if (n < 0) n = 0;
    va_list ap;
    va_start(ap, fmt);
    if ((size_t)n < sizeof m) vsnprintf(m + n, sizeof m - (size_t)n, fmt, ap);
    va_end(ap);
    c->o->warning(c->o->warning_user, m);
}

/* "<link name="x">" or "<joint name="x">" for messages (names cut at 200 bytes). */
typedef struct where_buf { char s[300]; } where_buf;

static const char *where_elem(where_buf *w, const char *elem, const char *name)
{
    if (name) snprintf(w->s, sizeof w->s, "<%s name=\"%.200s\">", elem, name);
    else snprintf(w->s, sizeof w->s, "<%s>", elem);
    return w->s;
}

static const char *where_in(where_buf *w, const char *elem, const char *outer, const char *name)
{
    snprintf(w->s, sizeof w->s, "<%s> in <%s name=\"%.200s\">", elem, outer, name);
    return w->s;
}

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
            fail(c, MBK_EPARSE, line, NULL, "more than %d %s", UR_MAX_ITEMS, what);
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
    return c->status ? -1 : 0;
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
    return c->status ? -1 : 0;
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
        return c->status ? -1 : 0;
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
        return c->status ? -1 : 0;
    }
    return 0; /* calibration, safety_controller, ...: not used */
}

static void XMLCALL on_start(void *user, const XML_Char *el, const XML_Char **a)
{
    ur_ctx *c = user;
    if (c->status) return;
    long line = (long)XML_GetCurrentLineNumber(c->parser);
    int d = c->depth;
    if (d >= UR_MAX_DEPTH) {
        fail(c, MBK_EPARSE, line, NULL, "elements are nested deeper than %d levels", UR_MAX_DEPTH);
        return;
    }
    int kind = K_IGNORE;
    if (d == 0) {
        if (strcmp(el, "robot") != 0) {
            fail(c, MBK_EPARSE, line, NULL, "the root element is <%.60s>; a URDF document has <robot>", el);
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
            }
        } else if (outer == K_INERTIAL) {
            rc = start_inertial_child(c, line, el, a);
            kind = K_LEAF;
        } else if (outer == K_JOINT) {
            rc = start_joint_child(c, line, el, a);
            kind = K_LEAF;
        }
        if (rc || c->status) return;
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
    fail(c, MBK_EPARSE, (long)XML_GetCurrentLineNumber(c->parser), "<!DOCTYPE>",
         "document type declarations are not accepted (URDF has none; entities are refused)");
}

static void XMLCALL on_entity(void *user, const XML_Char *name, int is_param, const XML_Char *value, int len,
                              const XML_Char *base, const XML_Char *sysid, const XML_Char *pubid,
                              const XML_Char *notation)
{
    (void)name; (void)is_param; (void)value; (void)len; (void)base; (void)sysid; (void)pubid; (void)notation;
    ur_ctx *c = user;
    fail(c, MBK_EPARSE, (long)XML_GetCurrentLineNumber(c->parser), "<!ENTITY>", "entity declarations are refused");
}

/* expat allocates through mbk's hooks too. */
static void *ur_malloc(size_t n) { return mbk_malloc(n); }
static void *ur_realloc(void *p, size_t n) { return mbk_realloc(p, n); }
static void ur_free(void *p) { mbk_free(p); }

static int parse_xml(ur_ctx *c, const char *text, size_t len)
{
    XML_Memory_Handling_Suite mem = {ur_malloc, ur_realloc, ur_free};
    c->parser = XML_ParserCreate_MM("UTF-8", &mem, NULL);
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
            if (!c->status) {
                enum XML_Error e = XML_GetErrorCode(c->parser);
                fail(c, MBK_EPARSE, (long)XML_GetCurrentLineNumber(c->parser), NULL,
                     "malformed XML at column %ld: %s", (long)XML_GetCurrentColumnNumber(c->parser) + 1,
                     XML_ErrorString(e));
            }
            break;
        }
        done += n;
    } while (done < len);
    XML_ParserFree(c->parser);
    c->parser = NULL;
    if (!c->status && c->robot_line == 0) fail(c, MBK_EPARSE, 0, NULL, "no <robot> element");
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
            mbk_free(ix);
            return NULL;
        }
    return ix;
}

/* Principal moments of a symmetric 3x3 matrix (cyclic Jacobi), ascending. */
static void eig_sym3(const double I6[6], double ev[3])
{
    double a[3][3] = {{I6[0], I6[3], I6[4]}, {I6[3], I6[1], I6[5]}, {I6[4], I6[5], I6[2]}};
    for (int sweep = 0; sweep < 50; ++sweep) {
        double off = fabs(a[0][1]) + fabs(a[0][2]) + fabs(a[1][2]);
        if (off == 0.0) break;
        for (int p = 0; p < 2; ++p)
            for (int q = p + 1; q < 3; ++q) {
                if (a[p][q] == 0.0) continue;
                double theta = (a[q][q] - a[p][p]) / (2.0 * a[p][q]);
                double t = (theta >= 0 ? 1.0 : -1.0) / (fabs(theta) + sqrt(theta * theta + 1.0));
                double cs = 1.0 / sqrt(t * t + 1.0), sn = t * cs;
                for (int k = 0; k < 3; ++k) { /* rotate columns p, q */
                    double akp = a[k][p], akq = a[k][q];
                    a[k][p] = cs * akp - sn * akq;
                    a[k][q] = sn * akp + cs * akq;
                }
                for (int k = 0; k < 3; ++k) { /* rotate rows p, q */
                    double apk = a[p][k], aqk = a[q][k];
                    a[p][k] = cs * apk - sn * aqk;
                    a[q][k] = sn * apk + cs * aqk;
                }
            }
    }
    ev[0] = a[0][0], ev[1] = a[1][1], ev[2] = a[2][2];
    for (int i = 0; i < 3; ++i)
        for (int j = i + 1; j < 3; ++j)
            if (ev[j] < ev[i]) {
                double t = ev[i];
                ev[i] = ev[j];
                ev[j] = t;
            }
}

static mbk_mat33 inertia_matrix(const double I6[6])
{
    mbk_mat33 M = {{{I6[0], I6[3], I6[4]}, {I6[3], I6[1], I6[5]}, {I6[4], I6[5], I6[2]}}};
    return M;
}

static int check_inertial(ur_ctx *c, const ur_link *l)
{
    if (!l->inertial_line) return 0;
    where_buf w;
    const char *wh = where_in(&w, "inertial", "link", str(c, l->name));
    if (!l->mass_line) return fail(c, MBK_EPARSE, l->inertial_line, wh, "<mass> is missing");
    if (!l->inertia_line) return fail(c, MBK_EPARSE, l->inertial_line, wh, "<inertia> is missing");
    mbk_mat33 I = inertia_matrix(l->I);
    double ev[3], s = mbk_mat33_max_abs(I);
    if (l->mass > MBK_MASS_PROPS_MAX)
        return fail(c, MBK_EPARSE, l->mass_line, where_in(&w, "mass", "link", str(c, l->name)),
                    "the mass %g kg is too large to check and simulate: the limit is %g kg (MBK_MASS_PROPS_MAX), "
                    "beyond which products of masses, inertias and distances overflow; use larger units",
                    l->mass, MBK_MASS_PROPS_MAX);
    wh = where_in(&w, "inertia", "link", str(c, l->name));
    if (s > MBK_MASS_PROPS_MAX)
        return fail(c, MBK_EPARSE, l->inertia_line, wh,
                    "the inertia (largest entry %g kg m^2) is too large to check and simulate: the limit is %g "
                    "kg m^2 (MBK_MASS_PROPS_MAX), beyond which its minors and the dynamics overflow; use larger "
                    "units", s, MBK_MASS_PROPS_MAX);
    eig_sym3(l->I, ev);
    if (l->mass > 0 && !mbk_mat33_is_spd(I))
        return fail(c, MBK_EPARSE, l->inertia_line, wh,
                    "the inertia is not positive definite (principal moments %.6g, %.6g, %.6g); a body "
                    "with mass needs a positive definite inertia",
                    ev[0], ev[1], ev[2]);
    if (l->mass == 0 && s > 0 && !mbk_mat33_is_psd(I))
        return fail(c, MBK_EPARSE, l->inertia_line, wh,
                    "the inertia is not positive semidefinite (principal moments %.6g, %.6g, %.6g)", ev[0],
                    ev[1], ev[2]);
    mbk_mass_props mp = mbk_mass_props_from_central(l->mass, mbk_vec3_zero(), I);
    if (!mbk_mass_props_is_valid(mp))
        return fail(c, MBK_EPARSE, l->inertia_line, wh,
                    "the principal moments %.6g, %.6g, %.6g break the triangle inequality (%.6g + %.6g < %.6g): "
                    "no rigid body has this inertia",
                    ev[0], ev[1], ev[2], ev[0], ev[1], ev[2]);
    return 0;
}

/* Resolve links of joints, parents, roots, cycles and mimic references. */
static int check_robot(ur_ctx *c, const name_ix *lix, const name_ix *jix, int *root_out)
{
    where_buf w;
    if (c->nlinks == 0) return fail(c, MBK_EPARSE, c->robot_line, "<robot>", "the robot has no <link>");
    for (int i = 0; i < c->nlinks; ++i)
        if (check_inertial(c, &c->links[i])) return -1;
    for (int i = 0; i < c->njoints; ++i) {
        ur_joint *j = &c->joints[i];
        const char *wh = where_elem(&w, "joint", str(c, j->name));
        if (!j->parent_line) return fail(c, MBK_EPARSE, j->line, wh, "<parent> is missing");
        if (!j->child_line) return fail(c, MBK_EPARSE, j->line, wh, "<child> is missing");
        j->parent_link = find_name(lix, c->nlinks, str(c, j->parent));
        j->child_link = find_name(lix, c->nlinks, str(c, j->child));
        if (j->parent_link < 0)
            return fail(c, MBK_EPARSE, j->parent_line, wh, "parent link '%.200s' does not exist", str(c, j->parent));
        if (j->child_link < 0)
            return fail(c, MBK_EPARSE, j->child_line, wh, "child link '%.200s' does not exist", str(c, j->child));
        if (j->parent_link == j->child_link)
            return fail(c, MBK_EPARSE, j->child_line, wh, "link '%.200s' is both parent and child",
                        str(c, j->child));
        ur_link *ch = &c->links[j->child_link];
        if (ch->parent_joint >= 0)
            return fail(c, MBK_EPARSE, j->child_line, wh,
                        "link '%.200s' already has parent joint '%.200s' (line %ld); a link has one parent",
                        str(c, j->child), str(c, c->joints[ch->parent_joint].name), c->joints[ch->parent_joint].line);
        ch->parent_joint = i;
        if (j->type == J_REVOLUTE || j->type == J_CONTINUOUS || j->type == J_PRISMATIC || j->type == J_PLANAR) {
            double n = sqrt(j->axis[0] * j->axis[0] + j->axis[1] * j->axis[1] + j->axis[2] * j->axis[2]);
            if (!(n > 1e-12))
                return fail(c, MBK_EPARSE, j->axis_line ? j->axis_line : j->line,
                            where_in(&w, "axis", "joint", str(c, j->name)), "the axis has zero length");
            for (int k = 0; k < 3; ++k) j->axis[k] /= n;
        }
        if (j->mimic_line) {
            const char *wm = where_in(&w, "mimic", "joint", str(c, j->name));
            j->mimic_joint = find_name(jix, c->njoints, str(c, j->mimic_name));
            if (j->mimic_joint < 0)
                return fail(c, MBK_EPARSE, j->mimic_line, wm, "joint '%.200s' does not exist", str(c, j->mimic_name));
            if (j->mimic_joint == i) return fail(c, MBK_EPARSE, j->mimic_line, wm, "a joint cannot mimic itself");
        }
    }
    /* mimic: both joints single-dof; no chain loops back */
    for (int i = 0; i < c->njoints; ++i) {
        const ur_joint *j = &c->joints[i];
        if (j->mimic_joint < 0) continue;
        const char *wm = where_in(&w, "mimic", "joint", str(c, j->name));
        const ur_joint *o = &c->joints[j->mimic_joint];
        bool one = j->type == J_REVOLUTE || j->type == J_CONTINUOUS || j->type == J_PRISMATIC;
        bool one_o = o->type == J_REVOLUTE || o->type == J_CONTINUOUS || o->type == J_PRISMATIC;
        if (!one || !one_o)
            return fail(c, MBK_EPARSE, j->mimic_line, wm,
                        "mimic needs two revolute, continuous or prismatic joints ('%.200s' is %s, '%.200s' is %s)",
                        str(c, j->name), joint_type_names[j->type], str(c, o->name), joint_type_names[o->type]);
    }
    {
        /* colours: 0 unvisited, 1 on the current walk, 2 done */
        unsigned char *col = mbk_calloc((size_t)c->njoints + 1, 1);
        if (!col) return fail(c, MBK_ENOMEM, 0, NULL, "out of memory");
        for (int i = 0; i < c->njoints && !c->status; ++i) {
            int k = i;
            while (k >= 0 && col[k] == 0) col[k] = 1, k = c->joints[k].mimic_joint;
            if (k >= 0 && col[k] == 1)
                fail(c, MBK_EPARSE, c->joints[k].mimic_line, where_in(&w, "mimic", "joint", str(c, c->joints[k].name)),
                     "mimic joints form a loop through '%.200s'; each chain must end at a joint that mimics none",
                     str(c, c->joints[k].name));
            for (k = i; k >= 0 && col[k] == 1; k = c->joints[k].mimic_joint) col[k] = 2;
        }
        mbk_free(col);
        if (c->status) return -1;
    }
    /* exactly one root */
    int root = -1;
    for (int i = 0; i < c->nlinks; ++i) {
        if (c->links[i].parent_joint >= 0) continue;
        if (root >= 0)
            return fail(c, MBK_EPARSE, c->links[i].line, where_elem(&w, "link", str(c, c->links[i].name)),
                        "this link and link '%.200s' (line %ld) both have no parent joint; a URDF robot is one "
                        "tree with one root link", str(c, c->links[root].name), c->links[root].line);
        root = i;
    }
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
    char *pool;
    int nb;
    size_t robot;
    size_t *link_name, *joint_name; /* per body */
    unsigned char *type;            /* per body: J_*, or J_NTYPES for Ground */
} urdf_info;

static void info_destroy(void *impl)
{
    urdf_info *u = impl;
    if (!u) return;
    mbk_free(u->pool);
    mbk_free(u->link_name);
    mbk_free(u->joint_name);
    mbk_free(u->type);
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

static mbk_transform origin_transform(const ur_origin *o)
{
    return mbk_transform_make(rpy_matrix(o->rpy), mbk_vec3_make(o->xyz[0], o->xyz[1], o->xyz[2]));
}

/* The smallest rotation taking unit vector `from` onto unit vector `to`
   (a half turn about `fallback` when they are opposite). */
static mbk_mat33 rotation_onto(mbk_vec3 from, mbk_vec3 to, mbk_vec3 fallback)
{
    mbk_vec3 k = mbk_vec3_cross(from, to);
    double s = mbk_vec3_norm(k), cth = mbk_vec3_dot(from, to);
    if (s < 1e-10) return cth > 0 ? mbk_mat33_identity() : mbk_mat33_from_axis_angle(fallback, UR_PI);
    return mbk_mat33_from_axis_angle(mbk_vec3_scale(k, 1.0 / s), atan2(s, cth));
}

static mbk_mass_props link_mass_props(const ur_link *l)
{
    if (!l->inertial_line) return mbk_mass_props_from_central(0.0, mbk_vec3_zero(), mbk_mat33_zero());
    mbk_transform X = origin_transform(&l->inertial_origin);
    mbk_mat33 I = mbk_mat33_rotate_congruence(X.R, inertia_matrix(l->I));
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

typedef struct build_out {
    int *order;      /* links in depth-first order */
    int *body;       /* per link: body index */
} build_out;

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

static int build(ur_ctx *c, int root, mbk_system **out)
{
    const mbk_urdf_options *o = c->o;
    where_buf w;
    int nl = c->nlinks;
    int *order = mbk_malloc((size_t)nl * sizeof *order), *body = mbk_malloc((size_t)nl * sizeof *body);
    double *sub_mass = mbk_calloc((size_t)nl, sizeof *sub_mass);
    urdf_info *info = mbk_calloc(1, sizeof *info);
    mbk_system *sys = NULL;
    int count = 0;
    if (!order || !body || !sub_mass || !info) {
        fail(c, MBK_ENOMEM, 0, NULL, "out of memory");
        goto done;
    }
    if (dfs_order(c, root, order, &count)) goto done;
    if (count != nl) {
        /* a link not reached from the root sits on a cycle: walk its parents */
        char *seen = mbk_calloc((size_t)nl, 1);
        if (!seen) {
            fail(c, MBK_ENOMEM, 0, NULL, "out of memory");
            goto done;
        }
        for (int i = 0; i < count; ++i) seen[order[i]] = 1;
        int k = 0;
        while (seen[k]) ++k;
        for (int steps = 0; steps < nl; ++steps) k = c->joints[c->links[k].parent_joint].parent_link;
        const ur_joint *j = &c->joints[c->links[k].parent_joint];
        mbk_free(seen);
        fail(c, MBK_EPARSE, j->line, where_elem(&w, "joint", str(c, j->name)),
             "the joints form a cycle through link '%.200s' (not connected to root link '%.200s'); a URDF "
             "robot is a tree", str(c, c->links[k].name), str(c, c->links[root].name));
        goto done;
    }
    bool world = strcmp(str(c, c->links[root].name), "world") == 0;
    if (world && c->links[root].inertial_line)
        warn(c, c->links[root].inertial_line, "the <inertial> of link 'world' is ignored: 'world' is Ground");
    /* mass (and inertia) carried by each subtree, tip to base */
    for (int i = nl - 1; i >= 0; --i) {
        const ur_link *l = &c->links[order[i]];
        double own = l->inertial_line ? l->mass + fabs(l->I[0]) + fabs(l->I[1]) + fabs(l->I[2]) : 0.0;
        sub_mass[order[i]] += own;
        if (l->parent_joint >= 0) sub_mass[c->joints[l->parent_joint].parent_link] += sub_mass[order[i]];
    }
    for (int i = 1; i < nl; ++i) {
        const ur_link *l = &c->links[order[i]];
        const ur_joint *j = &c->joints[l->parent_joint];
        if (j->type != J_FIXED && !(sub_mass[order[i]] > 0)) {
            fail(c, MBK_EPARSE, j->line, where_elem(&w, "joint", str(c, j->name)),
                 "the joint moves only links without mass or inertia (child '%.200s'), so its motion "
                 "is undetermined; give that link an <inertial>", str(c, l->name));
            goto done;
        }
    }
    if (!world && !(sub_mass[root] > 0) && o->floating_base) {
        fail(c, MBK_EPARSE, c->links[root].line, where_elem(&w, "link", str(c, c->links[root].name)),
             "floating_base needs mass: the robot has no link with an <inertial>");
        goto done;
    }

    sys = mbk_multibody_create(c->robot_name ? str(c, c->robot_name) : "urdf");
    if (!sys) {
        lib_fail(c, 0, NULL, "creating the System");
        goto done;
    }
    mbk_matter *m = mbk_multibody_upd_matter(sys);
    mbk_forces *f = mbk_multibody_upd_forces(sys);
    int nb = nl + (world ? 0 : 1);
    info->nb = nb;
    info->link_name = mbk_calloc((size_t)nb, sizeof *info->link_name);
    info->joint_name = mbk_calloc((size_t)nb, sizeof *info->joint_name);
    info->type = mbk_calloc((size_t)nb, 1);
    if (!m || !f || !info->link_name || !info->joint_name || !info->type) {
        fail(c, MBK_ENOMEM, 0, NULL, "out of memory");
        goto done;
    }
    info->type[0] = J_NTYPES;
    const mbk_vec3 ex = mbk_vec3_make(1, 0, 0), ey = mbk_vec3_make(0, 1, 0), ez = mbk_vec3_make(0, 0, 1);
    for (int i = 0; i < nl; ++i) {
        int li = order[i];
        const ur_link *l = &c->links[li];
        const char *wl = where_elem(&w, "link", str(c, l->name));
        if (i == 0 && world) {
            body[li] = 0;
            info->link_name[0] = l->name;
            if (mbk_matter_set_body_name(m, 0, str(c, l->name)) < 0) {
                lib_fail(c, l->line, wl, "naming Ground");
                goto done;
            }
            continue;
        }
        mbk_mass_props mp = link_mass_props(l);
        mbk_transform X_PF = mbk_transform_identity(), X_BM = mbk_transform_identity();
        mbk_mobilizer mob;
        int parent = 0, type;
        long line = l->line;
        const char *wj = wl;
        where_buf wjb;
        if (i == 0) {
            type = o->floating_base ? J_FLOATING : J_FIXED;
            mob = o->floating_base ? mbk_mobilizer_free() : mbk_mobilizer_weld();
        } else {
            const ur_joint *j = &c->joints[l->parent_joint];
            wj = where_elem(&wjb, "joint", str(c, j->name));
            line = j->line;
            type = j->type;
            parent = body[j->parent_link];
            X_PF = origin_transform(&j->origin);
            mbk_vec3 a = mbk_vec3_make(j->axis[0], j->axis[1], j->axis[2]);
            mbk_mat33 R = mbk_mat33_identity();
            switch (type) {
            case J_REVOLUTE:
            case J_CONTINUOUS: mob = mbk_mobilizer_pin(), R = rotation_onto(ez, a, ex); break;
            case J_PRISMATIC: mob = mbk_mobilizer_slider(), R = rotation_onto(ex, a, ey); break;
            case J_PLANAR: mob = mbk_mobilizer_planar(), R = rotation_onto(ez, a, ex); break;
            case J_FLOATING: mob = mbk_mobilizer_free(); break;
            default: mob = mbk_mobilizer_weld(); break;
            }
            /* turn the mobilizer's axis onto the joint axis on both sides, so B = the child link frame */
            X_PF.R = mbk_mat33_mul(X_PF.R, R);
            X_BM.R = R;
            info->joint_name[i + (world ? 0 : 1)] = j->name;
        }
        int b = mbk_matter_add_body(m, parent, &X_PF, &mp, &X_BM, mob);
        if (b < 0) {
            lib_fail(c, line, wj, "adding the body");
            goto done;
        }
        body[li] = b;
        info->link_name[b] = l->name;
        info->type[b] = (unsigned char)type;
        if (mbk_matter_set_body_name(m, b, str(c, l->name)) < 0) {
            lib_fail(c, l->line, wl, "naming the body");
            goto done;
        }
    }

    /* forces: gravity, then per joint stops and dampers */
    int g = mbk_force_add_gravity(f, o->gravity);
    if (g < 0 || mbk_force_set_name(f, g, "gravity") < 0) {
        lib_fail(c, c->robot_line, "<robot>", "adding gravity");
        goto done;
    }
    for (int ji = 0; ji < c->njoints; ++ji) {
        const ur_joint *j = &c->joints[ji];
        int b = body[j->child_link];
        char name[64];
        const char *wj = where_elem(&w, "joint", str(c, j->name));
        if (o->limits_as_stops && j->limit_line && (j->type == J_REVOLUTE || j->type == J_PRISMATIC) &&
            j->lower < j->upper) {
            int k = mbk_force_add_mobility_linear_stop(f, b, 0, o->stop_stiffness, o->stop_dissipation, j->lower,
                                                       j->upper);
            snprintf(name, sizeof name, "limit:%s", str(c, j->name));
            if (k < 0 || mbk_force_set_name(f, k, name) < 0) {
                lib_fail(c, j->limit_line, wj, "adding the limit stop");
                goto done;
            }
        }
        if (j->limit_line && j->type == J_CONTINUOUS && j->lower < j->upper)
            warn(c, j->limit_line, "%s: the limits of a continuous joint are ignored", wj);
        if (j->friction != 0) warn(c, j->dynamics_line, "%s: friction is not supported and is ignored", wj);
        if (o->damping_as_dampers && j->damping > 0 && j->type != J_FIXED) {
            int nu = j->type == J_PLANAR ? 3 : j->type == J_FLOATING ? 6 : 1;
            for (int k = 0; k < nu; ++k) {
                int e = mbk_force_add_mobility_linear_damper(f, b, k, j->damping);
                snprintf(name, sizeof name, "damping:%s", str(c, j->name));
                if (e < 0 || mbk_force_set_name(f, e, name) < 0) {
                    lib_fail(c, j->dynamics_line, wj, "adding the damper");
                    goto done;
                }
            }
        }
        if (o->mimic_as_couplers && j->mimic_joint >= 0) {
            /* q = multiplier q_other + offset as the coupler f(q, q_other) = q - multiplier q_other - offset = 0 */
            const double coef[3] = {1.0, -j->multiplier, -j->offset};
            const int cb[2] = {b, body[c->joints[j->mimic_joint].child_link]}, cq[2] = {0, 0};
            if (mbk_constraint_add_coordinate_coupler(m, mbk_function_linear(coef, 2), cb, cq, 2) < 0) {
                lib_fail(c, j->mimic_line, wj, "adding the mimic coupler");
                goto done;
            }
        }
    }

    /* the names go with the System: the info subsystem takes the pool */
    info->robot = c->robot_name;
    info->pool = c->pool;
    if (mbk_system_add_subsystem(sys, &urdf_info_ops, info) < 0) {
        info->pool = NULL;
        lib_fail(c, 0, NULL, "adding the names");
        goto done;
    }
    c->pool = NULL;
    info = NULL;
    if (o->realize_topology && mbk_system_realize_topology(sys) < 0) {
        lib_fail(c, c->robot_line, "<robot>", "realizing the topology");
        goto done;
    }
done:
    mbk_free(order);
    mbk_free(body);
    mbk_free(sub_mass);
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
    return o;
}

static int check_options(const mbk_urdf_options *o, const char *fn)
{
    if (!mbk_vec3_is_finite(o->gravity))
        return mbk_set_error(MBK_EINVAL, "%s: options.gravity must be finite", fn);
    if (!(o->stop_stiffness >= 0) || !isfinite(o->stop_stiffness) || !(o->stop_dissipation >= 0) ||
        !isfinite(o->stop_dissipation))
        return mbk_set_error(MBK_EINVAL, "%s: options.stop_stiffness and stop_dissipation must be finite and >= 0",
                             fn);
    if (o->max_bytes == 0) return mbk_set_error(MBK_EINVAL, "%s: options.max_bytes must be > 0", fn);
    return MBK_OK;
}

static int load_text(const char *src, const char *text, size_t len, const mbk_urdf_options *o, mbk_system **out)
{
    ur_ctx c;
    memset(&c, 0, sizeof c);
    c.o = o;
    c.src = src;
    name_ix *lix = NULL, *jix = NULL;
    int root = -1;
    if (pool_add(&c, "") != 0 || c.status) goto done; /* offset 0 is "" */
    if (parse_xml(&c, text, len)) goto done;
    if (!(lix = build_index(&c, false)) || !(jix = build_index(&c, true))) goto done;
    if (check_robot(&c, lix, jix, &root)) goto done;
    build(&c, root, out);
done:
    mbk_free(lix);
    mbk_free(jix);
    mbk_free(c.links);
    mbk_free(c.joints);
    mbk_free(c.pool);
    if (c.status) return mbk_set_error(c.status, "%s", c.msg);
    return MBK_OK;
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
    return load_text(src, xml, len, o, out);
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
    rc = load_text(path, buf, len, o, out);
    mbk_free(buf);
    return rc;
}
