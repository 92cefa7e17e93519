// bench_pinocchio.cpp - the Pinocchio side of the benchmark: aba, rnea, crba, and the derivatives
// computeABADerivatives and computeRNEADerivatives.
//
// Pinocchio comes from PyPI (libpinocchio, with Eigen and Boost as cmeel-eigen and cmeel-boost:
// the wheels carry a CMake prefix with the C++ headers). make bench installs them into a virtual
// environment (scripts/bench-venv.sh) and configures with MBK_PINOCCHIO_PREFIX. The algorithms are
// templates: this file instantiates them with the benchmark's own flags (-O3 -march=native), as
// ANCHORS.md's Pinocchio was built; the prebuilt libpinocchio_default.so is not linked.
//
// Model: every bm_body becomes one joint. A pin whose X_PF and X_BM share their rotation R and
// X_BM has no offset (every ANCHORS body) is a revolute joint about a = R z in the parent's body
// frame, placed at p_PF: JointModelRY / RZ when a is y or z (the usual case, as a Pinocchio user
// would write it), JointModelRevoluteUnaligned otherwise; the body frame is the joint frame. Any
// other pin is JointModelRZ in F, and the body is appended at X_MB = X_BM^-1. The free base is a
// JointModelFreeFlyer.
//
// Order. Pinocchio needs every subtree's joints contiguous (crba and the Jacobians walk a joint's
// subtree as the range idx_v .. idx_v + nvSubtree), so joints are added in depth-first order, as
// its URDF parser does; mbk's treeK numbers bodies breadth-first. q, v and the results are
// permuted between the two orders.
//
// Conventions. mbk's
// free mobilizer has q = (quaternion w x y z, p) and u = (w, v), w and the origin's velocity v
// both in Ground; Pinocchio's free flyer has q = (p, x y z w) and v = (R^T v, R^T w) in the body
// frame (linear first). With v_pin = J u (J takes (w, v) to (R^T v, R^T w)):
//   FD: wdot = R a_ang, vdot = R (a_lin + w_l x v_l);
//   ID: a_ang = R^T wdot, a_lin = R^T vdot - w_l x v_l; residual = J^T tau;
//   M:  M_mbk = J^T M_pin J.
// Derivatives: see derivs_out (the u-columns mapped; with a free base the q-columns are not
// compared, Pinocchio's being along a tangent displacement of the configuration).
#include "bench_sides.h"

#include <cmath>
#include <cstdio>
#include <cstring>
#include <exception>
#include <string>
#include <vector>

static char g_err[512];
const char *pin_last_error(void) { return g_err; }
int pin_has_op(bench_op op)
{
    return op == OP_FULL || op == OP_ID || op == OP_MASS_KIN || op == OP_ABA_DERIV || op == OP_RNEA_DERIV;
}
// Pinocchio's Data allocates and zeroes four nv x nv x nv tensors (second-order derivatives of the
// RNEA) whatever the algorithms used: 32 GB at nv = 1000 (PyPI's pin 3.7.0 and 2.7.0 too). None of
// the timed algorithms reads them: with MBK_PIN_LEAN_DATA (benchmarks/CMakeLists.txt) Pinocchio is
// compiled against a copy of its data.hxx that leaves them empty, and every model runs; without it,
// models above 400 u are not run.
int pin_runs_op(bench_op op, int nu)
{
    const bool deriv = op == OP_ABA_DERIV || op == OP_RNEA_DERIV;
    return pin_has_op(op) && nu <= pin_max_nu() && (!deriv || nu <= 400);
}
#ifdef MBK_PIN_LEAN_DATA
int pin_max_nu(void) { return 100000; }
#else
int pin_max_nu(void) { return 400; }
#endif

#ifndef MBK_HAVE_PINOCCHIO

int pin_available(void) { return 0; }
const char *pin_version(void) { return "not built"; }
pin_side *pin_create(const bm_model *)
{
    std::snprintf(g_err, sizeof g_err, "Pinocchio: not configured (MBK_PINOCCHIO_PREFIX)");
    return nullptr;
}
void pin_destroy(pin_side *) {}
int pin_set_inputs(pin_side *, const double *, const double *, const double *) { return -1; }
int pin_eval(pin_side *, bench_op, double *) { return -1; }
int pin_compare_from(const pin_side *, bench_op) { return 0; }
int pin_run(pin_side *, bench_op, long) { return -1; }

#else

#include <pinocchio/algorithm/aba-derivatives.hpp>
#include <pinocchio/algorithm/aba.hpp>
#include <pinocchio/algorithm/crba.hpp>
#include <pinocchio/algorithm/rnea-derivatives.hpp>
#include <pinocchio/algorithm/rnea.hpp>
#include <pinocchio/multibody.hpp>

using namespace pinocchio;

struct pin_side {
    Model model;
    Data *data = nullptr;
    int nq = 0, nu = 0;
    int free_body = 0, free_q = 0, free_u = 0; // mbk body with the free joint (0: none), its q, u (mbk)
    int pin_fq = 0, pin_fv = 0;                // the free joint's idx_q, idx_v in Pinocchio
    std::vector<int> qmap, vmap;               // mbk q / u index -> Pinocchio's
    Eigen::VectorXd q, v, a, tau;              // Pinocchio's conventions
    Eigen::Matrix3d R;                         // free base rotation at the inputs
    Eigen::Vector3d wl, vl;                    // its angular and linear velocity in the body frame
    ~pin_side() { delete data; }
};

template <class F> static int guarded(F f)
{
    try {
        f();
        return 0;
    } catch (const std::exception &e) {
        std::snprintf(g_err, sizeof g_err, "Pinocchio: %s", e.what());
    } catch (...) {
        std::snprintf(g_err, sizeof g_err, "Pinocchio: unknown exception");
    }
    return -1;
}

int pin_available(void) { return 1; }
const char *pin_version(void) { return PINOCCHIO_VERSION; }

static SE3 to_se3(const double *a)
{
    Eigen::Matrix3d R;
    for (int i = 0; i < 3; ++i)
        for (int j = 0; j < 3; ++j) R(i, j) = a[3 * i + j];
    return SE3(R, Eigen::Vector3d(a[9], a[10], a[11]));
}

pin_side *pin_create(const bm_model *m)
{
    if (m->nu > pin_max_nu()) {
        std::snprintf(g_err, sizeof g_err, "Pinocchio: nu %d > %d: its Data would hold four nu^3 tensors (%.0f GB)",
                      m->nu, pin_max_nu(), 32.0 * m->nu * (double)m->nu * m->nu / 1e9);
        return nullptr;
    }
    pin_side *s = new pin_side;
    int rc = guarded([&] {
        std::vector<JointIndex> joint(m->n + 1, 0);
        std::vector<SE3> X_JB(m->n + 1, SE3::Identity()); // body frame in its joint frame
        // depth-first (pre-order) order of the bodies, children in mbk's order
        std::vector<std::vector<int>> children(m->n + 1);
        for (int i = 1; i <= m->n; ++i) {
            if (m->bodies[i - 1].parent >= i) throw std::runtime_error("parent after child");
            children[m->bodies[i - 1].parent].push_back(i);
        }
        std::vector<int> order, stack(children[0].rbegin(), children[0].rend());
        while (!stack.empty()) {
            const int i = stack.back();
            stack.pop_back();
            order.push_back(i);
            stack.insert(stack.end(), children[i].rbegin(), children[i].rend());
        }
        for (int i : order) {
            const bm_body &b = m->bodies[i - 1];
            const SE3 X_PF = to_se3(b.X_PF), X_BM = to_se3(b.X_BM);
            Eigen::Matrix3d I;
            for (int r = 0; r < 3; ++r)
                for (int c = 0; c < 3; ++c) I(r, c) = b.inertia[3 * r + c];
            const Inertia Y(b.mass, Eigen::Vector3d(b.com[0], b.com[1], b.com[2]), I);
            const SE3 &X_JP = X_JB[b.parent]; // parent body in the parent's joint frame
            const std::string name = "j" + std::to_string(i);
            if (b.type == BM_FREE) {
                if (b.parent != 0) throw std::runtime_error("a free body must be on Ground");
                if (!X_PF.isIdentity() || !X_BM.isIdentity()) throw std::runtime_error("free joint frames must be identity");
                joint[i] = s->model.addJoint(0, JointModelFreeFlyer(), SE3::Identity(), name);
                s->free_body = i;
                s->free_q = m->q0[i];
                s->free_u = m->u0[i];
                s->model.appendBodyToJoint(joint[i], Y, SE3::Identity());
                continue;
            }
            const bool same_R = X_PF.rotation().isApprox(X_BM.rotation(), 0.0) && X_BM.translation().isZero(0.0);
            if (same_R) {
                const Eigen::Vector3d a = X_PF.rotation().col(2);
                const SE3 place = X_JP * SE3(Eigen::Matrix3d::Identity(), X_PF.translation());
                if (a == Eigen::Vector3d::UnitY()) joint[i] = s->model.addJoint(joint[b.parent], JointModelRY(), place, name);
                else if (a == Eigen::Vector3d::UnitZ()) joint[i] = s->model.addJoint(joint[b.parent], JointModelRZ(), place, name);
                else joint[i] = s->model.addJoint(joint[b.parent], JointModelRevoluteUnaligned(a), place, name);
                s->model.appendBodyToJoint(joint[i], Y, SE3::Identity());
            } else {
                joint[i] = s->model.addJoint(joint[b.parent], JointModelRZ(), X_JP * X_PF, name);
                X_JB[i] = X_BM.inverse();
                s->model.appendBodyToJoint(joint[i], Y, X_JB[i]);
            }
        }
        if (s->model.nq != m->nq || s->model.nv != m->nu) throw std::runtime_error("nq / nv differ from mbk's");
        s->qmap.assign(m->nq, 0);
        s->vmap.assign(m->nu, 0);
        for (int i = 1; i <= m->n; ++i) {
            const int nvb = s->model.nvs[joint[i]];
            for (int k = 0; k < s->model.nqs[joint[i]]; ++k) s->qmap[m->q0[i] + k] = s->model.idx_qs[joint[i]] + k;
            for (int k = 0; k < nvb; ++k) s->vmap[m->u0[i] + k] = s->model.idx_vs[joint[i]] + k;
            if (i == s->free_body) s->pin_fq = s->model.idx_qs[joint[i]], s->pin_fv = s->model.idx_vs[joint[i]];
        }
        s->model.gravity.linear() << m->gravity[0], m->gravity[1], m->gravity[2];
        s->model.gravity.angular().setZero();
        s->data = new Data(s->model);
        s->nq = m->nq;
        s->nu = m->nu;
        s->q.setZero(s->nq);
        s->v.setZero(s->nu);
        s->a.setZero(s->nu);
        s->tau.setZero(s->nu);
        s->R.setIdentity();
        s->wl.setZero();
        s->vl.setZero();
    });
    if (rc < 0) {
        delete s;
        return nullptr;
    }
    return s;
}

void pin_destroy(pin_side *s) { delete s; }

int pin_set_inputs(pin_side *s, const double *q, const double *u, const double *known_udot)
{
    return guarded([&] {
        for (int i = 0; i < s->nq; ++i) s->q[s->qmap[i]] = q[i];
        for (int i = 0; i < s->nu; ++i) s->v[s->vmap[i]] = u[i], s->a[s->vmap[i]] = known_udot[i];
        if (!s->free_body) return;
        const int q0 = s->free_q, u0 = s->free_u, pq = s->pin_fq, pv = s->pin_fv;
        const Eigen::Quaterniond quat(q[q0], q[q0 + 1], q[q0 + 2], q[q0 + 3]); // w x y z
        s->R = quat.toRotationMatrix();
        s->q.segment<3>(pq) = Eigen::Vector3d(q[q0 + 4], q[q0 + 5], q[q0 + 6]);
        s->q.segment<4>(pq + 3) = quat.coeffs(); // x y z w
        const Eigen::Vector3d w(u[u0], u[u0 + 1], u[u0 + 2]), vo(u[u0 + 3], u[u0 + 4], u[u0 + 5]);
        s->wl = s->R.transpose() * w;
        s->vl = s->R.transpose() * vo;
        s->v.segment<3>(pv) = s->vl;
        s->v.segment<3>(pv + 3) = s->wl;
        const Eigen::Vector3d wd(known_udot[u0], known_udot[u0 + 1], known_udot[u0 + 2]);
        const Eigen::Vector3d vd(known_udot[u0 + 3], known_udot[u0 + 4], known_udot[u0 + 5]);
        s->a.segment<3>(pv) = s->R.transpose() * vd - s->wl.cross(s->vl);
        s->a.segment<3>(pv + 3) = s->R.transpose() * wd;
    });
}

int pin_run(pin_side *s, bench_op op, long reps)
{
    return guarded([&] {
        const Model &m = s->model;
        Data &d = *s->data;
        switch (op) {
        case OP_FULL:
            for (long r = 0; r < reps; ++r) aba(m, d, s->q, s->v, s->tau);
            break;
        case OP_ID:
            for (long r = 0; r < reps; ++r) rnea(m, d, s->q, s->v, s->a);
            break;
        case OP_MASS_KIN:
            for (long r = 0; r < reps; ++r) crba(m, d, s->q, Convention::WORLD);
            break;
        case OP_ABA_DERIV:
            for (long r = 0; r < reps; ++r) computeABADerivatives(m, d, s->q, s->v, s->tau);
            break;
        case OP_RNEA_DERIV:
            for (long r = 0; r < reps; ++r) computeRNEADerivatives(m, d, s->q, s->v, s->a);
            break;
        default:
            throw std::runtime_error("op not run on the Pinocchio side");
        }
    });
}

int pin_compare_from(const pin_side *s, bench_op op)
{
    return s->free_body && (op == OP_ABA_DERIV || op == OP_RNEA_DERIV) ? s->nu * s->nq : 0;
}

// d(w x v)/d(w, v) = (-[v]x, [w]x), 3 x 6: how the free base's velocity-product term moves with
// mbk's u of the free base (w, v in Ground).
static Eigen::Matrix<double, 3, 6> cross_jacobian(const Eigen::Vector3d &w, const Eigen::Vector3d &v)
{
    Eigen::Matrix<double, 3, 6> D;
    D.leftCols<3>() = -skew(v);
    D.rightCols<3>() = skew(w);
    return D;
}

// The derivatives in mbk's layout: d/dq (nu x nq) then d/du (nu x nu). Fixed base: Pinocchio's
// dq and dv columns are mbk's q and u (revolute joints: the tangent is the angle), permuted. Free
// base: only d/du is mapped (pin_compare_from); the q-columns are left NaN.
//   ABA:  udot = J^T ddq + e(u), e = (0, w x v) in the free base's rows, so
//         dudot/du = J^T (d ddq/dv) J + de/du.
//   RNEA: r = J^T tau(q, J u, a), a = J udot - (0, R^T (w x v)) in the free base's rows, so
//         dr/du = J^T (dtau/dv J + M da/du).
static void derivs_out(pin_side *s, bench_op op, const Eigen::MatrixXd &J, double *out)
{
    Data &d = *s->data;
    const int n = s->nu, nq = s->nq, u0 = s->free_u, pv = s->pin_fv;
    Eigen::MatrixXd dq = op == OP_ABA_DERIV ? d.ddq_dq : d.dtau_dq;
    Eigen::MatrixXd du = J.transpose() * (op == OP_ABA_DERIV ? d.ddq_dv : d.dtau_dv) * J;
    if (s->free_body) {
        const Eigen::Vector3d w = s->R * s->wl, v = s->R * s->vl;
        if (op == OP_ABA_DERIV) {
            du.block<3, 6>(u0 + 3, u0) += cross_jacobian(w, v);
        } else {
            crba(s->model, d, s->q, Convention::WORLD); // M, for M da/du (after dtau_dv was used)
            Eigen::MatrixXd M = d.M;
            M.triangularView<Eigen::StrictlyLower>() = M.transpose();
            Eigen::MatrixXd da = Eigen::MatrixXd::Zero(n, n);
            da.block<3, 6>(pv, u0) = -s->R.transpose() * cross_jacobian(w, v);
            du += J.transpose() * M * da;
        }
    }
    for (int i = 0; i < n; ++i)
        for (int j = 0; j < nq; ++j)
            out[(size_t)i * nq + j] = s->free_body ? NAN : dq(s->vmap[i], s->qmap[j]);
    for (int i = 0; i < n; ++i)
        for (int j = 0; j < n; ++j) out[(size_t)n * nq + (size_t)i * n + j] = du(i, j);
}

int pin_eval(pin_side *s, bench_op op, double *out)
{
    int rc = pin_run(s, op, 1);
    if (rc < 0) return rc;
    return guarded([&] {
        const Data &d = *s->data;
        const int n = s->nu, u0 = s->free_u, pv = s->pin_fv;
        // J takes mbk's u to Pinocchio's v: the permutation, and the free base's frames
        Eigen::MatrixXd J = Eigen::MatrixXd::Zero(n, n);
        for (int k = 0; k < n; ++k) J(s->vmap[k], k) = 1.0;
        if (s->free_body) {
            J.block<6, 6>(pv, u0).setZero();
            J.block<3, 3>(pv, u0 + 3) = s->R.transpose();
            J.block<3, 3>(pv + 3, u0) = s->R.transpose();
        }
        switch (op) {
        case OP_FULL: {
            Eigen::VectorXd ud(n);
            for (int k = 0; k < n; ++k) ud[k] = d.ddq[s->vmap[k]];
            if (s->free_body) {
                const Eigen::Vector3d al = d.ddq.segment<3>(pv), aa = d.ddq.segment<3>(pv + 3);
                ud.segment<3>(u0) = s->R * aa;
                ud.segment<3>(u0 + 3) = s->R * (al + s->wl.cross(s->vl));
            }
            for (int i = 0; i < n; ++i) out[i] = ud[i];
            break;
        }
        case OP_ID: {
            const Eigen::VectorXd res = J.transpose() * d.tau;
            for (int i = 0; i < n; ++i) out[i] = res[i];
            break;
        }
        case OP_MASS_KIN: {
            Eigen::MatrixXd Mp = d.M;
            Mp.triangularView<Eigen::StrictlyLower>() = Mp.transpose();
            const Eigen::MatrixXd M = J.transpose() * Mp * J;
            for (int i = 0; i < n; ++i)
                for (int j = 0; j < n; ++j) out[(size_t)i * n + j] = M(i, j);
            break;
        }
        case OP_ABA_DERIV:
        case OP_RNEA_DERIV:
            derivs_out(s, op, J, out);
            break;
        default:
            throw std::runtime_error("op not run on the Pinocchio side");
        }
    });
}

#endif
