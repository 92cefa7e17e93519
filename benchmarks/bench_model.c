/* bench_model.c - builds the ANCHORS.md benchmark models as plain data. */
#include "bench_model.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

enum { AXIS_Y = 0, AXIS_Z = 1 };

static void set_transform(double *X, int axis, double px, double py, double pz)
{
    memset(X, 0, 12 * sizeof(double));
    if (axis == AXIS_Y) {
        /* R_x(-90 deg): columns x -> (1,0,0), y -> (0,0,-1), z -> (0,1,0) */
        X[0] = 1.0;
        X[5] = 1.0;  /* R[1][2] */
        X[7] = -1.0; /* R[2][1] */
    } else {
        X[0] = X[4] = X[8] = 1.0;
    }
    X[9] = px;
    X[10] = py;
    X[11] = pz;
}

static void box_mass(bm_body *b, double comx)
{
    b->mass = 1.0;
    b->com[0] = comx;
    b->com[1] = b->com[2] = 0.0;
    memset(b->inertia, 0, sizeof b->inertia);
    b->inertia[0] = 0.02 / 12.0;
    b->inertia[4] = 1.01 / 12.0;
    b->inertia[8] = 1.01 / 12.0;
}

/* A pin body on `parent`, attached at p on the parent, turning about body y or z. */
static void pin_body(bm_body *b, int parent, int axis, double px, double py, double pz)
{
    b->parent = parent;
    b->type = BM_PIN;
    set_transform(b->X_PF, axis, px, py, pz);
    set_transform(b->X_BM, axis, 0.0, 0.0, 0.0);
    box_mass(b, 0.5);
}

static int alloc_model(bm_model *m, int n)
{
    memset(m, 0, sizeof *m);
    m->n = n;
    m->bodies = calloc((size_t)n, sizeof *m->bodies);
    m->q0 = calloc((size_t)n + 1, sizeof(int));
    m->u0 = calloc((size_t)n + 1, sizeof(int));
    m->gravity[2] = -9.81;
    if (!m->bodies || !m->q0 || !m->u0) {
        bm_free(m);
        return -1;
    }
    return 0;
}

static void finish_layout(bm_model *m)
{
    int nq = 0, nu = 0;
    for (int i = 1; i <= m->n; ++i) {
        m->q0[i] = nq;
        m->u0[i] = nu;
        nq += m->bodies[i - 1].type == BM_FREE ? 7 : 1;
        nu += m->bodies[i - 1].type == BM_FREE ? 6 : 1;
    }
    m->nq = nq;
    m->nu = nu;
}

int bm_make_chain(bm_model *m, int n)
{
    if (alloc_model(m, n) < 0) return -1;
    snprintf(m->name, sizeof m->name, "chain%d", n);
    for (int i = 1; i <= n; ++i)
        pin_body(&m->bodies[i - 1], i - 1, (i % 2) ? AXIS_Y : AXIS_Z, i == 1 ? 0.0 : 1.0, 0.0, 0.0);
    finish_layout(m);
    return 0;
}

int bm_make_tree(bm_model *m, int levels)
{
    int n = (1 << levels) - 1;
    if (alloc_model(m, n) < 0) return -1;
    snprintf(m->name, sizeof m->name, "tree%d", n);
    for (int k = 1; k <= n; ++k) {
        int axis = (k == 1 || k % 2 == 0) ? AXIS_Y : AXIS_Z; /* root y; left (even) y; right z */
        pin_body(&m->bodies[k - 1], k / 2, axis, k == 1 ? 0.0 : 1.0, 0.0, 0.0);
    }
    finish_layout(m);
    return 0;
}

int bm_make_humanoid(bm_model *m)
{
    if (alloc_model(m, 28) < 0) return -1;
    snprintf(m->name, sizeof m->name, "humanoid");
    bm_body *base = &m->bodies[0];
    base->parent = 0;
    base->type = BM_FREE;
    set_transform(base->X_PF, AXIS_Z, 0.0, 0.0, 0.0);
    set_transform(base->X_BM, AXIS_Z, 0.0, 0.0, 0.0);
    box_mass(base, 0.0); /* box centred on its COM */
    static const double attach[4][2] = {{0.5, 0.05}, {0.5, -0.05}, {-0.5, 0.05}, {-0.5, -0.05}};
    int k = 2; /* next body index */
    for (int limb = 0; limb < 4; ++limb)
        for (int j = 0; j < 6; ++j, ++k) {
            if (j == 0) pin_body(&m->bodies[k - 1], 1, AXIS_Y, attach[limb][0], attach[limb][1], 0.0);
            else pin_body(&m->bodies[k - 1], k - 1, j % 2 ? AXIS_Z : AXIS_Y, 1.0, 0.0, 0.0);
        }
    for (int j = 0; j < 3; ++j, ++k) {
        if (j == 0) pin_body(&m->bodies[k - 1], 1, AXIS_Y, 0.0, 0.0, 0.05);
        else pin_body(&m->bodies[k - 1], k - 1, j % 2 ? AXIS_Z : AXIS_Y, 1.0, 0.0, 0.0);
    }
    finish_layout(m);
    return 0;
}

void bm_free(bm_model *m)
{
    free(m->bodies);
    free(m->q0);
    free(m->u0);
    memset(m, 0, sizeof *m);
}

double bm_rand(bm_rng *r)
{
    /* splitmix64, top 53 bits -> [0, 1) -> [-1, 1) */
    uint64_t z = (r->s += 0x9E3779B97F4A7C15ull);
    z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ull;
    z = (z ^ (z >> 27)) * 0x94D049BB133111EBull;
    z ^= z >> 31;
    return 2.0 * ((double)(z >> 11) * (1.0 / 9007199254740992.0)) - 1.0;
}

void bm_random_state(const bm_model *m, bm_rng *r, double *q, double *u)
{
    for (int i = 1; i <= m->n; ++i) {
        double *qb = q + m->q0[i];
        if (m->bodies[i - 1].type == BM_FREE) {
            double n2 = 0.0;
            do {
                n2 = 0.0;
                for (int k = 0; k < 4; ++k) {
                    qb[k] = bm_rand(r);
                    n2 += qb[k] * qb[k];
                }
            } while (n2 < 1e-4);
            double inv = 1.0 / sqrt(n2);
            for (int k = 0; k < 4; ++k) qb[k] *= inv;
            for (int k = 4; k < 7; ++k) qb[k] = bm_rand(r);
        } else {
            qb[0] = bm_rand(r);
        }
    }
    for (int j = 0; j < m->nu; ++j) u[j] = bm_rand(r);
}
