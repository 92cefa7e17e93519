/* bench_report.c - the Markdown report: method, machine, a table per operation, the
 * constraint and contact models, MuJoCo, whole runs, State copy, targets, agreement and
 * allocations. */
#define _POSIX_C_SOURCE 200809L
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/utsname.h>
#include <time.h>

#include "bench_driver.h"

#ifndef MBK_BENCH_CFLAGS
#define MBK_BENCH_CFLAGS "?"
#endif

/* ------------------------------------------------------------------ */
/* Reporting                                                            */
/* ------------------------------------------------------------------ */

static char *cpu_name(char *buf, size_t n)
{
    snprintf(buf, n, "unknown CPU");
    FILE *f = fopen("/proc/cpuinfo", "r");
    if (!f) return buf;
    char line[512];
    while (fgets(line, sizeof line, f))
        if (!strncmp(line, "model name", 10)) {
            char *c = strchr(line, ':');
            if (c) {
                c += 2;
                c[strcspn(c, "\n")] = 0;
                snprintf(buf, n, "%s", c);
            }
            break;
        }
    fclose(f);
    return buf;
}

/* The clock of the first CPU in /proc/cpuinfo, GHz (2.6 if unknown). */
static double cpu_ghz(void)
{
    double mhz = 2600.0;
    FILE *f = fopen("/proc/cpuinfo", "r");
    if (!f) return mhz / 1e3;
    char line[512];
    while (fgets(line, sizeof line, f))
        if (!strncmp(line, "cpu MHz", 7)) {
            const char *c = strchr(line, ':');
            if (c && atof(c + 1) > 100) mhz = atof(c + 1);
            break;
        }
    fclose(f);
    return mhz / 1e3;
}

static int num_cpus(void)
{
    FILE *f = fopen("/proc/cpuinfo", "r");
    if (!f) return 0;
    char line[512];
    int n = 0;
    while (fgets(line, sizeof line, f))
        if (!strncmp(line, "processor", 9)) ++n;
    fclose(f);
    return n;
}

static void fmt_us(char *buf, size_t n, double us)
{
    if (us >= 1000) snprintf(buf, n, "%.0f", us);
    else if (us >= 100) snprintf(buf, n, "%.1f", us);
    else if (us >= 10) snprintf(buf, n, "%.2f", us);
    else snprintf(buf, n, "%.3f", us);
}

/* What changed in the kernel for issue 7 and what each change gave. The figures are not from
   this run: they were measured once, when the changes were made, with a small mbk-only driver
   timing the same models and states, builds before and after each change alternated, minimum
   of several runs. */
static void write_what_made_the_difference(FILE *f)
{
    fprintf(f, "## What made the difference\n\n"
               "Measured when the changes were made (2026-11-22), not in this run: an mbk-only driver on the\n"
               "same models and states, the builds before and after a change alternated five times, minimum\n"
               "time per call. Profiles (perf) put the time of chains up to 1000 bodies in the arithmetic of\n"
               "the sweeps, much of it on the chain of dependent operations that carries each body's result to\n"
               "the next; the gains there come from doing fewer operations and from shortening that chain.\n"
               "Chains of thousands of bodies outgrow the caches, so there memory per body counts too.\n\n"
               "| change | where | effect |\n|---|---|---|\n");
    fprintf(f,
               "| Articulated inertias stored symmetric (21 numbers, not 36), with shift, rank-one downdate and "
               "product kernels written for that form (subsystems/matter/mt_inertia.h) | ABI, ABA | chain100 full cycle 16.8 -> 14.5 µs |\n"
               "| Pin kinematics inlined in the sweeps (no calls through the mobilizer ops); a \"spin\" (a Pin "
               "whose M frame sits at the body origin, the usual joint) has H = (axis, 0), so the sweeps skip "
               "its zero half | Position, Velocity, ABI, ABA | chain100 full 14.9 -> 13.7 µs, u-only 6.2 -> 5.7 µs |\n"
               "| The sines and cosines of all Pin angles in one loop that vectorizes, with mbk's own sin/cos "
               "(within 2 ulp of libm, libm beyond 1e5 rad; tests/test_trig.c) | Position | chain100 full 12.7 -> 12.1 µs, chain1000 130 -> 119 µs |\n"
               "| ABA: G = P H D^-1 stored already shifted to the parent's origin, so the product with the "
               "parent's acceleration does not wait for the shift; values passed to the next body kept in "
               "registers along unbranched runs | ABA | chain100 full 12.2 -> 10.7 µs, u-only 5.3 -> 4.2 µs |\n"
               "| Small D^-1 (multi-dof joints): one reciprocal per pivot instead of 2n divisions | ABI | humanoid full 3.97 -> 3.71 µs |\n"
               );
    fprintf(f, "| Inertias on principal axes (the usual case) rotated to Ground at half the cost; a spin's pose "
               "composes only the rotation of X_BM | Position | chain100 Position only 3.15 -> 2.11 µs, full 10.6 -> 9.85 µs |\n"
               "| Inverse dynamics: the spin path and the register carry of the ABA | RNEA | chain100 residual 1.90 -> 1.13 µs, RNEA with kinematics 6.2 -> 5.5 µs |\n"
               "| Less memory per body for long chains: the sweeps read a packed 32-byte record per body instead of the "
               "whole body description; the joint-frame data only non-spin joints read is stored apart and not written for "
               "spins (a body's Position results shrink from 288 to 192 bytes) | all sweeps | chain10000 full 1164 -> 1130 µs, then 1087 -> 1028 µs |\n"
               "| The ABA zeroes only the sums that arrive through memory (at branch points), not one per body | ABA | chain10000 full 1111 -> 1061 µs, u-only 419 -> 391 µs |\n"
               "| Mass matrix: each entry H_j^T F as one dot product of vectors taken to Ground's origin (no "
               "shift per ancestor), ancestors walked in unbranched runs of contiguous u, every entry written "
               "once | CRBA | chain100 29.4 -> 11.5 µs, humanoid 2.74 -> 1.57 µs |\n"
               "| Mass matrix: composite inertias kept as rigid bodies (mass, first moment, inertia: 10 numbers) "
               "and shifted by the parallel-axis rule | CRBA | chain100 11.8 -> 10.0 µs, tree255 25.8 -> 23.9 µs, humanoid 1.74 -> 1.43 µs |\n"
               "| Issue 19 (commit fdafe82): the articulated-body inertias computed on first need, at Acceleration "
               "or M^-1 v, not at Dynamics | inverse dynamics | realize Dynamics + residual no longer pays the ABI: "
               "Pinocchio rnea / mbk 1.2-1.5 in ANCHORS.md (Pinocchio 3.7, before) and 2.2-2.6 in the runs of "
               "2026-11-25 (Pinocchio 4.1, after) |\n"
               "| Issue 19 (measured 2026-11-25 as above, minimum of 31 alternations): mass matrix on chain-like models (most bodies continue a run): lower triangle filled row by row, "
               "H about Ground's origin stored as six arrays so each run of ancestors is one vectorized loop, upper "
               "triangle mirrored by 4 x 4 blocks transposed in registers | CRBA | chain1000 860-1360 -> 406 µs, "
               "chain100 13.8 -> 5.5 µs, chain10 0.36 -> 0.33 µs (bitwise the same M) |\n"
               "| Issue 19: mass matrix on trees: zeroed in one pass, then only the nonzero entries written to both "
               "triangles (no memset per row gap), ancestors walked through the packed 32-byte body records | CRBA | "
               "tree255 23.5 -> 18.0 -> 14.8 µs |\n"
               "| Issue 19 (2026-11-28, pinned A/B, minimum of batches): native builds let the compiler fuse "
               "a*b+c (-ffp-contract=fast; -std=c11 turns it off). Tried before the sweeps ran on vectors, it "
               "gained nothing; on the vector sweeps it shortens each body's chain | all | inverse dynamics "
               "-6 to -9 %% (chain10 0.345 -> 0.325 µs, humanoid 0.926 -> 0.839 µs), full cycle -1 to -6 %%, "
               "derivatives -0.4 to -3 %% |\n\n"
               );
    fprintf(f, "Overall, the code before these changes (commit aa29e8f) against after, same driver, alternated:\n"
               "full cycle chain10 1.82 -> 1.18 µs, chain100 17.9 -> 11.3 µs, chain1000 185 -> 109 µs, tree255\n"
               "41.7 -> 24.7 µs, humanoid 5.57 -> 3.71 µs (1.5x-1.7x); u-only 1.4x-1.55x; mass matrix chain100\n"
               "2.7x, humanoid 2.05x, tree255 1.24x; inverse dynamics 1.4x-1.6x.\n\n"
               );
    fprintf(f, "Tried and measured no better, so left out: composing joint frames\n"
               "that permute axes by copying columns (slower than the 3x3 product: indexed loads); carrying\n"
               "whole transforms or articulated inertias in registers (the struct copies cost more than the\n"
               "store-to-load forwarding they avoid); fetching all cache pointers of the State in one call\n"
               "(fewer instructions, no faster); not storing the frame data Pins never read; forming what a\n"
               "body passes its parent as shift(P) minus a rank-one term, so the shift need not wait for D^-1;\n"
               "writing the rigid inertias during the Position sweep. The mass matrix of tree255 is bound by writing the\n"
               "dense 255 x 255 result (520 KB, mostly zeros between branches), where Pinocchio's crba fills\n"
               "only the upper triangle of its preallocated data.M.\n\n");
}

/* One table per operation: median and min of both libraries, ns per body, ratios. */
static void write_op_tables(FILE *f, const result *rs, int n)
{
    for (int op = 0; op < NUM_OPS; ++op) {
        fprintf(f, "## %s\n\n", OPS[op].title);
        fprintf(f, "| model | bodies | mbk µs median | mbk µs min | mbk ns/body | Simbody µs median | Simbody µs min | Simbody ns/body | Simbody/mbk median | Simbody/mbk min |\n");
        fprintf(f, "|---|--:|--:|--:|--:|--:|--:|--:|--:|--:|\n");
        for (int i = 0; i < n; ++i) {
            const result *r = &rs[i];
            const bstat *a = &r->mb[op], *b = &r->sb[op];
            if (!a->valid) continue;
            char m1[32], m2[32], s1[32], s2[32];
            fmt_us(m1, sizeof m1, a->med);
            fmt_us(m2, sizeof m2, a->min);
            fprintf(f, "| %s | %d | %s | %s | %.0f |", r->name, r->bodies, m1, m2, a->med * 1e3 / r->bodies);
            if (b->valid) {
                fmt_us(s1, sizeof s1, b->med);
                fmt_us(s2, sizeof s2, b->min);
                fprintf(f, " %s | %s | %.0f | %.2f | %.2f |\n", s1, s2, b->med * 1e3 / r->bodies, b->med / a->med,
                        b->min / a->min);
            } else {
                fprintf(f, " – | – | – | – | – |\n");
            }
        }
        fprintf(f, "\n");
    }
}

/* The constraint and contact models: how their states were made and checked. */
static void write_special_models(FILE *f, const result *rs, int n)
{
    fprintf(f, "## Models with constraints and contacts\n\n");
    fprintf(f, "- **fourbar**: three pins about y (ANCHORS boxes, x-z plane) from Ground's origin; link 3's tip\n"
               "  (1, 0, 0) tied to Ground at (%g, 0, 0) by a Ball. A planar loop written in 3-D, **deliberately\n"
               "  redundant**: 3 equations of rank 2 (the out-of-plane row is identically zero). Both libraries\n"
               "  return the least-norm multipliers (out-of-plane multiplier 0), which is what the cross-check\n"
               "  compares. Ground link 0.8 < links 1: a Grashof drag link without dead points.\n", BM_FOURBAR_GROUND);
    fprintf(f, "- **chain10loop**: chain10 with its tip (1, 0, 0) of body 10 tied to Ground at (4, 0, -3) by a\n"
               "  Ball: 3 independent equations, 7 degrees of freedom left.\n");
    fprintf(f, "- Both are **assembled** from a seeded guess (fourbar: link 1 up, 2 along x, 3 down, each joint\n"
               "  perturbed by up to 0.2 rad; chain10loop: the random chain10 state) by mbk_system_assemble to\n"
               "  %g, and u (random) is **projected** onto the velocity constraints by mbk_system_project. Both\n"
               "  libraries load that state; Simbody's own constraint errors there are checked to be <= %g.\n",
            ASSEMBLY_TOL, CONSISTENT_TOL);
    fprintf(f, "- **humanoid_contact**: the humanoid with a Hunt-Crossley sphere (radius %g m) at the tip of each\n"
               "  leg (limbs at (+0.5, +-0.05, 0), bodies 7 and 13) against the ground z <= 0. Standing pose: level\n"
               "  base with a random yaw, both legs down (+90 deg about y) with the same random bends of up to\n"
               "  0.1 rad, arms and torso random, base height chosen so that both feet are %g mm deep; u random.\n"
               "  One material on both surfaces: E 2e6 Pa, dissipation 0.4 s/m, friction static 0.9, dynamic 0.6,\n"
               "  viscous 0.05 s/m, transition velocity 0.1 m/s (mbk_force_add_hunt_crossley_sphere; Simbody:\n"
               "  HuntCrossleyForce on a GeneralContactSubsystem, one contact set per foot holding a\n"
               "  ContactGeometry::HalfSpace on Ground and a ContactGeometry::Sphere, with the parameter mapping of\n"
               "  tests/oracle/simbody_forces_oracle.cpp).\n", BM_FOOT_RADIUS, BM_FOOT_DEPTH * 1e3);
    fprintf(f, "- MuJoCo is **not run** on these models: issue 7 runs it with contacts off, and its side models no\n"
               "  loop closures.\n\n");
    fprintf(f, "| model | bodies | constraint equations | rank | mbk max abs qerr / uerr | Simbody max abs qerr / uerr | contact depths mm | udot rel. diff | multipliers rel. diff | mbk constrained FD µs | Simbody µs | Simbody/mbk |\n");
    fprintf(f, "|---|--:|--:|--:|--:|--:|--:|--:|--:|--:|--:|--:|\n");
    for (int i = 0; i < n; ++i) {
        const result *r = &rs[i];
        if (r->kind == MK_PLAIN) continue;
        fprintf(f, "| %s | %d |", r->name, r->bodies);
        if (r->kind == MK_CONSTRAINED)
            fprintf(f, " %d | %d | %.1e / %.1e | %.1e / %.1e | – |", r->n_eq, r->rank, r->mb_perr, r->mb_verr, r->sb_perr,
                    r->sb_verr);
        else {
            fprintf(f, " 0 | – | – | – |");
            for (int k = 0; k < r->n_spheres; ++k) fprintf(f, "%s%.2f", k ? ", " : " ", r->depth[k] * 1e3);
            fprintf(f, " |");
        }
        bench_op op = r->kind == MK_CONSTRAINED ? OP_CONSTRAINED : OP_FULL;
        fprintf(f, " %.1e | ", r->err[op]);
        if (op == OP_CONSTRAINED) fprintf(f, "%.1e |", r->err2[op]);
        else fprintf(f, "– |");
        if (op == OP_CONSTRAINED && r->mb[op].valid && r->sb[op].valid)
            fprintf(f, " %.3f | %.3f | %.2f |\n", r->mb[op].med, r->sb[op].med, r->sb[op].med / r->mb[op].med);
        else
            fprintf(f, " – | – | – |\n");
    }
    fprintf(f, "\n");
}

/* Whole runs: accuracy 1e-6 and matched drift. */
static void write_runs(FILE *f)
{
    if (!g_runs[0].valid) return;
    fprintf(f, "## Whole runs: chain10, %g s simulated\n\n", RUN_T);
    fprintf(f, "Same seeded initial state as the tables above; gravity only. Wall time covers initialize and\n"
               "stepping to t = %g (no output). Median (and minimum) of %d interleaved repetitions. Drift is\n"
               "|E(%g) - E(0)| / |E(0)|, E = kinetic + gravitational potential energy. mbk's heap\n"
               "allocations per step are counted with mbk_get_allocation_count() (SUNDIALS' own\n"
               "allocations, if any, are not seen by that counter).\n\n", RUN_T, g_runs[0].reps, RUN_T);
    fprintf(f, "The first four rows run every integrator at accuracy %g. The **matched drift** rows search, for\n"
               "each library's RK-Merson on its own, the accuracy that reaches the issue's drift: starting at %g and\n"
               "halving (at most %d times) until the drift is <= %.2g (deterministic: the first accuracy of\n"
               "that sequence that meets it; the search runs are not timed). The ratio column compares each mbk\n"
               "run with the Simbody run of the same group.\n\n", RUN_ACC, RUN_ACC, MAX_HALVINGS, DRIFT_TARGET);
    fprintf(f, "| run | accuracy | accuracies tried | wall s median | wall s min | steps | E0 J | relative energy drift | drift <= %.2g | µs per step | Simbody wall / this wall | mbk allocs/step |\n",
            DRIFT_TARGET);
    fprintf(f, "|---|--:|--:|--:|--:|--:|--:|--:|:-:|--:|--:|--:|\n");
    for (int k = 0; k < NUM_RUNS; ++k) {
        const run_stat *g = &g_runs[k];
        char tried[16] = "–";
        if (RUNS[k].matched) snprintf(tried, sizeof tried, "%d", g->searched);
        fprintf(f, "| %s | %.3g | %s | %.4f | %.4f | %ld | %.2f | %.2e | %s | %.2f | %.2f | %s |\n", RUNS[k].title,
                g->accuracy, tried, g->wall_med, g->wall_min, g->r.steps, g->r.e0, g->r.drift, g->reached ? "yes" : "no",
                g->wall_med * 1e6 / (double)(g->r.steps ? g->r.steps : 1), g_runs[RUNS[k].peer].wall_med / g->wall_med,
                RUNS[k].simbody ? "–" : g->r.allocs_per_step == 0 ? "0" : "**>0**");
    }
    fprintf(f, "\n");
}

/* Agreement with Simbody per operation, and mbk's heap allocations per call. */
static void write_checks(FILE *f, const result *rs, int n)
{
    fprintf(f, "## Agreement with Simbody and heap allocations\n\n");
    fprintf(f, "Relative differences (max abs difference / max abs Simbody value) of each operation's result at\n"
               "the benchmark state, computed by the timed code path itself (prepare, one repetition): udot,\n"
               "X_GB of every body (Position), residuals, M, M^-1 v, constrained udot / multipliers, and q / u\n"
               "after one RK-Merson step. Self-check, every model: mbk's residual at its own udot, plus G^T lambda\n"
               "on the loop models, relative to the residual at udot = 0 (rounding level).\n\n");
    fprintf(f, "| model |");
    for (int op = 0; op < NUM_OPS; ++op) fprintf(f, " %s |", OPS[op].name);
    fprintf(f, " self-check |\n|---|");
    for (int op = 0; op <= NUM_OPS; ++op) fprintf(f, "--:|");
    fprintf(f, "\n");
    for (int i = 0; i < n; ++i) {
        const result *r = &rs[i];
        fprintf(f, "| %s |", r->name);
        for (int op = 0; op < NUM_OPS; ++op) {
            if (r->err[op] == r->err[op]) fprintf(f, " %.1e", r->err[op]);
            else fprintf(f, " –");
            if (r->err2[op] == r->err2[op]) fprintf(f, " / %.1e", r->err2[op]);
            fprintf(f, " |");
        }
        fprintf(f, " %.1e |\n", r->self_check);
    }
    fprintf(f, "\nmbk heap allocations per call, counted with mbk_get_allocation_count() over all timed batches\n"
               "(the step includes its periodic re-initialization); every one must be 0.\n\n| model |");
    for (int op = 0; op < NUM_OPS; ++op) fprintf(f, " %s |", OPS[op].name);
    fprintf(f, "\n|---|");
    for (int op = 0; op < NUM_OPS; ++op) fprintf(f, "--:|");
    fprintf(f, "\n");
    for (int i = 0; i < n; ++i) {
        fprintf(f, "| %s |", rs[i].name);
        for (int op = 0; op < NUM_OPS; ++op) {
            if (rs[i].mb[op].valid) fprintf(f, " %g |", rs[i].allocs[op]);
            else fprintf(f, " – |");
        }
        fprintf(f, "\n");
    }
    fprintf(f, "\n");
}

void bench_write_report(FILE *f, const result *rs, int n, double wall)
{
    char cpu[256], date[64];
    struct utsname un;
    uname(&un);
    time_t t = time(NULL);
    strftime(date, sizeof date, "%Y-%m-%d %H:%M UTC", gmtime(&t));
    fprintf(f, "# Benchmarks: mbk side by side with Simbody, MuJoCo and Pinocchio\n\n");
    fprintf(f, "Python: the overhead of one `ydot` call over the C call and SciPy's solve_ivp beside mbk's "
               "integrators: [benchmarks_python.md](benchmarks_python.md). Ensembles: throughput on 1 and 2 "
               "threads and MPI ranks: [benchmarks_ensemble.md](benchmarks_ensemble.md). A stiff whole run, "
               "CVODE BDF with the analytic against finite-difference Jacobians: "
               "[benchmarks_stiff.md](benchmarks_stiff.md).\n\n");
    fprintf(f, "Generated by `make bench` (benchmarks/bench_main.c) on %s; the whole run took %.0f s.\n"
               "Raw numbers: benchmarks/results.csv. **Do not compare absolute times across runs**: the\n"
               "machine is shared and noisy (ANCHORS.md saw 0.55x-1.8x between passes); the ratios are\n"
               "measured side by side in one run and are the meaningful figures. ANCHORS.md, named below,\n"
               "is the project's record of the peers' figures on this machine kind (kept with its design\n"
               "notes, beside this repository rather than in it); the figures taken from it are quoted in\n"
               "the tables.\n\n", date, wall);
    fprintf(f, "Reproduce: `make bench` (the builds take a few minutes the first time, Pinocchio's templates\n"
               "most of them; the run itself several minutes; `make bench BENCH_ARGS=--quick` for a smoke run).\n"
               "The machine is shared with other jobs (2 cores): absolute figures move from run to run, so the\n"
               "tables compare libraries timed in the same batches.\n\n");
    fprintf(f, "## Setup\n\n");
    fprintf(f, "- Machine: %s, %d logical CPUs, %s %s. Single-threaded.\n", cpu_name(cpu, sizeof cpu), num_cpus(),
            un.sysname, un.release);
    fprintf(f, "- Compiler: gcc %s. mbk (static library and benchmark driver) built with `%s`.\n", __VERSION__,
            MBK_BENCH_CFLAGS);
    fprintf(f, "- Simbody %s is **Debian's libsimbody build (apt), which is compiled without -DNDEBUG**;\n"
               "  bench_simbody.cpp is compiled without NDEBUG too (required for the SimTK class layouts).\n"
               "  **Every Simbody/mbk ratio below is against that build.** ANCHORS.md measured the apt build\n"
               "  1.9x-2.8x slower than a Simbody release build, so the ratio against a release build would be\n"
               "  about 2-3 times smaller (estimated in the targets table).\n", sb_version());
    fprintf(f, "- Models exactly as in ANCHORS.md, built from one description for both libraries: 1 kg boxes\n"
               "  1 x 0.1 x 0.1 m, central inertia diag(0.02/12, 1.01/12, 1.01/12), COM (0.5, 0, 0), joint at\n"
               "  the body origin, children at (1, 0, 0), pin axes alternating y, z, y, ... (pin about F's z with\n"
               "  X_PF = X_BM = R_x(-90 deg) for axis y); chainN, treeK (breadth-first numbering, root and left\n"
               "  children y, right children z), humanoid (free base + 4 x 6 pins at (+-0.5, +-0.05, 0) + 3 pins\n"
               "  at (0, 0, 0.05): 28 bodies, nu 33, nq 34). Gravity 9.81 along -z: Force::UniformGravity in\n"
               "  Simbody; in mbk the built-in gravity element (mbk_force_add_gravity).\n"
               "  q, u in [-1, 1) from a fixed seed; free base: random position, normalized\n"
               "  random quaternion. chain3000 and chain10000 are run for mbk only. Plus the constraint and\n"
               "  contact models of issue 7 (fourbar, chain10loop, humanoid_contact), described in their section.\n");
    fprintf(f, "- Check before timing: every timed operation is run once on each side through the timed code\n"
               "  path, and its result (udot, body poses, residual, M for nu <= %d, M^-1 v, constrained udot and\n"
               "  multipliers, q and u after one step) must agree with Simbody's to 1e-9 relative (max abs\n"
               "  difference / max abs value; two-part results part by part), or the run stops with an error.\n"
               "  mbk-only models are checked for self-consistency (residual at mbk's own udot, + G^T lambda with\n"
               "  constraints, must vanish to 1e-9). Simbody has no derivatives: mbk's (aba_deriv, rnea_deriv,\n"
               "  ydot_jac, on the plain models up to nu = %d) are checked against mbk's own finite-difference\n"
               "  ydot Jacobian to %.0e, and against Pinocchio's to 1e-9 (section Derivatives).\n",
            MASS_MATRIX_MAX_NU, DERIV_MAX_NU, DERIV_FD_TOL);
    fprintf(f, "- Method: each operation is warmed up, then the repetitions per batch are sized so that a batch\n"
               "  takes about %.0f ms; %d batches per library (fewer, at least 3, when one call is very slow), the\n"
               "  libraries interleaved batch by batch, rotating which goes first, a model's operations taking\n"
               "  turns batch by batch (each prepared again before its batch, with one untimed call), and the\n"
               "  batches of every model spread over three rounds through all models, so that a noisy spell of\n"
               "  the shared machine lands on a few batches of many models. Reported: median and\n"
               "  minimum over batches of the time per call, ns per body (median / bodies, Ground excluded), and\n"
               "  the ratio Simbody/mbk of the medians (>1: mbk faster). The mass matrix is timed for nu <= %d.\n",
            g_opt.batch_s * 1e3, g_opt.batches, MASS_MATRIX_MAX_NU);
    fprintf(f, "- Peers beside Simbody: MuJoCo (Debian's 2.2.2 and PyPI's %s, mj_forward), Pinocchio %s (PyPI,\n"
               "  C++ header-only with this build's flags: aba, rnea, crba), Drake %s (PyPI, through pydrake,\n"
               "  timed just before this run with the Python overhead subtracted), and mbk's own default build\n"
               "  (what users get) loaded beside this native Release build. Each has its section below.\n",
            mj4b_version(), pin_version(), bench_drake_version());
    fprintf(f, "- Operations: **full** = set q and u, realize to Acceleration (Simbody: State::setQ/setU +\n"
               "  realize(Acceleration)); **u-only** = set u, realize to Acceleration; **Position** = set q,\n"
               "  realize to Position; **RNEA with kinematics** = set q and u, realize to Velocity, then the\n"
               "  residual forces M udot + C - f (applied body forces at the benchmark state, a random known\n"
               "  udot; Simbody: calcResidualForceIgnoringConstraints); **RNEA, kinematics cached** = that\n"
               "  residual alone at a state realized to Acceleration; **M** = explicit mass matrix; **M^-1 v** at\n"
               "  a realized state; **constrained** = the full cycle on a model with constraints (udot and\n"
               "  multipliers); **step** = one RK-Merson step; **id** = inverse dynamics from scratch (set q and u,\n"
               "  realize to Dynamics, residual with the System's applied forces); **mass_kin** = the mass matrix\n"
               "  from scratch (set q, realize to Position, M); **aba_deriv** = set q and u,\n"
               "  mbk_system_calc_acceleration_derivatives (dudot/dq and dudot/du); **rnea_deriv** = set q and u,\n"
               "  mbk_system_calc_residual_derivatives at the known udot; **ydot_jac_fd** / **ydot_jac** = set q and\n"
               "  u, the ydot Jacobian by finite differences / analytic (mbk only; section Derivatives).\n");
    fprintf(f, "- Step: the same method on both sides, RK-Merson (mbk_integrator_create_rkmerson,\n"
               "  SimTK::RungeKuttaMersonIntegrator) with a **fixed step of %g s** (mbk_integrator_set_fixed_step,\n"
               "  Integrator::setFixedStepSize; the error estimate is not used to reject steps), constraint\n"
               "  tolerance %g, projection after every step. One call is step_to(t + h) / stepTo(t + h);\n"
               "  every %d steps the integrator is initialized again from the benchmark state (amortized\n"
               "  in the time per step), so both follow the same short trajectory. A fixed step costs the same\n"
               "  whatever h; h is small because the random states are violent (chain1000 blows up after\n"
               "  0.126 s at h = 1 ms, in both libraries).\n\n",
            BENCH_STEP_H, BENCH_STEP_CONS_TOL, BENCH_STEP_RESET);

    /* targets */
    fprintf(f, "## Targets (issue): full cycle\n\n");
    fprintf(f, "Target 1: mbk's full cycle at least 5x faster than Simbody's setQ/setU + realize(Acceleration)\n"
               "(here against the Debian apt build). Target 2: within 1.3x of Pinocchio's bare ABA figures in\n"
               "ANCHORS.md. Those were measured on another machine (Cooper Lake), so target 2 is shown twice:\n"
               "against the raw ANCHORS figure, and against that figure scaled by this run's Simbody apt time over\n"
               "ANCHORS' Simbody apt time for the model (a machine-speed normalization). The last column estimates\n"
               "the ratio against a Simbody **release** build, dividing by ANCHORS' apt/release factor.\n\n");
    fprintf(f, "| model | mbk full µs | Simbody apt µs | Simbody/mbk | >= 5x | Pinocchio aba µs (ANCHORS) | mbk/Pinocchio raw | within 1.3x raw | Pinocchio scaled µs | mbk/Pinocchio scaled | within 1.3x scaled | est. Simbody release/mbk |\n");
    fprintf(f, "|---|--:|--:|--:|:-:|--:|--:|:-:|--:|--:|:-:|--:|\n");
    for (int i = 0; i < n; ++i) {
        const result *r = &rs[i];
        if (r->mbk_only || r->kind != MK_PLAIN) continue;
        const bstat *a = &r->mb[OP_FULL], *b = &r->sb[OP_FULL];
        double ratio = b->med / a->med;
        char s1[32], s2[32];
        fmt_us(s1, sizeof s1, a->med);
        fmt_us(s2, sizeof s2, b->med);
        fprintf(f, "| %s | %s | %s | %.2f | %s |", r->name, s1, s2, ratio, ratio >= 5.0 ? "met" : "**not met**");
        const anchor *an = bench_find_anchor(r->name);
        if (an) {
            double scale = b->med / an->sb_apt, pin_s = an->pin * scale;
            fprintf(f, " %.3g%s | %.2f | %s | %.3g | %.2f | %s | %.2f |\n", an->pin, an->pin_estimated ? " (310 ns/body)" : "",
                    a->med / an->pin, a->med <= 1.3 * an->pin ? "met" : "**not met**", pin_s, a->med / pin_s,
                    a->med <= 1.3 * pin_s ? "met" : "**not met**", ratio / (an->sb_apt / an->sb_rel));
        } else {
            fprintf(f, " – | – | no anchor | – | – | no anchor | – |\n");
        }
    }
    fprintf(f, "\n");

    bench_write_pinocchio(f, rs, n);
    bench_write_rbdl(f, rs, n);
    bench_write_derivatives(f, rs, n);
    bench_write_drake(f, rs, n);
    bench_write_limits(f, rs, n, cpu_ghz());
    bench_write_default_build(f, rs, n);
    bench_write_previous(f, rs, n);
    write_op_tables(f, rs, n);
    write_special_models(f, rs, n);

    /* MuJoCo */
    fprintf(f, "## MuJoCo mj_forward (full cycle), side by side: Debian's %s and PyPI's %s\n\n", mjb_version(),
            mj4b_version());
    fprintf(f, "Same models written as MJCF in memory (temporary files under /tmp; chains deeper than 40 bodies\n"
               "are split into `<include>` files because MuJoCo 2.2.2 rejects XML nested deeper than 100), contacts\n"
               "disabled, no damping/armature/limits, explicit inertials. Timed: copy qpos and qvel into mjData,\n"
               "mj_forward. udot was checked against mbk (free joint converted: MuJoCo's angular qvel/qacc is in\n"
               "the body frame, mbk's in World) to 1e-9 relative before timing. Interleaved with mbk and Simbody.\n"
               "Not run on fourbar, chain10loop and humanoid_contact (contacts off, no loop closures). Two\n"
               "MuJoCo builds: Debian's libmujoco-dev 2.2.2 and the library inside PyPI's mujoco-core wheel\n"
               "(pinned in benchmarks/requirements-bench.txt, installed by make bench into build-bench/venv),\n"
               "the same C driver code built against each one's headers as a module (bench_mjload.c: the two\n"
               "libraries export the same names, so each is loaded with its module in a group of its own).\n\n");
    fprintf(f, "| model | bodies | mbk µs | Simbody µs | MuJoCo %s µs | MuJoCo %s ns/body | MuJoCo %s (PyPI) µs | Simbody/mbk | MuJoCo %s/mbk | MuJoCo %s/mbk | udot rel. diff vs mbk (%s / %s) |\n",
            mjb_version(), mjb_version(), mj4b_version(), mjb_version(), mj4b_version(), mjb_version(), mj4b_version());
    fprintf(f, "|---|--:|--:|--:|--:|--:|--:|--:|--:|--:|--:|\n");
    for (int i = 0; i < n; ++i) {
        const result *r = &rs[i];
        if (!r->has_mj && !r->mj_excluded && !r->has_mj4 && !r->mj4_excluded) continue;
        char a[32], b[32], c[32] = "not timed", d[32] = "not timed", e1[32] = "–", e2[32] = "–";
        fmt_us(a, sizeof a, r->mb[OP_FULL].med);
        fmt_us(b, sizeof b, r->sb[OP_FULL].med);
        if (r->has_mj) fmt_us(c, sizeof c, r->mj.med);
        if (r->has_mj4) fmt_us(d, sizeof d, r->mj4.med);
        if (r->has_mj || r->mj_excluded) snprintf(e1, sizeof e1, "%.1e", r->err_mj);
        if (r->has_mj4 || r->mj4_excluded) snprintf(e2, sizeof e2, "%.1e", r->err_mj4);
        fprintf(f, "| %s | %d | %s | %s | %s |", r->name, r->bodies, a, b, c);
        if (r->has_mj) fprintf(f, " %.0f |", r->mj.med * 1e3 / r->bodies);
        else fprintf(f, " – |");
        fprintf(f, " %s | %.2f |", d, r->sb[OP_FULL].med / r->mb[OP_FULL].med);
        if (r->has_mj) fprintf(f, " %.2f |", r->mj.med / r->mb[OP_FULL].med);
        else fprintf(f, " – |");
        if (r->has_mj4) fprintf(f, " %.2f |", r->mj4.med / r->mb[OP_FULL].med);
        else fprintf(f, " – |");
        fprintf(f, " %s / %s%s |\n", e1, e2,
                r->mj_excluded || r->mj4_excluded ? " (over 1e-9: MuJoCo's dense factorization, ANCHORS: 1.5e-8 at "
                                                    "chain1000; not timed)" : "");
    }
    fprintf(f, "\n![ns per body against N](benchmarks_ns_per_body.svg)\n\n"
               "[Plot: full-cycle ns per body against N on chains, every library](benchmarks_ns_per_body.svg)\n\n");

    write_runs(f);

    /* state copy */
    fprintf(f, "## State copy and State size\n\n");
    fprintf(f, "mbk_state_copy(dst, src) into a State of the same layout against memcpy of\n"
               "mbk_state_get_size_in_bytes() bytes between two heap buffers; interleaved batches, medians.\n\n");
    fprintf(f, "| model | bodies | State bytes | bytes per body | mbk_state_copy µs | memcpy µs | copy / memcpy |\n");
    fprintf(f, "|---|--:|--:|--:|--:|--:|--:|\n");
    for (int i = 0; i < n; ++i) {
        const result *r = &rs[i];
        if (!r->copy.valid) continue;
        fprintf(f, "| %s | %d | %zu | %.0f | %.3f | %.3f | %.2f |\n", r->name, r->bodies, r->state_bytes,
                (double)r->state_bytes / r->bodies, r->copy.med, r->mcpy.med, r->copy.med / r->mcpy.med);
    }
    fprintf(f, "\n");

    bench_write_targets(f, rs, n);
    write_what_made_the_difference(f);
    write_checks(f, rs, n);
}
