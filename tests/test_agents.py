"""The learning agents (l4sim.agents) and the RL-TCP experiment (needs torch and the core)."""

from __future__ import annotations

import json
import subprocess
from pathlib import Path

import numpy as np
import pytest

from cli_run import run_l4sim

torch = pytest.importorskip("torch")
gym = pytest.importorskip("gymnasium")

from l4sim.agents import dqn  # noqa: E402
from l4sim.errors import EnvConfigError  # noqa: E402

ROOT = Path(__file__).resolve().parents[1]


class Chain(gym.Env):
    """A deterministic 4-state chain: action 1 moves right, action 0 moves left (or stays at
    0). Reaching the right end pays 1 and ends the episode; every other step pays 0 (the
    left end pays 0.05 per step, worth 0.5 to an agent that stays, to lure a
    myopic one; going right is worth 0.81). Episodes are truncated after 20 steps."""

    N = 4

    def __init__(self) -> None:
        self.observation_space = gym.spaces.Box(0.0, 1.0, (self.N,), np.float32)
        self.action_space = gym.spaces.Discrete(2)
        self.s = 0
        self.t = 0

    def _obs(self) -> np.ndarray:
        o = np.zeros(self.N, np.float32)
        o[self.s] = 1.0
        return o

    def reset(self, *, seed=None, options=None):  # type: ignore[override]
        super().reset(seed=seed)
        self.s, self.t = 0, 0
        return self._obs(), {}

    def step(self, action):  # type: ignore[override]
        self.t += 1
        if int(action) == 1:
            self.s += 1
        else:
            reward = 0.05 if self.s == 0 else 0.0
            self.s = max(self.s - 1, 0)
            return self._obs(), reward, False, self.t >= 20, {}
        done = self.s == self.N - 1
        return self._obs(), 1.0 if done else 0.0, done, self.t >= 20, {}


def small_cfg(**kw) -> dqn.DQNConfig:
    base = {
        "total_steps": 2_000,
        "learning_starts": 200,
        "batch_size": 32,
        "target_update": 100,
        "exploration_fraction": 0.5,
        "gamma": 0.9,
        "hidden": (32,),
        "seed": 3,
        "log_every": 500,
    }
    base.update(kw)
    return dqn.DQNConfig(**base)


def test_dqn_learns_a_chain():
    q, stats = dqn.train(Chain, small_cfg())
    act = dqn.greedy_policy(q)
    # Greedy: always move right, though the left end pays a little for staying.
    for s in range(Chain.N - 1):
        o = np.zeros(Chain.N, np.float32)
        o[s] = 1.0
        assert act(o) == 1, f"state {s}"
    # The greedy rollout reaches the goal in N - 1 steps.
    env = Chain()
    obs, _ = env.reset(seed=0)
    for _ in range(Chain.N - 1):
        obs, r, term, _, _ = env.step(act(obs))
    assert term and r == 1.0
    # Q(0, right) ≈ gamma^(N-2) (bootstrapped value of the goal two steps later).
    with torch.no_grad():
        q0 = q(torch.eye(Chain.N)[:1])[0]
    assert q0[1].item() == pytest.approx(0.9 ** (Chain.N - 2), abs=0.1)
    assert stats.steps == 2_000 and stats.episodes > 50


def test_dqn_is_deterministic_and_seed_matters():
    q1, s1 = dqn.train(Chain, small_cfg(total_steps=800))
    q2, s2 = dqn.train(Chain, small_cfg(total_steps=800))
    q3, _ = dqn.train(Chain, small_cfg(total_steps=800, seed=4))
    for a, b in zip(q1.state_dict().values(), q2.state_dict().values(), strict=True):
        assert torch.equal(a, b)
    assert s1.episode_returns == s2.episode_returns
    assert any(
        not torch.equal(a, b)
        for a, b in zip(q1.state_dict().values(), q3.state_dict().values(), strict=True)
    )


def test_dqn_rejects_continuous_actions():
    with pytest.raises(EnvConfigError, match="Discrete"):
        dqn.train(lambda: gym.make("Pendulum-v1"), small_cfg(total_steps=10))


def test_save_load_round_trip(tmp_path):
    cfg = small_cfg(total_steps=400, hidden=(16, 8), gamma=0.77)
    q, _ = dqn.train(Chain, cfg)
    path = dqn.save(tmp_path / "w" / "dqn.pt", q, cfg, {"note": "chain"})
    q2, cfg2, extra = dqn.load(path)
    assert cfg2 == cfg and extra == {"note": "chain"}
    x = torch.rand(64, Chain.N)
    with torch.no_grad():
        assert torch.equal(q(x), q2(x))
    # A file that is not a checkpoint: one clear error.
    bad = tmp_path / "bad.pt"
    torch.save({"hello": 1}, bad)
    with pytest.raises(EnvConfigError, match="not a DQN checkpoint"):
        dqn.load(bad)


def test_tensorboard_logs(tmp_path):
    pytest.importorskip("tensorboard")
    dqn.train(Chain, small_cfg(total_steps=600, log_every=100), log_dir=tmp_path / "tb")
    from tensorboard.backend.event_processing.event_accumulator import EventAccumulator

    acc = EventAccumulator(str(tmp_path / "tb"))
    acc.Reload()
    tags = set(acc.Tags()["scalars"])
    assert {"charts/episodic_return", "charts/epsilon", "losses/td_loss", "losses/q_values"} <= tags
    eps = [e.value for e in acc.Scalars("charts/epsilon")]
    assert eps[0] > eps[-1]


# --------------------------------------------------------------------------------------------
# RL-TCP (needs the compiled core and the envs).

pytest.importorskip("l4sim._core")
rl_tcp = pytest.importorskip("l4sim.experiments.rl_tcp")


def test_rl_tcp_scenario_file_matches_module():
    from l4sim.scenario import load

    from_file = load(ROOT / "scenarios" / "rl_tcp.toml").to_core_config()
    assert from_file == rl_tcp.scenario().to_core_config()
    assert abs(rl_tcp.BDP_PKTS - 51) < 0.5


def test_rl_tcp_fixed_windows_bracket_the_goal():
    """The evaluation itself: a window of 1/4 BDP underfills the link, 3 BDP builds a standing
    queue of about 2 BDP, about 1 BDP fills the link with no queue."""

    def hold(target: int):
        env_cwnd = {"w": 10}

        def act(_obs) -> int:
            w = env_cwnd["w"]
            a = 0 if w == target else (3 if 2 * w <= target else 1 if w < target else 2)
            env_cwnd["w"] = {0: w, 1: w + 1, 2: w - 1, 3: 2 * w}[a]
            return a

        return act

    small = rl_tcp.evaluate(hold(12), episode_steps=60)
    right = rl_tcp.evaluate(hold(54), episode_steps=60)
    big = rl_tcp.evaluate(hold(160), episode_steps=60)
    assert small.utilization < 0.4 and small.queue_mean_pkts < 1
    assert right.utilization > 0.9 and right.queue_mean_bdp < 0.2
    assert big.utilization > 0.95 and big.queue_mean_bdp > 1.5
    assert big.srtt_mean_ms > 2 * small.srtt_mean_ms
    # ns3-ai's reward ranks the starved flow first; l4sim's default ranks the full pipe first.
    assert small.return_ns3ai > right.return_ns3ai > big.return_ns3ai
    assert right.return_default > max(small.return_default, big.return_default)


def test_rl_tcp_dqn_learns_to_fill_the_pipe_without_a_queue():
    cfg = rl_tcp.config(steps=15_000, seed=1)
    q, stats = dqn.train(lambda: rl_tcp.make_env("default"), cfg)
    ev = rl_tcp.evaluate(dqn.greedy_policy(q), "default")
    assert ev.utilization >= 0.90, ev
    assert ev.queue_mean_pkts <= 2 * rl_tcp.BDP_PKTS, ev
    assert ev.queue_max_pkts <= 2 * rl_tcp.BDP_PKTS, ev
    # Learning, not luck: the last episodes pay far more than the random first ones.
    assert np.mean(stats.episode_returns[-5:]) > np.mean(stats.episode_returns[:5]) + 10


def test_rl_tcp_reproduce_writes_the_table(tmp_path):
    seen: list[tuple[str, int, int]] = []
    rows = rl_tcp.reproduce(
        tmp_path,
        only=["default"],
        seeds=[1],
        steps=300,
        figures=False,
        on_case=lambda case, i, n: seen.append((case.name, i, n)),
    )
    assert seen == [("dqn-default-s1", 1, 2), ("newreno", 2, 2)]  # as each case finishes
    assert [r.agent for r in rows] == ["DQN, default reward", "NewReno (no agent)"]
    assert rows[0].train_steps == 300
    md = (tmp_path / "results.md").read_text()
    assert md == rl_tcp.markdown_table(rows)
    assert md.splitlines()[-1].startswith("| NewReno (no agent) | - | ")  # no training
    assert (tmp_path / "results.csv").is_file()
    assert (tmp_path / "default" / "s1" / "dqn.pt").is_file()
    # The training's wall time is in timing.csv, not in the compared tables.
    assert "train_time_s" in (tmp_path / "timing.csv").read_text()
    assert "train_time_s" not in (tmp_path / "results.csv").read_text()
    # NewReno fills the 150-packet buffer: a standing queue of more than a BDP, and drops.
    assert rows[1].queue_mean_bdp > 1 and rows[1].drops > 0


def l4sim(*args: str) -> subprocess.CompletedProcess[str]:
    return run_l4sim(*args, cwd=ROOT)


def test_cli_train_rl_tcp_end_to_end(tmp_path):
    out = tmp_path / "run"
    r = l4sim("train", "rl-tcp", "--steps", "300", "--out", str(out), "--seed", "2")
    assert r.returncode == 0, r.stderr
    for name in ("dqn.pt", "eval.json", "train.json", "eval_episode.png", "training_return.png"):
        assert (out / name).is_file(), name
    assert any((out / "tb").iterdir())
    result = json.loads((out / "eval.json").read_text())
    assert result["reward"] == "default" and result["train"]["steps"] == 300
    assert 0.0 <= result["eval"]["utilization"] <= 1.0
    assert "util %" in r.stdout
    # Evaluating the saved weights reproduces the evaluation exactly.
    again = tmp_path / "again"
    r = l4sim("train", "rl-tcp", "--load", str(out / "dqn.pt"), "--out", str(again))
    assert r.returncode == 0, r.stderr
    ev2 = json.loads((again / "eval.json").read_text())["eval"]
    assert ev2 == result["eval"]


@pytest.mark.parametrize(
    ("args", "needle"),
    [
        (["--reward", "tiny"], "--reward"),
        (["--steps", "0"], "--steps"),
        (["--load", "/nonexistent/dqn.pt"], "--load"),
    ],
)
def test_cli_train_bad_flags(args, needle):
    r = l4sim("train", "rl-tcp", *args)
    assert r.returncode == 2
    assert needle in r.stderr and "Traceback" not in r.stderr
    assert len(r.stderr.strip().splitlines()) <= 2
