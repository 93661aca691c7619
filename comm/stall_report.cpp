#include "dplab/comm/stall_report.h"

#include <mpi.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cstring>
#include <thread>

#include "dplab/comm/mpi_env.h"
#include "dplab/core/error.h"

namespace dplab {

namespace {

constexpr int kQueryTag = 1;   // payload: one long long, the asker's query id
constexpr int kAnswerTag = 2;  // payload: the query id, then the text
constexpr size_t kMaxAnswer = 1024;

std::string join_ranks(const std::vector<int>& ranks) {
  std::string s;
  for (size_t i = 0; i < ranks.size(); ++i) s += (i ? ", " : "") + std::to_string(ranks[i]);
  return s;
}

std::atomic<bool> timed_out{false};

}  // namespace

double stall_grace_s(double timeout_s, double waited_s) {
  const double remaining = timeout_s + kEndAfterTimeoutS - kAfterStallReportS - waited_s;
  return std::max(0.5, std::min(std::clamp(timeout_s / 4, 1.0, 5.0), remaining));
}

void note_communication_timeout() {
  timed_out.store(true, std::memory_order_release);
}

bool communication_timed_out() {
  return timed_out.load(std::memory_order_acquire);
}

void answer_stall_queries(const std::function<std::string()>& what) {
  if (!mpi_active()) return;
  const MPI_Comm comm = MpiEnv::get().stall_comm();
  if (comm == MPI_COMM_NULL) return;
  for (;;) {
    int flag = 0;
    MPI_Message msg;
    MPI_Status st;
    if (MPI_Improbe(MPI_ANY_SOURCE, kQueryTag, comm, &flag, &msg, &st) != MPI_SUCCESS || !flag)
      return;
    long long id = 0;
    if (MPI_Mrecv(&id, 1, MPI_LONG_LONG, &msg, MPI_STATUS_IGNORE) != MPI_SUCCESS) return;
    std::string text = what();
    if (text.size() > kMaxAnswer) text.resize(kMaxAnswer);
    std::string buf(sizeof id + text.size(), '\0');
    std::memcpy(buf.data(), &id, sizeof id);
    std::memcpy(buf.data() + sizeof id, text.data(), text.size());
    // Small: sent eagerly, so this returns even when the asker has already aborted.
    MPI_Send(buf.data(), static_cast<int>(buf.size()), MPI_CHAR, st.MPI_SOURCE, kAnswerTag, comm);
  }
}

std::string ask_who_did_not_arrive(const std::string& waiting_on, const std::vector<int>& members,
                                   double grace_s) {
  if (!mpi_active()) return {};
  MpiEnv& env = MpiEnv::get();
  const MPI_Comm comm = env.stall_comm();
  if (comm == MPI_COMM_NULL) return {};
  const int me = env.world_rank();
  std::vector<int> ask = members;
  if (ask.empty())
    for (int r = 0; r < env.world_size(); ++r) ask.push_back(r);
  std::erase(ask, me);
  if (ask.empty()) return {};
  // A query id no earlier query of this rank had (a late answer to an old query is dropped).
  auto* id = new long long(std::chrono::steady_clock::now().time_since_epoch().count());
  std::vector<MPI_Request> sends(ask.size(), MPI_REQUEST_NULL);
  for (size_t i = 0; i < ask.size(); ++i)
    MPI_Isend(id, 1, MPI_LONG_LONG, ask[i], kQueryTag, comm, &sends[i]);
  std::vector<std::string> answer(env.world_size());
  std::vector<bool> answered(env.world_size(), false);
  size_t count = 0;
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::duration<double>(grace_s);
  while (count < ask.size() && std::chrono::steady_clock::now() < deadline) {
    // Others time out at about the same moment and ask us too.
    answer_stall_queries([&] { return waiting_on + " (timed out; asking the other ranks)"; });
    int flag = 0;
    MPI_Message msg;
    MPI_Status st;
    if (MPI_Improbe(MPI_ANY_SOURCE, kAnswerTag, comm, &flag, &msg, &st) != MPI_SUCCESS) break;
    if (!flag) {
      std::this_thread::sleep_for(std::chrono::milliseconds(1));
      continue;
    }
    int len = 0;
    MPI_Get_count(&st, MPI_CHAR, &len);
    std::string buf(static_cast<size_t>(std::max(len, 0)), '\0');
    MPI_Mrecv(buf.data(), len, MPI_CHAR, &msg, MPI_STATUS_IGNORE);
    long long got = 0;
    if (buf.size() < sizeof got) continue;
    std::memcpy(&got, buf.data(), sizeof got);
    const int src = st.MPI_SOURCE;
    if (got != *id || answered[src]) continue;
    answered[src] = true;
    answer[src] = buf.substr(sizeof got);
    ++count;
  }
  int all_sent = 0;
  MPI_Testall(static_cast<int>(sends.size()), sends.data(), &all_sent, MPI_STATUSES_IGNORE);
  if (all_sent)
    delete id;
  else  // a query to a stopped rank may still be in flight: MPI keeps the buffer (the rank aborts
        // right after this, so the few bytes are not worth waiting for)
    for (auto& s : sends)
      if (s != MPI_REQUEST_NULL) MPI_Request_free(&s);

  std::vector<int> silent, waiting;
  for (int r : ask) (answered[r] ? waiting : silent).push_back(r);
  std::string s;
  if (silent.empty())
    s = "every rank answered, waiting in communication (a mismatch of collectives?)";
  else
    s = fmt::format(
        "{} {} did not arrive: no answer within {:.1f} s, so not waiting in any communication "
        "(stopped, hung, or still computing)",
        silent.size() == 1 ? "rank" : "ranks", join_ranks(silent), grace_s);
  constexpr size_t kListed = 8;
  for (size_t i = 0; i < waiting.size() && i < kListed; ++i)
    s += fmt::format("{} rank {} waits in {}", i == 0 ? "; meanwhile" : ";", waiting[i],
                     answer[waiting[i]]);
  if (waiting.size() > kListed) s += fmt::format("; and {} more", waiting.size() - kListed);
  return s;
}

}  // namespace dplab
