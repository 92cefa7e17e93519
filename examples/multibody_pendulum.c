/* Building a multibody system in C: a 5-link 3-D pendulum.
 *
 * Shows the steps of docs/matter.md: create a multibody System, add bodies
 * on mobilizers (Pin joints whose axes alternate between the parent's y and
 * z), add the built-in gravity element to the general force subsystem,
 * realize a State, read body poses, and
 * integrate with the library's fixed-step RK4 (mbk_integrator_create_rk4).
 * The run checks that total energy is conserved and exits nonzero if not. */
#include <math.h>
#include <mbk/mbk.h>
#include <stdio.h>

enum { N_LINKS = 5 };

/* ---- building the pendulum ------------------------------------------------ */

static int fail(const char *what)
{
    fprintf(stderr, "multibody_pendulum: %s: %s\n", what, mbk_last_error());
    return 1;
}

/* Each link is a 1 kg box 1 x 0.1 x 0.1 m along its x axis, hinged at its origin. */
static int add_links(mbk_matter *m)
{
    mbk_mass_props box = mbk_mass_props_from_central(1.0, mbk_vec3_make(0.5, 0, 0),
                                                     mbk_mat33_diag(0.02 / 12, 1.01 / 12, 1.01 / 12));
    /* A Pin turns about F's z; to turn about the parent's y, tilt F (and M alike) by -90 deg about x. */
    mbk_transform to_y = mbk_transform_from_axis_angle(mbk_vec3_make(1, 0, 0), -1.5707963267948966, mbk_vec3_zero());
    int parent = 0;
    for (int i = 0; i < N_LINKS; ++i) {
        mbk_transform X_BM = i % 2 == 0 ? to_y : mbk_transform_identity();
        mbk_transform X_PF = X_BM;
        if (i > 0) X_PF.p = mbk_vec3_make(1, 0, 0); /* attach at the parent's tip */
        parent = mbk_matter_add_body(m, parent, &X_PF, &box, &X_BM, mbk_mobilizer_pin());
        if (parent < 0) return parent;
    }
    return MBK_OK;
}

int main(void)
{
    mbk_system *sys = mbk_multibody_create("5-link pendulum");
    if (!sys || add_links(mbk_multibody_upd_matter(sys)) < 0) return fail("building");
    if (mbk_force_add_gravity(mbk_multibody_upd_forces(sys), mbk_vec3_make(0, 0, -9.81)) < 0)
        return fail("adding gravity");
    if (mbk_system_realize_topology(sys) < 0) return fail("realizing topology");

    /* A State starts from the defaults; give every hinge a small initial angle. */
    mbk_state *s = mbk_state_create();
    if (mbk_state_init(s, sys) < 0 || mbk_system_realize(sys, s, MBK_STAGE_MODEL) < 0) return fail("state");
    double *q = mbk_state_upd_q(s);
    for (int i = 0; i < N_LINKS; ++i) q[i] = 0.3 * (i + 1);
    if (mbk_system_realize(sys, s, MBK_STAGE_VELOCITY) < 0) return fail("realizing");

    const mbk_matter *m = mbk_multibody_get_matter(sys);
    mbk_transform X;
    mbk_matter_get_body_transform(m, s, N_LINKS, &X);
    printf("tip link origin at (%.4f, %.4f, %.4f) m\n", X.p.x, X.p.y, X.p.z);

    double ke, pe, e0;
    mbk_system_calc_energy(sys, s, &ke, &pe);
    e0 = ke + pe;

    /* Classical RK4 with a fixed step of 1 ms. The integrator copies the State; after
       each step_to its own State is at that time, realized to Acceleration. */
    const double h = 1e-3;
    mbk_integrator *ig = mbk_integrator_create_rk4(sys);
    if (!ig || mbk_integrator_set_fixed_step(ig, h) < 0 || mbk_integrator_initialize(ig, s) < 0)
        return fail("setting up the integrator");
    double t = 0, drift = 0;
    for (int n = 1; n <= 2000; ++n) {
        t = n * h;
        if (mbk_integrator_step_to(ig, t) != MBK_OK) return fail("integrating");
        if (mbk_system_calc_energy(sys, mbk_integrator_get_state(ig), &ke, &pe) < 0) return fail("energy");
        drift = fmax(drift, fabs(ke + pe - e0) / fabs(e0));
    }
    printf("simulated %.1f s: energy %.9f J -> %.9f J, max relative drift %.2e\n", t, e0, ke + pe, drift);
    mbk_integrator_destroy(ig);
    mbk_state_destroy(s);
    mbk_system_destroy(sys);
    if (drift > 1e-7) {
        fprintf(stderr, "multibody_pendulum: energy drifted by %.2e (> 1e-7)\n", drift);
        return 1;
    }
    return 0;
}
