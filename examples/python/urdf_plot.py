"""Load a URDF robot, integrate it, and plot its joint angles.

Loads tests/urdf/arm7.urdf (a 7-joint arm; any URDF path may be given as the
first argument), releases it from a bent pose under gravity with CVODE, records
q at 100 Hz through a periodic reporter and writes a plot of every joint angle
to urdf_q.png (matplotlib with the Agg backend: no display needed) in the
current directory, or to the path given as the second argument."""
import os
import sys

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402
import numpy as np  # noqa: E402

import mbk  # noqa: E402

HERE = os.path.dirname(os.path.abspath(__file__))


def main():
    path = sys.argv[1] if len(sys.argv) > 1 else os.path.join(HERE, "..", "..", "tests", "urdf",
                                                              "arm7.urdf")
    out = sys.argv[2] if len(sys.argv) > 2 else "urdf_q.png"
    system = mbk.load_urdf(path)
    for w in system.warnings:
        print("warning:", w)
    times, qs = [], []
    system.add_periodic_reporter(0.01, lambda s: (times.append(s.t), qs.append(s.q.copy())))
    state = system.new_state()
    state.q = 0.3 * np.ones(state.nq)
    integrator = mbk.Integrator(system, "cvode_bdf", accuracy=1e-6).initialize(state)
    integrator.step_to(2.0)
    q = np.array(qs)
    matter = system.matter
    fig, ax = plt.subplots(figsize=(8, 4.5))
    for b in range(1, matter.num_bodies):
        sl = matter.body_q(state, b)
        if sl.stop > sl.start:
            ax.plot(times, q[:, sl.start], label=system.urdf_joint_name(b) or "body %d" % b)
    ax.set_xlabel("t (s)")
    ax.set_ylabel("q (rad or m)")
    ax.set_title("%s: %d joints under gravity (%s)" % (system.urdf_robot_name, state.nq,
                                                        integrator.name))
    ax.legend(fontsize="small", ncol=2)
    fig.tight_layout()
    fig.savefig(out, dpi=100)
    print("%s: %d bodies, %d reports, %d steps; plot in %s"
          % (system.urdf_robot_name, matter.num_bodies, len(times),
             integrator.stats["steps_taken"], out))
    return 0 if len(times) == 200 and os.path.getsize(out) > 0 else 1


if __name__ == "__main__":
    sys.exit(main())
