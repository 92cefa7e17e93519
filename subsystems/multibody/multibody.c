/* A multibody System: matter (subsystem 0) plus a general force subsystem (1). */
#include "mbk/forces.h"
#include "mbk/status.h"
#include "../matter/matter_impl.h"

mbk_system *mbk_multibody_create(const char *name)
{
    mbk_system *sys = mbk_system_create(name);
    if (!sys) return NULL;
    if (mt_add_matter(sys) != 0 || !mbk_multibody_add_forces(sys, "forces")) {
        mbk_system_destroy(sys);
        return NULL;
    }
    return sys;
}
