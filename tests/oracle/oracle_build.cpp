// oracle_build.cpp -- see oracle_build.hpp. Must be compiled WITHOUT -DNDEBUG.
#include "oracle_build.hpp"

#include <algorithm>
#include <cmath>

using namespace SimTK;

namespace orc_build {

void fail(const std::string &m) { throw Error{m}; }

std::string num(int i) { return std::to_string(i); }

void need(bool ok, const std::string &msg)
{
    if (!ok) fail(msg);
}

Rotation to_rotation(const double *a, const std::string &what)
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
    if (!(err <= 1e-9) || !(det > 0))
        fail(what + " rotation is not a proper orthonormal matrix (|R^T R - I| = " +
             std::to_string(err) + ")");
    Mat33 m;
    for (int i = 0; i < 3; ++i)
        for (int j = 0; j < 3; ++j) m(i, j) = a[3 * i + j];
    return Rotation(m, true);
}

Transform to_transform(const double *a, const std::string &what)
{
    return Transform(to_rotation(a, what), Vec3(a[9], a[10], a[11]));
}

Vec3 v3(const double *a) { return Vec3(a[0], a[1], a[2]); }

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

MassProperties mass_props(const orc_body &b, int index)
{
    if (!(b.mass >= 0)) fail("body " + num(index) + ": negative or NaN mass");
    Mat33 Ic;
    for (int i = 0; i < 3; ++i)
        for (int j = 0; j < 3; ++j) Ic(i, j) = b.inertia_about_com[3 * i + j];
    for (int i = 0; i < 3; ++i)
        for (int j = i + 1; j < 3; ++j)
            if (std::fabs(Ic(i, j) - Ic(j, i)) > 1e-12 * (1 + std::fabs(Ic(i, j))))
                fail("body " + num(index) + ": inertia_about_com is not symmetric");
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
            fail("body " + num(idx) + ": parent " + num(b.parent) + " must be in 0.." + num(idx - 1));
        if ((int)b.type < (int)ORC_WELD || (int)b.type > (int)ORC_BUSHING)
            fail("body " + num(idx) + ": unknown mobilizer type " + num((int)b.type));
    }
}

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

void ModelKey::assign(const orc_model *m)
{
    bodies.assign(m->bodies, m->bodies + m->n_bodies);
    use_euler = m->use_euler_angles != 0;
    for (int i = 0; i < 3; ++i) gravity[i] = m->gravity[i];
}

bool ModelKey::matches(const orc_model *m, bool compare_gravity) const
{
    if (m->n_bodies != (int)bodies.size() || (m->use_euler_angles != 0) != use_euler) return false;
    if (compare_gravity)
        for (int i = 0; i < 3; ++i)
            if (m->gravity[i] != gravity[i]) return false;
    for (int i = 0; i < m->n_bodies; ++i)
        if (!same_body(m->bodies[i], bodies[i])) return false;
    return true;
}

std::vector<MobilizedBody> build_bodies(SimbodyMatterSubsystem &matter, const orc_model *m)
{
    std::vector<MobilizedBody> mobods;
    mobods.push_back(matter.Ground());
    for (int i = 0; i < m->n_bodies; ++i) {
        const orc_body &b = m->bodies[i];
        const int idx = i + 1;
        MobilizedBody &parent = mobods[b.parent];
        const Transform X_PF = to_transform(b.X_PF, "body " + num(idx) + ": X_PF");
        const Transform X_BM = to_transform(b.X_BM, "body " + num(idx) + ": X_BM");
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
        mobods.push_back(mb);
    }
    return mobods;
}

State realize_model(MultibodySystem &system, SimbodyMatterSubsystem &matter,
                    const std::vector<MobilizedBody> &mobods, bool use_euler, QLayout &layout)
{
    State s = system.realizeTopology();
    matter.setUseEulerAngles(s, use_euler);
    system.realizeModel(s);
    system.realize(s, Stage::Instance);
    layout.qmap.clear();
    layout.q_start.assign(1, 0);
    layout.body_nq.assign(1, 0);
    for (size_t b = 1; b < mobods.size(); ++b) {
        const MobilizedBody &mb = mobods[b];
        layout.q_start.push_back((int)layout.qmap.size());
        layout.body_nq.push_back(mb.getNumQ(s));
        for (int k = 0; k < mb.getNumQ(s); ++k) layout.qmap.push_back((int)mb.getFirstQIndex(s) + k);
    }
    return s;
}

void load_qu(const MultibodySystem &system, const SimbodyMatterSubsystem &matter,
             const QLayout &layout, State &s, const double *q, const double *u)
{
    // Copying a State keeps only what was realized through Instance; Time must
    // be realized again before normalizeQuaternions() can run.
    system.realize(s, Stage::Time);
    const int nq = (int)layout.qmap.size(), nu = s.getNU();
    const int nb = matter.getNumBodies();
    if (nq > 0 && !q) fail("q is NULL");
    for (int i = 0; i < nq; ++i) s.updQ()[layout.qmap[i]] = q[i];
    for (int b = 1; b < nb; ++b) {
        if (!matter.isUsingQuaternion(s, MobilizedBodyIndex(b))) continue;
        const int q0 = layout.q_start[b];
        double n2 = 0;
        for (int k = 0; k < 4; ++k) n2 += q[q0 + k] * q[q0 + k];
        if (!(n2 > 0) || !std::isfinite(n2))
            fail("body " + num(b) + ": quaternion is zero or not finite");
    }
    matter.normalizeQuaternions(s);
    for (int i = 0; i < nu; ++i) s.updU()[i] = u ? u[i] : 0.0;
}

void set_applied(const Force::DiscreteForces &discrete, State &s, int nb,
                 const double *mobility_forces, const double *body_forces)
{
    const int nu = s.getNU();
    if (mobility_forces) {
        Vector f(nu);
        for (int i = 0; i < nu; ++i) f[i] = mobility_forces[i];
        discrete.setAllMobilityForces(s, f);
    }
    if (body_forces) {
        Vector_<SpatialVec> F(nb);
        F[0] = SpatialVec(Vec3(0), Vec3(0)); // Ground: ignored
        for (int b = 1; b < nb; ++b) {
            const double *a = body_forces + 6 * b;
            F[b] = SpatialVec(Vec3(a[0], a[1], a[2]), Vec3(a[3], a[4], a[5]));
        }
        discrete.setAllBodyForces(s, F);
    }
}

} // namespace orc_build
