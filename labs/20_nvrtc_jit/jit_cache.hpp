#pragma once
// A disk cache of run-time compiled GPU code, so that a program compiles each
// kernel once per machine and toolchain, not once per start.
//
// Key: everything the compiled code depends on, in one text (CacheKey::text):
// the source, the compile options, the target architecture, the NVRTC version
// and the driver version, and the kernel instantiations (name expressions).
// Any difference is another entry. The file name is a 64-bit hash of that
// text; the file holds the whole text as well, so two keys with the same hash
// (or a file copied under another name) are told apart, never confused.
//
// One file per entry, <dir>/jit-<16 hex digits>.bin:
//   offset  0  8 bytes   magic "CLJIT01\n" (format version in it)
//           8  u64       key length K          (little-endian, like every field)
//          16  u64       payload length P
//          24  u64       FNV-1a 64 checksum of the K + P bytes that follow
//          32  K bytes   the key text
//        32+K  P bytes   payload: u8 kind (1 cubin, 2 PTX), u32 count, then per
//                        kernel u32 length + name expression, u32 length +
//                        lowered (mangled) name; then u64 length + image
// A file is used only when all of it checks: magic, lengths that add up to
// the file's size exactly (a truncated or extended file fails), checksum, the
// key text, and a payload that parses to its end. Anything else is a miss
// with the reason, and the caller compiles again and replaces the file.
//
// Writes are atomic: the entry goes to a temporary file in the same folder
// (O_EXCL, a name unique to the process and call), is fsync'ed, then renamed
// over the entry (rename is atomic within a file system), and the folder is
// fsync'ed. Two processes storing the same entry at once each rename a
// complete file; a reader sees the old file or a new one, never a mixture.
//
// CPU only: no CUDA here. jit_cache_test.cpp tests all of the above.
#include <cstdint>
#include <filesystem>
#include <optional>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

namespace lab20 {

struct CacheKey {
  std::string source;
  std::vector<std::string> options;
  std::string arch;                // "sm_90" (cubin) or "compute_90" (PTX)
  int nvrtc_major = 0, nvrtc_minor = 0;
  int driver_version = 0;          // cudaDriverGetVersion: 13000 = 13.0
  std::vector<std::string> name_expressions;

  std::string text() const;        // the canonical form: what is hashed and stored
  std::uint64_t hash() const;
  std::string file_name() const;   // "jit-0123456789abcdef.bin"
};

struct CompiledCode {
  enum class Kind : std::uint8_t { cubin = 1, ptx = 2 };
  Kind kind = Kind::cubin;
  std::string image;                                        // the cubin, or the PTX text
  std::vector<std::pair<std::string, std::string>> lowered;  // name expression -> mangled name
  bool operator==(const CompiledCode&) const = default;
};

std::uint64_t fnv1a64(std::string_view bytes, std::uint64_t h = 0xcbf29ce484222325ull);

// The file's bytes, and back. decode_entry returns nullopt with the reason in
// *why (never throws, never reads out of bounds) for anything but a valid
// entry of `expected`.
std::string encode_entry(const CacheKey& key, const CompiledCode& code);
std::optional<CompiledCode> decode_entry(std::string_view file, const CacheKey& expected, std::string* why);

class JitCache {
 public:
  // An empty folder disables the cache: every load misses, nothing is stored.
  explicit JitCache(std::filesystem::path dir) : dir_(std::move(dir)) {}
  // $XDG_CACHE_HOME/cudalabs, else $HOME/.cache/cudalabs, else "" (no cache).
  static std::filesystem::path default_dir();

  const std::filesystem::path& dir() const { return dir_; }
  bool enabled() const { return !dir_.empty(); }
  std::filesystem::path path_of(const CacheKey& key) const { return dir_ / key.file_name(); }

  struct Lookup {
    std::optional<CompiledCode> code;
    std::string miss;  // why there was no usable entry: "absent", "truncated ...", "another key ..."
  };
  Lookup load(const CacheKey& key) const;
  // Creates the folder if needed. False, with the reason, when the entry could
  // not be written (read-only folder, full disk): the caller goes on without it.
  bool store(const CacheKey& key, const CompiledCode& code, std::string* why_not) const;

 private:
  std::filesystem::path dir_;
};

}  // namespace lab20
