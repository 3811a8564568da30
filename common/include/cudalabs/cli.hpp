#pragma once
// Command-line parsing for every lab: the flags of the lab program contract
// (DESIGN.md) plus the sizes and extra flags a lab declares. CPU only; throws
// UsageError with a message that names the flag, the bad value and a fix.
#include <cstdint>
#include <map>
#include <optional>
#include <span>
#include <string>
#include <vector>

#include "timer.hpp"

namespace cudalabs {

struct SizeParam {
  std::string name;                  // flag name: --n, --m, --seq ...
  std::string help;
  std::vector<std::int64_t> full;    // default sizes
  std::vector<std::int64_t> quick;   // sizes under --quick
  std::int64_t min = 1;
  std::int64_t max = std::int64_t{1} << 31;  // beyond this: exit 2 before any allocation
};

struct ExtraFlag {
  enum class Kind { integer, text, toggle };
  std::string name;  // without the dashes
  std::string help;
  Kind kind = Kind::integer;
  std::string default_value;  // "" for toggles
  std::int64_t min = 1, max = std::int64_t{1} << 31;
  // A text flag's accepted values: each comma-separated item must be one of
  // them, checked while parsing (exit 2 with or without a GPU). Empty: any text.
  std::vector<std::string> choices;
};

struct VariantInfo {
  std::string name;
  std::string description;
  bool baseline = false;  // the vendor library: always run, the others are compared with it
};

struct LabSpec {
  std::string name;   // "02_timed_vector_add"
  std::string title;  // one line
  std::string about;  // a paragraph for --help
  std::vector<SizeParam> sizes;
  // Size params that --size/-n sets (all of them when empty): --size 1024 on a
  // matmul lab means m = n = k = 1024.
  std::vector<std::string> size_alias;
  std::vector<VariantInfo> variants;
  std::vector<ExtraFlag> flags;
};

using Point = std::map<std::string, std::int64_t>;
std::string to_string(const Point& p);  // "m=4096 n=4096 k=4096"

struct Options {
  std::vector<Point> points;
  std::vector<std::string> variants;  // selected non-baseline variants; all when none named
  std::uint64_t seed = 42;
  bool seed_given = false;
  bool quick = false;
  bool check_only = false;  // run each variant twice and check both; no timing (sanitizers, grading)
  std::string json_path;
  std::string evidence_dir;  // --evidence: leave every checked output there (evidence.hpp)
  std::string judge_dir;     // --judge: compare the outputs there instead of this run's own
  int device = 0;
  TimerConfig timer;
  std::map<std::string, std::string> extra;

  std::int64_t integer(const std::string& flag) const;
  std::string text(const std::string& flag) const;
  bool toggle(const std::string& flag) const;
};

enum class Action { run, help, list };
struct Parsed {
  Action action = Action::run;
  Options options;
};

Parsed parse_args(const LabSpec& spec, std::span<const char* const> args);
std::string help_text(const LabSpec& spec);
std::string list_text(const LabSpec& spec);

// Parses a whole number; accepts 1048576, 1M (2^20), 1Mi, 2^20, 1e6. Throws UsageError;
// values beyond int64 come back as INT64_MAX for the caller's range check to reject.
std::int64_t parse_size(const std::string& flag, const std::string& text);

}  // namespace cudalabs
