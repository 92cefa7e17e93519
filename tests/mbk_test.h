/* Minimal test harness shared by the C tests: each CHECK counts one
 * assertion; mbk_test_finish() prints "N passed, N failed" and returns the
 * process exit code. */
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

static inline int mbk_test_finish(void)
{
    printf("%d passed, %d failed\n", mbk_test_passed_count, mbk_test_failed_count);
    return mbk_test_failed_count == 0 && mbk_test_passed_count > 0 ? 0 : 1;
}

#endif
