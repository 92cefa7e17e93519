"""Status codes and the exceptions they become.

Every negative status of the C library becomes an exception of the class
registered for that status; all of them derive from MbkError. The message
is mbk_last_error() of the failed call (it says what failed and what to do).
`status` is the C code (e.g. -2), `status_name` its name ("MBK_ESTAGE").

A Python exception raised inside a callback that the C kernel calls (a force
element, a witness, an event handler, a reporter) is not wrapped: the
callback returns a fatal status to C, the C call unwinds as its contract
says, and the original exception is raised again from the Python call that
started it.
"""
import threading

from . import _capi

__all__ = ["OK", "EVENT", "TERMINATED", "MbkError", "InvalidArgumentError", "StageError",
           "StaleStateError", "OutOfMemoryError", "SingularError", "ConvergenceError",
           "IntegratorError", "NotFiniteError", "FileError", "ParseError", "CallbackError",
           "RetryError", "status_name", "error_class", "check", "last_error"]

OK, EVENT, TERMINATED = 0, 1, 2


class MbkError(Exception):
    """Base class of every mbk failure: a negative status from the C library."""
    status = None
    status_name = "MBK_UNKNOWN"

    def __init__(self, message="", status=None):
        super().__init__(message)
        self.message = message
        if status is not None:
            self.status = status
            self.status_name = status_name(status)


class InvalidArgumentError(MbkError, ValueError):
    """MBK_EINVAL: bad argument (NULL, out-of-range index, wrong type or shape)."""
    status, status_name = -1, "MBK_EINVAL"


class StageError(MbkError):
    """MBK_ESTAGE: the State is not realized far enough (or too far)."""
    status, status_name = -2, "MBK_ESTAGE"


class StaleStateError(MbkError):
    """MBK_ESTALE: the State belongs to an older or different topology."""
    status, status_name = -3, "MBK_ESTALE"


class OutOfMemoryError(MbkError, MemoryError):
    """MBK_ENOMEM: the allocator returned NULL."""
    status, status_name = -4, "MBK_ENOMEM"


class SingularError(MbkError):
    """MBK_ESINGULAR: a matrix was singular."""
    status, status_name = -5, "MBK_ESINGULAR"


class ConvergenceError(MbkError):
    """MBK_ECONVERGE: an iteration did not converge."""
    status, status_name = -6, "MBK_ECONVERGE"


class IntegratorError(MbkError):
    """MBK_EINTEGRATOR: an integrator failed."""
    status, status_name = -7, "MBK_EINTEGRATOR"


class NotFiniteError(MbkError, ValueError):
    """MBK_ENOTFINITE: NaN or infinity where a finite number is needed."""
    status, status_name = -8, "MBK_ENOTFINITE"


class FileError(MbkError, OSError):
    """MBK_EIO: a file could not be read or written."""
    status, status_name = -9, "MBK_EIO"


class ParseError(MbkError, ValueError):
    """MBK_EPARSE: a file or string is malformed."""
    status, status_name = -10, "MBK_EPARSE"


class CallbackError(MbkError):
    """MBK_EUSER: a user callback reported a fatal failure."""
    status, status_name = -11, "MBK_EUSER"


class RetryError(MbkError):
    """MBK_ERETRY: a user callback reported a recoverable failure."""
    status, status_name = -12, "MBK_ERETRY"


_BY_STATUS = {c.status: c for c in (InvalidArgumentError, StageError, StaleStateError,
                                    OutOfMemoryError, SingularError, ConvergenceError,
                                    IntegratorError, NotFiniteError, FileError, ParseError,
                                    CallbackError, RetryError)}


def status_name(status):
    """The C name of a status code ("MBK_ESTAGE"), or "MBK_UNKNOWN"."""
    return _capi.lib.mbk_status_name(int(status)).decode()


def error_class(status):
    """The exception class of a negative status (MbkError for an unknown one)."""
    return _BY_STATUS.get(status, MbkError)


def last_error():
    """mbk_last_error() of this thread, as str."""
    return _capi.lib.mbk_last_error().decode("utf-8", "replace")


# ---- exceptions raised inside callbacks --------------------------------------
# A callback wrapper stores the first exception here (per thread: the C kernel
# calls back on the thread that called it) and returns a fatal status; the
# wrapper of the C call re-raises it. `pending[0]` counts the exceptions stored
# and not yet taken, over all threads: a quick test on the success path (its
# updates take _lock: threads may store and take at the same time).
_tls = threading.local()
_lock = threading.Lock()
pending = [0]


# While an Ensemble runs, callbacks on its C worker threads hand their exceptions
# to it: ctypes gives a foreign thread a fresh Python thread state for each
# callback, so a thread-local would be lost when the callback returns. Each run
# registers its workers here (thread ident -> the run's store function) from the
# first callback of every member on them (mbk.Ensemble's init wrapper), so only
# those threads are routed; every other thread (an ordinary Python thread
# realizing some other System meanwhile) keeps its exceptions to itself.
workers = {}


def store_exception(exc):
    """Remember exc (the first one wins) until the C call that led to it returns."""
    route = workers.get(threading.get_ident()) if workers else None
    if route is not None:
        route(exc)
        return
    with _lock:
        if getattr(_tls, "exc", None) is None:
            _tls.exc = exc
            pending[0] += 1


def take_exception():
    exc = getattr(_tls, "exc", None)
    if exc is not None:
        with _lock:
            _tls.exc = None
            pending[0] -= 1
    return exc


def raise_pending():
    """Raise the exception a callback stored on this thread, if any."""
    if pending[0]:
        exc = take_exception()
        if exc is not None:
            raise exc


def raise_status(status, what=None):
    """Raise the exception a callback stored, or the one of a negative status."""
    exc = take_exception()
    if exc is not None:
        raise exc
    msg = last_error()
    if what and not msg:
        msg = what
    raise error_class(status)(msg, status)


def check(status):
    """Return a non-negative status; raise for a negative one (the exception a
    callback stored, when one did, else the status's own class)."""
    if status < 0:
        exc = take_exception()
        if exc is not None:
            raise exc
        raise error_class(status)(last_error(), status)
    if pending[0]:
        exc = take_exception()
        if exc is not None:
            raise exc
    return status


def invalid(message):
    """An InvalidArgumentError raised by the Python layer itself (shapes, types)."""
    return InvalidArgumentError(message, -1)


def not_finite(message):
    """A NotFiniteError raised by the Python layer itself (NaN or infinity given)."""
    return NotFiniteError(message, -8)
