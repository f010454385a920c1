// Progress reporting for long work: one mechanism reused by every command.
//
// On a terminal (stderr is a tty) it redraws a bar with count, rate and ETA at
// most ten times a second; otherwise it prints a plain line every few seconds,
// so logs of batch jobs stay readable. Not thread-safe: one owner advances it.
#pragma once

#include <chrono>
#include <cstdint>
#include <string>

namespace fxt {

class Progress {
 public:
  // total = 0 means unknown (no ETA, no bar). unit names what is counted ("records").
  Progress(std::string label, uint64_t total, std::string unit);
  ~Progress();
  Progress(const Progress&) = delete;
  Progress& operator=(const Progress&) = delete;

  void advance(uint64_t n = 1) {
    done_ += n;
    if (done_ >= next_check_) maybe_report();
  }
  void set(uint64_t done) {
    done_ = done;
    if (done_ >= next_check_) maybe_report();
  }
  void finish();  // prints the final count and mean rate once

  // Globally silence progress output (tests, --quiet).
  static void set_enabled(bool enabled);

 private:
  void maybe_report();
  void print(bool final_line);

  using Clock = std::chrono::steady_clock;
  std::string label_, unit_;
  uint64_t total_, done_ = 0, next_check_ = 0;
  Clock::time_point start_, last_print_;
  bool tty_, finished_ = false, printed_ = false;
};

// "12.3 M", "456 k": compact counts for humans.
std::string human_count(double value);

}  // namespace fxt
