"""pip installs the package into a fresh virtual environment, offline, and it
runs a pendulum there: a file missing from the package is caught here.

The wheels pip needs (numpy; setuptools and wheel for the build) come from the
project venv's wheelhouse (scripts/python-env.sh keeps them), with --no-index:
nothing is fetched. The build runs CMake on this repository, as a user's
`pip install ./python` does; python/ is copied first so the test leaves no
build files in the source tree."""
import os
import shutil
import subprocess
import sys
import zipfile

import pytest

from conftest import REPO

VENV = os.environ.get("MBK_VENV") or os.path.join(REPO, ".venv")
WHEELHOUSE = os.path.join(VENV, "wheelhouse")

PENDULUM = r"""
import os, sys
import numpy as np
import mbk
assert mbk.library_path.startswith(sys.prefix), mbk.library_path   # the copy in the package
sys_ = mbk.MultibodySystem("pendulum")
sys_.matter.add_body(0, mbk.MassProps(1.0, com=(0, -1, 0), inertia=(0.01, 0.01, 0.01)), mbk.Pin())
sys_.forces.add_gravity((0, -9.81, 0))
s = sys_.new_state()
s.q = [0.3]
ig = mbk.Integrator(sys_, "rkmerson", accuracy=1e-9).initialize(s)
e0 = sum(sys_.energy(ig.state))
assert ig.step_to(2.0) == mbk.OK
e1 = sum(sys_.energy(ig.state))
assert abs(e1 - e0) < 1e-7 * abs(e0), (e0, e1)
print("pendulum ok", mbk.__version__, ig.state.q[0])
"""


def clean_env():
    env = {k: v for k, v in os.environ.items()
           if k not in ("PYTHONPATH", "MBK_LIBRARY", "VIRTUAL_ENV", "PYTHONHOME")
           and not k.startswith("PIP_")}          # only the wheelhouse: no other index or links
    env["PIP_DISABLE_PIP_VERSION_CHECK"] = "1"
    env["PIP_NO_INPUT"] = "1"
    env.setdefault("MBK_BUILD_JOBS", "2")
    return env


def run(cmd, cwd, env):
    r = subprocess.run(cmd, cwd=cwd, env=env, capture_output=True, text=True, timeout=1200)
    assert r.returncode == 0, "%s\n%s\n%s" % (" ".join(map(str, cmd)), r.stdout[-4000:],
                                              r.stderr[-4000:])
    return r.stdout


@pytest.mark.skipif(not os.path.isdir(WHEELHOUSE), reason="no wheelhouse (scripts/python-env.sh)")
def test_pip_install_into_fresh_venv_and_run(tmp_path):
    src = tmp_path / "python"
    shutil.copytree(os.path.join(REPO, "python"), src,
                    ignore=shutil.ignore_patterns("build", "*.egg-info", "__pycache__", "_lib"))
    env = clean_env()
    env["MBK_SOURCE_DIR"] = REPO            # the copy's parent is not the repository
    venv = tmp_path / "venv"
    run([sys.executable, "-m", "venv", str(venv)], tmp_path, env)
    py = str(venv / "bin" / "python")
    run([py, "-m", "pip", "install", "--no-index", "--find-links", WHEELHOUSE, str(src)],
        tmp_path, env)
    out = run([py, "-c", PENDULUM], tmp_path, env)
    assert "pendulum ok" in out
    # the examples run against the installed package too
    out = run([py, os.path.join(REPO, "examples", "python", "pendulum.py")], tmp_path, env)
    assert out


@pytest.mark.skipif(not os.path.isdir(WHEELHOUSE), reason="no wheelhouse (scripts/python-env.sh)")
def test_wheel_carries_libmbk(tmp_path):
    lib = os.environ.get("MBK_LIBRARY")
    if not lib:
        pytest.skip("MBK_LIBRARY (a built libmbk) not given")
    src = tmp_path / "python"
    shutil.copytree(os.path.join(REPO, "python"), src,
                    ignore=shutil.ignore_patterns("build", "*.egg-info", "__pycache__", "_lib"))
    env = clean_env()
    env["MBK_SOURCE_DIR"] = REPO
    env["MBK_PREBUILT_LIBRARY"] = os.path.abspath(lib)  # this build's library: no second build
    run([sys.executable, "-m", "pip", "wheel", "--no-index", "--find-links", WHEELHOUSE,
         "--no-deps", "-w", str(tmp_path / "dist"), str(src)], tmp_path, env)
    wheels = os.listdir(tmp_path / "dist")
    assert len(wheels) == 1 and wheels[0].startswith("mbk-") and "-py3-none-linux" in wheels[0]
    names = zipfile.ZipFile(tmp_path / "dist" / wheels[0]).namelist()
    assert "mbk/_lib/libmbk.so.0" in names
    package = {n for n in os.listdir(os.path.join(REPO, "python", "mbk")) if n.endswith(".py")}
    assert {"mbk/" + n for n in package} <= set(names)
