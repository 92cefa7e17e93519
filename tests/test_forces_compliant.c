/* The compliant elements against physics: the linear bushing's generalized
 * force is minus the gradient of its potential energy and its dampers only
 * dissipate; a Hunt-Crossley sphere dropped on the ground comes to rest at
 * the Hertz penetration that carries its weight, bounces without losing
 * energy when undamped, and friction stops a sliding sphere. */
#include <mbk/mbk.h>
#include <string.h>

#include "mbk_test.h"

/* n steps of the library's fixed-step RK4 of size h from t = 0 and y (6 values) on s;
   after each step `each` (if given) sees the State, and y gets the last one. Returns
   nonzero on failure. */
static int rk4_run(const mbk_system *sys, mbk_state *s, double h, int n, double *y, mbk_reporter_fn each,
                   void *user)
{
    if (mbk_state_set_time(s, 0.0) < 0 || mbk_state_set_y(s, y, 6) < 0) return 1;
    mbk_integrator *ig = mbk_test_rk4(sys, s, h, 1e-10);
    int rc = ig ? MBK_OK : MBK_EINTEGRATOR;
    for (int k = 1; rc == MBK_OK && k <= n; ++k) {
        rc = mbk_integrator_step_to(ig, k * h);
        if (rc == MBK_OK && each) each(user, sys, mbk_integrator_get_state(ig));
    }
    if (rc == MBK_OK) memcpy(y, mbk_state_get_y(mbk_integrator_get_state(ig)), 6 * sizeof(double));
    mbk_integrator_destroy(ig);
    return rc != MBK_OK;
}

static double total_energy(const mbk_system *sys, mbk_state *s, const double *y, int ny)
{
    double ke, pe;
    mbk_state_set_y(s, y, ny);
    mbk_system_realize(sys, s, MBK_STAGE_VELOCITY);
    mbk_system_calc_energy(sys, s, &ke, &pe);
    return ke + pe;
}

/* Bushing between a chain of Pin/Slider bodies and Ground: Q = -dPE/dq. */
static void test_bushing_gradient(void)
{
    mbk_system *sys = mbk_multibody_create("bushing");
    mbk_matter *m = mbk_multibody_upd_matter(sys);
    mbk_forces *f = mbk_multibody_upd_forces(sys);
    mbk_mass_props mp = mbk_mass_props_from_central(1.0, mbk_vec3_make(0.2, 0.1, 0), mbk_mat33_diag(0.1, 0.2, 0.3));
    mbk_transform I = mbk_transform_identity();
    mbk_transform tilt = mbk_transform_from_axis_angle(mbk_vec3_normalize(mbk_vec3_make(1, 1, 0)), 0.7,
                                                       mbk_vec3_make(0.3, 0, 0));
    int b1 = mbk_matter_add_body(m, 0, &I, &mp, &I, mbk_mobilizer_pin());
    int b2 = mbk_matter_add_body(m, b1, &tilt, &mp, &I, mbk_mobilizer_slider());
    int b3 = mbk_matter_add_body(m, b2, &tilt, &mp, &I, mbk_mobilizer_gimbal());
    const double k[6] = {3, 4, 5, 6, 7, 8}, c[6] = {0};
    mbk_transform XF = mbk_transform_from_axis_angle(mbk_vec3_make(0, 0, 1), 0.2, mbk_vec3_make(0.1, 0.2, 0.3));
    mbk_transform XM = mbk_transform_from_axis_angle(mbk_vec3_make(1, 0, 0), -0.3, mbk_vec3_make(-0.2, 0.1, 0));
    CHECK(mbk_force_add_linear_bushing(f, 0, &XF, b3, &XM, k, c) == 0);
    mbk_system_realize_topology(sys);
    mbk_state *s = mbk_state_create();
    mbk_state_init(s, sys);
    mbk_system_realize(sys, s, MBK_STAGE_MODEL);
    const double q[5] = {0.3, 0.2, 0.1, -0.2, 0.25};
    mbk_state_set_q(s, q, 5);
    mbk_system_realize(sys, s, MBK_STAGE_DYNAMICS);
    double Q[5];
    CHECK_INT(mbk_matter_multiply_by_system_jacobian_transpose(m, s, mbk_multibody_get_body_forces(sys, s), Q), MBK_OK);
    for (int i = 0; i < 5; ++i) {
        double qp[5], pe_p, pe_m, h = 1e-6;
        memcpy(qp, q, sizeof qp);
        qp[i] += h;
        mbk_state_set_q(s, qp, 5);
        mbk_system_realize(sys, s, MBK_STAGE_POSITION);
        mbk_system_calc_energy(sys, s, NULL, &pe_p);
        qp[i] -= 2 * h;
        mbk_state_set_q(s, qp, 5);
        mbk_system_realize(sys, s, MBK_STAGE_POSITION);
        mbk_system_calc_energy(sys, s, NULL, &pe_m);
        CHECK_NEAR(Q[i], -(pe_p - pe_m) / (2 * h), 1e-8); /* the bushing applies body forces only */
    }
    mbk_state_destroy(s);
    mbk_system_destroy(sys);
}

/* A 1 kg sphere of radius 0.1 on a Translation mobilizer, under gravity, above z = 0. */
static mbk_system *ball_model(double dissipation, double mu, int *contact)
{
    mbk_system *sys = mbk_multibody_create("ball");
    mbk_matter *m = mbk_multibody_upd_matter(sys);
    mbk_forces *f = mbk_multibody_upd_forces(sys);
    mbk_mass_props mp = mbk_mass_props_from_central(1.0, mbk_vec3_zero(), mbk_mat33_diag(0.004, 0.004, 0.004));
    mbk_transform I = mbk_transform_identity();
    int b = mbk_matter_add_body(m, 0, &I, &mp, &I, mbk_mobilizer_translation());
    mbk_force_add_gravity(f, mbk_vec3_make(0, 0, -9.81));
    const double p[6] = {1e7, dissipation, mu, mu, 0.0, 0.01};
    *contact = mbk_force_add_hunt_crossley_sphere(f, b, mbk_vec3_zero(), 0.1, 0.0, p);
    mbk_system_realize_topology(sys);
    return sys;
}

/* Damped: the ball settles where the Hertz force carries m g. */
static void test_ball_rest(void)
{
    int contact;
    mbk_system *sys = ball_model(2.0, 0.0, &contact);
    CHECK_INT(contact, 1);
    mbk_state *s = mbk_state_create();
    mbk_state_init(s, sys);
    mbk_system_realize(sys, s, MBK_STAGE_MODEL);
    double y[6] = {0, 0, 0.12, 0, 0, 0};
    CHECK(rk4_run(sys, s, 2.5e-5, 40000, y, NULL, NULL) == 0);
    /* 4/3 k^1.5 sqrt(r) x^1.5 = m g with k = E^(2/3)/2 */
    double k = 0.5 * pow(1e7, 2.0 / 3.0), x = pow(9.81 / (4.0 / 3.0 * pow(k, 1.5) * sqrt(0.1)), 2.0 / 3.0);
    CHECK_NEAR(y[2], 0.1 - x, 1e-9);
    CHECK(fabs(y[5]) < 1e-6);
    mbk_state_destroy(s);
    mbk_system_destroy(sys);
}

/* What test_ball_elastic watches after every step. */
typedef struct bounce_watch {
    double e0, drift, zmin;
} bounce_watch;

static void watch_bounce(void *user, const mbk_system *sys, const mbk_state *s)
{
    bounce_watch *w = user;
    double ke = 0, pe = 0;
    mbk_system_calc_energy(sys, s, &ke, &pe);
    w->zmin = fmin(w->zmin, mbk_state_get_q(s)[2]);
    w->drift = fmax(w->drift, fabs(ke + pe - w->e0) / w->e0);
}

/* Undamped and frictionless: a bounce returns all the energy. */
static void test_ball_elastic(void)
{
    int contact;
    mbk_system *sys = ball_model(0.0, 0.0, &contact);
    mbk_state *s = mbk_state_create();
    mbk_state_init(s, sys);
    mbk_system_realize(sys, s, MBK_STAGE_MODEL);
    double y[6] = {0, 0, 0.15, 0.3, 0, 0};
    bounce_watch w = {total_energy(sys, s, y, 6), 0, 1};
    CHECK(rk4_run(sys, s, 1e-5, 20000, y, watch_bounce, &w) == 0);
    CHECK(w.zmin < 0.1);      /* it did touch */
    CHECK(w.drift < 1e-8);    /* and gave the energy back */
    CHECK_NEAR(y[3], 0.3, 1e-12); /* no friction: horizontal speed kept */
    mbk_state_destroy(s);
    mbk_system_destroy(sys);
}

/* Friction stops a ball sliding on the ground. */
static void test_ball_friction(void)
{
    int contact;
    mbk_system *sys = ball_model(2.0, 0.5, &contact);
    mbk_state *s = mbk_state_create();
    mbk_state_init(s, sys);
    mbk_system_realize(sys, s, MBK_STAGE_MODEL);
    double k = 0.5 * pow(1e7, 2.0 / 3.0), x = pow(9.81 / (4.0 / 3.0 * pow(k, 1.5) * sqrt(0.1)), 2.0 / 3.0);
    double y[6] = {0, 0, 0.1 - x, 1.0, 0, 0};
    CHECK(rk4_run(sys, s, 2.5e-5, 20000, y, NULL, NULL) == 0);
    /* Coulomb with mu = 0.5 stops 1 m/s in about 0.2 s; slip then stays below vt */
    CHECK(fabs(y[3]) < 0.01);
    CHECK(y[0] > 0.05 && y[0] < 0.15); /* about v^2 / (2 mu g) = 0.102 m */
    mbk_state_destroy(s);
    mbk_system_destroy(sys);
}

int main(void)
{
    test_bushing_gradient();
    test_ball_rest();
    test_ball_elastic();
    test_ball_friction();
    return mbk_test_finish();
}
