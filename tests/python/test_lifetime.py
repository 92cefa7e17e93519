"""Who owns the C memory: copies and pickles never make a second owner, views keep
what they view alive, and an object whose C memory went away (closed, replaced)
refuses to work with a clear error instead of reading freed memory."""
import copy
import gc
import pickle

import numpy as np
import pytest

import mbk
from conftest import pendulum
from mbk import Stage


def _churn():
    # allocate and free many States and Systems, so freed memory is reused
    for _ in range(300):
        pendulum(1).ydot(0.0, [1.5, 1.5])


# ---- copies and pickles -------------------------------------------------------
@pytest.mark.parametrize("how", [copy.copy, copy.deepcopy])
def test_copy_of_a_state_is_a_state_of_its_own(pend, how):
    s = pend.new_state()
    s.q = [0.3]
    s.realize(Stage.ACCELERATION)
    c = how(s)
    assert type(c) is mbk.State and c._ptr != s._ptr and c.system is pend
    assert c.stage == Stage.ACCELERATION and c.y.tobytes() == s.y.tobytes()
    c.q = [0.7]                                   # independent of s
    assert s.q[0] == 0.3 and s.stage == Stage.ACCELERATION
    del c
    gc.collect()
    _churn()
    assert s.q[0] == 0.3 and s.udot.tobytes() == pend.ydot(0.0, [0.3, 0.0])[1:].tobytes()
    # an integrator's read-only State copies into a writable one
    ig = mbk.Integrator(pend).initialize(s)
    ig.step_to(0.1)
    c = how(ig.state)
    c.q = [0.1]
    assert c.q[0] == 0.1 and ig.state.q[0] != 0.1


def test_copies_in_containers(pend):
    s = pend.new_state()
    s.q = [0.2]
    d = copy.deepcopy({"a": [s, s]})
    assert d["a"][0] is d["a"][1] and d["a"][0] is not s     # deepcopy's memo is honoured
    assert d["a"][0].q[0] == 0.2


def test_state_cannot_be_pickled_but_serializes(pend):
    s = pend.new_state()
    s.q = [0.4]
    with pytest.raises(TypeError, match="serialize"):
        pickle.dumps(s)
    data = pickle.loads(pickle.dumps(s.serialize()))        # the way to pickle one
    t = pend.new_state()
    t.deserialize(data)
    assert t.q[0] == 0.4
    with pytest.raises(TypeError):
        pickle.dumps(s._h)


def _owners():
    sys_ = pendulum(1)
    ig = mbk.Integrator(sys_).initialize(sys_.new_state())
    return sys_, ig, mbk.Ensemble(sys_, 2)


@pytest.mark.parametrize("which", [0, 1, 2])
@pytest.mark.parametrize("how,word", [(copy.copy, "copied"), (copy.deepcopy, "copied"),
                                      (pickle.dumps, "pickled")])
def test_owners_refuse_copies_and_pickles(which, how, word):
    obj = _owners()[which]
    with pytest.raises(TypeError, match=word) as e:
        how(obj)
    assert ("serialize" in str(e.value)) == (which != 2)     # what to use instead
    # the original still works (a double free would show here or at exit)
    gc.collect()
    _churn()
    assert obj._ptr is not None
    if which == 1:
        assert obj.step_to(0.2) == mbk.OK


def test_containers_of_owners_refuse_deep_copies(pend):
    with pytest.raises(TypeError, match="System"):
        copy.deepcopy(pend.matter)
    with pytest.raises(TypeError):
        copy.deepcopy([pend.forces])
    assert copy.copy(pend.matter).num_bodies == 2            # a shallow view is harmless


def test_function_copies_have_their_own_c_memory():
    fns = [mbk.Linear([2, 3, 1]), mbk.Polynomial([1, 0, -1]), mbk.Spline([0, 1, 2], [0, 1, 0]),
           mbk.Constant(2.5, 2), mbk.Sinusoid(1.0, 2.0, 0.5), mbk.Step(0, 1, 0, 1)]
    xs = [(1.0, 1.0), (0.5,), (0.5,), (1.0, 2.0), (0.3,), (0.4,)]
    values = [f.value(*x) for f, x in zip(fns, xs)]          # each has its C instance now
    copies = [[how(f) for f in fns] for how in (copy.copy, copy.deepcopy,
                                                 lambda f: pickle.loads(pickle.dumps(f)))]
    del fns
    gc.collect()
    _churn()
    for cs in copies:
        assert [f.value(*x) for f, x in zip(cs, xs)] == values


# ---- ode_state and its views ----------------------------------------------------
def test_ode_state_views_outlive_the_system():
    sys_ = pendulum(1)
    sys_.ode_state.q = [0.3]
    q = sys_.ode_state.q
    del sys_
    gc.collect()
    _churn()
    assert q[0] == 0.3


def test_ode_state_after_a_topology_change():
    sys_ = pendulum(1)
    st = sys_.ode_state
    st.q = [0.5]
    q = st.q
    sys_.ydot(0.0, [0.5, 0.0])
    sys_.invalidate_topology()
    sys_.forces.add_mobility_linear_spring(1, 0, 100.0, 0.0)
    sys_.ydot(0.0, [0.5, 0.0])            # makes the template again, the old one is let go
    _churn()
    with pytest.raises(mbk.InvalidArgumentError, match="take system.ode_state again"):
        st.q
    with pytest.raises(mbk.InvalidArgumentError, match="out of date"):
        sys_.forces.set_gravity(st, 0, (0, -1, 0))
    assert repr(st) == "<mbk.State (closed)>"
    assert q[0] == 0.5                     # the view kept the old template's memory
    assert sys_.ode_state.q[0] == 0.0      # the new template: the default State


def test_ode_state_after_close():
    sys_ = pendulum(1)
    st = sys_.ode_state
    u = st.u
    sys_.close()
    with pytest.raises(mbk.InvalidArgumentError):
        st.q
    with pytest.raises(mbk.InvalidArgumentError, match="System was closed"):
        sys_.ode_state
    with pytest.raises(mbk.InvalidArgumentError, match="System was closed"):
        sys_.ydot(0.0, [0.1, 0.0])
    _churn()
    assert u[0] == 0.0


def test_ode_state_close_lets_go_without_destroying():
    sys_ = pendulum(1)
    with sys_.ode_state as st:
        st.q = [0.2]
    with pytest.raises(mbk.InvalidArgumentError):
        st.q
    assert sys_.ode_state.q[0] == 0.2
    assert sys_.ydot(0.0, [0.2, 0.0]).shape == (2,)


# ---- use after close ---------------------------------------------------------------
def test_integrator_state_after_close(pend):
    ig = mbk.Integrator(pend).initialize(pend.new_state())
    st = ig.state
    keep = st.copy()
    ig.close()
    assert repr(st) == "<mbk.State (closed)>"
    with pytest.raises(mbk.InvalidArgumentError, match="Integrator this State belongs to was "
                                                       "closed"):
        st.q
    with pytest.raises(mbk.InvalidArgumentError):
        st.copy()
    with pytest.raises(mbk.InvalidArgumentError, match="Integrator was closed"):
        ig.state
    assert keep.q.tolist() == [0.0]


def test_integrator_and_ensemble_after_their_system_is_closed():
    sys_ = pendulum(1)
    s = sys_.new_state()
    ig = mbk.Integrator(sys_).initialize(s)
    st = ig.state
    e = mbk.Ensemble(sys_, 2)
    d = sys_.default_state
    sys_.close()
    with pytest.raises(mbk.InvalidArgumentError, match="System of this Integrator was closed"):
        ig.step_to(1.0)
    with pytest.raises(mbk.InvalidArgumentError, match="System of this Integrator"):
        ig.integrate(1.0)
    with pytest.raises(mbk.InvalidArgumentError, match="System of this Integrator"):
        ig.initialize(s)
    with pytest.raises(mbk.InvalidArgumentError, match="System of this Ensemble was closed"):
        e.run(1.0)
    with pytest.raises(mbk.InvalidArgumentError, match="System this State belongs to"):
        d.q
    with pytest.raises(mbk.InvalidArgumentError, match="System was closed"):
        s.realize()
    with pytest.raises(mbk.InvalidArgumentError, match="System was closed"):
        mbk.State(sys_)
    assert st.q.tolist() == [0.0] and s.q.tolist() == [0.0]   # their own memory: readable
    assert repr(ig) == "<mbk.Integrator (closed)>"
    ig.close()
    e.close()


def test_closed_state(pend):
    s = pend.new_state()
    q = np.array(s.q)
    s.close()
    assert repr(s) == "<mbk.State (closed)>"
    with pytest.raises(mbk.InvalidArgumentError, match="State was closed"):
        s.q
    with pytest.raises(mbk.InvalidArgumentError):
        copy.copy(s)
    assert q.tolist() == [0.0]
