#!/usr/bin/env python3
"""CPU test: the course's text links to files that exist and does not narrate how it was made.

(a) Every relative link in a README.md (anywhere in the tree) or in docs/*.md —
    [text](path) and ![picture](path), outside fenced code — names a file or
    folder that exists. Web links and in-page anchors are not checked.
(b) The course text (labs/, docs/, tools/, common/, README.md, results/h100/notes/)
    names measurements by date and commit, never by the numbered sittings or
    device runs they were made in (ORGANISATION below lists the forms). The word
    as a code concept passes: cudalabs::Session, DriverSession, Popen's
    start_new_session, bubblewrap's --new-session.

  tests/test_course_text.py          # this checkout
  tests/test_course_text.py ROOT     # another tree: prints its problems, exit 1 if any

The unit tests also run both checks on small trees with a broken link and a
planted line of each form, so a check that stopped finding anything would fail."""
import re
import sys
import tempfile
import unittest
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
SKIP_DIRS = {".git", "build", "subprojects", "__pycache__", "node_modules"}
LINK = re.compile(r"!?\[[^\]]*\]\(\s*<?([^)\s>]+)>?(?:\s+\"[^\"]*\")?\s*\)")
FENCE = re.compile(r"^\s*(```|~~~)")
# The work-organisation sense only: the word with a number, the run folders' old
# names, "this ..." of the sitting. A decimal after the plural of "call" ("two
# calls 1.3 µs apart") is a measurement, not a run's name.
ORGANISATION = re.compile(
    r"\bsessions? \d+"
    r"|\bsession-\d+"
    r"|\bcalls? \d+(?![.\d])"
    r"|\bs\d+-call\d+"
    r"|\b(?:in|during|from|of) this session\b",
    re.IGNORECASE)
TEXT_DIRS = ("labs", "docs", "tools", "common", "results/h100/notes")
TEXT_FILES = ("README.md",)
TEXT_SUFFIXES = {".md", ".cu", ".cuh", ".hpp", ".cpp", ".h", ".py", ".toml", ".txt", ".build", ".gp", ".sh", ".json"}


def walk(root, top):
    """Files under root/top, skipping build and VCS folders."""
    base = root / top
    if base.is_file():
        yield base
        return
    if not base.is_dir():
        return
    for p in sorted(base.rglob("*")):
        if p.is_file() and not any(part in SKIP_DIRS for part in p.relative_to(root).parts):
            yield p


def markdown_files(root):
    readmes = [p for p in walk(root, ".") if p.name == "README.md"]
    docs = sorted((root / "docs").glob("*.md")) if (root / "docs").is_dir() else []
    return sorted(set(readmes) | set(docs))


def links(text):
    """(line number, target) of each link outside fenced code."""
    fenced = False
    for number, line in enumerate(text.splitlines(), 1):
        if FENCE.match(line):
            fenced = not fenced
            continue
        if fenced:
            continue
        for m in LINK.finditer(line):
            yield number, m.group(1)


def link_problems(root):
    problems = []
    for path in markdown_files(root):
        for number, target in links(path.read_text(encoding="utf-8", errors="replace")):
            if re.match(r"^[a-z][a-z0-9+.-]*:", target, re.IGNORECASE) or target.startswith("#"):
                continue  # http:, https:, mailto:, an anchor in the same page
            file_part = target.split("#", 1)[0].split("?", 1)[0]
            if not file_part:
                continue
            resolved = (root / file_part.lstrip("/")) if file_part.startswith("/") else (path.parent / file_part)
            if not resolved.exists():
                problems.append(f"{path.relative_to(root)}:{number}: link to a missing file: {target} "
                                f"(fix the path, or add the file it names)")
    return problems


def course_text(root):
    for top in TEXT_DIRS + TEXT_FILES:
        for p in walk(root, top):
            if p.suffix in TEXT_SUFFIXES or p.name in ("meson.build", "Makefile"):
                yield p


def organisation_problems(root):
    problems = []
    for path in course_text(root):
        for number, line in enumerate(path.read_text(encoding="utf-8", errors="replace").splitlines(), 1):
            m = ORGANISATION.search(line)
            if m:
                problems.append(f"{path.relative_to(root)}:{number}: names the work's order ({m.group(0)!r}): "
                                f"name the measurement by date and commit instead, or move its history "
                                f"to results/h100/notes/NN_name.md")
    return problems


def problems(root):
    return link_problems(root) + organisation_problems(root)


class CourseText(unittest.TestCase):
    def tree(self, files):
        tmp = tempfile.TemporaryDirectory(prefix="cudalabs-course-text-")
        self.addCleanup(tmp.cleanup)
        root = Path(tmp.name)
        for name, text in files.items():
            (root / name).parent.mkdir(parents=True, exist_ok=True)
            (root / name).write_text(text, encoding="utf-8")
        return root

    def test_this_checkout(self):
        found = problems(ROOT)
        self.assertEqual(found, [], "\n" + "\n".join(found))

    def test_broken_link_is_found(self):
        root = self.tree({"README.md": "[lab 01](labs/01_vector_add)\n",
                          "labs/01_vector_add/README.md": "![plot](../../docs/plots/missing.svg) [ok](../../README.md)\n"
                                                          "[web](https://example.com) [anchor](#run)\n"
                                                          "```\n[in code](nowhere.md)\n```\n",
                          "docs/guide.md": "[methodology](methodology.md#timing)\n"})
        found = link_problems(root)
        self.assertEqual(len(found), 2, found)
        self.assertTrue(any("missing.svg" in p for p in found))
        self.assertTrue(any("methodology.md#timing" in p for p in found))

    def test_planted_session_line_is_found(self):
        root = self.tree({"labs/01_vector_add/README.md": "Measured in session 12's records.\n",
                          "labs/01_vector_add/main.cu": "// 1.5x faster (call 3)\n",
                          "docs/notes.md": "see results/h100/runs/20261123-s12-call4/\n",
                          "results/h100/notes/01_vector_add.md": "Not measured in this session.\n"})
        found = organisation_problems(root)
        self.assertEqual(len(found), 4, found)

    def test_code_concepts_pass(self):
        root = self.tree({
            "common/include/cudalabs/lab.hpp": "// Session::measure() times on the session's stream; "
                                               "lab 19's DriverSession too. A session without them\n",
            "tools/grade.py": "subprocess.Popen(cmd, start_new_session=True)  # --new-session\n",
            "labs/30_x/README.md": "the memset between two calls 1.3-1.8 us; cudaMemAdvise in one call\n",
            "docs/guide.md": "an NCCL session; calls to cudaMalloc\n"})
        self.assertEqual(organisation_problems(root), [])


if __name__ == "__main__":
    if len(sys.argv) == 2 and not sys.argv[1].startswith("-"):
        found = problems(Path(sys.argv[1]).resolve())
        print("\n".join(found) if found else "course text: no problems")
        sys.exit(1 if found else 0)
    unittest.main()
