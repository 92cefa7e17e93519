/* The DAE residual with the constraint rows in it, for solvers that want the
 * constraints in the residual rather than inside the State: the index-3 form
 * (position constraints, multipliers as algebraic variables) and the
 * stabilized index-2 form of Gear, Gupta and Leimkuhler (velocity
 * constraints and multipliers, plus the position constraints with a second
 * set of multipliers mu that vanish on the exact solution). mbk/external.h
 * states the layout, the rows, their signs and the Jacobian's structure.
 *
 * The residual is built at Dynamics: r_u = M up + C - f + G^T lambda by
 * recursive Newton-Euler (O(n)) plus the multipliers' forces (O(n + m)),
 * so no constraint solve runs (it would fail off the manifold when rows are
 * redundant). Only z, or speeds of other subsystems, need Acceleration. */
#include <math.h>
#include <string.h>

#include "mbk/external.h"
#include "mbk/status.h"
#include "constraints_impl.h"

/* LAPACK: minimum-norm least squares (as in constraint_solve.c). */
extern void dgelsy_(const int *m, const int *n, const int *nrhs, double *a, const int *lda, double *b,
                    const int *ldb, int *jpvt, const double *rcond, int *rank, double *work,
                    const int *lwork, int *info);

/* The matter subsystem of sys, or NULL with MBK_EINVAL. */
static const mbk_matter *matter_of(const mbk_system *sys, const char *fn)
{
    if (!sys) return mbk_set_error(MBK_EINVAL, "%s: system is NULL", fn), NULL;
    const mbk_matter *m = mbk_multibody_get_matter(sys);
    if (!m) mbk_set_error(MBK_EINVAL, "%s: the System has no matter subsystem", fn);
    return m;
}

/* Realize s to Instance (its sizes and constraint counts), check opt and fill L. */
static int layout(const mbk_system *sys, const mbk_matter *m, mbk_state *s, const mbk_dae_options *opt,
                  mbk_dae_layout *L, const char *fn)
{
    int rc = mbk_system_check_state(sys, s);
    if (rc < 0) return rc;
    if (!opt) return mbk_set_error(MBK_EINVAL, "%s: options are NULL", fn);
    if (opt->form != MBK_DAE_INDEX1 && opt->form != MBK_DAE_INDEX3 && opt->form != MBK_DAE_GGL)
        return mbk_set_error(MBK_EINVAL, "%s: form %d is not MBK_DAE_INDEX1, MBK_DAE_INDEX3 or MBK_DAE_GGL", fn,
                             (int)opt->form);
    if ((rc = mbk_system_realize(sys, s, MBK_STAGE_INSTANCE)) < 0) return rc;
    const ct_cslots *sl = ct_slots(m, s);
    int mt = sl->mp + sl->mv + sl->ma;
    memset(L, 0, sizeof *L);
    L->nq = mbk_state_get_nq(s);
    L->nu = mbk_state_get_nu(s);
    L->nz = mbk_state_get_nz(s);
    L->ny = L->nq + L->nu + L->nz;
    L->m = mt;
    if (opt->form == MBK_DAE_INDEX1) {
        L->n = L->ny;
        return MBK_OK;
    }
    int k = opt->rows ? opt->n_rows : mt;
    if (opt->rows && (k < 0 || k > mt))
        return mbk_set_error(MBK_EINVAL, "%s: n_rows = %d; give 0..%d rows", fn, k, mt);
    for (int i = 0; i < k; ++i) {
        int row = opt->rows ? opt->rows[i] : i;
        if (row < 0 || row >= mt || (opt->rows && i > 0 && row <= opt->rows[i - 1]))
            return mbk_set_error(MBK_EINVAL, "%s: rows[%d] = %d; give strictly increasing rows in 0..%d "
                                 "(the multiplier order)", fn, i, row, mt - 1);
        if (row < sl->mp) L->np++;
        else if (row < sl->mp + sl->mv) L->nv++;
        else L->na++;
    }
    L->nlambda = k;
    L->nmu = opt->form == MBK_DAE_GGL ? L->np : 0;
    L->n = L->ny + L->nlambda + L->nmu;
    return MBK_OK;
}

/* Kept row i of opt (all rows when opt->rows is NULL). */
static inline int kept(const mbk_dae_options *opt, int i) { return opt->rows ? opt->rows[i] : i; }

int mbk_system_get_dae_layout(const mbk_system *sys, mbk_state *s, const mbk_dae_options *opt, mbk_dae_layout *L)
{
    const char *fn = "mbk_system_get_dae_layout";
    const mbk_matter *m = matter_of(sys, fn);
    if (!m) return MBK_EINVAL;
    if (!L) return mbk_set_error(MBK_EINVAL, "%s: layout is NULL", fn);
    mbk_dae_layout tmp;
    int rc = layout(sys, m, s, opt, &tmp, fn);
    if (rc == MBK_OK) *L = tmp;
    return rc;
}

/* Index of the first non-finite entry, or -1. */
static int bad_entry(const double *v, int n) { return mbk_find_nonfinite(v, n); }

int mbk_system_calc_constrained_dae_residual(const mbk_system *sys, mbk_state *s, const mbk_dae_options *opt,
                                             double t, const double *y, const double *yp, double *r)
{
    const char *fn = "mbk_system_calc_constrained_dae_residual";
    const mbk_matter *m = matter_of(sys, fn);
    if (!m) return MBK_EINVAL;
    mbk_dae_layout L;
    int rc = layout(sys, m, s, opt, &L, fn), k;
    if (rc < 0) return rc;
    if (!y || !yp || !r) return mbk_set_error(MBK_EINVAL, "%s: %s is NULL", fn, !y ? "y" : !yp ? "yp" : "r");
    if (!isfinite(t)) return mbk_set_error(MBK_ENOTFINITE, "%s: t = %g is not finite; the State was not changed", fn, t);
    for (int which = 0; which < 2; ++which) { /* yp past the State's y is not read */
        const double *v = which ? yp : y;
        if ((k = bad_entry(v, which ? L.ny : L.n)) >= 0)
            return mbk_set_error(MBK_ENOTFINITE, "%s: %s[%d] = %g is not finite; the State was not changed", fn,
                                 which ? "yp" : "y", k, v[k]);
    }
    /* Dynamics gives everything of matter; other subsystems' u and every z need Acceleration */
    int sub = m->sub, nqm = mbk_state_get_subsystem_nq(s, sub);
    int q0 = mbk_state_get_subsystem_q_start(s, sub), u0 = L.nq + mbk_state_get_subsystem_u_start(s, sub);
    bool need_acc = L.nz > 0 || m->nu != L.nu || opt->form == MBK_DAE_INDEX1;
    rc = mbk_system_set_y_and_realize(sys, s, t, y, need_acc ? MBK_STAGE_ACCELERATION : MBK_STAGE_DYNAMICS);
    if (rc < 0) return mbk_set_error(rc, "%s: %s", fn, mbk_last_error());
    const double *ydot = need_acc ? mbk_state_get_ydot(s) : NULL;
    if (opt->form == MBK_DAE_INDEX1) { /* r = yp - ydot(t, y) */
        for (int i = 0; i < L.ny; ++i) r[i] = yp[i] - ydot[i];
        return MBK_OK;
    }
    const ct_cslots *sl = ct_slots(m, s);
    int mp = sl->mp, mv = sl->mv, mt = L.m;
    ct_solve_ws w = ct_workspace(m, s);
    const double *lam = y + L.ny, *mu = lam + L.nlambda, *upm = yp + u0;
    /* r_q = qp - N (u - P^T mu): first N P^T mu into matter's rows (GGL) */
    double *rq = r + q0;
    if (L.nmu > 0) {
        memset(w.e0, 0, (size_t)mt * sizeof(double));
        for (int i = 0; i < L.nmu; ++i) w.e0[kept(opt, i)] = mu[i]; /* the kept holonomic rows come first */
        if ((rc = ct_g_transpose(m, s, w.e0, 2, w.g)) < 0) return rc;
        if ((rc = mbk_matter_multiply_by_N(m, s, false, w.g, rq)) < 0) return rc;
    } else {
        memset(rq, 0, (size_t)nqm * sizeof(double));
    }
    const double *qdot = mbk_state_get_qdot(s);
    for (int i = 0; i < L.nq; ++i) {
        double corr = i >= q0 && i < q0 + nqm ? r[i] : 0.0;
        r[i] = yp[i] - qdot[i] + corr;
    }
    /* r_u = M up + C - f + G^T lambda for matter's speeds; up - udot for others' */
    for (int i = L.nq; i < L.nq + L.nu; ++i)
        if (i < u0 || i >= u0 + m->nu) r[i] = yp[i] - ydot[i];
    const mbk_spatial_vec *F = mt_cache(m, s, C_FORCES);
    mt_rnea(m, s, upm, mt_mobility_forces((mbk_spatial_vec *)F, m->nb), F, true, w.S, w.S + m->nb, r + u0);
    if (L.nlambda > 0) {
        memset(w.lambda, 0, (size_t)mt * sizeof(double));
        for (int i = 0; i < L.nlambda; ++i) w.lambda[kept(opt, i)] = lam[i];
        if ((rc = ct_g_transpose(m, s, w.lambda, 3, w.g)) < 0) return rc;
        for (int i = 0; i < m->nu; ++i) r[u0 + i] += w.g[i];
    }
    /* r_z = zp - zdot */
    for (int i = L.nq + L.nu; i < L.ny; ++i) r[i] = yp[i] - ydot[i];
    /* constraint rows: index 3 [perr; verr; aerr(up)], GGL [pverr; verr; aerr(up)] then perr */
    const double *qerr = mbk_state_upd_subsystem_qerr(s, sub), *uerr = mbk_state_upd_subsystem_uerr(s, sub);
    if (L.na > 0) {
        ct_accel_kinematics(m, s, upm, w.A_t);
        if ((rc = ct_eval(m, s, 2, w.A_t, upm, w.e1)) < 0) return rc;
    }
    double *rl = r + L.ny, *rm = rl + L.nlambda;
    for (int i = 0; i < L.nlambda; ++i) {
        int row = kept(opt, i);
        if (row < mp) rl[i] = opt->form == MBK_DAE_INDEX3 ? qerr[row] : uerr[row];
        else if (row < mp + mv) rl[i] = uerr[row];
        else rl[i] = w.e1[row];
    }
    for (int i = 0; i < L.nmu; ++i) rm[i] = qerr[kept(opt, i)];
    return MBK_OK;
}

int mbk_system_get_dae_values(const mbk_system *sys, mbk_state *s, const mbk_dae_options *opt, double *y,
                              double *yp)
{
    const char *fn = "mbk_system_get_dae_values";
    const mbk_matter *m = matter_of(sys, fn);
    if (!m) return MBK_EINVAL;
    mbk_dae_layout L;
    int rc = layout(sys, m, s, opt, &L, fn);
    if (rc < 0) return rc;
    if (!y || !yp) return mbk_set_error(MBK_EINVAL, "%s: %s is NULL", fn, !y ? "y" : "yp");
    if ((rc = mbk_system_realize(sys, s, MBK_STAGE_ACCELERATION)) < 0) return rc;
    memcpy(y, mbk_state_get_y(s), (size_t)L.ny * sizeof(double));
    memcpy(yp, mbk_state_get_ydot(s), (size_t)L.ny * sizeof(double));
    memset(y + L.ny, 0, (size_t)(L.n - L.ny) * sizeof(double));
    memset(yp + L.ny, 0, (size_t)(L.n - L.ny) * sizeof(double));
    int k = L.nlambda, mt = L.m;
    if (k == 0) return MBK_OK;
    const double *ls = mbk_state_upd_subsystem_multipliers(s, m->sub);
    if (k == mt) { /* every row: the State's multipliers */
        memcpy(y + L.ny, ls, (size_t)mt * sizeof(double));
        return MBK_OK;
    }
    /* kept rows K only: the lambda_K with G_K^T lambda_K = G^T lambda* (the same
       forces), from the normal equations (G_K G_K^T) lambda_K = G_K G^T lambda* */
    ct_solve_ws w = ct_workspace(m, s);
    size_t nu = (size_t)m->nu;
    if ((rc = ct_g_transpose(m, s, ls, 3, w.g)) < 0) return rc;
    for (int i = 0; i < k; ++i) {
        memset(w.lambda, 0, (size_t)mt * sizeof(double));
        w.lambda[kept(opt, i)] = 1.0;
        if ((rc = ct_g_transpose(m, s, w.lambda, 3, w.X + (size_t)i * nu)) < 0) return rc;
    }
    for (int a = 0; a < k; ++a) {
        double b = 0;
        for (size_t j = 0; j < nu; ++j) b += w.X[(size_t)a * nu + j] * w.g[j];
        w.e0[a] = b;
        for (int c = 0; c < k; ++c) {
            double d = 0;
            for (size_t j = 0; j < nu; ++j) d += w.X[(size_t)a * nu + j] * w.X[(size_t)c * nu + j];
            w.W[(size_t)c * (size_t)k + (size_t)a] = d;
        }
    }
    int one = 1, info = 0, rank = 0, lwork = ct_of(m)->lwork;
    double rcond = 1e-12;
    memset(w.jpvt, 0, (size_t)k * sizeof(int));
    dgelsy_(&k, &k, &one, w.W, &k, w.e0, &k, w.jpvt, &rcond, &rank, w.work, &lwork, &info);
    if (info != 0) return mbk_set_error(MBK_ESINGULAR, "%s: LAPACK dgelsy failed (info %d)", fn, info);
    memcpy(y + L.ny, w.e0, (size_t)k * sizeof(double));
    return MBK_OK;
}
