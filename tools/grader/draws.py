#!/usr/bin/env python3
"""Drawn correctness runs: sizes and lab flags picked from a declared space, per grading seed.

Why. The grader's fixed runs (--quick, the lab's named edge runs in grading.toml)
are a list a student can read, and a kernel can be right at exactly those sizes
(a dimension that is a multiple of 8, square shapes, the default data type) and
wrong elsewhere. So each lab also declares the space of its legal sizes and flags
(a `draw` table of tools/grading.toml, documented there), and the grader draws
runs from it with its seed: the same seed gives the same runs, a fresh seed new
ones.

How a size is drawn. Each dimension independently, from a mix of kinds of value
that expose tiling bugs (in the range declared for it):
  low         the range's bottom (usually 1: one element, one row)
  prime       a small prime (3, 17, 97, ...): a multiple of no tile
  aligned     k·2^j, j = 3..7: a multiple of 8, 16, ..., 128 (k random: spread
              over the range)
  misaligned  k·2^j - 1, k·2^j + 1 (j = 1..7), or k·2^j + 2^(j-1) (j = 2, 3):
              never a multiple of 8
  near_block  2^p - 1, 2^p, 2^p + 1 for 2^p = 32 (a warp), 64, 128, 256,
              1024 (block sizes), ... up to the range's top
  uniform     any value of the range
  top         the range's top
Every run of two or more points has, in each dimension, one aligned and one
misaligned value (a kernel right only at multiples of 8 fails every drawn run);
its other points cycle through the other kinds. Points are zipped into one run's
comma lists (one program start, several sizes); lab flags (--dtype, --inputs,
--causal ...) hold for a whole run, so each drawn run has its own flag values,
every listed value used once before any repeats.

Limits (`limits = ["m*n*k <= 2^27"]`) keep a drawn run cheap (the CPU reference)
or legal (a product the lab refuses). A point over a limit is drawn again with the
same kinds of value; after 20 tries the ranges' tops are halved every 10 tries, so
the draw always ends (validate() checks that the smallest point fits).

Stdlib only. Run it to see what a seed draws:
    python3 tools/grader/draws.py --seed 7 --labs 05,16
"""
import argparse
import itertools
import random
import re
import shlex
import sys
from dataclasses import dataclass
from pathlib import Path

DEFAULT_POINTS = 3          # size points per drawn run when the table does not say
MAX_POINTS = 64             # more than this in one run is a typo, not a plan
MAX_RUNS = 64
KINDS = ("low", "prime", "aligned", "misaligned", "near_block", "uniform", "top")
OTHER_KINDS = tuple(k for k in KINDS if k not in ("aligned", "misaligned"))
SMALL_PRIMES = (2, 3, 5, 7, 11, 13, 17, 19, 23, 29, 31, 37, 41, 43, 47, 53, 59, 61, 67, 71, 73, 79, 83, 89, 97,
                101, 103, 107, 109, 113, 127, 131, 251, 257, 509, 521, 1021, 1031, 4093, 4099)
TRIES_FULL_RANGE = 20       # redraws of a point over a limit before the ranges shrink
TRIES_PER_HALVING = 10      # then the tops are halved every this many redraws
MAX_TRIES = TRIES_FULL_RANGE + TRIES_PER_HALVING * 64  # 64 halvings reach the bottom of any int64 range
TABLE_KEYS = ("points", "runs", "limits", "flags")  # every other key of a draw table is a size dimension
NAME = re.compile(r"[a-z][a-z0-9_-]*")
RANGE = re.compile(r"^\s*([^.\s]+)\s*\.\.\s*([^.\s]+)\s*$")


# ---- the declarations -----------------------------------------------------------

@dataclass(frozen=True)
class Range:
    """Whole numbers lo..hi (both included) that are multiples of `step`."""
    lo: int
    hi: int
    step: int = 1

    @property
    def units(self):  # the range in units of `step`: value = unit * step
        return -(-self.lo // self.step), self.hi // self.step


@dataclass(frozen=True)
class Space:
    """A dimension's or an integer flag's values: the union of its items (ints, Ranges)."""
    items: tuple

    def smallest(self):
        return min(i if isinstance(i, int) else i.units[0] * i.step for i in self.items)

    def largest(self):
        return max(i if isinstance(i, int) else i.units[1] * i.step for i in self.items)

    def contains(self, v):
        return any(v == i if isinstance(i, int) else (i.lo <= v <= i.hi and v % i.step == 0) for i in self.items)

    def discrete(self):
        return all(isinstance(i, int) for i in self.items)

    def has_multiple_and_non_multiple(self, of):
        """Whether both a multiple of `of` and a non-multiple are in the space (to test the mix)."""
        values = [i for i in self.items if isinstance(i, int)]
        multiple = any(v % of == 0 for v in values)
        other = any(v % of for v in values)
        for r in (i for i in self.items if isinstance(i, Range)):
            a, b = r.units
            multiple = multiple or any((u * r.step) % of == 0 for u in range(a, min(b, a + of) + 1))
            other = other or any((u * r.step) % of for u in range(a, min(b, a + of) + 1))
        return multiple and other


@dataclass(frozen=True)
class Limit:
    """names[0] * names[1] * ... * factor <= bound."""
    text: str
    names: tuple
    factor: int
    bound: int

    def holds(self, values):
        product = self.factor
        for n in self.names:
            product *= values[n]
        return product <= self.bound


@dataclass(frozen=True)
class Flag:
    """A lab flag drawn once per run. kind: text (values), toggle (values are bools),
    integer (space), pattern (a text flag made of `points` drawn shapes, e.g. 3x5x7)."""
    name: str
    kind: str
    values: tuple = ()
    space: Space = None
    template: str = ""
    fields: dict = None
    limits: tuple = ()

    def listed(self):
        """Whether the flag's values are a plain list (runs = "all" takes every one of them)."""
        return self.kind in ("text", "toggle") or (self.kind == "integer" and self.space.discrete())


@dataclass(frozen=True)
class Declaration:
    points: int
    runs: object  # an int, "all", or None (the default)
    sizes: dict   # name -> Space, in the table's order
    flags: dict   # name -> Flag, in the table's order
    point_limits: tuple  # limits that name a size (flags may appear in them too)
    flag_limits: tuple   # limits that name only flags


def _bad(where, key, value, why):
    return ValueError(f"{where}: {key} = {value!r}: {why}")


def _number(text):
    """A whole number as the table writes it: 700, 2^22, 4M (2^20 * 4), 64K (2^10 * 64)."""
    text = str(text).strip()
    if m := re.fullmatch(r"2\^(\d+)", text):
        return 1 << int(m.group(1))
    if m := re.fullmatch(r"(\d+)([KM]?)", text):
        return int(m.group(1)) << {"": 0, "K": 10, "M": 20}[m.group(2)]
    raise ValueError(text)


def _is_range_text(value):
    return isinstance(value, str) and RANGE.match(value) is not None


def _range(where, key, value, step=1):
    m = RANGE.match(value) if isinstance(value, str) else None
    try:
        lo, hi = _number(m.group(1)), _number(m.group(2))
    except (AttributeError, ValueError):
        raise _bad(where, key, value, 'a range is "LO..HI" with whole numbers (700, 2^22, 4M), e.g. "1..700"') from None
    if lo > hi:
        raise _bad(where, key, value, f"the range is empty ({lo} > {hi}); write it low..high")
    r = Range(lo, hi, step)
    a, b = r.units
    if a > b:
        raise _bad(where, key, value, f"no multiple of {step} lies in {lo}..{hi}; widen the range")
    return r


def _space(where, key, value, zero_ok=False):
    """A size dimension's (or an integer flag's) declared values."""
    lowest = 0 if zero_ok else 1
    example = f'"1..700", [64, 128], [1, "2..64"] or {{ range = "4..2^22", multiple_of = 4 }}'
    if isinstance(value, bool):
        raise _bad(where, key, value, f"a size takes whole numbers, e.g. {example}")
    if isinstance(value, int):
        items = (value,)
    elif isinstance(value, str):
        items = (_range(where, key, value),)
    elif isinstance(value, dict):
        unknown = set(value) - {"range", "multiple_of"}
        step = value.get("multiple_of", 1)
        if unknown or "range" not in value or isinstance(step, bool) or not isinstance(step, int) or step < 1:
            raise _bad(where, key, value, 'a table here is { range = "LO..HI", multiple_of = N } (N >= 1), '
                                          'e.g. { range = "4..2^22", multiple_of = 4 }')
        items = (_range(where, f"{key}.range", value["range"], step),)
    elif isinstance(value, list) and value:
        items = []
        for item in value:
            if isinstance(item, int) and not isinstance(item, bool):
                items.append(item)
            elif _is_range_text(item):
                items.append(_range(where, key, item))
            else:
                raise _bad(where, key, value, f"each item of the list is a whole number or a \"LO..HI\" range, "
                                              f"not {item!r}; e.g. {example}")
        if len(set(items)) != len(items):
            raise _bad(where, key, value, "an item is listed twice; list each value once")
        items = tuple(items)
    else:
        raise _bad(where, key, value, f"give a range, a value or a list of them, e.g. {example}")
    space = Space(items)
    if space.smallest() < lowest:
        raise _bad(where, key, value, f"values start at {lowest} here; raise the bottom of the range")
    return space


def _flag(where, name, value):
    key = f"flags.{name}"
    if not NAME.fullmatch(name):
        raise _bad(where, key, value, "a flag is named as the lab's --help writes it, without the dashes "
                                      "(e.g. kv-splits)")
    if isinstance(value, dict) and "pattern" in value:
        return _pattern_flag(where, name, value)
    if isinstance(value, str) and not _is_range_text(value):
        raise _bad(where, key, value, f'list the values to draw, even one: flags.{name} = ["{value}"]')
    if isinstance(value, list) and value:
        kinds = {"toggle" if isinstance(v, bool) else "text" if isinstance(v, str) and not _is_range_text(v)
                 else "number" for v in value}
        if len(kinds) > 1:
            raise _bad(where, key, value, "the list mixes " + " and ".join(sorted(kinds)) + " values; a flag's values "
                                          'are all text (["fp16", "bf16"]), all toggle states ([false, true]) or '
                                          'all whole numbers and ranges ([0, "1..16"])')
    if isinstance(value, list) and value and all(isinstance(v, bool) for v in value):
        if len(set(value)) != len(value):
            raise _bad(where, key, value, "a toggle is drawn from [false, true]; list each once")
        return Flag(name, "toggle", values=tuple(value))
    if (isinstance(value, list) and value and all(isinstance(v, str) for v in value)
            and not any(_is_range_text(v) for v in value)):
        if any(not v.strip() or v != v.strip() for v in value) or len(set(value)) != len(value):
            raise _bad(where, key, value, "list each text value once, without spaces around it, "
                                          'e.g. ["fp16", "bf16"]')
        return Flag(name, "text", values=tuple(value))
    return Flag(name, "integer", space=_space(where, key, value, zero_ok=True))


def _pattern_flag(where, name, value):
    key = f"flags.{name}"
    template = value["pattern"]
    fields = re.findall(r"\{([a-z][a-z0-9_]*)\}", template) if isinstance(template, str) else []
    if not fields or len(set(fields)) != len(fields) or "," in template:
        raise _bad(where, key, value, 'a pattern names each of its fields once in braces and has no comma, '
                                      'e.g. { pattern = "{m}x{n}x{k}", m = "1..512", n = "1..512", k = "1..512" }')
    unknown = set(value) - {"pattern", "limits"} - set(fields)
    missing = [f for f in fields if f not in value]
    if unknown or missing:
        raise _bad(where, key, value, f"the pattern's fields are {', '.join(fields)}: give a range for each"
                                      + (f" (no field {sorted(unknown)[0]!r})" if unknown else
                                         f" (missing {missing[0]!r})"))
    spaces = {f: _space(where, f"{key}.{f}", value[f]) for f in fields}
    limits = _limits(where, f"{key}.limits", value.get("limits", []), spaces, {})
    for lim in limits:
        if not lim.holds({f: s.smallest() for f, s in spaces.items()}):
            raise _bad(where, f"{key}.limits", lim.text,
                       "even the smallest values break it; loosen it or lower the ranges")
    return Flag(name, "pattern", template=template, fields=spaces, limits=limits)


def _limits(where, key, value, sizes, flags):
    if not isinstance(value, list) or not all(isinstance(v, str) for v in value):
        raise _bad(where, key, value, 'limits are a list of strings, e.g. ["m*n*k <= 2^27"]')
    out = []
    for text in value:
        m = re.fullmatch(r"\s*(.+?)\s*<=\s*(.+?)\s*", text)
        why = None
        names, factor = [], 1
        if not m:
            why = 'write a limit as a product of names and numbers, "<=", a number: "m*n*k <= 2^27"'
        else:
            for part in (p.strip() for p in m.group(1).split("*")):
                if part in sizes or (part in flags and flags[part].kind == "integer"):
                    names.append(part)
                elif part in flags:
                    why = f"{part} is a {flags[part].kind} flag; a limit multiplies sizes and integer flags only"
                else:
                    try:
                        factor *= _number(part)
                    except ValueError:
                        known = ", ".join(list(sizes) + [f for f in flags if flags[f].kind == "integer"])
                        why = f"{part!r} is neither a number nor a size or integer flag of this table ({known})"
                if why:
                    break
            if not why and not names:
                why = "the limit names no size or flag"
            if not why:
                try:
                    bound = _number(m.group(2))
                except ValueError:
                    why = f"the right side, {m.group(2)!r}, must be a whole number (e.g. 2^27 or 134217728)"
        if why:
            raise _bad(where, key, text, why)
        out.append(Limit(text, tuple(names), factor, bound))
    return tuple(out)


def parse(where, table):
    """The Declaration of one lab's draw table; ValueError (key, value, fix) when it is wrong."""
    if not isinstance(table, dict):
        raise _bad(where, "draw", table, 'draw is a table: [labs.NAME.draw] with sizes such as n = "1..2^22"')
    points = table.get("points", DEFAULT_POINTS)
    if isinstance(points, bool) or not isinstance(points, int) or not 1 <= points <= MAX_POINTS:
        raise _bad(where, "points", points, f"size points per run: a whole number from 1 to {MAX_POINTS}, e.g. 3")
    runs = table.get("runs")
    if runs is not None and runs != "all" and (isinstance(runs, bool) or not isinstance(runs, int)
                                               or not 1 <= runs <= MAX_RUNS):
        raise _bad(where, "runs", runs, f'drawn runs: a whole number from 1 to {MAX_RUNS}, or "all" '
                                        "(every combination of the listed flag values)")
    flag_table = table.get("flags", {})
    if not isinstance(flag_table, dict):
        raise _bad(where, "flags", flag_table, 'flags is a table: flags.inputs = ["uniform", "cancel"]')
    sizes = {}
    for key, value in table.items():
        if key in TABLE_KEYS:
            continue
        if not NAME.fullmatch(key):
            raise _bad(where, key, value, "a size is named as the lab's --help writes its flag, without the "
                                          "dashes (m, seq, rows ...)")
        sizes[key] = _space(where, key, value)
    if not sizes:
        raise _bad(where, "draw", table, 'declare the lab\'s sizes, each with its range, e.g. n = "1..2^22" '
                                         "(a size left out takes the lab's default list, which need not zip)")
    flags = {}
    for name, value in flag_table.items():
        if name in sizes:
            raise _bad(where, f"flags.{name}", value, f"{name} is a size of this table too; name it once")
        flags[name] = _flag(where, name, value)
    limits = _limits(where, "limits", table.get("limits", []), sizes, flags)
    point_limits = tuple(lim for lim in limits if any(n in sizes for n in lim.names))
    flag_limits = tuple(lim for lim in limits if lim not in point_limits)
    # The draw retreats towards the smallest values, so those must fit: sizes at
    # their smallest with flags at their largest (the worst a run can draw), and
    # flags at their smallest.
    flag_low = {f: fl.space.smallest() for f, fl in flags.items() if fl.kind == "integer"}
    flag_high = {f: fl.space.largest() for f, fl in flags.items() if fl.kind == "integer"}
    smallest = {n: s.smallest() for n, s in sizes.items()}
    for lim in flag_limits:
        if not lim.holds(flag_low):
            raise _bad(where, "limits", lim.text, "even the flags' smallest values break it; loosen it")
    for lim in point_limits:
        if not lim.holds({**smallest, **flag_high}):
            flagged = [n for n in lim.names if n in flags]
            raise _bad(where, "limits", lim.text, "even the smallest sizes break it"
                       + (f" (with {', '.join(flagged)} at the largest)" if flagged else "")
                       + "; loosen it, or lower the ranges")
    return Declaration(points, runs, sizes, flags, point_limits, flag_limits)


def validate(where, table):
    """Checks one lab's draw table (a dict, as tomllib reads it). Raises ValueError
    "WHERE: KEY = VALUE: what is wrong; the fix", where `where` names the table
    (e.g. "tools/grading.toml [labs.05_matmul.draw]"); returns None when it is good."""
    parse(where, table)


# ---- drawing ---------------------------------------------------------------------

class _Cycle:
    """The items in a shuffled order, reshuffled on each pass: every item comes
    once before any comes twice."""

    def __init__(self, rng, items):
        self.rng, self.items, self.queue = rng, list(items), []

    def next(self):
        if not self.queue:
            self.queue = self.items[:]
            self.rng.shuffle(self.queue)
        return self.queue.pop()


def _value(rng, item, kind, halvings=0):
    """One value of `item` (an int or a Range) of the given kind; `halvings`
    shrinks the range's top (a redraw over a limit)."""
    if isinstance(item, int):
        return item
    a, b = item.units
    b = max(a, b >> halvings)
    return _unit(rng, a, b, kind) * item.step


def _unit(rng, a, b, kind):
    if kind == "low":
        return a
    if kind == "top":
        return b
    if kind == "prime":
        primes = [p for p in SMALL_PRIMES if a <= p <= b]
        return rng.choice(primes) if primes else rng.randint(a, b)
    if kind == "aligned":  # k·2^j, j = 3..7: a multiple of 8 (to 128)
        js = [j for j in range(3, 8) if max(1, -(-a >> j)) <= b >> j]
        if js:
            j = rng.choice(js)
            return rng.randint(max(1, -(-a >> j)), b >> j) << j
        return rng.randint(a, b)
    if kind == "misaligned":  # k·2^j ± 1, or k·2^j + 2^(j-1) (j = 2, 3): never a multiple of 8
        for _ in range(20):
            j = rng.randint(1, 7)
            offset = rng.choice((-1, 1) + ((1 << (j - 1),) if j in (2, 3) else ()))
            kmax = (b - offset) >> j
            if kmax >= 1:
                v = (rng.randint(1, kmax) << j) + offset
                if a <= v <= b:
                    return v
        odd = [v for v in (a, a + 1, b, b - 1) if a <= v <= b and v % 8]
        return rng.choice(odd) if odd else rng.randint(a, b)
    if kind == "near_block":  # around a warp (32) and block sizes (64 ... 1024), then larger powers of two
        powers = [p for p in (1 << e for e in range(5, 63)) if a <= p + 1 and p - 1 <= b]
        if powers:
            return min(b, max(a, rng.choice(powers) + rng.choice((-1, 0, 1))))
        return rng.randint(a, b)
    return rng.randint(a, b)  # uniform


class _DimDrawer:
    """Draws one size dimension's values, run by run: in a single range, each run
    of two or more points has one aligned and one misaligned value, the rest
    cycling through the other kinds; in a union ([1, "2..64"], [64, 128]) the
    items take turns, each range item cycling through every kind."""

    def __init__(self, rng, space):
        self.rng, self.space = rng, space
        self.single_range = len(space.items) == 1 and isinstance(space.items[0], Range)
        self.others = _Cycle(rng, OTHER_KINDS)
        self.every_kind = _Cycle(rng, KINDS)
        self.items = _Cycle(rng, range(len(space.items)))
        self.kinds = {i: _Cycle(rng, KINDS) for i, item in enumerate(space.items) if isinstance(item, Range)}

    def plan(self, points):
        """(item, kind) of each of a run's points."""
        if self.single_range:
            item = self.space.items[0]
            if points >= 2:
                kinds = ["aligned", "misaligned"] + [self.others.next() for _ in range(points - 2)]
                self.rng.shuffle(kinds)
            else:
                kinds = [self.every_kind.next()]
            return [(item, k) for k in kinds]
        out = []
        for _ in range(points):
            i = self.items.next()
            out.append((self.space.items[i], self.kinds[i].next() if i in self.kinds else None))
        return out


def _draw_points(rng, drawers, limits, fixed, points):
    """`points` points (dicts name -> value) of the dimensions in `drawers`, each
    within `limits` given the run's flag values `fixed`."""
    plans = {name: d.plan(points) for name, d in drawers.items()}
    out = []
    for p in range(points):
        for attempt in range(MAX_TRIES):
            halvings = 0 if attempt < TRIES_FULL_RANGE else 1 + (attempt - TRIES_FULL_RANGE) // TRIES_PER_HALVING
            point = {name: _value(rng, *plans[name][p], halvings) for name in drawers}
            if all(lim.holds({**fixed, **point}) for lim in limits):
                break
        else:  # only when a listed value (not a range) is too big for a limit: the smallest point, which fits
            point = {name: d.space.smallest() for name, d in drawers.items()}
        out.append(point)
    return out


class _FlagDrawer:
    """One flag's value per run: listed values in a shuffled cycle; integer
    ranges through every kind of value, like a size."""

    def __init__(self, rng, flag):
        self.rng, self.flag = rng, flag
        if flag.kind in ("text", "toggle"):
            self.values = _Cycle(rng, flag.values)
        elif flag.kind == "integer":
            self.dim = _DimDrawer(rng, flag.space)
        else:  # pattern: its fields are drawn like sizes, `points` shapes per run
            self.fields = {f: _DimDrawer(rng, s) for f, s in flag.fields.items()}

    def next(self, points, halvings=0):
        kind = self.flag.kind
        if kind in ("text", "toggle"):
            return self.values.next() if halvings == 0 else self.rng.choice(self.flag.values)
        if kind == "integer":
            (item, k), = self.dim.plan(1)
            return _value(self.rng, item, k or "uniform", halvings)
        shapes = _draw_points(self.rng, self.fields, self.flag.limits, {}, points)
        return ",".join(self.flag.template.format(**shape) for shape in shapes)


def _draw_flags(rng, decl, points):
    """The flag values of each run (dicts name -> value)."""
    drawers = {name: _FlagDrawer(rng, f) for name, f in decl.flags.items()}
    if decl.runs == "all":
        listed = [f for f in decl.flags.values() if f.listed()]
        values = [f.values if f.kind != "integer" else f.space.items for f in listed]
        bases = [dict(zip([f.name for f in listed], combo)) for combo in itertools.product(*values)]
    else:
        count = decl.runs or max([len(f.values) if f.kind in ("text", "toggle") else
                                  len(f.space.items) if f.kind == "integer" and f.space.discrete() else 2
                                  for f in decl.flags.values()] + [1])
        bases = [{} for _ in range(count)]
    # Only the flags a flag limit names are drawn again when it fails: the others
    # (--inputs, --dtype ...) take one value per run, so each listed value still
    # comes once before any repeats.
    limited = {n for lim in decl.flag_limits for n in lim.names}
    runs = []
    for base in bases:
        free = {name: base[name] if name in base else d.next(points, 0)
                for name, d in drawers.items() if name not in limited}
        for attempt in range(MAX_TRIES):
            halvings = 0 if attempt < TRIES_FULL_RANGE else 1 + (attempt - TRIES_FULL_RANGE) // TRIES_PER_HALVING
            flags = {name: free[name] if name in free else base[name] if name in base
                     else d.next(points, halvings if attempt else 0)
                     for name, d in drawers.items()}
            if all(lim.holds(flags) for lim in decl.flag_limits):
                break
        else:
            flags = {name: f.space.smallest() if f.kind == "integer" else flags[name] for name, f in decl.flags.items()}
        runs.append(flags)
    return runs


def drawn_runs(lab, draw_table, seed, count=None):
    """(label, args) of the drawn correctness runs of `lab` at `seed`: the same
    (lab, seed) gives the same runs. `count` overrides the table's points per run.
    The args are sizes and lab flags only; the grader adds --check-only and --seed."""
    decl = parse(f"[labs.{lab}.draw]", draw_table)
    points = decl.points if count is None else count
    if isinstance(points, bool) or not isinstance(points, int) or points < 1:
        raise ValueError(f"drawn_runs({lab!r}): count = {count!r}: give a whole number of points >= 1")
    rng = random.Random(f"{seed}:{lab}")  # str seeds hash with SHA-512: the same on every run and machine
    dims = {name: _DimDrawer(rng, space) for name, space in decl.sizes.items()}
    runs = []
    for flags in _draw_flags(rng, decl, points):
        integers = {k: v for k, v in flags.items() if decl.flags[k].kind == "integer"}
        pts = _draw_points(rng, dims, decl.point_limits, integers, points)
        args, shown = [], []
        for name, space in decl.sizes.items():
            values = [str(p[name]) for p in pts]
            if len(space.items) == 1 and isinstance(space.items[0], int):
                values = values[:1]  # a fixed size: one value serves every point
            args += [f"--{name}", ",".join(values)]
        names = list(decl.sizes)
        shapes = ",".join("x".join(str(p[n]) for n in names) for p in pts)
        label = f"drawn {','.join(names)}={shapes}"
        for name, f in decl.flags.items():
            v = flags[name]
            if f.kind == "toggle":
                shown += [f"--{name}"] if v else []
            else:
                shown += [f"--{name}", str(v)]
        args += shown
        runs.append((" ".join([label] + shown), args))
    return runs


# ---- the instructor's command -----------------------------------------------------

def _load(config):
    try:
        import tomllib
    except ImportError:  # Python 3.10: the same parser as the tomli package
        import tomli as tomllib
    with open(config, "rb") as f:
        return tomllib.load(f).get("labs", {})


def main(argv=None):
    root = Path(__file__).resolve().parent.parent.parent
    ap = argparse.ArgumentParser(description="Print the correctness runs the grader draws for a seed.")
    ap.add_argument("--seed", type=int, required=True, help="the grading seed")
    ap.add_argument("--labs", default="", help="comma-separated labs, by number or name (default: all)")
    ap.add_argument("--count", type=int, help="size points per run (default: each table's points)")
    ap.add_argument("--config", default=str(root / "tools" / "grading.toml"))
    ap.add_argument("--build", default="build", help="the build folder the printed commands name (default build)")
    args = ap.parse_args(argv)
    try:
        labs = _load(args.config)
    except (OSError, ValueError) as e:
        print(f"draws: error: {args.config}: {e}", file=sys.stderr)
        return 2
    wanted = [w.strip() for w in args.labs.split(",") if w.strip()]
    chosen = sorted(lab for lab in labs if not wanted or any(lab == w or lab.startswith(w + "_") for w in wanted))
    if wanted and not chosen:
        print(f"draws: error: --labs {args.labs}: no such lab in {args.config}", file=sys.stderr)
        return 2
    for lab in chosen:
        table = labs[lab].get("draw")
        if table is None:
            print(f"# {lab}: no draw table")
            continue
        try:
            runs = drawn_runs(lab, table, args.seed, args.count)
        except ValueError as e:
            print(f"draws: error: {args.config}: {e}", file=sys.stderr)
            return 2
        print(f"# {lab}")
        prog = f"{args.build}/labs/{lab}/{lab}"
        for _, run_args in runs:
            print(shlex.join([prog, *run_args, "--check-only", "--seed", str(args.seed)]))
    return 0


if __name__ == "__main__":
    sys.exit(main())
