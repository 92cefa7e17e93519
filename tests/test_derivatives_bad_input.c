/* The derivative functions (mbk/derivatives.h, mbk_system_calc_ydot_jacobian)
 * given bad input: NULL outputs, a State below Instance, a stale State, NaN in
 * q, u or udot, a custom mobilizer's or force element's derivative op failing
 * (recoverable or fatal), a numeric piece failing at a perturbed State, row
 * strides too small, a System that is not a multibody System. Each gives a
 * clear status and a message naming the function, and leaves the State's
 * variables (t, q, u, z) exactly as they were. */
#include <mbk/mbk.h>
#include <stdlib.h>
#include <string.h>

#include "mbk_test.h"

/* ---- a custom element whose Jacobian op fails on request ------------------- */

typedef struct failing {
    int body;
    int jac_rc;    /* what calc_jacobian returns */
    double q_max;  /* calc_force fails (fatally) beyond this q */
} failing;

static int fl_force(void *impl, const mbk_force_ctx *c, const mbk_state *s, mbk_spatial_vec *F, double *tau)
{
    (void)F;
    const failing *f = impl;
    const mbk_matter *m = mbk_force_ctx_get_matter(c);
    double q = mbk_state_get_q(s)[mbk_matter_get_body_q_start(m, s, f->body)];
    if (q > f->q_max) return -1;
    tau[mbk_matter_get_body_u_start(m, s, f->body)] -= 2.0 * q;
    return 0;
}

static int fl_jacobian(void *impl, const mbk_force_ctx *c, const mbk_state *s, double *df_dq, int ldq, double *df_du,
                       int ldu)
{
    (void)df_du; (void)ldu;
    const failing *f = impl;
    if (f->jac_rc == 99) { /* a NaN instead of a failure */
        if (df_dq) df_dq[0] += NAN;
        return 0;
    }
    if (f->jac_rc) return f->jac_rc;
    const mbk_matter *m = mbk_force_ctx_get_matter(c);
    int iq = mbk_matter_get_body_q_start(m, s, f->body), iu = mbk_matter_get_body_u_start(m, s, f->body);
    if (df_dq) df_dq[iu * ldq + iq] -= 2.0;
    return 0;
}

static const mbk_force_ops with_jacobian = {.name = "failing jacobian", .calc_force = fl_force, .calc_jacobian = fl_jacobian};
static const mbk_force_ops without_jacobian = {.name = "failing force", .calc_force = fl_force};

/* ---- a custom mobilizer whose calc_derivatives fails on request -------------- */

static int mob_rc; /* what calc_derivatives returns */
static void cp_X(const void *impl, bool euler, const double *q, mbk_transform *X)
{
    (void)impl; (void)euler;
    *X = mbk_transform_from_axis_angle(mbk_vec3_make(0, 0, 1), q[0], mbk_vec3_zero());
}
static void cp_H(const void *impl, bool euler, const double *q, mbk_spatial_vec *H)
{
    (void)impl; (void)euler; (void)q;
    H[0] = mbk_spatial_vec_make(mbk_vec3_make(0, 0, 1), mbk_vec3_zero());
}
static int cp_derivs(const void *impl, bool euler, const double *q, const double *u, mbk_mobilizer_derivatives *d)
{
    (void)impl; (void)euler; (void)u;
    if (mob_rc) return mob_rc;
    memset(d->dR, 0, sizeof d->dR);
    double c = cos(q[0]), s = sin(q[0]);
    mbk_mat33 D = {{{-s, -c, 0}, {c, -s, 0}, {0, 0, 0}}};
    d->dR[0] = D;
    d->dp[0] = mbk_vec3_zero();
    d->dH[0][0] = d->dHdot_u_dq[0] = d->dHdot_u_du[0] = mbk_spatial_vec_zero();
    d->dqdot_dq[0][0] = 0;
    return 0;
}
static const mbk_mobilizer_ops custom_pin = {.name = "custom pin", .nu = 1, .nq = 1, .calc_X_FM = cp_X,
                                             .calc_H_FM = cp_H, .calc_derivatives = cp_derivs};

/* ---- the model --------------------------------------------------------------- */

typedef struct model {
    mbk_system *sys;
    const mbk_matter *m;
    mbk_state *s;
    failing fj, ff;
    int nq, nu;
} model;

static void build(model *md)
{
    memset(md, 0, sizeof *md);
    md->sys = mbk_multibody_create("bad input");
    mbk_matter *m = mbk_multibody_upd_matter(md->sys);
    md->m = m;
    mbk_forces *f = mbk_multibody_upd_forces(md->sys);
    mbk_transform I = mbk_transform_identity(), X = mbk_transform_from_p(mbk_vec3_make(1, 0, 0));
    mbk_mass_props mp = mbk_mass_props_from_central(1.0, mbk_vec3_make(0.5, 0, 0), mbk_mat33_diag(0.1, 0.1, 0.1));
    CHECK_INT(mbk_matter_add_body(m, 0, &I, &mp, &I, mbk_mobilizer_free()), 1);
    CHECK_INT(mbk_matter_add_body(m, 1, &X, &mp, &I, mbk_mobilizer_pin()), 2);
    CHECK_INT(mbk_matter_add_body(m, 2, &X, &mp, &I, mbk_mobilizer_custom(&custom_pin, NULL)), 3);
    mbk_force_add_gravity(f, mbk_vec3_make(0, 0, -9.81));
    md->fj = (failing){2, 0, 1e300};
    md->ff = (failing){3, 0, 1e300};
    CHECK(mbk_force_add_custom(f, &with_jacobian, &md->fj) >= 0);
    CHECK(mbk_force_add_custom(f, &without_jacobian, &md->ff) >= 0);
    CHECK_INT(mbk_system_realize_topology(md->sys), MBK_OK);
    md->s = mbk_state_create();
    CHECK_INT(mbk_state_init(md->s, md->sys), MBK_OK);
    CHECK_INT(mbk_system_realize(md->sys, md->s, MBK_STAGE_INSTANCE), MBK_OK);
    md->nq = mbk_state_get_nq(md->s);
    md->nu = mbk_state_get_nu(md->s);
    double *q = mbk_state_upd_q(md->s), *u = mbk_state_upd_u(md->s);
    for (int i = 0; i < md->nq; ++i) q[i] = 0.1 * (i + 1);
    for (int i = 0; i < md->nu; ++i) u[i] = -0.2 * (i + 1);
    mbk_state_set_time(md->s, 0.5);
}

static void destroy(model *md)
{
    mbk_state_destroy(md->s);
    mbk_system_destroy(md->sys);
}

/* The State's variables, to compare bitwise. */
typedef struct snapshot {
    double t, y[64];
    int ny;
} snapshot;

static snapshot snap(const mbk_state *s)
{
    snapshot x;
    memset(&x, 0, sizeof x);
    x.t = mbk_state_get_time(s);
    x.ny = mbk_state_get_stage(s) >= MBK_STAGE_MODEL ? mbk_state_get_ny(s) : 0;
    if (x.ny > 0) memcpy(x.y, mbk_state_get_y(s), (size_t)x.ny * sizeof(double));
    return x;
}

static int same(const snapshot *a, const mbk_state *s)
{
    snapshot b = snap(s);
    return memcmp(&a->t, &b.t, sizeof a->t) == 0 && a->ny == b.ny && memcmp(a->y, b.y, (size_t)a->ny * sizeof(double)) == 0;
}

/* rc is `status`, the message names `fn`, and the State is as it was. */
#define EXPECT(call, status, fn, before, s)                                                        \
    do {                                                                                           \
        int rc_ = (call);                                                                          \
        CHECK_INT(rc_, status);                                                                    \
        CHECK_INT(mbk_last_status(), status);                                                      \
        if (!CHECK(strstr(mbk_last_error(), fn) != NULL)) fprintf(stderr, "    message: %s\n", mbk_last_error()); \
        if (getenv("MBK_TEST_VERBOSE")) printf("  %s -> %s: %s\n", #call, mbk_status_name(rc_), mbk_last_error()); \
        CHECK(same(&(before), (s)));                                                               \
    } while (0)

static double A[64 * 64], B[64 * 64];

static void test_nulls_and_strides(void)
{
    model md;
    build(&md);
    snapshot before = snap(md.s);
    EXPECT(mbk_system_calc_residual_derivatives(md.sys, md.s, NULL, NULL, NULL), MBK_EINVAL,
           "mbk_system_calc_residual_derivatives", before, md.s);
    before = snap(md.s);
    EXPECT(mbk_system_calc_acceleration_derivatives(md.sys, md.s, NULL, NULL), MBK_EINVAL,
           "mbk_system_calc_acceleration_derivatives", before, md.s);
    EXPECT(mbk_system_add_force_jacobians(md.sys, md.s, NULL, NULL), MBK_EINVAL, "mbk_system_add_force_jacobians",
           before, md.s);
    EXPECT(mbk_system_calc_ydot_jacobian(md.sys, md.s, NULL), MBK_EINVAL, "mbk_system_calc_ydot_jacobian", before, md.s);
    EXPECT(mbk_system_calc_ydot_jacobian_fd(md.sys, md.s, NULL), MBK_EINVAL, "mbk_system_calc_ydot_jacobian_fd", before,
           md.s);
    EXPECT(mbk_system_calc_acceleration_derivatives(NULL, md.s, A, B), MBK_EINVAL,
           "mbk_system_calc_acceleration_derivatives", before, md.s);
    EXPECT(mbk_system_calc_acceleration_derivatives(md.sys, NULL, A, B), MBK_EINVAL,
           "mbk_system_calc_acceleration_derivatives", before, md.s);
    EXPECT(mbk_system_calc_acceleration_derivatives_ld(md.sys, md.s, A, md.nq - 1, B, md.nu), MBK_EINVAL,
           "mbk_system_calc_acceleration_derivatives", before, md.s);
    EXPECT(mbk_system_add_force_jacobians_ld(md.sys, md.s, A, md.nq, B, md.nu - 1), MBK_EINVAL,
           "mbk_system_add_force_jacobians", before, md.s);
    EXPECT(mbk_system_get_derivative_info(md.sys, md.s, NULL), MBK_EINVAL, "mbk_system_get_derivative_info", before,
           md.s);
    EXPECT(mbk_matter_calc_qdot_derivatives(NULL, md.s, A, md.nq, B, md.nu), MBK_EINVAL,
           "mbk_matter_calc_qdot_derivatives", before, md.s);
    /* one output alone is fine */
    CHECK_INT(mbk_system_calc_acceleration_derivatives(md.sys, md.s, A, NULL), MBK_OK);
    CHECK_INT(mbk_system_calc_acceleration_derivatives(md.sys, md.s, NULL, B), MBK_OK);
    CHECK(same(&before, md.s));
    destroy(&md);
}

static void test_stage_and_stale(void)
{
    model md;
    build(&md);
    /* below Instance: a State just initialized */
    mbk_state *fresh = mbk_state_create();
    CHECK_INT(mbk_state_init(fresh, md.sys), MBK_OK);
    snapshot before = snap(fresh);
    EXPECT(mbk_system_calc_acceleration_derivatives(md.sys, fresh, A, B), MBK_ESTAGE,
           "mbk_system_calc_acceleration_derivatives", before, fresh);
    EXPECT(mbk_system_calc_residual_derivatives(md.sys, fresh, NULL, A, B), MBK_ESTAGE,
           "mbk_system_calc_residual_derivatives", before, fresh);
    EXPECT(mbk_system_add_force_jacobians(md.sys, fresh, A, B), MBK_ESTAGE, "mbk_system_add_force_jacobians", before,
           fresh);
    mbk_state_destroy(fresh);
    /* stale: the topology changed after the State was made */
    before = snap(md.s);
    mbk_system_invalidate_topology(md.sys);
    CHECK_INT(mbk_system_realize_topology(md.sys), MBK_OK);
    EXPECT(mbk_system_calc_acceleration_derivatives(md.sys, md.s, A, B), MBK_ESTALE,
           "mbk_system_calc_acceleration_derivatives", before, md.s);
    EXPECT(mbk_system_calc_residual_derivatives(md.sys, md.s, NULL, A, B), MBK_ESTALE,
           "mbk_system_calc_residual_derivatives", before, md.s);
    EXPECT(mbk_system_get_derivative_info(md.sys, md.s, (mbk_derivative_info[1]){0}), MBK_ESTALE,
           "mbk_system_get_derivative_info", before, md.s);
    CHECK(mbk_system_calc_ydot_jacobian(md.sys, md.s, A) == MBK_ESTALE);
    CHECK(same(&before, md.s));
    destroy(&md);
}

static void test_nonfinite(void)
{
    model md;
    build(&md);
    mbk_state_upd_q(md.s)[5] = NAN;
    snapshot before = snap(md.s);
    EXPECT(mbk_system_calc_acceleration_derivatives(md.sys, md.s, A, B), MBK_ENOTFINITE,
           "mbk_system_calc_acceleration_derivatives", before, md.s);
    EXPECT(mbk_system_calc_residual_derivatives(md.sys, md.s, NULL, A, B), MBK_ENOTFINITE,
           "mbk_system_calc_residual_derivatives", before, md.s);
    CHECK(mbk_system_calc_ydot_jacobian(md.sys, md.s, A) == MBK_ENOTFINITE);
    CHECK(same(&before, md.s));
    mbk_state_upd_q(md.s)[5] = 0.3;
    mbk_state_upd_u(md.s)[2] = INFINITY;
    before = snap(md.s);
    EXPECT(mbk_system_calc_acceleration_derivatives(md.sys, md.s, A, B), MBK_ENOTFINITE,
           "mbk_system_calc_acceleration_derivatives", before, md.s);
    EXPECT(mbk_system_add_force_jacobians(md.sys, md.s, A, B), MBK_ENOTFINITE, "mbk_system_add_force_jacobians",
           before, md.s);
    mbk_state_upd_u(md.s)[2] = 0.1;
    before = snap(md.s);
    double udot[16] = {0};
    udot[3] = NAN;
    EXPECT(mbk_system_calc_residual_derivatives(md.sys, md.s, udot, A, B), MBK_ENOTFINITE,
           "mbk_system_calc_residual_derivatives", before, md.s);
    /* and the State still works */
    CHECK_INT(mbk_system_calc_acceleration_derivatives(md.sys, md.s, A, B), MBK_OK);
    destroy(&md);
}

static void test_failing_ops(void)
{
    model md;
    build(&md);
    snapshot before;
    /* a custom element's Jacobian: recoverable, then fatal */
    md.fj.jac_rc = 1;
    CHECK_INT(mbk_system_realize(md.sys, md.s, MBK_STAGE_ACCELERATION), MBK_OK);
    before = snap(md.s);
    EXPECT(mbk_system_calc_acceleration_derivatives(md.sys, md.s, A, B), MBK_ERETRY,
           "mbk_system_calc_acceleration_derivatives", before, md.s);
    CHECK(strstr(mbk_last_error(), "failing jacobian") != NULL);
    CHECK(strstr(mbk_last_error(), "recoverable") != NULL);
    md.fj.jac_rc = -1;
    EXPECT(mbk_system_add_force_jacobians(md.sys, md.s, A, B), MBK_EUSER, "mbk_system_add_force_jacobians", before,
           md.s);
    CHECK(strstr(mbk_last_error(), "fatal") != NULL);
    /* a NaN from a custom Jacobian is reported, not passed on */
    md.fj.jac_rc = 99;
    EXPECT(mbk_system_calc_acceleration_derivatives(md.sys, md.s, A, B), MBK_ENOTFINITE,
           "mbk_system_calc_acceleration_derivatives", before, md.s);
    EXPECT(mbk_system_calc_residual_derivatives(md.sys, md.s, NULL, A, B), MBK_ENOTFINITE,
           "mbk_system_calc_residual_derivatives", before, md.s);
    EXPECT(mbk_system_add_force_jacobians(md.sys, md.s, A, B), MBK_ENOTFINITE, "mbk_system_add_force_jacobians",
           before, md.s);
    md.fj.jac_rc = 0;
    /* a custom mobilizer's derivatives: recoverable, then fatal */
    mob_rc = 2;
    EXPECT(mbk_system_calc_residual_derivatives(md.sys, md.s, NULL, A, B), MBK_ERETRY,
           "mbk_system_calc_residual_derivatives", before, md.s);
    CHECK(strstr(mbk_last_error(), "custom pin") != NULL);
    mob_rc = -3;
    EXPECT(mbk_system_calc_acceleration_derivatives(md.sys, md.s, A, B), MBK_EUSER,
           "mbk_system_calc_acceleration_derivatives", before, md.s);
    CHECK(mbk_system_calc_ydot_jacobian(md.sys, md.s, A) == MBK_EUSER);
    CHECK(same(&before, md.s));
    mob_rc = 0;
    /* a numeric piece failing at a perturbed State: the State is put back */
    md.ff.q_max = mbk_state_get_q(md.s)[mbk_matter_get_body_q_start(md.m, md.s, 3)] + 1e-5;
    EXPECT(mbk_system_calc_acceleration_derivatives(md.sys, md.s, A, B), MBK_EUSER,
           "mbk_system_calc_acceleration_derivatives", before, md.s);
    CHECK(strstr(mbk_last_error(), "numerically") != NULL);
    CHECK(mbk_state_get_stage(md.s) == MBK_STAGE_ACCELERATION);
    md.ff.q_max = 1e300;
    /* and it works again */
    CHECK_INT(mbk_system_calc_acceleration_derivatives(md.sys, md.s, A, B), MBK_OK);
    CHECK(same(&before, md.s));
    destroy(&md);
}

/* A System without matter: the multibody functions refuse it, the ydot Jacobian
   falls back to differences. */
static int osc_topology(void *impl, const mbk_subsystem_ctx *c, mbk_state *s)
{
    (void)impl;
    const double z0[2] = {1.0, 0.0};
    return mbk_state_allocate_z(s, mbk_subsystem_ctx_get_index(c), 2, z0) < 0 ? -1 : 0;
}
static int osc_dynamics(void *impl, const mbk_subsystem_ctx *c, mbk_state *s)
{
    (void)impl;
    int k = mbk_subsystem_ctx_get_index(c);
    const double *z = mbk_state_get_subsystem_z(s, k);
    double *zd = mbk_state_upd_subsystem_zdot(s, k);
    zd[0] = z[1];
    zd[1] = -4.0 * z[0];
    return 0;
}
static const mbk_subsystem_ops osc_ops = {.name = "oscillator", .realize_topology = osc_topology,
                                          .realize_dynamics = osc_dynamics};

static void test_not_multibody(void)
{
    mbk_system *sys = mbk_system_create("oscillator");
    CHECK(mbk_system_add_subsystem(sys, &osc_ops, NULL) >= 0);
    CHECK_INT(mbk_system_realize_topology(sys), MBK_OK);
    mbk_state *s = mbk_state_create();
    CHECK_INT(mbk_state_init(s, sys), MBK_OK);
    CHECK_INT(mbk_system_realize(s ? sys : NULL, s, MBK_STAGE_INSTANCE), MBK_OK);
    snapshot before = snap(s);
    EXPECT(mbk_system_calc_acceleration_derivatives(sys, s, A, B), MBK_EINVAL,
           "mbk_system_calc_acceleration_derivatives", before, s);
    mbk_derivative_info info;
    CHECK_INT(mbk_system_get_derivative_info(sys, s, &info), MBK_OK);
    CHECK(!info.multibody && !info.exact && info.numeric_z);
    double J[4];
    CHECK_INT(mbk_system_calc_ydot_jacobian(sys, s, J), MBK_OK);
    CHECK_NEAR(J[0], 0.0, 1e-7);
    CHECK_NEAR(J[1], 1.0, 1e-7);
    CHECK_NEAR(J[2], -4.0, 1e-7);
    CHECK_NEAR(J[3], 0.0, 1e-7);
    CHECK(same(&before, s));
    mbk_state_destroy(s);
    mbk_system_destroy(sys);
}

int main(void)
{
    test_nulls_and_strides();
    test_stage_and_stale();
    test_nonfinite();
    test_failing_ops();
    test_not_multibody();
    return mbk_test_finish();
}
