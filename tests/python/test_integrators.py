"""Every integrator, step_to and integrate, events and reporters, statistics,
settings and checkpoints."""
import math

import numpy as np
import pytest

import mbk
from conftest import pendulum
from mbk import Stage


def start(sys_, q=0.5):
    s = sys_.new_state()
    s.q = [q] * s.nq
    return s


@pytest.mark.parametrize("method", mbk.INTEGRATORS)
def test_every_integrator_conserves_energy(method, pend):
    s = start(pend)
    ig = mbk.Integrator(pend, method)
    if method in ("rk4", "explicit_euler", "semi_explicit_euler"):
        ig.set_fixed_step(1e-4 if "euler" in method else 1e-3)
    else:
        ig.set_accuracy(1e-8)
    ig.initialize(s)
    e0 = sum(pend.energy(ig.state))
    assert ig.step_to(0.5) == mbk.OK
    st = ig.state
    assert st.t == 0.5 and ig.time == 0.5 and st.stage == Stage.ACCELERATION
    tol = 1e-2 if "euler" in method else 1e-5
    assert abs(sum(pend.energy(st)) - e0) < tol * abs(e0)
    stats = ig.stats
    assert stats["steps_taken"] > 0 and stats["rhs_evaluations"] > 0
    assert ig.previous_step_size > 0 and ig.predicted_step_size >= 0
    assert ig.name and ig.settings["accuracy"] > 0


def test_settings_and_aliases(pend):
    ig = mbk.Integrator(pend, "cvode", accuracy=1e-6, tolerances=(1e-7, 1e-9), max_step=0.1,
                        min_step=0.0, max_steps=1000, initial_step=1e-4, event_tolerance=1e-6,
                        constraint_tolerance=1e-8, use_system_jacobian=True,
                        project_error_estimate=False)
    st = ig.settings
    assert ig.name == "CVODE BDF"
    assert (st["rel_tol"], st["abs_tol"], st["max_step"], st["max_steps"]) == (1e-7, 1e-9, 0.1, 1000)
    assert st["use_system_jacobian"] and not st["project_error_estimate"]
    assert st["jacobian_source"] == 0                       # analytic
    ig.set_jacobian_source(1)                               # mbk's finite differences
    assert ig.settings["jacobian_source"] == 1 and ig.settings["use_system_jacobian"]
    ig.set_use_system_jacobian(False)                       # SUNDIALS' difference quotients
    assert ig.settings["jacobian_source"] == 2
    with pytest.raises(mbk.InvalidArgumentError):
        ig.set_jacobian_source(5)
    with pytest.raises(mbk.InvalidArgumentError):
        ig.set_fixed_step(0.01)                  # CVODE has no fixed step
    with pytest.raises(mbk.InvalidArgumentError, match="unknown integrator"):
        mbk.Integrator(pend, "leapfrog")
    with pytest.raises(mbk.InvalidArgumentError, match="setting"):
        mbk.Integrator(pend, "rk4", colour="red")
    with pytest.raises(mbk.InvalidArgumentError):
        mbk.Integrator(pend, "rk4").set_accuracy(2.0)
    with pytest.raises(mbk.InvalidArgumentError, match="initialize"):
        mbk.Integrator(pend, "rk4").state


def test_integrate_with_reporter(pend):
    ig = mbk.Integrator(pend, "rkmerson", accuracy=1e-6).initialize(start(pend))
    times = []
    assert ig.integrate(1.0, lambda s: times.append((s.t, s.stage))) == mbk.OK
    assert len(times) == ig.stats["steps_taken"] and times[-1][0] == 1.0
    assert all(g >= Stage.ACCELERATION for _, g in times)


def test_periodic_reporter_and_scheduled_event():
    sys_ = pendulum(1)
    sys_.invalidate_topology()
    reports = []
    sys_.add_periodic_reporter(0.1, lambda s: reports.append((round(s.t, 12), float(s.q[0]))))

    def kick(state, result):
        state.u = state.u + 1.0
        result.modified(Stage.VELOCITY)
    sys_.add_scheduled_event(0.25, kick)
    ig = mbk.Integrator(sys_, "rkmerson", accuracy=1e-8).initialize(start(sys_))
    assert ig.step_to(0.2) == mbk.OK
    u0 = float(ig.state.u[0])
    rc = ig.step_to(1.0)
    while rc == mbk.EVENT:
        rc = ig.step_to(1.0)
    assert rc == mbk.OK and ig.time == 1.0
    assert [t for t, _ in reports] == [round(0.1 * k, 12) for k in range(1, 11)]
    assert ig.stats["events_handled"] == 1 and ig.stats["reports"] == 10


def test_triggered_event_and_terminate():
    sys_ = pendulum(1)
    sys_.invalidate_topology()
    hits = []

    def handler(state, result):
        hits.append(state.t)
        result.terminate = True
    eid = sys_.add_event_handler(lambda s: s.q[0], handler, stage=Stage.POSITION,
                                 direction=mbk.Direction.FALLING)
    crossings = []
    sys_.add_event_reporter(lambda s: s.q[0] - 0.25, lambda s: crossings.append(s.t),
                            stage=Stage.POSITION, direction=mbk.Direction.ANY)
    assert eid == 0 and sys_.events_subsystem == 2
    ig = mbk.Integrator(sys_, "rkmerson", accuracy=1e-8)
    ig.set_event_tolerance(1e-9)
    ig.initialize(start(sys_))
    rc = ig.step_to(5.0)
    assert rc == mbk.TERMINATED
    # small-angle quarter period is pi/2 sqrt(I/(m g c)); large-angle is a little longer
    t = hits[0]
    assert abs(ig.state.q[0]) < 1e-7 and 0.3 < t < 0.6 and ig.time == t
    assert len(crossings) == 1 and crossings[0] < t


def test_checkpoints_resume_bitwise(tmp_path, pend):
    ig = mbk.Integrator(pend, "rkmerson", accuracy=1e-7).initialize(start(pend))
    ig.step_to(0.3)
    path = tmp_path / "run.ckpt"
    ig.save(path)
    blob = ig.serialize(app_data=b"hello")
    assert mbk.checkpoint_name(blob) == "RK-Merson"
    assert mbk.checkpoint_app_data(blob) == b"hello"
    ig.step_to(1.0)
    ref = ig.state.y.copy()
    ig2 = mbk.Integrator(pend, "rkmerson")
    ig2.load(path)
    assert ig2.time == 0.3
    ig2.step_to(1.0)
    assert ig2.state.y.tobytes() == ref.tobytes()
    ig3 = mbk.Integrator(pend, "rkmerson")
    ig3.deserialize(blob)
    ig3.step_to(1.0)
    assert ig3.state.y.tobytes() == ref.tobytes()
    with pytest.raises(mbk.ParseError):
        ig3.deserialize(b"not a checkpoint")
    with pytest.raises(mbk.FileError):
        ig3.load(tmp_path / "missing.ckpt")


def test_state_checkpoints(tmp_path, chain3):
    s = chain3.new_state()
    s.q = [0.1, 0.2, 0.3]
    s.u = [-1, 0, 1]
    s.t = 2.5
    s.save(tmp_path / "s.ckpt")
    r = chain3.new_state()
    r.load(tmp_path / "s.ckpt")
    assert r.stage == Stage.INSTANCE and r.t == 2.5 and r.y.tobytes() == s.y.tobytes()
    blob = s.serialize()
    r2 = mbk.State(chain3)
    r2.deserialize(blob)
    assert r2.y.tobytes() == s.y.tobytes()
    other = pendulum(2)
    with pytest.raises(mbk.StaleStateError):
        other.new_state().deserialize(blob)
    with pytest.raises(mbk.ParseError):
        r2.deserialize(blob[:-3])
    bad = s.copy()
    bad.upd_q()[0] = math.nan
    with pytest.raises(mbk.NotFiniteError):
        bad.save(tmp_path / "nan.ckpt")


def test_integrator_failure_keeps_last_good_state(pend):
    ig = mbk.Integrator(pend, "rkmerson", accuracy=1e-12, max_steps=5).initialize(start(pend))
    with pytest.raises(mbk.IntegratorError) as e:
        ig.step_to(10.0)
    assert "steps" in str(e.value)
    t = ig.time
    assert 0 < t < 10 and ig.state.stage == Stage.ACCELERATION
    ig.step_to(min(10.0, t + 1e-3))              # "you may simply call again"
