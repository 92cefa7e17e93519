/* custom_constraint.c - the Simbody Advanced Programming Guide's custom
 * constraint (section 2.2, "A Custom Constraint"), ported to mbk's C API.
 *
 * The constraint holds the ORIGINS of two bodies a fixed distance d apart,
 * like a massless rod with ball joints at its ends. It is one holonomic
 * (position-level) equation, written exactly as the Guide writes it:
 *
 *     perr  = (r . r - d^2) / 2        r = origin of body 2 - origin of body 1
 *     pverr = d/dt perr  = v . r       v = dr/dt
 *     paerr = d/dt pverr = a . r + v . v,   a = dv/dt
 *
 * and the multiplier lambda produces the force lambda r on body 2's origin
 * and -lambda r on body 1's. That is the transpose of the velocity equation:
 * the power of these forces at any velocities is lambda (v2 - v1) . r =
 * lambda pverr(u). (docs/constraints.md explains the three rules: pverr is
 * the time derivative of perr, paerr the time derivative of pverr, and the
 * forces are the transpose of the velocity equations.)
 *
 * How the Guide's C++ maps onto C:
 *
 *   Implementation(matter, 1, 0, 0)     .mp = 1 in the ops table
 *   addConstrainedBody(b1), (b2)        the bodies array given to
 *                                       mbk_constraint_add_custom: the
 *                                       constrained-body indices 0 and 1
 *   calcPositionErrors                  calc_perr
 *   calcPositionDotErrors               calc_pverr
 *   calcPositionDotDotErrors            calc_paerr
 *   addInPositionConstraintForces       apply_position_forces
 *   getBodyOriginLocation(X_AB, b)      mbk_constraint_get_body_transform(a, b).p
 *   getBodyOriginLocationFromState      the same call (the kernel hands
 *                                       each level what it may use: a
 *                                       position read in pverr comes from
 *                                       the State)
 *   getBodyOriginVelocity(V_AB, b)      mbk_constraint_get_body_velocity(a, b).v
 *   getBodyOriginAcceleration(A_AB, b)  mbk_constraint_get_body_acceleration(a, b).v
 *   addInStationForce                   mbk_constraint_add_station_force
 *   clone()                             nothing: the System owns impl and
 *                                       frees it with the destroy op
 *
 * Everything is measured and expressed in the ancestor frame A, the nearest
 * common ancestor of the constrained bodies. Here A is a MOVING body (the
 * upper arm), which the constraint never has to know: as the Guide says,
 * treat A as if it were Ground.
 *
 * The program builds a double pendulum (upper arm on a Ball joint, forearm
 * on a Pin) and a free body hanging from the upper arm whose origin is
 * tethered to the forearm's origin by the custom constraint. It then
 *   1. builds the same model with the built-in Rod (stations at the two
 *      origins, same length) and checks that both give the same udot at a
 *      consistent State, and that the multipliers are related by
 *      lambda_custom = lambda_rod / |r| (derived below);
 *   2. integrates 2 s with the library's fixed-step RK4, which projects
 *      the State back onto the constraint manifold after every step
 *      (mbk_system_project with the constraint tolerance), and checks that
 *      the distance stays at d and that energy is conserved.
 * It exits nonzero if any check fails.
 *
 * tests/test_constraints.c includes this file (with CUSTOM_CONSTRAINT_NO_MAIN
 * defined) to reuse the constraint. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>

#include <mbk/mbk.h>

/* ====================================================================== */
/* The constraint                                                         */
/* ====================================================================== */

/* Constrained bodies, by their index in the list given when adding. */
enum { OD_BODY1 = 0, OD_BODY2 = 1 };

typedef struct origin_distance {
    double distance; /* d */
} origin_distance;

/* r = origin of body 2 - origin of body 1, in A (positions: from the State). */
static mbk_vec3 od_r(const mbk_constraint_args *a)
{
    mbk_vec3 r1 = mbk_constraint_get_body_transform(a, OD_BODY1).p;
    mbk_vec3 r2 = mbk_constraint_get_body_transform(a, OD_BODY2).p;
    return mbk_vec3_sub(r2, r1);
}

/* v = dr/dt measured in A. */
static mbk_vec3 od_v(const mbk_constraint_args *a)
{
    mbk_vec3 v1 = mbk_constraint_get_body_velocity(a, OD_BODY1).v;
    mbk_vec3 v2 = mbk_constraint_get_body_velocity(a, OD_BODY2).v;
    return mbk_vec3_sub(v2, v1);
}

/* perr = (r.r - d^2)/2 */
static int od_perr(void *impl, const mbk_constraint_args *a, double *perr)
{
    const origin_distance *c = impl;
    mbk_vec3 r = od_r(a);
    perr[0] = (mbk_vec3_dot(r, r) - c->distance * c->distance) / 2;
    return 0;
}

/* pverr = d/dt perr = v.r */
static int od_pverr(void *impl, const mbk_constraint_args *a, double *pverr)
{
    (void)impl;
    pverr[0] = mbk_vec3_dot(od_v(a), od_r(a));
    return 0;
}

/* paerr = d/dt pverr = a.r + v.v. The accelerations are the trial ones the
   kernel passes while it solves for udot; r and v come from the State. */
static int od_paerr(void *impl, const mbk_constraint_args *a, double *paerr)
{
    (void)impl;
    mbk_vec3 a1 = mbk_constraint_get_body_acceleration(a, OD_BODY1).v;
    mbk_vec3 a2 = mbk_constraint_get_body_acceleration(a, OD_BODY2).v;
    mbk_vec3 v = od_v(a);
    paerr[0] = mbk_vec3_dot(mbk_vec3_sub(a2, a1), od_r(a)) + mbk_vec3_dot(v, v);
    return 0;
}

/* The multiplier's forces: lambda r at body 2's origin, -lambda r at body 1's
   (ADDED into body_forces_A, one entry per constrained body, in A). */
static int od_forces(void *impl, const mbk_constraint_args *a, const double *lambda,
                     mbk_spatial_vec *body_forces_A, double *mobility_forces)
{
    (void)impl; (void)mobility_forces;
    mbk_vec3 force = mbk_vec3_scale(od_r(a), lambda[0]);
    mbk_constraint_add_station_force(a, OD_BODY2, mbk_vec3_zero(), force, body_forces_A);
    mbk_constraint_add_station_force(a, OD_BODY1, mbk_vec3_zero(), mbk_vec3_neg(force), body_forces_A);
    return 0;
}

static void od_destroy(void *impl) { free(impl); }

/* One holonomic equation; the nonholonomic and acceleration-only callbacks
   stay NULL. */
static const mbk_constraint_ops origin_distance_ops = {
    .name = "OriginDistance",
    .mp = 1,
    .calc_perr = od_perr,
    .calc_pverr = od_pverr,
    .calc_paerr = od_paerr,
    .apply_position_forces = od_forces,
    .destroy = od_destroy,
};

/* Hold the origins of b1 and b2 at distance d; returns the constraint index
   or a negative status (impl freed then: a refused constraint is not owned). */
static int add_origin_distance(mbk_matter *m, int b1, int b2, double d)
{
    origin_distance *c = malloc(sizeof *c);
    if (!c) return MBK_ENOMEM;
    c->distance = d;
    const int bodies[2] = {b1, b2};
    int rc = mbk_constraint_add_custom(m, &origin_distance_ops, c, bodies, 2);
    if (rc < 0) free(c);
    return rc;
}

#ifndef CUSTOM_CONSTRAINT_NO_MAIN

/* ====================================================================== */
/* The model                                                              */
/* ====================================================================== */

#define TETHER 0.5  /* d */
#define G 9.81

enum { ARM = 1, FOREARM = 2, WEIGHT = 3 };

/* The model with either the custom constraint (custom = 1) or the built-in
   Rod between the same origins. Gravity along -y. */
static mbk_system *build(int custom)
{
    mbk_system *sys = mbk_multibody_create(custom ? "custom" : "rod");
    mbk_matter *m = mbk_multibody_upd_matter(sys);
    mbk_forces *f = mbk_multibody_upd_forces(sys);
    /* upper arm: 1 m long down its -y axis, Ball joint to Ground at its origin */
    mbk_mass_props arm = mbk_mass_props_from_central(2.0, mbk_vec3_make(0, -0.5, 0),
                                                     mbk_mat33_diag(0.17, 0.01, 0.17));
    /* forearm: body origin at its TIP, the elbow 0.8 m up its +y axis */
    mbk_mass_props forearm = mbk_mass_props_from_central(1.0, mbk_vec3_make(0, 0.4, 0),
                                                         mbk_mat33_diag(0.055, 0.005, 0.055));
    /* weight: a small box hanging free; its origin is off its centre of mass */
    mbk_mass_props weight = mbk_mass_props_from_central(0.5, mbk_vec3_make(0.05, 0.02, 0),
                                                        mbk_mat33_diag(0.004, 0.003, 0.002));
    mbk_transform at_elbow = mbk_transform_from_p(mbk_vec3_make(0, -1.0, 0));
    mbk_transform elbow_in_forearm = mbk_transform_from_p(mbk_vec3_make(0, 0.8, 0));
    mbk_transform id = mbk_transform_identity();
    int rc = mbk_matter_add_body(m, 0, &id, &arm, &id, mbk_mobilizer_ball());
    if (rc == ARM) rc = mbk_matter_add_body(m, ARM, &at_elbow, &forearm, &elbow_in_forearm, mbk_mobilizer_pin());
    if (rc == FOREARM) rc = mbk_matter_add_body(m, ARM, &at_elbow, &weight, &id, mbk_mobilizer_free());
    if (rc == WEIGHT) rc = mbk_force_add_gravity(f, mbk_vec3_make(0, -G, 0));
    if (rc >= 0)
        rc = custom ? add_origin_distance(m, FOREARM, WEIGHT, TETHER)
                    : mbk_constraint_add_rod(m, FOREARM, mbk_vec3_zero(), WEIGHT, mbk_vec3_zero(), TETHER);
    if (rc >= 0) rc = mbk_system_realize_topology(sys);
    if (rc < 0) {
        fprintf(stderr, "building the model failed: %s\n", mbk_last_error());
        mbk_system_destroy(sys);
        return NULL;
    }
    return sys;
}

/* ====================================================================== */
/* The program                                                            */
/* ====================================================================== */

static int failures;

static void expect(const char *what, int ok, double got, double bound)
{
    printf("  %-58s %10.3g  (bound %.1g)  %s\n", what, got, bound, ok ? "ok" : "FAILED");
    if (!ok) failures++;
}

static int must(int rc, const char *what)
{
    if (rc < 0) {
        fprintf(stderr, "%s failed: %s (%s)\n", what, mbk_status_name(rc), mbk_last_error());
        failures++;
    }
    return rc;
}

/* Distance between the constrained origins in the State (Position). */
static double tether_length(const mbk_system *sys, const mbk_state *s)
{
    const mbk_matter *m = mbk_multibody_get_matter(sys);
    mbk_transform X2, X3;
    mbk_matter_get_body_transform(m, s, FOREARM, &X2);
    mbk_matter_get_body_transform(m, s, WEIGHT, &X3);
    return mbk_vec3_norm(mbk_vec3_sub(X3.p, X2.p));
}

static double total_energy(const mbk_system *sys, const mbk_state *s)
{
    double ke = 0, pe = 0;
    must(mbk_system_calc_energy(sys, s, &ke, &pe), "mbk_system_calc_energy");
    return ke + pe;
}

int main(void)
{
    mbk_system *custom = build(1), *rod = build(0);
    if (!custom || !rod) return 1;
    const mbk_matter *mc = mbk_multibody_get_matter(custom), *mr = mbk_multibody_get_matter(rod);
    mbk_state *s = mbk_state_create(), *sr = mbk_state_create();
    must(mbk_state_init(s, custom), "mbk_state_init");
    must(mbk_state_init(sr, rod), "mbk_state_init");

    /* A starting guess: arm swung out, elbow bent, the weight somewhere near
       its tether length from the forearm's tip; everything moving. */
    must(mbk_system_realize(custom, s, MBK_STAGE_INSTANCE), "realize Instance");
    mbk_transform X_FM = mbk_transform_from_axis_angle(mbk_vec3_normalize(mbk_vec3_make(1, 0.3, 0.5)), 0.7,
                                                       mbk_vec3_zero());
    must(mbk_matter_set_body_q_to_fit_transform(mc, s, ARM, &X_FM), "fit arm");
    mbk_state_upd_q(s)[mbk_matter_get_body_q_start(mc, s, FOREARM)] = 0.9;
    X_FM = mbk_transform_from_axis_angle(mbk_vec3_make(0, 0, 1), 0.4, mbk_vec3_make(0.3, -1.1, 0.2));
    must(mbk_matter_set_body_q_to_fit_transform(mc, s, WEIGHT, &X_FM), "fit weight");
    int nu = mbk_state_get_nu(s);
    double *u = mbk_state_upd_u(s);
    for (int i = 0; i < nu; ++i) u[i] = 0.8 * sin(1.7 * i + 0.3);

    /* Assemble (positions), then project (velocities): a consistent State. */
    const double tol = 1e-12;
    must(mbk_system_assemble(custom, s, tol), "mbk_system_assemble");
    must(mbk_system_project(custom, s, tol), "mbk_system_project");

    /* ---- 1. the custom constraint against the built-in Rod ------------------- */
    /* Rod: perr_rod = |r| - d, so its velocity row is P_rod = e^T (J2 - J1)
       with e = r/|r|, while the custom constraint's is P_c = r^T (J2 - J1) =
       |r| P_rod. Both apply forces G^T lambda: lambda_c r = lambda_c |r| e
       against the Rod's lambda_rod e. At a consistent State the motion is the
       same (same udot), hence the same constraint force:
           lambda_c |r| = lambda_rod,  i.e.  lambda_c = lambda_rod / |r| (= lambda_rod / d).
       (The acceleration errors differ by a term: |r| paerr_rod = a.r + |v|^2 -
       (e.v)^2, while paerr_c = a.r + v.v, so the two give the same udot
       exactly when pverr = 0 -- another reason to project u first.) */
    int ny = mbk_state_get_ny(s);
    must(mbk_system_realize(rod, sr, MBK_STAGE_MODEL), "realize Model");
    must(mbk_state_set_y(sr, mbk_state_get_y(s), ny), "copy y");
    must(mbk_system_realize(custom, s, MBK_STAGE_ACCELERATION), "realize custom");
    must(mbk_system_realize(rod, sr, MBK_STAGE_ACCELERATION), "realize rod");
    if (failures) return 1;
    const double *ud_c = mbk_state_get_udot(s), *ud_r = mbk_state_get_udot(sr);
    double diff = 0, scale = 1;
    for (int i = 0; i < nu; ++i) {
        diff = fmax(diff, fabs(ud_c[i] - ud_r[i]));
        scale = fmax(scale, fabs(ud_r[i]));
    }
    double lc, lr, len = tether_length(custom, s);
    must(mbk_constraint_get_multipliers(mc, s, 0, &lc), "multipliers (custom)");
    must(mbk_constraint_get_multipliers(mr, sr, 0, &lr), "multipliers (rod)");
    printf("custom constraint vs built-in Rod at a consistent State:\n");
    printf("  tension (Rod multiplier) %.6f N; custom multiplier %.6f N/m; |r| = %.15f\n", lr, lc, len);
    expect("max |udot_custom - udot_rod| (relative)", diff <= 1e-12 * scale, diff / scale, 1e-12);
    expect("|lambda_custom - lambda_rod/|r|| (relative)", fabs(lc - lr / len) <= 1e-12 * fabs(lr / len),
           fabs(lc - lr / len) / fabs(lr / len), 1e-12);

    /* ---- 2. simulate: RK4 + projection ----------------------------------------- */
    /* The library's classical RK4 with a fixed step; after every step it projects its
       State with mbk_system_project(custom, state, proj_tol). */
    const double h = 1e-3, t_end = 2.0, proj_tol = 1e-10;
    mbk_integrator *ig = mbk_integrator_create_rk4(custom);
    if (!ig) {
        must(mbk_last_status(), "mbk_integrator_create_rk4");
        return 1;
    }
    must(mbk_integrator_set_fixed_step(ig, h), "mbk_integrator_set_fixed_step");
    must(mbk_integrator_set_constraint_tolerance(ig, proj_tol), "mbk_integrator_set_constraint_tolerance");
    must(mbk_integrator_initialize(ig, s), "mbk_integrator_initialize");
    double e0 = total_energy(custom, s), max_dist = 0, max_de = 0;
    int steps = (int)(t_end / h + 0.5);
    for (int k = 1; k <= steps && !failures; ++k) {
        if (must(mbk_integrator_step_to(ig, k * h), "mbk_integrator_step_to") < 0) break;
        const mbk_state *sk = mbk_integrator_get_state(ig); /* at t = k h, realized */
        max_dist = fmax(max_dist, fabs(tether_length(custom, sk) - TETHER));
        max_de = fmax(max_de, fabs(total_energy(custom, sk) - e0));
        if (k % 500 == 0)
            printf("  t = %.2f  |r| - d = %+.2e  E - E0 = %+.2e J\n", mbk_state_get_time(sk),
                   tether_length(custom, sk) - TETHER, total_energy(custom, sk) - e0);
    }
    printf("simulation (RK4, h = %g s, %g s, projection tol %g), E0 = %.6f J:\n", h, t_end, proj_tol, e0);
    /* projection keeps |perr| = |(|r| - d)(|r| + d)/2| <= tol, so ||r| - d| <= tol/d or so */
    expect("max ||r| - d| over the run [m]", max_dist <= proj_tol / TETHER, max_dist, proj_tol / TETHER);
    expect("max |E - E0| / |E0|", max_de <= 1e-7 * fabs(e0), max_de / fabs(e0), 1e-7);

    mbk_integrator_destroy(ig);
    mbk_state_destroy(s);
    mbk_state_destroy(sr);
    mbk_system_destroy(custom);
    mbk_system_destroy(rod);
    printf("%s\n", failures ? "FAILED" : "all checks passed");
    return failures ? 1 : 0;
}

#endif /* CUSTOM_CONSTRAINT_NO_MAIN */
