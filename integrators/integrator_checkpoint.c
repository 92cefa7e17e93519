/* Integrator checkpoints: the current State (a State image, mbk_state_serialize)
 * plus everything of the driver's that decides the next steps (settings, step
 * sizes, witness values at the current State, scheduled-event times, pending
 * events, localization, statistics) and the step op's own state (its save and
 * load ops), in an mbk checkpoint container of kind MBK_CHECKPOINT_INTEGRATOR.
 * docs/checkpoints.md gives the payload field by field.
 *
 * Loading is done in two phases: everything in the file is checked first (the
 * container, the integrator's name, the State image, which is rebuilt apart,
 * the settings, the counts) without touching the integrator; then the
 * integrator is set up from it. Should that second phase fail (memory, the
 * step op refusing its bytes), the integrator is put back from an image of
 * itself taken before. */
#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>

#include "integrator_impl.h"
#include "mbk/alloc.h"
#include "mbk/checkpoint.h"
#include "mbk/status.h"

_Static_assert(sizeof(mbk_integrator_stats) % sizeof(long) == 0, "the statistics are all longs");
enum { NSTATS = (int)(sizeof(mbk_integrator_stats) / sizeof(long)), CK_CONTAINER = 44, CK_HEADER = 40 };

/* ------------------------------------------------------------------ */
/* Writing                                                              */
/* ------------------------------------------------------------------ */

/* The Jacobian source as its checkpoint byte, and back (a byte above 2: an invalid source,
   which settings_ok refuses). */
static unsigned jacobian_byte(mbk_jacobian_source src)
{
    return src == MBK_JACOBIAN_SUNDIALS_DQ ? 0u : src == MBK_JACOBIAN_ANALYTIC ? 1u : 2u;
}

static mbk_jacobian_source jacobian_source_of(unsigned byte)
{
    return byte == 0 ? MBK_JACOBIAN_SUNDIALS_DQ : byte == 1 ? MBK_JACOBIAN_ANALYTIC
                                                  : byte == 2 ? MBK_JACOBIAN_FD : (mbk_jacobian_source)-1;
}

/* The payload (a counting writer only counts). */
static int write_payload(const mbk_integrator *ig, const void *app, size_t app_n, mbk_bytes_writer *w, const char *fn)
{
    int rc;
    size_t len = strlen(ig->ops.name), sn = 0, on = 0;
    mbk_bytes_put_u32(w, (uint32_t)len);
    mbk_bytes_put(w, ig->ops.name, len);
    /* the current State, as a State image of its own */
    if ((rc = mbk_state_serialize(ig->cur, ig->sys, NULL, 0, &sn)) < 0)
        return mbk_set_error(rc, "%s (%s): its State: %s", fn, ig->ops.name, mbk_last_error());
    mbk_bytes_put_u64(w, sn);
    void *dst = mbk_bytes_put_space(w, sn);
    if (dst && (rc = mbk_state_serialize(ig->cur, ig->sys, dst, sn, &sn)) < 0)
        return mbk_set_error(rc, "%s (%s): its State: %s", fn, ig->ops.name, mbk_last_error());
    /* settings */
    const mbk_integrator_settings *st = &ig->set;
    const double sd[] = {st->accuracy, st->rel_tol, st->abs_tol, st->constraint_tol, st->event_tol,
                         st->fixed_step, st->initial_step, st->min_step, st->max_step};
    for (size_t i = 0; i < sizeof sd / sizeof *sd; ++i) mbk_bytes_put_f64(w, sd[i]);
    mbk_bytes_put_i64(w, st->max_steps);
    /* the Jacobian source in the byte that once held use_system_jacobian: 0 SUNDIALS' difference
       quotients, 1 analytic, 2 mbk's differences (images of either meaning read the same) */
    mbk_bytes_put_u8(w, jacobian_byte(st->jacobian_source));
    mbk_bytes_put_u8(w, st->project_error_estimate);
    mbk_bytes_put_u8(w, ig->cons_tol_given);
    mbk_bytes_put_u8(w, ig->event_tol_given);
    /* the driver */
    mbk_bytes_put_u8(w, ig->terminated);
    mbk_bytes_put_u8(w, ig->pending.any);
    mbk_bytes_put_u8(w, ig->pending.fired);
    mbk_bytes_put_u8(w, ig->pending.sched_due);
    mbk_bytes_put_u8(w, ig->pending.rep_due);
    mbk_bytes_put_i32(w, ig->last_handled);
    mbk_bytes_put_i32(w, ig->loc_count);
    mbk_bytes_put_f64(w, ig->t_init);
    mbk_bytes_put_f64(w, ig->h_prev);
    mbk_bytes_put_f64(w, ig->h_pred);
    mbk_bytes_put_f64(w, ig->loc_target);
    const long *stats = (const long *)&ig->stats;
    mbk_bytes_put_u32(w, NSTATS);
    for (int i = 0; i < NSTATS; ++i) mbk_bytes_put_i64(w, stats[i]);
    mbk_bytes_put_u32(w, (uint32_t)ig->nw);
    for (int i = 0; i < ig->nw; ++i) mbk_bytes_put_f64(w, ig->w0[i]);
    for (int i = 0; i < ig->nw; ++i) mbk_bytes_put_u8(w, ig->fired[i]);
    mbk_bytes_put_u32(w, (uint32_t)ig->nsub);
    for (int k = 0; k < ig->nsub; ++k) {
        int n = ig->sched_n[k];
        mbk_bytes_put_f64(w, ig->sched_t[k]);
        mbk_bytes_put_u32(w, (uint32_t)n);
        for (int i = 0; i < n; ++i) mbk_bytes_put_i32(w, ig->sched_ids[k][i]);
    }
    mbk_bytes_put_f64(w, mbk_system_get_next_report_time(ig->sys, mbk_state_get_time(ig->cur)));
    /* the step op's own state */
    if (ig->ops.save) {
        mbk_clear_error();
        if ((rc = ig->ops.save(ig->impl, ig, NULL, 0, &on)) != 0)
            return mbk_set_error(rc < 0 ? rc : MBK_EINTEGRATOR, "%s (%s): its save op failed: %s", fn,
                                 ig->ops.name, mbk_last_error());
    }
    mbk_bytes_put_u64(w, on);
    dst = mbk_bytes_put_space(w, on);
    if (dst && on) {
        size_t on2 = 0;
        mbk_clear_error();
        if ((rc = ig->ops.save(ig->impl, ig, dst, on, &on2)) != 0 || on2 != on)
            return mbk_set_error(rc < 0 ? rc : MBK_EINTEGRATOR, "%s (%s): its save op failed (it asked for "
                                 "%zu bytes, wrote %zu): %s", fn, ig->ops.name, on, on2, mbk_last_error());
    }
    mbk_bytes_put_u64(w, app_n);
    mbk_bytes_put(w, app, app_n);
    return MBK_OK;
}

static int image(const mbk_integrator *ig, const void *app, size_t app_n, void *buf, size_t capacity,
                 size_t *size, const char *fn)
{
    if (!ig) return mbk_set_error(MBK_EINVAL, "%s: integrator is NULL", fn);
    if (!size) return mbk_set_error(MBK_EINVAL, "%s: size is NULL", fn);
    if (!app && app_n) return mbk_set_error(MBK_EINVAL, "%s: app_data is NULL but app_size is %zu", fn, app_n);
    if (!ig->initialized)
        return mbk_set_error(MBK_EINVAL, "%s (%s): nothing to save yet; call mbk_integrator_initialize "
                             "(or mbk_integrator_load) first", fn, ig->ops.name);
    uint64_t fp = mbk_system_get_fingerprint(ig->sys);
    if (fp == 0) return mbk_set_error(mbk_last_status(), "%s: %s", fn, mbk_last_error());
    mbk_bytes_writer w = mbk_bytes_writer_make(NULL, 0);
    int rc = write_payload(ig, app, app_n, &w, fn);
    if (rc < 0) return rc;
    size_t p = w.pos;
    *size = p + CK_CONTAINER;
    if (!buf) return MBK_OK;
    if (capacity < *size)
        return mbk_set_error(MBK_EINVAL, "%s: capacity %zu is less than the %zu bytes the image needs; "
                             "call with buf NULL to ask the size", fn, capacity, *size);
    w = mbk_bytes_writer_make((unsigned char *)buf + CK_HEADER, p);
    if ((rc = write_payload(ig, app, app_n, &w, fn)) < 0) return rc;
    if (w.pos != p || w.overrun) return mbk_set_error(MBK_EINTEGRATOR, "%s: the image's size changed while it was written", fn);
    size_t total = 0;
    return mbk_checkpoint_pack(MBK_CHECKPOINT_INTEGRATOR, fp, (unsigned char *)buf + CK_HEADER, p, buf,
                               capacity, &total);
}

int mbk_integrator_serialize(const mbk_integrator *ig, const void *app_data, size_t app_size, void *buf,
                             size_t capacity, size_t *size)
{
    return image(ig, app_data, app_size, buf, capacity, size, "mbk_integrator_serialize");
}

int mbk_integrator_save(const mbk_integrator *ig, const char *path)
{
    const char *fn = "mbk_integrator_save";
    if (!path || !*path) return mbk_set_error(MBK_EINVAL, "%s: path is NULL or empty", fn);
    size_t n = 0;
    int rc = image(ig, NULL, 0, NULL, 0, &n, fn);
    if (rc < 0) return rc;
    unsigned char *buf = mbk_malloc(n);
    if (!buf) return MBK_ENOMEM;
    rc = image(ig, NULL, 0, buf, n, &n, fn);
    if (rc == MBK_OK && (rc = mbk_checkpoint_write_file(path, buf, n)) < 0)
        mbk_set_error(rc, "%s: %s", fn, mbk_last_error());
    mbk_free(buf);
    return rc;
}

/* ------------------------------------------------------------------ */
/* Reading                                                              */
/* ------------------------------------------------------------------ */

/* A parsed payload; pointers into the image. */
typedef struct ck_ig {
    const unsigned char *name, *state, *w0, *fired, *op, *app, *sched;
    uint32_t name_len, nstats, nw, nsub;
    uint64_t state_len, op_len, app_len, sched_len;
    mbk_integrator_settings set;
    bool cons_tol_given, event_tol_given, terminated;
    ig_pending pending;
    int32_t last_handled, loc_count;
    double t_init, h_prev, h_pred, loc_target, next_report;
    long stats[NSTATS];
} ck_ig;

/* Parse the payload (structure only; the State image is checked when it is rebuilt). */
static int parse(const unsigned char *p, size_t n, ck_ig *c, char *why, size_t cap)
{
    mbk_bytes_reader r = mbk_bytes_reader_make(p, n);
    memset(c, 0, sizeof *c);
    c->name_len = mbk_bytes_get_u32(&r);
    c->name = mbk_bytes_get_span(&r, c->name_len);
    c->state_len = mbk_bytes_get_u64(&r);
    c->state = mbk_bytes_get_span(&r, c->state_len);
    mbk_integrator_settings *st = &c->set;
    double *sd[] = {&st->accuracy, &st->rel_tol, &st->abs_tol, &st->constraint_tol, &st->event_tol,
                    &st->fixed_step, &st->initial_step, &st->min_step, &st->max_step};
    for (size_t i = 0; i < sizeof sd / sizeof *sd; ++i) *sd[i] = mbk_bytes_get_f64(&r);
    st->max_steps = (long)mbk_bytes_get_i64(&r);
    st->jacobian_source = jacobian_source_of(mbk_bytes_get_u8(&r));
    st->use_system_jacobian = st->jacobian_source != MBK_JACOBIAN_SUNDIALS_DQ;
    st->project_error_estimate = mbk_bytes_get_u8(&r);
    c->cons_tol_given = mbk_bytes_get_u8(&r);
    c->event_tol_given = mbk_bytes_get_u8(&r);
    c->terminated = mbk_bytes_get_u8(&r);
    c->pending.any = mbk_bytes_get_u8(&r);
    c->pending.fired = mbk_bytes_get_u8(&r);
    c->pending.sched_due = mbk_bytes_get_u8(&r);
    c->pending.rep_due = mbk_bytes_get_u8(&r);
    c->last_handled = mbk_bytes_get_i32(&r);
    c->loc_count = mbk_bytes_get_i32(&r);
    c->t_init = mbk_bytes_get_f64(&r);
    c->h_prev = mbk_bytes_get_f64(&r);
    c->h_pred = mbk_bytes_get_f64(&r);
    c->loc_target = mbk_bytes_get_f64(&r);
    c->nstats = mbk_bytes_get_u32(&r);
    for (uint32_t i = 0; i < c->nstats && !r.overrun; ++i) {
        int64_t v = mbk_bytes_get_i64(&r);
        if (i < NSTATS) c->stats[i] = (long)v;
    }
    c->nw = mbk_bytes_get_u32(&r);
    c->w0 = mbk_bytes_get_span(&r, (uint64_t)c->nw * sizeof(double));
    c->fired = mbk_bytes_get_span(&r, c->nw);
    c->nsub = mbk_bytes_get_u32(&r);
    size_t sched0 = r.pos;
    for (uint32_t k = 0; k < c->nsub && !r.overrun; ++k) {
        (void)mbk_bytes_get_f64(&r);
        uint32_t m = mbk_bytes_get_u32(&r);
        (void)mbk_bytes_get_span(&r, (uint64_t)m * sizeof(int32_t));
    }
    c->sched = r.overrun ? NULL : p + sched0;
    c->sched_len = r.pos - sched0;
    c->next_report = mbk_bytes_get_f64(&r);
    c->op_len = mbk_bytes_get_u64(&r);
    c->op = mbk_bytes_get_span(&r, c->op_len);
    c->app_len = mbk_bytes_get_u64(&r);
    c->app = mbk_bytes_get_span(&r, c->app_len);
    if (r.overrun || r.pos != n)
        return snprintf(why, cap, "the checkpoint is inconsistent: its payload has %zu bytes, its contents "
                        "%s", n, r.overrun ? "need more" : "fewer"), MBK_EPARSE;
    return MBK_OK;
}

/* Settings a driver accepts (as the set_* functions would). */
static bool settings_ok(const mbk_integrator_settings *s)
{
    return s->rel_tol >= 0 && s->rel_tol < 1 && s->abs_tol >= 0 && isfinite(s->abs_tol) &&
           (s->rel_tol > 0 || s->abs_tol > 0) && s->accuracy > 0 && s->accuracy < 1 &&
           s->constraint_tol > 0 && isfinite(s->constraint_tol) && s->event_tol > 0 &&
           isfinite(s->event_tol) && s->fixed_step >= 0 && isfinite(s->fixed_step) &&
           s->initial_step >= 0 && isfinite(s->initial_step) && s->min_step >= 0 &&
           isfinite(s->min_step) && s->max_step > 0 && s->max_step >= s->min_step && s->max_steps > 0 &&
           (s->jacobian_source == MBK_JACOBIAN_ANALYTIC || s->jacobian_source == MBK_JACOBIAN_FD ||
            s->jacobian_source == MBK_JACOBIAN_SUNDIALS_DQ);
}

/* Check the container and parse it (no integrator needed). */
static int open_image(const void *buf, size_t size, const uint64_t *fp, ck_ig *c, char *why, size_t cap)
{
    const void *p = NULL;
    size_t n = 0;
    int rc = mbk_checkpoint_unpack(buf, size, MBK_CHECKPOINT_INTEGRATOR, fp, &p, &n);
    if (rc < 0) return snprintf(why, cap, "%s", mbk_last_error()), rc;
    return parse(p, n, c, why, cap);
}

/* Everything that can be checked before the integrator changes; the State is rebuilt in tmp. */
static int check(const mbk_integrator *ig, const ck_ig *c, mbk_state *tmp, char *why, size_t cap)
{
    const char *name = ig->ops.name;
    size_t len = strlen(name);
    if (c->name_len != len || memcmp(c->name, name, len) != 0)
        return snprintf(why, cap, "the checkpoint was written by the %.*s integrator, this one is %s: "
                        "create a %.*s integrator to load it", (int)(c->name_len > 64 ? 64 : c->name_len),
                        (const char *)c->name, name, (int)(c->name_len > 64 ? 64 : c->name_len),
                        (const char *)c->name), MBK_EINVAL;
    if (mbk_state_deserialize(tmp, ig->sys, c->state, (size_t)c->state_len) < 0)
        return snprintf(why, cap, "its State: %s", mbk_last_error()), mbk_last_status();
    if (!settings_ok(&c->set))
        return snprintf(why, cap, "the checkpoint is inconsistent: its settings are out of range"), MBK_EPARSE;
    double t = mbk_state_get_time(tmp);
    if (!(isfinite(c->h_prev) && c->h_prev >= 0 && isfinite(c->h_pred) && c->h_pred >= 0 &&
          isfinite(c->t_init) && c->t_init <= t && !isnan(c->loc_target) && c->loc_count >= 0 &&
          c->last_handled >= 0))
        return snprintf(why, cap, "the checkpoint is inconsistent: its step sizes or times are out of range"),
               MBK_EPARSE;
    for (uint32_t i = 0; i < c->nw; ++i) {
        double v;
        memcpy(&v, c->w0 + (size_t)i * sizeof v, sizeof v);
        if (isnan(v)) return snprintf(why, cap, "the checkpoint is inconsistent: witness %u is NaN", i), MBK_EPARSE;
    }
    int nsub = mbk_system_get_num_subsystems(ig->sys);
    if ((int)c->nsub != nsub)
        return snprintf(why, cap, "the checkpoint has %u subsystems, the System %d", c->nsub, nsub), MBK_ESTALE;
    mbk_bytes_reader r = mbk_bytes_reader_make(c->sched, (size_t)c->sched_len);
    for (int k = 0; k < nsub; ++k) {
        (void)mbk_bytes_get_f64(&r);
        uint32_t m = mbk_bytes_get_u32(&r);
        (void)mbk_bytes_get_span(&r, (uint64_t)m * sizeof(int32_t));
        if (m > 0 && !mbk_system_get_subsystem_ops(ig->sys, k)->next_scheduled_event)
            return snprintf(why, cap, "the checkpoint has scheduled events of subsystem %d ('%s'), which "
                            "has none in this System", k, mbk_system_get_subsystem_name(ig->sys, k)), MBK_ESTALE;
    }
    if (c->op_len > 0 && !ig->ops.load)
        return snprintf(why, cap, "the checkpoint holds %llu bytes of the step op's own state, and %s has "
                        "no load op", (unsigned long long)c->op_len, name), MBK_EINVAL;
    return MBK_OK;
}

/* Set the integrator up from a checked image and its rebuilt State. */
static int apply(mbk_integrator *ig, const ck_ig *c, const mbk_state *tmp, char *why, size_t cap)
{
    int rc;
    ig->initialized = false;
    if ((rc = mbk_state_copy(ig->cur, tmp)) < 0 || (rc = ig_setup_layout(ig)) < 0)
        return snprintf(why, cap, "setting up its State: %s", mbk_last_error()), rc;
    if ((uint32_t)ig->nw != c->nw)
        return snprintf(why, cap, "the checkpoint has %u active event witnesses, this System's State %d: "
                        "its events differ", c->nw, ig->nw), MBK_ESTALE;
    ig->set = c->set;
    ig->cons_tol_given = c->cons_tol_given;
    ig->event_tol_given = c->event_tol_given;
    if ((rc = ig_realize_full(ig, ig->cur)) < 0 || (rc = ig_resync(ig)) < 0)
        return snprintf(why, cap, "realizing its State: %s", mbk_last_error()), rc;
    ig->terminated = c->terminated;
    ig->pending = c->pending;
    ig->last_handled = c->last_handled;
    ig->loc_count = c->loc_count;
    ig->t_init = c->t_init;
    ig->h_prev = c->h_prev;
    ig->h_pred = c->h_pred;
    ig->loc_target = c->loc_target;
    memset(&ig->stats, 0, sizeof ig->stats);
    memcpy(&ig->stats, c->stats, sizeof c->stats);
    for (uint32_t i = 0; i < c->nw; ++i) {
        memcpy(&ig->w0[i], c->w0 + (size_t)i * sizeof(double), sizeof(double));
        ig->fired[i] = c->fired[i] != 0;
    }
    mbk_bytes_reader r = mbk_bytes_reader_make(c->sched, (size_t)c->sched_len);
    for (int k = 0; k < ig->nsub; ++k) {
        ig->sched_t[k] = mbk_bytes_get_f64(&r);
        int m = (int)mbk_bytes_get_u32(&r);
        if (m > 0) {
            int capk = ig->sched_cap[k];
            if ((rc = ig_grow_arr((void **)&ig->sched_ids[k], &capk, m, sizeof **ig->sched_ids)) < 0)
                return snprintf(why, cap, "out of memory"), rc;
            ig->sched_cap[k] = capk;
        }
        for (int i = 0; i < m; ++i) ig->sched_ids[k][i] = mbk_bytes_get_i32(&r);
        ig->sched_n[k] = m;
    }
    ig->settings_changed = false;
    ig->steps_this_call = 0;
    ig->roots_reported = false;
    ig->initialized = true; /* the ops may use the services */
    if (ig->ops.initialize) {
        mbk_clear_error();
        if ((rc = ig->ops.initialize(ig->impl, ig)) != 0)
            return snprintf(why, cap, "its initialize op failed: %s", mbk_last_error()), rc < 0 ? rc : MBK_EINTEGRATOR;
    }
    if (ig->ops.load) {
        mbk_clear_error();
        if ((rc = ig->ops.load(ig->impl, ig, c->op, (size_t)c->op_len)) != 0)
            return snprintf(why, cap, "its load op refused the step op's state: %s", mbk_last_error()),
                   rc < 0 ? rc : MBK_EPARSE;
    }
    return MBK_OK;
}

static int from_image(mbk_integrator *ig, const void *buf, size_t size, const char *fn, const char *where)
{
    if (!ig) return mbk_set_error(MBK_EINVAL, "%s: integrator is NULL", fn);
    uint64_t fp = mbk_system_get_fingerprint(ig->sys);
    if (fp == 0) return mbk_set_error(mbk_last_status(), "%s (%s): %s", fn, ig->ops.name, mbk_last_error());
    char why[480];
    ck_ig c;
    int rc = open_image(buf, size, &fp, &c, why, sizeof why);
    mbk_state *tmp = mbk_state_create();
    if (!tmp) return MBK_ENOMEM;
    if (rc == MBK_OK) rc = check(ig, &c, tmp, why, sizeof why);
    if (rc != MBK_OK) {
        mbk_state_destroy(tmp);
        return mbk_set_error(rc, "%s (%s): %s: %s; the integrator was not changed", fn, ig->ops.name, where, why);
    }
    /* an image of the integrator as it is, to put it back should the setup fail */
    unsigned char *snap = NULL;
    size_t sn = 0;
    if (ig->initialized) {
        rc = image(ig, NULL, 0, NULL, 0, &sn, fn);
        if (rc == MBK_OK && !(snap = mbk_malloc(sn))) rc = MBK_ENOMEM;
        if (rc == MBK_OK) rc = image(ig, NULL, 0, snap, sn, &sn, fn);
        if (rc < 0) {
            mbk_free(snap);
            mbk_state_destroy(tmp);
            return mbk_set_error(rc, "%s (%s): could not keep an image of the integrator before loading: %s; "
                                 "the integrator was not changed", fn, ig->ops.name, mbk_last_error());
        }
    }
    rc = apply(ig, &c, tmp, why, sizeof why);
    mbk_state_destroy(tmp);
    if (rc != MBK_OK) {
        bool back = false;
        if (snap) {
            ck_ig s;
            char why2[480];
            back = open_image(snap, sn, &fp, &s, why2, sizeof why2) == MBK_OK &&
                   (tmp = mbk_state_create()) != NULL &&
                   mbk_state_deserialize(tmp, ig->sys, s.state, (size_t)s.state_len) == MBK_OK &&
                   apply(ig, &s, tmp, why2, sizeof why2) == MBK_OK;
            mbk_state_destroy(tmp);
        }
        if (!back) ig->initialized = false;
        mbk_free(snap);
        return mbk_set_error(rc, "%s (%s): %s: %s; %s", fn, ig->ops.name, where, why,
                             back ? "the integrator was put back as it was"
                                  : "the integrator is not initialized now: initialize it or load a checkpoint");
    }
    mbk_free(snap);
    return MBK_OK;
}

int mbk_integrator_deserialize(mbk_integrator *ig, const void *buf, size_t size)
{
    return from_image(ig, buf, size, "mbk_integrator_deserialize", "the image");
}

int mbk_integrator_load(mbk_integrator *ig, const char *path)
{
    const char *fn = "mbk_integrator_load";
    if (!ig) return mbk_set_error(MBK_EINVAL, "%s: integrator is NULL", fn);
    if (!path || !*path) return mbk_set_error(MBK_EINVAL, "%s: path is NULL or empty", fn);
    void *buf = NULL;
    size_t n = 0;
    int rc = mbk_checkpoint_read_file(path, &buf, &n);
    if (rc < 0) return mbk_set_error(rc, "%s (%s): %s; the integrator was not changed", fn, ig->ops.name, mbk_last_error());
    char where[300];
    snprintf(where, sizeof where, "'%s'", path);
    rc = from_image(ig, buf, n, fn, where);
    mbk_free(buf);
    return rc;
}

int mbk_integrator_get_checkpoint_app_data(const void *buf, size_t size, const void **data, size_t *n)
{
    const char *fn = "mbk_integrator_get_checkpoint_app_data";
    if (!data || !n) return mbk_set_error(MBK_EINVAL, "%s: data or n is NULL", fn);
    char why[480];
    ck_ig c;
    int rc = open_image(buf, size, NULL, &c, why, sizeof why);
    if (rc) return mbk_set_error(rc, "%s: %s", fn, why);
    *data = c.app;
    *n = (size_t)c.app_len;
    return MBK_OK;
}

int mbk_integrator_get_checkpoint_name(const void *buf, size_t size, char *name, size_t capacity)
{
    const char *fn = "mbk_integrator_get_checkpoint_name";
    if (!name || capacity == 0) return mbk_set_error(MBK_EINVAL, "%s: name is NULL or capacity 0", fn);
    char why[480];
    ck_ig c;
    int rc = open_image(buf, size, NULL, &c, why, sizeof why);
    if (rc) return mbk_set_error(rc, "%s: %s", fn, why);
    if (c.name_len >= capacity)
        return mbk_set_error(MBK_EINVAL, "%s: the name has %u characters; give room for %u and the NUL", fn,
                             c.name_len, c.name_len);
    memcpy(name, c.name, c.name_len);
    name[c.name_len] = '\0';
    return MBK_OK;
}
