"""A parameter sweep: the period of a pendulum against its release angle.

One System, many States: the amplitudes run as one mbk.Ensemble (init sets
the angle, on the C worker threads),
and lets a Python event handler (witness q = 0, falling) stop the
integration at the first quarter period. The small-angle limit must agree
with 2 pi sqrt(I / (m g c)) and the period must grow with the amplitude as
the complete elliptic integral says (exit status 1 otherwise). A second sweep
changes a per-State parameter (gravity) without rebuilding anything."""
import math
import sys

import numpy as np
from scipy.special import ellipk

import mbk


def build():
    system = mbk.MultibodySystem("pendulum")
    system.matter.add_body(0, mbk.MassProps(1.0, com=(0, -1, 0), inertia=(0, 0, 0)), mbk.Pin())
    system.forces.add_gravity((0, -9.81, 0), name="gravity")

    def stop(state, result):
        result.terminate = True
    system.add_event_handler(lambda s: s.q[0], stop, stage=mbk.Stage.POSITION,
                             direction=mbk.Direction.FALLING)
    return system


def quarter_period(system, base, angle, g=None):
    s = base.copy()
    s.q = [angle]
    if g is not None:
        system.forces.set_gravity(s, system.forces.find("gravity"), (0, -g, 0))
    ig = mbk.Integrator(system, "rkmerson", accuracy=1e-10, event_tolerance=1e-10)
    ig.initialize(s)
    assert ig.step_to(100.0) == mbk.TERMINATED
    return ig.time


def main():
    system = build()
    base = system.new_state()
    ok = True
    print("amplitude (deg)   period (s)   exact (s)")
    degs = (1, 10, 30, 60, 90, 120, 150)
    # the amplitudes as one mbk.Ensemble: each member's init sets its angle, the
    # handler stops it at q = 0, done reads the time (members run on C threads)
    ens = mbk.Ensemble(system, len(degs), integrator="rkmerson", accuracy=1e-10, threads=2)
    quarters = ens.run(100.0, lambda m, s: setattr(s, "q", [math.radians(degs[m])]),
                       lambda m, s, status: s.t if status == mbk.TERMINATED else math.nan)
    for deg, tq in zip(degs, quarters):
        a = math.radians(deg)
        T = 4 * tq
        exact = 4 * math.sqrt(1.0 / 9.81) * ellipk(math.sin(a / 2) ** 2)
        ok &= abs(T - exact) < 1e-6 * exact
        print("%15d %12.6f %11.6f" % (deg, T, exact))
    print("gravity (m/s^2)   period at 10 deg (s)")
    for g in np.linspace(1.62, 24.8, 4):
        T = 4 * quarter_period(system, base, math.radians(10), g)
        exact = 4 * math.sqrt(1.0 / g) * ellipk(math.sin(math.radians(5)) ** 2)
        ok &= abs(T - exact) < 1e-6 * exact
        print("%15.2f %12.6f" % (g, T))
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
