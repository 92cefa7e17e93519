/* The C side of the Python package's bitwise checks (tests/python/test_bitwise.py).
 *
 * Builds one model through the C API, makes the calls the test makes through
 * Python, and prints every result as hexadecimal floating point ("%a"), one
 * line per quantity: NAME v0 v1 ... The test builds the same model from Python,
 * makes the same calls and requires the same bits. */
#include <math.h>
#include <mbk/mbk.h>
#include <stdio.h>
#include <stdlib.h>

static int fail(const char *what)
{
    fprintf(stderr, "c_reference: %s: %s\n", what, mbk_last_error());
    return 1;
}

static void print(const char *name, const double *v, int n)
{
    printf("%s", name);
    for (int i = 0; i < n; ++i) printf(" %a", v[i]);
    printf("\n");
}

/* The model of test_bitwise.py's build_model(): five bodies on a Pin, a
   Universal, a Ball, a Slider and a Free mobilizer; gravity, a two-point
   spring, a mobility damper. */
static mbk_system *build(double tilt)
{
    mbk_system *sys = mbk_multibody_create("bitwise");
    mbk_matter *m = mbk_multibody_upd_matter(sys);
    mbk_forces *f = mbk_multibody_upd_forces(sys);
    mbk_mass_props link = mbk_mass_props_from_central(1.5, mbk_vec3_make(0, -0.5, 0),
                                                      mbk_mat33_diag(0.03, 0.01, 0.03));
    mbk_mass_props ball = mbk_mass_props_from_central(0.7, mbk_vec3_make(0.1, -0.3, 0.05),
                                                      mbk_mat33_diag(0.02, 0.015, 0.01));
    mbk_transform I = mbk_transform_identity();
    mbk_transform tip = mbk_transform_from_p(mbk_vec3_make(0, -1, 0));
    mbk_transform tilted = mbk_transform_from_axis_angle(mbk_vec3_make(1, 0.5, 0.25), tilt,
                                                         mbk_vec3_make(0.1, 0, 0));
    int b1 = mbk_matter_add_body(m, 0, &tilted, &link, &I, mbk_mobilizer_pin());
    int b2 = mbk_matter_add_body(m, b1, &tip, &link, &I, mbk_mobilizer_universal());
    int b3 = mbk_matter_add_body(m, b2, &tip, &ball, &I, mbk_mobilizer_ball());
    int b4 = mbk_matter_add_body(m, b3, &tip, &ball, &I, mbk_mobilizer_slider());
    int b5 = mbk_matter_add_body(m, 0, &I, &ball, &I, mbk_mobilizer_free());
    if (b5 < 0) return NULL;
    mbk_force_add_gravity(f, mbk_vec3_make(0, -9.81, 0));
    mbk_force_add_two_point_linear_spring(f, b4, mbk_vec3_make(0, 0, 0), b5, mbk_vec3_make(0.1, 0, 0),
                                          20.0, 0.5);
    mbk_force_add_mobility_linear_damper(f, b1, 0, 0.3);
    (void)b4;
    if (mbk_system_realize_topology(sys) < 0) return NULL;
    return sys;
}

int main(void)
{
    volatile double tilt_v = 0.4; /* not folded at compile time: the same cos/sin as Python's */
    mbk_system *sys = build(tilt_v);
    if (!sys) return fail("building");
    const mbk_matter *m = mbk_multibody_get_matter(sys);
    mbk_state *s = mbk_state_create();
    if (mbk_state_init(s, sys) < 0 || mbk_system_realize(sys, s, MBK_STAGE_INSTANCE) < 0)
        return fail("state");
    int nq = mbk_state_get_nq(s), nu = mbk_state_get_nu(s), ny = mbk_state_get_ny(s);
    double *q = mbk_state_upd_q(s), *u = mbk_state_upd_u(s);
    for (int i = 0; i < nq; ++i) q[i] = 0.1 * (i + 1) - 0.35;
    for (int i = 0; i < nu; ++i) u[i] = 0.05 * (i + 1) - 0.2;
    if (mbk_system_realize(sys, s, MBK_STAGE_ACCELERATION) < 0) return fail("realize");
    print("q", mbk_state_get_q(s), nq);
    print("udot", mbk_state_get_udot(s), nu);
    print("qdot", mbk_state_get_qdot(s), nq);
    double e[2];
    mbk_system_calc_energy(sys, s, &e[0], &e[1]);
    print("energy", e, 2);

    double *M = malloc(sizeof(double) * nu * nu);
    mbk_matter_calc_mass_matrix(m, s, M);
    print("mass_matrix", M, nu * nu);
    int nb = mbk_matter_get_num_bodies(m);
    double *J = malloc(sizeof(double) * 6 * nb * nu);
    mbk_matter_calc_system_jacobian(m, s, J);
    print("system_jacobian", J, 6 * nb * nu);
    double *known = malloc(sizeof(double) * nu), *res = malloc(sizeof(double) * nu);
    for (int i = 0; i < nu; ++i) known[i] = 0.3 - 0.07 * i;
    mbk_matter_calc_residual_force(m, s, NULL, NULL, known, res);
    print("residual", res, nu);
    mbk_transform X;
    mbk_matter_get_body_transform(m, s, 3, &X);
    print("X_GB3", &X.R.m[0][0], 12);

    /* the ODE view at (t, y) on a scratch State */
    double *y = malloc(sizeof(double) * ny), *ydot = malloc(sizeof(double) * ny);
    for (int i = 0; i < ny; ++i) y[i] = mbk_state_get_y(s)[i];
    y[0] += 0.01;
    mbk_state *w = mbk_state_create();
    mbk_state_init(w, sys);
    mbk_system_realize(sys, w, MBK_STAGE_INSTANCE);
    if (mbk_system_calc_ydot(sys, w, 0.25, y, ydot) < 0) return fail("ydot");
    print("ydot", ydot, ny);
    double *Jy = malloc(sizeof(double) * ny * ny);
    if (mbk_system_set_y_and_realize(sys, w, 0.25, y, MBK_STAGE_TIME) < 0 ||
        mbk_system_calc_ydot_jacobian(sys, w, Jy) < 0)
        return fail("jacobian");
    print("jacobian", Jy, ny * ny);

    /* integrators from the State above */
    const char *names[] = {"rkmerson", "rk4", "cvode_bdf"};
    for (int k = 0; k < 3; ++k) {
        mbk_integrator *ig = k == 0 ? mbk_integrator_create_rkmerson(sys)
                           : k == 1 ? mbk_integrator_create_rk4(sys)
                                    : mbk_integrator_create_cvode(sys, MBK_CVODE_BDF);
        if (k == 1) mbk_integrator_set_fixed_step(ig, 1e-3);
        else mbk_integrator_set_accuracy(ig, 1e-6);
        if (mbk_integrator_initialize(ig, s) < 0 || mbk_integrator_step_to(ig, 0.5) != MBK_OK)
            return fail(names[k]);
        char name[64];
        snprintf(name, sizeof name, "integrate_%s", names[k]);
        print(name, mbk_state_get_y(mbk_integrator_get_state(ig)), ny);
        mbk_integrator_stats st;
        mbk_integrator_get_stats(ig, &st);
        printf("steps_%s %ld\n", names[k], st.steps_taken);
        mbk_integrator_destroy(ig);
    }
    free(M); free(J); free(known); free(res); free(y); free(ydot); free(Jy);
    mbk_state_destroy(w);
    mbk_state_destroy(s);
    mbk_system_destroy(sys);
    return 0;
}
