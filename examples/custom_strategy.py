#!/usr/bin/env python3
"""A Python strategy on foxhunt's exchange simulator: lean on the top-of-book imbalance.

When the best bid's size is much larger than the best ask's, buy one lot at market; when it is
much smaller, sell one; never hold more than `max_position`. Orders, fills and acks come back
through on_fill / on_ack; the engine (queues, latency, fees) is the same C++ simulator that
`fxt backtest` runs. Prices are int64 in 1e-9 units, like the store.

    PYTHONPATH=build/python /usr/bin/python3 examples/custom_strategy.py --events 200000
"""

import argparse
import os
import tempfile

import foxhunt


class Imbalance(foxhunt.Strategy):
    def __init__(self, threshold: float = 0.6, max_position: float = 2, every: int = 50):
        self.threshold, self.max_position, self.every = threshold, max_position, every
        self.n = 0
        self.rejects = 0

    def on_event(self, ctx, event):
        self.n += 1
        if event.kind != "snapshot" or self.n % self.every or ctx.open_orders:
            return  # one order at a time: wait until the last one is final
        b, a = event.best_bid_sz, event.best_ask_sz
        if b + a <= 0:
            return
        imbalance = (b - a) / (b + a)
        if imbalance > self.threshold and ctx.position < self.max_position:
            ctx.submit("buy", 1, type="market")
        elif imbalance < -self.threshold and ctx.position > -self.max_position:
            ctx.submit("sell", 1, type="market")

    def on_fill(self, ctx, fill):
        pass  # position and cash are tracked by the context

    def on_ack(self, ctx, ack):
        self.rejects += ack.kind == "rejected"


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--events", type=int, default=200000)
    ap.add_argument("--work", default=None)
    args = ap.parse_args()
    work = args.work or tempfile.mkdtemp(prefix="foxhunt-strategy-")
    os.makedirs(work, exist_ok=True)
    store = os.path.join(work, "market")
    if not os.path.exists(store):
        foxhunt.synth(os.path.join(work, "market.dbn.zst"), events=args.events, seed=3)
        foxhunt.ingest([os.path.join(work, "market.dbn.zst")], store)

    s = Imbalance()
    r = foxhunt.backtest(store, s, fees="maker=-0.2bps,taker=0.5bps",
                         latency="feed=1ms,entry=1ms,response=1ms", out=os.path.join(work, "bt"))
    st = r.stats
    print(f"{r.events} events in {r.wall_seconds:.2f} s ({r.events_per_second / 1e6:.2f} M events/s "
          f"with a Python on_event)")
    print(f"total_pnl {st['total_pnl']:.2f}  trades {st['trades']}  fees {st['fees']:.2f}  "
          f"final position {st['final_position']}  rejects {s.rejects}")
    print(r.fills.head())

    idle = foxhunt.backtest(store, foxhunt.Strategy())
    print(f"do-nothing strategy: {idle.events_per_second / 1e6:.2f} M events/s")
    mm = foxhunt.backtest(store, "mm", {"max_inventory": 2}, fees="maker=-0.2bps,taker=0.5bps",
                          latency="feed=1ms,entry=1ms,response=1ms")
    print(f"built-in mm for comparison: total_pnl {mm.stats['total_pnl']:.2f}, trades {mm.stats['trades']}")


if __name__ == "__main__":
    main()
