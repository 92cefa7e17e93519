/* Integrators for the mbk program: the one place that knows which ones exist.
 *
 * With the library's integrators (mbk/integrator.h) every name maps to its
 * constructor. The SUNDIALS ones (CVODE, IDA) are switched on by
 * APP_HAVE_SUNDIALS_INTEGRATORS below once the library provides them.
 * Without mbk/integrator.h (or with -DAPP_FORCE_OWN_INTEGRATORS) the program
 * falls back on its own fixed-step RK4 and explicit Euler through the ODE
 * view mbk_system_calc_ydot. */
#define _POSIX_C_SOURCE 200809L
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "app.h"

#if defined(__has_include) && !defined(APP_FORCE_OWN_INTEGRATORS)
#if __has_include(<mbk/integrator.h>)
#include <mbk/integrator.h>
#define APP_HAVE_LIBRARY_INTEGRATORS 1
#endif
#endif
#ifndef APP_HAVE_LIBRARY_INTEGRATORS
#define APP_HAVE_LIBRARY_INTEGRATORS 0
#endif
/* The library's mbk_integrator_create_cvode and _ida (integrators/sundials.c); 0 if a build lacks them. */
#ifndef APP_HAVE_SUNDIALS_INTEGRATORS
#define APP_HAVE_SUNDIALS_INTEGRATORS 1
#endif

static const char *const known[] = {"rkmerson", "rk4", "euler", "semi-euler", "cvode-bdf", "cvode-adams", "ida"};

const char *app_integrator_default(void) { return APP_HAVE_LIBRARY_INTEGRATORS ? "rkmerson" : "rk4"; }

const char *app_integrator_names(void) { return "rkmerson (default), rk4, euler, semi-euler, cvode-bdf, cvode-adams, ida"; }

bool app_integrator_known(const char *name)
{
    for (size_t i = 0; i < sizeof known / sizeof *known; ++i)
        if (strcmp(name, known[i]) == 0) return true;
    return false;
}

bool app_integrator_available(const char *name, const char **why)
{
    *why = "";
    if (!app_integrator_known(name)) {
        *why = "unknown integrator";
        return false;
    }
    bool sundials = !strncmp(name, "cvode", 5) || !strcmp(name, "ida");
    if (sundials && !APP_HAVE_SUNDIALS_INTEGRATORS) {
        *why = "the SUNDIALS integrators (CVODE, IDA) are not in this build of the library yet";
        return false;
    }
    if (!APP_HAVE_LIBRARY_INTEGRATORS && strcmp(name, "rk4") && strcmp(name, "euler")) {
        *why = "this build has only the program's own fixed-step rk4 and euler";
        return false;
    }
    return true;
}

struct app_integrator {
    const mbk_system *sys;
    char name[64];
    bool frozen;           /* nothing to integrate (no q, u or z): time only moves */
#if APP_HAVE_LIBRARY_INTEGRATORS
    mbk_integrator *ig;
#endif
    /* the program's own fixed-step methods */
    mbk_state *s;
    double h, t;
    int ny;
    double *y, *k;
    bool euler;
    long steps, rhs;
};

#if APP_HAVE_LIBRARY_INTEGRATORS
static mbk_integrator *create_library(const mbk_system *sys, const char *name)
{
    if (!strcmp(name, "rkmerson")) return mbk_integrator_create_rkmerson(sys);
    if (!strcmp(name, "rk4")) return mbk_integrator_create_rk4(sys);
    if (!strcmp(name, "euler")) return mbk_integrator_create_explicit_euler(sys);
    if (!strcmp(name, "semi-euler")) return mbk_integrator_create_semi_explicit_euler(sys);
#if APP_HAVE_SUNDIALS_INTEGRATORS
    if (!strcmp(name, "cvode-bdf")) return mbk_integrator_create_cvode(sys, MBK_CVODE_BDF);
    if (!strcmp(name, "cvode-adams")) return mbk_integrator_create_cvode(sys, MBK_CVODE_ADAMS);
    if (!strcmp(name, "ida")) return mbk_integrator_create_ida(sys);
#endif
    mbk_set_error(MBK_EINVAL, "integrator '%s' is not available", name);
    return NULL;
}
#endif

app_integrator *app_integrator_start(const mbk_system *sys, const char *name, double accuracy, double step,
                                     const mbk_state *s0)
{
    app_integrator *a = calloc(1, sizeof *a);
    if (!a) return NULL;
    a->sys = sys;
    snprintf(a->name, sizeof a->name, "%s", name);
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
#if APP_HAVE_LIBRARY_INTEGRATORS
    a->ig = create_library(sys, name);
    if (!a->ig || mbk_integrator_set_accuracy(a->ig, accuracy) < 0 ||
        (step > 0 && mbk_integrator_set_fixed_step(a->ig, step) < 0) || mbk_integrator_initialize(a->ig, s0) < 0) {
        app_integrator_free(a);
        return NULL;
    }
    return a;
#else
    (void)accuracy;
    a->euler = !strcmp(name, "euler");
    a->h = step > 0 ? step : 1e-3;
    a->s = mbk_state_create();
    if (!a->s || mbk_state_copy(a->s, s0) < 0 || mbk_system_realize(sys, a->s, MBK_STAGE_ACCELERATION) < 0) {
        app_integrator_free(a);
        return NULL;
    }
    a->ny = mbk_state_get_ny(a->s);
    a->t = mbk_state_get_time(a->s);
    a->y = malloc(sizeof(double) * (size_t)(a->ny ? a->ny : 1));
    a->k = malloc(sizeof(double) * 5 * (size_t)(a->ny ? a->ny : 1));
    if (!a->y || !a->k) {
        app_integrator_free(a);
        return NULL;
    }
    memcpy(a->y, mbk_state_get_y(a->s), sizeof(double) * (size_t)a->ny);
    return a;
#endif
}

#if !APP_HAVE_LIBRARY_INTEGRATORS
/* One classical RK4 (or explicit Euler) step of y' = f(t, y) through the ODE view. */
static int own_step(app_integrator *a, double h)
{
    int ny = a->ny;
    double *y = a->y, *k1 = a->k, *k2 = k1 + ny, *k3 = k2 + ny, *k4 = k3 + ny, *tmp = k4 + ny;
    int rc = mbk_system_calc_ydot(a->sys, a->s, a->t, y, k1);
    a->rhs++;
    if (rc < 0) return rc;
    if (a->euler) {
        for (int i = 0; i < ny; ++i) y[i] += h * k1[i];
        return MBK_OK;
    }
    for (int i = 0; i < ny; ++i) tmp[i] = y[i] + 0.5 * h * k1[i];
    if ((rc = mbk_system_calc_ydot(a->sys, a->s, a->t + 0.5 * h, tmp, k2)) < 0) return rc;
    for (int i = 0; i < ny; ++i) tmp[i] = y[i] + 0.5 * h * k2[i];
    if ((rc = mbk_system_calc_ydot(a->sys, a->s, a->t + 0.5 * h, tmp, k3)) < 0) return rc;
    for (int i = 0; i < ny; ++i) tmp[i] = y[i] + h * k3[i];
    if ((rc = mbk_system_calc_ydot(a->sys, a->s, a->t + h, tmp, k4)) < 0) return rc;
    a->rhs += 3;
    for (int i = 0; i < ny; ++i) y[i] += h / 6.0 * (k1[i] + 2 * k2[i] + 2 * k3[i] + k4[i]);
    return MBK_OK;
}
#endif

int app_integrator_step_to(app_integrator *a, double t)
{
    if (a->frozen) {
        if (mbk_state_set_time(a->s, t) < 0) return mbk_last_status();
        return mbk_system_realize(a->sys, a->s, MBK_STAGE_ACCELERATION);
    }
#if APP_HAVE_LIBRARY_INTEGRATORS
    int rc;
    do rc = mbk_integrator_step_to(a->ig, t);
    while (rc == MBK_EVENT);
    return rc < 0 ? rc : MBK_OK;
#else
    while (a->t < t) {
        double h = fmin(a->h, t - a->t);
        if (t - (a->t + h) < 1e-12 * fmax(1.0, fabs(t))) h = t - a->t;
        int rc = own_step(a, h);
        if (rc < 0) return rc;
        a->t = a->t + h >= t ? t : a->t + h;
        a->steps++;
    }
    if (mbk_state_set_time(a->s, a->t) < 0 || mbk_state_set_y(a->s, a->y, a->ny) < 0) return mbk_last_status();
    return mbk_system_realize(a->sys, a->s, MBK_STAGE_ACCELERATION);
#endif
}

const mbk_state *app_integrator_state(const app_integrator *a)
{
    if (a->frozen) return a->s;
#if APP_HAVE_LIBRARY_INTEGRATORS
    return mbk_integrator_get_state(a->ig);
#else
    return a->s;
#endif
}

void app_integrator_stats(const app_integrator *a, app_stats *st)
{
    memset(st, 0, sizeof *st);
    if (a->frozen) {
        snprintf(st->integrator, sizeof st->integrator, "none (the model has no state variables)");
        return;
    }
#if APP_HAVE_LIBRARY_INTEGRATORS
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
    st->library = true;
#else
    snprintf(st->integrator, sizeof st->integrator, "%s (the program's own, fixed step %g s)",
             a->euler ? "explicit Euler" : "RK4", a->h);
    st->steps = st->attempts = a->steps;
    st->rhs = a->rhs;
#endif
}

void app_integrator_free(app_integrator *a)
{
    if (!a) return;
#if APP_HAVE_LIBRARY_INTEGRATORS
    mbk_integrator_destroy(a->ig);
#endif
    mbk_state_destroy(a->s);
    free(a->y);
    free(a->k);
    free(a);
}
