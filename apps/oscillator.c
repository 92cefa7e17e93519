/* Damped oscillator subsystem: m x'' = -k x - c x'. */
#include "oscillator.h"

#include <math.h>

static int osc_topology(void *impl, const mbk_subsystem_ctx *c, mbk_state *s)
{
    oscillator *o = impl;
    int k = mbk_subsystem_ctx_get_index(c);
    const double x0 = 1.0, v0 = 0.0;
    o->q = mbk_state_allocate_q(s, k, 1, &x0);
    o->u = mbk_state_allocate_u(s, k, 1, &v0);
    o->stiffness_var = mbk_state_allocate_discrete(s, k, MBK_STAGE_DYNAMICS, &mbk_value_double, &o->default_k);
    o->damping_var = mbk_state_allocate_discrete(s, k, MBK_STAGE_DYNAMICS, &mbk_value_double, &o->default_c);
    o->force_cache = mbk_state_allocate_cache(s, k, MBK_STAGE_VELOCITY, MBK_STAGE_DYNAMICS,
                                              &mbk_value_double, NULL);
    return (o->q < 0 || o->u < 0 || o->stiffness_var < 0 || o->damping_var < 0 ||
            o->force_cache < 0) ? -1 : 0;
}

static double param(const mbk_state *s, int k, int var)
{
    return *(const double *)mbk_state_get_discrete(s, k, var);
}

static int osc_velocity(void *impl, const mbk_subsystem_ctx *c, mbk_state *s)
{
    const oscillator *o = impl;
    int k = mbk_subsystem_ctx_get_index(c);
    mbk_state_upd_subsystem_qdot(s, k)[o->q] = mbk_state_get_subsystem_u(s, k)[o->u];
    return 0;
}

static int osc_dynamics(void *impl, const mbk_subsystem_ctx *c, mbk_state *s)
{
    const oscillator *o = impl;
    int k = mbk_subsystem_ctx_get_index(c);
    double x = mbk_state_get_subsystem_q(s, k)[o->q], v = mbk_state_get_subsystem_u(s, k)[o->u];
    *(double *)mbk_state_upd_cache(s, k, o->force_cache) =
        -param(s, k, o->stiffness_var) * x - param(s, k, o->damping_var) * v;
    return 0;
}

static int osc_acceleration(void *impl, const mbk_subsystem_ctx *c, mbk_state *s)
{
    const oscillator *o = impl;
    int k = mbk_subsystem_ctx_get_index(c);
    double f = *(const double *)mbk_state_get_cache(s, k, o->force_cache);
    double a = f / o->mass;
    mbk_state_upd_subsystem_udot(s, k)[o->u] = a;
    mbk_state_upd_subsystem_qdotdot(s, k)[o->q] = a;
    return 0;
}

static int osc_potential(void *impl, const mbk_subsystem_ctx *c, const mbk_state *s, double *pe)
{
    const oscillator *o = impl;
    int k = mbk_subsystem_ctx_get_index(c);
    double x = mbk_state_get_subsystem_q(s, k)[o->q];
    *pe += 0.5 * param(s, k, o->stiffness_var) * x * x;
    return 0;
}

static int osc_kinetic(void *impl, const mbk_subsystem_ctx *c, const mbk_state *s, double *ke)
{
    const oscillator *o = impl;
    double v = mbk_state_get_subsystem_u(s, mbk_subsystem_ctx_get_index(c))[o->u];
    *ke += 0.5 * o->mass * v * v;
    return 0;
}

static void osc_destroy(void *impl) { mbk_free(impl); }

static const mbk_subsystem_ops oscillator_ops = {
    .name = "oscillator",
    .realize_topology = osc_topology,
    .realize_velocity = osc_velocity,
    .realize_dynamics = osc_dynamics,
    .realize_acceleration = osc_acceleration,
    .calc_potential_energy = osc_potential,
    .calc_kinetic_energy = osc_kinetic,
    .destroy = osc_destroy,
};

int oscillator_add(mbk_system *sys, double mass, double k, double c)
{
    oscillator *o = mbk_calloc(1, sizeof *o);
    if (!o) return MBK_ENOMEM;
    o->mass = mass;
    o->default_k = k;
    o->default_c = c;
    int index = mbk_system_add_subsystem(sys, &oscillator_ops, o);
    if (index < 0) mbk_free(o);
    return index;
}

void oscillator_exact(double m, double k, double c, double x0, double v0, double t, double *x,
                      double *v)
{
    /* Underdamped solution: x = e^{-zeta w t} (A cos wd t + B sin wd t). */
    double w = sqrt(k / m), zeta = c / (2.0 * sqrt(k * m)), wd = w * sqrt(1.0 - zeta * zeta);
    double a = x0, b = (v0 + zeta * w * x0) / wd, e = exp(-zeta * w * t);
    double cs = cos(wd * t), sn = sin(wd * t);
    *x = e * (a * cs + b * sn);
    *v = -zeta * w * *x + e * (-a * wd * sn + b * wd * cs);
}
