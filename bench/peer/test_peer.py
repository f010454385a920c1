"""Self-test of the PyTorch peer: python3 -m pytest test_peer.py, or python3 test_peer.py."""

import os
import sys

import torch

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from model import Mamba2, PerceptionModel, count_parameters  # noqa: E402
from train import KendallClosed, Trainer, masked_bce_per_horizon, random_batch  # noqa: E402

# DESIGN §3 at F=40, D=128, H=5, N=16, headdim 64, HEAD_MID 64 (derivation in docs/PEER.md).
EXPECTED_PARAMETERS = 259_695


def small_batch(batch=3, seq_len=16, seed=0):
    return random_batch(batch, seq_len, 40, 5, 'cpu', torch.Generator().manual_seed(seed))


def test_shapes_and_parameter_count():
    torch.manual_seed(0)
    model = PerceptionModel()
    x, _, _ = small_batch(batch=3, seq_len=64)
    assert model(x).shape == (3, 64, 5)
    assert count_parameters(model) == EXPECTED_PARAMETERS
    assert model.m1.n_heads == 4 and model.m1.d_inner == 256


def test_scan_matches_closed_form():
    """The sequential scan equals the unrolled sum
    y_k = sum_{j<=k} exp(A sum_{i=j+1..k} dt_i) dt_j (C_k . B_j) x_j + D x_k."""
    torch.manual_seed(0)
    block = Mamba2(8, 16, d_state=4, headdim=8).double()
    u = torch.randn(2, 10, 8, dtype=torch.float64)
    got = block(u)

    def closed_form(u):
        B_, K = u.shape[:2]
        z, xBC, dt = torch.split(block.in_proj(u), [block.d_inner, block.d_inner + 2 * block.d_state, block.n_heads], -1)
        xBC = torch.nn.functional.silu(block.conv1d(xBC.transpose(1, 2))[..., :K].transpose(1, 2))
        x, B, C = torch.split(xBC, [block.d_inner, block.d_state, block.d_state], -1)
        x = x.reshape(B_, K, block.n_heads, block.headdim)
        dt = torch.nn.functional.softplus(dt + block.dt_bias) * block.stride
        cum = torch.cumsum(dt * -torch.exp(block.A_log), dim=1)                # [B, K, nh]
        decay = torch.exp(cum[:, :, None, :] - cum[:, None, :, :])             # [B, k, j, nh]
        decay = decay * torch.tril(torch.ones(K, K, dtype=u.dtype))[None, :, :, None]
        cb = torch.einsum('bkn,bjn->bkj', C, B)
        y = torch.einsum('bkjh,bkj,bjh,bjhp->bkhp', decay, cb, dt, x) + x * block.D[:, None]
        return block.out_proj(block.norm(y.reshape(B_, K, block.d_inner), z))

    torch.testing.assert_close(got, closed_form(u))


def test_ssd_forms_match_loop():
    """The quadratic and chunked SSD forms equal the loop form in float64 (block output and
    every gradient, K = 64 and an odd K that pads the last chunk), and the whole float32
    model gives the same logits in every form."""
    from bench_peer import check_forms
    assert check_forms(64, 16) == 0
    x, _, _ = small_batch(batch=2, seq_len=24)
    logits = {}
    for form in ('loop', 'quadratic', 'chunked'):
        torch.manual_seed(0)
        logits[form] = PerceptionModel(form=form, chunk=8)(x)
    torch.testing.assert_close(logits['quadratic'], logits['loop'], rtol=1e-5, atol=1e-5)
    torch.testing.assert_close(logits['chunked'], logits['loop'], rtol=1e-5, atol=1e-5)
    try:
        Mamba2(8, 16, form='scan')
    except ValueError as e:
        assert 'scan' in str(e)
    else:
        raise AssertionError('an unknown form must raise')


def test_gradient_reaches_every_parameter():
    torch.manual_seed(0)
    model = PerceptionModel()
    trainer = Trainer(model)
    total, _ = trainer.loss(*small_batch())
    total.backward()
    missing = [n for n, p in model.named_parameters() if p.grad is None or not torch.any(p.grad != 0)]
    assert not missing, missing


def test_fan_out_gradient_is_weighted_sum():
    from model import head_fan_out
    s = torch.randn(2, 3, 4, requires_grad=True)
    scale = torch.tensor([1.0, 1.5, 2.0])
    out = head_fan_out(s, 3, scale)
    assert out.shape == (2, 3, 3, 4)
    torch.testing.assert_close(out, s.detach().unsqueeze(-2).expand(2, 3, 3, 4))
    head_grads = torch.randn(2, 3, 3, 4)
    out.backward(head_grads)
    torch.testing.assert_close(s.grad, (head_grads * scale[:, None]).sum(-2))


def _grads(lam):
    torch.manual_seed(0)
    model = PerceptionModel()
    x, labels, mask = small_batch()
    scale = torch.ones(5)
    logits = model(x, scale)
    scale.copy_(lam)          # set after forward, as the controllers do: read at backward
    masked_bce_per_horizon(logits, labels, mask).sum().backward()
    return {n: p.grad.clone() for n, p in model.named_parameters()}


def test_lambda_scales_only_the_trunk_gradient():
    ones = _grads(torch.ones(5))
    twos = _grads(torch.full((5,), 2.0))
    mixed = _grads(torch.tensor([1.0, 1.25, 1.5, 1.75, 2.0]))
    for name in ones:
        if name.startswith('heads.'):
            torch.testing.assert_close(twos[name], ones[name], rtol=0, atol=0)
            torch.testing.assert_close(mixed[name], ones[name], rtol=0, atol=0)
        else:
            # The trunk gradient is linear in the head gradients: a uniform 2 doubles it.
            torch.testing.assert_close(twos[name], 2 * ones[name], rtol=1e-5, atol=1e-9)
            assert not torch.allclose(mixed[name], ones[name]), name


def test_controllers():
    ctrl = KendallClosed(5)
    first = torch.tensor([0.6, 0.7, 0.69, 0.5, 0.3])
    ctrl(first)
    torch.testing.assert_close(ctrl.ema, first)                   # first value as is
    lam = ctrl.trunk_grad_scale
    assert torch.all(lam >= 1) and torch.all(lam <= 2)
    z = (first - first.mean()) / first.std(unbiased=False)
    torch.testing.assert_close(ctrl.zmax, z.abs().max())              # first value as is
    torch.testing.assert_close(lam, (1 + z / z.abs().max()).clamp(1, 2))
    assert lam[4] == 1.0 and lam[1] > lam[0] > 1.0                    # below-mean horizons get 1
    ctrl(torch.full((5,), 0.69))
    torch.testing.assert_close(ctrl.ema, 0.99 * first + 0.01 * 0.69)
    # sigma is a constant in the gradient: dTotal/dL_h = 1 / (2 sigma_h^2), sigma >= 0.5.
    losses = torch.tensor([0.1, 0.7, 0.69, 0.5, 0.3], requires_grad=True)
    KendallClosed(5)(losses).backward()
    sigma2 = torch.clamp(losses.detach(), min=0.25)
    torch.testing.assert_close(losses.grad, 0.5 / sigma2)


def test_overfits_constant_signal():
    """A tiny batch whose labels are a fixed function of a constant input: the masked
    BCE must fall well below log 2 within ~100 steps."""
    torch.manual_seed(0)
    model = PerceptionModel()
    trainer = Trainer(model, lr=3e-3, warmup_steps=10, total_steps=200)
    gen = torch.Generator().manual_seed(1)
    x = torch.randn(4, 1, 40, generator=gen).expand(4, 16, 40).contiguous()
    labels = (x[..., :5] > 0).float()
    mask = torch.ones_like(labels)
    first = masked_bce_per_horizon(model(x), labels, mask).mean().item()
    for _ in range(100):
        trainer.step(x, labels, mask)
    with torch.no_grad():
        last = masked_bce_per_horizon(model(x), labels, mask).mean().item()
    print(f'overfit: mean masked BCE {first:.4f} -> {last:.4f}')
    assert last < 0.25 * first and last < 0.1


def test_c51_vector_projection_equals_cleanrl_loop():
    """The C51 peer's vectorised projection (bench/peer/c51_cartpole.py) equals CleanRL's
    per-row loop, the l = u case (targets landing on an atom) included, and keeps mass 1."""
    import types
    from c51_cartpole import project
    a = types.SimpleNamespace(gamma=0.99, v_min=-100.0, v_max=100.0, n_atoms=101)
    atoms = torch.linspace(a.v_min, a.v_max, a.n_atoms)
    g = torch.Generator().manual_seed(3)
    pmfs = torch.softmax(torch.randn(64, a.n_atoms, generator=g), dim=1)
    rw = torch.randint(-3, 4, (64,), generator=g).float() * 2.0  # often exactly on an atom
    dn = (torch.rand(64, generator=g) < 0.5).float()
    vec = project(pmfs, rw, dn, atoms, a, vector=True)
    loop = project(pmfs, rw, dn, atoms, a, vector=False)
    assert torch.allclose(vec, loop, atol=1e-6)
    assert torch.allclose(vec.sum(1), torch.ones(64), atol=1e-5)
    # A done row with reward 2 puts all its mass on the atom at 2 (index 51).
    k = int(torch.nonzero(dn * (rw == 2.0))[0])
    assert abs(float(vec[k, 51]) - 1.0) < 1e-6


if __name__ == '__main__':
    torch.set_num_threads(os.cpu_count())
    print('parameters:', count_parameters(PerceptionModel()))
    failed = 0
    for name, fn in list(globals().items()):
        if name.startswith('test_') and callable(fn):
            try:
                fn()
                print('PASS', name)
            except Exception as e:  # noqa: BLE001 - report every test
                failed += 1
                print('FAIL', name, repr(e))
    sys.exit(1 if failed else 0)
