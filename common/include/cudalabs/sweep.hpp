#pragma once
// Launch-parameter sweeps, the course's auto-tuner.
//
// A lab declares which launch parameters of a variant are tunable (a Tuning:
// threads per block, blocks per SM, items per thread — compile-time ones as the
// list of instantiations kernels.cu compiled) and what each is set to by hand.
// `--sweep "block=64..1024 items=1,2,4"` then measures every point of the cross
// product instead of the hand-chosen launch, each point one Session::measure
// (poisoned, traced, checked, timed, re-checked on fresh inputs: nothing a sweep
// measures is trusted less than a normal row), one record per point named
// `float4[block=256,items=2]` with the parameters in its `extra`. Points the
// hardware cannot launch (2048 threads per block, more shared memory than a
// block may have, no block resident per SM by the occupancy API) are listed as
// not launchable and never launched. Under the table: the best point of each
// size, its theoretical occupancy, and how it compares with the hand-chosen one.
//
// Sweep text: parameters separated by spaces, each `name=values`; values a
// comma-separated list of numbers and ranges:
//   64..1024        doubling: 64,128,256,512,1024 (powers of two when a is one)
//   32..256:+32     additive steps: 32,64,...,256
//   1..27:*3        any factor: 1,3,9,27
//   default         (the whole text) each variant's own sweep, what `make tune` runs
//
// Everything here but Tuner and run_tuned_lab is CPU code (tests/unit/test_sweep.cpp).
#include <cstddef>
#include <cstdint>
#include <functional>
#include <map>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "cli.hpp"
#include "device.hpp"
#include "lab.hpp"
#include "report.hpp"

namespace cudalabs {

// ---- what a lab declares --------------------------------------------------------

struct Tunable {
  std::string name;  // block, blocks_per_sm, items
  std::string help;
  std::int64_t value = 0;  // the hand-chosen value: the variant runs with it when not swept
  std::int64_t min = 0, max = std::int64_t{1} << 20;  // beyond these a sweep is refused (exit 2)
  // Not empty: the only values there are, e.g. the items-per-thread instantiations
  // kernels.cu compiled. A sweep asking for another is refused.
  std::vector<std::int64_t> choices;
};

struct TunableVariant {
  std::string variant;
  std::vector<Tunable> params;  // in this order in every point's name
  std::string default_sweep;    // what `--sweep default` (make tune) runs for it
};

using Tuning = std::vector<TunableVariant>;

// The two parameters most launches have, with the usual bounds.
Tunable block_tunable(int hand_chosen);  // threads per block
// grid = this × SMs, never more blocks than the data fills; the hand-chosen
// value 0 means as many as are resident at once (the occupancy API). See grid_for.
Tunable blocks_per_sm_tunable();

// The common case, a grid-stride kernel: threads per block (the kernel file's
// own, `hand_chosen_block`, by hand) and blocks per SM (as many as are resident,
// by hand). Run it with Tuner::run_grid_stride.
TunableVariant grid_stride_tunable(std::string variant, int hand_chosen_block, std::string default_sweep);

// ---- the sweep text ----------------------------------------------------------------

struct SweepAxis {
  std::string name;
  std::vector<std::int64_t> values;  // ascending, each once
};

// One parameter's values ("64..1024", "1,2,4", "32..256:+32"). Throws UsageError.
std::vector<std::int64_t> parse_sweep_values(const std::string& name, const std::string& text);
// The whole text, in the order written. Throws UsageError naming the bad part and a fix.
std::vector<SweepAxis> parse_sweep(const std::string& text);

// ---- points ------------------------------------------------------------------------

struct TunePoint {
  std::vector<std::pair<std::string, std::int64_t>> values;  // the variant's params, in its order

  // Throws std::logic_error for a name the variant does not declare (a lab bug).
  std::int64_t at(const std::string& name) const;
  std::string label() const;  // "block=256,items=2"
  bool operator==(const TunePoint&) const = default;
};

TunePoint hand_chosen(const TunableVariant& v);
// "float4[block=256,items=2]": the variant name of a swept point's record.
std::string point_variant_name(const std::string& variant, const TunePoint& p);

inline constexpr std::size_t max_sweep_points = 1024;

// The cross product for one variant: the axes the sweep names (each must be one of
// its params, values within its bounds or choices), the other params at their
// hand-chosen values; the first param varies slowest. Throws UsageError.
std::vector<TunePoint> sweep_points(const TunableVariant& v, const std::vector<SweepAxis>& axes);

// Which selected variants (`selected` as --variant gave them; empty: all) a sweep
// text covers, and their points. A variant that lacks a parameter the text names
// keeps its hand-chosen launch (said in `notes`); when no selected variant has them
// all, or the text is bad, UsageError. Empty text: no sweep.
struct SweepPlan {
  std::vector<std::pair<std::string, std::vector<TunePoint>>> points;  // swept variants only
  std::vector<std::string> notes;
  bool active() const { return !points.empty(); }
  const std::vector<TunePoint>* of(const std::string& variant) const;
};
SweepPlan plan_sweep(const Tuning& tuning, const std::string& text, const std::vector<std::string>& selected);

// ---- what the hardware can launch -----------------------------------------------------

struct LaunchShape {
  std::int64_t block_threads = 0;  // all dimensions multiplied
  std::int64_t grid_blocks = 0;    // 0: decided later, from the occupancy API
  std::size_t dynamic_smem = 0;
};

struct LaunchLimits {
  std::int64_t threads_per_block = 1024;  // every GPU since compute capability 2.0
  std::size_t smem_per_block = 48 * 1024;  // static + dynamic; more only for kernels that opt in
  std::int64_t registers_per_block = 64 * 1024;
  std::int64_t grid_blocks = 2147483647;  // gridDim.x
};
// Of `d`; `smem_opt_in`: the kernel asked for more than 48 KB (cudaFuncSetAttribute).
LaunchLimits launch_limits(const DeviceInfo& d, bool smem_opt_in);

// Why this launch cannot run ("" when it can): "2048 threads per block > 1024",
// too much shared memory, too many registers, a grid too large, or, given the
// kernel's resources, no block resident per SM. Without `resources` only what the
// shape alone decides (called before asking the occupancy API).
std::string launch_problem(const LaunchShape& shape, const LaunchLimits& limits,
                           const KernelResources* resources = nullptr);

// ---- grids and residency ------------------------------------------------------------

// Blocks of a grid-stride launch: `blocks_per_sm` × SMs, or with 0 as many as are
// resident at once (`resident_per_sm`, from the occupancy API); never more than
// the `work_blocks` the data fills, at least 1.
std::int64_t grid_for(std::int64_t blocks_per_sm, int resident_per_sm, int sm_count, std::int64_t work_blocks);

// Dynamic shared memory (bytes) that leaves room for at most `blocks` resident
// blocks per SM: each block's share of the SM's `smem_per_sm`, rounded down to the
// allocation granularity, less what the block holds already (static shared memory
// and the driver's reserved bytes). 0 when `blocks` is 0 (no limit) or when that
// many blocks fit anyway. A kernel that does not use dynamic shared memory runs
// unchanged; only fewer of its blocks share an SM.
std::size_t smem_for_residency(int blocks, std::size_t static_smem, std::size_t smem_per_sm,
                               std::size_t reserved_per_block = 1024, std::size_t granularity = 128);

// ---- the best point ------------------------------------------------------------------

struct PointOutcome {
  bool launched = false;  // false: not launchable
  bool passed = false;
  bool timed = false;
  double median_ms = 0;
};
// The fastest timed point that passed (the first of equals); none when nothing was timed.
std::optional<std::size_t> best_point(const std::vector<PointOutcome>& outcomes);

// ---- running a sweep (needs the GPU) ----------------------------------------------

// How the Tuner wants one launchable point measured: the lab passes these to
// Session::measure as the Measurement's variant, resources and extra (it may add
// entries of its own to extra, e.g. the grid it computed).
struct TuneRun {
  std::string variant;  // "float4[block=256,blocks_per_sm=0]", or plainly "float4" when not swept
  KernelResources resources;
  std::map<std::string, double> extra;  // the point's parameters and occupancy when swept; empty otherwise
};

// What a lab supplies for one point.
struct TuneCase {
  LaunchShape shape;         // checked first: nothing is asked of the GPU for a shape that cannot launch
  bool smem_opt_in = false;  // the kernel is allowed more than 48 KB of shared memory
  std::function<KernelResources()> resources;  // the occupancy API at this point
  // Measures the point with Session::measure (or a lab helper that calls it) and
  // returns its record: run, check, poison, new_inputs as for any variant, the
  // launch from the point (and resources.blocks_per_sm for a grid that fills the GPU).
  // `how` comes by value: move its extra into the Measurement (.extra = std::move(how.extra)).
  std::function<const Record&(TuneRun how)> measure;
};

// One size of a grid-stride variant declared with grid_stride_tunable, for
// Tuner::run_grid_stride: what its grid strides over, the kernel file's own
// grid, and the two launchers (the kernel file's own, or a shape from the sweep).
struct GridStrideLaunch {
  unsigned blocks = 0;
  int block = 0;
  bool hand_chosen = true;  // the kernel file's own launch: call its own launcher
};
struct GridStrideCase {
  std::int64_t work_items = 0;  // what the threads stride over: the grid never has more blocks than fill it
  std::function<unsigned()> hand_blocks;                // the kernel file's own grid; asked outside the timed runs
  std::function<KernelResources(int block)> resources;  // the kernel at `block` threads per block
  std::function<void(const GridStrideLaunch&, cudaStream_t)> launch;  // enqueue only, never synchronise
};

class Tuner {
 public:
  // `tuning` must outlive the Tuner. The sweep comes from --sweep (checked by run_tuned_lab).
  Tuner(Session& session, const Tuning& tuning);

  bool sweeping(const std::string& variant) const { return plan_.of(variant) != nullptr; }
  // The points of `variant` in this run: the sweep's, or its one hand-chosen launch
  // (then its record is named plainly, `float4`, as without the tuner).
  std::vector<TunePoint> points(const std::string& variant) const;
  TunePoint hand_chosen(const std::string& variant) const;

  // Measures every point of `variant` at `size`; notes the best point and the ones
  // that cannot launch. Returns the best point's record (the one record when not
  // swept); none when nothing passed or nothing was timed.
  std::optional<Record> run(const std::string& variant, const Point& size,
                            const std::function<TuneCase(const TunePoint&)>& make);

  // run() for a grid-stride variant (grid_stride_tunable): `m` as for
  // Session::measure without run and resources (variant, size, work, check,
  // poison, new_inputs...). Each point launches `block` threads × grid_for(
  // blocks_per_sm, ...) blocks, the hand-chosen one the kernel file's own grid;
  // a swept record's extra names its grid.
  std::optional<Record> run_grid_stride(const Measurement& m, const GridStrideCase& c);

 private:
  Session& session_;
  const Tuning& tuning_;
  SweepPlan plan_;
  const TunableVariant& declared(const std::string& variant) const;
};

// The lab's --sweep flag (kind text), its help naming every tunable variant and parameter.
ExtraFlag sweep_flag(const Tuning& tuning);

// run_lab, with the sweep text checked before the device is opened (a bad --sweep
// exits 2 on any machine) and a Tuner for the body. The lab's --sweep flag is
// sweep_flag(tuning), added to `spec` when the lab does not list it itself.
int run_tuned_lab(int argc, char** argv, const LabSpec& spec, const Tuning& tuning,
                  const std::function<void(Session&, Tuner&)>& body);

}  // namespace cudalabs
