#!/bin/sh
# The revision a build is made from, for the JSON records: the short commit hash,
# with "-dirty" when tracked files differ from it. Run at every build (Meson's
# vcs_tag), so a record names the commit its program was really built from.
# A copy of the tree without .git reads REVISION, which the copy's maker writes
# with this same script; CUDALABS_REVISION, when set, wins over both.
cd "$(dirname "$0")/.." || exit 1
# A copy made elsewhere (the GPU machine's) may carry a stale .git: the copy's
# maker names the revision instead.
if [ -n "${CUDALABS_REVISION:-}" ]; then
  echo "$CUDALABS_REVISION"
elif hash=$(git rev-parse --short=7 HEAD 2>/dev/null); then
  if git diff --quiet HEAD -- 2>/dev/null; then echo "$hash"; else echo "$hash-dirty"; fi
elif [ -s REVISION ]; then
  head -n 1 REVISION
else
  echo unknown
fi
