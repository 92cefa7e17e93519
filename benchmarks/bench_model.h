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
 * in body order (mbk's order; the Simbody side maps to its own).
 *
 * Beyond ANCHORS.md (issue 7): loop closures (Ball constraints: fourbar,
 * chainNloop) and Hunt-Crossley spheres against the ground half-space
 * (humanoid_contact). They are part of the same description, so both sides
 * build the same constraints and contact elements. */
#ifndef MBK_BENCH_MODEL_H
#define MBK_BENCH_MODEL_H

#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

enum { BM_PIN = 0, BM_FREE = 1 };
enum { BM_MAX_BALLS = 2, BM_MAX_SPHERES = 4 };
/* How bm_initial_state poses a model. */
enum { BM_POSE_RANDOM = 0, BM_POSE_FOURBAR, BM_POSE_STANDING };

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
    /* Ball constraints (Simbody's Constraint::Ball): station s1 on b1 coincides with s2 on b2 */
    int n_balls;
    struct bm_ball { int b1, b2; double s1[3], s2[3]; } balls[BM_MAX_BALLS];
    /* Hunt-Crossley spheres (centre in the body frame) against the half-space z <= ground_z,
       one material on both surfaces: hc = (plane-strain modulus E, dissipation c, static,
       dynamic and viscous friction, transition velocity), as mbk_force_add_hunt_crossley_sphere */
    int n_spheres;
    struct bm_sphere { int body; double center[3], radius; } spheres[BM_MAX_SPHERES];
    double ground_z, hc[6];
    int pose;          /* BM_POSE_* */
} bm_model;

/* chainN: N pins, axes y, z, y, ... */
int bm_make_chain(bm_model *m, int n);
/* treeK: full binary tree with `levels` levels (2^levels - 1 bodies); root axis y,
   left child y, right child z; breadth-first numbering. */
int bm_make_tree(bm_model *m, int levels);
/* humanoid: free base + 4 limbs of 6 pins + 3-pin torso/head (28 bodies, nu 33, nq 34). */
int bm_make_humanoid(bm_model *m);
/* fourbar: 3 pins about y in the x-z plane from Ground's origin, link 3's tip tied to Ground at
   (BM_FOURBAR_GROUND, 0, 0) by a Ball: a planar loop written in 3-D, deliberately redundant
   (3 equations, rank 2; Simbody and mbk both return least-norm multipliers). */
#define BM_FOURBAR_GROUND 0.8
int bm_make_fourbar(bm_model *m);
/* chainNloop: chainN with its tip (station (1,0,0) of body N) tied to Ground at
   (4, 0, -3) by a Ball (3 independent equations), assembled from the random state. */
int bm_make_chain_loop(bm_model *m, int n);
/* humanoid_contact: the humanoid with a Hunt-Crossley sphere (radius BM_FOOT_RADIUS) at the
   tip of each leg (limbs 1 and 2), ground z <= 0; posed standing with both feet
   BM_FOOT_DEPTH deep. */
#define BM_FOOT_RADIUS 0.05
#define BM_FOOT_DEPTH 0.005
int bm_make_humanoid_contact(bm_model *m);
void bm_free(bm_model *m);

/* Seeded uniform random numbers in [-1, 1). */
typedef struct bm_rng { uint64_t s; } bm_rng;
double bm_rand(bm_rng *r);
/* Random q (pins uniform in [-1, 1); free base: normalized random quaternion and
   random position), random u, in body order. */
void bm_random_state(const bm_model *m, bm_rng *r, double *q, double *u);
/* The benchmark state of a model by its pose: BM_POSE_RANDOM is bm_random_state; fourbar: the
   open configuration (link 1 up, 2 along x, 3 down) perturbed by up to 0.2 rad, a guess to
   assemble; standing: level base (random yaw), both legs down with the same small random bends,
   arms and torso random, base height chosen so that both feet are BM_FOOT_DEPTH deep. u random. */
void bm_initial_state(const bm_model *m, bm_rng *r, double *q, double *u);
/* Location in Ground of a station (in the body frame) at q, by plain forward kinematics. */
void bm_station_location(const bm_model *m, const double *q, int body, const double station[3],
                         double p_G[3]);

#ifdef __cplusplus
}
#endif
#endif
