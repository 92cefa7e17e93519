/* Private layout of the URDF loader, shared by its source files:
 *   urdf.c          parsing (expat), the checks on names and the tree, building the System
 *   urdf_bodies.c   the rigid bodies: inertia checks, repairs, what each body carries
 *   urdf_contact.c  ground contact from <collision> shapes
 *   urdf_mesh.c     mesh files: the bounding box of their vertices (public: mbk_urdf_mesh_bounding_box) */
#ifndef MBK_URDF_IMPL_H
#define MBK_URDF_IMPL_H

#include <stdarg.h>
#include <stdbool.h>
#include <stddef.h>

#include "mbk/forces.h"
#include "mbk/spatial.h"
#include "mbk/urdf.h"

enum { J_REVOLUTE, J_CONTINUOUS, J_PRISMATIC, J_FIXED, J_FLOATING, J_PLANAR, J_NTYPES };

typedef struct ur_origin {
    long line;          /* 0: absent */
    double xyz[3], rpy[3];
} ur_origin;

typedef struct ur_link {
    size_t name;        /* pool offset */
    long line;
    long inertial_line, mass_line, inertia_line; /* 0: absent */
    ur_origin inertial_origin;
    double mass;
    double I[6];        /* ixx iyy izz ixy ixz iyz, in the inertial frame */
    int parent_joint;   /* -1: root */
} ur_link;

typedef struct ur_joint {
    size_t name;
    long line;
    int type;
    ur_origin origin;
    size_t parent, child;       /* link names */
    long parent_line, child_line;
    long axis_line;
    double axis[3];
    long limit_line;
    double lower, upper;
    long dynamics_line;
    double damping, friction;
    long mimic_line;
    size_t mimic_name;
    double multiplier, offset;
    int parent_link, child_link, mimic_joint; /* resolved indices */
} ur_joint;

/* A <collision> shape (read only with options.ground_contact). */
enum { G_NONE, G_SPHERE, G_BOX, G_CYLINDER, G_MESH, G_OTHER };
typedef struct ur_collision {
    int link;
    long line, geometry_line;   /* <collision>, its shape element */
    ur_origin origin;
    int type;
    double dims[3];             /* sphere: r; box: x y z sizes; cylinder: r, length; mesh: scale */
    size_t mesh_file;           /* mesh: its filename (pool offset; 0: none given) */
} ur_collision;

/* One warning or error, kept until the load ends and then given in file order. */
typedef struct ur_msg {
    long line, seq;
    int status;
    char *text;
} ur_msg;

typedef struct ur_msgs {
    ur_msg *v;
    int n, cap;
    long dropped;               /* beyond the cap: counted, not kept */
} ur_msgs;

typedef struct ur_ctx {
    const mbk_urdf_options *o;
    const char *src;       /* file name for messages */
    const char *path;      /* the URDF file (mesh files are found from its folder); NULL for a string */
    void *parser;          /* XML_Parser while parsing */
    int depth;
    unsigned char kind[256];
    int status;            /* status of the first error recorded (0: none) */
    bool fatal;            /* an error after which nothing more is read (malformed XML, no memory) */
    long seq;
    ur_msgs errors, warnings;
    /* string pool: offset 0 is "" */
    char *pool;
    size_t pool_len, pool_cap;
    size_t robot_name;
    long robot_line;
    ur_link *links;
    int nlinks, cap_links;
    ur_joint *joints;
    int njoints, cap_joints;
    ur_collision *cols;
    int ncols, cap_cols;
} ur_ctx;

/* What the dynamics use for each link, decided by ur_judge_bodies. */
typedef struct ur_bodies {
    mbk_mass_props *mp;     /* per link: the mass properties its body gets */
    unsigned char *moving;  /* per link: its rigid body moves (not fixed to Ground) */
} ur_bodies;

/* "<link name="x">" or "<joint name="x">" for messages (names cut at 200 bytes). */
typedef struct where_buf { char s[300]; } where_buf;

const char *ur_str(const ur_ctx *c, size_t off);
const char *ur_where_elem(where_buf *w, const char *elem, const char *name);
const char *ur_where_in(where_buf *w, const char *elem, const char *outer, const char *name);
/* Record an error "src:line: where: what"; returns status. Fatal errors stop the reading. */
int ur_fail(ur_ctx *c, int status, long line, const char *where, const char *fmt, ...)
#if defined(__GNUC__)
    __attribute__((format(printf, 5, 6)))
#endif
    ;
/* Record a warning "src:line: where: what". */
void ur_warn(ur_ctx *c, long line, const char *where, const char *fmt, ...)
#if defined(__GNUC__)
    __attribute__((format(printf, 4, 5)))
#endif
    ;
/* Name force element e "prefix:name", whole (a cut name could collide with another's). */
int ur_name_force(mbk_forces *f, int e, const char *prefix, const char *name);
/* A joint's <origin> as a transform (X_PF before the axis is turned). */
mbk_transform ur_origin_transform(const ur_origin *o);
/* A link's <inertial> as mass properties in the link frame (zero when absent). */
mbk_mass_props ur_link_mass_props(const ur_link *l);

/* Judge the rigid bodies (links joined by fixed joints) and decide each link's mass
   properties: inertia checks, repairs, warnings and errors (urdf_bodies.c). order is the
   depth-first order of the links from the root. Returns 0, or -1 with errors recorded. */
int ur_judge_bodies(ur_ctx *c, const int *order, bool world, ur_bodies *out);
void ur_bodies_free(ur_bodies *b);

/* Ground contact for the <collision> shapes of moving links (urdf_contact.c).
   body[link] is the link's body. Returns 0, or -1 with an error recorded. */
int ur_add_ground_contact(ur_ctx *c, mbk_forces *f, const int *body, const ur_bodies *b);

#endif
