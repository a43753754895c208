"""MA-CC (paper 002): the VDN loss, training, checkpoints and the reproduction's table."""

from __future__ import annotations

import pytest

torch = pytest.importorskip("torch")

from l4sim.agents import vdn  # noqa: E402
from l4sim.errors import EnvConfigError, L4simError  # noqa: E402
from l4sim.experiments import macc_002  # noqa: E402


def test_vdn_loss_equals_a_hand_computation():
    # Two agents, a batch of two transitions, two actions each.
    q = [torch.tensor([[1.0, 2.0], [0.5, -1.0]]), torch.tensor([[3.0, 0.0], [1.0, 4.0]])]
    qn = [torch.tensor([[0.0, 5.0], [2.0, 1.0]]), torch.tensor([[1.0, -2.0], [0.0, 0.5]])]
    acts = [torch.tensor([1, 0]), torch.tensor([0, 1])]
    team = torch.tensor([1.0, -1.0])
    done = torch.tensor([0.0, 1.0])
    gamma = 0.9
    # Transition 1: Qtot = 2 + 3 = 5; target = 1 + 0.9 (5 + 1) = 6.4; error -1.4.
    # Transition 2: Qtot = 0.5 + 4 = 4.5; done: target = -1; error 5.5.
    expect = ((-1.4) ** 2 + 5.5**2) / 2
    got = vdn.vdn_loss(q, qn, acts, [team, team], done, gamma, "vdn")
    assert got.item() == pytest.approx(expect)
    # Independent learners: each agent's own TD error on its own reward.
    r1, r2 = torch.tensor([1.0, 0.0]), torch.tensor([0.0, 2.0])
    e1 = [2 - (1 + 0.9 * 5), 0.5 - 0.0]
    e2 = [3 - (0 + 0.9 * 1), 4 - 2.0]
    expect_none = sum(x**2 for x in e1) / 2 + sum(x**2 for x in e2) / 2
    got = vdn.vdn_loss(q, qn, acts, [r1, r2], done, gamma, "none")
    assert got.item() == pytest.approx(expect_none)


def test_bad_config_is_one_sentence():
    with pytest.raises(EnvConfigError, match="mixer 'qmix' is not known"):
        vdn.VdnConfig(mixer="qmix").check()


def test_training_is_deterministic_and_a_checkpoint_evaluates_the_same(tmp_path):
    def make():
        return macc_002.make_env("ma-cc", duration="2s")

    cfg = vdn.VdnConfig(seed=3, learning_starts=8, batch_size=8)
    a = vdn.train(make, 2, cfg)
    b = vdn.train(make, 2, vdn.VdnConfig(seed=3, learning_starts=8, batch_size=8))
    assert a.returns == b.returns and a.steps == 20
    vdn.save(a, tmp_path / "p.pt")
    nets, cfg2 = vdn.load_policy(tmp_path / "p.pt")
    r1, sim1 = vdn.evaluate(nets, cfg2, make(), seed=7)
    r2, sim2 = vdn.evaluate(a.nets, cfg, make(), seed=7)
    assert r1 == r2 and sim1.summary() == sim2.summary()
    (tmp_path / "bad.pt").write_text("not a checkpoint")
    with pytest.raises(EnvConfigError, match="is not a VDN checkpoint"):
        vdn.load_policy(tmp_path / "bad.pt")


def test_paper_network_and_the_rule_based_baselines():
    scen = macc_002.scenario("red+bbr")
    cfg = scen.to_core_config()
    bottleneck = next(lk for lk in cfg["links"] if lk["rate_bps"] == 30_000_000)
    assert bottleneck["delay_ns"] == 100_000_000 and bottleneck["loss"] == pytest.approx(3e-4)
    assert bottleneck["qdisc_ab"]["kind"] == "red" and bottleneck["qdisc_ab"]["limit"] == 385
    env = macc_002.make_env("ma-cc")
    assert sorted(env.possible_agents) == ["aqm_r0->r1", "aqm_r1->r0", "tcp_0", "tcp_1", "tcp_2"]


def test_reproduce_writes_the_table(tmp_path):
    rows = macc_002.reproduce(
        tmp_path, only=["red+bbr", "rl-aqm+newreno"], seeds=[1], episodes=1, figures=False
    )
    assert [r.scheme for r in rows] == ["red+bbr", "rl-aqm+newreno"]
    red = rows[0]
    # 3 BBR flows fill most of the 30 Mbit/s bottleneck; the path's base RTT is 280 ms.
    assert 20_000 < red.throughput_kbps <= 30_000 and red.rtt_ms >= 280
    assert (tmp_path / "results.md").read_text() == macc_002.markdown_table(rows)
    assert (tmp_path / "rl-aqm+newreno-s1" / "policy.pt").is_file()
    with pytest.raises(L4simError, match="unknown scheme 'nope'"):
        macc_002.cases(["nope"])
