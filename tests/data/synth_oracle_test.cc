// The synthetic market's latent sidecar and oracle (src/data/synth.h, synth_oracle.h): the
// sidecar holds the generator's latent state per event, a copied generator continues the same
// stream, and the oracle's probabilities follow the latent regime as they must.
#include "data/synth_oracle.h"

#include <cmath>
#include <cstdlib>
#include <string>
#include <vector>

#include <gtest/gtest.h>

#include "core/file_util.h"
#include "test_util.h"

namespace fxt {
namespace {

SynthConfig small(uint64_t events) {
  SynthConfig c;
  c.events = events;
  c.seed = 11;
  return c;
}

TEST(SynthLatent, SidecarHoldsTheLatentStateOfEveryEvent) {
  const SynthConfig c = small(3000);
  const std::string dir = test::scratch_dir();
  ASSERT_TRUE(synthesize_market(c, dir + "/m.dbn", nullptr, nullptr, /*latent=*/true).ok());
  auto lat = read_latent_sidecar(dir + "/m.dbn.latent");
  ASSERT_TRUE(lat.ok()) << lat.status().message();
  ASSERT_EQ(lat->size(), 3000u);
  SynthMarket m(c);
  int flips = 0;
  for (size_t i = 0; i < 3000; ++i) {
    m.next();
    const SynthLatent l = m.latent();
    EXPECT_EQ((*lat)[i].regime, l.regime) << i;
    EXPECT_EQ((*lat)[i].drift, static_cast<double>(static_cast<float>(l.drift))) << i;
    if (i > 0 && (*lat)[i].regime != (*lat)[i - 1].regime) ++flips;
  }
  EXPECT_GE(flips, 0);
  // The config round-trips through JSON and regenerates the same stream.
  auto back = synth_config_from_json(synth_config_to_json(c), "test");
  ASSERT_TRUE(back.ok()) << back.status().message();
  SynthMarket a(c), b(*back);
  for (int i = 0; i < 100; ++i) EXPECT_EQ(a.next().ts_recv, b.next().ts_recv);
  // Bad files: one line naming the problem.
  ASSERT_TRUE(write_file_atomic(dir + "/bad.latent", "FXTLATNT").ok());
  EXPECT_FALSE(read_latent_sidecar(dir + "/bad.latent").ok());
  nlohmann::json j = synth_config_to_json(c);
  j["window_levels"] = 3;
  EXPECT_NE(synth_config_from_json(j, "cfg.json").status().message().find("cfg.json"),
            std::string::npos);
}

TEST(SynthLatent, ActivityRegimeRunsTheClockFasterInActiveSpells) {
  // Off by default: no activity draws, so the stream is the one without the regime.
  SynthConfig off = small(2000);
  SynthConfig on = off;
  on.activity_speed = 3.0;
  on.activity_quiet_gain = 0.0;
  on.activity_active_gain = 2.0;
  on.activity_quiet_s = 4.0;
  on.activity_active_s = 2.0;
  EXPECT_FALSE(off.activity_on());
  EXPECT_TRUE(on.activity_on());
  {
    SynthMarket m(off);
    for (int i = 0; i < 2000; ++i) EXPECT_EQ((m.next(), m.latent().activity), 0);
  }
  // On: mean inter-arrival in active spells ~ 1/3 of the quiet ones (the event mix is the same
  // apart from the drift's skews), and the time share of active spells ~ 2 / (4 + 2).
  on.events = 200000;
  SynthMarket m(on);
  double dt_sum[2] = {0, 0}, n[2] = {0, 0};
  uint64_t prev = 0;
  int switches = 0, last = -1;
  for (uint64_t i = 0; i < on.events; ++i) {
    const uint64_t ts = m.next().hd.ts_event;
    const int a = m.latent().activity;
    ASSERT_TRUE(a == 0 || a == 1);
    if (i > 0) {
      dt_sum[a] += static_cast<double>(ts - prev);
      n[a] += 1;
    }
    if (last >= 0 && a != last) ++switches;
    last = a;
    prev = ts;
  }
  ASSERT_GT(n[0], 1000);
  ASSERT_GT(n[1], 1000);
  const double ratio = (dt_sum[0] / n[0]) / (dt_sum[1] / n[1]);
  EXPECT_NEAR(ratio, 3.0, 0.3) << ratio;
  const double active_share = dt_sum[1] / (dt_sum[0] + dt_sum[1]);
  EXPECT_NEAR(active_share, 1.0 / 3.0, 0.12) << active_share;
  EXPECT_GT(switches, 20);
  // The sidecar carries it; a version-1 file (12-byte records) reads with activity 0.
  const std::string dir = test::scratch_dir();
  on.events = 3000;
  ASSERT_TRUE(synthesize_market(on, dir + "/a.dbn", nullptr, nullptr, /*latent=*/true).ok());
  auto lat = read_latent_sidecar(dir + "/a.dbn.latent");
  ASSERT_TRUE(lat.ok()) << lat.status().message();
  SynthMarket again(on);
  for (size_t i = 0; i < 3000; ++i) {
    again.next();
    ASSERT_EQ((*lat)[i].activity, again.latent().activity) << i;
  }
  std::string v1 = "FXTLATNT";
  const uint32_t head[2] = {1, 12};
  const uint64_t count = 1;
  const float drift = 0.5f, mom = -2.0f;
  const int32_t regime = -1;
  v1.append(reinterpret_cast<const char*>(head), 8);
  v1.append(reinterpret_cast<const char*>(&count), 8);
  v1.append(reinterpret_cast<const char*>(&drift), 4);
  v1.append(reinterpret_cast<const char*>(&mom), 4);
  v1.append(reinterpret_cast<const char*>(&regime), 4);
  ASSERT_TRUE(write_file_atomic(dir + "/v1.latent", v1).ok());
  auto old = read_latent_sidecar(dir + "/v1.latent");
  ASSERT_TRUE(old.ok()) << old.status().message();
  ASSERT_EQ(old->size(), 1u);
  EXPECT_EQ((*old)[0].drift, 0.5);
  EXPECT_EQ((*old)[0].momentum_ticks, -2.0);
  EXPECT_EQ((*old)[0].regime, -1);
  EXPECT_EQ((*old)[0].activity, 0);
  // A config written before the regime existed loads with it off; a bad speed is refused.
  nlohmann::json j = synth_config_to_json(on);
  for (const char* key : {"activity_quiet_s", "activity_active_s", "activity_speed",
                          "activity_quiet_gain", "activity_active_gain"})
    j.erase(key);
  auto back = synth_config_from_json(j, "old.json");
  ASSERT_TRUE(back.ok()) << back.status().message();
  EXPECT_FALSE(back->activity_on());
  j = synth_config_to_json(on);
  j["activity_speed"] = 0.5;
  EXPECT_NE(synth_config_from_json(j, "cfg.json").status().message().find("activity_speed"),
            std::string::npos);
}

TEST(SynthLatent, ResponseRegimeSetsHowTheTradesAnswerTheImbalance) {
  // Off by default: no draws for it, response 0 throughout.
  SynthConfig off = small(2000);
  EXPECT_FALSE(off.response_on());
  {
    SynthMarket m(off);
    for (int i = 0; i < 2000; ++i) EXPECT_EQ((m.next(), m.latent().response), 0);
  }
  // On, with the trades following the imbalance in b = +1 and fading it in b = -1: the share of
  // trades on the side the touch imbalance before them points to is (1 + beta |imb|) / 2 on
  // average, so well above one half in b = +1 and well below in b = -1. The drift and momentum
  // skews are switched off so the imbalance is the trades' only lean.
  SynthConfig on = off;
  on.events = 300000;
  on.response_regime_s = 20.0;
  on.market_imbalance_beta = 0.8;
  on.response_regime_beta = -0.8;
  on.drift_market_skew = 0.0;
  on.momentum_skew = 0.0;
  EXPECT_TRUE(on.response_on());
  SynthMarket m(on);
  double agree[2] = {0, 0}, trades[2] = {0, 0}, events[2] = {0, 0};
  int switches = 0, last = 0;
  double imb = 0;
  for (uint64_t i = 0; i < on.events; ++i) {
    const dbn::Mbp10Msg& msg = m.next();
    const int b = m.latent().response;
    ASSERT_TRUE(b == 1 || b == -1);
    // The regime can only flip in update_drift, after the event: the event's regime is the one
    // before it, which `last` holds.
    const int k = (i == 0 ? b : last) > 0 ? 0 : 1;
    events[k] += 1;
    if (msg.action == 'T' && imb != 0) {
      trades[k] += 1;
      if ((msg.side == 'B') == (imb > 0)) agree[k] += 1;
    }
    if (i > 0 && b != last) ++switches;
    last = b;
    const double qb = msg.levels[0].bid_sz, qa = msg.levels[0].ask_sz;
    imb = (qb - qa) / (qb + qa);
  }
  ASSERT_GT(trades[0], 2000);
  ASSERT_GT(trades[1], 2000);
  EXPECT_GT(agree[0] / trades[0], 0.6) << agree[0] / trades[0];
  EXPECT_LT(agree[1] / trades[1], 0.4) << agree[1] / trades[1];
  EXPECT_GT(switches, 10);
  EXPECT_NEAR(events[0] / (events[0] + events[1]), 0.5, 0.2);
  // The sidecar carries it; a version-2 file (16-byte records) reads with response 0.
  const std::string dir = test::scratch_dir();
  on.events = 3000;
  ASSERT_TRUE(synthesize_market(on, dir + "/r.dbn", nullptr, nullptr, /*latent=*/true).ok());
  auto lat = read_latent_sidecar(dir + "/r.dbn.latent");
  ASSERT_TRUE(lat.ok()) << lat.status().message();
  SynthMarket again(on);
  for (size_t i = 0; i < 3000; ++i) {
    again.next();
    ASSERT_EQ((*lat)[i].response, again.latent().response) << i;
  }
  std::string v2 = "FXTLATNT";
  const uint32_t head[2] = {2, 16};
  const uint64_t count = 1;
  const float drift = 0.25f, mom = 1.0f;
  const int32_t regime = 1, activity = 1;
  v2.append(reinterpret_cast<const char*>(head), 8);
  v2.append(reinterpret_cast<const char*>(&count), 8);
  v2.append(reinterpret_cast<const char*>(&drift), 4);
  v2.append(reinterpret_cast<const char*>(&mom), 4);
  v2.append(reinterpret_cast<const char*>(&regime), 4);
  v2.append(reinterpret_cast<const char*>(&activity), 4);
  ASSERT_TRUE(write_file_atomic(dir + "/v2.latent", v2).ok());
  auto old = read_latent_sidecar(dir + "/v2.latent");
  ASSERT_TRUE(old.ok()) << old.status().message();
  ASSERT_EQ(old->size(), 1u);
  EXPECT_EQ((*old)[0].drift, 0.25);
  EXPECT_EQ((*old)[0].activity, 1);
  EXPECT_EQ((*old)[0].response, 0);
  // A config written before the regime existed loads with it off; a bad beta is refused.
  nlohmann::json j = synth_config_to_json(on);
  j.erase("response_regime_s");
  j.erase("response_regime_beta");
  auto back = synth_config_from_json(j, "old.json");
  ASSERT_TRUE(back.ok()) << back.status().message();
  EXPECT_FALSE(back->response_on());
  j = synth_config_to_json(on);
  j["response_regime_beta"] = -1.5;
  EXPECT_NE(synth_config_from_json(j, "cfg.json").status().message().find("response_regime_beta"),
            std::string::npos);
}

TEST(SynthLatent, MetaOrderSendsClipsOnItsSideThenTheOthersLeanItsWay) {
  // Off by default: meta 0 throughout (PinnedValuesForSeedOne shows the stream is unchanged).
  SynthConfig off = small(2000);
  EXPECT_FALSE(off.meta_on());
  {
    SynthMarket m(off);
    for (int i = 0; i < 2000; ++i) EXPECT_EQ((m.next(), m.latent().meta), 0);
  }
  // On, with the drift's and the momentum regime's leans off so the meta-order is the only one.
  // Accumulating (d = +-1), the 1-lot trades are mostly its clips (20 a second against about 3 a
  // second of 1-lot noise orders per side): far more on its side than the other. Revealing
  // (+-2), every trade leans its way (exp(1.2) = 3.3 times as many on its side). None running:
  // balanced. States only go 0 -> +-1 -> +-2 -> 0, the same side throughout.
  SynthConfig on = off;
  on.events = 400000;
  on.meta_gap_s = 3.0;
  on.meta_life_s = 3.0;
  on.meta_reveal_s = 2.0;
  on.meta_clip_rate = 20.0;
  on.meta_clip_lots = 1;
  on.meta_skew = 1.2;
  on.drift_market_skew = 0.0;
  on.drift_book_skew = 0.0;
  on.momentum_skew = 0.0;
  EXPECT_TRUE(on.meta_on());
  SynthMarket m(on);
  // Per state before the event (index meta + 2): buys and sells, of 1-lot trades and of all.
  double one_buy[5] = {}, one_sell[5] = {}, buy[5] = {}, sell[5] = {};
  int last = 0, starts = 0;
  for (uint64_t i = 0; i < on.events; ++i) {
    const dbn::Mbp10Msg& msg = m.next();
    const int k = last + 2;  // the state can only change in update_drift, after the event
    if (msg.action == 'T') {
      (msg.side == 'B' ? buy : sell)[k] += 1;
      if (msg.size == 1) (msg.side == 'B' ? one_buy : one_sell)[k] += 1;
    }
    const int d = m.latent().meta;
    ASSERT_TRUE(d >= -2 && d <= 2);
    if (d != last) {
      const bool next_state =
          (last == 0 && std::abs(d) == 1) || (d == 2 * last) || (std::abs(last) == 2 && d == 0);
      ASSERT_TRUE(next_state) << last << " -> " << d << " at " << i;
      if (last == 0) ++starts;
    }
    last = d;
  }
  EXPECT_GT(starts, 10);
  for (int k : {0, 1, 3, 4}) ASSERT_GT(buy[k] + sell[k], 1000) << k;
  EXPECT_GT(one_buy[3] / (one_buy[3] + one_sell[3]), 0.75);        // d = +1: its clips
  EXPECT_LT(one_buy[1] / (one_buy[1] + one_sell[1]), 0.25);        // d = -1
  EXPECT_GT(buy[4] / (buy[4] + sell[4]), 0.65);                    // reveal of a buyer
  EXPECT_LT(buy[0] / (buy[0] + sell[0]), 0.35);                    // reveal of a seller
  EXPECT_NEAR(one_buy[2] / (one_buy[2] + one_sell[2]), 0.5, 0.1);  // none running
  // The sidecar carries it (version 4); a version-3 file (20-byte records) reads with meta 0.
  const std::string dir = test::scratch_dir();
  on.events = 20000;
  ASSERT_TRUE(synthesize_market(on, dir + "/m.dbn", nullptr, nullptr, /*latent=*/true).ok());
  auto lat = read_latent_sidecar(dir + "/m.dbn.latent");
  ASSERT_TRUE(lat.ok()) << lat.status().message();
  SynthMarket again(on);
  int running = 0;
  for (size_t i = 0; i < 20000; ++i) {
    again.next();
    ASSERT_EQ((*lat)[i].meta, again.latent().meta) << i;
    running += (*lat)[i].meta != 0;
  }
  EXPECT_GT(running, 0);
  std::string v3 = "FXTLATNT";
  const uint32_t head[2] = {3, 20};
  const uint64_t count = 1;
  const float drift = 0.5f, mom = -1.0f;
  const int32_t ints[3] = {-1, 1, -1};  // regime, activity, response
  v3.append(reinterpret_cast<const char*>(head), 8);
  v3.append(reinterpret_cast<const char*>(&count), 8);
  v3.append(reinterpret_cast<const char*>(&drift), 4);
  v3.append(reinterpret_cast<const char*>(&mom), 4);
  v3.append(reinterpret_cast<const char*>(ints), 12);
  ASSERT_TRUE(write_file_atomic(dir + "/v3.latent", v3).ok());
  auto old = read_latent_sidecar(dir + "/v3.latent");
  ASSERT_TRUE(old.ok()) << old.status().message();
  ASSERT_EQ(old->size(), 1u);
  EXPECT_EQ((*old)[0].drift, 0.5);
  EXPECT_EQ((*old)[0].response, -1);
  EXPECT_EQ((*old)[0].meta, 0);
  // A config written before the meta-order existed loads with it off; a bad skew is refused.
  nlohmann::json j = synth_config_to_json(on);
  for (const char* key : {"meta_gap_s", "meta_life_s", "meta_reveal_s", "meta_clip_rate",
                          "meta_clip_lots", "meta_skew"})
    j.erase(key);
  auto back = synth_config_from_json(j, "old.json");
  ASSERT_TRUE(back.ok()) << back.status().message();
  EXPECT_FALSE(back->meta_on());
  j = synth_config_to_json(on);
  j["meta_skew"] = 6.0;
  EXPECT_NE(synth_config_from_json(j, "cfg.json").status().message().find("meta_skew"),
            std::string::npos);
}

TEST(SynthOracle, ACopyContinuesTheStreamAndTheOracleIsDeterministic) {
  const SynthConfig c = small(2000);
  SynthMarket m(c);
  for (int i = 0; i < 500; ++i) m.next();
  SynthMarket copy = m;
  for (int i = 0; i < 50; ++i) EXPECT_EQ(copy.next().price, m.next().price) << i;

  const std::vector<uint64_t> events = {100, 400, 900, 1500};
  const std::vector<int> hz = {10, 50};
  OracleOptions o;
  o.paths = 32;
  o.threads = 2;
  auto p1 = synth_oracle(c, events, hz, o);
  auto p2 = synth_oracle(c, events, hz, o);
  ASSERT_TRUE(p1.ok()) << p1.status().message();
  EXPECT_EQ(*p1, *p2);
  for (double p : *p1) EXPECT_TRUE(p >= 0.0 && p <= 1.0) << p;
  o.threads = 1;
  EXPECT_EQ(*synth_oracle(c, events, hz, o), *p1);  // thread count does not matter
  const std::vector<uint64_t> unordered = {5, 3};
  EXPECT_FALSE(synth_oracle(c, unordered, hz, o).ok());
  const std::vector<uint64_t> past = {2000};
  EXPECT_FALSE(synth_oracle(c, past, hz, o).ok());
}

TEST(SynthOracle, FollowsTheMomentumRegime) {
  // With a strong momentum regime and nothing else, after an up move the oracle expects more
  // up moves in the persisting regime (r = +1) than in the fading one (r = -1).
  SynthConfig c = small(40000);
  c.momentum_skew = 2.0;
  c.regime_tau_s = 60;
  SynthMarket m(c);
  std::vector<uint64_t> events;
  std::vector<int> regime;
  std::vector<double> mom;
  for (uint64_t i = 0; i < c.events; ++i) {
    m.next();
    if (i % 400 == 399) {
      events.push_back(i);
      regime.push_back(m.latent().regime);
      mom.push_back(m.latent().momentum_ticks);
    }
  }
  OracleOptions o;
  o.paths = 64;
  o.threads = 2;
  const std::vector<int> hz = {50};
  auto p = synth_oracle(c, events, hz, o);
  ASSERT_TRUE(p.ok()) << p.status().message();
  // Direction agreement of (p - 1/2) with r * sign(m): the regime's prediction.
  double agree = 0, n = 0;
  for (size_t i = 0; i < events.size(); ++i) {
    if (std::abs(mom[i]) < 0.5 || std::abs((*p)[i] - 0.5) < 0.05) continue;
    const double expect = regime[i] * (mom[i] > 0 ? 1 : -1);
    agree += ((*p)[i] - 0.5) * expect > 0 ? 1 : 0;
    n += 1;
  }
  ASSERT_GT(n, 10);
  EXPECT_GT(agree / n, 0.7) << agree << " of " << n;
}

}  // namespace
}  // namespace fxt
