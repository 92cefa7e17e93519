/* Invariants of the matter subsystem that need no oracle, on random trees
 * (fixed seeds, 40 models of 1 to 50 bodies, quaternion and Euler-angle
 * modes, every built-in mobilizer in MOBILIZER_KINDS below):
 *   - the CRBA mass matrix equals the columns M e_j of multiply_by_M, is
 *     symmetric and positive definite (our own Cholesky succeeds);
 *   - the ABA's udot equals M^-1 (tau + J^T F - C) solved with that Cholesky,
 *     and multiply_by_M_inverse(M v) = v;
 *   - the system Jacobian: J u = multiply_by_system_jacobian(u) = V_GB for the
 *     State's u, J^T F = multiply_by_system_jacobian_transpose(F), adjointness
 *     F.(J u) = u.(J^T F), station Jacobian times u = station velocity;
 *   - central finite differences: X_GB, station locations and the mass centre
 *     along qdot give V_GB, station and COM velocities; V_GB and station
 *     velocities along (qdot, udot) give A_GB and station accelerations;
 *   - kinetic energy (matter and System) = u.Mu/2; linear momentum = total
 *     mass times COM velocity; angular momentum about Ground's origin from
 *     the body mass properties as given;
 * then a free-floating tree integrated by the library's fixed-step RK4 for
 * 1 s conserves kinetic energy and spatial momentum, and 100 cycles of set
 * q/u, realize to Acceleration and every operator of matter.h allocate
 * nothing. */
#include <mbk/mbk.h>
#include <stdlib.h>
#include <string.h>

#include "mbk_test.h"
#include "test_util.h"

#define MAX_B 51           /* bodies with Ground */
#define MAX_U (6 * MAX_B)
#define MAX_Q (7 * MAX_B)

/* Algebraic identities hold to round-off: the worst seen over the 40 models is
   ~2e-14 (M^-1 M v and the Cholesky solve on the 50-body trees, where the
   O(n) sweeps and the dense solve round differently). 1e-11 relative (to
   max(1, |reference|)) leaves a ~500x margin for other compilers while a real
   error (a missing or wrongly shifted term) is O(1e-3) or more. */
#define TOL_ALG 1e-11
/* Central differences with step h = FD_H = 1e-5: truncation h^2/6 |f'''| ~
   2e-11 |f'''| plus round-off eps |f| / h ~ 2e-11 |f|; derivatives grow by up to
   ~1e1..1e2 along deep chains, so ~1e-10..1e-9 is expected (worst seen 5e-10).
   1e-7 relative keeps a ~200x margin and is far below the error of a wrong
   derivative. */
#define FD_H 1e-5
#define TOL_FD 1e-7

/* ---- random numbers (fixed seed) ------------------------------------- */

static unsigned long long rng_state = 0x9E3779B97F4A7C15ull;
static double rnd(void) { return test_rand_uniform(&rng_state); } /* uniform in [-1, 1) */
static mbk_vec3 rvec(double scale) { return test_rand_vec3(&rng_state, scale); }
static mbk_mat33 rrot(void) { return test_rand_rotation(&rng_state); }

/* ---- the mobilizers in the random trees ------------------------------
   Every built-in mobilizer of test_util.h's kinds (extend it and
   test_builtin_mobilizer when new ones land). Not yet included:
   function-based mobilizers (K_FUNCTION). */
#define NKINDS K_FUNCTION

static mbk_mobilizer make_mobilizer(int kind) { return test_builtin_mobilizer(kind, &rng_state); }

/* True when the body's first 4 q are a quaternion. */
static int has_quaternion(int kind, int euler) { return !euler && (kind == K_BALL || kind == K_FREE); }

/* ---- applied forces, through a force subsystem as users would ---------- */

typedef struct applied {
    int on;
    double tau[MAX_U];
    mbk_spatial_vec F[MAX_B];
} applied;

static int apply_forces(void *impl, const mbk_subsystem_ctx *c, mbk_state *s)
{
    const applied *a = impl;
    if (!a->on) return 0;
    const mbk_system *sys = mbk_subsystem_ctx_get_system(c);
    double *tau = mbk_multibody_upd_mobility_forces(sys, s);
    mbk_spatial_vec *F = mbk_multibody_upd_body_forces(sys, s);
    if (!tau || !F) return -1;
    int nu = mbk_state_get_nu(s), nb = mbk_matter_get_num_bodies(mbk_multibody_get_matter(sys));
    for (int i = 0; i < nu; ++i) tau[i] += a->tau[i];
    for (int b = 1; b < nb; ++b) F[b] = mbk_spatial_vec_add(F[b], a->F[b]);
    return 0;
}
static const mbk_subsystem_ops force_ops = {.name = "test forces", .realize_dynamics = apply_forces};

/* ---- a random model --------------------------------------------------- */

typedef struct model {
    mbk_system *sys;
    const mbk_matter *m;
    mbk_state *s;
    int nb, nq, nu, euler;
    int kind[MAX_B];
    mbk_vec3 station[MAX_B];
    applied *forces;
} model;

/* Normalize the quaternions in q (so that q + h qdot stays on the manifold to O(h^2)). */
static void normalize_quaternions(const model *md, double *q)
{
    for (int b = 1; b < md->nb; ++b) {
        if (!has_quaternion(md->kind[b], md->euler)) continue;
        double *qb = q + mbk_matter_get_body_q_start(md->m, md->s, b);
        double n = sqrt(qb[0] * qb[0] + qb[1] * qb[1] + qb[2] * qb[2] + qb[3] * qb[3]);
        for (int k = 0; k < 4; ++k) qb[k] /= n;
    }
}

/* Random tree of nbodies bodies; kinds from `allowed` (n_allowed of them), or
   when free_root the first body on Free and the others on Ball or Pin. */
static void build_model(model *md, int nbodies, int euler, const int *allowed, int n_allowed, int free_root,
                        applied *forces)
{
    memset(md, 0, sizeof *md);
    md->sys = mbk_multibody_create("random tree");
    mbk_matter *m = mbk_multibody_upd_matter(md->sys);
    md->m = m;
    md->euler = euler;
    md->nb = nbodies + 1;
    md->kind[0] = K_WELD;
    for (int i = 1; i <= nbodies; ++i) {
        int parent = i == 1 ? 0 : test_rand_index(&rng_state, i);
        int kind = allowed[test_rand_index(&rng_state, n_allowed)];
        if (free_root) {
            parent = i == 1 ? 0 : 1 + test_rand_index(&rng_state, i - 1);
            kind = i == 1 ? K_FREE : (i % 2 ? K_BALL : K_PIN);
        }
        if (i == nbodies && kind == K_WELD) kind = K_PIN;
        mbk_transform X_PF, X_BM;
        mbk_mass_props mp;
        test_rand_body(&rng_state, &X_PF, &X_BM, &mp);
        md->kind[i] = kind;
        md->station[i] = rvec(0.5);
        CHECK_INT(mbk_matter_add_body(m, parent, &X_PF, &mp, &X_BM, make_mobilizer(kind)), i);
    }
    md->forces = forces;
    if (forces) {
        memset(forces, 0, sizeof *forces);
        CHECK_INT(mbk_system_add_subsystem(md->sys, &force_ops, forces), 2); /* after matter and the general forces */
    }
    md->s = test_instance_state(md->sys, md->m, md->euler);
    md->nq = mbk_state_get_nq(md->s);
    md->nu = mbk_state_get_nu(md->s);
}

static void destroy_model(model *md)
{
    mbk_state_destroy(md->s);
    mbk_system_destroy(md->sys);
}

/* Random q (angles within +-1 rad, away from gimbal lock; unit quaternions), u. */
static void randomize_state(const model *md, double *q, double *u, double uscale)
{
    for (int i = 0; i < md->nq; ++i) q[i] = rnd();
    normalize_quaternions(md, q);
    for (int i = 0; i < md->nu; ++i) u[i] = uscale * rnd();
}

/* ---- small dense linear algebra (independent of the library) ----------- */

/* In-place Cholesky of the n x n row-major SPD matrix A (lower triangle); 0 if not SPD. */
static int cholesky(double *A, int n)
{
    for (int j = 0; j < n; ++j) {
        double d = A[j * n + j];
        for (int k = 0; k < j; ++k) d -= A[j * n + k] * A[j * n + k];
        if (!(d > 0.0)) return 0;
        d = sqrt(d);
        A[j * n + j] = d;
        for (int i = j + 1; i < n; ++i) {
            double x = A[i * n + j];
            for (int k = 0; k < j; ++k) x -= A[i * n + k] * A[j * n + k];
            A[i * n + j] = x / d;
        }
    }
    return 1;
}

/* Solve L L^T x = b with the factor from cholesky(); x may alias b. */
static void cholesky_solve(const double *L, int n, const double *b, double *x)
{
    for (int i = 0; i < n; ++i) {
        double v = b[i];
        for (int k = 0; k < i; ++k) v -= L[i * n + k] * x[k];
        x[i] = v / L[i * n + i];
    }
    for (int i = n - 1; i >= 0; --i) {
        double v = x[i];
        for (int k = i + 1; k < n; ++k) v -= L[k * n + i] * x[k];
        x[i] = v / L[i * n + i];
    }
}

/* max |a - b| / max(1, max |b|) over n values. */
static double rel_err(const double *a, const double *b, int n)
{
    double e = 0, s = 1;
    for (int i = 0; i < n; ++i) {
        e = fmax(e, fabs(a[i] - b[i]));
        s = fmax(s, fabs(b[i]));
    }
    return e / s;
}

static double dot(const double *a, const double *b, int n)
{
    double d = 0;
    for (int i = 0; i < n; ++i) d += a[i] * b[i];
    return d;
}

/* ---- bookkeeping of the worst error per invariant --------------------- */

enum {
    W_M_COLUMNS, W_M_SYMMETRY, W_ABA, W_MINV, W_J_MULT, W_J_VEL, W_JT, W_ADJOINT, W_STATION_J,
    W_FD_VEL, W_FD_ACC, W_FD_STATION_VEL, W_FD_STATION_ACC, W_FD_COM, W_KE, W_KE_SYSTEM,
    W_MOMENTUM_LIN, W_MOMENTUM_ANG, NWORST
};
static const char *const worst_names[NWORST] = {
    "CRBA M vs M e_j", "M symmetry", "ABA udot vs Cholesky", "M^-1 (M v) - v", "J u vs J*u op",
    "J u vs V_GB", "J^T F vs op", "F.(Ju) vs u.(J^T F)", "station J u vs v", "FD X_GB vs V_GB",
    "FD V_GB vs A_GB", "FD station p vs v", "FD station v vs a", "FD COM p vs v", "KE vs u.Mu/2",
    "System KE vs u.Mu/2", "momentum linear", "momentum angular"};
static double worst[NWORST];
static int failed_model = -1;

static void record(int slot, double err, double tol, int model_idx)
{
    worst[slot] = fmax(worst[slot], err);
    if (!CHECK(err <= tol)) {
        fprintf(stderr, "    model %d: %s error %.3g > %.1g\n", model_idx, worst_names[slot], err, tol);
        failed_model = model_idx;
    }
}

/* ---- finite differences ------------------------------------------------- */

typedef struct kin {
    mbk_transform X[MAX_B];
    mbk_spatial_vec V[MAX_B];
    mbk_vec3 ps[MAX_B], vs[MAX_B]; /* station location and velocity */
    mbk_vec3 com;
} kin;

/* Kinematics of the state t at (q, u); with_velocity: also V and station velocities. */
static void eval_kin(const model *md, mbk_state *t, const double *q, const double *u, int with_velocity, kin *k)
{
    CHECK_INT(mbk_state_set_q(t, q, md->nq), MBK_OK);
    if (u) CHECK_INT(mbk_state_set_u(t, u, md->nu), MBK_OK);
    CHECK_INT(mbk_system_realize(md->sys, t, with_velocity ? MBK_STAGE_VELOCITY : MBK_STAGE_POSITION), MBK_OK);
    for (int b = 0; b < md->nb; ++b) {
        mbk_matter_get_body_transform(md->m, t, b, &k->X[b]);
        mbk_matter_get_station_location(md->m, t, b, md->station[b], &k->ps[b]);
        if (with_velocity) {
            mbk_matter_get_body_velocity(md->m, t, b, &k->V[b]);
            mbk_matter_get_station_velocity(md->m, t, b, md->station[b], &k->vs[b]);
        }
    }
    CHECK_INT(mbk_matter_calc_mass_center_location(md->m, t, &k->com), MBK_OK);
}

static void put3(double *o, mbk_vec3 v) { o[0] = v.x; o[1] = v.y; o[2] = v.z; }
static void put6(double *o, mbk_spatial_vec v) { put3(o, v.w); put3(o + 3, v.v); }

static void check_finite_differences(const model *md, int idx)
{
    static kin plus, minus;
    static double qp[MAX_Q], qm[MAX_Q], up[MAX_U], um[MAX_U];
    static double fd[6 * MAX_B], ref[6 * MAX_B], fd2[3 * MAX_B], ref2[3 * MAX_B];
    const mbk_state *s = md->s;
    const double *q = mbk_state_get_q(s), *u = mbk_state_get_u(s);
    const double *qdot = mbk_state_get_qdot(s), *udot = mbk_state_get_udot(s);
    mbk_state *t = mbk_state_create();
    CHECK_INT(mbk_state_copy(t, s), MBK_OK);
    const double h = FD_H;
    for (int i = 0; i < md->nq; ++i) {
        qp[i] = q[i] + h * qdot[i];
        qm[i] = q[i] - h * qdot[i];
    }
    for (int i = 0; i < md->nu; ++i) {
        up[i] = u[i] + h * udot[i];
        um[i] = u[i] - h * udot[i];
    }

    /* Positions along qdot: V_GB, station velocities, COM velocity. */
    eval_kin(md, t, qp, NULL, 0, &plus);
    eval_kin(md, t, qm, NULL, 0, &minus);
    for (int b = 0; b < md->nb; ++b) {
        mbk_transform X;
        mbk_spatial_vec V;
        mbk_vec3 vs;
        mbk_matter_get_body_transform(md->m, s, b, &X);
        mbk_matter_get_body_velocity(md->m, s, b, &V);
        mbk_matter_get_station_velocity(md->m, s, b, md->station[b], &vs);
        /* skew(w) = Rdot R^T; take its skew-symmetric part */
        mbk_mat33 Rdot = mbk_mat33_scale(mbk_mat33_sub(plus.X[b].R, minus.X[b].R), 0.5 / h);
        mbk_mat33 S = mbk_mat33_mul_transpose(Rdot, X.R);
        mbk_vec3 w = mbk_vec3_make(0.5 * (S.m[2][1] - S.m[1][2]), 0.5 * (S.m[0][2] - S.m[2][0]),
                                   0.5 * (S.m[1][0] - S.m[0][1]));
        mbk_vec3 v = mbk_vec3_scale(mbk_vec3_sub(plus.X[b].p, minus.X[b].p), 0.5 / h);
        put6(fd + 6 * b, mbk_spatial_vec_make(w, v));
        put6(ref + 6 * b, V);
        put3(fd2 + 3 * b, mbk_vec3_scale(mbk_vec3_sub(plus.ps[b], minus.ps[b]), 0.5 / h));
        put3(ref2 + 3 * b, vs);
    }
    record(W_FD_VEL, rel_err(fd, ref, 6 * md->nb), TOL_FD, idx);
    record(W_FD_STATION_VEL, rel_err(fd2, ref2, 3 * md->nb), TOL_FD, idx);
    mbk_vec3 vcom;
    CHECK_INT(mbk_matter_calc_mass_center_velocity(md->m, s, &vcom), MBK_OK);
    put3(fd, mbk_vec3_scale(mbk_vec3_sub(plus.com, minus.com), 0.5 / h));
    put3(ref, vcom);
    record(W_FD_COM, rel_err(fd, ref, 3), TOL_FD, idx);

    /* Velocities along (qdot, udot): A_GB and station accelerations. */
    eval_kin(md, t, qp, up, 1, &plus);
    eval_kin(md, t, qm, um, 1, &minus);
    for (int b = 0; b < md->nb; ++b) {
        mbk_spatial_vec A;
        mbk_vec3 as;
        mbk_matter_get_body_acceleration(md->m, s, b, &A);
        mbk_matter_get_station_acceleration(md->m, s, b, md->station[b], &as);
        put6(fd + 6 * b, mbk_spatial_vec_scale(mbk_spatial_vec_sub(plus.V[b], minus.V[b]), 0.5 / h));
        put6(ref + 6 * b, A);
        put3(fd2 + 3 * b, mbk_vec3_scale(mbk_vec3_sub(plus.vs[b], minus.vs[b]), 0.5 / h));
        put3(ref2 + 3 * b, as);
    }
    record(W_FD_ACC, rel_err(fd, ref, 6 * md->nb), TOL_FD, idx);
    record(W_FD_STATION_ACC, rel_err(fd2, ref2, 3 * md->nb), TOL_FD, idx);
    mbk_state_destroy(t);
}

/* ---- the algebraic invariants of one random model ---------------------- */

static void run_model(int idx, int nbodies, int euler)
{
    static const int all_kinds[NKINDS] = {K_WELD, K_PIN, K_SLIDER, K_TRANSLATION, K_BALL, K_FREE,
                                          K_SCREW, K_UNIVERSAL, K_CYLINDER, K_PLANAR, K_GIMBAL, K_BUSHING};
    static applied forces;
    static model md;
    static double q[MAX_Q], u[MAX_U], M[MAX_U * MAX_U], L[MAX_U * MAX_U], col[MAX_U], e[MAX_U];
    static double J[6 * MAX_B * MAX_U], JS[3 * MAX_U], x[MAX_U], y[MAX_U], rhs[MAX_U], C[MAX_U];
    static double a6[6 * MAX_B], b6[6 * MAX_B], JtF[MAX_U], JtF2[MAX_U];
    static mbk_spatial_vec V[MAX_B], Fr[MAX_B];

    build_model(&md, nbodies, euler, all_kinds, NKINDS, 0, &forces);
    const mbk_matter *m = md.m;
    mbk_state *s = md.s;
    int nu = md.nu, nb = md.nb;
    randomize_state(&md, q, u, 1.0);
    CHECK_INT(mbk_state_set_q(s, q, md.nq), MBK_OK);
    CHECK_INT(mbk_state_set_u(s, u, nu), MBK_OK);
    forces.on = 1;
    for (int i = 0; i < nu; ++i) forces.tau[i] = rnd();
    for (int b = 1; b < nb; ++b) forces.F[b] = mbk_spatial_vec_make(rvec(1.0), rvec(1.0));
    CHECK_INT(mbk_system_realize(md.sys, s, MBK_STAGE_ACCELERATION), MBK_OK);

    /* Mass matrix: CRBA against M e_j; symmetric; Cholesky succeeds. */
    CHECK_INT(mbk_matter_calc_mass_matrix(m, s, M), MBK_OK);
    double ecol = 0, esym = 0, scale = 1;
    for (int j = 0; j < nu; ++j) {
        memset(e, 0, (size_t)nu * sizeof(double));
        e[j] = 1.0;
        CHECK_INT(mbk_matter_multiply_by_M(m, s, e, col), MBK_OK);
        for (int i = 0; i < nu; ++i) {
            ecol = fmax(ecol, fabs(M[i * nu + j] - col[i]));
            esym = fmax(esym, fabs(M[i * nu + j] - M[j * nu + i]));
            scale = fmax(scale, fabs(col[i]));
        }
    }
    record(W_M_COLUMNS, ecol / scale, TOL_ALG, idx);
    record(W_M_SYMMETRY, esym / scale, TOL_ALG, idx);
    memcpy(L, M, (size_t)nu * (size_t)nu * sizeof(double));
    int spd = cholesky(L, nu);
    if (!CHECK(spd)) fprintf(stderr, "    model %d: mass matrix is not positive definite\n", idx);

    /* ABA: udot = M^-1 (tau + J^T F - C), C the residual with no forces and udot = 0. */
    CHECK_INT(mbk_matter_calc_residual_force(m, s, NULL, NULL, NULL, C), MBK_OK);
    Fr[0] = mbk_spatial_vec_zero();
    for (int b = 1; b < nb; ++b) Fr[b] = forces.F[b];
    CHECK_INT(mbk_matter_multiply_by_system_jacobian_transpose(m, s, Fr, JtF), MBK_OK);
    for (int i = 0; i < nu; ++i) rhs[i] = forces.tau[i] + JtF[i] - C[i];
    if (spd) {
        cholesky_solve(L, nu, rhs, x);
        record(W_ABA, rel_err(mbk_state_get_udot(s), x, nu), TOL_ALG, idx);
    }
    /* M^-1 (M v) = v */
    for (int i = 0; i < nu; ++i) x[i] = rnd();
    CHECK_INT(mbk_matter_multiply_by_M(m, s, x, y), MBK_OK);
    CHECK_INT(mbk_matter_multiply_by_M_inverse(m, s, y, rhs), MBK_OK);
    record(W_MINV, rel_err(rhs, x, nu), TOL_ALG, idx);

    /* System Jacobian. */
    CHECK_INT(mbk_matter_calc_system_jacobian(m, s, J), MBK_OK);
    for (int pass = 0; pass < 2; ++pass) {
        const double *uu = pass ? mbk_state_get_u(s) : x; /* x: random u from above */
        for (int r = 0; r < 6 * nb; ++r) a6[r] = dot(J + (size_t)r * (size_t)nu, uu, nu);
        if (pass == 0) {
            CHECK_INT(mbk_matter_multiply_by_system_jacobian(m, s, uu, V), MBK_OK);
        } else {
            for (int b = 0; b < nb; ++b) CHECK_INT(mbk_matter_get_body_velocity(m, s, b, &V[b]), MBK_OK);
        }
        for (int b = 0; b < nb; ++b) put6(b6 + 6 * b, V[b]);
        record(pass ? W_J_VEL : W_J_MULT, rel_err(a6, b6, 6 * nb), TOL_ALG, idx);
    }
    /* J^T F for random F (Ground's entry included: it must be ignored). */
    for (int b = 0; b < nb; ++b) Fr[b] = mbk_spatial_vec_make(rvec(1.0), rvec(1.0));
    CHECK_INT(mbk_matter_multiply_by_system_jacobian_transpose(m, s, Fr, JtF), MBK_OK);
    for (int b = 0; b < nb; ++b) put6(b6 + 6 * b, Fr[b]);
    for (int j = 0; j < nu; ++j) {
        double v = 0;
        for (int r = 6; r < 6 * nb; ++r) v += J[(size_t)r * (size_t)nu + (size_t)j] * b6[r];
        JtF2[j] = v;
    }
    record(W_JT, rel_err(JtF, JtF2, nu), TOL_ALG, idx);
    /* adjointness with the O(n) operators only: F.(J x) = x.(J^T F) */
    CHECK_INT(mbk_matter_multiply_by_system_jacobian(m, s, x, V), MBK_OK);
    double lhs = 0, rhs_dot = dot(x, JtF, nu), mag = 0;
    for (int b = 0; b < nb; ++b) {
        lhs += mbk_spatial_vec_dot(Fr[b], V[b]);
        mag += fabs(mbk_spatial_vec_dot(Fr[b], V[b]));
    }
    record(W_ADJOINT, fabs(lhs - rhs_dot) / fmax(1.0, mag), TOL_ALG, idx);
    /* Station Jacobian times the State's u = station velocity. */
    double est = 0, sst = 1;
    for (int b = 0; b < nb; ++b) {
        mbk_vec3 v;
        CHECK_INT(mbk_matter_calc_station_jacobian(m, s, b, md.station[b], JS), MBK_OK);
        CHECK_INT(mbk_matter_get_station_velocity(m, s, b, md.station[b], &v), MBK_OK);
        const double *us = mbk_state_get_u(s);
        double jv[3] = {dot(JS, us, nu), dot(JS + nu, us, nu), dot(JS + 2 * nu, us, nu)};
        double vv[3] = {v.x, v.y, v.z};
        for (int k = 0; k < 3; ++k) {
            est = fmax(est, fabs(jv[k] - vv[k]));
            sst = fmax(sst, fabs(vv[k]));
        }
    }
    record(W_STATION_J, est / sst, TOL_ALG, idx);

    /* Kinetic energy = u.Mu/2, from matter and from the System. */
    const double *us = mbk_state_get_u(s);
    CHECK_INT(mbk_matter_multiply_by_M(m, s, us, y), MBK_OK);
    double ke_ref = 0.5 * dot(us, y, nu), ke = -1, ke_sys = -1;
    CHECK_INT(mbk_matter_calc_kinetic_energy(m, s, &ke), MBK_OK);
    CHECK_INT(mbk_system_calc_energy(md.sys, s, &ke_sys, NULL), MBK_OK);
    record(W_KE, fabs(ke - ke_ref) / fmax(1.0, ke_ref), TOL_ALG, idx);
    record(W_KE_SYSTEM, fabs(ke_sys - ke_ref) / fmax(1.0, ke_ref), TOL_ALG, idx);

    /* Momentum: linear = total mass * COM velocity; both parts also from the
       body mass properties as given (central inertia, COM station velocities). */
    mbk_spatial_vec hm;
    mbk_vec3 vcom;
    CHECK_INT(mbk_matter_calc_system_momentum(m, s, &hm), MBK_OK);
    CHECK_INT(mbk_matter_calc_mass_center_velocity(m, s, &vcom), MBK_OK);
    double total = mbk_matter_get_total_mass(m);
    mbk_vec3 P = mbk_vec3_zero(), Lg = mbk_vec3_zero();
    for (int b = 1; b < nb; ++b) {
        mbk_mass_props mp;
        mbk_transform X;
        mbk_spatial_vec Vb;
        mbk_vec3 pc, vc;
        CHECK_INT(mbk_matter_get_body_mass_props(m, b, &mp), MBK_OK);
        mbk_matter_get_body_transform(m, s, b, &X);
        mbk_matter_get_body_velocity(m, s, b, &Vb);
        mbk_matter_get_station_location(m, s, b, mp.com, &pc);
        mbk_matter_get_station_velocity(m, s, b, mp.com, &vc);
        mbk_vec3 lin = mbk_vec3_scale(vc, mp.mass);
        mbk_mat33 I_G = mbk_mat33_mul_transpose(mbk_mat33_mul(X.R, mp.inertia), X.R);
        P = mbk_vec3_add(P, lin);
        Lg = mbk_vec3_add(Lg, mbk_vec3_add(mbk_mat33_mul_vec(I_G, Vb.w), mbk_vec3_cross(pc, lin)));
    }
    double h6[6], r6[6], r3[3];
    put6(h6, hm);
    put3(r6, Lg);
    put3(r6 + 3, P);
    put3(r3, mbk_vec3_scale(vcom, total));
    double elin = fmax(rel_err(h6 + 3, r3, 3), rel_err(h6 + 3, r6 + 3, 3));
    record(W_MOMENTUM_LIN, elin, TOL_ALG, idx);
    record(W_MOMENTUM_ANG, rel_err(h6, r6, 3), TOL_ALG, idx);

    check_finite_differences(&md, idx);
    destroy_model(&md);
}

/* ---- conservation: a free-floating tree, the library's fixed-step RK4 ----- */

/* Returns the relative drifts (energy, angular momentum, linear momentum). */
static void conservation(int nbodies, int euler, double h, double T, double drift[3])
{
    static model md;
    static double q[MAX_Q], u[MAX_U];
    static const int none[1] = {K_FREE};
    build_model(&md, nbodies, euler, none, 1, 1, NULL);
    randomize_state(&md, q, u, 1.0);
    CHECK_INT(mbk_state_set_q(md.s, q, md.nq), MBK_OK);
    CHECK_INT(mbk_state_set_u(md.s, u, md.nu), MBK_OK);
    CHECK_INT(mbk_system_realize(md.sys, md.s, MBK_STAGE_VELOCITY), MBK_OK);
    double ke0, ke1 = NAN;
    mbk_spatial_vec h0, h1 = {{NAN, NAN, NAN}, {NAN, NAN, NAN}};
    CHECK_INT(mbk_matter_calc_kinetic_energy(md.m, md.s, &ke0), MBK_OK);
    CHECK_INT(mbk_matter_calc_system_momentum(md.m, md.s, &h0), MBK_OK);
    int steps = (int)lround(T / h), rc = MBK_EINTEGRATOR;
    mbk_integrator *ig = mbk_test_rk4(md.sys, md.s, h, 1e-10);
    for (int n = 1; ig && n <= steps; ++n)
        if ((rc = mbk_integrator_step_to(ig, n * h)) != MBK_OK) break;
    CHECK(rc == MBK_OK);
    if (rc == MBK_OK) {
        const mbk_state *s = mbk_integrator_get_state(ig);
        CHECK_INT(mbk_matter_calc_kinetic_energy(md.m, s, &ke1), MBK_OK);
        CHECK_INT(mbk_matter_calc_system_momentum(md.m, s, &h1), MBK_OK);
    }
    mbk_integrator_destroy(ig);
    drift[0] = fabs(ke1 - ke0) / ke0;
    drift[1] = mbk_vec3_norm(mbk_vec3_sub(h1.w, h0.w)) / mbk_vec3_norm(h0.w);
    drift[2] = mbk_vec3_norm(mbk_vec3_sub(h1.v, h0.v)) / mbk_vec3_norm(h0.v);
    destroy_model(&md);
}

/* ---- no allocation after Instance ------------------------------------- */

static void no_allocation(int euler)
{
    static const int all_kinds[NKINDS] = {K_WELD, K_PIN, K_SLIDER, K_TRANSLATION, K_BALL, K_FREE,
                                          K_SCREW, K_UNIVERSAL, K_CYLINDER, K_PLANAR, K_GIMBAL, K_BUSHING};
    static applied forces;
    static model md;
    static double q[MAX_Q], u[MAX_U], M[MAX_U * MAX_U], J[6 * MAX_B * MAX_U], JS[3 * MAX_U];
    static double v[MAX_U], w[MAX_U], ydot[MAX_Q + MAX_U];
    static mbk_spatial_vec V[MAX_B], F[MAX_B];
    build_model(&md, 20, euler, all_kinds, NKINDS, 0, &forces);
    const mbk_matter *m = md.m;
    mbk_state *s = md.s;
    forces.on = 1;
    for (int i = 0; i < md.nu; ++i) forces.tau[i] = rnd();
    for (int b = 0; b < md.nb; ++b) F[b] = forces.F[b] = mbk_spatial_vec_make(rvec(1.0), rvec(1.0));
    for (int i = 0; i < md.nu; ++i) v[i] = rnd();
    /* The last body (never a Weld) exercises the two fitting functions. */
    int fit_body = md.nb - 1;
    CHECK(md.kind[fit_body] != K_WELD);
    mbk_transform X_FM = mbk_transform_make(rrot(), rvec(0.3));
    mbk_spatial_vec V_FM = mbk_spatial_vec_make(rvec(0.5), rvec(0.5));
    CHECK_INT(mbk_state_get_stage(s), MBK_STAGE_INSTANCE);

    long before = mbk_get_allocation_count();
    int bad = 0;
    double sink = 0;
    for (int cycle = 0; cycle < 100; ++cycle) {
        randomize_state(&md, q, u, 1.0);
        bad += mbk_state_set_q(s, q, md.nq) != MBK_OK;
        bad += mbk_state_set_u(s, u, md.nu) != MBK_OK;
        bad += mbk_matter_set_body_q_to_fit_transform(m, s, fit_body, &X_FM) != MBK_OK;
        bad += mbk_system_realize(md.sys, s, MBK_STAGE_POSITION) != MBK_OK;
        bad += mbk_matter_set_body_u_to_fit_velocity(m, s, fit_body, &V_FM) != MBK_OK;
        bad += mbk_system_realize(md.sys, s, MBK_STAGE_ACCELERATION) != MBK_OK;

        bad += mbk_multibody_get_body_forces(md.sys, s) == NULL;
        bad += mbk_multibody_get_mobility_forces(md.sys, s) == NULL;
        bad += mbk_multibody_upd_body_forces(md.sys, s) == NULL;
        bad += mbk_multibody_upd_mobility_forces(md.sys, s) == NULL;
        bad += mbk_matter_get_use_euler_angles(m, s) != (euler != 0);
        for (int b = 0; b < md.nb; ++b) {
            mbk_transform X;
            mbk_spatial_vec Vb, Ab;
            mbk_vec3 p;
            mbk_mass_props mp;
            bad += mbk_matter_get_num_bodies(m) != md.nb;
            bad += mbk_matter_get_parent(m, b) >= b;
            bad += mbk_matter_get_body_num_q(m, s, b) < 0;
            bad += mbk_matter_get_body_num_u(m, s, b) < 0;
            bad += mbk_matter_get_body_q_start(m, s, b) < 0;
            bad += mbk_matter_get_body_u_start(m, s, b) < 0;
            bad += mbk_matter_get_body_transform(m, s, b, &X) != MBK_OK;
            bad += mbk_matter_get_body_velocity(m, s, b, &Vb) != MBK_OK;
            bad += mbk_matter_get_body_acceleration(m, s, b, &Ab) != MBK_OK;
            bad += mbk_matter_calc_station_jacobian(m, s, b, md.station[b], JS) != MBK_OK;
            bad += mbk_matter_get_station_location(m, s, b, md.station[b], &p) != MBK_OK;
            bad += mbk_matter_get_station_velocity(m, s, b, md.station[b], &p) != MBK_OK;
            bad += mbk_matter_get_station_acceleration(m, s, b, md.station[b], &p) != MBK_OK;
            bad += mbk_matter_get_body_mass_props(m, b, &mp) != MBK_OK;
            sink += X.p.x + Vb.w.x + Ab.v.z + p.y + mp.mass;
        }
        bad += mbk_matter_calc_mass_matrix(m, s, M) != MBK_OK;
        bad += mbk_matter_multiply_by_M(m, s, v, w) != MBK_OK;
        bad += mbk_matter_multiply_by_M_inverse(m, s, v, w) != MBK_OK;
        bad += mbk_matter_calc_residual_force(m, s, forces.tau, F, v, w) != MBK_OK;
        bad += mbk_matter_calc_residual_force(m, s, NULL, NULL, NULL, w) != MBK_OK;
        double ke, ke2;
        bad += mbk_matter_calc_kinetic_energy(m, s, &ke) != MBK_OK;
        bad += mbk_system_calc_energy(md.sys, s, &ke2, NULL) != MBK_OK;
        bad += mbk_matter_calc_system_jacobian(m, s, J) != MBK_OK;
        bad += mbk_matter_multiply_by_system_jacobian(m, s, v, V) != MBK_OK;
        bad += mbk_matter_multiply_by_system_jacobian_transpose(m, s, F, w) != MBK_OK;
        mbk_vec3 c;
        mbk_spatial_vec hm;
        sink += mbk_matter_get_total_mass(m);
        bad += mbk_matter_calc_mass_center_location(m, s, &c) != MBK_OK;
        bad += mbk_matter_calc_mass_center_velocity(m, s, &c) != MBK_OK;
        bad += mbk_matter_calc_system_momentum(m, s, &hm) != MBK_OK;
        bad += mbk_system_calc_ydot(md.sys, s, 0.0, NULL, ydot) != MBK_OK;
        sink += ke + ke2 + c.x + hm.w.y + M[0] + w[0] + J[6 * md.nu] + JS[0] + V[1].w.x + ydot[0];
    }
    long after = mbk_get_allocation_count();
    CHECK_INT(bad, 0);
    CHECK(isfinite(sink));
    if (!CHECK(after == before))
        fprintf(stderr, "    %s mode: %ld allocations in 100 cycles after Instance\n",
                euler ? "Euler" : "quaternion", after - before);
    printf("no allocation (%s mode, %d bodies, nq %d, nu %d): %ld allocations in 100 cycles\n",
           euler ? "Euler" : "quaternion", md.nb - 1, md.nq, md.nu, after - before);
    destroy_model(&md);
}

int main(void)
{
    int idx = 0;
    static const int sizes[] = {1, 2, 3, 5, 8, 13, 20, 30, 40, 50};
    for (int euler = 0; euler <= 1; ++euler)
        for (size_t k = 0; k < sizeof sizes / sizeof sizes[0]; ++k)
            for (int rep = 0; rep < 2; ++rep) run_model(idx++, sizes[k], euler);
    printf("%d random models (1..50 bodies; %d mobilizer kinds:", idx, NKINDS);
    for (int i = 0; i < NKINDS; ++i) printf(" %s", test_kind_name(i));
    printf("), worst relative errors:\n");
    for (int i = 0; i < NWORST; ++i) printf("  %-22s %.2e\n", worst_names[i], worst[i]);
    if (failed_model >= 0) printf("  (last failing model: %d)\n", failed_model);

    /* Conservation: RK4 with h = 1e-3 s for 1 s keeps the relative drift of
       kinetic energy and of both parts of the momentum about Ground's origin
       near 1e-13 (printed), far inside the required 1e-9. The drift must also
       be RK4's truncation error: at h = 2e-2 and 1e-2 it scales like h^4
       (ratio ~16), which a wrong udot (an O(1) drift at any h) cannot do. */
    for (int euler = 0; euler <= 1; ++euler) {
        double drift[3], coarse[3], fine[3];
        unsigned long long seed = rng_state;
        conservation(8, euler, 1e-3, 1.0, drift);
        printf("conservation (%s, 8 bodies, RK4 h = 1e-3, 1 s): energy %.2e, angular momentum %.2e, "
               "linear momentum %.2e\n", euler ? "Euler" : "quaternions", drift[0], drift[1], drift[2]);
        for (int i = 0; i < 3; ++i) CHECK(drift[i] <= 1e-9);
        rng_state = seed;
        conservation(8, euler, 2e-2, 1.0, coarse);
        rng_state = seed;
        conservation(8, euler, 1e-2, 1.0, fine);
        printf("  energy drift at h = 2e-2: %.2e, at 1e-2: %.2e (ratio %.1f)\n", coarse[0], fine[0],
               coarse[0] / fine[0]);
        CHECK(coarse[0] / fine[0] > 8.0 && coarse[0] / fine[0] < 32.0);
    }

    no_allocation(0);
    no_allocation(1);
    return mbk_test_finish();
}
