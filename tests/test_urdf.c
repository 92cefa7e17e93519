/* The URDF loader: names, options, the mapping of frames, axes and inertias
 * (checked against forward kinematics written out here from the URDF
 * definitions), floating bases, planar joints, mimic joints as constraints,
 * warnings, force elements of long names, encodings, axes of any finite
 * length, and large models. test_urdf_mujoco.c checks the dynamics against
 * MuJoCo; test_urdf_errors.c every error path. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <mbk/mbk.h>
#include <mbk/urdf.h>

#include "mbk_test.h"

static char model_dir[1024];

static void set_model_dir(void)
{
    const char *f = __FILE__, *slash = strrchr(f, '/');
    size_t n = slash ? (size_t)(slash - f) : 0;
    snprintf(model_dir, sizeof model_dir, "%.*s%surdf/", (int)n, f, slash ? "/" : "");
}

static mbk_system *load(const char *file, const mbk_urdf_options *o)
{
    char path[1200];
    mbk_system *sys = NULL;
    snprintf(path, sizeof path, "%s%s", model_dir, file);
    if (!CHECK(mbk_urdf_load(path, o, &sys) == MBK_OK)) fprintf(stderr, "  %s: %s\n", file, mbk_last_error());
    return sys;
}

static double urand(unsigned *seed, double lo, double hi)
{
    *seed = *seed * 1664525u + 1013904223u;
    return lo + (hi - lo) * ((*seed >> 8) / 16777216.0);
}

/* ---- rotations written out from the URDF definitions ---- */
static mbk_mat33 Rx(double a) { return (mbk_mat33){{{1, 0, 0}, {0, cos(a), -sin(a)}, {0, sin(a), cos(a)}}}; }
static mbk_mat33 Ry(double a) { return (mbk_mat33){{{cos(a), 0, sin(a)}, {0, 1, 0}, {-sin(a), 0, cos(a)}}}; }
static mbk_mat33 Rz(double a) { return (mbk_mat33){{{cos(a), -sin(a), 0}, {sin(a), cos(a), 0}, {0, 0, 1}}}; }
/* URDF rpy: fixed axes x, y, z, i.e. R = Rz(y) Ry(p) Rx(r) */
static mbk_mat33 rpy(double r, double p, double y) { return mbk_mat33_mul(Rz(y), mbk_mat33_mul(Ry(p), Rx(r))); }
/* Rodrigues: rotation by angle about unit axis k */
static mbk_mat33 axis_angle(mbk_vec3 k, double a)
{
    k = mbk_vec3_normalize(k);
    mbk_mat33 K = {{{0, -k.z, k.y}, {k.z, 0, -k.x}, {-k.y, k.x, 0}}};
    mbk_mat33 R = mbk_mat33_identity();
    for (int i = 0; i < 3; ++i)
        for (int j = 0; j < 3; ++j) {
            double K2 = 0;
            for (int l = 0; l < 3; ++l) K2 += K.m[i][l] * K.m[l][j];
            R.m[i][j] += sin(a) * K.m[i][j] + (1 - cos(a)) * K2;
        }
    return R;
}

static double tf_diff(mbk_transform a, mbk_transform b)
{
    double e = fabs(a.p.x - b.p.x) + fabs(a.p.y - b.p.y) + fabs(a.p.z - b.p.z);
    for (int i = 0; i < 3; ++i)
        for (int j = 0; j < 3; ++j) e = fmax(e, fabs(a.R.m[i][j] - b.R.m[i][j]));
    return e;
}

static int force_params(const mbk_system *sys, const char *name, double *p, int n)
{
    const mbk_forces *f = mbk_multibody_get_forces(sys);
    int k = mbk_force_find(f, name);
    if (k < 0) return -1;
    return mbk_force_get_parameters(f, mbk_system_get_default_state(sys), k, p, n) == MBK_OK ? k : -2;
}

/* ---- names, forces and options on the double pendulum ---- */
static void test_names_and_options(void)
{
    mbk_system *sys = load("double_pendulum.urdf", NULL);
    if (!sys) return;
    const mbk_matter *m = mbk_multibody_get_matter(sys);
    CHECK(mbk_system_is_topology_realized(sys));
    CHECK_INT(mbk_matter_get_num_bodies(m), 3);
    CHECK_INT(mbk_matter_get_num_mobilities(m), 2);
    CHECK_INT(mbk_matter_find_body(m, "world"), 0);
    CHECK_INT(mbk_matter_find_body(m, "upper"), 1);
    CHECK_INT(mbk_matter_find_body(m, "lower"), 2);
    CHECK_INT(mbk_matter_find_body(m, "nope"), -1);
    CHECK_INT(mbk_urdf_find_joint(sys, "shoulder"), 1);
    CHECK_INT(mbk_urdf_find_joint(sys, "elbow"), 2);
    CHECK_INT(mbk_urdf_find_joint(sys, "knee"), -1);
    CHECK_INT(mbk_urdf_find_joint(sys, ""), -1);
    CHECK(!strcmp(mbk_urdf_get_robot_name(sys), "double_pendulum"));
    CHECK(!strcmp(mbk_system_get_name(sys), "double_pendulum"));
    CHECK(!strcmp(mbk_urdf_get_joint_type(sys, 1), "revolute") && !strcmp(mbk_urdf_get_joint_type(sys, 2), "continuous"));
    CHECK(!strcmp(mbk_urdf_get_joint_type(sys, 0), "") && !strcmp(mbk_urdf_get_joint_name(sys, 0), ""));
    CHECK(!strcmp(mbk_urdf_get_link_name(sys, 0), "world") && !strcmp(mbk_urdf_get_joint_name(sys, 2), "elbow"));
    CHECK(mbk_urdf_get_link_name(sys, 3) == NULL && mbk_urdf_get_joint_type(sys, -1) == NULL);
    double p[4] = {0};
    CHECK(force_params(sys, "gravity", p, 4) >= 0 && p[0] == 0 && p[1] == 0 && p[2] == -9.81);
    CHECK(force_params(sys, "limit:shoulder", p, 4) >= 0 && p[0] == 1e4 && p[1] == 1.0 && p[2] == -3 && p[3] == 3);
    CHECK(force_params(sys, "damping:shoulder", p, 1) >= 0 && p[0] == 0.05);
    CHECK(mbk_force_find(mbk_multibody_get_forces(sys), "limit:elbow") < 0);   /* continuous */
    CHECK(mbk_force_find(mbk_multibody_get_forces(sys), "damping:elbow") < 0); /* no damping */
    mbk_system_destroy(sys);

    mbk_urdf_options o = mbk_urdf_options_default();
    o.gravity = mbk_vec3_make(1, 2, 3);
    o.limits_as_stops = false;
    o.damping_as_dampers = false;
    o.realize_topology = false;
    sys = load("double_pendulum.urdf", &o);
    if (!sys) return;
    CHECK(!mbk_system_is_topology_realized(sys));
    CHECK(mbk_system_realize_topology(sys) == MBK_OK);
    CHECK(force_params(sys, "gravity", p, 4) >= 0 && p[0] == 1 && p[1] == 2 && p[2] == 3);
    CHECK(mbk_force_find(mbk_multibody_get_forces(sys), "limit:shoulder") < 0);
    CHECK(mbk_force_find(mbk_multibody_get_forces(sys), "damping:shoulder") < 0);
    CHECK_INT(mbk_forces_get_num_elements(mbk_multibody_get_forces(sys)), 1);
    mbk_system_destroy(sys);

    o = mbk_urdf_options_default();
    o.stop_stiffness = 123, o.stop_dissipation = 0.5;
    sys = load("arm7.urdf", &o);
    if (!sys) return;
    CHECK(force_params(sys, "limit:j4", p, 4) >= 0 && p[0] == 123 && p[1] == 0.5 && p[2] == -0.1 && p[3] == 0.15);
    CHECK(force_params(sys, "damping:j4", p, 1) >= 0 && p[0] == 2.0);
    CHECK(mbk_force_find(mbk_multibody_get_forces(sys), "limit:j7") < 0);
    CHECK_INT(mbk_matter_get_num_bodies(mbk_multibody_get_matter(sys)), 10); /* Ground + 9 links */
    CHECK_INT(mbk_matter_get_num_mobilities(mbk_multibody_get_matter(sys)), 7);
    CHECK(!strcmp(mbk_urdf_get_joint_type(sys, mbk_urdf_find_joint(sys, "tool_mount")), "fixed"));
    CHECK(!strcmp(mbk_urdf_get_joint_type(sys, mbk_urdf_find_joint(sys, "j4")), "prismatic"));
    mbk_system_destroy(sys);
}

/* ---- poses against forward kinematics written out here ---- */

typedef struct fk_joint {
    const char *name, *type;
    double xyz[3], rpy[3], axis[3];
} fk_joint;

/* the arm7 chain, copied from tests/urdf/arm7.urdf */
static const fk_joint arm7[] = {
    {"mount", "fixed", {0.1, -0.2, 0.3}, {0, 0, 0.7}, {1, 0, 0}},
    {"j1", "revolute", {0, 0, 0.1}, {0, 0, 0}, {0, 0, 1}},
    {"j2", "revolute", {0, 0, 0.25}, {1.5707963267948966, 0, 0}, {0, 1, 0}},
    {"j3", "revolute", {0.3, 0, 0}, {0, 0, -0.4}, {1, 0, 0}},
    {"j4", "prismatic", {0.2, 0, 0}, {0, 0.5, 0}, {0.6, 0, 0.8}},
    {"j5", "revolute", {0.15, 0.02, 0}, {-0.3, 0.2, 0.1}, {0, 1, 1}},
    {"j6", "revolute", {0, 0.1, 0.05}, {0, 0, 0}, {0, 0, -1}},
    {"j7", "continuous", {0.05, 0, 0.08}, {0.3, -0.6, 1.1}, {0.2, 0.3, -0.9}},
    {"tool_mount", "fixed", {0, 0, 0.07}, {3.14159, 0, 0}, {1, 0, 0}},
};

static void test_arm_kinematics(void)
{
    mbk_system *sys = load("arm7.urdf", NULL);
    if (!sys) return;
    const mbk_matter *m = mbk_multibody_get_matter(sys);
    mbk_state *s = mbk_state_create();
    CHECK(mbk_state_init(s, sys) == MBK_OK && mbk_system_realize(sys, s, MBK_STAGE_MODEL) == MBK_OK);
    unsigned seed = 7;
    double worst = 0;
    for (int trial = 0; trial < 50; ++trial) {
        double qv[9];
        for (int i = 0; i < 9; ++i) {
            int b = mbk_urdf_find_joint(sys, arm7[i].name);
            qv[i] = strcmp(arm7[i].type, "fixed") ? urand(&seed, -0.1, 0.15) * (strcmp(arm7[i].type, "prismatic") ? 20 : 1) : 0;
            if (strcmp(arm7[i].type, "fixed")) mbk_state_upd_q(s)[mbk_matter_get_body_q_start(m, s, b)] = qv[i];
        }
        CHECK(mbk_system_realize(sys, s, MBK_STAGE_POSITION) == MBK_OK);
        mbk_transform X = mbk_transform_identity();
        for (int i = 0; i < 9; ++i) {
            const fk_joint *j = &arm7[i];
            mbk_transform O = mbk_transform_make(rpy(j->rpy[0], j->rpy[1], j->rpy[2]),
                                                 mbk_vec3_make(j->xyz[0], j->xyz[1], j->xyz[2]));
            X = mbk_transform_compose(X, O);
            mbk_vec3 a = mbk_vec3_normalize(mbk_vec3_make(j->axis[0], j->axis[1], j->axis[2]));
            if (!strcmp(j->type, "revolute") || !strcmp(j->type, "continuous"))
                X = mbk_transform_compose(X, mbk_transform_make(axis_angle(a, qv[i]), mbk_vec3_zero()));
            else if (!strcmp(j->type, "prismatic"))
                X = mbk_transform_compose(X, mbk_transform_from_p(mbk_vec3_scale(a, qv[i])));
            mbk_transform Xb;
            int b = mbk_urdf_find_joint(sys, j->name);
            CHECK(mbk_matter_get_body_transform(m, s, b, &Xb) == MBK_OK);
            worst = fmax(worst, tf_diff(X, Xb));
        }
    }
    CHECK(worst < 1e-13);
    printf("arm7: body poses = URDF forward kinematics to %.1e over 50 random q\n", worst);
    mbk_state_destroy(s);
    mbk_system_destroy(sys);
}

/* ---- full inertia tensors rotated by the inertial frame ---- */
static void test_inertia(void)
{
    mbk_system *sys = load("full_inertia_pendulum.urdf", NULL);
    if (!sys) return;
    const mbk_matter *m = mbk_multibody_get_matter(sys);
    mbk_mass_props mp;
    CHECK(mbk_matter_get_body_mass_props(m, mbk_matter_find_body(m, "upper"), &mp) == MBK_OK);
    /* <origin xyz="0.02 0 -0.5" rpy="0.1 0.2 0.3"/>, ixx .10 ixy .01 ixz -.02 iyy .12 iyz .005 izz .03 */
    mbk_mat33 I = {{{0.10, 0.01, -0.02}, {0.01, 0.12, 0.005}, {-0.02, 0.005, 0.03}}};
    mbk_mat33 R = rpy(0.1, 0.2, 0.3), IB = mbk_mat33_mul(R, mbk_mat33_mul(I, mbk_mat33_transpose(R)));
    double e = fabs(mp.mass - 1.2) + fabs(mp.com.x - 0.02) + fabs(mp.com.y) + fabs(mp.com.z + 0.5);
    for (int i = 0; i < 3; ++i)
        for (int j = 0; j < 3; ++j) e = fmax(e, fabs(mp.inertia.m[i][j] - IB.m[i][j]));
    CHECK(e < 1e-15);
    mbk_system_destroy(sys);

    /* a link without <inertial> is massless; a massless leaf on a fixed joint is fine */
    const char *xml = "<robot name=\"r\"><link name=\"base\"><inertial><mass value=\"2\"/><inertia ixx=\"1\" iyy=\"1\" "
                      "izz=\"1\" ixy=\"0\" ixz=\"0\" iyz=\"0\"/></inertial></link><link name=\"frame\"/>"
                      "<joint name=\"f\" type=\"fixed\"><parent link=\"base\"/><child link=\"frame\"/>"
                      "<origin xyz=\"0 0 1\"/></joint></robot>";
    CHECK(mbk_urdf_load_string(xml, NULL, &sys) == MBK_OK);
    m = mbk_multibody_get_matter(sys);
    CHECK(mbk_matter_get_body_mass_props(m, mbk_matter_find_body(m, "frame"), &mp) == MBK_OK && mp.mass == 0);
    CHECK(!strcmp(mbk_urdf_get_joint_type(sys, mbk_matter_find_body(m, "base")), "fixed"));
    CHECK(!strcmp(mbk_urdf_get_joint_name(sys, mbk_matter_find_body(m, "base")), ""));
    CHECK(!strcmp(mbk_urdf_get_robot_name(sys), "r"));
    mbk_system_destroy(sys);
}

/* ---- floating_base: the root on a Free mobilizer equals a floating joint to world ---- */
static void test_floating_base(void)
{
    static const char *body =
        "<link name=\"base\"><inertial><origin xyz=\"0.1 0 0\" rpy=\"0.2 0 0\"/><mass value=\"3\"/>"
        "<inertia ixx=\"0.3\" iyy=\"0.2\" izz=\"0.25\" ixy=\"0\" ixz=\"0\" iyz=\"0\"/></inertial></link>"
        "<link name=\"leg\"><inertial><origin xyz=\"0 0 -0.3\"/><mass value=\"1\"/>"
        "<inertia ixx=\"0.02\" iyy=\"0.02\" izz=\"0.003\" ixy=\"0\" ixz=\"0\" iyz=\"0\"/></inertial></link>"
        "<joint name=\"hip\" type=\"revolute\"><parent link=\"base\"/><child link=\"leg\"/>"
        "<origin xyz=\"0 0.1 -0.2\" rpy=\"0 0.3 0\"/><axis xyz=\"1 1 0\"/></joint>";
    char a[2048], b[2048];
    snprintf(a, sizeof a, "<robot name=\"a\">%s</robot>", body);
    snprintf(b, sizeof b,
             "<robot name=\"b\"><link name=\"world\"/><joint name=\"free\" type=\"floating\"><parent link=\"world\"/>"
             "<child link=\"base\"/></joint>%s</robot>", body);
    mbk_urdf_options o = mbk_urdf_options_default();
    o.floating_base = true;
    mbk_system *sa = NULL, *sb = NULL;
    CHECK(mbk_urdf_load_string(a, &o, &sa) == MBK_OK);
    CHECK(mbk_urdf_load_string(b, NULL, &sb) == MBK_OK);
    if (!sa || !sb) goto out;
    CHECK(!strcmp(mbk_urdf_get_joint_type(sa, 1), "floating") && !strcmp(mbk_urdf_get_joint_name(sa, 1), ""));
    CHECK(!strcmp(mbk_urdf_get_joint_type(sb, 1), "floating") && mbk_urdf_find_joint(sb, "free") == 1);
    mbk_state *x = mbk_state_create(), *y = mbk_state_create();
    CHECK(mbk_state_init(x, sa) == MBK_OK && mbk_state_init(y, sb) == MBK_OK);
    CHECK(mbk_system_realize(sa, x, MBK_STAGE_MODEL) == MBK_OK && mbk_system_realize(sb, y, MBK_STAGE_MODEL) == MBK_OK);
    CHECK_INT(mbk_state_get_nq(x), 8);
    CHECK_INT(mbk_state_get_nu(x), 7);
    unsigned seed = 99;
    double e = 0;
    for (int t = 0; t < 20; ++t) {
        for (int i = 0; i < 8; ++i) mbk_state_upd_q(x)[i] = mbk_state_upd_q(y)[i] = urand(&seed, -1, 1);
        for (int i = 0; i < 7; ++i) mbk_state_upd_u(x)[i] = mbk_state_upd_u(y)[i] = urand(&seed, -1, 1);
        CHECK(mbk_system_realize(sa, x, MBK_STAGE_ACCELERATION) == MBK_OK);
        CHECK(mbk_system_realize(sb, y, MBK_STAGE_ACCELERATION) == MBK_OK);
        for (int i = 0; i < 7; ++i) e = fmax(e, fabs(mbk_state_get_udot(x)[i] - mbk_state_get_udot(y)[i]));
    }
    CHECK(e == 0.0);
    mbk_state_destroy(x);
    mbk_state_destroy(y);
    /* without floating_base the root is welded to Ground */
    mbk_system_destroy(sa);
    sa = NULL;
    CHECK(mbk_urdf_load_string(a, NULL, &sa) == MBK_OK);
    CHECK(sa && !strcmp(mbk_urdf_get_joint_type(sa, 1), "fixed"));
    CHECK(sa && mbk_matter_get_num_mobilities(mbk_multibody_get_matter(sa)) == 1);
out:
    mbk_system_destroy(sa);
    mbk_system_destroy(sb);
}

/* ---- planar: rotation about the axis and translation in the plane ---- */
static void test_planar(void)
{
    mbk_system *sys = load("planar_tray.urdf", NULL);
    if (!sys) return;
    const mbk_matter *m = mbk_multibody_get_matter(sys);
    mbk_state *s = mbk_state_create();
    CHECK(mbk_state_init(s, sys) == MBK_OK && mbk_system_realize(sys, s, MBK_STAGE_MODEL) == MBK_OK);
    int puck = mbk_urdf_find_joint(sys, "slide_plane"), carriage = mbk_urdf_find_joint(sys, "rail");
    CHECK_INT(mbk_matter_get_body_num_q(m, s, puck), 3);
    double *q = mbk_state_upd_q(s);
    int q0 = mbk_matter_get_body_q_start(m, s, puck);
    q[q0] = 0.7, q[q0 + 1] = 0.2, q[q0 + 2] = -0.3;
    CHECK(mbk_system_realize(sys, s, MBK_STAGE_POSITION) == MBK_OK);
    mbk_transform Xc, Xp;
    mbk_matter_get_body_transform(m, s, carriage, &Xc);
    mbk_matter_get_body_transform(m, s, puck, &Xp);
    mbk_transform X_cp = mbk_transform_compose(mbk_transform_invert(Xc), Xp);
    /* origin xyz 0 0.05 0.1 rpy 0.3 0 0; axis (1 0 1)/sqrt 2 */
    mbk_mat33 O = rpy(0.3, 0, 0);
    mbk_vec3 n = mbk_vec3_normalize(mbk_vec3_make(1, 0, 1));
    mbk_mat33 R_expect = mbk_mat33_mul(O, axis_angle(n, 0.7));
    double e = 0;
    for (int i = 0; i < 3; ++i)
        for (int j = 0; j < 3; ++j) e = fmax(e, fabs(X_cp.R.m[i][j] - R_expect.m[i][j]));
    /* the translation lies in the plane normal to the axis, with length |(0.2, -0.3)| */
    mbk_vec3 d = mbk_mat33_transpose_mul_vec(O, mbk_vec3_sub(X_cp.p, mbk_vec3_make(0, 0.05, 0.1)));
    e = fmax(e, fabs(mbk_vec3_dot(d, n)));
    e = fmax(e, fabs(mbk_vec3_norm(d) - sqrt(0.13)));
    CHECK(e < 1e-14);
    mbk_state_destroy(s);
    mbk_system_destroy(sys);
}

/* ---- mimic joints as constraints ---- */
static void test_mimic(void)
{
    mbk_system *sys = load("gripper.urdf", NULL);
    if (!sys) return;
    const mbk_matter *m = mbk_multibody_get_matter(sys);
    CHECK_INT(mbk_matter_get_num_constraints(m), 2);
    mbk_state *s = mbk_state_create();
    CHECK(mbk_state_init(s, sys) == MBK_OK && mbk_system_realize(sys, s, MBK_STAGE_MODEL) == MBK_OK);
    int w = mbk_urdf_find_joint(sys, "wrist"), fl = mbk_urdf_find_joint(sys, "finger_left_joint");
    int fr = mbk_urdf_find_joint(sys, "finger_right_joint"), th = mbk_urdf_find_joint(sys, "thumb_joint");
    int qw = mbk_matter_get_body_q_start(m, s, w), ql = mbk_matter_get_body_q_start(m, s, fl);
    int qr = mbk_matter_get_body_q_start(m, s, fr), qt = mbk_matter_get_body_q_start(m, s, th);
    double *q = mbk_state_upd_q(s), *u = mbk_state_upd_u(s);
    q[qw] = 0.4, q[ql] = 0.02, q[qr] = 0.0, q[qt] = 0.5;
    u[qw] = 0.3, u[ql] = -0.1, u[qr] = 0.2, u[qt] = 0.0;
    /* project onto the constraints (mimic q and u), then the relations hold at every level */
    CHECK(mbk_system_project(sys, s, 1e-12) == MBK_OK);
    CHECK(mbk_system_realize(sys, s, MBK_STAGE_ACCELERATION) == MBK_OK);
    q = (double *)mbk_state_get_q(s), u = (double *)mbk_state_get_u(s);
    const double *ud = mbk_state_get_udot(s);
    CHECK_NEAR(q[qr], q[ql], 1e-11);
    CHECK_NEAR(q[qt], -0.5 * q[qw] + 0.1, 1e-11);
    CHECK_NEAR(u[qr], u[ql], 1e-11);
    CHECK_NEAR(u[qt], -0.5 * u[qw], 1e-11);
    CHECK_NEAR(ud[qr], ud[ql], 1e-9);
    CHECK_NEAR(ud[qt], -0.5 * ud[qw], 1e-9);
    CHECK(fabs(ud[qw]) > 1e-3); /* gravity acts: not a trivial zero */
    mbk_state_destroy(s);
    mbk_system_destroy(sys);

    mbk_urdf_options o = mbk_urdf_options_default();
    o.mimic_as_couplers = false;
    sys = load("gripper.urdf", &o);
    if (sys) CHECK_INT(mbk_matter_get_num_constraints(mbk_multibody_get_matter(sys)), 0);
    mbk_system_destroy(sys);
}

/* ---- warnings, file = string ---- */
static int n_warnings;
static char last_warning[512];
static void on_warning(void *user, const char *msg)
{
    (void)user;
    n_warnings++;
    snprintf(last_warning, sizeof last_warning, "%s", msg);
}

static void test_warnings_and_strings(void)
{
    const char *xml =
        "<robot name=\"w\">\n<link name=\"world\"><inertial><mass value=\"1\"/><inertia ixx=\"1\" iyy=\"1\" izz=\"1\" "
        "ixy=\"0\" ixz=\"0\" iyz=\"0\"/></inertial></link>\n"
        "<link name=\"a\"><inertial><mass value=\"1\"/><inertia ixx=\"1\" iyy=\"1\" izz=\"1\" ixy=\"0\" ixz=\"0\" "
        "iyz=\"0\"/></inertial><visual><geometry><box size=\"1 1 1\"/></geometry></visual></link>\n"
        "<joint name=\"j\" type=\"continuous\"><parent link=\"world\"/><child link=\"a\"/>\n"
        "<limit lower=\"-1\" upper=\"1\"/>\n<dynamics friction=\"0.5\"/><calibration rising=\"0\"/></joint>\n"
        "<transmission name=\"t\"><joint name=\"j\"/></transmission><gazebo reference=\"a\"><link name=\"zz\"/></gazebo>\n"
        "</robot>\n";
    mbk_urdf_options o = mbk_urdf_options_default();
    o.warning = on_warning;
    mbk_system *sys = NULL;
    CHECK(mbk_urdf_load_string(xml, &o, &sys) == MBK_OK);
    CHECK_INT(n_warnings, 3);
    CHECK(strstr(last_warning, "<string>:6:") && strstr(last_warning, "friction"));
    CHECK(sys && mbk_matter_get_num_bodies(mbk_multibody_get_matter(sys)) == 2); /* the gazebo <link> is not a link */
    mbk_system_destroy(sys);
    n_warnings = 0;
    CHECK(mbk_urdf_load_string(xml, NULL, &sys) == MBK_OK && n_warnings == 0); /* no callback: silent */
    mbk_system_destroy(sys);

    /* the same model from a file and from a string */
    char path[1200];
    snprintf(path, sizeof path, "%sarm7.urdf", model_dir);
    FILE *f = fopen(path, "rb");
    if (!CHECK(f != NULL)) return;
    char *text = calloc(1, 1 << 16);
    size_t n = fread(text, 1, (1 << 16) - 1, f);
    fclose(f);
    text[n] = '\0';
    mbk_system *a = load("arm7.urdf", NULL), *b = NULL;
    CHECK(mbk_urdf_load_string(text, NULL, &b) == MBK_OK);
    if (a && b) {
        mbk_state *x = mbk_state_create(), *y = mbk_state_create();
        mbk_state_init(x, a), mbk_state_init(y, b);
        mbk_system_realize(a, x, MBK_STAGE_MODEL), mbk_system_realize(b, y, MBK_STAGE_MODEL);
        for (int i = 0; i < 7; ++i) mbk_state_upd_q(x)[i] = mbk_state_upd_q(y)[i] = 0.1 * i;
        CHECK(mbk_system_realize(a, x, MBK_STAGE_ACCELERATION) == MBK_OK);
        CHECK(mbk_system_realize(b, y, MBK_STAGE_ACCELERATION) == MBK_OK);
        CHECK(memcmp(mbk_state_get_udot(x), mbk_state_get_udot(y), 7 * sizeof(double)) == 0);
        mbk_state_destroy(x), mbk_state_destroy(y);
    }
    mbk_system_destroy(a);
    mbk_system_destroy(b);
    free(text);
}

/* ---- force elements of long names ---- */

/* Index of the element named prefix:name (whole), or -1. */
static int find_prefixed(const mbk_forces *f, const char *prefix, const char *name)
{
    char full[512];
    snprintf(full, sizeof full, "%s:%s", prefix, name);
    return mbk_force_find(f, full);
}

/* Two joints and two links whose long names differ only in their last byte: each has its
   own limit:, damping: and contact: element (names were cut at 63 bytes and collided). */
static void test_long_names(void)
{
    char stem[201], ja[210], jb[210], la[210], lb[210], xml[4096];
    memset(stem, 'n', 200);
    stem[200] = '\0';
    snprintf(ja, sizeof ja, "joint_%s_A", stem), snprintf(jb, sizeof jb, "joint_%s_B", stem);
    snprintf(la, sizeof la, "link_%s_A", stem), snprintf(lb, sizeof lb, "link_%s_B", stem);
    const char *link = "<link name=\"%s\"><inertial><origin xyz=\"0 0 -0.5\"/><mass value=\"1\"/><inertia ixx=\"0.1\" "
                       "iyy=\"0.1\" izz=\"0.1\" ixy=\"0\" ixz=\"0\" iyz=\"0\"/></inertial><collision><geometry>"
                       "<sphere radius=\"0.05\"/></geometry></collision></link>\n";
    const char *joint = "<joint name=\"%s\" type=\"revolute\"><parent link=\"%s\"/><child link=\"%s\"/><axis xyz=\"0 1 0\"/>"
                        "<limit lower=\"%s\" upper=\"1\"/><dynamics damping=\"%s\"/></joint>\n";
    int n = snprintf(xml, sizeof xml, "<robot name=\"long\"><link name=\"world\"/>\n");
    n += snprintf(xml + n, sizeof xml - (size_t)n, link, la);
    n += snprintf(xml + n, sizeof xml - (size_t)n, link, lb);
    n += snprintf(xml + n, sizeof xml - (size_t)n, joint, ja, "world", la, "-1", "0.5");
    n += snprintf(xml + n, sizeof xml - (size_t)n, joint, jb, la, lb, "-2", "0.7");
    snprintf(xml + n, sizeof xml - (size_t)n, "</robot>\n");
    mbk_urdf_options o = mbk_urdf_options_default();
    o.ground_contact = true;
    mbk_system *sys = NULL;
    if (!CHECK(mbk_urdf_load_string(xml, &o, &sys) == MBK_OK)) {
        fprintf(stderr, "  %s\n", mbk_last_error());
        return;
    }
    const mbk_forces *f = mbk_multibody_get_forces(sys);
    const mbk_state *s = mbk_system_get_default_state(sys);
    int lim[2] = {find_prefixed(f, "limit", ja), find_prefixed(f, "limit", jb)};
    int damp[2] = {find_prefixed(f, "damping", ja), find_prefixed(f, "damping", jb)};
    int con[2] = {find_prefixed(f, "contact", la), find_prefixed(f, "contact", lb)};
    CHECK(lim[0] >= 0 && lim[1] >= 0 && lim[0] != lim[1]);
    CHECK(damp[0] >= 0 && damp[1] >= 0 && damp[0] != damp[1]);
    CHECK(con[0] >= 0 && con[1] >= 0 && con[0] != con[1]);
    if (lim[0] < 0 || lim[1] < 0 || damp[0] < 0 || damp[1] < 0 || con[0] < 0 || con[1] < 0) goto out;
    /* each is its own joint's or link's */
    double p[4];
    CHECK(mbk_force_get_parameters(f, s, lim[0], p, 4) == MBK_OK && p[2] == -1 && p[3] == 1);
    CHECK(mbk_force_get_parameters(f, s, lim[1], p, 4) == MBK_OK && p[2] == -2 && p[3] == 1);
    CHECK(mbk_force_get_parameters(f, s, damp[0], p, 1) == MBK_OK && p[0] == 0.5);
    CHECK(mbk_force_get_parameters(f, s, damp[1], p, 1) == MBK_OK && p[0] == 0.7);
    const mbk_matter *m = mbk_multibody_get_matter(sys);
    int body[2] = {-1, -1};
    mbk_force_get_hunt_crossley_sphere(f, con[0], &body[0], NULL, NULL, NULL);
    mbk_force_get_hunt_crossley_sphere(f, con[1], &body[1], NULL, NULL, NULL);
    CHECK(body[0] == mbk_matter_find_body(m, la) && body[1] == mbk_matter_find_body(m, lb) && body[0] != body[1]);
    char full[512];
    snprintf(full, sizeof full, "limit:%s", jb);
    CHECK(strcmp(mbk_force_get_name(f, lim[1]), full) == 0);
out:
    mbk_system_destroy(sys);
}

/* ---- encodings: the document's declaration decides ---- */

/* A Latin-1 file (its declaration says ISO-8859-1; a link name and a comment have bytes
   above 127) loads, its names reach the System as UTF-8; the same text from a string too,
   and UTF-8 without a declaration stays the default. */
static void test_encodings(void)
{
    mbk_system *sys = load("latin1_pendulum.urdf", NULL);
    if (sys) {
        const mbk_matter *m = mbk_multibody_get_matter(sys);
        CHECK_INT(mbk_matter_find_body(m, "Gel\xc3\xa4nk"), 1); /* "Gelänk" in UTF-8 */
        CHECK_INT(mbk_urdf_find_joint(sys, "Schwenkachse_\xc3\x9f"), 1);
        CHECK(find_prefixed(mbk_multibody_get_forces(sys), "damping", "Schwenkachse_\xc3\x9f") >= 0);
    }
    mbk_system_destroy(sys);
    const char *fmt = "%s<robot name=\"e\"><link name=\"world\"/><link name=\"%s\"><inertial><mass value=\"1\"/>"
                      "<inertia ixx=\"1\" iyy=\"1\" izz=\"1\" ixy=\"0\" ixz=\"0\" iyz=\"0\"/></inertial></link>"
                      "<joint name=\"j\" type=\"continuous\"><parent link=\"world\"/><child link=\"%s\"/></joint></robot>";
    static const struct { const char *decl, *name; } doc[] = {
        {"<?xml version=\"1.0\" encoding=\"ISO-8859-1\"?>", "Arm\xe9"}, /* "Armé" in Latin-1 */
        {"<?xml version=\"1.0\" encoding=\"UTF-8\"?>", "Arm\xc3\xa9"},
        {"", "Arm\xc3\xa9"},                                             /* no declaration: UTF-8 */
    };
    for (int i = 0; i < 3; ++i) {
        char xml[1024];
        snprintf(xml, sizeof xml, fmt, doc[i].decl, doc[i].name, doc[i].name);
        sys = NULL;
        CHECK(mbk_urdf_load_string(xml, NULL, &sys) == MBK_OK);
        CHECK(sys && mbk_matter_find_body(mbk_multibody_get_matter(sys), "Arm\xc3\xa9") == 1);
        mbk_system_destroy(sys);
    }
}

/* ---- axes of any finite length ---- */

/* An axis of huge (1e200, 1e300) or small (1e-11) components is the same direction as
   1 1 0: the poses equal the written-out rotation about (1, 1, 0)/sqrt 2 (the squares of
   1e200 overflowed to a zero axis); one of length 4e-160 is refused as too short, saying
   the threshold, not "zero length". */
static void test_axis_scale(void)
{
    static const char *axes[] = {"1 1 0", "1e200 1e200 0", "-1e300 -1e300 0", "1e-11 1e-11 0", "3e-160 3e-160 0"};
    for (int i = 0; i < 5; ++i) {
        char xml[1024];
        snprintf(xml, sizeof xml,
                 "<robot name=\"a\"><link name=\"world\"/><link name=\"a\"><inertial><mass value=\"1\"/><inertia "
                 "ixx=\"1\" iyy=\"1\" izz=\"1\" ixy=\"0\" ixz=\"0\" iyz=\"0\"/></inertial></link><joint name=\"j\" "
                 "type=\"continuous\"><parent link=\"world\"/><child link=\"a\"/><axis xyz=\"%s\"/></joint></robot>",
                 axes[i]);
        mbk_system *sys = NULL;
        int rc = mbk_urdf_load_string(xml, NULL, &sys);
        if (!CHECK(rc == (i == 4 ? MBK_EPARSE : MBK_OK)))
            fprintf(stderr, "  axis %s: %s\n", axes[i], mbk_last_error());
        if (i == 4) CHECK(strstr(mbk_last_error(), "not above 1e-12") != NULL); /* 4e-160: too short */
        if (!sys) continue;
        mbk_state *s = mbk_state_create();
        CHECK(mbk_state_init(s, sys) == MBK_OK && mbk_system_realize(sys, s, MBK_STAGE_MODEL) == MBK_OK);
        double sign = axes[i][0] == '-' ? -1 : 1, e = 0;
        for (int t = 0; t < 8; ++t) {
            double q = -2.0 + 0.6 * t;
            mbk_state_upd_q(s)[0] = q;
            CHECK(mbk_system_realize(sys, s, MBK_STAGE_POSITION) == MBK_OK);
            mbk_transform X;
            mbk_matter_get_body_transform(mbk_multibody_get_matter(sys), s, 1, &X);
            mbk_mat33 R = axis_angle(mbk_vec3_make(sign, sign, 0), q);
            e = fmax(e, tf_diff(X, mbk_transform_make(R, mbk_vec3_zero())));
        }
        if (!CHECK(e < 1e-15)) fprintf(stderr, "  axis %s: poses differ by %g\n", axes[i], e);
        mbk_state_destroy(s);
        mbk_system_destroy(sys);
    }
}

/* ---- a big input: a 20000-link chain (no recursion, no quadratic lookups) ---- */
/* Every joint has limits, damping and friction, so the force subsystem has 3 N + 1
   elements (realizing its Topology was quadratic in them: one State rebuild each). */
static void test_large(void)
{
    enum { N = 20000 };
    size_t cap = (size_t)N * 520;
    char *xml = malloc(cap), *p = xml;
    p += sprintf(p, "<robot name=\"chain\"><link name=\"world\"/>\n");
    for (int i = 0; i < N; ++i) {
        char parent[32];
        if (i) snprintf(parent, sizeof parent, "l%d", i - 1);
        else snprintf(parent, sizeof parent, "world");
        p += sprintf(p, "<link name=\"l%d\"><inertial><mass value=\"1\"/><inertia ixx=\"1\" iyy=\"1\" izz=\"1\" ixy=\"0\" "
                        "ixz=\"0\" iyz=\"0\"/></inertial></link>\n<joint name=\"j%d\" type=\"revolute\"><parent "
                        "link=\"%s\"/><child link=\"l%d\"/><origin xyz=\"0 0 -1\"/><axis xyz=\"1 0 0\"/><limit "
                        "lower=\"-%d.5\" upper=\"1\"/><dynamics damping=\"%d\" friction=\"0.25\"/></joint>\n",
                     i, i, parent, i, i % 7, 1 + i % 5);
    }
    p += sprintf(p, "</robot>\n");
    mbk_urdf_options o = mbk_urdf_options_default();
    o.friction_as_elements = true;
    mbk_system *sys = NULL;
    CHECK(mbk_urdf_load_string(xml, &o, &sys) == MBK_OK);
    if (sys) {
        const mbk_forces *f = mbk_multibody_get_forces(sys);
        CHECK_INT(mbk_matter_get_num_bodies(mbk_multibody_get_matter(sys)), N + 1);
        CHECK_INT(mbk_urdf_find_joint(sys, "j19999"), N);
        CHECK_INT(mbk_forces_get_num_elements(f), 3 * N + 1);
        /* each element its own numbers, the last ones too */
        double v[4];
        CHECK(force_params(sys, "limit:j19999", v, 4) >= 0 && v[2] == -(19999 % 7) - 0.5 && v[3] == 1);
        CHECK(force_params(sys, "damping:j19998", v, 1) >= 0 && v[0] == 1 + 19998 % 5);
        CHECK(force_params(sys, "friction:j19997", v, 2) >= 0 && v[0] == 0.25);
        mbk_state *s = mbk_state_create();
        CHECK(mbk_state_init(s, sys) == MBK_OK && mbk_system_realize(sys, s, MBK_STAGE_MODEL) == MBK_OK);
        CHECK_INT(mbk_state_get_nz(s), N); /* each friction element's dissipated energy */
        double w = -1;
        CHECK(mbk_force_get_dissipated_energy(f, s, mbk_force_find(f, "friction:j19999"), &w) == MBK_OK && w == 0);
        mbk_state_destroy(s);
    }
    mbk_system_destroy(sys);
    free(xml);
}

int main(void)
{
    set_model_dir();
    test_names_and_options();
    test_arm_kinematics();
    test_inertia();
    test_floating_base();
    test_planar();
    test_mimic();
    test_warnings_and_strings();
    test_long_names();
    test_encodings();
    test_axis_scale();
    test_large();
    return mbk_test_finish();
}
