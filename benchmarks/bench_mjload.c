/* bench_mjload.c - the MuJoCo sides as modules: Debian's libmujoco 2.2.2 and PyPI's mujoco-core
 * (its wheel carries libmujoco and the headers), side by side in one process.
 *
 * Both libraries export the same names (mj_forward, the mjcb_ callbacks, ...) and libmujoco binds
 * its own calls to them through the dynamic linker, so they cannot both be in the driver's global
 * scope. bench_mujoco.c is therefore built twice as a module (mbk_bench_mujoco_apt.so linked with
 * Debian's library, mbk_bench_mujoco_pypi.so with the wheel's), and each is loaded here with
 * dlopen(RTLD_LOCAL): each module and its libmujoco resolve within their own group. The driver
 * calls the Debian one through the mjb_* names of bench_sides.h (as when it was linked in) and the
 * PyPI one through mj4b_*. A module that is missing (not configured) leaves its side out. */
#define _POSIX_C_SOURCE 200809L
#include <dlfcn.h>
#include <stdio.h>
#include <sys/stat.h>

#include "bench_driver.h"

#ifndef MBK_BENCH_MJ_APT
#define MBK_BENCH_MJ_APT ""
#endif
#ifndef MBK_BENCH_MJ_PYPI
#define MBK_BENCH_MJ_PYPI ""
#endif

typedef struct mj_lib {
    void *h;
    int tried;
    int (*available)(void);
    const char *(*version)(void);
    mjb_side *(*create)(const bm_model *);
    void (*destroy)(mjb_side *);
    int (*set_inputs)(mjb_side *, const double *, const double *);
    int (*udot)(mjb_side *, double *);
    int (*run_full)(mjb_side *, long);
    const char *(*last_error)(void);
} mj_lib;

static mj_lib g_lib[2];
static const char *const g_path[2] = {MBK_BENCH_MJ_APT, MBK_BENCH_MJ_PYPI};

static mj_lib *lib(int k)
{
    mj_lib *L = &g_lib[k];
    if (L->tried) return L->h ? L : NULL;
    L->tried = 1;
    struct stat st;
    if (!g_path[k][0] || stat(g_path[k], &st) != 0) return NULL;
    L->h = dlopen(g_path[k], RTLD_NOW | RTLD_LOCAL);
    if (!L->h) bench_die("cannot load %s: %s", g_path[k], dlerror());
#define SYM(field, name)                                                         \
    do {                                                                         \
        union { void *p; __typeof__(L->field) f; } u_ = {dlsym(L->h, name)};    \
        if (!u_.p) bench_die("%s: no symbol %s", g_path[k], name);              \
        L->field = u_.f;                                                         \
    } while (0)
    SYM(available, "mjb_available");
    SYM(version, "mjb_version");
    SYM(create, "mjb_create");
    SYM(destroy, "mjb_destroy");
    SYM(set_inputs, "mjb_set_inputs");
    SYM(udot, "mjb_udot");
    SYM(run_full, "mjb_run_full");
    SYM(last_error, "mjb_last_error");
#undef SYM
    if (!L->available()) {
        dlclose(L->h);
        L->h = NULL;
    }
    return L->h ? L : NULL;
}

/* k = 0: Debian's, 1: PyPI's */
static int avail(int k) { return lib(k) != NULL; }
static const char *version(int k) { return lib(k) ? lib(k)->version() : "not built"; }
static mjb_side *create(int k, const bm_model *m) { return lib(k) ? lib(k)->create(m) : NULL; }
static void destroy(int k, mjb_side *s) { if (s && lib(k)) lib(k)->destroy(s); }
static int set_inputs(int k, mjb_side *s, const double *q, const double *u) { return lib(k)->set_inputs(s, q, u); }
static int udot(int k, mjb_side *s, double *out) { return lib(k)->udot(s, out); }
static int run_full(int k, mjb_side *s, long reps) { return lib(k)->run_full(s, reps); }
static const char *last_error(int k) { return lib(k) ? lib(k)->last_error() : "MuJoCo module not loaded"; }

int mjb_available(void) { return avail(0); }
const char *mjb_version(void) { return version(0); }
mjb_side *mjb_create(const bm_model *m) { return create(0, m); }
void mjb_destroy(mjb_side *s) { destroy(0, s); }
int mjb_set_inputs(mjb_side *s, const double *q, const double *u) { return set_inputs(0, s, q, u); }
int mjb_udot(mjb_side *s, double *out) { return udot(0, s, out); }
int mjb_run_full(mjb_side *s, long reps) { return run_full(0, s, reps); }
const char *mjb_last_error(void) { return last_error(0); }

int mj4b_available(void) { return avail(1); }
const char *mj4b_version(void) { return version(1); }
mjb_side *mj4b_create(const bm_model *m) { return create(1, m); }
void mj4b_destroy(mjb_side *s) { destroy(1, s); }
int mj4b_set_inputs(mjb_side *s, const double *q, const double *u) { return set_inputs(1, s, q, u); }
int mj4b_udot(mjb_side *s, double *out) { return udot(1, s, out); }
int mj4b_run_full(mjb_side *s, long reps) { return run_full(1, s, reps); }
const char *mj4b_last_error(void) { return last_error(1); }
