#!/usr/bin/env python3
"""Judge the project's PyTorch op as an outside implementation would be judged:
export cases, run torch.ops.musespark.fused_musespark1x_routing on them, write
the outputs under the agreed names, and let `musespark verify` decide.

  python3 examples/verify_torch_op.py build/gpu [--cases 64] [--seed 3] [--device cuda]
"""
import argparse
import json
import os
import subprocess
import sys

import torch
from safetensors import safe_open
from safetensors.torch import save_file


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("build_dir")
    ap.add_argument("--cases", type=int, default=64)
    ap.add_argument("--seed", type=int, default=3)
    ap.add_argument("--device", default="cuda" if torch.cuda.is_available() else "cpu")
    ap.add_argument("--workdir", default=".")
    a = ap.parse_args()

    musespark = os.path.join(a.build_dir, "harness", "musespark")
    cases_path = os.path.join(a.workdir, "cases.safetensors")
    outputs_path = os.path.join(a.workdir, "outputs.safetensors")
    subprocess.run([musespark, "export", "--cases", str(a.cases), "--seed", str(a.seed), "--out", cases_path], check=True)
    torch.ops.load_library(os.path.join(a.build_dir, "impl", "libmusespark_torch_ops.so"))

    outputs = {}
    with safe_open(cases_path, "pt") as f:
        meta = f.metadata()
        names = set(f.keys())
        for i in range(int(meta["num_cases"])):
            cfg = json.loads(meta[f"case{i}"])
            logits = f.get_tensor(f"case{i}/gating_output").to(a.device)
            bias = f.get_tensor(f"case{i}/bias").to(a.device)
            pad_name = f"case{i}/is_padding"
            padding = f.get_tensor(pad_name).to(a.device) if pad_name in names else None
            weights, ids = torch.ops.musespark.fused_musespark1x_routing(
                logits, bias, cfg["topk"], cfg["route_scale"], cfg["multiplier"],
                cfg["normalization"], cfg["eps"], None, None, padding)
            outputs[f"case{i}/topk_weights"] = weights.cpu().contiguous()
            outputs[f"case{i}/topk_ids"] = ids.cpu().contiguous()
    save_file(outputs, outputs_path)
    return subprocess.run([musespark, "verify", "--cases", cases_path, "--outputs", outputs_path]).returncode


if __name__ == "__main__":
    sys.exit(main())
