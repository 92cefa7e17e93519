"""The operators of include/mbk/external.h: N, DAE forms, witnesses for an
outside event driver; the derivatives of DESIGN.md section 12 when present."""
import numpy as np
import pytest

import mbk
from conftest import pendulum, rod_loop
from mbk import DaeForm, Stage


def loop():
    """The rod loop assembled near q = (0.2, 0.2), realized to Acceleration."""
    sys_, _ = rod_loop()
    s = sys_.new_state()
    s.q = [0.2, 0.2]
    sys_.assemble(s, 1e-12)
    s.realize(Stage.ACCELERATION)
    return sys_, s


def test_N_and_pseudo_inverse():
    sys_ = pendulum(1, mobilizer=mbk.Ball)
    s = sys_.new_state()
    s.q = [np.cos(0.2), np.sin(0.2), 0, 0]
    s.realize(Stage.POSITION)
    m = sys_.matter
    assert m.num_q(s) == 4
    w = np.array([0.1, 0.2, 0.3])
    qdot = m.multiply_by_N(s, w)
    assert qdot.shape == (4,)
    assert np.allclose(m.multiply_by_N_pinv(s, qdot), w)
    assert m.multiply_by_N(s, np.ones(4), transpose=True).shape == (3,)
    assert m.multiply_by_N_pinv(s, w, transpose=True).shape == (4,)
    with pytest.raises(mbk.InvalidArgumentError):
        m.multiply_by_N(s, np.ones(4))


def test_dae_forms_vanish_on_consistent_values():
    sys_, s = loop()
    for form in (DaeForm.INDEX1, DaeForm.INDEX3, DaeForm.GGL):
        lay = sys_.dae_layout(s, form)
        y, yp = sys_.dae_values(s, form)
        assert y.shape == (lay["n"],) and lay["m"] == 1
        r = sys_.constrained_dae_residual(s, s.t, y, yp, form)
        assert np.allclose(r, 0.0, atol=1e-9), (form, r)
    lay = sys_.dae_layout(s, DaeForm.GGL, rows=[0])
    assert lay["nmu"] == 1 and lay["nlambda"] == 1
    with pytest.raises(mbk.InvalidArgumentError):
        sys_.dae_layout(s, DaeForm.INDEX3, rows=[3])


def test_project_u_and_error_estimate():
    sys_, s = loop()
    s.u = [1.0, 0.0]
    sys_.project_u(s, 1e-12)
    s.realize(Stage.VELOCITY)
    assert abs(s.uerr[0]) < 1e-10
    yerr = np.array([1e-3, 0.0, 1e-3, 0.0])
    sys_.project_error_estimate(s, yerr)
    assert yerr.shape == (4,)
    with pytest.raises(mbk.InvalidArgumentError):
        sys_.project_error_estimate(s, [1.0, 2.0])
    s.upd_q()[0] += 0.01
    sys_.project(s, 1e-10)
    assert s.stage == Stage.VELOCITY and abs(s.qerr[0]) < 1e-9


def test_outside_event_driver():
    sys_ = pendulum(1)
    sys_.invalidate_topology()
    fired_ids = []

    def handler(state, result):
        fired_ids.append(state.t)
    sys_.add_event_handler(lambda s: s.q[0], handler, stage=Stage.POSITION,
                           direction=mbk.Direction.FALLING)
    sys_.add_scheduled_event(0.7, handler)
    s = sys_.new_state()
    s.q = [0.5]
    assert sys_.num_witnesses(s) == 1
    info = sys_.witness_info(s)[0]
    assert info["direction"] == mbk.Direction.FALLING and info["stage"] == Stage.POSITION
    assert sys_.witness_stage(s) == Stage.POSITION
    s.realize(Stage.POSITION)
    w0 = sys_.witnesses(s)
    assert np.isclose(w0[0], 0.5)
    w1 = sys_.calc_witnesses(s, 0.1, [-0.1, 0.0])
    assert np.isclose(w1[0], -0.1) and s.q[0] == -0.1
    fired = sys_.find_witness_crossings(s, w0, w1)
    assert fired.tolist() == [1]
    n, lowest, term = sys_.handle_events_at(s, fired)
    assert n == 1 and lowest == Stage.INFINITY and not term and len(fired_ids) == 1
    assert sys_.call_witness_reporters(s, fired) == 0
    assert sys_.next_scheduled_time(s) == 0.7
    assert sys_.next_report_time(0.0) == np.inf


def test_set_y_and_realize(pend):
    s = pend.new_state()
    pend.set_y_and_realize(s, 0.5, [0.2, 0.1], Stage.VELOCITY)
    assert s.t == 0.5 and s.stage == Stage.VELOCITY and s.q[0] == 0.2
    with pytest.raises(mbk.NotFiniteError):
        pend.set_y_and_realize(s, 0.5, [np.nan, 0.1], Stage.VELOCITY)
    assert s.q[0] == 0.2


def test_derivatives_when_the_library_has_them(chain3):
    s = chain3.new_state()
    s.q = [0.1, 0.2, 0.3]
    if not mbk.has("mbk_system_calc_acceleration_derivatives"):
        with pytest.raises(NotImplementedError):
            chain3.acceleration_derivatives(s)
        pytest.skip("this libmbk has no derivatives (DESIGN.md section 12) yet")
    dq, du = chain3.acceleration_derivatives(s)
    J = chain3.jacobian(0.0, s.y)
    assert np.allclose(dq, J[3:, :3], rtol=1e-5, atol=1e-6)
    assert np.allclose(du, J[3:, 3:], rtol=1e-5, atol=1e-6)
