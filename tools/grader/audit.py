#!/usr/bin/env python3
"""The link-time audit of a student's compiled kernel objects.

A lab's kernel files are compiled into the lab's kernel translation units (the
static libraries build/labs/LAB/lib*.a) and linked into the course's host
program: the student's host code runs in the same process as the checks, the
timing and the records file. Before that program runs, this module reads the
student's objects (nm, objdump, c++filt; stdlib only) and rejects:

  imports     a symbol the objects call or use that tools/allowed_imports.toml
              does not allow: what a kernel file needs (the CUDA runtime's launch,
              memory, stream, event, attribute, occupancy, device-query and error
              calls, nvcc's glue, math, the C++ runtime and library internals,
              the course library's public helpers, the lab's own interface);
              named families are rejected with their rule (file I/O, processes,
              exit hooks, the environment, dynamic loading, signals, sockets,
              threads, memory mapping, sleeping, asking whether GPU work has
              finished, raw system calls, the harness's
              internals, another lab's code, CUDA calls that change the
              harness's device state, libraries the lab is measured against);
  device calls
              in a lab whose student files are device code only, loaded as a
              module rather than linked (lab 19: [labs.LAB] device_code names its
              PTX), a function the kernels call outside themselves (PTX's
              .extern .func: device-side launches, the device heap) that the
              lab's device_calls does not list;
  syscalls    a system-call instruction in the host code (syscall, sysenter,
              int $0x80, with any prefix: inline assembly reaching the kernel
              past every rule), every executable section read as code (a data
              object placed in .text is disassembled too); the same for the
              CPU's clock and counters (rdtsc, rdtscp, rdpmc);
  writable code
              a section both writable and executable, or an executable stack
              (code written at run time, which no disassembly reads);
  redefinitions
              a symbol the objects define that the course's host program or
              libraries define or use, or that a system library (libc, libm,
              libstdc++, libgcc_s, the CUDA runtime) exports: the student's copy
              would replace the course's or the library's at link time, for the
              harness's own calls too.

This is no sandbox: native code in the process can still reach the harness's
memory by pointer (tools/grader/sandbox.py limits what the process can reach
outside itself). It rejects every way in that shows in the objects' symbols.

API (tools/grade.py): student_archives(build, lab), audit_lab(build, lab) -> [problem lines].
Command line:
  python3 tools/grader/audit.py --build build [--labs 04,07] [--families]
  (or, from tools/: python3 -m grader.audit ...)
prints each lab's verdict: exit 0 when every lab is accepted, 1 when one is
rejected, 2 on bad usage (no such build or lab, an unreadable allow-list).
"""
from __future__ import annotations

import argparse
import bisect
import fnmatch
import functools
import os
import re
import shutil
import subprocess
import sys
from collections import defaultdict
from dataclasses import dataclass, field
from pathlib import Path

try:
    import tomllib
except ImportError:  # Python 3.10 (Ubuntu 22.04): the same parser as the tomli package
    try:
        import tomli as tomllib
    except ImportError:
        print("audit: error: Python " + sys.version.split()[0] + " has no tomllib; install python3-tomli "
              "(sudo apt-get install python3-tomli) or use Python 3.11+", file=sys.stderr)
        sys.exit(2)

__all__ = ["DEFAULT_ALLOW_FILE", "AuditError", "AllowList", "Report", "student_archives", "course_objects",
           "audit_lab", "audit", "defined_symbols", "main"]

TOOLS = Path(__file__).resolve().parent.parent
DEFAULT_ALLOW_FILE = TOOLS / "allowed_imports.toml"
# Problems of one rule listed per lab before "... and N more" (a kernel file that
# includes <fstream> imports some 20 symbols of it: the first few say what to fix).
MAX_PER_RULE = 8


class AuditError(Exception):
    """The audit could not be carried out (a tool missing, an unreadable allow-list)."""


# ---- reading objects ------------------------------------------------------------------

def tool(*cmd, stdin=None):
    """stdout of a binutils command; AuditError if it is missing or fails."""
    try:
        p = subprocess.run(list(cmd), input=stdin, capture_output=True, text=True)
    except FileNotFoundError:
        raise AuditError(f"{cmd[0]} not found: the audit needs binutils (nm, objdump, c++filt) on PATH") from None
    if p.returncode != 0:
        raise AuditError(f"{' '.join(map(str, cmd))} failed: {p.stderr.strip()[:300]}")
    return p.stdout


MEMBER = re.compile(r"^(\S.*?):\s+file format \S+$")  # objdump's line opening each object of an archive


def member_name(line_name):
    """An archive member as messages show it: its file name (thin archives list paths)."""
    return Path(line_name).name


@dataclass
class ObjectSymbols:
    """One object's global symbols, from nm -g."""
    defined: dict = field(default_factory=dict)    # symbol -> nm's type letter (T, W, V, u, D, B, R, ...)
    undefined: dict = field(default_factory=dict)  # symbol -> nm's letter (U, or w/v: a weak reference)


def symbol_tables(path):
    """{object name: ObjectSymbols} of an object file or of each member of an archive."""
    tables, current = {}, None
    for line in tool("nm", "-g", str(path)).splitlines():
        parts = line.split()
        if not parts:
            continue
        if len(parts) == 1 and line.endswith(":"):
            current = tables.setdefault(member_name(line[:-1]), ObjectSymbols())
            continue
        if current is None:  # a plain object file: nm names no member
            current = tables.setdefault(Path(path).name, ObjectSymbols())
        if len(parts) == 2 and parts[0] in "Uwv":
            current.undefined[parts[1]] = parts[0]
        elif len(parts) == 3:
            current.defined[parts[2]] = parts[1]
    return tables


def defined_symbols(path):
    """{symbol: binding} of the global symbols an object or archive defines ('W' weak,
    'T' strong) and the set of symbols it references (strongly), from nm."""
    stat = Path(path).stat()
    return _defined_symbols(str(path), stat.st_mtime_ns, stat.st_size)


@functools.lru_cache(maxsize=64)
def _defined_symbols(path, mtime_ns, size):
    """defined_symbols() of one version of a file (the course library is read once per run, not once per lab)."""
    defined, used = {}, set()
    for table in symbol_tables(path).values():
        used |= {s for s, kind in table.undefined.items() if kind == "U"}
        defined.update({s: "W" if kind in "WVwvu" else "T" for s, kind in table.defined.items()})
    return defined, used


@dataclass
class Code:
    """Who refers to what in one object, and its host code's instructions."""
    referrers: dict = field(default_factory=lambda: defaultdict(dict))  # symbol -> {referrer: relocation type}
    functions: set = field(default_factory=set)  # every function it defines, local ones included
    instructions: dict = field(default_factory=lambda: defaultdict(list))  # function -> ["mov %rsp,%rbp", ...]


def read_code(path):
    """{object name: Code}: every relocation's target, with the function (or data
    section) that holds it, from objdump -t -r; each function's instructions from
    objdump -d (code sections only: the device code is data in .nv_fatbin)."""
    codes = defaultdict(Code)
    functions = defaultdict(lambda: defaultdict(list))  # object -> section -> [(start, end, name)]
    relocations = defaultdict(list)                      # object -> [(section, offset, type, target, addend)]
    obj, mode, section = Path(path).name, None, None
    for line in tool("objdump", "-t", "-r", str(path)).splitlines():
        m = MEMBER.match(line)
        if m:
            obj, mode = member_name(m.group(1)), None
        elif line.startswith("SYMBOL TABLE:"):
            mode = "symbols"
        elif line.startswith("RELOCATION RECORDS FOR ["):
            mode, section = "relocations", line[len("RELOCATION RECORDS FOR ["):].rstrip("]:")
        elif mode == "symbols" and len(line) > 25 and line[23] == "F":
            # 0000000000000150 l     F .text	0000000000000020 name
            where, _, size_name = line[25:].partition("\t")
            size, name = size_name.split()[0], size_name.split()[-1]
            start = int(line[:16], 16)
            functions[obj][where].append((start, start + int(size, 16), name))
            codes[obj].functions.add(name)
        elif mode == "relocations" and line[:1] in "0123456789abcdef" and not line.startswith("OFFSET"):
            parts = line.split()
            if len(parts) == 3:
                target, addend = re.match(r"^(.*?)([-+]0x[0-9a-f]+)?$", parts[2]).groups()  # fopen-0x4, .text+0x100
                relocations[obj].append((section, int(parts[0], 16), parts[1], target, int(addend or "0", 16)))
    for obj, relocs in relocations.items():
        spans = {sec: sorted(f) for sec, f in functions[obj].items()}
        starts = {sec: [s for s, _, _ in f] for sec, f in spans.items()}

        def function_at(sec, offset):
            i = bisect.bisect_right(starts.get(sec, []), offset) - 1
            return spans[sec][i][2] if i >= 0 and spans[sec][i][0] <= offset < spans[sec][i][1] else None

        for sec, offset, rtype, target, addend in relocs:
            referrer = function_at(sec, offset) or f"[{sec}]"  # data: a vtable, an exception table ...
            if target.startswith(".") and target in spans:
                # A local function, named by its section and offset (a PC-relative
                # reference's addend is 4 short of its start): name it.
                begins = {start: name for start, _, name in spans[target]}
                target = begins.get(addend) or begins.get(addend + 4) or function_at(target, addend) or target
            codes[obj].referrers[target].setdefault(referrer, rtype)
    # Every section the program will map executable is read as code (-D -j): plain
    # -d prints the bytes of a data object (a const array placed in .text by a
    # section attribute) as data, and they run as code all the same.
    executable = sorted({name for sections in section_flags(path).values()
                         for name, flags in sections.items() if "X" in flags})
    if not executable:
        return codes
    obj, function = Path(path).name, None
    listing = tool("objdump", "-D", "--no-show-raw-insn", *(f"-j{name}" for name in executable), str(path))
    for line in listing.splitlines():
        m = MEMBER.match(line)
        if m:
            obj, function = member_name(m.group(1)), None
        elif re.match(r"^[0-9a-f]+ <(.+)>:$", line):
            function = line[line.index("<") + 1:-2]
        elif function and re.match(r"^\s+[0-9a-f]+:\t", line):
            codes[obj].instructions[function].append(" ".join(line.split("\t", 1)[1].split()))
    return codes


READELF_SECTION = re.compile(  # "  [ 1] .text  PROGBITS  0000000000000000 000040 000063 00  AX  0   0 16"
    r"^\s*\[\s*\d+\]\s+(\S+)\s+\S+\s+[0-9a-f]+\s+[0-9a-f]+\s+[0-9a-f]+\s+[0-9a-f]+\s+([A-Za-z]*)\s+\d+\s+\d+\s+\d+$")


def section_flags(path):
    """{object name: {section: readelf's flag letters ("AX", "WA", "")}}, from readelf -S."""
    stat = Path(path).stat()
    return _section_flags(str(path), stat.st_mtime_ns, stat.st_size)


@functools.lru_cache(maxsize=16)
def _section_flags(path, mtime_ns, size):
    found, obj = defaultdict(dict), Path(path).name
    for line in tool("readelf", "-S", "-W", path).splitlines():
        m = READELF_FILE.match(line)
        if m:
            obj = member_name(m.group(1))
        elif s := READELF_SECTION.match(line):
            found[obj][s.group(1)] = s.group(2)
    return found


READELF_FILE = re.compile(r"^File: .*?[\[(]([^\[\]()]+)[\])]$")  # readelf's line opening each object of an archive
READELF_GROUP_MEMBER = re.compile(r"^\s+\[\s*(\d+)\]\s+\S")       # "   [   21]   .text._ZN..." in a COMDAT group
READELF_SYMBOL = re.compile(r"^\s*\d+:\s+[0-9a-f]+\s+\S+\s+\S+\s+\S+\s+\S+\s+(\d+)\s+(\S+)$")


def comdat_symbols(path):
    """{object name: the symbols it defines in a COMDAT group}, from readelf -g -s.
    C++'s copies of inline functions, templates, vtables and typeinfo each sit in
    such a group, which the linker keeps once per program; a definition written
    weak by hand (__attribute__((weak)), an alias, an assembler .weak) does not."""
    found, obj, groups, in_group = defaultdict(set), Path(path).name, set(), False
    for line in tool("readelf", "-g", "-s", "-W", str(path)).splitlines():
        m = READELF_FILE.match(line)
        if m:
            obj, groups, in_group = member_name(m.group(1)), set(), False
        elif line.startswith("COMDAT group section"):
            in_group = True
        elif in_group and (g := READELF_GROUP_MEMBER.match(line)):
            groups.add(int(g.group(1)))
        elif (s := READELF_SYMBOL.match(line)) and int(s.group(1)) in groups:
            in_group = False
            found[obj].add(s.group(2))
        elif not line.strip():
            in_group = False
    return found


def demangle(names):
    """{mangled: demangled} for every name, in one c++filt call."""
    names = sorted(set(names))
    if not names:
        return {}
    out = tool("c++filt", stdin="\n".join(names) + "\n").split("\n")
    return dict(zip(names, out))


NESTED_NAME = re.compile(r"_Z(?:T[VIST]|GV|TH|TW)?Z?N[rVKRO]*(\d+)")


def namespace_of(mangled):
    """The outermost namespace of a mangled C++ name ("cudalabs" for
    _ZN8cudalabs12check_launchEPKcS1_i, typeinfo and const members included), or
    None (a C name, a global function, or std::'s abbreviated St...)."""
    m = NESTED_NAME.match(mangled)
    if not m:
        return None
    start = m.end()
    return mangled[start:start + int(m.group(1))]


@functools.lru_cache(maxsize=None)
def system_exports():
    """Every symbol the system's libraries export to a program: libc, libm,
    libstdc++, libgcc_s (the C++ compiler's copies) and the CUDA runtime (the
    toolkit of the nvcc on PATH, or /usr/local/cuda)."""
    libraries = []
    for name in ["libc.so.6", "libm.so.6", "libstdc++.so.6", "libgcc_s.so.1"]:
        found = tool(shutil.which("g++") or "c++", f"-print-file-name={name}").strip()
        if not os.path.isabs(found):
            raise AuditError(f"cannot find {name} (g++ -print-file-name): the audit needs the C++ compiler")
        libraries.append(("-D", found))
    nvcc = shutil.which("nvcc") or "/usr/local/cuda/bin/nvcc"
    cuda = Path(os.path.realpath(nvcc)).parent.parent
    for lib in [cuda / "lib64" / "libcudart_static.a", cuda / "targets" / "x86_64-linux" / "lib" / "libcudart_static.a"]:
        if lib.is_file():
            libraries.append(("-g", str(lib)))
            break
    exported = set()
    for flag, lib in libraries:
        for line in tool("nm", flag, "--defined-only", lib).splitlines():
            parts = line.split()
            if len(parts) == 3:
                exported.add(parts[2].split("@")[0])
    return frozenset(exported)


# ---- the allow-list ---------------------------------------------------------------------

FAMILY_KEYS = {"rule", "why", "fix", "demangled", "mangled", "namespaces", "defined_namespaces", "unless"}
LAB_KEYS = {"why", "demangled", "mangled", "namespaces", "course_archives", "device_code", "device_calls"}


@dataclass
class Family:
    """One [allow.*] or [reject.*] table (or a lab's [labs.*] additions)."""
    name: str
    verdict: str  # "allow" or "reject"
    rule: str = ""
    why: str = ""
    fix: str = ""
    demangled: list = field(default_factory=list)
    mangled: list = field(default_factory=list)
    namespaces: list = field(default_factory=list)
    defined_namespaces: list = field(default_factory=list)
    unless: list = field(default_factory=list)

    def __post_init__(self):
        # Each list as one regular expression (fnmatch's own translation of the globs).
        self._re = {k: re.compile("|".join(fnmatch.translate(p) for p in getattr(self, k)) or "(?!)")
                    for k in ("demangled", "mangled", "namespaces", "defined_namespaces")}

    def matches(self, mangled, demangled):
        ns = namespace_of(mangled)
        return bool(self._re["demangled"].match(demangled) or self._re["mangled"].match(mangled)
                    or (ns is not None and self._re["namespaces"].match(ns)))

    def defines_in(self, mangled):
        ns = namespace_of(mangled)
        return ns is not None and bool(self._re["defined_namespaces"].match(ns))


UNLISTED = Family("unlisted", "reject", rule="not on the allow-list",
                  why="None of its families (what kernel files need) covers this symbol.",
                  fix="Remove the call, or ask the instructor whether the lab should allow it.")


class AllowList:
    """tools/allowed_imports.toml read for one lab (its {lab} patterns filled in).
    judge() says which family a symbol falls under and whether that allows it."""

    def __init__(self, path, lab):
        self.path, self.lab = Path(path), lab
        self.lab_ns = "lab" + lab[:2]
        try:
            with open(self.path, "rb") as f:
                raw = tomllib.load(f)
        except (OSError, tomllib.TOMLDecodeError) as e:
            raise AuditError(f"cannot read the allow-list {self.path}: {e}") from None
        unknown = set(raw) - {"allow", "reject", "labs"}
        if unknown:
            raise AuditError(f"{self.path}: unknown top-level table(s) {', '.join(sorted(unknown))}")
        self.allows = {n: self._family(n, "allow", t) for n, t in raw.get("allow", {}).items()}
        self.rejects = [self._family(n, "reject", t) for n, t in raw.get("reject", {}).items()]
        for fam in self.rejects:
            missing = [u for u in fam.unless if u not in self.allows]
            if missing:
                raise AuditError(f"{self.path}: [reject.{fam.name}] unless names no [allow.*] table: {', '.join(missing)}")
        table = raw.get("labs", {}).get(lab, {})
        self._check_keys(f"labs.{lab}", table, LAB_KEYS)
        self.lab_family = Family(f"labs.{lab}", "allow", why=table.get("why", ""),
                                 **{k: self._patterns(f"labs.{lab}", k, table)
                                    for k in ("demangled", "mangled", "namespaces")})
        self.course_archives = set(self._patterns(f"labs.{lab}", "course_archives", table))
        # A lab whose student files are device code only: its PTX (globs in
        # build/labs/LAB/), and the functions outside the kernels that it may call.
        self.device_code = self._patterns(f"labs.{lab}", "device_code", table)
        self.device_calls = self._patterns(f"labs.{lab}", "device_calls", table)

    def _check_keys(self, where, table, allowed):
        if not isinstance(table, dict):
            raise AuditError(f"{self.path}: [{where}] must be a table")
        unknown = set(table) - allowed
        if unknown:  # a misspelt key must not silently drop a rule
            raise AuditError(f"{self.path}: [{where}] has unknown key(s) {', '.join(sorted(unknown))} "
                             f"(known: {', '.join(sorted(allowed))})")

    def _patterns(self, where, key, table):
        value = table.get(key, [])
        if not (isinstance(value, list) and all(isinstance(v, str) for v in value)):
            raise AuditError(f"{self.path}: [{where}] {key} must be a list of strings")
        return [v.replace("{lab}", self.lab_ns) for v in value]

    def _family(self, name, verdict, table):
        where = f"{verdict}.{name}"
        self._check_keys(where, table, FAMILY_KEYS if verdict == "reject"
                         else FAMILY_KEYS - {"rule", "fix", "unless", "defined_namespaces"})
        if not table.get("why"):
            raise AuditError(f"{self.path}: [{where}] needs a why")
        if verdict == "reject" and not table.get("rule"):
            raise AuditError(f"{self.path}: [{where}] needs a rule (the words the message names it by)")
        text = {k: " ".join(str(table.get(k, "")).replace("{lab}", self.lab_ns).split()) for k in ("rule", "why", "fix")}
        patterns = {k: self._patterns(where, k, table)
                    for k in ("demangled", "mangled", "namespaces", "defined_namespaces", "unless")}
        return Family(name, verdict, **text, **patterns)

    def judge(self, mangled, demangled):
        """(family, allowed) for a symbol the kernel objects import."""
        if self.lab_family.matches(mangled, demangled):
            return self.lab_family, True
        for fam in self.rejects:
            excepted = any(self.allows[u].matches(mangled, demangled) for u in fam.unless)
            if fam.matches(mangled, demangled) and not excepted:
                return fam, False
        for fam in self.allows.values():
            if fam.matches(mangled, demangled):
                return fam, True
        return UNLISTED, False

    def judge_definition(self, mangled, demangled):
        """The reject family whose library a host function the objects define belongs to
        (CUB's device-wide algorithms are instantiated in the kernel file), or None."""
        if self.lab_family.matches(mangled, demangled):
            return None
        return next((fam for fam in self.rejects if fam.defines_in(mangled)), None)

    def shown(self):
        """The allow-list's path as messages name it."""
        try:
            return str(self.path.resolve().relative_to(TOOLS.parent))
        except ValueError:
            return str(self.path)


# ---- nvcc's own calls ---------------------------------------------------------------------
# Two calls of rejected functions are nvcc's, in every object with device code:
#   exit(1): the host-side body nvcc gives each __device__ function
#     (`{ volatile int ___ = 1; ::exit(___); }`, never called: host code cannot
#     call a __device__ function); accepted in a function that does nothing but
#     that. Whoever writes such a function by hand gains nothing: status 1 is a
#     failed lab.
#   atexit(): in __sti____cudaRegisterAll, the static registration function
#     nvcc appends to each translation unit (it unregisters the fat binary at
#     exit). A second function of that name in the same translation unit does
#     not compile.
REGISTRATION = {"__sti____cudaRegisterAll", "_ZL24__sti____cudaRegisterAllv"}
PADDING = re.compile(r"^(nop\w*|data16|cs nopw|xchg %ax,%ax|endbr64)\b")
FRAME = re.compile(r"^(push %r[a-z0-9]+|mov %rsp,%rbp|(sub|add) \$0x[0-9a-f]+,%rsp|leave|pop %rbp)$")
TRAP = re.compile(r"^(ud2|int3|hlt)$")  # after a call that does not return: never reached
# The stub's body between the frame and the call: moves only, between registers
# and the function's own stack slots (the parameters spilled at -O0, as each
# compiler version chooses: movq %xmm0,%rax then a store, movss, movsd ...), and
# the constant 1 that reaches exit's argument, %edi.
MOVE = re.compile(r"^(mov[a-z]*|vmov[a-z]*) (?P<src>\$0x1|%[a-z0-9]+|-?0x[0-9a-f]+\(%r[sb]p\)|\(%r[sb]p\)),"
                  r"(?P<dst>%[a-z0-9]+|-?0x[0-9a-f]+\(%r[sb]p\)|\(%r[sb]p\))$")
CALL = re.compile(r"^call [0-9a-f]+ <[^>]*>$")
# A pop other than the frame's %rbp (Ubuntu's GCC 13 aligns the stack with
# push %rax; pop %rax): its register then holds whatever the stack held.
POP = re.compile(r"^pop (?P<dst>%[a-z0-9]+)$")
# The 32- and 64-bit names of the registers a move may carry the 1 through.
REGISTER = {f"%{w}{r}": f"%r{r}" for r in ("ax", "bx", "cx", "dx", "si", "di") for w in ("e", "r")}
REGISTER.update({f"%r{n}{w}": f"%r{n}" for n in range(8, 16) for w in ("d", "")})


def nvcc_stub(instructions):
    """Whether a function's whole body is nvcc's exit(1) for a __device__ function:
    nothing but moves between registers and its own stack slots, then one call,
    with the constant 1 carried (through any of those slots and registers) into %edi.
    Compilers and their defaults differ in the moves (GCC 12 and Ubuntu's GCC 13,
    -O0 or -O2, frame pointers or none, a push and pop to align the stack); what cannot differ is that nothing else
    is computed, read or called."""
    body = [i.split(" #")[0].strip() for i in instructions if not PADDING.match(i) and not FRAME.match(i)]
    while body and TRAP.match(body[-1]):
        body.pop()
    if not body or not CALL.match(body[-1]):
        return False
    one = set()  # the places that hold the constant 1 now
    for line in body[:-1]:
        if p := POP.match(line):
            one.discard(REGISTER.get(p["dst"], p["dst"]))
            continue
        m = MOVE.match(line)
        if not m:
            return False
        src, dst = (REGISTER.get(x, x) for x in (m["src"], m["dst"]))
        if src == "$0x1" or src in one:
            one.add(dst)
        else:
            one.discard(dst)
    return "%rdi" in one


def nvcc_glue(symbol, referrer, code):
    """Whether this reference to `symbol` is one of nvcc's own calls."""
    if symbol == "atexit":
        return referrer in REGISTRATION
    if symbol == "exit":
        return nvcc_stub(code.instructions.get(referrer, []))
    return False


# What nvcc's registration (inlined into __sti____cudaRegisterAll, or its own function
# at -O0) refers to by address are the launch stubs of the object's kernels.
REGISTRARS = REGISTRATION | {"_ZL31__nv_cudaEntityRegisterCallbackPPv"}


def kernel_stubs(code):
    """The host-side launch stubs of the object's __global__ functions: what nvcc's
    registration passes to __cudaRegisterFunction."""
    return {f for f in code.functions if REGISTRARS & set(code.referrers.get(f, ()))}


# ---- the audit ----------------------------------------------------------------------------

def lab_dirs(build):
    """The labs of a build: its labs/NN_name folders."""
    root = Path(build) / "labs"
    if not root.is_dir():
        return []
    return sorted(p.name for p in root.iterdir() if p.is_dir() and re.match(r"^\d\d_\w+$", p.name))


def student_archives(build, lab, allow_file=DEFAULT_ALLOW_FILE):
    """Every static library built in build/labs/LAB/: the lab's kernel translation
    units, which include the student's files. An archive the allow-list declares
    the course's own ([labs.LAB] course_archives) is not the student's."""
    course = AllowList(allow_file, lab).course_archives
    return [p for p in sorted((Path(build) / "labs" / lab).glob("lib*.a")) if p.name not in course]


def course_objects(build, lab, allow_file=DEFAULT_ALLOW_FILE):
    """What the course links with the student's archives: the lab program's own
    objects (main.cu.o, and lab 20's jit.cpp.o ...), the course library, and the
    lab's course-only archives."""
    build, lab_dir = Path(build), Path(build) / "labs" / lab
    course = AllowList(allow_file, lab).course_archives
    return (sorted((lab_dir / f"{lab}.p").glob("*.o"))
            + [build / "common" / name for name in ("libcudalabs.a", "libcudalabs_blas.a")]
            + [lab_dir / name for name in sorted(course)])


@dataclass
class Report:
    """One lab's audit: its problems (empty: accepted), and what it imports."""
    lab: str
    archives: list = field(default_factory=list)
    device_images: list = field(default_factory=list)  # PTX of a lab whose student files are device code only
    problems: list = field(default_factory=list)
    imports: dict = field(default_factory=dict)  # demangled symbol -> the family that allowed it

    @property
    def accepted(self):
        return not self.problems


# How messages show C++ names: std::string, not its three template arguments.
ABBREVIATIONS = [("std::__cxx11::basic_string<char, std::char_traits<char>, std::allocator<char> >", "std::string"),
                 (", std::char_traits<char> >", ">"), ("std::__cxx11::", "std::")]


def shown_name(demangled, limit=110):
    """A demangled name as a message shows it: abbreviated, no [clone .cold], at most `limit` characters."""
    name = re.sub(r" \[clone [^\]]*\]", "", demangled)
    for long, short in ABBREVIATIONS:
        name = name.replace(long, short)
    return name if len(name) <= limit else name[:limit - 3] + "..."


NVCC_GLUE = Family("nvcc's own call", "allow", why="exit(1) in a __device__ function's host stub; atexit in "
                   "__sti____cudaRegisterAll")
SYSCALL_INSTRUCTION = Family("syscall_instruction", "reject", rule="a raw system call in inline assembly",
                             why="It reaches the operating system past every rule of the allow-list.",
                             fix="Remove the assembly; a kernel file calls only what the allow-list lists.")
WRITABLE_CODE = Family("writable_code", "reject", rule="memory both writable and executable",
                       why="Code written there while the program runs is code the audit never reads.",
                       fix="Remove the assembly that flags a section \"awx\" or the stack executable.")
NOTHING_FOUND = Family("nothing_found", "reject", rule="no student code found",
                       why="The build holds no object of the lab's kernel files to read, so nothing could be "
                           "judged; a lab is accepted only for what the audit has read.",
                       fix="Rebuild the lab: its kernel files compile into build/labs/LAB/lib*_kernels.a.")
CLOCK_INSTRUCTION = Family("clock_instruction", "reject", rule="reading the CPU's clock in inline assembly",
                           why="A launcher that times its own calls can tell the harness's checked runs (traced: "
                               "slower to launch) from its timed ones.",
                           fix="Remove the assembly: the lab's table prints each variant's median time.")
# The instructions the disassembly looks for, by the rule they break.
FORBIDDEN_INSTRUCTIONS = ((SYSCALL_INSTRUCTION, ("syscall", "sysenter", "int $0x80")),
                          (CLOCK_INSTRUCTION, ("rdtsc", "rdtscp", "rdpmc")))
REDEFINITION = Family("redefinition", "reject", rule="a redefinition reaching the checking code",
                      why="The linker would take this copy instead, for the harness's own calls too.",
                      fix="Rename it, make it static, or put it in the lab's namespace or an unnamed namespace.")


class Problems:
    """A lab's problem lines, by rule. The first line of each rule also says why; a
    rule's lines come one per function first (then the second of each ...), so the
    first MAX_PER_RULE of them name as many of the offending functions as they can."""

    def __init__(self):
        self.by_rule = {}  # rule -> (family, [(who, line)])

    def add(self, family, who, line):
        self.by_rule.setdefault(family.rule, (family, []))[1].append((who, line))

    def lines(self):
        out = []
        for rule, (family, entries) in self.by_rule.items():
            count = defaultdict(int)
            ranked = []
            for i, (who, line) in enumerate(entries):
                ranked.append((count[who], i, line))
                count[who] += 1
            ranked.sort()
            for n, (_, _, line) in enumerate(ranked[:MAX_PER_RULE]):
                out.append(f"{line} {family.why + ' ' if n == 0 else ''}Fix: {family.fix}")
            if len(ranked) > MAX_PER_RULE:
                out.append(f"... and {len(ranked) - MAX_PER_RULE} more of the same rule ({rule})")
        return out


@dataclass
class StudentObject:
    """One object of the student's archives: where it is, its symbols, its code."""
    where: str  # "lib04_reduction_kernels.a(kernels.cu.o)"
    symbols: ObjectSymbols
    code: Code
    comdat: set = field(default_factory=set)  # the symbols it defines in a COMDAT group (comdat_symbols)
    sections: dict = field(default_factory=dict)  # section -> readelf's flag letters (section_flags)


DEVICE_CALL = Family("device_call", "reject", rule="a device-side call the lab does not allow",
                     why="The lab's kernels compute on the buffers the host hands them; a launch from the device "
                         "(dynamic parallelism), the device heap or any other function outside them is not part "
                         "of the lesson and escapes the checks of what the host launches.",
                     fix="Compute in the kernel itself; the lab's device_calls (tools/allowed_imports.toml) lists "
                         "what it may call.")
# A PTX declaration of a function defined outside the module:
# ".extern .func (.param .b32 func_retval0) vprintf(" or ".extern .func __assertfail(".
PTX_EXTERN_FUNC = re.compile(r"^\s*\.extern\s+\.func\s*(?:\([^)]*\)\s*)?([A-Za-z_$%][\w$]*)", re.M)


def device_images(build, lab, allow):
    """The lab's device code built from its student files ([labs.LAB] device_code)."""
    lab_dir = Path(build) / "labs" / lab
    return sorted({p for pattern in allow.device_code for p in lab_dir.glob(pattern)})


def device_calls(images, allow, problems):
    """Functions outside the module that the device code calls, each judged against device_calls."""
    allowed = re.compile("|".join(fnmatch.translate(p) for p in allow.device_calls) or "(?!)")
    for image in images:
        for name in sorted(set(PTX_EXTERN_FUNC.findall(image.read_text(errors="replace")))):
            if not allowed.match(name):
                problems.add(DEVICE_CALL, image.name, f"{image.name}: the device code calls {name} "
                                                      f"({DEVICE_CALL.rule}): it may call only "
                                                      f"{', '.join(allow.device_calls) or 'nothing outside itself'}.")


def read_objects(archives):
    """Every object of the archives, with a demangled name for every symbol it has."""
    objects = []
    for archive in archives:
        codes, comdat, sections = read_code(archive), comdat_symbols(archive), section_flags(archive)
        objects += [StudentObject(f"{archive.name}({obj})", syms, codes.get(obj, Code()), comdat.get(obj, set()),
                                  sections.get(obj, {}))
                    for obj, syms in symbol_tables(archive).items()]
    names = demangle({s for o in objects for s in (*o.symbols.defined, *o.symbols.undefined)}
                     | {r for o in objects for refs in o.code.referrers.values() for r in refs}
                     | {f.split(".")[0] for o in objects for f in o.code.functions}
                     | set(f for o in objects for f in o.code.instructions))  # data objects read as code too
    return objects, names


def audit(build, lab, allow_file=DEFAULT_ALLOW_FILE):
    """The whole audit of one lab (audit_lab's problems, and what each import was allowed as)."""
    allow = AllowList(allow_file, lab)
    report = Report(lab, student_archives(build, lab, allow_file))
    if not report.archives:
        # Nothing of the student's is linked. Device code loaded as a module
        # (lab 19) is judged by what it calls outside itself.
        report.device_images = device_images(build, lab, allow)
        problems = Problems()
        if not report.device_images:
            problems.add(NOTHING_FOUND, "", f"{Path(build) / 'labs' / lab}: no static library of the kernel files "
                                            f"and no device code of them ({NOTHING_FOUND.rule}).")
        device_calls(report.device_images, allow, problems)
        report.problems = problems.lines()
        return report
    objects, names = read_objects(report.archives)
    problems = Problems()
    report.imports = imports(objects, allow, names, problems)
    library_definitions(objects, allow, names, problems)
    forbidden_instructions(objects, names, problems)
    writable_code(objects, problems)
    redefinitions(build, lab, allow, objects, names, problems)
    report.problems = problems.lines()
    return report


def imports(objects, allow, names, problems):
    """Judges every symbol the objects import (undefined, and defined by no student
    object); returns {demangled symbol: the family that allowed it}."""
    allowed_as = {}
    defined_here = {s for o in objects for s in o.symbols.defined}
    for o in objects:
        for sym in sorted(set(o.symbols.undefined) - defined_here):
            # Judged without a symbol version (fopen@GLIBC_2.2.5, from .symver): it is still fopen.
            family, allowed = allow.judge(sym.split("@")[0], names[sym].split("@")[0])
            refs = o.code.referrers.get(sym, {})
            if not allowed:
                refs = {r: t for r, t in refs.items() if not nvcc_glue(sym, r, o.code)}
                if not refs and o.code.referrers.get(sym):
                    family, allowed = NVCC_GLUE, True
            if allowed:
                allowed_as[names[sym]] = family.name
                continue
            callers = list(dict.fromkeys(  # clones (.cold, .isra.0) show as their function: once
                shown_name(names.get(r, r)) if not r.startswith("[") else f"data in {r[1:-1]}" for r in refs))
            who = ", ".join(callers[:2]) + (f" (and {len(callers) - 2} more)" if len(callers) > 2 else "")
            verb = "calls" if any(t.endswith("PLT32") for t in refs.values()) else "uses"
            problems.add(family, who, f"{o.where}: {who or 'the kernel files'} {verb if who else 'use'} "
                                      f"{shown_name(names[sym])} ({family.rule}): a kernel file may call only what "
                                      f"{allow.shown()} lists.")
    return allowed_as


def library_definitions(objects, allow, names, problems):
    """Host functions of a header-only library that the objects instantiate (CUB's
    device-wide algorithms: local symbols, so objdump's list of functions, not nm -g's).
    A kernel's launch stub only launches device code (<cub/cub.cuh> brings CUB's
    EmptyKernel): not counted."""
    for o in objects:
        found, stubs = defaultdict(dict), kernel_stubs(o.code)
        for function in sorted(o.code.functions):
            base = function.split(".")[0]  # without a clone's suffix (.cold, .isra.0)
            family = None if base in stubs else allow.judge_definition(base, names.get(base, base))
            if family:
                found[family.name].setdefault(base, family)
        for functions in found.values():
            family = next(iter(functions.values()))
            namespaces = ", ".join(sorted({namespace_of(f) for f in functions}))
            examples = "; ".join(shown_name(names.get(f, f), 80) for f in list(functions)[:2])
            problems.add(family, o.where, f"{o.where}: defines {len(functions)} host function"
                                          f"{'s' if len(functions) > 1 else ''} of {namespaces} ({family.rule}): "
                                          f"{examples}{' ...' if len(functions) > 2 else ''}.")


# An instruction's prefixes as objdump writes them ("data16 syscall", "cs rex.W syscall"):
# the CPU ignores them on a system call, so they hide nothing from it.
PREFIX = re.compile(r"^(?:data16|data32|addr16|addr32|[c-gs]s|rex(?:\.\w+)?|rep\w*|lock|notrack|bnd|xacquire|xrelease)$")


def forbidden_instruction(instruction):
    """The forbidden instruction this one is (a system call, or a read of the CPU's
    clock or counters), whatever prefixes it carries; None for any other."""
    words = instruction.split()
    while words and PREFIX.match(words[0]):
        words = words[1:]
    if words[:2] == ["int", "$0x80"]:
        return "int $0x80"
    return words[0] if words and any(words[0] in listed for _, listed in FORBIDDEN_INSTRUCTIONS) else None


def forbidden_instructions(objects, names, problems):
    """System calls and clock reads in the objects' host code (inline assembly)."""
    for o in objects:
        for function, instructions in o.code.instructions.items():
            found = sorted({c for c in map(forbidden_instruction, instructions) if c})
            for family, listed in FORBIDDEN_INSTRUCTIONS:
                these = [c for c in found if c in listed]
                if not these:
                    continue
                problems.add(family, function,
                             f"{o.where}: {shown_name(names.get(function, function))} contains the instruction "
                             f"{', '.join(these)} ({family.rule}).")


def writable_code(objects, problems):
    """Memory that is both writable and executable: a section flagged so (the linker
    maps it into a read-write-execute segment) or an executable stack (a
    .note.GNU-stack section flagged executable, or none at all: the linker then
    assumes the stack must be executable). Code written there at run time is
    code no disassembly of the object reads (a system call assembled from two
    constants); GCC and nvcc make neither, only hand-written assembly does."""
    for o in objects:
        if not o.sections:
            continue
        for section, flags in sorted(o.sections.items()):
            if "W" in flags and "X" in flags:
                problems.add(WRITABLE_CODE, section, f"{o.where}: section {section} is writable and executable "
                                                     f"({WRITABLE_CODE.rule}).")
        stack = o.sections.get(".note.GNU-stack")
        if stack is None or "X" in stack:
            how = "asks for an executable stack" if stack is not None else "has no .note.GNU-stack section"
            problems.add(WRITABLE_CODE, ".note.GNU-stack", f"{o.where}: {how}, so the linker makes the stack "
                                                           f"executable ({WRITABLE_CODE.rule}).")


def redefinitions(build, lab, allow, objects, names, problems):
    """The student's objects may define anything of their own and the lab's interface
    (namespace labNN). A strong definition of a symbol that the course's code defines
    or uses would replace the course's code at link time, as would a weak one of a
    symbol the course defines strongly, or uses without defining (then the copy would
    be taken from a library: libstdc++, the CUDA runtime). And a definition of what a
    system library exports would replace the library's function for the whole program
    (C functions such as write or malloc, strong C++ ones such as operator new); the
    weak C++ definitions every translation unit emits for inline and template code
    (GCC 12 in C++20: std::string's members) are the exception.

    A weak copy the course defines too is the linker's to choose, and it takes the
    first it meets. Every lab links libcudalabs.a before its kernel archive
    (labs/meson.build), so for C++'s copies (COMDAT groups: every inline function
    and template instantiation) the course's wins; a build that linked the other
    way round would let the student's copy of an inline function that only
    libcudalabs.a emits (Recorder::baseline_for, Session's vtable) serve the
    harness's calls. So a COMDAT copy of what the allow-list rejects as an import
    (the harness's internals, another lab's code) is rejected whatever the order,
    and a definition made weak by hand (outside a group, where the linker's rule
    is another) is never accepted for a symbol the course or a system library
    defines."""
    course_defined, course_used = {}, set()
    for path in course_objects(build, lab, allow.path):
        if path.is_file():
            d, u = defined_symbols(path)
            course_used |= u | set(d)
            course_defined.update({k: v for k, v in d.items() if v == "T" or k not in course_defined})
    exported = system_exports()
    for o in objects:
        for versioned, kind in sorted(o.symbols.defined.items()):
            # Judged without its version (.symver: memcpy@GLIBC_2.2.5 is still memcpy).
            sym, strong = versioned.split("@")[0], kind not in "WVwvu"
            why = None
            if namespace_of(sym) == allow.lab_ns:  # the lab's interface: the kernel files define it
                if strong and sym in course_defined:
                    why = "the course's host program defines it too (in the lab's namespace)"
            elif strong and sym in course_used:
                why = "the course's host program or libraries define or use it"
            elif not strong and course_defined.get(sym) == "T":
                why = "the course's code defines it"
            elif not strong and sym in course_used and sym not in course_defined:
                why = "the course's code calls it from a library"
            elif not strong and sym in course_defined and versioned not in o.comdat:
                why = ("the course's code defines it, and this copy is weak by hand (__attribute__((weak)), an "
                       "alias, an assembler .weak), not C++'s copy of an inline function or template")
            elif not strong and sym in course_defined and (family := allow.judge(sym, names.get(sym, sym)))[0] \
                    is not UNLISTED and not family[1]:
                why = (f"the course's code defines it, and a kernel file may not use it ({family[0].rule}): a copy "
                       f"of the harness's inline code, which the linker may take for the harness's own calls")
            elif sym in exported and (strong or not sym.startswith("_Z") or versioned not in o.comdat):
                why = "a system library (libc, libm, libstdc++, libgcc_s, the CUDA runtime) exports it"
            if why:
                shown = shown_name(names.get(versioned, versioned)) + (
                    f" ({versioned})" if names.get(versioned, versioned) != versioned else "")
                problems.add(REDEFINITION, sym, f"{o.where}: defines {shown} ({REDEFINITION.rule}): {why}.")


def audit_lab(build, lab, allow_file=DEFAULT_ALLOW_FILE):
    """The problems of one lab's student objects, one line each (empty: accepted)."""
    return audit(build, lab, allow_file).problems


# ---- command line -------------------------------------------------------------------------

def main(argv=None):
    ap = argparse.ArgumentParser(prog="audit.py", description=__doc__.split("\n\n")[0],
                                 epilog="Exit: 0 every lab accepted, 1 a lab rejected, 2 bad usage.")
    ap.add_argument("--build", required=True, type=Path, help="the build folder (meson) whose labs are audited")
    ap.add_argument("--labs", default="", help="comma-separated labs (04 or 04_reduction); default: every lab built")
    ap.add_argument("--allow", type=Path, default=DEFAULT_ALLOW_FILE, help="the allow-list (default: %(default)s)")
    ap.add_argument("--families", action="store_true", help="also list each lab's imports by the family that allowed them")
    try:
        args = ap.parse_args(argv)
    except SystemExit as e:
        return 2 if e.code else 0
    every = lab_dirs(args.build)
    if not every:
        print(f"audit: error: {args.build} has no labs/NN_name folders (not a course build?)", file=sys.stderr)
        return 2
    labs = every
    if args.labs:
        labs = []
        for want in filter(None, (w.strip() for w in args.labs.split(","))):
            hit = [lab for lab in every if lab == want or lab.startswith(want + "_")]
            if len(hit) != 1:
                print(f"audit: error: no lab {want!r} in {args.build}/labs (labs: {', '.join(every)})", file=sys.stderr)
                return 2
            labs += hit
    rejected = 0
    for lab in labs:
        try:
            report = audit(args.build, lab, args.allow)
        except AuditError as e:
            print(f"audit: error: {e}", file=sys.stderr)
            return 2
        if report.accepted:
            what = (", ".join(a.name for a in report.archives) + f": {len(report.imports)} imports, all allowed"
                    if report.archives else
                    ", ".join(d.name for d in report.device_images) + ": device code, its calls allowed"
                    if report.device_images else "no kernel archive: nothing of a student's is linked")
            print(f"{lab}: ok ({what})")
        else:
            rejected += 1
            print(f"{lab}: REJECTED ({len(report.problems)} problem{'s' if len(report.problems) > 1 else ''})")
            for line in report.problems:
                print("  " + line)
        if args.families and report.imports:
            by_family = defaultdict(list)
            for sym, fam in sorted(report.imports.items()):
                by_family[fam].append(sym)
            for fam, syms in by_family.items():
                print(f"    {fam} ({len(syms)}): " + "; ".join(syms))
    print(f"{len(labs)} lab{'s' if len(labs) > 1 else ''}: {len(labs) - rejected} accepted, {rejected} rejected")
    return 1 if rejected else 0


if __name__ == "__main__":
    sys.exit(main())
