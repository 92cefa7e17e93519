"""The library's integrators: RK4, RK-Merson, explicit and semi-explicit Euler,
CVODE (BDF, Adams) and IDA, with events, reporters and checkpoints."""
import ctypes
import os

from . import _arrays, _callbacks, _capi
from .enums import CvodeMethod
from .errors import check, invalid, raise_status
from ._handle import Handle
from .state import State

lib = _capi.lib
_step_to = lib.mbk_integrator_step_to

__all__ = ["Integrator", "INTEGRATORS", "checkpoint_name", "checkpoint_app_data"]

_CREATE = {
    "rk4": lambda s: lib.mbk_integrator_create_rk4(s),
    "rkmerson": lambda s: lib.mbk_integrator_create_rkmerson(s),
    "explicit_euler": lambda s: lib.mbk_integrator_create_explicit_euler(s),
    "semi_explicit_euler": lambda s: lib.mbk_integrator_create_semi_explicit_euler(s),
    "cvode_bdf": lambda s: lib.mbk_integrator_create_cvode(s, CvodeMethod.BDF),
    "cvode_adams": lambda s: lib.mbk_integrator_create_cvode(s, CvodeMethod.ADAMS),
    "ida": lambda s: lib.mbk_integrator_create_ida(s),
}
_ALIASES = {"cvode": "cvode_bdf", "bdf": "cvode_bdf", "adams": "cvode_adams", "merson": "rkmerson",
            "rk-merson": "rkmerson", "euler": "explicit_euler"}
INTEGRATORS = tuple(_CREATE)


class Integrator(Handle):
    """An integrator of `system`: method is one of INTEGRATORS ("rkmerson",
    "rk4", "explicit_euler", "semi_explicit_euler", "cvode_bdf", "cvode_adams",
    "ida"). Settings may be given as keywords (accuracy=, tolerances=(rel, abs),
    fixed_step=, max_step=, ...); each is the setter of the same name."""

    _what = "Integrator"
    _instead = ("keep its State with Integrator.serialize() / save() (an mbk checkpoint) and "
                "continue in a new Integrator with deserialize() / load()")

    def __init__(self, system, method="rkmerson", **settings):
        self._ptr = None
        if not isinstance(method, str):
            raise invalid("method must be a str, one of %s; got %r" % (", ".join(INTEGRATORS),
                                                                        method))
        key = _ALIASES.get(method.lower(), method.lower())
        if key not in _CREATE:
            raise invalid("unknown integrator %r; choose one of %s" % (method, ", ".join(INTEGRATORS)))
        self.system = system
        self.method = key
        self._reporter = None
        p = _CREATE[key](system._p())
        if not p:
            raise_status(lib.mbk_last_status() or -4)
        self._ptr = p
        for name, value in settings.items():
            setter = getattr(self, "set_" + name, None)
            if setter is None:
                raise invalid("unknown integrator setting %r" % name)
            setter(*value) if isinstance(value, tuple) else setter(value)

    def close(self):
        if self._ptr:
            lib.mbk_integrator_destroy(self._ptr)
            self._ptr = None

    def __repr__(self):
        return "<mbk.Integrator %s>" % (self.name if self._ptr and self.system._ptr
                                        else "(closed)")

    def _p(self):
        """The C pointer, while both the Integrator and its System are open (the
        integrator calls into the System on every step)."""
        p = Handle._p(self)
        if not self.system._ptr:
            raise invalid("the System of this Integrator was closed: the Integrator cannot be "
                          "used any more (States copied from it with State.copy() can)")
        return p

    @property
    def name(self):
        return lib.mbk_integrator_get_name(self._p()).decode()

    # ---- settings ------------------------------------------------------------------
    def set_accuracy(self, accuracy):
        check(lib.mbk_integrator_set_accuracy(self._p(), float(accuracy)))

    def set_tolerances(self, rel_tol, abs_tol):
        check(lib.mbk_integrator_set_tolerances(self._p(), float(rel_tol), float(abs_tol)))

    def set_constraint_tolerance(self, tol):
        check(lib.mbk_integrator_set_constraint_tolerance(self._p(), float(tol)))

    def set_event_tolerance(self, dt):
        check(lib.mbk_integrator_set_event_tolerance(self._p(), float(dt)))

    def set_fixed_step(self, h):
        check(lib.mbk_integrator_set_fixed_step(self._p(), float(h)))

    def set_initial_step(self, h):
        check(lib.mbk_integrator_set_initial_step(self._p(), float(h)))

    def set_min_step(self, h):
        check(lib.mbk_integrator_set_min_step(self._p(), float(h)))

    def set_max_step(self, h):
        check(lib.mbk_integrator_set_max_step(self._p(), float(h)))

    def set_max_steps(self, n):
        check(lib.mbk_integrator_set_max_steps(self._p(), int(n)))

    def set_use_system_jacobian(self, on):
        check(lib.mbk_integrator_set_use_system_jacobian(self._p(), bool(on)))

    def set_jacobian_source(self, source):
        """CVODE BDF / IDA Jacobian: 0 analytic, 1 mbk's finite differences, 2 SUNDIALS'."""
        check(lib.mbk_integrator_set_jacobian_source(self._p(), int(source)))

    def set_project_error_estimate(self, on):
        check(lib.mbk_integrator_set_project_error_estimate(self._p(), bool(on)))

    @property
    def settings(self):
        """The current settings, as a dict."""
        st = _capi.IntegratorSettings()
        check(lib.mbk_integrator_get_settings(self._p(), ctypes.byref(st)))
        return {n: getattr(st, n) for n, _ in _capi.IntegratorSettings._fields_}

    # ---- running -------------------------------------------------------------------
    def initialize(self, state):
        """Copy `state`, realize and project it; reset the statistics."""
        check(lib.mbk_integrator_initialize(self._p(), state._p()))
        return self

    def step_to(self, t_report):
        """Advance to t_report: returns mbk.OK (there), mbk.EVENT (stopped early at an
        event that was handled: call again) or mbk.TERMINATED; raises on failure,
        with the last good State kept."""
        p = self._p()
        try:
            rc = _step_to(p, t_report)
        except ctypes.ArgumentError:    # not a float: converted here, or refused
            rc = _step_to(p, _arrays.number(t_report, "t_report"))
        return check(rc)

    def integrate(self, t_final, reporter=None):
        """Advance to t_final handling every event; reporter(state) after every step.
        Returns mbk.OK or mbk.TERMINATED. An exception raised by the reporter is
        raised when the run returns (a reporter cannot stop the C loop)."""
        t_final = _arrays.number(t_final, "t_final")
        r = _capi.REPORTER_FN() if reporter is None else _callbacks.reporter(self.system, reporter)
        self._reporter = r
        try:
            return check(lib.mbk_integrator_integrate(self._p(), t_final, r, None))
        finally:
            self._reporter = None

    @property
    def state(self):
        """The current State (read-only, realized to Acceleration). It is the
        integrator's own and valid until the next call on the integrator: copy it
        (state.copy()) to keep it. It refuses to work once the integrator is closed."""
        p = lib.mbk_integrator_get_state(self._p())
        if not p:
            raise invalid("the integrator has no State yet: call initialize(state) first")
        return State._borrow(p, self.system, True, self)

    @property
    def time(self):
        return lib.mbk_integrator_get_time(self._p())

    @property
    def previous_step_size(self):
        return lib.mbk_integrator_get_previous_step_size(self._p())

    @property
    def predicted_step_size(self):
        return lib.mbk_integrator_get_predicted_step_size(self._p())

    @property
    def stats(self):
        """Statistics since initialize, as a dict (steps_taken, rhs_evaluations, ...)."""
        st = _capi.IntegratorStats()
        lib.mbk_integrator_get_stats(self._p(), ctypes.byref(st))
        return {n: getattr(st, n) for n in _capi.STATS_FIELDS}

    # ---- checkpoints -----------------------------------------------------------------
    def save(self, path):
        """The current State and the integrator's own state, to a file (atomically)."""
        check(lib.mbk_integrator_save(self._p(), os.fsencode(path)))

    def load(self, path):
        """Continue from a checkpoint file (replaces initialize)."""
        check(lib.mbk_integrator_load(self._p(), os.fsencode(path)))

    def serialize(self, app_data=b""):
        """The checkpoint image, as bytes, carrying app_data (bytes) of your own."""
        app = bytes(app_data)
        size = ctypes.c_size_t()
        check(lib.mbk_integrator_serialize(self._p(), app or None, len(app), None, 0,
                                           ctypes.byref(size)))
        buf = ctypes.create_string_buffer(size.value)
        check(lib.mbk_integrator_serialize(self._p(), app or None, len(app), buf, size.value,
                                           ctypes.byref(size)))
        return buf.raw[:size.value]

    def deserialize(self, data):
        data = bytes(data)
        check(lib.mbk_integrator_deserialize(self._p(), data, len(data)))


def checkpoint_name(data):
    """The name of the integrator that wrote an integrator checkpoint image."""
    data = bytes(data)
    name = ctypes.create_string_buffer(256)
    check(lib.mbk_integrator_get_checkpoint_name(data, len(data), name, 256))
    return name.value.decode()


def checkpoint_app_data(data):
    """The caller's bytes inside an integrator checkpoint image."""
    data = bytes(data)
    p, n = ctypes.c_void_p(), ctypes.c_size_t()
    check(lib.mbk_integrator_get_checkpoint_app_data(data, len(data), ctypes.byref(p),
                                                     ctypes.byref(n)))
    return ctypes.string_at(p.value, n.value) if n.value else b""
