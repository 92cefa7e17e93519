/* Allocator hooks: every heap allocation of the library goes through here. */
#include "mbk/alloc.h"
#include "mbk/status.h"

#include <stdatomic.h>
#include <stdlib.h>
#include <string.h>

static void *default_malloc(size_t size, void *user) { (void)user; return malloc(size); }
static void *default_realloc(void *p, size_t size, void *user) { (void)user; return realloc(p, size); }
static void default_free(void *p, void *user) { (void)user; free(p); }

static mbk_malloc_fn hook_malloc = default_malloc;
static mbk_realloc_fn hook_realloc = default_realloc;
static mbk_free_fn hook_free = default_free;
static void *hook_user = NULL;
/* Counted here rather than in the hooks so every hook set is counted alike. */
static atomic_long allocation_count;

void mbk_set_allocator(mbk_malloc_fn malloc_fn, mbk_realloc_fn realloc_fn,
                       mbk_free_fn free_fn, void *user)
{
    if (!malloc_fn || !realloc_fn || !free_fn) {
        hook_malloc = default_malloc;
        hook_realloc = default_realloc;
        hook_free = default_free;
        hook_user = NULL;
        return;
    }
    hook_malloc = malloc_fn;
    hook_realloc = realloc_fn;
    hook_free = free_fn;
    hook_user = user;
}

long mbk_get_allocation_count(void) { return atomic_load(&allocation_count); }

void *mbk_malloc(size_t size)
{
    void *p = hook_malloc(size ? size : 1, hook_user);
    if (!p) {
        mbk_set_error(MBK_ENOMEM, "out of memory allocating %zu bytes", size);
        return NULL;
    }
    atomic_fetch_add(&allocation_count, 1);
    return p;
}

void *mbk_calloc(size_t n, size_t size)
{
    if (size && n > (size_t)-1 / size) {
        mbk_set_error(MBK_ENOMEM, "allocation of %zu x %zu bytes overflows", n, size);
        return NULL;
    }
    void *p = mbk_malloc(n * size);
    if (p) memset(p, 0, n * size);
    return p;
}

void *mbk_realloc(void *ptr, size_t size)
{
    void *p = hook_realloc(ptr, size ? size : 1, hook_user);
    if (!p) {
        mbk_set_error(MBK_ENOMEM, "out of memory reallocating to %zu bytes", size);
        return NULL;
    }
    atomic_fetch_add(&allocation_count, 1);
    return p;
}

void mbk_free(void *ptr)
{
    if (ptr) hook_free(ptr, hook_user);
}
