/* The matter subsystem's O(n) dynamics: articulated-body inertias (once per
 * Position realization), the Dynamics stage (zeroed force accumulators) and
 * the articulated-body sweeps that give udot at Acceleration. Conventions are
 * in matter.c. */
#include <math.h>
#include <string.h>

#include "mbk/status.h"

#include "matter_impl.h"

/* Invert a small symmetric positive-definite matrix in place (Gauss-Jordan);
   0 if a pivot is not above tol (singular to round-off). */
static int small_inverse(double *A, int n, double tol)
{
    double inv[MBK_MOBILIZER_MAX_U * MBK_MOBILIZER_MAX_U] = {0};
    for (int i = 0; i < n; ++i) inv[i * n + i] = 1.0;
    for (int col = 0; col < n; ++col) {
        int piv = col;
        for (int r = col + 1; r < n; ++r)
            if (fabs(A[r * n + col]) > fabs(A[piv * n + col])) piv = r;
        if (!(fabs(A[piv * n + col]) > tol)) return 0;
        for (int j = 0; j < n; ++j) {
            double t = A[col * n + j]; A[col * n + j] = A[piv * n + j]; A[piv * n + j] = t;
            t = inv[col * n + j]; inv[col * n + j] = inv[piv * n + j]; inv[piv * n + j] = t;
        }
        double d = 1.0 / A[col * n + col]; /* one division per pivot, not 2n */
        for (int j = 0; j < n; ++j) { A[col * n + j] *= d; inv[col * n + j] *= d; }
        for (int r = 0; r < n; ++r) {
            if (r == col) continue;
            double f = A[r * n + col];
            for (int j = 0; j < n; ++j) { A[r * n + j] -= f * A[col * n + j]; inv[r * n + j] -= f * inv[col * n + j]; }
        }
    }
    memcpy(A, inv, (size_t)(n * n) * sizeof(double));
    return 1;
}

/* Size of the terms that form H^T P H: max_j |H_j|^2 times the trace of P
   bounds every |H_i^T P H_j| when P is positive semidefinite. A pivot below
   1e-13 of it is round-off: the body has no inertia along that mobility.
   (Sums of squares and a trace: no absolute values or maxima to chain.) */
static inline double pivot_tolerance(const mt_inertia *P, const mbk_spatial_vec *Hb, int nu)
{
    double h = 0.0;
    for (int j = 0; j < nu; ++j) {
        double hj = mbk_vec3_norm2(Hb[j].w) + mbk_vec3_norm2(Hb[j].v);
        h = hj > h ? hj : h;
    }
    return 1e-13 * h * (P->A.xx + P->A.yy + P->A.zz + P->D.xx + P->D.yy + P->D.zz);
}

/* One body's D^-1, G and P+ = P - P H D^-1 H^T P for any number of u. */
static int abi_general(const mt_inertia *P, const mbk_spatial_vec *Hb, int nu, double *Dinv,
                       mbk_spatial_vec *G, mt_inertia *Pplus)
{
    mbk_spatial_vec PH[MBK_MOBILIZER_MAX_U];
    for (int j = 0; j < nu; ++j) PH[j] = mt_inertia_mul(P, &Hb[j]);
    for (int r = 0; r < nu; ++r)
        for (int j = 0; j < nu; ++j) Dinv[r * nu + j] = mbk_spatial_vec_dot(Hb[r], PH[j]);
    if (nu && !small_inverse(Dinv, nu, pivot_tolerance(P, Hb, nu))) return -1;
    *Pplus = *P;
    for (int j = 0; j < nu; ++j) {
        mbk_spatial_vec g = mbk_spatial_vec_zero();
        for (int r = 0; r < nu; ++r) g = mbk_spatial_vec_add(g, mbk_spatial_vec_scale(PH[r], Dinv[r * nu + j]));
        G[j] = g;
        /* one term g_j PH_j^T is not symmetric but their sum is: the upper
           triangle accumulated term by term is all the symmetric storage needs */
        mt_inertia_downdate(Pplus, Pplus, &G[j], &PH[j]);
    }
    return 0;
}

/* The same for one u, the common case: D is a scalar. */
static int abi_one_dof(const mt_inertia *P, const mbk_spatial_vec *h, double *Dinv,
                       mbk_spatial_vec *G, mt_inertia *Pplus)
{
    mbk_spatial_vec PH = mt_inertia_mul(P, h);
    double D = mbk_spatial_vec_dot(*h, PH);
    if (!(D > pivot_tolerance(P, h, 1))) return -1;
    Dinv[0] = 1.0 / D;
    *G = mbk_spatial_vec_scale(PH, Dinv[0]);
    mt_inertia_downdate(Pplus, P, G, &PH);
    return 0;
}

/* The same for a spin, H = (a, 0): P H = (A a, B^T a) and D = a . A a. */
static int abi_spin(const mt_inertia *P, const mbk_spatial_vec *h, double *Dinv,
                    mbk_spatial_vec *G, mt_inertia *Pplus)
{
    mbk_vec3 a = h->w;
    const double(*B)[3] = P->B.m;
    mbk_spatial_vec PH;
    PH.w = mt_sym3_mul(&P->A, a);
    PH.v = mbk_vec3_make(B[0][0] * a.x + B[1][0] * a.y + B[2][0] * a.z,
                         B[0][1] * a.x + B[1][1] * a.y + B[2][1] * a.z,
                         B[0][2] * a.x + B[1][2] * a.y + B[2][2] * a.z);
    double D = mbk_vec3_dot(a, PH.w);
    if (!(D > pivot_tolerance(P, h, 1))) return -1;
    Dinv[0] = 1.0 / D;
    *G = mbk_spatial_vec_scale(PH, Dinv[0]);
    mt_inertia_downdate(Pplus, P, G, &PH);
    return 0;
}

/* Whether every entry of an articulated inertia is finite. */
static bool sym3_finite(const mt_sym3 *a)
{
    return isfinite(a->xx) && isfinite(a->yy) && isfinite(a->zz) && isfinite(a->xy) && isfinite(a->xz) &&
           isfinite(a->yz);
}

static bool inertia_finite(const mt_inertia *P)
{
    return sym3_finite(&P->A) && sym3_finite(&P->D) && mbk_mat33_is_finite(P->B);
}

/* Articulated-body inertias, tip to base; computed once per Position realization. */
int mt_realize_abi(const mbk_matter *m, const mbk_state *s)
{
    if (mbk_state_is_cache_realized(s, m->sub, m->cache[C_ABI])) return MBK_OK;
    const mt_pos *pos = mt_cache(m, s, C_POS);
    const mbk_spatial_vec *H = mt_cache(m, s, C_H);
    mt_abi abi = mt_abi_of(m, s);
    const double *pm = mt_pos_mass(m, pos);
    const bool own_mass = pm[0] != 0.0;
    for (int i = 1; i < m->nb; ++i)
        mt_inertia_set_rigid(&abi.P[i], &pos[i].I_G, own_mass ? pm[i] : m->nodes[i].mass, pos[i].c_G);
    for (int i = m->nb - 1; i >= 1; --i) {
        const mt_node *b = &m->nodes[i];
        mt_inertia Pplus;
        double *Dinv = abi.Dinv + b->d0;
        mbk_spatial_vec *G = abi.G + b->u0;
        int rc = b->spin      ? abi_spin(&abi.P[i], &H[b->u0], Dinv, G, &Pplus)
                 : b->nu == 1 ? abi_one_dof(&abi.P[i], &H[b->u0], Dinv, G, &Pplus)
                              : abi_general(&abi.P[i], H + b->u0, b->nu, Dinv, G, &Pplus);
        if (rc < 0 && !inertia_finite(&abi.P[i])) /* not a singularity: the numbers overflowed */
            return mbk_set_error(MBK_ENOTFINITE, "body %d: its articulated inertia overflowed (is not finite): "
                                 "the masses, inertias or distances (q, frame offsets) of the bodies it carries "
                                 "are too large for double precision; keep mass and inertia below %g "
                                 "(MBK_MASS_PROPS_MAX) and distances moderate, e.g. with larger units", i,
                                 MBK_MASS_PROPS_MAX);
        if (rc < 0)
            return mbk_set_error(MBK_ESINGULAR, "body %d: articulated inertia is singular along its "
                                 "mobilities; give massless bodies a massive child or add mass", i);
        for (int j = 0; j < b->nu; ++j) G[j] = mbk_spatial_shift_force(G[j], mbk_vec3_neg(pos[i].r_PB));
        if (b->parent == 0) continue; /* Ground's articulated inertia is never used */
        mt_inertia_add_shifted(&abi.P[b->parent], &Pplus, pos[i].r_PB);
    }
    mbk_state_mark_cache_realized(s, m->sub, m->cache[C_ABI]);
    return MBK_OK;
}

/* Forces accumulate during Dynamics: matter (first) zeroes them. The articulated-body
   inertias are not computed here: they are a lazy cache entry, paid by Acceleration,
   M^-1 v and whoever else needs them, so that inverse dynamics (which needs only the
   forces) does not pay for them (as in Simbody). */
int mt_realize_dynamics(void *impl, const mbk_subsystem_ctx *c, mbk_state *s)
{
    (void)c;
    const mbk_matter *m = impl;
    memset(mt_cache(m, s, C_FORCES), 0, forces_bytes(m));
    return 0;
}

/* The articulated-body sweeps: udot from mobility forces tau, body forces F
   and (when with_velocity) the velocity terms. A and z are scratch arrays.
   G is stored shifted to the parent's origin, so G^T X A_P needs no shift of
   A_P first; and along unbranched runs (parent = previous body) the value
   passed between bodies stays in registers. Both shorten the dependency chain
   from body to body, which is what bounds these sweeps on long chains. */
void mt_aba_solve(const mbk_matter *m, const mbk_state *s, const double *tau,
                      const mbk_spatial_vec *F, bool with_velocity, mbk_spatial_vec *A,
                      mbk_spatial_vec *z, double *udot)
{
    const mt_pos *pos = mt_cache(m, s, C_POS);
    const mt_vel *vel = with_velocity ? mt_cache(m, s, C_VEL) : NULL;
    const mbk_spatial_vec *H = mt_cache(m, s, C_H);
    const mt_abi abi = mt_abi_of(m, s);
    /* only bodies fed through memory need a zero start; along runs z travels in registers */
    for (int k = 0; k < m->nfed; ++k) z[m->fed[k]] = mbk_spatial_vec_zero();
    /* tip to base: articulated bias forces; udot holds eps = tau - H^T z meanwhile */
    mbk_spatial_vec carry = mbk_spatial_vec_zero(); /* z passed to body i - 1 */
    for (int i = m->nb - 1; i >= 1; --i) {
        const mt_node *b = &m->nodes[i];
        const mbk_spatial_vec *Hb = H + b->u0, *Gb = abi.G + b->u0;
        mbk_spatial_vec zi = b->fed ? mbk_spatial_vec_add(z[i], carry) : carry;
        if (vel) zi = mbk_spatial_vec_add(zi, mbk_spatial_vec_add(mt_inertia_mul(&abi.P[i], &vel[i].a_c), vel[i].b));
        if (F) zi = mbk_spatial_vec_sub(zi, F[i]);
        mbk_spatial_vec zp = mbk_spatial_shift_force(zi, mbk_vec3_neg(pos[i].r_PB));
        if (b->spin) { /* H = (a, 0): H^T z is a . z_w */
            double eps = (tau ? tau[b->u0] : 0.0) - mbk_vec3_dot(Hb[0].w, zi.w);
            udot[b->u0] = eps;
            zp = mbk_spatial_vec_add(zp, mbk_spatial_vec_scale(Gb[0], eps));
        } else for (int j = 0; j < b->nu; ++j) { /* H^T G = 1: each eps from the same zi */
            double eps = (tau ? tau[b->u0 + j] : 0.0) - mbk_spatial_vec_dot(Hb[j], zi);
            udot[b->u0 + j] = eps;
            zp = mbk_spatial_vec_add(zp, mbk_spatial_vec_scale(Gb[j], eps));
        }
        if (b->parent == i - 1) {
            carry = zp;
        } else {
            if (b->parent > 0) z[b->parent] = mbk_spatial_vec_add(z[b->parent], zp); /* Ground's is unused */
            carry = mbk_spatial_vec_zero();
        }
    }
    /* base to tip: accelerations */
    A[0] = mbk_spatial_vec_zero();
    mbk_spatial_vec Aprev = A[0]; /* A of body i - 1 */
    for (int i = 1; i < m->nb; ++i) {
        const mt_node *b = &m->nodes[i];
        const mbk_spatial_vec *Hb = H + b->u0, *Gb = abi.G + b->u0;
        const double *Dinv = abi.Dinv + b->d0;
        double *ud = udot + b->u0;
        const mbk_spatial_vec A_P = b->parent == i - 1 ? Aprev : A[b->parent];
        mbk_spatial_vec Ai = mbk_spatial_shift_motion(A_P, pos[i].r_PB);
        if (vel) Ai = mbk_spatial_vec_add(Ai, vel[i].a_c);
        if (b->nu == 1) {
            ud[0] = Dinv[0] * ud[0] - mbk_spatial_vec_dot(Gb[0], A_P);
            if (b->spin) Ai.w = mbk_vec3_add(Ai.w, mbk_vec3_scale(Hb[0].w, ud[0]));
            else Ai = mbk_spatial_vec_add(Ai, mbk_spatial_vec_scale(Hb[0], ud[0]));
        } else {
            double e[MBK_MOBILIZER_MAX_U];
            for (int j = 0; j < b->nu; ++j) e[j] = ud[j];
            for (int r = 0; r < b->nu; ++r) {
                double x = -mbk_spatial_vec_dot(Gb[r], A_P);
                for (int j = 0; j < b->nu; ++j) x += Dinv[r * b->nu + j] * e[j];
                ud[r] = x;
                Ai = mbk_spatial_vec_add(Ai, mbk_spatial_vec_scale(Hb[r], x));
            }
        }
        A[i] = Aprev = Ai;
    }
}

/* udot[k] is NaN or infinite although the forces were finite (they are checked at
   Dynamics): say where, and what usually causes it. */
static int nonfinite_udot(const mbk_matter *m, const mbk_state *s, const double *udot, int k)
{
    int b = 1;
    while (b + 1 < m->nb && m->bodies[b + 1].u0 <= k) ++b;
    return mbk_set_error(MBK_ENOTFINITE, "matter: udot[%d] (body %d, mobility %d) is %g at t = %g; the "
                         "applied forces are finite, so look for a near-singular mass matrix (tiny masses or "
                         "inertias on a moving body), extreme q or u, or a custom mobilizer or constraint "
                         "producing NaN", k, b, k - m->bodies[b].u0, udot[k], mbk_state_get_time(s));
}

int mt_realize_acceleration(void *impl, const mbk_subsystem_ctx *c, mbk_state *s)
{
    (void)c;
    const mbk_matter *m = impl;
    mbk_spatial_vec *F = mt_cache(m, s, C_FORCES);
    const double *tau = mt_mobility_forces(F, m->nb);
    mbk_spatial_vec *A = mt_cache(m, s, C_ACC), *z = A + m->nb;
    double *udot = st_sub_ydot(s, m->sub, 1);
    int rc = mt_realize_abi(m, s);
    if (rc < 0) return rc;
    mt_aba_solve(m, s, tau, F, true, A, z, udot);
    if (m->con_hooks && (rc = m->con_hooks->solve(m, s, udot, A)) < 0) return rc;
    int k = mbk_find_nonfinite(udot, m->nu);
    if (k >= 0) return nonfinite_udot(m, s, udot, k);
    /* qdotdot from udot through each mobilizer's N and NDot */
    const int *lay = qlayout(m, s);
    bool euler = layout_euler(m, lay);
    const double *qn = mt_cache(m, s, C_QN), *u = st_sub_y(s, m->sub, 1);
    double *qdd = st_sub_qdotdot(s, m->sub);
    for (int i = 1; i < m->nb; ++i) {
        const mt_node *b = &m->nodes[i];
        const mbk_mobilizer *mob = &m->bodies[i].mob;
        if (b->pin) qdd[lay[2 * i]] = udot[b->u0];
        else if (mob->ops->calc_qdotdot)
            mob->ops->calc_qdotdot(mob->impl, euler, qn + lay[2 * i], u + b->u0, udot + b->u0, qdd + lay[2 * i]);
        else copy_small(qdd + lay[2 * i], udot + b->u0, b->nu);
    }
    return 0;
}
