#pragma once
// The revision the library was built from: generated at build time (revision.cpp.in).
#include <string>

namespace cudalabs {
std::string revision_hash();  // "abc1234", or "unknown" outside a git checkout without REVISION
bool revision_dirty();        // the tree had local changes when built
}  // namespace cudalabs
