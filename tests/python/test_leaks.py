"""No leak over 10^5 create/destroy cycles: Python memory (tracemalloc) and C
memory (allocator hooks from tests/python/alloc_counter.c that count live
blocks; installed before anything is built, so they run in a child process)."""
import os
import subprocess
import sys
import textwrap

import pytest

from conftest import REPO

COUNTER = os.environ.get("MBK_ALLOC_COUNTER")

CHILD = textwrap.dedent(r"""
    import ctypes, gc, sys, tracemalloc
    counter = ctypes.CDLL(sys.argv[1])
    counter.alloc_counter_live.restype = ctypes.c_long
    counter.alloc_counter_total.restype = ctypes.c_long
    counter.alloc_counter_install()          # before libmbk allocates anything
    import numpy as np
    import mbk

    def force(state, bf, mf):
        mf -= 0.1 * state.u

    def cycle(k):
        sys_ = mbk.MultibodySystem("leak")
        b = sys_.matter.add_body(0, mbk.MassProps(1.0, com=(0, -0.5, 0), inertia=(0.1, 0.1, 0.1)),
                                 mbk.Pin())
        sys_.forces.add_gravity((0, -9.81, 0))
        if k % 4 == 0:
            sys_.forces.add_custom(force)
            sys_.add_scheduled_event(0.5, lambda s, r: None)
        s = sys_.new_state()
        s.q = [0.3]
        s.realize(mbk.Stage.ACCELERATION)
        _ = s.udot[0] + s.q[0]
        sys_.ydot(0.0, np.array([0.2, 0.0]))
        if k % 10 == 0:
            ig = mbk.Integrator(sys_, "rk4", fixed_step=0.01).initialize(s)
            ig.step_to(0.05)
            ig.close()
        if k % 50 == 0:
            try:
                s.set_q([1.0, 2.0])
            except mbk.InvalidArgumentError:
                pass
        s.close()
        sys_.close()

    n = int(sys.argv[2])
    for k in range(200):                     # warm up caches (ctypes, numpy, enum)
        cycle(k)
    gc.collect()
    tracemalloc.start()
    py0, _ = tracemalloc.get_traced_memory()
    c0, t0 = counter.alloc_counter_live(), counter.alloc_counter_total()
    for k in range(n):
        cycle(k)
    gc.collect()
    py1, _ = tracemalloc.get_traced_memory()
    c1, t1 = counter.alloc_counter_live(), counter.alloc_counter_total()
    print("cycles", n, "python_bytes", py1 - py0, "c_live_blocks", c1 - c0,
          "c_allocations", t1 - t0)
""")


@pytest.mark.skipif(not COUNTER, reason="MBK_ALLOC_COUNTER (the counting allocator) not given")
def test_no_leak_over_many_cycles():
    n = int(os.environ.get("MBK_LEAK_CYCLES", "100000"))
    env = dict(os.environ)
    env["PYTHONPATH"] = os.pathsep.join([os.path.join(REPO, "python")] +
                                        [p for p in env.get("PYTHONPATH", "").split(os.pathsep) if p])
    r = subprocess.run([sys.executable, "-c", CHILD, COUNTER, str(n)], capture_output=True,
                       text=True, timeout=1800, env=env)
    assert r.returncode == 0, r.stderr
    out = r.stdout
    fields = out.split()
    got = dict(zip(fields[0::2], map(int, fields[1::2])))
    print(got)
    assert got["cycles"] == n
    assert got["c_allocations"] > n                   # the hooks saw the C side allocate
    assert got["c_live_blocks"] == 0                   # and everything was freed
    assert got["python_bytes"] < 64 * 1024            # no growth with n (a few caches)
