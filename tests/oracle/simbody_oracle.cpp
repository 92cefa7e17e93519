// simbody_oracle.cpp -- Simbody-backed implementation of simbody_oracle.h.
//
// Must be compiled WITHOUT -DNDEBUG: Debian's libsimbody-dev is built without
// it, and SimTK class layouts depend on it (mismatch crashes in
// realizeTopology()). The CMakeLists.txt next to this file takes care of it.
#ifdef NDEBUG
#error "simbody_oracle.cpp must be compiled without NDEBUG (Debian's Simbody is built without it)"
#endif

#include "simbody_oracle.h"

#include "oracle_build.hpp"

#include "Simbody.h"

#include <algorithm>
#include <cmath>
#include <exception>
#include <memory>
#include <string>
#include <vector>

using namespace SimTK;

namespace {

using namespace orc_build;

std::string g_last_error;

struct Oracle {
    ModelKey model;
    MultibodySystem system;
    SimbodyMatterSubsystem matter;
    GeneralForceSubsystem forces;
    Force::DiscreteForces discrete;
    std::vector<MobilizedBody> mobods; // index 0 = Ground
    State model_state;                 // Euler flag set, realized to Instance
    QLayout layout;                    // compact q layout (see oracle_build.hpp)

    Oracle() : matter(system), forces(system) {}

    bool matches(const orc_model *m) const { return model.matches(m, true); }
};

std::unique_ptr<Oracle> g_oracle;

Oracle &get_oracle(const orc_model *m)
{
    check_model(m);
    if (g_oracle && g_oracle->matches(m)) return *g_oracle;
    g_oracle.reset();
    std::unique_ptr<Oracle> o(new Oracle());
    o->model.assign(m);
    o->mobods = build_bodies(o->matter, m);
    const Vec3 g(m->gravity[0], m->gravity[1], m->gravity[2]);
    if (g != Vec3(0)) Force::UniformGravity(o->forces, o->matter, g);
    o->discrete = Force::DiscreteForces(o->forces, o->matter);
    o->model_state = realize_model(o->system, o->matter, o->mobods, o->model.use_euler, o->layout);
    g_oracle = std::move(o);
    return *g_oracle;
}

// Load q (normalizing quaternions), u and applied forces into a fresh State.
State load_state(Oracle &o, const double *q, const double *u, const double *mobility_forces,
                 const double *body_forces)
{
    State s = o.model_state;
    load_qu(o.system, o.matter, o.layout, s, q, u);
    set_applied(o.discrete, s, o.matter.getNumBodies(), mobility_forces, body_forces);
    return s;
}

template <class F> int guarded(F &&f)
{
    try {
        f();
        g_last_error.clear();
        return 0;
    } catch (const Error &e) {
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
        if (nq) *nq = (int)o.layout.qmap.size();
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
            if (q_start) q_start[b] = o.layout.q_start[b];
            if (body_nq) body_nq[b] = o.layout.body_nq[b];
            if (u_start) u_start[b] = b == 0 ? 0 : (int)mb.getFirstUIndex(s);
            if (body_nu) body_nu[b] = b == 0 ? 0 : mb.getNumU(s);
        }
    });
}

int orc_default_q(const orc_model *model, double *q)
{
    return guarded([&] {
        Oracle &o = get_oracle(model);
        if (!q && !o.layout.qmap.empty()) fail("q is NULL");
        const Vector &dq = o.model_state.getQ();
        for (size_t i = 0; i < o.layout.qmap.size(); ++i) q[i] = dq[o.layout.qmap[i]] + 0.0; // +0.0: no -0
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
        const int nq = (int)o.layout.qmap.size(), nu = s.getNU(), nb = o.matter.getNumBodies();
        if (out->q)
            for (int i = 0; i < nq; ++i) out->q[i] = s.getQ()[o.layout.qmap[i]];
        for (int b = 0; b < nb; ++b) {
            const MobilizedBody &mb = o.mobods[b];
            if (out->X_GB) from_transform(mb.getBodyTransform(s), out->X_GB + 12 * b);
            if (out->V_GB) from_spatial(mb.getBodyVelocity(s), out->V_GB + 6 * b);
            if (out->A_GB) from_spatial(mb.getBodyAcceleration(s), out->A_GB + 6 * b);
            if (out->X_FM) from_transform(mb.getMobilizerTransform(s), out->X_FM + 12 * b);
            if (out->V_FM) from_spatial(mb.getMobilizerVelocity(s), out->V_FM + 6 * b);
        }
        if (out->qdot)
            for (int i = 0; i < nq; ++i) out->qdot[i] = s.getQDot()[o.layout.qmap[i]];
        if (out->udot)
            for (int i = 0; i < nu; ++i) out->udot[i] = s.getUDot()[i];
        if (out->qdotdot)
            for (int i = 0; i < nq; ++i) out->qdotdot[i] = s.getQDotDot()[o.layout.qmap[i]];
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
