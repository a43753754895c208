"""Paper 000's unified simulation as a Gymnasium env (``RemoteTcpEnv``, issue 14)."""

from __future__ import annotations

import numpy as np
import pytest

pytest.importorskip("l4sim._core")

from l4sim.envs.remote import RemoteTcpEnv, unified_index, unified_scenario
from l4sim.errors import EnvConfigError

# One way device -> server: 10 + 0.01 + 10 ms of propagation plus serialisation (100 B at
# 100 Mbit/s twice and at 10 Mbit/s once: 96 us); nothing can arrive sooner.
ONE_WAY_S = 0.020 + 0.0001


def test_each_state_reaches_the_server_no_earlier_than_its_packet_can() -> None:
    env = RemoteTcpEnv(control_queue="fifo", duration_s=10)
    obs, info = env.reset(seed=3)
    ages = [info["age_s"]]
    for _ in range(60):
        obs, _r, _term, _trunc, info = env.step(1)
        ages.append(info["age_s"])
        # The state arrived after it was sent by at least the path's one-way delay.
        assert info["time_s"] - info["sent_s"] >= ONE_WAY_S - 1e-9, info
        assert obs.shape == (9,) and np.all(np.isfinite(obs))
    assert min(ages) >= ONE_WAY_S - 1e-9
    # Every landed action took at least a round trip (state up, action down).
    assert env.control_rtts_s and min(env.control_rtts_s) >= 2 * ONE_WAY_S - 1e-9


@pytest.mark.parametrize("queue", ["fifo", "dualpi2"])
def test_an_action_takes_effect_only_when_its_return_packet_arrives(queue: str) -> None:
    # The server halves the window on the state that just arrived: the device's cwnd keeps
    # its old value until the action's packet can have come back (20 ms one way, plus the
    # CUBIC flow's queue on the FIFO path), and has the new value soon after it landed.
    env = RemoteTcpEnv(control_queue=queue, duration_s=10)
    env.reset(seed=1)
    for _ in range(30):  # let the window grow and CUBIC fill its queue
        env.step(1)
    sim = env.sim
    flow = env.index.iot(0)
    before = sim.observe()["flows"]["cwnd_pkts"][flow]
    target = max(int(env._commanded[0] // env.mss) // 2, 1)
    assert target != before
    t0 = sim.now
    sim.take_messages()
    env._act(sim, env.last, 4)  # x1/2, sent as a packet now
    landed = None
    k = 0
    while landed is None and k < 4000:
        k += 1
        sim.run_until(t0 + k * 0.0002)
        cwnd = sim.observe()["flows"]["cwnd_pkts"][flow]
        if cwnd == target:
            landed = sim.now
    assert landed is not None, "the action never landed"
    assert landed - t0 >= ONE_WAY_S - 1e-9, landed - t0
    # The companion message behind the action says when its packet arrived (an earlier
    # step's may still have been in the FIFO's queue: pick the one sent at t0).
    msgs = [
        m
        for m in sim.take_messages()
        if m["flow"] == env.index.action_flow(0) and abs(m["sent_s"] - t0) <= 1e-9
    ]
    assert len(msgs) == 1 and abs(msgs[0]["delivered_s"] - landed) <= 0.0005, (msgs, landed)


def test_same_seed_same_episode_and_the_fifo_control_path_is_slower() -> None:
    def episode(queue: str, seed: int) -> tuple[list[float], list[float]]:
        env = RemoteTcpEnv(control_queue=queue, duration_s=8, obs_mode="aware")
        env.reset(seed=seed)
        rewards = []
        for k in range(70):
            _obs, r, _, trunc, _ = env.step(k % 5)
            rewards.append(r)
            if trunc:
                break
        return rewards, env.control_rtts_s

    a, rtt_fifo = episode("fifo", 5)
    b, _ = episode("fifo", 5)
    assert a == b
    _, rtt_dp = episode("dualpi2", 5)
    # CUBIC's standing queue delays the FIFO path's actions; DualPI2's L queue does not.
    assert np.mean(rtt_fifo) > np.mean(rtt_dp) + 0.02 and np.mean(rtt_dp) < 0.045


def test_n_m_l_build_the_layout_and_peers_are_answered() -> None:
    sc = unified_scenario(n=2, m=2, l=3, duration_s=5)
    ix = unified_index(2, 2, 3)
    flows = sc.resolved_flows()
    assert len(flows) == ix.action_flow(1) + 1 == 11
    assert [flows[ix.obs_flow(i)].spec.kind for i in range(2)] == ["control"] * 2
    calls = []
    env = RemoteTcpEnv(n=2, m=2, l=3, duration_s=5, peer_policy=lambda o: calls.append(1) or 1)
    env.reset(seed=2)
    for _ in range(20):
        env.step(0)
    assert len(calls) >= 15  # device 1's states are answered too
    s = env.sim.summary()["flows"]
    assert s[ix.iot(1)]["bytes_acked"] > 0


def test_bad_config_is_one_sentence() -> None:
    with pytest.raises(EnvConfigError, match="control_queue 'red'"):
        RemoteTcpEnv(control_queue="red")
    with pytest.raises(EnvConfigError, match="obs_mode"):
        RemoteTcpEnv(obs_mode="x")
    with pytest.raises(EnvConfigError, match="action_set"):
        RemoteTcpEnv(action_set="x")
    with pytest.raises(EnvConfigError, match="n must be an integer"):
        RemoteTcpEnv(n=0)
    with pytest.raises(EnvConfigError, match="episode_s"):
        RemoteTcpEnv(duration_s=5, episode_s=6)
    with pytest.raises(EnvConfigError, match="episode_steps 0"):
        RemoteTcpEnv(episode_steps=0)
    with pytest.raises(EnvConfigError, match="unified layout"):
        RemoteTcpEnv(unified_scenario(n=1, m=1, l=1, duration_s=5), n=2)


def test_fixed_control_delay_is_the_papers_stage_2() -> None:
    # control_delay_s: the state is fresh, the action lands exactly that much later.
    env = RemoteTcpEnv(m=0, duration_s=5, control_delay_s=0.105, obs_mode="aware")
    obs, info = env.reset(seed=1)
    assert info["age_s"] == 0.0
    for _ in range(10):
        obs, *_ = env.step(1)
    assert obs[10] == 1.0  # one action in flight: 105 ms > one 100 ms step
    sim = env.sim
    t0 = sim.now
    env._act(sim, env.last, 3)
    target = int(env._commanded[0] // env.mss)
    sim.run_until(t0 + 0.1049)
    assert sim.observe()["flows"]["cwnd_pkts"][0] != target
    sim.run_until(t0 + 0.1051)
    assert sim.observe()["flows"]["cwnd_pkts"][0] == target
    with pytest.raises(EnvConfigError, match="control_delay_s"):
        RemoteTcpEnv(control_delay_s=-1)
