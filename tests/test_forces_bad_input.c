/* Bad input to the force subsystem: every refused call returns the right
 * negative status, records it (mbk_last_status) with a non-empty message, and
 * changes nothing: not the force subsystem (element count, topology), not the
 * State (stage, stage versions, t, y, every element's parameters and enabled
 * flag).
 *
 * Covers: bodies out of range (and Ground where it is not allowed),
 * coordinates out of range, negative stiffness or damping, crossed stop
 * limits, NaN and infinite parameters and stations (when adding and in
 * mbk_force_set_parameters), wrong parameter counts, mbk_force_set_gravity on
 * another element, adding after the topology is realized (MBK_ESTAGE),
 * element indices out of range, NULL pointers, uninitialized, foreign and
 * stale States, a State below the stage needed; a mobility spring or stop on
 * a Ball's q (qdot != u), refused when Instance is realized; custom elements
 * whose callbacks fail (-1: MBK_EUSER naming the element; +1: MBK_ERETRY;
 * an mbk status they recorded passes through), after which the State is back
 * at the stage before and a retry works. Every built-in element's add function
 * names itself in its errors (NULL force subsystem, a bad parameter, a realized
 * topology), as mbk_force_set_parameters does with the element.
 */
#include <mbk/mbk.h>
#include <stdlib.h>
#include <string.h>

#include "mbk_test.h"

#define MAXSUB 4
#define MAXEL 16
#define MAXY 64

/* ------------------------------------------------------------------ */
/* Snapshots of what a refused call must leave alone                    */
/* ------------------------------------------------------------------ */

typedef struct snap {
    /* the force subsystem */
    int nel, realized;
    long topology_version;
    /* the State */
    mbk_stage stage;
    long version[MAXSUB][MBK_NUM_STAGES];
    double t;
    int ny;
    double y[MAXY];
    double params[MAXEL][4];
    int enabled[MAXEL];
} snap;

static void take(snap *sn, const mbk_system *sys, const mbk_forces *f, const mbk_state *s)
{
    memset(sn, 0, sizeof *sn);
    sn->nel = mbk_forces_get_num_elements(f);
    sn->realized = mbk_system_is_topology_realized(sys);
    sn->topology_version = mbk_system_get_topology_version(sys);
    if (s && mbk_state_get_num_subsystems(s) > 0) {
        sn->stage = mbk_state_get_stage(s);
        for (int k = 0; k < mbk_state_get_num_subsystems(s) && k < MAXSUB; ++k)
            for (int g = 0; g < MBK_NUM_STAGES; ++g)
                sn->version[k][g] = mbk_state_get_stage_version(s, k, (mbk_stage)g);
        sn->t = mbk_state_get_time(s);
        if (sn->stage >= MBK_STAGE_MODEL) {
            sn->ny = mbk_state_get_ny(s);
            if (sn->ny <= MAXY) memcpy(sn->y, mbk_state_get_y(s), (size_t)sn->ny * sizeof(double));
        }
        /* parameters and flags (fail harmlessly on a stale State: then all zero) */
        for (int i = 0; i < sn->nel && i < MAXEL; ++i) {
            int n = mbk_force_get_num_parameters(f, i);
            if (n > 0 && n <= 4) mbk_force_get_parameters(f, s, i, sn->params[i], n);
            sn->enabled[i] = mbk_force_is_enabled(f, s, i);
        }
    }
    mbk_clear_error(); /* the reads above may record failures */
}

/* A failed realization reverts (and so bumps the stage versions of) the stage
   it failed at, by design; set values_only to compare everything else. */
static bool values_only;

static int snap_equal(const snap *a, const snap *b)
{
    if (!values_only) return memcmp(a, b, sizeof *a) == 0;
    snap x = *a, y = *b;
    memset(x.version, 0, sizeof x.version);
    memset(y.version, 0, sizeof y.version);
    return memcmp(&x, &y, sizeof x) == 0;
}

/* ------------------------------------------------------------------ */
/* Checking one refused call                                            */
/* ------------------------------------------------------------------ */

static const mbk_system *cur_sys;
static const mbk_forces *cur_f;
static const mbk_state *cur_s;
static snap before, after;
static char last_msg[800];

static void begin(const mbk_system *sys, const mbk_forces *f, const mbk_state *s)
{
    cur_sys = sys;
    cur_f = f;
    cur_s = s;
    take(&before, sys, f, s);
    mbk_clear_error();
}

static void end(int failed, int want, const char *needle, const char *call, int line)
{
    char what[600];
    int st = mbk_last_status();
    snprintf(last_msg, sizeof last_msg, "%s", mbk_last_error());
    take(&after, cur_sys, cur_f, cur_s);
    snprintf(what, sizeof what, "%s: signals failure", call);
    mbk_test_record(failed, __FILE__, line, what);
    snprintf(what, sizeof what, "%s: records %s", call, mbk_status_name(want));
    if (!mbk_test_record(st == want, __FILE__, line, what))
        fprintf(stderr, "    got %s: \"%s\"\n", mbk_status_name(st), last_msg);
    snprintf(what, sizeof what, "%s: non-empty message", call);
    mbk_test_record(last_msg[0] != '\0', __FILE__, line, what);
    if (needle) {
        snprintf(what, sizeof what, "%s: message mentions \"%s\"", call, needle);
        if (!mbk_test_record(strstr(last_msg, needle) != NULL, __FILE__, line, what))
            fprintf(stderr, "    message: \"%s\"\n", last_msg);
    }
    snprintf(what, sizeof what, "%s: nothing changed", call);
    mbk_test_record(snap_equal(&before, &after), __FILE__, line, what);
}

/* A call returning a status: it must be exactly `want`. */
#define REFUSE(sys, f, s, call, want, needle)                                        \
    do {                                                                              \
        begin((sys), (f), (s));                                                       \
        int rc_ = (call);                                                             \
        if (rc_ != (want)) fprintf(stderr, "    %s returned %d\n", #call, rc_);         \
        end(rc_ == (want), (want), (needle), #call, __LINE__);                        \
    } while (0)

/* A call returning a pointer or bool: failure is NULL/false. */
#define REFUSE_FALSE(sys, f, s, call, want, needle)                                  \
    do {                                                                              \
        begin((sys), (f), (s));                                                       \
        int ok_ = !(call);                                                            \
        end(ok_, (want), (needle), #call, __LINE__);                                  \
    } while (0)

/* ------------------------------------------------------------------ */
/* The test system                                                      */
/* ------------------------------------------------------------------ */

typedef struct model {
    mbk_system *sys;
    mbk_matter *m;
    mbk_forces *f;
} model;

/* A custom element whose callbacks fail on request. */
typedef struct flaky {
    int force_rc, energy_rc; /* what calc_force / calc_potential_energy return (0: work) */
    int set_status;          /* if nonzero, record this status with a message first */
    int calls, destroyed;
} flaky;

static int flaky_force(void *impl, const mbk_force_ctx *c, const mbk_state *s, mbk_spatial_vec *F, double *tau)
{
    (void)c; (void)s; (void)tau;
    flaky *k = impl;
    k->calls++;
    if (k->set_status) return mbk_set_error(k->set_status, "flaky: the user's own message");
    if (k->force_rc) return k->force_rc;
    F[1].v.x += 1.0;
    return 0;
}

static int flaky_energy(void *impl, const mbk_force_ctx *c, const mbk_state *s, double *pe)
{
    (void)c; (void)s;
    flaky *k = impl;
    if (k->energy_rc) return k->energy_rc;
    *pe += 1.0;
    return 0;
}

static void flaky_destroy(void *impl) { ((flaky *)impl)->destroyed++; }

static const mbk_force_ops flaky_ops = {.name = "flaky element",
                                        .calc_force = flaky_force,
                                        .calc_potential_energy = flaky_energy,
                                        .destroy = flaky_destroy};

/* A custom element that probes a failing mbk call (leaving a stale MBK_EINVAL
   record) and then succeeds. */
static int probing_force(void *impl, const mbk_force_ctx *c, const mbk_state *s, mbk_spatial_vec *F, double *tau)
{
    (void)impl; (void)F; (void)tau;
    double v[2];
    /* element 0 is gravity with 4 parameters: asking for 2 fails, deliberately */
    const mbk_forces *f = mbk_multibody_get_forces(mbk_force_ctx_get_system(c));
    (void)mbk_force_get_parameters(f, s, 0, v, 2);
    return 0;
}

static const mbk_force_ops probing_ops = {.name = "probing element", .calc_force = probing_force};

/* Bodies: 1 Pin on Ground, 2 Free on Ground, 3 Ball on 1, 4 Slider on Ground.
   Elements: 0 gravity, 1 two-point spring, 2 mobility spring, 3 stop,
   4 two-point damper, 5 constant torque, [6 probing, 7 flaky]. */
static flaky the_flaky;

static void build(model *md, bool with_custom)
{
    md->sys = mbk_multibody_create("bad input");
    md->m = mbk_multibody_upd_matter(md->sys);
    md->f = mbk_multibody_upd_forces(md->sys);
    CHECK(md->sys && md->m && md->f);
    mbk_transform I = mbk_transform_identity();
    mbk_transform X = mbk_transform_from_p(mbk_vec3_make(0.5, 0, 0));
    mbk_mass_props mp = mbk_mass_props_from_central(1.0, mbk_vec3_make(0.1, 0, 0), mbk_mat33_diag(0.1, 0.1, 0.1));
    MUST(mbk_matter_add_body(md->m, 0, &I, &mp, &I, mbk_mobilizer_pin()));
    MUST(mbk_matter_add_body(md->m, 0, &X, &mp, &I, mbk_mobilizer_free()));
    MUST(mbk_matter_add_body(md->m, 1, &X, &mp, &I, mbk_mobilizer_ball()));
    MUST(mbk_matter_add_body(md->m, 0, &I, &mp, &I, mbk_mobilizer_slider()));
    MUST(mbk_force_add_gravity(md->f, mbk_vec3_make(0, 0, -9.8)));
    MUST(mbk_force_add_two_point_linear_spring(md->f, 1, mbk_vec3_zero(), 2, mbk_vec3_zero(), 10.0, 0.2));
    MUST(mbk_force_add_mobility_linear_spring(md->f, 1, 0, 5.0, 0.1));
    MUST(mbk_force_add_mobility_linear_stop(md->f, 4, 0, 100.0, 0.1, -0.5, 0.5));
    MUST(mbk_force_add_two_point_linear_damper(md->f, 0, mbk_vec3_make(0, 1, 0), 3, mbk_vec3_zero(), 1.0));
    MUST(mbk_force_add_constant_torque(md->f, 2, mbk_vec3_make(0, 0, 0.1)));
    if (with_custom) {
        MUST(mbk_force_add_custom(md->f, &probing_ops, NULL));
        memset(&the_flaky, 0, sizeof the_flaky);
        MUST(mbk_force_add_custom(md->f, &flaky_ops, &the_flaky));
    }
}

static mbk_state *new_state(const model *md)
{
    mbk_state *s = mbk_state_create();
    MUST(mbk_state_init(s, md->sys));
    return s;
}

static const mbk_vec3 Z = {0, 0, 0};

/* ------------------------------------------------------------------ */
/* Adding elements                                                      */
/* ------------------------------------------------------------------ */

static void test_adding(void)
{
    model md;
    build(&md, false);
    mbk_forces *f = md.f;
    const mbk_system *sys = md.sys;
    const double nan = NAN, inf = INFINITY;
    const mbk_vec3 vnan = {0, nan, 0}, vinf = {inf, 0, 0};

    /* bodies out of range; Ground where it is not allowed */
    REFUSE(sys, f, NULL, mbk_force_add_two_point_linear_spring(f, -1, Z, 1, Z, 1, 0), MBK_EINVAL, "body -1");
    REFUSE(sys, f, NULL, mbk_force_add_two_point_linear_spring(f, 1, Z, 5, Z, 1, 0), MBK_EINVAL, "body 5");
    REFUSE(sys, f, NULL, mbk_force_add_two_point_linear_damper(f, 99, Z, 1, Z, 1), MBK_EINVAL, "body 99");
    REFUSE(sys, f, NULL, mbk_force_add_two_point_constant_force(f, 1, Z, -2, Z, 1), MBK_EINVAL, "body -2");
    REFUSE(sys, f, NULL, mbk_force_add_mobility_linear_spring(f, 0, 0, 1, 0), MBK_EINVAL, "body 0");
    REFUSE(sys, f, NULL, mbk_force_add_mobility_linear_spring(f, 5, 0, 1, 0), MBK_EINVAL, "body 5");
    REFUSE(sys, f, NULL, mbk_force_add_mobility_linear_damper(f, 0, 0, 1), MBK_EINVAL, "body 0");
    REFUSE(sys, f, NULL, mbk_force_add_mobility_constant_force(f, 7, 0, 1), MBK_EINVAL, "body 7");
    REFUSE(sys, f, NULL, mbk_force_add_mobility_linear_stop(f, 0, 0, 1, 0, -1, 1), MBK_EINVAL, "body 0");
    REFUSE(sys, f, NULL, mbk_force_add_constant_force(f, 0, Z, mbk_vec3_make(1, 0, 0)), MBK_EINVAL, "body 0");
    REFUSE(sys, f, NULL, mbk_force_add_constant_force(f, 5, Z, mbk_vec3_make(1, 0, 0)), MBK_EINVAL, "body 5");
    REFUSE(sys, f, NULL, mbk_force_add_constant_torque(f, 0, mbk_vec3_make(1, 0, 0)), MBK_EINVAL, "body 0");
    REFUSE(sys, f, NULL, mbk_force_add_constant_torque(f, -1, mbk_vec3_make(1, 0, 0)), MBK_EINVAL, "body -1");

    /* coordinates out of range (Pin: 1 q/u; Free: 6 u) */
    REFUSE(sys, f, NULL, mbk_force_add_mobility_linear_spring(f, 1, 1, 1, 0), MBK_EINVAL, "coordinate 1");
    REFUSE(sys, f, NULL, mbk_force_add_mobility_linear_spring(f, 1, -1, 1, 0), MBK_EINVAL, "coordinate -1");
    REFUSE(sys, f, NULL, mbk_force_add_mobility_linear_damper(f, 2, 6, 1), MBK_EINVAL, "coordinate 6");
    REFUSE(sys, f, NULL, mbk_force_add_mobility_constant_force(f, 4, 1, 1), MBK_EINVAL, "coordinate 1");
    REFUSE(sys, f, NULL, mbk_force_add_mobility_linear_stop(f, 3, 3, 1, 0, -1, 1), MBK_EINVAL, "coordinate 3");

    /* negative stiffness or damping; crossed limits */
    REFUSE(sys, f, NULL, mbk_force_add_two_point_linear_spring(f, 1, Z, 2, Z, -1, 0), MBK_EINVAL, "negative");
    REFUSE(sys, f, NULL, mbk_force_add_two_point_linear_damper(f, 1, Z, 2, Z, -0.5), MBK_EINVAL, "negative");
    REFUSE(sys, f, NULL, mbk_force_add_mobility_linear_spring(f, 1, 0, -3, 0), MBK_EINVAL, "negative");
    REFUSE(sys, f, NULL, mbk_force_add_mobility_linear_damper(f, 1, 0, -1e-9), MBK_EINVAL, "negative");
    REFUSE(sys, f, NULL, mbk_force_add_mobility_linear_stop(f, 1, 0, -1, 0, -1, 1), MBK_EINVAL, ">= 0");
    REFUSE(sys, f, NULL, mbk_force_add_mobility_linear_stop(f, 1, 0, 1, -1, -1, 1), MBK_EINVAL, ">= 0");
    REFUSE(sys, f, NULL, mbk_force_add_mobility_linear_stop(f, 1, 0, 1, 0, 1, -1), MBK_EINVAL, "above");

    /* NaN and infinity: parameters and stations */
    REFUSE(sys, f, NULL, mbk_force_add_gravity(f, vnan), MBK_EINVAL, "finite");
    REFUSE(sys, f, NULL, mbk_force_add_gravity(f, vinf), MBK_EINVAL, "finite");
    REFUSE(sys, f, NULL, mbk_force_add_two_point_linear_spring(f, 1, Z, 2, Z, nan, 0), MBK_EINVAL, "finite");
    REFUSE(sys, f, NULL, mbk_force_add_two_point_linear_spring(f, 1, Z, 2, Z, 1, inf), MBK_EINVAL, "finite");
    REFUSE(sys, f, NULL, mbk_force_add_two_point_linear_spring(f, 1, vnan, 2, Z, 1, 0), MBK_EINVAL, "finite");
    REFUSE(sys, f, NULL, mbk_force_add_two_point_linear_damper(f, 1, Z, 2, vinf, 1), MBK_EINVAL, "finite");
    REFUSE(sys, f, NULL, mbk_force_add_two_point_linear_damper(f, 1, Z, 2, Z, inf), MBK_EINVAL, "finite");
    REFUSE(sys, f, NULL, mbk_force_add_two_point_constant_force(f, 1, Z, 2, Z, nan), MBK_EINVAL, "finite");
    REFUSE(sys, f, NULL, mbk_force_add_mobility_linear_spring(f, 1, 0, 1, nan), MBK_EINVAL, "finite");
    REFUSE(sys, f, NULL, mbk_force_add_mobility_linear_damper(f, 1, 0, nan), MBK_EINVAL, "finite");
    REFUSE(sys, f, NULL, mbk_force_add_mobility_constant_force(f, 1, 0, -inf), MBK_EINVAL, "finite");
    REFUSE(sys, f, NULL, mbk_force_add_mobility_linear_stop(f, 1, 0, 1, 0, -1, nan), MBK_EINVAL, "finite");
    REFUSE(sys, f, NULL, mbk_force_add_mobility_linear_stop(f, 1, 0, 1, 0, -inf, 1), MBK_EINVAL, "finite");
    REFUSE(sys, f, NULL, mbk_force_add_constant_force(f, 1, vnan, mbk_vec3_make(1, 0, 0)), MBK_EINVAL, "finite");
    REFUSE(sys, f, NULL, mbk_force_add_constant_force(f, 1, Z, vinf), MBK_EINVAL, "finite");
    REFUSE(sys, f, NULL, mbk_force_add_constant_torque(f, 1, vnan), MBK_EINVAL, "finite");

    /* NULL pointers */
    REFUSE(sys, f, NULL, mbk_force_add_gravity(NULL, Z), MBK_EINVAL, "NULL");
    REFUSE(sys, f, NULL, mbk_force_add_two_point_linear_spring(NULL, 1, Z, 2, Z, 1, 0), MBK_EINVAL, "NULL");
    REFUSE(sys, f, NULL, mbk_force_add_two_point_linear_damper(NULL, 1, Z, 2, Z, 1), MBK_EINVAL, "NULL");
    REFUSE(sys, f, NULL, mbk_force_add_two_point_constant_force(NULL, 1, Z, 2, Z, 1), MBK_EINVAL, "NULL");
    REFUSE(sys, f, NULL, mbk_force_add_mobility_linear_spring(NULL, 1, 0, 1, 0), MBK_EINVAL, "NULL");
    REFUSE(sys, f, NULL, mbk_force_add_mobility_linear_damper(NULL, 1, 0, 1), MBK_EINVAL, "NULL");
    REFUSE(sys, f, NULL, mbk_force_add_mobility_constant_force(NULL, 1, 0, 1), MBK_EINVAL, "NULL");
    REFUSE(sys, f, NULL, mbk_force_add_mobility_linear_stop(NULL, 1, 0, 1, 0, -1, 1), MBK_EINVAL, "NULL");
    REFUSE(sys, f, NULL, mbk_force_add_constant_force(NULL, 1, Z, Z), MBK_EINVAL, "NULL");
    REFUSE(sys, f, NULL, mbk_force_add_constant_torque(NULL, 1, Z), MBK_EINVAL, "NULL");
    flaky k = {0};
    REFUSE(sys, f, NULL, mbk_force_add_custom(NULL, &flaky_ops, &k), MBK_EINVAL, "NULL");
    REFUSE(sys, f, NULL, mbk_force_add_custom(f, NULL, &k), MBK_EINVAL, "ops");
    const mbk_force_ops empty = {.name = "empty"};
    REFUSE(sys, f, NULL, mbk_force_add_custom(f, &empty, &k), MBK_EINVAL, "calc_force");
    REFUSE(sys, f, NULL, mbk_force_set_name(f, 0, NULL), MBK_EINVAL, "NULL");
    REFUSE(sys, f, NULL, mbk_force_set_name(NULL, 0, "x"), MBK_EINVAL, "NULL");
    CHECK_INT(k.destroyed, 0); /* a refused custom element's impl is not adopted */

    /* element indices out of range (no State needed) */
    REFUSE(sys, f, NULL, mbk_force_get_num_parameters(f, 6), MBK_EINVAL, "element 6");
    REFUSE(sys, f, NULL, mbk_force_get_num_parameters(f, -1), MBK_EINVAL, "element -1");
    REFUSE(sys, f, NULL, mbk_force_get_num_parameters(NULL, 0), MBK_EINVAL, "NULL");
    REFUSE(sys, f, NULL, mbk_force_set_name(f, 6, "x"), MBK_EINVAL, "element 6");
    REFUSE(sys, f, NULL, mbk_forces_get_subsystem_index(NULL), MBK_EINVAL, "NULL");

    /* force subsystems: none on a plain System */
    mbk_system *plain = mbk_system_create("plain");
    REFUSE_FALSE(sys, f, NULL, mbk_multibody_add_forces(plain, "more"), MBK_EINVAL, "matter");
    REFUSE_FALSE(sys, f, NULL, mbk_multibody_add_forces(NULL, "more"), MBK_EINVAL, NULL);
    CHECK(mbk_multibody_upd_forces(plain) == NULL && mbk_multibody_get_forces(plain) == NULL);
    CHECK_INT(mbk_system_get_num_subsystems(plain), 0);
    mbk_system_destroy(plain);

    /* adding after the topology is realized: MBK_ESTAGE, topology left realized */
    MUST(mbk_system_realize_topology(md.sys));
    REFUSE(sys, f, NULL, mbk_force_add_gravity(f, mbk_vec3_make(0, 0, -1)), MBK_ESTAGE, "invalidate_topology");
    REFUSE(sys, f, NULL, mbk_force_add_two_point_linear_spring(f, 1, Z, 2, Z, 1, 0), MBK_ESTAGE, "topology");
    REFUSE(sys, f, NULL, mbk_force_add_two_point_linear_damper(f, 1, Z, 2, Z, 1), MBK_ESTAGE, "topology");
    REFUSE(sys, f, NULL, mbk_force_add_two_point_constant_force(f, 1, Z, 2, Z, 1), MBK_ESTAGE, "topology");
    REFUSE(sys, f, NULL, mbk_force_add_mobility_linear_spring(f, 1, 0, 1, 0), MBK_ESTAGE, "topology");
    REFUSE(sys, f, NULL, mbk_force_add_mobility_linear_damper(f, 1, 0, 1), MBK_ESTAGE, "topology");
    REFUSE(sys, f, NULL, mbk_force_add_mobility_constant_force(f, 1, 0, 1), MBK_ESTAGE, "topology");
    REFUSE(sys, f, NULL, mbk_force_add_mobility_linear_stop(f, 1, 0, 1, 0, -1, 1), MBK_ESTAGE, "topology");
    REFUSE(sys, f, NULL, mbk_force_add_constant_force(f, 1, Z, Z), MBK_ESTAGE, "topology");
    REFUSE(sys, f, NULL, mbk_force_add_constant_torque(f, 1, Z), MBK_ESTAGE, "topology");
    REFUSE(sys, f, NULL, mbk_force_add_custom(f, &flaky_ops, &k), MBK_ESTAGE, "topology");
    CHECK_INT(k.destroyed, 0);
    CHECK(mbk_system_is_topology_realized(md.sys));
    /* ... and after mbk_system_invalidate_topology it works again */
    mbk_system_invalidate_topology(md.sys);
    CHECK_INT(MUST(mbk_force_add_constant_torque(f, 1, mbk_vec3_make(1, 0, 0))), 6);
    MUST(mbk_system_realize_topology(md.sys));
    mbk_system_destroy(md.sys);
}

/* ------------------------------------------------------------------ */
/* Per-State calls                                                      */
/* ------------------------------------------------------------------ */

static void test_state_calls(void)
{
    model md;
    build(&md, false);
    MUST(mbk_system_realize_topology(md.sys));
    mbk_forces *f = md.f;
    const mbk_system *sys = md.sys;
    mbk_state *s = new_state(&md);
    MUST(mbk_system_realize(sys, s, MBK_STAGE_ACCELERATION));
    double v[4] = {1, 2, 3, 4}, pe = 0;
    const double nan = NAN, inf = INFINITY;

    /* element index out of range */
    REFUSE(sys, f, s, mbk_force_set_enabled(f, s, 6, false), MBK_EINVAL, "element 6");
    REFUSE(sys, f, s, mbk_force_set_enabled(f, s, -1, false), MBK_EINVAL, "element -1");
    REFUSE_FALSE(sys, f, s, mbk_force_is_enabled(f, s, 6), MBK_EINVAL, "element 6");
    REFUSE(sys, f, s, mbk_force_get_parameters(f, s, 6, v, 2), MBK_EINVAL, "element 6");
    REFUSE(sys, f, s, mbk_force_set_parameters(f, s, 6, v, 2), MBK_EINVAL, "element 6");
    REFUSE(sys, f, s, mbk_force_set_gravity(f, s, 6, Z), MBK_EINVAL, "element 6");
    REFUSE(sys, f, s, mbk_force_calc_potential_energy(f, s, 6, &pe), MBK_EINVAL, "element 6");

    /* NULL pointers */
    REFUSE(sys, f, s, mbk_force_set_enabled(NULL, s, 0, false), MBK_EINVAL, "NULL");
    REFUSE(sys, f, s, mbk_force_set_enabled(f, NULL, 0, false), MBK_EINVAL, "NULL");
    REFUSE_FALSE(sys, f, s, mbk_force_is_enabled(f, NULL, 0), MBK_EINVAL, "NULL");
    REFUSE(sys, f, s, mbk_force_get_parameters(f, s, 1, NULL, 2), MBK_EINVAL, "NULL");
    REFUSE(sys, f, s, mbk_force_get_parameters(f, NULL, 1, v, 2), MBK_EINVAL, "NULL");
    REFUSE(sys, f, s, mbk_force_set_parameters(f, s, 1, NULL, 2), MBK_EINVAL, "NULL");
    REFUSE(sys, f, s, mbk_force_set_parameters(NULL, s, 1, v, 2), MBK_EINVAL, "NULL");
    REFUSE(sys, f, s, mbk_force_set_gravity(f, NULL, 0, Z), MBK_EINVAL, "NULL");
    REFUSE(sys, f, s, mbk_force_calc_potential_energy(f, s, 1, NULL), MBK_EINVAL, "NULL");
    REFUSE(sys, f, s, mbk_force_calc_potential_energy(NULL, s, 1, &pe), MBK_EINVAL, "NULL");

    /* wrong parameter count */
    REFUSE(sys, f, s, mbk_force_get_parameters(f, s, 1, v, 3), MBK_EINVAL, "2 parameters");
    REFUSE(sys, f, s, mbk_force_set_parameters(f, s, 1, v, 1), MBK_EINVAL, "2 parameters");
    REFUSE(sys, f, s, mbk_force_set_parameters(f, s, 0, v, 3), MBK_EINVAL, "4 parameters");
    REFUSE(sys, f, s, mbk_force_set_parameters(f, s, 5, v, 0), MBK_EINVAL, "3 parameters");

    /* bad values: NaN, infinity, negative stiffness/damping, crossed limits */
    const double sp_nan[2] = {nan, 0.2}, sp_inf[2] = {10, inf}, sp_neg[2] = {-10, 0.2};
    REFUSE(sys, f, s, mbk_force_set_parameters(f, s, 1, sp_nan, 2), MBK_EINVAL, "finite");
    REFUSE(sys, f, s, mbk_force_set_parameters(f, s, 1, sp_inf, 2), MBK_EINVAL, "finite");
    REFUSE(sys, f, s, mbk_force_set_parameters(f, s, 1, sp_neg, 2), MBK_EINVAL, "negative");
    REFUSE(sys, f, s, mbk_force_set_parameters(f, s, 2, sp_neg, 2), MBK_EINVAL, "negative");
    const double c_neg = -1.0;
    REFUSE(sys, f, s, mbk_force_set_parameters(f, s, 4, &c_neg, 1), MBK_EINVAL, "negative");
    const double stop_neg[4] = {-1, 0, -1, 1}, stop_cross[4] = {1, 0, 1, -1}, stop_nan[4] = {1, 0, nan, 1};
    REFUSE(sys, f, s, mbk_force_set_parameters(f, s, 3, stop_neg, 4), MBK_EINVAL, ">= 0");
    REFUSE(sys, f, s, mbk_force_set_parameters(f, s, 3, stop_cross, 4), MBK_EINVAL, "above");
    REFUSE(sys, f, s, mbk_force_set_parameters(f, s, 3, stop_nan, 4), MBK_EINVAL, "finite");
    const double g_nan[4] = {0, 0, -9.8, nan}, t_inf[3] = {0, -inf, 0};
    REFUSE(sys, f, s, mbk_force_set_parameters(f, s, 0, g_nan, 4), MBK_EINVAL, "finite");
    REFUSE(sys, f, s, mbk_force_set_parameters(f, s, 5, t_inf, 3), MBK_EINVAL, "finite");
    REFUSE(sys, f, s, mbk_force_set_gravity(f, s, 0, mbk_vec3_make(0, nan, 0)), MBK_EINVAL, "finite");
    REFUSE(sys, f, s, mbk_force_set_gravity(f, s, 0, mbk_vec3_make(inf, 0, 0)), MBK_EINVAL, "finite");

    /* set_gravity on an element that is not gravity */
    REFUSE(sys, f, s, mbk_force_set_gravity(f, s, 1, mbk_vec3_make(0, 0, -1)), MBK_EINVAL, "not a gravity");
    REFUSE(sys, f, s, mbk_force_set_gravity(f, s, 5, mbk_vec3_make(0, 0, -1)), MBK_EINVAL, "not a gravity");

    /* a State below the stage needed */
    mbk_state *low = new_state(&md); /* at Topology */
    REFUSE(sys, f, low, mbk_force_calc_potential_energy(f, low, 1, &pe), MBK_ESTAGE, "Position");
    MUST(mbk_system_realize(sys, low, MBK_STAGE_VELOCITY));
    REFUSE_FALSE(sys, f, low, mbk_multibody_get_body_forces(sys, low), MBK_ESTAGE, "Dynamics");
    REFUSE_FALSE(sys, f, low, mbk_multibody_get_mobility_forces(sys, low), MBK_ESTAGE, "Dynamics");
    mbk_state_destroy(low);

    /* uninitialized State */
    mbk_state *raw = mbk_state_create();
    REFUSE(sys, f, NULL, mbk_force_set_enabled(f, raw, 0, false), MBK_EINVAL, "mbk_state_init");
    REFUSE(sys, f, NULL, mbk_force_get_parameters(f, raw, 1, v, 2), MBK_EINVAL, "mbk_state_init");
    REFUSE(sys, f, NULL, mbk_force_set_parameters(f, raw, 1, v, 2), MBK_EINVAL, "mbk_state_init");
    REFUSE(sys, f, NULL, mbk_force_calc_potential_energy(f, raw, 1, &pe), MBK_EINVAL, "mbk_state_init");
    mbk_state_destroy(raw);

    /* a foreign State (another System, another topology) */
    model other;
    build(&other, false);
    MUST(mbk_force_add_constant_torque(other.f, 1, mbk_vec3_make(1, 0, 0)));
    MUST(mbk_system_realize_topology(other.sys));
    mbk_state *foreign = new_state(&other);
    MUST(mbk_system_realize(other.sys, foreign, MBK_STAGE_DYNAMICS));
    REFUSE(other.sys, other.f, foreign, mbk_force_set_enabled(f, foreign, 0, false), MBK_ESTALE, "mbk_state_init");
    REFUSE(other.sys, other.f, foreign, mbk_force_set_parameters(f, foreign, 1, v, 2), MBK_ESTALE, NULL);
    REFUSE(other.sys, other.f, foreign, mbk_force_get_parameters(f, foreign, 1, v, 2), MBK_ESTALE, NULL);
    REFUSE(other.sys, other.f, foreign, mbk_force_calc_potential_energy(f, foreign, 1, &pe), MBK_ESTALE, NULL);
    mbk_state_destroy(foreign);
    mbk_system_destroy(other.sys);

    /* a stale State: the System's topology changed after the State was made */
    mbk_system_invalidate_topology(md.sys);
    MUST(mbk_force_add_constant_torque(md.f, 2, mbk_vec3_make(0, 1, 0)));
    MUST(mbk_system_realize_topology(md.sys));
    REFUSE(sys, f, s, mbk_force_set_enabled(f, s, 0, false), MBK_ESTALE, "mbk_state_init");
    REFUSE_FALSE(sys, f, s, mbk_force_is_enabled(f, s, 0), MBK_ESTALE, NULL);
    REFUSE(sys, f, s, mbk_force_set_parameters(f, s, 1, v, 2), MBK_ESTALE, NULL);
    REFUSE(sys, f, s, mbk_force_get_parameters(f, s, 1, v, 2), MBK_ESTALE, NULL);
    REFUSE(sys, f, s, mbk_force_set_gravity(f, s, 0, Z), MBK_ESTALE, NULL);
    REFUSE(sys, f, s, mbk_force_calc_potential_energy(f, s, 1, &pe), MBK_ESTALE, NULL);
    /* init makes it usable */
    MUST(mbk_state_init(s, sys));
    MUST(mbk_force_set_enabled(f, s, 6, false));
    mbk_state_destroy(s);
    mbk_system_destroy(md.sys);
}

/* ------------------------------------------------------------------ */
/* Mobility elements on a coordinate whose qdot is not its u            */
/* ------------------------------------------------------------------ */

static void test_qdot_not_u(void)
{
    for (int kind = 0; kind < 4; ++kind) {
        /* kind 0: spring, 1: stop, on the Ball (body 3) in quaternion mode;
           2: spring in Euler mode; 3: damper on the Ball's u (fine: no q). */
        model md;
        build(&md, false);
        mbk_system_invalidate_topology(md.sys);
        int e = kind == 1 ? MUST(mbk_force_add_mobility_linear_stop(md.f, 3, 0, 10, 0, -0.5, 0.5))
              : kind == 3 ? MUST(mbk_force_add_mobility_linear_damper(md.f, 3, 2, 1.0))
                          : MUST(mbk_force_add_mobility_linear_spring(md.f, 3, 0, 10, 0.2));
        CHECK_INT(e, 6);
        MUST(mbk_system_realize_topology(md.sys));
        mbk_state *s = new_state(&md);
        if (kind == 2) {
            MUST(mbk_matter_set_use_euler_angles(md.m, s, true));
            MUST(mbk_system_realize(md.sys, s, MBK_STAGE_MODEL));
            CHECK_INT(mbk_matter_get_body_num_q(md.m, s, 3), 3);
        }
        MUST(mbk_system_realize(md.sys, s, MBK_STAGE_MODEL));
        if (kind == 3) {
            MUST(mbk_system_realize(md.sys, s, MBK_STAGE_ACCELERATION));
        } else if (kind < 2) {
            values_only = true;
            REFUSE(md.sys, md.f, s, mbk_system_realize(md.sys, s, MBK_STAGE_INSTANCE), MBK_EINVAL, "qdot");
            values_only = false;
            CHECK(strstr(last_msg, "element 6") != NULL);
            CHECK_INT(mbk_state_get_stage(s), MBK_STAGE_MODEL);
        } else {
            /* Euler angles make nq == nu for the Ball, but its u is still the angular
               velocity w_FM in F, not the rates of the angles: qdot != u. */
            model plain;
            build(&plain, false);
            MUST(mbk_system_realize_topology(plain.sys));
            mbk_state *t = new_state(&plain);
            MUST(mbk_matter_set_use_euler_angles(plain.m, t, true));
            MUST(mbk_system_realize(plain.sys, t, MBK_STAGE_INSTANCE));
            int q0 = mbk_matter_get_body_q_start(plain.m, t, 3), u0 = mbk_matter_get_body_u_start(plain.m, t, 3);
            double *qq = mbk_state_upd_q(t);
            qq[q0] = 0.3;
            qq[q0 + 1] = 0.6;
            double *uu = mbk_state_upd_u(t);
            uu[u0] = 0.2;
            uu[u0 + 1] = 1.0;
            MUST(mbk_system_realize(plain.sys, t, MBK_STAGE_VELOCITY));
            const double *qdot = mbk_state_get_qdot(t), *u = mbk_state_get_u(t);
            double diff = 0;
            for (int i = 0; qdot && i < 3; ++i) diff = fmax(diff, fabs(qdot[q0 + i] - u[u0 + i]));
            CHECK(diff > 1e-2);
            mbk_state_destroy(t);
            mbk_system_destroy(plain.sys);
            values_only = true;
            REFUSE(md.sys, md.f, s, mbk_system_realize(md.sys, s, MBK_STAGE_INSTANCE), MBK_EINVAL, "qdot");
            values_only = false;
        }
        mbk_state_destroy(s);
        mbk_system_destroy(md.sys);
    }
}

/* ------------------------------------------------------------------ */
/* Custom elements whose callbacks fail                                  */
/* ------------------------------------------------------------------ */

static void test_failing_callbacks(void)
{
    model md;
    build(&md, true);
    MUST(mbk_system_realize_topology(md.sys));
    const mbk_system *sys = md.sys;
    mbk_forces *f = md.f;
    mbk_state *s = new_state(&md);
    MUST(mbk_system_realize(sys, s, MBK_STAGE_VELOCITY));
    flaky *k = &the_flaky;
    values_only = true; /* realize failures revert the failed stage */

    /* -1, no message of its own: MBK_EUSER naming the element. An earlier
       element (the probing one) left an MBK_EINVAL (-1) record behind; it must
       not turn this failure into MBK_EINVAL. */
    k->force_rc = -1;
    REFUSE(sys, f, s, mbk_system_realize(sys, s, MBK_STAGE_DYNAMICS), MBK_EUSER, "flaky element");
    CHECK(strstr(last_msg, "element 7") != NULL);
    CHECK_INT(mbk_state_get_stage(s), MBK_STAGE_VELOCITY);

    /* The same without the probing element's leftover: drop it. */
    MUST(mbk_force_set_enabled(f, s, 6, false));
    MUST(mbk_system_realize(sys, s, MBK_STAGE_VELOCITY));
    REFUSE(sys, f, s, mbk_system_realize(sys, s, MBK_STAGE_DYNAMICS), MBK_EUSER, "flaky element");
    CHECK(strstr(last_msg, "element 7") != NULL);

    /* A status the callback recorded itself passes through, with its message. */
    k->force_rc = 0;
    k->set_status = MBK_ENOTFINITE;
    REFUSE(sys, f, s, mbk_system_realize(sys, s, MBK_STAGE_DYNAMICS), MBK_ENOTFINITE, "the user's own message");
    CHECK(strstr(last_msg, "flaky element") != NULL);
    k->set_status = 0;

    /* +1: recoverable, MBK_ERETRY; the State stays at Velocity, ready for a retry. */
    k->force_rc = 1;
    REFUSE(sys, f, s, mbk_system_realize(sys, s, MBK_STAGE_ACCELERATION), MBK_ERETRY, NULL);
    CHECK_INT(mbk_state_get_stage(s), MBK_STAGE_VELOCITY);
    /* ... also through the ODE view */
    double ydot[64];
    REFUSE(sys, f, s, mbk_system_calc_ydot(sys, s, mbk_state_get_time(s), NULL, ydot), MBK_ERETRY, NULL);

    /* The retry works once the callback does. */
    k->force_rc = 0;
    int calls = k->calls;
    MUST(mbk_system_realize(sys, s, MBK_STAGE_ACCELERATION));
    CHECK_INT(k->calls, calls + 1);
    CHECK_INT(mbk_state_get_stage(s), MBK_STAGE_ACCELERATION);

    values_only = false;

    /* Energy callbacks: -1 from calc_potential_energy. */
    k->energy_rc = -1;
    double pe = 0, ke = 0;
    REFUSE(sys, f, s, mbk_system_calc_energy(sys, s, &ke, &pe), MBK_EUSER, "forces");
    REFUSE(sys, f, s, mbk_force_calc_potential_energy(f, s, 7, &pe), MBK_EUSER, "flaky element");
    k->energy_rc = 0;
    MUST(mbk_force_calc_potential_energy(f, s, 7, &pe));
    CHECK(pe == 1.0);

    mbk_state_destroy(s);
    mbk_system_destroy(md.sys);
    CHECK_INT(the_flaky.destroyed, 1);
}

/* A position-only element that fails is called again next time (nothing cached). */
static int pos_calls, pos_rc;
static int pos_force(void *impl, const mbk_force_ctx *c, const mbk_state *s, mbk_spatial_vec *F, double *tau)
{
    (void)impl; (void)c; (void)s; (void)tau;
    pos_calls++;
    if (pos_rc) return pos_rc;
    F[1].v.y += 2.0;
    return 0;
}

static void test_failing_positions_only(void)
{
    model md;
    build(&md, false);
    mbk_system_invalidate_topology(md.sys);
    const mbk_force_ops ops = {.name = "position-only element", .calc_force = pos_force,
                               .depends_only_on_positions = true};
    MUST(mbk_force_add_custom(md.f, &ops, NULL));
    MUST(mbk_system_realize_topology(md.sys));
    mbk_state *s = new_state(&md);
    MUST(mbk_system_realize(md.sys, s, MBK_STAGE_VELOCITY));
    pos_calls = 0;
    pos_rc = -5; /* happens to be MBK_ESINGULAR, but not recorded: MBK_EUSER */
    values_only = true;
    REFUSE(md.sys, md.f, s, mbk_system_realize(md.sys, s, MBK_STAGE_DYNAMICS), MBK_EUSER, "position-only element");
    values_only = false;
    pos_rc = 0;
    MUST(mbk_system_realize(md.sys, s, MBK_STAGE_DYNAMICS));
    CHECK_INT(pos_calls, 2);
    CHECK(mbk_multibody_get_body_forces(md.sys, s)[1].v.y == 2.0);
    mbk_state_destroy(s);
    mbk_system_destroy(md.sys);
}

/* The message of the last failure begins with the public function's name. */
#define CHECK_NAMED(call, status, name)                                                                    \
    do {                                                                                                   \
        mbk_clear_error();                                                                                 \
        int rc_ = (call);                                                                                  \
        if (!CHECK(rc_ == (status) && strncmp(mbk_last_error(), name ": ", strlen(name) + 2) == 0))        \
            fprintf(stderr, "    %s: %s: %s\n", name, mbk_status_name(rc_), mbk_last_error());              \
    } while (0)

static void test_builtins_name_themselves(void)
{
    model md;
    build(&md, false);
    mbk_transform X = mbk_transform_identity();
    const double k6[6] = {1, 1, 1, 1, 1, 1}, neg6[6] = {1, 1, -1, 1, 1, 1};
    const double hc[6] = {1e6, 0.1, 0.5, 0.4, 0.1, 0.01}, hc_bad[6] = {-1, 0.1, 0.5, 0.4, 0.1, 0.01};
    mbk_vec3 g = mbk_vec3_make(0, 0, -9.8), n = mbk_vec3_make(NAN, 0, 0);
    for (int pass = 0; pass < 3; ++pass) { /* 0: NULL forces, 1: a bad value, 2: topology realized */
        mbk_forces *f = pass == 0 ? NULL : md.f;
        bool bad = pass == 1;
        int st = pass == 2 ? MBK_ESTAGE : MBK_EINVAL;
        CHECK_NAMED(mbk_force_add_gravity(f, bad ? n : g), st, "mbk_force_add_gravity");
        CHECK_NAMED(mbk_force_add_two_point_linear_spring(f, 1, Z, 2, Z, bad ? -1.0 : 1.0, 0.1), st,
                    "mbk_force_add_two_point_linear_spring");
        CHECK_NAMED(mbk_force_add_two_point_linear_damper(f, 1, Z, 2, Z, bad ? -1.0 : 1.0), st,
                    "mbk_force_add_two_point_linear_damper");
        CHECK_NAMED(mbk_force_add_two_point_constant_force(f, 1, Z, 2, Z, bad ? NAN : 1.0), st,
                    "mbk_force_add_two_point_constant_force");
        CHECK_NAMED(mbk_force_add_mobility_linear_spring(f, 1, 0, bad ? -1.0 : 1.0, 0.0), st,
                    "mbk_force_add_mobility_linear_spring");
        CHECK_NAMED(mbk_force_add_mobility_linear_damper(f, 1, 0, bad ? -1.0 : 1.0), st,
                    "mbk_force_add_mobility_linear_damper");
        CHECK_NAMED(mbk_force_add_mobility_constant_force(f, 1, 0, bad ? INFINITY : 1.0), st,
                    "mbk_force_add_mobility_constant_force");
        CHECK_NAMED(mbk_force_add_mobility_linear_stop(f, 1, 0, 10.0, 0.1, bad ? 1.0 : -1.0, bad ? -1.0 : 1.0), st,
                    "mbk_force_add_mobility_linear_stop");
        CHECK_NAMED(mbk_force_add_constant_force(f, 1, Z, bad ? n : g), st, "mbk_force_add_constant_force");
        CHECK_NAMED(mbk_force_add_constant_torque(f, 1, bad ? n : g), st, "mbk_force_add_constant_torque");
        CHECK_NAMED(mbk_force_add_linear_bushing(f, 1, &X, 2, &X, bad ? neg6 : k6, k6), st,
                    "mbk_force_add_linear_bushing");
        CHECK_NAMED(mbk_force_add_hunt_crossley_sphere(f, 1, Z, 0.1, 0.0, bad ? hc_bad : hc), st,
                    "mbk_force_add_hunt_crossley_sphere");
        if (pass == 1) MUST(mbk_system_realize_topology(md.sys));
    }
    /* and mbk_force_set_parameters names the element whose check failed */
    mbk_state *s = new_state(&md);
    MUST(mbk_system_realize(md.sys, s, MBK_STAGE_INSTANCE));
    double p[4] = {100.0, 0.1, 0.5, -0.5}; /* element 3: the stop, limits crossed */
    CHECK_NAMED(mbk_force_set_parameters(md.f, s, 3, p, 4), MBK_EINVAL, "mbk_force_set_parameters");
    CHECK(strstr(mbk_last_error(), "element 3 (mobility linear stop): lower limit 0.5 is above upper limit -0.5"));
    mbk_state_destroy(s);
    mbk_system_destroy(md.sys);
}

int main(void)
{
    test_adding();
    test_builtins_name_themselves();
    test_state_calls();
    test_qdot_not_u();
    test_failing_callbacks();
    test_failing_positions_only();
    return mbk_test_finish();
}
