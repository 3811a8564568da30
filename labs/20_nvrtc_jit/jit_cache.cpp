#include "jit_cache.hpp"

#include <fcntl.h>
#include <unistd.h>

#include <atomic>
#include <cerrno>
#include <chrono>
#include <cstdlib>
#include <cstring>
#include <fstream>

namespace lab20 {

namespace {

constexpr std::string_view magic = "CLJIT01\n";
constexpr std::size_t header_bytes = 32;
constexpr std::uint64_t largest_entry = std::uint64_t{1} << 30;  // a GPU image is kB to MB: more is not ours

void put_u64(std::string& out, std::uint64_t v) {
  for (int i = 0; i < 8; ++i) out += static_cast<char>((v >> (8 * i)) & 0xFF);
}
void put_u32(std::string& out, std::uint32_t v) {
  for (int i = 0; i < 4; ++i) out += static_cast<char>((v >> (8 * i)) & 0xFF);
}
void put_text(std::string& out, std::string_view s) {
  put_u32(out, static_cast<std::uint32_t>(s.size()));
  out += s;
}

// Reads fields from a byte range; every read is bounds-checked and a failed
// one makes every later read fail too.
struct Reader {
  std::string_view bytes;
  std::size_t at = 0;
  bool ok = true;

  std::uint64_t u(int width) {
    if (!ok || bytes.size() - at < static_cast<std::size_t>(width)) {
      ok = false;
      return 0;
    }
    std::uint64_t v = 0;
    for (int i = 0; i < width; ++i) v |= std::uint64_t{static_cast<unsigned char>(bytes[at + i])} << (8 * i);
    at += static_cast<std::size_t>(width);
    return v;
  }
  std::string_view take(std::uint64_t n) {
    if (!ok || bytes.size() - at < n) {
      ok = false;
      return {};
    }
    std::string_view s = bytes.substr(at, n);
    at += n;
    return s;
  }
  std::string_view text() { return take(u(4)); }
};

void field(std::string& out, std::string_view tag, std::string_view value) {
  out += tag;
  out += ' ';
  out += std::to_string(value.size());
  out += ':';
  out += value;
  out += '\n';
}

std::string hex16(std::uint64_t v) {
  static constexpr char digits[] = "0123456789abcdef";
  std::string s(16, '0');
  for (int i = 15; i >= 0; --i, v >>= 4) s[i] = digits[v & 0xF];
  return s;
}

std::string errno_text(const std::string& what) { return what + ": " + std::strerror(errno); }

// write(2) until all of it is written (it may write less, or be interrupted).
bool write_all(int fd, std::string_view bytes) {
  while (!bytes.empty()) {
    const ssize_t n = ::write(fd, bytes.data(), bytes.size());
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) return false;
    bytes.remove_prefix(static_cast<std::size_t>(n));
  }
  return true;
}

}  // namespace

std::uint64_t fnv1a64(std::string_view bytes, std::uint64_t h) {
  for (unsigned char c : bytes) {
    h ^= c;
    h *= 0x100000001b3ull;
  }
  return h;
}

// Every field length-prefixed, so no choice of option or source text can make
// two different keys print the same.
std::string CacheKey::text() const {
  std::string s = "cudalabs jit cache key 1\n";
  field(s, "arch", arch);
  field(s, "nvrtc", std::to_string(nvrtc_major) + "." + std::to_string(nvrtc_minor));
  field(s, "driver", std::to_string(driver_version));
  for (const auto& o : options) field(s, "option", o);
  for (const auto& n : name_expressions) field(s, "name", n);
  field(s, "source", source);
  return s;
}

std::uint64_t CacheKey::hash() const { return fnv1a64(text()); }
std::string CacheKey::file_name() const { return "jit-" + hex16(hash()) + ".bin"; }

std::string encode_entry(const CacheKey& key, const CompiledCode& code) {
  std::string payload;
  payload += static_cast<char>(code.kind);
  put_u32(payload, static_cast<std::uint32_t>(code.lowered.size()));
  for (const auto& [expression, lowered] : code.lowered) {
    put_text(payload, expression);
    put_text(payload, lowered);
  }
  put_u64(payload, code.image.size());
  payload += code.image;

  const std::string key_text = key.text();
  std::string file(magic);
  put_u64(file, key_text.size());
  put_u64(file, payload.size());
  put_u64(file, fnv1a64(payload, fnv1a64(key_text)));
  return file + key_text + payload;
}

std::optional<CompiledCode> decode_entry(std::string_view file, const CacheKey& expected, std::string* why) {
  auto miss = [&](std::string reason) {
    *why = std::move(reason);
    return std::nullopt;
  };
  if (file.size() < header_bytes) return miss("truncated: " + std::to_string(file.size()) + " bytes, less than a header");
  if (file.substr(0, magic.size()) != magic) return miss("not an entry of this cache (wrong magic or format version)");
  Reader header{file.substr(magic.size(), header_bytes - magic.size())};
  const std::uint64_t key_len = header.u(8), payload_len = header.u(8), checksum = header.u(8);
  if (key_len > largest_entry || payload_len > largest_entry || file.size() - header_bytes != key_len + payload_len)
    return miss("truncated or extended: " + std::to_string(file.size()) + " bytes, the header says " +
                std::to_string(header_bytes + key_len + payload_len));
  const std::string_view key_text = file.substr(header_bytes, key_len);
  const std::string_view payload = file.substr(header_bytes + key_len);
  if (fnv1a64(payload, fnv1a64(key_text)) != checksum) return miss("checksum mismatch: the file is corrupt");
  if (key_text != expected.text()) return miss("another key's entry (same file name, different source or options)");

  Reader r{payload};
  CompiledCode code;
  const auto kind = r.u(1);
  if (kind != 1 && kind != 2) return miss("unknown image kind " + std::to_string(kind));
  code.kind = static_cast<CompiledCode::Kind>(kind);
  const std::uint64_t count = r.u(4);
  for (std::uint64_t i = 0; r.ok && i < count; ++i) {
    const std::string_view expression = r.text();
    const std::string_view lowered = r.text();
    code.lowered.emplace_back(expression, lowered);
  }
  code.image = std::string(r.take(r.u(8)));
  if (!r.ok || r.at != payload.size()) return miss("the payload does not parse");
  if (code.image.empty()) return miss("an empty image");
  return code;
}

std::filesystem::path JitCache::default_dir() {
  if (const char* xdg = std::getenv("XDG_CACHE_HOME"); xdg && xdg[0] == '/') return std::filesystem::path(xdg) / "cudalabs";
  if (const char* home = std::getenv("HOME"); home && home[0] == '/')
    return std::filesystem::path(home) / ".cache" / "cudalabs";
  return {};
}

JitCache::Lookup JitCache::load(const CacheKey& key) const {
  Lookup result;
  if (!enabled()) {
    result.miss = "no cache folder";
    return result;
  }
  const std::filesystem::path path = path_of(key);
  std::ifstream f(path, std::ios::binary);
  if (!f) {
    result.miss = "absent";
    return result;
  }
  f.seekg(0, std::ios::end);
  const std::streamoff size = f.tellg();
  if (size < 0 || static_cast<std::uint64_t>(size) > largest_entry + header_bytes) {
    result.miss = "unreadable or too large";
    return result;
  }
  std::string bytes(static_cast<std::size_t>(size), '\0');
  f.seekg(0);
  if (!f.read(bytes.data(), size)) {
    result.miss = "read failed";
    return result;
  }
  result.code = decode_entry(bytes, key, &result.miss);
  return result;
}

bool JitCache::store(const CacheKey& key, const CompiledCode& code, std::string* why_not) const {
  auto fail = [&](std::string why) {
    *why_not = std::move(why);
    return false;
  };
  if (!enabled()) return fail("no cache folder");
  std::error_code ec;
  std::filesystem::create_directories(dir_, ec);
  if (ec) return fail("cannot create " + dir_.string() + ": " + ec.message());

  // Unique among processes (pid) and among calls of this one (counter, clock).
  static std::atomic<unsigned> counter{0};
  const std::filesystem::path entry = path_of(key);
  const std::filesystem::path tmp =
      dir_ / (key.file_name() + ".tmp-" + std::to_string(::getpid()) + "-" + std::to_string(counter++) + "-" +
              std::to_string(std::chrono::steady_clock::now().time_since_epoch().count()));
  const int fd = ::open(tmp.c_str(), O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0644);
  if (fd < 0) return fail(errno_text("cannot create " + tmp.string()));
  std::string why;
  if (!write_all(fd, encode_entry(key, code))) why = errno_text("cannot write " + tmp.string());
  // The data is on disk before the name points at it: after a crash the entry
  // is the old file or the whole new one, not a name for half-written blocks.
  else if (::fsync(fd) != 0) why = errno_text("fsync " + tmp.string());
  if (::close(fd) != 0 && why.empty()) why = errno_text("close " + tmp.string());
  if (why.empty() && std::rename(tmp.c_str(), entry.c_str()) != 0) why = errno_text("rename to " + entry.string());
  if (!why.empty()) {
    ::unlink(tmp.c_str());
    return fail(why);
  }
  if (const int dir_fd = ::open(dir_.c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC); dir_fd >= 0) {
    ::fsync(dir_fd);  // the rename itself on disk; best effort (some file systems refuse)
    ::close(dir_fd);
  }
  return true;
}

}  // namespace lab20
