/* Jacobians of the built-in force elements, for the analytic derivatives
 * (mbk/derivatives.h). An element that acts on bodies gives, per body b, its
 * force F0_b at Ground's origin and the derivatives of F0_b with respect to
 * a small displacement of each of its bodies c (a twist at Ground's origin)
 * at fixed body velocities, K[b][c], and with respect to body c's velocity,
 * D[b][c]; matter (mt_deriv_add_pair) maps them to mobility space, and the
 * forces themselves (held fixed in Ground while the bodies move) go to
 * matter's geometric term (mt_deriv_add_phi). Mobility elements write their
 * entries directly. Gravity is not here: it is a uniform field that matter's
 * sweep differentiates with the inertial terms.
 *
 * Conventions: a point p of body c moves by dp = eps + theta x p under the
 * displacement (theta, eps) and has velocity V.v + V.w x p, so at fixed V its
 * velocity changes by V.w x dp. A force f at p has F0 = (p x f, f). */
#include <math.h>
#include <string.h>

#include "mbk/status.h"
#include "forces_impl.h"
#include "../matter/matter_impl.h"
#include "../matter/mobilizer_util.h"

/* ---- 3 x 6 maps of a displacement or velocity (theta, eps) ---------------------- */

/* [a | l]: (theta, eps) -> a theta + l eps. */
typedef struct fj_36 {
    mbk_mat33 a, l;
} fj_36;

/* How a body-fixed point at p moves: dp = -p x theta + eps, i.e. [-[p x] | 1]. */
static fj_36 point_map(mbk_vec3 p)
{
    fj_36 P = {mbk_mat33_scale(mbk_mat33_skew(p), -1.0), mbk_mat33_identity()};
    return P;
}

static fj_36 map_mul(mbk_mat33 M, fj_36 P)
{
    fj_36 r = {mbk_mat33_mul(M, P.a), mbk_mat33_mul(M, P.l)};
    return r;
}

static fj_36 map_add(fj_36 A, fj_36 B)
{
    fj_36 r = {mbk_mat33_add(A.a, B.a), mbk_mat33_add(A.l, B.l)};
    return r;
}

/* K (6 x 6) from its top three rows (moment) and bottom three (force). */
static void put6(double K[6][6], fj_36 top, fj_36 bottom)
{
    for (int r = 0; r < 3; ++r)
        for (int c = 0; c < 3; ++c) {
            K[r][c] = top.a.m[r][c];
            K[r][c + 3] = top.l.m[r][c];
            K[r + 3][c] = bottom.a.m[r][c];
            K[r + 3][c + 3] = bottom.l.m[r][c];
        }
}

/* The derivative of F0 = (p x f, f) given df (a map) and, if the point moves with
   it, dp: d(p x f) = p x df - f x dp. */
static void force_at_point(double K[6][6], mbk_vec3 p, mbk_vec3 f, fj_36 df, const fj_36 *dp)
{
    fj_36 top = map_mul(mbk_mat33_skew(p), df);
    if (dp) top = map_add(top, map_mul(mbk_mat33_scale(mbk_mat33_skew(f), -1.0), *dp));
    put6(K, top, df);
}

static mbk_spatial_vec at_origin(mbk_vec3 p, mbk_vec3 f)
{
    return mbk_spatial_vec_make(mbk_vec3_cross(p, f), f);
}

/* World-origin velocity of a body. */
static mbk_spatial_vec body_velocity(const mbk_matter *m, const mbk_state *s, int b)
{
    const mt_pos *pos = mt_cache(m, s, C_POS);
    mbk_spatial_vec V = ((const mt_vel *)mt_cache(m, s, C_VEL))[b].V_GB;
    return mbk_spatial_vec_make(V.w, mbk_vec3_sub(V.v, mbk_vec3_cross(V.w, pos[b].X_GB.p)));
}

/* ---- point-force elements ---------------------------------------------------------- */

/* Forces f_s at the body-fixed points p_s (s = 0, 1) of bodies b_s with
   A[s][t] = d f_s / d p_t and B[s][t] = d f_s / d pdot_t. */
typedef struct fj_points {
    int n;
    int body[2];
    mbk_vec3 p[2], pdot[2], f[2];
    mbk_mat33 A[2][2], B[2][2];
    bool has_B;
} fj_points;

static void points_to_pair(const mbk_matter *m, const mbk_state *s, const fj_points *P, mt_pair_jac *J)
{
    J->n = P->n;
    J->has_K = true;
    J->has_D = P->has_B;
    for (int a = 0; a < P->n; ++a) {
        J->body[a] = P->body[a];
        J->F0[a] = at_origin(P->p[a], P->f[a]);
    }
    for (int a = 0; a < P->n; ++a)
        for (int t = 0; t < P->n; ++t) {
            fj_36 Pt = point_map(P->p[t]);
            fj_36 df = map_mul(P->A[a][t], Pt);
            if (P->has_B) {
                mbk_vec3 w = body_velocity(m, s, P->body[t]).w;
                df = map_add(df, map_mul(mbk_mat33_mul(P->B[a][t], mbk_mat33_skew(w)), Pt));
                put6(J->D[a][t], map_mul(mbk_mat33_mul(mbk_mat33_skew(P->p[a]), P->B[a][t]), Pt), map_mul(P->B[a][t], Pt));
            }
            force_at_point(J->K[a][t], P->p[a], P->f[a], df, a == t ? &Pt : NULL);
        }
}

/* Station location and velocity (world) on body b. */
static void station(const mbk_matter *m, const mbk_state *s, int b, mbk_vec3 st, mbk_vec3 *p, mbk_vec3 *v)
{
    const mt_pos *pos = mt_cache(m, s, C_POS);
    mbk_vec3 r = mbk_mat33_mul_vec(pos[b].X_GB.R, st);
    *p = mbk_vec3_add(pos[b].X_GB.p, r);
    *v = mbk_spatial_shift_motion(((const mt_vel *)mt_cache(m, s, C_VEL))[b].V_GB, r).v;
}

/* Two stations, the unit vector e from the first to the second, their distance L and
   the derivative of e with respect to the second minus the first, (1 - e e^T) / L. */
static double two_stations(const fe_elem *e, const mbk_matter *m, const mbk_state *s, fj_points *P, mbk_vec3 *dir,
                           mbk_mat33 *de)
{
    P->n = 2;
    for (int a = 0; a < 2; ++a) {
        P->body[a] = e->body[a];
        station(m, s, e->body[a], e->station[a], &P->p[a], &P->pdot[a]);
    }
    mbk_vec3 d = mbk_vec3_sub(P->p[1], P->p[0]);
    double L = mbk_vec3_norm(d);
    *dir = L > 0 ? mbk_vec3_scale(d, 1.0 / L) : mbk_vec3_zero();
    *de = L > 0 ? mbk_mat33_scale(mbk_mat33_sub(mbk_mat33_identity(), mbk_mat33_outer(*dir, *dir)), 1.0 / L)
                : mbk_mat33_zero();
    return L;
}

/* f_0 = t(...) e on the first station, -f_0 on the second, with d f_0 / d d = G
   (d = p1 - p0) and d f_0 / d ddot = Bd. */
static void opposite_pair(fj_points *P, mbk_vec3 f0, mbk_mat33 G, const mbk_mat33 *Bd)
{
    P->f[0] = f0;
    P->f[1] = mbk_vec3_neg(f0);
    mbk_mat33 nG = mbk_mat33_scale(G, -1.0);
    P->A[0][1] = G; P->A[0][0] = nG; P->A[1][1] = nG; P->A[1][0] = G;
    P->has_B = Bd != NULL;
    if (Bd) {
        mbk_mat33 nB = mbk_mat33_scale(*Bd, -1.0);
        P->B[0][1] = *Bd; P->B[0][0] = nB; P->B[1][1] = nB; P->B[1][0] = *Bd;
    }
}

/* tension k (L - x0) along e: d(t e)/dd = k e e^T + t (1 - e e^T) / L */
static void tp_spring_jac(const fe_elem *e, const double *p, const mbk_matter *m, const mbk_state *s, fj_points *P)
{
    mbk_vec3 dir;
    mbk_mat33 de;
    double L = two_stations(e, m, s, P, &dir, &de), t = p[0] * (L - p[1]);
    opposite_pair(P, mbk_vec3_scale(dir, t),
                  mbk_mat33_add(mbk_mat33_scale(mbk_mat33_outer(dir, dir), p[0]), mbk_mat33_scale(de, t)), NULL);
}

/* tension c rate, rate = e . (v1 - v0): d/dd = c (e (de vr)^T + rate de), d/dddot = c e e^T */
static void tp_damper_jac(const fe_elem *e, const double *p, const mbk_matter *m, const mbk_state *s, fj_points *P)
{
    mbk_vec3 dir;
    mbk_mat33 de;
    two_stations(e, m, s, P, &dir, &de);
    mbk_vec3 vr = mbk_vec3_sub(P->pdot[1], P->pdot[0]);
    double rate = mbk_vec3_dot(dir, vr);
    mbk_mat33 G = mbk_mat33_scale(mbk_mat33_add(mbk_mat33_outer(dir, mbk_mat33_mul_vec(de, vr)), mbk_mat33_scale(de, rate)), p[0]);
    mbk_mat33 Bd = mbk_mat33_scale(mbk_mat33_outer(dir, dir), p[0]);
    opposite_pair(P, mbk_vec3_scale(dir, p[0] * rate), G, &Bd);
}

/* tension -F: d/dd = -F de */
static void tp_constant_jac(const fe_elem *e, const double *p, const mbk_matter *m, const mbk_state *s, fj_points *P)
{
    mbk_vec3 dir;
    mbk_mat33 de;
    two_stations(e, m, s, P, &dir, &de);
    opposite_pair(P, mbk_vec3_scale(dir, -p[0]), mbk_mat33_scale(de, -p[0]), NULL);
}

/* a constant force (in G) at a station: only its point moves */
static void constant_force_jac(const fe_elem *e, const double *p, const mbk_matter *m, const mbk_state *s, fj_points *P)
{
    P->n = 1;
    P->body[0] = e->body[0];
    station(m, s, e->body[0], e->station[0], &P->p[0], &P->pdot[0]);
    P->f[0] = mbk_vec3_make(p[0], p[1], p[2]);
    P->A[0][0] = mbk_mat33_zero();
    P->has_B = false;
}

/* ---- Hunt-Crossley contact (contact.c gives the law) --------------------------------- */

/* The contact force f at P = (C_x, C_y, (C_z + h - r) / 2) and its derivatives. */
static bool contact_jac(const fe_elem *e, const double *p, const mbk_matter *m, const mbk_state *s, mt_pair_jac *J)
{
    const mt_pos *pos = mt_cache(m, s, C_POS);
    const int b = e->body[0];
    const mbk_vec3 C = mbk_transform_apply_point(pos[b].X_GB, e->station[0]);
    const double r = e->radius, x = r - (C.z - e->height);
    if (!(x > 0)) return false;
    const mbk_vec3 P = mbk_vec3_make(C.x, C.y, e->height - 0.5 * x);
    const mbk_spatial_vec V = body_velocity(m, s, b);
    const mbk_vec3 vS = mbk_vec3_add(V.v, mbk_vec3_cross(V.w, P));
    const double k = 0.5 * pow(p[0], 2.0 / 3.0), sq = sqrt(r * k * x);
    const double fH = 4.0 / 3.0 * k * x * sq, dfH = 2.0 * k * sq;
    const double vn = -vS.z, N = fH * (1.0 + 1.5 * p[1] * vn);
    if (N <= 0) return false;
    /* dN = dN/dx dx + dN/dvS dvS */
    const double dN_dx = dfH * (1.0 + 1.5 * p[1] * vn);
    const mbk_vec3 dN_dvS = mbk_vec3_make(0, 0, -1.5 * p[1] * fH);
    /* friction g2 = mu(vs) vS_xy / vs and its 2 x 2 Jacobian */
    double g[2] = {0, 0}, Jg[2][2] = {{0, 0}, {0, 0}};
    const double vs = hypot(vS.x, vS.y), us = p[2], ud = p[3], uv = p[4], vt = p[5];
    if (vs > 0) {
        double vr = vs / vt, t = 1.0 + vr * vr, lo = fmin(vr, 1.0);
        double mu = lo * (ud + 2.0 * (us - ud) / t) + uv * vs;
        double dmu = (vr < 1.0 ? 1.0 / vt : 0.0) * (ud + 2.0 * (us - ud) / t) +
                     lo * 2.0 * (us - ud) * (-2.0 * vr / (t * t)) / vt + uv;
        const double n2[2] = {vS.x / vs, vS.y / vs};
        for (int i = 0; i < 2; ++i) {
            g[i] = mu * n2[i];
            for (int j = 0; j < 2; ++j) Jg[i][j] = dmu * n2[i] * n2[j] + mu / vs * ((i == j) - n2[i] * n2[j]);
        }
    } else {
        Jg[0][0] = Jg[1][1] = (2.0 * us - ud) / vt + uv;
    }
    const mbk_vec3 f = mbk_vec3_make(-N * g[0], -N * g[1], N);
    /* df = Fx dx + FvS dvS (Fx a vector, FvS a 3 x 3) */
    const mbk_vec3 Fx = mbk_vec3_make(-g[0] * dN_dx, -g[1] * dN_dx, dN_dx);
    mbk_mat33 FvS;
    const double dn[3] = {dN_dvS.x, dN_dvS.y, dN_dvS.z};
    for (int c = 0; c < 3; ++c) {
        for (int i = 0; i < 2; ++i) FvS.m[i][c] = -g[i] * dn[c] - N * (c < 2 ? Jg[i][c] : 0.0);
        FvS.m[2][c] = dn[c];
    }
    /* maps: dC = [-[C x] | 1], dP = diag(1, 1, 1/2) dC, dx = -e_z . dC,
       dvS = V.w x dP (position), [-[P x] | 1] (velocity) */
    const fj_36 dC = point_map(C);
    const fj_36 dP = map_mul(mbk_mat33_diag(1, 1, 0.5), dC);
    fj_36 df = map_mul(mbk_mat33_scale(mbk_mat33_outer(Fx, mbk_vec3_make(0, 0, 1)), -1.0), dC);
    df = map_add(df, map_mul(mbk_mat33_mul(FvS, mbk_mat33_skew(V.w)), dP));
    const fj_36 dvS_dV = point_map(P);
    const fj_36 dfV = map_mul(FvS, dvS_dV);
    J->n = 1;
    J->body[0] = b;
    J->F0[0] = at_origin(P, f);
    J->has_K = J->has_D = true;
    force_at_point(J->K[0][0], P, f, df, &dP);
    put6(J->D[0][0], map_mul(mbk_mat33_skew(P), dfV), dfV);
    return true;
}

/* ---- linear bushing (bushing.c gives the law) ---------------------------------------- */

/* The bushing's state: frames F (on body 1) and M (on body 2) in Ground, its
   coordinates and rates, and the velocities. */
typedef struct fj_bushing {
    mbk_mat33 R;      /* R_GF */
    mbk_vec3 pM;      /* M's origin */
    double q[6], qd[6];
    mbk_mat33 W, Wi;  /* angle rates to w_FM and back */
    mbk_mat33 dW[3];
    mbk_spatial_vec Vrel; /* V2 - V1 at Ground's origin */
    double f[6];      /* -(k q + c qdot) */
    mbk_vec3 torque, force; /* on M in G: R W^-T f_rot, R f_trans */
} fj_bushing;

static void bushing_state(const fe_elem *e, const double *p, const mbk_matter *m, const mbk_state *s, fj_bushing *B)
{
    const mt_pos *pos = mt_cache(m, s, C_POS);
    const mbk_transform X_GF = mbk_transform_compose(pos[e->body[0]].X_GB, e->frame[0]);
    const mbk_transform X_GM = mbk_transform_compose(pos[e->body[1]].X_GB, e->frame[1]);
    B->R = X_GF.R;
    B->pM = X_GM.p;
    const mbk_mat33 R_FM = mbk_mat33_transpose_mul(X_GF.R, X_GM.R);
    put_vec3(B->q, mbk_mat33_to_body_xyz(R_FM));
    put_vec3(B->q + 3, mbk_mat33_transpose_mul_vec(X_GF.R, mbk_vec3_sub(X_GM.p, X_GF.p)));
    B->W = euler_W(B->q);
    B->Wi = mbk_mat33_inverse(B->W);
    euler_dW(B->q, B->dW);
    B->Vrel = mbk_spatial_vec_sub(body_velocity(m, s, e->body[1]), body_velocity(m, s, e->body[0]));
    put_vec3(B->qd, mbk_mat33_mul_vec(B->Wi, mbk_mat33_transpose_mul_vec(B->R, B->Vrel.w)));
    put_vec3(B->qd + 3, mbk_mat33_transpose_mul_vec(B->R, mbk_vec3_add(B->Vrel.v, mbk_vec3_cross(B->Vrel.w, B->pM))));
    for (int i = 0; i < 6; ++i) B->f[i] = -(p[i] * B->q[i] + p[6 + i] * B->qd[i]);
    B->torque = mbk_mat33_mul_vec(B->R, mbk_mat33_transpose_mul_vec(B->Wi, vec3_of(B->f)));
    B->force = mbk_mat33_mul_vec(B->R, vec3_of(B->f + 3));
}

/* How an input 3-vector x (a column each of its components) reaches F0_2, the force on
   M at Ground's origin, through the bushing's law: the derivatives with respect to x of
   the rotational and translational coordinates (qr, qt) and rates (qdr, qdt), of frame
   F's rotation (th, the identity or zero) and of M's displacement (pm); NULL: zero. */
typedef struct fj_bpath {
    const mbk_mat33 *qr, *qt, *qdr, *qdt, *pm;
    bool th;
} fj_bpath;

/* d(diag(a) X + diag(b) Y) for the 3 x 3 X, Y (either NULL), negated: the law's
   -(k q + c qdot) for three of the six coordinates. */
static mbk_mat33 law_change(const double *a, const mbk_mat33 *X, const double *b, const mbk_mat33 *Y)
{
    mbk_mat33 r = mbk_mat33_zero();
    for (int i = 0; i < 3; ++i)
        for (int j = 0; j < 3; ++j)
            r.m[i][j] = -((X ? a[i] * X->m[i][j] : 0.0) + (Y ? b[i] * Y->m[i][j] : 0.0));
    return r;
}

/* F0_2's change (moment rows in top, force rows in bottom) along an input's path:
   f = -(k q + c qdot); the torque on M is R W^-T f_r, whose change through W's is
   -R W^-T dW^T W^-T f_r = -R W^-T Yq dqr (Yq: the columns dW_k^T W^-T f_r); frame F
   turning by th turns the torque and force with it; the moment about the origin adds
   dpM x force + pM x dforce. */
static void bushing_path(const fj_bushing *B, const double *p, const mbk_mat33 *Yq, const fj_bpath *x,
                         mbk_mat33 *top, mbk_mat33 *bottom)
{
    mbk_mat33 fr = law_change(p, x->qr, p + 6, x->qdr), ft = law_change(p + 3, x->qt, p + 9, x->qdt);
    if (x->qr) fr = mbk_mat33_sub(fr, mbk_mat33_mul(*Yq, *x->qr));
    mbk_mat33 dforce = mbk_mat33_mul(B->R, ft);
    mbk_mat33 dtorque = mbk_mat33_mul(B->R, mbk_mat33_transpose_mul(B->Wi, fr));
    if (x->th) {
        dforce = mbk_mat33_sub(dforce, mbk_mat33_skew(B->force));
        dtorque = mbk_mat33_sub(dtorque, mbk_mat33_skew(B->torque));
    }
    *top = mbk_mat33_add(dtorque, mbk_mat33_mul(mbk_mat33_skew(B->pM), dforce));
    if (x->pm) *top = mbk_mat33_sub(*top, mbk_mat33_mul(mbk_mat33_skew(B->force), *x->pm));
    *bottom = dforce;
}

/* Columns c0 .. c0 + 2 of a 6 x 6 from a path's top and bottom rows, and negated into N. */
static void put_cols(double K[6][6], double N[6][6], int c0, const mbk_mat33 *top, const mbk_mat33 *bottom)
{
    for (int r = 0; r < 3; ++r)
        for (int c = 0; c < 3; ++c) {
            K[r][c0 + c] = top->m[r][c];
            K[r + 3][c0 + c] = bottom->m[r][c];
            N[r][c0 + c] = -top->m[r][c];
            N[r + 3][c0 + c] = -bottom->m[r][c];
        }
}

/* dF0_2 / d(displacement of body 1), of body 2 and of Vrel = V2 - V1, as 3 x 3 maps. With
   dw = d2.w - d1.w, dv = d2.v - d1.v (the frames' relative turn and shift at Ground's
   origin), th1 = d1.w and dpM = d2.v + d2.w x pM:
     dqr = A dw (A = W^-1 R^T),   dqt = R^T (dv - [pM x] dw),
     dqdr = -W^-1 Zq dqr + A (dV.w + wr x th1)      (Zq: the columns dW_k qd_r),
     dqdt = R^T (dV.v - [pM x] dV.w + wr x dpM + vM x th1)  (vM = vr + wr x pM). */
static void bushing_jac(const fe_elem *e, const double *p, const mbk_matter *m, const mbk_state *s, mt_pair_jac *J)
{
    fj_bushing B;
    bushing_state(e, p, m, s, &B);
    J->n = 2;
    J->body[0] = e->body[0];
    J->body[1] = e->body[1];
    J->F0[1] = mbk_spatial_vec_make(mbk_vec3_add(B.torque, mbk_vec3_cross(B.pM, B.force)), B.force);
    J->F0[0] = mbk_spatial_vec_scale(J->F0[1], -1.0);
    J->has_K = J->has_D = true;
    J->opposite = true; /* both forces act at M's origin */
    const mbk_mat33 RT = mbk_mat33_transpose(B.R), A = mbk_mat33_mul(B.Wi, RT);
    const mbk_vec3 wr = B.Vrel.w, vM = mbk_vec3_add(B.Vrel.v, mbk_vec3_cross(wr, B.pM));
    const mbk_vec3 qdr = vec3_of(B.qd), tF = mbk_mat33_transpose_mul_vec(B.Wi, vec3_of(B.f));
    mbk_mat33 Zq = mbk_mat33_zero(), Yq = mbk_mat33_zero();
    for (int k = 0; k < 2; ++k) { /* W depends on the first two angles alone */
        const mbk_vec3 z = mbk_mat33_mul_vec(B.dW[k], qdr), y = mbk_mat33_transpose_mul_vec(B.dW[k], tF);
        Zq.m[0][k] = z.x, Zq.m[1][k] = z.y, Zq.m[2][k] = z.z;
        Yq.m[0][k] = y.x, Yq.m[1][k] = y.y, Yq.m[2][k] = y.z;
    }
    const mbk_mat33 P = mbk_mat33_skew(B.pM), nP = mbk_mat33_scale(P, -1.0), I = mbk_mat33_identity();
    const mbk_mat33 RTwr = mbk_mat33_mul(RT, mbk_mat33_skew(wr)), RTP = mbk_mat33_mul(RT, P);
    const mbk_mat33 Pw = mbk_mat33_scale(mbk_mat33_mul(B.Wi, mbk_mat33_mul(Zq, A)), -1.0); /* d qdr / d dw */
    /* body 2 (d2.w, d2.v), body 1 (d1.w, d1.v), Vrel (dV.w, dV.v) */
    const mbk_mat33 qt2w = mbk_mat33_scale(RTP, -1.0), qdt2w = mbk_mat33_mul(RTwr, nP);
    const mbk_mat33 nA = mbk_mat33_scale(A, -1.0), nPw = mbk_mat33_scale(Pw, -1.0);
    const mbk_mat33 qdr1w = mbk_mat33_add(nPw, mbk_mat33_mul(A, mbk_mat33_skew(wr)));
    const mbk_mat33 qdt1w = mbk_mat33_mul(RT, mbk_mat33_skew(vM)), nRT = mbk_mat33_scale(RT, -1.0);
    const fj_bpath path[6] = {
        {&nA, &RTP, &qdr1w, &qdt1w, NULL, true},  /* d1.w */
        {NULL, &nRT, NULL, NULL, NULL, false},    /* d1.v */
        {&A, &qt2w, &Pw, &qdt2w, &nP, false},     /* d2.w */
        {NULL, &RT, NULL, &RTwr, &I, false},      /* d2.v */
        {NULL, NULL, &A, &qt2w, NULL, false},     /* dV.w */
        {NULL, NULL, NULL, &RT, NULL, false},     /* dV.v */
    };
    for (int k = 0; k < 6; ++k) {
        mbk_mat33 top, bottom;
        bushing_path(&B, p, &Yq, &path[k], &top, &bottom);
        /* body 0's rows are body 1's negated; d/dV1 = -d/dV2 */
        if (k < 2) put_cols(J->K[1][0], J->K[0][0], 3 * k, &top, &bottom);
        else if (k < 4) put_cols(J->K[1][1], J->K[0][1], 3 * (k - 2), &top, &bottom);
        else {
            put_cols(J->D[1][1], J->D[1][0], 3 * (k - 4), &top, &bottom);
            put_cols(J->D[0][0], J->D[0][1], 3 * (k - 4), &top, &bottom);
        }
    }
}

/* ---- mobility elements ---------------------------------------------------------------- */

static void mobility_jac(const fe_elem *e, const double *p, const mbk_matter *m, const mbk_state *s, double scale,
                         double *df_dq, int ldq, double *df_du, int ldu)
{
    const int iu = m->bodies[e->body[0]].u0 + e->coord;
    const int iq = qlayout(m, s)[2 * e->body[0]] + e->coord;
    const double q = mbk_state_get_subsystem_q(s, m->sub)[iq], u = mbk_state_get_subsystem_u(s, m->sub)[iu];
    if (e->kind == &fe_mob_spring) {
        if (df_dq) df_dq[(size_t)iu * (size_t)ldq + (size_t)iq] -= scale * p[0];
    } else if (e->kind == &fe_mob_damper) {
        if (df_du) df_du[(size_t)iu * (size_t)ldu + (size_t)iu] -= scale * p[0];
    } else if (e->kind == &fe_mob_stop) {
        /* penetration x = side (q - limit), xdot = side u, push = k x (1 + d xdot) > 0, tau = -side push */
        double side = q > p[3] ? 1.0 : q < p[2] ? -1.0 : 0.0;
        if (side == 0.0) return;
        double x = side * (q - (side > 0 ? p[3] : p[2])), xdot = side * u;
        if (!(p[0] * x * (1.0 + p[1] * xdot) > 0)) return;
        if (df_dq) df_dq[(size_t)iu * (size_t)ldq + (size_t)iq] -= scale * p[0] * (1.0 + p[1] * xdot);
        if (df_du) df_du[(size_t)iu * (size_t)ldu + (size_t)iu] -= scale * p[0] * x * p[1];
    }
}

/* ---- the subsystem's elements ----------------------------------------------------------- */

static const int *enabled(const mbk_forces *f, const mbk_state *s)
{
    return mbk_state_get_discrete(s, f->sub, f->enabled_var);
}

bool fe_element_is_numeric(const mbk_forces *f, int i)
{
    const fe_elem *e = &f->elems[i];
    return !e->kind && e->ops.calc_force && !e->ops.calc_jacobian;
}

mbk_vec3 fe_gravity_sum(const mbk_forces *f, const mbk_state *s)
{
    mbk_vec3 g = mbk_vec3_zero();
    const int *on = enabled(f, s);
    for (int i = 0; i < f->n; ++i)
        if (on[i] && f->elems[i].kind == &fe_gravity) g = mbk_vec3_add(g, vec3_of(fe_params(f, &f->elems[i], s)));
    return g;
}

int fe_count_numeric(const mbk_forces *f, const mbk_state *s, int *first)
{
    const int *on = enabled(f, s);
    int n = 0;
    for (int i = 0; i < f->n; ++i)
        if (on[i] && fe_element_is_numeric(f, i)) {
            if (n == 0 && first) *first = i;
            ++n;
        }
    return n;
}

/* One element's forces and Jacobians as a pair (false: it has none of those). */
static bool element_pair(const fe_elem *e, const double *p, const mbk_matter *m, const mbk_state *s, mt_pair_jac *J)
{
    fj_points P;
    J->opposite = false;
    if (e->kind == &fe_tp_spring) tp_spring_jac(e, p, m, s, &P);
    else if (e->kind == &fe_tp_damper) tp_damper_jac(e, p, m, s, &P);
    else if (e->kind == &fe_tp_constant) tp_constant_jac(e, p, m, s, &P);
    else if (e->kind == &fe_constant_force) constant_force_jac(e, p, m, s, &P);
    else if (e->kind == &fe_hunt_crossley) return contact_jac(e, p, m, s, J);
    else if (e->kind == &fe_bushing) {
        bushing_jac(e, p, m, s, J);
        return true;
    } else if (e->kind == &fe_constant_torque) {
        J->n = 1;
        J->body[0] = e->body[0];
        J->F0[0] = mbk_spatial_vec_make(vec3_of(p), mbk_vec3_zero());
        J->has_K = J->has_D = false;
        return true;
    } else {
        return false;
    }
    points_to_pair(m, s, &P, J);
    return true;
}

int fe_add_jacobians(const mbk_forces *f, const mbk_state *s, bool jacobians, double *df_dq, int ldq, double *df_du,
                     int ldu)
{
    const mbk_matter *m = f->matter;
    const int *on = enabled(f, s);
    for (int i = 0; i < f->n; ++i) {
        const fe_elem *e = &f->elems[i];
        if (!on[i]) continue;
        if (!e->kind) {
            if (!jacobians || !e->ops.calc_jacobian) continue;
            mbk_force_ctx c = {f, i};
            mbk_clear_error();
            int rc = e->ops.calc_jacobian(e->impl, &c, s, df_dq, ldq, df_du, ldu);
            if (rc != 0) {
                const char *why = mbk_last_error();
                return mbk_set_error(rc > 0 ? MBK_ERETRY : (rc == mbk_last_status() ? rc : MBK_EUSER),
                                     "force element %d (%s): calc_jacobian failed (returned %d, %s)%s%s", i,
                                     e->ops.name ? e->ops.name : "custom", rc, rc > 0 ? "recoverable" : "fatal",
                                     why[0] ? ": " : "", why);
            }
            continue;
        }
        if (e->kind == &fe_gravity) continue;
        const double *p = fe_params(f, e, s);
        if (e->kind == &fe_mob_spring || e->kind == &fe_mob_damper || e->kind == &fe_mob_stop ||
            e->kind == &fe_mob_constant) {
            if (jacobians) mobility_jac(e, p, m, s, 1.0, df_dq, ldq, df_du, ldu);
            continue;
        }
        mt_pair_jac J;
        if (!element_pair(e, p, m, s, &J)) continue;
        for (int a = 0; a < J.n; ++a) mt_deriv_add_phi(m, s, J.body[a], J.F0[a]);
        if (jacobians) mt_deriv_add_pair(m, s, &J, 1.0, df_dq, ldq, df_du, ldu);
    }
    return MBK_OK;
}
