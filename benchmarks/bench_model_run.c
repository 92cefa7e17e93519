/* bench_model_run.c - one model through the run: build its sides (mbk, Simbody, MuJoCo),
 * put loop models on their constraints, check the state and every op, start the timing
 * of its ops, and at the end print the summaries, time the State copy and free it all. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "bench_driver.h"

int bench_build_model(bm_model *m, const model_spec *sp)
{
    if (!strcmp(sp->kind, "chain")) return bm_make_chain(m, sp->param);
    if (!strcmp(sp->kind, "tree")) return bm_make_tree(m, sp->param);
    if (!strcmp(sp->kind, "fourbar")) return bm_make_fourbar(m);
    if (!strcmp(sp->kind, "chainloop")) return bm_make_chain_loop(m, sp->param);
    if (!strcmp(sp->kind, "humanoid_contact")) return bm_make_humanoid_contact(m);
    return bm_make_humanoid(m);
}

/* The benchmark inputs of a model: q, u (bm_initial_state), v for M^-1 v and a known udot, from the
   same seed for every model. */
void bench_model_inputs(const bm_model *model, double *q, double *u, double *v, double *kud)
{
    bm_rng rng = {0x6D626B2D62656E63ull}; /* same seed for every model */
    bm_initial_state(model, &rng, q, u);
    for (int i = 0; i < model->nu; ++i) v[i] = bm_rand(&rng);
    for (int i = 0; i < model->nu; ++i) kud[i] = bm_rand(&rng);
}

/* Loop models: put the state on the constraints (mbk's assembly and projection; both sides then
   load that state). */
static void make_consistent(const bm_model *model, mb_side *mb, double *q, double *u)
{
    if (model->n_balls > 0 && mb_make_consistent(mb, q, u, ASSEMBLY_TOL) < 0)
        bench_die("%s: assembly: %s", model->name, mb_last_error());
}

/* Loop models: the state satisfies mbk's and Simbody's own constraint errors. Contact model:
   every sphere touches the ground. */
static void check_special(result *res, const bm_model *model, mb_side *mb, sb_side *sb)
{
    if (model->n_balls > 0) {
        if (mb_constraint_info(mb, &res->n_eq, &res->rank, &res->mb_perr, &res->mb_verr) < 0)
            bench_die("%s: %s", model->name, mb_last_error());
        printf("  constraints: %d equations, rank %d; mbk max |qerr| %.1e, |uerr| %.1e after assembly and projection\n",
               res->n_eq, res->rank, res->mb_perr, res->mb_verr);
        if (!(res->mb_perr <= ASSEMBLY_TOL && res->mb_verr <= ASSEMBLY_TOL))
            bench_die("%s: the state is not on the constraints after assembly (|qerr| %.3e, |uerr| %.3e)", model->name,
                res->mb_perr, res->mb_verr);
        if (sb) {
            if (sb_constraint_errors(sb, &res->sb_perr, &res->sb_verr) < 0) bench_die("%s: %s", model->name, sb_last_error());
            printf("  Simbody's own max |qerr| %.1e, |uerr| %.1e at that state\n", res->sb_perr, res->sb_verr);
            if (!(res->sb_perr <= CONSISTENT_TOL && res->sb_verr <= CONSISTENT_TOL))
                bench_die("%s: the assembled state violates Simbody's constraints (|qerr| %.3e, |uerr| %.3e; tolerance %.0e)",
                    model->name, res->sb_perr, res->sb_verr, CONSISTENT_TOL);
        }
    }
    if (model->n_spheres > 0) {
        if (mb_sphere_depths(mb, res->depth) < 0) bench_die("%s: %s", model->name, mb_last_error());
        printf("  contact depths:");
        for (int k = 0; k < model->n_spheres; ++k) {
            printf(" %.2f mm", res->depth[k] * 1e3);
            if (!(res->depth[k] > 0)) bench_die("%s: contact sphere %d does not touch the ground (depth %g)", model->name, k, res->depth[k]);
        }
        printf("\n");
    }
}

/* Simbody has no derivatives: mbk's analytic ones are checked against mbk's own finite-difference
   ydot Jacobian (about 1e-8 accurate) to DERIV_FD_TOL: dudot/dq and dudot/du against its u rows,
   and the analytic ydot Jacobian against the whole of it. */
static void deriv_self_check(result *res, mb_side *mb)
{
    res->err_fd_aba = res->err_fd_jac = NAN;
    if (!bench_op_applies(res, OP_JAC_FD) || !bench_op_applies(res, OP_ABA_DERIV)) return;
    int nq = res->nq, nu = res->nu, ny = (int)lround(sqrt((double)mb_result_len(mb, OP_JAC_FD)));
    double *fd = bench_xcalloc((size_t)ny * ny, sizeof(double)), *an = bench_xcalloc((size_t)ny * ny, sizeof(double));
    double *dd = bench_xcalloc((size_t)nu * (nq + nu), sizeof(double)), *rows = bench_xcalloc((size_t)nu * (nq + nu), sizeof(double));
    if (mb_eval(mb, OP_JAC_FD, fd) < 0 || mb_eval(mb, OP_JAC, an) < 0 || mb_eval(mb, OP_ABA_DERIV, dd) < 0)
        bench_die("%s: derivatives: %s", res->name, mb_last_error());
    /* the FD Jacobian's u rows (nq .. nq + nu - 1), q columns then u columns, in mb_eval's layout */
    for (int i = 0; i < nu; ++i)
        for (int j = 0; j < nq + nu; ++j)
            *(j < nq ? &rows[(size_t)i * nq + j] : &rows[(size_t)nu * nq + (size_t)i * nu + (j - nq)]) =
                fd[(size_t)(nq + i) * ny + j];
    res->err_fd_aba = bench_rel_diff(dd, rows, (size_t)nu * (nq + nu));
    res->err_fd_jac = bench_rel_diff(an, fd, (size_t)ny * ny);
    printf("  derivatives vs mbk's FD ydot Jacobian (relative): dudot/dq,du %.1e, analytic ydot Jacobian %.1e\n",
           res->err_fd_aba, res->err_fd_jac);
    free(fd), free(an), free(dd), free(rows);
    if (!(res->err_fd_aba <= DERIV_FD_TOL && res->err_fd_jac <= DERIV_FD_TOL))
        bench_die("%s: mbk's analytic derivatives differ from its finite differences by %.3e / %.3e relative "
                  "(tolerance %.0e); not timing a wrong answer", res->name, res->err_fd_aba, res->err_fd_jac, DERIV_FD_TOL);
}

/* Build a model's sides, cross-check every operation, and warm up and size its timings. */
void bench_model_open(const model_spec *sp, result *res, model_run *mr)
{
    memset(mr, 0, sizeof *mr);
    mr->res = res;
    bm_model model;
    if (bench_build_model(&model, sp) < 0) bench_die("out of memory building a model");
    memset(res, 0, sizeof *res);
    snprintf(res->name, sizeof res->name, "%s", model.name);
    res->bodies = model.n;
    res->nq = model.nq;
    res->nu = model.nu;
    res->mbk_only = sp->mbk_only;
    res->kind = model.n_balls ? MK_CONSTRAINED : model.n_spheres ? MK_CONTACT : MK_PLAIN;
    res->chain = res->kind == MK_PLAIN && !strcmp(sp->kind, "chain");
    for (int op = 0; op < NUM_OPS; ++op) res->err[op] = res->err2[op] = res->err_pin[op] = res->err_df[op] = NAN;
    res->err_fd_aba = res->err_fd_jac = NAN;
    printf("%s: %d bodies, nq %d, nu %d%s\n", model.name, model.n, model.nq, model.nu,
           sp->mbk_only ? " (mbk only)" : "");
    size_t nu = (size_t)model.nu;
    double *q = bench_xcalloc((size_t)model.nq, sizeof(double)), *u = bench_xcalloc(nu, sizeof(double));
    double *v = bench_xcalloc(nu, sizeof(double)), *kud = bench_xcalloc(nu, sizeof(double));
    bench_model_inputs(&model, q, u, v, kud);

    mb_side *mb = mb_create(&model);
    if (!mb) bench_die("%s: %s", model.name, mb_last_error());
    make_consistent(&model, mb, q, u);
    res->n_spheres = model.n_spheres;
    if (mb_set_inputs(mb, q, u, v, kud) < 0) bench_die("%s: %s", model.name, mb_last_error());
    if (mb_self_check(mb, &res->self_check) < 0) bench_die("%s: %s", model.name, mb_last_error());
    sb_side *sb = NULL;
    mjb_side *mj = NULL;
    /* MuJoCo compiles a 1000-deep chain in ~7 s: --quick (the ctest cross-check) leaves it out.
       MuJoCo runs with contacts off and no loop closures (issue 7): plain models only. */
    if (!sp->mbk_only && mjb_available() && res->kind != MK_PLAIN)
        printf("  MuJoCo not run: contacts off and no loop closures on the MuJoCo side (issue 7)\n");
    else if (!sp->mbk_only && mjb_available() && g_quick && model.n >= 1000)
        printf("  MuJoCo left out in --quick mode (mj_loadXML of a %d-body chain takes seconds)\n", model.n);
    else if (!sp->mbk_only && mjb_available()) {
        mj = mjb_create(&model);
        if (!mj) bench_die("%s: %s", model.name, mjb_last_error());
        if (mjb_set_inputs(mj, q, u) < 0) bench_die("%s: %s", model.name, mjb_last_error());
        double *a = bench_xcalloc(nu, sizeof(double)), *b = bench_xcalloc(nu, sizeof(double));
        if (mb_eval(mb, OP_FULL, a) < 0) bench_die("%s: %s", model.name, mb_last_error());
        if (mjb_udot(mj, b) < 0) bench_die("%s: %s", model.name, mjb_last_error());
        res->err_mj = bench_rel_diff(b, a, nu);
        res->has_mj = 1;
        printf("  cross-check MuJoCo %s udot vs mbk (relative): %.1e\n", mjb_version(), res->err_mj);
        free(a);
        free(b);
    }
    if (!sp->mbk_only) {
        sb = sb_create(&model);
        if (!sb) bench_die("%s: %s", model.name, sb_last_error());
        if (sb_set_inputs(sb, q, u, v, kud) < 0) bench_die("%s: %s", model.name, sb_last_error());
    }
    check_special(res, &model, mb, sb);
    if (sb) {
        /* cross-check every operation before timing any */
        printf("  cross-check vs Simbody (relative):");
        for (int op = 0; op < NUM_OPS; ++op)
            if (bench_op_applies(res, (bench_op)op) && !OPS[op].no_simbody) {
                bench_cross_check(res, mb, sb, (bench_op)op);
                printf(" %s %.1e", OPS[op].name, res->err[op]);
                if (OPS[op].part[1]) printf("/%.1e", res->err2[op]);
            }
        printf("\n");
    }
    /* MuJoCo from PyPI, the same way (no contacts, no loop closures; left out of --quick on 1000+) */
    mjb_side *mj4 = NULL;
    if (!sp->mbk_only && mj4b_available() && res->kind == MK_PLAIN && !(g_quick && model.n >= 1000)) {
        mj4 = mj4b_create(&model);
        if (!mj4) bench_die("%s: %s", model.name, mj4b_last_error());
        if (mj4b_set_inputs(mj4, q, u) < 0) bench_die("%s: %s", model.name, mj4b_last_error());
        double *a = bench_xcalloc(nu, sizeof(double)), *b = bench_xcalloc(nu, sizeof(double));
        if (mb_eval(mb, OP_FULL, a) < 0) bench_die("%s: %s", model.name, mb_last_error());
        if (mj4b_udot(mj4, b) < 0) bench_die("%s: %s", model.name, mj4b_last_error());
        res->err_mj4 = bench_rel_diff(b, a, nu);
        res->has_mj4 = 1;
        printf("  cross-check MuJoCo %s (PyPI) udot vs mbk (relative): %.1e\n", mj4b_version(), res->err_mj4);
        free(a);
        free(b);
        if (!(res->err_mj4 <= TOL)) {
            if (sb && res->err[OP_FULL] <= 1e-12 && res->err_mj4 <= 1e-6 && model.n >= 1000) {
                printf("  MuJoCo (PyPI) left out of the timing: its udot is off by %.1e\n", res->err_mj4);
                res->has_mj4 = 0;
                res->mj4_excluded = 1;
                mj4b_destroy(mj4);
                mj4 = NULL;
            } else {
                bench_die("%s: MuJoCo (PyPI)'s udot differs from mbk's by %.3e relative (tolerance %.0e)", model.name,
                          res->err_mj4, TOL);
            }
        }
    }
    if (mj && !(res->err_mj <= TOL)) {
        /* MuJoCo factorizes the dense mass matrix; on long chains its udot drifts (ANCHORS.md:
           1.5e-8 at chain1000) while mbk and Simbody agree at ABA level. Only in that case is
           MuJoCo left out of the timing for this model; anything else stops the run. */
        if (sb && res->err[OP_FULL] <= 1e-12 && res->err_mj <= 1e-6 && model.n >= 1000) {
            printf("  MuJoCo left out of the timing: its udot is off by %.1e (mbk vs Simbody %.1e)\n", res->err_mj,
                   res->err[OP_FULL]);
            res->has_mj = 0;
            res->mj_excluded = 1;
            mjb_destroy(mj);
            mj = NULL;
        } else {
            bench_die("%s: MuJoCo's udot differs from mbk's by %.3e relative (tolerance %.0e); not timing a wrong answer",
                model.name, res->err_mj, TOL);
        }
    }
    pin_side *pn = NULL;
    void *df = NULL;
    if (!sp->mbk_only && res->kind == MK_PLAIN && pin_available() && model.nu > pin_max_nu()) {
        res->pin_skipped = 1;
        printf("  Pinocchio not run: nu %d > %d (its Data holds four nu^3 tensors: %.0f GB)\n", model.nu, pin_max_nu(),
               32.0 * model.nu * (double)model.nu * model.nu / 1e9);
    } else if (!sp->mbk_only && res->kind == MK_PLAIN && pin_available()) {
        pn = pin_create(&model);
        if (!pn) bench_die("%s: %s", model.name, pin_last_error());
        if (pin_set_inputs(pn, q, u, kud) < 0) bench_die("%s: %s", model.name, pin_last_error());
        res->has_pin = 1;
        printf("  cross-check Pinocchio %s vs mbk (relative):", pin_version());
        for (int op = 0; op < NUM_OPS; ++op)
            if (pin_runs_op((bench_op)op, res->nu) && bench_op_applies(res, (bench_op)op)) {
                int len = mb_result_len(mb, (bench_op)op), from = pin_compare_from(pn, (bench_op)op);
                double *a = bench_xcalloc((size_t)len, sizeof(double)), *b = bench_xcalloc((size_t)len, sizeof(double));
                if (mb_eval(mb, (bench_op)op, a) < 0) bench_die("%s: %s", model.name, mb_last_error());
                if (pin_eval(pn, (bench_op)op, b) < 0) bench_die("%s: %s", model.name, pin_last_error());
                res->err_pin[op] = bench_rel_diff(b + from, a + from, (size_t)(len - from));
                res->pin_u_only[op] = from > 0;
                printf(" %s %.1e%s", OPS[op].name, res->err_pin[op], from > 0 ? " (u-columns)" : "");
                free(a);
                free(b);
                if (!(res->err_pin[op] <= TOL))
                    bench_die("%s: %s: Pinocchio differs from mbk by %.3e relative (tolerance %.0e); not timing a wrong answer",
                        model.name, OPS[op].name, res->err_pin[op], TOL);
            }
        printf("\n");
    }
    if (bench_default_loaded()) {
        df = bench_default_create(&model, q, u, v, kud);
        for (int op = 0; op < NUM_OPS; ++op)
            if (bench_op_applies(res, (bench_op)op)) {
                int len = mb_result_len(mb, (bench_op)op);
                double *a = bench_xcalloc((size_t)len, sizeof(double)), *b = bench_xcalloc((size_t)len, sizeof(double));
                if (mb_eval(mb, (bench_op)op, a) < 0) bench_die("%s: %s", model.name, mb_last_error());
                if (bench_default_eval(df, (bench_op)op, b) < 0) bench_die("%s: default build: %s", model.name, bench_default_last_error());
                res->err_df[op] = bench_rel_diff(b, a, (size_t)len);
                free(a);
                free(b);
                if (!(res->err_df[op] <= 1e-12))
                    bench_die("%s: %s: the default build differs from this build by %.3e relative", model.name,
                        OPS[op].name, res->err_df[op]);
            }
    }
    deriv_self_check(res, mb);
    printf("  self-check |residual(udot)| relative: %.1e\n", res->self_check);
    if (!(res->self_check <= TOL)) bench_die("%s: mbk's residual at its own udot is %.3e relative", model.name, res->self_check);
    mr->model = model;
    mr->mb = mb;
    mr->sb = sb;
    mr->mj = mj;
    mr->mj4 = mj4;
    mr->pn = pn;
    mr->df = df;
    mr->q = q;
    mr->u = u;
    mr->v = v;
    mr->kud = kud;
    bench_ops_start(mr);
}

/* Summaries, the State copy, and the sides freed. */
void bench_model_close(model_run *mr)
{
    bench_ops_finish(mr);
    bench_state_copy(mr->res, mr->mb);
    mjb_destroy(mr->mj);
    mj4b_destroy(mr->mj4);
    pin_destroy(mr->pn);
    bench_default_destroy(mr->df);
    sb_destroy(mr->sb);
    mb_destroy(mr->mb);
    free(mr->q);
    free(mr->u);
    free(mr->v);
    free(mr->kud);
    bm_free(&mr->model);
}
