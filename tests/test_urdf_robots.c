/* The URDF loader on what real robot descriptions contain (issue 20): one small
 * file per class in tests/urdf/validation/, each checked for
 *   - loading or being refused as specified (and with options.strict_inertia);
 *   - the warning or error naming the file, line, link or joint (and by how much);
 *   - the loaded System's mass matrix and udot against a System built by hand
 *     through the C API with the same combined rigid bodies (mass properties
 *     combined here with the parallel-axis theorem written out), to 1e-12,
 *     at random states; and that a hand-built System that differs in one body is
 *     told apart (the check can fail).
 * Also: every problem reported at once in file order, singular joints refused,
 * repairs (min_mass, min_inertia, balance_inertia), joint friction as elements,
 * joint limits and warnings kept with the System, and ground contact: a
 * box-bodied quadruped dropped from 0.3 m comes to rest on its feet. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <mbk/mbk.h>
#include <mbk/urdf.h>

#include "mbk_test.h"

static char dir[1024];

/* ---- loading with the messages collected ---- */
typedef struct msgs {
    int n;
    char text[16][1024];
} msgs;
static msgs warnings, errors;

static void on_msg(void *user, const char *m)
{
    msgs *ms = user;
    if (ms->n < 16) snprintf(ms->text[ms->n], sizeof ms->text[0], "%s", m);
    ms->n++;
}

static mbk_urdf_options opts(void)
{
    mbk_urdf_options o = mbk_urdf_options_default();
    o.warning = on_msg, o.warning_user = &warnings;
    o.error = on_msg, o.error_user = &errors;
    return o;
}

/* Load tests/urdf/validation/FILE (or any path with a '/'); status returned, messages collected. */
static int load(const char *file, const mbk_urdf_options *o, mbk_system **sys)
{
    char path[1400];
    if (strchr(file, '/')) snprintf(path, sizeof path, "%s%s", dir, file);
    else snprintf(path, sizeof path, "%svalidation/%s", dir, file);
    memset(&warnings, 0, sizeof warnings);
    memset(&errors, 0, sizeof errors);
    *sys = NULL;
    return mbk_urdf_load(path, o, sys);
}

static int has(const char *s, const char *sub) { return s && strstr(s, sub) != NULL; }

/* All substrings in one message. */
static int has_all(const char *s, const char *a, const char *b, const char *c)
{
    int ok = has(s, a) && (!b || has(s, b)) && (!c || has(s, c));
    if (!ok) fprintf(stderr, "    message: %s\n    wanted: '%s' '%s' '%s'\n", s ? s : "(null)", a, b ? b : "",
                     c ? c : "");
    return ok;
}

/* ---- mass properties by hand ---- */
static mbk_mat33 Rx(double a) { return (mbk_mat33){{{1, 0, 0}, {0, cos(a), -sin(a)}, {0, sin(a), cos(a)}}}; }
static mbk_mat33 Ry(double a) { return (mbk_mat33){{{cos(a), 0, sin(a)}, {0, 1, 0}, {-sin(a), 0, cos(a)}}}; }
static mbk_mat33 Rz(double a) { return (mbk_mat33){{{cos(a), -sin(a), 0}, {sin(a), cos(a), 0}, {0, 0, 1}}}; }
static mbk_mat33 rpy(double r, double p, double y) { return mbk_mat33_mul(Rz(y), mbk_mat33_mul(Ry(p), Rx(r))); }
static mbk_mat33 RIRt(mbk_mat33 R, mbk_mat33 I)
{
    mbk_mat33 out;
    for (int i = 0; i < 3; ++i)
        for (int j = 0; j < 3; ++j) {
            double s = 0;
            for (int k = 0; k < 3; ++k)
                for (int l = 0; l < 3; ++l) s += R.m[i][k] * I.m[k][l] * R.m[j][l];
            out.m[i][j] = s;
        }
    return out;
}

/* A part of a rigid body: mass, centre of mass and central inertia, all in the body frame. */
typedef struct part { double m; mbk_vec3 c; mbk_mat33 I; } part;

/* The parts combined (parallel-axis theorem about the common centre of mass). */
static mbk_mass_props combine(const part *p, int n)
{
    double m = 0;
    mbk_vec3 c = {0, 0, 0};
    for (int i = 0; i < n; ++i) {
        m += p[i].m;
        c.x += p[i].m * p[i].c.x, c.y += p[i].m * p[i].c.y, c.z += p[i].m * p[i].c.z;
    }
    c.x /= m, c.y /= m, c.z /= m;
    mbk_mat33 I = {{{0}}};
    for (int i = 0; i < n; ++i) {
        double d[3] = {p[i].c.x - c.x, p[i].c.y - c.y, p[i].c.z - c.z}, d2 = d[0] * d[0] + d[1] * d[1] + d[2] * d[2];
        for (int r = 0; r < 3; ++r)
            for (int k = 0; k < 3; ++k) I.m[r][k] += p[i].I.m[r][k] + p[i].m * ((r == k ? d2 : 0) - d[r] * d[k]);
    }
    return mbk_mass_props_from_central(m, c, I);
}

static int add(mbk_matter *m, int parent, mbk_transform X_PF, mbk_mass_props mp, mbk_mat33 R_axis,
               mbk_mobilizer mob)
{
    mbk_transform X_BM = mbk_transform_make(R_axis, mbk_vec3_zero());
    X_PF.R = mbk_mat33_mul(X_PF.R, R_axis);
    int b = mbk_mass_props_is_valid(mp) ? mbk_matter_add_body(m, parent, &X_PF, &mp, &X_BM, mob)
                                        : mbk_matter_add_body_unrealizable(m, parent, &X_PF, &mp, &X_BM, mob);
    if (!CHECK(b > 0)) fprintf(stderr, "    %s\n", mbk_last_error());
    return b;
}

/* Rotations taking a Pin's z (or a Slider's x) onto the URDF axis. */
static const double H = 1.5707963267948966;
#define PIN_Y Rx(-H)
#define PIN_X Ry(H)
#define PIN_Z mbk_mat33_identity()
#define SLIDE_Y Rz(H)

static mbk_system *hand_start(const char *name, mbk_matter **m)
{
    mbk_system *sys = mbk_multibody_create(name);
    *m = mbk_multibody_upd_matter(sys);
    mbk_force_add_gravity(mbk_multibody_upd_forces(sys), mbk_vec3_make(0, 0, -9.81));
    return sys;
}

static mbk_system *hand_finish(mbk_system *sys)
{
    CHECK(mbk_system_realize_topology(sys) == MBK_OK);
    return sys;
}

/* ---- the comparison: M and udot at random states, relative to their size ---- */
static double urand(unsigned *seed, double lo, double hi)
{
    *seed = *seed * 1664525u + 1013904223u;
    return lo + (hi - lo) * ((*seed >> 8) / 16777216.0);
}

static double compare(const mbk_system *a, const mbk_system *b, int nstates)
{
    mbk_state *sa = mbk_state_create(), *sb = mbk_state_create();
    mbk_state_init(sa, a), mbk_state_init(sb, b);
    mbk_system_realize(a, sa, MBK_STAGE_MODEL), mbk_system_realize(b, sb, MBK_STAGE_MODEL);
    int nq = mbk_state_get_nq(sa), nu = mbk_state_get_nu(sa);
    double worst = INFINITY;
    if (!CHECK(nq == mbk_state_get_nq(sb) && nu == mbk_state_get_nu(sb) && nu <= 16)) goto out;
    worst = 0;
    unsigned seed = 12345;
    const mbk_matter *ma = mbk_multibody_get_matter(a), *mb = mbk_multibody_get_matter(b);
    for (int k = 0; k < nstates; ++k) {
        double q[32], u[32], Ma[256], Mb[256];
        for (int i = 0; i < nq; ++i) q[i] = urand(&seed, -1.5, 1.5);
        for (int i = 0; i < nu; ++i) u[i] = urand(&seed, -2, 2);
        mbk_state_set_q(sa, q, nq), mbk_state_set_q(sb, q, nq);
        mbk_state_set_u(sa, u, nu), mbk_state_set_u(sb, u, nu);
        if (!CHECK(mbk_system_realize(a, sa, MBK_STAGE_ACCELERATION) == MBK_OK &&
                   mbk_system_realize(b, sb, MBK_STAGE_ACCELERATION) == MBK_OK)) {
            fprintf(stderr, "    %s\n", mbk_last_error());
            worst = INFINITY;
            break;
        }
        mbk_matter_calc_mass_matrix(ma, sa, Ma), mbk_matter_calc_mass_matrix(mb, sb, Mb);
        double sM = 0, sU = 0, eM = 0, eU = 0;
        const double *ua = mbk_state_get_udot(sa), *ub = mbk_state_get_udot(sb);
        for (int i = 0; i < nu * nu; ++i) sM = fmax(sM, fabs(Mb[i])), eM = fmax(eM, fabs(Ma[i] - Mb[i]));
        for (int i = 0; i < nu; ++i) sU = fmax(sU, fabs(ub[i])), eU = fmax(eU, fabs(ua[i] - ub[i]));
        worst = fmax(worst, fmax(eM / sM, eU / fmax(sU, 1e-300)));
    }
out:
    mbk_state_destroy(sa), mbk_state_destroy(sb);
    return worst;
}

/* The loaded System equals the hand-built one to 1e-12; a spoiled hand-built one does not. */
static void same_dynamics(const char *what, const mbk_system *loaded, mbk_system *hand, mbk_system *spoiled)
{
    double e = compare(loaded, hand, 20);
    if (!CHECK(e < 1e-12)) fprintf(stderr, "    %s: M and udot differ by %.3g (relative)\n", what, e);
    if (spoiled) {
        double f = compare(loaded, spoiled, 5);
        if (!CHECK(f > 1e-6)) fprintf(stderr, "    %s: the spoiled System is not told apart (%.3g)\n", what, f);
        mbk_system_destroy(spoiled);
    }
    mbk_system_destroy(hand);
}

/* ---- class 1: point masses and thin rods ---- */
static mbk_system *point_mass_by_hand(double imu_mass)
{
    mbk_matter *m;
    mbk_system *sys = hand_start("point mass by hand", &m);
    part p[2] = {{2.0, {0.25, 0, 0}, mbk_mat33_diag(0.002, 0.045, 0.045)}, {imu_mass, {0.5, 0.02, 0.03}, {{{0}}}}};
    add(m, 0, mbk_transform_from_p(mbk_vec3_make(0, 0, 1)), combine(p, 2), PIN_Y, mbk_mobilizer_pin());
    return hand_finish(sys);
}

static void test_point_mass_and_rod(void)
{
    mbk_urdf_options o = opts();
    mbk_system *sys;
    CHECK_INT(load("point_mass.urdf", &o, &sys), MBK_OK);
    CHECK_INT(warnings.n, 0);
    if (sys) {
        CHECK_INT(mbk_urdf_get_num_warnings(sys), 0);
        same_dynamics("point mass", sys, point_mass_by_hand(0.01), point_mass_by_hand(0.02));
    }
    mbk_system_destroy(sys);
    o.strict_inertia = true;
    CHECK_INT(load("point_mass.urdf", &o, &sys), MBK_EPARSE);
    CHECK(sys == NULL && errors.n == 1);
    CHECK(has_all(mbk_last_error(), "point_mass.urdf:22: <inertia> in <link name=\"imu\">", "not positive definite",
                  "strict_inertia"));

    /* floating_base on a robot rooted at world: said to have no effect */
    o = opts();
    o.floating_base = true;
    CHECK_INT(load("point_mass.urdf", &o, &sys), MBK_OK);
    CHECK(warnings.n == 1 && has_all(warnings.text[0], "point_mass.urdf:5: <link name=\"world\">",
                                     "floating_base has no effect", NULL));
    CHECK(sys && mbk_matter_get_num_mobilities(mbk_multibody_get_matter(sys)) == 1);
    mbk_system_destroy(sys);

    o = opts();
    CHECK_INT(load("thin_rod.urdf", &o, &sys), MBK_OK);
    CHECK_INT(warnings.n, 0);
    if (sys) {
        mbk_matter *m;
        mbk_system *hand = hand_start("rod", &m), *spoiled = hand_start("thicker rod", &m);
        add(mbk_multibody_upd_matter(hand), 0, mbk_transform_identity(),
            mbk_mass_props_from_central(1.5, mbk_vec3_make(0.4, 0, 0), mbk_mat33_diag(0, 0.08, 0.08)), PIN_Y,
            mbk_mobilizer_pin());
        add(mbk_multibody_upd_matter(spoiled), 0, mbk_transform_identity(),
            mbk_mass_props_from_central(1.5, mbk_vec3_make(0.4, 0, 0), mbk_mat33_diag(0, 0.09, 0.09)), PIN_Y,
            mbk_mobilizer_pin());
        same_dynamics("thin rod", sys, hand_finish(hand), hand_finish(spoiled));
    }
    mbk_system_destroy(sys);
    o.strict_inertia = true;
    CHECK_INT(load("thin_rod.urdf", &o, &sys), MBK_EPARSE);
    CHECK(has_all(mbk_last_error(), "thin_rod.urdf:10: <inertia> in <link name=\"rod\">", "not positive definite", NULL));
}

/* ---- class 2: a dummy root and a slightly indefinite frame link ---- */
static mbk_system *dummy_root_by_hand(double torso_mass)
{
    mbk_matter *m;
    mbk_system *sys = hand_start("dummy root by hand", &m);
    mbk_mat33 ones = {{{1e-6, 1e-6, 1e-6}, {1e-6, 1e-6, 1e-6}, {1e-6, 1e-6, 1e-6}}};
    part p[2] = {{0.01, {0, 0, 0}, ones},
                 {torso_mass, {0.01, 0, 0.07}, RIRt(rpy(0.1, 0, 0.2), mbk_mat33_diag(0.07, 0.2, 0.22))}};
    int base = add(m, 0, mbk_transform_identity(), combine(p, 2), mbk_mat33_identity(), mbk_mobilizer_free());
    add(m, base, mbk_transform_from_p(mbk_vec3_make(0.21, 0.1, -0.03)),
        mbk_mass_props_from_central(1.0, mbk_vec3_make(0, 0, -0.15), mbk_mat33_diag(0.008, 0.008, 0.001)), PIN_Y,
        mbk_mobilizer_pin());
    return hand_finish(sys);
}

static mbk_system *indefinite_frame_by_hand(double antenna_mass)
{
    mbk_matter *m;
    mbk_system *sys = hand_start("indefinite frame by hand", &m);
    /* the antenna frame in the arm frame: Rz(0.5), (0.4, 0, 0.02); its inertial frame Ry(0.3), (0, 0, 0.05) */
    mbk_mat33 R = mbk_mat33_mul(Rz(0.5), Ry(0.3));
    mbk_vec3 c = mbk_vec3_add(mbk_vec3_make(0.4, 0, 0.02), mbk_mat33_mul_vec(Rz(0.5), mbk_vec3_make(0, 0, 0.05)));
    part p[2] = {{3.0, {0.2, 0, 0}, mbk_mat33_diag(0.004, 0.04, 0.041)},
                 {antenna_mass, c, RIRt(R, mbk_mat33_diag(-3.5e-8, 1e-5, 1.1e-5))}};
    add(m, 0, mbk_transform_from_p(mbk_vec3_make(0, 0, 0.5)), combine(p, 2), PIN_Z, mbk_mobilizer_pin());
    return hand_finish(sys);
}

static void test_dummy_root_and_frame_link(void)
{
    mbk_urdf_options o = opts();
    o.floating_base = true;
    mbk_system *sys;
    CHECK_INT(load("dummy_root.urdf", &o, &sys), MBK_OK);
    CHECK_INT(warnings.n, 1);
    CHECK(has_all(warnings.text[0], "dummy_root.urdf:9: <inertia> in <link name=\"base\">",
                  "break the triangle inequality", "short by 100%"));
    if (sys) {
        CHECK_INT(mbk_urdf_get_num_warnings(sys), 1);
        CHECK(!strcmp(mbk_urdf_get_warning(sys, 0), warnings.text[0]) && mbk_urdf_get_warning(sys, 1) == NULL);
        same_dynamics("dummy root", sys, dummy_root_by_hand(8.0), dummy_root_by_hand(8.1));
    }
    mbk_system_destroy(sys);
    o.strict_inertia = true;
    CHECK_INT(load("dummy_root.urdf", &o, &sys), MBK_EPARSE);
    CHECK(has_all(mbk_last_error(), "dummy_root.urdf:9:", "<link name=\"base\">", "not positive definite"));

    o = opts();
    CHECK_INT(load("indefinite_frame.urdf", &o, &sys), MBK_OK);
    CHECK_INT(warnings.n, 1);
    CHECK(has_all(warnings.text[0], "indefinite_frame.urdf:24: <inertia> in <link name=\"antenna\">",
                  "not positive semidefinite", "the negative one 0.318% of the largest"));
    CHECK(has_all(warnings.text[0], "link 'arm' carries", NULL, NULL));
    if (sys) {
        /* the arm's body carries the rigid body; the antenna's none */
        const mbk_matter *m = mbk_multibody_get_matter(sys);
        mbk_mass_props a, b;
        mbk_matter_get_body_mass_props(m, mbk_matter_find_body(m, "arm"), &a);
        mbk_matter_get_body_mass_props(m, mbk_matter_find_body(m, "antenna"), &b);
        CHECK(fabs(a.mass - 3.05) < 1e-15 && b.mass == 0.0);
        same_dynamics("indefinite frame link", sys, indefinite_frame_by_hand(0.05), indefinite_frame_by_hand(0.06));
    }
    mbk_system_destroy(sys);
    o.strict_inertia = true;
    CHECK_INT(load("indefinite_frame.urdf", &o, &sys), MBK_EPARSE);
    CHECK(has_all(mbk_last_error(), "indefinite_frame.urdf:24:", "<link name=\"antenna\">", "not positive definite"));
}

/* ---- class 3: the triangle inequality, as given and balanced ---- */
static mbk_system *triangle_by_hand(double a, double b, double c)
{
    mbk_matter *m;
    mbk_system *sys = hand_start("triangle by hand", &m);
    mbk_mass_props mp = mbk_mass_props_from_central(2.0, mbk_vec3_make(0.1, 0, -0.2),
                                                    RIRt(rpy(0.3, 0.2, 0.1), mbk_mat33_diag(a, b, c)));
    add(m, 0, mbk_transform_identity(), mp, PIN_X, mbk_mobilizer_pin());
    return hand_finish(sys);
}

static void test_triangle(void)
{
    mbk_urdf_options o = opts();
    mbk_system *sys;
    CHECK_INT(load("triangle.urdf", &o, &sys), MBK_OK);
    CHECK_INT(warnings.n, 1);
    CHECK(has_all(warnings.text[0], "triangle.urdf:12: <inertia> in <link name=\"plate\">",
                  "break the triangle inequality (1 + 1 < 2.5, short by 20% of the largest)", "balance_inertia"));
    if (sys) same_dynamics("triangle", sys, triangle_by_hand(1, 1, 2.5), triangle_by_hand(1, 1, 2.4));
    mbk_system_destroy(sys);

    o.balance_inertia = true;
    CHECK_INT(load("triangle.urdf", &o, &sys), MBK_OK);
    CHECK_INT(warnings.n, 1);
    CHECK(has_all(warnings.text[0], "triangle.urdf:12:", "options.balance_inertia replaced",
                  "nearest realizable ones, 1.16667, 1.16667, 2.33333"));
    if (sys) same_dynamics("triangle balanced", sys, triangle_by_hand(7.0 / 6, 7.0 / 6, 7.0 / 3), triangle_by_hand(1, 1, 2.5));
    mbk_system_destroy(sys);

    o = opts();
    o.strict_inertia = true;
    CHECK_INT(load("triangle.urdf", &o, &sys), MBK_EPARSE);
    CHECK(has_all(mbk_last_error(), "triangle.urdf:12:", "break the triangle inequality (1 + 1 < 2.5)", NULL));
    o.balance_inertia = true; /* repaired first, then judged */
    CHECK_INT(load("triangle.urdf", &o, &sys), MBK_OK);
    mbk_system_destroy(sys);
}

/* ---- class 4: mimic tags that couple nothing ---- */
static void test_mimic(void)
{
    for (int couplers = 0; couplers < 2; ++couplers) {
        mbk_urdf_options o = opts();
        o.mimic_as_couplers = couplers;
        mbk_system *sys;
        CHECK_INT(load("mimic_fixed.urdf", &o, &sys), MBK_OK);
        CHECK(warnings.n == 1 && has_all(warnings.text[0], "mimic_fixed.urdf:29: <mimic> in <joint name=\"j2\">",
                                         "'j2' is fixed", "ignored"));
        if (sys) {
            CHECK_INT(mbk_matter_get_num_constraints(mbk_multibody_get_matter(sys)), 0);
            mbk_matter *m;
            mbk_system *hand = hand_start("mimic fixed by hand", &m);
            part p[2] = {{1.0, {0, 0, -0.3}, mbk_mat33_diag(0.01, 0.01, 0.002)},
                         {0.5, {0, 0.1, -0.7}, mbk_mat33_diag(0.002, 0.002, 0.001)}};
            add(m, 0, mbk_transform_identity(), combine(p, 2), PIN_X, mbk_mobilizer_pin());
            same_dynamics("mimic on a fixed joint", sys, hand_finish(hand), NULL);
        }
        mbk_system_destroy(sys);

        CHECK_INT(load("mimic_missing.urdf", &o, &sys), MBK_OK);
        CHECK(warnings.n == 1 && has_all(warnings.text[0], "mimic_missing.urdf:30: <mimic> in <joint name=\"j2\">",
                                         "joint 'gripper_drive' does not exist", "ignored"));
        if (sys) {
            CHECK_INT(mbk_matter_get_num_constraints(mbk_multibody_get_matter(sys)), 0);
            mbk_matter *m;
            mbk_system *hand = hand_start("mimic missing by hand", &m);
            int a = add(m, 0, mbk_transform_identity(),
                        mbk_mass_props_from_central(1.0, mbk_vec3_make(0, 0, -0.3), mbk_mat33_diag(0.01, 0.01, 0.002)),
                        PIN_X, mbk_mobilizer_pin());
            add(m, a, mbk_transform_from_p(mbk_vec3_make(0, 0, -0.6)),
                mbk_mass_props_from_central(0.5, mbk_vec3_make(0, 0, -0.1), mbk_mat33_diag(0.002, 0.002, 0.001)),
                PIN_X, mbk_mobilizer_pin());
            same_dynamics("mimic naming a missing joint", sys, hand_finish(hand), NULL);
        }
        mbk_system_destroy(sys);
    }
}

/* ---- class 5: a massless finger, refused, then floored ---- */
static mbk_system *finger_by_hand(double finger_mass)
{
    mbk_matter *m;
    mbk_system *sys = hand_start("finger by hand", &m);
    int palm = add(m, 0, mbk_transform_identity(),
                   mbk_mass_props_from_central(0.8, mbk_vec3_zero(), mbk_mat33_diag(0.001, 0.001, 0.0015)), PIN_Z,
                   mbk_mobilizer_pin());
    add(m, palm, mbk_transform_from_p(mbk_vec3_make(0.05, 0, 0)),
        mbk_mass_props_from_central(finger_mass, mbk_vec3_zero(), mbk_mat33_diag(1e-6, 1e-6, 1e-6)), SLIDE_Y,
        mbk_mobilizer_slider());
    return hand_finish(sys);
}

static void test_massless_finger(void)
{
    mbk_urdf_options o = opts();
    mbk_system *sys;
    CHECK_INT(load("massless_finger.urdf", &o, &sys), MBK_EPARSE);
    CHECK(sys == NULL && errors.n == 1);
    CHECK(has_all(mbk_last_error(), "massless_finger.urdf:20: <joint name=\"finger_slide\">",
                  "without mass or inertia (child 'finger')", "min_mass"));
    o.min_mass = 0.01;
    o.min_inertia = 1e-6;
    o.limits_as_stops = false;
    CHECK_INT(load("massless_finger.urdf", &o, &sys), MBK_OK);
    CHECK(warnings.n == 1 && has_all(warnings.text[0], "massless_finger.urdf:19: <link name=\"finger\">",
                                     "mass 0 kg raised to options.min_mass = 0.01 kg", "min_inertia = 1e-06"));
    if (sys) same_dynamics("floored finger", sys, finger_by_hand(0.01), finger_by_hand(0.02));
    mbk_system_destroy(sys);
    /* a mass alone is a point on the slide's line: still enough for a prismatic joint */
    o.min_inertia = 0;
    CHECK_INT(load("massless_finger.urdf", &o, &sys), MBK_OK);
    mbk_system_destroy(sys);
}

/* ---- what stays refused, every problem at once, and what is not refused ---- */
#define HEAD "<robot name=\"r\">\n<link name=\"world\"/>\n"
#define LINK(name, m, ixx, iyy, izz) \
    "<link name=\"" name "\"><inertial><mass value=\"" m "\"/><inertia ixx=\"" ixx "\" iyy=\"" iyy "\" izz=\"" izz \
    "\" ixy=\"0\" ixz=\"0\" iyz=\"0\"/></inertial></link>\n"
#define JOINT(name, type, parent, child, axis)                                                        \
    "<joint name=\"" name "\" type=\"" type "\"><parent link=\"" parent "\"/><child link=\"" child "\"/>" \
    "<axis xyz=\"" axis "\"/></joint>\n"

static int load_str(const char *xml, const mbk_urdf_options *o, mbk_system **sys)
{
    memset(&warnings, 0, sizeof warnings);
    memset(&errors, 0, sizeof errors);
    *sys = NULL;
    return mbk_urdf_load_string(xml, o, sys);
}

static void test_refused(void)
{
    mbk_urdf_options o = opts();
    mbk_system *sys;
    /* a rod spinning about its own axis, a point mass on its hinge, a massless link, an
       indefinite body: four problems, reported at once in file order */
    const char *xml = HEAD LINK("rod", "1", "0", "0.1", "0.1") JOINT("spin", "revolute", "world", "rod", "1 0 0")
        LINK("point", "1", "0", "0", "0") JOINT("hinge", "revolute", "rod", "point", "0 0 1")
        "<link name=\"empty\"/>\n" JOINT("slide", "prismatic", "rod", "empty", "0 1 0")
        LINK("bad", "1", "-1", "1", "1") JOINT("turn", "continuous", "world", "bad", "0 0 1") "</robot>\n";
    CHECK_INT(load_str(xml, &o, &sys), MBK_EPARSE);
    CHECK(sys == NULL);
    CHECK_INT(errors.n, 4);
    if (errors.n == 4) {
        CHECK(has_all(errors.text[0], "<string>:4: <joint name=\"spin\">", "no inertia about its axis", "'rod' (line 3)"));
        CHECK(has_all(errors.text[1], "<string>:6: <joint name=\"hinge\">", "no inertia about its axis", "'point'"));
        CHECK(has_all(errors.text[2], "<string>:8: <joint name=\"slide\">", "without mass or inertia (child 'empty')",
                      NULL));
        CHECK(has_all(errors.text[3], "<string>:10: <joint name=\"turn\">", "not positive semidefinite", "'bad'"));
    }
    CHECK(has_all(mbk_last_error(), "<string>:4: <joint name=\"spin\">", "(and 3 more problems)", NULL));
    /* the indefinite link warns too (one per link) */
    CHECK(warnings.n == 0);

    /* problems found while reading are all reported too */
    const char *bad = HEAD "<link name=\"a\"><inertial><mass value=\"-1\"/>\n"
                           "<inertia ixx=\"1\" iyy=\"1\" izz=\"x\" ixy=\"0\" ixz=\"0\" iyz=\"0\"/></inertial></link>\n"
                           "<joint name=\"j\" type=\"revolute\"><parent link=\"world\"/><child link=\"a\"/>\n"
                           "<origin xyz=\"0 0\"/></joint>\n</robot>\n";
    CHECK_INT(load_str(bad, &o, &sys), MBK_EPARSE);
    CHECK_INT(errors.n, 3);
    if (errors.n == 3) {
        CHECK(has_all(errors.text[0], "<string>:3:", "mass -1 is negative", NULL));
        CHECK(has_all(errors.text[1], "<string>:4:", "'x' is not a number", NULL));
        CHECK(has_all(errors.text[2], "<string>:6:", "needs 3 numbers, found 2", NULL));
    }
    /* without an error callback the message says where the rest is */
    mbk_urdf_options plain = mbk_urdf_options_default();
    CHECK_INT(load_str(bad, &plain, &sys), MBK_EPARSE);
    CHECK(has_all(mbk_last_error(), "<string>:3:", "(and 2 more problems; options.error receives each one)", NULL));

    /* an indefinite link fixed to Ground: its inertia is not used (it never moves) */
    CHECK_INT(load_str("<robot name=\"r\">" LINK("base", "2", "-1", "1", "1") "</robot>", &o, &sys), MBK_OK);
    CHECK(warnings.n == 1 && has_all(warnings.text[0], "<link name=\"base\">", "fixed to Ground", "not used"));
    if (sys) {
        mbk_mass_props mp;
        mbk_matter_get_body_mass_props(mbk_multibody_get_matter(sys), 1, &mp);
        CHECK(mp.mass == 2.0 && mbk_mat33_max_abs(mp.inertia) == 0.0);
    }
    mbk_system_destroy(sys);

    /* singular only at the zero pose (an arm of massless links stretched out carrying a
       point mass): not refused, since it holds at no other pose */
    const char *stretched = HEAD "<link name=\"l1\"/>\n" JOINT("j1", "revolute", "world", "l1", "0 0 1")
        "<link name=\"l2\"/>\n<joint name=\"j2\" type=\"revolute\"><parent link=\"l1\"/><child link=\"l2\"/>"
        "<origin xyz=\"1 0 0\"/><axis xyz=\"0 0 1\"/></joint>\n"
        "<link name=\"tip\"><inertial><origin xyz=\"1 0 0\"/><mass value=\"1\"/><inertia ixx=\"0\" iyy=\"0\" izz=\"0\" "
        "ixy=\"0\" ixz=\"0\" iyz=\"0\"/></inertial></link>\n"
        "<joint name=\"j3\" type=\"fixed\"><parent link=\"l2\"/><child link=\"tip\"/></joint>\n</robot>\n";
    CHECK_INT(load_str(stretched, &o, &sys), MBK_OK);
    mbk_system_destroy(sys);
}

/* ---- joint friction, limits ---- */
static void test_friction_and_limits(void)
{
    const char *xml = HEAD LINK("a", "1", "0.1", "0.1", "0.1")
        "<joint name=\"j\" type=\"revolute\"><parent link=\"world\"/><child link=\"a\"/><axis xyz=\"0 0 1\"/>\n"
        "<limit lower=\"-0.5\" upper=\"1.5\"/><dynamics damping=\"0.2\" friction=\"0.3\"/></joint>\n</robot>\n";
    mbk_urdf_options o = opts();
    mbk_system *sys;
    CHECK_INT(load_str(xml, &o, &sys), MBK_OK);
    CHECK(warnings.n == 1 && has_all(warnings.text[0], "<string>:5:", "friction is ignored", "friction_as_elements"));
    if (sys) {
        CHECK(mbk_force_find(mbk_multibody_get_forces(sys), "friction:j") < 0);
        double lo = 0, hi = 0;
        CHECK(mbk_urdf_get_joint_limits(sys, 1, &lo, &hi) == 1 && lo == -0.5 && hi == 1.5);
        CHECK(mbk_urdf_get_joint_limits(sys, 0, &lo, &hi) == 0);
        CHECK(mbk_urdf_get_joint_limits(sys, 2, &lo, &hi) == MBK_EINVAL);
    }
    mbk_system_destroy(sys);
    o.friction_as_elements = true;
    o.friction_transition_velocity = 0.02;
    CHECK_INT(load_str(xml, &o, &sys), MBK_OK);
    CHECK_INT(warnings.n, 0);
    if (sys) {
        const mbk_forces *f = mbk_multibody_get_forces(sys);
        int k = mbk_force_find(f, "friction:j");
        double p[2] = {0, 0}, w = -1;
        mbk_state *s = mbk_state_create();
        mbk_state_init(s, sys);
        mbk_system_realize(sys, s, MBK_STAGE_MODEL);
        CHECK(k >= 0 && mbk_force_get_parameters(f, s, k, p, 2) == MBK_OK && p[0] == 0.3 && p[1] == 0.02);
        CHECK(mbk_force_get_dissipated_energy(f, s, k, &w) == MBK_OK && w == 0.0);
        mbk_state_destroy(s);
    }
    mbk_system_destroy(sys);
    o.friction_transition_velocity = 0;
    CHECK_INT(load_str(xml, &o, &sys), MBK_EINVAL);
}

/* ---- ground contact ---- */
static void test_ground_contact(void)
{
    mbk_urdf_options o = opts();
    o.ground_contact = true;
    o.floating_base = true;
    mbk_system *sys;
    CHECK_INT(load("./quadruped.urdf", &o, &sys), MBK_OK);
    CHECK(warnings.n == 1 && has_all(warnings.text[0], "quadruped.urdf:22: <collision> in <link name=\"camera\">",
                                     "mesh", "no part in ground contact"));
    if (!sys) return;
    const mbk_forces *f = mbk_multibody_get_forces(sys);
    /* gravity, then box 8 + 36, 4 legs x 24 rim points, 4 feet */
    CHECK_INT(mbk_forces_get_num_elements(f), 1 + 44 + 4 * 24 + 4);
    CHECK(mbk_force_find(f, "contact:base") == 1 && mbk_force_find(f, "contact:fl_foot") > 0);
    {
        int body = -1;
        mbk_vec3 ctr = {1, 1, 1};
        double r = 0, h = 1;
        CHECK(mbk_force_get_hunt_crossley_sphere(f, mbk_force_find(f, "contact:fl_foot"), &body, &ctr, &r, &h) ==
              MBK_OK);
        CHECK(body == mbk_matter_find_body(mbk_multibody_get_matter(sys), "fl_foot") && r == 0.03 && h == 0);
        CHECK(ctr.x == 0 && ctr.y == 0 && ctr.z == 0);
        /* the base box's first corner: inset by the point radius 0.005 from (-0.25, -0.15, -0.075) */
        CHECK(mbk_force_get_hunt_crossley_sphere(f, 1, &body, &ctr, &r, &h) == MBK_OK && body == 1 && r == 0.005);
        CHECK(fabs(ctr.x + 0.245) < 1e-15 && fabs(ctr.y + 0.145) < 1e-15 && fabs(ctr.z + 0.07) < 1e-15);
        CHECK(mbk_force_get_hunt_crossley_sphere(f, 0, &body, NULL, NULL, NULL) == MBK_EINVAL); /* gravity */
    }

    /* drop it from 0.3 m: the feet (r = 0.03, 0.355 m below the base origin) start 0.3 m up */
    mbk_state *s = mbk_state_create();
    mbk_state_init(s, sys);
    mbk_system_realize(sys, s, MBK_STAGE_MODEL);
    double *q = mbk_state_upd_q(s);
    q[0] = 1, q[1] = q[2] = q[3] = 0, q[4] = 0, q[5] = 0, q[6] = 0.655;
    mbk_system_realize(sys, s, MBK_STAGE_VELOCITY);
    double ke, pe, e_prev, rise = 0, deepest = 0;
    mbk_system_calc_energy(sys, s, &ke, &pe);
    e_prev = ke + pe;
    const double e0 = e_prev;
    mbk_integrator *ig = mbk_integrator_create_rkmerson(sys);
    mbk_integrator_set_accuracy(ig, 1e-6);
    CHECK_INT(mbk_integrator_initialize(ig, s), MBK_OK);
    const mbk_matter *m = mbk_multibody_get_matter(sys);
    const char *feet[4] = {"fl_foot", "fr_foot", "hl_foot", "hr_foot"};
    for (int k = 1; k <= 300; ++k) {
        if (!CHECK(mbk_integrator_step_to(ig, 0.01 * k) == MBK_OK)) {
            fprintf(stderr, "    %s\n", mbk_last_error());
            break;
        }
        const mbk_state *si = mbk_integrator_get_state(ig);
        mbk_system_calc_energy(sys, si, &ke, &pe);
        rise = fmax(rise, ke + pe - e_prev);
        e_prev = ke + pe;
        for (int i = 0; i < 4; ++i) {
            mbk_transform X;
            mbk_matter_get_body_transform(m, si, mbk_matter_find_body(m, feet[i]), &X);
            deepest = fmax(deepest, 0.03 - X.p.z);
        }
    }
    const mbk_state *se = mbk_integrator_get_state(ig);
    const double *qe = mbk_state_get_q(se), *ue = mbk_state_get_u(se);
    double speed = 0;
    for (int i = 0; i < 6; ++i) speed = fmax(speed, fabs(ue[i]));
    if (getenv("MBK_TEST_VERBOSE"))
        fprintf(stderr, "  quadruped: rest height %.6f m, deepest foot %.3g m, energy %.6g -> %.6g J, largest rise "
                "%.3g J, speed %.3g\n", qe[6], deepest, e0, e_prev, rise, speed);
    CHECK(fabs(qe[6] - 0.355) < 2e-3); /* at rest at the height its feet give */
    CHECK(fabs(qe[4]) < 1e-3 && fabs(qe[5]) < 1e-3 && fabs(qe[0]) > 1 - 1e-6);
    CHECK(speed < 1e-3);
    CHECK(deepest < 5e-3 && deepest > 0); /* no foot more than a few mm into the ground */
    CHECK(e_prev < e0 - 40 && rise < 1e-3); /* the fall's energy (m g h = 42 J) went; it never rose */
    mbk_integrator_destroy(ig);
    mbk_state_destroy(s);
    mbk_system_destroy(sys);

    /* without ground_contact, <collision> is not read at all; on a welded robot no
       shape moves, so there is no contact */
    o.ground_contact = false;
    CHECK_INT(load("./quadruped.urdf", &o, &sys), MBK_OK);
    CHECK(sys && mbk_forces_get_num_elements(mbk_multibody_get_forces(sys)) == 1 && warnings.n == 0);
    mbk_system_destroy(sys);
    o.ground_contact = true;
    o.floating_base = false;
    CHECK_INT(load("./quadruped.urdf", &o, &sys), MBK_OK);
    CHECK(sys && mbk_forces_get_num_elements(mbk_multibody_get_forces(sys)) == 1);
    mbk_system_destroy(sys);
    /* bad shapes and options */
    o = opts();
    o.ground_contact = true;
    CHECK_INT(load_str(HEAD "<link name=\"a\"><collision><geometry><box size=\"1 0 1\"/></geometry></collision></link>\n"
                            "</robot>", &o, &sys), MBK_EPARSE);
    CHECK(has_all(mbk_last_error(), "<string>:3: <box> in <link name=\"a\">", "size 0 must be > 0", NULL));
    o.contact_modulus = -1;
    CHECK_INT(load_str(HEAD "</robot>", &o, &sys), MBK_EINVAL);
}

int main(void)
{
    const char *f = __FILE__, *slash = strrchr(f, '/');
    snprintf(dir, sizeof dir, "%.*s%surdf/", slash ? (int)(slash - f) : 0, f, slash ? "/" : "");
    test_point_mass_and_rod();
    test_dummy_root_and_frame_link();
    test_triangle();
    test_mimic();
    test_massless_finger();
    test_refused();
    test_friction_and_limits();
    test_ground_contact();
    return mbk_test_finish();
}
