"""bench_drake.py DIR - Drake's MultibodyPlant on the benchmark models, through pydrake.

Reads the models, inputs and mbk's results that `mbk_bench --dump-models DIR` wrote (one
DIR/NAME.txt per plain model), builds each in a MultibodyPlant, checks Drake's forward dynamics,
inverse dynamics and mass matrix against mbk's (1e-9 relative, or it stops with status 1), times
them and writes DIR/drake.csv (model,op,raw_us,overhead_us,us,rel_diff), which the main run of
mbk_bench reads (--drake-csv) for its report.

Drake's wheel carries no C++ headers, so the calls are made from Python. What Python adds is
measured and subtracted: the loop and one bound call per call the operation makes, measured on
`context.get_time()` (a bound call that does no work). The arguments' and results' conversions
between numpy and Eigen stay in the figures.

Model (as bench_model.h): each pin body is a RevoluteJoint about z between a FixedOffsetFrame F on
the parent (X_PF) and one M on the body (X_BM); the free base is Drake's quaternion floating
joint, added when the plant is finalized, whose q = (qw, qx, qy, qz, x, y, z) and
v = (w, v) in World are exactly mbk's free mobilizer's. Gravity is the plant's default
(9.81 along -z), checked against the file's.
"""
import glob
import os
import sys
import time

import numpy as np
from pydrake.common import __file__ as _drake_file  # noqa: F401 (the package is there)
from pydrake.math import RigidTransform, RotationMatrix
from pydrake.multibody.plant import MultibodyPlant
from pydrake.multibody.tree import (FixedOffsetFrame, MultibodyForces, RevoluteJoint, RotationalInertia,
                                    SpatialInertia)

TOL = 1e-9
BATCHES = 7
BATCH_S = 0.03


def read_model(path):
    m = {"bodies": []}
    with open(path) as f:
        for line in f:
            t = line.split()
            if not t:
                continue
            if t[0] == "model":
                m["name"], m["n"], m["nq"], m["nu"] = t[1], int(t[2]), int(t[3]), int(t[4])
            elif t[0] == "gravity":
                m["gravity"] = np.array([float(x) for x in t[1:4]])
            elif t[0] == "body":
                v = [float(x) for x in t[6:]]
                m["bodies"].append({"i": int(t[1]), "parent": int(t[2]), "type": int(t[3]), "q0": int(t[4]),
                                    "u0": int(t[5]), "X_PF": v[0:12], "X_BM": v[12:24], "mass": v[24],
                                    "com": v[25:28], "inertia": v[28:37]})
            else:
                m[t[0]] = np.array([float(x) for x in t[2:]])
    return m


def transform(a):
    R = np.array(a[0:9]).reshape(3, 3)
    return RigidTransform(RotationMatrix(R), np.array(a[9:12]))


def build(m):
    plant = MultibodyPlant(0.0)
    bodies = {0: plant.world_body()}
    joints = {}
    for b in m["bodies"]:
        I = np.array(b["inertia"]).reshape(3, 3)
        M = SpatialInertia.MakeFromCentralInertia(
            b["mass"], np.array(b["com"]),
            RotationalInertia(I[0, 0], I[1, 1], I[2, 2], I[0, 1], I[0, 2], I[1, 2]))
        body = plant.AddRigidBody("b%d" % b["i"], M)
        bodies[b["i"]] = body
        if b["type"] == 1:  # free: Drake adds a quaternion floating joint at Finalize
            if b["parent"] != 0 or not np.allclose(b["X_PF"], [1, 0, 0, 0, 1, 0, 0, 0, 1, 0, 0, 0]) or \
                    not np.allclose(b["X_BM"], [1, 0, 0, 0, 1, 0, 0, 0, 1, 0, 0, 0]):
                sys.exit("bench_drake.py: a free body must be on Ground with identity frames")
            continue
        F = plant.AddFrame(FixedOffsetFrame("F%d" % b["i"], bodies[b["parent"]].body_frame(), transform(b["X_PF"])))
        Mf = plant.AddFrame(FixedOffsetFrame("M%d" % b["i"], body.body_frame(), transform(b["X_BM"])))
        joints[b["i"]] = plant.AddJoint(RevoluteJoint("j%d" % b["i"], F, Mf, [0.0, 0.0, 1.0], 0.0))
    plant.Finalize()
    g = plant.gravity_field().gravity_vector()
    if not np.allclose(g, m["gravity"], rtol=0, atol=1e-15):
        sys.exit("bench_drake.py: gravity %s, the model's %s" % (g, m["gravity"]))
    # mbk q / u index -> Drake's
    qmap = np.zeros(m["nq"], dtype=int)
    vmap = np.zeros(m["nu"], dtype=int)
    for b in m["bodies"]:
        if b["type"] == 1:
            body = bodies[b["i"]]
            q0, v0 = body.floating_positions_start(), body.floating_velocities_start_in_v()
            qmap[b["q0"]:b["q0"] + 7] = np.arange(q0, q0 + 7)
            vmap[b["u0"]:b["u0"] + 6] = np.arange(v0, v0 + 6)
        else:
            j = joints[b["i"]]
            qmap[b["q0"]] = j.position_start()
            vmap[b["u0"]] = j.velocity_start()
    return plant, qmap, vmap


def rel_diff(a, b):
    return float(np.max(np.abs(a - b)) / max(np.max(np.abs(b)), 1e-300))


def per_call(fn):
    """Median time per call of fn() over BATCHES batches of about BATCH_S each, seconds."""
    fn()
    reps = 1
    while True:
        t0 = time.perf_counter()
        for _ in range(reps):
            fn()
        t = time.perf_counter() - t0
        if t >= 0.5 * BATCH_S:
            break
        reps *= 2 if t <= 0 else max(2, min(1000, int(BATCH_S / t)))
    reps = max(1, int(reps * BATCH_S / t))
    times = []
    for _ in range(BATCHES):
        t0 = time.perf_counter()
        for _ in range(reps):
            fn()
        times.append((time.perf_counter() - t0) / reps)
    return float(np.median(times))


def main():
    if len(sys.argv) != 2:
        sys.exit("usage: bench_drake.py DIR")
    d = sys.argv[1]
    import pydrake
    version = "?"
    try:
        from importlib.metadata import version as pkg_version
        version = pkg_version("drake")
    except Exception:  # noqa: BLE001 (the version is only a label)
        pass
    rows = []
    call_s = None
    order = ["chain1", "chain10", "chain30", "chain100", "chain300", "chain1000", "tree15", "tree63", "tree255",
             "humanoid"]
    paths = sorted(glob.glob(os.path.join(d, "*.txt")),
                   key=lambda p: order.index(os.path.basename(p)[:-4]) if os.path.basename(p)[:-4] in order else 99)
    for path in paths:
        m = read_model(path)
        plant, qmap, vmap = build(m)
        ctx = plant.CreateDefaultContext()
        nq, nv = plant.num_positions(), plant.num_velocities()
        if nq != m["nq"] or nv != m["nu"]:
            sys.exit("bench_drake.py: %s: nq %d nv %d, mbk %d %d" % (m["name"], nq, nv, m["nq"], m["nu"]))
        q = np.zeros(nq)
        v = np.zeros(nv)
        vd = np.zeros(nv)
        q[qmap] = m["q"]
        v[vmap] = m["u"]
        vd[vmap] = m["known_udot"]
        x = np.concatenate([q, v])
        acc = plant.get_generalized_acceleration_output_port()
        forces = MultibodyForces(plant)

        def fd():
            plant.SetPositionsAndVelocities(ctx, x)
            return acc.Eval(ctx)

        def inv():
            plant.SetPositionsAndVelocities(ctx, x)
            plant.CalcForceElementsContribution(ctx, forces)
            return plant.CalcInverseDynamics(ctx, vd, forces)

        def mass():
            plant.SetPositions(ctx, q)
            return plant.CalcMassMatrix(ctx)

        def noop():
            ctx.get_time()

        if call_s is None:
            call_s = per_call(noop)
        diffs = {}
        diffs["fd"] = rel_diff(np.asarray(fd())[vmap], m["udot"])
        diffs["id"] = rel_diff(np.asarray(inv())[vmap], m["id"])
        if "M" in m:
            Md = np.asarray(mass())
            diffs["mass"] = rel_diff(Md[np.ix_(vmap, vmap)].reshape(-1), m["M"])
        line = "%s: Drake %s vs mbk (relative):" % (m["name"], version)
        for k, e in diffs.items():
            line += " %s %.1e" % (k, e)
        print(line, flush=True)
        for k, e in diffs.items():
            if not e <= TOL:
                sys.exit("bench_drake.py: %s: Drake's %s differs from mbk's by %.3e relative (tolerance %g)"
                         % (m["name"], k, e, TOL))
        calls = {"fd": (fd, 2), "id": (inv, 3), "mass": (mass, 2)}
        for k in diffs:
            fn, ncalls = calls[k]
            raw = per_call(fn)
            over = ncalls * call_s
            rows.append((m["name"], k, raw * 1e6, over * 1e6, (raw - over) * 1e6, diffs[k]))
            print("  %-5s raw %10.3f us, overhead %6.3f us, Drake %10.3f us" % (k, raw * 1e6, over * 1e6,
                                                                               (raw - over) * 1e6), flush=True)
    out = os.path.join(d, "drake.csv")
    with open(out, "w") as f:
        f.write("# drake %s %.1f\n" % (version, call_s * 1e9 if call_s else float("nan")))
        f.write("model,op,raw_us,overhead_us,us,rel_diff\n")
        for r in rows:
            f.write("%s,%s,%.6g,%.6g,%.6g,%.3g\n" % r)
    print("wrote %s" % out)


if __name__ == "__main__":
    main()
