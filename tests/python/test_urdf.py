"""Systems from URDF files and strings."""
import numpy as np
import pytest

import mbk
from conftest import urdf_path
from mbk import Stage

PENDULUM = """<robot name="p">
  <link name="base"/>
  <link name="arm"><inertial><mass value="1"/><origin xyz="0 0 -0.5"/>
    <inertia ixx="0.1" iyy="0.1" izz="0.01" ixy="0" ixz="0" iyz="0"/></inertial></link>
  <joint name="shoulder" type="revolute"><parent link="base"/><child link="arm"/>
    <axis xyz="0 1 0"/><limit lower="-1" upper="1" effort="1" velocity="1"/></joint>
</robot>"""


def test_load_file_and_names():
    sys_ = mbk.load_urdf(urdf_path("double_pendulum.urdf"))
    assert isinstance(sys_, mbk.MultibodySystem) and sys_.is_topology_realized
    m = sys_.matter
    assert m.num_bodies >= 3
    s = sys_.new_state()
    s.realize(Stage.ACCELERATION)
    assert np.all(np.isfinite(s.udot))
    assert sys_.urdf_robot_name
    b = m.num_bodies - 1
    assert sys_.urdf_link_name(b) and sys_.urdf_joint_type(b) in ("revolute", "continuous")
    assert sys_.urdf_find_joint(sys_.urdf_joint_name(b)) == b
    assert sys_.forces.find("gravity") >= 0


def test_load_string_with_options():
    sys_ = mbk.load_urdf_string(PENDULUM, gravity=(0, 0, -1.62), limits_as_stops=False,
                                source_name="p.urdf")
    s = sys_.new_state()
    assert s.nq == 1
    g = sys_.forces.find("gravity")
    assert sys_.forces.parameters(s, g)[:3].tolist() == [0, 0, -1.62]
    b = sys_.urdf_find_joint("shoulder")
    assert sys_.urdf_joint_limits(b) == (-1.0, 1.0)
    assert sys_.forces.find("limit:shoulder") == -1
    with_stops = mbk.load_urdf_string(PENDULUM)
    assert with_stops.forces.find("limit:shoulder") >= 0
    heavy_base = PENDULUM.replace('<link name="base"/>', '<link name="base"><inertial><mass value="2"/>'
                                  '<inertia ixx="1" iyy="1" izz="1" ixy="0" ixz="0" iyz="0"/>'
                                  '</inertial></link>')
    floating = mbk.load_urdf_string(heavy_base, floating_base=True)
    assert floating.new_state().nq == 8


def test_errors_name_every_problem():
    bad = PENDULUM.replace('<parent link="base"/>', '<parent link="bsae"/>')
    with pytest.raises(mbk.ParseError) as e:
        mbk.load_urdf_string(bad, source_name="bad.urdf")
    assert "bad.urdf" in str(e.value) and "bsae" in str(e.value)
    assert e.value.errors and "bsae" in e.value.errors[0]
    with pytest.raises(mbk.FileError):
        mbk.load_urdf("/nonexistent/robot.urdf")
    with pytest.raises(mbk.InvalidArgumentError, match="unknown URDF option"):
        mbk.load_urdf_string(PENDULUM, floatingbase=True)


def test_warnings_are_kept():
    odd = PENDULUM.replace('izz="0.01"', 'izz="0.5"')   # breaks the triangle inequality
    sys_ = mbk.load_urdf_string(odd)
    assert sys_.warnings and sys_.warnings == sys_.urdf_warnings
