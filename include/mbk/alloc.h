/* mbk/alloc.h - allocator hooks.
 *
 * Every heap allocation the library makes goes through these hooks, so an
 * application can route memory to its own allocator and tests can count
 * allocations. After a State is realized to Instance, realizing Time through
 * Report, integrator steps and getters allocate nothing. */
#ifndef MBK_ALLOC_H
#define MBK_ALLOC_H

#include <stddef.h>

/* Declarations here are the public API: exported from the shared library, whose
   other symbols are hidden (CMakeLists.txt, "symbol visibility"). */
#if defined(__GNUC__)
#pragma GCC visibility push(default)
#endif
#ifdef __cplusplus
extern "C" {
#endif

typedef void *(*mbk_malloc_fn)(size_t size, void *user);
typedef void *(*mbk_realloc_fn)(void *ptr, size_t size, void *user);
typedef void (*mbk_free_fn)(void *ptr, void *user);

/* Install allocator hooks (all three, or all NULL for the C library's). Set
   them before creating any object; memory must be freed by the hooks that
   allocated it. Not thread-safe against concurrent allocation. */
void mbk_set_allocator(mbk_malloc_fn malloc_fn, mbk_realloc_fn realloc_fn,
                       mbk_free_fn free_fn, void *user);
/* Number of successful malloc/realloc calls made through the hooks so far (all threads). */
long mbk_get_allocation_count(void);
/* Allocate through the hooks; NULL (and MBK_ENOMEM recorded) on failure. */
void *mbk_malloc(size_t size);
/* Zeroed allocation through the hooks. */
void *mbk_calloc(size_t n, size_t size);
/* Reallocate through the hooks; on failure the old block is kept and NULL returned. */
void *mbk_realloc(void *ptr, size_t size);
/* Free through the hooks; NULL is ignored. */
void mbk_free(void *ptr);

#ifdef __cplusplus
}
#endif
#if defined(__GNUC__)
#pragma GCC visibility pop
#endif
#endif
