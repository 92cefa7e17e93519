/* `mbk info` (what a model is made of, its tree drawn as text) and `mbk bench`
 * (timing the realize cycle and the matter operators on a model). */
#define _POSIX_C_SOURCE 200809L
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "app.h"

enum { TREE_LINES = 200 };

/* ---- info ---------------------------------------------------------------------- */

/* Names counted in the order they first come (16 kinds at most; more are counted as
   "other"): the joints by type, the force elements by kind. */
typedef struct tally {
    char name[16][40]; /* the kinds */
    int count[16];     /* how many of each */
    int n, other;      /* kinds, and items of kinds past the 16th */
} tally;

static void tally_add(tally *t, const char *name)
{
    int k = 0;
    while (k < t->n && strcmp(t->name[k], name)) ++k;
    if (k == t->n && t->n < 16) snprintf(t->name[t->n], sizeof t->name[0], "%s", name), t->count[t->n++] = 0;
    if (k < t->n) t->count[k]++;
    else t->other++;
}

/* " 3 pin, 1 free". */
static void tally_print(const tally *t)
{
    for (int k = 0; k < t->n; ++k) printf("%s%d %s", k ? ", " : " ", t->count[k], t->name[k]);
    if (t->other) printf("%s%d other", t->n ? ", " : " ", t->other);
}

/* The force elements by kind, gravity's vector with its kind. */
static void print_forces(const app_model *m, const mbk_state *s)
{
    const mbk_forces *fo = mbk_multibody_get_forces(m->sys);
    const int nf = mbk_forces_get_num_elements(fo);
    tally kinds = {0};
    for (int e = 0; e < nf; ++e) tally_add(&kinds, mbk_force_get_kind_name(fo, e));
    printf("forces       %d element%s%s", nf, nf == 1 ? "" : "s", nf ? ":" : "");
    tally_print(&kinds);
    double g[4];
    if (m->gravity_force >= 0 && mbk_force_get_parameters(fo, s, m->gravity_force, g, 4) == MBK_OK)
        printf("; gravity (%g, %g, %g) m/s^2", g[0], g[1], g[2]);
    printf("\n");
}

/* The summary: the model, its bodies, mobilizers by type, dofs, constraints, mass,
   forces. */
static void print_model_summary(const app_model *m, const mbk_state *s)
{
    const mbk_matter *mt = mbk_multibody_get_matter(m->sys);
    const int nb = mbk_matter_get_num_bodies(mt);
    tally types = {0};
    for (int b = 1; b < nb; ++b) tally_add(&types, m->joint_type[b]);
    const int njoints = nb - 1;
    printf("model        %s\n", m->spec);
    printf("             %s\n", m->title);
    printf("bodies       %d plus Ground\n", nb - 1);
    printf("mobilizers   %d:", njoints);
    tally_print(&types);
    printf("\n");
    printf("dofs         nq = %d, nu = %d", mbk_state_get_nq(s), mbk_state_get_nu(s));
    int ncons = mbk_matter_get_num_constraints(mt);
    if (ncons) {
        int mp = 0, mv = 0, ma = 0, tot = 0;
        for (int c = 0; c < ncons; ++c)
            if (mbk_constraint_get_num_equations(mt, c, &mp, &mv, &ma) == MBK_OK) tot += mp + mv + ma;
        printf(", %d constraint%s (%d equations)", ncons, ncons == 1 ? "" : "s", tot);
    }
    printf("\n");
    printf("mass         %.6g kg in total\n", mbk_matter_get_total_mass(mt));
    print_forces(m, s);
}

/* Body b's line of the tree at depth d: the rails of its ancestors (on_last[k]: the
   ancestor at depth k was a last child), its branch, its joint, q and mass. */
static void print_tree_line(const app_model *m, const mbk_state *s, int b, int d, const char *on_last, bool last)
{
    const mbk_matter *mt = mbk_multibody_get_matter(m->sys);
    if (d <= 64) {
        for (int k = 1; k < d; ++k) fputs(on_last[k] ? "    " : "|   ", stdout);
    } else {
        printf("(depth %d) ", d);
    }
    mbk_mass_props mp;
    mbk_matter_get_body_mass_props(mt, b, &mp);
    int nq = mbk_matter_get_body_num_q(mt, s, b), q0 = mbk_matter_get_body_q_start(mt, s, b);
    char qs[48] = "no q";
    if (nq == 1) snprintf(qs, sizeof qs, "q%d", q0);
    else if (nq > 1) snprintf(qs, sizeof qs, "q%d..q%d", q0, q0 + nq - 1);
    printf("%s%s [%s%s%s] %s, %g kg\n", last ? "`-- " : "|-- ", m->body_name[b], m->joint_name[b],
           m->joint_name[b][0] ? ": " : "", m->joint_type[b], qs, mp.mass);
}

/* The tree drawn as text, depth first (at most TREE_LINES lines unless all). */
static int print_tree(const app_model *m, const mbk_state *s, bool all)
{
    const mbk_matter *mt = mbk_multibody_get_matter(m->sys);
    const int nb = mbk_matter_get_num_bodies(mt);
    int *first = malloc(sizeof(int) * (size_t)nb), *next = malloc(sizeof(int) * (size_t)nb);
    int *stack = malloc(sizeof(int) * (size_t)nb), *depth = malloc(sizeof(int) * (size_t)nb);
    char *is_last = calloc((size_t)nb + 1, 1), *on_last = calloc((size_t)nb + 2, 1);
    if (!first || !next || !stack || !depth || !is_last || !on_last) {
        fprintf(stderr, "mbk: out of memory\n");
        free(first), free(next), free(stack), free(depth), free(is_last), free(on_last);
        return APP_FAILED;
    }
    printf("\ntree (body [joint: type] q indices, mass):\n");
    /* children lists in body order */
    for (int b = 0; b < nb; ++b) first[b] = next[b] = -1;
    for (int b = nb - 1; b >= 1; --b) {
        int p = mbk_matter_get_parent(mt, b);
        next[b] = first[p];
        first[p] = b;
    }
    /* iterative depth-first walk: stack[] holds bodies, depth[b] their depth, and
       is_last[b] whether b is its parent's last child; on_last[d] whether the
       ancestor at depth d was a last child (no more siblings below it) */
    int sp = 0, lines = 0;
    stack[sp++] = 0;
    depth[0] = 0;
    while (sp > 0) {
        int b = stack[--sp], d = depth[b];
        if (lines == TREE_LINES && !all) {
            printf("... and more: %d bodies in all (mbk info --all shows every one)\n", nb);
            break;
        }
        on_last[d] = (char)is_last[b];
        if (b == 0) printf("%s\n", m->body_name[0]);
        else print_tree_line(m, s, b, d, on_last, is_last[b]);
        lines++;
        /* push the children last first, so the first child is printed first */
        int kids = 0;
        for (int ch = first[b]; ch >= 0; ch = next[ch]) kids++;
        int k = 0;
        for (int ch = first[b]; ch >= 0; ch = next[ch], ++k) {
            stack[sp + kids - 1 - k] = ch;
            depth[ch] = d + 1;
            is_last[ch] = next[ch] < 0;
        }
        sp += kids;
    }
    free(first), free(next), free(stack), free(depth), free(is_last), free(on_last);
    return APP_OK;
}

int app_info(const app_model *m, bool all)
{
    mbk_state *s = app_model_initial_state(m);
    if (!s) return APP_FAILED;
    print_model_summary(m, s);
    int rc = print_tree(m, s, all);
    mbk_state_destroy(s);
    return rc;
}

/* ---- bench --------------------------------------------------------------------- */

typedef struct bench_ctx {
    const mbk_system *sys;
    const mbk_matter *m;
    mbk_state *s;
    int nq, nu, nb;
    double *v, *w, *M;
    mbk_spatial_vec *F;
    double *y, *ydot;
    long k;
} bench_ctx;

typedef int (*bench_fn)(bench_ctx *c);

static int b_full(bench_ctx *c)
{
    mbk_state_upd_q(c->s)[0] += (c->k++ & 1) ? 1e-9 : -1e-9;
    return mbk_system_realize(c->sys, c->s, MBK_STAGE_ACCELERATION);
}
static int b_position(bench_ctx *c)
{
    mbk_state_upd_q(c->s)[0] += (c->k++ & 1) ? 1e-9 : -1e-9;
    return mbk_system_realize(c->sys, c->s, MBK_STAGE_POSITION);
}
static int b_u_only(bench_ctx *c)
{
    mbk_state_upd_u(c->s)[0] += (c->k++ & 1) ? 1e-9 : -1e-9;
    return mbk_system_realize(c->sys, c->s, MBK_STAGE_ACCELERATION);
}
static int b_ydot(bench_ctx *c)
{
    c->y[0] += (c->k++ & 1) ? 1e-9 : -1e-9;
    return mbk_system_calc_ydot(c->sys, c->s, 0.0, c->y, c->ydot);
}
static int b_mass_matrix(bench_ctx *c) { return mbk_matter_calc_mass_matrix(c->m, c->s, c->M); }
static int b_mv(bench_ctx *c) { return mbk_matter_multiply_by_M(c->m, c->s, c->v, c->w); }
static int b_minv(bench_ctx *c) { return mbk_matter_multiply_by_M_inverse(c->m, c->s, c->v, c->w); }
static int b_id(bench_ctx *c) { return mbk_matter_calc_residual_force(c->m, c->s, NULL, NULL, c->v, c->w); }
static int b_ju(bench_ctx *c) { return mbk_matter_multiply_by_system_jacobian(c->m, c->s, c->v, c->F); }
static int b_jtf(bench_ctx *c) { return mbk_matter_multiply_by_system_jacobian_transpose(c->m, c->s, c->F, c->w); }

int app_bench(const app_model *m, double seconds)
{
    bench_ctx c = {0};
    c.sys = m->sys;
    c.m = mbk_multibody_get_matter(m->sys);
    c.s = app_model_initial_state(m);
    if (!c.s || mbk_system_realize(c.sys, c.s, MBK_STAGE_ACCELERATION) < 0) {
        if (c.s) app_fail("realizing the initial State");
        mbk_state_destroy(c.s);
        return APP_FAILED;
    }
    c.nq = mbk_state_get_nq(c.s), c.nu = mbk_state_get_nu(c.s), c.nb = mbk_matter_get_num_bodies(c.m);
    int ny = mbk_state_get_ny(c.s);
    bool big = (double)c.nu * c.nu > 25e6;
    c.v = calloc((size_t)c.nu + 1, sizeof *c.v), c.w = calloc((size_t)c.nu + 1, sizeof *c.w);
    c.F = calloc((size_t)c.nb, sizeof *c.F);
    c.y = calloc((size_t)ny + 1, sizeof *c.y), c.ydot = calloc((size_t)ny + 1, sizeof *c.ydot);
    c.M = big ? NULL : calloc((size_t)c.nu * c.nu + 1, sizeof *c.M);
    if (!c.v || !c.w || !c.F || !c.y || !c.ydot || (!big && !c.M)) {
        fprintf(stderr, "mbk: out of memory\n");
        free(c.v), free(c.w), free(c.F), free(c.y), free(c.ydot), free(c.M);
        mbk_state_destroy(c.s);
        return APP_FAILED;
    }
    for (int i = 0; i < c.nu; ++i) c.v[i] = 0.1 * (i % 7) - 0.3;
    for (int b = 0; b < c.nb; ++b) c.F[b] = mbk_spatial_vec_make(mbk_vec3_make(0.1, 0, 0), mbk_vec3_make(0, 0, -1));
    memcpy(c.y, mbk_state_get_y(c.s), sizeof(double) * (size_t)ny);
    struct { const char *name; bench_fn fn; bool position_only; } tests[] = {
        {"realize Position..Acceleration after a q change", b_full, false},
        {"realize Position after a q change", b_position, true},
        {"realize Velocity..Acceleration after a u change", b_u_only, false},
        {"mbk_system_calc_ydot (one ODE evaluation)", b_ydot, false},
        {"mass matrix M (CRBA, nu x nu)", b_mass_matrix, true},
        {"M v (O(n))", b_mv, true},
        {"M^-1 v (articulated body, O(n))", b_minv, true},
        {"inverse dynamics M udot + C (O(n))", b_id, false},
        {"J u: body velocities (O(n))", b_ju, true},
        {"J^T F: generalized forces (O(n))", b_jtf, true},
    };
    printf("mbk bench %s: %s\n", m->spec, m->title);
    printf("  %d bodies, nq = %d, nu = %d, %d constraints; about %.2g s per line\n\n", c.nb - 1, c.nq, c.nu,
           mbk_matter_get_num_constraints(c.m), seconds);
    printf("  %-50s %12s %14s\n", "operation", "us/call", "calls/s");
    int status = APP_OK;
    for (size_t i = 0; i < sizeof tests / sizeof *tests; ++i) {
        if (tests[i].fn == b_mass_matrix && big) {
            printf("  %-50s %12s %14s\n", tests[i].name, "skipped", "(nu too big)");
            continue;
        }
        if (mbk_system_realize(c.sys, c.s, MBK_STAGE_ACCELERATION) < 0) {
            status = app_fail("realizing");
            break;
        }
        long n = 1, total = 0;
        double elapsed = 0;
        int rc = 0;
        while (elapsed < seconds && rc >= 0) {
            double t0 = app_now();
            for (long k = 0; k < n && rc >= 0; ++k) rc = tests[i].fn(&c);
            elapsed += app_now() - t0;
            total += n;
            if (n < (1L << 40)) n *= 2;
        }
        if (rc < 0) {
            status = app_fail(tests[i].name);
            break;
        }
        printf("  %-50s %12.3f %14.0f\n", tests[i].name, 1e6 * elapsed / (double)total, (double)total / elapsed);
    }
    free(c.v), free(c.w), free(c.F), free(c.y), free(c.ydot), free(c.M);
    mbk_state_destroy(c.s);
    return status;
}
