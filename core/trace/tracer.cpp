#include "dplab/core/trace/tracer.h"

#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <filesystem>

#include "dplab/core/error.h"

namespace dplab::trace {
namespace {

// Integral values print as integers (step numbers, byte counts), others in shortest form.
void append_number(std::string& s, double v) {
  if (std::isfinite(v) && v == std::floor(v) && std::fabs(v) < 9.0e15)
    s += fmt::format("{}", static_cast<int64_t>(v));
  else if (std::isfinite(v))
    s += fmt::format("{}", v);
  else
    s += "null";  // JSON has no inf/NaN
}

std::string metadata(const char* what, int pid, int tid, const std::string& args) {
  return fmt::format("{{\"ph\":\"M\",\"name\":\"{}\",\"pid\":{},\"tid\":{},\"ts\":0,\"args\":{}}}",
                     what, pid, tid, args);
}

}  // namespace

Tracer::Tracer(TracerOptions opt) : opt_(std::move(opt)) {
  DPLAB_CHECK(kCompiled,
              "option trace: this dplab was built with -DDPLAB_TRACE=OFF (instrumentation "
              "compiled out); rebuild with -DDPLAB_TRACE=ON to trace");
  DPLAB_CHECK(opt_.chunk_bytes > 0, "trace: chunk size must be > 0");
  window_ = parse_step_window(opt_.steps, 0);  // checks the value now (resolved in start())
}

Tracer::~Tracer() {
  try {
    close();
  } catch (...) {  // unwinding: the file stays as far as it was written
  }
}

std::string Tracer::file_path() const {
  return (std::filesystem::path(opt_.dir) / fmt::format("rank_{}.json", place_.rank)).string();
}

void Tracer::start(const RankPlace& place, Clock::time_point origin, int64_t total_steps) {
  std::lock_guard<std::mutex> lock(mu_);
  DPLAB_CHECK(!file_, "Tracer::start called twice");
  place_ = place;
  origin_ = origin;
  window_ = parse_step_window(opt_.steps, total_steps);
  std::filesystem::create_directories(opt_.dir);
  const std::string other = fmt::format(
      "{{\"dplab_trace_version\":1,\"world_size\":{},\"steps\":{},\"clock\":{},"
      "\"time_base\":{},\"rank\":{},\"node\":{},\"host\":{}}}",
      place_.world_size, json_string(window_.str()), json_string(clock_text()),
      json_string(time_base()), place_.rank, place_.node, json_string(place_.host));
  file_ = std::make_unique<TraceFile>(file_path(), other);
  gpu_ = make_gpu_timeline(opt_.device);
  const int pid = place_.rank;
  file_->add(metadata(
      "process_name", pid, 0,
      fmt::format("{{\"name\":{}}}", json_string(fmt::format("rank {} (node {}, {})", place_.rank,
                                                             place_.node, place_.host)))));
  file_->add(metadata("process_sort_index", pid, 0, fmt::format("{{\"sort_index\":{}}}", pid)));
  const char* names[] = {"steps", "compute", "comm", "loader", "gpu compute", "gpu comm"};
  const int threads = gpu_ ? 6 : 4;
  for (int tid = 0; tid < threads; ++tid) {
    file_->add(
        metadata("thread_name", pid, tid, fmt::format("{{\"name\":{}}}", json_string(names[tid]))));
    file_->add(metadata("thread_sort_index", pid, tid, fmt::format("{{\"sort_index\":{}}}", tid)));
  }
  started_.store(true, std::memory_order_release);
}

int Tracer::loader_tid(int worker) {
  if (worker <= 0) return kLoader;
  const int tid = 30 + worker;
  std::lock_guard<std::mutex> lock(mu_);
  if (file_ && std::find(named_loader_tids_.begin(), named_loader_tids_.end(), tid) ==
                   named_loader_tids_.end()) {
    named_loader_tids_.push_back(tid);
    add_locked(
        metadata("thread_name", place_.rank, tid,
                 fmt::format("{{\"name\":{}}}", json_string(fmt::format("loader {}", worker)))));
    add_locked(metadata("thread_sort_index", place_.rank, tid,
                        fmt::format("{{\"sort_index\":{}}}", int(kLoader))));
  }
  return tid;
}

void Tracer::begin_step(int64_t step) {
  if (!file_) return;
  step_.store(step, std::memory_order_relaxed);
  const bool on = window_.contains(step);
  recording_.store(on, std::memory_order_release);
  // The window has ended (or many GPU spans wait): read the GPU tracks back, once.
  if (gpu_ && ((!on && !gpu_resolved_) || gpu_->pending() > 4096)) resolve_gpu();
  if (on) gpu_resolved_ = false;
  // The steps before this one are over: their events go to the file now, so that a run killed
  // later leaves them readable (dplab trace summarises such a file, tools/trace/trace_file.h).
  // One write per recorded step; chunk_bytes still bounds what a long step buffers.
  std::lock_guard<std::mutex> lock(mu_);
  if (file_->buffered_bytes() > 0) file_->flush();
}

void Tracer::between_steps() {
  if (!file_) return;
  step_.store(-1, std::memory_order_relaxed);
}

std::string Tracer::time_base() const {
  if (!virtual_time()) return "wall";
  return time_base_.starts_with("virtual") ? time_base_ : "virtual";
}

std::string Tracer::clock_text() const {
  return virtual_time() ? "microseconds of virtual time (option cluster) after rank 0's time origin"
                        : "microseconds since rank 0's time origin (a barrier after MPI start)";
}

void Tracer::resolve_gpu() {
  std::vector<GpuSpan> spans;
  gpu_->resolve(origin_, [&](const GpuSpan& s) { spans.push_back(s); });
  for (const GpuSpan& s : spans) complete_us(s.name, s.cat, s.tid, s.ts_us, s.dur_us, s.step);
  gpu_resolved_ = true;
}

void Tracer::complete(std::string_view name, const char* cat, int tid, Clock::time_point t0,
                      Clock::time_point t1, int64_t step, std::initializer_list<Arg> args) {
  complete_us(name, cat, tid, us(t0), std::chrono::duration<double, std::micro>(t1 - t0).count(),
              step, args);
}

void Tracer::complete_us(std::string_view name, const char* cat, int tid, double ts_us,
                         double dur_us, int64_t step, std::initializer_list<Arg> args) {
  std::string line = fmt::format(
      "{{\"ph\":\"X\",\"name\":{},\"cat\":\"{}\",\"pid\":{},\"tid\":{},\"ts\":{:.3f},\"dur\":{:."
      "3f}",
      json_string(name), cat, place_.rank, tid, ts_us, std::max(0.0, dur_us));
  if (step >= 0 || args.size() > 0) {
    line += ",\"args\":{";
    bool first = true;
    if (step >= 0) {
      line += fmt::format("\"step\":{}", step);
      first = false;
    }
    for (const Arg& a : args) {
      line += first ? "\"" : ",\"";
      line += a.key;
      line += "\":";
      append_number(line, a.value);
      first = false;
    }
    line += '}';
  }
  line += '}';
  std::lock_guard<std::mutex> lock(mu_);
  add_locked(line);
}

void Tracer::add_locked(const std::string& line) {
  if (!file_) return;
  file_->add(line);
  max_buffered_ = std::max(max_buffered_, file_->buffered_bytes());
  if (file_->buffered_bytes() >= hard_limit_bytes()) file_->flush();
}

size_t Tracer::buffered_bytes() const {
  std::lock_guard<std::mutex> lock(mu_);
  return file_ ? file_->buffered_bytes() : 0;
}

void Tracer::close() {
  recording_.store(false, std::memory_order_release);
  if (!file_) return;
  if (gpu_ && !gpu_resolved_) resolve_gpu();
  std::lock_guard<std::mutex> lock(mu_);
  file_->close();
}

}  // namespace dplab::trace
