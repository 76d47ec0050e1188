"""Where a run stands against the targets of the speed issue: speedup over
the anchor's upstream kernel per tokens value, the cells slower than it,
decode times against a per-call target, large batches as a share of the
copy floor, and the speedup over the torch recipe run in the same process.
docs/performance.md's stand table is this output."""
from . import load
from .render import geomean

SLOW_MARGIN = 0.97  # "slower by more than 3%": speedup below this


def stand(cells, anchor_cells, context, impl="cuda", upstream="seed-triton", recipe="torch-recipe",
          decode_max_tokens=128, decode_target_us=2.0, large_tokens=65536, large_min_experts=64):
    """A dict of the figures; `cells` from load_benchmark_json, `anchor_cells` from load_anchor_csv."""
    copy_gbps = load.copy_gbps(context)
    mine = {k[1:]: c for k, c in cells.items() if k[0] == impl}
    if not mine:
        raise ValueError(f"the run has no cells of implementation {impl!r}")
    by_tokens = {}
    slow = []
    for base, c in sorted(mine.items()):
        other = anchor_cells.get((upstream,) + base)
        if other is None:
            continue
        s = other.median_us / c.median_us
        for g in (base[0], "all"):
            by_tokens.setdefault(g, []).append(s)
        if s < SLOW_MARGIN:
            slow.append((base, c.median_us, other.median_us, s))
    tokens_rows = {}
    for g, ss in by_tokens.items():
        tokens_rows[g] = {"geomean": geomean(ss), "min": min(ss), "max": max(ss), "cells": len(ss),
                          "slower": sum(s < 1.0 for s in ss), "slower_3pct": sum(s < SLOW_MARGIN for s in ss)}
    decode = [c.median_us for base, c in mine.items() if base[0] <= decode_max_tokens]
    floor_pct = {}
    if copy_gbps > 0:
        for base, c in mine.items():
            t, e, _, dtype = base[:4]
            if t == large_tokens and e >= large_min_experts and c.bytes_per_call > 0:
                floor_us = c.bytes_per_call / (copy_gbps * 1e3)
                floor_pct.setdefault(dtype, []).append(100.0 * floor_us / c.median_us)
    recipe_speedups = [cells[(recipe,) + base].median_us / c.median_us
                       for base, c in mine.items() if (recipe,) + base in cells]
    return {
        "tokens": tokens_rows,
        "slow": slow,
        "decode": {"cells": len(decode), "min_us": min(decode) if decode else None,
                   "max_us": max(decode) if decode else None,
                   "over_target": sum(d > decode_target_us for d in decode), "target_us": decode_target_us},
        "floor_pct": {d: (min(v), max(v), len(v)) for d, v in floor_pct.items()},
        "launch_floor_us": context.get("launch_floor_us"),
        "recipe": (geomean(recipe_speedups), min(recipe_speedups)) if recipe_speedups else None,
    }


def format_stand(st):
    out = ["| tokens | speedup over upstream, geomean | min | max | cells slower |", "|---|---|---|---|---|"]
    order = sorted(g for g in st["tokens"] if g != "all") + ["all"]
    for g in order:
        r = st["tokens"][g]
        out.append(f"| {g} | {r['geomean']:.2f}x | {r['min']:.2f}x | {r['max']:.2f}x | "
                   f"{r['slower']} of {r['cells']} ({r['slower_3pct']} by > 3%) |")
    out.append("")
    out.append("cells slower by > 3% (tokens, experts, topk, dtype, norm: this / upstream us, speedup):")
    for base, mine, theirs, s in st["slow"]:
        out.append(f"  {base[0]} {base[1]} {base[2]} {base[3]} {base[4]}: {mine:.2f} / {theirs:.2f}, {s:.2f}x")
    d = st["decode"]
    if d["cells"]:
        out.append(f"decode: {d['cells']} cells, {d['min_us']:.2f}-{d['max_us']:.2f} us, "
                   f"{d['over_target']} over {d['target_us']:g} us; launch floor {st['launch_floor_us']} us")
    for dtype, (lo, hi, n) in sorted(st["floor_pct"].items()):
        out.append(f"large batches, {dtype}: {lo:.0f}-{hi:.0f}% of the copy floor ({n} cells)")
    if st["recipe"]:
        out.append(f"over the torch recipe: {st['recipe'][0]:.1f}x geomean, at least {st['recipe'][1]:.1f}x")
    return "\n".join(out)
