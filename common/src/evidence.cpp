#include "cudalabs/evidence.hpp"

#include <algorithm>
#include <cctype>
#include <cstdint>
#include <cstdio>
#include <cstring>
#include <filesystem>
#include <map>
#include <memory>
#include <stdexcept>
#include <tuple>
#include <vector>

#include <sys/stat.h>

#include "cudalabs/error.hpp"

namespace cudalabs::evidence {

namespace {

namespace fs = std::filesystem;

struct State {
  Mode mode = Mode::off;
  fs::path dir;
  bool in_scope = false;
  std::string scope_key;     // "variant@size@step#occurrence"
  std::string scope_base;    // "variant@size": the steps of one record share outputs
  std::size_t in_scope_count = 0;
  std::size_t total = 0;     // observations made so far
  std::size_t unscoped = 0;  // observations made outside any Scope (a lab's own record)
  std::map<std::string, int> occurrences;
  // Record: the last output written for (variant@size, order): a repeated step
  // that left the same bytes is a hard link, not a second copy (a 256 MB
  // transpose is written once for its first, repeated and timed runs). The
  // digest only says which ones to compare; the bytes decide (same_as_file).
  std::map<std::pair<std::string, std::size_t>, std::tuple<std::uint64_t, std::size_t, fs::path>> written;
  // Judge: the last output read for (variant@size, order), kept while checks
  // of that record go on. A hard link to the same file (a repeated step that
  // left the same bytes) is not read again: a 256 MB output read once per
  // record, not once per check, and compared from where it was read.
  struct Held {
    std::uintmax_t device = 0, inode = 0;
    std::string head;
    std::size_t bytes = 0;
    std::unique_ptr<std::byte[]> data;  // an array of bytes: storage for elements of any type
  };
  std::map<std::pair<std::string, std::size_t>, Held> held;
};

State& state() {
  static State s;
  return s;
}

// File names keep letters, digits and . _ = -; anything else is ~XX (hex), so
// "name[block=256]" or "m=1 n=2" are names a shell need not quote.
std::string safe(const std::string& text) {
  std::string out;
  for (unsigned char c : text) {
    if (std::isalnum(c) || c == '.' || c == '_' || c == '=' || c == '-') {
      out += static_cast<char>(c);
    } else {
      char hex[4];
      std::snprintf(hex, sizeof hex, "~%02X", c);
      out += hex;
    }
  }
  return out;
}

// 64-bit FNV-1a over 8-byte words, at memory speed: which earlier output an
// output may equal, never that it does. A kernel writes its output, and FNV is
// no defence against one that chooses it: each step h = (h ^ w) * prime is a
// bijection in the word w, so one word of the kernel's choosing, anywhere in
// the output, gives any output the digest of another (one cheap run's output
// linked to a right one's, judged as that; same_as_file decides).
std::uint64_t digest(const void* data, std::size_t bytes) {
  const auto* p = static_cast<const unsigned char*>(data);
  std::uint64_t h = 1469598103934665603ull;
  std::size_t i = 0;
  for (; i + 8 <= bytes; i += 8) {
    std::uint64_t w;
    std::memcpy(&w, p + i, 8);
    h = (h ^ w) * 1099511628211ull;
  }
  for (; i < bytes; ++i) h = (h ^ p[i]) * 1099511628211ull;
  return h;
}

std::string header(const char* type, std::size_t count, std::size_t elem_size) {
  return "cudalabs evidence 1 " + std::string(type) + " " + std::to_string(count) + " " + std::to_string(elem_size) + "\n";
}

struct FileCloser {
  void operator()(std::FILE* f) const { std::fclose(f); }
};
using File = std::unique_ptr<std::FILE, FileCloser>;

void write_output(const fs::path& path, const std::string& head, const void* data, std::size_t bytes) {
  File f(std::fopen(path.c_str(), "wb"));
  if (!f || std::fwrite(head.data(), 1, head.size(), f.get()) != head.size() ||
      (bytes > 0 && std::fwrite(data, 1, bytes, f.get()) != bytes))
    throw std::runtime_error("--evidence: cannot write " + path.string() + " (disk full, or the folder is not writable)");
}

// Record: whether the file at `path` holds exactly `head` then the `bytes` at
// `data` (read back in 1 MiB pieces: from the page cache, just written, at a
// fraction of what writing a second copy costs).
bool same_as_file(const fs::path& path, const std::string& head, const void* data, std::size_t bytes) {
  File f(std::fopen(path.c_str(), "rb"));
  struct ::stat st {};
  if (!f || ::fstat(::fileno(f.get()), &st) != 0 || static_cast<std::uintmax_t>(st.st_size) != head.size() + bytes)
    return false;
  std::vector<char> piece(std::max<std::size_t>(head.size(), std::size_t{1} << 20));
  if (std::fread(piece.data(), 1, head.size(), f.get()) != head.size() ||
      std::memcmp(piece.data(), head.data(), head.size()) != 0)
    return false;
  const auto* p = static_cast<const char*>(data);
  for (std::size_t done = 0; done < bytes;) {
    const std::size_t n = std::min(piece.size(), bytes - done);
    if (std::fread(piece.data(), 1, n, f.get()) != n || std::memcmp(piece.data(), p + done, n) != 0) return false;
    done += n;
  }
  return true;
}

// Judge: the graded program's bytes for this observation, or why there are none.
// `count` elements of `type` are expected, or any number with `any_count`
// (the file's size must then say the same as its header). The bytes stay in
// `held` (a file already held there by the same inode is not read again).
std::string read_output(const fs::path& path, const char* type, std::size_t count, std::size_t elem_size, bool any_count,
                        State::Held& held, std::span<const std::byte>& out) {
  File f(std::fopen(path.c_str(), "rb"));
  if (!f)
    return "the graded program left no output for this check (it stopped before it, or never made it): judged as failed";
  char line[128] = {};
  const bool have_line = std::fgets(line, sizeof line, f.get()) != nullptr;
  char got_type[16] = {};
  unsigned long long got_count = 0, got_elem = 0;
  const bool parsed = have_line && std::sscanf(line, "cudalabs evidence 1 %15s %llu %llu", got_type, &got_count, &got_elem) == 3;
  if (!parsed || std::string(got_type) != type || got_elem != elem_size || (!any_count && got_count != count)) {
    std::string said(line);
    if (!said.empty() && said.back() == '\n') said.pop_back();
    return "the graded program's output for this check is not what the check compares (it holds \"" + said +
           "\"; the check compares " + (any_count ? std::string("elements") : std::to_string(count) + " elements") +
           " of " + type + "): judged as failed";
  }
  struct ::stat st {};
  const std::size_t bytes = static_cast<std::size_t>(got_count) * elem_size;
  if (::fstat(::fileno(f.get()), &st) != 0 || static_cast<std::uintmax_t>(st.st_size) != std::strlen(line) + bytes)
    return "the graded program's output for this check is cut short or too long: judged as failed";
  const bool same_file = held.data && held.device == static_cast<std::uintmax_t>(st.st_dev) &&
                         held.inode == static_cast<std::uintmax_t>(st.st_ino) && held.head == line && held.bytes == bytes;
  if (!same_file) {
    held = State::Held{};
    held.data.reset(new std::byte[bytes > 0 ? bytes : 1]);
    if (bytes > 0 && std::fread(held.data.get(), 1, bytes, f.get()) != bytes) {
      held = State::Held{};
      return "the graded program's output for this check is cut short: judged as failed";
    }
    held.device = static_cast<std::uintmax_t>(st.st_dev);
    held.inode = static_cast<std::uintmax_t>(st.st_ino);
    held.head = line;
    held.bytes = bytes;
  }
  out = std::span<const std::byte>(held.data.get(), bytes);
  return "";
}

}  // namespace

void configure(Mode mode, const std::string& dir) {
  State& s = state();
  s = State{};
  s.mode = mode;
  if (mode == Mode::off) return;
  s.dir = dir;
  std::error_code ec;
  if (mode == Mode::record) {
    fs::create_directories(s.dir, ec);
    if (ec || !fs::is_directory(s.dir))
      throw UsageError("--evidence " + dir + ": cannot create the folder (" + ec.message() + "). Name a writable folder.");
  } else if (!fs::is_directory(s.dir, ec)) {
    throw UsageError("--judge " + dir + ": no such folder. Name the folder a graded program wrote with --evidence.");
  }
}

Mode mode() { return state().mode; }

std::size_t recorded(const std::string& variant, const std::string& size, const std::string& step) {
  State& s = state();
  if (s.mode != Mode::judge) return 0;
  const std::string key = safe(variant) + "@" + safe(size) + "@" + step;
  const auto it = s.occurrences.find(key);
  std::size_t n = 0;
  for (int occurrence = it == s.occurrences.end() ? 0 : it->second;; ++occurrence, ++n) {
    std::error_code ec;
    if (!fs::exists(s.dir / (key + "#" + std::to_string(occurrence) + ".0.bin"), ec)) return n;
  }
}

Scope::Scope(const std::string& variant, const std::string& size, const std::string& step) {
  State& s = state();
  observed_at_start_ = s.total;
  s.in_scope = true;
  const std::string base = safe(variant) + "@" + safe(size);
  if (base != s.scope_base) s.held.clear();  // another record: its outputs are not the last one's
  s.scope_base = base;
  const std::string key = s.scope_base + "@" + step;
  s.scope_key = key + "#" + std::to_string(s.occurrences[key]++);
  s.in_scope_count = 0;
}

Scope::~Scope() { state().in_scope = false; }

std::size_t Scope::observations() const { return state().total - observed_at_start_; }

std::string observe_bytes(const void* data, std::size_t count, std::size_t elem_size, const char* type,
                          std::span<const std::byte>& judged, bool any_count) {
  State& s = state();
  if (s.mode == Mode::off) return "";
  const std::size_t order = s.in_scope ? s.in_scope_count++ : s.unscoped++;
  const std::string name = (s.in_scope ? s.scope_key : std::string("unscoped")) + "." + std::to_string(order) + ".bin";
  const fs::path path = s.dir / name;
  const std::string head = header(type, count, elem_size);
  const std::size_t bytes = count * elem_size;
  ++s.total;
  if (s.mode == Mode::judge)
    return read_output(path, type, count, elem_size, any_count,
                       s.held[std::make_pair(s.in_scope ? s.scope_base : std::string("unscoped"), order)], judged);

  const std::uint64_t h = digest(data, bytes) ^ digest(head.data(), head.size());
  if (s.in_scope) {
    const auto key = std::make_pair(s.scope_base, order);
    if (auto it = s.written.find(key); it != s.written.end()) {
      const auto& [old_hash, old_bytes, old_path] = it->second;
      std::error_code ec;
      if (old_hash == h && old_bytes == bytes && same_as_file(old_path, head, data, bytes)) {
        fs::create_hard_link(old_path, path, ec);
        if (!ec) return "";
      }
    }
    s.written[key] = {h, bytes, path};
  }
  write_output(path, head, data, bytes);
  return "";
}

}  // namespace cudalabs::evidence
