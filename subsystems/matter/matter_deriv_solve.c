/* M^-1 on many columns for the derivatives (dudot/dx = -M^-1 dr/dx): the sparse
 * LTDL factor read off the articulated-body inertias and its two triangular sweeps
 * on blocks of columns, or, for trees too deep for it, the articulated-body sweeps
 * on groups of columns. */
#include <stdint.h>
#include <string.h>

#include "matter_deriv.h"

/* Bytes of the right-hand side a row of the solve may draw on (in the first level of cache). */
enum { SOLVE_L1 = 40960 };

/* The sparse factor's storage: D (nu), then L's rows, then L by columns; *block: the
   solve's block of nu rows of block_width (64-byte aligned). */
static double *dws_factor(const mbk_matter *m, const mbk_state *s, double **block)
{
    char *b = mt_cache(m, s, C_SCRATCH_MAT);
    *block = (double *)(b + m->dws_off[8]);
    return (double *)(b + m->dws_off[7]);
}

/* Without the sparse factor, its place: the articulated-body solve's z of the fed bodies
   (ABA_GROUPS each), then their A. */
static mt_sv8 *dws_aba(const mbk_matter *m, const mbk_state *s)
{
    return (mt_sv8 *)((char *)mt_cache(m, s, C_SCRATCH_MAT) + m->dws_off[7]);
}

/* ---- M^-1 on many columns ------------------------------------------------------------- */

/* The two triangular sweeps on a block of NV * 8 columns (rows ld apart): L^T y = x from
   the tips with y scaled by Dsc as each row is finished, then L x = y from the base.
   Each row's columns stay in registers while its entries of L are pulled in, summed as
   two partial sums over alternate entries, the row finished last (the nearest) pulled
   last: the sweeps are a chain of rows, and this keeps the chain short. Every column is
   computed the same way whichever block holds it, so the blocking does not change the
   bits. */
#if MT_VEC8
#define SOLVE_ROW(NV, yi, lo, hi, coef, rows, sc)                                                   \
    do {                                                                                            \
        dvec8 e_[NV], o_[NV];                                                                    \
        for (int j_ = 0; j_ < (NV); ++j_) {                                                         \
            memcpy(&e_[j_], (yi) + 8 * j_, sizeof e_[j_]);                                          \
            o_[j_] = splat(0.0);                                                                    \
        }                                                                                           \
        int t_ = (hi) - 1;                                                                          \
        for (; t_ > (lo); t_ -= 2) {                                                                \
            const double f0_ = -(coef)[t_], f1_ = -(coef)[t_ - 1];                                  \
            const double *y0_ = Y + (size_t)(rows)[t_] * ld, *y1_ = Y + (size_t)(rows)[t_ - 1] * ld; \
            for (int j_ = 0; j_ < (NV); ++j_) {                                                     \
                dvec8 x0_, x1_;                                                                  \
                memcpy(&x0_, y0_ + 8 * j_, sizeof x0_);                                             \
                memcpy(&x1_, y1_ + 8 * j_, sizeof x1_);                                             \
                e_[j_] += f0_ * x0_;                                                                \
                o_[j_] += f1_ * x1_;                                                                \
            }                                                                                       \
        }                                                                                           \
        if (t_ == (lo)) {                                                                           \
            const double f0_ = -(coef)[t_], *y0_ = Y + (size_t)(rows)[t_] * ld;                     \
            for (int j_ = 0; j_ < (NV); ++j_) {                                                     \
                dvec8 x0_;                                                                       \
                memcpy(&x0_, y0_ + 8 * j_, sizeof x0_);                                             \
                e_[j_] += f0_ * x0_;                                                                \
            }                                                                                       \
        }                                                                                           \
        for (int j_ = 0; j_ < (NV); ++j_) {                                                         \
            dvec8 r_ = (sc) * (e_[j_] + o_[j_]);                                                 \
            memcpy((yi) + 8 * j_, &r_, sizeof r_);                                                  \
        }                                                                                           \
    } while (0)
#else
#define SOLVE_ROW(NV, yi, lo, hi, coef, rows, sc)                                                   \
    do {                                                                                            \
        for (int k_ = 0; k_ < 8 * (NV); ++k_) {                                                     \
            double e_ = (yi)[k_], o_ = 0.0;                                                         \
            int t_ = (hi) - 1;                                                                      \
            for (; t_ > (lo); t_ -= 2) {                                                            \
                e_ += -(coef)[t_] * Y[(size_t)(rows)[t_] * ld + (size_t)k_];                        \
                o_ += -(coef)[t_ - 1] * Y[(size_t)(rows)[t_ - 1] * ld + (size_t)k_];                \
            }                                                                                       \
            if (t_ == (lo)) e_ += -(coef)[t_] * Y[(size_t)(rows)[t_] * ld + (size_t)k_];            \
            (yi)[k_] = (sc) * (e_ + o_);                                                            \
        }                                                                                           \
    } while (0)
#endif

#define DEFINE_BLOCK_SOLVE(NV)                                                                      \
    MT_HOT static void block_solve_##NV(const mbk_matter *m, double *Y, size_t ld, const double *LD,\
                                 const double *Dsc, const double *L)                                \
    {                                                                                               \
        for (int i = m->nu - 1; i >= 0; --i)                                                        \
            SOLVE_ROW(NV, Y + (size_t)i * ld, m->ldoff[i], m->ldoff[i + 1], LD, m->ldrow, Dsc[i]);  \
        for (int k = 0; k < m->nu; ++k) {                                                           \
            const int t0 = m->loff[k], t1 = k + 1 < m->nu ? m->loff[k + 1] : m->nl;                 \
            if (t0 < t1) SOLVE_ROW(NV, Y + (size_t)k * ld, t0, t1, L, m->lanc, 1.0);                \
        }                                                                                           \
    }

DEFINE_BLOCK_SOLVE(1)
DEFINE_BLOCK_SOLVE(2)
DEFINE_BLOCK_SOLVE(3)
DEFINE_BLOCK_SOLVE(4)
DEFINE_BLOCK_SOLVE(5)
DEFINE_BLOCK_SOLVE(6)
DEFINE_BLOCK_SOLVE(7)
DEFINE_BLOCK_SOLVE(8)
DEFINE_BLOCK_SOLVE(9)
DEFINE_BLOCK_SOLVE(10)
DEFINE_BLOCK_SOLVE(11)
DEFINE_BLOCK_SOLVE(12)
#undef DEFINE_BLOCK_SOLVE
#undef SOLVE_ROW

typedef void (*block_solve_fn)(const mbk_matter *, double *, size_t, const double *, const double *, const double *);
static const block_solve_fn BLOCK_SOLVE[SOLVE_W / 8 + 1] = {
    NULL,          block_solve_1, block_solve_2, block_solve_3,  block_solve_4,  block_solve_5, block_solve_6,
    block_solve_7, block_solve_8, block_solve_9, block_solve_10, block_solve_11, block_solve_12};

/* dst[0, n) = src[0, n): eight at a time, then the rest one by one (written out, so that
   compilers do not turn these short copies into library calls). With acc, each value
   times zero is added into *acc as well: NaN in a lane exactly when a value copied there
   is infinite or NaN, so that the check of the results rides on the copy's loads. */
static inline void copy_row(double *restrict dst, const double *restrict src, int n, dvec8 *acc)
{
    int k = 0;
#if MT_VEC8
    for (; k + 8 <= n; k += 8) {
        dvec8 t;
        memcpy(&t, src + k, sizeof t);
        memcpy(dst + k, &t, sizeof t);
        if (acc) *acc += t * 0.0;
    }
#endif
    if (acc) { /* the values left, before the copy below moves the pointers */
        double r = 0.0;
        for (int j = k; j < n; ++j) r += src[j] * 0.0;
        *acc += r;
    }
    for (; k + 4 <= n; k += 4) {
        const double t0 = src[k], t1 = src[k + 1], t2 = src[k + 2], t3 = src[k + 3];
        dst[k] = t0, dst[k + 1] = t1, dst[k + 2] = t2, dst[k + 3] = t3;
    }
    dst += k, src += k;
    switch (n - k) {
    case 3: dst[2] = src[2]; /* fall through */
    case 2: dst[1] = src[1]; /* fall through */
    case 1: dst[0] = src[0]; /* fall through */
    default: break;
    }
}

/* Columns of a caller's array that M^-1 takes in the work space: w columns from x, rows
   ld apart. */
typedef struct mt_cols_left {
    double *x; /* the first column's entry in row 0 */
    size_t ld; /* row stride */
    int w;     /* columns */
} mt_cols_left;

/* The ranges r[0..nr) side by side into the work space Y (rows W apart, W a multiple of
   8 and less than their width + 8; the rest of each row zero), or (back) from it. */
static void block_copy(int nu, const mt_cols_left *r, int nr, double *Y, int W, bool back)
{
    static const double zero8[8];
    for (int i = 0; !back && i < nu; ++i) memcpy(Y + (size_t)i * (size_t)W + W - 8, zero8, sizeof zero8);
    /* range by range, so that each loop copies rows of one width */
    for (int k = 0, c = 0; k < nr; c += r[k].w, ++k)
        for (int i = 0; i < nu; ++i) {
            double *x = r[k].x + (size_t)i * r[k].ld, *y = Y + (size_t)i * (size_t)W + c;
            if (back) copy_row(x, y, r[k].w, NULL);
            else copy_row(y, x, r[k].w, NULL);
        }
}

/* How many columns of X to leave before its whole vectors of eight so that they start on a
   32-byte boundary in every row (0 to 3; 0 when the rows are not all aligned alike or
   there is no whole vector): vector loads that cross 32 bytes cost up to 15 % more. */
static int align_head(const double *X, size_t ld, int n)
{
    const uintptr_t a = (uintptr_t)X;
    if (a % sizeof(double) || (ld * sizeof(double)) % 32) return 0;
    const int h = (int)((32 - a % 32) % 32 / sizeof(double));
    return n - h >= 8 ? h : 0;
}

/* The n / 8 whole vectors of columns of X where they are, in as few blocks of at most
   nvmax vectors as will do, sharing the vectors evenly. */
static void solve_in_place(const mbk_matter *m, double *X, size_t ld, int n, int nvmax, const double *LD,
                           const double *Dsc, const double *L)
{
    const int nvec = n / 8, nblk = (nvec + nvmax - 1) / nvmax;
    for (int k = 0, c0 = 0; k < nblk; ++k) {
        const int nv = nvec / nblk + (k < nvec % nblk);
        BLOCK_SOLVE[nv](m, X + c0, ld, LD, Dsc, L);
        c0 += 8 * nv;
    }
}

/* M = L^T D L with L unit lower triangular, nonzero only where a u's row meets the u
   above it (Featherstone's LTDL, "Rigid Body Dynamics Algorithms" 6.5, eliminating from
   the tips). It is read off the articulated-body inertias the Acceleration stage left:
   once everything below a body is eliminated, what couples its u to each other and to
   the u above is its articulated inertia P alone, through U = P H. So a body of one u
   has D = H . U and L_ka = U . S_a / D = G . S_a (G = U / D, as the ABA keeps it), one
   dot product per entry; a body of several u factors its own block K = H^T U =
   L_bb^T D_b L_bb and solves L_bb^T D_b L_ba = U^T S_a for each u above. Every S and U
   is taken at Ground's origin. */
static int row_len(const mbk_matter *m, int k) { return (k + 1 < m->nu ? m->loff[k + 1] : m->nl) - m->loff[k]; }

/* A body of several u: its rows of L and its D. */
MT_HOT static void factor_block(const mbk_matter *m, const mt_node *nd, const mt_inertia *P, const mbk_spatial_vec *H,
                         mbk_vec3 p_B, const mt_dws *ws, double *D, double *L)
{
    const int n = nd->nu, u0 = nd->u0, *off = m->loff, *anc = m->lanc;
    mbk_spatial_vec U[MBK_MOBILIZER_MAX_U];
    double K[MBK_MOBILIZER_MAX_U][MBK_MOBILIZER_MAX_U], Lb[MBK_MOBILIZER_MAX_U][MBK_MOBILIZER_MAX_U] = {{0}};
    for (int j = 0; j < n; ++j) U[j] = mbk_spatial_shift_force(mt_inertia_mul(P, &H[u0 + j]), mbk_vec3_neg(p_B));
    for (int j = 0; j < n; ++j) /* the lower triangle, which is all the factoring reads */
        for (int i = 0; i <= j; ++i) K[j][i] = mbk_spatial_vec_dot(ws->ucol[u0 + j].T, U[i]);
    /* K = Lb^T D Lb from the last u (the tip of the body's chain of u) */
    for (int j = n - 1; j >= 0; --j) {
        double d = K[j][j];
        for (int l = j + 1; l < n; ++l) d -= Lb[l][j] * Lb[l][j] * D[u0 + l];
        D[u0 + j] = d;
        for (int i = 0; i < j; ++i) {
            double x = K[j][i];
            for (int l = j + 1; l < n; ++l) x -= Lb[l][j] * D[u0 + l] * Lb[l][i];
            Lb[j][i] = x / d;
        }
    }
    /* row u0 + j holds the u of its body above it (j - 1 down to 0), then those above the body */
    for (int j = 0; j < n; ++j)
        for (int p = 0; p < j; ++p) L[off[u0 + j] + p] = Lb[j][j - 1 - p];
    for (int p = 0; p < row_len(m, u0); ++p) {
        const mbk_spatial_vec S = ws->ucol[anc[off[u0] + p]].T;
        double z[MBK_MOBILIZER_MAX_U];
        for (int j = n - 1; j >= 0; --j) {
            z[j] = mbk_spatial_vec_dot(U[j], S);
            for (int l = j + 1; l < n; ++l) z[j] -= Lb[l][j] * z[l];
        }
        for (int j = 0; j < n; ++j) L[off[u0 + j] + j + p] = z[j] / D[u0 + j];
    }
}

/* LD (L by columns) for the rows of u0 .. u0 + n - 1: L times D of the row, over scale. */
static void factor_columns(const mbk_matter *m, int u0, int n, const double *D, const double *L, double inv_scale,
                           double *LD)
{
    for (int k = u0; k < u0 + n; ++k) {
        const double f = D[k] * inv_scale;
        for (int t = m->loff[k]; t < m->loff[k] + row_len(m, k); ++t) LD[m->lcol[t]] = L[t] * f;
    }
}

MT_HOT static int factor_mass(const mbk_matter *m, const mbk_state *s, const mt_dws *ws, double inv_scale, double *D,
                       double *L, double *LD)
{
    int rc = mt_realize_abi(m, s); /* already there after Acceleration */
    if (rc < 0) return rc;
    const mt_abi abi = mt_abi_of(m, s);
    const mt_pos *pos = mt_cache(m, s, C_POS);
    const mbk_spatial_vec *H = mt_cache(m, s, C_H);
    for (int b = 1; b < m->nb; ++b) {
        const mt_node *nd = &m->nodes[b];
        if (nd->nu > 1) {
            factor_block(m, nd, &abi.P[b], H, pos[b].X_GB.p, ws, D, L);
            factor_columns(m, nd->u0, nd->nu, D, L, inv_scale, LD);
            continue;
        }
        if (nd->nu == 0) continue;
        /* G is kept at the parent's origin */
        const int k = nd->u0, t0 = m->loff[k], t1 = t0 + row_len(m, k);
        const mbk_vec3 p_P = nd->parent > 0 ? pos[nd->parent].X_GB.p : mbk_vec3_zero();
        const mbk_spatial_vec g = mbk_spatial_shift_force(abi.G[k], mbk_vec3_neg(p_P));
        D[k] = 1.0 / abi.Dinv[nd->d0];
        const double f = D[k] * inv_scale;
        for (int t = t0; t < t1; ++t) {
            L[t] = mbk_spatial_vec_dot(g, ws->ucol[m->lanc[t]].T);
            LD[m->lcol[t]] = L[t] * f;
        }
    }
    return MBK_OK;
}

/* The sparse factor for the solve: L by rows, LD (L by columns, times D_k / scale: back
   substitution pulls the rows below each u already scaled by scale / D, y_k = z_k D_k /
   scale) and Dsc = scale / D, in the work space; *Y: the solve's block. */
MT_HOT static int factor_for_solve(const mbk_matter *m, const mbk_state *s, const mt_dws *ws, double scale, double **L,
                            double **LD, double **Dsc, double **Y)
{
    double *D = dws_factor(m, s, Y);
    *L = D + m->nu;
    *LD = *L + m->nl;
    int rc = factor_mass(m, s, ws, 1.0 / scale, D, *L, *LD);
    if (rc < 0) return rc;
    for (int i = 0; i < m->nu; ++i) D[i] = scale / D[i]; /* D is read only through LD from here */
    *Dsc = D;
    return MBK_OK;
}

double *mt_deriv_block(const mbk_matter *m, const mbk_state *s, int n, int *ld)
{
    if (!m->ltdl || n > block_width(m) || n <= 0) return NULL;
    double *Y;
    dws_factor(m, s, &Y);
    *ld = (n + 7) / 8 * 8;
    memset(Y, 0, ((size_t)m->nu * (size_t)*ld + 8) * sizeof *Y); /* and the eight after the last row */
    return Y;
}

MT_HOT int mt_deriv_solve_block(const mbk_matter *m, const mbk_state *s, double scale, double *X1, int ld1, int n1,
                         double *X2, int ld2, int n2)
{
    mt_dws ws = mt_dws_of(m, s);
    double *L, *LD, *Dsc, *Y;
    int rc = factor_for_solve(m, s, &ws, scale, &L, &LD, &Dsc, &Y);
    if (rc < 0) return rc;
    const int W = (n1 + n2 + 7) / 8 * 8;
    BLOCK_SOLVE[W / 8](m, Y, (size_t)W, LD, Dsc, L);
    dvec8 acc[2] = {splat(0.0), splat(0.0)};
    for (int i = 0; i < m->nu; ++i) {
        const double *y = Y + (size_t)i * (size_t)W;
        copy_row(X1 + (size_t)i * (size_t)ld1, y, n1, &acc[0]);
        copy_row(X2 + (size_t)i * (size_t)ld2, y + n1, n2, &acc[1]);
    }
    /* x * 0 is NaN exactly for an infinite or NaN x, and a NaN stays in the sums */
    double sum = 0.0;
    for (size_t l = 0; l < sizeof(dvec8) / sizeof(double); ++l) sum += ((const double *)&acc[0])[l] + ((const double *)&acc[1])[l];
    return sum == sum ? MBK_OK : 1;
}

/* ---- M^-1 through the articulated-body sweeps, a group of columns at once ---------------- */

static inline dvec8 load8(const double *p)
{
    dvec8 x;
    memcpy(&x, p, sizeof x);
    return x;
}

static inline void store8(double *p, dvec8 x) { memcpy(p, &x, sizeof x); }

/* a . x for a 3-vector a the same in every column. */
static inline dvec8 dot3x8(mbk_vec3 a, const dvec8 x[3]) { return (a.x * x[0] + a.y * x[1]) + a.z * x[2]; }

/* h . x for a spatial vector h the same in every column, summed as two halves: the
   sweeps are a chain from body to body, and this halves its length here. */
static inline dvec8 dot8(const mbk_spatial_vec *h, const mt_sv8 *x) { return dot3x8(h->w, x->w) + dot3x8(h->v, x->v); }

/* y += a e for a 3-vector a the same in every column. */
static inline void axpy3x8(dvec8 y[3], mbk_vec3 a, dvec8 e) { y[0] += a.x * e, y[1] += a.y * e, y[2] += a.z * e; }

/* y += h e. */
static inline void axpy8(mt_sv8 *y, const mbk_spatial_vec *h, dvec8 e)
{
    axpy3x8(y->w, h->w, e);
    axpy3x8(y->v, h->v, e);
}

static inline void add8(mt_sv8 *y, const mt_sv8 *x)
{
    for (int k = 0; k < 3; ++k) y->w[k] += x->w[k], y->v[k] += x->v[k];
}

/* A force taken from a body's origin to its parent's, r from the parent's to the body's:
   the moment gains r x f (mbk_spatial_shift_force by -r). */
static inline void shift_force8(mt_sv8 *f, mbk_vec3 r)
{
    f->w[0] += r.y * f->v[2] - r.z * f->v[1];
    f->w[1] += r.z * f->v[0] - r.x * f->v[2];
    f->w[2] += r.x * f->v[1] - r.y * f->v[0];
}

/* A motion taken from the parent's origin to the body's: v gains w x r
   (mbk_spatial_shift_motion). */
static inline void shift_motion8(mt_sv8 *a, mbk_vec3 r)
{
    a->v[0] += a->w[1] * r.z - a->w[2] * r.y;
    a->v[1] += a->w[2] * r.x - a->w[0] * r.z;
    a->v[2] += a->w[0] * r.y - a->w[1] * r.x;
}

/* X <- scale M^-1 X for ng groups of LANES columns of X side by side (nu rows ld apart,
   in place): mt_aba_solve's sweeps with mobility forces alone and every scalar a vector
   of a group's columns' values. The rows hold eps = tau - H^T z between the sweeps; z and
   A of the fed bodies (those a child reaches through memory rather than along a run) go
   to zm and am (ng per fed body). Each group is a chain from body to body; taking
   several groups body by body lets their chains overlap. M^-1 costs O(n) per column this
   way, where the sparse factor would cost the depth. */
MT_HOT static void aba_columns(const mbk_matter *m, const mbk_state *s, double *X, size_t ld, int ng, double scale,
                               mt_sv8 *zm, mt_sv8 *am)
{
    const mt_pos *pos = mt_cache(m, s, C_POS);
    const mbk_spatial_vec *H = mt_cache(m, s, C_H);
    const mt_abi abi = mt_abi_of(m, s);
    const mt_sv8 zero = {{splat(0.0), splat(0.0), splat(0.0)}, {splat(0.0), splat(0.0), splat(0.0)}};
    for (int k = 0; k < m->nfed * ng; ++k) zm[k] = zero;
    /* tip to base: the articulated bias forces; along a run z is carried, not stored */
    mt_sv8 carry[ABA_GROUPS];
    for (int g = 0; g < ng; ++g) carry[g] = zero;
    for (int i = m->nb - 1; i >= 1; --i) {
        const mt_node *b = &m->nodes[i];
        const mbk_vec3 r = pos[i].r_PB;
        for (int g = 0; g < ng; ++g) {
            mt_sv8 zi = carry[g];
            if (b->fed) add8(&zi, &zm[m->fed_slot[i] * ng + g]);
            mt_sv8 zp = zi;
            shift_force8(&zp, r);
            for (int j = 0; j < b->nu; ++j) { /* H^T G = 1: each eps from the same zi */
                double *row = X + (size_t)(b->u0 + j) * ld + (size_t)(LANES * g);
                const mbk_spatial_vec *h = &H[b->u0 + j];
                /* a spin's H is (a, 0): only the moment counts */
                const dvec8 Hz = b->spin ? dot3x8(h->w, zi.w) : dot8(h, &zi);
                const dvec8 eps = load8(row) - Hz;
                store8(row, eps);
                axpy8(&zp, &abi.G[b->u0 + j], eps);
            }
            if (b->parent == i - 1) {
                carry[g] = zp;
            } else {
                if (b->parent > 0) add8(&zm[m->fed_slot[b->parent] * ng + g], &zp); /* Ground's is unused */
                carry[g] = zero;
            }
        }
    }
    /* base to tip: the accelerations and udot = D^-1 eps - G^T A_parent */
    mt_sv8 prev[ABA_GROUPS];
    for (int g = 0; g < ng; ++g) prev[g] = zero;
    for (int i = 1; i < m->nb; ++i) {
        const mt_node *b = &m->nodes[i];
        const double *Dinv = abi.Dinv + b->d0;
        for (int g = 0; g < ng; ++g) {
            const mt_sv8 *AP = b->parent == i - 1 ? &prev[g] : b->parent > 0 ? &am[m->fed_slot[b->parent] * ng + g] : &zero;
            mt_sv8 Ai = *AP;
            shift_motion8(&Ai, pos[i].r_PB);
            double *X0 = X + (size_t)(LANES * g);
            dvec8 e[MBK_MOBILIZER_MAX_U];
            for (int j = 0; j < b->nu; ++j) e[j] = load8(X0 + (size_t)(b->u0 + j) * ld);
            for (int q = 0; q < b->nu; ++q) {
                dvec8 x = -dot8(&abi.G[b->u0 + q], AP);
                for (int j = 0; j < b->nu; ++j) x += Dinv[q * b->nu + j] * e[j];
                store8(X0 + (size_t)(b->u0 + q) * ld, scale * x);
                if (b->spin) axpy3x8(Ai.w, H[b->u0 + q].w, x);
                else axpy8(&Ai, &H[b->u0 + q], x);
            }
            if (b->fed) am[m->fed_slot[i] * ng + g] = Ai;
            prev[g] = Ai;
        }
    }
}

int mt_deriv_solve(const mbk_matter *m, const mbk_state *s, double scale, double *X1, int ld1, int n1, double *X2,
                   int ld2, int n2)
{
    mt_dws ws = mt_dws_of(m, s);
    if (!m->ltdl) { /* through the articulated-body sweeps: groups of columns, then column by column */
        double *x = ws.vec + (size_t)MT_V_VAL * (size_t)ws.vlen, *y = ws.vec + (size_t)MT_V_ACC * (size_t)ws.vlen;
        mbk_spatial_vec *A = ws.sp, *z = ws.sp + m->nb;
        mt_sv8 *zm = dws_aba(m, s), *am = zm + (size_t)m->nfed * ABA_GROUPS;
        for (int which = 0; which < 2; ++which) {
            double *X = which ? X2 : X1;
            const int ld = which ? ld2 : ld1, n = which ? n2 : n1, ngrouped = X ? n / LANES * LANES : 0;
            for (int j = 0; j < ngrouped; j += ABA_GROUPS * LANES) {
                const int ng = (ngrouped - j) / LANES < ABA_GROUPS ? (ngrouped - j) / LANES : ABA_GROUPS;
                aba_columns(m, s, X + j, (size_t)ld, ng, scale, zm, am);
            }
            for (int j = ngrouped; X && j < n; ++j) {
                for (int i = 0; i < m->nu; ++i) x[i] = X[(size_t)i * (size_t)ld + (size_t)j];
                mt_aba_solve(m, s, x, NULL, false, A, z, y);
                for (int i = 0; i < m->nu; ++i) X[(size_t)i * (size_t)ld + (size_t)j] = scale * y[i];
            }
        }
        return MBK_OK;
    }
    double *L, *LD, *Dsc, *Y;
    int rc = factor_for_solve(m, s, &ws, scale, &L, &LD, &Dsc, &Y);
    if (rc < 0) return rc;
    /* [X1 X2] in one block in the work space when it fits, else the whole vectors of 8
       columns of each where they are and the columns left over in the work space */
    double zero = 0.0;
    if (!X1) X1 = &zero, n1 = 0;
    if (!X2) X2 = &zero, n2 = 0;
    const bool one = n1 + n2 <= block_width(m);
    /* each array: h columns before its whole vectors (to align them), then v in vectors */
    const int h1 = one ? 0 : align_head(X1, (size_t)ld1, n1), h2 = one ? 0 : align_head(X2, (size_t)ld2, n2);
    const int v1 = one ? 0 : (n1 - h1) / 8 * 8, v2 = one ? 0 : (n2 - h2) / 8 * 8;
    const mt_cols_left all[4] = {{X1, (size_t)ld1, h1},
                                 {X1 + h1 + v1, (size_t)ld1, n1 - h1 - v1},
                                 {X2, (size_t)ld2, h2},
                                 {X2 + h2 + v2, (size_t)ld2, n2 - h2 - v2}};
    mt_cols_left left[4];
    int nleft = 0; /* the ranges with columns in them: the copies go row by row through them */
    for (int k = 0; k < 4; ++k)
        if (all[k].w > 0) left[nleft++] = all[k];
    const int nv = (n1 - v1 + n2 - v2 + 7) / 8;
    if (!one) {
        /* a row pulls in the block's rows of every u above it: keep those in the first
           level of cache (about 40 KB) */
        int depth = 1;
        for (int k = 0; k < m->nu; ++k) depth = row_len(m, k) > depth ? row_len(m, k) : depth;
        int nvmax = SOLVE_L1 / (64 * depth);
        nvmax = nvmax < 1 ? 1 : nvmax > SOLVE_W / 8 ? SOLVE_W / 8 : nvmax;
        solve_in_place(m, X1 + h1, (size_t)ld1, v1, nvmax, LD, Dsc, L);
        solve_in_place(m, X2 + h2, (size_t)ld2, v2, nvmax, LD, Dsc, L);
    }
    if (nv == 0) return MBK_OK;
    block_copy(m->nu, left, nleft, Y, 8 * nv, false);
    BLOCK_SOLVE[nv](m, Y, (size_t)(8 * nv), LD, Dsc, L);
    block_copy(m->nu, left, nleft, Y, 8 * nv, true);
    return MBK_OK;
}
