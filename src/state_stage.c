/* Stages of a State: the State's and each subsystem's stage, stage versions and
 * invalidation. */
#include "state_impl.h"

#include "mbk/status.h"

/* ------------------------------------------------------------------ */
/* Stages and invalidation                                              */
/* ------------------------------------------------------------------ */

mbk_stage mbk_state_get_stage(const mbk_state *s)
{
    return s && s->block ? (mbk_stage)st_hdr_of(s)->stage : MBK_STAGE_EMPTY;
}

mbk_stage mbk_state_get_subsystem_stage(const mbk_state *s, int subsystem)
{
    const st_sub *b = st_need_sub(s, subsystem, "mbk_state_get_subsystem_stage");
    return b ? (mbk_stage)b->stage : MBK_STAGE_EMPTY;
}

int mbk_state_get_num_subsystems(const mbk_state *s)
{
    return s && s->block ? st_hdr_of(s)->nsub : 0;
}

long mbk_state_get_stage_version(const mbk_state *s, int subsystem, mbk_stage stage)
{
    const st_sub *b = st_need_sub(s, subsystem, "mbk_state_get_stage_version");
    if (!b) return -1;
    if (stage < MBK_STAGE_EMPTY || stage > MBK_STAGE_REPORT) {
        mbk_set_error(MBK_EINVAL, "mbk_state_get_stage_version: stage %d is not Empty..Report", (int)stage);
        return -1;
    }
    return b->version[stage];
}

/* Invalidate g; a Model change also discards what Model realization allocated. */
int st_invalidate_stage(mbk_state *s, int g)
{
    st_invalidate(s, g);
    if (g <= MBK_STAGE_MODEL && st_hdr_of(s)->alloc_stage == MBK_STAGE_EMPTY)
        return st_drop_allocations(s, MBK_STAGE_MODEL);
    return MBK_OK;
}

int mbk_state_invalidate(mbk_state *s, mbk_stage stage)
{
    if (!st_need_state(s, "mbk_state_invalidate")) return mbk_last_status();
    if (stage < MBK_STAGE_MODEL || stage > MBK_STAGE_REPORT)
        return mbk_set_error(MBK_EINVAL,
                             "mbk_state_invalidate: stage %d (%s) is not Model..Report; topology "
                             "changes go through mbk_system_invalidate_topology",
                             (int)stage, mbk_stage_name(stage));
    return st_invalidate_stage(s, (int)stage);
}
