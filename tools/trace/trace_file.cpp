// Trace files -> TraceData, checking every field the summary and the figure rely on so that a
// writer bug shows up as a message naming the file, the event and the field, not as a wrong
// number.
#include "dplab/tools/trace/trace_file.h"

#include <nlohmann/json.hpp>

#include <algorithm>
#include <cctype>
#include <fstream>
#include <regex>
#include <sstream>

#include "dplab/core/error.h"
#include "dplab/train/config/config.h"

namespace dplab::trace {
namespace {

using nlohmann::json;

std::string slurp(const std::filesystem::path& p) {
  std::ifstream in(p, std::ios::binary);
  DPLAB_CHECK(in.good(), "cannot open trace file {}", p.string());
  std::ostringstream s;
  s << in.rdbuf();
  return s.str();
}

// Event `i` of `source`: the field `key` as a number (the format allows integers or doubles).
double number(const json& obj, const std::string& key, const std::string& where,
              const std::string& source, size_t i) {
  auto it = obj.find(key);
  DPLAB_CHECK(it != obj.end(), "{}: traceEvents[{}]: missing field {}", source, i, where + key);
  DPLAB_CHECK(it->is_number(), "{}: traceEvents[{}]: field {} is {}, expected a number", source, i,
              where + key, it->dump());
  return it->get<double>();
}

std::string text_field(const json& obj, const std::string& key, const std::string& source,
                       size_t i) {
  auto it = obj.find(key);
  DPLAB_CHECK(it != obj.end(), "{}: traceEvents[{}]: missing field {}", source, i, key);
  DPLAB_CHECK(it->is_string(), "{}: traceEvents[{}]: field {} is {}, expected a string", source, i,
              key, it->dump());
  return it->get<std::string>();
}

// Events the summary adds up per step: each must say which step it is part of. Communication
// and waits may be outside the steps (no args.step: the end of an epoch, Tracer::between_steps),
// and so may compute other than a step's forward, backward and optimizer (eval, an algorithm's
// end-of-epoch work).
bool needs_step(const Event& e) {
  if (e.cat == "compute")
    return e.name == "forward" || e.name == "backward" || e.name == "optimizer";
  return e.cat == "step" || e.cat == "data";
}

// Categories whose events belong to a step when they say so.
bool may_have_step(const Event& e) {
  return e.cat == "compute" || e.cat == "comm" || e.cat == "wait";
}

Event read_complete_event(const json& ev, const std::string& source, size_t i) {
  Event e;
  e.file = source;
  e.index = i;
  e.name = text_field(ev, "name", source, i);
  e.cat = text_field(ev, "cat", source, i);
  e.pid = int(number(ev, "pid", "", source, i));
  e.tid = int(number(ev, "tid", "", source, i));
  e.ts = number(ev, "ts", "", source, i);
  e.dur = number(ev, "dur", "", source, i);
  DPLAB_CHECK(e.dur >= 0, "{}: traceEvents[{}] ({}): dur {} is negative", source, i, e.name, e.dur);
  const auto args_it = ev.find("args");
  const json args = args_it != ev.end() && args_it->is_object() ? *args_it : json::object();
  if (needs_step(e) || (may_have_step(e) && args.contains("step")))
    e.step = long(number(args, "step", "args.", source, i));
  if (e.cat == "comm" && args.contains("bytes")) {
    e.bytes = number(args, "bytes", "args.", source, i);
    e.has_bytes = true;
  }
  if (e.cat == "comm" && args.contains("wire_bytes")) {
    e.wire_bytes = number(args, "wire_bytes", "args.", source, i);
    e.has_wire_bytes = true;
  }
  if (e.cat == "comm" && e.name.rfind("allreduce bucket ", 0) == 0) {
    e.bucket = int(number(args, "bucket", "args.", source, i));
    e.bytes = number(args, "bytes", "args.", source, i);
    e.has_bytes = true;
    e.ready_us = number(args, "ready_us", "args.", source, i);
  }
  return e;
}

// otherData.time_base, or for a trace written before it was recorded, what otherData.clock
// says: "microseconds of virtual time (option cluster) ..." under a virtual cluster.
std::string time_base_of(const json& other) {
  if (auto b = other.find("time_base"); b != other.end() && b->is_string() && !b->empty())
    return *b;
  if (auto c = other.find("clock"); c != other.end() && c->is_string() &&
                                    c->get<std::string>().find("virtual time") != std::string::npos)
    return "virtual";
  return "wall";
}

}  // namespace

TraceData parse_trace(const std::string& text, const std::string& source) {
  TraceData t;
  t.files.push_back(source);
  const auto take = [&](const json& ev, size_t i) {
    DPLAB_CHECK(ev.is_object(), "{}: traceEvents[{}] is {}, expected an object", source, i,
                ev.type_name());
    const std::string ph = text_field(ev, "ph", source, i);
    if (ph == "X") {
      t.events.push_back(read_complete_event(ev, source, i));
    } else if (ph == "M" && ev.value("name", "") == "process_name") {
      const int pid = int(number(ev, "pid", "", source, i));
      t.process_names[pid] = ev.contains("args") ? ev["args"].value("name", "") : "";
    }
    // Other phases (thread names, sort indices, counters) carry nothing the summary uses.
  };
  // Events are taken as the parser completes each one and then dropped from the document, so a
  // long trace (trace.steps = all) never exists twice in memory: once as JSON values, once as
  // Events. nlohmann's callback depths: 1 for the top object's keys, 2 for traceEvents' items.
  bool in_events = false;
  size_t index = 0;
  const json::parser_callback_t keep = [&](int depth, json::parse_event_t what, json& parsed) {
    if (depth == 1 && what == json::parse_event_t::key) in_events = parsed == "traceEvents";
    if (depth != 2 || !in_events) return true;
    if (what == json::parse_event_t::object_end || what == json::parse_event_t::array_end ||
        what == json::parse_event_t::value) {
      take(parsed, index++);
      return false;
    }
    return true;
  };
  json doc;
  try {
    doc = json::parse(text, keep);
  } catch (const json::parse_error& err) {
    DPLAB_FAIL("{}: not valid JSON at byte {} of {}: {}", source, err.byte, text.size(),
               err.what());
  }
  DPLAB_CHECK(doc.is_object(), "{}: expected a JSON object with traceEvents, found {}", source,
              doc.type_name());
  auto evs = doc.find("traceEvents");
  DPLAB_CHECK(evs != doc.end() && evs->is_array(), "{}: no traceEvents array", source);
  if (auto od = doc.find("otherData"); od != doc.end() && od->is_object()) {
    t.version = od->value("dplab_trace_version", 0);
    t.world_size = od->value("world_size", 0);
    if (auto s = od->find("steps"); s != od->end() && s->is_string()) t.window = *s;
    t.time_base = time_base_of(*od);
  }
  return t;
}

TraceData read_trace(const std::filesystem::path& where) {
  namespace fs = std::filesystem;
  DPLAB_CHECK(fs::exists(where), "{}: no such file or directory", where.string());
  if (!fs::is_directory(where)) return parse_trace(slurp(where), where.string());
  if (fs::exists(where / "trace.json"))
    return parse_trace(slurp(where / "trace.json"), (where / "trace.json").string());

  // No merged file: the run was stopped before rank 0 merged, or is still running. Read what
  // every rank wrote, in rank order.
  std::vector<std::pair<int, fs::path>> ranks;
  const std::regex name_re("rank_([0-9]+)\\.json");
  if (fs::is_directory(where / "trace"))
    for (const auto& f : fs::directory_iterator(where / "trace")) {
      std::smatch m;
      const std::string fname = f.path().filename().string();
      if (std::regex_match(fname, m, name_re)) ranks.emplace_back(std::stoi(m[1]), f.path());
    }
  DPLAB_CHECK(!ranks.empty(),
              "{}: neither trace.json nor trace/rank_*.json found (was the run started with "
              "--trace?)",
              where.string());
  std::sort(ranks.begin(), ranks.end());
  TraceData all;
  all.from_rank_files = true;
  for (const auto& [rank, path] : ranks) {
    std::string text = slurp(path);
    all.files.push_back(path.string());
    // A finished stream ends with "]}" (and a newline). One that does not is of a run that was
    // killed or crashed: it holds every step that ended before (the tracer writes each step out
    // as it ends), read up to its last complete event.
    size_t end = text.size();
    while (end > 0 && std::isspace(static_cast<unsigned char>(text[end - 1]))) --end;
    if (!std::string_view(text).substr(0, end).ends_with("]}")) {
      std::string done = complete_stream(text);
      if (!done.empty() || text.empty()) {
        all.unfinished.push_back(path.string());
        if (done.empty()) continue;  // its rank died before it wrote anything
        text = std::move(done);
      }
    }
    TraceData one = parse_trace(text, path.string());
    all.version = std::max(all.version, one.version);
    all.world_size = std::max(all.world_size, one.world_size);
    if (all.window.empty()) all.window = one.window;
    if (one.virtual_time()) all.time_base = one.time_base;
    all.process_names.insert(one.process_names.begin(), one.process_names.end());
    all.events.insert(all.events.end(), one.events.begin(), one.events.end());
  }
  return all;
}

std::string complete_stream(const std::string& text) {
  constexpr std::string_view kStart = "{\"displayTimeUnit\":", kEvents = "\"traceEvents\":[";
  const size_t events = text.find(kEvents);
  if (!text.starts_with(kStart) || events == std::string::npos) return {};
  const size_t body = events + kEvents.size();
  // Lines before the last are whole events ("{...}," each); the last may be torn mid-event.
  const size_t last_nl = text.rfind('\n');
  std::string done = last_nl == std::string::npos || last_nl < body
                         ? std::string()
                         : text.substr(body, last_nl - body);
  std::string tail =
      text.substr(last_nl == std::string::npos || last_nl < body ? body : last_nl + 1);
  while (!done.empty() &&
         (done.back() == ',' || std::isspace(static_cast<unsigned char>(done.back()))))
    done.pop_back();
  while (!tail.empty() &&
         (tail.back() == ',' || std::isspace(static_cast<unsigned char>(tail.back()))))
    tail.pop_back();
  if (tail.starts_with("{") && json::accept(tail)) done += (done.empty() ? "\n" : ",\n") + tail;
  return text.substr(0, body) + done + "\n]}\n";
}

std::pair<long, long> parse_step_range(const std::string& text, const std::string& what) {
  std::smatch m;
  const std::regex re("([0-9]+):([0-9]+)");
  if (!std::regex_match(text, m, re))
    throw UsageError(fmt::format("{} '{}': expected A:B, global steps A <= step < B", what, text));
  const long a = std::stol(m[1]), b = std::stol(m[2]);
  if (b <= a) throw UsageError(fmt::format("{} '{}': B must be above A", what, text));
  return {a, b};
}

}  // namespace dplab::trace
