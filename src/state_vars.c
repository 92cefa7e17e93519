/* Continuous variables of a State: time, q, u and z (together y), whole and per
 * subsystem, their derivatives (ydot, qdotdot), and the finiteness check before
 * realization. */
#include "state_impl.h"

#include <math.h>
#include <string.h>

#include "mbk/status.h"

/* ------------------------------------------------------------------ */
/* Time and continuous variables                                        */
/* ------------------------------------------------------------------ */

double mbk_state_get_time(const mbk_state *s) { return s && s->block ? st_hdr_of(s)->t : NAN; }

int mbk_state_set_time(mbk_state *s, double t)
{
    st_hdr *h = st_need_stage(s, MBK_STAGE_TOPOLOGY, "mbk_state_set_time", "setting time");
    if (!h) return mbk_last_status();
    if (!isfinite(t))
        return mbk_set_error(MBK_ENOTFINITE, "mbk_state_set_time: t = %g is not finite", t);
    h->t = t;
    st_invalidate(s, MBK_STAGE_TIME);
    return MBK_OK;
}

/* Count below Model is an error (sizes are only known from Model). */
static int model_count(const mbk_state *s, int which, const char *fn)
{
    const st_hdr *h = st_need_stage(s, MBK_STAGE_MODEL, fn, "asking for sizes");
    if (!h) return mbk_last_status();
    const int v[4] = {h->nq, h->nu, h->nz, h->nq + h->nu + h->nz};
    return v[which];
}

int mbk_state_get_nq(const mbk_state *s) { return model_count(s, 0, "mbk_state_get_nq"); }
int mbk_state_get_nu(const mbk_state *s) { return model_count(s, 1, "mbk_state_get_nu"); }
int mbk_state_get_nz(const mbk_state *s) { return model_count(s, 2, "mbk_state_get_nz"); }
int mbk_state_get_ny(const mbk_state *s) { return model_count(s, 3, "mbk_state_get_ny"); }

/* Start of q, u or z within y (0, nq, nq+nu). */
static int y_section(const st_hdr *h, int which)
{
    return which == 0 ? 0 : which == 1 ? h->nq : h->nq + h->nu;
}

static const double *get_y_part(const mbk_state *s, int which, const char *fn)
{
    const st_hdr *h = st_need_stage(s, MBK_STAGE_MODEL, fn, "reading continuous variables");
    return h ? st_dbl_at(s, h->y_off) + y_section(h, which) : NULL;
}

const double *mbk_state_get_q(const mbk_state *s) { return get_y_part(s, 0, "mbk_state_get_q"); }
const double *mbk_state_get_u(const mbk_state *s) { return get_y_part(s, 1, "mbk_state_get_u"); }
const double *mbk_state_get_z(const mbk_state *s) { return get_y_part(s, 2, "mbk_state_get_z"); }
const double *mbk_state_get_y(const mbk_state *s) { return get_y_part(s, 0, "mbk_state_get_y"); }

/* Stage a change of q, u or z invalidates. */
static const int y_stage[3] = {MBK_STAGE_POSITION, MBK_STAGE_VELOCITY, MBK_STAGE_DYNAMICS};

static double *upd_y_part(mbk_state *s, int which, const char *fn)
{
    const double *p = get_y_part(s, which, fn);
    if (!p) return NULL;
    st_invalidate(s, y_stage[which]);
    return (double *)p;
}

double *mbk_state_upd_q(mbk_state *s) { return upd_y_part(s, 0, "mbk_state_upd_q"); }
double *mbk_state_upd_u(mbk_state *s) { return upd_y_part(s, 1, "mbk_state_upd_u"); }
double *mbk_state_upd_z(mbk_state *s) { return upd_y_part(s, 2, "mbk_state_upd_z"); }
double *mbk_state_upd_y(mbk_state *s) { return upd_y_part(s, 0, "mbk_state_upd_y"); }

/* which: 0 q, 1 u, 2 z, 3 y. Checks everything before changing anything. */
static int set_y_part(mbk_state *s, int which, const double *v, int n, const char *fn)
{
    int want = model_count(s, which, fn);
    if (want < 0) return want;
    if (n != want)
        return mbk_set_error(MBK_EINVAL, "%s: got %d values but the state has %d", fn, n, want);
    if (n > 0 && !v) return mbk_set_error(MBK_EINVAL, "%s: values pointer is NULL", fn);
    const int bad = mbk_find_nonfinite(v, n);
    if (bad >= 0)
        return mbk_set_error(MBK_ENOTFINITE, "%s: value %d is %g; nothing was changed", fn, bad, v[bad]);
    const st_hdr *h = st_hdr_of(s);
    int part = which == 3 ? 0 : which;
    if (n > 0) memcpy(st_dbl_at(s, h->y_off) + y_section(h, part), v, (size_t)n * sizeof(double));
    st_invalidate(s, y_stage[part]);
    /* scanned above: realization need not scan these again */
    st_hdr_of(s)->y_checked |= which == 3 ? ST_CHECKED_Q | ST_CHECKED_U | ST_CHECKED_Z : 1 << part;
    return MBK_OK;
}

int mbk_state_set_q(mbk_state *s, const double *q, int n) { return set_y_part(s, 0, q, n, "mbk_state_set_q"); }
int mbk_state_set_u(mbk_state *s, const double *u, int n) { return set_y_part(s, 1, u, n, "mbk_state_set_u"); }
int mbk_state_set_z(mbk_state *s, const double *z, int n) { return set_y_part(s, 2, z, n, "mbk_state_set_z"); }
int mbk_state_set_y(mbk_state *s, const double *y, int n) { return set_y_part(s, 3, y, n, "mbk_state_set_y"); }

/* ------------------------------------------------------------------ */
/* Per-subsystem views of y                                             */
/* ------------------------------------------------------------------ */

/* A subsystem's record if the State is at Model, else NULL with the error. */
static const st_sub *model_sub(const mbk_state *s, int sub, const char *fn)
{
    if (!st_need_stage(s, MBK_STAGE_MODEL, fn, "using continuous variables")) return NULL;
    return st_need_sub(s, sub, fn);
}

static const double *sub_y(const mbk_state *s, int sub, int which, const char *fn)
{
    const st_sub *b = model_sub(s, sub, fn);
    if (!b) return NULL;
    const st_hdr *h = st_hdr_of(s);
    const int start[3] = {b->q0, b->u0, b->z0};
    return st_dbl_at(s, h->y_off) + y_section(h, which) + start[which];
}

const double *mbk_state_get_subsystem_q(const mbk_state *s, int k) { return sub_y(s, k, 0, "mbk_state_get_subsystem_q"); }
const double *mbk_state_get_subsystem_u(const mbk_state *s, int k) { return sub_y(s, k, 1, "mbk_state_get_subsystem_u"); }
const double *mbk_state_get_subsystem_z(const mbk_state *s, int k) { return sub_y(s, k, 2, "mbk_state_get_subsystem_z"); }

static double *upd_sub_y(mbk_state *s, int sub, int which, const char *fn)
{
    const double *p = sub_y(s, sub, which, fn);
    if (!p) return NULL;
    st_invalidate(s, y_stage[which]);
    return (double *)p;
}

double *mbk_state_upd_subsystem_q(mbk_state *s, int k) { return upd_sub_y(s, k, 0, "mbk_state_upd_subsystem_q"); }
double *mbk_state_upd_subsystem_u(mbk_state *s, int k) { return upd_sub_y(s, k, 1, "mbk_state_upd_subsystem_u"); }
double *mbk_state_upd_subsystem_z(mbk_state *s, int k) { return upd_sub_y(s, k, 2, "mbk_state_upd_subsystem_z"); }

/* which: 0..2 counts of q/u/z, 3..5 their starts. */
static int sub_int(const mbk_state *s, int sub, int which, const char *fn)
{
    const st_sub *b = model_sub(s, sub, fn);
    if (!b) return mbk_last_status();
    const int v[6] = {b->nq, b->nu, b->nz, b->q0, b->u0, b->z0};
    return v[which];
}

int mbk_state_get_subsystem_nq(const mbk_state *s, int k) { return sub_int(s, k, 0, "mbk_state_get_subsystem_nq"); }
int mbk_state_get_subsystem_nu(const mbk_state *s, int k) { return sub_int(s, k, 1, "mbk_state_get_subsystem_nu"); }
int mbk_state_get_subsystem_nz(const mbk_state *s, int k) { return sub_int(s, k, 2, "mbk_state_get_subsystem_nz"); }
int mbk_state_get_subsystem_q_start(const mbk_state *s, int k) { return sub_int(s, k, 3, "mbk_state_get_subsystem_q_start"); }
int mbk_state_get_subsystem_u_start(const mbk_state *s, int k) { return sub_int(s, k, 4, "mbk_state_get_subsystem_u_start"); }
int mbk_state_get_subsystem_z_start(const mbk_state *s, int k) { return sub_int(s, k, 5, "mbk_state_get_subsystem_z_start"); }

/* ------------------------------------------------------------------ */
/* Derivative caches                                                    */
/* ------------------------------------------------------------------ */

/* which: 0 qdot, 1 udot, 2 zdot (in ydot), 3 qdotdot. */
static double *deriv_base(const mbk_state *s, int which)
{
    const st_hdr *h = st_hdr_of(s);
    if (which == 3) return st_dbl_at(s, h->qdd_off);
    return st_dbl_at(s, h->ydot_off) + y_section(h, which);
}

static const double *get_deriv(const mbk_state *s, int which, mbk_stage stage, const char *fn)
{
    if (!st_need_stage(s, stage, fn, "reading derivatives")) return NULL;
    return deriv_base(s, which);
}

const double *mbk_state_get_qdot(const mbk_state *s) { return get_deriv(s, 0, MBK_STAGE_VELOCITY, "mbk_state_get_qdot"); }
const double *mbk_state_get_udot(const mbk_state *s) { return get_deriv(s, 1, MBK_STAGE_ACCELERATION, "mbk_state_get_udot"); }
const double *mbk_state_get_zdot(const mbk_state *s) { return get_deriv(s, 2, MBK_STAGE_ACCELERATION, "mbk_state_get_zdot"); }
const double *mbk_state_get_ydot(const mbk_state *s) { return get_deriv(s, 0, MBK_STAGE_ACCELERATION, "mbk_state_get_ydot"); }
const double *mbk_state_get_qdotdot(const mbk_state *s) { return get_deriv(s, 3, MBK_STAGE_ACCELERATION, "mbk_state_get_qdotdot"); }

int mbk_state_check_ydot(const mbk_state *s)
{
    const double *yd = mbk_state_get_ydot(s);
    if (!yd) return mbk_last_status();
    const int nq = mbk_state_get_nq(s), nu = mbk_state_get_nu(s), i = mbk_find_nonfinite(yd, mbk_state_get_ny(s));
    if (i < 0) return MBK_OK;
    const char v = i < nq ? 'q' : i < nq + nu ? 'u' : 'z';
    return mbk_set_error(MBK_ENOTFINITE, "the derivative of %c[%d] is %g at t = %g; check the model's forces and "
                         "parameters there", v, i < nq ? i : i < nq + nu ? i - nq : i - nq - nu, yd[i],
                         mbk_state_get_time(s));
}

static double *upd_deriv(const mbk_state *s, int which, const char *fn)
{
    if (!st_need_stage(s, MBK_STAGE_MODEL, fn, "writing derivatives")) return NULL;
    return deriv_base(s, which);
}

double *mbk_state_upd_qdot(const mbk_state *s) { return upd_deriv(s, 0, "mbk_state_upd_qdot"); }
double *mbk_state_upd_udot(const mbk_state *s) { return upd_deriv(s, 1, "mbk_state_upd_udot"); }
double *mbk_state_upd_zdot(const mbk_state *s) { return upd_deriv(s, 2, "mbk_state_upd_zdot"); }
double *mbk_state_upd_qdotdot(const mbk_state *s) { return upd_deriv(s, 3, "mbk_state_upd_qdotdot"); }

static double *upd_sub_deriv(const mbk_state *s, int sub, int which, const char *fn)
{
    const st_sub *b = model_sub(s, sub, fn);
    if (!b) return NULL;
    const int start[4] = {b->q0, b->u0, b->z0, b->q0};
    return deriv_base(s, which) + start[which];
}

double *mbk_state_upd_subsystem_qdot(const mbk_state *s, int k) { return upd_sub_deriv(s, k, 0, "mbk_state_upd_subsystem_qdot"); }
double *mbk_state_upd_subsystem_udot(const mbk_state *s, int k) { return upd_sub_deriv(s, k, 1, "mbk_state_upd_subsystem_udot"); }
double *mbk_state_upd_subsystem_zdot(const mbk_state *s, int k) { return upd_sub_deriv(s, k, 2, "mbk_state_upd_subsystem_zdot"); }
double *mbk_state_upd_subsystem_qdotdot(const mbk_state *s, int k) { return upd_sub_deriv(s, k, 3, "mbk_state_upd_subsystem_qdotdot"); }

/* ------------------------------------------------------------------ */
/* Finiteness before realization                                      */
/* ------------------------------------------------------------------ */

int st_check_finite(const mbk_state *s, mbk_stage stage)
{
    const st_hdr *h = st_hdr_of(s);
    const double *y = st_dbl_at(s, h->y_off);
    static const char *const what[] = {"q", "u", "z"};
    int lo, n, which;
    if (stage == MBK_STAGE_TIME) {
        if (isfinite(h->t)) return MBK_OK;
        return mbk_set_error(MBK_ENOTFINITE, "time t is %g; set a finite time with mbk_state_set_time",
                             h->t);
    }
    if (stage == MBK_STAGE_POSITION) { lo = 0; n = h->nq; which = 0; }
    else if (stage == MBK_STAGE_VELOCITY) { lo = h->nq; n = h->nu; which = 1; }
    else if (stage == MBK_STAGE_DYNAMICS) { lo = h->nq + h->nu; n = h->nz; which = 2; }
    else return MBK_OK;
    const int i = mbk_find_nonfinite(y + lo, n);
    if (i >= 0)
        return mbk_set_error(MBK_ENOTFINITE, "%s[%d] is %g; cannot realize %s: set finite values first",
                             what[which], i, y[lo + i], mbk_stage_name(stage));
    return MBK_OK;
}
