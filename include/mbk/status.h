/* mbk/status.h - status codes and the thread-local last-error record.
 *
 * Functions that can fail return int: MBK_OK (0), a positive informational
 * code, or a negative error. Functions returning a pointer return NULL on
 * failure. After any failure mbk_last_status() and mbk_last_error() tell what
 * failed and what to do about it. Both are thread-local. */
#ifndef MBK_STATUS_H
#define MBK_STATUS_H

/* Declarations here are the public API: exported from the shared library, whose
   other symbols are hidden (CMakeLists.txt, "symbol visibility"). */
#if defined(__GNUC__)
#pragma GCC visibility push(default)
#endif
#ifdef __cplusplus
extern "C" {
#endif

enum {
    MBK_OK = 0,            /* success */
    MBK_EVENT = 1,         /* an integrator stopped early at an event */
    MBK_TERMINATED = 2,    /* an event handler asked to stop */
    MBK_EINVAL = -1,       /* bad argument: NULL, out-of-range index, wrong type */
    MBK_ESTAGE = -2,       /* the State is not realized far enough (or too far) */
    MBK_ESTALE = -3,       /* the State belongs to an older or different topology */
    MBK_ENOMEM = -4,       /* the allocator returned NULL */
    MBK_ESINGULAR = -5,    /* a matrix was singular */
    MBK_ECONVERGE = -6,    /* an iteration did not converge */
    MBK_EINTEGRATOR = -7,  /* an integrator failed */
    MBK_ENOTFINITE = -8,   /* NaN or infinity where a finite number is needed */
    MBK_EIO = -9,          /* a file could not be read or written */
    MBK_EPARSE = -10,      /* a file or string is malformed */
    MBK_EUSER = -11,       /* a user callback reported a fatal failure */
    MBK_ERETRY = -12       /* a user callback reported a recoverable failure */
};

/* Size of the message buffer behind mbk_last_error(), with its terminating NUL:
   a message is at most MBK_ERROR_MAX - 1 bytes; a longer one (never seen in
   practice) is cut and ends in "[...]". */
#define MBK_ERROR_MAX 4096

/* Name of a status code ("MBK_ESTAGE"), or "MBK_UNKNOWN". */
const char *mbk_status_name(int status);
/* Code of the last failure on this thread (MBK_OK if none since the last clear). */
int mbk_last_status(void);
/* Message of the last failure on this thread ("" if none). */
const char *mbk_last_error(void);
/* Forget the last failure on this thread. */
void mbk_clear_error(void);
/* Index of the first NaN or infinity in v[0..n), or -1 when all are finite (or n <= 0). */
int mbk_find_nonfinite(const double *v, int n);
/* Record a failure from user code (custom subsystems, callbacks); returns status. */
int mbk_set_error(int status, const char *fmt, ...)
#if defined(__GNUC__)
    __attribute__((format(printf, 2, 3)))
#endif
    ;

#ifdef __cplusplus
}
#endif
#if defined(__GNUC__)
#pragma GCC visibility pop
#endif
#endif
