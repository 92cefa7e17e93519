/* Driving mbk with an integrator that is not part of it.
 *
 * The model is a spherical pendulum: one body on a Ball mobilizer (a unit
 * quaternion, 4 q and 3 u) under gravity, spinning as it swings. The
 * external integrator sees only the plain ODE view y' = f(t, y) of
 * include/mbk/integrator.h:
 *
 *   - the right-hand side is mbk_system_calc_ydot on a work State;
 *   - after every output interval the solution is put back on the
 *     manifold with mbk_system_project (here: the quaternion normalized),
 *     and the external integrator is restarted when that moved y by more
 *     than a small tolerance;
 *   - at the end the example checks mbk_system_calc_dae_residual (zero for
 *     y' = ydot) and mbk_system_calc_ydot_jacobian against a directional
 *     difference.
 *
 * With MBK_WITH_ARKODE defined (and the program linked with SUNDIALS'
 * libsundials_arkode) the integrator is ARKODE's explicit Runge-Kutta
 * stepper ERKStep; otherwise it is SUNDIALS CVODE's Adams method called
 * directly (libmbk links CVODE already). Either way mbk's own integrators
 * are not used. Exits nonzero if energy is not conserved to 1e-6 or the
 * quaternion leaves unit length. */
#include <math.h>
#include <mbk/mbk.h>
#include <stdio.h>
#include <string.h>

#include <nvector/nvector_serial.h>
#include <sundials/sundials_context.h>
#ifdef MBK_WITH_ARKODE
#include <arkode/arkode_erkstep.h>
#else
#include <cvode/cvode.h>
#include <sunnonlinsol/sunnonlinsol_fixedpoint.h>
#endif

typedef struct model {
    const mbk_system *sys;
    mbk_state *work; /* the State the right-hand side realizes */
    long calls;
} model;

/* y' = f(t, y) for SUNDIALS: one call of the ODE view. */
static int rhs(realtype t, N_Vector y, N_Vector ydot, void *user)
{
    model *m = user;
    m->calls++;
    int rc = mbk_system_calc_ydot(m->sys, m->work, t, N_VGetArrayPointer(y), N_VGetArrayPointer(ydot));
    /* mbk's convention maps onto SUNDIALS': recoverable failures retry with a smaller step */
    return rc == MBK_OK ? 0 : rc == MBK_ERETRY ? 1 : -1;
}

/* ---- the external integrator, behind three calls ---------------------------- */

#ifdef MBK_WITH_ARKODE
static const char *ext_name = "ARKODE ERKStep (explicit Runge-Kutta)";
static void *ext_create(model *m, double t0, N_Vector y, SUNContext ctx)
{
    void *mem = ERKStepCreate(rhs, t0, y, ctx);
    if (mem) {
        ERKStepSStolerances(mem, 1e-9, 1e-9);
        ERKStepSetUserData(mem, m);
    }
    return mem;
}
static int ext_advance(void *mem, double tout, N_Vector y, double *t)
{
    return ERKStepEvolve(mem, tout, y, t, ARK_NORMAL);
}
static int ext_restart(void *mem, double t, N_Vector y) { return ERKStepReset(mem, t, y); }
static void ext_free(void **mem) { ERKStepFree(mem); }
#else
static const char *ext_name = "CVODE Adams, called directly";
static SUNNonlinearSolver nls;
static void *ext_create(model *m, double t0, N_Vector y, SUNContext ctx)
{
    void *mem = CVodeCreate(CV_ADAMS, ctx);
    if (mem && CVodeInit(mem, rhs, t0, y) == CV_SUCCESS) {
        CVodeSStolerances(mem, 1e-9, 1e-9);
        CVodeSetUserData(mem, m);
        nls = SUNNonlinSol_FixedPoint(y, 0, ctx);
        CVodeSetNonlinearSolver(mem, nls);
    }
    return mem;
}
static int ext_advance(void *mem, double tout, N_Vector y, double *t)
{
    return CVode(mem, tout, y, t, CV_NORMAL);
}
static int ext_restart(void *mem, double t, N_Vector y) { return CVodeReInit(mem, t, y); }
static void ext_free(void **mem)
{
    CVodeFree(mem);
    SUNNonlinSolFree(nls);
}
#endif

static int fail(const char *what)
{
    fprintf(stderr, "external_integrator: %s: %s\n", what, mbk_last_error());
    return 1;
}

int main(void)
{
    /* A 2 kg body hanging 0.8 m below a ball joint, gravity along -z. */
    mbk_system *sys = mbk_multibody_create("spherical pendulum");
    mbk_matter *matter = mbk_multibody_upd_matter(sys);
    mbk_mass_props mp = mbk_mass_props_from_central(2.0, mbk_vec3_make(0, 0, -0.8), mbk_mat33_diag(0.02, 0.02, 0.01));
    mbk_transform X = mbk_transform_identity();
    if (mbk_matter_add_body(matter, 0, &X, &mp, &X, mbk_mobilizer_ball()) < 0) return fail("adding the body");
    if (mbk_force_add_gravity(mbk_multibody_upd_forces(sys), mbk_vec3_make(0, 0, -9.81)) < 0) return fail("gravity");
    if (mbk_system_realize_topology(sys) < 0) return fail("realizing the topology");

    /* Initial State: tilted 1 rad about x, swinging about z and spinning about its axis. */
    mbk_state *s = mbk_state_create();
    if (mbk_state_init(s, sys) < 0 || mbk_system_realize(sys, s, MBK_STAGE_MODEL) < 0) return fail("state");
    double *q = mbk_state_upd_q(s);
    q[0] = cos(0.5), q[1] = sin(0.5), q[2] = 0, q[3] = 0;
    double *u = mbk_state_upd_u(s);
    u[0] = 0.0, u[1] = 0.0, u[2] = 3.0;
    if (mbk_system_realize(sys, s, MBK_STAGE_ACCELERATION) < 0) return fail("realizing");
    const int ny = mbk_state_get_ny(s);
    printf("y = [q u z] has %d entries (nq %d, nu %d, nz %d)\n", ny, mbk_state_get_nq(s),
           mbk_state_get_nu(s), mbk_state_get_nz(s));

    double ke, pe;
    mbk_system_calc_energy(sys, s, &ke, &pe);
    const double e0 = ke + pe;

    model m = {sys, mbk_state_create(), 0};
    mbk_state_copy(m.work, s);
    SUNContext ctx;
    if (SUNContext_Create(NULL, &ctx) != 0) return fail("SUNDIALS context");
    N_Vector y = N_VNew_Serial(ny, ctx);
    memcpy(N_VGetArrayPointer(y), mbk_state_get_y(s), (size_t)ny * sizeof(double));
    void *mem = ext_create(&m, 0.0, y, ctx);
    if (!mem) return fail("creating the external integrator");

    double t = 0.0, drift = 0.0, qerr = 0.0;
    int restarts = 0;
    for (int k = 1; k <= 500; ++k) { /* 5 s in steps of 0.01 s */
        if (ext_advance(mem, 0.01 * k, y, &t) < 0) return fail("the external integrator failed");
        /* back onto the manifold: |quaternion| = 1 (and, with constraints, q then u) */
        double *yd = N_VGetArrayPointer(y);
        if (mbk_state_set_time(s, t) < 0 || mbk_state_set_y(s, yd, ny) < 0) return fail("setting y");
        if (mbk_system_project(sys, s, 1e-10) < 0) return fail("projecting");
        const double *yp = mbk_state_get_y(s);
        double moved = 0;
        for (int i = 0; i < ny; ++i) moved = fmax(moved, fabs(yp[i] - yd[i]));
        qerr = fmax(qerr, moved);
        /* Small corrections only change the output; when the integrator's own solution has
           drifted further, restart it from the projected one (a restart costs a few steps). */
        memcpy(yd, yp, (size_t)ny * sizeof(double));
        if (moved > 1e-8) {
            ext_restart(mem, t, y);
            ++restarts;
        }
        if (mbk_system_realize(sys, s, MBK_STAGE_VELOCITY) < 0 || mbk_system_calc_energy(sys, s, &ke, &pe) < 0)
            return fail("energy");
        drift = fmax(drift, fabs(ke + pe - e0) / fabs(e0));
    }
    printf("%s: t = %.2f s, %ld right-hand sides, %d restarts after projection\n", ext_name, t, m.calls,
           restarts);
    printf("energy %.9f J -> %.9f J, max relative drift %.2e; largest projection %.2e\n", e0, ke + pe,
           drift, qerr);

    /* The DAE residual of (y, ydot) is zero, and J v matches a directional difference. */
    double ydot[7], r[7], J[49], v[7], fp[7], yv[7];
    if (ny > 7) return fail("unexpected size");
    if (mbk_system_calc_ydot(sys, s, t, NULL, ydot) < 0) return fail("ydot");
    if (mbk_system_calc_dae_residual(sys, s, t, mbk_state_get_y(s), ydot, r) < 0) return fail("residual");
    double rmax = 0;
    for (int i = 0; i < ny; ++i) rmax = fmax(rmax, fabs(r[i]));
    if (mbk_system_calc_ydot_jacobian(sys, s, J) < 0) return fail("Jacobian");
    const double eps = 1e-6;
    for (int i = 0; i < ny; ++i) {
        v[i] = 0.3 + 0.1 * i;
        yv[i] = mbk_state_get_y(s)[i] + eps * v[i];
    }
    if (mbk_system_calc_ydot(sys, m.work, t, yv, fp) < 0) return fail("ydot");
    double jerr = 0, jscale = 0;
    for (int i = 0; i < ny; ++i) {
        double Jv = 0;
        for (int j = 0; j < ny; ++j) Jv += J[i * ny + j] * v[j];
        jerr = fmax(jerr, fabs(Jv - (fp[i] - ydot[i]) / eps));
        jscale = fmax(jscale, fabs(Jv));
    }
    printf("DAE residual max |r| = %.1e; Jacobian: |J v - difference| = %.1e (|J v| up to %.1f)\n", rmax,
           jerr, jscale);

    ext_free(&mem);
    N_VDestroy(y);
    SUNContext_Free(&ctx);
    mbk_state_destroy(m.work);
    mbk_state_destroy(s);
    mbk_system_destroy(sys);
    if (drift > 1e-6 || rmax > 0 || jerr > 1e-4 * fmax(1.0, jscale)) {
        fprintf(stderr, "external_integrator: check failed (drift %.2e, residual %.1e, Jacobian %.1e)\n",
                drift, rmax, jerr);
        return 1;
    }
    return 0;
}
