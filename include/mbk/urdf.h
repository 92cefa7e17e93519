/* mbk/urdf.h - building a multibody System from a URDF robot description.
 *
 * mbk_urdf_load reads a URDF file (mbk_urdf_load_string a string) and builds
 * a complete multibody System: a matter subsystem with one body per link
 * (named after the link), a general force subsystem with gravity and,
 * optionally, joint limits as stops and joint damping as dampers, and mimic
 * joints as coordinate couplers. docs/urdf.md gives the whole mapping; in
 * short:
 *
 *   link <inertial>            mass properties about the COM in the link frame
 *   revolute, continuous       Pin, its z turned onto the joint axis
 *   prismatic                  Slider, its x turned onto the joint axis
 *   fixed                      Weld
 *   floating                   Free (quaternion, then position; u = (w, v) in F)
 *   planar                     Planar (rotation about the normal, then 2 translations)
 *
 * Each body's frame is its link's frame, so body poses read directly as
 * URDF link poses, and each joint's q is the URDF joint position (an angle
 * about, or a displacement along, the joint axis). Bodies are numbered
 * depth first from the root link, children in the order their joints
 * appear in the file. A root link named "world" is Ground; any other root
 * link is welded to Ground, or mounted on a Free mobilizer with
 * floating_base.
 *
 * Errors: MBK_EINVAL for bad arguments, MBK_EIO when the file cannot be
 * read (missing, unreadable, or not a regular file: a directory, FIFO,
 * device or socket is refused before reading, so the call never blocks),
 * MBK_EPARSE for malformed or unsupported input. The message names
 * the file, the line, the element and what is wrong, e.g.
 *     "arm.urdf:42: <joint name="elbow">: parent link 'uper_arm' does not exist".
 * Every problem found is reported at once, in file order (options.error).
 * Nothing is built on failure (*out is NULL). The loader never prints:
 * warnings go to options.warning and stay with the System.
 *
 * Inertias are judged per rigid body (links joined by fixed joints move as
 * one): only what leaves the dynamics undefined is refused; a link whose
 * inertia no rigid body has loads with a warning (docs/urdf.md, "Validation"). */
#ifndef MBK_URDF_H
#define MBK_URDF_H

#include <stdbool.h>
#include <stddef.h>
#include "mbk/system.h"
#include "mbk/spatial.h"

/* Declarations here are the public API: exported from the shared library, whose
   other symbols are hidden (CMakeLists.txt, "symbol visibility"). */
#if defined(__GNUC__)
#pragma GCC visibility push(default)
#endif
#ifdef __cplusplus
extern "C" {
#endif

typedef struct mbk_urdf_options {
    /* Mount a root link other than "world" on a Free mobilizer instead of
       welding it to Ground (default false). */
    bool floating_base;
    /* Gravity in Ground (default (0, 0, -9.81) m/s^2). A gravity element named
       "gravity" is always added, so it can be changed per State
       (mbk_force_set_gravity with mbk_force_find(forces, "gravity")). */
    mbk_vec3 gravity;
    /* Turn <limit lower upper> of revolute and prismatic joints into
       mbk_force_add_mobility_linear_stop elements named "limit:JOINT"
       (default true). A limit with lower >= upper adds no stop. */
    bool limits_as_stops;
    /* Stop stiffness, N m/rad or N/m (default 1e4), and dissipation, s/rad or s/m
       (Simbody's MobilityLinearStop law; default 1). */
    double stop_stiffness, stop_dissipation;
    /* Turn <dynamics damping> into mbk_force_add_mobility_linear_damper elements
       named "damping:JOINT" on every u of the joint (default true). */
    bool damping_as_dampers;
    /* Turn <mimic> into coordinate couplers q = multiplier q_other + offset
       (default true); false ignores mimic tags. */
    bool mimic_as_couplers;
    /* Realize the System's topology before returning (default true); false lets
       the caller add more elements first. */
    bool realize_topology;
    /* Largest input accepted, in bytes (default 16 MiB); larger input is refused
       with MBK_EPARSE before parsing. */
    size_t max_bytes;
    /* Name used in messages for mbk_urdf_load_string (default "<string>"). */
    const char *source_name;
    /* Optional: called once for each warning, in file order, before the load returns
       (something ignored, a physically odd inertia that still loads, a repair). The
       warnings are also kept with the System: mbk_urdf_get_warning. */
    void (*warning)(void *user, const char *message);
    void *warning_user;
    /* Optional: when the load fails, called once for each error, in file order (the
       loader reports every problem it can find at once; mbk_last_error() holds the first
       and how many more there are). */
    void (*error)(void *user, const char *message);
    void *error_user;

    /* ---- inertias (docs/urdf.md, "Validation") ---- */
    /* Refuse every link whose inertia no rigid body has (not positive definite with mass,
       breaking the triangle inequality), as a physical check of the file (default false:
       such links load with a warning when the rigid body they belong to is usable). */
    bool strict_inertia;
    /* Floors for the links of moving bodies (0: off, the default): a lighter link gets
       min_mass kg (at its centre of mass, or its origin without <inertial>), principal
       moments below min_inertia kg m^2 are raised to it. Each repair is a warning.
       MuJoCo calls them boundmass and boundinertia. */
    double min_mass, min_inertia;
    /* Replace an inertia that no rigid body has by the nearest one that a rigid body has
       (same principal axes, principal moments projected onto the triangle inequalities;
       default false). Each repair is a warning. */
    bool balance_inertia;

    /* ---- joint friction ---- */
    /* Turn <dynamics friction> into mbk_force_add_mobility_coulomb_friction elements named
       "friction:JOINT" on every u of the joint (default false: ignored with a warning). */
    bool friction_as_elements;
    /* Their transition velocity, rad/s or m/s (default 0.01). */
    double friction_transition_velocity;

    /* ---- ground contact ---- */
    /* Add a ground half-space z <= ground_height and Hunt-Crossley contact (with
       friction) for the <collision> shapes of every moving link: a sphere as it is, a box
       by small spheres at its corners and along its edges, a cylinder by small spheres on
       its two rims, a mesh by the same spheres as the box of its vertices'
       bounding box (mbk_urdf_mesh_bounding_box, at the mesh's origin and scale; a
       mesh whose file cannot be read, as not found or not STL/OBJ, is skipped with a
       warning that says why; default false: <collision> is ignored). Elements are
       named "contact:LINK". */
    bool ground_contact;
    double ground_height;               /* m (default 0) */
    double contact_modulus;             /* plane-strain modulus E, Pa (default 1e8) */
    double contact_dissipation;         /* Hunt-Crossley c, s/m (default 1) */
    double contact_static_friction;     /* (default 1.0) */
    double contact_dynamic_friction;    /* (default 0.8) */
    double contact_viscous_friction;    /* s/m (default 0) */
    double contact_transition_velocity; /* m/s (default 0.01) */
    double contact_point_radius;        /* radius of the spheres on box corners, edges and
                                           cylinder rims, m (default 0.005) */
} mbk_urdf_options;

/* The defaults described above. */
mbk_urdf_options mbk_urdf_options_default(void);

/* Build a System from a URDF file; opts NULL means the defaults. On success
   *out owns a new System (destroy it with mbk_system_destroy) and MBK_OK is
   returned; on failure *out is NULL and a negative status is returned with
   the message in mbk_last_error(). */
int mbk_urdf_load(const char *path, const mbk_urdf_options *opts, mbk_system **out);
/* The same from a NUL-terminated string holding the XML. */
int mbk_urdf_load_string(const char *xml, const mbk_urdf_options *opts, mbk_system **out);

/* ---- names (for a System built by the loader) ---- */
/* The body a joint moves (its child link's body), or -1 if there is no such joint
   or sys was not built from URDF. Body names are the link names:
   mbk_matter_find_body(mbk_multibody_get_matter(sys), "link"). */
int mbk_urdf_find_joint(const mbk_system *sys, const char *joint_name);
/* Name of the joint that moves a body ("" for Ground or the root link's own
   mounting; NULL for a bad body index or a System not built from URDF). */
const char *mbk_urdf_get_joint_name(const mbk_system *sys, int body);
/* URDF type of that joint ("revolute", ..., "fixed"; "floating" for a
   floating_base mounting, "fixed" for a welded root, "" for Ground; NULL on error). */
const char *mbk_urdf_get_joint_type(const mbk_system *sys, int body);
/* Link name of a body (NULL on error). */
const char *mbk_urdf_get_link_name(const mbk_system *sys, int body);
/* The <robot name> (NULL if sys was not built from URDF). */
const char *mbk_urdf_get_robot_name(const mbk_system *sys);
/* The <limit lower upper> of the revolute or prismatic joint that moves a body: 1 and
   the limits when it has them (lower < upper), 0 when not, negative on error. */
int mbk_urdf_get_joint_limits(const mbk_system *sys, int body, double *lower, double *upper);
/* Number of warnings the load gave (0 for a System not built from URDF). */
int mbk_urdf_get_num_warnings(const mbk_system *sys);
/* The i-th warning, in file order ("arm.urdf:12: <inertia> in <link name=...>: ...";
   NULL for a bad index). */
const char *mbk_urdf_get_warning(const mbk_system *sys, int i);

/* ---- mesh files ---- */
/* Bounding box of the vertices of the mesh file a URDF <mesh filename> names, scaled
   per axis by scale (NULL: 1 1 1; a negative factor mirrors): *min and *max in the
   mesh's frame. STL (binary or ASCII) and Wavefront OBJ files are read.
   Where the file is: "file://PATH" and absolute names as they are; "package://PKG/REST"
   and relative names in the folder of urdf_path (the URDF file naming the mesh; NULL:
   the working directory) and up to two folders above it, REST before PKG/REST.
   Errors: MBK_EINVAL (filename NULL or empty, min or max NULL, scale not finite),
   MBK_EIO (file not found or unreadable), MBK_EPARSE (unsupported format, not an STL
   file, a malformed vertex line, an empty mesh); the message names the file. */
int mbk_urdf_mesh_bounding_box(const char *urdf_path, const char *filename, const double scale[3], mbk_vec3 *min,
                               mbk_vec3 *max);

#ifdef __cplusplus
}
#endif
#if defined(__GNUC__)
#pragma GCC visibility pop
#endif
#endif
