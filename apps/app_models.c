/* Models of the mbk program: the built-ins and URDF files. */
#define _POSIX_C_SOURCE 200809L
#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <mbk/urdf.h>

#include "app.h"

static const double PI = 3.14159265358979323846;

void app_model_list_builtins(FILE *f)
{
    fprintf(f,
            "  builtin:chain:N    N-link 3-D pendulum (1 kg, 1 m links on pins about alternating\n"
            "                     y and z axes), N = 1..100000; builtin:chain:5 is the default\n"
            "  builtin:tree:D     binary tree of depth D (2^D - 1 bodies on ball joints, quaternions),\n"
            "                     hanging from Ground, D = 1..16\n"
            "  builtin:fourbar    planar four-bar linkage: crank, coupler and rocker on pins, the loop\n"
            "                     closed by a ball constraint (constraint solve and projection)\n"
            "  builtin:drop       a box on a free joint dropped spinning onto the ground: contact\n"
            "                     spheres at its corners (Hunt-Crossley contact with friction)\n"
            "  FILE.urdf          a URDF robot description (see docs/urdf.md)\n");
}

/* ---- per-body labels -------------------------------------------------------- */

static int alloc_labels(app_model *m, int nb)
{
    m->n_bodies = nb;
    m->joint_name = calloc((size_t)nb, sizeof *m->joint_name);
    m->joint_type = calloc((size_t)nb, sizeof *m->joint_type);
    m->body_name = calloc((size_t)nb, sizeof *m->body_name);
    if (!m->joint_name || !m->joint_type || !m->body_name) {
        fprintf(stderr, "mbk: out of memory\n");
        return -1;
    }
    snprintf(m->body_name[0], APP_NAME_MAX, "Ground");
    return 0;
}

/* src into dst (cap bytes), a long one cut on a UTF-8 character's boundary: a cut inside
   a character would leave a broken one in the viewer page and the messages. */
static void copy_name(char *dst, size_t cap, const char *src)
{
    snprintf(dst, cap, "%s", src);
    size_t n = strlen(dst), k = n;
    if (src[n] == '\0') return; /* not cut */
    while (k > 0 && ((unsigned char)dst[k - 1] & 0xC0) == 0x80) --k; /* back over continuation bytes */
    const unsigned char lead = k > 0 ? (unsigned char)dst[k - 1] : 0;
    const size_t len = lead >= 0xF0 ? 4 : lead >= 0xE0 ? 3 : lead >= 0xC0 ? 2 : 1;
    if (k > 0 && n - (k - 1) < len) dst[k - 1] = '\0'; /* its last character is incomplete */
}

static void label(app_model *m, int b, const char *body, const char *joint, const char *type)
{
    copy_name(m->body_name[b], APP_NAME_MAX, body);
    copy_name(m->joint_name[b], APP_NAME_MAX, joint);
    snprintf(m->joint_type[b], sizeof m->joint_type[b], "%s", type);
}

static int add_gravity(app_model *m, mbk_vec3 g)
{
    mbk_forces *f = mbk_multibody_upd_forces(m->sys);
    int k = mbk_force_add_gravity(f, g);
    if (k < 0 || mbk_force_set_name(f, k, "gravity") < 0) return app_fail("adding gravity");
    m->gravity_force = k;
    return 0;
}

/* ---- builtin:chain:N ------------------------------------------------------- */

static int chain_init(const app_model *m, mbk_state *s)
{
    double *q = mbk_state_upd_q(s);
    for (int i = 0; i + 1 < m->n_bodies; ++i) q[i] = 0.3 * (i % 5 + 1);
    return 0;
}

static int build_chain(app_model *m, int n)
{
    m->sys = mbk_multibody_create("chain");
    if (!m->sys || alloc_labels(m, n + 1)) return app_fail("creating the System");
    mbk_matter *mt = mbk_multibody_upd_matter(m->sys);
    mbk_mass_props box = mbk_mass_props_from_central(1.0, mbk_vec3_make(0.5, 0, 0),
                                                     mbk_mat33_diag(0.02 / 12, 1.01 / 12, 1.01 / 12));
    /* a Pin turns about F's z; to turn about the parent's y, tilt F and M alike by -90 deg about x */
    mbk_transform to_y = mbk_transform_from_axis_angle(mbk_vec3_make(1, 0, 0), -PI / 2, mbk_vec3_zero());
    int parent = 0;
    for (int i = 0; i < n; ++i) {
        mbk_transform X_BM = i % 2 == 0 ? to_y : mbk_transform_identity(), X_PF = X_BM;
        if (i > 0) X_PF.p = mbk_vec3_make(1, 0, 0);
        parent = mbk_matter_add_body(mt, parent, &X_PF, &box, &X_BM, mbk_mobilizer_pin());
        if (parent < 0) return app_fail("adding a link");
        char body[32], joint[32];
        snprintf(body, sizeof body, "link%d", i + 1);
        snprintf(joint, sizeof joint, "joint%d", i + 1);
        label(m, parent, body, joint, i % 2 == 0 ? "pin (y)" : "pin (z)");
        mbk_matter_set_body_name(mt, parent, body);
    }
    snprintf(m->title, sizeof m->title, "%d-link 3-D pendulum: 1 kg, 1 m links on pins about alternating y and z axes",
             n);
    m->init_state = chain_init;
    return add_gravity(m, mbk_vec3_make(0, 0, -9.81));
}

/* ---- builtin:tree:D -------------------------------------------------------- */

static int tree_init(const app_model *m, mbk_state *s)
{
    const mbk_matter *mt = mbk_multibody_get_matter(m->sys);
    double *q = mbk_state_upd_q(s);
    for (int b = 1; b < m->n_bodies; ++b) {
        int q0 = mbk_matter_get_body_q_start(mt, s, b);
        double a = 0.25 * (b % 2 ? 1 : -1);
        mbk_quat qt = mbk_quat_from_axis_angle(mbk_vec3_make(1, b % 3 - 1.0, 0.5), a);
        q[q0] = qt.w, q[q0 + 1] = qt.x, q[q0 + 2] = qt.y, q[q0 + 3] = qt.z;
    }
    return 0;
}

static int build_tree(app_model *m, int depth)
{
    int n = (1 << depth) - 1;
    m->sys = mbk_multibody_create("tree");
    if (!m->sys || alloc_labels(m, n + 1)) return app_fail("creating the System");
    mbk_matter *mt = mbk_multibody_upd_matter(m->sys);
    mbk_mass_props rod = mbk_mass_props_from_central(1.0, mbk_vec3_make(0, 0, -0.25),
                                                     mbk_mat33_diag(0.021, 0.021, 0.002));
    mbk_transform X_BM = mbk_transform_identity();
    /* heap numbering: body k (1-based) has children 2k and 2k+1, so parents come first */
    for (int k = 1; k <= n; ++k) {
        mbk_transform X_PF = mbk_transform_identity();
        int parent = k / 2;
        if (parent > 0) X_PF.p = mbk_vec3_make(k % 2 ? 0.2 : -0.2, 0, -0.5);
        int b = mbk_matter_add_body(mt, parent, &X_PF, &rod, &X_BM, mbk_mobilizer_ball());
        if (b < 0) return app_fail("adding a body");
        char body[32], joint[32];
        snprintf(body, sizeof body, "b%d", k);
        snprintf(joint, sizeof joint, "ball%d", k);
        label(m, b, body, joint, "ball");
        mbk_matter_set_body_name(mt, b, body);
    }
    snprintf(m->title, sizeof m->title,
             "binary tree of depth %d: %d bodies (1 kg, 0.5 m) on ball joints, hanging from Ground", depth, n);
    m->init_state = tree_init;
    return add_gravity(m, mbk_vec3_make(0, 0, -9.81));
}

/* ---- builtin:fourbar ------------------------------------------------------- */

enum { FB_CRANK = 1, FB_COUPLER = 2, FB_ROCKER = 3 };

static int fourbar_init(const app_model *m, mbk_state *s)
{
    double *q = mbk_state_upd_q(s), *u = mbk_state_upd_u(s);
    /* crank at 0.5 rad (kept), a guess for the others; assembly closes the loop */
    q[0] = 0.5, q[1] = -0.2, q[2] = 1.4;
    u[0] = 3.0, u[1] = 0, u[2] = 0;
    bool locked[3] = {true, false, false};
    if (mbk_system_assemble_locked(m->sys, s, 1e-12, locked) < 0) return app_fail("assembling the four-bar");
    if (mbk_system_project(m->sys, s, 1e-12) < 0) return app_fail("projecting the four-bar's velocities");
    return 0;
}

static int build_fourbar(app_model *m)
{
    m->sys = mbk_multibody_create("fourbar");
    if (!m->sys || alloc_labels(m, 4)) return app_fail("creating the System");
    mbk_matter *mt = mbk_multibody_upd_matter(m->sys);
    const double len[3] = {0.4, 1.0, 0.8}, mass[3] = {0.5, 1.0, 0.8};
    mbk_transform I = mbk_transform_identity();
    const char *names[3] = {"crank", "coupler", "rocker"};
    for (int i = 0; i < 3; ++i) {
        double L = len[i], mm = mass[i];
        mbk_mass_props mp = mbk_mass_props_from_central(mm, mbk_vec3_make(L / 2, 0, 0),
                                                        mbk_mat33_diag(mm * 0.0004, mm * L * L / 12, mm * L * L / 12));
        mbk_transform X_PF = I;
        int parent = 0;
        if (i == 1) parent = FB_CRANK, X_PF.p = mbk_vec3_make(len[0], 0, 0); /* coupler on the crank tip */
        if (i == 2) X_PF.p = mbk_vec3_make(1.0, 0, 0);                     /* rocker pivot on Ground */
        int b = mbk_matter_add_body(mt, parent, &X_PF, &mp, &I, mbk_mobilizer_pin());
        if (b < 0) return app_fail("adding a link");
        char joint[32];
        snprintf(joint, sizeof joint, "%s_pin", names[i]);
        label(m, b, names[i], joint, "pin (z)");
        mbk_matter_set_body_name(mt, b, names[i]);
    }
    /* close the loop: coupler tip on rocker tip (3 equations, one redundant in the plane) */
    if (mbk_constraint_add_ball(mt, FB_COUPLER, mbk_vec3_make(len[1], 0, 0), FB_ROCKER, mbk_vec3_make(len[2], 0, 0)) < 0)
        return app_fail("adding the loop constraint");
    static const app_connection loop = {FB_COUPLER, {1.0, 0, 0}, FB_ROCKER, {0.8, 0, 0}, "ball constraint"};
    m->connections = &loop, m->n_connections = 1; /* drawn by the viewer */
    snprintf(m->title, sizeof m->title,
             "four-bar linkage: crank 0.4 m, coupler 1 m, rocker 0.8 m, ground 1 m; loop closed by a ball "
             "constraint; gravity -y");
    m->init_state = fourbar_init;
    m->crank_body = FB_CRANK;
    return add_gravity(m, mbk_vec3_make(0, -9.81, 0));
}

/* ---- builtin:drop --------------------------------------------------------- */

/* A box on a free joint, tilted and spinning, dropped on the ground: Hunt-Crossley
   contact spheres at its 8 corners on the half-space z <= 0. */
enum { DROP_CORNERS = 8 };
static const double drop_half[3] = {0.2, 0.15, 0.1}, drop_r = 0.02;

static int drop_init(const app_model *m, mbk_state *s)
{
    (void)m;
    double *q = mbk_state_upd_q(s), *u = mbk_state_upd_u(s);
    mbk_quat qt = mbk_quat_from_axis_angle(mbk_vec3_normalize(mbk_vec3_make(1, 0.6, 0.2)), 0.5);
    q[0] = qt.w, q[1] = qt.x, q[2] = qt.y, q[3] = qt.z, q[4] = 0, q[5] = 0, q[6] = 0.5;
    u[0] = 0.5, u[1] = -1.0, u[2] = 2.0, u[3] = 0.3, u[4] = 0, u[5] = 0; /* w_FM, v_FM in F (Ground) */
    return 0;
}

static int build_drop(app_model *m)
{
    m->sys = mbk_multibody_create("drop");
    if (!m->sys || alloc_labels(m, 2)) return app_fail("creating the System");
    mbk_matter *mt = mbk_multibody_upd_matter(m->sys);
    const double mass = 2, a = 2 * drop_half[0], b = 2 * drop_half[1], c = 2 * drop_half[2];
    mbk_mass_props mp = mbk_mass_props_from_central(mass, mbk_vec3_zero(),
                                                    mbk_mat33_diag(mass * (b * b + c * c) / 12, mass * (a * a + c * c) / 12,
                                                                   mass * (a * a + b * b) / 12));
    mbk_transform I = mbk_transform_identity();
    int box = mbk_matter_add_body(mt, 0, &I, &mp, &I, mbk_mobilizer_free());
    if (box < 0) return app_fail("adding the box");
    label(m, box, "box", "free", "free");
    mbk_matter_set_body_name(mt, box, "box");
    if (add_gravity(m, mbk_vec3_make(0, 0, -9.81))) return -1;
    /* E, dissipation, static, dynamic and viscous friction, transition velocity */
    const double params[6] = {1e7, 0.5, 0.8, 0.5, 0, 0.05};
    mbk_forces *f = mbk_multibody_upd_forces(m->sys);
    for (int k = 0; k < DROP_CORNERS; ++k) {
        mbk_vec3 corner = mbk_vec3_make(k & 1 ? drop_half[0] : -drop_half[0], k & 2 ? drop_half[1] : -drop_half[1],
                                        k & 4 ? drop_half[2] : -drop_half[2]);
        if (mbk_force_add_hunt_crossley_sphere(f, box, corner, drop_r, 0.0, params) < 0)
            return app_fail("adding a contact sphere");
    }
    m->dissipative = true;
    snprintf(m->title, sizeof m->title,
             "box 0.4 x 0.3 x 0.2 m, 2 kg, on a free joint, dropped spinning from 0.5 m onto the ground z = 0: "
             "Hunt-Crossley contact spheres (r = 2 cm) at its 8 corners");
    m->init_state = drop_init;
    return 0;
}

/* ---- URDF ------------------------------------------------------------------ */

enum { FIRST_WARNINGS = 3 }; /* shown without --verbose */

typedef struct loader_msgs {
    int n, cap;
    char **text;
    int errors;              /* errors printed so far */
    bool option_named;       /* an error names a loader option */
} loader_msgs;

static void keep_warning(void *user, const char *message)
{
    loader_msgs *w = user;
    if (w->n == w->cap) {
        int cap = w->cap ? 2 * w->cap : 16;
        char **t = realloc(w->text, (size_t)cap * sizeof *t);
        if (!t) return;
        w->text = t, w->cap = cap;
    }
    w->text[w->n] = malloc(strlen(message) + 1);
    if (w->text[w->n]) strcpy(w->text[w->n++], message);
}

static void print_error(void *user, const char *message)
{
    loader_msgs *e = user;
    if (e->errors++ == 0) fprintf(stderr, "mbk: cannot load the model:\n");
    fprintf(stderr, "  %s\n", message);
    if (strstr(message, "options.")) e->option_named = true; /* say which flag sets it */
}

/* The loader's messages name its options; the program's flags set them. */
static void options_hint(void)
{
    fprintf(stderr, "  (options.min_mass, min_inertia, balance_inertia, strict_inertia, friction_as_elements and "
                    "floating_base are set by --min-mass, --min-inertia, --balance-inertia, --strict-inertia, "
                    "--friction and --floating-base)\n");
}

/* The loader's warnings on stderr: all (mode 1), a count and the first few (0), none (-1). */
static void show_warnings(const loader_msgs *w, int mode)
{
    if (mode < 0 || w->n == 0) return;
    int shown = mode > 0 || w->n <= FIRST_WARNINGS ? w->n : FIRST_WARNINGS;
    fprintf(stderr, "mbk: the model loaded with %d warning%s%s:\n", w->n, w->n == 1 ? "" : "s",
            shown < w->n ? " (--verbose shows all, --quiet none)" : "");
    for (int i = 0; i < shown; ++i) fprintf(stderr, "  %s\n", w->text[i]);
    if (shown < w->n) fprintf(stderr, "  ... and %d more\n", w->n - shown);
}

static int build_urdf(app_model *m, const char *path, const app_model_options *o)
{
    mbk_urdf_options uo = mbk_urdf_options_default();
    loader_msgs warnings = {0}, errors = {0};
    uo.floating_base = o->floating_base;
    uo.limits_as_stops = !o->no_limits;
    uo.damping_as_dampers = !o->no_damping;
    if (o->max_urdf_bytes > 0) uo.max_bytes = o->max_urdf_bytes;
    uo.strict_inertia = o->strict_inertia;
    uo.min_mass = o->min_mass;
    uo.min_inertia = o->min_inertia;
    uo.balance_inertia = o->balance_inertia;
    uo.friction_as_elements = o->friction;
    uo.ground_contact = o->ground;
    uo.ground_height = o->ground_height;
    uo.warning = keep_warning, uo.warning_user = &warnings;
    uo.error = print_error, uo.error_user = &errors;
    int rc = mbk_urdf_load(path, &uo, &m->sys);
    show_warnings(&warnings, o->warnings);
    bool hint = errors.option_named;
    for (int i = 0; i < warnings.n; ++i) {
        if (o->warnings >= 0 && (o->warnings > 0 || i < FIRST_WARNINGS) && strstr(warnings.text[i], "options."))
            hint = true;
        free(warnings.text[i]);
    }
    free(warnings.text);
    if (hint) options_hint();
    if (rc < 0) {
        if (errors.errors == 0) fprintf(stderr, "mbk: cannot load the model: %s\n", mbk_last_error());
        else if (errors.errors > 1) fprintf(stderr, "  (%d problems)\n", errors.errors);
        app_hint(mbk_last_error());
        return -1;
    }
    m->urdf = true;
    const mbk_matter *mt = mbk_multibody_get_matter(m->sys);
    int nb = mbk_matter_get_num_bodies(mt), nj = 0;
    if (alloc_labels(m, nb)) return -1;
    for (int b = 0; b < nb; ++b) {
        const char *link = mbk_urdf_get_link_name(m->sys, b), *joint = mbk_urdf_get_joint_name(m->sys, b);
        const char *type = mbk_urdf_get_joint_type(m->sys, b);
        label(m, b, b == 0 && !*link ? "Ground" : link, joint, type);
        if (b > 0 && *joint) ++nj;
    }
    const mbk_forces *f = mbk_multibody_get_forces(m->sys);
    m->gravity_force = mbk_force_find(f, "gravity");
    /* dampers, stops, friction and contact dissipate: one pass over the elements (a search
       by name per joint was quadratic in the joints) */
    static const char *const dissipating[] = {"mobility linear damper", "mobility linear stop",
                                              "mobility Coulomb friction", "Hunt-Crossley contact"};
    for (int i = 0; i < mbk_forces_get_num_elements(f) && !m->dissipative; ++i)
        for (int k = 0; k < 4; ++k) m->dissipative |= !strcmp(mbk_force_get_kind_name(f, i), dissipating[k]);
    m->floating_ignored = o->floating_base && strcmp(m->body_name[0], "world") == 0;
    int nl = nb - (strcmp(m->body_name[0], "Ground") ? 0 : 1);
    snprintf(m->title, sizeof m->title, "URDF robot '%.100s': %d link%s, %d joint%s%s", mbk_urdf_get_robot_name(m->sys),
             nl, nl == 1 ? "" : "s", nj, nj == 1 ? "" : "s",
             m->floating_ignored ? " (--floating-base had no effect: the root link is 'world')"
             : o->floating_base  ? ", floating base"
                                 : "");
    return 0;
}

int app_model_default_pose(const app_model *m, mbk_state *s, char *note, size_t n)
{
    size_t len = 0;
    note[0] = '\0';
    if (!m->urdf) return 0;
    const mbk_matter *mt = mbk_multibody_get_matter(m->sys);
    double *q = mbk_state_upd_q(s);
    int moved = 0;
    for (int b = 1; b < m->n_bodies; ++b) {
        double lo, hi;
        if (mbk_urdf_get_joint_limits(m->sys, b, &lo, &hi) != 1) continue;
        int i = mbk_matter_get_body_q_start(mt, s, b);
        if (q[i] >= lo && q[i] <= hi) continue;
        double to = q[i] < lo ? lo : hi;
        if (len < n)
            len += (size_t)snprintf(note + len, n - len, "%s%s %g -> %g", moved ? ", " : "joints moved into their limits: ",
                                    m->joint_name[b], q[i], to);
        q[i] = to;
        moved++;
    }
    /* with ground contact, a floating robot starts on the ground, not in it */
    const mbk_forces *f = mbk_multibody_get_forces(m->sys);
    if (m->n_bodies > 1 && !strcmp(m->joint_type[1], "floating") && mbk_matter_get_parent(mt, 1) == 0) {
        if (mbk_system_realize(m->sys, s, MBK_STAGE_POSITION) < 0) return app_fail("realizing the default pose");
        double lowest = INFINITY;
        for (int i = 0; i < mbk_forces_get_num_elements(f); ++i) {
            int body;
            mbk_vec3 c;
            double r, h;
            if (mbk_force_get_hunt_crossley_sphere(f, i, &body, &c, &r, &h) != MBK_OK) continue;
            mbk_transform X;
            mbk_matter_get_body_transform(mt, s, body, &X);
            lowest = fmin(lowest, mbk_transform_apply_point(X, c).z - r - h);
        }
        mbk_clear_error();
        if (isfinite(lowest) && lowest != 0) {
            q = mbk_state_upd_q(s);
            q[mbk_matter_get_body_q_start(mt, s, 1) + 6] -= lowest;
            if (len < n)
                len += (size_t)snprintf(note + len, n - len, "%sthe robot stands on the ground: moved %.4g m %s, its "
                                        "lowest contact point touches it", len ? "; " : "", fabs(lowest),
                                        lowest < 0 ? "up" : "down");
        }
    }
    return 0;
}

/* ---- entry points ------------------------------------------------------------ */

static int parse_int(const char *text, long lo, long hi, long *out)
{
    char *end = NULL;
    errno = 0;
    long v = strtol(text, &end, 10);
    if (errno || end == text || *end || v < lo || v > hi) return -1;
    *out = v;
    return 0;
}

int app_model_load(const char *spec, const app_model_options *o, app_model *m)
{
    static const app_model_options none = {0};
    if (!o) o = &none;
    memset(m, 0, sizeof *m);
    m->gravity_force = -1;
    if (!spec) spec = "builtin:chain:5";
    snprintf(m->spec, sizeof m->spec, "%s", spec);
    int rc = 0;
    if (strncmp(spec, "builtin:", 8) == 0) {
        const char *b = spec + 8;
        long n;
        if (strncmp(b, "chain:", 6) == 0) {
            if (parse_int(b + 6, 1, 100000, &n)) {
                fprintf(stderr, "mbk: %s: N must be an integer from 1 to 100000\n", spec);
                return APP_USAGE;
            }
            rc = build_chain(m, (int)n);
        } else if (strncmp(b, "tree:", 5) == 0) {
            if (parse_int(b + 5, 1, 16, &n)) {
                fprintf(stderr, "mbk: %s: DEPTH must be an integer from 1 to 16\n", spec);
                return APP_USAGE;
            }
            rc = build_tree(m, (int)n);
        } else if (strcmp(b, "fourbar") == 0) {
            rc = build_fourbar(m);
        } else if (strcmp(b, "drop") == 0) {
            rc = build_drop(m);
        } else {
            fprintf(stderr, "mbk: unknown built-in model '%s'; the built-ins are:\n", spec);
            app_model_list_builtins(stderr);
            return APP_USAGE;
        }
        if (rc == 0 && mbk_system_realize_topology(m->sys) < 0) rc = app_fail("realizing the topology");
    } else {
        rc = build_urdf(m, spec, o);
    }
    if (rc) {
        app_model_free(m);
        return APP_MODEL;
    }
    return APP_OK;
}

void app_model_free(app_model *m)
{
    mbk_system_destroy(m->sys);
    free(m->joint_name);
    free(m->joint_type);
    free(m->body_name);
    memset(m, 0, sizeof *m);
}

mbk_state *app_model_initial_state(const app_model *m)
{
    mbk_state *s = mbk_state_create();
    if (!s || mbk_state_init(s, m->sys) < 0 || mbk_system_realize(m->sys, s, MBK_STAGE_MODEL) < 0) {
        app_fail("creating the initial State");
        mbk_state_destroy(s);
        return NULL;
    }
    if (m->init_state && m->init_state(m, s)) {
        mbk_state_destroy(s);
        return NULL;
    }
    return s;
}

int app_model_find_joint_q(const app_model *m, const mbk_state *s, const char *joint, int *nq)
{
    const mbk_matter *mt = mbk_multibody_get_matter(m->sys);
    for (int b = 1; b < m->n_bodies; ++b)
        if (strcmp(m->joint_name[b], joint) == 0 || (!m->joint_name[b][0] && strcmp(m->body_name[b], joint) == 0)) {
            *nq = mbk_matter_get_body_num_q(mt, s, b);
            return mbk_matter_get_body_q_start(mt, s, b);
        }
    return -1;
}
