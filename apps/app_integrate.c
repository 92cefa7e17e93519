/* Integrators for the mbk program: the one place that knows which ones exist.
 * Every name maps to a constructor of the library (mbk_integrator_create_by_name). */
#define _POSIX_C_SOURCE 200809L
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <mbk/integrator.h>
#include <mbk/status.h>

#include "app.h"

const char *app_integrator_default(void) { return "rkmerson"; }

const char *app_integrator_names(void) { return "rkmerson (default), rk4, euler, semi-euler, cvode-bdf, cvode-adams, ida"; }

bool app_integrator_known(const char *name)
{
    for (int i = 0; mbk_integrator_get_name_at(i); ++i)
        if (strcmp(name, mbk_integrator_get_name_at(i)) == 0) return true; /* the short names only */
    return false;
}

bool app_integrator_fixed_step_ok(const char *name)
{
    return strcmp(name, "cvode-bdf") && strcmp(name, "cvode-adams") && strcmp(name, "ida");
}

long app_integrator_default_max_steps(void) { return 100000; /* mbk/integrator.h: the default settings */ }

struct app_integrator {
    const mbk_system *sys;
    mbk_integrator *ig;    /* NULL when frozen */
    bool frozen;           /* nothing to integrate (no q, u or z): time only moves */
    mbk_state *s;          /* the State when frozen */
};

app_integrator *app_integrator_start(const mbk_system *sys, const char *name, double accuracy, double step,
                                     long max_steps, const mbk_state *s0)
{
    app_integrator *a = calloc(1, sizeof *a);
    if (!a) return NULL;
    a->sys = sys;
    if (mbk_state_get_ny(s0) == 0) {
        /* a model with no state variables (a welded robot): nothing moves */
        a->frozen = true;
        a->s = mbk_state_create();
        if (!a->s || mbk_state_copy(a->s, s0) < 0 || mbk_system_realize(sys, a->s, MBK_STAGE_ACCELERATION) < 0) {
            app_integrator_free(a);
            return NULL;
        }
        return a;
    }
    a->ig = mbk_integrator_create_by_name(sys, name);
    if (!a->ig || mbk_integrator_set_accuracy(a->ig, accuracy) < 0 ||
        (step > 0 && mbk_integrator_set_fixed_step(a->ig, step) < 0) ||
        (max_steps > 0 && mbk_integrator_set_max_steps(a->ig, max_steps) < 0) ||
        mbk_integrator_initialize(a->ig, s0) < 0) {
        app_integrator_free(a);
        return NULL;
    }
    return a;
}

int app_integrator_step_to(app_integrator *a, double t)
{
    if (a->frozen) {
        if (mbk_state_set_time(a->s, t) < 0) return mbk_last_status();
        return mbk_system_realize(a->sys, a->s, MBK_STAGE_ACCELERATION);
    }
    int rc;
    do rc = mbk_integrator_step_to(a->ig, t);
    while (rc == MBK_EVENT);
    return rc < 0 ? rc : MBK_OK;
}

const mbk_state *app_integrator_state(const app_integrator *a)
{
    return a->frozen ? a->s : mbk_integrator_get_state(a->ig);
}

void app_integrator_stats(const app_integrator *a, app_stats *st)
{
    memset(st, 0, sizeof *st);
    if (a->frozen) {
        snprintf(st->integrator, sizeof st->integrator, "none (the model has no state variables)");
        return;
    }
    mbk_integrator_stats s;
    mbk_integrator_get_stats(a->ig, &s);
    snprintf(st->integrator, sizeof st->integrator, "%s", mbk_integrator_get_name(a->ig));
    st->steps = s.steps_taken;
    st->attempts = s.steps_attempted;
    st->rejected = s.error_test_failures;
    st->rhs = s.rhs_evaluations;
    st->projections = s.projections;
    st->convergence_failures = s.convergence_failures;
    st->events = s.events_handled;
    st->integrated = true;
}

mbk_integrator *app_integrator_library(const app_integrator *a) { return a ? a->ig : NULL; }

const char *app_integrator_from_library_name(const char *library_name)
{
    const char *name = mbk_integrator_find_name(library_name); /* short and display names */
    if (!name) mbk_clear_error();
    return name;
}

app_integrator *app_integrator_resume(const mbk_system *sys, const char *name, const void *image, size_t n)
{
    app_integrator *a = calloc(1, sizeof *a);
    if (!a) return NULL;
    a->sys = sys;
    a->ig = mbk_integrator_create_by_name(sys, name);
    if (!a->ig || mbk_integrator_deserialize(a->ig, image, n) < 0) {
        app_integrator_free(a);
        return NULL;
    }
    return a;
}

void app_integrator_free(app_integrator *a)
{
    if (!a) return;
    mbk_integrator_destroy(a->ig);
    mbk_state_destroy(a->s);
    free(a);
}
