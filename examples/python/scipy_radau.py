"""Integrate an mbk model with SciPy's Radau, using mbk's Jacobian, and check
the result against mbk's own CVODE.

system.ydot(t, y) is the right-hand side solve_ivp wants (y = [q u z]) and
system.jacobian(t, y) its `jac`. The model is a 5-link 3-D pendulum (Ball
joints, so q holds quaternions and N(q) maps u to qdot) with joint damping:
stiff enough that an implicit method pays off. Exit status 1 if Radau and
CVODE differ by more than 1e-5 at t = 2 s."""
import sys
import time

import numpy as np
from scipy.integrate import solve_ivp

import mbk


def build(n=5):
    system = mbk.MultibodySystem("damped chain")
    link = mbk.MassProps(1.0, com=(0, -0.5, 0), inertia=(1 / 12, 0.01, 1 / 12))
    parent = 0
    for i in range(n):
        parent = system.matter.add_body(parent, link, mbk.Ball(),
                                        X_PF=(0, 0, 0) if i == 0 else (0, -1, 0))
        for k in range(3):
            system.forces.add_mobility_linear_damper(parent, k, 2.0)
    system.forces.add_gravity((0, -9.81, 0))
    return system


def main():
    system = build()
    state = system.new_state()
    m = system.matter
    for b in range(1, m.num_bodies):
        m.set_body_q_to_fit_transform(state, b, mbk.Transform.axis_angle((1, 0, 1), 0.4))
    y0 = np.array(state.y)
    t_end = 2.0

    t0 = time.perf_counter()
    sol = solve_ivp(system.ydot, (0.0, t_end), y0, method="Radau", jac=system.jacobian,
                    rtol=1e-8, atol=1e-10)
    t_radau = time.perf_counter() - t0
    assert sol.success, sol.message

    t0 = time.perf_counter()
    cvode = mbk.Integrator(system, "cvode_bdf", tolerances=(1e-10, 1e-12)).initialize(state)
    cvode.step_to(t_end)
    t_cvode = time.perf_counter() - t0

    # compare positions: quaternions normalized first (mbk normalizes them on every step)
    y_r, y_c = sol.y[:, -1].copy(), np.array(cvode.state.y)
    for b in range(1, m.num_bodies):
        sl = m.body_q(state, b)
        y_r[sl] /= np.linalg.norm(y_r[sl])
        y_c[sl] /= np.linalg.norm(y_c[sl])
    diff = np.max(np.abs(y_r - y_c))
    print("Radau (SciPy, mbk's Jacobian): %d steps, %d ydot calls, %d Jacobians, %.3f s"
          % (len(sol.t) - 1, sol.nfev, sol.njev, t_radau))
    print("CVODE BDF (mbk):               %d steps, %d right-hand sides, %.3f s"
          % (cvode.stats["steps_taken"], cvode.stats["rhs_evaluations"], t_cvode))
    print("max |y_Radau - y_CVODE| at t = %g s: %.2e" % (t_end, diff))
    return 0 if diff < 1e-5 else 1


if __name__ == "__main__":
    sys.exit(main())
