/* Mesh files in URDF (issue 20): mbk_urdf_mesh_bounding_box (STL binary and
 * ASCII, OBJ; where files are looked for; its errors) and ground contact on a
 * <collision> mesh: a foot whose mesh file is a small ASCII STL written here
 * gets the 44 box spheres of its scaled bounding box, placed through the
 * collision origin (checked against the box worked out by hand); the same
 * robot with a missing or unsupported mesh file loads with a warning that
 * says why, and no contact for that link; such a load leaves the thread's
 * error record as it was before it (mbk_last_error() is not left holding the
 * mesh reader's message). */
#define _POSIX_C_SOURCE 200809L /* mkdtemp */
#include <math.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include <mbk/mbk.h>
#include <mbk/urdf.h>

#include "mbk_test.h"

static char tmp[256];

static int has(const char *s, const char *sub) { return s && strstr(s, sub) != NULL; }

static void write_file(const char *rel, const void *data, size_t n)
{
    char path[512];
    snprintf(path, sizeof path, "%s/%s", tmp, rel);
    FILE *f = fopen(path, "wb");
    if (!CHECK(f != NULL)) return;
    CHECK(fwrite(data, 1, n, f) == n);
    fclose(f);
}
static void write_text(const char *rel, const char *text) { write_file(rel, text, strlen(text)); }

/* A tetrahedron: x in [-0.05, 0.05], y in [0.01, 0.05], z in [-0.02, 0.04]. */
static const char *const tetra_stl =
    "solid tetra\n"
    "  facet normal 0 0 -1\n    outer loop\n"
    "      vertex -0.05 0.01 -0.02\n      vertex 0.05 0.01 -0.02\n      vertex 0 0.05 -0.02\n"
    "    endloop\n  endfacet\n"
    "  facet normal 0 -1 0\n    outer loop\n"
    "      vertex -0.05 0.01 -0.02\n      vertex 0 0.03 0.04\n      vertex 0.05 0.01 -0.02\n"
    "    endloop\n  endfacet\n"
    "endsolid tetra\n";

/* ---- warnings ---- */
typedef struct msgs {
    int n;
    char text[8][1024];
} msgs;
static msgs warnings;
static void on_warning(void *user, const char *m)
{
    msgs *ms = user;
    if (ms->n < 8) snprintf(ms->text[ms->n], sizeof ms->text[0], "%s", m);
    ms->n++;
}

static const char *robot_fmt =
    "<robot name=\"hopper\">\n"
    "  <link name=\"foot\">\n"
    "    <inertial><mass value=\"1\"/><inertia ixx=\"1e-3\" iyy=\"1e-3\" izz=\"1e-3\" ixy=\"0\" ixz=\"0\" "
    "iyz=\"0\"/></inertial>\n"
    "    <collision>\n"
    "      <origin xyz=\"0.1 0.2 -0.3\" rpy=\"0 0 1.5707963267948966\"/>\n"
    "      <geometry><mesh filename=\"%s\" scale=\"2 1 0.5\"/></geometry>\n"
    "    </collision>\n"
    "  </link>\n"
    "</robot>\n";

/* Load the robot with the given mesh file; realize: options.realize_topology. */
static int load_robot_realized(const char *mesh, bool realize, mbk_system **sys)
{
    char xml[2048], path[512];
    snprintf(xml, sizeof xml, robot_fmt, mesh);
    write_text("robot/hopper.urdf", xml);
    snprintf(path, sizeof path, "%s/robot/hopper.urdf", tmp);
    mbk_urdf_options o = mbk_urdf_options_default();
    o.ground_contact = true;
    o.floating_base = true;
    o.realize_topology = realize;
    o.warning = on_warning, o.warning_user = &warnings;
    memset(&warnings, 0, sizeof warnings);
    *sys = NULL;
    return mbk_urdf_load(path, &o, sys);
}
static int load_robot(const char *mesh, mbk_system **sys) { return load_robot_realized(mesh, true, sys); }

static void test_ground_contact_mesh(void)
{
    mbk_system *sys;
    CHECK_INT(load_robot("package://robot/meshes/foot.stl", &sys), MBK_OK);
    CHECK_INT(warnings.n, 0);
    if (warnings.n) fprintf(stderr, "    warning: %s\n", warnings.text[0]);
    if (!sys) return;
    const mbk_forces *f = mbk_multibody_get_forces(sys);
    CHECK_INT(mbk_forces_get_num_elements(f), 1 + 44); /* gravity, then the box's spheres */
    CHECK(mbk_force_find(f, "contact:foot") == 1);
    /* By hand: the scaled box is x in [-0.1, 0.1], y in [0.01, 0.05], z in [-0.01, 0.02]:
       centre (0, 0.03, 0.005), half sizes (0.1, 0.02, 0.015); spheres of r = 0.005 inset
       to (0.095, 0.015, 0.01). In the collision frame a sphere sits at centre + (a, b, c)
       * inset, with a, b, c = +-1 (8 corners), or one of them in {-1/2, 0, 1/2} and the
       others +-1 (3 points on each of the 12 edges). The origin turns by 90 degrees
       about z, (x, y, z) -> (-y, x, z), and moves by (0.1, 0.2, -0.3). */
    const double in[3] = {0.095, 0.015, 0.01}, ctr[3] = {0, 0.03, 0.005};
    const double lv[5] = {-1, -0.5, 0, 0.5, 1};
    int matched[5][5][5];
    memset(matched, 0, sizeof matched);
    int expected = 0;
    for (int i = 0; i < 5; ++i)
        for (int j = 0; j < 5; ++j)
            for (int k = 0; k < 5; ++k)
                expected += ((i % 4 != 0) + (j % 4 != 0) + (k % 4 != 0)) <= 1;
    CHECK_INT(expected, 44);
    int good = 0;
    for (int e = 1; e < mbk_forces_get_num_elements(f); ++e) {
        int body = -1;
        mbk_vec3 p;
        double r = 0, h = 1;
        if (!CHECK(mbk_force_get_hunt_crossley_sphere(f, e, &body, &p, &r, &h) == MBK_OK)) continue;
        CHECK(body == 1 && r == 0.005 && h == 0);
        /* back to the collision frame */
        double c[3] = {p.y - 0.2, -(p.x - 0.1), p.z + 0.3};
        int idx[3], ok = 1;
        for (int a = 0; a < 3; ++a) {
            idx[a] = -1;
            for (int t = 0; t < 5; ++t)
                if (fabs(c[a] - (ctr[a] + lv[t] * in[a])) < 1e-12) idx[a] = t;
            ok = ok && idx[a] >= 0;
        }
        if (ok && (idx[0] % 4 != 0) + (idx[1] % 4 != 0) + (idx[2] % 4 != 0) <= 1 &&
            !matched[idx[0]][idx[1]][idx[2]]++)
            ++good;
        else
            fprintf(stderr, "    sphere %d at (%g, %g, %g) in the link is no expected point\n", e, p.x, p.y, p.z);
    }
    CHECK_INT(good, 44);
    mbk_system_destroy(sys);

    /* the file not there: a warning naming the link and why, no contact */
    CHECK_INT(load_robot("package://robot/meshes/nothere.stl", &sys), MBK_OK);
    CHECK(warnings.n == 1 && has(warnings.text[0], "hopper.urdf:6: <collision> in <link name=\"foot\">") &&
          has(warnings.text[0], "no part in ground contact") && has(warnings.text[0], "not found") &&
          has(warnings.text[0], "nothere.stl"));
    if (warnings.n) printf("missing mesh: %s\n", warnings.text[0]);
    if (sys) CHECK_INT(mbk_forces_get_num_elements(mbk_multibody_get_forces(sys)), 1);
    mbk_system_destroy(sys);

    /* a format mbk does not read */
    CHECK_INT(load_robot("package://robot/meshes/foot.dae", &sys), MBK_OK);
    CHECK(warnings.n == 1 && has(warnings.text[0], "no part in ground contact") &&
          has(warnings.text[0], "unsupported format 'dae'"));
    if (sys) CHECK_INT(mbk_forces_get_num_elements(mbk_multibody_get_forces(sys)), 1);
    mbk_system_destroy(sys);
}

/* A mesh skipped with a warning is no failure: after the load succeeds, mbk_last_error()
   is what it was before the load (empty after a clear), not the mesh reader's message.
   Without realize_topology nothing after the mesh clears the record, so a stale message
   would show there; with it, the realization clears the record as every realize does. */
static void test_skipped_mesh_keeps_error_record(void)
{
    static const char *const meshes[] = {"package://robot/meshes/nothere.stl", "package://robot/meshes/junk_skip.stl"};
    static const char *const why[] = {"not found", "not an STL file"};
    write_text("robot/meshes/junk_skip.stl", "this is no mesh\n");
    char urdf[512];
    snprintf(urdf, sizeof urdf, "%s/robot/hopper.urdf", tmp);
    for (int i = 0; i < 4; ++i) {
        const char *mesh = meshes[i % 2], *reason = why[i % 2];
        bool realize = i >= 2;
        /* planted: the mesh reader on its own does leave its message, so an empty record below is the loader's doing */
        mbk_vec3 lo, hi;
        const double one[3] = {1, 1, 1};
        mbk_clear_error();
        CHECK(mbk_urdf_mesh_bounding_box(urdf, mesh, one, &lo, &hi) < 0 && has(mbk_last_error(), reason));
        /* cleared before: the load succeeds, warns as before, and leaves the record empty */
        mbk_clear_error();
        mbk_system *sys = NULL;
        CHECK_INT(load_robot_realized(mesh, realize, &sys), MBK_OK);
        CHECK(sys != NULL);
        CHECK(warnings.n == 1 && has(warnings.text[0], "no part in ground contact") && has(warnings.text[0], reason));
        CHECK_INT(mbk_last_status(), MBK_OK);
        if (!CHECK(mbk_last_error()[0] == '\0')) fprintf(stderr, "    stale after the load: %s\n", mbk_last_error());
        mbk_system_destroy(sys);
        /* an earlier failure of the caller's own is not replaced by the mesh's (realizing clears it) */
        mbk_set_error(MBK_EUSER, "the caller's own failure");
        CHECK_INT(load_robot_realized(mesh, realize, &sys), MBK_OK);
        CHECK(!has(mbk_last_error(), "mesh"));
        if (!realize) CHECK(mbk_last_status() == MBK_EUSER && !strcmp(mbk_last_error(), "the caller's own failure"));
        mbk_system_destroy(sys);
    }
    mbk_clear_error();
    printf("a mesh skipped with a warning leaves mbk_last_error() as it was before the load\n");
}

static void put_f32(unsigned char *b, float x)
{
    unsigned int u;
    memcpy(&u, &x, sizeof u);
    for (int i = 0; i < 4; ++i) b[i] = (unsigned char)(u >> (8 * i));
}

static int box_is(const mbk_vec3 *lo, const mbk_vec3 *hi, double x0, double y0, double z0, double x1, double y1,
                  double z1, double tol)
{
    int ok = fabs(lo->x - x0) <= tol && fabs(lo->y - y0) <= tol && fabs(lo->z - z0) <= tol &&
             fabs(hi->x - x1) <= tol && fabs(hi->y - y1) <= tol && fabs(hi->z - z1) <= tol;
    if (!ok)
        fprintf(stderr, "    box (%g %g %g) .. (%g %g %g)\n", lo->x, lo->y, lo->z, hi->x, hi->y, hi->z);
    return ok;
}

static void test_bounding_box(void)
{
    char urdf[512], abs[600];
    snprintf(urdf, sizeof urdf, "%s/robot/hopper.urdf", tmp);
    mbk_vec3 lo, hi;
    const double s[3] = {2, 1, 0.5}, mirror[3] = {-1, 1, 1};

    /* ASCII STL; relative, package:// and file:// names; scale; mirror */
    CHECK_INT(mbk_urdf_mesh_bounding_box(urdf, "meshes/foot.stl", NULL, &lo, &hi), MBK_OK);
    CHECK(box_is(&lo, &hi, -0.05, 0.01, -0.02, 0.05, 0.05, 0.04, 0));
    CHECK_INT(mbk_urdf_mesh_bounding_box(urdf, "package://robot/meshes/foot.stl", s, &lo, &hi), MBK_OK);
    CHECK(box_is(&lo, &hi, -0.1, 0.01, -0.01, 0.1, 0.05, 0.02, 1e-17));
    snprintf(abs, sizeof abs, "file://%s/robot/meshes/foot.stl", tmp);
    CHECK_INT(mbk_urdf_mesh_bounding_box(NULL, abs, mirror, &lo, &hi), MBK_OK);
    CHECK(box_is(&lo, &hi, -0.05, 0.01, -0.02, 0.05, 0.05, 0.04, 0));
    /* a file one folder above the URDF's */
    write_text("up.obj", "# a triangle\nv 1 2 3\nv -1 0 5\nvt 9 9\nvn 0 0 1\nv 0 4 -2\nf 1 2 3\n");
    CHECK_INT(mbk_urdf_mesh_bounding_box(urdf, "package://x/up.obj", NULL, &lo, &hi), MBK_OK);
    CHECK(box_is(&lo, &hi, -1, 0, -2, 1, 4, 5, 0));

    /* binary STL: one triangle */
    unsigned char bin[84 + 50];
    memset(bin, 0, sizeof bin);
    memcpy(bin, "solid but binary", 16); /* binary files may start so too */
    bin[80] = 1;
    const float v[9] = {0.5f, -1, 0, 1.5f, 2, 0.25f, 1, 0, -0.75f};
    for (int i = 0; i < 9; ++i) put_f32(bin + 84 + 12 + 4 * i, v[i]);
    write_file("robot/meshes/bin.STL", bin, sizeof bin);
    CHECK_INT(mbk_urdf_mesh_bounding_box(urdf, "meshes/bin.STL", NULL, &lo, &hi), MBK_OK);
    CHECK(box_is(&lo, &hi, 0.5, -1, -0.75, 1.5, 2, 0.25, 0));

    /* errors */
    CHECK_INT(mbk_urdf_mesh_bounding_box(urdf, "meshes/nothere.stl", NULL, &lo, &hi), MBK_EIO);
    CHECK(has(mbk_last_error(), "mesh 'meshes/nothere.stl': file not found") &&
          has(mbk_last_error(), "robot/meshes/nothere.stl"));
    printf("missing: %s\n", mbk_last_error());
    CHECK_INT(mbk_urdf_mesh_bounding_box(urdf, "meshes/foot.dae", NULL, &lo, &hi), MBK_EPARSE);
    CHECK(has(mbk_last_error(), "unsupported format 'dae'") && has(mbk_last_error(), "STL") &&
          has(mbk_last_error(), "OBJ"));
    printf("unsupported: %s\n", mbk_last_error());
    write_text("robot/meshes/bad.stl", "solid bad\n facet normal 0 0 1\n  outer loop\n   vertex 1 2\n");
    CHECK_INT(mbk_urdf_mesh_bounding_box(urdf, "meshes/bad.stl", NULL, &lo, &hi), MBK_EPARSE);
    CHECK(has(mbk_last_error(), "bad.stl") && has(mbk_last_error(), ":4: 'vertex 1 2' needs three finite numbers"));
    printf("malformed: %s\n", mbk_last_error());
    write_text("robot/meshes/nan.stl", "solid bad\n vertex 1 2 nan\n");
    CHECK_INT(mbk_urdf_mesh_bounding_box(urdf, "meshes/nan.stl", NULL, &lo, &hi), MBK_EPARSE);
    write_text("robot/meshes/junk.stl", "this is no mesh at all, and it is not 84 bytes + 50 per triangle long..\n");
    CHECK_INT(mbk_urdf_mesh_bounding_box(urdf, "meshes/junk.stl", NULL, &lo, &hi), MBK_EPARSE);
    CHECK(has(mbk_last_error(), "not an STL file"));
    write_text("robot/meshes/short.stl", "abc");
    CHECK_INT(mbk_urdf_mesh_bounding_box(urdf, "meshes/short.stl", NULL, &lo, &hi), MBK_EPARSE);
    CHECK(has(mbk_last_error(), "not an STL file"));
    write_text("robot/meshes/empty.stl", "solid empty\nendsolid empty\n");
    CHECK_INT(mbk_urdf_mesh_bounding_box(urdf, "meshes/empty.stl", NULL, &lo, &hi), MBK_EPARSE);
    CHECK(has(mbk_last_error(), "empty (no vertices)"));
    write_text("robot/meshes/empty.obj", "");
    CHECK_INT(mbk_urdf_mesh_bounding_box(urdf, "meshes/empty.obj", NULL, &lo, &hi), MBK_EPARSE);
    CHECK(has(mbk_last_error(), "empty"));
    CHECK_INT(mbk_urdf_mesh_bounding_box(urdf, "meshes", NULL, &lo, &hi), MBK_EIO); /* a folder */
    CHECK_INT(mbk_urdf_mesh_bounding_box(urdf, NULL, NULL, &lo, &hi), MBK_EINVAL);
    CHECK_INT(mbk_urdf_mesh_bounding_box(urdf, "", NULL, &lo, &hi), MBK_EINVAL);
    CHECK_INT(mbk_urdf_mesh_bounding_box(urdf, "meshes/foot.stl", NULL, NULL, &hi), MBK_EINVAL);
    const double bad[3] = {1, NAN, 1};
    CHECK_INT(mbk_urdf_mesh_bounding_box(urdf, "meshes/foot.stl", bad, &lo, &hi), MBK_EINVAL);
}

int main(void)
{
    snprintf(tmp, sizeof tmp, "/tmp/mbk_urdf_mesh_XXXXXX");
    if (!CHECK(mkdtemp(tmp) != NULL)) return mbk_test_finish();
    char d[512];
    snprintf(d, sizeof d, "%s/robot", tmp);
    mkdir(d, 0700);
    snprintf(d, sizeof d, "%s/robot/meshes", tmp);
    mkdir(d, 0700);
    write_text("robot/meshes/foot.stl", tetra_stl);
    write_text("robot/meshes/foot.dae", "<COLLADA/>\n");
    test_ground_contact_mesh();
    test_skipped_mesh_keeps_error_record();
    test_bounding_box();
    /* clean up */
    static const char *const files[] = {"robot/meshes/foot.stl", "robot/meshes/foot.dae", "robot/meshes/bin.STL",
                                        "robot/meshes/bad.stl", "robot/meshes/nan.stl", "robot/meshes/junk.stl",
                                        "robot/meshes/short.stl", "robot/meshes/empty.stl", "robot/meshes/junk_skip.stl",
                                        "robot/meshes/empty.obj", "robot/hopper.urdf", "up.obj"};
    for (size_t i = 0; i < sizeof files / sizeof files[0]; ++i) {
        snprintf(d, sizeof d, "%s/%s", tmp, files[i]);
        remove(d);
    }
    snprintf(d, sizeof d, "%s/robot/meshes", tmp);
    rmdir(d);
    snprintf(d, sizeof d, "%s/robot", tmp);
    rmdir(d);
    rmdir(tmp);
    return mbk_test_finish();
}
