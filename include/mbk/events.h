/* mbk/events.h - event types shared by subsystems, handlers and integrators. */
#ifndef MBK_EVENTS_H
#define MBK_EVENTS_H

#include <stdbool.h>
#include "mbk/stage.h"

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

#ifdef __cplusplus
}
#endif
#endif
