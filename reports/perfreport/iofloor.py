"""A run's cells against their io floors (routing_benchmark --impls=io-floor:
a kernel with the cell's bytes and launch, one warp per row, no selection).
What a decode or small-batch cell takes above its io floor is the router's
own arithmetic and selection; the io floor itself is the launch, the loads
after the PDL wait and the stores, which no router kernel avoids. At large
batches of few experts one warp per row is not the fastest way to move the
bytes, so the io floor there is no bound: the report stops at max_tokens."""
from .load import load_benchmark_json
from .render import geomean

IO_FLOOR_IMPL = "io-floor"


def floor_key(base):
    """The io floor cell of a cell (the io floor ignores the normalization)."""
    t, e, k, dtype, _norm, padding = base
    return (IO_FLOOR_IMPL, t, e, k, dtype, "sigmoid", padding)


def io_floor_rows(cells, floor_cells, impl="cuda", max_tokens=1024):
    """[(base, cell_us, floor_us)] for the run's cells of `impl` up to max_tokens that have an io floor."""
    rows = []
    for key, c in sorted(cells.items()):
        if key[0] != impl or key[1] > max_tokens:
            continue
        f = floor_cells.get(floor_key(key[1:]))
        if f is not None:
            rows.append((key[1:], c.median_us, f.median_us))
    if not rows:
        raise ValueError(f"no cell of {impl!r} up to {max_tokens} tokens has an io floor in the floor run")
    return rows


def summarize(rows, anchor_cells=None, upstream="seed-triton"):
    """Per (tokens, experts): the io floor's range and the cells' time above it, min-max; and, with
    the anchor, the geomean speedup over upstream now and if every cell ran at its io floor."""
    groups = {}
    for base, cell_us, floor_us in rows:
        groups.setdefault((base[0], base[1]), []).append((cell_us, floor_us))
    table = []
    for (t, e), vals in sorted(groups.items()):
        above = [c - f for c, f in vals]
        table.append({"tokens": t, "experts": e, "floor_min": min(f for _, f in vals),
                      "floor_max": max(f for _, f in vals), "above_min": min(above), "above_max": max(above),
                      "cells": len(vals)})
    speedups = None
    if anchor_cells:
        now, at_floor = [], []
        for base, cell_us, floor_us in rows:
            up = anchor_cells.get((upstream,) + base)
            if up is not None:
                now.append(up.median_us / cell_us)
                at_floor.append(up.median_us / floor_us)
        if now:
            speedups = {"cells": len(now), "now": geomean(now), "at_io_floor": geomean(at_floor)}
    return table, speedups


def grid_bound(cells, floor_cells, anchor_cells, copy_gbps, launch_floor_us, impl="cuda", max_tokens=1024,
               upstream="seed-triton"):
    """The geomean speedup over upstream on every cell of the run that the anchor has, now and were every
    cell at its floor: the io floor up to max_tokens rows, above them the larger of the copy floor (bytes
    over the run's device-to-device copy bandwidth) and the launch floor. What the speed issue's geomean
    target asks for can be set against the second figure: a router near it only reads, writes and launches.
    None when a cell has no floor (no io floor cell, or no copy bandwidth in the run's context)."""
    now, at_floor, past = [], [], []  # past: the indices of the cells above max_tokens rows
    for key, c in sorted(cells.items()):
        if key[0] != impl:
            continue
        up = anchor_cells.get((upstream,) + key[1:])
        if up is None:
            continue
        if key[1] <= max_tokens:
            f = floor_cells.get(floor_key(key[1:]))
            if f is None:
                return None
            floor_us = f.median_us
        else:
            if not copy_gbps or c.bytes_per_call <= 0:
                return None
            floor_us = max(c.bytes_per_call / (copy_gbps * 1e3), float(launch_floor_us or 0))
            past.append(len(now))
        now.append(up.median_us / c.median_us)
        at_floor.append(up.median_us / floor_us)
    if not now:
        return None
    bound = {"cells": len(now), "now": geomean(now), "at_floor": geomean(at_floor), "max_tokens": max_tokens}
    if past:  # the same two figures for the cells past max_tokens rows alone: where the rest of the gap is
        bound["past"] = {"cells": len(past), "now": geomean([now[i] for i in past]),
                         "at_floor": geomean([at_floor[i] for i in past])}
    return bound


def format_floors(table, speedups, launch_floor_us=None, bound=None):
    out = ["| tokens | experts | io floor (us) | cell time above it (us) | cells |", "|---|---|---|---|---|"]
    for r in table:
        out.append(f"| {r['tokens']} | {r['experts']} | {r['floor_min']:.2f}-{r['floor_max']:.2f} | "
                   f"{r['above_min']:.2f}-{r['above_max']:.2f} | {r['cells']} |")
    if launch_floor_us:
        out.append(f"launch floor (the floor run's context): {launch_floor_us} us")
    if speedups:
        out.append(f"speedup over upstream on these {speedups['cells']} cells: {speedups['now']:.2f}x geomean now, "
                   f"{speedups['at_io_floor']:.2f}x if every cell ran at its io floor")
    if bound:
        out.append(f"over all {bound['cells']} cells of the run: {bound['now']:.2f}x geomean now, "
                   f"{bound['at_floor']:.2f}x were every cell at its floor (the io floor up to {bound['max_tokens']} "
                   "rows, above them the larger of the copy floor and the launch floor)")
        if "past" in bound:
            past = bound["past"]
            out.append(f"of them, the {past['cells']} cells past {bound['max_tokens']} rows: {past['now']:.2f}x geomean "
                       f"now, {past['at_floor']:.2f}x at their floors")
    return "\n".join(out)


def floors_table(cells, floor_path, anchor_cells=None, impl="cuda", max_tokens=1024, copy_gbps=None):
    """The table of format_floors for `cells` against the io floor run in floor_path (ValueError when no cell
    has an io floor there); with the anchor and the run's copy bandwidth, the whole grid's bound too."""
    floor_context, floor_cells = load_benchmark_json(floor_path)
    table, speedups = summarize(io_floor_rows(cells, floor_cells, impl, max_tokens), anchor_cells)
    launch_floor_us = floor_context.get("launch_floor_us")
    bound = None
    if anchor_cells and copy_gbps:
        bound = grid_bound(cells, floor_cells, anchor_cells, copy_gbps, launch_floor_us, impl, max_tokens)
    return format_floors(table, speedups, launch_floor_us, bound)
