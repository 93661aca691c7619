// Built-in platforms. Line rates are the vendors' nominal figures; `efficiency` is the part of
// the line rate a bulk transfer achieves, from the cited sources or from the frame arithmetic
// written beside it. Latencies are orders of magnitude (small-message times are not validated,
// docs/virtual_cluster.md says so).
#include "dplab/comm/cluster/presets.h"

#include <filesystem>

#include "dplab/comm/cluster/platform_toml.h"
#include "dplab/core/error.h"

namespace dplab::cluster {

namespace {

constexpr double GB = 1e9;        // bytes
constexpr double Gbit = 1e9 / 8;  // bytes
constexpr double us = 1e-6;       // seconds

// NVLink 4 on H100 SXM: 18 links x 25 GB/s = 450 GB/s per direction (line rate). NCCL's
// Simple protocol reaches about 370 GB/s of it (~20% protocol overhead; NCCL maintainer in
// NVIDIA/nccl-tests#212): efficiency 0.8.
Link nvlink4() {
  return {1 * us, 450 * GB, 0.8};
}

// TCP over Ethernet (1500-byte MTU): a frame carries 1448 payload bytes (1500 - 20 IP - 32 TCP
// with timestamps) in 1538 bytes on the wire (+ 14 header, 4 FCS, 8 preamble, 12 gap):
// 1448 / 1538 = 0.941.
constexpr double kTcpEfficiency = 1448.0 / 1538.0;

std::vector<Platform> build() {
  std::vector<Platform> v;
  {
    Platform p;
    p.name = "dgx-h100";
    p.description =
        "DGX H100 class: 8 H100 SXM per node on NVLink 4 / NVSwitch, 8 x 400 Gbit/s InfiniBand "
        "NDR (one per GPU), non-blocking fat tree";
    p.ranks_per_node = 8;
    p.intra = nvlink4();
    p.nic = {5 * us, 400 * Gbit, 1.0};
    p.nics = 8;
    p.sources = {
        "NVLink 4: 450 GB/s per direction per GPU, NCCL reaches ~370 GB/s (Simple protocol, "
        "~20% overhead): S. Jeaugey, https://github.com/NVIDIA/nccl-tests/issues/212",
        "8-GPU HGX H100 ring allreduce, max achieved 741.34 GB/s bidirectional busbw (370.67 "
        "per direction): ASTRA-sim validation, https://astra-sim.github.io/astra-sim-docs/"
        "validation/hardware/gpu-validation-hgx-h100.html",
        "ConnectX-7 NDR 400 Gbit/s, one per GPU: NVIDIA DGX H100 user guide",
        "46-48 GB/s per NDR NIC in a 2-node ring allreduce (NCCL maintainer): "
        "https://github.com/NVIDIA/nccl-tests/issues/290"};
    v.push_back(p);
  }
  {
    Platform p;
    p.name = "a3-mega";
    p.description =
        "Google Cloud A3 Mega class: 8 H100 SXM per node on NVLink 4, 8 x 200 Gbit/s "
        "GPUDirect-TCPXO NICs (the cross-node validation case of dgx-h100's node)";
    p.ranks_per_node = 8;
    p.intra = nvlink4();
    // 50 us: from the same measurement's small-message allreduce time (123 us on 2 x 8 ranks);
    // the NICs' efficiency is not measured separately (the 2-node tree is NVLink-bound).
    p.nic = {50 * us, 200 * Gbit, 1.0};
    p.nics = 8;
    p.sources = {
        "2 nodes x 8 H100, all_reduce_perf 8 GiB: busbw 338.82 GB/s, 8 B: 123-136 us: "
        "https://github.com/lessizzmore/create-a3mega-ztan-fork (file ztan-NCCL-test-result)"};
    v.push_back(p);
  }
  {
    Platform p;
    p.name = "gpu4-25gbe";
    p.description =
        "4 GPUs per node on PCIe 4.0 x16 (no NVLink), one 25 Gbit/s Ethernet NIC per node "
        "(TCP), non-blocking switch";
    p.ranks_per_node = 4;
    // PCIe 4.0 x16: 16 GT/s x 16 lanes x 128/130 = 31.5 GB/s per direction; TLP headers leave
    // about 80% for 256-byte payloads (256 / (256 + 24 + ~40 DLLP/flow control)).
    p.intra = {5 * us, 31.5 * GB, 0.8};
    p.nic = {25 * us, 25 * Gbit, kTcpEfficiency};
    p.nics = 1;
    p.sources = {"PCIe 4.0 x16 line rate 31.5 GB/s per direction (PCI-SIG)",
                 "25GBASE-R line rate; TCP payload share 1448/1538 of the wire (frame arithmetic "
                 "in comm/cluster/presets.cpp)"};
    v.push_back(p);
  }
  {
    Platform p;
    p.name = "cpu-10gbe";
    p.description =
        "CPU cluster: 2 ranks per node (one per socket) on shared memory, one 10 Gbit/s "
        "Ethernet NIC per node (MPI over TCP), non-blocking switch";
    p.ranks_per_node = 2;
    // Shared-memory MPI between sockets: a copy through a shared buffer, ~10 GB/s; latency
    // ~1 us (order of magnitude).
    p.intra = {1 * us, 10 * GB, 1.0};
    p.nic = {30 * us, 10 * Gbit, kTcpEfficiency};
    p.nics = 1;
    p.sources = {"10GBASE-R line rate; TCP payload share 1448/1538 of the wire",
                 "intra-node figures are assumed (order of magnitude), not validated"};
    v.push_back(p);
  }
  {
    Platform p;
    p.name = "local-shm";
    p.description =
        "this machine: all ranks on one node, MPICH 4.0 shared memory (ch4:shm), fitted to a "
        "2-rank MPI_Allreduce measured on a 2-core AMD EPYC VM";
    p.ranks_per_node = 1 << 20;  // every rank on the one node (capped at the world size)
    // A 2-rank ring allreduce costs 2 alpha + n / B. Measured (OMP_NUM_THREADS=1 mpiexec -n 2
    // dplab bench allreduce --sizes 4,1K,16K,256K,1M,4M,16M, MPI column, 2026-11-24, quiet):
    // 0.8 us at 4 B -> alpha = 0.4 us; 180.2 us at 1 MiB and 723.2 us at 4 MiB -> the slope
    // between them, 3 MiB / 543 us = 5.8 GB/s. The fit holds to 1% at 1-4 MiB; at 16-256 KiB
    // MPICH is ~30% slower than it (protocol switch), at 16 MiB (beyond the last-level cache)
    // 35% slower: docs/virtual_cluster.md, "Validation".
    p.intra = {0.4 * us, 5.8 * GB, 1.0};
    p.nic = p.intra;  // there is no second node; kept equal so that nothing is charged twice
    p.nics = 1;
    p.sources = {
        "MPI_Allreduce, 2 ranks, MPICH 4.0.2 ch4:shm, 2-core AMD EPYC VM, measured with "
        "`mpiexec -n 2 dplab bench allreduce` on 2026-11-24: 0.8 us at 4 B, 180.2 us at 1 MiB, "
        "723.2 us at 4 MiB"};
    v.push_back(p);
  }
  for (const auto& p : v) p.validate("preset " + p.name);
  return v;
}

}  // namespace

const std::vector<Platform>& presets() {
  static const std::vector<Platform> all = build();  // immutable after first use
  return all;
}

std::optional<Platform> find_preset(const std::string& name) {
  for (const auto& p : presets())
    if (p.name == name) return p;
  return std::nullopt;
}

Platform resolve_platform(const std::string& preset_or_file) {
  if (auto p = find_preset(preset_or_file)) return *p;
  std::error_code ec;
  if (std::filesystem::is_regular_file(preset_or_file, ec))
    return load_platform_file(preset_or_file);
  std::string names;
  for (const auto& p : presets()) names += (names.empty() ? "" : ", ") + p.name;
  DPLAB_FAIL("option cluster: '{}' is neither a preset ({}) nor a readable file", preset_or_file,
             names);
}

}  // namespace dplab::cluster
