/* Checkpoints (mbk/checkpoint.h): States and integrators written to files and
 * memory and read back.
 *
 *   - State round trips on a model with quaternions (and the Euler-angle Model
 *     choice), constraints (one disabled), contact, events, z, and discrete
 *     variables of every kind (plain, a type that owns memory and serializes
 *     itself, one allocated at Model by a Model-stage choice): the loaded State
 *     is at Instance and realizes to the same bits; Systems built alike share a
 *     fingerprint, another model has another;
 *   - refusals, each leaving the destination State as it was: truncated, empty,
 *     random, every single flipped byte, another model, another kind, version
 *     or byte order, a directory, a missing file; a type that owns memory but
 *     cannot serialize itself is refused by name;
 *   - atomic writes: a writer killed (SIGKILL) at random moments always leaves
 *     a whole checkpoint behind;
 *   - integrators: every RK-family method (error-controlled and fixed step),
 *     with triggered, scheduled and periodic events in flight, checkpointed and
 *     reloaded into a new integrator after every single step, ends bitwise equal
 *     to an uninterrupted run, statistics included; a handler failure left
 *     pending survives a checkpoint; CVODE BDF, CVODE Adams and IDA resumed from
 *     a checkpoint agree with an uninterrupted run within their tolerance; a
 *     refused load leaves the integrator as it was, also when the step op
 *     refuses its part after the file was accepted. */
#define _POSIX_C_SOURCE 200809L
#include <dirent.h>
#include <signal.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include <mbk/mbk.h>

#include "integrator_table.h"
#include "mbk_test.h"

static char dir[256];

static int has(const char *s, const char *sub) { return strstr(s, sub) != NULL; }

static void path_in(char *buf, size_t n, const char *name) { snprintf(buf, n, "%s/%s", dir, name); }

static void write_bytes(const char *path, const void *p, size_t n)
{
    FILE *f = fopen(path, "wb");
    if (f) {
        if (n) fwrite(p, 1, n, f);
        fclose(f);
    }
}

/* CRC-32 (the ISO-HDLC one zlib computes), bit by bit: an independent check of the
   container, and the way to forge well-sealed foreign files below. */
static uint32_t crc32_ref(const unsigned char *p, size_t n)
{
    uint32_t c = 0xFFFFFFFFu;
    for (size_t i = 0; i < n; ++i) {
        c ^= p[i];
        for (int k = 0; k < 8; ++k) c = (c >> 1) ^ (0xEDB88320u & (0u - (c & 1u)));
    }
    return ~c;
}

/* Seal a forged image again: CRC-32 of everything before its last 4 bytes. */
static void reseal(unsigned char *img, size_t n)
{
    uint32_t c = crc32_ref(img, n - 4);
    memcpy(img + n - 4, &c, 4);
}

/* ------------------------------------------------------------------ */
/* A value type that owns memory: a heap string                          */
/* ------------------------------------------------------------------ */

typedef struct label {
    char *text;
} label;

static char *dup_text(const char *t)
{
    if (!t) return NULL;
    char *c = malloc(strlen(t) + 1);
    if (c) strcpy(c, t);
    return c;
}
static void label_copy(void *dst, const void *src) { ((label *)dst)->text = dup_text(((const label *)src)->text); }
static void label_destroy(void *v)
{
    free(((label *)v)->text);
    ((label *)v)->text = NULL;
}
static int label_serialize(const void *v, void *buf, size_t cap, size_t *size)
{
    const label *l = v;
    size_t n = l->text ? strlen(l->text) + 1 : 0;
    *size = n;
    if (buf) {
        if (cap < n) return 1;
        memcpy(buf, l->text, n);
    }
    return 0;
}
static int label_deserialize(void *dst, const void *buf, size_t size)
{
    label *l = dst;
    const char *b = buf;
    if (size == 0) return l->text = NULL, 0;
    if (memchr(b, '\0', size) != b + size - 1) return mbk_set_error(MBK_EPARSE, "label: not one string"), 1;
    l->text = malloc(size);
    if (!l->text) return 1;
    memcpy(l->text, b, size);
    return 0;
}
static const mbk_value_type label_type = {.name = "label", .size = sizeof(label), .align = _Alignof(label),
                                          .copy = label_copy, .destroy = label_destroy,
                                          .serialize = label_serialize, .deserialize = label_deserialize};
/* the same without serialize ops: a State holding one cannot be checkpointed */
static const mbk_value_type mute_label_type = {.name = "mute label", .size = sizeof(label),
                                               .align = _Alignof(label), .copy = label_copy,
                                               .destroy = label_destroy};

/* ------------------------------------------------------------------ */
/* Subsystem "tally": z that decay, discrete variables of every kind     */
/* ------------------------------------------------------------------ */

typedef struct tally {
    int strength; /* double, invalidates Dynamics */
    int text;     /* label, invalidates Instance */
    int mode;     /* int, invalidates Model: mode extra z and a Model-allocated array */
    int extra;    /* double[mode + 1], allocated at Model, invalidates Dynamics */
    int mute;     /* mute label (-1: none) */
    bool with_mute;
} tally;

static int tally_topology(void *impl, const mbk_subsystem_ctx *c, mbk_state *s)
{
    tally *t = impl;
    int k = mbk_subsystem_ctx_get_index(c);
    const double z0[2] = {0.5, -0.25}, strength = 2.0;
    const int mode = 1;
    const label start = {"start"};
    if (mbk_state_allocate_z(s, k, 2, z0) < 0) return -1;
    t->strength = mbk_state_allocate_discrete(s, k, MBK_STAGE_DYNAMICS, &mbk_value_double, &strength);
    t->text = mbk_state_allocate_discrete(s, k, MBK_STAGE_INSTANCE, &label_type, &start);
    t->mode = mbk_state_allocate_discrete(s, k, MBK_STAGE_MODEL, &mbk_value_int, &mode);
    t->mute = t->with_mute ? mbk_state_allocate_discrete(s, k, MBK_STAGE_INSTANCE, &mute_label_type, &start) : -1;
    return t->strength < 0 || t->text < 0 || t->mode < 0 || (t->with_mute && t->mute < 0) ? -1 : 0;
}

static int tally_model(void *impl, const mbk_subsystem_ctx *c, mbk_state *s)
{
    tally *t = impl;
    int k = mbk_subsystem_ctx_get_index(c);
    int mode = *(const int *)mbk_state_get_discrete(s, k, t->mode);
    if (mode < 0 || mode > 3) return mbk_set_error(MBK_EINVAL, "tally: mode %d is not 0..3", mode);
    double init[4] = {0.125, 0.25, 0.375, 0.5};
    if (mode > 0 && mbk_state_allocate_z(s, k, mode, init) < 0) return -1;
    mbk_value_type arr = mbk_value_array_of_double(mode + 1);
    t->extra = mbk_state_allocate_discrete(s, k, MBK_STAGE_DYNAMICS, &arr, init);
    return t->extra < 0 ? -1 : 0;
}

static int tally_acceleration(void *impl, const mbk_subsystem_ctx *c, mbk_state *s)
{
    tally *t = impl;
    int k = mbk_subsystem_ctx_get_index(c);
    double a = *(const double *)mbk_state_get_discrete(s, k, t->strength);
    const double *extra = mbk_state_get_discrete(s, k, t->extra);
    const double *z = mbk_state_get_subsystem_z(s, k);
    double *zdot = mbk_state_upd_subsystem_zdot(s, k);
    int nz = 2 + *(const int *)mbk_state_get_discrete(s, k, t->mode);
    for (int i = 0; i < nz; ++i) zdot[i] = -a * z[i] + extra[0];
    return 0;
}

static const mbk_subsystem_ops tally_ops = {.name = "tally",
                                            .realize_topology = tally_topology,
                                            .realize_model = tally_model,
                                            .realize_acceleration = tally_acceleration,
                                            .destroy = free};

static int add_tally(mbk_system *sys, bool with_mute)
{
    tally *t = calloc(1, sizeof *t);
    t->with_mute = with_mute;
    return mbk_system_add_subsystem(sys, &tally_ops, t);
}

/* ------------------------------------------------------------------ */
/* Events and their counters                                             */
/* ------------------------------------------------------------------ */

typedef struct counters {
    int crossings, scheduled, reports;
    double t_sum;      /* sum of the times handlers and reporters saw */
    int fail_next;     /* the crossing handler fails this many more times */
    int damper;        /* force element the scheduled event toggles */
    int tally;         /* the tally subsystem */
} counters;

static double swing(void *user, const mbk_system *sys, const mbk_state *s)
{
    (void)user, (void)sys;
    const double *q = mbk_state_get_q(s);
    return sin(20.0 * q[0] + 10.0 * q[1]); /* crosses zero often */
}

static int kick(void *user, const mbk_system *sys, mbk_state *s, mbk_event_result *r)
{
    (void)sys;
    counters *c = user;
    if (c->fail_next > 0) {
        c->fail_next--;
        return mbk_set_error(MBK_EUSER, "kick: failing on purpose");
    }
    c->crossings++;
    c->t_sum += mbk_state_get_time(s);
    double *u = mbk_state_upd_u(s);
    u[0] *= 0.9;
    r->lowest_modified = MBK_STAGE_VELOCITY;
    return 0;
}

static int retune(void *user, const mbk_system *sys, mbk_state *s, mbk_event_result *r)
{
    counters *c = user;
    c->scheduled++;
    c->t_sum += mbk_state_get_time(s);
    const mbk_forces *f = mbk_multibody_get_forces(sys);
    mbk_force_set_enabled(f, s, c->damper, !mbk_force_is_enabled(f, s, c->damper));
    double a = 3.0 + mbk_state_get_time(s); /* not from the counters: two runs share them */
    mbk_state_set_discrete(s, c->tally, 0, &mbk_value_double, &a);
    r->lowest_modified = MBK_STAGE_INSTANCE;
    return 0;
}

static void tick(void *user, const mbk_system *sys, const mbk_state *s)
{
    (void)sys;
    counters *c = user;
    c->reports++;
    c->t_sum += mbk_state_get_time(s);
}

/* ------------------------------------------------------------------ */
/* Models                                                                */
/* ------------------------------------------------------------------ */

static mbk_mass_props rod_mass(double m)
{
    return mbk_mass_props_from_central(m, mbk_vec3_make(0, -0.25, 0), mbk_mat33_diag(0.02, 0.004, 0.02));
}

/* "rich": a free body (quaternion) with a contact sphere, a ball and two pins below it,
   a rod and a point-in-plane constraint, gravity, a damper, tally, and every kind of
   event. Returns the System with its topology realized. */
static mbk_system *make_rich(const char *name, counters *ev, bool with_mute)
{
    mbk_system *sys = mbk_multibody_create(name);
    mbk_matter *m = mbk_multibody_upd_matter(sys);
    mbk_forces *f = mbk_multibody_upd_forces(sys);
    mbk_transform I = mbk_transform_identity(), down = mbk_transform_from_p(mbk_vec3_make(0, -0.5, 0));
    mbk_mass_props mp = rod_mass(1.0);
    int b1 = mbk_matter_add_body(m, 0, &I, &mp, &I, mbk_mobilizer_free());
    int b2 = mbk_matter_add_body(m, b1, &down, &mp, &I, mbk_mobilizer_ball());
    int b3 = mbk_matter_add_body(m, b2, &down, &mp, &I, mbk_mobilizer_pin());
    int b4 = mbk_matter_add_body(m, b3, &down, &mp, &I, mbk_mobilizer_pin());
    mbk_constraint_add_rod(m, b4, mbk_vec3_make(0, -0.5, 0), 0, mbk_vec3_make(0.2, -2.0, 0), 0.3);
    mbk_constraint_add_point_in_plane(m, 0, mbk_vec3_make(0, 0, 1), 0.0, b3, mbk_vec3_make(0, -0.5, 0));
    mbk_force_add_gravity(f, mbk_vec3_make(0, -9.81, 0));
    ev->damper = mbk_force_add_mobility_linear_damper(f, b3, 0, 0.5);
    const double hc[6] = {1e6, 0.5, 0.8, 0.6, 0.1, 0.01};
    mbk_force_add_hunt_crossley_sphere(f, b1, mbk_vec3_zero(), 0.1, -0.05, hc);
    ev->tally = add_tally(sys, with_mute);
    mbk_system_add_event_handler(sys, MBK_STAGE_POSITION, MBK_ANY, swing, kick, ev);
    mbk_system_add_scheduled_event(sys, 0.7, retune, ev);
    mbk_system_add_periodic_reporter(sys, 0.25, tick, ev);
    CHECK_INT(mbk_system_realize_topology(sys), MBK_OK);
    return sys;
}

/* "pend": two pins and a ball (quaternion) under gravity, a damper, tally, and a
   triggered handler, two scheduled events and a periodic reporter; mild enough for
   the Euler methods. */
static mbk_system *make_pend(counters *ev)
{
    mbk_system *sys = mbk_multibody_create("pend");
    mbk_matter *m = mbk_multibody_upd_matter(sys);
    mbk_forces *f = mbk_multibody_upd_forces(sys);
    mbk_transform I = mbk_transform_identity(), down = mbk_transform_from_p(mbk_vec3_make(0, -0.5, 0));
    mbk_mass_props mp = rod_mass(1.0);
    int b1 = mbk_matter_add_body(m, 0, &I, &mp, &I, mbk_mobilizer_pin());
    int b2 = mbk_matter_add_body(m, b1, &down, &mp, &I, mbk_mobilizer_pin());
    mbk_matter_add_body(m, b2, &down, &mp, &I, mbk_mobilizer_ball());
    mbk_force_add_gravity(f, mbk_vec3_make(0, -9.81, 0));
    ev->damper = mbk_force_add_mobility_linear_damper(f, b2, 0, 0.3);
    ev->tally = add_tally(sys, false);
    mbk_system_add_event_handler(sys, MBK_STAGE_POSITION, MBK_ANY, swing, kick, ev);
    mbk_system_add_scheduled_event(sys, 0.31, retune, ev);
    mbk_system_add_scheduled_event(sys, 0.62, retune, ev);
    mbk_system_add_periodic_reporter(sys, 0.1, tick, ev);
    CHECK_INT(mbk_system_realize_topology(sys), MBK_OK);
    return sys;
}

/* The pend model's starting State: swinging, realized to Instance. */
static mbk_state *pend_state(const mbk_system *sys)
{
    mbk_state *s = mbk_state_create();
    mbk_state_init(s, sys);
    mbk_system_realize(sys, s, MBK_STAGE_MODEL);
    double *q = mbk_state_upd_q(s), *u = mbk_state_upd_u(s);
    q[0] = 0.6, q[1] = -0.4;
    q[2] = cos(0.2), q[3] = sin(0.2), q[4] = 0, q[5] = 0; /* ball: quaternion */
    u[0] = 1.0, u[1] = -0.5, u[2] = 0.3, u[3] = 0.8, u[4] = -0.2;
    mbk_system_realize(sys, s, MBK_STAGE_INSTANCE);
    return s;
}

/* The rich model's State with every kind of variable moved off its default. */
static mbk_state *rich_state(const mbk_system *sys, const counters *ev, bool euler, int mode)
{
    const mbk_matter *m = mbk_multibody_get_matter(sys);
    const mbk_forces *f = mbk_multibody_get_forces(sys);
    mbk_state *s = mbk_state_create();
    CHECK_INT(mbk_state_init(s, sys), MBK_OK);
    CHECK_INT(mbk_matter_set_use_euler_angles(m, s, euler), MBK_OK);
    CHECK_INT(mbk_state_set_discrete(s, ev->tally, 2, &mbk_value_int, &mode), MBK_OK);
    CHECK_INT(mbk_system_realize(sys, s, MBK_STAGE_MODEL), MBK_OK);
    int nq = mbk_state_get_nq(s), nu = mbk_state_get_nu(s), nz = mbk_state_get_nz(s);
    double *q = mbk_state_upd_q(s);
    for (int i = 0; i < nq; ++i) q[i] = 0.1 * sin(1.0 + i);
    if (!euler) { /* the free body's quaternion, then the ball's */
        q[0] = cos(0.3), q[1] = sin(0.3) * 0.6, q[2] = sin(0.3) * 0.8, q[3] = 0;
        q[7] = cos(0.1), q[8] = 0, q[9] = sin(0.1), q[10] = 0;
    }
    double *u = mbk_state_upd_u(s);
    for (int i = 0; i < nu; ++i) u[i] = 0.2 * cos(2.0 + i);
    double *z = mbk_state_upd_z(s);
    for (int i = 0; i < nz; ++i) z[i] = -0.3 + 0.1 * i;
    CHECK_INT(mbk_state_set_time(s, 1.25), MBK_OK);
    CHECK_INT(mbk_constraint_set_enabled(m, s, 1, false), MBK_OK);
    CHECK_INT(mbk_force_set_enabled(f, s, ev->damper, false), MBK_OK);
    CHECK_INT(mbk_force_set_gravity(f, s, 0, mbk_vec3_make(0.5, -9.0, 0.25)), MBK_OK);
    double strength = 0.75;
    CHECK_INT(mbk_state_set_discrete(s, ev->tally, 0, &mbk_value_double, &strength), MBK_OK);
    label l = {"checkpointed label"};
    CHECK_INT(mbk_state_set_discrete(s, ev->tally, 1, &label_type, &l), MBK_OK);
    CHECK_INT(mbk_system_realize(sys, s, MBK_STAGE_INSTANCE), MBK_OK);
    double *extra = mbk_state_upd_discrete(s, ev->tally, 3);
    for (int i = 0; i <= mode; ++i) extra[i] = 0.01 * (i + 1);
    CHECK_INT(mbk_system_realize(sys, s, MBK_STAGE_ACCELERATION), MBK_OK);
    return s;
}

/* The image of a State (malloc'd; *n its size), NULL on failure. */
static unsigned char *state_image(const mbk_state *s, const mbk_system *sys, size_t *n)
{
    *n = 0;
    if (mbk_state_serialize(s, sys, NULL, 0, n) != MBK_OK) return NULL;
    unsigned char *b = malloc(*n);
    if (b && mbk_state_serialize(s, sys, b, *n, n) != MBK_OK) {
        free(b);
        return NULL;
    }
    return b;
}

/* Two States of sys realized to Acceleration give the same bits: t, y, ydot,
   multipliers, witnesses, energies. */
static int same_results(const mbk_system *sys, mbk_state *a, mbk_state *b)
{
    int ok = mbk_system_realize(sys, a, MBK_STAGE_ACCELERATION) == MBK_OK &&
             mbk_system_realize(sys, b, MBK_STAGE_ACCELERATION) == MBK_OK;
    if (!ok) return fprintf(stderr, "  realize: %s\n", mbk_last_error()), 0;
    int ny = mbk_state_get_ny(a), nm = mbk_state_get_num_multipliers(a);
    ok = ny == mbk_state_get_ny(b) && nm == mbk_state_get_num_multipliers(b) &&
         mbk_state_get_time(a) == mbk_state_get_time(b) &&
         !memcmp(mbk_state_get_y(a), mbk_state_get_y(b), sizeof(double) * (size_t)ny) &&
         !memcmp(mbk_state_get_ydot(a), mbk_state_get_ydot(b), sizeof(double) * (size_t)ny) &&
         (nm == 0 || !memcmp(mbk_state_get_multipliers(a), mbk_state_get_multipliers(b), sizeof(double) * (size_t)nm));
    for (int g = MBK_STAGE_TIME; ok && g <= MBK_STAGE_ACCELERATION; ++g) {
        int n = mbk_state_get_num_event_triggers(a, (mbk_stage)g);
        ok = n == mbk_state_get_num_event_triggers(b, (mbk_stage)g) &&
             (n == 0 || !memcmp(mbk_state_get_event_triggers(a, (mbk_stage)g),
                                mbk_state_get_event_triggers(b, (mbk_stage)g), sizeof(double) * (size_t)n));
    }
    double ka = 0, pa = 0, kb = 0, pb = 0;
    ok = ok && mbk_system_calc_energy(sys, a, &ka, &pa) == MBK_OK && mbk_system_calc_energy(sys, b, &kb, &pb) == MBK_OK &&
         ka == kb && pa == pb;
    return ok;
}

/* ------------------------------------------------------------------ */
/* States                                                                */
/* ------------------------------------------------------------------ */

static void test_fingerprint(void)
{
    counters e1 = {0}, e2 = {0}, e3 = {0};
    mbk_system *a = make_rich("a", &e1, false), *b = make_rich("b", &e2, false), *p = make_pend(&e3);
    uint64_t fa = mbk_system_get_fingerprint(a), fb = mbk_system_get_fingerprint(b), fp = mbk_system_get_fingerprint(p);
    CHECK(fa != 0 && fa == fb && fa != fp);
    /* a new topology version with the same structure: same fingerprint */
    mbk_system_invalidate_topology(a);
    CHECK(mbk_system_get_fingerprint(a) == 0 && mbk_last_status() == MBK_ESTAGE);
    CHECK_INT(mbk_system_realize_topology(a), MBK_OK);
    CHECK(mbk_system_get_fingerprint(a) == fa);
    /* another structure: one more body */
    mbk_transform I = mbk_transform_identity();
    mbk_mass_props mp = rod_mass(1.0);
    mbk_system_invalidate_topology(b);
    CHECK(mbk_matter_add_body(mbk_multibody_upd_matter(b), 1, &I, &mp, &I, mbk_mobilizer_pin()) > 0);
    CHECK_INT(mbk_system_realize_topology(b), MBK_OK);
    CHECK(mbk_system_get_fingerprint(b) != fa);
    CHECK(mbk_system_get_fingerprint(NULL) == 0 && mbk_last_status() == MBK_EINVAL);
    mbk_system_destroy(a);
    mbk_system_destroy(b);
    mbk_system_destroy(p);
}

static void test_state_round_trips(void)
{
    counters ev = {0}, ev2 = {0};
    mbk_system *sys = make_rich("rich", &ev, false);
    mbk_system *twin = make_rich("rich, built again", &ev2, false); /* as a new process would */
    const mbk_matter *m = mbk_multibody_get_matter(sys);
    const mbk_forces *f = mbk_multibody_get_forces(sys);
    char path[512];
    path_in(path, sizeof path, "rich.mbkstate");
    for (int variant = 0; variant < 3; ++variant) {
        bool euler = variant == 1;
        int mode = variant == 2 ? 3 : variant;
        mbk_state *s = rich_state(sys, &ev, euler, mode);
        size_t n = 0;
        unsigned char *img = state_image(s, sys, &n);
        CHECK(img != NULL && n > 44);
        if (!img) continue;
        /* to a file and back, into a fresh State of the twin System */
        CHECK_INT(mbk_state_save(s, sys, path), MBK_OK);
        mbk_state *l = mbk_state_create();
        int rc = mbk_state_load(l, twin, path);
        CHECK_INT(rc, MBK_OK);
        if (rc) fprintf(stderr, "  %s\n", mbk_last_error());
        CHECK(mbk_state_get_stage(l) == MBK_STAGE_INSTANCE);
        CHECK(mbk_state_get_time(l) == 1.25);
        CHECK(mbk_state_get_nq(l) == mbk_state_get_nq(s) && mbk_state_get_nz(l) == 2 + mode);
        CHECK(mbk_matter_get_use_euler_angles(mbk_multibody_get_matter(twin), l) == euler);
        CHECK(!mbk_constraint_is_enabled(m, l, 1) && mbk_constraint_is_enabled(m, l, 0));
        CHECK(!mbk_force_is_enabled(f, l, ev.damper) && mbk_force_is_enabled(f, l, 0));
        double g[4] = {0};
        if (!CHECK(mbk_force_get_parameters(f, l, 0, g, 4) == MBK_OK)) fprintf(stderr, "  %s\n", mbk_last_error());
        CHECK(g[0] == 0.5 && g[1] == -9.0 && g[2] == 0.25);
        const label *lab = mbk_state_get_discrete(l, ev.tally, 1);
        CHECK(lab && lab->text && !strcmp(lab->text, "checkpointed label"));
        const double *extra = mbk_state_get_discrete(l, ev.tally, 3);
        CHECK(extra && extra[mode] == 0.01 * (mode + 1));
        /* the same image again, and the same bits when realized */
        size_t n2 = 0;
        unsigned char *img2 = state_image(l, twin, &n2);
        CHECK(img2 && n2 == n && !memcmp(img, img2, n));
        CHECK(same_results(twin, s, l));
        /* in memory, over a State that had another layout */
        mbk_state *o = rich_state(sys, &ev, !euler, 0);
        CHECK_INT(mbk_state_deserialize(o, sys, img, n), MBK_OK);
        CHECK(same_results(sys, s, o));
        /* the size query and a buffer too small */
        size_t need = 0;
        CHECK(mbk_state_serialize(s, sys, NULL, 0, &need) == MBK_OK && need == n);
        CHECK(mbk_state_serialize(s, sys, img2, n - 1, &need) == MBK_EINVAL && has(mbk_last_error(), "capacity"));
        mbk_state_destroy(o);
        mbk_state_destroy(l);
        mbk_state_destroy(s);
        free(img);
        free(img2);
    }
    printf("  State round trips: quaternions and Euler angles, constraints, contact, events, z and "
           "discrete variables (plain, owning memory, allocated at Model)\n");
    mbk_system_destroy(twin);
    mbk_system_destroy(sys);
}

/* A refused load must leave dst exactly as it was (its image and its stage). */
static void expect_refused(int rc, int status, const char *message, const mbk_state *dst,
                           const mbk_system *dsys, const unsigned char *before, size_t nb, mbk_stage stage,
                           const char *what)
{
    char msg[512];
    snprintf(msg, sizeof msg, "%s", mbk_last_error());
    bool ok = rc == status && has(msg, message) && has(msg, "was not changed");
    size_t n = 0;
    unsigned char *now = state_image(dst, dsys, &n);
    bool same = now && n == nb && !memcmp(now, before, n) && mbk_state_get_stage(dst) == stage;
    int c1 = CHECK(ok), c2 = CHECK(same);
    if (!c1 || !c2)
        fprintf(stderr, "  %s: rc %d (%s), want %d with \"%s\"; State %s\n", what, rc, msg, status,
                message, same ? "unchanged" : "CHANGED");
    free(now);
}

static void test_state_refusals(void)
{
    counters ev = {0}, evp = {0};
    mbk_system *sys = make_rich("rich", &ev, false), *pend = make_pend(&evp);
    mbk_state *s = rich_state(sys, &ev, false, 1);
    size_t n = 0, nb = 0;
    unsigned char *img = state_image(s, sys, &n);
    /* the destination: another State of the same System, at Position */
    mbk_state *dst = rich_state(sys, &ev, true, 2);
    mbk_state_upd_q(dst)[0] += 0.25;
    mbk_system_realize(sys, dst, MBK_STAGE_POSITION);
    mbk_stage stage = mbk_state_get_stage(dst);
    unsigned char *before = state_image(dst, sys, &nb);
    if (!img || !before) {
        CHECK(0);
        return;
    }
    /* the container is sealed with the standard CRC-32 */
    uint32_t crc;
    memcpy(&crc, img + n - 4, 4);
    CHECK(crc == crc32_ref(img, n - 4));
    char path[512];
    path_in(path, sizeof path, "bad.mbkstate");

    /* truncated, at many lengths (in memory), and as a file */
    int refused = 0, tried = 0;
    for (size_t len = 0; len < n; len += (len < 64 ? 1 : 37)) {
        ++tried;
        int rc = mbk_state_deserialize(dst, sys, img, len);
        refused += rc == MBK_EPARSE && (len == 0 ? has(mbk_last_error(), "empty") : has(mbk_last_error(), "truncated"));
    }
    CHECK_INT(refused, tried);
    write_bytes(path, img, n - 1);
    expect_refused(mbk_state_load(dst, sys, path), MBK_EPARSE, "truncated", dst, sys, before, nb, stage, "truncated file");
    write_bytes(path, img, n / 2);
    expect_refused(mbk_state_load(dst, sys, path), MBK_EPARSE, "truncated", dst, sys, before, nb, stage, "half a file");
    /* empty */
    write_bytes(path, img, 0);
    expect_refused(mbk_state_load(dst, sys, path), MBK_EPARSE, "empty", dst, sys, before, nb, stage, "empty file");
    /* random bytes, and random bytes behind the right magic */
    unsigned char *rnd = malloc(n);
    srand(12345);
    for (size_t i = 0; i < n; ++i) rnd[i] = (unsigned char)(rand() & 0xff);
    write_bytes(path, rnd, n);
    expect_refused(mbk_state_load(dst, sys, path), MBK_EPARSE, "not an mbk checkpoint", dst, sys, before, nb, stage,
                   "random file");
    memcpy(rnd, img, 8);
    write_bytes(path, rnd, n);
    expect_refused(mbk_state_load(dst, sys, path), MBK_EPARSE, "checkpoint", dst, sys, before, nb, stage,
                   "random file with the magic");
    /* every single flipped byte is refused */
    refused = 0;
    for (size_t i = 0; i < n; ++i) {
        img[i] ^= 0x5a;
        refused += mbk_state_deserialize(dst, sys, img, n) < 0;
        img[i] ^= 0x5a;
    }
    CHECK_INT(refused, (long)n);
    img[n / 2] ^= 0x01;
    write_bytes(path, img, n);
    img[n / 2] ^= 0x01;
    expect_refused(mbk_state_load(dst, sys, path), MBK_EPARSE, "checksum", dst, sys, before, nb, stage, "one flipped bit");
    /* another model */
    mbk_state *ps = pend_state(pend);
    CHECK_INT(mbk_state_save(ps, pend, path), MBK_OK);
    expect_refused(mbk_state_load(dst, sys, path), MBK_ESTALE, "another System", dst, sys, before, nb, stage,
                   "another model");
    /* another format version, another byte order (forged and sealed again) */
    unsigned char *forged = malloc(n);
    memcpy(forged, img, n);
    uint32_t v2 = 2;
    memcpy(forged + 12, &v2, 4);
    reseal(forged, n);
    expect_refused(mbk_state_deserialize(dst, sys, forged, n), MBK_EPARSE, "version 2", dst, sys, before, nb, stage,
                   "version 2");
    memcpy(forged, img, n);
    for (int i = 0; i < 2; ++i) {
        unsigned char t = forged[8 + i];
        forged[8 + i] = forged[11 - i];
        forged[11 - i] = t;
    }
    reseal(forged, n);
    expect_refused(mbk_state_deserialize(dst, sys, forged, n), MBK_EPARSE, "other byte order", dst, sys, before, nb,
                   stage, "other byte order");
    /* an integrator checkpoint is not a State checkpoint */
    mbk_integrator *ig = mbk_integrator_create_rkmerson(pend);
    mbk_integrator_initialize(ig, ps);
    char ipath[512];
    path_in(ipath, sizeof ipath, "pend.mbkrun");
    CHECK_INT(mbk_integrator_save(ig, ipath), MBK_OK);
    mbk_state *pdst = pend_state(pend);
    size_t pnb = 0;
    unsigned char *pbefore = state_image(pdst, pend, &pnb);
    expect_refused(mbk_state_load(pdst, pend, ipath), MBK_EPARSE, "integrator checkpoint", pdst, pend, pbefore, pnb,
                   mbk_state_get_stage(pdst), "integrator file");
    /* a directory, a missing file, a FIFO */
    expect_refused(mbk_state_load(dst, sys, dir), MBK_EIO, "directory", dst, sys, before, nb, stage, "directory");
    CHECK(mbk_state_save(s, sys, dir) == MBK_EIO && has(mbk_last_error(), "directory"));
    char missing[600], fifo[512];
    snprintf(missing, sizeof missing, "%s/no/such.mbkstate", dir);
    expect_refused(mbk_state_load(dst, sys, missing), MBK_EIO, "No such file", dst, sys, before, nb, stage, "missing");
    CHECK(mbk_state_save(s, sys, missing) == MBK_EIO && has(mbk_last_error(), "No such file"));
    path_in(fifo, sizeof fifo, "fifo");
    if (mkfifo(fifo, 0600) == 0)
        expect_refused(mbk_state_load(dst, sys, fifo), MBK_EIO, "not a regular file", dst, sys, before, nb, stage, "fifo");
    /* bad arguments */
    CHECK(mbk_state_load(NULL, sys, path) == MBK_EINVAL);
    CHECK(mbk_state_load(dst, NULL, path) == MBK_EINVAL);
    CHECK(mbk_state_load(dst, sys, NULL) == MBK_EINVAL);
    CHECK(mbk_state_deserialize(dst, sys, NULL, 10) < 0);
    CHECK(mbk_state_serialize(s, sys, NULL, 0, NULL) == MBK_EINVAL);
    CHECK(mbk_state_serialize(s, pend, NULL, 0, &nb) == MBK_ESTALE); /* a State of another System */
    /* a State with a NaN is refused (it could not be loaded) */
    mbk_state *nan_state = pend_state(pend);
    mbk_state_upd_u(nan_state)[1] = NAN;
    CHECK(mbk_state_save(nan_state, pend, path) == MBK_ENOTFINITE && has(mbk_last_error(), "u[1] is nan"));
    mbk_state_destroy(nan_state);
    /* a State not realized to Model cannot be saved: its sizes are not known */
    mbk_state *raw = mbk_state_create();
    mbk_state_init(raw, sys);
    CHECK(mbk_state_save(raw, sys, path) == MBK_ESTAGE && has(mbk_last_error(), "realize it to Model"));
    /* a State holding a type that owns memory but cannot serialize itself: refused by name */
    counters evm = {0};
    mbk_system *mute = make_rich("mute", &evm, true);
    mbk_state *ms = mbk_state_create();
    mbk_state_init(ms, mute);
    mbk_system_realize(mute, ms, MBK_STAGE_INSTANCE);
    int rc = mbk_state_save(ms, mute, path);
    CHECK(rc == MBK_EINVAL && has(mbk_last_error(), "'mute label'") && has(mbk_last_error(), "'tally'") &&
          has(mbk_last_error(), "serialize"));
    char msg[512];
    snprintf(msg, sizeof msg, "%s", mbk_last_error());
    mbk_integrator *mig = mbk_integrator_create_rk4(mute);
    mbk_integrator_set_fixed_step(mig, 0.01);
    CHECK_INT(mbk_integrator_initialize(mig, ms), MBK_OK);
    CHECK(mbk_integrator_save(mig, path) == MBK_EINVAL && has(mbk_last_error(), "mbk_integrator_save (RK4): its State") &&
          has(mbk_last_error(), "'mute label'"));
    mbk_integrator_destroy(mig);
    printf("  refused: truncated, empty, random, %zu single flipped bytes, another model, version, byte "
           "order, kind, a directory, a missing file, a FIFO; e.g. \"%s\"\n", n, msg);
    mbk_state_destroy(ms);
    mbk_system_destroy(mute);
    mbk_state_destroy(raw);
    mbk_state_destroy(pdst);
    free(pbefore);
    mbk_integrator_destroy(ig);
    mbk_state_destroy(ps);
    free(forged);
    free(rnd);
    free(before);
    free(img);
    mbk_state_destroy(dst);
    mbk_state_destroy(s);
    mbk_system_destroy(pend);
    mbk_system_destroy(sys);
}

/* A writer killed at random moments leaves a whole checkpoint: one of the two it writes. */
static void test_atomic_writes(void)
{
    counters ev = {0};
    mbk_system *sys = make_rich("rich", &ev, false);
    mbk_state *a = rich_state(sys, &ev, false, 1), *b = rich_state(sys, &ev, true, 3);
    size_t na = 0, nb = 0;
    unsigned char *ia = state_image(a, sys, &na), *ib = state_image(b, sys, &nb);
    char path[512];
    path_in(path, sizeof path, "atomic.mbkstate");
    CHECK_INT(mbk_state_save(a, sys, path), MBK_OK);
    int whole = 0, kills = 0;
    srand(777);
    for (int round = 0; round < 25; ++round) {
        pid_t pid = fork();
        if (pid == 0) {
            for (long i = 0;; ++i) mbk_state_save(i % 2 ? a : b, sys, path);
        }
        struct timespec ts = {0, (long)(200000 + rand() % 3000000)}; /* 0.2 to 3.2 ms */
        nanosleep(&ts, NULL);
        kill(pid, SIGKILL);
        int st = 0;
        waitpid(pid, &st, 0);
        kills += WIFSIGNALED(st) && WTERMSIG(st) == SIGKILL;
        mbk_state *l = mbk_state_create();
        size_t n = 0;
        unsigned char *il = NULL;
        if (mbk_state_load(l, sys, path) == MBK_OK && (il = state_image(l, sys, &n)) != NULL)
            whole += (n == na && !memcmp(il, ia, n)) || (n == nb && !memcmp(il, ib, n));
        else
            fprintf(stderr, "  after kill %d: %s\n", round, mbk_last_error());
        free(il);
        mbk_state_destroy(l);
    }
    CHECK_INT(kills, 25);
    CHECK_INT(whole, 25);
    /* what a kill may leave: temporary files beside the checkpoint, never the checkpoint torn */
    int stray = 0;
    DIR *d = opendir(dir);
    for (struct dirent *e; d && (e = readdir(d));)
        if (!strncmp(e->d_name, "atomic.mbkstate.tmp.", 20)) {
            char p[800];
            snprintf(p, sizeof p, "%s/%s", dir, e->d_name);
            unlink(p);
            ++stray;
        }
    if (d) closedir(d);
    printf("  atomic writes: 25 writers killed with SIGKILL mid-loop, 25 whole checkpoints left "
           "(%d stray temporary files removed)\n", stray);
    free(ia);
    free(ib);
    mbk_state_destroy(a);
    mbk_state_destroy(b);
    mbk_system_destroy(sys);
}

/* ------------------------------------------------------------------ */
/* Integrators                                                           */
/* ------------------------------------------------------------------ */

typedef struct rk_case {
    which w;
    double fixed, accuracy;
    const char *label;
} rk_case;

/* One step_to call; max-steps returns (one step per call) count as progress. */
static int advance(mbk_integrator *ig, double T)
{
    int rc = mbk_integrator_step_to(ig, T);
    if (rc == MBK_EINTEGRATOR && has(mbk_last_error(), "(the maximum per call)")) return MBK_EVENT;
    return rc;
}

/* A new integrator of kind w continued from an image. */
static mbk_integrator *reload(which w, const mbk_system *sys, mbk_integrator *old)
{
    size_t n = 0;
    if (mbk_integrator_serialize(old, NULL, 0, NULL, 0, &n) != MBK_OK) return NULL;
    unsigned char *buf = malloc(n);
    int rc = mbk_integrator_serialize(old, NULL, 0, buf, n, &n);
    mbk_integrator_destroy(old);
    mbk_integrator *ig = make(w, sys);
    if (rc == MBK_OK) rc = mbk_integrator_deserialize(ig, buf, n);
    free(buf);
    if (rc != MBK_OK) {
        fprintf(stderr, "  reload: %s\n", mbk_last_error());
        mbk_integrator_destroy(ig);
        return NULL;
    }
    return ig;
}

/* Run to T one step per call; with reload, checkpoint and continue in a new integrator after
   every call. Returns the final integrator (NULL on failure). */
static mbk_integrator *run_rk(const rk_case *c, const mbk_system *sys, const mbk_state *s0, double T, bool reloads,
                              int *calls)
{
    mbk_integrator *ig = make(c->w, sys);
    if (c->fixed > 0) mbk_integrator_set_fixed_step(ig, c->fixed);
    else mbk_integrator_set_accuracy(ig, c->accuracy);
    mbk_integrator_set_max_steps(ig, 1);
    if (mbk_integrator_initialize(ig, s0) != MBK_OK) return mbk_integrator_destroy(ig), NULL;
    int rc;
    *calls = 0;
    while ((rc = advance(ig, T)) == MBK_EVENT) {
        ++*calls;
        if (reloads && !(ig = reload(c->w, sys, ig))) return NULL;
    }
    if (rc != MBK_OK) {
        fprintf(stderr, "  %s: %s\n", c->label, mbk_last_error());
        mbk_integrator_destroy(ig);
        return NULL;
    }
    return ig;
}

static void test_rk_bitwise(void)
{
    const rk_case cases[] = {
        {I_MERSON, 0, 1e-6, "RK-Merson"},          {I_MERSON, 0.01, 0, "RK-Merson, fixed step"},
        {I_RK4, 0, 1e-6, "RK4, step doubling"},    {I_RK4, 0.01, 0, "RK4, fixed step"},
        {I_EULER, 0, 1e-3, "explicit Euler"},      {I_EULER, 0.002, 0, "explicit Euler, fixed step"},
        {I_SEMI, 0, 1e-3, "semi-explicit Euler"},  {I_SEMI, 0.002, 0, "semi-explicit Euler, fixed step"},
    };
    counters ev = {0};
    mbk_system *sys = make_pend(&ev);
    mbk_state *s0 = pend_state(sys);
    const double T = 1.0;
    for (size_t i = 0; i < sizeof cases / sizeof *cases; ++i) {
        const rk_case *c = &cases[i];
        int calls_a = 0, calls_b = 0;
        ev.crossings = ev.scheduled = ev.reports = 0, ev.t_sum = 0;
        mbk_integrator *a = run_rk(c, sys, s0, T, false, &calls_a);
        counters ca = ev;
        ev.crossings = ev.scheduled = ev.reports = 0, ev.t_sum = 0;
        mbk_integrator *b = run_rk(c, sys, s0, T, true, &calls_b);
        counters cb = ev;
        if (!CHECK(a && b)) {
            mbk_integrator_destroy(a);
            mbk_integrator_destroy(b);
            continue;
        }
        const mbk_state *sa = mbk_integrator_get_state(a), *sb = mbk_integrator_get_state(b);
        int ny = mbk_state_get_ny(sa);
        mbk_integrator_stats sta, stb;
        mbk_integrator_get_stats(a, &sta);
        mbk_integrator_get_stats(b, &stb);
        bool same = ny == mbk_state_get_ny(sb) && mbk_state_get_time(sa) == T && mbk_state_get_time(sb) == T &&
                    !memcmp(mbk_state_get_y(sa), mbk_state_get_y(sb), sizeof(double) * (size_t)ny) &&
                    !memcmp(mbk_state_get_ydot(sa), mbk_state_get_ydot(sb), sizeof(double) * (size_t)ny);
        if (!CHECK(same)) fprintf(stderr, "  %s: the resumed run differs\n", c->label);
        CHECK(!memcmp(&sta, &stb, sizeof sta));
        CHECK(calls_a == calls_b && ca.crossings == cb.crossings && ca.scheduled == cb.scheduled &&
              ca.reports == cb.reports && ca.t_sum == cb.t_sum);
        CHECK(ca.crossings > 0 && ca.scheduled == 2 && ca.reports == 10);
        CHECK(mbk_integrator_get_predicted_step_size(a) == mbk_integrator_get_predicted_step_size(b));
        printf("  %-32s %4d checkpoints, each reloaded into a new integrator: bitwise equal (%ld steps, %d "
               "crossings, %ld rejected)\n", c->label, calls_b, stb.steps_taken, cb.crossings, stb.error_test_failures);
        mbk_integrator_destroy(a);
        mbk_integrator_destroy(b);
    }
    mbk_state_destroy(s0);
    mbk_system_destroy(sys);
}

/* RK-Merson on the rich model (quaternions, two constraints, contact): saved to a file at
   t = 0.35 and 0.7 (the scheduled event) and continued from the file. */
static void test_rk_file_resume(void)
{
    counters ev = {0};
    mbk_system *sys = make_rich("rich", &ev, false);
    mbk_state *s0 = mbk_state_create();
    mbk_state_init(s0, sys);
    mbk_system_realize(sys, s0, MBK_STAGE_MODEL);
    double *q = mbk_state_upd_q(s0);
    q[4] = 0.0, q[5] = 0.3; /* the free body above the contact plane */
    mbk_state_upd_u(s0)[0] = 0.5;
    CHECK_INT(mbk_system_assemble(sys, s0, 1e-10), MBK_OK);
    char path[512];
    path_in(path, sizeof path, "rich.mbkrun");
    const double T = 1.2, stops[] = {0.35, 0.7};
    mbk_integrator *a = mbk_integrator_create_rkmerson(sys);
    mbk_integrator_set_accuracy(a, 1e-5);
    CHECK_INT(mbk_integrator_initialize(a, s0), MBK_OK);
    int rc;
    for (int k = 0; k < 3; ++k) { /* the same report times as the run that stops */
        while ((rc = mbk_integrator_step_to(a, k < 2 ? stops[k] : T)) == MBK_EVENT) continue;
        CHECK_INT(rc, MBK_OK);
    }
    counters ca = ev;
    ev.crossings = ev.scheduled = ev.reports = 0, ev.t_sum = 0;
    mbk_integrator *b = mbk_integrator_create_rkmerson(sys);
    mbk_integrator_set_accuracy(b, 1e-5);
    CHECK_INT(mbk_integrator_initialize(b, s0), MBK_OK);
    for (int k = 0; k < 2; ++k) {
        while ((rc = mbk_integrator_step_to(b, stops[k])) == MBK_EVENT) continue;
        CHECK_INT(rc, MBK_OK);
        CHECK_INT(mbk_integrator_save(b, path), MBK_OK);
        mbk_integrator_destroy(b);
        b = mbk_integrator_create_rkmerson(sys); /* default settings: the file's replace them */
        rc = mbk_integrator_load(b, path);
        CHECK_INT(rc, MBK_OK);
        if (rc) fprintf(stderr, "  %s\n", mbk_last_error());
    }
    while ((rc = mbk_integrator_step_to(b, T)) == MBK_EVENT) continue;
    CHECK_INT(rc, MBK_OK);
    const mbk_state *sa = mbk_integrator_get_state(a), *sb = mbk_integrator_get_state(b);
    int ny = mbk_state_get_ny(sa);
    mbk_integrator_stats sta, stb;
    mbk_integrator_get_stats(a, &sta);
    mbk_integrator_get_stats(b, &stb);
    CHECK(ny == mbk_state_get_ny(sb) && !memcmp(mbk_state_get_y(sa), mbk_state_get_y(sb), sizeof(double) * (size_t)ny));
    CHECK(!memcmp(&sta, &stb, sizeof sta));
    CHECK(ca.crossings == ev.crossings && ca.scheduled == ev.scheduled && ca.reports == ev.reports && ca.t_sum == ev.t_sum);
    mbk_integrator_settings set;
    mbk_integrator_get_settings(b, &set);
    CHECK(set.accuracy == 1e-5);
    printf("  RK-Merson on the rich model (constraints, contact, quaternions), resumed from a file twice: "
           "bitwise equal (%ld steps, %ld events)\n", stb.steps_taken, stb.events_handled);
    mbk_integrator_destroy(a);
    mbk_integrator_destroy(b);
    mbk_state_destroy(s0);
    mbk_system_destroy(sys);
}

/* A handler that fails leaves its events pending; the pending events are in the checkpoint. */
static void test_pending_events(void)
{
    counters ev = {0};
    mbk_system *sys = make_pend(&ev);
    mbk_state *s0 = pend_state(sys);
    int rc, fails_a = 0, fails_b = 0;
    mbk_integrator *a = mbk_integrator_create_rkmerson(sys);
    mbk_integrator_initialize(a, s0);
    ev.fail_next = 1;
    while ((rc = mbk_integrator_step_to(a, 1.0)) != MBK_OK)
        if (rc < 0 && ++fails_a > 3) break;
    counters ca = ev;
    memset(&ev, 0, sizeof ev);
    ev.damper = ca.damper, ev.tally = ca.tally, ev.fail_next = 1;
    mbk_integrator *b = mbk_integrator_create_rkmerson(sys);
    mbk_integrator_initialize(b, s0);
    while ((rc = mbk_integrator_step_to(b, 1.0)) != MBK_OK) {
        if (rc < 0 && ++fails_b > 3) break;
        if (rc < 0) { /* the failure: checkpoint now, continue in a new integrator */
            CHECK(has(mbk_last_error(), "pending"));
            if (!(b = reload(I_MERSON, sys, b))) break;
        }
    }
    CHECK(b != NULL && fails_a == 1 && fails_b == 1);
    if (b) {
        const mbk_state *sa = mbk_integrator_get_state(a), *sb = mbk_integrator_get_state(b);
        CHECK(!memcmp(mbk_state_get_y(sa), mbk_state_get_y(sb), sizeof(double) * (size_t)mbk_state_get_ny(sa)));
        CHECK(ca.crossings == ev.crossings && ca.t_sum == ev.t_sum);
    }
    printf("  a handler failure left pending, checkpointed and resumed: bitwise equal\n");
    mbk_integrator_destroy(a);
    mbk_integrator_destroy(b);
    mbk_state_destroy(s0);
    mbk_system_destroy(sys);
}

/* The Jacobian source (mbk_integrator_set_jacobian_source) is part of the settings an image
   carries: each of the three comes back as it was, with use_system_jacobian to match. */
static void test_jacobian_source_resume(void)
{
    counters ev = {0};
    mbk_system *sys = make_pend(&ev);
    mbk_state *s0 = pend_state(sys);
    const mbk_jacobian_source srcs[] = {MBK_JACOBIAN_FD, MBK_JACOBIAN_SUNDIALS_DQ, MBK_JACOBIAN_ANALYTIC};
    for (size_t i = 0; i < sizeof srcs / sizeof *srcs; ++i) {
        mbk_integrator *a = make(I_BDF, sys);
        CHECK_INT(mbk_integrator_set_jacobian_source(a, srcs[i]), MBK_OK);
        CHECK_INT(mbk_integrator_initialize(a, s0), MBK_OK);
        mbk_integrator *b = reload(I_BDF, sys, a);
        if (!CHECK(b != NULL)) continue;
        mbk_integrator_settings st;
        CHECK_INT(mbk_integrator_get_settings(b, &st), MBK_OK);
        CHECK_INT(st.jacobian_source, srcs[i]);
        CHECK(st.use_system_jacobian == (srcs[i] != MBK_JACOBIAN_SUNDIALS_DQ));
        mbk_integrator_destroy(b);
    }
    mbk_state_destroy(s0);
    mbk_system_destroy(sys);
}

static void test_sundials_resume(void)
{
    counters ev = {0};
    mbk_system *sys = make_pend(&ev);
    mbk_state *s0 = pend_state(sys);
    const which ws[] = {I_BDF, I_ADAMS, I_IDA};
    const double T1 = 0.45, T = 1.0, acc = 1e-8;
    char path[512];
    path_in(path, sizeof path, "sundials.mbkrun");
    /* a reference far more accurate than the runs compared */
    int rc;
    mbk_integrator *ref = mbk_integrator_create_rkmerson(sys);
    mbk_integrator_set_accuracy(ref, 1e-13);
    CHECK_INT(mbk_integrator_initialize(ref, s0), MBK_OK);
    while ((rc = mbk_integrator_step_to(ref, T1)) == MBK_EVENT) continue;
    while ((rc = mbk_integrator_step_to(ref, T)) == MBK_EVENT) continue;
    CHECK_INT(rc, MBK_OK);
    const double *yr = mbk_state_get_y(mbk_integrator_get_state(ref));
    for (size_t i = 0; i < sizeof ws / sizeof *ws; ++i) {
        which w = ws[i];
        mbk_integrator *a = make(w, sys);
        mbk_integrator_set_accuracy(a, acc);
        ev.crossings = ev.scheduled = ev.reports = 0;
        CHECK_INT(mbk_integrator_initialize(a, s0), MBK_OK);
        while ((rc = mbk_integrator_step_to(a, T)) == MBK_EVENT) continue;
        CHECK_INT(rc, MBK_OK);
        counters ca = ev;
        mbk_integrator *b = make(w, sys);
        mbk_integrator_set_accuracy(b, acc);
        ev.crossings = ev.scheduled = ev.reports = 0;
        CHECK_INT(mbk_integrator_initialize(b, s0), MBK_OK);
        while ((rc = mbk_integrator_step_to(b, T1)) == MBK_EVENT) continue;
        CHECK_INT(mbk_integrator_save(b, path), MBK_OK);
        mbk_integrator_stats st1;
        mbk_integrator_get_stats(b, &st1);
        mbk_integrator_destroy(b);
        b = make(w, sys);
        CHECK_INT(mbk_integrator_load(b, path), MBK_OK);
        while ((rc = mbk_integrator_step_to(b, T)) == MBK_EVENT) continue;
        CHECK_INT(rc, MBK_OK);
        const mbk_state *sa = mbk_integrator_get_state(a), *sb = mbk_integrator_get_state(b);
        const double *ya = mbk_state_get_y(sa), *yb = mbk_state_get_y(sb);
        double worst = 0, err = 0;
        for (int k = 0; k < mbk_state_get_ny(sa); ++k) {
            worst = fmax(worst, fabs(ya[k] - yb[k]) / (1 + fabs(ya[k])));
            err = fmax(err, fabs(ya[k] - yr[k]) / (1 + fabs(yr[k])));
        }
        mbk_integrator_stats sta, stb;
        mbk_integrator_get_stats(a, &sta);
        mbk_integrator_get_stats(b, &stb);
        /* the same events, and the resumed end no farther from the uninterrupted one than the
           method's own error at this tolerance (the distance to the accurate reference) */
        CHECK(ca.crossings == ev.crossings && ca.scheduled == ev.scheduled && ca.reports == ev.reports);
        CHECK(mbk_state_get_time(sb) == T && worst <= 2 * fmax(err, acc));
        CHECK(stb.steps_taken > st1.steps_taken); /* statistics go on from the file's */
        printf("  %-12s resumed at t = %.2f: differs from the uninterrupted run by %.1e, which is %.1e from an "
               "accurate reference (accuracy %.0e); %ld steps uninterrupted, %ld resumed\n", names[w], T1, worst, err,
               acc, sta.steps_taken, stb.steps_taken);
        mbk_integrator_destroy(a);
        mbk_integrator_destroy(b);
    }
    mbk_integrator_destroy(ref);
    mbk_state_destroy(s0);
    mbk_system_destroy(sys);
}

static void test_integrator_refusals(void)
{
    counters ev = {0}, evr = {0};
    mbk_system *sys = make_pend(&ev), *rich = make_rich("rich", &evr, false);
    mbk_state *s0 = pend_state(sys);
    char path[512], bad[512];
    path_in(path, sizeof path, "pend.mbkrun");
    path_in(bad, sizeof bad, "bad.mbkrun");
    mbk_integrator *ig = mbk_integrator_create_rkmerson(sys);
    CHECK(mbk_integrator_save(ig, path) == MBK_EINVAL && has(mbk_last_error(), "initialize")); /* nothing yet */
    mbk_integrator_initialize(ig, s0);
    int rc0;
    while ((rc0 = mbk_integrator_step_to(ig, 0.2)) == MBK_EVENT) continue;
    CHECK_INT(rc0, MBK_OK);
    CHECK_INT(mbk_integrator_save(ig, path), MBK_OK);
    void *img = NULL;
    size_t n = 0;
    CHECK_INT(mbk_checkpoint_read_file(path, &img, &n), MBK_OK);
    char name[64];
    CHECK(mbk_integrator_get_checkpoint_name(img, n, name, sizeof name) == MBK_OK && !strcmp(name, "RK-Merson"));

    /* another kind of integrator, another model, damage: refused, the integrator unchanged */
    mbk_integrator *other = mbk_integrator_create_rk4(sys);
    CHECK(mbk_integrator_load(other, path) == MBK_EINVAL && has(mbk_last_error(), "written by the RK-Merson"));
    CHECK(mbk_integrator_get_state(other) == NULL);
    mbk_integrator *r = mbk_integrator_create_rkmerson(rich);
    CHECK(mbk_integrator_load(r, path) == MBK_ESTALE && has(mbk_last_error(), "another System"));
    /* a twin keeps going as the reference; the refused loads must not change ig */
    mbk_integrator *twin = mbk_integrator_create_rkmerson(sys);
    CHECK_INT(mbk_integrator_load(twin, path), MBK_OK);
    unsigned char *b = img;
    b[n - 9] ^= 0x10;
    write_bytes(bad, b, n);
    b[n - 9] ^= 0x10;
    CHECK(mbk_integrator_load(ig, bad) == MBK_EPARSE && has(mbk_last_error(), "checksum") &&
          has(mbk_last_error(), "was not changed"));
    write_bytes(bad, b, n / 3);
    CHECK(mbk_integrator_load(ig, bad) == MBK_EPARSE && has(mbk_last_error(), "truncated"));
    CHECK(mbk_integrator_load(ig, dir) == MBK_EIO && has(mbk_last_error(), "directory"));
    write_bytes(bad, b, 0);
    CHECK(mbk_integrator_load(ig, bad) == MBK_EPARSE && has(mbk_last_error(), "empty"));
    mbk_state *ps = pend_state(sys);
    mbk_state_save(ps, sys, bad);
    CHECK(mbk_integrator_load(ig, bad) == MBK_EPARSE && has(mbk_last_error(), "is a State checkpoint"));
    int refused = 0;
    for (size_t i = 0; i < n; i += 7) {
        b[i] ^= 0xff;
        refused += mbk_integrator_deserialize(ig, b, n) < 0;
        b[i] ^= 0xff;
    }
    CHECK_INT(refused, (long)((n + 6) / 7));
    int rc1 = mbk_integrator_step_to(ig, 0.8), rc2 = mbk_integrator_step_to(twin, 0.8);
    while (rc1 == MBK_EVENT) rc1 = mbk_integrator_step_to(ig, 0.8);
    while (rc2 == MBK_EVENT) rc2 = mbk_integrator_step_to(twin, 0.8);
    const mbk_state *sa = mbk_integrator_get_state(ig), *sb = mbk_integrator_get_state(twin);
    CHECK(rc1 == MBK_OK && rc2 == MBK_OK &&
          !memcmp(mbk_state_get_y(sa), mbk_state_get_y(sb), sizeof(double) * (size_t)mbk_state_get_ny(sa)));
    /* the caller's bytes ride along */
    const char note[] = "my run, sample 17";
    size_t m = 0;
    CHECK_INT(mbk_integrator_serialize(ig, note, sizeof note, NULL, 0, &m), MBK_OK);
    unsigned char *withnote = malloc(m);
    CHECK_INT(mbk_integrator_serialize(ig, note, sizeof note, withnote, m, &m), MBK_OK);
    const void *data = NULL;
    size_t dn = 0;
    CHECK(mbk_integrator_get_checkpoint_app_data(withnote, m, &data, &dn) == MBK_OK && dn == sizeof note &&
          !memcmp(data, note, dn));
    CHECK_INT(mbk_integrator_deserialize(ig, withnote, m), MBK_OK);
    printf("  integrator loads refused (another integrator, another model, damaged, truncated, empty, a "
           "directory, a State file, %zu flipped bytes); the integrator went on unchanged\n", (n + 6) / 7);
    free(withnote);
    mbk_state_destroy(ps);
    mbk_free(img);
    mbk_integrator_destroy(twin);
    mbk_integrator_destroy(r);
    mbk_integrator_destroy(other);
    mbk_integrator_destroy(ig);
    mbk_state_destroy(s0);
    mbk_system_destroy(rich);
    mbk_system_destroy(sys);
}

/* A custom integrator (explicit Euler, fixed step) whose load op can be told to refuse:
   a load that fails after the file was accepted puts the integrator back. */
typedef struct flaky {
    double y[64], h_next;
    int refuse; /* refuse this many loads (e.g. out of memory once) */
} flaky;

static int flaky_step(void *impl, mbk_integrator *ig, double t_stop)
{
    flaky *f = impl;
    const mbk_state *s = mbk_integrator_get_state(ig);
    double t = mbk_state_get_time(s), h = fmin(0.01, t_stop - t);
    int ny = mbk_state_get_ny(s);
    for (int i = 0; i < ny && i < 64; ++i) f->y[i] = mbk_state_get_y(s)[i] + h * mbk_state_get_ydot(s)[i];
    f->h_next = h;
    return mbk_integrator_commit_step(ig, h == t_stop - t ? t_stop : t + h, f->y);
}
static int flaky_save(void *impl, const mbk_integrator *ig, void *buf, size_t cap, size_t *size)
{
    (void)ig;
    *size = sizeof(double);
    if (buf && cap >= sizeof(double)) memcpy(buf, &((flaky *)impl)->h_next, sizeof(double));
    return 0;
}
static int flaky_load(void *impl, mbk_integrator *ig, const void *buf, size_t size)
{
    (void)ig, (void)size;
    flaky *f = impl;
    if (f->refuse > 0 && f->refuse--) return mbk_set_error(MBK_EUSER, "flaky: refusing on purpose");
    memcpy(&f->h_next, buf, sizeof(double));
    return 0;
}
static const mbk_integrator_ops flaky_ops = {.name = "flaky Euler", .order = 1, .step = flaky_step,
                                             .destroy = free, .save = flaky_save, .load = flaky_load};

static void test_integrator_rollback(void)
{
    counters ev = {0};
    mbk_system *sys = make_pend(&ev);
    mbk_state *s0 = pend_state(sys);
    flaky *f = calloc(1, sizeof *f);
    mbk_integrator *ig = mbk_integrator_create_custom(sys, &flaky_ops, f);
    CHECK_INT(mbk_integrator_initialize(ig, s0), MBK_OK);
    int rc;
    while ((rc = mbk_integrator_step_to(ig, 0.1)) == MBK_EVENT) continue;
    size_t n = 0, n1 = 0, n2 = 0;
    mbk_integrator_serialize(ig, NULL, 0, NULL, 0, &n);
    unsigned char *at01 = malloc(n);
    CHECK_INT(mbk_integrator_serialize(ig, NULL, 0, at01, n, &n), MBK_OK);
    while ((rc = mbk_integrator_step_to(ig, 0.25)) == MBK_EVENT) continue;
    mbk_integrator_serialize(ig, NULL, 0, NULL, 0, &n1);
    unsigned char *before = malloc(n1), *after = NULL;
    mbk_integrator_serialize(ig, NULL, 0, before, n1, &n1);
    /* the step op refuses its bytes: the integrator is put back as it was, at t = 0.25 */
    f->refuse = 1;
    rc = mbk_integrator_deserialize(ig, at01, n);
    CHECK(rc == MBK_EUSER && has(mbk_last_error(), "refusing on purpose") && has(mbk_last_error(), "put back"));
    CHECK(mbk_integrator_get_time(ig) == 0.25);
    mbk_integrator_serialize(ig, NULL, 0, NULL, 0, &n2);
    after = malloc(n2);
    mbk_integrator_serialize(ig, NULL, 0, after, n2, &n2);
    CHECK(n2 == n1 && !memcmp(before, after, n1));
    /* a fresh integrator that fails the same way stays uninitialized */
    flaky *g = calloc(1, sizeof *g);
    g->refuse = 1;
    mbk_integrator *fresh = mbk_integrator_create_custom(sys, &flaky_ops, g);
    CHECK(mbk_integrator_deserialize(fresh, at01, n) == MBK_EUSER && has(mbk_last_error(), "not initialized"));
    CHECK(mbk_integrator_get_state(fresh) == NULL);
    CHECK_INT(mbk_integrator_deserialize(fresh, at01, n), MBK_OK);
    CHECK(mbk_integrator_get_time(fresh) == 0.1);
    printf("  a load refused by the step op after the file was accepted: the integrator put back as it was\n");
    free(at01);
    free(before);
    free(after);
    mbk_integrator_destroy(fresh);
    mbk_integrator_destroy(ig);
    mbk_state_destroy(s0);
    mbk_system_destroy(sys);
}

int main(void)
{
    snprintf(dir, sizeof dir, "/tmp/mbk-test-checkpoint-XXXXXX");
    if (!CHECK(mkdtemp(dir) != NULL)) return mbk_test_finish();
    test_fingerprint();
    test_state_round_trips();
    test_state_refusals();
    test_atomic_writes();
    test_rk_bitwise();
    test_rk_file_resume();
    test_pending_events();
    test_sundials_resume();
    test_jacobian_source_resume();
    test_integrator_refusals();
    test_integrator_rollback();
    char cmd[600];
    snprintf(cmd, sizeof cmd, "rm -rf '%s'", dir);
    if (system(cmd) != 0) fprintf(stderr, "could not remove %s\n", dir);
    return mbk_test_finish();
}
