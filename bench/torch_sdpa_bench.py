#!/usr/bin/env python3
"""PyTorch scaled_dot_product_attention on the same shapes as kvplan_bench_kernels, for a
side-by-side table (run by scripts/gpu_check.sh on the device machine).

Decode: q [B, Hq, 1, D], k/v [B, Hkv, L, D] (enable_gqa), bf16. Prefill: causal, q/k/v
[B, H*, L, D]. Times are CUDA-event medians after warm-up; bytes and FLOPs are counted the same way
as the C++ bench (K/V read once, q and out once; 4*Hq*L*D FLOPs per query token).

    python3 bench/torch_sdpa_bench.py [--csv FILE]
"""
import argparse
import statistics
import sys

try:
    import torch
    import torch.nn.functional as F
except ImportError:  # the dev machine has no PyTorch; the device machine does
    print("torch_sdpa_bench: PyTorch is not installed here; skipping")
    sys.exit(0)


def time_ms(fn, warmup=5, reps=30):
    for _ in range(warmup):
        fn()
    torch.cuda.synchronize()
    times = []
    for _ in range(reps):
        a = torch.cuda.Event(enable_timing=True)
        b = torch.cuda.Event(enable_timing=True)
        a.record()
        fn()
        b.record()
        b.synchronize()
        times.append(a.elapsed_time(b))
    return statistics.median(times)


def copy_bandwidth():
    n = 1 << 30  # 1 GiB
    src = torch.empty(n, dtype=torch.uint8, device="cuda").random_(0, 255)
    dst = torch.empty_like(src)
    ms = time_ms(lambda: dst.copy_(src))
    return 2 * n / (ms * 1e-3)


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--csv")
    args = ap.parse_args()
    if not torch.cuda.is_available():
        print("torch_sdpa_bench: no CUDA device; skipping")
        return 0
    torch.manual_seed(0)
    bw = copy_bandwidth()
    dt = torch.bfloat16
    rows = []
    # (name, B, Hq, Hkv, D, L)
    decode = [("decode", 1, 32, 8, 128, 32768), ("decode", 64, 32, 8, 128, 4096),
              ("decode", 256, 32, 8, 128, 1024), ("decode", 16, 64, 8, 128, 8192)]
    for name, B, Hq, Hkv, D, L in decode:
        q = torch.randn(B, Hq, 1, D, dtype=dt, device="cuda")
        k = torch.randn(B, Hkv, L, D, dtype=dt, device="cuda")
        v = torch.randn(B, Hkv, L, D, dtype=dt, device="cuda")
        fn = lambda: F.scaled_dot_product_attention(q, k, v, enable_gqa=True)
        ms = time_ms(fn)
        nbytes = 2 * (2 * B * Hkv * L * D + 2 * B * Hq * D)
        flops = 4 * B * Hq * L * D
        rows.append((f"torch_sdpa_{name}", f"B={B} Hq={Hq} Hkv={Hkv} D={D} L={L}", ms, nbytes, flops))
    prefill = [("prefill", 1, 32, 8, 128, 8192), ("prefill", 8, 32, 8, 128, 2048)]
    for name, B, Hq, Hkv, D, L in prefill:
        q = torch.randn(B, Hq, L, D, dtype=dt, device="cuda")
        k = torch.randn(B, Hkv, L, D, dtype=dt, device="cuda")
        v = torch.randn(B, Hkv, L, D, dtype=dt, device="cuda")
        fn = lambda: F.scaled_dot_product_attention(q, k, v, is_causal=True, enable_gqa=True)
        ms = time_ms(fn)
        nbytes = 2 * (2 * B * Hq * L * D + 2 * B * Hkv * L * D)
        flops = 4 * B * Hq * L * L * D / 2  # causal: half the score matrix
        rows.append((f"torch_sdpa_{name}", f"B={B} Hq={Hq} Hkv={Hkv} D={D} L={L}", ms, nbytes, flops))
    print(f"torch {torch.__version__} on {torch.cuda.get_device_name(0)}; copy bandwidth {bw / 1e9:.0f} GB/s (read+write)")
    print(f"{'kernel':<22} {'shape':<34} {'us':>9} {'GB/s':>8} {'%copy':>6} {'TFLOP/s':>8}")
    for name, shape, ms, nbytes, flops in rows:
        gbs = nbytes / (ms * 1e-3) / 1e9
        print(f"{name:<22} {shape:<34} {ms * 1e3:>9.1f} {gbs:>8.0f} {100 * gbs * 1e9 / bw:>5.0f}% {flops / (ms * 1e-3) / 1e12:>8.1f}")
    if args.csv:
        with open(args.csv, "w") as f:
            f.write("kernel,shape,us,gb_per_s,tflop_per_s\n")
            for name, shape, ms, nbytes, flops in rows:
                f.write(f"{name},{shape},{ms * 1e3:.2f},{nbytes / (ms * 1e-3) / 1e9:.1f},{flops / (ms * 1e-3) / 1e12:.2f}\n")
    return 0


if __name__ == "__main__":
    sys.exit(main())
