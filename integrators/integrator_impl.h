/* Private layout of an integrator and the driver's services for the
 * built-in integrators in this directory. */
#ifndef MBK_INTEGRATOR_IMPL_H
#define MBK_INTEGRATOR_IMPL_H

#include "mbk/events.h"
#include "mbk/integrator.h"
#include "mbk/system.h"

enum {
    IG_IN_PLACE = 1 /* the step op advances `cur` in place and locates its own roots */
};

/* What was due at the current time when a handler failed there. */
typedef struct ig_pending {
    bool any;       /* something is pending */
    bool fired;     /* witnesses fired (their flags are kept in `fired`) */
    bool sched_due; /* scheduled events were due */
    bool rep_due;   /* periodic reporters were due */
} ig_pending;

struct mbk_integrator {
    const mbk_system *sys;
    mbk_integrator_ops ops;
    void *impl;
    int flags;
    mbk_integrator_settings set;
    bool cons_tol_given, event_tol_given;
    mbk_integrator_stats stats;

    bool initialized, terminated, settings_changed;
    /* cur: current State; prev: State at the start of the last step (RK path) or the
       backup taken before a step (in-place path); spare: target of the next commit;
       scratch: stage evaluations; probe: event localization. Same layout. */
    mbk_state *cur, *prev, *spare, *scratch, *probe;
    bool prev_valid;
    int ny, nsub;
    double t_init, h_prev, h_pred;
    long steps_this_call;

    /* active witnesses (those with a handler or reporter), stage-major order */
    int nw, cap_w;
    int *w_sub, *w_id, *w_off;     /* subsystem, its event id, offset in its stage's triggers */
    mbk_stage *w_stage;
    mbk_event_direction *w_dir;
    bool *w_rep;                    /* an event reporter of the events subsystem */
    bool *fired;
    double *w0, *w1, *wlo, *whi, *wmid;
    mbk_stage w_max_stage;          /* highest stage with an active witness (Empty: none) */
    int *acc;                       /* per subsystem scratch (witness numbering) */
    double *yh;                     /* Hermite-interpolated y */
    int cap_y;

    int ev_index;                   /* the events subsystem (-1: none) */

    /* scheduled events, per subsystem */
    double *sched_t;
    int *sched_n, *sched_cap;
    int **sched_ids;
    int *ids; /* handle_events id list */
    int cap_ids;

    /* events at the current time whose handlers failed: handled first on the next call */
    ig_pending pending;
    int last_handled;               /* events given to handlers at the last stop */

    /* The stop of the current step where the State may change (the next scheduled event, or
       the localization target): a step never passes it and lands on it exactly. The step's
       t_stop may come earlier, at a report time or reporter time, where the State is only
       read: an in-place integrator may step past those and interpolate back (INFINITY: none). */
    double t_hard_stop;

    /* localization */
    double loc_target;
    int loc_count;
    bool roots_reported; /* in-place integrators: roots in `fired` */
};

/* ---- services for the built-in integrators ---- */
/* Writable current State (in-place integrators only). */
mbk_state *ig_upd_cur(mbk_integrator *ig);
/* Undo the last commit (the new State is dropped, the previous one is current again). */
void ig_uncommit(mbk_integrator *ig);
/* qdot at (t, y) on the scratch State (realized to Velocity only). */
int ig_calc_qdot(mbk_integrator *ig, double t, const double *y, double *qdot);
/* Project the error estimate err onto the constraint manifold's tangent space at (t, y), on
   the scratch State, when the setting is on and there are constraints. */
int ig_project_error(mbk_integrator *ig, double t, const double *y, double *err);
/* Number of active witnesses and their directions (root finding). */
int ig_num_roots(const mbk_integrator *ig);
mbk_event_direction ig_root_direction(const mbk_integrator *ig, int i);
/* Active witness values at (t, y), on the scratch State. */
int ig_calc_roots(mbk_integrator *ig, double t, const double *y, double *g);
/* An in-place step stopped at roots: flags[i] != 0 for each active witness that fired. */
void ig_report_roots(mbk_integrator *ig, const int *flags);
/* After an in-place step wrote y and reached t: invalidate and realize `cur` to Acceleration. */
int ig_finish_in_place(mbk_integrator *ig, double t);
/* Create an integrator with internal flags. */
mbk_integrator *ig_create(const mbk_system *sys, const mbk_integrator_ops *ops, void *impl, int flags);
/* Smallest meaningful step at time t. */
double ig_min_step(const mbk_integrator *ig, double t);

/* ---- the driver's own pieces, shared by its files (integrator*.c) ---- */
/* Free the per-subsystem scheduled-event buffers. */
void ig_free_sched(mbk_integrator *ig);
/* Grow *p (capacity *cap elements of elem bytes) to hold at least n + 1. */
int ig_grow_arr(void **p, int *cap, int n, size_t elem);
/* Sizes, witnesses and buffers from `cur` (at Instance or later). May allocate. */
int ig_setup_layout(mbk_integrator *ig);
/* Active witness values of a realized State into w. */
int ig_read_witnesses(const mbk_integrator *ig, const mbk_state *s, double *w);
/* Realize s to what the driver needs and check its derivative. */
int ig_realize_full(mbk_integrator *ig, mbk_state *s);
/* Copy cur into every other State and read the witnesses. */
int ig_resync(mbk_integrator *ig);
/* Whether a witness going from a to b crosses zero in direction dir. */
bool ig_crossing(double a, double b, mbk_event_direction dir);
/* Earliest scheduled event of every subsystem after cur's time, into *t_sched. */
int ig_query_scheduled(mbk_integrator *ig, double *t_sched);
/* Run the handlers of the witnesses that fired (and the scheduled events due at t). */
int ig_handle_events(mbk_integrator *ig, double t, bool sched_due, int *nhandled, bool *terminate);
/* Narrow the first crossing between prev and cur to [*tlo, *thi] on the interpolant. */
int ig_localize(mbk_integrator *ig, double *tlo_out, double *thi_out);

#endif
