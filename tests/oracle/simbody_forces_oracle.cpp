// simbody_forces_oracle.cpp -- Simbody-backed implementation of
// simbody_forces_oracle.h: an orc_model's bodies plus a list of Simbody's
// built-in force elements, evaluated at one (q, u).
//
// The body-building code (mobilizers, frames, mass-property shift, Euler-angle
// q compaction and quaternion normalization) is shared with simbody_oracle.cpp
// through oracle_build.hpp. Like it, this file must be compiled WITHOUT
// -DNDEBUG (Debian's libsimbody-dev is built without it; see CMakeLists.txt).
#ifdef NDEBUG
#error "simbody_forces_oracle.cpp must be compiled without NDEBUG (Debian's Simbody is built without it)"
#endif

#include "simbody_forces_oracle.h"

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

std::string g_forces_error;

// ---- force descriptors: validation and a flat key for cache comparison ----

void need_body(int b, int nb, bool allow_ground, const std::string &what)
{
    const int lo = allow_ground ? 0 : 1;
    if (b < lo || b > nb)
        fail(what + " " + num(b) + " must be in " + num(lo) + ".." + num(nb));
}

// Validate what can be validated without Simbody (indices within a mobilizer
// are checked after the system is built) and append the descriptor to key.
void describe(const orc_force &f, int index, int nb, Key &key)
{
    const std::string e = "force " + num(index) + ": ";
    key.add((double)f.kind);
    switch (f.kind) {
    case ORC_FORCE_UNIFORM_GRAVITY:
        key.add(f.gravity.g, 3);
        key.add(f.gravity.zero_height);
        break;
    case ORC_FORCE_TWO_POINT_SPRING: {
        const orc_two_point_spring &s = f.spring;
        need_body(s.body1, nb, true, e + "body1");
        need_body(s.body2, nb, true, e + "body2");
        key.add(s.body1); key.add(s.body2);
        key.add(s.station1, 3); key.add(s.station2, 3);
        key.add(s.k); key.add(s.x0);
        break;
    }
    case ORC_FORCE_TWO_POINT_DAMPER: {
        const orc_two_point_damper &s = f.damper;
        need_body(s.body1, nb, true, e + "body1");
        need_body(s.body2, nb, true, e + "body2");
        // Simbody only assert()s this, which would abort the test program.
        need(s.c >= 0, e + "damping c must be >= 0");
        key.add(s.body1); key.add(s.body2);
        key.add(s.station1, 3); key.add(s.station2, 3);
        key.add(s.c);
        break;
    }
    case ORC_FORCE_TWO_POINT_CONSTANT: {
        const orc_two_point_constant &s = f.two_point_force;
        need_body(s.body1, nb, true, e + "body1");
        need_body(s.body2, nb, true, e + "body2");
        key.add(s.body1); key.add(s.body2);
        key.add(s.station1, 3); key.add(s.station2, 3);
        key.add(s.f);
        break;
    }
    case ORC_FORCE_MOBILITY_SPRING:
        need_body(f.mobility_spring.body, nb, false, e + "body");
        key.add(f.mobility_spring.body); key.add(f.mobility_spring.which_q);
        key.add(f.mobility_spring.k); key.add(f.mobility_spring.q_zero);
        break;
    case ORC_FORCE_MOBILITY_DAMPER:
        need_body(f.mobility_damper.body, nb, false, e + "body");
        need(f.mobility_damper.c >= 0, e + "damping c must be >= 0");
        key.add(f.mobility_damper.body); key.add(f.mobility_damper.which_u);
        key.add(f.mobility_damper.c);
        break;
    case ORC_FORCE_MOBILITY_CONSTANT:
        need_body(f.mobility_force.body, nb, false, e + "body");
        key.add(f.mobility_force.body); key.add(f.mobility_force.which_u);
        key.add(f.mobility_force.f);
        break;
    case ORC_FORCE_MOBILITY_STOP: {
        const orc_mobility_stop &s = f.stop;
        need_body(s.body, nb, false, e + "body");
        need(s.stiffness >= 0 && s.dissipation >= 0, e + "stiffness and dissipation must be >= 0");
        need(s.q_low <= s.q_high, e + "q_low must be <= q_high");
        key.add(s.body); key.add(s.which_q);
        key.add(s.stiffness); key.add(s.dissipation); key.add(s.q_low); key.add(s.q_high);
        break;
    }
    case ORC_FORCE_CONSTANT_FORCE:
        need_body(f.constant_force.body, nb, true, e + "body");
        key.add(f.constant_force.body);
        key.add(f.constant_force.station, 3); key.add(f.constant_force.force, 3);
        break;
    case ORC_FORCE_CONSTANT_TORQUE:
        need_body(f.constant_torque.body, nb, true, e + "body");
        key.add(f.constant_torque.body); key.add(f.constant_torque.torque, 3);
        break;
    case ORC_FORCE_LINEAR_BUSHING: {
        const orc_linear_bushing &s = f.bushing;
        need_body(s.body1, nb, true, e + "body1");
        need_body(s.body2, nb, true, e + "body2");
        for (int i = 0; i < 6; ++i)
            need(s.stiffness[i] >= 0 && s.damping[i] >= 0,
                 e + "bushing stiffness and damping must be >= 0");
        to_rotation(s.X_B1F, e + "X_B1F");
        to_rotation(s.X_B2M, e + "X_B2M");
        key.add(s.body1); key.add(s.body2);
        key.add(s.X_B1F, 12); key.add(s.X_B2M, 12);
        key.add(s.stiffness, 6); key.add(s.damping, 6);
        break;
    }
    case ORC_FORCE_HUNT_CROSSLEY: {
        const orc_hunt_crossley &s = f.contact;
        need_body(s.body, nb, false, e + "body");
        need(s.radius > 0, e + "radius must be > 0");
        need(s.transition_velocity > 0, e + "transition_velocity must be > 0");
        const orc_hc_material *m[2] = {&s.sphere, &s.plane};
        for (int i = 0; i < 2; ++i) {
            need(m[i]->stiffness > 0, e + "material stiffness must be > 0");
            need(m[i]->dissipation >= 0 && m[i]->static_friction >= 0 &&
                     m[i]->dynamic_friction >= 0 && m[i]->viscous_friction >= 0,
                 e + "dissipation and friction coefficients must be >= 0");
        }
        key.add(s.body); key.add(s.center, 3); key.add(s.radius); key.add(s.plane_height);
        for (int i = 0; i < 2; ++i) {
            key.add(m[i]->stiffness); key.add(m[i]->dissipation); key.add(m[i]->static_friction);
            key.add(m[i]->dynamic_friction); key.add(m[i]->viscous_friction);
        }
        key.add(s.transition_velocity);
        break;
    }
    default:
        fail(e + "unknown kind " + num((int)f.kind));
    }
}

struct ForceOracle {
    ModelKey model;          // gravity is not part of this oracle's model
    std::vector<double> key; // all force descriptors, flattened
    MultibodySystem system;
    SimbodyMatterSubsystem matter;
    GeneralForceSubsystem forces;
    GeneralContactSubsystem contacts;
    std::vector<MobilizedBody> mobods; // index 0 = Ground
    State model_state;                 // Euler flag set, realized to Instance
    QLayout layout;                    // compact q layout (see oracle_build.hpp)

    ForceOracle() : matter(system), forces(system), contacts(system) {}

    bool matches(const orc_model *m, const Key &k) const
    {
        return model.matches(m, false) && k.v == key;
    }
};

std::unique_ptr<ForceOracle> g_forces;

void add_force(ForceOracle &o, const orc_force &f)
{
    const std::vector<MobilizedBody> &mb = o.mobods;
    switch (f.kind) {
    case ORC_FORCE_UNIFORM_GRAVITY:
        Force::UniformGravity(o.forces, o.matter, v3(f.gravity.g), f.gravity.zero_height);
        break;
    case ORC_FORCE_TWO_POINT_SPRING: {
        const orc_two_point_spring &s = f.spring;
        Force::TwoPointLinearSpring(o.forces, mb[s.body1], v3(s.station1), mb[s.body2],
                                    v3(s.station2), s.k, s.x0);
        break;
    }
    case ORC_FORCE_TWO_POINT_DAMPER: {
        const orc_two_point_damper &s = f.damper;
        Force::TwoPointLinearDamper(o.forces, mb[s.body1], v3(s.station1), mb[s.body2],
                                    v3(s.station2), s.c);
        break;
    }
    case ORC_FORCE_TWO_POINT_CONSTANT: {
        const orc_two_point_constant &s = f.two_point_force;
        Force::TwoPointConstantForce(o.forces, mb[s.body1], v3(s.station1), mb[s.body2],
                                     v3(s.station2), s.f);
        break;
    }
    case ORC_FORCE_MOBILITY_SPRING: {
        const orc_mobility_spring &s = f.mobility_spring;
        Force::MobilityLinearSpring(o.forces, mb[s.body], MobilizerQIndex(s.which_q), s.k, s.q_zero);
        break;
    }
    case ORC_FORCE_MOBILITY_DAMPER: {
        const orc_mobility_damper &s = f.mobility_damper;
        Force::MobilityLinearDamper(o.forces, mb[s.body], MobilizerUIndex(s.which_u), s.c);
        break;
    }
    case ORC_FORCE_MOBILITY_CONSTANT: {
        const orc_mobility_constant &s = f.mobility_force;
        Force::MobilityConstantForce(o.forces, mb[s.body], MobilizerUIndex(s.which_u), s.f);
        break;
    }
    case ORC_FORCE_MOBILITY_STOP: {
        const orc_mobility_stop &s = f.stop;
        Force::MobilityLinearStop(o.forces, mb[s.body], MobilizerQIndex(s.which_q), s.stiffness,
                                  s.dissipation, s.q_low, s.q_high);
        break;
    }
    case ORC_FORCE_CONSTANT_FORCE:
        Force::ConstantForce(o.forces, mb[f.constant_force.body], v3(f.constant_force.station),
                             v3(f.constant_force.force));
        break;
    case ORC_FORCE_CONSTANT_TORQUE:
        Force::ConstantTorque(o.forces, mb[f.constant_torque.body], v3(f.constant_torque.torque));
        break;
    case ORC_FORCE_LINEAR_BUSHING: {
        const orc_linear_bushing &s = f.bushing;
        Vec6 k, c;
        for (int i = 0; i < 6; ++i) {
            k[i] = s.stiffness[i];
            c[i] = s.damping[i];
        }
        Force::LinearBushing(o.forces, mb[s.body1], to_transform(s.X_B1F, "X_B1F"), mb[s.body2],
                             to_transform(s.X_B2M, "X_B2M"), k, c);
        break;
    }
    case ORC_FORCE_HUNT_CROSSLEY: {
        const orc_hunt_crossley &s = f.contact;
        const ContactSetIndex set = o.contacts.createContactSet();
        // Simbody's HalfSpace is x >= 0 of its frame H with outward normal -x_H.
        // R_GH = R_y(+pi/2) maps x_H to -z_G, so H's -x is +z_G; H's origin at
        // (0,0,h): the half-space is z <= h with outward normal +z.
        Mat33 R;
        R(0, 0) = 0;  R(0, 1) = 0; R(0, 2) = 1;
        R(1, 0) = 0;  R(1, 1) = 1; R(1, 2) = 0;
        R(2, 0) = -1; R(2, 1) = 0; R(2, 2) = 0;
        const Transform X_GH(Rotation(R, true), Vec3(0, 0, s.plane_height));
        o.contacts.addBody(set, o.matter.Ground(), ContactGeometry::HalfSpace(), X_GH); // surface 0
        o.contacts.addBody(set, mb[s.body], ContactGeometry::Sphere(s.radius),
                           Transform(Vec3(s.center[0], s.center[1], s.center[2]))); // surface 1
        HuntCrossleyForce hc(o.forces, o.contacts, set);
        const orc_hc_material &p = s.plane, &q = s.sphere;
        hc.setBodyParameters(ContactSurfaceIndex(0), p.stiffness, p.dissipation, p.static_friction,
                             p.dynamic_friction, p.viscous_friction);
        hc.setBodyParameters(ContactSurfaceIndex(1), q.stiffness, q.dissipation, q.static_friction,
                             q.dynamic_friction, q.viscous_friction);
        hc.setTransitionVelocity(s.transition_velocity);
        break;
    }
    }
}

// Indices within a mobilizer, checked against Simbody's own counts.
void check_indices(const ForceOracle &o, const orc_force *forces, int n_forces)
{
    const State &s = o.model_state;
    for (int i = 0; i < n_forces; ++i) {
        const orc_force &f = forces[i];
        int body = 0, idx = 0;
        bool q_and_u = false;
        switch (f.kind) {
        case ORC_FORCE_MOBILITY_SPRING: body = f.mobility_spring.body; idx = f.mobility_spring.which_q; q_and_u = true; break;
        case ORC_FORCE_MOBILITY_STOP: body = f.stop.body; idx = f.stop.which_q; q_and_u = true; break;
        case ORC_FORCE_MOBILITY_DAMPER: body = f.mobility_damper.body; idx = f.mobility_damper.which_u; break;
        case ORC_FORCE_MOBILITY_CONSTANT: body = f.mobility_force.body; idx = f.mobility_force.which_u; break;
        default: continue;
        }
        const MobilizedBody &mb = o.mobods[body];
        const int nq = mb.getNumQ(s), nu = mb.getNumU(s);
        const int limit = q_and_u ? std::min(nq, nu) : nu;
        if (idx < 0 || idx >= limit)
            fail("force " + num(i) + ": coordinate index " + num(idx) + " of body " + num(body) +
                 " must be in 0.." + num(limit - 1) +
                 (q_and_u ? " (used as both a q and a u index)" : " (u index)"));
    }
}

ForceOracle &get_forces(const orc_model *m, const orc_force *forces, int n_forces)
{
    check_model(m);
    if (n_forces < 0) fail("n_forces is negative");
    if (n_forces > 0 && !forces) fail("forces is NULL");
    Key key;
    for (int i = 0; i < n_forces; ++i) describe(forces[i], i, m->n_bodies, key);
    if (g_forces && g_forces->matches(m, key)) return *g_forces;
    g_forces.reset();

    std::unique_ptr<ForceOracle> o(new ForceOracle());
    o->model.assign(m);
    o->key = key.v;
    o->mobods = build_bodies(o->matter, m);
    for (int i = 0; i < n_forces; ++i) add_force(*o, forces[i]);
    o->model_state = realize_model(o->system, o->matter, o->mobods, o->model.use_euler, o->layout);
    check_indices(*o, forces, n_forces);
    g_forces = std::move(o);
    return *g_forces;
}

} // namespace

extern "C" {

const char *orc_forces_last_error(void) { return g_forces_error.c_str(); }

int orc_eval_forces(const orc_model *model, const orc_force *forces, int n_forces,
                    const double *q, const double *u, double *body_forces,
                    double *mobility_forces, double *potential_energy, double *power)
{
    try {
        ForceOracle &o = get_forces(model, forces, n_forces);
        State s = o.model_state;
        load_qu(o.system, o.matter, o.layout, s, q, u);
        const int nu = s.getNU(), nb = o.matter.getNumBodies();
        o.system.realize(s, Stage::Dynamics);

        const Vector_<SpatialVec> &F = o.system.getRigidBodyForces(s, Stage::Dynamics);
        const Vector &f = o.system.getMobilityForces(s, Stage::Dynamics);
        if (body_forces)
            for (int b = 0; b < nb; ++b)
                for (int k = 0; k < 3; ++k) {
                    body_forces[6 * b + k] = F[b][0][k];
                    body_forces[6 * b + 3 + k] = F[b][1][k];
                }
        if (mobility_forces)
            for (int i = 0; i < nu; ++i) mobility_forces[i] = f[i];
        if (potential_energy) *potential_energy = o.system.calcPotentialEnergy(s);
        if (power) {
            double P = 0;
            for (int b = 1; b < nb; ++b) {
                const SpatialVec &V = o.mobods[b].getBodyVelocity(s);
                P += dot(F[b][0], V[0]) + dot(F[b][1], V[1]);
            }
            for (int i = 0; i < nu; ++i) P += f[i] * s.getU()[i];
            *power = P;
        }
        g_forces_error.clear();
        return 0;
    } catch (const Error &e) {
        g_forces_error = "orc_eval_forces: " + e.msg;
    } catch (const std::exception &e) {
        g_forces_error = std::string("orc_eval_forces: Simbody exception: ") + e.what();
    } catch (...) {
        g_forces_error = "orc_eval_forces: unknown C++ exception";
    }
    return -1;
}

void orc_forces_release(void) { g_forces.reset(); }

} // extern "C"
