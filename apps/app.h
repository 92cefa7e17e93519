/* The mbk program: shared declarations of its parts.
 *
 *   mbk.c            command line, help, the run/info/bench commands
 *   app_models.c     models: built-ins and URDF files
 *   app_integrate.c  the library's integrators, by name
 *   app_output.c     trajectory CSV and SVG plot
 *   app_checkpoint.c checkpoints of a run (--checkpoint, --resume)
 *   app_info.c       `mbk info` and `mbk bench`
 *   app_html.c       the trajectory viewer page (`mbk run --html`, `mbk view`)
 *   app_visual.c     the bodies' shapes for it (URDF <visual>, boxes from mass properties)
 */
#ifndef MBK_APP_H
#define MBK_APP_H

#include <stdbool.h>
#include <stdio.h>

#include <mbk/mbk.h>

/* Exit codes, as docs/cli.md documents them. When several things go wrong, the
   code is that of the first (a run that fails and then cannot write its outputs
   exits with APP_FAILED). */
enum {
    APP_OK = 0,     /* success */
    APP_FAILED = 1, /* the simulation, or the computation info or bench asked for, failed
                       (integrator failure, initial State that cannot be set up or
                       assembled, out of memory while running) */
    APP_USAGE = 2,  /* bad usage: unknown command or option, bad or missing value, a value
                       that does not fit the model (--q0 count, unknown joint) */
    APP_MODEL = 3,  /* the model could not be loaded or built (missing or unreadable file,
                       not a regular file, too large, malformed or unsupported URDF) */
    APP_OUTPUT = 4  /* an output could not be written (--output, --plot, standard output) */
};

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
    bool dissipative;          /* dampers, stops or contact: energy need not be conserved */
    /* default initial state: called on a State realized to Model */
    int (*init_state)(const struct app_model *m, mbk_state *s);
    int crank_body;            /* four-bar: the body kept fixed while assembling */
    bool floating_ignored;     /* URDF: --floating-base on a robot rooted at world (no effect) */
    /* constraint connections the viewer draws as lines (NULL/0: none) */
    const struct app_connection *connections;
    int n_connections;
} app_model;

/* A line the viewer draws between a point of body b1 and one of body b2 (a loop
   closed by a constraint). Points in each body's frame. */
typedef struct app_connection {
    int b1;
    mbk_vec3 p1;
    int b2;
    mbk_vec3 p2;
    const char *label;
} app_connection;

/* Options that change how a model is built. */
typedef struct app_model_options {
    bool floating_base;        /* URDF: mount the root link on a Free mobilizer */
    bool no_limits;            /* URDF: no joint-limit stops */
    bool no_damping;           /* URDF: no joint dampers */
    size_t max_urdf_bytes;     /* URDF: largest file accepted (0: the library's default, 16 MiB) */
    bool strict_inertia;       /* URDF: refuse every link whose inertia no rigid body has */
    double min_mass, min_inertia; /* URDF: floors for the links of moving bodies (0: off) */
    bool balance_inertia;      /* URDF: nearest realizable inertia for unrealizable ones */
    bool friction;             /* URDF: joint friction as friction elements */
    bool ground;               /* URDF: ground contact for the <collision> shapes */
    double ground_height;      /* URDF: its height */
    int warnings;              /* the loader's warnings on stderr: -1 none, 0 a count and the first few, 1 all */
} app_model_options;

/* Load a model by name (NULL: the default, builtin:chain:5); prints the reason
   on stderr and returns APP_USAGE for a bad name, APP_MODEL when it cannot be
   loaded or built, APP_OK on success. */
int app_model_load(const char *spec, const app_model_options *o, app_model *m);
void app_model_free(app_model *m);
/* One line per built-in, for --help. */
void app_model_list_builtins(FILE *f);
/* A fresh State with the model's default initial conditions (realized to Model
   at least, assembled when the model has constraints). NULL on failure
   (message printed). */
mbk_state *app_model_initial_state(const app_model *m);
/* The default pose of a URDF model, on a State realized to Model: joints whose q lies
   outside their <limit> are moved to the nearest limit, and with ground contact a
   floating robot is moved up or down until its lowest contact point touches the ground. What
   was changed is written to note (empty when nothing). 0, or APP_FAIL (message printed). */
int app_model_default_pose(const app_model *m, mbk_state *s, char *note, size_t n);
/* Index in q of a joint's first coordinate, its count in *nq; -1 if unknown. */
int app_model_find_joint_q(const app_model *m, const mbk_state *s, const char *joint, int *nq);

/* ---- lists of numbers, initial values (app_values.c) ---- */
/* The first bad item of a list, for messages. */
typedef struct app_list_error {
    int index;        /* 1-based */
    char item[48];    /* its text (cut) */
    bool not_finite;  /* a number, but NaN, infinite or out of range */
} app_list_error;
/* Items separated by sep, each a finite number, into out (the first cap of them):
   the number of items (which may exceed cap), or -1 with *e naming the first bad one. */
int app_parse_list(const char *text, char sep, double *out, int cap, app_list_error *e);
/* Message for a list that app_parse_list refused: which value, and why. */
void app_list_message(char *buf, size_t cap, const app_list_error *e);
/* Option opt's value text as one finite number into *out: 0, or -1 with the message in
   why (unless NULL). */
int app_parse_number(const char *opt, const char *text, double *out, char *why, size_t cap);
/* Option opt's X,Y,Z (three finite numbers) into *out: 0, or -1 with the message
   (the option, which value and why) in why. */
int app_parse_vec3(const char *opt, const char *text, mbk_vec3 *out, char *why, size_t cap);
/* The integration options mbk run and mbk sweep share (--t-final, --accuracy, --step
   with --integrator): 0, or -1 with the first bad one's message in why. */
int app_check_integration(double t_final, double accuracy, double step, const char *integrator, char *why,
                          size_t cap);
/* One initial value: a coordinate's (or speed's) index and its value. */
typedef struct app_assign {
    int index;    /* into q (or u) */
    double value;
} app_assign;
/* --q0 / --u0 TEXT for the model in s: n plain numbers, or JOINT=V[:V...] pairs, into
   out (room for nq or nu) and *nout; says what is wrong as "mbk CMD: ..." on stderr.
   APP_OK, APP_USAGE or APP_FAILED (out of memory). */
int app_parse_initial(const app_model *m, const mbk_state *s, const char *cmd, const char *text, bool is_q,
                      app_assign *out, int *nout);

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
/* Whether the integrator takes a fixed step (--step): false for the variable-step
   SUNDIALS ones. */
bool app_integrator_fixed_step_ok(const char *name);
/* The library's limit on steps per mbk_integrator_step_to call (--max-steps default). */
long app_integrator_default_max_steps(void);
/* Create, set accuracy (and fixed step when step > 0, the step limit per output
   interval when max_steps > 0) and initialize from s0. */
app_integrator *app_integrator_start(const mbk_system *sys, const char *name, double accuracy,
                                     double step, long max_steps, const mbk_state *s0);
/* Advance to t; the current State is then app_integrator_state(). <0 on failure
   (mbk_last_error() says why). */
int app_integrator_step_to(app_integrator *ig, double t);
const mbk_state *app_integrator_state(const app_integrator *ig);
void app_integrator_stats(const app_integrator *ig, app_stats *st);
void app_integrator_free(app_integrator *ig);
/* The library's integrator (NULL for a model with nothing to integrate). */
mbk_integrator *app_integrator_library(const app_integrator *ig);
/* The --integrator name of a library integrator name ("RK-Merson" -> "rkmerson"), or NULL. */
const char *app_integrator_from_library_name(const char *library_name);
/* Continue a run from an integrator checkpoint image with the integrator `name`;
   NULL on failure (mbk_last_error() says why). */
app_integrator *app_integrator_resume(const mbk_system *sys, const char *name, const void *image, size_t n);

/* ---- outputs (app_output.c) ---- */
typedef struct app_series {
    int nq, nu;
    long n, cap;               /* samples */
    double *t, *q, *u, *ke, *pe; /* q: n x nq, u: n x nu */
} app_series;

int app_series_add(app_series *ser, double t, const double *q, const double *u, double ke, double pe);
/* Add the State's t, q, u and energies as a sample: APP_OK, or APP_FAILED with a message. */
int app_series_sample(app_series *ser, const mbk_system *sys, const mbk_state *s);
void app_series_free(app_series *ser);
/* The trajectory CSV's header line, t,q0..,u0..,energy,kinetic,potential, into f. */
void app_write_csv_header(FILE *f, const app_series *ser);
/* The CSV rows of samples from..n-1 (no header) into f. */
void app_write_csv_rows(FILE *f, const app_series *ser, long from);
/* SVG: coordinates and energy against time. 0 or -1 (errno set). */
int app_write_svg(const char *path, const app_series *ser, const char *title);
/* The whole file, NUL-terminated (its length in *len unless NULL); NULL on failure. */
char *app_read_text(const char *path, size_t *len);
/* Where a new file for the output path goes (malloc'd): a symlink's target (made or
   not yet), else path itself; NULL for an existing path that is not a regular file (a
   FIFO, a terminal, /dev/stdout), which is written in place. */
char *app_output_target(const char *path);
/* A whole output file: put(f, data) writes it. A regular file (or none yet) is written
   as path.partial and renamed over the old (for a symlink, over its target), so it is
   never torn; anything else (a FIFO, a terminal, /dev/stdout) is written in place.
   0 or -1 (errno set). */
int app_write_file(const char *path, int (*put)(FILE *f, const void *data), const void *data);
/* text as the whole of path (app_write_file). */
int app_write_text(const char *path, const char *text);
/* Create the parent directory of a path (one level) if missing. */
void app_make_parent_dir(const char *path);

/* ---- checkpoints of a run (app_checkpoint.c) ---- */
/* What a run checkpoint holds besides the integrator: enough to go on sampling as the
   uninterrupted run would. */
typedef struct app_run_meta {
    char integrator[32];       /* --integrator name */
    char model[512];           /* the model as it was given */
    double interval;           /* time between samples (0: unknown) */
    long sample;               /* index of the sample at the checkpoint's time (-1: unknown) */
    double t0, e0;             /* time and energy at the start of the run (NaN: unknown) */
} app_run_meta;
/* Write the trajectory so far (csv, unless NULL or "none"; app_write_trajectory), then a
   checkpoint of the run to path (atomically). APP_OK, or an exit status (APP_OUTPUT, APP_FAILED) with the reason printed. */
int app_checkpoint_write(const char *path, const app_integrator *ig, const app_run_meta *meta, const char *csv,
                         const app_series *ser, const char *kept, long kept_rows);
/* Read a run checkpoint: its meta and an integrator continuing it. NULL with the reason
   printed. A checkpoint written by mbk_integrator_save (no meta) is accepted too. */
app_integrator *app_checkpoint_read(const char *path, const mbk_system *sys, app_run_meta *meta);
/* The first `rows` samples of a trajectory CSV (written by app_write_trajectory with ser's nq and
   nu) into ser, and its header and those rows verbatim into *kept (malloc'd): 0; 1 when the
   file does not exist (nothing read); -1 with the reason in why. */
int app_read_csv(const char *path, long rows, app_series *ser, char **kept, char *why, size_t n);
/* The trajectory CSV: kept (header and the first kept_rows rows, verbatim) then ser's rows
   from kept_rows on; without kept, a header and every row (app_write_file). 0 or -1
   (errno set). */
int app_write_trajectory(const char *path, const app_series *ser, const char *kept, long kept_rows);

/* A run continued from a checkpoint (app_resume). */
typedef struct app_resumed {
    app_integrator *ig;        /* continuing the run */
    app_run_meta meta;         /* the checkpoint's own lines */
    char *kept;                /* the trajectory CSV's header and rows up to the checkpoint, or NULL */
    long kept_rows;            /* rows of ser read from that CSV */
    long k_first;              /* the next sample: t = k_first * interval */
    double interval;           /* time between samples */
    double t;                  /* the checkpoint's time */
} app_resumed;
/* Continue the run of the checkpoint at path on model m up to t_final: its integrator,
   the trajectory so far (the first rows of csv when it continues this run, else the
   checkpoint's State) in ser, and where sampling goes on (the checkpoint's interval unless
   interval_given). APP_OK, or an exit status with the reason printed. */
int app_resume(const char *path, const app_model *m, const char *csv, double interval, bool interval_given,
               double t_final, app_series *ser, app_resumed *r);
/* ---- the trajectory viewer (app_html.c, app_visual.c; docs/viewer.md) ---- */
enum { APP_SHAPE_BOX = 0, APP_SHAPE_CYLINDER = 1, APP_SHAPE_SPHERE = 2 };
typedef struct app_shape {
    int body;                  /* 0 is Ground */
    int type;                  /* APP_SHAPE_* */
    double size[3];            /* box: edges x, y, z; cylinder (along z): r, r, length; sphere: r, r, r */
    mbk_transform X_BS;        /* the shape's frame in the body's (centred on the shape) */
    float rgba[4];             /* rgba[3] < 0: no colour given */
    bool from_mesh, mass_box;  /* a mesh's bounding box; a box fitted to the mass properties */
    char note[160];
} app_shape;
typedef struct app_shapes {
    app_shape *v;
    int n, cap;
} app_shapes;
/* The <visual> shapes of a URDF model's bodies, appended to *sh; notes says
   what was approximated or left out (meshes). 0, or -1 (unreadable file, no memory). */
int app_shapes_from_urdf(const app_model *m, app_shapes *sh, char *notes, size_t cap);
/* Append the box fitted to a body's mass properties (a small sphere if massless). */
int app_shape_mass_box(const app_model *m, int body, app_shapes *sh);
void app_shapes_free(app_shapes *sh);

/* What the page says about the run. */
typedef struct app_run_info {
    const char *command;       /* "run" or "view" */
    const char *integrator;
    double t_final;            /* the time asked for */
    bool stopped_early;
    const char *why;           /* why it stopped early ("" otherwise) */
    bool have_gravity;         /* --gravity given: the gravity used */
    mbk_vec3 gravity;
    bool autoplay;             /* the page starts playing (else paused at t = 0) */
} app_run_info;
/* Write the self-contained viewer page: the template viewer/viewer.html with
   three.js, the page's script and the trajectory inside it. Body poses are
   computed from the samples' q (thinned to the page's frame budget). 0, or -1
   with the reason in err. */
int app_write_html(const char *path, const app_model *m, const app_series *ser, const app_run_info *ri, char *err,
                   size_t cap);

/* ---- info and bench (app_info.c) ---- */
int app_info(const app_model *m, bool all);
int app_bench(const app_model *m, double seconds_per_test);

/* ---- sweep (app_sweep.c): `mbk sweep`, arguments after the command ---- */
int app_sweep_main(int argc, char **argv);

/* The program under mpirun (app_ranks.c); without MPI every call does nothing. */
typedef struct app_ranks {
    int rank, size;
    bool mpi;          /* started by an MPI launcher, MPI running */
    bool quiet;        /* this rank's stderr could not be redirected: print nothing */
    FILE *held;        /* ranks other than 0: their stderr until the agreement */
} app_ranks;
/* Start MPI when launched by mpirun (srun, mpiexec); ranks other than 0 go silent on
   stdout and hold their stderr. APP_OK, or APP_FAILED when MPI cannot start. */
int app_ranks_start(app_ranks *r);
/* Collective: every rank gives its status (0 fine); all get the lowest failing rank's
   status, and rank 0 prints another rank's held reason ("mbk WHAT: ... rank K: ..."). */
int app_ranks_agree(app_ranks *r, int status, const char *what);
/* Ranks other than 0: stderr goes silent from here on. */
void app_ranks_quiet(app_ranks *r);
/* The end: rank 0's status on every rank (returned), MPI finalized. */
int app_ranks_finish(app_ranks *r, int status);

/* ---- helpers ---- */
double app_now(void);          /* monotonic wall time in seconds */
int app_fail(const char *what); /* prints mbk_last_error() (and app_hint); returns APP_FAILED */
/* The program's own words for the library settings a message names (the step limit,
   the URDF size limit): one "mbk: hint: ..." line on stderr per setting, naming the
   option that changes it. Nothing when the message names none. */
void app_hint(const char *message);

#endif
