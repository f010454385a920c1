#include "data/synth_oracle.h"

#include <algorithm>
#include <thread>

#include "core/random.h"

namespace fxt {

Result<std::vector<double>> synth_oracle(const SynthConfig& config,
                                         std::span<const uint64_t> events,
                                         std::span<const int> horizons,
                                         const OracleOptions& options, Progress* progress) {
  FXT_RETURN_IF_ERROR(SynthMarket::validate(config));
  if (options.paths < 1) return UsageError("--oracle-paths must be >= 1");
  if (horizons.empty()) return UsageError("the oracle needs at least one horizon");
  for (size_t i = 0; i < events.size(); ++i) {
    if (events[i] >= config.events || (i > 0 && events[i] <= events[i - 1])) {
      return InvalidInput("oracle: event {} out of order or past the {} events of the market",
                          events[i], config.events);
    }
  }
  const size_t nh = horizons.size();
  // One pass regenerates the stream; the state after each requested event is kept.
  std::vector<SynthMarket> states;
  states.reserve(events.size());
  {
    SynthMarket market(config);
    size_t next = 0;
    for (uint64_t i = 0; next < events.size(); ++i) {
      market.next();  // the state after event i = the book of snapshot i
      if (i == events[next]) {
        states.push_back(market);
        ++next;
      }
    }
  }
  std::vector<double> probs(events.size() * nh, 0.5);
  const int64_t max_paths = static_cast<int64_t>(options.paths) * options.max_paths_factor;
  auto run = [&](size_t r0, size_t r1) {
    std::vector<int64_t> ups(nh), downs(nh);
    for (size_t r = r0; r < r1; ++r) {
      std::fill(ups.begin(), ups.end(), 0);
      std::fill(downs.begin(), downs.end(), 0);
      for (int64_t p = 0; p < max_paths; ++p) {
        // Only as far as the longest horizon that still lacks moved samples.
        int until = 0;
        for (size_t h = 0; h < nh; ++h) {
          if (ups[h] + downs[h] < options.paths) until = std::max(until, horizons[h]);
        }
        if (until == 0) break;
        SynthMarket m = states[r];
        uint64_t s =
            options.seed ^ (events[r] * 0x9E3779B97F4A7C15ull) ^ (static_cast<uint64_t>(p) << 40);
        m.reseed(splitmix64(&s));
        const int64_t mid0 = m.mid_2ticks();
        for (int step = 1; step <= until; ++step) {
          m.next();
          for (size_t h = 0; h < nh; ++h) {
            if (horizons[h] != step || ups[h] + downs[h] >= options.paths) continue;
            const int64_t d = m.mid_2ticks() - mid0;
            if (d > 0) ++ups[h];
            if (d < 0) ++downs[h];
          }
        }
      }
      for (size_t h = 0; h < nh; ++h) {
        const int64_t n = ups[h] + downs[h];
        if (n > 0) probs[r * nh + h] = static_cast<double>(ups[h]) / static_cast<double>(n);
      }
    }
  };
  // Rows are independent: contiguous ranges per thread, results in fixed places.
  const size_t threads = std::max<size_t>(1, std::min<size_t>(options.threads, events.size()));
  const size_t chunk = 64;
  size_t done = 0;
  for (size_t c0 = 0; c0 < events.size(); c0 += chunk * threads) {
    std::vector<std::thread> pool;
    for (size_t t = 0; t < threads; ++t) {
      const size_t r0 = std::min(events.size(), c0 + t * chunk);
      const size_t r1 = std::min(events.size(), r0 + chunk);
      if (r0 < r1) pool.emplace_back(run, r0, r1);
    }
    for (std::thread& th : pool) th.join();
    done = std::min(events.size(), c0 + chunk * threads);
    if (progress != nullptr) progress->set(done);
  }
  return probs;
}

}  // namespace fxt
