// CPU tests of the JIT disk cache (jit_cache.hpp): no GPU, no NVRTC.
//   the key          equal inputs, equal key; any one input changed, another key
//   the file         a round trip; every truncation, bit flips across the file,
//                    appended bytes, another key's file, a wrong magic, an
//                    empty file: each a miss with its reason, never a crash
//   atomic writes    processes storing one entry while another reads it: every
//                    read is a whole entry, no temporary file is left behind
//   bad folders      a folder that cannot be created: store says why, load misses
// Each case prints ok/FAIL; the exit code is the number of failures (0: all passed).
#include <sys/wait.h>
#include <unistd.h>

#include <cstdio>
#include <filesystem>
#include <fstream>
#include <string>
#include <vector>

#include "jit_cache.hpp"

namespace fs = std::filesystem;
using lab20::CacheKey;
using lab20::CompiledCode;
using lab20::JitCache;

namespace {

int failures = 0;

void expect(bool ok, const std::string& what) {
  std::printf("%s: %s\n", ok ? "ok  " : "FAIL", what.c_str());
  failures += ok ? 0 : 1;
}

CacheKey sample_key() {
  CacheKey k;
  k.source = "template <int C> __global__ void k(float* y) { y[threadIdx.x] = C; }\n";
  k.options = {"-arch=sm_90", "-std=c++17"};
  k.arch = "sm_90";
  k.nvrtc_major = 13;
  k.nvrtc_minor = 0;
  k.driver_version = 13000;
  k.name_expressions = {"k<4>"};
  return k;
}

CompiledCode sample_code(char fill = 'x', std::size_t bytes = 3000) {
  CompiledCode c;
  c.kind = CompiledCode::Kind::cubin;
  c.image = std::string(bytes, fill);
  c.image[0] = '\x7f';  // binary content, zeros included
  c.image[1] = '\0';
  c.lowered = {{"k<4>", "_Z1kILi4EEvPf"}};
  return c;
}

void write_file(const fs::path& p, const std::string& bytes) { std::ofstream(p, std::ios::binary) << bytes; }

void test_key() {
  const CacheKey base = sample_key();
  expect(base.text() == sample_key().text() && base.file_name() == sample_key().file_name(),
         "the same inputs give the same key and file name (" + base.file_name() + ")");
  std::vector<std::pair<std::string, CacheKey>> changed;
  auto variant = [&](const std::string& what, auto change) {
    CacheKey k = sample_key();
    change(k);
    changed.emplace_back(what, k);
  };
  variant("source", [](CacheKey& k) { k.source += " "; });
  variant("value of an option", [](CacheKey& k) { k.options[1] = "-std=c++20"; });
  variant("number of options", [](CacheKey& k) { k.options.push_back("-lineinfo"); });
  variant("architecture", [](CacheKey& k) { k.arch = "sm_80"; });
  variant("NVRTC version", [](CacheKey& k) { k.nvrtc_minor = 1; });
  variant("driver version", [](CacheKey& k) { k.driver_version = 13010; });
  variant("name expression", [](CacheKey& k) { k.name_expressions = {"k<5>"}; });
  // Length prefixes: moving text from one field to the next is another key.
  variant("split of the same characters into options", [](CacheKey& k) { k.options = {"-arch=sm_90-std=c++17"}; });
  for (const auto& [what, k] : changed)
    expect(k.text() != base.text() && k.file_name() != base.file_name(), "changing the " + what + " changes the key");
}

void test_file_format(const fs::path& dir) {
  const JitCache cache(dir);
  const CacheKey key = sample_key();
  const CompiledCode code = sample_code();
  std::string why;
  expect(cache.load(key).miss == "absent", "an entry never stored is absent");
  const bool stored = cache.store(key, code, &why);
  expect(stored, "store creates the folder and writes the entry" + (why.empty() ? "" : ": " + why));
  const JitCache::Lookup hit = cache.load(key);
  expect(hit.code && *hit.code == code, "load gives back what was stored");

  const std::string good = lab20::encode_entry(key, code);
  int truncated_missed = 0;
  for (std::size_t len = 0; len < good.size(); ++len)
    truncated_missed += lab20::decode_entry(std::string_view(good).substr(0, len), key, &why) ? 0 : 1;
  expect(truncated_missed == static_cast<int>(good.size()),
         "every truncation (" + std::to_string(good.size()) + " lengths) is a miss");

  int flips_missed = 0, flips = 0;
  for (std::size_t at = 0; at < good.size(); at += at < 64 ? 1 : 97) {  // every header byte, then a sample
    for (int bit : {0, 7}) {
      std::string bad = good;
      bad[at] = static_cast<char>(bad[at] ^ (1 << bit));
      ++flips;
      flips_missed += lab20::decode_entry(bad, key, &why) ? 0 : 1;
    }
  }
  expect(flips_missed == flips, "every flipped bit (" + std::to_string(flips) + " tried) is a miss");

  // The reason a file is refused, "" when it is accepted.
  auto refusal = [&](std::string_view file, const CacheKey& k) {
    std::string reason;
    return lab20::decode_entry(file, k, &reason) ? std::string() : reason;
  };
  std::string reason = refusal(good + "x", key);
  expect(reason.starts_with("truncated or extended"), "a byte appended is a miss: " + reason);
  reason = refusal("", key);
  expect(reason.starts_with("truncated"), "an empty file is a miss: " + reason);
  std::string wrong_magic = good;
  wrong_magic[0] = 'X';
  reason = refusal(wrong_magic, key);
  expect(reason.find("magic") != std::string::npos, "a wrong magic is a miss: " + reason);

  // Another key's valid entry under this key's name (a hash collision, or a copy).
  CacheKey other = key;
  other.source += "// another kernel\n";
  write_file(cache.path_of(key), lab20::encode_entry(other, code));
  const JitCache::Lookup foreign = cache.load(key);
  expect(!foreign.code && foreign.miss.find("another key") != std::string::npos,
         "another key's file under this key's name is a miss: " + foreign.miss);

  // A corrupt file on disk is replaced by the next store.
  write_file(cache.path_of(key), good.substr(0, good.size() / 2));
  expect(!cache.load(key).code, "a half-written file on disk is a miss");
  expect(cache.store(key, code, &why) && cache.load(key).code == code, "the next store replaces it");
}

// Writers store the same entry with different images (real writers would store
// equal ones; different ones make a mixture visible) while this process reads.
void test_concurrent_writers(const fs::path& dir) {
  const JitCache cache(dir);
  const CacheKey key = sample_key();
  constexpr int writers = 6, stores_each = 60;
  std::vector<CompiledCode> valid;
  for (int w = 0; w < writers; ++w) valid.push_back(sample_code(static_cast<char>('a' + w), 200000 + 4096 * w));
  std::vector<pid_t> children;
  for (int w = 0; w < writers; ++w) {
    const pid_t pid = ::fork();
    if (pid == 0) {
      std::string why;
      for (int i = 0; i < stores_each; ++i)
        if (!cache.store(key, valid[w], &why)) ::_exit(1);
      ::_exit(0);
    }
    children.push_back(pid);
  }
  int reads = 0, hits = 0, bad = 0;
  for (bool running = true; running;) {
    const JitCache::Lookup r = cache.load(key);
    ++reads;
    if (r.code) {
      ++hits;
      bool known = false;
      for (const auto& v : valid) known = known || *r.code == v;
      bad += known ? 0 : 1;
    } else if (r.miss != "absent") {
      ++bad;  // a file that exists must always be a whole entry
    }
    running = false;
    for (pid_t p : children) running = running || ::waitpid(p, nullptr, WNOHANG) == 0;
  }
  int exits_ok = 0;
  for (pid_t p : children) {
    int status = 0;
    ::waitpid(p, &status, 0);
    exits_ok += (WIFEXITED(status) && WEXITSTATUS(status) == 0) ? 1 : 0;
  }
  expect(exits_ok == writers, std::to_string(writers) + " processes x " + std::to_string(stores_each) + " stores all succeeded");
  expect(bad == 0, std::to_string(reads) + " reads during the stores, " + std::to_string(hits) +
                       " hits, every one a whole entry (" + std::to_string(bad) + " not)");
  int leftovers = 0;
  for (const auto& e : fs::directory_iterator(dir)) leftovers += e.path().string().find(".tmp-") != std::string::npos;
  expect(leftovers == 0, "no temporary files left behind");
  expect(cache.load(key).code.has_value(), "the entry is whole after they finish");
}

void test_bad_folders(const fs::path& dir) {
  const fs::path file = dir / "a_file";
  write_file(file, "not a folder");
  const JitCache cache(file / "sub");  // a folder inside a file cannot exist
  std::string why;
  const bool stored = cache.store(sample_key(), sample_code(), &why);
  expect(!stored && !why.empty(), "store in an impossible folder fails: " + why);
  expect(!cache.load(sample_key()).code, "load from it misses");
  const JitCache off{fs::path{}};
  expect(!off.store(sample_key(), sample_code(), &why) && !off.load(sample_key()).code, "an empty folder disables the cache");
}

}  // namespace

int main() {
  const fs::path dir = fs::temp_directory_path() / ("cudalabs_jit_cache_test_" + std::to_string(::getpid()));
  fs::remove_all(dir);
  test_key();
  test_file_format(dir / "format");
  test_concurrent_writers(dir / "concurrent");
  test_bad_folders(dir);
  fs::remove_all(dir);
  std::printf("%s\n", failures ? "FAILED" : "all cache tests passed");
  return failures;
}
