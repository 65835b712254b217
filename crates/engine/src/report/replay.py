#!/usr/bin/env python3
"""Replays one PyTorch op with the shapes, strides and dtypes recorded in a profiler trace.

Written by Jarvis. Reads replay_ir.json beside this script, rebuilds each input tensor with
torch.empty_strided on the GPU, runs the op (warm-up, then timed iterations with device events)
and prints the achieved TFLOPS/s and TB/s next to the figures measured in the trace.

Usage: python3 replay.py [--iters N] [--warmup N] [--device cuda]
"""
import argparse
import ast
import json
import os
import sys

import torch

DTYPES = {
    "float": torch.float32,
    "double": torch.float64,
    "c10::Half": torch.float16,
    "c10::BFloat16": torch.bfloat16,
    "c10::Float8_e4m3fn": getattr(torch, "float8_e4m3fn", None),
    "c10::Float8_e5m2": getattr(torch, "float8_e5m2", None),
    "c10::Float8_e4m3fnuz": getattr(torch, "float8_e4m3fnuz", None),
    "c10::Float8_e5m2fnuz": getattr(torch, "float8_e5m2fnuz", None),
    "long int": torch.int64,
    "int": torch.int32,
    "short int": torch.int16,
    "signed char": torch.int8,
    "unsigned char": torch.uint8,
    "bool": torch.bool,
}


def scalar(text):
    """A concrete (non-tensor) input as Python: '2' -> 2, 'True' -> True, "'none'" -> 'none'."""
    if text in ("", None):
        return None
    try:
        return ast.literal_eval(text)
    except (ValueError, SyntaxError):
        return text.strip("'\"")


def tensor(dims, strides, dtype, device):
    if not strides or len(strides) != len(dims):
        strides = None
    if strides is None:
        t = torch.empty(dims, dtype=dtype, device=device)
    else:
        t = torch.empty_strided(dims, strides, dtype=dtype, device=device)
    if dtype.is_floating_point and dtype.itemsize >= 2:
        t.normal_()
    elif dtype == torch.bool:
        t.fill_(True)
    elif not dtype.is_floating_point:
        t.fill_(1)
    return t


def build_args(entry, device):
    args = []
    n = len(entry["input_dims"] or [])
    for i in range(n):
        dims = entry["input_dims"][i]
        typ = entry["input_type"][i] if entry["input_type"] else ""
        strides = entry["input_strides"][i] if entry.get("input_strides") else None
        concrete = entry["concrete_inputs"][i] if entry.get("concrete_inputs") else ""
        dtype = DTYPES.get(typ)
        if dtype is not None and isinstance(dims, list):
            args.append(tensor(dims, strides, dtype, device))
        elif typ == "TensorList" and isinstance(dims, list):
            args.append([tensor(d, None, torch.bfloat16, device) for d in dims])
        else:
            args.append(scalar(concrete))
    # Trailing optional arguments recorded as empty are left to their defaults.
    while args and args[-1] is None:
        args.pop()
    return args


def resolve(op_name):
    namespace, _, name = op_name.partition("::")
    return getattr(getattr(torch.ops, namespace), name)


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--iters", type=int, default=50)
    parser.add_argument("--warmup", type=int, default=10)
    parser.add_argument("--device", default="cuda")
    opts = parser.parse_args()
    here = os.path.dirname(os.path.abspath(__file__))
    with open(os.path.join(here, "replay_ir.json")) as f:
        ir = json.load(f)
    op = resolve(ir["op_name"])
    print(f"{ir['op_name']}: {len(ir['entries'])} signatures on {torch.cuda.get_device_name(0)}")
    failures = 0
    for i, entry in enumerate(ir["entries"]):
        try:
            args = build_args(entry, opts.device)
            for _ in range(opts.warmup):
                op(*args)
            start = torch.cuda.Event(enable_timing=True)
            end = torch.cuda.Event(enable_timing=True)
            start.record()
            for _ in range(opts.iters):
                op(*args)
            end.record()
            torch.cuda.synchronize()
            us = start.elapsed_time(end) * 1000.0 / opts.iters
        except Exception as e:  # one bad signature must not stop the others
            failures += 1
            print(f"  [{i}] {entry['input_dims']}: could not replay: {e}")
            continue
        line = f"  [{i}] {entry['input_dims']}: {us:.2f} us (trace {entry['kernel_us_mean']:.2f} us)"
        if entry.get("gflops"):
            line += f", {entry['gflops'] / us * 1e-3:.1f} TFLOPS/s"
            if entry.get("trace_tflops_s") is not None:
                line += f" (trace {entry['trace_tflops_s']:.1f})"
        if entry.get("data_mb"):
            line += f", {entry['data_mb'] / us:.3f} TB/s"
            if entry.get("trace_tb_s") is not None:
                line += f" (trace {entry['trace_tb_s']:.3f})"
        print(line)
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
