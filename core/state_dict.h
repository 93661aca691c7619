// StateDict: the state of one stateful part of a training run (an algorithm, a schedule, a
// detector, a loss scaler, a sampler), as named tensors plus named scalar values, for
// checkpoints. Values are kept as exact text (integers in decimal, doubles with 17 significant
// digits), so a save/load round trip restores every bit. Each part saves under its own names;
// the checkpoint writer prefixes them (e.g. "algo.") with `merge`/`sub`.
//
//   void save_state(StateDict& s) const { s.put_tensor("V", v_); s.put_int("phase", phase_); }
//   void load_state(const StateDict& s) { v_.copy_(s.tensor("V")); phase_ = s.get_int("phase"); }
//
// Getters throw dplab::Error naming the missing or malformed key (and the StateDict's `origin`,
// e.g. the checkpoint file, when set).
#pragma once
#include <cstdint>
#include <map>
#include <string>
#include <vector>

#include "dplab/core/param_arena.h"

namespace dplab {

class StateDict {
 public:
  StateDict() = default;
  explicit StateDict(std::string origin) : origin_(std::move(origin)) {}

  // Writers. A name written twice is an error (two parts colliding under one prefix).
  void put_tensor(const std::string& name, const Tensor& t);  // kept as given (not copied)
  void put_int(const std::string& name, int64_t v);
  void put_double(const std::string& name, double v);  // exact: %.17g, inf/nan spelled out
  void put_bool(const std::string& name, bool v);
  void put_string(const std::string& name, const std::string& v);
  void put_doubles(const std::string& name, const std::vector<double>& v);
  void put_ints(const std::string& name, const std::vector<int64_t>& v);

  // Readers; a missing or malformed entry throws naming it.
  bool has(const std::string& name) const;  // a tensor or a value
  const Tensor& tensor(const std::string& name) const;
  int64_t get_int(const std::string& name) const;
  double get_double(const std::string& name) const;
  bool get_bool(const std::string& name) const;
  const std::string& get_string(const std::string& name) const;
  std::vector<double> get_doubles(const std::string& name) const;
  std::vector<int64_t> get_ints(const std::string& name) const;

  // Every entry of `other` under `prefix` + name (e.g. "algo." + "V").
  void merge(const std::string& prefix, const StateDict& other);
  // The entries whose names start with `prefix`, with the prefix taken off.
  StateDict sub(const std::string& prefix) const;
  bool empty() const { return tensors_.empty() && values_.empty(); }

  const std::vector<NamedTensor>& tensors() const { return tensors_; }
  const std::map<std::string, std::string>& values() const { return values_; }
  // Replaces the contents (a checkpoint reader filling it from a file).
  void assign(std::vector<NamedTensor> tensors, std::map<std::string, std::string> values);
  const std::string& origin() const { return origin_; }
  void set_origin(std::string origin) { origin_ = std::move(origin); }

 private:
  void check_new(const std::string& name) const;
  const std::string& value(const std::string& name) const;
  std::string where() const;

  std::string origin_;
  std::vector<NamedTensor> tensors_;
  std::map<std::string, std::string> values_;
};

}  // namespace dplab
