/* The matter subsystem: mobilized-body tree, kinematics and O(n) dynamics.
 *
 * Everything is computed in Ground, about body origins: V_GB and A_GB are the
 * velocity and acceleration of B's origin, inertias are about
 * B's origin, forces are (moment about B's origin, force). Bodies are stored
 * in topological order (parent index < child index), so base-to-tip sweeps
 * run forwards and tip-to-base sweeps backwards over one array. */
#include <float.h>
#include <math.h>
#include <string.h>

#include "mbk/alloc.h"
#include "mbk/matter.h"
#include "mbk/status.h"

#include "matter_impl.h"
#include "system_impl.h"

/* ------------------------------------------------------------------ */
/* Checks shared by the public readers                                  */
/* ------------------------------------------------------------------ */

/* MBK_OK if (m, s) are usable and matter is realized to `stage`. */
int mt_need(const mbk_matter *m, const mbk_state *s, mbk_stage stage, const char *fn)
{
    /* the common case in a few loads: a State of this topology, far enough (as below) */
    if (m && sys_state_current(m->sys, s) && st_sub_of(s, m->sub)->stage >= (int)stage) return MBK_OK;
    if (!m) return mbk_set_error(MBK_EINVAL, "%s: matter is NULL", fn);
    int rc = mbk_system_check_state(m->sys, s);
    if (rc < 0) return rc;
    mbk_stage have = (mbk_stage)st_sub_of(s, m->sub)->stage; /* s is checked: read it directly */
    if (have < stage)
        return mbk_set_error(MBK_ESTAGE, "%s: matter is realized only to %s; realize to %s first",
                             fn, mbk_stage_name(have), mbk_stage_name(stage));
    return MBK_OK;
}

int mt_need_finite(const double *v, int n, const char *fn, const char *name)
{
    int k = mbk_find_nonfinite(v, n);
    if (k < 0) return MBK_OK;
    return mbk_set_error(MBK_ENOTFINITE, "%s: %s[%d] is %g; give finite numbers (nothing was computed)", fn, name,
                         k, v[k]);
}

int mt_need_body(const mbk_matter *m, int body, const char *fn)
{
    if (body < 0 || body >= m->nb)
        return mbk_set_error(MBK_EINVAL, "%s: body %d is out of range; there are %d (Ground = 0)",
                             fn, body, m->nb);
    return MBK_OK;
}

/* ------------------------------------------------------------------ */
/* Building the tree                                                    */
/* ------------------------------------------------------------------ */

static int check_mobilizer(const mbk_mobilizer *mob)
{
    const mbk_mobilizer_ops *o = mob->ops;
    if (!o || !o->calc_X_FM)
        return mbk_set_error(MBK_EINVAL, "mbk_matter_add_body: mobilizer needs an ops table with calc_X_FM");
    int nq_q = mbk_mobilizer_get_nq(mob, false), nq_e = mbk_mobilizer_get_nq(mob, true);
    if (o->nu < 0 || o->nu > MBK_MOBILIZER_MAX_U || nq_q < 0 || nq_q > MBK_MOBILIZER_MAX_Q ||
        nq_e < 0 || nq_e > MBK_MOBILIZER_MAX_Q)
        return mbk_set_error(MBK_EINVAL, "mbk_matter_add_body: mobilizer '%s' has nu = %d, nq = %d/%d; "
                             "need nu <= 6 and nq <= 7", o->name ? o->name : "?", o->nu, nq_q, nq_e);
    if (o->nu > 0 && !o->calc_H_FM)
        return mbk_set_error(MBK_EINVAL, "mbk_matter_add_body: mobilizer '%s' has u but no calc_H_FM",
                             o->name ? o->name : "?");
    if ((!o->calc_qdot || !o->calc_qdotdot) && (nq_q != o->nu || nq_e != o->nu))
        return mbk_set_error(MBK_EINVAL, "mbk_matter_add_body: mobilizer '%s' has nq != nu and needs "
                             "calc_qdot and calc_qdotdot", o->name ? o->name : "?");
    return MBK_OK;
}

static int transform_ok(const mbk_transform *X)
{
    if (!X || !mbk_mat33_is_finite(X->R) || !mbk_vec3_is_finite(X->p)) return 0;
    mbk_mat33 E = mbk_mat33_sub(mbk_mat33_mul_transpose(X->R, X->R), mbk_mat33_identity());
    return mbk_mat33_max_abs(E) < 1e-10 && mbk_mat33_det(X->R) > 0;
}

static int add_body_checked(mbk_matter *m, int parent, const mbk_transform *X_PF,
                            const mbk_mass_props *body, const mbk_transform *X_BM,
                            const mbk_mobilizer *mob, bool realizable);

/* The sweeps' packed copy of a body's hot fields. */
static void set_node(mt_node *n, const mt_body *b)
{
    memset(n, 0, sizeof *n);
    n->parent = b->parent;
    n->nu = b->nu;
    n->u0 = b->u0;
    n->d0 = b->d0;
    n->pin_slot = b->pin_slot;
    n->pin = b->pin;
    n->spin = b->spin;
    n->mass = b->mass;
}

/* Exactly the identity: such frames are composed as plain translations. */
static bool is_identity_rotation(const mbk_mat33 *R)
{
    for (int r = 0; r < 3; ++r)
        for (int c = 0; c < 3; ++c)
            if (R->m[r][c] != (r == c ? 1.0 : 0.0)) return false;
    return true;
}

/* Mass properties a body can have, with a message naming what is wrong (MBK_EINVAL). */
static int check_mass_props(const mbk_mass_props *body, bool realizable, const char *fn)
{
    if (!body) return mbk_set_error(MBK_EINVAL, "%s: the mass properties are NULL", fn);
    const mbk_mat33 *I = &body->inertia;
    if (!isfinite(body->mass) || !(body->mass >= 0))
        return mbk_set_error(MBK_EINVAL, "%s: mass %g kg; give a finite mass >= 0", fn, body->mass);
    if (!mbk_vec3_is_finite(body->com) || !mbk_mat33_is_finite(*I))
        return mbk_set_error(MBK_EINVAL, "%s: the centre of mass and the inertia must be finite", fn);
    double Imax = mbk_mat33_max_abs(*I), c2 = mbk_vec3_norm2(body->com);
    if (body->mass > MBK_MASS_PROPS_MAX || Imax > MBK_MASS_PROPS_MAX || !(body->mass * c2 <= MBK_MASS_PROPS_MAX))
        return mbk_set_error(MBK_EINVAL, "%s: the mass properties are too large to check and simulate: mass %g kg, "
                             "largest inertia entry %g kg m^2, inertia about the body origin up to %g kg m^2; the "
                             "limit for each is %g (MBK_MASS_PROPS_MAX), beyond which the products of masses, "
                             "inertias and distances overflow. Use larger units (tonnes, km) to bring them down",
                             fn, body->mass, Imax, Imax + body->mass * c2, MBK_MASS_PROPS_MAX);
    if (!mbk_mat33_is_symmetric(*I))
        return mbk_set_error(MBK_EINVAL, "%s: the inertia is not symmetric (I[0][1] = %g, I[1][0] = %g, "
                             "I[0][2] = %g, I[2][0] = %g, I[1][2] = %g, I[2][1] = %g)", fn, I->m[0][1], I->m[1][0],
                             I->m[0][2], I->m[2][0], I->m[1][2], I->m[2][1]);
    if (!mbk_mat33_is_psd(*I))
        return mbk_set_error(MBK_EINVAL, "%s: the inertia is not positive semidefinite (a moment or a minor is "
                             "negative beyond round-off); give it about the centre of mass, with moments >= 0", fn);
    if (realizable && !mbk_mass_props_is_valid(*body))
        return mbk_set_error(MBK_EINVAL, "%s: the principal moments of inertia break the triangle inequality "
                             "(one is larger than the sum of the other two): no rigid body has this inertia", fn);
    return MBK_OK;
}

/* The mobilizer's impl is ours from the call on, so a refused body frees it. */
static int refuse_body(mbk_mobilizer *mob, int status)
{
    if (mob->ops && mob->ops->destroy && mob->impl) mob->ops->destroy(mob->impl);
    return status;
}

int mbk_matter_add_body(mbk_matter *m, int parent, const mbk_transform *X_PF,
                        const mbk_mass_props *body, const mbk_transform *X_BM,
                        mbk_mobilizer mobilizer)
{
    int rc = add_body_checked(m, parent, X_PF, body, X_BM, &mobilizer, true);
    return rc < 0 ? refuse_body(&mobilizer, rc) : rc;
}

int mbk_matter_add_body_unrealizable(mbk_matter *m, int parent, const mbk_transform *X_PF,
                                     const mbk_mass_props *body, const mbk_transform *X_BM,
                                     mbk_mobilizer mobilizer)
{
    int rc = add_body_checked(m, parent, X_PF, body, X_BM, &mobilizer, false);
    return rc < 0 ? refuse_body(&mobilizer, rc) : rc;
}

static int add_body_checked(mbk_matter *m, int parent, const mbk_transform *X_PF,
                            const mbk_mass_props *body, const mbk_transform *X_BM,
                            const mbk_mobilizer *mob, bool realizable)
{
    mbk_mobilizer mobilizer = *mob;
    const char *fn = realizable ? "mbk_matter_add_body" : "mbk_matter_add_body_unrealizable";
    if (!m) return mbk_set_error(MBK_EINVAL, "%s: matter is NULL", fn);
    if (mbk_system_is_topology_realized(m->sys))
        return mbk_set_error(MBK_ESTAGE, "%s: the System's topology is realized; call "
                             "mbk_system_invalidate_topology before adding bodies", fn);
    if (parent < 0 || parent >= m->nb)
        return mbk_set_error(MBK_EINVAL, "%s: parent %d does not exist; bodies are 0 (Ground)..%d",
                             fn, parent, m->nb - 1);
    if (!transform_ok(X_PF) || !transform_ok(X_BM))
        return mbk_set_error(MBK_EINVAL, "%s: X_PF and X_BM must be finite rigid transforms "
                             "(orthonormal R, det +1)", fn);
    int rc = check_mass_props(body, realizable, fn);
    if (rc < 0) return rc;
    rc = check_mobilizer(&mobilizer);
    if (rc < 0) return rc;
    if (m->nb == m->cap) {
        int cap = m->cap ? 2 * m->cap : 16;
        mt_body *nb = mbk_realloc(m->bodies, (size_t)cap * sizeof *nb);
        if (!nb) return MBK_ENOMEM;
        m->bodies = nb;
        mt_node *nn = mbk_realloc(m->nodes, (size_t)cap * sizeof *nn);
        if (!nn) return MBK_ENOMEM;
        m->nodes = nn;
        m->cap = cap;
    }
    mt_body *b = &m->bodies[m->nb];
    memset(b, 0, sizeof *b);
    b->parent = parent;
    b->X_PF = *X_PF;
    b->X_MB = mbk_transform_invert(*X_BM);
    mbk_mat33 I_B = mbk_mass_props_inertia_about_origin(*body);
    b->I_B = mt_sym3_of(&I_B);
    b->I_diagonal = b->I_B.xy == 0.0 && b->I_B.xz == 0.0 && b->I_B.yz == 0.0;
    b->pin = mt_mobilizer_is_pin(&mobilizer);
    b->quat = mt_mobilizer_has_quaternion(&mobilizer);
    b->spin = b->pin && b->X_MB.p.x == 0.0 && b->X_MB.p.y == 0.0 && b->X_MB.p.z == 0.0;
    b->pin_slot = b->pin ? m->npin++ : -1;
    m->nquat += b->quat;
    b->pf_turns = !is_identity_rotation(&X_PF->R);
    b->mb_turns = !is_identity_rotation(&b->X_MB.R);
    b->mass = body->mass;
    b->com = body->com;
    b->mob = mobilizer;
    b->nu = mobilizer.ops->nu;
    b->u0 = m->nu;
    b->d0 = m->nd;
    b->run0 = parent > 0 && parent == m->nb - 1 ? m->bodies[parent].run0 : m->nb;
    if (parent > 0 && parent != m->nb - 1) m->nodes[parent].fed = true;
    m->nu += b->nu;
    m->nd += b->nu * b->nu;
    set_node(&m->nodes[m->nb], b);
    return m->nb++;
}

int mbk_matter_get_num_bodies(const mbk_matter *m) { return m ? m->nb : 0; }

int mbk_matter_get_num_mobilities(const mbk_matter *m) { return m ? m->nu : 0; }

int mbk_matter_get_parent(const mbk_matter *m, int body)
{
    if (!m || mt_need_body(m, body, "mbk_matter_get_parent") < 0) return -1;
    return m->bodies[body].parent;
}

/* ---- body names (a topology property; Ground may be named too) ---- */

int mbk_matter_set_body_name(mbk_matter *m, int body, const char *name)
{
    const char *fn = "mbk_matter_set_body_name";
    if (!m) return mbk_set_error(MBK_EINVAL, "%s: matter is NULL", fn);
    int rc = mt_need_body(m, body, fn);
    if (rc < 0) return rc;
    char *copy = NULL;
    if (name) {
        size_t n = strlen(name);
        copy = mbk_malloc(n + 1);
        if (!copy) return MBK_ENOMEM;
        memcpy(copy, name, n + 1);
    }
    mbk_free(m->bodies[body].name);
    m->bodies[body].name = copy;
    return MBK_OK;
}

int mbk_matter_find_body(const mbk_matter *m, const char *name)
{
    for (int i = 0; m && name && i < m->nb; ++i)
        if (m->bodies[i].name && strcmp(m->bodies[i].name, name) == 0) return i;
    return -1;
}

/* ------------------------------------------------------------------ */
/* Realization                                                          */
/* ------------------------------------------------------------------ */

/* Each body's most q (of its two forms), the start of its dS block, and its subtree's
   size; then the tree in preorder (every subtree a contiguous range) and which
   subtrees are contiguous in body order too. */
static int tree_preorder(mbk_matter *m)
{
    mbk_free(m->pre);
    m->pre = mbk_malloc(3 * (size_t)m->nb * sizeof(int));
    if (!m->pre) return MBK_ENOMEM;
    m->order = m->pre + m->nb;
    m->size = m->order + m->nb;
    m->nqmax = m->nds = 0;
    for (int b = 0; b < m->nb; ++b) {
        mt_body *bd = &m->bodies[b];
        int a = b ? mbk_mobilizer_get_nq(&bd->mob, false) : 0, e = b ? mbk_mobilizer_get_nq(&bd->mob, true) : 0;
        bd->nqmax = a > e ? a : e;
        bd->ds0 = m->nds;
        m->nqmax += bd->nqmax;
        m->nds += bd->nqmax * bd->nu;
        m->size[b] = 1;
    }
    for (int b = m->nb - 1; b > 0; --b) m->size[m->bodies[b].parent] += m->size[b];
    /* preorder: a child starts right after its parent's earlier children's subtrees */
    int *next = m->order; /* borrowed: the next free position inside each subtree */
    m->pre[0] = 0;
    next[0] = 1;
    for (int b = 1; b < m->nb; ++b) {
        int p = m->bodies[b].parent;
        m->pre[b] = next[p];
        next[p] += m->size[b];
        next[b] = m->pre[b] + 1;
    }
    for (int b = 0; b < m->nb; ++b) m->order[m->pre[b]] = b;
    mbk_free(m->contig);
    m->contig = mbk_malloc((size_t)m->nb * sizeof *m->contig);
    int *lo = mbk_malloc(2 * (size_t)m->nb * sizeof *lo), *hi = lo ? lo + m->nb : NULL;
    if (!m->contig || !lo) {
        mbk_free(lo);
        return MBK_ENOMEM;
    }
    /* a subtree is b .. b + size - 1 exactly when pre[c] - c is the same for all its
       bodies c (its preorder positions are consecutive): that offset's least and
       greatest over each subtree, tip to base (a child comes after its parent) */
    for (int b = 0; b < m->nb; ++b) lo[b] = hi[b] = m->pre[b] - b;
    for (int b = m->nb - 1; b > 0; --b) {
        const int p = m->bodies[b].parent;
        lo[p] = lo[b] < lo[p] ? lo[b] : lo[p];
        hi[p] = hi[b] > hi[p] ? hi[b] : hi[p];
    }
    for (int b = 0; b < m->nb; ++b) m->contig[b] = lo[b] == hi[b];
    mbk_free(lo);
    return MBK_OK;
}

/* The u tree: each u hangs from the previous u of its body, or from the last u of its
   nearest ancestor that has any; L's row of u holds one entry per u above it. */
static int u_tree(mbk_matter *m)
{
    mbk_free(m->lam);
    m->lam = mbk_malloc(2 * ((size_t)m->nu + 1) * sizeof(int));
    if (!m->lam) return MBK_ENOMEM;
    m->loff = m->lam + m->nu + 1;
    /* small enough to keep in every State (at most about 1 KB per u: chains up to about
       127 bodies, any shallow tree); deeper trees use the ABA column by column instead,
       and their L is never counted to the end (a 20000-link chain's has 2e8 entries) */
    const long limit = 64L * m->nu + 64;
    long nl = 0;
    m->ltdl = false, m->nl = 0; /* until L is counted whole */
    for (int b = 1; b < m->nb; ++b) {
        const mt_body *bd = &m->bodies[b];
        int up = -1;
        for (int a = bd->parent; a > 0 && up < 0; a = m->bodies[a].parent)
            if (m->bodies[a].nu > 0) up = m->bodies[a].u0 + m->bodies[a].nu - 1;
        for (int j = 0; j < bd->nu; ++j) {
            const int i = bd->u0 + j, k = m->lam[i] = j ? i - 1 : up;
            m->loff[i] = (int)nl;
            /* a u's depth is one more than the u it hangs from (its row, k's, is done: k < i) */
            nl += k < 0 ? 0 : 1 + m->loff[k + 1] - m->loff[k];
            if (nl > limit) return MBK_OK; /* too deep: the rest is never read */
        }
    }
    m->ltdl = true, m->nl = (int)nl;
    return MBK_OK;
}

/* L's entries indexed by rows (lanc: the u above each u) and by columns (ldoff, ldrow:
   the u below each u; lcol: where each row entry sits in that order). */
static int l_index(mbk_matter *m)
{
    mbk_free(m->lanc);
    m->lanc = m->ldoff = m->ldrow = m->lcol = NULL;
    if (!m->ltdl) return MBK_OK; /* M^-1 goes through the ABA: no L */
    m->lanc = mbk_malloc((3 * (size_t)m->nl + (size_t)m->nu + 2) * sizeof(int));
    if (!m->lanc) return MBK_ENOMEM;
    m->ldoff = m->lanc + m->nl;
    m->ldrow = m->ldoff + m->nu + 1;
    m->lcol = m->ldrow + m->nl;
    memset(m->ldoff, 0, ((size_t)m->nu + 1) * sizeof(int));
    for (int k = 0; k < m->nu; ++k) {
        int p = m->loff[k];
        for (int i = m->lam[k]; i >= 0; i = m->lam[i]) {
            m->lanc[p++] = i;
            m->ldoff[i + 1]++;
        }
    }
    for (int i = 0; i < m->nu; ++i) m->ldoff[i + 1] += m->ldoff[i];
    for (int k = 0; k < m->nu; ++k) {
        int p = m->loff[k];
        for (int i = m->lam[k]; i >= 0; i = m->lam[i], ++p) {
            int t = m->ldoff[i]++;
            m->ldrow[t] = k;
            m->lcol[p] = t;
        }
    }
    for (int i = m->nu; i > 0; --i) m->ldoff[i] = m->ldoff[i - 1];
    m->ldoff[0] = 0;
    return MBK_OK;
}

/* What the derivative sweeps need of the tree: the preorder, the u tree and L's index. */
static int derivative_topology(mbk_matter *m)
{
    int rc = tree_preorder(m);
    if (rc == MBK_OK) rc = u_tree(m);
    if (rc == MBK_OK) rc = l_index(m);
    return rc;
}

static int mt_topology(void *impl, const mbk_subsystem_ctx *c, mbk_state *s)
{
    mbk_matter *m = impl;
    int k = mbk_subsystem_ctx_get_index(c);
    const bool off = false;
    m->sub = k;
    m->euler_var = mbk_state_allocate_discrete(s, k, MBK_STAGE_MODEL, &mbk_value_bool, &off);
    if (mbk_state_allocate_u(s, k, m->nu, NULL) < 0 || m->euler_var < 0) return -1;
    /* mass properties are Instance-stage in the State (as in Simbody), starting as given */
    const mt_mass_ref none = {NULL, 0};
    m->mass_var = mbk_state_allocate_discrete(s, k, MBK_STAGE_INSTANCE, &mt_value_mass_ref, &none);
    if (m->mass_var < 0) return -1;
    /* Sizes are fixed at Topology (nq is at most 7 per body), so every entry is allocated now. */
    const struct { int dep, by; size_t bytes; } spec[NUM_CACHE] = {
        [C_QLAYOUT] = {MBK_STAGE_MODEL, MBK_STAGE_MODEL, (2 * (size_t)m->nb + (size_t)m->npin + 2) * sizeof(int)},
        /* sines, then cosines, of the Pin angles */
        [C_TRIG] = {MBK_STAGE_POSITION, MBK_STAGE_POSITION, (2 * (size_t)m->npin + 1) * sizeof(double)},
        [C_QN] = {MBK_STAGE_POSITION, MBK_STAGE_POSITION, (size_t)(MBK_MOBILIZER_MAX_Q * m->nb) * sizeof(double)},
        [C_POS] = {MBK_STAGE_POSITION, MBK_STAGE_POSITION, (size_t)m->nb * (sizeof(mt_pos) + sizeof(double))},
        [C_JOINT] = {MBK_STAGE_POSITION, MBK_STAGE_POSITION, (size_t)m->nb * sizeof(mt_joint_frame)},
        [C_H] = {MBK_STAGE_POSITION, MBK_STAGE_POSITION, (size_t)(m->nu + 1) * sizeof(mbk_spatial_vec)},
        [C_VEL] = {MBK_STAGE_VELOCITY, MBK_STAGE_VELOCITY, (size_t)m->nb * sizeof(mt_vel)},
        [C_ABI] = {MBK_STAGE_POSITION, MBK_STAGE_INFINITY, (size_t)m->nb * sizeof(mt_inertia) +
                   (size_t)m->nu * sizeof(mbk_spatial_vec) + (size_t)(m->nd + 1) * sizeof(double)},
        [C_FORCES] = {MBK_STAGE_DYNAMICS, MBK_STAGE_DYNAMICS, forces_bytes(m)},
        [C_ACC] = {MBK_STAGE_ACCELERATION, MBK_STAGE_ACCELERATION, 2 * (size_t)m->nb * sizeof(mbk_spatial_vec)},
        /* work space of the operators: never valid, only written and read within one call */
        [C_SCRATCH] = {MBK_STAGE_TOPOLOGY, MBK_STAGE_INFINITY, 2 * (size_t)m->nb * sizeof(mbk_spatial_vec)},
        /* composite inertias and H about Ground's origin (mass matrix), or the
           derivatives' work space: whichever is larger */
        [C_SCRATCH_MAT] = {MBK_STAGE_TOPOLOGY, MBK_STAGE_INFINITY, 0},
    };
    /* the bodies whose tip-to-base sums arrive through memory, and each one's place */
    mbk_free(m->fed);
    m->fed = mbk_malloc(2 * (size_t)m->nb * sizeof *m->fed);
    if (!m->fed) return MBK_ENOMEM;
    m->fed_slot = m->fed + m->nb;
    m->nfed = 0;
    for (int i = 0; i < m->nb; ++i) {
        m->fed_slot[i] = i > 0 && m->nodes[i].fed ? m->nfed : -1;
        if (m->fed_slot[i] >= 0) m->fed[m->nfed++] = i;
    }
    if (derivative_topology(m) < 0) return MBK_ENOMEM;
    size_t mass_bytes = (size_t)m->nb * sizeof(mt_inertia) + (size_t)(m->nu + 1) * sizeof(mbk_spatial_vec);
    size_t dws_bytes = mt_dws_bytes(m);
    for (int i = 0; i < NUM_CACHE; ++i) {
        size_t bytes = i == C_SCRATCH_MAT ? (mass_bytes > dws_bytes ? mass_bytes : dws_bytes) : spec[i].bytes;
        mbk_value_type t = mbk_value_bytes(bytes, 64);
        const bool scratch = i == C_SCRATCH || i == C_SCRATCH_MAT; /* not carried by State copies */
        m->cache[i] = scratch ? mbk_state_allocate_scratch(s, k, bytes, 64)
                              : mbk_state_allocate_cache(s, k, (mbk_stage)spec[i].dep, (mbk_stage)spec[i].by, &t, NULL);
        if (m->cache[i] < 0) return -1;
    }
    return m->con_hooks && m->con_hooks->topology(m, s) < 0 ? -1 : 0;
}

/* q depend on the Euler choice: allocate them at Model and record each body's slice. */
static int mt_model(void *impl, const mbk_subsystem_ctx *c, mbk_state *s)
{
    const mbk_matter *m = impl;
    bool euler = use_euler(m, s);
    int *lay = qlayout(m, s), nq = 0;
    for (int b = 0; b < m->nb; ++b) {
        lay[2 * b] = nq;
        lay[2 * b + 1] = b ? mbk_mobilizer_get_nq(&m->bodies[b].mob, euler) : 0;
        nq += lay[2 * b + 1];
        if (m->bodies[b].pin) lay[2 * m->nb + m->bodies[b].pin_slot] = lay[2 * b];
    }
    lay[2 * m->nb + m->npin] = euler;
    lay[2 * m->nb + m->npin + 1] = 0; /* mass properties: set at Instance */
    double *q0 = mbk_calloc((size_t)(nq + 1), sizeof(double));
    if (!q0) return MBK_ENOMEM;
    for (int b = 1; b < m->nb; ++b) {
        const mbk_mobilizer *mob = &m->bodies[b].mob;
        if (mob->ops->default_q) mob->ops->default_q(mob->impl, euler, q0 + lay[2 * b]);
    }
    int rc = mbk_state_allocate_q(s, mbk_subsystem_ctx_get_index(c), nq, q0);
    mbk_free(q0);
    return rc < 0 ? rc : 0;
}

/* Constraint error slots for the enabled constraints. */
static int mt_instance(void *impl, const mbk_subsystem_ctx *c, mbk_state *s)
{
    (void)c;
    const mbk_matter *m = impl;
    /* where Position finds whether this State has mass properties of its own */
    const mt_mass_ref *r = mbk_state_get_discrete(s, m->sub, m->mass_var);
    if (!r) return -1;
    if (r->lost)
        return mbk_set_error(MBK_ENOMEM, "matter: copying this State could not allocate its mass properties; "
                             "set them again");
    qlayout(m, s)[2 * m->nb + m->npin + 1] = r->table != NULL;
    return m->con_hooks ? m->con_hooks->instance(m, s) : 0;
}

static int mt_kinetic(void *impl, const mbk_subsystem_ctx *c, const mbk_state *s, double *ke)
{
    (void)c;
    double e = 0;
    int rc = mbk_matter_calc_kinetic_energy(impl, s, &e);
    *ke += e;
    return rc < 0 ? rc : 0;
}

/* Projection: quaternions back on unit length, then q and u onto the constraints. */
static int mt_project(void *impl, const mbk_subsystem_ctx *c, mbk_state *s, double tol)
{
    (void)c;
    const mbk_matter *m = impl;
    if (mbk_matter_normalize_quaternions(m, s) < 0) return mbk_last_status();
    return m->con_hooks ? m->con_hooks->project(m, s, tol) : 0;
}

static void mt_destroy(void *impl)
{
    mbk_matter *m = impl;
    for (int i = 1; i < m->nb; ++i)
        if (m->bodies[i].mob.ops->destroy) m->bodies[i].mob.ops->destroy(m->bodies[i].mob.impl);
    for (int i = 0; i < m->nb; ++i) mbk_free(m->bodies[i].name);
    if (m->con_hooks) m->con_hooks->destroy(m);
    mbk_free(m->fed);
    mbk_free(m->pre);
    mbk_free(m->lam);
    mbk_free(m->lanc);
    mbk_free(m->contig);
    mbk_free(m->nodes);
    mbk_free(m->bodies);
    mbk_free(m);
}

static const mbk_subsystem_ops matter_ops = {
    .name = "matter",
    .realize_topology = mt_topology,
    .realize_model = mt_model,
    .realize_instance = mt_instance,
    .realize_position = mt_realize_position,
    .realize_velocity = mt_realize_velocity,
    .realize_dynamics = mt_realize_dynamics,
    .realize_acceleration = mt_realize_acceleration,
    .calc_kinetic_energy = mt_kinetic,
    .project = mt_project,
    .destroy = mt_destroy,
};

/* ------------------------------------------------------------------ */
/* Multibody System                                                     */
/* ------------------------------------------------------------------ */

int mt_add_matter(mbk_system *sys)
{
    mbk_matter *m = mbk_calloc(1, sizeof *m);
    if (!m) return MBK_ENOMEM;
    m->sys = sys;
    m->bodies = mbk_calloc(16, sizeof *m->bodies);
    if (!m->bodies) {
        mbk_free(m);
        return MBK_ENOMEM;
    }
    m->nodes = mbk_calloc(16, sizeof *m->nodes);
    if (!m->nodes) {
        mbk_free(m->bodies);
        mbk_free(m);
        return MBK_ENOMEM;
    }
    m->cap = 16;
    m->nb = 1;
    m->bodies[0].parent = -1;
    m->bodies[0].mob = mbk_mobilizer_weld();
    m->bodies[0].X_PF = m->bodies[0].X_MB = mbk_transform_identity();
    set_node(&m->nodes[0], &m->bodies[0]);
    int k = mbk_system_add_subsystem(sys, &matter_ops, m);
    if (k < 0) {
        mbk_free(m->nodes);
        mbk_free(m->bodies);
        mbk_free(m);
    }
    return k;
}

mbk_matter *mbk_multibody_upd_matter(mbk_system *sys)
{
    int k = mbk_system_find_subsystem(sys, &matter_ops);
    return k < 0 ? NULL : mbk_system_upd_subsystem_impl(sys, k);
}

const mbk_matter *mbk_multibody_get_matter(const mbk_system *sys)
{
    /* mbk_multibody_create makes matter the first subsystem: look there first */
    if (sys && sys->nsub > 0 && sys->subs[0]->ops_source == &matter_ops) return sys->subs[0]->impl;
    int k = mbk_system_find_subsystem(sys, &matter_ops);
    return k < 0 ? NULL : mbk_system_get_subsystem_impl(sys, k);
}

/* Force accumulators; `which` 0 body forces, 1 mobility forces. */
static void *forces_of(const mbk_system *sys, const mbk_state *s, int which, bool for_read,
                       const char *fn)
{
    const mbk_matter *m = mbk_multibody_get_matter(sys);
    if (!m) {
        mbk_set_error(MBK_EINVAL, "system has no matter subsystem; create it with mbk_multibody_create");
        return NULL;
    }
    if (mt_need(m, s, for_read ? MBK_STAGE_DYNAMICS : MBK_STAGE_VELOCITY, fn) < 0) return NULL;
    mbk_spatial_vec *F = mt_cache(m, s, C_FORCES);
    /* whoever writes them may write anything: the operators scan them again */
    if (!for_read) *mt_forces_checked(m, F) = 0.0;
    return which ? (void *)mt_mobility_forces(F, m->nb) : (void *)F;
}

const mbk_spatial_vec *mbk_multibody_get_body_forces(const mbk_system *sys, const mbk_state *s) { return forces_of(sys, s, 0, true, "mbk_multibody_get_body_forces"); }
mbk_spatial_vec *mbk_multibody_upd_body_forces(const mbk_system *sys, const mbk_state *s) { return forces_of(sys, s, 0, false, "mbk_multibody_upd_body_forces"); }
const double *mbk_multibody_get_mobility_forces(const mbk_system *sys, const mbk_state *s) { return forces_of(sys, s, 1, true, "mbk_multibody_get_mobility_forces"); }
double *mbk_multibody_upd_mobility_forces(const mbk_system *sys, const mbk_state *s) { return forces_of(sys, s, 1, false, "mbk_multibody_upd_mobility_forces"); }

/* ------------------------------------------------------------------ */
/* Readers and operators                                                */
/* ------------------------------------------------------------------ */

int mbk_matter_set_use_euler_angles(const mbk_matter *m, mbk_state *s, bool on)
{
    if (!m) return mbk_set_error(MBK_EINVAL, "mbk_matter_set_use_euler_angles: matter is NULL");
    int rc = mbk_system_check_state(m->sys, s);
    if (rc < 0) return rc;
    return mbk_state_set_discrete(s, m->sub, m->euler_var, &mbk_value_bool, &on);
}

bool mbk_matter_get_use_euler_angles(const mbk_matter *m, const mbk_state *s)
{
    return m && mbk_system_check_state(m->sys, s) == MBK_OK && use_euler(m, s);
}

/* ---- per-State mass properties (Instance stage, as in Simbody) ---- */

static mt_mass_table *mass_table_dup(const mt_mass_table *t)
{
    size_t bytes = sizeof *t + (size_t)t->nb * sizeof t->body[0];
    mt_mass_table *c = mbk_malloc(bytes);
    if (c) memcpy(c, t, bytes);
    return c;
}

static void mass_ref_copy(void *dst, const void *src)
{
    const mt_mass_ref *from = src;
    mt_mass_ref *to = dst;
    to->table = from->table ? mass_table_dup(from->table) : NULL;
    to->lost = from->lost || (from->table && !to->table);
}

static void mass_ref_destroy(void *value)
{
    mt_mass_ref *r = value;
    mbk_free(r->table);
    r->table = NULL;
}

/* Checkpoints: the table's bytes (none when the State keeps the bodies' own values). */
static int mass_ref_serialize(const void *value, void *buf, size_t capacity, size_t *size)
{
    const mt_mass_table *t = ((const mt_mass_ref *)value)->table;
    if (((const mt_mass_ref *)value)->lost) return -1;
    *size = t ? sizeof *t + (size_t)t->nb * sizeof t->body[0] : 0;
    if (buf && t && capacity >= *size) memcpy(buf, t, *size);
    return 0;
}

static int mass_ref_deserialize(void *dst, const void *buf, size_t size)
{
    mt_mass_ref *r = dst;
    r->table = NULL;
    r->lost = 0;
    if (size == 0) return 0;
    const mt_mass_table *t = buf;
    if (size < sizeof *t || t->nb < 0 || size != sizeof *t + (size_t)t->nb * sizeof t->body[0]) return -1;
    r->table = mass_table_dup(t);
    return r->table ? 0 : -1;
}

const mbk_value_type mt_value_mass_ref = {"matter mass properties", sizeof(mt_mass_ref), _Alignof(mt_mass_ref),
                                          mass_ref_copy, mass_ref_destroy, mass_ref_serialize,
                                          mass_ref_deserialize};

/* A body's mass properties as the sweeps store them. */
static mt_massprops body_record(const mt_body *b)
{
    mt_massprops r = {b->mass, b->com, b->I_B, b->I_diagonal};
    return r;
}

static bool same_record(const mt_massprops *a, const mt_massprops *b)
{
    return a->mass == b->mass && a->com.x == b->com.x && a->com.y == b->com.y && a->com.z == b->com.z &&
           a->I_B.xx == b->I_B.xx && a->I_B.yy == b->I_B.yy && a->I_B.zz == b->I_B.zz && a->I_B.xy == b->I_B.xy &&
           a->I_B.xz == b->I_B.xz && a->I_B.yz == b->I_B.yz;
}

/* The record of body `body` in this State (the body's own without a table). */
static mt_massprops state_record(const mbk_matter *m, const mt_mass_ref *r, int body)
{
    return r->table ? r->table->body[body] : body_record(&m->bodies[body]);
}

int mbk_matter_set_body_mass_props(const mbk_matter *m, mbk_state *s, int body, const mbk_mass_props *mp)
{
    const char *fn = "mbk_matter_set_body_mass_props";
    if (!m) return mbk_set_error(MBK_EINVAL, "%s: matter is NULL", fn);
    int rc = mbk_system_check_state(m->sys, s);
    if (rc < 0 || (rc = mt_need_body(m, body, fn)) < 0) return rc;
    if (body == 0) return mbk_set_error(MBK_EINVAL, "%s: Ground (body 0) has no mass properties to set", fn);
    if (!mp || !mbk_mass_props_is_valid(*mp))
        return mbk_set_error(MBK_EINVAL, "%s: body %d: mass properties must be finite with mass >= 0 and a "
                             "symmetric, positive semi-definite inertia obeying the triangle inequality", fn, body);
    mbk_mat33 I_o = mbk_mass_props_inertia_about_origin(*mp);
    mt_massprops rec = {mp->mass, mp->com, mt_sym3_of(&I_o), 0};
    rec.diagonal = rec.I_B.xy == 0.0 && rec.I_B.xz == 0.0 && rec.I_B.yz == 0.0;
    const mt_mass_ref *old = mbk_state_get_discrete(s, m->sub, m->mass_var);
    if (!old) return mbk_last_status();
    if (old->table && same_record(&old->table->body[body], &rec)) return MBK_OK; /* keep the stage */
    mt_mass_table *t = old->table;
    if (!t) { /* the first change: this State gets a table of its own */
        t = mbk_malloc(sizeof *t + (size_t)m->nb * sizeof t->body[0]);
        if (!t) return mbk_set_error(MBK_ENOMEM, "%s: out of memory", fn);
        t->nb = m->nb;
        t->pad = 0;
        for (int i = 0; i < m->nb; ++i) t->body[i] = body_record(&m->bodies[i]);
    }
    mt_mass_ref *r = mbk_state_upd_discrete(s, m->sub, m->mass_var); /* invalidates Instance */
    if (!r) {
        if (t != old->table) mbk_free(t);
        return mbk_last_status();
    }
    r->table = t;
    t->body[body] = rec;
    return MBK_OK;
}

int mbk_matter_get_state_body_mass_props(const mbk_matter *m, const mbk_state *s, int body, mbk_mass_props *mp)
{
    const char *fn = "mbk_matter_get_state_body_mass_props";
    if (!m || !mp) return mbk_set_error(MBK_EINVAL, "%s: matter and output must not be NULL", fn);
    int rc = mbk_system_check_state(m->sys, s);
    if (rc < 0 || (rc = mt_need_body(m, body, fn)) < 0) return rc;
    const mt_mass_ref *r = mbk_state_get_discrete(s, m->sub, m->mass_var);
    if (!r) return mbk_last_status();
    mt_massprops rec = state_record(m, r, body);
    *mp = mbk_mass_props_from_origin(rec.mass, rec.com, mt_sym3_full(&rec.I_B));
    return MBK_OK;
}

int mbk_matter_calc_state_total_mass(const mbk_matter *m, const mbk_state *s, double *mass)
{
    const char *fn = "mbk_matter_calc_state_total_mass";
    if (!m || !mass) return mbk_set_error(MBK_EINVAL, "%s: matter and output must not be NULL", fn);
    int rc = mbk_system_check_state(m->sys, s);
    if (rc < 0) return rc;
    const mt_mass_ref *r = mbk_state_get_discrete(s, m->sub, m->mass_var);
    if (!r) return mbk_last_status();
    double total = 0.0;
    for (int i = 1; i < m->nb; ++i) total += state_record(m, r, i).mass;
    *mass = total;
    return MBK_OK;
}

/* which: 0 nq, 1 nu, 2 q start, 3 u start. */
static int body_size(const mbk_matter *m, const mbk_state *s, int body, int which, const char *fn)
{
    int rc = mt_need(m, s, MBK_STAGE_MODEL, fn);
    if (rc < 0 || (rc = mt_need_body(m, body, fn)) < 0) return rc;
    const int *lay = qlayout(m, s);
    const int v[4] = {lay[2 * body + 1], m->bodies[body].nu, lay[2 * body], m->bodies[body].u0};
    return v[which];
}

int mbk_matter_get_body_num_q(const mbk_matter *m, const mbk_state *s, int b) { return body_size(m, s, b, 0, "mbk_matter_get_body_num_q"); }
int mbk_matter_get_body_num_u(const mbk_matter *m, const mbk_state *s, int b) { return body_size(m, s, b, 1, "mbk_matter_get_body_num_u"); }
int mbk_matter_get_body_q_start(const mbk_matter *m, const mbk_state *s, int b) { return body_size(m, s, b, 2, "mbk_matter_get_body_q_start"); }
int mbk_matter_get_body_u_start(const mbk_matter *m, const mbk_state *s, int b) { return body_size(m, s, b, 3, "mbk_matter_get_body_u_start"); }

int mbk_matter_get_body_transform(const mbk_matter *m, const mbk_state *s, int body, mbk_transform *X_GB)
{
    const char *fn = "mbk_matter_get_body_transform";
    int rc = mt_need(m, s, MBK_STAGE_POSITION, fn);
    if (rc < 0 || (rc = mt_need_body(m, body, fn)) < 0) return rc;
    if (!X_GB) return mbk_set_error(MBK_EINVAL, "%s: output is NULL", fn);
    *X_GB = ((const mt_pos *)mt_cache(m, s, C_POS))[body].X_GB;
    return MBK_OK;
}

int mbk_matter_get_body_velocity(const mbk_matter *m, const mbk_state *s, int body, mbk_spatial_vec *V_GB)
{
    const char *fn = "mbk_matter_get_body_velocity";
    int rc = mt_need(m, s, MBK_STAGE_VELOCITY, fn);
    if (rc < 0 || (rc = mt_need_body(m, body, fn)) < 0) return rc;
    if (!V_GB) return mbk_set_error(MBK_EINVAL, "%s: output is NULL", fn);
    *V_GB = ((const mt_vel *)mt_cache(m, s, C_VEL))[body].V_GB;
    return MBK_OK;
}

int mbk_matter_get_body_acceleration(const mbk_matter *m, const mbk_state *s, int body, mbk_spatial_vec *A_GB)
{
    const char *fn = "mbk_matter_get_body_acceleration";
    int rc = mt_need(m, s, MBK_STAGE_ACCELERATION, fn);
    if (rc < 0 || (rc = mt_need_body(m, body, fn)) < 0) return rc;
    if (!A_GB) return mbk_set_error(MBK_EINVAL, "%s: output is NULL", fn);
    *A_GB = ((const mbk_spatial_vec *)mt_cache(m, s, C_ACC))[body];
    return MBK_OK;
}

int mbk_matter_normalize_quaternions(const mbk_matter *m, mbk_state *s)
{
    const char *fn = "mbk_matter_normalize_quaternions";
    int rc = mt_need(m, s, MBK_STAGE_MODEL, fn);
    if (rc < 0) return rc;
    const int *lay = qlayout(m, s);
    bool euler = layout_euler(m, lay);
    const double *q = mbk_state_get_subsystem_q(s, m->sub);
    if ((rc = mt_check_q(m, lay, euler, q, mbk_state_get_subsystem_nq(s, m->sub), true)) < 0)
        return mbk_set_error(rc, "%s: %s", fn, mbk_last_error());
    double *w = NULL; /* writable view, taken (and Position invalidated) only if needed */
    for (int i = 1; i < m->nb; ++i) {
        const mbk_mobilizer *mob = &m->bodies[i].mob;
        int n = lay[2 * i + 1];
        if (!mob->ops->normalize_q || n == 0) continue;
        double qb[MBK_MOBILIZER_MAX_Q];
        memcpy(qb, q + lay[2 * i], (size_t)n * sizeof(double));
        mob->ops->normalize_q(mob->impl, euler, qb);
        /* Already unit to round-off: leave it (and the State's stage) alone. */
        double change = 0.0;
        for (int k = 0; k < n; ++k) change = fmax(change, fabs(qb[k] - q[lay[2 * i] + k]));
        if (change <= 4 * DBL_EPSILON) continue;
        if (!w) w = mbk_state_upd_subsystem_q(s, m->sub);
        memcpy(w + lay[2 * i], qb, (size_t)n * sizeof(double));
    }
    return MBK_OK;
}

int mbk_matter_set_body_q_to_fit_transform(const mbk_matter *m, mbk_state *s, int body, const mbk_transform *X_FM)
{
    const char *fn = "mbk_matter_set_body_q_to_fit_transform";
    int rc = mt_need(m, s, MBK_STAGE_MODEL, fn);
    if (rc < 0 || (rc = mt_need_body(m, body, fn)) < 0) return rc;
    const mbk_mobilizer *mob = &m->bodies[body].mob;
    if (!X_FM || !transform_ok(X_FM)) return mbk_set_error(MBK_EINVAL, "%s: X_FM must be a finite rigid transform", fn);
    if (mob->ops->nu == 0 && mbk_mobilizer_get_nq(mob, use_euler(m, s)) == 0) return MBK_OK;
    if (!mob->ops->set_q_to_fit_transform)
        return mbk_set_error(MBK_EINVAL, "%s: mobilizer '%s' cannot fit a transform", fn, mob->ops->name ? mob->ops->name : "?");
    double qb[MBK_MOBILIZER_MAX_Q];
    rc = mob->ops->set_q_to_fit_transform(mob->impl, use_euler(m, s), X_FM, qb);
    if (rc < 0) return rc;
    memcpy(mbk_state_upd_subsystem_q(s, m->sub) + qlayout(m, s)[2 * body], qb,
           (size_t)qlayout(m, s)[2 * body + 1] * sizeof(double));
    return MBK_OK;
}

int mbk_matter_set_body_u_to_fit_velocity(const mbk_matter *m, mbk_state *s, int body, const mbk_spatial_vec *V_FM)
{
    const char *fn = "mbk_matter_set_body_u_to_fit_velocity";
    int rc = mt_need(m, s, MBK_STAGE_POSITION, fn);
    if (rc < 0 || (rc = mt_need_body(m, body, fn)) < 0) return rc;
    const mbk_mobilizer *mob = &m->bodies[body].mob;
    if (!V_FM || !mbk_vec3_is_finite(V_FM->w) || !mbk_vec3_is_finite(V_FM->v))
        return mbk_set_error(MBK_EINVAL, "%s: V_FM must be finite and not NULL", fn);
    if (mob->ops->nu == 0) return MBK_OK;
    if (!mob->ops->set_u_to_fit_velocity)
        return mbk_set_error(MBK_EINVAL, "%s: mobilizer '%s' cannot fit a velocity", fn, mob->ops->name ? mob->ops->name : "?");
    double ub[MBK_MOBILIZER_MAX_U];
    const double *qn = (const double *)mt_cache(m, s, C_QN) + qlayout(m, s)[2 * body];
    rc = mob->ops->set_u_to_fit_velocity(mob->impl, use_euler(m, s), qn, V_FM, ub);
    if (rc < 0) return rc;
    memcpy(mbk_state_upd_subsystem_u(s, m->sub) + m->bodies[body].u0, ub, (size_t)m->bodies[body].nu * sizeof(double));
    return MBK_OK;
}


