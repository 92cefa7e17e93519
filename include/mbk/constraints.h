/* mbk/constraints.h - constraints on the matter subsystem.
 *
 * A constraint adds equations on the motion: holonomic (position level, mp
 * of them, with their first and second time derivatives enforced too),
 * nonholonomic (velocity level, mv, with their time derivative) and
 * acceleration-only (ma). At Acceleration stage the kernel solves
 *     M udot + G^T lambda = f,   G udot = b
 * for udot and the multipliers lambda (Simbody's sign convention), in
 * O(n m + m^3). A constraint names its constrained bodies (and/or
 * constrained mobilities); the kernel finds their nearest common ancestor A
 * and hands the constraint poses, velocities and accelerations of those
 * bodies measured and expressed in A.
 *
 * Layout in the State (Instance stage, enabled constraints only, in the
 * order the constraints were added): qerr = all holonomic perr; uerr =
 * [pverr of the holonomic ones, verr of the nonholonomic ones]; udoterr =
 * [paerr, vaerr, aerr]; one multiplier per udoterr, in the same order. A
 * disabled constraint has no slots and no multipliers. */
#ifndef MBK_CONSTRAINTS_H
#define MBK_CONSTRAINTS_H

#include <stdbool.h>
#include "mbk/function.h"
#include "mbk/matter.h"

/* Declarations here are the public API: exported from the shared library, whose
   other symbols are hidden (CMakeLists.txt, "symbol visibility"). */
#if defined(__GNUC__)
#pragma GCC visibility push(default)
#endif
#ifdef __cplusplus
extern "C" {
#endif

typedef struct mbk_constraint_args mbk_constraint_args;

/* A custom constraint. Every callback returns 0 on success or a negative
   status. body_forces_A has one entry per constrained body (in the order
   given when the constraint was added), each (moment about the body origin,
   force) expressed in A; mobility_forces one per constrained mobility. The
   force callbacks ADD the forces that the multipliers produce: for the
   equations to be right they must be the transpose of the velocity-level
   equations (the power lambda . pverr(u) for any u). */
typedef struct mbk_constraint_ops {
    const char *name;  /* shown in messages */
    int mp, mv, ma;    /* holonomic, nonholonomic and acceleration-only equations */
    /* holonomic: perr(q), pverr = d/dt perr, paerr = d/dt pverr */
    int (*calc_perr)(void *impl, const mbk_constraint_args *a, double *perr);
    int (*calc_pverr)(void *impl, const mbk_constraint_args *a, double *pverr);
    int (*calc_paerr)(void *impl, const mbk_constraint_args *a, double *paerr);
    int (*apply_position_forces)(void *impl, const mbk_constraint_args *a, const double *lambda,
                                 mbk_spatial_vec *body_forces_A, double *mobility_forces);
    /* nonholonomic: verr(q, u), vaerr = d/dt verr */
    int (*calc_verr)(void *impl, const mbk_constraint_args *a, double *verr);
    int (*calc_vaerr)(void *impl, const mbk_constraint_args *a, double *vaerr);
    int (*apply_velocity_forces)(void *impl, const mbk_constraint_args *a, const double *lambda,
                                 mbk_spatial_vec *body_forces_A, double *mobility_forces);
    /* acceleration-only: aerr(q, u, udot) */
    int (*calc_aerr)(void *impl, const mbk_constraint_args *a, double *aerr);
    int (*apply_acceleration_forces)(void *impl, const mbk_constraint_args *a, const double *lambda,
                                     mbk_spatial_vec *body_forces_A, double *mobility_forces);
    /* free impl when the System is destroyed */
    void (*destroy)(void *impl);
} mbk_constraint_ops;

/* ---- adding constraints (before the topology is realized) ---- */
/* A custom constraint on n_bodies bodies (ops copied, impl owned); returns its index. */
int mbk_constraint_add_custom(mbk_matter *m, const mbk_constraint_ops *ops, void *impl,
                              const int *bodies, int n_bodies);
/* The same, also naming constrained mobilities: coordinate coords[k] of body mob_bodies[k]. */
int mbk_constraint_add_custom_with_mobilities(mbk_matter *m, const mbk_constraint_ops *ops,
                                              void *impl, const int *bodies, int n_bodies,
                                              const int *mob_bodies, const int *coords,
                                              int n_mobilities);

/* ---- the arguments handed to a constraint's callbacks ---- */
/* Time. */
double mbk_constraint_args_get_time(const mbk_constraint_args *a);
/* Pose of constrained body i in the ancestor frame A. */
mbk_transform mbk_constraint_get_body_transform(const mbk_constraint_args *a, int i);
/* Spatial velocity of constrained body i's origin measured and expressed in A. */
mbk_spatial_vec mbk_constraint_get_body_velocity(const mbk_constraint_args *a, int i);
/* Spatial acceleration of body i's origin measured in A (acceleration-level callbacks only). */
mbk_spatial_vec mbk_constraint_get_body_acceleration(const mbk_constraint_args *a, int i);
/* Location in A of a station (given in body i's frame). */
mbk_vec3 mbk_constraint_get_station_location(const mbk_constraint_args *a, int i, mbk_vec3 station);
/* Velocity in A of a station of body i. */
mbk_vec3 mbk_constraint_get_station_velocity(const mbk_constraint_args *a, int i, mbk_vec3 station);
/* Acceleration in A of a station of body i (acceleration-level callbacks only). */
mbk_vec3 mbk_constraint_get_station_acceleration(const mbk_constraint_args *a, int i, mbk_vec3 station);
/* q, qdot, qdotdot, u and udot of constrained mobility j (qdotdot, udot: acceleration level only). */
double mbk_constraint_get_q(const mbk_constraint_args *a, int j);
double mbk_constraint_get_qdot(const mbk_constraint_args *a, int j);
double mbk_constraint_get_qdotdot(const mbk_constraint_args *a, int j);
double mbk_constraint_get_u(const mbk_constraint_args *a, int j);
double mbk_constraint_get_udot(const mbk_constraint_args *a, int j);
/* Station of body i (in its frame) that is at location p_A right now (the material point there). */
mbk_vec3 mbk_constraint_find_station(const mbk_constraint_args *a, int i, mbk_vec3 p_A);
/* Angular velocity of body i measured and expressed in A. */
mbk_vec3 mbk_constraint_get_body_angular_velocity(const mbk_constraint_args *a, int i);
/* Add a force (in A) at a station of body i into body_forces_A. */
void mbk_constraint_add_station_force(const mbk_constraint_args *a, int i, mbk_vec3 station,
                                      mbk_vec3 force_A, mbk_spatial_vec *body_forces_A);
/* Add a torque (in A) on body i into body_forces_A. */
void mbk_constraint_add_body_torque(const mbk_constraint_args *a, int i, mbk_vec3 torque_A,
                                    mbk_spatial_vec *body_forces_A);
/* Add a generalized force on constrained mobility j. */
void mbk_constraint_add_mobility_force(const mbk_constraint_args *a, int j, double f,
                                       double *mobility_forces);

/* ---- built-in constraints (docs/constraints.md gives each one's equations) ---- */
/* Distance between station s1 on b1 and s2 on b2 held at length (> 0); 1 holonomic. */
int mbk_constraint_add_rod(mbk_matter *m, int b1, mbk_vec3 s1, int b2, mbk_vec3 s2, double length);
/* Station s1 on b1 and s2 on b2 coincide; 3 holonomic, multipliers a force in A. */
int mbk_constraint_add_ball(mbk_matter *m, int b1, mbk_vec3 s1, int b2, mbk_vec3 s2);
/* Frame F on b1 and frame M on b2 coincide: 3 orientation + 3 position equations. */
int mbk_constraint_add_weld(mbk_matter *m, int b1, const mbk_transform *X_B1F, int b2,
                            const mbk_transform *X_B2M);
/* A station of `follower` stays in the plane n . p = height fixed on plane_body (n, p in it). */
int mbk_constraint_add_point_in_plane(mbk_matter *m, int plane_body, mbk_vec3 normal, double height,
                                      int follower, mbk_vec3 station);
/* A station of `follower` stays on the line through `point` along `direction` on line_body. */
int mbk_constraint_add_point_on_line(mbk_matter *m, int line_body, mbk_vec3 direction, mbk_vec3 point,
                                     int follower, mbk_vec3 station);
/* The angle between an axis fixed on `base` and one fixed on `follower` stays `angle`. */
int mbk_constraint_add_constant_angle(mbk_matter *m, int base, mbk_vec3 base_axis, int follower,
                                      mbk_vec3 follower_axis, double angle);
/* Frame orientations R_B1F on b1 and R_B2M on b2 stay aligned (3 equations). */
int mbk_constraint_add_constant_orientation(mbk_matter *m, int b1, const mbk_mat33 *R_B1F, int b2,
                                            const mbk_mat33 *R_B2M);
/* u_index-th speed of body held at `speed` (nonholonomic). */
int mbk_constraint_add_constant_speed(mbk_matter *m, int body, int u_index, double speed);
/* u_index-th acceleration of body held at `acceleration` (acceleration-only). */
int mbk_constraint_add_constant_acceleration(mbk_matter *m, int body, int u_index, double acceleration);
/* The material points of b0 and b1 at `point` (fixed on case_body) have equal velocity along
   `direction` (fixed on case_body): rolling without slip in one direction (nonholonomic). */
int mbk_constraint_add_no_slip_1d(mbk_matter *m, int case_body, mbk_vec3 point, mbk_vec3 direction,
                                  int b0, int b1);
/* f(q_1..q_n) = 0 over coordinates q_within_body[i] of bodies[i] (holonomic); takes f
   (needs derivatives to order 2; destroyed with the System or when refused). The
   coordinates' qdot must be their u. */
int mbk_constraint_add_coordinate_coupler(mbk_matter *m, mbk_function f, const int *bodies,
                                          const int *q_within_body, int n);
/* f(u_1..u_n) = 0 over speeds u_within_body[i] of bodies[i] (nonholonomic); takes f. */
int mbk_constraint_add_speed_coupler(mbk_matter *m, mbk_function f, const int *bodies,
                                     const int *u_within_body, int n);
/* q = f(t) for one coordinate (holonomic, with f' and f''); takes f. qdot must be u. */
int mbk_constraint_add_prescribed_motion(mbk_matter *m, mbk_function f, int body, int q_within_body);

/* ---- per-State use ---- */
/* Number of constraints in the matter subsystem. */
int mbk_matter_get_num_constraints(const mbk_matter *m);
/* Enable or disable a constraint (Instance stage). */
int mbk_constraint_set_enabled(const mbk_matter *m, mbk_state *s, int constraint, bool on);
/* Whether a constraint is enabled in this State (false on error). */
bool mbk_constraint_is_enabled(const mbk_matter *m, const mbk_state *s, int constraint);
/* Numbers of holonomic, nonholonomic and acceleration-only equations of a constraint. */
int mbk_constraint_get_num_equations(const mbk_matter *m, int constraint, int *mp, int *mv, int *ma);
/* A constraint's multipliers (mp + mv + ma of them; Acceleration). */
int mbk_constraint_get_multipliers(const mbk_matter *m, const mbk_state *s, int constraint,
                                   double *lambda);
/* Forces the constraint applies: body_forces (one per body, Ground at 0, in G, moment about
   the body origin) and, if not NULL, mobility forces (nu), such that M udot = f + these
   (they are -G^T lambda split into body and mobility parts) (Acceleration). */
int mbk_constraint_calc_reaction_forces(const mbk_matter *m, const mbk_state *s, int constraint,
                                        mbk_spatial_vec *body_forces, double *mobility_forces);
/* Assembly: from a State at Instance or later, drive max|perr| below tol by Gauss-Newton
   with step halving; leaves the State at Position; on failure the State's q are unchanged. */
int mbk_system_assemble(const mbk_system *sys, mbk_state *s, double tol);
/* The same, keeping the q marked in locked_q (nq flags) fixed (a locked quaternion q locks
   its whole body). */
int mbk_system_assemble_locked(const mbk_system *sys, mbk_state *s, double tol, const bool *locked_q);
/* Project an integrator's local error estimate yerr (ny values, [q u z]) onto the tangent
   space of the constraint manifold, as Simbody does before its error test: the u part loses
   its least-squares (unweighted) component in the row space of [P; V] (du -= R^+ R du); the
   q part is mapped to speeds (du = N^+ dq), loses its component along P's rows, and is
   mapped back (dq -= N R^+ R N^+ dq), so P N^+ dq = 0 afterwards. z is untouched; without
   enabled constraints yerr is unchanged. Idempotent; no allocation (Velocity). */
int mbk_system_project_error_estimate(const mbk_system *sys, mbk_state *s, double *yerr);
/* ---- dense views, for users coupling their own integrators (Velocity) ---- */
/* The constraint matrix G (m x nu, row-major, rows in the udoterr order): the
   acceleration errors are G udot + bias. */
int mbk_matter_calc_G(const mbk_matter *m, const mbk_state *s, double *G);
/* f = G^T lambda (nu values) for m multipliers, in O(n + m). */
int mbk_matter_calc_G_transpose_times(const mbk_matter *m, const mbk_state *s, const double *lambda,
                                      double *f);
/* The acceleration errors at udot = 0 (m values): G udot + bias = udoterr. */
int mbk_matter_calc_constraint_bias(const mbk_matter *m, const mbk_state *s, double *bias);
/* Whether the last acceleration solve found redundant constraints (rank < m) (Acceleration). */
int mbk_matter_get_constraint_rank(const mbk_matter *m, const mbk_state *s, int *rank, int *m_total);

#ifdef __cplusplus
}
#endif
#if defined(__GNUC__)
#pragma GCC visibility pop
#endif
#endif
