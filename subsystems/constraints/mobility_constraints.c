/* Built-in constraints on coordinates and speeds: ConstantSpeed,
 * ConstantAcceleration, CoordinateCoupler, SpeedCoupler, PrescribedMotion.
 * Multipliers act as generalized forces on the constrained mobilities. The
 * coordinate-level ones need qdot = u on their coordinates (Pin, Slider,
 * Gimbal, ...): checked when they are added. */
#include <math.h>
#include <string.h>

#include "mbk/alloc.h"
#include "mbk/status.h"
#include "constraints_impl.h"

/* ---- ConstantSpeed (verr = u - s) and ConstantAcceleration (aerr = udot - a) ---------- */

typedef struct constant_value { double value; } constant_value;

static int cs_verr(void *impl, const mbk_constraint_args *a, double *e)
{
    *e = mbk_constraint_get_u(a, 0) - ((const constant_value *)impl)->value;
    return 0;
}

static int cs_vaerr(void *impl, const mbk_constraint_args *a, double *e)
{
    (void)impl;
    *e = mbk_constraint_get_udot(a, 0);
    return 0;
}

static int cacc_aerr(void *impl, const mbk_constraint_args *a, double *e)
{
    *e = mbk_constraint_get_udot(a, 0) - ((const constant_value *)impl)->value;
    return 0;
}

/* One multiplier as a generalized force on the one mobility. */
static int single_force(void *impl, const mbk_constraint_args *a, const double *l, mbk_spatial_vec *F, double *mf)
{
    (void)impl; (void)F;
    mbk_constraint_add_mobility_force(a, 0, l[0], mf);
    return 0;
}

static void free_impl(void *impl) { mbk_free(impl); }

static const mbk_constraint_ops speed_ops = {"ConstantSpeed", 0, 1, 0, NULL, NULL, NULL, NULL, cs_verr, cs_vaerr,
                                             single_force, NULL, NULL, free_impl};
static const mbk_constraint_ops acceleration_ops = {"ConstantAcceleration", 0, 0, 1, NULL, NULL, NULL, NULL, NULL,
                                                    NULL, NULL, cacc_aerr, single_force, free_impl};

/* ---- functions of the constrained mobilities ---------------------------------------- */

typedef struct coupler {
    mbk_function f; /* owned */
    int n;          /* arguments = constrained mobilities */
} coupler;

static void coupler_destroy(void *impl)
{
    coupler *c = impl;
    mbk_function_destroy(&c->f);
    mbk_free(c);
}

/* Gather q (which 0), u (1) of the constrained mobilities. */
static void gather(const mbk_constraint_args *a, int n, int which, double *x)
{
    for (int j = 0; j < n; ++j) x[j] = which ? mbk_constraint_get_u(a, j) : mbk_constraint_get_q(a, j);
}

static double d1(const coupler *c, const double *x, int i)
{
    return mbk_function_derivative(&c->f, &i, 1, x);
}

/* CoordinateCoupler: perr = f(q), pverr = sum df/dq_i qdot_i,
   paerr = sum df/dq_i qdotdot_i + sum d2f/dq_i dq_j qdot_i qdot_j. */
static int cc_perr(void *impl, const mbk_constraint_args *a, double *e)
{
    const coupler *c = impl;
    double q[CT_MAX_BODIES];
    gather(a, c->n, 0, q);
    *e = mbk_function_value(&c->f, q);
    return 0;
}

static int cc_pverr(void *impl, const mbk_constraint_args *a, double *e)
{
    const coupler *c = impl;
    double q[CT_MAX_BODIES];
    gather(a, c->n, 0, q);
    *e = 0;
    for (int i = 0; i < c->n; ++i) *e += d1(c, q, i) * mbk_constraint_get_qdot(a, i);
    return 0;
}

static int cc_paerr(void *impl, const mbk_constraint_args *a, double *e)
{
    const coupler *c = impl;
    double q[CT_MAX_BODIES], qd[CT_MAX_BODIES];
    gather(a, c->n, 0, q);
    for (int i = 0; i < c->n; ++i) qd[i] = mbk_constraint_get_qdot(a, i);
    *e = 0;
    for (int i = 0; i < c->n; ++i) {
        *e += d1(c, q, i) * mbk_constraint_get_qdotdot(a, i);
        for (int j = 0; j < c->n; ++j) {
            const int comp[2] = {i, j};
            *e += mbk_function_derivative(&c->f, comp, 2, q) * qd[i] * qd[j];
        }
    }
    return 0;
}

/* The multiplier times the gradient, as generalized forces (qdot = u there). */
static int cc_forces(void *impl, const mbk_constraint_args *a, const double *l, mbk_spatial_vec *F, double *mf)
{
    (void)F;
    const coupler *c = impl;
    double x[CT_MAX_BODIES];
    gather(a, c->n, 0, x);
    for (int i = 0; i < c->n; ++i) mbk_constraint_add_mobility_force(a, i, l[0] * d1(c, x, i), mf);
    return 0;
}

/* SpeedCoupler: verr = f(u), vaerr = sum df/du_i udot_i. */
static int sc_verr(void *impl, const mbk_constraint_args *a, double *e)
{
    const coupler *c = impl;
    double u[CT_MAX_BODIES];
    gather(a, c->n, 1, u);
    *e = mbk_function_value(&c->f, u);
    return 0;
}

static int sc_vaerr(void *impl, const mbk_constraint_args *a, double *e)
{
    const coupler *c = impl;
    double u[CT_MAX_BODIES];
    gather(a, c->n, 1, u);
    *e = 0;
    for (int i = 0; i < c->n; ++i) *e += d1(c, u, i) * mbk_constraint_get_udot(a, i);
    return 0;
}

static int sc_forces(void *impl, const mbk_constraint_args *a, const double *l, mbk_spatial_vec *F, double *mf)
{
    (void)F;
    const coupler *c = impl;
    double u[CT_MAX_BODIES];
    gather(a, c->n, 1, u);
    for (int i = 0; i < c->n; ++i) mbk_constraint_add_mobility_force(a, i, l[0] * d1(c, u, i), mf);
    return 0;
}

/* PrescribedMotion: perr = q - f(t), pverr = qdot - f'(t), paerr = qdotdot - f''(t). */
static double f_of_t(const coupler *c, const mbk_constraint_args *a, int order)
{
    double t = mbk_constraint_args_get_time(a);
    const int comp[2] = {0, 0};
    return order ? mbk_function_derivative(&c->f, comp, order, &t) : mbk_function_value(&c->f, &t);
}

static int pm_perr(void *impl, const mbk_constraint_args *a, double *e)
{
    *e = mbk_constraint_get_q(a, 0) - f_of_t(impl, a, 0);
    return 0;
}

static int pm_pverr(void *impl, const mbk_constraint_args *a, double *e)
{
    *e = mbk_constraint_get_qdot(a, 0) - f_of_t(impl, a, 1);
    return 0;
}

static int pm_paerr(void *impl, const mbk_constraint_args *a, double *e)
{
    *e = mbk_constraint_get_qdotdot(a, 0) - f_of_t(impl, a, 2);
    return 0;
}

static const mbk_constraint_ops coordinate_coupler_ops = {"CoordinateCoupler", 1, 0, 0, cc_perr, cc_pverr, cc_paerr,
                                                          cc_forces, NULL, NULL, NULL, NULL, NULL, coupler_destroy};
static const mbk_constraint_ops speed_coupler_ops = {"SpeedCoupler", 0, 1, 0, NULL, NULL, NULL, NULL, sc_verr,
                                                     sc_vaerr, sc_forces, NULL, NULL, coupler_destroy};
static const mbk_constraint_ops prescribed_ops = {"PrescribedMotion", 1, 0, 0, pm_perr, pm_pverr, pm_paerr,
                                                  single_force, NULL, NULL, NULL, NULL, NULL, coupler_destroy};

/* ---- constructors ------------------------------------------------------------------------ */

/* qdot must be u on every coordinate a q-level constraint names. */
static int need_qdot_is_u(const mbk_matter *m, const int *bodies, int n, const char *fn)
{
    for (int i = 0; i < n; ++i)
        if (bodies[i] > 0 && bodies[i] < m->nb && m->bodies[bodies[i]].mob.ops->calc_qdot)
            return mbk_set_error(MBK_EINVAL, "%s: body %d's mobilizer (%s) has qdot != u; constrain speeds "
                                 "instead, or use a mobilizer whose q rates are its u", fn, bodies[i],
                                 m->bodies[bodies[i]].mob.ops->name ? m->bodies[bodies[i]].mob.ops->name : "?");
    return MBK_OK;
}

/* Add a constraint on n mobilities with a heap copy of impl (freed if refused). */
static int add_mobility(mbk_matter *m, const mbk_constraint_ops *ops, const void *data, size_t size,
                        const int *bodies, const int *coords, int n, const char *fn)
{
    void *impl = mbk_malloc(size);
    if (!impl) return MBK_ENOMEM;
    memcpy(impl, data, size);
    int rc = ct_add(m, ops, impl, NULL, 0, bodies, coords, n, fn);
    if (rc < 0) mbk_free(impl);
    return rc;
}

int mbk_constraint_add_constant_speed(mbk_matter *m, int body, int u_index, double speed)
{
    if (!isfinite(speed)) return mbk_set_error(MBK_EINVAL, "mbk_constraint_add_constant_speed: speed must be finite");
    const constant_value c = {speed};
    return add_mobility(m, &speed_ops, &c, sizeof c, &body, &u_index, 1, "mbk_constraint_add_constant_speed");
}

int mbk_constraint_add_constant_acceleration(mbk_matter *m, int body, int u_index, double acceleration)
{
    if (!isfinite(acceleration))
        return mbk_set_error(MBK_EINVAL, "mbk_constraint_add_constant_acceleration: acceleration must be finite");
    const constant_value c = {acceleration};
    return add_mobility(m, &acceleration_ops, &c, sizeof c, &body, &u_index, 1,
                        "mbk_constraint_add_constant_acceleration");
}

/* Function-driven constraints take f: it is destroyed here when refused. */
static int add_function(mbk_matter *m, const mbk_constraint_ops *ops, mbk_function f, int args, int order,
                        const int *bodies, const int *coords, int n, bool q_level, const char *fn)
{
    int rc = MBK_OK;
    if (!m) rc = mbk_set_error(MBK_EINVAL, "%s: matter is NULL", fn);
    else if (n < 1 || n > CT_MAX_BODIES || !bodies || !coords)
        rc = mbk_set_error(MBK_EINVAL, "%s: give 1..%d coordinates (arrays not NULL)", fn, CT_MAX_BODIES);
    else if (mbk_function_check(&f, order) < 0) rc = mbk_last_status();
    else if (f.ops->n_args != args)
        rc = mbk_set_error(MBK_EINVAL, "%s: the function takes %d arguments; it needs %d", fn, f.ops->n_args, args);
    else if (q_level) rc = need_qdot_is_u(m, bodies, n, fn);
    if (rc == MBK_OK) {
        const coupler c = {f, n};
        coupler *impl = mbk_malloc(sizeof *impl);
        if (!impl) rc = MBK_ENOMEM;
        else {
            *impl = c;
            rc = ct_add(m, ops, impl, NULL, 0, bodies, coords, n, fn);
            if (rc >= 0) return rc;
            mbk_free(impl);
        }
    }
    mbk_function_destroy(&f);
    return rc;
}

int mbk_constraint_add_coordinate_coupler(mbk_matter *m, mbk_function f, const int *bodies, const int *q_within_body,
                                          int n)
{
    return add_function(m, &coordinate_coupler_ops, f, n, 2, bodies, q_within_body, n, true,
                        "mbk_constraint_add_coordinate_coupler");
}

int mbk_constraint_add_speed_coupler(mbk_matter *m, mbk_function f, const int *bodies, const int *u_within_body, int n)
{
    return add_function(m, &speed_coupler_ops, f, n, 1, bodies, u_within_body, n, false,
                        "mbk_constraint_add_speed_coupler");
}

int mbk_constraint_add_prescribed_motion(mbk_matter *m, mbk_function f, int body, int q_within_body)
{
    return add_function(m, &prescribed_ops, f, 1, 2, &body, &q_within_body, 1, true,
                        "mbk_constraint_add_prescribed_motion");
}
