/* Tests of the function library: hand-computed values, derivatives against
 * central differences, spline and step properties, bad input, and that
 * evaluation allocates nothing. */
#include "mbk/alloc.h"
#include "mbk/function.h"
#include "mbk/status.h"
#include "mbk_test.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

static const int C0[16]; /* zero components for one-argument functions (orders up to 16) */

/* Central difference of the (order-1)-th derivative along components[order-1]. */
static double fd_derivative(const mbk_function *f, const int *components, int order,
                            const double *x, double h)
{
    double xp[8], xm[8];
    int n = f->ops->n_args, c = components[order - 1];
    memcpy(xp, x, (size_t)n * sizeof(double));
    memcpy(xm, x, (size_t)n * sizeof(double));
    xp[c] += h;
    xm[c] -= h;
    return (mbk_function_derivative(f, components, order - 1, xp) -
            mbk_function_derivative(f, components, order - 1, xm)) / (2.0 * h);
}

/* Orders 1..max_order of a one-argument function against differences at x. */
static void check_fd_1d(const mbk_function *f, double x, int max_order, double h, double tol)
{
    for (int k = 1; k <= max_order; k++)
        CHECK_NEAR(mbk_function_derivative(f, C0, k, &x), fd_derivative(f, C0, k, &x, h), tol);
}

/* A constructor failure: empty function, MBK_EINVAL and a message. */
static void check_failed(mbk_function f)
{
    CHECK(f.ops == NULL && f.impl == NULL);
    CHECK_INT(mbk_last_status(), MBK_EINVAL);
    CHECK(strlen(mbk_last_error()) > 0);
    mbk_clear_error();
}

/* A NAN result with MBK_EINVAL and a message recorded. */
static void check_nan_einval(double v)
{
    CHECK(isnan(v));
    CHECK_INT(mbk_last_status(), MBK_EINVAL);
    CHECK(strlen(mbk_last_error()) > 0);
    mbk_clear_error();
}

static void test_constant(void)
{
    mbk_function f = mbk_function_constant(2.5, 3);
    double x[3] = {1, -2, 7};
    int comps[2] = {2, 0};
    CHECK(mbk_function_is_valid(&f));
    CHECK_INT(f.ops->n_args, 3);
    CHECK_NEAR(mbk_function_value(&f, x), 2.5, 0);
    CHECK_NEAR(mbk_function_derivative(&f, comps, 1, x), 0.0, 0);
    CHECK_NEAR(mbk_function_derivative(&f, comps, 2, x), 0.0, 0);
    CHECK_NEAR(mbk_function_derivative(&f, NULL, 0, x), 2.5, 0);
    CHECK_INT(mbk_function_check(&f, 2), MBK_OK);
    mbk_function_destroy(&f);
    CHECK(f.ops == NULL && f.impl == NULL);

    /* No arguments: x may be NULL, and no derivative component can exist. */
    mbk_function g = mbk_function_constant(-1.0, 0);
    CHECK_NEAR(mbk_function_value(&g, NULL), -1.0, 0);
    check_nan_einval(mbk_function_derivative(&g, comps, 1, NULL));
    mbk_function_destroy(&g);
}

static void test_linear(void)
{
    const double coef[4] = {2.0, -3.0, 0.5, 4.0}; /* 2x0 - 3x1 + 0.5x2 + 4 */
    mbk_function f = mbk_function_linear(coef, 3);
    const double x[3] = {1.0, 2.0, -4.0};
    CHECK(mbk_function_is_valid(&f));
    CHECK_NEAR(mbk_function_value(&f, x), 2.0 - 6.0 - 2.0 + 4.0, 1e-15);
    /* First partials are the slopes, and match differences of the value. */
    for (int c = 0; c < 3; c++) {
        int comp[1] = {c};
        CHECK_NEAR(mbk_function_derivative(&f, comp, 1, x), coef[c], 0);
        CHECK_NEAR(mbk_function_derivative(&f, comp, 1, x), fd_derivative(&f, comp, 1, x, 1e-4),
                   1e-9);
    }
    /* Every second and third partial (mixed included) is zero, as differences confirm. */
    for (int a = 0; a < 3; a++) {
        for (int b = 0; b < 3; b++) {
            int comp[3] = {a, b, (a + b) % 3};
            CHECK_NEAR(mbk_function_derivative(&f, comp, 2, x), 0.0, 0);
            CHECK_NEAR(fd_derivative(&f, comp, 2, x, 1e-4), 0.0, 1e-9);
            CHECK_NEAR(mbk_function_derivative(&f, comp, 3, x), 0.0, 0);
            CHECK_NEAR(fd_derivative(&f, comp, 3, x, 1e-4), 0.0, 1e-9);
        }
    }
    mbk_function_destroy(&f);

    /* n_args == 0 is the constant b. */
    const double b[1] = {7.0};
    mbk_function g = mbk_function_linear(b, 0);
    CHECK_NEAR(mbk_function_value(&g, NULL), 7.0, 0);
    mbk_function_destroy(&g);
}

static void test_polynomial(void)
{
    const double coef[4] = {2.0, -3.0, 4.0, -5.0}; /* 2x^3 - 3x^2 + 4x - 5 */
    mbk_function f = mbk_function_polynomial(coef, 3);
    double x = 2.0;
    CHECK(mbk_function_is_valid(&f));
    CHECK_NEAR(mbk_function_value(&f, &x), 16.0 - 12.0 + 8.0 - 5.0, 0);
    /* Exact derivatives: 6x^2-6x+4, 12x-6, 12, then zero. */
    CHECK_NEAR(mbk_function_derivative(&f, C0, 1, &x), 24.0 - 12.0 + 4.0, 0);
    CHECK_NEAR(mbk_function_derivative(&f, C0, 2, &x), 24.0 - 6.0, 0);
    CHECK_NEAR(mbk_function_derivative(&f, C0, 3, &x), 12.0, 0);
    CHECK_NEAR(mbk_function_derivative(&f, C0, 4, &x), 0.0, 0);
    CHECK_NEAR(mbk_function_derivative(&f, C0, 7, &x), 0.0, 0);
    const double pts[4] = {-1.5, 0.0, 0.3, 2.7};
    for (int i = 0; i < 4; i++) check_fd_1d(&f, pts[i], 3, 1e-5, 1e-7);
    mbk_function_destroy(&f);

    /* Higher degree: x^6, 5th derivative 720x, 6th 720. */
    const double c6[7] = {1, 0, 0, 0, 0, 0, 0};
    mbk_function g = mbk_function_polynomial(c6, 6);
    x = 1.5;
    CHECK_NEAR(mbk_function_derivative(&g, C0, 5, &x), 720.0 * 1.5, 0);
    CHECK_NEAR(mbk_function_derivative(&g, C0, 6, &x), 720.0, 0);
    check_fd_1d(&g, x, 6, 1e-4, 1e-6);
    mbk_function_destroy(&g);

    /* Degree 0 is a constant. */
    const double c0[1] = {3.25};
    mbk_function h = mbk_function_polynomial(c0, 0);
    CHECK_NEAR(mbk_function_value(&h, &x), 3.25, 0);
    CHECK_NEAR(mbk_function_derivative(&h, C0, 1, &x), 0.0, 0);
    mbk_function_destroy(&h);
}

static void test_sinusoid(void)
{
    const double A = 1.5, w = 2.0, p = 0.3;
    mbk_function f = mbk_function_sinusoid(A, w, p);
    double x = 0.7;
    double arg = w * x + p;
    CHECK(mbk_function_is_valid(&f));
    CHECK_NEAR(mbk_function_value(&f, &x), A * sin(arg), 1e-15);
    CHECK_NEAR(mbk_function_derivative(&f, C0, 1, &x), A * w * cos(arg), 1e-15);
    CHECK_NEAR(mbk_function_derivative(&f, C0, 2, &x), -A * w * w * sin(arg), 1e-15);
    CHECK_NEAR(mbk_function_derivative(&f, C0, 3, &x), -A * w * w * w * cos(arg), 1e-15);
    CHECK_NEAR(mbk_function_derivative(&f, C0, 4, &x), A * pow(w, 4) * sin(arg), 1e-15);
    CHECK_NEAR(mbk_function_derivative(&f, C0, 5, &x), A * pow(w, 5) * cos(arg), 1e-15);
    x = 0.0; /* sin(0.3) at the origin */
    CHECK_NEAR(mbk_function_value(&f, &x), 1.5 * 0.29552020666133955, 1e-15);
    const double pts[4] = {-2.0, 0.0, 0.7, 3.1};
    for (int i = 0; i < 4; i++) check_fd_1d(&f, pts[i], 3, 1e-5, 1e-7);
    mbk_function_destroy(&f);
}

/* Step up and down: limits, midpoint, monotonicity, C1 ends, derivatives. */
static void check_step(double y0, double y1, double x0, double x1)
{
    mbk_function f = mbk_function_step(y0, y1, x0, x1);
    CHECK(mbk_function_is_valid(&f));
    CHECK_INT(f.ops->max_derivative_order, 3);
    double lo = x0 < x1 ? x0 : x1, hi = x0 < x1 ? x1 : x0;
    double ylo = x0 < x1 ? y0 : y1, yhi = x0 < x1 ? y1 : y0;
    double t;
    /* Flat beyond the ends, exact at them, halfway at the middle. */
    t = lo - 1.0; CHECK_NEAR(mbk_function_value(&f, &t), ylo, 0);
    t = lo;       CHECK_NEAR(mbk_function_value(&f, &t), ylo, 0);
    t = hi;       CHECK_NEAR(mbk_function_value(&f, &t), yhi, 0);
    t = hi + 5.0; CHECK_NEAR(mbk_function_value(&f, &t), yhi, 0);
    t = 0.5 * (x0 + x1);
    CHECK_NEAR(mbk_function_value(&f, &t), 0.5 * (y0 + y1), 1e-14);
    t = lo - 1.0; CHECK_NEAR(mbk_function_derivative(&f, C0, 1, &t), 0.0, 0);
    t = hi + 1.0; CHECK_NEAR(mbk_function_derivative(&f, C0, 3, &t), 0.0, 0);
    /* Quarter point by hand: s = 1/4 gives 3/16 - 2/64 = 5/32 of the rise. */
    t = x0 + 0.25 * (x1 - x0);
    CHECK_NEAR(mbk_function_value(&f, &t), y0 + (y1 - y0) * 5.0 / 32.0, 1e-14);
    CHECK_NEAR(mbk_function_derivative(&f, C0, 1, &t), (y1 - y0) * 6.0 * 0.1875 / (x1 - x0),
               1e-14);
    /* Monotone from the low-x value to the high-x value. */
    int monotone = 1;
    double prev = mbk_function_value(&f, &lo);
    for (int i = 1; i <= 200; i++) {
        double u = lo + (hi - lo) * i / 200.0, v = mbk_function_value(&f, &u);
        if (yhi >= ylo ? v < prev : v > prev) monotone = 0;
        prev = v;
    }
    CHECK(monotone);
    /* C1: the slope vanishes approaching either end from inside. */
    t = lo + 1e-9 * (hi - lo); CHECK_NEAR(mbk_function_derivative(&f, C0, 1, &t), 0.0, 1e-6);
    t = hi - 1e-9 * (hi - lo); CHECK_NEAR(mbk_function_derivative(&f, C0, 1, &t), 0.0, 1e-6);
    /* Interior derivatives against differences, away from the ends. */
    for (int i = 1; i < 6; i++) check_fd_1d(&f, lo + (hi - lo) * i / 6.0, 3, 1e-6 * (hi - lo), 1e-6);
    /* Order 4 is beyond this function. */
    t = 0.5 * (x0 + x1);
    check_nan_einval(mbk_function_derivative(&f, C0, 4, &t));
    check_nan_einval(f.ops->derivative(f.impl, C0, 4, &t));
    CHECK_INT(mbk_function_check(&f, 3), MBK_OK);
    mbk_function_destroy(&f);
}

static void test_step(void)
{
    check_step(0.0, 1.0, 0.0, 1.0);
    check_step(-2.0, 3.0, 1.0, 4.0);
    check_step(5.0, 1.0, 2.0, 2.5);   /* steps down in y */
    check_step(0.0, 2.0, 3.0, 1.0);   /* x1 < x0: y1 for x <= 1, y0 for x >= 3 */
}

/* Natural spline through (0,0), (1,1), (2,0): m1 = -3 by hand. */
static void test_spline_hand(void)
{
    const double x[3] = {0, 1, 2}, y[3] = {0, 1, 0};
    mbk_function f = mbk_function_spline(x, y, 3);
    CHECK(mbk_function_is_valid(&f));
    double t = 0.5;
    CHECK_NEAR(mbk_function_value(&f, &t), 0.6875, 1e-15);
    CHECK_NEAR(mbk_function_derivative(&f, C0, 2, &t), -1.5, 1e-15);
    CHECK_NEAR(mbk_function_derivative(&f, C0, 3, &t), -3.0, 1e-15);
    t = 1.0;
    CHECK_NEAR(mbk_function_derivative(&f, C0, 2, &t), -3.0, 1e-15);
    CHECK_NEAR(mbk_function_derivative(&f, C0, 1, &t), 0.0, 1e-15);
    /* End slopes 1.5 and -1.5; straight-line extrapolation with them. */
    t = 0.0;
    CHECK_NEAR(mbk_function_derivative(&f, C0, 1, &t), 1.5, 1e-15);
    t = -1.0;
    CHECK_NEAR(mbk_function_value(&f, &t), -1.5, 1e-15);
    CHECK_NEAR(mbk_function_derivative(&f, C0, 1, &t), 1.5, 1e-15);
    CHECK_NEAR(mbk_function_derivative(&f, C0, 2, &t), 0.0, 0);
    CHECK_NEAR(mbk_function_derivative(&f, C0, 3, &t), 0.0, 0);
    t = 4.0;
    CHECK_NEAR(mbk_function_value(&f, &t), -3.0, 1e-15);
    CHECK_NEAR(mbk_function_derivative(&f, C0, 1, &t), -1.5, 1e-15);
    CHECK_NEAR(mbk_function_derivative(&f, C0, 4, &t), 0.0, 0);
    check_fd_1d(&f, -0.5, 2, 1e-5, 1e-8);
    check_fd_1d(&f, 2.5, 2, 1e-5, 1e-8);
    mbk_function_destroy(&f);

    /* Two knots give the straight line through them. */
    const double x2[2] = {1, 3}, y2[2] = {2, 6};
    mbk_function g = mbk_function_spline(x2, y2, 2);
    t = 2.5;
    CHECK_NEAR(mbk_function_value(&g, &t), 5.0, 1e-15);
    t = 0.0;
    CHECK_NEAR(mbk_function_value(&g, &t), 0.0, 1e-15);
    CHECK_NEAR(mbk_function_derivative(&g, C0, 2, &t), 0.0, 0);
    mbk_function_destroy(&g);
}

/* Irregular knots: interpolation, natural ends, C2 at knots, differences, linear exactness. */
static void test_spline_properties(void)
{
    enum { N = 7 };
    const double x[N] = {-1.0, -0.2, 0.5, 0.6, 1.8, 2.0, 3.5};
    double y[N];
    for (int i = 0; i < N; i++) y[i] = sin(1.3 * x[i]) + 0.2 * x[i] * x[i];
    mbk_function f = mbk_function_spline(x, y, N);
    CHECK(mbk_function_is_valid(&f));
    for (int i = 0; i < N; i++) CHECK_NEAR(mbk_function_value(&f, &x[i]), y[i], 1e-14);
    CHECK_NEAR(mbk_function_derivative(&f, C0, 2, &x[0]), 0.0, 1e-14);
    CHECK_NEAR(mbk_function_derivative(&f, C0, 2, &x[N - 1]), 0.0, 1e-14);
    /* Value, slope and curvature agree from both sides of each interior knot. */
    for (int i = 1; i < N - 1; i++) {
        double l = x[i] - 1e-10, r = x[i] + 1e-10;
        for (int k = 0; k <= 2; k++)
            CHECK_NEAR(mbk_function_derivative(&f, C0, k, &l),
                       mbk_function_derivative(&f, C0, k, &r), 1e-8);
    }
    /* Derivatives against differences at points inside intervals and outside the knots. */
    for (int i = 0; i < N - 1; i++) {
        check_fd_1d(&f, x[i] + 0.3 * (x[i + 1] - x[i]), 3, 1e-6, 1e-6);
        check_fd_1d(&f, x[i] + 0.8 * (x[i + 1] - x[i]), 3, 1e-6, 1e-6);
    }
    check_fd_1d(&f, -3.0, 3, 1e-5, 1e-7);
    check_fd_1d(&f, 5.0, 3, 1e-5, 1e-7);
    /* Extrapolation continues from the end value with the end slope. */
    double t = 4.5;
    CHECK_NEAR(mbk_function_value(&f, &t),
               y[N - 1] + mbk_function_derivative(&f, C0, 1, &x[N - 1]) * 1.0, 1e-13);
    double mid = 1.0;
    CHECK_NEAR(mbk_function_derivative(&f, C0, 4, &mid), 0.0, 0);
    CHECK_NEAR(mbk_function_derivative(&f, C0, 9, &mid), 0.0, 0);
    mbk_function_destroy(&f);

    /* Data on a straight line are reproduced exactly, curvature zero. */
    double yl[N];
    for (int i = 0; i < N; i++) yl[i] = 2.0 * x[i] + 1.0;
    mbk_function g = mbk_function_spline(x, yl, N);
    for (int i = 0; i <= 20; i++) {
        double u = -2.0 + 6.0 * i / 20.0;
        CHECK_NEAR(mbk_function_value(&g, &u), 2.0 * u + 1.0, 1e-13);
        CHECK_NEAR(mbk_function_derivative(&g, C0, 2, &u), 0.0, 1e-12);
    }
    mbk_function_destroy(&g);
}

static void test_bad_input(void)
{
    const double c[3] = {1, 2, 3};
    const double inc[3] = {0, 1, 2}, flat[3] = {0, 1, 1}, dec[3] = {0, 2, 1};
    const double withnan[3] = {0, NAN, 2}, withinf[3] = {1, INFINITY, 3};
    mbk_clear_error();
    check_failed(mbk_function_constant(1.0, -1));
    check_failed(mbk_function_constant(1.0, MBK_FUNCTION_MAX_ARGS + 1));
    check_failed(mbk_function_constant(NAN, 1));
    check_failed(mbk_function_linear(NULL, 2));
    check_failed(mbk_function_linear(c, -1));
    check_failed(mbk_function_linear(c, MBK_FUNCTION_MAX_ARGS + 1));
    check_failed(mbk_function_linear(withinf, 2));
    check_failed(mbk_function_polynomial(NULL, 2));
    check_failed(mbk_function_polynomial(c, -1));
    check_failed(mbk_function_polynomial(c, MBK_FUNCTION_MAX_DEGREE + 1));
    check_failed(mbk_function_polynomial(withnan, 2));
    check_failed(mbk_function_sinusoid(NAN, 1.0, 0.0));
    check_failed(mbk_function_sinusoid(1.0, NAN, 0.0));
    check_failed(mbk_function_sinusoid(1.0, 1.0, INFINITY));
    check_failed(mbk_function_step(0.0, 1.0, 2.0, 2.0));
    check_failed(mbk_function_step(NAN, 1.0, 0.0, 1.0));
    check_failed(mbk_function_step(0.0, 1.0, -INFINITY, 1.0));
    check_failed(mbk_function_step(0.0, 1.0, -1e308, 1e308)); /* width overflows */
    check_failed(mbk_function_spline(NULL, c, 3));
    check_failed(mbk_function_spline(inc, NULL, 3));
    check_failed(mbk_function_spline(inc, c, 1));
    check_failed(mbk_function_spline(inc, c, 0));
    check_failed(mbk_function_spline(flat, c, 3));
    check_failed(mbk_function_spline(dec, c, 3));
    check_failed(mbk_function_spline(withnan, c, 3));
    check_failed(mbk_function_spline(inc, withinf, 3));

    /* Bad evaluation requests: NAN plus MBK_EINVAL, from wrappers and ops alike. */
    const double lin[3] = {1, 2, 3};
    mbk_function f = mbk_function_linear(lin, 2);
    double x[2] = {1, 1};
    int out[2] = {0, 2}, neg[1] = {-1};
    check_nan_einval(mbk_function_derivative(&f, out, 2, x));
    check_nan_einval(mbk_function_derivative(&f, neg, 1, x));
    check_nan_einval(f.ops->derivative(f.impl, out, 2, x));
    check_nan_einval(mbk_function_derivative(&f, NULL, 1, x));
    check_nan_einval(mbk_function_derivative(&f, out, -1, x));
    check_nan_einval(mbk_function_value(&f, NULL));
    check_nan_einval(f.ops->value(f.impl, NULL));
    mbk_function_destroy(&f);
    double t = 0.5;
    int one[1] = {1};
    mbk_function s = mbk_function_sinusoid(1.0, 1.0, 0.0);
    check_nan_einval(mbk_function_derivative(&s, one, 1, &t));
    mbk_function_destroy(&s);

    /* Empty functions: invalid, NAN on evaluation, rejected by check, destroy is harmless. */
    mbk_function e = {NULL, NULL};
    CHECK(!mbk_function_is_valid(&e));
    CHECK(!mbk_function_is_valid(NULL));
    check_nan_einval(mbk_function_value(&e, &t));
    check_nan_einval(mbk_function_derivative(&e, C0, 1, &t));
    CHECK_INT(mbk_function_check(&e, 0), MBK_EINVAL);
    CHECK(strlen(mbk_last_error()) > 0);
    mbk_function_destroy(&e);
    mbk_function_destroy(NULL);
    CHECK(e.ops == NULL && e.impl == NULL);
}

/* A user function with only a value op: valid for order 0, rejected by check for order 2. */
static double user_value(const void *impl, const double *x) { (void)impl; return 2.0 * x[0]; }

static void test_check(void)
{
    static const mbk_function_ops value_only = {1, 0, user_value, NULL, NULL};
    mbk_function u = {&value_only, NULL};
    double t = 3.0;
    CHECK(mbk_function_is_valid(&u));
    CHECK_INT(mbk_function_check(&u, 0), MBK_OK);
    CHECK_INT(mbk_function_check(&u, 2), MBK_EINVAL);
    CHECK(strlen(mbk_last_error()) > 0);
    CHECK_NEAR(mbk_function_derivative(&u, NULL, 0, &t), 6.0, 0);
    check_nan_einval(mbk_function_derivative(&u, C0, 1, &t));
    mbk_function_destroy(&u); /* no destroy op: only zeroed */
    CHECK(u.ops == NULL);

    mbk_function st = mbk_function_step(0, 1, 0, 1);
    CHECK_INT(mbk_function_check(&st, 2), MBK_OK);
    CHECK_INT(mbk_function_check(&st, 4), MBK_EINVAL);
    CHECK_INT(mbk_function_check(&st, -1), MBK_EINVAL);
    mbk_function_destroy(&st);
}

/* Counting hooks to see every block freed and to simulate running out of memory. */
static long live_blocks;
static int allocations_left = -1; /* fail once this reaches 0; -1 never fails */
static void *count_malloc(size_t n, void *u)
{
    (void)u;
    if (allocations_left == 0) return NULL;
    if (allocations_left > 0) allocations_left--;
    live_blocks++;
    return malloc(n);
}
static void *count_realloc(void *p, size_t n, void *u) { (void)u; return realloc(p, n); }
static void count_free(void *p, void *u)
{
    (void)u;
    if (p) live_blocks--;
    free(p);
}

static void test_allocation(void)
{
    mbk_set_allocator(count_malloc, count_realloc, count_free, NULL);
    const double lin[3] = {1, 2, 3}, poly[3] = {1, -1, 2};
    const double kx[4] = {0, 1, 2, 4}, ky[4] = {1, 3, 2, 0};
    mbk_function fs[6] = {
        mbk_function_constant(1.0, 2), mbk_function_linear(lin, 2),
        mbk_function_polynomial(poly, 2), mbk_function_sinusoid(1, 2, 3),
        mbk_function_step(0, 1, 0, 1), mbk_function_spline(kx, ky, 4)};
    /* A batch of evaluations (values and derivatives of every order used) allocates nothing. */
    long before = mbk_get_allocation_count();
    double sum = 0.0;
    for (int i = 0; i < 6; i++) {
        for (int j = 0; j < 50; j++) {
            double x[2] = {-1.0 + 0.1 * j, 0.5};
            int n = fs[i].ops->n_args;
            sum += mbk_function_value(&fs[i], x);
            for (int k = 1; k <= 3 && n > 0; k++) sum += mbk_function_derivative(&fs[i], C0, k, x);
        }
    }
    CHECK_INT(mbk_get_allocation_count(), before);
    CHECK(isfinite(sum));
    for (int i = 0; i < 6; i++) mbk_function_destroy(&fs[i]);
    CHECK_INT(live_blocks, 0);

    /* Out of memory at the spline's first or second block: empty function, MBK_ENOMEM, no leak. */
    for (int left = 0; left < 2; left++) {
        allocations_left = left;
        mbk_function f = mbk_function_spline(kx, ky, 4);
        CHECK(f.ops == NULL && f.impl == NULL);
        CHECK_INT(mbk_last_status(), MBK_ENOMEM);
        mbk_clear_error();
        CHECK_INT(live_blocks, 0);
    }
    allocations_left = 0;
    mbk_function g = mbk_function_linear(lin, 2);
    CHECK(g.ops == NULL && g.impl == NULL);
    CHECK_INT(mbk_last_status(), MBK_ENOMEM);
    mbk_clear_error();
    allocations_left = -1;
    mbk_set_allocator(NULL, NULL, NULL, NULL);
}

int main(void)
{
    test_constant();
    test_linear();
    test_polynomial();
    test_sinusoid();
    test_step();
    test_spline_hand();
    test_spline_properties();
    test_bad_input();
    test_check();
    test_allocation();
    return mbk_test_finish();
}
