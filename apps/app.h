/* The mbk program: shared declarations of its parts.
 *
 *   mbk.c            command line, help, the run/info/bench commands
 *   app_models.c     models: built-ins and URDF files
 *   app_integrate.c  the library's integrators, by name
 *   app_output.c     trajectory CSV and SVG plot
 *   app_info.c       `mbk info` and `mbk bench`
 */
#ifndef MBK_APP_H
#define MBK_APP_H

#include <stdbool.h>
#include <stdio.h>

#include <mbk/mbk.h>

/* Exit codes: 0 success, 1 failure (a model that cannot be loaded, a simulation
   or file error), 2 bad usage (unknown command or option, bad value). */
enum { APP_OK = 0, APP_FAIL = 1, APP_USAGE = 2 };

#define APP_NAME_MAX 128

/* ---- models (app_models.c) ---- */
typedef struct app_model {
    mbk_system *sys;
    char spec[512];            /* what the user asked for: "builtin:chain:5", a path */
    char title[256];           /* one line: "5-link 3-D pendulum (pins about y and z)" */
    bool urdf;                 /* built from a URDF file */
    int n_bodies;              /* with Ground */
    char (*joint_name)[APP_NAME_MAX]; /* per body ("" for Ground) */
    char (*joint_type)[32];           /* per body: "pin", "ball", "revolute", ... */
    char (*body_name)[APP_NAME_MAX];  /* per body */
    int gravity_force;         /* index of the gravity element, or -1 */
    bool dissipative;          /* dampers or stops: energy need not be conserved */
    /* default initial state: called on a State realized to Model */
    int (*init_state)(const struct app_model *m, mbk_state *s);
    int crank_body;            /* four-bar: the body kept fixed while assembling */
} app_model;

/* Options that change how a model is built. */
typedef struct app_model_options {
    bool floating_base;        /* URDF: mount the root link on a Free mobilizer */
    bool no_limits;            /* URDF: no joint-limit stops */
    bool no_damping;           /* URDF: no joint dampers */
} app_model_options;

/* Load a model by name (NULL: the default, builtin:chain:5); prints the reason
   on stderr and returns APP_USAGE for a bad name, APP_FAIL when it cannot be
   loaded, APP_OK on success. */
int app_model_load(const char *spec, const app_model_options *o, app_model *m);
void app_model_free(app_model *m);
/* One line per built-in, for --help. */
void app_model_list_builtins(FILE *f);
/* A fresh State with the model's default initial conditions (realized to Model
   at least, assembled when the model has constraints). NULL on failure
   (message printed). */
mbk_state *app_model_initial_state(const app_model *m);
/* Index in q of a joint's first coordinate, its count in *nq; -1 if unknown. */
int app_model_find_joint_q(const app_model *m, const mbk_state *s, const char *joint, int *nq);

/* ---- integration (app_integrate.c) ---- */
typedef struct app_stats {
    char integrator[64];
    long steps, attempts, rejected, rhs, projections, convergence_failures, events;
    bool integrated;           /* an integrator ran (false when the model had nothing to integrate) */
} app_stats;

typedef struct app_integrator app_integrator;
/* The integrator `mbk run` uses unless told: rkmerson. */
const char *app_integrator_default(void);
/* Names accepted by --integrator, one line for --help. */
const char *app_integrator_names(void);
/* Whether a name is known (accepted by --integrator). */
bool app_integrator_known(const char *name);
/* Create, set accuracy (and fixed step when step > 0) and initialize from s0. */
app_integrator *app_integrator_start(const mbk_system *sys, const char *name, double accuracy,
                                     double step, const mbk_state *s0);
/* Advance to t; the current State is then app_integrator_state(). <0 on failure
   (mbk_last_error() says why). */
int app_integrator_step_to(app_integrator *ig, double t);
const mbk_state *app_integrator_state(const app_integrator *ig);
void app_integrator_stats(const app_integrator *ig, app_stats *st);
void app_integrator_free(app_integrator *ig);

/* ---- outputs (app_output.c) ---- */
typedef struct app_series {
    int nq, nu;
    long n, cap;               /* samples */
    double *t, *q, *u, *ke, *pe; /* q: n x nq, u: n x nu */
} app_series;

int app_series_add(app_series *ser, double t, const double *q, const double *u, double ke, double pe);
void app_series_free(app_series *ser);
/* CSV: t,q0..,u0..,energy (and kinetic,potential). 0 or -1 (errno set). */
int app_write_csv(const char *path, const app_series *ser);
/* SVG: coordinates and energy against time. 0 or -1 (errno set). */
int app_write_svg(const char *path, const app_series *ser, const char *title);
/* Create the parent directory of a path (one level) if missing. */
void app_make_parent_dir(const char *path);

/* ---- info and bench (app_info.c) ---- */
int app_info(const app_model *m, bool all);
int app_bench(const app_model *m, double seconds_per_test);

/* ---- sweep (app_sweep.c): `mbk sweep`, arguments after the command ---- */
int app_sweep_main(int argc, char **argv);

/* ---- helpers ---- */
double app_now(void);          /* monotonic wall time in seconds */
int app_fail(const char *what); /* prints mbk_last_error(); returns APP_FAIL */

#endif
