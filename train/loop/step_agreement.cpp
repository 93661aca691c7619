#include "dplab/train/loop/step_agreement.h"

#include <fmt/format.h>

#include <algorithm>
#include <cstring>

#include "dplab/comm/communicator.h"
#include "dplab/comm/stall_report.h"
#include "dplab/core/error.h"

namespace dplab {

std::string Agreement::joined_reports() const {
  std::string r;
  for (size_t i = 0; i < reports.size(); ++i)
    if (!reports[i].empty())
      r += fmt::format("{}rank {}: {}", r.empty() ? "" : "; ", i, reports[i]);
  return r;
}

std::vector<int> Agreement::reporting_ranks() const {
  std::vector<int> r;
  for (size_t i = 0; i < reports.size(); ++i)
    if (!reports[i].empty()) r.push_back(int(i));
  return r;
}

// One posted tick: the bits in flight and this rank's text for them.
struct StepAgreement::Pending {
  int64_t tick = 0;
  Tensor bits;  // f32 [2], reduced in place (MAX)
  Request request;
  std::string report;
};

namespace {

std::string capped(std::string s) {
  if (s.size() > size_t(StepAgreement::kReportBytes - 1))
    s.resize(size_t(StepAgreement::kReportBytes - 1));
  return s;
}

}  // namespace

StepAgreement::StepAgreement(const Options& opt, int world_size) : world_size_(world_size) {
  DPLAB_CHECK(world_size >= 1, "StepAgreement: world size {} < 1", world_size);
  if (world_size == 1) return;
  CommConfig cfg = CommConfig::from_options(opt);
  // Control traffic: real time only, not charged on a modelled cluster (under a cluster the
  // driver does not count the compute thread's time spent on it either).
  cfg.platform.reset();
  cfg.virtual_time.reset();
  comm_ = mpi_world(cfg);
  DPLAB_CHECK(comm_->size() == world_size,
              "StepAgreement: the MPI world has {} ranks, the algorithm runs on {}", comm_->size(),
              world_size);
}

StepAgreement::~StepAgreement() {
  // Requests still in flight (a run that stopped together): let them finish so no buffer is
  // freed under MPI; every rank posted the same ticks, so they complete. Not after a
  // communication of this rank timed out, nor after a wait here failed: a stopped or dead rank
  // never completes them, and each wait would take comm.timeout_s again before the abort
  // (issue #38: 25 s instead of 12.5 s). Their buffers are then left to MPI (never freed): the
  // process is on its way to MPI_Abort.
  try {
    while (!pending_.empty() && !communication_timed_out()) {
      pending_.front()->request.wait();
      pending_.pop_front();
    }
  } catch (...) {
  }
  for (auto& p : pending_) (void)p.release();
}

std::vector<std::string> StepAgreement::gather_reports(const std::string& mine) {
  Tensor send = Tensor::zeros({kReportBytes}, DType::u8);
  const std::string text = capped(mine);
  std::memcpy(send.data<uint8_t>(), text.data(), text.size());
  Tensor recv = Tensor::zeros({kReportBytes * world_size_}, DType::u8);
  comm_->allgather(send, recv);
  const auto* p = reinterpret_cast<const char*>(recv.data<uint8_t>());
  std::vector<std::string> r;
  for (int i = 0; i < world_size_; ++i) {
    const char* s = p + int64_t(i) * kReportBytes;
    r.emplace_back(s, strnlen(s, size_t(kReportBytes)));
  }
  return r;
}

Agreement StepAgreement::complete_oldest() {
  std::unique_ptr<Pending> p = std::move(pending_.front());
  pending_.pop_front();
  p->request.wait();
  const std::vector<float> b = p->bits.to_vector();
  Agreement a;
  a.tick = p->tick;
  a.nonfinite = b[0] != 0.f;
  a.preempt = b[1] != 0.f;
  if (a.any()) a.reports = gather_reports(p->report);  // every rank is here: collective
  return a;
}

std::vector<Agreement> StepAgreement::tick(int64_t tick, bool nonfinite, bool preempt,
                                           const std::string& report) {
  std::vector<Agreement> due;
  if (!comm_) {
    if (nonfinite || preempt) {
      Agreement a;
      a.tick = tick;
      a.nonfinite = nonfinite;
      a.preempt = preempt;
      a.reports = {capped(report)};
      due.push_back(std::move(a));
    }
    return due;
  }
  auto p = std::make_unique<Pending>();
  p->tick = tick;
  p->bits = Tensor::from_vector({nonfinite ? 1.f : 0.f, preempt ? 1.f : 0.f}, {2});
  p->report = nonfinite || preempt ? report : std::string();
  p->request = comm_->iallreduce(p->bits, ReduceOp::max);
  pending_.push_back(std::move(p));
  while (!pending_.empty() && pending_.front()->tick <= tick - kLag) {
    Agreement a = complete_oldest();
    if (a.any()) due.push_back(std::move(a));
  }
  return due;
}

std::vector<Agreement> StepAgreement::flush() {
  std::vector<Agreement> due;
  while (!pending_.empty()) {
    Agreement a = complete_oldest();
    if (a.any()) due.push_back(std::move(a));
  }
  return due;
}

Agreement StepAgreement::agree(bool nonfinite, bool preempt,
                               const std::function<std::string()>& report) {
  DPLAB_CHECK(pending_.empty(), "StepAgreement::agree: {} ticks not flushed", pending_.size());
  Agreement a;
  if (!comm_) {
    a.nonfinite = nonfinite;
    a.preempt = preempt;
    if (a.any()) a.reports = {capped(report())};
    return a;
  }
  Tensor bits = Tensor::from_vector({nonfinite ? 1.f : 0.f, preempt ? 1.f : 0.f}, {2});
  comm_->allreduce(bits, ReduceOp::max);
  const std::vector<float> b = bits.to_vector();
  a.nonfinite = b[0] != 0.f;
  a.preempt = b[1] != 0.f;
  if (a.any()) a.reports = gather_reports(nonfinite || preempt ? report() : std::string());
  return a;
}

double StepAgreement::max_over_ranks(double x) {
  DPLAB_CHECK(x >= 0, "StepAgreement::max_over_ranks: {} < 0", x);
  if (!comm_) return x;
  Tensor bits = Tensor::empty({1}, DType::i64);
  std::memcpy(bits.data<int64_t>(), &x, sizeof x);
  comm_->allreduce(bits, ReduceOp::max);
  double out = 0;
  std::memcpy(&out, bits.data<int64_t>(), sizeof out);
  return out;
}

void StepAgreement::barrier() {
  if (comm_) comm_->barrier();
}

}  // namespace dplab
