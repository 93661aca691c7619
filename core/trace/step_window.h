// The window of training steps a trace records (option trace.steps): global steps A <= s < B,
// 0-based, or every step. "auto" (the default) is a short window after warm-up: steps 10:20,
// moved earlier for a run of fewer than 20 steps so that it still holds the run's last (up to)
// 10 steps; the first steps pay one-time costs (allocator growth, oneDNN primitive creation,
// NCCL set-up) that would misrepresent a step's time.
#pragma once
#include <cstdint>
#include <string>

namespace dplab::trace {

struct StepWindow {
  int64_t begin = 0;
  int64_t end = 0;  // exclusive; kAll for every step
  static constexpr int64_t kAll = INT64_MAX;
  bool contains(int64_t step) const { return step >= begin && step < end; }
  // "A:B" as given (or "all"); used in the trace's otherData.
  std::string str() const;
};

// Parses "auto", "all" or "A:B" (0 <= A < B). `total_steps`: the global steps the run will
// take (resolves "auto"). Throws naming the option and the value otherwise.
StepWindow parse_step_window(const std::string& text, int64_t total_steps);

}  // namespace dplab::trace
