/* Bad input to the matter subsystem: every refused call returns the right
 * negative status, records it (mbk_last_status) with a non-empty message
 * (naming the stage needed when the State is not realized far enough), and
 * changes nothing: not the tree (body count, total mass, topology), not the
 * State (stages, stage versions, cache validity, t, y, derivatives), not the
 * caller's output buffer. Covers mbk_matter_add_body (unknown parent,
 * invalid mass properties and transforms, bad mobilizers, adding after the
 * topology is realized), every reader and operator of matter.h below its
 * stage, with bad body indices, NULL inputs and outputs, NULL matter, NULL,
 * uninitialized, foreign and stale States, plain Systems without matter, and
 * a singular articulated inertia (massless tip body), which must fail with
 * MBK_ESINGULAR rather than produce NaN or garbage. */
#include <mbk/mbk.h>
#include <stdlib.h>
#include <string.h>

#include "mbk_test.h"

#define MAXB 8
#define MAXU (6 * MAXB)
#define MAXQ (7 * MAXB)
#define MAXCACHE 32

/* ------------------------------------------------------------------ */
/* Snapshots of what a refused call must leave alone                    */
/* ------------------------------------------------------------------ */

typedef struct snap {
    mbk_stage stage;
    int nsub;
    mbk_stage sub_stage[4];
    long version[4][MBK_NUM_STAGES];
    int ncache[4];
    int cache_valid[4][MAXCACHE];
    double t;
    int ny;
    double y[MAXQ + MAXU];
    double qdot[MAXQ], udot[MAXU];
    int have_qdot, have_udot;
    size_t bytes;
} snap;

static void take(snap *sn, const mbk_state *s)
{
    memset(sn, 0, sizeof *sn);
    sn->stage = mbk_state_get_stage(s);
    sn->nsub = mbk_state_get_num_subsystems(s);
    sn->bytes = mbk_state_get_size_in_bytes(s);
    sn->t = mbk_state_get_time(s);
    for (int k = 0; k < sn->nsub && k < 4; ++k) {
        sn->sub_stage[k] = mbk_state_get_subsystem_stage(s, k);
        for (int g = 0; g < MBK_NUM_STAGES; ++g) sn->version[k][g] = mbk_state_get_stage_version(s, k, (mbk_stage)g);
        sn->ncache[k] = mbk_state_get_num_cache(s, k);
        for (int i = 0; i < sn->ncache[k] && i < MAXCACHE; ++i)
            sn->cache_valid[k][i] = mbk_state_is_cache_realized(s, k, i);
    }
    if (sn->stage >= MBK_STAGE_MODEL) {
        sn->ny = mbk_state_get_ny(s);
        if (sn->ny <= MAXQ + MAXU) memcpy(sn->y, mbk_state_get_y(s), (size_t)sn->ny * sizeof(double));
        const double *qd = mbk_state_get_qdot(s), *ud = mbk_state_get_udot(s);
        int nq = mbk_state_get_nq(s), nu = mbk_state_get_nu(s);
        if (qd && nq <= MAXQ) { sn->have_qdot = 1; memcpy(sn->qdot, qd, (size_t)nq * sizeof(double)); }
        if (ud && nu <= MAXU) { sn->have_udot = 1; memcpy(sn->udot, ud, (size_t)nu * sizeof(double)); }
    }
    mbk_clear_error(); /* the getters above may record failures (e.g. on a stale State) */
}

/* Snapshot of the tree. */
typedef struct tree_snap {
    int nb, realized;
    long version;
    double mass;
    int parent[MAXB + 4];
} tree_snap;

static void take_tree(tree_snap *t, mbk_system *sys)
{
    const mbk_matter *m = mbk_multibody_get_matter(sys);
    memset(t, 0, sizeof *t);
    t->nb = mbk_matter_get_num_bodies(m);
    t->realized = mbk_system_is_topology_realized(sys);
    t->version = mbk_system_get_topology_version(sys);
    t->mass = mbk_matter_get_total_mass(m);
    for (int b = 0; b < t->nb && b < MAXB + 4; ++b) t->parent[b] = mbk_matter_get_parent(m, b);
    mbk_clear_error();
}

/* ------------------------------------------------------------------ */
/* Checking one refused call                                            */
/* ------------------------------------------------------------------ */

static char last_msg[600];

/* After a refused call: the returned value, the recorded status, a non-empty
   message (containing needle if given). */
static void refused(int rc, int want, const char *needle, const char *what, int line)
{
    char buf[400];
    int st = mbk_last_status();
    snprintf(last_msg, sizeof last_msg, "%s", mbk_last_error());
    snprintf(buf, sizeof buf, "%s: returns %s", what, mbk_status_name(want));
    if (!mbk_test_record(rc == want, __FILE__, line, buf))
        fprintf(stderr, "    returned %s (%d): \"%s\"\n", mbk_status_name(rc), rc, last_msg);
    snprintf(buf, sizeof buf, "%s: records %s", what, mbk_status_name(want));
    mbk_test_record(st == want, __FILE__, line, buf);
    snprintf(buf, sizeof buf, "%s: non-empty message", what);
    mbk_test_record(last_msg[0] != '\0', __FILE__, line, buf);
    if (needle) {
        snprintf(buf, sizeof buf, "%s: message mentions \"%s\"", what, needle);
        if (!mbk_test_record(strstr(last_msg, needle) != NULL, __FILE__, line, buf))
            fprintf(stderr, "    message: \"%s\"\n", last_msg);
    }
}

/* ------------------------------------------------------------------ */
/* Test systems                                                         */
/* ------------------------------------------------------------------ */

static mbk_mass_props unit_body(void)
{
    return mbk_mass_props_from_central(1.0, mbk_vec3_make(0.1, 0.2, 0.3), mbk_mat33_diag(0.3, 0.4, 0.5));
}

static mbk_transform offset(double x) { return mbk_transform_from_axis_angle(mbk_vec3_make(0, 0.6, 0.8), 0.4, mbk_vec3_make(x, 0.1, 0)); }

/* Ground -> Pin -> Free, and a Ball on Ground: nq 1 + 7 + 4, nu 1 + 6 + 3. */
static mbk_system *make_tree(void)
{
    mbk_system *sys = mbk_multibody_create("bad input tree");
    mbk_matter *m = mbk_multibody_upd_matter(sys);
    mbk_mass_props mp = unit_body();
    mbk_transform X1 = offset(0.5), X2 = offset(-0.3), I = mbk_transform_identity();
    CHECK_INT(mbk_matter_add_body(m, 0, &X1, &mp, &I, mbk_mobilizer_pin()), 1);
    CHECK_INT(mbk_matter_add_body(m, 1, &X2, &mp, &X1, mbk_mobilizer_free()), 2);
    CHECK_INT(mbk_matter_add_body(m, 0, &X2, &mp, &X2, mbk_mobilizer_ball()), 3);
    return sys;
}

/* A fresh State realized exactly to `stage` (Topology..Acceleration), with
   non-trivial q and u once they exist. */
static mbk_state *state_at(const mbk_system *sys, mbk_stage stage)
{
    mbk_state *s = mbk_state_create();
    CHECK_INT(mbk_state_init(s, sys), MBK_OK);
    if (stage >= MBK_STAGE_MODEL) {
        CHECK_INT(mbk_system_realize(sys, s, MBK_STAGE_MODEL), MBK_OK);
        double *q = mbk_state_upd_q(s), *u = mbk_state_upd_u(s);
        for (int i = 0; i < mbk_state_get_nq(s); ++i) q[i] = 0.3 + 0.1 * i;
        for (int i = 0; i < mbk_state_get_nu(s); ++i) u[i] = 0.5 - 0.07 * i;
        CHECK_INT(mbk_system_realize(sys, s, stage), MBK_OK);
    }
    CHECK_INT(mbk_state_get_stage(s), stage);
    return s;
}

/* ------------------------------------------------------------------ */
/* mbk_matter_add_body                                                  */
/* ------------------------------------------------------------------ */

static void dummy_X(const void *impl, bool euler, const double *q, mbk_transform *X)
{
    (void)impl; (void)euler; (void)q;
    *X = mbk_transform_identity();
}
static void dummy_H(const void *impl, bool euler, const double *q, mbk_spatial_vec *H)
{
    (void)impl; (void)euler; (void)q;
    H[0] = mbk_spatial_vec_make(mbk_vec3_make(0, 0, 1), mbk_vec3_zero());
}
static const mbk_mobilizer_ops no_X_ops = {.name = "no X", .nu = 1, .nq = 1, .calc_H_FM = dummy_H};
static const mbk_mobilizer_ops too_many_u_ops = {.name = "7 u", .nu = 7, .nq = 7, .calc_X_FM = dummy_X, .calc_H_FM = dummy_H};
static const mbk_mobilizer_ops too_many_q_ops = {.name = "8 q", .nu = 1, .nq = 8, .calc_X_FM = dummy_X, .calc_H_FM = dummy_H};
static const mbk_mobilizer_ops negative_u_ops = {.name = "-1 u", .nu = -1, .nq = 0, .calc_X_FM = dummy_X};
static const mbk_mobilizer_ops no_H_ops = {.name = "no H", .nu = 1, .nq = 1, .calc_X_FM = dummy_X};
static const mbk_mobilizer_ops no_qdot_ops = {.name = "no qdot", .nu = 1, .nq = 2, .calc_X_FM = dummy_X, .calc_H_FM = dummy_H};

typedef struct add_case {
    const char *what;
    int parent;
    int null_X_PF, null_body, null_X_BM;
    mbk_transform X_PF, X_BM;
    mbk_mass_props mp;
    mbk_mobilizer mob;
    int want;
    const char *needle; /* the message must say this (NULL: anything) */
} add_case;

static void check_refused_add(mbk_system *sys, const add_case *c, int line)
{
    mbk_matter *m = mbk_multibody_upd_matter(sys);
    tree_snap before, after;
    take_tree(&before, sys);
    mbk_clear_error();
    int rc = mbk_matter_add_body(m, c->parent, c->null_X_PF ? NULL : &c->X_PF, c->null_body ? NULL : &c->mp,
                                 c->null_X_BM ? NULL : &c->X_BM, c->mob);
    refused(rc, c->want, c->needle, c->what, line);
    take_tree(&after, sys);
    char buf[300];
    snprintf(buf, sizeof buf, "%s: tree unchanged", c->what);
    mbk_test_record(memcmp(&before, &after, sizeof before) == 0, __FILE__, line, buf);
}

static void test_add_body(void)
{
    mbk_system *sys = make_tree();
    mbk_matter *m = mbk_multibody_upd_matter(sys);
    const double nan = NAN, inf = INFINITY;
    mbk_transform good = offset(0.2);
    mbk_mass_props mp = unit_body();
    mbk_mat33 R = mbk_mat33_from_axis_angle(mbk_vec3_normalize(mbk_vec3_make(1, 2, 3)), 0.7);
    int nb = mbk_matter_get_num_bodies(m);
    CHECK_INT(nb, 4);

    add_case base = {"", 1, 0, 0, 0, good, good, mp, {NULL, NULL}, MBK_EINVAL, NULL};
    base.mob = mbk_mobilizer_pin();
    add_case cases[48];
    int n = 0;
#define CASE(text, field_edit)                   \
    do {                                         \
        add_case c_ = base;                      \
        c_.what = "add_body: " text;             \
        field_edit;                              \
        cases[n++] = c_;                         \
    } while (0)
    CASE("parent -1", c_.parent = -1);
    CASE("parent = number of bodies", c_.parent = nb);
    CASE("parent 1000", c_.parent = 1000);
    CASE("negative mass", c_.mp.mass = -1.0);
    CASE("NaN mass", c_.mp.mass = nan);
    CASE("infinite mass", c_.mp.mass = inf);
    CASE("NaN com", c_.mp.com.y = nan);
    CASE("infinite com", c_.mp.com.z = -inf);
    CASE("NaN inertia", c_.mp.inertia.m[1][1] = nan);
    CASE("NaN off-diagonal inertia", c_.mp.inertia.m[0][2] = c_.mp.inertia.m[2][0] = nan);
    CASE("asymmetric inertia", (c_.mp.inertia.m[0][1] = 0.1, c_.needle = "not symmetric"));
    CASE("negative-definite inertia",
         (c_.mp.inertia = mbk_mat33_diag(-0.3, -0.4, -0.5), c_.needle = "not positive semidefinite"));
    CASE("indefinite inertia", (c_.mp.inertia = mbk_mat33_diag(1.0, 1.0, -0.5), c_.needle = "not positive semidefinite"));
    CASE("inertia violating the triangle inequality",
         (c_.mp.inertia = mbk_mat33_diag(1.0, 1.0, 3.0), c_.needle = "triangle inequality"));
    CASE("rotated inertia violating the triangle inequality",
         (c_.mp.inertia = mbk_mat33_mul_transpose(mbk_mat33_mul(R, mbk_mat33_diag(1.0, 2.0, 3.5)), R),
          c_.needle = "triangle inequality"));
    /* too large to check and simulate: said so with the limit, not called indefinite or massless */
    CASE("mass 1e306 kg, inertia 1e110 (overflows the checks)",
         (c_.mp = mbk_mass_props_from_central(1e306, mbk_vec3_zero(), mbk_mat33_diag(1e110, 1e110, 1e110)),
          c_.needle = "too large to check and simulate"));
    CASE("inertia 1e110 on 1 kg", (c_.mp.inertia = mbk_mat33_diag(1e110, 1e110, 1e110), c_.needle = "limit for each is 1e+100"));
    CASE("1e60 kg at 1e25 m (1e110 about the origin)",
         (c_.mp = mbk_mass_props_from_central(1e60, mbk_vec3_make(1e25, 0, 0), mbk_mat33_diag(1, 1, 1)),
          c_.needle = "MBK_MASS_PROPS_MAX"));
    CASE("NaN in X_PF.R", c_.X_PF.R.m[2][1] = nan);
    CASE("NaN in X_PF.p", c_.X_PF.p.x = nan);
    CASE("infinite X_PF.p", c_.X_PF.p.y = inf);
    CASE("NaN in X_BM.R", c_.X_BM.R.m[0][0] = nan);
    CASE("NaN in X_BM.p", c_.X_BM.p.z = nan);
    CASE("scaled X_PF.R", c_.X_PF.R = mbk_mat33_scale(R, 2.0));
    CASE("reflection X_PF.R", c_.X_PF.R = mbk_mat33_diag(1.0, 1.0, -1.0));
    CASE("sheared X_BM.R", c_.X_BM.R.m[0][1] += 0.1);
    CASE("slightly non-orthonormal X_BM.R", c_.X_BM.R.m[1][1] += 1e-6);
    CASE("zero X_PF.R", c_.X_PF.R = mbk_mat33_zero());
    CASE("NULL X_PF", c_.null_X_PF = 1);
    CASE("NULL mass properties", c_.null_body = 1);
    CASE("NULL X_BM", c_.null_X_BM = 1);
    CASE("mobilizer with NULL ops", c_.mob.ops = NULL);
    CASE("mobilizer without calc_X_FM", c_.mob.ops = &no_X_ops);
    CASE("mobilizer with 7 u", c_.mob.ops = &too_many_u_ops);
    CASE("mobilizer with 8 q", c_.mob.ops = &too_many_q_ops);
    CASE("mobilizer with -1 u", c_.mob.ops = &negative_u_ops);
    CASE("mobilizer with u but no calc_H_FM", c_.mob.ops = &no_H_ops);
    CASE("mobilizer with nq != nu and no calc_qdot", c_.mob.ops = &no_qdot_ops);
#undef CASE
    for (int i = 0; i < n; ++i) check_refused_add(sys, &cases[i], __LINE__);

    /* NULL matter */
    mbk_clear_error();
    refused(mbk_matter_add_body(NULL, 0, &good, &mp, &good, mbk_mobilizer_pin()), MBK_EINVAL, NULL,
            "add_body: NULL matter", __LINE__);

    /* Limit cases that are valid: zero mass with zero inertia, a point mass,
       an inertia exactly on the triangle inequality (a flat plate). */
    mbk_mass_props massless = mbk_mass_props_from_central(0.0, mbk_vec3_zero(), mbk_mat33_zero());
    mbk_mass_props point = mbk_mass_props_from_central(2.0, mbk_vec3_make(0.1, 0, 0), mbk_mat33_zero());
    mbk_mass_props plate = mbk_mass_props_from_central(1.0, mbk_vec3_zero(), mbk_mat33_diag(1.0, 2.0, 3.0));
    CHECK_INT(mbk_matter_add_body(m, 1, &good, &massless, &good, mbk_mobilizer_weld()), 4);
    CHECK_INT(mbk_matter_add_body(m, 4, &good, &point, &good, mbk_mobilizer_weld()), 5);
    CHECK_INT(mbk_matter_add_body(m, 5, &good, &plate, &good, mbk_mobilizer_slider()), 6);
    nb = 7;

    /* mbk_matter_add_body_unrealizable: principal moments that break the triangle
       inequality are accepted (and only by it); an indefinite inertia still is not. */
    mbk_mass_props broken = mbk_mass_props_from_central(1.0, mbk_vec3_zero(), mbk_mat33_diag(1.0, 1.0, 3.0));
    mbk_mass_props indefinite = mbk_mass_props_from_central(1.0, mbk_vec3_zero(), mbk_mat33_diag(1.0, 1.0, -1e-6));
    refused(mbk_matter_add_body(m, 6, &good, &broken, &good, mbk_mobilizer_pin()), MBK_EINVAL, "triangle",
            "add_body: triangle-breaking inertia", __LINE__);
    refused(mbk_matter_add_body_unrealizable(m, 6, &good, &indefinite, &good, mbk_mobilizer_pin()), MBK_EINVAL,
            "positive semidefinite", "add_body_unrealizable: indefinite inertia", __LINE__);
    refused(mbk_matter_add_body_unrealizable(m, 6, &good, NULL, &good, mbk_mobilizer_pin()), MBK_EINVAL, NULL,
            "add_body_unrealizable: NULL mass properties", __LINE__);
    CHECK_INT(mbk_matter_add_body_unrealizable(m, 6, &good, &broken, &good, mbk_mobilizer_pin()), 7);
    nb = 8;

    /* After the topology is realized: MBK_ESTAGE, and nothing changes (the
       topology stays realized and existing States stay valid). */
    CHECK_INT(mbk_system_realize_topology(sys), MBK_OK);
    mbk_state *s = state_at(sys, MBK_STAGE_VELOCITY);
    snap sb, sa;
    take(&sb, s);
    add_case late = base;
    late.what = "add_body after realize_topology";
    late.parent = 0;
    late.want = MBK_ESTAGE;
    check_refused_add(sys, &late, __LINE__);
    CHECK(strstr(last_msg, "mbk_system_invalidate_topology") != NULL);
    CHECK(mbk_system_is_topology_realized(sys));
    CHECK_INT(mbk_system_check_state(sys, s), MBK_OK);
    take(&sa, s);
    CHECK(memcmp(&sb, &sa, sizeof sb) == 0);
    CHECK_INT(mbk_state_get_nu(s), 1 + 6 + 3 + 1 + 1);

    /* ... and succeeds after mbk_system_invalidate_topology. */
    mbk_system_invalidate_topology(sys);
    CHECK_INT(mbk_matter_add_body(m, 0, &good, &mp, &good, mbk_mobilizer_pin()), nb);
    CHECK_INT(mbk_system_realize_topology(sys), MBK_OK);
    CHECK_INT(mbk_system_check_state(sys, s), MBK_ESTALE);
    mbk_state *s2 = state_at(sys, MBK_STAGE_ACCELERATION);
    CHECK_INT(mbk_state_get_nu(s2), 1 + 6 + 3 + 1 + 1 + 1);
    CHECK_INT(mbk_matter_get_num_bodies(m), nb + 1);
    mbk_state_destroy(s);
    mbk_state_destroy(s2);
    mbk_system_destroy(sys);
}

/* ------------------------------------------------------------------ */
/* Readers and operators                                                */
/* ------------------------------------------------------------------ */

/* Inputs the operators read. */
static double in_v[MAXU];
static mbk_spatial_vec in_F[MAXB];
static mbk_transform in_X;
static mbk_spatial_vec in_V;
static const mbk_vec3 station = {0.1, -0.2, 0.3};

/* One operator behind a uniform signature: in is its required input (NULL to
   test refusal; ignored when has_in is 0), out its output (likewise). */
typedef int (*op_fn)(const mbk_matter *m, mbk_state *s, int body, const void *in, void *out);

typedef struct op {
    const char *name;
    mbk_stage stage;   /* stage it needs */
    int takes_body;    /* has a body index */
    int has_in;        /* has a required pointer input */
    size_t out_bytes;  /* size of its output (0: returns a count, no output) */
    op_fn fn;
} op;

#define M_ (const mbk_matter *m, mbk_state *s, int b, const void *in, void *out)
#define UNUSED_ (void)m; (void)s; (void)b; (void)in; (void)out
static int op_num_q M_ { UNUSED_; return mbk_matter_get_body_num_q(m, s, b); }
static int op_num_u M_ { UNUSED_; return mbk_matter_get_body_num_u(m, s, b); }
static int op_q_start M_ { UNUSED_; return mbk_matter_get_body_q_start(m, s, b); }
static int op_u_start M_ { UNUSED_; return mbk_matter_get_body_u_start(m, s, b); }
static int op_fit_q M_ { UNUSED_; return mbk_matter_set_body_q_to_fit_transform(m, s, b, in); }
static int op_fit_u M_ { UNUSED_; return mbk_matter_set_body_u_to_fit_velocity(m, s, b, in); }
static int op_X M_ { UNUSED_; return mbk_matter_get_body_transform(m, s, b, out); }
static int op_V M_ { UNUSED_; return mbk_matter_get_body_velocity(m, s, b, out); }
static int op_A M_ { UNUSED_; return mbk_matter_get_body_acceleration(m, s, b, out); }
static int op_mass_matrix M_ { UNUSED_; return mbk_matter_calc_mass_matrix(m, s, out); }
static int op_M M_ { UNUSED_; return mbk_matter_multiply_by_M(m, s, in, out); }
static int op_Minv M_ { UNUSED_; return mbk_matter_multiply_by_M_inverse(m, s, in, out); }
static int op_residual M_ { UNUSED_; return mbk_matter_calc_residual_force(m, s, in_v, in_F, in_v, out); }
static int op_residual_no_forces M_ { UNUSED_; return mbk_matter_calc_residual_force(m, s, NULL, NULL, NULL, out); }
static int op_ke M_ { UNUSED_; return mbk_matter_calc_kinetic_energy(m, s, out); }
static int op_J M_ { UNUSED_; return mbk_matter_calc_system_jacobian(m, s, out); }
static int op_Ju M_ { UNUSED_; return mbk_matter_multiply_by_system_jacobian(m, s, in, out); }
static int op_JtF M_ { UNUSED_; return mbk_matter_multiply_by_system_jacobian_transpose(m, s, in, out); }
static int op_JS M_ { UNUSED_; return mbk_matter_calc_station_jacobian(m, s, b, station, out); }
static int op_station_p M_ { UNUSED_; return mbk_matter_get_station_location(m, s, b, station, out); }
static int op_station_v M_ { UNUSED_; return mbk_matter_get_station_velocity(m, s, b, station, out); }
static int op_station_a M_ { UNUSED_; return mbk_matter_get_station_acceleration(m, s, b, station, out); }
static int op_com M_ { UNUSED_; return mbk_matter_calc_mass_center_location(m, s, out); }
static int op_com_v M_ { UNUSED_; return mbk_matter_calc_mass_center_velocity(m, s, out); }
static int op_momentum M_ { UNUSED_; return mbk_matter_calc_system_momentum(m, s, out); }
static int op_set_euler M_ { UNUSED_; return mbk_matter_set_use_euler_angles(m, s, true); }
#undef M_
#undef UNUSED_

static const op ops[] = {
    {"mbk_matter_set_use_euler_angles", MBK_STAGE_TOPOLOGY, 0, 0, 0, op_set_euler},
    {"mbk_matter_get_body_num_q", MBK_STAGE_MODEL, 1, 0, 0, op_num_q},
    {"mbk_matter_get_body_num_u", MBK_STAGE_MODEL, 1, 0, 0, op_num_u},
    {"mbk_matter_get_body_q_start", MBK_STAGE_MODEL, 1, 0, 0, op_q_start},
    {"mbk_matter_get_body_u_start", MBK_STAGE_MODEL, 1, 0, 0, op_u_start},
    {"mbk_matter_set_body_q_to_fit_transform", MBK_STAGE_MODEL, 1, 1, 0, op_fit_q},
    {"mbk_matter_get_body_transform", MBK_STAGE_POSITION, 1, 0, sizeof(mbk_transform), op_X},
    {"mbk_matter_set_body_u_to_fit_velocity", MBK_STAGE_POSITION, 1, 1, 0, op_fit_u},
    {"mbk_matter_calc_mass_matrix", MBK_STAGE_POSITION, 0, 0, sizeof(double) * MAXU * MAXU, op_mass_matrix},
    {"mbk_matter_multiply_by_M", MBK_STAGE_POSITION, 0, 1, sizeof(double) * MAXU, op_M},
    {"mbk_matter_multiply_by_M_inverse", MBK_STAGE_POSITION, 0, 1, sizeof(double) * MAXU, op_Minv},
    {"mbk_matter_calc_system_jacobian", MBK_STAGE_POSITION, 0, 0, sizeof(double) * 6 * MAXB * MAXU, op_J},
    {"mbk_matter_multiply_by_system_jacobian", MBK_STAGE_POSITION, 0, 1, sizeof(mbk_spatial_vec) * MAXB, op_Ju},
    {"mbk_matter_multiply_by_system_jacobian_transpose", MBK_STAGE_POSITION, 0, 1, sizeof(double) * MAXU, op_JtF},
    {"mbk_matter_calc_station_jacobian", MBK_STAGE_POSITION, 1, 0, sizeof(double) * 3 * MAXU, op_JS},
    {"mbk_matter_get_station_location", MBK_STAGE_POSITION, 1, 0, sizeof(mbk_vec3), op_station_p},
    {"mbk_matter_calc_mass_center_location", MBK_STAGE_POSITION, 0, 0, sizeof(mbk_vec3), op_com},
    {"mbk_matter_get_body_velocity", MBK_STAGE_VELOCITY, 1, 0, sizeof(mbk_spatial_vec), op_V},
    {"mbk_matter_calc_residual_force", MBK_STAGE_VELOCITY, 0, 0, sizeof(double) * MAXU, op_residual},
    {"mbk_matter_calc_residual_force (no forces)", MBK_STAGE_VELOCITY, 0, 0, sizeof(double) * MAXU, op_residual_no_forces},
    {"mbk_matter_calc_kinetic_energy", MBK_STAGE_VELOCITY, 0, 0, sizeof(double), op_ke},
    {"mbk_matter_get_station_velocity", MBK_STAGE_VELOCITY, 1, 0, sizeof(mbk_vec3), op_station_v},
    {"mbk_matter_calc_mass_center_velocity", MBK_STAGE_VELOCITY, 0, 0, sizeof(mbk_vec3), op_com_v},
    {"mbk_matter_calc_system_momentum", MBK_STAGE_VELOCITY, 0, 0, sizeof(mbk_spatial_vec), op_momentum},
    {"mbk_matter_get_body_acceleration", MBK_STAGE_ACCELERATION, 1, 0, sizeof(mbk_spatial_vec), op_A},
    {"mbk_matter_get_station_acceleration", MBK_STAGE_ACCELERATION, 1, 0, sizeof(mbk_vec3), op_station_a},
};
#define NOPS ((int)(sizeof ops / sizeof ops[0]))

/* The required input of op o (its type depends on the op). */
static const void *input_of(const op *o)
{
    if (o->fn == op_fit_q) return &in_X;
    if (o->fn == op_fit_u) return &in_V;
    if (o->fn == op_JtF) return in_F;
    return in_v;
}

static unsigned char out_buf[sizeof(double) * 6 * MAXB * MAXU], out_ref[sizeof out_buf];

/* Call o on s expecting refusal with status want; checks that s and the
   output buffer are unchanged. */
static void expect_refusal(const op *o, const mbk_matter *m, mbk_state *s, int body, int null_in, int null_out,
                           int want, const char *needle, const char *why, int line)
{
    char what[300];
    snap before, after;
    snprintf(what, sizeof what, "%s (%s)", o->name, why);
    if (s) take(&before, s);
    memset(out_buf, 0xA5, sizeof out_buf);
    memset(out_ref, 0xA5, sizeof out_ref);
    mbk_clear_error();
    int rc = o->fn(m, s, body, null_in ? NULL : input_of(o), null_out ? NULL : out_buf);
    refused(rc, want, needle, what, line);
    char buf[512];
    if (want == MBK_ESTAGE) {
        /* The message also names the function called (o->name up to a space). */
        char fname[120];
        snprintf(fname, sizeof fname, "%s", o->name);
        fname[strcspn(fname, " ")] = '\0';
        snprintf(buf, sizeof buf, "%s: message names %s", what, fname);
        if (!mbk_test_record(strstr(last_msg, fname) != NULL, __FILE__, line, buf))
            fprintf(stderr, "    message: \"%s\"\n", last_msg);
    }
    snprintf(buf, sizeof buf, "%s: output untouched", what);
    mbk_test_record(memcmp(out_buf, out_ref, sizeof out_buf) == 0, __FILE__, line, buf);
    if (s) {
        take(&after, s);
        snprintf(buf, sizeof buf, "%s: State unchanged", what);
        mbk_test_record(memcmp(&before, &after, sizeof before) == 0, __FILE__, line, buf);
    }
}

static void test_operators(void)
{
    mbk_system *sys = make_tree();
    const mbk_matter *m = mbk_multibody_get_matter(sys);
    CHECK_INT(mbk_system_realize_topology(sys), MBK_OK);
    int nb = mbk_matter_get_num_bodies(m);
    for (int i = 0; i < MAXU; ++i) in_v[i] = 0.1 * i - 0.4;
    for (int b = 0; b < MAXB; ++b) in_F[b] = mbk_spatial_vec_make(mbk_vec3_make(b, 1, -1), mbk_vec3_make(0.5, -b, 2));
    in_X = offset(0.3);
    in_V = mbk_spatial_vec_make(mbk_vec3_make(0.1, 0.2, 0.3), mbk_vec3_make(-0.3, 0.2, 0.1));

    mbk_state *at[MBK_NUM_STAGES] = {NULL};
    for (int g = MBK_STAGE_TOPOLOGY; g <= MBK_STAGE_ACCELERATION; ++g) at[g] = state_at(sys, (mbk_stage)g);

    /* States that are not usable: uninitialized, and one of a System with
       another topology (Systems built alike share States by design). */
    mbk_state *blank = mbk_state_create();
    mbk_system *other = mbk_multibody_create("other");
    {
        mbk_mass_props mp = unit_body();
        mbk_transform I = mbk_transform_identity();
        CHECK_INT(mbk_matter_add_body(mbk_multibody_upd_matter(other), 0, &I, &mp, &I, mbk_mobilizer_slider()), 1);
    }
    CHECK_INT(mbk_system_realize_topology(other), MBK_OK);
    mbk_state *foreign = state_at(other, MBK_STAGE_ACCELERATION);

    mbk_state *work = mbk_state_create();
    int counted = 0;
    for (int i = 0; i < NOPS; ++i) {
        const op *o = &ops[i];
        const char *need = mbk_stage_name(o->stage);
        int body = o->takes_body ? 2 : 0;
        /* Below its stage: MBK_ESTAGE naming the stage needed. */
        for (int g = MBK_STAGE_TOPOLOGY; g < (int)o->stage; ++g) {
            char why[80];
            snprintf(why, sizeof why, "State at %s", mbk_stage_name((mbk_stage)g));
            expect_refusal(o, m, at[g], body, 0, 0, MBK_ESTAGE, need, why, __LINE__);
        }
        /* At its stage (on a copy, since some of them change the State). */
        CHECK_INT(mbk_state_copy(work, at[o->stage]), MBK_OK);
        if (o->takes_body) {
            expect_refusal(o, m, work, -1, 0, 0, MBK_EINVAL, "-1", "body -1", __LINE__);
            expect_refusal(o, m, work, nb, 0, 0, MBK_EINVAL, "out of range", "body = number of bodies", __LINE__);
            expect_refusal(o, m, work, 1 << 30, 0, 0, MBK_EINVAL, NULL, "body 2^30", __LINE__);
        }
        if (o->has_in) expect_refusal(o, m, work, body, 1, 0, MBK_EINVAL, NULL, "NULL input", __LINE__);
        if (o->out_bytes) expect_refusal(o, m, work, body, 0, 1, MBK_EINVAL, NULL, "NULL output", __LINE__);
        expect_refusal(o, NULL, work, body, 0, 0, MBK_EINVAL, "NULL", "NULL matter", __LINE__);
        expect_refusal(o, m, NULL, body, 0, 0, MBK_EINVAL, "NULL", "NULL State", __LINE__);
        expect_refusal(o, m, blank, body, 0, 0, MBK_EINVAL, "mbk_state_init", "uninitialized State", __LINE__);
        expect_refusal(o, m, foreign, body, 0, 0, MBK_ESTALE, NULL, "State of another System", __LINE__);
        /* ... and then it works. */
        mbk_clear_error();
        int rc = o->fn(m, work, body, input_of(o), out_buf);
        if (!CHECK(rc >= 0)) fprintf(stderr, "    %s failed at its stage: %s\n", o->name, mbk_last_error());
        ++counted;
    }
    CHECK_INT(counted, NOPS);

    /* Readers without a State or returning values instead of a status. */
    mbk_mass_props mp, mp_ref;
    memset(&mp, 0xA5, sizeof mp);
    mp_ref = mp;
    mbk_clear_error();
    refused(mbk_matter_get_body_mass_props(m, -1, &mp), MBK_EINVAL, NULL, "get_body_mass_props body -1", __LINE__);
    mbk_clear_error();
    refused(mbk_matter_get_body_mass_props(m, nb, &mp), MBK_EINVAL, NULL, "get_body_mass_props body nb", __LINE__);
    mbk_clear_error();
    refused(mbk_matter_get_body_mass_props(m, 1, NULL), MBK_EINVAL, NULL, "get_body_mass_props NULL output", __LINE__);
    mbk_clear_error();
    refused(mbk_matter_get_body_mass_props(NULL, 1, &mp), MBK_EINVAL, NULL, "get_body_mass_props NULL matter", __LINE__);
    CHECK(memcmp(&mp, &mp_ref, sizeof mp) == 0);
    CHECK_INT(mbk_matter_get_body_mass_props(m, 0, &mp), MBK_OK); /* Ground: zero mass */
    CHECK(mp.mass == 0.0);
    CHECK_INT(mbk_matter_get_parent(m, -1), -1);
    CHECK_INT(mbk_matter_get_parent(m, nb), -1);
    CHECK_INT(mbk_matter_get_parent(NULL, 1), -1);
    CHECK_INT(mbk_matter_get_parent(m, 0), -1);
    CHECK_INT(mbk_matter_get_num_bodies(NULL), 0);
    CHECK(mbk_matter_get_total_mass(NULL) == 0.0);
    CHECK(!mbk_matter_get_use_euler_angles(NULL, at[MBK_STAGE_MODEL]));
    CHECK(!mbk_matter_get_use_euler_angles(m, NULL));
    CHECK(!mbk_matter_get_use_euler_angles(m, blank));

    /* Force accumulators: upd needs Velocity, get needs Dynamics; NULL on failure. */
    for (int g = MBK_STAGE_TOPOLOGY; g <= MBK_STAGE_ACCELERATION; ++g) {
        snap before, after;
        take(&before, at[g]);
        int upd_ok = g >= MBK_STAGE_VELOCITY, get_ok = g >= MBK_STAGE_DYNAMICS;
        mbk_clear_error();
        CHECK((mbk_multibody_upd_body_forces(sys, at[g]) != NULL) == upd_ok);
        if (!upd_ok) refused(mbk_last_status(), MBK_ESTAGE, "Velocity", "upd_body_forces below Velocity", __LINE__);
        mbk_clear_error();
        CHECK((mbk_multibody_upd_mobility_forces(sys, at[g]) != NULL) == upd_ok);
        if (!upd_ok) refused(mbk_last_status(), MBK_ESTAGE, "Velocity", "upd_mobility_forces below Velocity", __LINE__);
        mbk_clear_error();
        CHECK((mbk_multibody_get_body_forces(sys, at[g]) != NULL) == get_ok);
        if (!get_ok) refused(mbk_last_status(), MBK_ESTAGE, "Dynamics", "get_body_forces below Dynamics", __LINE__);
        mbk_clear_error();
        CHECK((mbk_multibody_get_mobility_forces(sys, at[g]) != NULL) == get_ok);
        if (!get_ok) refused(mbk_last_status(), MBK_ESTAGE, "Dynamics", "get_mobility_forces below Dynamics", __LINE__);
        take(&after, at[g]);
        CHECK(memcmp(&before, &after, sizeof before) == 0);
    }
    mbk_clear_error();
    CHECK(mbk_multibody_get_body_forces(sys, NULL) == NULL);
    refused(mbk_last_status(), MBK_EINVAL, NULL, "get_body_forces NULL State", __LINE__);
    mbk_clear_error();
    CHECK(mbk_multibody_upd_mobility_forces(sys, foreign) == NULL);
    refused(mbk_last_status(), MBK_ESTALE, NULL, "upd_mobility_forces foreign State", __LINE__);

    /* Fitting refuses bad poses and velocities without touching q or u. */
    {
        mbk_state *s = at[MBK_STAGE_POSITION];
        snap before, after;
        mbk_transform bad_X = offset(0.1);
        bad_X.R.m[0][0] = NAN;
        take(&before, s);
        mbk_clear_error();
        refused(mbk_matter_set_body_q_to_fit_transform(m, s, 2, &bad_X), MBK_EINVAL, NULL, "fit q to NaN X_FM", __LINE__);
        bad_X = offset(0.1);
        bad_X.R = mbk_mat33_scale(bad_X.R, 1.5);
        mbk_clear_error();
        refused(mbk_matter_set_body_q_to_fit_transform(m, s, 2, &bad_X), MBK_EINVAL, NULL, "fit q to scaled R", __LINE__);
        take(&after, s);
        CHECK(memcmp(&before, &after, sizeof before) == 0);
        mbk_spatial_vec bad_V = in_V;
        bad_V.w.y = NAN;
        mbk_clear_error();
        int rc = mbk_matter_set_body_u_to_fit_velocity(m, s, 2, &bad_V);
        /* Read the message before take(): its getters may clear the record. */
        CHECK(mbk_last_error()[0] != '\0');
        take(&after, s);
        if (!CHECK(rc == MBK_EINVAL || rc == MBK_ENOTFINITE))
            fprintf(stderr, "    fit u to NaN V_FM returned %s\n", mbk_status_name(rc));
        CHECK(memcmp(&before, &after, sizeof before) == 0);
    }

    /* Stale State: after the topology is invalidated every reader refuses
       with MBK_ESTALE, also once the topology is realized again. */
    mbk_system_invalidate_topology(sys);
    for (int pass = 0; pass < 2; ++pass) {
        for (int i = 0; i < NOPS; ++i) {
            const op *o = &ops[i];
            expect_refusal(o, m, at[MBK_STAGE_ACCELERATION], o->takes_body ? 2 : 0, 0, 0, MBK_ESTALE, NULL,
                           pass ? "stale State, topology realized again" : "stale State", __LINE__);
        }
        mbk_clear_error();
        CHECK(mbk_multibody_get_body_forces(sys, at[MBK_STAGE_ACCELERATION]) == NULL);
        refused(mbk_last_status(), MBK_ESTALE, NULL, "get_body_forces stale State", __LINE__);
        if (pass == 0) CHECK_INT(mbk_system_realize_topology(sys), MBK_OK);
    }
    mbk_state *fresh = state_at(sys, MBK_STAGE_ACCELERATION);
    mbk_transform X;
    CHECK_INT(mbk_matter_get_body_transform(m, fresh, 2, &X), MBK_OK);

    for (int g = MBK_STAGE_TOPOLOGY; g <= MBK_STAGE_ACCELERATION; ++g) mbk_state_destroy(at[g]);
    mbk_state_destroy(blank);
    mbk_state_destroy(foreign);
    mbk_state_destroy(work);
    mbk_state_destroy(fresh);
    mbk_system_destroy(other);
    mbk_system_destroy(sys);
}

/* ------------------------------------------------------------------ */
/* Systems without matter                                               */
/* ------------------------------------------------------------------ */

static void test_plain_system(void)
{
    mbk_system *plain = mbk_system_create("plain");
    CHECK(mbk_multibody_get_matter(plain) == NULL);
    CHECK(mbk_multibody_upd_matter(plain) == NULL);
    CHECK(mbk_multibody_get_matter(NULL) == NULL);
    CHECK(mbk_multibody_upd_matter(NULL) == NULL);
    CHECK_INT(mbk_system_realize_topology(plain), MBK_OK);
    mbk_state *s = mbk_state_create();
    CHECK_INT(mbk_state_init(s, plain), MBK_OK);
    CHECK_INT(mbk_system_realize(plain, s, MBK_STAGE_ACCELERATION), MBK_OK);
    mbk_clear_error();
    CHECK(mbk_multibody_get_body_forces(plain, s) == NULL);
    refused(mbk_last_status(), MBK_EINVAL, "mbk_multibody_create", "get_body_forces on a plain System", __LINE__);
    mbk_clear_error();
    CHECK(mbk_multibody_upd_mobility_forces(plain, s) == NULL);
    refused(mbk_last_status(), MBK_EINVAL, NULL, "upd_mobility_forces on a plain System", __LINE__);
    mbk_clear_error();
    CHECK(mbk_multibody_get_mobility_forces(NULL, s) == NULL);
    refused(mbk_last_status(), MBK_EINVAL, NULL, "get_mobility_forces on a NULL System", __LINE__);
    mbk_state_destroy(s);
    mbk_system_destroy(plain);
}

/* ------------------------------------------------------------------ */
/* Singular articulated inertia                                         */
/* ------------------------------------------------------------------ */

/* Ground -> Pin (mass 1) -> Pin carrying `tip`: nu = 2. */
static mbk_system *make_chain(mbk_mass_props tip, mbk_mobilizer tip_mob)
{
    mbk_system *sys = mbk_multibody_create("chain");
    mbk_matter *m = mbk_multibody_upd_matter(sys);
    mbk_mass_props mp = unit_body();
    mbk_transform X1 = offset(0.5), I = mbk_transform_identity();
    CHECK_INT(mbk_matter_add_body(m, 0, &X1, &mp, &I, mbk_mobilizer_pin()), 1);
    CHECK_INT(mbk_matter_add_body(m, 1, &X1, &tip, &I, tip_mob), 2);
    CHECK_INT(mbk_system_realize_topology(sys), MBK_OK);
    return sys;
}

static void check_singular(mbk_system *sys, const char *what, int line)
{
    const mbk_matter *m = mbk_multibody_get_matter(sys);
    mbk_state *s = state_at(sys, MBK_STAGE_VELOCITY);
    char buf[300];
    snap before, after;
    take(&before, s);

    /* Dynamics needs only the forces (the articulated inertias are lazy): it succeeds,
       and inverse dynamics works; Acceleration is refused. */
    snprintf(buf, sizeof buf, "%s: realize Dynamics", what);
    mbk_test_record(mbk_system_realize(sys, s, MBK_STAGE_DYNAMICS) == MBK_OK, __FILE__, line, buf);
    take(&after, s);
    snprintf(buf, sizeof buf, "%s: State at Dynamics, variables unchanged", what);
    mbk_test_record(after.stage == MBK_STAGE_DYNAMICS && after.have_qdot && !after.have_udot &&
                    memcmp(after.y, before.y, sizeof after.y) == 0, __FILE__, line, buf);

    snprintf(buf, sizeof buf, "%s: realize Acceleration", what);
    mbk_clear_error();
    refused(mbk_system_realize(sys, s, MBK_STAGE_ACCELERATION), MBK_ESINGULAR, "singular", buf, line);
    mbk_test_record(mbk_state_get_udot(s) == NULL, __FILE__, line, "no udot after a singular realization");

    double ydot[MAXQ + MAXU];
    snprintf(buf, sizeof buf, "%s: calc_ydot", what);
    mbk_clear_error();
    refused(mbk_system_calc_ydot(sys, s, 0.0, NULL, ydot), MBK_ESINGULAR, "singular", buf, line);

    double v[MAXU] = {1.0, -1.0}, out[MAXU];
    memset(out, 0xA5, sizeof out);
    double ref[MAXU];
    memset(ref, 0xA5, sizeof ref);
    snprintf(buf, sizeof buf, "%s: multiply_by_M_inverse", what);
    mbk_clear_error();
    refused(mbk_matter_multiply_by_M_inverse(m, s, v, out), MBK_ESINGULAR, "singular", buf, line);
    mbk_test_record(memcmp(out, ref, sizeof out) == 0, __FILE__, line, "M^-1 output untouched");

    /* What does not need the articulated inertias still works. */
    double Mv[MAXU];
    mbk_test_record(mbk_matter_multiply_by_M(m, s, v, Mv) == MBK_OK && isfinite(Mv[0]) && isfinite(Mv[1]),
                    __FILE__, line, "multiply_by_M still works");
    mbk_state_destroy(s);
}

static void test_singular(void)
{
    mbk_mass_props massless = mbk_mass_props_from_central(0.0, mbk_vec3_make(0.2, 0.1, 0), mbk_mat33_zero());
    mbk_system *sys = make_chain(massless, mbk_mobilizer_pin());
    check_singular(sys, "massless tip on a Pin", __LINE__);
    mbk_system_destroy(sys);

    sys = make_chain(massless, mbk_mobilizer_ball());
    check_singular(sys, "massless tip on a Ball", __LINE__);
    mbk_system_destroy(sys);

    /* A massless body is fine when a massive child carries its mobility. */
    {
        mbk_system *ok = mbk_multibody_create("massless middle");
        mbk_matter *m = mbk_multibody_upd_matter(ok);
        mbk_mass_props mp = unit_body();
        mbk_transform X1 = offset(0.5), I = mbk_transform_identity();
        CHECK_INT(mbk_matter_add_body(m, 0, &X1, &massless, &I, mbk_mobilizer_pin()), 1);
        CHECK_INT(mbk_matter_add_body(m, 1, &X1, &mp, &I, mbk_mobilizer_weld()), 2);
        CHECK_INT(mbk_system_realize_topology(ok), MBK_OK);
        mbk_state *s = state_at(ok, MBK_STAGE_ACCELERATION);
        const double *ud = mbk_state_get_udot(s);
        CHECK(ud && isfinite(ud[0]));
        mbk_state_destroy(s);
        mbk_system_destroy(ok);
    }

    /* Overflow is not a singularity: a body 1e200 m out along a Slider makes the Pin's
       articulated inertia infinite; the message says so instead of blaming mass. */
    {
        mbk_mass_props mp = unit_body();
        sys = make_chain(mp, mbk_mobilizer_slider());
        mbk_state *s = state_at(sys, MBK_STAGE_MODEL);
        mbk_state_upd_q(s)[1] = 1e200;
        CHECK_INT(mbk_system_realize(sys, s, MBK_STAGE_VELOCITY), MBK_OK);
        mbk_clear_error();
        /* the articulated inertias are computed at Acceleration (lazily) */
        refused(mbk_system_realize(sys, s, MBK_STAGE_ACCELERATION), MBK_ENOTFINITE, "overflowed", "slider at 1e200 m",
                __LINE__);
        CHECK(strstr(last_msg, "massless") == NULL && strstr(last_msg, "1e+100") != NULL);
        CHECK_INT(mbk_state_get_stage(s), MBK_STAGE_DYNAMICS);
        mbk_state_destroy(s);
        mbk_system_destroy(sys);
    }

    /* A point mass on the Pin's axis has no inertia about it either: the
       articulated inertia along the mobility is zero up to round-off. */
    mbk_mass_props on_axis = mbk_mass_props_from_central(1.0, mbk_vec3_make(0, 0, 0.7), mbk_mat33_zero());
    sys = make_chain(on_axis, mbk_mobilizer_pin());
    /* Singular to round-off, not exactly: the pivot test is relative to the terms that form it. */
    check_singular(sys, "point mass on the Pin axis", __LINE__);
    mbk_system_destroy(sys);
}

int main(void)
{
    test_add_body();
    test_operators();
    test_plain_system();
    test_singular();
    return mbk_test_finish();
}
