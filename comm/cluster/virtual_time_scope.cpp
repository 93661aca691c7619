#include "dplab/comm/cluster/virtual_time_scope.h"

namespace dplab::cluster {
namespace {

// See the header: the compute thread's installed virtual time.
thread_local std::shared_ptr<VirtualTime> installed;

}  // namespace

VirtualTimeScope::VirtualTimeScope(std::shared_ptr<VirtualTime> vt)
    : previous_(std::move(installed)) {
  installed = std::move(vt);
}

VirtualTimeScope::~VirtualTimeScope() {
  installed = std::move(previous_);
}

std::shared_ptr<VirtualTime> VirtualTimeScope::current() {
  return installed;
}

}  // namespace dplab::cluster
