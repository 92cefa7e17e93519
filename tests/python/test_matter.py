"""Building Systems in code: every mobilizer, matter's computations, functions."""
import math

import numpy as np
import pytest

import mbk
from conftest import pendulum
from mbk import Stage

MOBILIZERS = [  # (factory, nq, nu, nq in Euler mode)
    (mbk.Weld, 0, 0, 0), (mbk.Pin, 1, 1, 1), (mbk.Slider, 1, 1, 1),
    (mbk.Translation, 3, 3, 3), (mbk.Ball, 4, 3, 3), (mbk.Free, 7, 6, 6),
    (lambda: mbk.Screw(0.1), 1, 1, 1), (mbk.Universal, 2, 2, 2), (mbk.Cylinder, 2, 2, 2),
    (mbk.Planar, 3, 3, 3), (mbk.Gimbal, 3, 3, 3), (mbk.Bushing, 6, 6, 6),
]


def body():
    return mbk.MassProps(2.0, com=(0.1, -0.4, 0.05), inertia=(0.05, 0.02, 0.04))


@pytest.mark.parametrize("factory,nq,nu,nq_euler", MOBILIZERS)
def test_every_mobilizer(factory, nq, nu, nq_euler):
    sys_ = mbk.MultibodySystem("one")
    b = sys_.matter.add_body(0, body(), factory(), X_PF=mbk.Transform.axis_angle((1, 0, 0), 0.3),
                             X_BM=(0.0, 0.1, 0.0))
    assert b == 1
    assert factory().num_q() == nq and factory().num_q(euler=True) == nq_euler
    sys_.forces.add_gravity((0, -9.81, 0))
    s = sys_.new_state()
    assert (s.nq, s.nu) == (nq, nu)
    s.realize(Stage.ACCELERATION)
    assert np.all(np.isfinite(s.udot))
    ke, pe = sys_.energy(s)
    assert ke == 0.0 and math.isfinite(pe)
    X = sys_.matter.body_transform(s, 1)
    assert np.allclose(X.R @ X.R.T, np.eye(3))


def test_function_based_mobilizer():
    # one q drives a rotation about z and a translation along x: a rolling-like joint
    fb = mbk.FunctionBased(1, [None, None, mbk.Linear([1.0, 0.0]), mbk.Linear([0.5, 0.0]), None,
                               None], [[], [], [0], [0], [], []])
    sys_ = mbk.MultibodySystem("fb")
    sys_.matter.add_body(0, body(), fb)
    s = sys_.new_state()
    assert s.nq == 1
    s.q = [0.4]
    s.realize(Stage.POSITION)
    X = sys_.matter.body_transform(s, 1)
    assert np.allclose(X.p, [0.2, 0, 0]) and np.isclose(X.R[1, 0], math.sin(0.4))


def test_bad_body_input():
    sys_ = mbk.MultibodySystem("bad")
    with pytest.raises(mbk.InvalidArgumentError, match="parent"):
        sys_.matter.add_body(5, body(), mbk.Pin())
    with pytest.raises(mbk.InvalidArgumentError):
        sys_.matter.add_body(0, mbk.MassProps(-1.0), mbk.Pin())
    with pytest.raises(mbk.InvalidArgumentError, match="mobilizer"):
        sys_.matter.add_body(0, body(), "pin")
    with pytest.raises(mbk.InvalidArgumentError, match="3x3"):
        mbk.MassProps(1.0, inertia=np.eye(2))
    with pytest.raises(mbk.InvalidArgumentError, match="X_PF"):
        sys_.matter.add_body(0, body(), mbk.Pin(), X_PF="here")
    assert sys_.matter.num_bodies == 1             # nothing was added


def test_names_and_topology_queries(chain3):
    m = chain3.matter
    assert m.num_bodies == 4 and m.num_mobilities == 3 and m.parent(2) == 1 and m.parent(0) == -1
    assert m.find_body("link2") == 2 and m.find_body("nope") == -1
    assert m.total_mass == 3.0
    mp = m.body_mass_props(1)
    assert mp.mass == 1.0 and mp.com.tolist() == [0, -0.5, 0]
    assert chain3.num_subsystems == 2 and chain3.subsystem_name(0)
    assert chain3.is_topology_realized and chain3.topology_version >= 0
    assert chain3.name == "pendulum" and m.subsystem_index == 0
    assert isinstance(chain3.fingerprint, int) and chain3.fingerprint != 0


def moving_state(chain3):
    """A State of the 3-link chain at fixed q and u, realized to Acceleration."""
    s = chain3.new_state()
    s.q = [0.3, -0.2, 0.5]
    s.u = [1.0, 0.5, -0.25]
    s.realize(Stage.ACCELERATION)
    return s


def test_kinematics_and_mass_properties(chain3):
    m = chain3.matter
    s = moving_state(chain3)
    J = m.system_jacobian(s)
    assert J.shape == (24, 3)
    V = m.multiply_by_system_jacobian(s, s.u)
    assert np.allclose(V.reshape(-1), J @ s.u)
    for b in range(4):
        assert np.allclose(m.body_velocity(s, b), V[b])
    F = np.arange(24.0).reshape(4, 6)
    assert np.allclose(m.multiply_by_system_jacobian_transpose(s, F), J.T @ F.reshape(-1))
    JS = m.station_jacobian(s, 3, (0, -1, 0))
    assert np.allclose(JS @ s.u, m.station_velocity(s, 3, (0, -1, 0)))
    p = m.station_location(s, 3, (0, -1, 0))
    assert np.isclose(np.linalg.norm(p - m.station_location(s, 2, (0, -1, 0))), 1.0)
    assert m.station_acceleration(s, 3, (0, 0, 0)).shape == (3,)
    assert m.body_acceleration(s, 3).shape == (6,)
    com = m.mass_center_location(s)
    assert np.isclose(com[2], 0.0)
    assert m.mass_center_velocity(s).shape == (3,)
    h = m.system_momentum(s)
    assert h.shape == (6,) and np.isclose(h[5], 0.0)


def test_mass_matrix_inverse_dynamics_and_energy(chain3):
    m = chain3.matter
    s = moving_state(chain3)
    M = m.mass_matrix(s)
    assert M.shape == (3, 3) and np.allclose(M, M.T)
    v = np.array([0.1, 0.2, 0.3])
    assert np.allclose(m.multiply_by_M(s, v), M @ v)
    assert np.allclose(m.multiply_by_M_inverse(s, v), np.linalg.solve(M, v))
    assert np.isclose(m.kinetic_energy(s), 0.5 * s.u @ M @ s.u)
    ke, pe = chain3.energy(s)
    assert ke == m.kinetic_energy(s) and pe == chain3.potential_energy(s)
    assert chain3.kinetic_energy(s) == ke
    # inverse dynamics with the applied forces gives zero at the realized udot
    f = chain3.mobility_forces(s)
    F = chain3.body_forces(s)
    assert F.shape == (4, 6) and not F.flags.writeable
    r = m.residual_forces(s, known_udot=s.udot, mobility_forces=f, body_forces=F)
    assert np.allclose(r, 0.0, atol=1e-12)
    r0 = m.residual_forces(s)                       # only C(q, u)
    assert r0.shape == (3,)
    out = np.empty((3, 3))
    assert m.mass_matrix(s, out=out) is out
    with pytest.raises(mbk.InvalidArgumentError):
        m.mass_matrix(s, out=np.empty((2, 2)))
    with pytest.raises(mbk.InvalidArgumentError):
        m.multiply_by_M(s, [1.0, 2.0])


def test_fit_transform_and_velocity():
    sys_ = pendulum(1, mobilizer=mbk.Free, g=(0, 0, 0))
    m = sys_.matter
    s = sys_.new_state()
    X = mbk.Transform.axis_angle((0, 0, 1), 0.5, (1, 2, 3))
    m.set_body_q_to_fit_transform(s, 1, X)
    s.realize(Stage.POSITION)
    got = m.body_transform(s, 1)
    assert np.allclose(got.R, X.R) and np.allclose(got.p, X.p)
    m.set_body_u_to_fit_velocity(s, 1, [0, 0, 1, 0.5, 0, 0])
    s.realize(Stage.VELOCITY)
    assert np.allclose(m.body_velocity(s, 1)[:3], [0, 0, 1])
    s.upd_q()[0] = 2.0
    m.normalize_quaternions(s)
    assert np.isclose(np.linalg.norm(s.q[:4]), 1.0)


def test_transform_helpers():
    X = mbk.Transform.axis_angle((0, 0, 2), math.pi / 2, (1, 0, 0))
    assert np.allclose(X.apply((1, 0, 0)), [1, 1, 0])
    assert np.allclose((X @ X.inverse()).R, np.eye(3))
    assert np.allclose(mbk.Transform.from_p((1, 2, 3)).p, [1, 2, 3])
    assert "Transform" in repr(mbk.Transform.identity())


@pytest.mark.parametrize("f,x,value,d1", [
    (mbk.Constant(2.5, 1), (0.3,), 2.5, 0.0),
    (mbk.Linear([2.0, 1.0]), (0.5,), 2.0, 2.0),
    (mbk.Polynomial([1.0, 0.0, -1.0]), (2.0,), 3.0, 4.0),
    (mbk.Sinusoid(2.0, 3.0, 0.0), (0.0,), 0.0, 6.0),
    (mbk.Step(0.0, 1.0, 0.0, 1.0), (0.5,), 0.5, 1.5),
    (mbk.Spline([0.0, 1.0, 2.0], [0.0, 1.0, 0.0]), (1.0,), 1.0, 0.0),
])
def test_functions(f, x, value, d1):
    assert np.isclose(f.value(*x), value)
    assert np.isclose(f.derivative([0], *x), d1)
    assert f.n_args == 1


def test_function_errors():
    with pytest.raises(mbk.InvalidArgumentError):
        mbk.Spline([0.0, 0.0], [1.0, 2.0]).value(0.5)      # x not increasing
    with pytest.raises(mbk.InvalidArgumentError):
        mbk.Linear([1.0, 2.0]).value(1.0, 2.0)             # wrong argument count
    with pytest.raises(mbk.InvalidArgumentError):
        mbk.Step(0, 1, 0, 1).derivative([0, 0, 0, 0], 0.5)  # order above 3


def test_plain_system_and_more_force_subsystems():
    plain = mbk.System("plain")
    assert plain.num_subsystems == 0 and plain.name == "plain" and "plain" in repr(plain)
    plain.realize_topology()
    s = plain.new_state()
    assert s.ny == 0 and s.y.shape == (0,)
    s.realize(Stage.REPORT)
    with pytest.raises(mbk.InvalidArgumentError):
        plain.subsystem_name(3)
    sys_ = mbk.MultibodySystem("more")
    sys_.matter.add_body(0, body(), mbk.Slider())
    extra = sys_.add_forces("extra")
    assert extra.subsystem_index == 2 and sys_.num_subsystems == 3
    extra.add_mobility_linear_spring(1, 0, 10.0, 0.0)
    s = sys_.new_state()
    s.q = [0.1]
    s.realize(Stage.ACCELERATION)
    assert s.udot[0] < 0 and sys_.potential_energy(s) > 0
    with sys_:
        pass
    with pytest.raises(mbk.InvalidArgumentError, match="closed"):
        sys_.matter.num_bodies


def test_unrealizable_inertia_and_names():
    sys_ = mbk.MultibodySystem("odd")
    odd = mbk.MassProps(1.0, inertia=(1.0, 1.0, 3.0))      # breaks the triangle inequality
    with pytest.raises(mbk.InvalidArgumentError):
        sys_.matter.add_body(0, odd, mbk.Pin())
    b = sys_.matter.add_body(0, odd, mbk.Pin(), unrealizable=True, name="odd")
    assert sys_.matter.find_body("odd") == b
    sys_.matter.set_body_name(b, None)
    assert sys_.matter.find_body("odd") == -1
