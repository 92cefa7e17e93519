/* Hunt-Crossley compliant contact between a sphere fixed on a body and the
 * ground half-space z <= height, as Simbody's HuntCrossleyForce computes it
 * when both surfaces are of one material (modulus E, dissipation c,
 * friction us, ud, uv; transition velocity vt):
 *   depth x = r - (C_z - h) > 0;  k = E^(2/3) / 2;  fH = 4/3 k x sqrt(r k x)
 *   f = fH (1 + 3/2 c vn), vn the approach speed; no force at all if f <= 0
 *   friction f (min(vr,1)(ud + 2(us-ud)/(1+vr^2)) + uv vs), vr = vs/vt,
 *   opposing the slip; everything applied at P = (C_x, C_y, h - x/2).
 *   PE = 2/5 fH x. Parameters: (E, c, us, ud, uv, vt). */
#include <math.h>

#include "mbk/status.h"
#include "forces_impl.h"
#include "../matter/matter_impl.h"

/* Penetration, contact point and the Hertz force of the element's sphere. */
typedef struct contact_geom {
    double depth; /* > 0 when touching */
    mbk_vec3 P;   /* contact point in G */
    double fH;    /* elastic normal force */
} contact_geom;

static void contact_geometry(const fe_elem *e, const double *p, const mbk_force_ctx *c,
                             const mbk_state *s, contact_geom *g)
{
    const mt_pos *pos = mt_cache(mbk_force_ctx_get_matter(c), s, C_POS);
    mbk_vec3 C = mbk_transform_apply_point(pos[e->body[0]].X_GB, e->station[0]);
    g->depth = e->radius - (C.z - e->height);
    g->P = mbk_vec3_make(C.x, C.y, e->height - 0.5 * g->depth);
    double k = 0.5 * pow(p[0], 2.0 / 3.0);
    g->fH = g->depth > 0 ? 4.0 / 3.0 * k * g->depth * sqrt(e->radius * k * g->depth) : 0.0;
}

static int contact_force(const fe_elem *e, const double *p, const mbk_force_ctx *c, const mbk_state *s,
                         mbk_spatial_vec *F, double *tau)
{
    (void)tau;
    contact_geom g;
    contact_geometry(e, p, c, s, &g);
    if (!(g.depth > 0)) return 0;
    const mbk_matter *m = mbk_force_ctx_get_matter(c);
    int b = e->body[0];
    const mt_pos *pos = mt_cache(m, s, C_POS);
    const mt_vel *vel = mt_cache(m, s, C_VEL);
    mbk_vec3 r = mbk_vec3_sub(g.P, pos[b].X_GB.p);
    mbk_vec3 vS = mbk_spatial_shift_motion(vel[b].V_GB, r).v; /* the sphere's material point at P */
    double vn = -vS.z, f = g.fH * (1.0 + 1.5 * p[1] * vn);
    if (f <= 0) return 0; /* leaving faster than the material recovers: no sticking */
    mbk_vec3 force = mbk_vec3_make(0, 0, f);
    double vs = hypot(vS.x, vS.y);
    if (vs > 0) {
        double vr = vs / p[5];
        double mu = fmin(vr, 1.0) * (p[3] + 2.0 * (p[2] - p[3]) / (1.0 + vr * vr)) + p[4] * vs;
        force.x -= f * mu * vS.x / vs;
        force.y -= f * mu * vS.y / vs;
    }
    fe_add_force_at(&F[b], r, force);
    return 0;
}

static int contact_energy(const fe_elem *e, const double *p, const mbk_force_ctx *c, const mbk_state *s,
                          double *pe)
{
    contact_geom g;
    contact_geometry(e, p, c, s, &g);
    if (g.depth > 0) *pe += 0.4 * g.fH * g.depth;
    return 0;
}

static int check_contact(const double *p)
{
    if (!(p[0] > 0) || p[1] < 0 || p[2] < 0 || p[3] < 0 || p[4] < 0 || !(p[5] > 0))
        return mbk_set_error(MBK_EINVAL, "need E > 0, vt > 0 and dissipation "
                                         "and friction coefficients >= 0");
    return MBK_OK;
}

const fe_kind fe_hunt_crossley = {"Hunt-Crossley contact", 6, check_contact,
                                  contact_force, contact_energy, "mbk_force_add_hunt_crossley_sphere"};

int mbk_force_add_hunt_crossley_sphere(mbk_forces *f, int body, mbk_vec3 center, double radius,
                                       double height, const double params[6])
{
    const char *fn = "mbk_force_add_hunt_crossley_sphere";
    int rc = fe_check_body(f, body, false, fn);
    if (rc < 0) return rc;
    if (!params) return mbk_set_error(MBK_EINVAL, "%s: params is NULL", fn);
    if (!mbk_vec3_is_finite(center) || !isfinite(height) || !(radius > 0) || !isfinite(radius))
        return mbk_set_error(MBK_EINVAL, "%s: need a finite centre and height and a radius > 0", fn);
    fe_elem w = {0};
    w.body[0] = body;
    w.station[0] = center;
    w.radius = radius;
    w.height = height;
    return fe_add(f, &fe_hunt_crossley, &w, params);
}

int mbk_force_get_hunt_crossley_sphere(const mbk_forces *f, int force, int *body, mbk_vec3 *center,
                                       double *radius, double *height)
{
    if (!f || force < 0 || force >= f->n)
        return mbk_set_error(MBK_EINVAL, "mbk_force_get_hunt_crossley_sphere: force %d is not an element of "
                                         "this force subsystem (it has %d)", force, f ? f->n : 0);
    const fe_elem *e = &f->elems[force];
    if (e->kind != &fe_hunt_crossley) return 0;
    if (body) *body = e->body[0];
    if (center) *center = e->station[0];
    if (radius) *radius = e->radius;
    if (height) *height = e->height;
    return 1;
}
