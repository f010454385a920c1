"""Loss, controllers, optimizer and the training step of the PyTorch peer
(DESIGN.md §4, §5). Everything the step touches is a tensor on the model's
device — no .item(), no host branches — so the whole step can be captured as
one CUDA graph (bench_peer.py, modes graph and compile+graph).
"""

import math

import torch
import torch.nn.functional as F
from torch import nn


def masked_bce_per_horizon(logits, labels, mask):
    """L_h = sum(m * bce) / sum(m) over batch and positions; logits, labels, mask [B, K, H]."""
    bce = F.binary_cross_entropy_with_logits(logits, labels, reduction='none')
    return (bce * mask).sum((0, 1)) / mask.sum((0, 1)).clamp(min=1.0)


class KendallClosed(nn.Module):
    """Horizon weighting `kendall-closed` and the trunk-gradient scale lambda.

    ema_h: EMA of L_h (first value as is, then alpha); log sigma_h = max(log 0.5, log(ema_h)/2);
    total = sum_h L_h / (2 sigma_h^2) + log sigma_h with sigma constant in the gradient.
    z_h = z-score of ema across horizons (population std); zmax = EMA of max_h |z_h|
    (first value as is); lambda_h = clamp(1 + z_h / zmax, 1, 2), written in place into
    `trunk_grad_scale`, which the model's head fan-out reads during this step's backward.
    The 1e-12 guards only matter when all horizons have the same ema (then z = 0, lambda = 1).
    """

    def __init__(self, n_horizons, alpha=0.01, use_lambda=True):
        super().__init__()
        self.alpha = alpha
        self.use_lambda = use_lambda
        self.register_buffer('ema', torch.zeros(n_horizons))
        self.register_buffer('zmax', torch.zeros(()))
        self.register_buffer('updates', torch.zeros((), dtype=torch.long))
        self.register_buffer('trunk_grad_scale', torch.ones(n_horizons))

    @torch.no_grad()
    def _update(self, losses):
        first = self.updates == 0
        self.ema.copy_(torch.where(first, losses, torch.lerp(self.ema, losses, self.alpha)))
        self.updates += 1
        if self.use_lambda:
            z = (self.ema - self.ema.mean()) / self.ema.std(unbiased=False).clamp(min=1e-12)
            zabs = z.abs().max()
            self.zmax.copy_(torch.where(first, zabs, torch.lerp(self.zmax, zabs, self.alpha)))
            self.trunk_grad_scale.copy_((1 + z / self.zmax.clamp(min=1e-12)).clamp(1.0, 2.0))

    def forward(self, losses):
        self._update(losses.detach())
        log_sigma = torch.clamp(0.5 * torch.log(self.ema), min=math.log(0.5))
        return (losses * (0.5 * torch.exp(-2 * log_sigma)) + log_sigma).sum()


def lr_factor(step, warmup_steps, total_steps):
    """Linear warm-up to 1 over warmup_steps, then cosine decay to 0 at total_steps.
    `step` (0-based) is a Python number or a device tensor; the result has the same kind."""
    if isinstance(step, torch.Tensor):
        t = step.float()
        warm = (t + 1) / warmup_steps
        progress = ((t - warmup_steps) / max(total_steps - warmup_steps, 1)).clamp(0.0, 1.0)
        return torch.where(t < warmup_steps, warm, 0.5 * (1 + torch.cos(math.pi * progress)))
    if step < warmup_steps:
        return (step + 1) / warmup_steps
    progress = min(max((step - warmup_steps) / max(total_steps - warmup_steps, 1), 0.0), 1.0)
    return 0.5 * (1 + math.cos(math.pi * progress))


class Trainer:
    """One training step: forward, masked BCE, kendall-closed + lambda, backward,
    global-norm clip, LR schedule, AdamW.

    graph_safe=True keeps the step counter and the learning rates as device tensors
    (AdamW capturable, fused) so `step` can be captured in a CUDA graph; otherwise the
    schedule runs on the host with float learning rates (the usual eager loop).
    `forward` may be a torch.compile'd wrapper of `model`.
    """

    def __init__(self, model, lr=1e-3, weight_decay=0.01, clip=1.0, warmup_steps=500, total_steps=20000,
                 lr_mult=None, use_lambda=True, graph_safe=False, fused=None, forward=None,
                 autocast_dtype=None):
        self.model = model
        self.autocast_dtype = autocast_dtype
        self.forward = model if forward is None else forward
        self.clip = clip
        self.base_lr = lr
        self.warmup_steps, self.total_steps = warmup_steps, total_steps
        device = next(model.parameters()).device
        self.controller = KendallClosed(model.n_horizons, use_lambda=use_lambda).to(device)
        self.params = [p for p in model.parameters()]
        lr_mult = lr_mult or {}
        self.graph_safe = graph_safe

        def lr_value(mult):
            return torch.tensor(lr * mult, device=device) if graph_safe else lr * mult

        groups = [dict(params=ps, name=f'{area}/{"decay" if decay else "no_decay"}',
                       weight_decay=weight_decay if decay else 0.0, lr_mult=lr_mult.get(area, 1.0),
                       lr=lr_value(lr_mult.get(area, 1.0)))
                  for (area, decay), ps in model.param_groups().items()]
        kwargs = dict(lr=lr_value(1.0), betas=(0.9, 0.999), eps=1e-8)
        if fused is None:
            fused = device.type == 'cuda'
        if fused:
            kwargs['fused'] = True
        if graph_safe:
            kwargs['capturable'] = True
        self.optimizer = torch.optim.AdamW(groups, **kwargs)
        self.step_count = torch.zeros((), dtype=torch.long, device=device) if graph_safe else 0

    def _set_lr(self):
        if self.graph_safe:
            with torch.no_grad():
                factor = lr_factor(self.step_count, self.warmup_steps, self.total_steps) * self.base_lr
                for group in self.optimizer.param_groups:
                    group['lr'].copy_(factor * group['lr_mult'])
                self.step_count += 1
        else:
            factor = lr_factor(self.step_count, self.warmup_steps, self.total_steps) * self.base_lr
            for group in self.optimizer.param_groups:
                group['lr'] = factor * group['lr_mult']
            self.step_count += 1

    def loss(self, x, labels, mask):
        """Forward and the total loss (updates the controllers); returns (total, per-horizon L_h).
        With autocast_dtype (bf16) the forward runs under torch.autocast (products in bf16,
        FP32 accumulation; cache off, as CUDA-graph capture needs); the loss and controllers
        stay FP32."""
        if self.autocast_dtype is None:
            logits = self.forward(x, self.controller.trunk_grad_scale)
        else:
            with torch.autocast(x.device.type, dtype=self.autocast_dtype, cache_enabled=False):
                logits = self.forward(x, self.controller.trunk_grad_scale)
        per_horizon = masked_bce_per_horizon(logits.float(), labels, mask)
        return self.controller(per_horizon), per_horizon

    def step(self, x, labels, mask, zero_grad=True):
        """Returns the total loss as a device tensor (read it only when reporting).
        zero_grad=False inside a CUDA-graph capture: the grads were set to None before
        capture, so the captured backward writes them rather than accumulating."""
        if zero_grad:
            self.optimizer.zero_grad(set_to_none=True)
        total, _ = self.loss(x, labels, mask)
        total.backward()
        torch.nn.utils.clip_grad_norm_(self.params, self.clip)
        self._set_lr()
        self.optimizer.step()
        return total.detach()


def random_batch(batch, seq_len, n_features, n_horizons, device, generator=None, mask_prob=0.9):
    """Random features N(0, 1), labels Bernoulli(0.5), masks Bernoulli(mask_prob)."""
    x = torch.randn(batch, seq_len, n_features, generator=generator).to(device)
    labels = torch.randint(0, 2, (batch, seq_len, n_horizons), generator=generator).float().to(device)
    mask = (torch.rand(batch, seq_len, n_horizons, generator=generator) < mask_prob).float().to(device)
    return x, labels, mask
