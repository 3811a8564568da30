#pragma once
// Files embedded in the program at build time (embed.py writes their bytes as
// arrays): device code for the driver to load from memory, never from a path
// that could be missing or stale next to the executable. Labs 19 and 20 embed
// their device code or kernel source so; labs/shared/ is on both programs'
// include paths, for the generated file too.
#include <cstddef>
#include <span>
#include <string_view>

namespace embedded {

struct File {
  std::string_view name;       // as meson.build named it: "ptx", "cubin_sm_90", ...
  const unsigned char* data;   // 64-byte aligned, followed by a NUL byte (PTX and source text are C strings)
  std::size_t size;            // without that NUL
};

std::span<const File> files();  // defined in the generated file

inline const File* find(std::string_view name) {
  for (const File& f : files())
    if (f.name == name) return &f;
  return nullptr;
}

}  // namespace embedded
