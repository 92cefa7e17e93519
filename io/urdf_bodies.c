/* The rigid bodies of a URDF robot: links joined by fixed joints move as one
 * rigid body, and the loader judges those bodies, not each link alone.
 *
 * Refused (errors), because the dynamics would be undefined:
 *   - a moving rigid body whose combined inertia is indefinite beyond round-off
 *     (its kinetic energy could be negative);
 *   - a joint whose motion meets no inertia: D = H^T P H, with P the
 *     articulated-body inertia of what the joint moves and H its directions of
 *     motion, is singular (a point mass on the axis, a rod about its own axis,
 *     links without mass). P is computed at a generic pose (joint angles that
 *     are no special values), so only singularities that hold at every pose
 *     are refused, not a momentary alignment of axes.
 * Loaded with one warning per link, naming the link, its line and by how much:
 *   - principal moments that break the triangle inequality (no rigid body has
 *     them; the dynamics are defined): used as given;
 *   - an inertia that is not positive semidefinite, in a rigid body whose
 *     combined inertia is: the mass properties of the whole rigid body are
 *     given to the link whose joint moves it (the others carry none), which
 *     leaves the dynamics exactly those of the rigid body; on a link fixed to
 *     Ground its inertia is not used (it never moves).
 * Repairs (options, each reported as a warning): min_mass and min_inertia floors
 * for the links of moving bodies, balance_inertia (the nearest realizable
 * inertia). strict_inertia refuses every unrealizable link as before. */
#include <math.h>
#include <stdio.h>
#include <string.h>

#include "mbk/alloc.h"
#include "mbk/status.h"

#include "urdf_impl.h"

#define str ur_str

/* D pivots below this fraction of the inertia the joint's subtree has in that
   direction's block are singular (round-off is ~1e-16 of it; a real body would need a
   radius of gyration 1e-5 times its size). */
#define UR_SINGULAR_RTOL 1e-10
/* A rigid body's combined central inertia may be negative by this fraction of the
   inertias that were added up (cancellation); the excess is clamped to zero. */
#define UR_COMBINED_RTOL 1e-9

/* ------------------------------------------------------------------ */
/* Small linear algebra                                                 */
/* ------------------------------------------------------------------ */

/* A = V diag(ev) V^T (cyclic Jacobi); ev ascending, the columns of V the axes. */
static void eig3(mbk_mat33 A, double ev[3], mbk_mat33 *V)
{
    double a[3][3], v[3][3] = {{1, 0, 0}, {0, 1, 0}, {0, 0, 1}};
    memcpy(a, A.m, sizeof a);
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
                    double vkp = v[k][p], vkq = v[k][q];
                    v[k][p] = cs * vkp - sn * vkq;
                    v[k][q] = sn * vkp + cs * vkq;
                }
                for (int k = 0; k < 3; ++k) { /* rotate rows p, q */
                    double apk = a[p][k], aqk = a[q][k];
                    a[p][k] = cs * apk - sn * aqk;
                    a[q][k] = sn * apk + cs * aqk;
                }
            }
    }
    int idx[3] = {0, 1, 2};
    for (int i = 0; i < 3; ++i)
        for (int j = i + 1; j < 3; ++j)
            if (a[idx[j]][idx[j]] < a[idx[i]][idx[i]]) {
                int t = idx[i];
                idx[i] = idx[j];
                idx[j] = t;
            }
    for (int i = 0; i < 3; ++i) {
        ev[i] = a[idx[i]][idx[i]];
        if (V)
            for (int k = 0; k < 3; ++k) V->m[k][i] = v[k][idx[i]];
    }
}

/* V diag(ev) V^T, exactly symmetric. */
static mbk_mat33 from_eig(const double ev[3], const mbk_mat33 *V)
{
    mbk_mat33 I = mbk_mat33_rotate_congruence(*V, mbk_mat33_diag(ev[0], ev[1], ev[2]));
    for (int r = 0; r < 3; ++r)
        for (int k = r + 1; k < 3; ++k) I.m[r][k] = I.m[k][r] = 0.5 * (I.m[r][k] + I.m[k][r]);
    return I;
}

/* The nearest (Frobenius) principal moments a rigid body can have: ascending
   a <= b <= c is realizable iff a + b >= c (then a >= 0 too). Project onto that face,
   or onto its edge (0, m, m) when the face point would have a < 0. */
static void balance(double ev[3])
{
    double a = ev[0], b = ev[1], c = ev[2], d = c - a - b;
    if (d <= 0) return;
    if (a + d / 3 >= 0) {
        ev[0] = a + d / 3, ev[1] = b + d / 3, ev[2] = c - d / 3;
    } else {
        double m = fmax(0.0, 0.5 * (b + c));
        ev[0] = 0, ev[1] = m, ev[2] = m;
    }
}

typedef double m66[6][6];

static void to66(mbk_spatial_mat M, m66 A)
{
    for (int r = 0; r < 3; ++r)
        for (int k = 0; k < 3; ++k) {
            A[r][k] = M.m00.m[r][k];
            A[r][k + 3] = M.m01.m[r][k];
            A[r + 3][k] = M.m10.m[r][k];
            A[r + 3][k + 3] = M.m11.m[r][k];
        }
}

static mbk_spatial_mat from66(m66 A)
{
    mbk_spatial_mat M;
    for (int r = 0; r < 3; ++r)
        for (int k = 0; k < 3; ++k) {
            M.m00.m[r][k] = A[r][k];
            M.m01.m[r][k] = A[r][k + 3];
            M.m10.m[r][k] = A[r + 3][k];
            M.m11.m[r][k] = A[r + 3][k + 3];
        }
    return M;
}

/* P (in the child frame, about its origin) moved to the parent frame and origin. */
static mbk_spatial_mat to_parent(mbk_spatial_mat P, mbk_transform X_PC)
{
    return mbk_spatial_inertia_shift(mbk_spatial_inertia_rotate(X_PC.R, P), mbk_vec3_neg(X_PC.p));
}

/* ------------------------------------------------------------------ */
/* Per-link judgement                                                   */
/* ------------------------------------------------------------------ */

enum { JUDGED_OK, JUDGED_TRIANGLE, JUDGED_INDEFINITE };
enum { OUT_AS_GIVEN, OUT_MERGED, OUT_NOT_USED, OUT_REFUSED };

typedef struct link_note {
    double ev[3];         /* principal moments as judged (after repairs) */
    double ev_given[3];   /* before balance_inertia */
    double old_mass;
    bool mass_floor, inertia_floor, balanced;
    int judged, outcome;
} link_note;

static const char *link_where(where_buf *w, const ur_ctx *c, const ur_link *l, long *line)
{
    *line = l->inertia_line ? l->inertia_line : l->inertial_line ? l->inertial_line : l->line;
    return l->inertia_line ? ur_where_in(w, "inertia", "link", str(c, l->name)) : ur_where_elem(w, "link", str(c, l->name));
}

/* How far principal moments a <= b <= c are from realizable, for messages. */
static void describe_unrealizable(char *buf, size_t n, const double ev[3])
{
    if (ev[0] < -1e-12 * fabs(ev[2]) && ev[2] > 0)
        snprintf(buf, n, "principal moments %.6g, %.6g, %.6g: not positive semidefinite, the negative one %.3g%% of "
                 "the largest", ev[0], ev[1], ev[2], 100 * fabs(ev[0]) / ev[2]);
    else if (ev[2] <= 0)
        snprintf(buf, n, "principal moments %.6g, %.6g, %.6g: none positive", ev[0], ev[1], ev[2]);
    else
        snprintf(buf, n, "principal moments %.6g, %.6g, %.6g break the triangle inequality (%.6g + %.6g < %.6g, "
                 "short by %.3g%% of the largest)", ev[0], ev[1], ev[2], ev[0], ev[1], ev[2],
                 100 * (ev[2] - ev[0] - ev[1]) / ev[2]);
}

/* The one warning of a link: its repairs and what is odd about it. */
static void warn_link(ur_ctx *c, const ur_link *l, const link_note *n, const char *carrier)
{
    char msg[2400] = "", part[1000];
    size_t len = 0;
#define ADD(...)                                                                                  \
    do {                                                                                          \
        snprintf(part, sizeof part, __VA_ARGS__);                                                 \
        len += (size_t)snprintf(msg + len, len < sizeof msg ? sizeof msg - len : 0, "%s%s", len ? "; " : "", part); \
    } while (0)
    if (n->mass_floor) ADD("mass %g kg raised to options.min_mass = %g kg", n->old_mass, c->o->min_mass);
    if (n->inertia_floor) ADD("principal moments raised to at least options.min_inertia = %g kg m^2", c->o->min_inertia);
    if (n->balanced) {
        char d[260];
        describe_unrealizable(d, sizeof d, n->ev_given);
        ADD("options.balance_inertia replaced the %s by the nearest realizable ones, %.6g, %.6g, %.6g", d, n->ev[0],
            n->ev[1], n->ev[2]);
    }
    if (n->judged == JUDGED_TRIANGLE) {
        char d[260];
        describe_unrealizable(d, sizeof d, n->ev);
        ADD("the %s: no rigid body has this inertia; it is used as given, since the dynamics stay defined "
            "(options.balance_inertia replaces it by the nearest realizable one)", d);
    } else if (n->judged == JUDGED_INDEFINITE && n->outcome == OUT_MERGED) {
        char d[260];
        describe_unrealizable(d, sizeof d, n->ev);
        ADD("the inertia's %s; the rigid body it belongs to (the links welded to '%.200s') has a positive "
            "semidefinite combined inertia, which link '%.200s' carries for all of them", d, carrier, carrier);
    } else if (n->judged == JUDGED_INDEFINITE && n->outcome == OUT_NOT_USED) {
        char d[260];
        describe_unrealizable(d, sizeof d, n->ev);
        ADD("the inertia's %s; the link is fixed to Ground, so its inertia is not used (its mass is)", d);
    }
#undef ADD
    if (!len) return;
    where_buf w;
    long line;
    const char *wh = link_where(&w, c, l, &line);
    ur_warn(c, line, wh, "%s", msg);
}

/* Mass properties too large to check and simulate: the products of masses, inertias
   and distances would overflow (an error, whatever the options). */
static bool too_large(ur_ctx *c, const ur_link *l, const mbk_mass_props *mp)
{
    where_buf w;
    double s = mbk_mat33_max_abs(mp->inertia);
    if (mp->mass > MBK_MASS_PROPS_MAX)
        ur_fail(c, MBK_EPARSE, l->mass_line, ur_where_in(&w, "mass", "link", str(c, l->name)),
                "the mass %g kg is too large to check and simulate: the limit is %g kg (MBK_MASS_PROPS_MAX), "
                "beyond which products of masses, inertias and distances overflow; use larger units",
                mp->mass, MBK_MASS_PROPS_MAX);
    else if (s > MBK_MASS_PROPS_MAX)
        ur_fail(c, MBK_EPARSE, l->inertia_line, ur_where_in(&w, "inertia", "link", str(c, l->name)),
                "the inertia (largest entry %g kg m^2) is too large to check and simulate: the limit is %g "
                "kg m^2 (MBK_MASS_PROPS_MAX), beyond which its minors and the dynamics overflow; use larger "
                "units", s, MBK_MASS_PROPS_MAX);
    else
        return false;
    return true;
}

/* Today's per-link checks (options.strict_inertia). */
static void strict_check(ur_ctx *c, const ur_link *l, mbk_mat33 I, const double ev[3])
{
    where_buf w;
    const char *wh = ur_where_in(&w, "inertia", "link", str(c, l->name));
    double s = mbk_mat33_max_abs(I);
    if (l->mass > 0 && !mbk_mat33_is_spd(I))
        ur_fail(c, MBK_EPARSE, l->inertia_line, wh,
                "the inertia is not positive definite (principal moments %.6g, %.6g, %.6g); a body "
                "with mass needs a positive definite inertia (options.strict_inertia)", ev[0], ev[1], ev[2]);
    else if (l->mass == 0 && s > 0 && !mbk_mat33_is_psd(I))
        ur_fail(c, MBK_EPARSE, l->inertia_line, wh,
                "the inertia is not positive semidefinite (principal moments %.6g, %.6g, %.6g) "
                "(options.strict_inertia)", ev[0], ev[1], ev[2]);
    else if (!mbk_mass_props_is_valid(mbk_mass_props_from_central(l->mass, mbk_vec3_zero(), I)))
        ur_fail(c, MBK_EPARSE, l->inertia_line, wh,
                "the principal moments %.6g, %.6g, %.6g break the triangle inequality (%.6g + %.6g < %.6g): "
                "no rigid body has this inertia (options.strict_inertia)",
                ev[0], ev[1], ev[2], ev[0], ev[1], ev[2]);
}

/* ------------------------------------------------------------------ */
/* Joints: generic pose and directions of motion                        */
/* ------------------------------------------------------------------ */

/* X_PC of a joint at a generic pose: the joint origin, then a turn by an angle that is
   no special value (the golden-ratio sequence) about its axis; slides at 0. */
static mbk_transform generic_pose(const ur_joint *j, int index)
{
    mbk_transform X = ur_origin_transform(&j->origin);
    double angle = 0.5 + fmod(0.6180339887498949 * (index + 1), 1.0) * 2.5;
    mbk_vec3 a = mbk_vec3_make(j->axis[0], j->axis[1], j->axis[2]);
    if (j->type == J_FLOATING) a = mbk_vec3_normalize(mbk_vec3_make(1, 2, 3));
    if (j->type == J_REVOLUTE || j->type == J_CONTINUOUS || j->type == J_PLANAR || j->type == J_FLOATING)
        X.R = mbk_mat33_mul(X.R, mbk_mat33_from_axis_angle(a, angle));
    return X;
}

/* Directions of motion in the child frame about its origin: columns (angular, linear);
   *linear[k] tells which block a column lives in. Returns their number. */
static int motion_directions(const ur_joint *j, double H[6][6], bool linear[6])
{
    memset(H, 0, 36 * sizeof(double));
    mbk_vec3 a = j ? mbk_vec3_make(j->axis[0], j->axis[1], j->axis[2]) : mbk_vec3_zero();
    int type = j ? j->type : J_FLOATING;
    switch (type) {
    case J_REVOLUTE:
    case J_CONTINUOUS:
        H[0][0] = a.x, H[1][0] = a.y, H[2][0] = a.z, linear[0] = false;
        return 1;
    case J_PRISMATIC:
        H[3][0] = a.x, H[4][0] = a.y, H[5][0] = a.z, linear[0] = true;
        return 1;
    case J_PLANAR: {
        /* rotation about the normal, translations in the plane */
        mbk_vec3 t1 = mbk_vec3_cross(a, fabs(a.x) < 0.9 ? mbk_vec3_make(1, 0, 0) : mbk_vec3_make(0, 1, 0));
        t1 = mbk_vec3_normalize(t1);
        mbk_vec3 t2 = mbk_vec3_cross(a, t1);
        H[0][0] = a.x, H[1][0] = a.y, H[2][0] = a.z, linear[0] = false;
        H[3][1] = t1.x, H[4][1] = t1.y, H[5][1] = t1.z, linear[1] = true;
        H[3][2] = t2.x, H[4][2] = t2.y, H[5][2] = t2.z, linear[2] = true;
        return 3;
    }
    default:
        for (int k = 0; k < 6; ++k) H[k][k] = 1.0, linear[k] = k >= 3;
        return 6;
    }
}

/* D = H^T P H factored as L diag(d) L^T; a pivot at or below tol * scale of its block is
   singular: returns the first such column, or -1. */
static int factor_d(m66 P, double H[6][6], int k, const double scale[2], const bool linear[6], double D[6][6],
                    double d[6])
{
    double PH[6][6] = {{0}};
    for (int r = 0; r < 6; ++r)
        for (int q = 0; q < k; ++q)
            for (int s = 0; s < 6; ++s) PH[r][q] += P[r][s] * H[s][q];
    for (int p = 0; p < k; ++p)
        for (int q = 0; q < k; ++q) {
            double v = 0;
            for (int r = 0; r < 6; ++r) v += H[r][p] * PH[r][q];
            D[p][q] = v;
        }
    double L[6][6] = {{0}};
    for (int p = 0; p < k; ++p) {
        double v = D[p][p];
        for (int q = 0; q < p; ++q) v -= L[p][q] * L[p][q] * d[q];
        if (!(v > UR_SINGULAR_RTOL * scale[linear[p]])) return p;
        d[p] = v;
        L[p][p] = 1.0;
        for (int r = p + 1; r < k; ++r) {
            double x = D[r][p];
            for (int q = 0; q < p; ++q) x -= L[r][q] * L[p][q] * d[q];
            L[r][p] = x / v;
        }
    }
    /* keep L in D's strict lower triangle for the solve */
    for (int p = 0; p < k; ++p)
        for (int q = 0; q < p; ++q) D[p][q] = L[p][q];
    return -1;
}

/* P - (P H) D^-1 (P H)^T: what a joint passes to its parent of the inertia it moves. */
static void articulate(m66 P, double H[6][6], int k, double D[6][6], const double d[6])
{
    double U[6][6] = {{0}}; /* P H */
    for (int r = 0; r < 6; ++r)
        for (int q = 0; q < k; ++q)
            for (int s = 0; s < 6; ++s) U[r][q] += P[r][s] * H[s][q];
    double W[6][6]; /* D^-1 U^T, column by column: L y = u, y /= d, L^T x = y */
    for (int c = 0; c < 6; ++c) {
        double y[6];
        for (int p = 0; p < k; ++p) {
            y[p] = U[c][p];
            for (int q = 0; q < p; ++q) y[p] -= D[p][q] * y[q];
        }
        for (int p = 0; p < k; ++p) y[p] /= d[p];
        for (int p = k - 1; p >= 0; --p)
            for (int q = p + 1; q < k; ++q) y[p] -= D[q][p] * y[q];
        for (int p = 0; p < k; ++p) W[p][c] = y[p];
    }
    for (int r = 0; r < 6; ++r)
        for (int c = 0; c < 6; ++c) {
            double v = 0;
            for (int p = 0; p < k; ++p) v += U[r][p] * W[p][c];
            P[r][c] -= v;
        }
    for (int r = 0; r < 6; ++r)
        for (int c = r + 1; c < 6; ++c) P[r][c] = P[c][r] = 0.5 * (P[r][c] + P[c][r]);
}

/* "'a' (line 5), with 'b' (line 9), 'c' (line 12) welded to it": the links of a rigid body. */
static void body_links(const ur_ctx *c, const int *base, int b, char *buf, size_t n)
{
    size_t len = (size_t)snprintf(buf, n, "link '%.100s' (line %ld)", str(c, c->links[b].name), c->links[b].line);
    int shown = 0, more = 0;
    for (int l = 0; l < c->nlinks; ++l) {
        if (l == b || base[l] != b) continue;
        if (shown < 4 && len < n) {
            len += (size_t)snprintf(buf + len, n - len, "%s'%.100s' (line %ld)", shown ? ", " : ", with ",
                                    str(c, c->links[l].name), c->links[l].line);
            shown++;
        } else {
            more++;
        }
    }
    if (len < n && more) len += (size_t)snprintf(buf + len, n - len, " and %d more", more);
    if (len < n && shown) snprintf(buf + len, n - len, " welded to it");
}

/* ------------------------------------------------------------------ */
/* The judgement                                                        */
/* ------------------------------------------------------------------ */

void ur_bodies_free(ur_bodies *b)
{
    mbk_free(b->mp);
    mbk_free(b->moving);
    b->mp = NULL;
    b->moving = NULL;
}

/* What the judgement works with. */
typedef struct ur_judge {
    ur_ctx *c;
    const int *order;   /* the links depth-first, root first */
    bool world;         /* the root link is Ground */
    int *base;          /* per link: the link whose joint moves its rigid body (or the root) */
    mbk_transform *X;   /* per link: its pose in its base's frame */
    link_note *note;    /* per link: what was found and done */
    unsigned char *bad; /* per rigid body (by its base): an indefinite link, to be combined */
    ur_bodies *out;     /* the mass properties and which links move */
} ur_judge;

/* Rigid bodies: each link's base and its pose in the base's frame; which links move. */
static void find_rigid_bodies(ur_judge *J)
{
    const ur_ctx *c = J->c;
    const int root = J->order[0];
    for (int i = 0; i < c->nlinks; ++i) {
        const int l = J->order[i];
        const ur_joint *j = i == 0 ? NULL : &c->joints[c->links[l].parent_joint];
        if (j && j->type == J_FIXED) {
            J->base[l] = J->base[j->parent_link];
            J->X[l] = mbk_transform_compose(J->X[j->parent_link], ur_origin_transform(&j->origin));
        } else {
            J->base[l] = l, J->X[l] = mbk_transform_identity();
        }
        J->out->moving[l] = J->base[l] != root || (!J->world && c->o->floating_base);
    }
}

/* Link l on its own: its mass properties with the repairs the options ask for, then
   what is odd about them (errors for a missing <mass> or <inertia>, a too large one or,
   with options.strict_inertia, an unrealizable one). */
static void judge_link(ur_judge *J, int l)
{
    ur_ctx *c = J->c;
    const mbk_urdf_options *o = c->o;
    const ur_link *L = &c->links[l];
    link_note *n = &J->note[l];
    where_buf w;
    J->out->mp[l] = mbk_mass_props_from_central(0.0, mbk_vec3_zero(), mbk_mat33_zero());
    if (J->world && l == J->order[0]) return; /* Ground */
    if (L->inertial_line) {
        const char *wh = ur_where_in(&w, "inertial", "link", str(c, L->name));
        if (!L->mass_line) ur_fail(c, MBK_EPARSE, L->inertial_line, wh, "<mass> is missing");
        if (!L->inertia_line) ur_fail(c, MBK_EPARSE, L->inertial_line, wh, "<inertia> is missing");
        if (!L->mass_line || !L->inertia_line) return;
    }
    mbk_mass_props mp = ur_link_mass_props(L);
    if (L->inertial_line && too_large(c, L, &mp)) return;
    mbk_mat33 V;
    eig3(mp.inertia, n->ev, &V);
    bool repaired = false;
    const bool moving = J->out->moving[l];
    if (moving && o->min_mass > 0 && mp.mass < o->min_mass) {
        n->mass_floor = true, n->old_mass = mp.mass;
        mp.mass = o->min_mass;
        repaired = true;
    }
    if (moving && o->min_inertia > 0 && n->ev[0] < o->min_inertia) {
        for (int k = 0; k < 3; ++k) n->ev[k] = fmax(n->ev[k], o->min_inertia);
        n->inertia_floor = repaired = true;
    }
    if (repaired) mp.inertia = from_eig(n->ev, &V);
    if (o->balance_inertia && (L->inertial_line || repaired) && !mbk_mass_props_is_valid(mp)) {
        memcpy(n->ev_given, n->ev, sizeof n->ev);
        balance(n->ev);
        mp.inertia = from_eig(n->ev, &V);
        n->balanced = repaired = true;
    }
    if (o->strict_inertia && L->inertial_line) {
        const double *I6 = L->I;
        mbk_mat33 Ii = {{{I6[0], I6[3], I6[4]}, {I6[3], I6[1], I6[5]}, {I6[4], I6[5], I6[2]}}};
        strict_check(c, L, repaired ? mp.inertia : Ii, n->ev);
    }
    if (mbk_mass_props_is_valid(mp)) n->judged = JUDGED_OK;
    else if (mbk_mat33_is_psd(mp.inertia)) n->judged = JUDGED_TRIANGLE;
    else n->judged = JUDGED_INDEFINITE;
    J->out->mp[l] = mp;
}

/* The moving rigid body based at b, which has an indefinite link: its links' mass
   properties summed into b's when the sum is positive semidefinite (up to round-off),
   else an error naming its links. */
static void combine_body(ur_judge *J, int b)
{
    ur_ctx *c = J->c;
    const int nl = c->nlinks;
    double M = 0, scale = 0;
    mbk_vec3 h = mbk_vec3_zero();
    mbk_mat33 Jo = mbk_mat33_zero(); /* about b's origin */
    for (int l = 0; l < nl; ++l) {
        if (J->base[l] != b) continue;
        const mbk_mass_props *mp = &J->out->mp[l];
        mbk_vec3 cb = mbk_transform_apply_point(J->X[l], mp->com);
        mbk_mat33 Ic = mbk_mat33_rotate_congruence(J->X[l].R, mp->inertia);
        M += mp->mass;
        h = mbk_vec3_add(h, mbk_vec3_scale(cb, mp->mass));
        Jo = mbk_mat33_add(Jo, mbk_mat33_add(Ic, mbk_inertia_of_point_mass(mp->mass, cb)));
        scale += mbk_mat33_max_abs(Ic) + mp->mass * mbk_vec3_norm2(cb);
    }
    mbk_vec3 com = M > 0 ? mbk_vec3_scale(h, 1.0 / M) : mbk_vec3_zero();
    mbk_mat33 Ic = mbk_mat33_sub(Jo, mbk_inertia_of_point_mass(M, com)), V;
    for (int r = 0; r < 3; ++r)
        for (int k = r + 1; k < 3; ++k) Ic.m[r][k] = Ic.m[k][r] = 0.5 * (Ic.m[r][k] + Ic.m[k][r]);
    double ev[3];
    eig3(Ic, ev, &V);
    if (ev[0] < -UR_COMBINED_RTOL * scale) {
        char links[600];
        where_buf w;
        body_links(c, J->base, b, links, sizeof links);
        const ur_link *B = &c->links[b];
        const ur_joint *j = B->parent_joint >= 0 ? &c->joints[B->parent_joint] : NULL;
        ur_fail(c, MBK_EPARSE, j ? j->line : B->line,
                j ? ur_where_elem(&w, "joint", str(c, j->name)) : ur_where_elem(&w, "link", str(c, B->name)),
                "the rigid body it moves (%s) has a combined inertia that is not positive semidefinite "
                "(principal moments %.6g, %.6g, %.6g), so its kinetic energy could be negative; fix the "
                "inertias its links' warnings name (or set options.balance_inertia)", links, ev[0], ev[1], ev[2]);
        for (int l = 0; l < nl; ++l)
            if (J->base[l] == b && J->note[l].judged == JUDGED_INDEFINITE) J->note[l].outcome = OUT_REFUSED;
        return;
    }
    J->bad[b] = 0;
    if (ev[0] < 0) { /* round-off of the sum: clamp */
        for (int k = 0; k < 3; ++k) ev[k] = fmax(ev[k], 0.0);
        Ic = from_eig(ev, &V);
    }
    for (int l = 0; l < nl; ++l) {
        if (J->base[l] != b) continue;
        J->out->mp[l] = mbk_mass_props_from_central(0.0, mbk_vec3_zero(), mbk_mat33_zero());
        if (J->note[l].judged == JUDGED_INDEFINITE) J->note[l].outcome = OUT_MERGED;
    }
    J->out->mp[b] = mbk_mass_props_from_central(M, com, Ic);
}

/* Rigid bodies with a link that is not even positive semidefinite: on Ground the
   link's inertia is dropped; a moving body is carried whole by its base link. */
static void combine_indefinite(ur_judge *J)
{
    const int nl = J->c->nlinks;
    for (int l = 0; l < nl; ++l) {
        if (J->note[l].judged != JUDGED_INDEFINITE) continue;
        if (!J->out->moving[l]) {
            J->note[l].outcome = OUT_NOT_USED;
            J->out->mp[l].inertia = mbk_mat33_zero();
        } else {
            J->bad[J->base[l]] = 1; /* to be combined */
        }
    }
    for (int b = 0; b < nl; ++b)
        if (J->base[b] == b && J->bad[b]) combine_body(J, b);
}

/* Joint j (NULL: the root's floating base) of link L cannot move what it carries:
   say why. linear_sing: the direction without inertia is a translation; scale: the
   largest moment and mass on the diagonal of what it carries. */
static void fail_undetermined(ur_judge *J, const ur_link *L, const ur_joint *j, int l, bool linear_sing,
                              const double scale[2])
{
    ur_ctx *c = J->c;
    const bool massless = scale[0] == 0 && scale[1] == 0;
    char links[600];
    where_buf w;
    body_links(c, J->base, l, links, sizeof links);
    if (!j && massless)
        ur_fail(c, MBK_EPARSE, L->line, ur_where_elem(&w, "link", str(c, L->name)),
                "floating_base needs mass: the robot has no link with an <inertial> (or set "
                "options.min_mass and min_inertia)");
    else if (!j)
        ur_fail(c, MBK_EPARSE, L->line, ur_where_elem(&w, "link", str(c, L->name)),
                "floating_base: the robot's motion as a whole is undetermined: it has no %s along one "
                "of the free directions (%s and all it carries); give it inertia, or set "
                "options.min_inertia", linear_sing ? "mass" : "inertia", links);
    else if (massless)
        ur_fail(c, MBK_EPARSE, j->line, ur_where_elem(&w, "joint", str(c, j->name)),
                "the joint moves only links without mass or inertia (child '%.200s'), so its motion "
                "is undetermined; give that link an <inertial> (or set options.min_mass and "
                "min_inertia)", str(c, L->name));
    else
        ur_fail(c, MBK_EPARSE, j->line, ur_where_elem(&w, "joint", str(c, j->name)),
                "the joint's motion is undetermined: what it moves (%s, and what they carry) has %s, "
                "at every pose; give link '%.200s' %s, or set options.min_inertia",
                links,
                j->type == J_PRISMATIC ? "no mass along its axis"
                : j->type == J_REVOLUTE || j->type == J_CONTINUOUS
                    ? "no inertia about its axis (a point mass on the axis, or a rod about its own axis)"
                    : "no inertia or mass along one of its directions of motion",
                str(c, L->name), j->type == J_PRISMATIC ? "mass" : "inertia about the axis");
}

/* Every joint's motion must meet inertia: articulated-body inertias P at a generic
   pose, tip to base, each in its link's frame about its origin (S: the plain sums,
   for the scales). P and S: nl zeroed spatial matrices. */
static void check_motions(ur_judge *J, mbk_spatial_mat *P, mbk_spatial_mat *S)
{
    ur_ctx *c = J->c;
    for (int i = c->nlinks - 1; i >= 0; --i) {
        const int l = J->order[i];
        const ur_link *L = &c->links[l];
        mbk_spatial_mat own = mbk_spatial_inertia_from_mass_props(J->out->mp[l]);
        P[l] = mbk_spatial_mat_add(P[l], own);
        S[l] = mbk_spatial_mat_add(S[l], own);
        const ur_joint *j = L->parent_joint >= 0 ? &c->joints[L->parent_joint] : NULL;
        bool moves = j ? j->type != J_FIXED : (!J->world && c->o->floating_base);
        m66 Pl;
        to66(P[l], Pl);
        if (moves) {
            double H[6][6], D[6][6], d[6], scale[2] = {0, 0};
            bool linear[6];
            int k = motion_directions(j, H, linear);
            for (int r = 0; r < 3; ++r) {
                scale[0] = fmax(scale[0], S[l].m00.m[r][r]);
                scale[1] = fmax(scale[1], S[l].m11.m[r][r]);
            }
            int sing = factor_d(Pl, H, k, scale, linear, D, d);
            if (sing < 0) articulate(Pl, H, k, D, d);
            else if (!J->bad[J->base[l]]) fail_undetermined(J, L, j, l, linear[sing], scale);
        }
        if (!j) continue;
        mbk_transform Xp = generic_pose(j, L->parent_joint);
        P[j->parent_link] = mbk_spatial_mat_add(P[j->parent_link], to_parent(from66(Pl), Xp));
        S[j->parent_link] = mbk_spatial_mat_add(S[j->parent_link], to_parent(S[l], Xp));
    }
}

int ur_judge_bodies(ur_ctx *c, const int *order, bool world, ur_bodies *out)
{
    const int nl = c->nlinks;
    ur_judge J = {c, order, world, mbk_malloc((size_t)nl * sizeof *J.base), mbk_malloc((size_t)nl * sizeof *J.X),
                  mbk_calloc((size_t)nl, sizeof *J.note), mbk_calloc((size_t)nl, 1), out};
    out->mp = mbk_calloc((size_t)nl, sizeof *out->mp);
    out->moving = mbk_calloc((size_t)nl, 1);
    mbk_spatial_mat *P = NULL, *S = NULL;
    if (!out->mp || !out->moving || !J.base || !J.X || !J.note || !J.bad) {
        ur_fail(c, MBK_ENOMEM, 0, NULL, "out of memory");
    } else {
        find_rigid_bodies(&J);
        for (int l = 0; l < nl; ++l) judge_link(&J, l);
    }
    if (!c->status) { /* not after a missing <mass> or <inertia>, or options.strict_inertia */
        combine_indefinite(&J);
        for (int l = 0; l < nl; ++l)
            if (!(world && l == order[0]) && J.note[l].outcome != OUT_REFUSED)
                warn_link(c, &c->links[l], &J.note[l], str(c, c->links[J.base[l]].name));
        P = mbk_calloc((size_t)nl, sizeof *P);
        S = mbk_calloc((size_t)nl, sizeof *S);
        if (!P || !S) ur_fail(c, MBK_ENOMEM, 0, NULL, "out of memory");
        else check_motions(&J, P, S);
    }
    const int rc = c->status ? -1 : 0;
    mbk_free(J.base);
    mbk_free(J.X);
    mbk_free(J.note);
    mbk_free(J.bad);
    mbk_free(P);
    mbk_free(S);
    if (rc) ur_bodies_free(out);
    return rc;
}
