"""Status codes become exceptions: one class per status, a common base; bad input
is refused up front with the documented class."""
import math
import os

import numpy as np
import pytest

import mbk
from conftest import REPO
from mbk import Stage, errors

CODES = {-1: mbk.InvalidArgumentError, -2: mbk.StageError, -3: mbk.StaleStateError,
         -4: mbk.OutOfMemoryError, -5: mbk.SingularError, -6: mbk.ConvergenceError,
         -7: mbk.IntegratorError, -8: mbk.NotFiniteError, -9: mbk.FileError,
         -10: mbk.ParseError, -11: mbk.CallbackError, -12: mbk.RetryError}


@pytest.mark.parametrize("status,cls", sorted(CODES.items()))
def test_one_class_per_status(status, cls):
    assert mbk.error_class(status) is cls and issubclass(cls, mbk.MbkError)
    assert cls.status == status and cls.status_name == mbk.status_name(status)
    # a status recorded by the C library comes back as its class, with the message
    mbk._capi.lib.mbk_set_error(status, b"%s", b"what failed and what to do")
    with pytest.raises(cls) as e:
        errors.check(status)
    assert e.value.status == status and str(e.value) == "what failed and what to do"
    assert mbk.last_error() == "what failed and what to do"


def test_distinct_classes_and_builtin_bases():
    assert len(set(CODES.values())) == len(CODES)
    assert issubclass(mbk.InvalidArgumentError, ValueError)
    assert issubclass(mbk.NotFiniteError, ValueError)
    assert issubclass(mbk.FileError, OSError)
    assert issubclass(mbk.OutOfMemoryError, MemoryError)
    assert mbk.error_class(-99) is mbk.MbkError
    assert mbk.status_name(-99) == "MBK_UNKNOWN"
    assert errors.check(0) == 0 and errors.check(mbk.EVENT) == 1
    assert (mbk.OK, mbk.EVENT, mbk.TERMINATED) == (0, 1, 2)


def test_version_and_library():
    assert mbk.__version__.count(".") == 2
    assert "libmbk" in mbk.library_path
    n = mbk.allocation_count()
    mbk.MultibodySystem("counted").new_state()
    assert mbk.allocation_count() > n
    assert mbk.has("mbk_system_calc_ydot") and not mbk.has("mbk_no_such_function")


def test_stage_enum():
    assert int(mbk.Stage.POSITION) == 5 and str(mbk.Stage.POSITION) == "Position"
    assert mbk._capi.lib.mbk_stage_name(5).decode() == "Position"
    s = mbk.MultibodySystem("x").new_state()
    s.realize("acceleration")
    assert s.stage == mbk.Stage.ACCELERATION
    with pytest.raises(mbk.InvalidArgumentError):
        s.realize("sometime")
    with pytest.raises(mbk.InvalidArgumentError, match="Infinity|stage"):
        s.realize(mbk.Stage.INFINITY)


# ---- bad input: refused up front, with the documented class, the State unchanged ------
def _pend():
    sys_ = mbk.MultibodySystem("p")
    sys_.matter.add_body(0, mbk.MassProps(1.0, com=(0, -1, 0), inertia=(.1, .1, .1)), mbk.Pin())
    sys_.forces.add_gravity((0, -9.81, 0))
    return sys_


def test_numbers_where_numbers_are_needed():
    sys_ = _pend()
    ig = mbk.Integrator(sys_).initialize(sys_.new_state())
    for bad in ("x", None, [1.0]):
        with pytest.raises(mbk.InvalidArgumentError, match="t_report must be a number"):
            ig.step_to(bad)
        with pytest.raises(mbk.InvalidArgumentError, match="t_final must be a number"):
            ig.integrate(bad)
        with pytest.raises(mbk.InvalidArgumentError, match="t must be a number"):
            sys_.jacobian(bad, [0.1, 0.0])
    assert ig.state.t == 0.0
    assert ig.step_to(np.float32(0.25)) == mbk.OK and ig.state.t == 0.25   # converted
    with pytest.raises(mbk.InvalidArgumentError, match="'pin' takes no arguments"):
        mbk.Mobilizer("pin", 1.0)
    with pytest.raises(mbk.InvalidArgumentError, match="pitch"):
        mbk.Mobilizer("screw")
    with pytest.raises(mbk.InvalidArgumentError, match="pitch must be a number"):
        mbk.Screw("a")
    with pytest.raises(mbk.InvalidArgumentError, match="method must be a str"):
        mbk.Integrator(sys_, 3)
    assert mbk.Screw(0.1).num_q() == 1


def test_stage_arguments():
    sys_ = _pend()
    s = sys_.new_state("position")                        # as realize("position") takes it
    assert s.stage == Stage.POSITION
    assert sys_.new_state(Stage.VELOCITY).stage == Stage.VELOCITY
    assert sys_.new_state(np.int64(6)).stage == Stage.VELOCITY
    for bad in (5.5, 5.0, None, [5]):
        with pytest.raises(mbk.InvalidArgumentError, match="stage must be"):
            sys_.realize(s, bad)
        assert s.stage == Stage.POSITION                  # unchanged
    with pytest.raises(mbk.InvalidArgumentError, match="unknown stage 'sometime'"):
        sys_.new_state("sometime")
    with pytest.raises(mbk.InvalidArgumentError, match="stage must be"):
        s.invalidate(2.5)


def test_variables_take_numbers_only():
    sys_ = _pend()
    s = sys_.new_state()
    s.q = [0.3]
    s.realize(Stage.ACCELERATION)
    for bad in (None, ["1"], "1", [None], [b"1"], [1 + 2j], [object()]):
        with pytest.raises(mbk.InvalidArgumentError, match="^q: ") as e:
            s.q = bad
        assert "nan" not in str(e.value)
        assert s.q.tolist() == [0.3] and s.stage == Stage.ACCELERATION   # unchanged
    with pytest.raises(mbk.InvalidArgumentError, match="None given"):
        s.set_u(None)
    with pytest.raises(mbk.InvalidArgumentError, match="^y: "):
        sys_.ydot(0.0, ["1", "2"])
    s.q = [True]                                          # numbers of any numpy kind
    s.u = np.array([2], dtype=np.int8)
    assert s.q.tolist() == [1.0] and s.u.tolist() == [2.0]


def test_callbacks_must_be_callable():
    sys_ = _pend()
    sys_.invalidate_topology()
    with pytest.raises(mbk.InvalidArgumentError, match="witness must be callable"):
        sys_.add_event_handler(5, 6)
    with pytest.raises(mbk.InvalidArgumentError, match="handler must be callable"):
        sys_.add_event_handler(lambda s: 1.0, 6)
    with pytest.raises(mbk.InvalidArgumentError, match="reporter must be callable"):
        sys_.add_event_reporter(lambda s: 1.0, None)
    with pytest.raises(mbk.InvalidArgumentError, match="handler must be callable"):
        sys_.add_scheduled_event(1.0, "x")
    with pytest.raises(mbk.InvalidArgumentError, match="reporter must be callable"):
        sys_.add_periodic_reporter(0.1, 1)
    with pytest.raises(mbk.InvalidArgumentError, match="calc_force must be callable"):
        sys_.forces.add_custom(5)
    with pytest.raises(mbk.InvalidArgumentError, match="potential_energy must be callable"):
        sys_.forces.add_custom(lambda s, b, m: None, 1.0)
    with pytest.raises(mbk.InvalidArgumentError, match="name must be a str"):
        sys_.forces.add_custom(lambda s, b, m: None, name=7)
    assert sys_.forces.num_elements == 1                  # nothing was added
    s = sys_.new_state()
    s.realize()                                           # and the System still realizes
    ig = mbk.Integrator(sys_).initialize(s)
    with pytest.raises(mbk.InvalidArgumentError, match="reporter must be callable"):
        ig.integrate(1.0, 3)


def test_functions_name_themselves_and_check_their_arguments():
    f = mbk.Linear([2, 3, 1])
    with pytest.raises(mbk.InvalidArgumentError) as e:
        f.value(1)
    assert str(e.value) == "mbk.Linear([2.0, 3.0, 1.0]) takes 2 arguments, got 1"
    with pytest.raises(mbk.InvalidArgumentError, match=r"Linear\(\[2.0, 3.0, 1.0\]\) takes 2 "
                                                       "arguments, got 4"):
        f.derivative([0], 1, 1, 5, 6)
    with pytest.raises(mbk.InvalidArgumentError, match="got 1"):
        f.derivative([0], 1)
    assert f.derivative([1], 1, 1) == 3.0
    assert repr(mbk.Spline([0, 1], [1, 2])) == "mbk.Spline([0.0, 1.0], [1.0, 2.0])"
    assert repr(mbk.Constant(2.0, 0)) == "mbk.Constant(2.0, 0)"
    with pytest.raises(mbk.InvalidArgumentError, match=r"mbk.Polynomial\(\[1.0, 0.0\]\) takes 1"):
        mbk.Polynomial([1, 0]).value()


def test_urdf_options_are_checked():
    xml = open(os.path.join(REPO, "tests", "urdf", "double_pendulum.urdf")).read()
    with pytest.raises(mbk.InvalidArgumentError, match="max_bytes must be an int >= 0"):
        mbk.load_urdf_string(xml, max_bytes=-1)
    with pytest.raises(mbk.InvalidArgumentError, match="max_bytes"):
        mbk.load_urdf_string(xml, max_bytes=1.5)
    with pytest.raises(mbk.ParseError, match="^mine: .*limit is 10"):
        mbk.load_urdf_string(xml, source_name=b"mine", max_bytes=10)    # bytes work
    with pytest.raises(mbk.ParseError, match="^mine: "):
        mbk.load_urdf_string(xml, source_name="mine", max_bytes=10)
    with pytest.raises(mbk.InvalidArgumentError, match="source_name must be a str or bytes"):
        mbk.load_urdf_string(xml, source_name=5)
    with pytest.raises(mbk.InvalidArgumentError, match="stop_stiffness"):
        mbk.load_urdf_string(xml, stop_stiffness="stiff")
    with pytest.raises(mbk.InvalidArgumentError, match="gravity"):
        mbk.load_urdf_string(xml, gravity=(0, 0))
    assert mbk.load_urdf_string(xml, source_name=b"x", max_bytes=1 << 20).matter.num_bodies == 3


def test_nan_potential_energy_and_station_are_refused():
    sys_ = _pend()
    sys_.invalidate_topology()
    level = [0.0]
    sys_.forces.add_custom(lambda s, b, m: None, lambda s: level[0], name="pe")
    s = sys_.new_state()
    s.q = [0.2]
    s.realize(Stage.VELOCITY)
    ke, pe = sys_.energy(s)
    for bad in (math.nan, math.inf):
        level[0] = bad
        with pytest.raises(mbk.NotFiniteError, match="Python force 'pe': potential_energy "
                                                     "returned"):
            sys_.energy(s)
        with pytest.raises(mbk.NotFiniteError):
            sys_.forces.potential_energy(s, 1)
    level[0] = 0.0
    assert sys_.energy(s) == (ke, pe) and mbk.errors.pending[0] == 0
    m = sys_.matter
    for fn in (m.station_location, m.station_velocity, m.station_acceleration,
               m.station_jacobian):
        with pytest.raises(mbk.NotFiniteError, match="station .* is not finite"):
            fn(s, 1, (math.nan, 0, 0))
    assert np.all(np.isfinite(m.station_location(s, 1, (0, -1, 0))))
