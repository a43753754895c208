"""Stable-Baselines3 PPO learns a TCP window on l4sim (the longer example behind the test).

    python examples/sb3_ppo_tcp_cwnd.py [--steps 20000] [--seed 0] [--tensorboard DIR]

The agent sets the congestion window of one flow (``l4sim/TcpCwnd-v0``, continuous action
cwnd x 2^a every 100 ms, the normalised ``tcp`` reward: goodput share minus queueing delay)
on the default 10 Mbps / 20 ms dumbbell. After training it runs one greedy episode and prints
utilisation, mean queue delay and the window it settled on, beside the path's BDP.
"""

from __future__ import annotations

import argparse
import time

import gymnasium as gym
import numpy as np
from stable_baselines3 import PPO
from stable_baselines3.common.logger import Logger

import l4sim.envs  # noqa: F401  (registers the l4sim/ environments)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--steps", type=int, default=20_000, help="training steps (100 ms each)")
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--tensorboard", metavar="DIR", help="write TensorBoard logs (SB3's) here")
    args = ap.parse_args()

    env = gym.make("l4sim/TcpCwnd-v0", action_set="continuous", episode_steps=200)
    n_steps = min(1024, max(64, args.steps))  # one rollout at most the whole budget
    model = PPO(
        "MlpPolicy",
        env,
        n_steps=n_steps,
        batch_size=min(256, n_steps),
        seed=args.seed,
        device="cpu",
        tensorboard_log=args.tensorboard,
    )
    if not args.tensorboard:
        # SB3's default logger makes an empty /tmp/SB3-<date> folder even when it writes
        # nothing; a logger with no outputs writes nowhere.
        model.set_logger(Logger(folder=None, output_formats=[]))
    if args.tensorboard:
        print(f"TensorBoard logs in {args.tensorboard}: tensorboard --logdir {args.tensorboard}")
    t0 = time.perf_counter()
    model.learn(total_timesteps=args.steps)
    wall = time.perf_counter() - t0

    obs, _ = env.reset(seed=args.seed + 1)
    cwnds, rewards = [], []
    done = False
    while not done:
        action, _ = model.predict(obs, deterministic=True)
        obs, reward, terminated, truncated, _ = env.step(action)
        rewards.append(reward)
        cwnds.append(env.unwrapped.record.cwnd_pkts)
        done = terminated or truncated
    summary = env.unwrapped.sim.summary()
    q = next(q for q in summary["queues"] if q["link"] == "r0->r1")
    bdp = 10e6 * 0.044 / 8 / 1500
    print(f"trained {args.steps} steps in {wall:.0f} s ({args.steps / wall:.0f} steps/s)")
    print(f"greedy episode: return {sum(rewards):.1f}, utilisation {q['utilization']:.3f}, ")
    print(f"  mean queue delay {q['sojourn_mean_s'] * 1e3:.1f} ms, ")
    print(f"  cwnd over the last 50 steps {np.mean(cwnds[-50:]):.0f} packets (BDP {bdp:.0f})")


if __name__ == "__main__":
    main()
