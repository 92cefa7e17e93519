/* Derivatives of the dynamics (mbk/derivatives.h, docs/derivatives.md).
 *
 * Part 1: every built-in mobilizer's calc_derivatives op against central
 * differences of its other ops (mbk_mobilizer_calc_derivatives_numeric), at
 * random q and u, with quaternions and with Euler angles. */
#include <mbk/mbk.h>
#include <stdlib.h>
#include <string.h>

#include "mbk_test.h"
#include "test_util.h"

/* ---- random numbers (fixed seed) ------------------------------------- */

static unsigned long long rng_state = 0x2545F4914F6CDD1Dull;
static double rnd(void) { return test_rand_uniform(&rng_state); } /* uniform in [-1, 1) */

/* Every mobilizer kind of test_util.h, function-based included. */
#define NKINDS K_NUM_KINDS

/* A function-based mobilizer of 3 coordinates: angles and lengths read shared
   coordinates through sinusoids, polynomials and a linear function. */
static mbk_mobilizer make_function_based(void)
{
    const double lin2[3] = {0.7, -0.4, 0.1};
    const double poly[4] = {0.2, -0.3, 0.5, 0.05};
    mbk_function fns[6] = {
        mbk_function_sinusoid(0.9, 1.3, 0.2), mbk_function_linear(lin2, 2), mbk_function_polynomial(poly, 3),
        mbk_function_sinusoid(0.3, 0.7, -0.4), mbk_function_polynomial(poly, 3), mbk_function_linear(lin2, 2)};
    static const int i0[1] = {0}, i1[2] = {1, 0}, i2[1] = {2}, i3[1] = {1}, i4[1] = {0}, i5[2] = {2, 1};
    const int *const idx[6] = {i0, i1, i2, i3, i4, i5};
    const int n[6] = {1, 2, 1, 1, 1, 2};
    const mbk_vec3 axes[6] = {{1, 0.2, 0}, {0, 1, 0.3}, {0.1, 0, 1}, {1, 0, 0}, {0.3, 1, 0}, {0, 0.2, 1}};
    return mbk_mobilizer_function_based(3, fns, idx, n, axes);
}

static mbk_mobilizer make_mobilizer(int kind)
{
    return kind == K_FUNCTION ? make_function_based() : test_builtin_mobilizer(kind, &rng_state);
}

static void destroy_mobilizer(mbk_mobilizer *m)
{
    if (m->ops && m->ops->destroy && m->impl) m->ops->destroy(m->impl);
}

/* Entry r of a spatial vector (angular 0..2, linear 3..5). */
static double sv(const mbk_spatial_vec *v, int r)
{
    const mbk_vec3 *p = r < 3 ? &v->w : &v->v;
    return r % 3 == 0 ? p->x : r % 3 == 1 ? p->y : p->z;
}

/* Largest difference of two derivative records over the used entries, relative
   to max(1, largest entry). */
static double deriv_diff(const mbk_mobilizer_derivatives *a, const mbk_mobilizer_derivatives *b, int nq, int nu)
{
    double big = 1.0, diff = 0.0;
#define CMP(x, y)                                                       \
    do {                                                                \
        double xa = (x), ya = (y);                                      \
        big = fmax(big, fmax(fabs(xa), fabs(ya)));                      \
        diff = fmax(diff, fabs(xa - ya));                               \
    } while (0)
    for (int k = 0; k < nq; ++k) {
        for (int r = 0; r < 3; ++r)
            for (int c = 0; c < 3; ++c) CMP(a->dR[k].m[r][c], b->dR[k].m[r][c]);
        CMP(a->dp[k].x, b->dp[k].x); CMP(a->dp[k].y, b->dp[k].y); CMP(a->dp[k].z, b->dp[k].z);
        for (int j = 0; j < nu; ++j)
            for (int r = 0; r < 6; ++r) CMP(sv(&a->dH[k][j], r), sv(&b->dH[k][j], r));
        for (int r = 0; r < 6; ++r) CMP(sv(&a->dHdot_u_dq[k], r), sv(&b->dHdot_u_dq[k], r));
        for (int i = 0; i < nq; ++i) CMP(a->dqdot_dq[i][k], b->dqdot_dq[i][k]);
    }
    for (int j = 0; j < nu; ++j)
        for (int r = 0; r < 6; ++r) CMP(sv(&a->dHdot_u_du[j], r), sv(&b->dHdot_u_du[j], r));
#undef CMP
    return diff / big;
}

static void test_mobilizer_derivatives(void)
{
    for (int kind = 0; kind < NKINDS; ++kind) {
        mbk_mobilizer mob = make_mobilizer(kind);
        CHECK(mob.ops != NULL);
        if (!mob.ops) continue;
        double worst = 0.0;
        for (int euler = 0; euler < 2; ++euler) {
            int nq = mbk_mobilizer_get_nq(&mob, euler), nu = mob.ops->nu;
            for (int trial = 0; trial < 20; ++trial) {
                double q[7], u[6];
                for (int k = 0; k < nq; ++k) q[k] = 1.2 * rnd(); /* |q1| < 1.2: the reference differences need W far from singular */
                for (int j = 0; j < nu; ++j) u[j] = 2.0 * rnd();
                if (!euler && (kind == K_BALL || kind == K_FREE)) q[0] += 1.5; /* keep |q| away from 0 */
                mbk_mobilizer_derivatives a, n;
                memset(&a, 0, sizeof a);
                memset(&n, 0, sizeof n);
                CHECK_INT(mbk_mobilizer_calc_derivatives(&mob, euler, q, u, &a), MBK_OK);
                CHECK_INT(mbk_mobilizer_calc_derivatives_numeric(&mob, euler, q, u, &n), MBK_OK);
                CHECK_INT(a.numeric, 0);
                CHECK_INT(n.numeric, 1);
                worst = fmax(worst, deriv_diff(&a, &n, nq, nu));
            }
        }
        if (getenv("MBK_TEST_VERBOSE")) printf("  %-13s analytic vs numeric %.2g\n", test_kind_name(kind), worst);
        if (!CHECK(worst < 1e-8)) fprintf(stderr, "    %s: analytic vs numeric %.3g\n", test_kind_name(kind), worst);
        destroy_mobilizer(&mob);
    }
}

/* ---- models ----------------------------------------------------------- */

#define MAX_B 48
#define MAX_Q (7 * MAX_B)
#define MAX_U (6 * MAX_B)

static mbk_vec3 rvec(double scale) { return test_rand_vec3(&rng_state, scale); }
static mbk_mat33 rrot(void) { return test_rand_rotation(&rng_state); }
static mbk_mass_props random_mass_props(void) { return test_rand_mass_props(&rng_state); }

/* Where the force elements act whose laws are singular somewhere (so the random
   States keep away from there): two-point elements (zero distance), bushings
   (gimbal lock) and stops (the limits, where the force has a kink). */
typedef struct where {
    int kind;               /* 0 two-point, 1 bushing, 2 stop */
    int b[2];
    mbk_vec3 st[2];
    mbk_transform X[2];
    double lo, hi;
} where;

typedef struct model {
    mbk_system *sys;
    const mbk_matter *m;
    mbk_forces *f;
    mbk_state *s;
    int nb, nq, nu, euler;
    int kind[MAX_B];
    where w[64];
    int nw;
} model;

/* A random tree of nbodies bodies, kinds drawn from allowed[]; gravity on. */
static void build_tree(model *md, int nbodies, int euler, const int *allowed, int n_allowed)
{
    memset(md, 0, sizeof *md);
    md->sys = mbk_multibody_create("random tree");
    mbk_matter *m = mbk_multibody_upd_matter(md->sys);
    md->m = m;
    md->f = mbk_multibody_upd_forces(md->sys);
    md->euler = euler;
    md->nb = nbodies + 1;
    for (int i = 1; i <= nbodies; ++i) {
        int parent = i == 1 ? 0 : test_rand_index(&rng_state, i);
        int kind = allowed[test_rand_index(&rng_state, n_allowed)];
        mbk_transform X_PF, X_BM;
        mbk_mass_props mp;
        test_rand_body(&rng_state, &X_PF, &X_BM, &mp);
        md->kind[i] = kind;
        CHECK_INT(mbk_matter_add_body(m, parent, &X_PF, &mp, &X_BM, make_mobilizer(kind)), i);
    }
    mbk_force_add_gravity(md->f, mbk_vec3_make(0.3, -1.1, -9.81));
}

/* Realize the topology and make the State (Instance). */
static void finish_model(model *md)
{
    md->s = test_instance_state(md->sys, md->m, md->euler);
    md->nq = mbk_state_get_nq(md->s);
    md->nu = mbk_state_get_nu(md->s);
}

static void destroy_model(model *md)
{
    mbk_state_destroy(md->s);
    mbk_system_destroy(md->sys);
}

/* Random q and u; quaternions of random length (the derivatives are of the functions
   of q as the kernel normalizes them). */
static void randomize(model *md, double uscale)
{
    double *q = mbk_state_upd_q(md->s), *u = mbk_state_upd_u(md->s);
    for (int i = 0; i < md->nq; ++i) q[i] = rnd();
    for (int b = 1; b < md->nb; ++b)
        if (!md->euler && (md->kind[b] == K_BALL || md->kind[b] == K_FREE)) {
            double *qb = q + mbk_matter_get_body_q_start(md->m, md->s, b);
            qb[0] += 1.3; /* well away from zero */
        }
    for (int i = 0; i < md->nu; ++i) u[i] = uscale * rnd();
}

/* Whether the State keeps away from the elements' singular places. */
static int state_ok(model *md)
{
    if (mbk_system_realize(md->sys, md->s, MBK_STAGE_POSITION) < 0) return 0;
    for (int k = 0; k < md->nw; ++k) {
        const where *w = &md->w[k];
        mbk_transform X0, X1;
        if (w->kind == 2) {
            double q = mbk_state_get_q(md->s)[mbk_matter_get_body_q_start(md->m, md->s, w->b[0])];
            if (fabs(q - w->lo) < 0.02 || fabs(q - w->hi) < 0.02) return 0;
            continue;
        }
        mbk_matter_get_body_transform(md->m, md->s, w->b[0], &X0);
        mbk_matter_get_body_transform(md->m, md->s, w->b[1], &X1);
        if (w->kind == 0) {
            mbk_vec3 d = mbk_vec3_sub(mbk_transform_apply_point(X1, w->st[1]), mbk_transform_apply_point(X0, w->st[0]));
            if (mbk_vec3_norm(d) < 0.2) return 0;
        } else {
            mbk_transform F = mbk_transform_compose(X0, w->X[0]), M = mbk_transform_compose(X1, w->X[1]);
            mbk_vec3 a = mbk_mat33_to_body_xyz(mbk_mat33_transpose_mul(F.R, M.R));
            if (fabs(cos(a.y)) < 0.3) return 0;
        }
    }
    return 1;
}

/* Random q and u away from the elements' singular places. */
static void randomize_ok(model *md, double uscale)
{
    for (int tries = 0; tries < 1000; ++tries) {
        randomize(md, uscale);
        if (state_ok(md)) return;
    }
    CHECK(0 && "no regular State found");
}

/* ---- central differences with Richardson's extrapolation --------------- */

/* What is differentiated: a vector of nu at the State (realized inside). */
typedef int (*value_fn)(model *md, const void *arg, double *out);

/* r = M udot + C - (the State's applied forces), udot given. */
static int residual_value(model *md, const void *arg, double *out)
{
    int rc = mbk_system_realize(md->sys, md->s, MBK_STAGE_DYNAMICS);
    if (rc < 0) return rc;
    return mbk_matter_calc_residual_force(md->m, md->s, mbk_multibody_get_mobility_forces(md->sys, md->s),
                                          mbk_multibody_get_body_forces(md->sys, md->s), arg, out);
}

/* udot, constrained when constraints are on. */
static int udot_value(model *md, const void *arg, double *out)
{
    (void)arg;
    int rc = mbk_system_realize(md->sys, md->s, MBK_STAGE_ACCELERATION);
    if (rc < 0) return rc;
    memcpy(out, mbk_state_get_udot(md->s), (size_t)md->nu * sizeof *out);
    return MBK_OK;
}

/* f = tau + J^T F of the State's applied forces. */
static int force_value(model *md, const void *arg, double *out)
{
    (void)arg;
    int rc = mbk_system_realize(md->sys, md->s, MBK_STAGE_DYNAMICS);
    if (rc < 0) return rc;
    rc = mbk_matter_multiply_by_system_jacobian_transpose(md->m, md->s, mbk_multibody_get_body_forces(md->sys, md->s), out);
    const double *tau = mbk_multibody_get_mobility_forces(md->sys, md->s);
    for (int i = 0; i < md->nu; ++i) out[i] += tau[i];
    return rc;
}

/* dv/dq (nu x nq) and dv/du (nu x nu) by central differences at h and h/2,
   extrapolated: error O(h^4) + O(eps / h). */
static void fd_derivatives(model *md, value_fn v, const void *arg, double h0, double *d_dq, double *d_du)
{
    double q0[MAX_Q], u0[MAX_U], val[MAX_U];
    memcpy(q0, mbk_state_get_q(md->s), (size_t)md->nq * sizeof *q0);
    memcpy(u0, mbk_state_get_u(md->s), (size_t)md->nu * sizeof *u0);
    for (int col = 0; col < md->nq + md->nu; ++col) {
        int is_q = col < md->nq, j = is_q ? col : col - md->nq;
        double x0 = is_q ? q0[j] : u0[j], h1 = h0 * fmax(1.0, fabs(x0)), acc[MAX_U] = {0};
        for (int r = 0; r < 2; ++r) {
            double h = r ? 0.5 * h1 : h1, w = (r ? 4.0 / 3.0 : -1.0 / 3.0) * 0.5 / h;
            for (int sg = -1; sg <= 1; sg += 2) {
                double *x = is_q ? mbk_state_upd_q(md->s) : mbk_state_upd_u(md->s);
                x[j] = x0 + sg * h;
                CHECK_INT(v(md, arg, val), MBK_OK);
                for (int i = 0; i < md->nu; ++i) acc[i] += sg * w * val[i];
            }
        }
        double *x = is_q ? mbk_state_upd_q(md->s) : mbk_state_upd_u(md->s);
        x[j] = x0;
        double *out = is_q ? d_dq : d_du;
        int ld = is_q ? md->nq : md->nu;
        for (int i = 0; i < md->nu; ++i) out[i * ld + j] = acc[i];
    }
    CHECK_INT(mbk_system_realize(md->sys, md->s, MBK_STAGE_ACCELERATION), MBK_OK);
}

/* max |a - b| / max(1, max |b|) */
static double rel_err(const double *a, const double *b, int n)
{
    double big = 1.0, d = 0.0;
    for (int i = 0; i < n; ++i) {
        big = fmax(big, fabs(b[i]));
        d = fmax(d, fabs(a[i] - b[i]));
    }
    return d / big;
}

static double fd_step = 1e-3; /* relative step of the reference differences */

/* The tolerance of every analytic-against-differences check (the 1e-7). */
#define TOL 1e-7

/* r's and udot's derivatives at the State against differences; worst errors out. */
static void check_state(model *md, double *worst_r, double *worst_a, const char *what)
{
    static double A_q[MAX_U * MAX_Q], A_u[MAX_U * MAX_U], B_q[MAX_U * MAX_Q], B_u[MAX_U * MAX_U];
    double udot[MAX_U];
    for (int i = 0; i < md->nu; ++i) udot[i] = rnd();
    if (!CHECK(mbk_system_calc_residual_derivatives(md->sys, md->s, udot, A_q, A_u) == MBK_OK)) fprintf(stderr, "    %s\n", mbk_last_error());
    fd_derivatives(md, residual_value, udot, fd_step, B_q, B_u);
    double e = fmax(rel_err(A_q, B_q, md->nu * md->nq), rel_err(A_u, B_u, md->nu * md->nu));
    *worst_r = fmax(*worst_r, e);
    if (e > TOL) fprintf(stderr, "    %s: dr error %.3g\n", what, e);
    CHECK_INT(mbk_system_calc_acceleration_derivatives(md->sys, md->s, A_q, A_u), MBK_OK);
    fd_derivatives(md, udot_value, NULL, fd_step, B_q, B_u);
    e = fmax(rel_err(A_q, B_q, md->nu * md->nq), rel_err(A_u, B_u, md->nu * md->nu));
    *worst_a = fmax(*worst_a, e);
    if (e > TOL) fprintf(stderr, "    %s: dudot error %.3g\n", what, e);
}

/* Every mobilizer kind on small trees (with Pins between), 20 states each, in both
   rotation modes. */
static void test_each_mobilizer(void)
{
    for (int kind = K_PIN; kind < NKINDS; ++kind) {
        for (int euler = 0; euler < 2; ++euler) {
            if (euler && kind != K_BALL && kind != K_FREE) continue;
            const int allowed[3] = {kind, kind, K_PIN};
            model md;
            for (;;) { /* a tree that has the kind, and a Pin */
                build_tree(&md, 4, euler, allowed, 3);
                int has = 0, pin = 0;
                for (int b = 1; b < md.nb; ++b) {
                    has |= md.kind[b] == kind;
                    pin |= md.kind[b] == K_PIN;
                }
                if (has && pin) break;
                mbk_system_destroy(md.sys);
            }
            finish_model(&md);
            double wr = 0, wa = 0;
            for (int trial = 0; trial < 20; ++trial) {
                randomize(&md, 1.0);
                check_state(&md, &wr, &wa, test_kind_name(kind));
            }
            if (getenv("MBK_TEST_VERBOSE")) printf("  %-13s %s dr %.2g dudot %.2g\n", test_kind_name(kind), euler ? "euler" : "quat ", wr, wa);
            CHECK(wr <= TOL);
            CHECK(wa <= TOL);
            destroy_model(&md);
        }
    }
}

/* The force Jacobians (added into arrays holding something already) against
   differences of the applied generalized force. */
static void check_forces(model *md, double *worst, const char *what)
{
    static double A_q[MAX_U * MAX_Q], A_u[MAX_U * MAX_U], B_q[MAX_U * MAX_Q], B_u[MAX_U * MAX_U];
    for (int i = 0; i < md->nu * md->nq; ++i) A_q[i] = 1.0;
    for (int i = 0; i < md->nu * md->nu; ++i) A_u[i] = -2.0;
    CHECK_INT(mbk_system_add_force_jacobians(md->sys, md->s, A_q, A_u), MBK_OK);
    for (int i = 0; i < md->nu * md->nq; ++i) A_q[i] -= 1.0;
    for (int i = 0; i < md->nu * md->nu; ++i) A_u[i] += 2.0;
    fd_derivatives(md, force_value, NULL, fd_step, B_q, B_u);
    double e = fmax(rel_err(A_q, B_q, md->nu * md->nq), rel_err(A_u, B_u, md->nu * md->nu));
    *worst = fmax(*worst, e);
    if (e > TOL) {
        fprintf(stderr, "    %s: df error %.3g\n", what, e);
        if (getenv("MBK_TEST_DEBUG")) {
            for (int i = 0; i < md->nu; ++i) for (int j = 0; j < md->nq; ++j) if (fabs(A_q[i*md->nq+j]-B_q[i*md->nq+j]) > 1e-6) fprintf(stderr, "      q[%d][%d] %g %g\n", i, j, A_q[i*md->nq+j], B_q[i*md->nq+j]);
            for (int i = 0; i < md->nu; ++i) for (int j = 0; j < md->nu; ++j) if (fabs(A_u[i*md->nu+j]-B_u[i*md->nu+j]) > 1e-6) fprintf(stderr, "      u[%d][%d] %g %g\n", i, j, A_u[i*md->nu+j], B_u[i*md->nu+j]);
            for (int b = 1; b < md->nb; ++b) fprintf(stderr, "      body %d kind %s u0 %d q0 %d q %g\n", b, test_kind_name(md->kind[b]), mbk_matter_get_body_u_start(md->m, md->s, b), mbk_matter_get_body_q_start(md->m, md->s, b), mbk_state_get_q(md->s)[mbk_matter_get_body_q_start(md->m, md->s, b)]);
        }
    }
}

/* A body index in [lo, hi] drawn at random. */
static int rbody(int lo, int hi) { return lo + test_rand_index(&rng_state, hi - lo + 1); }

/* Random trees with every built-in force element but contact (test_contact). */
static void test_force_elements(void)
{
    static const int all[] = {K_PIN, K_SLIDER, K_TRANSLATION, K_BALL, K_FREE, K_SCREW, K_UNIVERSAL,
                              K_CYLINDER, K_PLANAR, K_GIMBAL, K_BUSHING, K_FUNCTION, K_PIN, K_PIN};
    for (int euler = 0; euler < 2; ++euler)
        for (int rep = 0; rep < 3; ++rep) {
            model md;
            build_tree(&md, 7, euler, all, (int)(sizeof all / sizeof all[0]));
            mbk_forces *f = md.f;
            const int nb = md.nb - 1;
            for (int k = 0; k < 2; ++k) {
                for (int t = 0; t < 3; ++t) {
                    where *w = &md.w[md.nw++];
                    w->kind = 0;
                    w->b[0] = rbody(0, nb);
                    do w->b[1] = rbody(1, nb); while (w->b[1] == w->b[0]);
                    w->st[0] = rvec(0.5);
                    w->st[1] = rvec(0.5);
                    int rc = t == 0   ? mbk_force_add_two_point_linear_spring(f, w->b[0], w->st[0], w->b[1], w->st[1], 30.0, 0.4)
                             : t == 1 ? mbk_force_add_two_point_linear_damper(f, w->b[0], w->st[0], w->b[1], w->st[1], 3.0)
                                      : mbk_force_add_two_point_constant_force(f, w->b[0], w->st[0], w->b[1], w->st[1], 7.0);
                    CHECK(rc >= 0);
                }
                CHECK(mbk_force_add_constant_force(f, rbody(1, nb), rvec(0.5), rvec(5.0)) >= 0);
                CHECK(mbk_force_add_constant_torque(f, rbody(1, nb), rvec(5.0)) >= 0);
                const double kk[6] = {20, 30, 40, 50, 60, 70}, cc[6] = {1, 2, 3, 4, 5, 6};
                where *w = &md.w[md.nw++];
                w->kind = 1;
                w->b[0] = rbody(0, nb);
                do w->b[1] = rbody(1, nb); while (w->b[1] == w->b[0]);
                w->X[0] = mbk_transform_make(rrot(), rvec(0.3));
                w->X[1] = mbk_transform_make(rrot(), rvec(0.3));
                CHECK(mbk_force_add_linear_bushing(f, w->b[0], &w->X[0], w->b[1], &w->X[1], kk, cc) >= 0);
            }
            for (int b = 1; b <= nb; ++b)
                if (md.kind[b] == K_PIN || md.kind[b] == K_SLIDER || md.kind[b] == K_UNIVERSAL) {
                    CHECK(mbk_force_add_mobility_linear_spring(f, b, 0, 15.0, 0.2) >= 0);
                    CHECK(mbk_force_add_mobility_linear_damper(f, b, 0, 1.5) >= 0);
                    CHECK(mbk_force_add_mobility_constant_force(f, b, 0, 2.0) >= 0);
                    CHECK(mbk_force_add_mobility_linear_stop(f, b, 0, 400.0, 0.7, -0.3, 0.3) >= 0);
                    where *w = &md.w[md.nw++];
                    w->kind = 2;
                    w->b[0] = b;
                    w->lo = -0.3;
                    w->hi = 0.3;
                }
            finish_model(&md);
            double wr = 0, wa = 0, wf = 0;
            for (int trial = 0; trial < 10; ++trial) {
                randomize_ok(&md, 1.0);
                check_forces(&md, &wf, "elements");
                check_state(&md, &wr, &wa, "elements");
            }
            if (getenv("MBK_TEST_VERBOSE")) printf("  elements %s df %.2g dr %.2g dudot %.2g\n", euler ? "euler" : "quat ", wf, wr, wa);
            CHECK(wf <= TOL);
            CHECK(wr <= TOL);
            CHECK(wa <= TOL);
            destroy_model(&md);
        }
}

/* Hunt-Crossley contact: two free bodies (and a pendulum under one) with a sphere
   each, pressed into the ground plane z = 0.1 by 0.01..0.05 and sliding at speeds
   away from the friction law's kinks (0 and the transition velocity). */
static void test_contact(void)
{
    const double params[6] = {2e6, 0.5, 0.9, 0.6, 0.1, 0.4}, r = 0.1, h = 0.1;
    const mbk_vec3 centre[3] = {{0.1, -0.05, 0.2}, {-0.1, 0.1, -0.15}, {0.3, 0.0, 0.05}};
    for (int euler = 0; euler < 2; ++euler) {
        model md;
        memset(&md, 0, sizeof md);
        md.sys = mbk_multibody_create("contact");
        mbk_matter *m = mbk_multibody_upd_matter(md.sys);
        md.m = m;
        md.f = mbk_multibody_upd_forces(md.sys);
        md.euler = euler;
        mbk_transform I = mbk_transform_identity(), X = mbk_transform_from_p(mbk_vec3_make(0.2, 0.1, 0));
        mbk_mass_props mp = random_mass_props();
        CHECK_INT(mbk_matter_add_body(m, 0, &I, &mp, &I, mbk_mobilizer_free()), 1);
        CHECK_INT(mbk_matter_add_body(m, 0, &I, &mp, &I, mbk_mobilizer_free()), 2);
        CHECK_INT(mbk_matter_add_body(m, 2, &X, &mp, &I, mbk_mobilizer_pin()), 3);
        md.kind[1] = md.kind[2] = K_FREE;
        md.kind[3] = K_PIN;
        md.nb = 4;
        mbk_force_add_gravity(md.f, mbk_vec3_make(0, 0, -9.81));
        for (int b = 1; b <= 3; ++b) CHECK(mbk_force_add_hunt_crossley_sphere(md.f, b, centre[b - 1], r, h, params) >= 0);
        finish_model(&md);
        double wr = 0, wa = 0, wf = 0;
        /* depths of a few cm against steps of 1e-3 would leave the differences' own
           error (h / depth)^4 near 1e-7: a tenth of the step */
        fd_step = 1e-4;
        for (int trial = 0; trial < 20; ++trial) {
            for (int tries = 0; tries < 1000; ++tries) {
                randomize(&md, 1.0);
                /* body 1 and 2's heights: their spheres 0.01..0.05 into the plane */
                for (int b = 1; b <= 2; ++b) {
                    mbk_vec3 C;
                    mbk_system_realize(md.sys, md.s, MBK_STAGE_POSITION);
                    mbk_matter_get_station_location(md.m, md.s, b, centre[b - 1], &C);
                    double *q = mbk_state_upd_q(md.s);
                    q[mbk_matter_get_body_q_start(md.m, md.s, b) + (euler ? 5 : 6)] += h + r - (0.03 + 0.02 * rnd()) - C.z;
                }
                mbk_system_realize(md.sys, md.s, MBK_STAGE_VELOCITY);
                int ok = 1;
                for (int b = 1; b <= 3 && ok; ++b) {
                    mbk_vec3 C, v;
                    mbk_transform Xb;
                    mbk_matter_get_station_location(md.m, md.s, b, centre[b - 1], &C);
                    double depth = r - (C.z - h);
                    if (b == 3) ok = depth < -0.01 || depth > 0.01;
                    if (depth <= 0) continue;
                    mbk_vec3 P = mbk_vec3_make(C.x, C.y, h - 0.5 * depth);
                    mbk_matter_get_body_transform(md.m, md.s, b, &Xb);
                    mbk_matter_get_station_velocity(md.m, md.s, b, mbk_transform_invert_apply_point(Xb, P), &v);
                    double vs = hypot(v.x, v.y);
                    ok = ok && vs > 0.05 && fabs(vs - params[5]) > 0.05 && 1.0 + 1.5 * params[1] * -v.z > 0.1;
                }
                if (ok) break;
            }
            check_forces(&md, &wf, "contact");
            check_state(&md, &wr, &wa, "contact");
        }
        fd_step = 1e-3;
        if (getenv("MBK_TEST_VERBOSE")) printf("  contact  %s df %.2g dr %.2g dudot %.2g\n", euler ? "euler" : "quat ", wf, wr, wa);
        CHECK(wf <= TOL);
        CHECK(wr <= TOL);
        CHECK(wa <= TOL);
        destroy_model(&md);
    }
}

/* ---- custom pieces: differentiated numerically, and flagged ------------ */

/* A custom ball on a quaternion, with no calc_derivatives. */
static void cb_default(const void *impl, bool euler, double *q) { (void)impl; (void)euler; q[0] = 1; q[1] = q[2] = q[3] = 0; }
static void cb_X(const void *impl, bool euler, const double *q, mbk_transform *X)
{
    (void)impl; (void)euler;
    X->R = mbk_quat_to_mat33(mbk_quat_make(q[0], q[1], q[2], q[3]));
    X->p = mbk_vec3_make(0.1, 0.0, 0.05); /* M offset from F: a ball with an arm */
}
static void cb_H(const void *impl, bool euler, const double *q, mbk_spatial_vec *H)
{
    (void)impl; (void)euler; (void)q;
    for (int j = 0; j < 3; ++j) H[j] = mbk_spatial_vec_make(mbk_vec3_make(j == 0, j == 1, j == 2), mbk_vec3_zero());
}
static void cb_qdot(const void *impl, bool euler, const double *q, const double *u, double *qd)
{
    (void)impl; (void)euler;
    mbk_quat r = mbk_quat_mul(mbk_quat_make(0, u[0], u[1], u[2]), mbk_quat_make(q[0], q[1], q[2], q[3]));
    qd[0] = 0.5 * r.w; qd[1] = 0.5 * r.x; qd[2] = 0.5 * r.y; qd[3] = 0.5 * r.z;
}
static void cb_qdotdot(const void *impl, bool euler, const double *q, const double *u, const double *ud, double *qdd)
{
    double a[4], b[4];
    cb_qdot(impl, euler, q, ud, a);
    mbk_quat qd;
    cb_qdot(impl, euler, q, u, b);
    qd = mbk_quat_mul(mbk_quat_make(0, u[0], u[1], u[2]), mbk_quat_make(b[0], b[1], b[2], b[3]));
    qdd[0] = a[0] + 0.5 * qd.w; qdd[1] = a[1] + 0.5 * qd.x; qdd[2] = a[2] + 0.5 * qd.y; qdd[3] = a[3] + 0.5 * qd.z;
}
static void cb_normalize(const void *impl, bool euler, double *q)
{
    (void)impl; (void)euler;
    mbk_quat n = mbk_quat_normalize(mbk_quat_make(q[0], q[1], q[2], q[3]));
    q[0] = n.w; q[1] = n.x; q[2] = n.y; q[3] = n.z;
}
static const mbk_mobilizer_ops custom_ball_ops = {
    .name = "custom ball", .nu = 3, .nq = 4, .default_q = cb_default, .calc_X_FM = cb_X, .calc_H_FM = cb_H,
    .calc_qdot = cb_qdot, .calc_qdotdot = cb_qdotdot, .normalize_q = cb_normalize};

/* A custom element on u[0] of a Pin: tau = -k sin(q) - c u^3, with or without its
   Jacobian (the impl says which), and one that depends on positions only. */
typedef struct cust_force {
    int body;
    double k, c;
    int fail; /* calc_jacobian returns this when nonzero */
} cust_force;
static int cf_force(void *impl, const mbk_force_ctx *c, const mbk_state *s, mbk_spatial_vec *F, double *tau)
{
    (void)F;
    const cust_force *cf = impl;
    const mbk_matter *m = mbk_force_ctx_get_matter(c);
    double q = mbk_state_get_q(s)[mbk_matter_get_body_q_start(m, s, cf->body)];
    int iu = mbk_matter_get_body_u_start(m, s, cf->body);
    double u = mbk_state_get_u(s)[iu];
    tau[iu] += -cf->k * sin(q) - cf->c * u * u * u;
    return 0;
}
static int cf_jacobian(void *impl, const mbk_force_ctx *c, const mbk_state *s, double *df_dq, int ldq, double *df_du, int ldu)
{
    const cust_force *cf = impl;
    if (cf->fail) return mbk_set_error(MBK_EINVAL, "planted failure"), cf->fail;
    const mbk_matter *m = mbk_force_ctx_get_matter(c);
    int iq = mbk_matter_get_body_q_start(m, s, cf->body), iu = mbk_matter_get_body_u_start(m, s, cf->body);
    double q = mbk_state_get_q(s)[iq], u = mbk_state_get_u(s)[iu];
    if (df_dq) df_dq[iu * ldq + iq] += -cf->k * cos(q);
    if (df_du) df_du[iu * ldu + iu] += -3.0 * cf->c * u * u;
    return 0;
}
/* a body force pulling body b towards Ground's origin (positions only) */
static int cf_pull(void *impl, const mbk_force_ctx *c, const mbk_state *s, mbk_spatial_vec *F, double *tau)
{
    (void)tau;
    const cust_force *cf = impl;
    mbk_transform X;
    mbk_matter_get_body_transform(mbk_force_ctx_get_matter(c), s, cf->body, &X);
    F[cf->body].v = mbk_vec3_add(F[cf->body].v, mbk_vec3_scale(X.p, -cf->k));
    return 0;
}
static const mbk_force_ops cf_numeric_ops = {.name = "custom numeric", .calc_force = cf_force};
static const mbk_force_ops cf_exact_ops = {.name = "custom exact", .calc_force = cf_force, .calc_jacobian = cf_jacobian};
static const mbk_force_ops cf_pull_ops = {.name = "custom pull", .calc_force = cf_pull, .depends_only_on_positions = true};

/* A force subsystem of its own (not an element): a drag on every body, F = -d v. */
static int drag_dynamics(void *impl, const mbk_subsystem_ctx *c, mbk_state *s)
{
    const double *d = impl;
    const mbk_system *sys = mbk_subsystem_ctx_get_system(c);
    const mbk_matter *m = mbk_multibody_get_matter(sys);
    mbk_spatial_vec *F = mbk_multibody_upd_body_forces(sys, s);
    for (int b = 1; b < mbk_matter_get_num_bodies(m); ++b) {
        mbk_vec3 v;
        mbk_matter_get_station_velocity(m, s, b, mbk_vec3_make(0.1, 0.2, 0.0), &v);
        mbk_transform X;
        mbk_matter_get_body_transform(m, s, b, &X);
        mbk_vec3 r = mbk_mat33_mul_vec(X.R, mbk_vec3_make(0.1, 0.2, 0.0));
        mbk_vec3 f = mbk_vec3_scale(v, -*d);
        F[b].w = mbk_vec3_add(F[b].w, mbk_vec3_cross(r, f));
        F[b].v = mbk_vec3_add(F[b].v, f);
    }
    return 0;
}
static const mbk_subsystem_ops drag_ops = {.name = "drag", .realize_dynamics = drag_dynamics};

/* A first-order lag z' = u0 - z whose z pushes on u[0] (a subsystem with z). */
typedef struct lag { int z0; } lag;
static int lag_topology(void *impl, const mbk_subsystem_ctx *c, mbk_state *s)
{
    const double z = 0.3;
    ((lag *)impl)->z0 = mbk_state_allocate_z(s, mbk_subsystem_ctx_get_index(c), 1, &z);
    return ((lag *)impl)->z0 < 0 ? -1 : 0;
}
static int lag_dynamics(void *impl, const mbk_subsystem_ctx *c, mbk_state *s)
{
    (void)impl;
    const mbk_system *sys = mbk_subsystem_ctx_get_system(c);
    int k = mbk_subsystem_ctx_get_index(c);
    double z = mbk_state_get_subsystem_z(s, k)[0];
    mbk_multibody_upd_mobility_forces(sys, s)[0] += 5.0 * z;
    double u0 = mbk_state_get_u(s)[0];
    mbk_state_upd_subsystem_zdot(s, k)[0] = u0 * u0 - z;
    return 0;
}
static const mbk_subsystem_ops lag_ops = {.name = "lag", .realize_topology = lag_topology, .realize_dynamics = lag_dynamics};

/* ydot at the State (for the differences of the whole Jacobian): y = [q u z]. */
static void fd_ydot_jacobian(model *md, double *J)
{
    int ny = mbk_state_get_ny(md->s);
    static double y0[MAX_Q + MAX_U + 8], acc[MAX_Q + MAX_U + 8];
    memcpy(y0, mbk_state_get_y(md->s), (size_t)ny * sizeof *y0);
    for (int j = 0; j < ny; ++j) {
        double h1 = 1e-3 * fmax(1.0, fabs(y0[j]));
        memset(acc, 0, sizeof acc);
        for (int r = 0; r < 2; ++r) {
            double h = r ? 0.5 * h1 : h1, w = (r ? 4.0 / 3.0 : -1.0 / 3.0) * 0.5 / h;
            for (int sg = -1; sg <= 1; sg += 2) {
                mbk_state_upd_y(md->s)[j] = y0[j] + sg * h;
                CHECK_INT(mbk_system_realize(md->sys, md->s, MBK_STAGE_ACCELERATION), MBK_OK);
                const double *f = mbk_state_get_ydot(md->s);
                for (int i = 0; i < ny; ++i) acc[i] += sg * w * f[i];
            }
        }
        mbk_state_upd_y(md->s)[j] = y0[j];
        for (int i = 0; i < ny; ++i) J[i * ny + j] = acc[i];
    }
    CHECK_INT(mbk_system_realize(md->sys, md->s, MBK_STAGE_ACCELERATION), MBK_OK);
}

/* The analytic ydot Jacobian against differences, and against the _fd one's accuracy. */
static void check_ydot_jacobian(model *md, double *worst)
{
    int ny = mbk_state_get_ny(md->s);
    static double A[(MAX_Q + MAX_U + 8) * (MAX_Q + MAX_U + 8)], B[(MAX_Q + MAX_U + 8) * (MAX_Q + MAX_U + 8)];
    for (int i = 0; i < ny * ny; ++i) A[i] = 1e300; /* every entry must be written */
    CHECK_INT(mbk_system_calc_ydot_jacobian(md->sys, md->s, A), MBK_OK);
    fd_ydot_jacobian(md, B);
    *worst = fmax(*worst, rel_err(A, B, ny * ny));
}

/* Custom mobilizers and force elements without derivative ops, a force subsystem of
   one's own, a subsystem with z: numeric on their own, flagged, and still within the
   tolerance; a custom element with its Jacobian is exact. */
static void test_numeric_pieces(void)
{
    for (int variant = 0; variant < 4; ++variant) {
        model md;
        static const int kinds[] = {K_PIN, K_BALL, K_UNIVERSAL, K_PIN};
        build_tree(&md, 5, 0, kinds, 4);
        mbk_matter *m = mbk_multibody_upd_matter(md.sys);
        static cust_force cf[3];
        static double drag = 0.7;
        static lag lg;
        mbk_transform X = mbk_transform_from_p(mbk_vec3_make(0.3, 0.1, -0.2)), I = mbk_transform_identity();
        mbk_mass_props mp = random_mass_props();
        int pin = mbk_matter_add_body(m, 1, &X, &mp, &I, mbk_mobilizer_pin());
        md.kind[pin] = K_PIN;
        int cb = mbk_matter_add_body(m, pin, &X, &mp, &I, mbk_mobilizer_custom(&custom_ball_ops, NULL));
        md.kind[cb] = K_BALL; /* randomize treats its q as a quaternion */
        md.nb = cb + 1;
        cf[0] = (cust_force){pin, 3.0, 0.4, 0};
        cf[1] = (cust_force){pin, 2.0, 0.3, 0};
        cf[2] = (cust_force){cb, 4.0, 0.0, 0};
        int expect_forces = 0, expect_sub = 0;
        if (variant == 0) { /* exact custom element only */
            CHECK(mbk_force_add_custom(md.f, &cf_exact_ops, &cf[0]) >= 0);
        } else if (variant == 1) {
            CHECK(mbk_force_add_custom(md.f, &cf_numeric_ops, &cf[1]) >= 0);
            CHECK(mbk_force_add_custom(md.f, &cf_pull_ops, &cf[2]) >= 0);
            expect_forces = 2;
        } else if (variant == 2) {
            CHECK(mbk_system_add_subsystem(md.sys, &drag_ops, &drag) >= 0);
            CHECK(mbk_force_add_custom(md.f, &cf_exact_ops, &cf[0]) >= 0);
            expect_sub = 1;
        } else {
            CHECK(mbk_system_add_subsystem(md.sys, &lag_ops, &lg) >= 0);
            CHECK(mbk_force_add_custom(md.f, &cf_pull_ops, &cf[2]) >= 0);
            expect_sub = 1;
            expect_forces = 1;
        }
        finish_model(&md);
        mbk_derivative_info info;
        CHECK_INT(mbk_system_get_derivative_info(md.sys, md.s, &info), MBK_OK);
        CHECK(info.multibody);
        CHECK(!info.exact);
        CHECK_INT(info.numeric_mobilizers, 1);
        CHECK_INT(info.first_numeric_body, cb);
        CHECK_INT(info.numeric_force_elements, expect_forces);
        CHECK_INT(info.numeric_subsystems, expect_sub);
        CHECK(info.numeric_z == (variant == 3));
        CHECK(!info.numeric_constraints);
        double wr = 0, wa = 0, wf = 0, wy = 0;
        for (int trial = 0; trial < 5; ++trial) {
            randomize(&md, 1.0);
            if (variant != 3) {
                check_forces(&md, &wf, "numeric pieces");
                check_state(&md, &wr, &wa, "numeric pieces");
            }
            check_ydot_jacobian(&md, &wy);
        }
        if (getenv("MBK_TEST_VERBOSE")) printf("  numeric pieces %d: df %.2g dr %.2g dudot %.2g ydot %.2g\n", variant, wf, wr, wa, wy);
        CHECK(wf <= TOL);
        CHECK(wr <= TOL);
        CHECK(wa <= TOL);
        CHECK(wy <= TOL);
        destroy_model(&md);
    }
}

/* Constraints: the constrained udot's derivatives (their part numeric) and the ydot
   Jacobian, on trees with a ball, a rod and a coordinate coupler. */
static void test_constraints(void)
{
    for (int euler = 0; euler < 2; ++euler) {
        model md;
        build_tree(&md, 0, euler, NULL, 0);
        mbk_matter *m = mbk_multibody_upd_matter(md.sys);
        mbk_transform X = mbk_transform_from_p(mbk_vec3_make(0.3, 0.1, -0.2)), I = mbk_transform_identity();
        /* a free body with a pin and a ball below it, a universal on the side; a
           separate chain of two pins */
        static const int kinds[7] = {K_WELD, K_FREE, K_PIN, K_BALL, K_UNIVERSAL, K_PIN, K_PIN};
        static const int parents[7] = {-1, 0, 1, 2, 1, 0, 5};
        for (int b = 1; b < 7; ++b) {
            mbk_mass_props mp = random_mass_props();
            mbk_transform X_PF = mbk_transform_make(rrot(), rvec(0.5));
            CHECK_INT(mbk_matter_add_body(m, parents[b], b == 1 ? &I : &X_PF, &mp, &I, make_mobilizer(kinds[b])), b);
            md.kind[b] = kinds[b];
        }
        const int p1 = 5, p2 = 6;
        md.nb = 7;
        (void)X;
        CHECK(mbk_constraint_add_ball(m, 3, mbk_vec3_make(0.2, 0, 0), 0, mbk_vec3_make(0, 0.1, 0.3)) >= 0);
        CHECK(mbk_constraint_add_rod(m, 0, mbk_vec3_make(0.5, 0.5, 0), 4, mbk_vec3_make(0.1, 0, 0), 1.2) >= 0);
        const double coef[3] = {0.7, -1.0, 0.1};
        const int cb[2] = {p1, p2}, cq[2] = {0, 0};
        CHECK(mbk_constraint_add_coordinate_coupler(m, mbk_function_linear(coef, 2), cb, cq, 2) >= 0);
        CHECK(mbk_force_add_mobility_linear_damper(md.f, p2, 0, 0.8) >= 0);
        finish_model(&md);
        mbk_derivative_info info;
        CHECK_INT(mbk_system_get_derivative_info(md.sys, md.s, &info), MBK_OK);
        CHECK(info.numeric_constraints);
        CHECK(!info.exact);
        double wr = 0, wa = 0, wy = 0;
        for (int trial = 0; trial < 10; ++trial) {
            randomize(&md, 1.0);
            check_state(&md, &wr, &wa, "constraints");
            if (trial < 3) check_ydot_jacobian(&md, &wy);
        }
        if (getenv("MBK_TEST_VERBOSE")) printf("  constraints %s dr %.2g dudot %.2g ydot %.2g\n", euler ? "euler" : "quat ", wr, wa, wy);
        CHECK(wr <= TOL);
        CHECK(wa <= TOL);
        CHECK(wy <= TOL);
        destroy_model(&md);
    }
}

/* ---- the humanoid (as ../shared/ANCHORS.md): free base, 4 limbs of 6 Pins, 3-Pin torso */

/* A Pin body: 1 kg box 1 x 0.1 x 0.1 along x, COM at (0.5, 0, 0); axis y or z. */
static void add_pin_link(mbk_matter *m, int parent, int axis_y, double x, double y, double z)
{
    mbk_mat33 R = axis_y ? mbk_mat33_from_axis_angle(mbk_vec3_make(1, 0, 0), -1.5707963267948966) : mbk_mat33_identity();
    mbk_transform X_PF = mbk_transform_make(R, mbk_vec3_make(x, y, z));
    mbk_transform X_BM = mbk_transform_make(R, mbk_vec3_zero());
    mbk_mass_props mp = mbk_mass_props_from_central(1.0, mbk_vec3_make(0.5, 0, 0), mbk_mat33_diag(0.02 / 12, 1.01 / 12, 1.01 / 12));
    CHECK(mbk_matter_add_body(m, parent, &X_PF, &mp, &X_BM, mbk_mobilizer_pin()) > 0);
}

static void build_humanoid(model *md, int euler)
{
    memset(md, 0, sizeof *md);
    md->sys = mbk_multibody_create("humanoid");
    mbk_matter *m = mbk_multibody_upd_matter(md->sys);
    md->m = m;
    md->f = mbk_multibody_upd_forces(md->sys);
    md->euler = euler;
    mbk_transform I = mbk_transform_identity();
    mbk_mass_props base = mbk_mass_props_from_central(1.0, mbk_vec3_zero(), mbk_mat33_diag(0.02 / 12, 1.01 / 12, 1.01 / 12));
    CHECK_INT(mbk_matter_add_body(m, 0, &I, &base, &I, mbk_mobilizer_free()), 1);
    md->kind[1] = K_FREE;
    static const double attach[4][2] = {{0.5, 0.05}, {0.5, -0.05}, {-0.5, 0.05}, {-0.5, -0.05}};
    int k = 2;
    for (int limb = 0; limb < 4; ++limb)
        for (int j = 0; j < 6; ++j, ++k) {
            if (j == 0) add_pin_link(m, 1, 1, attach[limb][0], attach[limb][1], 0.0);
            else add_pin_link(m, k - 1, j % 2 == 0, 1.0, 0.0, 0.0);
            md->kind[k] = K_PIN;
        }
    for (int j = 0; j < 3; ++j, ++k) {
        if (j == 0) add_pin_link(m, 1, 1, 0.0, 0.0, 0.05);
        else add_pin_link(m, k - 1, j % 2 == 0, 1.0, 0.0, 0.0);
        md->kind[k] = K_PIN;
    }
    md->nb = k;
    mbk_force_add_gravity(md->f, mbk_vec3_make(0, 0, -9.81));
}

static void test_humanoid(void)
{
    for (int euler = 0; euler < 2; ++euler) {
        model md;
        build_humanoid(&md, euler);
        finish_model(&md);
        CHECK_INT(md.nu, 33);
        CHECK_INT(md.nq, euler ? 33 : 34);
        double wr = 0, wa = 0, wy = 0;
        for (int trial = 0; trial < 20; ++trial) {
            randomize(&md, 1.0);
            check_state(&md, &wr, &wa, "humanoid");
            if (trial < 3) check_ydot_jacobian(&md, &wy);
        }
        if (getenv("MBK_TEST_VERBOSE")) printf("  humanoid %s dr %.2g dudot %.2g ydot %.2g\n", euler ? "euler" : "quat ", wr, wa, wy);
        CHECK(wr <= TOL);
        CHECK(wa <= TOL);
        CHECK(wy <= TOL);
        destroy_model(&md);
    }
}

/* Larger random trees mixing every mobilizer kind, with quaternions and Euler angles. */
static void test_mixed_trees(void)
{
    static const int all[] = {K_WELD, K_PIN, K_SLIDER, K_TRANSLATION, K_BALL, K_FREE, K_SCREW, K_UNIVERSAL,
                              K_CYLINDER, K_PLANAR, K_GIMBAL, K_BUSHING, K_FUNCTION};
    for (int euler = 0; euler < 2; ++euler)
        for (int rep = 0; rep < 4; ++rep) {
            model md;
            build_tree(&md, 20, euler, all, (int)(sizeof all / sizeof all[0]));
            finish_model(&md);
            double wr = 0, wa = 0, wy = 0;
            for (int trial = 0; trial < 5; ++trial) {
                randomize(&md, 1.0);
                check_state(&md, &wr, &wa, "mixed tree");
                if (trial == 0) check_ydot_jacobian(&md, &wy);
            }
            if (getenv("MBK_TEST_VERBOSE")) printf("  mixed tree %s dr %.2g dudot %.2g ydot %.2g\n", euler ? "euler" : "quat ", wr, wa, wy);
            CHECK(wr <= TOL);
            CHECK(wa <= TOL);
            CHECK(wy <= TOL);
            destroy_model(&md);
        }
}

/* ---- exact identities ----------------------------------------------------------- */

/* r is M udot + (terms without udot), so dr/dq(udot) - dr/dq(0) = d(M(q) udot)/dq: against
   differences of the CRBA mass matrix times udot; and dr/du does not depend on udot. */
static void test_mass_matrix_identity(void)
{
    static const int all[] = {K_PIN, K_BALL, K_FREE, K_UNIVERSAL, K_GIMBAL, K_PLANAR};
    model md;
    build_tree(&md, 8, 0, all, 6);
    finish_model(&md);
    static double A0[MAX_U * MAX_Q], A1[MAX_U * MAX_Q], U0[MAX_U * MAX_U], U1[MAX_U * MAX_U], B[MAX_U * MAX_Q];
    static double M[MAX_U * MAX_U];
    double worst = 0.0, worst_u = 0.0, worst_m = 0.0;
    for (int trial = 0; trial < 20; ++trial) {
        randomize(&md, 1.0);
        double v[MAX_U], zero[MAX_U] = {0}, q0[MAX_Q];
        for (int i = 0; i < md.nu; ++i) v[i] = rnd();
        CHECK_INT(mbk_system_calc_residual_derivatives(md.sys, md.s, v, A1, U1), MBK_OK);
        CHECK_INT(mbk_system_calc_residual_derivatives(md.sys, md.s, zero, A0, U0), MBK_OK);
        /* r(udot) - r(0) is M udot exactly (the inverse dynamics is linear in udot) */
        double r1[MAX_U], r0[MAX_U];
        const double *tau = mbk_multibody_get_mobility_forces(md.sys, md.s);
        const mbk_spatial_vec *F = mbk_multibody_get_body_forces(md.sys, md.s);
        mbk_matter_calc_residual_force(md.m, md.s, tau, F, v, r1);
        mbk_matter_calc_residual_force(md.m, md.s, tau, F, zero, r0);
        CHECK_INT(mbk_matter_calc_mass_matrix(md.m, md.s, M), MBK_OK);
        for (int i = 0; i < md.nu; ++i) {
            double Mv = 0.0;
            for (int j = 0; j < md.nu; ++j) Mv += M[i * md.nu + j] * v[j];
            worst_m = fmax(worst_m, fabs(r1[i] - r0[i] - Mv) / fmax(1.0, fabs(Mv)));
        }
        /* d(M v)/dq by differences of the CRBA */
        memcpy(q0, mbk_state_get_q(md.s), (size_t)md.nq * sizeof *q0);
        for (int j = 0; j < md.nq; ++j) {
            double h1 = 1e-3 * fmax(1.0, fabs(q0[j])), acc[MAX_U] = {0};
            for (int r = 0; r < 2; ++r) {
                double h = r ? 0.5 * h1 : h1, w = (r ? 4.0 / 3.0 : -1.0 / 3.0) * 0.5 / h;
                for (int sg = -1; sg <= 1; sg += 2) {
                    mbk_state_upd_q(md.s)[j] = q0[j] + sg * h;
                    mbk_system_realize(md.sys, md.s, MBK_STAGE_POSITION);
                    mbk_matter_calc_mass_matrix(md.m, md.s, M);
                    for (int i = 0; i < md.nu; ++i)
                        for (int l = 0; l < md.nu; ++l) acc[i] += sg * w * M[i * md.nu + l] * v[l];
                }
            }
            mbk_state_upd_q(md.s)[j] = q0[j];
            for (int i = 0; i < md.nu; ++i) B[i * md.nq + j] = acc[i];
        }
        mbk_system_realize(md.sys, md.s, MBK_STAGE_ACCELERATION);
        for (int i = 0; i < md.nu * md.nq; ++i) A1[i] -= A0[i];
        worst = fmax(worst, rel_err(A1, B, md.nu * md.nq));
        worst_u = fmax(worst_u, rel_err(U1, U0, md.nu * md.nu));
    }
    if (getenv("MBK_TEST_VERBOSE")) printf("  dr/dudot = M: r %.2g, d(Mv)/dq %.2g, dr/du %.2g\n", worst_m, worst, worst_u);
    CHECK(worst_m <= 1e-12);
    CHECK(worst <= TOL);
    CHECK(worst_u <= 1e-12);
    destroy_model(&md);
}

/* One body at u = 0 under forces that do not depend on u: dudot/du = 0 exactly. */
static void test_zero_velocity(void)
{
    for (int euler = 0; euler < 2; ++euler) {
        model md;
        static const int kinds[1] = {K_FREE};
        build_tree(&md, 1, euler, kinds, 1);
        CHECK(mbk_force_add_two_point_linear_spring(md.f, 0, mbk_vec3_make(0, 0, 1), 1, mbk_vec3_make(0.1, 0.2, 0.3), 50, 0.5) >= 0);
        finish_model(&md);
        static double A_u[36], A_q[42];
        double worst = 0.0;
        for (int trial = 0; trial < 20; ++trial) {
            randomize(&md, 0.0);
            CHECK_INT(mbk_system_calc_acceleration_derivatives(md.sys, md.s, A_q, A_u), MBK_OK);
            for (int i = 0; i < 36; ++i) worst = fmax(worst, fabs(A_u[i]));
        }
        CHECK(worst == 0.0);
        destroy_model(&md);
    }
}

/* A pendulum (Pin about z, COM at l along x, gravity -g y): theta'' = -m g l cos(theta) / J
   - c theta' / J with J = Izz + m l^2, so d theta''/d theta = m g l sin(theta) / J and
   d theta''/d theta' = -c / J. */
static void test_pendulum(void)
{
    const double mass = 1.7, l = 0.6, Izz = 0.05, g = 9.81, c = 0.3;
    model md;
    memset(&md, 0, sizeof md);
    md.sys = mbk_multibody_create("pendulum");
    mbk_matter *m = mbk_multibody_upd_matter(md.sys);
    md.m = m;
    md.f = mbk_multibody_upd_forces(md.sys);
    mbk_transform I = mbk_transform_identity();
    mbk_mass_props mp = mbk_mass_props_from_central(mass, mbk_vec3_make(l, 0, 0), mbk_mat33_diag(0.03, 0.04, Izz));
    CHECK_INT(mbk_matter_add_body(m, 0, &I, &mp, &I, mbk_mobilizer_pin()), 1);
    md.kind[1] = K_PIN;
    md.nb = 2;
    mbk_force_add_gravity(md.f, mbk_vec3_make(0, -g, 0));
    mbk_force_add_mobility_linear_damper(md.f, 1, 0, c);
    finish_model(&md);
    const double J = Izz + mass * l * l;
    double worst = 0.0;
    for (int trial = 0; trial < 20; ++trial) {
        double th = 3.0 * rnd(), w = 2.0 * rnd(), dq, du;
        mbk_state_upd_q(md.s)[0] = th;
        mbk_state_upd_u(md.s)[0] = w;
        CHECK_INT(mbk_system_calc_acceleration_derivatives(md.sys, md.s, &dq, &du), MBK_OK);
        worst = fmax(worst, fabs(dq - mass * g * l * sin(th) / J) + fabs(du + c / J));
        CHECK_NEAR(mbk_state_get_udot(md.s)[0], (-mass * g * l * cos(th) - c * w) / J, 1e-13);
    }
    if (getenv("MBK_TEST_VERBOSE")) printf("  pendulum closed form %.2g\n", worst);
    CHECK(worst <= 1e-13);
    destroy_model(&md);
}

/* The check can fail: a custom element whose Jacobian has the sign of its stiffness
   term flipped is caught by the comparison with differences. */
static int cf_jacobian_wrong(void *impl, const mbk_force_ctx *c, const mbk_state *s, double *df_dq, int ldq,
                             double *df_du, int ldu)
{
    const cust_force *cf = impl;
    const mbk_matter *m = mbk_force_ctx_get_matter(c);
    int iq = mbk_matter_get_body_q_start(m, s, cf->body), iu = mbk_matter_get_body_u_start(m, s, cf->body);
    double q = mbk_state_get_q(s)[iq], u = mbk_state_get_u(s)[iu];
    if (df_dq) df_dq[iu * ldq + iq] += +cf->k * cos(q); /* planted: the sign is wrong */
    if (df_du) df_du[iu * ldu + iu] += -3.0 * cf->c * u * u;
    return 0;
}
static const mbk_force_ops cf_wrong_ops = {.name = "wrong sign", .calc_force = cf_force, .calc_jacobian = cf_jacobian_wrong};

static void test_planted_error(void)
{
    model md;
    static const int kinds[] = {K_PIN, K_BALL};
    build_tree(&md, 4, 0, kinds, 2);
    static cust_force cf = {1, 5.0, 0.5, 0};
    md.kind[1] = K_PIN; /* build_tree's first body may be a Ball: use it only when a Pin */
    CHECK(mbk_force_add_custom(md.f, &cf_wrong_ops, &cf) >= 0);
    finish_model(&md);
    if (mbk_matter_get_body_num_q(md.m, md.s, 1) == 1) {
        double wr = 0, wa = 0;
        randomize(&md, 1.0);
        /* the comparisons report the error (quietly here) */
        static double A_q[MAX_U * MAX_Q], A_u[MAX_U * MAX_U], B_q[MAX_U * MAX_Q], B_u[MAX_U * MAX_U];
        CHECK_INT(mbk_system_calc_acceleration_derivatives(md.sys, md.s, A_q, A_u), MBK_OK);
        fd_derivatives(&md, udot_value, NULL, fd_step, B_q, B_u);
        wa = rel_err(A_q, B_q, md.nu * md.nq);
        CHECK_INT(mbk_system_calc_residual_derivatives(md.sys, md.s, NULL, A_q, A_u), MBK_OK);
        fd_derivatives(&md, residual_value, mbk_state_get_udot(md.s), fd_step, B_q, B_u);
        wr = rel_err(A_q, B_q, md.nu * md.nq);
        if (getenv("MBK_TEST_VERBOSE")) printf("  planted sign error: dr %.2g dudot %.2g (must exceed %g)\n", wr, wa, TOL);
        CHECK(wr > 1e3 * TOL);
        CHECK(wa > 1e3 * TOL);
    } else {
        CHECK(0 && "the planted-error model needs a Pin at body 1");
    }
    destroy_model(&md);
}

/* ---- no allocation ---------------------------------------------------------------- */

static long n_alloc;
static void *count_malloc(size_t n, void *user) { (void)user; ++n_alloc; return malloc(n); }
static void *count_realloc(void *p, size_t n, void *user) { (void)user; ++n_alloc; return realloc(p, n); }
static void count_free(void *p, void *user) { (void)user; free(p); }

/* Every derivative function, numeric pieces and constraints included, allocates
   nothing once the State exists. */
static void test_no_allocation(void)
{
    mbk_set_allocator(count_malloc, count_realloc, count_free, NULL);
    model md;
    static const int all[] = {K_PIN, K_BALL, K_FREE, K_UNIVERSAL, K_GIMBAL, K_BUSHING, K_FUNCTION};
    build_tree(&md, 8, 0, all, 7);
    mbk_matter *m = mbk_multibody_upd_matter(md.sys);
    mbk_transform X = mbk_transform_from_p(mbk_vec3_make(0.3, 0.1, -0.2)), I = mbk_transform_identity();
    mbk_mass_props mp = random_mass_props();
    int pin = mbk_matter_add_body(m, 1, &X, &mp, &I, mbk_mobilizer_pin());
    int cb = mbk_matter_add_body(m, pin, &X, &mp, &I, mbk_mobilizer_custom(&custom_ball_ops, NULL));
    md.kind[pin] = K_PIN;
    md.kind[cb] = K_BALL;
    md.nb = cb + 1;
    static cust_force cf = {0, 3.0, 0.4, 0};
    cf.body = pin;
    static double drag = 0.5;
    static lag lg;
    CHECK(mbk_force_add_custom(md.f, &cf_numeric_ops, &cf) >= 0);
    CHECK(mbk_force_add_custom(md.f, &cf_exact_ops, &cf) >= 0);
    CHECK(mbk_force_add_two_point_linear_spring(md.f, 0, mbk_vec3_make(0, 0, 1), 3, mbk_vec3_zero(), 10, 0.5) >= 0);
    CHECK(mbk_force_add_hunt_crossley_sphere(md.f, 2, mbk_vec3_zero(), 0.2, 0.0, (const double[6]){1e6, 0.5, 0.9, 0.6, 0.1, 0.3}) >= 0);
    CHECK(mbk_system_add_subsystem(md.sys, &drag_ops, &drag) >= 0);
    CHECK(mbk_system_add_subsystem(md.sys, &lag_ops, &lg) >= 0);
    CHECK(mbk_constraint_add_rod(m, 0, mbk_vec3_make(0.5, 0.5, 0), cb, mbk_vec3_make(0.1, 0, 0), 1.2) >= 0);
    finish_model(&md);
    randomize(&md, 1.0);
    int ny = mbk_state_get_ny(md.s);
    static double A[MAX_U * MAX_Q], B[MAX_U * MAX_U], J[(MAX_Q + MAX_U + 8) * (MAX_Q + MAX_U + 8)];
    mbk_derivative_info info;
    /* once to warm up (nothing should be lazy, but be fair) */
    CHECK_INT(mbk_system_calc_ydot_jacobian(md.sys, md.s, J), MBK_OK);
    long before = n_alloc;
    for (int rep = 0; rep < 3; ++rep) {
        CHECK_INT(mbk_system_calc_residual_derivatives(md.sys, md.s, NULL, A, B), MBK_OK);
        CHECK_INT(mbk_system_calc_acceleration_derivatives(md.sys, md.s, A, B), MBK_OK);
        CHECK_INT(mbk_system_add_force_jacobians(md.sys, md.s, A, B), MBK_OK);
        CHECK_INT(mbk_system_calc_ydot_jacobian(md.sys, md.s, J), MBK_OK);
        CHECK_INT(mbk_system_calc_ydot_jacobian_fd(md.sys, md.s, J), MBK_OK);
        CHECK_INT(mbk_matter_calc_qdot_derivatives(md.m, md.s, J, ny, J + md.nq, ny), MBK_OK);
        CHECK_INT(mbk_system_get_derivative_info(md.sys, md.s, &info), MBK_OK);
        mbk_state_upd_q(md.s)[0] += 0.01;
    }
    if (!CHECK(n_alloc == before)) fprintf(stderr, "    %ld allocations\n", n_alloc - before);
    CHECK(info.numeric_force_elements == 1 && info.numeric_subsystems == 2 && info.numeric_constraints &&
          info.numeric_z && info.numeric_mobilizers == 1);
    destroy_model(&md);
    mbk_set_allocator(NULL, NULL, NULL, NULL);
}

/* A chain of n bodies under gravity: a Free base, then Pins, with a Ball every
   ball_every-th body (0: none); random frames and mass properties. */
static void build_floating_chain(model *md, const char *name, int n, int ball_every)
{
    memset(md, 0, sizeof *md);
    md->sys = mbk_multibody_create(name);
    mbk_matter *m = mbk_multibody_upd_matter(md->sys);
    md->m = m;
    md->f = mbk_multibody_upd_forces(md->sys);
    for (int i = 1; i <= n; ++i) {
        const int kind = i == 1 ? K_FREE : ball_every && i % ball_every == 0 ? K_BALL : K_PIN;
        mbk_transform X_PF = mbk_transform_make(rrot(), mbk_vec3_make(0.3, 0.05, 0.0)), I = mbk_transform_identity();
        mbk_mass_props mp = random_mass_props();
        CHECK_INT(mbk_matter_add_body(m, i - 1, i == 1 ? &I : &X_PF, &mp, &I, make_mobilizer(kind)), i);
        md->kind[i] = kind;
    }
    md->nb = n + 1;
    mbk_force_add_gravity(md->f, mbk_vec3_make(0, 0, -9.81));
    finish_model(md);
}

/* A long chain with a Free base and Ball joints along it (M^-1 through the sparse
   factor; test_deep_chain takes the articulated-body sweeps). */
static void test_long_chain(void)
{
    model md;
    build_floating_chain(&md, "long chain", 45, 7);
    double wr = 0, wa = 0;
    for (int trial = 0; trial < 3; ++trial) {
        randomize(&md, 0.5);
        check_state(&md, &wr, &wa, "long chain");
    }
    if (getenv("MBK_TEST_VERBOSE")) printf("  long chain dr %.2g dudot %.2g\n", wr, wa);
    CHECK(wr <= TOL);
    CHECK(wa <= TOL);
    destroy_model(&md);
}

/* M^-1 takes a caller's whole vectors of eight columns where they are, from the first
   column that starts on 32 bytes, and the columns around them in the work space: the
   results must be the same bits wherever the arrays sit and whatever their row stride. */
static void test_alignment_invariance(void)
{
    model md;
    build_floating_chain(&md, "floating chain", 45, 0); /* nq + nu = 101: past the work space's block */
    randomize(&md, 0.5);
    const int nq = md.nq, nu = md.nu, ld_max = nq + nu + 3;
    /* aligned_alloc wants a multiple of the alignment: whole groups of eight doubles */
    double *raw = aligned_alloc(64, (size_t)((nu * ld_max + 8) / 8 * 8 + 8) * sizeof(double));
    double *ref = malloc((size_t)(nu * (nq + nu)) * sizeof(double));
    CHECK(raw && ref);
    int same = 1;
    for (int ld = nq + nu; raw && ref && ld <= ld_max; ++ld) /* rows aligned alike when ld % 4 == 0 */
        for (int off = 0; off < 4; ++off) {
            double *A = raw + off;
            CHECK_INT(mbk_system_calc_acceleration_derivatives_ld(md.sys, md.s, A, ld, A + nq, ld), MBK_OK);
            for (int r = 0; r < nu; ++r)
                for (int c = 0; c < nq + nu; ++c) {
                    const double x = A[(size_t)r * (size_t)ld + (size_t)c];
                    double *y = &ref[(size_t)r * (size_t)(nq + nu) + (size_t)c];
                    if (ld == nq + nu && off == 0) *y = x;
                    else if (memcmp(&x, y, sizeof x) != 0) same = 0;
                }
        }
    CHECK(same);
    free(raw);
    free(ref);
    destroy_model(&md);
}

/* A function-based mobilizer whose functions stop at second derivatives: d(HDot u)/dq
   is then found by differences (flagged), the rest stays analytic, and the whole is
   still within the tolerance. */
static double sq_value(const void *impl, const double *x) { (void)impl; return 0.3 * x[0] * x[0] + sin(x[0]); }
static double sq_derivative(const void *impl, const int *comp, int order, const double *x)
{
    (void)impl; (void)comp;
    return order == 0 ? sq_value(impl, x) : order == 1 ? 0.6 * x[0] + cos(x[0]) : 0.6 - sin(x[0]);
}
static const mbk_function_ops second_order_ops = {1, 2, sq_value, sq_derivative, NULL};

static void test_function_based_second_order(void)
{
    const double lin[2] = {0.5, 0.1};
    mbk_function fns[6] = {{&second_order_ops, NULL}, mbk_function_linear(lin, 1), mbk_function_constant(0.0, 0),
                           mbk_function_constant(0.0, 0), mbk_function_sinusoid(0.2, 1.0, 0.0), mbk_function_constant(0.1, 0)};
    static const int i0[1] = {0}, i1[1] = {1}, i4[1] = {1};
    const int *const idx[6] = {i0, i1, NULL, NULL, i4, NULL};
    const int n[6] = {1, 1, 0, 0, 1, 0};
    mbk_mobilizer fb = mbk_mobilizer_function_based(2, fns, idx, n, NULL);
    CHECK(fb.ops != NULL);
    model md;
    static const int kinds[] = {K_PIN, K_BALL};
    build_tree(&md, 3, 0, kinds, 2);
    mbk_transform X = mbk_transform_from_p(mbk_vec3_make(0.2, 0.1, 0.0)), I = mbk_transform_identity();
    mbk_mass_props mp = random_mass_props();
    int b = mbk_matter_add_body(mbk_multibody_upd_matter(md.sys), 1, &X, &mp, &I, fb);
    CHECK(b > 0);
    md.kind[b] = K_FUNCTION;
    md.nb = b + 1;
    finish_model(&md);
    mbk_derivative_info info;
    CHECK_INT(mbk_system_get_derivative_info(md.sys, md.s, &info), MBK_OK);
    CHECK_INT(info.numeric_mobilizers, 1);
    CHECK_INT(info.first_numeric_body, b);
    double wr = 0, wa = 0;
    for (int trial = 0; trial < 10; ++trial) {
        randomize(&md, 1.0);
        check_state(&md, &wr, &wa, "second-order function-based");
    }
    if (getenv("MBK_TEST_VERBOSE")) printf("  function-based, 2nd order functions: dr %.2g dudot %.2g\n", wr, wa);
    CHECK(wr <= TOL);
    CHECK(wa <= TOL);
    destroy_model(&md);
}

/* |M X + R| <= 1e-9 (|M| |X| + |R|) entry by entry (nu x n, M nu x nu): X = -M^-1 R to
   round-off, whatever M's condition. Returns the largest ratio. */
static double solve_residual(const double *M, const double *X, const double *R, int nu, int n)
{
    double worst = 0;
    for (int i = 0; i < nu; ++i)
        for (int j = 0; j < n; ++j) {
            double sum = R[i * n + j], mag = fabs(R[i * n + j]);
            for (int k = 0; k < nu; ++k) {
                sum += M[i * nu + k] * X[k * n + j];
                mag += fabs(M[i * nu + k] * X[k * n + j]);
            }
            worst = fmax(worst, fabs(sum) / (1e-9 * mag + 1e-300));
        }
    return worst;
}

/* A tree deep enough that the sparse factor would not stay O(n) (nl > 64 nu + 64:
   matter.c), so M^-1 goes through the articulated-body sweeps a group of columns at a
   time (and the last few columns one by one): a Free base, a chain of Pins with a Ball
   every 7th body and short side branches (whose attachment points pass their sums
   through memory). The accelerations' derivatives must satisfy M dudot/dx = -dr/dx at
   the State's udot, with dr/dx the inverse-dynamics derivatives (checked against
   differences by the other tests); a planted error in one entry must fail it. */
static void test_deep_chain(void)
{
    enum { N_CHAIN = 140, N_SIDE = 4 };
    mbk_system *sys = mbk_multibody_create("deep chain");
    mbk_matter *m = mbk_multibody_upd_matter(sys);
    mbk_forces *f = mbk_multibody_upd_forces(sys);
    int quat[N_CHAIN + 3 * N_SIDE + 1] = {0}, nb = 1;
    for (int i = 1; i <= N_CHAIN; ++i, ++nb) {
        const int kind = i == 1 ? K_FREE : i % 7 == 0 ? K_BALL : K_PIN;
        mbk_transform X_PF = mbk_transform_make(rrot(), mbk_vec3_make(0.3, 0.05, 0.0)), I = mbk_transform_identity();
        mbk_mass_props mp = random_mass_props();
        CHECK_INT(mbk_matter_add_body(m, i - 1, i == 1 ? &I : &X_PF, &mp, &I, make_mobilizer(kind)), i);
        quat[i] = kind != K_PIN;
    }
    for (int side = 0; side < N_SIDE; ++side) /* three Pins hung from bodies 30, 60, ... */
        for (int j = 0; j < 3; ++j, ++nb) {
            mbk_transform X_PF = mbk_transform_make(rrot(), mbk_vec3_make(0.2, -0.05, 0.0)), I = mbk_transform_identity();
            mbk_mass_props mp = random_mass_props();
            CHECK_INT(mbk_matter_add_body(m, j == 0 ? 30 * (side + 1) : nb - 1, &X_PF, &mp, &I, make_mobilizer(K_PIN)),
                      nb);
        }
    mbk_force_add_gravity(f, mbk_vec3_make(0, 0, -9.81));
    mbk_state *s = test_instance_state(sys, m, 0);
    const int nq = mbk_state_get_nq(s), nu = mbk_state_get_nu(s);
    /* deeper than the sparse factor's limit (its main chain alone, 183 u, is past it;
       planted errors in aba_columns fail this test, so it takes that path) */
    CHECK((long)nu * (nu - 1) / 2 > 64L * nu + 64);
    double *q = mbk_state_upd_q(s), *u = mbk_state_upd_u(s);
    for (int i = 0; i < nq; ++i) q[i] = 0.5 * rnd();
    for (int b = 1; b < nb; ++b)
        if (quat[b]) q[mbk_matter_get_body_q_start(m, s, b)] += 1.3;
    for (int i = 0; i < nu; ++i) u[i] = 0.5 * rnd();
    double *M = malloc((size_t)nu * nu * sizeof *M), *Xq = malloc((size_t)nu * nq * sizeof *Xq),
           *Xu = malloc((size_t)nu * nu * sizeof *Xu), *Rq = malloc((size_t)nu * nq * sizeof *Rq),
           *Ru = malloc((size_t)nu * nu * sizeof *Ru);
    CHECK(M && Xq && Xu && Rq && Ru);
    if (M && Xq && Xu && Rq && Ru) {
        CHECK_INT(mbk_system_calc_acceleration_derivatives(sys, s, Xq, Xu), MBK_OK);
        CHECK_INT(mbk_system_calc_residual_derivatives(sys, s, NULL, Rq, Ru), MBK_OK);
        CHECK_INT(mbk_matter_calc_mass_matrix(m, s, M), MBK_OK);
        const double eq = solve_residual(M, Xq, Rq, nu, nq), eu = solve_residual(M, Xu, Ru, nu, nu);
        if (getenv("MBK_TEST_VERBOSE")) printf("  deep chain (nu = %d): |M X + R| / (1e-9 scale) q %.2g u %.2g\n", nu, eq, eu);
        CHECK(eq <= 1.0);
        CHECK(eu <= 1.0);
        /* planted: one entry of a column off by a millionth of the column's largest */
        const int j = nq / 2;
        double big = 0;
        for (int i = 0; i < nu; ++i) big = fmax(big, fabs(Xq[i * nq + j]));
        Xq[(nu / 2) * nq + j] += 1e-6 * big;
        CHECK(solve_residual(M, Xq, Rq, nu, nq) > 1.0);
    }
    free(M), free(Xq), free(Xu), free(Rq), free(Ru);
    mbk_state_destroy(s);
    mbk_system_destroy(sys);
}

int main(void)
{
    test_function_based_second_order();
    test_long_chain();
    test_no_allocation();
    test_pendulum();
    test_zero_velocity();
    test_mass_matrix_identity();
    test_planted_error();
    test_humanoid();
    test_mixed_trees();
    test_numeric_pieces();
    test_constraints();
    test_contact();
    test_mobilizer_derivatives();
    test_each_mobilizer();
    test_force_elements();
    test_alignment_invariance(); /* these two last: their random numbers would move the others' */
    test_deep_chain();
    return mbk_test_finish();
}
