/* Self-check of the Simbody oracle against analytic results, so that mbk's
 * cross-check tests can trust it:
 *   - the mobilizer conventions documented in simbody_oracle.h (X_FM(q),
 *     V_FM = H u, qdot = N u) for every mobilizer type, in both quaternion
 *     and Euler-angle modes, and X_GB = X_PF X_FM X_MB with general frames;
 *   - a pin pendulum, a slider on an incline, a free body under a force and
 *     a torque-free spinning free body (Euler's equations, off-centre COM);
 *   - invariants on a mixed tree: M symmetric positive definite, residual of
 *     the inverse dynamics zero at the forward-dynamics udot and equal to
 *     M*delta when udot is perturbed, KE = 0.5 u^T M u, PE from the COMs,
 *     V_GB = J u, qdotdot = d/dt qdot, and dE/dt = power of applied forces. */
#include "mbk_test.h"
#include "simbody_oracle.h"
#include "oracle_test_util.h"

#include <stdlib.h>
#include <string.h>

#define PI 3.14159265358979323846

/* ---- more 3-D helpers (oracle_test_util.h has the basic ones) ---- */

static void quat_to_R(const double *q, double *R) /* q = (w,x,y,z), unit */
{
    const double w = q[0], x = q[1], y = q[2], z = q[3];
    R[0] = 1 - 2 * (y * y + z * z); R[1] = 2 * (x * y - w * z);     R[2] = 2 * (x * z + w * y);
    R[3] = 2 * (x * y + w * z);     R[4] = 1 - 2 * (x * x + z * z); R[5] = 2 * (y * z - w * x);
    R[6] = 2 * (x * z - w * y);     R[7] = 2 * (y * z + w * x);     R[8] = 1 - 2 * (x * x + y * y);
}

static void quat_mul(const double *a, const double *b, double *c) /* Hamilton product */
{
    double t[4];
    t[0] = a[0] * b[0] - a[1] * b[1] - a[2] * b[2] - a[3] * b[3];
    t[1] = a[0] * b[1] + a[1] * b[0] + a[2] * b[3] - a[3] * b[2];
    t[2] = a[0] * b[2] - a[1] * b[3] + a[2] * b[0] + a[3] * b[1];
    t[3] = a[0] * b[3] + a[1] * b[2] - a[2] * b[1] + a[3] * b[0];
    memcpy(c, t, sizeof t);
}

static void xf_set(double *X, const double *R, double px, double py, double pz)
{
    memcpy(X, R, 9 * sizeof(double));
    X[9] = px;
    X[10] = py;
    X[11] = pz;
}

static void xf_identity(double *X)
{
    static const double I[9] = {1, 0, 0, 0, 1, 0, 0, 0, 1};
    xf_set(X, I, 0, 0, 0);
}

static void xf_compose(const double *A, const double *B, double *C) /* C = A B */
{
    double T[12], p[3];
    mat_mul(A, B, T);
    mat_vec(A, B + 9, p);
    for (int i = 0; i < 3; ++i) T[9 + i] = A[9 + i] + p[i];
    memcpy(C, T, sizeof T);
}

static void xf_invert(const double *A, double *B)
{
    double T[12];
    for (int i = 0; i < 3; ++i)
        for (int j = 0; j < 3; ++j) T[3 * i + j] = A[3 * j + i];
    mat_vec(T, A + 9, T + 9);
    for (int i = 0; i < 3; ++i) T[9 + i] = -T[9 + i];
    memcpy(B, T, sizeof T);
}

/* element-wise CHECK_NEAR of two arrays, counted as one check */
#define check_array(a, b, n, tol, what) check_array_at((a), (b), (n), (tol), (what), __FILE__, __LINE__)
static void check_array_at(const double *a, const double *b, int n, double tol, const char *what,
                           const char *file, int line)
{
    int ok = 1;
    for (int i = 0; i < n; ++i)
        if (!mbk_test_close(a[i], b[i], tol)) ok = 0;
    if (!mbk_test_record(ok, file, line, what))
        for (int i = 0; i < n; ++i)
            fprintf(stderr, "    [%d] %.15g vs %.15g\n", i, a[i], b[i]);
}

/* ---- model helpers ---- */

static orc_body make_body(int parent, orc_mobilizer type, double mass, double cx, double cy,
                          double cz, double Ixx, double Iyy, double Izz)
{
    orc_body b;
    memset(&b, 0, sizeof b);
    b.parent = parent;
    b.type = type;
    xf_identity(b.X_PF);
    xf_identity(b.X_BM);
    b.mass = mass;
    b.com[0] = cx;
    b.com[1] = cy;
    b.com[2] = cz;
    b.inertia_about_com[0] = Ixx;
    b.inertia_about_com[4] = Iyy;
    b.inertia_about_com[8] = Izz;
    return b;
}

static orc_model make_model(const orc_body *bodies, int n, int euler, double gx, double gy, double gz)
{
    orc_model m;
    memset(&m, 0, sizeof m);
    m.n_bodies = n;
    m.bodies = bodies;
    m.use_euler_angles = euler;
    m.gravity[0] = gx;
    m.gravity[1] = gy;
    m.gravity[2] = gz;
    return m;
}

#define MAXQ 64
#define MAXB 16

typedef struct evalbuf {
    double q[MAXQ], X_GB[12 * MAXB], V_GB[6 * MAXB], A_GB[6 * MAXB], X_FM[12 * MAXB],
        V_FM[6 * MAXB], qdot[MAXQ], udot[MAXQ], qdotdot[MAXQ], M[MAXQ * MAXQ],
        J[6 * MAXB * MAXQ];
    orc_result r;
} evalbuf;

static int eval(const orc_model *m, const double *q, const double *u, const double *f,
                const double *F, evalbuf *e)
{
    memset(&e->r, 0, sizeof e->r);
    e->r.q = e->q;
    e->r.X_GB = e->X_GB;
    e->r.V_GB = e->V_GB;
    e->r.A_GB = e->A_GB;
    e->r.X_FM = e->X_FM;
    e->r.V_FM = e->V_FM;
    e->r.qdot = e->qdot;
    e->r.udot = e->udot;
    e->r.qdotdot = e->qdotdot;
    e->r.M = e->M;
    e->r.J = e->J;
    int rc = orc_eval(m, q, u, f, F, &e->r);
    if (rc) fprintf(stderr, "orc_eval failed: %s\n", orc_last_error());
    return rc;
}

/* ---- 1. mobilizer conventions ---- */

/* Expected X_FM, and expected H (6 x nu, column k = V_FM for u = e_k) and N
 * (nq x nu, column k = qdot for u = e_k), as documented in the header. */
typedef struct expect {
    int nq, nu;
    double X_FM[12];
    double H[6][6];
    double N[7][6];
} expect;

static void expected(orc_mobilizer t, int euler, const double *q, double pitch, expect *e)
{
    static const double I[9] = {1, 0, 0, 0, 1, 0, 0, 0, 1};
    double R[9];
    memset(e, 0, sizeof *e);
    xf_identity(e->X_FM);
    switch (t) {
    case ORC_WELD: e->nq = e->nu = 0; break;
    case ORC_PIN:
        e->nq = e->nu = 1;
        rot_axis(2, q[0], R);
        xf_set(e->X_FM, R, 0, 0, 0);
        e->H[2][0] = 1;
        e->N[0][0] = 1;
        break;
    case ORC_SLIDER:
        e->nq = e->nu = 1;
        xf_set(e->X_FM, I, q[0], 0, 0);
        e->H[3][0] = 1;
        e->N[0][0] = 1;
        break;
    case ORC_SCREW:
        e->nq = e->nu = 1;
        rot_axis(2, q[0], R);
        xf_set(e->X_FM, R, 0, 0, pitch * q[0]);
        e->H[2][0] = 1;
        e->H[5][0] = pitch;
        e->N[0][0] = 1;
        break;
    case ORC_UNIVERSAL: {
        e->nq = e->nu = 2;
        double Ry[9];
        rot_axis(0, q[0], R);
        rot_axis(1, q[1], Ry);
        double R2[9];
        mat_mul(R, Ry, R2);
        xf_set(e->X_FM, R2, 0, 0, 0);
        e->H[0][0] = 1;
        e->H[1][1] = cos(q[0]); /* R_x(q0) * y */
        e->H[2][1] = sin(q[0]);
        e->N[0][0] = e->N[1][1] = 1;
        break;
    }
    case ORC_CYLINDER:
        e->nq = e->nu = 2;
        rot_axis(2, q[0], R);
        xf_set(e->X_FM, R, 0, 0, q[1]);
        e->H[2][0] = 1;
        e->H[5][1] = 1;
        e->N[0][0] = e->N[1][1] = 1;
        break;
    case ORC_PLANAR:
        e->nq = e->nu = 3;
        rot_axis(2, q[0], R);
        xf_set(e->X_FM, R, q[1], q[2], 0);
        e->H[2][0] = 1;
        e->H[3][1] = 1;
        e->H[4][2] = 1;
        e->N[0][0] = e->N[1][1] = e->N[2][2] = 1;
        break;
    case ORC_GIMBAL:
    case ORC_BUSHING: {
        const int trans = t == ORC_BUSHING;
        e->nq = e->nu = trans ? 6 : 3;
        rot_xyz(q[0], q[1], q[2], R);
        xf_set(e->X_FM, R, trans ? q[3] : 0, trans ? q[4] : 0, trans ? q[5] : 0);
        /* w_FM = x qdot0 + R_x(q0) y qdot1 + R_x(q0) R_y(q1) z qdot2 */
        const double ca = cos(q[0]), sa = sin(q[0]), cb = cos(q[1]), sb = sin(q[1]);
        const double W[3][3] = {{1, 0, sb}, {0, ca, -sa * cb}, {0, sa, ca * cb}};
        for (int i = 0; i < 3; ++i)
            for (int k = 0; k < 3; ++k) e->H[i][k] = W[i][k];
        for (int k = 0; k < e->nq; ++k) e->N[k][k] = 1;
        if (trans)
            for (int k = 0; k < 3; ++k) e->H[3 + k][3 + k] = 1;
        break;
    }
    case ORC_TRANSLATION:
        e->nq = e->nu = 3;
        xf_set(e->X_FM, I, q[0], q[1], q[2]);
        for (int k = 0; k < 3; ++k) e->H[3 + k][k] = e->N[k][k] = 1;
        break;
    case ORC_BALL:
    case ORC_FREE: {
        const int trans = t == ORC_FREE;
        e->nu = trans ? 6 : 3;
        for (int k = 0; k < 3; ++k) e->H[k][k] = 1; /* u = w_FM in F */
        if (trans)
            for (int k = 0; k < 3; ++k) e->H[3 + k][3 + k] = 1; /* v_FM in F */
        const int nrot = euler ? 3 : 4;
        e->nq = nrot + (trans ? 3 : 0);
        if (euler) {
            rot_xyz(q[0], q[1], q[2], R);
            /* qdot = W^-1 w with W as for Gimbal; W^-1 written out */
            const double ca = cos(q[0]), sa = sin(q[0]), cb = cos(q[1]), sb = sin(q[1]);
            const double Wi[3][3] = {{1, sa * sb / cb, -ca * sb / cb}, {0, ca, sa}, {0, -sa / cb, ca / cb}};
            for (int i = 0; i < 3; ++i)
                for (int k = 0; k < 3; ++k) e->N[i][k] = Wi[i][k];
        } else {
            quat_to_R(q, R);
            /* qdot = 0.5 * (0, w) (x) q */
            for (int k = 0; k < 3; ++k) {
                double wq[4] = {0, 0, 0, 0}, qd[4];
                wq[1 + k] = 1;
                quat_mul(wq, q, qd);
                for (int i = 0; i < 4; ++i) e->N[i][k] = 0.5 * qd[i];
            }
        }
        xf_set(e->X_FM, R, trans ? q[nrot] : 0, trans ? q[nrot + 1] : 0, trans ? q[nrot + 2] : 0);
        if (trans)
            for (int k = 0; k < 3; ++k) e->N[nrot + k][3 + k] = 1;
        break;
    }
    }
}

static const char *type_name(orc_mobilizer t)
{
    static const char *n[] = {"weld", "pin", "slider", "screw", "universal", "cylinder",
                              "planar", "gimbal", "ball", "translation", "free", "bushing"};
    return n[t];
}

static void test_mobilizer_conventions(void)
{
    static evalbuf e;
    for (int euler = 0; euler < 2; ++euler) {
        for (int t = ORC_WELD; t <= ORC_BUSHING; ++t) {
            orc_body b = make_body(0, (orc_mobilizer)t, 2.0, 0.1, 0.2, 0.3, 1, 2, 3);
            b.screw_pitch = 0.37;
            orc_model m = make_model(&b, 1, euler, 0, 0, 0);
            int nq = -1, nu = -1;
            CHECK(orc_sizes(&m, &nq, &nu) == 0);
            double q[8] = {0.3, -0.4, 0.5, 0.7, 1.1, -1.3, 1.7, 0};
            if (!euler && (t == ORC_BALL || t == ORC_FREE)) {
                /* a deliberately unnormalized quaternion, then p */
                double q4[7] = {1.8, 0.2, -0.6, 0.4, 1.1, -1.3, 1.7};
                memcpy(q, q4, sizeof q4);
            }
            /* default q: zeros, identity quaternion */
            double dq[8] = {9, 9, 9, 9, 9, 9, 9, 9};
            CHECK(orc_default_q(&m, dq) == 0);
            for (int i = 0; i < nq; ++i)
                CHECK_NEAR(dq[i], (!euler && (t == ORC_BALL || t == ORC_FREE) && i == 0) ? 1.0 : 0.0, 0);

            int q_start[2], bnq[2], u_start[2], bnu[2];
            CHECK(orc_layout(&m, q_start, bnq, u_start, bnu) == 0);
            CHECK(q_start[1] == 0 && u_start[1] == 0 && bnq[1] == nq && bnu[1] == nu &&
                  bnq[0] == 0 && bnu[0] == 0);

            double H[6][6], N[7][6], qn[8];
            for (int k = 0; k < nu; ++k) {
                double u[6] = {0};
                u[k] = 1;
                if (eval(&m, q, u, NULL, NULL, &e)) {
                    CHECK(0);
                    continue;
                }
                for (int i = 0; i < 6; ++i) H[i][k] = e.V_FM[6 + i];
                for (int i = 0; i < nq; ++i) N[i][k] = e.qdot[i];
            }
            if (eval(&m, q, NULL, NULL, NULL, &e)) {
                CHECK(0);
                continue;
            }
            memcpy(qn, e.q, sizeof qn);
            if (!euler && (t == ORC_BALL || t == ORC_FREE)) {
                const double n = sqrt(q[0] * q[0] + q[1] * q[1] + q[2] * q[2] + q[3] * q[3]);
                for (int i = 0; i < 4; ++i) CHECK_NEAR(qn[i], q[i] / n, 1e-14);
                for (int i = 4; i < nq; ++i) CHECK_NEAR(qn[i], q[i], 0);
            } else {
                for (int i = 0; i < nq; ++i) CHECK_NEAR(qn[i], q[i], 0);
            }
            expect x;
            expected((orc_mobilizer)t, euler, qn, b.screw_pitch, &x);
            char what[128];
            snprintf(what, sizeof what, "%s (euler=%d): nq, nu", type_name((orc_mobilizer)t), euler);
            mbk_test_record(nq == x.nq && nu == x.nu, __FILE__, __LINE__, what);
            if (nq != x.nq || nu != x.nu) {
                fprintf(stderr, "    nq=%d nu=%d, expected %d %d\n", nq, nu, x.nq, x.nu);
                continue;
            }
            snprintf(what, sizeof what, "%s (euler=%d): X_FM(q)", type_name((orc_mobilizer)t), euler);
            check_array(e.X_FM + 12, x.X_FM, 12, 1e-13, what);
            for (int k = 0; k < nu; ++k) {
                double h[6], he[6], n[7], ne[7];
                for (int i = 0; i < 6; ++i) h[i] = H[i][k], he[i] = x.H[i][k];
                for (int i = 0; i < nq; ++i) n[i] = N[i][k], ne[i] = x.N[i][k];
                snprintf(what, sizeof what, "%s (euler=%d): V_FM for u=e%d", type_name((orc_mobilizer)t), euler, k);
                check_array(h, he, 6, 1e-13, what);
                snprintf(what, sizeof what, "%s (euler=%d): qdot for u=e%d", type_name((orc_mobilizer)t), euler, k);
                check_array(n, ne, nq, 1e-13, what);
            }
            /* Ground entries */
            double Id[12];
            xf_identity(Id);
            check_array(e.X_GB, Id, 12, 0, "Ground X_GB is identity");
        }
    }
}

/* Consistency of V_FM with X_FM(q(t)): d/dt R_FM = [w_FM] R_FM and d/dt p_FM =
 * v_FM (both in F), by central differences along qdot. Also X_GB = X_PF X_FM
 * inv(X_BM) with general X_PF and X_BM, and V_GB from the parent. */
static void test_velocity_and_frames(void)
{
    static evalbuf e, ep, em;
    for (int euler = 0; euler < 2; ++euler) {
        for (int t = ORC_PIN; t <= ORC_BUSHING; ++t) {
            orc_body b[2];
            b[0] = make_body(0, ORC_PIN, 1.5, 0.2, 0.1, 0, 0.3, 0.4, 0.5);
            b[1] = make_body(1, (orc_mobilizer)t, 2.0, 0.1, -0.2, 0.3, 1, 2, 3);
            b[1].screw_pitch = -0.21;
            double R[9];
            rot_xyz(0.3, -0.7, 1.1, R);
            xf_set(b[1].X_PF, R, 0.5, -0.25, 0.75);
            rot_xyz(-0.6, 0.2, 0.9, R);
            xf_set(b[1].X_BM, R, -0.1, 0.3, 0.2);
            orc_model m = make_model(b, 2, euler, 0, 0, 0);
            int nq, nu;
            if (orc_sizes(&m, &nq, &nu)) {
                CHECK(0);
                continue;
            }
            double q[8] = {0.4, 0.3, -0.4, 0.5, 0.7, 1.1, -1.3, 0};
            if (!euler && (t == ORC_BALL || t == ORC_FREE)) {
                double q4[8] = {0.4, 0.5, 0.1, -0.3, 0.8, 1.1, -1.3, 1.7};
                memcpy(q, q4, sizeof q4);
            }
            double u[7] = {0.7, -0.5, 0.9, 0.4, -0.3, 0.6, 1.2};
            if (eval(&m, q, u, NULL, NULL, &e)) {
                CHECK(0);
                continue;
            }
            /* X_GB(body 2) = X_GB(body 1) X_PF X_FM inv(X_BM) */
            double X[12], Xmb[12];
            xf_compose(e.X_GB + 12, b[1].X_PF, X);
            xf_compose(X, e.X_FM + 24, X);
            xf_invert(b[1].X_BM, Xmb);
            xf_compose(X, Xmb, X);
            char what[128];
            snprintf(what, sizeof what, "%s (euler=%d): X_GB = X_GP X_PF X_FM X_MB", type_name((orc_mobilizer)t), euler);
            check_array(e.X_GB + 24, X, 12, 1e-13, what);

            /* finite differences of X_FM along q(t) = q + s*qdot */
            const double h = 1e-6;
            double qp[8], qm[8];
            memcpy(qp, e.q, sizeof qp);
            memcpy(qm, e.q, sizeof qm);
            for (int i = 0; i < nq; ++i) {
                qp[i] += h * e.qdot[i];
                qm[i] -= h * e.qdot[i];
            }
            if (eval(&m, qp, u, NULL, NULL, &ep) || eval(&m, qm, u, NULL, NULL, &em)) {
                CHECK(0);
                continue;
            }
            double Rdot[9], W[9], w[3], v[3];
            for (int i = 0; i < 9; ++i) Rdot[i] = (ep.X_FM[24 + i] - em.X_FM[24 + i]) / (2 * h);
            /* [w] = Rdot R^T */
            double Rt[9];
            for (int i = 0; i < 3; ++i)
                for (int j = 0; j < 3; ++j) Rt[3 * i + j] = e.X_FM[24 + 3 * j + i];
            mat_mul(Rdot, Rt, W);
            w[0] = W[7];
            w[1] = W[2];
            w[2] = W[3];
            for (int i = 0; i < 3; ++i) v[i] = (ep.X_FM[33 + i] - em.X_FM[33 + i]) / (2 * h);
            snprintf(what, sizeof what, "%s (euler=%d): w_FM = d/dt R_FM", type_name((orc_mobilizer)t), euler);
            check_array(w, e.V_FM + 12, 3, 1e-7, what);
            snprintf(what, sizeof what, "%s (euler=%d): v_FM = d/dt p_FM", type_name((orc_mobilizer)t), euler);
            check_array(v, e.V_FM + 15, 3, 1e-7, what);

            /* same for the body: V_GB = d/dt X_GB of body 2 along (q, qdot) of both bodies */
            for (int i = 0; i < 9; ++i) Rdot[i] = (ep.X_GB[24 + i] - em.X_GB[24 + i]) / (2 * h);
            for (int i = 0; i < 3; ++i)
                for (int j = 0; j < 3; ++j) Rt[3 * i + j] = e.X_GB[24 + 3 * j + i];
            mat_mul(Rdot, Rt, W);
            w[0] = W[7];
            w[1] = W[2];
            w[2] = W[3];
            for (int i = 0; i < 3; ++i) v[i] = (ep.X_GB[33 + i] - em.X_GB[33 + i]) / (2 * h);
            snprintf(what, sizeof what, "%s (euler=%d): V_GB = d/dt X_GB", type_name((orc_mobilizer)t), euler);
            double wv[6] = {w[0], w[1], w[2], v[0], v[1], v[2]};
            check_array(wv, e.V_GB + 12, 6, 1e-7, what);

            /* qdotdot = d/dt qdot along the trajectory: q(+-h) = q +- h qdot + h^2/2 qdotdot,
             * u(+-h) = u +- h udot */
            double up[7], um[7];
            for (int i = 0; i < nq; ++i) {
                qp[i] = e.q[i] + h * e.qdot[i] + 0.5 * h * h * e.qdotdot[i];
                qm[i] = e.q[i] - h * e.qdot[i] + 0.5 * h * h * e.qdotdot[i];
            }
            for (int i = 0; i < nu; ++i) {
                up[i] = u[i] + h * e.udot[i];
                um[i] = u[i] - h * e.udot[i];
            }
            if (eval(&m, qp, up, NULL, NULL, &ep) || eval(&m, qm, um, NULL, NULL, &em)) {
                CHECK(0);
                continue;
            }
            double qdd[8];
            for (int i = 0; i < nq; ++i) qdd[i] = (ep.qdot[i] - em.qdot[i]) / (2 * h);
            snprintf(what, sizeof what, "%s (euler=%d): qdotdot = d/dt qdot", type_name((orc_mobilizer)t), euler);
            check_array(qdd, e.qdotdot, nq, 1e-6, what);
        }
    }
}

/* ---- 2. analytic dynamics ---- */

static void test_pin_pendulum(void)
{
    static evalbuf e;
    const double m = 2.5, l = 0.8, Izz = 0.3, g = 9.81;
    orc_body b = make_body(0, ORC_PIN, m, l, 0, 0, 0.1, 0.2, Izz);
    orc_model mod = make_model(&b, 1, 0, 0, -g, 0);
    const double Io = Izz + m * l * l;
    const double thetas[3] = {0.0, 0.7, -2.1};
    for (int k = 0; k < 3; ++k) {
        const double th = thetas[k], w = 1.3 - k, tau = 0.9 * k;
        double q = th, u = w, f = tau;
        if (eval(&mod, &q, &u, &f, NULL, &e)) {
            CHECK(0);
            continue;
        }
        CHECK_NEAR(e.udot[0], (tau - m * g * l * cos(th)) / Io, 1e-13);
        CHECK_NEAR(e.qdot[0], w, 0);
        CHECK_NEAR(e.qdotdot[0], e.udot[0], 1e-15);
        CHECK_NEAR(e.M[0], Io, 1e-14);
        CHECK_NEAR(e.r.kinetic_energy, 0.5 * Io * w * w, 1e-14);
        CHECK_NEAR(e.r.potential_energy, m * g * l * sin(th), 1e-14);
        /* body pose and motion: R_z(theta), origin fixed */
        CHECK_NEAR(e.X_GB[12 + 0], cos(th), 1e-15);
        CHECK_NEAR(e.X_GB[12 + 3], sin(th), 1e-15);
        CHECK_NEAR(e.V_GB[6 + 2], w, 0);
        CHECK_NEAR(e.A_GB[6 + 2], e.udot[0], 1e-15);
        CHECK_NEAR(fabs(e.A_GB[6 + 3]) + fabs(e.A_GB[6 + 4]) + fabs(e.A_GB[6 + 5]), 0, 1e-15);
        /* the same torque as a body force (moment about the origin, in G) */
        double F[12] = {0};
        F[6 + 2] = tau;
        if (eval(&mod, &q, &u, NULL, F, &e)) {
            CHECK(0);
            continue;
        }
        CHECK_NEAR(e.udot[0], (tau - m * g * l * cos(th)) / Io, 1e-13);
        /* a force P (in G) on the body origin makes no torque; at the COM it does */
        memset(F, 0, sizeof F);
        F[6 + 3] = 0.4;
        F[6 + 4] = -1.7;
        if (eval(&mod, &q, &u, NULL, F, &e)) {
            CHECK(0);
            continue;
        }
        CHECK_NEAR(e.udot[0], -m * g * l * cos(th) / Io, 1e-13);
        /* inverse dynamics: zero residual at the analytic udot */
        double ud = (tau - m * g * l * cos(th)) / Io, res = 1;
        CHECK(orc_inverse_dynamics(&mod, &q, &u, &ud, &f, NULL, &res) == 0);
        CHECK_NEAR(res, 0, 1e-13);
        ud = 0;
        CHECK(orc_inverse_dynamics(&mod, &q, &u, &ud, NULL, NULL, &res) == 0);
        CHECK_NEAR(res, m * g * l * cos(th), 1e-13); /* torque needed to hold it */
    }
}

static void test_slider_incline(void)
{
    static evalbuf e;
    const double m = 3.0, g = 9.81, a = 0.5;
    /* F's x axis points down a slope of angle a: rotate about z by -a */
    orc_body b = make_body(0, ORC_SLIDER, m, 0.2, 0.3, -0.1, 0.5, 0.6, 0.7);
    double R[9];
    rot_axis(2, -a, R);
    xf_set(b.X_PF, R, 1, 2, 3);
    orc_model mod = make_model(&b, 1, 0, 0, -g, 0);
    double q = 0.4, u = -0.3, f = 1.2;
    if (eval(&mod, &q, &u, &f, NULL, &e)) {
        CHECK(0);
        return;
    }
    CHECK_NEAR(e.udot[0], g * sin(a) + f / m, 1e-13);
    CHECK_NEAR(e.M[0], m, 1e-14);
    CHECK_NEAR(e.X_GB[12 + 9], 1 + q * cos(a), 1e-14);
    CHECK_NEAR(e.X_GB[12 + 10], 2 - q * sin(a), 1e-14);
    CHECK_NEAR(e.A_GB[6 + 3], e.udot[0] * cos(a), 1e-14);
    CHECK_NEAR(e.A_GB[6 + 4], -e.udot[0] * sin(a), 1e-14);
    CHECK_NEAR(e.r.kinetic_energy, 0.5 * m * u * u, 1e-14);
    /* PE = -m g . p_com = m g (y of the COM) */
    CHECK_NEAR(e.r.potential_energy, m * g * (2 - q * sin(a) - 0.2 * sin(a) + 0.3 * cos(a)), 1e-13);
}

static void test_free_body(void)
{
    static evalbuf e, e2;
    const double m = 1.7;
    /* COM at the origin: udot = (0, F/m) for a pure force, both modes */
    for (int euler = 0; euler < 2; ++euler) {
        orc_body b = make_body(0, ORC_FREE, m, 0, 0, 0, 0.4, 0.5, 0.6);
        orc_model mod = make_model(&b, 1, euler, 0, 0, 0);
        double q[7] = {0.3, -0.2, 0.9, 1, 2, 3, 0};
        if (!euler) {
            double q4[7] = {0.8, 0.1, 0.3, -0.5, 1, 2, 3};
            memcpy(q, q4, sizeof q4);
        }
        double u[6] = {0, 0, 0, 0.5, -0.4, 0.2};
        double F[12] = {0, 0, 0, 0, 0, 0, 0, 0, 0, 2.0, -3.0, 0.5};
        if (eval(&mod, q, u, NULL, F, &e)) {
            CHECK(0);
            continue;
        }
        for (int i = 0; i < 3; ++i) CHECK_NEAR(e.udot[i], 0, 1e-14);
        for (int i = 0; i < 3; ++i) CHECK_NEAR(e.udot[3 + i], F[9 + i] / m, 1e-14);
        /* mobility forces on the translational u act the same */
        double f[6] = {0, 0, 0, 2.0, -3.0, 0.5};
        if (eval(&mod, q, u, f, NULL, &e)) {
            CHECK(0);
            continue;
        }
        for (int i = 0; i < 3; ++i) CHECK_NEAR(e.udot[3 + i], f[3 + i] / m, 1e-14);
    }

    /* Torque-free spin with a general central inertia and an off-origin COM:
     * alpha_G from I_G alpha + w x I_G w = 0 (about the COM), and the origin's
     * acceleration a_o = -alpha x c_G - w x (w x c_G) so the COM stays unaccelerated. */
    const double Ic[9] = {0.9, 0.1, -0.05, 0.1, 1.4, 0.2, -0.05, 0.2, 2.1};
    const double c[3] = {0.3, -0.2, 0.15};
    for (int euler = 0; euler < 2; ++euler) {
        orc_body b = make_body(0, ORC_FREE, m, c[0], c[1], c[2], 0, 0, 0);
        memcpy(b.inertia_about_com, Ic, sizeof Ic);
        orc_model mod = make_model(&b, 1, euler, 0, 0, 0);
        double q[7] = {0.3, -0.2, 0.9, 1, 2, 3, 0};
        double R[9];
        if (euler) {
            rot_xyz(q[0], q[1], q[2], R);
        } else {
            double q4[7] = {0.8, 0.1, 0.3, -0.5, 1, 2, 3};
            memcpy(q, q4, sizeof q4);
            double n = sqrt(0.8 * 0.8 + 0.1 * 0.1 + 0.3 * 0.3 + 0.5 * 0.5), qq[4];
            for (int i = 0; i < 4; ++i) qq[i] = q4[i] / n;
            quat_to_R(qq, R);
        }
        double u[6] = {1.1, -2.3, 0.7, 0.5, -0.4, 0.2};
        if (eval(&mod, q, u, NULL, NULL, &e)) {
            CHECK(0);
            continue;
        }
        check_array(e.X_GB + 12, R, 9, 1e-14, "free body orientation");
        /* body-frame Euler equations: I w_B' = -w_B x I w_B */
        double wB[3], Iw[3], rhs[3], alphaB[3], alphaG[3];
        mat_tvec(R, u, wB);
        mat_vec(Ic, wB, Iw);
        cross(wB, Iw, rhs);
        /* solve Ic alphaB = -rhs by Cramer's rule */
        const double *A = Ic;
        const double det = A[0] * (A[4] * A[8] - A[5] * A[7]) - A[1] * (A[3] * A[8] - A[5] * A[6]) +
                           A[2] * (A[3] * A[7] - A[4] * A[6]);
        for (int k = 0; k < 3; ++k) {
            double B[9];
            memcpy(B, A, sizeof B);
            for (int i = 0; i < 3; ++i) B[3 * i + k] = -rhs[i];
            alphaB[k] = (B[0] * (B[4] * B[8] - B[5] * B[7]) - B[1] * (B[3] * B[8] - B[5] * B[6]) +
                         B[2] * (B[3] * B[7] - B[4] * B[6])) / det;
        }
        mat_vec(R, alphaB, alphaG);
        check_array(e.udot, alphaG, 3, 1e-12, "torque-free spin: udot (rotational) from Euler's equations");
        double cG[3], t1[3], t2[3], ao[3];
        mat_vec(R, c, cG);
        cross(alphaG, cG, t1);
        cross(u, cG, t2);
        cross(u, t2, t2);
        for (int i = 0; i < 3; ++i) ao[i] = -t1[i] - t2[i];
        check_array(e.udot + 3, ao, 3, 1e-12, "torque-free spin: origin acceleration keeps COM unaccelerated");
        check_array(e.A_GB + 6, e.udot, 6, 1e-13, "free body on Ground: A_GB = udot");
        /* KE = 0.5 m |v_com|^2 + 0.5 w.Ic_G w */
        double vc[3], IwB[3];
        cross(u, cG, vc);
        for (int i = 0; i < 3; ++i) vc[i] += u[3 + i];
        mat_vec(Ic, wB, IwB);
        CHECK_NEAR(e.r.kinetic_energy, 0.5 * m * dot3(vc, vc) + 0.5 * dot3(wB, IwB), 1e-13);
        /* quaternion and Euler models agree at the same pose (compare with the other mode) */
        if (euler) {
            orc_model mq = make_model(&b, 1, 0, 0, 0, 0);
            /* quaternion of R (R has a positive trace here) */
            double w4 = 0.5 * sqrt(1 + R[0] + R[4] + R[8]);
            double qq[7] = {w4, (R[7] - R[5]) / (4 * w4), (R[2] - R[6]) / (4 * w4),
                            (R[3] - R[1]) / (4 * w4), q[3], q[4], q[5]};
            if (eval(&mq, qq, u, NULL, NULL, &e2)) {
                CHECK(0);
                continue;
            }
            check_array(e2.udot, e.udot, 6, 1e-12, "free body: Euler and quaternion modes give the same udot");
            check_array(e2.X_GB, e.X_GB, 24, 1e-14, "free body: Euler and quaternion modes give the same X_GB");
        }
    }
}

/* ---- 3. invariants on a mixed tree with every mobilizer type ---- */

static void cholesky_ok(const double *M, int n, int *ok)
{
    double L[MAXQ * MAXQ];
    memcpy(L, M, sizeof(double) * n * n);
    *ok = 1;
    for (int j = 0; j < n; ++j) {
        double d = L[j * n + j];
        for (int k = 0; k < j; ++k) d -= L[j * n + k] * L[j * n + k];
        if (!(d > 0)) {
            *ok = 0;
            return;
        }
        d = sqrt(d);
        L[j * n + j] = d;
        for (int i = j + 1; i < n; ++i) {
            double s = L[i * n + j];
            for (int k = 0; k < j; ++k) s -= L[i * n + k] * L[j * n + k];
            L[i * n + j] = s / d;
        }
    }
}

static void build_tree(orc_body *b, int *n)
{
    int k = 0;
    double R[9];
    const orc_mobilizer types[11] = {ORC_FREE, ORC_PIN, ORC_BALL, ORC_UNIVERSAL, ORC_SLIDER, ORC_GIMBAL,
                                     ORC_CYLINDER, ORC_SCREW, ORC_PLANAR, ORC_BUSHING, ORC_TRANSLATION};
    const int parents[11] = {0, 1, 2, 1, 4, 3, 6, 5, 2, 9, 7};
    for (int i = 0; i < 11; ++i) {
        const double s = 0.1 * (i + 1);
        b[k] = make_body(parents[i], types[i], 1.0 + s, 0.2 * cos(3 * s), 0.1 + s, -0.15, 0.3 + s, 0.4, 0.5 + 0.5 * s);
        b[k].inertia_about_com[1] = b[k].inertia_about_com[3] = 0.02;
        b[k].inertia_about_com[5] = b[k].inertia_about_com[7] = -0.03;
        b[k].screw_pitch = 0.15;
        rot_xyz(0.3 * i, -0.2 + 0.1 * i, 0.5, R);
        xf_set(b[k].X_PF, R, 0.1 * i, -0.3, 0.25);
        rot_xyz(-0.1 * i, 0.4, -0.2 * i, R);
        xf_set(b[k].X_BM, R, 0.05, 0.1 * i, -0.2);
        ++k;
    }
    /* a weld, so weld bodies are covered too */
    b[k] = make_body(8, ORC_WELD, 0.7, 0.1, 0.1, 0.1, 0.1, 0.2, 0.3);
    rot_xyz(0.2, 0.3, 0.4, R);
    xf_set(b[k].X_PF, R, 0.3, 0.2, 0.1);
    ++k;
    *n = k;
}

static void test_invariants(void)
{
    static evalbuf e, ep, em;
    static double M2[MAXQ * MAXQ];
    orc_body b[MAXB];
    int nb;
    build_tree(b, &nb);
    for (int euler = 0; euler < 2; ++euler) {
        orc_model mod = make_model(b, nb, euler, 0.3, -9.81, 0.2);
        int nq, nu;
        if (orc_sizes(&mod, &nq, &nu)) {
            CHECK(0);
            continue;
        }
        int qs[MAXB], bq[MAXB], us[MAXB], bu[MAXB];
        CHECK(orc_layout(&mod, qs, bq, us, bu) == 0);
        int sumq = 0, sumu = 0, contiguous = 1;
        for (int i = 0; i <= nb; ++i) {
            if (qs[i] != sumq || us[i] != sumu) contiguous = 0;
            sumq += bq[i];
            sumu += bu[i];
        }
        CHECK(contiguous && sumq == nq && sumu == nu);
        CHECK_INT(nq, euler ? 31 : 33);
        CHECK_INT(nu, 31);

        double q[MAXQ], u[MAXQ], f[MAXQ], F[6 * MAXB];
        for (int i = 0; i < nq; ++i) q[i] = 0.4 * sin(1.3 * i + 0.2);
        for (int i = 0; i < nu; ++i) u[i] = 0.8 * cos(0.7 * i);
        for (int i = 0; i < nu; ++i) f[i] = 0.5 * sin(2.1 * i);
        for (int i = 0; i < 6 * (nb + 1); ++i) F[i] = 0.3 * cos(1.1 * i);
        if (eval(&mod, q, u, f, F, &e)) {
            CHECK(0);
            continue;
        }
        /* M symmetric positive definite, and the same from orc_mass_matrix */
        double asym = 0;
        for (int i = 0; i < nu; ++i)
            for (int j = 0; j < nu; ++j) asym = fmax(asym, fabs(e.M[i * nu + j] - e.M[j * nu + i]));
        CHECK_NEAR(asym, 0, 1e-13);
        int pd;
        cholesky_ok(e.M, nu, &pd);
        CHECK(pd);
        CHECK(orc_mass_matrix(&mod, q, M2) == 0);
        check_array(M2, e.M, nu * nu, 1e-14, "orc_mass_matrix == orc_eval M");

        /* KE = 0.5 u^T M u */
        double ke = 0;
        for (int i = 0; i < nu; ++i)
            for (int j = 0; j < nu; ++j) ke += 0.5 * u[i] * e.M[i * nu + j] * u[j];
        CHECK_NEAR(e.r.kinetic_energy, ke, 1e-12);
        /* PE = -sum m g . p_com */
        double pe = 0;
        for (int i = 1; i <= nb; ++i) {
            double pc[3];
            mat_vec(e.X_GB + 12 * i, b[i - 1].com, pc);
            for (int k = 0; k < 3; ++k) pc[k] += e.X_GB[12 * i + 9 + k];
            pe -= b[i - 1].mass * dot3(mod.gravity, pc);
        }
        CHECK_NEAR(e.r.potential_energy, pe, 1e-12);

        /* V_GB = J u */
        double maxerr = 0;
        for (int r = 0; r < 6 * (nb + 1); ++r) {
            double s = 0;
            for (int j = 0; j < nu; ++j) s += e.J[r * nu + j] * u[j];
            maxerr = fmax(maxerr, fabs(s - e.V_GB[r]));
        }
        CHECK_NEAR(maxerr, 0, 1e-12);

        /* inverse dynamics: zero residual at udot; residual(udot + d) = M d */
        double res[MAXQ], d[MAXQ], ud[MAXQ];
        CHECK(orc_inverse_dynamics(&mod, q, u, e.udot, f, F, res) == 0);
        maxerr = 0;
        for (int i = 0; i < nu; ++i) maxerr = fmax(maxerr, fabs(res[i]));
        CHECK_NEAR(maxerr, 0, 1e-11);
        for (int i = 0; i < nu; ++i) {
            d[i] = 0.1 * sin(0.9 * i + 1);
            ud[i] = e.udot[i] + d[i];
        }
        CHECK(orc_inverse_dynamics(&mod, q, u, ud, f, F, res) == 0);
        maxerr = 0;
        for (int i = 0; i < nu; ++i) {
            double Md = 0;
            for (int j = 0; j < nu; ++j) Md += e.M[i * nu + j] * d[j];
            maxerr = fmax(maxerr, fabs(res[i] - Md));
        }
        CHECK_NEAR(maxerr, 0, 1e-11);
        /* residual at udot = 0 equals C - f, and M udot = f - C */
        CHECK(orc_inverse_dynamics(&mod, q, u, NULL, f, F, res) == 0);
        maxerr = 0;
        for (int i = 0; i < nu; ++i) {
            double Mu = 0;
            for (int j = 0; j < nu; ++j) Mu += e.M[i * nu + j] * e.udot[j];
            maxerr = fmax(maxerr, fabs(Mu + res[i]));
        }
        CHECK_NEAR(maxerr, 0, 1e-11);

        /* energy balance: with gravity and mobility forces only,
         * d/dt (KE + PE) = f . u, by central differences along the motion */
        if (eval(&mod, q, u, f, NULL, &e)) {
            CHECK(0);
            continue;
        }
        const double h = 1e-5;
        double qp[MAXQ], qm[MAXQ], up[MAXQ], um[MAXQ];
        for (int i = 0; i < nq; ++i) {
            qp[i] = e.q[i] + h * e.qdot[i] + 0.5 * h * h * e.qdotdot[i];
            qm[i] = e.q[i] - h * e.qdot[i] + 0.5 * h * h * e.qdotdot[i];
        }
        for (int i = 0; i < nu; ++i) {
            up[i] = u[i] + h * e.udot[i];
            um[i] = u[i] - h * e.udot[i];
        }
        if (eval(&mod, qp, up, f, NULL, &ep) || eval(&mod, qm, um, f, NULL, &em)) {
            CHECK(0);
            continue;
        }
        const double dE = (ep.r.kinetic_energy + ep.r.potential_energy - em.r.kinetic_energy -
                           em.r.potential_energy) / (2 * h);
        double power = 0;
        for (int i = 0; i < nu; ++i) power += f[i] * u[i];
        CHECK_NEAR(dE, power, 1e-6);
    }
}

/* ---- 4. error handling ---- */

static void test_errors(void)
{
    orc_body b = make_body(3, ORC_PIN, 1, 0, 0, 0, 1, 1, 1);
    orc_model m = make_model(&b, 1, 0, 0, 0, 0);
    int nq, nu;
    CHECK(orc_sizes(&m, &nq, &nu) != 0);
    CHECK(strlen(orc_last_error()) > 0);
    b = make_body(0, ORC_BALL, 1, 0, 0, 0, 1, 1, 1);
    double q[4] = {0, 0, 0, 0}, udot[3];
    orc_result r;
    memset(&r, 0, sizeof r);
    r.udot = udot;
    CHECK(orc_eval(&m, q, NULL, NULL, NULL, &r) != 0); /* zero quaternion */
    CHECK(strstr(orc_last_error(), "quaternion") != NULL);
    b.X_PF[0] = 2; /* not a rotation */
    CHECK(orc_sizes(&m, &nq, &nu) != 0);
    b.X_PF[0] = 1;
    CHECK(orc_sizes(&m, &nq, &nu) == 0 && nq == 4 && nu == 3);
    CHECK(orc_last_error()[0] == '\0');
    orc_release();
}

int main(void)
{
    test_mobilizer_conventions();
    test_velocity_and_frames();
    test_pin_pendulum();
    test_slider_incline();
    test_free_body();
    test_invariants();
    test_errors();
    orc_release();
    return mbk_test_finish();
}
