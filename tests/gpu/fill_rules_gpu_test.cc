// GPU vs CPU parity of the simulator's shared fill rules (sim/fill_rules.h): 20,000 random
// cases through every rule on the device and on the host. Everything built from + − × ÷ and
// comparisons is bit-identical (the sim device code is compiled with --fmad=false); the power
// and log queue models' share goes through the device's pow/log1p, which may differ from
// glibc's by an ulp or two, so it and what it feeds are compared to 1e-12 relative.
#include <cmath>
#include <cstring>
#include <vector>

#include <gtest/gtest.h>

#include "core/random.h"
#include "gpu_test_util.h"
#include "sim/fill_rules_device.h"

namespace fxt::sim {
namespace {

std::vector<FillRuleCase> random_cases(size_t n) {
  Rng rng(17);
  std::vector<FillRuleCase> cases(n);
  for (size_t i = 0; i < n; ++i) {
    FillRuleCase& c = cases[i];
    const uint64_t kind = rng.uniform(3);
    c.model.kind = kind == 0   ? QueueModelKind::kRiskAverse
                   : kind == 1 ? QueueModelKind::kPower
                               : QueueModelKind::kLog;
    c.model.power = 0.5 + 3 * rng.unit();
    c.queue.join(std::floor(40 * rng.unit()), rng.uniform(8) != 0);
    c.queue.traded = std::floor(5 * rng.unit());
    c.trade_size = std::floor(12 * rng.unit());
    c.level_size = std::floor(45 * rng.unit());
    c.level_known = rng.uniform(10) != 0;
    c.displayed = std::floor(20 * rng.unit()) + (rng.uniform(4) == 0 ? 0.3 : 0);
    c.taken = std::floor(c.displayed * rng.unit());
    c.want = 0.5 + std::floor(10 * rng.unit());
    c.remaining = c.want + (rng.uniform(3) == 0 ? 1e-10 : 2.0);
    c.fees.maker_bps = -0.5 + rng.unit();
    c.fees.taker_bps = rng.unit();
    c.fees.maker_per_unit = 0.1 * rng.unit();
    c.fees.taker_per_unit = 0.3 * rng.unit();
    c.maker = rng.uniform(2) == 0;
    c.side = rng.uniform(2) == 0 ? 1 : -1;
    c.px = static_cast<int64_t>(4000 + rng.uniform(400)) * 250'000'000;
    c.multiplier = rng.uniform(2) == 0 ? 50 : 1;
    c.fifo_ahead = std::floor(30 * rng.unit());
    c.fifo_pending = std::floor(c.fifo_ahead * rng.unit());
    int64_t t = static_cast<int64_t>(rng.uniform(1'000'000));
    for (int k = 0; k < 4; ++k) {
      t += 1 + static_cast<int64_t>(rng.uniform(5'000'000'000ULL));
      c.latency_ts[k] = t;
      c.latency_values[k] = static_cast<int64_t>(rng.uniform(3'000'000));
    }
    c.latency_at_ns =
        c.latency_ts[0] - 1000 +
        static_cast<int64_t>(rng.uniform(static_cast<uint64_t>(t - c.latency_ts[0] + 2000)));
  }
  return cases;
}

bool same_bits(double a, double b) {
  return std::memcmp(&a, &b, sizeof a) == 0;
}

TEST(FillRulesGpu, DeviceEqualsHost) {
  FXT_SKIP_WITHOUT_GPU();
  const std::vector<FillRuleCase> cases = random_cases(20'000);
  const std::vector<FillRuleOutcome> device = evaluate_fill_rules_on_device(cases);
  ASSERT_EQ(device.size(), cases.size());
  size_t transcendental = 0, transcendental_exact = 0;
  for (size_t i = 0; i < cases.size(); ++i) {
    FillRuleOutcome host;
    evaluate_fill_rules(cases[i], &host);
    const FillRuleOutcome& d = device[i];
    SCOPED_TRACE(i);
    // Exact: no transcendental function involved.
    EXPECT_TRUE(same_bits(d.take, host.take)) << d.take << " vs " << host.take;
    EXPECT_TRUE(same_bits(d.fee, host.fee)) << d.fee << " vs " << host.fee;
    EXPECT_TRUE(same_bits(d.holdings.position, host.holdings.position));
    EXPECT_TRUE(same_bits(d.holdings.cash, host.holdings.cash))
        << d.holdings.cash << " vs " << host.holdings.cash;
    EXPECT_TRUE(same_bits(d.holdings.fees, host.holdings.fees));
    EXPECT_TRUE(same_bits(d.beyond, host.beyond));
    EXPECT_TRUE(same_bits(d.fifo_beyond, host.fifo_beyond));
    EXPECT_TRUE(same_bits(d.fifo_pending, host.fifo_pending));
    EXPECT_EQ(d.latency, host.latency);
    EXPECT_EQ(d.after.known, host.after.known);
    EXPECT_TRUE(same_bits(d.after.level_size, host.after.level_size));
    EXPECT_TRUE(same_bits(d.after.traded, host.after.traded));
    if (cases[i].model.kind == QueueModelKind::kRiskAverse) {
      EXPECT_TRUE(same_bits(d.share, host.share));
      EXPECT_TRUE(same_bits(d.after.ahead, host.after.ahead));
    } else {
      ++transcendental;
      transcendental_exact += same_bits(d.share, host.share) ? 1 : 0;
      EXPECT_NEAR(d.share, host.share, 1e-12 * std::fabs(host.share));
      EXPECT_NEAR(d.after.ahead, host.after.ahead, 1e-12 * (1 + std::fabs(host.after.ahead)));
    }
  }
  std::printf("power/log share bit-identical in %zu of %zu cases\n", transcendental_exact,
              transcendental);
}

}  // namespace
}  // namespace fxt::sim
