"""The comparison of the two paths over a table of kernels
(tools/profiling/kernels.toml): per kernel the main limiter Nsight Compute
names and the one the counter-free diagnosis names, whether they agree, and
whether the counter-free path contradicted the counters with "measured"
confidence (it must never). Written as comparison.json (every row, with the
ncu version, both diagnoses and the times) and comparison.md (the table)."""
import json
import re
import tomllib
from pathlib import Path

from . import nocounters, run as profiling_run

VERDICTS = {
    "agree": "they agree",
    "differ": "they differ (the counter-free one said 'likely': the counters decide)",
    "contradicts": "they contradict each other although the counter-free diagnosis said 'measured'",
    "no-counters": "no Nsight Compute diagnosis to compare with",
    "no-diagnosis": "no counter-free diagnosis",
}
TARGET_AGREEMENT = 0.8
TARGET_SECONDS = 60
# Kept from Nsight Compute's metrics besides the ones the diagnosis reads: the
# kernel's ID and compute capability and its instruction count.
KEPT_ALWAYS = ("ID", "CC", "inst_executed")


def load_table(path):
    """[[kernel]] entries: lab, variant, args (the lab's size flags), and
    optionally kernel (a regex), sweep (the lab's --sweep), expect (the class
    the kernel was picked for), why."""
    try:
        data = tomllib.loads(Path(path).read_text())
    except tomllib.TOMLDecodeError as e:
        raise ValueError(f"{path}: not valid TOML: {e}") from e
    entries = data.get("kernel")
    if not entries:
        raise ValueError(f"{path}: no [[kernel]] entries")
    for i, e in enumerate(entries, 1):
        for k in ("lab", "variant", "args"):
            if not isinstance(e.get(k), str) or not e[k]:
                raise ValueError(f"{path}: kernel {i} needs '{k}' (a string), e.g. lab = \"02\", variant = "
                                 "\"float4\", args = \"--size 2^26\"")
    return entries


def key(entry):
    name = entry.get("name") or f"{entry['lab']}-{entry['variant']}-{entry['args']}"
    return re.sub(r"[^A-Za-z0-9_.^-]+", "_", name).strip("_")


def verdict(ncu_limiter, limiter, confidence):
    if not ncu_limiter or ncu_limiter == "unknown":
        return "no-counters"
    if not limiter:
        return "no-diagnosis"
    if limiter == ncu_limiter:
        return "agree"
    return "contradicts" if confidence == "measured" else "differ"


def row_verdict(row):
    cf = row.get("counter_free") or {}
    ncu = row.get("ncu") or {}
    return verdict(ncu.get("limiter") if ncu.get("status") == "ok" else None, cf.get("limiter"), cf.get("confidence"))


def summary(rows):
    verdicts = [row_verdict(r) for r in rows]
    compared = [v for v in verdicts if v in ("agree", "differ", "contradicts")]
    agree = verdicts.count("agree")
    seconds = [r["seconds"] for r in rows if r.get("seconds") is not None]
    versions = sorted({(r.get("ncu") or {}).get("version") for r in rows if r.get("ncu")} - {None})
    lines = [f"{len(rows)} kernels; {len(compared)} with both diagnoses"]
    if compared:
        share = agree / len(compared)
        lines.append(f"same main limiter: {agree} of {len(compared)} ({100 * share:.0f}%; the aim is at least "
                     f"{100 * TARGET_AGREEMENT:.0f}%: {'met' if share >= TARGET_AGREEMENT else 'NOT met'})")
        lines.append(f"contradictions with 'measured' confidence: {verdicts.count('contradicts')} (the aim is 0)")
    if seconds:
        lines.append(f"counter-free path: at most {max(seconds):.0f} s per kernel (the aim is at most "
                     f"{TARGET_SECONDS} s: {'met' if max(seconds) <= TARGET_SECONDS else 'NOT met'})")
    refused = [r["key"] for r in rows if (r.get("ncu") or {}).get("status") in ("refused", "failed")]
    if refused:
        lines.append(f"Nsight Compute reports refused or failed: {', '.join(refused)}")
    if versions:
        lines.append(f"Nsight Compute {', '.join(versions)}")
    return "\n".join(lines)


def markdown(rows):
    head = ["| kernel | lab, variant, size | Nsight Compute | counter-free | confidence | verdict | counter-free s |",
            "|---|---|---|---|---|---|---|"]
    body = []
    for r in rows:
        cf = r.get("counter_free") or {}
        ncu = r.get("ncu") or {}
        ncu_text = ncu.get("limiter") if ncu.get("status") == "ok" else (ncu.get("status") or "not run")
        tags = [t for f in cf.get("findings", [])[:1] for t in f.get("tags", [])]
        cf_text = (cf.get("limiter") or "failed") + (f" ({', '.join(tags)})" if tags else "")
        body.append(f"| {r['key']} | {r['lab']} `{r['variant']}` `{r['args']}` | {ncu_text} | {cf_text} | "
                    f"{cf.get('confidence', '')} | {row_verdict(r)} | {r.get('seconds', '')} |")
    return "\n".join(head + body)


def kept_metrics(metrics, reads):
    """Of one kernel's Nsight Compute metrics (1100+ with the sections
    profile.py asks for: 1.9 MB a table of 21) those a comparison keeps: the
    ones the diagnosis reads (READS), KEPT_ALWAYS, every stall reason and
    issue share (a name with 'issue'), and the pipe shares and the L1 pipe
    breakdown (a name with 'pipe' and a percentage). Enough to rebuild the
    table (--recompare) after a rule changes and to see why a kernel is bound;
    the full report stays in the .ncu-rep."""
    reads = set(reads)
    return {k: v for k, v in metrics.items()
            if k in reads or k in KEPT_ALWAYS or "issue" in k or ("pipe" in k and "pct" in k)}


def write(rows, out, reads=None):
    """comparison.json and comparison.md in OUT; given READS (the metric names
    the diagnosis reads), each row's Nsight Compute metrics are trimmed to
    kept_metrics first."""
    if reads is not None:
        for r in rows:
            ncu = r.get("ncu") or {}
            if ncu.get("metrics"):
                ncu["metrics"] = kept_metrics(ncu["metrics"], reads)
    text = summary(rows)
    Path(out, "comparison.json").write_text(json.dumps({"summary": text, "kernels": rows}, indent=1) + "\n")
    Path(out, "comparison.md").write_text("# Counter-free diagnosis against Nsight Compute\n\n" + markdown(rows) +
                                          "\n\n" + "\n".join(f"- {line}" for line in text.splitlines()) + "\n")
    return text


def comparison_rows(folder):
    """The rows of every comparison*.json in FOLDER (comparison.json first,
    then comparison-2.json, ... in name order: runs of parts of a table kept
    side by side), one row per kernel key; where two files hold the same key
    the later file's row wins. Each row carries its folder (where its
    evidence is) under "_folder", for recompare, which takes it off."""
    folder = Path(folder)
    paths = sorted(folder.glob("comparison*.json"), key=lambda p: (p.name != "comparison.json", p.name))
    if not paths:
        raise ValueError(f"no comparison*.json in {folder}: --recompare needs a folder written by --compare-table")
    rows = {}
    for path in paths:
        try:
            kernels = json.loads(path.read_text())["kernels"]
        except (ValueError, KeyError, TypeError) as e:
            raise ValueError(f"{path}: not a comparison written by --compare-table ({e})") from e
        for r in kernels:
            rows[r["key"]] = {**r, "_folder": folder}
    return list(rows.values())


def recompare(folders, references=(), out=None, ncu_diagnose=None, reads=None):
    """The comparison rebuilt from the comparison*.json and *.evidence.json
    of FOLDERS (one folder or several, merged in order: a later folder's row
    of a key wins) with the current rules: the counter-free diagnosis from
    each kernel's evidence, and, given ncu_diagnose (Nsight Compute's metrics
    -> the kinds of its findings), Nsight Compute's main limiter from the
    metrics its row kept. Writes comparison.json and comparison.md to OUT
    (default the one folder, where the merged table replaces comparison.json;
    given READS, with the metrics trimmed as write does) and returns the
    summary."""
    folders = [Path(f) for f in ([folders] if isinstance(folders, (str, Path)) else folders)]
    if not out and len(folders) != 1:
        raise ValueError(f"{len(folders)} folders to recompare: name where the merged table goes with --out DIR")
    merged = {}
    for folder in folders:
        merged.update((r["key"], r) for r in comparison_rows(folder))
    rows = []
    for r in merged.values():
        ev_path = r.pop("_folder") / f"{r['key']}.evidence.json"
        if ev_path.is_file():
            r["counter_free"] = profiling_run.diagnose_evidence(json.loads(ev_path.read_text()), references).to_json()
        ncu = r.get("ncu") or {}
        if ncu_diagnose and ncu.get("status") == "ok" and ncu.get("metrics"):
            ncu["kinds"] = sorted(ncu_diagnose(ncu["metrics"]))
            ncu["limiter"] = nocounters.main_limiter_of_ncu(set(ncu["kinds"]))
        rows.append(r)
    out = Path(out) if out else folders[0]
    out.mkdir(parents=True, exist_ok=True)
    return write(rows, out, reads)
