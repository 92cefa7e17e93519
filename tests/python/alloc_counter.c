/* Allocator hooks that count live blocks, for the Python package's leak test
 * (tests/python/test_leaks.py loads this library with ctypes and installs the
 * hooks before it builds anything). They wrap malloc, realloc and free, so a
 * block allocated before they were installed may be freed through them. */
#include <mbk/mbk.h>
#include <stdlib.h>

static long live, total;

static void *count_malloc(size_t n, void *user)
{
    void *p = malloc(n);
    (void)user;
    if (p) { __atomic_add_fetch(&live, 1, __ATOMIC_RELAXED); __atomic_add_fetch(&total, 1, __ATOMIC_RELAXED); }
    return p;
}

static void *count_realloc(void *p, size_t n, void *user)
{
    void *q = realloc(p, n);
    (void)user;
    if (q && !p) { __atomic_add_fetch(&live, 1, __ATOMIC_RELAXED); __atomic_add_fetch(&total, 1, __ATOMIC_RELAXED); }
    return q;
}

static void count_free(void *p, void *user)
{
    (void)user;
    if (p) __atomic_sub_fetch(&live, 1, __ATOMIC_RELAXED);
    free(p);
}

void alloc_counter_install(void) { mbk_set_allocator(count_malloc, count_realloc, count_free, NULL); }
void alloc_counter_uninstall(void) { mbk_set_allocator(NULL, NULL, NULL, NULL); }
long alloc_counter_live(void) { return __atomic_load_n(&live, __ATOMIC_RELAXED); }
long alloc_counter_total(void) { return __atomic_load_n(&total, __ATOMIC_RELAXED); }
