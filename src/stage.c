/* Stage names. */
#include "mbk/stage.h"

const char *mbk_stage_name(mbk_stage stage)
{
    static const char *const names[] = {"Empty",    "Topology", "Model",        "Instance",
                                        "Time",     "Position", "Velocity",     "Dynamics",
                                        "Acceleration", "Report", "Infinity"};
    if (!mbk_stage_is_valid((int)stage)) return "Invalid";
    return names[stage];
}

int mbk_stage_is_valid(int stage)
{
    return stage >= (int)MBK_STAGE_EMPTY && stage <= (int)MBK_STAGE_INFINITY;
}
