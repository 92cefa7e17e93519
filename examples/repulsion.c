/* repulsion.c - "mutual repulsion" of bodies, written both ways the Simbody
 * Advanced Programming Guide writes it.
 *
 * Every pair of moving bodies (i, j) pushes apart along the line of their
 * origins:
 *
 *     F_i = s r / |r|^3,   F_j = -F_i,   r = p_i - p_j,
 *     PE  = s / |r|        (per pair),
 *
 * with s the strength. F_i = -dPE/dp_i, so a simulation conserves energy and,
 * since the pair forces cancel, linear momentum. (The Guide's listings
 * accumulate `energy -= 1.0/r.norm()`, which is the potential of an
 * attractive force: with its repulsive force that energy would not be
 * conserved. The sign here is the right one.)
 *
 * (a) Guide section 2.1, "A Custom Force": a custom force element
 *     (Simbody's Force::Custom) -- an mbk_force_ops table added to the
 *     general force subsystem with mbk_force_add_custom. If this is all you
 *     need, this is the way to do it: the force subsystem calls you at
 *     Dynamics stage with the arrays to add into, sums your energy, and can
 *     enable or disable you per State.
 * (b) Guide chapter 3, "A Custom Subsystem": the same force as a subsystem of
 *     its own, built in the Guide's three steps:
 *       3.2  a first force subsystem: realize_dynamics adds into matter's
 *            body-force accumulator; calc_potential_energy adds the energy;
 *       3.3  a Topology parameter: the default strength, kept in impl; its
 *            setter invalidates the subsystem's topology, so every existing
 *            State becomes stale (MBK_ESTALE);
 *       3.4  a State variable: the current strength, a discrete variable
 *            that invalidates Dynamics, with get/set functions.
 *     The code below is the final step; the earlier steps are that code with
 *     less in it (docs/forces.md walks through all three).
 *
 * One difference from the Guide: its loops start at MobilizedBodyIndex(0),
 * which is Ground, so every body is also pushed away from Ground's origin.
 * A force on Ground goes nowhere (Ground does not move), so linear momentum
 * would not be conserved. Here only the moving bodies 1..nb-1 interact.
 *
 * main() builds four free bodies twice, once with (a) and once with (b),
 * checks that both give identical forces and energy, shows what changing
 * each kind of parameter invalidates, and integrates both with the
 * library's fixed-step RK4 (mbk_integrator_create_rk4), checking that energy
 * and linear momentum are conserved. It exits nonzero if any check fails.
 *
 * tests/test_forces.c includes this file (with REPULSION_NO_MAIN defined)
 * to reuse (a) and (b). */
#include <math.h>
#include <stdio.h>

#include <mbk/mbk.h>

/* ====================================================================== */
/* The physics, shared by (a) and (b)                                     */
/* ====================================================================== */

/* The two ways differ only in plumbing. Both call this, in the same order,
   so they give bit-for-bit the same numbers. Adds the pair forces on the
   body origins into F (moments about the origins are zero) and the pair
   energies into *pe; either may be NULL. */
static int repulsion_accumulate(const mbk_matter *m, const mbk_state *s, double strength,
                                mbk_spatial_vec *F, double *pe)
{
    int nb = mbk_matter_get_num_bodies(m);
    for (int i = 1; i < nb; ++i) { /* body 0 is Ground: skipped, see above */
        mbk_transform X_i;
        int rc = mbk_matter_get_body_transform(m, s, i, &X_i);
        if (rc < 0) return rc;
        for (int j = 1; j < i; ++j) {
            mbk_transform X_j;
            if ((rc = mbk_matter_get_body_transform(m, s, j, &X_j)) < 0) return rc;
            mbk_vec3 r = mbk_vec3_sub(X_i.p, X_j.p); /* from j to i */
            double d = mbk_vec3_norm(r);
            if (!(d > 0.0))
                return mbk_set_error(MBK_EINVAL, "repulsion: the origins of bodies %d and %d coincide",
                                     i, j);
            if (F) {
                mbk_vec3 f = mbk_vec3_scale(r, strength / (d * d * d)); /* pushes i away from j */
                F[i].v = mbk_vec3_add(F[i].v, f);
                F[j].v = mbk_vec3_sub(F[j].v, f);
            }
            if (pe) *pe += strength / d; /* +s/|r|: the Guide has the sign wrong */
        }
    }
    return 0;
}

/* ====================================================================== */
/* (a) A custom force element (Guide 2.1)                                 */
/* ====================================================================== */

/* The element's data. The System owns it once the element is added and frees
   it with the destroy op. The strength is fixed when the element is made;
   (b) shows how to make it a per-State parameter. */
typedef struct repulsion_element {
    double strength;
} repulsion_element;

/* calc_force: ADD this element's forces. body_forces has one entry per body
   (Ground at 0) and mobility_forces one per u; both are always valid arrays
   (never NULL), already holding the other elements' forces. */
static int repulsion_element_force(void *impl, const mbk_force_ctx *c, const mbk_state *s,
                                   mbk_spatial_vec *body_forces, double *mobility_forces)
{
    const repulsion_element *e = impl;
    (void)mobility_forces; /* this force acts on bodies only */
    return repulsion_accumulate(mbk_force_ctx_get_matter(c), s, e->strength, body_forces, NULL);
}

/* calc_potential_energy: ADD this element's energy (State at Position or later). */
static int repulsion_element_energy(void *impl, const mbk_force_ctx *c, const mbk_state *s,
                                    double *pe)
{
    const repulsion_element *e = impl;
    return repulsion_accumulate(mbk_force_ctx_get_matter(c), s, e->strength, NULL, pe);
}

static void repulsion_element_destroy(void *impl) { mbk_free(impl); }

static const mbk_force_ops repulsion_element_ops = {
    .name = "mutual repulsion",
    .calc_force = repulsion_element_force,
    .calc_potential_energy = repulsion_element_energy,
    /* The Guide's dependsOnlyOnPositions() == true: the force depends on q
       alone, so the force subsystem caches it once per Position realization
       and reuses it while only u or z change (an RK4 stage that changes y
       changes q, so this pays off in u-only work: inverse dynamics, event
       handlers that change velocities, velocity projection). */
    .depends_only_on_positions = true,
    .destroy = repulsion_element_destroy,
};

/* Add the element to a force subsystem; returns its index (or a negative status). */
static int repulsion_element_add(mbk_forces *forces, double strength)
{
    if (!isfinite(strength))
        return mbk_set_error(MBK_EINVAL, "repulsion_element_add: strength %g is not finite", strength);
    repulsion_element *e = mbk_malloc(sizeof *e);
    if (!e) return MBK_ENOMEM;
    e->strength = strength;
    int index = mbk_force_add_custom(forces, &repulsion_element_ops, e);
    if (index < 0) mbk_free(e); /* refused: impl was not adopted, still ours */
    return index;
}

/* ====================================================================== */
/* (b) A force subsystem (Guide chapter 3), final step                    */
/* ====================================================================== */

/* The impl: what the System owns for this subsystem (the Guide's
   ExampleSubsystemImpl, the "Guts"). */
typedef struct repulsion_subsystem {
    /* Step 2 (Guide 3.3): a Topology "variable". It lives in the System, not
       in States, and is the strength every new State starts with. */
    double default_strength;
    /* Step 3 (Guide 3.4): index of the discrete variable holding the current
       strength. realize_topology writes it; it depends only on topology, so
       it is the same for every State and may be kept here. */
    int strength_var;
} repulsion_subsystem;

/* Step 3: allocate the strength variable. Forces depend on it and nothing
   earlier does, so it invalidates Dynamics: changing it between runs or in
   an event handler keeps every Position and Velocity result. */
static int repulsion_subsystem_topology(void *impl, const mbk_subsystem_ctx *c, mbk_state *s)
{
    repulsion_subsystem *r = impl;
    r->strength_var = mbk_state_allocate_discrete(s, mbk_subsystem_ctx_get_index(c), MBK_STAGE_DYNAMICS,
                                                  &mbk_value_double, &r->default_strength);
    return r->strength_var < 0 ? r->strength_var : 0;
}

/* The current strength of a State (the variable exists from Topology on). */
static double repulsion_subsystem_strength_of(const repulsion_subsystem *r, const mbk_subsystem_ctx *c,
                                              const mbk_state *s)
{
    return *(const double *)mbk_state_get_discrete(s, mbk_subsystem_ctx_get_index(c), r->strength_var);
}

/* Step 1 (Guide 3.2): at Dynamics, add into matter's body-force accumulator.
   Matter (subsystem 0) zeroed it at the start of Dynamics, and every
   subsystem added before this one has added its forces already. */
static int repulsion_subsystem_dynamics(void *impl, const mbk_subsystem_ctx *c, mbk_state *s)
{
    const repulsion_subsystem *r = impl;
    const mbk_system *sys = mbk_subsystem_ctx_get_system(c);
    mbk_spatial_vec *F = mbk_multibody_upd_body_forces(sys, s);
    if (!F) return mbk_last_status();
    return repulsion_accumulate(mbk_multibody_get_matter(sys), s,
                                repulsion_subsystem_strength_of(r, c, s), F, NULL);
}

/* Step 1: the subsystem's share of mbk_system_calc_energy's potential energy. */
static int repulsion_subsystem_energy(void *impl, const mbk_subsystem_ctx *c, const mbk_state *s,
                                      double *pe)
{
    const repulsion_subsystem *r = impl;
    const mbk_system *sys = mbk_subsystem_ctx_get_system(c);
    return repulsion_accumulate(mbk_multibody_get_matter(sys), s, repulsion_subsystem_strength_of(r, c, s),
                                NULL, pe);
}

static void repulsion_subsystem_destroy(void *impl) { mbk_free(impl); }

static const mbk_subsystem_ops repulsion_subsystem_ops = {
    .name = "repulsion",
    .realize_topology = repulsion_subsystem_topology,
    .realize_dynamics = repulsion_subsystem_dynamics,
    .calc_potential_energy = repulsion_subsystem_energy,
    .destroy = repulsion_subsystem_destroy,
};

/* ---- the public functions (the Guide's ExampleSubsystem handle) ---- */

/* Add the subsystem to a multibody System, after matter (it reads body poses
   at Dynamics); returns its subsystem index. */
static int repulsion_subsystem_add(mbk_system *sys, double default_strength)
{
    if (!mbk_multibody_get_matter(sys))
        return mbk_set_error(MBK_EINVAL, "repulsion_subsystem_add: the System has no matter subsystem");
    if (!isfinite(default_strength))
        return mbk_set_error(MBK_EINVAL, "repulsion_subsystem_add: strength %g is not finite",
                             default_strength);
    repulsion_subsystem *r = mbk_calloc(1, sizeof *r);
    if (!r) return MBK_ENOMEM;
    r->default_strength = default_strength;
    r->strength_var = -1;
    int index = mbk_system_add_subsystem(sys, &repulsion_subsystem_ops, r);
    if (index < 0) mbk_free(r); /* not adopted: still ours */
    return index;
}

/* The impl of subsystem `sub`, or NULL (MBK_EINVAL) if it is not ours. C has
   no dynamic_cast: compare the ops table the subsystem was added with. */
static const repulsion_subsystem *repulsion_subsystem_get(const mbk_system *sys, int sub)
{
    const mbk_subsystem_ops *ops = mbk_system_get_subsystem_ops(sys, sub);
    if (!ops || ops->realize_dynamics != repulsion_subsystem_ops.realize_dynamics) {
        mbk_set_error(MBK_EINVAL, "subsystem %d is not a repulsion subsystem", sub);
        return NULL;
    }
    return mbk_system_get_subsystem_impl(sys, sub);
}

/* Step 2: change the default. A Topology change: every existing State is
   stale from now on, and realize_topology must run again before new States
   are made (mbk_system_realize_topology, then mbk_state_init). */
static int repulsion_subsystem_set_default_strength(mbk_system *sys, int sub, double strength)
{
    if (!repulsion_subsystem_get(sys, sub)) return mbk_last_status();
    if (!isfinite(strength))
        return mbk_set_error(MBK_EINVAL, "repulsion_subsystem_set_default_strength: %g is not finite",
                             strength);
    repulsion_subsystem *r = mbk_system_upd_subsystem_impl(sys, sub);
    r->default_strength = strength;
    mbk_system_invalidate_subsystem_topology(sys, sub);
    return MBK_OK;
}

/* Step 2: read the default (no State involved). */
static int repulsion_subsystem_get_default_strength(const mbk_system *sys, int sub, double *strength)
{
    const repulsion_subsystem *r = repulsion_subsystem_get(sys, sub);
    if (!r) return mbk_last_status();
    *strength = r->default_strength;
    return MBK_OK;
}

/* Step 3: read the strength of a State (the Guide's getForceStrength). */
static int repulsion_subsystem_get_strength(const mbk_system *sys, int sub, const mbk_state *s,
                                            double *strength)
{
    const repulsion_subsystem *r = repulsion_subsystem_get(sys, sub);
    if (!r) return mbk_last_status();
    int rc = mbk_system_check_state(sys, s); /* refuse a stale or foreign State */
    if (rc < 0) return rc;
    const double *v = mbk_state_get_discrete_as(s, sub, r->strength_var, &mbk_value_double);
    if (!v) return mbk_last_status();
    *strength = *v;
    return MBK_OK;
}

/* Step 3: change the strength of a State (the Guide's setForceStrength).
   Invalidates Dynamics: a State at Acceleration goes back to Velocity. */
static int repulsion_subsystem_set_strength(const mbk_system *sys, int sub, mbk_state *s, double strength)
{
    const repulsion_subsystem *r = repulsion_subsystem_get(sys, sub);
    if (!r) return mbk_last_status();
    int rc = mbk_system_check_state(sys, s);
    if (rc < 0) return rc;
    if (!isfinite(strength))
        return mbk_set_error(MBK_EINVAL, "repulsion_subsystem_set_strength: %g is not finite", strength);
    return mbk_state_set_discrete(s, sub, r->strength_var, &mbk_value_double, &strength);
}

#ifndef REPULSION_NO_MAIN
/* ====================================================================== */
/* The driver program                                                     */
/* ====================================================================== */

#include <stdlib.h>

enum { NBODIES = 4 };

/* Any failing mbk call ends the program with the library's own explanation. */
#define TRY(call) try_call((call), #call, __LINE__)

static int try_call(int rc, const char *what, int line)
{
    if (rc < 0) {
        fprintf(stderr, "repulsion.c:%d: %s failed: %s: %s\n", line, what, mbk_status_name(rc),
                mbk_last_error());
        exit(1);
    }
    return rc;
}

/* Physics checks are counted, not fatal, so the report is complete. */
static int failures = 0;

static void expect(int ok, const char *what)
{
    printf("  [%s] %s\n", ok ? "ok" : "FAILED", what);
    if (!ok) ++failures;
}

/* Four free bodies with different masses, each on a Free mobilizer to Ground. */
static mbk_system *build(const char *name)
{
    static const double mass[NBODIES] = {1.0, 2.0, 1.5, 0.5};
    mbk_system *sys = mbk_multibody_create(name);
    if (!sys) try_call(mbk_last_status(), "mbk_multibody_create", __LINE__);
    mbk_matter *m = mbk_multibody_upd_matter(sys);
    mbk_transform I = mbk_transform_identity();
    for (int i = 0; i < NBODIES; ++i) {
        double a = 0.1 * mass[i]; /* a small solid sphere's inertia, roughly */
        mbk_mass_props mp = mbk_mass_props_from_central(mass[i], mbk_vec3_zero(), mbk_mat33_diag(a, a, a));
        TRY(mbk_matter_add_body(m, 0, &I, &mp, &I, mbk_mobilizer_free()));
    }
    return sys;
}

/* Initial conditions: bodies around the origin, total linear momentum zero. */
static void place(const mbk_system *sys, mbk_state *s)
{
    const mbk_matter *m = mbk_multibody_get_matter(sys);
    static const double p[NBODIES][3] = {{0, 0, 0}, {1.0, 0.2, 0}, {-0.3, 1.1, 0.4}, {0.4, -0.5, 0.9}};
    static const double v[NBODIES - 1][3] = {{0.2, -0.1, 0.0}, {0.0, 0.15, -0.05}, {-0.1, 0.0, 0.1}};
    TRY(mbk_system_realize(sys, s, MBK_STAGE_INSTANCE));
    mbk_spatial_vec V[NBODIES];
    mbk_vec3 P = mbk_vec3_zero(); /* momentum of the first three, cancelled by the last */
    for (int i = 0; i < NBODIES; ++i) {
        mbk_mass_props mp;
        TRY(mbk_matter_get_body_mass_props(m, i + 1, &mp));
        mbk_vec3 vi = i < NBODIES - 1 ? mbk_vec3_make(v[i][0], v[i][1], v[i][2])
                                      : mbk_vec3_scale(P, -1.0 / mp.mass);
        P = mbk_vec3_add(P, mbk_vec3_scale(vi, mp.mass));
        V[i] = mbk_spatial_vec_make(mbk_vec3_make(0.3 * i, -0.2, 0.1), vi); /* and some spin */
        mbk_transform X = mbk_transform_from_axis_angle(mbk_vec3_normalize(mbk_vec3_make(1, i, 2)), 0.5 * i,
                                                        mbk_vec3_make(p[i][0], p[i][1], p[i][2]));
        TRY(mbk_matter_set_body_q_to_fit_transform(m, s, i + 1, &X));
    }
    TRY(mbk_system_realize(sys, s, MBK_STAGE_POSITION));
    for (int i = 0; i < NBODIES; ++i) TRY(mbk_matter_set_body_u_to_fit_velocity(m, s, i + 1, &V[i]));
}

/* Largest difference between the body forces of two States' Systems. */
static double force_difference(const mbk_system *a, const mbk_state *sa, const mbk_system *b,
                               const mbk_state *sb)
{
    const mbk_spatial_vec *Fa = mbk_multibody_get_body_forces(a, sa), *Fb = mbk_multibody_get_body_forces(b, sb);
    if (!Fa || !Fb) try_call(mbk_last_status(), "mbk_multibody_get_body_forces", __LINE__);
    double d = 0.0;
    for (int i = 1; i <= NBODIES; ++i) {
        mbk_spatial_vec e = mbk_spatial_vec_sub(Fa[i], Fb[i]);
        d = fmax(d, fmax(mbk_vec3_norm(e.w), mbk_vec3_norm(e.v)));
    }
    return d;
}

static double potential(const mbk_system *sys, const mbk_state *s)
{
    double pe = 0.0;
    TRY(mbk_system_calc_energy(sys, s, NULL, &pe));
    return pe;
}

/* The library's classical RK4 with fixed step h, started from (a copy of) s. Its
   projection after every step keeps the quaternions at unit length. */
static mbk_integrator *rk4_from(const mbk_system *sys, const mbk_state *s, double h)
{
    mbk_integrator *ig = mbk_integrator_create_rk4(sys);
    if (!ig) try_call(mbk_last_status(), "mbk_integrator_create_rk4", __LINE__);
    TRY(mbk_integrator_set_fixed_step(ig, h));
    TRY(mbk_integrator_initialize(ig, s));
    return ig;
}

/* Total energy and linear momentum of a State realized to Velocity. */
static double energy(const mbk_system *sys, const mbk_state *s, mbk_vec3 *P)
{
    double ke = 0.0, pe = 0.0;
    mbk_spatial_vec h;
    TRY(mbk_system_calc_energy(sys, s, &ke, &pe));
    TRY(mbk_matter_calc_system_momentum(mbk_multibody_get_matter(sys), s, &h));
    *P = h.v;
    return ke + pe;
}

int main(void)
{
    /* (a): the element in the general force subsystem made by mbk_multibody_create. */
    mbk_system *sys_a = build("repulsion as a custom force element");
    int elem = TRY(repulsion_element_add(mbk_multibody_upd_forces(sys_a), 1.0));
    TRY(mbk_system_realize_topology(sys_a));

    /* (b): a subsystem of its own, after matter and the general force subsystem. */
    mbk_system *sys_b = build("repulsion as a force subsystem");
    int sub = TRY(repulsion_subsystem_add(sys_b, 1.0));
    TRY(mbk_system_realize_topology(sys_b));
    printf("(a) element %d in the general force subsystem; (b) subsystem %d '%s'\n", elem, sub,
           mbk_system_get_subsystem_name(sys_b, sub));

    mbk_state *sa = mbk_state_create(), *sb = mbk_state_create();
    if (!sa || !sb) return 1;
    TRY(mbk_state_init(sa, sys_a));
    TRY(mbk_state_init(sb, sys_b));
    place(sys_a, sa);
    place(sys_b, sb);

    /* 1. Both ways give the same forces and energy. */
    printf("1. the two implementations agree\n");
    TRY(mbk_system_realize(sys_a, sa, MBK_STAGE_DYNAMICS));
    TRY(mbk_system_realize(sys_b, sb, MBK_STAGE_DYNAMICS));
    double dF = force_difference(sys_a, sa, sys_b, sb);
    double pa = potential(sys_a, sa), pb = potential(sys_b, sb);
    printf("  max |F_a - F_b| = %.3g, PE %.15f vs %.15f\n", dF, pa, pb);
    expect(dF <= 1e-14 && fabs(pa - pb) <= 1e-14 * fabs(pa), "same body forces and potential energy");

    /* 2. Step 3's variable: a per-State strength, invalidating Dynamics only. */
    printf("2. the strength is a Dynamics-stage variable of (b)\n");
    TRY(mbk_system_realize(sys_b, sb, MBK_STAGE_ACCELERATION));
    TRY(repulsion_subsystem_set_strength(sys_b, sub, sb, 2.0));
    printf("  set strength 2 on a State at Acceleration: now at %s\n",
           mbk_stage_name(mbk_state_get_stage(sb)));
    expect(mbk_state_get_stage(sb) == MBK_STAGE_VELOCITY, "only Dynamics and later were invalidated");
    double pb2 = potential(sys_b, sb);
    expect(fabs(pb2 - 2.0 * pa) <= 1e-14 * fabs(pb2), "twice the strength, twice the energy");
    TRY(repulsion_subsystem_set_strength(sys_b, sub, sb, 1.0));

    /* 3. Simulate both from the same start. */
    printf("3. RK4, h = 1e-3, 2 s\n");
    const double h = 1e-3;
    const int steps = 2000;
    mbk_vec3 P0a, P0b, P;
    TRY(mbk_system_realize(sys_a, sa, MBK_STAGE_VELOCITY));
    TRY(mbk_system_realize(sys_b, sb, MBK_STAGE_VELOCITY));
    double E0a = energy(sys_a, sa, &P0a), E0b = energy(sys_b, sb, &P0b);
    double dEa = 0.0, dEb = 0.0, dP = 0.0;
    mbk_integrator *ia = rk4_from(sys_a, sa, h), *ib = rk4_from(sys_b, sb, h);
    for (int n = 1; n <= steps; ++n) {
        TRY(mbk_integrator_step_to(ia, n * h)); /* one step each, landing on n h exactly */
        TRY(mbk_integrator_step_to(ib, n * h));
        dEa = fmax(dEa, fabs(energy(sys_a, mbk_integrator_get_state(ia), &P) - E0a) / fabs(E0a));
        dP = fmax(dP, mbk_vec3_norm(mbk_vec3_sub(P, P0a)));
        dEb = fmax(dEb, fabs(energy(sys_b, mbk_integrator_get_state(ib), &P) - E0b) / fabs(E0b));
        dP = fmax(dP, mbk_vec3_norm(mbk_vec3_sub(P, P0b)));
    }
    double dy = 0.0;
    const mbk_state *fa = mbk_integrator_get_state(ia);
    const double *ya = mbk_state_get_y(fa), *yb = mbk_state_get_y(mbk_integrator_get_state(ib));
    for (int i = 0; i < TRY(mbk_state_get_ny(fa)); ++i) dy = fmax(dy, fabs(ya[i] - yb[i]));
    printf("  energy %.12f -> %.12f; max relative drift (a) %.2e, (b) %.2e\n", E0a,
           energy(sys_a, fa, &P), dEa, dEb);
    printf("  max |P - P0| = %.2e (|P0| = %.2e); max |y_a - y_b| at the end = %.2e\n", dP,
           mbk_vec3_norm(P0a), dy);
    expect(dEa < 1e-10 && dEb < 1e-10, "total energy conserved to 1e-10 (relative)");
    expect(dP < 1e-12, "linear momentum conserved to 1e-12");
    expect(dy <= 1e-12, "(a) and (b) follow the same trajectory");
    mbk_integrator_destroy(ia);
    mbk_integrator_destroy(ib);

    /* 4. Step 2's parameter: a Topology change makes old States stale. */
    printf("4. the default strength is a Topology parameter of (b)\n");
    TRY(repulsion_subsystem_set_default_strength(sys_b, sub, 3.0));
    int rc = mbk_system_realize(sys_b, sb, MBK_STAGE_POSITION);
    printf("  after set_default_strength, realizing the old State: %s\n", mbk_status_name(rc));
    expect(rc == MBK_ESTALE, "the old State is refused (MBK_ESTALE)");
    double now = 0.0, def = 0.0;
    TRY(mbk_system_realize_topology(sys_b));
    TRY(mbk_state_init(sb, sys_b));
    TRY(repulsion_subsystem_get_strength(sys_b, sub, sb, &now));
    TRY(repulsion_subsystem_get_default_strength(sys_b, sub, &def));
    printf("  a new State starts with strength %g (default %g)\n", now, def);
    expect(now == 3.0 && def == 3.0, "new States start with the new default");

    mbk_state_destroy(sa);
    mbk_state_destroy(sb);
    mbk_system_destroy(sys_a);
    mbk_system_destroy(sys_b);
    printf("%s\n", failures ? "FAILED" : "all checks passed");
    return failures ? 1 : 0;
}
#endif /* REPULSION_NO_MAIN */
