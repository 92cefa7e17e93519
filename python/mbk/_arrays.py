"""numpy views over C memory and argument conversion (internal)."""
import reprlib

import numpy as np

from . import _capi
from .errors import invalid

F64 = np.dtype(np.float64)
_empty = np.empty


class _Buffer:
    """Exposes C memory to numpy and keeps its owner (a State, a System) alive."""
    __slots__ = ("__array_interface__", "owner")

    def __init__(self, addr, shape, readonly, owner):
        self.__array_interface__ = {"data": (addr, readonly), "shape": shape, "typestr": "<f8",
                                    "version": 3}
        self.owner = owner


def view(addr, shape, readonly, owner):
    """An ndarray over `shape` doubles at C address `addr` (no copy). The array's
    base keeps `owner` alive; the memory stays valid only as long as the C
    contract of the pointer says."""
    if isinstance(shape, int):
        shape = (shape,)
    if 0 in shape:
        a = np.empty(shape)
        a.flags.writeable = not readonly
        return a
    if not addr:
        return None
    return np.asarray(_Buffer(addr, shape, readonly, owner))


def number(x, name):
    """x as a float; anything that is not a number is refused, naming the argument."""
    try:
        return float(x)
    except (TypeError, ValueError):
        raise invalid("%s must be a number, got %s" % (name, reprlib.repr(x))) from None


def f64(x, n, name):
    """x as a C-contiguous float64 array of n values (converted when needed). Only
    numbers are converted: None, strings and other objects are refused, as numpy
    would turn None into NaN and "1" into 1.0."""
    if type(x) is not np.ndarray or x.dtype is not F64 or not x.flags.c_contiguous:
        x = _numeric(x, name)
        try:
            x = np.ascontiguousarray(x, dtype=np.float64)
        except (TypeError, ValueError) as e:
            raise invalid("%s: cannot be read as an array of floats (%s)" % (name, e)) from None
    if x.ndim != 1 or x.shape[0] != n:
        x = x.reshape(-1) if x.size == n and x.ndim > 1 else x
        if x.ndim != 1 or x.shape[0] != n:
            raise invalid("%s has shape %s; expected (%d,)" % (name, x.shape, n))
    return x


def _numeric(x, name):
    # x as an array of numbers (bool, int or float), or refused with what was given
    if x is None:
        raise invalid("%s: None given; pass numbers (a sequence or an array of floats)" % name)
    try:
        a = np.asarray(x)
    except (TypeError, ValueError) as e:
        raise invalid("%s: cannot be read as an array of floats (%s)" % (name, e)) from None
    if a.dtype.kind not in "biuf":
        raise invalid("%s: cannot be read as an array of floats: got %r (numpy dtype %s); "
                      "pass numbers" % (name, reprlib.repr(x), a.dtype))
    return a


def f64_2d(x, rows, cols, name):
    """x as a C-contiguous float64 array of shape (rows, cols)."""
    x = np.ascontiguousarray(_numeric(x, name), dtype=np.float64)
    if x.shape != (rows, cols):
        raise invalid("%s has shape %s; expected (%d, %d)" % (name, x.shape, rows, cols))
    return x


def out_array(out, shape, name="out"):
    """A preallocated result array, checked, or a new one."""
    if out is None:
        return _empty(shape)
    if (type(out) is not np.ndarray or out.dtype is not F64 or not out.flags.c_contiguous
            or not out.flags.writeable or out.shape != (shape if isinstance(shape, tuple) else (shape,))):
        raise invalid("%s must be a writable C-contiguous float64 array of shape %s"
                      % (name, shape if isinstance(shape, tuple) else (shape,)))
    return out


def addr(a):
    return a.ctypes.data


# ---- small value types ---------------------------------------------------------

def vec3(v, name="vector"):
    try:
        x, y, z = (float(c) for c in v)
    except (TypeError, ValueError):
        raise invalid("%s must be 3 numbers, got %r" % (name, v)) from None
    return _capi.Vec3(x, y, z)


def vec3_out(v):
    return np.array((v.x, v.y, v.z))


def mat33(R, name="matrix"):
    R = np.asarray(R, dtype=np.float64)
    if R.shape != (3, 3):
        raise invalid("%s must be 3x3, got shape %s" % (name, R.shape))
    m = _capi.Mat33()
    for i in range(3):
        for j in range(3):
            m.m[i][j] = R[i, j]
    return m


def mat33_out(m):
    return np.array([[m.m[i][j] for j in range(3)] for i in range(3)])


def spatial_out(sv):
    return np.array((sv.w.x, sv.w.y, sv.w.z, sv.v.x, sv.v.y, sv.v.z))


def spatial(v, name="spatial vector"):
    v = np.asarray(v, dtype=np.float64).reshape(-1)
    if v.shape != (6,):
        raise invalid("%s must be 6 numbers (angular, linear), got shape %s" % (name, v.shape))
    return _capi.SpatialVec(_capi.Vec3(*v[:3]), _capi.Vec3(*v[3:]))
