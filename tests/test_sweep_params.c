/* The parameters a sweep varies per State, without rebuilding the System:
 *
 * (1) Body mass properties are Instance-stage variables of the State: a State
 *     whose mass properties were set gives bitwise the same positions'
 *     inertias, accelerations, mass matrix, energy and gravity as a System
 *     built with those mass properties; setting them invalidates Instance;
 *     the defaults are kept by other States; bad values are refused.
 * (2) Force parameters by name: every built-in's parameter names, lookup by
 *     name, element names and kinds.
 */
#define _POSIX_C_SOURCE 200809L
#include <mbk/mbk.h>
#include <stdlib.h>
#include <string.h>

#include "mbk_test.h"

/* A three-body chain (pin, ball, slider) with gravity and a spring; body 2's
   mass properties given. */
static mbk_system *build(const mbk_mass_props *mp2)
{
    mbk_system *sys = mbk_multibody_create("mass");
    mbk_matter *m = mbk_multibody_upd_matter(sys);
    mbk_forces *f = mbk_multibody_upd_forces(sys);
    mbk_mass_props a = mbk_mass_props_from_central(1.0, mbk_vec3_make(0.5, 0, 0), mbk_mat33_diag(0.01, 0.08, 0.08));
    mbk_mass_props c = mbk_mass_props_from_central(0.7, mbk_vec3_make(0.2, 0.1, 0), mbk_mat33_diag(0.02, 0.03, 0.04));
    mbk_transform I = mbk_transform_identity(), X = mbk_transform_from_p(mbk_vec3_make(1, 0, 0));
    int b1 = mbk_matter_add_body(m, 0, &I, &a, &I, mbk_mobilizer_pin());
    int b2 = mbk_matter_add_body(m, b1, &X, mp2, &I, mbk_mobilizer_ball());
    int b3 = mbk_matter_add_body(m, b2, &X, &c, &I, mbk_mobilizer_slider());
    int g = mbk_force_add_gravity(f, mbk_vec3_make(0, -9.81, -1));
    mbk_force_set_name(f, g, "gravity");
    int sp = mbk_force_add_two_point_linear_spring(f, 0, mbk_vec3_make(0, 1, 0), b3, mbk_vec3_zero(), 30, 0.5);
    mbk_force_set_name(f, sp, "spring1");
    if (mbk_system_realize_topology(sys) < 0) {
        fprintf(stderr, "%s\n", mbk_last_error());
        exit(1);
    }
    return sys;
}

static void set_state(const mbk_system *sys, mbk_state *s)
{
    mbk_state_init(s, sys);
    mbk_system_realize(sys, s, MBK_STAGE_MODEL);
    double *q = mbk_state_upd_q(s), *u = mbk_state_upd_u(s);
    int nq = mbk_state_get_nq(s), nu = mbk_state_get_nu(s);
    mbk_quat r = mbk_quat_from_axis_angle(mbk_vec3_make(0.3, 1, 0.2), 0.7);
    q[0] = 0.4, q[1] = r.w, q[2] = r.x, q[3] = r.y, q[4] = r.z, q[nq - 1] = 0.3;
    for (int i = 0; i < nu; ++i) u[i] = 0.1 * (i + 1) - 0.25;
}

static int same_doubles(const double *a, const double *b, int n) { return memcmp(a, b, sizeof(double) * (size_t)n) == 0; }

static void test_mass_props(void)
{
    mbk_mass_props base = mbk_mass_props_from_central(2.0, mbk_vec3_make(0.3, 0, 0.1), mbk_mat33_diag(0.05, 0.06, 0.07));
    mbk_mat33 Iod = {{{0.09, 0.01, -0.02}, {0.01, 0.11, 0.005}, {-0.02, 0.005, 0.13}}};
    mbk_mass_props other = mbk_mass_props_from_central(3.5, mbk_vec3_make(0.1, -0.2, 0.3), Iod);
    mbk_system *sys_a = build(&base), *sys_b = build(&other);
    const mbk_matter *ma = mbk_multibody_get_matter(sys_a), *mb = mbk_multibody_get_matter(sys_b);
    mbk_state *sa = mbk_state_create(), *sb = mbk_state_create(), *s0 = mbk_state_create();
    set_state(sys_a, sa);
    set_state(sys_b, sb);
    set_state(sys_a, s0);

    /* defaults, then the State's own */
    mbk_mass_props got;
    CHECK(mbk_matter_get_state_body_mass_props(ma, sa, 2, &got) == MBK_OK);
    CHECK_NEAR(got.mass, 2.0, 0);
    CHECK(mbk_system_realize(sys_a, sa, MBK_STAGE_POSITION) == MBK_OK);
    CHECK(mbk_matter_set_body_mass_props(ma, sa, 2, &other) == MBK_OK);
    CHECK(mbk_state_get_stage(sa) == MBK_STAGE_MODEL); /* Instance invalidated */
    CHECK(mbk_matter_get_state_body_mass_props(ma, sa, 2, &got) == MBK_OK);
    CHECK_NEAR(got.mass, 3.5, 0);
    CHECK_NEAR(got.com.y, -0.2, 1e-15);
    CHECK_NEAR(got.inertia.m[0][1], 0.01, 1e-14);
    double total = 0;
    CHECK(mbk_matter_calc_state_total_mass(ma, sa, &total) == MBK_OK);
    CHECK_NEAR(total, 1.0 + 3.5 + 0.7, 1e-15);
    CHECK_NEAR(mbk_matter_get_total_mass(ma), 1.0 + 2.0 + 0.7, 1e-15); /* the defaults */

    /* same results as the System built with those mass properties, bit for bit */
    CHECK(mbk_system_realize(sys_a, sa, MBK_STAGE_ACCELERATION) == MBK_OK);
    CHECK(mbk_system_realize(sys_b, sb, MBK_STAGE_ACCELERATION) == MBK_OK);
    int nu = mbk_state_get_nu(sa), ny = mbk_state_get_ny(sa);
    CHECK(same_doubles(mbk_state_get_ydot(sa), mbk_state_get_ydot(sb), ny));
    double Ma[64], Mb[64], ea[2], eb[2], Mv_a[8], Mv_b[8], v[8] = {1, -2, 0.5, 3, 0.25, -1, 2, 1};
    CHECK(mbk_matter_calc_mass_matrix(ma, sa, Ma) == MBK_OK && mbk_matter_calc_mass_matrix(mb, sb, Mb) == MBK_OK);
    CHECK(same_doubles(Ma, Mb, nu * nu));
    CHECK(mbk_matter_multiply_by_M_inverse(ma, sa, v, Mv_a) == MBK_OK &&
          mbk_matter_multiply_by_M_inverse(mb, sb, v, Mv_b) == MBK_OK);
    CHECK(same_doubles(Mv_a, Mv_b, nu));
    CHECK(mbk_system_calc_energy(sys_a, sa, &ea[0], &ea[1]) == MBK_OK);
    CHECK(mbk_system_calc_energy(sys_b, sb, &eb[0], &eb[1]) == MBK_OK);
    CHECK(same_doubles(ea, eb, 2));
    mbk_vec3 ca, cb;
    CHECK(mbk_matter_calc_mass_center_location(ma, sa, &ca) == MBK_OK);
    CHECK(mbk_matter_calc_mass_center_location(mb, sb, &cb) == MBK_OK);
    CHECK(ca.x == cb.x && ca.y == cb.y && ca.z == cb.z);

    /* another State of the same System keeps the defaults */
    CHECK(mbk_system_realize(sys_a, s0, MBK_STAGE_ACCELERATION) == MBK_OK);
    CHECK(!same_doubles(mbk_state_get_ydot(s0), mbk_state_get_ydot(sa), ny));
    /* copying a State copies its mass properties */
    mbk_state *sc = mbk_state_create();
    CHECK(mbk_state_copy(sc, sa) == MBK_OK);
    CHECK(mbk_system_realize(sys_a, sc, MBK_STAGE_ACCELERATION) == MBK_OK);
    CHECK(same_doubles(mbk_state_get_ydot(sc), mbk_state_get_ydot(sb), ny));
    /* setting the same values again keeps the stage */
    CHECK(mbk_matter_set_body_mass_props(ma, sc, 2, &other) == MBK_OK);
    CHECK(mbk_state_get_stage(sc) == MBK_STAGE_ACCELERATION);

    /* refusals */
    mbk_mass_props bad = other;
    bad.mass = -1;
    CHECK(mbk_matter_set_body_mass_props(ma, sc, 2, &bad) == MBK_EINVAL);
    bad = other;
    bad.com.x = NAN;
    CHECK(mbk_matter_set_body_mass_props(ma, sc, 2, &bad) == MBK_EINVAL);
    CHECK(mbk_matter_set_body_mass_props(ma, sc, 0, &other) == MBK_EINVAL);
    CHECK(mbk_matter_set_body_mass_props(ma, sc, 9, &other) == MBK_EINVAL);
    CHECK(mbk_matter_set_body_mass_props(ma, sc, 2, NULL) == MBK_EINVAL);
    CHECK(mbk_state_get_stage(sc) == MBK_STAGE_ACCELERATION);
    /* a massless body where it cannot be: the realization says so */
    mbk_mass_props none = mbk_mass_props_from_central(0, mbk_vec3_zero(), mbk_mat33_diag(0, 0, 0));
    CHECK(mbk_matter_set_body_mass_props(ma, sc, 3, &none) == MBK_OK);
    CHECK(mbk_system_realize(sys_a, sc, MBK_STAGE_ACCELERATION) < 0);

    mbk_state_destroy(sc);
    mbk_state_destroy(s0);
    mbk_state_destroy(sa);
    mbk_state_destroy(sb);
    mbk_system_destroy(sys_a);
    mbk_system_destroy(sys_b);
}

static void test_force_parameter_names(void)
{
    mbk_mass_props base = mbk_mass_props_from_central(2.0, mbk_vec3_make(0.3, 0, 0.1), mbk_mat33_diag(0.05, 0.06, 0.07));
    mbk_system *sys = build(&base);
    const mbk_forces *f = mbk_multibody_get_forces(sys);
    int g = mbk_force_find(f, "gravity"), sp = mbk_force_find(f, "spring1");
    CHECK(g >= 0 && sp >= 0);
    CHECK(!strcmp(mbk_force_get_parameter_name(f, g, 2), "gz"));
    CHECK(!strcmp(mbk_force_get_parameter_name(f, sp, 0), "k"));
    CHECK(!strcmp(mbk_force_get_parameter_name(f, sp, 1), "x0"));
    CHECK(mbk_force_get_parameter_name(f, sp, 2) == NULL);
    CHECK(mbk_force_get_parameter_name(f, 7, 0) == NULL);
    CHECK_INT(mbk_force_find_parameter(f, sp, "x0"), 1);
    CHECK_INT(mbk_force_find_parameter(f, sp, "nope"), -1);
    CHECK_INT(mbk_force_find_parameter(f, g, "z0"), 3);
    CHECK(!strcmp(mbk_force_get_name(f, sp), "spring1"));
    CHECK(!strcmp(mbk_force_get_kind_name(f, sp), "two-point linear spring"));
    /* every built-in kind names each of its parameters */
    mbk_system *all = mbk_multibody_create("all");
    mbk_matter *m = mbk_multibody_upd_matter(all);
    mbk_forces *fa = mbk_multibody_upd_forces(all);
    mbk_transform I = mbk_transform_identity();
    int b = mbk_matter_add_body(m, 0, &I, &base, &I, mbk_mobilizer_pin());
    double k6[6] = {1, 1, 1, 1, 1, 1}, hc[6] = {1e6, 0.5, 0.8, 0.6, 0.1, 0.01};
    mbk_vec3 z = mbk_vec3_zero();
    mbk_force_add_gravity(fa, z);
    mbk_force_add_two_point_linear_spring(fa, 0, z, b, z, 1, 0);
    mbk_force_add_two_point_linear_damper(fa, 0, z, b, z, 1);
    mbk_force_add_two_point_constant_force(fa, 0, z, b, z, 1);
    mbk_force_add_mobility_linear_spring(fa, b, 0, 1, 0);
    mbk_force_add_mobility_linear_damper(fa, b, 0, 1);
    mbk_force_add_mobility_constant_force(fa, b, 0, 1);
    mbk_force_add_mobility_linear_stop(fa, b, 0, 1, 0, -1, 1);
    mbk_force_add_constant_force(fa, b, z, z);
    mbk_force_add_constant_torque(fa, b, z);
    mbk_force_add_linear_bushing(fa, 0, &I, b, &I, k6, k6);
    mbk_force_add_hunt_crossley_sphere(fa, b, z, 0.1, 0, hc);
    mbk_force_add_mobility_coulomb_friction(fa, b, 0, 1, 0.1); /* once without names */
    CHECK_INT(mbk_forces_get_num_elements(fa), 13);
    for (int i = 0; i < mbk_forces_get_num_elements(fa); ++i) {
        int n = mbk_force_get_num_parameters(fa, i);
        CHECK(n > 0);
        for (int j = 0; j < n; ++j) {
            const char *name = mbk_force_get_parameter_name(fa, i, j);
            CHECK(name && name[0]);
            CHECK_INT(mbk_force_find_parameter(fa, i, name), j);
        }
    }
    mbk_system_destroy(all);
    mbk_system_destroy(sys);
}

int main(void)
{
    test_mass_props();
    test_force_parameter_names();
    return mbk_test_finish();
}
