/* Every built-in force element against Simbody's element of the same name:
 * same tree, same State, one element at a time: body forces, mobility
 * forces and potential energy to 1e-12 relative. The tree mixes Free,
 * Pin, Ball, Slider and Gimbal mobilizers; each element is tried at several
 * random states in quaternion and Euler modes. */
#include <mbk/mbk.h>
#include <string.h>

#include "mbk_test.h"
#include "simbody_forces_oracle.h"
#include "simbody_oracle.h"

#define NB 6 /* bodies without Ground */
#define TOL 1e-12

static unsigned long long rng = 0x9E3779B97F4A7C15ull;
static double rnd(void)
{
    rng = rng * 6364136223846793005ull + 1442695040888963407ull;
    return (double)(rng >> 11) / 4503599627370496.0 - 1.0;
}
static mbk_vec3 rvec(double s) { return mbk_vec3_make(s * rnd(), s * rnd(), s * rnd()); }
static void put3(double *o, mbk_vec3 v) { o[0] = v.x; o[1] = v.y; o[2] = v.z; }
static void put_transform(double *o, const mbk_transform *X)
{
    for (int r = 0; r < 3; ++r)
        for (int c = 0; c < 3; ++c) o[3 * r + c] = X->R.m[r][c];
    put3(o + 9, X->p);
}
static mbk_transform rframe(double s)
{
    return mbk_transform_make(mbk_mat33_from_axis_angle(mbk_vec3_normalize(rvec(1)), 2 * rnd()), rvec(s));
}

/* The tree: body i hangs from parents[i] on kinds[i]. */
static const int parents[NB] = {0, 1, 1, 2, 3, 5};
static const orc_mobilizer kinds[NB] = {ORC_FREE, ORC_PIN, ORC_BALL, ORC_SLIDER, ORC_GIMBAL, ORC_PIN};
static orc_body ob[NB];
static mbk_transform X_PF[NB], X_BM[NB];
static mbk_mass_props mass[NB];

static void make_tree(void)
{
    for (int i = 0; i < NB; ++i) {
        X_PF[i] = rframe(0.5);
        X_BM[i] = rframe(0.2);
        mbk_mat33 R = mbk_mat33_from_axis_angle(mbk_vec3_normalize(rvec(1)), rnd());
        double a = 0.3 + 0.1 * rnd(), b = 0.3 + 0.1 * rnd(), c = 0.3 + 0.1 * rnd();
        mbk_mat33 I = mbk_mat33_mul_transpose(mbk_mat33_mul(R, mbk_mat33_diag(b + c, a + c, a + b)), R);
        mass[i] = mbk_mass_props_from_central(1.0 + 0.5 * rnd(), rvec(0.3), I);
        memset(&ob[i], 0, sizeof ob[i]);
        ob[i].parent = parents[i];
        ob[i].type = kinds[i];
        put_transform(ob[i].X_PF, &X_PF[i]);
        put_transform(ob[i].X_BM, &X_BM[i]);
        ob[i].mass = mass[i].mass;
        put3(ob[i].com, mass[i].com);
        for (int r = 0; r < 3; ++r)
            for (int c = 0; c < 3; ++c) ob[i].inertia_about_com[3 * r + c] = I.m[r][c];
    }
}

static mbk_mobilizer mobilizer_of(orc_mobilizer k)
{
    switch (k) {
    case ORC_FREE: return mbk_mobilizer_free();
    case ORC_PIN: return mbk_mobilizer_pin();
    case ORC_BALL: return mbk_mobilizer_ball();
    case ORC_SLIDER: return mbk_mobilizer_slider();
    default: return mbk_mobilizer_gimbal();
    }
}

/* The same element added to mbk's general force subsystem. */
static int add_to_mbk(mbk_forces *f, const orc_force *o)
{
    mbk_vec3 s1, s2;
    switch (o->kind) {
    case ORC_FORCE_UNIFORM_GRAVITY: {
        int k = mbk_force_add_gravity(f, mbk_vec3_make(o->gravity.g[0], o->gravity.g[1], o->gravity.g[2]));
        return k;
    }
    case ORC_FORCE_TWO_POINT_SPRING:
        s1 = mbk_vec3_make(o->spring.station1[0], o->spring.station1[1], o->spring.station1[2]);
        s2 = mbk_vec3_make(o->spring.station2[0], o->spring.station2[1], o->spring.station2[2]);
        return mbk_force_add_two_point_linear_spring(f, o->spring.body1, s1, o->spring.body2, s2, o->spring.k, o->spring.x0);
    case ORC_FORCE_TWO_POINT_DAMPER:
        s1 = mbk_vec3_make(o->damper.station1[0], o->damper.station1[1], o->damper.station1[2]);
        s2 = mbk_vec3_make(o->damper.station2[0], o->damper.station2[1], o->damper.station2[2]);
        return mbk_force_add_two_point_linear_damper(f, o->damper.body1, s1, o->damper.body2, s2, o->damper.c);
    case ORC_FORCE_TWO_POINT_CONSTANT:
        s1 = mbk_vec3_make(o->two_point_force.station1[0], o->two_point_force.station1[1], o->two_point_force.station1[2]);
        s2 = mbk_vec3_make(o->two_point_force.station2[0], o->two_point_force.station2[1], o->two_point_force.station2[2]);
        return mbk_force_add_two_point_constant_force(f, o->two_point_force.body1, s1, o->two_point_force.body2, s2,
                                                      o->two_point_force.f);
    case ORC_FORCE_MOBILITY_SPRING:
        return mbk_force_add_mobility_linear_spring(f, o->mobility_spring.body, o->mobility_spring.which_q,
                                                    o->mobility_spring.k, o->mobility_spring.q_zero);
    case ORC_FORCE_MOBILITY_DAMPER:
        return mbk_force_add_mobility_linear_damper(f, o->mobility_damper.body, o->mobility_damper.which_u,
                                                    o->mobility_damper.c);
    case ORC_FORCE_MOBILITY_CONSTANT:
        return mbk_force_add_mobility_constant_force(f, o->mobility_force.body, o->mobility_force.which_u,
                                                     o->mobility_force.f);
    case ORC_FORCE_MOBILITY_STOP:
        return mbk_force_add_mobility_linear_stop(f, o->stop.body, o->stop.which_q, o->stop.stiffness,
                                                  o->stop.dissipation, o->stop.q_low, o->stop.q_high);
    case ORC_FORCE_CONSTANT_FORCE:
        return mbk_force_add_constant_force(
            f, o->constant_force.body,
            mbk_vec3_make(o->constant_force.station[0], o->constant_force.station[1], o->constant_force.station[2]),
            mbk_vec3_make(o->constant_force.force[0], o->constant_force.force[1], o->constant_force.force[2]));
    case ORC_FORCE_CONSTANT_TORQUE:
        return mbk_force_add_constant_torque(
            f, o->constant_torque.body,
            mbk_vec3_make(o->constant_torque.torque[0], o->constant_torque.torque[1], o->constant_torque.torque[2]));
    case ORC_FORCE_LINEAR_BUSHING: {
        mbk_transform A, B;
        const double *a = o->bushing.X_B1F, *b = o->bushing.X_B2M;
        for (int r = 0; r < 3; ++r)
            for (int c = 0; c < 3; ++c) { A.R.m[r][c] = a[3 * r + c]; B.R.m[r][c] = b[3 * r + c]; }
        A.p = mbk_vec3_make(a[9], a[10], a[11]);
        B.p = mbk_vec3_make(b[9], b[10], b[11]);
        return mbk_force_add_linear_bushing(f, o->bushing.body1, &A, o->bushing.body2, &B, o->bushing.stiffness,
                                            o->bushing.damping);
    }
    case ORC_FORCE_HUNT_CROSSLEY: {
        const orc_hc_material *mt = &o->contact.sphere;
        const double p[6] = {mt->stiffness, mt->dissipation, mt->static_friction, mt->dynamic_friction,
                             mt->viscous_friction, o->contact.transition_velocity};
        return mbk_force_add_hunt_crossley_sphere(
            f, o->contact.body, mbk_vec3_make(o->contact.center[0], o->contact.center[1], o->contact.center[2]),
            o->contact.radius, o->contact.plane_height, p);
    }
    }
    return -1;
}

/* A random element of the given kind. Mobility elements act on the Pin
   (body 2), Slider (4) or Gimbal (5): coordinates whose qdot is their u. */
static orc_force random_element(orc_force_kind kind, int variant)
{
    orc_force o;
    memset(&o, 0, sizeof o);
    o.kind = kind;
    static const int mob_body[3] = {2, 4, 5};
    int mb = mob_body[variant % 3], coord = mb == 5 ? variant % 3 : 0;
    int b1 = variant % 2 ? 0 : 1 + variant % NB, b2 = 1 + (variant + 3) % NB;
    switch (kind) {
    case ORC_FORCE_UNIFORM_GRAVITY: put3(o.gravity.g, rvec(10)); o.gravity.zero_height = variant % 2 ? 3 * rnd() : 0; break;
    case ORC_FORCE_TWO_POINT_SPRING:
    case ORC_FORCE_TWO_POINT_DAMPER:
    case ORC_FORCE_TWO_POINT_CONSTANT:
        /* the three share a layout: bodies, stations, one or two numbers */
        o.spring.body1 = b1; o.spring.body2 = b2;
        put3(o.spring.station1, rvec(0.5)); put3(o.spring.station2, rvec(0.5));
        o.spring.k = 5 + 5 * rnd(); o.spring.x0 = 0.5 + 0.2 * rnd();
        if (kind == ORC_FORCE_TWO_POINT_DAMPER) o.damper.c = 2 + rnd();
        if (kind == ORC_FORCE_TWO_POINT_CONSTANT) o.two_point_force.f = 3 * rnd();
        break;
    case ORC_FORCE_MOBILITY_SPRING: o.mobility_spring = (orc_mobility_spring){mb, coord, 4 + rnd(), 0.3 * rnd()}; break;
    case ORC_FORCE_MOBILITY_DAMPER: o.mobility_damper = (orc_mobility_damper){mb, coord, 2 + rnd()}; break;
    case ORC_FORCE_MOBILITY_CONSTANT: o.mobility_force = (orc_mobility_constant){mb, coord, 3 * rnd()}; break;
    case ORC_FORCE_MOBILITY_STOP: {
        double lo = 0.4 * rnd() - 0.3;
        o.stop = (orc_mobility_stop){mb, coord, 50 + 10 * rnd(), 1 + rnd(), lo, lo + 0.2};
        break;
    }
    case ORC_FORCE_CONSTANT_FORCE:
        o.constant_force.body = 1 + variant % NB;
        put3(o.constant_force.station, rvec(0.5)); put3(o.constant_force.force, rvec(3));
        break;
    case ORC_FORCE_CONSTANT_TORQUE: o.constant_torque.body = 1 + variant % NB; put3(o.constant_torque.torque, rvec(3)); break;
    case ORC_FORCE_LINEAR_BUSHING: {
        mbk_transform A = rframe(0.4), B = rframe(0.4);
        o.bushing.body1 = b1; o.bushing.body2 = b2;
        put_transform(o.bushing.X_B1F, &A); put_transform(o.bushing.X_B2M, &B);
        for (int i = 0; i < 6; ++i) { o.bushing.stiffness[i] = 10 + 5 * rnd(); o.bushing.damping[i] = 1 + rnd(); }
        break;
    }
    case ORC_FORCE_HUNT_CROSSLEY: {
        orc_hc_material mt = {1e6 * (1.5 + rnd()), 0.5 + 0.4 * rnd(), 0.8, 0.5, 0.1 * (1 + rnd())};
        o.contact.body = 1 + variant % NB;
        put3(o.contact.center, rvec(0.3));
        o.contact.radius = 0.3;
        o.contact.sphere = o.contact.plane = mt;
        o.contact.transition_velocity = 0.05 + 0.02 * rnd();
        break;
    }
    }
    return o;
}

/* Height of the contact plane that makes the sphere touch (a few mm deep). */
static void place_plane(orc_force *o, const mbk_matter *m, const mbk_state *s)
{
    mbk_vec3 C;
    mbk_matter_get_station_location(m, s, o->contact.body,
                                    mbk_vec3_make(o->contact.center[0], o->contact.center[1], o->contact.center[2]), &C);
    o->contact.plane_height = C.z - o->contact.radius + 0.004 * (1.2 + rnd());
}

static double worst[ORC_FORCE_HUNT_CROSSLEY + 1];
static int nonzero[ORC_FORCE_HUNT_CROSSLEY + 1];

static void compare(orc_force_kind kind, int variant, int euler)
{
    orc_force o = random_element(kind, variant);
    mbk_system *sys = mbk_multibody_create("forces vs Simbody");
    mbk_matter *m = mbk_multibody_upd_matter(sys);
    for (int i = 0; i < NB; ++i) mbk_matter_add_body(m, parents[i], &X_PF[i], &mass[i], &X_BM[i], mobilizer_of(kinds[i]));

    /* A throwaway state to place the contact plane at the sphere. */
    orc_model om = {NB, ob, euler, {0, 0, 0}};
    int nq, nu;
    orc_sizes(&om, &nq, &nu);
    double q[64], u[64];
    for (int i = 0; i < nq; ++i) q[i] = 0.8 * rnd();
    for (int i = 0; i < nu; ++i) u[i] = rnd();
    if (kind == ORC_FORCE_HUNT_CROSSLEY) {
        mbk_system *probe = mbk_multibody_create("probe");
        mbk_matter *pm = mbk_multibody_upd_matter(probe);
        for (int i = 0; i < NB; ++i) mbk_matter_add_body(pm, parents[i], &X_PF[i], &mass[i], &X_BM[i], mobilizer_of(kinds[i]));
        mbk_system_realize_topology(probe);
        mbk_state *ps = mbk_state_create();
        mbk_state_init(ps, probe);
        mbk_matter_set_use_euler_angles(pm, ps, euler);
        mbk_system_realize(probe, ps, MBK_STAGE_MODEL);
        mbk_state_set_q(ps, q, nq);
        mbk_matter_normalize_quaternions(pm, ps);
        mbk_system_realize(probe, ps, MBK_STAGE_POSITION);
        place_plane(&o, pm, ps);
        mbk_state_destroy(ps);
        mbk_system_destroy(probe);
    }
    CHECK(add_to_mbk(mbk_multibody_upd_forces(sys), &o) == 0);
    CHECK_INT(mbk_system_realize_topology(sys), MBK_OK);
    mbk_state *s = mbk_state_create();
    mbk_state_init(s, sys);
    mbk_matter_set_use_euler_angles(m, s, euler);
    mbk_system_realize(sys, s, MBK_STAGE_MODEL);
    mbk_state_set_q(s, q, nq);
    mbk_state_set_u(s, u, nu);
    mbk_matter_normalize_quaternions(m, s);
    if (kind == ORC_FORCE_UNIFORM_GRAVITY) { /* the zero height is a per-State parameter */
        const double p[4] = {o.gravity.g[0], o.gravity.g[1], o.gravity.g[2], o.gravity.zero_height};
        CHECK_INT(mbk_force_set_parameters(mbk_multibody_get_forces(sys), s, 0, p, 4), MBK_OK);
    }
    CHECK_INT(mbk_system_realize(sys, s, MBK_STAGE_DYNAMICS), MBK_OK);

    double F[6 * (NB + 1)], tau[64], pe = 0, mF[6 * (NB + 1)], mpe = 0;
    if (!CHECK(orc_eval_forces(&om, &o, 1, mbk_state_get_q(s), u, F, tau, &pe, NULL) == 0))
        fprintf(stderr, "    %s\n", orc_forces_last_error());
    memcpy(mF, mbk_multibody_get_body_forces(sys, s), sizeof mF);
    CHECK_INT(mbk_system_calc_energy(sys, s, NULL, &mpe), MBK_OK);
    const double *mtau = mbk_multibody_get_mobility_forces(sys, s);

    /* Compare bodies 1..NB (Ground's reactions are not accumulated by mbk). */
    double err = 0, scale = 1;
    for (int i = 6; i < 6 * (NB + 1); ++i) { err = fmax(err, fabs(mF[i] - F[i])); scale = fmax(scale, fabs(F[i])); }
    for (int i = 0; i < nu; ++i) { err = fmax(err, fabs(mtau[i] - tau[i])); scale = fmax(scale, fabs(tau[i])); }
    double rel = err / scale, pe_rel = fabs(mpe - pe) / fmax(1.0, fabs(pe));
    worst[kind] = fmax(worst[kind], fmax(rel, pe_rel));
    if (scale > 1 || pe != 0) nonzero[kind]++;
    if (!CHECK(rel <= TOL && pe_rel <= TOL))
        fprintf(stderr, "    kind %d variant %d euler %d: forces differ by %.3g, PE %.17g vs %.17g\n", kind,
                variant, euler, rel, mpe, pe);
    mbk_state_destroy(s);
    mbk_system_destroy(sys);
}

int main(void)
{
    make_tree();
    static const char *names[] = {"", "gravity", "two-point spring", "two-point damper", "two-point constant",
                                  "mobility spring", "mobility damper", "mobility constant", "mobility stop",
                                  "constant force", "constant torque", "linear bushing", "Hunt-Crossley"};
    for (int kind = ORC_FORCE_UNIFORM_GRAVITY; kind <= ORC_FORCE_HUNT_CROSSLEY; ++kind)
        for (int euler = 0; euler <= 1; ++euler)
            for (int variant = 0; variant < 12; ++variant) compare((orc_force_kind)kind, variant, euler);
    printf("worst relative difference from Simbody per element (24 states each):\n");
    for (int kind = ORC_FORCE_UNIFORM_GRAVITY; kind <= ORC_FORCE_HUNT_CROSSLEY; ++kind)
        printf("  %-20s %.2e  (%d with nonzero output)\n", names[kind], worst[kind], nonzero[kind]);
    orc_forces_release();
    return mbk_test_finish();
}
