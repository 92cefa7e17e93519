"""Shared fixtures of the Python package's tests.

ctest runs them with MBK_LIBRARY (this build's libmbk) and PYTHONPATH
(python/) set; run by hand from the repository root after a build:

    .venv/bin/python -m pytest tests/python
"""
import os
import sys

import numpy as np
import pytest

HERE = os.path.dirname(os.path.abspath(__file__))
REPO = os.environ.get("MBK_SOURCE_DIR") or os.path.dirname(os.path.dirname(HERE))
if os.path.join(REPO, "python") not in sys.path:
    sys.path.insert(0, os.path.join(REPO, "python"))

import mbk  # noqa: E402


def pendulum(n=1, mobilizer=mbk.Pin, g=(0.0, -9.81, 0.0)):
    """An n-link planar pendulum hanging along -y: 1 kg links of length 1."""
    sys_ = mbk.MultibodySystem("pendulum")
    m = sys_.matter
    parent = 0
    for i in range(n):
        parent = m.add_body(parent, mbk.MassProps(1.0, com=(0, -0.5, 0), inertia=(0.08, 0.01, 0.08)),
                            mobilizer(), X_PF=(0, 0, 0) if i == 0 else (0, -1, 0),
                            name="link%d" % (i + 1))
    sys_.forces.add_gravity(g, name="gravity")
    sys_.realize_topology()
    return sys_


def rod_loop():
    """Two 1 kg pendulums pinned 1 m apart whose tips a 1 m rod joins, under
    gravity (topology not yet realized); returns (system, rod index)."""
    sys_ = mbk.MultibodySystem("loop")
    m = sys_.matter
    mp = mbk.MassProps(1.0, com=(0, -0.5, 0), inertia=(0.08, 0.01, 0.08))
    a = m.add_body(0, mp, mbk.Pin())
    b = m.add_body(0, mp, mbk.Pin(), X_PF=(1, 0, 0))
    c = m.add_rod(a, (0, -1, 0), b, (0, -1, 0), 1.0)
    sys_.forces.add_gravity((0, -9.81, 0))
    return sys_, c


@pytest.fixture
def pend():
    return pendulum(1)


@pytest.fixture
def chain3():
    return pendulum(3)


@pytest.fixture
def repo():
    return REPO


def urdf_path(name):
    return os.path.join(REPO, "tests", "urdf", name)


def assert_same_bits(a, b, name=""):
    a, b = np.asarray(a, dtype=np.float64), np.asarray(b, dtype=np.float64)
    assert a.shape == b.shape, name
    differ = np.flatnonzero(a.view(np.uint64) != b.view(np.uint64))
    assert differ.size == 0, "%s: %d values differ, first at flat index %d: %r != %r" % (
        name, differ.size, differ[0], a.flat[differ[0]], b.flat[differ[0]])


def central_jacobian(system, t, y, h=1e-6):
    """d ydot / dy by central differences of system.ydot (step h), column by column."""
    J = np.empty((len(y), len(y)))
    for j in range(len(y)):
        yp, ym = y.copy(), y.copy()
        yp[j] += h
        ym[j] -= h
        J[:, j] = (system.ydot(t, yp) - system.ydot(t, ym)) / (2 * h)
    return J
