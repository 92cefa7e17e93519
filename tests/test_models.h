/* Small models several tests share, built through the public API. */
#ifndef MBK_TEST_MODELS_H
#define MBK_TEST_MODELS_H

#include <mbk/mbk.h>

/* Planar four-bar built in 3-D, closed by a Ball: 3 rows of rank 2. */
static inline mbk_system *fourbar(void)
{
    const double l[3] = {0.5, 1.1, 0.8}, mass[3] = {1.2, 2.0, 1.5};
    mbk_system *sys = mbk_multibody_create("four-bar");
    mbk_matter *m = mbk_multibody_upd_matter(sys);
    mbk_transform id = mbk_transform_identity();
    for (int i = 0; i < 3; ++i) {
        mbk_transform X_PF = mbk_transform_from_p(mbk_vec3_make(i ? l[i - 1] : 0, 0, 0));
        double Izz = mass[i] * l[i] * l[i] / 12;
        mbk_mass_props mp = mbk_mass_props_from_central(mass[i], mbk_vec3_make(l[i] / 2, 0, 0),
                                                        mbk_mat33_diag(0.002, Izz, Izz));
        mbk_matter_add_body(m, i, &X_PF, &mp, &id, mbk_mobilizer_pin());
    }
    mbk_force_add_gravity(mbk_multibody_upd_forces(sys), mbk_vec3_make(0, -9.81, 0));
    mbk_constraint_add_ball(m, 0, mbk_vec3_make(1.2, 0, 0), 3, mbk_vec3_make(l[2], 0, 0));
    mbk_system_realize_topology(sys);
    return sys;
}

#endif
