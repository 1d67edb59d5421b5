#!/usr/bin/env python3
"""Prints issue 6's engine table from the files bench/gpu_table.sh leaves in a folder.

Each row: the repeats of switchyard-engine-bench (every repeat, the first with graph capture
and warm-up, then the best), llama.cpp
on the same GGUF where it ran (llama-bench's mean of its repetitions, llama-batched-bench's
one run), and the row's limit on this machine:
  decode:  bytes a step reads (every linear weight once, plus each sequence's K and V
           at its mean context) / the measured copy bandwidth (read + write) → tok/s;
  prefill: FLOPs (2 per weight per prompt token, the LM head for the last token only,
           causal attention 2·S²·head_dim per head and layer) / the measured bf16 GEMM
           rate → TTFT.
Usage: gpu_table.py OUT_DIR
"""
import json
import os
import re
import sys


def read_kv(path):
    out = {}
    if os.path.exists(path):
        for line in open(path):
            parts = line.split()
            if len(parts) >= 2:
                out[parts[0]] = parts[1]
    return out


def model_config(log_path):
    """Layers, hidden, heads, kv heads, head_dim, ffn, vocab from the engine bench's log."""
    text = open(log_path).read()
    m = re.search(r"(\d+) layers, hidden (\d+), heads (\d+)/(\d+) kv, head_dim (\d+), ffn (\d+), vocab (\d+)", text)
    if not m:
        raise SystemExit(f"{log_path}: no model line")
    keys = ("layers", "hidden", "heads", "kv_heads", "head_dim", "ffn", "vocab")
    return dict(zip(keys, map(int, m.groups())))


def layer_params(c):
    q, kv = c["heads"] * c["head_dim"], c["kv_heads"] * c["head_dim"]
    return c["hidden"] * (q + 2 * kv) + q * c["hidden"] + 3 * c["hidden"] * c["ffn"]


def share(x):
    """A row's share of its limit; above 100 % the limit was mismeasured, not beaten."""
    return f"{x:.0%}" if x <= 1.0 else f"limit mismeasured ({x:.0%})"


def decode_limit(c, batch, context, copy_gbps):
    weights = 2 * (c["layers"] * layer_params(c) + c["vocab"] * c["hidden"])
    kv = batch * context * c["layers"] * 2 * c["kv_heads"] * c["head_dim"] * 2
    return batch / ((weights + kv) / (copy_gbps * 1e9))


def prefill_limit_s(c, tokens, tflops):
    flops = 2 * tokens * c["layers"] * layer_params(c) + 2 * c["hidden"] * c["vocab"]
    flops += c["layers"] * c["heads"] * 2 * tokens * tokens * c["head_dim"]
    return flops / (tflops * 1e12)


def engine_runs(path):
    if not os.path.exists(path):
        return []
    try:
        data = json.load(open(path))
    except json.JSONDecodeError:
        return []
    return data.get("runs", []) if isinstance(data, dict) else data


def llama_bench(path):
    try:
        return json.load(open(path))
    except (OSError, json.JSONDecodeError):
        return []


def llama_batched(out, m):
    rows = []
    for name in (f"{m}-llama-batched.jsonl", f"{m}-llama.log"):
        path = os.path.join(out, name)
        if os.path.exists(path):
            for line in open(path):
                if line.startswith('{"n_kv_max"'):
                    rows.append(json.loads(line))
    return rows


def fmt(values, digits=1):
    return ", ".join(f"{v:,.{digits}f}" for v in values)


def main():
    out = sys.argv[1]
    lim = read_kv(os.path.join(out, "limits.txt"))
    copy_gbps, tflops = float(lim["copy_gbps"]), float(lim["gemm_tflops"])
    gpu = open(os.path.join(out, "gpu.txt")).read().strip() if os.path.exists(os.path.join(out, "gpu.txt")) else "?"
    print(f"GPU: {gpu}; copy {copy_gbps:,.0f} GB/s (read + write), bf16 GEMM 8192³ {tflops:,.0f} TFLOP/s ({lim.get('torch', '?')})\n")
    names = {"l8": "llama3-8b", "q8": "qwen3-8b"}
    for m in ("l8", "q8"):
        if not os.path.exists(os.path.join(out, f"{m}-1k.log")):
            continue
        c = model_config(os.path.join(out, f"{m}-1k.log"))
        lb = llama_bench(os.path.join(out, f"{m}-llama-prefill.json")) + llama_bench(os.path.join(out, f"{m}-llama-decode.json"))
        batched = {r["pl"]: r for r in llama_batched(out, m)}
        print(f"### {names[m]} (bf16, {c['layers']} layers, hidden {c['hidden']}, vocab {c['vocab']})\n")
        print("| measurement | Switchyard (repeats) | best | llama.cpp | limit | best / limit |")
        print("|---|---|---|---|---|---|")
        for r in engine_runs(os.path.join(out, f"{m}-1k.json")):
            b, p, d = r["batch"], r["prompt_tokens"], r["decode_tokens"]
            best = max(r["decode_tok_s"])
            limit = decode_limit(c, b, p + d / 2, copy_gbps)
            ll = ""
            if b == 1:
                ll = next((f"{t['avg_ts']:,.1f}" for t in lb if t["n_gen"] > 0 and t["n_depth"] == 1024), "")
            elif b in batched:
                ll = f"{batched[b]['speed_tg']:,.1f}"
            print(f"| decode tok/s, batch {b}, {p}-token prompts | {fmt(r['decode_tok_s'])} | {best:,.1f} | {ll} | {limit:,.0f} | {share(best / limit)} |")
        for p in (8192, 32768):
            for r in engine_runs(os.path.join(out, f"{m}-{p}.json")):
                if p == 32768:
                    best = max(r["decode_tok_s"])
                    limit = decode_limit(c, 1, p + r["decode_tokens"] / 2, copy_gbps)
                    ll = next((f"{t['avg_ts']:,.1f}" for t in lb if t["n_gen"] > 0 and t["n_depth"] == p), "")
                    print(f"| decode tok/s, batch 1, {p}-token prompt | {fmt(r['decode_tok_s'])} | {best:,.1f} | {ll} | {limit:,.0f} | {share(best / limit)} |")
        for p, name in ((1024, "1k"), (8192, "8192"), (32768, "32768")):
            for r in engine_runs(os.path.join(out, f"{m}-{name}.json")):
                if r["batch"] != 1:
                    continue
                ttft = [p / v * 1e3 for v in r["prefill_tok_s"]]
                limit = prefill_limit_s(c, p, tflops) * 1e3
                lt = next((t for t in lb if t["n_prompt"] == p and t["n_gen"] == 0), None)
                ll = f"{p / lt['avg_ts'] * 1e3:,.0f} ms ({lt['avg_ts']:,.0f} tok/s)" if lt else ""
                print(f"| prefill TTFT ms, {p} tokens (tok/s) | {fmt(ttft, 1)} ({fmt(r['prefill_tok_s'], 0)}) | {min(ttft):,.1f} | {ll} | {limit:,.1f} | {share(limit / min(ttft))} |")
        print()


if __name__ == "__main__":
    main()
