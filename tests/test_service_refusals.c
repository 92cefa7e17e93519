/* The services an integrator of one's own calls, and what custom pieces give
 * them: each bad call returns the right status with a message and leaves the
 * State's variables as they were; nothing crashes. Each case was once wrong:
 * (1) mbk_system_handle_events and _next_scheduled_event with NULL outputs, a
 *     NULL or uninitialized State, or n_events < 0 (they crashed or said MBK_OK);
 * (2) mbk_system_project that fails leaves y as it was: an unreachable
 *     constraint after matter normalized a quaternion, and a later subsystem's
 *     project op that fails after the constraints moved q (both changed y);
 * (3) mbk_integrator_initialize refusing a NULL or uninitialized State leaves
 *     the run going (it was thrown away);
 * (4) a custom mobilizer whose calc_X_FM, calc_H_FM or calc_qdot gives NaN is
 *     caught where it arises, naming the body (realizing went on to "singular
 *     articulated inertia" or a NaN udot);
 * (5) mbk_system_calc_ydot and _dae_residual with a NaN derivative: MBK_ENOTFINITE
 *     and the State as it was (they returned MBK_OK);
 * (6) mbk_system_find_witness_crossings with NaN witnesses (0 crossings, MBK_OK);
 * (7) mbk_system_calc_constrained_dae_residual does not read yp past ny (it
 *     refused NaN there);
 * (8) messages: mbk_state_set_discrete names itself; a custom constraint op that
 *     fails without a message says what it returned (the cause was empty). */
#include <math.h>
#include <stdio.h>
#include <string.h>

#include "mbk/mbk.h"
#include "mbk_test.h"

/* ---- models ------------------------------------------------------------------- */

static double witness(void *user, const mbk_system *sys, const mbk_state *s)
{
    (void)user, (void)sys;
    return mbk_state_get_q(s)[0] - 0.3;
}

static int handler(void *user, const mbk_system *sys, mbk_state *s, mbk_event_result *r)
{
    (void)user, (void)sys;
    mbk_state_upd_u(s)[0] *= -1;
    r->lowest_modified = MBK_STAGE_VELOCITY;
    return 0;
}

static const mbk_mass_props *link_mass(void)
{
    static mbk_mass_props mp;
    mp = mbk_mass_props_from_central(1.0, mbk_vec3_make(0.5, 0, 0), mbk_mat33_diag(0.1, 0.1, 0.1));
    return &mp;
}

/* A Ball then a Pin under gravity, the Pin's tip held at height z_plane (5: out of
   reach) when constrained, an event on q[0], and (sub) one more subsystem. */
static mbk_system *ball_pin(bool constrained, double z_plane, const mbk_subsystem_ops *sub)
{
    mbk_system *sys = mbk_multibody_create("ball-pin");
    mbk_matter *m = mbk_multibody_upd_matter(sys);
    mbk_transform I = mbk_transform_identity(), X1 = mbk_transform_from_p(mbk_vec3_make(1, 0, 0));
    int b1 = mbk_matter_add_body(m, 0, &I, link_mass(), &I, mbk_mobilizer_ball());
    int b2 = mbk_matter_add_body(m, b1, &X1, link_mass(), &I, mbk_mobilizer_pin());
    if (constrained) mbk_constraint_add_point_in_plane(m, 0, mbk_vec3_make(0, 0, 1), z_plane, b2, mbk_vec3_make(1, 0, 0));
    mbk_force_add_gravity(mbk_multibody_upd_forces(sys), mbk_vec3_make(0, -9.81, 0));
    mbk_system_add_event_handler(sys, MBK_STAGE_POSITION, MBK_ANY, witness, handler, NULL);
    if (sub) mbk_system_add_subsystem(sys, sub, NULL);
    CHECK_INT(mbk_system_realize_topology(sys), MBK_OK);
    return sys;
}

/* A State of sys with q = (2, .3, .4, .1, .7): a quaternion of norm 2.1, off the plane. */
static mbk_state *off_state(const mbk_system *sys)
{
    mbk_state *s = mbk_state_create();
    mbk_state_init(s, sys);
    mbk_system_realize(sys, s, MBK_STAGE_MODEL);
    const double q[5] = {2, 0.3, 0.4, 0.1, 0.7}, u[4] = {1, 2, 3, 4};
    mbk_state_set_q(s, q, 5);
    mbk_state_set_u(s, u, 4);
    return s;
}

static bool same_y(const mbk_state *s, const double *y)
{
    return memcmp(y, mbk_state_get_y(s), (size_t)mbk_state_get_ny(s) * sizeof *y) == 0;
}

/* A refusal: the status, and text (unless NULL) in the message. */
static void expect(int rc, int status, const char *text)
{
    const int ok_status = CHECK(rc == status), ok_text = !text || CHECK(strstr(mbk_last_error(), text) != NULL);
    if (!ok_status || !ok_text)
        fprintf(stderr, "  status %s (wanted %s), message: %s\n", mbk_status_name(rc), mbk_status_name(status),
                mbk_last_error());
}

/* ---- (1) the event calls ---------------------------------------------------------- */

static void test_event_calls(void)
{
    mbk_system *sys = ball_pin(false, 0, NULL);
    const int ev = mbk_system_get_events_subsystem(sys);
    mbk_state *s = off_state(sys), *fresh = mbk_state_create();
    mbk_system_realize(sys, s, MBK_STAGE_ACCELERATION);
    double y[16], tn = 0;
    memcpy(y, mbk_state_get_y(s), sizeof(double) * (size_t)mbk_state_get_ny(s));
    mbk_event_result r = {MBK_STAGE_INFINITY, false};
    int ids[4] = {0}, n = 4, neg = -1;
    expect(mbk_system_next_scheduled_event(sys, ev, s, NULL, ids, &n), MBK_EINVAL, "t_next");
    expect(mbk_system_next_scheduled_event(sys, ev, s, &tn, ids, NULL), MBK_EINVAL, "n_events");
    expect(mbk_system_next_scheduled_event(sys, ev, s, &tn, NULL, &n), MBK_EINVAL, "event_ids");
    expect(mbk_system_next_scheduled_event(sys, ev, s, &tn, ids, &neg), MBK_EINVAL, NULL);
    expect(mbk_system_next_scheduled_event(sys, ev, NULL, &tn, ids, &n), MBK_EINVAL, "state is NULL");
    expect(mbk_system_handle_events(sys, ev, s, ids, 1, NULL), MBK_EINVAL, "result");
    expect(mbk_system_handle_events(sys, ev, s, NULL, 3, &r), MBK_EINVAL, "event_ids");
    expect(mbk_system_handle_events(sys, ev, s, ids, -5, &r), MBK_EINVAL, "n_events >= 0");
    expect(mbk_system_handle_events(sys, ev, NULL, ids, 1, &r), MBK_EINVAL, "state is NULL");
    expect(mbk_system_handle_events(sys, ev, fresh, ids, 1, &r), MBK_EINVAL, "not initialized");
    CHECK(same_y(s, y));
    /* and the good calls still work */
    n = 4;
    CHECK_INT(mbk_system_next_scheduled_event(sys, ev, s, &tn, ids, &n), MBK_OK);
    CHECK_INT(mbk_system_handle_events(sys, ev, s, ids, 1, &r), MBK_OK);
    mbk_state_destroy(s), mbk_state_destroy(fresh);
    mbk_system_destroy(sys);
}

/* ---- (2) a projection that fails --------------------------------------------------- */

static int fail_project(void *impl, const mbk_subsystem_ctx *c, mbk_state *s, double tol)
{
    (void)impl, (void)c, (void)s, (void)tol;
    return mbk_set_error(MBK_ECONVERGE, "the test's subsystem cannot project");
}

static void test_failed_projection(void)
{
    const mbk_subsystem_ops later = {.name = "fails to project", .project = fail_project};
    for (int k = 0; k < 2; ++k) {
        /* k 0: the plane is out of reach; 1: reachable, then the later subsystem fails */
        mbk_system *sys = k == 0 ? ball_pin(true, 5.0, NULL) : ball_pin(true, 0.0, &later);
        mbk_state *s = off_state(sys);
        double y[16];
        memcpy(y, mbk_state_get_y(s), sizeof(double) * (size_t)mbk_state_get_ny(s));
        expect(mbk_system_project(sys, s, 1e-10), MBK_ECONVERGE, k == 0 ? NULL : "cannot project");
        if (!CHECK(same_y(s, y))) fprintf(stderr, "  case %d: q[0] %g -> %g\n", k, y[0], mbk_state_get_q(s)[0]);
        CHECK_INT(mbk_system_realize(sys, s, MBK_STAGE_POSITION), MBK_OK);
        mbk_state_destroy(s);
        mbk_system_destroy(sys);
    }
}

/* ---- (3) initialize refused ----------------------------------------------------------- */

static void test_refused_initialize(void)
{
    mbk_system *sys = ball_pin(false, 0, NULL);
    mbk_state *s = off_state(sys);
    mbk_integrator *ig = mbk_integrator_create_rkmerson(sys);
    CHECK_INT(mbk_integrator_initialize(ig, s), MBK_OK);
    CHECK_INT(mbk_integrator_step_to(ig, 0.5), MBK_OK);
    expect(mbk_integrator_initialize(ig, NULL), MBK_EINVAL, "the integrator was not changed");
    mbk_state *fresh = mbk_state_create(); /* never initialized */
    expect(mbk_integrator_initialize(ig, fresh), MBK_EINVAL, "the integrator was not changed");
    mbk_state_destroy(fresh);
    CHECK_NEAR(mbk_integrator_get_time(ig), 0.5, 0.0);
    CHECK(mbk_integrator_get_state(ig) != NULL);
    mbk_integrator_destroy(ig);
    mbk_state_destroy(s);
    mbk_system_destroy(sys);
}

/* ---- (4) a custom mobilizer that gives NaN ---------------------------------------------- */

static int nan_in; /* 1: calc_X_FM, 2: calc_H_FM, 3: calc_qdot (for q > 0.5) */

static void turn_X(const void *impl, bool euler, const double *q, mbk_transform *X)
{
    (void)impl, (void)euler;
    *X = mbk_transform_from_axis_angle(mbk_vec3_make(0, 0, 1), q[0], mbk_vec3_zero());
    if (nan_in == 1 && q[0] > 0.5) X->p.x = NAN;
}

static void turn_H(const void *impl, bool euler, const double *q, mbk_spatial_vec *H)
{
    (void)impl, (void)euler;
    H[0] = mbk_spatial_vec_make(mbk_vec3_make(0, 0, 1), mbk_vec3_zero());
    if (nan_in == 2 && q[0] > 0.5) H[0].w.z = NAN;
}

static void turn_qdot(const void *impl, bool euler, const double *q, const double *u, double *qdot)
{
    (void)impl, (void)euler;
    qdot[0] = nan_in == 3 && q[0] > 0.5 ? NAN : u[0];
}

static void turn_qdotdot(const void *impl, bool euler, const double *q, const double *u, const double *udot,
                         double *qdd)
{
    (void)impl, (void)euler, (void)q, (void)u;
    qdd[0] = udot[0];
}

static void test_custom_mobilizer_nan(void)
{
    static const mbk_mobilizer_ops turn = {.name = "turn", .nq = 1, .nu = 1, .calc_X_FM = turn_X,
                                           .calc_H_FM = turn_H, .calc_qdot = turn_qdot,
                                           .calc_qdotdot = turn_qdotdot};
    const char *op[] = {"", "calc_X_FM", "calc_H_FM", "calc_qdot"};
    for (nan_in = 1; nan_in <= 3; ++nan_in) {
        mbk_system *sys = mbk_multibody_create("turn");
        mbk_transform I = mbk_transform_identity();
        mbk_matter_add_body(mbk_multibody_upd_matter(sys), 0, &I, link_mass(), &I, mbk_mobilizer_custom(&turn, NULL));
        mbk_force_add_gravity(mbk_multibody_upd_forces(sys), mbk_vec3_make(0, -9.81, 0));
        mbk_system_realize_topology(sys);
        mbk_state *s = mbk_state_create();
        mbk_state_init(s, sys);
        mbk_system_realize(sys, s, MBK_STAGE_MODEL);
        CHECK_INT(mbk_system_realize(sys, s, MBK_STAGE_ACCELERATION), MBK_OK); /* q = 0: fine */
        mbk_state_upd_q(s)[0] = 1.0;
        mbk_state_upd_u(s)[0] = 1.0;
        expect(mbk_system_realize(sys, s, MBK_STAGE_ACCELERATION), MBK_ENOTFINITE, "body 1's mobilizer 'turn'");
        CHECK(strstr(mbk_last_error(), op[nan_in]) != NULL);
        CHECK(mbk_state_get_q(s)[0] == 1.0 && mbk_state_get_u(s)[0] == 1.0);
        CHECK(mbk_state_get_stage(s) < (nan_in == 3 ? MBK_STAGE_VELOCITY : MBK_STAGE_POSITION));
        mbk_state_destroy(s);
        mbk_system_destroy(sys);
    }
    nan_in = 0;
}

/* ---- (5) a NaN derivative through the ODE view -------------------------------------------- */

static int nan_udot(void *impl, const mbk_subsystem_ctx *c, mbk_state *s)
{
    (void)impl, (void)c;
    if (mbk_state_get_time(s) > 1.0) mbk_state_upd_udot(s)[1] = NAN;
    return 0;
}

static void test_nan_derivative(void)
{
    const mbk_subsystem_ops writer = {.name = "writes NaN", .realize_acceleration = nan_udot};
    mbk_system *sys = ball_pin(false, 0, &writer);
    mbk_state *s = off_state(sys);
    mbk_system_realize(sys, s, MBK_STAGE_ACCELERATION);
    const int ny = mbk_state_get_ny(s);
    double y[16], y1[16], ydot[16], r[16], yp[16] = {0};
    memcpy(y, mbk_state_get_y(s), sizeof(double) * (size_t)ny);
    memcpy(y1, y, sizeof y1);
    y1[5] += 0.25;
    CHECK_INT(mbk_system_calc_ydot(sys, s, 0.5, y1, ydot), MBK_OK);
    memcpy(y, mbk_state_get_y(s), sizeof(double) * (size_t)ny);
    expect(mbk_system_calc_ydot(sys, s, 2.0, y, ydot), MBK_ENOTFINITE, "the derivative of u[1] is nan");
    CHECK(same_y(s, y) && mbk_state_get_time(s) == 0.5);
    CHECK(mbk_state_get_stage(s) == MBK_STAGE_ACCELERATION);
    expect(mbk_system_calc_dae_residual(sys, s, 2.0, y, yp, r), MBK_ENOTFINITE, "the derivative of u[1] is nan");
    CHECK(same_y(s, y) && mbk_state_get_time(s) == 0.5);
    mbk_state_destroy(s);
    mbk_system_destroy(sys);
}

/* ---- (6) witnesses, (7) the DAE residual's yp -------------------------------------------- */

static void test_witnesses_and_dae(void)
{
    mbk_system *sys = ball_pin(true, 0.0, NULL);
    mbk_state *s = off_state(sys);
    CHECK_INT(mbk_system_project(sys, s, 1e-12), MBK_OK);
    mbk_system_realize(sys, s, MBK_STAGE_ACCELERATION);
    CHECK_INT(mbk_system_get_num_witnesses(sys, s), 1);
    const double w0[1] = {NAN}, w1[1] = {1.0}, w2[1] = {-1.0};
    int fired[1];
    expect(mbk_system_find_witness_crossings(sys, s, w0, w1, fired), MBK_ENOTFINITE, "w_before[0] = nan");
    expect(mbk_system_find_witness_crossings(sys, s, w1, w0, fired), MBK_ENOTFINITE, "w_after[0] = nan");
    CHECK_INT(mbk_system_find_witness_crossings(sys, s, w2, w1, fired), 1);
    /* index 3: y and yp have L.n entries; yp's past ny are not read */
    mbk_dae_options o = {.form = MBK_DAE_INDEX3};
    mbk_dae_layout L;
    CHECK_INT(mbk_system_get_dae_layout(sys, s, &o, &L), MBK_OK);
    double y[32], yp[32], r[32], r_nan[32];
    CHECK(L.n <= 32 && L.n > L.ny);
    CHECK_INT(mbk_system_get_dae_values(sys, s, &o, y, yp), MBK_OK);
    CHECK_INT(mbk_system_calc_constrained_dae_residual(sys, s, &o, mbk_state_get_time(s), y, yp, r), MBK_OK);
    for (int i = L.ny; i < L.n; ++i) yp[i] = NAN;
    CHECK_INT(mbk_system_calc_constrained_dae_residual(sys, s, &o, mbk_state_get_time(s), y, yp, r_nan), MBK_OK);
    CHECK(memcmp(r, r_nan, sizeof(double) * (size_t)L.n) == 0);
    yp[0] = NAN; /* read: refused */
    expect(mbk_system_calc_constrained_dae_residual(sys, s, &o, mbk_state_get_time(s), y, yp, r), MBK_ENOTFINITE,
           "yp[0]");
    mbk_state_destroy(s);
    mbk_system_destroy(sys);
}

/* ---- (8) messages ------------------------------------------------------------------------ */

static int silent_perr(void *impl, const mbk_constraint_args *a, double *e)
{
    (void)impl, (void)a, (void)e;
    return -1; /* fails without mbk_set_error */
}

/* The rest of a tip-in-plane constraint (the tip's z), which the test does not reach. */
static int tip_pverr(void *impl, const mbk_constraint_args *a, double *e)
{
    (void)impl;
    e[0] = mbk_constraint_get_station_velocity(a, 0, mbk_vec3_make(1, 0, 0)).z;
    return 0;
}

static int tip_paerr(void *impl, const mbk_constraint_args *a, double *e)
{
    (void)impl;
    e[0] = mbk_constraint_get_station_acceleration(a, 0, mbk_vec3_make(1, 0, 0)).z;
    return 0;
}

static int tip_force(void *impl, const mbk_constraint_args *a, const double *lambda, mbk_spatial_vec *F, double *f)
{
    (void)impl, (void)f;
    mbk_constraint_add_station_force(a, 0, mbk_vec3_make(1, 0, 0), mbk_vec3_make(0, 0, lambda[0]), F);
    return 0;
}

static void test_messages(void)
{
    mbk_system *sys = mbk_multibody_create("messages");
    mbk_matter *m = mbk_multibody_upd_matter(sys);
    mbk_transform I = mbk_transform_identity();
    int b = mbk_matter_add_body(m, 0, &I, link_mass(), &I, mbk_mobilizer_pin());
    static const mbk_constraint_ops silent = {.name = "silent", .mp = 1, .calc_perr = silent_perr,
                                              .calc_pverr = tip_pverr, .calc_paerr = tip_paerr,
                                              .apply_position_forces = tip_force};
    MUST(mbk_constraint_add_custom(m, &silent, NULL, &b, 1));
    int sub = mbk_system_add_subsystem(sys, &(mbk_subsystem_ops){.name = "holder"}, NULL);
    (void)sub;
    mbk_system_realize_topology(sys);
    mbk_state *s = mbk_state_create();
    mbk_state_init(s, sys);
    expect(mbk_system_project(sys, s, 1e-10), MBK_EUSER, "its op returned -1 without saying why");
    /* the discrete variables' setter names itself */
    double v = 1.0;
    CHECK(mbk_state_set_discrete(s, 0, 99, &mbk_value_double, &v) < 0);
    if (!CHECK(strstr(mbk_last_error(), "mbk_state_set_discrete") != NULL)) fprintf(stderr, "  %s\n", mbk_last_error());
    mbk_state_destroy(s);
    mbk_system_destroy(sys);
}

int main(void)
{
    test_event_calls();
    test_failed_projection();
    test_refused_initialize();
    test_custom_mobilizer_nan();
    test_nan_derivative();
    test_witnesses_and_dae();
    test_messages();
    return mbk_test_finish();
}
