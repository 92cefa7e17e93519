/* Built-in force elements: gravity, two-point springs, dampers and forces,
 * mobility springs, dampers, forces and stops, constant forces and torques.
 * Laws and signs follow Simbody's elements of the same names (checked
 * against Simbody in tests/oracle/test_forces_vs_simbody.c). */
#include <math.h>

#include "mbk/status.h"
#include "forces_impl.h"
#include "../matter/matter_impl.h"

/* ---- parameter checks ------------------------------------------------------ */

static int check_any(const double *p) { (void)p; return MBK_OK; }

/* The first parameter is a stiffness or damping: it must not be negative. */
static int check_first_nonnegative(const double *p)
{
    if (p[0] < 0)
        return mbk_set_error(MBK_EINVAL, "stiffness or damping %g is negative; use a value >= 0", p[0]);
    return MBK_OK;
}

/* ---- shared geometry ------------------------------------------------------- */

/* Station location and velocity in G from matter's caches. */
static void station_state(const mbk_force_ctx *c, const mbk_state *s, int body, mbk_vec3 st,
                          mbk_vec3 *p, mbk_vec3 *v)
{
    const mbk_matter *m = mbk_force_ctx_get_matter(c);
    const mt_pos *pos = mt_cache(m, s, C_POS);
    mbk_vec3 r = mbk_mat33_mul_vec(pos[body].X_GB.R, st);
    *p = mbk_vec3_add(pos[body].X_GB.p, r);
    if (v) {
        const mt_vel *vel = mt_cache(m, s, C_VEL);
        *v = mbk_spatial_shift_motion(vel[body].V_GB, r).v;
    }
}

/* Add force f_G applied at station st (in B) of body b. */
static void apply_at_station(const mbk_force_ctx *c, const mbk_state *s, mbk_spatial_vec *F, int b,
                             mbk_vec3 st, mbk_vec3 f_G)
{
    const mt_pos *pos = mt_cache(mbk_force_ctx_get_matter(c), s, C_POS);
    mbk_vec3 r = mbk_mat33_mul_vec(pos[b].X_GB.R, st);
    fe_add_force_at(&F[b], r, f_G);
}

/* Equal and opposite forces along the line of two stations: tension > 0 pulls them together. */
static void apply_tension(const fe_elem *e, const mbk_force_ctx *c, const mbk_state *s,
                          mbk_spatial_vec *F, mbk_vec3 dir, double tension)
{
    mbk_vec3 f1 = mbk_vec3_scale(dir, tension);
    apply_at_station(c, s, F, e->body[0], e->station[0], f1);
    apply_at_station(c, s, F, e->body[1], e->station[1], mbk_vec3_neg(f1));
}

/* Distance of the two stations, unit vector from the first to the second, and the
   rate of change of the distance. */
static double two_point(const fe_elem *e, const mbk_force_ctx *c, const mbk_state *s, mbk_vec3 *dir,
                        double *rate)
{
    mbk_vec3 p1, p2, v1, v2;
    station_state(c, s, e->body[0], e->station[0], &p1, rate ? &v1 : NULL);
    station_state(c, s, e->body[1], e->station[1], &p2, rate ? &v2 : NULL);
    mbk_vec3 d = mbk_vec3_sub(p2, p1);
    double len = mbk_vec3_norm(d);
    *dir = len > 0 ? mbk_vec3_scale(d, 1.0 / len) : mbk_vec3_zero();
    if (rate) *rate = mbk_vec3_dot(*dir, mbk_vec3_sub(v2, v1));
    return len;
}

/* ---- uniform gravity: p = (gx, gy, gz, zero_height) -------------------------- */

static int gravity_force(const fe_elem *e, const double *p, const mbk_force_ctx *c, const mbk_state *s,
                         mbk_spatial_vec *F, double *tau)
{
    (void)e; (void)tau;
    const mbk_matter *m = mbk_force_ctx_get_matter(c);
    const mt_pos *pos = mt_cache(m, s, C_POS);
    mbk_vec3 g = mbk_vec3_make(p[0], p[1], p[2]);
    const double *pm = mt_pos_mass(m, pos);
    const bool own_mass = pm[0] != 0.0;
    for (int b = 1; b < m->nb; ++b) {
        mbk_vec3 f = mbk_vec3_scale(g, own_mass ? pm[b] : m->nodes[b].mass);
        fe_add_force_at(&F[b], pos[b].c_G, f);
    }
    return 0;
}

/* PE = -sum m (g . p_com + zero_height), as Simbody's UniformGravity: the zero
   height is added to g . p, so PE vanishes where g . p_com = -zero_height. */
static int gravity_energy(const fe_elem *e, const double *p, const mbk_force_ctx *c, const mbk_state *s,
                          double *pe)
{
    (void)e;
    const mbk_matter *m = mbk_force_ctx_get_matter(c);
    const mt_pos *pos = mt_cache(m, s, C_POS);
    mbk_vec3 g = mbk_vec3_make(p[0], p[1], p[2]);
    for (int b = 1; b < m->nb; ++b) {
        mbk_vec3 com = mbk_vec3_add(pos[b].X_GB.p, pos[b].c_G);
        *pe -= mt_mass_of(m, pos, b) * (mbk_vec3_dot(g, com) + p[3]);
    }
    return 0;
}

const fe_kind fe_gravity = {"uniform gravity", 4, check_any,
                            gravity_force, gravity_energy, "mbk_force_add_gravity", NULL};

int mbk_force_add_gravity(mbk_forces *f, mbk_vec3 g)
{
    fe_elem where = {0};
    const double p[4] = {g.x, g.y, g.z, 0.0};
    return fe_add(f, &fe_gravity, &where, p);
}

/* ---- two-point elements: p = (k, x0), (c), (f) ------------------------------- */

static int tp_spring_force(const fe_elem *e, const double *p, const mbk_force_ctx *c, const mbk_state *s,
                           mbk_spatial_vec *F, double *tau)
{
    (void)tau;
    mbk_vec3 dir;
    double d = two_point(e, c, s, &dir, NULL);
    apply_tension(e, c, s, F, dir, p[0] * (d - p[1]));
    return 0;
}

static int tp_spring_energy(const fe_elem *e, const double *p, const mbk_force_ctx *c, const mbk_state *s,
                            double *pe)
{
    mbk_vec3 dir;
    double x = two_point(e, c, s, &dir, NULL) - p[1];
    *pe += 0.5 * p[0] * x * x;
    return 0;
}

static int tp_damper_force(const fe_elem *e, const double *p, const mbk_force_ctx *c, const mbk_state *s,
                           mbk_spatial_vec *F, double *tau)
{
    (void)tau;
    mbk_vec3 dir;
    double rate;
    two_point(e, c, s, &dir, &rate);
    apply_tension(e, c, s, F, dir, p[0] * rate);
    return 0;
}

static int tp_constant_force(const fe_elem *e, const double *p, const mbk_force_ctx *c, const mbk_state *s,
                             mbk_spatial_vec *F, double *tau)
{
    (void)tau;
    mbk_vec3 dir;
    two_point(e, c, s, &dir, NULL);
    apply_tension(e, c, s, F, dir, -p[0]); /* positive pushes apart */
    return 0;
}

const fe_kind fe_tp_spring = {"two-point linear spring", 2, check_first_nonnegative,
                              tp_spring_force, tp_spring_energy, "mbk_force_add_two_point_linear_spring", NULL};
const fe_kind fe_tp_damper = {"two-point linear damper", 1, check_first_nonnegative,
                              tp_damper_force, NULL, "mbk_force_add_two_point_linear_damper", NULL};
/* Like Simbody, constant forces store no potential energy: their work counts as external. */
const fe_kind fe_tp_constant = {"two-point constant force", 1, check_any,
                                tp_constant_force, NULL, "mbk_force_add_two_point_constant_force", NULL};

/* Where a two-point element acts; checks the bodies. */
static int two_point_where(mbk_forces *f, fe_elem *w, int b1, mbk_vec3 s1, int b2, mbk_vec3 s2,
                           const char *fn)
{
    int rc = fe_check_body(f, b1, true, fn);
    if (rc < 0 || (rc = fe_check_body(f, b2, true, fn)) < 0) return rc;
    if (!mbk_vec3_is_finite(s1) || !mbk_vec3_is_finite(s2))
        return mbk_set_error(MBK_EINVAL, "%s: stations must be finite", fn);
    w->body[0] = b1;
    w->body[1] = b2;
    w->station[0] = s1;
    w->station[1] = s2;
    return MBK_OK;
}

int mbk_force_add_two_point_linear_spring(mbk_forces *f, int b1, mbk_vec3 s1, int b2, mbk_vec3 s2,
                                          double k, double x0)
{
    fe_elem w = {0};
    const double p[2] = {k, x0};
    int rc = two_point_where(f, &w, b1, s1, b2, s2, "mbk_force_add_two_point_linear_spring");
    return rc < 0 ? rc : fe_add(f, &fe_tp_spring, &w, p);
}

int mbk_force_add_two_point_linear_damper(mbk_forces *f, int b1, mbk_vec3 s1, int b2, mbk_vec3 s2, double c)
{
    fe_elem w = {0};
    int rc = two_point_where(f, &w, b1, s1, b2, s2, "mbk_force_add_two_point_linear_damper");
    return rc < 0 ? rc : fe_add(f, &fe_tp_damper, &w, &c);
}

int mbk_force_add_two_point_constant_force(mbk_forces *f, int b1, mbk_vec3 s1, int b2, mbk_vec3 s2,
                                           double force)
{
    fe_elem w = {0};
    int rc = two_point_where(f, &w, b1, s1, b2, s2, "mbk_force_add_two_point_constant_force");
    return rc < 0 ? rc : fe_add(f, &fe_tp_constant, &w, &force);
}

/* ---- mobility elements ------------------------------------------------------ */

/* Global index of the body's coord-th q and u. */
static int mob_q(const fe_elem *e, const mbk_force_ctx *c, const mbk_state *s)
{
    return mbk_matter_get_body_q_start(mbk_force_ctx_get_matter(c), s, e->body[0]) + e->coord;
}

static int mob_u(const fe_elem *e, const mbk_force_ctx *c)
{
    return mbk_force_ctx_get_matter(c)->bodies[e->body[0]].u0 + e->coord;
}

int fe_mobility_u(const fe_elem *e, const mbk_force_ctx *c) { return mob_u(e, c); }

static double matter_q(const mbk_force_ctx *c, const mbk_state *s, int i)
{
    return mbk_state_get_subsystem_q(s, mbk_force_ctx_get_matter(c)->sub)[i];
}

static double matter_u(const mbk_force_ctx *c, const mbk_state *s, int i)
{
    return mbk_state_get_subsystem_u(s, mbk_force_ctx_get_matter(c)->sub)[i];
}

static int mob_spring_force(const fe_elem *e, const double *p, const mbk_force_ctx *c, const mbk_state *s,
                            mbk_spatial_vec *F, double *tau)
{
    (void)F;
    tau[mob_u(e, c)] -= p[0] * (matter_q(c, s, mob_q(e, c, s)) - p[1]);
    return 0;
}

static int mob_spring_energy(const fe_elem *e, const double *p, const mbk_force_ctx *c, const mbk_state *s,
                             double *pe)
{
    double x = matter_q(c, s, mob_q(e, c, s)) - p[1];
    *pe += 0.5 * p[0] * x * x;
    return 0;
}

static int mob_damper_force(const fe_elem *e, const double *p, const mbk_force_ctx *c, const mbk_state *s,
                            mbk_spatial_vec *F, double *tau)
{
    (void)F;
    tau[mob_u(e, c)] -= p[0] * matter_u(c, s, mob_u(e, c));
    return 0;
}

static int mob_constant_force(const fe_elem *e, const double *p, const mbk_force_ctx *c, const mbk_state *s,
                              mbk_spatial_vec *F, double *tau)
{
    (void)F; (void)s;
    tau[mob_u(e, c)] += p[0];
    return 0;
}

/* Stop: p = (stiffness, dissipation, q_low, q_high). Penetration x beyond a limit gives
   -k x (1 + d xdot) (Hunt-Crossley style), never pulling: the force is 0 when that
   expression would change sign. */
static double stop_penetration(const double *p, double q, double *side)
{
    if (q > p[3]) { *side = 1.0; return q - p[3]; }
    if (q < p[2]) { *side = -1.0; return p[2] - q; }
    *side = 0.0;
    return 0.0;
}

static int mob_stop_force(const fe_elem *e, const double *p, const mbk_force_ctx *c, const mbk_state *s,
                          mbk_spatial_vec *F, double *tau)
{
    (void)F;
    double side, x = stop_penetration(p, matter_q(c, s, mob_q(e, c, s)), &side);
    if (side == 0.0) return 0;
    double xdot = side * matter_u(c, s, mob_u(e, c));
    double push = p[0] * x * (1.0 + p[1] * xdot);
    if (push > 0) tau[mob_u(e, c)] -= side * push;
    return 0;
}

static int mob_stop_energy(const fe_elem *e, const double *p, const mbk_force_ctx *c, const mbk_state *s,
                           double *pe)
{
    double side, x = stop_penetration(p, matter_q(c, s, mob_q(e, c, s)), &side);
    *pe += 0.5 * p[0] * x * x;
    return 0;
}

static int check_stop(const double *p)
{
    if (p[0] < 0 || p[1] < 0)
        return mbk_set_error(MBK_EINVAL, "stiffness %g and dissipation %g must be >= 0", p[0], p[1]);
    if (!(p[2] <= p[3]))
        return mbk_set_error(MBK_EINVAL, "lower limit %g is above upper limit %g", p[2], p[3]);
    return MBK_OK;
}

const fe_kind fe_mob_spring = {"mobility linear spring", 2, check_first_nonnegative,
                               mob_spring_force, mob_spring_energy, "mbk_force_add_mobility_linear_spring", NULL};
const fe_kind fe_mob_damper = {"mobility linear damper", 1, check_first_nonnegative,
                               mob_damper_force, NULL, "mbk_force_add_mobility_linear_damper", NULL};
const fe_kind fe_mob_constant = {"mobility constant force", 1, check_any,
                                 mob_constant_force, NULL, "mbk_force_add_mobility_constant_force", NULL};
const fe_kind fe_mob_stop = {"mobility linear stop", 4, check_stop,
                             mob_stop_force, mob_stop_energy, "mbk_force_add_mobility_linear_stop", NULL};

/* Where a mobility element acts. The coordinate is checked against the body's
   mobilizer at Instance stage, when its q count is known. */
int fe_mobility_where(mbk_forces *f, fe_elem *w, int body, int coord, const char *fn)
{
    int rc = fe_check_body(f, body, false, fn);
    if (rc < 0) return rc;
    const mbk_matter *m = mbk_multibody_get_matter(f->sys);
    if (coord < 0 || coord >= m->bodies[body].nu)
        return mbk_set_error(MBK_EINVAL, "%s: body %d has %d mobilities; coordinate %d is out of range",
                             fn, body, m->bodies[body].nu, coord);
    w->body[0] = body;
    w->coord = coord;
    return MBK_OK;
}

int mbk_force_add_mobility_linear_spring(mbk_forces *f, int body, int q_index, double k, double q0)
{
    fe_elem w = {0};
    const double p[2] = {k, q0};
    int rc = fe_mobility_where(f, &w, body, q_index, "mbk_force_add_mobility_linear_spring");
    return rc < 0 ? rc : fe_add(f, &fe_mob_spring, &w, p);
}

int mbk_force_add_mobility_linear_damper(mbk_forces *f, int body, int u_index, double c)
{
    fe_elem w = {0};
    int rc = fe_mobility_where(f, &w, body, u_index, "mbk_force_add_mobility_linear_damper");
    return rc < 0 ? rc : fe_add(f, &fe_mob_damper, &w, &c);
}

int mbk_force_add_mobility_constant_force(mbk_forces *f, int body, int u_index, double force)
{
    fe_elem w = {0};
    int rc = fe_mobility_where(f, &w, body, u_index, "mbk_force_add_mobility_constant_force");
    return rc < 0 ? rc : fe_add(f, &fe_mob_constant, &w, &force);
}

int mbk_force_add_mobility_linear_stop(mbk_forces *f, int body, int q_index, double stiffness,
                                       double dissipation, double q_low, double q_high)
{
    fe_elem w = {0};
    const double p[4] = {stiffness, dissipation, q_low, q_high};
    int rc = fe_mobility_where(f, &w, body, q_index, "mbk_force_add_mobility_linear_stop");
    return rc < 0 ? rc : fe_add(f, &fe_mob_stop, &w, p);
}

/* ---- constant force at a station, constant torque: p = vector in G ------------ */

static int constant_force_force(const fe_elem *e, const double *p, const mbk_force_ctx *c, const mbk_state *s,
                                mbk_spatial_vec *F, double *tau)
{
    (void)tau;
    apply_at_station(c, s, F, e->body[0], e->station[0], mbk_vec3_make(p[0], p[1], p[2]));
    return 0;
}

static int constant_torque_force(const fe_elem *e, const double *p, const mbk_force_ctx *c, const mbk_state *s,
                                 mbk_spatial_vec *F, double *tau)
{
    (void)c; (void)s; (void)tau;
    F[e->body[0]].w = mbk_vec3_add(F[e->body[0]].w, mbk_vec3_make(p[0], p[1], p[2]));
    return 0;
}

const fe_kind fe_constant_force = {"constant force", 3, check_any,
                                   constant_force_force, NULL, "mbk_force_add_constant_force", NULL};
const fe_kind fe_constant_torque = {"constant torque", 3, check_any,
                                    constant_torque_force, NULL, "mbk_force_add_constant_torque", NULL};

int mbk_force_add_constant_force(mbk_forces *f, int body, mbk_vec3 station, mbk_vec3 force_G)
{
    const char *fn = "mbk_force_add_constant_force";
    fe_elem w = {0};
    const double p[3] = {force_G.x, force_G.y, force_G.z};
    int rc = fe_check_body(f, body, false, fn);
    if (rc < 0) return rc;
    if (!mbk_vec3_is_finite(station)) return mbk_set_error(MBK_EINVAL, "%s: station must be finite", fn);
    w.body[0] = body;
    w.station[0] = station;
    return fe_add(f, &fe_constant_force, &w, p);
}

int mbk_force_add_constant_torque(mbk_forces *f, int body, mbk_vec3 torque_G)
{
    fe_elem w = {0};
    const double p[3] = {torque_G.x, torque_G.y, torque_G.z};
    int rc = fe_check_body(f, body, false, "mbk_force_add_constant_torque");
    if (rc < 0) return rc;
    w.body[0] = body;
    return fe_add(f, &fe_constant_torque, &w, p);
}
