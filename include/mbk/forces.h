/* mbk/forces.h - force subsystems and force elements.
 *
 * A general force subsystem holds force elements. mbk_multibody_create
 * makes one (mbk_multibody_upd_forces); more can be added. At Dynamics
 * stage every enabled element adds its forces into the matter subsystem's
 * accumulators: body forces (moment about the body origin, force) in Ground,
 * indexed by body with Ground at 0, and mobility forces indexed like u. The
 * system's potential energy is the sum over every force subsystem.
 *
 * Built-in elements keep their physical parameters in a discrete variable
 * of the State that invalidates Dynamics, so they can change between runs or
 * inside an event handler without rebuilding the System
 * (mbk_force_set_parameters); which bodies and points they act on is
 * topology. Every element can be enabled or disabled per State (Instance
 * stage). docs/forces.md lists each element's law and parameters. */
#ifndef MBK_FORCES_H
#define MBK_FORCES_H

#include <stdbool.h>
#include "mbk/matter.h"

/* Declarations here are the public API: exported from the shared library, whose
   other symbols are hidden (CMakeLists.txt, "symbol visibility"). */
#if defined(__GNUC__)
#pragma GCC visibility push(default)
#endif
#ifdef __cplusplus
extern "C" {
#endif

typedef struct mbk_forces mbk_forces;
typedef struct mbk_force_ctx mbk_force_ctx;

/* The general force subsystem made by mbk_multibody_create (NULL if none). */
mbk_forces *mbk_multibody_upd_forces(mbk_system *sys);
/* Read-only access to it. */
const mbk_forces *mbk_multibody_get_forces(const mbk_system *sys);
/* Add another general force subsystem to a multibody System (before its topology is realized). */
mbk_forces *mbk_multibody_add_forces(mbk_system *sys, const char *name);
/* Subsystem index of a force subsystem. */
int mbk_forces_get_subsystem_index(const mbk_forces *f);
/* Number of elements in a force subsystem. */
int mbk_forces_get_num_elements(const mbk_forces *f);

/* ---- the context handed to custom elements ---- */
/* The System the element belongs to. */
const mbk_system *mbk_force_ctx_get_system(const mbk_force_ctx *c);
/* The matter subsystem the element acts on. */
const mbk_matter *mbk_force_ctx_get_matter(const mbk_force_ctx *c);
/* Index of the element within its force subsystem. */
int mbk_force_ctx_get_element(const mbk_force_ctx *c);
/* Subsystem index of the force subsystem (for the element's own State variables). */
int mbk_force_ctx_get_subsystem(const mbk_force_ctx *c);

/* A custom force element. Callbacks return 0, >0 (recoverable) or <0 (fatal). */
typedef struct mbk_force_ops {
    const char *name; /* shown in messages */
    /* ADD this element's forces: body_forces has one entry per body (Ground at 0),
       mobility_forces one per u; both are always valid arrays, never NULL. */
    int (*calc_force)(void *impl, const mbk_force_ctx *c, const mbk_state *s,
                      mbk_spatial_vec *body_forces, double *mobility_forces);
    /* This element's potential energy: *pe arrives 0.0; set it or add to it (Position). */
    int (*calc_potential_energy)(void *impl, const mbk_force_ctx *c, const mbk_state *s,
                                 double *pe);
    /* The force depends on t and q only: computed once per Position realization and
       reused when only u or z change. Its own parameters must then invalidate Position. */
    bool depends_only_on_positions;
    /* Optional: allocate the element's own discrete variables and cache entries in the
       force subsystem (mbk_subsystem_ctx_get_index(c)), as a subsystem would. */
    mbk_realize_fn realize_topology, realize_model, realize_instance;
    /* Free impl when the System is destroyed. */
    void (*destroy)(void *impl);
    /* Optional, for the analytic derivatives (mbk/derivatives.h): ADD the Jacobians of
       this element's generalized force f = mobility_forces + J^T body_forces (what
       calc_force adds, mapped to u) at the State (Velocity): df/dq into
       df_dq[i * ldq + j] (nu x nq, q as the State holds them) and df/du into
       df_du[i * ldu + j] (nu x nu). Either array may be NULL: skip it. Return 0, >0
       (recoverable) or <0 (fatal). NULL op: the element is differentiated on its own
       by central differences (mbk_derivative_info counts it). */
    int (*calc_jacobian)(void *impl, const mbk_force_ctx *c, const mbk_state *s, double *df_dq, int ldq,
                         double *df_du, int ldu);
} mbk_force_ops;

/* Add a custom element (ops copied, impl owned by the System); returns its index. */
int mbk_force_add_custom(mbk_forces *f, const mbk_force_ops *ops, void *impl);

/* ---- built-in elements; each returns the new element's index ---- */
/* Uniform gravity g on every body. Parameters (gx, gy, gz, zero_height);
   PE = -sum m (g . p_com + zero_height), zero_height starting at 0 (Simbody's law). */
int mbk_force_add_gravity(mbk_forces *f, mbk_vec3 g);
/* Linear spring between stations s1 on b1 and s2 on b2: tension k (d - x0), PE k (d - x0)^2 / 2. */
int mbk_force_add_two_point_linear_spring(mbk_forces *f, int b1, mbk_vec3 s1, int b2, mbk_vec3 s2,
                                          double k, double x0);
/* Linear damper between two stations: tension c d', d' the rate of change of their distance. */
int mbk_force_add_two_point_linear_damper(mbk_forces *f, int b1, mbk_vec3 s1, int b2, mbk_vec3 s2,
                                          double c);
/* Constant force of size `force` along the line of two stations; positive pushes them apart. */
int mbk_force_add_two_point_constant_force(mbk_forces *f, int b1, mbk_vec3 s1, int b2, mbk_vec3 s2,
                                           double force);
/* Spring on coordinate q_index of a body's mobilizer: -k (q - q0); PE k (q - q0)^2 / 2. */
int mbk_force_add_mobility_linear_spring(mbk_forces *f, int body, int q_index, double k, double q0);
/* Damper on a body's u_index-th speed: -c u. */
int mbk_force_add_mobility_linear_damper(mbk_forces *f, int body, int u_index, double c);
/* Constant generalized force on a body's u_index-th speed. */
int mbk_force_add_mobility_constant_force(mbk_forces *f, int body, int u_index, double force);
/* One-sided spring-damper limits q_low <= q <= q_high on coordinate q_index (q = u there). */
int mbk_force_add_mobility_linear_stop(mbk_forces *f, int body, int q_index, double stiffness,
                                       double dissipation, double q_low, double q_high);
/* Coulomb friction on a body's u_index-th speed, regularized over a small speed vt:
   tau = -friction tanh(u / vt). Parameters (friction >= 0, N m or N; vt > 0, rad/s or m/s).
   It keeps the energy it dissipates, friction u tanh(u / vt) >= 0 W, in a z of the State. */
int mbk_force_add_mobility_coulomb_friction(mbk_forces *f, int body, int u_index, double friction,
                                            double transition_velocity);
/* Constant force (in G) applied at a station (in B) of a body. */
int mbk_force_add_constant_force(mbk_forces *f, int body, mbk_vec3 station, mbk_vec3 force_G);
/* Constant torque (in G) on a body. */
int mbk_force_add_constant_torque(mbk_forces *f, int body, mbk_vec3 torque_G);
/* 6-dof linear spring-damper between frame F on b1 and frame M on b2: stiffness and
   damping on (body-fixed XYZ angles of R_FM, p_FM in F). */
int mbk_force_add_linear_bushing(mbk_forces *f, int b1, const mbk_transform *X_B1F, int b2,
                                 const mbk_transform *X_B2M, const double stiffness[6],
                                 const double damping[6]);
/* Hunt-Crossley contact of a sphere (centre in B, radius) on a body with the ground
   half-space z <= height, both of one material: params = (plane-strain modulus E,
   dissipation c, static, dynamic and viscous friction, transition velocity). */
int mbk_force_add_hunt_crossley_sphere(mbk_forces *f, int body, mbk_vec3 center, double radius,
                                       double height, const double params[6]);
/* Where a Hunt-Crossley element acts: its body, sphere centre (in B), radius and ground
   height (any pointer may be NULL); MBK_EINVAL for another kind of element. */
int mbk_force_get_hunt_crossley_sphere(const mbk_forces *f, int force, int *body, mbk_vec3 *center,
                                       double *radius, double *height);

/* ---- per-State parameters ---- */
/* Enable or disable an element (Instance stage: invalidates Instance). */
int mbk_force_set_enabled(const mbk_forces *f, mbk_state *s, int force, bool on);
/* Whether an element is enabled in this State (false on error). */
bool mbk_force_is_enabled(const mbk_forces *f, const mbk_state *s, int force);
/* Number of parameters of a built-in element (0 for custom ones, negative on error). */
int mbk_force_get_num_parameters(const mbk_forces *f, int force);
/* Copy an element's n parameters out of the State (n must match). */
int mbk_force_get_parameters(const mbk_forces *f, const mbk_state *s, int force, double *values,
                             int n);
/* Set an element's n parameters in the State (checked; invalidates Dynamics). */
int mbk_force_set_parameters(const mbk_forces *f, mbk_state *s, int force, const double *values,
                             int n);
/* Change a gravity element's g in the State (invalidates Dynamics). */
int mbk_force_set_gravity(const mbk_forces *f, mbk_state *s, int force, mbk_vec3 g);
/* Name an element (copied whole, any length). */
int mbk_force_set_name(mbk_forces *f, int force, const char *name);
/* Index of the element with this name (-1 if none). */
int mbk_force_find(const mbk_forces *f, const char *name);
/* Name of a built-in element's parameter `index` ("k", "x0", "gz", ...: the names of
   docs/forces.md's parameter column); NULL for a custom element or a bad index. */
const char *mbk_force_get_parameter_name(const mbk_forces *f, int force, int index);
/* Index of a built-in element's parameter by name, -1 if it has none of that name
   (negative status for a bad element). */
int mbk_force_find_parameter(const mbk_forces *f, int force, const char *name);
/* An element's name ("" if unnamed; NULL for a bad index). */
const char *mbk_force_get_name(const mbk_forces *f, int force);
/* What kind of element it is ("two-point linear spring", a custom element's ops name). */
const char *mbk_force_get_kind_name(const mbk_forces *f, int force);
/* This element's potential energy alone (Position; 0 if disabled). */
int mbk_force_calc_potential_energy(const mbk_forces *f, const mbk_state *s, int force, double *pe);
/* Energy a dissipating element (Coulomb friction) has turned into heat since the State's z
   started at 0 (it is a z variable: integrated with the State; Model stage). */
int mbk_force_get_dissipated_energy(const mbk_forces *f, const mbk_state *s, int force, double *energy);

#ifdef __cplusplus
}
#endif
#if defined(__GNUC__)
#pragma GCC visibility pop
#endif
#endif
