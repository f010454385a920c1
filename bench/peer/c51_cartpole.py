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
        return action, pmfs[torch.arange(len(x), device=x.device), action]


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

def project(next_pmfs, rw, dn, atoms, a, vector):
    """C51's projection of r + gamma * z onto the support (the l = u case kept)."""
    next_atoms = rw.unsqueeze(1) + a.gamma * atoms * (1 - dn.unsqueeze(1))
    delta_z = atoms[1] - atoms[0]
    tz = next_atoms.clamp(a.v_min, a.v_max)
    b = (tz - a.v_min) / delta_z
    l, u = b.floor().clamp(0, a.n_atoms - 1), b.ceil().clamp(0, a.n_atoms - 1)
    d_m_l = (u + (l == u).float() - b) * next_pmfs
    d_m_u = (b - l) * next_pmfs
    target_pmfs = torch.zeros_like(next_pmfs)
    if vector:
        offset = (torch.arange(next_pmfs.size(0), device=next_pmfs.device) * a.n_atoms).unsqueeze(1)
        flat = target_pmfs.view(-1)
        flat.index_add_(0, (l.long() + offset).view(-1), d_m_l.reshape(-1))
        flat.index_add_(0, (u.long() + offset).view(-1), d_m_u.reshape(-1))
    else:
        for i in range(target_pmfs.size(0)):
            target_pmfs[i].index_add_(0, l[i].long(), d_m_l[i])
            target_pmfs[i].index_add_(0, u[i].long(), d_m_u[i])
    return target_pmfs


class Updater:
    """One C51 update and the acting forward, in the mode asked for (--mode)."""

    def __init__(self, q, target, opt, a, device):
        self.q, self.target, self.opt, self.a, self.device = q, target, opt, a, device
        self.vector = a.projection == "vector"
        self.graph = self.act_graph = None
        self.updates = 0
        opt_step = opt.step
        if a.mode in ("compile", "compile-graph"):
            kw = {"mode": "reduce-overhead"} if a.mode == "compile-graph" else {}
            self.loss_fn = torch.compile(self.loss, **kw)
            opt_step = torch.compile(opt.step, **kw)
        else:
            self.loss_fn = self.loss
        self.opt_step = opt_step
        if a.mode == "graph":
            B = a.batch_size
            self.s_o = torch.zeros(B, 4, device=device)
            self.s_n = torch.zeros(B, 4, device=device)
            self.s_ac = torch.zeros(B, dtype=torch.int64, device=device)
            self.s_rw = torch.zeros(B, device=device)
            self.s_dn = torch.zeros(B, device=device)
            self.s_obs = torch.zeros(1, 4, device=device)

    def loss(self, o, n, ac, rw, dn):
        with torch.no_grad():
            _, next_pmfs = self.target.get_action(n)
            target_pmfs = project(next_pmfs, rw, dn, self.target.atoms, self.a, self.vector)
        _, old_pmfs = self.q.get_action(o, ac)
        return (-(target_pmfs * old_pmfs.clamp(1e-5, 1 - 1e-5).log()).sum(-1)).mean()

    def step(self, o, n, ac, rw, dn, zero_grad=True):
        if zero_grad:
            self.opt.zero_grad(set_to_none=True)
        loss = self.loss_fn(o, n, ac, rw, dn)
        loss.backward()
        self.opt_step()
        return loss

    def update(self, o, n, ac, rw, dn):
        dev = self.device
        if self.a.mode == "compile-graph":  # the compiled graphs' outputs are reused per step
            torch.compiler.cudagraph_mark_step_begin()
        if self.a.mode != "graph":
            self.step(torch.tensor(o, device=dev), torch.tensor(n, device=dev),
                      torch.tensor(ac, device=dev), torch.tensor(rw, device=dev),
                      torch.tensor(dn, device=dev))
            return
        for s, v in ((self.s_o, o), (self.s_n, n), (self.s_ac, ac), (self.s_rw, rw), (self.s_dn, dn)):
            s.copy_(torch.from_numpy(v), non_blocking=False)
        self.updates += 1
        if self.graph is not None:
            self.graph.replay()
            return
        if self.updates <= 3:  # warm-up updates (real ones) on a side stream, as the docs ask
            side = torch.cuda.Stream()
            side.wait_stream(torch.cuda.current_stream())
            with torch.cuda.stream(side):
                self.step(self.s_o, self.s_n, self.s_ac, self.s_rw, self.s_dn)
            torch.cuda.current_stream().wait_stream(side)
            return
        # Captured as in PyTorch's "whole network capture": gradients set to None before the
        # capture, so the captured backward writes them (no zeroing inside the graph).
        self.graph = torch.cuda.CUDAGraph()
        self.opt.zero_grad(set_to_none=True)
        with torch.cuda.graph(self.graph):
            self.step(self.s_o, self.s_n, self.s_ac, self.s_rw, self.s_dn, zero_grad=False)
        self.graph.replay()

    def act(self, obs):
        with torch.no_grad():
            if self.a.mode != "graph":
                return int(self.q.get_action(torch.tensor(obs, device=self.device).unsqueeze(0))[0].item())
            self.s_obs.copy_(torch.from_numpy(obs).unsqueeze(0))
            if self.act_graph is None:
                side = torch.cuda.Stream()
                side.wait_stream(torch.cuda.current_stream())
                with torch.cuda.stream(side):
                    self.q.get_action(self.s_obs)
                torch.cuda.current_stream().wait_stream(side)
                self.act_graph = torch.cuda.CUDAGraph()
                with torch.cuda.graph(self.act_graph):
                    self.s_act, _ = self.q.get_action(self.s_obs)
            self.act_graph.replay()
            return int(self.s_act.item())


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
    p.add_argument("--mode", default="eager", choices=["eager", "compile", "compile-graph", "graph"],
                   help="eager: CleanRL's code; compile: torch.compile of the loss and of the "
                        "optimizer step; compile-graph: the same with mode='reduce-overhead' "
                        "(CUDA graphs); graph: the whole update and the acting forward captured "
                        "as CUDA graphs by hand")
    p.add_argument("--projection", default="vector", choices=["vector", "loop"],
                   help="vector: one index_add_ over the flattened batch; loop: CleanRL's "
                        "per-row loop (two index_add_ calls per row)")
    a = p.parse_args()
    random.seed(a.seed)
    np.random.seed(a.seed)
    torch.manual_seed(a.seed)
    device = torch.device(a.device)
    q = QNetwork(2, a.n_atoms, a.v_min, a.v_max).to(device)
    graphed = a.mode == "graph"
    if graphed and device.type != "cuda":
        sys.exit("c51_cartpole.py: --mode graph needs --device cuda")
    opt = optim.Adam(q.parameters(), lr=a.learning_rate, eps=0.01 / a.batch_size,
                     capturable=graphed)
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
    updater = Updater(q, target, opt, a, device)
    for step in range(a.total_timesteps):
        eps = max(a.end_e, a.start_e + (a.end_e - a.start_e) * step /
                  (a.exploration_fraction * a.total_timesteps))
        if random.random() < eps:
            action = random.randrange(2)
        else:
            action = updater.act(obs)
        nxt, r, term, trunc = env.step(action)
        obs_b[pos], next_b[pos], act_b[pos], rew_b[pos], done_b[pos] = obs, nxt, action, r, term
        pos, size = (pos + 1) % a.buffer_size, min(size + 1, a.buffer_size)
        obs = env.reset() if term or trunc else nxt
        if step > a.learning_starts and step % a.train_frequency == 0:
            idx = np.random.randint(0, size, a.batch_size)
            updater.update(obs_b[idx], next_b[idx], act_b[idx], rew_b[idx], done_b[idx])
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
           "mode": a.mode, "projection": a.projection,
           "torch": torch.__version__, "wall_seconds": wall, "env_steps": step + 1,
           "reached_stop_return_at": reached, "eval_return": last_eval}
    print(json.dumps(res))
    if a.out:
        with open(a.out, "w") as f:
            json.dump(res, f, indent=2)


if __name__ == "__main__":
    main()
