/* Function library: constant, linear, polynomial, sinusoid, step and natural
 * cubic spline, with partial derivatives. Each built-in owns one block that
 * holds its data (and its ops table when n_args varies); evaluation only
 * reads that block and never allocates. */
#include "mbk/function.h"

#include "mbk/alloc.h"
#include "mbk/status.h"

#include <math.h>
#include <stddef.h>
#include <string.h>

/* ---- shared helpers ---------------------------------------------------- */

/* The value every failed constructor returns. */
static mbk_function empty_function(void)
{
    mbk_function f = {NULL, NULL};
    return f;
}

/* Every built-in keeps everything in one block, so destroy is a single free. */
static void free_impl(void *impl) { mbk_free(impl); }

/* Arguments must be readable whenever the function has any. */
static bool args_ok(const double *x, int n_args)
{
    if (n_args > 0 && !x) {
        mbk_set_error(MBK_EINVAL, "function of %d argument(s) evaluated with x == NULL; "
                      "pass an array of %d numbers", n_args, n_args);
        return false;
    }
    return true;
}

/* One check of a derivative request, shared by the wrappers and every built-in op. */
static bool request_ok(int n_args, int max_order, const int *components, int order,
                       const double *x)
{
    if (order < 0 || order > max_order) {
        mbk_set_error(MBK_EINVAL, "derivative order %d requested but this function supports "
                      "orders 0..%d; use a function with enough derivatives "
                      "(see mbk_function_check)", order, max_order);
        return false;
    }
    if (order > 0 && !components) {
        mbk_set_error(MBK_EINVAL, "derivative of order %d requested with components == NULL; "
                      "pass %d argument indices", order, order);
        return false;
    }
    /* Every differentiation step must name an existing argument. */
    for (int k = 0; k < order; k++) {
        if (components[k] < 0 || components[k] >= n_args) {
            mbk_set_error(MBK_EINVAL, "derivative component %d at step %d is outside "
                          "[0, %d); pass argument indices of this function",
                          components[k], k, n_args);
            return false;
        }
    }
    return args_ok(x, n_args);
}

/* ---- constant ---------------------------------------------------------- */

/* Ops live in the block because n_args varies per instance. */
typedef struct constant_impl {
    mbk_function_ops ops; /* this function's ops table */
    double value;         /* the constant */
} constant_impl;

static double constant_value(const void *impl, const double *x)
{
    const constant_impl *c = impl;
    if (!args_ok(x, c->ops.n_args)) return NAN;
    return c->value;
}

static double constant_derivative(const void *impl, const int *components, int order,
                                  const double *x)
{
    const constant_impl *c = impl;
    if (!request_ok(c->ops.n_args, c->ops.max_derivative_order, components, order, x))
        return NAN;
    return order == 0 ? c->value : 0.0;
}

mbk_function mbk_function_constant(double value, int n_args)
{
    if (n_args < 0 || n_args > MBK_FUNCTION_MAX_ARGS) {
        mbk_set_error(MBK_EINVAL, "mbk_function_constant: n_args = %d is outside [0, %d]; "
                      "pass the number of arguments", n_args, MBK_FUNCTION_MAX_ARGS);
        return empty_function();
    }
    if (!isfinite(value)) {
        mbk_set_error(MBK_EINVAL, "mbk_function_constant: value is %g; pass a finite number",
                      value);
        return empty_function();
    }
    constant_impl *c = mbk_malloc(sizeof *c);
    if (!c) return empty_function();
    c->ops.n_args = n_args;
    c->ops.max_derivative_order = MBK_FUNCTION_ANY_ORDER;
    c->ops.value = constant_value;
    c->ops.derivative = constant_derivative;
    c->ops.destroy = free_impl;
    c->value = value;
    mbk_function f = {&c->ops, c};
    return f;
}

/* ---- linear ------------------------------------------------------------ */

/* Ops live in the block because n_args varies per instance. */
typedef struct linear_impl {
    mbk_function_ops ops; /* this function's ops table (n_args = number of slopes) */
    double c[];           /* slopes a[0..n_args-1], then the offset b */
} linear_impl;

static double linear_value(const void *impl, const double *x)
{
    const linear_impl *l = impl;
    int n = l->ops.n_args;
    if (!args_ok(x, n)) return NAN;
    double sum = l->c[n];
    for (int i = 0; i < n; i++) sum += l->c[i] * x[i];
    return sum;
}

static double linear_derivative(const void *impl, const int *components, int order,
                                const double *x)
{
    const linear_impl *l = impl;
    if (!request_ok(l->ops.n_args, l->ops.max_derivative_order, components, order, x))
        return NAN;
    /* Only first partials survive; they are the slopes. */
    if (order == 0) return linear_value(impl, x);
    return order == 1 ? l->c[components[0]] : 0.0;
}

mbk_function mbk_function_linear(const double *coefficients, int n_args)
{
    if (!coefficients) {
        mbk_set_error(MBK_EINVAL, "mbk_function_linear: coefficients == NULL; pass n_args "
                      "slopes followed by the offset");
        return empty_function();
    }
    if (n_args < 0 || n_args > MBK_FUNCTION_MAX_ARGS) {
        mbk_set_error(MBK_EINVAL, "mbk_function_linear: n_args = %d is outside [0, %d]; "
                      "pass the number of arguments", n_args, MBK_FUNCTION_MAX_ARGS);
        return empty_function();
    }
    /* Reject non-finite coefficients up front so evaluation never has to. */
    for (int i = 0; i <= n_args; i++) {
        if (!isfinite(coefficients[i])) {
            mbk_set_error(MBK_EINVAL, "mbk_function_linear: coefficients[%d] is %g; pass "
                          "finite numbers", i, coefficients[i]);
            return empty_function();
        }
    }
    linear_impl *l = mbk_malloc(sizeof *l + (size_t)(n_args + 1) * sizeof(double));
    if (!l) return empty_function();
    l->ops.n_args = n_args;
    l->ops.max_derivative_order = MBK_FUNCTION_ANY_ORDER;
    l->ops.value = linear_value;
    l->ops.derivative = linear_derivative;
    l->ops.destroy = free_impl;
    memcpy(l->c, coefficients, (size_t)(n_args + 1) * sizeof(double));
    mbk_function f = {&l->ops, l};
    return f;
}

/* ---- polynomial -------------------------------------------------------- */

typedef struct polynomial_impl {
    int degree; /* highest power */
    double c[]; /* degree+1 coefficients, highest power first */
} polynomial_impl;

/* p!/(p-k)!: the factor the k-th derivative puts on x^p; exact while it fits a double. */
static double falling_factorial(int p, int k)
{
    double r = 1.0;
    for (int j = 0; j < k; j++) r *= (double)(p - j);
    return r;
}

/* k-th derivative by Horner's rule on the differentiated coefficients. */
static double polynomial_eval(const polynomial_impl *p, int k, double x)
{
    if (k > p->degree) return 0.0;
    double acc = 0.0;
    for (int i = 0; i <= p->degree - k; i++)
        acc = acc * x + p->c[i] * falling_factorial(p->degree - i, k);
    return acc;
}

static double polynomial_value(const void *impl, const double *x)
{
    if (!args_ok(x, 1)) return NAN;
    return polynomial_eval(impl, 0, x[0]);
}

static double polynomial_derivative(const void *impl, const int *components, int order,
                                    const double *x)
{
    if (!request_ok(1, MBK_FUNCTION_ANY_ORDER, components, order, x)) return NAN;
    return polynomial_eval(impl, order, x[0]);
}

static const mbk_function_ops polynomial_ops = {
    1, MBK_FUNCTION_ANY_ORDER, polynomial_value, polynomial_derivative, free_impl};

mbk_function mbk_function_polynomial(const double *coefficients, int degree)
{
    if (!coefficients) {
        mbk_set_error(MBK_EINVAL, "mbk_function_polynomial: coefficients == NULL; pass "
                      "degree+1 coefficients, highest power first");
        return empty_function();
    }
    if (degree < 0 || degree > MBK_FUNCTION_MAX_DEGREE) {
        mbk_set_error(MBK_EINVAL, "mbk_function_polynomial: degree = %d is outside [0, %d]",
                      degree, MBK_FUNCTION_MAX_DEGREE);
        return empty_function();
    }
    /* Reject non-finite coefficients up front so evaluation never has to. */
    for (int i = 0; i <= degree; i++) {
        if (!isfinite(coefficients[i])) {
            mbk_set_error(MBK_EINVAL, "mbk_function_polynomial: coefficients[%d] is %g; pass "
                          "finite numbers", i, coefficients[i]);
            return empty_function();
        }
    }
    polynomial_impl *p = mbk_malloc(sizeof *p + (size_t)(degree + 1) * sizeof(double));
    if (!p) return empty_function();
    p->degree = degree;
    memcpy(p->c, coefficients, (size_t)(degree + 1) * sizeof(double));
    mbk_function f = {&polynomial_ops, p};
    return f;
}

/* ---- sinusoid ---------------------------------------------------------- */

typedef struct sinusoid_impl {
    double amplitude; /* A */
    double frequency; /* w, radians per unit of x */
    double phase;     /* radians */
} sinusoid_impl;

/* d^k/dx^k A sin(wx+p) = A w^k sin(wx+p+k*pi/2); pick sin/cos by k mod 4 to stay exact. */
static double sinusoid_eval(const sinusoid_impl *s, int k, double x)
{
    double arg = s->frequency * x + s->phase;
    double scale = s->amplitude * (k == 0 ? 1.0 : pow(s->frequency, (double)k));
    switch (k % 4) {
    case 0: return scale * sin(arg);
    case 1: return scale * cos(arg);
    case 2: return -scale * sin(arg);
    default: return -scale * cos(arg);
    }
}

static double sinusoid_value(const void *impl, const double *x)
{
    if (!args_ok(x, 1)) return NAN;
    return sinusoid_eval(impl, 0, x[0]);
}

static double sinusoid_derivative(const void *impl, const int *components, int order,
                                  const double *x)
{
    if (!request_ok(1, MBK_FUNCTION_ANY_ORDER, components, order, x)) return NAN;
    return sinusoid_eval(impl, order, x[0]);
}

static const mbk_function_ops sinusoid_ops = {
    1, MBK_FUNCTION_ANY_ORDER, sinusoid_value, sinusoid_derivative, free_impl};

mbk_function mbk_function_sinusoid(double amplitude, double frequency, double phase)
{
    if (!isfinite(amplitude) || !isfinite(frequency) || !isfinite(phase)) {
        mbk_set_error(MBK_EINVAL, "mbk_function_sinusoid: amplitude %g, frequency %g, "
                      "phase %g; all three must be finite", amplitude, frequency, phase);
        return empty_function();
    }
    sinusoid_impl *s = mbk_malloc(sizeof *s);
    if (!s) return empty_function();
    s->amplitude = amplitude;
    s->frequency = frequency;
    s->phase = phase;
    mbk_function f = {&sinusoid_ops, s};
    return f;
}

/* ---- step -------------------------------------------------------------- */

#define STEP_MAX_ORDER 3

typedef struct step_impl {
    double y0; /* value for s <= 0 */
    double y1; /* value for s >= 1 */
    double x0; /* where s = 0 */
    double h;  /* x1 - x0, nonzero (negative for a step the other way) */
} step_impl;

/* k-th derivative of y0 + (y1-y0)(3s^2-2s^3), s = (x-x0)/h; flat (zero slope) outside (0,1). */
static double step_eval(const step_impl *st, int k, double x)
{
    double s = (x - st->x0) / st->h;
    if (isnan(s)) return NAN;
    if (s <= 0.0) return k == 0 ? st->y0 : 0.0;
    if (s >= 1.0) return k == 0 ? st->y1 : 0.0;
    double dy = st->y1 - st->y0;
    switch (k) {
    case 0: return st->y0 + dy * s * s * (3.0 - 2.0 * s);
    case 1: return dy * 6.0 * s * (1.0 - s) / st->h;
    case 2: return dy * (6.0 - 12.0 * s) / (st->h * st->h);
    default: return dy * -12.0 / (st->h * st->h * st->h);
    }
}

static double step_value(const void *impl, const double *x)
{
    if (!args_ok(x, 1)) return NAN;
    return step_eval(impl, 0, x[0]);
}

static double step_derivative(const void *impl, const int *components, int order,
                              const double *x)
{
    if (!request_ok(1, STEP_MAX_ORDER, components, order, x)) return NAN;
    return step_eval(impl, order, x[0]);
}

static const mbk_function_ops step_ops = {
    1, STEP_MAX_ORDER, step_value, step_derivative, free_impl};

mbk_function mbk_function_step(double y0, double y1, double x0, double x1)
{
    if (!isfinite(y0) || !isfinite(y1) || !isfinite(x0) || !isfinite(x1) ||
        !isfinite(y1 - y0) || !isfinite(x1 - x0)) {
        mbk_set_error(MBK_EINVAL, "mbk_function_step: y0 %g, y1 %g, x0 %g, x1 %g; all must "
                      "be finite with finite differences", y0, y1, x0, x1);
        return empty_function();
    }
    if (x0 == x1) {
        mbk_set_error(MBK_EINVAL, "mbk_function_step: x0 == x1 == %g; the transition needs "
                      "a nonzero width (x1 < x0 gives a step the other way)", x0);
        return empty_function();
    }
    step_impl *st = mbk_malloc(sizeof *st);
    if (!st) return empty_function();
    st->y0 = y0;
    st->y1 = y1;
    st->x0 = x0;
    st->h = x1 - x0;
    mbk_function f = {&step_ops, st};
    return f;
}

/* ---- natural cubic spline ---------------------------------------------- */

typedef struct spline_impl {
    int n;         /* number of knots, >= 2 */
    double data[]; /* x[0..n-1], then y[0..n-1], then second derivatives m[0..n-1] */
} spline_impl;

/* Index i of the interval [x[i], x[i+1]] holding t (t within the knots; last interval at the end). */
static int spline_interval(const double *xs, int n, double t)
{
    int lo = 0, hi = n - 1;
    while (hi - lo > 1) {
        int mid = lo + (hi - lo) / 2;
        if (t >= xs[mid]) lo = mid;
        else hi = mid;
    }
    return lo;
}

/* k-th derivative of the cubic on interval i, in the symmetric form of Numerical Recipes. */
static double spline_segment(const spline_impl *sp, int i, int k, double t)
{
    const double *xs = sp->data, *ys = xs + sp->n, *m = ys + sp->n;
    double h = xs[i + 1] - xs[i];
    double a = (xs[i + 1] - t) / h, b = (t - xs[i]) / h;
    switch (k) {
    case 0:
        return a * ys[i] + b * ys[i + 1] +
               ((a * a * a - a) * m[i] + (b * b * b - b) * m[i + 1]) * h * h / 6.0;
    case 1:
        return (ys[i + 1] - ys[i]) / h - (3.0 * a * a - 1.0) * h * m[i] / 6.0 +
               (3.0 * b * b - 1.0) * h * m[i + 1] / 6.0;
    case 2: return a * m[i] + b * m[i + 1];
    case 3: return (m[i + 1] - m[i]) / h;
    default: return 0.0;
    }
}

/* Inside the knots use the cubic; outside continue the end value along the end slope. */
static double spline_eval(const spline_impl *sp, int k, double t)
{
    const double *xs = sp->data;
    int n = sp->n;
    if (isnan(t)) return NAN;
    if (t < xs[0] || t > xs[n - 1]) {
        int end = t < xs[0] ? 0 : n - 1;
        int seg = t < xs[0] ? 0 : n - 2;
        double slope = spline_segment(sp, seg, 1, xs[end]);
        if (k == 0) return xs[n + end] + slope * (t - xs[end]);
        return k == 1 ? slope : 0.0;
    }
    return spline_segment(sp, spline_interval(xs, n, t), k, t);
}

static double spline_value(const void *impl, const double *x)
{
    if (!args_ok(x, 1)) return NAN;
    return spline_eval(impl, 0, x[0]);
}

static double spline_derivative(const void *impl, const int *components, int order,
                                const double *x)
{
    if (!request_ok(1, MBK_FUNCTION_ANY_ORDER, components, order, x)) return NAN;
    return spline_eval(impl, order, x[0]);
}

static const mbk_function_ops spline_ops = {
    1, MBK_FUNCTION_ANY_ORDER, spline_value, spline_derivative, free_impl};

/* Knots must be finite with strictly increasing x and finite gaps; records the error. */
static bool spline_data_ok(const double *x, const double *y, int n)
{
    for (int i = 0; i < n; i++) {
        if (!isfinite(x[i]) || !isfinite(y[i])) {
            mbk_set_error(MBK_EINVAL, "mbk_function_spline: knot %d is (%g, %g); pass finite "
                          "numbers", i, x[i], y[i]);
            return false;
        }
        if (i > 0 && !(x[i] > x[i - 1] && isfinite(x[i] - x[i - 1]))) {
            mbk_set_error(MBK_EINVAL, "mbk_function_spline: x[%d] = %g does not exceed "
                          "x[%d] = %g; x must be strictly increasing", i, x[i], i - 1, x[i - 1]);
            return false;
        }
    }
    return true;
}

/* Natural end conditions leave a tridiagonal, diagonally dominant system for the
   interior second derivatives; solve it with the Thomas algorithm (scratch = n doubles). */
static void spline_solve(const double *x, const double *y, int n, double *m, double *scratch)
{
    m[0] = m[n - 1] = 0.0;
    /* Forward sweep: m[i] holds the modified right side, scratch[i] the modified super-diagonal. */
    for (int i = 1; i < n - 1; i++) {
        double hl = x[i] - x[i - 1], hr = x[i + 1] - x[i];
        double rhs = 6.0 * ((y[i + 1] - y[i]) / hr - (y[i] - y[i - 1]) / hl);
        double diag = 2.0 * (hl + hr) - (i > 1 ? hl * scratch[i - 1] : 0.0);
        scratch[i] = hr / diag;
        m[i] = (rhs - (i > 1 ? hl * m[i - 1] : 0.0)) / diag;
    }
    /* Back substitution; the last interior unknown has no super-diagonal neighbour. */
    for (int i = n - 3; i >= 1; i--) m[i] -= scratch[i] * m[i + 1];
}

mbk_function mbk_function_spline(const double *x, const double *y, int n)
{
    if (!x || !y) {
        mbk_set_error(MBK_EINVAL, "mbk_function_spline: x or y is NULL; pass n knot "
                      "abscissae and ordinates");
        return empty_function();
    }
    if (n < 2 || n > MBK_FUNCTION_MAX_KNOTS) {
        mbk_set_error(MBK_EINVAL, "mbk_function_spline: n = %d knots; a spline needs "
                      "between 2 and %d", n, MBK_FUNCTION_MAX_KNOTS);
        return empty_function();
    }
    if (!spline_data_ok(x, y, n)) return empty_function();
    size_t nn = (size_t)n;
    spline_impl *sp = mbk_malloc(sizeof *sp + 3 * nn * sizeof(double));
    if (!sp) return empty_function();
    double *scratch = mbk_malloc(nn * sizeof(double));
    if (!scratch) {
        mbk_free(sp);
        return empty_function();
    }
    sp->n = n;
    memcpy(sp->data, x, nn * sizeof(double));
    memcpy(sp->data + nn, y, nn * sizeof(double));
    double *m = sp->data + 2 * nn;
    spline_solve(x, y, n, m, scratch);
    mbk_free(scratch);
    /* Extreme data can overflow the solve; refuse rather than return a NaN spline. */
    for (int i = 0; i < n; i++) {
        if (!isfinite(m[i])) {
            mbk_free(sp);
            mbk_set_error(MBK_EINVAL, "mbk_function_spline: the data overflow the spline "
                          "solve (second derivative at knot %d is %g); rescale x or y", i, m[i]);
            return empty_function();
        }
    }
    mbk_function f = {&spline_ops, sp};
    return f;
}

/* ---- generic interface ------------------------------------------------- */

void mbk_function_destroy(mbk_function *f)
{
    if (!f) return;
    /* Read destroy first: the ops table may live inside impl. */
    void (*destroy)(void *) = f->ops ? f->ops->destroy : NULL;
    if (destroy) destroy(f->impl);
    f->ops = NULL;
    f->impl = NULL;
}

bool mbk_function_is_valid(const mbk_function *f)
{
    if (!f || !f->ops || !f->ops->value) return false;
    const mbk_function_ops *o = f->ops;
    if (o->n_args < 0 || o->max_derivative_order < 0) return false;
    return o->max_derivative_order == 0 || o->derivative != NULL;
}

/* Shared rejection of unusable functions by the evaluation wrappers. */
static bool function_ok(const mbk_function *f)
{
    if (mbk_function_is_valid(f)) return true;
    mbk_set_error(MBK_EINVAL, "function is empty or malformed (NULL ops or value op); "
                  "create it with an mbk_function_* constructor and check for failure");
    return false;
}

double mbk_function_value(const mbk_function *f, const double *x)
{
    if (!function_ok(f) || !args_ok(x, f->ops->n_args)) return NAN;
    return f->ops->value(f->impl, x);
}

double mbk_function_derivative(const mbk_function *f, const int *components, int order,
                               const double *x)
{
    if (!function_ok(f)) return NAN;
    const mbk_function_ops *o = f->ops;
    if (!request_ok(o->n_args, o->max_derivative_order, components, order, x)) return NAN;
    /* Order 0 is the value, so user ops need not handle it. */
    return order == 0 ? o->value(f->impl, x) : o->derivative(f->impl, components, order, x);
}

int mbk_function_check(const mbk_function *f, int min_order)
{
    if (min_order < 0)
        return mbk_set_error(MBK_EINVAL, "mbk_function_check: min_order = %d is negative",
                             min_order);
    if (!function_ok(f)) return MBK_EINVAL;
    if (f->ops->max_derivative_order < min_order)
        return mbk_set_error(MBK_EINVAL, "function supports derivatives up to order %d but "
                             "order %d is needed; use a smoother function (polynomial, "
                             "sinusoid, spline)", f->ops->max_derivative_order, min_order);
    return MBK_OK;
}
