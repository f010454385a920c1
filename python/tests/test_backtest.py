"""Backtests: built-in strategies equal `fxt backtest`; Python strategies drive the same engine
(a hand-computed scenario on the ES mbp-10 fixture, errors, a do-nothing strategy)."""

import json
import os

import pandas as pd
import pytest

import foxhunt
from conftest import fxt


def test_builtin_mm_equals_cli(synth_store, tmp_path):
    cli_dir = str(tmp_path / "cli")
    fxt("backtest", "--store", synth_store, "--strategy", "mm", "--param", "max_inventory=3",
        "--fees", "maker=-0.2bps,taker=0.5bps", "--latency", "feed=1ms,entry=1ms,response=1ms",
        "--out", cli_dir)
    r = foxhunt.backtest(synth_store, "mm", {"max_inventory": 3},
                         fees={"maker": "-0.2bps", "taker": "0.5bps"},
                         latency="feed=1ms,entry=1ms,response=1ms")
    assert r.stats == json.load(open(os.path.join(cli_dir, "stats.json")))
    assert r.stats["trades"] > 0 and len(r.fills) == r.stats["trades"]
    pd.testing.assert_frame_equal(r.fills, pd.read_csv(os.path.join(cli_dir, "fills.csv"),
                                                       float_precision="round_trip"))
    assert list(r.equity.columns) == ["ts_ns", "position", "cash", "mid", "equity"]
    assert r.out is None  # the temporary run directory is gone


def test_queue_model_band(synth_store, tmp_path):
    r = foxhunt.backtest(synth_store, "mm", queue_models=["risk-averse", "log"],
                         out=tmp_path / "band")
    assert [run["name"] for run in r.runs] == ["risk-averse", "log"]
    assert set(r.band) >= {"total_pnl", "fill_ratio"}
    assert os.path.exists(tmp_path / "band" / "log" / "fills.csv")


class TwoMarketOrders(foxhunt.Strategy):
    """Buys 1 at market on the first snapshot and sells 2 at market on the second."""

    def __init__(self):
        self.events, self.fills, self.acks, self.seen = 0, [], [], []

    def on_event(self, ctx, event):
        self.events += 1
        self.seen.append((event.kind, event.best_bid_px, event.best_ask_px))
        if self.events == 1:
            ctx.submit("buy", 1, type="market")
        elif self.events == 2:
            assert ctx.position == 1
            ctx.submit(-1, 2, type="market")

    def on_fill(self, ctx, fill):
        self.fills.append((fill.side, fill.px, fill.qty, fill.maker, round(fill.fee, 9)))

    def on_ack(self, ctx, ack):
        self.acks.append(ack.kind)


def test_python_strategy_hand_computed_fills(mbp10_store):
    s = TwoMarketOrders()
    r = foxhunt.backtest(mbp10_store, s, fees="taker=0.5bps")
    bid, ask = 3720250000000, 3720500000000  # README: record 1 (and 2) level 0
    assert s.seen == [("snapshot", bid, ask), ("snapshot", bid, ask)]
    fee_buy = 3720.50 * 1 * 0.5e-4
    fee_sell = 3720.25 * 2 * 0.5e-4
    assert s.fills == [(1, ask, 1.0, False, round(fee_buy, 9)),
                       (-1, bid, 2.0, False, round(fee_sell, 9))]
    assert r.stats["final_position"] == -1
    assert r.stats["fees"] == pytest.approx(fee_buy + fee_sell)
    assert r.fills["px"].tolist() == [3720.50, 3720.25]
    assert r.fills["side"].tolist() == ["buy", "sell"]
    assert r.orders["state"].tolist() == ["filled", "filled"]
    cash = -3720.50 + 2 * 3720.25 - fee_buy - fee_sell
    assert r.equity["cash"].iloc[-1] == pytest.approx(cash)


def test_do_nothing_strategy_replays_everything(synth_store):
    r = foxhunt.backtest(synth_store, foxhunt.Strategy())
    store = foxhunt.open_store(synth_store)
    assert r.events == len(store) + store.trade_rows
    assert r.stats["orders"] == 0 and len(r.fills) == 0


def test_counting_strategy_sees_every_event(synth_store):
    class Count(foxhunt.Strategy):
        n = trades = 0

        def on_event(self, ctx, event):
            self.n += 1
            self.trades += event.kind == "trade"

    s = Count()
    r = foxhunt.backtest(synth_store, s)
    assert s.n == r.events and s.trades == foxhunt.open_store(synth_store).trade_rows


def test_strategy_exception_propagates(mbp10_store):
    class Broken(foxhunt.Strategy):
        def on_event(self, ctx, event):
            raise ZeroDivisionError("strategy bug")

    with pytest.raises(ZeroDivisionError, match="strategy bug"):
        foxhunt.backtest(mbp10_store, Broken())


def test_context_outside_callback_raises(mbp10_store):
    class Keeper(foxhunt.Strategy):
        def on_start(self, ctx):
            self.ctx = ctx

        def on_event(self, ctx, event):
            self.event = event

    k = Keeper()
    foxhunt.backtest(mbp10_store, k)
    with pytest.raises(foxhunt.InputError, match="only valid inside a callback"):
        k.ctx.position
    with pytest.raises(foxhunt.InputError, match="only valid inside on_event"):
        k.event.best_bid_px


def test_bad_order_raises(mbp10_store):
    class Bad(foxhunt.Strategy):
        def on_event(self, ctx, event):
            ctx.submit("up", 1, px=event.best_bid_px)

    with pytest.raises(foxhunt.InputError, match="expected 'buy', 'sell'"):
        foxhunt.backtest(mbp10_store, Bad())

    class Neg(foxhunt.Strategy):
        def on_event(self, ctx, event):
            ctx.submit("buy", -1, px=event.best_bid_px)

    with pytest.raises(foxhunt.InputError, match="expected a finite number > 0"):
        foxhunt.backtest(mbp10_store, Neg())


def test_real_mbo_store_builtin_and_python(es_mbo_store, tmp_path):
    store = es_mbo_store
    cli_dir = str(tmp_path / "cli")
    fxt("backtest", "--store", store, "--strategy", "mm", "--out", cli_dir)
    r = foxhunt.backtest(store, "mm")
    assert r.runs[0]["name"] == "l3-fifo"
    assert r.stats == json.load(open(os.path.join(cli_dir, "stats.json")))
    idle = foxhunt.backtest(store, foxhunt.Strategy())
    assert idle.runs[0]["name"] == "l3-fifo" and idle.events == r.events


def test_not_a_strategy(mbp10_store):
    with pytest.raises(foxhunt.InputError, match="expected a built-in name"):
        foxhunt.backtest(mbp10_store, 123)
