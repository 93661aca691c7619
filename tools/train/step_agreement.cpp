#include "dplab/tools/train/step_agreement.h"

#include <fmt/format.h>

#include <algorithm>
#include <cstring>

#include "dplab/comm/communicator.h"
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

StepAgreement::StepAgreement(const Options& opt, int world_size) : world_size_(world_size) {
  DPLAB_CHECK(world_size >= 1, "StepAgreement: world size {} < 1", world_size);
  if (world_size == 1) return;
  CommConfig cfg = CommConfig::from_options(opt);
  cfg.link_intra.reset();  // control traffic: not subject to the emulated links
  cfg.link_inter.reset();
  comm_ = mpi_world(cfg);
  DPLAB_CHECK(comm_->size() == world_size,
              "StepAgreement: the MPI world has {} ranks, the algorithm runs on {}", comm_->size(),
              world_size);
}

StepAgreement::~StepAgreement() = default;

Agreement StepAgreement::agree(bool nonfinite, bool preempt,
                               const std::function<std::string()>& report) {
  Agreement a;
  if (!comm_) {
    a.nonfinite = nonfinite;
    a.preempt = preempt;
    if (a.any()) {
      std::string mine = report();
      if (mine.size() > size_t(kReportBytes - 1)) mine.resize(size_t(kReportBytes - 1));
      a.reports = {mine};  // the same length limit as across ranks
    }
    return a;
  }
  Tensor bits = Tensor::from_vector({nonfinite ? 1.f : 0.f, preempt ? 1.f : 0.f}, {2});
  comm_->allreduce(bits, ReduceOp::max);
  const std::vector<float> b = bits.to_vector();
  a.nonfinite = b[0] != 0.f;
  a.preempt = b[1] != 0.f;
  if (!a.any()) return a;
  // The failure path (once per run): every rank's text, fixed size, NUL-padded.
  const std::string mine = nonfinite || preempt ? report() : std::string();
  Tensor send = Tensor::zeros({kReportBytes}, DType::u8);
  std::memcpy(send.data<uint8_t>(), mine.data(),
              std::min<size_t>(mine.size(), size_t(kReportBytes - 1)));
  Tensor recv = Tensor::zeros({kReportBytes * world_size_}, DType::u8);
  comm_->allgather(send, recv);
  const auto* p = reinterpret_cast<const char*>(recv.data<uint8_t>());
  for (int r = 0; r < world_size_; ++r) {
    const char* s = p + int64_t(r) * kReportBytes;
    a.reports.emplace_back(s, strnlen(s, size_t(kReportBytes)));
  }
  return a;
}

void StepAgreement::barrier() {
  if (comm_) comm_->barrier();
}

}  // namespace dplab
