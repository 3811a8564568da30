// Lab 29's shared host code (host_common.hpp): the models, the flags, the helpers.
#include "host_common.hpp"

namespace lab29host {

const std::vector<Model>& models() {
  static const std::vector<Model> all{
      {"8b", "Llama-3-8B", 4096, 14336, 32, 8, 128, 128256, 500000.0, 1e-5f,
       {{4096, 14336}, {14336, 4096}}},  // the MLP's down projection, its gate (and up)
      // Qwen2-0.5B's sizes (without its q/k/v biases, with Llama's RoPE pairing).
      {"small", "Qwen2-0.5B-sized", 896, 4864, 14, 2, 64, 151936, 1000000.0, 1e-6f, {{896, 4864}, {4864, 896}}},
      // --quick: odd sizes everywhere: 9 and 33 blocks per row (not a multiple of
      // the warp's 8 per step), a single row, rows not a multiple of R.
      {"tiny", "a tiny layer (--quick)", 288, 800, 6, 2, 48, 1009, 10000.0, 1e-5f, {{1, 32}, {37, 288}, {801, 1056}}},
  };
  return all;
}

const char* format_name(Format f) { return f == Format::q8_0 ? "q8_0" : "q4_0"; }

Settings settings_of(const cudalabs::Options& o) {
  Settings s;
  s.quick = o.quick;
  std::string list = o.text("model");
  if (list.empty()) list = o.quick ? "tiny" : "8b,small";
  std::stringstream names(list);
  for (std::string name; std::getline(names, name, ',');) {
    const auto it = std::find_if(models().begin(), models().end(), [&](const Model& m) { return m.name == name; });
    if (it == models().end())
      throw cudalabs::UsageError("--model " + name + ": the lab knows 8b, small and tiny. Example: --model 8b,small");
    s.models.push_back(&*it);
  }
  s.tokens = o.integer("tokens");
  s.layers = static_cast<int>(o.integer("layers"));
  s.rows_per_warp = static_cast<int>(o.integer("rows-per-warp"));
  if (s.rows_per_warp != 0 && !lab29::matvec_rows_supported(s.rows_per_warp))
    throw cudalabs::UsageError("--rows-per-warp " + std::to_string(s.rows_per_warp) +
                               ": the kernels are built for 1, 2 or 4 rows per warp (0: the kernel file's choice).");
  s.warps_per_row = static_cast<int>(o.integer("warps-per-row"));
  if (s.warps_per_row != 0 && !lab29::matvec_planar_supported(s.warps_per_row))
    throw cudalabs::UsageError("--warps-per-row " + std::to_string(s.warps_per_row) +
                               ": the split kernels are built for 1, 2, 4 or 8 warps per row (0: chosen per shape).");
  const std::string matvec = o.text("decode-matvec");
  if (matvec != "split" && matvec != "rows")
    throw cudalabs::UsageError("--decode-matvec " + matvec + ": split or rows. Example: --decode-matvec rows");
  s.decode_split = matvec == "split";
  const std::string format = o.text("decode-format");
  if (format != "q8_0" && format != "q4_0")
    throw cudalabs::UsageError("--decode-format " + format + ": q8_0 or q4_0. Example: --decode-format q4_0");
  s.decode_format = format == "q8_0" ? Format::q8_0 : Format::q4_0;
  s.inputs = o.text("inputs");
  return s;
}

int layer_copies(const Settings& settings, double bytes, const cudalabs::DeviceInfo& dev) {
  if (settings.layers > 0) return settings.layers;
  if (settings.quick) return 2;
  return std::clamp(static_cast<int>(std::ceil(2.0 * static_cast<double>(dev.l2_bytes) / bytes)), 1, max_layer_copies);
}

void upload_copies(DeviceBuffer<std::uint8_t>& dst, const std::vector<std::uint8_t>& src, int copies) {
  CUDALABS_CHECK(cudaMemcpy(dst.data(), src.data(), src.size(), cudaMemcpyHostToDevice));
  for (int c = 1; c < copies; ++c)
    CUDALABS_CHECK(cudaMemcpy(dst.data() + c * src.size(), dst.data(), src.size(), cudaMemcpyDeviceToDevice));
  CUDALABS_CHECK(cudaDeviceSynchronize());
}

void repack_copies(Repack repack, Format f, const DeviceBuffer<std::uint8_t>& gguf, DeviceBuffer<std::uint8_t>& out,
                   int copies, std::int64_t blocks, cudaStream_t stream) {
  const std::size_t from = gguf.size() / copies, to = out.size() / copies;
  for (int c = 0; c < copies; ++c) repack(f, gguf.data() + c * from, out.data() + c * to, blocks, stream);
  CUDALABS_CHECK(cudaStreamSynchronize(stream));
}

std::size_t planar_copy_bytes(std::size_t bytes) { return cudalabs::ceil_div<std::size_t>(bytes, 256) * 256; }

bool any_selected(const cudalabs::Session& s, std::initializer_list<std::string> names) {
  if (s.options().variants.empty()) return true;
  for (const auto& v : s.options().variants)
    if (std::find(names.begin(), names.end(), v) != names.end()) return true;
  return false;
}

double max_abs(std::span<const float> v) {
  double m = 0;
  for (float x : v) m = std::max(m, static_cast<double>(std::fabs(x)));
  return m;
}
// The largest |value| an int8 vector can hold: 127 steps of its largest scale.
double max_abs(const ref::QuantVector& v) { return 127.0 * max_abs(v.d); }

std::vector<float> to_float(const std::vector<double>& v) { return {v.begin(), v.end()}; }

}  // namespace lab29host
