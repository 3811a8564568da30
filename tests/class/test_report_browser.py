#!/usr/bin/env python3
"""The class report (tools/grade_class.py's report.html) opened in a real browser.

A small class's grader outputs are written here (results.json with the
grader's extra_data, and SYNTHETIC records of tests/grading/synthetic_records.py
for the roofline: made-up numbers, never results), gathered with
tools/grade_class.py --gather, and report.html is screenshot by headless
Chromium (Debian's chromium, installed by tools/ensure_deps.sh browser) and read
by tesseract-ocr. Passes when the screenshot shows the class table: its heading
and the students' names. The control: the same report with the table cut out
must not show the names, so the check cannot pass on an empty page.
Exit 77 (skip) only where Chromium or tesseract cannot be installed.
"""
import json
import os
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
import synthetic_records  # tests/grading/ (PYTHONPATH: tests/class/meson.build)

NAMES = ["Lovelace", "Hopper", "Dijkstra", "Liskov"]


def fake_class(out):
    """Four students graded on labs 02 and 04, as grade_student leaves them."""
    students = []
    records = [r for r in synthetic_records.records() if r["lab"] in ("02_timed_vector_add", "04_reduction")]
    for n, last in enumerate(NAMES):
        sid = f"s{n}"
        students.append({"id": sid, "name": f"{['Ada', 'Grace', 'Edsger', 'Barbara'][n]} {last}",
                         "source": f"submission_{n}", "labs": ["02_timed_vector_add", "04_reduction"], "extras": []})
        g = out / "students" / sid / "grade"
        g.mkdir(parents=True)
        labs = {"02_timed_vector_add": {"status": "graded", "correct": True, "correctness": 6, "performance": 4 - n,
                                        "max_score": 10, "flags": ["throttled"] if n == 1 else [], "why": ""},
                "04_reduction": {"status": "graded" if n != 2 else "does not build", "correct": n != 2,
                                 "correctness": 6 if n != 2 else 0, "performance": 2 if n != 2 else 0, "max_score": 10,
                                 "flags": ["compile error"] if n == 2 else [], "why": ""}}
        (g / "results.json").write_text(json.dumps({"score": 0, "tests": [], "extra_data": {"labs": labs}}))
        scaled = [dict(r, gflops=r["gflops"] * (1 - 0.1 * n)) for r in records]
        (g / "records.jsonl").write_text("".join(json.dumps(r) + "\n" for r in scaled))
        (out / "students" / sid / "status.json").write_text(json.dumps({"student": sid, "rc": 0, "error": "",
                                                                        "timed_out": False, "seconds": 1}))
    plan = {"out": str(out), "seed": 1, "labs": ["02_timed_vector_add", "04_reduction"], "arch": "9.0",
            "no_gpu": False, "revision": "test", "started": "test", "students": students}
    (out / "plan.json").write_text(json.dumps(plan))


def screenshot_text(html, png):
    """What tesseract reads on Chromium's screenshot of the page."""
    cmd = ["chromium", "--headless", "--disable-gpu", "--disable-dev-shm-usage", "--hide-scrollbars",
           "--window-size=1200,1000", f"--screenshot={png}", html.as_uri()]
    if os.geteuid() == 0:
        cmd.insert(1, "--no-sandbox")  # Chromium refuses to run as root with its sandbox
    r = subprocess.run(cmd, capture_output=True, text=True, timeout=180)
    if not png.is_file():
        raise RuntimeError(f"chromium wrote no screenshot (exit {r.returncode}): {r.stderr[-1500:]}")
    return subprocess.run(["tesseract", str(png), "-"], capture_output=True, text=True, timeout=120).stdout


def main():
    r = subprocess.run(["sh", str(ROOT / "tools" / "ensure_deps.sh"), "browser"], capture_output=True, text=True)
    if r.returncode != 0 or not shutil.which("chromium") or not shutil.which("tesseract"):
        print(f"SKIP: Chromium or tesseract cannot be installed here: {(r.stdout + r.stderr).strip()}")
        return 77
    with tempfile.TemporaryDirectory(prefix="cudalabs-report-") as tmp:
        out = Path(tmp) / "class"
        fake_class(out)
        r = subprocess.run([sys.executable, str(ROOT / "tools" / "grade_class.py"), "--gather", str(out)],
                           capture_output=True, text=True)
        print(r.stdout + r.stderr)
        report = out / "report.html"
        html = report.read_text()
        if r.returncode != 0 or '<table id="class">' not in html:
            print("FAIL: grade_class.py --gather wrote no class table")
            return 1
        if "http://" in html.replace('xmlns="http://www.w3.org/2000/svg"', "") or "<script" in html:
            print("FAIL: the report must be self-contained (no network, no script)")
            return 1
        if html.count("<svg") < 2 + len(NAMES):
            print("FAIL: expected a histogram per lab and a roofline per student")
            return 1
        text = screenshot_text(report, Path(tmp) / "report.png")
        seen = [n for n in NAMES if n in text]
        print(f"OCR of the screenshot found: {seen}; 'Class table': {'Class table' in text}")
        start, end = html.index('<table id="class">'), html.index("</table>", html.index('<table id="class">')) + 8
        control = Path(tmp) / "no-table.html"
        # Without the table (and the rooflines, which also name the students): no names.
        cut = html[:start] + html[end:]
        cut = cut[:cut.index("<h2>Best kernels")] + "</body></html>"
        control.write_text(cut)
        control_text = screenshot_text(control, Path(tmp) / "no-table.png")
        leaked = [n for n in NAMES if n in control_text]
        if len(seen) < 3 or "Class table" not in text:
            print(f"FAIL: the screenshot does not show the class table. OCR text:\n{text}")
            return 1
        if leaked:
            print(f"FAIL: the control without the table still shows {leaked}: the check proves nothing")
            return 1
        print("ok: Chromium shows the class table (students' names read from the screenshot); without it, none")
        return 0


if __name__ == "__main__":
    sys.exit(main())
