"""Agents in the loop: rewards, features, Gymnasium / PettingZoo environments, vectorised
stepping, fork, control delay (paper 000's remote brain) and an SB3 smoke test."""

from __future__ import annotations

import json
import math
import os
import subprocess
import sys
import warnings
from pathlib import Path

import gymnasium as gym
import numpy as np
import pytest
from gymnasium.utils.env_checker import check_env
from pettingzoo.test import parallel_api_test

import l4sim
import l4sim.envs as envs
from l4sim.envs import (
    AqmDropEnv,
    DualPi2Env,
    MultiCCEnv,
    QueueStep,
    SenderStep,
    SimBatchVectorEnv,
    TcpCwndEnv,
    queue_vector,
    rewards,
    sender_vector,
)
from l4sim.envs.defaults import TCP_HEAVY_SCENARIO
from l4sim.errors import ActionError, EnvConfigError


def sender_step(**kw) -> SenderStep:
    base = dict(
        interval_s=0.1,
        mss=1000,
        rate_ref_bps=8e6,
        rtt_ref_s=0.05,
        segments_acked=50,
        bytes_acked=50_000,
        bytes_in_flight=25_000,
        cwnd_pkts=30,
        ssthresh_pkts=math.nan,
        srtt_s=0.075,
        min_rtt_s=0.05,
        latest_rtt_s=0.08,
        delivery_rate_bps=4e6,
        losses=2,
        ecn_marks=5,
        retransmits=2,
    )
    base.update(kw)
    return SenderStep(**base)


def queue_step(**kw) -> QueueStep:
    base = dict(
        interval_s=0.1,
        rate_ref_bps=12e6,
        rtt_ref_s=0.05,
        backlog_pkts=20,
        backlog_bytes=30_000,
        dequeued_bytes=120_000,
        sojourn_s=0.02,
        drops=20,
        marks=10,
        prob=0.25,
    )
    base.update(kw)
    return QueueStep(**base)


# -- rewards (pure functions, hand-computed values) -------------------------------------------


def test_ns3ai_reward_is_faithful_and_mixes_units():
    s = sender_step()
    # 50 segments - 25 000 bytes in flight - 30 segments x 1000 B
    assert rewards.ns3ai(s) == 50 - 25_000 - 30_000
    # it prefers the smallest window with nothing in flight, even at zero throughput
    starving = sender_step(segments_acked=0, bytes_in_flight=0, cwnd_pkts=1)
    assert rewards.ns3ai(starving) > rewards.ns3ai(s)


def test_tcp_reward_utilisation_minus_relative_queueing_delay():
    s = sender_step()  # goodput 4 Mbps of 8 -> 0.5; (75 - 50) / 50 = 0.5
    assert rewards.tcp(s) == pytest.approx(0.5 - 0.5)
    assert rewards.tcp(s, delta=0.5) == pytest.approx(0.25)
    assert rewards.tcp(sender_step(srtt_s=0.04)) == pytest.approx(0.5)  # no negative penalty
    assert rewards.tcp(sender_step(srtt_s=math.nan, min_rtt_s=math.nan)) == pytest.approx(0.5)


def test_share_reward_peaks_at_the_fair_share():
    s = sender_step()  # goodput 4 Mbps of 8: exactly half; (75 - 50) / 50 = 0.5
    assert rewards.share(s) == pytest.approx(1.0 - 0.1 * 0.5)
    assert rewards.share(s, delta=0) == pytest.approx(1.0)
    # Half the link alone is half the reward; twice the share of four flows is none.
    assert rewards.share(s, n_flows=1, delta=0) == pytest.approx(0.5)
    assert rewards.share(s, n_flows=4, delta=0) == pytest.approx(0.0)


def test_macc_r1_raw_and_normalised():
    s = sender_step()
    assert rewards.macc_r1(s, 2, 3, 4, normalise=False) == pytest.approx(
        2 * 50 - 3 * 25_000 - 4 * 0.075
    )
    # capacity 100 segments/step, BDP 50 000 B, ref RTT 50 ms
    assert rewards.macc_r1(s) == pytest.approx(0.5 - 0.5 - 1.5)
    # Only the RTT above the reference: 75 ms - 50 ms = 0.5 ref; none before a sample.
    assert rewards.macc_r1(s, 2, 1, 1, excess_rtt=True) == pytest.approx(1.0 - 0.5 - 0.5)
    assert rewards.macc_r1(sender_step(srtt_s=math.nan), excess_rtt=True) == pytest.approx(0.0)


def test_macc_r2_raw_and_normalised():
    q = queue_step()
    # dequeue 9.6 Mbps; loss rate 20 / (20 + 80) = 0.2
    assert q.dequeue_rate_bps == pytest.approx(9.6e6)
    assert q.loss_rate == pytest.approx(0.2)
    assert rewards.macc_r2(q, normalise=False) == pytest.approx(9.6e6 - 0.02 - 20 - 0.2)
    # 0.8 - 0.02/0.05 - 20 / 50 packets of BDP - 0.2
    assert rewards.macc_r2(q) == pytest.approx(0.8 - 0.4 - 0.4 - 0.2)


def test_a3c_and_lfq_rewards():
    q = queue_step()
    assert rewards.a3c_l4s(q) == pytest.approx(-20.0)
    assert rewards.a3c_l4s(q, unit_s=1.0) == pytest.approx(-0.02)
    assert rewards.lfq(q, alpha=0.1) == pytest.approx(9.6 - 2.0)
    assert rewards.lfq(queue_step(backlog_pkts=0), alpha=0.1) > rewards.lfq(q, alpha=0.1)


def test_reward_lookup_rejects_unknown_and_mismatched_names():
    with pytest.raises(EnvConfigError, match="not a sender reward"):
        rewards.get("macc_r2", "sender")
    with pytest.raises(EnvConfigError, match="nope"):
        TcpCwndEnv(reward="nope")
    bound = rewards.get("tcp", "sender", {"delta": 0.5})
    assert bound(sender_step()) == pytest.approx(0.25)


def test_feature_vectors_normalise_and_clip():
    v = sender_vector(sender_step())
    assert v == pytest.approx([0.5, 0.5, 0.6, envs.features.OBS_HIGH, 1.5, 1.0, 0.5, 0.02, 0.05])
    qv = queue_vector(queue_step(prob=math.nan))
    assert qv == pytest.approx([0.4, 0.4, 0.8, 0.4, 0.2, 0.1, 0.0])
    assert max(sender_vector(sender_step(losses=10**9))) == envs.features.OBS_HIGH


# -- Gymnasium checks --------------------------------------------------------------------------


@pytest.mark.parametrize("env_id", list(envs.ENV_IDS))
def test_check_env_passes_with_warnings_as_errors(env_id):
    env = gym.make(env_id, episode_steps=20)
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        check_env(env.unwrapped)


@pytest.mark.parametrize(
    "kwargs",
    [
        {"action_set": "macc"},
        {"action_set": "ns3ai", "reward": "ns3ai"},
        {"action_set": "continuous", "reward": "macc_r1"},
    ],
)
def test_check_env_tcp_action_sets(kwargs):
    env = gym.make("l4sim/TcpCwnd-v0", episode_steps=20, **kwargs)
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        check_env(env.unwrapped)


def test_check_env_aqm_variants():
    for env in (
        gym.make("l4sim/AqmDrop-v0", action_set="macc", reward="lfq", episode_steps=20),
        gym.make("l4sim/DualPi2-v0", coupling=(0.5, 4.0), episode_steps=20),
    ):
        with warnings.catch_warnings():
            warnings.simplefilter("error")
            check_env(env.unwrapped)


def test_parallel_api_test_passes():
    env = MultiCCEnv(episode_steps=30)
    assert env.possible_agents == ["tcp_0", "tcp_1", "aqm_r0->r1"]
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        parallel_api_test(env, num_cycles=100)


def test_multi_agent_shared_reward_is_the_sum():
    own = MultiCCEnv(episode_steps=5)
    shared = MultiCCEnv(episode_steps=5, shared_reward=True)
    own.reset(seed=2)
    shared.reset(seed=2)
    actions = {"tcp_0": 0, "tcp_1": 2, "aqm_r0->r1": 0}
    _, r_own, *_ = own.step(actions)
    _, r_shared, *_ = shared.step(actions)
    total = sum(r_own.values())
    assert all(v == pytest.approx(total) for v in r_shared.values())
    assert len(set(r_own.values())) > 1


# -- determinism and fork -----------------------------------------------------------------------


def rollout(env, actions):
    obs, _ = env.reset(seed=7)
    out = [obs]
    rews = []
    for a in actions:
        obs, r, *_ = env.step(a)
        out.append(obs)
        rews.append(r)
    return np.array(out), np.array(rews)


def test_reset_with_the_same_seed_gives_identical_episodes():
    env = TcpCwndEnv(episode_steps=60)
    acts = np.random.default_rng(0).integers(0, 5, 60)
    o1, r1 = rollout(env, acts)
    o2, r2 = rollout(env, acts)
    assert np.array_equal(o1, o2) and np.array_equal(r1, r2)
    env2 = AqmDropEnv(episode_steps=40)
    pacts = np.random.default_rng(1).uniform(0, 0.05, (40, 1)).astype(np.float32)
    q1, s1 = rollout(env2, pacts)
    q2, s2 = rollout(env2, pacts)
    assert np.array_equal(q1, q2) and np.array_equal(s1, s2)
    # and a different seed gives a different episode (the agent queue's drop draws differ)
    env2.reset(seed=8)
    other = [env2.step(a)[0] for a in pacts]
    assert not np.array_equal(np.array(other), q1[1:])


def test_fork_continues_identically_and_diverges_under_other_actions():
    env = AqmDropEnv(episode_steps=100)
    env.reset(seed=3)
    for _ in range(20):
        env.step(np.array([0.02], np.float32))
    twin = env.fork()
    assert twin.sim is not env.sim
    same_a = [env.step(np.array([0.05], np.float32))[:2] for _ in range(20)]
    same_b = [twin.step(np.array([0.05], np.float32))[:2] for _ in range(20)]
    for (oa, ra), (ob, rb) in zip(same_a, same_b, strict=True):
        assert np.array_equal(oa, ob) and ra == rb
    # the Python-side RNG was copied too
    assert env.np_random.integers(1 << 30) == twin.np_random.integers(1 << 30)
    third = env.fork()
    diff_a = [env.step(np.array([0.0], np.float32))[0] for _ in range(20)]
    diff_c = [third.step(np.array([0.5], np.float32))[0] for _ in range(20)]
    assert not np.array_equal(np.array(diff_a), np.array(diff_c))


def test_fork_of_tcp_env_keeps_the_agent_window():
    env = TcpCwndEnv(episode_steps=50)
    env.reset(seed=1)
    for _ in range(10):
        env.step(1)
    twin = env.fork()
    a = [env.step(3)[:2] for _ in range(5)]
    b = [twin.step(3)[:2] for _ in range(5)]
    assert all(np.array_equal(x[0], y[0]) and x[1] == y[1] for x, y in zip(a, b, strict=True))


# -- vectorised stepping -----------------------------------------------------------------------


#: Simulation-bound: 1 s steps of the heavy env take ~2.5 ms each, so the vector env runs
#: them on the helper threads while it computes features.
HEAVY_TCP_ENV: dict = {"scenario": TCP_HEAVY_SCENARIO, "step_interval": "1s"}


@pytest.mark.parametrize("kwargs", [{}, HEAVY_TCP_ENV], ids=["default", "parallel"])
def test_vector_env_matches_single_envs_and_autoresets(kwargs: dict):
    n, steps = 3, 12
    venv = SimBatchVectorEnv("l4sim/TcpCwnd-v0", n, episode_steps=10, **kwargs)
    assert isinstance(venv, gym.vector.VectorEnv)
    acts = np.random.default_rng(5).integers(0, 5, (steps, n))
    obs, _ = venv.reset(seed=100)
    vobs, vrew, vtrunc = [obs], [], []
    for a in acts:
        o, r, _, tr, _ = venv.step(a)
        vobs.append(o)
        vrew.append(r)
        vtrunc.append(tr)
    for i in range(n):
        single = TcpCwndEnv(episode_steps=10, **kwargs)
        o, _ = single.reset(seed=100 + i)
        assert np.array_equal(o, vobs[0][i])
        for k in range(10):
            o, r, _, tr, _ = single.step(acts[k, i])
            assert np.array_equal(o, vobs[k + 1][i]) and r == vrew[k][i]
            assert tr == vtrunc[k][i]
    assert all(vtrunc[9]) and not any(vtrunc[10])  # step 11 is the autoreset step
    assert np.all(np.array(vrew[10]) == 0.0)


# -- control delay (paper 000: a remote brain, actions over the network) ------------------------


def control_scenario(qdisc: dict, cross: bool) -> dict:
    """brain -> r0 -> r1 -> iot: 10 + 10 + 10 ms one way; the controlled flow iot -> peer;
    optional bulk CUBIC bc -> bd through the r0 -> r1 bottleneck (10 Mbps, ``qdisc``)."""
    flows = [
        {"kind": "tcp", "cca": "external", "src": "iot", "dst": "peer"},
        {"kind": "control", "src": "brain", "dst": "iot", "ecn": "ect1"},
    ]
    if cross:
        flows.append({"kind": "tcp", "cca": "cubic", "src": "bc", "dst": "bd"})
    return {
        "name": "remote_brain",
        "duration": "20s",
        "topology": {
            "preset": "custom",
            "nodes": ["brain", "bc", "r0", "r1", "iot", "bd", "peer"],
            "links": [
                {"a": "brain", "b": "r0", "rate": "100Mbps", "delay": "10ms"},
                {"a": "bc", "b": "r0", "rate": "100Mbps", "delay": "1ms"},
                {"a": "r0", "b": "r1", "rate": "10Mbps", "delay": "10ms", "qdisc": qdisc},
                {"a": "r1", "b": "iot", "rate": "100Mbps", "delay": "10ms"},
                {"a": "r1", "b": "bd", "rate": "100Mbps", "delay": "1ms"},
                {"a": "iot", "b": "peer", "rate": "100Mbps", "delay": "5ms"},
            ],
        },
        "flows": flows,
    }


def action_latencies(env: TcpCwndEnv, n: int) -> list[float]:
    """Send n cwnd changes 100 ms apart; for each, the time until the sender's cwnd changes,
    observed at the env's 1 ms steps (no-op actions send nothing); ``math.inf`` for an
    action whose packet was lost (not landed within 300 ms, twice the 30 ms path plus a full
    120 ms queue: a queue dropped it)."""
    out = []
    for k in range(n):
        t0 = env.sim.now
        before = env.sim.observe()["flows"]["cwnd_pkts"][0]
        env.step(1 if k % 2 == 0 else 2)  # +1 / -1 segment
        steps = 1
        while env.sim.observe()["flows"]["cwnd_pkts"][0] == before and steps < 300:
            env.step(0)
            steps += 1
        landed = env.sim.observe()["flows"]["cwnd_pkts"][0] != before
        out.append(env.sim.now - t0 if landed else math.inf)
        for _ in range(100 - steps % 100):
            env.step(0)
    return out


def test_action_delay_applies_after_a_fixed_latency():
    env = TcpCwndEnv(action_delay="30ms", step_interval="1ms", episode_steps=2000)
    env.reset(seed=1)
    lat = action_latencies(env, 4)
    assert all(0.030 <= x <= 0.031 + 1e-9 for x in lat), lat


def test_control_flow_action_lands_after_the_one_way_delay():
    scen = control_scenario({"kind": "fifo", "limit": "100p"}, cross=False)
    env = TcpCwndEnv(scen, control_flow=1, step_interval="1ms", episode_steps=5000)
    env.reset(seed=1)
    lat = action_latencies(env, 4)
    # never before t + 30 ms (propagation), and only serialisation later without cross traffic
    assert all(0.030 <= x <= 0.033 for x in lat), lat


def test_l4s_control_traffic_lands_sooner_than_over_fifo():
    def mean_latency(qdisc: dict) -> float:
        scen = control_scenario(qdisc, cross=True)
        env = TcpCwndEnv(
            scen, control_flow=1, step_interval="1ms", warmup="3s", episode_steps=10_000
        )
        env.reset(seed=1)
        return action_latencies(env, 8)

    fifo = mean_latency({"kind": "fifo", "limit": "100p"})
    l4s = mean_latency({"kind": "dualpi2"})
    # The drop-tail FIFO that CUBIC fills may drop an action's packet; the L queue marks
    # ECT(1) packets instead of dropping them, so every action lands.
    assert all(math.isfinite(x) for x in l4s), l4s
    landed = [x for x in fifo if math.isfinite(x)]
    assert len(landed) >= len(fifo) // 2, fifo
    # paper 000 measured 105 ms (FIFO) vs 65 ms (L4S) RTT for its control traffic
    assert min(l4s) >= 0.030
    assert np.mean(landed) > np.mean(l4s) + 0.030, (fifo, l4s)


def test_packet_trigger_ends_steps_early():
    env = TcpCwndEnv(trigger=("r0->r1", 5), step_interval="100ms", episode_steps=50)
    env.reset(seed=1)
    intervals = []
    for _ in range(30):
        env.step(3 if env.record is None or env.record.cwnd_pkts < 40 else 0)
        intervals.append(env.record.interval_s)
    assert min(intervals) < 0.01  # 5 packets at 10 Mbps take 6 ms
    assert max(intervals) <= 0.1 + 1e-9


def test_bad_env_options_are_clear_errors():
    with pytest.raises(EnvConfigError, match="control_flow"):
        TcpCwndEnv(control_flow=0)
    with pytest.raises(EnvConfigError, match="episode_steps"):
        TcpCwndEnv(episode_steps=10_000)
    with pytest.raises(EnvConfigError, match="no link with a qdisc of kind 'dualpi2'"):
        DualPi2Env(envs.defaults.AQM_SCENARIO)
    with pytest.raises(EnvConfigError, match="action_set"):
        TcpCwndEnv(action_set="bogus")


# -- Stable-Baselines3 smoke test ---------------------------------------------------------------


def test_sb3_ppo_runs_on_tcp_cwnd(tmp_path, monkeypatch):
    sb3 = pytest.importorskip("stable_baselines3")
    monkeypatch.setenv("SB3_LOGDIR", str(tmp_path))  # SB3's default logger makes a folder
    env = gym.make("l4sim/TcpCwnd-v0", episode_steps=100)
    model = sb3.PPO("MlpPolicy", env, n_steps=128, batch_size=64, n_epochs=2, seed=0, device="cpu")
    model.learn(total_timesteps=256)
    assert model.num_timesteps >= 256
    obs, _ = env.reset(seed=0)
    for _ in range(20):
        action, _ = model.predict(obs, deterministic=True)
        obs, r, _, _, _ = env.step(action)
        assert env.observation_space.contains(obs) and np.isfinite(r)


def test_the_sb3_example_trains_and_logs(tmp_path):
    """examples/sb3_ppo_tcp_cwnd.py itself, on a tiny budget: it trains PPO on the env,
    writes SB3's TensorBoard logs and reports its greedy episode."""
    pytest.importorskip("stable_baselines3")
    pytest.importorskip("tensorboard")
    root = Path(__file__).resolve().parents[1]
    out = subprocess.run(
        [
            sys.executable,
            str(root / "examples" / "sb3_ppo_tcp_cwnd.py"),
            "--steps",
            "128",
            "--tensorboard",
            str(tmp_path / "tb"),
        ],
        capture_output=True,
        text=True,
        timeout=300,
        env={**os.environ, "PYTHONPATH": str(root / "python")},
    )
    assert out.returncode == 0, out.stderr
    assert "trained 128 steps" in out.stdout and "greedy episode: return" in out.stdout
    assert list((tmp_path / "tb").rglob("events.out.tfevents.*"))


def test_lfq_features_from_python():
    sc = l4sim.Scenario.parse(
        {
            "name": "lfq",
            "duration": "5s",
            "topology": {
                "preset": "two_host",
                "rate": "10Mbps",
                "delay": "10ms",
                "qdisc": {"kind": "fq", "per_flow_limit": "40p", "policy": {"kind": "lfq"}},
            },
            "flows": [{"kind": "tcp", "cca": "newreno"}, {"kind": "tcp", "cca": "cubic"}],
        }
    )
    sim = l4sim.Simulation(sc)
    sim.run_until("5s")
    lfq = sim.observe_policy("h0->h1")
    assert len(lfq["names"]) == 60 and lfq["names"][0] == "queue_100pkts@0.03125"
    assert len(lfq["features"]) == 2
    # The authors' scales: limit / 100 packets (the fastest average has converged).
    limit = lfq["names"].index("limit_100pkts@0.03125")
    assert all(f[limit] == pytest.approx(0.40) for f in lfq["features"])
    # Both bulk flows keep packets queued and send at about half the link each:
    # 10 Mb/s / 1500 B / 2 = 417 packets per second out of each flow queue (/ 10 000).
    out = lfq["names"].index("out_rate_10kpps@0.0078125")
    for f in lfq["features"]:
        assert 0.6 * 0.0417 <= f[out] <= 1.4 * 0.0417, f[out]
    with pytest.raises(ActionError):
        l4sim.Simulation(sc.with_overrides(seed=2)).observe_policy("h1->h0")


def test_reference_scales_follow_the_cores_route_not_the_fewest_hops():
    # a -> b directly takes 50 ms; a -> c -> b takes 5 + 5 ms: the core routes by delay,
    # so the env's reference RTT is 20 ms and its rate the slower link of a -> c -> b.
    scen = l4sim.scenario.loads(
        """
        duration = "2s"
        [topology]
        preset = "custom"
        nodes = ["a", "b", "c"]
        links = [
          { a = "a", b = "b", rate = "100Mbps", delay = "50ms" },
          { a = "a", b = "c", rate = "10Mbps", delay = "5ms" },
          { a = "c", b = "b", rate = "20Mbps", delay = "5ms" },
        ]
        [[flows]]
        src = "a"
        dst = "b"
        """
    )
    env = TcpCwndEnv(scen)
    assert env.rtt_ref_s == pytest.approx(0.020)
    assert env.rate_ref_bps == 10e6
    env.reset(seed=1)
    for _ in range(5):
        env.step(0)
    sim = env.unwrapped.sim
    # The packets do take that path: the direct link carries nothing.
    q = sim.observe()["queues"]
    sent = dict(zip(q["link"], q["dequeued_bytes"], strict=True))
    assert sent["a->b"] == 0 and sent["a->c"] > 0 and sent["c->b"] > 0


def test_sim_batch_on_all_cores_equals_one_by_one():
    # Steps long enough (1 s of a 3-flow scenario) make SimBatch run its simulations in
    # parallel; each must end exactly where the same simulation run alone ends.
    from l4sim.engine.simulation import SimulationBatch

    scen = l4sim.load("scenarios/demo.toml")
    seeds = [1, 2, 3, 4]
    alone = []
    for s in seeds:
        sim = l4sim.Simulation(scen.model_copy(update={"seed": s}))
        sim.run_until("5s")
        alone.append(sim.summary())
    batch = SimulationBatch([l4sim.Simulation(scen.model_copy(update={"seed": s})) for s in seeds])
    for k in range(1, 6):
        batch.run_until_ns([k * 1_000_000_000] * len(seeds))
    assert [batch.get(i).summary() for i in range(len(seeds))] == alone


def test_sim_batch_started_step_observed_one_by_one_equals_run_until():
    # `start_ns` returns while helper threads run long steps; `observe(i)` waits for (or
    # runs) simulation i, and any other call waits for the whole step. Every order of
    # these must give what stepping each simulation alone gives.
    from l4sim.engine.simulation import SimulationBatch

    scen = l4sim.load("scenarios/demo.toml")
    seeds = [1, 2, 3]
    alone = []
    for s in seeds:
        sim = l4sim.Simulation(scen.model_copy(update={"seed": s}))
        obs = []
        for k in range(1, 5):
            sim.run_until(f"{k}s")
            obs.append(sim.observe())
        alone.append((obs, sim.summary()))
    batch = SimulationBatch([l4sim.Simulation(scen.model_copy(update={"seed": s})) for s in seeds])
    got = [[] for _ in seeds]
    for k in range(1, 5):
        batch.start_ns([k * 1_000_000_000] * len(seeds))
        if k == 3:  # another call in the middle of a step waits for it
            assert batch.get(2).now_ns == 3_000_000_000
        for i in reversed(range(len(seeds))):
            got[i].append(batch.observe(i))
    mine = [(got[i], batch.get(i).summary()) for i in range(len(seeds))]
    # Through JSON: observations hold NaN (no RTT sample yet), which != itself.
    assert json.dumps(mine, sort_keys=True) == json.dumps(alone, sort_keys=True)


def test_sim_batch_bad_input_is_one_sentence():
    from l4sim.engine.simulation import SimulationBatch

    scen = l4sim.load("scenarios/demo.toml")
    batch = SimulationBatch([l4sim.Simulation(scen) for _ in range(2)])
    with pytest.raises(ValueError, match="needs 2 times, got 1"):
        batch.start_ns([1_000_000])
    with pytest.raises(IndexError, match=r"batch index 5 is outside 0\.\.2"):
        batch.observe(5)
    with pytest.raises(IndexError, match=r"batch index -1 is outside 0\.\.2"):
        batch.get(-1)


# -- actions are checked against the action space ---------------------------------------------


def test_bad_actions_are_one_sentence_never_a_silent_keep():
    """TcpCwnd-v0 ran 7, -1 and 10**6 as "keep" and 2.7 as 2; step(nan) / step(None) gave
    raw errors. Every action outside the space is an ActionError (also a ValueError)."""
    env = TcpCwndEnv(episode_steps=5)
    env.reset(seed=1)
    for bad, fragment in [
        (7, "7 is outside Discrete(5): give 0 to 4"),
        (-1, "-1 is outside Discrete(5)"),
        (10**6, "1000000 is outside Discrete(5)"),
        (2.7, "2.7 is not a whole number; Discrete(5) takes 0 to 4"),
        (float("nan"), "nan is not a whole number"),
        (None, "None is not a whole number"),
        (True, "True is not a whole number"),
        ("1", "'1' is not a whole number"),
    ]:
        with pytest.raises(ActionError, match=fragment.replace("(", r"\(").replace(")", r"\)")):
            env.step(bad)
        assert issubclass(ActionError, ValueError)
    # Integers of any kind, and 0-d integer arrays, are fine.
    for good in (1, np.int64(2), np.array(3), np.uint8(0)):
        env.step(good)


def test_continuous_actions_refuse_non_finite_and_wrong_shapes_and_clip_in_range():
    env = TcpCwndEnv(action_set="continuous", episode_steps=5)
    env.reset(seed=1)
    for bad, fragment in [
        ([float("nan")], "is not finite"),
        (float("inf"), "is not finite"),
        (None, "None is not numbers"),
        ("x", "'x' is not numbers"),
        ([0.1, 0.2], "has 2 values; Box"),
    ]:
        with pytest.raises(ActionError, match=fragment):
            env.step(bad)
    env.step([5.0])  # outside [-1, 1]: clipped (docs/envs/tcp-cwnd.md)
    env.step(0.5)  # a scalar for a one-value Box
    aqm = AqmDropEnv(episode_steps=5)
    aqm.reset(seed=1)
    with pytest.raises(ActionError, match="is not finite"):
        aqm.step(np.array([np.nan], np.float32))
    dual = DualPi2Env(episode_steps=5)
    dual.reset(seed=1)
    with pytest.raises(ActionError, match="has 2 values"):
        dual.step([0.1, 0.2])


def test_the_vector_env_takes_one_action_per_env():
    """3 actions for 2 envs were accepted (the third ignored)."""
    venv = SimBatchVectorEnv("l4sim/TcpCwnd-v0", 2, episode_steps=5)
    venv.reset(seed=1)
    with pytest.raises(ActionError, match="step got 3 actions for 2 envs"):
        venv.step(np.array([0, 1, 2]))
    with pytest.raises(ActionError, match="step got 1 actions for 2 envs"):
        venv.step([0])
    with pytest.raises(ActionError, match="9 is outside Discrete"):
        venv.step([0, 9])
    venv.step([0, 1])


def test_multi_agent_actions_are_checked_per_agent():
    """MA-CC accepted action 999, and an unknown agent was a raw KeyError."""
    env = MultiCCEnv(episode_steps=5)
    env.reset(seed=1)
    agent = env.possible_agents[0]
    with pytest.raises(ActionError, match=rf"agent {agent}'s action 999 is outside Discrete"):
        env.step({agent: 999})
    with pytest.raises(ActionError, match="there is no agent 'nobody'; agents: "):
        env.step({"nobody": 0})
    with pytest.raises(ActionError, match="must be a dict from agent name to action"):
        env.step([0, 1])
    env.step({a: 0 for a in env.possible_agents})


def test_a_seed_beyond_64_bits_is_one_sentence():
    env = TcpCwndEnv(episode_steps=5)
    for seed in (2**64 + 5, -1, 1.5):
        with pytest.raises(EnvConfigError, match="must be a whole number from 0 to 2"):
            env.reset(seed=seed)  # type: ignore[arg-type]
    env.reset(seed=2**64 - 1)
