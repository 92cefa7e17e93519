"""The State: every variable of a System and its cache of results.

Array properties are numpy views of the State's own memory, not copies:
`q`, `u`, `z`, `y` and the derivative and error caches (`qdot`, `udot`,
`ydot`, `multipliers`, ...) are read-only views (the C side hands out const
pointers); they change when the State changes. `upd_q()` (and `upd_u`,
`upd_z`, `upd_y`) return writable views and invalidate what depends on the
variables at the time of the call, as mbk_state_upd_q does: call it again for
each change (writing through an old upd view after the State was realized
again invalidates nothing). `set_q(values)` (also `s.q = values`) copies in,
checks the count and finiteness, and invalidates.

As with the C pointers, a view stays valid until the State is laid out
again: by realizing Model or Instance, a change of a Model-stage variable
(Euler angles), init or copy into it. Take a fresh view after those (the
properties are cheap: one C call).

copy.copy and copy.deepcopy of a State give State.copy() (a new State of its
own); a State cannot be pickled: State.serialize() gives the checkpoint bytes,
State.deserialize() reads them into a State of the same System.
"""
import ctypes

import numpy as np

from . import _arrays, _capi
from .enums import Stage, stage_arg
from .errors import InvalidArgumentError, check, invalid, raise_status

lib = _capi.lib
_view = _arrays.view
_get_nq, _get_nu, _get_nz, _get_ny = (lib.mbk_state_get_nq, lib.mbk_state_get_nu,
                                      lib.mbk_state_get_nz, lib.mbk_state_get_ny)

__all__ = ["State"]

# (C getter, size function) of every read-only array view
_SIZE = {"q": _get_nq, "u": _get_nu, "z": _get_nz, "y": _get_ny, "qdot": _get_nq,
         "udot": _get_nu, "zdot": _get_nz, "ydot": _get_ny, "qdotdot": _get_nq,
         "qerr": lib.mbk_state_get_nqerr, "uerr": lib.mbk_state_get_nuerr,
         "udoterr": lib.mbk_state_get_nudoterr, "multipliers": lib.mbk_state_get_num_multipliers}
_GET = {k: getattr(lib, "mbk_state_get_" + k) for k in _SIZE}
_UPD = {k: getattr(lib, "mbk_state_upd_" + k) for k in "quzy"}
_SET = {k: getattr(lib, "mbk_state_set_" + k) for k in "quzy"}
_UPD_STAGE = {"q": "Position", "u": "Velocity", "z": "Dynamics", "y": "Position"}


class _Handle:
    """Owns the C State (or, for a borrowed one, keeps its owner alive). Views
    refer to the handle, not to the State object that caches them: no cycle
    through numpy arrays, which the cyclic garbage collector cannot see into.
    Never copied: a copy would destroy the C State a second time."""
    __slots__ = ("ptr", "owned", "owner")

    def __init__(self, ptr, owned, owner=None):
        self.ptr, self.owned, self.owner = ptr, owned, owner

    def __reduce_ex__(self, protocol):
        raise TypeError("the C State of an mbk.State cannot be copied or pickled this way: "
                        "use State.copy() or State.serialize()")

    def close(self):
        if self.owned and self.ptr:
            lib.mbk_state_destroy(self.ptr)
        self.ptr = None

    def __del__(self):
        try:
            self.close()
        except Exception:
            pass


class State:
    """A State of a System. `State(system)` makes a new one from the System's
    default State (mbk_state_create + mbk_state_init), realized to `stage`
    (Instance by default, so q, u, z are there to read and set)."""
    __slots__ = ("_ptr", "_h", "_const", "system", "_views", "_owner", "__weakref__")

    def __init__(self, system=None, stage=Stage.INSTANCE):
        self._ptr = None
        self._h = None
        self._const = False
        self._views = {}
        self._owner = None
        self.system = system
        stage = None if stage is None else stage_arg(stage)
        sp = None if system is None else system._p()
        ptr = lib.mbk_state_create()
        if not ptr:
            raise_status(lib.mbk_last_status() or -4)
        self._h = _Handle(ptr, True)
        self._ptr = ptr
        if system is not None:
            check(lib.mbk_state_init(ptr, sp))
            if stage is not None and stage > Stage.TOPOLOGY:
                system.realize(self, stage)

    @classmethod
    def _borrow(cls, ptr, system, const, owner=None):
        """A State object over a State the C side owns (an integrator's, a System's
        default State, a callback's); `owner` (an Integrator, a System) is kept alive
        as long as the object and its views, and once it is closed the object refuses
        to work (its C State went with it)."""
        s = cls.__new__(cls)
        s._ptr, s._const, s.system, s._views, s._owner = ptr, const, system, {}, owner
        s._h = _Handle(ptr, False, owner)
        return s

    def close(self):
        """Destroy the C State now (otherwise done when the State and every view of
        it are gone). Views taken before must not be used afterwards."""
        if self._h is not None:
            self._h.close()
        self._ptr = None
        self._views = {}

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self.close()

    def __repr__(self):
        try:
            p = self._p()
        except InvalidArgumentError:
            return "<mbk.State (closed)>"
        return "<mbk.State t=%g stage=%s%s>" % (lib.mbk_state_get_time(p),
                                              Stage(lib.mbk_state_get_stage(p)),
                                              " read-only" if self._const else "")

    # ---- copies: a new C State, never a second owner of this one -----------------
    def __copy__(self):
        return self.copy()

    def __deepcopy__(self, memo):
        return self.copy()

    def __reduce_ex__(self, protocol):
        raise TypeError("an mbk.State cannot be pickled (it is C memory laid out for one "
                        "System): pickle State.serialize() instead and read it back with "
                        "State.deserialize() (or State.save() / State.load())")

    # ---- helpers -------------------------------------------------------------
    def _p(self):
        o = self._owner
        if not self._ptr or o is not None and not o._ptr:
            if self._ptr:
                raise invalid("the %s this State belongs to was closed, and the State with it: "
                              "copy a State you want to keep (State.copy()) before closing "
                              "its owner" % o._what)
            raise invalid("this State was closed")
        return self._ptr

    def _w(self):
        """The pointer, for calls that change the State."""
        if self._const:
            raise invalid("this State is read-only (an integrator's current State or a "
                          "callback's const State): copy it (State.copy()) to change it")
        return self._p()

    def _sys(self, system):
        system = system if system is not None else self.system
        if system is None:
            raise invalid("this State has no System: pass system=")
        return system

    def _array(self, name):
        p = self._p()
        n = _SIZE[name](p)
        a = _GET[name](p)
        if n < 0 or not a and n > 0:
            raise_status(lib.mbk_last_status() if lib.mbk_last_status() < 0 else -2,
                         "%s is not available at stage %s" % (name, Stage(self.stage)))
        key = (name, a, n)
        v = self._views.get(name)
        if v is not None and v[0] == key:
            return v[1]
        arr = _view(a, n, True, self._h)
        self._views[name] = (key, arr)
        return arr

    # ---- lifecycle -----------------------------------------------------------
    def copy(self):
        """A new State with the same contents, cache validity included (mbk_state_copy)."""
        s = State(None)
        s.system = self.system
        check(lib.mbk_state_copy(s._ptr, self._p()))
        return s

    def copy_from(self, other):
        """Make this State a copy of `other` (reuses memory when large enough)."""
        check(lib.mbk_state_copy(self._w(), other._p()))
        self._views = {}

    def init(self, system=None):
        """Make this State the System's default State again (stage Topology)."""
        system = self._sys(system)
        check(lib.mbk_state_init(self._w(), system._p()))
        self.system = system
        self._views = {}

    @property
    def size_in_bytes(self):
        return lib.mbk_state_get_size_in_bytes(self._p())

    # ---- stages ----------------------------------------------------------------
    @property
    def stage(self):
        """The stage the whole State is realized to (a Stage)."""
        return Stage(lib.mbk_state_get_stage(self._p()))

    def subsystem_stage(self, subsystem):
        return Stage(lib.mbk_state_get_subsystem_stage(self._p(), int(subsystem)))

    @property
    def num_subsystems(self):
        return lib.mbk_state_get_num_subsystems(self._p())

    def stage_version(self, subsystem, stage):
        return lib.mbk_state_get_stage_version(self._p(), int(subsystem), stage_arg(stage))

    def invalidate(self, stage):
        """Revert every subsystem to stage - 1 at most (mbk_state_invalidate)."""
        check(lib.mbk_state_invalidate(self._w(), stage_arg(stage)))

    def realize(self, stage=Stage.ACCELERATION, system=None):
        """Realize to `stage` with the State's System (mbk_system_realize)."""
        self._sys(system).realize(self, stage)
        return self

    # ---- time and variables ----------------------------------------------------
    @property
    def t(self):
        return lib.mbk_state_get_time(self._p())

    @t.setter
    def t(self, value):
        check(lib.mbk_state_set_time(self._w(), float(value)))

    time = t

    @property
    def nq(self):
        return check(_get_nq(self._p()))

    @property
    def nu(self):
        return check(_get_nu(self._p()))

    @property
    def nz(self):
        return check(_get_nz(self._p()))

    @property
    def ny(self):
        return check(_get_ny(self._p()))

    q = property(lambda self: self._array("q"), lambda self, v: self.set_q(v),
                 doc="Generalized coordinates (read-only view; assigning calls set_q).")
    u = property(lambda self: self._array("u"), lambda self, v: self.set_u(v),
                 doc="Generalized speeds (read-only view; assigning calls set_u).")
    z = property(lambda self: self._array("z"), lambda self, v: self.set_z(v),
                 doc="Auxiliary variables (read-only view; assigning calls set_z).")
    y = property(lambda self: self._array("y"), lambda self, v: self.set_y(v),
                 doc="y = [q u z] (read-only view; assigning calls set_y).")
    qdot = property(lambda self: self._array("qdot"), doc="qdot (Velocity).")
    udot = property(lambda self: self._array("udot"), doc="udot (Acceleration).")
    zdot = property(lambda self: self._array("zdot"), doc="zdot (Acceleration).")
    ydot = property(lambda self: self._array("ydot"), doc="[qdot udot zdot] (Acceleration).")
    qdotdot = property(lambda self: self._array("qdotdot"), doc="qdotdot (Acceleration).")
    qerr = property(lambda self: self._array("qerr"), doc="Position-constraint errors (Position).")
    uerr = property(lambda self: self._array("uerr"), doc="Velocity-constraint errors (Velocity).")
    udoterr = property(lambda self: self._array("udoterr"),
                       doc="Acceleration-constraint errors (Acceleration).")
    multipliers = property(lambda self: self._array("multipliers"),
                           doc="Constraint multipliers, one per udoterr (Acceleration).")

    def _upd(self, name):
        p = self._w()
        n = _SIZE[name](p)
        a = _UPD[name](p)
        if n < 0 or not a and n > 0:
            raise_status(lib.mbk_last_status() if lib.mbk_last_status() < 0 else -2)
        return _view(a, n, False, self._h)

    def upd_q(self):
        """Writable view of q; invalidates Position (now, not on later writes)."""
        return self._upd("q")

    def upd_u(self):
        """Writable view of u; invalidates Velocity."""
        return self._upd("u")

    def upd_z(self):
        """Writable view of z; invalidates Dynamics."""
        return self._upd("z")

    def upd_y(self):
        """Writable view of y = [q u z]; invalidates Position."""
        return self._upd("y")

    def _set(self, name, values):
        p = self._w()
        n = _SIZE[name](p)
        if n < 0:
            raise_status(n)
        v = _arrays.f64(values, n, name)
        check(_SET[name](p, v.ctypes.data, n))

    def set_q(self, q):
        """Copy nq finite values into q; invalidates Position."""
        self._set("q", q)

    def set_u(self, u):
        """Copy nu finite values into u; invalidates Velocity."""
        self._set("u", u)

    def set_z(self, z):
        """Copy nz finite values into z; invalidates Dynamics."""
        self._set("z", z)

    def set_y(self, y):
        """Copy ny finite values into y = [q u z]; invalidates Position."""
        self._set("y", y)

    # ---- per-subsystem slices ----------------------------------------------------
    def subsystem_slices(self, subsystem):
        """(q, u, z) slices of one subsystem in the State's q, u, z."""
        p, k = self._p(), int(subsystem)
        out = []
        for v in "quz":
            start = check(getattr(lib, "mbk_state_get_subsystem_%s_start" % v)(p, k))
            n = check(getattr(lib, "mbk_state_get_subsystem_n%s" % v)(p, k))
            out.append(slice(start, start + n))
        return tuple(out)

    # ---- event witnesses -------------------------------------------------------
    def event_triggers(self, stage):
        """Witness values of one stage, all subsystems in order (read-only view)."""
        p, g = self._p(), stage_arg(stage)
        n = check(lib.mbk_state_get_num_event_triggers(p, g))
        a = lib.mbk_state_get_event_triggers(p, g)
        if n and not a:
            raise_status(lib.mbk_last_status() or -2)
        return _view(a, n, True, self._h)

    # ---- checkpoints (include/mbk/checkpoint.h) ------------------------------
    def save(self, path, system=None):
        """Write the State to a checkpoint file, atomically (mbk_state_save)."""
        check(lib.mbk_state_save(self._p(), self._sys(system)._p(), _path(path)))

    def load(self, path, system=None):
        """Read a State of the System from a checkpoint file (realized to Instance)."""
        system = self._sys(system)
        check(lib.mbk_state_load(self._w(), system._p(), _path(path)))
        self.system = system
        self._views = {}

    def serialize(self, system=None):
        """The checkpoint file image, as bytes."""
        p, sp = self._p(), self._sys(system)._p()
        size = ctypes.c_size_t()
        check(lib.mbk_state_serialize(p, sp, None, 0, ctypes.byref(size)))
        buf = ctypes.create_string_buffer(size.value)
        check(lib.mbk_state_serialize(p, sp, buf, size.value, ctypes.byref(size)))
        return buf.raw[:size.value]

    def deserialize(self, data, system=None):
        """Load from a checkpoint image (bytes)."""
        system = self._sys(system)
        data = bytes(data)
        check(lib.mbk_state_deserialize(self._w(), system._p(), data, len(data)))
        self.system = system
        self._views = {}


def _path(path):
    import os
    return os.fsencode(path)
