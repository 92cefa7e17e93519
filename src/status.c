/* Status codes and the thread-local last-error record. */
#include "mbk/status.h"
#include "status_impl.h"

#include <stdarg.h>
#include <stdio.h>
#include <string.h>

/* Thread-local so concurrent States on different threads keep their own story. */
static _Thread_local int last_status = MBK_OK;
static _Thread_local char last_message[MBK_ERROR_MAX];
/* Where a new message is formatted: it may quote the previous one. Thread-local
   rather than on the stack, since errors are recorded deep inside callbacks. */
static _Thread_local char scratch[MBK_ERROR_MAX];

atomic_ulong st_error_count;

const char *mbk_status_name(int status)
{
    switch (status) {
    case MBK_OK: return "MBK_OK";
    case MBK_EVENT: return "MBK_EVENT";
    case MBK_TERMINATED: return "MBK_TERMINATED";
    case MBK_EINVAL: return "MBK_EINVAL";
    case MBK_ESTAGE: return "MBK_ESTAGE";
    case MBK_ESTALE: return "MBK_ESTALE";
    case MBK_ENOMEM: return "MBK_ENOMEM";
    case MBK_ESINGULAR: return "MBK_ESINGULAR";
    case MBK_ECONVERGE: return "MBK_ECONVERGE";
    case MBK_EINTEGRATOR: return "MBK_EINTEGRATOR";
    case MBK_ENOTFINITE: return "MBK_ENOTFINITE";
    case MBK_EIO: return "MBK_EIO";
    case MBK_EPARSE: return "MBK_EPARSE";
    case MBK_EUSER: return "MBK_EUSER";
    case MBK_ERETRY: return "MBK_ERETRY";
    default: return "MBK_UNKNOWN";
    }
}

int mbk_last_status(void) { return last_status; }

const char *mbk_last_error(void) { return last_message; }

void mbk_clear_error(void)
{
    last_status = MBK_OK;
    last_message[0] = '\0';
}

int mbk_set_error(int status, const char *fmt, ...)
{
    va_list ap;
    /* Format into the scratch buffer first: the message may quote the previous one. */
    int n = 0;
    scratch[0] = '\0';
    if (fmt) {
        va_start(ap, fmt);
        n = vsnprintf(scratch, sizeof scratch, fmt, ap);
        va_end(ap);
    }
    if (n < 0) scratch[0] = '\0';
    else if ((size_t)n >= sizeof scratch) /* cut: say so */
        memcpy(scratch + sizeof scratch - sizeof "[...]", "[...]", sizeof "[...]");
    memcpy(last_message, scratch, strlen(scratch) + 1);
    last_status = status;
    atomic_fetch_add_explicit(&st_error_count, 1, memory_order_relaxed);
    return status;
}
