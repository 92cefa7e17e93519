/* Monte Carlo with an ensemble: a double pendulum with uncertain initial angle,
 * link mass and damping, 400 members on every core.
 *
 * One System is built once; each member's init callback fills its own State:
 * initial q and u, a force element's parameter (mbk_force_set_parameters) and a
 * body's mass (mbk_matter_set_body_mass_props), with random values from the
 * counter-based generator mbk_random_*(seed, member, draw), so member i gets the
 * same values on any number of threads. The done callback runs on the worker
 * threads; it writes only member i's own slot. At the end: the mean and spread
 * of the final angle, and a check that one thread gives bitwise the same. */
#include <mbk/mbk.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

enum { MEMBERS = 400 };
static const uint64_t SEED = 2024;

typedef struct study {
    int damper;          /* force element index */
    double final_q[MEMBERS];
    int status[MEMBERS];
} study;

static int init(void *user, const mbk_system *sys, int i, mbk_state *s)
{
    const study *st = user;
    const mbk_matter *m = mbk_multibody_get_matter(sys);
    const mbk_forces *f = mbk_multibody_get_forces(sys);
    double *q = mbk_state_upd_q(s);
    q[0] = 1.0 + 0.05 * mbk_random_normal(SEED, (uint64_t)i, 0);   /* rad, sd 0.05 */
    q[1] = 0.0;
    double c = 0.02 + 0.08 * mbk_random_uniform(SEED, (uint64_t)i, 1); /* N m s, uniform */
    if (mbk_force_set_parameters(f, s, st->damper, &c, 1) < 0) return -1;
    mbk_mass_props mp;
    mbk_matter_get_state_body_mass_props(m, s, 2, &mp);
    mp.mass *= 1.0 + 0.1 * mbk_random_uniform(SEED, (uint64_t)i, 2) - 0.05; /* +-5 % */
    return mbk_matter_set_body_mass_props(m, s, 2, &mp);
}

static int done(void *user, const mbk_system *sys, int i, const mbk_state *s, int status)
{
    (void)sys;
    study *st = user;
    st->status[i] = status;
    st->final_q[i] = mbk_state_get_q(s)[0];
    if (status < 0) fprintf(stderr, "member %d failed: %s\n", i, mbk_last_error());
    return 0;
}

static int run(const mbk_system *sys, study *st, int threads)
{
    mbk_ensemble *e = mbk_ensemble_create(sys, MEMBERS);
    if (!e || mbk_ensemble_set_integrator(e, "rkmerson", 1e-6) < 0 || mbk_ensemble_set_threads(e, threads) < 0 ||
        mbk_ensemble_run(e, 5.0, init, done, st) < 0) {
        fprintf(stderr, "ensemble: %s\n", mbk_last_error());
        mbk_ensemble_destroy(e);
        return -1;
    }
    int failed = mbk_ensemble_get_num_failed(e);
    mbk_ensemble_destroy(e);
    return failed;
}

int main(void)
{
    /* a double pendulum: two 1 m links on pins about z, gravity -y, a damper on the first pin */
    mbk_system *sys = mbk_multibody_create("double pendulum");
    mbk_matter *m = mbk_multibody_upd_matter(sys);
    mbk_forces *f = mbk_multibody_upd_forces(sys);
    mbk_mass_props link = mbk_mass_props_from_central(1.0, mbk_vec3_make(0, -0.5, 0), mbk_mat33_diag(0.084, 0.001, 0.084));
    mbk_transform I = mbk_transform_identity(), tip = mbk_transform_from_p(mbk_vec3_make(0, -1, 0));
    int b1 = mbk_matter_add_body(m, 0, &I, &link, &I, mbk_mobilizer_pin());
    mbk_matter_add_body(m, b1, &tip, &link, &I, mbk_mobilizer_pin());
    mbk_force_add_gravity(f, mbk_vec3_make(0, -9.81, 0));
    study *st = calloc(2, sizeof *st);
    if (!st) return 1;
    st[0].damper = st[1].damper = mbk_force_add_mobility_linear_damper(f, b1, 0, 0.05);
    if (mbk_system_realize_topology(sys) < 0) {
        fprintf(stderr, "%s\n", mbk_last_error());
        return 1;
    }

    int failed = run(sys, &st[0], 0); /* all cores */
    if (failed != 0) return 1;
    double mean = 0, var = 0;
    for (int i = 0; i < MEMBERS; ++i) mean += st[0].final_q[i] / MEMBERS;
    for (int i = 0; i < MEMBERS; ++i) var += (st[0].final_q[i] - mean) * (st[0].final_q[i] - mean) / (MEMBERS - 1);
    printf("%d members: final angle of the first link at t = 5 s: mean %.4f rad, standard deviation %.4f rad\n",
           MEMBERS, mean, sqrt(var));

    /* the same study on one thread: the same bits */
    if (run(sys, &st[1], 1) != 0) return 1;
    int same = memcmp(st[0].final_q, st[1].final_q, sizeof st[0].final_q) == 0;
    printf("one thread gives %s results\n", same ? "bitwise the same" : "DIFFERENT");
    free(st);
    mbk_system_destroy(sys);
    return same && sqrt(var) > 0 ? 0 : 1;
}
