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

/* ---- models with loop closures and contacts (issue 7) ---- */

int bm_make_fourbar(bm_model *m)
{
    if (alloc_model(m, 3) < 0) return -1;
    snprintf(m->name, sizeof m->name, "fourbar");
    for (int i = 1; i <= 3; ++i) pin_body(&m->bodies[i - 1], i - 1, AXIS_Y, i == 1 ? 0.0 : 1.0, 0.0, 0.0);
    finish_layout(m);
    /* Ground link 0.8 < the three unit links: a Grashof drag link, no dead points */
    m->n_balls = 1;
    m->balls[0] = (struct bm_ball){.b1 = 0, .b2 = 3, .s1 = {BM_FOURBAR_GROUND, 0, 0}, .s2 = {1, 0, 0}};
    m->pose = BM_POSE_FOURBAR;
    return 0;
}

int bm_make_chain_loop(bm_model *m, int n)
{
    if (bm_make_chain(m, n) < 0) return -1;
    snprintf(m->name, sizeof m->name, "chain%dloop", n);
    m->n_balls = 1;
    m->balls[0] = (struct bm_ball){.b1 = 0, .b2 = n, .s1 = {4, 0, -3}, .s2 = {1, 0, 0}};
    return 0;
}

int bm_make_humanoid_contact(bm_model *m)
{
    if (bm_make_humanoid(m) < 0) return -1;
    snprintf(m->name, sizeof m->name, "humanoid_contact");
    /* the feet: tips of limbs 1 and 2 (bodies 7 and 13), both attached at x = +0.5 */
    m->n_spheres = 2;
    for (int k = 0; k < 2; ++k)
        m->spheres[k] = (struct bm_sphere){.body = 7 + 6 * k, .center = {1, 0, 0}, .radius = BM_FOOT_RADIUS};
    m->ground_z = 0.0;
    /* rubber-like soles (E, c, us, ud, uv, vt); vt 0.1 m/s keeps the friction ramp from being
       needlessly stiff for the fixed-step benchmark */
    const double hc[6] = {2e6, 0.4, 0.9, 0.6, 0.05, 0.1};
    memcpy(m->hc, hc, sizeof hc);
    m->pose = BM_POSE_STANDING;
    return 0;
}

/* Rigid transforms for the forward kinematics below: R row-major, then p. */
typedef struct xform {
    double R[9], p[3];
} xform;

static xform xf_from(const double *a)
{
    xform X;
    memcpy(X.R, a, sizeof X.R);
    memcpy(X.p, a + 9, sizeof X.p);
    return X;
}

static xform xf_mul(const xform *A, const xform *B)
{
    xform C;
    for (int i = 0; i < 3; ++i) {
        C.p[i] = A->p[i];
        for (int j = 0; j < 3; ++j) {
            C.R[3 * i + j] = 0.0;
            for (int k = 0; k < 3; ++k) C.R[3 * i + j] += A->R[3 * i + k] * B->R[3 * k + j];
            C.p[i] += A->R[3 * i + j] * B->p[j];
        }
    }
    return C;
}

static xform xf_inv(const xform *A)
{
    xform C;
    for (int i = 0; i < 3; ++i) {
        C.p[i] = 0.0;
        for (int j = 0; j < 3; ++j) {
            C.R[3 * i + j] = A->R[3 * j + i];
            C.p[i] -= A->R[3 * j + i] * A->p[j];
        }
    }
    return C;
}

/* X_FM of a body's mobilizer: pin = rotation q about z; free = (unit quaternion w x y z, p). */
static xform x_fm(const bm_body *b, const double *q)
{
    xform X;
    memset(&X, 0, sizeof X);
    if (b->type == BM_PIN) {
        double c = cos(q[0]), s = sin(q[0]);
        X.R[0] = c, X.R[1] = -s, X.R[3] = s, X.R[4] = c, X.R[8] = 1.0;
        return X;
    }
    double n = sqrt(q[0] * q[0] + q[1] * q[1] + q[2] * q[2] + q[3] * q[3]);
    double w = q[0] / n, x = q[1] / n, y = q[2] / n, z = q[3] / n;
    const double R[9] = {1 - 2 * (y * y + z * z), 2 * (x * y - w * z),     2 * (x * z + w * y),
                         2 * (x * y + w * z),     1 - 2 * (x * x + z * z), 2 * (y * z - w * x),
                         2 * (x * z - w * y),     2 * (y * z + w * x),     1 - 2 * (x * x + y * y)};
    memcpy(X.R, R, sizeof R);
    memcpy(X.p, q + 4, sizeof X.p);
    return X;
}

/* X_GB = X_GP X_PF X_FM inv(X_BM), up the path to Ground. */
static xform body_pose(const bm_model *m, const double *q, int body)
{
    xform X = {{1, 0, 0, 0, 1, 0, 0, 0, 1}, {0, 0, 0}};
    if (body == 0) return X;
    const bm_body *b = &m->bodies[body - 1];
    xform P = body_pose(m, q, b->parent), F = xf_from(b->X_PF), M = x_fm(b, q + m->q0[body]);
    xform Bm = xf_from(b->X_BM), iBM = xf_inv(&Bm);
    X = xf_mul(&P, &F);
    X = xf_mul(&X, &M);
    return xf_mul(&X, &iBM);
}

void bm_station_location(const bm_model *m, const double *q, int body, const double station[3], double p_G[3])
{
    xform X = body_pose(m, q, body);
    for (int i = 0; i < 3; ++i)
        p_G[i] = X.p[i] + X.R[3 * i] * station[0] + X.R[3 * i + 1] * station[1] + X.R[3 * i + 2] * station[2];
}

void bm_initial_state(const bm_model *m, bm_rng *r, double *q, double *u)
{
    const double pi = 3.14159265358979323846;
    switch (m->pose) {
    case BM_POSE_FOURBAR: /* link 1 up (-90 deg about y), 2 along x, 3 down, then perturbed */
        q[0] = -0.5 * pi + 0.2 * bm_rand(r);
        q[1] = 0.5 * pi + 0.2 * bm_rand(r);
        q[2] = 0.5 * pi + 0.2 * bm_rand(r);
        for (int j = 0; j < m->nu; ++j) u[j] = bm_rand(r);
        return;
    case BM_POSE_STANDING: {
        bm_random_state(m, r, q, u);
        double yaw = pi * bm_rand(r);
        q[0] = cos(0.5 * yaw), q[1] = q[2] = 0.0, q[3] = sin(0.5 * yaw);
        q[6] = 0.0;
        /* both legs (bodies 2-7 and 8-13) down (+90 deg about y), bent alike */
        double leg[6];
        leg[0] = 0.5 * pi + 0.1 * bm_rand(r);
        for (int j = 1; j < 6; ++j) leg[j] = 0.1 * bm_rand(r);
        for (int j = 0; j < 6; ++j) q[m->q0[2 + j]] = q[m->q0[8 + j]] = leg[j];
        /* lift (or lower) the base so that the (equally high) feet are BM_FOOT_DEPTH deep */
        double c[3];
        bm_station_location(m, q, m->spheres[0].body, m->spheres[0].center, c);
        q[6] = m->ground_z + m->spheres[0].radius - BM_FOOT_DEPTH - c[2];
        return;
    }
    default:
        bm_random_state(m, r, q, u);
    }
}
