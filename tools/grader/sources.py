"""What a student's kernel files may bring in at compile time.

A kernel file includes the lab's own headers, the course's (cudalabs/...), the
CUDA Toolkit's and the C++ library's, by name. It never needs a path that
leaves those folders, and an include of one is how a submission would read a
file of the grading machine into its compiler's error messages or its own
program (`#include "/etc/passwd"`, `#include "../../../../root/.ssh/id_rsa"`,
the assembler's `.incbin`). The sandbox hides the instructor's files anyway;
this check names the line before anything is compiled.

Rejected, in a student's file (each line read as written and without its
comments; a directive's '#' may be spelt %: or ??=):
  - #include / #include_next / __has_include / #embed of an absolute path or
    of a path with a `..` component, except the course's own form for another
    lab's header, "../NN_lab/file.cuh";
  - a computed include (`#include SOME_MACRO`, `__has_include(SOME_MACRO)`,
    `__has_include` renamed by a macro): its path cannot be checked here;
  - the assembler's `.incbin` and `.include` (in an asm statement, also split
    across string pieces, ".inc" "bin"): they paste a file's bytes in;
  - `#pragma GCC dependency` (and its _Pragma form): it looks a file up;
  - a line directive, `#line 1 "/etc/passwd"` or GCC's marker `# 1 "/etc/passwd"`:
    it reads nothing itself, but GCC prints a diagnostic's source line from the
    file the directive names, so `#line N "FILE"` then `#warning` writes line N
    of any file the build can read into the build log.
A text check cannot see what a macro builds; what the assembler read is
checked after the build from its own record (assembler_reads, below).
"""
from __future__ import annotations

import re
from pathlib import Path

# "#  include <x>" with any spacing, and the forms that also take a path; the
# directive's '#' may be spelt as the digraph %: or the trigraph ??=.
HASH = r'(?:#|%:|\?\?=)'
INCLUDE = re.compile(r'^\s*' + HASH + r'\s*(include|include_next|import|embed)\b\s*(.*)$')
# "#line ..." and GCC's line marker "# 1 ...": a kernel file has no use for either.
LINE = re.compile(r'^\s*' + HASH + r'\s*(line\b|\d)')
# Also without its '(' ("#define H __has_include", then "#if H("/etc/x")"): a
# probe renamed by a macro is a computed one.
HAS_INCLUDE = re.compile(r'__has_(?:include|embed)(?:_next)?\b(?:\s*\(\s*([<"][^>"]*[>"])?)?')
# GNU as's directives that read a file; and GCC's pragma that looks one up.
INCBIN = re.compile(r'\.(incbin|include)\b')
DEPENDENCY = re.compile(r'\bpragma\b.*\bdependency\b|_Pragma\s*\(.*\bdependency\b')
LITERAL = re.compile(r'"((?:[^"\\\n]|\\.)*)"')


def code_only(text: str) -> str:
    """The text as the compiler reads it: comments replaced by a space (their
    newlines kept, so line numbers stay), string and character literals kept.
    A digit separator (1'000) is no character literal, a raw string R"x(...)x"
    is read to its end, and no literal runs past its line."""
    out, i, n = [], 0, len(text)
    while i < n:
        c = text[i]
        if text.startswith("//", i):
            j = text.find("\n", i)
            i = n if j < 0 else j
            out.append(" ")
        elif text.startswith("/*", i):
            j = text.find("*/", i + 2)
            j = n if j < 0 else j + 2
            out.append(" " + "\n" * text.count("\n", i, j))
            i = j
        elif c == "R" and text.startswith('R"', i) and (i == 0 or not (text[i - 1].isalnum() or text[i - 1] == "_")
                                                         or text[i - 1] in "uUL8" and not text[i - 2:i - 1].isalnum()):
            m = re.match(r'R"([^()\\\s]{0,16})\(', text[i:])
            if not m:
                out.append(c)
                i += 1
                continue
            end = text.find(")" + m.group(1) + '"', i + m.end())
            j = n if end < 0 else end + len(m.group(1)) + 2
            out.append(text[i:j])
            i = j
        elif c in "\"'" and not (c == "'" and i > 0 and (text[i - 1].isalnum() or text[i - 1] == "_")
                                 and not re.search(r"(^|[^\w])(u8|u|U|L)$", text[max(0, i - 3):i])):
            j = i + 1
            while j < n and text[j] != c and text[j] != "\n":
                j += 2 if text[j] == "\\" else 1
            j = min(j + 1, n) if j < n and text[j] == c else j
            out.append(text[i:j])
            i = j
        else:
            out.append(c)
            i += 1
    return "".join(out)
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
        # Each line read twice: as written, and as the compiler reads it (comments
        # gone: "/**/ #include" is a directive too).
        code = code_only(text).splitlines()
        for number, line in enumerate(text.splitlines(), 1):
            where = f"{name}:{number}"
            stripped = code[number - 1] if number <= len(code) else ""
            # The same problem seen in both views: once.
            found += dict.fromkeys([*line_problems(where, line), *line_problems(where, stripped, code=True)])
    return found


def line_problems(where: str, line: str, code: bool = False) -> list[str]:
    """The forbidden includes of one line of a kernel file; code: the line without
    its comments, where the assembly's directives and the pragma are looked for too
    (a comment may mention them)."""
    found = []
    m = INCLUDE.match(line)
    if m:
        target = m.group(2).strip()
        q = QUOTED.match(target)
        if not q:
            found.append(f"{where}: #{m.group(1)} {target[:60]} is a computed include (a macro): a kernel "
                         f"file includes headers by name, \"file.cuh\" or <header>")
        elif why := _bad_path(q.group(1)):
            found.append(f"{where}: #{m.group(1)} {q.group(0)} names {why}: a kernel file may include only "
                         f"the lab's files, the course's headers and the toolkit's, by name")
    if LINE.match(line):
        found.append(f"{where}: a line directive (#line N \"FILE\", # N \"FILE\") makes the compiler's messages "
                     f"quote line N of FILE, a file of the grading machine: not allowed in a kernel file")
    for h in HAS_INCLUDE.finditer(line):
        if not h.group(1):
            found.append(f"{where}: __has_include of a macro is a computed include: its path cannot be "
                         f"checked here; name the header, __has_include(<header>)")
        elif why := _bad_path(h.group(1)[1:-1]):
            found.append(f"{where}: __has_include({h.group(1)}) names {why}")
    if not code:
        return found
    # Adjacent string literals are one string (".inc" "bin"): the directive's name
    # split across them is still found.
    joined = line + " " + "".join(LITERAL.findall(line))
    for directive in dict.fromkeys(x.group(1) for x in INCBIN.finditer(joined)):
        found.append(f"{where}: .{directive} (assembly) reads a file of the grading machine into the program: "
                     f"not allowed in a kernel file")
    if DEPENDENCY.search(line):
        found.append(f"{where}: #pragma GCC dependency looks up a file of the grading machine: not allowed "
                     f"in a kernel file")
    return found


# ---- what the assembler read ---------------------------------------------------------
# GNU as reads a file of its own for `.include "f"` and `.incbin "f"`, and the text
# of a host-side asm() may be spelt in ways no check of the source sees: string
# pieces joined by a macro, an assembler macro (`.macro m x` ... `.inc\x`), an
# operand printed into the directive. So the grader's build of a submission runs
# the assembler through tools/grader/asm/as (nvcc -Xcompiler=-B, set through
# NVCC_APPEND_FLAGS: it reaches every nvcc of the build, a lab's own custom
# commands too), which writes beside each object OBJECT.asd, GNU as's --MD
# record of every file the assembly read. A student object whose record names
# any file but its own input is rejected, and so is one without a record.
ASM_WRAPPER = Path(__file__).resolve().parent / "asm"
ASSEMBLER_ENV = {"NVCC_APPEND_FLAGS": f"-Xcompiler=-B{ASM_WRAPPER}/"}
# nvcc's host translation unit, named by the assembly's own `.file` directive.
NVCC_HOST_UNIT = re.compile(r"^tmpxft_[0-9a-f_]+-\d+_[^/]*\.cudafe1\.(cpp|c)$")


def assembler_record(path: Path) -> list[str]:
    """The files a .asd record (make's format) names, in its order."""
    text = path.read_text(errors="replace").replace("\\\n", " ")
    _, _, deps = text.partition(": ")
    return deps.split()


def assembler_reads(objects: dict) -> list[str]:
    """One line per student object (name -> its path in the build) whose assembly read a
    file besides its input, or that has no record of what its assembly read."""
    found = []
    for name, obj in sorted(objects.items()):
        record = Path(str(obj) + ".asd")
        if not record.is_file():
            found.append(f"{name}: the build left no record of the files its assembler read ({record.name}): the "
                         f"grader's build assembles with tools/grader/asm/as (GNU as, through GCC). Fix (the "
                         f"instructor's): build the submission again in a fresh work folder, with GCC as nvcc's "
                         f"host compiler")
            continue
        deps = assembler_record(record)
        extra = [d for d in deps[:-1] if not NVCC_HOST_UNIT.match(d)]
        if not deps or not deps[-1].endswith(".s"):
            extra = deps
        if extra:
            found.append(f"{name}: its assembly read {', '.join(extra[:3])} (.include or .incbin in an asm "
                         f"statement, however spelt: it pastes a file of the grading machine into the program). "
                         f"Fix: remove the directive; a kernel file's assembly reads no file")
    return found
