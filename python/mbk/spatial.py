"""Small value types: transforms and mass properties (numpy inside).

Spatial vectors are plain numpy arrays of 6 numbers, (angular, linear), as
in C; 3-vectors any sequence of 3 numbers. The formulas follow
include/mbk/spatial.h operation by operation, so a Transform built here has
the same bits as the one the C helper of the same name builds.
"""
import math

import numpy as np

from . import _arrays, _capi
from .errors import invalid

__all__ = ["Transform", "MassProps", "inertia_diag"]


class Transform:
    """X_AB: rotation R (3x3, R_AB) and position p (p_AB) of frame B in A."""
    __slots__ = ("R", "p")

    def __init__(self, R=None, p=None):
        self.R = np.eye(3) if R is None else np.array(R, dtype=np.float64).reshape(3, 3)
        self.p = np.zeros(3) if p is None else np.array(p, dtype=np.float64).reshape(3)

    @classmethod
    def identity(cls):
        return cls()

    @classmethod
    def from_p(cls, p):
        """Pure translation."""
        return cls(None, p)

    @classmethod
    def axis_angle(cls, axis, angle, p=(0.0, 0.0, 0.0)):
        """R rotates by `angle` (right-handed) about `axis` (expressed in A); as
        mbk_transform_from_axis_angle."""
        kx, ky, kz = (float(c) for c in axis)
        n2 = kx * kx + ky * ky + kz * kz
        if n2 == 0.0 or not math.isfinite(n2):
            return cls(None, p)
        inv = 1.0 / math.sqrt(n2)
        kx, ky, kz = kx * inv, ky * inv, kz * inv
        c, s = math.cos(angle), math.sin(angle)
        skew = ((0.0, -kz, ky), (kz, 0.0, -kx), (-ky, kx, 0.0))
        k = (kx, ky, kz)
        R = [[(c * (1.0 if i == j else 0.0) + s * skew[i][j]) + (1.0 - c) * (k[i] * k[j])
              for j in range(3)] for i in range(3)]
        return cls(R, p)

    def __matmul__(self, other):
        """X_AC = X_AB @ X_BC."""
        return Transform(self.R @ other.R, self.p + self.R @ other.p)

    def inverse(self):
        return Transform(self.R.T, -(self.R.T @ self.p))

    def apply(self, point):
        """p_AQ = p_AB + R_AB p_BQ."""
        return self.p + self.R @ np.asarray(point, dtype=np.float64)

    def __repr__(self):
        return "Transform(R=%s, p=%s)" % (self.R.tolist(), self.p.tolist())

    def _c(self):
        X = _capi.Transform()
        X.R = _arrays.mat33(self.R, "R")
        X.p = _capi.Vec3(*self.p)
        return X

    @classmethod
    def _from_c(cls, X):
        return cls(_arrays.mat33_out(X.R), _arrays.vec3_out(X.p))


def transform_c(X, name="transform"):
    if X is None:
        return Transform()._c()
    if isinstance(X, Transform):
        return X._c()
    if isinstance(X, tuple) and len(X) == 2:
        return Transform(X[0], X[1])._c()
    try:
        return Transform.from_p(X)._c()
    except (TypeError, ValueError):
        raise invalid("%s must be a Transform, (R, p) or a position, got %r" % (name, X)) from None


def inertia_diag(a, b, c):
    return np.diag([float(a), float(b), float(c)])


class MassProps:
    """Mass, centre of mass (in B) and inertia about the centre of mass (in B).
    `inertia` is a 3x3 matrix or 3 principal moments."""
    __slots__ = ("mass", "com", "inertia")

    def __init__(self, mass, com=(0.0, 0.0, 0.0), inertia=None):
        self.mass = float(mass)
        self.com = np.array(com, dtype=np.float64).reshape(3)
        if inertia is None:
            inertia = np.zeros((3, 3))
        inertia = np.array(inertia, dtype=np.float64)
        if inertia.shape == (3,):
            inertia = np.diag(inertia)
        if inertia.shape != (3, 3):
            raise invalid("inertia must be 3x3 or 3 principal moments, got shape %s"
                          % (inertia.shape,))
        self.inertia = inertia

    def __repr__(self):
        return "MassProps(%r, com=%s, inertia=%s)" % (self.mass, self.com.tolist(),
                                                      self.inertia.tolist())

    def _c(self):
        mp = _capi.MassProps()
        mp.mass = self.mass
        mp.com = _capi.Vec3(*self.com)
        mp.inertia = _arrays.mat33(self.inertia, "inertia")
        return mp

    @classmethod
    def _from_c(cls, mp):
        return cls(mp.mass, _arrays.vec3_out(mp.com), _arrays.mat33_out(mp.inertia))
