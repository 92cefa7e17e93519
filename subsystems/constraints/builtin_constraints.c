/* Built-in constraints, each an mbk_constraint_ops table like a custom one.
 * Errors are measured and expressed in the constraint's ancestor frame A. */
#include <math.h>

#include "mbk/alloc.h"
#include "mbk/status.h"
#include "constraints_impl.h"

/* ---- two stations: Rod and Ball share their data ---------------------------- */

typedef struct two_stations {
    mbk_vec3 s1, s2; /* station on the first and on the second constrained body */
    double length;   /* Rod only */
} two_stations;

/* Relative position, velocity and acceleration (the latter only when a has them) in A. */
static mbk_vec3 rel_p(const mbk_constraint_args *a, const two_stations *t)
{
    return mbk_vec3_sub(mbk_constraint_get_station_location(a, 1, t->s2), mbk_constraint_get_station_location(a, 0, t->s1));
}

static mbk_vec3 rel_v(const mbk_constraint_args *a, const two_stations *t)
{
    return mbk_vec3_sub(mbk_constraint_get_station_velocity(a, 1, t->s2), mbk_constraint_get_station_velocity(a, 0, t->s1));
}

static mbk_vec3 rel_a(const mbk_constraint_args *a, const two_stations *t)
{
    return mbk_vec3_sub(mbk_constraint_get_station_acceleration(a, 1, t->s2),
                        mbk_constraint_get_station_acceleration(a, 0, t->s1));
}

/* +f at the second station, -f at the first: the forces the multipliers apply (the
   physical reaction is the opposite, see mbk_constraint_calc_reaction_forces). */
static void apply_pair(const mbk_constraint_args *a, const two_stations *t, mbk_vec3 f, mbk_spatial_vec *F)
{
    mbk_constraint_add_station_force(a, 1, t->s2, f, F);
    mbk_constraint_add_station_force(a, 0, t->s1, mbk_vec3_neg(f), F);
}

/* Rod: perr = |p2 - p1| - L; its multiplier is the tension (positive pulls the points together). */
static int rod_perr(void *impl, const mbk_constraint_args *a, double *perr)
{
    const two_stations *t = impl;
    *perr = mbk_vec3_norm(rel_p(a, t)) - t->length;
    return 0;
}

static int rod_pverr(void *impl, const mbk_constraint_args *a, double *pverr)
{
    const two_stations *t = impl;
    *pverr = mbk_vec3_dot(mbk_vec3_normalize(rel_p(a, t)), rel_v(a, t));
    return 0;
}

static int rod_paerr(void *impl, const mbk_constraint_args *a, double *paerr)
{
    const two_stations *t = impl;
    mbk_vec3 p = rel_p(a, t), v = rel_v(a, t);
    double d = mbk_vec3_norm(p), ev = mbk_vec3_dot(p, v) / d;
    *paerr = mbk_vec3_dot(p, rel_a(a, t)) / d + (mbk_vec3_norm2(v) - ev * ev) / d;
    return 0;
}

static int rod_forces(void *impl, const mbk_constraint_args *a, const double *lambda, mbk_spatial_vec *F, double *mf)
{
    (void)mf;
    const two_stations *t = impl;
    apply_pair(a, t, mbk_vec3_scale(mbk_vec3_normalize(rel_p(a, t)), lambda[0]), F);
    return 0;
}

/* Ball: perr = p2 - p1 (3 equations, in A); multipliers a force in A. */
static int ball_perr(void *impl, const mbk_constraint_args *a, double *perr)
{
    mbk_vec3 p = rel_p(a, impl);
    perr[0] = p.x; perr[1] = p.y; perr[2] = p.z;
    return 0;
}

static int ball_pverr(void *impl, const mbk_constraint_args *a, double *pverr)
{
    mbk_vec3 v = rel_v(a, impl);
    pverr[0] = v.x; pverr[1] = v.y; pverr[2] = v.z;
    return 0;
}

static int ball_paerr(void *impl, const mbk_constraint_args *a, double *paerr)
{
    mbk_vec3 acc = rel_a(a, impl);
    paerr[0] = acc.x; paerr[1] = acc.y; paerr[2] = acc.z;
    return 0;
}

static int ball_forces(void *impl, const mbk_constraint_args *a, const double *lambda, mbk_spatial_vec *F, double *mf)
{
    (void)mf;
    apply_pair(a, impl, mbk_vec3_make(lambda[0], lambda[1], lambda[2]), F);
    return 0;
}

static void free_impl(void *impl) { mbk_free(impl); }

static const mbk_constraint_ops rod_ops = {
    .name = "Rod", .mp = 1, .calc_perr = rod_perr, .calc_pverr = rod_pverr, .calc_paerr = rod_paerr,
    .apply_position_forces = rod_forces, .destroy = free_impl};

static const mbk_constraint_ops ball_ops = {
    .name = "Ball", .mp = 3, .calc_perr = ball_perr, .calc_pverr = ball_pverr, .calc_paerr = ball_paerr,
    .apply_position_forces = ball_forces, .destroy = free_impl};

/* Add a two-station constraint; the impl is freed if it is refused. */
static int add_two(mbk_matter *m, const mbk_constraint_ops *ops, int b1, mbk_vec3 s1, int b2, mbk_vec3 s2,
                   double length, const char *fn)
{
    if (!mbk_vec3_is_finite(s1) || !mbk_vec3_is_finite(s2) || !isfinite(length))
        return mbk_set_error(MBK_EINVAL, "%s: stations and length must be finite", fn);
    two_stations *t = mbk_malloc(sizeof *t);
    if (!t) return MBK_ENOMEM;
    *t = (two_stations){s1, s2, length};
    const int bodies[2] = {b1, b2};
    int rc = mbk_constraint_add_custom(m, ops, t, bodies, 2);
    if (rc < 0) mbk_free(t);
    return rc;
}

int mbk_constraint_add_rod(mbk_matter *m, int b1, mbk_vec3 s1, int b2, mbk_vec3 s2, double length)
{
    if (!(length > 0))
        return mbk_set_error(MBK_EINVAL, "mbk_constraint_add_rod: length %g must be > 0; for coincident "
                             "points use mbk_constraint_add_ball", length);
    return add_two(m, &rod_ops, b1, s1, b2, s2, length, "mbk_constraint_add_rod");
}

int mbk_constraint_add_ball(mbk_matter *m, int b1, mbk_vec3 s1, int b2, mbk_vec3 s2)
{
    return add_two(m, &ball_ops, b1, s1, b2, s2, 0.0, "mbk_constraint_add_ball");
}
