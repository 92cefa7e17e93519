/* custom_mobilizer.c - a custom mobilizer written from scratch: CustomTranslation.
 *
 * This is the "hard case" of section 2.5 of the Simbody Advanced Programming
 * Guide ("A Custom Mobilizer"), ported to mbk's C API. CustomTranslation
 * behaves exactly like the built-in Translation mobilizer: three q that are
 * the position of M's origin in F, three u that are its velocity in F, and
 * no rotation. It is not useful in itself, but it is one of the simplest
 * mobilizers there is, so it shows every piece of a custom mobilizer
 * without distracting mathematics.
 *
 * A mobilizer connects frame F (fixed on the parent body) to frame M (fixed
 * on the child body). The kernel asks it for:
 *
 *   calc_X_FM   X_FM(q): where M is relative to F.
 *   calc_H_FM   the nu columns of H_FM(q), with V_FM = H_FM u: the spatial
 *               velocity (angular, linear) of M in F, both expressed in F,
 *               the linear part being the velocity of M's origin.
 *   calc_Hdot_u (d/dt H_FM) u, the part of M's acceleration in F that does
 *               not come from udot: A_FM = H_FM udot + Hdot_u, in F.
 *   calc_qdot and friends   N(q) with qdot = N u; only when qdot != u.
 *   set_q_to_fit_transform, set_u_to_fit_velocity   the "best fit" q and u.
 *
 * How the Guide's C++ methods map onto the C ops table:
 *
 *   Implementation(matter, 3, 3, 0)   .nu = 3, .nq = 3 (mbk needs no count of
 *                                     angles: mobilizers that can switch to
 *                                     Euler angles say so through get_nq)
 *   calcMobilizerTransformFromQ       calc_X_FM
 *   multiplyByHMatrix / HTranspose    calc_H_FM: return the columns of H and
 *                                     the kernel forms H u and H^T F itself
 *   multiplyByHDotMatrix / Transpose  calc_Hdot_u: only the product Hdot u
 *   multiplyByN / NInv / NDot         calc_qdot / calc_u_from_qdot /
 *                                     calc_qdotdot (NULL here: qdot = u)
 *   setQToFitTransform                set_q_to_fit_transform
 *   setUToFitVelocity                 set_u_to_fit_velocity
 *   clone()                           nothing: an mbk mobilizer is an ops
 *                                     table plus an impl pointer (NULL here,
 *                                     since CustomTranslation has no data)
 *
 * The program hangs one body on a CustomTranslation, pushes it with a
 * constant force through a tiny force subsystem, and checks what the kernel
 * computes against Newton's second law: a translating body accelerates at
 * F/m whatever its inertia or where its centre of mass is. It exits nonzero
 * if anything disagrees.
 *
 * tests/test_custom_mobilizers.c includes this file (with
 * CUSTOM_MOBILIZER_NO_MAIN defined) to reuse the ops table below, and checks
 * that random trees built with it match the built-in Translation exactly. */
#include <math.h>
#include <stdio.h>
#include <string.h>

#include <mbk/mbk.h>

/* ====================================================================== */
/* The mobilizer                                                          */
/* ====================================================================== */

/* Every op receives the impl pointer (our data; NULL here), the matter
   subsystem's Euler-angle choice (irrelevant without rotations) and the
   mobilizer's own q and u, already sliced out of the State. */

/* X_FM(q): no rotation, and M's origin at (q0, q1, q2) measured from F's
   origin and expressed in F. */
static void ct_calc_X_FM(const void *impl, bool euler, const double *q, mbk_transform *X_FM)
{
    (void)impl; (void)euler;
    *X_FM = mbk_transform_from_p(mbk_vec3_make(q[0], q[1], q[2]));
}

/* H_FM: u_j moves M's origin along F's j-th axis and does not rotate it, so
   column j is (angular 0, linear e_j). V_FM = H u = (0, (u0, u1, u2)). The
   kernel shifts these columns from M's origin to the body origin and
   re-expresses them in Ground; the mobilizer only ever works in F. */
static void ct_calc_H_FM(const void *impl, bool euler, const double *q, mbk_spatial_vec *H)
{
    (void)impl; (void)euler; (void)q;
    for (int j = 0; j < 3; ++j) {
        H[j] = mbk_spatial_vec_zero();
        (&H[j].v.x)[j] = 1.0;
    }
}

/* (d/dt H_FM) u: H does not depend on q, so its time derivative is zero. An
   op that always returns zero may be left NULL; it is written out here to
   mirror the Guide. A mobilizer whose H changes with q (a Pin with a moving
   axis, a function-based mobilizer) must return sum_k dH/dq_k qdot_k u. */
static void ct_calc_Hdot_u(const void *impl, bool euler, const double *q, const double *u,
                           mbk_spatial_vec *Hdot_u)
{
    (void)impl; (void)euler; (void)q; (void)u;
    *Hdot_u = mbk_spatial_vec_zero();
}

/* The q whose X_FM best fits the given one: the translation part. The
   rotation part of X_FM cannot be reached and is ignored. */
static int ct_set_q_to_fit_transform(const void *impl, bool euler, const mbk_transform *X_FM,
                                     double *q)
{
    (void)impl; (void)euler;
    q[0] = X_FM->p.x;
    q[1] = X_FM->p.y;
    q[2] = X_FM->p.z;
    return 0;
}

/* The u whose V_FM best fits the given one: the linear part. */
static int ct_set_u_to_fit_velocity(const void *impl, bool euler, const double *q,
                                    const mbk_spatial_vec *V_FM, double *u)
{
    (void)impl; (void)euler; (void)q;
    u[0] = V_FM->v.x;
    u[1] = V_FM->v.y;
    u[2] = V_FM->v.z;
    return 0;
}

/* The ops table. Ops left out take their defaults: default_q zeros,
   qdot = u (so N, N^-1 and NDot are identities), no q normalization and no
   destroy (impl is NULL, there is nothing to free). */
static const mbk_mobilizer_ops custom_translation_ops = {
    .name = "CustomTranslation",
    .nu = 3,
    .nq = 3,
    .calc_X_FM = ct_calc_X_FM,
    .calc_H_FM = ct_calc_H_FM,
    .calc_Hdot_u = ct_calc_Hdot_u,
    .set_q_to_fit_transform = ct_set_q_to_fit_transform,
    .set_u_to_fit_velocity = ct_set_u_to_fit_velocity,
};

/* A CustomTranslation mobilizer, ready for mbk_matter_add_body. */
static mbk_mobilizer custom_translation(void)
{
    return mbk_mobilizer_custom(&custom_translation_ops, NULL);
}

#ifndef CUSTOM_MOBILIZER_NO_MAIN

/* ====================================================================== */
/* A constant force, applied by a tiny force subsystem                     */
/* ====================================================================== */

/* Force subsystems are ordinary subsystems added after matter: matter zeroes
   the force accumulators at the start of Dynamics, and each force subsystem
   adds into them in its own realize_dynamics. */
typedef struct constant_force {
    int body;       /* which body */
    mbk_vec3 force; /* force at the body origin, in Ground */
} constant_force;

static int cf_realize_dynamics(void *impl, const mbk_subsystem_ctx *c, mbk_state *s)
{
    const constant_force *cf = impl;
    mbk_spatial_vec *F = mbk_multibody_upd_body_forces(mbk_subsystem_ctx_get_system(c), s);
    if (!F) return -1;
    F[cf->body].v = mbk_vec3_add(F[cf->body].v, cf->force);
    return 0;
}

static const mbk_subsystem_ops constant_force_ops = {
    .name = "constant force",
    .realize_dynamics = cf_realize_dynamics,
};

/* ====================================================================== */
/* The program                                                            */
/* ====================================================================== */

static int failures;

static void expect_near(const char *what, double got, double want)
{
    double tol = 1e-12 * fmax(1.0, fabs(want));
    if (!(fabs(got - want) <= tol)) {
        fprintf(stderr, "MISMATCH %s: got %.17g, expected %.17g\n", what, got, want);
        failures++;
    }
}

static void expect_vec3(const char *what, mbk_vec3 got, mbk_vec3 want)
{
    char name[64];
    const double *g = &got.x, *w = &want.x;
    for (int i = 0; i < 3; ++i) {
        snprintf(name, sizeof name, "%s[%d]", what, i);
        expect_near(name, g[i], w[i]);
    }
}

int main(void)
{
    const double pi = 3.14159265358979323846;

    /* The body: 2 kg, centre of mass off the body origin, a full inertia.
       None of that except the mass matters for a body that cannot rotate,
       which is the point of the check below. */
    const double mass = 2.0;
    mbk_mass_props body = mbk_mass_props_from_central(
        mass, mbk_vec3_make(0.1, -0.2, 0.05),
        mbk_mat33_from_rows(mbk_vec3_make(0.30, 0.01, 0.00), mbk_vec3_make(0.01, 0.20, 0.02),
                            mbk_vec3_make(0.00, 0.02, 0.25)));

    /* F on Ground is turned 30 degrees about z and lifted 1 m, so the
       mobilizer's coordinates (in F) differ from Ground's: q and u are in F,
       forces and A_GB in Ground. M sits 0.3 m along the body's x. */
    mbk_transform X_GF = mbk_transform_from_axis_angle(mbk_vec3_make(0, 0, 1), pi / 6,
                                                       mbk_vec3_make(0, 0, 1));
    mbk_transform X_BM = mbk_transform_from_p(mbk_vec3_make(0.3, 0, 0));

    mbk_system *sys = mbk_multibody_create("custom translation");
    mbk_matter *matter = mbk_multibody_upd_matter(sys);
    int b = mbk_matter_add_body(matter, 0, &X_GF, &body, &X_BM, custom_translation());
    constant_force push = {b, mbk_vec3_make(3.0, -1.0, 4.0)};
    if (b < 0 || mbk_system_add_subsystem(sys, &constant_force_ops, &push) < 0 ||
        mbk_system_realize_topology(sys) != MBK_OK) {
        fprintf(stderr, "building the system failed: %s\n", mbk_last_error());
        mbk_system_destroy(sys);
        return 1;
    }

    /* Put the body somewhere and give it a velocity, through the fitting ops:
       X_FM and V_FM are what we want, the mobilizer turns them into q and u.
       (The rotations in them cannot be reached and are ignored.) */
    mbk_state *s = mbk_state_create();
    mbk_transform X_FM = mbk_transform_from_axis_angle(mbk_vec3_make(1, 0, 0), 0.4,
                                                       mbk_vec3_make(0.5, -0.25, 2.0));
    mbk_spatial_vec V_FM = mbk_spatial_vec_make(mbk_vec3_make(1, 2, 3), mbk_vec3_make(-1.0, 0.5, 0.75));
    int rc = mbk_state_init(s, sys);
    if (rc == MBK_OK) rc = mbk_system_realize(sys, s, MBK_STAGE_MODEL);
    if (rc == MBK_OK) rc = mbk_matter_set_body_q_to_fit_transform(matter, s, b, &X_FM);
    if (rc == MBK_OK) rc = mbk_system_realize(sys, s, MBK_STAGE_POSITION);
    if (rc == MBK_OK) rc = mbk_matter_set_body_u_to_fit_velocity(matter, s, b, &V_FM);
    if (rc == MBK_OK) rc = mbk_system_realize(sys, s, MBK_STAGE_ACCELERATION);
    if (rc != MBK_OK) {
        fprintf(stderr, "realizing failed: %s\n", mbk_last_error());
        mbk_state_destroy(s);
        mbk_system_destroy(sys);
        return 1;
    }

    /* What the kernel computed. */
    const double *q = mbk_state_get_q(s), *u = mbk_state_get_u(s), *qdot = mbk_state_get_qdot(s);
    const double *udot = mbk_state_get_udot(s), *qdotdot = mbk_state_get_qdotdot(s);
    mbk_transform X_GB;
    mbk_spatial_vec V_GB, A_GB;
    mbk_matter_get_body_transform(matter, s, b, &X_GB);
    mbk_matter_get_body_velocity(matter, s, b, &V_GB);
    mbk_matter_get_body_acceleration(matter, s, b, &A_GB);

    /* What it should be, by hand.
       Position: X_GB = X_GF * (translation by q) * X_MB, X_MB = X_BM^-1. */
    expect_vec3("q", mbk_vec3_make(q[0], q[1], q[2]), X_FM.p);
    mbk_transform X_GB_hand = mbk_transform_compose(
        mbk_transform_compose(X_GF, mbk_transform_from_p(X_FM.p)), mbk_transform_invert(X_BM));
    expect_vec3("p_GB", X_GB.p, X_GB_hand.p);
    /* Velocity: no rotation, every point moves at R_GF v_FM; qdot = u. */
    expect_vec3("u", mbk_vec3_make(u[0], u[1], u[2]), V_FM.v);
    expect_vec3("w_GB", V_GB.w, mbk_vec3_zero());
    expect_vec3("v_GB", V_GB.v, mbk_mat33_mul_vec(X_GF.R, V_FM.v));
    for (int i = 0; i < 3; ++i) expect_near("qdot", qdot[i], u[i]);
    /* Acceleration: Newton, a = F/m in Ground, so udot = R_FG F/m in F. */
    mbk_vec3 a_G = mbk_vec3_scale(push.force, 1.0 / mass);
    mbk_vec3 udot_F = mbk_mat33_transpose_mul_vec(X_GF.R, a_G);
    expect_vec3("alpha_GB", A_GB.w, mbk_vec3_zero());
    expect_vec3("a_GB", A_GB.v, a_G);
    expect_vec3("udot", mbk_vec3_make(udot[0], udot[1], udot[2]), udot_F);
    for (int i = 0; i < 3; ++i) expect_near("qdotdot", qdotdot[i], udot[i]);

    printf("CustomTranslation: q = (%g, %g, %g), u = (%g, %g, %g)\n", q[0], q[1], q[2], u[0], u[1], u[2]);
    printf("  force (%g, %g, %g) N on %g kg\n", push.force.x, push.force.y, push.force.z, mass);
    printf("  A_GB linear = (%.15g, %.15g, %.15g), F/m = (%.15g, %.15g, %.15g)\n", A_GB.v.x, A_GB.v.y,
           A_GB.v.z, a_G.x, a_G.y, a_G.z);
    printf("  udot (in F) = (%.15g, %.15g, %.15g)\n", udot[0], udot[1], udot[2]);
    printf("%s\n", failures ? "FAILED" : "all checks passed");

    mbk_state_destroy(s);
    mbk_system_destroy(sys);
    return failures ? 1 : 0;
}

#endif /* CUSTOM_MOBILIZER_NO_MAIN */
