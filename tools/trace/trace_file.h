// Reading the Chrome trace-event files `dplab train --trace` writes (docs/trace_summary.md,
// "Trace format"): the merged OUT/trace.json, or, when a run was stopped before rank 0 merged
// them, every OUT/trace/rank_R.json. Only what the summary and the timeline figure use is kept;
// every field they rely on is checked here, so the arithmetic never meets a half-read event.
#pragma once
#include <cstddef>
#include <filesystem>
#include <map>
#include <string>
#include <vector>

namespace dplab::trace {

// One complete event ("ph": "X"). Times in microseconds on the shared time axis.
struct Event {
  std::string name, cat;
  int pid = 0;  // the rank
  int tid = 0;  // 0 steps, 1 compute, 2 comm, 3 loader, 4 gpu compute, 5 gpu comm
  double ts = 0, dur = 0;
  // args.step; -1 where the format allows none: eval, and communication and waits outside the
  // steps (the end of an epoch: the algorithm's end-of-epoch work, the drain, evaluation).
  long step = -1;
  // Bucket allreduces (name "allreduce bucket K") only; -1 / 0 elsewhere.
  int bucket = -1;
  // Comm events: args.bytes (the payload handed to the communicator) and args.wire_bytes (what
  // the rank put on its links, comm/wire_bytes.h) where given; traces written before wire bytes
  // were recorded have none.
  double bytes = 0;
  bool has_bytes = false;
  double wire_bytes = 0;
  bool has_wire_bytes = false;
  double ready_us = 0;  // args.ready_us: when the bucket's last tensor became ready
  std::string file;     // the file it came from, for messages
  size_t index = 0;     // its position in that file's traceEvents
  double end() const { return ts + dur; }
};

// The thread ids of the format (TRACE_FORMAT / docs/trace_summary.md).
inline constexpr int kTidSteps = 0, kTidCompute = 1, kTidComm = 2, kTidLoader = 3,
                     kTidGpuCompute = 4, kTidGpuComm = 5;
// Loader worker w >= 1 has tid 30 + w (worker 0 has kTidLoader), so concurrent workers never
// share a track.
inline constexpr int kTidLoaderWorkers = 30;
inline bool on_loader_track(const Event& e) {
  return e.tid == kTidLoader || e.tid > kTidLoaderWorkers;
}

struct TraceData {
  std::vector<std::string> files;  // what was read, in order
  bool from_rank_files = false;    // true: trace.json was absent, rank_*.json were merged here
  // Per-rank files that end mid-stream, without their closing line: their run did not finish
  // (killed, crashed, aborted). What they hold was read: every step that ended before.
  std::vector<std::string> unfinished;
  // otherData.time_base ("wall", "virtual:<platform>"); a trace without it says so in
  // otherData.clock ("... virtual time ..."), else it is on the wall clock.
  std::string time_base = "wall";
  bool virtual_time() const { return time_base.starts_with("virtual"); }
  int version = 0;                           // otherData.dplab_trace_version
  int world_size = 0;                        // otherData.world_size
  std::string window;                        // otherData.steps ("A:B" or "all"), as written
  std::map<int, std::string> process_names;  // pid -> "rank R (node K, HOST)"
  std::vector<Event> events;                 // complete events of every rank
};

// Parses one trace document. `source` names it in errors. Throws dplab::Error on malformed
// JSON (with the byte offset), on a document that is not a trace, and on an event that lacks a
// field the summary needs (naming the event's index and the field).
TraceData parse_trace(const std::string& text, const std::string& source);

// Reads `where`: a trace file, or a run directory holding trace.json, or (trace.json absent)
// trace/rank_*.json, which are then merged in rank order with from_rank_files set. A per-rank
// file of a run that did not finish is read as far as its last complete event (see
// complete_stream) and listed in `unfinished`.
TraceData read_trace(const std::filesystem::path& where);

// A per-rank file as the tracer streams it (core/trace/trace_file.h: the header line ending in
// "traceEvents":[, then one event per line), cut off where its process died: the document its
// complete events make, the torn last line dropped. Empty when `text` is not such a stream.
std::string complete_stream(const std::string& text);

// "A:B" -> {A, B} (0 <= A < B); throws dplab::UsageError naming `what` otherwise.
std::pair<long, long> parse_step_range(const std::string& text, const std::string& what);

}  // namespace dplab::trace
