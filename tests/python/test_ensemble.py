"""Ensembles from Python: mbk.Ensemble over mbk_ensemble_*, the Philox numbers."""
import numpy as np
import pytest

import mbk
from conftest import pendulum

SEED = 20240611
N = 16


def _init(member, state):
    state.q = [0.4 + 0.1 * mbk.random_normal(SEED, member, 0),
               -0.2 + 0.1 * mbk.random_normal(SEED, member, 1)]
    state.u = [0.0, 0.05 * mbk.random_uniform(SEED, member, 2)]


def _sweep(sys_, threads, method="rkmerson"):
    e = mbk.Ensemble(sys_, N, integrator=method, accuracy=1e-8, threads=threads)
    out = e.run(1.5, _init, lambda m, s, st: (s.t, s.q.copy(), s.u.copy(), s.udot.copy()))
    assert e.num_run == N and e.num_failed == 0
    assert (e.statuses == mbk.OK).all()
    return out


def _eq(a, b):
    assert a[0] == b[0]
    for x, y in zip(a[1:], b[1:]):
        assert np.array_equal(x, y), (x, y)


@pytest.mark.parametrize("method", ["rkmerson", "cvode_bdf"])
def test_bitwise_over_threads_and_one_by_one(method):
    sys_ = pendulum(2)
    runs = {th: _sweep(sys_, th, method) for th in (1, 2, 4)}
    for th in (2, 4):
        for a, b in zip(runs[1], runs[th]):
            _eq(a, b)
    # the same members one by one with the package's integrator
    for m in range(N):
        s = sys_.new_state()
        _init(m, s)
        ig = mbk.Integrator(sys_, method, accuracy=1e-8).initialize(s)
        assert ig.integrate(1.5) == mbk.OK
        ig.state.realize(mbk.Stage.ACCELERATION) if ig.state.stage < mbk.Stage.ACCELERATION else None
        _eq(runs[1][m], (ig.state.t, ig.state.q.copy(), ig.state.u.copy(), ig.state.udot.copy()))
    # the initial angles are spread as the draws say
    assert len({float(r[1][0]) for r in runs[1]}) == N


def test_default_done_threads_stats_skip():
    sys_ = pendulum(1)
    e = mbk.Ensemble(sys_, 5, threads=2)
    assert len(e) == e.num_members == 5 and e.threads == 2
    e.threads = 64
    assert e.threads == 5                           # capped at the members
    e.skip_member(3)
    assert e.is_skipped(3) and e.num_skipped == 1
    seen = {}

    def done(m, s, status):
        seen[m] = (e.member_stats(m)["steps_taken"], e.member_initial_state(m).q[0])
        return "r%d" % m
    res = e.run(0.5, lambda m, s: setattr(s, "q", [0.1 * m]), done)
    assert res == ["r0", "r1", "r2", None, "r4"]
    assert e.statuses[3] == mbk.NOT_RUN and e.num_run == 4
    assert all(v[0] > 0 for v in seen.values()) and seen[2][1] == pytest.approx(0.2)
    ys = mbk.Ensemble(sys_, 3).run(0.5)             # no callbacks: the final y of each
    assert len(ys) == 3 and all(y.shape == (2,) for y in ys)
    e.close()
    with pytest.raises(mbk.InvalidArgumentError):
        e.run(1.0)


class Boom(Exception):
    pass


@pytest.mark.parametrize("where", ["init", "done", "force"])
def test_callback_exception_reaches_caller(where):
    sys_ = pendulum(1)
    if where == "force":
        sys_.invalidate_topology()

        def force(state, bf, mf):
            if state.q[0] > 0.25:
                raise Boom("force")
        sys_.forces.add_custom(force, name="boom")
        sys_.realize_topology()
    e = mbk.Ensemble(sys_, 8, threads=4)

    def init(m, s):
        if where == "init" and m == 5:
            raise Boom("init")
        s.q = [0.3 if m == 6 else 0.1]

    def done(m, s, status):
        if where == "done" and m == 2:
            raise Boom("done")
    with pytest.raises(Boom, match=where):
        e.run(0.2, init, done)
    # the Ensemble and the package still work afterwards
    assert e.run(0.1)[0].shape == (2,)
    assert mbk.errors.pending[0] == 0


def test_failed_member_is_reported_not_raised():
    sys_ = pendulum(1)
    e = mbk.Ensemble(sys_, 4, threads=2)

    def init(m, s):
        if m == 1:
            s.u = [1e300]                   # blows up: the member fails, the others go on
        else:
            s.q = [0.1]
    e.set_integrator("euler", 0.1)
    e.run(1.0, init, lambda m, s, st: None)
    assert e.statuses[0] == mbk.OK and e.statuses[1] < 0 and e.num_failed == 1


def test_bad_input():
    sys_ = pendulum(1)
    with pytest.raises(mbk.InvalidArgumentError):
        mbk.Ensemble(sys_, 0)
    with pytest.raises(mbk.InvalidArgumentError):
        mbk.Ensemble(sys_, 2.5)
    e = mbk.Ensemble(sys_, 2)
    with pytest.raises(mbk.InvalidArgumentError):
        e.set_integrator("no-such", 1e-3)
    with pytest.raises(mbk.InvalidArgumentError):
        e.set_integrator("rk4", 2.0)
    with pytest.raises(mbk.InvalidArgumentError):
        e.threads = -1
    with pytest.raises(mbk.InvalidArgumentError):
        e.run(-1.0)
    with pytest.raises(mbk.InvalidArgumentError):
        e.run(1.0, init=42)
    with pytest.raises(mbk.InvalidArgumentError):
        e.skip_member(7)
    with pytest.raises(mbk.InvalidArgumentError):
        mbk.random_normal(-1, 0, 0)
    with pytest.raises(mbk.InvalidArgumentError):
        mbk.philox4x32([1, 2, 3], [0, 0])


def test_philox_is_pure_and_matches_the_c_calls():
    a = [mbk.random_normal(1, m, 0) for m in range(2000)]
    assert a == [mbk.random_normal(1, m, 0) for m in range(2000)]
    assert abs(np.mean(a)) < 0.1 and abs(np.std(a) - 1) < 0.1
    u = [mbk.random_uniform(3, 0, d) for d in range(1000)]
    assert min(u) >= 0 and max(u) < 1
    assert mbk.random_bits(1, 2, 3) != mbk.random_bits(1, 2, 4)
    assert 0 <= mbk.random_bits(1, 2, 3) < 1 << 64
    out = mbk.philox4x32([0, 0, 0, 0], [0, 0])
    # Random123's known-answer vector for philox4x32_10 with zero counter and key
    assert out == (0x6627e8d5, 0xe169c58d, 0xbc57ac4c, 0x9b00dbd8)
