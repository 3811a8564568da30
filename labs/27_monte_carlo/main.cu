// Lab 27 — Monte Carlo with cuRAND: make the random numbers where they are used.
//
// Two estimates by random sampling, each made two ways. The cuRAND host API
// (curandGenerateUniform / curandGenerateNormal on the session's stream) fills a
// device buffer with random numbers and a kernel reads them back: every number
// crosses DRAM twice, 4 bytes written and 4 read. The device API gives every
// thread its own Philox generator in registers, and the numbers are used as they
// are made: no buffer, no DRAM traffic, only arithmetic.
//
// An estimate is random, so its check is statistical: it passes when it lies
// within k standard errors of the exact value (pi; the Black–Scholes price), the
// standard error from the variance known in closed form. k is chosen so that a
// correct kernel fails fewer than one check in a million (see allowed_errors).
// That holds the estimate's mean, not its variance: a fused variant's timed
// runs each draw from a seed of their own (with --check-only, 128 runs from
// seeds of their own do), and their estimates may vary no more than those of n
// independent samples do (see timed_spread): drawing n / 4 samples and
// counting each 4 times fails there.
// --biased adds pi_biased, whose threads all draw the same numbers: it must fail.
//
// Variants (pi: sizes are samples; option: paths; philox_init: states):
//   pi_host_api      curandGenerateUniform (2 per sample) into DRAM, then a counting kernel (baseline)
//   pi_fused         per-thread Philox states: init, draw and count in one kernel
//   philox_init      the per-thread state initialisation alone, states stored: what pi_fused pays first
//   option_host_api  curandGenerateNormal (1 per path) into DRAM, then a payoff kernel (baseline)
//   option_fused     per-thread Philox states: normals, one GBM step, payoff sums in one kernel
//
// Run: make run LAB=27   (2^24 and 2^30 samples and paths; --s0 --strike --rate --sigma --maturity set the option)
#include <cuda_runtime_api.h>
#include <curand.h>
#include <curand_kernel.h>

#include <cub/block/block_reduce.cuh>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <functional>
#include <limits>
#include <map>
#include <numbers>
#include <optional>
#include <span>
#include <string>
#include <vector>

#include <cudalabs/lab.hpp>
#include <cudalabs/math.hpp>
#include <cudalabs/random.hpp>

#include "kernels.hpp"

namespace {

// ---- CPU reference: exact values and standard errors ----------------------------

// The option, from the lab's flags. One step to maturity T:
// S_T = S0 exp((r - sigma^2/2) T + sigma sqrt(T) Z), Z standard normal.
struct CallOption {
  double s0, strike, rate, sigma, maturity;
  double drift() const { return (rate - 0.5 * sigma * sigma) * maturity; }
  double vol() const { return sigma * std::sqrt(maturity); }
  double discount() const { return std::exp(-rate * maturity); }
};

double normal_cdf(double x) { return 0.5 * std::erfc(-x / std::numbers::sqrt2); }

// The discounted payoff X = e^{-rT} max(S_T - K, 0): its mean (the Black–Scholes
// price), variance and skewness, in closed form. With d2 = (ln(S0/K) + drift) / vol,
//   E[S_T^m 1{S_T > K}] = S0^m exp(m drift + m^2 vol^2 / 2) N(d2 + m vol),
// and E[(S_T - K)^j 1{S_T > K}] expands into those for m = 0..j. For m = 1 this
// is S0 e^{rT} N(d1), d1 = d2 + vol, so the mean is S0 N(d1) - K e^{-rT} N(d2).
struct PayoffMoments {
  double mean = 0, variance = 0, skewness = 0;
  double excess_kurtosis = 0;  // E[(X - mean)^4] / variance^2 - 3: how far the tails reach (0 for a normal)
};

PayoffMoments payoff_moments(const CallOption& o) {
  const double vol = o.vol(), d2 = (std::log(o.s0 / o.strike) + o.drift()) / vol, k = o.strike;
  double e[5];
  for (int m = 0; m < 5; ++m)
    e[m] = std::pow(o.s0, m) * std::exp(m * o.drift() + 0.5 * m * m * vol * vol) * normal_cdf(d2 + m * vol);
  const double d = o.discount();
  const double raw1 = d * (e[1] - k * e[0]);
  const double raw2 = d * d * (e[2] - 2 * k * e[1] + k * k * e[0]);
  const double raw3 = d * d * d * (e[3] - 3 * k * e[2] + 3 * k * k * e[1] - k * k * k * e[0]);
  const double raw4 = d * d * d * d * (e[4] - 4 * k * e[3] + 6 * k * k * e[2] - 4 * k * k * k * e[1] + k * k * k * k * e[0]);
  PayoffMoments p;
  p.mean = raw1;
  p.variance = raw2 - raw1 * raw1;
  p.skewness = (raw3 - 3 * raw1 * raw2 + 2 * raw1 * raw1 * raw1) / std::pow(p.variance, 1.5);
  const double central4 = raw4 - 4 * raw1 * raw3 + 6 * raw1 * raw1 * raw2 - 3 * raw1 * raw1 * raw1 * raw1;
  p.excess_kurtosis = central4 / (p.variance * p.variance) - 3;
  return p;
}

// pi = 4 P(inside), P(inside) = pi / 4 exactly: the standard error of 4 x the
// fraction inside is 4 sqrt(p (1 - p) / n), from the Bernoulli variance.
double pi_standard_error(std::int64_t n) {
  const double p = std::numbers::pi / 4;
  return 4 * std::sqrt(p * (1 - p) / static_cast<double>(n));
}

// One draw's excess kurtosis, (1 - 6 p (1 - p)) / (p (1 - p)) for a Bernoulli
// draw: -0.07, tails a little lighter than a normal's.
double pi_draw_excess_kurtosis() {
  const double p = std::numbers::pi / 4;
  return (1 - 6 * p * (1 - p)) / (p * (1 - p));
}

// How many standard errors an estimate may be off. A correct kernel's estimate
// is off by more than k SE with probability P(|Z| > k) when the mean of n draws is
// normal: 2e-9 for k = 6, where k = 5 would give 6e-7. But at small n it is not:
//   pi: the count inside is Binomial(n, pi/4). Exact tails (summed over the
//     binomial pmf for every n < 3000) give P(|err| > 5 SE) up to 2.1e-5 (n = 7:
//     all 7 samples outside is 5.1 SE away) and P(|err| > 6 SE) at most 2.1e-7
//     (n = 10), ~2e-9 from n = 3000 on. So k = 6 at every n.
//   option: payoffs are skewed (skewness 1.79 at the default parameters: many
//     zeros, a long right tail), and the mean of a few is far from normal: one
//     path is > 6 SD above the price with probability 5e-4. The skew's effect on
//     the tail of a mean of n fades like skewness / sqrt(n); at n >= 100 skewness^2
//     (320 paths at the defaults) we take k = 6 (a simulation at n = 320 found
//     P(|err| > 4.5 SE) = 1.4e-5 against the normal 6.8e-6: the tail is heavier,
//     not by the ~500x that would bring 2e-9 up to 1e-6). Below that, k = 1000:
//     Chebyshev's inequality, P(|err| >= k SE) <= 1 / k^2 = 1e-6 for any
//     distribution, at the cost of a check that catches only gross errors.
// A biased kernel fails when its bias exceeds k SE: at 2^24 samples 6 SE of pi is
// 0.0024, and pi_biased's error is at least 0.0166 (below).
struct Allowed {
  double k;
  const char* why;
};
inline constexpr double normal_k = 6, chebyshev_k = 1000;

Allowed allowed_errors_pi() { return {normal_k, "binomial tails: <= 2.1e-7 false failures per check"}; }

Allowed allowed_errors_option(std::int64_t n, double skewness) {
  if (static_cast<double>(n) >= 100 * skewness * skewness) return {normal_k, "near-normal mean"};
  return {chebyshev_k, "few paths of a skewed payoff: Chebyshev's bound"};
}

// One estimate against its exact value: passes within k standard errors.
// `judged`, where given, receives the estimate checked (in a judge, the graded
// program's).
cudalabs::CheckResult check_estimate(const std::string& variant, double estimate, double exact, double standard_error,
                                     const Allowed& allowed, double* judged = nullptr) {
  // The estimate is what the run produced (the accumulated sums, finished
  // here): observed for a judge (cudalabs/evidence.hpp), which checks the
  // graded program's.
  if (std::string missing = cudalabs::observe_in_place(std::span<double>(&estimate, 1)); !missing.empty())
    return cudalabs::missing_output(1, missing);
  if (judged) *judged = estimate;
  cudalabs::CheckResult r;
  r.count = 1;
  r.tolerance = {.abs = allowed.k * standard_error, .rel = 0};
  const double err = std::fabs(estimate - exact);
  r.max_abs_err = std::isfinite(err) ? err : std::numeric_limits<double>::infinity();
  r.rel_l2_err = r.max_abs_err / std::fabs(exact);
  r.passed = std::isfinite(estimate) && err <= allowed.k * standard_error;
  if (!r.passed) {
    r.bad = 1;
    r.first_bad = {{.index = 0, .got = estimate, .expected = exact}};
    char note[256];
    std::snprintf(note, sizeof note, "%s: estimate %.9g is %.3g standard errors (%.3g) from the exact %.9g; %g allowed (%s)",
                  variant.c_str(), estimate, err / standard_error, standard_error, exact, allowed.k, allowed.why);
    r.note = note;
  }
  return r;
}

// A new seed must change a price. An estimator that ignores its seed (a
// constant seed in the kernel, or a price kept from an earlier call) passes
// every statistical check, with one answer for every seed: the fresh-input
// check (new seed) then gives the same price as the check before it. A price
// is a sum of continuous payoffs, so two seeds agree only if the paths do; a
// zero price (no path paid) is left alone. Pi is not held to this: its
// estimate is a count of hits, and two seeds agree on it too often (about once
// in a thousand at 2^20 samples) to fail anyone for.
struct SeedWatch {
  int draw = -1;       // the inputs drawn (new_inputs calls) when last checked
  double price = 0;    // the price checked then
};

cudalabs::CheckResult held_to_new_seed(cudalabs::CheckResult r, SeedWatch& watch, int draw, double price,
                                       const std::string& variant) {
  if (r.passed && watch.draw >= 0 && watch.draw != draw && price != 0 && price == watch.price) {
    r.passed = false;
    r.bad = 1;
    char note[256];
    std::snprintf(note, sizeof note,
                  "%s: the same price %.17g after a new seed as before it: the paths do not follow the seed "
                  "(a constant seed, or a price kept from an earlier call)",
                  variant.c_str(), price);
    r.note = note;
  }
  watch = {draw, price};
  return r;
}

// The spread. The check above holds one estimate to the exact value within k
// of ITS standard error; it cannot see an estimator whose variance is larger
// than n independent samples give. One that draws n / 4 samples and scales its
// count by 4 has twice the standard error, so 6 of the true SE are 3 of its
// own: it fails in 0.3% of runs, at a quarter of the work. Samples reused or
// correlated between threads do the same. So the variance s^2 of many
// estimates of a fused variant, each from a seed of its own, at the size
// measured, is compared with sigma^2, that of the mean of n independent draws
// (pi: 16 p (1 - p) / n; the option: the payoff's variance / n, both in closed
// form). For S normal estimates (S - 1) s^2 / sigma^2 is chi-square with S - 1
// degrees of freedom; at S = 128, P(s^2 / sigma^2 > 1.72) = 8.3e-7: fewer than
// 1e-6 false failures per check. For S estimates the bound is recomputed at the
// same rate (variance_ratio_bound: 1.48 at S = 256). A variance r times sigma^2
// fails with P(chi2_127 > 127 x 1.72 / r) at S = 128: 12% at r = 1.5, 87% at
// r = 2, and at r = 4 (a quarter of the samples) all but 2.4e-9 of the time.
// A variance below sigma^2 passes: antithetic paths (exercise 4) give one, and
// are no shortcut.
//
// Which estimates. A check on runs of its own holds only what a launcher does
// in them, and a launcher can tell them from the timed runs (their seeds, the
// count of its calls). So where the variant is timed, the estimates are those
// of its timed runs themselves: every run the timer makes, warm-up ones too,
// from a seed of its own (cudalabs::timed_run_seed of the measured seed and the
// run's index, set before the run's poison, outside the events), each timed
// run's estimate read back after its stop event, at least timed_spread_runs of
// them whatever the timer's budget (Measurement::timed_runs). Whatever the
// launcher does in its timed runs is what the spread holds: a quarter of the
// samples on a share f of them makes r = 1 + 3f (f = 1/3 saves a quarter of the
// time and fails 87% of gradings at 128 runs). With --check-only nothing is
// timed, and the variant is run from spread_seeds seeds of its own instead
// (mix_seed(its seed, 1 .. 128)), in its first check: the grader's correctness
// runs are all --check-only, at sizes and option parameters the benchmark
// never times. Either way the estimates are observed, and a judge computes the
// spread from the graded program's.
//
// The estimates are near normal only where the mean of n draws has a small
// excess kurtosis, kappa / n for kappa that of one draw: the variance of s^2
// grows by the factor 1 + kappa / 2n, which at kappa / n = 1e-3 takes the
// 8.3e-7 above to 8.4e-7 (a chi-square matched in mean and variance). So the
// check runs at n >= 1000 max(1, |kappa|): pi (kappa = -0.07) from n = 1000;
// the option at the default parameters (kappa = 3.6) from n = 3645; a call
// that pays on one path in 2200 (S0 100, K 200: kappa = 12809) from 1.3e7
// paths; sigma = 1 over 5 years (kappa = 5e8) at no size the lab allows.
// It runs at the size measured, not at a smaller one: a kernel may cut its
// samples at the benchmark's sizes only. Its cost: 128 runs per size, one
// (2^30 samples: 128 x 1.9 ms for pi_fused on an H200,
// results/h200/grade-submission-60094bc), the timed runs where they are the
// estimates, which the timer would otherwise stop at 10 runs of that size.
inline constexpr int spread_seeds = 128;
inline constexpr int timed_spread_runs = 128;
inline constexpr double spread_high_128 = 1.72;

// The false failures the bound allows: P(chi2_127 > 127 x 1.72) = 8.3e-7,
// whatever the number of estimates.
double spread_false_failures() { return cudalabs::chi_square_tail(127 * spread_high_128, 127); }

// Whether the spread of n-draw estimates may be held to the chi-square: one
// draw has a variance and its kurtosis is small next to n (above).
bool spread_checked_at(std::int64_t n, double variance, double excess_kurtosis) {
  return variance > 0 && std::isfinite(excess_kurtosis) &&
         static_cast<double>(n) >= 1000 * std::max(1.0, std::fabs(excess_kurtosis));
}

// One fused variant's spread check at one size.
struct SpreadCheck {
  bool applies = false;
  double variance = 0;  // of one estimate: sigma^2 / n
  double exact = 0;     // what is estimated: pi, the Black-Scholes price
  bool done = false;
  double ratio = -1;    // s^2 / variance, once made
  double bound = 0;     // the ratio allowed for this many estimates
  int estimates = 0;
  bool timed = false;   // over the timed runs, or over seeds of its own (--check-only)
  double seconds = 0;   // the seeds' runs' wall time: what the check adds to a run
};

// The spread of `estimates` (already observed), and their mean: of S
// estimates of n draws each, the mean is one of S n draws, held within
// normal_k of its standard error (the spread only applies where n alone is
// near normal, so S n is).
cudalabs::CheckResult hold_spread(const std::string& variant, std::int64_t n, std::span<const double> estimates,
                                  SpreadCheck& spread) {
  const auto count = static_cast<int>(estimates.size());
  const char* of = spread.timed ? "timed runs (a seed of its own each)" : "seeds";
  cudalabs::CheckResult c;
  c.count = estimates.size();
  char note[640];
  if (count < (spread.timed ? timed_spread_runs : spread_seeds)) {
    std::snprintf(note, sizeof note, "%s: the estimates of %d %s, where the spread needs %d", variant.c_str(), count, of,
                  spread.timed ? timed_spread_runs : spread_seeds);
    c.note = note;
    return c;
  }
  double mean = 0, squares = 0;
  for (double e : estimates) mean += e / count;
  for (double e : estimates) squares += (e - mean) * (e - mean);
  spread.estimates = count;
  spread.ratio = squares / (count - 1) / spread.variance;
  spread.bound = cudalabs::variance_ratio_bound(count - 1, spread_false_failures());
  const double mean_se = std::sqrt(spread.variance / count);
  const bool spread_ok = spread.ratio <= spread.bound;  // NaN fails
  const bool mean_ok = std::fabs(mean - spread.exact) <= normal_k * mean_se;
  c.passed = spread_ok && mean_ok;
  if (!spread_ok)
    std::snprintf(note, sizeof note,
                  "%s: the estimates of %d %s vary %.3gx as much as those of n = %lld independent samples "
                  "(variance %.3g against %.3g); at most %.3fx allowed (chi-square, %d degrees of freedom: fewer "
                  "than 1e-6 false failures) — fewer samples drawn than counted, or samples reused or correlated?",
                  variant.c_str(), count, of, spread.ratio, static_cast<long long>(n), squares / (count - 1),
                  spread.variance, spread.bound, count - 1);
  else if (!mean_ok)
    std::snprintf(note, sizeof note,
                  "%s: the mean %.9g of the estimates of %d %s is %.3g of its standard errors (%.3g) from the "
                  "exact %.9g; %g allowed",
                  variant.c_str(), mean, count, of, std::fabs(mean - spread.exact) / mean_se, mean_se, spread.exact,
                  normal_k);
  if (!c.passed) c.note = note;
  return c;
}

// `check` of a fused variant, and with --check-only, in its first call, the
// spread over seeds of its own: `estimate_from(seed)` runs the variant once
// from `seed` (its launcher as measured: the same n, grid, output and stream)
// and returns its estimate.
std::function<cudalabs::CheckResult()> with_spread(std::function<cudalabs::CheckResult()> check, SpreadCheck& spread,
                                                   const std::string& variant, std::int64_t n,
                                                   const std::uint64_t& seed,
                                                   std::function<double(std::uint64_t)> estimate_from) {
  return [check = std::move(check), &spread, variant, n, &seed, estimate_from = std::move(estimate_from)] {
    cudalabs::CheckResult r = check();
    if (!spread.applies || spread.timed || spread.done) return r;
    spread.done = true;
    std::vector<double> estimates(spread_seeds);
    const std::uint64_t from = seed;
    const auto start = std::chrono::steady_clock::now();
    for (int i = 0; i < spread_seeds; ++i) estimates[i] = estimate_from(cudalabs::mix_seed(from, 1 + i));
    spread.seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
    // The estimates compared, observed for a judge (cudalabs/evidence.hpp).
    if (std::string missing = cudalabs::observe_in_place(std::span(estimates)); !missing.empty())
      return cudalabs::both(r, cudalabs::missing_output(spread_seeds, missing));
    return cudalabs::both(r, hold_spread(variant, n, estimates, spread));
  };
}

// The spread over the timed runs (where the variant is timed): every run from
// timed_run_seed(measured, run) in `seed`, each timed run's estimate
// (`estimate()`, the accumulator read back) kept; after timing, their spread.
// A judge times nothing: it takes the graded program's estimates, as many as
// it kept.
cudalabs::Measurement::TimedRuns timed_spread(std::uint64_t& seed, SpreadCheck& spread, std::vector<double>& kept,
                                              const std::string& variant, std::int64_t n,
                                              std::function<double()> estimate) {
  cudalabs::Measurement::TimedRuns t;
  if (!spread.applies || !spread.timed) return t;
  const std::uint64_t measured = seed;
  t.at_least = timed_spread_runs;
  t.inputs = [&seed, measured](int run) { seed = cudalabs::timed_run_seed(measured, run); };
  t.after = [&kept, estimate = std::move(estimate)](int) { kept.push_back(estimate()); };
  t.check = [&kept, &spread, variant, n] {
    if (std::string missing = cudalabs::observe_vector(kept); !missing.empty())
      return cudalabs::missing_output(kept.size(), missing);
    return hold_spread(variant, n, kept, spread);
  };
  return t;
}

// with_spread's estimate_from: `run` (the variant's launcher as measured) once
// from seed `from` in place of the measured `seed`, which it puts back, its
// accumulator zeroed first; the device waited for (a launcher's other streams
// too); `estimate_of` the accumulator.
template <typename T, typename Estimate>
std::function<double(std::uint64_t)> run_from_seed(std::uint64_t& seed, cudalabs::DeviceBuffer<T>& accumulator,
                                                   std::function<void(cudaStream_t)> run, cudaStream_t stream,
                                                   Estimate estimate_of) {
  return [&seed, &accumulator, run = std::move(run), stream, estimate_of](std::uint64_t from) {
    const std::uint64_t measured = seed;
    seed = from;
    accumulator.zero(stream);
    run(stream);
    CUDALABS_CHECK(cudaDeviceSynchronize());
    seed = measured;
    return estimate_of(accumulator.download());
  };
}

// The note of a spread check that was made.
void note_spread(cudalabs::Session& s, const cudalabs::Point& size, const std::string& variant,
                 const SpreadCheck& spread) {
  if (spread.ratio < 0) return;
  char line[320];
  if (spread.timed)
    std::snprintf(line, sizeof line,
                  "%s %s: the estimates of its %d timed runs (a seed of its own each) vary %.3fx as much as n "
                  "independent samples' (at most %.3fx allowed)",
                  cudalabs::to_string(size).c_str(), variant.c_str(), spread.estimates, spread.ratio, spread.bound);
  else
    std::snprintf(line, sizeof line,
                  "%s %s: the estimates of %d seeds vary %.3fx as much as n independent samples' (at most %.3fx "
                  "allowed; %d runs, %.3f s)",
                  cudalabs::to_string(size).c_str(), variant.c_str(), spread.estimates, spread.ratio, spread.bound,
                  spread.estimates, spread.seconds);
  s.note(line);
}

// ---- course kernels: the host-API path's consumers, and the checkers' helpers --------

inline constexpr int tally_block = 256;

// Adds `value` over the block, then thread 0 adds the block's total to *total:
// one atomic per block. Safe to call more than once in a kernel (its barrier
// first: the scratch may still be read by the call before).
template <typename T>
__device__ void add_block_total(T value, T* total) {
  using BlockSum = cub::BlockReduce<T, tally_block>;
  __shared__ typename BlockSum::TempStorage scratch;
  __syncthreads();
  const T block_total = BlockSum(scratch).Sum(value);
  if (threadIdx.x == 0) atomicAdd(total, block_total);
}

__device__ __forceinline__ unsigned inside_quarter_circle(float x, float y) { return x * x + y * y <= 1.0f ? 1u : 0u; }

__device__ __forceinline__ float gbm_call_payoff(float z, float s0, float strike, float drift, float vol) {
  return fmaxf(s0 * expf(fmaf(vol, z, drift)) - strike, 0.0f);
}

// pi_host_api's consumer: sample i is (u[2i], u[2i+1]); a float4 holds two.
// Grid-stride, unrolled by 4 so each thread has 4 16-byte loads in flight:
// DRAM-bound, as a fair baseline must be.
__global__ void __launch_bounds__(tally_block) count_inside_kernel(const float* __restrict__ u, std::int64_t n,
                                                                   unsigned long long* hits) {
  const auto* pairs = reinterpret_cast<const float4*>(u);
  const std::int64_t threads = static_cast<std::int64_t>(gridDim.x) * tally_block;
  const std::int64_t first = static_cast<std::int64_t>(blockIdx.x) * tally_block + threadIdx.x;
  unsigned inside = 0;
#pragma unroll 4
  for (std::int64_t i = first; i < n / 2; i += threads) {
    const float4 v = pairs[i];
    inside += inside_quarter_circle(v.x, v.y) + inside_quarter_circle(v.z, v.w);
  }
  if (n % 2 != 0 && first == 0) inside += inside_quarter_circle(u[2 * n - 2], u[2 * n - 1]);
  add_block_total(static_cast<unsigned long long>(inside), hits);
}

// option_host_api's consumer: one normal per path. Four payoffs are added in
// float, then into a double (one FP64 add per 4 paths: free next to the DRAM).
__global__ void __launch_bounds__(tally_block) payoff_sums_kernel(const float* __restrict__ z, std::int64_t n, float s0,
                                                                  float strike, float drift, float vol, double* sums) {
  const auto* quads = reinterpret_cast<const float4*>(z);
  const std::int64_t threads = static_cast<std::int64_t>(gridDim.x) * tally_block;
  const std::int64_t first = static_cast<std::int64_t>(blockIdx.x) * tally_block + threadIdx.x;
  double sum = 0.0, sum_sq = 0.0;
  auto add = [&](float x0, float x1, float x2, float x3) {
    const float p[4] = {gbm_call_payoff(x0, s0, strike, drift, vol), gbm_call_payoff(x1, s0, strike, drift, vol),
                        gbm_call_payoff(x2, s0, strike, drift, vol), gbm_call_payoff(x3, s0, strike, drift, vol)};
    sum += (p[0] + p[1]) + (p[2] + p[3]);
    sum_sq += (p[0] * p[0] + p[1] * p[1]) + (p[2] * p[2] + p[3] * p[3]);
  };
#pragma unroll 4
  for (std::int64_t i = first; i < n / 4; i += threads) {
    const float4 v = quads[i];
    add(v.x, v.y, v.z, v.w);
  }
  // The last n % 4 normals: the first n % 4 threads take one each. A
  // payoff of z = -inf is 0, so the padding lanes add nothing.
  constexpr float none = -std::numeric_limits<float>::infinity();
  if (first < n % 4) add(z[4 * (n / 4) + first], none, none, none);
  add_block_total(sum, &sums[0]);
  add_block_total(sum_sq, &sums[1]);
}

// The deliberately wrong estimator of --biased: every thread calls
// curand_init(seed, 0, 0), so every thread draws the same 64 samples. Its
// estimate is 4 h / 64 for the count h of ONE thread: a multiple of 1/16, the
// nearest to pi (3.125) 0.0166 away, while 6 standard errors at 2^24 samples are
// 0.0024. It fails at any seed, which is what the test needs to show.
inline constexpr int biased_samples_per_thread = 64;

__global__ void __launch_bounds__(tally_block) pi_same_numbers_kernel(unsigned long long seed, std::int64_t n,
                                                                      unsigned long long* hits) {
  const std::int64_t first = (static_cast<std::int64_t>(blockIdx.x) * tally_block + threadIdx.x) * biased_samples_per_thread;
  const std::int64_t mine = n - first < biased_samples_per_thread ? n - first : biased_samples_per_thread;
  curandStatePhilox4_32_10_t state;
  curand_init(seed, 0, 0, &state);  // the bug: subsequence 0 in every thread
  unsigned inside = 0;
  for (std::int64_t sample = 0; sample < mine; sample += 2) {
    const float4 u = curand_uniform4(&state);
    inside += inside_quarter_circle(u.x, u.y) + (sample + 1 < mine ? inside_quarter_circle(u.z, u.w) : 0u);
  }
  add_block_total(static_cast<unsigned long long>(inside), hits);
}

// philox_init's check: state t must continue exactly as curand_init(seed, t, 0)
// does. Compares the next 8 numbers drawn from each and the Box-Muller flags
// (a set flag would make the next normal a stale one).
__global__ void __launch_bounds__(tally_block) count_wrong_states_kernel(const curandStatePhilox4_32_10_t* states,
                                                                         std::int64_t count, unsigned long long seed,
                                                                         unsigned long long* wrong) {
  const std::int64_t threads = static_cast<std::int64_t>(gridDim.x) * tally_block;
  unsigned long long bad = 0;
  for (std::int64_t t = static_cast<std::int64_t>(blockIdx.x) * tally_block + threadIdx.x; t < count; t += threads) {
    curandStatePhilox4_32_10_t got = states[t], want;
    curand_init(seed, static_cast<unsigned long long>(t), 0, &want);
    bool same = got.boxmuller_flag == want.boxmuller_flag && got.boxmuller_flag_double == want.boxmuller_flag_double;
    for (int draw = 0; draw < 2; ++draw) {
      const uint4 a = curand4(&got), b = curand4(&want);
      same = same && a.x == b.x && a.y == b.y && a.z == b.z && a.w == b.w;
    }
    bad += same ? 0 : 1;
  }
  add_block_total(bad, wrong);
}

// ---- launchers --------------------------------------------------------------------

// A grid that fills the GPU once (resident blocks of `kernel` x SMs), fewer
// blocks for small work. Asked once per size, outside the timed runs.
template <typename Kernel>
unsigned tally_blocks(Kernel* kernel, std::int64_t work_items) {
  const std::int64_t resident = static_cast<std::int64_t>(cudalabs::resources_of(kernel, tally_block).blocks_per_sm) *
                                cudalabs::current_device().sm_count;
  return static_cast<unsigned>(
      std::clamp<std::int64_t>(cudalabs::ceil_div<std::int64_t>(work_items, tally_block), 1, std::max<std::int64_t>(resident, 1)));
}

void count_inside(const float* u, std::int64_t n, unsigned blocks, unsigned long long* hits, cudaStream_t stream) {
  count_inside_kernel<<<blocks, tally_block, 0, stream>>>(u, n, hits);
  CUDALABS_CHECK_LAUNCH("count_inside_kernel");
}

void payoff_sums(const float* z, std::int64_t n, const CallOption& o, unsigned blocks, double* sums,
                 cudaStream_t stream) {
  payoff_sums_kernel<<<blocks, tally_block, 0, stream>>>(
      z, n, static_cast<float>(o.s0), static_cast<float>(o.strike), static_cast<float>(o.drift()),
      static_cast<float>(o.vol()), sums);
  CUDALABS_CHECK_LAUNCH("payoff_sums_kernel");
}

void pi_same_numbers(unsigned long long seed, std::int64_t n, unsigned long long* hits, cudaStream_t stream) {
  const auto blocks = static_cast<unsigned>(
      cudalabs::ceil_div<std::int64_t>(n, std::int64_t{tally_block} * biased_samples_per_thread));
  pi_same_numbers_kernel<<<blocks, tally_block, 0, stream>>>(seed, n, hits);
  CUDALABS_CHECK_LAUNCH("pi_same_numbers_kernel");
}

// How many of states[0, count) differ from curand_init(seed, t, 0). Runs on the
// legacy stream, after the measured run has finished.
std::uint64_t count_wrong_states(const curandStatePhilox4_32_10_t* states, std::int64_t count, unsigned long long seed) {
  cudalabs::DeviceBuffer<unsigned long long> wrong(1, "wrong-state count");
  wrong.zero();
  count_wrong_states_kernel<<<tally_blocks(count_wrong_states_kernel, count), tally_block>>>(states, count, seed,
                                                                                             wrong.data());
  CUDALABS_CHECK_LAUNCH("count_wrong_states_kernel");
  return wrong.download()[0];
}

void check_curand(curandStatus_t status, const char* call) {
  if (status != CURAND_STATUS_SUCCESS)
    throw cudalabs::CudaError(std::string(call) + " failed: curandStatus_t " + std::to_string(static_cast<int>(status)) +
                              " (see curand.h)");
}

// cuRAND's host API with its Philox generator: the numbers land in device
// memory, generated by cuRAND's kernels on the stream each call names.
class HostGenerator {
 public:
  HostGenerator() { check_curand(curandCreateGenerator(&gen_, CURAND_RNG_PSEUDO_PHILOX4_32_10), "curandCreateGenerator"); }
  ~HostGenerator() { curandDestroyGenerator(gen_); }
  HostGenerator(const HostGenerator&) = delete;
  HostGenerator& operator=(const HostGenerator&) = delete;

  // A new seed, from the start of its sequence. Outside the timed runs: a
  // generator may set itself up again on its next call, so one small call here
  // takes that cost (and any allocation it makes) out of the measured runs.
  void reseed(std::uint64_t seed, float* scratch, cudaStream_t stream) {
    check_curand(curandSetPseudoRandomGeneratorSeed(gen_, seed), "curandSetPseudoRandomGeneratorSeed");
    check_curand(curandSetGeneratorOffset(gen_, 0), "curandSetGeneratorOffset");
    uniform(scratch, 4, stream);
    CUDALABS_CHECK(cudaStreamSynchronize(stream));
  }
  void uniform(float* out, std::size_t count, cudaStream_t stream) {
    check_curand(curandSetStream(gen_, stream), "curandSetStream");
    check_curand(curandGenerateUniform(gen_, out, count), "curandGenerateUniform");
  }
  // Box-Muller makes normals in pairs: count must be even.
  void normal(float* out, std::size_t count, cudaStream_t stream) {
    check_curand(curandSetStream(gen_, stream), "curandSetStream");
    check_curand(curandGenerateNormal(gen_, out, count, 0.0f, 1.0f), "curandGenerateNormal");
  }

 private:
  curandGenerator_t gen_ = nullptr;
};

// ---- main -------------------------------------------------------------------------

std::string shortest(double v) {
  char text[32];
  std::snprintf(text, sizeof text, "%g", v);
  return text;
}

// A real-valued lab flag within [lo, hi]; `what` says what it means.
double real_flag(const cudalabs::Options& o, const std::string& flag, double lo, double hi, const char* what,
                 const char* example) {
  const std::string text = o.text(flag), range = shortest(lo) + " and " + shortest(hi);
  char* end = nullptr;
  const double v = std::strtod(text.c_str(), &end);
  if (text.empty() || *end != '\0' || !std::isfinite(v))
    throw cudalabs::UsageError("--" + flag + " '" + text + "': not a number. Example: --" + flag + " " + example +
                               " (" + what + ", between " + range + ").");
  if (v < lo || v > hi)
    throw cudalabs::UsageError("--" + flag + " " + text + ": " + what + " must be between " + range + ".");
  return v;
}

CallOption option_from_flags(const cudalabs::Options& o) {
  // The ranges keep every payoff and its square finite in float (S_T <= S0 e^15
  // for |Z| <= 6.7, the largest Box-Muller normal, at sigma 1 and T 5).
  return {.s0 = real_flag(o, "s0", 1, 1e4, "the stock price today", "100"),
          .strike = real_flag(o, "strike", 1, 1e4, "the strike price", "100"),
          .rate = real_flag(o, "rate", -0.05, 0.2, "the risk-free rate per year", "0.05"),
          .sigma = real_flag(o, "sigma", 0.01, 1.0, "the volatility per sqrt(year)", "0.2"),
          .maturity = real_flag(o, "maturity", 0.01, 5.0, "the years to maturity", "1")};
}

// Samples per second of every timed variant at this size, in one note line.
void note_rates(cudalabs::Session& s, const cudalabs::Point& size, const char* what, const std::string& fused,
                const std::string& host) {
  auto ms = [&](const std::string& variant) {
    for (const auto& r : s.records())
      if (r.size == size && r.variant == variant && r.timed && r.passed) return r.timing.median_ms;
    return 0.0;
  };
  const double n = static_cast<double>(size.begin()->second), f = ms(fused), h = ms(host);
  if (f <= 0 || h <= 0) return;
  char line[256];
  std::snprintf(line, sizeof line, "%s: %s %.3g %s/s, %s %.3g %s/s: fused is %.2fx as fast",
                cudalabs::to_string(size).c_str(), fused.c_str(), n / (f * 1e-3), what, host.c_str(), n / (h * 1e-3),
                what, h / f);
  s.note(line);
}

// The measurement every estimator shares. Its kernels add into `accumulator`,
// so it is zeroed before each run, and poisoned before each checked one (a
// kernel that never adds leaves the zero, an estimate of 0: fails).
template <typename T>
cudalabs::Measurement estimator_measurement(const std::string& variant, const cudalabs::Point& size,
                                            cudalabs::DeviceBuffer<T>& accumulator,
                                            std::function<cudalabs::CheckResult()> check,
                                            std::function<void(cudaStream_t)> run,
                                            std::function<void(std::uint64_t)> new_inputs) {
  cudalabs::Measurement m;
  m.variant = variant;
  m.size = size;
  m.run = std::move(run);
  m.check = std::move(check);
  m.poison = [&accumulator](cudaStream_t st) { accumulator.poison(st); };
  m.reset = [&accumulator](cudaStream_t st) { accumulator.zero(st); };
  m.new_inputs = std::move(new_inputs);
  m.ceiling = cudalabs::CeilingKind::baseline;  // vs the host-API baseline at this size
  m.extra = {{"samples", static_cast<double>(size.begin()->second)}};
  return m;
}

// philox_init: the states of pi_fused's `count` threads at `pi_size`, initialised
// and stored, checked by drawing from each; then its time as a share of pi_fused's.
void measure_philox_init(cudalabs::Session& s, const cudalabs::Point& pi_size, std::int64_t count) {
  cudalabs::DeviceBuffer<curandStatePhilox4_32_10_t> states(static_cast<std::size_t>(count), "Philox states");
  std::uint64_t seed = s.seed(3);
  cudalabs::Measurement m;
  m.variant = "philox_init";
  m.size = {{"states", count}};
  m.work = {.bytes = static_cast<double>(states.bytes())};  // the states written; nothing read
  m.run = [&](cudaStream_t st) { lab27::philox_init(seed, states.data(), count, st); };
  m.check = [&] {
    // Counted on the GPU: a judge counts in the graded program's states (cudalabs/evidence.hpp).
    if (std::string missing = states.observe(); !missing.empty()) return cudalabs::missing_output(count, missing);
    const std::uint64_t wrong = count_wrong_states(states.data(), count, seed);
    cudalabs::CheckResult c;
    c.count = static_cast<std::size_t>(count);
    c.bad = static_cast<std::size_t>(wrong);
    c.tolerance = {.abs = 0, .rel = 0};
    c.passed = wrong == 0;
    if (!c.passed)
      c.note = std::to_string(wrong) + " of " + std::to_string(count) +
               " states do not continue as curand_init(seed, thread, 0) does";
    return c;
  };
  m.poison = [&](cudaStream_t st) { states.poison(st); };
  m.new_inputs = [&](std::uint64_t fresh) { seed = cudalabs::mix_seed(fresh, 3); };
  m.resources = lab27::philox_init_resources();
  m.ceiling = cudalabs::CeilingKind::none;
  m.extra = {{"samples", static_cast<double>(pi_size.at("samples"))},
             {"bytes_per_state", static_cast<double>(sizeof(curandStatePhilox4_32_10_t))}};
  const cudalabs::Record& r = s.measure(m);
  if (!r.timed) return;
  for (const auto& fused : s.records())
    if (fused.variant == "pi_fused" && fused.size == pi_size && fused.timed && fused.timing.median_ms > 0) {
      char line[256];
      std::snprintf(line, sizeof line, "%s: initialising pi_fused's %lld Philox states alone takes %.4f ms, %.1f%% of its time",
                    cudalabs::to_string(pi_size).c_str(), static_cast<long long>(count), r.timing.median_ms,
                    100.0 * r.timing.median_ms / fused.timing.median_ms);
      s.note(line);
    }
}

void measure_pi(cudalabs::Session& s, std::int64_t n, HostGenerator& generator, bool biased) {
  const cudalabs::Point size{{"samples", n}};
  cudalabs::DeviceBuffer<unsigned long long> hits(1, "samples inside");
  const double standard_error = pi_standard_error(n);
  std::uint64_t seed = s.seed(1);
  auto check = [&](const std::string& variant) {
    return [&, variant] {
      const double estimate = 4.0 * static_cast<double>(hits.download()[0]) / static_cast<double>(n);
      return check_estimate(variant, estimate, std::numbers::pi, standard_error, allowed_errors_pi());
    };
  };
  {
    // 2 uniforms per sample, written by cuRAND and read by count_inside: 16 bytes
    // of DRAM traffic per sample. Rounded up to whole float4s.
    cudalabs::DeviceBuffer<float> uniforms(static_cast<std::size_t>(4 * cudalabs::ceil_div<std::int64_t>(n, 2)),
                                           "uniforms (host API)");
    generator.reseed(seed, uniforms.data(), s.stream());
    const unsigned tally = tally_blocks(count_inside_kernel, n / 2);
    cudalabs::Measurement m = estimator_measurement(
        "pi_host_api", size, hits, check("pi_host_api"),
        [&](cudaStream_t st) {
          generator.uniform(uniforms.data(), static_cast<std::size_t>(2 * n), st);
          count_inside(uniforms.data(), n, tally, hits.data(), st);
        },
        [&](std::uint64_t fresh) { generator.reseed(cudalabs::mix_seed(fresh, 1), uniforms.data(), s.stream()); });
    m.work = {.bytes = 16.0 * static_cast<double>(n)};
    m.resources = cudalabs::resources_of(count_inside_kernel, tally_block);
    m.ceiling = cudalabs::CeilingKind::copy_bandwidth;
    m.extra["dram_bytes_per_sample"] = 16;
    s.measure(m);
  }

  const unsigned blocks = lab27::pi_fused_blocks(n);
  const cudalabs::KernelResources fused = lab27::pi_fused_resources();
  if (s.selected("pi_fused")) {
    auto run = [&](cudaStream_t st) { lab27::pi_fused(seed, n, blocks, hits.data(), st); };
    SpreadCheck spread;
    spread.applies = spread_checked_at(n, 1, pi_draw_excess_kurtosis());
    spread.variance = standard_error * standard_error;
    spread.exact = std::numbers::pi;
    spread.timed = !s.options().check_only;
    auto estimate_of = [n](const std::vector<unsigned long long>& got) {
      return 4.0 * static_cast<double>(got[0]) / static_cast<double>(n);
    };
    auto estimate_from = run_from_seed(seed, hits, run, s.stream(), estimate_of);
    std::vector<double> timed_estimates;
    cudalabs::Measurement m = estimator_measurement(
        "pi_fused", size, hits, with_spread(check("pi_fused"), spread, "pi_fused", n, seed, estimate_from), run,
        [&](std::uint64_t fresh) { seed = cudalabs::mix_seed(fresh, 1); });
    m.timed_runs = timed_spread(seed, spread, timed_estimates, "pi_fused", n,
                                [&] { return estimate_of(hits.download()); });
    // Declared work, a lower bound that the plausibility gate holds the time
    // to: at least x·x + y·y (a multiply and an FMA, 3 FLOPs) per sample, not
    // counting the Philox rounds that make x and y. Those are integer work (10
    // rounds of two 32x32-bit multiplies, high and low halves, and XORs per 2
    // samples), which sm_90 issues at half the FP32 rate: counted at that rate,
    // some 80 FP32 FLOPs' time per sample, where pi_fused takes 118 at 2^30 on
    // an H200 (1.90 ms at the 66.9 TFLOP/s peak). A quarter of the samples would
    // then be ~2.7x the peak: implausible. Not declared all the same: the gate
    // only takes performance points, only in timed runs at sizes where Philox
    // dominates (not at 2^24, where half the time is setting up states), and the
    // count is not a bound on a GPU with a full-rate integer path. The spread
    // check (timed_spread) fails a quarter of the samples as a wrong answer.
    m.work = {.flops = 3.0 * static_cast<double>(n)};
    m.resources = fused;
    m.extra["blocks"] = blocks;
    s.measure(m);
    note_spread(s, size, "pi_fused", spread);
  }
  if (biased) {
    cudalabs::Measurement m = estimator_measurement(
        "pi_biased", size, hits, check("pi_biased"), [&](cudaStream_t st) { pi_same_numbers(seed, n, hits.data(), st); },
        [&](std::uint64_t fresh) { seed = cudalabs::mix_seed(fresh, 1); });
    m.resources = cudalabs::resources_of(pi_same_numbers_kernel, tally_block);
    s.measure(m);
  }
  note_rates(s, size, "samples", "pi_fused", "pi_host_api");

  if (s.selected("philox_init")) measure_philox_init(s, size, static_cast<std::int64_t>(blocks) * fused.block_threads);
}

void measure_option(cudalabs::Session& s, std::int64_t n, const CallOption& option, const PayoffMoments& exact,
                    HostGenerator& generator) {
  const cudalabs::Point size{{"paths", n}};
  cudalabs::DeviceBuffer<double> sums(2, "payoff sum and sum of squares");
  const double standard_error = std::sqrt(exact.variance / static_cast<double>(n));
  const Allowed allowed = allowed_errors_option(n, exact.skewness);
  std::uint64_t seed = s.seed(2);
  // The last checked estimate, with the standard error from the run's own sum of
  // squares: what a simulation without a closed form would report.
  double last_estimate = 0, last_sample_se = 0;
  int draws = 0;                            // new_inputs calls so far: each draws a new seed
  std::map<std::string, SeedWatch> watches;  // per variant
  auto check = [&](const std::string& variant) {
    return [&, variant] {
      const std::vector<double> got = sums.download();
      const double nd = static_cast<double>(n), d = option.discount();
      last_estimate = d * got[0] / nd;
      const double mean_sq = d * d * got[1] / nd;
      last_sample_se = n > 1 ? std::sqrt(std::max(0.0, mean_sq - last_estimate * last_estimate) / (nd - 1)) : 0.0;
      double judged = 0;
      const cudalabs::CheckResult r = check_estimate(variant, last_estimate, exact.mean, standard_error, allowed, &judged);
      return held_to_new_seed(r, watches[variant], draws, judged, variant);
    };
  };
  auto note_estimate = [&](const std::string& variant) {
    char line[256];
    std::snprintf(line, sizeof line, "%s %s: price %.6f +- %.2g (SE from its own sum of squares; exact SE %.2g), Black-Scholes %.6f",
                  cudalabs::to_string(size).c_str(), variant.c_str(), last_estimate, last_sample_se, standard_error,
                  exact.mean);
    s.note(line);
  };
  const auto s0 = static_cast<float>(option.s0), strike = static_cast<float>(option.strike);
  const auto drift = static_cast<float>(option.drift()), vol = static_cast<float>(option.vol());
  {
    // 1 normal per path (an even count: Box-Muller pairs), written by cuRAND and
    // read by payoff_sums: 8 bytes of DRAM traffic per path.
    cudalabs::DeviceBuffer<float> normals(static_cast<std::size_t>(4 * cudalabs::ceil_div<std::int64_t>(n, 4)),
                                          "normals (host API)");
    const auto even = static_cast<std::size_t>(n + n % 2);
    generator.reseed(seed, normals.data(), s.stream());
    const unsigned tally = tally_blocks(payoff_sums_kernel, n / 4);
    cudalabs::Measurement m = estimator_measurement(
        "option_host_api", size, sums, check("option_host_api"),
        [&](cudaStream_t st) {
          generator.normal(normals.data(), even, st);
          payoff_sums(normals.data(), n, option, tally, sums.data(), st);
        },
        [&](std::uint64_t fresh) {
          ++draws;
          generator.reseed(cudalabs::mix_seed(fresh, 2), normals.data(), s.stream());
        });
    m.work = {.bytes = 8.0 * static_cast<double>(n)};
    m.resources = cudalabs::resources_of(payoff_sums_kernel, tally_block);
    m.ceiling = cudalabs::CeilingKind::copy_bandwidth;
    m.extra["dram_bytes_per_sample"] = 8;
    s.measure(m);
    note_estimate("option_host_api");
  }
  if (s.selected("option_fused")) {
    const unsigned blocks = lab27::option_fused_blocks(n);
    auto run = [&](cudaStream_t st) { lab27::option_fused(seed, n, s0, strike, drift, vol, blocks, sums.data(), st); };
    SpreadCheck spread;
    spread.applies = spread_checked_at(n, exact.variance, exact.excess_kurtosis);
    spread.variance = standard_error * standard_error;
    spread.exact = exact.mean;
    spread.timed = !s.options().check_only;
    auto estimate_of = [n, &option](const std::vector<double>& got) {
      return option.discount() * got[0] / static_cast<double>(n);
    };
    auto estimate_from = run_from_seed(seed, sums, run, s.stream(), estimate_of);
    std::vector<double> timed_estimates;
    cudalabs::Measurement m = estimator_measurement(
        "option_fused", size, sums, with_spread(check("option_fused"), spread, "option_fused", n, seed, estimate_from),
        run,
        [&](std::uint64_t fresh) {
          ++draws;
          seed = cudalabs::mix_seed(fresh, 2);
        });
    m.timed_runs = timed_spread(seed, spread, timed_estimates, "option_fused", n,
                                [&] { return estimate_of(sums.download()); });
    // Declared work, a lower bound for the plausibility gate: at least
    // drift + vol·z (an FMA), S0·exp(.) and the payoff's subtraction, 4 FLOPs
    // per path, not counting the normal draw and the exp itself.
    m.work = {.flops = 4.0 * static_cast<double>(n)};
    m.resources = lab27::option_fused_resources();
    m.extra["blocks"] = blocks;
    s.measure(m);
    note_estimate("option_fused");
    note_spread(s, size, "option_fused", spread);
  }
  note_rates(s, size, "paths", "option_fused", "option_host_api");
}

}  // namespace

int main(int argc, char** argv) {
  // 2^24 draws: 64 MB of uniforms for the host API, past the 50 MB L2 of an
  // H100. 2^30: the goal size, 8 GiB of uniforms (pi) and 4 GiB of normals.
  const std::vector<std::int64_t> full = {std::int64_t{1} << 24, std::int64_t{1} << 30};
  const std::vector<std::int64_t> quick = {1, 7, 257, 100003};
  // 2^32 pi samples need 32 GiB of uniforms on the host-API path.
  const std::int64_t most = std::int64_t{1} << 32;
  const cudalabs::LabSpec spec{
      .name = "27_monte_carlo",
      .title = "Monte Carlo with cuRAND: numbers made in the kernel vs generated into memory",
      .about = "Estimates pi (points in the unit square inside the quarter circle) and prices a European call by\n"
               "simulating one step of geometric Brownian motion, each two ways: cuRAND's host API generating the\n"
               "random numbers into device memory and a kernel reading them (4 bytes per number through DRAM twice),\n"
               "and cuRAND's device API with a Philox state per thread, the numbers used as they are made. Each\n"
               "estimate is checked against the exact value (pi; Black-Scholes) within k standard errors, k chosen\n"
               "for fewer than 1e-6 false failures per check, and the estimates of each fused variant's timed runs\n"
               "(128 at least, a seed of its own each; with --check-only, 128 runs from seeds of their own) may vary\n"
               "no more than n independent samples' do. --biased adds an estimator that must fail.",
      .sizes = {{.name = "samples", .help = "pi: points drawn", .full = full, .quick = quick, .max = most},
                {.name = "paths", .help = "option: simulated paths", .full = full, .quick = quick, .max = most}},
      .variants = {{"pi_host_api", "curandGenerateUniform (2 per sample) into DRAM, then a counting kernel", true},
                   {"pi_fused", "per-thread Philox states: init, draw and count in one kernel"},
                   {"philox_init", "pi_fused's per-thread state initialisation alone, states stored"},
                   {"option_host_api", "curandGenerateNormal (1 per path) into DRAM, then a payoff kernel", true},
                   {"option_fused", "per-thread Philox states: normals, one GBM step, payoff sums in one kernel"}},
      .flags = {{.name = "s0", .help = "stock price today", .kind = cudalabs::ExtraFlag::Kind::text, .default_value = "100"},
                {.name = "strike", .help = "strike price K", .kind = cudalabs::ExtraFlag::Kind::text, .default_value = "100"},
                {.name = "rate", .help = "risk-free rate r per year", .kind = cudalabs::ExtraFlag::Kind::text, .default_value = "0.05"},
                {.name = "sigma", .help = "volatility per sqrt(year)", .kind = cudalabs::ExtraFlag::Kind::text, .default_value = "0.2"},
                {.name = "maturity", .help = "years to maturity T", .kind = cudalabs::ExtraFlag::Kind::text, .default_value = "1"},
                {.name = "biased",
                 .help = "also run pi_biased, an estimator whose threads all draw the same numbers: the check must "
                         "reject it (exit 1)",
                 .kind = cudalabs::ExtraFlag::Kind::toggle}},
  };
  // The option's flags are checked here, before a device is looked for, so a
  // bad --sigma is exit 2 on a machine without a GPU too. Any other bad flag is
  // left to run_lab, which parses the line again and reports it.
  std::optional<cudalabs::Parsed> parsed;
  try {
    parsed = cudalabs::parse_args(spec, std::span<const char* const>(argv + 1, static_cast<std::size_t>(argc - 1)));
  } catch (const cudalabs::UsageError&) {
  }
  if (parsed && parsed->action == cudalabs::Action::run) try {
      option_from_flags(parsed->options);
    } catch (const cudalabs::UsageError& e) {
      std::fprintf(stderr, "%s: error: %s\n", spec.name.c_str(), e.what());
      return 2;
    }
  return cudalabs::run_lab(argc, argv, spec, [](cudalabs::Session& s) {
    const CallOption option = option_from_flags(s.options());
    const PayoffMoments exact = payoff_moments(option);
    const bool biased = s.options().toggle("biased");
    HostGenerator generator;
    for (const auto& point : s.points()) {
      measure_pi(s, point.at("samples"), generator, biased);
      measure_option(s, point.at("paths"), option, exact, generator);
    }
    char line[256];
    std::snprintf(line, sizeof line,
                  "option: S0 %g, K %g, r %g, sigma %g, T %g: Black-Scholes %.6f, payoff SD %.4f, skewness %.2f",
                  option.s0, option.strike, option.rate, option.sigma, option.maturity, exact.mean,
                  std::sqrt(exact.variance), exact.skewness);
    s.note(line);
  });
}
