"""The counter-free path end to end, for one variant of one lab: the
experiments (experiments.py) on the GPU, the binary (binary.py), the
diagnosis (nocounters.py). Everything it measured is kept as evidence, and
`rediagnose` rebuilds the diagnosis from that evidence alone, without a GPU:
a change to a threshold is checked against recorded runs."""
import time

from . import binary, experiments as ex, nocounters as nc

L2_BYTES = 50 * 2 ** 20   # H100 / H200 L2: 50 MB


def arch_of(record):
    cc = str(record.get("cc") or "")
    return "sm_" + cc.replace(".", "") if cc else None


def diagnose_evidence(ev, references=()):
    """The diagnosis from evidence: records of the ladder, of the cold L2 run
    and of the sweep, and the kernel read from the binary."""
    records = ev["records"]
    pts = ex.points(records)
    if not pts:
        raise ValueError("the lab wrote no timed record of the variant")
    main = next(r for r in records if ex.Point.of(r).size == pts[0].size)
    l2 = None
    if ev.get("l2_cold"):
        cold = ex.points(ev["l2_cold"])
        warm = [p for p in pts if p.size == cold[0].size] if cold else []
        if warm:
            l2 = ex.L2Test(cold[0].size, cold[0].bytes, warm[0].ms, cold[0].ms)
    sweep = ex.sweep_of(ev.get("sweep_records") or [])
    kernel = binary.kernel_from_json(ev["kernel"]) if ev.get("kernel") else None
    bandwidth = ex.copy_bandwidth(main, references)
    return nc.diagnose(main, bandwidth, ex.scaling(pts), l2, sweep, kernel)


def climb(program, variant, args, extra, multiples=None, log=print):
    """The size ladder's records and the extra flags it ran with. Raises experiments.LabFailed when the lab
    fails at the size as given, or fails otherwise than by refusing its arguments (exit 2)."""
    ladder, rungs = ex.ladder_args(list(args), multiples=multiples)
    log(f"counter-free: the lab at {rungs} sizes: {' '.join(ladder)}")
    try:
        return ex.run_lab(program, variant, ladder, extra)[0], list(extra)
    except ex.LabFailed as e:
        if rungs == 1:
            raise
        first = e
    # A size the arguments leave at a default list (lab 17's --dim 64,128) does not zip with the ladder's
    # lists. Run the size as given once, pin what varies among its records at the first record's value,
    # and climb again with the pins on every run.
    given = ex.run_lab(program, variant, list(args), extra)[0]
    pins = ex.varying_sizes(given)
    if pins:
        extra = list(extra) + pins
        log(f"counter-free: sizes pinned at the first record's: {' '.join(pins)}")
    elif first.code != 2:
        raise first
    # A rung the lab still refuses (exit 2: a size it does not take, which no declared multiple said) costs
    # that rung, not the diagnosis: the ladder loses its smallest rung until the lab takes it, down to the
    # size as given alone.
    for count in range(rungs if pins else rungs - 1, 1, -1):
        ladder, _ = ex.ladder_args(list(args), count - 1, multiples)
        try:
            return ex.run_lab(program, variant, ladder, extra)[0], extra
        except ex.LabFailed as e:
            if e.code != 2:
                raise
            log(f"counter-free: the lab refused {' '.join(ladder)}: its smallest size is dropped")
    return [r for r in given if r.get("size") == given[0].get("size")], extra


def counter_free(program, variant, args, kernel_regex, sweep=None, extra=(), references=(), cuobjdump=None,
                 log=print, multiples=None):
    """Runs the experiments and reads the binary. Returns (Diagnosis, evidence,
    notes). Raises experiments.LabFailed when the lab fails. MULTIPLES: what the
    lab requires its sizes to be multiples of (experiments.size_multiples)."""
    start = time.time()
    notes = []
    ev = {"args": list(args), "extra": list(extra)}
    ev["records"], extra = climb(program, variant, args, extra, multiples, log)
    ev["extra"] = list(extra)
    pts = ex.points(ev["records"])
    if not pts:
        raise ex.LabFailed(3, f"{program} wrote no timed record of {variant}")
    rung = ex.l2_rung(pts, L2_BYTES)
    if rung:
        cold_args = ex.args_for_size(list(args), rung.size)
        log(f"counter-free: L2 against DRAM at {rung.bytes / 1e6:.3g} MB: {' '.join(cold_args)} --flush-l2")
        ev["l2_cold"], _ = ex.run_lab(program, variant, cold_args, list(extra) + ["--flush-l2"])
    else:
        notes.append("no rung of the ladder fits L2 and takes 8 us or more: no L2 test")
    if sweep:
        log(f"counter-free: launch shapes --sweep {sweep}")
        try:
            ev["sweep_records"], _ = ex.run_lab(program, variant, list(args), list(extra) + ["--sweep", sweep])
        except ex.LabFailed as e:
            notes.append(f"the sweep failed: {str(e).splitlines()[0]}")
    main = next(r for r in ev["records"] if ex.Point.of(r).size == pts[0].size)
    try:
        kernels = binary.read_binary(program, kernel_regex, arch_of(main), cuobjdump)
        kernel = binary.matching(kernels, main)
        if kernel:
            ev["kernel"] = kernel.to_json()
            if len(kernels) > 1:
                notes.append(f"{len(kernels)} kernels match regex {kernel_regex}; the one with the record's "
                             f"registers and shared memory: {kernel.demangled}")
        else:
            notes.append(f"no kernel in the binary matches regex {kernel_regex}: name it with --kernel")
    except binary.ToolMissing as e:
        notes.append(str(e) + ": the diagnosis goes without the binary")
    except RuntimeError as e:
        notes.append(f"cuobjdump could not read {program}: {e}")
    ev["seconds"] = round(time.time() - start, 1)
    return diagnose_evidence(ev, references), ev, notes


def report(title, diagnosis, notes=(), seconds=None):
    lines = [f"{title}: counter-free diagnosis{f' ({seconds:.0f} s)' if seconds is not None else ''}"]
    for i, f in enumerate(diagnosis.findings, 1):
        lines.append(f"  {i}. {f.text}" if f.kind in nc.LIMITERS else f"  {i}. [{f.confidence}] {f.text}")
    lines += [f"  note: {n}" for n in notes]
    return "\n".join(lines)
