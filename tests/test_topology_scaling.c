/* Realizing Topology takes memory in proportion to the bodies: the bytes
 * allocated through the allocator hooks (mbk_set_allocator) while a chain of
 * 1000 and one of 8000 pins realize their Topology grow about 8 times. The
 * derivatives' index of the sparse factor M = L^T D L once was built for every
 * tree; a chain's has sum(depth) = n^2 / 2 entries (64 times the bytes for 8
 * times the bodies: 2.5 GB and 3 s at 20 000 links), though a chain that deep
 * never uses it. Also: such a chain's derivatives still agree with the
 * articulated-body solve they take instead (dudot/du of a chain at u = 0 is 0
 * without velocity-dependent forces). */
#include <stdlib.h>
#include <string.h>

#include <mbk/mbk.h>

#include "mbk_test.h"

static size_t allocated; /* bytes asked for since the last reset */

static void *count_malloc(size_t n, void *user)
{
    (void)user;
    allocated += n;
    return malloc(n);
}

static void *count_realloc(void *p, size_t n, void *user)
{
    (void)user;
    allocated += n;
    return realloc(p, n);
}

static void count_free(void *p, void *user)
{
    (void)user;
    free(p);
}

/* A chain of n pins about z (1 kg, 1 m links) under gravity along -y, its Topology not yet realized. */
static mbk_system *chain(int n)
{
    mbk_system *sys = mbk_multibody_create("chain");
    mbk_matter *m = mbk_multibody_upd_matter(sys);
    const mbk_mass_props mp = mbk_mass_props_from_central(1.0, mbk_vec3_make(0.5, 0, 0), mbk_mat33_diag(0.01, 0.1, 0.1));
    const mbk_transform I = mbk_transform_identity(), X = mbk_transform_from_p(mbk_vec3_make(1, 0, 0));
    for (int b = 0; b < n; ++b) MUST(mbk_matter_add_body(m, b, b ? &X : &I, &mp, &I, mbk_mobilizer_pin()));
    MUST(mbk_force_add_gravity(mbk_multibody_upd_forces(sys), mbk_vec3_make(0, -9.81, 0)));
    return sys;
}

/* Bytes allocated while a chain of n pins realizes its Topology. */
static size_t topology_bytes(int n)
{
    mbk_system *sys = chain(n);
    allocated = 0;
    CHECK_OK(mbk_system_realize_topology(sys));
    const size_t bytes = allocated;
    mbk_system_destroy(sys);
    return bytes;
}

int main(void)
{
    mbk_set_allocator(count_malloc, count_realloc, count_free, NULL);
    const size_t small = topology_bytes(1000), big = topology_bytes(8000);
    const double ratio = (double)big / (double)small;
    if (!CHECK(ratio < 10.0)) fprintf(stderr, "  %zu bytes for 1000 links, %zu for 8000: %.1f times\n", small, big, ratio);
    printf("  Topology of a chain: %.1f MB for 1000 links, %.1f MB for 8000 (%.1f times)\n", small / 1e6, big / 1e6,
           ratio);
    /* a chain too deep for the sparse factor: its derivatives go through the ABA */
    mbk_system *sys = chain(300);
    MUST(mbk_system_realize_topology(sys));
    mbk_state *s = mbk_state_create();
    MUST(mbk_state_init(s, sys));
    MUST(mbk_system_realize(sys, s, MBK_STAGE_MODEL));
    double *q = mbk_state_upd_q(s);
    for (int i = 0; i < 300; ++i) q[i] = 0.01 * (i % 7) - 0.02;
    MUST(mbk_system_realize(sys, s, MBK_STAGE_INSTANCE));
    double *dq = malloc(sizeof(double) * 300 * 300), *du = malloc(sizeof(double) * 300 * 300);
    CHECK(dq && du);
    CHECK_OK(mbk_system_calc_acceleration_derivatives(sys, s, dq, du));
    double worst = 0, scale = 0;
    for (int i = 0; i < 300 * 300; ++i) {
        worst = fmax(worst, fabs(du[i]));
        scale = fmax(scale, fabs(dq[i]));
    }
    if (!CHECK(worst <= 1e-12 * scale && scale > 0)) fprintf(stderr, "  largest dudot/du %g, dudot/dq %g\n", worst, scale);
    free(dq), free(du);
    mbk_state_destroy(s);
    mbk_system_destroy(sys);
    mbk_set_allocator(NULL, NULL, NULL, NULL);
    return mbk_test_finish();
}
