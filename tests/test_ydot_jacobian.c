/* mbk_system_calc_ydot_jacobian (analytic for a multibody System), the
 * Jacobian CVODE BDF and IDA use by default, and mbk_system_calc_ydot_jacobian_fd:
 * (a) a pendulum against its analytic Jacobian;
 * (b) a constrained four-bar and a free body in Hunt-Crossley contact (a
 *     quaternion, Hertz force and friction) against central differences of
 *     mbk_system_calc_ydot computed here, on a State of the test's own;
 * (c) the _fd version perturbs one y_j at a time through the narrowest view: over one
 *     Jacobian the Position stage is realized nq + 1 times and Velocity
 *     nq + nu + 1 times (a u column realizes again only from Velocity, a z
 *     column only from Dynamics), and the State comes back bitwise at its y,
 *     t and ydot, realized to Acceleration;
 * (d) CVODE BDF and IDA use it by default. */
#include <math.h>
#include <string.h>

#include "mbk/mbk.h"
#include "mbk_test.h"
#include "test_util.h"
#include "test_models.h"

/* ------------------------------------------------------------------ */
/* A subsystem counting realizations, with one z: zdot = -2 z           */
/* ------------------------------------------------------------------ */

typedef struct counter {
    int z;
    long position, velocity, dynamics;
} counter;

static counter COUNT;

static int ctr_topology(void *impl, const mbk_subsystem_ctx *c, mbk_state *s)
{
    counter *k = impl;
    const double z0 = 0.7;
    k->z = mbk_state_allocate_z(s, mbk_subsystem_ctx_get_index(c), 1, &z0);
    return k->z < 0 ? k->z : 0;
}
static int ctr_position(void *impl, const mbk_subsystem_ctx *c, mbk_state *s)
{
    (void)c, (void)s;
    ((counter *)impl)->position++;
    return 0;
}
static int ctr_velocity(void *impl, const mbk_subsystem_ctx *c, mbk_state *s)
{
    (void)c, (void)s;
    ((counter *)impl)->velocity++;
    return 0;
}
static int ctr_dynamics(void *impl, const mbk_subsystem_ctx *c, mbk_state *s)
{
    (void)c, (void)s;
    ((counter *)impl)->dynamics++;
    return 0;
}
static int ctr_acceleration(void *impl, const mbk_subsystem_ctx *c, mbk_state *s)
{
    counter *k = impl;
    int i = mbk_subsystem_ctx_get_index(c);
    mbk_state_upd_subsystem_zdot(s, i)[k->z] = -2.0 * mbk_state_get_subsystem_z(s, i)[k->z];
    return 0;
}
static const mbk_subsystem_ops counter_ops = {.name = "counter",
                                              .realize_topology = ctr_topology,
                                              .realize_position = ctr_position,
                                              .realize_velocity = ctr_velocity,
                                              .realize_dynamics = ctr_dynamics,
                                              .realize_acceleration = ctr_acceleration};

/* ------------------------------------------------------------------ */
/* Models                                                               */
/* ------------------------------------------------------------------ */

enum { PEND_M = 0, PEND_L = 1, PEND_I = 2 };
static const double PEND[3] = {1.3, 0.7, 0.05}, GRAV = 9.81;

/* A pin (about z) carrying a body with its centre of mass L below the pin, gravity -y:
   I_o theta'' = -m g L sin(theta), I_o = I_zz + m L^2. */
static mbk_system *make_pendulum(void)
{
    mbk_system *sys = mbk_multibody_create("pendulum");
    mbk_matter *m = mbk_multibody_upd_matter(sys);
    mbk_mass_props mp = mbk_mass_props_from_central(PEND[PEND_M], mbk_vec3_make(0, -PEND[PEND_L], 0),
                                                    mbk_mat33_diag(PEND[PEND_I], PEND[PEND_I], PEND[PEND_I]));
    mbk_transform X = mbk_transform_identity();
    mbk_matter_add_body(m, 0, &X, &mp, &X, mbk_mobilizer_pin());
    mbk_force_add_gravity(mbk_multibody_upd_forces(sys), mbk_vec3_make(0, -GRAV, 0));
    mbk_system_realize_topology(sys);
    return sys;
}

/* The four-bar of `mbk run builtin:fourbar`, with the counter subsystem (one z). */
static mbk_system *make_fourbar(mbk_state **s0)
{
    mbk_system *sys = mbk_multibody_create("fourbar");
    builtin_fourbar_add(sys, mbk_vec3_make(0, -9.81, 0), NULL);
    memset(&COUNT, 0, sizeof COUNT);
    mbk_system_add_subsystem(sys, &counter_ops, &COUNT);
    mbk_system_realize_topology(sys);
    mbk_state *s = test_new_state(sys);
    const double u[3] = {3.0, 0.4, -0.3}; /* off the velocity constraints: no matter here */
    builtin_fourbar_start(sys, s, u, false);
    *s0 = s;
    return sys;
}

/* A free body carrying a Hunt-Crossley sphere (r = 0.1 m) 0.4 mm into the ground,
   sliding at 0.5 m/s (well above the friction's transition velocity), tilted. */
static mbk_system *make_contact(mbk_state **s0)
{
    mbk_system *sys = mbk_multibody_create("contact");
    mbk_matter *m = mbk_multibody_upd_matter(sys);
    mbk_forces *f = mbk_multibody_upd_forces(sys);
    mbk_mass_props mp = mbk_mass_props_from_central(1.0, mbk_vec3_make(0.01, 0, 0), mbk_mat33_diag(0.004, 0.005, 0.006));
    mbk_transform I = mbk_transform_identity();
    int b = mbk_matter_add_body(m, 0, &I, &mp, &I, mbk_mobilizer_free());
    mbk_force_add_gravity(f, mbk_vec3_make(0, 0, -9.81));
    const double params[6] = {1e7, 0.5, 0.8, 0.5, 0.1, 0.1};
    mbk_force_add_hunt_crossley_sphere(f, b, mbk_vec3_zero(), 0.1, 0.0, params);
    mbk_system_realize_topology(sys);
    mbk_state *s = test_new_state(sys);
    double *q = mbk_state_upd_q(s);
    const double c = cos(0.1), sn = sin(0.1); /* rotated 0.2 rad about (1, 1, 0)/sqrt(2) */
    q[0] = c, q[1] = sn / sqrt(2.0), q[2] = sn / sqrt(2.0), q[3] = 0;
    q[6] = 0.1 - 4e-4;
    double *u = mbk_state_upd_u(s);
    u[0] = 0.3, u[1] = -0.2, u[2] = 2.0, u[3] = 0.5, u[4] = -0.2, u[5] = -0.01;
    *s0 = s;
    return sys;
}

/* ------------------------------------------------------------------ */
/* Tests                                                                */
/* ------------------------------------------------------------------ */

static void test_pendulum_analytic(void)
{
    mbk_system *sys = make_pendulum();
    mbk_state *s = test_new_state(sys);
    const double Io = PEND[PEND_I] + PEND[PEND_M] * PEND[PEND_L] * PEND[PEND_L];
    double worst = 0;
    const double thetas[3] = {0.3, 1.2, 2.5};
    for (int k = 0; k < 3; ++k) {
        mbk_state_upd_q(s)[0] = thetas[k];
        mbk_state_upd_u(s)[0] = -1.1;
        double J[4];
        CHECK_INT(mbk_system_calc_ydot_jacobian(sys, s, J), MBK_OK);
        const double exact[4] = {0, 1, -PEND[PEND_M] * GRAV * PEND[PEND_L] / Io * cos(thetas[k]), 0};
        for (int i = 0; i < 4; ++i) worst = fmax(worst, fabs(J[i] - exact[i]));
    }
    printf("  pendulum: largest error against the analytic Jacobian %.1e\n", worst);
    CHECK(worst < 1e-6);
    mbk_state_destroy(s);
    mbk_system_destroy(sys);
}

/* Largest |J - Jc| relative to its row's scale, Jc by central differences of calc_ydot. */
static double against_central(const mbk_system *sys, mbk_state *s, int ny)
{
    double J[16 * 16], Jc[16 * 16], y[16], fp[16], fm[16];
    if (!CHECK(ny <= 16)) return INFINITY;
    CHECK_INT(mbk_system_calc_ydot_jacobian(sys, s, J), MBK_OK);
    mbk_state *w = mbk_state_create();
    mbk_state_copy(w, s);
    double t = mbk_state_get_time(s);
    for (int j = 0; j < ny; ++j) {
        memcpy(y, mbk_state_get_y(s), sizeof(double) * (size_t)ny);
        double h = 1e-6 * fmax(fabs(y[j]), 1.0);
        y[j] += h;
        CHECK_INT(mbk_system_calc_ydot(sys, w, t, y, fp), MBK_OK);
        y[j] -= 2 * h;
        CHECK_INT(mbk_system_calc_ydot(sys, w, t, y, fm), MBK_OK);
        for (int i = 0; i < ny; ++i) Jc[i * ny + j] = (fp[i] - fm[i]) / (2 * h);
    }
    mbk_state_destroy(w);
    double worst = 0;
    for (int i = 0; i < ny; ++i) {
        double scale = 1.0;
        for (int j = 0; j < ny; ++j) scale = fmax(scale, fabs(Jc[i * ny + j]));
        for (int j = 0; j < ny; ++j) worst = fmax(worst, fabs(J[i * ny + j] - Jc[i * ny + j]) / scale);
    }
    return worst;
}

static void test_against_central_differences(void)
{
    mbk_state *s;
    mbk_system *sys = make_fourbar(&s);
    double e = against_central(sys, s, mbk_state_get_ny(s));
    printf("  four-bar (constrained): largest difference from central differences %.1e of the row's scale\n", e);
    CHECK(e < 1e-5);
    mbk_state_destroy(s);
    mbk_system_destroy(sys);

    sys = make_contact(&s);
    CHECK_INT(mbk_state_get_ny(s), 13);
    e = against_central(sys, s, 13);
    /* the Hertz force goes like x^1.5 at x = 0.4 mm: forward differences are worst there */
    printf("  free body in Hunt-Crossley contact: largest difference from central differences %.1e of the row's "
           "scale\n", e);
    CHECK(e < 1e-4);
    /* the contact is felt: d(vz dot)/d(z) is the contact stiffness over the mass, large */
    double J[13 * 13];
    CHECK_INT(mbk_system_calc_ydot_jacobian(sys, s, J), MBK_OK);
    CHECK(J[(7 + 5) * 13 + 6] < -1e4);
    mbk_state_destroy(s);
    mbk_system_destroy(sys);
}

static void test_perturbs_only_what_it_must(void)
{
    mbk_state *s;
    mbk_system *sys = make_fourbar(&s);
    const int nq = mbk_state_get_nq(s), nu = mbk_state_get_nu(s), nz = mbk_state_get_nz(s), ny = nq + nu + nz;
    CHECK_INT(nq, 3);
    CHECK_INT(nu, 3);
    CHECK_INT(nz, 1);
    CHECK_INT(mbk_system_realize(sys, s, MBK_STAGE_ACCELERATION), MBK_OK);
    double y0[7], yd0[7], J[49];
    memcpy(y0, mbk_state_get_y(s), sizeof y0);
    memcpy(yd0, mbk_state_get_ydot(s), sizeof yd0);
    double t0 = mbk_state_get_time(s);
    counter before = COUNT;
    long lib0 = mbk_get_allocation_count();
    CHECK_INT(mbk_system_calc_ydot_jacobian_fd(sys, s, J), MBK_OK);
    CHECK_INT(mbk_get_allocation_count() - lib0, 0);
    long pos = COUNT.position - before.position, vel = COUNT.velocity - before.velocity,
         dyn = COUNT.dynamics - before.dynamics;
    printf("  four-bar with one z: one Jacobian realized Position %ld, Velocity %ld, Dynamics %ld times "
           "(nq = %d, nu = %d, nz = %d)\n", pos, vel, dyn, nq, nu, nz);
    /* a q column realizes from Position; the first u column once more (the last q put back);
       a u column from Velocity, the first z column once more; the z column from Dynamics;
       then the base point again from the last column's stage */
    CHECK_INT(pos, nq + 1);
    CHECK_INT(vel, nq + nu + 1);
    CHECK_INT(dyn, ny + 1);
    /* the State is back where it was */
    CHECK(memcmp(mbk_state_get_y(s), y0, sizeof y0) == 0);
    CHECK(memcmp(mbk_state_get_ydot(s), yd0, sizeof yd0) == 0);
    CHECK(mbk_state_get_time(s) == t0);
    CHECK(mbk_state_get_stage(s) >= MBK_STAGE_ACCELERATION);
    /* the z column: d zdot / d z = -2, and z moves nothing else */
    for (int i = 0; i < ny; ++i) CHECK_NEAR(J[i * ny + ny - 1], i == ny - 1 ? -2.0 : 0.0, 1e-7);
    for (int j = 0; j < ny - 1; ++j) CHECK(J[(ny - 1) * ny + j] == 0.0);
    mbk_state_destroy(s);
    mbk_system_destroy(sys);
}

static void test_default_for_cvode_and_ida(void)
{
    mbk_system *sys = make_pendulum();
    mbk_integrator *igs[3] = {mbk_integrator_create_cvode(sys, MBK_CVODE_BDF),
                              mbk_integrator_create_cvode(sys, MBK_CVODE_ADAMS), mbk_integrator_create_ida(sys)};
    for (int k = 0; k < 3; ++k) {
        mbk_integrator_settings set;
        CHECK_INT(mbk_integrator_get_settings(igs[k], &set), MBK_OK);
        CHECK(set.use_system_jacobian);
        mbk_integrator_destroy(igs[k]);
    }
    mbk_system_destroy(sys);
}

int main(void)
{
    test_pendulum_analytic();
    test_against_central_differences();
    test_perturbs_only_what_it_must();
    test_default_for_cvode_and_ida();
    return mbk_test_finish();
}
