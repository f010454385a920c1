// Sweep grids (sim/sweep_grid.h): Cartesian products and explicit lanes, every parameter
// kind (strategy params, queue model, latency, fees, multiplier), and bad grids rejected
// with one line naming the file and the line.
#include "sim/sweep_grid.h"

#include <string>
#include <vector>

#include <gtest/gtest.h>

#include "sim/engine.h"

namespace fxt::sim {
namespace {

StrategyInputs mm_inputs() {
  StrategyInputs in;
  in.sessions.push_back({0, 1'000'000'000});
  return in;
}

std::string values(const GridLane& l) {
  std::string out;
  for (const auto& [k, v] : l.values)
    out += fmt::format("{}{}={}", out.empty() ? "" : " ", k, v.text);
  return out;
}

TEST(SweepGrid, ProductThenExplicitLanes) {
  const std::string text = R"(# a grid
strategy = "mm"
[fixed]
warmup = 20   # comment after a value
[grid]
gamma = [0.01, 0.1]
queue = ["risk-averse",
         "power:2", "log"]   # a list over two lines
[[lane]]
gamma = 0.5
queue = 'log'
[[lane]]
warmup = 5
)";
  auto g = parse_sweep_grid("g.toml", text);
  ASSERT_TRUE(g.ok()) << g.status().message();
  EXPECT_EQ(g->strategy, "mm");
  EXPECT_EQ(g->keys, (std::vector<std::string>{"warmup", "gamma", "queue"}));
  ASSERT_EQ(g->lanes.size(), 8u);
  // The last key varies fastest.
  EXPECT_EQ(values(g->lanes[0]), "gamma=0.01 queue=risk-averse warmup=20");
  EXPECT_EQ(values(g->lanes[1]), "gamma=0.01 queue=power:2 warmup=20");
  EXPECT_EQ(values(g->lanes[2]), "gamma=0.01 queue=log warmup=20");
  EXPECT_EQ(values(g->lanes[3]), "gamma=0.1 queue=risk-averse warmup=20");
  EXPECT_EQ(values(g->lanes[5]), "gamma=0.1 queue=log warmup=20");
  EXPECT_EQ(values(g->lanes[6]), "gamma=0.5 queue=log warmup=20");
  EXPECT_EQ(values(g->lanes[7]), "warmup=5");  // a lane's own value replaces [fixed]'s
  EXPECT_EQ(g->lanes[0].values.at("gamma").kind, GridValue::kNumber);
  EXPECT_EQ(g->lanes[0].values.at("queue").kind, GridValue::kString);
  EXPECT_EQ(g->lanes[6].line, 9);
}

TEST(SweepGrid, SimulatorKeysSetTheLaneConfig) {
  const std::string text = R"([fixed]
latency = "feed=1ms,entry=2ms,response=3ms"
maker_bps = -0.2
taker_per_unit = 0.25
multiplier = 50
l2 = true
order_qty = 2
[grid]
queue = ["power:3", "log"]
)";
  auto g = parse_sweep_grid("g.toml", text);
  ASSERT_TRUE(g.ok()) << g.status().message();
  SimConfig base;
  base.fees.taker_bps = 0.5;  // from the command's flags, kept where the grid says nothing
  auto lanes = grid_lanes(*g, "mm", base, mm_inputs());
  ASSERT_TRUE(lanes.ok()) << lanes.status().message();
  ASSERT_EQ(lanes->size(), 2u);
  const Lane& a = (*lanes)[0];
  EXPECT_EQ(a.strategy, "mm");
  EXPECT_EQ(a.params, (std::vector<std::string>{"order_qty=2"}));
  EXPECT_EQ(a.sim.queue.kind, QueueModelKind::kPower);
  EXPECT_EQ(a.sim.queue.power, 3);
  EXPECT_EQ(a.sim.latency.feed_ns, 1'000'000);
  EXPECT_EQ(a.sim.latency.entry_ns, 2'000'000);
  EXPECT_EQ(a.sim.latency.response_ns, 3'000'000);
  EXPECT_EQ(a.sim.fees.maker_bps, -0.2);
  EXPECT_EQ(a.sim.fees.taker_bps, 0.5);
  EXPECT_EQ(a.sim.fees.taker_per_unit, 0.25);
  EXPECT_EQ(a.sim.instrument.multiplier, 50);
  EXPECT_FALSE(a.sim.use_l3);
  EXPECT_EQ((*lanes)[1].sim.queue.kind, QueueModelKind::kLog);
}

// The one-line error of a grid, or "ok".
std::string grid_error(const std::string& text, const std::string& strategy = "mm") {
  auto g = parse_sweep_grid("g.toml", text);
  if (!g.ok()) {
    EXPECT_EQ(g.status().exit_code(), 2);
    return g.status().message();
  }
  auto lanes = grid_lanes(*g, strategy, SimConfig{}, mm_inputs());
  if (!lanes.ok()) {
    EXPECT_EQ(lanes.status().exit_code(), 2);
    return lanes.status().message();
  }
  return "ok";
}

TEST(SweepGrid, BadGridsNameFileAndLine) {
  EXPECT_EQ(grid_error("[grid]\ngamma = []\n"),
            "g.toml:2: gamma: empty list: the product would have no lanes");
  EXPECT_EQ(grid_error("[fixed]\ngamma = 0.1\n"),
            "g.toml: no lanes: give lists under [grid] or [[lane]] tables");
  EXPECT_EQ(grid_error("[grid]\ngamma = 0.1\n"),
            "g.toml:2: gamma: expected a list such as [1, 2] in [grid] (one value: put it in "
            "[fixed])");
  EXPECT_EQ(grid_error("[fixed]\ngamma = [1, 2]\n"),
            "g.toml:2: gamma: a list belongs in [grid]; here give one value");
  EXPECT_EQ(grid_error("[grids]\n"),
            "g.toml:1: unknown table '[grids]' (expected [fixed], [grid] or [[lane]])");
  EXPECT_EQ(grid_error("[grid]\ngamma = [1]\ngamma = [2]\n"), "g.toml:3: gamma given twice");
  EXPECT_EQ(grid_error("[fixed]\ngamma = 1\n[grid]\ngamma = [2]\n"),
            "g.toml:4: gamma is already fixed at line 2");
  EXPECT_EQ(grid_error("gamma = 1\n"),
            "g.toml:1: gamma: parameters go under [fixed], [grid] or [[lane]]; only 'strategy' "
            "stands at the top");
  EXPECT_EQ(grid_error("[grid]\ngamma = [1, fast]\n"),
            "g.toml:2: bad value 'fast' (expected a \"string\", a number, true or false)");
  EXPECT_EQ(grid_error("[grid]\ngamma = [1, 2\n"), "g.toml:2: gamma: list not closed with ']'");
  EXPECT_EQ(grid_error("[grid]\ngamma [1]\n"), "g.toml:2: expected key = value, got 'gamma [1]'");
  // Checked against the strategy and the simulator: unknown parameters, type errors.
  EXPECT_EQ(grid_error("[fixed]\nwarmup = 3\n[grid]\nspread = [1, 2]\n"),
            "g.toml:4: lane 0: --param spread: not a parameter of strategy mm (see "
            "docs/BACKTEST.md)");
  EXPECT_EQ(grid_error("[grid]\ngamma = [0.1, \"high\"]\n"),
            "g.toml:2: lane 1: --param gamma=high: expected a number");
  EXPECT_EQ(grid_error("[grid]\nqueue = [2]\n"),
            "g.toml:2: lane 0: queue: expected a queue model such as \"power:2\", got 2");
  EXPECT_EQ(grid_error("[grid]\nqueue = [\"fifo\"]\n"),
            "g.toml:2: lane 0: unknown queue model 'fifo': expected 'risk-averse', 'power:<n>' "
            "with n > 0 (e.g. power:2) or 'log'");
  EXPECT_EQ(grid_error("[grid]\nmaker_bps = [\"1bps\"]\n"),
            "g.toml:2: lane 0: maker_bps: expected a number, got \"1bps\"");
  EXPECT_EQ(grid_error("[grid]\nentry_latency = [\"5\"]\n"),
            "g.toml:2: lane 0: bad duration '5' (expected a number >= 0 with ns, us, ms or s, "
            "e.g. 2ms)");
  EXPECT_EQ(grid_error("[grid]\nl2 = [1]\n"),
            "g.toml:2: lane 0: l2: expected true or false, got 1");
  EXPECT_EQ(grid_error("[fixed]\nlatency = \"entry=1ms\"\n[grid]\nentry_latency = [\"2ms\"]\n"),
            "g.toml:2: lane 0: give latency or feed_latency/entry_latency/response_latency, not "
            "both");
  EXPECT_EQ(grid_error("[[lane]]\nqty = 5\n", "wobble"),
            "g.toml:1: lane 0: --strategy must be signal, mm, twap or ac (got 'wobble')");
  EXPECT_EQ(grid_error("[[lane]]\nqty = 5\n", "twap"), "ok");
}

TEST(SweepGrid, ProductLargerThanTheLimitIsRejected) {
  auto g = parse_sweep_grid("g.toml", "[grid]\na = [1, 2, 3]\nb = [1, 2]\n", 5);
  ASSERT_FALSE(g.ok());
  EXPECT_EQ(g.status().message(), "g.toml:1: the product has more than 5 lanes");
}

}  // namespace
}  // namespace fxt::sim
