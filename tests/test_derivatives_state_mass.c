/* The derivatives of a State that carries its own mass properties
 * (mbk_matter_set_body_mass_props, per State at Instance) are those of a
 * System built with them: the derivative sweeps read the State's masses, not
 * the bodies' defaults. A 3-D chain of six Pins under gravity with a spring,
 * compared with a System built with the same body changed; the State's
 * default-mass derivatives are checked to differ (the comparison can fail). */
#include <math.h>
#include <string.h>

#include <mbk/mbk.h>

#include "mbk_test.h"
#include "test_util.h"

enum { NB = 6 };

static mbk_mass_props link_props(double mass)
{
    return mbk_mass_props_from_central(mass, (mbk_vec3){0.5, 0, 0}, mbk_mat33_diag(0.02 * mass, 0.1 * mass, 0.1 * mass));
}

/* The chain, with body `heavy` given mass `mass` (others 1 kg). */
static mbk_system *make_chain(int heavy, double mass)
{
    mbk_system *sys = mbk_multibody_create("chain");
    mbk_matter *m = mbk_multibody_upd_matter(sys);
    mbk_transform X0 = mbk_transform_identity(), X1 = mbk_transform_from_p((mbk_vec3){1, 0, 0});
    mbk_transform Xy = mbk_transform_from_axis_angle((mbk_vec3){1, 0, 0}, 1.5707963267948966, (mbk_vec3){1, 0, 0});
    int prev = 0;
    for (int i = 1; i <= NB; ++i) {
        mbk_mass_props mp = link_props(i == heavy ? mass : 1.0);
        prev = mbk_matter_add_body(m, prev, i == 1 ? &X0 : (i % 2 ? &X1 : &Xy), &mp, &X0, mbk_mobilizer_pin());
    }
    mbk_forces *f = mbk_multibody_upd_forces(sys);
    mbk_force_add_gravity(f, (mbk_vec3){0, -9.81, -3.0});
    mbk_force_add_two_point_linear_spring(f, 0, (mbk_vec3){2, 1, 0}, NB, (mbk_vec3){0.5, 0, 0}, 40.0, 0.5);
    mbk_system_realize_topology(sys);
    return sys;
}

static mbk_state *start(const mbk_system *sys)
{
    double q[NB], u[NB];
    for (int i = 0; i < NB; ++i) q[i] = 0.3 * sin(1.7 * i + 0.2), u[i] = 0.8 * cos(2.3 * i);
    return test_state_from_default(sys, q, NB, u, NB);
}

static double max_rel_diff(const double *a, const double *b, int n)
{
    double d = 0, scale = 1e-300;
    for (int i = 0; i < n; ++i) scale = fmax(scale, fabs(a[i]));
    for (int i = 0; i < n; ++i) d = fmax(d, fabs(a[i] - b[i]));
    return d / scale;
}

int main(void)
{
    const int heavy = 3;
    const double mass = 2.75;
    mbk_system *built = make_chain(heavy, mass), *plain = make_chain(heavy, 1.0);
    mbk_state *sb = start(built), *sp = start(plain), *sd = start(plain);
    mbk_mass_props mp = link_props(mass);
    CHECK_INT(mbk_matter_set_body_mass_props(mbk_multibody_get_matter(plain), sp, heavy, &mp), MBK_OK);
    /* the derivatives start from Instance (they realize Time onward) */
    CHECK_INT(mbk_system_realize(built, sb, MBK_STAGE_INSTANCE), MBK_OK);
    CHECK_INT(mbk_system_realize(plain, sp, MBK_STAGE_INSTANCE), MBK_OK);
    CHECK_INT(mbk_system_realize(plain, sd, MBK_STAGE_INSTANCE), MBK_OK);

    double qb[NB * NB], ub[NB * NB], qp[NB * NB], up[NB * NB], qd[NB * NB], ud[NB * NB];
    CHECK_INT(mbk_system_calc_acceleration_derivatives(built, sb, qb, ub), MBK_OK);
    CHECK_INT(mbk_system_calc_acceleration_derivatives(plain, sp, qp, up), MBK_OK);
    CHECK_INT(mbk_system_calc_acceleration_derivatives(plain, sd, qd, ud), MBK_OK);

    double eq = max_rel_diff(qb, qp, NB * NB), eu = max_rel_diff(ub, up, NB * NB);
    printf("  per-State mass against a System built with it: d udot/dq %.2e, d udot/du %.2e (relative)\n", eq, eu);
    CHECK(eq < 1e-12);
    CHECK(eu < 1e-12);
    /* the default masses give other derivatives: the comparison above can fail */
    double dq = max_rel_diff(qb, qd, NB * NB);
    printf("  the same State with the default masses differs by %.2e\n", dq);
    CHECK(dq > 1e-3);

    mbk_state_destroy(sb);
    mbk_state_destroy(sp);
    mbk_state_destroy(sd);
    mbk_system_destroy(built);
    mbk_system_destroy(plain);
    return mbk_test_finish();
}
