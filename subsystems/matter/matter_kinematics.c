/* The matter subsystem's kinematics: Position (body poses, H and inertias in
 * Ground, base to tip) and Velocity (body velocities, qdot, velocity-product
 * accelerations and gyroscopic forces). Conventions are in matter.c. */
#include <math.h>
#include <string.h>

#include "mbk/status.h"

#include "matter_impl.h"
#include "mt_trig.h"
#include "mt_v4.h"

/* X_AB X_BC; a frame that does not rotate costs only a translation. */
static inline mbk_transform compose_frame(const mbk_transform *X_AB, const mbk_transform *X_BC, bool turns)
{
    if (turns) return mbk_transform_compose(*X_AB, *X_BC);
    mbk_transform X = *X_AB;
    X.p = mbk_vec3_add(X_AB->p, mbk_mat33_mul_vec(X_AB->R, X_BC->p));
    return X;
}

/* R_GF Rz(angle) from the angle's cosine and sine: only two columns change. */
static inline mbk_mat33 turn_about_z(const mbk_mat33 *R, double c, double sn)
{
    mbk_mat33 r;
    for (int i = 0; i < 3; ++i) {
        r.m[i][0] = c * R->m[i][0] + sn * R->m[i][1];
        r.m[i][1] = c * R->m[i][1] - sn * R->m[i][0];
        r.m[i][2] = R->m[i][2];
    }
    return r;
}

/* X_GM of a body from X_GF and its mobilizer; writes the normalized q and,
   except for a Pin, H_FM. A Pin is inlined (it is most joints of most models)
   with its angle's sine and cosine from sc. */
static mbk_transform mobilizer_pose(const mt_body *b, bool euler, const mbk_transform *X_GF,
                                    const double *q, double *qn, int nq, const double sc[2],
                                    mbk_spatial_vec *H)
{
    mbk_transform X_GM;
    if (b->pin) {
        qn[0] = q[0];
        X_GM.R = turn_about_z(&X_GF->R, sc[1], sc[0]);
        X_GM.p = X_GF->p;
        return X_GM; /* H is set in G by the caller */
    }
    const mbk_mobilizer_ops *o = b->mob.ops;
    copy_small(qn, q, nq);
    if (o->normalize_q) o->normalize_q(b->mob.impl, euler, qn);
    mbk_transform X_FM;
    o->calc_X_FM(b->mob.impl, euler, qn, &X_FM);
    if (H && b->nu) o->calc_H_FM(b->mob.impl, euler, qn, H);
    return mbk_transform_compose(*X_GF, X_FM);
}

#ifdef MT_V4
/* A Pin's pose by columns (mt_v4.h), one vector per column of a rotation: the sweep takes
   three vector operations where it took nine scalar ones, with the same bits, and the
   parent's columns stay in registers along unbranched runs. Other targets take the scalar
   code below. */

/* A rotation matrix by columns. */
typedef struct mt_cols {
    mt_v4 c[3]; /* column j: (R_0j, R_1j, R_2j, unused) */
} mt_cols;

/* A pose by columns: the state carried from a body to its child. */
typedef struct mt_vpose {
    mt_cols R; /* orientation */
    mt_v4 p;   /* origin (lane 3 unused) */
    int body;  /* whose pose it is (-1: none) */
} mt_vpose;

/* R (row-major) by columns. */
static inline mt_cols cols_load(const mbk_mat33 *R)
{
    mt_cols a;
    for (int j = 0; j < 3; ++j) a.c[j] = (mt_v4){R->m[0][j], R->m[1][j], R->m[2][j], 0.0};
    return a;
}

/* A B with B row-major: column j is A_0 B_0j + A_1 B_1j + A_2 B_2j, mbk_mat33_mul's order. */
static inline mt_cols cols_mul(const mt_cols *A, const mbk_mat33 *B)
{
    mt_cols r;
    for (int j = 0; j < 3; ++j) r.c[j] = A->c[0] * B->m[0][j] + A->c[1] * B->m[1][j] + A->c[2] * B->m[2][j];
    return r;
}

/* A v in mbk_mat33_mul_vec's order. */
static inline mt_v4 cols_mul_vec(const mt_cols *A, mbk_vec3 v)
{
    return A->c[0] * v.x + A->c[1] * v.y + A->c[2] * v.z;
}

/* turn_about_z by columns: only columns 0 and 1 change. */
static inline mt_cols cols_turn(const mt_cols *R, double c, double sn)
{
    mt_cols r = {{c * R->c[0] + sn * R->c[1], c * R->c[1] - sn * R->c[0], R->c[2]}};
    return r;
}

/* Columns back to a row-major matrix: five shuffles, two vector stores and one scalar. */
static inline void cols_store(const mt_cols *a, mbk_mat33 *R)
{
    mt_v4 t0 = __builtin_shuffle(a->c[0], a->c[1], (mt_v4i){0, 4, 1, 5}); /* R00 R01 R10 R11 */
    mt_v4 t1 = __builtin_shuffle(a->c[0], a->c[1], (mt_v4i){2, 6, 2, 6}); /* R20 R21 */
    mt_v4 r0 = __builtin_shuffle(t0, a->c[2], (mt_v4i){0, 1, 4, 2});      /* R00 R01 R02 R10 */
    mt_v4 u = __builtin_shuffle(t0, a->c[2], (mt_v4i){3, 5, 3, 5});       /* R11 R12 */
    mt_v4 r1 = __builtin_shuffle(u, t1, (mt_v4i){0, 1, 4, 5});            /* R11 R12 R20 R21 */
    double *m = &R->m[0][0];
    memcpy(m, &r0, sizeof r0);
    memcpy(m + 4, &r1, sizeof r1);
    m[8] = a->c[2][2];
}

/* R S R^T for a diagonal S, by columns: entry (i, j) is t_i0 R_j0 + t_i1 R_j1 + t_i2 R_j2 with
   t_ik = R_ik S_kk, in mt_sym3_rotate_diagonal's order; column j of the products gives the
   entries (i, j), i <= j. */
static inline mt_sym3 cols_rotate_diagonal(const mt_cols *R, const mt_sym3 *S)
{
    const mt_v4 t0 = R->c[0] * S->xx, t1 = R->c[1] * S->yy, t2 = R->c[2] * S->zz;
    mt_v4 o[3];
    for (int j = 0; j < 3; ++j)
        o[j] = t0 * v4_lane(R->c[0], j) + t1 * v4_lane(R->c[1], j) + t2 * v4_lane(R->c[2], j);
    mt_sym3 r = {o[0][0], o[1][1], o[2][2], o[1][0], o[2][0], o[2][1]};
    return r;
}

/* A Pin body's Position results (pose, r_PB, c_G, I_G, H, and R_GF and p_MB_G unless it is a
   spin), as mobilizer_pose and the scalar sweep compute them, from its parent's pose; v
   carries the parent's pose by columns in, and the body's comes back. Nothing written is
   read back here: a load of part of a vector store just made would wait for the store. */
static inline mt_vpose pin_pose_vec(const mt_body *b, mt_vpose v, int i, const mt_pos *pp, const double sc[2],
                                    mt_pos *p, mt_joint_frame *jf, mbk_spatial_vec *Hb)
{
    if (v.body != b->parent) {
        v.R = cols_load(&pp->X_GB.R);
        v.p = (mt_v4){pp->X_GB.p.x, pp->X_GB.p.y, pp->X_GB.p.z, 0.0};
    }
    const mt_v4 p_P = v.p;
    mt_cols RF = b->pf_turns ? cols_mul(&v.R, &b->X_PF.R) : v.R;
    mt_v4 pF = p_P + cols_mul_vec(&v.R, b->X_PF.p);
    mt_cols RM = cols_turn(&RF, sc[1], sc[0]);
    v.R = b->mb_turns ? cols_mul(&RM, &b->X_MB.R) : RM;
    v.p = b->spin ? pF : pF + cols_mul_vec(&RM, b->X_MB.p);
    v.body = i;
    cols_store(&v.R, &p->X_GB.R);
    p->X_GB.p = v4_vec3(v.p);
    p->r_PB = v4_vec3(v.p - p_P);
    p->c_G = v4_vec3(cols_mul_vec(&v.R, b->com));
    p->I_G = b->I_diagonal ? cols_rotate_diagonal(&v.R, &b->I_B) : mt_sym3_rotate(&p->X_GB.R, &b->I_B);
    /* H: F's z axis, shifted from M's origin to B's */
    mbk_vec3 z = v4_vec3(RF.c[2]);
    if (b->spin) {
        Hb[0] = mbk_spatial_vec_make(z, mbk_vec3_zero());
        return v;
    }
    mbk_vec3 p_MB_G = v4_vec3(v.p - pF);
    cols_store(&RF, &jf->R_GF);
    jf->p_MB_G = p_MB_G;
    Hb[0] = mbk_spatial_vec_make(z, mbk_vec3_cross(z, p_MB_G));
    return v;
}
#endif

/* Sines, then cosines, of all Pin angles: one loop that vectorizes, then libm
   for the rare angles beyond mt_sincos's range. */
static void pin_sines_cosines(const mbk_matter *m, const int *pin_q, const double *q, double *sc)
{
    double *sn = sc, *cs = sc + m->npin;
    /* gathered first: a loop over contiguous angles is the one that vectorizes */
    for (int j = 0; j < m->npin; ++j) cs[j] = q[pin_q[j]];
    for (int j = 0; j < m->npin; ++j) mt_sincos(cs[j], &sn[j], &cs[j]);
    for (int j = 0; j < m->npin; ++j)
        if (fabs(q[pin_q[j]]) > MT_TRIG_MAX) {
            sn[j] = sin(q[pin_q[j]]);
            cs[j] = cos(q[pin_q[j]]);
        }
}

/* Body poses, H in Ground and spatial inertias in Ground, base to tip. */
int mt_check_q(const mbk_matter *m, const int *lay, bool euler, const double *q, int nq, bool scan_finite)
{
    int k = scan_finite ? mbk_find_nonfinite(q, nq) : -1;
    if (k >= 0) {
        int b = 1;
        while (b + 1 < m->nb && lay[2 * (b + 1)] <= k) ++b;
        return mbk_set_error(MBK_ENOTFINITE, "matter: q[%d] (coordinate %d of body %d's mobilizer '%s') is %g; "
                             "set finite coordinates (the State's q are kept as they are)", k, k - lay[2 * b], b,
                             m->bodies[b].mob.ops->name ? m->bodies[b].mob.ops->name : "custom", q[k]);
    }
    for (int b = 1; m->nquat > 0 && b < m->nb && !euler; ++b) {
        if (!m->bodies[b].quat) continue;
        const double *qb = q + lay[2 * b];
        if (!(qb[0] * qb[0] + qb[1] * qb[1] + qb[2] * qb[2] + qb[3] * qb[3] > 0))
            return mbk_set_error(MBK_EINVAL, "matter: body %d's quaternion (q[%d..%d]) is zero and gives no "
                                 "rotation; set a nonzero quaternion (1, 0, 0, 0 for none)", b, lay[2 * b],
                                 lay[2 * b] + 3);
    }
    return MBK_OK;
}

/* MBK_OK when n outputs v of body i's mobilizer (what: its pose, H, qdot, HDot u) are
   finite. q is finite by then (checked before Position), so a NaN means the joint is at
   a singular configuration or a custom mobilizer's op gave one: caught where it arises,
   rather than as a singular inertia or a NaN udot later. */
static int mobilizer_output(const mbk_matter *m, int i, const double *v, int n, const char *what)
{
    const int k = mbk_find_nonfinite(v, n);
    if (k < 0) return MBK_OK;
    const char *name = m->bodies[i].mob.ops->name;
    return mbk_set_error(MBK_ENOTFINITE, "matter: body %d's mobilizer '%s' gave a non-finite %s (entry %d is %g) at "
                         "finite q: the joint is at a singular configuration (gimbal lock of Euler angles), or "
                         "its op has a bug (a custom mobilizer's ops must give finite values wherever q is finite)",
                         i, name ? name : "custom", what, k, v[k]);
}

int mt_realize_position(void *impl, const mbk_subsystem_ctx *c, mbk_state *s)
{
    (void)c;
    const mbk_matter *m = impl;
    const int *lay = qlayout(m, s);
    bool euler = layout_euler(m, lay);
    const double *q = st_sub_y(s, m->sub, 0);
    /* the System has checked every q finite before Position (st_check_finite) */
    int rc = mt_check_q(m, lay, euler, q, st_sub_of(s, m->sub)->nq, false);
    if (rc < 0) return rc;
    double *qn = mt_cache(m, s, C_QN), *sc = mt_cache(m, s, C_TRIG);
    mt_pos *pos = mt_cache(m, s, C_POS);
    mt_joint_frame *jf = mt_cache(m, s, C_JOINT);
    mbk_spatial_vec *H = mt_cache(m, s, C_H);
    const mt_massprops *mass = mt_mass_custom(m, lay) ? mt_state_mass(m, s) : NULL; /* NULL: the bodies' own */
    double *pm = mt_pos_mass(m, pos);
    pm[0] = mass ? 1.0 : 0.0;
    pin_sines_cosines(m, lay + 2 * m->nb, q, sc);
    memset(&pos[0], 0, sizeof pos[0]);
    pos[0].X_GB = mbk_transform_identity();
#ifdef MT_V4
    mt_vpose carry = {.body = -1}; /* the pose of the body just done, by columns */
#endif
    for (int i = 1; i < m->nb; ++i) {
        const mt_body *b = &m->bodies[i];
        const mt_pos *pp = &pos[b->parent];
        mt_pos *p = &pos[i];
        mbk_spatial_vec *Hb = H + b->u0;
        const double pin_sc[2] = {b->pin ? sc[b->pin_slot] : 0.0, b->pin ? sc[m->npin + b->pin_slot] : 1.0};
#ifdef MT_V4
        if (b->pin) {
            carry = pin_pose_vec(b, carry, i, pp, pin_sc, p, &jf[i], Hb);
            qn[lay[2 * i]] = q[lay[2 * i]];
            continue;
        }
        carry.body = -1;
#endif
        mbk_transform X_GF = compose_frame(&pp->X_GB, &b->X_PF, b->pf_turns);
        mbk_transform X_GM = mobilizer_pose(b, euler, &X_GF, q + lay[2 * i], qn + lay[2 * i],
                                            lay[2 * i + 1], pin_sc, Hb);
        if (!b->pin && ((rc = mobilizer_output(m, i, &X_GM.R.m[0][0], 12, "pose (calc_X_FM)")) < 0 ||
                        (rc = mobilizer_output(m, i, &Hb[0].w.x, 6 * b->nu, "H (calc_H_FM)")) < 0))
            return rc;
        if (b->spin) { /* M's origin is B's: only the rotation, if any, to apply */
            p->X_GB.p = X_GM.p;
            p->X_GB.R = b->mb_turns ? mbk_mat33_mul(X_GM.R, b->X_MB.R) : X_GM.R;
        } else {
            p->X_GB = compose_frame(&X_GM, &b->X_MB, b->mb_turns);
        }
        p->r_PB = mbk_vec3_sub(p->X_GB.p, pp->X_GB.p);
        mbk_vec3 p_MB_G = mbk_vec3_sub(p->X_GB.p, X_GM.p);
        if (!b->spin) {
            jf[i].R_GF = X_GF.R;
            jf[i].p_MB_G = p_MB_G;
        }
        p->c_G = mbk_mat33_mul_vec(p->X_GB.R, b->com);
        p->I_G = b->I_diagonal ? mt_sym3_rotate_diagonal(&p->X_GB.R, &b->I_B) : mt_sym3_rotate(&p->X_GB.R, &b->I_B);
        /* H in G, then from M's origin to B's; a Pin's is F's z axis */
        if (b->pin) {
            mbk_vec3 z = mbk_mat33_column(X_GF.R, 2);
            Hb[0] = mbk_spatial_vec_make(z, b->spin ? mbk_vec3_zero() : mbk_vec3_cross(z, p_MB_G));
        } else {
            for (int j = 0; j < b->nu; ++j)
                Hb[j] = mbk_spatial_shift_motion(mbk_spatial_rotate(X_GF.R, Hb[j]), p_MB_G);
        }
    }
    /* a State with mass properties of its own: its inertias in G instead of the bodies'
       (a second pass, so the loop above stays as fast as ever for the others) */
    for (int i = 1; mass && i < m->nb; ++i) {
        const mt_massprops *mp = &mass[i];
        mt_pos *p = &pos[i];
        pm[i] = mp->mass;
        p->c_G = mbk_mat33_mul_vec(p->X_GB.R, mp->com);
        p->I_G = mp->diagonal ? mt_sym3_rotate_diagonal(&p->X_GB.R, &mp->I_B) : mt_sym3_rotate(&p->X_GB.R, &mp->I_B);
    }
    return m->con_hooks ? m->con_hooks->position(m, s) : 0;
}

/* V_PB = H u for one body, in G at B's origin. */
static mbk_spatial_vec rel_velocity(const mbk_spatial_vec *Hb, const double *ub, int nu)
{
    mbk_spatial_vec V = mbk_spatial_vec_zero();
    for (int j = 0; j < nu; ++j) V = mbk_spatial_vec_add(V, mbk_spatial_vec_scale(Hb[j], ub[j]));
    return V;
}

/* Velocity-product acceleration of a body given the parent's velocity and
   its own velocity relative to the parent; hd is HDot_FM u (in F) or NULL. */
static mbk_spatial_vec coriolis(const mt_pos *p, const mt_joint_frame *jf, const mbk_spatial_vec *hd,
                                const mbk_spatial_vec *V_GP, const mbk_spatial_vec *V_rel)
{
    mbk_vec3 w = V_GP->w, wr = V_rel->w;
    mbk_spatial_vec a;
    /* d/dt (taken in F) of H u shifted from M's origin to B's, in G. */
    mbk_vec3 hd_w = mbk_vec3_zero(), hd_v = mbk_vec3_cross(wr, mbk_vec3_cross(wr, jf->p_MB_G));
    if (hd) {
        hd_w = mbk_mat33_mul_vec(jf->R_GF, hd->w);
        hd_v = mbk_vec3_add(hd_v, mbk_vec3_add(mbk_mat33_mul_vec(jf->R_GF, hd->v),
                                               mbk_vec3_cross(hd_w, jf->p_MB_G)));
    }
    a.w = mbk_vec3_add(mbk_vec3_cross(w, wr), hd_w);
    a.v = mbk_vec3_add(mbk_vec3_add(mbk_vec3_cross(w, mbk_vec3_cross(w, p->r_PB)),
                                    mbk_vec3_scale(mbk_vec3_cross(w, V_rel->v), 2.0)),
                       hd_v);
    return a;
}

/* The same for a spin (H = (axis, 0), constant in F): no M-to-B offset, no HDot. */
static mbk_spatial_vec coriolis_spin(const mt_pos *p, mbk_vec3 w, mbk_vec3 wr)
{
    return mbk_spatial_vec_make(mbk_vec3_cross(w, wr), mbk_vec3_cross(w, mbk_vec3_cross(w, p->r_PB)));
}

/* Velocity-product force with classical accelerations of the body origin:
   the moment about the origin w x (I_o w), the force m w x (w x c). */
static mbk_spatial_vec gyroscopic(double mass, const mt_pos *p, mbk_vec3 w)
{
    mbk_spatial_vec f;
    f.w = mbk_vec3_cross(w, mt_sym3_mul(&p->I_G, w));
    f.v = mbk_vec3_scale(mbk_vec3_cross(w, mbk_vec3_cross(w, p->c_G)), mass);
    return f;
}

#ifdef MT_V4
/* A Pin body's velocity, gyroscopic force and velocity-product acceleration by vectors
   (mt_v4.h), each sum and product of rel_velocity, gyroscopic and coriolis(_spin) in their
   order (adding their zeros too), so the same bits; Vp is the parent's velocity, and the
   body's is returned for its child. */
static inline mt_sv4 pin_velocity_v4(const mt_node *b, mt_sv4 Vp, const mt_pos *p, const mt_joint_frame *jf,
                                     const mbk_spatial_vec *Hb, double ub, double mass, mt_vel *v)
{
    const mt_v4 zero = {0.0, 0.0, 0.0, 0.0}, r = v4_load(&p->r_PB.x);
    mt_sv4 Vr = {zero, zero};
    if (b->spin) {
        Vr.w = v4_load(&Hb->w.x) * ub;
    } else {
        const mt_sv4 h = sv4_load(Hb);
        Vr.w = zero + h.w * ub;
        Vr.v = zero + h.v * ub;
    }
    const mt_sv4 V = {Vp.w + Vr.w, (Vp.v + v4_cross(Vp.w, r)) + Vr.v};
    sv4_store(&v->V_GB, V);
    mt_v4 I[3];
    sym3_cols(&p->I_G, I);
    const mt_sv4 g = {v4_cross(V.w, sym3_cols_mul(I, V.w)),
                      v4_cross(V.w, v4_cross(V.w, v4_load_after(&p->I_G.yz))) * mass};
    sv4_store(&v->b, g);
    mt_sv4 a = {v4_cross(Vp.w, Vr.w), v4_cross(Vp.w, v4_cross(Vp.w, r))};
    if (!b->spin) {
        const mt_v4 p_MB = v4_load_after(&jf->R_GF.m[2][2]);
        a.w = a.w + zero;
        a.v = (a.v + v4_cross(Vp.w, Vr.v) * 2.0) + v4_cross(Vr.w, v4_cross(Vr.w, p_MB));
    }
    sv4_store(&v->a_c, a);
    return V;
}
#endif

/* Body velocities, qdot, velocity-product accelerations and gyroscopic forces. */
int mt_realize_velocity(void *impl, const mbk_subsystem_ctx *c, mbk_state *s)
{
    (void)c;
    const mbk_matter *m = impl;
    const int *lay = qlayout(m, s);
    bool euler = layout_euler(m, lay);
    const double *u = st_sub_y(s, m->sub, 1); /* finite: the System checked before Velocity */
    const double *qn = mt_cache(m, s, C_QN);
    const mt_pos *pos = mt_cache(m, s, C_POS);
    const mt_joint_frame *jf = mt_cache(m, s, C_JOINT);
    const mbk_spatial_vec *H = mt_cache(m, s, C_H);
    mt_vel *vel = mt_cache(m, s, C_VEL);
    const double *pm = mt_pos_mass(m, pos);
    const bool own_mass = pm[0] != 0.0;
    double *qdot = st_sub_ydot(s, m->sub, 0);
    memset(&vel[0], 0, sizeof vel[0]);
#ifdef MT_V4
    const mt_v4 zero = {0.0, 0.0, 0.0, 0.0};
    mt_sv4 carry = {zero, zero}; /* velocity of body carry_body (Ground's to start) */
    int carry_body = 0;
#endif
    for (int i = 1; i < m->nb; ++i) {
        const mt_node *b = &m->nodes[i];
#ifdef MT_V4
        if (b->pin) {
            const mt_sv4 Vp = b->parent == carry_body ? carry : sv4_load(&vel[b->parent].V_GB);
            carry = pin_velocity_v4(b, Vp, &pos[i], &jf[i], H + b->u0, u[b->u0], own_mass ? pm[i] : b->mass, &vel[i]);
            carry_body = i;
            qdot[lay[2 * i]] = u[b->u0];
            continue;
        }
        carry_body = -1;
#endif
        const mbk_spatial_vec *Vp = &vel[b->parent].V_GB;
        mbk_spatial_vec Vr = b->spin ? mbk_spatial_vec_make(mbk_vec3_scale(H[b->u0].w, u[b->u0]), mbk_vec3_zero())
                                     : rel_velocity(H + b->u0, u + b->u0, b->nu);
        mt_vel *v = &vel[i];
        v->V_GB = mbk_spatial_vec_add(mbk_spatial_shift_motion(*Vp, pos[i].r_PB), Vr);
        v->b = gyroscopic(own_mass ? pm[i] : b->mass, &pos[i], v->V_GB.w);
        if (b->spin) v->a_c = coriolis_spin(&pos[i], Vp->w, Vr.w);
        if (b->pin) {
            if (!b->spin) v->a_c = coriolis(&pos[i], &jf[i], NULL, Vp, &Vr);
            qdot[lay[2 * i]] = u[b->u0];
            continue;
        }
        /* other joints through their ops */
        const mbk_mobilizer *mob = &m->bodies[i].mob;
        const double *qb = qn + lay[2 * i];
        mbk_spatial_vec hd;
        if (mob->ops->calc_Hdot_u) mob->ops->calc_Hdot_u(mob->impl, euler, qb, u + b->u0, &hd);
        v->a_c = coriolis(&pos[i], &jf[i], mob->ops->calc_Hdot_u ? &hd : NULL, Vp, &Vr);
        if (mob->ops->calc_qdot) mob->ops->calc_qdot(mob->impl, euler, qb, u + b->u0, qdot + lay[2 * i]);
        else copy_small(qdot + lay[2 * i], u + b->u0, b->nu);
        int rc = mobilizer_output(m, i, qdot + lay[2 * i], lay[2 * i + 1], "qdot (calc_qdot)");
        if (rc == MBK_OK && mob->ops->calc_Hdot_u) rc = mobilizer_output(m, i, &hd.w.x, 6, "HDot u (calc_Hdot_u)");
        if (rc < 0) return rc;
    }
    return m->con_hooks ? m->con_hooks->velocity(m, s) : 0;
}
