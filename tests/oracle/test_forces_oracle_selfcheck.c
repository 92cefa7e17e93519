/* Self-check of simbody_forces_oracle.h: every force-element formula written
 * in that header is re-implemented here in plain C, from body poses and
 * velocities (orc_eval) and the model's q, u and mass properties, and
 * compared with what Simbody 3.7 computes (orc_eval_forces) to 1e-12
 * relative, element by element, on two models (quaternion and Euler-angle
 * mode) and several states each, with the branches of the piecewise laws
 * (stop engaged low/high/clamped/free, contact in/out/pulling, gimbal-free
 * bushing) exercised. Also:
 *   - all elements together = the sum of the elements one at a time;
 *   - the power output equals sum F.V + f.u, and for conservative elements
 *     -dPE/dt by central differences along qdot;
 *   - bad descriptors are refused with a message, and a good call after a
 *     refused one works. */
#include "mbk_test.h"
#include "simbody_forces_oracle.h"

#define ORC_TEST_RNG_SEED 0x9E3779B97F4A7C15ull
#include "oracle_test_util.h"

#include <stdlib.h>
#include <string.h>

#define PI 3.14159265358979323846
#define TOL 1e-12
#define MAXB 8
#define MAXQ 48

/* ---- the models ---- */

enum { NB = 5 };
static orc_body g_bodies[NB];
/* body 1 FREE from Ground, 2 PIN on 1, 3 GIMBAL on 2, 4 SLIDER on Ground, 5 BALL on 4 */
static void build_bodies(void)
{
    g_bodies[0] = mk(0, ORC_FREE, 2.0);
    g_bodies[1] = mk(1, ORC_PIN, 1.5);
    g_bodies[2] = mk(2, ORC_GIMBAL, 0.7);
    g_bodies[3] = mk(0, ORC_SLIDER, 1.2);
    g_bodies[4] = mk(4, ORC_BALL, 0.9);
}

/* ---- state and kinematics from the (separately self-checked) matter oracle ---- */

typedef struct kin {
    orc_model model;
    int nq, nu, nb; /* nb counts Ground */
    int q_start[MAXB], body_nq[MAXB], u_start[MAXB], body_nu[MAXB];
    double q[MAXQ], u[MAXQ], qdot[MAXQ];
    double X[12 * MAXB], V[6 * MAXB];
} kin;

static void random_state(kin *k)
{
    for (int b = 1; b < k->nb; ++b) {
        const orc_body *B = &k->model.bodies[b - 1];
        double *q = k->q + k->q_start[b];
        const int quat = !k->model.use_euler_angles && (B->type == ORC_BALL || B->type == ORC_FREE);
        for (int i = 0; i < k->body_nq[b]; ++i) q[i] = rnd(-1.2, 1.2);
        if (quat) {
            const double n = sqrt(q[0] * q[0] + q[1] * q[1] + q[2] * q[2] + q[3] * q[3]);
            for (int i = 0; i < 4; ++i) q[i] /= n;
        }
    }
    for (int i = 0; i < k->nu; ++i) k->u[i] = rnd(-1.5, 1.5);
}

static int load_kin(kin *k)
{
    orc_result r;
    memset(&r, 0, sizeof r);
    r.q = k->q; /* normalized in place (already unit) */
    r.X_GB = k->X;
    r.V_GB = k->V;
    r.qdot = k->qdot;
    double qin[MAXQ];
    memcpy(qin, k->q, sizeof qin);
    return orc_eval(&k->model, qin, k->u, NULL, NULL, &r);
}

static const double *Rb(const kin *k, int b) { return k->X + 12 * b; }
static const double *pb(const kin *k, int b) { return k->X + 12 * b + 9; }
static const double *wb(const kin *k, int b) { return k->V + 6 * b; }
static const double *vb(const kin *k, int b) { return k->V + 6 * b + 3; }

/* P = station s of body b in Ground; v = its velocity */
static void station(const kin *k, int b, const double *s, double *P, double *v)
{
    double r[3];
    mat_vec(Rb(k, b), s, r);
    if (P)
        for (int i = 0; i < 3; ++i) P[i] = pb(k, b)[i] + r[i];
    if (v) {
        double wr[3];
        cross(wb(k, b), r, wr);
        for (int i = 0; i < 3; ++i) v[i] = vb(k, b)[i] + wr[i];
    }
}

/* apply force f (in G) at Ground point P on body b */
static void apply_at_point(const kin *k, double *F, int b, const double *P, const double *f)
{
    double r[3], m[3];
    sub3(P, pb(k, b), r);
    cross(r, f, m);
    for (int i = 0; i < 3; ++i) {
        F[6 * b + i] += m[i];
        F[6 * b + 3 + i] += f[i];
    }
}

static void apply_at_station(const kin *k, double *F, int b, const double *s, const double *f)
{
    double P[3];
    station(k, b, s, P, NULL);
    apply_at_point(k, F, b, P, f);
}

/* ---- the documented formulas ---- */

/* how often each branch of the piecewise laws was exercised */
static int hit_stop_high, hit_stop_low, hit_stop_clamped, hit_stop_free;
static int hit_contact_none, hit_contact_pulling, hit_contact_slow, hit_contact_fast;

typedef struct expect {
    double F[6 * MAXB], f[MAXQ], pe;
} expect;

static void x_gravity(const kin *k, const orc_uniform_gravity *g, expect *e)
{
    for (int b = 1; b < k->nb; ++b) {
        const orc_body *B = &k->model.bodies[b - 1];
        double P[3], mg[3];
        station(k, b, B->com, P, NULL);
        for (int i = 0; i < 3; ++i) mg[i] = B->mass * g->g[i];
        apply_at_point(k, e->F, b, P, mg);
        e->pe -= B->mass * (dot3(g->g, P) + g->zero_height);
    }
}

/* e = unit vector P1 -> P2, d = distance; v2 - v1 optional */
static double two_points(const kin *k, int b1, const double *s1, int b2, const double *s2,
                         double *e, double *dv)
{
    double P1[3], P2[3], v1[3], v2[3];
    station(k, b1, s1, P1, v1);
    station(k, b2, s2, P2, v2);
    sub3(P2, P1, e);
    const double d = norm3(e);
    for (int i = 0; i < 3; ++i) e[i] /= d;
    if (dv) sub3(v2, v1, dv);
    return d;
}

/* +t e at s1 on b1, -t e at s2 on b2 */
static void pull_together(const kin *k, int b1, const double *s1, int b2, const double *s2,
                          const double *e, double t, expect *x)
{
    double f1[3], f2[3];
    for (int i = 0; i < 3; ++i) {
        f1[i] = t * e[i];
        f2[i] = -t * e[i];
    }
    apply_at_station(k, x->F, b1, s1, f1);
    apply_at_station(k, x->F, b2, s2, f2);
}

static void x_spring(const kin *k, const orc_two_point_spring *s, expect *x)
{
    double e[3];
    const double d = two_points(k, s->body1, s->station1, s->body2, s->station2, e, NULL);
    pull_together(k, s->body1, s->station1, s->body2, s->station2, e, s->k * (d - s->x0), x);
    x->pe += 0.5 * s->k * (d - s->x0) * (d - s->x0);
}

static void x_damper(const kin *k, const orc_two_point_damper *s, expect *x)
{
    double e[3], dv[3];
    two_points(k, s->body1, s->station1, s->body2, s->station2, e, dv);
    pull_together(k, s->body1, s->station1, s->body2, s->station2, e, s->c * dot3(dv, e), x);
}

static void x_two_point_force(const kin *k, const orc_two_point_constant *s, expect *x)
{
    double e[3];
    two_points(k, s->body1, s->station1, s->body2, s->station2, e, NULL);
    pull_together(k, s->body1, s->station1, s->body2, s->station2, e, -s->f, x);
}

static void x_mobility_spring(const kin *k, const orc_mobility_spring *s, expect *x)
{
    const double q = k->q[k->q_start[s->body] + s->which_q];
    x->f[k->u_start[s->body] + s->which_q] += -s->k * (q - s->q_zero);
    x->pe += 0.5 * s->k * (q - s->q_zero) * (q - s->q_zero);
}

static void x_mobility_damper(const kin *k, const orc_mobility_damper *s, expect *x)
{
    const int i = k->u_start[s->body] + s->which_u;
    x->f[i] += -s->c * k->u[i];
}

static void x_mobility_force(const kin *k, const orc_mobility_constant *s, expect *x)
{
    x->f[k->u_start[s->body] + s->which_u] += s->f;
}

static void x_stop(const kin *k, const orc_mobility_stop *s, expect *x)
{
    if (s->stiffness == 0) return;
    const int iq = k->q_start[s->body] + s->which_q;
    const double q = k->q[iq], qd = s->dissipation != 0 ? k->qdot[iq] : 0.0;
    double f = 0, xx = 0;
    if (q > s->q_high) {
        xx = q - s->q_high;
        f = fmin(0.0, -s->stiffness * xx * (1 + s->dissipation * qd));
        ++hit_stop_high;
        if (-s->stiffness * xx * (1 + s->dissipation * qd) > 0) ++hit_stop_clamped;
    } else if (q < s->q_low) {
        xx = q - s->q_low;
        f = fmax(0.0, -s->stiffness * xx * (1 - s->dissipation * qd));
        ++hit_stop_low;
        if (-s->stiffness * xx * (1 - s->dissipation * qd) < 0) ++hit_stop_clamped;
    } else {
        ++hit_stop_free;
    }
    x->f[k->u_start[s->body] + s->which_q] += f;
    x->pe += 0.5 * s->stiffness * xx * xx;
}

static void x_constant_force(const kin *k, const orc_constant_force *s, expect *x)
{
    apply_at_station(k, x->F, s->body, s->station, s->force);
}

static void x_constant_torque(const kin *k, const orc_constant_torque *s, expect *x)
{
    (void)k;
    for (int i = 0; i < 3; ++i) x->F[6 * s->body + i] += s->torque[i];
}

/* body-fixed XYZ angles of R, as documented */
static void xyz_angles(const double *R, double *a)
{
    const double Rsum = sqrt((R[0] * R[0] + R[1] * R[1] + R[5] * R[5] + R[8] * R[8]) / 2);
    a[1] = atan2(R[2], Rsum);
    a[0] = atan2(-R[5], R[8]);
    a[2] = atan2(-R[1], R[0]);
}

static void x_bushing(const kin *k, const orc_linear_bushing *s, expect *x)
{
    const int b1 = s->body1, b2 = s->body2;
    double R_GF[9], R_GM[9], R_FM[9], p_B1F_G[3], p_B2M_G[3], p_GF[3], p_GM[3], d[3], p_FM[3];
    mat_mul(Rb(k, b1), s->X_B1F, R_GF);
    mat_mul(Rb(k, b2), s->X_B2M, R_GM);
    mat_tmul(R_GF, R_GM, R_FM);
    mat_vec(Rb(k, b1), s->X_B1F + 9, p_B1F_G);
    mat_vec(Rb(k, b2), s->X_B2M + 9, p_B2M_G);
    for (int i = 0; i < 3; ++i) {
        p_GF[i] = pb(k, b1)[i] + p_B1F_G[i];
        p_GM[i] = pb(k, b2)[i] + p_B2M_G[i];
    }
    sub3(p_GM, p_GF, d);
    mat_tvec(R_GF, d, p_FM);
    double q[6], qd[6];
    xyz_angles(R_FM, q);
    for (int i = 0; i < 3; ++i) q[3 + i] = p_FM[i];

    double p_FM_G[3], vF[3], vM[3], t[3], dw[3], dvv[3], w_FM_F[3], v_FM_F[3], w_FM_M[3];
    mat_vec(R_GF, p_FM, p_FM_G);
    cross(wb(k, b1), p_B1F_G, t);
    for (int i = 0; i < 3; ++i) vF[i] = vb(k, b1)[i] + t[i];
    cross(wb(k, b2), p_B2M_G, t);
    for (int i = 0; i < 3; ++i) vM[i] = vb(k, b2)[i] + t[i];
    sub3(wb(k, b2), wb(k, b1), dw);
    mat_tvec(R_GF, dw, w_FM_F);
    cross(wb(k, b1), p_FM_G, t);
    for (int i = 0; i < 3; ++i) dvv[i] = vM[i] - vF[i] - t[i];
    mat_tvec(R_GF, dvv, v_FM_F);
    mat_tvec(R_FM, w_FM_F, w_FM_M);
    const double s1 = sin(q[1]), c1 = cos(q[1]), s2 = sin(q[2]), c2 = cos(q[2]);
    const double N[9] = {c2 / c1, -s2 / c1, 0, s2, c2, 0, -s1 * c2 / c1, s1 * s2 / c1, 1};
    mat_vec(N, w_FM_M, qd);
    for (int i = 0; i < 3; ++i) qd[3 + i] = v_FM_F[i];

    double f[6];
    for (int i = 0; i < 6; ++i) {
        f[i] = -(s->stiffness[i] * q[i] + s->damping[i] * qd[i]);
        x->pe += 0.5 * s->stiffness[i] * q[i] * q[i];
    }
    double m_M[3], m_G[3], f_G[3], a[3], c[3];
    mat_tvec(N, f, m_M);
    mat_vec(R_GM, m_M, m_G);
    mat_vec(R_GF, f + 3, f_G);
    cross(p_B2M_G, f_G, a);
    for (int i = 0; i < 3; ++i) {
        x->F[6 * b2 + i] += m_G[i] + a[i];
        x->F[6 * b2 + 3 + i] += f_G[i];
    }
    cross(p_FM_G, f_G, a);
    cross(p_B1F_G, f_G, c); /* p_B1F_G x (-f_G) = -c */
    for (int i = 0; i < 3; ++i) {
        x->F[6 * b1 + i] += -(m_G[i] + a[i]) - c[i];
        x->F[6 * b1 + 3 + i] += -f_G[i];
    }
}

static double hmean(double a, double b) { return (a == 0 && b == 0) ? 0 : 2 * a * b / (a + b); }

static void x_contact(const kin *k, const orc_hunt_crossley *s, expect *x)
{
    double C[3];
    station(k, s->body, s->center, C, NULL);
    const double h = s->plane_height, depth = s->radius - (C[2] - h);
    if (!(depth > 0)) {
        ++hit_contact_none;
        return;
    }
    const orc_hc_material *mp = &s->plane, *ms = &s->sphere;
    /* Simbody stores each material stiffness E as K = E^(2/3) */
    const double Kp = pow(mp->stiffness, 2.0 / 3.0), Ks = pow(ms->stiffness, 2.0 / 3.0);
    const double s1 = Ks / (Kp + Ks), s2 = 1 - s1;
    const double kk = Kp * s1, c = mp->dissipation * s1 + ms->dissipation * s2;
    const double P[3] = {C[0], C[1], h - s1 * depth};
    const double fH = (4.0 / 3.0) * kk * depth * sqrt(s->radius * kk * depth);
    x->pe += 0.4 * fH * depth;
    double r[3], wr[3], vS[3];
    sub3(P, pb(k, s->body), r);
    cross(wb(k, s->body), r, wr);
    for (int i = 0; i < 3; ++i) vS[i] = vb(k, s->body)[i] + wr[i];
    const double vn = -vS[2];
    const double vt[3] = {-vS[0], -vS[1], 0};
    const double f = fH * (1 + 1.5 * c * vn);
    if (!(f > 0)) { /* Simbody 3.7: nothing at all, friction included */
        ++hit_contact_pulling;
        return;
    }
    double F[3] = {0, 0, f};
    const double vs = norm3(vt);
    if (vs != 0) {
        const double us = hmean(mp->static_friction, ms->static_friction);
        const double ud = hmean(mp->dynamic_friction, ms->dynamic_friction);
        const double uv = hmean(mp->viscous_friction, ms->viscous_friction);
        const double vr = vs / s->transition_velocity;
        if (vr < 1) ++hit_contact_slow; else ++hit_contact_fast;
        const double ffr = f * (fmin(vr, 1.0) * (ud + 2 * (us - ud) / (1 + vr * vr)) + uv * vs);
        for (int i = 0; i < 3; ++i) F[i] += ffr * vt[i] / vs;
    }
    double Fg[3];
    for (int i = 0; i < 3; ++i) Fg[i] = -F[i];
    apply_at_point(k, x->F, s->body, P, F);
    apply_at_point(k, x->F, 0, P, Fg);
}

static void expected(const kin *k, const orc_force *fr, expect *x)
{
    switch (fr->kind) {
    case ORC_FORCE_UNIFORM_GRAVITY: x_gravity(k, &fr->gravity, x); break;
    case ORC_FORCE_TWO_POINT_SPRING: x_spring(k, &fr->spring, x); break;
    case ORC_FORCE_TWO_POINT_DAMPER: x_damper(k, &fr->damper, x); break;
    case ORC_FORCE_TWO_POINT_CONSTANT: x_two_point_force(k, &fr->two_point_force, x); break;
    case ORC_FORCE_MOBILITY_SPRING: x_mobility_spring(k, &fr->mobility_spring, x); break;
    case ORC_FORCE_MOBILITY_DAMPER: x_mobility_damper(k, &fr->mobility_damper, x); break;
    case ORC_FORCE_MOBILITY_CONSTANT: x_mobility_force(k, &fr->mobility_force, x); break;
    case ORC_FORCE_MOBILITY_STOP: x_stop(k, &fr->stop, x); break;
    case ORC_FORCE_CONSTANT_FORCE: x_constant_force(k, &fr->constant_force, x); break;
    case ORC_FORCE_CONSTANT_TORQUE: x_constant_torque(k, &fr->constant_torque, x); break;
    case ORC_FORCE_LINEAR_BUSHING: x_bushing(k, &fr->bushing, x); break;
    case ORC_FORCE_HUNT_CROSSLEY: x_contact(k, &fr->contact, x); break;
    }
}

/* ---- the element catalogue for one state ---- */

#define MAXF 40
typedef struct elem {
    orc_force f;
    const char *name;
    int conservative; /* power = -dPE/dt expected */
} elem;

static int n_elems;
static elem elems[MAXF];

static orc_force *add(const char *name, orc_force_kind kind, int conservative)
{
    elem *e = &elems[n_elems++];
    memset(e, 0, sizeof *e);
    e->f.kind = kind;
    e->name = name;
    e->conservative = conservative;
    return &e->f;
}

static void rvec(double *a, double lo, double hi)
{
    for (int i = 0; i < 3; ++i) a[i] = rnd(lo, hi);
}

static void rxf(double *X)
{
    xf_set(X, rnd(-1, 1), rnd(-0.8, 0.8), rnd(-1, 1), rnd(-0.3, 0.3), rnd(-0.3, 0.3), rnd(-0.3, 0.3));
}

static double qval(const kin *k, int body, int which) { return k->q[k->q_start[body] + which]; }
static double qdval(const kin *k, int body, int which) { return k->qdot[k->q_start[body] + which]; }

static void catalogue(const kin *k)
{
    orc_force *f;
    n_elems = 0;

    f = add("uniform gravity", ORC_FORCE_UNIFORM_GRAVITY, 1);
    f->gravity.g[0] = 0.3; f->gravity.g[1] = -9.81; f->gravity.g[2] = 1.2;
    f->gravity.zero_height = 0.7;

    f = add("two-point spring 1-3", ORC_FORCE_TWO_POINT_SPRING, 1);
    f->spring.body1 = 1; f->spring.body2 = 3;
    rvec(f->spring.station1, -0.3, 0.3); rvec(f->spring.station2, -0.3, 0.3);
    f->spring.k = 50; f->spring.x0 = 0.4;

    f = add("two-point spring Ground-5", ORC_FORCE_TWO_POINT_SPRING, 1);
    f->spring.body1 = 0; f->spring.body2 = 5;
    rvec(f->spring.station1, -1, 1); rvec(f->spring.station2, -0.3, 0.3);
    f->spring.k = 13; f->spring.x0 = 2.5; /* compressed */

    f = add("two-point damper 2-5", ORC_FORCE_TWO_POINT_DAMPER, 0);
    f->damper.body1 = 2; f->damper.body2 = 5;
    rvec(f->damper.station1, -0.3, 0.3); rvec(f->damper.station2, -0.3, 0.3);
    f->damper.c = 3;

    f = add("two-point constant force Ground-3", ORC_FORCE_TWO_POINT_CONSTANT, 0);
    f->two_point_force.body1 = 0; f->two_point_force.body2 = 3;
    rvec(f->two_point_force.station1, -1, 1); rvec(f->two_point_force.station2, -0.3, 0.3);
    f->two_point_force.f = 7;

    f = add("mobility spring pin", ORC_FORCE_MOBILITY_SPRING, 1);
    f->mobility_spring.body = 2; f->mobility_spring.which_q = 0;
    f->mobility_spring.k = 20; f->mobility_spring.q_zero = 0.3;

    f = add("mobility spring gimbal q1", ORC_FORCE_MOBILITY_SPRING, 1);
    f->mobility_spring.body = 3; f->mobility_spring.which_q = 1;
    f->mobility_spring.k = 4; f->mobility_spring.q_zero = -0.2;

    /* FREE: q index 5 used as u index 5 (a different coordinate in
       quaternion mode: q5 = p_y, u5 = v_z) -- documents the index rule. */
    f = add("mobility spring free q5 (u5)", ORC_FORCE_MOBILITY_SPRING, 0);
    f->mobility_spring.body = 1; f->mobility_spring.which_q = 5;
    f->mobility_spring.k = 6; f->mobility_spring.q_zero = 0.1;

    f = add("mobility damper gimbal u2", ORC_FORCE_MOBILITY_DAMPER, 0);
    f->mobility_damper.body = 3; f->mobility_damper.which_u = 2; f->mobility_damper.c = 1.5;

    f = add("mobility damper ball u1", ORC_FORCE_MOBILITY_DAMPER, 0);
    f->mobility_damper.body = 5; f->mobility_damper.which_u = 1; f->mobility_damper.c = 0.25;

    f = add("mobility constant force slider", ORC_FORCE_MOBILITY_CONSTANT, 0);
    f->mobility_force.body = 4; f->mobility_force.which_u = 0; f->mobility_force.f = -2.5;

    /* stops on the pin (body 2 q0), gimbal (body 3 q2) and slider (body 4 q0) */
    {
        const int sb[3] = {2, 3, 4}, sq[3] = {0, 2, 0};
        for (int j = 0; j < 3; ++j) {
            const double q = qval(k, sb[j], sq[j]), qd = qdval(k, sb[j], sq[j]);
            f = add("stop above q_high", ORC_FORCE_MOBILITY_STOP, 0);
            f->stop.body = sb[j]; f->stop.which_q = sq[j];
            f->stop.stiffness = 100; f->stop.dissipation = 0.3;
            f->stop.q_low = q - 1; f->stop.q_high = q - 0.15;

            f = add("stop below q_low", ORC_FORCE_MOBILITY_STOP, 0);
            f->stop.body = sb[j]; f->stop.which_q = sq[j];
            f->stop.stiffness = 80; f->stop.dissipation = 0.2;
            f->stop.q_low = q + 0.1; f->stop.q_high = HUGE_VAL;

            /* dissipation large enough that the clamp engages on whichever
               side: high side clamps when 1 + d qd < 0 (qd < 0) */
            f = add("stop clamped (no pull)", ORC_FORCE_MOBILITY_STOP, 0);
            f->stop.body = sb[j]; f->stop.which_q = sq[j];
            f->stop.stiffness = 60; f->stop.dissipation = 3 / fabs(qd);
            if (qd < 0) { f->stop.q_low = -HUGE_VAL; f->stop.q_high = q - 0.05; }
            else        { f->stop.q_low = q + 0.05; f->stop.q_high = HUGE_VAL; }

            f = add("stop in range", ORC_FORCE_MOBILITY_STOP, 0);
            f->stop.body = sb[j]; f->stop.which_q = sq[j];
            f->stop.stiffness = 70; f->stop.dissipation = 1;
            f->stop.q_low = q - 0.2; f->stop.q_high = q + 0.2;

            f = add("stop stiffness only (conservative)", ORC_FORCE_MOBILITY_STOP, 1);
            f->stop.body = sb[j]; f->stop.which_q = sq[j];
            f->stop.stiffness = 90; f->stop.dissipation = 0;
            f->stop.q_low = q - 0.3; f->stop.q_high = q - 0.1;
        }
    }

    f = add("constant force body 3", ORC_FORCE_CONSTANT_FORCE, 0);
    f->constant_force.body = 3;
    rvec(f->constant_force.station, -0.4, 0.4); rvec(f->constant_force.force, -5, 5);

    f = add("constant torque body 5", ORC_FORCE_CONSTANT_TORQUE, 0);
    f->constant_torque.body = 5; rvec(f->constant_torque.torque, -3, 3);

    f = add("linear bushing 1-3", ORC_FORCE_LINEAR_BUSHING, 0);
    f->bushing.body1 = 1; f->bushing.body2 = 3;
    rxf(f->bushing.X_B1F); rxf(f->bushing.X_B2M);
    for (int i = 0; i < 6; ++i) {
        f->bushing.stiffness[i] = rnd(5, 50);
        f->bushing.damping[i] = rnd(0.5, 3);
    }

    f = add("linear bushing Ground-5 stiffness only", ORC_FORCE_LINEAR_BUSHING, 1);
    f->bushing.body1 = 0; f->bushing.body2 = 5;
    rxf(f->bushing.X_B1F); rxf(f->bushing.X_B2M);
    for (int i = 0; i < 6; ++i) f->bushing.stiffness[i] = rnd(5, 50);

    /* contacts: sphere on body 1 (free), plane placed for a chosen depth */
    {
        double C[3], vC[3];
        const double center[3] = {0.05, -0.1, 0.08}, r = 0.12;
        station(k, 1, center, C, vC);
        const orc_hc_material m1 = {2e6, 0.4, 0.9, 0.6, 0.05};
        const orc_hc_material m2 = {5e5, 1.1, 0.7, 0.3, 0.2};
        const orc_hc_material m3 = {1e6, 0.0, 0.0, 0.0, 0.0};
        const orc_hc_material m4 = {1e6, 0.5, 0.0, 0.8, 0.0}; /* us only on one side -> 0 */

        f = add("Hunt-Crossley one material", ORC_FORCE_HUNT_CROSSLEY, 0);
        memcpy(f->contact.center, center, sizeof center);
        f->contact.body = 1; f->contact.radius = r;
        f->contact.plane_height = C[2] - r + 0.01; /* depth 0.01 */
        f->contact.sphere = m1; f->contact.plane = m1; f->contact.transition_velocity = 0.01;

        f = add("Hunt-Crossley two materials, slow slip", ORC_FORCE_HUNT_CROSSLEY, 0);
        memcpy(f->contact.center, center, sizeof center);
        f->contact.body = 1; f->contact.radius = r;
        f->contact.plane_height = C[2] - r + 0.004;
        f->contact.sphere = m1; f->contact.plane = m2;
        f->contact.transition_velocity = 10; /* vs/vt < 1 branch */

        f = add("Hunt-Crossley mixed zero friction", ORC_FORCE_HUNT_CROSSLEY, 0);
        memcpy(f->contact.center, center, sizeof center);
        f->contact.body = 1; f->contact.radius = r;
        f->contact.plane_height = C[2] - r + 0.02;
        f->contact.sphere = m4; f->contact.plane = m1; f->contact.transition_velocity = 0.05;

        f = add("Hunt-Crossley elastic, frictionless (conservative)", ORC_FORCE_HUNT_CROSSLEY, 1);
        memcpy(f->contact.center, center, sizeof center);
        f->contact.body = 1; f->contact.radius = r;
        f->contact.plane_height = C[2] - r + 0.008;
        f->contact.sphere = m3; f->contact.plane = m3; f->contact.transition_velocity = 0.01;

        f = add("Hunt-Crossley out of contact", ORC_FORCE_HUNT_CROSSLEY, 1);
        memcpy(f->contact.center, center, sizeof center);
        f->contact.body = 1; f->contact.radius = r;
        f->contact.plane_height = C[2] - r - 0.01;
        f->contact.sphere = m1; f->contact.plane = m2; f->contact.transition_velocity = 0.01;

        /* pulling: dissipation so large that 1 + 1.5 c vn < 0 (needs vn < 0,
           i.e. the sphere leaving the plane); else it just pushes harder */
        f = add("Hunt-Crossley f < 0 (nothing, friction too)", ORC_FORCE_HUNT_CROSSLEY, 0);
        memcpy(f->contact.center, center, sizeof center);
        f->contact.body = 1; f->contact.radius = r;
        f->contact.plane_height = C[2] - r + 0.01;
        f->contact.sphere = m1; f->contact.plane = m1;
        f->contact.sphere.dissipation = f->contact.plane.dissipation = 5 / (fabs(vC[2]) + 1e-3);
        f->contact.transition_velocity = 0.01;
    }
}

/* ---- comparison ---- */

typedef struct got {
    double F[6 * MAXB], f[MAXQ], pe, power;
} got;

static int run(const kin *k, const orc_force *f, int n, got *g)
{
    memset(g, 0, sizeof *g);
    return orc_eval_forces(&k->model, f, n, k->q, k->u, g->F, g->f, &g->pe, &g->power);
}

static int n_compared, n_nonzero;

/* |a - b| <= TOL * max(1, largest expected entry), one check per array */
static void compare(const char *what, const char *name, const double *x, const double *y, int n,
                    double scale)
{
    double err = 0;
    for (int i = 0; i < n; ++i) err = fmax(err, fabs(x[i] - y[i]));
    const double s = fmax(1.0, scale);
    if (!mbk_test_record(err <= TOL * s, __FILE__, __LINE__, what)) {
        fprintf(stderr, "    %s: max error %.3g (scale %.3g)\n", name, err, s);
        for (int i = 0; i < n; ++i)
            if (fabs(x[i] - y[i]) > TOL * s) fprintf(stderr, "    [%d] %.17g vs %.17g\n", i, x[i], y[i]);
    }
}

static double power_of(const kin *k, const got *g)
{
    double P = 0;
    for (int b = 1; b < k->nb; ++b)
        P += dot3(g->F + 6 * b, wb(k, b)) + dot3(g->F + 6 * b + 3, vb(k, b));
    for (int i = 0; i < k->nu; ++i) P += g->f[i] * k->u[i];
    return P;
}

/* PE at q + t qdot (quaternions renormalized by the oracle) */
static double pe_along(const kin *k, const orc_force *f, double t)
{
    double q[MAXQ], pe = 0;
    for (int i = 0; i < k->nq; ++i) q[i] = k->q[i] + t * k->qdot[i];
    CHECK(orc_eval_forces(&k->model, f, 1, q, k->u, NULL, NULL, &pe, NULL) == 0);
    return pe;
}

static void check_state(kin *k)
{
    catalogue(k);
    got all_sum;
    memset(&all_sum, 0, sizeof all_sum);
    orc_force list[MAXF];
    const int nF = 6 * k->nb;
    for (int j = 0; j < n_elems; ++j) {
        const orc_force *f = &elems[j].f;
        list[j] = *f;
        expect x;
        memset(&x, 0, sizeof x);
        expected(k, f, &x);
        got g;
        if (!CHECK(run(k, f, 1, &g) == 0)) {
            fprintf(stderr, "    %s: %s\n", elems[j].name, orc_forces_last_error());
            continue;
        }
        const double scale = fmax(max_abs(x.F, nF), max_abs(x.f, k->nu));
        compare("body forces match the documented formula", elems[j].name, g.F, x.F, nF, scale);
        compare("mobility forces match the documented formula", elems[j].name, g.f, x.f, k->nu, scale);
        compare("potential energy matches the documented formula", elems[j].name, &g.pe, &x.pe, 1,
                fabs(x.pe));
        const double P = power_of(k, &g);
        compare("power = sum F.V + f.u", elems[j].name, &g.power, &P, 1, fabs(P) + scale);
        ++n_compared;
        if (scale > 0) ++n_nonzero;
        if (elems[j].conservative) {
            const double h = 1e-6;
            const double dpe = (pe_along(k, f, h) - pe_along(k, f, -h)) / (2 * h);
            if (!mbk_test_record(fabs(g.power + dpe) <= 1e-6 * fmax(1.0, scale), __FILE__, __LINE__,
                                 "power = -dPE/dt for a conservative element"))
                fprintf(stderr, "    %s: power %.12g, -dPE/dt %.12g\n", elems[j].name, g.power, -dpe);
        }
        for (int i = 0; i < nF; ++i) all_sum.F[i] += g.F[i];
        for (int i = 0; i < k->nu; ++i) all_sum.f[i] += g.f[i];
        all_sum.pe += g.pe;
        all_sum.power += g.power;
    }
    got all;
    if (CHECK(run(k, list, n_elems, &all) == 0)) {
        const double scale = fmax(max_abs(all_sum.F, nF), max_abs(all_sum.f, k->nu));
        compare("all elements together = sum of each", "all", all.F, all_sum.F, nF, scale);
        compare("all elements together = sum of each", "all", all.f, all_sum.f, k->nu, scale);
        compare("all elements together = sum of each (PE)", "all", &all.pe, &all_sum.pe, 1, fabs(all.pe));
        compare("all elements together = sum of each (power)", "all", &all.power, &all_sum.power, 1,
                fabs(all.power) + scale);
    }
}

static void setup_kin(kin *k, int euler)
{
    memset(k, 0, sizeof *k);
    k->model.n_bodies = NB;
    k->model.bodies = g_bodies;
    k->model.use_euler_angles = euler;
    k->model.gravity[2] = -9.81; /* must be ignored by orc_eval_forces */
    k->nb = NB + 1;
    CHECK(orc_sizes(&k->model, &k->nq, &k->nu) == 0);
    CHECK(orc_layout(&k->model, k->q_start, k->body_nq, k->u_start, k->body_nu) == 0);
}

/* ---- a few hand-computed cases, independent of the kinematics oracle ---- */

static void check_simple_cases(void)
{
    /* one slider body along Ground x at q; spring from Ground origin to its
       origin: d = |q|, force on body = -k (d - x0) sign(q) along x */
    orc_body b;
    memset(&b, 0, sizeof b);
    b.parent = 0;
    b.type = ORC_SLIDER;
    rot_xyz(0, 0, 0, b.X_PF);
    rot_xyz(0, 0, 0, b.X_BM);
    b.mass = 2;
    b.inertia_about_com[0] = b.inertia_about_com[4] = b.inertia_about_com[8] = 1;
    orc_model m;
    memset(&m, 0, sizeof m);
    m.n_bodies = 1;
    m.bodies = &b;
    const double q = 1.5, u = -0.4;
    orc_force f;
    memset(&f, 0, sizeof f);
    f.kind = ORC_FORCE_TWO_POINT_SPRING;
    f.spring.body1 = 0;
    f.spring.body2 = 1;
    f.spring.k = 10;
    f.spring.x0 = 1;
    double F[12], fm[1], pe, P;
    CHECK(orc_eval_forces(&m, &f, 1, &q, &u, F, fm, &pe, &P) == 0);
    CHECK_NEAR(F[9], -5.0, 1e-14);  /* stretched by 0.5: pulled back toward Ground */
    CHECK_NEAR(F[3], 5.0, 1e-14);   /* reaction on Ground */
    CHECK_NEAR(pe, 1.25, 1e-14);
    CHECK_NEAR(P, -5.0 * u, 1e-14);

    f.kind = ORC_FORCE_TWO_POINT_CONSTANT;
    f.two_point_force.f = 3;
    CHECK(orc_eval_forces(&m, &f, 1, &q, &u, F, fm, &pe, &P) == 0);
    CHECK_NEAR(F[9], 3.0, 1e-14); /* positive f pushes apart */
    CHECK_NEAR(pe, 0.0, 1e-14);

    f.kind = ORC_FORCE_TWO_POINT_DAMPER;
    f.damper.c = 2;
    CHECK(orc_eval_forces(&m, &f, 1, &q, &u, F, fm, &pe, &P) == 0);
    CHECK_NEAR(F[9], -2.0 * u, 1e-14); /* closing at 0.4: pushed apart by 0.8 */

    memset(&f, 0, sizeof f);
    f.kind = ORC_FORCE_UNIFORM_GRAVITY;
    f.gravity.g[0] = -9.8;
    f.gravity.zero_height = 0.5;
    CHECK(orc_eval_forces(&m, &f, 1, &q, &u, F, fm, &pe, &P) == 0);
    CHECK_NEAR(pe, -2 * (-9.8 * 1.5 + 0.5), 1e-13); /* -m (g.p + h0), not + m|g|h0 */
    CHECK_NEAR(fm[0], 0.0, 1e-14);
    CHECK_NEAR(F[9], -19.6, 1e-14);

    /* stop: q = 1.5 above q_high = 1 with qdot = u = -0.4 and d = 0.5:
       f = min(0, -k x (1 + d qd)) = -100*0.5*0.8 = -40 */
    memset(&f, 0, sizeof f);
    f.kind = ORC_FORCE_MOBILITY_STOP;
    f.stop.body = 1;
    f.stop.stiffness = 100;
    f.stop.dissipation = 0.5;
    f.stop.q_low = -1;
    f.stop.q_high = 1;
    CHECK(orc_eval_forces(&m, &f, 1, &q, &u, F, fm, &pe, &P) == 0);
    CHECK_NEAR(fm[0], -40.0, 1e-13);
    CHECK_NEAR(pe, 12.5, 1e-13);

    /* Hunt-Crossley, one material, the closed form of the header: sphere of
       radius r at the slider's origin (1.5, 0, 0), plane z <= h with depth d,
       sliding at u = -0.4 along x (vr = 4 > 1), no dissipation:
       f = sqrt(2)/3 E sqrt(r) d^1.5, friction f (ud + 2 (us - ud)/(1 + 16))
       along +x, at P = (1.5, 0, h - d/2). */
    {
        const double E = 1e5, r = 0.1, d = 0.002, h = -r + d;
        memset(&f, 0, sizeof f);
        f.kind = ORC_FORCE_HUNT_CROSSLEY;
        f.contact.body = 1;
        f.contact.radius = r;
        f.contact.plane_height = h;
        const orc_hc_material mat = {E, 0, 0.5, 0.3, 0};
        f.contact.sphere = mat;
        f.contact.plane = mat;
        f.contact.transition_velocity = 0.1;
        CHECK(orc_eval_forces(&m, &f, 1, &q, &u, F, fm, &pe, &P) == 0);
        const double fn = sqrt(2.0) / 3 * E * sqrt(r) * pow(d, 1.5);
        const double ffr = fn * (0.3 + 2 * (0.5 - 0.3) / 17);
        CHECK_NEAR(F[11], fn, 1e-12);
        CHECK_NEAR(F[9], ffr, 1e-12);
        CHECK_NEAR(F[10], 0.0, 1e-12);
        CHECK_NEAR(F[7], (h - d / 2) * ffr, 1e-12);
        CHECK_NEAR(F[5], -fn, 1e-12); /* reaction on Ground */
        CHECK_NEAR(pe, 0.4 * fn * d, 1e-12);
    }
}

static void check_errors(void)
{
    orc_model m;
    memset(&m, 0, sizeof m);
    m.n_bodies = NB;
    m.bodies = g_bodies;
    double q[MAXQ], F[6 * MAXB], pe;
    int q_start[MAXB];
    CHECK(orc_layout(&m, q_start, NULL, NULL, NULL) == 0);
    memset(q, 0, sizeof q);
    q[q_start[1]] = 1; /* identity quaternions of the free and ball bodies */
    q[q_start[5]] = 1;

    orc_force f;
    memset(&f, 0, sizeof f);
    CHECK(orc_eval_forces(&m, &f, 1, q, NULL, F, NULL, &pe, NULL) == -1); /* kind 0 */
    CHECK(strstr(orc_forces_last_error(), "unknown kind") != NULL);

    f.kind = ORC_FORCE_TWO_POINT_SPRING;
    f.spring.body1 = 0;
    f.spring.body2 = NB + 1;
    CHECK(orc_eval_forces(&m, &f, 1, q, NULL, F, NULL, &pe, NULL) == -1);
    CHECK(strstr(orc_forces_last_error(), "body2") != NULL);

    memset(&f, 0, sizeof f);
    f.kind = ORC_FORCE_TWO_POINT_DAMPER;
    f.damper.body2 = 1;
    f.damper.c = -1;
    CHECK(orc_eval_forces(&m, &f, 1, q, NULL, F, NULL, &pe, NULL) == -1);

    memset(&f, 0, sizeof f);
    f.kind = ORC_FORCE_MOBILITY_SPRING;
    f.mobility_spring.body = 2; /* pin: only q 0 */
    f.mobility_spring.which_q = 1;
    CHECK(orc_eval_forces(&m, &f, 1, q, NULL, F, NULL, &pe, NULL) == -1);
    CHECK(strstr(orc_forces_last_error(), "coordinate index") != NULL);

    memset(&f, 0, sizeof f);
    f.kind = ORC_FORCE_MOBILITY_STOP;
    f.stop.body = 5; /* ball, quaternion: q index 3 exists but u index 3 does not */
    f.stop.which_q = 3;
    f.stop.stiffness = 1;
    CHECK(orc_eval_forces(&m, &f, 1, q, NULL, F, NULL, &pe, NULL) == -1);
    f.stop.which_q = 0;
    f.stop.q_low = 1;
    f.stop.q_high = 0;
    CHECK(orc_eval_forces(&m, &f, 1, q, NULL, F, NULL, &pe, NULL) == -1);

    memset(&f, 0, sizeof f);
    f.kind = ORC_FORCE_HUNT_CROSSLEY;
    f.contact.body = 1;
    f.contact.radius = 0.1;
    f.contact.sphere.stiffness = f.contact.plane.stiffness = 1e5;
    f.contact.transition_velocity = 0; /* must be > 0 */
    CHECK(orc_eval_forces(&m, &f, 1, q, NULL, F, NULL, &pe, NULL) == -1);
    CHECK(strstr(orc_forces_last_error(), "transition_velocity") != NULL);

    memset(&f, 0, sizeof f);
    f.kind = ORC_FORCE_LINEAR_BUSHING;
    f.bushing.body2 = 1;
    f.bushing.X_B1F[0] = f.bushing.X_B1F[4] = f.bushing.X_B1F[8] = 1;
    f.bushing.X_B2M[0] = f.bushing.X_B2M[4] = 1; /* singular rotation */
    CHECK(orc_eval_forces(&m, &f, 1, q, NULL, F, NULL, &pe, NULL) == -1);
    CHECK(strstr(orc_forces_last_error(), "X_B2M") != NULL);

    CHECK(orc_eval_forces(&m, NULL, 1, q, NULL, F, NULL, &pe, NULL) == -1);

    /* a good call after the refused ones: no forces at all */
    CHECK(orc_eval_forces(&m, NULL, 0, q, NULL, F, NULL, &pe, NULL) == 0);
    CHECK(strcmp(orc_forces_last_error(), "") == 0);
    CHECK(max_abs(F, 6 * (NB + 1)) == 0 && pe == 0);
}

int main(void)
{
    build_bodies();
    for (int euler = 0; euler <= 1; ++euler) {
        kin k;
        setup_kin(&k, euler);
        for (int st = 0; st < 3; ++st) {
            random_state(&k);
            if (!CHECK(load_kin(&k) == 0)) {
                fprintf(stderr, "    %s\n", orc_last_error());
                continue;
            }
            check_state(&k);
        }
    }
    check_simple_cases();
    check_errors();
    printf("%d element evaluations compared (%d with nonzero forces)\n", n_compared, n_nonzero);
    printf("stop branches: above %d, below %d, clamped %d, free %d; contact: none %d, "
           "pulling %d, slip below vt %d, above vt %d\n", hit_stop_high, hit_stop_low,
           hit_stop_clamped, hit_stop_free, hit_contact_none, hit_contact_pulling, hit_contact_slow,
           hit_contact_fast);
    CHECK(hit_stop_high > 0 && hit_stop_low > 0 && hit_stop_clamped > 0 && hit_stop_free > 0);
    CHECK(hit_contact_none > 0 && hit_contact_pulling > 0 && hit_contact_slow > 0 &&
          hit_contact_fast > 0);
    orc_forces_release();
    orc_release();
    return mbk_test_finish();
}
