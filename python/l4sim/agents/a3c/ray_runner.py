"""A3C-L4S workers as Ray tasks through :mod:`l4sim.executors` (a cluster has no shared
memory, so Hogwild becomes a parameter server): a Ray actor holds the global actor, critic
and their Adam optimisers; each worker (one executor task, :func:`_ray_worker`) sends its
gradients every 5 steps and gets the new weights back — the same Algorithm 3 as the
``torch.multiprocessing`` workers of :func:`l4sim.agents.a3c.train`, with the same code
(:func:`l4sim.agents.a3c.worker.run_worker`)."""

from __future__ import annotations

import time
from typing import Any

import torch

from l4sim.agents.a3c.model import A3cConfig, Actor, Critic
from l4sim.agents.a3c.worker import run_worker


class ParamServer:
    """The global networks (a Ray actor): apply a worker's gradients, return the weights."""

    def __init__(self, actor: dict[str, Any], critic: dict[str, Any], cfg: A3cConfig):
        torch.set_num_threads(1)
        self.actor, self.critic = Actor(), Critic()
        self.actor.load_state_dict(actor)
        self.critic.load_state_dict(critic)
        self.opt_a = torch.optim.Adam(self.actor.parameters(), lr=cfg.actor_lr)
        self.opt_c = torch.optim.Adam(self.critic.parameters(), lr=cfg.critic_lr)

    def weights(self) -> tuple[dict[str, Any], dict[str, Any]]:
        return self.actor.state_dict(), self.critic.state_dict()

    def apply(
        self, grads_a: list[torch.Tensor | None], grads_c: list[torch.Tensor | None]
    ) -> tuple[dict[str, Any], dict[str, Any]]:
        for net, opt, grads in (
            (self.actor, self.opt_a, grads_a),
            (self.critic, self.opt_c, grads_c),
        ):
            opt.zero_grad()
            for p, g in zip(net.parameters(), grads, strict=True):
                p.grad = g
            opt.step()
        return self.weights()


def _ray_worker(item: tuple[int, A3cConfig, Any]) -> list[tuple[int, int, float, float]]:
    """One worker as an executor task; returns its (worker, episode, reward, wall s) rows."""
    import ray

    wid, cfg, ps = item
    t0 = time.perf_counter()
    rows: list[tuple[int, int, float, float]] = []

    def sync(la: Actor, lc: Critic) -> None:
        ga = [p.grad for p in la.parameters()]
        gc = [p.grad for p in lc.parameters()]
        wa, wc = ray.get(ps.apply.remote(ga, gc))
        la.load_state_dict(wa)
        lc.load_state_dict(wc)

    init = ray.get(ps.weights.remote())
    run_worker(
        wid, cfg, init, sync, lambda w, e, r, n: rows.append((w, e, r, time.perf_counter() - t0))
    )
    return rows


def _ready(_: Any) -> None:
    """A no-op task: makes the executor start (or join) Ray."""


def train_ray(
    cfg: A3cConfig, actor: Actor, critic: Critic, _opt_a: Any, _opt_c: Any
) -> list[tuple[int, int, float, float]]:
    """Run ``cfg.workers`` workers on Ray (``cfg.ray``: ``"local"`` or an address); the
    final global weights are copied into ``actor`` / ``critic``."""
    import ray

    from l4sim.executors import make_executor

    with make_executor(jobs=cfg.workers + 1, ray=cfg.ray) as ex:
        list(ex.map(_ready, [None]))
        ps = ray.remote(num_cpus=0)(ParamServer).remote(
            actor.state_dict(), critic.state_dict(), cfg
        )
        curve: list[tuple[int, int, float, float]] = []
        for _i, out in ex.map(_ray_worker, [(w, cfg, ps) for w in range(cfg.workers)]):
            if not out.ok:
                raise RuntimeError(f"A3C Ray worker failed: {out.error}")
            curve += out.value
        wa, wc = ray.get(ps.weights.remote())
        actor.load_state_dict(wa)
        critic.load_state_dict(wc)
    curve.sort(key=lambda c: c[3])
    return curve
