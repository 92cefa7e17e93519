/* Quaternions: results use the unit quaternion whatever its length in the
 * State, and mbk_matter_normalize_quaternions puts q back on unit length,
 * invalidating Position only when something changed. */
#include <mbk/mbk.h>

#include "mbk_test.h"

int main(void)
{
    mbk_system *sys = mbk_multibody_create("quaternions");
    mbk_matter *m = mbk_multibody_upd_matter(sys);
    mbk_mass_props mp = mbk_mass_props_from_central(2.0, mbk_vec3_make(0.1, 0.2, 0.3),
                                                    mbk_mat33_diag(0.3, 0.4, 0.5));
    mbk_transform I = mbk_transform_identity();
    CHECK_INT(mbk_matter_add_body(m, 0, &I, &mp, &I, mbk_mobilizer_free()), 1);
    CHECK_INT(mbk_matter_add_body(m, 1, &I, &mp, &I, mbk_mobilizer_ball()), 2);
    CHECK_INT(mbk_system_realize_topology(sys), MBK_OK);
    mbk_state *unit = mbk_state_create(), *scaled = mbk_state_create();
    CHECK_INT(mbk_state_init(unit, sys), MBK_OK);
    CHECK_INT(mbk_system_realize(sys, unit, MBK_STAGE_MODEL), MBK_OK);

    /* The same rotations, once unit and once scaled by 3 and 0.5. */
    const double qu[11] = {0.5, 0.5, -0.5, 0.5, 1, 2, 3, 0.8, 0.0, 0.6, 0.0};
    double qs[11];
    for (int i = 0; i < 11; ++i) qs[i] = qu[i] * (i < 4 ? 3.0 : i >= 7 ? 0.5 : 1.0);
    const double u[9] = {0.1, -0.2, 0.3, 1, 0, -1, 0.4, 0.5, -0.6};
    CHECK_INT(mbk_state_set_q(unit, qu, 11), MBK_OK);
    CHECK_INT(mbk_state_set_u(unit, u, 9), MBK_OK);
    CHECK_INT(mbk_state_copy(scaled, unit), MBK_OK);
    CHECK_INT(mbk_state_set_q(scaled, qs, 11), MBK_OK);
    CHECK_INT(mbk_system_realize(sys, unit, MBK_STAGE_ACCELERATION), MBK_OK);
    CHECK_INT(mbk_system_realize(sys, scaled, MBK_STAGE_ACCELERATION), MBK_OK);
    for (int b = 1; b <= 2; ++b) {
        mbk_transform Xu, Xs;
        mbk_spatial_vec Au, As;
        mbk_matter_get_body_transform(m, unit, b, &Xu);
        mbk_matter_get_body_transform(m, scaled, b, &Xs);
        mbk_matter_get_body_acceleration(m, unit, b, &Au);
        mbk_matter_get_body_acceleration(m, scaled, b, &As);
        for (int r = 0; r < 3; ++r)
            for (int c = 0; c < 3; ++c) CHECK_NEAR(Xu.R.m[r][c], Xs.R.m[r][c], 1e-15);
        CHECK_NEAR(Au.w.x, As.w.x, 1e-14);
        CHECK_NEAR(Au.v.z, As.v.z, 1e-14);
    }
    /* qdot is that of the unit quaternion: it is tangent to the unit sphere. */
    const double *qd = mbk_state_get_qdot(scaled), *qn = mbk_state_get_qdot(unit);
    for (int i = 0; i < 11; ++i) CHECK_NEAR(qd[i], qn[i], 1e-15);

    /* Normalizing changes q and reverts to Time; a second call changes nothing. */
    CHECK_INT(mbk_matter_normalize_quaternions(m, scaled), MBK_OK);
    CHECK_INT(mbk_state_get_stage(scaled), MBK_STAGE_TIME);
    for (int i = 0; i < 11; ++i) CHECK_NEAR(mbk_state_get_q(scaled)[i], qu[i], 1e-15);
    CHECK_INT(mbk_system_realize(sys, scaled, MBK_STAGE_ACCELERATION), MBK_OK);
    CHECK_INT(mbk_matter_normalize_quaternions(m, scaled), MBK_OK);
    CHECK_INT(mbk_state_get_stage(scaled), MBK_STAGE_ACCELERATION);

    /* In Euler mode there is nothing to normalize. */
    CHECK_INT(mbk_matter_set_use_euler_angles(m, unit, true), MBK_OK);
    CHECK_INT(mbk_system_realize(sys, unit, MBK_STAGE_ACCELERATION), MBK_OK);
    CHECK_INT(mbk_state_get_nq(unit), 9);
    CHECK_INT(mbk_matter_normalize_quaternions(m, unit), MBK_OK);
    CHECK_INT(mbk_state_get_stage(unit), MBK_STAGE_ACCELERATION);
    mbk_state_destroy(unit);
    mbk_state_destroy(scaled);
    mbk_system_destroy(sys);
    return mbk_test_finish();
}
