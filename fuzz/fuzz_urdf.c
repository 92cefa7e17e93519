/* libFuzzer target for the URDF loader: any bytes given to
 * mbk_urdf_load_string must give either a System or an error, never a crash,
 * a leak, a hang or a sanitizer report. A System that loads is also realized
 * through Acceleration once, so what the loader builds is exercised too.
 * Build and run: fuzz/run.sh (ctest runs it for a bounded time when clang's
 * libFuzzer is available). */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include <mbk/mbk.h>
#include <mbk/urdf.h>

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    char *xml = malloc(size + 1);
    if (!xml) return 0;
    memcpy(xml, data, size);
    xml[size] = '\0';
    mbk_urdf_options o = mbk_urdf_options_default();
    o.max_bytes = (size_t)1 << 20;
    /* the options that change what the loader builds, from the input's length */
    o.floating_base = size & 1;
    o.ground_contact = size & 2;
    o.balance_inertia = size & 4;
    o.friction_as_elements = size & 8;
    o.strict_inertia = (size & 48) == 48;
    if (size & 16) o.min_mass = 0.01, o.min_inertia = 1e-6;
    mbk_system *sys = NULL;
    if (mbk_urdf_load_string(xml, &o, &sys) == MBK_OK) {
        mbk_state *s = mbk_state_create();
        if (s && mbk_state_init(s, sys) == MBK_OK) (void)mbk_system_realize(sys, s, MBK_STAGE_ACCELERATION);
        mbk_state_destroy(s);
        mbk_urdf_find_joint(sys, "j");
        mbk_system_destroy(sys);
    }
    free(xml);
    return 0;
}
