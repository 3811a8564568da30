#!/usr/bin/env python3
"""Copies the console transcripts of the recorded H100 run into the lab READMEs.

A README marks where a transcript goes:

    <!-- transcript 05_matmul --lines 1-9,20-31 -->
    ```text
    ...            (written by this tool: never edit by hand)
    ```
    <!-- /transcript -->

The text between the markers becomes a ```text block holding
results/h100/transcripts/LAB.txt: the whole file, or only the given 1-based,
inclusive line ranges, with a "…" line wherever lines were left out. The
transcripts are the console output of the run whose records are
results/h100/records.jsonl, so a README never shows a number typed by hand.
Annotations go outside the markers.

usage: transcripts.py [--check] [--transcripts DIR] [README.md ...]
       (default: every labs/*/README.md)
  --check  change nothing; exit 1 if any README's block differs from its file
Exit codes: 0 up to date (or updated), 1 stale (--check), 2 bad marker or file.
"""
import argparse
import re
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
GAP = "…"
OPEN = re.compile(r"^<!-- transcript (?P<lab>[\w.-]+)(?: --lines (?P<lines>[\d,\- ]+))? -->\s*$")
CLOSE = re.compile(r"^<!-- /transcript -->\s*$")


class MarkerError(Exception):
    pass


def parse_ranges(spec, total):
    """'1-9,20-31' -> [(1, 9), (20, 31)]; checked against the file's length."""
    ranges = []
    for part in spec.replace(" ", "").split(","):
        m = re.fullmatch(r"(\d+)(?:-(\d+))?", part)
        if not m:
            raise MarkerError(f"bad line range {part!r} (want A-B or A)")
        a = int(m.group(1))
        b = int(m.group(2) or a)
        if not 1 <= a <= b <= total:
            raise MarkerError(f"line range {part} is outside 1-{total}")
        if ranges and a <= ranges[-1][1]:
            raise MarkerError(f"line range {part} overlaps or precedes the one before it")
        ranges.append((a, b))
    return ranges


def excerpt(text, spec):
    """The transcript text, or the given line ranges of it with "…" at each cut."""
    lines = text.splitlines()
    if spec is None:
        return "\n".join(lines)
    out = []
    last = 0
    for a, b in parse_ranges(spec, len(lines)):
        if a > last + 1:
            out.append(GAP)
        out.extend(lines[a - 1:b])
        last = b
    if last < len(lines):
        out.append(GAP)
    return "\n".join(out)


def block(lab, spec, transcripts):
    path = transcripts / f"{lab}.txt"
    if not path.is_file():
        raise MarkerError(f"no transcript {path}")
    body = excerpt(path.read_text(encoding="utf-8"), spec)
    return f"```text\n{body}\n```\n"


def render(readme_text, transcripts):
    """The README with every marked block regenerated; raises MarkerError."""
    lines = readme_text.splitlines(keepends=True)
    out = []
    i = 0
    while i < len(lines):
        m = OPEN.match(lines[i])
        if CLOSE.match(lines[i]):
            raise MarkerError(f"line {i + 1}: <!-- /transcript --> without an opening marker")
        out.append(lines[i])
        i += 1
        if not m:
            continue
        start = i
        while i < len(lines) and not CLOSE.match(lines[i]):
            if OPEN.match(lines[i]):
                raise MarkerError(f"line {i + 1}: transcript marker inside another (opened at line {start})")
            i += 1
        if i == len(lines):
            raise MarkerError(f"line {start}: <!-- transcript {m['lab']} --> is never closed")
        try:
            out.append(block(m["lab"], m["lines"], transcripts))
        except MarkerError as e:
            raise MarkerError(f"line {start}: {e}") from None
        out.append(lines[i])
        i += 1
    return "".join(out)


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("readmes", nargs="*", type=Path)
    ap.add_argument("--check", action="store_true", help="exit 1 if a README is stale; change nothing")
    ap.add_argument("--transcripts", type=Path, default=ROOT / "results" / "h100" / "transcripts")
    args = ap.parse_args(argv)
    readmes = args.readmes or sorted(ROOT.glob("labs/*/README.md"))

    stale = []
    for readme in readmes:
        try:
            old = readme.read_text(encoding="utf-8")
            new = render(old, args.transcripts)
        except (OSError, MarkerError) as e:
            print(f"transcripts: {readme}: {e}", file=sys.stderr)
            return 2
        if new == old:
            continue
        stale.append(readme)
        if args.check:
            print(f"transcripts: {readme}: stale (run tools/transcripts.py to update)", file=sys.stderr)
        else:
            readme.write_text(new, encoding="utf-8")
            print(f"transcripts: updated {readme}")
    return 1 if args.check and stale else 0


if __name__ == "__main__":
    sys.exit(main())
