#!/usr/bin/env python3
"""Suanli's PyTorch load generator for benchmark tasks.

The node agent embeds this file, writes it to a temporary directory and runs
it with python3, with CUDA_VISIBLE_DEVICES set to the task's GPUs (by UUID,
in the task's order, so CUDA device i is the task's GPU i). Its argument (or
stdin) is a JSON config:

    {"gpus": 8, "gemm_n": 8192, "warmup": 10, "iters": 50,
     "copy_bytes": 1073741824, "host_bytes": 268435456,
     "allreduce_bytes": 268435456, "allreduce_iters": 20,
     "allreduce_timeout_s": 300}

It prints ONE JSON object on stdout, and nothing else:

    {"tool": "pytorch", "version": torch.__version__, "cuda": "12.4",
     "nccl": "2.21.5", "results": [{"metric": "bf16_gemm_tflops",
     "value": 771.2, "per_gpu": [...], "detail": "..."}, ...]}

A result that could not be measured carries "error" instead of a value.
When PyTorch or CUDA is missing the object carries "unavailable" (the
reason) and no results; a run that cannot start carries "error".

Conventions (every figure is a median of timed iterations, after warm-up;
per-iteration times come from CUDA events; GB/s means 10^9 bytes/s):

- GEMM TFLOPS: C = A @ B with n x n x n matrices, 2 n^3 / t / 10^12,
  run on each GPU in turn (not at once); "value" is the median over GPUs.
- Device memory bandwidth: a device-to-device copy of copy_bytes within one
  GPU, counted as read plus write: 2 x bytes / t.
- Host <-> device: non_blocking copies between pinned host memory
  (torch.empty(pin_memory=True)) and the GPU, bytes / t, one GPU at a time.
- All-reduce (more than one GPU): torch.distributed with the NCCL backend,
  one process per GPU (torch.multiprocessing.spawn), rendezvous on
  127.0.0.1; a float32 tensor of allreduce_bytes; t is the slowest rank's
  time per iteration; algbw = bytes / t, busbw = algbw x 2 (n - 1) / n (the
  convention of nccl-tests).
"""

import json
import os
import socket
import statistics
import sys
import tempfile
import traceback

BF16 = "bf16_gemm_tflops"
FP16 = "fp16_gemm_tflops"
D2D = "d2d_bw_gbps"
H2D = "h2d_bw_gbps"
D2H = "d2h_bw_gbps"
ALLREDUCE = "allreduce_busbw_gbps"

DEFAULTS = {
    "gpus": 0,
    "gemm_n": 8192,
    "warmup": 10,
    "iters": 50,
    "copy_bytes": 1 << 30,
    "host_bytes": 256 << 20,
    "allreduce_bytes": 256 << 20,
    "allreduce_warmup": 5,
    "allreduce_iters": 20,
    "allreduce_timeout_s": 300,
}


def load_config():
    raw = sys.argv[1] if len(sys.argv) > 1 else sys.stdin.read()
    cfg = dict(DEFAULTS)
    if raw.strip():
        cfg.update(json.loads(raw))
    return cfg


def emit(out):
    sys.stdout.write(json.dumps(out) + "\n")
    sys.stdout.flush()


def short_error(exc):
    """The last line of an exception, which says what went wrong."""
    msg = "".join(traceback.format_exception_only(type(exc), exc)).strip()
    lines = [line for line in msg.splitlines() if line.strip()]
    return lines[-1][:500] if lines else type(exc).__name__


def nccl_version(torch):
    try:
        v = torch.cuda.nccl.version()
    except Exception:
        return None
    if isinstance(v, tuple):
        return ".".join(str(x) for x in v[:3])
    if isinstance(v, int):  # older PyTorch: 2708 is 2.7.8, 21903 is 2.19.3
        if v >= 10000:
            return "%d.%d.%d" % (v // 10000, v // 100 % 100, v % 100)
        return "%d.%d.%d" % (v // 1000, v // 100 % 10, v % 100)
    return str(v)


def timed(torch, fn, iters):
    """Seconds per call of fn, one CUDA event pair per call."""
    starts = [torch.cuda.Event(enable_timing=True) for _ in range(iters)]
    ends = [torch.cuda.Event(enable_timing=True) for _ in range(iters)]
    for i in range(iters):
        starts[i].record()
        fn()
        ends[i].record()
    torch.cuda.synchronize()
    return [s.elapsed_time(e) / 1e3 for s, e in zip(starts, ends)]


def gemm(torch, dev, dtype, cfg):
    n = cfg["gemm_n"]
    with torch.cuda.device(dev):
        a = torch.randn(n, n, device=dev, dtype=dtype)
        b = torch.randn(n, n, device=dev, dtype=dtype)
        c = torch.empty(n, n, device=dev, dtype=dtype)
        for _ in range(cfg["warmup"]):
            torch.matmul(a, b, out=c)
        torch.cuda.synchronize()
        t = statistics.median(timed(torch, lambda: torch.matmul(a, b, out=c), cfg["iters"]))
        del a, b, c
    return 2 * n**3 / t / 1e12


def device_copy(torch, dev, cfg):
    size = cfg["copy_bytes"]
    with torch.cuda.device(dev):
        src = torch.empty(size, dtype=torch.uint8, device=dev)
        dst = torch.empty(size, dtype=torch.uint8, device=dev)
        src.fill_(1)
        for _ in range(cfg["warmup"]):
            dst.copy_(src)
        torch.cuda.synchronize()
        t = statistics.median(timed(torch, lambda: dst.copy_(src), cfg["iters"]))
        del src, dst
    return 2 * size / t / 1e9


def host_copy(torch, dev, cfg, to_device):
    size = cfg["host_bytes"]
    with torch.cuda.device(dev):
        host = torch.empty(size, dtype=torch.uint8, pin_memory=True)
        gpu = torch.empty(size, dtype=torch.uint8, device=dev)
        if to_device:
            def fn():
                gpu.copy_(host, non_blocking=True)
        else:
            def fn():
                host.copy_(gpu, non_blocking=True)
        for _ in range(cfg["warmup"]):
            fn()
        torch.cuda.synchronize()
        t = statistics.median(timed(torch, fn, cfg["iters"]))
        del host, gpu
    return size / t / 1e9


def per_gpu(torch, metric, n, measure, detail):
    """Runs measure(dev) on each GPU in turn: the result, or its error."""
    values = []
    try:
        for dev in range(n):
            values.append(measure(dev))
            torch.cuda.empty_cache()
    except Exception as exc:  # noqa: BLE001 - one failed load must not stop the others
        try:
            torch.cuda.empty_cache()
        except Exception:  # noqa: BLE001 - a broken CUDA context fails the next load too
            pass
        return {"metric": metric, "error": "GPU %d: %s" % (len(values), short_error(exc))}
    return {"metric": metric, "value": statistics.median(values), "per_gpu": values, "detail": detail}


def free_port():
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def allreduce_worker(rank, n, port, cfg, path):
    import datetime

    import torch
    import torch.distributed as dist

    torch.cuda.set_device(rank)
    dist.init_process_group(
        "nccl",
        init_method="tcp://127.0.0.1:%d" % port,
        rank=rank,
        world_size=n,
        timeout=datetime.timedelta(seconds=cfg["allreduce_timeout_s"]),
    )
    try:
        size = cfg["allreduce_bytes"] // 4 * 4
        x = torch.zeros(size // 4, dtype=torch.float32, device=rank)
        for _ in range(cfg["allreduce_warmup"]):
            dist.all_reduce(x)
        torch.cuda.synchronize()
        times = torch.tensor(timed(torch, lambda: dist.all_reduce(x), cfg["allreduce_iters"]), device=rank)
        dist.all_reduce(times, op=dist.ReduceOp.MAX)  # the slowest rank sets the pace
        if rank == 0:
            t = statistics.median(times.tolist())
            algbw = size / t / 1e9
            with open(path, "w") as f:
                json.dump({"bytes": size, "seconds": t, "algbw": algbw, "busbw": algbw * 2 * (n - 1) / n}, f)
    finally:
        dist.destroy_process_group()


def allreduce(torch, n, cfg):
    import torch.multiprocessing as mp

    try:
        with tempfile.TemporaryDirectory() as d:
            path = os.path.join(d, "allreduce.json")
            mp.spawn(allreduce_worker, args=(n, free_port(), cfg, path), nprocs=n, join=True)
            with open(path) as f:
                r = json.load(f)
    except Exception as exc:  # noqa: BLE001
        return {"metric": ALLREDUCE, "error": short_error(exc)}
    detail = "torch.distributed NCCL all_reduce, %d GPUs, %d MiB float32, median of %d; algbw %.1f GB/s, busbw = algbw x 2(n-1)/n" % (
        n,
        r["bytes"] >> 20,
        cfg["allreduce_iters"],
        r["algbw"],
    )
    return {"metric": ALLREDUCE, "value": r["busbw"], "detail": detail}


def main():
    out = {"tool": "pytorch", "version": None, "cuda": None, "nccl": None, "results": []}
    try:
        cfg = load_config()
    except Exception as exc:  # noqa: BLE001
        out["error"] = "bad config: " + short_error(exc)
        emit(out)
        return 2
    try:
        import torch
    except Exception as exc:  # noqa: BLE001
        out["unavailable"] = "PyTorch cannot be imported: " + short_error(exc)
        emit(out)
        return 0
    out["version"] = torch.__version__
    out["cuda"] = torch.version.cuda
    out["nccl"] = nccl_version(torch)
    if not torch.cuda.is_available():
        why = "a CPU-only build" if torch.version.cuda is None else "built for CUDA %s; no usable GPU or driver" % torch.version.cuda
        out["unavailable"] = "CUDA is not available to PyTorch (%s)" % why
        emit(out)
        return 0
    n = torch.cuda.device_count()
    if cfg["gpus"] and n != cfg["gpus"]:
        out["error"] = "CUDA sees %d GPUs (CUDA_VISIBLE_DEVICES=%s), the task has %d" % (
            n,
            os.environ.get("CUDA_VISIBLE_DEVICES", ""),
            cfg["gpus"],
        )
        emit(out)
        return 0

    gemm_detail = "%d^3 matmul, %d warm-up, median of %d" % (cfg["gemm_n"], cfg["warmup"], cfg["iters"])
    copy_detail = "%d MiB device-to-device copy, counted read + write (2 x bytes / t), median of %d" % (cfg["copy_bytes"] >> 20, cfg["iters"])
    host_detail = "%d MiB pinned, non_blocking copy, median of %d" % (cfg["host_bytes"] >> 20, cfg["iters"])
    results = out["results"]
    results.append(per_gpu(torch, BF16, n, lambda d: gemm(torch, d, torch.bfloat16, cfg), "bf16 " + gemm_detail))
    results.append(per_gpu(torch, FP16, n, lambda d: gemm(torch, d, torch.float16, cfg), "fp16 " + gemm_detail))
    results.append(per_gpu(torch, D2D, n, lambda d: device_copy(torch, d, cfg), copy_detail))
    results.append(per_gpu(torch, H2D, n, lambda d: host_copy(torch, d, cfg, True), "host to device, " + host_detail))
    results.append(per_gpu(torch, D2H, n, lambda d: host_copy(torch, d, cfg, False), "device to host, " + host_detail))
    if n > 1:
        results.append(allreduce(torch, n, cfg))
    emit(out)
    return 0


if __name__ == "__main__":
    sys.exit(main())
