// Lab 29's matrix-vector products: y = W·x over GGUF Q8_0/Q4_0 weights, every
// fused variant against the baseline (dequantise to fp32, then cublasSgemv), as
// % of the copy bandwidth on the bytes each must read (main.cu lists them).
#include "host_common.hpp"

namespace lab29host {
namespace {

// y = W·x for a row-major rows × cols W: to cuBLAS (column-major) the same
// memory is a cols × rows matrix, so y = (that matrix)ᵀ·x.
void sgemv(cublasHandle_t handle, const float* w, const float* x, float* y, int rows, int cols, cudaStream_t stream) {
  const float one = 1.0f, zero = 0.0f;
  CUDALABS_CHECK_CUBLAS(cublasSetStream(handle, stream));
  CUDALABS_CHECK_CUBLAS(cublasSgemv(handle, CUBLAS_OP_T, cols, rows, &one, w, cols, x, 1, &zero, y, 1));
}

}  // namespace

// ---- matrix-vector products -----------------------------------------------------------

void measure_matvec(cudalabs::Session& s, cudalabs::Cublas& blas, const Settings& settings, Format f, MatvecShape shape) {
  const std::string name = format_name(f);
  const int rows = shape.rows, cols = shape.cols, nb = cols / ref::qk;
  const std::int64_t blocks = static_cast<std::int64_t>(rows) * nb;
  const auto gguf_bytes = static_cast<std::size_t>(blocks) * lab29::gguf_block_bytes(f);
  const auto aligned_bytes = static_cast<std::size_t>(blocks) * lab29::aligned_block_bytes(f);
  const int copies = layer_copies(settings, static_cast<double>(gguf_bytes), s.device());
  DeviceBuffer<std::uint8_t> d_w(copies * gguf_bytes, "quantised W, every layer copy");
  DeviceBuffer<std::uint8_t> d_wa(copies * aligned_bytes, "repacked W, every layer copy");
  // Each planar copy starts 256-byte aligned (the kernels load 16 bytes at a
  // time; 333 blocks of 34 bytes, the tiny model's, are not a multiple of 16).
  const std::size_t planar_bytes = planar_copy_bytes(gguf_bytes);
  DeviceBuffer<std::uint8_t> d_wp(copies * planar_bytes, "planar W, every layer copy");
  DeviceBuffer<float> d_x(static_cast<std::size_t>(cols), "x"), d_y(static_cast<std::size_t>(rows), "y");
  DeviceQuantVector d_xq(static_cast<std::size_t>(cols), "int8 x");

  ref::QuantMatrix w;
  std::vector<double> y_float, y_int8;
  cudalabs::Tolerance tol;
  double allowance = 0;
  // W from U[-1, 1) quantised as GGUF does, x from U[-1, 1); x quantised on the
  // CPU for the __dp4a kernels (the decode step quantises on the GPU).
  auto new_inputs = [&](std::uint64_t seed) {
    w = ref::quantize_matrix(f, cudalabs::random_floats(static_cast<std::size_t>(blocks) * ref::qk, cudalabs::mix_seed(seed, 1)),
                             rows, cols);
    const auto x = cudalabs::random_floats(static_cast<std::size_t>(cols), cudalabs::mix_seed(seed, 2));
    const auto xq = ref::quantize_vector(x);
    upload_copies(d_w, w.bytes, copies);
    repack_copies(lab29::repack_aligned, f, d_w, d_wa, copies, blocks, s.stream());
    repack_copies(lab29::repack_planar, f, d_w, d_wp, copies, blocks, s.stream());
    d_x.upload(x);
    d_xq.upload(xq);
    if (cudalabs::evidence::keeps_references()) {  // none in a graded program (evidence::keeps_references)
      y_float = ref::matvec(w, x);
      y_int8 = ref::matvec(w, xq);
    }
    tol = ref::matvec_tolerance(cols, ref::max_abs_value(w), max_abs(x));
    allowance = ref::activation_quantisation_allowance(w, xq);
  };
  new_inputs(s.seed());

  Rotation layer{copies};
  const cudalabs::Point point{{"rows", rows}, {"cols", cols}, {"bits", f == Format::q8_0 ? 8 : 4}};
  // The bytes that must move: the GGUF matrix once, x, y. The repacked layouts
  // read 2 more bytes per block, uncounted: that is their cost.
  const cudalabs::Work work{.bytes = static_cast<double>(gguf_bytes) + 4.0 * cols + 4.0 * rows,
                            .flops = 2.0 * rows * static_cast<double>(cols)};
  auto poison = [&](cudaStream_t st) { d_y.poison(st); };
  auto check_fp32 = [&] { return cudalabs::check_close(d_y.download(), y_float, tol); };
  // Against the same int8 x (only the kernel's own error), and loosely against
  // the fp32 x (activation_quantisation_allowance).
  auto check_int8 = [&] {
    const auto y = d_y.download();
    return ref::with_failures(
        cudalabs::check_close(y, y_int8, tol),
        {ref::labelled(cudalabs::check_close(y, y_float, {.abs = allowance + tol.abs, .rel = tol.rel}),
                       "against the fp32-x reference (int8 x allowed for)")});
  };
  auto finish = [&](cudalabs::Measurement m) {
    m.extra["layers"] = copies;  // set apart: g++ 12 warns on the designated form
    s.measure(m);
  };

  {  // the baseline: two kernels, the fp32 matrix (3.8x the Q8_0 bytes, 7.1x the Q4_0) written and read
    DeviceBuffer<float> d_wf(static_cast<std::size_t>(blocks) * ref::qk, "dequantised fp32 W (the baseline's)");
    // One untimed run: cuBLAS loads its kernels now, not in the traced run.
    dequantize(f, d_w.data(), d_wf.data(), blocks * ref::qk, s.stream());
    sgemv(blas.get(), d_wf.data(), d_x.data(), d_y.data(), rows, cols, s.stream());
    CUDALABS_CHECK(cudaStreamSynchronize(s.stream()));
    finish({.variant = name + "_dequant_cublas",
            .size = point,
            .work = work,
            .run =
                [&](cudaStream_t st) {
                  dequantize(f, d_w.data() + layer.advance() * gguf_bytes, d_wf.data(), blocks * ref::qk, st);
                  sgemv(blas.get(), d_wf.data(), d_x.data(), d_y.data(), rows, cols, st);
                },
            // y, and the fp32 matrix bit for bit.
            .check =
                [&] {
                  std::vector<float> expected;
                  if (cudalabs::evidence::keeps_references()) {
                    expected.resize(static_cast<std::size_t>(blocks) * ref::qk);
                    cudalabs::ref::parallel_for(static_cast<std::size_t>(rows), [&](std::size_t lo, std::size_t hi) {
                      for (std::size_t r = lo; r < hi; ++r)
                        for (int c = 0; c < cols; ++c)
                          expected[r * cols + c] = w.value(static_cast<std::int64_t>(r), c);
                    }, 1);
                  }
                  return ref::with_failures(check_fp32(), {ref::labelled(cudalabs::check_close(d_wf.download(), expected,
                                                                                               {.abs = 0, .rel = 0}),
                                                                         "dequantised matrix (bit-exact)")});
                },
            .poison =
                [&](cudaStream_t st) {
                  d_y.poison(st);
                  d_wf.poison(st);
                },
            .new_inputs = new_inputs,
            .resources = dequantize_resources(f)});
  }
  if (s.selected(name + "_warp_per_row"))
    finish({.variant = name + "_warp_per_row",
            .size = point,
            .work = work,
            .run =
                [&](cudaStream_t st) {
                  lab29::matvec_warp_per_row(f, d_w.data() + layer.advance() * gguf_bytes, d_x.data(), d_y.data(), rows,
                                             cols, st);
                },
            .check = check_fp32,
            .poison = poison,
            .new_inputs = new_inputs,
            .resources = lab29::matvec_warp_per_row_resources(f)});
  if (s.selected(name + "_dp4a"))
    finish({.variant = name + "_dp4a",
            .size = point,
            .work = work,
            .run =
                [&](cudaStream_t st) {
                  lab29::matvec_dp4a(f, d_w.data() + layer.advance() * gguf_bytes, d_xq.view(), d_y.data(), rows, cols, st);
                },
            .check = check_int8,
            .poison = poison,
            .new_inputs = new_inputs,
            .resources = lab29::matvec_dp4a_resources(f, false)});
  if (s.selected(name + "_dp4a_aligned"))
    finish({.variant = name + "_dp4a_aligned",
            .size = point,
            .work = work,
            .run =
                [&](cudaStream_t st) {
                  lab29::matvec_dp4a_aligned(f, d_wa.data() + layer.advance() * aligned_bytes, d_xq.view(), d_y.data(),
                                             rows, cols, st);
                },
            .check = check_int8,
            .poison = poison,
            .new_inputs = new_inputs,
            .resources = lab29::matvec_dp4a_resources(f, true)});
  if (s.selected(name + "_dp4a_rows")) {
    cudalabs::Measurement m{
        .variant = name + "_dp4a_rows",
        .size = point,
        .work = work,
        .run =
            [&](cudaStream_t st) {
              lab29::matvec_dp4a_rows(f, d_wa.data() + layer.advance() * aligned_bytes, d_xq.view(), nullptr,
                                      d_y.data(), rows, cols, settings.rows_per_warp, st);
            },
        .check = check_int8,
        .poison = poison,
        .new_inputs = new_inputs,
        .resources = lab29::matvec_dp4a_rows_resources(f, settings.rows_per_warp)};
    m.extra["rows_per_warp"] = settings.rows_per_warp ? settings.rows_per_warp : lab29::matvec_rows_per_warp(f);
    finish(m);
  }
  // The planar layout: one warp per row (wide), then W warps per row (split).
  for (const auto& [suffix, asked] : {std::pair{"_dp4a_wide", 1}, std::pair{"_dp4a_split", settings.warps_per_row}}) {
    if (!s.selected(name + suffix)) continue;
    const int warps = lab29::matvec_planar_warps(f, rows, cols, asked);
    cudalabs::Measurement m{
        .variant = name + suffix,
        .size = point,
        .work = work,
        .run =
            [&, warps](cudaStream_t st) {
              lab29::matvec_planar(f, d_wp.data() + layer.advance() * planar_bytes, d_xq.view(), nullptr, d_y.data(),
                                   rows, cols, warps, st);
            },
        .check = check_int8,
        .poison = poison,
        .new_inputs = new_inputs,
        .resources = lab29::matvec_planar_resources(f, warps)};
    m.extra["warps_per_row"] = warps;
    finish(m);
  }
}

}  // namespace lab29host
