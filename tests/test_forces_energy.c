/* Every conservative force element together (gravity, two-point and mobility
 * springs, a stop, a bushing and an undamped frictionless contact) conserves
 * total energy to the integrator's tolerance with the library integrators,
 * and the drift shrinks as the accuracy is tightened. */
#include <mbk/mbk.h>

#include "mbk_test.h"

static mbk_system *build(void)
{
    mbk_system *sys = mbk_multibody_create("conservative");
    mbk_matter *m = mbk_multibody_upd_matter(sys);
    mbk_forces *f = mbk_multibody_upd_forces(sys);
    mbk_mass_props box = mbk_mass_props_from_central(1.0, mbk_vec3_make(0.5, 0, 0),
                                                     mbk_mat33_diag(0.02 / 12, 1.01 / 12, 1.01 / 12));
    mbk_transform I = mbk_transform_identity(), tip = mbk_transform_from_p(mbk_vec3_make(1, 0, 0));
    mbk_transform up = mbk_transform_from_p(mbk_vec3_make(0, 0, 2.2));
    int b1 = mbk_matter_add_body(m, 0, &up, &box, &I, mbk_mobilizer_pin());
    int b2 = mbk_matter_add_body(m, b1, &tip, &box, &I, mbk_mobilizer_gimbal());
    int b3 = mbk_matter_add_body(m, b2, &tip, &box, &I, mbk_mobilizer_slider());
    mbk_force_add_gravity(f, mbk_vec3_make(0, -3.0, -9.81));
    mbk_force_add_two_point_linear_spring(f, 0, mbk_vec3_make(1, 1, 2), b3, mbk_vec3_make(0.5, 0, 0), 20.0, 0.5);
    mbk_force_add_mobility_linear_spring(f, b2, 1, 3.0, 0.2);
    mbk_force_add_mobility_linear_stop(f, b3, 0, 200.0, 0.0, -0.2, 0.2);
    const double k[6] = {2, 3, 4, 30, 40, 50}, c[6] = {0};
    mbk_force_add_linear_bushing(f, 0, &up, b1, &I, k, c);
    const double contact[6] = {5e6, 0.0, 0.0, 0.0, 0.0, 0.01};
    mbk_force_add_hunt_crossley_sphere(f, b3, mbk_vec3_make(1, 0, 0), 0.1, 0.3, contact);
    mbk_system_realize_topology(sys);
    return sys;
}

static double energy(const mbk_system *sys, const mbk_state *s)
{
    double ke = 0, pe = 0;
    mbk_system_calc_energy(sys, s, &ke, &pe);
    return ke + pe;
}

/* Largest relative energy change over 3 s at the given accuracy. */
static double drift(mbk_integrator *(*make)(const mbk_system *), double accuracy, long *steps)
{
    mbk_system *sys = build();
    mbk_state *s = mbk_state_create();
    mbk_state_init(s, sys);
    mbk_system_realize(sys, s, MBK_STAGE_MODEL);
    const double q[5] = {0.6, 0.3, -0.4, 0.2, 0.1}, u[5] = {1, -0.5, 0.3, 0.2, 0};
    mbk_state_set_q(s, q, 5);
    mbk_state_set_u(s, u, 5);
    mbk_system_realize(sys, s, MBK_STAGE_VELOCITY);
    double e0 = energy(sys, s), worst = 0;
    mbk_integrator *ig = make(sys);
    mbk_integrator_set_accuracy(ig, accuracy);
    CHECK_INT(mbk_integrator_initialize(ig, s), MBK_OK);
    for (int k = 1; k <= 300; ++k) {
        if (!CHECK(mbk_integrator_step_to(ig, 0.01 * k) == MBK_OK)) break;
        worst = fmax(worst, fabs(energy(sys, mbk_integrator_get_state(ig)) - e0) / fabs(e0));
    }
    mbk_integrator_stats st;
    mbk_integrator_get_stats(ig, &st);
    *steps = st.steps_taken;
    mbk_integrator_destroy(ig);
    mbk_state_destroy(s);
    mbk_system_destroy(sys);
    return worst;
}

int main(void)
{
    long n1, n2;
    double a = drift(mbk_integrator_create_rkmerson, 1e-6, &n1), b = drift(mbk_integrator_create_rkmerson, 1e-9, &n2);
    printf("RK-Merson: relative energy drift %.2e at accuracy 1e-6 (%ld steps), %.2e at 1e-9 (%ld steps)\n", a, n1, b,
           n2);
    CHECK(a < 1e-4);
    CHECK(b < 1e-7);
    CHECK(b < a / 10);
    double c = drift(mbk_integrator_create_ida, 1e-8, &n1);
    printf("IDA: relative energy drift %.2e at accuracy 1e-8 (%ld steps)\n", c, n1);
    CHECK(c < 1e-5);
    return mbk_test_finish();
}
