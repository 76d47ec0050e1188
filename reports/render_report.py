#!/usr/bin/env python3
"""Render routing_benchmark JSON into a Markdown report with SVG plots, or
compare a run against a baseline.

  render_report.py RUN.json [--baseline BASE.json] [--anchor ANCHOR.csv] [--io-floor IO_FLOOR.json] --out DIR [--title T] [--command CMD]
  render_report.py compare RUN.json BASE.json [--threshold 0.05] [--impl cuda]   # exit 1 on regression
      [--group experts|path] [--where experts=8 --where path=filter] [--cells]
  render_report.py stand RUN.json --anchor ANCHOR.csv [--impl cuda]   # the figures of docs/performance.md's stand table
  render_report.py kernels A.cubin [--baseline B.cubin] [--match TEXT]   # code size, registers, shared memory per kernel
  render_report.py floors RUN.json IO_FLOOR.json [--anchor ANCHOR.csv] [--max-tokens 1024]   # cells above their io floors
  render_report.py paths TAG_PATH_rN.json... [--grid]   # gpu_run.sh paths: each cell on each forced path
  render_report.py placement RUN.json...   # gpu_run.sh placement: each cell at each --buffer-offset
  render_report.py merge RUN.json... --out MERGED.json   # runs of the same cells in separate processes as one
  render_report.py candidates --experts E --topk K --norm N --warps W [--per-thread P] [--groups G]
      [--tokens 128] [--dtype float32]   # block-threshold candidates per row on the benchmark's inputs (CPU)
"""
import argparse
import json
import os
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))

from perfreport import candidates, compare, cubin, iofloor, load, merge, paths, placement, render, stand  # noqa: E402


def main(argv):
    if argv and argv[0] == "compare":
        ap = argparse.ArgumentParser(prog="render_report.py compare")
        ap.add_argument("run")
        ap.add_argument("baseline")
        ap.add_argument("--threshold", type=float, default=0.05)
        ap.add_argument("--impl", default=None)
        ap.add_argument("--group", default="tokens", choices=compare.GROUPS,
                        help="the axis the summary lines are per (tokens), or path: the new run's kernel path")
        ap.add_argument("--where", action="append", metavar="FIELD=VALUE",
                        help="only cells with this value on an axis or path (repeatable), e.g. experts=8, path=filter")
        ap.add_argument("--cells", action="store_true", help="also list every compared cell with its ratio")
        a = ap.parse_args(argv[1:])
        try:
            where = compare.parse_where(a.where)
        except ValueError as e:
            print(f"compare: {e}", file=sys.stderr)
            return 2
        _, new = load.load_benchmark_json(a.run)
        _, base = load.load_benchmark_json(a.baseline)
        ratios = compare.common_ratios(new, base, a.impl, where)
        if not ratios:
            print("compare: no cell in common between the two runs" + (" that matches --where" if where else ""),
                  file=sys.stderr)
            return 2
        matching = {key for key, _, _, _ in ratios}
        found = [f for f in compare.regressions(new, base, a.threshold, a.impl) if f[0] in matching]
        for key, b, n, r in found:
            print(f"REGRESSION {'/'.join(map(str, key))}: {b:.2f} us -> {n:.2f} us ({(r - 1) * 100:+.1f}%)")
        if a.cells:
            for key, b, n, r in ratios:
                path = new[key].path
                print(f"cell {'/'.join(map(str, key))}: {b:.2f} us -> {n:.2f} us, {r:.3f}" + (f" ({path})" if path else ""))
        summary = compare.ratio_by(new, base, a.impl, a.group, where)
        numeric = all(str(g).isdigit() for g in summary if g != "all")
        order = sorted((g for g in summary if g != "all"), key=int if numeric else str) + ["all"]
        for g in order:
            gm, n, faster, slower = summary[g]
            print(f"{a.group} {g}: time new/baseline {gm:.3f} (geomean of {n}), {faster} faster, {slower} slower by > 3%")
        print(f"compare: {len(ratios)} cells compared, {len(found)} regressed beyond {a.threshold * 100:.0f}%")
        return 1 if found else 0

    if argv and argv[0] == "stand":
        ap = argparse.ArgumentParser(prog="render_report.py stand")
        ap.add_argument("run")
        ap.add_argument("--anchor", required=True)
        ap.add_argument("--impl", default="cuda")
        a = ap.parse_args(argv[1:])
        context, cells = load.load_benchmark_json(a.run)
        anchor_cells, _ = load.load_anchor_csv(a.anchor)
        try:
            print(stand.format_stand(stand.stand(cells, anchor_cells, context, impl=a.impl)))
        except ValueError as e:
            print(f"stand: {e}", file=sys.stderr)
            return 2
        return 0

    if argv and argv[0] == "floors":
        ap = argparse.ArgumentParser(prog="render_report.py floors")
        ap.add_argument("run")
        ap.add_argument("io_floor", help="routing_benchmark --impls=io-floor JSON (scripts/gpu_run.sh iofloor)")
        ap.add_argument("--anchor", help="the anchor CSV: speedups now and at the io floors")
        ap.add_argument("--impl", default="cuda")
        ap.add_argument("--max-tokens", type=int, default=1024)
        a = ap.parse_args(argv[1:])
        context, cells = load.load_benchmark_json(a.run)
        anchor_cells = load.load_anchor_csv(a.anchor)[0] if a.anchor else None
        try:
            print(iofloor.floors_table(cells, a.io_floor, anchor_cells, a.impl, a.max_tokens, load.copy_gbps(context)))
        except ValueError as e:
            print(f"floors: {e}", file=sys.stderr)
            return 2
        return 0

    if argv and argv[0] == "merge":
        ap = argparse.ArgumentParser(prog="render_report.py merge")
        ap.add_argument("runs", nargs="+", help="routing_benchmark JSON of the same cells, each from its own process")
        ap.add_argument("--out", required=True)
        a = ap.parse_args(argv[1:])
        try:
            merged = merge.merge_files(a.runs, a.out)
        except (ValueError, OSError) as e:
            print(f"merge: {e}", file=sys.stderr)
            return 2
        print(f"merge: {len(a.runs)} runs, {len(merged['benchmarks'])} repetitions -> {a.out}")
        return 0

    if argv and argv[0] == "placement":
        ap = argparse.ArgumentParser(prog="render_report.py placement")
        ap.add_argument("runs", nargs="+", help="routing_benchmark JSON, each with its buffer_offset in the context")
        a = ap.parse_args(argv[1:])
        try:
            per_offset, paths_of = placement.load_rounds(a.runs)
        except (ValueError, OSError) as e:
            print(f"placement: {e}", file=sys.stderr)
            return 2
        if not per_offset:
            print("placement: no timed cell in " + ", ".join(a.runs), file=sys.stderr)
            return 2
        offsets, times = placement.medians(per_offset)
        print(placement.table(offsets, times, paths_of))
        print(placement.summary(times))
        print(placement.control(per_offset))
        return 0

    if argv and argv[0] == "paths":
        ap = argparse.ArgumentParser(prog="render_report.py paths")
        ap.add_argument("runs", nargs="+", help="TAG_PATH_rROUND.json as `gpu_run.sh paths` writes them")
        ap.add_argument("--grid", action="store_true",
                        help="also each shape's forced columns over the first, one line per shape, by rows")
        a = ap.parse_args(argv[1:])
        try:
            cols, cells = paths.load_runs(a.runs)
        except (OSError, ValueError) as e:
            print(f"paths: {e}", file=sys.stderr)
            return 2
        if not cells:
            print("paths: no timed cell in " + ", ".join(a.runs), file=sys.stderr)
            return 2
        print(paths.cell_table(cols, cells))
        if a.grid:
            print()
            print(paths.ratio_grid(cols, cells))
        return 0

    if argv and argv[0] == "candidates":
        ap = argparse.ArgumentParser(prog="render_report.py candidates",
                                     description="block-threshold candidates per row on the benchmark's inputs")
        ap.add_argument("--tokens", type=int, default=128)
        ap.add_argument("--experts", type=int, required=True)
        ap.add_argument("--topk", type=int, required=True)
        ap.add_argument("--norm", choices=["sigmoid", "softmax"], required=True)
        ap.add_argument("--dtype", default="float32")
        ap.add_argument("--warps", type=int, required=True, help="the form's warps (W)")
        ap.add_argument("--per-thread", type=int, default=1, help="experts a thread (P)")
        ap.add_argument("--groups", type=int, default=1, help="groups a warp: 1 (warps), 2 (half-warps) or 4 (quarter-warps)")
        a = ap.parse_args(argv[1:])
        try:
            ns = candidates.counts(a.tokens, a.experts, a.topk, a.norm == "softmax", a.dtype, a.warps, a.per_thread,
                                   a.groups)
        except ValueError as e:
            print(f"candidates: {e}", file=sys.stderr)
            return 2
        print(candidates.summary(ns))
        return 0

    if argv and argv[0] == "kernels":
        ap = argparse.ArgumentParser(prog="render_report.py kernels")
        ap.add_argument("cubin", help="nvcc -cubin output (scripts/kernel_cubins.sh makes them)")
        ap.add_argument("--baseline", help="another cubin: each kernel's code size against its own there")
        ap.add_argument("--match", default="", help="only kernels whose mangled name contains this")
        a = ap.parse_args(argv[1:])
        try:
            with open(a.cubin, "rb") as f:
                facts = cubin.kernel_facts(f.read())
            base = {}
            if a.baseline:
                with open(a.baseline, "rb") as f:
                    base = cubin.kernel_facts(f.read())
        except (OSError, cubin.CubinError) as e:
            print(f"kernels: {e}", file=sys.stderr)
            return 2
        names = sorted(n for n in facts if a.match in n)
        if not names:
            print(f"kernels: no kernel in {a.cubin}" + (f" contains {a.match!r}" if a.match else ""), file=sys.stderr)
            return 2
        print("| kernel | SASS instructions | code bytes | registers | static shared bytes |"
              + (" instructions in baseline |" if a.baseline else ""))
        print("|---|---|---|---|---|" + ("---|" if a.baseline else ""))
        for n in names:
            k = facts[n]
            row = f"| {n} | {k['instructions']} | {k['code_bytes']} | {k['registers']} | {k['shared_bytes']} |"
            if a.baseline:
                row += f" {base[n]['instructions']} |" if n in base else " - |"
            print(row)
        return 0

    ap = argparse.ArgumentParser(prog="render_report.py")
    ap.add_argument("run")
    ap.add_argument("--baseline", help="another routing_benchmark JSON, shown with ' (baseline)' appended")
    ap.add_argument("--anchor", help="the anchor CSV (seed Triton kernel and torch eager on an H100)")
    ap.add_argument("--out", required=True)
    ap.add_argument("--title", default="Router performance")
    ap.add_argument("--command", help="the command that produced the run, quoted in the report")
    ap.add_argument("--commit", help="source commit, when the run's context could not read it (a copy without .git)")
    ap.add_argument("--io-floor", help="routing_benchmark --impls=io-floor JSON: a section with the cells against it")
    a = ap.parse_args(argv)
    if load.is_loader_json(a.run):
        context, rows = load.load_loader_json(a.run)
        print(f"report: {render.render_loader(context, rows, a.out, a.title, a.command)}")
        return 0
    context, cells = load.load_benchmark_json(a.run)
    if a.commit and context.get("git_commit", "unknown") == "unknown":
        context["git_commit"] = f"{a.commit} (given to the renderer; the run's tree had no .git)"
    if a.baseline:
        _, base = load.load_benchmark_json(a.baseline)
        for key, c in base.items():
            renamed = (key[0] + " (baseline)",) + key[1:]
            c.key = renamed
            cells[renamed] = c
    floors, anchor_cells = None, None
    if a.anchor:
        anchor_cells, floors = load.load_anchor_csv(a.anchor)
    extra = None
    if a.io_floor:
        try:
            table = iofloor.floors_table(cells, a.io_floor, anchor_cells, copy_gbps=load.copy_gbps(context))
        except ValueError as e:
            print(f"report: {e}", file=sys.stderr)
            return 2
        extra = ["## The cells against their io floors", "",
                 f"The io floor of a cell (`{os.path.basename(a.io_floor)}`, `routing_benchmark --impls=io-floor`): "
                 "a kernel with the cell's bytes and PDL launch, one warp per row, that reads every logit after "
                 "the wait and writes the k slots, and nothing else. What a cell takes above it is the router's own "
                 "work. Cells up to 1024 rows (past that, one warp per row is no bound for few experts).", "",
                 table, ""]
    if anchor_cells:
        run_keys = {k[1:] for k in cells}
        cells.update({k: c for k, c in anchor_cells.items() if k[1:] in run_keys})
    path = render.render(cells, context, a.out, a.title, a.command, floors, extra)
    print(f"report: {path}")
    return 0


def run(argv):
    """main, with a file that cannot be read or parsed reported by name (exit 2), not as a traceback."""
    try:
        return main(argv)
    except OSError as e:
        print(f"render_report: {e.filename or ''}: {e.strerror or e}", file=sys.stderr)
        return 2
    except json.JSONDecodeError as e:
        print(f"render_report: not JSON ({e})", file=sys.stderr)
        return 2


if __name__ == "__main__":
    sys.exit(run(sys.argv[1:]))
