/* Self-check of simbody_constraints_oracle.h: every constraint-equation
 * definition written in that header is re-implemented here in plain C, from
 * body poses, velocities and accelerations (orc_eval / orc_eval_constraints)
 * and the model's q, u, and compared with what Simbody 3.7 computes.
 *
 * For each built-in, singly, in several placements (Ancestor = Ground, and
 * Ancestor = another body, constrained or not), on a 7-body model in
 * quaternion and in Euler-angle mode, at random (unsatisfied) states:
 *   - counts mp/mv/ma and the Ancestor;
 *   - perr, pverr (1e-12) and pvaerr both at the constrained udot and at the
 *     UNconstrained udot (G udot + bias vs the formula with that udot's body
 *     accelerations; 1e-12);
 *   - reaction forces from the multipliers by the documented formula vs
 *     getConstrainedBodyForcesAsVector / ...MobilityForces... (1e-12);
 *   - G u = uerr(u) - uerr(0); G^T lambda = J^T F_c + f_c (1e-12);
 *   - equations of motion: inverse dynamics with the applied forces minus the
 *     constraint forces, at the constrained udot, leaves zero residual;
 *   - calcPower = -(F_c . V + f_c . u);
 *   - d/dt perr (central differences along the motion) = pverr, plus the
 *     documented correction for the vector errors; Pq qdot = d perr/dq qdot;
 *     d/dt pverr = pvaerr for the constraints documented as exact;
 * then the layout of Simbody's system arrays (qerr, uerr, udoterr,
 * multipliers) with a mixed list, redundant constraints (least-norm
 * multipliers), inconsistent constraints, the multiplier signs on a hanging
 * body, Weld's small-angle orientation errors, and refused descriptors. */
#include "mbk_test.h"
#include "simbody_constraints_oracle.h"

#define ORC_TEST_RNG_SEED 0x243F6A8885A308D3ull
#include "oracle_test_util.h"

#include <stdlib.h>
#include <string.h>

#define PI 3.14159265358979323846
#define TOL 1e-12
#define MAXB 10
#define MAXQ 64
#define MAXM 24
#define E ORC_CON_MAX_EQ

/* ---- the model ---- */

enum { NB = 7 };
static orc_body g_bodies[NB];
/* 1 FREE on Ground, 2 PIN on 1, 3 BALL on 2, 4 SLIDER on 1, 5 GIMBAL on
 * Ground, 6 UNIVERSAL on 5, 7 CYLINDER on 2. */
static void build_bodies(void)
{
    g_bodies[0] = mk(0, ORC_FREE, 2.0);
    g_bodies[1] = mk(1, ORC_PIN, 1.5);
    g_bodies[2] = mk(2, ORC_BALL, 0.7);
    g_bodies[3] = mk(1, ORC_SLIDER, 1.2);
    g_bodies[4] = mk(0, ORC_GIMBAL, 0.9);
    g_bodies[5] = mk(5, ORC_UNIVERSAL, 1.1);
    g_bodies[6] = mk(2, ORC_CYLINDER, 0.8);
}

/* ---- a state and everything known about it ---- */

typedef struct kin {
    orc_model model;
    int nq, nu, nb; /* nb counts Ground */
    int q_start[MAXB], body_nq[MAXB], u_start[MAXB], body_nu[MAXB];
    double t;
    double q[MAXQ], u[MAXQ], qdot[MAXQ];
    double fmob[MAXQ], fbody[6 * MAXB]; /* applied forces */
    double X[12 * MAXB], V[6 * MAXB];
    double J[6 * MAXB * MAXQ];
    double udot_free[MAXQ], qdd_free[MAXQ], A_free[6 * MAXB]; /* unconstrained */
} kin;

static void setup_kin(kin *k, const orc_body *bodies, int n_bodies, int euler)
{
    memset(k, 0, sizeof *k);
    k->model.n_bodies = n_bodies;
    k->model.bodies = bodies;
    k->model.use_euler_angles = euler;
    k->model.gravity[2] = -9.81;
    k->model.gravity[0] = 0.7;
    k->nb = n_bodies + 1;
    if (orc_sizes(&k->model, &k->nq, &k->nu) != 0 ||
        orc_layout(&k->model, k->q_start, k->body_nq, k->u_start, k->body_nu) != 0) {
        fprintf(stderr, "setup failed: %s\n", orc_last_error());
        exit(1);
    }
}

static int is_quat(const kin *k, int b)
{
    const orc_body *B = &k->model.bodies[b - 1];
    return !k->model.use_euler_angles && (B->type == ORC_BALL || B->type == ORC_FREE);
}

static void random_state(kin *k)
{
    for (int b = 1; b < k->nb; ++b) {
        double *q = k->q + k->q_start[b];
        for (int i = 0; i < k->body_nq[b]; ++i) q[i] = rnd(-1.2, 1.2);
        if (is_quat(k, b)) {
            const double n = sqrt(q[0] * q[0] + q[1] * q[1] + q[2] * q[2] + q[3] * q[3]);
            for (int i = 0; i < 4; ++i) q[i] /= n;
        }
    }
    for (int i = 0; i < k->nu; ++i) k->u[i] = rnd(-1.5, 1.5);
    for (int i = 0; i < k->nu; ++i) k->fmob[i] = rnd(-2, 2);
    memset(k->fbody, 0, sizeof k->fbody);
    for (int i = 6; i < 6 * k->nb; ++i) k->fbody[i] = rnd(-3, 3);
    k->t = rnd(0, 2);
}

/* Unconstrained kinematics and dynamics at k's state (orc_eval). */
static int load_kin(kin *k)
{
    orc_result r;
    memset(&r, 0, sizeof r);
    double qn[MAXQ];
    r.q = qn;
    r.X_GB = k->X;
    r.V_GB = k->V;
    r.A_GB = k->A_free;
    r.qdot = k->qdot;
    r.udot = k->udot_free;
    r.qdotdot = k->qdd_free;
    r.J = k->J;
    const int rc = orc_eval(&k->model, k->q, k->u, k->fmob, k->fbody, &r);
    if (rc == 0) memcpy(k->q, qn, sizeof(double) * k->nq);
    return rc;
}

/* ---- constrained evaluation: everything the oracle returns ---- */

typedef struct ceval {
    orc_constraint_result r;
    double qerr[MAXM + MAXB], uerr[MAXM], udoterr[MAXM], mult[MAXM], udot[MAXQ], qdd[MAXQ];
    double X[12 * MAXB], V[6 * MAXB], A[6 * MAXB];
    double G[MAXM * MAXQ], bias[MAXM], Pq[MAXM * MAXQ];
    int mp[8], mv[8], ma[8], ps[8], vs[8], as[8], anc[8];
    double perr[8 * E], pverr[8 * E], pvaerr[8 * E], cmult[8 * E];
    double F[8 * 6 * MAXB], f[8 * MAXQ], power[8];
} ceval;

static int g_quiet; /* expected failures: don't print the message */

static int run(const kin *k, const orc_constraint *c, int n, const double *q, const double *u,
               double t, ceval *ev)
{
    memset(ev, 0, sizeof *ev);
    orc_constraint_result *r = &ev->r;
    r->qerr = ev->qerr;
    r->uerr = ev->uerr;
    r->udoterr = ev->udoterr;
    r->multipliers = ev->mult;
    r->udot = ev->udot;
    r->qdotdot = ev->qdd;
    r->X_GB = ev->X;
    r->V_GB = ev->V;
    r->A_GB = ev->A;
    r->G = ev->G;
    r->bias = ev->bias;
    r->Pq = ev->Pq;
    r->c_mp = ev->mp;
    r->c_mv = ev->mv;
    r->c_ma = ev->ma;
    r->c_p_start = ev->ps;
    r->c_v_start = ev->vs;
    r->c_a_start = ev->as;
    r->c_ancestor = ev->anc;
    r->c_perr = ev->perr;
    r->c_pverr = ev->pverr;
    r->c_pvaerr = ev->pvaerr;
    r->c_multipliers = ev->cmult;
    r->c_body_forces = ev->F;
    r->c_mobility_forces = ev->f;
    r->c_power = ev->power;
    const int rc = orc_eval_constraints(&k->model, c, n, q, u, k->fmob, k->fbody, t, r);
    if (rc != 0 && !g_quiet) fprintf(stderr, "    %s\n", orc_constraints_last_error());
    return rc;
}

/* ---- body kinematics for the formulas ---- */

typedef struct bodykin {
    const double *X; /* 12*nb */
    const double *V; /* 6*nb */
    const double *A; /* 6*nb (may be NULL when not needed) */
} bodykin;

static const double *R_(const bodykin *K, int b) { return K->X + 12 * b; }
static const double *p_(const bodykin *K, int b) { return K->X + 12 * b + 9; }
static const double *w_(const bodykin *K, int b) { return K->V + 6 * b; }
static const double *v_(const bodykin *K, int b) { return K->V + 6 * b + 3; }
static const double *al_(const bodykin *K, int b) { return K->A + 6 * b; }
static const double *a_(const bodykin *K, int b) { return K->A + 6 * b + 3; }

/* Location in G of station s (in b). */
static void st_pos(const bodykin *K, int b, const double *s, double *P)
{
    double r[3];
    mat_vec(R_(K, b), s, r);
    add3(p_(K, b), r, P);
}

/* Velocity and acceleration (if acc) of the material point of b currently at P (in G). */
static void mat_pt(const bodykin *K, int b, const double *P, double *vel, double *acc)
{
    double r[3], t[3];
    sub3(P, p_(K, b), r);
    cross(w_(K, b), r, t);
    add3(v_(K, b), t, vel);
    if (acc) {
        double wr[3], wwr[3];
        cross(al_(K, b), r, t);
        cross(w_(K, b), r, wr);
        cross(w_(K, b), wr, wwr);
        for (int i = 0; i < 3; ++i) acc[i] = a_(K, b)[i] + t[i] + wwr[i];
    }
}

/* Add the constraint-sign force f (G) applied at point P (G) of body b to F (6*nb). */
static void add_force_at(const bodykin *K, double *F, int b, const double *P, const double *f)
{
    double r[3], m[3];
    sub3(P, p_(K, b), r);
    cross(r, f, m);
    for (int i = 0; i < 3; ++i) {
        F[6 * b + i] += m[i];
        F[6 * b + 3 + i] += f[i];
    }
}

static void add_torque(double *F, int b, const double *tq, double sign)
{
    for (int i = 0; i < 3; ++i) F[6 * b + i] += sign * tq[i];
}

/* Simbody's UnitVec3::perp(): x = unit(z x e_k), k = the axis with the
 * smallest |z_k| (ties: the lower index, as written in UnitVec.h). */
static void simbody_perp(const double *z, double *x)
{
    const double u0 = fabs(z[0]), u1 = fabs(z[1]), u2 = fabs(z[2]);
    const int k = u0 <= u1 ? (u0 <= u2 ? 0 : 2) : (u1 <= u2 ? 1 : 2);
    double e[3] = {0, 0, 0}, t[3];
    e[k] = 1;
    cross(z, e, t);
    unit3(t, x);
}

/* ---- tree helpers ---- */

static int parent_of(const kin *k, int b) { return b == 0 ? -1 : k->model.bodies[b - 1].parent; }

static int depth_of(const kin *k, int b)
{
    int d = 0;
    while (b != 0) {
        b = parent_of(k, b);
        ++d;
    }
    return d;
}

static int common_ancestor(const kin *k, int a, int b)
{
    while (depth_of(k, a) > depth_of(k, b)) a = parent_of(k, a);
    while (depth_of(k, b) > depth_of(k, a)) b = parent_of(k, b);
    while (a != b) {
        a = parent_of(k, a);
        b = parent_of(k, b);
    }
    return a;
}

/* ---- the documented definitions, in plain C ---- */

typedef struct expect {
    int mp, mv, ma;
    int anc;                 /* expected Ancestor (-1: no constrained bodies) */
    double perr[E], pverr[E], pvaerr[E];
    double F[6 * MAXB];      /* constraint body forces from the multipliers */
    double f[MAXQ];          /* constraint mobility forces */
    /* For the finite-difference checks d/dt perr = pverr + corr and
     * d/dt pverr = pvaerr + corr_v (both zero unless documented): */
    double corr[E], corr_v[E];
} expect;

static double motion_value(const orc_con_prescribed_motion *m, double t, int deriv)
{
    if (m->function == ORC_MOTION_SINUSOID) {
        const double a = m->amplitude, w = m->frequency, x = w * t + m->phase;
        return deriv == 0 ? a * sin(x) : deriv == 1 ? a * w * cos(x) : -a * w * w * sin(x);
    }
    double v = 0;
    for (int k = m->n_poly - 1; k >= 0; --k) {
        double c = m->poly[k];
        for (int d = 0; d < deriv; ++d) c *= (double)(k - d);
        if (k >= deriv) v += c * pow(t, k - deriv);
    }
    return v;
}

/* The three "perpendicular axes" equations shared by ConstantOrientation and
 * Weld: pairs (f, b) = (M.x, F.y), (M.y, F.z), (M.z, F.x) with F the frame on
 * body 1 (base) and M the frame on body 2 (follower), axes in G. */
static void orientation_eqs(const bodykin *K, int b1, const double *R_B1F, int b2,
                            const double *R_B2M, const double *lambda, double *perr,
                            double *pverr, double *pvaerr, double *F)
{
    double RF[9], RM[9];
    mat_mul(R_(K, b1), R_B1F, RF);
    mat_mul(R_(K, b2), R_B2M, RM);
    const double *w1 = w_(K, b1), *w2 = w_(K, b2);
    double wr[3];
    sub3(w2, w1, wr);
    double tq[3] = {0, 0, 0};
    for (int k = 0; k < 3; ++k) {
        double f[3], b[3], fxb[3];
        col3(RM, k, f);
        col3(RF, (k + 1) % 3, b);
        cross(f, b, fxb);
        perr[k] = dot3(f, b);
        pverr[k] = dot3(wr, fxb);
        if (K->A) {
            double ar[3], t1[3], t2[3], t3[3], t4[3];
            sub3(al_(K, b2), al_(K, b1), ar);
            cross(w2, f, t1);
            cross(t1, b, t2);   /* (w2 x f) x b */
            cross(w1, b, t3);
            cross(t3, f, t4);   /* (w1 x b) x f */
            sub3(t2, t4, t2);
            pvaerr[k] = dot3(ar, fxb) + dot3(wr, t2);
        }
        if (lambda)
            for (int i = 0; i < 3; ++i) tq[i] += lambda[k] * fxb[i];
    }
    if (lambda) {
        add_torque(F, b2, tq, +1);
        add_torque(F, b1, tq, -1);
    }
}

/* Point-coincidence equations shared by Ball and Weld: P = station s1 on b1,
 * S = station s2 on b2, C = material point of b1 at S, all in A's components. */
static void coincident_eqs(const bodykin *K, int anc, int b1, const double *s1, int b2,
                           const double *s2, const double *lambda, double *perr, double *pverr,
                           double *pvaerr, double *F, double *corr, double *corr_v)
{
    double P[3], S[3], d[3], vS[3], vC[3], aS[3], aC[3], dv[3];
    const double *RA = R_(K, anc);
    st_pos(K, b1, s1, P);
    st_pos(K, b2, s2, S);
    sub3(S, P, d);
    mat_tvec(RA, d, perr);
    mat_pt(K, b2, S, vS, K->A ? aS : NULL);
    mat_pt(K, b1, S, vC, K->A ? aC : NULL);
    sub3(vS, vC, dv);
    mat_tvec(RA, dv, pverr);
    if (K->A) {
        double da[3], t[3];
        sub3(aS, aC, da);
        cross(w_(K, anc), dv, t);
        for (int i = 0; i < 3; ++i) da[i] -= 2 * t[i];
        mat_tvec(RA, da, pvaerr);
    }
    {   /* d/dt perr = pverr + w_AB1 x perr, d/dt pverr = pvaerr - w_AB1 x pverr (in A) */
        double wAB[3], wA[3], c[3];
        sub3(w_(K, b1), w_(K, anc), wAB);
        mat_tvec(RA, wAB, wA);
        cross(wA, perr, c);
        memcpy(corr, c, sizeof c);
        cross(wA, pverr, c);
        scale3(-1, c, corr_v);
    }
    if (lambda) {
        double fG[3], mf[3];
        mat_vec(RA, lambda, fG);
        add_force_at(K, F, b2, S, fG);
        scale3(-1, fG, mf);
        add_force_at(K, F, b1, S, mf);
    }
}

/* Fill ex with the documented values of constraint c. K: poses, velocities
 * and (if K->A) accelerations; q, qdot, qdd, u, udot: coordinate values (qdd
 * and udot only with K->A); lambda: the constraint's multipliers (or NULL). */
static void expected(const kin *k, const orc_constraint *c, const bodykin *K, const double *q,
                     const double *qdot, const double *qdd, const double *u, const double *udot,
                     double t, const double *lambda, expect *ex)
{
    memset(ex, 0, sizeof *ex);
    ex->anc = -1;
    switch (c->kind) {
    case ORC_CON_ROD: {
        const orc_con_rod *r = &c->rod;
        ex->mp = 1;
        ex->anc = common_ancestor(k, r->body1, r->body2);
        double P1[3], P2[3], d[3], e[3], v1[3], v2[3], dv[3];
        st_pos(K, r->body1, r->station1, P1);
        st_pos(K, r->body2, r->station2, P2);
        sub3(P2, P1, d);
        const double len = norm3(d);
        scale3(1 / len, d, e);
        double a1[3], a2[3];
        mat_pt(K, r->body1, P1, v1, K->A ? a1 : NULL);
        mat_pt(K, r->body2, P2, v2, K->A ? a2 : NULL);
        sub3(v2, v1, dv);
        ex->perr[0] = len - r->length;
        ex->pverr[0] = dot3(e, dv);
        if (K->A) {
            double da[3];
            sub3(a2, a1, da);
            const double ev = dot3(e, dv);
            ex->pvaerr[0] = dot3(e, da) + (dot3(dv, dv) - ev * ev) / len;
        }
        if (lambda) {
            double f[3], mf[3];
            scale3(lambda[0], e, f);
            add_force_at(K, ex->F, r->body2, P2, f);
            scale3(-1, f, mf);
            add_force_at(K, ex->F, r->body1, P1, mf);
        }
        break;
    }
    case ORC_CON_BALL: {
        const orc_con_ball *r = &c->ball;
        ex->mp = 3;
        ex->anc = common_ancestor(k, r->body1, r->body2);
        coincident_eqs(K, ex->anc, r->body1, r->station1, r->body2, r->station2, lambda,
                       ex->perr, ex->pverr, ex->pvaerr, ex->F, ex->corr, ex->corr_v);
        break;
    }
    case ORC_CON_WELD: {
        const orc_con_weld *r = &c->weld;
        ex->mp = 6;
        ex->anc = common_ancestor(k, r->body1, r->body2);
        orientation_eqs(K, r->body1, r->X_B1F, r->body2, r->X_B2M, lambda, ex->perr, ex->pverr,
                        ex->pvaerr, ex->F);
        coincident_eqs(K, ex->anc, r->body1, r->X_B1F + 9, r->body2, r->X_B2M + 9,
                       lambda ? lambda + 3 : NULL, ex->perr + 3, ex->pverr + 3, ex->pvaerr + 3,
                       ex->F, ex->corr + 3, ex->corr_v + 3);
        break;
    }
    case ORC_CON_POINT_IN_PLANE:
    case ORC_CON_POINT_ON_LINE: {
        const int plane = c->kind == ORC_CON_POINT_IN_PLANE;
        const int B = plane ? c->point_in_plane.plane_body : c->point_on_line.line_body;
        const int Fb = plane ? c->point_in_plane.follower_body : c->point_on_line.follower_body;
        const double *sF = plane ? c->point_in_plane.follower_point : c->point_on_line.follower_point;
        double nrm[2][3];
        int neq;
        if (plane) {
            unit3(c->point_in_plane.normal, nrm[0]);
            neq = 1;
        } else {
            double z[3];
            unit3(c->point_on_line.direction, z);
            simbody_perp(z, nrm[0]);
            double y[3];
            cross(z, nrm[0], y);
            unit3(y, nrm[1]);
            neq = 2;
        }
        ex->mp = neq;
        ex->anc = common_ancestor(k, B, Fb);
        double S[3], r[3], pBC[3], vS[3], vC[3], aS[3], aC[3], dv[3], da[3];
        st_pos(K, Fb, sF, S);
        sub3(S, p_(K, B), r);
        mat_tvec(R_(K, B), r, pBC);
        mat_pt(K, Fb, S, vS, K->A ? aS : NULL);
        mat_pt(K, B, S, vC, K->A ? aC : NULL);
        sub3(vS, vC, dv);
        if (K->A) {
            double t2[3];
            sub3(aS, aC, da);
            cross(w_(K, B), dv, t2);
            for (int i = 0; i < 3; ++i) da[i] -= 2 * t2[i];
        }
        double ftot[3] = {0, 0, 0};
        for (int j = 0; j < neq; ++j) {
            double nG[3];
            mat_vec(R_(K, B), nrm[j], nG);
            if (plane) {
                ex->perr[j] = dot3(pBC, nrm[j]) - c->point_in_plane.height;
            } else {
                double pPC[3];
                sub3(pBC, c->point_on_line.point_on_line, pPC);
                ex->perr[j] = dot3(pPC, nrm[j]);
            }
            ex->pverr[j] = dot3(nG, dv);
            if (K->A) ex->pvaerr[j] = dot3(nG, da);
            if (lambda)
                for (int i = 0; i < 3; ++i) ftot[i] += lambda[j] * nG[i];
        }
        if (lambda) {
            double mf[3];
            add_force_at(K, ex->F, Fb, S, ftot);
            scale3(-1, ftot, mf);
            add_force_at(K, ex->F, B, S, mf);
        }
        break;
    }
    case ORC_CON_CONSTANT_ANGLE: {
        const orc_con_constant_angle *r = &c->constant_angle;
        ex->mp = 1;
        ex->anc = common_ancestor(k, r->base_body, r->follower_body);
        double bh[3], fh[3], b[3], f[3], fxb[3], wr[3];
        unit3(r->base_axis, bh);
        unit3(r->follower_axis, fh);
        mat_vec(R_(K, r->base_body), bh, b);
        mat_vec(R_(K, r->follower_body), fh, f);
        cross(f, b, fxb);
        const double *wB = w_(K, r->base_body), *wF = w_(K, r->follower_body);
        sub3(wF, wB, wr);
        ex->perr[0] = dot3(b, f) - cos(r->angle);
        ex->pverr[0] = dot3(wr, fxb);
        if (K->A) {
            double ar[3], t1[3], t2[3], t3[3], t4[3];
            sub3(al_(K, r->follower_body), al_(K, r->base_body), ar);
            cross(wF, f, t1);
            cross(t1, b, t2);
            cross(wB, b, t3);
            cross(t3, f, t4);
            sub3(t2, t4, t2);
            ex->pvaerr[0] = dot3(ar, fxb) + dot3(wr, t2);
        }
        if (lambda) {
            double tq[3];
            scale3(lambda[0], fxb, tq);
            add_torque(ex->F, r->follower_body, tq, +1);
            add_torque(ex->F, r->base_body, tq, -1);
        }
        break;
    }
    case ORC_CON_CONSTANT_ORIENTATION: {
        const orc_con_constant_orientation *r = &c->constant_orientation;
        ex->mp = 3;
        ex->anc = common_ancestor(k, r->base_body, r->follower_body);
        orientation_eqs(K, r->base_body, r->R_B1F, r->follower_body, r->R_B2M, lambda, ex->perr,
                        ex->pverr, ex->pvaerr, ex->F);
        break;
    }
    case ORC_CON_CONSTANT_COORDINATE: {
        const orc_con_constant_coordinate *r = &c->constant_coordinate;
        const int qi = k->q_start[r->body] + r->which_q, ui = k->u_start[r->body] + r->which_q;
        ex->mp = 1;
        ex->perr[0] = q[qi] - r->value;
        ex->pverr[0] = qdot[qi];
        if (K->A) ex->pvaerr[0] = qdd[qi];
        if (lambda) ex->f[ui] += lambda[0]; /* q-force -> u-force by N^T; N = I here */
        break;
    }
    case ORC_CON_CONSTANT_SPEED: {
        const orc_con_constant_speed *r = &c->constant_speed;
        const int ui = k->u_start[r->body] + r->which_u;
        ex->mv = 1;
        ex->pverr[0] = u[ui] - r->speed;
        if (K->A) ex->pvaerr[0] = udot[ui];
        if (lambda) ex->f[ui] += lambda[0];
        break;
    }
    case ORC_CON_CONSTANT_ACCELERATION: {
        const orc_con_constant_acceleration *r = &c->constant_acceleration;
        const int ui = k->u_start[r->body] + r->which_u;
        ex->ma = 1;
        if (K->A) ex->pvaerr[0] = udot[ui] - r->acceleration;
        if (lambda) ex->f[ui] += lambda[0];
        break;
    }
    case ORC_CON_NO_SLIP_1D: {
        const orc_con_no_slip *r = &c->no_slip;
        ex->mv = 1;
        ex->anc = common_ancestor(k, common_ancestor(k, r->case_body, r->moving_body0),
                                  r->moving_body1);
        double P[3], nh[3], n[3], v0[3], v1[3], a0[3], a1[3], dv[3];
        st_pos(K, r->case_body, r->point, P);
        unit3(r->direction, nh);
        mat_vec(R_(K, r->case_body), nh, n);
        mat_pt(K, r->moving_body0, P, v0, K->A ? a0 : NULL);
        mat_pt(K, r->moving_body1, P, v1, K->A ? a1 : NULL);
        sub3(v1, v0, dv);
        ex->pverr[0] = dot3(n, dv);
        if (K->A) {
            double da[3], ws[3], t[3];
            sub3(a1, a0, da);
            add3(w_(K, ex->anc), w_(K, r->case_body), ws);
            cross(ws, dv, t);
            sub3(da, t, da);
            ex->pvaerr[0] = dot3(n, da);
        }
        {   /* d/dt verr = vaerr + n.[w1 x (vc - v1) - w0 x (vc - v0) + w_GA x (v1 - v0)],
               vc = velocity of the case body's material point at P */
            double vc[3], d1[3], d0[3], t1[3], t0[3], ta[3];
            mat_pt(K, r->case_body, P, vc, NULL);
            sub3(vc, v1, d1);
            sub3(vc, v0, d0);
            cross(w_(K, r->moving_body1), d1, t1);
            cross(w_(K, r->moving_body0), d0, t0);
            cross(w_(K, ex->anc), dv, ta);
            ex->corr_v[0] = dot3(n, t1) - dot3(n, t0) + dot3(n, ta);
        }
        if (lambda) {
            double f[3], mf[3];
            scale3(lambda[0], n, f);
            add_force_at(K, ex->F, r->moving_body1, P, f);
            scale3(-1, f, mf);
            add_force_at(K, ex->F, r->moving_body0, P, mf);
        }
        break;
    }
    case ORC_CON_COORDINATE_COUPLER: {
        const orc_con_coordinate_coupler *r = &c->coordinate_coupler;
        ex->mp = 1;
        ex->perr[0] = r->constant;
        for (int i = 0; i < r->n; ++i) {
            const int qi = k->q_start[r->body[i]] + r->which_q[i];
            ex->perr[0] += r->coef[i] * q[qi];
            ex->pverr[0] += r->coef[i] * qdot[qi];
            if (K->A) ex->pvaerr[0] += r->coef[i] * qdd[qi];
            if (lambda) ex->f[k->u_start[r->body[i]] + r->which_q[i]] += lambda[0] * r->coef[i];
        }
        break;
    }
    case ORC_CON_SPEED_COUPLER: {
        const orc_con_speed_coupler *r = &c->speed_coupler;
        ex->mv = 1;
        ex->pverr[0] = r->constant;
        for (int i = 0; i < r->n; ++i) {
            const int ui = k->u_start[r->body[i]] + r->which_u[i];
            ex->pverr[0] += r->coef[i] * u[ui];
            if (K->A) ex->pvaerr[0] += r->coef[i] * udot[ui];
            if (lambda) ex->f[ui] += lambda[0] * r->coef[i];
        }
        for (int j = 0; j < r->n_q; ++j) {
            const int qi = k->q_start[r->q_body[j]] + r->which_q[j];
            ex->pverr[0] += r->q_coef[j] * q[qi];
            if (K->A) ex->pvaerr[0] += r->q_coef[j] * qdot[qi];
        }
        break;
    }
    case ORC_CON_PRESCRIBED_MOTION: {
        const orc_con_prescribed_motion *r = &c->prescribed_motion;
        const int qi = k->q_start[r->body] + r->which_q;
        ex->mp = 1;
        ex->perr[0] = q[qi] - motion_value(r, t, 0);
        ex->pverr[0] = qdot[qi] - motion_value(r, t, 1);
        if (K->A) ex->pvaerr[0] = qdd[qi] - motion_value(r, t, 2);
        if (lambda) ex->f[k->u_start[r->body] + r->which_q] += lambda[0];
        break;
    }
    }
}

/* ---- linear algebra for the least-squares / least-norm checks ---- */

/* Orthonormal basis (modified Gram-Schmidt, re-orthogonalized) of the span
 * of `count` vectors of length len, element j of vector i at
 * v[i*vs + j*es]; basis rows are written to basis (rank x len). Vectors whose
 * remaining norm is below 1e-9 of the largest input norm are dropped.
 * Returns the rank. */
static int span_basis(const double *v, int count, int len, int vs, int es, double *basis)
{
    double big = 0;
    for (int i = 0; i < count; ++i) {
        double n2 = 0;
        for (int j = 0; j < len; ++j) n2 += v[i * vs + j * es] * v[i * vs + j * es];
        if (sqrt(n2) > big) big = sqrt(n2);
    }
    int rank = 0;
    for (int i = 0; i < count; ++i) {
        double *b = basis + rank * len;
        for (int j = 0; j < len; ++j) b[j] = v[i * vs + j * es];
        for (int pass = 0; pass < 2; ++pass)
            for (int r = 0; r < rank; ++r) {
                const double *o = basis + r * len;
                double d = 0;
                for (int j = 0; j < len; ++j) d += o[j] * b[j];
                for (int j = 0; j < len; ++j) b[j] -= d * o[j];
            }
        double n2 = 0;
        for (int j = 0; j < len; ++j) n2 += b[j] * b[j];
        if (sqrt(n2) > 1e-9 * big && n2 > 0) {
            for (int j = 0; j < len; ++j) b[j] /= sqrt(n2);
            ++rank;
        }
    }
    return rank;
}

/* |x - projection of x onto the span of the basis rows| */
static double dist_to_span(const double *x, const double *basis, int rank, int len)
{
    double r[MAXQ + MAXM];
    memcpy(r, x, sizeof(double) * len);
    for (int k = 0; k < rank; ++k) {
        double d = 0;
        for (int j = 0; j < len; ++j) d += basis[k * len + j] * r[j];
        for (int j = 0; j < len; ++j) r[j] -= d * basis[k * len + j];
    }
    double n2 = 0;
    for (int j = 0; j < len; ++j) n2 += r[j] * r[j];
    return sqrt(n2);
}

static int n_overdetermined;
static double worst_overdetermined_udoterr;

/* At Simbody's solution of a system with m equations and acceleration
 * Jacobian G (m x nu): if rank G == m the acceleration errors vanish;
 * otherwise they are the least-squares residual, G^T udoterr = 0; in both
 * cases the multipliers are the least-norm ones, lambda in range(G). */
static void check_solution(const double *G, int m, int nu, const double *udoterr,
                           const double *lambda)
{
    double basis[(MAXQ + MAXM) * (MAXQ + MAXM)];
    const int rank = span_basis(G, m, nu, nu, 1, basis);
    double gmax = max_abs(G, m * nu);
    for (int j = 0; j < nu; ++j) {
        double g = 0;
        for (int i = 0; i < m; ++i) g += G[i * nu + j] * udoterr[i];
        CHECK(fabs(g) < 1e-9 * (1 + gmax) * (1 + max_abs(udoterr, m)));
    }
    if (rank == m) {
        for (int i = 0; i < m; ++i) CHECK(fabs(udoterr[i]) < 1e-9);
    } else {
        ++n_overdetermined;
        if (max_abs(udoterr, m) > worst_overdetermined_udoterr)
            worst_overdetermined_udoterr = max_abs(udoterr, m);
    }
    const int crank = span_basis(G, nu, m, 1, nu, basis); /* columns of G */
    CHECK_INT(crank, rank);
    CHECK(dist_to_span(lambda, basis, crank, m) < 1e-9 * (1 + max_abs(lambda, m)));
}

/* ---- the single-constraint battery ---- */

static int n_checked, n_fd_pva, n_nonexact_seen;
static double worst_nonexact; /* largest |d/dt pverr - pvaerr| seen where the header says "not exact" */

static int n_quaternions(const kin *k)
{
    int n = 0;
    for (int b = 1; b < k->nb; ++b) n += is_quat(k, b);
    return n;
}

#define CHECK_VEC(a, b, n, tol)                                                    \
    do {                                                                           \
        for (int i_ = 0; i_ < (n); ++i_) CHECK_NEAR((a)[i_], (b)[i_], (tol));     \
    } while (0)

/* Perr of c at (q, t) (quaternions normalized by the oracle). */
static int perr_at(const kin *k, const orc_constraint *c, const double *q, double t, double *perr)
{
    ceval ev;
    if (run(k, c, 1, q, k->u, t, &ev) != 0) return -1;
    memcpy(perr, ev.perr, sizeof(double) * E);
    return 0;
}

static int pverr_at(const kin *k, const orc_constraint *c, const double *q, const double *u,
                    double t, double *pverr)
{
    ceval ev;
    if (run(k, c, 1, q, u, t, &ev) != 0) return -1;
    memcpy(pverr, ev.pverr, sizeof(double) * E);
    return 0;
}

static void check_single(const kin *k, const orc_constraint *c, const char *label)
{
    ceval ev;
    if (!CHECK(run(k, c, 1, k->q, k->u, k->t, &ev) == 0)) {
        fprintf(stderr, "    (%s)\n", label);
        return;
    }
    ++n_checked;
    const int fails0 = mbk_test_failed_count;
    const int nb = k->nb, nu = k->nu;

    /* 1. the formulas at the constrained solution, forces from the multipliers */
    bodykin K = {ev.X, ev.V, ev.A};
    expect ex;
    expected(k, c, &K, k->q, k->qdot, ev.qdd, k->u, ev.udot, k->t, ev.cmult, &ex);
    expect exf; /* the same at the unconstrained udot */
    {
        bodykin Kf = {k->X, k->V, k->A_free};
        expected(k, c, &Kf, k->q, k->qdot, k->qdd_free, k->u, k->udot_free, k->t, NULL, &exf);
    }
    const int mp = ex.mp, mv = ex.mv, ma = ex.ma, m = mp + mv + ma;
    CHECK_INT(ev.mp[0], mp);
    CHECK_INT(ev.mv[0], mv);
    CHECK_INT(ev.ma[0], ma);
    CHECK_INT(ev.r.mp, mp);
    CHECK_INT(ev.r.mv, mv);
    CHECK_INT(ev.r.ma, ma);
    CHECK_INT(ev.anc[0], ex.anc);
    CHECK_VEC(ev.X, k->X, 12 * nb, 1e-14);
    CHECK_VEC(ev.V, k->V, 6 * nb, 1e-14);
    CHECK_VEC(ev.perr, ex.perr, mp, TOL);
    CHECK_VEC(ev.pverr, ex.pverr, mp + mv, TOL);
    CHECK_VEC(ev.pvaerr, ex.pvaerr, m, 1e-10);
    check_solution(ev.G, m, nu, ev.udoterr, ev.mult);
    CHECK_VEC(ev.F, ex.F, 6 * nb, TOL);
    CHECK_VEC(ev.f, ex.f, nu, TOL);

    /* 2. system arrays of a one-constraint system */
    CHECK_INT(ev.r.n_qerr, mp + n_quaternions(k));
    CHECK_VEC(ev.qerr, ev.perr, mp, 0);
    for (int i = mp; i < ev.r.n_qerr; ++i) CHECK(fabs(ev.qerr[i]) < 1e-15);
    CHECK_VEC(ev.uerr, ev.pverr, mp + mv, 0);
    CHECK_VEC(ev.udoterr, ev.pvaerr, m, 0);
    CHECK_VEC(ev.mult, ev.cmult, m, 0);
    CHECK_INT(ev.ps[0], mp ? 0 : -1);
    CHECK_INT(ev.vs[0], mv ? mp : -1);
    CHECK_INT(ev.as[0], ma ? mp + mv : -1);

    /* 3. pvaerr at the UNconstrained udot: G udot + bias vs the formula */
    {
        for (int i = 0; i < m; ++i) {
            double g = ev.bias[i];
            for (int j = 0; j < nu; ++j) g += ev.G[i * nu + j] * k->udot_free[j];
            CHECK_NEAR(g, exf.pvaerr[i], TOL);
        }
    }

    /* 4. G u = uerr(u) - uerr(0) for the holonomic and nonholonomic rows */
    double uerr0[MAXM] = {0};
    {
        ceval e0;
        double zero[MAXQ] = {0};
        if (CHECK(run(k, c, 1, k->q, zero, k->t, &e0) == 0))
            for (int i = 0; i < mp + mv; ++i) {
                double g = 0;
                for (int j = 0; j < nu; ++j) g += ev.G[i * nu + j] * k->u[j];
                uerr0[i] = e0.uerr[i];
                CHECK_NEAR(g, ev.uerr[i] - e0.uerr[i], TOL);
            }
    }

    /* 5. G^T lambda = J^T F_c + f_c, and the power */
    {
        double P = 0;
        for (int j = 0; j < nu; ++j) {
            double gt = 0, jf = ev.f[j];
            for (int i = 0; i < m; ++i) gt += ev.G[i * nu + j] * ev.mult[i];
            for (int r = 6; r < 6 * nb; ++r) jf += k->J[r * nu + j] * ev.F[r];
            CHECK_NEAR(gt, jf, 1e-11);
            P += ev.f[j] * k->u[j];
        }
        for (int r = 6; r < 6 * nb; ++r) P += ev.F[r] * k->V[r];
        CHECK_NEAR(ev.power[0], -P, 1e-11);
    }

    /* 6. equations of motion: M udot + C + G^T lambda = f_applied */
    {
        double fm[MAXQ], fb[6 * MAXB], res[MAXQ];
        for (int j = 0; j < nu; ++j) fm[j] = k->fmob[j] - ev.f[j];
        for (int r = 0; r < 6 * nb; ++r) fb[r] = k->fbody[r] - ev.F[r];
        if (CHECK(orc_inverse_dynamics(&k->model, k->q, k->u, ev.udot, fm, fb, res) == 0)) {
            double scale = 1 + max_abs(k->fmob, nu) + max_abs(ev.f, nu) + max_abs(ev.F, 6 * nb);
            CHECK(max_abs(res, nu) < 1e-11 * scale);
        }
    }

    /* 7. finite differences along the motion */
    {
        const double h = 1e-6;
        double qp[MAXQ], qm[MAXQ], up[MAXQ], um[MAXQ], ep[E], em[E];
        for (int i = 0; i < k->nq; ++i) {
            qp[i] = k->q[i] + h * k->qdot[i];
            qm[i] = k->q[i] - h * k->qdot[i];
        }
        /* d/dt perr = pverr + corr */
        if (mp && CHECK(perr_at(k, c, qp, k->t + h, ep) == 0 && perr_at(k, c, qm, k->t - h, em) == 0))
            for (int i = 0; i < mp; ++i)
                CHECK_NEAR((ep[i] - em[i]) / (2 * h), ev.pverr[i] + ex.corr[i], 1e-7);
        /* Pq qdot = d perr / dq . qdot at fixed t */
        if (mp && CHECK(perr_at(k, c, qp, k->t, ep) == 0 && perr_at(k, c, qm, k->t, em) == 0))
            for (int i = 0; i < mp; ++i) {
                double pq = 0;
                for (int j = 0; j < k->nq; ++j) pq += ev.Pq[i * k->nq + j] * k->qdot[j];
                CHECK_NEAR((ep[i] - em[i]) / (2 * h), pq + ex.corr[i], 1e-7);
                CHECK_NEAR(pq, ev.uerr[i] - uerr0[i], TOL); /* Pq = P N^-1 */
            }
        /* d/dt pverr = pvaerr (at the unconstrained udot) */
        for (int i = 0; i < nu; ++i) {
            up[i] = k->u[i] + h * k->udot_free[i];
            um[i] = k->u[i] - h * k->udot_free[i];
        }
        if (mp + mv &&
            CHECK(pverr_at(k, c, qp, up, k->t + h, ep) == 0 && pverr_at(k, c, qm, um, k->t - h, em) == 0))
            for (int i = 0; i < mp + mv; ++i) {
                double g = ev.bias[i];
                for (int j = 0; j < nu; ++j) g += ev.G[i * nu + j] * k->udot_free[j];
                const double fd = (ep[i] - em[i]) / (2 * h);
                CHECK_NEAR(fd, g + exf.corr_v[i], 1e-6);
                ++n_fd_pva;
                if (exf.corr_v[i] != 0) {
                    const double d = fabs(exf.corr_v[i]) / (1 + fabs(g));
                    if (d > worst_nonexact) worst_nonexact = d;
                    ++n_nonexact_seen;
                }
            }
    }
    if (mbk_test_failed_count != fails0) fprintf(stderr, "    ^ in %s\n", label);
}

/* ---- the placements checked: every kind, Ancestor Ground and not ---- */

typedef struct placed {
    orc_constraint c;
    char label[64];
} placed;

static orc_constraint con(orc_constraint_kind kind)
{
    orc_constraint c;
    memset(&c, 0, sizeof c);
    c.kind = kind;
    return c;
}

static void random_rotation(double *R) { rot_xyz(rnd(-PI, PI), rnd(-1.4, 1.4), rnd(-PI, PI), R); }

static int build_list(placed *L)
{
    int n = 0;
    /* two-body constraints: (body1, body2) pairs giving Ancestor 0 (3,6),
     * Ancestor 1 not constrained (3,4), Ancestor = a constrained body (2,7),
     * Ground as a constrained body (0,7), siblings under 2 (7,3). */
    static const int pairs[5][2] = {{3, 6}, {3, 4}, {2, 7}, {0, 7}, {7, 3}};
    for (int p = 0; p < 5; ++p) {
        const int b1 = pairs[p][0], b2 = pairs[p][1];
        orc_constraint c;

        c = con(ORC_CON_ROD);
        c.rod.body1 = b1;
        c.rod.body2 = b2;
        rnd3(c.rod.station1, -0.3, 0.3);
        rnd3(c.rod.station2, -0.3, 0.3);
        c.rod.length = rnd(0.3, 1.5);
        L[n].c = c;
        snprintf(L[n++].label, 64, "Rod(%d,%d)", b1, b2);

        c = con(ORC_CON_BALL);
        c.ball.body1 = b1;
        c.ball.body2 = b2;
        rnd3(c.ball.station1, -0.3, 0.3);
        rnd3(c.ball.station2, -0.3, 0.3);
        L[n].c = c;
        snprintf(L[n++].label, 64, "Ball(%d,%d)", b1, b2);

        c = con(ORC_CON_WELD);
        c.weld.body1 = b1;
        c.weld.body2 = b2;
        xf_set(c.weld.X_B1F, rnd(-2, 2), rnd(-1, 1), rnd(-2, 2), rnd(-.3, .3), rnd(-.3, .3), rnd(-.3, .3));
        xf_set(c.weld.X_B2M, rnd(-2, 2), rnd(-1, 1), rnd(-2, 2), rnd(-.3, .3), rnd(-.3, .3), rnd(-.3, .3));
        L[n].c = c;
        snprintf(L[n++].label, 64, "Weld(%d,%d)", b1, b2);

        c = con(ORC_CON_POINT_IN_PLANE);
        c.point_in_plane.plane_body = b1;
        c.point_in_plane.follower_body = b2;
        rnd3(c.point_in_plane.normal, -1, 1); /* not unit: Simbody normalizes */
        c.point_in_plane.height = rnd(-0.5, 0.5);
        rnd3(c.point_in_plane.follower_point, -0.3, 0.3);
        L[n].c = c;
        snprintf(L[n++].label, 64, "PointInPlane(%d,%d)", b1, b2);

        /* directions hitting each branch of perp(): min |z_k| at 0, 1, 2, tie */
        static const double dirs[5][3] = {{0.1, 1, 0.2}, {1, 0.05, -0.3}, {-1, 1, 0.1}, {1, 1, 1}, {0.5, -2, 0.5}};
        c = con(ORC_CON_POINT_ON_LINE);
        c.point_on_line.line_body = b2; /* reversed roles too */
        c.point_on_line.follower_body = b1;
        memcpy(c.point_on_line.direction, dirs[p], sizeof dirs[p]);
        rnd3(c.point_on_line.point_on_line, -0.3, 0.3);
        rnd3(c.point_on_line.follower_point, -0.3, 0.3);
        L[n].c = c;
        snprintf(L[n++].label, 64, "PointOnLine(%d,%d)", b2, b1);

        c = con(ORC_CON_CONSTANT_ANGLE);
        c.constant_angle.base_body = b1;
        c.constant_angle.follower_body = b2;
        rnd3(c.constant_angle.base_axis, -1, 1);
        rnd3(c.constant_angle.follower_axis, -1, 1);
        c.constant_angle.angle = rnd(0.3, 2.8);
        L[n].c = c;
        snprintf(L[n++].label, 64, "ConstantAngle(%d,%d)", b1, b2);

        c = con(ORC_CON_CONSTANT_ORIENTATION);
        c.constant_orientation.base_body = b1;
        c.constant_orientation.follower_body = b2;
        random_rotation(c.constant_orientation.R_B1F);
        random_rotation(c.constant_orientation.R_B2M);
        L[n].c = c;
        snprintf(L[n++].label, 64, "ConstantOrientation(%d,%d)", b1, b2);
    }
    /* NoSlip1D: (case, moving0, moving1): Ancestor Ground; Ancestor 1 with a
     * different case body; case = a moving body (Ancestor 2 = case). */
    static const int ns[3][3] = {{0, 3, 6}, {4, 3, 7}, {2, 2, 7}};
    for (int i = 0; i < 3; ++i) {
        orc_constraint c = con(ORC_CON_NO_SLIP_1D);
        c.no_slip.case_body = ns[i][0];
        c.no_slip.moving_body0 = ns[i][1];
        c.no_slip.moving_body1 = ns[i][2];
        rnd3(c.no_slip.point, -0.4, 0.4);
        rnd3(c.no_slip.direction, -1, 1);
        L[n].c = c;
        snprintf(L[n++].label, 64, "NoSlip1D(%d;%d,%d)", ns[i][0], ns[i][1], ns[i][2]);
    }
    /* coordinate-level constraints, on mobilizers with qdot = u (pin 2,
     * slider 4, gimbal 5, universal 6, cylinder 7) */
    {
        orc_constraint c = con(ORC_CON_CONSTANT_COORDINATE);
        c.constant_coordinate.body = 7;
        c.constant_coordinate.which_q = 1;
        c.constant_coordinate.value = 0.3;
        L[n].c = c;
        snprintf(L[n++].label, 64, "ConstantCoordinate(7,q1)");

        c = con(ORC_CON_CONSTANT_SPEED);
        c.constant_speed.body = 4;
        c.constant_speed.which_u = 0;
        c.constant_speed.speed = -0.4;
        L[n].c = c;
        snprintf(L[n++].label, 64, "ConstantSpeed(4,u0)");

        c = con(ORC_CON_CONSTANT_SPEED);
        c.constant_speed.body = 1; /* free body: u3 = a translation rate */
        c.constant_speed.which_u = 3;
        c.constant_speed.speed = 0.25;
        L[n].c = c;
        snprintf(L[n++].label, 64, "ConstantSpeed(1,u3)");

        c = con(ORC_CON_CONSTANT_ACCELERATION);
        c.constant_acceleration.body = 6;
        c.constant_acceleration.which_u = 1;
        c.constant_acceleration.acceleration = 1.7;
        L[n].c = c;
        snprintf(L[n++].label, 64, "ConstantAcceleration(6,u1)");

        c = con(ORC_CON_CONSTANT_ACCELERATION);
        c.constant_acceleration.body = 3; /* ball: u = angular velocity */
        c.constant_acceleration.which_u = 2;
        c.constant_acceleration.acceleration = -0.6;
        L[n].c = c;
        snprintf(L[n++].label, 64, "ConstantAcceleration(3,u2)");

        c = con(ORC_CON_COORDINATE_COUPLER);
        c.coordinate_coupler.n = 3;
        c.coordinate_coupler.body[0] = 2;
        c.coordinate_coupler.which_q[0] = 0;
        c.coordinate_coupler.coef[0] = 1.5;
        c.coordinate_coupler.body[1] = 7;
        c.coordinate_coupler.which_q[1] = 1;
        c.coordinate_coupler.coef[1] = -0.7;
        c.coordinate_coupler.body[2] = 5;
        c.coordinate_coupler.which_q[2] = 2;
        c.coordinate_coupler.coef[2] = 0.4;
        c.coordinate_coupler.constant = 0.2;
        L[n].c = c;
        snprintf(L[n++].label, 64, "CoordinateCoupler(2q0,7q1,5q2)");

        c = con(ORC_CON_COORDINATE_COUPLER); /* two q of one mobilizer */
        c.coordinate_coupler.n = 2;
        c.coordinate_coupler.body[0] = 6;
        c.coordinate_coupler.which_q[0] = 0;
        c.coordinate_coupler.coef[0] = 1;
        c.coordinate_coupler.body[1] = 6;
        c.coordinate_coupler.which_q[1] = 1;
        c.coordinate_coupler.coef[1] = -2;
        L[n].c = c;
        snprintf(L[n++].label, 64, "CoordinateCoupler(6q0,6q1)");

        c = con(ORC_CON_SPEED_COUPLER);
        c.speed_coupler.n = 2;
        c.speed_coupler.body[0] = 4;
        c.speed_coupler.which_u[0] = 0;
        c.speed_coupler.coef[0] = 0.9;
        c.speed_coupler.body[1] = 6;
        c.speed_coupler.which_u[1] = 1;
        c.speed_coupler.coef[1] = -1.3;
        c.speed_coupler.constant = 0.1;
        L[n].c = c;
        snprintf(L[n++].label, 64, "SpeedCoupler(4u0,6u1)");

        c.speed_coupler.n_q = 2; /* with coordinate arguments */
        c.speed_coupler.q_body[0] = 2;
        c.speed_coupler.which_q[0] = 0;
        c.speed_coupler.q_coef[0] = 0.6;
        c.speed_coupler.q_body[1] = 7;
        c.speed_coupler.which_q[1] = 0;
        c.speed_coupler.q_coef[1] = -0.25;
        L[n].c = c;
        snprintf(L[n++].label, 64, "SpeedCoupler(4u0,6u1;2q0,7q0)");

        c = con(ORC_CON_PRESCRIBED_MOTION);
        c.prescribed_motion.body = 2;
        c.prescribed_motion.which_q = 0;
        c.prescribed_motion.function = ORC_MOTION_SINUSOID;
        c.prescribed_motion.amplitude = 0.8;
        c.prescribed_motion.frequency = 2.3;
        c.prescribed_motion.phase = 0.4;
        L[n].c = c;
        snprintf(L[n++].label, 64, "PrescribedMotion(2q0,sin)");

        c = con(ORC_CON_PRESCRIBED_MOTION);
        c.prescribed_motion.body = 5;
        c.prescribed_motion.which_q = 1;
        c.prescribed_motion.function = ORC_MOTION_POLYNOMIAL;
        c.prescribed_motion.n_poly = 4;
        c.prescribed_motion.poly[0] = 0.1;
        c.prescribed_motion.poly[1] = -0.5;
        c.prescribed_motion.poly[2] = 0.3;
        c.prescribed_motion.poly[3] = 0.05;
        L[n].c = c;
        snprintf(L[n++].label, 64, "PrescribedMotion(5q1,poly3)");
    }
    return n;
}

/* ---- several constraints at once: Simbody's system array layout ---- */

static void check_layout(const kin *k, const placed *L, int nL)
{
    /* Pick by label: the list order mixes the three kinds on purpose. */
    static const char *want[] = {"ConstantSpeed(4,u0)", "Rod(3,6)", "ConstantAcceleration(6,u1)",
                                 "Ball(0,7)", "NoSlip1D(0;3,6)", "PrescribedMotion(2q0,sin)",
                                 "ConstantSpeed(1,u3)", "ConstantAcceleration(3,u2)"};
    enum { N = 8 };
    orc_constraint c[N];
    for (int i = 0; i < N; ++i) {
        int found = 0;
        for (int j = 0; j < nL && !found; ++j)
            if (strcmp(L[j].label, want[i]) == 0) {
                c[i] = L[j].c;
                found = 1;
            }
        if (!CHECK(found)) return;
    }
    ceval ev;
    if (!CHECK(run(k, c, N, k->q, k->u, k->t, &ev) == 0)) return;
    const int nb = k->nb, nu = k->nu;
    /* expected layout: holonomic blocks in constraint order, then
     * nonholonomic, then acceleration-only */
    int mp = 0, mv = 0, ma = 0;
    for (int i = 0; i < N; ++i) {
        mp += ev.mp[i];
        mv += ev.mv[i];
        ma += ev.ma[i];
    }
    CHECK_INT(mp, 5);
    CHECK_INT(mv, 3);
    CHECK_INT(ma, 2);
    CHECK_INT(ev.r.mp, mp);
    CHECK_INT(ev.r.mv, mv);
    CHECK_INT(ev.r.ma, ma);
    CHECK_INT(ev.r.n_qerr, mp + n_quaternions(k));
    const int m = mp + mv + ma;
    int pp = 0, vv = mp, aa = mp + mv;
    double Fsum[6 * MAXB] = {0}, fsum[MAXQ] = {0};
    bodykin K = {ev.X, ev.V, ev.A};
    for (int i = 0; i < N; ++i) {
        const int cmp = ev.mp[i], cmv = ev.mv[i], cma = ev.ma[i];
        CHECK_INT(ev.ps[i], cmp ? pp : -1);
        CHECK_INT(ev.vs[i], cmv ? vv : -1);
        CHECK_INT(ev.as[i], cma ? aa : -1);
        const double *pe = ev.perr + E * i, *pv = ev.pverr + E * i, *pa = ev.pvaerr + E * i;
        const double *lm = ev.cmult + E * i;
        for (int j = 0; j < cmp; ++j) {
            CHECK(ev.qerr[pp + j] == pe[j]);
            CHECK(ev.uerr[pp + j] == pv[j]);
            CHECK(ev.udoterr[pp + j] == pa[j]);
            CHECK(ev.mult[pp + j] == lm[j]);
        }
        for (int j = 0; j < cmv; ++j) {
            CHECK(ev.uerr[vv + j] == pv[cmp + j]);
            CHECK(ev.udoterr[vv + j] == pa[cmp + j]);
            CHECK(ev.mult[vv + j] == lm[cmp + j]);
        }
        for (int j = 0; j < cma; ++j) {
            CHECK(ev.udoterr[aa + j] == pa[cmp + cmv + j]);
            CHECK(ev.mult[aa + j] == lm[cmp + cmv + j]);
        }
        pp += cmp;
        vv += cmv;
        aa += cma;
        /* each constraint's own values and forces, as when alone */
        expect ex;
        expected(k, &c[i], &K, k->q, k->qdot, ev.qdd, k->u, ev.udot, k->t, lm, &ex);
        CHECK_INT(cmp, ex.mp);
        CHECK_INT(cmv, ex.mv);
        CHECK_INT(cma, ex.ma);
        CHECK_VEC(pe, ex.perr, cmp, TOL);
        CHECK_VEC(pv, ex.pverr, cmp + cmv, TOL);
        CHECK_VEC(pa, ex.pvaerr, cmp + cmv + cma, 1e-10);
        CHECK_VEC(ev.F + 6 * nb * i, ex.F, 6 * nb, TOL);
        CHECK_VEC(ev.f + nu * i, ex.f, nu, TOL);
        for (int r = 0; r < 6 * nb; ++r) Fsum[r] += ev.F[6 * nb * i + r];
        for (int j = 0; j < nu; ++j) fsum[j] += ev.f[nu * i + j];
    }
    for (int i = mp; i < ev.r.n_qerr; ++i) CHECK(fabs(ev.qerr[i]) < 1e-15); /* quaternions */
    check_solution(ev.G, m, nu, ev.udoterr, ev.mult);
    for (int i = 0; i < m; ++i) CHECK(fabs(ev.udoterr[i]) < 1e-9);
    /* G^T lambda = J^T F + f summed over the constraints; equations of motion */
    for (int j = 0; j < nu; ++j) {
        double gt = 0, jf = fsum[j];
        for (int i = 0; i < m; ++i) gt += ev.G[i * nu + j] * ev.mult[i];
        for (int r = 6; r < 6 * nb; ++r) jf += k->J[r * nu + j] * Fsum[r];
        CHECK_NEAR(gt, jf, 1e-11);
    }
    double fm[MAXQ], fb[6 * MAXB], res[MAXQ];
    for (int j = 0; j < nu; ++j) fm[j] = k->fmob[j] - fsum[j];
    for (int r = 0; r < 6 * nb; ++r) fb[r] = k->fbody[r] - Fsum[r];
    if (CHECK(orc_inverse_dynamics(&k->model, k->q, k->u, ev.udot, fm, fb, res) == 0))
        CHECK(max_abs(res, nu) < 1e-11 * (1 + max_abs(fm, nu) + max_abs(fb, 6 * nb)));

    /* no constraints at all: the unconstrained dynamics, empty arrays */
    ceval e0;
    if (CHECK(run(k, NULL, 0, k->q, k->u, k->t, &e0) == 0)) {
        CHECK(e0.r.mp == 0 && e0.r.mv == 0 && e0.r.ma == 0);
        CHECK_INT(e0.r.n_qerr, n_quaternions(k));
        CHECK_VEC(e0.udot, k->udot_free, nu, 1e-12);
    }
}

/* ---- redundant and inconsistent constraints ---- */

static orc_body g_fourbar[3];

static void build_fourbar(void)
{
    /* a planar 4-bar in 3-D: three pins (all z axes parallel) from Ground;
     * crank 1 (length 1), coupler 2 (length 2), rocker 3 (length 1), to be
     * closed at the Ground point (2,0,0) -- the fourth "pin". */
    static const double len[3] = {0, 1, 2};
    for (int i = 0; i < 3; ++i) {
        orc_body b;
        memset(&b, 0, sizeof b);
        b.parent = i;
        b.type = ORC_PIN;
        xf_set(b.X_PF, 0, 0, 0, len[i], 0, 0);
        xf_set(b.X_BM, 0, 0, 0, 0, 0, 0);
        b.mass = 1.0 + 0.3 * i;
        b.com[0] = i == 1 ? 1.0 : 0.5;
        b.inertia_about_com[0] = 0.01;
        b.inertia_about_com[4] = 0.1 + 0.05 * i;
        b.inertia_about_com[8] = 0.1 + 0.05 * i;
        g_fourbar[i] = b;
    }
}

static void check_redundant(void)
{
    build_fourbar();
    kin k;
    setup_kin(&k, g_fourbar, 3, 0);
    memset(k.fbody, 0, sizeof k.fbody);
    memset(k.fmob, 0, sizeof k.fmob);
    k.q[0] = PI / 2 + 0.1; /* near the parallelogram, loop not exactly closed */
    k.q[1] = -PI / 2 + 0.05;
    k.q[2] = -PI / 2 - 0.2;
    k.u[0] = 0.7;
    k.u[1] = -0.4;
    k.u[2] = 0.3;
    k.fmob[0] = 1.5;
    k.t = 0;
    if (!CHECK(load_kin(&k) == 0)) return;
    const int nu = k.nu;

    orc_constraint ball = con(ORC_CON_BALL);
    ball.ball.body1 = 0;
    ball.ball.station1[0] = 2;
    ball.ball.body2 = 3;
    ball.ball.station2[0] = 1;

    /* 1. Ball closure: the z equation is redundant (a zero row of G). */
    ceval eb;
    if (!CHECK(run(&k, &ball, 1, k.q, k.u, 0, &eb) == 0)) return;
    CHECK(max_abs(eb.G + 2 * nu, nu) == 0);     /* z row */
    CHECK(fabs(eb.mult[2]) < 1e-12);            /* least-norm: no z multiplier */
    CHECK(max_abs(eb.udoterr, 3) < 1e-9);       /* consistent */
    check_solution(eb.G, 3, nu, eb.udoterr, eb.mult);

    /* 2. the same loop closed by two PointInPlane (x and y): same udot and
     * the same x, y multipliers */
    orc_constraint pip[2];
    for (int i = 0; i < 2; ++i) {
        pip[i] = con(ORC_CON_POINT_IN_PLANE);
        pip[i].point_in_plane.plane_body = 0;
        pip[i].point_in_plane.normal[i] = 1;
        pip[i].point_in_plane.height = i == 0 ? 2 : 0;
        pip[i].point_in_plane.follower_body = 3;
        pip[i].point_in_plane.follower_point[0] = 1;
    }
    ceval ep;
    if (CHECK(run(&k, pip, 2, k.q, k.u, 0, &ep) == 0)) {
        CHECK_VEC(ep.udot, eb.udot, nu, 1e-12);
        CHECK_VEC(ep.mult, eb.mult, 2, 1e-12);
        CHECK_VEC(ep.perr, eb.perr, 1, 1e-14);
    }

    /* 3. the Ball twice: 6 equations of rank 2; the multipliers are shared
     * equally (least norm), udot unchanged */
    orc_constraint two[2] = {ball, ball};
    ceval e2;
    if (CHECK(run(&k, two, 2, k.q, k.u, 0, &e2) == 0)) {
        CHECK_VEC(e2.udot, eb.udot, nu, 1e-12);
        for (int i = 0; i < 3; ++i) {
            CHECK_NEAR(e2.mult[i], 0.5 * eb.mult[i], 1e-12);
            CHECK_NEAR(e2.mult[3 + i], 0.5 * eb.mult[i], 1e-12);
        }
        check_solution(e2.G, 6, nu, e2.udoterr, e2.mult);
        CHECK(max_abs(e2.udoterr, 6) < 1e-9);
    }

    /* 4. Weld closure: 6 equations, rank 3 (the planar ones), locks the
     * mechanism: udot = 0 is forced... only at the acceleration level, so
     * udot solves G udot = b; the out-of-plane multipliers are zero */
    orc_constraint weld = con(ORC_CON_WELD);
    weld.weld.body1 = 0;
    xf_set(weld.weld.X_B1F, 0, 0, -PI / 2, 2, 0, 0);
    weld.weld.body2 = 3;
    xf_set(weld.weld.X_B2M, 0, 0, 0, 1, 0, 0);
    ceval ew;
    if (CHECK(run(&k, &weld, 1, k.q, k.u, 0, &ew) == 0)) {
        double basis[64 * 64];
        CHECK_INT(span_basis(ew.G, 6, nu, nu, 1, basis), 3);
        check_solution(ew.G, 6, nu, ew.udoterr, ew.mult);
        CHECK(max_abs(ew.udoterr, 6) < 1e-9);
        /* rows Mx.Fy (torque along Mx x Fy = z: in plane), My.Fz and Mz.Fx
         * (torques in the xy plane: out of plane), then x, y, z position:
         * rows 1, 2 and 5 are zero rows and get zero multipliers */
        for (int j = 0; j < nu; ++j)
            CHECK(ew.G[1 * nu + j] == 0 && ew.G[2 * nu + j] == 0 && ew.G[5 * nu + j] == 0);
        CHECK(fabs(ew.mult[1]) < 1e-12 && fabs(ew.mult[2]) < 1e-12 && fabs(ew.mult[5]) < 1e-12);
    }

    /* 5. inconsistent: two ConstantAcceleration on the same u with
     * different values. Simbody does not fail: udot is the least-squares
     * compromise (the mean), the errors are +-half the difference, and the
     * multipliers are equal (least norm). */
    orc_constraint ca[2];
    for (int i = 0; i < 2; ++i) {
        ca[i] = con(ORC_CON_CONSTANT_ACCELERATION);
        ca[i].constant_acceleration.body = 1;
        ca[i].constant_acceleration.which_u = 0;
        ca[i].constant_acceleration.acceleration = i == 0 ? 1.0 : 3.0;
    }
    ceval ei;
    if (CHECK(run(&k, ca, 2, k.q, k.u, 0, &ei) == 0)) {
        CHECK_NEAR(ei.udot[0], 2.0, 1e-12);
        CHECK_NEAR(ei.udoterr[0], 1.0, 1e-12);
        CHECK_NEAR(ei.udoterr[1], -1.0, 1e-12);
        CHECK_NEAR(ei.mult[0], ei.mult[1], 1e-12);
        check_solution(ei.G, 2, nu, ei.udoterr, ei.mult);
        /* equations of motion still hold with the reported forces */
        double fm[MAXQ], res[MAXQ];
        for (int j = 0; j < nu; ++j) fm[j] = k.fmob[j] - ei.f[j] - ei.f[nu + j];
        if (CHECK(orc_inverse_dynamics(&k.model, k.q, k.u, ei.udot, fm, k.fbody, res) == 0))
            CHECK(max_abs(res, nu) < 1e-11);
    }
    printf("four-bar closed by a Ball: lambda = (%.6g, %.6g, %.6g); doubled: (%.6g, %.6g, %.6g) "
           "each\n", eb.mult[0], eb.mult[1], eb.mult[2], e2.mult[0], e2.mult[1], e2.mult[2]);
}

/* ---- multiplier signs on a hanging body ---- */

static void check_signs(void)
{
    /* one free body (mass 2, COM at its origin) hanging 1 below Ground's
     * origin, at rest, gravity -9.81 z: every support carries m g = 19.62 */
    static orc_body b;
    memset(&b, 0, sizeof b);
    b.type = ORC_FREE;
    xf_set(b.X_PF, 0, 0, 0, 0, 0, 0);
    xf_set(b.X_BM, 0, 0, 0, 0, 0, 0);
    b.mass = 2;
    b.inertia_about_com[0] = b.inertia_about_com[4] = b.inertia_about_com[8] = 0.1;
    kin k;
    setup_kin(&k, &b, 1, 0);
    k.model.gravity[0] = 0;
    k.q[0] = 1;
    k.q[6] = -1;
    const double mg = 2 * 9.81;
    ceval ev;

    orc_constraint c = con(ORC_CON_ROD); /* Ground origin to the body origin */
    c.rod.body1 = 0;
    c.rod.body2 = 1;
    c.rod.length = 1;
    if (CHECK(run(&k, &c, 1, k.q, NULL, 0, &ev) == 0)) {
        CHECK_NEAR(ev.mult[0], mg, 1e-12); /* positive = tension */
        /* reported (left-hand-side) force = minus the +m g z the rod exerts */
        CHECK_NEAR(ev.F[6 + 5], -mg, 1e-12);
    }
    c = con(ORC_CON_BALL); /* body2 = the hanging body */
    c.ball.body1 = 0;
    c.ball.station1[2] = -1;
    c.ball.body2 = 1;
    if (CHECK(run(&k, &c, 1, k.q, NULL, 0, &ev) == 0)) {
        CHECK_NEAR(ev.mult[2], -mg, 1e-12); /* = minus the force exerted on body 2 */
        CHECK(fabs(ev.mult[0]) < 1e-12 && fabs(ev.mult[1]) < 1e-12);
    }
    c.ball.body1 = 1; /* reversed: body1 = the hanging body */
    c.ball.station1[2] = 0;
    c.ball.body2 = 0;
    c.ball.station2[2] = -1;
    if (CHECK(run(&k, &c, 1, k.q, NULL, 0, &ev) == 0)) CHECK_NEAR(ev.mult[2], mg, 1e-12);
    /* Weld orientation errors: for a small rotation theta of M relative to F
     * (theta in F), perr[0..2] = (theta_z, theta_x, theta_y) + O(theta^2);
     * and they vanish for a half turn about any of F's axes. */
    c = con(ORC_CON_WELD);
    c.weld.body1 = 0;
    c.weld.body2 = 1;
    xf_set(c.weld.X_B1F, 0, 0, 0, 0, 0, -1);
    xf_set(c.weld.X_B2M, 0, 0, 0, 0, 0, 0);
    const double th[3] = {2e-6, -3e-6, 5e-6};
    const double tn = norm3(th);
    double qw[MAXQ];
    memcpy(qw, k.q, sizeof qw);
    qw[0] = cos(tn / 2);
    for (int i = 0; i < 3; ++i) qw[1 + i] = sin(tn / 2) * th[i] / tn;
    if (CHECK(run(&k, &c, 1, qw, NULL, 0, &ev) == 0)) {
        CHECK(fabs(ev.perr[0] - th[2]) < 1e-10);
        CHECK(fabs(ev.perr[1] - th[0]) < 1e-10);
        CHECK(fabs(ev.perr[2] - th[1]) < 1e-10);
        CHECK(max_abs(ev.perr + 3, 3) < 1e-15);
    }
    for (int axis = 0; axis < 3; ++axis) {
        memset(qw, 0, 4 * sizeof(double));
        qw[1 + axis] = 1; /* half turn */
        if (CHECK(run(&k, &c, 1, qw, NULL, 0, &ev) == 0)) CHECK(max_abs(ev.perr, 6) < 1e-15);
    }

    c = con(ORC_CON_CONSTANT_SPEED); /* the vertical speed held at 0 */
    c.constant_speed.body = 1;
    c.constant_speed.which_u = 5;
    if (CHECK(run(&k, &c, 1, k.q, NULL, 0, &ev) == 0)) {
        CHECK_NEAR(ev.mult[0], -mg, 1e-12); /* M udot + lambda = f = -m g */
        CHECK_NEAR(ev.f[5], -mg, 1e-12);
        CHECK(fabs(ev.udot[5]) < 1e-12);
    }
}

/* ---- refused descriptors ---- */

static void check_errors(void)
{
    kin k;
    setup_kin(&k, g_bodies, NB, 0);
    memset(k.q, 0, sizeof k.q);
    k.q[k.q_start[1]] = 1; /* identity quaternions */
    k.q[k.q_start[3]] = 1;
    ceval ev;
    orc_constraint c;
    g_quiet = 1;

    c = con((orc_constraint_kind)0);
    CHECK(run(&k, &c, 1, k.q, NULL, 0, &ev) == -1);
    CHECK(strstr(orc_constraints_last_error(), "unknown kind") != NULL);

    c = con(ORC_CON_ROD);
    c.rod.body1 = 0;
    c.rod.body2 = NB + 1;
    c.rod.length = 1;
    CHECK(run(&k, &c, 1, k.q, NULL, 0, &ev) == -1);
    CHECK(strstr(orc_constraints_last_error(), "body2") != NULL);
    c.rod.body2 = 0;
    CHECK(run(&k, &c, 1, k.q, NULL, 0, &ev) == -1); /* same body twice */
    CHECK(strstr(orc_constraints_last_error(), "different") != NULL);
    c.rod.body2 = 2;
    c.rod.length = 0;
    CHECK(run(&k, &c, 1, k.q, NULL, 0, &ev) == -1);

    c = con(ORC_CON_POINT_IN_PLANE);
    c.point_in_plane.follower_body = 3; /* zero normal */
    CHECK(run(&k, &c, 1, k.q, NULL, 0, &ev) == -1);
    CHECK(strstr(orc_constraints_last_error(), "normal") != NULL);

    c = con(ORC_CON_WELD);
    c.weld.body2 = 1;
    c.weld.X_B1F[0] = c.weld.X_B1F[4] = c.weld.X_B1F[8] = 1;
    c.weld.X_B2M[0] = c.weld.X_B2M[4] = 1; /* singular */
    CHECK(run(&k, &c, 1, k.q, NULL, 0, &ev) == -1);
    CHECK(strstr(orc_constraints_last_error(), "X_B2M") != NULL);

    c = con(ORC_CON_CONSTANT_SPEED);
    c.constant_speed.body = 2; /* pin: only u0 */
    c.constant_speed.which_u = 1;
    CHECK(run(&k, &c, 1, k.q, NULL, 0, &ev) == -1);
    CHECK(strstr(orc_constraints_last_error(), "which_u") != NULL);

    c = con(ORC_CON_PRESCRIBED_MOTION);
    c.prescribed_motion.body = 3; /* quaternion ball: q0..q3 exist */
    c.prescribed_motion.which_q = 4;
    c.prescribed_motion.function = ORC_MOTION_SINUSOID;
    CHECK(run(&k, &c, 1, k.q, NULL, 0, &ev) == -1);
    c.prescribed_motion.which_q = 0;
    { /* a kind outside the enum, stored without forming an invalid enum value */
        int bad = 7;
        memcpy(&c.prescribed_motion.function, &bad, sizeof bad);
    }
    CHECK(run(&k, &c, 1, k.q, NULL, 0, &ev) == -1);
    c.prescribed_motion.function = ORC_MOTION_POLYNOMIAL;
    c.prescribed_motion.n_poly = 0;
    CHECK(run(&k, &c, 1, k.q, NULL, 0, &ev) == -1);

    c = con(ORC_CON_COORDINATE_COUPLER);
    c.coordinate_coupler.n = 0;
    CHECK(run(&k, &c, 1, k.q, NULL, 0, &ev) == -1);
    c = con(ORC_CON_SPEED_COUPLER);
    c.speed_coupler.n = 1;
    c.speed_coupler.body[0] = 2;
    c.speed_coupler.n_q = -1;
    CHECK(run(&k, &c, 1, k.q, NULL, 0, &ev) == -1);

    CHECK(run(&k, NULL, 1, k.q, NULL, 0, &ev) == -1);
    CHECK(orc_eval_constraints(&k.model, NULL, 0, k.q, NULL, NULL, NULL, 0, NULL) == -1);
    CHECK(orc_eval_constraints(&k.model, NULL, 0, NULL, NULL, NULL, NULL, 0, &ev.r) == -1);

    /* a good call after the refused ones */
    g_quiet = 0;
    c = con(ORC_CON_CONSTANT_SPEED);
    c.constant_speed.body = 2;
    c.constant_speed.speed = 0.5;
    CHECK(run(&k, &c, 1, k.q, NULL, 0, &ev) == 0);
    CHECK(strcmp(orc_constraints_last_error(), "") == 0);
    CHECK_NEAR(ev.pverr[0], -0.5, 0);
}

int main(void)
{
    build_bodies();
    placed L[64];
    const int nL = build_list(L);
    for (int euler = 0; euler <= 1; ++euler) {
        kin k;
        setup_kin(&k, g_bodies, NB, euler);
        for (int st = 0; st < 3; ++st) {
            random_state(&k);
            if (!CHECK(load_kin(&k) == 0)) {
                fprintf(stderr, "    %s\n", orc_last_error());
                continue;
            }
            for (int i = 0; i < nL; ++i) check_single(&k, &L[i].c, L[i].label);
            check_layout(&k, L, nL);
        }
    }
    check_redundant();
    check_signs();
    check_errors();
    printf("%d single-constraint evaluations checked; d/dt pverr = pvaerr + corr verified on %d "
           "equations, %d of them with a nonzero documented correction (largest %.3g)\n",
           n_checked, n_fd_pva, n_nonexact_seen, worst_nonexact);
    printf("overdetermined (rank G < m) evaluations: %d, largest leftover |udoterr| %.3g\n",
           n_overdetermined, worst_overdetermined_udoterr);
    orc_constraints_release();
    orc_release();
    return mbk_test_finish();
}
