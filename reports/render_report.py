#!/usr/bin/env python3
"""Render routing_benchmark JSON into a Markdown report with SVG plots, or
compare a run against a baseline.

  render_report.py RUN.json [--baseline BASE.json] [--anchor ANCHOR.csv] --out DIR [--title T] [--command CMD]
  render_report.py compare RUN.json BASE.json [--threshold 0.05] [--impl cuda]   # exit 1 on regression
"""
import argparse
import os
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))

from perfreport import compare, load, render  # noqa: E402


def main(argv):
    if argv and argv[0] == "compare":
        ap = argparse.ArgumentParser(prog="render_report.py compare")
        ap.add_argument("run")
        ap.add_argument("baseline")
        ap.add_argument("--threshold", type=float, default=0.05)
        ap.add_argument("--impl", default=None)
        a = ap.parse_args(argv[1:])
        _, new = load.load_benchmark_json(a.run)
        _, base = load.load_benchmark_json(a.baseline)
        common = sum(1 for k in new if k in base and (not a.impl or k[0] == a.impl))
        if common == 0:
            print("compare: no cell in common between the two runs", file=sys.stderr)
            return 2
        found = compare.regressions(new, base, a.threshold, a.impl)
        for key, b, n, r in found:
            print(f"REGRESSION {'/'.join(map(str, key))}: {b:.2f} us -> {n:.2f} us ({(r - 1) * 100:+.1f}%)")
        summary = compare.ratio_by_tokens(new, base, a.impl)
        for g in sorted((g for g in summary if g != "all"), key=int) + ["all"]:
            gm, n, faster, slower = summary[g]
            print(f"tokens {g}: time new/baseline {gm:.3f} (geomean of {n}), {faster} faster, {slower} slower by > 3%")
        print(f"compare: {common} cells compared, {len(found)} regressed beyond {a.threshold * 100:.0f}%")
        return 1 if found else 0

    ap = argparse.ArgumentParser(prog="render_report.py")
    ap.add_argument("run")
    ap.add_argument("--baseline", help="another routing_benchmark JSON, shown with ' (baseline)' appended")
    ap.add_argument("--anchor", help="the anchor CSV (seed Triton kernel and torch eager on an H100)")
    ap.add_argument("--out", required=True)
    ap.add_argument("--title", default="Router performance")
    ap.add_argument("--command", help="the command that produced the run, quoted in the report")
    ap.add_argument("--commit", help="source commit, when the run's context could not read it (a copy without .git)")
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
    floors = None
    if a.anchor:
        anchor_cells, floors = load.load_anchor_csv(a.anchor)
        run_keys = {k[1:] for k in cells}
        cells.update({k: c for k, c in anchor_cells.items() if k[1:] in run_keys})
    path = render.render(cells, context, a.out, a.title, a.command, floors)
    print(f"report: {path}")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
