#!/usr/bin/env python3
"""CPU test of tools/transcripts.py: every lab README's transcript block matches
results/h100/transcripts/LAB.txt (run `python3 tools/transcripts.py` to update
a stale one), and the tool's cutting, stale detection and bad markers behave."""
import subprocess
import sys
import tempfile
import unittest
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
TOOL = ROOT / "tools" / "transcripts.py"
import transcripts  # tools/transcripts.py (PYTHONPATH: tests/meson.build)


def run(*args):
    return subprocess.run([sys.executable, str(TOOL), *map(str, args)], capture_output=True, text=True)


class TheReadmes(unittest.TestCase):
    def test_every_transcript_block_is_current(self):
        readmes = sorted(ROOT.glob("labs/*/README.md"))
        self.assertTrue(readmes)
        r = run("--check", *readmes)
        self.assertEqual(r.returncode, 0, r.stderr + "\nrun: python3 tools/transcripts.py")

    def test_labs_01_to_18_show_a_run(self):
        for n in range(1, 19):
            readme = next(ROOT.glob(f"labs/{n:02d}_*/README.md"))
            self.assertIn("<!-- transcript ", readme.read_text(encoding="utf-8"), readme)


class TheTool(unittest.TestCase):
    def setUp(self):
        self.tmp = Path(tempfile.mkdtemp())
        (self.tmp / "t").mkdir()
        (self.tmp / "t" / "lab.txt").write_text("".join(f"line {i}\n" for i in range(1, 11)), encoding="utf-8")

    def readme(self, marker, body="stale\n"):
        p = self.tmp / "README.md"
        p.write_text(f"# x\n\n{marker}\n{body}<!-- /transcript -->\nafter\n", encoding="utf-8")
        return p

    def test_cuts_with_an_ellipsis_at_each_gap(self):
        self.assertEqual(transcripts.excerpt("a\nb\nc\nd\ne\n", "1-2,4"), "a\nb\n…\nd\n…")
        self.assertEqual(transcripts.excerpt("a\nb\n", None), "a\nb")

    def test_check_finds_stale_then_update_fixes_it(self):
        p = self.readme("<!-- transcript lab --lines 2-3 -->")
        t = self.tmp / "t"
        self.assertEqual(run("--check", "--transcripts", t, p).returncode, 1)
        self.assertIn("stale", p.read_text(encoding="utf-8"))  # --check changes nothing
        self.assertEqual(run("--transcripts", t, p).returncode, 0)
        self.assertEqual(p.read_text(encoding="utf-8"),
                         "# x\n\n<!-- transcript lab --lines 2-3 -->\n```text\n…\nline 2\nline 3\n…\n```\n"
                         "<!-- /transcript -->\nafter\n")
        self.assertEqual(run("--check", "--transcripts", t, p).returncode, 0)

    def test_bad_markers_exit_2(self):
        t = self.tmp / "t"
        for marker in ["<!-- transcript lab --lines 5-3 -->", "<!-- transcript lab --lines 1-11 -->",
                       "<!-- transcript no_such_lab -->"]:
            self.assertEqual(run("--check", "--transcripts", t, self.readme(marker)).returncode, 2, marker)
        p = self.tmp / "README.md"
        p.write_text("<!-- transcript lab -->\nnever closed\n", encoding="utf-8")
        self.assertEqual(run("--check", "--transcripts", t, p).returncode, 2)


if __name__ == "__main__":
    unittest.main()
