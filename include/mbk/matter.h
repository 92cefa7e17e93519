/* mbk/matter.h - the matter subsystem: a tree of mobilized bodies.
 *
 * Bodies are added with their mobilizer, which connects frame F on the
 * parent to frame M on the body: X_GB = X_GP * X_PF * X_FM(q) * X_MB.
 * Ground is body 0; bodies are numbered in the order they are added and a
 * parent is added before its children. q and u are concatenated in body
 * order. Realization: Position computes body poses (q-only work), Velocity
 * body velocities and qdot, Dynamics zeroes the force accumulators, and
 * Acceleration udot by the O(n) articulated-body algorithm, body
 * accelerations and qdotdot; the articulated-body inertias are a lazy entry
 * that depends on q alone, computed at Acceleration or by M^-1 v and kept
 * while only u or z change. Every reader
 * names the stage it needs and fails with MBK_ESTAGE below it. */
#ifndef MBK_MATTER_H
#define MBK_MATTER_H

#include <stdbool.h>
#include "mbk/mobilizer.h"
#include "mbk/system.h"

/* Declarations here are the public API: exported from the shared library, whose
   other symbols are hidden (CMakeLists.txt, "symbol visibility"). */
#if defined(__GNUC__)
#pragma GCC visibility push(default)
#endif
#ifdef __cplusplus
extern "C" {
#endif

typedef struct mbk_matter mbk_matter;

/* A System holding a matter subsystem (index 0) and a general force subsystem
   (index 1, mbk_multibody_upd_forces in mbk/forces.h). */
mbk_system *mbk_multibody_create(const char *name);
/* The matter subsystem of a multibody System (NULL if it has none). */
mbk_matter *mbk_multibody_upd_matter(mbk_system *sys);
/* Read-only access to the matter subsystem. */
const mbk_matter *mbk_multibody_get_matter(const mbk_system *sys);
/* Applied body forces (moment about body origin, force) in G, by body with Ground at 0 (Dynamics). */
const mbk_spatial_vec *mbk_multibody_get_body_forces(const mbk_system *sys, const mbk_state *s);
/* Writable body-force accumulator; zeroed by matter at the start of Dynamics, read at Acceleration. */
mbk_spatial_vec *mbk_multibody_upd_body_forces(const mbk_system *sys, const mbk_state *s);
/* Applied mobility forces, one per u (Dynamics). */
const double *mbk_multibody_get_mobility_forces(const mbk_system *sys, const mbk_state *s);
/* Writable mobility-force accumulator; zeroed at the start of Dynamics. */
double *mbk_multibody_upd_mobility_forces(const mbk_system *sys, const mbk_state *s);

/* Largest mass (kg) and largest inertia entry (kg m^2) mbk_matter_add_body accepts, also
   for the inertia about the body origin: the dynamics multiply masses, inertias and
   distances, and beyond this the products overflow double precision. */
#define MBK_MASS_PROPS_MAX 1e100

/* Add a body (mass properties about its centre of mass, in B) on a mobilizer to `parent`;
   returns its index. The call takes the mobilizer's impl: the System destroys it
   later, or this call does at once when it refuses the body. */
int mbk_matter_add_body(mbk_matter *m, int parent, const mbk_transform *X_PF,
                        const mbk_mass_props *body, const mbk_transform *X_BM,
                        mbk_mobilizer mobilizer);
/* As mbk_matter_add_body, but the central inertia need only be symmetric positive semidefinite
   (to round-off): principal moments that break the triangle inequality, which no rigid body has
   but which leave the dynamics defined (CAD exports, rounded model files), are accepted. */
int mbk_matter_add_body_unrealizable(mbk_matter *m, int parent, const mbk_transform *X_PF,
                                     const mbk_mass_props *body, const mbk_transform *X_BM,
                                     mbk_mobilizer mobilizer);
/* Number of bodies, Ground included. */
int mbk_matter_get_num_bodies(const mbk_matter *m);
/* Number of mobilities (u) of all bodies; a topology property (needs no State). */
int mbk_matter_get_num_mobilities(const mbk_matter *m);
/* Parent of a body (-1 for Ground or a bad index). */
int mbk_matter_get_parent(const mbk_matter *m, int body);
/* Name a body (copied; NULL removes the name; Ground may be named too). Names are
   topology data and need not be unique: mbk_matter_find_body returns the first match. */
int mbk_matter_set_body_name(mbk_matter *m, int body, const char *name);
/* Index of the lowest-numbered body with this name, or -1 if none (or m or name is NULL). */
int mbk_matter_find_body(const mbk_matter *m, const char *name);
/* Choose Euler angles (true) or quaternions for Ball and Free mobilizers (Model stage). */
int mbk_matter_set_use_euler_angles(const mbk_matter *m, mbk_state *s, bool on);
/* Current choice (false on error). */
bool mbk_matter_get_use_euler_angles(const mbk_matter *m, const mbk_state *s);
/* A body's number of q (Model). */
int mbk_matter_get_body_num_q(const mbk_matter *m, const mbk_state *s, int body);
/* A body's number of u (Model). */
int mbk_matter_get_body_num_u(const mbk_matter *m, const mbk_state *s, int body);
/* Where a body's q start in the matter subsystem's q (Model). */
int mbk_matter_get_body_q_start(const mbk_matter *m, const mbk_state *s, int body);
/* Where a body's u start in the matter subsystem's u (Model). */
int mbk_matter_get_body_u_start(const mbk_matter *m, const mbk_state *s, int body);
/* Pose of body B in Ground (Position). */
int mbk_matter_get_body_transform(const mbk_matter *m, const mbk_state *s, int body,
                                  mbk_transform *X_GB);
/* Spatial velocity of B's origin in G (Velocity). */
int mbk_matter_get_body_velocity(const mbk_matter *m, const mbk_state *s, int body,
                                 mbk_spatial_vec *V_GB);
/* Spatial acceleration of B's origin in G (Acceleration). */
int mbk_matter_get_body_acceleration(const mbk_matter *m, const mbk_state *s, int body,
                                     mbk_spatial_vec *A_GB);
/* Set a body's q so that X_FM best fits the given pose (invalidates Position). */
int mbk_matter_set_body_q_to_fit_transform(const mbk_matter *m, mbk_state *s, int body,
                                           const mbk_transform *X_FM);
/* Set a body's u so that V_FM best fits the given velocity (Position; invalidates Velocity). */
int mbk_matter_set_body_u_to_fit_velocity(const mbk_matter *m, mbk_state *s, int body,
                                          const mbk_spatial_vec *V_FM);
/* Put every quaternion in q back on unit length (Model; invalidates Position if
   anything changed). External integrators call it after a step; results never
   depend on it, since matter uses the normalized quaternion anyway. */
int mbk_matter_normalize_quaternions(const mbk_matter *m, mbk_state *s);
/* Mass matrix, nu x nu row-major, by the composite-rigid-body algorithm in O(n depth) (Position). */
int mbk_matter_calc_mass_matrix(const mbk_matter *m, const mbk_state *s, double *M);
/* Mv = M v in O(n) (Position). */
int mbk_matter_multiply_by_M(const mbk_matter *m, const mbk_state *s, const double *v, double *Mv);
/* Minv_v = M^-1 v in O(n) by the articulated-body algorithm (Position). */
int mbk_matter_multiply_by_M_inverse(const mbk_matter *m, const mbk_state *s, const double *v,
                                     double *Minv_v);
/* Inverse dynamics: residual = M known_udot + C(q,u) - mobility_forces - J^T body_forces,
   applying only the forces passed in (NULL: none; known_udot NULL: zero) (Velocity). */
int mbk_matter_calc_residual_force(const mbk_matter *m, const mbk_state *s,
                                   const double *mobility_forces,
                                   const mbk_spatial_vec *body_forces, const double *known_udot,
                                   double *residual);
/* Kinetic energy 0.5 u^T M u (Velocity). */
int mbk_matter_calc_kinetic_energy(const mbk_matter *m, const mbk_state *s, double *ke);

/* ---- Jacobians: V_GB of every body (Ground first) = J u ---- */
/* System Jacobian J, (6 nb) x nu row-major: rows 6b..6b+5 give (w, v) of body b (Position). */
int mbk_matter_calc_system_jacobian(const mbk_matter *m, const mbk_state *s, double *J);
/* J u: the body velocities u would give, nb spatial vectors, in O(n) (Position). */
int mbk_matter_multiply_by_system_jacobian(const mbk_matter *m, const mbk_state *s,
                                           const double *u, mbk_spatial_vec *Ju);
/* J^T F: generalized forces of body spatial forces F (nb, Ground's ignored), O(n) (Position). */
int mbk_matter_multiply_by_system_jacobian_transpose(const mbk_matter *m, const mbk_state *s,
                                                     const mbk_spatial_vec *F, double *JtF);
/* Station Jacobian, 3 x nu row-major: velocity in G of the body-fixed point station_B (Position). */
int mbk_matter_calc_station_jacobian(const mbk_matter *m, const mbk_state *s, int body,
                                     mbk_vec3 station_B, double *JS);

/* ---- stations: points fixed on a body, given in B ---- */
/* Location in G (Position). */
int mbk_matter_get_station_location(const mbk_matter *m, const mbk_state *s, int body,
                                    mbk_vec3 station_B, mbk_vec3 *p_G);
/* Velocity in G (Velocity). */
int mbk_matter_get_station_velocity(const mbk_matter *m, const mbk_state *s, int body,
                                    mbk_vec3 station_B, mbk_vec3 *v_G);
/* Acceleration in G (Acceleration). */
int mbk_matter_get_station_acceleration(const mbk_matter *m, const mbk_state *s, int body,
                                        mbk_vec3 station_B, mbk_vec3 *a_G);

/* ---- whole-system quantities ---- */
/* Sum of the body masses as added (the System's defaults: needs no State). */
double mbk_matter_get_total_mass(const mbk_matter *m);
/* Mass properties of one body as given to mbk_matter_add_body (Ground: zero mass): the
   default every new State starts with. */
int mbk_matter_get_body_mass_props(const mbk_matter *m, int body, mbk_mass_props *mp);
/* Body mass properties are also Instance-stage variables of each State (as in Simbody):
   a State starts with the values given to mbk_matter_add_body and may change them
   without rebuilding the System (parameter sweeps, identification). Every result of
   Position and later (inertias, the dynamics, energy, gravity) uses the State's. */
/* Set a body's mass properties in the State (checked as mbk_matter_add_body checks them;
   invalidates Instance; Ground refused). */
int mbk_matter_set_body_mass_props(const mbk_matter *m, mbk_state *s, int body, const mbk_mass_props *mp);
/* A body's mass properties in this State (Topology: any initialized State). */
int mbk_matter_get_state_body_mass_props(const mbk_matter *m, const mbk_state *s, int body,
                                         mbk_mass_props *mp);
/* Sum of the body masses in this State. */
int mbk_matter_calc_state_total_mass(const mbk_matter *m, const mbk_state *s, double *mass);
/* Centre of mass of the whole system in G (Position). */
int mbk_matter_calc_mass_center_location(const mbk_matter *m, const mbk_state *s, mbk_vec3 *p_G);
/* Velocity of the system's centre of mass in G (Velocity). */
int mbk_matter_calc_mass_center_velocity(const mbk_matter *m, const mbk_state *s, mbk_vec3 *v_G);
/* Spatial momentum: (angular momentum about Ground's origin, linear momentum), in G (Velocity). */
int mbk_matter_calc_system_momentum(const mbk_matter *m, const mbk_state *s, mbk_spatial_vec *h);

#ifdef __cplusplus
}
#endif
#if defined(__GNUC__)
#pragma GCC visibility pop
#endif
#endif
