/* Ground contact from URDF <collision> shapes (options.ground_contact): the
 * ground is the half-space z <= ground_height, and every shape of a moving
 * link touches it through Hunt-Crossley sphere elements (with friction):
 *   sphere     the sphere itself;
 *   box        small spheres (radius options.contact_point_radius, at most
 *              half the box's smallest size) inside its 8 corners and at 3
 *              points along each of its 12 edges, touching the faces;
 *   cylinder   12 small spheres on each of its two rims;
 *   mesh       the box spheres on the bounding box of its file's vertices
 *              (mbk_urdf_mesh_bounding_box: STL or OBJ, at the mesh's origin and
 *              scale); skipped with a warning saying why when the file cannot be
 *              read (not found, not STL/OBJ, malformed) or the box is flat; a
 *              skip is no failure, so it leaves mbk_last_error() as it was.
 * Shapes of links fixed to Ground add nothing (they never move). Every
 * element is named "contact:LINK". */
#include <math.h>
#include <stdio.h>

#include "mbk/status.h"
#include "mbk/urdf.h"

#include "urdf_impl.h"

#define UR_PI 3.14159265358979323846
enum { EDGE_POINTS = 3, RIM_POINTS = 12 };

typedef struct contact_ctx {
    ur_ctx *c;
    mbk_forces *f;
    int body;
    const char *link;
    double params[6];
    long line;
    const char *where;
} contact_ctx;

/* One sphere at p (collision frame, through X_LC into the link frame). */
static int add_sphere(contact_ctx *k, const mbk_transform *X_LC, mbk_vec3 p, double r)
{
    mbk_vec3 center = mbk_transform_apply_point(*X_LC, p);
    int e = mbk_force_add_hunt_crossley_sphere(k->f, k->body, center, r, k->c->o->ground_height, k->params);
    if (e < 0 || ur_name_force(k->f, e, "contact", k->link) < 0) {
        int st = mbk_last_status();
        return ur_fail(k->c, st < 0 ? st : MBK_EINVAL, k->line, k->where, "adding the contact: %s", mbk_last_error());
    }
    return 0;
}

static int add_box(contact_ctx *k, const mbk_transform *X_LC, const double size[3], double r)
{
    double h[3] = {size[0] / 2, size[1] / 2, size[2] / 2};
    r = fmin(r, fmin(h[0], fmin(h[1], h[2])));
    double in[3] = {h[0] - r, h[1] - r, h[2] - r}; /* sphere centres, inset to touch the faces */
    for (int s = 0; s < 8; ++s) {
        mbk_vec3 p = mbk_vec3_make(s & 1 ? in[0] : -in[0], s & 2 ? in[1] : -in[1], s & 4 ? in[2] : -in[2]);
        if (add_sphere(k, X_LC, p, r)) return -1;
    }
    for (int axis = 0; axis < 3; ++axis) {
        int a1 = (axis + 1) % 3, a2 = (axis + 2) % 3;
        for (int s = 0; s < 4; ++s)
            for (int t = 1; t <= EDGE_POINTS; ++t) {
                double v[3];
                v[axis] = -in[axis] + 2 * in[axis] * t / (EDGE_POINTS + 1);
                v[a1] = s & 1 ? in[a1] : -in[a1];
                v[a2] = s & 2 ? in[a2] : -in[a2];
                if (add_sphere(k, X_LC, mbk_vec3_make(v[0], v[1], v[2]), r)) return -1;
            }
    }
    return 0;
}

/* The bounding box of a mesh file, or MBK_E* with the reason in why. A mesh that
   cannot be read is skipped with a warning, not a failure of the load, so the
   thread's error record is put back as it was before the read: a successful load
   must not leave mbk_last_error() telling of a failure. */
static int mesh_box(const ur_ctx *c, const char *file, const double scale[3], mbk_vec3 *lo, mbk_vec3 *hi,
                    char *why, size_t cap)
{
    int was = mbk_last_status();
    char was_msg[MBK_ERROR_MAX];
    snprintf(was_msg, sizeof was_msg, "%s", mbk_last_error());
    int rc = mbk_urdf_mesh_bounding_box(c->path, file, scale, lo, hi);
    if (rc == MBK_OK) return MBK_OK;
    snprintf(why, cap, "%s", mbk_last_error());
    mbk_set_error(was, "%s", was_msg);
    return rc;
}

/* A mesh: the box of its vertices' bounding box, centred where they are. */
static int add_mesh(contact_ctx *k, const mbk_transform *X_LC, const ur_collision *col, double r)
{
    ur_ctx *c = k->c;
    if (!col->mesh_file) {
        ur_warn(c, k->line, k->where, "the mesh has no filename and takes no part in ground contact");
        return 0;
    }
    const char *file = ur_str(c, col->mesh_file);
    mbk_vec3 lo, hi;
    char why[MBK_ERROR_MAX];
    if (mesh_box(c, file, col->dims, &lo, &hi, why, sizeof why) != MBK_OK) {
        ur_warn(c, k->line, k->where, "the mesh takes no part in ground contact: %s; give the link a <collision> "
                "box, cylinder or sphere to stand on", why);
        return 0;
    }
    double size[3] = {hi.x - lo.x, hi.y - lo.y, hi.z - lo.z};
    if (!(size[0] > 0 && size[1] > 0 && size[2] > 0)) {
        ur_warn(c, k->line, k->where, "the mesh '%s' takes no part in ground contact: its bounding box is flat "
                "(%g x %g x %g)", file, size[0], size[1], size[2]);
        return 0;
    }
    mbk_transform X = *X_LC;
    X.p = mbk_transform_apply_point(*X_LC, mbk_vec3_make((lo.x + hi.x) / 2, (lo.y + hi.y) / 2, (lo.z + hi.z) / 2));
    return add_box(k, &X, size, r);
}

static int add_cylinder(contact_ctx *k, const mbk_transform *X_LC, double radius, double length, double r)
{
    r = fmin(r, fmin(radius, length / 2));
    for (int side = -1; side <= 1; side += 2)
        for (int t = 0; t < RIM_POINTS; ++t) {
            double a = 2 * UR_PI * t / RIM_POINTS;
            mbk_vec3 p = mbk_vec3_make((radius - r) * cos(a), (radius - r) * sin(a), side * (length / 2 - r));
            if (add_sphere(k, X_LC, p, r)) return -1;
        }
    return 0;
}

int ur_add_ground_contact(ur_ctx *c, mbk_forces *f, const int *body, const ur_bodies *b)
{
    const mbk_urdf_options *o = c->o;
    contact_ctx k = {c, f, 0, NULL, {o->contact_modulus, o->contact_dissipation, o->contact_static_friction,
                                     o->contact_dynamic_friction, o->contact_viscous_friction,
                                     o->contact_transition_velocity}, 0, NULL};
    for (int i = 0; i < c->ncols; ++i) {
        const ur_collision *col = &c->cols[i];
        if (!b->moving[col->link]) continue;
        where_buf w;
        k.body = body[col->link];
        k.link = ur_str(c, c->links[col->link].name);
        k.line = col->geometry_line ? col->geometry_line : col->line;
        k.where = ur_where_in(&w, "collision", "link", k.link);
        mbk_transform X = ur_origin_transform(&col->origin);
        int rc = 0;
        switch (col->type) {
        case G_SPHERE: rc = add_sphere(&k, &X, mbk_vec3_zero(), col->dims[0]); break;
        case G_BOX: rc = add_box(&k, &X, col->dims, o->contact_point_radius); break;
        case G_CYLINDER: rc = add_cylinder(&k, &X, col->dims[0], col->dims[1], o->contact_point_radius); break;
        case G_MESH: rc = add_mesh(&k, &X, col, o->contact_point_radius); break;
        case G_OTHER:
            ur_warn(c, k.line, k.where, "this shape takes no part in ground contact (only box, cylinder and sphere do)");
            break;
        default:
            ur_warn(c, col->line, k.where, "the <collision> has no <geometry> shape and takes no part in ground contact");
            break;
        }
        if (rc) return -1;
    }
    return 0;
}
