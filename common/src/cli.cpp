// The lab command line. CLI11 (Debian's libcli11-dev) recognises the flags:
// names and -n, `--flag value` and `--flag=value`, toggles, repeated --variant,
// --help and unknown flags. Every value reaches this file as text and is
// converted here, so each message names the flag, the bad value and a fix in
// the course's words; CLI11's own error texts ("Could not convert: ...") are
// replaced before they reach a student. CLI11 lives only in this .cpp (g++):
// nvcc's C++20 mode must never see its headers, and cli.hpp does not name it.
#include "cudalabs/cli.hpp"

#include <CLI/CLI.hpp>

#include <algorithm>
#include <cerrno>
#include <cmath>
#include <cstdlib>
#include <set>
#include <sstream>
#include <string_view>

#include "cudalabs/error.hpp"

namespace cudalabs {

namespace {

const std::string kSizeExamples = " Examples: 1000000, 1M (= 2^20), 2^28, 1e6.";

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

// Hand-written, not CLI11's delimiter(','): CLI11 drops empty items, and
// "--size 1,,2" must say "missing value", not quietly run sizes 1 and 2.
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

std::string bound_text(std::int64_t v) { return v == INT64_MAX ? "2^63-1" : std::to_string(v); }

// The number forms of parse_size; `example` ends every message, so a seed
// error shows a seed, not a size.
std::int64_t parse_whole(const std::string& flag, const std::string& text, const std::string& example) {
  if (text.empty()) throw UsageError(flag + ": missing value." + example);
  if (text.starts_with("--"))
    throw UsageError(flag + ": missing value (the next argument, " + text + ", is a flag)." + example);
  if (text[0] == '-') throw UsageError(flag + " " + text + ": negative values make no sense here." + example);
  // 2^k
  if (auto caret = text.find('^'); caret != std::string::npos) {
    std::int64_t base = parse_whole(flag, text.substr(0, caret), example);
    std::int64_t exp = parse_whole(flag, text.substr(caret + 1), example);
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

std::vector<std::int64_t> parse_size_list(const SizeParam& p, const std::string& flag, const std::string& text) {
  std::vector<std::int64_t> out;
  if (text.empty()) throw UsageError(flag + ": missing value. Example: " + flag + " 1000000 (or a list: 1000,1M)");
  for (const auto& item : split_commas(text)) {
    if (item.empty())
      throw UsageError(flag + " " + text + ": missing value between commas. Example: " + flag + " 1000,1M");
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

std::int64_t parse_int_flag(const std::string& flag, const std::string& text, std::int64_t lo, std::int64_t hi,
                            const std::string& example) {
  const std::string range = std::to_string(lo) + " and " + bound_text(hi);
  const std::string hint = " Example: " + flag + " " + example + " (a whole number between " + range + ").";
  std::int64_t v = parse_whole(flag, text, hint);
  if (v < lo || v > hi) throw UsageError(flag + " " + text + ": must be between " + range + ".");
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

std::size_t edit_distance(const std::string& a, const std::string& b) {
  std::vector<std::size_t> row(b.size() + 1);
  for (std::size_t j = 0; j <= b.size(); ++j) row[j] = j;
  for (std::size_t i = 1; i <= a.size(); ++i) {
    std::size_t diagonal = row[0];
    row[0] = i;
    for (std::size_t j = 1; j <= b.size(); ++j) {
      std::size_t up = row[j];
      row[j] = std::min({row[j] + 1, row[j - 1] + 1, diagonal + (a[i - 1] == b[j - 1] ? 0 : 1)});
      diagonal = up;
    }
  }
  return row[b.size()];
}

// The message for the first argument CLI11 did not recognise, with the
// closest flag when a typo is likely ("--seeed": did you mean --seed?).
UsageError unknown_argument(const LabSpec& spec, const CLI::App& app, const std::string& arg) {
  const std::string help = " Run " + spec.name + " --help to see the flags.";
  if (arg.empty() || arg[0] != '-')
    return UsageError("unexpected argument '" + arg + "': a flag takes one value; give a list with commas " +
                      "(--size 1000,1M or --variant a,b)." + help);
  const std::string typed = arg.substr(0, arg.find('='));
  std::string closest;
  std::size_t best = 3;  // at most two edits away
  for (const CLI::Option* opt : app.get_options())
    for (const auto& name : opt->get_lnames())
      if (std::size_t d = edit_distance(typed, "--" + name); d < best) best = d, closest = "--" + name;
  return UsageError("unknown flag '" + arg + "'." + (closest.empty() ? "" : " Did you mean " + closest + "?") + help);
}

// CLI11's parse errors in the course's words. A value flag takes the next
// argument whatever it looks like, so only the last argument can lack its
// value. CLI11 reads --quick=1 and --quick=0; anything else after a switch is
// its "Could not convert".
UsageError in_our_words(const CLI::ParseError& e, const LabSpec& spec, std::span<const char* const> args,
                        const std::map<std::string, std::string>& sample, const std::set<std::string>& switches) {
  if (dynamic_cast<const CLI::ArgumentMismatch*>(&e) && !args.empty()) {
    const std::string last = args.back();
    const std::string flag = last.substr(0, last.find('='));
    if (auto it = sample.find(flag); it != sample.end())
      return UsageError(flag + ": missing value. Example: " + flag + " " + it->second);
  }
  for (const std::string arg : args)
    if (auto eq = arg.find('='); eq != std::string::npos && switches.contains(arg.substr(0, eq)))
      return UsageError(arg + ": " + arg.substr(0, eq) +
                        " is a switch and takes no value; write it alone to turn it on.");
  return UsageError(std::string(e.what()) + ". Run " + spec.name + " --help to see the flags.");
}

}  // namespace

std::string to_string(const Point& p) {
  std::string s;
  for (const auto& [k, v] : p) s += (s.empty() ? "" : " ") + k + "=" + std::to_string(v);
  return s;
}

std::int64_t parse_size(const std::string& flag, const std::string& text) {
  return parse_whole(flag, text, kSizeExamples);
}

std::int64_t Options::integer(const std::string& flag) const { return std::stoll(extra.at(flag)); }
std::string Options::text(const std::string& flag) const { return extra.at(flag); }
bool Options::toggle(const std::string& flag) const { return extra.at(flag) == "1"; }

Parsed parse_args(const LabSpec& spec, std::span<const char* const> args) {
  Parsed out;
  Options& o = out.options;

  CLI::App app{spec.title, spec.name};
  app.set_help_flag("-h,--help");
  app.allow_extras();  // unknown flags come back from remaining(), for our own message
  app.option_defaults()
      ->multi_option_policy(CLI::MultiOptionPolicy::TakeLast)  // --seed 1 --seed 2: the last wins
      ->configurable(false);  // no config files; CLI11 2.4+ would see -n and --n as one name in a config file

  // The text of each value flag, and a value to show in its "missing value" message.
  std::map<std::string, std::string> text, sample;
  auto value_flag = [&](const std::string& names, const std::string& flag, const std::string& example) {
    sample[flag] = example;
    return app.add_option(names, text[flag]);
  };
  std::set<std::string> switches{"--list", "--quick", "--largest", "--flush-l2", "--check-only"};  // flags without a value
  bool quick = false, largest = false, flush_l2 = false, check_only = false;
  std::vector<std::string> variants;
  const CLI::Option* list = app.add_flag("--list");
  app.add_flag("--quick", quick);
  app.add_flag("--largest", largest);
  app.add_flag("--flush-l2", flush_l2);
  app.add_flag("--check-only", check_only);
  // One name per --variant; repeat the flag or give a comma-separated list.
  app.add_option("--variant", variants)
      ->multi_option_policy(CLI::MultiOptionPolicy::TakeAll)
      ->allow_extra_args(false)
      ->delimiter(',');
  sample["--variant"] = spec.variants.empty() ? "NAME" : spec.variants.front().name;
  const CLI::Option* seed = value_flag("--seed", "--seed", "7");
  const CLI::Option* json = value_flag("--json", "--json", "build/records.jsonl");
  const CLI::Option* evidence = value_flag("--evidence", "--evidence", "build/grade/evidence");
  const CLI::Option* judge = value_flag("--judge", "--judge", "build/grade/evidence");
  const CLI::Option* device = value_flag("--device", "--device", "0");
  const CLI::Option* precision = value_flag("--precision", "--precision", "0.02");
  const CLI::Option* max_runs = value_flag("--max-runs", "--max-runs", "100");
  const std::string size_example = "1000000 (or a list: 1000,1M)";
  // -n is --size. Not given to CLI11 as a second name: from CLI11 2.4 on, -n
  // and a lab's own --n (the size of most labs) count as the same name.
  const CLI::Option* size_all = value_flag("--size", "--size", size_example);
  sample["-n"] = sample["--size"];
  std::map<std::string, const CLI::Option*> size_given, extra_given;
  std::map<std::string, bool> toggles;
  try {
    for (const auto& p : spec.sizes)
      size_given[p.name] = value_flag("--" + p.name, "--" + p.name, size_example);
    for (const auto& f : spec.flags) {
      if (f.kind == ExtraFlag::Kind::toggle) {
        extra_given[f.name] = app.add_flag("--" + f.name, toggles[f.name]);
        switches.insert("--" + f.name);
      } else {
        std::string example = f.default_value;
        if (example.empty()) example = f.kind == ExtraFlag::Kind::integer ? std::to_string(f.min) : "TEXT";
        extra_given[f.name] = value_flag("--" + f.name, "--" + f.name, example);
      }
    }
  } catch (const CLI::ConstructionError& e) {
    throw std::logic_error(spec.name + "'s LabSpec declares a flag twice or names a common flag: " + e.what());
  }

  std::vector<std::string> reversed(args.rbegin(), args.rend());  // CLI11 takes the arguments last first
  for (auto& a : reversed)
    if (a == "-n") a = "--size";
  try {
    app.parse(reversed);
  } catch (const CLI::CallForHelp&) {
    out.action = Action::help;
    return out;
  } catch (const CLI::ParseError& e) {
    // --help wins over any other problem on the line, as it did before CLI11.
    auto is_help = [](std::string_view a) { return a == "--help" || a == "-h"; };
    if (std::any_of(args.begin(), args.end(), is_help)) {
      out.action = Action::help;
      return out;
    }
    throw in_our_words(e, spec, args, sample, switches);
  }
  if (auto rest = app.remaining(); !rest.empty()) throw unknown_argument(spec, app, rest.front());

  if (list->count() > 0) out.action = Action::list;
  o.quick = quick;
  o.timer.flush_l2 = flush_l2;
  o.check_only = check_only;
  for (const auto& v : variants) {
    bool known = std::any_of(spec.variants.begin(), spec.variants.end(), [&](const VariantInfo& vi) { return vi.name == v; });
    if (!known) {
      std::vector<std::string> names;
      for (const auto& vi : spec.variants) names.push_back(vi.name);
      throw UsageError("--variant '" + v + "': no such variant in " + spec.name + ". It has: " + join(names, ", ") +
                       " (see --list).");
    }
    o.variants.push_back(v);
  }
  if (seed->count() > 0) {
    o.seed = static_cast<std::uint64_t>(parse_int_flag("--seed", text["--seed"], 0, INT64_MAX, sample["--seed"]));
    o.seed_given = true;
  }
  if (json->count() > 0) {
    o.json_path = text["--json"];
    if (o.json_path.empty()) throw UsageError("--json: give a file name, e.g. --json build/records.jsonl");
  }
  if (evidence->count() > 0) {
    o.evidence_dir = text["--evidence"];
    if (o.evidence_dir.empty()) throw UsageError("--evidence: give a folder, e.g. --evidence build/grade/evidence");
  }
  if (judge->count() > 0) {
    o.judge_dir = text["--judge"];
    if (o.judge_dir.empty()) throw UsageError("--judge: give the folder a graded run wrote with --evidence");
    if (!o.evidence_dir.empty())
      throw UsageError("--evidence and --judge together: a run either leaves evidence (the graded program) or judges it "
                       "(the course's own build). Give one.");
  }
  if (device->count() > 0)
    o.device = static_cast<int>(parse_int_flag("--device", text["--device"], 0, 63, sample["--device"]));
  if (precision->count() > 0) o.timer.rel_precision = parse_double("--precision", text["--precision"], 1e-4, 1.0);
  if (max_runs->count() > 0)
    o.timer.max_runs =
        static_cast<int>(parse_int_flag("--max-runs", text["--max-runs"], 1, 1000000, sample["--max-runs"]));

  // --size sets every aliased size; a size's own flag (--k 64) wins over it, in any order.
  std::map<std::string, std::vector<std::int64_t>> sizes;
  if (size_all->count() > 0) {
    std::vector<std::string> targets = spec.size_alias;
    if (targets.empty())
      for (const auto& p : spec.sizes) targets.push_back(p.name);
    for (const auto& t : targets) sizes[t] = parse_size_list(*find_size(spec, t), "--size", text["--size"]);
  }
  for (const auto& p : spec.sizes)
    if (size_given[p.name]->count() > 0) sizes[p.name] = parse_size_list(p, "--" + p.name, text["--" + p.name]);

  for (const auto& f : spec.flags) {
    const std::string flag = "--" + f.name;
    if (f.kind == ExtraFlag::Kind::toggle) o.extra[f.name] = toggles[f.name] ? "1" : "0";
    else if (extra_given[f.name]->count() == 0) o.extra[f.name] = f.default_value;
    else if (f.kind == ExtraFlag::Kind::integer)
      o.extra[f.name] = std::to_string(parse_int_flag(flag, text[flag], f.min, f.max, sample[flag]));
    else o.extra[f.name] = text[flag];
    if (f.kind == ExtraFlag::Kind::text && !f.choices.empty() && extra_given[f.name]->count() > 0)
      for (const auto& item : split_commas(o.extra[f.name]))
        if (std::find(f.choices.begin(), f.choices.end(), item) == f.choices.end())
          throw UsageError(flag + " '" + item + "': not one of " + join(f.choices, ", ") + ". Example: " + flag + " " +
                           f.choices.front());
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
  // --largest: only the point with the most elements (the last of equals). The
  // grader's benchmark run judges that size alone, and timing the smaller ones
  // too cost it more than half of its benchmark time (08_streams: 49 s).
  if (largest && o.points.size() > 1) {
    auto elements = [](const Point& p) {
      double e = 1;
      for (const auto& [name, v] : p) e *= static_cast<double>(v);
      return e;
    };
    Point big = o.points.front();
    for (const auto& p : o.points)
      if (elements(p) >= elements(big)) big = p;
    o.points = {big};
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
  s += "  --size, -n N        sets " + join(alias, ", ") +
       (spec.sizes.size() > 1 ? " (a size's own flag, e.g. --" + spec.sizes.back().name + " 64, wins over it)" : "") + "\n";
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
      const std::string one_of = f.choices.empty() ? "" : "; one of " + join(f.choices, ", ");
      // An integer flag's bounds where the lab sets them (the parser's error names them too).
      const bool bounded = f.kind == ExtraFlag::Kind::integer && (f.min != 1 || f.max != ExtraFlag{}.max);
      const std::string range = bounded ? "; " + std::to_string(f.min) + " to " + std::to_string(f.max) : "";
      s += "  " + n + "  " + f.help +
           (f.default_value.empty() ? "" : " (default " + f.default_value + one_of + range + ")") + "\n";
    }
  }
  s += R"(
Common flags:
  --seed S            input data seed (default 42)
  --quick             small sizes and short timing: a correctness run on any GPU
  --largest           only the largest of the size points (what the grader times)
  --json FILE         append one JSON record per variant and size to FILE
  --device N          which GPU (default 0)
  --precision P       stop timing when the 95% CI half-width is within P of the mean (default 0.02)
  --max-runs N        at most N timed runs per measurement (default 1000; also 2 s per measurement)
  --flush-l2          overwrite the L2 cache before every timed run (cold-cache times)
  --check-only        run each variant twice and check both results, no timing (for sanitizers)
  --evidence DIR      (the grader's) write every output a check compares into DIR, for a judge
  --judge DIR         (the grader's) judge the outputs in DIR, written by a graded run with the
                      same flags: compare them with this build's own references; no timing
  --list              list the variants
  --help, -h          this text

Exit codes: 0 every variant correct, 1 a variant gave a wrong result, 2 bad usage,
            3 CUDA failure, 77 no usable CUDA device (or it lacks a needed feature).
)";
  return s;
}

}  // namespace cudalabs
