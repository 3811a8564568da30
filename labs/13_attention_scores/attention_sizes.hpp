#pragma once
// What labs 13, 14 and 15 fix for their kernels: the head dimensions they
// accept, the command-line sizes, and the score scale 1/sqrt(d). Course code:
// the kernel files include it (by "../13_attention_scores/attention_sizes.hpp",
// so that it is found from a submission's folder too) and so do the programs.
#include <cmath>
#include <cstdint>
#include <string>
#include <vector>

#include <cudalabs/cli.hpp>
#include <cudalabs/error.hpp>

// The head dimensions the kernels of labs 13-15 accept. The original's limit:
// the tiled kernel keeps the whole d-slice of its Q and K tiles in shared memory.
inline constexpr int attention_max_dim = 128;

// The sizes of labs 13, 14 and 15: --seq (also --size) and --dim. --quick
// covers 1, sizes that are not multiples of any tile, and d = 3, 65, 128.
inline std::vector<cudalabs::SizeParam> attention_sizes(std::string seq_help, std::vector<std::int64_t> full_seq) {
  return {{.name = "seq", .help = std::move(seq_help), .full = std::move(full_seq), .quick = {1, 17, 129, 300}, .max = 16384},
          {.name = "dim", .help = "head dimension d", .full = {64}, .quick = {64, 3, 65, 128}, .max = attention_max_dim}};
}

inline float attention_scale(int dim) { return 1.0f / std::sqrt(static_cast<float>(dim)); }

// A head dimension outside 1..128 is refused here, before a launch could write
// past a shared-memory tile sized for 128.
inline void check_head_dim(int dim) {
  if (dim < 1 || dim > attention_max_dim)
    throw cudalabs::UsageError("head dimension d = " + std::to_string(dim) + " is outside 1.." +
                               std::to_string(attention_max_dim) +
                               ", the range the attention kernels stage in shared memory. Use --dim 1.." +
                               std::to_string(attention_max_dim) + ".");
}
