"""Multibody Systems: matter (bodies, mobilizers, constraints) and forces."""
import ctypes
import math

import numpy as np

from . import _arrays, _callbacks, _capi
from .errors import check, invalid, not_finite, raise_status
from .mobilizers import FunctionBased, Mobilizer
from .spatial import MassProps, Transform, transform_c
from .system import System

lib = _capi.lib
_empty = np.empty
_vec3 = _arrays.vec3

__all__ = ["MultibodySystem", "Matter", "Forces"]


class MultibodySystem(System):
    """mbk_multibody_create: a System with a matter subsystem (index 0) and a
    general force subsystem (index 1). `matter` and `forces` build and read them."""

    def __init__(self, name="multibody", _ptr=None):
        if _ptr is None:
            _ptr = lib.mbk_multibody_create(name.encode())
            if not _ptr:
                raise_status(lib.mbk_last_status() or -4)
        super().__init__(name, _ptr=_ptr)
        self._matter_ptr = lib.mbk_multibody_upd_matter(_ptr)
        self._forces_ptr = lib.mbk_multibody_upd_forces(_ptr)
        if not self._matter_ptr:
            raise invalid("not a multibody System")

    @property
    def matter(self):
        return Matter(self, self._matter_ptr)

    @property
    def forces(self):
        return Forces(self, self._forces_ptr)

    def add_forces(self, name):
        """Another general force subsystem (before the topology is realized)."""
        p = lib.mbk_multibody_add_forces(self._p(), name.encode())
        if not p:
            raise_status(lib.mbk_last_status() or -1)
        return Forces(self, p)

    def body_forces(self, state):
        """The applied body forces, (nb, 6) read-only view (Dynamics)."""
        a = lib.mbk_multibody_get_body_forces(self._p(), state._p())
        if not a:
            raise_status(lib.mbk_last_status() or -2)
        return _arrays.view(a, (self.matter.num_bodies, 6), True, state._h)

    def mobility_forces(self, state):
        """The applied mobility forces, (nu,) read-only view (Dynamics)."""
        a = lib.mbk_multibody_get_mobility_forces(self._p(), state._p())
        if not a:
            raise_status(lib.mbk_last_status() or -2)
        return _arrays.view(a, state.nu, True, state._h)

    # ---- URDF names (for a System from mbk.load_urdf) ----------------------------
    def urdf_find_joint(self, name):
        """The body a URDF joint moves (-1 if none)."""
        return lib.mbk_urdf_find_joint(self._p(), name.encode())

    def urdf_joint_name(self, body):
        n = lib.mbk_urdf_get_joint_name(self._p(), int(body))
        return None if n is None else n.decode()

    def urdf_joint_type(self, body):
        n = lib.mbk_urdf_get_joint_type(self._p(), int(body))
        return None if n is None else n.decode()

    def urdf_link_name(self, body):
        n = lib.mbk_urdf_get_link_name(self._p(), int(body))
        return None if n is None else n.decode()

    @property
    def urdf_robot_name(self):
        n = lib.mbk_urdf_get_robot_name(self._p())
        return None if n is None else n.decode()

    def urdf_joint_limits(self, body):
        """(lower, upper) of the joint moving `body`, or None when it has none."""
        lo, hi = ctypes.c_double(), ctypes.c_double()
        r = check(lib.mbk_urdf_get_joint_limits(self._p(), int(body), ctypes.byref(lo),
                                                ctypes.byref(hi)))
        return (lo.value, hi.value) if r == 1 else None

    @property
    def urdf_warnings(self):
        p = self._p()
        return [lib.mbk_urdf_get_warning(p, i).decode()
                for i in range(lib.mbk_urdf_get_num_warnings(p))]


def _finite_vec3(v, name):
    # the kernel computes with a NaN station without complaint (NaN out): refused here,
    # as multiply_by_M refuses a NaN
    c = _vec3(v, name)
    if not all(math.isfinite(x) for x in (c.x, c.y, c.z)):
        raise not_finite("%s = (%r, %r, %r) is not finite; give finite numbers"
                         % (name, c.x, c.y, c.z))
    return c


def _spatial_array(n):
    return (_capi.SpatialVec * max(1, n))()


def _sv_to_np(arr, n):
    return np.frombuffer(arr, dtype=np.float64, count=6 * n).reshape(n, 6).copy()


class Matter:
    """The matter subsystem: bodies on mobilizers, constraints, and what the
    multibody algorithms compute from a State. Ground is body 0."""

    def __init__(self, system, ptr):
        self.system, self._ptr = system, ptr

    def _p(self):
        self.system._p()
        return self._ptr

    # ---- building ------------------------------------------------------------------
    def add_body(self, parent, mass_props, mobilizer, X_PF=None, X_BM=None, name=None,
                 unrealizable=False):
        """Add a body on `mobilizer` (mbk.Pin(), ...) to `parent`; returns its index.
        X_PF: frame F on the parent; X_BM: frame M on the body (Transforms,
        (R, p) pairs or positions; default identity)."""
        if not isinstance(mobilizer, (Mobilizer, FunctionBased)):
            raise invalid("mobilizer must be mbk.Pin(), mbk.Ball(), ... , got %r" % (mobilizer,))
        if not isinstance(mass_props, MassProps):
            raise invalid("mass_props must be an mbk.MassProps")
        xpf, xbm, mp = transform_c(X_PF, "X_PF"), transform_c(X_BM, "X_BM"), mass_props._c()
        fn = lib.mbk_matter_add_body_unrealizable if unrealizable else lib.mbk_matter_add_body
        b = check(fn(self._p(), int(parent), ctypes.byref(xpf), ctypes.byref(mp),
                     ctypes.byref(xbm), mobilizer._make()))
        if name is not None:
            self.set_body_name(b, name)
        return b

    @property
    def num_bodies(self):
        return lib.mbk_matter_get_num_bodies(self._p())

    @property
    def num_mobilities(self):
        return lib.mbk_matter_get_num_mobilities(self._p())

    def parent(self, body):
        return lib.mbk_matter_get_parent(self._p(), int(body))

    def set_body_name(self, body, name):
        check(lib.mbk_matter_set_body_name(self._p(), int(body),
                                           None if name is None else name.encode()))

    def find_body(self, name):
        return lib.mbk_matter_find_body(self._p(), name.encode())

    @property
    def total_mass(self):
        return lib.mbk_matter_get_total_mass(self._p())

    def body_mass_props(self, body):
        mp = _capi.MassProps()
        check(lib.mbk_matter_get_body_mass_props(self._p(), int(body), ctypes.byref(mp)))
        return MassProps._from_c(mp)

    @property
    def subsystem_index(self):
        return lib.mbk_matter_get_subsystem_index(self._p())

    # ---- Model stage ---------------------------------------------------------------
    def set_use_euler_angles(self, state, on):
        check(lib.mbk_matter_set_use_euler_angles(self._p(), state._w(), bool(on)))
        state._views = {}

    def use_euler_angles(self, state):
        return bool(lib.mbk_matter_get_use_euler_angles(self._p(), state._p()))

    def body_num_q(self, state, body):
        return check(lib.mbk_matter_get_body_num_q(self._p(), state._p(), int(body)))

    def body_num_u(self, state, body):
        return check(lib.mbk_matter_get_body_num_u(self._p(), state._p(), int(body)))

    def body_q_start(self, state, body):
        return check(lib.mbk_matter_get_body_q_start(self._p(), state._p(), int(body)))

    def body_u_start(self, state, body):
        return check(lib.mbk_matter_get_body_u_start(self._p(), state._p(), int(body)))

    def body_q(self, state, body):
        """Slice of a body's q in the State's q."""
        s = self.body_q_start(state, body)
        return slice(s, s + self.body_num_q(state, body))

    def body_u(self, state, body):
        s = self.body_u_start(state, body)
        return slice(s, s + self.body_num_u(state, body))

    def num_q(self, state):
        return check(lib.mbk_matter_get_num_q(self._p(), state._p()))

    def normalize_quaternions(self, state):
        check(lib.mbk_matter_normalize_quaternions(self._p(), state._w()))

    # ---- bodies and stations ---------------------------------------------------------
    def body_transform(self, state, body):
        """X_GB (Position)."""
        X = _capi.Transform()
        check(lib.mbk_matter_get_body_transform(self._p(), state._p(), int(body), ctypes.byref(X)))
        return Transform._from_c(X)

    def body_velocity(self, state, body):
        """V_GB = (w, v) (Velocity)."""
        V = _capi.SpatialVec()
        check(lib.mbk_matter_get_body_velocity(self._p(), state._p(), int(body), ctypes.byref(V)))
        return _arrays.spatial_out(V)

    def body_acceleration(self, state, body):
        """A_GB (Acceleration)."""
        A = _capi.SpatialVec()
        check(lib.mbk_matter_get_body_acceleration(self._p(), state._p(), int(body),
                                                   ctypes.byref(A)))
        return _arrays.spatial_out(A)

    def set_body_q_to_fit_transform(self, state, body, X_FM):
        X = transform_c(X_FM, "X_FM")
        check(lib.mbk_matter_set_body_q_to_fit_transform(self._p(), state._w(), int(body),
                                                         ctypes.byref(X)))

    def set_body_u_to_fit_velocity(self, state, body, V_FM):
        V = _arrays.spatial(V_FM, "V_FM")
        check(lib.mbk_matter_set_body_u_to_fit_velocity(self._p(), state._w(), int(body),
                                                        ctypes.byref(V)))

    def _station(self, fn, state, body, station):
        out = _capi.Vec3()
        check(fn(self._p(), state._p(), int(body), _finite_vec3(station, "station"),
                 ctypes.byref(out)))
        return _arrays.vec3_out(out)

    def station_location(self, state, body, station):
        return self._station(lib.mbk_matter_get_station_location, state, body, station)

    def station_velocity(self, state, body, station):
        return self._station(lib.mbk_matter_get_station_velocity, state, body, station)

    def station_acceleration(self, state, body, station):
        return self._station(lib.mbk_matter_get_station_acceleration, state, body, station)

    def mass_center_location(self, state):
        out = _capi.Vec3()
        check(lib.mbk_matter_calc_mass_center_location(self._p(), state._p(), ctypes.byref(out)))
        return _arrays.vec3_out(out)

    def mass_center_velocity(self, state):
        out = _capi.Vec3()
        check(lib.mbk_matter_calc_mass_center_velocity(self._p(), state._p(), ctypes.byref(out)))
        return _arrays.vec3_out(out)

    def system_momentum(self, state):
        h = _capi.SpatialVec()
        check(lib.mbk_matter_calc_system_momentum(self._p(), state._p(), ctypes.byref(h)))
        return _arrays.spatial_out(h)

    # ---- mass matrix, inverse dynamics, Jacobians --------------------------------------
    def mass_matrix(self, state, out=None):
        """M, nu x nu (Position)."""
        nu = state.nu
        M = _arrays.out_array(out, (nu, nu))
        check(lib.mbk_matter_calc_mass_matrix(self._p(), state._p(), M.ctypes.data))
        return M

    def multiply_by_M(self, state, v):
        nu = state.nu
        v = _arrays.f64(v, nu, "v")
        out = _empty(nu)
        check(lib.mbk_matter_multiply_by_M(self._p(), state._p(), v.ctypes.data, out.ctypes.data))
        return out

    def multiply_by_M_inverse(self, state, v):
        nu = state.nu
        v = _arrays.f64(v, nu, "v")
        out = _empty(nu)
        check(lib.mbk_matter_multiply_by_M_inverse(self._p(), state._p(), v.ctypes.data,
                                                   out.ctypes.data))
        return out

    def residual_forces(self, state, known_udot=None, mobility_forces=None, body_forces=None):
        """Inverse dynamics: M udot + C(q, u) - mobility_forces - J^T body_forces,
        applying only the forces passed in (Velocity)."""
        nu, nb = state.nu, self.num_bodies
        a = None if known_udot is None else _arrays.f64(known_udot, nu, "known_udot")
        f = None if mobility_forces is None else _arrays.f64(mobility_forces, nu, "mobility_forces")
        F = None if body_forces is None else _arrays.f64_2d(body_forces, nb, 6, "body_forces")
        out = _empty(nu)
        check(lib.mbk_matter_calc_residual_force(self._p(), state._p(),
                                                 None if f is None else f.ctypes.data,
                                                 None if F is None else F.ctypes.data,
                                                 None if a is None else a.ctypes.data,
                                                 out.ctypes.data))
        return out

    def kinetic_energy(self, state):
        ke = ctypes.c_double()
        check(lib.mbk_matter_calc_kinetic_energy(self._p(), state._p(), ctypes.byref(ke)))
        return ke.value

    def system_jacobian(self, state):
        """J, (6 nb) x nu: rows 6b..6b+5 give (w, v) of body b (Position)."""
        nu, nb = state.nu, self.num_bodies
        J = _empty((6 * nb, nu))
        check(lib.mbk_matter_calc_system_jacobian(self._p(), state._p(), J.ctypes.data))
        return J

    def multiply_by_system_jacobian(self, state, u):
        """J u as an (nb, 6) array of body velocities."""
        u = _arrays.f64(u, state.nu, "u")
        out = _empty((self.num_bodies, 6))
        check(lib.mbk_matter_multiply_by_system_jacobian(self._p(), state._p(), u.ctypes.data,
                                                         out.ctypes.data))
        return out

    def multiply_by_system_jacobian_transpose(self, state, F):
        """J^T F for body spatial forces F (nb, 6)."""
        F = _arrays.f64_2d(F, self.num_bodies, 6, "F")
        out = _empty(state.nu)
        check(lib.mbk_matter_multiply_by_system_jacobian_transpose(self._p(), state._p(),
                                                                   F.ctypes.data, out.ctypes.data))
        return out

    def station_jacobian(self, state, body, station):
        """3 x nu: the velocity in G of a body-fixed point (Position)."""
        J = _empty((3, state.nu))
        check(lib.mbk_matter_calc_station_jacobian(self._p(), state._p(), int(body),
                                                   _finite_vec3(station, "station"),
                                                   J.ctypes.data))
        return J

    # ---- kinematic coupling and constraint operators (include/mbk/external.h) ----------
    def multiply_by_N(self, state, v, transpose=False):
        nq, nu = self.num_q(state), state.nu
        n_in, n_out = (nq, nu) if transpose else (nu, nq)
        v = _arrays.f64(v, n_in, "v")
        out = _empty(n_out)
        check(lib.mbk_matter_multiply_by_N(self._p(), state._p(), bool(transpose), v.ctypes.data,
                                           out.ctypes.data))
        return out

    def multiply_by_N_pinv(self, state, v, transpose=False):
        nq, nu = self.num_q(state), state.nu
        n_in, n_out = (nu, nq) if transpose else (nq, nu)
        v = _arrays.f64(v, n_in, "v")
        out = _empty(n_out)
        check(lib.mbk_matter_multiply_by_N_pinv(self._p(), state._p(), bool(transpose),
                                                v.ctypes.data, out.ctypes.data))
        return out

    def _m(self, state):
        return check(lib.mbk_state_get_num_multipliers(state._p()))

    def G(self, state):
        """The constraint matrix G, m x nu (Velocity)."""
        G = _empty((self._m(state), state.nu))
        check(lib.mbk_matter_calc_G(self._p(), state._p(), G.ctypes.data))
        return G

    def multiply_by_G(self, state, v):
        v = _arrays.f64(v, state.nu, "v")
        out = _empty(self._m(state))
        check(lib.mbk_matter_multiply_by_G(self._p(), state._p(), v.ctypes.data, out.ctypes.data))
        return out

    def multiply_by_G_transpose(self, state, lam):
        lam = _arrays.f64(lam, self._m(state), "lambda")
        out = _empty(state.nu)
        check(lib.mbk_matter_multiply_by_G_transpose(self._p(), state._p(), lam.ctypes.data,
                                                     out.ctypes.data))
        return out

    def constraint_bias(self, state):
        out = _empty(self._m(state))
        check(lib.mbk_matter_calc_constraint_bias(self._p(), state._p(), out.ctypes.data))
        return out

    def constraint_rank(self, state):
        """(rank, m) of the last acceleration solve."""
        r, m = ctypes.c_int(), ctypes.c_int()
        check(lib.mbk_matter_get_constraint_rank(self._p(), state._p(), ctypes.byref(r),
                                                 ctypes.byref(m)))
        return r.value, m.value

    def constraint_forces_from_multipliers(self, state, lam):
        """(body_forces (nb, 6), mobility_forces (nu,)) = -G^T lambda split."""
        lam = _arrays.f64(lam, self._m(state), "lambda")
        bf, mf = _empty((self.num_bodies, 6)), _empty(state.nu)
        check(lib.mbk_matter_calc_constraint_forces_from_multipliers(
            self._p(), state._p(), lam.ctypes.data, bf.ctypes.data, mf.ctypes.data))
        return bf, mf

    def udot_given_multipliers(self, state, lam):
        lam = _arrays.f64(lam, self._m(state), "lambda")
        out = _empty(state.nu)
        check(lib.mbk_matter_calc_udot_given_multipliers(self._p(), state._p(), lam.ctypes.data,
                                                         out.ctypes.data))
        return out

    def select_independent_constraints(self, state):
        m = self._m(state)
        rows = np.zeros(max(1, m), dtype=np.intc)
        n = ctypes.c_int()
        check(lib.mbk_matter_select_independent_constraints(self._p(), state._p(),
                                                            rows.ctypes.data, ctypes.byref(n)))
        return rows[:n.value].copy()

    # ---- constraints --------------------------------------------------------------
    def add_rod(self, b1, s1, b2, s2, length):
        return check(lib.mbk_constraint_add_rod(self._p(), int(b1), _vec3(s1), int(b2), _vec3(s2),
                                                float(length)))

    def add_ball_constraint(self, b1, s1, b2, s2):
        return check(lib.mbk_constraint_add_ball(self._p(), int(b1), _vec3(s1), int(b2), _vec3(s2)))

    def add_weld_constraint(self, b1, X_B1F, b2, X_B2M):
        X1, X2 = transform_c(X_B1F), transform_c(X_B2M)
        return check(lib.mbk_constraint_add_weld(self._p(), int(b1), ctypes.byref(X1), int(b2),
                                                 ctypes.byref(X2)))

    def add_point_in_plane(self, plane_body, normal, height, follower, station):
        return check(lib.mbk_constraint_add_point_in_plane(
            self._p(), int(plane_body), _vec3(normal), float(height), int(follower),
            _vec3(station)))

    def add_point_on_line(self, line_body, direction, point, follower, station):
        return check(lib.mbk_constraint_add_point_on_line(
            self._p(), int(line_body), _vec3(direction), _vec3(point), int(follower),
            _vec3(station)))

    def add_constant_angle(self, base, base_axis, follower, follower_axis, angle):
        return check(lib.mbk_constraint_add_constant_angle(
            self._p(), int(base), _vec3(base_axis), int(follower), _vec3(follower_axis),
            float(angle)))

    def add_constant_orientation(self, b1, R_B1F, b2, R_B2M):
        R1, R2 = _arrays.mat33(R_B1F), _arrays.mat33(R_B2M)
        return check(lib.mbk_constraint_add_constant_orientation(
            self._p(), int(b1), ctypes.byref(R1), int(b2), ctypes.byref(R2)))

    def add_constant_speed(self, body, u_index, speed):
        return check(lib.mbk_constraint_add_constant_speed(self._p(), int(body), int(u_index),
                                                           float(speed)))

    def add_constant_acceleration(self, body, u_index, acceleration):
        return check(lib.mbk_constraint_add_constant_acceleration(self._p(), int(body),
                                                                  int(u_index),
                                                                  float(acceleration)))

    def add_no_slip_1d(self, case_body, point, direction, b0, b1):
        return check(lib.mbk_constraint_add_no_slip_1d(self._p(), int(case_body), _vec3(point),
                                                       _vec3(direction), int(b0), int(b1)))

    def _coupler(self, fn, f, bodies, within):
        bodies, within = list(bodies), list(within)
        if len(bodies) != len(within):
            raise invalid("bodies and coordinate indices differ in length")
        b = (ctypes.c_int * max(1, len(bodies)))(*bodies)
        w = (ctypes.c_int * max(1, len(within)))(*within)
        return check(fn(self._p(), f._make(), ctypes.addressof(b), ctypes.addressof(w),
                        len(bodies)))

    def add_coordinate_coupler(self, function, bodies, q_within_body):
        """function(q_1..q_n) = 0 over coordinate q_within_body[i] of bodies[i]."""
        return self._coupler(lib.mbk_constraint_add_coordinate_coupler, function, bodies,
                             q_within_body)

    def add_speed_coupler(self, function, bodies, u_within_body):
        return self._coupler(lib.mbk_constraint_add_speed_coupler, function, bodies,
                             u_within_body)

    def add_prescribed_motion(self, function, body, q_within_body):
        """q = function(t) for one coordinate."""
        return check(lib.mbk_constraint_add_prescribed_motion(self._p(), function._make(),
                                                              int(body), int(q_within_body)))

    @property
    def num_constraints(self):
        return lib.mbk_matter_get_num_constraints(self._p())

    def set_constraint_enabled(self, state, constraint, on):
        check(lib.mbk_constraint_set_enabled(self._p(), state._w(), int(constraint), bool(on)))

    def is_constraint_enabled(self, state, constraint):
        return bool(lib.mbk_constraint_is_enabled(self._p(), state._p(), int(constraint)))

    def constraint_num_equations(self, constraint):
        """(mp, mv, ma)."""
        a, b, c = ctypes.c_int(), ctypes.c_int(), ctypes.c_int()
        check(lib.mbk_constraint_get_num_equations(self._p(), int(constraint), ctypes.byref(a),
                                                   ctypes.byref(b), ctypes.byref(c)))
        return a.value, b.value, c.value

    def constraint_multipliers(self, state, constraint):
        n = sum(self.constraint_num_equations(constraint))
        out = _empty(max(1, n))
        check(lib.mbk_constraint_get_multipliers(self._p(), state._p(), int(constraint),
                                                 out.ctypes.data))
        return out[:n]

    def constraint_reaction_forces(self, state, constraint):
        """(body_forces (nb, 6), mobility_forces (nu,)) the constraint applies."""
        bf, mf = _empty((self.num_bodies, 6)), _empty(state.nu)
        check(lib.mbk_constraint_calc_reaction_forces(self._p(), state._p(), int(constraint),
                                                      bf.ctypes.data, mf.ctypes.data))
        return bf, mf


class Forces:
    """A general force subsystem: built-in elements, and elements written in Python."""

    def __init__(self, system, ptr):
        self.system, self._ptr = system, ptr

    def _p(self):
        self.system._p()
        return self._ptr

    @property
    def subsystem_index(self):
        return lib.mbk_forces_get_subsystem_index(self._p())

    @property
    def num_elements(self):
        return lib.mbk_forces_get_num_elements(self._p())

    def _named(self, index, name):
        if name is not None:
            self.set_name(index, name)
        return index

    # ---- built-in elements ---------------------------------------------------------
    def add_gravity(self, g, name=None):
        return self._named(check(lib.mbk_force_add_gravity(self._p(), _vec3(g, "g"))), name)

    def add_two_point_linear_spring(self, b1, s1, b2, s2, k, x0, name=None):
        return self._named(check(lib.mbk_force_add_two_point_linear_spring(
            self._p(), int(b1), _vec3(s1), int(b2), _vec3(s2), float(k), float(x0))), name)

    def add_two_point_linear_damper(self, b1, s1, b2, s2, c, name=None):
        return self._named(check(lib.mbk_force_add_two_point_linear_damper(
            self._p(), int(b1), _vec3(s1), int(b2), _vec3(s2), float(c))), name)

    def add_two_point_constant_force(self, b1, s1, b2, s2, force, name=None):
        return self._named(check(lib.mbk_force_add_two_point_constant_force(
            self._p(), int(b1), _vec3(s1), int(b2), _vec3(s2), float(force))), name)

    def add_mobility_linear_spring(self, body, q_index, k, q0, name=None):
        return self._named(check(lib.mbk_force_add_mobility_linear_spring(
            self._p(), int(body), int(q_index), float(k), float(q0))), name)

    def add_mobility_linear_damper(self, body, u_index, c, name=None):
        return self._named(check(lib.mbk_force_add_mobility_linear_damper(
            self._p(), int(body), int(u_index), float(c))), name)

    def add_mobility_constant_force(self, body, u_index, force, name=None):
        return self._named(check(lib.mbk_force_add_mobility_constant_force(
            self._p(), int(body), int(u_index), float(force))), name)

    def add_mobility_linear_stop(self, body, q_index, stiffness, dissipation, q_low, q_high,
                                 name=None):
        return self._named(check(lib.mbk_force_add_mobility_linear_stop(
            self._p(), int(body), int(q_index), float(stiffness), float(dissipation),
            float(q_low), float(q_high))), name)

    def add_mobility_coulomb_friction(self, body, u_index, friction, transition_velocity,
                                      name=None):
        return self._named(check(lib.mbk_force_add_mobility_coulomb_friction(
            self._p(), int(body), int(u_index), float(friction), float(transition_velocity))),
            name)

    def add_constant_force(self, body, station, force_G, name=None):
        return self._named(check(lib.mbk_force_add_constant_force(
            self._p(), int(body), _vec3(station), _vec3(force_G))), name)

    def add_constant_torque(self, body, torque_G, name=None):
        return self._named(check(lib.mbk_force_add_constant_torque(
            self._p(), int(body), _vec3(torque_G))), name)

    def add_linear_bushing(self, b1, X_B1F, b2, X_B2M, stiffness, damping, name=None):
        X1, X2 = transform_c(X_B1F), transform_c(X_B2M)
        k = _arrays.f64(stiffness, 6, "stiffness")
        c = _arrays.f64(damping, 6, "damping")
        return self._named(check(lib.mbk_force_add_linear_bushing(
            self._p(), int(b1), ctypes.byref(X1), int(b2), ctypes.byref(X2), k.ctypes.data,
            c.ctypes.data)), name)

    def add_hunt_crossley_sphere(self, body, center, radius, height, params, name=None):
        """params = (E, dissipation, static, dynamic, viscous friction, transition velocity)."""
        p = _arrays.f64(params, 6, "params")
        return self._named(check(lib.mbk_force_add_hunt_crossley_sphere(
            self._p(), int(body), _vec3(center), float(radius), float(height), p.ctypes.data)),
            name)

    def hunt_crossley_sphere(self, force):
        """(body, center, radius, height) of a Hunt-Crossley element."""
        b, c, r, h = ctypes.c_int(), _capi.Vec3(), ctypes.c_double(), ctypes.c_double()
        check(lib.mbk_force_get_hunt_crossley_sphere(self._p(), int(force), ctypes.byref(b),
                                                     ctypes.byref(c), ctypes.byref(r),
                                                     ctypes.byref(h)))
        return b.value, _arrays.vec3_out(c), r.value, h.value

    # ---- a force element written in Python -------------------------------------------
    def add_custom(self, calc_force, potential_energy=None, depends_only_on_positions=False,
                   name="python force"):
        """An element whose forces a Python function computes, called by the kernel
        at Dynamics stage:

            calc_force(state, body_forces, mobility_forces)

        state is the (read-only) State being realized; body_forces an (nb, 6) view
        (moment about the body origin, force; in Ground; Ground at row 0) and
        mobility_forces an (nu,) view of the accumulators: ADD to them in place
        (`body_forces[b, 3:] += f`). potential_energy(state) -> float is optional.
        An exception raised inside reaches the caller of the C call as itself.
        Returns the element's index."""
        if not isinstance(name, str):
            raise invalid("name must be a str, got %r" % (name,))
        cf, pe = _callbacks.force(self.system, calc_force, potential_energy, name)
        nm = name.encode()
        ops = _capi.ForceOps()
        ops.name = nm
        ops.calc_force = cf
        ops.calc_potential_energy = pe
        ops.depends_only_on_positions = bool(depends_only_on_positions)
        idx = check(lib.mbk_force_add_custom(self._p(), ctypes.byref(ops), None))
        self.system._keep(cf, pe, nm, ops)
        return self._named(idx, name)

    # ---- per-State parameters --------------------------------------------------------
    def set_enabled(self, state, force, on):
        check(lib.mbk_force_set_enabled(self._p(), state._w(), int(force), bool(on)))

    def is_enabled(self, state, force):
        return bool(lib.mbk_force_is_enabled(self._p(), state._p(), int(force)))

    def num_parameters(self, force):
        return check(lib.mbk_force_get_num_parameters(self._p(), int(force)))

    def parameters(self, state, force):
        n = self.num_parameters(force)
        out = _empty(max(1, n))
        check(lib.mbk_force_get_parameters(self._p(), state._p(), int(force), out.ctypes.data, n))
        return out[:n]

    def set_parameters(self, state, force, values):
        n = self.num_parameters(force)
        v = _arrays.f64(values, n, "parameters")
        check(lib.mbk_force_set_parameters(self._p(), state._w(), int(force), v.ctypes.data, n))

    def set_gravity(self, state, force, g):
        check(lib.mbk_force_set_gravity(self._p(), state._w(), int(force), _vec3(g, "g")))

    def set_name(self, force, name):
        check(lib.mbk_force_set_name(self._p(), int(force), name.encode()))

    def find(self, name):
        return lib.mbk_force_find(self._p(), name.encode())

    def potential_energy(self, state, force):
        pe = ctypes.c_double()
        check(lib.mbk_force_calc_potential_energy(self._p(), state._p(), int(force),
                                                  ctypes.byref(pe)))
        return pe.value

    def dissipated_energy(self, state, force):
        e = ctypes.c_double()
        check(lib.mbk_force_get_dissipated_energy(self._p(), state._p(), int(force),
                                                  ctypes.byref(e)))
        return e.value
