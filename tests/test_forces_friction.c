/* The mobility Coulomb friction element: its law tau = -F tanh(u / vt)
 * against the formula written out here (udot of a slider and of a pendulum
 * with a known mass matrix), its dissipated energy (a z of the State whose
 * rate is F u tanh(u / vt), and E(t) + dissipated = E(0) along an integrated
 * run), enabling, per-State parameters and bad input. */
#include <mbk/mbk.h>
#include <stdlib.h>
#include <string.h>

#include "mbk_test.h"

typedef struct model {
    mbk_system *sys;
    mbk_matter *m;
    mbk_forces *f;
    int fr, push;
} model;

/* A 2 kg block on a slider along x under a constant push P, with friction F (vt). */
static void build_block(model *md, double P, double F, double vt)
{
    md->sys = mbk_multibody_create("block");
    md->m = mbk_multibody_upd_matter(md->sys);
    md->f = mbk_multibody_upd_forces(md->sys);
    mbk_mass_props mp = mbk_mass_props_from_central(2.0, mbk_vec3_zero(), mbk_mat33_diag(0.1, 0.1, 0.1));
    mbk_transform I = mbk_transform_identity();
    CHECK_INT(mbk_matter_add_body(md->m, 0, &I, &mp, &I, mbk_mobilizer_slider()), 1);
    md->push = mbk_force_add_mobility_constant_force(md->f, 1, 0, P);
    md->fr = mbk_force_add_mobility_coulomb_friction(md->f, 1, 0, F, vt);
    CHECK(md->push == 0 && md->fr == 1);
    CHECK_INT(mbk_system_realize_topology(md->sys), MBK_OK);
}

static void test_law(void)
{
    const double P = 3.0, F = 5.0, vt = 0.01;
    model md;
    build_block(&md, P, F, vt);
    mbk_state *s = mbk_state_create();
    CHECK_INT(mbk_state_init(s, md.sys), MBK_OK);
    CHECK_INT(mbk_system_realize(md.sys, s, MBK_STAGE_MODEL), MBK_OK);
    CHECK_INT(mbk_state_get_nz(s), 1); /* the friction element's dissipated energy */
    const double us[] = {-2.0, -0.02, -0.003, 0.0, 1e-5, 0.004, 0.01, 0.5, 30.0};
    for (size_t k = 0; k < sizeof us / sizeof *us; ++k) {
        double u = us[k];
        mbk_state_set_u(s, &u, 1);
        CHECK_INT(mbk_system_realize(md.sys, s, MBK_STAGE_ACCELERATION), MBK_OK);
        double tau = -F * tanh(u / vt);
        CHECK_NEAR(mbk_multibody_get_mobility_forces(md.sys, s)[0], P + tau, 1e-15);
        CHECK_NEAR(mbk_state_get_udot(s)[0], (P + tau) / 2.0, 1e-15);
        CHECK_NEAR(mbk_state_get_zdot(s)[0], F * u * tanh(u / vt), 1e-15);
        CHECK(mbk_state_get_zdot(s)[0] >= 0);
    }
    /* well above vt it is Coulomb friction: F against the motion */
    double u = 1.0;
    mbk_state_set_u(s, &u, 1);
    mbk_system_realize(md.sys, s, MBK_STAGE_ACCELERATION);
    CHECK_NEAR(mbk_multibody_get_mobility_forces(md.sys, s)[0], P - F, 1e-15);

    /* parameters per State; disabled: no force, no dissipation */
    double p[2];
    CHECK_INT(mbk_force_get_num_parameters(md.f, md.fr), 2);
    CHECK(mbk_force_get_parameters(md.f, s, md.fr, p, 2) == MBK_OK && p[0] == F && p[1] == vt);
    p[0] = 1.0, p[1] = 0.5;
    CHECK_INT(mbk_force_set_parameters(md.f, s, md.fr, p, 2), MBK_OK);
    u = 0.2;
    mbk_state_set_u(s, &u, 1);
    CHECK_INT(mbk_system_realize(md.sys, s, MBK_STAGE_ACCELERATION), MBK_OK);
    CHECK_NEAR(mbk_state_get_udot(s)[0], (P - tanh(0.4)) / 2.0, 1e-15);
    CHECK_INT(mbk_force_set_enabled(md.f, s, md.fr, false), MBK_OK);
    CHECK_INT(mbk_system_realize(md.sys, s, MBK_STAGE_ACCELERATION), MBK_OK);
    CHECK(mbk_state_get_udot(s)[0] == P / 2.0 && mbk_state_get_zdot(s)[0] == 0.0);

    /* the energy is the State's z */
    double w = -1;
    double z = 0.75;
    mbk_state_set_z(s, &z, 1);
    CHECK(mbk_force_get_dissipated_energy(md.f, s, md.fr, &w) == MBK_OK && w == 0.75);

    /* bad input */
    CHECK_INT(mbk_force_get_dissipated_energy(md.f, s, md.push, &w), MBK_EINVAL);
    CHECK(strstr(mbk_last_error(), "does not keep its dissipated energy") != NULL);
    CHECK_INT(mbk_force_get_dissipated_energy(md.f, s, 7, &w), MBK_EINVAL);
    CHECK_INT(mbk_force_get_dissipated_energy(md.f, s, md.fr, NULL), MBK_EINVAL);
    p[0] = -1, p[1] = 0.1;
    CHECK_INT(mbk_force_set_parameters(md.f, s, md.fr, p, 2), MBK_EINVAL);
    p[0] = 1, p[1] = 0;
    CHECK_INT(mbk_force_set_parameters(md.f, s, md.fr, p, 2), MBK_EINVAL);
    mbk_state_destroy(s);
    mbk_system_destroy(md.sys);

    mbk_system *sys = mbk_multibody_create("bad");
    mbk_matter *m = mbk_multibody_upd_matter(sys);
    mbk_forces *f = mbk_multibody_upd_forces(sys);
    mbk_mass_props mp = mbk_mass_props_from_central(1.0, mbk_vec3_zero(), mbk_mat33_diag(1, 1, 1));
    mbk_transform I = mbk_transform_identity();
    mbk_matter_add_body(m, 0, &I, &mp, &I, mbk_mobilizer_pin());
    CHECK_INT(mbk_force_add_mobility_coulomb_friction(f, 1, 0, -1.0, 0.1), MBK_EINVAL);
    CHECK_INT(mbk_force_add_mobility_coulomb_friction(f, 1, 0, 1.0, 0.0), MBK_EINVAL);
    CHECK_INT(mbk_force_add_mobility_coulomb_friction(f, 1, 0, NAN, 0.1), MBK_EINVAL);
    CHECK_INT(mbk_force_add_mobility_coulomb_friction(f, 1, 1, 1.0, 0.1), MBK_EINVAL); /* a pin has one u */
    CHECK_INT(mbk_force_add_mobility_coulomb_friction(f, 0, 0, 1.0, 0.1), MBK_EINVAL); /* Ground */
    CHECK_INT(mbk_forces_get_num_elements(f), 0);
    mbk_system_destroy(sys);
}

/* A pendulum with friction on its pin: E(t) + dissipated(t) = E(0) along the run, the
   dissipated energy grows, and the swing dies out. */
static void test_energy_balance(void)
{
    mbk_system *sys = mbk_multibody_create("pendulum with friction");
    mbk_matter *m = mbk_multibody_upd_matter(sys);
    mbk_forces *f = mbk_multibody_upd_forces(sys);
    /* pin about z of Ground turned onto y: swings in the x-z plane */
    mbk_transform X = mbk_transform_from_axis_angle(mbk_vec3_make(1, 0, 0), -1.5707963267948966, mbk_vec3_zero());
    mbk_mass_props mp = mbk_mass_props_from_central(1.0, mbk_vec3_make(0, 0, -1.0), mbk_mat33_diag(0.01, 0.01, 0.01));
    mbk_matter_add_body(m, 0, &X, &mp, &X, mbk_mobilizer_pin());
    mbk_force_add_gravity(f, mbk_vec3_make(0, 0, -9.81));
    int fr = mbk_force_add_mobility_coulomb_friction(f, 1, 0, 1.5, 0.05);
    CHECK_INT(mbk_system_realize_topology(sys), MBK_OK);
    mbk_state *s = mbk_state_create();
    mbk_state_init(s, sys);
    mbk_system_realize(sys, s, MBK_STAGE_MODEL);
    double q = 1.2;
    mbk_state_set_q(s, &q, 1);
    mbk_system_realize(sys, s, MBK_STAGE_VELOCITY);
    double ke, pe;
    mbk_system_calc_energy(sys, s, &ke, &pe);
    double e0 = ke + pe, worst = 0, w_prev = 0, w = 0;
    int monotone = 1;
    mbk_integrator *ig = mbk_integrator_create_rkmerson(sys);
    mbk_integrator_set_accuracy(ig, 1e-10);
    CHECK_INT(mbk_integrator_initialize(ig, s), MBK_OK);
    for (int k = 1; k <= 400; ++k) {
        if (!CHECK(mbk_integrator_step_to(ig, 0.025 * k) == MBK_OK)) break;
        const mbk_state *si = mbk_integrator_get_state(ig);
        mbk_system_calc_energy(sys, si, &ke, &pe);
        CHECK(mbk_force_get_dissipated_energy(f, si, fr, &w) == MBK_OK);
        worst = fmax(worst, fabs(ke + pe + w - e0));
        if (w < w_prev - 1e-12) monotone = 0;
        w_prev = w;
    }
    const mbk_state *se = mbk_integrator_get_state(ig);
    mbk_system_calc_energy(sys, se, &ke, &pe);
    CHECK(worst < 1e-7);
    if (getenv("MBK_TEST_VERBOSE")) fprintf(stderr, "  worst %g w %g e0 %g pe %g ke %g\n", worst, w, e0, pe, ke);
    CHECK(monotone);
    CHECK(w > 0.5 * (e0 - pe)); /* most of the swing went into heat */
    if (!CHECK(ke < 1e-2 * (e0 - pe))) fprintf(stderr, "  ke %g pe %g e0 %g w %g q %g\n", ke, pe, e0, w, mbk_state_get_q(se)[0]);
    mbk_integrator_destroy(ig);
    mbk_state_destroy(s);
    mbk_system_destroy(sys);
}

int main(void)
{
    test_law();
    test_energy_balance();
    return mbk_test_finish();
}
