// Why a gradient-compression key (<prefix>compress and its powersgd.* / topk.* keys,
// docs/algorithms/compression.md) does nothing in this run, for the driver's unknown-option
// error: compression is a GradSync option, read only under the GradSync prefixes of the
// algorithms that average gradients through GradSync; every other algorithm refuses the keys
// (as unknown options), and this says which algorithms read them and why this one does not.
#pragma once
#include <string>

namespace dplab {

// "" when `key` is not a compression key; otherwise one sentence (no final period) naming
// the prefixes that read compression and why algorithm `algo` does not: what it `exchanges`
// instead (StrategyEntry::exchanges; "" says nothing more).
std::string compression_refusal(const std::string& key, const std::string& algo,
                                const std::string& exchanges);

}  // namespace dplab
