/* mbk/events.h - events: witnesses, handlers, scheduled events and reporters.
 *
 * A triggered event has a witness function, evaluated at a stage (Time..
 * Report), and a direction: it occurs when the witness changes sign that
 * way between two consecutive States of an integration: rising when it
 * goes from < 0 to >= 0, falling from > 0 to <= 0 (a witness that touches
 * zero and turns back counts once only when a State lands on the zero, and
 * never with CVODE or IDA; one that starts at exactly zero has not crossed:
 * docs/integrators.md 4.2). The integrator locates the crossing to its event tolerance and
 * the handler runs on the State just past it. Scheduled events run at
 * their exact times. Handlers may change the State (continuous and
 * discrete variables, enabled flags) and lower result->lowest_modified to
 * the lowest stage they changed (it arrives as {MBK_STAGE_INFINITY,
 * false}); the integrator restarts from that stage. Reporters only read
 * the State. At one time: handlers run in subsystem order (triggered ones
 * by witness, then scheduled ones), then reporters, which see the State
 * after the handlers. Reporters are not events: they never make
 * mbk_integrator_step_to return MBK_EVENT and are not counted as events.
 *
 * Users add events to a System before its topology is realized (adding one
 * later invalidates the topology): they live in an internal "events"
 * subsystem added on first use. Its witnesses of stage g are evaluated
 * when it realizes g, that is after every subsystem added before it has
 * realized g, and every subsystem has realized g - 1: add events after the
 * subsystems their witnesses read (mbk_multibody_create's matter and forces
 * are there already). A witness that returns NaN fails the realization.
 *
 * A subsystem can define events of its own, through its ops:
 *   - witnesses: it allocates trigger slots in realize_instance
 *     (mbk_state_allocate_event_triggers) and writes them in its realize op
 *     of that stage (mbk_state_upd_event_triggers). Its triggered event ids
 *     are its slot numbers counted over its stages in order: the slots of
 *     Time first, then Position, ..., Report. Directions default to
 *     MBK_ANY; mbk_system_set_witness_direction changes one;
 *   - scheduled events: next_scheduled_event reports the earliest time after
 *     the State's time at which it has events, and their ids (choose ids
 *     that differ from its witness ids, e.g. from the number of witnesses
 *     up). Set *n_events to the number of ids; if more are due than the
 *     capacity *n_events had on entry, set the number needed and the
 *     integrator asks again with room for them. Leave *t_next at INFINITY
 *     (its value on entry) when there are none;
 *   - handle_events gets the ids that occurred at one time (triggered ones
 *     first, in slot order, then scheduled ones, in the order reported). */
#ifndef MBK_EVENTS_H
#define MBK_EVENTS_H

#include <stdbool.h>
#include "mbk/stage.h"

/* Declarations here are the public API: exported from the shared library, whose
   other symbols are hidden (CMakeLists.txt, "symbol visibility"). */
#if defined(__GNUC__)
#pragma GCC visibility push(default)
#endif
#ifdef __cplusplus
extern "C" {
#endif

typedef enum mbk_event_direction {
    MBK_RISING = 1,  /* witness crosses zero going up */
    MBK_FALLING = 2, /* witness crosses zero going down */
    MBK_ANY = 3      /* either way */
} mbk_event_direction;

/* What a handler did. It arrives as {MBK_STAGE_INFINITY, false}; the handler
   lowers lowest_modified to the lowest stage it changed. */
typedef struct mbk_event_result {
    mbk_stage lowest_modified; /* lowest stage whose variables the handler changed */
    bool terminate;            /* ask the integrator to stop */
} mbk_event_result;

typedef struct mbk_state mbk_state;
typedef struct mbk_system mbk_system;

/* Witness: a function of the State realized to its stage; events occur at its sign changes. */
typedef double (*mbk_witness_fn)(void *user, const mbk_system *sys, const mbk_state *s);
/* Handler: may change s; lowers result->lowest_modified to the lowest stage it changed
   and sets result->terminate to stop the integration. Return 0, or nonzero on failure
   (the integration stops with MBK_EUSER and the State as it was before the handlers). */
typedef int (*mbk_handler_fn)(void *user, const mbk_system *sys, mbk_state *s,
                              mbk_event_result *result);
/* Reporter: reads the State (realized to Report); cannot change it. */
typedef void (*mbk_reporter_fn)(void *user, const mbk_system *sys, const mbk_state *s);

/* A triggered event: witness evaluated at witness_stage (Time..Report), handler
   called when it crosses zero in `direction`. Returns the event id (>= 0). */
int mbk_system_add_event_handler(mbk_system *sys, mbk_stage witness_stage,
                                 mbk_event_direction direction, mbk_witness_fn witness,
                                 mbk_handler_fn handler, void *user);
/* A triggered reporter: like a handler, but it only reads the State (realized to
   Report) at the located crossing. Returns its id. */
int mbk_system_add_event_reporter(mbk_system *sys, mbk_stage witness_stage,
                                  mbk_event_direction direction, mbk_witness_fn witness,
                                  mbk_reporter_fn reporter, void *user);
/* An event at time t (finite), hit exactly by the integrators. It runs if t is
   after the time the integration starts from. Returns its id. */
int mbk_system_add_scheduled_event(mbk_system *sys, double t, mbk_handler_fn handler,
                                   void *user);
/* A reporter called at every t = k * interval (k integer, interval > 0) after the
   time the integration starts from, on the State there (hit exactly). Returns its id. */
int mbk_system_add_periodic_reporter(mbk_system *sys, double interval, mbk_reporter_fn reporter,
                                     void *user);
/* Direction of a subsystem's own witness, by its event id (see above). */
int mbk_system_set_witness_direction(mbk_system *sys, int subsystem, int event_id,
                                     mbk_event_direction direction);
/* Direction the integrators use for a subsystem's witness (MBK_ANY unless set;
   for the events subsystem, the one its event was added with); 0 on a bad argument. */
mbk_event_direction mbk_system_get_witness_direction(const mbk_system *sys, int subsystem,
                                                     int event_id);
/* Index of the events subsystem, or -1 when no event was added. */
int mbk_system_get_events_subsystem(const mbk_system *sys);

/* ---- for integrators, built-in or your own, that drive events ----
   Triggered events of the events subsystem that carry a reporter are
   reported, not handled: an integrator calls their reporters where they
   cross, and the periodic reporters at their times. Subsystems' own
   handlers and scheduled events are reached through
   mbk_system_handle_events and mbk_system_next_scheduled_event (system.h).
   mbk/external.h has the whole list of watched witnesses with their
   directions, their values in one call, and the dispatch of what an
   outside root finder found (mbk_system_handle_events_at). */

/* True when the events subsystem's witness `event_id` belongs to a reporter
   (mbk_system_add_event_reporter) rather than a handler. */
bool mbk_system_is_event_reporter(const mbk_system *sys, int event_id);
/* Call the reporters among the events subsystem's event ids (others are
   skipped) on s, realized to Report. Returns how many ran. */
int mbk_system_call_event_reporters(const mbk_system *sys, const mbk_state *s,
                                    const int *event_ids, int n);
/* Earliest time strictly after t at which a periodic reporter is due
   (INFINITY when there is none). */
double mbk_system_get_next_report_time(const mbk_system *sys, double t);
/* Call every periodic reporter due at exactly t on s (realized to Report).
   Returns how many ran. */
int mbk_system_call_periodic_reporters(const mbk_system *sys, const mbk_state *s, double t);

#ifdef __cplusplus
}
#endif
#if defined(__GNUC__)
#pragma GCC visibility pop
#endif
#endif
