// Options: a flat, typed view of configuration keys ("hybrid.W" -> "8"). The `dplab` command
// fills it from a TOML file and --set KEY=VALUE; algorithms and layers read typed values with
// defaults, and an unparsable value is a UsageError (core/usage_error.h) that names the key, the
// value and the type expected.
#pragma once
#include <map>
#include <optional>
#include <set>
#include <string>
#include <vector>

namespace dplab {

class Options {
 public:
  Options() = default;
  void set(const std::string& key, const std::string& value) { values_[key] = value; }
  bool has(const std::string& key) const { return values_.count(key) != 0; }
  // Typed reads with a default; marks the key as used.
  std::string get_string(const std::string& key, const std::string& def) const;
  int64_t get_int(const std::string& key, int64_t def) const;
  double get_double(const std::string& key, double def) const;
  bool get_bool(const std::string& key, bool def) const;
  // Throws if absent.
  std::string require_string(const std::string& key) const;
  const std::map<std::string, std::string>& values() const { return values_; }
  // Keys that were set but never read (typos): the driver reports them.
  std::vector<std::string> unused_keys() const;
  // Keys with the given prefix ("daso."), for dumping an algorithm's configuration.
  std::map<std::string, std::string> with_prefix(const std::string& prefix) const;
  // Every key read so far with the value the reader got: the one set, or the reader's default
  // as text (integers in decimal, doubles shortest round-trip, booleans true/false). A
  // checkpoint stores these, so a resumed run can tell any changed setting, set or defaulted.
  std::map<std::string, std::string> read_values() const;
  // The default the first reader of `key` passed (as read_values writes it), whether or not
  // the key was set; nullopt for a key never read with a default (the run record, OUT/run.json,
  // tells a setting from its default with it).
  std::optional<std::string> default_read(const std::string& key) const;

 private:
  std::map<std::string, std::string> values_;
  mutable std::set<std::string> used_;
  mutable std::map<std::string, std::string> defaults_read_;  // first default read per key
};

}  // namespace dplab
