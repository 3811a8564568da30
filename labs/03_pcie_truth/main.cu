// Lab 03 — the truth about PCIe: where the time of a GPU vector add goes.
//
// The kernel of lab 01 adds 2^24 pairs in well under a millisecond; moving the
// 192 MB of inputs and outputs across PCIe takes far longer. This lab times each
// piece — CPU, kernel alone, each copy, and the whole round trip — with ordinary
// (pageable) host memory and with page-locked (pinned) host memory.
//
// Variants:
//   cpu                 one CPU core, a plain loop
//   kernel_only         the kernel, data already on the GPU (CUDA events)
//   pageable_h2d        a and b from pageable memory to the GPU (host clock)
//   pageable_d2h        c from the GPU to pageable memory (host clock)
//   pageable_end_to_end upload a, b; add; download c (host clock)
//   pinned_h2d          a and b from pinned memory (CUDA events)
//   pinned_d2h          c to pinned memory (CUDA events)
//   pinned_end_to_end   the round trip with pinned memory (CUDA events)
//
// Inputs (--inputs): uniform values in [-100, 100), or specials: a quarter of
// them ±Inf, NaNs with payloads, ±0, subnormals, ±FLT_MAX, every one of them
// at the tail (labs/shared/value_kinds.hpp). A copy must then move every bit
// (a NaN's payload, -0.0, a subnormal): an upload or download that goes through
// float arithmetic, or skips the tail, fails; the add is still one IEEE float
// addition (labs/shared/round_trip_inputs.hpp).
//
// Run: make run LAB=03    (defaults: n = 2^20, 2^22, 2^24, 2^26)
#include <algorithm>

#include <cudalabs/lab.hpp>

// The copies are the student's (transfers.cuh, behind kernels.hpp); the kernel
// is lab 01's, unchanged, so its time compares with labs 01 and 02.
#include "kernels.hpp"
#include "round_trip_inputs.hpp"
#include "value_kinds.hpp"

namespace {

// Host memory of either kind, seen as plain pointers.
struct HostSide {
  float* a;
  float* b;
  float* c;
};

// The course's own upload, for the rows that start from data already on the
// GPU: their setup must not depend on the exercise.
void stage_on_device(const HostSide& h, float* d_a, float* d_b, std::int64_t n, cudaStream_t st) {
  CUDALABS_CHECK(cudaMemcpyAsync(d_a, h.a, n * sizeof(float), cudaMemcpyHostToDevice, st));
  CUDALABS_CHECK(cudaMemcpyAsync(d_b, h.b, n * sizeof(float), cudaMemcpyHostToDevice, st));
}

// The CPU row: the same sum on one core.
void add_on_cpu(const float* a, const float* b, float* c, std::int64_t n) {
  for (std::int64_t i = 0; i < n; ++i) c[i] = a[i] + b[i];
}

double median_of(const cudalabs::Session& s, const cudalabs::Point& p, const std::string& variant) {
  for (const auto& r : s.records())
    if (r.size == p && r.variant == variant && r.timed) return r.timing.median_ms;
  return 0;
}

}  // namespace

int main(int argc, char** argv) {
  const cudalabs::LabSpec spec{
      .name = "03_pcie_truth",
      .title = "the truth about PCIe: kernel time vs end-to-end time",
      .about = "Times the CPU loop, the kernel alone, each host<->device copy and the whole round trip, with\n"
               "pageable and with pinned host memory. GB/s of copies are per direction, against the PCIe\n"
               "link rate read from NVML.",
      .sizes = {{.name = "n",
                 .help = "elements per vector",
                 .full = {1 << 20, 1 << 22, 1 << 24, 1 << 26},  // 4 MB .. 256 MB per vector
                 .quick = {1, 257, 1000003},
                 .max = std::int64_t{1} << 30}},
      .variants = {{"cpu", "one CPU core, a plain loop"},
                   {"kernel_only", "the kernel, data already on the GPU (CUDA events)"},
                   {"pageable_h2d", "a and b from pageable memory to the GPU (host clock)"},
                   {"pageable_d2h", "c from the GPU to pageable memory (host clock)"},
                   {"pageable_end_to_end", "upload a, b; add; download c (host clock)"},
                   {"pinned_h2d", "a and b from pinned memory (CUDA events)"},
                   {"pinned_d2h", "c to pinned memory (CUDA events)"},
                   {"pinned_end_to_end", "the round trip with pinned memory (CUDA events)"}},
      .flags = {value_kinds::vector_add_inputs_flag()},
  };
  return cudalabs::run_lab(argc, argv, spec, [](cudalabs::Session& s) {
    const cudalabs::GivenCeiling link{"pcie_link_gbps", s.device().pcie_gbps()};
    const bool specials = s.options().text("inputs") == "specials";
    for (const auto& point : s.points()) {
      const std::int64_t n = point.at("n");
      const double vec_bytes = 4.0 * n;

      RoundTripInputs in(n, specials);  // and the checks: a sum rounds once, a copy is exact
      const auto& a = in.a;
      const auto& b = in.b;
      std::vector<float> pageable_c(n);
      cudalabs::PinnedBuffer<float> pinned_c(n, "pinned c");
      const HostSide pageable{in.a.data(), in.b.data(), pageable_c.data()};
      const HostSide pinned{in.pinned_a.data(), in.pinned_b.data(), pinned_c.data()};
      cudalabs::DeviceBuffer<float> d_a(n, "a"), d_b(n, "b"), d_c(n, "c");

      auto make_inputs = [&](std::uint64_t seed) { in.draw(seed, s.stream()); };
      make_inputs(s.seed());
      // For the variants that start from data already on the GPU: a and b there,
      // and for the downloads c = a + b too.
      auto inputs_on_device = [&](std::uint64_t seed) {
        make_inputs(seed);
        stage_on_device(pinned, d_a.data(), d_b.data(), n, s.stream());
      };
      auto sums_on_device = [&](std::uint64_t seed) {
        inputs_on_device(seed);
        lab03::vector_add(d_a.data(), d_b.data(), d_c.data(), n, s.stream());
      };

      auto check_inputs_on_device = [&] { return in.check_uploaded(d_a.download(), d_b.download()); };
      auto poison_inputs = [&](cudaStream_t st) { d_a.poison(st); d_b.poison(st); };

      if (s.selected("cpu"))
        s.measure({.variant = "cpu",
                   .size = point,
                   .work = {.bytes = 3 * vec_bytes, .flops = 1.0 * n},
                   .run = [&](cudaStream_t) { add_on_cpu(a.data(), b.data(), pageable_c.data(), n); },
                   .check = [&] { return in.check_sum(pageable_c); },
                   .poison = [&](cudaStream_t) { std::fill(pageable_c.begin(), pageable_c.end(), NAN); },
                   .new_inputs = make_inputs,
                   .expect = cudalabs::Expect::host,
                   .ceiling = cudalabs::CeilingKind::none,
                   .clock = cudalabs::Clock::host});

      if (s.selected("kernel_only")) {
        stage_on_device(pinned, d_a.data(), d_b.data(), n, s.stream());
        s.measure({.variant = "kernel_only",
                   .size = point,
                   .work = {.bytes = 3 * vec_bytes, .flops = 1.0 * n},
                   .run = [&](cudaStream_t st) { lab03::vector_add(d_a.data(), d_b.data(), d_c.data(), n, st); },
                   .check = [&] { return in.check_sum(d_c.download()); },
                   .poison = [&](cudaStream_t st) { d_c.poison(st); },
                   .new_inputs = inputs_on_device,
                   .resources = lab03::vector_add_resources()});
      }

      for (const auto* kind : {"pageable", "pinned"}) {
        const bool is_pinned = std::string(kind) == "pinned";
        const HostSide& host = is_pinned ? pinned : pageable;
        const auto clock = is_pinned ? cudalabs::Clock::events : cudalabs::Clock::host;
        const std::string prefix = kind;

        if (s.selected(prefix + "_h2d"))
          s.measure({.variant = prefix + "_h2d",
                     .size = point,
                     .work = {.bytes = 2 * vec_bytes},
                     .run = [&](cudaStream_t st) { lab03::upload(host.a, host.b, d_a.data(), d_b.data(), n, st); },
                     .check = check_inputs_on_device,
                     .poison = poison_inputs,
                     .new_inputs = make_inputs,
                     .expect = cudalabs::Expect::copies,
                     .ceiling = cudalabs::CeilingKind::given,
                     .given_ceiling = link,
                     .clock = clock});

        if (s.selected(prefix + "_d2h")) {
          stage_on_device(pinned, d_a.data(), d_b.data(), n, s.stream());
          lab03::vector_add(d_a.data(), d_b.data(), d_c.data(), n, s.stream());
          s.measure({.variant = prefix + "_d2h",
                     .size = point,
                     .work = {.bytes = vec_bytes},
                     .run = [&](cudaStream_t st) { lab03::download(d_c.data(), host.c, n, st); },
                     .check = [&] { return in.check_downloaded({host.c, static_cast<std::size_t>(n)}, d_c); },
                     .poison = [&](cudaStream_t) { std::fill(host.c, host.c + n, NAN); },
                     .new_inputs = sums_on_device,
                     .expect = cudalabs::Expect::copies,
                     .ceiling = cudalabs::CeilingKind::given,
                     .given_ceiling = link,
                     .clock = clock});
        }

        if (s.selected(prefix + "_end_to_end"))
          s.measure({.variant = prefix + "_end_to_end",
                     .size = point,
                     .work = {.bytes = 3 * vec_bytes, .flops = 1.0 * n},
                     .run =
                         [&](cudaStream_t st) {
                           lab03::round_trip(host.a, host.b, host.c, d_a.data(), d_b.data(), d_c.data(), n, st);
                         },
                     .check = [&] { return in.check_round_trip({host.c, static_cast<std::size_t>(n)}, d_a, d_b); },
                     .poison = [&](cudaStream_t st) { std::fill(host.c, host.c + n, NAN); poison_inputs(st); d_c.poison(st); },
                     .new_inputs = make_inputs,
                     .expect = cudalabs::Expect::kernels_and_copies,
                     .ceiling = cudalabs::CeilingKind::none,
                     .clock = clock});
      }

      // The lesson in three numbers per memory kind.
      const double kernel = median_of(s, point, "kernel_only"), cpu = median_of(s, point, "cpu");
      for (const auto* kind : {"pageable", "pinned"}) {
        const double e2e = median_of(s, point, std::string(kind) + "_end_to_end");
        if (kernel > 0 && e2e > 0) {
          char line[256];
          std::snprintf(line, sizeof line, "%s, %s: end to end %.3f ms, kernel %.3f ms -> %.1f%% of the time is PCIe and host%s",
                        cudalabs::to_string(point).c_str(), kind, e2e, kernel, 100.0 * (1.0 - kernel / e2e),
                        cpu > 0 ? (std::string("; vs CPU ") + std::to_string(cpu / e2e).substr(0, 4) + "x").c_str() : "");
          s.note(line);
        }
      }
      for (const auto* dir : {"h2d", "d2h"}) {
        const double pageable_ms = median_of(s, point, std::string("pageable_") + dir);
        const double pinned_ms = median_of(s, point, std::string("pinned_") + dir);
        if (pageable_ms > 0 && pinned_ms > 0) {
          char line[160];
          std::snprintf(line, sizeof line, "%s, %s: pinned is %.2fx faster than pageable", cudalabs::to_string(point).c_str(),
                        dir, pageable_ms / pinned_ms);
          s.note(line);
        }
      }
    }
    if (link.gbps > 0)
      s.note("%ceil of copies = % of the PCIe Gen" + std::to_string(s.device().pcie_gen) + " x" +
             std::to_string(s.device().pcie_width) + " link rate per direction, " + std::to_string(link.gbps).substr(0, 5) +
             " GB/s (from NVML)");
    else
      s.note("the PCIe link rate is unknown (NVML did not answer): no %ceil for copies");
  });
}
