/* bench_sides.h - the two sides of the benchmark behind one plain-C interface.
 *
 * Each side builds its system from a bm_model, takes inputs in mbk's body
 * order (q, u, a vector v for M^-1 v and a known udot for inverse dynamics),
 * and runs `reps` repetitions of one operation in a tight loop inside its own
 * translation unit, so that the driver only times whole batches. */
#ifndef MBK_BENCH_SIDES_H
#define MBK_BENCH_SIDES_H

#include <stddef.h>

#include "bench_model.h"

#ifdef __cplusplus
extern "C" {
#endif

typedef enum bench_op {
    OP_FULL = 0,    /* set q and u, realize to Acceleration */
    OP_UONLY,       /* set u, realize to Acceleration (position work cached) */
    OP_POSITION,    /* set q, realize to Position */
    OP_RNEA_KIN,    /* set q and u, realize to Velocity, residual force (RNEA with kinematics) */
    OP_RNEA,        /* residual force at a state realized to Acceleration (kinematics cached) */
    OP_MASS,        /* explicit nu x nu mass matrix */
    OP_MINV,        /* M^-1 v */
    OP_CONSTRAINED, /* constrained forward dynamics: set q and u, realize to Acceleration
                       (udot and multipliers); models with constraints only */
    OP_STEP,        /* one fixed RK-Merson step of BENCH_STEP_H (see below) */
    OP_ID,          /* inverse dynamics with gravity from scratch: set q and u, realize to Dynamics,
                       residual force with the System's applied forces (Pinocchio: rnea) */
    OP_MASS_KIN,    /* mass matrix from scratch: set q, realize to Position, explicit M
                       (Pinocchio: crba, which computes its kinematics from q) */
    OP_ABA_DERIV,   /* forward-dynamics derivatives from scratch: set q and u,
                       mbk_system_calc_acceleration_derivatives (dudot/dq nu x nq and dudot/du nu x nu;
                       Pinocchio: computeABADerivatives(q, v, 0)) */
    OP_RNEA_DERIV,  /* inverse-dynamics derivatives from scratch: set q and u,
                       mbk_system_calc_residual_derivatives at the known udot (dr/dq, dr/du;
                       Pinocchio: computeRNEADerivatives(q, v, a)) */
    OP_JAC_FD,      /* set q and u, mbk_system_calc_ydot_jacobian_fd (ny x ny; mbk only) */
    OP_JAC,         /* set q and u, mbk_system_calc_ydot_jacobian, analytic (ny x ny; mbk only) */
    NUM_OPS
} bench_op;

/* OP_STEP: the same method on both sides, RK-Merson (mbk_integrator_create_rkmerson,
   SimTK::RungeKuttaMersonIntegrator) with a fixed step of BENCH_STEP_H s (error estimate
   unused), projection after every step with constraint tolerance BENCH_STEP_CONS_TOL. One call
   is one step_to(t + h) / stepTo(t + h); every BENCH_STEP_RESET steps (and at prepare) the
   integrator is initialized again from the benchmark state, so the trajectory stays short and
   identical on both sides (the reset is amortized over the steps). The cost of a fixed step does
   not depend on h; h = 0.1 ms keeps 200 steps from the random states finite on every model
   (chain1000 from its random state blows up after 0.126 s at h = 1 ms, in Simbody as in mbk;
   chain10000, mbk only, at h = 0.1 ms after 400 steps). */
#define BENCH_STEP_H 1e-4
#define BENCH_STEP_CONS_TOL 1e-10
enum { BENCH_STEP_RESET = 200 };

/* ---- mbk ---- */
typedef struct mb_side mb_side;
mb_side *mb_create(const bm_model *model);
void mb_destroy(mb_side *s);
/* Load the inputs (copied) and realize to Acceleration; 0 or a negative status. v is for
   M^-1 v, known_udot for inverse dynamics (whose applied forces are the body forces at the
   inputs: gravity, and contact where the model has it). */
int mb_set_inputs(mb_side *s, const double *q, const double *u, const double *v,
                  const double *known_udot);
/* Put q (assembly, tolerance tol) and then u (projection) on the model's constraints, in
   place; a no-op without constraints. 0 or a negative status. */
int mb_make_consistent(mb_side *s, double *q, double *u, double tol);
/* Length of an op's result (see mb_eval); negative if the op does not apply to the model. */
int mb_result_len(mb_side *s, bench_op op);
/* Prepare the op, run it once and copy its result out (mbk's order):
     full, u-only:     udot (nu)
     position:         X_GB of bodies 1..n (12 each: R row-major, then p)
     rnea_kin, rnea:   residual (nu)
     mass matrix:      M (nu x nu, row-major)
     M^-1 v:           nu
     constrained:      udot (nu), then the multipliers (Simbody's sign and order)
     step:             q (nq), then u (nu) after one step from the inputs
     aba / rnea derivs: d/dq (nu x nq, row-major), then d/du (nu x nu)
     ydot Jacobians:   J (ny x ny, row-major) */
int mb_eval(mb_side *s, bench_op op, double *out);
/* Prepare the state for an op (realized as the op needs); 0 on success. */
int mb_prepare(mb_side *s, bench_op op);
/* Run the op reps times; 0 on success, else the first failing status. */
int mb_run(mb_side *s, bench_op op, long reps);
/* Self-consistency without Simbody: max |residual(known_udot = udot) + G^T lambda| relative to
   max(1, max |residual(known_udot = 0)|); should be at rounding level. */
int mb_self_check(mb_side *s, double *rel);
/* At the inputs: constraint equations m, rank of the acceleration solve, max |qerr|, max |uerr|. */
int mb_constraint_info(mb_side *s, int *m, int *rank, double *perr, double *verr);
/* At the inputs: penetration depth of each contact sphere (> 0: touching). */
int mb_sphere_depths(mb_side *s, double *depth);
long mb_allocation_count(void);
const char *mb_last_error(void);

/* ---- Simbody ---- */
typedef struct sb_side sb_side;
sb_side *sb_create(const bm_model *model);
void sb_destroy(sb_side *s);
int sb_set_inputs(sb_side *s, const double *q, const double *u, const double *v,
                  const double *known_udot);
int sb_result_len(sb_side *s, bench_op op);
int sb_eval(sb_side *s, bench_op op, double *out);
int sb_prepare(sb_side *s, bench_op op);
int sb_run(sb_side *s, bench_op op, long reps);
/* Simbody's own max |qerr| and |uerr| at the inputs (assembled state: ~0). */
int sb_constraint_errors(sb_side *s, double *perr, double *verr);
const char *sb_last_error(void);
/* "3.7" etc. */
const char *sb_version(void);

/* ---- Pinocchio (aba, rnea, crba) ----
   C++ from the headers of the PyPI wheels (libpinocchio, cmeel-eigen, cmeel-boost), its templates
   instantiated with the benchmark's own flags; built only when configured with
   MBK_PINOCCHIO_PREFIX (make bench installs the wheels into a virtual environment). Inputs and
   results in mbk's order and conventions; the free base is mapped (bench_pinocchio.cpp). Ops:
   OP_FULL = aba(q, v, 0), OP_ID = rnea(q, v, udot), OP_MASS_KIN = crba(q) (upper triangle, as
   Pinocchio fills it; the result is mirrored for the cross-check), OP_ABA_DERIV =
   computeABADerivatives(q, v, 0), OP_RNEA_DERIV = computeRNEADerivatives(q, v, udot). */
typedef struct pin_side pin_side;
int pin_available(void);
const char *pin_version(void);
pin_side *pin_create(const bm_model *model);
void pin_destroy(pin_side *s);
int pin_set_inputs(pin_side *s, const double *q, const double *u, const double *known_udot);
/* The most u Pinocchio is run with: its Data allocates and zeroes four nu^3 tensors (second-order
   RNEA derivatives) whatever is computed, 32 GB at nu = 1000. */
int pin_max_nu(void);
/* Whether Pinocchio runs an op (OP_FULL, OP_ID, OP_MASS_KIN, OP_ABA_DERIV, OP_RNEA_DERIV). */
int pin_has_op(bench_op op);
/* Whether Pinocchio runs an op on a model of nu u: its derivatives only up to 400 u (at chain1000
   its computeABADerivatives and mbk's differ by 9e-9 relative, the round-off M^-1 amplifies on a
   1000-link chain, above the cross-check's 1e-9; and its dense O(nu^3) product takes seconds). */
int pin_runs_op(bench_op op, int nu);
/* Run the op once and copy its result out in mbk's order and conventions (as mb_eval). */
int pin_eval(pin_side *s, bench_op op, double *out);
/* Where pin_eval's result starts to be comparable with mbk's: 0, or for the derivatives of a
   model with a free base nu * nq (the q-columns are left out: Pinocchio differentiates along a
   tangent displacement of the configuration, mbk along the raw quaternion coordinates; the
   u-columns are mapped through the velocity map and compared). */
int pin_compare_from(const pin_side *s, bench_op op);
int pin_run(pin_side *s, bench_op op, long reps);
const char *pin_last_error(void);

/* ---- whole runs (integration) ---- */
typedef struct run_result {
    double wall_s;   /* wall time of the integration (initialize + step to t_final) */
    long steps;      /* accepted steps */
    double e0, e1;   /* total energy at t = 0 and t_final */
    double drift;    /* |e1 - e0| / |e0| */
    double allocs_per_step; /* mbk heap allocations per step (mbk only) */
} run_result;
enum { RUN_RKMERSON = 0, RUN_CVODE_BDF, RUN_CVODE_ADAMS, NUM_RUN_KINDS };
/* Integrate the model from (q, u) at t = 0 to t_final with the given accuracy. */
int mb_integrate(const bm_model *model, const double *q, const double *u, int kind, double accuracy,
                 double t_final, run_result *out);
/* Simbody RungeKuttaMersonIntegrator + TimeStepper. */
int sb_integrate(const bm_model *model, const double *q, const double *u, double accuracy,
                 double t_final, run_result *out);

/* ---- mbk State copy ---- */
size_t mb_state_bytes(const mb_side *s);
int mb_run_state_copy(mb_side *s, long reps); /* mbk_state_copy(dst, src) */
int mb_run_memcpy(mb_side *s, long reps);     /* memcpy of mb_state_bytes() bytes */

/* ---- MuJoCo (mj_forward: full cycle only) ----
   bench_mujoco.c defines these in each MuJoCo module; the driver's bench_mjload.c defines them
   too, forwarding to Debian's module. */
typedef struct mjb_side mjb_side;
int mjb_available(void); /* 0 when built without MuJoCo */
mjb_side *mjb_create(const bm_model *model);
void mjb_destroy(mjb_side *s);
/* Load q, u (mbk's order and conventions) and run mj_forward once. */
int mjb_set_inputs(mjb_side *s, const double *q, const double *u);
/* udot in mbk's order and conventions (mj_forward at the inputs). */
int mjb_udot(mjb_side *s, double *udot);
/* reps x (copy qpos, qvel into mjData; mj_forward). */
int mjb_run_full(mjb_side *s, long reps);
const char *mjb_last_error(void);
const char *mjb_version(void);
/* The same for MuJoCo from PyPI (mujoco-core), loaded beside Debian's (bench_mjload.c). */
int mj4b_available(void);
const char *mj4b_version(void);
mjb_side *mj4b_create(const bm_model *model);
void mj4b_destroy(mjb_side *s);
int mj4b_set_inputs(mjb_side *s, const double *q, const double *u);
int mj4b_udot(mjb_side *s, double *udot);
int mj4b_run_full(mjb_side *s, long reps);
const char *mj4b_last_error(void);

#ifdef __cplusplus
}
#endif
#endif
