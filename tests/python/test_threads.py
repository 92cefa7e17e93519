"""Python threads: ydot, jacobian and dae_residual of one System from many threads
give the single-thread results bitwise (each thread realizes a scratch State of its
own), and an exception raised in a callback reaches the thread whose call raised
it, even while an Ensemble runs elsewhere."""
import threading

import numpy as np
import pytest

import mbk
from conftest import assert_same_bits, pendulum

THREADS = 4


def _in_threads(work, n=THREADS):
    """Run work(k) on n threads started together; re-raise the first failure."""
    errors = []
    barrier = threading.Barrier(n)

    def run(k):
        try:
            barrier.wait(30)
            work(k)
        except BaseException as e:  # noqa: B902 - reported to the test
            errors.append(e)
    ts = [threading.Thread(target=run, args=(k,)) for k in range(n)]
    for t in ts:
        t.start()
    for t in ts:
        t.join(120)
    assert not any(t.is_alive() for t in ts), "a thread did not finish"
    if errors:
        raise errors[0]


def _damped(sys_):
    sys_.invalidate_topology()
    sys_.forces.add_custom(lambda st, bf, mf: mf.__isub__(0.1 * st.u), name="damping")
    sys_.realize_topology()
    return sys_


@pytest.mark.parametrize("python_force", [False, True])
def test_ydot_from_threads_is_bitwise_the_single_thread_result(python_force):
    sys_ = pendulum(10)
    if python_force:
        _damped(sys_)
    rng = np.random.default_rng(7)
    Y = [rng.normal(size=sys_.ny) for _ in range(THREADS)]
    ref = [sys_.ydot(0.1 * k, y) for k, y in enumerate(Y)]
    bad = [0] * THREADS

    def work(k):
        out = np.empty(sys_.ny)
        for i in range(3000 if not python_force else 600):
            r = sys_.ydot(0.1 * k, Y[k]) if i % 2 else sys_.ydot(0.1 * k, list(Y[k]), out=out)
            bad[k] += not np.array_equal(r, ref[k])
    _in_threads(work)
    assert bad == [0] * THREADS
    for k in range(THREADS):                 # and the calling thread's results are unchanged
        assert_same_bits(sys_.ydot(0.1 * k, Y[k]), ref[k])


def test_jacobian_and_dae_residual_from_threads():
    sys_ = pendulum(10)
    rng = np.random.default_rng(3)
    Y = [rng.normal(size=sys_.ny) for _ in range(THREADS)]
    YP = [rng.normal(size=sys_.ny) for _ in range(THREADS)]
    refJ = [sys_.jacobian(0.0, y) for y in Y]
    refR = [sys_.dae_residual(0.0, y, yp) for y, yp in zip(Y, YP)]

    def work(k):
        for _ in range(300):
            assert_same_bits(sys_.jacobian(0.0, Y[k]).ravel(), refJ[k].ravel(), "jacobian")
            assert_same_bits(sys_.dae_residual(0.0, Y[k], YP[k]), refR[k], "dae_residual")
            sys_.ydot(0.0, YP[k])            # interleaved with ydot on the same scratch
    _in_threads(work)


def test_ode_state_parameters_reach_every_thread():
    sys_ = pendulum(2)
    y = np.array([0.5, -0.3, 0.0, 0.0])
    earth = sys_.ydot(0.0, y)
    _in_threads(lambda k: assert_same_bits(sys_.ydot(0.0, y), earth))  # threads have copies
    sys_.forces.set_gravity(sys_.ode_state, 0, (0, -1.62, 0))
    moon = sys_.ydot(0.0, y)
    assert np.allclose(moon[2:] / earth[2:], 1.62 / 9.81)
    _in_threads(lambda k: assert_same_bits(sys_.ydot(0.0, y), moon))


def test_topology_change_seen_by_every_thread():
    sys_ = pendulum(1)
    _in_threads(lambda k: sys_.ydot(0.0, [0.1, 0.0]))
    sys_.invalidate_topology()
    sys_.matter.add_body(1, mbk.MassProps(1.0, com=(0, -0.5, 0), inertia=(0.1, 0.1, 0.1)),
                         mbk.Pin(), X_PF=(0, -1, 0))
    sys_.realize_topology()
    ref = sys_.ydot(0.0, [0.1, 0.1, 0.0, 0.0])
    _in_threads(lambda k: assert_same_bits(sys_.ydot(0.0, np.array([0.1, 0.1, 0.0, 0.0])), ref))


def test_callback_exceptions_stay_on_their_thread():
    class Mine(Exception):
        pass

    def force(state, bf, mf):
        if state.q[0] > 1.0:
            raise Mine(str(threading.get_ident()))
    sys_ = _damped(pendulum(2))
    sys_.invalidate_topology()
    sys_.forces.add_custom(force, name="raises")
    sys_.realize_topology()

    def work(k):
        for i in range(200):
            if (i + k) % 2:
                with pytest.raises(Mine, match=str(threading.get_ident())):
                    sys_.ydot(0.0, [2.0, 0.0, 0.0, 0.0])
            else:
                assert np.all(np.isfinite(sys_.ydot(0.0, [0.5, 0.0, 0.0, 0.0])))
    _in_threads(work)
    assert mbk.errors.pending[0] == 0


class _Blocked:
    """init of an Ensemble that waits, on its worker, until released."""

    def __init__(self):
        self.started, self.release = threading.Event(), threading.Event()

    def __call__(self, member, state):
        self.started.set()
        assert self.release.wait(60)
        state.q = [0.2]


def test_exception_on_another_thread_while_an_ensemble_runs():
    se = _damped(pendulum(1))
    e = mbk.Ensemble(se, 4, threads=2, accuracy=1e-6)
    init = _Blocked()
    out = {}

    def bg():
        try:
            out["results"] = e.run(0.2, init)
        except BaseException as ex:  # noqa: B902
            out["exc"] = ex
    th = threading.Thread(target=bg)
    th.start()
    try:
        assert init.started.wait(60)            # the run is in progress, its workers waiting

        class Mine(Exception):
            pass

        def bad(st, bf, mf):
            raise Mine("main-thread force")
        sm = pendulum(1)
        sm.invalidate_topology()
        sm.forces.add_custom(bad, name="bad")
        s = sm.new_state()
        with pytest.raises(Mine, match="main-thread force"):
            s.realize()
        with pytest.raises(Mine):                # on an ordinary Python thread too
            _in_threads(lambda k: sm.ydot(0.0, [0.1, 0.0]), n=1)
    finally:
        init.release.set()
        th.join(120)
    assert "exc" not in out, out.get("exc")     # the ensemble got none of them
    assert len(out["results"]) == 4 and (e.statuses == mbk.OK).all()
    assert mbk.errors.workers == {} and mbk.errors.pending[0] == 0


def test_two_ensembles_at_once_each_get_their_own_exception():
    class ErrA(Exception):
        pass

    class ErrB(Exception):
        pass
    barrier = threading.Barrier(2)

    def make(err):
        raised = []

        def force(st, bf, mf):
            if st.t > 0.05:
                if not raised:                  # both runs raise while both are under way
                    raised.append(1)
                    barrier.wait(60)
                raise err(err.__name__)
        sys_ = pendulum(1)
        sys_.invalidate_topology()
        sys_.forces.add_custom(force, name=err.__name__)
        return mbk.Ensemble(sys_, 1, threads=1, accuracy=1e-6)
    runs = [make(ErrA), make(ErrB)]
    got = [None, None]

    def work(k):
        try:
            runs[k].run(0.5)
        except (ErrA, ErrB) as ex:
            got[k] = type(ex)
    _in_threads(work, n=2)
    assert got == [ErrA, ErrB]
    assert mbk.errors.workers == {} and mbk.errors.pending[0] == 0
