/* The library's integrators by name: one table for every part (the ensemble, the
 * program, your own front end) that chooses an integrator from text. */
#include <string.h>

#include "mbk/integrator.h"
#include "mbk/status.h"

static mbk_integrator *create_cvode_bdf(const mbk_system *sys) { return mbk_integrator_create_cvode(sys, MBK_CVODE_BDF); }
static mbk_integrator *create_cvode_adams(const mbk_system *sys)
{
    return mbk_integrator_create_cvode(sys, MBK_CVODE_ADAMS);
}

/* Short name, the integrator's own display name, its constructor. */
static const struct {
    const char *name, *display;
    mbk_integrator *(*create)(const mbk_system *sys);
} table[] = {{"rkmerson", "RK-Merson", mbk_integrator_create_rkmerson},
             {"rk4", "RK4", mbk_integrator_create_rk4},
             {"euler", "explicit Euler", mbk_integrator_create_explicit_euler},
             {"semi-euler", "semi-explicit Euler", mbk_integrator_create_semi_explicit_euler},
             {"cvode-bdf", "CVODE BDF", create_cvode_bdf},
             {"cvode-adams", "CVODE Adams", create_cvode_adams},
             {"ida", "IDA", mbk_integrator_create_ida}};

enum { NUM_NAMES = sizeof table / sizeof table[0] };

/* Index of a short or display name in the table, or -1 with MBK_EINVAL set. */
static int find(const char *name, const char *fn)
{
    for (int i = 0; name && i < NUM_NAMES; ++i)
        if (!strcmp(name, table[i].name) || !strcmp(name, table[i].display)) return i;
    mbk_set_error(MBK_EINVAL, "%s: unknown integrator '%s'; use rkmerson, rk4, euler, semi-euler, cvode-bdf, "
                  "cvode-adams or ida", fn, name ? name : "(NULL)");
    return -1;
}

const char *mbk_integrator_find_name(const char *name)
{
    int i = find(name, "mbk_integrator_find_name");
    return i < 0 ? NULL : table[i].name;
}

const char *mbk_integrator_get_name_at(int index)
{
    return index >= 0 && index < NUM_NAMES ? table[index].name : NULL;
}

mbk_integrator *mbk_integrator_create_by_name(const mbk_system *sys, const char *name)
{
    int i = find(name, "mbk_integrator_create_by_name");
    return i < 0 ? NULL : table[i].create(sys);
}
