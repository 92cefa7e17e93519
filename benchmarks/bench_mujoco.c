/* bench_mujoco.c - the MuJoCo side of the benchmark (full cycle only: mj_forward).
 *
 * The model is written as MJCF from the same bm_model description into a
 * private temporary directory (mkdtemp under /tmp) and loaded with
 * mj_loadXML. MuJoCo 2.2.2 parses XML with tinyxml2, which rejects elements
 * nested deeper than 100, so bodies deeper than BODIES_PER_FILE are moved into
 * <include> files (each parsed on its own, then merged). Contacts are off,
 * there is no damping, armature or limit; gravity 9.81 along -z.
 *
 * Frames: at q = 0 every ANCHORS body frame is its parent's attachment frame
 * translated by p (X_PF and X_BM share the rotation), so a pin body is
 * <body pos="p"> with a hinge at the origin about body y or z, and the
 * inertial frame at the COM. The free base is a <freejoint/>.
 *
 * Order and conventions: MuJoCo numbers bodies depth-first, mbk in model
 * order, so q/u are mapped through the bodies' joint addresses. MuJoCo's free
 * joint has qpos = (p, quaternion w x y z) and qvel = (v of the body origin in
 * World, w in the body frame); mbk's free mobilizer has q = (quaternion, p)
 * and u = (w, v) both in the parent (World). So qvel_ang = R^T w, and since
 * d/dt(R^T w) = R^T wdot, udot_ang(mbk) = R qacc_ang. */
#define _POSIX_C_SOURCE 200809L
#include "bench_sides.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static char g_err[512];
const char *mjb_last_error(void) { return g_err; }

#ifndef MBK_HAVE_MUJOCO

int mjb_available(void) { return 0; }
const char *mjb_version(void) { return "not built"; }
mjb_side *mjb_create(const bm_model *model)
{
    (void)model;
    snprintf(g_err, sizeof g_err, "MuJoCo: not found at configure time");
    return NULL;
}
void mjb_destroy(mjb_side *s) { (void)s; }
int mjb_set_inputs(mjb_side *s, const double *q, const double *u) { (void)s, (void)q, (void)u; return -1; }
int mjb_udot(mjb_side *s, double *udot) { (void)s, (void)udot; return -1; }
int mjb_run_full(mjb_side *s, long reps) { (void)s, (void)reps; return -1; }

#else

#include <unistd.h>

#include <mujoco/mujoco.h>

enum { BODIES_PER_FILE = 40 };

struct mjb_side {
    mjModel *m;
    mjData *d;
    int n, nq, nu;
    const bm_model *model;
    int *body_id;      /* mbk body (1..n) -> MuJoCo body id */
    double *qpos, *qvel; /* MuJoCo order */
    double R[9];       /* free base rotation at the inputs (row-major), if any */
    int free_body;     /* mbk body with the free joint (0: none) */
};

int mjb_available(void) { return 1; }

const char *mjb_version(void)
{
#if mjVERSION_HEADER >= 300 /* 3.x numbers versions as 3xy, 4.x as 4000000; both have the string */
    return mj_versionString();
#else
    static char buf[32];
    int v = mj_version();
    snprintf(buf, sizeof buf, "%d.%d.%d", v / 100, (v / 10) % 10, v % 10);
    return buf;
#endif
}

/* Children lists of the model (first child, next sibling). */
typedef struct kids { int *first, *next; } kids;

static void write_body(FILE *f, const bm_model *mo, const kids *k, int b, int depth, const char *dir,
                       int *nfiles, int *bad);

static void write_children(FILE *f, const bm_model *mo, const kids *k, int b, int depth, const char *dir,
                           int *nfiles, int *bad)
{
    for (int c = k->first[b]; c; c = k->next[c]) {
        if (depth + 1 >= BODIES_PER_FILE) {
            /* start a new file for this subtree */
            char path[700];
            int id = (*nfiles)++;
            snprintf(path, sizeof path, "%s/part%d.xml", dir, id);
            FILE *g = fopen(path, "w");
            if (!g) {
                *bad = 1;
                return;
            }
            fprintf(g, "<mujoco>\n");
            write_body(g, mo, k, c, 0, dir, nfiles, bad);
            fprintf(g, "</mujoco>\n");
            fclose(g);
            fprintf(f, "<include file=\"part%d.xml\"/>\n", id);
        } else {
            write_body(f, mo, k, c, depth + 1, dir, nfiles, bad);
        }
    }
}

static void write_body(FILE *f, const bm_model *mo, const kids *k, int b, int depth, const char *dir,
                       int *nfiles, int *bad)
{
    const bm_body *bd = &mo->bodies[b - 1];
    const double *X = bd->X_PF;
    fprintf(f, "<body name=\"b%d\" pos=\"%.17g %.17g %.17g\">\n", b, X[9], X[10], X[11]);
    if (bd->type == BM_FREE) {
        fprintf(f, "<freejoint name=\"j%d\"/>\n", b);
    } else {
        /* the pin turns about F's z; in the body frame (= parent frame rotation at q = 0)
           that is the third column of R_PF */
        fprintf(f, "<joint name=\"j%d\" type=\"hinge\" pos=\"0 0 0\" axis=\"%.17g %.17g %.17g\"/>\n", b, X[2], X[5], X[8]);
    }
    fprintf(f, "<inertial pos=\"%.17g %.17g %.17g\" mass=\"%.17g\" fullinertia=\"%.17g %.17g %.17g %.17g %.17g %.17g\"/>\n",
            bd->com[0], bd->com[1], bd->com[2], bd->mass, bd->inertia[0], bd->inertia[4], bd->inertia[8],
            bd->inertia[1], bd->inertia[2], bd->inertia[5]);
    write_children(f, mo, k, b, depth, dir, nfiles, bad);
    fprintf(f, "</body>\n");
}

void mjb_destroy(mjb_side *s)
{
    if (!s) return;
    if (s->d) mj_deleteData(s->d);
    if (s->m) mj_deleteModel(s->m);
    free(s->body_id);
    free(s->qpos);
    free(s->qvel);
    free(s);
}

static int same_rotation(const double *a, const double *b)
{
    for (int i = 0; i < 9; ++i)
        if (a[i] != b[i]) return 0;
    return 1;
}

mjb_side *mjb_create(const bm_model *mo)
{
    mjb_side *s = calloc(1, sizeof *s);
    kids k = {calloc((size_t)mo->n + 1, sizeof(int)), calloc((size_t)mo->n + 1, sizeof(int))};
    char dir[] = "/tmp/mbk_bench_mjcf_XXXXXX";
    int have_dir = 0, nfiles = 0, bad = 0;
    if (!s || !k.first || !k.next) {
        snprintf(g_err, sizeof g_err, "MuJoCo side: out of memory");
        goto fail;
    }
    s->n = mo->n;
    s->model = mo;
    /* issue 7 runs MuJoCo with contacts off and without loop closures: such a model would
       silently be a different one */
    if (mo->n_balls > 0 || mo->n_spheres > 0) {
        snprintf(g_err, sizeof g_err, "MuJoCo side: %s has constraints or contacts, which this side does not model", mo->name);
        goto fail;
    }
    for (int b = mo->n; b >= 1; --b) { /* keep children in model order */
        const bm_body *bd = &mo->bodies[b - 1];
        if (!same_rotation(bd->X_PF, bd->X_BM)) {
            snprintf(g_err, sizeof g_err, "MuJoCo side: body %d: X_PF and X_BM rotations differ (not an ANCHORS body)", b);
            goto fail;
        }
        if (bd->type == BM_FREE) {
            if (bd->parent != 0) {
                snprintf(g_err, sizeof g_err, "MuJoCo side: a free body must be on Ground");
                goto fail;
            }
            s->free_body = b;
        }
        k.next[b] = k.first[bd->parent];
        k.first[bd->parent] = b;
    }
    if (!mkdtemp(dir)) {
        snprintf(g_err, sizeof g_err, "MuJoCo side: mkdtemp failed");
        goto fail;
    }
    have_dir = 1;
    char path[700];
    snprintf(path, sizeof path, "%s/model.xml", dir);
    FILE *f = fopen(path, "w");
    if (!f) {
        snprintf(g_err, sizeof g_err, "MuJoCo side: cannot write %.400s", path);
        goto fail;
    }
    fprintf(f, "<mujoco model=\"%s\">\n<compiler angle=\"radian\" boundmass=\"0\" boundinertia=\"0\"/>\n"
               "<option gravity=\"%.17g %.17g %.17g\" timestep=\"0.001\">\n<flag contact=\"disable\"/>\n</option>\n"
               "<worldbody>\n",
            mo->name, mo->gravity[0], mo->gravity[1], mo->gravity[2]);
    write_children(f, mo, &k, 0, 0, dir, &nfiles, &bad);
    fprintf(f, "</worldbody>\n</mujoco>\n");
    fclose(f);
    if (bad) {
        snprintf(g_err, sizeof g_err, "MuJoCo side: cannot write include files in %s", dir);
        goto fail;
    }
    char err[1000] = "";
    s->m = mj_loadXML(path, NULL, err, (int)sizeof err);
    if (!s->m) {
        snprintf(g_err, sizeof g_err, "MuJoCo: mj_loadXML: %s", err);
        goto fail;
    }
    s->d = mj_makeData(s->m);
    if (!s->d) {
        snprintf(g_err, sizeof g_err, "MuJoCo: mj_makeData failed");
        goto fail;
    }
    s->nq = s->m->nq;
    s->nu = s->m->nv;
    if (s->nq != mo->nq || s->nu != mo->nu) {
        snprintf(g_err, sizeof g_err, "MuJoCo: %s has nq %d nv %d, expected %d %d", mo->name, s->nq, s->nu, mo->nq, mo->nu);
        goto fail;
    }
    s->body_id = calloc((size_t)mo->n + 1, sizeof(int));
    s->qpos = calloc((size_t)s->nq, sizeof(double));
    s->qvel = calloc((size_t)s->nu, sizeof(double));
    if (!s->body_id || !s->qpos || !s->qvel) {
        snprintf(g_err, sizeof g_err, "MuJoCo side: out of memory");
        goto fail;
    }
    for (int b = 1; b <= mo->n; ++b) {
        char name[32];
        snprintf(name, sizeof name, "b%d", b);
        int id = mj_name2id(s->m, mjOBJ_BODY, name);
        if (id < 0 || s->m->body_jntnum[id] != 1) {
            snprintf(g_err, sizeof g_err, "MuJoCo: body %s missing or without one joint", name);
            goto fail;
        }
        s->body_id[b] = id;
    }
    /* the include files and the model file are no longer needed */
    for (int i = 0; i < nfiles; ++i) {
        snprintf(path, sizeof path, "%s/part%d.xml", dir, i);
        remove(path);
    }
    snprintf(path, sizeof path, "%s/model.xml", dir);
    remove(path);
    rmdir(dir);
    free(k.first);
    free(k.next);
    return s;
fail:
    if (have_dir) {
        for (int i = 0; i < nfiles; ++i) {
            snprintf(path, sizeof path, "%s/part%d.xml", dir, i);
            remove(path);
        }
        snprintf(path, sizeof path, "%s/model.xml", dir);
        remove(path);
        rmdir(dir);
    }
    free(k.first);
    free(k.next);
    mjb_destroy(s);
    return NULL;
}

static void quat_to_R(const double *qt, double *R)
{
    double w = qt[0], x = qt[1], y = qt[2], z = qt[3];
    R[0] = 1 - 2 * (y * y + z * z), R[1] = 2 * (x * y - w * z), R[2] = 2 * (x * z + w * y);
    R[3] = 2 * (x * y + w * z), R[4] = 1 - 2 * (x * x + z * z), R[5] = 2 * (y * z - w * x);
    R[6] = 2 * (x * z - w * y), R[7] = 2 * (y * z + w * x), R[8] = 1 - 2 * (x * x + y * y);
}

int mjb_set_inputs(mjb_side *s, const double *q, const double *u)
{
    const mjModel *m = s->m;
    for (int b = 1; b <= s->n; ++b) {
        int j = m->body_jntadr[s->body_id[b]];
        int qa = m->jnt_qposadr[j], va = m->jnt_dofadr[j];
        const double *qb = q + s->model->q0[b], *ub = u + s->model->u0[b];
        if (b == s->free_body) {
            /* mbk q = (w x y z, p); u = (w_G, v_G) */
            double n2 = qb[0] * qb[0] + qb[1] * qb[1] + qb[2] * qb[2] + qb[3] * qb[3];
            double qt[4];
            for (int i = 0; i < 4; ++i) qt[i] = qb[i] / sqrt(n2);
            quat_to_R(qt, s->R);
            for (int i = 0; i < 3; ++i) s->qpos[qa + i] = qb[4 + i];
            for (int i = 0; i < 4; ++i) s->qpos[qa + 3 + i] = qt[i];
            for (int i = 0; i < 3; ++i) s->qvel[va + i] = ub[3 + i];
            for (int i = 0; i < 3; ++i) /* R^T w */
                s->qvel[va + 3 + i] = s->R[i] * ub[0] + s->R[3 + i] * ub[1] + s->R[6 + i] * ub[2];
        } else {
            s->qpos[qa] = qb[0];
            s->qvel[va] = ub[0];
        }
    }
    memcpy(s->d->qpos, s->qpos, (size_t)s->nq * sizeof(double));
    memcpy(s->d->qvel, s->qvel, (size_t)s->nu * sizeof(double));
    mj_forward(s->m, s->d);
    return 0;
}

int mjb_udot(mjb_side *s, double *udot)
{
    const mjModel *m = s->m;
    memcpy(s->d->qpos, s->qpos, (size_t)s->nq * sizeof(double));
    memcpy(s->d->qvel, s->qvel, (size_t)s->nu * sizeof(double));
    mj_forward(s->m, s->d);
    const double *qacc = s->d->qacc;
    for (int b = 1; b <= s->n; ++b) {
        int va = m->jnt_dofadr[m->body_jntadr[s->body_id[b]]];
        double *ub = udot + s->model->u0[b];
        if (b == s->free_body) {
            for (int i = 0; i < 3; ++i) /* R * wdot_body */
                ub[i] = s->R[3 * i] * qacc[va + 3] + s->R[3 * i + 1] * qacc[va + 4] + s->R[3 * i + 2] * qacc[va + 5];
            for (int i = 0; i < 3; ++i) ub[3 + i] = qacc[va + i];
        } else {
            ub[0] = qacc[va];
        }
    }
    return 0;
}

int mjb_run_full(mjb_side *s, long reps)
{
    mjData *d = s->d;
    const mjModel *m = s->m;
    const size_t nqb = (size_t)s->nq * sizeof(double), nvb = (size_t)s->nu * sizeof(double);
    for (long r = 0; r < reps; ++r) {
        memcpy(d->qpos, s->qpos, nqb);
        memcpy(d->qvel, s->qvel, nvb);
        mj_forward(m, d);
    }
    return 0;
}

#endif
