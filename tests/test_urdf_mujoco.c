/* URDF models against MuJoCo, an independent reference that loads URDF too.
 *
 * For each hand-written model in tests/urdf/ (double pendulum, 7-dof arm with
 * axes in many directions and a prismatic joint, floating torso with limbs,
 * planar joint), at random states: body poses (MuJoCo xpos/xmat), the mass
 * matrix and udot (with gravity and joint damping) must agree to 1e-9.
 * Those models use diagonal inertia tensors in rotated inertial frames and
 * keep fixed-joint links as bodies (a <mujoco> compiler block, which mbk
 * ignores): MuJoCo diagonalizes full tensors, and combines fused bodies,
 * with an eigen-solver good to only ~1e-7, so full_inertia_pendulum.urdf
 * (products of inertia) is compared at 1e-6.
 *
 * Coordinates are matched by joint name (MuJoCo names a planar joint's three
 * joints NAME_TX, NAME_TY, NAME_RZ). MuJoCo's free joint has qpos = (p, quat)
 * of the body in the world and qvel = (v of the body origin in the world,
 * angular velocity in the body frame); mbk's Free has u = (w_FM, v_FM) in F.
 * So MuJoCo's velocities are v_mj = T u with T built from mbk's system
 * Jacobian (rows of the floating body, the angular ones rotated into the
 * body frame); T is orthogonal, so M_mj = T M T^T, and since
 * d/dt (R^T w) = R^T dw/dt, qacc = T udot.
 *
 * MuJoCo's constraint solver is disabled (no limits, no friction loss): the
 * random states stay inside the joint limits, where mbk's stops are idle.
 * Built without MuJoCo (MBK_HAVE_MUJOCO undefined), it checks nothing
 * beyond loading and says so. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <mbk/mbk.h>
#include <mbk/urdf.h>

#include "mbk_test.h"

#ifdef MBK_HAVE_MUJOCO
#include <mujoco/mujoco.h>
#endif

static char model_dir[1024];

static void set_model_dir(void)
{
    const char *f = __FILE__, *slash = strrchr(f, '/');
    size_t n = slash ? (size_t)(slash - f) : 0;
    snprintf(model_dir, sizeof model_dir, "%.*s%surdf/", (int)n, f, slash ? "/" : "");
}

static double urand(unsigned *seed, double lo, double hi)
{
    *seed = *seed * 1664525u + 1013904223u;
    return lo + (hi - lo) * ((*seed >> 8) / 16777216.0);
}

#ifdef MBK_HAVE_MUJOCO

typedef struct worst { double M, udot, pose; long checks; } worst;

/* Limits of a URDF joint from MuJoCo's model (range when limited). */
static void joint_range(const mjModel *mm, int jid, double *lo, double *hi, double dlo, double dhi)
{
    *lo = dlo, *hi = dhi;
    if (jid >= 0 && mm->jnt_limited[jid]) {
        double a = mm->jnt_range[2 * jid], b = mm->jnt_range[2 * jid + 1], pad = 0.05 * (b - a);
        *lo = a + pad, *hi = b - pad;
    }
}

static void compare_model(const char *file, int n_states, double tol, worst *w)
{
    char path[1200], err[1000] = "";
    snprintf(path, sizeof path, "%s%s", model_dir, file);
    mbk_system *sys = NULL;
    mbk_urdf_options o = mbk_urdf_options_default();
    o.gravity = mbk_vec3_make(0.3, -0.2, -9.81);
    if (!CHECK(mbk_urdf_load(path, &o, &sys) == MBK_OK)) {
        fprintf(stderr, "%s: %s\n", file, mbk_last_error());
        return;
    }
    mjModel *mm = mj_loadXML(path, NULL, err, sizeof err);
    if (!CHECK(mm != NULL)) {
        fprintf(stderr, "MuJoCo cannot load %s: %s\n", path, err);
        mbk_system_destroy(sys);
        return;
    }
    mm->opt.gravity[0] = o.gravity.x, mm->opt.gravity[1] = o.gravity.y, mm->opt.gravity[2] = o.gravity.z;
    mm->opt.disableflags |= mjDSBL_CONSTRAINT;
    mjData *d = mj_makeData(mm);
    const mbk_matter *m = mbk_multibody_get_matter(sys);
    mbk_state *s = mbk_state_create();
    CHECK(mbk_state_init(s, sys) == MBK_OK && mbk_system_realize(sys, s, MBK_STAGE_MODEL) == MBK_OK);
    int nb = mbk_matter_get_num_bodies(m), nu = mbk_state_get_nu(s), nv = mm->nv;
    CHECK_INT(nu, nv);
    if (nu != nv) goto out;
    double *T = calloc((size_t)nv * nu, sizeof *T), *M = calloc((size_t)nu * nu, sizeof *M);
    double *Mmj = calloc((size_t)nv * nv, sizeof *Mmj), *J = calloc((size_t)6 * nb * nu, sizeof *J);
    double *TM = calloc((size_t)nv * nu, sizeof *TM);
    unsigned seed = 12345u;
    for (int trial = 0; trial < n_states; ++trial) {
        double *q = mbk_state_upd_q(s), *u = mbk_state_upd_u(s);
        /* random q inside MuJoCo's ranges (which came from the URDF limits), random u */
        for (int b = 1; b < nb; ++b) {
            const char *type = mbk_urdf_get_joint_type(sys, b), *jn = mbk_urdf_get_joint_name(sys, b);
            int q0 = mbk_matter_get_body_q_start(m, s, b), u0 = mbk_matter_get_body_u_start(m, s, b);
            int nqb = mbk_matter_get_body_num_q(m, s, b), nub = mbk_matter_get_body_num_u(m, s, b);
            int jid = *jn ? mj_name2id(mm, mjOBJ_JOINT, jn) : -1;
            double lo, hi;
            if (!strcmp(type, "prismatic")) joint_range(mm, jid, &lo, &hi, -0.4, 0.4);
            else joint_range(mm, jid, &lo, &hi, -3.1, 3.1);
            if (!strcmp(type, "floating")) {
                mbk_quat qt = mbk_quat_normalize(mbk_quat_make(urand(&seed, -1, 1), urand(&seed, -1, 1),
                                                               urand(&seed, -1, 1), urand(&seed, -1, 1)));
                q[q0] = qt.w, q[q0 + 1] = qt.x, q[q0 + 2] = qt.y, q[q0 + 3] = qt.z;
                for (int k = 4; k < 7; ++k) q[q0 + k] = urand(&seed, -1, 1);
            } else {
                for (int k = 0; k < nqb; ++k) q[q0 + k] = urand(&seed, lo, hi);
            }
            for (int k = 0; k < nub; ++k) u[u0 + k] = urand(&seed, -2, 2);
        }
        if (!CHECK(mbk_system_realize(sys, s, MBK_STAGE_ACCELERATION) == MBK_OK)) {
            fprintf(stderr, "%s: %s\n", file, mbk_last_error());
            break;
        }
        CHECK(mbk_matter_calc_mass_matrix(m, s, M) == MBK_OK);
        CHECK(mbk_matter_calc_system_jacobian(m, s, J) == MBK_OK);
        q = (double *)mbk_state_get_q(s), u = (double *)mbk_state_get_u(s);
        const double *udot = mbk_state_get_udot(s);
        memset(T, 0, sizeof(double) * (size_t)nv * nu);
        /* MuJoCo state and T, joint by joint */
        for (int b = 1; b < nb; ++b) {
            const char *type = mbk_urdf_get_joint_type(sys, b), *jn = mbk_urdf_get_joint_name(sys, b);
            int q0 = mbk_matter_get_body_q_start(m, s, b), u0 = mbk_matter_get_body_u_start(m, s, b);
            if (!strcmp(type, "fixed")) continue;
            if (!strcmp(type, "planar")) {
                static const char *const suffix[3] = {"_TX", "_TY", "_RZ"};
                static const int which[3] = {1, 2, 0}; /* mbk planar q = (angle, x, y) */
                for (int k = 0; k < 3; ++k) {
                    char name[300];
                    snprintf(name, sizeof name, "%s%s", jn, suffix[k]);
                    int jid = mj_name2id(mm, mjOBJ_JOINT, name);
                    if (!CHECK(jid >= 0)) continue;
                    d->qpos[mm->jnt_qposadr[jid]] = q[q0 + which[k]];
                    d->qvel[mm->jnt_dofadr[jid]] = u[u0 + which[k]];
                    T[mm->jnt_dofadr[jid] * nu + u0 + which[k]] = 1.0;
                }
                continue;
            }
            int jid = mj_name2id(mm, mjOBJ_JOINT, jn);
            if (!CHECK(jid >= 0)) continue;
            int qa = mm->jnt_qposadr[jid], da = mm->jnt_dofadr[jid];
            if (!strcmp(type, "floating")) {
                CHECK_INT(mm->jnt_type[jid], mjJNT_FREE);
                mbk_transform X;
                mbk_matter_get_body_transform(m, s, b, &X);
                mbk_quat qt = mbk_mat33_to_quat(X.R);
                d->qpos[qa] = X.p.x, d->qpos[qa + 1] = X.p.y, d->qpos[qa + 2] = X.p.z;
                d->qpos[qa + 3] = qt.w, d->qpos[qa + 4] = qt.x, d->qpos[qa + 5] = qt.y, d->qpos[qa + 6] = qt.z;
                for (int j = 0; j < nu; ++j) {
                    mbk_vec3 wj = mbk_vec3_make(J[(6 * b + 0) * nu + j], J[(6 * b + 1) * nu + j], J[(6 * b + 2) * nu + j]);
                    mbk_vec3 wb = mbk_mat33_transpose_mul_vec(X.R, wj);
                    for (int k = 0; k < 3; ++k) T[(da + k) * nu + j] = J[(6 * b + 3 + k) * nu + j];
                    T[(da + 3) * nu + j] = wb.x, T[(da + 4) * nu + j] = wb.y, T[(da + 5) * nu + j] = wb.z;
                }
                for (int r = 0; r < 6; ++r) {
                    double v = 0;
                    for (int j = 0; j < nu; ++j) v += T[(da + r) * nu + j] * u[j];
                    d->qvel[da + r] = v;
                }
            } else {
                d->qpos[qa] = q[q0];
                d->qvel[da] = u[u0];
                T[da * nu + u0] = 1.0;
            }
        }
        mj_forward(mm, d);
        mj_fullM(mm, Mmj, d->qM);
        /* poses of the links MuJoCo kept as bodies */
        for (int b = 1; b < nb; ++b) {
            int bid = mj_name2id(mm, mjOBJ_BODY, mbk_urdf_get_link_name(sys, b));
            if (bid < 0) continue; /* fused by MuJoCo (fixed joint) */
            mbk_transform X;
            mbk_matter_get_body_transform(m, s, b, &X);
            const double *p = d->xpos + 3 * bid, *R = d->xmat + 9 * bid;
            double e = fabs(X.p.x - p[0]) + fabs(X.p.y - p[1]) + fabs(X.p.z - p[2]);
            for (int r = 0; r < 3; ++r)
                for (int c = 0; c < 3; ++c) e = fmax(e, fabs(X.R.m[r][c] - R[3 * r + c]));
            w->pose = fmax(w->pose, e);
            CHECK(e < 1e-12);
            w->checks++;
        }
        /* T M T^T against MuJoCo's M; T udot against qacc */
        double scale = 0;
        for (int i = 0; i < nv * nv; ++i) scale = fmax(scale, fabs(Mmj[i]));
        for (int i = 0; i < nv; ++i)
            for (int j = 0; j < nu; ++j) {
                double v = 0;
                for (int k = 0; k < nu; ++k) v += T[i * nu + k] * M[k * nu + j];
                TM[i * nu + j] = v;
            }
        double eM = 0, ea = 0, ascale = 0;
        for (int i = 0; i < nv; ++i) {
            for (int j = 0; j < nv; ++j) {
                double v = 0;
                for (int k = 0; k < nu; ++k) v += TM[i * nu + k] * T[j * nu + k];
                eM = fmax(eM, fabs(v - Mmj[i * nv + j]) / fmax(1.0, scale));
            }
            double a = 0;
            for (int k = 0; k < nu; ++k) a += T[i * nu + k] * udot[k];
            ascale = fmax(ascale, fabs(d->qacc[i]));
            ea = fmax(ea, fabs(a - d->qacc[i]));
        }
        ea /= fmax(1.0, ascale);
        w->M = fmax(w->M, eM);
        w->udot = fmax(w->udot, ea);
        w->checks += 2;
        if (!CHECK(eM < tol) || !CHECK(ea < tol))
            fprintf(stderr, "%s state %d: |M - M_mj| = %.3g, |udot - qacc| = %.3g\n", file, trial, eM, ea);
    }
    printf("  %-28s nu = %2d: worst M %.2e, udot %.2e (relative), poses %.2e\n", file, nu, w->M, w->udot, w->pose);
    free(T), free(M), free(Mmj), free(J), free(TM);
out:
    mbk_state_destroy(s);
    mj_deleteData(d);
    mj_deleteModel(mm);
    mbk_system_destroy(sys);
}
#endif

int main(void)
{
    set_model_dir();
    static const char *const models[] = {"double_pendulum.urdf", "arm7.urdf", "floating_limbs.urdf",
                                         "planar_tray.urdf", "full_inertia_pendulum.urdf"};
    /* MuJoCo's eigen-solver for full inertia tensors is good to ~1e-7 (see that file) */
    static const double tols[] = {1e-9, 1e-9, 1e-9, 1e-9, 1e-6};
#ifdef MBK_HAVE_MUJOCO
    worst all = {0, 0, 0, 0};
    printf("URDF models against MuJoCo %s (200 random states each):\n", mj_versionString());
    for (size_t i = 0; i < sizeof models / sizeof *models; ++i) {
        worst w = {0, 0, 0, 0};
        compare_model(models[i], 200, tols[i], &w);
        if (tols[i] > 1e-9) continue; /* not part of the 1e-9 figures */
        all.M = fmax(all.M, w.M), all.udot = fmax(all.udot, w.udot), all.pose = fmax(all.pose, w.pose);
        all.checks += w.checks;
    }
    printf("worst over the 1e-9 models: mass matrix %.2e, udot %.2e, poses %.2e (%ld comparisons)\n", all.M, all.udot, all.pose,
           all.checks);
#else
    printf("MuJoCo was not found at configure time: only loading the models (install libmujoco-dev)\n");
    for (size_t i = 0; i < sizeof models / sizeof *models; ++i) {
        char path[1200];
        mbk_system *sys = NULL;
        snprintf(path, sizeof path, "%s%s", model_dir, models[i]);
        CHECK(mbk_urdf_load(path, NULL, &sys) == MBK_OK);
        mbk_system_destroy(sys);
    }
#endif
    return mbk_test_finish();
}
