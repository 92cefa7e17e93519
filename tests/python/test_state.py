"""States: numpy views, get/upd/set, stages and invalidation, copies, errors."""
import numpy as np
import pytest

import mbk
from conftest import pendulum
from mbk import Stage


def test_views_are_views_not_copies(chain3):
    s = chain3.new_state()
    q = s.q
    assert q.shape == (3,) and not q.flags.writeable and not q.flags.owndata
    s.set_q([0.1, 0.2, 0.3])
    assert q.tolist() == [0.1, 0.2, 0.3]          # the old view sees the change
    s.upd_q()[1] = 7.0
    assert q[1] == 7.0
    s.q = [1, 2, 3]                                # assignment is set_q
    assert q.tolist() == [1, 2, 3]
    assert s.q is q                                # the same view while the layout stands
    with pytest.raises(ValueError):
        q[0] = 5.0                                 # get views are read-only


def test_y_is_q_u_z_and_aliases(chain3):
    s = chain3.new_state()
    s.q = [0.1, 0.2, 0.3]
    s.u = [1, 2, 3]
    assert s.y.tolist() == [0.1, 0.2, 0.3, 1, 2, 3]
    assert s.nq == 3 and s.nu == 3 and s.nz == 0 and s.ny == 6
    assert s.z.shape == (0,)
    y = s.upd_y()
    y[:] = 0.5
    assert s.q.tolist() == [0.5] * 3 and s.u.tolist() == [0.5] * 3


def test_upd_invalidates_the_right_stage(chain3):
    s = chain3.new_state(Stage.ACCELERATION)
    assert s.stage == Stage.ACCELERATION
    s.upd_z()
    assert s.stage == Stage.VELOCITY               # z: Dynamics invalidated
    s.realize(Stage.ACCELERATION)
    s.upd_u()
    assert s.stage == Stage.POSITION               # u: Velocity
    s.realize(Stage.ACCELERATION)
    q = s.upd_q()
    assert s.stage == Stage.TIME                   # q: Position
    s.realize(Stage.ACCELERATION)
    q[0] = 0.3                                     # an old upd view invalidates nothing
    assert s.stage == Stage.ACCELERATION
    s.upd_y()
    assert s.stage == Stage.TIME
    s.realize(Stage.ACCELERATION)
    s.t = 1.5
    assert s.stage == Stage.INSTANCE and s.t == 1.5
    s.realize(Stage.ACCELERATION)
    s.invalidate(Stage.DYNAMICS)
    assert s.stage == Stage.VELOCITY
    v0 = s.stage_version(0, Stage.DYNAMICS)
    s.invalidate(Stage.DYNAMICS)
    assert s.stage_version(0, Stage.DYNAMICS) == v0 + 1
    assert s.subsystem_stage(0) <= Stage.VELOCITY and s.num_subsystems == 2
    s.set_u([0, 0, 0])
    assert s.stage <= Stage.POSITION


def test_derivative_views_follow_the_state(pend):
    s = pend.new_state()
    s.q = [0.3]
    s.realize(Stage.ACCELERATION)
    udot = s.udot
    a0 = udot[0]
    assert a0 < 0                                  # swings back
    s.q = [-0.3]
    with pytest.raises(mbk.StageError):
        s.udot                                     # not realized: no stale data
    s.realize(Stage.ACCELERATION)
    assert udot[0] == -a0                          # the same memory, new value
    assert s.ydot.tolist() == [s.u[0], udot[0]]
    assert s.qdot.tolist() == [0.0] and s.qdotdot.shape == (1,)
    assert s.qerr.shape == (0,) and s.multipliers.shape == (0,)


def test_wrong_stage_is_stage_error(pend):
    s = mbk.State(pend, stage=Stage.TOPOLOGY)
    assert s.stage == Stage.TOPOLOGY
    with pytest.raises(mbk.StageError) as e:
        s.q
    with pytest.raises(mbk.MbkError):
        s.nq
    s.realize(Stage.MODEL)
    assert s.q.shape == (1,)
    with pytest.raises(mbk.StageError) as e:
        pend.matter.body_transform(s, 1)
    assert e.value.status == -2 and e.value.status_name == "MBK_ESTAGE"
    assert "Position" in str(e.value)


def test_set_checks_shape_and_finiteness(chain3):
    s = chain3.new_state()
    with pytest.raises(mbk.InvalidArgumentError, match=r"shape \(2,\); expected \(3,\)"):
        s.set_q([1.0, 2.0])
    with pytest.raises(ValueError):                # InvalidArgumentError is a ValueError
        s.u = [[1.0, 2.0, 3.0, 4.0]]
    with pytest.raises(mbk.InvalidArgumentError):
        s.q = ["a", "b", "c"]
    s.q = [0.1, 0.2, 0.3]
    with pytest.raises(mbk.NotFiniteError) as e:
        s.q = [0.0, np.nan, 0.0]
    assert e.value.status == mbk.NotFiniteError.status
    assert s.q.tolist() == [0.1, 0.2, 0.3]         # unchanged on failure
    with pytest.raises(mbk.NotFiniteError):
        s.t = np.inf


def test_nan_written_through_upd_view_is_refused_when_realizing(pend):
    s = pend.new_state()
    s.upd_q()[0] = np.nan
    with pytest.raises(mbk.NotFiniteError, match="q"):
        s.realize(Stage.POSITION)


def test_copy_keeps_contents_and_validity(chain3):
    s = chain3.new_state()
    s.q = [0.1, -0.2, 0.3]
    s.realize(Stage.ACCELERATION)
    c = s.copy()
    assert c.stage == Stage.ACCELERATION and c.udot.tolist() == s.udot.tolist()
    c.q = [0, 0, 0]
    assert s.q.tolist() == [0.1, -0.2, 0.3]        # independent memory
    d = chain3.new_state()
    d.copy_from(s)
    assert d.q.tolist() == s.q.tolist()
    assert s.size_in_bytes > 0
    d.init()
    assert d.stage == Stage.TOPOLOGY


def test_stale_state_after_topology_change():
    sys_ = pendulum(1)
    s = sys_.new_state()
    with pytest.raises(mbk.StageError, match="invalidate_topology"):
        sys_.matter.add_body(1, mbk.MassProps(1.0), mbk.Pin())
    sys_.invalidate_topology()
    sys_.matter.add_body(1, mbk.MassProps(1.0, com=(0, -0.5, 0), inertia=(0.1, 0.1, 0.1)),
                         mbk.Pin(), X_PF=(0, -1, 0))
    with pytest.raises(mbk.StaleStateError) as e:
        sys_.realize(s, Stage.POSITION)
    assert e.value.status == -3 and "mbk_state_init" in str(e.value)
    sys_.realize_topology()
    with pytest.raises(mbk.StaleStateError):
        sys_.check_state(s)
    s.init()
    s.realize(Stage.MODEL)
    assert s.nq == 2


def test_closed_objects_refuse_use(pend):
    s = pend.new_state()
    s.close()
    with pytest.raises(mbk.InvalidArgumentError, match="closed"):
        s.q
    s.close()                                     # twice is fine
    with mbk.State(pend) as s2:
        assert s2.nq == 1
    sys_ = pendulum(1)
    sys_.close()
    with pytest.raises(mbk.InvalidArgumentError, match="closed"):
        sys_.new_state()


def test_view_keeps_state_alive(pend):
    s = pend.new_state()
    s.q = [0.25]
    q = s.q
    del s
    import gc
    gc.collect()
    assert q[0] == 0.25                           # the view's base holds the State


def test_euler_angles_change_the_layout():
    sys_ = pendulum(1, mobilizer=mbk.Ball)
    s = mbk.State(sys_, stage=Stage.MODEL)
    assert s.nq == 4 and s.q.tolist() == [1, 0, 0, 0]
    m = sys_.matter
    m.set_use_euler_angles(s, True)
    s.realize(Stage.MODEL)
    assert m.use_euler_angles(s) and s.nq == 3 and s.q.shape == (3,)
    assert m.body_num_q(s, 1) == 3 and m.body_num_u(s, 1) == 3
    assert m.body_q(s, 1) == slice(0, 3) and m.body_u(s, 1) == slice(0, 3)
    assert s.subsystem_slices(0) == (slice(0, 3), slice(0, 3), slice(0, 0))


def test_event_triggers_view(pend):
    sys_ = pendulum(1)
    sys_.add_event_handler(lambda st: st.q[0] - 0.1, lambda st, r: None, stage=Stage.POSITION)
    s = sys_.new_state()
    s.q = [0.5]
    s.realize(Stage.POSITION)
    w = s.event_triggers(Stage.POSITION)
    assert w.shape == (1,) and abs(w[0] - 0.4) < 1e-15 and not w.flags.writeable


def test_read_only_states_refuse_changes(pend):
    s = pend.new_state()
    ig = mbk.Integrator(pend, "rk4", fixed_step=0.01).initialize(s)
    cur = ig.state
    assert cur.stage == Stage.ACCELERATION
    with pytest.raises(mbk.InvalidArgumentError, match="read-only"):
        cur.q = [0.1]
    with pytest.raises(mbk.InvalidArgumentError, match="read-only"):
        cur.upd_u()
    c = cur.copy()
    c.q = [0.2]
    assert c.q[0] == 0.2


def test_default_state(pend):
    d = pend.default_state
    assert d.stage >= Stage.TOPOLOGY
    with pytest.raises(mbk.InvalidArgumentError):
        d.t = 1.0
