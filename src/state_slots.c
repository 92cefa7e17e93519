/* Slots a State gets at Instance: constraint errors (qerr, uerr, udoterr), Lagrange
 * multipliers and event witnesses (per stage Time..Report). */
#include "state_impl.h"

#include "mbk/status.h"

/* ------------------------------------------------------------------ */
/* Constraint errors, multipliers, event witnesses                      */
/* ------------------------------------------------------------------ */

/* which: 0 qerr, 1 uerr, 2 udoterr. */
static int err_count(const st_hdr *h, int which)
{
    return which == 0 ? h->nqerr : which == 1 ? h->nuerr : h->nudoterr;
}

static int err_offset(const st_hdr *h, int which)
{
    return which == 0 ? 0 : which == 1 ? h->nqerr : h->nqerr + h->nuerr;
}

static int get_err_count(const mbk_state *s, int which, const char *fn)
{
    const st_hdr *h = st_need_stage(s, MBK_STAGE_INSTANCE, fn, "asking for constraint counts");
    return h ? err_count(h, which) : mbk_last_status();
}

int mbk_state_get_nqerr(const mbk_state *s) { return get_err_count(s, 0, "mbk_state_get_nqerr"); }
int mbk_state_get_nuerr(const mbk_state *s) { return get_err_count(s, 1, "mbk_state_get_nuerr"); }
int mbk_state_get_nudoterr(const mbk_state *s) { return get_err_count(s, 2, "mbk_state_get_nudoterr"); }
int mbk_state_get_num_multipliers(const mbk_state *s) { return get_err_count(s, 2, "mbk_state_get_num_multipliers"); }

static const double *get_err(const mbk_state *s, int which, mbk_stage stage, const char *fn)
{
    const st_hdr *h = st_need_stage(s, stage, fn, "reading constraint errors");
    return h ? st_dbl_at(s, h->err_off) + err_offset(h, which) : NULL;
}

const double *mbk_state_get_qerr(const mbk_state *s) { return get_err(s, 0, MBK_STAGE_POSITION, "mbk_state_get_qerr"); }
const double *mbk_state_get_uerr(const mbk_state *s) { return get_err(s, 1, MBK_STAGE_VELOCITY, "mbk_state_get_uerr"); }
const double *mbk_state_get_udoterr(const mbk_state *s) { return get_err(s, 2, MBK_STAGE_ACCELERATION, "mbk_state_get_udoterr"); }

const double *mbk_state_get_multipliers(const mbk_state *s)
{
    const st_hdr *h = st_need_stage(s, MBK_STAGE_ACCELERATION, "mbk_state_get_multipliers",
                                    "reading multipliers");
    return h ? st_dbl_at(s, h->mult_off) : NULL;
}

/* which: 0 qerr, 1 uerr, 2 udoterr, 3 multipliers. */
static double *upd_sub_err(const mbk_state *s, int sub, int which, const char *fn)
{
    if (!st_need_stage(s, MBK_STAGE_INSTANCE, fn, "writing constraint errors")) return NULL;
    const st_sub *b = st_need_sub(s, sub, fn);
    if (!b) return NULL;
    const st_hdr *h = st_hdr_of(s);
    if (which == 3) return st_dbl_at(s, h->mult_off) + b->udoterr0;
    const int start[3] = {b->qerr0, b->uerr0, b->udoterr0};
    return st_dbl_at(s, h->err_off) + err_offset(h, which) + start[which];
}

double *mbk_state_upd_subsystem_qerr(const mbk_state *s, int k) { return upd_sub_err(s, k, 0, "mbk_state_upd_subsystem_qerr"); }
double *mbk_state_upd_subsystem_uerr(const mbk_state *s, int k) { return upd_sub_err(s, k, 1, "mbk_state_upd_subsystem_uerr"); }
double *mbk_state_upd_subsystem_udoterr(const mbk_state *s, int k) { return upd_sub_err(s, k, 2, "mbk_state_upd_subsystem_udoterr"); }
double *mbk_state_upd_subsystem_multipliers(const mbk_state *s, int k) { return upd_sub_err(s, k, 3, "mbk_state_upd_subsystem_multipliers"); }

static int sub_err_start(const mbk_state *s, int sub, int which, const char *fn)
{
    if (!st_need_stage(s, MBK_STAGE_INSTANCE, fn, "asking for constraint slots")) return mbk_last_status();
    const st_sub *b = st_need_sub(s, sub, fn);
    if (!b) return mbk_last_status();
    const int start[3] = {b->qerr0, b->uerr0, b->udoterr0};
    return start[which];
}

int mbk_state_get_subsystem_qerr_start(const mbk_state *s, int k) { return sub_err_start(s, k, 0, "mbk_state_get_subsystem_qerr_start"); }
int mbk_state_get_subsystem_uerr_start(const mbk_state *s, int k) { return sub_err_start(s, k, 1, "mbk_state_get_subsystem_uerr_start"); }
int mbk_state_get_subsystem_udoterr_start(const mbk_state *s, int k) { return sub_err_start(s, k, 2, "mbk_state_get_subsystem_udoterr_start"); }

static int event_stage_ok(mbk_stage stage, const char *fn)
{
    if (stage >= MBK_STAGE_TIME && stage <= MBK_STAGE_REPORT) return 1;
    mbk_set_error(MBK_EINVAL, "%s: witnesses are evaluated at Time..Report, not %s", fn,
                  mbk_stage_name(stage));
    return 0;
}

int mbk_state_get_num_event_triggers(const mbk_state *s, mbk_stage stage)
{
    const char *fn = "mbk_state_get_num_event_triggers";
    const st_hdr *h = st_need_stage(s, MBK_STAGE_INSTANCE, fn, "asking for witness counts");
    if (!h || !event_stage_ok(stage, fn)) return mbk_last_status();
    return h->ntrig[stage - ST_FIRST_EVENT_STAGE];
}

const double *mbk_state_get_event_triggers(const mbk_state *s, mbk_stage stage)
{
    const char *fn = "mbk_state_get_event_triggers";
    if (!event_stage_ok(stage, fn)) return NULL;
    const st_hdr *h = st_need_stage(s, stage, fn, "reading its witnesses");
    if (!h) return NULL;
    return st_dbl_at(s, h->trig_off) + h->trig0[stage - ST_FIRST_EVENT_STAGE];
}

double *mbk_state_upd_event_triggers(const mbk_state *s, int sub, mbk_stage stage)
{
    const char *fn = "mbk_state_upd_event_triggers";
    if (!event_stage_ok(stage, fn)) return NULL;
    if (!st_need_stage(s, MBK_STAGE_INSTANCE, fn, "writing witnesses")) return NULL;
    const st_sub *b = st_need_sub(s, sub, fn);
    if (!b) return NULL;
    const st_hdr *h = st_hdr_of(s);
    int j = stage - ST_FIRST_EVENT_STAGE;
    return st_dbl_at(s, h->trig_off) + h->trig0[j] + b->trig0[j];
}
