// oracle_build.hpp -- internal: the pieces shared by simbody_oracle.cpp,
// simbody_forces_oracle.cpp and simbody_constraints_oracle.cpp that turn an
// orc_model into a Simbody MultibodySystem (bodies, mobilizers, mass
// properties, transforms, Euler-angle flag and compact q layout, q/u loading
// with quaternion normalization, applied forces, the model cache key).
//
// Not a public header: C code never sees it. Like the .cpp files that use it,
// it must be compiled WITHOUT -DNDEBUG (see CMakeLists.txt).
#ifndef MBK_ORACLE_BUILD_HPP
#define MBK_ORACLE_BUILD_HPP

#ifdef NDEBUG
#error "oracle_build.hpp must be compiled without NDEBUG (Debian's Simbody is built without it)"
#endif

#include "simbody_oracle.h"

#include "Simbody.h"

#include <string>
#include <vector>

namespace orc_build {

// Thrown by fail(); each oracle's C entry points catch it and prefix msg.
struct Error {
    std::string msg;
};

[[noreturn]] void fail(const std::string &m);
std::string num(int i);
void need(bool ok, const std::string &msg);

// A rotation given as 9 row-major doubles, checked proper orthonormal;
// failure message: what + " rotation is not a proper orthonormal matrix ...".
SimTK::Rotation to_rotation(const double *a, const std::string &what);
// 12 doubles: row-major rotation, then translation.
SimTK::Transform to_transform(const double *a, const std::string &what);
SimTK::Vec3 v3(const double *a);
void from_transform(const SimTK::Transform &X, double *a);
void from_spatial(const SimTK::SpatialVec &V, double *a);

// Mass properties about the body origin (inertia shifted from the COM).
SimTK::MassProperties mass_props(const orc_body &b, int index);
// Validates model pointers, parents and mobilizer types.
void check_model(const orc_model *m);
bool same_body(const orc_body &a, const orc_body &b);

// A copy of an orc_model, for cache comparison.
struct ModelKey {
    std::vector<orc_body> bodies;
    bool use_euler = false;
    double gravity[3] = {0, 0, 0};

    void assign(const orc_model *m);
    // compare_gravity: whether the model's gravity is part of the key.
    bool matches(const orc_model *m, bool compare_gravity) const;
};

// A flat key of element descriptors (forces, constraints), for cache comparison.
struct Key {
    std::vector<double> v;
    void add(double x) { v.push_back(x); }
    void add(const double *a, int n) { v.insert(v.end(), a, a + n); }
};

// Ground (index 0) plus one MobilizedBody per orc_body, added to matter.
std::vector<SimTK::MobilizedBody> build_bodies(SimTK::SimbodyMatterSubsystem &matter,
                                               const orc_model *m);

// Compact q layout. In Euler-angle mode Simbody still allocates 4 q slots for
// a Ball and 7 for a Free mobilizer (its maximum) and leaves the last slot
// unused; the oracle's q skips those slots.
struct QLayout {
    std::vector<int> qmap;             // compact q index -> Simbody q index
    std::vector<int> q_start, body_nq; // compact layout per body, Ground at 0
};

// realizeTopology(), set the Euler flag, realize through Instance and fill
// the layout; returns the state.
SimTK::State realize_model(SimTK::MultibodySystem &system, SimTK::SimbodyMatterSubsystem &matter,
                           const std::vector<SimTK::MobilizedBody> &mobods, bool use_euler,
                           QLayout &layout);

// Realize s (a copy of the model state, time already set) to Time, load the
// compact q (checking and normalizing quaternions) and u (zero if NULL).
void load_qu(const SimTK::MultibodySystem &system, const SimTK::SimbodyMatterSubsystem &matter,
             const QLayout &layout, SimTK::State &s, const double *q, const double *u);

// Applied mobility forces (nu) and body forces (6 per body, Ground ignored);
// either may be NULL.
void set_applied(const SimTK::Force::DiscreteForces &discrete, SimTK::State &s, int nb,
                 const double *mobility_forces, const double *body_forces);

} // namespace orc_build

#endif
