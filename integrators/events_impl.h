/* Private interface of the events subsystem (integrators/events.c) used by
 * the integrator driver. */
#ifndef MBK_EVENTS_IMPL_H
#define MBK_EVENTS_IMPL_H

#include "mbk/events.h"
#include "mbk/system.h"

typedef struct ev_subsystem ev_subsystem;

/* The events subsystem's impl and index (NULL / -1 when there is none). */
const ev_subsystem *ev_find(const mbk_system *sys, int *index);
/* True when the events subsystem's witness `local_id` belongs to a reporter. */
bool ev_is_reporter(const ev_subsystem *ev, int local_id);
/* Call the event reporters among the given local witness ids. Returns how many ran. */
int ev_call_event_reporters(const ev_subsystem *ev, const mbk_system *sys, const mbk_state *s,
                            const int *ids, int n);
/* Number of periodic reporters. */
int ev_num_periodic(const ev_subsystem *ev);
/* Earliest periodic-reporter time strictly after t (INFINITY if none). */
double ev_next_report_time(const ev_subsystem *ev, double t);
/* Call every periodic reporter due at exactly t. Returns how many ran. */
int ev_call_periodic_reporters(const ev_subsystem *ev, const mbk_system *sys, const mbk_state *s,
                               double t);

#endif
