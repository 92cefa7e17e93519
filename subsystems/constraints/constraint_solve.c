/* Constraint solves: udot and multipliers at Acceleration stage, projection
 * of q and u onto the constraint manifold, and assembly.
 *
 * Acceleration: with udot0 the unconstrained accelerations (articulated-body
 * algorithm) and e0 the acceleration errors there, the multipliers solve
 *     (G M^-1 G^T) lambda = e0,   then   udot = udot0 - M^-1 G^T lambda.
 * Column j of G M^-1 G^T is found without forming G: apply a unit
 * multiplier (the constraints' force callbacks), map the forces to
 * generalized forces (J^T F + tau), apply M^-1 (O(n)), and difference the
 * acceleration errors. That is O(n m) for the matrix and O(m^3) for LAPACK's
 * rank-revealing least-squares solve (dgelsy), which also handles redundant
 * constraints (the rank is reported). */
#include <float.h>
#include <math.h>
#include <stdio.h>
#include <string.h>

#include "mbk/alloc.h"
#include "mbk/status.h"
#include "constraints_impl.h"

/* LAPACK: minimum-norm least squares by complete orthogonal factorization. */
extern void dgelsy_(const int *m, const int *n, const int *nrhs, double *a, const int *lda, double *b,
                    const int *ldb, int *jpvt, const double *rcond, int *rank, double *work,
                    const int *lwork, int *info);

/* Singular values below this fraction of the largest count as redundancy. */
static const double RCOND = 1e-10;

/* ------------------------------------------------------------------ */
/* Work space                                                           */
/* ------------------------------------------------------------------ */

/* Byte offsets of the work space sections (and its total size). */
static size_t ws_layout(const mbk_matter *m, size_t off[12])
{
    size_t mm = (size_t)(ct_of(m)->mmax > 0 ? ct_of(m)->mmax : 1), nu = (size_t)(m->nu + 1), nb = (size_t)m->nb;
    size_t nq = (size_t)MBK_MOBILIZER_MAX_Q * nb;
    const size_t sizes[12] = {mm * mm * 8, mm * nu * 8, mm * 8, mm * 8, mm * 8, (size_t)(ct_of(m)->lwork + 1) * 8,
                              nu * 8, nu * 8, nb * sizeof(mbk_spatial_vec), nb * sizeof(mbk_spatial_vec),
                              2 * nb * sizeof(mbk_spatial_vec), mm * sizeof(int) + 8 + (3 * nq + nu) * 8};
    size_t o = 0;
    for (int i = 0; i < 12; ++i) {
        off[i] = o;
        o += (sizes[i] + 63) & ~(size_t)63;
    }
    return o;
}

ct_solve_ws ct_workspace(const mbk_matter *m, const mbk_state *s)
{
    size_t off[12];
    ws_layout(m, off);
    char *b = mbk_state_upd_cache(s, m->sub, ct_of(m)->cache_solve);
    ct_solve_ws w = {(double *)(b + off[0]), (double *)(b + off[1]), (double *)(b + off[2]),
                     (double *)(b + off[3]), (double *)(b + off[4]), (double *)(b + off[5]),
                     (double *)(b + off[6]), (double *)(b + off[7]), (mbk_spatial_vec *)(b + off[8]),
                     (mbk_spatial_vec *)(b + off[9]), (mbk_spatial_vec *)(b + off[10]), (int *)(b + off[11])};
    return w;
}

/* Saved coordinates after the pivots: which 0 q at the start of a position solve,
   1 q at the start of an iteration, 2 q and 3 u at the start of a projection. */
static double *ws_saved(const mbk_matter *m, const ct_solve_ws *w, int which)
{
    size_t nq = (size_t)MBK_MOBILIZER_MAX_Q * (size_t)m->nb;
    double *base = (double *)((char *)w->jpvt + (((size_t)(ct_of(m)->mmax > 0 ? ct_of(m)->mmax : 1) * sizeof(int) + 7) & ~(size_t)7));
    return base + (size_t)(which < 3 ? which : 3) * nq;
}

int ct_topology(mbk_matter *m, mbk_state *s)
{
    int n = ct_of(m)->ncons > 0 ? ct_of(m)->ncons : 1;
    mbk_value_type flags = mbk_value_array_of_int(n);
    int *on = mbk_calloc((size_t)n, sizeof(int));
    if (!on) return MBK_ENOMEM;
    for (int i = 0; i < n; ++i) on[i] = 1;
    ct_of(m)->enabled_var = mbk_state_allocate_discrete(s, m->sub, MBK_STAGE_INSTANCE, &flags, on);
    mbk_free(on);
    if (ct_of(m)->enabled_var < 0) return ct_of(m)->enabled_var;
    /* LAPACK's work space for the largest solve, asked once */
    ct_of(m)->lwork = 1;
    if (ct_of(m)->mmax > 0) {
        int mm = ct_of(m)->mmax, one = 1, rank, info, lwork = -1, jpvt = 0;
        double query = 0, a = 0, b = 0, rcond = RCOND;
        dgelsy_(&mm, &mm, &one, &a, &mm, &b, &mm, &jpvt, &rcond, &rank, &query, &lwork, &info);
        ct_of(m)->lwork = (int)query + 4 * mm + 64;
    }
    mbk_value_type slots = mbk_value_bytes(sizeof(ct_cslots) + 3 * (size_t)n * sizeof(int), 8);
    ct_of(m)->cache_slots = mbk_state_allocate_cache(s, m->sub, MBK_STAGE_INSTANCE, MBK_STAGE_INSTANCE, &slots, NULL);
    size_t off[12];
    mbk_value_type ws = mbk_value_bytes(ws_layout(m, off), 64);
    ct_of(m)->cache_solve = mbk_state_allocate_lazy_cache(s, m->sub, MBK_STAGE_TOPOLOGY, &ws, NULL);
    /* the constrained bodies' kinematics in their ancestor frames, one slot per body of
       each constraint: poses at Position, velocities and velocity products at Velocity */
    ct_set *cs = ct_of(m);
    int nkin = 0;
    for (int i = 0; i < cs->ncons; ++i) {
        cs->cons[i].kin0 = nkin;
        nkin += cs->cons[i].nb;
    }
    size_t nslot = (size_t)(nkin > 0 ? nkin : 1);
    mbk_value_type poses = mbk_value_bytes(nslot * sizeof(mbk_transform), 64);
    mbk_value_type vels = mbk_value_bytes(nslot * sizeof(ct_body_vel), 64);
    cs->cache_pose = mbk_state_allocate_cache(s, m->sub, MBK_STAGE_POSITION, MBK_STAGE_POSITION, &poses, NULL);
    cs->cache_vel = mbk_state_allocate_cache(s, m->sub, MBK_STAGE_VELOCITY, MBK_STAGE_VELOCITY, &vels, NULL);
    return cs->cache_slots < 0 || cs->cache_solve < 0 || cs->cache_pose < 0 || cs->cache_vel < 0 ? mbk_last_status()
                                                                                                 : MBK_OK;
}

/* ------------------------------------------------------------------ */
/* Building blocks                                                      */
/* ------------------------------------------------------------------ */

void ct_accel_kinematics(const mbk_matter *m, const mbk_state *s, const double *udot, mbk_spatial_vec *A)
{
    const mt_pos *pos = mt_cache(m, s, C_POS);
    const mt_vel *vel = mt_cache(m, s, C_VEL);
    const mbk_spatial_vec *H = mt_cache(m, s, C_H);
    A[0] = mbk_spatial_vec_zero();
    for (int i = 1; i < m->nb; ++i) {
        const mt_body *b = &m->bodies[i];
        mbk_spatial_vec a = mbk_spatial_vec_add(mbk_spatial_shift_motion(A[b->parent], pos[i].r_PB), vel[i].a_c);
        for (int j = 0; j < b->nu; ++j) a = mbk_spatial_vec_add(a, mbk_spatial_vec_scale(H[b->u0 + j], udot[b->u0 + j]));
        A[i] = a;
    }
}

/* g = J^T F + tau for the multipliers lambda (G^T lambda). */
static int g_transpose(const mbk_matter *m, const mbk_state *s, const ct_solve_ws *w, const double *lambda,
                       int levels, double *g)
{
    memset(w->F, 0, (size_t)m->nb * sizeof *w->F);
    memset(w->udot_t, 0, (size_t)m->nu * sizeof(double));
    int rc = ct_apply(m, s, lambda, levels, w->F, w->udot_t);
    if (rc < 0) return rc;
    /* Newton-Euler with no motion gives -tau - J^T F */
    mt_rnea(m, s, NULL, w->udot_t, w->F, false, w->S, w->S + m->nb, g);
    for (int i = 0; i < m->nu; ++i) g[i] = -g[i];
    return MBK_OK;
}

/* Largest magnitude; NaN if any entry is NaN (so error checks cannot pass on NaN). */
static double max_abs(const double *v, int n)
{
    double x = 0;
    for (int i = 0; i < n; ++i) {
        if (isnan(v[i])) return NAN;
        x = fmax(x, fabs(v[i]));
    }
    return x;
}

/* Least-squares (minimum-norm) solve of the n x n system A x = b in place (b becomes x). */
static int lsq_solve(const mbk_matter *m, const ct_solve_ws *w, double *A, double *b, int n, int *rank)
{
    int one = 1, info = 0, lwork = ct_of(m)->lwork;
    double rcond = RCOND;
    memset(w->jpvt, 0, (size_t)n * sizeof(int));
    dgelsy_(&n, &n, &one, A, &n, b, &n, w->jpvt, &rcond, rank, w->work, &lwork, &info);
    if (info != 0) return mbk_set_error(MBK_ESINGULAR, "constraint solve: LAPACK dgelsy failed (info %d)", info);
    return MBK_OK;
}

/* ------------------------------------------------------------------ */
/* Acceleration stage                                                   */
/* ------------------------------------------------------------------ */

int ct_solve(const mbk_matter *m, const mbk_state *s, double *udot, mbk_spatial_vec *A)
{
    ct_cslots *sl = ct_slots(m, s);
    int mt = sl->mp + sl->mv + sl->ma, rc;
    double *udoterr = mbk_state_upd_subsystem_udoterr(s, m->sub);
    double *mult = mbk_state_upd_subsystem_multipliers(s, m->sub);
    if (mt == 0) return MBK_OK;
    ct_solve_ws w = ct_workspace(m, s);
    if ((rc = ct_eval(m, s, 2, A, udot, w.e0)) < 0) return rc;
    /* Column j of G M^-1 G^T from a unit multiplier. */
    for (int j = 0; j < mt; ++j) {
        double *x = w.X + (size_t)j * (size_t)m->nu;
        memset(w.lambda, 0, (size_t)mt * sizeof(double));
        w.lambda[j] = 1.0;
        if ((rc = g_transpose(m, s, &w, w.lambda, 3, w.g)) < 0) return rc;
        mt_aba_solve(m, s, w.g, NULL, false, w.S, w.S + m->nb, x);
        for (int i = 0; i < m->nu; ++i) w.udot_t[i] = udot[i] - x[i];
        ct_accel_kinematics(m, s, w.udot_t, w.A_t);
        if ((rc = ct_eval(m, s, 2, w.A_t, w.udot_t, w.e1)) < 0) return rc;
        for (int i = 0; i < mt; ++i) w.W[(size_t)j * (size_t)mt + i] = w.e0[i] - w.e1[i];
    }
    memcpy(w.lambda, w.e0, (size_t)mt * sizeof(double));
    double W_max = max_abs(w.W, mt * mt); /* the solve overwrites W */
    if ((rc = lsq_solve(m, &w, w.W, w.lambda, mt, &sl->rank)) < 0) return rc;
    for (int j = 0; j < mt; ++j)
        for (int i = 0; i < m->nu; ++i) udot[i] -= w.X[(size_t)j * (size_t)m->nu + i] * w.lambda[j];
    ct_accel_kinematics(m, s, udot, A);
    if ((rc = ct_eval(m, s, 2, A, udot, udoterr)) < 0) return rc;
    /* A least-squares solution that leaves errors behind means the equations conflict.
       At full rank they cannot: what is left is the round-off of an ill-conditioned
       solve (long chains of couplers). Below full rank, the errors must be within the
       round-off a backward-stable solve leaves, about mt eps |W| |lambda|. */
    double scale = 1.0 + max_abs(w.e0, mt), left = max_abs(udoterr, mt);
    double roundoff = 16.0 * mt * DBL_EPSILON * (W_max * max_abs(w.lambda, mt) + scale);
    if (sl->rank < mt && !(left <= 1e-8 * scale || left <= roundoff))
        return mbk_set_error(MBK_ESINGULAR, "constraints are inconsistent or too ill-conditioned to solve: "
                             "after the solve, acceleration errors of %.3g remain (rank %d of %d; round-off "
                             "would leave at most %.3g); remove or disable conflicting or redundant "
                             "constraints", left, sl->rank, mt, roundoff);
    memcpy(mult, w.lambda, (size_t)mt * sizeof(double));
    return MBK_OK;
}

/* ------------------------------------------------------------------ */
/* Projection and assembly                                              */
/* ------------------------------------------------------------------ */

/* The k rows of R (G's rows in u space, from the force callbacks) into w->X; locked u get
   zero columns. */
static int build_rows(const mbk_matter *m, const mbk_state *s, const ct_solve_ws *w, int k, int levels,
                      const bool *locked_u)
{
    int mt = ct_slots(m, s)->mp + ct_slots(m, s)->mv + ct_slots(m, s)->ma, rc;
    size_t nu = (size_t)m->nu;
    for (int j = 0; j < k; ++j) {
        memset(w->lambda, 0, (size_t)mt * sizeof(double));
        w->lambda[j] = 1.0;
        double *row = w->X + (size_t)j * nu;
        if ((rc = g_transpose(m, s, w, w->lambda, levels, row)) < 0) return rc;
        for (size_t i = 0; locked_u && i < nu; ++i)
            if (locked_u[i]) row[i] = 0.0;
    }
    return MBK_OK;
}

/* Minimum-norm du with R du = -err for the rows R already in w->X; mu > 0 damps the
   step (Levenberg-Marquardt). Writes du into w->g. */
static int solve_rows(const mbk_matter *m, const ct_solve_ws *w, const double *err, int k, double mu)
{
    int rc, rank;
    size_t nu = (size_t)m->nu;
    for (int a = 0; a < k; ++a)
        for (int b = 0; b < k; ++b) {
            double d = 0;
            for (size_t i = 0; i < nu; ++i) d += w->X[(size_t)a * nu + i] * w->X[(size_t)b * nu + i];
            w->W[(size_t)b * (size_t)k + a] = d + (a == b ? mu : 0.0);
        }
    for (int a = 0; a < k; ++a) w->e1[a] = -err[a];
    if ((rc = lsq_solve(m, w, w->W, w->e1, k, &rank)) < 0) return rc;
    memset(w->g, 0, nu * sizeof(double));
    for (int j = 0; j < k; ++j)
        for (size_t i = 0; i < nu; ++i) w->g[i] += w->X[(size_t)j * nu + i] * w->e1[j];
    return MBK_OK;
}

/* Minimum-norm du with R du = -err, R's k rows from the force callbacks; writes du into w->g. */
static int min_norm_step(const mbk_matter *m, const mbk_state *s, const ct_solve_ws *w, const double *err, int k,
                         int levels, const bool *locked_u, double mu)
{
    int rc = build_rows(m, s, w, k, levels, locked_u);
    return rc < 0 ? rc : solve_rows(m, w, err, k, mu);
}

/* dq += step N(q) du, body by body (qdot = N u maps speeds to coordinate rates). */
static void add_n_du(const mbk_matter *m, const mbk_state *s, const double *du, double step, double *dq)
{
    bool euler = use_euler(m, s);
    const int *lay = qlayout(m, s);
    const double *qn = mt_cache(m, s, C_QN);
    double d[MBK_MOBILIZER_MAX_Q], sdu[MBK_MOBILIZER_MAX_U];
    for (int i = 1; i < m->nb; ++i) {
        const mt_body *b = &m->bodies[i];
        for (int j = 0; j < b->nu; ++j) sdu[j] = step * du[b->u0 + j];
        if (b->mob.ops->calc_qdot) b->mob.ops->calc_qdot(b->mob.impl, euler, qn + lay[2 * i], sdu, d);
        else memcpy(d, sdu, (size_t)b->nu * sizeof(double));
        for (int j = 0; j < lay[2 * i + 1]; ++j) dq[lay[2 * i] + j] += d[j];
    }
}

/* q += step N(q) du. */
static void add_to_q(const mbk_matter *m, mbk_state *s, const double *du, double step)
{
    add_n_du(m, s, du, step, mbk_state_upd_subsystem_q(s, m->sub));
}

/* Levenberg-Marquardt on perr: Gauss-Newton steps with halving, and damping
   that grows when no shorter step helps (near singular configurations). q is
   restored on failure. */
static int solve_positions(const mbk_matter *m, mbk_state *s, double tol, const bool *locked_u, int max_iter,
                           const char *what)
{
    const mbk_system *sys = m->sys;
    int rc = mbk_system_realize(sys, s, MBK_STAGE_POSITION);
    if (rc < 0) return rc;
    int mp = ct_slots(m, s)->mp, nq = mbk_state_get_subsystem_nq(s, m->sub);
    if (mp == 0) return MBK_OK;
    ct_solve_ws w = ct_workspace(m, s);
    double *qsave = ws_saved(m, &w, 0), *qbase = ws_saved(m, &w, 1);
    size_t qbytes = (size_t)nq * sizeof(double);
    memcpy(qsave, mbk_state_get_subsystem_q(s, m->sub), qbytes);
    double err = max_abs(mbk_state_get_qerr(s), mp), mu = 0.0;
    for (int it = 0; it < max_iter && !(err <= tol); ++it) {
        memcpy(w.e0, mbk_state_get_qerr(s), (size_t)mp * sizeof(double));
        if ((rc = min_norm_step(m, s, &w, w.e0, mp, 2, locked_u, mu)) < 0) break;
        double step = 1.0, before = err;
        memcpy(qbase, mbk_state_get_subsystem_q(s, m->sub), qbytes);
        for (int tries = 0; tries < 8; ++tries, step *= 0.5) {
            add_to_q(m, s, w.g, step);
            mbk_matter_normalize_quaternions(m, s);
            if ((rc = mbk_system_realize(sys, s, MBK_STAGE_POSITION)) < 0) break;
            err = max_abs(mbk_state_get_qerr(s), mp);
            if (err < before) break;
            /* back to the iteration's start before a shorter step */
            memcpy(mbk_state_upd_subsystem_q(s, m->sub), qbase, qbytes);
            if ((rc = mbk_system_realize(sys, s, MBK_STAGE_POSITION)) < 0) break;
        }
        if (rc < 0) break;
        if (!(err < before)) { /* no step helped: damp more and try again */
            err = before;
            mu = mu > 0 ? 10 * mu : 1e-3;
            if (mu > 1e6) break;
            continue;
        }
        mu = mu * 0.1 < 1e-12 ? 0.0 : mu * 0.1;
    }
    if (rc == 0 && err <= tol) return MBK_OK;
    if (rc < 0) { /* a realization failed: that is the cause, not the distance to the manifold */
        char why[MBK_ERROR_MAX];
        snprintf(why, sizeof why, "%s", mbk_last_error());
        memcpy(mbk_state_upd_subsystem_q(s, m->sub), qsave, qbytes);
        mbk_system_realize(sys, s, MBK_STAGE_POSITION);
        return mbk_set_error(rc, "%s: stopped; the State was left unchanged. Cause: %s", what, why);
    }
    memcpy(mbk_state_upd_subsystem_q(s, m->sub), qsave, qbytes);
    mbk_system_realize(sys, s, MBK_STAGE_POSITION);
    return mbk_set_error(rc < 0 ? rc : MBK_ECONVERGE,
                         "%s: position errors stayed at %.3g (tolerance %.3g); the State was left unchanged. "
                         "Start closer to a valid configuration, or check for conflicting constraints",
                         what, err, tol);
}

/* One least-squares correction of u makes the (linear) velocity errors vanish. */
static int solve_velocities(const mbk_matter *m, mbk_state *s, double tol)
{
    int rc = mbk_system_realize(m->sys, s, MBK_STAGE_VELOCITY);
    if (rc < 0) return rc;
    const ct_cslots *sl = ct_slots(m, s);
    int k = sl->mp + sl->mv;
    if (k == 0 || max_abs(mbk_state_get_uerr(s), k) <= tol) return MBK_OK;
    ct_solve_ws w = ct_workspace(m, s);
    memcpy(w.e0, mbk_state_get_uerr(s), (size_t)k * sizeof(double));
    if ((rc = min_norm_step(m, s, &w, w.e0, k, 2, NULL, 0.0)) < 0) return rc;
    double *u = mbk_state_upd_subsystem_u(s, m->sub);
    for (int i = 0; i < m->nu; ++i) u[i] += w.g[i];
    if ((rc = mbk_system_realize(m->sys, s, MBK_STAGE_VELOCITY)) < 0) return rc;
    double left = max_abs(mbk_state_get_uerr(s), k);
    if (!(left <= tol))
        return mbk_set_error(MBK_ECONVERGE, "velocity projection left errors of %.3g (tolerance %.3g); the "
                             "constraints may be inconsistent", left, tol);
    return MBK_OK;
}

int ct_project(const mbk_matter *m, mbk_state *s, double tol)
{
    ct_solve_ws w = ct_workspace(m, s);
    double *qkeep = ws_saved(m, &w, 2), *ukeep = ws_saved(m, &w, 3);
    int nq = mbk_state_get_subsystem_nq(s, m->sub);
    memcpy(qkeep, mbk_state_get_subsystem_q(s, m->sub), (size_t)nq * sizeof(double));
    memcpy(ukeep, mbk_state_get_subsystem_u(s, m->sub), (size_t)m->nu * sizeof(double));
    int rc = solve_positions(m, s, tol, NULL, 20, "mbk_system_project");
    if (rc >= 0) rc = solve_velocities(m, s, tol);
    if (rc < 0) { /* a failed projection leaves the State as it was */
        memcpy(mbk_state_upd_subsystem_q(s, m->sub), qkeep, (size_t)nq * sizeof(double));
        memcpy(mbk_state_upd_subsystem_u(s, m->sub), ukeep, (size_t)m->nu * sizeof(double));
        mbk_set_error(rc, "%s", mbk_last_error());
    }
    return rc;
}

/* The matter subsystem of a System, or NULL with an error. */
static const mbk_matter *matter_of(const mbk_system *sys, const char *fn)
{
    const mbk_matter *m = mbk_multibody_get_matter(sys);
    if (!m) mbk_set_error(MBK_EINVAL, "%s: the System has no matter subsystem", fn);
    return m;
}

int mbk_system_assemble_locked(const mbk_system *sys, mbk_state *s, double tol, const bool *locked_q)
{
    const char *fn = "mbk_system_assemble";
    const mbk_matter *m = matter_of(sys, fn);
    if (!m) return mbk_last_status();
    if (!(tol > 0)) return mbk_set_error(MBK_EINVAL, "%s: tol = %g; give a tolerance > 0", fn, tol);
    int rc = mbk_system_realize(sys, s, MBK_STAGE_POSITION);
    if (rc < 0) return rc;
    if (mbk_matter_normalize_quaternions(m, s) < 0) return mbk_last_status();
    bool *locked_u = NULL;
    if (locked_q) {
        /* a locked q locks every u of its body (quaternion bodies cannot lock one q alone) */
        locked_u = mbk_calloc((size_t)(m->nu + 1), sizeof(bool));
        if (!locked_u) return MBK_ENOMEM;
        const int *lay = qlayout(m, s);
        for (int i = 1; i < m->nb; ++i) {
            const mt_body *b = &m->bodies[i];
            bool qu = lay[2 * i + 1] == b->nu;
            for (int j = 0; j < lay[2 * i + 1]; ++j)
                if (locked_q[lay[2 * i] + j]) {
                    if (qu) locked_u[b->u0 + j] = true;
                    else
                        for (int k = 0; k < b->nu; ++k) locked_u[b->u0 + k] = true;
                }
        }
    }
    rc = solve_positions(m, s, tol, locked_u, 100, fn);
    mbk_free(locked_u);
    return rc;
}

int mbk_system_assemble(const mbk_system *sys, mbk_state *s, double tol)
{
    return mbk_system_assemble_locked(sys, s, tol, NULL);
}

/* ------------------------------------------------------------------ */
/* Error-estimate projection                                            */
/* ------------------------------------------------------------------ */

/* du = N(q)^+ dq body by body (the speeds that best give the coordinate change). */
static void q_to_u(const mbk_matter *m, const mbk_state *s, const double *dq, double *du)
{
    bool euler = use_euler(m, s);
    const int *lay = qlayout(m, s);
    const double *qn = mt_cache(m, s, C_QN);
    for (int i = 1; i < m->nb; ++i) {
        const mt_body *b = &m->bodies[i];
        const double *dqb = dq + lay[2 * i];
        if (b->mob.ops->calc_u_from_qdot)
            b->mob.ops->calc_u_from_qdot(b->mob.impl, euler, qn + lay[2 * i], dqb, du + b->u0);
        else memcpy(du + b->u0, dqb, (size_t)b->nu * sizeof(double));
    }
}

/* w->g = -R^+ R du for the first k rows R in w->X: minus du's part normal to the manifold. */
static int normal_part(const mbk_matter *m, const ct_solve_ws *w, int k, const double *du)
{
    size_t nu = (size_t)m->nu;
    for (int j = 0; j < k; ++j) {
        double d = 0;
        for (size_t i = 0; i < nu; ++i) d += w->X[(size_t)j * nu + i] * du[i];
        w->e0[j] = d;
    }
    return solve_rows(m, w, w->e0, k, 0.0);
}

int ct_project_error(const mbk_matter *m, const mbk_state *s, double *qerr, double *uerr)
{
    const ct_cslots *sl = ct_slots(m, s);
    int mp = sl->mp, k = sl->mp + sl->mv, rc;
    if (k == 0) return MBK_OK;
    ct_solve_ws w = ct_workspace(m, s);
    double *du = ws_saved(m, &w, 3); /* free outside a projection */
    /* rows [P; V] once; P's rows come first */
    if ((rc = build_rows(m, s, &w, k, 2, NULL)) < 0) return rc;
    if (mp > 0) { /* q: remove N R^+ R N^+ dq, so P N^+ dq' = 0 and no quaternion-norm change */
        q_to_u(m, s, qerr, du);
        if ((rc = normal_part(m, &w, mp, du)) < 0) return rc;
        add_n_du(m, s, w.g, 1.0, qerr);
    }
    if ((rc = normal_part(m, &w, k, uerr)) < 0) return rc;
    for (int i = 0; i < m->nu; ++i) uerr[i] += w.g[i];
    return MBK_OK;
}

int mbk_system_project_error_estimate(const mbk_system *sys, mbk_state *s, double *yerr)
{
    const char *fn = "mbk_system_project_error_estimate";
    const mbk_matter *m = matter_of(sys, fn);
    if (!m) return mbk_last_status();
    int rc = mt_need(m, s, MBK_STAGE_VELOCITY, fn);
    if (rc < 0) return rc;
    if (!yerr) return mbk_set_error(MBK_EINVAL, "%s: yerr is NULL", fn);
    double *qerr = yerr + mbk_state_get_subsystem_q_start(s, m->sub);
    double *uerr = yerr + mbk_state_get_nq(s) + mbk_state_get_subsystem_u_start(s, m->sub);
    return ct_project_error(m, s, qerr, uerr);
}

/* ------------------------------------------------------------------ */
/* Dense views for users coupling their own integrators                 */
/* ------------------------------------------------------------------ */

/* Checks shared by the dense views; returns the number of rows m. */
static int dense_need(const mbk_matter *m, const mbk_state *s, const void *out, const char *fn)
{
    int rc = mt_need(m, s, MBK_STAGE_VELOCITY, fn);
    if (rc < 0) return rc;
    if (!out) return mbk_set_error(MBK_EINVAL, "%s: output is NULL", fn);
    const ct_cslots *sl = ct_slots(m, s);
    return sl->mp + sl->mv + sl->ma;
}

int mbk_matter_calc_G_transpose_times(const mbk_matter *m, const mbk_state *s, const double *lambda, double *f)
{
    const char *fn = "mbk_matter_calc_G_transpose_times";
    int mt = dense_need(m, s, f, fn);
    if (mt < 0) return mt;
    if (mt > 0 && !lambda) return mbk_set_error(MBK_EINVAL, "%s: lambda is NULL", fn);
    ct_solve_ws w = ct_workspace(m, s);
    if (mt == 0) {
        memset(f, 0, (size_t)m->nu * sizeof(double));
        return MBK_OK;
    }
    memcpy(w.e1, lambda, (size_t)mt * sizeof(double));
    return g_transpose(m, s, &w, w.e1, 3, f);
}

int mbk_matter_calc_G(const mbk_matter *m, const mbk_state *s, double *G)
{
    int mt = dense_need(m, s, G, "mbk_matter_calc_G"), rc;
    if (mt < 0) return mt;
    ct_solve_ws w = ct_workspace(m, s);
    /* row j of G is (G^T e_j)^T */
    for (int j = 0; j < mt; ++j) {
        memset(w.e1, 0, (size_t)mt * sizeof(double));
        w.e1[j] = 1.0;
        if ((rc = g_transpose(m, s, &w, w.e1, 3, G + (size_t)j * (size_t)m->nu)) < 0) return rc;
    }
    return MBK_OK;
}

int mbk_matter_calc_constraint_bias(const mbk_matter *m, const mbk_state *s, double *b)
{
    int mt = dense_need(m, s, b, "mbk_matter_calc_constraint_bias");
    if (mt <= 0) return mt;
    ct_solve_ws w = ct_workspace(m, s);
    memset(w.udot_t, 0, (size_t)m->nu * sizeof(double));
    ct_accel_kinematics(m, s, w.udot_t, w.A_t);
    return ct_eval(m, s, 2, w.A_t, w.udot_t, b);
}

/* ------------------------------------------------------------------ */
/* For the operators of constraint_ops.c                                */
/* ------------------------------------------------------------------ */

int ct_g_transpose(const mbk_matter *m, const mbk_state *s, const double *lambda, int levels, double *g)
{
    ct_solve_ws w = ct_workspace(m, s);
    return g_transpose(m, s, &w, lambda, levels, g);
}

int ct_project_u(const mbk_matter *m, mbk_state *s, double tol)
{
    ct_solve_ws w = ct_workspace(m, s);
    double *ukeep = ws_saved(m, &w, 3);
    memcpy(ukeep, mbk_state_get_subsystem_u(s, m->sub), (size_t)m->nu * sizeof(double));
    int rc = solve_velocities(m, s, tol);
    if (rc < 0) { /* a failed projection leaves u as it was */
        char msg[512];
        snprintf(msg, sizeof msg, "%s", mbk_last_error());
        memcpy(mbk_state_upd_subsystem_u(s, m->sub), ukeep, (size_t)m->nu * sizeof(double));
        mbk_system_realize(m->sys, s, MBK_STAGE_VELOCITY);
        mbk_set_error(rc, "%s", msg);
    }
    return rc;
}
