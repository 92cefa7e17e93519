/* mbk_force_get_hunt_crossley_sphere: where a contact element's sphere is (what the
 * trajectory viewer draws); MBK_EINVAL for another kind of element or a bad index. */
#include <mbk/mbk.h>

#include "mbk_test.h"

int main(void)
{
    mbk_system *sys = mbk_multibody_create("contact geometry");
    mbk_matter *mt = mbk_multibody_upd_matter(sys);
    mbk_forces *f = mbk_multibody_upd_forces(sys);
    mbk_mass_props mp = mbk_mass_props_from_central(1, mbk_vec3_zero(), mbk_mat33_diag(0.1, 0.1, 0.1));
    mbk_transform I = mbk_transform_identity();
    int b = mbk_matter_add_body(mt, 0, &I, &mp, &I, mbk_mobilizer_free());
    int g = mbk_force_add_gravity(f, mbk_vec3_make(0, 0, -9.81));
    const double params[6] = {1e7, 0.5, 0.8, 0.5, 0, 0.05};
    int c = mbk_force_add_hunt_crossley_sphere(f, b, mbk_vec3_make(0.1, -0.2, 0.3), 0.05, -0.25, params);
    CHECK(b == 1 && g >= 0 && c >= 0);

    int body = -1;
    mbk_vec3 centre = mbk_vec3_zero();
    double r = 0, h = 0;
    CHECK_INT(mbk_force_get_hunt_crossley_sphere(f, c, &body, &centre, &r, &h), MBK_OK);
    CHECK_INT(body, b);
    CHECK(centre.x == 0.1 && centre.y == -0.2 && centre.z == 0.3);
    CHECK(r == 0.05 && h == -0.25);
    CHECK_INT(mbk_force_get_hunt_crossley_sphere(f, c, NULL, NULL, NULL, NULL), MBK_OK); /* outputs optional */
    body = 7;
    CHECK_INT(mbk_force_get_hunt_crossley_sphere(f, g, &body, NULL, NULL, NULL), MBK_EINVAL); /* gravity: not one */
    CHECK_INT(body, 7);                                                               /* untouched */
    CHECK_INT(mbk_force_get_hunt_crossley_sphere(f, 99, NULL, NULL, NULL, NULL), MBK_EINVAL);
    CHECK_INT(mbk_last_status(), MBK_EINVAL);
    CHECK_INT(mbk_force_get_hunt_crossley_sphere(f, -1, NULL, NULL, NULL, NULL), MBK_EINVAL);
    CHECK_INT(mbk_force_get_hunt_crossley_sphere(NULL, 0, NULL, NULL, NULL, NULL), MBK_EINVAL);
    mbk_system_destroy(sys);
    return mbk_test_finish();
}
