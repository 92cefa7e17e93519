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

#endif
