#!/usr/bin/env python3
"""CPU test: the two indexes of the course name exactly the labs that exist.

A lab is a folder labs/NN_name with a main.cu. Each must have a row in the
course guide's table (docs/course-guide.md, "| NN | name | what it teaches |
needs |") and in the top README.md's lab table ("| NN | [name](labs/NN_name) |
one line | H100 |"), and no row of either may name a folder that is not a lab.
The guide's prerequisites ("needs") must be labs that come earlier.

  tests/test_course_index.py          # this checkout
  tests/test_course_index.py ROOT     # another tree: prints its problems, exit 1 if any

The unit tests also run the check on copies of the tree with a lab added, a row
renamed and a link broken, so a check that stopped finding anything would fail."""
import re
import shutil
import sys
import tempfile
import unittest
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
LAB = re.compile(r"^(\d\d)_([a-z0-9_]+)$")
GUIDE_ROW = re.compile(r"^\|\s*(\d\d)\s*\|\s*([^|]*?)\s*\|[^|]*\|\s*([^|]*?)\s*\|\s*$")
README_ROW = re.compile(r"^\|\s*(\d\d)\s*\|\s*\[([^\]]*)\]\(([^)]*)\)\s*\|")


def labs(root):
    """The lab folders: labs/NN_name with a main.cu."""
    return sorted(p.name for p in (root / "labs").iterdir() if LAB.match(p.name) and (p / "main.cu").is_file())


def table_rows(path, heading_pattern, row):
    """The rows matching `row` in the first table after the heading that matches."""
    lines = path.read_text(encoding="utf-8").splitlines()
    start = next((i for i, line in enumerate(lines) if re.match(heading_pattern, line)), None)
    if start is None:
        return None
    rows, in_table = [], False
    for line in lines[start + 1:]:
        if line.startswith("|"):
            in_table = True
            m = row.match(line)
            if m:
                rows.append(m)
        elif in_table or line.startswith("#"):
            break
    return rows


def guide_problems(root, folders):
    path = root / "docs" / "course-guide.md"
    rows = table_rows(path, r"^## The labs", GUIDE_ROW)
    if not rows:
        return [f"{path.relative_to(root)}: no lab table under '## The labs'"]
    problems, named = [], []
    for m in rows:
        number, name, needs = m.groups()
        folder = f"{number}_{name}"
        named.append(folder)
        if folder not in folders:
            problems.append(f"docs/course-guide.md: row {number} names labs/{folder}, which is not a lab folder")
        for need in re.findall(r"\d+", needs):
            if need not in [n[:2] for n in named[:-1]]:
                problems.append(f"docs/course-guide.md: lab {number} needs {need}, which is not a lab listed before it")
    problems += [f"docs/course-guide.md: no row for labs/{f}" for f in folders if f not in named]
    problems += [f"docs/course-guide.md: labs/{f} has {named.count(f)} rows" for f in sorted(set(named)) if named.count(f) > 1]
    if named != sorted(named):
        problems.append("docs/course-guide.md: the rows are not in the labs' order")
    return problems


def readme_problems(root, folders):
    rows = table_rows(root / "README.md", r"^## The labs", README_ROW)
    if not rows:
        return ["README.md: no lab table under '## The labs'"]
    problems, named = [], []
    for m in rows:
        number, name, link = m.groups()
        folder = f"{number}_{name}"
        named.append(folder)
        if folder not in folders:
            problems.append(f"README.md: row {number} names labs/{folder}, which is not a lab folder")
        if link.rstrip("/") != f"labs/{folder}":
            problems.append(f"README.md: row {number} ({name}) links {link}, not labs/{folder}")
    problems += [f"README.md: no row for labs/{f}" for f in folders if f not in named]
    problems += [f"README.md: labs/{f} has {named.count(f)} rows" for f in sorted(set(named)) if named.count(f) > 1]
    return problems


def problems(root=ROOT):
    folders = labs(root)
    return guide_problems(root, folders) + readme_problems(root, folders)


class CourseIndex(unittest.TestCase):
    def test_this_tree(self):
        self.assertGreaterEqual(len(labs(ROOT)), 32)
        self.assertEqual(problems(), [])

    def copy(self, tmp):
        """The parts of the tree the check reads: README.md, the guide, each lab's main.cu."""
        tree = Path(tmp) / "tree"
        (tree / "docs").mkdir(parents=True)
        shutil.copy(ROOT / "README.md", tree / "README.md")
        shutil.copy(ROOT / "docs" / "course-guide.md", tree / "docs" / "course-guide.md")
        for name in labs(ROOT):
            (tree / "labs" / name).mkdir(parents=True)
            shutil.copy(ROOT / "labs" / name / "main.cu", tree / "labs" / name / "main.cu")
        self.assertEqual(problems(tree), [])
        return tree

    def edit(self, path, old, new):
        text = path.read_text(encoding="utf-8")
        self.assertIn(old, text)
        path.write_text(text.replace(old, new, 1), encoding="utf-8")

    def test_a_lab_missing_from_both(self):
        with tempfile.TemporaryDirectory(prefix="cudalabs-index-test-") as tmp:
            tree = self.copy(tmp)
            (tree / "labs" / "33_fake_lab").mkdir()
            (tree / "labs" / "33_fake_lab" / "main.cu").write_text("int main() { return 0; }\n")
            (tree / "labs" / "34_notes_only").mkdir()  # no main.cu: not a lab
            self.assertEqual(problems(tree), ["docs/course-guide.md: no row for labs/33_fake_lab",
                                              "README.md: no row for labs/33_fake_lab"])

    def test_a_row_naming_no_folder(self):
        with tempfile.TemporaryDirectory(prefix="cudalabs-index-test-") as tmp:
            tree = self.copy(tmp)
            self.edit(tree / "docs" / "course-guide.md", "| 30 | tensor_core_gemm |", "| 30 | tensor_cores |")
            self.edit(tree / "README.md", "| 31 | [flash_attention_hopper](labs/31_flash_attention_hopper) |",
                      "| 31 | [flash_hopper](labs/31_flash_hopper) |")
            found = problems(tree)
            self.assertIn("docs/course-guide.md: row 30 names labs/30_tensor_cores, which is not a lab folder", found)
            self.assertIn("docs/course-guide.md: no row for labs/30_tensor_core_gemm", found)
            self.assertIn("README.md: row 31 names labs/31_flash_hopper, which is not a lab folder", found)
            self.assertIn("README.md: no row for labs/31_flash_attention_hopper", found)

    def test_a_lab_folder_removed(self):
        with tempfile.TemporaryDirectory(prefix="cudalabs-index-test-") as tmp:
            tree = self.copy(tmp)
            (tree / "labs" / "31_flash_attention_hopper" / "main.cu").unlink()
            found = problems(tree)
            self.assertIn("docs/course-guide.md: row 31 names labs/31_flash_attention_hopper, which is not a lab folder",
                          found)
            self.assertIn("README.md: row 31 names labs/31_flash_attention_hopper, which is not a lab folder", found)

    def test_a_wrong_link_and_a_later_prerequisite(self):
        with tempfile.TemporaryDirectory(prefix="cudalabs-index-test-") as tmp:
            tree = self.copy(tmp)
            self.edit(tree / "README.md", "(labs/30_tensor_core_gemm)", "(labs/18_matmul_cublas_gap)")
            guide = tree / "docs" / "course-guide.md"
            row = next(line for line in guide.read_text(encoding="utf-8").splitlines() if line.startswith("| 30 |"))
            self.edit(guide, row, row[:row.rstrip(" |").rindex("|")] + "| 18, 31 |")
            self.assertEqual(problems(tree), [
                "docs/course-guide.md: lab 30 needs 31, which is not a lab listed before it",
                "README.md: row 30 (tensor_core_gemm) links labs/18_matmul_cublas_gap, not labs/30_tensor_core_gemm"])


def main():
    if len(sys.argv) > 1 and not sys.argv[1].startswith("-"):
        found = problems(Path(sys.argv[1]).resolve())
        print("\n".join(found) or "ok: every lab folder has a row in docs/course-guide.md and README.md, and every row a folder")
        return 1 if found else 0
    return 0 if unittest.main(verbosity=2, exit=False).result.wasSuccessful() else 1


if __name__ == "__main__":
    sys.exit(main())
