/* Every error path of the URDF loader: each bad input gives the expected
 * status, a message naming the source, the line and the element, *out set
 * to NULL, and no crash or leak (run under the sanitizers in CI). */
#define _POSIX_C_SOURCE 200809L
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <unistd.h>

#include <mbk/mbk.h>
#include <mbk/urdf.h>

#include "mbk_test.h"

/* A robot with one massive link on a revolute joint to "world"; %s is spliced in. */
#define HEAD "<robot name=\"r\">\n"
#define WORLD "<link name=\"world\"/>\n"
#define MASSIVE(name)                                                                          \
    "<link name=\"" name "\"><inertial><mass value=\"1\"/>"                                    \
    "<inertia ixx=\"1\" iyy=\"1\" izz=\"1\" ixy=\"0\" ixz=\"0\" iyz=\"0\"/></inertial></link>\n"
#define JOINT(name, type, parent, child)                                                              \
    "<joint name=\"" name "\" type=\"" type "\"><parent link=\"" parent "\"/><child link=\"" child "\"/>" \
    "</joint>\n"

typedef struct bad_case {
    const char *what;   /* what the case is about */
    const char *xml;
    int status;
    const char *expect[3]; /* substrings of the message */
} bad_case;

#define BIG_LINK(mass, moment)                                                                 \
    "<link name=\"a\"><inertial><mass value=\"" mass "\"/><inertia ixx=\"" moment "\" iyy=\"" moment \
    "\" izz=\"" moment "\" ixy=\"0\" ixz=\"0\" iyz=\"0\"/></inertial></link>\n"

static const bad_case cases[] = {
    /* values whose checks overflow: called too large, with the limit (not "not positive definite") */
    {"mass too large to check", HEAD WORLD BIG_LINK("1e306", "1e110") JOINT("j", "revolute", "world", "a") "</robot>\n",
     MBK_EPARSE, {":3: <mass> in <link name=\"a\">", "too large to check", "limit is 1e+100 kg"}},
    {"inertia too large to check", HEAD WORLD BIG_LINK("1", "1e110") JOINT("j", "revolute", "world", "a") "</robot>\n",
     MBK_EPARSE, {":3: <inertia> in <link name=\"a\">", "too large to check", "MBK_MASS_PROPS_MAX"}},
    {"empty input", "", MBK_EPARSE, {"<string>:1:", "malformed XML", "no element found"}},
    {"unclosed tag", HEAD WORLD "<link name=\"a\">\n</robot>\n", MBK_EPARSE, {":4:", "malformed XML", "mismatched tag"}},
    {"text after the root", HEAD WORLD "</robot>\n<robot/>\n", MBK_EPARSE, {":4:", "junk after document element"}},
    {"not UTF-8", "<robot name=\"\xff\xfe\"/>", MBK_EPARSE, {":1:", "malformed XML"}},
    {"unknown encoding", "<?xml version=\"1.0\" encoding=\"Shift_JIS\"?>\n<robot/>\n", MBK_EPARSE,
     {":1:", "unknown encoding", "convert the file to UTF-8"}},
    {"wrong root", "<?xml version=\"1.0\"?>\n<sdf/>\n", MBK_EPARSE, {":2:", "root element is <sdf>", "<robot>"}},
    {"no links", HEAD "</robot>\n", MBK_EPARSE, {":1:", "<robot>", "no <link>"}},
    {"link without name", HEAD "<link/>\n</robot>\n", MBK_EPARSE, {":2:", "<link>", "name is missing"}},
    {"link with empty name", HEAD "<link name=\"\"/>\n</robot>\n", MBK_EPARSE, {":2:", "name is missing or empty"}},
    {"duplicate link", HEAD WORLD MASSIVE("a") "\n" MASSIVE("a") "</robot>\n", MBK_EPARSE,
     {":5:", "<link name=\"a\">", "duplicate link name (also on line 3)"}},
    {"duplicate joint", HEAD WORLD MASSIVE("a") MASSIVE("b") JOINT("j", "revolute", "world", "a")
     JOINT("j", "revolute", "a", "b") "</robot>\n", MBK_EPARSE,
     {":6:", "<joint name=\"j\">", "duplicate joint name (also on line 5)"}},
    {"joint without name", HEAD WORLD "<joint type=\"fixed\"/>\n</robot>\n", MBK_EPARSE, {":3:", "<joint>", "name"}},
    {"joint without type", HEAD WORLD "<joint name=\"j\"/>\n</robot>\n", MBK_EPARSE,
     {":3:", "<joint name=\"j\">", "type is missing"}},
    {"unknown joint type", HEAD WORLD MASSIVE("a") "<joint name=\"j\" type=\"ball\">\n</joint>\n</robot>\n",
     MBK_EPARSE, {":4:", "<joint name=\"j\">", "unknown joint type 'ball'"}},
    {"missing parent", HEAD WORLD MASSIVE("a") "<joint name=\"j\" type=\"fixed\"><child link=\"a\"/></joint>\n</robot>\n",
     MBK_EPARSE, {":4:", "<joint name=\"j\">", "<parent> is missing"}},
    {"missing child", HEAD WORLD MASSIVE("a") "<joint name=\"j\" type=\"fixed\">\n<parent link=\"world\"/></joint>\n</robot>\n",
     MBK_EPARSE, {":4:", "<child> is missing"}},
    {"parent without link", HEAD WORLD MASSIVE("a") "<joint name=\"j\" type=\"fixed\">\n<parent/></joint>\n</robot>\n",
     MBK_EPARSE, {":5:", "<parent> in <joint name=\"j\">", "link is missing"}},
    {"unknown parent", HEAD WORLD MASSIVE("a") "<joint name=\"j\" type=\"fixed\">\n<parent link=\"wrold\"/>\n"
     "<child link=\"a\"/></joint>\n</robot>\n", MBK_EPARSE, {":5:", "<joint name=\"j\">", "parent link 'wrold' does not exist"}},
    {"unknown child", HEAD WORLD MASSIVE("a") "<joint name=\"j\" type=\"fixed\">\n<parent link=\"world\"/>\n"
     "<child link=\"b\"/></joint>\n</robot>\n", MBK_EPARSE, {":6:", "child link 'b' does not exist"}},
    {"own parent", HEAD WORLD MASSIVE("a") JOINT("j", "fixed", "world", "a") JOINT("k", "fixed", "a", "a") "</robot>\n",
     MBK_EPARSE, {":5:", "<joint name=\"k\">", "both parent and child"}},
    {"two parents", HEAD WORLD MASSIVE("a") MASSIVE("b") JOINT("j", "revolute", "world", "a")
     JOINT("k", "revolute", "b", "a") JOINT("m", "revolute", "world", "b") "</robot>\n", MBK_EPARSE,
     {":6:", "<joint name=\"k\">", "already has parent joint 'j' (line 5)"}},
    {"two roots", HEAD WORLD MASSIVE("a") "</robot>\n", MBK_EPARSE,
     {":3:", "<link name=\"a\">", "both have no parent joint"}},
    {"cycle, no root", HEAD MASSIVE("a") MASSIVE("b") JOINT("j", "revolute", "a", "b") JOINT("k", "revolute", "b", "a")
     "</robot>\n", MBK_EPARSE, {"<joint name=", "cycle", "no link is the root"}},
    {"cycle beside the tree", HEAD WORLD MASSIVE("a") MASSIVE("b") MASSIVE("c") JOINT("j", "revolute", "world", "a")
     JOINT("k", "revolute", "b", "c") JOINT("m", "revolute", "c", "b") "</robot>\n", MBK_EPARSE,
     {"<joint name=", "cycle through link", "not connected to root link 'world'"}},
    {"inertial twice", HEAD "<link name=\"a\"><inertial/>\n<inertial/></link>\n</robot>\n", MBK_EPARSE,
     {":3:", "<inertial> in <link name=\"a\">", "a second <inertial> (the first is on line 2)"}},
    {"inertial without mass", HEAD "<link name=\"a\">\n<inertial><inertia ixx=\"1\" iyy=\"1\" izz=\"1\" ixy=\"0\" "
     "ixz=\"0\" iyz=\"0\"/></inertial></link>\n</robot>\n", MBK_EPARSE, {":3:", "<inertial> in <link name=\"a\">", "<mass> is missing"}},
    {"inertial without inertia", HEAD "<link name=\"a\">\n<inertial><mass value=\"1\"/></inertial></link>\n</robot>\n",
     MBK_EPARSE, {":3:", "<inertia> is missing"}},
    {"negative mass", HEAD "<link name=\"a\"><inertial>\n<mass value=\"-1\"/></inertial></link>\n</robot>\n", MBK_EPARSE,
     {":3:", "<mass> in <link name=\"a\">", "mass -1 is negative"}},
    {"NaN mass", HEAD "<link name=\"a\"><inertial>\n<mass value=\"nan\"/></inertial></link>\n</robot>\n", MBK_EPARSE,
     {":3:", "<mass> in <link name=\"a\">", "'nan' is not a finite number"}},
    {"infinite mass", HEAD "<link name=\"a\"><inertial>\n<mass value=\"1e999\"/></inertial></link>\n</robot>\n",
     MBK_EPARSE, {":3:", "not a finite number"}},
    /* C's hexadecimal floats are no URDF numbers (urdfdom refuses them; strtod read 0x1p1 as 2) */
    {"hexadecimal mass", HEAD "<link name=\"a\"><inertial>\n<mass value=\"0x1p1\"/><inertia ixx=\"1\" iyy=\"1\" izz=\"1\" "
     "ixy=\"0\" ixz=\"0\" iyz=\"0\"/></inertial></link>\n</robot>\n",
     MBK_EPARSE, {":3: <mass> in <link name=\"a\">", "value=\"0x1p1\": '0x1p1' is a hexadecimal number", "in decimal (2)"}},
    {"hexadecimal origin", HEAD WORLD MASSIVE("a") "<joint name=\"j\" type=\"fixed\"><parent link=\"world\"/>"
     "<child link=\"a\"/>\n<origin xyz=\"0 -0X10 0\"/></joint>\n</robot>\n", MBK_EPARSE,
     {":5: <origin> in <joint name=\"j\">", "xyz=\"0 -0X10 0\": '-0X10' is a hexadecimal number", "(-16)"}},
    {"mass not a number", HEAD "<link name=\"a\"><inertial>\n<mass value=\"heavy\"/></inertial></link>\n</robot>\n",
     MBK_EPARSE, {":3:", "'heavy' is not a number"}},
    {"mass without value", HEAD "<link name=\"a\"><inertial>\n<mass/></inertial></link>\n</robot>\n", MBK_EPARSE,
     {":3:", "attribute value is missing"}},
    {"two masses", HEAD "<link name=\"a\"><inertial>\n<mass value=\"1\"/><mass value=\"2\"/></inertial></link>\n</robot>\n",
     MBK_EPARSE, {":3:", "a second <mass>"}},
    {"inertia attribute missing", HEAD "<link name=\"a\"><inertial><mass value=\"1\"/>\n<inertia ixx=\"1\" iyy=\"1\" "
     "ixy=\"0\" ixz=\"0\" iyz=\"0\"/></inertial></link>\n</robot>\n", MBK_EPARSE, {":3:", "<inertia> in <link name=\"a\">", "izz is missing"}},
    {"origin with two numbers", HEAD WORLD MASSIVE("a") "<joint name=\"j\" type=\"fixed\"><parent link=\"world\"/>"
     "<child link=\"a\"/>\n<origin xyz=\"1 2\"/></joint>\n</robot>\n", MBK_EPARSE,
     {":5:", "<origin> in <joint name=\"j\">", "xyz=\"1 2\" needs 3 numbers, found 2"}},
    {"origin with four numbers", HEAD WORLD MASSIVE("a") "<joint name=\"j\" type=\"fixed\"><parent link=\"world\"/>"
     "<child link=\"a\"/>\n<origin rpy=\"1 2 3 4\"/></joint>\n</robot>\n", MBK_EPARSE, {":5:", "more than 3 numbers"}},
    {"origin NaN", HEAD WORLD MASSIVE("a") "<joint name=\"j\" type=\"fixed\"><parent link=\"world\"/>"
     "<child link=\"a\"/>\n<origin xyz=\"0 NaN 0\"/></joint>\n</robot>\n", MBK_EPARSE, {":5:", "'NaN' is not a finite number"}},
    {"two origins", HEAD WORLD MASSIVE("a") "<joint name=\"j\" type=\"fixed\"><parent link=\"world\"/>"
     "<child link=\"a\"/><origin/>\n<origin/></joint>\n</robot>\n", MBK_EPARSE, {":5:", "a second <origin> (the first is on line 4)"}},
    {"two parents in one joint", HEAD WORLD MASSIVE("a") "<joint name=\"j\" type=\"fixed\"><parent link=\"world\"/>\n"
     "<parent link=\"a\"/></joint>\n</robot>\n", MBK_EPARSE, {":5:", "a second <parent>"}},
    {"zero axis", HEAD WORLD MASSIVE("a") "<joint name=\"j\" type=\"revolute\"><parent link=\"world\"/>"
     "<child link=\"a\"/>\n<axis xyz=\"0 0 0\"/></joint>\n</robot>\n", MBK_EPARSE,
     {":5:", "<axis> in <joint name=\"j\">", "zero length"}},
    /* the threshold is said: a tiny axis was called "zero length" */
    {"zero axis: threshold", HEAD WORLD MASSIVE("a") "<joint name=\"j\" type=\"revolute\"><parent link=\"world\"/>"
     "<child link=\"a\"/>\n<axis xyz=\"0 0 0\"/></joint>\n</robot>\n", MBK_EPARSE,
     {":5:", "zero length", "any length above 1e-12"}},
    {"axis too short", HEAD WORLD MASSIVE("a") "<joint name=\"j\" type=\"prismatic\"><parent link=\"world\"/>"
     "<child link=\"a\"/>\n<axis xyz=\"1e-13 0 0\"/></joint>\n</robot>\n", MBK_EPARSE,
     {":5: <axis> in <joint name=\"j\">", "the axis has length 1e-13, not above 1e-12", "give the joint's direction"}},
    {"limits crossed", HEAD WORLD MASSIVE("a") "<joint name=\"j\" type=\"revolute\"><parent link=\"world\"/>"
     "<child link=\"a\"/>\n<limit lower=\"1\" upper=\"-1\"/></joint>\n</robot>\n", MBK_EPARSE,
     {":5:", "<limit> in <joint name=\"j\">", "lower limit 1 is above upper limit -1"}},
    {"limit effort NaN", HEAD WORLD MASSIVE("a") "<joint name=\"j\" type=\"revolute\"><parent link=\"world\"/>"
     "<child link=\"a\"/>\n<limit effort=\"nan\"/></joint>\n</robot>\n", MBK_EPARSE, {":5:", "effort=\"nan\""}},
    {"negative damping", HEAD WORLD MASSIVE("a") "<joint name=\"j\" type=\"revolute\"><parent link=\"world\"/>"
     "<child link=\"a\"/>\n<dynamics damping=\"-1\"/></joint>\n</robot>\n", MBK_EPARSE,
     {":5:", "<dynamics> in <joint name=\"j\">", "damping -1 is negative"}},
    {"negative friction", HEAD WORLD MASSIVE("a") "<joint name=\"j\" type=\"revolute\"><parent link=\"world\"/>"
     "<child link=\"a\"/>\n<dynamics friction=\"-2\"/></joint>\n</robot>\n", MBK_EPARSE, {":5:", "friction -2 is negative"}},
    {"mimic itself", HEAD WORLD MASSIVE("a") "<joint name=\"j\" type=\"revolute\"><parent link=\"world\"/>"
     "<child link=\"a\"/>\n<mimic joint=\"j\"/></joint>\n</robot>\n", MBK_EPARSE, {":5:", "cannot mimic itself"}},
    {"mimic without joint", HEAD WORLD MASSIVE("a") "<joint name=\"j\" type=\"revolute\"><parent link=\"world\"/>"
     "<child link=\"a\"/>\n<mimic/></joint>\n</robot>\n", MBK_EPARSE, {":5:", "attribute joint is missing"}},
    {"mimic multiplier NaN", HEAD WORLD MASSIVE("a") "<joint name=\"j\" type=\"revolute\"><parent link=\"world\"/>"
     "<child link=\"a\"/>\n<mimic joint=\"j\" multiplier=\"nan\"/></joint>\n</robot>\n", MBK_EPARSE, {":5:", "multiplier"}},
    {"mimic loop", HEAD WORLD MASSIVE("a") MASSIVE("b") "<joint name=\"j\" type=\"revolute\"><parent link=\"world\"/>"
     "<child link=\"a\"/>\n<mimic joint=\"k\"/></joint>\n<joint name=\"k\" type=\"revolute\"><parent link=\"a\"/>"
     "<child link=\"b\"/>\n<mimic joint=\"j\"/></joint>\n</robot>\n", MBK_EPARSE, {"<mimic> in <joint name=", "form a loop"}},
    {"moving massless link", HEAD WORLD "<link name=\"a\"/>\n" JOINT("j", "revolute", "world", "a") "</robot>\n",
     MBK_EPARSE, {":4:", "<joint name=\"j\">", "without mass or inertia (child 'a')"}},
    {"DOCTYPE refused", "<?xml version=\"1.0\"?>\n<!DOCTYPE robot [\n<!ENTITY a \"aaaaaaaaaa\">\n"
     "<!ENTITY b \"&a;&a;&a;&a;&a;&a;&a;&a;&a;&a;\">\n]>\n<robot name=\"&b;\"><link name=\"x\"/></robot>\n",
     MBK_EPARSE, {":2:", "<!DOCTYPE>", "not accepted"}},
    {"external entity refused", "<!DOCTYPE r SYSTEM \"file:///etc/passwd\">\n<robot/>\n", MBK_EPARSE, {":1:", "<!DOCTYPE>"}},
    {"undefined entity", "<robot name=\"&x;\"><link name=\"a\"/></robot>\n", MBK_EPARSE, {":1:", "undefined entity"}},
};

/* Per-link inertia checks, with options.strict_inertia (without it these load with a
   warning: test_urdf_robots.c). */
static const bad_case strict_cases[] = {
    {"inertia not positive definite", HEAD WORLD "<link name=\"a\"><inertial><mass value=\"1\"/>\n<inertia ixx=\"1\" "
     "iyy=\"1\" izz=\"0\" ixy=\"0\" ixz=\"0\" iyz=\"0\"/></inertial></link>\n" JOINT("j", "revolute", "world", "a")
     "</robot>\n", MBK_EPARSE, {":4:", "<inertia> in <link name=\"a\">", "not positive definite"}},
    {"inertia indefinite", HEAD "<link name=\"a\"><inertial><mass value=\"1\"/>\n<inertia ixx=\"1\" iyy=\"1\" izz=\"1\" "
     "ixy=\"2\" ixz=\"0\" iyz=\"0\"/></inertial></link>\n</robot>\n", MBK_EPARSE, {":3:", "principal moments -1, 1, 3"}},
    {"massless link with negative inertia", HEAD "<link name=\"a\"><inertial><mass value=\"0\"/>\n<inertia ixx=\"-1\" "
     "iyy=\"1\" izz=\"1\" ixy=\"0\" ixz=\"0\" iyz=\"0\"/></inertial></link>\n</robot>\n", MBK_EPARSE,
     {":3:", "not positive semidefinite"}},
    {"triangle inequality", HEAD "<link name=\"a\"><inertial><mass value=\"1\"/>\n<inertia ixx=\"1\" iyy=\"1\" izz=\"3\" "
     "ixy=\"0\" ixz=\"0\" iyz=\"0\"/></inertial></link>\n</robot>\n", MBK_EPARSE, {":3:", "triangle inequality"}},
};

static int contains(const char *s, const char *sub) { return strstr(s, sub) != NULL; }

static void run_case(const bad_case *c, bool strict)
{
    mbk_system *sys = (mbk_system *)&sys; /* must come back NULL */
    mbk_clear_error();
    mbk_urdf_options o = mbk_urdf_options_default();
    o.strict_inertia = strict;
    int rc = mbk_urdf_load_string(c->xml, &o, &sys);
    const char *msg = mbk_last_error();
    int ok = CHECK(rc == c->status) & CHECK(sys == NULL) & CHECK(mbk_last_status() == c->status) &
             CHECK(contains(msg, "<string>"));
    for (int k = 0; k < 3 && c->expect[k]; ++k) ok &= CHECK(contains(msg, c->expect[k]));
    if (!ok) fprintf(stderr, "  case '%s': rc %d (%s), message: %s\n", c->what, rc, mbk_status_name(rc), msg);
    if (rc == MBK_OK) mbk_system_destroy(sys);
}

static void test_limits_and_arguments(void)
{
    mbk_system *sys = NULL;
    mbk_urdf_options o = mbk_urdf_options_default();
    /* NULL arguments */
    CHECK(mbk_urdf_load_string(NULL, NULL, &sys) == MBK_EINVAL && sys == NULL);
    CHECK(mbk_urdf_load_string("<robot/>", NULL, NULL) == MBK_EINVAL);
    CHECK(mbk_urdf_load(NULL, NULL, &sys) == MBK_EINVAL && sys == NULL);
    CHECK(mbk_urdf_load("x.urdf", NULL, NULL) == MBK_EINVAL);
    /* bad options */
    o.gravity.y = NAN;
    CHECK(mbk_urdf_load_string("<robot/>", &o, &sys) == MBK_EINVAL && contains(mbk_last_error(), "gravity"));
    o = mbk_urdf_options_default();
    o.stop_stiffness = -1;
    CHECK(mbk_urdf_load_string("<robot/>", &o, &sys) == MBK_EINVAL && contains(mbk_last_error(), "stop_stiffness"));
    o = mbk_urdf_options_default();
    o.max_bytes = 0;
    CHECK(mbk_urdf_load_string("<robot/>", &o, &sys) == MBK_EINVAL);
    /* size limit, string and file */
    o = mbk_urdf_options_default();
    o.max_bytes = 10;
    CHECK(mbk_urdf_load_string("<robot name=\"too long\"/>", &o, &sys) == MBK_EPARSE && sys == NULL);
    CHECK(contains(mbk_last_error(), "limit is 10") && contains(mbk_last_error(), "max_bytes"));
    const char *path = "test_urdf_errors_big.urdf";
    FILE *f = fopen(path, "w");
    if (CHECK(f != NULL)) {
        fputs("<robot name=\"r\">", f);
        for (int i = 0; i < 2000; ++i) fputs("<!-- padding padding padding -->\n", f);
        fputs("<link name=\"a\"/></robot>\n", f);
        fclose(f);
        o.max_bytes = 4096;
        CHECK(mbk_urdf_load(path, &o, &sys) == MBK_EPARSE && sys == NULL);
        CHECK(contains(mbk_last_error(), path) && contains(mbk_last_error(), "limit of 4096 bytes"));
        o.max_bytes = (size_t)1 << 20;
        CHECK(mbk_urdf_load(path, &o, &sys) == MBK_OK && sys != NULL);
        mbk_system_destroy(sys);
        remove(path);
    }
    /* a file that does not exist */
    CHECK(mbk_urdf_load("no/such/file.urdf", NULL, &sys) == MBK_EIO && sys == NULL);
    CHECK(contains(mbk_last_error(), "no/such/file.urdf") && contains(mbk_last_error(), "cannot open"));
    CHECK(contains(mbk_last_error(), "no such file") && contains(mbk_last_error(), "expected the path of a URDF file"));
    /* source name in messages */
    o = mbk_urdf_options_default();
    o.source_name = "my-robot";
    CHECK(mbk_urdf_load_string("<robot>\n<link/>\n</robot>", &o, &sys) == MBK_EPARSE);
    CHECK(contains(mbk_last_error(), "my-robot:2: <link>"));
    /* nesting too deep: refused, not a stack overflow */
    {
        enum { DEPTH = 300 };
        char *xml = malloc(DEPTH * 8 + 64);
        size_t n = 0;
        n += (size_t)sprintf(xml + n, "<robot>");
        for (int i = 0; i < DEPTH; ++i) n += (size_t)sprintf(xml + n, "<a>");
        for (int i = 0; i < DEPTH; ++i) n += (size_t)sprintf(xml + n, "</a>");
        sprintf(xml + n, "</robot>");
        CHECK(mbk_urdf_load_string(xml, NULL, &sys) == MBK_EPARSE && contains(mbk_last_error(), "nested deeper"));
        free(xml);
    }
    /* names of a System not built from URDF */
    mbk_system *plain = mbk_multibody_create("plain");
    CHECK(mbk_urdf_find_joint(plain, "j") == -1);
    CHECK(mbk_urdf_get_joint_name(plain, 0) == NULL && mbk_urdf_get_link_name(plain, 0) == NULL);
    CHECK(mbk_urdf_get_joint_type(plain, 0) == NULL && mbk_urdf_get_robot_name(plain) == NULL);
    CHECK(mbk_urdf_find_joint(NULL, "j") == -1 && mbk_urdf_get_robot_name(NULL) == NULL);
    mbk_system_destroy(plain);
}

/* Paths that are not regular files: refused before reading, saying what was found
   and what was expected. A FIFO with no writer used to block the loader forever:
   an alarm ends this process if that comes back (and ctest has a TIMEOUT). */
static void expect_not_a_file(const char *path, const char *kind)
{
    mbk_system *sys = (mbk_system *)&sys; /* not NULL: the loader must clear it */
    alarm(20);
    int rc = mbk_urdf_load(path, NULL, &sys);
    alarm(0);
    const char *msg = mbk_last_error();
    int ok = CHECK(rc == MBK_EIO && sys == NULL);
    ok &= CHECK(contains(msg, path) && contains(msg, kind));
    ok &= CHECK(contains(msg, "expected a regular file"));
    if (!ok)
        fprintf(stderr, "  %s: rc %d, message: %s\n", path, rc, msg);
}

static void test_not_regular_files(void)
{
    char dir[] = "/tmp/mbk-urdf-errors-XXXXXX", path[256];
    if (!CHECK(mkdtemp(dir) != NULL)) return;
    signal(SIGALRM, SIG_DFL);
    expect_not_a_file(dir, "it is a directory");
    snprintf(path, sizeof path, "%s/robot.urdf", dir);
    if (CHECK(mkdir(path, 0700) == 0)) expect_not_a_file(path, "it is a directory"); /* a directory named .urdf */
    rmdir(path);
    snprintf(path, sizeof path, "%s/pipe.urdf", dir);
    if (CHECK(mkfifo(path, 0600) == 0)) expect_not_a_file(path, "it is a FIFO");
    remove(path);
    if (access("/dev/null", F_OK) == 0) expect_not_a_file("/dev/null", "it is a character device");
    int fd = socket(AF_UNIX, SOCK_STREAM, 0);
    struct sockaddr_un addr;
    memset(&addr, 0, sizeof addr);
    addr.sun_family = AF_UNIX;
    snprintf(addr.sun_path, sizeof addr.sun_path, "%.64s/sock.urdf", dir);
    snprintf(path, sizeof path, "%s", addr.sun_path);
    if (fd >= 0 && bind(fd, (struct sockaddr *)&addr, sizeof addr) == 0) expect_not_a_file(path, "it is a socket");
    if (fd >= 0) close(fd);
    remove(path);
    /* a path through a file, and a file that cannot be read */
    mbk_system *sys = NULL;
    snprintf(path, sizeof path, "%s/plain.urdf", dir);
    FILE *f = fopen(path, "w");
    if (CHECK(f != NULL)) {
        fputs("<robot name=\"r\"><link name=\"a\"/></robot>\n", f);
        fclose(f);
        char below[300];
        snprintf(below, sizeof below, "%s/x.urdf", path);
        CHECK(mbk_urdf_load(below, NULL, &sys) == MBK_EIO && sys == NULL);
        CHECK(contains(mbk_last_error(), "not a directory"));
        if (geteuid() != 0 && chmod(path, 0) == 0) { /* root reads anything */
            CHECK(mbk_urdf_load(path, NULL, &sys) == MBK_EIO && sys == NULL);
            CHECK(contains(mbk_last_error(), "permission denied") && contains(mbk_last_error(), "make it readable"));
            chmod(path, 0600);
        }
        CHECK(mbk_urdf_load(path, NULL, &sys) == MBK_OK && sys != NULL); /* the same file, readable */
        mbk_system_destroy(sys);
    }
    remove(path);
    rmdir(dir);
}

/* Fail the k-th allocation: the loader must report MBK_ENOMEM (or the error it
   reached first) and free everything (the sanitizers check the leak part). */
static long fail_at, alloc_calls;
static void *fa_malloc(size_t n, void *u)
{
    (void)u;
    return ++alloc_calls == fail_at ? NULL : malloc(n);
}
static void *fa_realloc(void *p, size_t n, void *u)
{
    (void)u;
    return ++alloc_calls == fail_at ? NULL : realloc(p, n);
}
static void fa_free(void *p, void *u)
{
    (void)u;
    free(p);
}

static void test_out_of_memory(void)
{
    static const char *xml =
        "<robot name=\"r\"><link name=\"world\"/>"
        "<link name=\"a\"><inertial><mass value=\"1\"/><inertia ixx=\"1\" iyy=\"1\" izz=\"1\" ixy=\"0\" ixz=\"0\" "
        "iyz=\"0\"/></inertial></link>"
        "<link name=\"b\"><inertial><mass value=\"1\"/><inertia ixx=\"1\" iyy=\"1\" izz=\"1\" ixy=\"0\" ixz=\"0\" "
        "iyz=\"0\"/></inertial></link>"
        "<joint name=\"j\" type=\"revolute\"><parent link=\"world\"/><child link=\"a\"/><limit lower=\"-1\" "
        "upper=\"1\"/><dynamics damping=\"0.1\"/></joint>"
        "<joint name=\"k\" type=\"revolute\"><parent link=\"a\"/><child link=\"b\"/><mimic joint=\"j\"/></joint>"
        /* warnings kept with the System: an unrealizable inertia, friction, a mimic that couples nothing */
        "<link name=\"c\"><inertial><mass value=\"1\"/><inertia ixx=\"1\" iyy=\"1\" izz=\"2.5\" ixy=\"0\" "
        "ixz=\"0\" iyz=\"0\"/></inertial></link>"
        "<joint name=\"m\" type=\"revolute\"><parent link=\"b\"/><child link=\"c\"/><dynamics friction=\"1\"/>"
        "<mimic joint=\"none\"/></joint>"
        "</robot>";
    int failures = 0, successes = 0;
    for (fail_at = 1; fail_at < 400; ++fail_at) {
        alloc_calls = 0;
        mbk_system *sys = NULL;
        mbk_set_allocator(fa_malloc, fa_realloc, fa_free, NULL);
        int rc = mbk_urdf_load_string(xml, NULL, &sys);
        mbk_system_destroy(sys);
        mbk_set_allocator(NULL, NULL, NULL, NULL);
        if (rc == MBK_OK) {
            successes++;
            if (alloc_calls < fail_at) break; /* every allocation point has been failed once */
        } else {
            failures++;
            if (!CHECK(rc < 0 && sys == NULL)) fprintf(stderr, "  failing allocation %ld: rc %d\n", fail_at, rc);
        }
    }
    CHECK(failures > 20 && successes >= 1);
    printf("out-of-memory: failed each of %d allocation points in turn, then loaded\n", failures);

    /* the same on a robot with three errors, collected and reported together */
    static const char *bad =
        "<robot name=\"r\"><link name=\"world\"/><link name=\"a\"/><link name=\"b\"/>\n"
        "<joint name=\"j\" type=\"revolute\"><parent link=\"world\"/><child link=\"p\"/></joint>\n"
        "<joint name=\"k\" type=\"prismatic\"><parent link=\"world\"/><child link=\"q\"/></joint>\n"
        "<joint name=\"l\" type=\"revolute\"><parent link=\"a\"/><child link=\"c\"/></joint></robot>";
    int reported = 0;
    for (fail_at = 1; fail_at < 400; ++fail_at) {
        alloc_calls = 0;
        mbk_system *sys = NULL;
        mbk_set_allocator(fa_malloc, fa_realloc, fa_free, NULL);
        int rc = mbk_urdf_load_string(bad, NULL, &sys);
        mbk_set_allocator(NULL, NULL, NULL, NULL);
        if (!CHECK(rc < 0 && sys == NULL)) break;
        if (rc == MBK_EPARSE && alloc_calls < fail_at) {
            reported = 1;
            break;
        }
        CHECK(rc == MBK_ENOMEM || rc == MBK_EPARSE);
    }
    CHECK(reported);
    CHECK(contains(mbk_last_error(), "<string>:2: <joint name=\"j\">: child link 'p' does not exist") &&
          contains(mbk_last_error(), "(and 2 more problems"));
    mbk_system *sys = NULL;
    CHECK(mbk_urdf_load_string(bad, NULL, &sys) == MBK_EPARSE);
}

int main(void)
{
    for (size_t i = 0; i < sizeof cases / sizeof *cases; ++i) run_case(&cases[i], false);
    for (size_t i = 0; i < sizeof strict_cases / sizeof *strict_cases; ++i) run_case(&strict_cases[i], true);
    printf("%zu malformed or unsupported inputs refused with file, line and element\n",
           sizeof cases / sizeof *cases + sizeof strict_cases / sizeof *strict_cases);
    test_limits_and_arguments();
    test_not_regular_files();
    test_out_of_memory();
    return mbk_test_finish();
}
