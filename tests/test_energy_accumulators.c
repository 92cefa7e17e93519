/* Energy ops get their own accumulator: every calc_potential_energy and
 * calc_kinetic_energy op (of a subsystem or of a force element) receives a
 * *pe / *ke that arrives 0.0, so an op that SETS it and one that ADDS into it
 * both count, in either order. Each case also replays the ops by hand on one
 * shared double (the old behaviour) and checks that this would give a
 * different total, so the checks tell the two behaviours apart. */
#include <mbk/mbk.h>

#include "mbk_test.h"

typedef struct amounts { double pe, ke; } amounts;

/* ---- (a) two custom subsystems: one sets, one adds ----------------------------- */

static int set_pe(void *impl, const mbk_subsystem_ctx *c, const mbk_state *s, double *pe)
{
    (void)c, (void)s;
    *pe = ((const amounts *)impl)->pe;
    return 0;
}
static int set_ke(void *impl, const mbk_subsystem_ctx *c, const mbk_state *s, double *ke)
{
    (void)c, (void)s;
    *ke = ((const amounts *)impl)->ke;
    return 0;
}
static int add_pe(void *impl, const mbk_subsystem_ctx *c, const mbk_state *s, double *pe)
{
    (void)c, (void)s;
    *pe += ((const amounts *)impl)->pe;
    return 0;
}
static int add_ke(void *impl, const mbk_subsystem_ctx *c, const mbk_state *s, double *ke)
{
    (void)c, (void)s;
    *ke += ((const amounts *)impl)->ke;
    return 0;
}

static const mbk_subsystem_ops setter_ops = {.name = "setter", .calc_potential_energy = set_pe,
                                             .calc_kinetic_energy = set_ke};
static const mbk_subsystem_ops adder_ops = {.name = "adder", .calc_potential_energy = add_pe,
                                            .calc_kinetic_energy = add_ke};

static amounts set_amounts = {1.5, 2.0};   /* a, c */
static amounts add_amounts = {-0.25, 0.75}; /* b, d */

/* System energy with the two subsystems in the given order (setter first or not). */
static void subsystem_energy(bool setter_first, double *ke, double *pe)
{
    mbk_system *sys = mbk_system_create("set and add");
    const mbk_subsystem_ops *ops[2] = {&setter_ops, &adder_ops};
    amounts *impl[2] = {&set_amounts, &add_amounts};
    for (int k = 0; k < 2; ++k) {
        int i = setter_first ? k : 1 - k;
        CHECK_INT(mbk_system_add_subsystem(sys, ops[i], impl[i]), k);
    }
    CHECK_INT(mbk_system_realize_topology(sys), MBK_OK);
    mbk_state *s = mbk_state_create();
    CHECK_INT(mbk_state_init(s, sys), MBK_OK);
    CHECK_INT(mbk_system_realize(sys, s, MBK_STAGE_VELOCITY), MBK_OK);
    *ke = *pe = -99.0;
    CHECK_INT(mbk_system_calc_energy(sys, s, ke, pe), MBK_OK);
    mbk_state_destroy(s);
    mbk_system_destroy(sys);
}

static void test_subsystems(void)
{
    const double a = set_amounts.pe, b = add_amounts.pe, c = set_amounts.ke, d = add_amounts.ke;
    for (int order = 0; order < 2; ++order) {
        double ke, pe;
        subsystem_energy(order == 0, &ke, &pe);
        CHECK_NEAR(pe, a + b, 1e-15);
        CHECK_NEAR(ke, c + d, 1e-15);
    }
    /* The old way, one shared double through both ops, adder first: the setter
       wipes the adder's share. */
    double pe = 0.0, ke = 0.0;
    add_pe(&add_amounts, NULL, NULL, &pe);
    set_pe(&set_amounts, NULL, NULL, &pe);
    add_ke(&add_amounts, NULL, NULL, &ke);
    set_ke(&set_amounts, NULL, NULL, &ke);
    CHECK(!mbk_test_close(pe, a + b, 1e-6));
    CHECK(!mbk_test_close(ke, c + d, 1e-6));
}

/* ---- (b) custom force elements that set or add, with gravity on real bodies ----- */

static int el_set_pe(void *impl, const mbk_force_ctx *c, const mbk_state *s, double *pe)
{
    (void)c, (void)s;
    *pe = ((const amounts *)impl)->pe;
    return 0;
}
static int el_add_pe(void *impl, const mbk_force_ctx *c, const mbk_state *s, double *pe)
{
    (void)c, (void)s;
    *pe += ((const amounts *)impl)->pe;
    return 0;
}

static const mbk_force_ops el_setter_ops = {.name = "setting element", .calc_potential_energy = el_set_pe};
static const mbk_force_ops el_adder_ops = {.name = "adding element", .calc_potential_energy = el_add_pe};

static amounts el_set = {3.25, 0.0}, el_add = {-1.125, 0.0};

typedef struct model {
    mbk_system *sys;
    mbk_state *s;
    int gravity, setter, adder; /* element indices */
} model;

static const mbk_vec3 G = {0.4, -9.81, 1.3};

/* Two bodies (pin, then slider) with gravity first, then the two elements in the
   given order; with `extra`, a subsystem after the forces sets *ke and *pe as well. */
static model build(bool setter_first, bool extra)
{
    model md = {mbk_multibody_create("forces set and add"), mbk_state_create(), -1, -1, -1};
    mbk_matter *m = mbk_multibody_upd_matter(md.sys);
    mbk_forces *f = mbk_multibody_upd_forces(md.sys);
    mbk_mass_props p1 = mbk_mass_props_from_central(1.7, mbk_vec3_make(0.5, 0.1, -0.2), mbk_mat33_diag(0.1, 0.2, 0.3));
    mbk_mass_props p2 = mbk_mass_props_from_central(0.6, mbk_vec3_make(-0.1, 0.3, 0.2), mbk_mat33_diag(0.05, 0.04, 0.03));
    mbk_transform I = mbk_transform_identity(), at = mbk_transform_from_p(mbk_vec3_make(0.3, 0.2, 1.1));
    mbk_transform tip = mbk_transform_from_axis_angle(mbk_vec3_make(1, 1, 0), 0.4, mbk_vec3_make(1, 0, 0));
    int b1 = mbk_matter_add_body(m, 0, &at, &p1, &I, mbk_mobilizer_pin());
    CHECK(mbk_matter_add_body(m, b1, &tip, &p2, &I, mbk_mobilizer_slider()) > b1);
    md.gravity = mbk_force_add_gravity(f, G);
    if (setter_first) md.setter = mbk_force_add_custom(f, &el_setter_ops, &el_set);
    md.adder = mbk_force_add_custom(f, &el_adder_ops, &el_add);
    if (!setter_first) md.setter = mbk_force_add_custom(f, &el_setter_ops, &el_set);
    CHECK(md.gravity >= 0 && md.setter >= 0 && md.adder >= 0);
    if (extra) CHECK(mbk_system_add_subsystem(md.sys, &setter_ops, &set_amounts) >= 0);
    CHECK_INT(mbk_system_realize_topology(md.sys), MBK_OK);
    CHECK_INT(mbk_state_init(md.s, md.sys), MBK_OK);
    CHECK_INT(mbk_system_realize(md.sys, md.s, MBK_STAGE_MODEL), MBK_OK);
    const double q[2] = {0.7, 0.35}, u[2] = {1.2, -0.8};
    CHECK_INT(mbk_state_set_q(md.s, q, 2), MBK_OK);
    CHECK_INT(mbk_state_set_u(md.s, u, 2), MBK_OK);
    CHECK_INT(mbk_system_realize(md.sys, md.s, MBK_STAGE_VELOCITY), MBK_OK);
    return md;
}

/* -sum m g·p_com, p_com from each body's transform and its mass properties. */
static double gravity_pe(const model *md)
{
    const mbk_matter *m = mbk_multibody_get_matter(md->sys);
    double pe = 0.0;
    for (int b = 1; b < mbk_matter_get_num_bodies(m); ++b) {
        mbk_transform X;
        mbk_mass_props mp;
        CHECK_INT(mbk_matter_get_body_transform(m, md->s, b, &X), MBK_OK);
        CHECK_INT(mbk_matter_get_body_mass_props(m, b, &mp), MBK_OK);
        const double o[3] = {X.p.x, X.p.y, X.p.z}, g[3] = {G.x, G.y, G.z};
        for (int i = 0; i < 3; ++i) {
            double p_i = o[i] + X.R.m[i][0] * mp.com.x + X.R.m[i][1] * mp.com.y + X.R.m[i][2] * mp.com.z;
            pe -= mp.mass * g[i] * p_i;
        }
    }
    return pe;
}

static void test_force_elements(void)
{
    for (int run = 0; run < 4; ++run) {
        int order = run % 2;
        bool extra = run >= 2;
        model md = build(order == 0, extra);
        const mbk_forces *f = mbk_multibody_get_forces(md.sys);
        double grav = gravity_pe(&md), want = grav + el_set.pe + el_add.pe;
        CHECK(fabs(grav) > 1.0); /* the bodies really sit in the field */
        double pe_g, pe_s, pe_a;
        CHECK_INT(mbk_force_calc_potential_energy(f, md.s, md.gravity, &pe_g), MBK_OK);
        CHECK_INT(mbk_force_calc_potential_energy(f, md.s, md.setter, &pe_s), MBK_OK);
        CHECK_INT(mbk_force_calc_potential_energy(f, md.s, md.adder, &pe_a), MBK_OK);
        CHECK_NEAR(pe_g, grav, 1e-12);
        CHECK_NEAR(pe_s, el_set.pe, 1e-15);
        CHECK_NEAR(pe_a, el_add.pe, 1e-15);

        /* The system: matter's KE, the forces' PE and (extra) the setting
           subsystem's ke and pe on top, which wipes neither. */
        double ke_m, ke, pe;
        CHECK_INT(mbk_matter_calc_kinetic_energy(mbk_multibody_get_matter(md.sys), md.s, &ke_m), MBK_OK);
        CHECK(ke_m > 0.1);
        CHECK_INT(mbk_system_calc_energy(md.sys, md.s, &ke, &pe), MBK_OK);
        CHECK_NEAR(pe, want + (extra ? set_amounts.pe : 0.0), 1e-12);
        CHECK_NEAR(ke, ke_m + (extra ? set_amounts.ke : 0.0), 1e-12);

        /* The old way, the elements in their order on one shared double after
           gravity added its share: a setter wipes what came before it. */
        double shared = grav;
        if (order == 0) el_set_pe(&el_set, NULL, NULL, &shared);
        el_add_pe(&el_add, NULL, NULL, &shared);
        if (order == 1) el_set_pe(&el_set, NULL, NULL, &shared);
        CHECK(!mbk_test_close(shared, want, 1e-6));

        mbk_state_destroy(md.s);
        mbk_system_destroy(md.sys);
    }
}

int main(void)
{
    test_subsystems();
    test_force_elements();
    return mbk_test_finish();
}
