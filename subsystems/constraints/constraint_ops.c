/* Constraint operators for outside integrators and solvers: G v and G^T lambda
 * without forming G, the forces and accelerations that given multipliers
 * produce, a velocity-only projection, and a non-redundant choice of
 * constraint rows by a rank-revealing (column-pivoted QR) factorization.
 *
 * G is the constraint matrix in u space, rows in the multiplier (udoterr)
 * order [holonomic P; nonholonomic V; acceleration-only A]: the acceleration
 * errors are G udot + bias. All work space is the constraint solve's cache
 * entry of the State: nothing here allocates. */
#include <math.h>
#include <string.h>

#include "mbk/external.h"
#include "mbk/status.h"
#include "constraints_impl.h"

/* LAPACK: QR factorization with column pivoting. */
extern void dgeqp3_(const int *m, const int *n, double *a, const int *lda, int *jpvt, double *tau, double *work,
                    const int *lwork, int *info);

/* Independent rows: a pivot of R below this fraction of the largest one counts as redundancy. */
static const double ROW_RCOND = 1e-9;

/* Checks shared by the operators: matter at `stage`; returns the number of multipliers m. */
static int need(const mbk_matter *m, const mbk_state *s, mbk_stage stage, const char *fn)
{
    int rc = mt_need(m, s, stage, fn);
    if (rc < 0) return rc;
    const ct_cslots *sl = ct_slots(m, s);
    return sl->mp + sl->mv + sl->ma;
}

int mbk_matter_multiply_by_G(const mbk_matter *m, const mbk_state *s, const double *v, double *Gv)
{
    const char *fn = "mbk_matter_multiply_by_G";
    int mt = need(m, s, MBK_STAGE_VELOCITY, fn), rc;
    if (mt < 0) return mt;
    if (!v || !Gv) return mbk_set_error(MBK_EINVAL, "%s: %s is NULL", fn, !v ? "v" : "Gv");
    if ((rc = mt_need_finite(v, m->nu, fn, "v")) < 0) return rc;
    if (mt == 0) return MBK_OK;
    ct_solve_ws w = ct_workspace(m, s);
    /* G v = (G v + bias) - bias: the acceleration errors at udot = v and at udot = 0 */
    memset(w.udot_t, 0, (size_t)m->nu * sizeof(double));
    ct_accel_kinematics(m, s, w.udot_t, w.A_t);
    if ((rc = ct_eval(m, s, 2, w.A_t, w.udot_t, w.e1)) < 0) return rc;
    ct_accel_kinematics(m, s, v, w.A_t);
    if ((rc = ct_eval(m, s, 2, w.A_t, v, Gv)) < 0) return rc;
    for (int i = 0; i < mt; ++i) Gv[i] -= w.e1[i];
    return MBK_OK;
}

int mbk_matter_multiply_by_G_transpose(const mbk_matter *m, const mbk_state *s, const double *lambda, double *f)
{
    const char *fn = "mbk_matter_multiply_by_G_transpose";
    int mt = need(m, s, MBK_STAGE_VELOCITY, fn), rc;
    if (mt < 0) return mt;
    if (!f || (mt > 0 && !lambda)) return mbk_set_error(MBK_EINVAL, "%s: %s is NULL", fn, !f ? "f" : "lambda");
    if (mt == 0) {
        memset(f, 0, (size_t)m->nu * sizeof(double));
        return MBK_OK;
    }
    if ((rc = mt_need_finite(lambda, mt, fn, "lambda")) < 0) return rc;
    ct_solve_ws w = ct_workspace(m, s);
    memcpy(w.e1, lambda, (size_t)mt * sizeof(double)); /* lambda may alias f */
    return ct_g_transpose(m, s, w.e1, 3, f);
}

int mbk_matter_calc_constraint_forces_from_multipliers(const mbk_matter *m, const mbk_state *s,
                                                       const double *lambda, mbk_spatial_vec *body_forces,
                                                       double *mobility_forces)
{
    const char *fn = "mbk_matter_calc_constraint_forces_from_multipliers";
    int mt = need(m, s, MBK_STAGE_VELOCITY, fn), rc;
    if (mt < 0) return mt;
    if (!body_forces || (mt > 0 && !lambda))
        return mbk_set_error(MBK_EINVAL, "%s: %s is NULL", fn, !body_forces ? "body_forces" : "lambda");
    if (mt > 0 && (rc = mt_need_finite(lambda, mt, fn, "lambda")) < 0) return rc;
    ct_solve_ws w = ct_workspace(m, s);
    memset(body_forces, 0, (size_t)m->nb * sizeof *body_forces);
    memset(w.g, 0, (size_t)m->nu * sizeof(double));
    if (mt > 0) {
        memcpy(w.e1, lambda, (size_t)mt * sizeof(double));
        if ((rc = ct_apply(m, s, w.e1, 3, body_forces, w.g)) < 0) return rc;
    }
    /* M udot = f - G^T lambda: the constraints apply minus what the multipliers' callbacks add */
    for (int b = 0; b < m->nb; ++b) body_forces[b] = mbk_spatial_vec_scale(body_forces[b], -1.0);
    for (int j = 0; mobility_forces && j < m->nu; ++j) mobility_forces[j] = -w.g[j];
    return MBK_OK;
}

int mbk_matter_calc_udot_given_multipliers(const mbk_matter *m, const mbk_state *s, const double *lambda,
                                           double *udot)
{
    const char *fn = "mbk_matter_calc_udot_given_multipliers";
    int mt = need(m, s, MBK_STAGE_DYNAMICS, fn), rc;
    if (mt < 0) return mt;
    if (!udot || (mt > 0 && !lambda)) return mbk_set_error(MBK_EINVAL, "%s: %s is NULL", fn, !udot ? "udot" : "lambda");
    if (mt > 0 && (rc = mt_need_finite(lambda, mt, fn, "lambda")) < 0) return rc;
    if ((rc = mt_realize_abi(m, s)) < 0) return rc;
    ct_solve_ws w = ct_workspace(m, s);
    const mbk_spatial_vec *F = mt_cache(m, s, C_FORCES);
    const double *tau = mt_mobility_forces((mbk_spatial_vec *)F, m->nb);
    memset(w.F, 0, (size_t)m->nb * sizeof *w.F);
    memset(w.g, 0, (size_t)m->nu * sizeof(double));
    if (mt > 0) {
        memcpy(w.e1, lambda, (size_t)mt * sizeof(double));
        if ((rc = ct_apply(m, s, w.e1, 3, w.F, w.g)) < 0) return rc;
    }
    /* the applied forces minus G^T lambda, through the articulated-body sweeps with velocity terms */
    for (int b = 0; b < m->nb; ++b) w.F[b] = mbk_spatial_vec_sub(F[b], w.F[b]);
    for (int j = 0; j < m->nu; ++j) w.g[j] = tau[j] - w.g[j];
    mt_aba_solve(m, s, w.g, w.F, true, w.S, w.S + m->nb, udot);
    int k = mbk_find_nonfinite(udot, m->nu);
    if (k >= 0) return mbk_set_error(MBK_ENOTFINITE, "%s: udot[%d] is %g (a near-singular mass matrix?)", fn, k, udot[k]);
    return MBK_OK;
}

int mbk_system_project_u(const mbk_system *sys, mbk_state *s, double tol)
{
    const char *fn = "mbk_system_project_u";
    const mbk_matter *m = mbk_multibody_get_matter(sys);
    if (!m) return mbk_set_error(MBK_EINVAL, "%s: the System has no matter subsystem", fn);
    int rc = mbk_system_check_state(sys, s);
    if (rc < 0) return rc;
    if (!(tol > 0)) return mbk_set_error(MBK_EINVAL, "%s: tol = %g; give a tolerance > 0", fn, tol);
    if ((rc = mbk_system_realize(sys, s, MBK_STAGE_VELOCITY)) < 0) return rc;
    if (ct_of(m)->ncons == 0) return MBK_OK;
    if ((rc = ct_project_u(m, s, tol)) < 0) return mbk_set_error(rc, "%s: %s", fn, mbk_last_error());
    return MBK_OK;
}

/* Sort a few ints ascending (insertion sort). */
static void sort_ints(int *a, int n)
{
    for (int i = 1; i < n; ++i) {
        int x = a[i], j = i - 1;
        for (; j >= 0 && a[j] > x; --j) a[j + 1] = a[j];
        a[j + 1] = x;
    }
}

int mbk_matter_select_independent_constraints(const mbk_matter *m, const mbk_state *s, int *rows, int *n_rows)
{
    const char *fn = "mbk_matter_select_independent_constraints";
    int mt = need(m, s, MBK_STAGE_VELOCITY, fn), rc;
    if (mt < 0) return mt;
    if (!rows || !n_rows) return mbk_set_error(MBK_EINVAL, "%s: %s is NULL", fn, !rows ? "rows" : "n_rows");
    *n_rows = 0;
    if (mt == 0 || m->nu == 0) return MBK_OK;
    ct_solve_ws w = ct_workspace(m, s);
    /* G^T column-major (nu x mt, leading dimension nu): row j of G at X + j nu */
    size_t nu = (size_t)m->nu;
    for (int j = 0; j < mt; ++j) {
        memset(w.lambda, 0, (size_t)mt * sizeof(double));
        w.lambda[j] = 1.0;
        if ((rc = ct_g_transpose(m, s, w.lambda, 3, w.X + (size_t)j * nu)) < 0) return rc;
    }
    int nrow = m->nu, ncol = mt, lwork = ct_of(m)->lwork, info = 0;
    memset(w.jpvt, 0, (size_t)mt * sizeof(int));
    dgeqp3_(&nrow, &ncol, w.X, &nrow, w.jpvt, w.e0, w.work, &lwork, &info);
    if (info != 0) return mbk_set_error(MBK_ESINGULAR, "%s: LAPACK dgeqp3 failed (info %d)", fn, info);
    int kmax = mt < m->nu ? mt : m->nu, rank = 0;
    double r0 = fabs(w.X[0]);
    while (rank < kmax && r0 > 0 && fabs(w.X[(size_t)rank * nu + (size_t)rank]) > ROW_RCOND * r0) ++rank;
    for (int k = 0; k < rank; ++k) rows[k] = w.jpvt[k] - 1;
    sort_ints(rows, rank);
    *n_rows = rank;
    return MBK_OK;
}
