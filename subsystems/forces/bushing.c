/* Linear bushing: a 6-dof spring-damper between frame F on one body and
 * frame M on another, as Simbody's Force::LinearBushing. Its coordinates are
 * the body-fixed XYZ angles of R_FM and p_FM in F; each gets
 * f_i = -(k_i q_i + c_i qdot_i). The three angle "moments" act about
 * rotated axes: the torque on M is tau_F = W(q)^-T f_rot, so that
 * tau . w_FM = f_rot . qdot_rot. The translational forces are a vector in F
 * applied at M's origin. Parameters: (k0..k5, c0..c5). */
#include "mbk/status.h"
#include "forces_impl.h"
#include "../matter/matter_impl.h"
#include "../matter/mobilizer_util.h"

/* The bushing's coordinates and their rates, with the frames they came from. */
typedef struct bushing_kin {
    double q[6], qdot[6];
    mbk_transform X_GF; /* F in Ground */
    mbk_vec3 p_GM;      /* M's origin in Ground */
    mbk_mat33 W;        /* angle rates to w_FM */
} bushing_kin;

static void bushing_kinematics(const fe_elem *e, const mbk_force_ctx *c, const mbk_state *s, bool rates,
                               bushing_kin *k)
{
    const mbk_matter *m = mbk_force_ctx_get_matter(c);
    const mt_pos *pos = mt_cache(m, s, C_POS);
    int b1 = e->body[0], b2 = e->body[1];
    k->X_GF = mbk_transform_compose(pos[b1].X_GB, e->frame[0]);
    mbk_transform X_GM = mbk_transform_compose(pos[b2].X_GB, e->frame[1]);
    mbk_transform X_FM = mbk_transform_compose(mbk_transform_invert(k->X_GF), X_GM);
    k->p_GM = X_GM.p;
    put_vec3(k->q, mbk_mat33_to_body_xyz(X_FM.R));
    put_vec3(k->q + 3, X_FM.p);
    k->W = euler_W(k->q);
    if (!rates) return;
    /* V_FM measured in F: angular and linear velocity of M relative to F. */
    const mt_vel *vel = mt_cache(m, s, C_VEL);
    mbk_vec3 rF = mbk_vec3_sub(k->X_GF.p, pos[b1].X_GB.p), rM = mbk_vec3_sub(X_GM.p, pos[b2].X_GB.p);
    mbk_spatial_vec V1 = vel[b1].V_GB, V2 = vel[b2].V_GB;
    mbk_vec3 w_rel = mbk_vec3_sub(V2.w, V1.w);
    mbk_vec3 v_F = mbk_spatial_shift_motion(V1, rF).v, v_M = mbk_spatial_shift_motion(V2, rM).v;
    mbk_vec3 v_rel = mbk_vec3_sub(mbk_vec3_sub(v_M, v_F), mbk_vec3_cross(V1.w, mbk_vec3_sub(X_GM.p, k->X_GF.p)));
    mbk_vec3 w_FM = mbk_mat33_transpose_mul_vec(k->X_GF.R, w_rel);
    put_vec3(k->qdot, mbk_mat33_mul_vec(mbk_mat33_inverse(k->W), w_FM));
    put_vec3(k->qdot + 3, mbk_mat33_transpose_mul_vec(k->X_GF.R, v_rel));
}

static int bushing_force(const fe_elem *e, const double *p, const mbk_force_ctx *c, const mbk_state *s,
                         mbk_spatial_vec *F, double *tau)
{
    (void)tau;
    bushing_kin k;
    bushing_kinematics(e, c, s, true, &k);
    double f[6];
    for (int i = 0; i < 6; ++i) f[i] = -(p[i] * k.q[i] + p[6 + i] * k.qdot[i]);
    /* torque on M with tau . w_FM = f_rot . qdot_rot */
    mbk_vec3 torque_F = mbk_mat33_transpose_mul_vec(mbk_mat33_inverse(k.W), vec3_of(f));
    mbk_vec3 torque = mbk_mat33_mul_vec(k.X_GF.R, torque_F), force = mbk_mat33_mul_vec(k.X_GF.R, vec3_of(f + 3));
    const mt_pos *pos = mt_cache(mbk_force_ctx_get_matter(c), s, C_POS);
    /* +(torque, force at OM) on body 2, the opposite on body 1 at the same point */
    for (int side = 0; side < 2; ++side) {
        int b = e->body[side ? 1 : 0];
        double sign = side ? 1.0 : -1.0;
        mbk_vec3 r = mbk_vec3_sub(k.p_GM, pos[b].X_GB.p);
        mbk_vec3 fs = mbk_vec3_scale(force, sign);
        F[b].w = mbk_vec3_add(F[b].w, mbk_vec3_scale(torque, sign));
        fe_add_force_at(&F[b], r, fs);
    }
    return 0;
}

static int bushing_energy(const fe_elem *e, const double *p, const mbk_force_ctx *c, const mbk_state *s,
                          double *pe)
{
    bushing_kin k;
    bushing_kinematics(e, c, s, false, &k);
    for (int i = 0; i < 6; ++i) *pe += 0.5 * p[i] * k.q[i] * k.q[i];
    return 0;
}

static int check_bushing(const double *p)
{
    for (int i = 0; i < 12; ++i)
        if (p[i] < 0)
            return mbk_set_error(MBK_EINVAL, "%s %d is %g; use values >= 0",
                                 i < 6 ? "stiffness" : "damping", i % 6, p[i]);
    return MBK_OK;
}

const fe_kind fe_bushing = {"linear bushing", 12, check_bushing,
                            bushing_force, bushing_energy, "mbk_force_add_linear_bushing", NULL};

int mbk_force_add_linear_bushing(mbk_forces *f, int b1, const mbk_transform *X_B1F, int b2,
                                 const mbk_transform *X_B2M, const double stiffness[6],
                                 const double damping[6])
{
    const char *fn = "mbk_force_add_linear_bushing";
    int rc = fe_check_body(f, b1, true, fn);
    if (rc < 0 || (rc = fe_check_body(f, b2, true, fn)) < 0) return rc;
    if (!X_B1F || !X_B2M || !stiffness || !damping)
        return mbk_set_error(MBK_EINVAL, "%s: frames and parameter arrays must not be NULL", fn);
    if (!mbk_mat33_is_finite(X_B1F->R) || !mbk_vec3_is_finite(X_B1F->p) ||
        !mbk_mat33_is_finite(X_B2M->R) || !mbk_vec3_is_finite(X_B2M->p))
        return mbk_set_error(MBK_EINVAL, "%s: frames must be finite", fn);
    fe_elem w = {0};
    w.body[0] = b1;
    w.body[1] = b2;
    w.frame[0] = *X_B1F;
    w.frame[1] = *X_B2M;
    double p[12];
    for (int i = 0; i < 6; ++i) {
        p[i] = stiffness[i];
        p[6 + i] = damping[i];
    }
    return fe_add(f, &fe_bushing, &w, p);
}
