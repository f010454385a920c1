#!/usr/bin/env python3
"""CleanRL-style C51 on CartPole-v1 in PyTorch: the peer `fxt rl train --env cartpole` is timed
against (docs/RL.md). One file, as simple as CleanRL's c51.py (same hyper-parameters, same
network 120-84, same schedule); CartPole-v1 is written out here with gym's exact float64 Euler
dynamics so the peer needs no gym install on the GPU machine.

  python3 c51_cartpole.py --seed 1 --device cuda --total-timesteps 500000 --out c51_s1.json

Prints and writes: wall seconds, env steps, the first step at which a 100-episode greedy
evaluation (every --eval-every steps) reached --stop-return, and the final evaluation mean.
"""

import argparse
import json
import math
import random
import sys
import time

import numpy as np
import torch
import torch.nn as nn
import torch.optim as optim


class CartPole:
    """gym's CartPole-v1: push left/right, reward 1 per step, 12 degrees / 2.4 m, 500 steps."""

    def __init__(self, rng):
        self.rng = rng

    def reset(self):
        self.s = self.rng.uniform(-0.05, 0.05, size=4)
        self.t = 0
        return self.s.astype(np.float32)

    def step(self, a):
        x, x_dot, th, th_dot = self.s
        force = 10.0 if a == 1 else -10.0
        c, s = math.cos(th), math.sin(th)
        temp = (force + 0.05 * th_dot * th_dot * s) / 1.1
        th_acc = (9.8 * s - c * temp) / (0.5 * (4.0 / 3.0 - 0.1 * c * c / 1.1))
        x_acc = temp - 0.05 * th_acc * c / 1.1
        self.s = np.array([x + 0.02 * x_dot, x_dot + 0.02 * x_acc, th + 0.02 * th_dot,
                           th_dot + 0.02 * th_acc])
        self.t += 1
        term = abs(self.s[0]) > 2.4 or abs(self.s[2]) > 12 * 2 * math.pi / 360
        trunc = not term and self.t >= 500
        return self.s.astype(np.float32), 1.0, term, trunc


class QNetwork(nn.Module):
    def __init__(self, n_actions, n_atoms, v_min, v_max):
        super().__init__()
        self.register_buffer("atoms", torch.linspace(v_min, v_max, steps=n_atoms))
        self.n, self.n_atoms = n_actions, n_atoms
        self.network = nn.Sequential(nn.Linear(4, 120), nn.ReLU(), nn.Linear(120, 84), nn.ReLU(),
                                     nn.Linear(84, n_actions * n_atoms))

    def get_action(self, x, action=None):
        logits = self.network(x)
        pmfs = torch.softmax(logits.view(len(x), self.n, self.n_atoms), dim=2)
        q_values = (pmfs * self.atoms).sum(2)
        if action is None:
            action = torch.argmax(q_values, 1)
        return action, pmfs[torch.arange(len(x)), action]


def evaluate(q, device, episodes, seed):
    rng = np.random.default_rng(seed)
    total = []
    for _ in range(episodes):
        env = CartPole(rng)
        obs, ret, done = env.reset(), 0.0, False
        while not done:
            with torch.no_grad():
                a, _ = q.get_action(torch.tensor(obs, device=device).unsqueeze(0))
            obs, r, term, trunc = env.step(int(a.item()))
            ret += r
            done = term or trunc
        total.append(ret)
    return float(np.mean(total))


def main():
    p = argparse.ArgumentParser()
    p.add_argument("--seed", type=int, default=1)
    p.add_argument("--device", default="cuda" if torch.cuda.is_available() else "cpu")
    p.add_argument("--total-timesteps", type=int, default=500000)
    p.add_argument("--learning-rate", type=float, default=2.5e-4)
    p.add_argument("--n-atoms", type=int, default=101)
    p.add_argument("--v-min", type=float, default=-100)
    p.add_argument("--v-max", type=float, default=100)
    p.add_argument("--buffer-size", type=int, default=10000)
    p.add_argument("--gamma", type=float, default=0.99)
    p.add_argument("--target-network-frequency", type=int, default=500)
    p.add_argument("--batch-size", type=int, default=128)
    p.add_argument("--start-e", type=float, default=1)
    p.add_argument("--end-e", type=float, default=0.05)
    p.add_argument("--exploration-fraction", type=float, default=0.5)
    p.add_argument("--learning-starts", type=int, default=10000)
    p.add_argument("--train-frequency", type=int, default=10)
    p.add_argument("--eval-every", type=int, default=10000)
    p.add_argument("--eval-episodes", type=int, default=100)
    p.add_argument("--stop-return", type=float, default=475)
    p.add_argument("--out", default="")
    p.add_argument("--progress-every", type=int, default=0,
                   help="print {step, seconds} to stderr every N env steps (0: never), so a "
                        "time-limited run still gives its rate")
    a = p.parse_args()
    random.seed(a.seed)
    np.random.seed(a.seed)
    torch.manual_seed(a.seed)
    device = torch.device(a.device)
    q = QNetwork(2, a.n_atoms, a.v_min, a.v_max).to(device)
    opt = optim.Adam(q.parameters(), lr=a.learning_rate, eps=0.01 / a.batch_size)
    target = QNetwork(2, a.n_atoms, a.v_min, a.v_max).to(device)
    target.load_state_dict(q.state_dict())
    obs_b = np.zeros((a.buffer_size, 4), np.float32)
    next_b = np.zeros((a.buffer_size, 4), np.float32)
    act_b = np.zeros(a.buffer_size, np.int64)
    rew_b = np.zeros(a.buffer_size, np.float32)
    done_b = np.zeros(a.buffer_size, np.float32)
    size = pos = 0
    env = CartPole(np.random.default_rng(a.seed))
    obs = env.reset()
    t0 = time.perf_counter()
    reached, last_eval = -1, float("nan")
    for step in range(a.total_timesteps):
        eps = max(a.end_e, a.start_e + (a.end_e - a.start_e) * step /
                  (a.exploration_fraction * a.total_timesteps))
        if random.random() < eps:
            action = random.randrange(2)
        else:
            with torch.no_grad():
                action = int(q.get_action(torch.tensor(obs, device=device).unsqueeze(0))[0].item())
        nxt, r, term, trunc = env.step(action)
        obs_b[pos], next_b[pos], act_b[pos], rew_b[pos], done_b[pos] = obs, nxt, action, r, term
        pos, size = (pos + 1) % a.buffer_size, min(size + 1, a.buffer_size)
        obs = env.reset() if term or trunc else nxt
        if step > a.learning_starts and step % a.train_frequency == 0:
            idx = np.random.randint(0, size, a.batch_size)
            o = torch.tensor(obs_b[idx], device=device)
            n = torch.tensor(next_b[idx], device=device)
            ac = torch.tensor(act_b[idx], device=device)
            rw = torch.tensor(rew_b[idx], device=device)
            dn = torch.tensor(done_b[idx], device=device)
            with torch.no_grad():
                _, next_pmfs = target.get_action(n)
                next_atoms = rw.unsqueeze(1) + a.gamma * target.atoms * (1 - dn.unsqueeze(1))
                delta_z = target.atoms[1] - target.atoms[0]
                tz = next_atoms.clamp(a.v_min, a.v_max)
                b = (tz - a.v_min) / delta_z
                l, u = b.floor().clamp(0, a.n_atoms - 1), b.ceil().clamp(0, a.n_atoms - 1)
                d_m_l = (u + (l == u).float() - b) * next_pmfs
                d_m_u = (b - l) * next_pmfs
                target_pmfs = torch.zeros_like(next_pmfs)
                for i in range(target_pmfs.size(0)):
                    target_pmfs[i].index_add_(0, l[i].long(), d_m_l[i])
                    target_pmfs[i].index_add_(0, u[i].long(), d_m_u[i])
            _, old_pmfs = q.get_action(o, ac)
            loss = (-(target_pmfs * old_pmfs.clamp(1e-5, 1 - 1e-5).log()).sum(-1)).mean()
            opt.zero_grad()
            loss.backward()
            opt.step()
        if step % a.target_network_frequency == 0:
            target.load_state_dict(q.state_dict())
        if a.progress_every > 0 and (step + 1) % a.progress_every == 0:
            print(json.dumps({"step": step + 1, "seconds": time.perf_counter() - t0}),
                  file=sys.stderr, flush=True)
        if a.eval_every > 0 and (step + 1) % a.eval_every == 0:
            last_eval = evaluate(q, device, a.eval_episodes, 0x5EED)
            if last_eval >= a.stop_return:
                reached = step + 1
                break
    wall = time.perf_counter() - t0
    res = {"peer": "cleanrl-style c51 (pytorch)", "device": str(device), "seed": a.seed,
           "torch": torch.__version__, "wall_seconds": wall, "env_steps": step + 1,
           "reached_stop_return_at": reached, "eval_return": last_eval}
    print(json.dumps(res))
    if a.out:
        with open(a.out, "w") as f:
            json.dump(res, f, indent=2)


if __name__ == "__main__":
    main()
