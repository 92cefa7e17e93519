/* Integrators: every built-in integrator on an analytic damped oscillator
 * (a custom subsystem) and a multibody pendulum with gravity: convergence
 * order of the fixed-step methods, accuracy control of the variable-step
 * ones, the pendulum period against the elliptic-integral value, energy
 * drift, statistics, failure paths (recoverable and fatal realize
 * failures, NaN derivatives, too many steps, impossible tolerances) with
 * the last good State kept, no allocation per step, and determinism. */
#include "mbk/mbk.h"
#include "integrator_table.h"
#include "mbk_test.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

static const double PI = 3.14159265358979323846;

/* ------------------------------------------------------------------ */
/* Damped oscillator subsystem with failure injection                   */
/* ------------------------------------------------------------------ */

enum { FAIL_NONE, FAIL_RECOVERABLE, FAIL_FATAL, FAIL_NAN, FAIL_LONG };

typedef struct osc {
    double m, k, c;
    int q, u;
    int fail_mode;
    double t_fail;
    double failed_window; /* test-only memory (a real subsystem keeps such data in the State) */
} osc;

static int osc_topology(void *impl, const mbk_subsystem_ctx *c, mbk_state *s)
{
    osc *o = impl;
    int k = mbk_subsystem_ctx_get_index(c);
    const double x0 = 1.0, v0 = 0.0;
    o->q = mbk_state_allocate_q(s, k, 1, &x0);
    o->u = mbk_state_allocate_u(s, k, 1, &v0);
    return o->q < 0 || o->u < 0 ? -1 : 0;
}

static int osc_velocity(void *impl, const mbk_subsystem_ctx *c, mbk_state *s)
{
    const osc *o = impl;
    int k = mbk_subsystem_ctx_get_index(c);
    mbk_state_upd_subsystem_qdot(s, k)[o->q] = mbk_state_get_subsystem_u(s, k)[o->u];
    return 0;
}

static int osc_acceleration(void *impl, const mbk_subsystem_ctx *c, mbk_state *s)
{
    osc *o = impl;
    int k = mbk_subsystem_ctx_get_index(c);
    double t = mbk_state_get_time(s);
    double x = mbk_state_get_subsystem_q(s, k)[o->q], v = mbk_state_get_subsystem_u(s, k)[o->u];
    double a = (-o->k * x - o->c * v) / o->m;
    if (t > o->t_fail) {
        switch (o->fail_mode) {
        case FAIL_RECOVERABLE:
            /* once in every 0.1 s window: a retry with a smaller step gets past it */
            if (floor((t - o->t_fail) / 0.1) > o->failed_window) {
                o->failed_window = floor((t - o->t_fail) / 0.1);
                mbk_set_error(MBK_ERETRY, "injected recoverable failure");
                return 1;
            }
            break;
        case FAIL_FATAL: mbk_set_error(MBK_EUSER, "injected fatal failure at t = %g", t); return -1;
        case FAIL_NAN: a = NAN; break;
        case FAIL_LONG: { /* a long message whose advice comes last */
            char why[1500];
            memset(why, 'w', sizeof why - 1);
            why[sizeof why - 1] = '\0';
            mbk_set_error(MBK_EUSER, "injected failure: %s; ADVICE-AT-THE-END", why);
            return -1;
        }
        default: break;
        }
    }
    mbk_state_upd_subsystem_udot(s, k)[o->u] = a;
    mbk_state_upd_subsystem_qdotdot(s, k)[o->q] = a;
    return 0;
}

static int osc_pe(void *impl, const mbk_subsystem_ctx *c, const mbk_state *s, double *pe)
{
    const osc *o = impl;
    double x = mbk_state_get_subsystem_q(s, mbk_subsystem_ctx_get_index(c))[o->q];
    *pe += 0.5 * o->k * x * x;
    return 0;
}

static int osc_ke(void *impl, const mbk_subsystem_ctx *c, const mbk_state *s, double *ke)
{
    const osc *o = impl;
    double v = mbk_state_get_subsystem_u(s, mbk_subsystem_ctx_get_index(c))[o->u];
    *ke += 0.5 * o->m * v * v;
    return 0;
}

static void osc_destroy(void *impl) { mbk_free(impl); }

static const mbk_subsystem_ops osc_ops = {.name = "oscillator",
                                          .realize_topology = osc_topology,
                                          .realize_velocity = osc_velocity,
                                          .realize_acceleration = osc_acceleration,
                                          .calc_potential_energy = osc_pe,
                                          .calc_kinetic_energy = osc_ke,
                                          .destroy = osc_destroy};

static const double OM = 1.0, OK = 10.0, OC = 0.3;

static mbk_system *make_osc(osc **out, int fail_mode, double t_fail)
{
    mbk_system *sys = mbk_system_create("oscillator");
    osc *o = mbk_calloc(1, sizeof *o);
    *o = (osc){OM, OK, OC, 0, 0, fail_mode, t_fail, -1};
    mbk_system_add_subsystem(sys, &osc_ops, o);
    mbk_system_realize_topology(sys);
    if (out) *out = o;
    return sys;
}

static void osc_exact(double t, double *x, double *v)
{
    double w = sqrt(OK / OM), zeta = OC / (2.0 * sqrt(OK * OM)), wd = w * sqrt(1.0 - zeta * zeta);
    double a = 1.0, b = zeta * w / wd, e = exp(-zeta * w * t);
    *x = e * (a * cos(wd * t) + b * sin(wd * t));
    *v = -zeta * w * *x + e * (-a * wd * sin(wd * t) + b * wd * cos(wd * t));
}

/* ------------------------------------------------------------------ */
/* Integrator table                                                     */
/* ------------------------------------------------------------------ */

static bool available(which w)
{
    mbk_system *sys = make_osc(NULL, FAIL_NONE, 0);
    mbk_integrator *ig = make(w, sys);
    bool ok = ig != NULL;
    mbk_integrator_destroy(ig);
    mbk_system_destroy(sys);
    return ok;
}

static mbk_state *default_state(const mbk_system *sys)
{
    mbk_state *s = mbk_state_create();
    mbk_state_init(s, sys);
    mbk_system_realize(sys, s, MBK_STAGE_INSTANCE);
    return s;
}

/* Oscillator error at T: max(|x - x_exact|, |v - v_exact|). */
static double osc_run(which w, double fixed, double acc, double T, mbk_integrator_stats *st)
{
    mbk_system *sys = make_osc(NULL, FAIL_NONE, 0);
    mbk_integrator *ig = make(w, sys);
    mbk_state *s = default_state(sys);
    if (fixed > 0) mbk_integrator_set_fixed_step(ig, fixed);
    if (acc > 0) mbk_integrator_set_accuracy(ig, acc);
    double err = INFINITY;
    if (mbk_integrator_initialize(ig, s) == MBK_OK) {
        int rc = mbk_integrator_step_to(ig, T);
        if (rc == MBK_OK) {
            const mbk_state *r = mbk_integrator_get_state(ig);
            double x, v;
            osc_exact(T, &x, &v);
            err = fmax(fabs(mbk_state_get_q(r)[0] - x), fabs(mbk_state_get_u(r)[0] - v));
            CHECK(mbk_state_get_time(r) == T);
            CHECK(mbk_state_get_stage(r) >= MBK_STAGE_ACCELERATION);
        } else {
            fprintf(stderr, "%s: %s\n", names[w], mbk_last_error());
        }
        if (st) mbk_integrator_get_stats(ig, st);
    } else {
        fprintf(stderr, "%s: %s\n", names[w], mbk_last_error());
    }
    mbk_state_destroy(s);
    mbk_integrator_destroy(ig);
    mbk_system_destroy(sys);
    return err;
}

/* ------------------------------------------------------------------ */
/* Oscillator tests                                                     */
/* ------------------------------------------------------------------ */

static void test_fixed_step_orders(void)
{
    struct { which w; double h; int order; } cases[] = {
        {I_RK4, 0.02, 4}, {I_MERSON, 0.02, 4}, {I_EULER, 0.002, 1}, {I_SEMI, 0.002, 1}};
    for (size_t c = 0; c < sizeof cases / sizeof cases[0]; ++c) {
        double e[3];
        for (int j = 0; j < 3; ++j) e[j] = osc_run(cases[c].w, cases[c].h / (1 << j), 0, 2.0, NULL);
        double p1 = log2(e[0] / e[1]), p2 = log2(e[1] / e[2]);
        printf("  %-20s fixed step %.4g..%.4g: errors %.3e %.3e %.3e, measured order %.3f %.3f\n",
               names[cases[c].w], cases[c].h, cases[c].h / 4, e[0], e[1], e[2], p1, p2);
        CHECK(fabs(p2 - cases[c].order) < 0.15 * cases[c].order);
        CHECK(fabs(p1 - cases[c].order) < 0.25 * cases[c].order);
    }
}

static void test_accuracy_control(void)
{
    which ws[] = {I_MERSON, I_RK4, I_EULER, I_SEMI, I_BDF, I_ADAMS, I_IDA};
    for (size_t c = 0; c < sizeof ws / sizeof ws[0]; ++c) {
        which w = ws[c];
        if (!available(w)) continue;
        bool first_order = w == I_EULER || w == I_SEMI;
        double accs[3] = {1e-4, 1e-6, 1e-8};
        if (first_order) accs[0] = 1e-3, accs[1] = 1e-4, accs[2] = 1e-5;
        double e[3];
        mbk_integrator_stats st[3];
        for (int j = 0; j < 3; ++j) e[j] = osc_run(w, 0, accs[j], 2.0, &st[j]);
        printf("  %-20s accuracy %.0e/%.0e/%.0e: errors %.3e %.3e %.3e, steps %ld %ld %ld, rhs %ld %ld %ld\n",
               names[w], accs[0], accs[1], accs[2], e[0], e[1], e[2], st[0].steps_taken, st[1].steps_taken,
               st[2].steps_taken, st[0].rhs_evaluations, st[1].rhs_evaluations, st[2].rhs_evaluations);
        CHECK(e[1] < e[0] && e[2] < e[1]);
        /* the global error follows the accuracy (local error per step) within the number of steps */
        /* first-order methods: the global error goes like sqrt(local accuracy) */
        for (int j = 0; j < 3; ++j)
            if (!CHECK(e[j] < (first_order ? 5.0 * sqrt(accs[j]) : 300.0 * accs[j])))
                printf("    error %.3e at accuracy %.0e\n", e[j], accs[j]);
        CHECK(e[0] / e[2] > (first_order ? 10.0 : 100.0));
        for (int j = 0; j < 3; ++j) {
            CHECK(st[j].steps_taken > 0);
            CHECK(st[j].steps_attempted >= st[j].steps_taken);
            CHECK(st[j].rhs_evaluations >= st[j].steps_taken);
            CHECK(st[j].projections >= 1);
            CHECK(st[j].events_handled == 0);
        }
        CHECK(st[2].steps_taken > st[0].steps_taken);
    }
}

/* Each integrator at its tightest practical accuracy reaches the analytic solution. */
static void test_sundials_reach_solution(void)
{
    which ws[] = {I_BDF, I_ADAMS, I_IDA};
    for (size_t c = 0; c < 3; ++c) {
        if (!available(ws[c])) continue;
        mbk_integrator_stats st;
        double e = osc_run(ws[c], 0, 1e-9, 5.0, &st);
        printf("  %-20s accuracy 1e-9 to t = 5: error %.3e (%ld steps, %ld rhs, %ld error-test and %ld "
               "convergence failures)\n", names[ws[c]], e, st.steps_taken, st.rhs_evaluations,
               st.error_test_failures, st.convergence_failures);
        CHECK(e < 1e-6);
        CHECK(st.steps_taken > 10);
        CHECK(st.rhs_evaluations > st.steps_taken);
    }
}

/* The step sizes every variable-step method reports after a run to t = 0.37: the
   last one taken (the State's advance) and the method's next trial step, a fraction of
   the run (CVODE and IDA reported 0 for the second). */
static void test_step_sizes(void)
{
    which ws[] = {I_MERSON, I_BDF, I_ADAMS, I_IDA};
    for (size_t c = 0; c < 4; ++c) {
        if (!available(ws[c])) continue;
        mbk_system *sys = make_osc(NULL, FAIL_NONE, 0);
        mbk_integrator *ig = make(ws[c], sys);
        mbk_state *s = default_state(sys);
        mbk_integrator_set_accuracy(ig, 1e-6);
        CHECK_INT(mbk_integrator_initialize(ig, s), MBK_OK);
        CHECK_INT(mbk_integrator_step_to(ig, 0.37), MBK_OK);
        const double h_prev = mbk_integrator_get_previous_step_size(ig), h_next = mbk_integrator_get_predicted_step_size(ig);
        if (!CHECK(h_prev > 0 && h_prev <= 0.37 && h_next > 1e-4 && h_next < 0.37))
            fprintf(stderr, "  %s: previous step %g, predicted %g\n", names[ws[c]], h_prev, h_next);
        mbk_state_destroy(s);
        mbk_integrator_destroy(ig);
        mbk_system_destroy(sys);
    }
}

/* ------------------------------------------------------------------ */
/* Pendulum                                                             */
/* ------------------------------------------------------------------ */

static const double G = 9.81, ICOM = 0.01, L = 1.0;

/* Physical pendulum: a 1 kg body on a Pin about z, centre of mass L below the pin, gravity -y. */
static mbk_system *make_pendulum(void)
{
    mbk_system *sys = mbk_multibody_create("pendulum");
    mbk_matter *m = mbk_multibody_upd_matter(sys);
    mbk_mass_props mp = mbk_mass_props_from_central(1.0, mbk_vec3_make(0, -L, 0), mbk_mat33_diag(ICOM, ICOM, ICOM));
    mbk_transform X = mbk_transform_identity();
    mbk_matter_add_body(m, 0, &X, &mp, &X, mbk_mobilizer_pin());
    mbk_force_add_gravity(mbk_multibody_upd_forces(sys), mbk_vec3_make(0, -G, 0));
    mbk_system_realize_topology(sys);
    return sys;
}

/* Complete elliptic integral of the first kind K(k) by the AGM. */
static double ellip_k(double k)
{
    double a = 1.0, b = sqrt(1.0 - k * k);
    for (int i = 0; i < 40; ++i) {
        double an = 0.5 * (a + b);
        b = sqrt(a * b);
        a = an;
    }
    return PI / (2.0 * a);
}

static double pendulum_period(double theta0)
{
    double io = ICOM + L * L;
    return 4.0 * sqrt(io / (G * L)) * ellip_k(sin(0.5 * theta0));
}

/* |q(T) - theta0| + |u(T)| after one exact period; energy drift max |E - E0| / |E0|. */
static double pendulum_run(which w, double fixed, double acc, double theta0, double *drift,
                           mbk_integrator_stats *st)
{
    mbk_system *sys = make_pendulum();
    mbk_state *s = default_state(sys);
    mbk_state_upd_q(s)[0] = theta0;
    mbk_integrator *ig = make(w, sys);
    if (fixed > 0) mbk_integrator_set_fixed_step(ig, fixed);
    if (acc > 0) mbk_integrator_set_accuracy(ig, acc);
    double T = pendulum_period(theta0), err = INFINITY, e0 = 0, dmax = 0;
    if (mbk_integrator_initialize(ig, s) == MBK_OK) {
        double ke, pe;
        mbk_system_calc_energy(sys, mbk_integrator_get_state(ig), &ke, &pe);
        e0 = ke + pe;
        int rc = MBK_OK;
        for (int i = 1; i <= 20 && rc == MBK_OK; ++i) {
            rc = mbk_integrator_step_to(ig, T * i / 20.0);
            mbk_system_calc_energy(sys, mbk_integrator_get_state(ig), &ke, &pe);
            dmax = fmax(dmax, fabs(ke + pe - e0));
        }
        if (rc == MBK_OK) {
            const mbk_state *r = mbk_integrator_get_state(ig);
            err = fabs(mbk_state_get_q(r)[0] - theta0) + fabs(mbk_state_get_u(r)[0]);
        } else {
            fprintf(stderr, "%s: %s\n", names[w], mbk_last_error());
        }
        if (st) mbk_integrator_get_stats(ig, st);
    }
    if (drift) *drift = dmax / fabs(e0);
    mbk_integrator_destroy(ig);
    mbk_state_destroy(s);
    mbk_system_destroy(sys);
    return err;
}

static void test_pendulum_period(void)
{
    const double amps[3] = {0.5, 1.5, 2.5};
    for (int a = 0; a < 3; ++a) {
        double T = pendulum_period(amps[a]);
        /* fixed-step methods: order */
        struct { which w; int n; int order; } fx[] = {{I_RK4, 200, 4}, {I_MERSON, 200, 4}, {I_EULER, 4000, 1}, {I_SEMI, 4000, 1}};
        for (size_t c = 0; c < sizeof fx / sizeof fx[0]; ++c) {
            int n = a == 2 && fx[c].order == 4 ? 2 * fx[c].n : fx[c].n; /* near the separatrix */
            double e1 = pendulum_run(fx[c].w, T / n, 0, amps[a], NULL, NULL);
            double e2 = pendulum_run(fx[c].w, T / (2 * n), 0, amps[a], NULL, NULL);
            double p = log2(e1 / e2);
            printf("  amplitude %.1f (period %.6f s) %-20s %d/%d steps per period: errors %.3e %.3e, order %.2f\n",
                   amps[a], T, names[fx[c].w], n, 2 * n, e1, e2, p);
            /* semi-explicit Euler is conjugate to Stormer-Verlet: on a closed orbit the
               error after a whole period is second order */
            if (fx[c].w == I_SEMI) CHECK(p > 0.9 && p < 2.3);
            else CHECK(fabs(p - fx[c].order) < 0.15 * fx[c].order);
        }
        /* variable-step methods at accuracy 1e-8 */
        which vs[] = {I_MERSON, I_RK4, I_BDF, I_ADAMS, I_IDA};
        for (size_t c = 0; c < sizeof vs / sizeof vs[0]; ++c) {
            if (!available(vs[c])) continue;
            double e = pendulum_run(vs[c], 0, 1e-8, amps[a], NULL, NULL);
            printf("  amplitude %.1f %-20s accuracy 1e-8: period error |q(T) - q0| + |u(T)| = %.3e\n",
                   amps[a], names[vs[c]], e);
            CHECK(e < 1e-5);
        }
    }
}

static void test_pendulum_energy(void)
{
    which ws[] = {I_MERSON, I_RK4, I_BDF, I_ADAMS, I_IDA, I_EULER, I_SEMI};
    for (size_t c = 0; c < sizeof ws / sizeof ws[0]; ++c) {
        if (!available(ws[c])) continue;
        double drift;
        mbk_integrator_stats st;
        bool first = ws[c] == I_EULER || ws[c] == I_SEMI;
        pendulum_run(ws[c], 0, first ? 1e-5 : 1e-6, 1.0, &drift, &st);
        printf("  %-20s accuracy %.0e: energy drift over one period %.3e (%ld steps)\n", names[ws[c]],
               first ? 1e-5 : 1e-6, drift, st.steps_taken);
        CHECK(drift < (ws[c] == I_EULER ? 0.1 : first ? 1e-2 : 1e-4));
    }
    /* a longer run: 10 s at accuracy 1e-6 */
    which ls[] = {I_MERSON, I_BDF, I_IDA};
    for (size_t c = 0; c < 3; ++c) {
        if (!available(ls[c])) continue;
        mbk_system *sys = make_pendulum();
        mbk_state *s = default_state(sys);
        mbk_state_upd_q(s)[0] = 1.0;
        mbk_integrator *ig = make(ls[c], sys);
        mbk_integrator_set_accuracy(ig, 1e-6);
        CHECK_INT(mbk_integrator_initialize(ig, s), MBK_OK);
        double ke, pe, e0, dmax = 0;
        mbk_system_calc_energy(sys, mbk_integrator_get_state(ig), &ke, &pe);
        e0 = ke + pe;
        for (int i = 1; i <= 100; ++i) {
            CHECK_INT(mbk_integrator_step_to(ig, 0.1 * i), MBK_OK);
            mbk_system_calc_energy(sys, mbk_integrator_get_state(ig), &ke, &pe);
            dmax = fmax(dmax, fabs(ke + pe - e0) / fabs(e0));
        }
        printf("  %-20s 10 s at accuracy 1e-6: relative energy drift %.3e\n", names[ls[c]], dmax);
        CHECK(dmax < (ls[c] == I_BDF ? 5e-4 : 1e-4)); /* BDF damps numerically */
        mbk_integrator_destroy(ig);
        mbk_state_destroy(s);
        mbk_system_destroy(sys);
    }
}

/* A conservative 10-link planar chain over 10 s at accuracy 1e-8. */
static void test_chain_energy(void)
{
    which ws[] = {I_MERSON, I_BDF, I_ADAMS, I_IDA};
    for (size_t c = 0; c < sizeof ws / sizeof ws[0]; ++c) {
        if (!available(ws[c])) continue;
        mbk_system *sys = mbk_multibody_create("chain");
        mbk_matter *m = mbk_multibody_upd_matter(sys);
        mbk_mass_props mp = mbk_mass_props_from_central(1.0, mbk_vec3_make(0.25, 0, 0),
                                                        mbk_mat33_diag(1e-3, 0.25 / 12, 0.25 / 12));
        mbk_transform X_BM = mbk_transform_identity();
        int parent = 0;
        for (int i = 0; i < 10; ++i) {
            mbk_transform X_PF = mbk_transform_from_p(mbk_vec3_make(i ? 0.5 : 0.0, 0, 0));
            parent = mbk_matter_add_body(m, parent, &X_PF, &mp, &X_BM, mbk_mobilizer_pin());
        }
        mbk_force_add_gravity(mbk_multibody_upd_forces(sys), mbk_vec3_make(0, -G, 0));
        mbk_system_realize_topology(sys);
        mbk_state *s = default_state(sys);
        mbk_state_upd_q(s)[0] = -0.5; /* released from near horizontal */
        mbk_integrator *ig = make(ws[c], sys);
        mbk_integrator_set_accuracy(ig, 1e-8);
        CHECK_INT(mbk_integrator_initialize(ig, s), MBK_OK);
        double ke, pe, e0, dmax = 0, scale;
        mbk_system_calc_energy(sys, mbk_integrator_get_state(ig), &ke, &pe);
        e0 = ke + pe;
        scale = fabs(pe); /* the energy moving between kinetic and potential */
        int rc = MBK_OK;
        for (int i = 1; i <= 100 && rc == MBK_OK; ++i) {
            rc = mbk_integrator_step_to(ig, 0.1 * i);
            mbk_system_calc_energy(sys, mbk_integrator_get_state(ig), &ke, &pe);
            dmax = fmax(dmax, fabs(ke + pe - e0) / scale);
        }
        CHECK_INT(rc, MBK_OK);
        mbk_integrator_stats st;
        mbk_integrator_get_stats(ig, &st);
        printf("  %-20s 10-link chain, 10 s at accuracy 1e-8: energy drift %.3e of |PE0| (%ld steps, %ld rhs)\n",
               names[ws[c]], dmax, st.steps_taken, st.rhs_evaluations);
        CHECK(dmax < (ws[c] == I_BDF ? 1e-5 : 1e-6));
        mbk_integrator_destroy(ig);
        mbk_state_destroy(s);
        mbk_system_destroy(sys);
    }
}

/* A four-bar (crank, coupler, and a Rod from the coupler's tip to Ground) over 10 s:
   position and velocity constraint errors stay within the constraint tolerance. */
static void test_fourbar_drift(void)
{
    which ws[] = {I_MERSON, I_RK4, I_BDF, I_ADAMS, I_IDA, I_SEMI};
    for (size_t c = 0; c < sizeof ws / sizeof ws[0]; ++c) {
        if (!available(ws[c])) continue;
        mbk_system *sys = mbk_multibody_create("four-bar");
        mbk_matter *m = mbk_multibody_upd_matter(sys);
        mbk_mass_props crank = mbk_mass_props_from_central(1.0, mbk_vec3_make(0.5, 0, 0), mbk_mat33_diag(1e-3, 1.0 / 12, 1.0 / 12));
        mbk_mass_props coupler = mbk_mass_props_from_central(1.0, mbk_vec3_make(1.0, 0, 0), mbk_mat33_diag(1e-3, 4.0 / 12, 4.0 / 12));
        mbk_transform I = mbk_transform_identity(), tip = mbk_transform_from_p(mbk_vec3_make(1, 0, 0));
        int b1 = mbk_matter_add_body(m, 0, &I, &crank, &I, mbk_mobilizer_pin());
        int b2 = mbk_matter_add_body(m, b1, &tip, &coupler, &I, mbk_mobilizer_pin());
        int rod = mbk_constraint_add_rod(m, b2, mbk_vec3_make(2, 0, 0), 0, mbk_vec3_make(2, 0, 0), 1.5);
        mbk_force_add_gravity(mbk_multibody_upd_forces(sys), mbk_vec3_make(0, -G, 0));
        if (rod < 0 || mbk_system_realize_topology(sys) < 0) {
            printf("  four-bar: %s\n", mbk_last_error());
            CHECK(false);
            mbk_system_destroy(sys);
            return;
        }
        mbk_state *s = default_state(sys);
        double *q = mbk_state_upd_q(s);
        q[0] = 1.0, q[1] = -1.2;
        CHECK_INT(mbk_system_assemble(sys, s, 1e-12), MBK_OK);
        mbk_state_upd_u(s)[0] = 2.0; /* the integrator projects u onto the constraint */
        mbk_integrator *ig = make(ws[c], sys);
        const double tol = 1e-8;
        mbk_integrator_set_accuracy(ig, 1e-6);
        mbk_integrator_set_constraint_tolerance(ig, tol);
        if (ws[c] == I_RK4 || ws[c] == I_SEMI) mbk_integrator_set_fixed_step(ig, ws[c] == I_RK4 ? 1e-3 : 1e-4);
        CHECK_INT(mbk_integrator_initialize(ig, s), MBK_OK);
        double perr = 0, verr = 0, ke, pe, e0, drift = 0;
        mbk_system_calc_energy(sys, mbk_integrator_get_state(ig), &ke, &pe);
        e0 = ke + pe;
        int rc = MBK_OK;
        for (int i = 1; i <= 1000 && rc == MBK_OK; ++i) {
            rc = mbk_integrator_step_to(ig, 0.01 * i);
            const mbk_state *r = mbk_integrator_get_state(ig);
            perr = fmax(perr, fabs(mbk_state_get_qerr(r)[0]));
            verr = fmax(verr, fabs(mbk_state_get_uerr(r)[0]));
            mbk_system_calc_energy(sys, r, &ke, &pe);
            drift = fmax(drift, fabs(ke + pe - e0) / fabs(e0));
        }
        if (rc != MBK_OK) printf("    %s\n", mbk_last_error());
        CHECK_INT(rc, MBK_OK);
        mbk_integrator_stats st;
        mbk_integrator_get_stats(ig, &st);
        printf("  %-20s four-bar 10 s: max |perr| %.1e, |verr| %.1e (tolerance %.0e), energy drift %.1e, "
               "%ld projections\n", names[ws[c]], perr, verr, tol, drift, st.projections);
        CHECK(perr <= tol && verr <= tol);
        mbk_integrator_destroy(ig);
        mbk_state_destroy(s);
        mbk_system_destroy(sys);
    }
}

/* ------------------------------------------------------------------ */
/* Failures                                                             */
/* ------------------------------------------------------------------ */

static void test_failures(void)
{
    for (int w = 0; w < I_COUNT; ++w) {
        if (!available((which)w)) continue;
        /* recoverable failures: the integrator retries smaller and finishes accurately */
        {
            osc *o;
            mbk_system *sys = make_osc(&o, FAIL_RECOVERABLE, 0.5);
            mbk_integrator *ig = make((which)w, sys);
            mbk_state *s = default_state(sys);
            bool fixed = w == I_EULER || w == I_SEMI;
            if (fixed) mbk_integrator_set_fixed_step(ig, 1e-3);
            else mbk_integrator_set_accuracy(ig, 1e-7);
            CHECK_INT(mbk_integrator_initialize(ig, s), MBK_OK);
            int rc = mbk_integrator_step_to(ig, 2.0);
            if (rc != MBK_OK) fprintf(stderr, "%s: %s\n", names[w], mbk_last_error());
            CHECK_INT(rc, MBK_OK);
            mbk_integrator_stats st;
            mbk_integrator_get_stats(ig, &st);
            double x, v;
            osc_exact(2.0, &x, &v);
            const mbk_state *r = mbk_integrator_get_state(ig);
            printf("  %-20s recoverable failures: %ld retried, error %.2e\n", names[w],
                   st.realization_failures, fabs(mbk_state_get_q(r)[0] - x));
            CHECK(st.realization_failures > 0);
            CHECK(fabs(mbk_state_get_q(r)[0] - x) < (fixed ? 1e-2 : 1e-4));
            mbk_integrator_destroy(ig);
            mbk_state_destroy(s);
            mbk_system_destroy(sys);
        }
        /* fatal failure and NaN: negative status, the last good State kept */
        for (int mode = FAIL_FATAL; mode <= FAIL_NAN; ++mode) {
            mbk_system *sys = make_osc(NULL, mode, 1.0);
            mbk_integrator *ig = make((which)w, sys);
            mbk_state *s = default_state(sys);
            mbk_integrator_set_accuracy(ig, 1e-6);
            if (w == I_RK4 || w == I_EULER || w == I_SEMI) mbk_integrator_set_fixed_step(ig, 0.01);
            CHECK_INT(mbk_integrator_initialize(ig, s), MBK_OK);
            int rc = mbk_integrator_step_to(ig, 2.0);
            const mbk_state *r = mbk_integrator_get_state(ig);
            double t = mbk_state_get_time(r);
            printf("  %-20s %s: %s (t = %.6f)\n    %s\n", names[w], mode == FAIL_FATAL ? "fatal" : "NaN",
                   mbk_status_name(rc), t, mbk_last_error());
            CHECK(rc < 0);
            CHECK_INT(rc, mode == FAIL_FATAL ? MBK_EUSER : MBK_ENOTFINITE);
            CHECK(strstr(mbk_last_error(), "last good") != NULL);
            CHECK(t <= 1.0 && t > 0.8);
            CHECK(mbk_state_get_stage(r) >= MBK_STAGE_ACCELERATION);
            CHECK(isfinite(mbk_state_get_udot(r)[0]));
            double x, v;
            osc_exact(t, &x, &v);
            CHECK(fabs(mbk_state_get_q(r)[0] - x) < (w == I_EULER || w == I_SEMI ? 0.1 : 1e-3));
            /* calling again fails the same way and keeps the State */
            CHECK(mbk_integrator_step_to(ig, 2.0) < 0);
            CHECK(mbk_integrator_get_time(ig) <= 1.0);
            mbk_integrator_destroy(ig);
            mbk_state_destroy(s);
            mbk_system_destroy(sys);
        }
        /* a failure with a long message: the integrator's message keeps both its own
           news (the State is the last good one) and the whole cause, advice included */
        {
            mbk_system *sys = make_osc(NULL, FAIL_LONG, 0.5);
            mbk_integrator *ig = make((which)w, sys);
            mbk_state *s = default_state(sys);
            if (w == I_RK4 || w == I_EULER || w == I_SEMI) mbk_integrator_set_fixed_step(ig, 0.01);
            CHECK_INT(mbk_integrator_initialize(ig, s), MBK_OK);
            CHECK_INT(mbk_integrator_step_to(ig, 1.0), MBK_EUSER);
            const char *msg = mbk_last_error();
            if (!CHECK(strstr(msg, "last good one") != NULL && strstr(msg, "ADVICE-AT-THE-END") != NULL &&
                       strlen(msg) > 1500))
                fprintf(stderr, "    %s: %zu bytes: %.200s ... %s\n", names[w], strlen(msg), msg,
                        strlen(msg) > 100 ? msg + strlen(msg) - 100 : msg);
            CHECK(strstr(msg, "last good one") < strstr(msg, "wwww")); /* what happened to the State first */
            mbk_integrator_destroy(ig);
            mbk_state_destroy(s);
            mbk_system_destroy(sys);
        }
        /* too many steps: MBK_EINTEGRATOR, the State is good, a second call continues */
        {
            mbk_system *sys = make_osc(NULL, FAIL_NONE, 0);
            mbk_integrator *ig = make((which)w, sys);
            mbk_state *s = default_state(sys);
            mbk_integrator_set_accuracy(ig, 1e-8);
            mbk_integrator_set_max_steps(ig, 5);
            CHECK_INT(mbk_integrator_initialize(ig, s), MBK_OK);
            int rc = mbk_integrator_step_to(ig, 10.0);
            CHECK_INT(rc, MBK_EINTEGRATOR);
            CHECK(strstr(mbk_last_error(), "mbk_integrator_set_max_steps") != NULL);
            double t1 = mbk_integrator_get_time(ig);
            CHECK(t1 > 0 && t1 < 10);
            CHECK(mbk_integrator_step_to(ig, 10.0) == MBK_EINTEGRATOR);
            CHECK(mbk_integrator_get_time(ig) > t1);
            mbk_integrator_destroy(ig);
            mbk_state_destroy(s);
            mbk_system_destroy(sys);
        }
        /* a minimum step too large for the accuracy: the message names the setting to lower */
        {
            mbk_system *sys = make_osc(NULL, FAIL_NONE, 0);
            mbk_integrator *ig = make((which)w, sys);
            mbk_state *s = default_state(sys);
            mbk_integrator_set_accuracy(ig, 1e-10);
            CHECK_INT(mbk_integrator_set_min_step(ig, 0.3), MBK_OK);
            int rc = mbk_integrator_initialize(ig, s);
            if (rc == MBK_OK) rc = mbk_integrator_step_to(ig, 3.0);
            printf("  %-20s minimum step 0.3 at accuracy 1e-10: %s\n    %s\n", names[w], mbk_status_name(rc),
                   mbk_last_error());
            CHECK(rc < 0);
            if (!CHECK(strstr(mbk_last_error(), "mbk_integrator_set_min_step") != NULL &&
                       strstr(mbk_last_error(), "lower") != NULL))
                fprintf(stderr, "    %s: %s\n", names[w], mbk_last_error());
            mbk_integrator_destroy(ig);
            mbk_state_destroy(s);
            mbk_system_destroy(sys);
        }
        /* an impossible tolerance */
        if (w != I_RK4 && w != I_EULER && w != I_SEMI) {
            mbk_system *sys = make_osc(NULL, FAIL_NONE, 0);
            mbk_integrator *ig = make((which)w, sys);
            mbk_state *s = default_state(sys);
            CHECK_INT(mbk_integrator_set_tolerances(ig, 1e-30, 1e-30), MBK_OK);
            int rc = mbk_integrator_initialize(ig, s);
            if (rc == MBK_OK) rc = mbk_integrator_step_to(ig, 1.0);
            printf("  %-20s tolerance 1e-30: %s\n    %s\n", names[w], mbk_status_name(rc), mbk_last_error());
            CHECK(rc < 0);
            CHECK(mbk_integrator_get_state(ig) == NULL || mbk_integrator_get_time(ig) < 1.0);
            mbk_integrator_destroy(ig);
            mbk_state_destroy(s);
            mbk_system_destroy(sys);
        }
    }
}

static void test_bad_input(void)
{
    mbk_system *sys = make_osc(NULL, FAIL_NONE, 0);
    mbk_integrator *ig = mbk_integrator_create_rkmerson(sys);
    CHECK_INT(mbk_integrator_set_accuracy(ig, 0), MBK_EINVAL);
    CHECK_INT(mbk_integrator_set_accuracy(ig, NAN), MBK_EINVAL);
    CHECK_INT(mbk_integrator_set_tolerances(ig, 0, 0), MBK_EINVAL);
    CHECK_INT(mbk_integrator_set_fixed_step(ig, -1), MBK_EINVAL);
    CHECK_INT(mbk_integrator_set_max_step(ig, 0), MBK_EINVAL);
    CHECK_INT(mbk_integrator_set_max_steps(ig, 0), MBK_EINVAL);
    CHECK_INT(mbk_integrator_step_to(ig, 1.0), MBK_EINVAL); /* not initialized */
    CHECK(strstr(mbk_last_error(), "initialize") != NULL);
    CHECK(mbk_integrator_get_state(ig) == NULL);
    CHECK(isnan(mbk_integrator_get_time(ig)));
    mbk_state *s = default_state(sys);
    CHECK_INT(mbk_integrator_initialize(ig, s), MBK_OK);
    CHECK_INT(mbk_integrator_step_to(ig, 1.0), MBK_OK);
    CHECK_INT(mbk_integrator_step_to(ig, 0.5), MBK_EINVAL); /* backwards */
    CHECK_INT(mbk_integrator_step_to(ig, 1.0), MBK_OK);     /* already there */
    CHECK_INT(mbk_integrator_initialize(ig, NULL), MBK_EINVAL);
    mbk_integrator *cv = mbk_integrator_create_cvode(sys, MBK_CVODE_BDF);
    if (cv) CHECK_INT(mbk_integrator_set_fixed_step(cv, 0.1), MBK_EINVAL);
    mbk_integrator_destroy(cv);
    CHECK(mbk_integrator_create_rk4(NULL) == NULL);
    mbk_integrator_destroy(NULL);
    mbk_integrator_destroy(ig);
    mbk_state_destroy(s);
    mbk_system_destroy(sys);
}

/* ------------------------------------------------------------------ */
/* No allocation per step; determinism                                  */
/* ------------------------------------------------------------------ */

static void test_no_allocation(void)
{
    for (int w = 0; w < I_COUNT; ++w) {
        if (!available((which)w)) continue;
        mbk_system *sys = make_pendulum();
        mbk_state *s = default_state(sys);
        mbk_state_upd_q(s)[0] = 1.0;
        mbk_integrator *ig = make((which)w, sys);
        if (w == I_RK4) mbk_integrator_set_fixed_step(ig, 1e-3);
        mbk_integrator_set_accuracy(ig, 1e-6);
        CHECK_INT(mbk_integrator_initialize(ig, s), MBK_OK);
        CHECK_INT(mbk_integrator_step_to(ig, 0.1), MBK_OK);
        long before = mbk_get_allocation_count();
        for (int i = 2; i <= 20; ++i) CHECK_INT(mbk_integrator_step_to(ig, 0.1 * i), MBK_OK);
        long n = mbk_get_allocation_count() - before;
        mbk_integrator_stats st;
        mbk_integrator_get_stats(ig, &st);
        printf("  %-20s %ld allocations in %ld steps\n", names[w], n, st.steps_taken);
        CHECK_INT(n, 0);
        mbk_integrator_destroy(ig);
        mbk_state_destroy(s);
        mbk_system_destroy(sys);
    }
}

static void run_y(which w, double T, double *y, int ny)
{
    mbk_system *sys = make_pendulum();
    mbk_state *s = default_state(sys);
    mbk_state_upd_q(s)[0] = 2.0;
    mbk_integrator *ig = make(w, sys);
    mbk_integrator_set_accuracy(ig, 1e-7);
    mbk_integrator_initialize(ig, s);
    mbk_integrator_step_to(ig, T);
    memcpy(y, mbk_state_get_y(mbk_integrator_get_state(ig)), (size_t)ny * sizeof *y);
    mbk_integrator_destroy(ig);
    mbk_state_destroy(s);
    mbk_system_destroy(sys);
}

static void test_determinism(void)
{
    for (int w = 0; w < I_COUNT; ++w) {
        if (!available((which)w)) continue;
        double a[2], b[2];
        run_y((which)w, 3.0, a, 2);
        run_y((which)w, 3.0, b, 2);
        CHECK(memcmp(a, b, sizeof a) == 0);
    }
    /* Restarting RK-Merson from a saved State with its predicted step continues bitwise. */
    mbk_system *sys = make_pendulum();
    mbk_state *s = default_state(sys);
    mbk_state_upd_q(s)[0] = 2.0;
    mbk_integrator *ig = mbk_integrator_create_rkmerson(sys);
    mbk_integrator_set_accuracy(ig, 1e-7);
    mbk_integrator_initialize(ig, s);
    mbk_integrator_step_to(ig, 1.0);
    mbk_state *saved = mbk_state_create();
    mbk_state_copy(saved, mbk_integrator_get_state(ig));
    double h = mbk_integrator_get_predicted_step_size(ig);
    mbk_integrator_step_to(ig, 3.0);
    double y1[2];
    memcpy(y1, mbk_state_get_y(mbk_integrator_get_state(ig)), sizeof y1);
    mbk_integrator *ig2 = mbk_integrator_create_rkmerson(sys);
    mbk_integrator_set_accuracy(ig2, 1e-7);
    mbk_integrator_set_initial_step(ig2, h);
    mbk_integrator_initialize(ig2, saved);
    mbk_integrator_step_to(ig2, 3.0);
    CHECK(memcmp(y1, mbk_state_get_y(mbk_integrator_get_state(ig2)), sizeof y1) == 0);
    mbk_integrator_destroy(ig);
    mbk_integrator_destroy(ig2);
    mbk_state_destroy(saved);
    mbk_state_destroy(s);
    mbk_system_destroy(sys);
}

/* ------------------------------------------------------------------ */
/* The ODE/DAE view: Jacobian and residual                              */
/* ------------------------------------------------------------------ */

static void test_ode_view(void)
{
    mbk_system *sys = make_osc(NULL, FAIL_NONE, 0);
    mbk_state *s = default_state(sys);
    double y[2] = {0.3, -0.7}, yd[2], r[2], J[4];
    CHECK_INT(mbk_system_calc_ydot(sys, s, 0.5, y, yd), MBK_OK);
    CHECK_INT(mbk_system_calc_dae_residual(sys, s, 0.5, y, yd, r), MBK_OK);
    CHECK(r[0] == 0 && r[1] == 0);
    double yp[2] = {yd[0] + 1.0, yd[1] - 2.0};
    CHECK_INT(mbk_system_calc_dae_residual(sys, s, 0.5, y, yp, r), MBK_OK);
    CHECK_NEAR(r[0], 1.0, 1e-15);
    CHECK_NEAR(r[1], -2.0, 1e-15);
    long before = mbk_get_allocation_count();
    CHECK_INT(mbk_system_calc_ydot_jacobian(sys, s, J), MBK_OK);
    CHECK_INT(mbk_get_allocation_count() - before, 0);
    /* [[0, 1], [-k/m, -c/m]] */
    CHECK_NEAR(J[0], 0.0, 1e-7);
    CHECK_NEAR(J[1], 1.0, 1e-7);
    CHECK_NEAR(J[2], -OK / OM, 1e-6);
    CHECK_NEAR(J[3], -OC / OM, 1e-6);
    CHECK(mbk_state_get_y(s)[0] == 0.3 && mbk_state_get_y(s)[1] == -0.7);
    CHECK(mbk_state_get_stage(s) >= MBK_STAGE_ACCELERATION);
    CHECK(mbk_state_get_time(s) == 0.5);
    CHECK_INT(mbk_system_calc_ydot_jacobian(sys, s, NULL), MBK_EINVAL);
    CHECK_INT(mbk_system_calc_dae_residual(sys, s, 0.5, y, NULL, r), MBK_EINVAL);
    double bad[2] = {NAN, 0};
    CHECK_INT(mbk_system_calc_dae_residual(sys, s, 0.5, bad, yd, r), MBK_ENOTFINITE);
    mbk_state_destroy(s);
    mbk_system_destroy(sys);

    /* CVODE BDF and IDA with the system Jacobian reach the same answer */
    which ws[] = {I_BDF, I_IDA};
    for (int c = 0; c < 2; ++c) {
        if (!available(ws[c])) continue;
        sys = make_osc(NULL, FAIL_NONE, 0);
        s = default_state(sys);
        mbk_integrator *ig = make(ws[c], sys);
        mbk_integrator_set_accuracy(ig, 1e-8);
        mbk_integrator_set_use_system_jacobian(ig, true);
        CHECK_INT(mbk_integrator_initialize(ig, s), MBK_OK);
        CHECK_INT(mbk_integrator_step_to(ig, 2.0), MBK_OK);
        double x, v;
        osc_exact(2.0, &x, &v);
        mbk_integrator_stats st;
        mbk_integrator_get_stats(ig, &st);
        double err = fabs(mbk_state_get_q(mbk_integrator_get_state(ig))[0] - x);
        printf("  %-20s with mbk_system_calc_ydot_jacobian: error %.2e, %ld Jacobians\n", names[ws[c]], err,
               st.jacobian_evaluations);
        CHECK(err < 1e-6);
        CHECK(st.jacobian_evaluations > 0);
        mbk_integrator_destroy(ig);
        mbk_state_destroy(s);
        mbk_system_destroy(sys);
    }
}

/* ------------------------------------------------------------------ */
/* A custom integrator: the explicit midpoint rule through the ops      */
/* ------------------------------------------------------------------ */

typedef struct midpoint {
    double *k, *yt, *y1;
    int n;
} midpoint;

static int mid_init(void *impl, mbk_integrator *ig)
{
    midpoint *m = impl;
    int n = mbk_state_get_ny(mbk_integrator_get_state(ig));
    mbk_free(m->k);
    m->k = mbk_malloc(3 * (size_t)(n > 0 ? n : 1) * sizeof(double));
    if (!m->k) return MBK_ENOMEM;
    m->yt = m->k + n;
    m->y1 = m->yt + n;
    m->n = n;
    return 0;
}

static int mid_step(void *impl, mbk_integrator *ig, double t_stop)
{
    midpoint *m = impl;
    const mbk_state *s = mbk_integrator_get_state(ig);
    mbk_integrator_settings set;
    mbk_integrator_get_settings(ig, &set);
    double t0 = mbk_state_get_time(s), h = set.fixed_step > 0 ? set.fixed_step : 0.01;
    const double *y0 = mbk_state_get_y(s), *f0 = mbk_state_get_ydot(s);
    for (int tries = 0; tries < 50; ++tries, h *= 0.5) {
        bool land = t_stop - t0 <= h * (1 + 1e-9);
        double t1 = land ? t_stop : t0 + h, he = t1 - t0;
        mbk_integrator_upd_stats(ig)->steps_attempted++;
        for (int i = 0; i < m->n; ++i) m->yt[i] = y0[i] + 0.5 * he * f0[i];
        int rc = mbk_integrator_calc_ydot(ig, t0 + 0.5 * he, m->yt, m->k);
        if (rc == MBK_OK) {
            for (int i = 0; i < m->n; ++i) m->y1[i] = y0[i] + he * m->k[i];
            rc = mbk_integrator_commit_step(ig, t1, m->y1);
        }
        if (rc == MBK_ERETRY || rc == MBK_ENOTFINITE) continue;
        return rc;
    }
    return mbk_set_error(MBK_EINTEGRATOR, "midpoint: too many failures at t = %g", t0);
}

static void mid_destroy(void *impl)
{
    midpoint *m = impl;
    mbk_free(m->k);
    mbk_free(m);
}

static const mbk_integrator_ops midpoint_ops = {.name = "midpoint",
                                                .order = 2,
                                                .initialize = mid_init,
                                                .step = mid_step,
                                                .destroy = mid_destroy};

static int count_kicks(void *user, const mbk_system *sys, mbk_state *s, mbk_event_result *r)
{
    (void)sys;
    ++*(int *)user;
    mbk_state_upd_u(s)[0] += 0.5;
    r->lowest_modified = MBK_STAGE_VELOCITY;
    return 0;
}

static double x_of(void *user, const mbk_system *sys, const mbk_state *s)
{
    (void)user, (void)sys;
    return mbk_state_get_q(s)[0];
}

static int count_crossing(void *user, const mbk_system *sys, mbk_state *s, mbk_event_result *r)
{
    (void)sys, (void)r;
    double *t = user;
    if (t[0] == 0) t[0] = mbk_state_get_time(s);
    return 0;
}

static void step_counter(void *user, const mbk_system *sys, const mbk_state *s)
{
    (void)sys;
    long *n = user;
    ++*n;
    CHECK(mbk_state_get_stage(s) >= MBK_STAGE_REPORT);
}

static void test_custom_integrator(void)
{
    double e[3];
    for (int j = 0; j < 3; ++j) {
        mbk_system *sys = make_osc(NULL, FAIL_NONE, 0);
        mbk_state *s = default_state(sys);
        midpoint *m = mbk_calloc(1, sizeof *m);
        mbk_integrator *ig = mbk_integrator_create_custom(sys, &midpoint_ops, m);
        CHECK(strcmp(mbk_integrator_get_name(ig), "midpoint") == 0);
        CHECK(mbk_integrator_get_impl(ig) == m);
        mbk_integrator_set_fixed_step(ig, 0.01 / (1 << j));
        CHECK_INT(mbk_integrator_initialize(ig, s), MBK_OK);
        CHECK_INT(mbk_integrator_step_to(ig, 2.0), MBK_OK);
        double x, v;
        osc_exact(2.0, &x, &v);
        e[j] = fabs(mbk_state_get_q(mbk_integrator_get_state(ig))[0] - x);
        mbk_integrator_destroy(ig);
        mbk_state_destroy(s);
        mbk_system_destroy(sys);
    }
    printf("  custom midpoint integrator: errors %.3e %.3e %.3e, order %.2f %.2f\n", e[0], e[1], e[2],
           log2(e[0] / e[1]), log2(e[1] / e[2]));
    CHECK(fabs(log2(e[1] / e[2]) - 2.0) < 0.2);

    /* events and per-step reports through the driver */
    mbk_system *sys = mbk_system_create("oscillator + events");
    osc *o = mbk_calloc(1, sizeof *o);
    *o = (osc){OM, OK, OC, 0, 0, FAIL_NONE, 0, -1};
    mbk_system_add_subsystem(sys, &osc_ops, o);
    int kicks = 0;
    double first_zero[1] = {0};
    mbk_system_add_scheduled_event(sys, 0.25, count_kicks, &kicks);
    mbk_system_add_event_handler(sys, MBK_STAGE_POSITION, MBK_FALLING, x_of, count_crossing, first_zero);
    mbk_system_realize_topology(sys);
    mbk_state *s = default_state(sys);
    mbk_integrator *ig = mbk_integrator_create_custom(sys, &midpoint_ops, mbk_calloc(1, sizeof(midpoint)));
    mbk_integrator_set_fixed_step(ig, 1e-3);
    mbk_integrator_set_event_tolerance(ig, 1e-9);
    CHECK_INT(mbk_integrator_initialize(ig, s), MBK_OK);
    long reports = 0;
    CHECK_INT(mbk_integrator_integrate(ig, 1.0, step_counter, &reports), MBK_OK);
    mbk_integrator_stats st;
    mbk_integrator_get_stats(ig, &st);
    /* the first downward zero crossing after the kick at 0.25, from the exact solution */
    double x, v, tz = 0.25;
    osc_exact(0.25, &x, &v);
    for (double lo = 0.25, hi = 1.0; hi - lo > 1e-13;) {
        tz = 0.5 * (lo + hi);
        double w = sqrt(OK / OM), zeta = OC / (2.0 * sqrt(OK * OM)), wd = w * sqrt(1.0 - zeta * zeta);
        double a = x, b = (v + 0.5 + zeta * w * x) / wd, dt = tz - 0.25;
        double xt = exp(-zeta * w * dt) * (a * cos(wd * dt) + b * sin(wd * dt));
        if (xt > 0) lo = tz;
        else hi = tz;
    }
    printf("  custom integrator with events: kick at 0.25 (%d), first crossing %.9f (exact %.9f), %ld "
           "per-step reports for %ld steps\n", kicks, first_zero[0], tz, reports, st.steps_taken);
    CHECK_INT(kicks, 1);
    CHECK(fabs(first_zero[0] - tz) < 1e-5);
    CHECK_INT(reports, st.steps_taken);
    mbk_integrator_destroy(ig);
    mbk_state_destroy(s);
    mbk_system_destroy(sys);
}

int main(void)
{
    test_step_sizes();
    printf("fixed-step convergence orders (oscillator):\n");
    test_fixed_step_orders();
    printf("accuracy control (oscillator):\n");
    test_accuracy_control();
    test_sundials_reach_solution();
    printf("pendulum period against the elliptic integral:\n");
    test_pendulum_period();
    printf("pendulum energy:\n");
    test_pendulum_energy();
    test_chain_energy();
    test_fourbar_drift();
    printf("failures:\n");
    test_failures();
    test_bad_input();
    printf("allocation per step:\n");
    test_no_allocation();
    test_determinism();
    printf("ODE/DAE view:\n");
    test_ode_view();
    printf("custom integrator:\n");
    test_custom_integrator();
    return mbk_test_finish();
}
