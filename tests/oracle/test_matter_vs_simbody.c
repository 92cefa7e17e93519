/* The matter subsystem against Simbody on random trees of the built-in
 * mobilizers implemented so far (Weld, Pin, Slider, Translation, Ball,
 * Free), in quaternion and Euler-angle modes: body poses, velocities and
 * accelerations, qdot, udot, qdotdot, the mass matrix, inverse dynamics and
 * kinetic energy, to 1e-10 relative. Plus invariants that need no oracle:
 * the residual vanishes at the ABA's udot, M^-1 (M v) = v. */
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

static double worst[8];
static void check_close(const char *what, int slot, const double *a, const double *b, int n, int model)
{
    double e = rel_err(a, b, n);
    worst[slot] = fmax(worst[slot], e);
    if (!CHECK(e <= TOL)) fprintf(stderr, "    model %d: %s differs by %.3g (relative)\n", model, what, e);
}

static void run_model(int model, int nbodies, int euler)
{
    static const orc_mobilizer kinds[] = {ORC_PIN, ORC_SLIDER, ORC_BALL, ORC_FREE, ORC_TRANSLATION, ORC_WELD};
    orc_body ob[MAX_B];
    mbk_system *sys = mbk_multibody_create("random tree");
    mbk_matter *m = mbk_multibody_upd_matter(sys);
    for (int i = 0; i < nbodies; ++i) {
        int parent = i == 0 ? 0 : (int)((rnd() + 1.0) * 0.5 * (i + 1)) % (i + 1);
        orc_mobilizer kind = kinds[(int)((rnd() + 1.0) * 3.0) % 6];
        if (i == nbodies - 1 && kind == ORC_WELD) kind = ORC_PIN;
        mbk_transform X_PF = mbk_transform_make(rrot(), rvec(0.7));
        mbk_transform X_BM = mbk_transform_make(rrot(), rvec(0.3));
        mbk_mat33 R = rrot();
        double a = 0.2 + 0.1 * (rnd() + 1), b = 0.2 + 0.1 * (rnd() + 1), c = 0.2 + 0.1 * (rnd() + 1);
        mbk_mat33 I = mbk_mat33_mul_transpose(mbk_mat33_mul(R, mbk_mat33_diag(b + c, a + c, a + b)), R);
        mbk_mass_props mp = mbk_mass_props_from_central(1.0 + 0.5 * rnd(), rvec(0.4), I);
        mbk_mobilizer mob = kind == ORC_PIN ? mbk_mobilizer_pin() : kind == ORC_SLIDER ? mbk_mobilizer_slider()
                          : kind == ORC_BALL ? mbk_mobilizer_ball() : kind == ORC_FREE ? mbk_mobilizer_free()
                          : kind == ORC_TRANSLATION ? mbk_mobilizer_translation() : mbk_mobilizer_weld();
        CHECK_INT(mbk_matter_add_body(m, parent, &X_PF, &mp, &X_BM, mob), i + 1);
        memset(&ob[i], 0, sizeof ob[i]);
        ob[i].parent = parent;
        ob[i].type = kind;
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
    check_close("X_GB", 0, mX, X, 12 * nb, model);
    check_close("V_GB", 1, mV, V, 6 * nb, model);
    check_close("A_GB", 2, mA, A, 6 * nb, model);
    check_close("qdot", 3, mbk_state_get_qdot(s), qd, nq, model);
    check_close("udot", 4, mbk_state_get_udot(s), ud, nu, model);
    check_close("qdotdot", 5, mbk_state_get_qdotdot(s), qdd, nq, model);
    CHECK_INT(mbk_matter_calc_mass_matrix(m, s, mM), MBK_OK);
    check_close("M", 6, mM, M, nu * nu, model);

    /* Inverse dynamics at an arbitrary udot. */
    for (int i = 0; i < nu; ++i) known[i] = rnd();
    CHECK_INT(orc_inverse_dynamics(&om, qn, u, known, tau, F, res), 0);
    CHECK_INT(mbk_matter_calc_residual_force(m, s, tau, (const mbk_spatial_vec *)F, known, mres), MBK_OK);
    check_close("residual", 7, mres, res, nu, model);

    /* Invariants: residual is zero at the ABA's udot; M^-1 M v = v; KE = u.Mu/2. */
    CHECK_INT(mbk_matter_calc_residual_force(m, s, tau, (const mbk_spatial_vec *)F, mbk_state_get_udot(s), mres), MBK_OK);
    double zero[6 * MAX_B] = {0};
    check_close("residual at ABA udot", 7, mres, zero, nu, model);
    CHECK_INT(mbk_matter_multiply_by_M(m, s, known, res), MBK_OK);
    CHECK_INT(mbk_matter_multiply_by_M_inverse(m, s, res, mres), MBK_OK);
    check_close("M^-1 M v", 6, mres, known, nu, model);
    double ke = 0;
    CHECK_INT(mbk_system_calc_energy(sys, s, &ke, NULL), MBK_OK);
    CHECK_NEAR(ke, out.kinetic_energy, TOL);

    mbk_state_destroy(s);
    mbk_system_destroy(sys);
}

int main(void)
{
    int model = 0;
    static const int sizes[] = {1, 2, 3, 5, 8, 13, 20, 30, 40, 50};
    for (int euler = 0; euler <= 1; ++euler)
        for (size_t k = 0; k < sizeof sizes / sizeof sizes[0]; ++k)
            for (int rep = 0; rep < 2; ++rep) run_model(model++, sizes[k], euler);
    static const char *names[] = {"X_GB", "V_GB", "A_GB", "qdot", "udot", "qdotdot", "M", "residual"};
    printf("%d random models; worst relative differences from Simbody:\n", model);
    for (int i = 0; i < 8; ++i) printf("  %-9s %.2e\n", names[i], worst[i]);
    return mbk_test_finish();
}
