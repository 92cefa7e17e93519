/* Scratch entries (mbk_state_allocate_scratch): work space a copy does not carry.
 * A subsystem allocates cache entries, a discrete variable and scratch between them;
 * a copy must carry every value but the scratch, the scratch must stay writable and
 * aligned, bad requests must be refused with a message, and a multibody State copied
 * after a derivative call (which fills matter's scratch) must give the same bits. */
#include <mbk/mbk.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "mbk_test.h"

enum { SCRATCH_BYTES = 4096 };

typedef struct owner {
    int cache_a, scratch, cache_b, disc, scratch_small;
    int bad_rc[3]; /* statuses of the bad requests made from realize_topology */
} owner;

static int owner_topology(void *impl, const mbk_subsystem_ctx *c, mbk_state *s)
{
    owner *o = impl;
    int k = mbk_subsystem_ctx_get_index(c);
    o->cache_a = mbk_state_allocate_cache(s, k, MBK_STAGE_POSITION, MBK_STAGE_POSITION, &mbk_value_double, NULL);
    o->scratch = mbk_state_allocate_scratch(s, k, SCRATCH_BYTES, 64);
    double v = 7.0;
    o->disc = mbk_state_allocate_discrete(s, k, MBK_STAGE_POSITION, &mbk_value_double, &v);
    o->cache_b = mbk_state_allocate_cache(s, k, MBK_STAGE_POSITION, MBK_STAGE_POSITION, &mbk_value_double, NULL);
    o->scratch_small = mbk_state_allocate_scratch(s, k, 3, 1);
    o->bad_rc[0] = mbk_state_allocate_scratch(s, k, 0, 8);
    o->bad_rc[1] = mbk_state_allocate_scratch(s, k, 16, 3);
    o->bad_rc[2] = mbk_state_allocate_scratch(s, k, 16, 128);
    mbk_clear_error();
    return o->cache_a < 0 || o->scratch < 0 || o->disc < 0 || o->cache_b < 0 || o->scratch_small < 0;
}

static const mbk_subsystem_ops owner_ops = {.name = "owner", .realize_topology = owner_topology};

/* Fill the State's values of the owner subsystem with a pattern. */
static void fill(mbk_state *s, int k, const owner *o, unsigned char pattern)
{
    memset(mbk_state_upd_cache(s, k, o->scratch), pattern, SCRATCH_BYTES);
    memset(mbk_state_upd_cache(s, k, o->scratch_small), pattern, 3);
    *(double *)mbk_state_upd_cache(s, k, o->cache_a) = pattern + 0.5;
    *(double *)mbk_state_upd_cache(s, k, o->cache_b) = pattern + 0.25;
    *(double *)mbk_state_upd_discrete(s, k, o->disc) = pattern + 0.125;
}

static int all_bytes(const unsigned char *p, size_t n, unsigned char v)
{
    for (size_t i = 0; i < n; ++i)
        if (p[i] != v) return 0;
    return 1;
}

static void test_copy_skips_scratch(void)
{
    owner o;
    memset(&o, 0, sizeof o);
    mbk_system *sys = mbk_system_create("scratch");
    int k = mbk_system_add_subsystem(sys, &owner_ops, &o);
    CHECK_INT(mbk_system_realize_topology(sys), MBK_OK);
    /* bad requests: a status each, the System still usable */
    CHECK_INT(o.bad_rc[0], MBK_EINVAL);
    CHECK_INT(o.bad_rc[1], MBK_EINVAL);
    CHECK_INT(o.bad_rc[2], MBK_EINVAL);
    mbk_state *src = mbk_state_create(), *dst = mbk_state_create();
    CHECK_INT(mbk_state_copy(src, mbk_system_get_default_state(sys)), MBK_OK);
    CHECK_INT(mbk_state_copy(dst, src), MBK_OK);
    /* outside realize_topology / realize_model: refused, naming the rule */
    CHECK_INT(mbk_state_allocate_scratch(src, k, 8, 8), MBK_ESTAGE);
    CHECK(strstr(mbk_last_error(), "realize_topology") != NULL);
    /* aligned as asked (64), in memory and not only within the block: in the System's
       default State, a copy of it and a copy into a State that had no block */
    const unsigned char *scr = mbk_state_upd_cache(src, k, o.scratch);
    CHECK(scr != NULL && ((uintptr_t)scr % 64) == 0);
    CHECK(((uintptr_t)mbk_state_upd_cache(dst, k, o.scratch) % 64) == 0);
    CHECK(((uintptr_t)mbk_state_get_cache(mbk_system_get_default_state(sys), k, o.scratch) % 64) == 0);
    fill(src, k, &o, 0xA5);
    fill(dst, k, &o, 0x3C);
    CHECK_INT(mbk_state_copy(dst, src), MBK_OK);
    /* every value but the scratch came over */
    CHECK(*(const double *)mbk_state_upd_cache(dst, k, o.cache_a) == 0xA5 + 0.5);
    CHECK(*(const double *)mbk_state_upd_cache(dst, k, o.cache_b) == 0xA5 + 0.25);
    CHECK(*(const double *)mbk_state_get_discrete(dst, k, o.disc) == 0xA5 + 0.125);
    /* the scratch did not: dst keeps its own bytes */
    CHECK(all_bytes(mbk_state_upd_cache(dst, k, o.scratch), SCRATCH_BYTES, 0x3C));
    CHECK(all_bytes(mbk_state_upd_cache(dst, k, o.scratch_small), 3, 0x3C));
    CHECK(all_bytes(mbk_state_upd_cache(src, k, o.scratch), SCRATCH_BYTES, 0xA5));
    /* the State's size still counts the scratch it holds */
    CHECK(mbk_state_get_size_in_bytes(src) >= SCRATCH_BYTES + 3);
    mbk_state_destroy(src);
    mbk_state_destroy(dst);
    mbk_system_destroy(sys);
}

/* Matter keeps its work space (mass matrix, derivatives) in scratch: a copy of a State
   that has just filled it gives the same derivatives, bit for bit, as the original. */
static void test_matter_copy_same_bits(void)
{
    mbk_system *sys = mbk_multibody_create("chain");
    mbk_matter *m = mbk_multibody_upd_matter(sys);
    for (int i = 1; i <= 6; ++i) {
        mbk_transform X_PF = mbk_transform_make(mbk_mat33_identity(), mbk_vec3_make(i == 1 ? 0.0 : 1.0, 0, 0));
        mbk_transform X_BM = mbk_transform_identity();
        mbk_mass_props mp = mbk_mass_props_from_central(1.0 + 0.1 * i, mbk_vec3_make(0.5, 0, 0),
                                                        mbk_mat33_diag(0.01, 0.1, 0.1));
        CHECK(mbk_matter_add_body(m, i - 1, &X_PF, &mp, &X_BM, i == 3 ? mbk_mobilizer_ball() : mbk_mobilizer_pin()) == i);
    }
    mbk_force_add_gravity(mbk_multibody_upd_forces(sys), mbk_vec3_make(0, -9.81, 0));
    CHECK_INT(mbk_system_realize_topology(sys), MBK_OK);
    mbk_state *a = mbk_state_create(), *b = mbk_state_create();
    CHECK_INT(mbk_state_copy(a, mbk_system_get_default_state(sys)), MBK_OK);
    CHECK_INT(mbk_system_realize(sys, a, MBK_STAGE_INSTANCE), MBK_OK);
    double *q = mbk_state_upd_q(a), *u = mbk_state_upd_u(a);
    const int nq = mbk_state_get_nq(a), nu = mbk_state_get_nu(a);
    for (int i = 0; i < nq; ++i) q[i] += 0.1 * (i + 1);
    for (int i = 0; i < nu; ++i) u[i] = 0.3 - 0.1 * i;
    double *da = calloc((size_t)nu * (size_t)(nq + nu), sizeof(double));
    double *db = calloc((size_t)nu * (size_t)(nq + nu), sizeof(double));
    CHECK_INT(mbk_system_calc_acceleration_derivatives(sys, a, da, da + (size_t)nu * (size_t)nq), MBK_OK);
    CHECK_INT(mbk_state_copy(b, a), MBK_OK);
    CHECK_INT(mbk_system_calc_acceleration_derivatives(sys, b, db, db + (size_t)nu * (size_t)nq), MBK_OK);
    CHECK(memcmp(da, db, (size_t)nu * (size_t)(nq + nu) * sizeof(double)) == 0);
    CHECK(memcmp(mbk_state_get_udot(a), mbk_state_get_udot(b), (size_t)nu * sizeof(double)) == 0);
    free(da);
    free(db);
    mbk_state_destroy(a);
    mbk_state_destroy(b);
    mbk_system_destroy(sys);
}

int main(void)
{
    test_copy_skips_scratch();
    test_matter_copy_same_bits();
    return mbk_test_finish();
}
