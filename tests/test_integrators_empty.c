/* A System with no continuous variables (everything welded) still integrates
 * with the RK family: time advances and reporters run. SUNDIALS cannot take
 * zero-length vectors, so CVODE and IDA refuse such a System with a clear
 * message at initialization. */
#include <mbk/mbk.h>
#include <string.h>

#include "mbk_test.h"

static int reports;
static void count(void *user, const mbk_system *sys, const mbk_state *s)
{
    (void)user; (void)sys; (void)s;
    reports++;
}

int main(void)
{
    mbk_integrator *(*make[])(const mbk_system *) = {mbk_integrator_create_rkmerson, mbk_integrator_create_rk4,
                                                     mbk_integrator_create_explicit_euler,
                                                     mbk_integrator_create_semi_explicit_euler,
                                                     mbk_integrator_create_ida};
    for (size_t k = 0; k < sizeof make / sizeof make[0] + 2; ++k) {
        mbk_system *sys = mbk_multibody_create("welded");
        mbk_matter *m = mbk_multibody_upd_matter(sys);
        mbk_mass_props mp = mbk_mass_props_from_central(1, mbk_vec3_zero(), mbk_mat33_diag(1, 1, 1));
        mbk_transform I = mbk_transform_identity();
        mbk_matter_add_body(m, 0, &I, &mp, &I, mbk_mobilizer_weld());
        mbk_force_add_gravity(mbk_multibody_upd_forces(sys), mbk_vec3_make(0, 0, -9.81));
        reports = 0;
        mbk_system_add_periodic_reporter(sys, 0.25, count, NULL);
        CHECK_INT(mbk_system_realize_topology(sys), MBK_OK);
        mbk_state *s = mbk_state_create();
        mbk_state_init(s, sys);
        mbk_system_realize(sys, s, MBK_STAGE_INSTANCE);
        CHECK_INT(mbk_state_get_ny(s), 0);
        mbk_integrator *ig = k < 5 ? make[k](sys) : mbk_integrator_create_cvode(sys, k == 5 ? MBK_CVODE_BDF : MBK_CVODE_ADAMS);
        if (k == 1) mbk_integrator_set_fixed_step(ig, 0.01);
        bool sundials = k >= 4;
        int rc = mbk_integrator_initialize(ig, s);
        if (sundials) {
            CHECK_INT(rc, MBK_EINVAL);
            CHECK(strstr(mbk_last_error(), "no continuous variables") != NULL);
            mbk_integrator_destroy(ig);
            mbk_state_destroy(s);
            mbk_system_destroy(sys);
            continue;
        }
        CHECK_INT(rc, MBK_OK);
        rc = mbk_integrator_step_to(ig, 1.0);
        if (!CHECK(rc == MBK_OK)) fprintf(stderr, "    integrator %zu: %s\n", k, mbk_last_error());
        CHECK_NEAR(mbk_state_get_time(mbk_integrator_get_state(ig)), 1.0, 1e-12);
        CHECK(reports >= 4);
        mbk_integrator_destroy(ig);
        mbk_state_destroy(s);
        mbk_system_destroy(sys);
    }
    return mbk_test_finish();
}
