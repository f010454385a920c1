#include "core/progress.h"

#include <unistd.h>

#include <atomic>
#include <cstdio>

#include <fmt/format.h>

namespace fxt {
namespace {
std::atomic<bool> g_enabled{true};
constexpr double kTtyPeriodS = 0.1;
constexpr double kLinePeriodS = 5.0;
constexpr uint64_t kCheckEvery = 4096;  // clock reads are amortised over this many units

std::string format_duration(double s) {
  if (s < 0 || s > 1e7) return "--:--";
  auto t = static_cast<long>(s + 0.5);
  if (t >= 3600) return fmt::format("{}:{:02}:{:02}", t / 3600, (t / 60) % 60, t % 60);
  return fmt::format("{:02}:{:02}", t / 60, t % 60);
}
}  // namespace

std::string human_count(double v) {
  if (v >= 1e9) return fmt::format("{:.2f} G", v / 1e9);
  if (v >= 1e6) return fmt::format("{:.2f} M", v / 1e6);
  if (v >= 1e4) return fmt::format("{:.1f} k", v / 1e3);
  return fmt::format("{:.0f} ", v);
}

void Progress::set_enabled(bool enabled) {
  g_enabled = enabled;
}

Progress::Progress(std::string label, uint64_t total, std::string unit)
    : label_(std::move(label)),
      unit_(std::move(unit)),
      total_(total),
      start_(Clock::now()),
      last_print_(start_),
      tty_(::isatty(STDERR_FILENO) == 1) {
  next_check_ = kCheckEvery;
}

Progress::~Progress() {
  finish();
}

void Progress::maybe_report() {
  next_check_ = done_ + kCheckEvery;
  if (!g_enabled) return;
  auto now = Clock::now();
  double since = std::chrono::duration<double>(now - last_print_).count();
  if (since < (tty_ ? kTtyPeriodS : kLinePeriodS)) return;
  last_print_ = now;
  print(false);
}

void Progress::print(bool final_line) {
  double elapsed = std::chrono::duration<double>(Clock::now() - start_).count();
  double rate = elapsed > 0 ? static_cast<double>(done_) / elapsed : 0.0;
  std::string line;
  if (total_ > 0) {
    double frac = std::min(1.0, static_cast<double>(done_) / static_cast<double>(total_));
    double eta = rate > 0 ? static_cast<double>(total_ - std::min(total_, done_)) / rate : -1;
    if (tty_) {
      constexpr int kWidth = 30;
      int filled = static_cast<int>(frac * kWidth);
      line = fmt::format("{} [{}{}] {:5.1f}% {}{} {}{}/s ETA {}", label_, std::string(filled, '#'),
                         std::string(kWidth - filled, '.'), frac * 100, human_count(double(done_)),
                         unit_, human_count(rate), unit_, format_duration(final_line ? 0 : eta));
    } else {
      line = fmt::format("{}: {:.1f}% {}{} ({}{}/s, ETA {})", label_, frac * 100,
                         human_count(double(done_)), unit_, human_count(rate), unit_,
                         format_duration(final_line ? 0 : eta));
    }
  } else {
    line = fmt::format("{}: {}{} ({}{}/s, {})", label_, human_count(double(done_)), unit_,
                       human_count(rate), unit_, format_duration(elapsed));
  }
  if (tty_) {
    std::fprintf(stderr, "\r\033[K%s%s", line.c_str(), final_line ? "\n" : "");
  } else {
    std::fprintf(stderr, "%s\n", line.c_str());
  }
  std::fflush(stderr);
  printed_ = true;
}

void Progress::finish() {
  if (finished_) return;
  finished_ = true;
  // Short jobs that never printed stay silent; long ones end with a final line.
  if (g_enabled && printed_) print(true);
}

}  // namespace fxt
