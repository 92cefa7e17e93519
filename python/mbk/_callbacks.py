"""Python functions the C kernel calls back (internal).

Each wrapper turns the C arguments into Python objects (a State over the C
State, numpy views over force arrays: no copies), calls the user's function
and catches every exception: it is stored (mbk.errors.store_exception), the
C side gets a fatal status (MBK_EUSER; NaN from a witness) with a message
naming the callback, and the Python call that started the C call raises the
original exception once the C call has returned. The C contract then says
what state things are in (a failed realization leaves every subsystem at
the stage before; a failed integrator step keeps the last good State).
"""
import math

from . import _arrays, _capi
from .enums import Stage
from .errors import invalid, not_finite, store_exception
from .state import State

lib = _capi.lib
_EUSER = -11
_NAN = math.nan
_view = _arrays.view


def _report(exc, what):
    store_exception(exc)
    try:
        msg = ("%s raised %s: %s" % (what, type(exc).__name__, exc)).encode("utf-8", "replace")
        lib.mbk_set_error(_EUSER, b"%s", msg)
    except Exception:  # pragma: no cover - never fails in practice
        pass


class _Borrowed:
    """Caches the State wrappers and array views handed to callbacks, by address,
    so a callback called many times on the same C State builds nothing."""
    __slots__ = ("system", "states", "arrays")

    def __init__(self, system):
        self.system = system
        self.states = {}
        self.arrays = {}

    def state(self, ptr, const):
        key = (ptr, const)
        s = self.states.get(key)
        if s is None:
            if len(self.states) > 64:
                self.states.clear()
            s = self.states[key] = State._borrow(ptr, self.system, const)
        return s

    def array(self, addr, shape):
        key = (addr, shape)
        a = self.arrays.get(key)
        if a is None:
            if len(self.arrays) > 64:
                self.arrays.clear()
            a = self.arrays[key] = _view(addr, shape, False, None)
        return a


def _callable(fn, what):
    # refused when given, not when the kernel first calls it (deep inside a realization)
    if not callable(fn):
        raise invalid("%s must be callable, got %r" % (what, fn))


def force(system, fn, pe_fn, name):
    """calc_force and calc_potential_energy ops around fn(state, body_forces, mobility_forces)
    and pe_fn(state) -> float."""
    _callable(fn, "calc_force")
    if pe_fn is not None:
        _callable(pe_fn, "potential_energy")
    borrowed = _Borrowed(system)
    mptr = system._matter_ptr
    nbodies = lib.mbk_matter_get_num_bodies
    get_nu = lib.mbk_state_get_nu
    what = "Python force %r" % name

    def calc_force(impl, ctx, s, bf, mf):
        try:
            fn(borrowed.state(s, True), borrowed.array(bf, (nbodies(mptr), 6)),
               borrowed.array(mf, (get_nu(s),)))
            return 0
        except BaseException as e:  # noqa: B902 - everything goes back to the caller
            _report(e, what)
            return _EUSER

    def calc_pe(impl, ctx, s, pe):
        try:
            v = float(pe_fn(borrowed.state(s, True)))
            if not math.isfinite(v):     # a NaN energy would pass silently into the sums
                raise not_finite("%s: potential_energy returned %r; return a finite float"
                                 % (what, v))
            pe[0] = v
            return 0
        except BaseException as e:
            _report(e, what + " (potential energy)")
            return _EUSER

    return (_capi.CALC_FORCE_FN(calc_force),
            _capi.CALC_PE_FN(calc_pe) if pe_fn is not None else _capi.CALC_PE_FN())


def witness(system, fn):
    _callable(fn, "witness")
    borrowed = _Borrowed(system)
    what = "Python witness %r" % getattr(fn, "__name__", fn)

    def cb(user, sys_ptr, s):
        try:
            return float(fn(borrowed.state(s, True)))
        except BaseException as e:
            _report(e, what)
            return _NAN

    return _capi.WITNESS_FN(cb)


class EventResult:
    """What a handler did: lower `lowest_modified` to the lowest stage it
    changed (it arrives as Stage.INFINITY); set `terminate` to stop."""
    __slots__ = ("_c",)

    def __init__(self, c):
        self._c = c

    @property
    def lowest_modified(self):
        return Stage(self._c.contents.lowest_modified)

    @lowest_modified.setter
    def lowest_modified(self, stage):
        self._c.contents.lowest_modified = int(stage)

    @property
    def terminate(self):
        return bool(self._c.contents.terminate)

    @terminate.setter
    def terminate(self, on):
        self._c.contents.terminate = bool(on)

    def modified(self, stage):
        """Lower lowest_modified to `stage` (never raises it)."""
        if int(stage) < self._c.contents.lowest_modified:
            self._c.contents.lowest_modified = int(stage)


def handler(system, fn):
    _callable(fn, "handler")
    borrowed = _Borrowed(system)
    what = "Python event handler %r" % getattr(fn, "__name__", fn)

    def cb(user, sys_ptr, s, result):
        try:
            r = fn(borrowed.state(s, False), EventResult(result))
            return 0 if r is None else int(r)
        except BaseException as e:
            _report(e, what)
            return _EUSER

    return _capi.HANDLER_FN(cb)


def reporter(system, fn):
    _callable(fn, "reporter")
    borrowed = _Borrowed(system)
    what = "Python reporter %r" % getattr(fn, "__name__", fn)

    def cb(user, sys_ptr, s):
        try:
            fn(borrowed.state(s, True))
        except BaseException as e:
            _report(e, what)

    return _capi.REPORTER_FN(cb)
