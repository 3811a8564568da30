"""The one reader of records files: the JSON lines a lab program writes with
--json (one record per line), results/<gpu>/records.jsonl among them.

Every tool reads records through here and keeps its own filtering.
read_records is strict (a line that is not JSON is an error naming the file and
line); read_new_records reads what a program appended while the grader watched,
where a torn last line is the program's crash, which its exit code reports."""
from __future__ import annotations

import json


def read_records(path):
    """The records of a .jsonl file, in order; blank lines skipped. A line that is
    not JSON raises ValueError naming the file and the line."""
    records = []
    with open(path) as f:
        for number, line in enumerate(f, 1):
            line = line.strip()
            if not line:
                continue
            try:
                records.append(json.loads(line))
            except json.JSONDecodeError as e:
                raise ValueError(f"{path}:{number}: not a JSON record ({e.msg})") from None
    return records


def read_new_records(path, start):
    """Records appended to `path` past byte `start`, and the new end."""
    if not path.exists():
        return [], start
    with open(path) as f:
        f.seek(start)
        text = f.read()
        end = f.tell()
    records = []
    for line in text.splitlines():
        if line.strip():
            try:
                records.append(json.loads(line))
            except json.JSONDecodeError:
                pass  # a program killed mid-line; its exit code already says so
    return records, end
