#!/usr/bin/env python3
"""Summarizes the per-instruction CSV that `gpu_run.sh ncu` writes with
NCU_SOURCE=1 (logs.tgz: logs/ncu_sass_T_E_k_dtype_norm.csv, from
`ncu --page source --csv --print-source sass`): warp instructions executed,
the stall samples by reason, and the instructions that hold the most
samples with their top reasons. Where a kernel spends its issue slots and
its waits, without the Nsight Compute GUI.

  scripts/ncu_sass_summary.py logs/ncu_sass_1_8_1_float32_sigmoid.csv --top 15
  scripts/ncu_sass_summary.py logs/ncu_sass_65536_64_8_float32_softmax.csv --rows 65536 --listing
"""
import argparse
import csv
import sys


def to_int(text):
    try:
        return int(float(text)) if text not in ("", "-") else 0
    except ValueError:
        return 0


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("csv", help="ncu --page source --csv --print-source sass output")
    ap.add_argument("--top", type=int, default=12, help="instructions to list, most stall samples first")
    ap.add_argument("--rows", type=int, default=0,
                    help="the cell's rows (T): also print warp instructions per row, and per-row counts in --listing")
    ap.add_argument("--listing", action="store_true",
                    help="then every executed instruction in program order with its count, for splitting a kernel "
                         "into its steps by hand")
    args = ap.parse_args()

    with open(args.csv, newline="") as f:
        rows = list(csv.reader(f))
    header_at = next((i for i, r in enumerate(rows) if "Source" in r and "Instructions Executed" in r), None)
    if header_at is None:
        sys.exit(f"{args.csv}: no 'Source' / 'Instructions Executed' header; is it ncu's --page source --csv output?")
    header = rows[header_at]
    col = {name: i for i, name in enumerate(header)}
    samples_col = col.get("Warp Stall Sampling (All Samples)")
    reasons = [h for h in header if h.startswith("stall_") and "(Not Issued)" not in h]

    kernel = next((r[1] for r in rows[:header_at] if len(r) > 1 and r[0] == "Kernel Name"), "?")
    total_samples = total_executed = 0
    by_reason = {r: 0 for r in reasons}
    per_instruction = []
    for r in rows[header_at + 1:]:
        if len(r) < len(header):
            continue
        samples = to_int(r[samples_col]) if samples_col is not None else 0
        executed = to_int(r[col["Instructions Executed"]])
        total_samples += samples
        total_executed += executed
        mine = sorted(((to_int(r[col[h]]), h[len("stall_"):]) for h in reasons), reverse=True)
        for count, name in mine:
            by_reason["stall_" + name] += count
        per_instruction.append((samples, executed, r[col["Source"]].strip(), mine[:3]))

    print(f"kernel: {kernel}")
    print(f"warp instructions executed: {total_executed}, stall samples: {total_samples}")
    if args.rows > 0:
        print(f"warp instructions per row: {total_executed / args.rows:.1f} ({args.rows} rows)")
    if total_samples:
        shares = sorted(((n, h[len("stall_"):]) for h, n in by_reason.items() if n), reverse=True)
        print("samples by reason: " + ", ".join(f"{name} {n} ({100.0 * n / total_samples:.0f}%)" for n, name in shares))
    print(f"\n{'samples':>8} {'executed':>9}  instruction")
    for samples, executed, source, top in sorted(per_instruction, key=lambda x: -x[0])[: args.top]:
        why = ", ".join(f"{name} {n}" for n, name in top if n)
        print(f"{samples:>8} {executed:>9}  {source[:64]:<64} {why}")
    if args.listing:
        unit = "per row" if args.rows > 0 else "executed"
        print(f"\n{'index':>6} {unit:>9} {'samples':>8}  instruction (program order, executed ones)")
        for index, (samples, executed, source, _) in enumerate(per_instruction):
            if executed:
                count = f"{executed / args.rows:9.3f}" if args.rows > 0 else f"{executed:>9}"
                print(f"{index:>6} {count} {samples:>8}  {source}")


if __name__ == "__main__":
    main()
