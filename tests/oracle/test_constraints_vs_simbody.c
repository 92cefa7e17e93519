/* Every built-in constraint against Simbody's constraint of the same name,
 * on the same tree and State (unsatisfied: q and u random), under gravity
 * and random applied forces: constrained udot, multipliers and the errors
 * qerr, uerr, udoterr to 1e-9 relative, in quaternion and Euler modes, with
 * the constraint in several places (ancestor Ground, a constrained body,
 * another body). Also several constraints at once. */
#include <mbk/mbk.h>
#include <string.h>

#include "mbk_test.h"
#include "simbody_constraints_oracle.h"
#include "simbody_oracle.h"

#define NB 6
#define TOL 1e-9

static unsigned long long rng = 0xD1B54A32D192ED03ull;
static double rnd(void)
{
    rng = rng * 6364136223846793005ull + 1442695040888963407ull;
    return (double)(rng >> 11) / 4503599627370496.0 - 1.0;
}
static mbk_vec3 rvec(double s) { return mbk_vec3_make(s * rnd(), s * rnd(), s * rnd()); }
static void put3(double *o, mbk_vec3 v) { o[0] = v.x; o[1] = v.y; o[2] = v.z; }
static mbk_vec3 get3(const double *a) { return mbk_vec3_make(a[0], a[1], a[2]); }
static mbk_mat33 rrot(void) { return mbk_mat33_from_axis_angle(mbk_vec3_normalize(rvec(1)), 2 * rnd()); }
static void put_R(double *o, mbk_mat33 R)
{
    for (int r = 0; r < 3; ++r)
        for (int c = 0; c < 3; ++c) o[3 * r + c] = R.m[r][c];
}
static mbk_mat33 get_R(const double *a)
{
    mbk_mat33 R;
    for (int r = 0; r < 3; ++r)
        for (int c = 0; c < 3; ++c) R.m[r][c] = a[3 * r + c];
    return R;
}
static void put_X(double *o, mbk_transform X) { put_R(o, X.R); put3(o + 9, X.p); }
static mbk_transform get_X(const double *a) { return mbk_transform_make(get_R(a), get3(a + 9)); }

/* The tree: a Pin, Ball, Slider, Gimbal, Pin and a Free body. */
static const int parents[NB] = {0, 1, 2, 1, 4, 0};
static const orc_mobilizer kinds[NB] = {ORC_PIN, ORC_BALL, ORC_SLIDER, ORC_GIMBAL, ORC_PIN, ORC_FREE};
static orc_body ob[NB];
static mbk_transform X_PF[NB], X_BM[NB];
static mbk_mass_props mass[NB];

static void make_tree(void)
{
    for (int i = 0; i < NB; ++i) {
        X_PF[i] = mbk_transform_make(rrot(), rvec(0.6));
        X_BM[i] = mbk_transform_make(rrot(), rvec(0.2));
        mbk_mat33 R = rrot();
        double a = 0.3 + 0.1 * rnd(), b = 0.3 + 0.1 * rnd(), c = 0.3 + 0.1 * rnd();
        mbk_mat33 I = mbk_mat33_mul_transpose(mbk_mat33_mul(R, mbk_mat33_diag(b + c, a + c, a + b)), R);
        mass[i] = mbk_mass_props_from_central(1.0 + 0.5 * rnd(), rvec(0.3), I);
        memset(&ob[i], 0, sizeof ob[i]);
        ob[i].parent = parents[i];
        ob[i].type = kinds[i];
        put_X(ob[i].X_PF, X_PF[i]);
        put_X(ob[i].X_BM, X_BM[i]);
        ob[i].mass = mass[i].mass;
        put3(ob[i].com, mass[i].com);
        put_R(ob[i].inertia_about_com, I);
    }
}

static mbk_mobilizer mobilizer_of(orc_mobilizer k)
{
    switch (k) {
    case ORC_PIN: return mbk_mobilizer_pin();
    case ORC_BALL: return mbk_mobilizer_ball();
    case ORC_SLIDER: return mbk_mobilizer_slider();
    case ORC_GIMBAL: return mbk_mobilizer_gimbal();
    default: return mbk_mobilizer_free();
    }
}

/* Pairs of bodies giving different ancestors: Ground, a constrained body, another body. */
static void body_pair(int variant, int *b1, int *b2)
{
    static const int pairs[6][2] = {{3, 6}, {1, 3}, {2, 5}, {0, 5}, {4, 5}, {6, 2}};
    *b1 = pairs[variant % 6][0];
    *b2 = pairs[variant % 6][1];
}

/* Coordinates whose qdot is u: the Pins (1, 5), the Slider (3), the Gimbal's (4). */
static void mobility(int variant, int *body, int *coord)
{
    static const int b[5] = {1, 3, 4, 5, 4}, c[5] = {0, 0, 1, 0, 2};
    *body = b[variant % 5];
    *coord = c[variant % 5];
}

static orc_constraint random_constraint(orc_constraint_kind kind, int v)
{
    orc_constraint o;
    memset(&o, 0, sizeof o);
    o.kind = kind;
    int b1, b2, mb, mc;
    body_pair(v, &b1, &b2);
    mobility(v, &mb, &mc);
    switch (kind) {
    case ORC_CON_ROD:
        o.rod.body1 = b1; o.rod.body2 = b2; put3(o.rod.station1, rvec(0.4)); put3(o.rod.station2, rvec(0.4));
        o.rod.length = 0.8 + 0.3 * rnd();
        break;
    case ORC_CON_BALL:
        o.ball.body1 = b1; o.ball.body2 = b2; put3(o.ball.station1, rvec(0.4)); put3(o.ball.station2, rvec(0.4));
        break;
    case ORC_CON_WELD:
        o.weld.body1 = b1; o.weld.body2 = b2;
        put_X(o.weld.X_B1F, mbk_transform_make(rrot(), rvec(0.3)));
        put_X(o.weld.X_B2M, mbk_transform_make(rrot(), rvec(0.3)));
        break;
    case ORC_CON_POINT_IN_PLANE:
        o.point_in_plane.plane_body = b1; o.point_in_plane.follower_body = b2;
        put3(o.point_in_plane.normal, rvec(1)); o.point_in_plane.height = 0.3 * rnd();
        put3(o.point_in_plane.follower_point, rvec(0.4));
        break;
    case ORC_CON_POINT_ON_LINE:
        o.point_on_line.line_body = b1; o.point_on_line.follower_body = b2;
        put3(o.point_on_line.direction, rvec(1)); put3(o.point_on_line.point_on_line, rvec(0.3));
        put3(o.point_on_line.follower_point, rvec(0.4));
        break;
    case ORC_CON_CONSTANT_ANGLE:
        o.constant_angle.base_body = b1; o.constant_angle.follower_body = b2;
        put3(o.constant_angle.base_axis, rvec(1)); put3(o.constant_angle.follower_axis, rvec(1));
        o.constant_angle.angle = 1.0 + 0.5 * rnd();
        break;
    case ORC_CON_CONSTANT_ORIENTATION:
        o.constant_orientation.base_body = b1; o.constant_orientation.follower_body = b2;
        put_R(o.constant_orientation.R_B1F, rrot()); put_R(o.constant_orientation.R_B2M, rrot());
        break;
    case ORC_CON_CONSTANT_SPEED:
        o.constant_speed = (orc_con_constant_speed){mb, mc, rnd()};
        break;
    case ORC_CON_CONSTANT_ACCELERATION:
        o.constant_acceleration = (orc_con_constant_acceleration){mb, mc, rnd()};
        break;
    case ORC_CON_NO_SLIP_1D:
        o.no_slip.case_body = v % 2 ? 0 : b1; o.no_slip.moving_body0 = b1; o.no_slip.moving_body1 = b2;
        put3(o.no_slip.point, rvec(0.5)); put3(o.no_slip.direction, rvec(1));
        break;
    case ORC_CON_COORDINATE_COUPLER:
    case ORC_CON_SPEED_COUPLER: {
        int b[2], c[2];
        mobility(v, &b[0], &c[0]);
        mobility(v + 2, &b[1], &c[1]);
        orc_con_coordinate_coupler *cc = &o.coordinate_coupler;
        if (kind == ORC_CON_COORDINATE_COUPLER) {
            cc->n = 2;
            for (int k = 0; k < 2; ++k) { cc->body[k] = b[k]; cc->which_q[k] = c[k]; cc->coef[k] = 1 + rnd(); }
            cc->constant = 0.2 * rnd();
        } else {
            orc_con_speed_coupler *sc = &o.speed_coupler;
            sc->n = 2;
            for (int k = 0; k < 2; ++k) { sc->body[k] = b[k]; sc->which_u[k] = c[k]; sc->coef[k] = 1 + rnd(); }
            sc->constant = 0.2 * rnd();
        }
        break;
    }
    case ORC_CON_PRESCRIBED_MOTION:
        o.prescribed_motion.body = mb; o.prescribed_motion.which_q = mc;
        o.prescribed_motion.function = ORC_MOTION_SINUSOID;
        o.prescribed_motion.amplitude = 0.5 + 0.2 * rnd(); o.prescribed_motion.frequency = 2 + rnd();
        o.prescribed_motion.phase = rnd();
        break;
    default: break;
    }
    return o;
}

/* The same constraint in mbk. */
static int add_to_mbk(mbk_matter *m, const orc_constraint *o)
{
    switch (o->kind) {
    case ORC_CON_ROD:
        return mbk_constraint_add_rod(m, o->rod.body1, get3(o->rod.station1), o->rod.body2, get3(o->rod.station2), o->rod.length);
    case ORC_CON_BALL:
        return mbk_constraint_add_ball(m, o->ball.body1, get3(o->ball.station1), o->ball.body2, get3(o->ball.station2));
    case ORC_CON_WELD: {
        mbk_transform F = get_X(o->weld.X_B1F), M = get_X(o->weld.X_B2M);
        return mbk_constraint_add_weld(m, o->weld.body1, &F, o->weld.body2, &M);
    }
    case ORC_CON_POINT_IN_PLANE:
        return mbk_constraint_add_point_in_plane(m, o->point_in_plane.plane_body, get3(o->point_in_plane.normal),
                                                 o->point_in_plane.height, o->point_in_plane.follower_body,
                                                 get3(o->point_in_plane.follower_point));
    case ORC_CON_POINT_ON_LINE:
        return mbk_constraint_add_point_on_line(m, o->point_on_line.line_body, get3(o->point_on_line.direction),
                                                get3(o->point_on_line.point_on_line), o->point_on_line.follower_body,
                                                get3(o->point_on_line.follower_point));
    case ORC_CON_CONSTANT_ANGLE:
        return mbk_constraint_add_constant_angle(m, o->constant_angle.base_body, get3(o->constant_angle.base_axis),
                                                 o->constant_angle.follower_body, get3(o->constant_angle.follower_axis),
                                                 o->constant_angle.angle);
    case ORC_CON_CONSTANT_ORIENTATION: {
        mbk_mat33 F = get_R(o->constant_orientation.R_B1F), M = get_R(o->constant_orientation.R_B2M);
        return mbk_constraint_add_constant_orientation(m, o->constant_orientation.base_body, &F,
                                                       o->constant_orientation.follower_body, &M);
    }
    case ORC_CON_CONSTANT_SPEED:
        return mbk_constraint_add_constant_speed(m, o->constant_speed.body, o->constant_speed.which_u, o->constant_speed.speed);
    case ORC_CON_CONSTANT_ACCELERATION:
        return mbk_constraint_add_constant_acceleration(m, o->constant_acceleration.body, o->constant_acceleration.which_u,
                                                        o->constant_acceleration.acceleration);
    case ORC_CON_NO_SLIP_1D:
        return mbk_constraint_add_no_slip_1d(m, o->no_slip.case_body, get3(o->no_slip.point), get3(o->no_slip.direction),
                                             o->no_slip.moving_body0, o->no_slip.moving_body1);
    case ORC_CON_COORDINATE_COUPLER: {
        const orc_con_coordinate_coupler *c = &o->coordinate_coupler;
        double coef[3] = {c->coef[0], c->coef[1], c->constant};
        return mbk_constraint_add_coordinate_coupler(m, mbk_function_linear(coef, 2), c->body, c->which_q, 2);
    }
    case ORC_CON_SPEED_COUPLER: {
        const orc_con_speed_coupler *c = &o->speed_coupler;
        double coef[3] = {c->coef[0], c->coef[1], c->constant};
        return mbk_constraint_add_speed_coupler(m, mbk_function_linear(coef, 2), c->body, c->which_u, 2);
    }
    case ORC_CON_PRESCRIBED_MOTION: {
        const orc_con_prescribed_motion *p = &o->prescribed_motion;
        return mbk_constraint_add_prescribed_motion(m, mbk_function_sinusoid(p->amplitude, p->frequency, p->phase),
                                                    p->body, p->which_q);
    }
    default: return -1;
    }
}

static double rel(const double *a, const double *b, int n)
{
    double e = 0, s = 1;
    for (int i = 0; i < n; ++i) { e = fmax(e, fabs(a[i] - b[i])); s = fmax(s, fabs(b[i])); }
    return e / s;
}

static double worst[ORC_CON_PRESCRIBED_MOTION + 2];
static int inconsistent; /* placements where the equations cannot all be met */

/* One evaluation with the given constraints; slot = where to record the worst error. */
static void compare(const orc_constraint *o, int n, int euler, int slot, const char *what)
{
    mbk_system *sys = mbk_multibody_create("constraints vs Simbody");
    mbk_matter *m = mbk_multibody_upd_matter(sys);
    for (int i = 0; i < NB; ++i) mbk_matter_add_body(m, parents[i], &X_PF[i], &mass[i], &X_BM[i], mobilizer_of(kinds[i]));
    for (int k = 0; k < n; ++k)
        if (!CHECK(add_to_mbk(m, &o[k]) == k)) fprintf(stderr, "    %s: %s\n", what, mbk_last_error());
    mbk_force_add_gravity(mbk_multibody_upd_forces(sys), mbk_vec3_make(0, 0, -9.81));
    mbk_system_realize_topology(sys);
    mbk_state *s = mbk_state_create();
    mbk_state_init(s, sys);
    mbk_matter_set_use_euler_angles(m, s, euler);
    mbk_system_realize(sys, s, MBK_STAGE_MODEL);
    int nq = mbk_state_get_nq(s), nu = mbk_state_get_nu(s);
    double q[64], u[64], t = rnd();
    for (int i = 0; i < nq; ++i) q[i] = 0.7 * rnd();
    for (int i = 0; i < nu; ++i) u[i] = rnd();
    mbk_state_set_q(s, q, nq);
    mbk_state_set_u(s, u, nu);
    mbk_state_set_time(s, t);
    mbk_matter_normalize_quaternions(m, s);
    int rc = mbk_system_realize(sys, s, MBK_STAGE_ACCELERATION);

    orc_model om = {NB, ob, euler, {0, 0, -9.81}};
    double qerr[64], uerr[64], udoterr[64], mult[64], udot[64], G[64 * 64], bias[64];
    orc_constraint_result r;
    memset(&r, 0, sizeof r);
    r.qerr = qerr; r.uerr = uerr; r.udoterr = udoterr; r.multipliers = mult; r.udot = udot;
    r.G = G; r.bias = bias;
    if (!CHECK(orc_eval_constraints(&om, o, n, mbk_state_get_q(s), u, NULL, NULL, t, &r) == 0))
        fprintf(stderr, "    %s: %s\n", what, orc_constraints_last_error());
    int mt = r.mp + r.mv + r.ma;
    /* Where no udot meets the equations (e.g. a PointOnLine on a follower that can only
       turn about one axis), Simbody returns a least-squares answer; mbk refuses. */
    double left = 0;
    for (int i = 0; i < mt; ++i) left = fmax(left, fabs(udoterr[i]));
    if (left > 1e-8) {
        inconsistent++;
        CHECK_INT(rc, MBK_ESINGULAR);
        CHECK(strstr(mbk_last_error(), "inconsistent") != NULL);
        goto done;
    }
    if (!CHECK(rc == MBK_OK)) {
        fprintf(stderr, "    %s: %s\n", what, mbk_last_error());
        goto done;
    }
    CHECK_INT(mbk_state_get_nqerr(s), r.mp);
    CHECK_INT(mbk_state_get_nudoterr(s), mt);
    /* udoterr is a solve's residual, zero up to round-off in both libraries: measure it
       against the size of the accelerations it is made of, not against itself */
    double acc_scale = 1.0;
    for (int i = 0; i < nu; ++i) acc_scale = fmax(acc_scale, fabs(udot[i]));
    for (int i = 0; i < mt; ++i) acc_scale = fmax(acc_scale, fabs(bias[i]));
    double udoterr_diff = 0;
    for (int i = 0; i < mt; ++i) udoterr_diff = fmax(udoterr_diff, fabs(mbk_state_get_udoterr(s)[i] - udoterr[i]));
    double e[5] = {rel(mbk_state_get_udot(s), udot, nu), rel(mbk_state_get_multipliers(s), mult, mt),
                   rel(mbk_state_get_qerr(s), qerr, r.mp), rel(mbk_state_get_uerr(s), uerr, r.mp + r.mv),
                   udoterr_diff / acc_scale};
    /* the dense views users couple their own integrators with */
    double mG[64 * 64], mbias[64];
    CHECK_INT(mbk_matter_calc_G(m, s, mG), MBK_OK);
    CHECK_INT(mbk_matter_calc_constraint_bias(m, s, mbias), MBK_OK);
    double e2[2] = {rel(mG, G, mt * nu), rel(mbias, bias, mt)};
    static const char *names2[2] = {"G", "bias"};
    for (int k = 0; k < 2; ++k) {
        worst[slot] = fmax(worst[slot], e2[k]);
        if (!CHECK(e2[k] <= TOL)) fprintf(stderr, "    %s (euler %d): %s differs by %.3g\n", what, euler, names2[k], e2[k]);
    }
    static const char *names[5] = {"udot", "multipliers", "qerr", "uerr", "udoterr"};
    for (int k = 0; k < 5; ++k) {
        worst[slot] = fmax(worst[slot], e[k]);
        if (!CHECK(e[k] <= TOL)) {
            fprintf(stderr, "    %s (euler %d): %s differs by %.3g\n", what, euler, names[k], e[k]);
        }
    }
done:
    mbk_state_destroy(s);
    mbk_system_destroy(sys);
}

int main(void)
{
    make_tree();
    static const orc_constraint_kind kinds_tested[] = {
        ORC_CON_ROD, ORC_CON_BALL, ORC_CON_WELD, ORC_CON_POINT_IN_PLANE, ORC_CON_POINT_ON_LINE,
        ORC_CON_CONSTANT_ANGLE, ORC_CON_CONSTANT_ORIENTATION, ORC_CON_CONSTANT_SPEED,
        ORC_CON_CONSTANT_ACCELERATION, ORC_CON_NO_SLIP_1D, ORC_CON_COORDINATE_COUPLER,
        ORC_CON_SPEED_COUPLER, ORC_CON_PRESCRIBED_MOTION};
    static const char *names[] = {"", "Rod", "Ball", "Weld", "PointInPlane", "PointOnLine", "ConstantAngle",
                                  "ConstantOrientation", "ConstantCoordinate", "ConstantSpeed",
                                  "ConstantAcceleration", "NoSlip1D", "CoordinateCoupler", "SpeedCoupler",
                                  "PrescribedMotion", "mixed"};
    for (size_t k = 0; k < sizeof kinds_tested / sizeof kinds_tested[0]; ++k)
        for (int euler = 0; euler <= 1; ++euler)
            for (int v = 0; v < 6; ++v) {
                orc_constraint o = random_constraint(kinds_tested[k], v);
                compare(&o, 1, euler, kinds_tested[k], names[kinds_tested[k]]);
            }
    /* several at once: a Rod, a PointInPlane, a ConstantSpeed and a CoordinateCoupler */
    for (int euler = 0; euler <= 1; ++euler)
        for (int v = 0; v < 4; ++v) {
            orc_constraint o[4] = {random_constraint(ORC_CON_ROD, v), random_constraint(ORC_CON_POINT_IN_PLANE, v + 1),
                                   random_constraint(ORC_CON_CONSTANT_SPEED, v), random_constraint(ORC_CON_COORDINATE_COUPLER, v + 3)};
            compare(o, 4, euler, ORC_CON_PRESCRIBED_MOTION + 1, "mixed");
        }
    printf("worst relative difference from Simbody (udot, multipliers, qerr, uerr, udoterr, G, bias):\n");
    for (size_t k = 0; k < sizeof kinds_tested / sizeof kinds_tested[0]; ++k)
        printf("  %-20s %.2e\n", names[kinds_tested[k]], worst[kinds_tested[k]]);
    printf("  %-20s %.2e\n", "mixed", worst[ORC_CON_PRESCRIBED_MOTION + 1]);
    printf("%d inconsistent placements refused with MBK_ESINGULAR (Simbody: least squares)\n", inconsistent);
    orc_constraints_release();
    return mbk_test_finish();
}
