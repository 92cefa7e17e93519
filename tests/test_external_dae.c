/* The DAE residual with the constraint rows in it (mbk/external.h):
 * (1) the layouts of the index-1, index-3 and GGL forms;
 * (2) on a consistent solution from a library integrator (RK-Merson at
 *     accuracy 1e-10 with tight projection) every form's residual is zero:
 *     a free body (quaternion) on a Rod, a Pin child under a constant speed
 *     (nonholonomic), a Slider under a constant acceleration
 *     (acceleration-only), gravity, and a subsystem with one z; and the
 *     four-bar whose Ball has a redundant row, with all rows (the State's
 *     minimum-norm multipliers) and with the independent rows only;
 *     y built from the State's own getters agrees with mbk_system_get_dae_values;
 * (3) the Jacobian structure is as documented: central differences of the
 *     residual in y and yp against zero blocks and against M, N, G, P N^+,
 *     N P^T and the acceleration-only rows of G;
 * (4) bad input: NULL arrays, NaN, bad options, a stale State: a clear status
 *     and the State's variables unchanged;
 * (5) the checks can fail: a planted sign error in the reference of
 *     dr_u/dlambda, and a perturbed multiplier, are caught;
 * (6) the residual, layout and values calls allocate nothing. */
#include "mbk/alloc.h"
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

#include <math.h>
#include <stdlib.h>
#include <string.h>

enum { N_MAX = 40 };

static double max_abs(const double *a, int n)
{
    double d = 0;
    for (int i = 0; i < n; ++i) d = fmax(d, fabs(a[i]));
    return d;
}

/* Free body on a Rod; Pin child at constant speed; Slider grandchild at constant acceleration; one z. */
static mbk_system *rod_chain(void)
{
    mbk_system *sys = mbk_multibody_create("rod chain");
    mbk_matter *m = mbk_multibody_upd_matter(sys);
    mbk_transform id = mbk_transform_identity(), off = mbk_transform_from_p(mbk_vec3_make(0.3, 0, 0.1));
    mbk_mass_props mp = mbk_mass_props_from_central(1.0, mbk_vec3_make(0, 0, 0), mbk_mat33_diag(0.1, 0.2, 0.3));
    int b1 = mbk_matter_add_body(m, 0, &id, &mp, &id, mbk_mobilizer_free());
    int b2 = mbk_matter_add_body(m, b1, &off, &mp, &id, mbk_mobilizer_pin());
    int b3 = mbk_matter_add_body(m, b2, &off, &mp, &id, mbk_mobilizer_slider());
    mbk_force_add_gravity(mbk_multibody_upd_forces(sys), mbk_vec3_make(0, -9.81, 0));
    mbk_constraint_add_rod(m, 0, mbk_vec3_make(0, 1, 0), b1, mbk_vec3_make(0.2, 0.1, -0.1), 1.0);
    mbk_constraint_add_constant_speed(m, b2, 0, 0.5);
    mbk_constraint_add_constant_acceleration(m, b3, 0, -0.4);
    mbk_system_add_subsystem(sys, &one_z_ops, NULL);
    mbk_system_realize_topology(sys);
    return sys;
}

/* A consistent State: assembled, then integrated by RK-Merson (accuracy 1e-10,
   projection to 1e-12) to t = 0.3; a copy, realized to Acceleration. */
static mbk_state *consistent_state(const mbk_system *sys, const double *q, const double *u, const bool *locked)
{
    mbk_state *s = mbk_state_create();
    mbk_state_init(s, sys);
    mbk_system_realize(sys, s, MBK_STAGE_MODEL);
    if (q) mbk_state_set_q(s, q, mbk_state_get_nq(s));
    if (u) mbk_state_set_u(s, u, mbk_state_get_nu(s));
    CHECK(ok(mbk_system_assemble_locked(sys, s, 1e-13, locked), "assemble"));
    mbk_integrator *ig = mbk_integrator_create_rkmerson(sys);
    mbk_integrator_set_accuracy(ig, 1e-10);
    mbk_integrator_set_constraint_tolerance(ig, 1e-12);
    CHECK(ok(mbk_integrator_initialize(ig, s), "initialize"));
    CHECK(ok(mbk_integrator_step_to(ig, 0.3), "integrate"));
    mbk_state_copy(s, mbk_integrator_get_state(ig));
    mbk_integrator_destroy(ig);
    CHECK(ok(mbk_system_realize(sys, s, MBK_STAGE_ACCELERATION), "realize"));
    return s;
}

static double RP[N_MAX], RM[N_MAX];

/* dr/dy (wrt_yp false) or dr/dyp, n x n row-major, by central differences of step h. */
static void fd_jacobian(const mbk_system *sys, mbk_state *s, const mbk_dae_options *o, int n, const double *y,
                        const double *yp, bool wrt_yp, double *J)
{
    double a[N_MAX], b[N_MAX], t = mbk_state_get_time(s);
    for (int j = 0; j < n; ++j) {
        memcpy(a, y, sizeof(double) * (size_t)n);
        memcpy(b, yp, sizeof(double) * (size_t)n);
        double *v = wrt_yp ? b : a, h = 1e-6 * fmax(1.0, fabs(v[j]));
        v[j] += h;
        mbk_system_calc_constrained_dae_residual(sys, s, o, t, a, b, RP);
        v[j] -= 2 * h;
        mbk_system_calc_constrained_dae_residual(sys, s, o, t, a, b, RM);
        for (int i = 0; i < n; ++i) J[i * n + j] = (RP[i] - RM[i]) / (2 * h);
    }
}

/* max |J[r0..r1) x [c0..c1) - ref|, ref (r1-r0) x (c1-c0) row-major (NULL: zero), scaled by `sign`. */
static double block_diff(const double *J, int n, int r0, int r1, int c0, int c1, const double *ref, double sign)
{
    double d = 0;
    for (int i = r0; i < r1; ++i)
        for (int j = c0; j < c1; ++j) {
            double want = ref ? sign * ref[(i - r0) * (c1 - c0) + (j - c0)] : 0.0;
            d = fmax(d, fabs(J[i * n + j] - want));
        }
    return d;
}

/* (2) and (3) for one form on one State. */
static void check_form(const mbk_system *sys, mbk_state *s, mbk_dae_form form, const int *rows, int n_rows,
                       const char *what)
{
    const mbk_matter *m = mbk_multibody_get_matter(sys);
    mbk_dae_options o = {form, rows, n_rows};
    mbk_dae_layout L;
    CHECK(ok(mbk_system_get_dae_layout(sys, s, &o, &L), what));
    int n = L.n, ny = L.ny, nq = L.nq, nu = L.nu, nl = L.nlambda, nm = L.nmu;
    CHECK(n <= N_MAX && n == ny + nl + nm);
    CHECK_INT(nl, rows ? n_rows : (form == MBK_DAE_INDEX1 ? 0 : mbk_state_get_num_multipliers(s)));
    CHECK_INT(nm, form == MBK_DAE_GGL ? L.np : 0);
    double y[N_MAX], yp[N_MAX], r[N_MAX];
    CHECK(ok(mbk_system_get_dae_values(sys, s, &o, y, yp), "dae values"));
    /* [q u z] and [qdot udot zdot] straight from the State; with every row, lambda is the State's */
    CHECK(memcmp(y, mbk_state_get_y(s), sizeof(double) * (size_t)ny) == 0);
    CHECK(memcmp(yp, mbk_state_get_ydot(s), sizeof(double) * (size_t)ny) == 0);
    if (!rows && nl > 0) CHECK(memcmp(y + ny, mbk_state_get_multipliers(s), sizeof(double) * (size_t)nl) == 0);
    for (int i = ny + nl; i < n; ++i) CHECK(y[i] == 0.0);
    double t = mbk_state_get_time(s);
    CHECK(ok(mbk_system_calc_constrained_dae_residual(sys, s, &o, t, y, yp, r), what));
    double scale = 1 + max_abs(yp, ny);
    double worst = max_abs(r, n);
    if (!CHECK(worst <= 1e-9 * scale)) fprintf(stderr, "    %s: |r| = %.3g\n", what, worst);
    /* (5) a multiplier off by 1e-3 is seen in r_u */
    if (nl > 0) {
        y[ny] += 1e-3;
        mbk_system_calc_constrained_dae_residual(sys, s, &o, t, y, yp, r);
        CHECK(max_abs(r + nq, nu) > 1e-5);
        y[ny] -= 1e-3;
    }
    if (form == MBK_DAE_INDEX1) return;

    /* (3) the Jacobian's structure */
    static double Jy[N_MAX * N_MAX], Jp[N_MAX * N_MAX], M[N_MAX * N_MAX], N[N_MAX * N_MAX], Np[N_MAX * N_MAX],
        G[N_MAX * N_MAX], ref[N_MAX * N_MAX];
    fd_jacobian(sys, s, &o, n, y, yp, false, Jy);
    fd_jacobian(sys, s, &o, n, y, yp, true, Jp);
    mbk_system_realize(sys, s, MBK_STAGE_VELOCITY);
    CHECK(ok(mbk_matter_calc_mass_matrix(m, s, M), "M"));
    CHECK(ok(mbk_matter_calc_G(m, s, G), "G"));
    int mt = L.m, nqm = mbk_matter_get_num_q(m, s);
    CHECK_INT(nqm, nq); /* matter owns every q and u here */
    double e[N_MAX], col[N_MAX];
    for (int j = 0; j < nu; ++j) { /* dense N and N^+ */
        memset(e, 0, sizeof e);
        e[j] = 1;
        mbk_matter_multiply_by_N(m, s, false, e, col);
        for (int i = 0; i < nq; ++i) N[i * nu + j] = col[i];
    }
    for (int j = 0; j < nq; ++j) {
        memset(e, 0, sizeof e);
        e[j] = 1;
        mbk_matter_multiply_by_N_pinv(m, s, false, e, col);
        for (int i = 0; i < nu; ++i) Np[i * nq + j] = col[i];
    }
    const double tol = 2e-6 * (1 + max_abs(M, nu * nu));
    int lam0 = ny, mu0 = ny + nl;
    /* dr/dyp: I, M, I on the diagonal, the acceleration-only rows of G, zero elsewhere */
    for (int i = 0; i < nq; ++i) ref[i] = 1;
    double dq = 0;
    for (int i = 0; i < nq; ++i)
        for (int j = 0; j < n; ++j) dq = fmax(dq, fabs(Jp[i * n + j] - (i == j)));
    CHECK(dq <= tol);
    CHECK(block_diff(Jp, n, nq, nq + nu, nq, nq + nu, M, 1.0) <= tol);
    CHECK(block_diff(Jp, n, nq, nq + nu, 0, nq, NULL, 0) <= tol);
    CHECK(block_diff(Jp, n, nq, nq + nu, nq + nu, n, NULL, 0) <= tol);
    for (int i = nq + nu; i < ny; ++i)
        for (int j = 0; j < n; ++j) CHECK(fabs(Jp[i * n + j] - (i == j)) <= tol);
    for (int i = 0; i < nl; ++i) {
        int row = rows ? rows[i] : i;
        bool acc_only = i >= L.np + L.nv;
        for (int j = 0; j < n; ++j) {
            double want = acc_only && j >= nq && j < nq + nu ? G[row * nu + (j - nq)] : 0.0;
            CHECK(fabs(Jp[(lam0 + i) * n + j] - want) <= tol);
        }
    }
    CHECK(block_diff(Jp, n, mu0, n, 0, n, NULL, 0) <= tol);
    /* dr_q/du = -N; dr_q/dlambda = 0; dr_q/dmu = N P_K^T */
    CHECK(block_diff(Jy, n, 0, nq, nq, nq + nu, N, -1.0) <= tol);
    CHECK(block_diff(Jy, n, 0, nq, lam0, mu0, NULL, 0) <= tol);
    if (nm > 0) {
        for (int i = 0; i < nq; ++i)
            for (int k = 0; k < nm; ++k) {
                double d = 0;
                for (int j = 0; j < nu; ++j) d += N[i * nu + j] * G[(rows ? rows[k] : k) * nu + j];
                ref[i * nm + k] = d;
            }
        CHECK(block_diff(Jy, n, 0, nq, mu0, n, ref, 1.0) <= tol);
    }
    /* dr_u/dlambda = G_K^T; (5) the reference with a planted sign is refused */
    for (int i = 0; i < nu; ++i)
        for (int k = 0; k < nl; ++k) ref[i * nl + k] = G[(rows ? rows[k] : k) * nu + i];
    CHECK(block_diff(Jy, n, nq, nq + nu, lam0, mu0, ref, 1.0) <= tol);
    if (nl > 0 && max_abs(ref, nu * nl) > 1e-2) CHECK(block_diff(Jy, n, nq, nq + nu, lam0, mu0, ref, -1.0) > 1e-3);
    CHECK(block_diff(Jy, n, nq, nq + nu, mu0, n, NULL, 0) <= tol);
    CHECK(block_diff(Jy, n, nq + nu, ny, lam0, n, NULL, 0) <= tol);
    /* constraint rows: holonomic P_K N^+ (index 3, and GGL's mu rows), P_K in u (GGL),
       nonholonomic V_K in u; no lambda or mu columns, no z columns */
    for (int i = 0; i < nl + nm; ++i) {
        bool mu_row = i >= nl;
        int ki = mu_row ? i - nl : i, row = rows ? rows[ki] : ki;
        bool hol = ki < L.np, pos_level = mu_row || (hol && form == MBK_DAE_INDEX3);
        double *Jr = Jy + (size_t)(lam0 + i) * (size_t)n;
        double dd = 0;
        if (pos_level) {
            for (int j = 0; j < nq; ++j) {
                double want = 0;
                for (int k = 0; k < nu; ++k) want += G[row * nu + k] * Np[k * nq + j];
                dd = fmax(dd, fabs(Jr[j] - want));
            }
            for (int j = nq; j < nq + nu; ++j) dd = fmax(dd, fabs(Jr[j]));
        } else if (ki < L.np + L.nv) {
            for (int j = nq; j < nq + nu; ++j) dd = fmax(dd, fabs(Jr[j] - G[row * nu + (j - nq)]));
        }
        for (int j = nq + nu; j < n; ++j) dd = fmax(dd, fabs(Jr[j]));
        if (!CHECK(dd <= tol)) fprintf(stderr, "    %s: constraint row %d (%s): %.3g\n", what, i, mu_row ? "mu" : "lambda", dd);
    }
    (void)mt;
}

static void test_rod_chain(void)
{
    mbk_system *sys = rod_chain();
    mbk_state *s = consistent_state(sys, NULL, NULL, NULL);
    mbk_dae_layout L;
    mbk_dae_options o3 = {MBK_DAE_INDEX3, NULL, 0}, og = {MBK_DAE_GGL, NULL, 0}, o1 = {MBK_DAE_INDEX1, NULL, 0};
    CHECK(ok(mbk_system_get_dae_layout(sys, s, &o3, &L), "layout"));
    CHECK(L.nq == 9 && L.nu == 8 && L.nz == 1 && L.ny == 18 && L.m == 3);
    CHECK(L.nlambda == 3 && L.nmu == 0 && L.n == 21 && L.np == 1 && L.nv == 1 && L.na == 1);
    CHECK(ok(mbk_system_get_dae_layout(sys, s, &og, &L), "layout"));
    CHECK(L.nlambda == 3 && L.nmu == 1 && L.n == 22);
    CHECK(ok(mbk_system_get_dae_layout(sys, s, &o1, &L), "layout"));
    CHECK(L.n == 18 && L.nlambda == 0);
    check_form(sys, s, MBK_DAE_INDEX3, NULL, 0, "rod chain, index 3");
    check_form(sys, s, MBK_DAE_GGL, NULL, 0, "rod chain, GGL");
    check_form(sys, s, MBK_DAE_INDEX1, NULL, 0, "rod chain, index 1");
    /* the index-1 form is mbk_system_calc_dae_residual's */
    double y[N_MAX], yp[N_MAX], r1[N_MAX], r2[N_MAX];
    mbk_system_get_dae_values(sys, s, &o1, y, yp);
    for (int i = 0; i < 18; ++i) yp[i] += 0.01 * i;
    CHECK(ok(mbk_system_calc_constrained_dae_residual(sys, s, &o1, 0.3, y, yp, r1), "index 1"));
    CHECK(ok(mbk_system_calc_dae_residual(sys, s, 0.3, y, yp, r2), "dae residual"));
    CHECK(memcmp(r1, r2, sizeof(double) * 18) == 0);
    /* keeping two rows of three (an independent row left out changes the problem, so
       only the layout is checked here; the four-bar leaves out a redundant one) */
    const int keep[2] = {0, 2};
    mbk_dae_options ok2 = {MBK_DAE_GGL, keep, 2};
    CHECK(ok(mbk_system_get_dae_layout(sys, s, &ok2, &L), "layout, rows 0 and 2"));
    CHECK(L.nlambda == 2 && L.np == 1 && L.nv == 0 && L.na == 1 && L.nmu == 1 && L.n == 21);
    mbk_state_destroy(s);
    mbk_system_destroy(sys);
}

static void test_fourbar(void)
{
    mbk_system *sys = fourbar();
    const double q[3] = {0.9, 0.8, -2.0}, u[3] = {1.3, 0, 0};
    const bool locked[3] = {true, false, false};
    mbk_state *s = consistent_state(sys, q, u, locked);
    int rows[3], n = 0;
    CHECK(ok(mbk_matter_select_independent_constraints(mbk_multibody_get_matter(sys), s, rows, &n), "rows"));
    CHECK_INT(n, 2);
    /* all rows: the State's minimum-norm multipliers still zero the residual */
    mbk_dae_options o = {MBK_DAE_INDEX3, NULL, 0};
    double y[N_MAX], yp[N_MAX], r[N_MAX];
    CHECK(ok(mbk_system_get_dae_values(sys, s, &o, y, yp), "values"));
    CHECK(ok(mbk_system_calc_constrained_dae_residual(sys, s, &o, mbk_state_get_time(s), y, yp, r), "all rows"));
    CHECK(max_abs(r, 9) <= 1e-9 * (1 + max_abs(yp, 6)));
    check_form(sys, s, MBK_DAE_INDEX3, rows, n, "four-bar, index 3, independent rows");
    check_form(sys, s, MBK_DAE_GGL, rows, n, "four-bar, GGL, independent rows");
    mbk_state_destroy(s);
    mbk_system_destroy(sys);
}

/* (4) bad input leaves the State's variables alone */
static void test_bad_input(void)
{
    mbk_system *sys = rod_chain();
    mbk_state *s = consistent_state(sys, NULL, NULL, NULL);
    mbk_dae_options o = {MBK_DAE_GGL, NULL, 0};
    double y[N_MAX], yp[N_MAX], r[N_MAX], y0[N_MAX], t0 = mbk_state_get_time(s);
    CHECK(ok(mbk_system_get_dae_values(sys, s, &o, y, yp), "values"));
    for (int i = 0; i < 18; ++i) y[i] += 0.01; /* some other point */
    memcpy(y0, mbk_state_get_y(s), sizeof(double) * 18);
    mbk_stage st = mbk_state_get_stage(s);
    CHECK_INT(mbk_system_calc_constrained_dae_residual(sys, s, &o, 1.0, NULL, yp, r), MBK_EINVAL);
    CHECK(strstr(mbk_last_error(), "y is NULL") != NULL);
    CHECK_INT(mbk_system_calc_constrained_dae_residual(sys, s, &o, 1.0, y, yp, NULL), MBK_EINVAL);
    CHECK_INT(mbk_system_calc_constrained_dae_residual(sys, s, NULL, 1.0, y, yp, r), MBK_EINVAL);
    CHECK_INT(mbk_system_calc_constrained_dae_residual(NULL, s, &o, 1.0, y, yp, r), MBK_EINVAL);
    mbk_dae_options bad = {(mbk_dae_form)7, NULL, 0};
    CHECK_INT(mbk_system_calc_constrained_dae_residual(sys, s, &bad, 1.0, y, yp, r), MBK_EINVAL);
    const int unsorted[2] = {2, 0}, outside[1] = {3};
    mbk_dae_options b2 = {MBK_DAE_INDEX3, unsorted, 2}, b3 = {MBK_DAE_INDEX3, outside, 1};
    CHECK_INT(mbk_system_calc_constrained_dae_residual(sys, s, &b2, 1.0, y, yp, r), MBK_EINVAL);
    CHECK(strstr(mbk_last_error(), "strictly increasing") != NULL);
    CHECK_INT(mbk_system_calc_constrained_dae_residual(sys, s, &b3, 1.0, y, yp, r), MBK_EINVAL);
    double keep = y[19];
    y[19] = NAN; /* a multiplier */
    CHECK_INT(mbk_system_calc_constrained_dae_residual(sys, s, &o, 1.0, y, yp, r), MBK_ENOTFINITE);
    CHECK(strstr(mbk_last_error(), "y[19]") != NULL);
    y[19] = keep;
    yp[2] = INFINITY;
    CHECK_INT(mbk_system_calc_constrained_dae_residual(sys, s, &o, 1.0, y, yp, r), MBK_ENOTFINITE);
    CHECK(strstr(mbk_last_error(), "yp[2]") != NULL);
    yp[2] = 0;
    CHECK_INT(mbk_system_calc_constrained_dae_residual(sys, s, &o, NAN, y, yp, r), MBK_ENOTFINITE);
    CHECK_INT(mbk_system_get_dae_values(sys, s, &o, NULL, yp), MBK_EINVAL);
    CHECK_INT(mbk_system_get_dae_layout(sys, s, &o, NULL), MBK_EINVAL);
    CHECK(memcmp(y0, mbk_state_get_y(s), sizeof(double) * 18) == 0);
    CHECK(mbk_state_get_time(s) == t0);
    CHECK_INT(mbk_state_get_stage(s), st);
    /* a stale State */
    mbk_system *other = fourbar();
    CHECK_INT(mbk_system_calc_constrained_dae_residual(other, s, &o, 1.0, y, yp, r), MBK_ESTALE);
    CHECK_INT(mbk_system_get_dae_layout(other, s, &o, (mbk_dae_layout[1]){{0}}), MBK_ESTALE);
    CHECK(memcmp(y0, mbk_state_get_y(s), sizeof(double) * 18) == 0);
    /* a good call moves the State to the new point and leaves it at Dynamics */
    CHECK(ok(mbk_system_calc_constrained_dae_residual(sys, s, &o, 1.0, y, yp, r), "good call"));
    CHECK(mbk_state_get_time(s) == 1.0 && mbk_state_get_stage(s) >= MBK_STAGE_DYNAMICS);
    CHECK(memcmp(y, mbk_state_get_y(s), sizeof(double) * 18) == 0);
    mbk_system_destroy(other);
    mbk_state_destroy(s);
    mbk_system_destroy(sys);
}

/* (6) no allocation */
static void test_no_allocation(void)
{
    mbk_system *sys = fourbar();
    const double q[3] = {0.9, 0.8, -2.0}, u[3] = {1.3, 0, 0};
    const bool locked[3] = {true, false, false};
    mbk_state *s = consistent_state(sys, q, u, locked);
    int rows[3], n = 0;
    mbk_matter_select_independent_constraints(mbk_multibody_get_matter(sys), s, rows, &n);
    mbk_dae_options o[3] = {{MBK_DAE_INDEX3, rows, n}, {MBK_DAE_GGL, rows, n}, {MBK_DAE_GGL, NULL, 0}};
    double y[N_MAX], yp[N_MAX], r[N_MAX];
    mbk_dae_layout L;
    long before = mbk_get_allocation_count();
    int bad = 0;
    for (int k = 0; k < 3; ++k) {
        bad += mbk_system_get_dae_layout(sys, s, &o[k], &L) < 0;
        bad += mbk_system_get_dae_values(sys, s, &o[k], y, yp) < 0;
        y[0] += 1e-3;
        bad += mbk_system_calc_constrained_dae_residual(sys, s, &o[k], 0.5, y, yp, r) < 0;
    }
    CHECK_INT(bad, 0);
    CHECK_INT(mbk_get_allocation_count() - before, 0);
    mbk_state_destroy(s);
    mbk_system_destroy(sys);
}

int main(void)
{
    test_no_allocation();
    test_rod_chain();
    test_fourbar();
    test_bad_input();
    return mbk_test_finish();
}
