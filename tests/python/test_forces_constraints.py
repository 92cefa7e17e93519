"""Force elements (every built-in, and one written in Python) and constraints."""
import math

import numpy as np
import pytest

import mbk
from conftest import central_jacobian, pendulum, rod_loop
from mbk import Stage


def two_bodies():
    sys_ = mbk.MultibodySystem("two")
    m = sys_.matter
    mp = mbk.MassProps(1.0, com=(0, 0, 0), inertia=(0.1, 0.1, 0.1))
    m.add_body(0, mp, mbk.Free(), name="a")
    m.add_body(0, mp, mbk.Free(), X_PF=(1, 0, 0), name="b")
    m.add_body(0, mp, mbk.Slider(), X_PF=(0, 1, 0), name="c")
    return sys_


def test_every_builtin_force_element():
    sys_ = two_bodies()
    f = sys_.forces
    X = mbk.Transform()
    idx = [
        f.add_gravity((0, 0, -9.81), name="g"),
        f.add_two_point_linear_spring(1, (0, 0, 0), 2, (0, 0, 0), 10.0, 0.5),
        f.add_two_point_linear_damper(1, (0, 0, 0), 2, (0, 0, 0), 1.0),
        f.add_two_point_constant_force(1, (0, 0, 0), 2, (0, 0, 0), 2.0),
        f.add_mobility_linear_spring(3, 0, 3.0, 0.0),
        f.add_mobility_linear_damper(1, 0, 0.2),
        f.add_mobility_constant_force(2, 5, 1.0),
        f.add_mobility_linear_stop(3, 0, 1e4, 1.0, -1.0, 1.0),
        f.add_mobility_coulomb_friction(2, 3, 0.5, 0.01),
        f.add_constant_force(1, (0, 0.1, 0), (1, 0, 0)),
        f.add_constant_torque(2, (0, 0, 1)),
        f.add_linear_bushing(1, X, 2, X, [1, 1, 1, 10, 10, 10], [0.1] * 6),
        f.add_hunt_crossley_sphere(1, (0, 0, 0), 0.1, -0.05, [1e6, 0.5, 0.8, 0.6, 0.0, 0.01]),
    ]
    assert idx == list(range(13)) and f.num_elements == 13
    assert f.find("g") == 0 and f.find("nope") == -1
    assert f.subsystem_index == 1
    b, c, r, h = f.hunt_crossley_sphere(12)
    assert b == 1 and r == 0.1 and h == -0.05 and c.tolist() == [0, 0, 0]
    s = sys_.new_state()
    s.upd_u()[:] = 0.1
    s.realize(Stage.ACCELERATION)
    assert np.all(np.isfinite(s.udot))
    assert f.num_parameters(1) == 2
    assert f.parameters(s, 1).tolist() == [10.0, 0.5]
    f.set_parameters(s, 1, [20.0, 0.5])
    assert s.stage == Stage.VELOCITY                  # parameters invalidate Dynamics
    assert f.parameters(s, 1).tolist() == [20.0, 0.5]
    with pytest.raises(mbk.InvalidArgumentError):
        f.set_parameters(s, 1, [1.0])
    f.set_gravity(s, 0, (0, 0, -1.62))
    assert f.parameters(s, 0)[:3].tolist() == [0, 0, -1.62]
    assert f.is_enabled(s, 3)
    f.set_enabled(s, 3, False)
    assert not f.is_enabled(s, 3) and s.stage < Stage.INSTANCE
    s.realize(Stage.ACCELERATION)
    assert f.potential_energy(s, 1) > 0
    assert f.dissipated_energy(s, 8) == 0.0
    with pytest.raises(mbk.InvalidArgumentError):
        f.dissipated_energy(s, 1)
    with pytest.raises(mbk.InvalidArgumentError):
        f.add_two_point_linear_spring(1, (0, 0, 0), 9, (0, 0, 0), 1.0, 0.0)


def python_spring(k):
    """A mobility spring written in Python: tau = -k q on every u."""
    def calc(state, body_forces, mobility_forces):
        mobility_forces -= k * state.q
    def pe(state):
        return 0.5 * k * float(state.q @ state.q)
    return calc, pe


def test_python_force_matches_builtin(chain3):
    def build(py):
        sys_ = pendulum(3)
        sys_.invalidate_topology()
        if py:
            calc, pe = python_spring(5.0)
            sys_.forces.add_custom(calc, pe, depends_only_on_positions=True, name="spring")
        else:
            for b in (1, 2, 3):
                sys_.forces.add_mobility_linear_spring(b, 0, 5.0, 0.0)
        sys_.realize_topology()
        return sys_
    a, b = build(True), build(False)
    ys = []
    for sys_ in (a, b):
        s = sys_.new_state()
        s.q = [0.3, -0.2, 0.1]
        s.u = [0.1, 0.2, 0.3]
        s.realize(Stage.ACCELERATION)
        ys.append((s.udot.copy(), sys_.energy(s)))
        ig = mbk.Integrator(sys_, "rkmerson", accuracy=1e-8).initialize(s)
        ig.step_to(0.5)
        ys.append(ig.state.y.copy())
    assert np.allclose(ys[0][0], ys[2][0], rtol=1e-13)
    assert np.allclose(ys[0][1], ys[2][1], rtol=1e-13)
    assert np.allclose(ys[1], ys[3], rtol=1e-8)
    assert a.forces.find("spring") == 1


def _spring_damper(py):
    """pendulum(2) with tau = -4 q - 0.3 u on each pin: in Python or built in."""
    sys_ = pendulum(2)
    sys_.invalidate_topology()
    if py:
        def calc(state, body_forces, mobility_forces):
            mobility_forces -= 4.0 * state.q + 0.3 * state.u
        sys_.forces.add_custom(calc, lambda st: 2.0 * float(st.q @ st.q), name="spring-damper")
    else:
        for b in (1, 2):
            sys_.forces.add_mobility_linear_spring(b, 0, 4.0, 0.0)
            sys_.forces.add_mobility_linear_damper(b, 0, 0.3)
    sys_.realize_topology()
    return sys_


def test_python_force_with_implicit_integrators_and_jacobians():
    # the Jacobian paths call the element's calc_jacobian op when it is not NULL: a
    # ForceOps shorter than mbk_force_ops made C call whatever followed it
    py, ref = _spring_damper(True), _spring_damper(False)
    y = np.array([0.3, -0.2, 0.5, 0.1])
    J = py.jacobian(0.0, y)
    assert np.allclose(J, central_jacobian(py, 0.0, y), rtol=1e-4, atol=1e-5)
    assert np.allclose(J, ref.jacobian(0.0, y), rtol=1e-6, atol=1e-7)
    states = []
    for sys_ in (py, ref):
        s = sys_.new_state()
        s.y = y
        s.realize(Stage.ACCELERATION)
        states.append(s)
    for a, b in zip(py.force_jacobians(states[0]), ref.force_jacobians(states[1])):
        assert np.allclose(a, b, rtol=1e-6, atol=1e-7)
    for a, b in zip(py.acceleration_derivatives(states[0]),
                    ref.acceleration_derivatives(states[1])):
        assert np.allclose(a, b, rtol=1e-6, atol=1e-7)
    for method in ("cvode_bdf", "ida"):
        finals = []
        for sys_, s in zip((py, ref), states):
            ig = mbk.Integrator(sys_, method, tolerances=(1e-10, 1e-12)).initialize(s)
            assert ig.step_to(1.0) == mbk.OK
            assert ig.stats["jacobian_evaluations"] > 0
            finals.append(ig.state.y.copy())
        assert np.allclose(finals[0], finals[1], rtol=0, atol=1e-7), method


def test_python_body_force():
    sys_ = pendulum(1, g=(0, 0, 0))
    sys_.invalidate_topology()
    seen = {}

    def push(state, body_forces, mobility_forces):
        seen["shapes"] = (body_forces.shape, mobility_forces.shape, state.stage)
        body_forces[1, 3:] += (2.0, 0.0, 0.0)        # a force along x at body 1's origin
    sys_.forces.add_custom(push)
    s = sys_.new_state()
    s.q = [0.0]
    s.realize(Stage.ACCELERATION)
    assert seen["shapes"] == ((2, 6), (1,), Stage.VELOCITY)
    # a force at the pivot makes no torque; move the pivot away
    assert s.udot[0] == 0.0
    F = sys_.body_forces(s)
    assert F[1].tolist() == [0, 0, 0, 2, 0, 0]


def test_constraints_builtin():
    # a four-bar-like loop: two pendulums joined by a rod
    sys_, c = rod_loop()
    m = sys_.matter
    assert c == 0 and m.num_constraints == 1 and m.constraint_num_equations(c) == (1, 0, 0)
    s = sys_.new_state()
    s.q = [0.2, 0.25]
    sys_.assemble(s, 1e-12)
    s.realize(Stage.ACCELERATION)
    assert abs(s.qerr[0]) < 1e-12 and s.multipliers.shape == (1,)
    lam = m.constraint_multipliers(s, c)
    assert lam.tolist() == s.multipliers.tolist()
    bf, mf = m.constraint_reaction_forces(s, c)
    assert bf.shape == (3, 6) and mf.shape == (2,)
    G = m.G(s)
    assert G.shape == (1, 2)
    assert np.allclose(m.multiply_by_G(s, [1.0, 0.0]), G[:, 0])
    assert np.allclose(m.multiply_by_G_transpose(s, lam), G.T @ lam)
    assert m.constraint_bias(s).shape == (1,)
    assert m.constraint_rank(s) == (1, 1)
    assert m.select_independent_constraints(s).tolist() == [0]
    bf2, mf2 = m.constraint_forces_from_multipliers(s, lam)
    assert np.allclose(bf2, bf) and np.allclose(mf2, mf)
    assert np.allclose(m.udot_given_multipliers(s, lam), s.udot)
    m.set_constraint_enabled(s, c, False)
    assert not m.is_constraint_enabled(s, c)
    s.realize(Stage.ACCELERATION)
    assert s.multipliers.shape == (0,)
    # the locked assembly keeps q0
    s2 = sys_.new_state()
    s2.q = [0.1, 0.6]
    sys_.assemble(s2, 1e-12, locked_q=[True, False])
    assert s2.q[0] == 0.1
    with pytest.raises(mbk.InvalidArgumentError):
        sys_.assemble(s2, 1e-12, locked_q=[True])


def test_every_builtin_constraint_can_be_added():
    sys_ = mbk.MultibodySystem("c")
    m = sys_.matter
    mp = mbk.MassProps(1.0, com=(0.1, 0.1, 0.1), inertia=(0.1, 0.1, 0.1))
    bodies = [m.add_body(0, mp, mbk.Free(), X_PF=(i, 0, 0)) for i in range(4)]
    p = m.add_body(0, mp, mbk.Pin())
    sl = m.add_body(0, mp, mbk.Slider())
    X = mbk.Transform()
    got = [
        m.add_ball_constraint(bodies[0], (0, 0, 0), bodies[1], (0, 0, 0)),
        m.add_weld_constraint(bodies[1], X, bodies[2], X),
        m.add_point_in_plane(0, (0, 0, 1), 0.0, bodies[3], (0, 0, 0)),
        m.add_point_on_line(0, (1, 0, 0), (0, 0, 0), bodies[3], (0, 0, 0)),
        m.add_constant_angle(0, (1, 0, 0), bodies[3], (0, 1, 0), math.pi / 2),
        m.add_constant_orientation(bodies[0], np.eye(3), bodies[3], np.eye(3)),
        m.add_constant_speed(p, 0, 1.0),
        m.add_constant_acceleration(sl, 0, 0.5),
        m.add_no_slip_1d(0, (0, 0, 0), (1, 0, 0), bodies[0], bodies[1]),
        m.add_coordinate_coupler(mbk.Linear([1.0, -2.0, 0.0]), [p, sl], [0, 0]),
        m.add_speed_coupler(mbk.Linear([1.0, 1.0, 0.0]), [p, sl], [0, 0]),
        m.add_prescribed_motion(mbk.Sinusoid(0.1, 2.0), sl, 0),
    ]
    assert got == list(range(12)) and m.num_constraints == 12
    assert m.constraint_num_equations(6) == (0, 1, 0)
    assert m.constraint_num_equations(7) == (0, 0, 1)
    with pytest.raises(mbk.InvalidArgumentError):
        m.add_rod(1, (0, 0, 0), 99, (0, 0, 0), 1.0)
    with pytest.raises(mbk.InvalidArgumentError):
        m.add_coordinate_coupler(mbk.Linear([1.0, 0.0]), [p, sl], [0])


def test_prescribed_motion_drives_a_coordinate():
    sys_ = pendulum(1)
    sys_.invalidate_topology()
    sys_.matter.add_prescribed_motion(mbk.Sinusoid(0.2, 3.0), 1, 0)
    s = sys_.new_state()
    sys_.assemble(s, 1e-12)
    ig = mbk.Integrator(sys_, "rkmerson", accuracy=1e-9).initialize(s)
    ig.step_to(0.4)
    assert np.isclose(ig.state.q[0], 0.2 * math.sin(1.2), atol=1e-7)
