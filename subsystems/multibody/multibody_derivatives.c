/* The derivatives of a multibody System's dynamics (mbk/derivatives.h): the
 * matter sweeps (subsystems/matter/matter_deriv_*.c) and the force
 * elements' Jacobians (subsystems/forces/force_jacobians.c) put together,
 * the numeric pieces (custom elements without Jacobians, forces of other
 * subsystems, the constraints' part of udot) by central differences on the
 * State, and M^-1 on each column for the forward dynamics. This sits above
 * matter, forces and constraints, so it may call all three. */
#include <limits.h>
#include <math.h>
#include <stdio.h>
#include <string.h>

#include "mbk/derivatives.h"
#include "mbk/status.h"
#include "../constraints/constraints_impl.h"
#include "../forces/forces_impl.h"

/* ------------------------------------------------------------------ */
/* The System and what in it is numeric                                 */
/* ------------------------------------------------------------------ */

typedef struct md_ctx {
    const mbk_system *sys;
    mbk_state *s;
    const mbk_matter *m;
    int nq, nu, nsub;
    mbk_derivative_info info;
    bool constrained; /* enabled constraints with equations */
} md_ctx;

/* Whether subsystem k may add forces that are not force elements: it is not matter,
   a force subsystem or the events subsystem, and it does something at Dynamics
   (the accumulators are zeroed at the start of matter's Dynamics). */
static bool is_other(const md_ctx *c, int k)
{
    const mbk_subsystem_ops *ops = mbk_system_get_subsystem_ops(c->sys, k);
    return k != c->m->sub && !fe_forces_of(c->sys, k) && k != mbk_system_get_events_subsystem(c->sys) && ops &&
           ops->realize_dynamics;
}

/* Fill in the info (the State is at Instance or later). */
static void find_numeric(md_ctx *c)
{
    mbk_derivative_info *in = &c->info;
    memset(in, 0, sizeof *in);
    in->multibody = true;
    in->first_numeric_body = in->first_numeric_force = in->first_numeric_force_subsystem = -1;
    for (int b = 1; b < c->m->nb; ++b)
        if (!c->m->bodies[b].pin && !mt_mobilizer_derivatives_exact(&c->m->bodies[b].mob)) {
            if (in->numeric_mobilizers++ == 0) in->first_numeric_body = b;
        }
    for (int k = 0; k < c->nsub; ++k) {
        const mbk_forces *f = fe_forces_of(c->sys, k);
        if (f) {
            int first = -1, n = fe_count_numeric(f, c->s, &first);
            if (n > 0 && in->numeric_force_elements == 0) {
                in->first_numeric_force = first;
                in->first_numeric_force_subsystem = k;
            }
            in->numeric_force_elements += n;
        } else if (is_other(c, k)) {
            in->numeric_subsystems++;
        }
    }
    const ct_cslots *sl = ct_slots(c->m, c->s);
    c->constrained = sl->mp + sl->mv + sl->ma > 0;
    in->numeric_constraints = c->constrained;
    in->numeric_z = mbk_state_get_nz(c->s) > 0;
    in->exact = !in->numeric_mobilizers && !in->numeric_force_elements && !in->numeric_subsystems &&
                !in->numeric_constraints && !in->numeric_z;
}

/* The checks every function makes, then the State realized to Acceleration. */
static int prepare(md_ctx *c, const mbk_system *sys, mbk_state *s, const char *fn, bool realize)
{
    memset(c, 0, sizeof *c);
    if (!sys || !s) return mbk_set_error(MBK_EINVAL, "%s: the System and the State must not be NULL", fn);
    int rc = mbk_system_check_state(sys, s);
    if (rc < 0) return mbk_set_error(rc, "%s: %s", fn, mbk_last_error());
    if (mbk_state_get_stage(s) < MBK_STAGE_INSTANCE)
        return mbk_set_error(MBK_ESTAGE, "%s: the State is realized only to %s; realize it to Instance (or "
                             "further) first: the derivatives realize Time onward, not the State's layout",
                             fn, mbk_stage_name(mbk_state_get_stage(s)));
    c->sys = sys;
    c->s = s;
    c->m = mbk_multibody_get_matter(sys);
    c->nsub = mbk_system_get_num_subsystems(sys);
    if (!c->m) return mbk_set_error(MBK_EINVAL, "%s: the System has no matter subsystem; the analytic "
                                    "derivatives need a multibody System (mbk_multibody_create)", fn);
    c->nq = mbk_state_get_nq(s);
    c->nu = mbk_state_get_nu(s);
    if (mbk_state_get_subsystem_nq(s, c->m->sub) != c->nq || mbk_state_get_subsystem_nu(s, c->m->sub) != c->nu)
        return mbk_set_error(MBK_EINVAL, "%s: other subsystems than matter have q or u (%d of %d q, %d of %d u "
                             "are matter's); the analytic derivatives cover matter's alone: use "
                             "mbk_system_calc_ydot_jacobian", fn, mbk_state_get_subsystem_nq(s, c->m->sub), c->nq,
                             mbk_state_get_subsystem_nu(s, c->m->sub), c->nu);
    find_numeric(c);
    if (realize && (rc = mbk_system_realize(sys, s, MBK_STAGE_ACCELERATION)) < 0)
        return mbk_set_error(rc, "%s: realizing the State to Acceleration: %s", fn, mbk_last_error());
    return MBK_OK;
}

int mbk_system_get_derivative_info(const mbk_system *sys, const mbk_state *s, mbk_derivative_info *info)
{
    const char *fn = "mbk_system_get_derivative_info";
    if (!info) return mbk_set_error(MBK_EINVAL, "%s: info is NULL", fn);
    md_ctx c;
    memset(info, 0, sizeof *info);
    info->first_numeric_body = info->first_numeric_force = info->first_numeric_force_subsystem = -1;
    int rc = prepare(&c, sys, (mbk_state *)s, fn, false);
    if (rc == MBK_EINVAL && c.sys) { /* not a multibody System: everything is numeric */
        mbk_clear_error();
        info->numeric_z = mbk_state_get_nz(s) > 0;
        return MBK_OK;
    }
    if (rc < 0) return rc;
    *info = c.info;
    return MBK_OK;
}

/* The sum of every force subsystem's gravity. */
static mbk_vec3 gravity_of(const md_ctx *c)
{
    mbk_vec3 g = mbk_vec3_zero();
    for (int k = 0; k < c->nsub; ++k) {
        const mbk_forces *f = fe_forces_of(c->sys, k);
        if (f) g = mbk_vec3_add(g, fe_gravity_sum(f, c->s));
    }
    return g;
}

/* Every force subsystem's analytic elements (jacobians: also their Jacobians). */
static int add_elements(const md_ctx *c, bool jacobians, double *df_dq, int ldq, double *df_du, int ldu)
{
    for (int k = 0; k < c->nsub; ++k) {
        const mbk_forces *f = fe_forces_of(c->sys, k);
        int rc = f ? fe_add_jacobians(f, c->s, jacobians, df_dq, ldq, df_du, ldu) : MBK_OK;
        if (rc < 0) return rc;
    }
    return MBK_OK;
}

/* ------------------------------------------------------------------ */
/* Numeric pieces: central differences on the State                     */
/* ------------------------------------------------------------------ */

enum { NUM_FORCES = 1, NUM_CONSTRAINTS = 2 };

/* What is differentiated numerically at a perturbed State: the generalized force
   of the numeric elements and other subsystems (NUM_FORCES), or the constraints'
   part of udot, udot - udot_unconstrained (NUM_CONSTRAINTS). */
static int numeric_value(const md_ctx *c, int what, double *out)
{
    const mbk_matter *m = c->m;
    const mbk_state *s = c->s;
    mt_dws ws = mt_dws_of(m, s);
    mbk_spatial_vec *Fx = ws.sp, *Fe = ws.sp + m->nb, *A = mt_cache(m, s, C_SCRATCH), *z = A + m->nb;
    double *tx = ws.vec + MT_V_TAU * (size_t)ws.vlen, *te = ws.vec + MT_V_TAU2 * (size_t)ws.vlen;
    const mbk_spatial_vec *Facc = mt_cache(m, s, C_FORCES);
    const double *tacc = mt_mobility_forces((mbk_spatial_vec *)Facc, m->nb);
    if (what == NUM_CONSTRAINTS) {
        mt_aba_solve(m, s, tacc, Facc, true, A, z, out);
        const double *ud = mbk_state_get_udot(s);
        for (int i = 0; i < c->nu; ++i) out[i] = ud[i] - out[i];
        return MBK_OK;
    }
    /* forces: all of the accumulators but the analytic elements when other subsystems
       add forces, else the numeric elements alone */
    const bool others = c->info.numeric_subsystems > 0;
    if (others) {
        memcpy(Fx, Facc, (size_t)m->nb * sizeof *Fx);
        memcpy(tx, tacc, (size_t)c->nu * sizeof *tx);
    } else {
        memset(Fx, 0, (size_t)m->nb * sizeof *Fx);
        memset(tx, 0, (size_t)c->nu * sizeof *tx);
    }
    memset(Fe, 0, (size_t)m->nb * sizeof *Fe);
    memset(te, 0, (size_t)c->nu * sizeof *te);
    for (int k = 0; k < c->nsub; ++k) {
        const mbk_forces *f = fe_forces_of(c->sys, k);
        if (!f) continue;
        const int *on = mbk_state_get_discrete(s, f->sub, f->enabled_var);
        for (int i = 0; i < f->n; ++i) {
            if (!on[i] || fe_element_is_numeric(f, i) == others) continue;
            int rc = fe_element_force(f, i, s, others ? Fe : Fx, others ? te : tx);
            if (rc != 0) return rc;
        }
    }
    if (others) {
        for (int b = 0; b < m->nb; ++b) Fx[b] = mbk_spatial_vec_sub(Fx[b], Fe[b]);
        for (int i = 0; i < c->nu; ++i) tx[i] -= te[i];
    }
    /* Newton-Euler with no motion gives -tau - J^T F */
    mt_rnea(m, s, NULL, tx, Fx, false, A, z, out);
    for (int i = 0; i < c->nu; ++i) out[i] = -out[i];
    return MBK_OK;
}

/* Put the State back at (q0, u0) and realize it to Acceleration. */
static int restore(const md_ctx *c, const double *q0, const double *u0)
{
    double *q = mbk_state_upd_q(c->s), *u = mbk_state_upd_u(c->s);
    if (!q || !u) return mbk_last_status();
    memcpy(q, q0, (size_t)c->nq * sizeof *q);
    memcpy(u, u0, (size_t)c->nu * sizeof *u);
    return mbk_system_realize(c->sys, c->s, MBK_STAGE_ACCELERATION);
}

/* ADD the derivatives of numeric_value(what) with respect to every q (into
   out_q, row stride ldq) and u (out_u, ldu), either may be NULL: central
   differences with steps h and h/2, Richardson extrapolated (error O(h^4) plus
   round-off eps / h), h = 1e-4 max(1, |x|). q_only: the u columns are zero. */
static int numeric_columns(const md_ctx *c, int what, bool q_only, double *out_q, int ldq, double *out_u, int ldu,
                           const char *fn)
{
    const mbk_matter *m = c->m;
    mt_dws ws = mt_dws_of(m, c->s);
    double *q0 = ws.vec + MT_V_Q0 * (size_t)ws.vlen, *u0 = ws.vec + MT_V_U0 * (size_t)ws.vlen;
    double *val = ws.vec + MT_V_VAL * (size_t)ws.vlen, *acc = ws.vec + MT_V_ACC * (size_t)ws.vlen;
    memcpy(q0, mbk_state_get_q(c->s), (size_t)c->nq * sizeof *q0);
    memcpy(u0, mbk_state_get_u(c->s), (size_t)c->nu * sizeof *u0);
    const mbk_stage stage = what == NUM_CONSTRAINTS ? MBK_STAGE_ACCELERATION : MBK_STAGE_DYNAMICS;
    const int ncols = (out_q ? c->nq : 0) + (out_u && !q_only ? c->nu : 0);
    for (int col = 0; col < ncols; ++col) {
        const bool is_q = out_q && col < c->nq;
        const int j = is_q ? col : col - (out_q ? c->nq : 0);
        const double x0 = is_q ? q0[j] : u0[j], h0 = 1e-4 * fmax(1.0, fabs(x0));
        memset(acc, 0, (size_t)c->nu * sizeof *acc);
        for (int r = 0; r < 2; ++r) {
            const double h = r ? 0.5 * h0 : h0, wgt = (r ? 4.0 / 3.0 : -1.0 / 3.0) * 0.5 / h;
            for (int sg = -1; sg <= 1; sg += 2) {
                double *x = is_q ? mbk_state_upd_q(c->s) : mbk_state_upd_u(c->s);
                if (!x) return mbk_last_status();
                x[j] = x0 + sg * h;
                int rc = mbk_system_realize(c->sys, c->s, stage);
                if (rc >= 0) rc = numeric_value(c, what, val);
                if (rc < 0) {
                    char why[512];
                    snprintf(why, sizeof why, "%s", mbk_last_error());
                    restore(c, q0, u0);
                    return mbk_set_error(rc, "%s: differentiating %s numerically, at %s[%d] %+g: %s", fn,
                                         what == NUM_CONSTRAINTS ? "the constraints' part of udot"
                                                                 : "forces without Jacobians",
                                         is_q ? "q" : "u", j, sg * h, why);
                }
                for (int i = 0; i < c->nu; ++i) acc[i] += sg * wgt * val[i];
            }
        }
        double *out = is_q ? out_q : out_u;
        const int ld = is_q ? ldq : ldu;
        for (int i = 0; i < c->nu; ++i) out[(size_t)i * (size_t)ld + (size_t)j] += acc[i];
        double *x = is_q ? mbk_state_upd_q(c->s) : mbk_state_upd_u(c->s);
        x[j] = x0;
    }
    int rc = restore(c, q0, u0);
    return rc < 0 ? mbk_set_error(rc, "%s: realizing the State again: %s", fn, mbk_last_error()) : MBK_OK;
}

/* Whether the forces need numeric columns, and whether u columns may be skipped
   (every numeric piece depends on positions only). */
static bool numeric_forces(const md_ctx *c, bool *q_only)
{
    *q_only = false;
    if (c->info.numeric_subsystems > 0) return true;
    if (c->info.numeric_force_elements == 0) return false;
    *q_only = true;
    for (int k = 0; k < c->nsub; ++k) {
        const mbk_forces *f = fe_forces_of(c->sys, k);
        if (!f) continue;
        const int *on = mbk_state_get_discrete(c->s, f->sub, f->enabled_var);
        for (int i = 0; i < f->n; ++i)
            if (on[i] && fe_element_is_numeric(f, i) && !f->elems[i].ops.depends_only_on_positions) *q_only = false;
    }
    return true;
}

/* ------------------------------------------------------------------ */
/* The public functions                                                 */
/* ------------------------------------------------------------------ */

/* MBK_OK if the rows x cols block is finite, else MBK_ENOTFINITE naming the entry. */
static int check_finite(const double *a, int rows, int cols, int ld, const char *fn, const char *name)
{
    /* a dense block is scanned in one call (long enough to vectorize well) */
    const bool dense = ld == cols && (size_t)rows * (size_t)cols <= (size_t)INT_MAX;
    for (int i = 0; a && i < (dense ? 1 : rows); ++i) {
        int k = mbk_find_nonfinite(a + (size_t)i * (size_t)ld, dense ? rows * cols : cols);
        if (k >= 0 && dense) i = k / cols, k %= cols;
        if (k >= 0)
            return mbk_set_error(MBK_ENOTFINITE, "%s: %s[%d][%d] is %g: the State is at a singular configuration "
                                 "(gimbal lock of Euler angles or a bushing, two stations of a two-point element "
                                 "at one place, ...) or a custom piece gave NaN; the State was not changed",
                                 fn, name, i, k, a[(size_t)i * (size_t)ld + (size_t)k]);
    }
    return MBK_OK;
}

static void zero_rows(double *a, int rows, int cols, int ld)
{
    if (!a) return;
    if (ld == cols) { /* dense: one call */
        memset(a, 0, (size_t)rows * (size_t)cols * sizeof *a);
        return;
    }
    for (int i = 0; i < rows; ++i) memset(a + (size_t)i * (size_t)ld, 0, (size_t)cols * sizeof *a);
}

static void negate_rows(double *a, int rows, int cols, int ld)
{
    for (int i = 0; a && i < rows; ++i)
        for (int j = 0; j < cols; ++j) a[(size_t)i * (size_t)ld + (size_t)j] = -a[(size_t)i * (size_t)ld + (size_t)j];
}

/* dr/dq and dr/du at udot into the arrays (zeroed here unless zeroed): the force
   Jacobians (analytic, then numeric), less the matter sweep, is -dr; negated unless
   negative (the forward dynamics want -dr). block: the arrays are side by side in the
   work space's block (mt_deriv_block), whose rows the sweep may take in whole vectors. */
static int residual_derivatives(const md_ctx *c, const double *udot, double *dr_dq, int ldq, double *dr_du, int ldu,
                                bool negative, bool zeroed, bool block, const char *fn)
{
    int rc = mt_deriv_setup(c->m, c->s, udot, gravity_of(c), true);
    if (rc < 0) return mbk_set_error(rc, "%s: %s", fn, mbk_last_error());
    if (!zeroed) {
        zero_rows(dr_dq, c->nu, c->nq, ldq);
        zero_rows(dr_du, c->nu, c->nu, ldu);
    }
    if ((rc = add_elements(c, true, dr_dq, ldq, dr_du, ldu)) < 0) return mbk_set_error(rc, "%s: %s", fn, mbk_last_error());
    bool q_only;
    if (numeric_forces(c, &q_only) && (rc = numeric_columns(c, NUM_FORCES, q_only, dr_dq, ldq, dr_du, ldu, fn)) < 0)
        return rc;
    mt_deriv_sweep(c->m, c->s, -1.0, dr_dq, ldq, block ? ldq : c->nq, dr_du, ldu, block ? ldu - c->nq + 8 : c->nu);
    if (!negative) {
        negate_rows(dr_dq, c->nu, c->nq, ldq);
        negate_rows(dr_du, c->nu, c->nu, ldu);
    }
    return MBK_OK;
}

int mbk_system_calc_residual_derivatives(const mbk_system *sys, mbk_state *s, const double *udot, double *dr_dq,
                                         double *dr_du)
{
    const char *fn = "mbk_system_calc_residual_derivatives";
    md_ctx c;
    int rc = prepare(&c, sys, s, fn, true);
    if (rc < 0) return rc;
    if (!dr_dq && !dr_du) return mbk_set_error(MBK_EINVAL, "%s: dr_dq and dr_du are both NULL", fn);
    if (udot && (rc = mt_need_finite(udot, c.nu, fn, "udot")) < 0) return rc;
    if (!udot) udot = mbk_state_get_udot(s);
    if ((rc = residual_derivatives(&c, udot, dr_dq, c.nq, dr_du, c.nu, false, false, false, fn)) < 0) return rc;
    if ((rc = check_finite(dr_dq, c.nu, c.nq, c.nq, fn, "dr_dq")) < 0) return rc;
    return check_finite(dr_du, c.nu, c.nu, c.nu, fn, "dr_du");
}

int mbk_system_calc_acceleration_derivatives_ld(const mbk_system *sys, mbk_state *s, double *dudot_dq, int ldq,
                                                double *dudot_du, int ldu)
{
    const char *fn = "mbk_system_calc_acceleration_derivatives";
    md_ctx c;
    int rc = prepare(&c, sys, s, fn, true);
    if (rc < 0) return rc;
    if (!dudot_dq && !dudot_du) return mbk_set_error(MBK_EINVAL, "%s: dudot_dq and dudot_du are both NULL", fn);
    if ((dudot_dq && ldq < c.nq) || (dudot_du && ldu < c.nu))
        return mbk_set_error(MBK_EINVAL, "%s: row strides %d and %d are below nq = %d and nu = %d", fn, ldq, ldu, c.nq,
                             c.nu);
    const mbk_matter *m = c.m;
    const double *udot = mbk_state_get_udot(s);
    if (c.constrained) { /* the unconstrained udot, at which the inverse dynamics balance */
        mt_dws ws = mt_dws_of(m, s);
        double *ufree = ws.vec + MT_V_UFREE * (size_t)ws.vlen;
        const mbk_spatial_vec *F = mt_cache(m, s, C_FORCES);
        mbk_spatial_vec *A = mt_cache(m, s, C_SCRATCH);
        mt_aba_solve(m, s, mt_mobility_forces((mbk_spatial_vec *)F, m->nb), F, true, A, A + m->nb, ufree);
        udot = ufree;
    }
    /* dudot = -M^-1 dr. Both wanted, unconstrained and small enough: -dr in the work
       space's block, side by side, and M^-1 from there into the arrays */
    int ldy = 0;
    double *Y = !c.constrained && dudot_dq && dudot_du ? mt_deriv_block(m, s, c.nq + c.nu, &ldy) : NULL;
    if (Y) {
        if ((rc = residual_derivatives(&c, udot, Y, ldy, Y + c.nq, ldy, true, true, true, fn)) < 0) return rc;
        if ((rc = mt_deriv_solve_block(m, s, 1.0, dudot_dq, ldq, c.nq, dudot_du, ldu, c.nu)) < 0)
            return mbk_set_error(rc, "%s: %s", fn, mbk_last_error());
        if (rc == MBK_OK) return MBK_OK; /* the solve found every entry finite */
    } else { /* -dr in the arrays, M^-1 there */
        if ((rc = residual_derivatives(&c, udot, dudot_dq, ldq, dudot_du, ldu, true, false, false, fn)) < 0) return rc;
        if ((rc = mt_deriv_solve(m, s, 1.0, dudot_dq, ldq, c.nq, dudot_du, ldu, c.nu)) < 0)
            return mbk_set_error(rc, "%s: %s", fn, mbk_last_error());
        if (c.constrained && (rc = numeric_columns(&c, NUM_CONSTRAINTS, false, dudot_dq, ldq, dudot_du, ldu, fn)) < 0)
            return rc;
    }
    if ((rc = check_finite(dudot_dq, c.nu, c.nq, ldq, fn, "dudot_dq")) < 0) return rc;
    return check_finite(dudot_du, c.nu, c.nu, ldu, fn, "dudot_du");
}

int mbk_system_calc_acceleration_derivatives(const mbk_system *sys, mbk_state *s, double *dudot_dq, double *dudot_du)
{
    int nq = s ? mbk_state_get_nq(s) : 0, nu = s ? mbk_state_get_nu(s) : 0;
    return mbk_system_calc_acceleration_derivatives_ld(sys, s, dudot_dq, nq, dudot_du, nu);
}

int mbk_system_add_force_jacobians_ld(const mbk_system *sys, mbk_state *s, double *df_dq, int ldq, double *df_du,
                                      int ldu)
{
    const char *fn = "mbk_system_add_force_jacobians";
    md_ctx c;
    int rc = prepare(&c, sys, s, fn, true);
    if (rc < 0) return rc;
    if (!df_dq && !df_du) return mbk_set_error(MBK_EINVAL, "%s: df_dq and df_du are both NULL", fn);
    if ((df_dq && ldq < c.nq) || (df_du && ldu < c.nu))
        return mbk_set_error(MBK_EINVAL, "%s: row strides %d and %d are below nq = %d and nu = %d", fn, ldq, ldu, c.nq,
                             c.nu);
    /* the elements' own Jacobians need the twists and velocity changes of a full setup */
    if ((rc = mt_deriv_setup(c.m, s, NULL, mbk_vec3_zero(), true)) < 0 ||
        (rc = add_elements(&c, true, df_dq, ldq, df_du, ldu)) < 0)
        return mbk_set_error(rc, "%s: %s", fn, mbk_last_error());
    bool q_only;
    if (numeric_forces(&c, &q_only) && (rc = numeric_columns(&c, NUM_FORCES, q_only, df_dq, ldq, df_du, ldu, fn)) < 0)
        return rc;
    /* gravity and the forces held fixed while the bodies move: a sweep with no motion
       gives -(their Jacobian) */
    if (df_dq) {
        if ((rc = mt_deriv_setup(c.m, s, NULL, gravity_of(&c), false)) < 0 ||
            (rc = add_elements(&c, false, NULL, 0, NULL, 0)) < 0)
            return mbk_set_error(rc, "%s: %s", fn, mbk_last_error());
        mt_deriv_sweep(c.m, s, -1.0, df_dq, ldq, c.nq, NULL, 0, 0);
    }
    if ((rc = check_finite(df_dq, c.nu, c.nq, ldq, fn, "df_dq")) < 0) return rc;
    return check_finite(df_du, c.nu, c.nu, ldu, fn, "df_du");
}

int mbk_system_add_force_jacobians(const mbk_system *sys, mbk_state *s, double *df_dq, double *df_du)
{
    int nq = s ? mbk_state_get_nq(s) : 0, nu = s ? mbk_state_get_nu(s) : 0;
    return mbk_system_add_force_jacobians_ld(sys, s, df_dq, nq, df_du, nu);
}
