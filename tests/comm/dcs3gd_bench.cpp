// Step-time benchmark for studies/dcs3gd: the paper's cost model (Sec. III-D)
//   eq. 13  t_SSGD     = t_C + t_ARed            (synchronous: compute, then allreduce)
//   eq. 14  t_DC-S3GD  = max(t_C, t_ARed)        (the allreduce overlaps the whole pass)
// measured on the same model, batch, ranks and (emulated) link, in four phases:
//   compute    forward + backward + local momentum step, no communication      → t_C
//   comm       blocking allreduce of the gradient-sized f32 buffer             → t_ARed
//   allreduce  AllReduce-SGD (GradSync buckets overlapped with backward)       → step time
//   dcs3gd     DC-S3GD                                                         → step time
// The phases run interleaved, `rounds` times `steps` iterations each after a barrier (load on a
// shared machine drifts), after `warmup` untimed iterations each; the median round per phase is
// reduced to the mean and max over ranks. Arguments are KEY=VALUE: bench keys model, batch,
// steps, rounds, warmup, plus any dplab option (ranks_per_node, link.inter, allreduce.*,
// dcs3gd.*). Output: a table on rank 0 and one JSON line (prefix "json: ").
//
//   mpiexec -n 4 dcs3gd_bench ranks_per_node=2 link.inter=1ms,20MB/s steps=40
#include <algorithm>
#include <chrono>
#include <cstdio>
#include <functional>
#include <string>

#include "dplab/comm/algorithms/allreduce.h"
#include "dplab/comm/algorithms/dcs3gd.h"
#include "dplab/comm/mpi_env.h"
#include "dplab/core/autograd.h"
#include "dplab/core/ops/loss.h"
#include "dplab/core/philox.h"
#include "dplab/models/registry.h"
#include "dplab/optim/sgd.h"

namespace dplab {
namespace {

using BenchClock = std::chrono::steady_clock;

double now_s() {
  return std::chrono::duration<double>(BenchClock::now().time_since_epoch()).count();
}

struct Setup {
  std::shared_ptr<Module> model;
  std::unique_ptr<ParamArena> arena;
  std::unique_ptr<SGD> sgd;
  Tensor x, y;
};

Setup make_setup(const std::string& model, int64_t batch, int rank) {
  Setup s;
  s.model = make_model(model, 1);
  s.model->train();
  s.arena = std::make_unique<ParamArena>(s.model->named_parameters());
  SGDOptions o;
  o.lr = 0.01;
  o.momentum = 0.9;
  s.sgd = std::make_unique<SGD>(*s.arena, o);
  const ModelInfo info = model_info(model);
  Shape shape{batch};
  for (int64_t d : info.input_shape) shape.push_back(d);
  std::vector<float> xv(
      size_t(batch * info.input_shape[0] * info.input_shape[1] * info.input_shape[2]));
  uint64_t h = 0x2545F4914F6CDD1Dull + uint64_t(rank);
  for (auto& v : xv) {
    h ^= h << 13;
    h ^= h >> 7;
    h ^= h << 17;
    v = float(h % 1000) / 1000.f;
  }
  std::vector<int64_t> yv(static_cast<size_t>(batch), 0);
  for (int64_t i = 0; i < batch; ++i) yv[size_t(i)] = (i * 7 + rank) % info.num_classes;
  s.x = Tensor::from_vector(xv, shape);
  s.y = Tensor::from_vector_i64(yv, {batch});
  return s;
}

void fwd_bwd(Setup& s) {
  backward(cross_entropy(s.model->forward(s.x), s.y));
}

struct PhaseResult {
  double step_s = 0, in_flight_s = 0, exposed_s = 0, compute_s = 0;
};

// Per-rank means → {mean over ranks, max over ranks} for each field.
std::pair<PhaseResult, PhaseResult> reduce(Communicator& world, const PhaseResult& r) {
  Tensor sum = Tensor::from_vector(
      {float(r.step_s), float(r.in_flight_s), float(r.exposed_s), float(r.compute_s)}, {4});
  Tensor mx = sum.clone();
  world.allreduce(sum, ReduceOp::average);
  world.allreduce(mx, ReduceOp::max);
  auto a = sum.to_vector(), b = mx.to_vector();
  return {{a[0], a[1], a[2], a[3]}, {b[0], b[1], b[2], b[3]}};
}

int bench_main(int argc, char** argv) {
  Options opt;
  for (int i = 1; i < argc; ++i) {
    const std::string kv = argv[i];
    const auto eq = kv.find('=');
    DPLAB_CHECK(eq != std::string::npos, "argument '{}': expected KEY=VALUE", kv);
    opt.set(kv.substr(0, eq), kv.substr(eq + 1));
  }
  const std::string model = opt.get_string("model", "mnist_cnn");
  const int64_t batch = opt.get_int("batch", 64);
  const int steps = int(opt.get_int("steps", 30));
  const int warmup = int(opt.get_int("warmup", 5));
  auto topo = std::make_shared<Topology>(Topology::from_options(opt));
  Communicator& world = topo->world();
  const int rank = world.rank();

  // Load on a shared machine drifts: the four phases are interleaved in `rounds` rounds of
  // `steps` iterations each, and each phase reports its median round.
  const int rounds = int(opt.get_int("rounds", 5));
  Setup sc = make_setup(model, batch, rank), sa = make_setup(model, batch, rank),
        sd = make_setup(model, batch, rank);
  const int64_t numel = sc.arena->numel();
  Tensor buf = Tensor::zeros({numel});
  AllReduceStrategy ars(topo, opt);
  Dcs3gdStrategy dcs(topo, opt);
  auto context = [&](Setup& s) {
    TrainContext ctx;
    ctx.model = s.model.get();
    ctx.arena = s.arena.get();
    ctx.optimizer = s.sgd.get();
    ctx.options = &opt;
    return ctx;
  };
  TrainContext ca = context(sa), cd = context(sd);
  ars.setup(ca);
  dcs.setup(cd);
  int64_t it = 0;
  // One phase: n iterations of `body`, returning the per-step means.
  auto phase = [&](Strategy* st, const std::function<double()>& body, int n) {
    world.barrier();
    if (st) (void)st->take_stats();
    double comp = 0;
    const double t0 = now_s();
    for (int i = 0; i < n; ++i) comp += body();
    PhaseResult r;
    r.step_s = (now_s() - t0) / n;
    r.compute_s = comp / n;
    if (st) {
      const CommStats cs = st->take_stats();
      r.in_flight_s = cs.in_flight_s / n;
      r.exposed_s = cs.exposed_wait_s / n;
    }
    return r;
  };
  auto compute_body = [&] {
    sc.sgd->zero_grad();
    const double c0 = now_s();
    fwd_bwd(sc);
    const double c = now_s() - c0;
    sc.sgd->step();
    return c;
  };
  auto comm_body = [&] {
    world.allreduce(buf, ReduceOp::sum);
    return 0.0;
  };
  auto allreduce_body = [&] {
    StepInfo info;
    info.global_step = it++;
    sa.sgd->zero_grad();
    ars.before_forward(info);
    const double c0 = now_s();
    fwd_bwd(sa);
    const double c = now_s() - c0;
    ars.after_backward(info);
    sa.sgd->step();
    ars.after_step(info);
    return c;
  };
  auto dcs3gd_body = [&] {
    StepInfo info;
    info.global_step = it++;  // no epoch length: constant lr (timing only)
    sd.sgd->zero_grad();
    dcs.before_forward(info);
    const double c0 = now_s();
    fwd_bwd(sd);
    const double c = now_s() - c0;
    dcs.after_backward(info);
    dcs.after_step(info);
    return c;
  };
  // Warm-up (untimed), then the rounds.
  phase(nullptr, compute_body, warmup);
  phase(nullptr, comm_body, warmup);
  phase(&ars, allreduce_body, warmup);
  phase(&dcs, dcs3gd_body, warmup);
  std::vector<PhaseResult> pc, pm, pa, pd;
  for (int r = 0; r < rounds; ++r) {
    pc.push_back(phase(nullptr, compute_body, steps));
    pm.push_back(phase(nullptr, comm_body, steps));
    pa.push_back(phase(&ars, allreduce_body, steps));
    pd.push_back(phase(&dcs, dcs3gd_body, steps));
  }
  dcs.drain();
  auto median = [](std::vector<PhaseResult> v) {
    std::sort(v.begin(), v.end(),
              [](const PhaseResult& a, const PhaseResult& b) { return a.step_s < b.step_s; });
    return v[v.size() / 2];
  };
  PhaseResult compute = median(pc), comm = median(pm), ar = median(pa), dc = median(pd);
  comm.in_flight_s = comm.exposed_s = comm.step_s;
  const auto rc = reduce(world, compute), rm = reduce(world, comm), ra = reduce(world, ar),
             rd = reduce(world, dc);
  const auto unused = opt.unused_keys();
  DPLAB_CHECK(unused.empty(), "unknown option {}", unused.empty() ? "" : unused.front());
  if (rank == 0) {
    const double tc = rc.first.step_s, tr = rm.first.step_s;
    const double eq13 = tc + tr, eq14 = std::max(tc, tr);
    std::printf(
        "model %s, batch %lld/rank, %d ranks, %d nodes, %lld parameters (%.1f KiB), "
        "link.inter %s, %d rounds x %d steps (median round)\n",
        model.c_str(), (long long)batch, world.size(), topo->num_nodes(), (long long)numel,
        double(numel) * 4 / 1024, opt.get_string("link.inter", "none").c_str(), rounds, steps);
    std::printf("%-10s %10s %10s %10s %10s %10s  (ms per step, mean over ranks; max)\n", "phase",
                "step", "fwd+bwd", "in_flight", "exposed", "step_max");
    auto row = [](const char* n, const std::pair<PhaseResult, PhaseResult>& r) {
      std::printf("%-10s %10.2f %10.2f %10.2f %10.2f %10.2f\n", n, r.first.step_s * 1e3,
                  r.first.compute_s * 1e3, r.first.in_flight_s * 1e3, r.first.exposed_s * 1e3,
                  r.second.step_s * 1e3);
    };
    row("compute", rc);
    row("comm", rm);
    row("allreduce", ra);
    row("dcs3gd", rd);
    std::printf("eq13 t_C + t_ARed = %.2f ms, eq14 max(t_C, t_ARed) = %.2f ms\n", eq13 * 1e3,
                eq14 * 1e3);
    std::printf(
        "json: {\"link_inter\": \"%s\", \"ranks\": %d, \"nodes\": %d, \"batch\": %lld, "
        "\"params\": %lld, \"steps\": %d, \"t_C_ms\": %.3f, \"t_ARed_ms\": %.3f, "
        "\"eq13_ms\": %.3f, \"eq14_ms\": %.3f, \"allreduce_step_ms\": %.3f, "
        "\"allreduce_in_flight_ms\": %.3f, \"allreduce_exposed_ms\": %.3f, "
        "\"dcs3gd_step_ms\": %.3f, \"dcs3gd_in_flight_ms\": %.3f, \"dcs3gd_exposed_ms\": %.3f}\n",
        opt.get_string("link.inter", "none").c_str(), world.size(), topo->num_nodes(),
        (long long)batch, (long long)numel, steps, tc * 1e3, tr * 1e3, eq13 * 1e3, eq14 * 1e3,
        ra.first.step_s * 1e3, ra.first.in_flight_s * 1e3, ra.first.exposed_s * 1e3,
        rd.first.step_s * 1e3, rd.first.in_flight_s * 1e3, rd.first.exposed_s * 1e3);
  }
  return 0;
}

}  // namespace
}  // namespace dplab

int main(int argc, char** argv) {
  return dplab::run_mpi_main([&] { return dplab::bench_main(argc, argv); });
}
