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

#include <chrono>
#include <cmath>
#include <cstdio>
#include <cstring>
#include <exception>
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
        std::vector<MobilizedBody> mobods;
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

int sb_eval(sb_side *s, bench_out *out)
{
    return guarded([&] {
        load(s);
        const int n = s->nu;
        if (out->udot) {
            const Vector &ud = s->state.getUDot();
            for (int i = 0; i < n; ++i) out->udot[i] = ud[s->umap[i]];
        }
        if (out->residual) {
            s->matter.calcResidualForceIgnoringConstraints(s->state, s->zeros, s->F, s->kud, s->res);
            for (int i = 0; i < n; ++i) out->residual[i] = s->res[s->umap[i]];
        }
        if (out->M) {
            Matrix M;
            s->matter.calcM(s->state, M);
            for (int i = 0; i < n; ++i)
                for (int j = 0; j < n; ++j) out->M[(size_t)i * n + j] = M(s->umap[i], s->umap[j]);
        }
        if (out->minv_v) {
            s->matter.multiplyByMInv(s->state, s->v, s->minv);
            for (int i = 0; i < n; ++i) out->minv_v[i] = s->minv[s->umap[i]];
        }
    });
}

int sb_prepare(sb_side *s, bench_op op)
{
    return guarded([&] {
        if (op == OP_MASS && s->M.nrow() != s->nu) s->M.resize(s->nu, s->nu);
        load(s);
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
        default:
            throw std::runtime_error("unknown op");
        }
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
