// Lab 21 — matrix transpose: coalescing, shared-memory tiles and bank conflicts.
//
// out = inᵀ for a rows×cols float matrix (both row-major). There is no
// arithmetic: the whole cost is moving 2·4·rows·cols bytes, so each variant is
// judged as % of the device-to-device copy bandwidth measured in the same run —
// a transpose can at best match a copy. The hard part is that either the reads
// or the writes walk down a column, unless a tile in shared memory turns the
// column walk into row walks on both sides.
//
// Variants (kernel files in this folder):
//   cublas_geam      baseline: cublasSgeam with op(A) = Aᵀ, alpha = 1, beta = 0
//   naive            one thread per element: coalesced reads, strided writes     transpose_naive.cuh
//   shared_tile      32×32 tile in shared memory: both sides coalesced, but the
//                    tile's columns sit in one bank (32-way conflicts)           transpose_tiled.cuh
//   padded_tile      the 32×33 tile: one float of padding, no conflicts          transpose_tiled.cuh
//   four_per_thread  padded tile, 32×8 threads, four elements per thread         transpose_four_per_thread.cuh
//   float4           64×32 padded tile, 16-byte global loads and stores          transpose_float4.cuh
//
// A transpose copies bits, so it is checked bit for bit (check_bits), and
// --inputs specials fills a quarter of the matrix with NaNs carrying payloads,
// -0.0, subnormals, ±Inf and ±FLT_MAX (labs/shared/value_kinds.hpp): a kernel
// that moves values through arithmetic (x * 1.0f, x + 0.0f), through half
// precision, or with a flush to zero fails, where random values let it pass.
//
// Run: make run LAB=21     (4096², 8191×8193, 8192²)
//      build/labs/21_transpose/21_transpose --rows 1000 --cols 7 --variant padded_tile
//      make tune LAB=21    (float4 with at most 1..8 blocks resident per SM, at 8192²)
#include <algorithm>
#include <limits>
#include <string>
#include <vector>

#include <cudalabs/blas.hpp>
#include <cudalabs/lab.hpp>
#include <cudalabs/math.hpp>
#include <cudalabs/random.hpp>
#include <cudalabs/reference.hpp>
#include <cudalabs/sweep.hpp>

#include "kernels.hpp"
#include "value_kinds.hpp"

namespace {

// ---- CPU reference -------------------------------------------------------
// out[c][r] = in[r][c], in 64×64 blocks: a 16 KB block of each matrix stays in
// the core's cache while it is copied, where a plain double loop would miss on
// every write of a large matrix. One thread per band of 64 rows.
std::vector<float> transpose_cpu(const std::vector<float>& in, std::int64_t rows, std::int64_t cols) {
  constexpr std::int64_t block = 64;
  std::vector<float> out(in.size());
  cudalabs::ref::parallel_for(
      static_cast<std::size_t>(cudalabs::ceil_div(rows, block)),
      [&](std::size_t first_band, std::size_t last_band) {
        for (auto band = static_cast<std::int64_t>(first_band); band < static_cast<std::int64_t>(last_band); ++band)
          for (std::int64_t c0 = 0; c0 < cols; c0 += block)
            for (std::int64_t r = band * block; r < std::min(rows, (band + 1) * block); ++r)
              for (std::int64_t c = c0; c < std::min(cols, c0 + block); ++c)
                out[static_cast<std::size_t>(c * rows + r)] = in[static_cast<std::size_t>(r * cols + c)];
      },
      1);
  return out;
}

// ---- the library baseline --------------------------------------------------
// cuBLAS is column-major. Our row-major rows×cols input, read column-major with
// leading dimension cols, is the cols×rows matrix A = inᵀ. The row-major
// cols×rows output, read column-major with leading dimension rows, is a
// rows×cols matrix C, and C(r, c) = out[c·rows + r] must equal in[r·cols + c] =
// A(c, r): C = Aᵀ. geam computes C = alpha·op(A) + beta·op(B) with C m×n:
// m = rows, n = cols, op(A) = Aᵀ (lda = cols), alpha = 1, beta = 0. With beta
// = 0 cuBLAS does not read B, but B must still describe a valid m×n matrix
// (ldb ≥ m): the input buffer, rows·cols floats long, serves.
void transpose_cublas(const cudalabs::Cublas& cublas, const float* in, float* out, std::int64_t rows,
                      std::int64_t cols, cudaStream_t stream) {
  const float one = 1.0f, zero = 0.0f;
  const int m = static_cast<int>(rows), n = static_cast<int>(cols);
  CUDALABS_CHECK_CUBLAS(cublasSetStream(cublas.get(), stream));
  CUDALABS_CHECK_CUBLAS(cublasSgeam(cublas.get(), CUBLAS_OP_T, CUBLAS_OP_N, m, n, &one, in, n, &zero, in, m, out, m));
}

// float4's launch parameter, for --sweep (lab 28 explains the sweep). Its tile
// and block are compile-time constants of the kernel file; what a launch can
// still change is how many of its blocks share an SM (through dynamic shared
// memory the kernel does not use): the occupancy a memory-bound kernel needs.
cudalabs::Tuning float4_tuning() {
  return {{.variant = "float4",
           .params = {{.name = "max_blocks_per_sm",
                       .help = "at most this many blocks resident per SM; 0: as many as fit",
                       .value = 0,
                       .min = 0,
                       .max = 32}},
           .default_sweep = "max_blocks_per_sm=0,1..8:+1"}};
}

}  // namespace

// ---- main ------------------------------------------------------------------
int main(int argc, char** argv) {
  const cudalabs::Tuning tuning = float4_tuning();
  const cudalabs::LabSpec spec{
      .name = "21_transpose",
      .title = "matrix transpose: coalescing, shared-memory tiles, bank conflicts",
      .about = "out = transpose(in) for a rows×cols float matrix, row-major. No arithmetic: every variant moves\n"
               "2·4·rows·cols bytes, reported as % of the device-to-device copy bandwidth measured in the same\n"
               "run, next to cuBLAS's geam transpose. Any shape: one row, one column, primes. --size N sets\n"
               "rows = cols = N; lists of equal length are zipped (--rows 1,33 --cols 7,1 is two shapes).",
      .sizes = {{.name = "rows",
                 .help = "rows of the input (columns of the output)",
                 .full = {4096, 8191, 8192},
                 .quick = {1, 1, 7, 31, 100, 257, 1000},
                 .max = std::int64_t{65535} * 32},  // the grid's y dimension: 65535 tiles of 32 rows
                {.name = "cols",
                 .help = "columns of the input (rows of the output)",
                 .full = {4096, 8193, 8192},
                 .quick = {1, 13, 1, 33, 36, 129, 997},
                 .max = std::int64_t{1} << 30}},
      .variants = {{"cublas_geam", "cublasSgeam, op(A) = transpose, alpha 1, beta 0", true},
                   {"naive", "one thread per element: coalesced reads, strided writes"},
                   {"shared_tile", "32×32 shared tile: coalesced both ways, 32-way bank conflicts on the column reads"},
                   {"padded_tile", "32×33 shared tile: one float of padding per row, no bank conflicts"},
                   {"four_per_thread", "padded tile, 32×8 threads, four elements per thread"},
                   {"float4", "64×32 padded tile, 16-byte global loads and stores (scalar where rows or cols % 4 != 0)"}},
      .flags = {cudalabs::sweep_flag(tuning),
                {.name = "inputs",
                 .help = "random: floats in [-1, 1); specials: a quarter of them NaNs with payloads, -0.0, "
                         "subnormals, ±Inf, ±FLT_MAX, the rest random (every bit must arrive)",
                 .kind = cudalabs::ExtraFlag::Kind::text,
                 .default_value = "random",
                 .choices = {"random", "specials"}}},
  };
  return cudalabs::run_tuned_lab(argc, argv, spec, tuning, [](cudalabs::Session& s, cudalabs::Tuner& tuner) {
    const cudalabs::Cublas cublas;
    const bool specials = s.options().text("inputs") == "specials";
    for (const auto& point : s.points()) {
      const std::int64_t rows = point.at("rows"), cols = point.at("cols");
      const std::int64_t n = rows * cols;
      if (n > (std::int64_t{1} << 30))
        throw cudalabs::UsageError("rows × cols = " + std::to_string(n) +
                                   " elements; at most 2^30 (4 GiB per matrix). Use fewer --rows or --cols.");

      cudalabs::DeviceBuffer<float> d_in(static_cast<std::size_t>(n), "in"), d_out(static_cast<std::size_t>(n), "out");
      std::vector<float> expected;
      // Inputs from a seed, uploaded, and their reference: once now, and again
      // with a fresh seed for the harness's last check. Random floats in
      // [-1, 1): all distinct in practice, so an element from the wrong place shows.
      auto make_inputs = [&](std::uint64_t seed) {
        const auto in = specials ? value_kinds::with_specials(static_cast<std::size_t>(n), cudalabs::mix_seed(seed, 1),
                                                              -1.0f, 1.0f)
                                 : cudalabs::random_floats(static_cast<std::size_t>(n), cudalabs::mix_seed(seed, 1));
        expected = transpose_cpu(in, rows, cols);
        d_in.upload(in);
      };
      make_inputs(s.seed());

      // A transpose copies bits: every bit of every element must arrive.
      auto check = [&] { return cudalabs::check_bits(d_out.download(), expected); };
      // cuBLAS's geam computes 1·A + 0·B: arithmetic, which may give any NaN for
      // a NaN and, in a library built to flush, 0 for a subnormal. The library
      // baseline is held to what that allows: the same value, NaN for NaN, within
      // FLT_MIN (check_close_ieee); the student's kernels to every bit.
      auto check_geam = [&] {
        const std::vector<double> values(expected.begin(), expected.end());
        return cudalabs::check_close_ieee(d_out.download(), values,
                                          {.abs = std::numeric_limits<float>::min(), .rel = 0});
      };
      auto poison = [&](cudaStream_t st) { d_out.poison(st); };
      const cudalabs::Work work{.bytes = 2.0 * 4.0 * static_cast<double>(n)};  // each element read once, written once

      s.measure({.variant = "cublas_geam",
                 .size = point,
                 .work = work,
                 .run = [&](cudaStream_t st) { transpose_cublas(cublas, d_in.data(), d_out.data(), rows, cols, st); },
                 .check = check_geam,
                 .poison = poison,
                 .new_inputs = make_inputs});

      using Launcher = void (*)(const float*, float*, std::int64_t, std::int64_t, cudaStream_t);
      struct Variant {
        const char* name;
        Launcher launch;
        cudalabs::KernelResources resources;
      };
      const Variant variants[] = {
          {"naive", lab21::transpose_naive, lab21::naive_resources()},
          {"shared_tile", lab21::transpose_shared_tile, lab21::shared_tile_resources()},
          {"padded_tile", lab21::transpose_padded_tile, lab21::padded_tile_resources()},
          {"four_per_thread", lab21::transpose_four_per_thread, lab21::four_per_thread_resources()},
      };
      for (const Variant& v : variants) {
        if (!s.selected(v.name)) continue;
        s.measure({.variant = v.name,
                   .size = point,
                   .work = work,
                   .run = [&](cudaStream_t st) { v.launch(d_in.data(), d_out.data(), rows, cols, st); },
                   .check = check,
                   .poison = poison,
                   .new_inputs = make_inputs,
                   .resources = v.resources});
      }
      // float4: the kernel file's launch, or, under --sweep, each residency limit.
      if (s.selected("float4")) {
        const cudalabs::KernelResources own = lab21::float4_resources(rows, cols);
        tuner.run("float4", point, [&](const cudalabs::TunePoint& t) {
          const bool by_hand = t == tuner.hand_chosen("float4");
          const std::size_t smem = cudalabs::smem_for_residency(static_cast<int>(t.at("max_blocks_per_sm")),
                                                                own.static_smem, s.device().smem_per_sm);
          return cudalabs::TuneCase{
              .shape = {.block_threads = own.block_threads, .dynamic_smem = smem},
              .smem_opt_in = true,
              .resources = [&, by_hand, smem] { return by_hand ? own : lab21::float4_resources(rows, cols, smem); },
              .measure = [&, by_hand, smem](cudalabs::TuneRun how) -> const cudalabs::Record& {
                return s.measure({.variant = how.variant,
                                  .size = point,
                                  .work = work,
                                  .run =
                                      [&, by_hand, smem](cudaStream_t st) {
                                        if (by_hand) lab21::transpose_float4(d_in.data(), d_out.data(), rows, cols, st);
                                        else lab21::transpose_float4_limited(d_in.data(), d_out.data(), rows, cols, smem, st);
                                      },
                                  .check = check,
                                  .poison = poison,
                                  .new_inputs = make_inputs,
                                  .resources = how.resources,
                                  .extra = std::move(how.extra)});
              }};
        });
      }
      if (s.selected("float4") && !lab21::float4_vectorized(rows, cols))
        s.note(cudalabs::to_string(point) + ": float4 ran its scalar fallback (16-byte accesses need rows and cols "
                                            "to be multiples of 4)");
    }
  });
}
