"""The same calls from Python and from C give the same bits.

tests/python/c_reference.c builds this model through the C API, makes the
calls below and prints every result in hexadecimal floating point; ctest
passes its path in MBK_C_REFERENCE (the test is skipped without it)."""
import os
import subprocess

import numpy as np
import pytest

import mbk
from conftest import assert_same_bits
from mbk import Stage

REF = os.environ.get("MBK_C_REFERENCE")


@pytest.fixture(scope="module")
def c_results():
    if not REF or not os.path.exists(REF):
        pytest.skip("MBK_C_REFERENCE (the C reference program) not given")
    out = subprocess.run([REF], check=True, capture_output=True, text=True).stdout
    res = {}
    for line in out.splitlines():
        name, *vals = line.split()
        res[name] = [float.fromhex(v) for v in vals] if name[:6] != "steps_" else int(vals[0])
    return res


def build_model(tilt=0.4):
    sys_ = mbk.MultibodySystem("bitwise")
    m, f = sys_.matter, sys_.forces
    link = mbk.MassProps(1.5, com=(0, -0.5, 0), inertia=(0.03, 0.01, 0.03))
    ball = mbk.MassProps(0.7, com=(0.1, -0.3, 0.05), inertia=(0.02, 0.015, 0.01))
    tip = (0, -1, 0)
    tilted = mbk.Transform.axis_angle((1, 0.5, 0.25), tilt, (0.1, 0, 0))
    b1 = m.add_body(0, link, mbk.Pin(), X_PF=tilted)
    b2 = m.add_body(b1, link, mbk.Universal(), X_PF=tip)
    b3 = m.add_body(b2, ball, mbk.Ball(), X_PF=tip)
    b4 = m.add_body(b3, ball, mbk.Slider(), X_PF=tip)
    b5 = m.add_body(0, ball, mbk.Free())
    f.add_gravity((0, -9.81, 0))
    f.add_two_point_linear_spring(b4, (0, 0, 0), b5, (0.1, 0, 0), 20.0, 0.5)
    f.add_mobility_linear_damper(b1, 0, 0.3)
    sys_.realize_topology()
    return sys_


def test_bitwise_agreement_with_c(c_results):
    sys_ = build_model()
    m = sys_.matter
    s = sys_.new_state()
    q, u = s.upd_q(), s.upd_u()
    for i in range(s.nq):
        q[i] = 0.1 * (i + 1) - 0.35
    for i in range(s.nu):
        u[i] = 0.05 * (i + 1) - 0.2
    s.realize(Stage.ACCELERATION)
    got = {"q": s.q, "udot": s.udot, "qdot": s.qdot, "energy": sys_.energy(s),
           "mass_matrix": m.mass_matrix(s).ravel(), "system_jacobian": m.system_jacobian(s).ravel()}
    known = np.array([0.3 - 0.07 * i for i in range(s.nu)])
    got["residual"] = m.residual_forces(s, known_udot=known)
    X = m.body_transform(s, 3)
    got["X_GB3"] = np.concatenate([X.R.ravel(), X.p])
    y = np.array(s.y)
    y[0] += 0.01
    got["ydot"] = sys_.ydot(0.25, y)
    got["jacobian"] = sys_.jacobian(0.25, y).ravel()
    for name, make in (("rkmerson", lambda: mbk.Integrator(sys_, "rkmerson", accuracy=1e-6)),
                       ("rk4", lambda: mbk.Integrator(sys_, "rk4", fixed_step=1e-3)),
                       ("cvode_bdf", lambda: mbk.Integrator(sys_, "cvode_bdf", accuracy=1e-6))):
        ig = make().initialize(s)
        assert ig.step_to(0.5) == mbk.OK
        got["integrate_" + name] = ig.state.y
        assert ig.stats["steps_taken"] == c_results["steps_" + name]
    for name, ref in c_results.items():
        if name.startswith("steps_"):
            continue
        assert_same_bits(got[name], ref, name)
    assert set(got) == {k for k in c_results if not k.startswith("steps_")}
