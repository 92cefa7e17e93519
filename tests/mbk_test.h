/* Minimal test harness shared by the C tests: each CHECK counts one
 * assertion; mbk_test_finish() prints "N passed, N failed" and returns the
 * process exit code. mbk_test_rk4() starts the library's fixed-step RK4 for
 * tests that integrate a model (none writes its own stepping loop); it is
 * there when mbk/integrator.h is included before this header. MUST and
 * CHECK_OK check a library call's status, when mbk/status.h is. */
#ifndef MBK_TEST_H
#define MBK_TEST_H

#include <math.h>
#include <stdio.h>

static int mbk_test_passed_count;
static int mbk_test_failed_count;

static inline int mbk_test_record(int ok, const char *file, int line, const char *what)
{
    if (ok) {
        mbk_test_passed_count++;
    } else {
        mbk_test_failed_count++;
        fprintf(stderr, "%s:%d: check failed: %s\n", file, line, what);
    }
    return ok;
}

/* Relative-or-absolute closeness: |a-b| <= tol * max(1, |a|, |b|). */
static inline int mbk_test_close(double a, double b, double tol)
{
    double scale = fabs(a) > fabs(b) ? fabs(a) : fabs(b);
    if (scale < 1.0) scale = 1.0;
    return fabs(a - b) <= tol * scale;
}

#define CHECK(cond) mbk_test_record(!!(cond), __FILE__, __LINE__, #cond)
#define CHECK_INT(a, b)                                                             \
    do {                                                                            \
        long mbk_t_a_ = (long)(a), mbk_t_b_ = (long)(b);                            \
        if (!mbk_test_record(mbk_t_a_ == mbk_t_b_, __FILE__, __LINE__, #a " == " #b)) \
            fprintf(stderr, "    %ld != %ld\n", mbk_t_a_, mbk_t_b_);                  \
    } while (0)
#define CHECK_NEAR(a, b, tol)                                                       \
    do {                                                                            \
        double mbk_t_a_ = (a), mbk_t_b_ = (b);                                      \
        if (!mbk_test_record(mbk_test_close(mbk_t_a_, mbk_t_b_, (tol)), __FILE__,    \
                             __LINE__, #a " ~ " #b))                                 \
            fprintf(stderr, "    %.17g vs %.17g (diff %.3g)\n", mbk_t_a_, mbk_t_b_,  \
                    mbk_t_a_ - mbk_t_b_);                                          \
    } while (0)

#ifdef MBK_STATUS_H /* tests that include mbk/status.h (or mbk/mbk.h) first */
/* A library call's status rc as a check that it succeeded (rc >= 0): a failure is
   recorded with the call's text and the library's message; a success counts as a
   passed check only when count_pass (MUST counts failures alone, so that its many
   set-up calls do not swell the pass count). Returns rc. */
static inline int mbk_test_call(int rc, const char *call, const char *file, int line, int count_pass)
{
    if (rc >= 0) {
        if (count_pass) mbk_test_record(1, file, line, call);
        return rc;
    }
    mbk_test_record(0, file, line, call);
    fprintf(stderr, "    %s: %s\n", mbk_status_name(rc), mbk_last_error());
    return rc;
}

/* The same as a check: 1 when the call succeeded. */
static inline int mbk_test_ok(int rc, const char *call, const char *file, int line)
{
    return mbk_test_call(rc, call, file, line, 1) >= 0;
}

/* A set-up call that must succeed: returns its status; only a failure is recorded. */
#define MUST(call) mbk_test_call((call), #call, __FILE__, __LINE__, 0)
/* A call that must succeed, as a check: 1 when it did. */
#define CHECK_OK(call) mbk_test_ok((call), #call, __FILE__, __LINE__)
#endif

#ifdef MBK_INTEGRATOR_H /* tests that include mbk/integrator.h (or mbk/mbk.h) first */
#include "mbk/status.h"

/* The library's classical RK4 with fixed step h, started from s (copied, realized and
   projected with constraint_tol, as after every step; a tolerance the errors never
   reach leaves the constraints alone). For tests that integrate a model and look at
   every step: advance with mbk_integrator_step_to(ig, t0 + n * h), which lands each
   step on that time exactly, and read mbk_integrator_get_state. NULL, with a failed
   check and the library's message, if any call fails. */
#define mbk_test_rk4(sys, s, h, constraint_tol) mbk_test_rk4_at((sys), (s), (h), (constraint_tol), __FILE__, __LINE__)
static inline mbk_integrator *mbk_test_rk4_at(const mbk_system *sys, const mbk_state *s, double h,
                                              double constraint_tol, const char *file, int line)
{
    mbk_integrator *ig = mbk_integrator_create_rk4(sys);
    if (ig && mbk_integrator_set_fixed_step(ig, h) == MBK_OK &&
        mbk_integrator_set_constraint_tolerance(ig, constraint_tol) == MBK_OK &&
        mbk_integrator_initialize(ig, s) == MBK_OK)
        return ig;
    mbk_test_record(0, file, line, "mbk_test_rk4: create, set up and initialize the library's RK4");
    fprintf(stderr, "    %s\n", mbk_last_error());
    mbk_integrator_destroy(ig);
    return NULL;
}
#endif

static inline int mbk_test_finish(void)
{
    printf("%d passed, %d failed\n", mbk_test_passed_count, mbk_test_failed_count);
    return mbk_test_failed_count == 0 && mbk_test_passed_count > 0 ? 0 : 1;
}

#endif
