#!/usr/bin/env python3
"""Starter kits from one source: the course tree with its solutions taken out.

The course's kernel files (each lab's student_files in tools/grading.toml) mark
the code a student writes:

    // BEGIN SOLUTION naive
    ... the course's code (a kernel body, a launcher body) ...
    // END SOLUTION
    // STUB: cudalabs::not_implemented("transpose_four_per_thread", in, out, rows, cols, stream);

BEGIN names the variant(s) the region belongs to, as `--list` prints them. The
`// STUB:` lines right after END are the code that replaces the region in the
starter kit, each without its `// STUB: ` prefix, at the marker's indentation
(at least one line: a `// STUB: // TODO ...` comment where nothing is needed).
A launcher's stub calls cudalabs::not_implemented, which throws
cudalabs::NotImplemented (common/include/cudalabs/error.hpp): the harness records the variant as failed, "not implemented yet".

Which variants are the exercise is said per lab in one place, the
exercise_variants key of tools/grading.toml. A region whose variants are all
exercises is replaced by its stub; one whose variants are none is kept (only the
marker lines go); one that mixes both is an error (removing it would break a
variant the starter must give working). A lab that lists exercises but has no
region yet is reported, not an error: its solution stays in the starter.

Code another lab uses is never an exercise: a lab's sources may include
another lab's files (lab 07's main.cu runs lab 04's kernel from
../04_reduction/reduction.cuh), and in a starter tree that file holds the stub,
so the other lab's given variants would fail. An exercise region in a file that
another lab includes, directly or through other files, is an error; `--deps`
prints those files and the labs that include them (docs/instructor-guide.md
shows the list, and tests/starter/ checks that it is current).

    tools/starter.py OUT          write the starter tree to OUT (make starter OUT=dir)
    tools/starter.py --check      check the markers only (CI, tests/starter/)
    tools/starter.py --deps       the lab files other labs include (Markdown)
    tools/starter.py --check --build BUILD
                                  also check every region's and exercise's variant
                                  against the lab programs' --list
    tools/starter.py --verify-run BUILD   (GPU; from the course tree, whose markers
                                  say what to expect) run every lab of a starter tree's
                                  build: exactly the exercise variants fail, each
                                  with "not implemented yet"; exit 77 without a GPU

The starter tree is a copy of the repository (git's tracked and untracked, not
ignored files: no .git, no build folders; results/ stays, for comparing) with
REVISION naming the commit it was made from. Exit codes: 0 done, 1 a marker
problem (each one named, file:line), 2 bad usage, 77 (--verify-run) no GPU.
"""
import argparse
import concurrent.futures
import os
import re
import shutil
import subprocess
import sys
import tempfile
from dataclasses import dataclass, field
from pathlib import Path

from grader.config import GradeError, lab_names, load_config
from grader.process import run, tail, why_no_gpu
from grader.records import read_new_records
from grader.result import exercise_of
from grader.runs import correctness_runs

ROOT = Path(__file__).resolve().parent.parent
BEGIN = re.compile(r"^(\s*)// BEGIN SOLUTION(.*)$")
END = re.compile(r"^(\s*)// END SOLUTION\s*$")
STUB = re.compile(r"^(\s*)// STUB:(?: (.*))?$")
ANY_MARKER = re.compile(r"//\s*(BEGIN SOLUTION|END SOLUTION|STUB:)")
SOURCE_SUFFIXES = (".cu", ".cuh", ".hpp", ".h", ".cpp", ".cc")
NOT_IMPLEMENTED = "not implemented yet"


class MarkerError(Exception):
    """A malformed region: the file:line and what to fix."""


@dataclass
class Region:
    variants: list
    begin: int   # 1-based line numbers of the BEGIN and END markers
    end: int
    solution: list = field(default_factory=list)  # the lines between the markers
    stub: list = field(default_factory=list)      # the stub's code lines, prefix removed, indented


def parse(text, where):
    """The regions of one file's text, in order. Raises MarkerError naming where."""
    lines = text.splitlines(keepends=True)
    regions, i = [], 0
    while i < len(lines):
        line = lines[i].rstrip("\n")
        if END.match(line):
            raise MarkerError(f"{where}:{i + 1}: END SOLUTION without a BEGIN SOLUTION before it")
        if STUB.match(line):
            raise MarkerError(f"{where}:{i + 1}: a STUB line must follow an END SOLUTION line (or another STUB line)")
        m = BEGIN.match(line)
        if not m:
            if ANY_MARKER.search(line):
                raise MarkerError(f"{where}:{i + 1}: a marker must be alone on its line, as `// BEGIN SOLUTION variant`, "
                                  f"`// END SOLUTION` or `// STUB: code`: {line.strip()}")
            i += 1
            continue
        variants = m.group(2).split()
        if not variants or not all(re.fullmatch(r"[a-z0-9_]+", v) for v in variants):
            raise MarkerError(f"{where}:{i + 1}: BEGIN SOLUTION names the variant(s) the region belongs to, as --list "
                              f"prints them: `// BEGIN SOLUTION naive` (got {m.group(2).strip()!r})")
        region = Region(variants, begin=i + 1, end=0)
        i += 1
        while i < len(lines) and not END.match(lines[i].rstrip("\n")):
            inner = lines[i].rstrip("\n")
            if BEGIN.match(inner):
                raise MarkerError(f"{where}:{i + 1}: BEGIN SOLUTION inside the region opened at line {region.begin}: "
                                  "regions do not nest; close the first with END SOLUTION")
            if ANY_MARKER.search(inner):
                raise MarkerError(f"{where}:{i + 1}: a marker inside the region opened at line {region.begin}")
            region.solution.append(lines[i])
            i += 1
        if i == len(lines):
            raise MarkerError(f"{where}:{region.begin}: BEGIN SOLUTION without an END SOLUTION")
        region.end = i + 1
        i += 1
        while i < len(lines) and (s := STUB.match(lines[i].rstrip("\n"))):
            region.stub.append((s.group(1) + (s.group(2) or "")).rstrip() + "\n")
            i += 1
        if not region.stub:
            raise MarkerError(f"{where}:{region.end}: END SOLUTION must be followed by its stub, one or more "
                              "`// STUB: code` lines (e.g. `// STUB: cudalabs::not_implemented(\"launcher\", its, parameters);` "
                              "or `// STUB: // TODO: ...`)")
        regions.append(region)
    return regions


def render(text, where, exercises):
    """The file's starter text: regions of exercise variants replaced by their stub,
    the others kept; every marker line removed. Raises MarkerError for a region
    that mixes exercise and given variants."""
    lines = text.splitlines(keepends=True)
    regions = parse(text, where)
    out, i = [], 0
    for r in regions:
        out += lines[i:r.begin - 1]
        chosen = [v for v in r.variants if v in exercises]
        if chosen and len(chosen) != len(r.variants):
            given = [v for v in r.variants if v not in exercises]
            raise MarkerError(f"{where}:{r.begin}: the region belongs to {', '.join(chosen)} (exercises) and to "
                              f"{', '.join(given)} (not an exercise in tools/grading.toml): removing it would break "
                              f"{given[0]}. Make all of them exercises, or split the region")
        out += r.stub if chosen else r.solution
        i = r.end + len(r.stub)
    out += lines[i:]
    return "".join(out)


# ---- which lab files other labs use ---------------------------------------------------------

INCLUDE = re.compile(r'^\s*#\s*include\s*([<"])([^>"]+)[>"]', re.M)
SHARED = "shared"  # labs/shared/: host code several labs share


def include_graph(root):
    """{path: {paths it includes}} over the labs' sources, paths relative to
    labs/ ("07_reduction_v3/main.cu"). "file" resolves from the including file's
    folder, then from labs/shared/ (the course's shared host code, on every
    main.cu's include path: labs/meson.build), <file> from the lab's own folder
    (kernels.cu names the student files so, found through the include path);
    system and common/ headers resolve to nothing and are left out."""
    labs_dir = root / "labs"
    graph = {}
    for path in sorted(labs_dir.rglob("*")):
        if path.suffix not in SOURCE_SUFFIXES or not path.is_file():
            continue
        rel = path.relative_to(labs_dir)
        lab_dir = labs_dir / rel.parts[0]
        found = set()
        for quote, name in INCLUDE.findall(path.read_text(errors="replace")):
            tried = [path.parent / name, labs_dir / SHARED / name] if quote == '"' else [lab_dir / name]
            target = next((t for t in tried if t.is_file()), None)
            if target and target.resolve().is_relative_to(labs_dir.resolve()):
                found.add(target.resolve().relative_to(labs_dir.resolve()).as_posix())
        graph[rel.as_posix()] = found
    return graph


def foreign_users(root):
    """{"LAB/FILE": [other labs whose sources include it, directly or through
    other files]}, only for files some other lab includes."""
    graph = include_graph(root)
    reach = {}

    def reached(f, seen):
        if f not in reach:
            out = set()
            for g in graph.get(f, ()):
                if g not in seen:
                    out |= {g} | reached(g, seen | {g})
            reach[f] = out
        return reach[f]

    users = {}
    for f in graph:
        for g in reached(f, {f}):
            lab, owner = f.split("/")[0], g.split("/")[0]
            # labs/shared/ is no lab: its files hold no exercise, and it counts as a
            # user only through the labs that include it.
            if owner != lab and SHARED not in (lab, owner):
                users.setdefault(g, set()).add(lab)
    return {f: sorted(labs) for f, labs in sorted(users.items())}


def deps_markdown(root):
    """The list docs/instructor-guide.md shows: each lab file other labs include."""
    return "\n".join(f"- `labs/{f}`: {', '.join(labs)}" for f, labs in foreign_users(root).items()) + "\n"


# ---- the course --------------------------------------------------------------------------

@dataclass
class LabMarks:
    lab: str
    exercises: list
    regions: dict = field(default_factory=dict)  # file name -> [Region]

    @property
    def marked(self):
        return sorted({v for rs in self.regions.values() for r in rs for v in r.variants})


def course(root):
    """{lab: LabMarks} of every lab, from tools/grading.toml and the student files.
    Raises MarkerError with every problem found (each file:line)."""
    labs = lab_names(root)
    config = load_config(root / "tools" / "grading.toml", labs)
    marks, problems = {}, []
    for lab in labs:
        m = marks[lab] = LabMarks(lab, list(config[lab]["exercise_variants"]))
        for name in config[lab]["student_files"]:
            path = root / "labs" / lab / name
            try:
                m.regions[name] = parse(path.read_text(), f"labs/{lab}/{name}")
            except MarkerError as e:
                problems.append(str(e))
            except OSError as e:
                problems.append(f"labs/{lab}/{name}: {e.strerror} (a student file of tools/grading.toml)")
        if m.exercises and not config[lab]["student_files"]:
            problems.append(f"tools/grading.toml: [labs.{lab}] has exercise_variants but no student_files to mark")
    student = {(lab, f) for lab in labs for f in config[lab]["student_files"]}
    for path in sorted((root / "labs").rglob("*")):
        rel = path.relative_to(root / "labs")
        if path.suffix in SOURCE_SUFFIXES and path.is_file() and (rel.parts[0], "/".join(rel.parts[1:])) not in student:
            for n, line in enumerate(path.read_text(errors="replace").splitlines(), 1):
                if ANY_MARKER.search(line):
                    problems.append(f"labs/{rel}:{n}: a solution marker outside the lab's student_files "
                                    "(tools/grading.toml): the starter would keep it")
                    break
    users = foreign_users(root)
    for lab, m in marks.items():
        if not m.marked:
            continue  # reported, not an error: see report()
        missing = [v for v in m.exercises if v not in m.marked]
        if missing:
            problems.append(f"labs/{lab}: exercise variant(s) {', '.join(missing)} (tools/grading.toml) have no "
                            "`// BEGIN SOLUTION` region: the starter would give them away")
        for name, regions in m.regions.items():
            try:
                render((root / "labs" / lab / name).read_text(), f"labs/{lab}/{name}", m.exercises)
            except MarkerError as e:
                problems.append(str(e))
            others = users.get(f"{lab}/{name}")
            for r in regions:
                if others and any(v in m.exercises for v in r.variants):
                    problems.append(f"labs/{lab}/{name}:{r.begin}: an exercise region ({', '.join(r.variants)}) in a file "
                                    f"that lab(s) {', '.join(others)} include: in the starter their variants would run "
                                    "the stub. Take the variant out of exercise_variants (tools/grading.toml), or move "
                                    f"the code to a file only {lab} uses")
    if problems:
        raise MarkerError("\n".join(problems))
    return marks


def report(marks):
    """One line per lab: its exercises, or why the starter gives it whole."""
    lines = []
    for lab, m in marks.items():
        regions = sum(len(rs) for rs in m.regions.values())
        if m.exercises and not m.marked:
            lines.append(f"  {lab:<28} exercises {', '.join(m.exercises)}: NOT MARKED YET, the starter keeps the solution")
        elif m.exercises:
            lines.append(f"  {lab:<28} exercises {', '.join(m.exercises)} ({regions} regions)")
        elif m.marked:
            lines.append(f"  {lab:<28} no exercise_variants: its {regions} regions are kept")
        else:
            lines.append(f"  {lab:<28} no exercise")
    return "\n".join(lines)


def check_variant_names(marks, build):
    """Every region's and exercise's variant is one the lab's program lists (--list,
    no GPU needed). Returns the problems."""
    problems = []
    for lab, m in marks.items():
        names = set(m.exercises) | set(m.marked)
        if not names:
            continue
        prog = Path(build) / "labs" / lab / lab
        if not prog.is_file():
            problems.append(f"{prog}: not built, so the variants of {lab} cannot be checked")
            continue
        p = subprocess.run([str(prog), "--list"], capture_output=True, text=True, timeout=60)
        listed = {line.split()[0] for line in p.stdout.splitlines() if line[:1].isspace() and line.strip()}
        unknown = sorted(names - listed)
        if p.returncode != 0 or unknown:
            problems.append(f"{lab}: {', '.join(unknown) or '--list failed'}: not a variant of the lab "
                            f"(its variants: {', '.join(sorted(listed))})")
    return problems


# ---- writing the starter tree -----------------------------------------------------------------

def tree_files(root):
    """The repository's files, relative: git's tracked and untracked-but-not-ignored
    ones (no .git, no build folders); in a copy without git, every file outside
    .git, __pycache__ and Meson build folders."""
    p = subprocess.run(["git", "-C", str(root), "ls-files", "-z", "--cached", "--others", "--exclude-standard"],
                       capture_output=True)
    if p.returncode == 0 and (root / ".git").exists():
        return sorted(f for f in p.stdout.decode().split("\0") if f and (root / f).is_file())
    files = []
    for dirpath, dirnames, filenames in os.walk(root):
        dirnames[:] = [d for d in dirnames if d not in (".git", "__pycache__")
                       and not (Path(dirpath, d, "meson-private").is_dir())]
        files += [str(Path(dirpath, f).relative_to(root)) for f in filenames]
    return sorted(files)


def revision(root):
    p = subprocess.run(["sh", str(root / "tools" / "revision.sh")], capture_output=True, text=True)
    return (p.stdout.strip() or "unknown") + "-starter"


def write_starter(root, out, marks):
    """Copies the tree to out with every exercise region replaced by its stub.
    Returns the number of regions replaced."""
    if out.exists() and any(out.iterdir()):
        raise GradeError(f"{out} exists and is not empty: name a new folder (make starter OUT=dir)")
    if out.resolve().is_relative_to(root.resolve()) and not out.resolve().relative_to(root.resolve()).parts[0].startswith("build"):
        raise GradeError(f"{out} is inside the course tree: write the starter kit outside it (or under build*/)")
    student = {f"labs/{lab}/{name}": m for lab, m in marks.items() for name in m.regions}
    replaced = 0
    for rel in tree_files(root):
        src, dst = root / rel, out / rel
        dst.parent.mkdir(parents=True, exist_ok=True)
        if rel in student:
            m = student[rel]
            text = src.read_text()
            dst.write_text(render(text, rel, m.exercises))
            replaced += sum(1 for r in parse(text, rel) if r.variants[0] in m.exercises)
            shutil.copymode(src, dst)
        else:
            shutil.copy2(src, dst)
    (out / "REVISION").write_text(revision(root) + "\n")
    left = [f"{p.relative_to(out)}:{n}" for p in sorted((out / "labs").rglob("*")) if p.suffix in SOURCE_SUFFIXES
            for n, line in enumerate(p.read_text(errors="replace").splitlines(), 1) if ANY_MARKER.search(line)]
    if left:
        raise MarkerError("markers left in the starter tree (a bug of tools/starter.py): " + ", ".join(left[:5]))
    return replaced


# ---- on the GPU: the starter's programs fail exactly where they must -----------------------------

def verify_lab(lab, m, cfg, build, tmp, timeout):
    """verify_run's work for one lab: (status, line)."""
    prog = Path(build) / "labs" / lab / lab
    if not prog.is_file():
        return 1, f"  {lab:<28} FAIL: {prog} was not built"
    expected = set(m.exercises) if m.marked else set()
    records_path = Path(tmp) / f"{lab}.jsonl"
    records_path.write_text("")
    records, wrong, outputs, offset, skipped = [], [], [], 0, ""
    with open(Path(tmp) / f"{lab}.log", "w") as log:
        for label, extra in correctness_runs(lab, cfg):
            r = run(f"check {label}", [str(prog)] + extra + ["--check-only", "--json", str(records_path)],
                    timeout, log)
            new, offset = read_new_records(records_path, offset)
            records += new
            outputs.append(r.output)
            if r.rc == 77:
                skipped = tail(r.output, 1)
                break
            want = 1 if any(exercise_of(x["variant"], expected) for x in new) else 0
            if r.rc != want or r.timed_out:
                wrong.append(f"check {label}: exit {r.rc}{' (timed out)' if r.timed_out else ''}, expected "
                             f"{want}: " + tail(r.output, 2).replace("\n", " | "))
    if skipped and not records:
        return 0, f"  {lab:<28} skipped: {skipped}"
    for x in records:
        stub = not x.get("passed") and x.get("failure", "").startswith(NOT_IMPLEMENTED)
        if exercise_of(x["variant"], expected) and not stub:
            wrong.append(f"{x['variant']} should fail \"{NOT_IMPLEMENTED}\" but "
                         f"{'passed' if x.get('passed') else 'failed: ' + x.get('failure', '?')}")
        elif not exercise_of(x["variant"], expected) and not x.get("passed"):
            wrong.append(f"{x['variant']} should pass but failed: {x.get('failure', '?')}")
    said = [line for out in outputs for line in out.splitlines() if "skipped" in line]
    unseen = sorted(expected - {exercise_of(x["variant"], expected) for x in records})
    not_here = [v for v in unseen if any(re.search(rf"\b{re.escape(v)}\b", line) for line in said)]
    if set(unseen) - set(not_here):
        wrong.append(f"no record of {', '.join(v for v in unseen if v not in not_here)}")
    if wrong:
        return 1, f"  {lab:<28} FAIL: " + "; ".join(dict.fromkeys(wrong))
    stubs = sorted(expected - set(not_here))
    return 0, (f"  {lab:<28} ok: {len(records)} records" + (f", stubs {', '.join(stubs)}" if stubs else "")
               + (f"; skipped on this machine: {', '.join(not_here)}" if not_here else ""))


def verify_run(root, build, marks, timeout=900, jobs=4):
    """Runs every lab of a build of the starter tree with the grader's correctness
    runs (--check-only: --quick, the lab's named runs of grading.toml): the
    exercise variants of marked labs fail "not implemented yet", every other
    variant passes. A run exits 1 when an exercise variant ran in it, else 0. An
    exercise variant that no run reached passes only where the program said it
    skipped it on this machine (lab 32's two-GPU variants on one GPU). Labs run
    `jobs` at a time, as the grader's correctness runs do. Returns (exit code, lines)."""
    reason = why_no_gpu()
    if reason:
        return 77, [f"starter: skipped: {reason}"]
    config = load_config(Path(root) / "tools" / "grading.toml", list(marks))
    with tempfile.TemporaryDirectory() as tmp, concurrent.futures.ThreadPoolExecutor(jobs) as pool:
        done = list(pool.map(lambda lab: verify_lab(lab, marks[lab], config[lab], build, tmp, timeout), marks))
    return max((status for status, _ in done), default=0), [line for _, line in done]


def main(argv=None):
    p = argparse.ArgumentParser(description="Write the starter kit: the course tree with the exercises' "
                                            "solutions replaced by stubs (the markers: docs/instructor-guide.md).")
    p.add_argument("out", nargs="?", type=Path, help="the folder to write the starter tree to (new or empty)")
    p.add_argument("--check", action="store_true", help="only check the markers and tools/grading.toml")
    p.add_argument("--deps", action="store_true", help="print the lab files other labs include (Markdown), and exit")
    p.add_argument("--build", help="with --check: also check the variant names against this build's lab programs")
    p.add_argument("--verify-run", metavar="BUILD", help="(GPU) run a build of a starter tree: exactly the exercises fail")
    p.add_argument("--root", type=Path, default=ROOT, help=argparse.SUPPRESS)
    args = p.parse_args(argv)
    if args.deps:
        print(deps_markdown(args.root), end="")
        return 0
    if sum(bool(x) for x in (args.out, args.check, args.verify_run)) != 1:
        p.error("name one of: an output folder (tools/starter.py OUT), --check, --verify-run BUILD")
    try:
        marks = course(args.root)
        if args.check:
            problems = check_variant_names(marks, args.build) if args.build else []
            print("starter: the markers are well formed\n" + report(marks))
            for problem in problems:
                print(f"starter: error: {problem}", file=sys.stderr)
            return 1 if problems else 0
        if args.verify_run:
            status, lines = verify_run(args.root, args.verify_run, marks)
            print("\n".join(lines))
            return status
        replaced = write_starter(args.root, args.out, marks)
        print(f"starter: wrote {args.out}: {replaced} solution regions replaced by their stubs\n" + report(marks))
        return 0
    except MarkerError as e:
        print(f"starter: error: {e}", file=sys.stderr)
        return 1
    except GradeError as e:
        print(f"starter: error: {e}", file=sys.stderr)
        return 2


if __name__ == "__main__":
    sys.exit(main())
