"""Systems: build them, realize States, and the ODE/DAE views for outside solvers."""
import ctypes
import threading

import numpy as np

from . import _arrays, _callbacks, _capi
from .enums import DaeForm, Direction, Stage, stage_arg
from .errors import check, invalid, pending, raise_status
from ._handle import Handle
from .state import State

lib = _capi.lib
_empty = np.empty
_F64 = _arrays.F64
_ndarray = np.ndarray
_copyto = np.copyto
_calc_ydot = lib.mbk_system_calc_ydot
# the same C function without argtypes, for ydot's fast path (arguments are ctypes objects)
_calc_ydot_raw = lib._FuncPtr(("mbk_system_calc_ydot", lib))
_calc_ydot_raw.restype = ctypes.c_int
_c_double, _c_void_p = ctypes.c_double, ctypes.c_void_p
_get_ny = lib.mbk_state_get_ny
_ESTALE = -3

__all__ = ["System"]


class System(Handle):
    """A System (mbk_system): an ordered list of subsystems. `System(name)` makes
    an empty one; MultibodySystem (mbk.multibody) makes matter + forces."""

    _what = "System"
    _instead = ("build the System again (or load_urdf again); copy States with State.copy() "
                "and keep them with State.serialize() / State.save()")

    def __init__(self, name="system", _ptr=None):
        self._ptr = None
        self._callbacks = []   # ctypes callback objects the C side points to
        # ydot, jacobian and dae_residual realize a scratch State of the calling thread
        # (threads must not share one: ctypes releases the GIL during the C call), a copy
        # of the template ode_state where parameters are set; see _ode_cache
        self._ode_h = None     # the template's _Handle (it owns the C State)
        self._ode_lock = threading.Lock()
        self._ode_tls = threading.local()   # .c: this thread's (ny, ..., scratch State)
        if _ptr is None:
            _ptr = lib.mbk_system_create(name.encode())
            if not _ptr:
                raise_status(lib.mbk_last_status() or -4)
        self._ptr = _ptr

    # ---- lifecycle -------------------------------------------------------------
    def close(self):
        """Destroy the C System now (also done when the object is collected).
        Integrators and Ensembles of it refuse to work afterwards; States stay readable."""
        self._ode_drop()
        if self._ptr:
            lib.mbk_system_destroy(self._ptr)
            self._ptr = None
        self._callbacks = []

    def __repr__(self):
        return "<mbk.%s %r>" % (type(self).__name__, self.name if self._ptr else "(closed)")

    # ---- structure -------------------------------------------------------------
    @property
    def name(self):
        return lib.mbk_system_get_name(self._p()).decode()

    @property
    def num_subsystems(self):
        return lib.mbk_system_get_num_subsystems(self._p())

    def subsystem_name(self, k):
        n = lib.mbk_system_get_subsystem_name(self._p(), int(k))
        if n is None:
            raise invalid("no subsystem %d" % k)
        return n.decode()

    @property
    def topology_version(self):
        return lib.mbk_system_get_topology_version(self._p())

    @property
    def is_topology_realized(self):
        return bool(lib.mbk_system_is_topology_realized(self._p()))

    def invalidate_topology(self):
        lib.mbk_system_invalidate_topology(self._p())

    def realize_topology(self):
        """Run every realize_topology op; the System is then read-only. Returns self."""
        check(lib.mbk_system_realize_topology(self._p()))
        return self

    @property
    def fingerprint(self):
        """mbk_system_get_fingerprint: the layout of this System's States."""
        f = lib.mbk_system_get_fingerprint(self._p())
        if f == 0:
            raise_status(lib.mbk_last_status() or -1)
        return f

    # ---- States ----------------------------------------------------------------
    def new_state(self, stage=Stage.INSTANCE):
        """A new State from the default State, realized to `stage` (Instance by
        default: the sizes are known and q, u, z can be set; a Stage, an int or a
        name such as "position"). Realizes the topology first if that was not done."""
        stage = None if stage is None else stage_arg(stage)
        if not lib.mbk_system_is_topology_realized(self._p()):
            self.realize_topology()
        return State(self, stage)

    @property
    def default_state(self):
        """The default State (read-only)."""
        p = lib.mbk_system_get_default_state(self._p())
        if not p:
            raise invalid("the topology is not realized: call realize_topology() first")
        return State._borrow(p, self, True, self)

    def realize(self, state, stage=Stage.ACCELERATION):
        """Realize `state` to `stage` (mbk_system_realize)."""
        rc = lib.mbk_system_realize(self._p(), state._p(), stage_arg(stage))
        if rc or pending[0]:
            check(rc)
        return state

    def check_state(self, state):
        check(lib.mbk_system_check_state(self._p(), state._p()))

    def energy(self, state):
        """(kinetic, potential) energy (Velocity)."""
        ke, pe = ctypes.c_double(), ctypes.c_double()
        check(lib.mbk_system_calc_energy(self._p(), state._p(), ctypes.byref(ke),
                                         ctypes.byref(pe)))
        return ke.value, pe.value

    def kinetic_energy(self, state):
        return self.energy(state)[0]

    def potential_energy(self, state):
        pe = ctypes.c_double()
        check(lib.mbk_system_calc_energy(self._p(), state._p(), None, ctypes.byref(pe)))
        return pe.value

    def project(self, state, tol):
        """Put the State back on the constraint manifold (leaves it at Velocity)."""
        check(lib.mbk_system_project(self._p(), state._w(), float(tol)))

    def project_u(self, state, tol):
        """u alone onto the velocity constraints (mbk_system_project_u)."""
        check(lib.mbk_system_project_u(self._p(), state._w(), float(tol)))

    def assemble(self, state, tol=1e-10, locked_q=None):
        """Drive max|perr| below tol (leaves the State at Position); locked_q: nq flags."""
        if locked_q is None:
            check(lib.mbk_system_assemble(self._p(), state._w(), float(tol)))
        else:
            flags = np.ascontiguousarray(locked_q, dtype=np.bool_)
            if flags.shape != (state.nq,):
                raise invalid("locked_q has shape %s; expected (%d,)" % (flags.shape, state.nq))
            check(lib.mbk_system_assemble_locked(self._p(), state._w(), float(tol),
                                                 flags.ctypes.data))

    def project_error_estimate(self, state, yerr):
        """Project an error estimate (ny values) onto the constraint manifold's tangent
        space, in place (mbk_system_project_error_estimate)."""
        if (type(yerr) is not _ndarray or yerr.dtype is not _F64 or not yerr.flags.c_contiguous
                or yerr.shape != (state.ny,)):
            raise invalid("yerr must be a C-contiguous float64 array of shape (%d,)" % state.ny)
        check(lib.mbk_system_project_error_estimate(self._p(), state._w(), yerr.ctypes.data))
        return yerr

    # ---- the plain ODE view (SciPy's solve_ivp and friends) ------------------------
    @property
    def ode_state(self):
        """The template of the scratch States ydot(), jacobian() and dae_residual()
        realize when no state= is given (one per thread, each a copy of it): set
        parameters or enabled flags on it to change what they compute, for every
        thread. Those calls do not write it. Its views keep its memory alive; once
        the System is closed or its topology changed, take it again."""
        return _OdeState._of(self, self._ode_template(stale_ok=True))

    def _ode_template(self, stale_ok=False):
        # the template (made on first use, again when the topology changed; stale_ok: not
        # while the topology is being changed, as before it is realized again)
        p = self._p()
        h = self._ode_h
        if h is not None and (lib.mbk_system_check_state(p, h.ptr) >= 0 or stale_ok
                              and not lib.mbk_system_is_topology_realized(p)):
            return h
        with self._ode_lock:
            if self._ode_h is h:         # no other thread made it again meanwhile
                self._ode_h = _new_template(p)
                self._ode_tls = threading.local()
            return self._ode_h

    def _ode_changed(self):
        # the template changed (a parameter, the layout): every thread copies it again
        self._ode_tls = threading.local()

    def _ode_drop(self):
        # forget the template and every thread's scratch State (close): wrappers of the
        # template then refuse to work (_OdeState._p), views of it keep its memory
        self._ode_h = None
        self._ode_tls = threading.local()

    def _ode_cache(self):
        # this thread's scratch State (a copy of the template) and two buffers of ny
        # doubles whose addresses are known, so ydot() passes no address it must look
        # up; dropped whenever the template changes and when the scratch State is stale.
        # The C arguments are ready-made ctypes objects, t goes into a c_double
        # kept here, and the call goes through a function object without argtypes:
        # ctypes then converts nothing (about 0.15 us less than converting ints).
        # Per thread rather than one State behind a lock: threads then run the C
        # call in parallel, and finding this thread's tuple (a threading.local
        # attribute) costs about 0.02 us against 0.15 us for taking and releasing a lock.
        h = self._ode_template()
        tls = self._ode_tls
        scratch = State(None)
        check(lib.mbk_state_copy(scratch._ptr, h.ptr))
        s = scratch._ptr
        ny = check(_get_ny(s))
        ybuf, obuf = _empty(ny), _empty(ny)
        ct = _c_double(0.0)
        args = (_c_void_p(self._p()), _c_void_p(s), ct, _c_void_p(ybuf.ctypes.data),
                _c_void_p(obuf.ctypes.data))
        c = (ny, (ny,), ybuf, obuf, ct, args, scratch)
        if tls is self._ode_tls:         # the template did not change meanwhile
            tls.c = c
        return c

    def _ode_scratch(self):
        """This thread's cache tuple (its scratch State last)."""
        try:
            return self._ode_tls.c
        except AttributeError:
            return self._ode_cache()

    def _ode_stale(self):
        # the topology changed since this thread's scratch State was copied: copy
        # again, from a template made again
        self._ode_tls.__dict__.pop("c", None)
        return self._ode_cache()

    @property
    def ny(self):
        return check(_get_ny(self._ode_template().ptr))

    def y0(self, state=None):
        """A copy of y = [q u z] of `state` (default: the default State realized to Instance)."""
        s = state if state is not None else self.new_state()
        return np.array(s.y)

    def ydot(self, t, y, out=None, state=None):
        """ydot = f(t, y) for y = [q u z] (mbk_system_calc_ydot): shaped for
        scipy.integrate.solve_ivp(system.ydot, ...). Sets t and y in the calling
        thread's scratch State (a copy of ode_state; or in `state`), realizes it to
        Acceleration and returns [qdot udot zdot] in a new array (or in `out`, a
        float64 array of ny values). Safe from any number of threads at once."""
        if state is None:
            try:
                c = self._ode_tls.c
            except AttributeError:
                c = self._ode_cache()
            ny, shape, ybuf, obuf, ct, args, _ = c
            if type(y) is not _ndarray or y.shape != shape or y.dtype is not _F64:
                if lib.mbk_system_check_state(self._p(), args[1]) < 0:  # the topology changed
                    self._ode_stale()
                    return self.ydot(t, y, out)
                y = _arrays.f64(y, ny, "y")
            ybuf[...] = y         # cheaper than looking up y's address (y.ctypes.data: ~0.9 us)
            try:
                ct.value = t
            except TypeError:
                raise invalid("t must be a number, got %r" % (t,)) from None
            rc = _calc_ydot_raw(*args)
            if rc or pending[0]:
                if rc == _ESTALE:
                    self._ode_stale()
                    return self.ydot(t, y, out)
                check(rc)
            if out is None:
                return obuf.copy()
            if type(out) is _ndarray and out.shape == shape and out.dtype is _F64:
                try:
                    out[...] = obuf
                    return out
                except ValueError:    # read-only
                    pass
            raise invalid("out must be a writable float64 array of shape (%d,)" % ny)
        s = state._w()
        ny = check(_get_ny(s))
        y = _arrays.f64(y, ny, "y")
        out = _arrays.out_array(out, ny)
        check(_calc_ydot(self._p(), s, _arrays.number(t, "t"), y.ctypes.data, out.ctypes.data))
        return out

    __call__ = ydot

    def jacobian(self, t, y, state=None, fd=False):
        """d ydot / d y at (t, y), an (ny, ny) array with J[i, j] = d ydot_i / d y_j
        (mbk_system_calc_ydot_jacobian; analytic where the library differentiates,
        forward differences otherwise; fd=True forces finite differences when
        the library has mbk_system_calc_ydot_jacobian_fd). For solve_ivp's jac=."""
        c = self._ode_scratch() if state is None else None
        s = c[6]._ptr if state is None else state._w()
        ny = check(_get_ny(s))
        y = _arrays.f64(y, ny, "y")
        rc = lib.mbk_system_set_y_and_realize(self._p(), s, _arrays.number(t, "t"), y.ctypes.data,
                                              Stage.TIME)
        if rc == _ESTALE and state is None:
            self._ode_stale()
            return self.jacobian(t, y, None, fd)
        check(rc)
        J = _empty((ny, ny))
        fn = lib.mbk_system_calc_ydot_jacobian
        if fd:
            if not _capi.has("mbk_system_calc_ydot_jacobian_fd"):
                raise invalid("this libmbk has no mbk_system_calc_ydot_jacobian_fd")
            fn = lib.mbk_system_calc_ydot_jacobian_fd
        check(fn(self._p(), s, J.ctypes.data))
        return J

    def set_y_and_realize(self, state, t, y, stage):
        """Set t and y (None: keep the State's) and realize to `stage`."""
        s = state._w()
        yp = None
        if y is not None:
            y = _arrays.f64(y, check(_get_ny(s)), "y")
            yp = y.ctypes.data
        check(lib.mbk_system_set_y_and_realize(self._p(), s, float(t), yp, stage_arg(stage)))

    def dae_residual(self, t, y, yp, out=None, state=None):
        """r = yp - ydot(t, y) (mbk_system_calc_dae_residual)."""
        c = self._ode_scratch() if state is None else None
        s = c[6]._ptr if state is None else state._w()
        ny = check(_get_ny(s))
        y = _arrays.f64(y, ny, "y")
        yp = _arrays.f64(yp, ny, "yp")
        out = _arrays.out_array(out, ny)
        rc = lib.mbk_system_calc_dae_residual(self._p(), s, _arrays.number(t, "t"), y.ctypes.data,
                                              yp.ctypes.data, out.ctypes.data)
        if rc == _ESTALE and state is None:
            self._ode_stale()
            return self.dae_residual(t, y, yp, out, None)
        check(rc)
        return out

    # ---- derivatives (DESIGN.md section 12), when the library has them ------------
    def acceleration_derivatives(self, state):
        """(dudot/dq (nu x nq), dudot/du (nu x nu)) at the State's t, q, u."""
        if not _capi.has("mbk_system_calc_acceleration_derivatives"):
            raise NotImplementedError("this libmbk has no mbk_system_calc_acceleration_derivatives")
        nq, nu = state.nq, state.nu
        dq, du = _empty((nu, nq)), _empty((nu, nu))
        check(lib.mbk_system_calc_acceleration_derivatives(self._p(), state._w(), dq.ctypes.data,
                                                           du.ctypes.data))
        return dq, du

    def residual_derivatives(self, state, udot):
        """(dr/dq (nu x nq), dr/du (nu x nu)) of r = M udot + C - f at the given udot."""
        if not _capi.has("mbk_system_calc_residual_derivatives"):
            raise NotImplementedError("this libmbk has no mbk_system_calc_residual_derivatives")
        nq, nu = state.nq, state.nu
        udot = _arrays.f64(udot, nu, "udot")
        dq, du = _empty((nu, nq)), _empty((nu, nu))
        check(lib.mbk_system_calc_residual_derivatives(self._p(), state._w(), udot.ctypes.data,
                                                       dq.ctypes.data, du.ctypes.data))
        return dq, du

    def force_jacobians(self, state):
        """(df/dq (nu x nq), df/du (nu x nu)) of the applied forces."""
        if not _capi.has("mbk_system_add_force_jacobians"):
            raise NotImplementedError("this libmbk has no mbk_system_add_force_jacobians")
        nq, nu = state.nq, state.nu
        dq, du = np.zeros((nu, nq)), np.zeros((nu, nu))
        check(lib.mbk_system_add_force_jacobians(self._p(), state._w(), dq.ctypes.data,
                                                 du.ctypes.data))
        return dq, du

    # ---- the DAE with constraint rows (include/mbk/external.h) ----------------------
    def _dae_opts(self, form, rows):
        opt = _capi.DaeOptions()
        opt.form = int(form)
        keep = None
        if rows is not None:
            keep = (ctypes.c_int * max(1, len(rows)))(*[int(r) for r in rows])
            opt.rows = ctypes.cast(keep, ctypes.POINTER(ctypes.c_int))
            opt.n_rows = len(rows)
        return opt, keep

    def dae_layout(self, state, form=DaeForm.INDEX3, rows=None):
        """The sizes of a DAE form, as a dict (mbk_system_get_dae_layout)."""
        opt, keep = self._dae_opts(form, rows)
        lay = _capi.DaeLayout()
        check(lib.mbk_system_get_dae_layout(self._p(), state._w(), ctypes.byref(opt),
                                            ctypes.byref(lay)))
        return {n: getattr(lay, n) for n, _ in _capi.DaeLayout._fields_}

    def constrained_dae_residual(self, state, t, y, yp, form=DaeForm.INDEX3, rows=None, out=None):
        """The residual of the index-3 or GGL form (mbk_system_calc_constrained_dae_residual)."""
        n = self.dae_layout(state, form, rows)["n"]
        opt, keep = self._dae_opts(form, rows)
        y = _arrays.f64(y, n, "y")
        yp = _arrays.f64(yp, n, "yp")
        out = _arrays.out_array(out, n)
        check(lib.mbk_system_calc_constrained_dae_residual(self._p(), state._w(), ctypes.byref(opt),
                                                           float(t), y.ctypes.data, yp.ctypes.data,
                                                           out.ctypes.data))
        return out

    def dae_values(self, state, form=DaeForm.INDEX3, rows=None):
        """Consistent (y, yp) of a form from a State realized to Acceleration."""
        n = self.dae_layout(state, form, rows)["n"]
        opt, keep = self._dae_opts(form, rows)
        y, yp = _empty(n), _empty(n)
        check(lib.mbk_system_get_dae_values(self._p(), state._w(), ctypes.byref(opt),
                                            y.ctypes.data, yp.ctypes.data))
        return y, yp

    # ---- events ------------------------------------------------------------------
    def _keep(self, *objs):
        self._callbacks.extend(objs)

    def add_event_handler(self, witness, handler, stage=Stage.POSITION,
                          direction=Direction.ANY):
        """A triggered event: witness(state) -> float is evaluated at `stage`; when it
        crosses zero in `direction`, handler(state, result) runs on the State just
        past the crossing; it may change the State and must then lower
        result.lowest_modified to the lowest stage it changed (result.modified(stage));
        result.terminate = True stops the integration. Returns the event id."""
        w = _callbacks.witness(self, witness)
        h = _callbacks.handler(self, handler)
        rc = check(lib.mbk_system_add_event_handler(self._p(), stage_arg(stage), int(direction),
                                                    w, h, None))
        self._keep(w, h)
        return rc

    def add_event_reporter(self, witness, reporter, stage=Stage.POSITION,
                           direction=Direction.ANY):
        """A triggered reporter: reporter(state) at each located crossing."""
        w = _callbacks.witness(self, witness)
        r = _callbacks.reporter(self, reporter)
        rc = check(lib.mbk_system_add_event_reporter(self._p(), stage_arg(stage), int(direction),
                                                     w, r, None))
        self._keep(w, r)
        return rc

    def add_scheduled_event(self, t, handler):
        """handler(state, result) at time t exactly."""
        h = _callbacks.handler(self, handler)
        rc = check(lib.mbk_system_add_scheduled_event(self._p(), float(t), h, None))
        self._keep(h)
        return rc

    def add_periodic_reporter(self, interval, reporter):
        """reporter(state) at every t = k * interval (the State realized to Report)."""
        r = _callbacks.reporter(self, reporter)
        rc = check(lib.mbk_system_add_periodic_reporter(self._p(), float(interval), r, None))
        self._keep(r)
        return rc

    @property
    def events_subsystem(self):
        return lib.mbk_system_get_events_subsystem(self._p())

    def next_report_time(self, t):
        return lib.mbk_system_get_next_report_time(self._p(), float(t))

    # ---- events for an outside driver (include/mbk/external.h) -----------------------
    def num_witnesses(self, state):
        return check(lib.mbk_system_get_num_witnesses(self._p(), state._p()))

    def witness_info(self, state):
        """The active witnesses: a list of dicts (subsystem, event_id, stage, direction, reporter)."""
        n = self.num_witnesses(state)
        info = (_capi.WitnessInfo * max(1, n))()
        check(lib.mbk_system_get_witness_info(self._p(), state._p(), info))
        return [{"subsystem": w.subsystem, "event_id": w.event_id, "stage": Stage(w.stage),
                 "direction": Direction(w.direction), "reporter": bool(w.reporter)}
                for w in info[:n]]

    def witness_stage(self, state):
        g = ctypes.c_int()
        check(lib.mbk_system_get_witness_stage(self._p(), state._p(), ctypes.byref(g)))
        return Stage(g.value)

    def witnesses(self, state):
        """The active witnesses' values, from the State (realized to the witness stage)."""
        w = _empty(self.num_witnesses(state))
        check(lib.mbk_system_get_witnesses(self._p(), state._p(), w.ctypes.data, None))
        return w

    def calc_witnesses(self, state, t, y=None):
        """The witnesses at (t, y): a root finder's function."""
        s = state._w()
        n = self.num_witnesses(state)
        yp = None
        if y is not None:
            y = _arrays.f64(y, check(_get_ny(s)), "y")
            yp = y.ctypes.data
        w = _empty(n)
        check(lib.mbk_system_calc_witnesses(self._p(), s, float(t), yp, w.ctypes.data))
        return w

    def find_witness_crossings(self, state, w_before, w_after):
        """An int array of flags: 1 where witness i crossed in its direction."""
        n = self.num_witnesses(state)
        a = _arrays.f64(w_before, n, "w_before")
        b = _arrays.f64(w_after, n, "w_after")
        fired = np.zeros(n, dtype=np.intc)
        check(lib.mbk_system_find_witness_crossings(self._p(), state._p(), a.ctypes.data,
                                                    b.ctypes.data, fired.ctypes.data))
        return fired

    def handle_events_at(self, state, fired=None, from_state=None):
        """Run the handlers of the fired witnesses and of the scheduled events due at
        the State's time; returns (number handled, lowest_modified, terminate)."""
        f = None
        if fired is not None:
            fired = np.ascontiguousarray(fired, dtype=np.intc)
            if fired.shape != (self.num_witnesses(state),):
                raise invalid("fired must have one flag per witness")
            f = fired.ctypes.data
        res = _capi.EventResult(Stage.INFINITY, False)
        n = check(lib.mbk_system_handle_events_at(self._p(), None if from_state is None
                                                  else from_state._p(), state._w(), f,
                                                  ctypes.byref(res)))
        return n, Stage(res.lowest_modified), bool(res.terminate)

    def call_witness_reporters(self, state, fired):
        fired = np.ascontiguousarray(fired, dtype=np.intc)
        return check(lib.mbk_system_call_witness_reporters(self._p(), state._p(),
                                                           fired.ctypes.data))

    def next_scheduled_time(self, state):
        t = ctypes.c_double()
        check(lib.mbk_system_get_next_scheduled_time(self._p(), state._p(), ctypes.byref(t)))
        return t.value


def _new_template(p):
    """A State of the System at address p realized to Instance, owned by its _Handle."""
    if not lib.mbk_system_is_topology_realized(p):
        check(lib.mbk_system_realize_topology(p))
    s = State(None)
    check(lib.mbk_state_init(s._ptr, p))
    check(lib.mbk_system_realize(p, s._ptr, Stage.INSTANCE))
    return s._h


class _OdeState(State):
    """A wrapper of the template of ydot's scratch States (System.ode_state): any change
    through it makes every thread copy the template again, and it refuses to work
    once the System was closed or made a new template (its topology changed)."""
    __slots__ = ()

    @classmethod
    def _of(cls, system, h):
        s = cls._borrow(h.ptr, system, False)
        s._h = h             # the System's owning handle: views keep the memory alive
        return s

    def _p(self):
        h = self._h
        if h is None or h is not self.system._ode_h:
            raise invalid("this ode_state is out of date: its System was closed, or its "
                          "topology changed and the template was made again; take "
                          "system.ode_state again")
        return self._ptr

    def _w(self):
        p = self._p()
        self.system._ode_changed()
        return p

    def close(self):
        """Let go of the template (the System keeps it as long as it lives)."""
        self._h = None
        self._ptr = None
        self._views = {}
