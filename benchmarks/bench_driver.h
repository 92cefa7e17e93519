/* bench_driver.h - what the files of the benchmark driver share: the constants and
 * tables (operations, whole runs), the figures of a model and of a run, the options,
 * the timing of a model's operations, and the functions each file offers the others.
 *
 *   bench_main.c       options, the list of models, the rounds over them, the outputs
 *   bench_timing.c     timing: batches, interleaving, a model's ops taking turns, statistics
 *   bench_ops.c        the operation table and the cross-check against Simbody
 *   bench_model_run.c  one model: build and check its sides, time its ops, close
 *   bench_runs.c       whole runs (chain10, 10 s) and the drift search
 *   bench_report.c     the Markdown report
 *   bench_targets.c    the targets of issue 7 and the ANCHORS.md figures
 *   bench_svg.c        the SVG plot
 *   bench_csv.c        the CSV */
#ifndef MBK_BENCH_DRIVER_H
#define MBK_BENCH_DRIVER_H

#include <stdio.h>

#include "bench_sides.h"

/* The mass matrix is timed up to this nu; results must agree with Simbody's to TOL. */
enum { MASS_MATRIX_MAX_NU = 1000 };
/* The derivatives (dense nu x nq, nu x nu outputs) are timed up to this nu, the
   finite-difference ydot Jacobian (nq + nu realizations per call) up to FD_JACOBIAN_MAX_NU. */
enum { DERIV_MAX_NU = 1000, FD_JACOBIAN_MAX_NU = 1000 };
/* mbk's analytic derivatives against its own finite-difference Jacobian (forward differences,
   about 1e-8 accurate: a sanity check, not an oracle). */
static const double DERIV_FD_TOL = 1e-5;
static const double TOL = 1e-9;
static const double ASSEMBLY_TOL = 1e-12;   /* mbk assembly and projection of the loop models */
static const double CONSISTENT_TOL = 1e-10; /* Simbody's own constraint errors at that state */
static const double DRIFT_TARGET = 5.5e-7;  /* issue 7: chain10 10 s run at this energy drift */

/* Which models an operation runs on. */
enum { MK_PLAIN = 1, MK_CONSTRAINED = 2, MK_CONTACT = 4, MK_ALL = 7 };

/* One operation: its names and what its cross-check compares. */
typedef struct op_info {
    const char *name;      /* CSV */
    const char *title;     /* Markdown section */
    const char *part[2];   /* what the cross-check compares (two parts: compared separately) */
    unsigned models;       /* MK_* */
    int no_simbody;        /* Simbody has no such operation (the derivatives): mbk and Pinocchio only */
} op_info;
/* The operations, indexed by bench_op (bench_ops.c). */
extern const op_info OPS[NUM_OPS];

/* A model of the run: what to build (bench_model_run.c) and whether Simbody runs it. */
typedef struct model_spec {
    const char *kind; /* "chain", "tree", "humanoid", "fourbar", "chainloop", "humanoid_contact" */
    int param;
    int mbk_only;
} model_spec;

/* ANCHORS.md full-cycle figures (us): Simbody 3.7 apt build, Simbody release, Pinocchio aba. */
typedef struct anchor {
    const char *model;
    double sb_apt, sb_rel, pin;
    int pin_estimated; /* Pinocchio figure from the ~310 ns/body long-chain rate */
} anchor;

/* The batches of one side of one operation: repetitions and time per call. */
typedef struct bstat {
    int valid;
    long reps;       /* per batch */
    int batches;
    double med, min; /* us per call */
} bstat;

/* Everything measured on one model. */
typedef struct result {
    char name[32];
    int bodies, nq, nu, mbk_only;
    unsigned kind;          /* MK_PLAIN, MK_CONSTRAINED or MK_CONTACT */
    int chain;              /* a plain chainN (the per-body targets and the plot) */
    double err[NUM_OPS];    /* cross-check vs Simbody: first part of the result (NaN: not checked) */
    double err2[NUM_OPS];   /* second part (multipliers, u), NaN if none */
    double self_check;
    bstat mb[NUM_OPS], sb[NUM_OPS];
    bstat pn[NUM_OPS];      /* Pinocchio (OP_FULL: aba, OP_ID: rnea, OP_MASS_KIN: crba) */
    double err_pin[NUM_OPS];/* Pinocchio's result vs mbk's (NaN: not run) */
    int pin_u_only[NUM_OPS];/* only the u-columns compared (derivatives with a free base) */
    double err_fd_aba;      /* mbk's dudot/dq, dudot/du vs the u rows of its FD ydot Jacobian (NaN: not run) */
    double err_fd_jac;      /* mbk's analytic ydot Jacobian vs its FD one (NaN: not run) */
    int has_pin;            /* Pinocchio side ran */
    int pin_skipped;        /* too many u for Pinocchio's Data (pin_max_nu) */
    bstat df[NUM_OPS];      /* mbk's default build (RelWithDebInfo), when loaded (--default-side) */
    double err_df[NUM_OPS]; /* its result vs this build's mbk */
    double allocs[NUM_OPS]; /* mbk heap allocations per call */
    int has_mj;             /* MuJoCo side ran (full cycle) */
    double err_mj;          /* MuJoCo udot vs mbk */
    int mj_excluded;        /* checked, off by more than 1e-9 (dense factorization), not timed */
    bstat mj;               /* mj_forward */
    int has_mj4;            /* MuJoCo from PyPI: the same as has_mj, err_mj, mj_excluded, mj */
    double err_mj4;
    int mj4_excluded;
    bstat mj4;
    size_t state_bytes;     /* mbk State */
    bstat copy, mcpy;       /* mbk_state_copy, memcpy of state_bytes */
    int n_eq, rank;         /* constraint equations and rank of the acceleration solve */
    double mb_perr, mb_verr, sb_perr, sb_verr; /* constraint errors at the benchmark state */
    int n_spheres;
    double depth[BM_MAX_SPHERES]; /* contact penetration at the benchmark state */
} result;

/* Whole runs (chain10, 10 s): at accuracy 1e-6, and at matched drift (accuracy halved from
   1e-6 until the drift is <= DRIFT_TARGET, for each library on its own). */
enum { RUN_MB_RKM, RUN_MB_BDF, RUN_MB_ADAMS, RUN_SB_RKM, RUN_MB_RKM_MATCHED, RUN_SB_RKM_MATCHED, NUM_RUNS };
typedef struct run_def {
    const char *title, *csv_op, *library;
    int simbody;  /* Simbody RK-Merson, else mbk's integrator `kind` */
    int kind;     /* RUN_RKMERSON, RUN_CVODE_BDF, RUN_CVODE_ADAMS */
    int matched;  /* accuracy from the drift search */
    int peer;     /* the Simbody run it is compared with */
} run_def;
/* The whole runs, indexed by RUN_* (bench_runs.c). */
extern const run_def RUNS[NUM_RUNS];
/* What one whole run measured. */
typedef struct run_stat {
    int valid, reps;
    double accuracy;
    int searched;        /* matched runs: accuracies tried */
    int reached;         /* drift <= DRIFT_TARGET */
    run_result r;        /* steps and drift are deterministic */
    double wall_med, wall_min;
} run_stat;
/* The whole runs' figures (bench_runs.c). */
extern run_stat g_runs[NUM_RUNS];
/* Whole runs: simulated time (s), accuracy, and the most halvings of the drift search. */
static const double RUN_T = 10.0, RUN_ACC = 1e-6;
enum { MAX_HALVINGS = 12 };
/* --quick (bench_main.c). */
extern int g_quick;

/* Options (bench_main.c parses them). */
typedef struct bench_options {
    int batches;
    double batch_s;
    double cap_s; /* wall budget per (model, op), both libraries */
    const char *md, *csv, *only;
    const char *default_side; /* --default-side: the default build's module */
    const char *prev_csv;     /* --prev-csv: the previous results.csv, for ratios */
    const char *dump_dir;     /* --dump-models: write the plain models for bench_drake.py, then stop */
    const char *drake_csv;    /* --drake-csv: bench_drake.py's results */
} bench_options;
extern bench_options g_opt;

/* How one side runs `reps` repetitions of an op (bench_timing.c has one per side). */
typedef int (*run_fn)(void *side, bench_op op, long reps);

/* Sides of a timing: mbk, Simbody, MuJoCo (Debian's, PyPI's), Pinocchio, mbk's default build. */
enum { SIDE_MB = 0, SIDE_SB, SIDE_MJ, SIDE_MJ4, SIDE_PIN, SIDE_DF, NSIDES };

/* The timing of up to NSIDES sides of one operation, in three phases (start: warm up and
   size the batches; one batch of every side; finish: summaries), so that the operations of
   a model can take turns batch by batch and a noisy spell of the machine lands on a few
   batches of each instead of on all batches of one. */
typedef struct timing {
    int k;               /* sides (2..NSIDES); a NULL side is skipped */
    run_fn run[NSIDES];  /* how each side runs the op */
    void *side[NSIDES];  /* the sides */
    const char *who[NSIDES]; /* names for messages */
    bstat *out[NSIDES];  /* where the summaries go */
    double *allocs;      /* mbk's (side 0) heap allocations per call, or NULL */
    bench_op op;         /* the operation */
    long reps[NSIDES];   /* repetitions per batch */
    int active[NSIDES], na; /* the non-NULL sides */
    int batches;         /* batches per side */
    double *t[NSIDES];   /* time per call of each batch */
    long nalloc;         /* allocations counted so far */
} timing;

/* One model being timed: its sides and the timing of every operation that applies to it,
   kept open across the rounds of the run. */
typedef struct model_run {
    result *res;                  /* where its figures go */
    bm_model model;               /* the model */
    mb_side *mb;                  /* the sides (sb, mj may be NULL) */
    sb_side *sb;
    mjb_side *mj, *mj4;           /* MuJoCo: Debian's, PyPI's */
    pin_side *pn;
    void *df;                     /* mbk default build's side (bench_default.c), or NULL */
    double *q, *u, *v, *kud;      /* the inputs */
    timing tm[NUM_OPS];           /* one timing per operation that applies */
    int nt;                       /* how many */
    int most;                     /* the most batches of any of them */
    char names[NUM_OPS][NSIDES][64]; /* names for messages */
} model_run;

/* ---- bench_main.c ---- */
/* Print "mbk_bench: " and the message to stderr and exit(1). */
_Noreturn void bench_die(const char *fmt, ...);
/* calloc of n + 1 elements (never NULL: dies when out of memory). */
void *bench_xcalloc(size_t n, size_t size);

/* ---- bench_timing.c ---- */
/* Monotonic clock, seconds. */
double bench_now(void);
/* qsort comparison of doubles, ascending. */
int bench_cmp_double(const void *a, const void *b);
/* Median of n sorted values. */
double bench_median_sorted(const double *x, int n);
/* Warm up every operation that applies (mbk and Simbody, and MuJoCo on the full cycle)
   and size its batches. */
void bench_ops_start(model_run *mr);
/* Batches b0..b1-1 of every operation, the operations taking turns batch by batch. */
void bench_ops_batches(model_run *mr, int b0, int b1);
/* Summaries of every operation of a model, printed. */
void bench_ops_finish(model_run *mr);
/* Time mbk_state_copy against memcpy of the same bytes on a model. */
void bench_state_copy(result *res, mb_side *mb);

/* ---- bench_default.c: mbk's default build as a fifth side ---- */
int bench_default_load(const char *path); /* dies on failure */
int bench_default_loaded(void);
const char *bench_default_flags(void);
const char *bench_default_last_error(void);
/* A side of the default build at the inputs, or NULL when none is loaded. */
void *bench_default_create(const bm_model *model, const double *q, const double *u, const double *v,
                           const double *kud);
void bench_default_destroy(void *s);
int bench_default_prepare(void *s, bench_op op);
int bench_default_run(void *s, bench_op op, long reps);
int bench_default_eval(void *s, bench_op op, double *out);

/* ---- bench_drake.c: Drake through pydrake (bench_drake.py) ---- */
void bench_drake_dump(const char *dir, const bm_model *m, mb_side *mb, const double *q, const double *u,
                      const double *kud);
void bench_drake_load(const char *path);
const char *bench_drake_version(void); /* "?" when not loaded */
/* Drake's figure (overhead subtracted, µs) and difference from mbk for a model and op ("fd", "id",
   "mass"); 0 if none. */
int bench_drake_get(const char *model, const char *op, double *us, double *diff);
void bench_write_drake(FILE *f, const result *rs, int n);

/* ---- bench_prev.c: the previous results.csv ---- */
void bench_prev_load(const char *path);
int bench_prev_loaded(void);
/* The previous run's median (µs) of a (model, op, library) row, or NaN. */
double bench_prev_median(const char *model, const char *op, const char *library);

/* ---- bench_ops.c ---- */
/* Relative difference: max |a - b| / max(max |b|, tiny). NaN counts as infinite. */
double bench_rel_diff(const double *a, const double *b, size_t n);
/* Whether an op runs on a model (its kind; the mass matrix up to MASS_MATRIX_MAX_NU). */
int bench_op_applies(const result *res, bench_op op);
/* Prepare both sides for an op (before each of its batches when ops take turns). */
void bench_prepare_op(const result *res, mb_side *mb, sb_side *sb, bench_op op);
/* Run the op once on each side at the benchmark state and stop the run unless the results
   agree to TOL relative (each part on its own). */
void bench_cross_check(result *res, mb_side *mb, sb_side *sb, bench_op op);

/* ---- bench_model_run.c ---- */
/* The benchmark inputs of a model (q, u, v, known udot; bench_model_run.c). */
void bench_model_inputs(const bm_model *model, double *q, double *u, double *v, double *kud);
/* Build the model a spec names; 0 or negative when out of memory. */
int bench_build_model(bm_model *m, const model_spec *sp);
/* Build a model's sides, cross-check every operation, and warm up and size its timings. */
void bench_model_open(const model_spec *sp, result *res, model_run *mr);
/* Summaries, the State copy, and the sides freed. */
void bench_model_close(model_run *mr);

/* ---- bench_runs.c ---- */
/* Whole runs: chain10 for RUN_T s, every run kind, repetitions interleaved (into g_runs). */
void bench_run_whole(void);

/* ---- bench_targets.c ---- */
/* ANCHORS.md's figures for a model, or NULL. */
const anchor *bench_find_anchor(const char *name);
/* Every timed mbk operation and every whole run allocated nothing. */
int bench_allocations_ok(const result *rs, int n);
/* The targets of issue 7, each met or not, from this run's figures (Markdown). */
void bench_write_targets(FILE *f, const result *rs, int n);

/* ---- bench_report_peers.c ---- */
void bench_write_pinocchio(FILE *f, const result *rs, int n);
void bench_write_default_build(FILE *f, const result *rs, int n);
void bench_write_previous(FILE *f, const result *rs, int n);
/* Issue 19's goals against RBDL, on ANCHORS.md's figures (RBDL is not built here). */
void bench_write_rbdl(FILE *f, const result *rs, int n);
/* Cost per body of each operation against the core's FMA rate at ghz. */
void bench_write_limits(FILE *f, const result *rs, int n, double ghz);

/* ---- bench_report_deriv.c ---- */
/* The derivatives: mbk's against its full cycle and its FD Jacobian, and against Pinocchio. */
void bench_write_derivatives(FILE *f, const result *rs, int n);

/* ---- bench_report.c, bench_svg.c, bench_csv.c ---- */
/* The Markdown report; wall is the whole run's time in seconds. */
void bench_write_report(FILE *f, const result *rs, int n, double wall);
/* SVG plot: full-cycle ns per body against bodies on chainN, log-log, every library. */
void bench_write_svg(const char *path, const result *rs, int n);
/* The CSV: one row per model, operation and library; whole runs; State copies. */
void bench_write_csv(FILE *f, const result *rs, int n);

#endif
