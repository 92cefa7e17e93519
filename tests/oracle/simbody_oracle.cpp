// simbody_oracle.cpp -- Simbody-backed implementation of simbody_oracle.h.
//
// Must be compiled WITHOUT -DNDEBUG: Debian's libsimbody-dev is built without
// it, and SimTK class layouts depend on it (mismatch crashes in
// realizeTopology()). The CMakeLists.txt next to this file takes care of it.
#ifdef NDEBUG
#error "simbody_oracle.cpp must be compiled without NDEBUG (Debian's Simbody is built without it)"
#endif

#include "simbody_oracle.h"

#include "Simbody.h"

#include <algorithm>
#include <cmath>
#include <exception>
#include <memory>
#include <string>
#include <vector>

using namespace SimTK;

namespace {

std::string g_last_error;

struct OrcError {
    std::string msg;
};

[[noreturn]] void fail(const std::string &m) { throw OrcError{m}; }

Transform to_transform(const double *a, const char *what, int body)
{
    // Check R^T R = I and det R = +1 with plain doubles (SimTK's Mat33(1)
    // trips a GCC -Warray-bounds false positive at -O3).
    double err = 0;
    for (int i = 0; i < 3; ++i)
        for (int j = 0; j < 3; ++j) {
            double d = (i == j) ? -1.0 : 0.0;
            for (int k = 0; k < 3; ++k) d += a[3 * k + i] * a[3 * k + j];
            err = std::max(err, std::fabs(d));
        }
    const double det = a[0] * (a[4] * a[8] - a[5] * a[7]) - a[1] * (a[3] * a[8] - a[5] * a[6]) +
                       a[2] * (a[3] * a[7] - a[4] * a[6]);
    Mat33 m;
    for (int i = 0; i < 3; ++i)
        for (int j = 0; j < 3; ++j) m(i, j) = a[3 * i + j];
    if (!(err <= 1e-9) || !(det > 0))
        fail(std::string("body ") + std::to_string(body) + ": " + what +
             " rotation is not a proper orthonormal matrix (|R^T R - I| = " + std::to_string(err) +
             ")");
    return Transform(Rotation(m, true), Vec3(a[9], a[10], a[11]));
}

void from_transform(const Transform &X, double *a)
{
    for (int i = 0; i < 3; ++i)
        for (int j = 0; j < 3; ++j) a[3 * i + j] = X.R().asMat33()(i, j);
    for (int i = 0; i < 3; ++i) a[9 + i] = X.p()[i];
}

void from_spatial(const SpatialVec &V, double *a)
{
    for (int i = 0; i < 3; ++i) a[i] = V[0][i];
    for (int i = 0; i < 3; ++i) a[3 + i] = V[1][i];
}

// A copy of an orc_model, for cache comparison.
struct ModelCopy {
    std::vector<orc_body> bodies;
    int use_euler = 0;
    double gravity[3] = {0, 0, 0};
};

bool same_body(const orc_body &a, const orc_body &b)
{
    if (a.parent != b.parent || a.type != b.type || a.screw_pitch != b.screw_pitch ||
        a.mass != b.mass)
        return false;
    for (int i = 0; i < 12; ++i)
        if (a.X_PF[i] != b.X_PF[i] || a.X_BM[i] != b.X_BM[i]) return false;
    for (int i = 0; i < 3; ++i)
        if (a.com[i] != b.com[i]) return false;
    for (int i = 0; i < 9; ++i)
        if (a.inertia_about_com[i] != b.inertia_about_com[i]) return false;
    return true;
}

struct Oracle {
    ModelCopy model;
    MultibodySystem system;
    SimbodyMatterSubsystem matter;
    GeneralForceSubsystem forces;
    Force::DiscreteForces discrete;
    std::vector<MobilizedBody> mobods; // index 0 = Ground
    State model_state;                 // Euler flag set, realized to Instance
    // Compact q index -> Simbody q index. In Euler-angle mode Simbody still
    // allocates 4 q slots for a Ball and 7 for a Free mobilizer (its maximum)
    // and leaves the last slot unused; the oracle's q skips those slots.
    std::vector<int> qmap;
    std::vector<int> q_start, body_nq; // compact layout per body, Ground at 0

    Oracle() : matter(system), forces(system) {}

    bool matches(const orc_model *m) const
    {
        if (m->n_bodies != (int)model.bodies.size() || (m->use_euler_angles != 0) != (model.use_euler != 0))
            return false;
        for (int i = 0; i < 3; ++i)
            if (m->gravity[i] != model.gravity[i]) return false;
        for (int i = 0; i < m->n_bodies; ++i)
            if (!same_body(m->bodies[i], model.bodies[i])) return false;
        return true;
    }
};

std::unique_ptr<Oracle> g_oracle;

MassProperties mass_props(const orc_body &b, int index)
{
    if (!(b.mass >= 0)) fail("body " + std::to_string(index) + ": negative or NaN mass");
    Mat33 Ic;
    for (int i = 0; i < 3; ++i)
        for (int j = 0; j < 3; ++j) Ic(i, j) = b.inertia_about_com[3 * i + j];
    for (int i = 0; i < 3; ++i)
        for (int j = i + 1; j < 3; ++j)
            if (std::fabs(Ic(i, j) - Ic(j, i)) > 1e-12 * (1 + std::fabs(Ic(i, j))))
                fail("body " + std::to_string(index) + ": inertia_about_com is not symmetric");
    const Vec3 c(b.com[0], b.com[1], b.com[2]);
    // Parallel-axis shift from the centre of mass to the body origin, which is
    // at -c measured from the centre of mass.
    const Inertia I_o = Inertia(Ic).shiftFromMassCenter(-c, b.mass);
    return MassProperties(b.mass, c, I_o);
}

void check_model(const orc_model *m)
{
    if (!m) fail("model is NULL");
    if (m->n_bodies < 0) fail("n_bodies is negative");
    if (m->n_bodies > 0 && !m->bodies) fail("bodies is NULL");
    for (int i = 0; i < m->n_bodies; ++i) {
        const orc_body &b = m->bodies[i];
        const int idx = i + 1;
        if (b.parent < 0 || b.parent >= idx)
            fail("body " + std::to_string(idx) + ": parent " + std::to_string(b.parent) +
                 " must be in 0.." + std::to_string(idx - 1));
        if ((int)b.type < (int)ORC_WELD || (int)b.type > (int)ORC_BUSHING)
            fail("body " + std::to_string(idx) + ": unknown mobilizer type " + std::to_string((int)b.type));
    }
}

Oracle &get_oracle(const orc_model *m)
{
    check_model(m);
    if (g_oracle && g_oracle->matches(m)) return *g_oracle;
    g_oracle.reset();
    std::unique_ptr<Oracle> o(new Oracle());
    o->model.bodies.assign(m->bodies, m->bodies + m->n_bodies);
    o->model.use_euler = m->use_euler_angles != 0;
    for (int i = 0; i < 3; ++i) o->model.gravity[i] = m->gravity[i];

    o->mobods.push_back(o->matter.Ground());
    for (int i = 0; i < m->n_bodies; ++i) {
        const orc_body &b = m->bodies[i];
        const int idx = i + 1;
        MobilizedBody &parent = o->mobods[b.parent];
        const Transform X_PF = to_transform(b.X_PF, "X_PF", idx);
        const Transform X_BM = to_transform(b.X_BM, "X_BM", idx);
        const Body::Rigid body(mass_props(b, idx));
        MobilizedBody mb;
        switch (b.type) {
        case ORC_WELD: mb = MobilizedBody::Weld(parent, X_PF, body, X_BM); break;
        case ORC_PIN: mb = MobilizedBody::Pin(parent, X_PF, body, X_BM); break;
        case ORC_SLIDER: mb = MobilizedBody::Slider(parent, X_PF, body, X_BM); break;
        case ORC_SCREW: mb = MobilizedBody::Screw(parent, X_PF, body, X_BM, b.screw_pitch); break;
        case ORC_UNIVERSAL: mb = MobilizedBody::Universal(parent, X_PF, body, X_BM); break;
        case ORC_CYLINDER: mb = MobilizedBody::Cylinder(parent, X_PF, body, X_BM); break;
        case ORC_PLANAR: mb = MobilizedBody::Planar(parent, X_PF, body, X_BM); break;
        case ORC_GIMBAL: mb = MobilizedBody::Gimbal(parent, X_PF, body, X_BM); break;
        case ORC_BALL: mb = MobilizedBody::Ball(parent, X_PF, body, X_BM); break;
        case ORC_TRANSLATION: mb = MobilizedBody::Translation(parent, X_PF, body, X_BM); break;
        case ORC_FREE: mb = MobilizedBody::Free(parent, X_PF, body, X_BM); break;
        case ORC_BUSHING: mb = MobilizedBody::Bushing(parent, X_PF, body, X_BM); break;
        }
        o->mobods.push_back(mb);
    }
    const Vec3 g(m->gravity[0], m->gravity[1], m->gravity[2]);
    if (g != Vec3(0)) Force::UniformGravity(o->forces, o->matter, g);
    o->discrete = Force::DiscreteForces(o->forces, o->matter);

    State s = o->system.realizeTopology();
    o->matter.setUseEulerAngles(s, o->model.use_euler != 0);
    o->system.realizeModel(s);
    o->system.realize(s, Stage::Instance);
    o->q_start.assign(1, 0);
    o->body_nq.assign(1, 0);
    for (int b = 1; b <= m->n_bodies; ++b) {
        const MobilizedBody &mb = o->mobods[b];
        o->q_start.push_back((int)o->qmap.size());
        o->body_nq.push_back(mb.getNumQ(s));
        for (int k = 0; k < mb.getNumQ(s); ++k) o->qmap.push_back((int)mb.getFirstQIndex(s) + k);
    }
    o->model_state = s;
    g_oracle = std::move(o);
    return *g_oracle;
}

// Load q (normalizing quaternions), u and applied forces into a fresh State.
State load_state(Oracle &o, const double *q, const double *u, const double *mobility_forces,
                 const double *body_forces)
{
    State s = o.model_state;
    // Copying a State keeps only what was realized through Instance; Time must
    // be realized again before normalizeQuaternions() can run.
    o.system.realize(s, Stage::Time);
    const int nq = (int)o.qmap.size(), nu = s.getNU();
    const int nb = o.matter.getNumBodies();
    if (nq > 0 && !q) fail("q is NULL");
    for (int i = 0; i < nq; ++i) s.updQ()[o.qmap[i]] = q[i];
    for (int b = 1; b < nb; ++b) {
        if (!o.matter.isUsingQuaternion(s, MobilizedBodyIndex(b))) continue;
        const int q0 = o.q_start[b];
        double n2 = 0;
        for (int k = 0; k < 4; ++k) n2 += q[q0 + k] * q[q0 + k];
        if (!(n2 > 0) || !std::isfinite(n2))
            fail("body " + std::to_string(b) + ": quaternion is zero or not finite");
    }
    o.matter.normalizeQuaternions(s);
    for (int i = 0; i < nu; ++i) s.updU()[i] = u ? u[i] : 0.0;
    if (mobility_forces) {
        Vector f(nu);
        for (int i = 0; i < nu; ++i) f[i] = mobility_forces[i];
        o.discrete.setAllMobilityForces(s, f);
    }
    if (body_forces) {
        Vector_<SpatialVec> F(nb);
        F[0] = SpatialVec(Vec3(0), Vec3(0)); // Ground: ignored
        for (int b = 1; b < nb; ++b) {
            const double *a = body_forces + 6 * b;
            F[b] = SpatialVec(Vec3(a[0], a[1], a[2]), Vec3(a[3], a[4], a[5]));
        }
        o.discrete.setAllBodyForces(s, F);
    }
    return s;
}

template <class F> int guarded(F &&f)
{
    try {
        f();
        g_last_error.clear();
        return 0;
    } catch (const OrcError &e) {
        g_last_error = "orc: " + e.msg;
    } catch (const std::exception &e) {
        g_last_error = std::string("orc: Simbody exception: ") + e.what();
    } catch (...) {
        g_last_error = "orc: unknown C++ exception";
    }
    return -1;
}

void copy_matrix(const Matrix &A, double *out)
{
    const int r = A.nrow(), c = A.ncol();
    for (int i = 0; i < r; ++i)
        for (int j = 0; j < c; ++j) out[i * c + j] = A(i, j);
}

} // namespace

extern "C" {

const char *orc_last_error(void) { return g_last_error.c_str(); }

int orc_sizes(const orc_model *model, int *nq, int *nu)
{
    return guarded([&] {
        Oracle &o = get_oracle(model);
        if (nq) *nq = (int)o.qmap.size();
        if (nu) *nu = o.model_state.getNU();
    });
}

int orc_layout(const orc_model *model, int *q_start, int *body_nq, int *u_start, int *body_nu)
{
    return guarded([&] {
        Oracle &o = get_oracle(model);
        const State &s = o.model_state;
        for (int b = 0; b <= model->n_bodies; ++b) {
            const MobilizedBody &mb = o.mobods[b];
            if (q_start) q_start[b] = o.q_start[b];
            if (body_nq) body_nq[b] = o.body_nq[b];
            if (u_start) u_start[b] = b == 0 ? 0 : (int)mb.getFirstUIndex(s);
            if (body_nu) body_nu[b] = b == 0 ? 0 : mb.getNumU(s);
        }
    });
}

int orc_default_q(const orc_model *model, double *q)
{
    return guarded([&] {
        Oracle &o = get_oracle(model);
        if (!q && !o.qmap.empty()) fail("q is NULL");
        const Vector &dq = o.model_state.getQ();
        for (size_t i = 0; i < o.qmap.size(); ++i) q[i] = dq[o.qmap[i]] + 0.0; // +0.0: no -0
    });
}

int orc_eval(const orc_model *model, const double *q, const double *u,
             const double *mobility_forces, const double *body_forces, orc_result *out)
{
    return guarded([&] {
        if (!out) fail("out is NULL");
        Oracle &o = get_oracle(model);
        State s = load_state(o, q, u, mobility_forces, body_forces);
        o.system.realize(s, Stage::Acceleration);
        const int nq = (int)o.qmap.size(), nu = s.getNU(), nb = o.matter.getNumBodies();
        if (out->q)
            for (int i = 0; i < nq; ++i) out->q[i] = s.getQ()[o.qmap[i]];
        for (int b = 0; b < nb; ++b) {
            const MobilizedBody &mb = o.mobods[b];
            if (out->X_GB) from_transform(mb.getBodyTransform(s), out->X_GB + 12 * b);
            if (out->V_GB) from_spatial(mb.getBodyVelocity(s), out->V_GB + 6 * b);
            if (out->A_GB) from_spatial(mb.getBodyAcceleration(s), out->A_GB + 6 * b);
            if (out->X_FM) from_transform(mb.getMobilizerTransform(s), out->X_FM + 12 * b);
            if (out->V_FM) from_spatial(mb.getMobilizerVelocity(s), out->V_FM + 6 * b);
        }
        if (out->qdot)
            for (int i = 0; i < nq; ++i) out->qdot[i] = s.getQDot()[o.qmap[i]];
        if (out->udot)
            for (int i = 0; i < nu; ++i) out->udot[i] = s.getUDot()[i];
        if (out->qdotdot)
            for (int i = 0; i < nq; ++i) out->qdotdot[i] = s.getQDotDot()[o.qmap[i]];
        if (out->M) {
            Matrix M;
            o.matter.calcM(s, M);
            copy_matrix(M, out->M);
        }
        if (out->J) {
            Matrix J;
            o.matter.calcSystemJacobian(s, J); // 6*nb x nu, body i rows 6i..6i+5 = (w, v)
            copy_matrix(J, out->J);
        }
        out->kinetic_energy = o.system.calcKineticEnergy(s);
        out->potential_energy = o.system.calcPotentialEnergy(s);
    });
}

int orc_inverse_dynamics(const orc_model *model, const double *q, const double *u,
                         const double *known_udot, const double *mobility_forces,
                         const double *body_forces, double *residual)
{
    return guarded([&] {
        if (!residual) fail("residual is NULL");
        Oracle &o = get_oracle(model);
        State s = load_state(o, q, u, mobility_forces, body_forces);
        // Dynamics stage: the MultibodySystem's force accumulators then hold
        // gravity + the DiscreteForces element (our applied forces).
        o.system.realize(s, Stage::Dynamics);
        const int nu = s.getNU();
        const Vector &f = o.system.getMobilityForces(s, Stage::Dynamics);
        const Vector_<SpatialVec> &F = o.system.getRigidBodyForces(s, Stage::Dynamics);
        Vector udot(nu);
        for (int i = 0; i < nu; ++i) udot[i] = known_udot ? known_udot[i] : 0.0;
        Vector r;
        o.matter.calcResidualForceIgnoringConstraints(s, f, F, udot, r);
        for (int i = 0; i < nu; ++i) residual[i] = r[i];
    });
}

int orc_mass_matrix(const orc_model *model, const double *q, double *M)
{
    return guarded([&] {
        if (!M) fail("M is NULL");
        Oracle &o = get_oracle(model);
        State s = load_state(o, q, nullptr, nullptr, nullptr);
        o.system.realize(s, Stage::Position);
        Matrix Mm;
        o.matter.calcM(s, Mm);
        copy_matrix(Mm, M);
    });
}

void orc_release(void) { g_oracle.reset(); }

} // extern "C"
