// bench_simbody.cpp - the Simbody side of the benchmark.
//
// Must be compiled WITHOUT -DNDEBUG: Debian's libsimbody-dev is built without
// it, and SimTK class layouts depend on it (a mismatch crashes in
// realizeTopology()). benchmarks/CMakeLists.txt adds -UNDEBUG to this file.
#ifdef NDEBUG
#error "bench_simbody.cpp must be compiled without NDEBUG (Debian's Simbody is built without it)"
#endif

#include "bench_sides.h"

#include "Simbody.h"

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <cstring>
#include <exception>
#include <memory>
#include <stdexcept>
#include <string>
#include <vector>

using namespace SimTK;

namespace {

std::string g_err;

Transform to_transform(const double *a)
{
    Mat33 m;
    for (int i = 0; i < 3; ++i)
        for (int j = 0; j < 3; ++j) m(i, j) = a[3 * i + j];
    return Transform(Rotation(m, true), Vec3(a[9], a[10], a[11]));
}

// Mass properties about the body origin from the central inertia.
MassProperties mass_props(const bm_body &b)
{
    const Vec3 c(b.com[0], b.com[1], b.com[2]);
    Mat33 I;
    for (int i = 0; i < 3; ++i)
        for (int j = 0; j < 3; ++j)
            I(i, j) = b.inertia[3 * i + j] + b.mass * ((i == j ? c.normSqr() : 0.0) - c[i] * c[j]);
    return MassProperties(b.mass, c, Inertia(I));
}

template <class F> int guarded(F &&f)
{
    try {
        f();
        return 0;
    } catch (const std::exception &e) {
        g_err = std::string("Simbody: ") + e.what();
    } catch (...) {
        g_err = "Simbody: unknown exception";
    }
    return -1;
}

} // namespace

struct sb_side {
    MultibodySystem system;
    SimbodyMatterSubsystem matter;
    GeneralForceSubsystem forces;
    std::unique_ptr<GeneralContactSubsystem> contacts; // only on models with contact spheres
    std::vector<MobilizedBody> mobods;                 // index 0 = Ground
    std::unique_ptr<RungeKuttaMersonIntegrator> integ; // OP_STEP
    long steps = 0;                                    // OP_STEP: steps since the last reset
    bool constrained = false;
    State state;
    int nq = 0, nu = 0, nb = 0;
    std::vector<int> qmap, umap; // mbk index -> Simbody index
    Vector q, u, v, kud, zeros, res, minv;
    Vector_<SpatialVec> F; // gravity body forces at q
    Matrix M;

    sb_side() : matter(system), forces(system) {}
};

extern "C" {

const char *sb_last_error(void) { return g_err.c_str(); }

const char *sb_version(void)
{
    static char buf[32];
    int major = 0, minor = 0, build = 0;
    SimTK_version_simbody(&major, &minor, &build);
    std::snprintf(buf, sizeof buf, "%d.%d", major, minor);
    return buf;
}

sb_side *sb_create(const bm_model *model)
{
    sb_side *s = nullptr;
    int rc = guarded([&] {
        s = new sb_side();
        std::vector<MobilizedBody> &mobods = s->mobods;
        mobods.push_back(s->matter.Ground());
        for (int i = 1; i <= model->n; ++i) {
            const bm_body &b = model->bodies[i - 1];
            const Body::Rigid body(mass_props(b));
            MobilizedBody &parent = mobods[b.parent];
            if (b.type == BM_FREE)
                mobods.push_back(MobilizedBody::Free(parent, to_transform(b.X_PF), body, to_transform(b.X_BM)));
            else
                mobods.push_back(MobilizedBody::Pin(parent, to_transform(b.X_PF), body, to_transform(b.X_BM)));
        }
        Force::UniformGravity(s->forces, s->matter, Vec3(model->gravity[0], model->gravity[1], model->gravity[2]));
        // Loop closures: Constraint::Ball(body1, station1, body2, station2), as mbk_constraint_add_ball.
        for (int k = 0; k < model->n_balls; ++k) {
            const auto &b = model->balls[k];
            Constraint::Ball(mobods[b.b1], Vec3(b.s1[0], b.s1[1], b.s1[2]), mobods[b.b2], Vec3(b.s2[0], b.s2[1], b.s2[2]));
        }
        s->constrained = model->n_balls > 0;
        // Contact spheres, mapped as tests/oracle/simbody_forces_oracle.cpp does: one contact set
        // per sphere holding a HalfSpace on Ground (x >= 0 of its frame H, outward normal -x_H;
        // R_GH = R_y(+pi/2) turns it into z <= ground_z with normal +z) and the Sphere, and one
        // HuntCrossleyForce per set with the same material on both surfaces (mbk's single-material
        // element). One set per sphere: the feet must not touch each other.
        if (model->n_spheres > 0) s->contacts.reset(new GeneralContactSubsystem(s->system));
        for (int k = 0; k < model->n_spheres; ++k) {
            const auto &sp = model->spheres[k];
            const ContactSetIndex set = s->contacts->createContactSet();
            Mat33 R(0, 0, 1, 0, 1, 0, -1, 0, 0);
            s->contacts->addBody(set, s->matter.Ground(), ContactGeometry::HalfSpace(),
                                 Transform(Rotation(R, true), Vec3(0, 0, model->ground_z)));
            s->contacts->addBody(set, mobods[sp.body], ContactGeometry::Sphere(sp.radius),
                                 Transform(Vec3(sp.center[0], sp.center[1], sp.center[2])));
            HuntCrossleyForce hc(s->forces, *s->contacts, set);
            for (int surf = 0; surf < 2; ++surf)
                hc.setBodyParameters(ContactSurfaceIndex(surf), model->hc[0], model->hc[1], model->hc[2], model->hc[3],
                                     model->hc[4]);
            hc.setTransitionVelocity(model->hc[5]);
        }
        s->state = s->system.realizeTopology();
        s->system.realize(s->state, Stage::Instance);
        s->nq = s->state.getNQ();
        s->nu = s->state.getNU();
        s->nb = s->matter.getNumBodies();
        if (s->nq != model->nq || s->nu != model->nu || s->nb != model->n + 1)
            throw std::runtime_error("model sizes differ from the description");
        s->qmap.assign(s->nq, -1);
        s->umap.assign(s->nu, -1);
        for (int i = 1; i <= model->n; ++i) {
            const MobilizedBody &mb = mobods[i];
            const int nqb = mb.getNumQ(s->state), nub = mb.getNumU(s->state);
            for (int k = 0; k < nqb; ++k) s->qmap[model->q0[i] + k] = (int)mb.getFirstQIndex(s->state) + k;
            for (int k = 0; k < nub; ++k) s->umap[model->u0[i] + k] = (int)mb.getFirstUIndex(s->state) + k;
        }
        s->q.resize(s->nq);
        s->u.resize(s->nu);
        s->v.resize(s->nu);
        s->kud.resize(s->nu);
        s->zeros.resize(s->nu);
        s->zeros = 0;
        s->res.resize(s->nu);
        s->minv.resize(s->nu);
    });
    if (rc < 0) {
        delete s;
        return nullptr;
    }
    return s;
}

void sb_destroy(sb_side *s) { delete s; }

static void load(sb_side *s)
{
    s->state.setQ(s->q);
    s->state.setU(s->u);
    s->system.realize(s->state, Stage::Acceleration);
}

int sb_set_inputs(sb_side *s, const double *q, const double *u, const double *v, const double *known_udot)
{
    return guarded([&] {
        for (int i = 0; i < s->nq; ++i) s->q[s->qmap[i]] = q[i];
        for (int i = 0; i < s->nu; ++i) {
            s->u[s->umap[i]] = u[i];
            s->v[s->umap[i]] = v[i];
            s->kud[s->umap[i]] = known_udot[i];
        }
        load(s);
        s->F = s->system.getRigidBodyForces(s->state, Stage::Dynamics);
    });
}

int sb_result_len(sb_side *s, bench_op op)
{
    switch (op) {
    case OP_FULL: case OP_UONLY: case OP_RNEA_KIN: case OP_RNEA: case OP_MINV: case OP_ID: return s->nu;
    case OP_POSITION: return 12 * (s->nb - 1);
    case OP_MASS: case OP_MASS_KIN: return s->nu * s->nu;
    case OP_CONSTRAINED: return s->constrained ? s->nu + s->state.getNMultipliers() : -1;
    case OP_STEP: return s->nq + s->nu;
    default: return -1;
    }
}

int sb_eval(sb_side *s, bench_op op, double *out)
{
    // exactly what is timed: prepare, one repetition, then read the result (mbk's order)
    int rc = sb_prepare(s, op);
    if (rc == 0) rc = sb_run(s, op, 1);
    if (rc < 0) return rc;
    return guarded([&] {
        const int n = s->nu;
        auto copy_u = [&](const Vector &v, double *dst) {
            for (int i = 0; i < n; ++i) dst[i] = v[s->umap[i]];
        };
        switch (op) {
        case OP_FULL: case OP_UONLY: copy_u(s->state.getUDot(), out); break;
        case OP_RNEA_KIN: case OP_RNEA: case OP_ID: copy_u(s->res, out); break;
        case OP_MINV: copy_u(s->minv, out); break;
        case OP_MASS: case OP_MASS_KIN:
            for (int i = 0; i < n; ++i)
                for (int j = 0; j < n; ++j) out[(size_t)i * n + j] = s->M(s->umap[i], s->umap[j]);
            break;
        case OP_POSITION:
            for (int b = 1; b < s->nb; ++b) {
                const Transform &X = s->mobods[b].getBodyTransform(s->state);
                double *o = out + 12 * (b - 1);
                for (int i = 0; i < 3; ++i)
                    for (int j = 0; j < 3; ++j) o[3 * i + j] = X.R().asMat33()(i, j);
                for (int i = 0; i < 3; ++i) o[9 + i] = X.p()[i];
            }
            break;
        case OP_CONSTRAINED: {
            copy_u(s->state.getUDot(), out);
            const Vector &lambda = s->state.getMultipliers();
            for (int i = 0; i < lambda.size(); ++i) out[n + i] = lambda[i];
            break;
        }
        case OP_STEP: {
            if (s->integ->getNumStepsTaken() != 1)
                throw std::runtime_error("RK-Merson took " + std::to_string(s->integ->getNumStepsTaken()) +
                                         " steps for one fixed step");
            const State &st = s->integ->getState();
            for (int i = 0; i < s->nq; ++i) out[i] = st.getQ()[s->qmap[i]];
            copy_u(st.getU(), out + s->nq);
            break;
        }
        default:
            throw std::runtime_error("unknown op");
        }
    });
}

// OP_STEP: (re)start the fixed-step integrator from the benchmark state.
static void step_reset(sb_side *s)
{
    s->steps = 0;
    s->integ->initialize(s->state);
    // Simbody's first stepTo after initialize only reports the start of the interval
    const double t0 = s->integ->getTime();
    if (s->integ->stepTo(t0 + BENCH_STEP_H) != Integrator::StartOfContinuousInterval ||
        s->integ->getTime() != t0 || s->integ->getNumStepsTaken() != 0)
        throw std::runtime_error("RK-Merson: unexpected first stepTo after initialize");
}

int sb_prepare(sb_side *s, bench_op op)
{
    return guarded([&] {
        if ((op == OP_MASS || op == OP_MASS_KIN) && s->M.nrow() != s->nu) s->M.resize(s->nu, s->nu);
        load(s);
        if (op != OP_STEP) return;
        if (!s->integ) {
            s->integ.reset(new RungeKuttaMersonIntegrator(s->system));
            s->integ->setFixedStepSize(BENCH_STEP_H);
            s->integ->setConstraintTolerance(BENCH_STEP_CONS_TOL);
        }
        step_reset(s);
    });
}

int sb_run(sb_side *s, bench_op op, long reps)
{
    return guarded([&] {
        State &st = s->state;
        const MultibodySystem &sys = s->system;
        const SimbodyMatterSubsystem &m = s->matter;
        switch (op) {
        case OP_FULL:
        case OP_CONSTRAINED: // the same cycle; with constraints it solves for the multipliers too
            for (long r = 0; r < reps; ++r) {
                st.setQ(s->q);
                st.setU(s->u);
                sys.realize(st, Stage::Acceleration);
            }
            break;
        case OP_UONLY:
            for (long r = 0; r < reps; ++r) {
                st.setU(s->u);
                sys.realize(st, Stage::Acceleration);
            }
            break;
        case OP_POSITION:
            for (long r = 0; r < reps; ++r) {
                st.setQ(s->q);
                sys.realize(st, Stage::Position);
            }
            break;
        case OP_RNEA_KIN:
            for (long r = 0; r < reps; ++r) {
                st.setQ(s->q);
                st.setU(s->u);
                sys.realize(st, Stage::Velocity);
                m.calcResidualForceIgnoringConstraints(st, s->zeros, s->F, s->kud, s->res);
            }
            break;
        case OP_RNEA:
            for (long r = 0; r < reps; ++r)
                m.calcResidualForceIgnoringConstraints(st, s->zeros, s->F, s->kud, s->res);
            break;
        case OP_MASS:
            for (long r = 0; r < reps; ++r) m.calcM(st, s->M);
            break;
        case OP_MINV:
            for (long r = 0; r < reps; ++r) m.multiplyByMInv(st, s->v, s->minv);
            break;
        case OP_ID: // with the applied forces the System computes at Dynamics
            for (long r = 0; r < reps; ++r) {
                st.setQ(s->q);
                st.setU(s->u);
                sys.realize(st, Stage::Dynamics);
                m.calcResidualForceIgnoringConstraints(st, sys.getMobilityForces(st, Stage::Dynamics),
                                                       sys.getRigidBodyForces(st, Stage::Dynamics), s->kud, s->res);
            }
            break;
        case OP_MASS_KIN:
            for (long r = 0; r < reps; ++r) {
                st.setQ(s->q);
                sys.realize(st, Stage::Position);
                m.calcM(st, s->M);
            }
            break;
        case OP_STEP:
            for (long r = 0; r < reps; ++r) {
                if (s->steps == BENCH_STEP_RESET) step_reset(s);
                ++s->steps;
                if (s->integ->stepTo(s->integ->getTime() + BENCH_STEP_H) != Integrator::ReachedReportTime)
                    throw std::runtime_error("RK-Merson stepTo did not reach the report time");
            }
            break;
        default:
            throw std::runtime_error("unknown op");
        }
    });
}

int sb_constraint_errors(sb_side *s, double *perr, double *verr)
{
    return guarded([&] {
        load(s);
        *perr = *verr = 0.0;
        for (int i = 0; i < s->state.getNQErr(); ++i) *perr = std::max(*perr, std::fabs(s->state.getQErr()[i]));
        for (int i = 0; i < s->state.getNUErr(); ++i) *verr = std::max(*verr, std::fabs(s->state.getUErr()[i]));
    });
}

int sb_integrate(const bm_model *model, const double *q, const double *u, double accuracy,
                 double t_final, run_result *out)
{
    std::memset(out, 0, sizeof *out);
    sb_side *s = sb_create(model);
    if (!s) return -1;
    std::vector<double> zeros((size_t)s->nu + 1, 0.0);
    int rc = sb_set_inputs(s, q, u, zeros.data(), zeros.data());
    if (rc == 0)
        rc = guarded([&] {
            State st = s->state;
            s->system.realize(st, Stage::Acceleration);
            out->e0 = s->system.calcEnergy(st);
            const auto t0 = std::chrono::steady_clock::now();
            RungeKuttaMersonIntegrator integ(s->system);
            integ.setAccuracy(accuracy);
            TimeStepper ts(s->system, integ);
            ts.initialize(st);
            ts.stepTo(t_final);
            out->wall_s = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
            out->steps = integ.getNumStepsTaken();
            const State &fin = integ.getState();
            if (std::fabs(fin.getTime() - t_final) > 1e-9) throw std::runtime_error("integration stopped early");
            s->system.realize(fin, Stage::Dynamics);
            out->e1 = s->system.calcEnergy(fin);
            out->drift = std::fabs(out->e1 - out->e0) / std::fabs(out->e0);
        });
    sb_destroy(s);
    return rc;
}

} // extern "C"
