"""The C ABI of libmbk as ctypes declarations (internal).

Finding the library, in order:
  1. the environment variable MBK_LIBRARY (a path to libmbk.so*);
  2. the copy inside the package (mbk/_lib/libmbk.so.N), put there by the wheel;
  3. a build tree beside the package source (<repo>/build/libmbk.so) when the
     package is used from the repository (PYTHONPATH=python);
  4. the system's libmbk.so.0 (ldconfig, LD_LIBRARY_PATH).

Every function is declared once, here, with its argument and result types,
so a call converts nothing beyond what ctypes does for ints, doubles and
addresses. Arrays are passed as integer addresses (c_void_p), never as
ndpointer, which would check flags on each call: the wrappers check shapes
and dtypes themselves. Functions that are not in the library that was
loaded (an older build) are left out: `has(name)` tells.
"""
import ctypes
import ctypes.util
import os
from ctypes import (CFUNCTYPE, POINTER, Structure, c_bool, c_char_p, c_double, c_int, c_long,
                    c_size_t, c_uint32, c_uint64, c_void_p)

__all__ = ["lib", "has", "library_path"]


def _candidates():
    env = os.environ.get("MBK_LIBRARY")
    if env:
        yield env
        return
    here = os.path.dirname(os.path.abspath(__file__))
    libdir = os.path.join(here, "_lib")
    if os.path.isdir(libdir):
        for name in sorted(os.listdir(libdir)):
            if name.startswith("libmbk.so"):
                yield os.path.join(libdir, name)
    repo = os.path.dirname(os.path.dirname(here))
    if os.path.isfile(os.path.join(repo, "include", "mbk", "mbk.h")):
        for build in ("build", "build-python"):
            path = os.path.join(repo, build, "libmbk.so")
            if os.path.exists(path):
                yield path
    found = ctypes.util.find_library("mbk")
    yield found or "libmbk.so.0"


def _load():
    errors = []
    for path in _candidates():
        try:
            return ctypes.CDLL(path), path
        except OSError as e:
            errors.append("%s: %s" % (path, e))
    raise ImportError("mbk: cannot load libmbk (set MBK_LIBRARY to its path): " + "; ".join(errors))


lib, library_path = _load()

# ---- value types (include/mbk/spatial.h and others) --------------------------


class Vec3(Structure):
    _fields_ = [("x", c_double), ("y", c_double), ("z", c_double)]


class Mat33(Structure):
    _fields_ = [("m", (c_double * 3) * 3)]


class Transform(Structure):
    _fields_ = [("R", Mat33), ("p", Vec3)]


class SpatialVec(Structure):
    _fields_ = [("w", Vec3), ("v", Vec3)]


class MassProps(Structure):
    _fields_ = [("mass", c_double), ("com", Vec3), ("inertia", Mat33)]


class Mobilizer(Structure):
    _fields_ = [("ops", c_void_p), ("impl", c_void_p)]


class Function(Structure):
    _fields_ = [("ops", c_void_p), ("impl", c_void_p)]


class EventResult(Structure):
    _fields_ = [("lowest_modified", c_int), ("terminate", c_bool)]


class IntegratorSettings(Structure):
    _fields_ = [("accuracy", c_double), ("rel_tol", c_double), ("abs_tol", c_double),
                ("constraint_tol", c_double), ("event_tol", c_double), ("fixed_step", c_double),
                ("initial_step", c_double), ("min_step", c_double), ("max_step", c_double),
                ("max_steps", c_long), ("use_system_jacobian", c_bool),
                ("project_error_estimate", c_bool), ("jacobian_source", c_int)]


STATS_FIELDS = ("steps_taken", "steps_attempted", "rhs_evaluations", "error_test_failures",
                "convergence_failures", "projections", "events_handled", "realization_failures",
                "reinitializations", "jacobian_evaluations", "witness_evaluations", "reports")


class IntegratorStats(Structure):
    _fields_ = [(n, c_long) for n in STATS_FIELDS]


class WitnessInfo(Structure):
    _fields_ = [("subsystem", c_int), ("event_id", c_int), ("stage", c_int), ("direction", c_int),
                ("reporter", c_bool)]


class DaeOptions(Structure):
    _fields_ = [("form", c_int), ("rows", POINTER(c_int)), ("n_rows", c_int)]


class DaeLayout(Structure):
    _fields_ = [(n, c_int) for n in ("n", "ny", "nq", "nu", "nz", "nlambda", "nmu", "np", "nv",
                                     "na", "m")]


MESSAGE_FN = CFUNCTYPE(None, c_void_p, c_char_p)


class UrdfOptions(Structure):
    _fields_ = [("floating_base", c_bool), ("gravity", Vec3), ("limits_as_stops", c_bool),
                ("stop_stiffness", c_double), ("stop_dissipation", c_double),
                ("damping_as_dampers", c_bool), ("mimic_as_couplers", c_bool),
                ("realize_topology", c_bool), ("max_bytes", c_size_t), ("source_name", c_char_p),
                ("warning", MESSAGE_FN), ("warning_user", c_void_p),
                ("error", MESSAGE_FN), ("error_user", c_void_p),
                ("strict_inertia", c_bool), ("min_mass", c_double), ("min_inertia", c_double),
                ("balance_inertia", c_bool), ("friction_as_elements", c_bool),
                ("friction_transition_velocity", c_double), ("ground_contact", c_bool),
                ("ground_height", c_double), ("contact_modulus", c_double),
                ("contact_dissipation", c_double), ("contact_static_friction", c_double),
                ("contact_dynamic_friction", c_double), ("contact_viscous_friction", c_double),
                ("contact_transition_velocity", c_double), ("contact_point_radius", c_double)]


# ---- callback types ------------------------------------------------------------
REALIZE_FN = CFUNCTYPE(c_int, c_void_p, c_void_p, c_void_p)
CALC_FORCE_FN = CFUNCTYPE(c_int, c_void_p, c_void_p, c_void_p, c_void_p, c_void_p)
CALC_PE_FN = CFUNCTYPE(c_int, c_void_p, c_void_p, c_void_p, POINTER(c_double))
DESTROY_FN = CFUNCTYPE(None, c_void_p)
WITNESS_FN = CFUNCTYPE(c_double, c_void_p, c_void_p, c_void_p)
HANDLER_FN = CFUNCTYPE(c_int, c_void_p, c_void_p, c_void_p, POINTER(EventResult))
REPORTER_FN = CFUNCTYPE(None, c_void_p, c_void_p, c_void_p)
# ensemble.h: member init (user, sys, member, state) and done (user, sys, member, state, status)
MEMBER_INIT_FN = CFUNCTYPE(c_int, c_void_p, c_void_p, c_int, c_void_p)
MEMBER_DONE_FN = CFUNCTYPE(c_int, c_void_p, c_void_p, c_int, c_void_p, c_int)


# forces.h: calc_jacobian(impl, ctx, state, df_dq, ldq, df_du, ldu)
CALC_JACOBIAN_FN = CFUNCTYPE(c_int, c_void_p, c_void_p, c_void_p, c_void_p, c_int, c_void_p, c_int)


class ForceOps(Structure):
    """mbk_force_ops, field for field: mbk_force_add_custom copies the whole struct, so
    a missing trailing field would be read from whatever follows (calc_jacobian stays
    NULL: the kernel differentiates the element by central differences)."""
    _fields_ = [("name", c_char_p), ("calc_force", CALC_FORCE_FN),
                ("calc_potential_energy", CALC_PE_FN), ("depends_only_on_positions", c_bool),
                ("realize_topology", REALIZE_FN), ("realize_model", REALIZE_FN),
                ("realize_instance", REALIZE_FN), ("destroy", DESTROY_FN),
                ("calc_jacobian", CALC_JACOBIAN_FN)]


# ---- prototypes ---------------------------------------------------------------
P = c_void_p      # any handle or array address
I = c_int
D = c_double
B = c_bool
S = c_char_p
PD = POINTER(c_double)
PI = POINTER(c_int)
PV3 = POINTER(Vec3)
PX = POINTER(Transform)
PSV = POINTER(SpatialVec)
PMP = POINTER(MassProps)
PM33 = POINTER(Mat33)
PER = POINTER(EventResult)

_PROTOTYPES = {
    # status.h, version.h, alloc.h, stage.h
    "mbk_status_name": (S, [I]),
    "mbk_last_status": (I, []),
    "mbk_last_error": (S, []),
    "mbk_clear_error": (None, []),
    "mbk_find_nonfinite": (I, [P, I]),
    "mbk_set_error": (I, [I, S, S]),
    "mbk_version": (S, []),
    "mbk_get_allocation_count": (c_long, []),
    "mbk_stage_name": (S, [I]),
    # system.h
    "mbk_system_create": (P, [S]),
    "mbk_system_destroy": (None, [P]),
    "mbk_system_get_name": (S, [P]),
    "mbk_system_get_num_subsystems": (I, [P]),
    "mbk_system_get_subsystem_name": (S, [P, I]),
    "mbk_system_invalidate_topology": (None, [P]),
    "mbk_system_is_topology_realized": (B, [P]),
    "mbk_system_get_topology_version": (c_long, [P]),
    "mbk_system_realize_topology": (I, [P]),
    "mbk_system_get_default_state": (P, [P]),
    "mbk_system_realize": (I, [P, P, I]),
    "mbk_system_check_state": (I, [P, P]),
    "mbk_system_calc_energy": (I, [P, P, PD, PD]),
    "mbk_system_calc_ydot": (I, [P, P, D, P, P]),
    "mbk_system_set_y_and_realize": (I, [P, P, D, P, I]),
    "mbk_system_project": (I, [P, P, D]),
    # state.h
    "mbk_state_create": (P, []),
    "mbk_state_destroy": (None, [P]),
    "mbk_state_init": (I, [P, P]),
    "mbk_state_copy": (I, [P, P]),
    "mbk_state_get_size_in_bytes": (c_size_t, [P]),
    "mbk_state_get_stage": (I, [P]),
    "mbk_state_get_subsystem_stage": (I, [P, I]),
    "mbk_state_get_num_subsystems": (I, [P]),
    "mbk_state_get_stage_version": (c_long, [P, I, I]),
    "mbk_state_invalidate": (I, [P, I]),
    "mbk_state_get_time": (D, [P]),
    "mbk_state_set_time": (I, [P, D]),
    "mbk_state_get_nq": (I, [P]),
    "mbk_state_get_nu": (I, [P]),
    "mbk_state_get_nz": (I, [P]),
    "mbk_state_get_ny": (I, [P]),
    "mbk_state_get_nqerr": (I, [P]),
    "mbk_state_get_nuerr": (I, [P]),
    "mbk_state_get_nudoterr": (I, [P]),
    "mbk_state_get_num_multipliers": (I, [P]),
    "mbk_state_get_num_event_triggers": (I, [P, I]),
    "mbk_state_get_event_triggers": (P, [P, I]),
    "mbk_state_get_subsystem_q_start": (I, [P, I]),
    "mbk_state_get_subsystem_u_start": (I, [P, I]),
    "mbk_state_get_subsystem_z_start": (I, [P, I]),
    "mbk_state_get_subsystem_nq": (I, [P, I]),
    "mbk_state_get_subsystem_nu": (I, [P, I]),
    "mbk_state_get_subsystem_nz": (I, [P, I]),
}
for _v in ("q", "u", "z", "y"):
    _PROTOTYPES["mbk_state_get_" + _v] = (P, [P])
    _PROTOTYPES["mbk_state_upd_" + _v] = (P, [P])
    _PROTOTYPES["mbk_state_set_" + _v] = (I, [P, P, I])
for _v in ("qdot", "udot", "zdot", "ydot", "qdotdot", "qerr", "uerr", "udoterr", "multipliers"):
    _PROTOTYPES["mbk_state_get_" + _v] = (P, [P])

_PROTOTYPES.update({
    # events.h
    "mbk_system_add_event_handler": (I, [P, I, I, WITNESS_FN, HANDLER_FN, P]),
    "mbk_system_add_event_reporter": (I, [P, I, I, WITNESS_FN, REPORTER_FN, P]),
    "mbk_system_add_scheduled_event": (I, [P, D, HANDLER_FN, P]),
    "mbk_system_add_periodic_reporter": (I, [P, D, REPORTER_FN, P]),
    "mbk_system_get_events_subsystem": (I, [P]),
    "mbk_system_get_next_report_time": (D, [P, D]),
    # matter.h
    "mbk_multibody_create": (P, [S]),
    "mbk_multibody_upd_matter": (P, [P]),
    "mbk_multibody_get_matter": (P, [P]),
    "mbk_multibody_get_body_forces": (P, [P, P]),
    "mbk_multibody_get_mobility_forces": (P, [P, P]),
    "mbk_matter_add_body": (I, [P, I, PX, PMP, PX, Mobilizer]),
    "mbk_matter_add_body_unrealizable": (I, [P, I, PX, PMP, PX, Mobilizer]),
    "mbk_matter_get_num_bodies": (I, [P]),
    "mbk_matter_get_num_mobilities": (I, [P]),
    "mbk_matter_get_parent": (I, [P, I]),
    "mbk_matter_set_body_name": (I, [P, I, S]),
    "mbk_matter_find_body": (I, [P, S]),
    "mbk_matter_set_use_euler_angles": (I, [P, P, B]),
    "mbk_matter_get_use_euler_angles": (B, [P, P]),
    "mbk_matter_get_body_num_q": (I, [P, P, I]),
    "mbk_matter_get_body_num_u": (I, [P, P, I]),
    "mbk_matter_get_body_q_start": (I, [P, P, I]),
    "mbk_matter_get_body_u_start": (I, [P, P, I]),
    "mbk_matter_get_body_transform": (I, [P, P, I, PX]),
    "mbk_matter_get_body_velocity": (I, [P, P, I, PSV]),
    "mbk_matter_get_body_acceleration": (I, [P, P, I, PSV]),
    "mbk_matter_set_body_q_to_fit_transform": (I, [P, P, I, PX]),
    "mbk_matter_set_body_u_to_fit_velocity": (I, [P, P, I, PSV]),
    "mbk_matter_normalize_quaternions": (I, [P, P]),
    "mbk_matter_calc_mass_matrix": (I, [P, P, P]),
    "mbk_matter_multiply_by_M": (I, [P, P, P, P]),
    "mbk_matter_multiply_by_M_inverse": (I, [P, P, P, P]),
    "mbk_matter_calc_residual_force": (I, [P, P, P, P, P, P]),
    "mbk_matter_calc_kinetic_energy": (I, [P, P, PD]),
    "mbk_matter_calc_system_jacobian": (I, [P, P, P]),
    "mbk_matter_multiply_by_system_jacobian": (I, [P, P, P, P]),
    "mbk_matter_multiply_by_system_jacobian_transpose": (I, [P, P, P, P]),
    "mbk_matter_calc_station_jacobian": (I, [P, P, I, Vec3, P]),
    "mbk_matter_get_station_location": (I, [P, P, I, Vec3, PV3]),
    "mbk_matter_get_station_velocity": (I, [P, P, I, Vec3, PV3]),
    "mbk_matter_get_station_acceleration": (I, [P, P, I, Vec3, PV3]),
    "mbk_matter_get_total_mass": (D, [P]),
    "mbk_matter_get_body_mass_props": (I, [P, I, PMP]),
    "mbk_matter_calc_mass_center_location": (I, [P, P, PV3]),
    "mbk_matter_calc_mass_center_velocity": (I, [P, P, PV3]),
    "mbk_matter_calc_system_momentum": (I, [P, P, PSV]),
    # mobilizer.h
    "mbk_mobilizer_function_based": (Mobilizer, [I, P, P, P, P]),
    "mbk_mobilizer_get_nq": (I, [POINTER(Mobilizer), B]),
    # function.h
    "mbk_function_constant": (Function, [D, I]),
    "mbk_function_linear": (Function, [P, I]),
    "mbk_function_polynomial": (Function, [P, I]),
    "mbk_function_sinusoid": (Function, [D, D, D]),
    "mbk_function_step": (Function, [D, D, D, D]),
    "mbk_function_spline": (Function, [P, P, I]),
    "mbk_function_destroy": (None, [POINTER(Function)]),
    "mbk_function_value": (D, [POINTER(Function), P]),
    "mbk_function_derivative": (D, [POINTER(Function), P, I, P]),
    # forces.h
    "mbk_multibody_upd_forces": (P, [P]),
    "mbk_multibody_add_forces": (P, [P, S]),
    "mbk_forces_get_subsystem_index": (I, [P]),
    "mbk_forces_get_num_elements": (I, [P]),
    "mbk_force_ctx_get_element": (I, [P]),
    "mbk_force_add_custom": (I, [P, POINTER(ForceOps), P]),
    "mbk_force_add_gravity": (I, [P, Vec3]),
    "mbk_force_add_two_point_linear_spring": (I, [P, I, Vec3, I, Vec3, D, D]),
    "mbk_force_add_two_point_linear_damper": (I, [P, I, Vec3, I, Vec3, D]),
    "mbk_force_add_two_point_constant_force": (I, [P, I, Vec3, I, Vec3, D]),
    "mbk_force_add_mobility_linear_spring": (I, [P, I, I, D, D]),
    "mbk_force_add_mobility_linear_damper": (I, [P, I, I, D]),
    "mbk_force_add_mobility_constant_force": (I, [P, I, I, D]),
    "mbk_force_add_mobility_linear_stop": (I, [P, I, I, D, D, D, D]),
    "mbk_force_add_mobility_coulomb_friction": (I, [P, I, I, D, D]),
    "mbk_force_add_constant_force": (I, [P, I, Vec3, Vec3]),
    "mbk_force_add_constant_torque": (I, [P, I, Vec3]),
    "mbk_force_add_linear_bushing": (I, [P, I, PX, I, PX, P, P]),
    "mbk_force_add_hunt_crossley_sphere": (I, [P, I, Vec3, D, D, P]),
    "mbk_force_get_hunt_crossley_sphere": (I, [P, I, PI, PV3, PD, PD]),
    "mbk_force_set_enabled": (I, [P, P, I, B]),
    "mbk_force_is_enabled": (B, [P, P, I]),
    "mbk_force_get_num_parameters": (I, [P, I]),
    "mbk_force_get_parameters": (I, [P, P, I, P, I]),
    "mbk_force_set_parameters": (I, [P, P, I, P, I]),
    "mbk_force_set_gravity": (I, [P, P, I, Vec3]),
    "mbk_force_set_name": (I, [P, I, S]),
    "mbk_force_find": (I, [P, S]),
    "mbk_force_calc_potential_energy": (I, [P, P, I, PD]),
    "mbk_force_get_dissipated_energy": (I, [P, P, I, PD]),
    # constraints.h
    "mbk_constraint_add_rod": (I, [P, I, Vec3, I, Vec3, D]),
    "mbk_constraint_add_ball": (I, [P, I, Vec3, I, Vec3]),
    "mbk_constraint_add_weld": (I, [P, I, PX, I, PX]),
    "mbk_constraint_add_point_in_plane": (I, [P, I, Vec3, D, I, Vec3]),
    "mbk_constraint_add_point_on_line": (I, [P, I, Vec3, Vec3, I, Vec3]),
    "mbk_constraint_add_constant_angle": (I, [P, I, Vec3, I, Vec3, D]),
    "mbk_constraint_add_constant_orientation": (I, [P, I, PM33, I, PM33]),
    "mbk_constraint_add_constant_speed": (I, [P, I, I, D]),
    "mbk_constraint_add_constant_acceleration": (I, [P, I, I, D]),
    "mbk_constraint_add_no_slip_1d": (I, [P, I, Vec3, Vec3, I, I]),
    "mbk_constraint_add_coordinate_coupler": (I, [P, Function, P, P, I]),
    "mbk_constraint_add_speed_coupler": (I, [P, Function, P, P, I]),
    "mbk_constraint_add_prescribed_motion": (I, [P, Function, I, I]),
    "mbk_matter_get_num_constraints": (I, [P]),
    "mbk_constraint_set_enabled": (I, [P, P, I, B]),
    "mbk_constraint_is_enabled": (B, [P, P, I]),
    "mbk_constraint_get_num_equations": (I, [P, I, PI, PI, PI]),
    "mbk_constraint_get_multipliers": (I, [P, P, I, P]),
    "mbk_constraint_calc_reaction_forces": (I, [P, P, I, P, P]),
    "mbk_system_assemble": (I, [P, P, D]),
    "mbk_system_assemble_locked": (I, [P, P, D, P]),
    "mbk_system_project_error_estimate": (I, [P, P, P]),
    "mbk_matter_calc_G": (I, [P, P, P]),
    "mbk_matter_calc_G_transpose_times": (I, [P, P, P, P]),
    "mbk_matter_calc_constraint_bias": (I, [P, P, P]),
    "mbk_matter_get_constraint_rank": (I, [P, P, PI, PI]),
    # integrator.h
    "mbk_integrator_create_cvode": (P, [P, I]),
    "mbk_integrator_create_ida": (P, [P]),
    "mbk_integrator_create_rk4": (P, [P]),
    "mbk_integrator_create_rkmerson": (P, [P]),
    "mbk_integrator_create_semi_explicit_euler": (P, [P]),
    "mbk_integrator_create_explicit_euler": (P, [P]),
    "mbk_integrator_destroy": (None, [P]),
    "mbk_integrator_get_name": (S, [P]),
    "mbk_integrator_set_accuracy": (I, [P, D]),
    "mbk_integrator_set_tolerances": (I, [P, D, D]),
    "mbk_integrator_set_constraint_tolerance": (I, [P, D]),
    "mbk_integrator_set_event_tolerance": (I, [P, D]),
    "mbk_integrator_set_fixed_step": (I, [P, D]),
    "mbk_integrator_set_initial_step": (I, [P, D]),
    "mbk_integrator_set_min_step": (I, [P, D]),
    "mbk_integrator_set_max_step": (I, [P, D]),
    "mbk_integrator_set_max_steps": (I, [P, c_long]),
    "mbk_integrator_set_use_system_jacobian": (I, [P, B]),
    "mbk_integrator_set_jacobian_source": (I, [P, I]),
    "mbk_integrator_set_project_error_estimate": (I, [P, B]),
    "mbk_integrator_get_settings": (I, [P, POINTER(IntegratorSettings)]),
    "mbk_integrator_initialize": (I, [P, P]),
    "mbk_integrator_step_to": (I, [P, D]),
    "mbk_integrator_integrate": (I, [P, D, REPORTER_FN, P]),
    "mbk_integrator_get_state": (P, [P]),
    "mbk_integrator_get_time": (D, [P]),
    "mbk_integrator_get_previous_step_size": (D, [P]),
    "mbk_integrator_get_predicted_step_size": (D, [P]),
    "mbk_integrator_get_stats": (None, [P, POINTER(IntegratorStats)]),
    "mbk_system_calc_dae_residual": (I, [P, P, D, P, P, P]),
    "mbk_system_calc_ydot_jacobian": (I, [P, P, P]),
    # external.h
    "mbk_matter_get_num_q": (I, [P, P]),
    "mbk_matter_get_subsystem_index": (I, [P]),
    "mbk_matter_multiply_by_N": (I, [P, P, B, P, P]),
    "mbk_matter_multiply_by_N_pinv": (I, [P, P, B, P, P]),
    "mbk_matter_multiply_by_G": (I, [P, P, P, P]),
    "mbk_matter_multiply_by_G_transpose": (I, [P, P, P, P]),
    "mbk_matter_calc_constraint_forces_from_multipliers": (I, [P, P, P, P, P]),
    "mbk_matter_calc_udot_given_multipliers": (I, [P, P, P, P]),
    "mbk_system_project_u": (I, [P, P, D]),
    "mbk_matter_select_independent_constraints": (I, [P, P, P, PI]),
    "mbk_system_get_dae_layout": (I, [P, P, POINTER(DaeOptions), POINTER(DaeLayout)]),
    "mbk_system_calc_constrained_dae_residual": (I, [P, P, POINTER(DaeOptions), D, P, P, P]),
    "mbk_system_get_dae_values": (I, [P, P, POINTER(DaeOptions), P, P]),
    "mbk_system_get_num_witnesses": (I, [P, P]),
    "mbk_system_get_witness_info": (I, [P, P, POINTER(WitnessInfo)]),
    "mbk_system_get_witness_stage": (I, [P, P, PI]),
    "mbk_system_get_witnesses": (I, [P, P, P, P]),
    "mbk_system_calc_witnesses": (I, [P, P, D, P, P]),
    "mbk_system_find_witness_crossings": (I, [P, P, P, P, P]),
    "mbk_system_handle_events_at": (I, [P, P, P, P, PER]),
    "mbk_system_call_witness_reporters": (I, [P, P, P]),
    "mbk_system_get_next_scheduled_time": (I, [P, P, PD]),
    # checkpoint.h
    "mbk_system_get_fingerprint": (c_uint64, [P]),
    "mbk_state_save": (I, [P, P, S]),
    "mbk_state_load": (I, [P, P, S]),
    "mbk_state_serialize": (I, [P, P, P, c_size_t, POINTER(c_size_t)]),
    "mbk_state_deserialize": (I, [P, P, P, c_size_t]),
    "mbk_integrator_save": (I, [P, S]),
    "mbk_integrator_load": (I, [P, S]),
    "mbk_integrator_serialize": (I, [P, P, c_size_t, P, c_size_t, POINTER(c_size_t)]),
    "mbk_integrator_deserialize": (I, [P, P, c_size_t]),
    "mbk_integrator_get_checkpoint_name": (I, [P, c_size_t, P, c_size_t]),
    "mbk_integrator_get_checkpoint_app_data": (I, [P, c_size_t, POINTER(c_void_p),
                                                   POINTER(c_size_t)]),
    # urdf.h
    "mbk_urdf_options_default": (UrdfOptions, []),
    "mbk_urdf_load": (I, [S, POINTER(UrdfOptions), POINTER(c_void_p)]),
    "mbk_urdf_load_string": (I, [S, POINTER(UrdfOptions), POINTER(c_void_p)]),
    "mbk_urdf_find_joint": (I, [P, S]),
    "mbk_urdf_get_joint_name": (S, [P, I]),
    "mbk_urdf_get_joint_type": (S, [P, I]),
    "mbk_urdf_get_link_name": (S, [P, I]),
    "mbk_urdf_get_robot_name": (S, [P]),
    "mbk_urdf_get_joint_limits": (I, [P, I, PD, PD]),
    "mbk_urdf_get_num_warnings": (I, [P]),
    "mbk_urdf_get_warning": (S, [P, I]),
    # ensemble.h (DESIGN.md section 13)
    "mbk_ensemble_create": (P, [P, I]),
    "mbk_ensemble_set_integrator": (I, [P, S, D]),
    "mbk_ensemble_set_threads": (I, [P, I]),
    "mbk_ensemble_get_threads": (I, [P]),
    "mbk_ensemble_get_num_members": (I, [P]),
    "mbk_ensemble_run": (I, [P, D, MEMBER_INIT_FN, MEMBER_DONE_FN, P]),
    "mbk_ensemble_skip_member": (I, [P, I]),
    "mbk_ensemble_is_skipped": (B, [P, I]),
    "mbk_ensemble_get_num_skipped": (I, [P]),
    "mbk_ensemble_get_num_run": (I, [P]),
    "mbk_ensemble_get_num_failed": (I, [P]),
    "mbk_ensemble_get_member_stats": (I, [P, I, POINTER(IntegratorStats)]),
    "mbk_ensemble_get_member_initial_state": (P, [P, I]),
    "mbk_ensemble_destroy": (None, [P]),
    "mbk_random_bits": (c_uint64, [c_uint64, c_uint64, c_uint64]),
    "mbk_random_uniform": (D, [c_uint64, c_uint64, c_uint64]),
    "mbk_random_normal": (D, [c_uint64, c_uint64, c_uint64]),
    "mbk_philox4x32": (None, [POINTER(c_uint32), POINTER(c_uint32), POINTER(c_uint32)]),
    # derivatives (mbk/*.h, DESIGN.md section 12): bound when the library has them
    "mbk_system_calc_residual_derivatives": (I, [P, P, P, P, P]),
    "mbk_system_calc_acceleration_derivatives": (I, [P, P, P, P]),
    "mbk_system_add_force_jacobians": (I, [P, P, P, P]),
    "mbk_system_calc_ydot_jacobian_fd": (I, [P, P, P]),
})

MOBILIZERS = ("weld", "pin", "slider", "translation", "ball", "free", "universal", "cylinder",
              "planar", "gimbal", "bushing")
for _m in MOBILIZERS:
    _PROTOTYPES["mbk_mobilizer_" + _m] = (Mobilizer, [])
_PROTOTYPES["mbk_mobilizer_screw"] = (Mobilizer, [D])

_missing = set()
for _name, (_res, _args) in _PROTOTYPES.items():
    try:
        _f = getattr(lib, _name)
    except AttributeError:
        _missing.add(_name)
        continue
    _f.restype = _res
    _f.argtypes = _args


def has(name):
    """True when the loaded libmbk exports the function `name` (and it is declared here)."""
    return name in _PROTOTYPES and name not in _missing


def missing():
    """Declared functions the loaded library lacks (an older or newer build)."""
    return sorted(_missing)
