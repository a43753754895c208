"""Trainers on a device: ``device = "cpu" | "cuda[:N]" | "auto"`` (l4sim.agents.device).

Everywhere: the names resolve as documented and bad ones are one sentence; ``cpu`` and
``auto`` (on a machine without a GPU) give the same weights bit for bit as before. Where
PyTorch sees a GPU: DQN, VDN/QMIX and LFQ train there and land within float tolerance of the
CPU run on the same data (exploration fixed to random actions, so both runs see the same
transitions and only the arithmetic differs).
"""

from __future__ import annotations

import pytest

torch = pytest.importorskip("torch")

from l4sim.agents import device as devmod  # noqa: E402
from l4sim.errors import EnvConfigError  # noqa: E402

CUDA = torch.cuda.is_available()
needs_cuda = pytest.mark.skipif(not CUDA, reason="PyTorch sees no CUDA device here")


def test_names_resolve():
    assert devmod.resolve("cpu") == torch.device("cpu")
    assert devmod.resolve("auto").type == ("cuda" if CUDA else "cpu")
    for bad in ("gpu", "CUDA", "cuda:x", "", "cpu:0"):
        with pytest.raises(EnvConfigError, match="is not one of"):
            devmod.resolve(bad)
    with pytest.raises(EnvConfigError, match="must be a string"):
        devmod.resolve(0)  # type: ignore[arg-type]


@pytest.mark.skipif(CUDA, reason="checks the refusal on a machine without a GPU")
def test_cuda_without_a_gpu_is_one_sentence():
    with pytest.raises(EnvConfigError, match="PyTorch sees none here"):
        devmod.resolve("cuda")


@needs_cuda
def test_a_gpu_index_past_the_last_is_refused():
    with pytest.raises(EnvConfigError, match="numbered from 0"):
        devmod.resolve(f"cuda:{torch.cuda.device_count()}")


def _dqn(device: str, explore: bool = False):
    from l4sim.agents import dqn
    from l4sim.experiments import rl_tcp

    cfg = rl_tcp.config(steps=240, seed=3, device=device)
    cfg.learning_starts = 40
    if not explore:
        # Random actions throughout: both devices collect the same transitions.
        cfg.start_epsilon = cfg.end_epsilon = 1.0
    q, stats = dqn.train(lambda: rl_tcp.make_env(episode_steps=60), cfg)
    return q, stats


def _close(a: dict, b: dict, atol: float) -> float:
    worst = 0.0
    for k in a:
        assert a[k].device.type == "cpu" and b[k].device.type == "cpu", k
        worst = max(worst, float((a[k] - b[k]).abs().max()))
    assert worst <= atol, f"largest weight difference {worst:.3g} > {atol}"
    return worst


def test_dqn_cpu_and_auto_without_gpu_are_the_default_bit_for_bit():
    q_default, _ = _dqn("cpu", explore=True)
    q_auto, _ = _dqn("auto", explore=True)
    a, b = q_default.state_dict(), q_auto.state_dict()
    if CUDA:
        _close(a, b, 1e-3)
    else:
        assert all(torch.equal(a[k], b[k]) for k in a)


def test_cli_refuses_a_bad_device_before_any_work(tmp_path):
    from cli_run import run_l4sim

    for cmd in (["lfq", "--recipe", "tiny"], ["rl-tcp", "--steps", "10"]):
        r = run_l4sim("train", *cmd, "--device", "tpu", "--out", str(tmp_path / "o"), "-q")
        assert r.returncode == 2, r.stderr
        assert "device 'tpu' is not one of" in r.stderr
        assert "Traceback" not in r.stderr
        assert not (tmp_path / "o" / "train.json").exists()


def test_a3c_refuses_cuda_in_one_sentence():
    from l4sim.agents import a3c
    from l4sim.agents.a3c.model import A3cConfig

    with pytest.raises(EnvConfigError, match=r"A3C trains on the CPU|PyTorch sees none"):
        a3c.train(A3cConfig(workers=1, episodes=1, steps=1), device="cuda")


# -- on a GPU ------------------------------------------------------------------------------


@needs_cuda
def test_dqn_on_cuda_matches_cpu_within_float_tolerance():
    q_cpu, s_cpu = _dqn("cpu")
    q_gpu, s_gpu = _dqn("cuda")
    # The same transitions (random actions, same seeds): the episodes' returns are equal.
    assert s_cpu.episode_returns == s_gpu.episode_returns
    # 200 Adam steps of a 64x64 MLP in float32; cuBLAS sums in another order (~1e-7 each).
    _close(q_cpu.state_dict(), q_gpu.state_dict(), 1e-3)


@needs_cuda
@pytest.mark.parametrize("mixer", ["vdn", "qmix"])
def test_vdn_and_qmix_on_cuda_match_cpu(mixer):
    from l4sim.agents import vdn
    from l4sim.experiments import macc_002

    scheme = "ma-cc" if mixer == "vdn" else "ma-cc-qmix"
    out = {}
    for dev in ("cpu", "cuda"):
        cfg = vdn.VdnConfig(mixer=mixer, seed=2, eps_start=1.0, eps_decay=1.0, device=dev)
        res = vdn.train(lambda: macc_002.make_env(scheme, duration="6s"), 1, cfg)
        out[dev] = res
    assert out["cpu"].returns == out["cuda"].returns
    for t in out["cpu"].nets:
        _close(out["cpu"].nets[t].state_dict(), out["cuda"].nets[t].state_dict(), 1e-3)


@needs_cuda
def test_lfq_update_on_cuda_matches_cpu():
    """One LFQ batch (the offline L1 step and the online critic's MSE step) on each device
    from the same weights and data: the updated weights agree within float tolerance."""
    from l4sim.agents import lfq

    torch.manual_seed(1)
    base = lfq.LfqNet(256)
    x = torch.randn(20, lfq.FEATURES)
    labels = torch.randint(1, 100, (20,)).float()
    out = {}
    for dev in ("cpu", "cuda"):
        net = lfq.LfqNet(256)
        net.load_state_dict(base.state_dict())
        net.to(dev)
        opt = torch.optim.SGD(net.parameters(), lr=0.01)
        for _ in range(5):
            loss = torch.nn.functional.l1_loss(net(x.to(dev)).squeeze(1), labels.to(dev))
            opt.zero_grad()
            loss.backward()
            opt.step()
        out[dev] = {k: v.cpu() for k, v in net.state_dict().items()}
    _close(out["cpu"], out["cuda"], 1e-4)


@needs_cuda
def test_lfq_tiny_recipe_trains_on_cuda(tmp_path):
    from l4sim.agents import lfq

    cfg = lfq.recipe_configs("tiny", device="cuda")["offline-small"]
    net, info = lfq.train(cfg, tmp_path / "w.safetensors")
    assert info["flows"] == cfg.flows
    assert next(net.parameters()).device.type == "cpu"
    assert (tmp_path / "w.safetensors").stat().st_size > 0
