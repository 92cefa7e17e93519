/* Private to the library: the count of recorded errors, for callers that clear the
 * thread's error record often (status.c). */
#ifndef MBK_STATUS_IMPL_H
#define MBK_STATUS_IMPL_H

#include <stdatomic.h>

/* Errors recorded so far on all threads (mbk_set_error adds one). A caller that read the
   count just before clearing its thread's record and reads the same count later knows the
   record is still clear without reading it: thread-local storage costs a function call in
   a shared library, a relaxed load of this count costs one load. */
extern atomic_ulong st_error_count;

/* The count now (relaxed: only this thread's own errors need be seen in order). */
static inline unsigned long st_errors(void) { return atomic_load_explicit(&st_error_count, memory_order_relaxed); }

#endif
