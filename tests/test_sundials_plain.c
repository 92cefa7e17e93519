/* mbk's CVODE and IDA against SUNDIALS driven plainly (issue 18, "IDA does 6x
 * the work it should").
 *
 * (a) The planar four-bar of `mbk run builtin:fourbar` (a closed loop:
 *     constraint solve and projection), 10 s at accuracy 1e-6 with an output
 *     every 0.01 s: CVODE BDF and Adams driven directly through SUNDIALS' API
 *     on mbk_system_calc_ydot, and IDA on mbk_system_calc_dae_residual (same
 *     tolerances, same outputs, CV_NORMAL / IDA_NORMAL, SUNDIALS' own
 *     difference-quotient Jacobians), beside mbk's own integrators of the same
 *     kind. mbk's steps and Jacobians are within 1.5x of plain SUNDIALS'; at
 *     t = 1 s, mbk's answer is no further from a tight RK-Merson reference than
 *     twice plain SUNDIALS' (and is on the constraint manifold, which plain
 *     SUNDIALS' is not).
 * (b) Every solver restart is reported: IDAReInit, CVodeReInit, IDAInit and
 *     CVodeInit are interposed here (defined in this program, forwarding to
 *     SUNDIALS through dlsym(RTLD_NEXT)), and the `reinitializations`
 *     statistic must equal the restarts that really happened: none in (a); one
 *     per bounce for a bouncing ball with a report every 0.01 s (where bounce
 *     times are also checked against the analytic ones and every report against
 *     the analytic trajectory: steps that pass a report time are interpolated
 *     back, and a root found past one is handed over at the next step); and
 *     the drift restarts of Adams and IDA on a long, loose four-bar run. */
#define _GNU_SOURCE
#include <dlfcn.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include <cvode/cvode.h>
#include <cvode/cvode_ls.h>
#include <ida/ida.h>
#include <ida/ida_ls.h>
#include <nvector/nvector_serial.h>
#include <sunlinsol/sunlinsol_dense.h>
#include <sunmatrix/sunmatrix_dense.h>
#include <sunnonlinsol/sunnonlinsol_fixedpoint.h>

#include "mbk/mbk.h"
#include "integrator_table.h"
#include "mbk_test.h"
#include "test_util.h"
#include "test_models.h"

/* ------------------------------------------------------------------ */
/* Counting SUNDIALS' (re)initializations                               */
/* ------------------------------------------------------------------ */

static long n_ida_init, n_ida_reinit, n_cv_init, n_cv_reinit;

/* The next definition of `name` after this program's own (SUNDIALS'). */
static void *next_symbol(const char *name)
{
    void *p = dlsym(RTLD_NEXT, name);
    if (!p) {
        fprintf(stderr, "dlsym(RTLD_NEXT, %s): %s\n", name, dlerror());
        abort();
    }
    return p;
}

int IDAInit(void *mem, IDAResFn res, sunrealtype t0, N_Vector yy0, N_Vector yp0)
{
    static int (*real)(void *, IDAResFn, sunrealtype, N_Vector, N_Vector);
    if (!real) {
        void *p = next_symbol("IDAInit");
        memcpy(&real, &p, sizeof p);
    }
    n_ida_init++;
    return real(mem, res, t0, yy0, yp0);
}

int IDAReInit(void *mem, sunrealtype t0, N_Vector yy0, N_Vector yp0)
{
    static int (*real)(void *, sunrealtype, N_Vector, N_Vector);
    if (!real) {
        void *p = next_symbol("IDAReInit");
        memcpy(&real, &p, sizeof p);
    }
    n_ida_reinit++;
    return real(mem, t0, yy0, yp0);
}

int CVodeInit(void *mem, CVRhsFn f, sunrealtype t0, N_Vector y0)
{
    static int (*real)(void *, CVRhsFn, sunrealtype, N_Vector);
    if (!real) {
        void *p = next_symbol("CVodeInit");
        memcpy(&real, &p, sizeof p);
    }
    n_cv_init++;
    return real(mem, f, t0, y0);
}

int CVodeReInit(void *mem, sunrealtype t0, N_Vector y0)
{
    static int (*real)(void *, sunrealtype, N_Vector);
    if (!real) {
        void *p = next_symbol("CVodeReInit");
        memcpy(&real, &p, sizeof p);
    }
    n_cv_reinit++;
    return real(mem, t0, y0);
}

/* SUNDIALS set-ups and restarts so far (every kind of solver together). */
static long solver_inits(void) { return n_ida_init + n_cv_init; }
static long solver_reinits(void) { return n_ida_reinit + n_cv_reinit; }

/* ------------------------------------------------------------------ */
/* Models                                                               */
/* ------------------------------------------------------------------ */

/* `mbk run builtin:fourbar` (apps/app_models.c): crank 0.4 m, coupler 1 m, rocker
   0.8 m, ground 1 m, on pins, the loop closed by a ball; gravity -y; the crank at
   0.5 rad turning at 3 rad/s, assembled with the crank locked. */
static mbk_system *make_fourbar(mbk_state **s0)
{
    mbk_system *sys = mbk_multibody_create("fourbar");
    builtin_fourbar_add(sys, mbk_vec3_make(0, -9.81, 0), NULL);
    mbk_system_realize_topology(sys);
    mbk_state *s = test_new_state(sys);
    const double u[3] = {3.0, 0, 0};
    builtin_fourbar_start(sys, s, u, true);
    *s0 = s;
    return sys;
}

/* Largest position or velocity constraint error of y. */
static double constraint_error(const mbk_system *sys, mbk_state *w, const double *y)
{
    mbk_state_set_y(w, y, mbk_state_get_ny(w));
    mbk_system_realize(sys, w, MBK_STAGE_VELOCITY);
    const double *qe = mbk_state_get_qerr(w), *ue = mbk_state_get_uerr(w);
    double e = 0;
    for (int i = 0; i < mbk_state_get_nqerr(w); ++i) e = fmax(e, fabs(qe[i]));
    for (int i = 0; i < mbk_state_get_nuerr(w); ++i) e = fmax(e, fabs(ue[i]));
    return e;
}

static double max_diff(const double *a, const double *b, int n)
{
    double d = 0;
    for (int i = 0; i < n; ++i) d = fmax(d, fabs(a[i] - b[i]));
    return d;
}

/* ------------------------------------------------------------------ */
/* (a) the four-bar: plain SUNDIALS beside mbk                          */
/* ------------------------------------------------------------------ */

enum { FB_NY = 6 };
static const double FB_ACC = 1e-6, FB_T = 10.0, FB_DT = 0.01, FB_CHECK_T = 1.0;

typedef struct run_result {
    long steps, jacobians, reinits;
    long setups; /* plain CVODE BDF: Newton-matrix setups */
    double y_check[FB_NY]; /* y at FB_CHECK_T */
    double y_end[FB_NY];
    double worst_constraint; /* over every output */
} run_result;

typedef struct plain_user {
    const mbk_system *sys;
    mbk_state *s;
} plain_user;

static int plain_rhs(sunrealtype t, N_Vector y, N_Vector ydot, void *user)
{
    plain_user *p = user;
    int rc = mbk_system_calc_ydot(p->sys, p->s, t, N_VGetArrayPointer(y), N_VGetArrayPointer(ydot));
    return rc == MBK_OK ? 0 : rc == MBK_ERETRY ? 1 : -1;
}

static int plain_res(sunrealtype t, N_Vector y, N_Vector yp, N_Vector r, void *user)
{
    plain_user *p = user;
    int rc = mbk_system_calc_dae_residual(p->sys, p->s, t, N_VGetArrayPointer(y), N_VGetArrayPointer(yp),
                                          N_VGetArrayPointer(r));
    return rc == MBK_OK ? 0 : rc == MBK_ERETRY ? 1 : -1;
}

/* Number of outputs and the k-th output time (k = 1..n), as `mbk run` samples. */
static long n_outputs(void) { return (long)ceil(FB_T / FB_DT - 1e-9); }
static double output_time(long k) { return k == n_outputs() ? FB_T : k * FB_DT; }
static bool is_check_time(long k) { return k == (long)lround(FB_CHECK_T / FB_DT); }

/* SUNDIALS driven as a user would: y = [q u] from s0, y' = ydot there, rtol = atol =
   FB_ACC, NORMAL mode to each output time, dense direct solver with SUNDIALS' own
   difference-quotient Jacobian (BDF, IDA), fixed-point iteration (Adams). */
static void run_plain(which w, const mbk_system *sys, const mbk_state *s0, run_result *out)
{
    memset(out, 0, sizeof *out);
    SUNContext ctx;
    if (!CHECK(SUNContext_Create(NULL, &ctx) == 0)) return;
    plain_user pu = {sys, mbk_state_create()};
    mbk_state_copy(pu.s, s0);
    mbk_state *probe = mbk_state_create();
    mbk_state_copy(probe, s0);
    mbk_system_realize(sys, pu.s, MBK_STAGE_ACCELERATION);
    N_Vector y = N_VNew_Serial(FB_NY, ctx), yp = N_VNew_Serial(FB_NY, ctx);
    memcpy(N_VGetArrayPointer(y), mbk_state_get_y(pu.s), sizeof(double) * FB_NY);
    memcpy(N_VGetArrayPointer(yp), mbk_state_get_ydot(pu.s), sizeof(double) * FB_NY);
    SUNMatrix A = SUNDenseMatrix(FB_NY, FB_NY, ctx);
    SUNLinearSolver LS = SUNLinSol_Dense(y, A, ctx);
    SUNNonlinearSolver NLS = NULL;
    void *mem = NULL;
    int flag = 0;
    long nst = 0, nje = 0;
    sunrealtype tret;
    if (w == I_IDA) {
        mem = IDACreate(ctx);
        flag |= IDAInit(mem, plain_res, mbk_state_get_time(s0), y, yp);
        flag |= IDASStolerances(mem, FB_ACC, FB_ACC);
        flag |= IDASetUserData(mem, &pu);
        flag |= IDASetLinearSolver(mem, LS, A);
        flag |= IDASetMaxNumSteps(mem, -1);
    } else {
        mem = CVodeCreate(w == I_BDF ? CV_BDF : CV_ADAMS, ctx);
        flag |= CVodeInit(mem, plain_rhs, mbk_state_get_time(s0), y);
        flag |= CVodeSStolerances(mem, FB_ACC, FB_ACC);
        flag |= CVodeSetUserData(mem, &pu);
        if (w == I_BDF) {
            flag |= CVodeSetLinearSolver(mem, LS, A);
        } else {
            NLS = SUNNonlinSol_FixedPoint(y, 0, ctx);
            flag |= CVodeSetNonlinearSolver(mem, NLS);
        }
        flag |= CVodeSetMaxNumSteps(mem, -1);
    }
    CHECK_INT(flag, 0);
    for (long k = 1; k <= n_outputs() && flag >= 0; ++k) {
        double t = output_time(k);
        flag = w == I_IDA ? IDASolve(mem, t, &tret, y, yp, IDA_NORMAL) : CVode(mem, t, y, &tret, CV_NORMAL);
        if (is_check_time(k)) memcpy(out->y_check, N_VGetArrayPointer(y), sizeof out->y_check);
        double e = constraint_error(sys, probe, N_VGetArrayPointer(y));
        if (e > out->worst_constraint) out->worst_constraint = e;
    }
    CHECK(flag >= 0);
    memcpy(out->y_end, N_VGetArrayPointer(y), sizeof out->y_end);
    if (w == I_IDA) {
        IDAGetNumSteps(mem, &nst);
        IDAGetNumJacEvals(mem, &nje);
        IDAFree(&mem);
    } else {
        CVodeGetNumSteps(mem, &nst);
        if (w == I_BDF) {
            CVodeGetNumJacEvals(mem, &nje);
            CVodeGetNumLinSolvSetups(mem, &out->setups);
        }
        CVodeFree(&mem);
    }
    out->steps = nst;
    out->jacobians = nje;
    if (NLS) SUNNonlinSolFree(NLS);
    SUNLinSolFree(LS);
    SUNMatDestroy(A);
    N_VDestroy(y);
    N_VDestroy(yp);
    mbk_state_destroy(pu.s);
    mbk_state_destroy(probe);
    SUNContext_Free(&ctx);
}

/* mbk's integrator of kind w over the same outputs; the restarts SUNDIALS really saw
   (besides the set-up at initialization) into *actual_reinits. */
static void run_mbk(which w, const mbk_system *sys, const mbk_state *s0, run_result *out, long *actual_reinits)
{
    memset(out, 0, sizeof *out);
    mbk_integrator *ig = make(w, sys);
    mbk_state *probe = mbk_state_create();
    mbk_state_copy(probe, s0);
    mbk_integrator_set_accuracy(ig, FB_ACC);
    long init0 = solver_inits(), reinit0 = solver_reinits();
    int rc = mbk_integrator_initialize(ig, s0);
    CHECK_INT(rc, MBK_OK);
    CHECK_INT(solver_inits() - init0, 1);
    init0 = solver_inits();
    for (long k = 1; k <= n_outputs() && rc == MBK_OK; ++k) {
        rc = mbk_integrator_step_to(ig, output_time(k));
        const mbk_state *s = mbk_integrator_get_state(ig);
        if (is_check_time(k)) memcpy(out->y_check, mbk_state_get_y(s), sizeof out->y_check);
        double e = constraint_error(sys, probe, mbk_state_get_y(s));
        if (e > out->worst_constraint) out->worst_constraint = e;
    }
    if (rc != MBK_OK) fprintf(stderr, "%s: %s\n", names[w], mbk_last_error());
    CHECK_INT(rc, MBK_OK);
    memcpy(out->y_end, mbk_state_get_y(mbk_integrator_get_state(ig)), sizeof out->y_end);
    mbk_integrator_stats st;
    mbk_integrator_get_stats(ig, &st);
    out->steps = st.steps_taken;
    out->jacobians = st.jacobian_evaluations;
    out->reinits = st.reinitializations;
    *actual_reinits = (solver_reinits() - reinit0) + (solver_inits() - init0);
    mbk_integrator_destroy(ig);
    mbk_state_destroy(probe);
}

static void test_fourbar_against_plain(void)
{
    mbk_state *s0;
    mbk_system *sys = make_fourbar(&s0);
    CHECK_INT(mbk_state_get_ny(s0), FB_NY);
    /* the reference at FB_CHECK_T: RK-Merson far tighter than the runs */
    double ref[FB_NY];
    mbk_integrator *rk = mbk_integrator_create_rkmerson(sys);
    mbk_integrator_set_accuracy(rk, 1e-12);
    CHECK_INT(mbk_integrator_initialize(rk, s0), MBK_OK);
    CHECK_INT(mbk_integrator_step_to(rk, FB_CHECK_T), MBK_OK);
    memcpy(ref, mbk_state_get_y(mbk_integrator_get_state(rk)), sizeof ref);
    mbk_integrator_destroy(rk);

    const which kinds[3] = {I_BDF, I_ADAMS, I_IDA};
    for (int c = 0; c < 3; ++c) {
        which w = kinds[c];
        run_result plain = {0}, own = {0};
        long actual = -1;
        run_plain(w, sys, s0, &plain);
        run_mbk(w, sys, s0, &own, &actual);
        double err_plain = max_diff(plain.y_check, ref, FB_NY), err_own = max_diff(own.y_check, ref, FB_NY);
        printf("  %-12s plain SUNDIALS: %5ld steps %4ld Jacobians, error at t = 1 s %.2e, constraint "
               "error up to %.1e\n"
               "  %-12s mbk:            %5ld steps %4ld Jacobians, error at t = 1 s %.2e, constraint "
               "error up to %.1e, %ld restarts (SUNDIALS saw %ld)\n",
               names[w], plain.steps, plain.jacobians, err_plain, plain.worst_constraint, "", own.steps,
               own.jacobians, err_own, own.worst_constraint, own.reinits, actual);
        CHECK(plain.steps > 100);
        CHECK(own.steps <= 1.5 * plain.steps);
        /* mbk's CVODE BDF takes a fresh analytic Jacobian at every Newton-matrix setup, plain
           SUNDIALS reuses its difference quotients for up to 51 steps */
        CHECK(own.jacobians <= 1.5 * (w == I_BDF ? plain.setups : plain.jacobians));
        if (w != I_ADAMS) CHECK(plain.jacobians > 0 && own.jacobians > 0);
        /* as accurate as SUNDIALS on its own, and on the constraint manifold */
        CHECK(err_own <= 2 * err_plain);
        CHECK(own.worst_constraint <= FB_ACC);
        /* every restart reported, and none was needed */
        CHECK_INT(own.reinits, actual);
        CHECK_INT(own.reinits, 0);
    }
    mbk_state_destroy(s0);
    mbk_system_destroy(sys);
}

/* ------------------------------------------------------------------ */
/* (b) restarts: a bouncing ball, and drift on a long loose run          */
/* ------------------------------------------------------------------ */

static const double G = 9.81, REST = 0.8, H0 = 1.0;

typedef struct bounces {
    double t[16];
    int n;
} bounces;

static int bounce(void *user, const mbk_system *sys, mbk_state *s, mbk_event_result *r)
{
    (void)sys;
    bounces *b = user;
    if (b->n < 16) b->t[b->n++] = mbk_state_get_time(s);
    mbk_state_upd_u(s)[0] *= -REST;
    r->lowest_modified = MBK_STAGE_VELOCITY;
    return 0;
}

/* Analytic time of bounce k (0, 1, ...) of a ball dropped from H0 at rest. */
static double bounce_time(int k) { return drop_bounce_time(H0, G, REST, k); }

/* Analytic height at t. */
static double ball_height(double t)
{
    if (t <= bounce_time(0)) return H0 - 0.5 * G * t * t;
    int k = 0;
    while (t > bounce_time(k + 1)) k++;
    double v = G * bounce_time(0) * pow(REST, k + 1), s = t - bounce_time(k);
    return v * s - 0.5 * G * s * s;
}

static void test_bounce_restarts(void)
{
    const which kinds[3] = {I_BDF, I_ADAMS, I_IDA};
    for (int c = 0; c < 3; ++c) {
        which w = kinds[c];
        bounces b = {{0}, 0};
        mbk_system *sys = mbk_multibody_create("ball");
        slider_ball_add(sys, G);
        mbk_system_add_event_handler(sys, MBK_STAGE_POSITION, MBK_FALLING, q0_witness, bounce, &b);
        mbk_system_realize_topology(sys);
        mbk_state *s = test_new_state(sys);
        mbk_state_upd_q(s)[0] = H0;
        mbk_integrator *ig = make(w, sys);
        mbk_integrator_set_accuracy(ig, 1e-8);
        mbk_integrator_set_event_tolerance(ig, 1e-7);
        long init0 = solver_inits(), reinit0 = solver_reinits();
        CHECK_INT(mbk_integrator_initialize(ig, s), MBK_OK);
        init0++;
        /* reports every 0.01 s until just after the sixth bounce (off the report grid) */
        const double T = bounce_time(5) + 0.005;
        int rc = MBK_OK, events = 0;
        double worst = 0;
        for (long k = 1; 0.01 * (k - 1) < T && rc >= 0; ++k) {
            double t = fmin(0.01 * k, T);
            while ((rc = mbk_integrator_step_to(ig, t)) == MBK_EVENT) events++;
            if (rc < 0) break;
            const mbk_state *r = mbk_integrator_get_state(ig);
            CHECK(mbk_state_get_time(r) == t);
            worst = fmax(worst, fabs(mbk_state_get_q(r)[0] - ball_height(t)));
        }
        if (rc < 0) fprintf(stderr, "%s: %s\n", names[w], mbk_last_error());
        CHECK(rc >= 0);
        double emax = 0;
        for (int i = 0; i < b.n; ++i) emax = fmax(emax, fabs(b.t[i] - bounce_time(i)));
        mbk_integrator_stats st;
        mbk_integrator_get_stats(ig, &st);
        long actual = (solver_reinits() - reinit0) + (solver_inits() - init0);
        printf("  %-12s %d bounces (max |t - t_exact| %.1e s), worst |q - q_exact| at reports %.1e, %ld "
               "steps, %ld restarts (SUNDIALS saw %ld)\n",
               names[w], b.n, emax, worst, st.steps_taken, st.reinitializations, actual);
        CHECK_INT(b.n, 6);
        CHECK_INT(events, b.n);
        CHECK(emax < 1e-6);
        CHECK(worst < 1e-5);
        /* one restart per bounce (each after its handler), and each one reported */
        CHECK_INT(st.reinitializations, actual);
        CHECK_INT(st.reinitializations, b.n);
        mbk_integrator_destroy(ig);
        mbk_state_destroy(s);
        mbk_system_destroy(sys);
    }
}

/* Adams and IDA keep their own (unprojected) solution and restart from the projected
   one when it has drifted too far: on a long loose run that happens, and is counted. */
static void test_drift_restarts(void)
{
    const which kinds[2] = {I_ADAMS, I_IDA};
    for (int c = 0; c < 2; ++c) {
        which w = kinds[c];
        mbk_state *s0;
        mbk_system *sys = make_fourbar(&s0);
        mbk_state *probe = mbk_state_create();
        mbk_state_copy(probe, s0);
        mbk_integrator *ig = make(w, sys);
        mbk_integrator_set_accuracy(ig, 1e-3);
        long init0 = solver_inits(), reinit0 = solver_reinits();
        CHECK_INT(mbk_integrator_initialize(ig, s0), MBK_OK);
        init0++;
        int rc = MBK_OK;
        double worst = 0;
        for (int k = 1; k <= 300 && rc == MBK_OK; ++k) {
            rc = mbk_integrator_step_to(ig, 0.1 * k);
            worst = fmax(worst, constraint_error(sys, probe, mbk_state_get_y(mbk_integrator_get_state(ig))));
        }
        CHECK_INT(rc, MBK_OK);
        mbk_integrator_stats st;
        mbk_integrator_get_stats(ig, &st);
        long actual = (solver_reinits() - reinit0) + (solver_inits() - init0);
        printf("  %-12s 30 s at accuracy 1e-3: %ld steps, %ld restarts (SUNDIALS saw %ld), constraint "
               "errors up to %.1e\n", names[w], st.steps_taken, st.reinitializations, actual, worst);
        CHECK(st.reinitializations > 0);
        CHECK_INT(st.reinitializations, actual);
        CHECK(worst <= 1e-3);
        mbk_integrator_destroy(ig);
        mbk_state_destroy(probe);
        mbk_state_destroy(s0);
        mbk_system_destroy(sys);
    }
}

int main(void)
{
    printf("four-bar, 10 s, accuracy 1e-6, outputs every 0.01 s:\n");
    test_fourbar_against_plain();
    printf("bouncing ball, reports every 0.01 s:\n");
    test_bounce_restarts();
    printf("drift restarts:\n");
    test_drift_restarts();
    return mbk_test_finish();
}
