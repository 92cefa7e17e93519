/* SUNDIALS IDA, called directly as a user would, on mbk's stabilized index-2
 * (GGL) residual with the multipliers as algebraic variables
 * (mbk_system_calc_constrained_dae_residual, mbk/external.h): IDA's own
 * difference-quotient Jacobian, the algebraic components marked with
 * IDASetId and left out of the error test (IDASetSuppressAlg), consistent
 * initial values from mbk_system_get_dae_values. Two models:
 *   - a free body (quaternion) on a Rod under gravity;
 *   - the four-bar with its redundant Ball row left out (the rows of
 *     mbk_matter_select_independent_constraints).
 * The first step is set to 1e-4: IDA's own choice at this tolerance (about
 * 1e-10) gives Newton matrices too ill-conditioned for an index-2 system
 * (their condition grows as (1/h)^2), and IDA fails at t = 0 on the four-bar.
 * After 1 s the positions and speeds agree with RK-Merson at accuracy 1e-11,
 * the position constraints hold to IDA's Newton tolerance (GGL keeps them in
 * the residual), mu stays near 0 and lambda agrees with the multipliers the
 * library solves for at IDA's final State. */
#include "mbk/constraints.h"
#include "mbk/external.h"
#include "mbk/forces.h"
#include "mbk/integrator.h"
#include "mbk/matter.h"
#include "mbk/mobilizer.h"
#include "mbk/state.h"
#include "mbk/status.h"
#include "mbk/system.h"
#include "mbk_test.h"
#include "test_models.h"

#include <ida/ida.h>
#include <math.h>
#include <nvector/nvector_serial.h>
#include <string.h>
#include <sundials/sundials_context.h>
#include <sunlinsol/sunlinsol_dense.h>
#include <sunmatrix/sunmatrix_dense.h>

enum { N_MAX = 32 };

typedef struct user {
    const mbk_system *sys;
    mbk_state *work;
    mbk_dae_options o;
    long calls;
} user;

/* F(t, y, y') for IDA: mbk's status mapped onto IDA's (recoverable > 0, fatal < 0). */
static int residual(realtype t, N_Vector y, N_Vector yp, N_Vector r, void *data)
{
    user *u = data;
    u->calls++;
    int rc = mbk_system_calc_constrained_dae_residual(u->sys, u->work, &u->o, t, N_VGetArrayPointer(y),
                                                      N_VGetArrayPointer(yp), N_VGetArrayPointer(r));
    return rc == MBK_OK ? 0 : (rc == MBK_ENOTFINITE || rc == MBK_ERETRY) ? 1 : -1;
}

/* Integrate s0 to t_end with IDA on the GGL form; compare with RK-Merson. */
static void run(const char *name, const mbk_system *sys, mbk_state *s0, const int *rows, int n_rows, double t_end)
{
    user u = {sys, mbk_state_create(), {MBK_DAE_GGL, rows, n_rows}, 0};
    mbk_state_copy(u.work, s0);
    mbk_dae_layout L;
    CHECK(ok(mbk_system_get_dae_layout(sys, s0, &u.o, &L), "layout"));
    int n = L.n;
    CHECK(n <= N_MAX);
    SUNContext ctx;
    CHECK(SUNContext_Create(NULL, &ctx) == 0);
    N_Vector y = N_VNew_Serial(n, ctx), yp = N_VNew_Serial(n, ctx), id = N_VNew_Serial(n, ctx);
    CHECK(ok(mbk_system_get_dae_values(sys, s0, &u.o, N_VGetArrayPointer(y), N_VGetArrayPointer(yp)), "values"));
    for (int i = 0; i < n; ++i) NV_Ith_S(id, i) = i < L.ny ? 1.0 : 0.0;
    void *mem = IDACreate(ctx);
    SUNMatrix A = SUNDenseMatrix(n, n, ctx);
    SUNLinearSolver LS = SUNLinSol_Dense(y, A, ctx);
    double t0 = mbk_state_get_time(s0), t = t0;
    int flag = IDAInit(mem, residual, t0, y, yp);
    flag |= IDASetUserData(mem, &u);
    flag |= IDASStolerances(mem, 1e-9, 1e-9);
    flag |= IDASetLinearSolver(mem, LS, A);
    flag |= IDASetId(mem, id);
    flag |= IDASetSuppressAlg(mem, SUNTRUE);
    flag |= IDASetMaxNumSteps(mem, 100000);
    /* IDA's own first step at this tolerance is about 1e-10 (0.5 / |yp| in its weighted
       norm): cj = 1/h ~ 1e10 makes an index-2 Newton matrix (condition ~ cj^2) useless
       for the four-bar. A first step of 1e-4 is the usual remedy. */
    flag |= IDASetInitStep(mem, 1e-4);
    CHECK(flag == 0);
    flag = IDASolve(mem, t_end, &t, y, yp, IDA_NORMAL);
    if (!CHECK(flag >= 0 && t == t_end)) fprintf(stderr, "    %s: IDASolve returned %d at t = %g\n", name, flag, t);
    long nst = 0;
    IDAGetNumSteps(mem, &nst);

    /* the reference */
    mbk_integrator *ig = mbk_integrator_create_rkmerson(sys);
    mbk_integrator_set_accuracy(ig, 1e-11);
    mbk_integrator_set_constraint_tolerance(ig, 1e-12);
    CHECK(ok(mbk_integrator_initialize(ig, s0), "initialize"));
    CHECK(ok(mbk_integrator_step_to(ig, t_end), "reference"));
    const double *ref = mbk_state_get_y(mbk_integrator_get_state(ig));
    const double *yy = N_VGetArrayPointer(y);
    double err = 0, scale = 1;
    for (int i = 0; i < L.ny; ++i) {
        err = fmax(err, fabs(yy[i] - ref[i]));
        scale = fmax(scale, fabs(ref[i]));
    }
    /* IDA's final State: constraints and multipliers */
    mbk_state *s = mbk_state_create();
    mbk_state_copy(s, s0);
    mbk_state_set_time(s, t);
    mbk_state_set_y(s, yy, L.ny);
    CHECK(ok(mbk_system_realize(sys, s, MBK_STAGE_ACCELERATION), "realize IDA's State"));
    double perr = 0, mu = 0, lam_err = 0, lam_scale = 1;
    for (int i = 0; i < mbk_state_get_nqerr(s); ++i) perr = fmax(perr, fabs(mbk_state_get_qerr(s)[i]));
    for (int i = 0; i < L.nmu; ++i) mu = fmax(mu, fabs(yy[L.ny + L.nlambda + i]));
    double want[N_MAX], wp[N_MAX];
    CHECK(ok(mbk_system_get_dae_values(sys, s, &u.o, want, wp), "multipliers at IDA's State"));
    for (int i = 0; i < L.nlambda; ++i) {
        lam_err = fmax(lam_err, fabs(yy[L.ny + i] - want[L.ny + i]));
        lam_scale = fmax(lam_scale, fabs(want[L.ny + i]));
    }
    printf("%s: IDA on the GGL form (n = %d), %ld steps, %ld residuals: |y - ref| %.2g, |perr| %.2g, |mu| %.2g, "
           "|lambda - solved| %.2g of %.2g\n", name, n, nst, u.calls, err, perr, mu, lam_err, lam_scale);
    CHECK(err <= 1e-6 * scale);
    CHECK(perr <= 1e-9);
    CHECK(mu <= 1e-6);
    CHECK(lam_err <= 1e-4 * lam_scale);
    mbk_state_destroy(s);
    mbk_integrator_destroy(ig);
    IDAFree(&mem);
    SUNLinSolFree(LS);
    SUNMatDestroy(A);
    N_VDestroy(y);
    N_VDestroy(yp);
    N_VDestroy(id);
    SUNContext_Free(&ctx);
    mbk_state_destroy(u.work);
}

int main(void)
{
    mbk_system *sys = rod_pendulum();
    mbk_state *s = mbk_state_create();
    mbk_state_init(s, sys);
    mbk_system_realize(sys, s, MBK_STAGE_MODEL);
    double *u = mbk_state_upd_u(s);
    u[0] = 1.0, u[1] = -0.5, u[2] = 2.0, u[3] = 0.3;
    CHECK(ok(mbk_system_assemble(sys, s, 1e-13), "assemble"));
    CHECK(ok(mbk_system_project(sys, s, 1e-13), "project"));
    run("free body on a Rod", sys, s, NULL, 0, 1.0);
    mbk_state_destroy(s);
    mbk_system_destroy(sys);

    sys = fourbar();
    s = fourbar_state(sys, MBK_STAGE_ACCELERATION);
    int rows[3], n = 0;
    CHECK(ok(mbk_matter_select_independent_constraints(mbk_multibody_get_matter(sys), s, rows, &n), "rows"));
    CHECK_INT(n, 2);
    run("four-bar, independent rows", sys, s, rows, n, 1.0);
    mbk_state_destroy(s);
    mbk_system_destroy(sys);
    return mbk_test_finish();
}
