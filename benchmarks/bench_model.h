/* bench_model.h - the benchmark models of /work/shared/ANCHORS.md as plain data.
 *
 * Both sides of the benchmark (mbk in C, Simbody in C++) build their systems
 * from the same description, so the physics is identical by construction:
 *
 *   - every body is a 1 kg box 1 x 0.1 x 0.1 m, long axis along body x,
 *     central inertia diag(0.02/12, 1.01/12, 1.01/12);
 *   - pin bodies: joint at the body origin, COM at (0.5, 0, 0), children
 *     attached at (1, 0, 0); the pin turns about F's z (= M's z), so an axis
 *     along body y uses X_PF = (R, p_attach) and X_BM = (R, 0) with R the
 *     rotation by -90 degrees about x (it takes z to y); at q = 0 the body
 *     frame then equals the parent's attachment frame;
 *   - free base (humanoid): X_PF = X_BM = identity, COM at the body origin;
 *   - gravity 9.81 m/s^2 along -z.
 *
 * Transforms are 12 doubles: R row-major (R_AB) then p. Bodies are numbered
 * 1..n (Ground = 0), a parent before its children; q and u are concatenated
 * in body order (mbk's order; the Simbody side maps to its own). */
#ifndef MBK_BENCH_MODEL_H
#define MBK_BENCH_MODEL_H

#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

enum { BM_PIN = 0, BM_FREE = 1 };

typedef struct bm_body {
    int parent;        /* 0 = Ground */
    int type;          /* BM_PIN or BM_FREE */
    double X_PF[12];   /* F on the parent */
    double X_BM[12];   /* M on this body */
    double mass;       /* kg */
    double com[3];     /* centre of mass from the body origin, in B */
    double inertia[9]; /* about the centre of mass, in B, row-major */
} bm_body;

typedef struct bm_model {
    char name[32];
    int n;             /* bodies, Ground excluded */
    bm_body *bodies;   /* bodies[0] is body 1 */
    int nq, nu;
    int *q0, *u0;      /* per body (index 0..n, Ground at 0): first q and first u */
    double gravity[3];
} bm_model;

/* chainN: N pins, axes y, z, y, ... */
int bm_make_chain(bm_model *m, int n);
/* treeK: full binary tree with `levels` levels (2^levels - 1 bodies); root axis y,
   left child y, right child z; breadth-first numbering. */
int bm_make_tree(bm_model *m, int levels);
/* humanoid: free base + 4 limbs of 6 pins + 3-pin torso/head (28 bodies, nu 33, nq 34). */
int bm_make_humanoid(bm_model *m);
void bm_free(bm_model *m);

/* Seeded uniform random numbers in [-1, 1). */
typedef struct bm_rng { uint64_t s; } bm_rng;
double bm_rand(bm_rng *r);
/* Random q (pins uniform in [-1, 1); free base: normalized random quaternion and
   random position), random u, in body order. */
void bm_random_state(const bm_model *m, bm_rng *r, double *q, double *u);

#ifdef __cplusplus
}
#endif
#endif
