#!/usr/bin/env python3
"""The two limits of issue 6's table on this GPU, through torch (cuBLAS): the copy
bandwidth (1 GiB copied 20 times, best of five; read + write bytes over the time) and the bf16 GEMM rate
(8192³, 20 times). Prints `copy_gbps N`, `gemm_tflops N` and `torch VERSION`."""
import time

import torch


def timed(fn, n=20):
    for _ in range(3):
        fn()
    torch.cuda.synchronize()
    t = time.perf_counter()
    for _ in range(n):
        fn()
    torch.cuda.synchronize()
    return (time.perf_counter() - t) / n


x = torch.empty(2**30, dtype=torch.uint8, device="cuda")
y = torch.empty_like(x)
# The best of five measurements: one came out at 3.1 TB/s instead of ~4.2 in a run that
# then printed a row at 109 % of its limit (the limit, not the row, was wrong).
print(f"copy_gbps {max(2 * x.numel() / timed(lambda: y.copy_(x)) / 1e9 for _ in range(5)):.0f}")
a = torch.randn(8192, 8192, dtype=torch.bfloat16, device="cuda")
b = torch.randn(8192, 8192, dtype=torch.bfloat16, device="cuda")
print(f"gemm_tflops {2 * 8192**3 / timed(lambda: a @ b) / 1e12:.0f}")
print(f"torch {torch.__version__}")
