/* A Newton-based implicit integrator written against mbk's public API only.
 *
 * The method is Alexander's three-stage SDIRK (singly diagonally implicit
 * Runge-Kutta, order 3, L-stable, stiffly accurate), a common choice for
 * stiff mechanical models. Each stage solves
 *
 *     Y_i = y_n + h sum_{j<i} a_ij K_j + h g f(t_n + c_i h, Y_i),   K_i = f(t_i, Y_i)
 *
 * by a simplified Newton iteration with the matrix I - h g J, J = df/dy from
 * mbk_system_calc_ydot_jacobian at the start of the step (one Jacobian and
 * one LU factorization per step: the stages share g). The right-hand side
 * f is mbk_system_calc_ydot (y = [q u z], the constrained accelerations
 * solved inside the State: the index-1 view). After each step the new State
 * is put back on the constraint manifold by mbk_system_project (q and u,
 * quaternions normalized).
 *
 * The model is stiff and has everything that makes N(q) and the projection
 * matter: a body on a Ball mobilizer (a quaternion: 4 q, 3 u) hanging from
 * Ground, a second link on a Pin below it, a stiff damped spring (k = 2000
 * N/m, c = 5 N s/m, rest length 0.75 m) pulling the second link's tip toward a Ground point, and
 * a constraint keeping that tip in the plane z = 0 (its fastest mode is
 * near 150 rad/s). The SDIRK runs with fixed steps h = 0.002 and 0.001.
 *
 * Checks (the program exits nonzero if one fails):
 *   - the result at t = 1 agrees with the library's RK-Merson at accuracy
 *     1e-12 (the reference) to 3e-4 at h = 0.002 and 4e-5 at h = 0.001, the
 *     observed order between the two is 3 (2.8 to 3.2), and their Richardson
 *     extrapolation agrees with the reference to 3e-6 (measured: 1.9e-4,
 *     2.4e-5, order 2.99, 6.8e-7);
 *   - the constraint and the quaternion stay satisfied (max |perr| after the
 *     projection below 1e-10);
 *   - the final State's index-3 DAE residual (mbk/external.h), built from
 *     the State with mbk_system_get_dae_values, is zero: the State is a
 *     consistent solution of M u' + G^T lambda = f, perr = 0. */
#include <math.h>
#include <mbk/mbk.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static const double T_END = 1.0;

static int fail(const char *what)
{
    fprintf(stderr, "implicit_integrator: %s: %s\n", what, mbk_last_error());
    return 1;
}

/* ---- the model ------------------------------------------------------------- */

static mbk_system *build(void)
{
    mbk_system *sys = mbk_multibody_create("stiff pendulum");
    mbk_matter *m = mbk_multibody_upd_matter(sys);
    mbk_forces *f = mbk_multibody_upd_forces(sys);
    /* two 1 m links with their centres at their origins; the joints 0.5 m above */
    mbk_mass_props link = mbk_mass_props_from_central(1.0, mbk_vec3_zero(), mbk_mat33_diag(0.084, 0.002, 0.084));
    mbk_transform id = mbk_transform_identity(), top = mbk_transform_from_p(mbk_vec3_make(0, 0.5, 0));
    mbk_transform bottom = mbk_transform_from_p(mbk_vec3_make(0, -0.5, 0));
    int b1 = mbk_matter_add_body(m, 0, &id, &link, &top, mbk_mobilizer_ball());
    int b2 = mbk_matter_add_body(m, b1, &bottom, &link, &top, mbk_mobilizer_pin());
    mbk_vec3 tip = mbk_vec3_make(0, -0.5, 0), anchor = mbk_vec3_make(0.8, -2.0, 0);
    if (b1 < 0 || b2 < 0 || mbk_force_add_gravity(f, mbk_vec3_make(0, -9.81, 0)) < 0 ||
        mbk_force_add_two_point_linear_spring(f, 0, anchor, b2, tip, 2000.0, 0.75) < 0 ||
        mbk_force_add_two_point_linear_damper(f, 0, anchor, b2, tip, 5.0) < 0 ||
        mbk_constraint_add_point_in_plane(m, 0, mbk_vec3_make(0, 0, 1), 0.0, b2, tip) < 0 ||
        mbk_system_realize_topology(sys) < 0) {
        mbk_system_destroy(sys);
        return NULL;
    }
    return sys;
}

/* The initial State: swinging in the plane and spinning about the link's axis
   (which the plane constraint allows), projected onto the manifold. */
static mbk_state *initial_state(const mbk_system *sys)
{
    mbk_state *s = mbk_state_create();
    if (!s || mbk_state_init(s, sys) < 0 || mbk_system_realize(sys, s, MBK_STAGE_MODEL) < 0) return NULL;
    double *u = mbk_state_upd_u(s); /* Ball: w_FM (3), Pin: 1 */
    u[0] = 0.3;
    u[1] = 2.0;
    u[2] = 1.5;
    u[3] = -1.0;
    if (mbk_system_project(sys, s, 1e-13) < 0 || mbk_system_realize(sys, s, MBK_STAGE_ACCELERATION) < 0) {
        mbk_state_destroy(s);
        return NULL;
    }
    return s;
}

/* ---- dense LU with partial pivoting ---------------------------------------- */

static int lu_factor(double *A, int n, int *piv)
{
    for (int k = 0; k < n; ++k) {
        int p = k;
        for (int i = k + 1; i < n; ++i)
            if (fabs(A[i * n + k]) > fabs(A[p * n + k])) p = i;
        if (A[p * n + k] == 0.0) return -1;
        piv[k] = p;
        if (p != k)
            for (int j = 0; j < n; ++j) {
                double t = A[k * n + j];
                A[k * n + j] = A[p * n + j];
                A[p * n + j] = t;
            }
        for (int i = k + 1; i < n; ++i) {
            double l = A[i * n + k] /= A[k * n + k];
            for (int j = k + 1; j < n; ++j) A[i * n + j] -= l * A[k * n + j];
        }
    }
    return 0;
}

static void lu_solve(const double *A, int n, const int *piv, double *b)
{
    for (int k = 0; k < n; ++k) { /* the row swaps first, in order, then L */
        double t = b[piv[k]];
        b[piv[k]] = b[k];
        b[k] = t;
    }
    for (int k = 0; k < n; ++k)
        for (int i = k + 1; i < n; ++i) b[i] -= A[i * n + k] * b[k];
    for (int k = n - 1; k >= 0; --k) {
        for (int j = k + 1; j < n; ++j) b[k] -= A[k * n + j] * b[j];
        b[k] /= A[k * n + k];
    }
}

/* ---- the SDIRK integrator ---------------------------------------------------- */

typedef struct sdirk {
    const mbk_system *sys;
    mbk_state *cur;  /* the solution, realized to Acceleration */
    mbk_state *work; /* the State the right-hand side realizes */
    int ny;
    double *J, *A, *K, *Y, *dy, *f;
    int *piv;
    long newton_iterations, jacobians, rhs_calls;
} sdirk;

/* Alexander's SDIRK3: g the root of g^3 - 3 g^2 + 3 g / 2 - 1/6 = 0 in (1/6, 1/2). */
static const double GAMMA = 0.43586652150845899942;
#define B1 (-(6 * GAMMA * GAMMA - 16 * GAMMA + 1) / 4)
#define B2 ((6 * GAMMA * GAMMA - 20 * GAMMA + 5) / 4)

static int sdirk_init(sdirk *ig, const mbk_system *sys, const mbk_state *initial)
{
    memset(ig, 0, sizeof *ig);
    ig->sys = sys;
    ig->cur = mbk_state_create();
    ig->work = mbk_state_create();
    if (!ig->cur || !ig->work || mbk_state_copy(ig->cur, initial) < 0 || mbk_state_copy(ig->work, initial) < 0)
        return -1;
    int n = ig->ny = mbk_state_get_ny(initial);
    ig->J = malloc(sizeof(double) * (size_t)(2 * n * n + 6 * n));
    ig->piv = malloc(sizeof(int) * (size_t)n);
    if (!ig->J || !ig->piv) return -1;
    ig->A = ig->J + n * n;
    ig->K = ig->A + n * n; /* 3 stages */
    ig->Y = ig->K + 3 * n;
    ig->dy = ig->Y + n;
    ig->f = ig->dy + n;
    return 0;
}

static void sdirk_free(sdirk *ig)
{
    mbk_state_destroy(ig->cur);
    mbk_state_destroy(ig->work);
    free(ig->J);
    free(ig->piv);
}

/* One step of size h from the current State; on success it becomes the new one. */
static int sdirk_step(sdirk *ig, double h)
{
    const int n = ig->ny;
    const double a[3][3] = {{GAMMA, 0, 0}, {(1 - GAMMA) / 2, GAMMA, 0}, {B1, B2, GAMMA}};
    const double c[3] = {GAMMA, (1 + GAMMA) / 2, 1.0};
    double t0 = mbk_state_get_time(ig->cur);
    const double *y0 = mbk_state_get_y(ig->cur);
    /* J at the start of the step (the State is left at Acceleration at its own y) */
    if (mbk_system_calc_ydot_jacobian(ig->sys, ig->cur, ig->J) < 0) return fail("Jacobian");
    ig->jacobians++;
    for (int i = 0; i < n * n; ++i) ig->A[i] = -h * GAMMA * ig->J[i];
    for (int i = 0; i < n; ++i) ig->A[i * n + i] += 1.0;
    if (lu_factor(ig->A, n, ig->piv) < 0) {
        fprintf(stderr, "implicit_integrator: singular Newton matrix at t = %g\n", t0);
        return 1;
    }
    for (int st = 0; st < 3; ++st) {
        double ti = t0 + c[st] * h, *Ki = ig->K + st * n;
        /* the known part base = y0 + h sum_{j<i} a_ij K_j, and a start Y = base + h g K_{i-1} */
        double *base = ig->f;
        for (int k = 0; k < n; ++k) {
            double s = y0[k];
            for (int j = 0; j < st; ++j) s += h * a[st][j] * ig->K[j * n + k];
            base[k] = s;
        }
        const double *guess = st == 0 ? mbk_state_get_ydot(ig->cur) : ig->K + (st - 1) * n;
        for (int k = 0; k < n; ++k) ig->Y[k] = base[k] + h * GAMMA * guess[k];
        bool converged = false;
        for (int it = 0; it < 20 && !converged; ++it) {
            if (mbk_system_calc_ydot(ig->sys, ig->work, ti, ig->Y, Ki) < 0) return fail("right-hand side");
            ig->rhs_calls++;
            ig->newton_iterations++;
            /* residual R = Y - base - h g f(Y); correction (I - h g J) d = -R */
            double dnorm = 0, ynorm = 0;
            for (int k = 0; k < n; ++k) ig->dy[k] = -(ig->Y[k] - base[k] - h * GAMMA * Ki[k]);
            lu_solve(ig->A, n, ig->piv, ig->dy);
            for (int k = 0; k < n; ++k) {
                ig->Y[k] += ig->dy[k];
                dnorm = fmax(dnorm, fabs(ig->dy[k]));
                ynorm = fmax(ynorm, fabs(ig->Y[k]));
            }
            converged = dnorm <= 1e-13 * (1 + ynorm);
        }
        if (!converged) {
            fprintf(stderr, "implicit_integrator: Newton did not converge at t = %g (stage %d)\n", t0, st);
            return 1;
        }
        if (mbk_system_calc_ydot(ig->sys, ig->work, ti, ig->Y, Ki) < 0) return fail("right-hand side");
        ig->rhs_calls++;
    }
    /* stiffly accurate: y1 = the last stage; then back onto the manifold */
    if (mbk_state_set_time(ig->cur, t0 + h) < 0 || mbk_state_set_y(ig->cur, ig->Y, n) < 0 ||
        mbk_system_project(ig->sys, ig->cur, 1e-12) < 0 || mbk_system_realize(ig->sys, ig->cur, MBK_STAGE_ACCELERATION) < 0)
        return fail("commit the step");
    return 0;
}

static int run(const mbk_system *sys, const mbk_state *s0, double h, double *y_end, double *perr_max, sdirk *stats)
{
    sdirk ig;
    if (sdirk_init(&ig, sys, s0) < 0) return fail("set up the SDIRK");
    int steps = (int)lround(T_END / h), rc = 0;
    *perr_max = 0;
    for (int i = 0; i < steps && rc == 0; ++i) {
        rc = sdirk_step(&ig, i + 1 == steps ? T_END - mbk_state_get_time(ig.cur) : h);
        const double *perr = mbk_state_get_qerr(ig.cur);
        for (int k = 0; rc == 0 && k < mbk_state_get_nqerr(ig.cur); ++k) *perr_max = fmax(*perr_max, fabs(perr[k]));
    }
    if (rc == 0) memcpy(y_end, mbk_state_get_y(ig.cur), sizeof(double) * (size_t)ig.ny);
    *stats = ig;
    stats->cur = stats->work = NULL;
    sdirk_free(&ig);
    return rc;
}

static double max_diff(const double *a, const double *b, int n)
{
    double d = 0;
    for (int i = 0; i < n; ++i) d = fmax(d, fabs(a[i] - b[i]));
    return d;
}

int main(void)
{
    mbk_system *sys = build();
    if (!sys) return fail("build the model");
    mbk_state *s0 = initial_state(sys);
    if (!s0) return fail("initial State");
    int ny = mbk_state_get_ny(s0), failed = 0;
    printf("model: Ball (quaternion) + Pin, stiff damped spring, point-in-plane constraint; ny = %d (nq %d, nu %d)\n",
           ny, mbk_state_get_nq(s0), mbk_state_get_nu(s0));

    /* the reference: the library's RK-Merson at accuracy 1e-12 */
    double ref[32], y1[32], y2[32], perr1, perr2;
    mbk_integrator *lib = mbk_integrator_create_rkmerson(sys);
    if (!lib || mbk_integrator_set_accuracy(lib, 1e-12) < 0 || mbk_integrator_set_constraint_tolerance(lib, 1e-12) < 0 ||
        mbk_integrator_initialize(lib, s0) < 0 || mbk_integrator_step_to(lib, T_END) != MBK_OK)
        return fail("reference run");
    memcpy(ref, mbk_state_get_y(mbk_integrator_get_state(lib)), sizeof(double) * (size_t)ny);
    mbk_integrator_stats ls;
    mbk_integrator_get_stats(lib, &ls);
    mbk_integrator_destroy(lib);

    sdirk st1, st2;
    if (run(sys, s0, 0.002, y1, &perr1, &st1) || run(sys, s0, 0.001, y2, &perr2, &st2)) return 1;
    double e1 = max_diff(y1, ref, ny), e2 = max_diff(y2, ref, ny), order = log2(e1 / e2), yr[32];
    for (int i = 0; i < ny; ++i) yr[i] = y2[i] + (y2[i] - y1[i]) / 7; /* Richardson: order 3 -> 4 */
    double er = max_diff(yr, ref, ny);
    printf("reference: RK-Merson at accuracy 1e-12, %ld steps\n", ls.steps_taken);
    printf("SDIRK3 h = 0.002: error %.3g, %ld Jacobians, %ld Newton iterations, %ld rhs calls, max |perr| %.2g\n",
           e1, st1.jacobians, st1.newton_iterations, st1.rhs_calls, perr1);
    printf("SDIRK3 h = 0.001: error %.3g, %ld Jacobians, %ld Newton iterations, %ld rhs calls, max |perr| %.2g\n",
           e2, st2.jacobians, st2.newton_iterations, st2.rhs_calls, perr2);
    printf("observed order %.2f; Richardson extrapolation of the two: error %.3g\n", order, er);
    if (!(e1 <= 3e-4) || !(e2 <= 4e-5) || !(er <= 3e-6)) {
        fprintf(stderr, "implicit_integrator: the SDIRK disagrees with the library (%.3g, %.3g, %.3g)\n", e1, e2, er);
        failed = 1;
    }
    if (!(order > 2.8 && order < 3.2)) {
        fprintf(stderr, "implicit_integrator: observed order %.2f, expected about 3\n", order);
        failed = 1;
    }
    if (!(perr1 <= 1e-10 && perr2 <= 1e-10)) {
        fprintf(stderr, "implicit_integrator: constraint errors %.3g, %.3g after projection\n", perr1, perr2);
        failed = 1;
    }

    /* the final State solves the index-3 DAE: its residual from its own values is zero */
    mbk_state *s = mbk_state_create();
    mbk_state_copy(s, s0);
    mbk_dae_options o = {MBK_DAE_INDEX3, NULL, 0};
    mbk_dae_layout L;
    double y[40], yp[40], r[40];
    if (mbk_state_set_time(s, T_END) < 0 || mbk_state_set_y(s, y2, ny) < 0 || mbk_system_project(sys, s, 1e-13) < 0 ||
        mbk_system_get_dae_layout(sys, s, &o, &L) < 0 || L.n > 40 || mbk_system_get_dae_values(sys, s, &o, y, yp) < 0 ||
        mbk_system_calc_constrained_dae_residual(sys, s, &o, T_END, y, yp, r) < 0)
        return fail("index-3 residual");
    double rmax = 0;
    for (int i = 0; i < L.n; ++i) rmax = fmax(rmax, fabs(r[i]));
    printf("index-3 DAE (n = %d: %d multiplier) residual at the final State: %.2g\n", L.n, L.nlambda, rmax);
    if (!(rmax <= 1e-9)) {
        fprintf(stderr, "implicit_integrator: index-3 residual %.3g\n", rmax);
        failed = 1;
    }
    mbk_state_destroy(s);
    mbk_state_destroy(s0);
    mbk_system_destroy(sys);
    return failed;
}
