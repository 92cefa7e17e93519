"""Status codes become exceptions: one class per status, a common base."""
import pytest

import mbk
from mbk import errors

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
