#!/usr/bin/env python3
"""Prints issue 19's table from the files bench/quant_table.sh leaves in a folder.

Per file type, each row: Switchyard's repeats (switchyard-engine-bench, every repeat, the
first with the process's warm-up) and their best, llama.cpp on the same file
(llama-bench's mean of its repetitions, llama-batched-bench's one run) and best /
llama.cpp beside the issue's target for that row.
Usage: quant_table.py OUT_DIR
"""
import json
import os
import sys

# The acceptance: (device, measurement) → the least ratio to llama.cpp.
TARGETS = {("cpu", "decode"): 0.9, ("cpu", "prefill"): 0.8, ("cuda", "decode 1"): 1.15, ("cuda", "decode 64"): 1.3}


def load(path, jsonl=False):
    try:
        with open(path) as f:
            if jsonl:
                return [json.loads(line) for line in f if line.startswith("{")]
            data = json.load(f)
    except (OSError, json.JSONDecodeError):
        return []
    return data.get("runs", []) if isinstance(data, dict) else data


def fmt(values):
    return ", ".join(f"{v:,.1f}" for v in values)


def row(name, runs, key, theirs, target):
    for r in runs:
        best = max(r[key])
        ratio = f"{best / theirs:.2f}×" if theirs else ""
        want = f"≥ {target}×" if target else ""
        label = f"{name} ({r['arm']})" if r.get("arm") not in (None, "", "default") else name
        print(f"| {label} | {fmt(r[key])} | {best:,.1f} | {f'{theirs:,.1f}' if theirs else ''} | {ratio} | {want} |")


def main():
    out = sys.argv[1]
    machine = open(os.path.join(out, "machine.txt")).read().strip().splitlines()
    device = machine[0].split()[1]
    print("Machine: " + "; ".join(machine) + "\n")
    print("| type, measurement (tok/s) | Switchyard (repeats) | best | llama.cpp | best / llama.cpp | target |")
    print("|---|---|---|---|---|---|")
    for t in ("bf16", "q8_0", "q4_k_m", "q6_k", "q4_0"):
        runs = load(os.path.join(out, f"sy-{t}.json"))
        if not runs:
            continue
        ll = load(os.path.join(out, f"ll-{t}-prefill.json")) + load(os.path.join(out, f"ll-{t}-decode.json"))
        prefill = next((x["avg_ts"] for x in ll if x["n_gen"] == 0), None)
        decode = next((x["avg_ts"] for x in ll if x["n_gen"] > 0), None)
        batched = {x["pl"]: x["speed_tg"] for x in load(os.path.join(out, f"ll-{t}-batched.jsonl"), jsonl=True)}
        p = runs[0]["prompt_tokens"]
        one = [r for r in runs if r["batch"] == 1]
        row(f"{t}, prefill {p} tokens", one, "prefill_tok_s", prefill, TARGETS.get((device, "prefill")))
        row(f"{t}, decode batch 1", one, "decode_tok_s", decode,
            TARGETS.get((device, "decode")) or TARGETS.get((device, "decode 1")))
        for b in sorted({r["batch"] for r in runs} - {1}):
            row(f"{t}, decode batch {b}", [r for r in runs if r["batch"] == b], "decode_tok_s", batched.get(b),
                TARGETS.get((device, f"decode {b}")))


if __name__ == "__main__":
    main()
