/* Small models several tests share, built through the public API, with the
 * States, event witnesses, analytic references and helpers their tests share.
 * Include after mbk_test.h (its checks are used here). */
#ifndef MBK_TEST_MODELS_H
#define MBK_TEST_MODELS_H

#include <math.h>
#include <stdbool.h>
#include <stdio.h>

#include <mbk/mbk.h>

#include "mbk_test.h"

/* 1 for rc >= 0; otherwise 0, printing what failed and the library's message. */
static inline int ok(int rc, const char *what)
{
    if (rc < 0) fprintf(stderr, "    %s: %s\n", what, mbk_last_error());
    return rc >= 0;
}

/* Uniform in [-1, 1) from the 64-bit LCG state *seed (advanced): repeatable test data. */
static inline double lcg_uniform(unsigned long *seed)
{
    *seed = *seed * 6364136223846793005UL + 1442695040888963407UL;
    return (double)((*seed >> 11) & ((1UL << 52) - 1)) / (double)(1UL << 51) - 1.0;
}

/* ---- planar four-bar (links 0.5, 1.1, 0.8; pivots 1.2 apart) ---------------- */

/* That four-bar built in 3-D, gravity -y; close: the loop closed by a Ball (3 rows of rank 2). */
static inline mbk_system *fourbar_chain(bool close)
{
    const double l[3] = {0.5, 1.1, 0.8}, mass[3] = {1.2, 2.0, 1.5};
    mbk_system *sys = mbk_multibody_create("four-bar");
    mbk_matter *m = mbk_multibody_upd_matter(sys);
    mbk_transform id = mbk_transform_identity();
    for (int i = 0; i < 3; ++i) {
        mbk_transform X_PF = mbk_transform_from_p(mbk_vec3_make(i ? l[i - 1] : 0, 0, 0));
        double Izz = mass[i] * l[i] * l[i] / 12;
        mbk_mass_props mp = mbk_mass_props_from_central(mass[i], mbk_vec3_make(l[i] / 2, 0, 0),
                                                        mbk_mat33_diag(0.002, Izz, Izz));
        mbk_matter_add_body(m, i, &X_PF, &mp, &id, mbk_mobilizer_pin());
    }
    mbk_force_add_gravity(mbk_multibody_upd_forces(sys), mbk_vec3_make(0, -9.81, 0));
    if (close) mbk_constraint_add_ball(m, 0, mbk_vec3_make(1.2, 0, 0), 3, mbk_vec3_make(l[2], 0, 0));
    mbk_system_realize_topology(sys);
    return sys;
}

/* The closed four-bar. */
static inline mbk_system *fourbar(void) { return fourbar_chain(true); }

/* A State of the closed four-bar on its manifold (crank at 0.9 rad, locked while
   assembling, turning at 1.3 rad/s), realized through stage. */
static inline mbk_state *fourbar_state(const mbk_system *sys, mbk_stage stage)
{
    mbk_state *s = mbk_state_create();
    mbk_state_init(s, sys);
    mbk_system_realize(sys, s, MBK_STAGE_MODEL);
    const double q[3] = {0.9, 0.8, -2.0}, u[3] = {1.3, 0, 0};
    const bool locked[3] = {true, false, false};
    mbk_state_set_q(s, q, 3);
    mbk_state_set_u(s, u, 3);
    CHECK(ok(mbk_system_assemble_locked(sys, s, 1e-13, locked), "assemble"));
    CHECK(ok(mbk_system_project(sys, s, 1e-13), "project"));
    CHECK(ok(mbk_system_realize(sys, s, stage), "realize"));
    return s;
}

/* A free body (quaternion) held by a Rod (length 1) from a ground point to one of its stations, gravity -y. */
static inline mbk_system *rod_pendulum(void)
{
    mbk_system *sys = mbk_multibody_create("rod");
    mbk_matter *m = mbk_multibody_upd_matter(sys);
    mbk_transform id = mbk_transform_identity();
    mbk_mass_props mp = mbk_mass_props_from_central(1.0, mbk_vec3_make(0, 0, 0), mbk_mat33_diag(0.1, 0.2, 0.3));
    mbk_matter_add_body(m, 0, &id, &mp, &id, mbk_mobilizer_free());
    mbk_force_add_gravity(mbk_multibody_upd_forces(sys), mbk_vec3_make(0, -9.81, 0));
    mbk_constraint_add_rod(m, 0, mbk_vec3_make(0, 1, 0), 1, mbk_vec3_make(0.2, 0.1, -0.1), 1.0);
    mbk_system_realize_topology(sys);
    return sys;
}

/* ---- the four-bar of `mbk run builtin:fourbar` (apps/app_models.c) ---------- */

/* Adds to sys (made by the caller, before its realize_topology) the crank 0.4 m,
   coupler 1 m and rocker 0.8 m on pins, ground pivots 1 m apart, the loop closed
   by a ball, and gravity g. ids (may be NULL) gets the crank, coupler and rocker's
   body indices; returns the gravity force's index. */
static inline int builtin_fourbar_add(mbk_system *sys, mbk_vec3 g, int ids[3])
{
    mbk_matter *mt = mbk_multibody_upd_matter(sys);
    const double len[3] = {0.4, 1.0, 0.8}, mass[3] = {0.5, 1.0, 0.8};
    mbk_transform I = mbk_transform_identity();
    int body[3];
    for (int i = 0; i < 3; ++i) {
        double L = len[i], m = mass[i];
        mbk_mass_props mp = mbk_mass_props_from_central(m, mbk_vec3_make(L / 2, 0, 0),
                                                        mbk_mat33_diag(m * 4e-4, m * L * L / 12, m * L * L / 12));
        mbk_transform X_PF = I;
        int parent = 0;
        if (i == 1) parent = body[0], X_PF.p = mbk_vec3_make(len[0], 0, 0);
        if (i == 2) X_PF.p = mbk_vec3_make(1.0, 0, 0);
        body[i] = mbk_matter_add_body(mt, parent, &X_PF, &mp, &I, mbk_mobilizer_pin());
    }
    mbk_constraint_add_ball(mt, body[1], mbk_vec3_make(len[1], 0, 0), body[2], mbk_vec3_make(len[2], 0, 0));
    for (int i = 0; ids && i < 3; ++i) ids[i] = body[i];
    return mbk_force_add_gravity(mbk_multibody_upd_forces(sys), g);
}

/* Puts s (at Instance) at the builtin four-bar's start: q = (0.5, -0.2, 1.4), u as
   given, assembled with the crank locked, then projected if asked. */
static inline void builtin_fourbar_start(const mbk_system *sys, mbk_state *s, const double u[3], bool project)
{
    double *q = mbk_state_upd_q(s), *v = mbk_state_upd_u(s);
    q[0] = 0.5, q[1] = -0.2, q[2] = 1.4;
    v[0] = u[0], v[1] = u[1], v[2] = u[2];
    bool locked[3] = {true, false, false};
    CHECK_INT(mbk_system_assemble_locked(sys, s, 1e-12, locked), MBK_OK);
    if (project) CHECK_INT(mbk_system_project(sys, s, 1e-12), MBK_OK);
}

/* ---- the bouncing ball: a unit mass on a Slider along x --------------------- */

/* Adds the ball (inertia 0.1) and gravity g along -x to sys, before its realize_topology. */
static inline void slider_ball_add(mbk_system *sys, double g)
{
    mbk_matter *m = mbk_multibody_upd_matter(sys);
    mbk_mass_props mp = mbk_mass_props_from_central(1.0, mbk_vec3_zero(), mbk_mat33_diag(0.1, 0.1, 0.1));
    mbk_transform X = mbk_transform_identity();
    mbk_matter_add_body(m, 0, &X, &mp, &X, mbk_mobilizer_slider());
    mbk_force_add_gravity(mbk_multibody_upd_forces(sys), mbk_vec3_make(-g, 0, 0));
}

/* Event witness: the first q (the ball's height). */
static inline double q0_witness(void *user, const mbk_system *sys, const mbk_state *s)
{
    (void)user;
    (void)sys;
    return mbk_state_get_q(s)[0];
}

/* Event witness: the first u (the ball's speed). */
static inline double u0_witness(void *user, const mbk_system *sys, const mbk_state *s)
{
    (void)user;
    (void)sys;
    return mbk_state_get_u(s)[0];
}

/* Analytic time of bounce k (0, 1, ...) of a ball dropped at rest from h0 under
   gravity g, bouncing back with restitution e. */
static inline double drop_bounce_time(double h0, double g, double e, int k)
{
    double t = sqrt(2 * h0 / g), v = g * t;
    for (int i = 1; i <= k; ++i) {
        v *= e;
        t += 2 * v / g;
    }
    return t;
}

/* ---- a subsystem owning one z (zdot = -z, z0 = 0.5) ------------------------- */

/* Allocates the z. */
static inline int one_z_topology(void *impl, const mbk_subsystem_ctx *c, mbk_state *s)
{
    (void)impl;
    const double z0 = 0.5;
    int rc = mbk_state_allocate_z(s, mbk_subsystem_ctx_get_index(c), 1, &z0);
    return rc < 0 ? rc : 0;
}

/* zdot = -z. */
static inline int one_z_acceleration(void *impl, const mbk_subsystem_ctx *c, mbk_state *s)
{
    (void)impl;
    int k = mbk_subsystem_ctx_get_index(c);
    mbk_state_upd_subsystem_zdot(s, k)[0] = -mbk_state_get_subsystem_z(s, k)[0];
    return 0;
}

/* Its ops table, for mbk_system_add_subsystem. */
static const mbk_subsystem_ops one_z_ops = {
    .name = "one z", .realize_topology = one_z_topology, .realize_acceleration = one_z_acceleration};

#endif
