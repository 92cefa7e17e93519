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
 * Nothing is built on failure (*out is NULL). The loader never prints. */
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
    /* Optional: called with a message for each thing that is ignored
       (friction, a limit on a continuous joint, an <inertial> on "world"). */
    void (*warning)(void *user, const char *message);
    void *warning_user;
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

#ifdef __cplusplus
}
#endif
#if defined(__GNUC__)
#pragma GCC visibility pop
#endif
#endif
