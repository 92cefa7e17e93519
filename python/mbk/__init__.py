"""mbk: a staged multibody dynamics kernel (C11), from Python.

Systems built in code or from URDF, States whose q, u, z and derivatives
are numpy views of the C memory, every integrator of the library, events,
checkpoints, force elements and event handlers written in Python, and the
ODE view SciPy's solvers want (`system.ydot`, `system.jacobian`).
docs/python.md is the tour.

    import mbk
    sys = mbk.MultibodySystem("pendulum")
    body = sys.matter.add_body(0, mbk.MassProps(1.0, com=(0, -1, 0)), mbk.Pin())
    sys.forces.add_gravity((0, -9.81, 0))
    s = sys.new_state()
    s.q = [0.5]
    ig = mbk.Integrator(sys, "rkmerson", accuracy=1e-8).initialize(s)
    ig.step_to(1.0)
    print(ig.state.q, sys.energy(ig.state))
"""
from . import _capi
from .enums import CvodeMethod, DaeForm, Direction, Stage
from .errors import (EVENT, OK, TERMINATED, CallbackError, ConvergenceError, FileError,
                     IntegratorError, InvalidArgumentError, MbkError, NotFiniteError,
                     OutOfMemoryError, ParseError, RetryError, SingularError, StageError,
                     StaleStateError, error_class, last_error, status_name)
from .ensemble import (NOT_RUN, Ensemble, philox4x32, random_bits, random_normal,
                       random_uniform)
from .integrator import INTEGRATORS, Integrator, checkpoint_app_data, checkpoint_name
from .mobilizers import (Ball, Bushing, Constant, Cylinder, Free, Function, FunctionBased,
                         Gimbal, Linear, Mobilizer, Pin, Planar, Polynomial, Screw, Sinusoid,
                         Slider, Spline, Step, Translation, Universal, Weld)
from .multibody import Forces, Matter, MultibodySystem
from .spatial import MassProps, Transform
from .state import State
from .system import System
from .urdf import URDF_OPTIONS, load_urdf, load_urdf_string
from ._callbacks import EventResult

#: the version of the C library loaded (mbk_version()); the package's own is the same
__version__ = _capi.lib.mbk_version().decode()
#: where the C library was loaded from
library_path = _capi.library_path


def allocation_count():
    """mbk_get_allocation_count(): successful allocations through mbk's hooks so far."""
    return _capi.lib.mbk_get_allocation_count()


def has(function_name):
    """True when the loaded libmbk has the C function (e.g. the derivatives of DESIGN.md
    section 12, which newer libraries add)."""
    return _capi.has(function_name)


__all__ = [n for n in dir() if not n.startswith("_")]
