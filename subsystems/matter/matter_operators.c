/* Operators of the matter subsystem on a realized State: mass matrix,
 * M v, M^-1 v, inverse dynamics, Jacobians, stations, momentum. None of
 * them allocates: work space lives in scratch cache entries of the State. */
#include <string.h>

#include "mbk/status.h"
#include "matter_impl.h"
#include "mt_v4.h"

#ifdef MT_V4
/* mt_rnea by vectors (mt_v4.h): every sum and product of the scalar code below, in its
   order, three lanes at a time, so the same bits. */
static void rnea_v4(const mbk_matter *m, const mbk_state *s, const double *udot, const double *tau,
                    const mbk_spatial_vec *F, bool with_velocity, mbk_spatial_vec *A, mbk_spatial_vec *Fb,
                    double *residual)
{
    const mt_pos *pos = mt_cache(m, s, C_POS);
    const mt_vel *vel = with_velocity ? mt_cache(m, s, C_VEL) : NULL;
    const mbk_spatial_vec *H = mt_cache(m, s, C_H);
    const mt_v4 zero = {0.0, 0.0, 0.0, 0.0};
    A[0] = mbk_spatial_vec_zero();
    mt_sv4 A_prev = {zero, zero}; /* body i - 1's */
    for (int i = 1; i < m->nb; ++i) {
        const mt_node *b = &m->nodes[i];
        const mt_pos *p = &pos[i];
        const mt_sv4 A_P = b->parent == i - 1 ? A_prev : sv4_load(&A[b->parent]);
        /* the body's own part first (a_c + H udot), so that along a chain each body adds
           one sum to its parent's acceleration */
        mt_sv4 d = vel ? sv4_load(&vel[i].a_c) : (mt_sv4){zero, zero};
        if (udot && b->spin) d.w = d.w + v4_load(&H[b->u0].w.x) * udot[b->u0];
        else for (int j = 0; udot && j < b->nu; ++j) {
            const mt_sv4 h = sv4_load(&H[b->u0 + j]);
            d.w = d.w + h.w * udot[b->u0 + j];
            d.v = d.v + h.v * udot[b->u0 + j];
        }
        const mt_sv4 Ai = {A_P.w + d.w, A_P.v + (v4_cross(A_P.w, v4_load(&p->r_PB.x)) + d.v)};
        sv4_store(&A[i], Ai);
        A_prev = Ai;
        /* the body's rigid inertia times Ai (mt_rigid_mul) */
        const double mass = mt_mass_of(m, pos, i);
        const mt_v4 h = v4_load_after(&p->I_G.yz) * mass;
        mt_v4 I[3];
        sym3_cols(&p->I_G, I);
        mt_sv4 f = {sym3_cols_mul(I, Ai.w) + v4_cross(h, Ai.v), Ai.v * mass - v4_cross(h, Ai.w)};
        if (vel) f = sv4_add(f, sv4_load(&vel[i].b));
        if (F) f = sv4_sub(f, sv4_load(&F[i]));
        sv4_store(&Fb[i], f);
    }
    mt_sv4 carry = {zero, zero}; /* force passed to body i - 1 */
    for (int i = m->nb - 1; i >= 1; --i) {
        const mt_node *b = &m->nodes[i];
        const mt_sv4 Fi = sv4_load(&Fb[i]), f = sv4_add(Fi, carry);
        if (b->spin) residual[b->u0] = v4_dot(v4_load(&H[b->u0].w.x), f.w) - (tau ? tau[b->u0] : 0.0);
        else for (int j = 0; j < b->nu; ++j) {
            const mt_sv4 h = sv4_load(&H[b->u0 + j]);
            residual[b->u0 + j] = (v4_dot(h.w, f.w) + v4_dot(h.v, f.v)) - (tau ? tau[b->u0 + j] : 0.0);
        }
        /* f taken to the parent's origin, the carried moment added last (one sum per body
           along a chain) */
        const mt_sv4 fp = {carry.w + (Fi.w - v4_cross(-v4_load(&pos[i].r_PB.x), f.v)), f.v};
        carry.w = carry.v = zero;
        if (b->parent == i - 1) carry = fp;
        else if (b->parent > 0) sv4_store(&Fb[b->parent], sv4_add(sv4_load(&Fb[b->parent]), fp));
    }
}
#endif

/* Recursive Newton-Euler: residual = M udot (+ C if with_velocity) - tau - J^T F.
   A and Fb are scratch arrays of nb spatial vectors. As in the articulated-body
   sweeps, spins skip the zero half of H and the value passed to the next body
   stays in registers along unbranched runs. */
void mt_rnea(const mbk_matter *m, const mbk_state *s, const double *udot, const double *tau,
                 const mbk_spatial_vec *F, bool with_velocity, mbk_spatial_vec *A,
                 mbk_spatial_vec *Fb, double *residual)
{
#ifdef MT_V4
    rnea_v4(m, s, udot, tau, F, with_velocity, A, Fb, residual);
    return;
#endif
    const mt_pos *pos = mt_cache(m, s, C_POS);
    const mt_vel *vel = with_velocity ? mt_cache(m, s, C_VEL) : NULL;
    const mbk_spatial_vec *H = mt_cache(m, s, C_H);
    A[0] = mbk_spatial_vec_zero();
    mbk_spatial_vec A_prev = A[0]; /* body i - 1's */
    for (int i = 1; i < m->nb; ++i) {
        const mt_node *b = &m->nodes[i];
        const mbk_spatial_vec A_P = b->parent == i - 1 ? A_prev : A[b->parent];
        mbk_spatial_vec d = vel ? vel[i].a_c : mbk_spatial_vec_zero(); /* rnea_v4's order */
        if (udot && b->spin) d.w = mbk_vec3_add(d.w, mbk_vec3_scale(H[b->u0].w, udot[b->u0]));
        else for (int j = 0; udot && j < b->nu; ++j) d = mbk_spatial_vec_add(d, mbk_spatial_vec_scale(H[b->u0 + j], udot[b->u0 + j]));
        const mbk_spatial_vec Ai = {mbk_vec3_add(A_P.w, d.w),
                                    mbk_vec3_add(A_P.v, mbk_vec3_add(mbk_vec3_cross(A_P.w, pos[i].r_PB), d.v))};
        A[i] = A_prev = Ai;
        mbk_spatial_vec f = mt_rigid_mul(mt_mass_of(m, pos, i), &pos[i], Ai);
        if (vel) f = mbk_spatial_vec_add(f, vel[i].b);
        if (F) f = mbk_spatial_vec_sub(f, F[i]);
        Fb[i] = f;
    }
    mbk_spatial_vec carry = mbk_spatial_vec_zero(); /* force passed to body i - 1 */
    for (int i = m->nb - 1; i >= 1; --i) {
        const mt_node *b = &m->nodes[i];
        mbk_spatial_vec f = mbk_spatial_vec_add(Fb[i], carry);
        if (b->spin) residual[b->u0] = mbk_vec3_dot(H[b->u0].w, f.w) - (tau ? tau[b->u0] : 0.0);
        else for (int j = 0; j < b->nu; ++j)
            residual[b->u0 + j] = mbk_spatial_vec_dot(H[b->u0 + j], f) - (tau ? tau[b->u0 + j] : 0.0);
        const mbk_spatial_vec Fs = mbk_spatial_shift_force(mbk_spatial_vec_make(Fb[i].w, f.v), mbk_vec3_neg(pos[i].r_PB));
        mbk_spatial_vec fp = mbk_spatial_vec_make(mbk_vec3_add(carry.w, Fs.w), f.v);
        carry = mbk_spatial_vec_zero();
        if (b->parent == i - 1) carry = fp;
        else if (b->parent > 0) Fb[b->parent] = mbk_spatial_vec_add(Fb[b->parent], fp);
    }
}

int mbk_matter_multiply_by_M(const mbk_matter *m, const mbk_state *s, const double *v, double *Mv)
{
    int rc = mt_need(m, s, MBK_STAGE_POSITION, "mbk_matter_multiply_by_M");
    if (rc < 0) return rc;
    if (!v || !Mv) return mbk_set_error(MBK_EINVAL, "mbk_matter_multiply_by_M: v and Mv must not be NULL");
    if ((rc = mt_need_finite(v, m->nu, "mbk_matter_multiply_by_M", "v")) < 0) return rc;
    mbk_spatial_vec *w = mt_cache(m, s, C_SCRATCH);
    mt_rnea(m, s, v, NULL, NULL, false, w, w + m->nb, Mv);
    return MBK_OK;
}

int mbk_matter_multiply_by_M_inverse(const mbk_matter *m, const mbk_state *s, const double *v, double *Minv_v)
{
    int rc = mt_need(m, s, MBK_STAGE_POSITION, "mbk_matter_multiply_by_M_inverse");
    if (rc < 0) return rc;
    if (!v || !Minv_v) return mbk_set_error(MBK_EINVAL, "mbk_matter_multiply_by_M_inverse: v and Minv_v must not be NULL");
    if ((rc = mt_need_finite(v, m->nu, "mbk_matter_multiply_by_M_inverse", "v")) < 0) return rc;
    if ((rc = mt_realize_abi(m, s)) < 0) return rc;
    mbk_spatial_vec *w = mt_cache(m, s, C_SCRATCH);
    mt_aba_solve(m, s, v, NULL, false, w, w + m->nb, Minv_v);
    return MBK_OK;
}

/* A motion (w, v at the point p) taken to Ground's origin: (w, v - w x p). */
static inline mbk_spatial_vec motion_to_origin(const mbk_spatial_vec *V, mbk_vec3 p)
{
    return mbk_spatial_vec_make(V->w, mbk_vec3_sub(V->v, mbk_vec3_cross(V->w, p)));
}

/* A force (moment about the point p, f) taken to Ground's origin: (n + p x f, f). */
static inline mbk_spatial_vec force_to_origin(const mbk_spatial_vec *F, mbk_vec3 p)
{
    return mbk_spatial_vec_make(mbk_vec3_add(F->w, mbk_vec3_cross(p, F->v)), F->v);
}

/* H about Ground's origin, one array per component (structure of arrays), so that a row's
   entries over a run of ancestors are one loop the compiler vectorizes. */
typedef struct mass_h {
    double *wx, *wy, *wz, *vx, *vy, *vz;
} mass_h;

/* row[u] = H_u^T F for u in [lo, top): the 6-vector dot product of mbk_spatial_vec_dot, in its
   order of operations, over a run of contiguous u. */
static void mass_row_run(double *restrict row, const double *restrict wx, const double *restrict wy,
                         const double *restrict wz, const double *restrict vx, const double *restrict vy,
                         const double *restrict vz, mbk_spatial_vec F, int lo, int top)
{
    for (int u = lo; u < top; ++u)
        row[u] = (wx[u] * F.w.x + wy[u] * F.w.y + wz[u] * F.w.z) + (vx[u] * F.v.x + vy[u] * F.v.y + vz[u] * F.v.z);
}

/* Row col of M left of the body's own block (the lower triangle): H^T F for every ancestor's
   u, zeros for the u of other branches. Ancestors come in unbranched runs whose u are
   contiguous, so the walk is a few dense loops, not a chase through parent indices. */
static void mass_row_ancestors(const mbk_matter *m, const mt_body *b, const mass_h *h, mbk_spatial_vec F_O,
                               double *row)
{
    int hi = b->u0; /* columns hi.. are written */
    for (int k = b->parent; k > 0; k = m->bodies[m->bodies[k].run0].parent) {
        int lo = m->bodies[m->bodies[k].run0].u0, top = m->bodies[k].u0 + m->bodies[k].nu;
        if (top < hi) memset(row + top, 0, (size_t)(hi - top) * sizeof *row);
        mass_row_run(row, h->wx, h->wy, h->wz, h->vx, h->vy, h->vz, F_O, lo, top);
        hi = lo;
    }
    if (hi > 0) memset(row, 0, (size_t)hi * sizeof *row);
}

#if defined(__GNUC__) && !defined(__clang__)
/* Four doubles as one vector (GCC's vector extension: 256-bit registers where the target has
   them, pairs of 128-bit ones otherwise), for the 4 x 4 transposes of the mirror. */
typedef double mass_v4 __attribute__((vector_size(32)));
typedef long long mass_v4i __attribute__((vector_size(32)));
#define MASS_SHUFFLE(a, b, i, j, k, l) __builtin_shuffle(a, b, (mass_v4i){i, j, k, l})

/* The 4 x 4 block at rows r..r+3, columns c..c+3 of the upper triangle from its mirror image
   at rows c..c+3, columns r..r+3 of the lower: four row loads, eight shuffles, four row stores. */
static inline void mass_mirror_4x4(double *M, size_t n, size_t r, size_t c)
{
    mass_v4 a, b, x, y;
    memcpy(&a, M + c * n + r, sizeof a);
    memcpy(&b, M + (c + 1) * n + r, sizeof b);
    memcpy(&x, M + (c + 2) * n + r, sizeof x);
    memcpy(&y, M + (c + 3) * n + r, sizeof y);
    mass_v4 t0 = MASS_SHUFFLE(a, b, 0, 4, 2, 6), t1 = MASS_SHUFFLE(a, b, 1, 5, 3, 7);
    mass_v4 t2 = MASS_SHUFFLE(x, y, 0, 4, 2, 6), t3 = MASS_SHUFFLE(x, y, 1, 5, 3, 7);
    mass_v4 o0 = MASS_SHUFFLE(t0, t2, 0, 1, 4, 5), o1 = MASS_SHUFFLE(t1, t3, 0, 1, 4, 5);
    mass_v4 o2 = MASS_SHUFFLE(t0, t2, 2, 3, 6, 7), o3 = MASS_SHUFFLE(t1, t3, 2, 3, 6, 7);
    memcpy(M + r * n + c, &o0, sizeof o0);
    memcpy(M + (r + 1) * n + c, &o1, sizeof o1);
    memcpy(M + (r + 2) * n + c, &o2, sizeof o2);
    memcpy(M + (r + 3) * n + c, &o3, sizeof o3);
}
#else
static inline void mass_mirror_4x4(double *M, size_t n, size_t r, size_t c)
{
    for (size_t i = 0; i < 4; ++i)
        for (size_t j = 0; j < 4; ++j) M[(r + i) * n + c + j] = M[(c + j) * n + r + i];
}
#endif

/* The upper triangle from the lower, for a dense lower triangle (long chains): 4 x 4 blocks
   transposed in registers, row block by row block, so that the stores stream along four rows
   and every source line is read from cache (a column-wise mirror touches a new line per
   entry); the blocks on the diagonal and the ragged edge entry by entry. */
static void mass_mirror_tiled(double *M, int n)
{
    size_t N = (size_t)n, r0 = 0;
    for (; r0 + 4 <= N; r0 += 4) {
        for (size_t r = r0; r < r0 + 4; ++r)
            for (size_t c = r + 1; c < r0 + 4; ++c) M[r * N + c] = M[c * N + r];
        size_t c0 = r0 + 4;
        for (; c0 + 4 <= N; c0 += 4) mass_mirror_4x4(M, N, r0, c0);
        for (size_t r = r0; r < r0 + 4; ++r)
            for (size_t c = c0; c < N; ++c) M[r * N + c] = M[c * N + r];
    }
    for (size_t r = r0; r < N; ++r)
        for (size_t c = r + 1; c < N; ++c) M[r * N + c] = M[c * N + r];
}

/* The ancestors' entries of row col and their mirrors in column col, for trees (a sparse
   lower triangle: most ancestors sit alone in their runs, and most entries are zeros between
   branches, which the caller zeroed beforehand in one pass). */
static void mass_row_ancestors_mirrored(const mbk_matter *m, const mt_body *b, const mass_h *h, mbk_spatial_vec F_O,
                                        double *M, int col, int n)
{
    double *row = M + (size_t)col * (size_t)n;
    /* ancestor by ancestor through the packed 32-byte records: the walk is a chain of dependent
       loads, which stay in L1 there (the full body descriptions are ten times as large) */
    for (int k = b->parent; k > 0; k = m->nodes[k].parent) {
        int lo = m->nodes[k].u0, top = lo + m->nodes[k].nu;
        for (int u = lo; u < top; ++u) {
            double e = (h->wx[u] * F_O.w.x + h->wy[u] * F_O.w.y + h->wz[u] * F_O.w.z) +
                       (h->vx[u] * F_O.v.x + h->vy[u] * F_O.v.y + h->vz[u] * F_O.v.z);
            row[u] = e;
            M[(size_t)u * (size_t)n + (size_t)col] = e;
        }
    }
}

/* Composite-rigid-body algorithm: composite inertias tip to base, then each
   body's H columns times its composite inertia, carried up to every ancestor.
   The force and the ancestors' H are taken about Ground's origin, where the
   power H^T F needs no shifting, so each entry costs one 6-vector dot product.
   When most bodies continue an unbranched run (chains: a dense lower triangle), the
   sweep fills the lower triangle row by row (contiguous writes, vectorized over each
   run) and the upper triangle is mirrored afterwards by tiles; otherwise (trees: most
   entries are zeros between branches) the matrix is zeroed in one pass and each
   nonzero entry written to both triangles as it is computed. */
int mbk_matter_calc_mass_matrix(const mbk_matter *m, const mbk_state *s, double *M)
{
    int rc = mt_need(m, s, MBK_STAGE_POSITION, "mbk_matter_calc_mass_matrix");
    if (rc < 0) return rc;
    if (!M) return mbk_set_error(MBK_EINVAL, "mbk_matter_calc_mass_matrix: M is NULL");
    const mt_pos *pos = mt_cache(m, s, C_POS);
    const mbk_spatial_vec *H = mt_cache(m, s, C_H);
    mt_composite *Ic = mt_cache(m, s, C_SCRATCH_MAT);
    int n = m->nu;
    /* the scratch entry holds nu + 1 spatial vectors after the composites: 6 arrays of nu */
    double *hd = (double *)(Ic + m->nb);
    const mass_h h = {hd, hd + n, hd + 2 * n, hd + 3 * n, hd + 4 * n, hd + 5 * n};
    int in_runs = 0; /* bodies whose parent is the body before */
    for (int i = 1; i < m->nb; ++i) {
        const mt_body *b = &m->bodies[i];
        in_runs += b->parent == i - 1;
        Ic[i].m = mt_mass_of(m, pos, i);
        Ic[i].h = mbk_vec3_scale(pos[i].c_G, Ic[i].m);
        Ic[i].I = pos[i].I_G;
        for (int j = 0; j < b->nu; ++j) {
            int u = b->u0 + j;
            mbk_spatial_vec HO = motion_to_origin(&H[u], pos[i].X_GB.p);
            h.wx[u] = HO.w.x, h.wy[u] = HO.w.y, h.wz[u] = HO.w.z;
            h.vx[u] = HO.v.x, h.vy[u] = HO.v.y, h.vz[u] = HO.v.z;
        }
    }
    for (int i = m->nb - 1; i >= 1; --i) {
        int p = m->bodies[i].parent;
        if (p > 0) mt_composite_add_shifted(&Ic[p], &Ic[i], pos[i].r_PB);
    }
    const bool dense = 2 * in_runs > m->nb;
    if (!dense) memset(M, 0, (size_t)n * (size_t)n * sizeof *M);
    for (int i = 1; i < m->nb; ++i) {
        const mt_body *b = &m->bodies[i];
        for (int j = 0; j < b->nu; ++j) {
            int col = b->u0 + j;
            double *row = M + (size_t)col * (size_t)n;
            mbk_spatial_vec F = mt_composite_mul(&Ic[i], &H[col]);
            for (int r = 0; r <= j; ++r) {
                row[b->u0 + r] = mbk_spatial_vec_dot(H[b->u0 + r], F);
                if (!dense) M[(size_t)(b->u0 + r) * (size_t)n + (size_t)col] = row[b->u0 + r];
            }
            mbk_spatial_vec F_O = force_to_origin(&F, pos[i].X_GB.p);
            if (dense) mass_row_ancestors(m, b, &h, F_O, row);
            else mass_row_ancestors_mirrored(m, b, &h, F_O, M, col, n);
        }
    }
    if (dense) mass_mirror_tiled(M, n);
    return MBK_OK;
}

int mbk_matter_calc_residual_force(const mbk_matter *m, const mbk_state *s, const double *mobility_forces,
                                   const mbk_spatial_vec *body_forces, const double *known_udot, double *residual)
{
    int rc = mt_need(m, s, MBK_STAGE_VELOCITY, "mbk_matter_calc_residual_force");
    if (rc < 0) return rc;
    if (!residual) return mbk_set_error(MBK_EINVAL, "mbk_matter_calc_residual_force: residual is NULL");
    const char *fn = "mbk_matter_calc_residual_force";
    /* the System's own force sums were scanned when they were made (mt_forces_checked) */
    mbk_spatial_vec *own = mt_cache(m, s, C_FORCES);
    const bool own_checked = st_sub_of(s, m->sub)->stage >= MBK_STAGE_DYNAMICS && *mt_forces_checked(m, own) != 0.0;
    const bool scan_tau = mobility_forces && !(own_checked && mobility_forces == mt_mobility_forces(own, m->nb));
    const bool scan_F = body_forces && !(own_checked && body_forces == own);
    if ((known_udot && (rc = mt_need_finite(known_udot, m->nu, fn, "known_udot")) < 0) ||
        (scan_tau && (rc = mt_need_finite(mobility_forces, m->nu, fn, "mobility_forces")) < 0) ||
        (scan_F && (rc = mt_need_finite((const double *)body_forces, 6 * m->nb, fn, "body_forces (as doubles)")) < 0))
        return rc;
    mbk_spatial_vec *w = mt_cache(m, s, C_SCRATCH);
    mt_rnea(m, s, known_udot, mobility_forces, body_forces, true, w, w + m->nb, residual);
    return MBK_OK;
}

int mbk_matter_calc_kinetic_energy(const mbk_matter *m, const mbk_state *s, double *ke)
{
    int rc = mt_need(m, s, MBK_STAGE_VELOCITY, "mbk_matter_calc_kinetic_energy");
    if (rc < 0) return rc;
    if (!ke) return mbk_set_error(MBK_EINVAL, "mbk_matter_calc_kinetic_energy: ke is NULL");
    const mt_pos *pos = mt_cache(m, s, C_POS);
    const mt_vel *vel = mt_cache(m, s, C_VEL);
    double e = 0.0;
    for (int i = 1; i < m->nb; ++i)
        e += 0.5 * mbk_spatial_vec_dot(vel[i].V_GB, mt_rigid_mul(mt_mass_of(m, pos, i), &pos[i], vel[i].V_GB));
    *ke = e;
    return MBK_OK;
}

/* ------------------------------------------------------------------ */
/* Jacobians                                                            */
/* ------------------------------------------------------------------ */

/* Body velocities from u without velocity-product terms, base to tip. */
static void jacobian_times(const mbk_matter *m, const mbk_state *s, const double *u, mbk_spatial_vec *V)
{
    const mt_pos *pos = mt_cache(m, s, C_POS);
    const mbk_spatial_vec *H = mt_cache(m, s, C_H);
    V[0] = mbk_spatial_vec_zero();
    for (int i = 1; i < m->nb; ++i) {
        const mt_body *b = &m->bodies[i];
        mbk_spatial_vec v = mbk_spatial_shift_motion(V[b->parent], pos[i].r_PB);
        for (int j = 0; j < b->nu; ++j) v = mbk_spatial_vec_add(v, mbk_spatial_vec_scale(H[b->u0 + j], u[b->u0 + j]));
        V[i] = v;
    }
}

int mbk_matter_multiply_by_system_jacobian(const mbk_matter *m, const mbk_state *s, const double *u,
                                           mbk_spatial_vec *Ju)
{
    const char *fn = "mbk_matter_multiply_by_system_jacobian";
    int rc = mt_need(m, s, MBK_STAGE_POSITION, fn);
    if (rc < 0) return rc;
    if (!u || !Ju) return mbk_set_error(MBK_EINVAL, "%s: u and Ju must not be NULL", fn);
    if ((rc = mt_need_finite(u, m->nu, fn, "u")) < 0) return rc;
    jacobian_times(m, s, u, Ju);
    return MBK_OK;
}

int mbk_matter_multiply_by_system_jacobian_transpose(const mbk_matter *m, const mbk_state *s,
                                                     const mbk_spatial_vec *F, double *JtF)
{
    const char *fn = "mbk_matter_multiply_by_system_jacobian_transpose";
    int rc = mt_need(m, s, MBK_STAGE_POSITION, fn);
    if (rc < 0) return rc;
    if (!F || !JtF) return mbk_set_error(MBK_EINVAL, "%s: F and JtF must not be NULL", fn);
    if ((rc = mt_need_finite((const double *)F, 6 * m->nb, fn, "F (as doubles)")) < 0) return rc;
    /* -J^T F is the residual of M 0 - J^T F with no velocity terms. */
    mbk_spatial_vec *w = mt_cache(m, s, C_SCRATCH);
    mt_rnea(m, s, NULL, NULL, F, false, w, w + m->nb, JtF);
    for (int i = 0; i < m->nu; ++i) JtF[i] = -JtF[i];
    return MBK_OK;
}

int mbk_matter_calc_system_jacobian(const mbk_matter *m, const mbk_state *s, double *J)
{
    const char *fn = "mbk_matter_calc_system_jacobian";
    int rc = mt_need(m, s, MBK_STAGE_POSITION, fn);
    if (rc < 0) return rc;
    if (!J) return mbk_set_error(MBK_EINVAL, "%s: J is NULL", fn);
    const mt_pos *pos = mt_cache(m, s, C_POS);
    const mbk_spatial_vec *H = mt_cache(m, s, C_H);
    int n = m->nu;
    memset(J, 0, (size_t)6 * (size_t)m->nb * (size_t)n * sizeof(double));
    /* Column of u_c in body i's row block: H_c shifted from its body to i, for i in c's subtree. */
    for (int i = 1; i < m->nb; ++i)
        for (int k = i; k > 0; k = m->bodies[k].parent) {
            const mt_body *a = &m->bodies[k];
            mbk_vec3 r = mbk_vec3_sub(pos[i].X_GB.p, pos[k].X_GB.p);
            for (int j = 0; j < a->nu; ++j) {
                mbk_spatial_vec c = mbk_spatial_shift_motion(H[a->u0 + j], r);
                const double *cv = &c.w.x;
                for (int row = 0; row < 6; ++row) J[(6 * i + row) * n + a->u0 + j] = row < 3 ? cv[row] : (&c.v.x)[row - 3];
            }
        }
    return MBK_OK;
}

int mbk_matter_calc_station_jacobian(const mbk_matter *m, const mbk_state *s, int body,
                                     mbk_vec3 station_B, double *JS)
{
    const char *fn = "mbk_matter_calc_station_jacobian";
    int rc = mt_need(m, s, MBK_STAGE_POSITION, fn);
    if (rc < 0 || (rc = mt_need_body(m, body, fn)) < 0) return rc;
    if (!JS) return mbk_set_error(MBK_EINVAL, "%s: JS is NULL", fn);
    const mt_pos *pos = mt_cache(m, s, C_POS);
    const mbk_spatial_vec *H = mt_cache(m, s, C_H);
    int n = m->nu;
    mbk_vec3 p = mbk_transform_apply_point(pos[body].X_GB, station_B);
    memset(JS, 0, (size_t)3 * (size_t)n * sizeof(double));
    for (int k = body; k > 0; k = m->bodies[k].parent) {
        const mt_body *a = &m->bodies[k];
        mbk_vec3 r = mbk_vec3_sub(p, pos[k].X_GB.p);
        for (int j = 0; j < a->nu; ++j) {
            mbk_vec3 v = mbk_spatial_shift_motion(H[a->u0 + j], r).v;
            JS[0 * n + a->u0 + j] = v.x;
            JS[1 * n + a->u0 + j] = v.y;
            JS[2 * n + a->u0 + j] = v.z;
        }
    }
    return MBK_OK;
}

/* ------------------------------------------------------------------ */
/* Stations                                                             */
/* ------------------------------------------------------------------ */

/* Station offset from the body origin, in G. */
static mbk_vec3 station_offset(const mbk_matter *m, const mbk_state *s, int body, mbk_vec3 station_B)
{
    return mbk_mat33_mul_vec(((const mt_pos *)mt_cache(m, s, C_POS))[body].X_GB.R, station_B);
}

/* Shared checks of the station readers. */
static int station_need(const mbk_matter *m, const mbk_state *s, int body, const void *out,
                        mbk_stage stage, const char *fn)
{
    int rc = mt_need(m, s, stage, fn);
    if (rc < 0 || (rc = mt_need_body(m, body, fn)) < 0) return rc;
    if (!out) return mbk_set_error(MBK_EINVAL, "%s: output is NULL", fn);
    return MBK_OK;
}

int mbk_matter_get_station_location(const mbk_matter *m, const mbk_state *s, int body,
                                    mbk_vec3 station_B, mbk_vec3 *p_G)
{
    int rc = station_need(m, s, body, p_G, MBK_STAGE_POSITION, "mbk_matter_get_station_location");
    if (rc < 0) return rc;
    *p_G = mbk_transform_apply_point(((const mt_pos *)mt_cache(m, s, C_POS))[body].X_GB, station_B);
    return MBK_OK;
}

int mbk_matter_get_station_velocity(const mbk_matter *m, const mbk_state *s, int body,
                                    mbk_vec3 station_B, mbk_vec3 *v_G)
{
    int rc = station_need(m, s, body, v_G, MBK_STAGE_VELOCITY, "mbk_matter_get_station_velocity");
    if (rc < 0) return rc;
    const mbk_spatial_vec *V = &((const mt_vel *)mt_cache(m, s, C_VEL))[body].V_GB;
    *v_G = mbk_spatial_shift_motion(*V, station_offset(m, s, body, station_B)).v;
    return MBK_OK;
}

int mbk_matter_get_station_acceleration(const mbk_matter *m, const mbk_state *s, int body,
                                        mbk_vec3 station_B, mbk_vec3 *a_G)
{
    int rc = station_need(m, s, body, a_G, MBK_STAGE_ACCELERATION, "mbk_matter_get_station_acceleration");
    if (rc < 0) return rc;
    const mbk_spatial_vec *A = &((const mbk_spatial_vec *)mt_cache(m, s, C_ACC))[body];
    mbk_vec3 w = ((const mt_vel *)mt_cache(m, s, C_VEL))[body].V_GB.w;
    mbk_vec3 r = station_offset(m, s, body, station_B);
    /* a_S = a_B + alpha x r + w x (w x r) */
    *a_G = mbk_vec3_add(mbk_spatial_shift_motion(*A, r).v, mbk_vec3_cross(w, mbk_vec3_cross(w, r)));
    return MBK_OK;
}

/* ------------------------------------------------------------------ */
/* Whole-system quantities                                              */
/* ------------------------------------------------------------------ */

double mbk_matter_get_total_mass(const mbk_matter *m)
{
    double total = 0.0;
    for (int i = 1; m && i < m->nb; ++i) total += m->bodies[i].mass;
    return total;
}

int mbk_matter_get_body_mass_props(const mbk_matter *m, int body, mbk_mass_props *mp)
{
    const char *fn = "mbk_matter_get_body_mass_props";
    if (!m || !mp) return mbk_set_error(MBK_EINVAL, "%s: matter and output must not be NULL", fn);
    int rc = mt_need_body(m, body, fn);
    if (rc < 0) return rc;
    const mt_body *b = &m->bodies[body];
    mbk_mat33 I_o = mt_sym3_full(&b->I_B);
    *mp = mbk_mass_props_from_origin(b->mass, b->com, I_o);
    return MBK_OK;
}

int mbk_matter_calc_mass_center_location(const mbk_matter *m, const mbk_state *s, mbk_vec3 *p_G)
{
    const char *fn = "mbk_matter_calc_mass_center_location";
    int rc = mt_need(m, s, MBK_STAGE_POSITION, fn);
    if (rc < 0) return rc;
    const mt_pos *pos = mt_cache(m, s, C_POS);
    double total = 0.0;
    for (int i = 1; i < m->nb; ++i) total += mt_mass_of(m, pos, i);
    if (!p_G || !(total > 0))
        return mbk_set_error(MBK_EINVAL, "%s: output is NULL or the system has no mass", fn);
    mbk_vec3 sum = mbk_vec3_zero();
    for (int i = 1; i < m->nb; ++i)
        sum = mbk_vec3_add(sum, mbk_vec3_scale(mbk_vec3_add(pos[i].X_GB.p, pos[i].c_G), mt_mass_of(m, pos, i)));
    *p_G = mbk_vec3_scale(sum, 1.0 / total);
    return MBK_OK;
}

int mbk_matter_calc_system_momentum(const mbk_matter *m, const mbk_state *s, mbk_spatial_vec *h)
{
    const char *fn = "mbk_matter_calc_system_momentum";
    int rc = mt_need(m, s, MBK_STAGE_VELOCITY, fn);
    if (rc < 0) return rc;
    if (!h) return mbk_set_error(MBK_EINVAL, "%s: output is NULL", fn);
    const mt_pos *pos = mt_cache(m, s, C_POS);
    const mt_vel *vel = mt_cache(m, s, C_VEL);
    mbk_spatial_vec sum = mbk_spatial_vec_zero();
    /* Each body's momentum about its origin, moved to Ground's origin like a force. */
    for (int i = 1; i < m->nb; ++i) {
        mbk_spatial_vec hb = mt_rigid_mul(mt_mass_of(m, pos, i), &pos[i], vel[i].V_GB);
        sum = mbk_spatial_vec_add(sum, mbk_spatial_shift_force(hb, mbk_vec3_neg(pos[i].X_GB.p)));
    }
    *h = sum;
    return MBK_OK;
}

int mbk_matter_calc_mass_center_velocity(const mbk_matter *m, const mbk_state *s, mbk_vec3 *v_G)
{
    const char *fn = "mbk_matter_calc_mass_center_velocity";
    mbk_spatial_vec h;
    int rc = mt_need(m, s, MBK_STAGE_VELOCITY, fn);
    if (rc < 0 || (rc = mbk_matter_calc_system_momentum(m, s, &h)) < 0) return rc;
    const mt_pos *pos = mt_cache(m, s, C_POS);
    double total = 0.0;
    for (int i = 1; i < m->nb; ++i) total += mt_mass_of(m, pos, i);
    if (!v_G || !(total > 0))
        return mbk_set_error(MBK_EINVAL, "%s: output is NULL or the system has no mass", fn);
    *v_G = mbk_vec3_scale(h.v, 1.0 / total);
    return MBK_OK;
}
