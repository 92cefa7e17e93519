"""system.ydot and system.jacobian with SciPy's solve_ivp."""
import numpy as np
import pytest

import mbk
from conftest import central_jacobian, pendulum

scipy_integrate = pytest.importorskip("scipy.integrate")


def test_ydot_matches_the_state_and_is_fresh_each_call(chain3):
    s = chain3.new_state()
    s.q = [0.3, -0.2, 0.1]
    s.u = [0.5, 0.0, -0.5]
    s.realize(mbk.Stage.ACCELERATION)
    y = np.array(s.y)
    f1 = chain3.ydot(0.0, y)
    assert f1.tobytes() == s.ydot.tobytes()
    f2 = chain3.ydot(0.0, y * 0.5)
    assert f1 is not f2 and f1.tobytes() == s.ydot.tobytes()   # results are not reused
    out = np.empty(6)
    assert chain3.ydot(0.0, y, out=out) is out and out.tobytes() == f1.tobytes()
    assert chain3(0.0, list(y)).tobytes() == f1.tobytes()          # lists work too
    own = chain3.new_state()
    assert chain3.ydot(0.0, y, state=own).tobytes() == f1.tobytes()
    assert own.stage == mbk.Stage.ACCELERATION and own.y.tobytes() == y.tobytes()


def test_ydot_bad_input(chain3):
    with pytest.raises(mbk.InvalidArgumentError, match=r"shape \(5,\); expected \(6,\)"):
        chain3.ydot(0.0, np.zeros(5))
    with pytest.raises(mbk.NotFiniteError):
        chain3.ydot(0.0, np.full(6, np.nan))
    with pytest.raises(mbk.NotFiniteError):
        chain3.ydot(np.inf, np.zeros(6))
    with pytest.raises(mbk.InvalidArgumentError, match="out"):
        chain3.ydot(0.0, np.zeros(6), out=np.zeros(6, dtype=np.float32))
    with pytest.raises(mbk.InvalidArgumentError):
        chain3.jacobian(0.0, np.zeros(7))
    assert np.all(np.isfinite(chain3.ydot(0.0, np.zeros(6))))      # still fine afterwards


def test_jacobian_against_differences(chain3):
    y = np.array([0.3, -0.2, 0.1, 0.5, 0.0, -0.5])
    J = chain3.jacobian(0.0, y)
    assert J.shape == (6, 6)
    f0 = chain3.ydot(0.0, y)
    assert np.allclose(J, central_jacobian(chain3, 0.0, y), rtol=1e-4, atol=1e-5)
    assert np.allclose(J[:3, 3:], np.eye(3))       # qdot = u
    assert f0.shape == (6,)


def test_ode_state_parameters_change_ydot():
    sys_ = pendulum(1)
    y = np.array([0.5, 0.0])
    a = sys_.ydot(0.0, y)[1]
    st = sys_.ode_state
    sys_.forces.set_gravity(st, 0, (0, -1.62, 0))
    b = sys_.ydot(0.0, y)[1]
    assert np.isclose(b / a, 1.62 / 9.81)
    sys_.matter  # unchanged System


def test_ydot_after_layout_change():
    sys_ = pendulum(1, mobilizer=mbk.Ball)
    assert sys_.ny == 7
    sys_.ydot(0.0, [1, 0, 0, 0, 0, 0, 0])
    st = sys_.ode_state
    sys_.matter.set_use_euler_angles(st, True)
    st.realize(mbk.Stage.INSTANCE)
    assert sys_.ny == 6
    assert sys_.ydot(0.0, np.zeros(6)).shape == (6,)
    with pytest.raises(mbk.InvalidArgumentError):
        sys_.ydot(0.0, [1, 0, 0, 0, 0, 0, 0])


def test_ydot_after_topology_change():
    sys_ = pendulum(1)
    assert sys_.ydot(0.0, [0.1, 0.0]).shape == (2,)
    sys_.invalidate_topology()
    sys_.matter.add_body(1, mbk.MassProps(1.0, com=(0, -0.5, 0), inertia=(0.1, 0.1, 0.1)),
                         mbk.Pin(), X_PF=(0, -1, 0))
    sys_.realize_topology()
    assert sys_.ydot(0.0, [0.1, 0.1, 0.0, 0.0]).shape == (4,)


def test_radau_with_mbk_jacobian_matches_cvode(chain3):
    s = chain3.new_state()
    s.q = [0.6, -0.3, 0.2]
    y0 = np.array(s.y)
    sol = scipy_integrate.solve_ivp(chain3.ydot, (0.0, 1.0), y0, method="Radau",
                                    jac=chain3.jacobian, rtol=1e-9, atol=1e-11)
    assert sol.success and sol.njev > 0
    ig = mbk.Integrator(chain3, "cvode_bdf", tolerances=(1e-10, 1e-12)).initialize(s)
    ig.step_to(1.0)
    assert np.allclose(sol.y[:, -1], ig.state.y, rtol=0, atol=1e-6)
    rk = scipy_integrate.solve_ivp(chain3.ydot, (0.0, 1.0), y0, method="RK45", rtol=1e-9,
                                   atol=1e-11)
    assert np.allclose(rk.y[:, -1], ig.state.y, atol=1e-6)


def test_dae_residual(pend):
    y = np.array([0.3, 0.1])
    f = pend.ydot(0.0, y)
    r = pend.dae_residual(0.0, y, f)
    assert np.allclose(r, 0.0)
    r = pend.dae_residual(0.0, y, np.zeros(2))
    assert np.allclose(r, -f)
