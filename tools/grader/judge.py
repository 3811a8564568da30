"""The verdict of a graded run: the judge's records, the graded program's times.

A graded program holds a student's code, so what it writes is evidence, never a
verdict (docs/instructor-guide.md, "What is trusted"). Each of its runs leaves,
with --evidence DIR, every output its checks compared; the judge, the course's
own build of the lab run with the same arguments and --judge DIR, compares
those outputs with its own references (common/include/cudalabs/evidence.hpp)
and writes its own records. merge() makes the records the grader scores:

  - one per judge record, in the judge's order (the judge decides which
    checks there are: a record the graded program never wrote fails);
  - passed only when the judge passed it AND the graded program's own record of
    it passed (its trace of the GPU work, a starter kit's "not implemented yet"
    and its own checks can only take points away);
  - the times (median_ms, the baseline's, the clocks) from the graded program,
    where timing must happen, of a record whose timing the judge judged; rates recomputed from those times and the
    judge's declared work (bytes, FLOPs), never taken from the graded record.
"""
from __future__ import annotations

import json

# What the graded program measured: kept from its record (timing stays in the
# program; a submission can forge these only by corrupting the harness's memory).
MEASURED = ("timed", "median_ms", "min_ms", "mean_ms", "stddev_ms", "ci95_ms", "runs", "stop", "no_gap_ms",
            "no_gap_batch", "unjoined_ms", "ceiling", "ceiling_value", "baseline", "clocks", "throttled",
            "throttle_why", "power_capped", "gpu_work", "resources", "implausible", "implausible_why", "suspect")

# The JSON type of each measured field as the harness writes it (common/src/report.cpp;
# num() writes a non-finite number as null). Another is the harness's memory
# corrupted, and is not taken: a NaN time passed every comparison of the score
# (min(1.0, nan) is 1.0: full performance points), a string stopped the grader.
NUMBER, TEXT, FLAG, OBJECT = "a finite number", "a string", "true or false", "an object"
FIELD_TYPES = {"timed": FLAG, "median_ms": NUMBER, "min_ms": NUMBER, "mean_ms": NUMBER, "stddev_ms": NUMBER,
               "ci95_ms": NUMBER, "runs": NUMBER, "stop": TEXT, "no_gap_ms": NUMBER, "no_gap_batch": NUMBER,
               "unjoined_ms": NUMBER, "ceiling": TEXT, "ceiling_value": NUMBER, "baseline": TEXT, "clocks": OBJECT, "throttled": FLAG, "throttle_why": TEXT,
               "power_capped": FLAG, "gpu_work": OBJECT, "resources": OBJECT, "implausible": FLAG,
               "implausible_why": TEXT, "suspect": FLAG}


def as_written(field, value):
    """Whether a measured field's value is of the type the harness writes there."""
    kind = FIELD_TYPES[field]
    if value is None:
        return kind == NUMBER  # a non-finite number, written as null
    if kind == NUMBER:
        return type(value) in (int, float) and abs(value) < 2.0**64  # false for NaN and the infinities
    return isinstance(value, {TEXT: str, FLAG: bool, OBJECT: dict}[kind])


def malformed(record):
    """The first measured field of a graded record that the harness would not have
    written, as "field: value", or ""."""
    for field in MEASURED:
        if field in record and not as_written(field, record[field]):
            return f"{field}: {json.dumps(record[field])[:60]}"
    return ""


def key(record: dict) -> tuple:
    """Which check a record is: its variant, its size and the lab's flags."""
    return (record.get("variant"), json.dumps(record.get("size", {}), sort_keys=True),
            json.dumps(record.get("flags", {}), sort_keys=True))


def merge(graded: list[dict], judged: list[dict]) -> list[dict]:
    """The records to score: see the module's docstring."""
    by_key: dict[tuple, list[dict]] = {}
    for g in graded:
        by_key.setdefault(key(g), []).append(g)
    taken: dict[tuple, int] = {}
    merged = []
    for j in judged:
        k = key(j)
        index = taken.get(k, 0)
        taken[k] = index + 1
        candidates = by_key.get(k, [])
        g = candidates[index] if index < len(candidates) else None
        m = dict(j)
        m["judged"] = True
        m.pop("judge", None)
        if g is None:
            m["passed"] = False
            m["failure"] = ("the graded program wrote no record of this check (it stopped or crashed before it); "
                            + (j.get("failure") or "the judge found no output for it"))
            merged.append(m)
            continue
        bad = malformed(g)
        if bad:
            m["passed"] = False
            m["failure"] = f"the graded program's record is not as its harness writes it ({bad}): judged as failed"
            merged.append(m)
            continue
        for field in MEASURED:
            if field in g:
                m[field] = g[field]
        # Timed only where the judge judged the timing's outputs (a run without
        # --check-only, a record right up to its timing): a record of a checking
        # run that says it was timed would be scored on times of outputs nobody
        # judged, at a drawn size that may be larger than the benchmark's.
        if (j.get("checks") or {}).get("after_timing") is None:
            m["timed"] = False
        m["passed"] = bool(j.get("passed")) and bool(g.get("passed"))
        if not g.get("passed"):
            m["failure"] = g.get("failure") or j.get("failure") or "failed its check"
        elif not j.get("passed"):
            m["failure"] = "judged: " + (j.get("failure") or "failed its check")
        merged.append(m)
    named_by_the_judge(merged)
    rate(merged)
    return merged


def size_key(record):
    return json.dumps(record.get("size", {}), sort_keys=True)


def named_by_the_judge(records):
    """A variant named as a record's baseline or ceiling (the graded program's
    word) stays named only if the judge's records call it the lab's library
    baseline at that size (common/src/lab.cpp's rate() names no other): a record
    that named a slower kernel of the lab its baseline was rated against it, and a
    variant named its own ceiling counted as a baseline, which no implausibility
    gate holds."""
    libraries = {(size_key(r), r["variant"]) for r in records if r.get("library_baseline")}
    variants = {r["variant"] for r in records}
    for r in records:
        for field in ("baseline", "ceiling"):
            name = r.get(field)
            if name and (field == "baseline" or name in variants) and (size_key(r), name) not in libraries:
                r[field] = ""


def rate(records: list[dict]) -> None:
    """Rates from the graded program's times and the judge's declared work:
    GB/s, GFLOP/s, % of the measured ceiling, the ratio to the baseline measured
    in the same run; a FLOP/s above the device's peak, or a GB/s above what its
    memory can deliver (both from the judge's record), is implausible whatever
    the graded record says."""
    timed = {(size_key(r), r["variant"]): r for r in records if r.get("timed") and r.get("median_ms")}
    for r in records:
        ms = r.get("median_ms") or 0
        if not r.get("timed") or ms <= 0:
            continue
        bytes_, flops = r.get("bytes") or 0, r.get("flops") or 0
        r["gbps"] = bytes_ / (ms * 1e6) if bytes_ else 0
        r["gflops"] = flops / (ms * 1e6) if flops else 0
        base = timed.get((size_key(r), r.get("baseline")))
        if base is not None and base is not r:
            r["baseline_ms"] = base["median_ms"]
            r["vs_baseline"] = base["median_ms"] / ms
        ceiling = r.get("ceiling")
        if ceiling and ceiling == r["variant"]:
            r["pct_of_ceiling"] = 100.0  # the library baseline is its own ceiling
        elif ceiling and ceiling == r.get("baseline") and base is not None:
            r["pct_of_ceiling"] = 100.0 * r["vs_baseline"]
        elif ceiling and r.get("ceiling_value") and r["gbps"]:
            r["pct_of_ceiling"] = 100.0 * r["gbps"] / r["ceiling_value"]
        peak = r.get("peak_gflops") or 0
        if peak and r["gflops"] > peak:
            r["implausible"] = True
            r["implausible_why"] = (f"{r['gflops']:.0f} GFLOP/s is above the device's {r.get('peak', '')} peak of "
                                    f"{peak:.0f} GFLOP/s")
        # The memory's bound, as common/src/lab.cpp's implausible_reason() draws it:
        # at least bytes - L2 cross the DRAM interface; data that fits twice in L2
        # gets 8x the DRAM peak.
        dram, l2 = r.get("dram_peak_gbps") or 0, r.get("l2_bytes") or 0
        if dram and bytes_:
            bound = dram * bytes_ / (bytes_ - l2) if bytes_ > 2 * l2 else 8 * dram
            if r["gbps"] > bound:
                r["implausible"] = True
                r["implausible_why"] = (f"{r['gbps']:.0f} GB/s is above what the memory can deliver ({bound:.0f} GB/s "
                                        f"for {bytes_ / 1e6:.0f} MB with a {l2 / 2**20:.0f} MB L2; DRAM peak {dram:.0f} GB/s)")


def declared_work(record: dict) -> bool:
    """Whether a timed record says what work it did (bytes or FLOPs): without
    it no plausibility gate can hold its time, so it earns no performance points."""
    return bool(record.get("bytes")) or bool(record.get("flops"))
