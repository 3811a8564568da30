#include "cudalabs/sweep.hpp"

#include <algorithm>
#include <cctype>
#include <cstdio>
#include <sstream>
#include <stdexcept>

#include "cudalabs/error.hpp"
#include "cudalabs/math.hpp"

namespace cudalabs {

namespace {

const std::string kSyntax =
    " Sweep syntax: \"block=64..1024 items=1,2,4\" (a..b doubles from a to b, a..b:+s adds s, a..b:*f multiplies by f; "
    "lists with commas), or \"default\".";

std::string join(const std::vector<std::string>& v, const std::string& sep) {
  std::string s;
  for (std::size_t i = 0; i < v.size(); ++i) s += (i ? sep : "") + v[i];
  return s;
}

std::string join_values(const std::vector<std::int64_t>& v) {
  std::vector<std::string> s;
  for (auto x : v) s.push_back(std::to_string(x));
  return join(s, ", ");
}

std::vector<std::string> split(const std::string& s, char sep) {
  std::vector<std::string> out;
  std::stringstream ss(s);
  std::string item;
  while (std::getline(ss, item, sep)) out.push_back(item);
  if (!s.empty() && s.back() == sep) out.push_back("");
  return out;
}

bool is_name(const std::string& s) {
  if (s.empty() || !(std::islower(static_cast<unsigned char>(s[0])) || s[0] == '_')) return false;
  return std::all_of(s.begin(), s.end(), [](char c) {
    return std::islower(static_cast<unsigned char>(c)) || std::isdigit(static_cast<unsigned char>(c)) || c == '_';
  });
}

std::string kb(std::size_t bytes) {
  char buf[32];
  std::snprintf(buf, sizeof buf, "%.1f KB", static_cast<double>(bytes) / 1024.0);
  return buf;
}

std::string strprintf(const char* format, double a, double b = 0, double c = 0, double d = 0) {
  char buf[160];
  std::snprintf(buf, sizeof buf, format, a, b, c, d);
  return buf;
}

// a..b, a..b:+s, a..b:*f, appended to `out`.
void expand_range(const std::string& name, const std::string& item, std::vector<std::int64_t>& out) {
  const std::string flag = "--sweep " + name;
  const auto dots = item.find("..");
  std::string rest = item.substr(dots + 2), step = "*2";
  if (const auto colon = rest.find(':'); colon != std::string::npos) {
    step = rest.substr(colon + 1);
    rest = rest.substr(0, colon);
    if (step.size() < 2 || (step[0] != '+' && step[0] != '*'))
      throw UsageError(flag + "=" + item + ": after ':' comes +STEP or *FACTOR (e.g. 32..256:+32 or 1..27:*3)." + kSyntax);
  }
  const std::string a_text = item.substr(0, dots);
  if (a_text.empty() || rest.empty())
    throw UsageError(flag + "=" + item + ": a range needs both ends, e.g. 64..1024." + kSyntax);
  const std::int64_t a = parse_size(flag, a_text), b = parse_size(flag, rest);
  const std::int64_t by = parse_size(flag, step.substr(1));
  if (a > b)
    throw UsageError(flag + "=" + item + ": the range runs backwards; write the smaller end first (" + rest + ".." +
                     a_text + ").");
  if (step[0] == '+' && by < 1) throw UsageError(flag + "=" + item + ": the step must be at least 1.");
  if (step[0] == '*' && by < 2) throw UsageError(flag + "=" + item + ": the factor must be at least 2.");
  if (step[0] == '*' && a < 1)
    throw UsageError(flag + "=" + item + ": a doubling (or multiplying) range cannot start at 0; list 0 apart: 0,1.." +
                     rest + ".");
  for (std::int64_t v = a; v <= b;) {
    out.push_back(v);
    if (out.size() > max_sweep_points)
      throw UsageError(flag + "=" + item + ": more than " + std::to_string(max_sweep_points) +
                       " values; use a coarser step.");
    if (step[0] == '+') {
      if (v > b - by) break;
      v += by;
    } else {
      if (v > b / by) break;
      v *= by;
    }
  }
}

std::string describe_params(const TunableVariant& v) {
  std::vector<std::string> names;
  for (const auto& p : v.params) names.push_back(p.name);
  return v.variant + " (" + join(names, ", ") + ")";
}

std::string describe_tuning(const Tuning& tuning) {
  std::vector<std::string> all;
  for (const auto& v : tuning) all.push_back(describe_params(v));
  return join(all, "; ");
}

bool declares(const TunableVariant& v, const std::string& name) {
  return std::any_of(v.params.begin(), v.params.end(), [&](const Tunable& t) { return t.name == name; });
}

}  // namespace

// ---- what a lab declares ----------------------------------------------------------------

Tunable block_tunable(int hand_chosen) {
  return {.name = "block", .help = "threads per block", .value = hand_chosen, .min = 1, .max = std::int64_t{1} << 16};
}

Tunable blocks_per_sm_tunable() {
  return {.name = "blocks_per_sm",
          .help = "grid = this x SMs; 0: as many as are resident at once",
          .value = 0,
          .min = 0,
          .max = 1024};
}

TunableVariant grid_stride_tunable(std::string variant, int hand_chosen_block, std::string default_sweep) {
  return {.variant = std::move(variant),
          .params = {block_tunable(hand_chosen_block), blocks_per_sm_tunable()},
          .default_sweep = std::move(default_sweep)};
}

// ---- the sweep text --------------------------------------------------------------------

std::vector<std::int64_t> parse_sweep_values(const std::string& name, const std::string& text) {
  const std::string flag = "--sweep " + name;
  if (text.empty()) throw UsageError(flag + "=: missing values." + kSyntax);
  std::vector<std::int64_t> values;
  for (const auto& item : split(text, ',')) {
    if (item.empty()) throw UsageError(flag + "=" + text + ": missing value between commas." + kSyntax);
    if (item.find("..") != std::string::npos) expand_range(name, item, values);
    else values.push_back(parse_size(flag, item));
    if (values.size() > max_sweep_points)
      throw UsageError(flag + "=" + text + ": more than " + std::to_string(max_sweep_points) + " values.");
  }
  std::sort(values.begin(), values.end());
  values.erase(std::unique(values.begin(), values.end()), values.end());
  return values;
}

std::vector<SweepAxis> parse_sweep(const std::string& text) {
  std::vector<SweepAxis> axes;
  std::istringstream words(text);
  std::string word;
  while (words >> word) {
    const auto eq = word.find('=');
    if (eq == std::string::npos)
      throw UsageError("--sweep '" + word + "': each parameter needs values, name=values (e.g. block=64..1024)." + kSyntax);
    const std::string name = word.substr(0, eq);
    if (!is_name(name))
      throw UsageError("--sweep '" + word + "': '" + name + "' is not a parameter name (lower case, digits, _)." + kSyntax);
    for (const auto& a : axes)
      if (a.name == name) throw UsageError("--sweep names " + name + " twice; give all its values once, with commas.");
    axes.push_back({name, parse_sweep_values(name, word.substr(eq + 1))});
  }
  if (axes.empty()) throw UsageError("--sweep: nothing to sweep." + kSyntax);
  return axes;
}

// ---- points ---------------------------------------------------------------------------

std::int64_t TunePoint::at(const std::string& name) const {
  for (const auto& [k, v] : values)
    if (k == name) return v;
  throw std::logic_error("tune point " + label() + " has no parameter " + name);
}

std::string TunePoint::label() const {
  std::string s;
  for (const auto& [k, v] : values) s += (s.empty() ? "" : ",") + k + "=" + std::to_string(v);
  return s;
}

TunePoint hand_chosen(const TunableVariant& v) {
  TunePoint p;
  for (const auto& t : v.params) p.values.emplace_back(t.name, t.value);
  return p;
}

std::string point_variant_name(const std::string& variant, const TunePoint& p) {
  return variant + "[" + p.label() + "]";
}

std::vector<TunePoint> sweep_points(const TunableVariant& v, const std::vector<SweepAxis>& axes) {
  // Each param's values: the axis's, checked, or its hand-chosen value.
  std::vector<std::vector<std::int64_t>> lists;
  for (const auto& axis : axes)
    if (!declares(v, axis.name))
      throw UsageError("--sweep " + axis.name + ": " + v.variant + " has no such parameter; it has " +
                       describe_params(v) + ".");
  std::size_t count = 1;
  for (const auto& t : v.params) {
    auto axis = std::find_if(axes.begin(), axes.end(), [&](const SweepAxis& a) { return a.name == t.name; });
    if (axis == axes.end()) {
      lists.push_back({t.value});
      continue;
    }
    for (const std::int64_t x : axis->values) {
      if (!t.choices.empty() && std::find(t.choices.begin(), t.choices.end(), x) == t.choices.end())
        throw UsageError("--sweep " + t.name + "=" + std::to_string(x) + ": " + v.variant + " is compiled for " + t.name +
                         " = " + join_values(t.choices) + " only (" + t.help + ").");
      if (x < t.min || x > t.max)
        throw UsageError("--sweep " + t.name + "=" + std::to_string(x) + ": must be between " + std::to_string(t.min) +
                         " and " + std::to_string(t.max) + " (" + t.help + ").");
    }
    lists.push_back(axis->values);
    count *= axis->values.size();
    if (count > max_sweep_points)
      throw UsageError("--sweep: more than " + std::to_string(max_sweep_points) + " points for " + v.variant +
                       "; narrow a range or use a coarser step.");
  }
  std::vector<TunePoint> points;
  std::vector<std::size_t> index(lists.size(), 0);
  for (std::size_t n = 0; n < count; ++n) {
    TunePoint p;
    for (std::size_t i = 0; i < lists.size(); ++i) p.values.emplace_back(v.params[i].name, lists[i][index[i]]);
    points.push_back(std::move(p));
    for (std::size_t i = lists.size(); i-- > 0;) {  // the last param varies fastest
      if (++index[i] < lists[i].size()) break;
      index[i] = 0;
    }
  }
  return points;
}

const std::vector<TunePoint>* SweepPlan::of(const std::string& variant) const {
  for (const auto& [name, pts] : points)
    if (name == variant) return &pts;
  return nullptr;
}

SweepPlan plan_sweep(const Tuning& tuning, const std::string& text, const std::vector<std::string>& selected) {
  SweepPlan plan;
  const bool blank = std::all_of(text.begin(), text.end(), [](char c) { return std::isspace(static_cast<unsigned char>(c)); });
  if (blank) return plan;
  auto is_selected = [&](const std::string& v) {
    return selected.empty() || std::find(selected.begin(), selected.end(), v) != selected.end();
  };
  std::string trimmed = text;
  trimmed.erase(0, trimmed.find_first_not_of(" \t"));
  trimmed.erase(trimmed.find_last_not_of(" \t") + 1);
  if (trimmed == "default") {
    for (const auto& v : tuning) {
      if (!is_selected(v.variant) || v.default_sweep.empty()) continue;
      try {
        plan.points.emplace_back(v.variant, sweep_points(v, parse_sweep(v.default_sweep)));
      } catch (const UsageError& e) {
        throw std::logic_error(v.variant + "'s default sweep \"" + v.default_sweep + "\" is wrong: " + e.what());
      }
    }
    if (!plan.active())
      throw UsageError("--sweep default: none of the selected variants is tunable. Tunable: " + describe_tuning(tuning) +
                       ".");
    return plan;
  }
  const std::vector<SweepAxis> axes = parse_sweep(trimmed);
  std::vector<std::string> names;
  for (const auto& a : axes) names.push_back(a.name);
  for (const auto& v : tuning) {
    if (!is_selected(v.variant)) continue;
    const bool has_all = std::all_of(names.begin(), names.end(), [&](const std::string& n) { return declares(v, n); });
    if (has_all) plan.points.emplace_back(v.variant, sweep_points(v, axes));
    else
      plan.notes.push_back(v.variant + " has no parameter " + join(names, " or ") +
                           " of this sweep: it ran with its hand-chosen launch");
  }
  if (!plan.active())
    throw UsageError("--sweep names " + join(names, ", ") + ", and no selected variant has all of them. Tunable: " +
                     describe_tuning(tuning) + ".");
  return plan;
}

// ---- what the hardware can launch --------------------------------------------------------

LaunchLimits launch_limits(const DeviceInfo& d, bool smem_opt_in) {
  LaunchLimits l;
  if (smem_opt_in && d.smem_per_block_optin > 0) l.smem_per_block = d.smem_per_block_optin;
  return l;
}

std::string launch_problem(const LaunchShape& shape, const LaunchLimits& limits, const KernelResources* resources) {
  if (shape.block_threads < 1) return std::to_string(shape.block_threads) + " threads per block: at least 1";
  if (shape.block_threads > limits.threads_per_block)
    return std::to_string(shape.block_threads) + " threads per block > " + std::to_string(limits.threads_per_block);
  if (shape.grid_blocks > limits.grid_blocks)
    return "a grid of " + std::to_string(shape.grid_blocks) + " blocks > " + std::to_string(limits.grid_blocks);
  if (shape.dynamic_smem > limits.smem_per_block)
    return kb(shape.dynamic_smem) + " of dynamic shared memory per block > " + kb(limits.smem_per_block);
  if (!resources) return "";
  const std::size_t smem = resources->static_smem + shape.dynamic_smem;
  if (smem > limits.smem_per_block)
    return kb(smem) + " of shared memory per block (" + kb(resources->static_smem) + " static + " +
           kb(shape.dynamic_smem) + " dynamic) > " + kb(limits.smem_per_block);
  const std::int64_t registers = static_cast<std::int64_t>(resources->registers) * shape.block_threads;
  if (registers > limits.registers_per_block)
    return std::to_string(resources->registers) + " registers x " + std::to_string(shape.block_threads) +
           " threads = " + std::to_string(registers) + " registers per block > " +
           std::to_string(limits.registers_per_block);
  if (resources->blocks_per_sm < 1)
    return "the occupancy API fits no block of " + std::to_string(shape.block_threads) + " threads on an SM (" +
           std::to_string(resources->registers) + " registers per thread, " + kb(smem) + " of shared memory per block)";
  return "";
}

// ---- grids and residency --------------------------------------------------------------

std::int64_t grid_for(std::int64_t blocks_per_sm, int resident_per_sm, int sm_count, std::int64_t work_blocks) {
  const std::int64_t per_sm = blocks_per_sm > 0 ? blocks_per_sm : resident_per_sm;
  const std::int64_t grid = std::min(per_sm * std::max(sm_count, 1), work_blocks);
  return std::max<std::int64_t>(grid, 1);
}

std::size_t smem_for_residency(int blocks, std::size_t static_smem, std::size_t smem_per_sm,
                               std::size_t reserved_per_block, std::size_t granularity) {
  if (blocks < 1 || granularity == 0) return 0;
  const std::size_t share = smem_per_sm / static_cast<std::size_t>(blocks) / granularity * granularity;
  const std::size_t held = static_smem + reserved_per_block;
  return share > held ? share - held : 0;
}

// ---- the best point -------------------------------------------------------------------

std::optional<std::size_t> best_point(const std::vector<PointOutcome>& outcomes) {
  std::optional<std::size_t> best;
  for (std::size_t i = 0; i < outcomes.size(); ++i) {
    const auto& o = outcomes[i];
    if (!o.launched || !o.passed || !o.timed || !(o.median_ms > 0)) continue;
    if (!best || o.median_ms < outcomes[*best].median_ms) best = i;
  }
  return best;
}

// ---- running a sweep --------------------------------------------------------------------

Tuner::Tuner(Session& session, const Tuning& tuning)
    : session_(session),
      tuning_(tuning),
      plan_(plan_sweep(tuning, session.options().text("sweep"), session.options().variants)) {
  for (const auto& n : plan_.notes) session_.note(n);
}

const TunableVariant& Tuner::declared(const std::string& variant) const {
  for (const auto& v : tuning_)
    if (v.variant == variant) return v;
  throw std::logic_error("variant " + variant + " is not in the lab's Tuning");
}

TunePoint Tuner::hand_chosen(const std::string& variant) const { return cudalabs::hand_chosen(declared(variant)); }

std::vector<TunePoint> Tuner::points(const std::string& variant) const {
  if (const auto* pts = plan_.of(variant)) return *pts;
  return {hand_chosen(variant)};
}

namespace {

std::string rate_text(const Record& r) {
  std::string s = strprintf("%.4g ms", r.timing.median_ms);
  if (r.bytes > 0) s += strprintf(", %.1f GB/s", r.gbps);
  if (r.flops > 0 && r.flops > r.bytes) s += strprintf(", %.1f GFLOP/s", r.gflops);
  return s;
}

std::string occupancy_text(const KernelResources& k) {
  return strprintf("theoretical occupancy %.0f%% (%.0f blocks of %.0f threads per SM, %.0f registers per thread)",
                   100.0 * k.occupancy, k.blocks_per_sm, k.block_threads, k.registers);
}

}  // namespace

std::optional<Record> Tuner::run(const std::string& variant, const Point& size,
                                 const std::function<TuneCase(const TunePoint&)>& make) {
  const bool swept = sweeping(variant);
  const std::vector<TunePoint> pts = points(variant);
  std::vector<PointOutcome> outcomes(pts.size());
  std::vector<std::optional<Record>> records(pts.size());
  std::vector<std::string> refused;
  for (std::size_t i = 0; i < pts.size(); ++i) {
    const TuneCase c = make(pts[i]);
    const LaunchLimits limits = launch_limits(session_.device(), c.smem_opt_in);
    std::string why = launch_problem(c.shape, limits);
    KernelResources resources;
    if (why.empty()) {
      try {
        resources = c.resources();
        why = launch_problem(c.shape, limits, &resources);
      } catch (const CudaError& e) {
        cudaGetLastError();  // the occupancy API's error is not sticky; clear it for the next point
        why = std::string("the occupancy API refused it: ") + e.what();
      }
    }
    const std::string name = swept ? point_variant_name(variant, pts[i]) : variant;
    if (!why.empty()) {
      if (!swept) throw std::logic_error(variant + "'s hand-chosen launch cannot run: " + why);
      refused.push_back(name + ": " + why);
      continue;
    }
    TuneRun how{.variant = name, .resources = resources, .extra = {}};
    if (swept) {
      for (const auto& [k, v] : pts[i].values) how.extra[k] = static_cast<double>(v);
      how.extra["theoretical_occupancy"] = resources.occupancy;
      how.extra["resident_blocks_per_sm"] = resources.blocks_per_sm;
    }
    const Record& r = c.measure(std::move(how));
    if (r.variant != name) throw std::logic_error("a TuneCase measured " + r.variant + " where the sweep asked for " + name);
    outcomes[i] = {.launched = true, .passed = r.passed, .timed = r.timed, .median_ms = r.timing.median_ms};
    records[i] = r;
  }
  const std::optional<std::size_t> best = best_point(outcomes);
  if (!swept) return best ? records[*best] : std::nullopt;

  // Under the table: what the sweep found at this size.
  const std::size_t measured = static_cast<std::size_t>(
      std::count_if(outcomes.begin(), outcomes.end(), [](const PointOutcome& o) { return o.launched; }));
  std::string head = "sweep of " + variant + " at " + to_string(size) + ": " + std::to_string(pts.size()) +
                     " points, " + std::to_string(measured) + " measured";
  if (!refused.empty()) head += ", " + std::to_string(refused.size()) + " not launchable";
  session_.note(head);
  if (best) {
    const Record& b = *records[*best];
    session_.note("  best: " + b.variant + "  " + rate_text(b) + "; " + occupancy_text(*b.resources));
    const TunePoint chosen = hand_chosen(variant);
    const auto at = std::find(pts.begin(), pts.end(), chosen);
    const std::size_t k = static_cast<std::size_t>(at - pts.begin());
    if (at == pts.end()) {
      session_.note("  the hand-chosen launch (" + chosen.label() + ") is not a point of this sweep");
    } else if (k == *best) {
      session_.note("  the hand-chosen launch (" + chosen.label() + ") is the best point");
    } else if (outcomes[k].timed && outcomes[k].passed) {
      const double gain = 100.0 * (outcomes[k].median_ms / b.timing.median_ms - 1.0);
      const double precision = 100.0 * session_.timer().rel_precision;
      session_.note("  hand-chosen (" + chosen.label() + "): " + rate_text(*records[k]) + "; the best point is " +
                    strprintf("%.1f%% faster", gain) +
                    (gain <= precision ? strprintf(", within the timer's ±%.0f%%: no launch found that is surely better",
                                                   precision)
                                       : ""));
    }
    // The five fastest, to see how flat the optimum is.
    std::vector<std::size_t> order;
    for (std::size_t i = 0; i < pts.size(); ++i)
      if (outcomes[i].launched && outcomes[i].timed && outcomes[i].passed) order.push_back(i);
    std::sort(order.begin(), order.end(), [&](std::size_t x, std::size_t y) { return outcomes[x].median_ms < outcomes[y].median_ms; });
    std::string top = "  fastest:";
    for (std::size_t j = 0; j < std::min<std::size_t>(order.size(), 5); ++j)
      top += (j ? "," : "") + std::string(" ") + pts[order[j]].label() +
             strprintf(" %.3f", outcomes[order[j]].median_ms / b.timing.median_ms);
    session_.note(top + " (time / best)");
  } else {
    session_.note(session_.options().check_only ? "  --check-only: nothing was timed, so there is no best point"
                                                : "  no point passed: no best point");
  }
  constexpr std::size_t shown = 12;
  for (std::size_t j = 0; j < std::min(refused.size(), shown); ++j) session_.note("  not launchable: " + refused[j]);
  if (refused.size() > shown) session_.note("  ... and " + std::to_string(refused.size() - shown) + " more not launchable");
  return best ? records[*best] : std::nullopt;
}

// ---- the flag and the program --------------------------------------------------------

std::optional<Record> Tuner::run_grid_stride(const Measurement& m, const GridStrideCase& c) {
  const std::string& variant = m.variant;
  const TunePoint by_hand = hand_chosen(variant);
  return run(variant, m.size, [&](const TunePoint& t) {
    const int block = static_cast<int>(t.at("block"));
    const bool hand = t == by_hand;
    return TuneCase{
        .shape = {.block_threads = block},
        .resources = [&c, block] { return c.resources(block); },
        .measure = [&, t, block, hand](TuneRun how) -> const Record& {
          const auto blocks = hand ? c.hand_blocks()
                                   : static_cast<unsigned>(grid_for(t.at("blocks_per_sm"), how.resources.blocks_per_sm,
                                                                    session_.device().sm_count,
                                                                    ceil_div<std::int64_t>(c.work_items, block)));
          if (sweeping(variant)) how.extra["grid"] = blocks;
          Measurement point = m;
          point.variant = how.variant;
          point.resources = how.resources;
          for (auto& [k, v] : how.extra) point.extra[k] = v;
          point.run = [launch = c.launch, shape = GridStrideLaunch{.blocks = blocks, .block = block, .hand_chosen = hand}](
                          cudaStream_t stream) { launch(shape, stream); };
          return session_.measure(point);
        }};
  });
}

ExtraFlag sweep_flag(const Tuning& tuning) {
  const std::string indent = "\n" + std::string(22, ' ');  // under the help column of --help
  std::string help = "measure every point of a launch-parameter sweep instead of the hand-chosen" + indent +
                     "launch, e.g. \"block=64..1024 blocks_per_sm=0,1,2,4\" (a..b doubles, a..b:+s" + indent +
                     "adds s, lists with commas); \"default\": the lab's own sweep (make tune)." + indent +
                     "Tunable, with the hand-chosen value:";
  for (const auto& v : tuning) {
    help += indent + "  " + v.variant + ":";
    for (const auto& t : v.params)
      help += indent + "    " + t.name + " = " + std::to_string(t.value) + " (" + t.help + ")";
  }
  return {.name = "sweep", .help = help, .kind = ExtraFlag::Kind::text, .default_value = ""};
}

int run_tuned_lab(int argc, char** argv, const LabSpec& spec, const Tuning& tuning,
                  const std::function<void(Session&, Tuner&)>& body) {
  if (std::none_of(spec.flags.begin(), spec.flags.end(), [](const ExtraFlag& f) { return f.name == "sweep"; })) {
    LabSpec with_sweep = spec;
    with_sweep.flags.push_back(sweep_flag(tuning));
    return run_tuned_lab(argc, argv, with_sweep, tuning, body);
  }
  try {
    const Parsed parsed = parse_args(spec, std::span<const char* const>(argv + 1, static_cast<std::size_t>(argc - 1)));
    if (parsed.action == Action::run) plan_sweep(tuning, parsed.options.text("sweep"), parsed.options.variants);
  } catch (const UsageError& e) {
    std::fprintf(stderr, "%s: error: %s\n", spec.name.c_str(), e.what());
    return 2;
  } catch (const std::logic_error& e) {  // the lab's own Tuning is wrong (a default sweep it cannot run)
    std::fprintf(stderr, "%s: internal error: %s\n", spec.name.c_str(), e.what());
    return 3;
  }
  return run_lab(argc, argv, spec, [&](Session& s) {
    Tuner tuner(s, tuning);
    body(s, tuner);
  });
}

}  // namespace cudalabs
