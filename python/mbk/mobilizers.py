"""Mobilizers (joints) and scalar functions, as descriptions.

The C constructors allocate, and the body or constraint that takes them
owns what they allocated. So a Python mobilizer or function is a
description; the C object is made only when a body or constraint is added
(and is then owned by the System), so nothing leaks when a description is
never used. Functions can also be evaluated from Python (`value`,
`derivative`), through a C instance each description keeps for that.
"""
import ctypes

import numpy as np

from . import _arrays, _capi
from .errors import check, invalid, raise_status

lib = _capi.lib

__all__ = ["Mobilizer", "Weld", "Pin", "Slider", "Translation", "Ball", "Free", "Screw",
           "Universal", "Cylinder", "Planar", "Gimbal", "Bushing", "FunctionBased", "Function",
           "Constant", "Linear", "Polynomial", "Sinusoid", "Step", "Spline"]


class Mobilizer:
    """A built-in mobilizer: its kind ("pin", ...) and constructor arguments."""
    __slots__ = ("kind", "args")

    def __init__(self, kind, *args):
        if kind not in _capi.MOBILIZERS and kind != "screw":
            raise invalid("unknown mobilizer %r; the kinds are %s" % (
                kind, ", ".join(_capi.MOBILIZERS + ("screw",))))
        # the arguments the C constructor takes: the pitch of a screw, nothing else
        if kind == "screw":
            if len(args) != 1:
                raise invalid("mobilizer 'screw' takes 1 argument (the pitch), got %d" % len(args))
            args = (_arrays.number(args[0], "pitch"),)
        elif args:
            raise invalid("mobilizer %r takes no arguments, got %d: %r" % (kind, len(args), args))
        self.kind, self.args = kind, args

    def __repr__(self):
        return "%s(%s)" % (self.kind.capitalize(), ", ".join(map(repr, self.args)))

    def _make(self):
        m = getattr(lib, "mbk_mobilizer_" + self.kind)(*self.args)
        if not m.ops:
            raise_status(lib.mbk_last_status() or -1)
        return m

    def num_q(self, euler=False):
        """Number of q in quaternion (euler=False) or Euler-angle mode."""
        m = self._make()
        try:
            return check(lib.mbk_mobilizer_get_nq(ctypes.byref(m), bool(euler)))
        finally:
            _destroy_mobilizer(m)


def _destroy_mobilizer(m):
    # the ops table's destroy op frees impl (the struct's layout: see mobilizer.h)
    if m.impl:
        fnp = ctypes.c_void_p.from_address(m.ops + _MobilizerOpsHead.destroy.offset).value
        if fnp:
            ctypes.CFUNCTYPE(None, ctypes.c_void_p)(fnp)(m.impl)


class _MobilizerOpsHead(ctypes.Structure):
    # name, nu, nq, then 11 function pointers before destroy (include/mbk/mobilizer.h)
    _fields_ = [("name", ctypes.c_char_p), ("nu", ctypes.c_int), ("nq", ctypes.c_int)] + \
               [("f%d" % i, ctypes.c_void_p) for i in range(11)] + [("destroy", ctypes.c_void_p)]



def Weld():
    """No relative motion."""
    return Mobilizer("weld")


def Pin():
    """Rotation q about F's z."""
    return Mobilizer("pin")


def Slider():
    """Translation q along F's x."""
    return Mobilizer("slider")


def Translation():
    """p_FM = q (3); u = v_FM in F."""
    return Mobilizer("translation")


def Ball():
    """Quaternion of R_FM (or body-fixed XYZ angles); u = w_FM in F."""
    return Mobilizer("ball")


def Free():
    """Ball then p_FM: q = (quaternion or angles, p_FM); u = (w_FM, v_FM) in F."""
    return Mobilizer("free")


def Screw(pitch):
    """Rotation q about z with translation pitch*q along z."""
    return Mobilizer("screw", pitch)


def Universal():
    """Rotation q0 about F's x, then q1 about the new y."""
    return Mobilizer("universal")


def Cylinder():
    """Rotation q0 about z and translation q1 along z."""
    return Mobilizer("cylinder")


def Planar():
    """Rotation q0 about z, then translation (q1, q2) along F's x and y."""
    return Mobilizer("planar")


def Gimbal():
    """Body-fixed XYZ angles (3 q); u = qdot."""
    return Mobilizer("gimbal")


def Bushing():
    """Body-fixed XYZ angles then p_FM (6 q); u = qdot."""
    return Mobilizer("bushing")


class FunctionBased:
    """Simbody's FunctionBased mobilizer: six functions of the mobilizer's nq
    coordinates give three rotation angles about axes[0..2] and three lengths
    along axes[3..5] (mbk_mobilizer_function_based). functions[i] None means
    the constant 0 of no coordinate."""
    __slots__ = ("nq", "functions", "coords", "axes")

    def __init__(self, nq, functions, coords, axes=None):
        if len(functions) != 6 or len(coords) != 6:
            raise invalid("FunctionBased needs 6 functions and 6 coordinate lists")
        self.nq = int(nq)
        self.functions = [Constant(0.0, 0) if f is None else f for f in functions]
        self.coords = [list(c or ()) for c in coords]
        self.axes = None if axes is None else [_arrays.vec3(a, "axis") for a in axes]

    def _make(self):
        fns = (_capi.Function * 6)(*[f._make() for f in self.functions])
        idx = [(ctypes.c_int * max(1, len(c)))(*c) for c in self.coords]
        ptrs = (ctypes.c_void_p * 6)(*[ctypes.addressof(a) if c else None
                                       for a, c in zip(idx, self.coords)])
        n = (ctypes.c_int * 6)(*[len(c) for c in self.coords])
        axes = None if self.axes is None else (_capi.Vec3 * 6)(*self.axes)
        m = lib.mbk_mobilizer_function_based(self.nq, ctypes.addressof(fns), ctypes.addressof(ptrs),
                                             ctypes.addressof(n),
                                             None if axes is None else ctypes.addressof(axes))
        if not m.ops:
            raise_status(lib.mbk_last_status() or -1)
        return m


# ---- functions --------------------------------------------------------------

class Function:
    """A built-in scalar function of n arguments (include/mbk/function.h).
    `spec` is (factory, arguments) that makes the same description again: copy,
    deepcopy and pickle use it (a copy gets C memory of its own)."""

    def __init__(self, kind, *args, keep=None, spec=None):
        self.kind, self.args, self._keep, self._c = kind, args, keep, None
        if spec is None and keep is None:
            spec = (Function, (kind,) + tuple(args))
        self._spec = spec

    def __repr__(self):
        # by the factory and its arguments: the C arguments hold raw addresses
        if self._spec is None:
            return "mbk.Function(%r)" % self.kind
        fn, args = self._spec
        if fn is Function:
            return "mbk.Function%r" % (args,)
        return "mbk.%s(%s)" % (fn.__name__, ", ".join(map(repr, args)))

    def __reduce__(self):
        if self._spec is None:
            raise TypeError("this mbk.Function cannot be copied or pickled (its arguments "
                            "are C addresses): make it again with mbk.Linear, mbk.Spline, ...")
        return self._spec

    def _make(self):
        f = getattr(lib, "mbk_function_" + self.kind)(*self.args)
        if not f.ops:
            raise_status(lib.mbk_last_status() or -1)
        return f

    def _instance(self):
        if self._c is None:
            self._c = self._make()
        return self._c

    @property
    def n_args(self):
        return ctypes.c_int.from_address(self._instance().ops).value

    def value(self, *x):
        """f(x)."""
        f = self._instance()
        xs = np.ascontiguousarray(np.array(x, dtype=np.float64).reshape(-1))
        if xs.size != self.n_args:
            raise invalid("%s takes %d arguments, got %d" % (self, self.n_args, xs.size))
        return lib.mbk_function_value(ctypes.byref(f), xs.ctypes.data if xs.size else None)

    def derivative(self, components, *x):
        """Partial derivative: components[k] is the argument differentiated at step k."""
        f = self._instance()
        comps = (ctypes.c_int * max(1, len(components)))(*components)
        xs = np.ascontiguousarray(np.array(x, dtype=np.float64).reshape(-1))
        if xs.size != self.n_args:
            raise invalid("%s takes %d arguments, got %d" % (self, self.n_args, xs.size))
        lib.mbk_clear_error()
        v = lib.mbk_function_derivative(ctypes.byref(f), ctypes.addressof(comps), len(components),
                                        xs.ctypes.data if xs.size else None)
        if v != v and lib.mbk_last_status() < 0:
            raise_status(lib.mbk_last_status())
        return v

    def __del__(self):
        if getattr(self, "_c", None) is not None:
            try:
                lib.mbk_function_destroy(ctypes.byref(self._c))
            except Exception:  # interpreter shutdown
                pass
            self._c = None


def Constant(value, n_args=1):
    value, n_args = float(value), int(n_args)
    return Function("constant", value, n_args, spec=(Constant, (value, n_args)))


def Linear(coefficients):
    """a.x + b: coefficients = (a_1, ..., a_n, b)."""
    c = np.array(coefficients, dtype=np.float64)
    if c.ndim != 1 or c.size < 1:
        raise invalid("Linear needs n + 1 coefficients")
    return Function("linear", c.ctypes.data, c.size - 1, keep=c, spec=(Linear, (c.tolist(),)))


def Polynomial(coefficients):
    """c[0] x^d + ... + c[d], highest power first."""
    c = np.array(coefficients, dtype=np.float64)
    if c.ndim != 1 or c.size < 1:
        raise invalid("Polynomial needs at least one coefficient")
    return Function("polynomial", c.ctypes.data, c.size - 1, keep=c,
                    spec=(Polynomial, (c.tolist(),)))


def Sinusoid(amplitude, frequency, phase=0.0):
    args = (float(amplitude), float(frequency), float(phase))
    return Function("sinusoid", *args, spec=(Sinusoid, args))


def Step(y0, y1, x0, x1):
    args = (float(y0), float(y1), float(x0), float(x1))
    return Function("step", *args, spec=(Step, args))


def Spline(x, y):
    """Natural cubic spline through (x[i], y[i])."""
    x = np.array(x, dtype=np.float64)
    y = np.array(y, dtype=np.float64)
    if x.shape != y.shape or x.ndim != 1:
        raise invalid("Spline: x and y must be 1-D of the same length")
    return Function("spline", x.ctypes.data, y.ctypes.data, x.size, keep=(x, y),
                    spec=(Spline, (x.tolist(), y.tolist())))
