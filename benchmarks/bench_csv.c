/* bench_csv.c - the CSV: one row per model, operation and library with the relative
 * difference from Simbody; whole runs with their accuracy and energy drift; State copies. */
#include <stdio.h>

#include "bench_driver.h"

void bench_write_csv(FILE *f, const result *rs, int n)
{
    fprintf(f, "model,bodies,nu,op,library,reps_per_batch,batches,median_us,min_us,ns_per_body,ratio_simbody_over_mbk_median,allocs_per_call,rel_diff_vs_simbody,accuracy,energy_drift\n");
    for (int i = 0; i < n; ++i) {
        const result *r = &rs[i];
        for (int op = 0; op < NUM_OPS; ++op) {
            const bstat *a = &r->mb[op], *b = &r->sb[op];
            if (!a->valid) continue;
            double e = r->err2[op] == r->err2[op] && r->err2[op] > r->err[op] ? r->err2[op] : r->err[op];
            char diff[32] = "";
            if (e == e) snprintf(diff, sizeof diff, "%.3g", e);
            fprintf(f, "%s,%d,%d,%s,mbk,%ld,%d,%.6g,%.6g,%.6g,,%g,%s,,\n", r->name, r->bodies, r->nu, OPS[op].name, a->reps,
                    a->batches, a->med, a->min, a->med * 1e3 / r->bodies, r->allocs[op], diff);
            if (b->valid)
                fprintf(f, "%s,%d,%d,%s,simbody_apt,%ld,%d,%.6g,%.6g,%.6g,%.6g,,,,\n", r->name, r->bodies, r->nu,
                        OPS[op].name, b->reps, b->batches, b->med, b->min, b->med * 1e3 / r->bodies, b->med / a->med);
            if (r->pn[op].valid)
                fprintf(f, "%s,%d,%d,%s,pinocchio,%ld,%d,%.6g,%.6g,%.6g,,,%.3g,,\n", r->name, r->bodies, r->nu,
                        OPS[op].name, r->pn[op].reps, r->pn[op].batches, r->pn[op].med, r->pn[op].min,
                        r->pn[op].med * 1e3 / r->bodies, r->err_pin[op]);
            if (r->df[op].valid)
                fprintf(f, "%s,%d,%d,%s,mbk_default_build,%ld,%d,%.6g,%.6g,%.6g,,,%.3g,,\n", r->name, r->bodies, r->nu,
                        OPS[op].name, r->df[op].reps, r->df[op].batches, r->df[op].med, r->df[op].min,
                        r->df[op].med * 1e3 / r->bodies, r->err_df[op]);
            double dus, ddiff;
            const char *dop = op == OP_FULL ? "fd" : op == OP_ID ? "id" : op == OP_MASS_KIN ? "mass" : NULL;
            if (dop && bench_drake_get(r->name, dop, &dus, &ddiff))
                fprintf(f, "%s,%d,%d,%s,drake_pydrake_overhead_subtracted,,7,%.6g,,%.6g,,,%.3g,,\n", r->name, r->bodies,
                        r->nu, OPS[op].name, dus, dus * 1e3 / r->bodies, ddiff);
            if (op == OP_FULL && r->has_mj4)
                fprintf(f, "%s,%d,%d,full,mujoco_pypi_%s_mj_forward,%ld,%d,%.6g,%.6g,%.6g,,,%.3g,,\n", r->name, r->bodies,
                        r->nu, mj4b_version(), r->mj4.reps, r->mj4.batches, r->mj4.med, r->mj4.min,
                        r->mj4.med * 1e3 / r->bodies, r->err_mj4);
            if (op == OP_FULL && r->has_mj)
                fprintf(f, "%s,%d,%d,full,mujoco_mj_forward,%ld,%d,%.6g,%.6g,%.6g,,,%.3g,,\n", r->name, r->bodies, r->nu,
                        r->mj.reps, r->mj.batches, r->mj.med, r->mj.min, r->mj.med * 1e3 / r->bodies, r->err_mj);
        }
        if (r->copy.valid) {
            fprintf(f, "%s,%d,%d,state_copy,mbk,%ld,%d,%.6g,%.6g,%.6g,,,,,\n", r->name, r->bodies, r->nu, r->copy.reps,
                    r->copy.batches, r->copy.med, r->copy.min, r->copy.med * 1e3 / r->bodies);
            fprintf(f, "%s,%d,%d,state_copy,memcpy_%zu_bytes,%ld,%d,%.6g,%.6g,%.6g,,,,,\n", r->name, r->bodies, r->nu,
                    r->state_bytes, r->mcpy.reps, r->mcpy.batches, r->mcpy.med, r->mcpy.min, r->mcpy.med * 1e3 / r->bodies);
        }
    }
    /* whole runs: reps_per_batch = steps, batches = repetitions, times = wall per run */
    for (int k = 0; k < NUM_RUNS; ++k) {
        const run_stat *g = &g_runs[k];
        if (!g->valid) continue;
        char allocs[32] = "";
        if (!RUNS[k].simbody) snprintf(allocs, sizeof allocs, "%g", g->r.allocs_per_step);
        fprintf(f, "chain10,10,10,%s,%s,%ld,%d,%.6g,%.6g,,%.6g,%s,,%.6g,%.6g\n", RUNS[k].csv_op, RUNS[k].library,
                g->r.steps, g->reps, g->wall_med * 1e6, g->wall_min * 1e6, g_runs[RUNS[k].peer].wall_med / g->wall_med,
                allocs, g->accuracy, g->r.drift);
    }
}
