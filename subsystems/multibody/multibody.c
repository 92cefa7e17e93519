/* A multibody System: matter (subsystem 0) with its constraints, plus a general force
   subsystem (1). */
#include "mbk/forces.h"
#include "mbk/status.h"
#include "../constraints/constraints_impl.h"

mbk_system *mbk_multibody_create(const char *name)
{
    mbk_system *sys = mbk_system_create(name);
    if (!sys) return NULL;
    int k = mt_add_matter(sys);
    if (k != 0 || ct_attach(mbk_system_upd_subsystem_impl(sys, k)) < 0 ||
        !mbk_multibody_add_forces(sys, "forces")) {
        mbk_system_destroy(sys);
        return NULL;
    }
    return sys;
}
