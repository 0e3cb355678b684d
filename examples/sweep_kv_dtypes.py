#!/usr/bin/env python3
"""examples/sweep_kv_dtypes.py: how many requests of full context fit, per KV cache dtype.

A notebook-style sweep with the Python module (docs/library.md): one scenario, the KV dtype and the
context length varied, the memory answer read for each, and the result plotted with matplotlib
(Agg backend: no display needed) into a PNG.

    PYTHONPATH=build/python python3 examples/sweep_kv_dtypes.py --out kv_dtypes.png
    PYTHONPATH=build/python python3 examples/sweep_kv_dtypes.py --model llama-3.1-70b --gpu h100-sxm \\
        --tensor-parallel-size 4 --out 70b.png
"""
import argparse

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402  (after the backend is chosen)

import kvplan  # noqa: E402

DTYPES = ["bf16", "fp8", "int8", "int4", "kivi2"]
CONTEXTS = [1024 * 2**i for i in range(8)]  # 1k .. 128k tokens


def sweep(base):
    """{dtype: [requests of max_model_len that fit, one per context]}"""
    return {
        dtype: [base.replace(kv_cache_dtype=dtype, max_model_len=context).memory()["requests_at_max_len"]
                for context in CONTEXTS]
        for dtype in DTYPES
    }


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--model", default="llama-3.1-8b")
    parser.add_argument("--gpu", default="h100-sxm")
    parser.add_argument("--tensor-parallel-size", type=int, default=1)
    parser.add_argument("--out", default="kv_dtypes.png", help="PNG to write")
    args = parser.parse_args()

    base = kvplan.Scenario(model=args.model, gpu=args.gpu, tensor_parallel_size=args.tensor_parallel_size)
    results = sweep(base)

    print(f"{'context':>8} " + " ".join(f"{d:>7}" for d in DTYPES))
    for i, context in enumerate(CONTEXTS):
        print(f"{context:>8} " + " ".join(f"{results[d][i]:>7}" for d in DTYPES))

    fig, ax = plt.subplots(figsize=(7, 4.5))
    for dtype, requests in results.items():
        ax.plot(CONTEXTS, requests, marker="o", label=dtype)
    ax.set_xscale("log", base=2)
    ax.set_yscale("log")
    ax.set_xlabel("context (max_model_len, tokens)")
    ax.set_ylabel("requests of full context that fit")
    ax.set_title(f"{args.model} on {args.tensor_parallel_size}x {args.gpu}: KV cache dtype")
    ax.grid(True, which="both", alpha=0.3)
    ax.legend(title="KV dtype")
    fig.tight_layout()
    fig.savefig(args.out, dpi=100)
    print(f"wrote {args.out}")


if __name__ == "__main__":
    main()
