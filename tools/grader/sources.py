"""What a student's kernel files may bring in at compile time.

A kernel file includes the lab's own headers, the course's (cudalabs/...), the
CUDA Toolkit's and the C++ library's, by name. It never needs a path that
leaves those folders, and an include of one is how a submission would read a
file of the grading machine into its compiler's error messages or its own
program (`#include "/etc/passwd"`, `#include "../../../../root/.ssh/id_rsa"`,
the assembler's `.incbin`). The sandbox hides the instructor's files anyway;
this check names the line before anything is compiled.

Rejected, in a student's file:
  - #include / #include_next / __has_include / #embed of an absolute path or
    of a path with a `..` component, except the course's own form for another
    lab's header, "../NN_lab/file.cuh";
  - a computed include (`#include SOME_MACRO`): its path cannot be checked here;
  - `.incbin` / `.incbin` through inline assembly: it pastes a file's bytes in.
"""
from __future__ import annotations

import re
from pathlib import Path

# "#  include <x>" with any spacing, and the forms that also take a path.
INCLUDE = re.compile(r'^\s*#\s*(include|include_next|import|embed)\b\s*(.*)$')
HAS_INCLUDE = re.compile(r'__has_include(?:_next)?\s*\(\s*([<"][^>"]*[>"])')
INCBIN = re.compile(r'\.incbin\b')
QUOTED = re.compile(r'^[<"]([^>"]*)[>"]')


# The course's way to reach another lab's header: "../12_softmax/softmax.cuh",
# one step up into a lab folder, then a file (labs 13, 16, 29 and 31 do). Only a
# lab folder (NN_name): the course's shared host code, labs/shared/, is the
# host program's, never a kernel file's ("../shared/..." is refused).
OTHER_LAB = re.compile(r"^\.\./\d\d_[A-Za-z0-9_]+/[A-Za-z0-9_.-]+$")


def _bad_path(path: str) -> str | None:
    """Why an include path leaves the allowed folders, or None."""
    if path.startswith("/") or re.match(r"^[A-Za-z]:[\\/]", path):
        return "an absolute path"
    if OTHER_LAB.match(path):
        return None
    if ".." in re.split(r"[\\/]", path):
        return "a path that climbs out of the folder ('..')"
    return None


def problems(folder: Path, files: list[str]) -> list[str]:
    """One line per forbidden include in the student's `files` (names in `folder`)."""
    found = []
    for name in files:
        path = folder / name
        try:
            text = path.read_text(errors="replace")
        except OSError as e:
            found.append(f"{name}: cannot be read ({e})")
            continue
        # Joined continuation lines, so "#include \\\n </etc/passwd>" is one line.
        text = text.replace("\\\r\n", "").replace("\\\n", "")
        for number, line in enumerate(text.splitlines(), 1):
            where = f"{name}:{number}"
            m = INCLUDE.match(line)
            if m:
                target = m.group(2).strip()
                q = QUOTED.match(target)
                if not q:
                    found.append(f"{where}: #{m.group(1)} {target[:60]} is a computed include (a macro): a kernel "
                                 f"file includes headers by name, \"file.cuh\" or <header>")
                    continue
                why = _bad_path(q.group(1))
                if why:
                    found.append(f"{where}: #{m.group(1)} {q.group(0)} names {why}: a kernel file may include only "
                                 f"the lab's files, the course's headers and the toolkit's, by name")
            for h in HAS_INCLUDE.finditer(line):
                why = _bad_path(h.group(1)[1:-1])
                if why:
                    found.append(f"{where}: __has_include({h.group(1)}) names {why}")
            if INCBIN.search(line):
                found.append(f"{where}: .incbin pastes a file of the grading machine into the program: not allowed "
                             f"in a kernel file")
    return found
