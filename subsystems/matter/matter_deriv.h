/* matter_deriv.h - what matter's derivative files share (private to matter):
 * the vector types of the row sweep and the solves, the work space's header and
 * the solve's block width. The files, in the order a call runs them:
 *   matter_deriv_space.c  the work space (mt_dws) and its layout;
 *   matter_deriv_setup.c  base to tip and back: velocities, accelerations, the
 *                         columns T, w, alpha, the forces and the subtree sums;
 *   matter_deriv_sweep.c  dr/dq and dr/du row by row from those, and the Jacobians
 *                         of the pair elements (bushings, springs) into them;
 *   matter_deriv_solve.c  M^-1 on many columns: the sparse factor or the
 *                         articulated-body sweeps.
 * What they compute:
 *
 * Derivatives of the inverse dynamics, r = M udot + C(q, u) - J^T F, with
 * respect to q and u: sweeps beside the Newton-Euler recursion they
 * differentiate (mt_rnea), after Carpentier and Mansard, "Analytical
 * Derivatives of Rigid Body Dynamics Algorithms" (RSS 2018), generalized to
 * mobilizers whose H depends on q, whose q are not their u (quaternions) and
 * whose HDot is not zero. docs/derivatives.md has the derivation; in short:
 *
 * Everything is in Ground at Ground's origin (Pluecker coordinates): S_i the
 * columns of body i's H, v_i and a_i its velocity and acceleration (a_i with
 * the gravity field subtracted), Y_i its inertia, f_i = Y_i a_i + v_i x* Y_i v_i
 * and F_i the sum of f over i's subtree, so r_i = S_i^T F_i - (applied).
 *
 * Changing coordinate k of joint j moves j's subtree rigidly by the twist T
 * (X_FM's derivative in F, taken to Ground), changes j's own H by dS and its
 * velocity-product acceleration by dc. Every body i of the subtree then gets
 *     dv_i = T x v_i + w,   da_i = T x a_i + alpha + w x v_i,
 *     w = dS u_j - T x v_j,  alpha = dS udot_j + v_p x dS u_j + dc - T x a_j - w x v_j,
 * and d f_i = T x* f_i + Y_i alpha + B_i w with B_i w = Y_i (w x v_i) + w x* Y_i v_i
 * + v_i x* Y_i w. The T terms cancel against dS_i = T x S_i in every row of the
 * subtree but j's own, which leaves
 *     dr_i = S_i^T (Yc_i alpha + Bc_i w)               i below j,
 *     dr_j = S_j^T g + dS^T F_j,  dr_a = S_a^T g         a above j,
 *     g = T x* F_j + Yc_j alpha + Bc_j w,
 * with Yc, Bc the subtree sums. A u column is the same with T = 0, dS = 0,
 * w = S_jl and alpha = v_p x S_jl + dc/du_l - S_jl x v_j. Each column costs a
 * dot product per row of j's subtree and ancestors: O(n depth) in all. */
#ifndef MBK_MATTER_DERIV_H
#define MBK_MATTER_DERIV_H

#include <string.h>

#include "matter_impl.h"

/* The hot functions start on a 64-byte boundary: their loops then sit the same way in
   every build, whatever code comes before them (a different placement was seen to double
   the time of factor_block's short loops). */
#if defined(__GNUC__)
#define MT_HOT __attribute__((aligned(64)))
#else
#define MT_HOT
#endif

/* GCC's and Clang's vector extension for the sweep's rows and the solve, unless built
   with MBK_NO_VECTOR_EXTENSION (then plain loops: the same results, up to the sign of
   zeros). */
#if defined(__GNUC__) && !defined(MBK_NO_VECTOR_EXTENSION)
#define MT_VEC8 1
#else
#define MT_VEC8 0
#endif

#if MT_VEC8
/* Eight doubles as one vector (GCC's and Clang's vector extension: one 512-bit register
   where the target has them, narrower ones otherwise), for the sweep's rows and the
   solve: compilers keep a few of these in registers where they would not keep as many
   scalars. mvec8: a lane mask of the same size (all bits or none). */
typedef double dvec8 __attribute__((vector_size(64)));
typedef long long mvec8 __attribute__((vector_size(64)));
/* Only the derivative files' static functions pass or return them, so no ABI crosses a
   file: GCC's warning that such vectors are passed differently with and without AVX-512
   (in portable and sanitizer builds) does not apply. Clang has the same warning (older
   ones do not know its name). */
#ifdef __clang__
#pragma clang diagnostic ignored "-Wunknown-warning-option"
#endif
#pragma GCC diagnostic ignored "-Wpsabi"
#else
typedef double dvec8; /* without the extension: one double, one column at a time */
#endif

/* Columns a group takes in the articulated-body solve (aba_columns): the lanes of one
   vector; groups it takes at once (8: chain1000 6.0 -> 4.2 ms against 1, 4.8 with 4,
   4.4 with 16). */
enum { LANES = sizeof(dvec8) / sizeof(double), ABA_GROUPS = 8 };

/* A spatial vector of LANES columns: each component the columns' values. */
typedef struct mt_sv8 {
    dvec8 w[3], v[3];
} mt_sv8;

/* What a setup leaves for the sweeps. */
typedef struct mt_dhdr {
    int with_velocity; /* the setup took the velocities (else u = 0 throughout) */
    int numeric;       /* mobilizers it differentiated numerically */
    int has_phi;       /* some element added fixed forces (mt_deriv_add_phi) */
} mt_dhdr;

/* Columns of the right-hand side that M^-1 takes at once (mt_deriv_solve), at most. */
enum { SOLVE_W = 96 };

/* The width of the work space's block of every row (a multiple of 8): all nqmax + nu
   columns when they are at most SOLVE_W, else the 20 at most left over around whole
   groups of eight (3 before and 7 after, of each array: see mt_deriv_solve). */
static inline int block_width(const mbk_matter *m)
{
    const int n = m->nqmax + m->nu;
    return n <= SOLVE_W ? (n + 7) / 8 * 8 : 24;
}

/* The work space's header, at its start. */
static inline mt_dhdr *dws_header(const mbk_matter *m, const mbk_state *s) { return mt_cache(m, s, C_SCRATCH_MAT); }

/* x in every lane. */
static inline dvec8 splat(double x)
{
#if MT_VEC8
    return (dvec8){x, x, x, x, x, x, x, x};
#else
    return x;
#endif
}

#endif
