"""foxhunt from Python: snapshot stores and DBN files as numpy arrays, features and labels,
checkpoints and predictions as DataFrames, backtests of built-in and Python strategies.

Everything here wraps the C++ libraries that the `fxt` command line runs (the extension module
foxhunt._foxhunt); results are the numbers the CLI writes. Errors the CLI reports in one line
(exit code 2: bad input or usage) raise InputError, any other failure Error, with the same
message. docs/PYTHON.md is the guide.
"""

from __future__ import annotations

import json
import logging
import os
import shutil
import tempfile
import threading
from typing import Any, Callable, Iterable, Mapping, Optional, Sequence, Union

import numpy as np

from . import _foxhunt
from ._foxhunt import (  # noqa: F401  (re-exported API)
    FEATURE_DIM,
    Ack,
    Context,
    Error,
    Event,
    Fill,
    InputError,
    __version__,
    evaluate,
    feature_names,
    ingest,
    inspect,
    set_quiet,
    synth,
)

from .dbn import DbnFile, read_dbn  # noqa: F401

__all__ = [
    "Ack", "BacktestResult", "Checkpoint", "Context", "DbnFile", "Error", "Event", "FEATURE_DIM",
    "Fill", "InputError", "Store", "Strategy", "backtest", "evaluate", "feature_names",
    "features", "ingest", "inspect", "open_store", "read_dbn", "set_quiet", "synth", "train",
]

log = logging.getLogger("foxhunt")
DEFAULT_HORIZONS = (30, 100, 300, 1000, 6000)


# ---- stores ----------------------------------------------------------------------------------

class Store(_foxhunt._Store):
    """A snapshot store (docs/DATA.md). Every column (``ts_ns``, ``bid_px`` [n, 10], ...,
    ``trade_px``, ``event_order_id``; see ``Store.column_names``) is a read-only numpy array
    viewing the memory-mapped file: no copy, and the array's ``base`` is this Store, which keeps
    the mapping alive. ``len(store)`` is the number of snapshots; ``meta`` is meta.json."""

    def __repr__(self) -> str:
        return f"foxhunt.Store({self.path!r}, {len(self)} snapshots)"

    def to_pandas(self, table: str = "snapshots"):
        """The snapshots (one column per level: bid_px_00 ... ask_ct_09), "trades" or
        "events" (MBO order events) as a DataFrame. This copies."""
        import pandas as pd

        if table == "snapshots":
            cols: dict[str, Any] = {"ts_ns": self.ts_ns, "ts_alt_ns": self.ts_alt_ns}
            for name in ("bid_px", "ask_px", "bid_sz", "ask_sz", "bid_ct", "ask_ct"):
                values = getattr(self, name)
                for level in range(values.shape[1] if values.ndim == 2 else 0):
                    cols[f"{name}_{level:02d}"] = values[:, level]
            cols["flags"] = self.flags
            cols["trade_count"] = self.trade_count
            cols["signed_volume"] = self.signed_volume
        elif table == "trades":
            cols = {k: getattr(self, "trade_" + k) for k in ("ts_ns", "px", "sz", "side", "snapshot")}
        elif table == "events":
            cols = {k: getattr(self, "event_" + k)
                    for k in ("ts_ns", "order_id", "px", "sz", "action", "side", "flags", "snapshot")}
        else:
            raise InputError(f"table '{table}': expected snapshots, trades or events")
        return pd.DataFrame(cols)


def open_store(path: Union[str, os.PathLike], verify: bool = False) -> Store:
    """Maps a store. Sizes are always checked against meta.json; ``verify=True`` also checks
    every column's CRC32, which reads the whole store (``fxt inspect`` does)."""
    return Store(os.fspath(path), verify)


def _as_store(store: Union[Store, str, os.PathLike]) -> Store:
    return store if isinstance(store, _foxhunt._Store) else open_store(store)


def _store_paths(stores) -> list[str]:
    if isinstance(stores, (str, os.PathLike, _foxhunt._Store)):
        stores = [stores]
    return [s.path if isinstance(s, _foxhunt._Store) else os.fspath(s) for s in stores]


# ---- features --------------------------------------------------------------------------------

def features(store: Union[Store, str, os.PathLike], stride: int = 1, standardised: bool = False,
             horizons: Sequence[int] = DEFAULT_HORIZONS, min_move_ticks: int = 0):
    """The 40 features and the direction labels of every snapshot, the numbers
    ``fxt features`` writes: returns ``(ts, X, y, mask)`` with ts int64 [n] (a view of the
    store), X float32 [n, 40] (raw: NaN where undefined; ``standardised=True`` uses the whole
    store's mean/std, clips to +-10 and maps undefined to 0), y and mask uint8 [n, H]."""
    s = _as_store(store)
    return _foxhunt._features(s, int(stride), bool(standardised), [int(h) for h in horizons],
                              int(min_move_ticks))


# ---- models ----------------------------------------------------------------------------------

def _follow_metrics(path: str, stop: threading.Event, callback: Optional[Callable]) -> None:
    """Reports each new line of RUN_DIR/metrics.jsonl (one per epoch) while training runs."""
    offset = os.path.getsize(path) if os.path.exists(path) else 0
    while True:
        done = stop.wait(0.2)
        if os.path.exists(path):
            with open(path, "rb") as f:
                f.seek(offset)
                chunk = f.read()
            end = chunk.rfind(b"\n") + 1
            offset += end
            for line in chunk[:end].splitlines():
                try:
                    record = json.loads(line)
                except ValueError:
                    continue
                log.info("epoch %s: %s", record.get("epoch", "?"), json.dumps(record))
                if callback is not None:
                    callback(record)
        if done:
            return


def default_train_config() -> dict:
    """The training configuration's defaults (the keys ``train(config=...)`` accepts)."""
    return _foxhunt._default_train_config()


def train(stores, run_dir: Union[str, os.PathLike], config: Optional[Mapping[str, Any]] = None,
          resume: bool = False, stop_after: int = 0, threads: int = 1, device: str = "auto",
          precision: str = "fp32", callback: Optional[Callable[[dict], None]] = None) -> dict:
    """``fxt train``: trains into run_dir (checkpoints, metrics.jsonl, run.json) and returns the
    summary. ``config`` overrides keys of ``default_train_config()`` (as saved in a
    checkpoint: ``epochs``, ``steps_per_epoch``, ``batch``, ``window``, ``horizons``, ``lr``,
    ``model`` ...). ``precision``: the GPU's matrix products, "fp32", "tf32" or "bf16" (as
    ``--precision``; the CPU path is fp32 only). Each epoch's metrics line goes to the ``foxhunt`` logger and to
    ``callback(dict)``. The GIL is released while training."""
    merged = default_train_config()
    config = dict(config or {})
    unknown = sorted(set(config) - set(merged) - {"split_ranges"})
    if unknown:
        raise InputError(f"train config: unknown key '{unknown[0]}' (known: {', '.join(sorted(merged))})")
    merged.update(config)
    run_dir = os.fspath(run_dir)
    stop = threading.Event()
    follower = threading.Thread(target=_follow_metrics,
                                args=(os.path.join(run_dir, "metrics.jsonl"), stop, callback),
                                daemon=True)
    follower.start()
    try:
        return _foxhunt._train(merged, _store_paths(stores) if stores else [], run_dir,
                               bool(resume), "horizons" in config, int(stop_after), int(threads),
                               device, str(precision))
    finally:
        stop.set()
        follower.join()


class Checkpoint:
    """A checkpoint file (best.ckpt / last.ckpt), checked when opened: ``config``,
    ``horizons``, ``meta`` and the tensor names; ``predict`` and ``evaluate`` run on it."""

    def __init__(self, path: Union[str, os.PathLike]):
        self.path = os.fspath(path)
        info = _foxhunt._read_checkpoint(self.path)
        self.config: dict = info["config"]
        self.meta: dict = info["meta"]
        self.feature_stats: dict = info["feature_stats"]
        self.tensors: list = info["tensors"]
        self.horizons: list = list(self.config.get("horizons", []))

    def __repr__(self) -> str:
        return f"foxhunt.Checkpoint({self.path!r}, horizons={self.horizons})"

    def predict(self, store, device: str = "auto", threads: int = 1, precision: str = "fp32"):
        """``fxt predict``: P(up) per horizon for every snapshot of the store (inference windows
        ending at each snapshot) as a DataFrame with ts_ns and p_h<h> columns - the values of
        the CLI's CSV, read back from it."""
        import pandas as pd

        path = _store_paths(store)
        if len(path) != 1:
            raise InputError("predict: give one store")
        tmp = tempfile.mkdtemp(prefix="foxhunt-predict-")
        try:
            out = os.path.join(tmp, "predictions.csv")
            _foxhunt._predict(self.path, path[0], out, int(threads), device, str(precision))
            frame = pd.read_csv(out, dtype={"ts_ns": np.int64}, float_precision="round_trip")
        finally:
            shutil.rmtree(tmp, ignore_errors=True)
        return frame

    def evaluate(self, stores=None, **kwargs) -> dict:
        """``fxt eval`` on this checkpoint (see ``foxhunt.evaluate``)."""
        return evaluate(self.path, _store_paths(stores) if stores else [], **kwargs)


# ---- backtests -------------------------------------------------------------------------------

class Strategy:
    """Base class of Python strategies (DESIGN §7.3). Override what you need; hooks left as
    they are here are never called, so a strategy without ``on_event`` costs nothing per event.
    Hooks get the Context (orders, position, cash, book; valid only inside the hook):

    - ``on_start(ctx)`` / ``on_end(ctx)``
    - ``on_event(ctx, event)``: a snapshot or a trade, feed latency after it happened
    - ``on_fill(ctx, fill)``, ``on_ack(ctx, ack)``
    """

    def on_start(self, ctx: Context) -> None:
        pass

    def on_event(self, ctx: Context, event: Event) -> None:
        pass

    def on_fill(self, ctx: Context, fill: Fill) -> None:
        pass

    def on_ack(self, ctx: Context, ack: Ack) -> None:
        pass

    def on_end(self, ctx: Context) -> None:
        pass


_HOOKS = ("on_start", "on_event", "on_fill", "on_ack", "on_end")


def _hooks(strategy) -> tuple:
    """The bound hooks the strategy overrides, None for the others (duck typing welcome)."""
    out = []
    for name in _HOOKS:
        impl = getattr(type(strategy), name, None)
        if impl is None or impl is getattr(Strategy, name):
            out.append(None)
        elif not callable(impl):
            raise InputError(f"strategy {type(strategy).__name__}.{name} is not callable")
        else:
            out.append(getattr(strategy, name))
    if not isinstance(strategy, Strategy) and all(h is None for h in out):
        raise InputError(f"strategy {strategy!r}: expected a built-in name (signal, mm, twap, ac) "
                         "or an object with on_event/on_fill/on_ack hooks")
    return tuple(out)


class BacktestResult:
    """What a backtest produced: ``stats`` (stats.json of the first queue model), ``runs``
    (name, dir, stats per queue model), ``band`` (the model-risk band, or None), ``events``,
    ``wall_seconds`` and the first run's ``orders``, ``fills`` and ``equity`` DataFrames (the
    CSV files of docs/MODEL_MARKET.md, read back)."""

    def __init__(self, outcome: dict, out: Optional[str]):
        import pandas as pd

        self.runs: list = outcome["runs"]
        self.stats: dict = self.runs[0]["stats"]
        self.band = outcome["band"]
        self.events: int = outcome["events"]
        self.wall_seconds: float = outcome["wall_seconds"]
        self.out = out
        first = self.runs[0]["dir"]
        read = lambda name: pd.read_csv(os.path.join(first, name), float_precision="round_trip",
                                        keep_default_na=False, na_values=[""])
        self.orders = read("orders.csv")
        self.fills = read("fills.csv")
        self.equity = read("equity.csv")

    @property
    def events_per_second(self) -> float:
        return self.events / self.wall_seconds if self.wall_seconds > 0 else float("nan")

    def __repr__(self) -> str:
        return (f"foxhunt.BacktestResult(total_pnl={self.stats.get('total_pnl')}, "
                f"trades={self.stats.get('trades')}, events={self.events})")


def _flag_text(value, name: str) -> str:
    """A flag of the CLI grammar from a string or a mapping ({"feed": "1ms"} -> "feed=1ms")."""
    if value is None:
        return ""
    if isinstance(value, str):
        return value
    if isinstance(value, Mapping):
        return ",".join(f"{k}={v}" for k, v in value.items())
    raise InputError(f"{name}: expected a string like the CLI flag or a dict, got {type(value).__name__}")


def backtest(store, strategy: Union[str, Strategy] = "mm", params: Optional[Mapping[str, Any]] = None,
             *, checkpoint: Optional[str] = None, predictions: Optional[Sequence[str]] = None,
             horizon: int = 0, latency: Union[str, Mapping, None] = None, latency_file: str = "",
             fees: Union[str, Mapping, None] = None, queue_models: Union[str, Iterable[str], None] = None,
             equity_interval: str = "1s", multiplier: Optional[float] = None, l2: bool = False,
             threads: int = 1, out: Optional[Union[str, os.PathLike]] = None) -> BacktestResult:
    """``fxt backtest`` over one store or a list of stores (one instrument, time order).

    ``strategy`` is a built-in name (signal, mm, twap, ac; ``params`` are its ``--param``
    keys) or a Python object with the hooks of ``Strategy`` (no params; one queue model).
    The other arguments are the CLI's flags: latency "feed=1ms,entry=2ms,response=2ms" (or a
    dict), fees "maker=-0.2bps,taker=0.5bps", queue_models "risk-averse,power:2,log", ...
    Result files go to ``out`` (kept) or to a temporary directory (removed after reading)."""
    stores = _store_paths(store)
    sim = _foxhunt._SimArgs()
    sim.latency = _flag_text(latency, "latency")
    sim.latency_file = os.fspath(latency_file)
    sim.fees = _flag_text(fees, "fees")
    sim.equity_interval = equity_interval
    if multiplier is not None:
        if not multiplier > 0:
            raise InputError("--multiplier must be > 0")
        sim.multiplier = float(multiplier)
    sim.l2 = bool(l2)
    if queue_models is not None and not isinstance(queue_models, str):
        queue_models = ",".join(queue_models)
    queue_models = queue_models or ""
    keep = out is not None
    out_dir = os.fspath(out) if keep else tempfile.mkdtemp(prefix="foxhunt-backtest-")
    try:
        if isinstance(strategy, str):
            if params is not None and not isinstance(params, Mapping):
                raise InputError("params: expected a dict of strategy parameters")
            items = [f"{k}={v}" for k, v in (params or {}).items()]
            outcome = _foxhunt._backtest_builtin(
                stores, strategy, items, checkpoint or "", list(predictions or []), int(horizon),
                sim, queue_models, int(threads), out_dir)
        else:
            if params:
                raise InputError("params are for built-in strategies; configure a Python strategy "
                                 "through its own constructor")
            if checkpoint or predictions:
                raise InputError("checkpoint/predictions are for built-in strategies")
            if "," in queue_models:
                raise InputError("a Python strategy runs under one queue model")
            outcome = _foxhunt._backtest_python(stores, _hooks(strategy), sim, queue_models, out_dir)
        return BacktestResult(outcome, out_dir if keep else None)
    finally:
        if not keep:
            shutil.rmtree(out_dir, ignore_errors=True)
