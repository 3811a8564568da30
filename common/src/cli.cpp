#include "cudalabs/cli.hpp"

#include <algorithm>
#include <cerrno>
#include <cmath>
#include <cstdlib>
#include <sstream>

#include "cudalabs/error.hpp"

namespace cudalabs {

namespace {

std::string join(const std::vector<std::string>& v, const std::string& sep) {
  std::string s;
  for (std::size_t i = 0; i < v.size(); ++i) s += (i ? sep : "") + v[i];
  return s;
}

std::string join_sizes(const std::vector<std::int64_t>& v) {
  std::vector<std::string> s;
  for (auto x : v) s.push_back(std::to_string(x));
  return join(s, ",");
}

std::vector<std::string> split_commas(const std::string& s) {
  std::vector<std::string> out;
  std::stringstream ss(s);
  std::string item;
  while (std::getline(ss, item, ',')) out.push_back(item);
  if (!s.empty() && s.back() == ',') out.push_back("");
  return out;
}

const SizeParam* find_size(const LabSpec& spec, const std::string& name) {
  for (const auto& p : spec.sizes)
    if (p.name == name) return &p;
  return nullptr;
}

const ExtraFlag* find_flag(const LabSpec& spec, const std::string& name) {
  for (const auto& f : spec.flags)
    if (f.name == name) return &f;
  return nullptr;
}

std::vector<std::int64_t> parse_size_list(const SizeParam& p, const std::string& flag, const std::string& text) {
  std::vector<std::int64_t> out;
  if (text.empty()) throw UsageError(flag + ": missing value. Example: " + flag + " 1000000 (or a list: 1000,1M)");
  for (const auto& item : split_commas(text)) {
    std::int64_t v = parse_size(flag, item);
    if (v < p.min)
      throw UsageError(flag + " " + item + ": " + p.name + " must be at least " + std::to_string(p.min) + ".");
    if (v > p.max)
      throw UsageError(flag + " " + item + ": " + p.name + " may be at most " + std::to_string(p.max) +
                       " in this lab (larger would not fit the GPU or the index type). Use a smaller size.");
    out.push_back(v);
  }
  return out;
}

std::int64_t parse_int_flag(const std::string& flag, const std::string& text, std::int64_t lo, std::int64_t hi) {
  std::int64_t v = parse_size(flag, text);
  if (v < lo || v > hi)
    throw UsageError(flag + " " + text + ": must be between " + std::to_string(lo) + " and " + std::to_string(hi) + ".");
  return v;
}

double parse_double(const std::string& flag, const std::string& text, double lo, double hi) {
  char* end = nullptr;
  errno = 0;
  double v = std::strtod(text.c_str(), &end);
  if (text.empty() || *end != '\0' || errno != 0 || !std::isfinite(v))
    throw UsageError(flag + " '" + text + "': not a number. Example: " + flag + " 0.02");
  if (v < lo || v > hi)
    throw UsageError(flag + " " + text + ": must be between " + std::to_string(lo) + " and " + std::to_string(hi) + ".");
  return v;
}

}  // namespace

std::string to_string(const Point& p) {
  std::string s;
  for (const auto& [k, v] : p) s += (s.empty() ? "" : " ") + k + "=" + std::to_string(v);
  return s;
}

std::int64_t parse_size(const std::string& flag, const std::string& text) {
  const std::string example = " Examples: 1000000, 1M (= 2^20), 2^28, 1e6.";
  if (text.empty()) throw UsageError(flag + ": missing value." + example);
  if (text[0] == '-')
    throw UsageError(flag + " " + text + ": negative values make no sense here; give a positive whole number." + example);
  // 2^k
  if (auto caret = text.find('^'); caret != std::string::npos) {
    std::int64_t base = parse_size(flag, text.substr(0, caret));
    std::int64_t exp = parse_size(flag, text.substr(caret + 1));
    if (base != 2) throw UsageError(flag + " " + text + ": only powers of two (2^k) are accepted." + example);
    if (exp > 62) return INT64_MAX;
    return std::int64_t{1} << exp;
  }
  std::string digits = text;
  std::int64_t mult = 1;
  std::string suffix;
  while (!digits.empty() && std::isalpha(static_cast<unsigned char>(digits.back())) && digits.back() != 'e') {
    suffix.insert(suffix.begin(), digits.back());
    digits.pop_back();
  }
  if (digits.empty() || !std::isdigit(static_cast<unsigned char>(digits[0])))
    throw UsageError(flag + " '" + text + "': not a whole number." + example);
  if (suffix == "K" || suffix == "k" || suffix == "Ki") mult = std::int64_t{1} << 10;
  else if (suffix == "M" || suffix == "Mi") mult = std::int64_t{1} << 20;
  else if (suffix == "G" || suffix == "Gi") mult = std::int64_t{1} << 30;
  else if (!suffix.empty()) throw UsageError(flag + " " + text + ": unknown suffix '" + suffix + "'." + example);
  char* end = nullptr;
  errno = 0;
  if (digits.find_first_of("eE.") != std::string::npos) {
    double v = std::strtod(digits.c_str(), &end);
    if (*end != '\0' || errno != 0 || !std::isfinite(v) || v != std::floor(v))
      throw UsageError(flag + " " + text + ": not a whole number." + example);
    if (v * static_cast<double>(mult) > 9.2e18) return INT64_MAX;  // the caller's range check names the limit
    return static_cast<std::int64_t>(v) * mult;
  }
  long long v = std::strtoll(digits.c_str(), &end, 10);
  if (*end != '\0') throw UsageError(flag + " '" + text + "': not a whole number." + example);
  if (errno == ERANGE || v > INT64_MAX / mult) return INT64_MAX;
  return static_cast<std::int64_t>(v) * mult;
}

std::int64_t Options::integer(const std::string& flag) const { return std::stoll(extra.at(flag)); }
std::string Options::text(const std::string& flag) const { return extra.at(flag); }
bool Options::toggle(const std::string& flag) const { return extra.at(flag) == "1"; }

Parsed parse_args(const LabSpec& spec, std::span<const char* const> args) {
  Parsed out;
  Options& o = out.options;
  std::map<std::string, std::vector<std::int64_t>> sizes;
  for (const auto& f : spec.flags) o.extra[f.name] = f.kind == ExtraFlag::Kind::toggle ? "0" : f.default_value;

  for (std::size_t i = 0; i < args.size(); ++i) {
    std::string arg = args[i];
    std::string value;
    bool has_inline = false;
    if (arg.rfind("--", 0) == 0) {
      if (auto eq = arg.find('='); eq != std::string::npos) {
        value = arg.substr(eq + 1);
        arg = arg.substr(0, eq);
        has_inline = true;
      }
    }
    auto take = [&]() -> std::string {
      if (has_inline) return value;
      if (i + 1 >= args.size()) throw UsageError(arg + ": missing value. Run with --help for the flags.");
      return args[++i];
    };
    const std::string name = arg.rfind("--", 0) == 0 ? arg.substr(2) : "";

    if (arg == "--help" || arg == "-h") { out.action = Action::help; return out; }
    if (arg == "--list") { out.action = Action::list; continue; }
    if (arg == "--quick") { o.quick = true; continue; }
    if (arg == "--flush-l2") { o.timer.flush_l2 = true; continue; }
    if (arg == "--check-only") { o.check_only = true; continue; }
    if (arg == "--variant") {
      for (const auto& v : split_commas(take())) {
        bool known = std::any_of(spec.variants.begin(), spec.variants.end(), [&](const VariantInfo& vi) { return vi.name == v; });
        if (!known) {
          std::vector<std::string> names;
          for (const auto& vi : spec.variants) names.push_back(vi.name);
          throw UsageError("--variant '" + v + "': no such variant in " + spec.name + ". It has: " + join(names, ", ") +
                           " (see --list).");
        }
        o.variants.push_back(v);
      }
      continue;
    }
    if (arg == "--seed") { o.seed = static_cast<std::uint64_t>(parse_int_flag(arg, take(), 0, INT64_MAX)); o.seed_given = true; continue; }
    if (arg == "--json") {
      o.json_path = take();
      if (o.json_path.empty()) throw UsageError("--json: give a file name, e.g. --json build/records.jsonl");
      continue;
    }
    if (arg == "--device") { o.device = static_cast<int>(parse_int_flag(arg, take(), 0, 63)); continue; }
    if (arg == "--precision") { o.timer.rel_precision = parse_double(arg, take(), 1e-4, 1.0); continue; }
    if (arg == "--max-runs") { o.timer.max_runs = static_cast<int>(parse_int_flag(arg, take(), 1, 1000000)); continue; }
    if (arg == "--size" || arg == "-n") {
      std::string v = take();
      std::vector<std::string> targets = spec.size_alias;
      if (targets.empty())
        for (const auto& p : spec.sizes) targets.push_back(p.name);
      for (const auto& t : targets) sizes[t] = parse_size_list(*find_size(spec, t), arg, v);
      continue;
    }
    if (const SizeParam* p = name.empty() ? nullptr : find_size(spec, name)) {
      sizes[p->name] = parse_size_list(*p, arg, take());
      continue;
    }
    if (const ExtraFlag* f = name.empty() ? nullptr : find_flag(spec, name)) {
      if (f->kind == ExtraFlag::Kind::toggle) {
        o.extra[f->name] = "1";
      } else if (f->kind == ExtraFlag::Kind::integer) {
        o.extra[f->name] = std::to_string(parse_int_flag(arg, take(), f->min, f->max));
      } else {
        o.extra[f->name] = take();
      }
      continue;
    }
    throw UsageError("unknown flag '" + std::string(args[i]) + "'. Run " + spec.name + " --help to see the flags.");
  }

  // Size points: each param's list (given, or the defaults), zipped; a list of
  // one value is used with every point.
  std::size_t count = 1;
  std::vector<std::pair<std::string, std::vector<std::int64_t>>> lists;
  for (const auto& p : spec.sizes) {
    auto it = sizes.find(p.name);
    std::vector<std::int64_t> v = it != sizes.end() ? it->second : (o.quick ? p.quick : p.full);
    if (v.size() > 1) {
      if (count > 1 && v.size() != count)
        throw UsageError("size lists of different lengths: --" + p.name + " has " + std::to_string(v.size()) +
                         " values, another size flag has " + std::to_string(count) +
                         ". Give lists of equal length, or one value.");
      count = v.size();
    }
    lists.emplace_back(p.name, v);
  }
  for (std::size_t i = 0; i < count && !lists.empty(); ++i) {
    Point pt;
    for (const auto& [name, v] : lists) pt[name] = v.size() == 1 ? v[0] : v[i];
    o.points.push_back(pt);
  }
  if (o.quick) {
    o.timer.max_seconds = 0.25;
    o.timer.max_runs = std::min(o.timer.max_runs, 50);
  }
  return out;
}

std::string list_text(const LabSpec& spec) {
  std::string s = spec.name + " variants:\n";
  for (const auto& v : spec.variants) {
    std::string name = v.name;
    name.resize(std::max<std::size_t>(name.size(), 22), ' ');
    s += "  " + name + "  " + v.description + (v.baseline ? "  [baseline: always runs]" : "") + "\n";
  }
  return s;
}

std::string help_text(const LabSpec& spec) {
  std::string s = spec.name + " — " + spec.title + "\n\n";
  if (!spec.about.empty()) s += spec.about + "\n\n";
  s += "Usage: " + spec.name + " [flags]\n\nSizes (comma-separated lists; sizes need not be multiples of the block size):\n";
  std::vector<std::string> alias = spec.size_alias;
  if (alias.empty())
    for (const auto& p : spec.sizes) alias.push_back(p.name);
  s += "  --size, -n N        sets " + join(alias, ", ") + "\n";
  for (const auto& p : spec.sizes) {
    std::string f = "--" + p.name + " N";
    f.resize(std::max<std::size_t>(f.size(), 18), ' ');
    s += "  " + f + "  " + p.help + " (default " + join_sizes(p.full) + "; --quick " + join_sizes(p.quick) +
         "; " + std::to_string(p.min) + ".." + std::to_string(p.max) + ")\n";
  }
  s += "  Sizes accept 1000000, 1M (= 2^20), 2^28, 1e6.\n\n";
  s += list_text(spec);
  s += "  --variant NAME      run only these (repeatable or comma-separated); --list shows them\n";
  if (!spec.flags.empty()) {
    s += "\nLab flags:\n";
    for (const auto& f : spec.flags) {
      std::string n = "--" + f.name + (f.kind == ExtraFlag::Kind::toggle ? "" : f.kind == ExtraFlag::Kind::integer ? " N" : " TEXT");
      n.resize(std::max<std::size_t>(n.size(), 18), ' ');
      s += "  " + n + "  " + f.help + (f.default_value.empty() ? "" : " (default " + f.default_value + ")") + "\n";
    }
  }
  s += R"(
Common flags:
  --seed S            input data seed (default 42)
  --quick             small sizes and short timing: a correctness run on any GPU
  --json FILE         append one JSON record per variant and size to FILE
  --device N          which GPU (default 0)
  --precision P       stop timing when the 95% CI half-width is within P of the mean (default 0.02)
  --max-runs N        at most N timed runs per measurement (default 1000; also 2 s per measurement)
  --flush-l2          overwrite the L2 cache before every timed run (cold-cache times)
  --check-only        run each variant twice and check both results, no timing (for sanitizers)
  --list              list the variants
  --help, -h          this text

Exit codes: 0 every variant correct, 1 a variant gave a wrong result, 2 bad usage,
            3 CUDA failure, 77 no usable CUDA device (or it lacks a needed feature).
)";
  return s;
}

}  // namespace cudalabs
