/* bench_chain.h - chainN as ANCHORS.md describes it (1 kg boxes 1 x 0.1 x 0.1 m on Pins whose
 * axes alternate between the parent's y and z, gravity along -z), built through the public
 * API for the benchmark programs that do not use the bm_model description (the ensemble and
 * Python-overhead benchmarks). */
#ifndef MBK_BENCH_CHAIN_H
#define MBK_BENCH_CHAIN_H

#include <mbk/mbk.h>

/* chainN with its topology realized; NULL (mbk_last_error says why) on failure. */
static inline mbk_system *bench_chain_system(int n)
{
    mbk_system *sys = mbk_multibody_create("chain");
    if (!sys) return NULL;
    mbk_matter *mt = mbk_multibody_upd_matter(sys);
    mbk_mass_props box = mbk_mass_props_from_central(1.0, mbk_vec3_make(0.5, 0, 0),
                                                     mbk_mat33_diag(0.02 / 12, 1.01 / 12, 1.01 / 12));
    /* a Pin turns about F's z; to turn about the parent's y, tilt F and M alike by -90 deg about x */
    mbk_transform to_y =
        mbk_transform_from_axis_angle(mbk_vec3_make(1, 0, 0), -1.57079632679489661923, mbk_vec3_zero());
    int parent = 0;
    for (int i = 0; i < n && parent >= 0; ++i) {
        mbk_transform X_BM = i % 2 == 0 ? to_y : mbk_transform_identity(), X_PF = X_BM;
        if (i > 0) X_PF.p = mbk_vec3_make(1, 0, 0);
        parent = mbk_matter_add_body(mt, parent, &X_PF, &box, &X_BM, mbk_mobilizer_pin());
    }
    if (parent < 0 || mbk_force_add_gravity(mbk_multibody_upd_forces(sys), mbk_vec3_make(0, 0, -9.81)) < 0 ||
        mbk_system_realize_topology(sys) < 0) {
        mbk_system_destroy(sys);
        return NULL;
    }
    return sys;
}

#endif
