/* bench_ops.c - the operations: their table (names, titles, what the cross-check compares,
 * which models), which models they apply to, and the cross-check of every op against
 * Simbody before anything is timed. */
#include <math.h>
#include <stdlib.h>

#include "bench_driver.h"

const op_info OPS[NUM_OPS] = {
    [OP_FULL] = {"full", "Forward dynamics, full cycle (set q and u, realize to Acceleration)", {"udot", NULL},
                 MK_PLAIN | MK_CONTACT},
    [OP_UONLY] = {"u_only", "Forward dynamics, u-only cycle (set u, realize to Acceleration; position work cached)",
                  {"udot", NULL}, MK_PLAIN | MK_CONTACT},
    [OP_POSITION] = {"position", "Realize to Position only (set q, realize to Position)", {"X_GB", NULL}, MK_ALL},
    [OP_RNEA_KIN] = {"rnea_kin",
                     "RNEA with kinematics (set q and u, realize to Velocity, then mbk_matter_calc_residual_force vs "
                     "calcResidualForceIgnoringConstraints)",
                     {"residual", NULL}, MK_PLAIN | MK_CONTACT},
    [OP_RNEA] = {"rnea_cached",
                 "Inverse dynamics with kinematics cached (residual force only, at a state realized to Acceleration)",
                 {"residual", NULL}, MK_PLAIN | MK_CONTACT},
    [OP_MASS] = {"mass_matrix", "Mass matrix (mbk_matter_calc_mass_matrix vs calcM)", {"M", NULL}, MK_PLAIN},
    [OP_MINV] = {"minv_v", "M^-1 v (mbk_matter_multiply_by_M_inverse vs multiplyByMInv)", {"M^-1 v", NULL}, MK_PLAIN},
    [OP_CONSTRAINED] = {"constrained",
                        "Constrained forward dynamics (set q and u, realize to Acceleration: udot and multipliers)",
                        {"udot", "multipliers"}, MK_CONSTRAINED},
    [OP_STEP] = {"step", "One integrator step (RK-Merson, fixed step; µs per step, method in Setup)",
                 {"q", "u"}, MK_ALL},
    [OP_ID] = {"id",
               "Inverse dynamics with gravity from scratch (set q and u, realize to Dynamics, residual force with "
               "the applied forces; Simbody: calcResidualForceIgnoringConstraints; Pinocchio: rnea)",
               {"residual", NULL}, MK_PLAIN | MK_CONTACT},
    [OP_MASS_KIN] = {"mass_kin",
                     "Mass matrix from scratch (set q, realize to Position, M; Pinocchio: crba, upper triangle)",
                     {"M", NULL}, MK_PLAIN},
    [OP_ABA_DERIV] = {"aba_deriv",
                      "Forward-dynamics derivatives from scratch (set q and u, mbk_system_calc_acceleration_derivatives: "
                      "dudot/dq and dudot/du; Pinocchio: computeABADerivatives)",
                      {"dudot/dq, dudot/du", NULL}, MK_PLAIN, 1},
    [OP_RNEA_DERIV] = {"rnea_deriv",
                       "Inverse-dynamics derivatives from scratch (set q and u, mbk_system_calc_residual_derivatives "
                       "at the known udot; Pinocchio: computeRNEADerivatives)",
                       {"dr/dq, dr/du", NULL}, MK_PLAIN, 1},
    [OP_JAC_FD] = {"ydot_jac_fd", "ydot Jacobian by finite differences (set q and u, mbk_system_calc_ydot_jacobian_fd)",
                   {"J", NULL}, MK_PLAIN, 1},
    [OP_JAC] = {"ydot_jac", "ydot Jacobian, analytic (set q and u, mbk_system_calc_ydot_jacobian)", {"J", NULL},
                MK_PLAIN, 1},
};

/* Relative difference: max |a - b| / max(max |b|, tiny). NaN counts as infinite. */
double bench_rel_diff(const double *a, const double *b, size_t n)
{
    double num = 0.0, den = 1e-300;
    for (size_t i = 0; i < n; ++i) {
        double d = fabs(a[i] - b[i]);
        if (!(d == d)) return INFINITY;
        if (d > num) num = d;
        if (fabs(b[i]) > den) den = fabs(b[i]);
    }
    return num / den;
}

/* Prepare both sides for an op (before each of its batches when ops take turns). */
void bench_prepare_op(const result *res, mb_side *mb, sb_side *sb, bench_op op)
{
    if (mb_prepare(mb, op) < 0) bench_die("mbk %s %s: prepare: %s", res->name, OPS[op].name, mb_last_error());
    if (sb && !OPS[op].no_simbody && sb_prepare(sb, op) < 0) bench_die("Simbody %s %s: prepare: %s", res->name, OPS[op].name, sb_last_error());
}

int bench_op_applies(const result *res, bench_op op)
{
    if (!(OPS[op].models & res->kind)) return 0;
    if (op == OP_MASS || op == OP_MASS_KIN) return res->nu <= MASS_MATRIX_MAX_NU;
    if (op == OP_JAC_FD) return res->nu <= FD_JACOBIAN_MAX_NU;
    if (OPS[op].no_simbody) return res->nu <= DERIV_MAX_NU;
    return 1;
}

/* Parts of an op's result compared separately because their units differ: constrained =
   [udot | multipliers], step = [q | u]; every other result is one part. */
static int result_parts(const result *res, bench_op op, int len, int part[2])
{
    part[1] = 0;
    if (op == OP_CONSTRAINED) part[0] = res->nu, part[1] = len - res->nu;
    else if (op == OP_STEP) part[0] = res->nq, part[1] = res->nu;
    else part[0] = len;
    return part[1] > 0 ? 2 : 1;
}

/* Run the op once on each side at the benchmark state and stop the run unless the results
   agree to TOL relative (each part on its own). */
void bench_cross_check(result *res, mb_side *mb, sb_side *sb, bench_op op)
{
    int n = mb_result_len(mb, op), ns = sb_result_len(sb, op);
    if (n < 0 || n != ns)
        bench_die("%s: %s: the results have different lengths (mbk %d, Simbody %d)", res->name, OPS[op].name, n, ns);
    double *a = bench_xcalloc((size_t)n, sizeof(double)), *b = bench_xcalloc((size_t)n, sizeof(double));
    if (mb_eval(mb, op, a) < 0) bench_die("%s: %s: %s", res->name, OPS[op].name, mb_last_error());
    if (sb_eval(sb, op, b) < 0) bench_die("%s: %s: %s", res->name, OPS[op].name, sb_last_error());
    int part[2], np = result_parts(res, op, n, part);
    double e[2] = {0.0, NAN};
    for (int k = 0, off = 0; k < np; off += part[k++]) e[k] = bench_rel_diff(a + off, b + off, (size_t)part[k]);
    res->err[op] = e[0];
    res->err2[op] = e[1];
    free(a);
    free(b);
    if (np == 2 && !(e[0] <= TOL && e[1] <= TOL))
        bench_die("%s: %s: mbk and Simbody differ: %s by %.3e, %s by %.3e relative (tolerance %.0e); not timing a wrong answer",
            res->name, OPS[op].name, OPS[op].part[0], e[0], OPS[op].part[1], e[1], TOL);
    if (!(e[0] <= TOL))
        bench_die("%s: %s: mbk's %s differs from Simbody's by %.3e relative (tolerance %.0e); not timing a wrong answer",
            res->name, OPS[op].name, OPS[op].part[0], e[0], TOL);
}
