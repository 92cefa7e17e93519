"""Build a pendulum in code, integrate it, check energy.

A 3-link planar pendulum (Pin joints about z, links along -y), released from
rest at 60 degrees: RK-Merson to t = 5 s, printing q at every second from a
periodic reporter, and the energy drift at the end (exit status 1 if the
drift exceeds 1e-6)."""
import math
import sys

import mbk


def build(n_links=3):
    system = mbk.MultibodySystem("%d-link pendulum" % n_links)
    link = mbk.MassProps(1.0, com=(0, -0.5, 0), inertia=(1 / 12, 0.001, 1 / 12))
    parent = 0
    for i in range(n_links):
        parent = system.matter.add_body(parent, link, mbk.Pin(),
                                        X_PF=(0, 0, 0) if i == 0 else (0, -1, 0),
                                        name="link%d" % (i + 1))
    system.forces.add_gravity((0, -9.81, 0))
    return system


def main():
    system = build()
    system.add_periodic_reporter(1.0, lambda s: print("t = %.1f  q = %s" % (s.t, s.q.round(4))))
    state = system.new_state()
    state.q = [math.radians(60), 0, 0]
    integrator = mbk.Integrator(system, "rkmerson", accuracy=1e-9).initialize(state)
    e0 = sum(system.energy(integrator.state))
    integrator.step_to(5.0)
    e1 = sum(system.energy(integrator.state))
    drift = abs(e1 - e0) / abs(e0)
    stats = integrator.stats
    print("%s: %d steps, %d right-hand sides, energy %.9f -> %.9f J (drift %.1e)"
          % (integrator.name, stats["steps_taken"], stats["rhs_evaluations"], e0, e1, drift))
    return 0 if drift < 1e-6 else 1


if __name__ == "__main__":
    sys.exit(main())
