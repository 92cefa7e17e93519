/* The kinematic coupling qdot = N(q) u between matter's coordinates and
 * speeds, as operators for outside integrators: N, N^T, N^+ and (N^+)^T,
 * applied body by body without forming the nq x nu matrix. Each body's
 * block comes from its mobilizer's ops (calc_qdot for N, calc_u_from_qdot
 * for N^+; both NULL means the identity, qdot = u), evaluated at the
 * normalized q of the Position cache, so N u is exactly the qdot that
 * realizing Velocity computes. The transposes build the body's block from
 * unit vectors (at most 7 x 6) and apply it transposed. No allocation.
 * N's derivatives (d(N u)/dq, N itself) come last, for the ydot Jacobian. */
#include <string.h>

#include "mbk/derivatives.h"
#include "mbk/external.h"
#include "mbk/status.h"
#include "matter_impl.h"

/* Which operator: N, N^T, N^+, (N^+)^T. */
enum { OP_N, OP_NT, OP_NP, OP_NPT };

/* out = block in, where the block of body i is N (pinv false) or N^+ (pinv true);
   nin entries of in, nout of out. */
static void body_apply(const mbk_mobilizer *mob, bool euler, bool pinv, const double *qb, const double *in,
                       double *out, int nin)
{
    if (!pinv && mob->ops->calc_qdot) mob->ops->calc_qdot(mob->impl, euler, qb, in, out);
    else if (pinv && mob->ops->calc_u_from_qdot) mob->ops->calc_u_from_qdot(mob->impl, euler, qb, in, out);
    else copy_small(out, in, nin); /* identity: nq == nu */
}

/* The transposed product: out_j = sum_i B[i][j] in_i, with column j of B (B maps
   nout-vectors to nin-vectors) found by applying B to the unit vector e_j. */
static void body_apply_transposed(const mbk_mobilizer *mob, bool euler, bool pinv, const double *qb,
                                  const double *in, double *out, int nin, int nout)
{
    double e[MBK_MOBILIZER_MAX_Q], col[MBK_MOBILIZER_MAX_Q];
    for (int j = 0; j < nout; ++j) {
        memset(e, 0, sizeof e);
        e[j] = 1.0;
        body_apply(mob, euler, pinv, qb, e, col, nout);
        double d = 0.0;
        for (int i = 0; i < nin; ++i) d += col[i] * in[i];
        out[j] = d;
    }
}

static int apply(const mbk_matter *m, const mbk_state *s, int op, const double *in, double *out, const char *fn)
{
    int rc = mt_need(m, s, MBK_STAGE_POSITION, fn);
    if (rc < 0) return rc;
    if (!in || !out) return mbk_set_error(MBK_EINVAL, "%s: %s is NULL", fn, !in ? "in" : "out");
    const int *lay = qlayout(m, s);
    int nq = mbk_state_get_subsystem_nq(s, m->sub);
    /* N and (N^+)^T take nu values, N^T and N^+ take nq */
    int nin = op == OP_N || op == OP_NPT ? m->nu : nq;
    if ((rc = mt_need_finite(in, nin, fn, "in")) < 0) return rc;
    bool euler = layout_euler(m, lay);
    const double *qn = mt_cache(m, s, C_QN);
    for (int i = 1; i < m->nb; ++i) {
        const mt_body *b = &m->bodies[i];
        const double *qb = qn + lay[2 * i];
        int q0 = lay[2 * i], nqb = lay[2 * i + 1];
        switch (op) {
        case OP_N: body_apply(&b->mob, euler, false, qb, in + b->u0, out + q0, b->nu); break;
        case OP_NP: body_apply(&b->mob, euler, true, qb, in + q0, out + b->u0, nqb); break;
        /* N^T: N maps nu to nq, so its transpose takes nq in and gives nu */
        case OP_NT: body_apply_transposed(&b->mob, euler, false, qb, in + q0, out + b->u0, nqb, b->nu); break;
        default: body_apply_transposed(&b->mob, euler, true, qb, in + b->u0, out + q0, b->nu, nqb); break;
        }
    }
    return MBK_OK;
}

int mbk_matter_multiply_by_N(const mbk_matter *m, const mbk_state *s, bool transpose, const double *in,
                             double *out)
{
    return apply(m, s, transpose ? OP_NT : OP_N, in, out, "mbk_matter_multiply_by_N");
}

int mbk_matter_multiply_by_N_pinv(const mbk_matter *m, const mbk_state *s, bool transpose, const double *in,
                                  double *out)
{
    return apply(m, s, transpose ? OP_NPT : OP_NP, in, out, "mbk_matter_multiply_by_N_pinv");
}

int mbk_matter_get_num_q(const mbk_matter *m, const mbk_state *s)
{
    const char *fn = "mbk_matter_get_num_q";
    if (!m) return mbk_set_error(MBK_EINVAL, "%s: matter is NULL", fn);
    int rc = mbk_system_check_state(m->sys, s);
    if (rc < 0) return rc;
    if (mbk_state_get_subsystem_stage(s, m->sub) < MBK_STAGE_MODEL)
        return mbk_set_error(MBK_ESTAGE, "%s: matter is realized only to %s; realize to Model first", fn,
                             mbk_stage_name(mbk_state_get_subsystem_stage(s, m->sub)));
    return mbk_state_get_subsystem_nq(s, m->sub);
}

int mbk_matter_get_subsystem_index(const mbk_matter *m)
{
    if (!m) return mbk_set_error(MBK_EINVAL, "mbk_matter_get_subsystem_index: matter is NULL");
    return m->sub;
}

/* ---- qdot = N(q) u ----------------------------------------------------------------- */

int mbk_matter_calc_qdot_derivatives(const mbk_matter *m, const mbk_state *s, double *dqdot_dq, int ldq,
                                     double *dqdot_du, int ldu)
{
    const char *fn = "mbk_matter_calc_qdot_derivatives";
    int rc = mt_need(m, s, dqdot_dq ? MBK_STAGE_VELOCITY : MBK_STAGE_POSITION, fn);
    if (rc < 0) return rc;
    const int *lay = qlayout(m, s);
    const bool euler = layout_euler(m, lay);
    const int nq = mbk_state_get_subsystem_nq(s, m->sub);
    if ((dqdot_dq && ldq < nq) || (dqdot_du && ldu < m->nu))
        return mbk_set_error(MBK_EINVAL, "%s: row strides %d and %d are below nq = %d and nu = %d", fn, ldq, ldu, nq,
                             m->nu);
    const double *q = mbk_state_get_subsystem_q(s, m->sub), *u = mbk_state_get_subsystem_u(s, m->sub);
    const double *qn = mt_cache(m, s, C_QN);
    for (int i = 0; i < nq; ++i) {
        if (dqdot_dq) memset(dqdot_dq + (size_t)i * (size_t)ldq, 0, (size_t)nq * sizeof(double));
        if (dqdot_du) memset(dqdot_du + (size_t)i * (size_t)ldu, 0, (size_t)m->nu * sizeof(double));
    }
    for (int b = 1; b < m->nb; ++b) {
        const mt_body *bd = &m->bodies[b];
        const mbk_mobilizer_ops *o = bd->mob.ops;
        const int q0 = lay[2 * b], nqb = lay[2 * b + 1], nu = bd->nu;
        if (bd->pin || !o->calc_qdot) { /* qdot = u */
            for (int k = 0; dqdot_du && k < nqb; ++k) dqdot_du[(size_t)(q0 + k) * (size_t)ldu + (size_t)(bd->u0 + k)] = 1.0;
            continue;
        }
        if (dqdot_du) /* N's columns: N u is linear in u */
            for (int l = 0; l < nu; ++l) {
                double e[MBK_MOBILIZER_MAX_U] = {0}, col[MBK_MOBILIZER_MAX_Q];
                e[l] = 1.0;
                o->calc_qdot(bd->mob.impl, euler, qn + q0, e, col);
                for (int k = 0; k < nqb; ++k) dqdot_du[(size_t)(q0 + k) * (size_t)ldu + (size_t)(bd->u0 + l)] = col[k];
            }
        if (dqdot_dq) {
            mbk_mobilizer_derivatives d;
            if ((rc = mbk_mobilizer_calc_derivatives(&bd->mob, euler, q + q0, u + bd->u0, &d)) < 0)
                return mbk_set_error(rc, "%s: body %d: %s", fn, b, mbk_last_error());
            for (int i = 0; i < nqb; ++i)
                for (int k = 0; k < nqb; ++k) dqdot_dq[(size_t)(q0 + i) * (size_t)ldq + (size_t)(q0 + k)] = d.dqdot_dq[i][k];
        }
    }
    return MBK_OK;
}
