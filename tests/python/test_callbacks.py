"""Exceptions raised inside Python callbacks reach the caller as themselves,
and the C contract says what state things are left in."""
import math

import numpy as np
import pytest

import mbk
from conftest import pendulum
from mbk import Stage


class Boom(Exception):
    pass


def with_force(fn, pe=None):
    sys_ = pendulum(2)
    sys_.invalidate_topology()
    sys_.forces.add_custom(fn, pe, name="boom")
    sys_.realize_topology()
    return sys_


def test_force_exception_in_realize():
    calls = []

    def force(state, bf, mf):
        calls.append(state.t)
        if state.t > 1.0:
            raise Boom("force failed at t=%g" % state.t)
    sys_ = with_force(force)
    s = sys_.new_state()
    s.realize(Stage.ACCELERATION)
    s.t = 2.0
    with pytest.raises(Boom, match="t=2") as e:
        s.realize(Stage.ACCELERATION)
    assert e.type is Boom                         # not wrapped
    assert s.stage == Stage.VELOCITY              # failed at Dynamics: back to Velocity
    assert "Python force 'boom' raised Boom" in mbk.last_error()
    s.t = 0.5                                     # and usable again
    s.realize(Stage.ACCELERATION)
    assert s.stage == Stage.ACCELERATION


def test_force_exception_in_ydot_and_jacobian():
    def force(state, bf, mf):
        if state.q[0] > 1.0:
            raise KeyError("q too large")
    sys_ = with_force(force)
    y = np.zeros(sys_.ny)
    sys_.ydot(0.0, y)
    y[0] = 2.0
    with pytest.raises(KeyError, match="q too large"):
        sys_.ydot(0.0, y)
    with pytest.raises(KeyError):
        sys_.jacobian(0.0, y)
    y[0] = 0.5
    assert np.all(np.isfinite(sys_.ydot(0.0, y)))  # nothing left pending


def test_force_exception_during_integration_keeps_last_good_state():
    def force(state, bf, mf):
        if state.t > 0.3:
            raise Boom("late")
    sys_ = with_force(force)
    s = sys_.new_state()
    s.q = [0.5, 0.5]
    ig = mbk.Integrator(sys_, "rkmerson", accuracy=1e-6).initialize(s)
    with pytest.raises(Boom):
        ig.step_to(1.0)
    assert ig.time <= 0.3 and ig.state.stage == Stage.ACCELERATION
    assert np.all(np.isfinite(ig.state.y))


def test_potential_energy_exception():
    def pe(state):
        raise ZeroDivisionError("no energy")
    sys_ = with_force(lambda s, bf, mf: None, pe)
    s = sys_.new_state(Stage.ACCELERATION)
    with pytest.raises(ZeroDivisionError):
        sys_.energy(s)
    assert sys_.kinetic_energy  # still a working System
    sys2 = with_force(lambda s, bf, mf: None, lambda s: 1.25)
    s2 = sys2.new_state(Stage.ACCELERATION)
    assert sys2.forces.potential_energy(s2, 1) == 1.25


def test_force_returning_wrong_shapes_is_caught():
    def force(state, bf, mf):
        mf += np.ones(5)                          # nu is 2: numpy raises
    sys_ = with_force(force)
    s = sys_.new_state()
    with pytest.raises(ValueError, match="broadcast"):
        s.realize(Stage.DYNAMICS)


def test_witness_exception():
    sys_ = pendulum(1)
    sys_.invalidate_topology()

    def witness(state):
        if state.t > 0.2:
            raise Boom("witness")
        return state.q[0]
    sys_.add_event_handler(witness, lambda s, r: None)
    s = sys_.new_state()
    s.q = [0.5]
    ig = mbk.Integrator(sys_, "rkmerson", accuracy=1e-6).initialize(s)
    with pytest.raises(Boom, match="witness"):
        ig.step_to(1.0)
    assert ig.time <= 0.2 + 0.1


def test_handler_exception_leaves_state_before_handlers():
    sys_ = pendulum(1)
    sys_.invalidate_topology()

    def handler(state, result):
        state.u = [100.0]                         # changed, then fails
        raise Boom("handler")
    sys_.add_scheduled_event(0.5, handler)
    s = sys_.new_state()
    s.q = [0.5]
    ig = mbk.Integrator(sys_, "rkmerson", accuracy=1e-8).initialize(s)
    with pytest.raises(Boom):
        ig.step_to(1.0)
    st = ig.state
    assert st.u[0] != 100.0 and st.t <= 0.5       # the State as before the handlers


def test_reporter_exception_raised_after_the_run():
    sys_ = pendulum(1)
    sys_.invalidate_topology()
    n = []

    def reporter(state):
        n.append(state.t)
        if len(n) == 2:
            raise Boom("reporter")
    sys_.add_periodic_reporter(0.1, reporter)
    s = sys_.new_state()
    ig = mbk.Integrator(sys_, "rk4", fixed_step=0.01).initialize(s)
    with pytest.raises(Boom):
        ig.step_to(0.5)
    ig2 = mbk.Integrator(pendulum(1), "rk4", fixed_step=0.01).initialize(pendulum(1).new_state())
    with pytest.raises(Boom, match="per-step"):
        ig2.integrate(0.1, lambda st: (_ for _ in ()).throw(Boom("per-step")))


def test_keyboard_interrupt_passes_through():
    def force(state, bf, mf):
        raise KeyboardInterrupt
    sys_ = with_force(force)
    with pytest.raises(KeyboardInterrupt):
        sys_.new_state(Stage.ACCELERATION)


def test_handler_changes_state_and_restarts():
    sys_ = pendulum(1)
    sys_.invalidate_topology()
    events = []

    def bounce(state, result):
        events.append(state.t)
        state.u = -0.5 * state.u
        result.modified(Stage.VELOCITY)
        assert result.lowest_modified == Stage.VELOCITY and not result.terminate
    sys_.add_event_handler(lambda s: s.q[0], bounce, stage=Stage.POSITION,
                           direction=mbk.Direction.FALLING)
    s = sys_.new_state()
    s.q = [0.5]
    ig = mbk.Integrator(sys_, "rkmerson", accuracy=1e-8).initialize(s)
    rc = ig.step_to(2.0)
    while rc == mbk.EVENT:
        rc = ig.step_to(2.0)
    assert rc == mbk.OK and len(events) >= 1 and ig.stats["reinitializations"] >= 1
    assert ig.state.q[0] >= -1e-6                # bounced, never swung through


def test_callback_state_is_read_only_in_forces():
    def force(state, bf, mf):
        state.q = [0.0, 0.0]
    sys_ = with_force(force)
    with pytest.raises(mbk.InvalidArgumentError, match="read-only"):
        sys_.new_state(Stage.ACCELERATION)
    assert math.isfinite(pendulum(1).new_state(Stage.ACCELERATION).udot[0])
