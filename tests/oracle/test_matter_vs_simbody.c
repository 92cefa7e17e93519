/* The matter subsystem against Simbody: random trees of every built-in
 * mobilizer (Weld, Pin, Slider, Screw, Universal, Cylinder, Planar, Gimbal,
 * Ball, Translation, Free, Bushing), and each mobilizer on its own (one body,
 * and a chain of three), in quaternion and Euler-angle modes: body poses,
 * velocities and accelerations, qdot, udot, qdotdot, the mass matrix,
 * inverse dynamics and kinetic energy, to 1e-10 relative. Plus checks that
 * need no oracle: the residual vanishes at the ABA's udot, M^-1 (M v) = v;
 * and per mobilizer, by central differences on a one-body model (X_GB =
 * X_FM), that qdot moves X_FM with V_FM, that (qdot, udot) move V_FM with
 * A_FM and qdot with qdotdot; and that the fitting functions reproduce X_FM,
 * V_FM and u. */
#include <mbk/mbk.h>
#include <stdlib.h>
#include <string.h>

#include "mbk_test.h"
#include "simbody_oracle.h"

#define MAX_B 51
#define TOL 1e-10

static unsigned long long rng_state = 0x243F6A8885A308D3ull;
static double rnd(void) /* uniform in [-1, 1) */
{
    rng_state = rng_state * 6364136223846793005ull + 1442695040888963407ull;
    return (double)(rng_state >> 11) / 4503599627370496.0 - 1.0;
}

static mbk_vec3 rvec(double scale) { return mbk_vec3_make(scale * rnd(), scale * rnd(), scale * rnd()); }

static mbk_mat33 rrot(void)
{
    return mbk_mat33_from_axis_angle(mbk_vec3_normalize(rvec(1.0)), 3.0 * rnd());
}

static void put_transform(double *o, const mbk_transform *X)
{
    for (int r = 0; r < 3; ++r)
        for (int c = 0; c < 3; ++c) o[3 * r + c] = X->R.m[r][c];
    o[9] = X->p.x;
    o[10] = X->p.y;
    o[11] = X->p.z;
}

/* Forces the test applies, through a force subsystem as users would. */
typedef struct applied { const double *tau; const double *F; } applied;

static int apply_forces(void *impl, const mbk_subsystem_ctx *c, mbk_state *s)
{
    const applied *a = impl;
    const mbk_system *sys = mbk_subsystem_ctx_get_system(c);
    double *tau = mbk_multibody_upd_mobility_forces(sys, s);
    mbk_spatial_vec *F = mbk_multibody_upd_body_forces(sys, s);
    int nu = mbk_state_get_nu(s), nb = mbk_matter_get_num_bodies(mbk_multibody_get_matter(sys));
    for (int i = 0; i < nu; ++i) tau[i] += a->tau[i];
    for (int b = 1; b < nb; ++b) {
        F[b].w = mbk_vec3_add(F[b].w, mbk_vec3_make(a->F[6 * b], a->F[6 * b + 1], a->F[6 * b + 2]));
        F[b].v = mbk_vec3_add(F[b].v, mbk_vec3_make(a->F[6 * b + 3], a->F[6 * b + 4], a->F[6 * b + 5]));
    }
    return 0;
}

/* Largest |a - b| over n values, relative to max(1, max |b|). */
static double rel_err(const double *a, const double *b, int n)
{
    double e = 0, s = 1;
    for (int i = 0; i < n; ++i) {
        e = fmax(e, fabs(a[i] - b[i]));
        s = fmax(s, fabs(b[i]));
    }
    return e / s;
}

/* Every built-in, indexed by orc_mobilizer (the enum lists them in this order). */
#define NKINDS 12
static const char *const kind_names[NKINDS] = {"Weld", "Pin", "Slider", "Screw", "Universal", "Cylinder",
                                               "Planar", "Gimbal", "Ball", "Translation", "Free", "Bushing"};

static mbk_mobilizer make_mobilizer(orc_mobilizer kind, double pitch)
{
    switch (kind) {
    case ORC_WELD: return mbk_mobilizer_weld();
    case ORC_PIN: return mbk_mobilizer_pin();
    case ORC_SLIDER: return mbk_mobilizer_slider();
    case ORC_SCREW: return mbk_mobilizer_screw(pitch);
    case ORC_UNIVERSAL: return mbk_mobilizer_universal();
    case ORC_CYLINDER: return mbk_mobilizer_cylinder();
    case ORC_PLANAR: return mbk_mobilizer_planar();
    case ORC_GIMBAL: return mbk_mobilizer_gimbal();
    case ORC_BALL: return mbk_mobilizer_ball();
    case ORC_TRANSLATION: return mbk_mobilizer_translation();
    case ORC_FREE: return mbk_mobilizer_free();
    case ORC_BUSHING: return mbk_mobilizer_bushing();
    }
    return mbk_mobilizer_weld();
}

/* Worst differences: random trees, and per mobilizer on its own. */
static double worst[8], kind_worst[NKINDS][8];
static void check_close(double *w, const char *what, int slot, const double *a, const double *b, int n, int model)
{
    double e = rel_err(a, b, n);
    w[slot] = fmax(w[slot], e);
    if (!CHECK(e <= TOL)) fprintf(stderr, "    model %d: %s differs by %.3g (relative)\n", model, what, e);
}

/* A tree of nbodies compared with Simbody. only < 0: random mobilizers and
   parents, differences into worst[]; otherwise a chain of `only` mobilizers,
   differences into kind_worst[only]. */
static void run_model(int model, int nbodies, int euler, int only)
{
    static const orc_mobilizer kinds[] = {ORC_PIN, ORC_SLIDER, ORC_BALL, ORC_FREE, ORC_TRANSLATION, ORC_WELD,
                                          ORC_SCREW, ORC_UNIVERSAL, ORC_CYLINDER, ORC_PLANAR, ORC_GIMBAL,
                                          ORC_BUSHING};
    const int nk = (int)(sizeof kinds / sizeof kinds[0]);
    double *w = only < 0 ? worst : kind_worst[only];
    orc_body ob[MAX_B];
    mbk_system *sys = mbk_multibody_create("random tree");
    mbk_matter *m = mbk_multibody_upd_matter(sys);
    for (int i = 0; i < nbodies; ++i) {
        int parent = i == 0 || only >= 0 ? i : (int)((rnd() + 1.0) * 0.5 * (i + 1)) % (i + 1);
        orc_mobilizer kind = only >= 0 ? (orc_mobilizer)only : kinds[(int)((rnd() + 1.0) * 0.5 * nk) % nk];
        if (only < 0 && i == nbodies - 1 && kind == ORC_WELD) kind = ORC_PIN;
        double pitch = 0.5 * rnd();
        /* Every third body has the usual frames: the joint at the body origin (X_BM a pure
           rotation, identity or a quarter turn: a Pin there is a "spin"), and the inertia on
           body axes with the centre of mass on x (diagonal about the origin too); matter
           takes faster paths for those, checked here like the rest. */
        bool usual = i % 3 == 1;
        mbk_mat33 quarter = mbk_mat33_from_rows(mbk_vec3_make(1, 0, 0), mbk_vec3_make(0, 0, 1), mbk_vec3_make(0, -1, 0));
        mbk_transform X_PF = mbk_transform_make(rrot(), rvec(0.7));
        mbk_transform X_BM = usual ? mbk_transform_make(i % 2 ? mbk_mat33_identity() : quarter, mbk_vec3_zero())
                                   : mbk_transform_make(rrot(), rvec(0.3));
        mbk_mat33 R = usual ? mbk_mat33_identity() : rrot();
        double a = 0.2 + 0.1 * (rnd() + 1), b = 0.2 + 0.1 * (rnd() + 1), c = 0.2 + 0.1 * (rnd() + 1);
        mbk_mat33 I = mbk_mat33_mul_transpose(mbk_mat33_mul(R, mbk_mat33_diag(b + c, a + c, a + b)), R);
        mbk_vec3 com = usual ? mbk_vec3_make(0.4 * rnd(), 0, 0) : rvec(0.4);
        mbk_mass_props mp = mbk_mass_props_from_central(1.0 + 0.5 * rnd(), com, I);
        CHECK_INT(mbk_matter_add_body(m, parent, &X_PF, &mp, &X_BM, make_mobilizer(kind, pitch)), i + 1);
        memset(&ob[i], 0, sizeof ob[i]);
        ob[i].parent = parent;
        ob[i].type = kind;
        ob[i].screw_pitch = pitch;
        put_transform(ob[i].X_PF, &X_PF);
        put_transform(ob[i].X_BM, &X_BM);
        ob[i].mass = mp.mass;
        ob[i].com[0] = mp.com.x; ob[i].com[1] = mp.com.y; ob[i].com[2] = mp.com.z;
        for (int r = 0; r < 3; ++r)
            for (int cc = 0; cc < 3; ++cc) ob[i].inertia_about_com[3 * r + cc] = I.m[r][cc];
    }
    orc_model om = {nbodies, ob, euler, {0, 0, 0}};
    int nq, nu, onq, onu, nb = nbodies + 1;
    CHECK_INT(orc_sizes(&om, &onq, &onu), 0);

    static double tau[6 * MAX_B], F[6 * MAX_B];
    applied ap = {tau, F};
    static const mbk_subsystem_ops force_ops = {.name = "test forces", .realize_dynamics = apply_forces};
    mbk_system_add_subsystem(sys, &force_ops, &ap);
    CHECK_INT(mbk_system_realize_topology(sys), MBK_OK);
    mbk_state *s = mbk_state_create();
    CHECK_INT(mbk_state_init(s, sys), MBK_OK);
    CHECK_INT(mbk_matter_set_use_euler_angles(m, s, euler != 0), MBK_OK);
    CHECK_INT(mbk_system_realize(sys, s, MBK_STAGE_MODEL), MBK_OK);
    nq = mbk_state_get_nq(s);
    nu = mbk_state_get_nu(s);
    CHECK_INT(nq, onq);
    CHECK_INT(nu, onu);

    /* Random state and forces. */
    double *q = mbk_state_upd_q(s), *u = mbk_state_upd_u(s);
    for (int i = 0; i < nq; ++i) q[i] = rnd();
    for (int i = 0; i < nu; ++i) u[i] = rnd();
    for (int i = 0; i < nu; ++i) tau[i] = rnd();
    for (int i = 0; i < 6 * nb; ++i) F[i] = i < 6 ? 0.0 : rnd();

    static double X[12 * MAX_B], V[6 * MAX_B], A[6 * MAX_B], qn[7 * MAX_B], qd[7 * MAX_B],
        ud[6 * MAX_B], qdd[7 * MAX_B], M[36 * MAX_B * MAX_B], res[6 * MAX_B], known[6 * MAX_B];
    orc_result out = {.q = qn, .X_GB = X, .V_GB = V, .A_GB = A, .qdot = qd, .udot = ud, .qdotdot = qdd, .M = M};
    if (!CHECK(orc_eval(&om, q, u, tau, F, &out) == 0)) fprintf(stderr, "%s\n", orc_last_error());

    /* Compare with the q Simbody used (normalized quaternions). */
    CHECK_INT(mbk_state_set_q(s, qn, nq), MBK_OK);
    CHECK_INT(mbk_system_realize(sys, s, MBK_STAGE_ACCELERATION), MBK_OK);

    static double mX[12 * MAX_B], mV[6 * MAX_B], mA[6 * MAX_B], mM[36 * MAX_B * MAX_B], mres[6 * MAX_B];
    for (int b = 0; b < nb; ++b) {
        mbk_transform Xb;
        mbk_spatial_vec Vb, Ab;
        mbk_matter_get_body_transform(m, s, b, &Xb);
        mbk_matter_get_body_velocity(m, s, b, &Vb);
        mbk_matter_get_body_acceleration(m, s, b, &Ab);
        put_transform(mX + 12 * b, &Xb);
        memcpy(mV + 6 * b, &Vb, sizeof Vb);
        memcpy(mA + 6 * b, &Ab, sizeof Ab);
    }
    check_close(w, "X_GB", 0, mX, X, 12 * nb, model);
    check_close(w, "V_GB", 1, mV, V, 6 * nb, model);
    check_close(w, "A_GB", 2, mA, A, 6 * nb, model);
    check_close(w, "qdot", 3, mbk_state_get_qdot(s), qd, nq, model);
    check_close(w, "udot", 4, mbk_state_get_udot(s), ud, nu, model);
    check_close(w, "qdotdot", 5, mbk_state_get_qdotdot(s), qdd, nq, model);
    CHECK_INT(mbk_matter_calc_mass_matrix(m, s, mM), MBK_OK);
    check_close(w, "M", 6, mM, M, nu * nu, model);

    /* Inverse dynamics at an arbitrary udot (Simbody throws on nu = 0: all Welds). */
    for (int i = 0; i < nu; ++i) known[i] = rnd();
    if (nu > 0) {
        if (!CHECK(orc_inverse_dynamics(&om, qn, u, known, tau, F, res) == 0)) fprintf(stderr, "%s\n", orc_last_error());
        CHECK_INT(mbk_matter_calc_residual_force(m, s, tau, (const mbk_spatial_vec *)F, known, mres), MBK_OK);
        check_close(w, "residual", 7, mres, res, nu, model);
    }

    /* Invariants: residual is zero at the ABA's udot; M^-1 M v = v; KE = u.Mu/2. */
    CHECK_INT(mbk_matter_calc_residual_force(m, s, tau, (const mbk_spatial_vec *)F, mbk_state_get_udot(s), mres), MBK_OK);
    double zero[6 * MAX_B] = {0};
    check_close(w, "residual at ABA udot", 7, mres, zero, nu, model);
    CHECK_INT(mbk_matter_multiply_by_M(m, s, known, res), MBK_OK);
    CHECK_INT(mbk_matter_multiply_by_M_inverse(m, s, res, mres), MBK_OK);
    check_close(w, "M^-1 M v", 6, mres, known, nu, model);
    double ke = 0;
    CHECK_INT(mbk_system_calc_energy(sys, s, &ke, NULL), MBK_OK);
    CHECK_NEAR(ke, out.kinetic_energy, TOL);

    mbk_state_destroy(s);
    mbk_system_destroy(sys);
}

/* ---- Per mobilizer, no oracle: central differences and fitting ---------- */

#define FD_H 1e-6
#define FD_TOL 1e-7
static double fd_worst[NKINDS][3], fit_worst[NKINDS];

/* Pose, velocity, acceleration of body 1 and the q, u, qdot, udot, qdotdot. */
typedef struct snap {
    mbk_transform X;
    mbk_spatial_vec V, A;
    double V6[6], A6[6]; /* V and A as (angular, linear) arrays */
    double q[7], u[6], qdot[7], udot[6], qdd[7];
} snap;

static void take(const mbk_matter *m, const mbk_state *s, mbk_stage stage, snap *o)
{
    int nq = mbk_state_get_nq(s), nu = mbk_state_get_nu(s);
    memcpy(o->q, mbk_state_get_q(s), (size_t)nq * sizeof(double));
    memcpy(o->u, mbk_state_get_u(s), (size_t)nu * sizeof(double));
    CHECK_INT(mbk_matter_get_body_transform(m, s, 1, &o->X), MBK_OK);
    if (stage < MBK_STAGE_VELOCITY) return;
    CHECK_INT(mbk_matter_get_body_velocity(m, s, 1, &o->V), MBK_OK);
    memcpy(o->V6, &o->V, sizeof o->V6);
    memcpy(o->qdot, mbk_state_get_qdot(s), (size_t)nq * sizeof(double));
    if (stage < MBK_STAGE_ACCELERATION) return;
    CHECK_INT(mbk_matter_get_body_acceleration(m, s, 1, &o->A), MBK_OK);
    memcpy(o->A6, &o->A, sizeof o->A6);
    memcpy(o->udot, mbk_state_get_udot(s), (size_t)nu * sizeof(double));
    memcpy(o->qdd, mbk_state_get_qdotdot(s), (size_t)nq * sizeof(double));
}

/* State at (q + t qdot, u + t udot) of snapshot b, realized to Velocity. */
static void step_to(const mbk_system *sys, const mbk_matter *m, mbk_state *s, const snap *b, double t, snap *o)
{
    int nq = mbk_state_get_nq(s), nu = mbk_state_get_nu(s);
    double q[7], u[6];
    for (int i = 0; i < nq; ++i) q[i] = b->q[i] + t * b->qdot[i];
    for (int i = 0; i < nu; ++i) u[i] = b->u[i] + t * b->udot[i];
    CHECK_INT(mbk_state_set_q(s, q, nq), MBK_OK);
    CHECK_INT(mbk_state_set_u(s, u, nu), MBK_OK);
    CHECK_INT(mbk_system_realize(sys, s, MBK_STAGE_VELOCITY), MBK_OK);
    take(m, s, MBK_STAGE_VELOCITY, o);
}

/* Largest |a - b| over n values, relative to max(1, max |b|), recorded in *w. */
static void fd_close(double *w, const char *what, int kind, int euler, const double *a, const double *b, int n, double tol)
{
    double e = rel_err(a, b, n);
    *w = fmax(*w, e);
    if (!CHECK(e <= tol)) fprintf(stderr, "    %s (euler %d): %s off by %.3g\n", kind_names[kind], euler, what, e);
}

/* Fitting at snapshot b: q fitted to X_FM(q0) reproduces X_FM; u fitted to
   V_FM(u0) reproduces u0 and V_FM. */
static void check_fits(const mbk_system *sys, const mbk_matter *m, mbk_state *s, int kind, int euler, const snap *b)
{
    int nq = mbk_state_get_nq(s), nu = mbk_state_get_nu(s);
    double zeros[7] = {0}, got[12], want[12];
    snap p;
    CHECK_INT(mbk_state_set_q(s, zeros, nq), MBK_OK);
    CHECK_INT(mbk_matter_set_body_q_to_fit_transform(m, s, 1, &b->X), MBK_OK);
    CHECK_INT(mbk_system_realize(sys, s, MBK_STAGE_POSITION), MBK_OK);
    take(m, s, MBK_STAGE_POSITION, &p);
    put_transform(got, &p.X);
    put_transform(want, &b->X);
    fd_close(&fit_worst[kind], "fitted X_FM", kind, euler, got, want, 12, 1e-12);
    CHECK_INT(mbk_state_set_q(s, b->q, nq), MBK_OK);
    CHECK_INT(mbk_state_set_u(s, zeros, nu), MBK_OK);
    CHECK_INT(mbk_system_realize(sys, s, MBK_STAGE_POSITION), MBK_OK);
    CHECK_INT(mbk_matter_set_body_u_to_fit_velocity(m, s, 1, &b->V), MBK_OK);
    CHECK_INT(mbk_system_realize(sys, s, MBK_STAGE_VELOCITY), MBK_OK);
    take(m, s, MBK_STAGE_VELOCITY, &p);
    fd_close(&fit_worst[kind], "fitted u", kind, euler, p.u, b->u, nu, 1e-12);
    fd_close(&fit_worst[kind], "fitted V_FM", kind, euler, p.V6, b->V6, 6, 1e-12);
}

/* One body on `kind` with X_PF = X_BM = identity, so X_GB = X_FM, V_GB = V_FM, A_GB = A_FM. */
static void check_mobilizer_alone(int kind, int euler)
{
    mbk_system *sys = mbk_multibody_create("one body");
    mbk_matter *m = mbk_multibody_upd_matter(sys);
    mbk_transform I = mbk_transform_identity();
    mbk_mass_props mp = mbk_mass_props_from_central(1.5, rvec(0.4), mbk_mat33_diag(0.3, 0.4, 0.5));
    CHECK_INT(mbk_matter_add_body(m, 0, &I, &mp, &I, make_mobilizer((orc_mobilizer)kind, 0.5 * rnd())), 1);
    static double tau[6], F[12];
    applied ap = {tau, F};
    static const mbk_subsystem_ops force_ops = {.name = "test forces", .realize_dynamics = apply_forces};
    mbk_system_add_subsystem(sys, &force_ops, &ap);
    CHECK_INT(mbk_system_realize_topology(sys), MBK_OK);
    mbk_state *s = mbk_state_create();
    CHECK_INT(mbk_state_init(s, sys), MBK_OK);
    CHECK_INT(mbk_matter_set_use_euler_angles(m, s, euler != 0), MBK_OK);
    CHECK_INT(mbk_system_realize(sys, s, MBK_STAGE_MODEL), MBK_OK);
    int nq = mbk_state_get_nq(s), nu = mbk_state_get_nu(s);

    /* Random state (angles in [-1, 1], unit quaternions) and forces. */
    double *q = mbk_state_upd_q(s), *u = mbk_state_upd_u(s);
    for (int i = 0; i < nq; ++i) q[i] = rnd();
    if (nq == nu + 1) { /* quaternion first */
        double n = sqrt(q[0] * q[0] + q[1] * q[1] + q[2] * q[2] + q[3] * q[3]);
        for (int i = 0; i < 4; ++i) q[i] /= n;
    }
    for (int i = 0; i < nu; ++i) u[i] = rnd();
    for (int i = 0; i < nu; ++i) tau[i] = rnd();
    for (int i = 6; i < 12; ++i) F[i] = rnd();
    CHECK_INT(mbk_system_realize(sys, s, MBK_STAGE_ACCELERATION), MBK_OK);
    snap b, p, n;
    take(m, s, MBK_STAGE_ACCELERATION, &b);

    /* Central differences along (qdot, udot): X_FM gives V_FM, V_FM gives A_FM, qdot gives qdotdot. */
    step_to(sys, m, s, &b, FD_H, &p);
    step_to(sys, m, s, &b, -FD_H, &n);
    double fdV[6], fdA[6], fdq[7] = {0};
    mbk_mat33 Rd = mbk_mat33_scale(mbk_mat33_sub(p.X.R, n.X.R), 0.5 / FD_H);
    mbk_mat33 Wx = mbk_mat33_mul_transpose(Rd, b.X.R); /* skew(w) */
    fdV[0] = 0.5 * (Wx.m[2][1] - Wx.m[1][2]);
    fdV[1] = 0.5 * (Wx.m[0][2] - Wx.m[2][0]);
    fdV[2] = 0.5 * (Wx.m[1][0] - Wx.m[0][1]);
    fdV[3] = (p.X.p.x - n.X.p.x) * 0.5 / FD_H;
    fdV[4] = (p.X.p.y - n.X.p.y) * 0.5 / FD_H;
    fdV[5] = (p.X.p.z - n.X.p.z) * 0.5 / FD_H;
    for (int i = 0; i < 6; ++i) fdA[i] = (p.V6[i] - n.V6[i]) * 0.5 / FD_H;
    for (int i = 0; i < nq; ++i) fdq[i] = (p.qdot[i] - n.qdot[i]) * 0.5 / FD_H;
    fd_close(&fd_worst[kind][0], "d/dt X_FM vs V_FM", kind, euler, fdV, b.V6, 6, FD_TOL);
    fd_close(&fd_worst[kind][1], "d/dt V_FM vs A_FM", kind, euler, fdA, b.A6, 6, FD_TOL);
    fd_close(&fd_worst[kind][2], "d/dt qdot vs qdotdot", kind, euler, fdq, b.qdd, nq, FD_TOL);

    if (nq > 0) check_fits(sys, m, s, kind, euler, &b); /* Weld has nothing to fit (and no fit ops) */
    mbk_state_destroy(s);
    mbk_system_destroy(sys);
}

/* Screw's per-instance data: bad pitch and allocation failure give {NULL, NULL}. */
static void *failing_malloc(size_t n, void *user) { (void)n; (void)user; return NULL; }
static void *failing_realloc(void *p, size_t n, void *user) { (void)p; (void)n; (void)user; return NULL; }
static void plain_free(void *p, void *user) { (void)user; free(p); }

static void check_screw_construction(void)
{
    mbk_mobilizer bad = mbk_mobilizer_screw(NAN);
    CHECK(bad.ops == NULL && bad.impl == NULL);
    CHECK_INT(mbk_last_status(), MBK_EINVAL);
    mbk_set_allocator(failing_malloc, failing_realloc, plain_free, NULL);
    mbk_mobilizer oom = mbk_mobilizer_screw(0.1);
    mbk_set_allocator(NULL, NULL, NULL, NULL);
    CHECK(oom.ops == NULL && oom.impl == NULL);
    CHECK_INT(mbk_last_status(), MBK_ENOMEM);
    mbk_system *sys = mbk_multibody_create("screw");
    mbk_transform I = mbk_transform_identity();
    mbk_mass_props mp = mbk_mass_props_from_central(1.0, mbk_vec3_zero(), mbk_mat33_diag(1, 1, 1));
    CHECK_INT(mbk_matter_add_body(mbk_multibody_upd_matter(sys), 0, &I, &mp, &I, oom), MBK_EINVAL);
    mbk_system_destroy(sys);
}

int main(void)
{
    static const char *names[] = {"X_GB", "V_GB", "A_GB", "qdot", "udot", "qdotdot", "M", "residual"};
    check_screw_construction();
    int model = 0;
    static const int sizes[] = {1, 2, 3, 5, 8, 13, 20, 30, 40, 50};
    for (int euler = 0; euler <= 1; ++euler)
        for (size_t k = 0; k < sizeof sizes / sizeof sizes[0]; ++k)
            for (int rep = 0; rep < 2; ++rep) run_model(model++, sizes[k], euler, -1);
    printf("%d random models; worst relative differences from Simbody:\n", model);
    for (int i = 0; i < 8; ++i) printf("  %-9s %.2e\n", names[i], worst[i]);

    int alone = 0;
    for (int kind = 0; kind < NKINDS; ++kind)
        for (int euler = 0; euler <= 1; ++euler) {
            run_model(model++, 1, euler, kind);
            run_model(model++, 3, euler, kind);
            check_mobilizer_alone(kind, euler);
            alone += 2;
        }
    printf("%d single-mobilizer models (one body, chain of three); worst relative differences:\n", alone);
    printf("  %-11s", "");
    for (int i = 0; i < 8; ++i) printf(" %-8s", names[i]);
    printf(" | FD: V      A        qdotdot  | fit\n");
    for (int kind = 0; kind < NKINDS; ++kind) {
        printf("  %-11s", kind_names[kind]);
        for (int i = 0; i < 8; ++i) printf(" %.2e", kind_worst[kind][i]);
        printf(" |   %.2e %.2e %.2e | %.2e\n", fd_worst[kind][0], fd_worst[kind][1], fd_worst[kind][2],
               fit_worst[kind]);
    }
    return mbk_test_finish();
}
