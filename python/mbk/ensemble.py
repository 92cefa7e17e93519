"""Ensembles: many States of one System, integrated on a pool of C threads
(include/mbk/ensemble.h, docs/ensembles.md), and the counter-based Philox
random numbers that make their random parameters independent of threads.

    e = mbk.Ensemble(system, 16, integrator="rkmerson", accuracy=1e-8, threads=4)
    def init(member, state):
        state.q = [0.5 + 0.1 * mbk.random_normal(SEED, member, 0)]
    finals = e.run(2.0, init)          # done=None: a copy of each final y

Python callbacks run on the C worker threads. ctypes takes the GIL for each
call, so they are safe, but they serialize: threads speed up the C work
(realization, integration) only. An exception raised in a callback (init,
done, or a Python force or event handler of the System during a member) is
stored, the run is aborted, and run() raises the original exception.
"""
import ctypes
import threading

import numpy as np

from . import _capi, errors
from .errors import check, invalid, raise_status
from ._handle import Handle
from .state import State

lib = _capi.lib

__all__ = ["Ensemble", "NOT_RUN", "random_bits", "random_uniform", "random_normal",
           "philox4x32"]

#: the status recorded for a member that was not run (skipped, or the run aborted first)
NOT_RUN = 100
_EUSER = -11
# mbk.Integrator's method names (mbk.INTEGRATORS) as the C ensemble spells them
_NAMES = {"explicit_euler": "euler", "semi_explicit_euler": "semi-euler",
          "cvode_bdf": "cvode-bdf", "cvode_adams": "cvode-adams"}


def _set_error(exc, what):
    try:
        msg = ("%s raised %s: %s" % (what, type(exc).__name__, exc)).encode("utf-8", "replace")
        lib.mbk_set_error(_EUSER, b"%s", msg)
    except Exception:  # pragma: no cover
        pass


class Ensemble(Handle):
    """mbk_ensemble: `n_members` members of `system`, each integrated from t = 0 to
    t_final by its own integrator (`integrator`, `accuracy`) on `threads` C threads
    (0: all cores). Every member starts from a copy of the System's default State
    realized to Instance; results are bitwise the same whatever the threads."""

    _what = "Ensemble"
    _instead = "make a new mbk.Ensemble of the System (results are bitwise the same)"

    def __init__(self, system, n_members, integrator="rkmerson", accuracy=1e-3, threads=0):
        self._ptr = None
        self.system = system
        if not isinstance(n_members, (int, np.integer)) or isinstance(n_members, bool):
            raise invalid("n_members must be an int, got %r" % (n_members,))
        sp = system._p()
        if not lib.mbk_system_is_topology_realized(sp):
            check(lib.mbk_system_realize_topology(sp))
        p = lib.mbk_ensemble_create(sp, int(n_members))
        if not p:
            raise_status(lib.mbk_last_status() or -1)
        self._ptr = p
        self.statuses = np.full(int(n_members), NOT_RUN, dtype=np.intc)
        self.set_integrator(integrator, accuracy)
        self.threads = threads

    def close(self):
        if self._ptr:
            lib.mbk_ensemble_destroy(self._ptr)
            self._ptr = None

    def _p(self):
        """The C pointer, while both the Ensemble and its System are open."""
        p = Handle._p(self)
        if not self.system._ptr:
            raise invalid("the System of this Ensemble was closed: the Ensemble cannot run "
                          "any more; make a new System and Ensemble")
        return p

    def __len__(self):
        return lib.mbk_ensemble_get_num_members(self._p())

    @property
    def num_members(self):
        return len(self)

    def set_integrator(self, name, accuracy=1e-3):
        """The members' integrator by name ("rkmerson", "rk4", "euler", "semi-euler",
        "cvode-bdf", "cvode-adams", "ida", or mbk.Integrator's names: "cvode_bdf",
        "explicit_euler", ...) and its accuracy (0 < accuracy < 1)."""
        if not isinstance(name, str):
            raise invalid("integrator name must be a str, got %r" % (name,))
        c_name = _NAMES.get(name.lower(), name)
        check(lib.mbk_ensemble_set_integrator(self._p(), c_name.encode(), float(accuracy)))

    @property
    def threads(self):
        """Threads a run uses (the setting resolved: 0 is all cores, capped at the members);
        set it to a count, 0 for all cores."""
        return check(lib.mbk_ensemble_get_threads(self._p()))

    @threads.setter
    def threads(self, n):
        if not isinstance(n, (int, np.integer)) or isinstance(n, bool):
            raise invalid("threads must be an int, got %r" % (n,))
        check(lib.mbk_ensemble_set_threads(self._p(), int(n)))

    # ---- skipping, counts ----------------------------------------------------------
    def skip_member(self, member):
        """Leave `member` out of every later run (it finished before: resuming a sweep)."""
        check(lib.mbk_ensemble_skip_member(self._p(), int(member)))

    def is_skipped(self, member):
        return bool(lib.mbk_ensemble_is_skipped(self._p(), int(member)))

    @property
    def num_skipped(self):
        return lib.mbk_ensemble_get_num_skipped(self._p())

    @property
    def num_run(self):
        """Members run by the last run."""
        return lib.mbk_ensemble_get_num_run(self._p())

    @property
    def num_failed(self):
        """Of those, how many failed (negative status)."""
        return lib.mbk_ensemble_get_num_failed(self._p())

    # ---- during done ---------------------------------------------------------------
    def member_stats(self, member):
        """Inside done(member, ...): the member's integrator statistics, as a dict."""
        st = _capi.IntegratorStats()
        check(lib.mbk_ensemble_get_member_stats(self._p(), int(member), ctypes.byref(st)))
        return {n: getattr(st, n) for n in _capi.STATS_FIELDS}

    def member_initial_state(self, member):
        """Inside done(member, ...): the State init filled, realized to Velocity (read-only,
        valid during the call), or None when that failed."""
        p = lib.mbk_ensemble_get_member_initial_state(self._p(), int(member))
        return State._borrow(p, self.system, True) if p else None

    # ---- running ----------------------------------------------------------------------
    def run(self, t_final, init=None, done=None):
        """Run every member (not skipped) from t = 0 to t_final.

        init(member, state): fill the member's State (writable; a copy of the default
        State at Instance): q, u, z, parameters. Its return value is ignored.
        done(member, state, status): read the final State (read-only, valid during the
        call; realized to Acceleration when the member succeeded). status is mbk.OK,
        mbk.TERMINATED or negative (failed; mbk.last_error() says why). Its return
        value is the member's result. done=None: the result is a copy of the final y.

        Returns the list of results, member by member (None for members not run);
        `statuses` holds each member's status (NOT_RUN for members not run),
        `num_run` and `num_failed` count them. A Python exception in a callback aborts
        the run and is raised here, as itself."""
        p = self._p()
        if init is not None and not callable(init):
            raise invalid("init must be callable or None, got %r" % (init,))
        if done is not None and not callable(done):
            raise invalid("done must be callable or None, got %r" % (done,))
        try:
            t_final = float(t_final)
        except (TypeError, ValueError):
            raise invalid("t_final must be a number, got %r" % (t_final,)) from None
        n = len(self)
        system = self.system
        results = [None] * n
        statuses = self.statuses
        statuses[:] = NOT_RUN
        caught = []
        lock = threading.Lock()

        def store(exc):
            with lock:
                if not caught:
                    caught.append(exc)

        # each member starts with init on its worker: register the thread there, so that
        # exceptions of the member's forces and handlers reach this run (errors.workers)
        workers = errors.workers
        mine = set()

        def init_cb(user, sys_ptr, member, s):
            ident = threading.get_ident()
            if ident not in mine:
                mine.add(ident)
                workers[ident] = store
            if init is None:
                return 0
            try:
                init(member, State._borrow(s, system, False))
                return 0
            except BaseException as e:  # noqa: B902 - everything goes back to the caller
                store(e)
                _set_error(e, "Python ensemble init (member %d)" % member)
                return _EUSER

        def done_cb(user, sys_ptr, member, s, status):
            statuses[member] = status
            if caught:
                return 1                    # abort: an exception is waiting for run()
            try:
                if done is None:
                    r = np.array(State._borrow(s, system, True).y)
                else:
                    r = done(member, State._borrow(s, system, True), status)
                results[member] = r
                return 0
            except BaseException as e:  # noqa: B902
                store(e)
                return 1

        c_init = _capi.MEMBER_INIT_FN(init_cb)
        c_done = _capi.MEMBER_DONE_FN(done_cb)
        try:
            rc = lib.mbk_ensemble_run(p, t_final, c_init, c_done, None)
        finally:
            # the workers have ended; a thread of a later run may reuse an ident (and
            # another Ensemble may already have registered it): remove only ours
            for ident in mine:
                if workers.get(ident) is store:
                    del workers[ident]
        if caught:
            exc = caught[0]
            caught.clear()
            raise exc
        check(rc)
        return results


# ---- counter-based random numbers (Philox4x32-10) ------------------------------------

def _u64(x, name):
    if not isinstance(x, (int, np.integer)) or isinstance(x, bool) or x < 0 or x >= 1 << 64:
        raise invalid("%s must be an int in [0, 2**64), got %r" % (name, x))
    return int(x)


def random_bits(seed, member, draw):
    """64 random bits: the `draw`-th number of `member` under `seed` (a pure function)."""
    return lib.mbk_random_bits(_u64(seed, "seed"), _u64(member, "member"), _u64(draw, "draw"))


def random_uniform(seed, member, draw):
    """Uniform on [0, 1), 53 random bits (mbk_random_uniform)."""
    return lib.mbk_random_uniform(_u64(seed, "seed"), _u64(member, "member"), _u64(draw, "draw"))


def random_normal(seed, member, draw):
    """Standard normal (mbk_random_normal: Box-Muller from one Philox block)."""
    return lib.mbk_random_normal(_u64(seed, "seed"), _u64(member, "member"), _u64(draw, "draw"))


def philox4x32(ctr, key):
    """The raw generator: 10 rounds of Philox4x32 on 4 32-bit counter words and 2 key words;
    returns a tuple of 4 ints."""
    ctr, key = list(ctr), list(key)
    if len(ctr) != 4 or len(key) != 2:
        raise invalid("philox4x32 takes 4 counter words and 2 key words")
    for w in ctr + key:
        if not isinstance(w, (int, np.integer)) or isinstance(w, bool) or not 0 <= w < 1 << 32:
            raise invalid("Philox words must be ints in [0, 2**32), got %r" % (w,))
    c, k, o = (ctypes.c_uint32 * 4)(*ctr), (ctypes.c_uint32 * 2)(*key), (ctypes.c_uint32 * 4)()
    lib.mbk_philox4x32(c, k, o)
    return tuple(o)
