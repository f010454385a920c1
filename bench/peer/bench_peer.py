#!/usr/bin/env python3
"""Times the PyTorch peer (DESIGN.md §11): one full training step (forward, loss with
controllers, backward, clip, AdamW) at each --batch with K = 64, and forward-only
latency at B = 1, on random data. Prints a table and writes JSON.

Every combination of --precisions x --forms x --batch x --modes is one row; the summary
names the best peer (fastest form and mode) per precision and batch size.

Forms (the Mamba2 scan, model.py): loop (K sequential steps), quadratic (the SSD matrix
form over all K), chunked (SSD in chunks of --chunk positions).
Precisions: fp32 (torch.set_float32_matmul_precision('highest'), cuDNN TF32 off),
  tf32 ('high', cuDNN TF32 on), bf16 (torch.autocast(bfloat16) around the forward;
  FP32 master weights, AdamW state and the rest).

Modes:
  eager          plain PyTorch (CPU or CUDA; fused AdamW on CUDA).
  graph          CUDA: the whole step captured once with torch.cuda.graph and replayed;
                 AdamW fused + capturable, step counter and LR on the device.
  compile        CUDA: torch.compile(model) (mode from --compile-mode), eager step around it.
  compile+graph  CUDA: the compiled model (Inductor mode "default", which makes no CUDA
                 graphs of its own), whole step then captured manually with torch.cuda.graph.
                 --compile-mode max-autotune-no-cudagraphs also works but autotunes each GEMM
                 shape for ~30 s on an H200 (well over 10 minutes for this model).

Timing: --warmup steps, then the median of --steps per-step times (CUDA events around each
step with no host sync between steps; perf_counter on CPU). The wall-clock mean over the
same steps is reported too.

  python3 bench_peer.py --device cpu --modes eager --batch 32 --steps 5 --out peer_cpu.json
  python3 bench_peer.py --device cuda --modes eager graph compile compile+graph --batch 32 256 --out peer_h200.json
"""

import argparse
import datetime
import json
import os
import platform
import statistics
import sys
import time

import torch

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from model import Mamba2, PerceptionModel, count_parameters  # noqa: E402
from train import Trainer, random_batch  # noqa: E402

N_FEATURES, N_HORIZONS = 40, 5
N_BATCHES = 4   # distinct random batches cycled through, so no step sees a cached input


def device_name(device):
    if device.type == 'cuda':
        return torch.cuda.get_device_name(device)
    for line in open('/proc/cpuinfo') if os.path.exists('/proc/cpuinfo') else []:
        if line.startswith('model name'):
            return f'{line.split(":", 1)[1].strip()} ({os.cpu_count()} logical CPUs)'
    return platform.processor() or 'cpu'


class Timer:
    """Per-interval times in ms: CUDA events recorded on the stream (no sync until
    `results`), or perf_counter on the CPU."""

    def __init__(self, device):
        self.cuda = device.type == 'cuda'
        self.marks = []

    def mark(self):
        if self.cuda:
            event = torch.cuda.Event(enable_timing=True)
            event.record()
            self.marks.append(event)
        else:
            self.marks.append(time.perf_counter())

    def results(self):
        if self.cuda:
            torch.cuda.synchronize()
            return [a.elapsed_time(b) for a, b in zip(self.marks[:-1], self.marks[1:])]
        return [(b - a) * 1e3 for a, b in zip(self.marks[:-1], self.marks[1:])]


def synchronize(device):
    if device.type == 'cuda':
        torch.cuda.synchronize(device)


def time_loop(run_one, n_warmup, n_steps, device):
    """run_one(i) runs step i. Returns (median ms, wall-clock mean ms)."""
    for i in range(n_warmup):
        run_one(i)
    synchronize(device)
    timer = Timer(device)
    wall0 = time.perf_counter()
    timer.mark()
    for i in range(n_steps):
        run_one(i)
        timer.mark()
    times = timer.results()   # synchronizes
    wall_ms = (time.perf_counter() - wall0) * 1e3 / n_steps
    return statistics.median(times), wall_ms


PRECISIONS = ('fp32', 'tf32', 'bf16')
FORMS = ('loop', 'quadratic', 'chunked')
MODES = ('eager', 'graph', 'compile', 'compile+graph')


def set_precision(precision):
    """Global matmul / cuDNN precision of one row; bf16 rows also autocast (Trainer)."""
    tf32 = precision != 'fp32'
    torch.set_float32_matmul_precision('high' if tf32 else 'highest')
    torch.backends.cudnn.allow_tf32 = tf32


def autocast_dtype(precision):
    return torch.bfloat16 if precision == 'bf16' else None


def make_model(device, seed, form, chunk, compile_model, compile_mode):
    torch.manual_seed(seed)
    model = PerceptionModel(F=N_FEATURES, H=N_HORIZONS, form=form, chunk=chunk).to(device)
    forward = torch.compile(model, mode=compile_mode, dynamic=False) if compile_model else model
    return model, forward


def capture(fn, n_warmup):
    """Warm fn up on a side stream (lazy init, autotuning, optimizer state), then capture
    one call of it into a CUDA graph (the torch.cuda.graph whole-network recipe)."""
    stream = torch.cuda.Stream()
    stream.wait_stream(torch.cuda.current_stream())
    with torch.cuda.stream(stream):
        for _ in range(n_warmup):
            fn()
    torch.cuda.current_stream().wait_stream(stream)
    graph = torch.cuda.CUDAGraph()
    with torch.cuda.graph(graph):
        out = fn()
    return graph, out


def bench_train(mode, form, precision, batch, seq_len, args, device):
    use_graph = mode in ('graph', 'compile+graph')
    use_compile = mode in ('compile', 'compile+graph')
    model, forward = make_model(device, args.seed, form, args.chunk, use_compile, args.compile_mode)
    trainer = Trainer(model, forward=forward, graph_safe=use_graph, use_lambda=not args.no_lambda,
                      lr=args.lr, warmup_steps=args.warmup_steps, total_steps=args.total_steps,
                      autocast_dtype=autocast_dtype(precision))
    gen = torch.Generator().manual_seed(args.seed + batch)
    batches = [random_batch(batch, seq_len, N_FEATURES, N_HORIZONS, device, gen) for _ in range(N_BATCHES)]

    if not use_graph:
        def run_one(i):
            trainer.step(*batches[i % N_BATCHES])
        return time_loop(run_one, args.warmup, args.steps, device)

    static = [t.clone() for t in batches[0]]

    def step_body():
        return trainer.step(*static, zero_grad=False)

    # Warm-up steps run on a side stream; grads must then be None so the captured
    # backward allocates them from the graph's pool and each replay overwrites them.
    def warm_step():
        trainer.optimizer.zero_grad(set_to_none=True)
        return step_body()

    stream = torch.cuda.Stream()
    stream.wait_stream(torch.cuda.current_stream())
    with torch.cuda.stream(stream):
        for _ in range(max(args.capture_warmup, 3)):
            warm_step()
    torch.cuda.current_stream().wait_stream(stream)
    trainer.optimizer.zero_grad(set_to_none=True)
    graph = torch.cuda.CUDAGraph()
    with torch.cuda.graph(graph):
        step_body()

    def run_one(i):
        for dst, src in zip(static, batches[i % N_BATCHES]):
            dst.copy_(src)
        graph.replay()
    return time_loop(run_one, args.warmup, args.steps, device)


def bench_forward_b1(mode, form, precision, seq_len, args, device):
    use_graph = mode in ('graph', 'compile+graph')
    model, compiled = make_model(device, args.seed, form, args.chunk, mode in ('compile', 'compile+graph'),
                                 args.compile_mode)
    model.eval()
    dtype = autocast_dtype(precision)

    def forward(x):
        if dtype is None:
            return compiled(x)
        with torch.autocast(device.type, dtype=dtype, cache_enabled=False):
            return compiled(x)

    gen = torch.Generator().manual_seed(args.seed + 1)
    inputs = [random_batch(1, seq_len, N_FEATURES, N_HORIZONS, device, gen)[0] for _ in range(N_BATCHES)]
    n_warmup, n_steps = args.warmup, args.fwd_steps
    with torch.no_grad():
        if not use_graph:
            def run_one(i):
                forward(inputs[i % N_BATCHES])
            return time_loop(run_one, n_warmup, n_steps, device)[0]
        static_x = inputs[0].clone()
        graph, _ = capture(lambda: forward(static_x), max(args.capture_warmup, 3))

        def run_one(i):
            static_x.copy_(inputs[i % N_BATCHES])
            graph.replay()
        return time_loop(run_one, n_warmup, n_steps, device)[0]


def best_peers(rows):
    """The fastest row (form and mode) per precision and batch size: "the best peer"."""
    best = {}
    for r in rows:
        key = (r['precision'], r['B'])
        if key not in best or r['step_ms'] < best[key]['step_ms']:
            best[key] = r
    return [dict(precision=p, B=b, form=r['form'], mode=r['mode'], step_ms=r['step_ms'])
            for (p, b), r in sorted(best.items(), key=lambda kv: (PRECISIONS.index(kv[0][0]), kv[0][1]))]


def check_forms(seq_len, chunk):
    """The SSD forms against the loop form in float64 on the CPU: the block's output and every
    parameter and input gradient, at K = seq_len and at an odd K (padding of the chunked form).
    Returns a process exit code."""
    worst = 0.0
    for k in (seq_len, 37):
        for form in ('quadratic', 'chunked'):
            outs = {}
            for f in ('loop', form):
                torch.manual_seed(3)
                block = Mamba2(24, 32, d_state=8, headdim=16, form=f, chunk=chunk).double()
                u = torch.randn(2, k, 24, dtype=torch.float64, generator=torch.Generator().manual_seed(5),
                                requires_grad=True)
                y = block(u)
                (y * torch.linspace(-1, 1, y.numel(), dtype=torch.float64).view_as(y)).sum().backward()
                outs[f] = [y.detach(), u.grad] + [p.grad for p in block.parameters()]
            err = max(((a - b).abs().max() / b.abs().max().clamp(min=1e-30)).item()
                      for a, b in zip(outs[form], outs['loop']))
            worst = max(worst, err)
            print(f'check {form:>9} vs loop, K={k}: worst relative error {err:.2e} (output and every gradient)')
    ok = worst < 1e-10
    print('check', 'passed' if ok else 'FAILED', f'(bar 1e-10 in float64, worst {worst:.2e})')
    return 0 if ok else 1


def main():
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument('--device', choices=['cpu', 'cuda'], default='cuda' if torch.cuda.is_available() else 'cpu')
    parser.add_argument('--modes', nargs='+', default=['eager'], choices=MODES)
    parser.add_argument('--forms', nargs='+', default=list(FORMS), choices=FORMS,
                        help='Mamba2 scan forms (model.py)')
    parser.add_argument('--precisions', nargs='+', default=['fp32'], choices=PRECISIONS)
    parser.add_argument('--chunk', type=int, default=16, help='chunk length of the chunked form')
    parser.add_argument('--check', action='store_true',
                        help='check the forms against the loop form (forward and gradients, float64) and exit')
    parser.add_argument('--batch', nargs='+', type=int, default=[32, 256])
    parser.add_argument('--seq-len', type=int, default=64, help='K (positions per sequence)')
    parser.add_argument('--steps', type=int, default=None, help='timed steps (default 100 cuda, 5 cpu)')
    parser.add_argument('--warmup', type=int, default=None, help='untimed steps first (default 20 cuda, 2 cpu)')
    parser.add_argument('--fwd-steps', type=int, default=None, help='timed B=1 forwards (default 200 cuda, 20 cpu)')
    parser.add_argument('--capture-warmup', type=int, default=3, help='side-stream steps before a graph capture')
    parser.add_argument('--no-fwd', action='store_true', help='skip the B=1 forward latency')
    parser.add_argument('--compile-mode', default=None,
                        help='torch.compile mode (default "default"; never one that makes its own '
                             'CUDA graphs when the step is captured)')
    parser.add_argument('--tf32', action='store_true', help='same as --precisions tf32 (kept for old commands)')
    parser.add_argument('--no-lambda', action='store_true', help='turn off the trunk-gradient scale')
    parser.add_argument('--threads', type=int, default=os.cpu_count(), help='CPU threads (default: all)')
    parser.add_argument('--lr', type=float, default=1e-3)
    parser.add_argument('--warmup-steps', type=int, default=500)
    parser.add_argument('--total-steps', type=int, default=20000)
    parser.add_argument('--seed', type=int, default=0)
    parser.add_argument('--out', default=None, help='JSON file to write')
    args = parser.parse_args()

    if args.tf32:
        args.precisions = ['tf32']
    if args.check:
        sys.exit(check_forms(args.seq_len, args.chunk))
    device = torch.device(args.device)
    on_cuda = device.type == 'cuda'
    if on_cuda and not torch.cuda.is_available():
        parser.error('--device cuda but torch.cuda.is_available() is False')
    if not on_cuda and set(args.modes) - {'eager'}:
        parser.error('graph and compile modes need --device cuda')
    if not on_cuda and set(args.precisions) - {'fp32'}:
        parser.error('tf32 and bf16 need --device cuda')
    args.steps = args.steps or (100 if on_cuda else 5)
    args.warmup = args.warmup if args.warmup is not None else (20 if on_cuda else 2)
    args.fwd_steps = args.fwd_steps or (200 if on_cuda else 20)
    torch.set_num_threads(args.threads)
    # Every (form, precision, B) is its own compiled graph of the same forward code: allow
    # them all, where the default limit (8) would silently fall back to eager.
    dynamo = getattr(torch, '_dynamo', None)
    for name in ('cache_size_limit', 'recompile_limit'):
        if dynamo is not None and hasattr(dynamo.config, name):
            setattr(dynamo.config, name, 256)

    meta = dict(device=device_name(device), device_type=device.type, torch=torch.__version__,
                cuda=torch.version.cuda if on_cuda else None, python=platform.python_version(),
                threads=torch.get_num_threads(), precisions=args.precisions, forms=args.forms,
                chunk=args.chunk, lambda_on=not args.no_lambda,
                parameters=count_parameters(PerceptionModel(F=N_FEATURES, H=N_HORIZONS)),
                date=datetime.datetime.now().astimezone().isoformat(timespec='seconds'),
                host=platform.node(), command=' '.join([os.path.basename(sys.executable)] + sys.argv),
                load_average=os.getloadavg() if hasattr(os, 'getloadavg') else None,
                warmup=args.warmup, steps=args.steps, fwd_steps=args.fwd_steps)
    print(json.dumps(meta))

    rows, failures = [], []
    compile_mode = args.compile_mode or 'default'
    mode_args = argparse.Namespace(**{**vars(args), 'compile_mode': compile_mode})

    def emit(row):
        rows.append(row)
        if args.out:   # rewritten after every row, so a run cut short keeps what it measured
            with open(args.out, 'w') as f:
                json.dump(dict(meta, results=rows, best=best_peers(rows), failures=failures), f, indent=2)
                f.write('\n')

    for precision in args.precisions:
        set_precision(precision)
        for form in args.forms:
            for mode in args.modes:
                try:
                    fwd_ms = None if args.no_fwd else bench_forward_b1(mode, form, precision, args.seq_len,
                                                                       mode_args, device)
                except Exception as e:  # noqa: BLE001
                    print(f'{precision} {form} {mode} B=1 forward FAILED: {e!r}'[:400], flush=True)
                    fwd_ms = None
                for batch in args.batch:
                    try:
                        step_ms, wall_ms = bench_train(mode, form, precision, batch, args.seq_len, mode_args,
                                                       device)
                    except Exception as e:  # noqa: BLE001 - one failed row must not lose the rest
                        print(f'{precision:>4} {form:>9} {mode:>14} B={batch:<4} FAILED: {e!r}'[:400], flush=True)
                        failures.append(dict(precision=precision, form=form, mode=mode, B=batch, error=repr(e)[:400]))
                        continue
                    row = dict(device=meta['device'], torch=meta['torch'], threads=meta['threads'],
                               precision=precision, form=form, mode=mode,
                               compile_mode=compile_mode if 'compile' in mode else None, B=batch,
                               K=args.seq_len, step_ms=step_ms, step_ms_wall_mean=wall_ms,
                               sequences_per_s=batch * 1e3 / step_ms,
                               positions_per_s=batch * args.seq_len * 1e3 / step_ms, fwd_b1_ms=fwd_ms)
                    print(f'{precision:>4} {form:>9} {mode:>14} B={batch:<4} K={args.seq_len} step {step_ms:10.3f} ms'
                          f' (wall mean {wall_ms:.3f})  {row["sequences_per_s"]:12.1f} seq/s'
                          + (f'  fwd B=1 {fwd_ms:.3f} ms' if fwd_ms is not None else ''), flush=True)
                    emit(row)
                    if on_cuda:
                        torch.cuda.empty_cache()
    for b in best_peers(rows):
        print(f'best peer {b["precision"]:>4} B={b["B"]:<4}: {b["form"]} {b["mode"]} {b["step_ms"]:.3f} ms')
    if args.out:
        print('wrote', args.out)


if __name__ == '__main__':
    main()
