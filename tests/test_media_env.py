"""``l4sim/MediaRate-v0``: an agent sets a video sender's target bitrate (``set_media_rate``)."""

from __future__ import annotations

import warnings

import gymnasium as gym
import numpy as np
import pytest
from gymnasium.utils.env_checker import check_env

import l4sim.envs  # noqa: F401  (registers the ids)
from l4sim.envs import MediaRateEnv, SimBatchVectorEnv
from l4sim.envs.defaults import MEDIA_SCENARIO
from l4sim.errors import ActionError, EnvConfigError
from l4sim.scenario import Scenario

STEPS = 100  # 5 s of 50 ms steps


def _scenario(**flow: object) -> dict:
    s = Scenario.parse(MEDIA_SCENARIO).to_dict()
    s["flows"][0].update(flow)
    return s


@pytest.mark.parametrize("action_set", ["continuous", "discrete"])
def test_check_env_passes_with_warnings_as_errors(action_set):
    env = gym.make("l4sim/MediaRate-v0", episode_steps=20, action_set=action_set)
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        check_env(env.unwrapped)


def _fixed(rate_bps: float, seed: int = 1) -> tuple[list[float], list[float], list]:
    """A fixed-rate policy: the target set to ``rate_bps`` (its bounds) every step."""
    env = MediaRateEnv(episode_steps=STEPS, min_rate=rate_bps / 2, max_rate=rate_bps)
    env.reset(seed=seed)
    rewards, p95, recs = [], [], []
    for _ in range(STEPS):
        _, r, _, _, _ = env.step(np.array([1.0], np.float32))
        rewards.append(r)
        recs.append(env.record)
        p95.append(env.record.frame_delay_p95_s)
    return rewards, p95, recs


def test_a_rate_above_capacity_costs_frame_delay_and_reward():
    # The bottleneck is 10 Mbit/s with CUBIC beside from 2 s: 3 Mbit/s fits, 15 does not.
    r_low, d_low, rec_low = _fixed(3e6)
    r_high, d_high, rec_high = _fixed(15e6)
    assert rec_low[-1].target_bps == 3e6 and rec_high[-1].target_bps == 15e6
    # after the encoder's lag, the second half of the run
    late_low = sum(r.late_frames for r in rec_low[50:])
    late_high = sum(r.late_frames for r in rec_high[50:])
    assert np.median(d_high[50:]) > 2 * np.median(d_low[50:]), (d_low[50:], d_high[50:])
    assert late_high > late_low
    assert sum(r_high) < sum(r_low), (sum(r_low), sum(r_high))
    # the low rate is delivered in full (the encoder's payload averages the target), on time
    delivered = np.mean([r.delivered_bps for r in rec_low[50:]])
    assert 0.9 * 3e6 < delivered < 1.1 * 3e6, delivered
    assert late_low == 0 and max(d_low[50:]) < 0.1
    # the feedback's RTT: 44 ms of propagation plus queueing
    assert 0.040 < rec_low[-1].srtt_s < 0.080, rec_low[-1].srtt_s


def test_same_seed_same_trajectory_and_a_fork_continues_identically():
    acts = np.random.default_rng(0).uniform(-1, 1, (60, 1)).astype(np.float32)

    def run(env: MediaRateEnv, actions: np.ndarray) -> tuple[np.ndarray, list[float]]:
        out = [env.step(a)[:2] for a in actions]
        return np.array([o for o, _ in out]), [r for _, r in out]

    env = MediaRateEnv(episode_steps=60)
    env.reset(seed=5)
    o1, r1 = run(env, acts)
    env.reset(seed=5)
    o2, r2 = run(env, acts)
    assert np.array_equal(o1, o2) and r1 == r2
    env.reset(seed=5)
    run(env, acts[:30])
    twin = env.fork()
    a, ra = run(env, acts[30:])
    b, rb = run(twin, acts[30:])
    assert np.array_equal(a, b) and ra == rb
    assert np.array_equal(a, o1[30:]), "the forked run is the uninterrupted one"
    # a fork given other actions diverges
    env.reset(seed=5)
    run(env, acts[:30])
    other = env.fork()
    c, _ = run(other, -np.ones_like(acts[30:]))
    assert not np.array_equal(a, c)


def test_frames_per_step_and_discrete_factors():
    env = MediaRateEnv(frames_per_step=3, action_set="discrete", episode_steps=10)
    assert env.step_ns == 100_000_000
    env.reset(seed=1)
    env.step(3)  # x 1.5
    env.step(4)  # x 0.5
    assert env.record.target_bps == int(2e6 * 1.5 * 0.5)


@pytest.mark.parametrize(
    ("kwargs", "words"),
    [
        ({"flow": 1}, "UDP flow with a video source"),
        ({"scenario": _scenario(cc={"kind": "scream"})}, 'cc = "none"'),
        ({"scenario": _scenario(feedback=None)}, "rfc8888"),
        ({"action_set": "gaussian"}, "not known"),
        ({"max_change": 1.0}, "above 1"),
        ({"min_rate": 5e6, "max_rate": 1e6}, "below max_rate"),
        ({"delay_weight": -1}, "0 or a positive number"),
        ({"min_rate": 0}, "min_rate 0 must be a positive number"),
        ({"frames_per_step": 0}, "at least 1"),
        ({"frames_per_step": 2, "step_interval": "10ms"}, "instead of step_interval"),
        ({"reward": "fast"}, "callable"),
    ],
)
def test_bad_config_is_one_sentence(kwargs, words):
    with pytest.raises(EnvConfigError, match=words):
        MediaRateEnv(**kwargs)


def test_the_core_action_refuses_what_it_cannot_do():
    env = MediaRateEnv(episode_steps=5)
    env.reset(seed=1)
    with pytest.raises(ActionError, match="positive"):
        env.sim.apply({"kind": "set_media_rate", "flow": 0, "rate_bps": 0})
    with pytest.raises(ActionError, match="not a UDP flow with a video source"):
        env.sim.apply({"kind": "set_media_rate", "flow": 1, "rate_bps": 10**6})
    with pytest.raises(EnvConfigError, match="single env"):
        SimBatchVectorEnv("l4sim/MediaRate-v0", 2)
