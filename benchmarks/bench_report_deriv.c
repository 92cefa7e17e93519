/* bench_report_deriv.c - the report's section on the derivatives (issue 14): mbk's analytic
 * dudot/dq, dudot/du against its own full cycle and its finite-difference ydot Jacobian in the
 * same run, and against Pinocchio's computeABADerivatives and computeRNEADerivatives. */
#include <math.h>
#include <stdio.h>
#include <string.h>

#include "bench_driver.h"

/* Goals of issue 14 on the humanoid, and the models it names. */
static const double GOAL_DERIV_OVER_FULL = 4.0, GOAL_FD_OVER_ANALYTIC = 20.0;
static const char *const ISSUE_MODELS[] = {"chain10", "chain100", "tree63", "tree255", "humanoid"};
enum { N_ISSUE_MODELS = sizeof ISSUE_MODELS / sizeof ISSUE_MODELS[0] };

static int issue_model(const char *name)
{
    for (int j = 0; j < N_ISSUE_MODELS; ++j)
        if (!strcmp(name, ISSUE_MODELS[j])) return 1;
    return 0;
}

/* A median in µs, 3 significant digits below 1000 and whole µs above, or an en dash. */
static void us(FILE *f, const bstat *b)
{
    if (!b->valid) fprintf(f, " – |");
    else if (b->med >= 1000) fprintf(f, " %.0f |", b->med);
    else fprintf(f, " %.3g |", b->med);
}

/* a / b of two medians, or an en dash. */
static double ratio(FILE *f, const bstat *a, const bstat *b)
{
    if (!a->valid || !b->valid) {
        fprintf(f, " – |");
        return NAN;
    }
    fprintf(f, " %.2f |", a->med / b->med);
    return a->med / b->med;
}

static void met(FILE *f, int ok) { fprintf(f, " %s |", ok ? "met" : "**not met**"); }

/* mbk against itself: derivatives over the full cycle, FD over analytic. */
static void write_mbk_table(FILE *f, const result *rs, int n)
{
    fprintf(f, "| model | nq | nu | full cycle µs | dudot/dq+du µs | derivs / full | FD ydot Jacobian µs | FD Jac / derivs | analytic ydot Jacobian µs | FD Jac / analytic Jac | inverse-dynamics derivs µs | rel. diff vs FD: derivs / Jac | allocs/call derivs, RNEA derivs, FD, Jac |\n");
    fprintf(f, "|---|--:|--:|--:|--:|--:|--:|--:|--:|--:|--:|--:|--:|\n");
    for (int i = 0; i < n; ++i) {
        const result *r = &rs[i];
        if (!r->mb[OP_ABA_DERIV].valid) continue;
        fprintf(f, "| %s | %d | %d |", r->name, r->nq, r->nu);
        us(f, &r->mb[OP_FULL]);
        us(f, &r->mb[OP_ABA_DERIV]);
        ratio(f, &r->mb[OP_ABA_DERIV], &r->mb[OP_FULL]);
        us(f, &r->mb[OP_JAC_FD]);
        ratio(f, &r->mb[OP_JAC_FD], &r->mb[OP_ABA_DERIV]);
        us(f, &r->mb[OP_JAC]);
        ratio(f, &r->mb[OP_JAC_FD], &r->mb[OP_JAC]);
        us(f, &r->mb[OP_RNEA_DERIV]);
        if (r->err_fd_aba == r->err_fd_aba) fprintf(f, " %.0e / %.0e |", r->err_fd_aba, r->err_fd_jac);
        else fprintf(f, " – |");
        fprintf(f, " %g, %g, %g, %g |\n", r->allocs[OP_ABA_DERIV], r->allocs[OP_RNEA_DERIV],
                r->mb[OP_JAC_FD].valid ? r->allocs[OP_JAC_FD] : NAN, r->allocs[OP_JAC]);
    }
    fprintf(f, "\n");
}

/* Issue 14's goals on the humanoid, each met or not. */
static void write_mbk_goals(FILE *f, const result *rs, int n)
{
    for (int i = 0; i < n; ++i) {
        const result *r = &rs[i];
        if (strcmp(r->name, "humanoid") || !r->mb[OP_ABA_DERIV].valid || !r->mb[OP_FULL].valid) continue;
        double q = r->mb[OP_ABA_DERIV].med / r->mb[OP_FULL].med;
        fprintf(f, "- Goal (issue 14): dudot/dq and dudot/du together on the humanoid <= %.0fx mbk's own full cycle in\n"
                   "  the same run: %.2f µs / %.3f µs = %.2fx: **%s**.\n", GOAL_DERIV_OVER_FULL,
                r->mb[OP_ABA_DERIV].med, r->mb[OP_FULL].med, q, q <= GOAL_DERIV_OVER_FULL ? "met" : "not met");
        if (!r->mb[OP_JAC_FD].valid) continue;
        double a = r->mb[OP_JAC_FD].med / r->mb[OP_ABA_DERIV].med;
        double b = r->mb[OP_JAC].valid ? r->mb[OP_JAC_FD].med / r->mb[OP_JAC].med : NAN;
        fprintf(f, "- Goal (issue 14): >= %.0fx faster than the finite-difference Jacobian on the humanoid, judged as the\n"
                   "  issue states it, the analytic dudot/dq + dudot/du against the FD ydot Jacobian: %.2fx: **%s**.\n"
                   "  Like for like, the analytic ydot Jacobian (which adds the qdot rows) against the FD one: %.2fx\n"
                   "  (%s the %.0fx mark).\n", GOAL_FD_OVER_ANALYTIC, a, a >= GOAL_FD_OVER_ANALYTIC ? "met" : "not met", b,
                b >= GOAL_FD_OVER_ANALYTIC ? "at or above" : "below", GOAL_FD_OVER_ANALYTIC);
    }
    fprintf(f, "\n");
}

/* Pinocchio beside mbk: computeABADerivatives and computeRNEADerivatives. */
static void write_pin_table(FILE *f, const result *rs, int n)
{
    fprintf(f, "| model | bodies | mbk dudot/dq+du µs | computeABADerivatives µs | Pin/mbk | mbk faster | mbk dr/dq+du µs | computeRNEADerivatives µs | Pin/mbk | mbk faster | rel. diff ABA / RNEA derivs |\n");
    fprintf(f, "|---|--:|--:|--:|--:|:-:|--:|--:|--:|:-:|--:|\n");
    for (int i = 0; i < n; ++i) {
        const result *r = &rs[i];
        if (!r->mb[OP_ABA_DERIV].valid) continue;
        if (!r->has_pin) {
            if (r->pin_skipped) { /* too many u for Pinocchio's Data: mbk's figures alone */
                fprintf(f, "| %s | %d |", r->name, r->bodies);
                us(f, &r->mb[OP_ABA_DERIV]);
                fprintf(f, " not run | – | – |");
                us(f, &r->mb[OP_RNEA_DERIV]);
                fprintf(f, " not run | – | – | – |\n");
            }
            continue;
        }
        fprintf(f, "| %s | %d |", r->name, r->bodies);
        const bench_op ops[2] = {OP_ABA_DERIV, OP_RNEA_DERIV};
        for (int k = 0; k < 2; ++k) {
            us(f, &r->mb[ops[k]]);
            us(f, &r->pn[ops[k]]);
            double q = ratio(f, &r->pn[ops[k]], &r->mb[ops[k]]);
            if (q == q) met(f, q > 1.0);
            else fprintf(f, " – |");
        }
        for (int k = 0; k < 2; ++k) {
            double e = r->err_pin[ops[k]];
            if (e == e) fprintf(f, "%s%.0e%s", k ? " / " : " ", e, r->pin_u_only[ops[k]] ? " (u-columns)" : "");
            else fprintf(f, "%s–", k ? " / " : " ");
        }
        fprintf(f, " |\n");
    }
    fprintf(f, "\n");
    /* the goal over issue 14's models run side by side */
    double worst = INFINITY;
    const char *where = "";
    for (int i = 0; i < n; ++i) {
        const result *r = &rs[i];
        if (issue_model(r->name) && r->pn[OP_ABA_DERIV].valid && r->mb[OP_ABA_DERIV].valid &&
            r->pn[OP_ABA_DERIV].med / r->mb[OP_ABA_DERIV].med < worst)
            worst = r->pn[OP_ABA_DERIV].med / r->mb[OP_ABA_DERIV].med, where = r->name;
    }
    if (worst < INFINITY)
        fprintf(f, "- Goal (issue 14): faster than Pinocchio's computeABADerivatives on every model of the issue run\n"
                   "  side by side (chain10, chain100, tree63, tree255, humanoid): worst Pin/mbk %.2f (%s): **%s**.\n\n",
                worst, where, worst > 1.0 ? "met" : "not met");
}

void bench_write_derivatives(FILE *f, const result *rs, int n)
{
    int any = 0;
    for (int i = 0; i < n; ++i) any |= rs[i].mb[OP_ABA_DERIV].valid;
    if (!any) return;
    fprintf(f, "## Derivatives (issue 14)\n\n");
    fprintf(f, "Each from scratch, as a user calls it, on the plain models up to nu = %d: **dudot/dq + dudot/du** =\n"
               "set q and u, `mbk_system_calc_acceleration_derivatives` (which realizes what it needs itself; dense\n"
               "nu x nq and nu x nu outputs); **inverse-dynamics derivatives** = set q and u,\n"
               "`mbk_system_calc_residual_derivatives` at the known udot of the other tables (dr/dq, dr/du);\n"
               "**FD ydot Jacobian** = set q and u, `mbk_system_calc_ydot_jacobian_fd` (forward differences, one\n"
               "realization per column of y = [q u]); **analytic ydot Jacobian** = set q and u,\n"
               "`mbk_system_calc_ydot_jacobian` (the derivatives above written into J, plus the qdot rows).\n"
               "The full cycle is this run's (set q and u, realize to Acceleration), timed interleaved with the\n"
               "derivatives. Simbody has no derivatives, so they are not cross-checked against it: instead mbk's\n"
               "analytic ones are checked against its own FD Jacobian (about 1e-8 accurate) to %.0e relative\n"
               "(max abs difference over max abs entry) before timing, dudot/dq + dudot/du against the FD\n"
               "Jacobian's u rows and the analytic Jacobian against the whole FD one. Heap allocations are\n"
               "counted per call as for the other operations. Medians µs.\n\n", DERIV_MAX_NU, DERIV_FD_TOL);
    write_mbk_table(f, rs, n);
    write_mbk_goals(f, rs, n);
    fprintf(f, "### Pinocchio %s: computeABADerivatives and computeRNEADerivatives\n\n", pin_version());
    int pin = 0;
    for (int i = 0; i < n; ++i) pin |= rs[i].pn[OP_ABA_DERIV].valid;
    if (!pin) {
        fprintf(f, "Not run: the benchmark was configured without MBK_PINOCCHIO_PREFIX.\n\n");
        return;
    }
    fprintf(f, "Interleaved batch by batch with mbk, like aba, rnea and crba above: `computeABADerivatives(q, v,\n"
               "0)` against mbk's dudot/dq + dudot/du, and `computeRNEADerivatives(q, v, a)` (a: the known udot)\n"
               "against mbk's inverse-dynamics derivatives, each from scratch. Results are mapped to mbk's\n"
               "conventions and cross-checked to 1e-9 relative before timing: on the fixed-base models every\n"
               "entry (Pinocchio's dq and dv columns are mbk's q and u, permuted). On the humanoid only the\n"
               "**u-columns** are compared: Pinocchio differentiates along a tangent displacement of the\n"
               "configuration, mbk along the raw quaternion coordinates, so the q-columns differ in\n"
               "parametrization; the u-columns are mapped through the free base's velocity map J (mbk's (w, v)\n"
               "in Ground to Pinocchio's body-frame (v, w)), with the velocity-product terms that map adds\n"
               "(bench_pinocchio.cpp). Pin/mbk > 1: mbk faster.\n\n");
    write_pin_table(f, rs, n);
}
