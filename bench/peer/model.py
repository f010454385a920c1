"""PyTorch peer of foxhunt's perception model (DESIGN.md §3).

The same model as the C++/CUDA product, written the way a strong PyTorch user
would: plain modules, no custom kernels, no mamba_ssm. It exists to be timed
against the product (bench_peer.py) and must stay shape- and init-identical to
DESIGN §3.

    x [B, K, F] -> variable selection -> Mamba2 m1 (F->D) -> LayerNorm a
      -> u2 = v1 + Mamba2 m2 (D->D) -> LayerNorm b -> h [B, K, D]
      -> attention pool c (CfC initial state) -> CfC recurrence s [B, K, D]
      -> H gated residual heads -> logits [B, K, H]

Runs on torch >= 1.13 (CPU, eager); the GPU modes of bench_peer.py want 2.x.
"""

import math

import torch
import torch.nn.functional as F
from torch import nn


class VariableSelection(nn.Module):
    """g = softmax(W_v x + b_v) over features; x~ = F * g * x (uniform g is identity)."""

    def __init__(self, n_features):
        super().__init__()
        self.proj = nn.Linear(n_features, n_features)
        nn.init.normal_(self.proj.weight, std=1.0 / math.sqrt(n_features))  # N(0, 1/F)
        nn.init.zeros_(self.proj.bias)

    def forward(self, x):
        g = torch.softmax(self.proj(x), dim=-1)
        return x.shape[-1] * g * x


class GatedRMSNorm(nn.Module):
    """RMSNorm(y * SiLU(z)) * w, Mamba2's norm_before_gate=False form."""

    def __init__(self, dim, eps=1e-5):
        super().__init__()
        self.eps = eps
        self.weight = nn.Parameter(torch.ones(dim))

    def forward(self, y, z):
        y = y * F.silu(z)
        return y * torch.rsqrt(y.pow(2).mean(-1, keepdim=True) + self.eps) * self.weight


def segsum(a):
    """Stable segment sums (mamba_ssm's ssd_minimal): a [..., T] -> [..., T, T] with
    out[..., i, j] = a[j+1] + ... + a[i] for i >= j and -inf above the diagonal, so that
    exp(out) is the lower-triangular decay matrix L (no cumsum differences, no overflow)."""
    t = a.shape[-1]
    rep = a[..., None].expand(*a.shape, t)                              # [..., i, j] = a[i]
    strict = torch.tril(torch.ones(t, t, dtype=torch.bool, device=a.device), diagonal=-1)
    seg = torch.cumsum(rep.masked_fill(~strict, 0), dim=-2)
    lower = torch.tril(torch.ones(t, t, dtype=torch.bool, device=a.device), diagonal=0)
    return seg.masked_fill(~lower, -torch.inf)


def ssm_loop(x, dt, A, B, C):
    """The recurrence as written, one step per position (K dependent steps):
        s <- exp(dt*A) s + dt * x (outer) B ;  y = s C     (per head, s: P x N)
    x [b, K, h, P], dt [b, K, h], A [h], B and C [b, K, N] -> y [b, K, h, P] (without D x)."""
    batch, _, n_heads, headdim = x.shape
    decay = torch.exp(dt * A)                                            # [b, K, h]
    # Inputs of every step in one product: dt * x (outer) B -> [b, K, h, P, N].
    dBx = (dt.unsqueeze(-1) * x).unsqueeze(-1) * B[:, :, None, None, :]
    # unbind (not [:, k] indexing): its backward is one stack, where K slices would
    # each scatter into a zero tensor of the full size.
    s = x.new_zeros(batch, n_heads, headdim, B.shape[-1])
    ys = []
    for decay_k, dBx_k, C_k in zip(decay[..., None, None].unbind(1), dBx.unbind(1),
                                   C[:, :, None, :, None].unbind(1)):
        s = decay_k * s + dBx_k
        ys.append(torch.matmul(s, C_k).squeeze(-1))                      # [b, h, P]
    return torch.stack(ys, dim=1)


def ssm_quadratic(x, dt, A, B, C):
    """The SSD ("attention-like") form over all K positions at once:
        y = (L o (C B^T)) (dt x),  L[i, j] = exp(sum_{l=j+1..i} dt_l A) for i >= j, else 0,
    per head: two small batched matrix products instead of K dependent steps."""
    L = torch.exp(segsum((dt * A).transpose(1, 2)))                      # [b, h, K, K]
    G = torch.matmul(C, B.transpose(1, 2))                               # [b, K(i), K(j)]
    xdt = (x * dt.unsqueeze(-1)).transpose(1, 2)                         # [b, h, K, P]
    y = torch.matmul(L * G.unsqueeze(1), xdt)                            # [b, h, K, P]
    return y.transpose(1, 2)


def ssm_chunked(x, dt, A, B, C, chunk=16):
    """The chunked SSD (mamba_ssm's ssd_minimal_discrete, one group): the quadratic form
    inside chunks of `chunk` positions, states passed between chunks by their decays.
    K must be a multiple of chunk."""
    batch, seq_len, n_heads, headdim = x.shape
    nc = seq_len // chunk
    X = (x * dt.unsqueeze(-1)).reshape(batch, nc, chunk, n_heads, headdim)  # [b, c, l, h, p]
    dA = (dt * A).reshape(batch, nc, chunk, n_heads).permute(0, 3, 1, 2)    # [b, h, c, l]
    Bc = B.reshape(batch, nc, chunk, -1)                                    # [b, c, l, n]
    Cc = C.reshape(batch, nc, chunk, -1)
    cum = torch.cumsum(dA, dim=-1)                                          # [b, h, c, l]
    # 1. Inside each chunk (the quadratic form).
    L = torch.exp(segsum(dA))                                               # [b, h, c, l, s]
    G = torch.matmul(Cc, Bc.transpose(-1, -2))                              # [b, c, l, s]
    y_diag = torch.matmul(L * G.unsqueeze(1), X.permute(0, 3, 1, 2, 4))     # [b, h, c, l, p]
    # 2. Each chunk's final state from its own inputs: sum_l exp(cum_end - cum_l) X_l B_l^T.
    decay_states = torch.exp(cum[..., -1:] - cum)                           # [b, h, c, l]
    Xd = X.permute(0, 3, 1, 4, 2) * decay_states.unsqueeze(-2)              # [b, h, c, p, l]
    states = torch.matmul(Xd, Bc.unsqueeze(1))                              # [b, h, c, p, n]
    # 3. Pass the states across chunks (a c+1 x c+1 decay product; zero initial state).
    states = torch.cat([torch.zeros_like(states[:, :, :1]), states], dim=2)
    decay_chunk = torch.exp(segsum(F.pad(cum[..., -1], (1, 0))))            # [b, h, c+1, c+1]
    states = torch.matmul(decay_chunk, states.flatten(-2)).unflatten(-1, states.shape[-2:])[:, :, :-1]
    # 4. Each position's output from the state entering its chunk: C_l . s exp(cum_l).
    y_off = torch.matmul(Cc.unsqueeze(1), states.transpose(-1, -2)) * torch.exp(cum).unsqueeze(-1)
    y = (y_diag + y_off).permute(0, 2, 3, 1, 4)                             # [b, c, l, h, p]
    return y.reshape(batch, seq_len, n_heads, headdim)


SSM_FORMS = {'loop': ssm_loop, 'quadratic': ssm_quadratic, 'chunked': ssm_chunked}


class Mamba2(nn.Module):
    """state-spaces/mamba's Mamba2 block (one group), exact over K.

    The selective scan  s <- exp(dt*A) s + dt * x (outer) B ;  y = s C + D x  (per head,
    s: P x N) in one of three equivalent forms (`form`): 'loop' (K sequential steps),
    'quadratic' (the SSD matrix form over all K) or 'chunked' (SSD in chunks of
    `chunk` positions, mamba_ssm's reference). K need not be a multiple of `chunk`: the
    chunked form then pads the sequence with dt = 0 (no decay, no input).
    """

    def __init__(self, in_dim, d_model, d_state=16, headdim=64, expand=2, d_conv=4,
                 stride=1.0, dt_min=1e-3, dt_max=1e-1, dt_floor=1e-4, A_init_range=(1.0, 16.0),
                 form='loop', chunk=16):
        super().__init__()
        if form not in SSM_FORMS:
            raise ValueError(f'Mamba2 form {form!r}: expected one of {sorted(SSM_FORMS)}')
        self.form, self.chunk = form, chunk
        self.d_inner = expand * d_model
        assert self.d_inner % headdim == 0
        self.d_state = d_state
        self.headdim = headdim
        self.n_heads = self.d_inner // headdim
        self.stride = float(stride)
        conv_dim = self.d_inner + 2 * d_state

        # [z | x, B, C | dt]; Kaiming-uniform (nn.Linear's default, as in mamba_ssm).
        self.in_proj = nn.Linear(in_dim, 2 * self.d_inner + 2 * d_state + self.n_heads, bias=False)
        self.conv1d = nn.Conv1d(conv_dim, conv_dim, d_conv, groups=conv_dim, padding=d_conv - 1)

        # dt_bias = softplus^-1(dt), dt ~ exp U(log dt_min, log dt_max).
        dt = torch.exp(torch.rand(self.n_heads) * (math.log(dt_max) - math.log(dt_min)) + math.log(dt_min))
        dt = dt.clamp(min=dt_floor)
        self.dt_bias = nn.Parameter(dt + torch.log(-torch.expm1(-dt)))
        self.A_log = nn.Parameter(torch.log(torch.empty(self.n_heads).uniform_(*A_init_range)))
        self.D = nn.Parameter(torch.ones(self.n_heads))
        self.norm = GatedRMSNorm(self.d_inner, eps=1e-5)
        self.out_proj = nn.Linear(self.d_inner, d_model, bias=False)

    def ssm(self, x, dt, A, B, C):
        """y without the D x skip; x [b, K, h, P], dt [b, K, h], B and C [b, K, N]."""
        if self.form != 'chunked':
            return SSM_FORMS[self.form](x, dt, A, B, C)
        seq_len = x.shape[1]
        pad = -seq_len % self.chunk
        if pad:   # dt = 0 on the padding: decay 1 and no input, so the real positions are exact
            x, dt, B, C = (F.pad(t, (0, 0) * (t.dim() - 2) + (0, pad)) for t in (x, dt, B, C))
        return ssm_chunked(x, dt, A, B, C, self.chunk)[:, :seq_len]

    def forward(self, u):
        batch, seq_len, _ = u.shape
        n_heads, headdim, d_state = self.n_heads, self.headdim, self.d_state

        z, xBC, dt = torch.split(self.in_proj(u), [self.d_inner, self.d_inner + 2 * d_state, n_heads], dim=-1)
        # Causal depthwise conv along K: pad both sides by width-1, keep the first K outputs.
        xBC = F.silu(self.conv1d(xBC.transpose(1, 2))[..., :seq_len].transpose(1, 2))
        x, B, C = torch.split(xBC, [self.d_inner, d_state, d_state], dim=-1)
        x = x.reshape(batch, seq_len, n_heads, headdim)

        dt = F.softplus(dt + self.dt_bias) * self.stride             # [B, K, nh]
        A = -torch.exp(self.A_log)                                   # [nh]
        y = self.ssm(x, dt, A, B, C) + x * self.D[:, None]           # [B, K, nh, P]
        y = self.norm(y.reshape(batch, seq_len, self.d_inner), z)
        return self.out_proj(y)


class AttentionPool(nn.Module):
    """c = sum_k softmax_k(q . h_k / sqrt(D)) h_k; q = 0 at init (mean pooling)."""

    def __init__(self, d_model):
        super().__init__()
        self.query = nn.Parameter(torch.zeros(d_model))

    def forward(self, h):
        weights = torch.softmax(h @ self.query / math.sqrt(h.shape[-1]), dim=1)  # [B, K]
        return torch.einsum('bk,bkd->bd', weights, h)


class CfC(nn.Module):
    """Closed-form continuous-time cell, exponential integrator:
        pre_k = W_in h_k + W_rec s_{k-1} + b,  tau = softplus(tau_raw) + 0.1,
        e = exp(-dt / tau),  s_k = e * s_{k-1} + (1 - e) * tanh(pre_k),  s_{-1} = c.
    DESIGN §3 gives no init for this cell: Xavier-uniform matrices, b = 0,
    tau_raw = softplus^-1(0.9) (tau = 1.0), as foxhunt's C++ CfC (docs/MAMBA2_CFC.md).
    """

    def __init__(self, d_model, stride=1.0):
        super().__init__()
        self.stride = float(stride)
        self.in_weight = nn.Parameter(torch.empty(d_model, d_model))
        self.rec_weight = nn.Parameter(torch.empty(d_model, d_model))
        self.bias = nn.Parameter(torch.zeros(d_model))
        # softplus(tau_raw) + 0.1 = 1.0 at init, the same as the C++ model.
        self.tau_raw = nn.Parameter(torch.full((d_model,), math.log(math.expm1(0.9))))
        nn.init.xavier_uniform_(self.in_weight)
        nn.init.xavier_uniform_(self.rec_weight)

    def forward(self, h, s0):
        pre_in = F.linear(h, self.in_weight, self.bias)   # W_in h_k + b for all k, one product
        e = torch.exp(-self.stride / (F.softplus(self.tau_raw) + 0.1))
        s = s0
        states = []
        for pre_k in pre_in.unbind(1):
            s = e * s + (1 - e) * torch.tanh(torch.addmm(pre_k, s, self.rec_weight.t()))
            states.append(s)
        return torch.stack(states, dim=1)                  # [B, K, D]


class _HeadFanOut(torch.autograd.Function):
    """Broadcast s [..., D] to the H heads as [..., H, D].

    Forward is a free expand. Backward returns sum_h lambda_h * grad_h: the
    gradient each head sends into the trunk is scaled by lambda_h, while the
    heads' own parameter gradients are untouched. lambda is read when backward
    runs, so the loss may update it in place after forward (it depends on this
    step's per-horizon losses); it is kept on ctx, not save_for_backward, for
    exactly that reason.
    """

    @staticmethod
    def forward(ctx, s, scale):
        ctx.scale = scale
        return s.unsqueeze(-2).expand(*s.shape[:-1], scale.shape[0], s.shape[-1])

    @staticmethod
    def backward(ctx, grad):
        return (grad * ctx.scale[:, None]).sum(-2), None


def _eager_only(fn):
    # The fan-out reads a buffer mutated between forward and backward; keep it out of
    # torch.compile's graphs (a deliberate graph break) so that read stays live.
    compiler = getattr(torch, 'compiler', None)
    if compiler is not None and hasattr(compiler, 'disable'):
        return compiler.disable(fn)
    return fn


@_eager_only
def head_fan_out(s, n_heads, trunk_grad_scale=None):
    if trunk_grad_scale is None or not torch.is_grad_enabled():
        return s.unsqueeze(-2).expand(*s.shape[:-1], n_heads, s.shape[-1])
    return _HeadFanOut.apply(s, trunk_grad_scale)


class GatedResidualHeads(nn.Module):
    """H independent heads, evaluated as one batched product per layer:
        z1 = W1 s + b1; a1 = GELU(z1); z2 = W2 a1 + b2;
        g = w_g.z2 + b_g; m = w_m.z2 + b_m; skip = w_s.s + b_s; logit = skip + sigmoid(g) m.
    Weights Xavier-uniform per head, biases zero.
    """

    def __init__(self, d_model, n_heads, d_mid):
        super().__init__()
        self.n_heads = n_heads
        self.w1_weight = nn.Parameter(torch.empty(n_heads, d_model, d_mid))
        self.w1_bias = nn.Parameter(torch.zeros(n_heads, d_mid))
        self.w2_weight = nn.Parameter(torch.empty(n_heads, d_mid, d_mid))
        self.w2_bias = nn.Parameter(torch.zeros(n_heads, d_mid))
        self.gate_weight = nn.Parameter(torch.empty(n_heads, d_mid))
        self.gate_bias = nn.Parameter(torch.zeros(n_heads))
        self.value_weight = nn.Parameter(torch.empty(n_heads, d_mid))
        self.value_bias = nn.Parameter(torch.zeros(n_heads))
        self.skip_weight = nn.Parameter(torch.empty(n_heads, d_model))
        self.skip_bias = nn.Parameter(torch.zeros(n_heads))
        for h in range(n_heads):
            nn.init.xavier_uniform_(self.w1_weight[h])
            nn.init.xavier_uniform_(self.w2_weight[h])
            for w in (self.gate_weight, self.value_weight, self.skip_weight):
                nn.init.xavier_uniform_(w[h:h + 1])       # a 1 x fan_in matrix, like nn.Linear(fan_in, 1)

    def forward(self, s, trunk_grad_scale=None):
        s = head_fan_out(s, self.n_heads, trunk_grad_scale)                    # [B, K, H, D]
        a1 = F.gelu(torch.einsum('bkhd,hdm->bkhm', s, self.w1_weight) + self.w1_bias)
        z2 = torch.einsum('bkhm,hmn->bkhn', a1, self.w2_weight) + self.w2_bias
        g = (z2 * self.gate_weight).sum(-1) + self.gate_bias
        m = (z2 * self.value_weight).sum(-1) + self.value_bias
        skip = (s * self.skip_weight).sum(-1) + self.skip_bias
        return skip + torch.sigmoid(g) * m                                     # [B, K, H]


class PerceptionModel(nn.Module):
    def __init__(self, F=40, D=128, H=5, d_state=16, headdim=64, expand=2, d_conv=4, head_mid=64, stride=1,
                 form='loop', chunk=16):
        super().__init__()
        self.n_horizons = H
        self.select = VariableSelection(F)
        mamba = dict(d_state=d_state, headdim=headdim, expand=expand, d_conv=d_conv, stride=stride,
                     form=form, chunk=chunk)
        self.m1 = Mamba2(F, D, **mamba)
        self.norm_a = nn.LayerNorm(D)
        self.m2 = Mamba2(D, D, **mamba)
        self.norm_b = nn.LayerNorm(D)
        self.pool = AttentionPool(D)
        self.cfc = CfC(D, stride=stride)
        self.heads = GatedResidualHeads(D, H, head_mid)

    def forward(self, x, trunk_grad_scale=None):
        """x [B, K, F] -> logits [B, K, H]. trunk_grad_scale: optional [H] tensor (lambda),
        applied to the gradient each head sends into the trunk, read at backward time."""
        v1 = self.norm_a(self.m1(self.select(x)))
        h = self.norm_b(v1 + self.m2(v1))
        s = self.cfc(h, self.pool(h))
        return self.heads(s, trunk_grad_scale)

    def param_groups(self):
        """Parameters by LR-multiplier group (mamba, cfc, heads) and weight decay.
        Decay: weight matrices (names ending in 'weight', ndim >= 2: projections, conv,
        W_v, W_in, W_rec, head weights). No decay: biases, norms, A_log, D, dt_bias,
        the pool query, tau_raw."""
        groups = {}
        for name, p in self.named_parameters():
            area = 'heads' if name.startswith('heads.') else 'cfc' if name.startswith(('cfc.', 'pool.')) else 'mamba'
            decay = name.endswith('weight') and p.ndim >= 2
            groups.setdefault((area, decay), []).append(p)
        return groups


def count_parameters(model):
    return sum(p.numel() for p in model.parameters())


def parameter_breakdown(model):
    return {name: sum(p.numel() for p in child.parameters()) for name, child in model.named_children()}


if __name__ == '__main__':
    model = PerceptionModel()
    print('parameters:', count_parameters(model), parameter_breakdown(model))
