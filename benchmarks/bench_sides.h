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
    OP_FULL = 0, /* set q and u, realize to Acceleration */
    OP_UONLY,    /* set u, realize to Acceleration (position work cached) */
    OP_RNEA,     /* residual force (inverse dynamics) at a realized state */
    OP_MASS,     /* explicit nu x nu mass matrix */
    OP_MINV,     /* M^-1 v */
    NUM_OPS
} bench_op;

/* Results of one evaluation at the inputs, in mbk's order. Any pointer may be NULL. */
typedef struct bench_out {
    double *udot;     /* nu: forward dynamics with gravity */
    double *residual; /* nu: M known_udot + C - gravity forces */
    double *M;        /* nu*nu, row-major */
    double *minv_v;   /* nu */
} bench_out;

/* ---- mbk ---- */
typedef struct mb_side mb_side;
mb_side *mb_create(const bm_model *model);
void mb_destroy(mb_side *s);
/* Load the inputs (copied) and realize to Acceleration; 0 or a negative status. */
int mb_set_inputs(mb_side *s, const double *q, const double *u, const double *v,
                  const double *known_udot);
int mb_eval(mb_side *s, bench_out *out);
/* Prepare the state for an op (realized as the op needs); 0 on success. */
int mb_prepare(mb_side *s, bench_op op);
/* Run the op reps times; 0 on success, else the first failing status. */
int mb_run(mb_side *s, bench_op op, long reps);
/* Self-consistency without Simbody: max |residual(known_udot = udot)| relative to
   max(1, max |residual(known_udot = 0)|); should be at rounding level. */
int mb_self_check(mb_side *s, double *rel);
long mb_allocation_count(void);
const char *mb_last_error(void);

/* ---- Simbody ---- */
typedef struct sb_side sb_side;
sb_side *sb_create(const bm_model *model);
void sb_destroy(sb_side *s);
int sb_set_inputs(sb_side *s, const double *q, const double *u, const double *v,
                  const double *known_udot);
int sb_eval(sb_side *s, bench_out *out);
int sb_prepare(sb_side *s, bench_op op);
int sb_run(sb_side *s, bench_op op, long reps);
const char *sb_last_error(void);
/* "3.7" etc. */
const char *sb_version(void);

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

/* ---- MuJoCo (mj_forward: full cycle only) ---- */
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

#ifdef __cplusplus
}
#endif
#endif
