/* custom_subsystem.c - a custom Subsystem: N particles that repel each other.
 *
 * This is the "mutual repulsion" example of chapter 3 of the Simbody
 * Advanced Programming Guide ("A Custom Subsystem"), ported to mbk's C API.
 * There is no matter subsystem here, so the subsystem owns its particles:
 * N unit-mass points in 3-D whose positions are its q (3 per particle) and
 * whose velocities are its u (3 per particle). Every pair repels with
 *
 *     F_i = strength * r / |r|^3,  F_j = -F_i,  r = p_i - p_j,
 *     PE  = strength / |r|         (summed over pairs),
 *
 * and F_i = -dPE/dp_i, so total energy is conserved. (The Guide's listing
 * accumulates "energy -= 1/r", which is the potential of an *attractive*
 * force; with its repulsive force the energy would not be conserved.)
 *
 * What it demonstrates, with the Guide's section numbers:
 *   3.1-3.2  a Subsystem is an ops table plus an impl struct the System owns;
 *            realize ops per stage; calc_potential_energy/calc_kinetic_energy.
 *   3.3      a Topology-stage parameter (default_strength, kept in impl);
 *            its setter invalidates the topology, and an old State then
 *            fails with MBK_ESTALE until it is initialized again.
 *   3.4      a discrete state variable (strength) allocated in
 *            realize_topology; changing it invalidates Dynamics only.
 *   3.5.1    continuous variables q and u, and their derivatives.
 *   3.5.2    cache entries filled during realization.
 *   3.5.3    a lazy cache entry (potential energy) computed on request.
 *   and the library's fixed-step RK4 (mbk_integrator_create_rk4) moving
 *   the System through its ODE view, allocating nothing while it steps.
 *   (examples/external_integrator.c drives the ODE view, mbk_system_calc_ydot,
 *   with an integrator from outside mbk.)
 *
 * The program checks energy and momentum conservation and exits nonzero if
 * either (or anything else it checks) fails. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <mbk/mbk.h>

enum { MAX_PARTICLES = 8 };
static const double MASS = 1.0; /* every particle has unit mass */

/* ====================================================================== */
/* The subsystem                                                          */
/* ====================================================================== */

/* The impl: what the System owns for this subsystem. */
typedef struct repulsion {
    /* Topology-stage data: fixed before realize_topology; a change
       invalidates the System's topology (Guide 3.3). */
    int n;                   /* number of particles (>= 2) */
    double default_strength; /* strength a new State starts with */

    /* Indices written by realize_topology. They depend on topology-stage
       data only, so they are the same for every State and may live here
       (Guide 3.4). Anything allocated in realize_model could differ from
       State to State and would have to live in the State instead. */
    int q0, u0;       /* start of the particles' q and u within this subsystem */
    int strength_var; /* discrete variable: strength (invalidates Dynamics) */
    int pair_cache;   /* cache: geometry of every pair      (Position..Position) */
    int force_cache;  /* cache: net force on each particle  (Dynamics..Dynamics) */
    int pe_cache;     /* lazy cache: potential energy       (depends on Dynamics) */
} repulsion;

/* Geometry of one pair (i < j): r = p_i - p_j and 1/|r|. */
typedef struct pair_geom {
    mbk_vec3 r;
    double inv_dist;
} pair_geom;

static int num_pairs(int n) { return n * (n - 1) / 2; }

/* Particle i's 3-vector in a flat array of x, y, z triples. */
static mbk_vec3 load3(const double *a, int i) { return mbk_vec3_make(a[3 * i], a[3 * i + 1], a[3 * i + 2]); }

static void store3(double *a, int i, mbk_vec3 v)
{
    a[3 * i] = v.x;
    a[3 * i + 1] = v.y;
    a[3 * i + 2] = v.z;
}

/* The strength discrete variable of a State (valid index assumed: used by the ops). */
static double strength_of(const repulsion *r, int k, const mbk_state *s)
{
    return *(const double *)mbk_state_get_discrete(s, k, r->strength_var);
}

/* Topology: allocate every variable and cache entry; store the indices.
   Why here: only realize_topology (and realize_model) may allocate, and
   what Topology allocates is laid out once in the System's default State. */
static int rep_realize_topology(void *impl, const mbk_subsystem_ctx *c, mbk_state *s)
{
    repulsion *r = impl;
    int k = mbk_subsystem_ctx_get_index(c);
    double q[3 * MAX_PARTICLES], u[3 * MAX_PARTICLES] = {0};

    /* Default positions: a unit circle in the xy plane, so that a default
       State is physically valid (no two particles coincide). */
    for (int i = 0; i < r->n; ++i) {
        double a = 2.0 * 3.14159265358979323846 * i / r->n;
        store3(q, i, mbk_vec3_make(cos(a), sin(a), 0.0));
    }
    if ((r->q0 = mbk_state_allocate_q(s, k, 3 * r->n, q)) < 0) return r->q0;
    if ((r->u0 = mbk_state_allocate_u(s, k, 3 * r->n, u)) < 0) return r->u0;

    /* The strength changes forces, so Dynamics is the first stage whose
       results depend on it; its initial value is the topology default. */
    r->strength_var = mbk_state_allocate_discrete(s, k, MBK_STAGE_DYNAMICS, &mbk_value_double,
                                                  &r->default_strength);
    if (r->strength_var < 0) return r->strength_var;

    /* Pair geometry depends on q only: depends_on = computed_by = Position.
       It stays valid when the strength changes, which only invalidates Dynamics. */
    mbk_value_type pairs_type = mbk_value_bytes((size_t)num_pairs(r->n) * sizeof(pair_geom),
                                                _Alignof(pair_geom));
    r->pair_cache = mbk_state_allocate_cache(s, k, MBK_STAGE_POSITION, MBK_STAGE_POSITION,
                                             &pairs_type, NULL);
    if (r->pair_cache < 0) return r->pair_cache;

    /* Forces depend on q (Position) and on the strength (a Dynamics
       variable). depends_on is the latest of those stages, Dynamics: with
       Position, a strength change would leave stale forces looking valid. */
    mbk_value_type forces_type = mbk_value_bytes((size_t)r->n * sizeof(mbk_vec3), _Alignof(mbk_vec3));
    r->force_cache = mbk_state_allocate_cache(s, k, MBK_STAGE_DYNAMICS, MBK_STAGE_DYNAMICS,
                                              &forces_type, NULL);
    if (r->force_cache < 0) return r->force_cache;

    /* The potential energy depends on the same inputs (depends_on =
       Dynamics), but nothing in the equations of motion needs it: lazy. */
    r->pe_cache = mbk_state_allocate_lazy_cache(s, k, MBK_STAGE_DYNAMICS, &mbk_value_double, NULL);
    return r->pe_cache < 0 ? r->pe_cache : 0;
}

/* Position: the geometry of every pair, shared by forces and energy. */
static int rep_realize_position(void *impl, const mbk_subsystem_ctx *c, mbk_state *s)
{
    const repulsion *r = impl;
    int k = mbk_subsystem_ctx_get_index(c);
    const double *p = mbk_state_get_subsystem_q(s, k) + r->q0;
    pair_geom *pairs = mbk_state_upd_cache(s, k, r->pair_cache);
    for (int i = 0, m = 0; i < r->n; ++i)
        for (int j = i + 1; j < r->n; ++j, ++m) {
            mbk_vec3 d = mbk_vec3_sub(load3(p, i), load3(p, j));
            double dist = mbk_vec3_norm(d);
            if (!(dist > 0.0))
                return mbk_set_error(MBK_EINVAL, "repulsion: particles %d and %d coincide", i, j);
            pairs[m].r = d;
            pairs[m].inv_dist = 1.0 / dist;
        }
    return 0;
}

/* Velocity: qdot = u (positions and velocities are both plain 3-vectors). */
static int rep_realize_velocity(void *impl, const mbk_subsystem_ctx *c, mbk_state *s)
{
    const repulsion *r = impl;
    int k = mbk_subsystem_ctx_get_index(c);
    const double *u = mbk_state_get_subsystem_u(s, k) + r->u0;
    double *qdot = mbk_state_upd_subsystem_qdot(s, k) + r->q0;
    memcpy(qdot, u, (size_t)(3 * r->n) * sizeof(double));
    return 0;
}

/* Dynamics: the net repulsive force on each particle, from the pair cache. */
static int rep_realize_dynamics(void *impl, const mbk_subsystem_ctx *c, mbk_state *s)
{
    const repulsion *r = impl;
    int k = mbk_subsystem_ctx_get_index(c);
    const pair_geom *pairs = mbk_state_get_cache(s, k, r->pair_cache);
    mbk_vec3 *force = mbk_state_upd_cache(s, k, r->force_cache);
    if (!pairs) return mbk_last_status();
    double strength = strength_of(r, k, s);
    for (int i = 0; i < r->n; ++i) force[i] = mbk_vec3_zero();
    for (int i = 0, m = 0; i < r->n; ++i)
        for (int j = i + 1; j < r->n; ++j, ++m) {
            double w = pairs[m].inv_dist;
            mbk_vec3 f = mbk_vec3_scale(pairs[m].r, strength * w * w * w); /* pushes i away from j */
            force[i] = mbk_vec3_add(force[i], f);
            force[j] = mbk_vec3_sub(force[j], f);
        }
    return 0;
}

/* Acceleration: udot = F / m; for these coordinates qdotdot = udot. */
static int rep_realize_acceleration(void *impl, const mbk_subsystem_ctx *c, mbk_state *s)
{
    const repulsion *r = impl;
    int k = mbk_subsystem_ctx_get_index(c);
    const mbk_vec3 *force = mbk_state_get_cache(s, k, r->force_cache);
    if (!force) return mbk_last_status();
    double *udot = mbk_state_upd_subsystem_udot(s, k) + r->u0;
    double *qdotdot = mbk_state_upd_subsystem_qdotdot(s, k) + r->q0;
    for (int i = 0; i < r->n; ++i) {
        mbk_vec3 a = mbk_vec3_scale(force[i], 1.0 / MASS);
        store3(udot, i, a);
        store3(qdotdot, i, a);
    }
    return 0;
}

/* Guide 3.5.3 realizeCE(): compute the lazy potential energy unless valid. */
static int realize_potential_energy(const repulsion *r, int k, const mbk_state *s)
{
    if (mbk_state_is_cache_realized(s, k, r->pe_cache)) return MBK_OK;
    /* An entry may be marked from stage depends_on - 1 = Velocity on. */
    mbk_stage stage = mbk_state_get_subsystem_stage(s, k);
    if (stage < MBK_STAGE_VELOCITY)
        return mbk_set_error(MBK_ESTAGE,
                             "repulsion: potential energy needs the State realized to Velocity "
                             "(it is at %s)", mbk_stage_name(stage));
    const pair_geom *pairs = mbk_state_get_cache(s, k, r->pair_cache);
    if (!pairs) return mbk_last_status();
    double sum = 0.0;
    for (int m = 0; m < num_pairs(r->n); ++m) sum += pairs[m].inv_dist;
    *(double *)mbk_state_upd_cache(s, k, r->pe_cache) = strength_of(r, k, s) * sum;
    mbk_state_mark_cache_realized(s, k, r->pe_cache);
    return MBK_OK;
}

/* Energy op: adds the (lazily cached) potential energy. */
static int rep_calc_potential_energy(void *impl, const mbk_subsystem_ctx *c, const mbk_state *s,
                                     double *pe)
{
    const repulsion *r = impl;
    int k = mbk_subsystem_ctx_get_index(c);
    int rc = realize_potential_energy(r, k, s);
    if (rc < 0) return rc;
    *pe += *(const double *)mbk_state_get_cache(s, k, r->pe_cache);
    return 0;
}

/* Energy op: adds sum of m |v|^2 / 2. */
static int rep_calc_kinetic_energy(void *impl, const mbk_subsystem_ctx *c, const mbk_state *s,
                                   double *ke)
{
    const repulsion *r = impl;
    const double *u = mbk_state_get_subsystem_u(s, mbk_subsystem_ctx_get_index(c)) + r->u0;
    for (int i = 0; i < r->n; ++i) *ke += 0.5 * MASS * mbk_vec3_norm2(load3(u, i));
    return 0;
}

static void rep_destroy(void *impl) { mbk_free(impl); }

static const mbk_subsystem_ops repulsion_ops = {
    .name = "repulsion",
    .realize_topology = rep_realize_topology,
    .realize_position = rep_realize_position,
    .realize_velocity = rep_realize_velocity,
    .realize_dynamics = rep_realize_dynamics,
    .realize_acceleration = rep_realize_acceleration,
    .calc_potential_energy = rep_calc_potential_energy,
    .calc_kinetic_energy = rep_calc_kinetic_energy,
    .destroy = rep_destroy,
};

/* ---- the subsystem's public functions (the Guide's ExampleSubsystem) ---- */

/* Add a repulsion subsystem of n particles; returns its subsystem index. */
static int repulsion_add(mbk_system *sys, int n, double default_strength)
{
    if (n < 2 || n > MAX_PARTICLES)
        return mbk_set_error(MBK_EINVAL, "repulsion_add: need 2..%d particles, got %d",
                             MAX_PARTICLES, n);
    repulsion *r = mbk_calloc(1, sizeof *r);
    if (!r) return MBK_ENOMEM;
    r->n = n;
    r->default_strength = default_strength;
    int index = mbk_system_add_subsystem(sys, &repulsion_ops, r);
    if (index < 0) mbk_free(r); /* not adopted: still ours */
    return index;
}

/* The impl of subsystem `sub`, or NULL (MBK_EINVAL) if it is not a repulsion subsystem.
   mbk has no typed downcast, so we check the name our ops table gives. */
static const repulsion *repulsion_get(const mbk_system *sys, int sub)
{
    const char *name = mbk_system_get_subsystem_name(sys, sub);
    if (!name) return NULL;
    if (strcmp(name, repulsion_ops.name) != 0) {
        mbk_set_error(MBK_EINVAL, "subsystem %d is '%s', not a repulsion subsystem", sub, name);
        return NULL;
    }
    return mbk_system_get_subsystem_impl(sys, sub);
}

/* Topology-stage setter (Guide 3.3): every existing State becomes stale. */
static int repulsion_set_default_strength(mbk_system *sys, int sub, double strength)
{
    if (!repulsion_get(sys, sub)) return mbk_last_status();
    repulsion *r = mbk_system_upd_subsystem_impl(sys, sub);
    r->default_strength = strength;
    mbk_system_invalidate_subsystem_topology(sys, sub);
    return MBK_OK;
}

/* Read the strength discrete variable of a State (Guide 3.4 getForceStrength). */
static int repulsion_get_strength(const mbk_system *sys, int sub, const mbk_state *s,
                                  double *strength)
{
    const repulsion *r = repulsion_get(sys, sub);
    if (!r) return mbk_last_status();
    int rc = mbk_system_check_state(sys, s); /* refuse a stale State */
    if (rc < 0) return rc;
    const double *v = mbk_state_get_discrete_as(s, sub, r->strength_var, &mbk_value_double);
    if (!v) return mbk_last_status();
    *strength = *v;
    return MBK_OK;
}

/* Change the strength of a State (Guide 3.4 setForceStrength): invalidates Dynamics. */
static int repulsion_set_strength(const mbk_system *sys, int sub, mbk_state *s, double strength)
{
    const repulsion *r = repulsion_get(sys, sub);
    if (!r) return mbk_last_status();
    int rc = mbk_system_check_state(sys, s);
    if (rc < 0) return rc;
    if (!isfinite(strength))
        return mbk_set_error(MBK_ENOTFINITE, "repulsion_set_strength: strength is %g", strength);
    return mbk_state_set_discrete(s, sub, r->strength_var, &mbk_value_double, &strength);
}

/* Guide 3.5.3 getCE(): the potential energy, computed on first request. */
static int repulsion_get_potential_energy(const mbk_system *sys, int sub, const mbk_state *s,
                                          double *pe)
{
    const repulsion *r = repulsion_get(sys, sub);
    if (!r) return mbk_last_status();
    int rc = mbk_system_check_state(sys, s);
    if (rc < 0 || (rc = realize_potential_energy(r, sub, s)) < 0) return rc;
    *pe = *(const double *)mbk_state_get_cache(s, sub, r->pe_cache);
    return MBK_OK;
}

/* ====================================================================== */
/* The driver program                                                     */
/* ====================================================================== */

/* Any failing mbk call ends the program with the library's own explanation. */
#define CHECK(call) check_status((call), #call, __LINE__)
#define CHECK_PTR(ptr) check_ptr((ptr) != NULL, #ptr, __LINE__)

static int check_status(int rc, const char *what, int line)
{
    if (rc < 0) {
        fprintf(stderr, "custom_subsystem.c:%d: %s failed: %s: %s\n", line, what,
                mbk_status_name(rc), mbk_last_error());
        exit(1);
    }
    return rc;
}

static void check_ptr(int ok, const char *what, int line)
{
    if (!ok) check_status(mbk_last_status() < 0 ? mbk_last_status() : MBK_EINVAL, what, line);
}

/* Physics checks are counted, not fatal, so the report is always complete. */
static int failures = 0;

static void expect(int ok, const char *what)
{
    if (!ok) {
        printf("  FAILED: %s\n", what);
        ++failures;
    }
}

/* Initial conditions: four particles, total momentum zero. */
static void place_particles(const mbk_system *sys, mbk_state *s)
{
    enum { N = 4 };
    const double q[3 * N] = {0.0, 0.0, 0.0, 1.0, 0.0, 0.0, 0.0, 1.2, 0.0, 0.3, 0.4, 0.9};
    double u[3 * N] = {0.10, 0.00, 0.00, 0.00, 0.20, -0.10, -0.05, -0.10, 0.05};
    for (int c = 0; c < 3; ++c) /* the last velocity cancels the others' momentum */
        u[9 + c] = -(u[c] + u[3 + c] + u[6 + c]);
    CHECK(mbk_system_realize(sys, s, MBK_STAGE_INSTANCE)); /* sizes are known from Model */
    CHECK(mbk_state_set_q(s, q, 3 * N));
    CHECK(mbk_state_set_u(s, u, 3 * N));
}

/* Total energy of a State realized to Velocity or later; *ke gets the kinetic part. */
static double total_energy(const mbk_system *sys, const mbk_state *s, double *ke)
{
    double pe = 0.0;
    CHECK(mbk_system_calc_energy(sys, s, ke, &pe));
    return *ke + pe;
}

/* Largest component of the total linear momentum sum m u. */
static double momentum_norm(const mbk_state *s)
{
    int nu = CHECK(mbk_state_get_nu(s));
    const double *u = mbk_state_get_u(s);
    CHECK_PTR(u);
    double p[3] = {0.0, 0.0, 0.0};
    for (int i = 0; i < nu; ++i) p[i % 3] += MASS * u[i];
    return fmax(fabs(p[0]), fmax(fabs(p[1]), fabs(p[2])));
}

/* What one run measured. */
typedef struct run_stats {
    double e0, e1;          /* total energy at start and end */
    double ke0, ke1;        /* its kinetic part at start and end */
    double max_energy_err;  /* max |E - E0| / |E0| over the steps */
    double max_momentum;    /* max |P| component over the steps */
    long steps, rhs;        /* steps taken, right-hand sides (realizations to Acceleration) */
    long allocations;       /* mbk allocations made while stepping */
} run_stats;

/* Integrate from the State's t = 0 to t_end with the library's classical RK4 in
   `steps` fixed steps, watching the invariants after every step; s gets the final
   State. */
static run_stats simulate(const mbk_system *sys, mbk_state *s, double t_end, int steps)
{
    run_stats st;
    const double h = t_end / steps;
    CHECK(mbk_system_realize(sys, s, MBK_STAGE_VELOCITY));
    st.e0 = total_energy(sys, s, &st.ke0);
    st.max_energy_err = 0.0;
    st.max_momentum = momentum_norm(s);

    /* The integrator works on its own copy of s. Creating and initializing it
       allocates (its States and work vectors); stepping must not. */
    mbk_integrator *ig = mbk_integrator_create_rk4(sys);
    CHECK_PTR(ig);
    CHECK(mbk_integrator_set_fixed_step(ig, h));
    CHECK(mbk_integrator_initialize(ig, s));

    /* Why count: after Instance, realizing and stepping must not allocate. */
    long before = mbk_get_allocation_count();
    for (int i = 1; i <= steps; ++i) {
        CHECK(mbk_integrator_step_to(ig, i * h)); /* one step, landing on i h exactly */
        const mbk_state *now = mbk_integrator_get_state(ig); /* realized to Acceleration */
        double ke, e = total_energy(sys, now, &ke);
        st.max_energy_err = fmax(st.max_energy_err, fabs(e - st.e0) / fabs(st.e0));
        st.max_momentum = fmax(st.max_momentum, momentum_norm(now));
    }
    st.allocations = mbk_get_allocation_count() - before;
    mbk_integrator_stats stats;
    mbk_integrator_get_stats(ig, &stats);
    st.steps = stats.steps_taken;
    st.rhs = stats.rhs_evaluations;
    CHECK(mbk_state_copy(s, mbk_integrator_get_state(ig)));
    mbk_integrator_destroy(ig);
    st.e1 = total_energy(sys, s, &st.ke1);
    return st;
}

/* Print one run's results and check the invariants. */
static void report_run(const char *label, double strength, const run_stats *st)
{
    printf("%s: strength %.2f, %ld RK4 steps (%ld right-hand sides)\n", label, strength, st->steps,
           st->rhs);
    printf("  kinetic  %.6f -> %.6f, potential %.6f -> %.6f\n", st->ke0, st->ke1,
           st->e0 - st->ke0, st->e1 - st->ke1);
    printf("  total    %.12f -> %.12f, max |E-E0|/|E0| = %.2e\n", st->e0, st->e1,
           st->max_energy_err);
    printf("  momentum max |P_i| = %.2e\n", st->max_momentum);
    printf("  mbk allocations while stepping: %ld\n", st->allocations);
    expect(st->max_energy_err < 1e-10, "total energy conserved to 1e-10 (relative)");
    expect(st->max_momentum < 1e-12, "total linear momentum stays zero (1e-12)");
    expect(st->allocations == 0, "no allocation while stepping");
}

/* A subsystem's stage version (bumped whenever that stage is invalidated). */
static long stage_version(const mbk_state *s, int sub, mbk_stage stage)
{
    long v = mbk_state_get_stage_version(s, sub, stage);
    if (v < 0) check_status(mbk_last_status(), "mbk_state_get_stage_version", __LINE__);
    return v;
}

/* Part 2: change the strength variable and show what was invalidated. */
static void change_strength(const mbk_system *sys, int sub, mbk_state *s, double strength)
{
    const repulsion *r = repulsion_get(sys, sub);
    CHECK_PTR(r);
    CHECK(mbk_system_realize(sys, s, MBK_STAGE_ACCELERATION));
    long pos_v = stage_version(s, sub, MBK_STAGE_POSITION);
    long dyn_v = stage_version(s, sub, MBK_STAGE_DYNAMICS);

    CHECK(repulsion_set_strength(sys, sub, s, strength));
    mbk_stage now = mbk_state_get_stage(s);
    printf("set strength = %.2f on a State realized to Acceleration\n", strength);
    printf("  stage is now %s (Dynamics and later invalidated)\n", mbk_stage_name(now));
    printf("  stage versions: Position %ld -> %ld, Dynamics %ld -> %ld\n", pos_v,
           stage_version(s, sub, MBK_STAGE_POSITION), dyn_v,
           stage_version(s, sub, MBK_STAGE_DYNAMICS));
    int pair_ok = mbk_state_is_cache_realized(s, sub, r->pair_cache);
    int force_ok = mbk_state_is_cache_realized(s, sub, r->force_cache);
    int pe_before = mbk_state_is_cache_realized(s, sub, r->pe_cache);
    printf("  pair-geometry cache (Position) valid: %s; force cache (Dynamics) valid: %s\n",
           pair_ok ? "yes" : "no", force_ok ? "yes" : "no");
    expect(now == MBK_STAGE_VELOCITY, "a strength change leaves the State at Velocity");
    expect(pair_ok && !force_ok && !pe_before, "only Dynamics-dependent cache entries invalidated");

    /* The lazy entry is computed when someone asks for it, then kept. */
    double pe = 0.0;
    CHECK(repulsion_get_potential_energy(sys, sub, s, &pe));
    int pe_after = mbk_state_is_cache_realized(s, sub, r->pe_cache);
    printf("  lazy potential-energy cache valid: %s -> requested (PE = %.6f) -> %s\n",
           pe_before ? "yes" : "no", pe, pe_after ? "yes" : "no");
    expect(pe_after, "the lazy entry is valid after it was requested");
}

/* Part 3: change the topology-stage default and show the stale State. */
static void change_default_strength(mbk_system *sys, int sub, mbk_state *s, double strength)
{
    long v0 = mbk_system_get_topology_version(sys);
    CHECK(repulsion_set_default_strength(sys, sub, strength));
    printf("set default_strength = %.2f: topology version %ld -> %ld\n", strength, v0,
           mbk_system_get_topology_version(sys));

    int rc = mbk_system_realize(sys, s, MBK_STAGE_POSITION);
    printf("  realize old State: %s (%s)\n", mbk_status_name(rc), mbk_last_error());
    expect(rc == MBK_ESTALE, "an old State is refused before the topology is realized again");

    CHECK(mbk_system_realize_topology(sys));
    rc = mbk_system_realize(sys, s, MBK_STAGE_POSITION);
    printf("  after realize_topology, old State: %s\n", mbk_status_name(rc));
    expect(rc == MBK_ESTALE, "an old State stays stale after the topology is realized again");

    double now = 0.0;
    CHECK(mbk_state_init(s, sys));
    CHECK(mbk_system_realize(sys, s, MBK_STAGE_POSITION));
    CHECK(repulsion_get_strength(sys, sub, s, &now));
    printf("  after mbk_state_init: realized to %s, strength = %.2f\n",
           mbk_stage_name(mbk_state_get_stage(s)), now);
    expect(now == strength, "a new State starts with the new default strength");
}

int main(void)
{
    const double t_end = 2.0;
    const int steps = 2000;

    /* Build the System: one subsystem of four particles, then freeze it. */
    mbk_system *sys = mbk_system_create("mutual repulsion");
    CHECK_PTR(sys);
    int sub = CHECK(repulsion_add(sys, 4, 1.0));
    CHECK(mbk_system_realize_topology(sys));

    /* A State with our initial conditions, kept as the start of both runs. */
    mbk_state *s = mbk_state_create(), *start = mbk_state_create();
    CHECK_PTR(s);
    CHECK_PTR(start);
    CHECK(mbk_state_init(s, sys));
    place_particles(sys, s);
    CHECK(mbk_system_realize(sys, s, MBK_STAGE_ACCELERATION));
    CHECK(mbk_state_copy(start, s));
    printf("System '%s': subsystem %d '%s', nq = %d, nu = %d, State of %zu bytes\n",
           mbk_system_get_name(sys), sub, mbk_system_get_subsystem_name(sys, sub),
           CHECK(mbk_state_get_nq(s)), CHECK(mbk_state_get_nu(s)), mbk_state_get_size_in_bytes(s));

    /* Run 1 with the default strength. */
    double strength = 0.0;
    CHECK(repulsion_get_strength(sys, sub, s, &strength));
    run_stats r1 = simulate(sys, s, t_end, steps);
    report_run("run 1", strength, &r1);

    /* Run 2 from the same start with a stronger repulsion: a discrete
       variable change, no new System, no new State layout. */
    CHECK(mbk_state_copy(s, start));
    change_strength(sys, sub, s, 2.5);
    CHECK(repulsion_get_strength(sys, sub, s, &strength));
    run_stats r2 = simulate(sys, s, t_end, steps);
    report_run("run 2", strength, &r2);
    expect(r2.e0 > r1.e0, "a stronger repulsion stores more potential energy");

    /* A topology-stage change makes every existing State stale. */
    change_default_strength(sys, sub, s, 0.5);

    mbk_state_destroy(start);
    mbk_state_destroy(s);
    mbk_system_destroy(sys);
    printf("%s\n", failures ? "FAILED" : "all checks passed");
    return failures ? 1 : 0;
}
