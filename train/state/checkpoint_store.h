// The on-disk layout of checkpoints, without knowing what they hold:
//
//   OUT/checkpoints/step_00000120/          one committed checkpoint (global step 120)
//       rank_0.safetensors ... rank_<N-1>.safetensors   every rank's own state
//       manifest.json                       written last: the commit record
//   OUT/checkpoints/.step_00000120.tmp/     a checkpoint being written (never read)
//
// A checkpoint is written into its .tmp directory, every file and the directory are fsynced,
// then the manifest, and one rename makes it visible under its final name (the parent is
// fsynced after). So a directory step_<N> either has a manifest that lists every file with its
// size and CRC-32, or it is not a checkpoint. Files are checked against the manifest on load.
#pragma once
#include <cstdint>
#include <filesystem>
#include <map>
#include <string>
#include <vector>

namespace dplab {

constexpr int kCheckpointFormatVersion = 2;

struct ManifestFile {
  int rank = 0;
  std::string name;    // "rank_0.safetensors", relative to the checkpoint directory
  uint64_t bytes = 0;  // file size
  uint32_t crc32 = 0;  // zlib's CRC-32 of the whole file
};

// From global step `from_step` on, the run had `world_size` ranks (a --reshard resume starts a
// new span at the checkpoint's step).
struct WorldSpan {
  int64_t from_step = 0;
  int world_size = 1;
};

struct Manifest {
  std::filesystem::path dir;  // the checkpoint directory it was read from
  int version = kCheckpointFormatVersion;
  int64_t step = 0;  // global step (iterations done)
  int64_t epoch = 0, step_in_epoch = 0;
  int world_size = 1;
  std::string algo;
  std::string ranks_per_node;
  std::string init_from;  // the run started from these weights (--init-from), or ""
  std::map<std::string, std::string> config;  // trajectory_config of the run
  std::vector<ManifestFile> files;            // one per rank, in rank order
  // The global sample counter: samples of `epoch` the run has consumed, i.e. the first
  // samples_in_epoch entries of the epoch's permutation (data/sampler.h: every rank takes a
  // strided share of each global batch). -1: not recorded (checkpoints before --reshard).
  int64_t samples_in_epoch = -1;
  // Every world size the run had, oldest first (absent in older checkpoints: one span of
  // world_size from step 0).
  std::vector<WorldSpan> world_sizes;
};

// "step_00000120" (global steps zero-padded so names sort by step).
std::string checkpoint_dir_name(int64_t step);
// OUT/checkpoints.
std::filesystem::path checkpoints_root(const std::filesystem::path& out_dir);
// The step of a "step_<digits>" name, or -1.
int64_t step_of_dir_name(const std::string& name);
// Checkpoint directories (committed or not) under a run's checkpoints/, newest step first.
std::vector<std::filesystem::path> list_checkpoint_dirs(const std::filesystem::path& out_dir);

// fsync of a file or directory; throws naming it.
void fsync_path(const std::filesystem::path& p);
// CRC-32 and size of a file; throws naming it.
uint32_t file_crc32(const std::filesystem::path& p, uint64_t* bytes = nullptr);

// Writes DIR/manifest.json (fsynced) from `m`.
void write_manifest(const std::filesystem::path& dir, const Manifest& m);
// Reads DIR/manifest.json; a missing one is the error "not committed". Every field is checked
// (type and range); errors name the file and the key.
Manifest read_manifest(const std::filesystem::path& dir);
// Checks that every file the manifest lists exists with its size, and the CRC-32 of the files
// of `crc_ranks` (every rank: all). Throws naming the first file that does not match.
void verify_checkpoint_files(const Manifest& m, const std::vector<int>& crc_ranks);

// Removes committed checkpoints beyond the `keep` newest (keep 0: none removed), never `except`.
// Returns the removed directories.
std::vector<std::filesystem::path> prune_checkpoints(const std::filesystem::path& out_dir,
                                                     int64_t keep,
                                                     const std::filesystem::path& except);
// Removes leftovers of interrupted writes (".step_*.tmp", ".step_*.old") under checkpoints/.
void remove_stale_temporaries(const std::filesystem::path& out_dir);

}  // namespace dplab
