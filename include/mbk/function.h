/* mbk/function.h - scalar functions of n arguments with partial derivatives.
 *
 * Used by function-based mobilizers, coordinate couplers and prescribed
 * motion, which need derivatives of order >= 2. A function is an ops table
 * plus an implementation pointer; the built-ins below each own one block of
 * memory that mbk_function_destroy() releases.
 *
 * Derivatives: derivative(impl, components, order, x) is the partial
 * derivative of the given order; components[k] (0 <= k < order) is the
 * argument index differentiated at step k, as in Simbody's
 * Function::calcDerivative(derivComponents, x). Order 0 means the value
 * (components may then be NULL).
 *
 * Errors: a constructor given bad input returns a function with ops == NULL
 * and impl == NULL and records MBK_EINVAL (MBK_ENOMEM if allocation failed);
 * mbk_last_error() says what was wrong. Evaluating with a NULL x (when
 * n_args > 0), a negative order, an order above max_derivative_order, a NULL
 * components array or a component outside [0, n_args) returns NAN and
 * records MBK_EINVAL; this holds for the wrappers below and for the
 * built-ins' derivative ops called directly. NaN arguments propagate to a NaN
 * result without an error. Evaluation never allocates and is safe to run
 * concurrently on one function from several threads. Successful calls do not
 * clear an earlier error. */
#ifndef MBK_FUNCTION_H
#define MBK_FUNCTION_H

#include <limits.h>
#include <stdbool.h>

/* Declarations here are the public API: exported from the shared library, whose
   other symbols are hidden (CMakeLists.txt, "symbol visibility"). */
#if defined(__GNUC__)
#pragma GCC visibility push(default)
#endif
#ifdef __cplusplus
extern "C" {
#endif

/* max_derivative_order of functions whose derivatives of every order exist. */
#define MBK_FUNCTION_ANY_ORDER INT_MAX
/* Largest n_args accepted by mbk_function_constant and mbk_function_linear. */
#define MBK_FUNCTION_MAX_ARGS 1024
/* Largest degree accepted by mbk_function_polynomial. */
#define MBK_FUNCTION_MAX_DEGREE 1024
/* Largest number of knots accepted by mbk_function_spline. */
#define MBK_FUNCTION_MAX_KNOTS (1 << 24)

typedef struct mbk_function_ops {
    int n_args;               /* number of arguments, >= 0 */
    int max_derivative_order; /* highest derivative order supported (>= 2 for constraints) */
    double (*value)(const void *impl, const double *x);        /* f(x), x holds n_args numbers */
    double (*derivative)(const void *impl, const int *components, int order,
                         const double *x);                     /* partial derivative, see above */
    void (*destroy)(void *impl);                               /* frees impl (may be NULL) */
} mbk_function_ops;

typedef struct mbk_function {
    const mbk_function_ops *ops; /* behaviour; NULL for an empty/failed function */
    void *impl;                  /* data passed to every op; owned by the function */
} mbk_function;

/* f(x) = value for n_args in [0, MBK_FUNCTION_MAX_ARGS]; every derivative is 0. */
mbk_function mbk_function_constant(double value, int n_args);
/* f(x) = a.x + b with a = coefficients[0..n_args-1], b = coefficients[n_args]; n_args in [0, MAX_ARGS]. */
mbk_function mbk_function_linear(const double *coefficients, int n_args);
/* One argument: coefficients[0] x^degree + ... + coefficients[degree] (highest power
   first, like Simbody's Polynomial; degree+1 numbers); derivatives of any order, exact. */
mbk_function mbk_function_polynomial(const double *coefficients, int degree);
/* One argument: amplitude * sin(frequency * x + phase); derivatives of any order. */
mbk_function mbk_function_sinusoid(double amplitude, double frequency, double phase);
/* One argument, like Simbody's Function::Step: with s = (x - x0)/(x1 - x0), f = y0 for
   s <= 0, y1 for s >= 1, y0 + (y1 - y0)(3s^2 - 2s^3) between; x1 < x0 steps the other
   way (y1 for x <= x1, y0 for x >= x0). Only C1: value and first derivative are
   continuous, the second derivative jumps at x0 and x1, the third is a nonzero
   constant between them and 0 outside. Derivatives to order 3; at s == 0 and s == 1
   exactly they are the outer (zero) values. */
mbk_function mbk_function_step(double y0, double y1, double x0, double x1);
/* One argument: natural cubic spline (second derivative 0 at both ends) through
   (x[i], y[i]), n in [2, MAX_KNOTS], x finite and strictly increasing, y finite; the
   data are copied. Outside [x[0], x[n-1]] it continues as the straight line with
   the end value and end slope (so value, first and second derivatives stay
   continuous there). Derivatives of any order (zero beyond 3); the third derivative
   is piecewise constant and at a knot takes the value of the interval to its right
   (of the last interval at x[n-1]). */
mbk_function mbk_function_spline(const double *x, const double *y, int n);

/* Call ops->destroy (if any) on impl, then zero *f; NULL-safe and safe on empty functions. */
void mbk_function_destroy(mbk_function *f);
/* f(x); NAN and MBK_EINVAL if f is not valid or x is NULL while n_args > 0. */
double mbk_function_value(const mbk_function *f, const double *x);
/* Partial derivative (see above); NAN and MBK_EINVAL on a bad request. */
double mbk_function_derivative(const mbk_function *f, const int *components, int order,
                               const double *x);
/* True if f has ops with a value op, sane counts, and a derivative op when max order > 0. */
bool mbk_function_is_valid(const mbk_function *f);
/* MBK_OK if f is valid and supports derivatives up to min_order, else MBK_EINVAL with a message. */
int mbk_function_check(const mbk_function *f, int min_order);

#ifdef __cplusplus
}
#endif
#if defined(__GNUC__)
#pragma GCC visibility pop
#endif
#endif
