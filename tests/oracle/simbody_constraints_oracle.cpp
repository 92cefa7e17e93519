// simbody_constraints_oracle.cpp -- Simbody-backed implementation of
// simbody_constraints_oracle.h: an orc_model's bodies plus a list of Simbody's
// built-in constraints, evaluated at one (t, q, u, applied forces).
//
// The body-building code (mobilizers, frames, mass-property shift, applied
// forces, Euler-angle q compaction and quaternion normalization) is shared with
// simbody_oracle.cpp through oracle_build.hpp; gravity and DiscreteForces are
// added as there. Like it, this file must be compiled WITHOUT -DNDEBUG
// (Debian's libsimbody-dev is built without it; see CMakeLists.txt).
#ifdef NDEBUG
#error "simbody_constraints_oracle.cpp must be compiled without NDEBUG (Debian's Simbody is built without it)"
#endif

#include <cstring>
#include "simbody_constraints_oracle.h"

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

std::string g_constraints_error;

// ---- constraint descriptors: validation and a flat key for cache comparison ----

void need_body(int b, int nb, bool allow_ground, const std::string &what)
{
    const int lo = allow_ground ? 0 : 1;
    if (b < lo || b > nb) fail(what + " " + num(b) + " must be in " + num(lo) + ".." + num(nb));
}

void need_distinct(int a, int b, const std::string &what)
{
    // Simbody merges a repeated body into one constrained body and then
    // assert()s that there are two, which would abort the test program.
    if (a == b) fail(what + " must be two different bodies (both are " + num(a) + ")");
}

void need_direction(const double *d, const std::string &what)
{
    const double n2 = d[0] * d[0] + d[1] * d[1] + d[2] * d[2];
    if (!(n2 > 0) || !std::isfinite(n2)) fail(what + " must be a nonzero finite vector");
}

// Validate what can be checked before Simbody is involved (coordinate indices
// within a mobilizer are checked after the system is built) and append the
// descriptor to key.
void describe(const orc_constraint &c, int index, int nb, Key &key)
{
    const std::string e = "constraint " + num(index) + ": ";
    key.add((double)c.kind);
    switch (c.kind) {
    case ORC_CON_ROD: {
        const orc_con_rod &r = c.rod;
        need_body(r.body1, nb, true, e + "body1");
        need_body(r.body2, nb, true, e + "body2");
        need_distinct(r.body1, r.body2, e + "body1 and body2");
        need(r.length > 0 && std::isfinite(r.length), e + "rod length must be > 0");
        key.add(r.body1); key.add(r.body2);
        key.add(r.station1, 3); key.add(r.station2, 3); key.add(r.length);
        break;
    }
    case ORC_CON_BALL: {
        const orc_con_ball &r = c.ball;
        need_body(r.body1, nb, true, e + "body1");
        need_body(r.body2, nb, true, e + "body2");
        need_distinct(r.body1, r.body2, e + "body1 and body2");
        key.add(r.body1); key.add(r.body2);
        key.add(r.station1, 3); key.add(r.station2, 3);
        break;
    }
    case ORC_CON_WELD: {
        const orc_con_weld &r = c.weld;
        need_body(r.body1, nb, true, e + "body1");
        need_body(r.body2, nb, true, e + "body2");
        need_distinct(r.body1, r.body2, e + "body1 and body2");
        to_rotation(r.X_B1F, e + "X_B1F");
        to_rotation(r.X_B2M, e + "X_B2M");
        key.add(r.body1); key.add(r.body2);
        key.add(r.X_B1F, 12); key.add(r.X_B2M, 12);
        break;
    }
    case ORC_CON_POINT_IN_PLANE: {
        const orc_con_point_in_plane &r = c.point_in_plane;
        need_body(r.plane_body, nb, true, e + "plane_body");
        need_body(r.follower_body, nb, true, e + "follower_body");
        need_distinct(r.plane_body, r.follower_body, e + "plane_body and follower_body");
        need_direction(r.normal, e + "normal");
        key.add(r.plane_body); key.add(r.normal, 3); key.add(r.height);
        key.add(r.follower_body); key.add(r.follower_point, 3);
        break;
    }
    case ORC_CON_POINT_ON_LINE: {
        const orc_con_point_on_line &r = c.point_on_line;
        need_body(r.line_body, nb, true, e + "line_body");
        need_body(r.follower_body, nb, true, e + "follower_body");
        need_distinct(r.line_body, r.follower_body, e + "line_body and follower_body");
        need_direction(r.direction, e + "direction");
        key.add(r.line_body); key.add(r.direction, 3); key.add(r.point_on_line, 3);
        key.add(r.follower_body); key.add(r.follower_point, 3);
        break;
    }
    case ORC_CON_CONSTANT_ANGLE: {
        const orc_con_constant_angle &r = c.constant_angle;
        need_body(r.base_body, nb, true, e + "base_body");
        need_body(r.follower_body, nb, true, e + "follower_body");
        need_distinct(r.base_body, r.follower_body, e + "base_body and follower_body");
        need_direction(r.base_axis, e + "base_axis");
        need_direction(r.follower_axis, e + "follower_axis");
        need(std::isfinite(r.angle), e + "angle must be finite");
        key.add(r.base_body); key.add(r.base_axis, 3);
        key.add(r.follower_body); key.add(r.follower_axis, 3); key.add(r.angle);
        break;
    }
    case ORC_CON_CONSTANT_ORIENTATION: {
        const orc_con_constant_orientation &r = c.constant_orientation;
        need_body(r.base_body, nb, true, e + "base_body");
        need_body(r.follower_body, nb, true, e + "follower_body");
        need_distinct(r.base_body, r.follower_body, e + "base_body and follower_body");
        to_rotation(r.R_B1F, e + "R_B1F");
        to_rotation(r.R_B2M, e + "R_B2M");
        key.add(r.base_body); key.add(r.R_B1F, 9);
        key.add(r.follower_body); key.add(r.R_B2M, 9);
        break;
    }
    case ORC_CON_CONSTANT_COORDINATE:
        need_body(c.constant_coordinate.body, nb, false, e + "body");
        key.add(c.constant_coordinate.body); key.add(c.constant_coordinate.which_q);
        key.add(c.constant_coordinate.value);
        break;
    case ORC_CON_CONSTANT_SPEED:
        need_body(c.constant_speed.body, nb, false, e + "body");
        key.add(c.constant_speed.body); key.add(c.constant_speed.which_u);
        key.add(c.constant_speed.speed);
        break;
    case ORC_CON_CONSTANT_ACCELERATION:
        need_body(c.constant_acceleration.body, nb, false, e + "body");
        key.add(c.constant_acceleration.body); key.add(c.constant_acceleration.which_u);
        key.add(c.constant_acceleration.acceleration);
        break;
    case ORC_CON_NO_SLIP_1D: {
        const orc_con_no_slip &r = c.no_slip;
        need_body(r.case_body, nb, true, e + "case_body");
        need_body(r.moving_body0, nb, true, e + "moving_body0");
        need_body(r.moving_body1, nb, true, e + "moving_body1");
        need_distinct(r.moving_body0, r.moving_body1, e + "moving_body0 and moving_body1");
        need_direction(r.direction, e + "direction");
        key.add(r.case_body); key.add(r.point, 3); key.add(r.direction, 3);
        key.add(r.moving_body0); key.add(r.moving_body1);
        break;
    }
    case ORC_CON_COORDINATE_COUPLER: {
        const orc_con_coordinate_coupler &r = c.coordinate_coupler;
        need(r.n >= 1 && r.n <= ORC_COUPLER_MAX_ARGS,
             e + "coupler n must be in 1.." + num(ORC_COUPLER_MAX_ARGS));
        key.add(r.n);
        for (int i = 0; i < r.n; ++i) {
            need_body(r.body[i], nb, false, e + "body[" + num(i) + "]");
            key.add(r.body[i]); key.add(r.which_q[i]); key.add(r.coef[i]);
        }
        key.add(r.constant);
        break;
    }
    case ORC_CON_SPEED_COUPLER: {
        const orc_con_speed_coupler &r = c.speed_coupler;
        need(r.n >= 1 && r.n <= ORC_COUPLER_MAX_ARGS,
             e + "coupler n must be in 1.." + num(ORC_COUPLER_MAX_ARGS));
        need(r.n_q >= 0 && r.n_q <= ORC_COUPLER_MAX_ARGS,
             e + "coupler n_q must be in 0.." + num(ORC_COUPLER_MAX_ARGS));
        key.add(r.n); key.add(r.n_q);
        for (int i = 0; i < r.n; ++i) {
            need_body(r.body[i], nb, false, e + "body[" + num(i) + "]");
            key.add(r.body[i]); key.add(r.which_u[i]); key.add(r.coef[i]);
        }
        for (int i = 0; i < r.n_q; ++i) {
            need_body(r.q_body[i], nb, false, e + "q_body[" + num(i) + "]");
            key.add(r.q_body[i]); key.add(r.which_q[i]); key.add(r.q_coef[i]);
        }
        key.add(r.constant);
        break;
    }
    case ORC_CON_PRESCRIBED_MOTION: {
        const orc_con_prescribed_motion &r = c.prescribed_motion;
        need_body(r.body, nb, false, e + "body");
        /* read the kind as an int: a caller may pass a value outside the enum */
        int kind = 0;
        std::memcpy(&kind, &r.function, sizeof kind);
        key.add(r.body); key.add(r.which_q); key.add((double)kind);
        if (kind == ORC_MOTION_SINUSOID) {
            key.add(r.amplitude); key.add(r.frequency); key.add(r.phase);
        } else if (kind == ORC_MOTION_POLYNOMIAL) {
            need(r.n_poly >= 1 && r.n_poly <= ORC_POLY_MAX,
                 e + "n_poly must be in 1.." + num(ORC_POLY_MAX));
            key.add(r.n_poly); key.add(r.poly, r.n_poly);
        } else {
            fail(e + "unknown motion function " + num(kind));
        }
        break;
    }
    default:
        fail(e + "unknown kind " + num((int)c.kind));
    }
}

struct ConstraintOracle {
    ModelKey model;
    std::vector<double> key; // all constraint descriptors, flattened
    MultibodySystem system;
    SimbodyMatterSubsystem matter;
    GeneralForceSubsystem forces;
    Force::DiscreteForces discrete;
    std::vector<MobilizedBody> mobods; // index 0 = Ground
    std::vector<Constraint> constraints;
    State model_state;                 // Euler flag set, realized to Instance
    QLayout layout;                    // compact q layout (see oracle_build.hpp)

    ConstraintOracle() : matter(system), forces(system) {}

    bool matches(const orc_model *m, const Key &k) const
    {
        return model.matches(m, true) && k.v == key;
    }
};

std::unique_ptr<ConstraintOracle> g_constraints;

Constraint add_constraint(ConstraintOracle &o, const orc_constraint &c)
{
    std::vector<MobilizedBody> &mb = o.mobods;
    SimbodyMatterSubsystem &matter = o.matter;
    switch (c.kind) {
    case ORC_CON_ROD: {
        const orc_con_rod &r = c.rod;
        return Constraint::Rod(mb[r.body1], v3(r.station1), mb[r.body2], v3(r.station2), r.length);
    }
    case ORC_CON_BALL: {
        const orc_con_ball &r = c.ball;
        return Constraint::Ball(mb[r.body1], v3(r.station1), mb[r.body2], v3(r.station2));
    }
    case ORC_CON_WELD: {
        const orc_con_weld &r = c.weld;
        return Constraint::Weld(mb[r.body1], to_transform(r.X_B1F, "X_B1F"), mb[r.body2],
                                to_transform(r.X_B2M, "X_B2M"));
    }
    case ORC_CON_POINT_IN_PLANE: {
        const orc_con_point_in_plane &r = c.point_in_plane;
        return Constraint::PointInPlane(mb[r.plane_body], UnitVec3(v3(r.normal)), r.height,
                                        mb[r.follower_body], v3(r.follower_point));
    }
    case ORC_CON_POINT_ON_LINE: {
        const orc_con_point_on_line &r = c.point_on_line;
        return Constraint::PointOnLine(mb[r.line_body], UnitVec3(v3(r.direction)),
                                       v3(r.point_on_line), mb[r.follower_body],
                                       v3(r.follower_point));
    }
    case ORC_CON_CONSTANT_ANGLE: {
        const orc_con_constant_angle &r = c.constant_angle;
        return Constraint::ConstantAngle(mb[r.base_body], UnitVec3(v3(r.base_axis)),
                                         mb[r.follower_body], UnitVec3(v3(r.follower_axis)),
                                         r.angle);
    }
    case ORC_CON_CONSTANT_ORIENTATION: {
        const orc_con_constant_orientation &r = c.constant_orientation;
        return Constraint::ConstantOrientation(mb[r.base_body], to_rotation(r.R_B1F, "R_B1F"),
                                               mb[r.follower_body],
                                               to_rotation(r.R_B2M, "R_B2M"));
    }
    case ORC_CON_CONSTANT_COORDINATE: {
        const orc_con_constant_coordinate &r = c.constant_coordinate;
        return Constraint::ConstantCoordinate(mb[r.body], MobilizerQIndex(r.which_q), r.value);
    }
    case ORC_CON_CONSTANT_SPEED: {
        const orc_con_constant_speed &r = c.constant_speed;
        return Constraint::ConstantSpeed(mb[r.body], MobilizerUIndex(r.which_u), r.speed);
    }
    case ORC_CON_CONSTANT_ACCELERATION: {
        const orc_con_constant_acceleration &r = c.constant_acceleration;
        return Constraint::ConstantAcceleration(mb[r.body], MobilizerUIndex(r.which_u),
                                                r.acceleration);
    }
    case ORC_CON_NO_SLIP_1D: {
        const orc_con_no_slip &r = c.no_slip;
        return Constraint::NoSlip1D(mb[r.case_body], v3(r.point), UnitVec3(v3(r.direction)),
                                    mb[r.moving_body0], mb[r.moving_body1]);
    }
    case ORC_CON_COORDINATE_COUPLER: {
        const orc_con_coordinate_coupler &r = c.coordinate_coupler;
        Vector coef(r.n + 1);
        Array_<MobilizedBodyIndex> bodies;
        Array_<MobilizerQIndex> qs;
        for (int i = 0; i < r.n; ++i) {
            coef[i] = r.coef[i];
            bodies.push_back(MobilizedBodyIndex(r.body[i]));
            qs.push_back(MobilizerQIndex(r.which_q[i]));
        }
        coef[r.n] = r.constant;
        return Constraint::CoordinateCoupler(matter, new Function::Linear(coef), bodies, qs);
    }
    case ORC_CON_SPEED_COUPLER: {
        const orc_con_speed_coupler &r = c.speed_coupler;
        Vector coef(r.n + r.n_q + 1);
        Array_<MobilizedBodyIndex> ub, qb;
        Array_<MobilizerUIndex> us;
        Array_<MobilizerQIndex> qs;
        for (int i = 0; i < r.n; ++i) {
            coef[i] = r.coef[i];
            ub.push_back(MobilizedBodyIndex(r.body[i]));
            us.push_back(MobilizerUIndex(r.which_u[i]));
        }
        for (int i = 0; i < r.n_q; ++i) {
            coef[r.n + i] = r.q_coef[i];
            qb.push_back(MobilizedBodyIndex(r.q_body[i]));
            qs.push_back(MobilizerQIndex(r.which_q[i]));
        }
        coef[r.n + r.n_q] = r.constant;
        return Constraint::SpeedCoupler(matter, new Function::Linear(coef), ub, us, qb, qs);
    }
    case ORC_CON_PRESCRIBED_MOTION: {
        const orc_con_prescribed_motion &r = c.prescribed_motion;
        const Function *f;
        if (r.function == ORC_MOTION_SINUSOID) {
            f = new Function::Sinusoid(r.amplitude, r.frequency, r.phase);
        } else {
            Vector coef(r.n_poly); // Simbody wants DECREASING powers
            for (int k = 0; k < r.n_poly; ++k) coef[k] = r.poly[r.n_poly - 1 - k];
            f = new Function::Polynomial(coef);
        }
        return Constraint::PrescribedMotion(matter, f, MobilizedBodyIndex(r.body),
                                            MobilizerQIndex(r.which_q));
    }
    }
    fail("unknown constraint kind"); // not reached: describe() checked the kind
}

// Indices within a mobilizer, checked against Simbody's own counts (compact
// q counts: an Euler-mode Ball/Free has 3/6 q, whose MobilizerQIndex equals
// the compact index).
void check_indices(const ConstraintOracle &o, const orc_constraint *cs, int n)
{
    const State &s = o.model_state;
    auto check = [&](int i, int body, int idx, bool is_q, const char *what) {
        const int count = is_q ? o.layout.body_nq[body] : o.mobods[body].getNumU(s);
        if (idx < 0 || idx >= count)
            fail("constraint " + num(i) + ": " + what + " " + num(idx) + " of body " + num(body) +
                 " must be in 0.." + num(count - 1));
    };
    for (int i = 0; i < n; ++i) {
        const orc_constraint &c = cs[i];
        switch (c.kind) {
        case ORC_CON_CONSTANT_COORDINATE:
            check(i, c.constant_coordinate.body, c.constant_coordinate.which_q, true, "which_q");
            break;
        case ORC_CON_CONSTANT_SPEED:
            check(i, c.constant_speed.body, c.constant_speed.which_u, false, "which_u");
            break;
        case ORC_CON_CONSTANT_ACCELERATION:
            check(i, c.constant_acceleration.body, c.constant_acceleration.which_u, false, "which_u");
            break;
        case ORC_CON_COORDINATE_COUPLER:
            for (int k = 0; k < c.coordinate_coupler.n; ++k)
                check(i, c.coordinate_coupler.body[k], c.coordinate_coupler.which_q[k], true, "which_q");
            break;
        case ORC_CON_SPEED_COUPLER:
            for (int k = 0; k < c.speed_coupler.n; ++k)
                check(i, c.speed_coupler.body[k], c.speed_coupler.which_u[k], false, "which_u");
            for (int k = 0; k < c.speed_coupler.n_q; ++k)
                check(i, c.speed_coupler.q_body[k], c.speed_coupler.which_q[k], true, "which_q");
            break;
        case ORC_CON_PRESCRIBED_MOTION:
            check(i, c.prescribed_motion.body, c.prescribed_motion.which_q, true, "which_q");
            break;
        default:
            break;
        }
    }
}

ConstraintOracle &get_constraints(const orc_model *m, const orc_constraint *cs, int n)
{
    check_model(m);
    if (n < 0) fail("n (number of constraints) is negative");
    if (n > 0 && !cs) fail("constraints are NULL");
    Key key;
    for (int i = 0; i < n; ++i) describe(cs[i], i, m->n_bodies, key);
    if (g_constraints && g_constraints->matches(m, key)) return *g_constraints;
    g_constraints.reset();

    std::unique_ptr<ConstraintOracle> o(new ConstraintOracle());
    o->model.assign(m);
    o->key = key.v;
    o->mobods = build_bodies(o->matter, m);
    const Vec3 g(m->gravity[0], m->gravity[1], m->gravity[2]);
    if (g != Vec3(0)) Force::UniformGravity(o->forces, o->matter, g);
    o->discrete = Force::DiscreteForces(o->forces, o->matter);
    for (int i = 0; i < n; ++i) o->constraints.push_back(add_constraint(*o, cs[i]));

    o->model_state = realize_model(o->system, o->matter, o->mobods, o->model.use_euler, o->layout);
    check_indices(*o, cs, n);
    g_constraints = std::move(o);
    return *g_constraints;
}

int idx_or_minus1(const MultiplierIndex &i) { return i.isValid() ? (int)i : -1; }

void evaluate(const orc_model *model, const orc_constraint *cs, int n, const double *q,
              const double *u, const double *mobility_forces, const double *body_forces, double t,
              orc_constraint_result *out)
{
    if (!out) fail("out is NULL");
    if (!std::isfinite(t)) fail("t is not finite");
    ConstraintOracle &o = get_constraints(model, cs, n);
    State s = o.model_state;
    // A copied State keeps only Instance; set the time, then load_qu()
    // realizes Time (needed by normalizeQuaternions()).
    s.setTime(t);
    load_qu(o.system, o.matter, o.layout, s, q, u);
    const int nq = (int)o.layout.qmap.size(), nu = s.getNU(), nb = o.matter.getNumBodies();
    set_applied(o.discrete, s, nb, mobility_forces, body_forces);
    o.system.realize(s, Stage::Acceleration);

    // ---- counts ----
    int mp = 0, mv = 0, ma = 0;
    for (int i = 0; i < n; ++i) {
        int a, b, c;
        o.constraints[i].getNumConstraintEquationsInUse(s, a, b, c);
        mp += a; mv += b; ma += c;
    }
    const int m = mp + mv + ma;
    out->mp = mp;
    out->mv = mv;
    out->ma = ma;
    out->n_qerr = s.getNQErr();
    if (s.getNUErr() != mp + mv || s.getNUDotErr() != m || s.getNMultipliers() != m)
        fail("internal: Simbody's error/multiplier array sizes disagree with the constraint counts");

    // ---- system-level ----
    if (out->qerr)
        for (int i = 0; i < s.getNQErr(); ++i) out->qerr[i] = s.getQErr()[i];
    if (out->uerr)
        for (int i = 0; i < mp + mv; ++i) out->uerr[i] = s.getUErr()[i];
    if (out->udoterr)
        for (int i = 0; i < m; ++i) out->udoterr[i] = s.getUDotErr()[i];
    if (out->multipliers)
        for (int i = 0; i < m; ++i) out->multipliers[i] = s.getMultipliers()[i];
    if (out->udot)
        for (int i = 0; i < nu; ++i) out->udot[i] = s.getUDot()[i];
    if (out->qdotdot)
        for (int i = 0; i < nq; ++i) out->qdotdot[i] = s.getQDotDot()[o.layout.qmap[i]];
    for (int b = 0; b < nb; ++b) {
        const MobilizedBody &mb = o.mobods[b];
        if (out->X_GB) from_transform(mb.getBodyTransform(s), out->X_GB + 12 * b);
        if (out->V_GB) from_spatial(mb.getBodyVelocity(s), out->V_GB + 6 * b);
        if (out->A_GB) from_spatial(mb.getBodyAcceleration(s), out->A_GB + 6 * b);
    }
    if (out->G) {
        Matrix G;
        o.matter.calcG(s, G);
        for (int i = 0; i < m; ++i)
            for (int j = 0; j < nu; ++j) out->G[i * nu + j] = G(i, j);
    }
    if (out->bias) {
        Vector b;
        o.matter.calcBiasForAccelerationConstraints(s, b);
        for (int i = 0; i < m; ++i) out->bias[i] = b[i];
    }
    if (out->Pq) {
        Matrix Pq;
        o.matter.calcPq(s, Pq);
        for (int i = 0; i < mp; ++i)
            for (int j = 0; j < nq; ++j) out->Pq[i * nq + j] = Pq(i, o.layout.qmap[j]);
    }

    // ---- per constraint ----
    const int E = ORC_CON_MAX_EQ;
    for (int i = 0; i < n; ++i) {
        const Constraint &c = o.constraints[i];
        int cmp, cmv, cma;
        c.getNumConstraintEquationsInUse(s, cmp, cmv, cma);
        if (cmp + cmv + cma > E) fail("internal: constraint with more than ORC_CON_MAX_EQ equations");
        if (out->c_mp) out->c_mp[i] = cmp;
        if (out->c_mv) out->c_mv[i] = cmv;
        if (out->c_ma) out->c_ma[i] = cma;
        MultiplierIndex px, vx, ax;
        c.getIndexOfMultipliersInUse(s, px, vx, ax);
        if (out->c_p_start) out->c_p_start[i] = idx_or_minus1(px);
        if (out->c_v_start) out->c_v_start[i] = idx_or_minus1(vx);
        if (out->c_a_start) out->c_a_start[i] = idx_or_minus1(ax);
        if (out->c_ancestor)
            out->c_ancestor[i] = c.getNumConstrainedBodies() > 0
                                     ? (int)c.getAncestorMobilizedBody().getMobilizedBodyIndex()
                                     : -1;
        auto copy = [&](const Vector &v, double *dst) {
            for (int k = 0; k < E; ++k) dst[E * i + k] = k < v.size() ? v[k] : 0.0;
        };
        if (out->c_perr) copy(c.getPositionErrorsAsVector(s), out->c_perr);
        if (out->c_pverr) copy(c.getVelocityErrorsAsVector(s), out->c_pverr);
        if (out->c_pvaerr) copy(c.getAccelerationErrorsAsVector(s), out->c_pvaerr);
        if (out->c_multipliers) copy(c.getMultipliersAsVector(s), out->c_multipliers);
        if (out->c_body_forces) {
            double *F = out->c_body_forces + (size_t)6 * nb * i;
            std::fill(F, F + 6 * nb, 0.0);
            const Vector_<SpatialVec> bf = c.getConstrainedBodyForcesAsVector(s);
            for (int k = 0; k < bf.size(); ++k) {
                const int b = (int)c.getMobilizedBodyFromConstrainedBody(ConstrainedBodyIndex(k))
                                  .getMobilizedBodyIndex();
                for (int j = 0; j < 3; ++j) {
                    F[6 * b + j] += bf[k][0][j];
                    F[6 * b + 3 + j] += bf[k][1][j];
                }
            }
        }
        if (out->c_mobility_forces) {
            double *f = out->c_mobility_forces + (size_t)nu * i;
            std::fill(f, f + nu, 0.0);
            const Vector mf = c.getConstrainedMobilityForcesAsVector(s);
            for (int k = 0; k < mf.size(); ++k)
                f[(int)c.getUIndexOfConstrainedU(s, ConstrainedUIndex(k))] += mf[k];
        }
        if (out->c_power) out->c_power[i] = c.calcPower(s);
    }
}

} // namespace

extern "C" {

const char *orc_constraints_last_error(void) { return g_constraints_error.c_str(); }

int orc_eval_constraints(const orc_model *model, const orc_constraint *c, int n, const double *q,
                         const double *u, const double *mobility_forces, const double *body_forces,
                         double t, orc_constraint_result *out)
{
    try {
        evaluate(model, c, n, q, u, mobility_forces, body_forces, t, out);
        g_constraints_error.clear();
        return 0;
    } catch (const Error &e) {
        g_constraints_error = "orc_eval_constraints: " + e.msg;
    } catch (const std::exception &e) {
        g_constraints_error = std::string("orc_eval_constraints: Simbody exception: ") + e.what();
    } catch (...) {
        g_constraints_error = "orc_eval_constraints: unknown C++ exception";
    }
    return -1;
}

void orc_constraints_release(void) { g_constraints.reset(); }

} // extern "C"
