/* bench_default.c - mbk's default build (what a plain configure gives users: RelWithDebInfo)
 * as a fifth side of the benchmark, timed in the same run beside this driver's own build.
 *
 * make bench configures a second build tree with the default flags and builds there a module
 * (mbk_bench_default_side.so: bench_mbk.c linked with that build's library, symbols bound
 * inside the module). --default-side PATH loads it with dlopen (RTLD_LOCAL), so the two copies
 * of mbk live side by side in one process, and the default build's mb_* functions are called
 * through pointers. Every op's result must agree with this build's to 1e-12 relative. */
#define _POSIX_C_SOURCE 200809L
#include <dlfcn.h>
#include <stdio.h>

#include "bench_driver.h"

static struct {
    void *h;
    mb_side *(*create)(const bm_model *);
    void (*destroy)(mb_side *);
    int (*set_inputs)(mb_side *, const double *, const double *, const double *, const double *);
    int (*prepare)(mb_side *, bench_op);
    int (*run)(mb_side *, bench_op, long);
    int (*eval)(mb_side *, bench_op, double *);
    const char *(*last_error)(void);
    const char *(*flags)(void);
} g_df;

int bench_default_load(const char *path)
{
    g_df.h = dlopen(path, RTLD_NOW | RTLD_LOCAL);
    if (!g_df.h) bench_die("cannot load the default build's side %s: %s", path, dlerror());
    /* function pointers from dlsym: the POSIX way (a void * converted through memcpy-free
       union to stay clean under -Wpedantic) */
#define SYM(field, name)                                                         \
    do {                                                                         \
        union { void *p; __typeof__(g_df.field) f; } u_ = {dlsym(g_df.h, name)}; \
        if (!u_.p) bench_die("%s: no symbol %s", path, name);                    \
        g_df.field = u_.f;                                                       \
    } while (0)
    SYM(create, "mb_create");
    SYM(destroy, "mb_destroy");
    SYM(set_inputs, "mb_set_inputs");
    SYM(prepare, "mb_prepare");
    SYM(run, "mb_run");
    SYM(eval, "mb_eval");
    SYM(last_error, "mb_last_error");
    SYM(flags, "mb_build_flags");
#undef SYM
    return 0;
}

int bench_default_loaded(void) { return g_df.h != NULL; }
const char *bench_default_flags(void) { return g_df.h ? g_df.flags() : ""; }
const char *bench_default_last_error(void) { return g_df.h ? g_df.last_error() : "not loaded"; }

void *bench_default_create(const bm_model *model, const double *q, const double *u, const double *v,
                           const double *kud)
{
    if (!g_df.h) return NULL;
    mb_side *s = g_df.create(model);
    if (!s) bench_die("%s: default build: %s", model->name, g_df.last_error());
    if (g_df.set_inputs(s, q, u, v, kud) < 0) bench_die("%s: default build: %s", model->name, g_df.last_error());
    return s;
}

void bench_default_destroy(void *s)
{
    if (g_df.h && s) g_df.destroy(s);
}

int bench_default_prepare(void *s, bench_op op) { return g_df.prepare(s, op); }
int bench_default_run(void *s, bench_op op, long reps) { return g_df.run(s, op, reps); }
int bench_default_eval(void *s, bench_op op, double *out) { return g_df.eval(s, op, out); }
