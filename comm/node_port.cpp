#include "dplab/comm/node_port.h"

#include <fmt/format.h>

#include <algorithm>
#include <bit>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <limits>
#include <new>

#include "dplab/comm/cluster/nic_schedule.h"
#include "dplab/comm/mpi_env.h"
#include "dplab/comm/stall_report.h"
#include "dplab/core/error.h"

namespace dplab {

namespace {

// Slots a rank publishes its messages in. Messages nothing can share the interface with any
// more are retired (retire_some) and keep their final end in their slot until it is reused, so
// a receiver may complete a message up to kSlots messages of its sender later; beyond that it
// fails loudly.
constexpr uint64_t kSlots = 1024;
// Retire when this many messages are published and not retired (keeps the schedules short).
constexpr uint64_t kRetireAt = 32;

uint64_t bits(double d) {
  return std::bit_cast<uint64_t>(d);
}
double num(uint64_t b) {
  return std::bit_cast<double>(b);
}

}  // namespace

// One published message. A seqlock (`gen` odd while the owner rewrites the slot) lets readers
// in other processes detect a slot reused under them.
struct Slot {
  std::atomic<uint64_t> gen{0};
  std::atomic<uint64_t> seq{0};
  std::atomic<uint64_t> post{0};  // double bits
  std::atomic<uint64_t> work{0};  // double bits
  std::atomic<uint64_t> end{0};   // double bits: the final end, once retired (NaN before)
};

// A rank's published state, written only by that rank.
struct NodePort::Segment {
  std::atomic<uint64_t> floor{0};     // double bits: no later message is posted before it
  std::atomic<uint64_t> count{0};     // messages published so far (the next seq)
  std::atomic<uint64_t> base{0};      // first message not retired
  std::atomic<uint64_t> base_end{0};  // double bits: end of the last retired message
  Slot slots[kSlots];
};

static_assert(std::atomic<uint64_t>::is_always_lock_free,
              "shared-memory atomics across processes need lock-free 64-bit atomics");

std::shared_ptr<NodePort> NodePort::create(const cluster::Platform& p, const cluster::Shape& s,
                                           const WaitOptions& wait) {
  const int on_interface = (s.ranks_per_node + p.nics - 1) / p.nics;
  if (on_interface < 2 || !std::isfinite(p.nic_rate(1))) return nullptr;
  int rank = 0, size = 0;
  DPLAB_MPI(MPI_Comm_rank, MPI_COMM_WORLD, &rank);
  DPLAB_MPI(MPI_Comm_size, MPI_COMM_WORLD, &size);
  MPI_Comm shm = MPI_COMM_NULL;
  DPLAB_MPI(MPI_Comm_split_type, MPI_COMM_WORLD, MPI_COMM_TYPE_SHARED, rank, MPI_INFO_NULL, &shm);
  int shm_size = 0;
  DPLAB_MPI(MPI_Comm_size, shm, &shm_size);
  // Every rank gets the same answer: on several hosts no host holds the whole world.
  if (shm_size != size) {
    MPI_Comm_free(&shm);
    return nullptr;
  }
  std::shared_ptr<NodePort> np(new NodePort());
  np->shape_ = s;
  np->nics_ = p.nics;
  np->rank_ = rank;
  np->wait_ = wait;
  // Long enough for a peer descheduled on a loaded host to come back; short next to the
  // communication timeout (it breaks waits that would otherwise never end, see the header).
  np->deadline_s_ = wait.timeout_s > 0 ? std::clamp(wait.timeout_s / 8, 1.0, 5.0) : 5.0;
  np->shm_comm_ = shm;
  void* mine = nullptr;
  DPLAB_MPI(MPI_Win_allocate_shared, MPI_Aint(sizeof(Segment)), 1, MPI_INFO_NULL, shm, &mine,
            &np->win_);
  new (mine) Segment();
  DPLAB_MPI(MPI_Win_lock_all, MPI_MODE_NOCHECK, np->win_);
  DPLAB_MPI(MPI_Win_sync, np->win_);
  DPLAB_MPI(MPI_Barrier, shm);  // every segment initialised before anyone reads one
  DPLAB_MPI(MPI_Win_sync, np->win_);
  np->seg_.resize(size_t(size));
  for (int q = 0; q < size; ++q) {
    MPI_Aint bytes = 0;
    int disp = 0;
    void* ptr = nullptr;
    // shm ranks are world ranks (key = world rank, and shm is the whole world).
    DPLAB_MPI(MPI_Win_shared_query, np->win_, q, &bytes, &disp, &ptr);
    np->seg_[size_t(q)] = static_cast<Segment*>(ptr);
  }
  return np;
}

NodePort::~NodePort() {
  release();
}

void NodePort::release() {
  std::lock_guard<std::mutex> lock(mu_);
  if (win_ == MPI_WIN_NULL) return;
  int finalized = 0;
  MPI_Finalized(&finalized);
  if (finalized) return;
  // After a communication timeout a peer may never reach the collective free below: the window
  // is left to the abort that follows (comm/stall_report.h, kEndAfterTimeoutS).
  if (communication_timed_out()) return;
  // This rank posts nothing more: nobody waits for its floor.
  seg_[size_t(rank_)]->floor.store(bits(std::numeric_limits<double>::infinity()),
                                   std::memory_order_release);
  // Collective over the host's ranks: also keeps every segment mapped until all are done.
  MPI_Win_unlock_all(win_);
  MPI_Win_free(&win_);
  MPI_Comm_free(&shm_comm_);
  seg_.clear();
}

void NodePort::check_live(const char* what) const {
  DPLAB_CHECK(!seg_.empty(),
              "virtual time: {} on a node interface whose world communicator was "
              "destroyed",
              what);
}

void NodePort::raise_floor(double t) {
  check_live("raise_floor");
  auto& f = seg_[size_t(rank_)]->floor;
  // Several threads of this rank may raise it: never lower it.
  uint64_t cur = f.load(std::memory_order_relaxed);
  while (t > num(cur) && !f.compare_exchange_weak(cur, bits(t), std::memory_order_release,
                                                  std::memory_order_relaxed)) {
  }
}

uint64_t NodePort::add(double post, double work) {
  check_live("add");
  std::lock_guard<std::mutex> lock(mu_);  // one writer of this rank's segment at a time
  Segment& me = *seg_[size_t(rank_)];
  raise_floor(post);  // messages published after this have post >= the floor (see evaluate)
  uint64_t seq = me.count.load(std::memory_order_relaxed);
  if (seq - me.base.load(std::memory_order_relaxed) >= kRetireAt) retire_some();
  DPLAB_CHECK(seq - me.base.load(std::memory_order_relaxed) < kSlots,
              "virtual time: rank {} has {} off-node messages in flight on its node's interface "
              "(at most {}): their receivers have not completed them",
              rank_, seq - me.base.load(), kSlots);
  Slot& sl = me.slots[seq % kSlots];
  const uint64_t g = sl.gen.load(std::memory_order_relaxed);
  sl.gen.store(g + 1, std::memory_order_relaxed);
  std::atomic_thread_fence(std::memory_order_release);
  sl.seq.store(seq, std::memory_order_relaxed);
  sl.post.store(bits(post), std::memory_order_relaxed);
  sl.work.store(bits(work), std::memory_order_relaxed);
  sl.end.store(bits(std::numeric_limits<double>::quiet_NaN()), std::memory_order_relaxed);
  sl.gen.store(g + 2, std::memory_order_release);
  me.count.store(seq + 1, std::memory_order_release);
  return seq;
}

namespace {

// What one rank has published, read consistently.
struct Snapshot {
  double floor = 0;     // read before the messages: anything not read is posted at >= floor
  double base_end = 0;  // end of its last retired message
  uint64_t base = 0;
  std::vector<std::pair<uint64_t, cluster::NicMessage>> msgs;  // (seq, message)
};

Snapshot read_segment(const NodePort::Segment& sg, int rank) {
  for (;;) {
    Snapshot s;
    s.floor = num(sg.floor.load(std::memory_order_acquire));
    const uint64_t count = sg.count.load(std::memory_order_acquire);
    s.base = sg.base.load(std::memory_order_acquire);
    s.base_end = num(sg.base_end.load(std::memory_order_acquire));
    bool torn = false;
    for (uint64_t q = s.base; q < count && !torn; ++q) {
      const Slot& sl = sg.slots[q % kSlots];
      const uint64_t g1 = sl.gen.load(std::memory_order_acquire);
      cluster::NicMessage m;
      m.rank = rank;
      m.seq = sl.seq.load(std::memory_order_relaxed);
      m.post = num(sl.post.load(std::memory_order_relaxed));
      m.work = num(sl.work.load(std::memory_order_relaxed));
      std::atomic_thread_fence(std::memory_order_acquire);
      const uint64_t g2 = sl.gen.load(std::memory_order_relaxed);
      torn = (g1 & 1) || g1 != g2 || m.seq != q;
      if (!torn) s.msgs.push_back({q, m});
    }
    // Retired (and maybe reused) while read: read again.
    if (!torn && sg.base.load(std::memory_order_acquire) == s.base) {
      // A rank's messages queue behind its last retired one.
      if (!s.msgs.empty())
        s.msgs.front().second.post = std::max(s.msgs.front().second.post, s.base_end);
      return s;
    }
  }
}

}  // namespace

NodePort::Eval NodePort::evaluate(int sender, uint64_t seq) {
  check_live("evaluate");
  const int node = shape_.node_of(sender);
  const int iface = shape_.local_rank(sender) % nics_;
  std::vector<cluster::NicMessage> all;
  std::vector<int> owner;  // world rank of each message in `all`
  std::vector<Snapshot> snaps;
  std::vector<int> ranks;
  for (int l = iface; l < shape_.ranks_per_node; l += nics_) {
    const int r = node * shape_.ranks_per_node + l;
    snaps.push_back(read_segment(*seg_[size_t(r)], r));
    ranks.push_back(r);
  }
  Eval e;
  long target = -1;
  for (size_t i = 0; i < snaps.size(); ++i)
    for (const auto& [q, m] : snaps[i].msgs) {
      if (ranks[i] == sender && q == seq) target = long(all.size());
      all.push_back(m);
      owner.push_back(ranks[i]);
    }
  if (target < 0) {
    const Snapshot* s = nullptr;
    for (size_t i = 0; i < snaps.size(); ++i)
      if (ranks[i] == sender) s = &snaps[i];
    if (!s || seq >= s->base) return e;  // not published yet (not posted in real time)
    // Retired: its final end stays in its slot until the slot is reused.
    const Slot& sl = seg_[size_t(sender)]->slots[seq % kSlots];
    const uint64_t g1 = sl.gen.load(std::memory_order_acquire);
    const uint64_t q = sl.seq.load(std::memory_order_relaxed);
    const double end = num(sl.end.load(std::memory_order_relaxed));
    std::atomic_thread_fence(std::memory_order_acquire);
    const uint64_t g2 = sl.gen.load(std::memory_order_relaxed);
    DPLAB_CHECK(!(g1 & 1) && g1 == g2 && q == seq && !std::isnan(end),
                "virtual time: message {} of rank {} left its node's interface records before "
                "this rank completed it (more than {} messages of that rank behind)",
                seq, sender, kSlots);
    e.found = e.final = true;
    e.end = end;
    return e;
  }
  e.found = true;
  const std::vector<double> end = cluster::nic_schedule(all);
  e.end = end[size_t(target)];
  e.final = true;
  for (size_t i = 0; i < snaps.size() && e.final; ++i) {
    if (ranks[i] == sender) continue;  // its later messages queue behind this one
    double active = std::max(snaps[i].floor, snaps[i].base_end);
    for (size_t j = 0; j < all.size(); ++j)
      if (owner[j] == ranks[i]) active = std::max(active, end[j]);
    e.final = active >= e.end;
  }
  return e;
}

double NodePort::tentative_end(int sender, uint64_t seq) {
  const Eval e = evaluate(sender, seq);
  return e.found ? e.end : 0.0;
}

double NodePort::end(int sender, uint64_t seq, const std::string& what,
                     const std::function<void(double)>& idle) {
  const auto start = std::chrono::steady_clock::now();
  Eval e;
  bool late = false;
  polite_wait(
      [&] {
        e = evaluate(sender, seq);
        if (e.final) return true;
        if (idle && e.found) idle(e.end);
        const double waited =
            std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
        late = e.found && waited > deadline_s_;
        return late;
      },
      wait_, [&] { return what + " (its share of the node's network interface)"; });
  if (late) {
    ++fallbacks_;
    if (!warned_.exchange(true))
      fmt::print(stderr,
                 "warning: rank {}: virtual time: {}: the share of the node's network interface "
                 "was taken as it stood after {:.0f} s of real time (a rank of that node did "
                 "not advance its virtual time meanwhile); this time may depend on host load "
                 "(comm/node_port.h)\n",
                 rank_, what, deadline_s_);
  }
  return e.end;
}

void NodePort::retire_some() {
  // Retire this rank's messages that end by an *idle point* T of the interface: every rank's
  // floor is >= T (nothing more is posted before T) and no published message spans T (each
  // ends by T or is posted at or after it). Nothing after T then depends on what came before
  // (a rank's next message waits for its last one through base_end, which is <= T), so dropping
  // those messages changes no schedule; each keeps its final end in its slot for receivers.
  Segment& me = *seg_[size_t(rank_)];
  const int node = shape_.node_of(rank_);
  const int iface = shape_.local_rank(rank_) % nics_;
  std::vector<cluster::NicMessage> all;
  std::vector<uint64_t> mine;  // seq of this rank's messages, -1 for others'
  double floor_min = std::numeric_limits<double>::infinity();
  for (int l = iface; l < shape_.ranks_per_node; l += nics_) {
    const int r = node * shape_.ranks_per_node + l;
    const Snapshot sn = read_segment(*seg_[size_t(r)], r);
    floor_min = std::min(floor_min, sn.floor);
    for (const auto& [q, m] : sn.msgs) {
      all.push_back(m);
      mine.push_back(r == rank_ ? q : ~uint64_t(0));
    }
  }
  if (all.empty()) return;
  const std::vector<double> end = cluster::nic_schedule(all);
  double idle = -1;
  for (size_t c = 0; c < all.size(); ++c) {
    const double t = end[c];
    if (t > floor_min || t <= idle) continue;
    bool spans = false;
    for (size_t j = 0; j < all.size() && !spans; ++j) spans = all[j].post < t && end[j] > t;
    if (!spans) idle = t;
  }
  if (idle < 0) return;
  uint64_t base = me.base.load(std::memory_order_relaxed);
  const uint64_t count = me.count.load(std::memory_order_relaxed);
  while (base < count) {
    double e = -1;
    for (size_t j = 0; j < all.size(); ++j)
      if (mine[j] == base) e = end[j];
    if (e < 0 || e > idle) break;
    me.slots[base % kSlots].end.store(bits(e), std::memory_order_release);
    me.base_end.store(bits(e), std::memory_order_release);
    me.base.store(++base, std::memory_order_release);
  }
}

}  // namespace dplab
