#!/usr/bin/env python3
"""CPU tests of the starter-kit maker (tools/starter.py); no GPU, no compiler.

The marker grammar on small texts (balanced, named, each region with its stub,
mixed regions refused), the course's own markers against tools/grading.toml,
and a starter tree written from the course: every file there, only the marked
regions changed, no marker left. Run: python3 tests/starter/test_starter.py
"""
import filecmp
import subprocess
import sys
import tempfile
import unittest
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent.parent
import starter  # tools/starter.py (PYTHONPATH: tests/starter/meson.build)

LAUNCHER = """\
inline void add(const float* a, float* c, int n, cudaStream_t s) {
  // BEGIN SOLUTION add
  add_kernel<<<ceil_div(n, 256), 256, 0, s>>>(a, c, n);
  CUDALABS_CHECK_LAUNCH("add_kernel");
  // END SOLUTION
  // STUB: cudalabs::not_implemented("add", a, c, n, s);
}
"""


class Grammar(unittest.TestCase):
    def error(self, text):
        with self.assertRaises(starter.MarkerError) as e:
            starter.parse(text, "f.cuh")
        return str(e.exception)

    def test_a_region_and_its_stub(self):
        [r] = starter.parse(LAUNCHER, "f.cuh")
        self.assertEqual((r.variants, r.begin, r.end), (["add"], 2, 5))
        self.assertEqual(r.stub, ['  cudalabs::not_implemented("add", a, c, n, s);\n'])
        self.assertEqual(len(r.solution), 2)

    def test_exercise_replaced_by_its_stub_at_the_markers_indentation(self):
        out = starter.render(LAUNCHER, "f.cuh", ["add"])
        self.assertEqual(out, 'inline void add(const float* a, float* c, int n, cudaStream_t s) {\n'
                              '  cudalabs::not_implemented("add", a, c, n, s);\n}\n')

    def test_not_an_exercise_keeps_the_solution_without_markers(self):
        out = starter.render(LAUNCHER, "f.cuh", ["other"])
        self.assertEqual(out, LAUNCHER.replace("  // BEGIN SOLUTION add\n", "").replace("  // END SOLUTION\n", "")
                         .replace('  // STUB: cudalabs::not_implemented("add", a, c, n, s);\n', ""))
        self.assertNotIn("//", out)

    def test_several_stub_lines_and_an_empty_one(self):
        text = "x\n// BEGIN SOLUTION a b\ny\n// END SOLUTION\n// STUB: // TODO one\n// STUB:\n// STUB: z;\nw\n"
        self.assertEqual(starter.render(text, "f", ["a", "b"]), "x\n// TODO one\n\nz;\nw\n")

    def test_a_region_of_an_exercise_and_a_given_variant_is_refused(self):
        text = "// BEGIN SOLUTION a b\ny\n// END SOLUTION\n// STUB: // TODO\n"
        with self.assertRaises(starter.MarkerError) as e:
            starter.render(text, "f", ["a"])
        self.assertIn("would break b", str(e.exception))

    def test_unbalanced_and_malformed_markers_are_named_with_their_line(self):
        self.assertIn("f.cuh:1: BEGIN SOLUTION without an END", self.error("// BEGIN SOLUTION a\nx\n"))
        self.assertIn("f.cuh:2: END SOLUTION without a BEGIN", self.error("x\n// END SOLUTION\n"))
        self.assertIn("do not nest", self.error("// BEGIN SOLUTION a\n// BEGIN SOLUTION b\n// END SOLUTION\n// STUB: x\n"))
        self.assertIn("f.cuh:3: END SOLUTION must be followed by its stub",
                      self.error("// BEGIN SOLUTION a\nx\n// END SOLUTION\ny\n"))
        self.assertIn("names the variant", self.error("// BEGIN SOLUTION\nx\n// END SOLUTION\n// STUB: y\n"))
        self.assertIn("f.cuh:1: a STUB line must follow", self.error("// STUB: x\n"))
        self.assertIn("alone on its line", self.error("int x;  // END SOLUTION\n"))


class Course(unittest.TestCase):
    """The course's markers, as tools/grading.toml names exercises."""

    def test_the_course_markers_are_well_formed_and_cover_every_exercise(self):
        marks = starter.course(ROOT)  # raises, naming every problem, if not
        marked = [m for m in marks.values() if m.exercises and m.marked]
        self.assertTrue(marked, "no lab has marked exercises")
        for m in marked:
            self.assertEqual(set(m.exercises) - set(m.marked), set(), m.lab)

    def test_a_lab_with_exercises_but_no_markers_is_reported_not_failed(self):
        m = starter.LabMarks("99_future", ["fast"], {"fast.cuh": []})
        self.assertIn("NOT MARKED YET", starter.report({"99_future": m}))

    def test_every_exercise_stub_throws_not_implemented(self):
        """A stub launcher must fail its check ("not implemented yet"), never crash
        or pass: each exercise has at least one region whose stub throws."""
        for lab, m in starter.course(ROOT).items():
            if not m.marked:
                continue
            for variant in m.exercises:
                stubs = "".join(line for rs in m.regions.values() for r in rs if variant in r.variants for line in r.stub)
                self.assertIn("cudalabs::not_implemented(", stubs, f"{lab}: {variant}")


def fake_course(root, exercises):
    """A course of three labs: 02_b's main.cu includes 01_a's a.cuh, which 01_a's
    kernels.cu also includes (<a.cuh>); 03_c includes 02_b's b.cuh, which
    includes a.cuh again. 01_a's a.cuh and own.cuh each hold one region."""
    files = {
        "labs/meson.build": "lab_names = ['01_a', '02_b', '03_c']\n",
        "tools/grading.toml": "[labs.01_a]\nstudent_files = [\"a.cuh\", \"own.cuh\"]\n"
                              f"exercise_variants = {exercises!r}\n".replace("'", '"'),
        "labs/01_a/main.cu": "#include \"kernels.hpp\"\n",
        "labs/01_a/kernels.cu": "#include <a.cuh>\n#include <own.cuh>\n",
        "labs/01_a/a.cuh": "void f() {\n  // BEGIN SOLUTION shared\n  x();\n  // END SOLUTION\n  // STUB: y();\n}\n",
        "labs/01_a/own.cuh": "void g() {\n  // BEGIN SOLUTION mine\n  x();\n  // END SOLUTION\n  // STUB: y();\n}\n",
        "labs/02_b/main.cu": "#include \"../01_a/a.cuh\"\n#include <vector>\n",
        "labs/02_b/b.cuh": "#include \"../01_a/a.cuh\"\n",
        "labs/03_c/main.cu": "#include \"../02_b/b.cuh\"\n",
    }
    for rel, text in files.items():
        (root / rel).parent.mkdir(parents=True, exist_ok=True)
        (root / rel).write_text(text)


class OtherLabsUse(unittest.TestCase):
    """Code another lab includes is never an exercise (its given variants would
    run the stub)."""

    def test_the_labs_that_include_a_file_directly_or_through_others(self):
        with tempfile.TemporaryDirectory() as tmp:
            fake_course(Path(tmp), ["mine"])
            self.assertEqual(starter.foreign_users(Path(tmp)),
                             {"01_a/a.cuh": ["02_b", "03_c"], "02_b/b.cuh": ["03_c"]})

    def test_an_exercise_in_a_file_another_lab_includes_is_refused(self):
        with tempfile.TemporaryDirectory() as tmp:
            fake_course(Path(tmp), ["shared", "mine"])
            with self.assertRaises(starter.MarkerError) as e:
                starter.course(Path(tmp))
            self.assertIn("labs/01_a/a.cuh:2: an exercise region (shared) in a file that lab(s) 02_b, 03_c include",
                          str(e.exception))
            self.assertNotIn("own.cuh", str(e.exception))

    def test_a_region_kept_there_and_an_exercise_in_a_file_only_its_lab_uses_are_fine(self):
        with tempfile.TemporaryDirectory() as tmp:
            fake_course(Path(tmp), ["mine"])
            self.assertEqual(starter.course(Path(tmp))["01_a"].exercises, ["mine"])

    def test_the_instructor_guide_lists_the_files_other_labs_include(self):
        """docs/instructor-guide.md shows tools/starter.py --deps between its
        markers: regenerate it there when a lab starts including another's file."""
        text = (ROOT / "docs" / "instructor-guide.md").read_text()
        begin, end = "<!-- starter --deps: begin -->\n", "<!-- starter --deps: end -->"
        self.assertTrue(begin in text, f"docs/instructor-guide.md has no {begin.strip()} marker")
        shown = text.split(begin, 1)[1].split(end, 1)[0]
        self.assertEqual(shown, starter.deps_markdown(ROOT),
                         "docs/instructor-guide.md: the list of files other labs include is stale; replace it with "
                         "the output of `python3 tools/starter.py --deps`")


class Tree(unittest.TestCase):
    @classmethod
    def setUpClass(cls):
        cls.tmp = tempfile.TemporaryDirectory()
        cls.out = Path(cls.tmp.name) / "starter"
        p = subprocess.run([sys.executable, str(ROOT / "tools" / "starter.py"), str(cls.out)],
                           capture_output=True, text=True)
        cls.output = p.stdout + p.stderr
        assert p.returncode == 0, cls.output
        cls.marks = starter.course(ROOT)

    @classmethod
    def tearDownClass(cls):
        cls.tmp.cleanup()

    def test_every_file_copied_and_only_marked_regions_changed(self):
        student = {f"labs/{lab}/{name}": m for lab, m in self.marks.items() for name in m.regions}
        files = starter.tree_files(ROOT)
        self.assertIn("labs/21_transpose/main.cu", files)
        changed = []
        for rel in files:
            if rel == "REVISION":
                continue
            src, dst = ROOT / rel, self.out / rel
            self.assertTrue(dst.is_file(), rel)
            if rel in student and any(r.variants[0] in student[rel].exercises for r in student[rel].regions[Path(rel).name]):
                self.assertEqual(dst.read_text(), starter.render(src.read_text(), rel, student[rel].exercises), rel)
                changed.append(rel)
            else:
                # Unmarked, or marked but not an exercise: the markers go, nothing else.
                expected = starter.render(src.read_text(), rel, []) if rel in student else None
                if expected is None:
                    self.assertTrue(filecmp.cmp(src, dst, shallow=False), f"{rel} changed")
                else:
                    self.assertEqual(dst.read_text(), expected, rel)
        self.assertTrue(changed, "no file had an exercise region")
        self.assertIn("results", {Path(f).parts[0] for f in files})  # results/ stays, to compare against

    def test_no_git_no_build_folder_no_marker(self):
        self.assertFalse((self.out / ".git").exists())
        self.assertFalse(any(p.name == "meson-private" for p in self.out.rglob("*")))
        for path in (self.out / "labs").rglob("*"):
            if path.suffix in starter.SOURCE_SUFFIXES:
                self.assertIsNone(starter.ANY_MARKER.search(path.read_text()), path)
        self.assertTrue((self.out / "REVISION").read_text().strip().endswith("-starter"))

    def test_the_stubs_are_in_and_the_solutions_out(self):
        text = (self.out / "labs" / "21_transpose" / "transpose_four_per_thread.cuh").read_text()
        self.assertIn('cudalabs::not_implemented("transpose_four_per_thread", in, out, rows, cols, stream);', text)
        self.assertNotIn("transpose_four_per_thread_kernel<<<", text)

    def test_writing_into_a_non_empty_folder_is_refused(self):
        p = subprocess.run([sys.executable, str(ROOT / "tools" / "starter.py"), str(self.out)],
                           capture_output=True, text=True)
        self.assertEqual(p.returncode, 2, p.stdout + p.stderr)
        self.assertIn("not empty", p.stderr)


# A fake lab program for VerifyRun: writes one record per variant it "runs" and
# exits 1 when a record failed, as the labs do. --dtype tf32 runs only 'tf32'.
FAKE_LAB = """#!/usr/bin/env python3
import json, sys
args = sys.argv[1:]
out = args[args.index("--json") + 1]
behaviour = json.loads(open(sys.argv[0] + ".json").read())
names = behaviour["tf32"] if "tf32" in args else behaviour["default"]
failed = 0
with open(out, "a") as f:
    for name in names:
        stub = name in behaviour["stubs"]
        failed |= stub
        r = {"variant": name, "passed": not stub}
        if stub:
            r["failure"] = "not implemented yet: " + name
        f.write(json.dumps(r) + "\\n")
for line in behaviour.get("say", []):
    print(line)
sys.exit(1 if failed else 0)
"""


class VerifyRun(unittest.TestCase):
    """starter.verify_run on fake lab programs: the grader's correctness runs, the
    exit code each run must give, variants only another run reaches (lab 30's
    tf32_mma under --dtype tf32), variants this machine skips (lab 32 on one GPU)."""

    def run_labs(self, behaviours, exercises):
        folder = tempfile.TemporaryDirectory()
        self.addCleanup(folder.cleanup)
        tmp = Path(folder.name)
        marks = {}
        for lab, behaviour in behaviours.items():
            prog = tmp / "labs" / lab / lab
            prog.parent.mkdir(parents=True)
            prog.write_text(FAKE_LAB)
            prog.chmod(0o755)
            (prog.parent / (lab + ".json")).write_text(__import__("json").dumps(behaviour))
            region = starter.Region(variants=exercises[lab], begin=1, end=2)
            marks[lab] = starter.LabMarks(lab, exercises[lab], {"f.cuh": [region]})
        runs = [("--quick", ["--quick"]), ("edge_tf32", ["--dtype", "tf32"])]
        patches = {"why_no_gpu": lambda: None, "load_config": lambda path, labs: {lab: {} for lab in labs},
                   "correctness_runs": lambda lab, cfg: runs}
        saved = {k: getattr(starter, k) for k in patches}
        for k, v in patches.items():
            setattr(starter, k, v)
        try:
            return starter.verify_run(tmp, tmp, marks, timeout=60)
        finally:
            for k, v in saved.items():
                setattr(starter, k, v)

    def test_a_variant_of_another_run_counts(self):
        status, lines = self.run_labs({"30_x": {"default": ["cublas", "wmma"], "tf32": ["cublas", "tf32_mma"],
                                                "stubs": ["wmma", "tf32_mma"]}}, {"30_x": ["wmma", "tf32_mma"]})
        self.assertEqual(status, 0, lines)
        self.assertIn("stubs tf32_mma, wmma", lines[0])

    def test_a_run_without_exercises_must_exit_0(self):
        status, lines = self.run_labs({"30_x": {"default": ["cublas", "wmma"], "tf32": ["cublas"],
                                                "stubs": ["wmma", "cublas"]}}, {"30_x": ["wmma"]})
        self.assertEqual(status, 1)
        self.assertIn("cublas should pass", lines[0])

    def test_a_passing_exercise_fails_the_check(self):
        status, lines = self.run_labs({"30_x": {"default": ["cublas", "wmma"], "tf32": [], "stubs": []}},
                                      {"30_x": ["wmma"]})
        self.assertEqual(status, 1)
        self.assertIn('wmma should fail "not implemented yet" but passed', lines[0])

    def test_skipped_here_only_when_the_program_says_so(self):
        said = ["needs at least 2 GPUs; 1 in use (visible): skipped peer_copy, ring"]
        status, lines = self.run_labs({"32_x": {"default": ["single"], "tf32": ["single"], "stubs": [], "say": said}},
                                      {"32_x": ["peer_copy", "ring"]})
        self.assertEqual(status, 0, lines)
        self.assertIn("skipped on this machine: peer_copy, ring", lines[0])
        status, lines = self.run_labs({"32_x": {"default": ["single"], "tf32": ["single"], "stubs": []}},
                                      {"32_x": ["peer_copy", "ring"]})
        self.assertEqual(status, 1)
        self.assertIn("no record of peer_copy, ring", lines[0])


if __name__ == "__main__":
    unittest.main(verbosity=2)
