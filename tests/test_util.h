/* Helpers shared by several C tests (include after <mbk/mbk.h>):
 *   - a seeded random-number generator and the random indices, vectors,
 *     rotations, mass properties and bodies the random-tree tests draw from it;
 *   - the built-in mobilizer kinds by number, their names, and a maker;
 *   - the State of a random tree at Instance (topology realized, Euler
 *     angles or quaternions), each step checked;
 *   - the 2-link planar pendulum the fault-injection tests run, and a State
 *     copied from a System's default one with given q and u. */
#ifndef MBK_TEST_UTIL_H
#define MBK_TEST_UTIL_H

#include <stddef.h>

#include "mbk_test.h"

/* ---- random numbers (the caller keeps the state, so each test has its seed) ---- */

/* Next number uniform in [-1, 1) from the 64-bit linear congruential state. */
static inline double test_rand_uniform(unsigned long long *state)
{
    *state = *state * 6364136223846793005ull + 1442695040888963407ull;
    return (double)(*state >> 11) / 4503599627370496.0 - 1.0;
}

/* A vector with entries uniform in [-scale, scale). */
static inline mbk_vec3 test_rand_vec3(unsigned long long *state, double scale)
{
    return mbk_vec3_make(scale * test_rand_uniform(state), scale * test_rand_uniform(state),
                         scale * test_rand_uniform(state));
}

/* A rotation about a random axis by up to 3 rad. */
static inline mbk_mat33 test_rand_rotation(unsigned long long *state)
{
    return mbk_mat33_from_axis_angle(mbk_vec3_normalize(test_rand_vec3(state, 1.0)), 3.0 * test_rand_uniform(state));
}

/* Mass 0.5..1.5, COM within 0.4, a physical central inertia (principal moments
   from semi-axes 0.2..0.4, so the triangle inequality holds) in random axes. */
static inline mbk_mass_props test_rand_mass_props(unsigned long long *state)
{
    mbk_mat33 R = test_rand_rotation(state);
    double a = 0.2 + 0.1 * (test_rand_uniform(state) + 1), b = 0.2 + 0.1 * (test_rand_uniform(state) + 1),
           c = 0.2 + 0.1 * (test_rand_uniform(state) + 1);
    mbk_mat33 I = mbk_mat33_mul_transpose(mbk_mat33_mul(R, mbk_mat33_diag(b + c, a + c, a + b)), R);
    return mbk_mass_props_from_central(1.0 + 0.5 * test_rand_uniform(state), test_rand_vec3(state, 0.4), I);
}

/* An index uniform in 0..n-1 (n >= 1). */
static inline int test_rand_index(unsigned long long *state, int n)
{
    return (int)((test_rand_uniform(state) + 1.0) * 0.5 * n) % n;
}

/* A random body of a random tree: inboard frame X_PF (offset within 0.7),
   mobilizer frame X_BM (within 0.3) and mass properties, drawn in that order. */
static inline void test_rand_body(unsigned long long *state, mbk_transform *X_PF, mbk_transform *X_BM,
                                  mbk_mass_props *mp)
{
    *X_PF = mbk_transform_make(test_rand_rotation(state), test_rand_vec3(state, 0.7));
    *X_BM = mbk_transform_make(test_rand_rotation(state), test_rand_vec3(state, 0.3));
    *mp = test_rand_mass_props(state);
}

/* ---- mobilizer kinds ---------------------------------------------------------- */

/* The built-in mobilizers by number; K_FUNCTION (function-based) needs its
   functions from the test, so test_builtin_mobilizer leaves it out. */
enum test_mobilizer_kind {
    K_WELD, K_PIN, K_SLIDER, K_TRANSLATION, K_BALL, K_FREE,
    K_SCREW, K_UNIVERSAL, K_CYLINDER, K_PLANAR, K_GIMBAL, K_BUSHING, K_FUNCTION,
    K_NUM_KINDS
};

/* The name of a mobilizer kind, for messages. */
static inline const char *test_kind_name(int kind)
{
    static const char *const names[K_NUM_KINDS] = {"Weld",     "Pin",      "Slider",    "Translation", "Ball",
                                                   "Free",     "Screw",    "Universal", "Cylinder",    "Planar",
                                                   "Gimbal",   "Bushing",  "FunctionBased"};
    return kind >= 0 && kind < K_NUM_KINDS ? names[kind] : "?";
}

/* A built-in mobilizer of that kind (Bushing for K_BUSHING and beyond); a Screw
   draws its pitch, 0.3 times one number from the state (the only draw). */
static inline mbk_mobilizer test_builtin_mobilizer(int kind, unsigned long long *state)
{
    switch (kind) {
    case K_WELD: return mbk_mobilizer_weld();
    case K_PIN: return mbk_mobilizer_pin();
    case K_SLIDER: return mbk_mobilizer_slider();
    case K_TRANSLATION: return mbk_mobilizer_translation();
    case K_BALL: return mbk_mobilizer_ball();
    case K_FREE: return mbk_mobilizer_free();
    case K_SCREW: return mbk_mobilizer_screw(0.3 * test_rand_uniform(state));
    case K_UNIVERSAL: return mbk_mobilizer_universal();
    case K_CYLINDER: return mbk_mobilizer_cylinder();
    case K_PLANAR: return mbk_mobilizer_planar();
    case K_GIMBAL: return mbk_mobilizer_gimbal();
    default: return mbk_mobilizer_bushing();
    }
}

/* ---- the State of a random tree ------------------------------------------------ */

/* A fresh State of sys (already past Topology), realized to Instance. */
static inline mbk_state *test_new_state(const mbk_system *sys)
{
    mbk_state *s = mbk_state_create();
    CHECK_INT(mbk_state_init(s, sys), MBK_OK);
    CHECK_INT(mbk_system_realize(sys, s, MBK_STAGE_INSTANCE), MBK_OK);
    return s;
}

/* Realize the topology and return a new State at Instance, in Euler angles
   when euler (else quaternions); each of the 4 steps is a CHECK. */
static inline mbk_state *test_instance_state(mbk_system *sys, const mbk_matter *m, int euler)
{
    CHECK_INT(mbk_system_realize_topology(sys), MBK_OK);
    mbk_state *s = mbk_state_create();
    CHECK_INT(mbk_state_init(s, sys), MBK_OK);
    CHECK_INT(mbk_matter_set_use_euler_angles(m, s, euler != 0), MBK_OK);
    CHECK_INT(mbk_system_realize(sys, s, MBK_STAGE_INSTANCE), MBK_OK);
    return s;
}

/* ---- small models --------------------------------------------------------------- */

/* A 2-link planar pendulum (pins about z, links of 1 m, 1 kg) under gravity,
   plus the custom force (ops, impl) when ops is not NULL; topology realized. */
static inline mbk_system *test_pendulum2(const mbk_force_ops *ops, void *impl)
{
    mbk_system *sys = mbk_multibody_create("pendulum");
    mbk_matter *m = mbk_multibody_upd_matter(sys);
    mbk_mass_props mp = mbk_mass_props_from_central(1.0, (mbk_vec3){0, -0.5, 0}, mbk_mat33_diag(0.02, 0.01, 0.02));
    mbk_transform X0 = mbk_transform_identity(), X1 = mbk_transform_from_p((mbk_vec3){0, -1, 0});
    int b1 = mbk_matter_add_body(m, 0, &X0, &mp, &X0, mbk_mobilizer_pin());
    mbk_matter_add_body(m, b1, &X1, &mp, &X0, mbk_mobilizer_pin());
    mbk_forces *fo = mbk_multibody_upd_forces(sys);
    mbk_force_add_gravity(fo, (mbk_vec3){0, -9.81, 0});
    if (ops) mbk_force_add_custom(fo, ops, impl);
    mbk_system_realize_topology(sys);
    return sys;
}

/* A new State: the System's default one realized to Model, then q (nq of them)
   and, when u is not NULL, u (nu) set. The caller destroys it. */
static inline mbk_state *test_state_from_default(const mbk_system *sys, const double *q, int nq, const double *u,
                                                 int nu)
{
    mbk_state *s = mbk_state_create();
    mbk_state_copy(s, mbk_system_get_default_state(sys));
    mbk_system_realize(sys, s, MBK_STAGE_MODEL);
    mbk_state_set_q(s, q, nq);
    if (u) mbk_state_set_u(s, u, nu);
    return s;
}

#endif
