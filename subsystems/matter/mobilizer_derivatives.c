/* The derivatives of a mobilizer's kinematics (mbk_mobilizer_derivatives):
 * from its calc_derivatives op, or by central differences of its other ops
 * when it has none. The numeric path works on the mobilizer alone, at its own
 * q and u, so it costs a few dozen calls of its ops and nothing else. */
#include <math.h>
#include <string.h>

#include "mbk/mobilizer.h"
#include "mbk/status.h"
#include "matter_impl.h"

/* X_FM, H, HDot u and qdot of a mobilizer at the State's q (normalized first, as
   the kernel does) and u. */
typedef struct mob_eval {
    mbk_transform X;
    mbk_spatial_vec H[MBK_MOBILIZER_MAX_U], hd;
    double qdot[MBK_MOBILIZER_MAX_Q];
} mob_eval;

static void evaluate(const mbk_mobilizer *m, bool euler, const double *q, const double *u, int nq, mob_eval *e)
{
    const mbk_mobilizer_ops *o = m->ops;
    double qn[MBK_MOBILIZER_MAX_Q];
    memcpy(qn, q, (size_t)nq * sizeof *qn);
    if (o->normalize_q) o->normalize_q(m->impl, euler, qn);
    o->calc_X_FM(m->impl, euler, qn, &e->X);
    if (o->nu > 0) o->calc_H_FM(m->impl, euler, qn, e->H);
    e->hd = mbk_spatial_vec_zero();
    if (o->calc_Hdot_u && o->nu > 0) o->calc_Hdot_u(m->impl, euler, qn, u, &e->hd);
    if (o->calc_qdot) o->calc_qdot(m->impl, euler, qn, u, e->qdot);
    else memcpy(e->qdot, u, (size_t)o->nu * sizeof *u);
}

/* a += s * b over every field of an evaluation (n doubles as a flat array). */
static void axpy(double *a, const double *b, double s, size_t n)
{
    for (size_t i = 0; i < n; ++i) a[i] += s * b[i];
}

/* The central-difference quotient of evaluations at x + h and x - h, then
   Richardson's extrapolation over h and h/2: (4 D(h/2) - D(h)) / 3, error O(h^4). */
static void richardson(const mbk_mobilizer *m, bool euler, const double *q, const double *u, int nq,
                       int which, int k, mob_eval *out)
{
    double x[MBK_MOBILIZER_MAX_Q > MBK_MOBILIZER_MAX_U ? MBK_MOBILIZER_MAX_Q : MBK_MOBILIZER_MAX_U];
    const double *base = which ? u : q;
    int n = which ? m->ops->nu : nq;
    double h0 = 1e-3 * fmax(1.0, fabs(base[k]));
    const size_t len = sizeof(mob_eval) / sizeof(double);
    memset(out, 0, sizeof *out);
    for (int r = 0; r < 2; ++r) {
        double h = r ? 0.5 * h0 : h0, w = (r ? 4.0 / 3.0 : -1.0 / 3.0) * 0.5 / h;
        for (int sgn = -1; sgn <= 1; sgn += 2) {
            mob_eval e;
            memcpy(x, base, (size_t)n * sizeof *x);
            x[k] = base[k] + sgn * h;
            evaluate(m, euler, which ? q : x, which ? x : u, nq, &e);
            axpy((double *)out, (const double *)&e, sgn * w, len);
        }
    }
}

int mbk_mobilizer_calc_derivatives_numeric(const mbk_mobilizer *m, bool euler, const double *q,
                                           const double *u, mbk_mobilizer_derivatives *d)
{
    const char *fn = "mbk_mobilizer_calc_derivatives_numeric";
    if (!m || !m->ops || !m->ops->calc_X_FM || !d || (!q && mbk_mobilizer_get_nq(m, euler) > 0))
        return mbk_set_error(MBK_EINVAL, "%s: give a mobilizer with ops, q and d", fn);
    const mbk_mobilizer_ops *o = m->ops;
    int nq = mbk_mobilizer_get_nq(m, euler), nu = o->nu;
    double zero[MBK_MOBILIZER_MAX_U] = {0};
    const double *uu = u ? u : zero;
    mob_eval base, D;
    evaluate(m, euler, q, uu, nq, &base);
    for (int k = 0; k < nq; ++k) {
        richardson(m, euler, q, uu, nq, 0, k, &D);
        d->dR[k] = D.X.R;
        d->dp[k] = D.X.p;
        for (int j = 0; j < nu; ++j) d->dH[k][j] = D.H[j];
        d->dHdot_u_dq[k] = D.hd;
        for (int i = 0; i < nq; ++i) d->dqdot_dq[i][k] = D.qdot[i];
    }
    for (int j = 0; j < nu; ++j) {
        richardson(m, euler, q, uu, nq, 1, j, &D);
        d->dHdot_u_du[j] = D.hd;
    }
    d->numeric = 1;
    return MBK_OK;
}

int mbk_mobilizer_calc_derivatives(const mbk_mobilizer *m, bool euler, const double *q, const double *u,
                                   mbk_mobilizer_derivatives *d)
{
    const char *fn = "mbk_mobilizer_calc_derivatives";
    if (!m || !m->ops || !m->ops->calc_X_FM || !d || (!q && mbk_mobilizer_get_nq(m, euler) > 0))
        return mbk_set_error(MBK_EINVAL, "%s: give a mobilizer with ops, q and d", fn);
    if (!m->ops->calc_derivatives) return mbk_mobilizer_calc_derivatives_numeric(m, euler, q, u, d);
    double zero[MBK_MOBILIZER_MAX_U] = {0};
    d->numeric = 0;
    mbk_clear_error();
    int rc = m->ops->calc_derivatives(m->impl, euler, q, u ? u : zero, d);
    if (rc == 0) return MBK_OK;
    const char *why = mbk_last_error();
    return mbk_set_error(rc > 0 ? MBK_ERETRY : MBK_EUSER,
                         "mobilizer '%s': calc_derivatives failed (returned %d, %s)%s%s",
                         m->ops->name ? m->ops->name : "custom", rc, rc > 0 ? "recoverable" : "fatal",
                         why[0] ? ": " : "", why);
}
