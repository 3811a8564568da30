#!/usr/bin/env python3
"""CPU tests of tools/grade_class.py and grade.py's --prebuilt, without building
anything: the export layouts, the normalised tokens and the similarity flags, the
class table's flags, and a prebuilt program that is not the student's.
Run: python3 tests/class/test_grade_class.py
"""
import csv
import json
import os
import subprocess
import sys
import tempfile
import time
import unittest
import stat
import zipfile
from pathlib import Path

HERE = Path(__file__).resolve().parent
ROOT = HERE.parent.parent
import grade_class  # tools/ (PYTHONPATH: tests/class/meson.build)
from grader import archive, sandbox
from grader.config import NOT_RUN
from grader.submission import prebuilt_submission, student_files_digest

LABS, CONFIG = grade_class.load_course()


class Layouts(unittest.TestCase):
    def setUp(self):
        self.tmp = tempfile.TemporaryDirectory()
        self.dir = Path(self.tmp.name)

    def tearDown(self):
        self.tmp.cleanup()

    def make(self, layout, n):
        subprocess.run([sys.executable, str(HERE / "make_submissions.py"), str(self.dir / "subs"), "--students", str(n),
                        "--layout", layout], check=True, capture_output=True)
        expected = json.loads((self.dir / "expected.json").read_text())
        return expected, grade_class.discover(self.dir / "subs", self.dir / "out", LABS, CONFIG)

    def check(self, expected, students, canvas=()):
        self.assertEqual(sorted(s.name for s in students), sorted(expected))
        for s in students:
            with self.subTest(student=s.name):
                given = expected[s.name]
                self.assertEqual(s.labs, sorted(given))
                for lab in given:
                    for name in CONFIG[lab]["student_files"]:
                        self.assertTrue((self.dir / "out" / "students" / s.id / "submission" / lab / name).is_file())
                if given.get("01_vector_add") == "extra_file" and s.name not in canvas:
                    extra = self.dir / "out" / "students" / s.id / "submission" / "01_vector_add" / "notes.txt"
                    self.assertTrue(extra.is_file(), "an extra file stays in its lab folder: the grader names it")

    def test_gradescope_export_names_the_students(self):
        expected, students = self.make("gradescope", 9)
        self.check(expected, students)
        self.assertEqual(students[0].source, "submission_100000")

    def test_lms_folders_zips_and_canvas_files(self):
        expected, students = self.make("lms", 12)
        self.check(expected, students, canvas={"knuthdonald", "allenfrances"})
        self.assertIn("Ada Lovelace_300000_assignsubmission_file_.zip", [s.source for s in students])

    def test_files_of_no_lab_are_named(self):
        folder = self.dir / "subs" / "eve"
        (folder / "04_reduction").mkdir(parents=True)
        (folder / "04_reduction" / "reduction.cuh").write_text("x")
        (folder / "README.md").write_text("hi")
        [s] = grade_class.discover(self.dir / "subs", self.dir / "out", LABS, CONFIG)
        self.assertEqual((s.labs, s.extras), (["04_reduction"], ["README.md"]))


    def test_one_place_given_twice_is_named_and_the_class_goes_on(self):
        """Two folders of one lab in a student's folder: a file in one, a folder of the
        same name in the other. Copying both into one lab folder cannot succeed; once it
        stopped the class's discovery, every student's grading with it."""
        folder = self.dir / "subs" / "mallory"
        (folder / "a" / "04_reduction").mkdir(parents=True)
        (folder / "a" / "04_reduction" / "reduction.cuh").write_text("first")
        (folder / "b" / "04_reduction" / "reduction.cuh").mkdir(parents=True)
        (folder / "b" / "04_reduction" / "reduction.cuh" / "x").write_text("second")
        (folder / "reduction.cuh").write_text("loose")
        (self.dir / "subs" / "trent" / "04_reduction").mkdir(parents=True)
        (self.dir / "subs" / "trent" / "04_reduction" / "reduction.cuh").write_text("his")
        students = {s.name: s for s in grade_class.discover(self.dir / "subs", self.dir / "out", LABS, CONFIG)}
        self.assertEqual(students["trent"].labs, ["04_reduction"])
        mallory = students["mallory"]
        self.assertEqual(mallory.labs, ["04_reduction"])
        got = self.dir / "out" / "students" / mallory.id / "submission" / "04_reduction" / "reduction.cuh"
        self.assertEqual(got.read_text(), "first")
        self.assertEqual(len([e for e in mallory.extras if "is given twice: not taken" in e]), 2, mallory.extras)


def write_zip(path, members):
    """A zip of (ZipInfo or name, bytes) members, made as a hostile student would."""
    path.parent.mkdir(parents=True, exist_ok=True)
    with zipfile.ZipFile(path, "w", zipfile.ZIP_DEFLATED) as z:
        for info, data in members:
            z.writestr(info, data)


def member(name, mode=None):
    info = zipfile.ZipInfo(name)
    info.create_system = 3  # Unix: external_attr's high bits are the file's mode
    info.external_attr = (mode if mode is not None else stat.S_IFREG | 0o644) << 16
    info.compress_type = zipfile.ZIP_DEFLATED
    return info


def mark_encrypted(path):
    """Sets the 'encrypted' bit of a one-member zip in its local and central headers
    (zipfile cannot write an encrypted zip; a reader must refuse it all the same)."""
    data = bytearray(path.read_bytes())
    for signature, at in ((b"PK\x03\x04", 6), (b"PK\x01\x02", 8)):
        data[data.index(signature) + at] |= 0x1
    path.write_bytes(bytes(data))


class HostileArchives(unittest.TestCase):
    """tools/grader/archive.py through discover: whatever one archive holds, the class
    is graded and that student's row says what was refused and why."""
    KERNEL = "04_reduction/reduction.cuh"

    def setUp(self):
        self.tmp = tempfile.TemporaryDirectory()
        self.dir = Path(self.tmp.name)
        self.subs = self.dir / "subs"
        (self.subs / "ann" / "04_reduction").mkdir(parents=True)
        (self.subs / "ann" / "04_reduction" / "reduction.cuh").write_text("// ann\n")

    def tearDown(self):
        self.tmp.cleanup()

    def discover(self):
        students = grade_class.discover(self.subs, self.dir / "out", LABS, CONFIG)
        return {s.name: s for s in students}

    def one(self, members, name="mallory"):
        write_zip(self.subs / f"{name}.zip", members)
        found = self.discover()
        self.assertEqual(found["ann"].labs, ["04_reduction"], "the rest of the class is read")
        return found[name]

    def rejected(self, members, *words):
        s = self.one(members)
        self.assertTrue(s.rejected.startswith("rejected: mallory.zip: "), s.rejected)
        self.assertIn("Fix: ", s.rejected)
        for word in words:
            self.assertIn(word, s.rejected)
        self.assertEqual(s.labs, [])
        return s

    def test_names_outside_the_folder_reject_that_archive_only(self):
        self.rejected([("../../evil.cuh", "x")], "outside the archive's folder")
        self.rejected([(member("/etc/evil.cuh"), "x")], "outside")
        self.rejected([(member("04_reduction\\..\\..\\evil.cuh"), "x")], "outside")
        self.assertFalse((self.dir / "evil.cuh").exists() or (self.dir / "out" / "evil.cuh").exists())

    def test_corrupt_encrypted_and_duplicated_archives_are_rejected(self):
        (self.subs / "mallory.zip").write_bytes(b"PK\x03\x04 this is not a zip at all")
        s = self.discover()["mallory"]
        self.assertIn("cannot be read", s.rejected)
        (self.subs / "mallory.zip").unlink()
        write_zip(self.subs / "mallory.zip", [(self.KERNEL, "x")])
        mark_encrypted(self.subs / "mallory.zip")
        self.assertIn("encrypted", self.discover()["mallory"].rejected)
        (self.subs / "mallory.zip").unlink()
        self.rejected([(self.KERNEL, "a"), (self.KERNEL, "b")], "twice")

    def test_a_zip_bomb_stops_at_the_limits(self):
        huge = bytes(archive.MAX_FILE_BYTES + 1)  # zeros: deflates a thousandfold
        s = self.one([(self.KERNEL, "// mine\n"), ("profile.ncu-rep", huge)])
        self.assertEqual((s.rejected, s.labs), ("", ["04_reduction"]))
        self.assertTrue(any(e.startswith("profile.ncu-rep (more than") for e in s.extras), s.extras)
        self.assertFalse((self.dir / "out" / "unpacked" / "zip" / "mallory" / "profile.ncu-rep").exists())
        (self.subs / "mallory.zip").unlink()
        count = archive.MAX_UNPACKED_BYTES // archive.MAX_FILE_BYTES + 1
        self.rejected([(f"part{n}.bin", bytes(archive.MAX_FILE_BYTES)) for n in range(count)],
                      f"more than {archive.MAX_UNPACKED_BYTES >> 20} MiB")
        (self.subs / "mallory.zip").unlink()
        self.rejected([(f"f{n}", "") for n in range(archive.MAX_MEMBERS + 1)], "entries")
        (self.subs / "mallory.zip").unlink()
        saved = archive.MAX_ARCHIVE_BYTES
        archive.MAX_ARCHIVE_BYTES = 100
        try:
            self.rejected([(self.KERNEL, "x" * 1000)], "more than the limit")
        finally:
            archive.MAX_ARCHIVE_BYTES = saved

    def test_links_odd_names_deep_folders_and_inner_zips_are_left_out_and_named(self):
        inner = self.dir / "inner.zip"
        write_zip(inner, [("evil.cuh", "x")])
        deep = "/".join(["d"] * (archive.MAX_DEPTH + 2)) + "/reduction.cuh"
        s = self.one([(member("04_reduction\\reduction.cuh"), "// made on Windows\n"),
                      (member("link.cuh", stat.S_IFLNK | 0o777), "/etc/passwd"),
                      (member("fifo", stat.S_IFIFO | 0o644), ""),
                      (member("bell\x07\x1b[2J.cuh"), "x"), (deep, "x"),
                      ("inner.zip", inner.read_bytes())])
        self.assertEqual((s.rejected, s.labs), ("", ["04_reduction"]))
        got = self.dir / "out" / "students" / s.id / "submission" / "04_reduction" / "reduction.cuh"
        self.assertEqual(got.read_text(), "// made on Windows\n")
        extras = " | ".join(s.extras)
        for said in ("link.cuh (a symbolic link", "fifo (not a plain file", "(a name with control characters",
                     "folders deep", "inner.zip"):
            self.assertIn(said, extras)
        self.assertNotIn("\x1b", extras, "a name cannot forge the report's lines")
        unpacked = self.dir / "out" / "unpacked" / "zip" / "mallory"
        self.assertFalse([p for p in unpacked.rglob("*") if p.is_symlink() or p.name == "evil.cuh"])
        self.assertFalse((unpacked / "link.cuh").exists())

    def test_a_canvas_file_that_is_a_link_is_not_followed(self):
        secret = self.dir / "instructor-only.txt"
        secret.write_text("the answers")
        (self.subs / "lovelaceada_12_34_reduction.cuh").symlink_to(secret)
        (self.subs / "lovelaceada_12_34_notes.txt").write_text("mine")
        s = self.discover()["lovelaceada"]
        self.assertEqual(s.labs, [])
        self.assertTrue(any("lovelaceada_12_34_reduction.cuh (" in e and "symbolic link" in e for e in s.extras),
                        s.extras)
        copied = [p for p in (self.dir / "out").rglob("*") if p.is_file() and p.read_bytes() == b"the answers"]
        self.assertEqual(copied, [])

    def test_a_rejected_student_is_a_row_with_zero_points_and_the_class_is_graded(self):
        write_zip(self.subs / "mallory.zip", [("../evil.cuh", "x")])
        name = "<img src=x onerror=alert(1)>" + "\u00e9" * 300
        (self.subs / "submission_metadata.yml").write_text(f"submission_1:\n  :submitters:\n  - :name: {name}\n")
        (self.subs / "submission_1" / "04_reduction").mkdir(parents=True)
        (self.subs / "submission_1" / "04_reduction" / "reduction.cuh").write_text("x")
        (self.subs / "Ann!").mkdir()  # the same folder name as ann once normalised
        students = grade_class.discover(self.subs, self.dir / "out", LABS, CONFIG)
        ids = [s.id for s in students]
        self.assertEqual(len(set(ids)), len(ids))
        self.assertTrue(all(len(i) <= grade_class.MAX_ID_CHARS + 4 for i in ids), ids)
        out = self.dir / "out"
        plan = {"out": str(out), "labs": ["04_reduction"], "seed": 1, "revision": "r", "started": "t",
                "no_gpu": True, "students": [grade_class.asdict(s) for s in students]}
        for i, s in enumerate(students):
            if s.rejected:
                grade_class.grade_student(plan, i)
            else:  # stands in for grade.py: graded, 6 points
                lab = {"status": "graded", "correct": True, "correctness": 6, "performance": 0, "max_score": 10,
                       "flags": [], "why": ""}
                (out / "students" / s.id / "grade").mkdir(parents=True)
                (out / "students" / s.id / "grade" / "results.json").write_text(
                    json.dumps({"extra_data": {"labs": {"04_reduction": lab}}}))
                (out / "students" / s.id / "status.json").write_text(json.dumps({"error": ""}))
        rc = grade_class.finish(plan, students, CONFIG, time.monotonic())
        self.assertEqual(rc, 0, "a refused archive is graded: zero points, the reason in its row")
        with open(out / "class.csv") as f:
            rows = {r["id"]: r for r in csv.DictReader(f)}
        bad = rows["mallory"]
        self.assertTrue(bad["status"].startswith("rejected: mallory.zip: ") and "Fix: " in bad["status"], bad)
        self.assertEqual((bad["total"], bad["04_reduction"], bad["flags"]), ("0", "", "rejected"))
        self.assertEqual(rows["ann"]["total"], "6")
        report = (out / "report.html").read_text()
        self.assertIn("Fix: make the zip from inside your folder", report)
        self.assertNotIn("<img", report)
        self.assertIn("&lt;img src=x", report)


class Similarity(unittest.TestCase):
    COURSE = (ROOT / "labs" / "04_reduction" / "reduction.cuh").read_text()

    def test_tokens_ignore_comments_layout_and_names(self):
        renamed = self.COURSE.replace("stride", "step").replace("cache", "tile").replace("// ", "// note: ")
        self.assertEqual(grade_class.tokens(renamed), grade_class.tokens(self.COURSE))
        changed = self.COURSE.replace("+=", "=")
        self.assertNotEqual(grade_class.tokens(changed), grade_class.tokens(self.COURSE))

    def test_shared_edits_are_flagged_and_the_starter_never(self):
        with tempfile.TemporaryDirectory() as tmp:
            out = Path(tmp)
            same_edit = self.COURSE.replace("partials[blockIdx.x] = cache[0];",
                                            "if (cache[0] > 1e30f) partials[blockIdx.x] = 0.0f; else partials[blockIdx.x] = cache[0];")
            texts = {"copy_a": same_edit, "copy_b": same_edit.replace("cache", "shm")}
            texts.update({f"course_{n}": self.COURSE for n in range(4)})
            # Each of the others makes an edit of their own.
            for n in range(8):
                texts[f"own_{n}"] = self.COURSE.replace("tree_block / 2", f"tree_block / 2 + {n} * 0") + f"\nint own_{n}_{n} = {n * 7};\n" * (n + 1)
            students = []
            for sid, text in texts.items():
                folder = out / "students" / sid / "submission" / "04_reduction"
                folder.mkdir(parents=True)
                (folder / "reduction.cuh").write_text(text)
                students.append(grade_class.Student(sid, sid, sid, ["04_reduction"]))
            pairs = grade_class.similarity(students, out, ["04_reduction"], CONFIG)
            flagged = {(p["student_a"], p["student_b"]) for p in pairs if p["flagged"]}
            self.assertEqual(flagged, {("copy_a", "copy_b")})
            self.assertTrue(all(p["flagged"] or p["similarity"] >= grade_class.LISTED_SIMILARITY for p in pairs),
                            "a class of thousands keeps only the pairs it lists")
            self.assertFalse([p for p in pairs if "course_" in p["student_a"] + p["student_b"]],
                             "a file equal to the starter has nothing of its own to compare")


class Reports(unittest.TestCase):
    def test_class_csv_flags_and_a_timeout(self):
        with tempfile.TemporaryDirectory() as tmp:
            out = Path(tmp)
            students = [grade_class.Student("a", "Ann", "a", ["04_reduction"]),
                        grade_class.Student("b", "Bob", "b", ["04_reduction"])]
            g = out / "students" / "a" / "grade"
            g.mkdir(parents=True)
            lab = {"status": "graded", "correct": True, "correctness": 6, "performance": 0, "max_score": 10,
                   "flags": ["implausible"], "why": "IMPLAUSIBLE"}
            (g / "results.json").write_text(json.dumps({"extra_data": {"labs": {"04_reduction": lab}}}))
            (out / "students" / "a" / "status.json").write_text(json.dumps({"error": "", "timed_out": False}))
            (out / "students" / "b").mkdir(parents=True)
            (out / "students" / "b" / "status.json").write_text(json.dumps({"error": "did not finish in 5 s",
                                                                            "timed_out": True}))
            plan = {"out": str(out), "labs": ["04_reduction"]}
            rows = grade_class.gather(plan, students)
            grade_class.write_csv(rows, ["04_reduction"], out / "class.csv")
            with open(out / "class.csv") as f:
                a, b = list(csv.DictReader(f))
            self.assertEqual((a["04_reduction"], a["04_reduction flags"], a["status"]), ("6", "implausible", "graded"))
            self.assertEqual((b["04_reduction"], b["04_reduction flags"], b["flags"]), ("", "timeout", "timeout"))
            self.assertIn("did not finish", b["status"])


class Prebuilt(unittest.TestCase):
    def test_a_students_programs_are_files_of_its_own_folder(self):
        # The sandbox shows a submission its own folders only: a symbolic link
        # from students/ID/prebuilt into the cache would point at nothing there,
        # and every run would fail as if the student's code had. grade_student
        # with the cache and grade.py stood in for: what lands in prebuilt/.
        with tempfile.TemporaryDirectory() as tmp:
            tmp = Path(tmp)
            entry = tmp / "cache" / "entries" / "k"
            entry.mkdir(parents=True)
            (entry / "04_reduction").write_text("program")
            (entry / "student-files.sha256").write_text("digest\n")
            home = tmp / "out" / "students" / "a"
            for name in CONFIG["04_reduction"]["student_files"]:
                (home / "submission" / "04_reduction").mkdir(parents=True, exist_ok=True)
                (home / "submission" / "04_reduction" / name).write_text("// kernel\n")

            class Cache:
                def __init__(self, *args):
                    pass

                def ensure(self, lab, files, cfg):
                    return entry

            graded = []
            plan = {"students": [{"id": "a", "name": "Ann", "source": "a", "labs": ["04_reduction"]}],
                    "out": str(tmp / "out"), "labs": ["04_reduction"], "cache": str(tmp / "cache"), "revision": "r",
                    "arch": "9.0", "builders": 1, "jobs": 1, "timeout": 5, "no_gpu": True, "grade_args": [],
                    "seed": 1}
            saved = grade_class.BuildCache, grade_class.run
            grade_class.BuildCache = Cache
            grade_class.run = lambda what, cmd, timeout, log: graded.append(cmd) or grade_class.Run(what, cmd)
            try:
                status = grade_class.grade_student(plan, 0)
            finally:
                grade_class.BuildCache, grade_class.run = saved
            self.assertEqual(status["error"], "", status)
            self.assertEqual(len(graded), 1)
            here = home / "prebuilt" / "labs" / "04_reduction"
            self.assertEqual(sorted(f.name for f in here.iterdir()), ["04_reduction", "student-files.sha256"])
            for f in here.iterdir():
                self.assertFalse(f.is_symlink(), f)
                self.assertEqual(f.read_text(), (entry / f.name).read_text())

    def test_a_program_built_from_other_files_is_refused(self):
        with tempfile.TemporaryDirectory() as tmp:
            tmp = Path(tmp)
            sub = tmp / "sub" / "04_reduction"
            sub.mkdir(parents=True)
            (sub / "reduction.cuh").write_text("// mine\n")
            here = tmp / "prebuilt" / "labs" / "04_reduction"
            here.mkdir(parents=True)
            (here / "student-files.sha256").write_text("0" * 64 + "\n")
            errors, _, _ = prebuilt_submission([sub], CONFIG, tmp / "prebuilt")
            self.assertIn("not built from this submission's files", errors["04_reduction"])
            (here / "student-files.sha256").write_text(student_files_digest(sub, ["reduction.cuh"]) + "\n")
            (here / "build-error.txt").write_text("reduction.cuh:3: error: expected ';'\n")
            errors, _, _ = prebuilt_submission([sub], CONFIG, tmp / "prebuilt")
            self.assertIn("expected ';'", errors["04_reduction"])


def sandbox_works():
    try:
        sandbox.check_available()
        return True
    except sandbox.SandboxUnavailable:
        return False


class BuildDisk(unittest.TestCase):
    @unittest.skipUnless(sandbox_works(), "bubblewrap cannot start here")
    def test_a_build_that_fills_its_work_folder_is_killed_and_says_the_limit(self):
        """A stand-in for a build (many object files, each far under the per-file
        limit) run as the build cache runs a lab's build: killed past the disk limit
        (here CUDALABS_DISK_LIMIT_GIB=0.01, about 10 MiB), the log names the limit."""
        with tempfile.TemporaryDirectory() as tmp:
            tmp = Path(tmp)
            work = tmp / "builders" / "b0"
            work.mkdir(parents=True)
            cache = grade_class.BuildCache(tmp, "r", "9.0", 1, 1)
            objects = "mkdir -p build && i=0; while [ $i -lt 40 ]; do head -c 1048576 /dev/urandom > build/o$i.o; i=$((i+1)); done; sleep 30"
            saved = os.environ.get(sandbox.DISK_LIMIT_ENV)
            os.environ[sandbox.DISK_LIMIT_ENV] = "0.01"
            try:
                with open(tmp / "log.txt", "w") as log:
                    r = cache.sandboxed("build 04_reduction", ["/bin/sh", "-c", f"cd {work} && {objects}"], 60, log, work)
            finally:
                os.environ.pop(sandbox.DISK_LIMIT_ENV)
                if saved is not None:
                    os.environ[sandbox.DISK_LIMIT_ENV] = saved
            self.assertNotEqual(r.rc, 0)
            self.assertLess(r.seconds, 25, r.output)
            self.assertIn("over the limit of 10737418 bytes", r.output)
            self.assertIn(f"raise it with {sandbox.DISK_LIMIT_ENV}=N", (tmp / "log.txt").read_text())


class BuildOnly(unittest.TestCase):
    def test_no_gpu_reports_compile_errors_and_marks_gpu_steps_not_run(self):
        """grade.py --build-only on a prebuilt submission, with no nvidia-smi on PATH:
        the lab that built is "not run: no GPU", the other a compile error; exit 1."""
        with tempfile.TemporaryDirectory() as tmp:
            tmp = Path(tmp)
            prebuilt = tmp / "prebuilt" / "labs"
            for lab, name in (("01_vector_add", "vector_add.cuh"), ("04_reduction", "reduction.cuh")):
                (tmp / "sub" / lab).mkdir(parents=True)
                (tmp / "sub" / lab / name).write_text(f"// {lab}\n")
                (prebuilt / lab).mkdir(parents=True)
                (prebuilt / lab / "student-files.sha256").write_text(student_files_digest(tmp / "sub" / lab, [name]))
            (tmp / "sub" / "01_vector_add" / "notes.txt").write_text("mine")
            (prebuilt / "01_vector_add" / "01_vector_add").write_text("never run")
            (prebuilt / "04_reduction" / "build-error.txt").write_text("reduction.cuh(3): error: identifier undefined\n")
            env = {"PATH": "/usr/bin:/bin", "HOME": tmp.as_posix()}
            r = subprocess.run([sys.executable, str(ROOT / "tools" / "grade.py"), "--submission", str(tmp / "sub"),
                                "--prebuilt", str(tmp / "prebuilt"), "--out", str(tmp / "out"), "--build-only",
                                "--seed", "1"], capture_output=True, text=True, env=env)
            self.assertEqual(r.returncode, 1, r.stdout + r.stderr)
            res = json.loads((tmp / "out" / "results.json").read_text())
            labs = res["extra_data"]["labs"]
            self.assertEqual(labs["01_vector_add"]["flags"], [NOT_RUN])
            self.assertEqual(labs["04_reduction"]["flags"], ["compile error"])
            self.assertIn("identifier undefined", labs["04_reduction"]["why"])
            not_run = [t for t in res["tests"] if t["name"].startswith("01_vector_add")]
            self.assertTrue(not_run and all(t["score"] == 0 and NOT_RUN in t["output"] for t in not_run))
            summary = (tmp / "out" / "summary.txt").read_text()
            self.assertIn(NOT_RUN, summary)
            self.assertIn("notes.txt", summary)
            (prebuilt / "04_reduction" / "build-error.txt").unlink()
            (prebuilt / "04_reduction" / "04_reduction").write_text("never run")
            r = subprocess.run([sys.executable, str(ROOT / "tools" / "grade.py"), "--submission", str(tmp / "sub"),
                                "--prebuilt", str(tmp / "prebuilt"), "--out", str(tmp / "out2"), "--build-only"],
                               capture_output=True, text=True, env=env)
            self.assertEqual(r.returncode, 0, r.stdout + r.stderr)


if __name__ == "__main__":
    unittest.main()
