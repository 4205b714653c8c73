#!/usr/bin/env python3
"""Suanli's PyTorch load generator for benchmark tasks.

The node agent embeds this file, writes it to a temporary directory and runs
it with python3, with CUDA_VISIBLE_DEVICES set to the task's GPUs (by UUID,
in the task's order, so CUDA device i is the task's GPU i). Its argument (or
stdin) is a JSON config; every key is optional (DEFAULTS below):

    {"gpus": 8, "shapes": [[4096, 4096, 4096], [8192, 8192, 8192], ...],
     "sustain_s": 10, "cpus": [[0, 1, ...], ...], "numa": [0, 0, 1, ...],
     "allreduce_min_bytes": 1048576, "allreduce_max_bytes": 1073741824, ...}

It prints ONE JSON object on stdout, and nothing else:

    {"tool": "pytorch", "version": torch.__version__, "cuda": "12.4",
     "nccl": "2.21.5", "device": "cuda", "results": [{"metric":
     "bf16_gemm_tflops", "value": 741.2, "per_gpu": [...], "best": 771.0,
     "best_per_gpu": [...], "sustained_s": 10.02, "concurrent": true,
     "sweep": [...], "detail": "..."}, ...]}

A result that could not be measured carries "error" instead of a value.
When PyTorch or CUDA is missing the object carries "unavailable" (the
reason) and no results; a run that cannot start carries "error".

Methodology (GB/s means 10^9 bytes/s):

- GEMM, per dtype (bf16, fp16), on every GPU AT ONCE (one thread per GPU,
  started together), so that the node's power and cooling limits show:
  1. A sweep of a few shapes (m x n x k), as ml-engineering's MAMF finder
     does: warm-up, then timed iterations, each on freshly re-randomised
     inputs with the L2 cache flushed (a buffer of twice its size written)
     before it; only the matmul sits between the CUDA events. A shape's
     figure is the median of its iterations, 2 m n k / t; "best" is the
     best shape's.
  2. A sustained run of the best shape for sustain_s seconds (10 by
     default), matmuls back to back as a training step issues them, timed
     in batches of about batch_s; "value" (the headline the server keeps)
     is the median batch rate, the sustained median; "sustained_s" how long
     the run really lasted (the shortest GPU's). Clocks that drop as the
     GPUs heat up or hit their power limit lower it.
  "value" and "best" are medians over GPUs; per_gpu and best_per_gpu each
  GPU's.
- Device memory bandwidth: a device-to-device copy of copy_bytes within
  each GPU, all GPUs at once, counted as read plus write: 2 x bytes / t.
- Host <-> device: non_blocking copies between pinned host memory
  (torch.empty(pin_memory=True)) and one GPU at a time, bytes / t. The
  thread doing it is first bound to the GPU's own CPUs ("cpus", from the
  agent: the GPU's NUMA node), so that the pinned pages are allocated on
  that node and the copy does not cross the socket interconnect.
- All-reduce (more than one GPU): torch.distributed with the NCCL backend,
  one process per GPU, message sizes from allreduce_min_bytes to
  allreduce_max_bytes (1 GiB) doubling, timed as nccl-tests times them:
  allreduce_warmup untimed operations, then allreduce_iters back to back
  between one pair of events, t = elapsed / iters, averaged over ranks;
  algbw = bytes / t, busbw = algbw x 2 (n - 1) / n. "value" is the plateau:
  the highest busbw among the sizes of at least plateau_min_bytes.

Every process this script starts asks the kernel to kill it when its parent
dies (PR_SET_PDEATHSIG), as the agent does for this script: a SIGKILLed
agent leaves no load running on a GPU someone has rented.

"device": "cpu" (tests only) runs the same code on the CPU with wall-clock
timing, to test the method where there is no GPU; its figures are not GPU
figures and the agent refuses them.
"""

import ctypes
import json
import os
import signal
import socket
import statistics
import sys
import tempfile
import threading
import time
import traceback

BF16 = "bf16_gemm_tflops"
FP16 = "fp16_gemm_tflops"
D2D = "d2d_bw_gbps"
H2D = "h2d_bw_gbps"
D2H = "d2h_bw_gbps"
ALLREDUCE = "allreduce_busbw_gbps"

DEFAULTS = {
    "gpus": 0,
    "device": "cuda",
    # MAMF-style sweep: a few shapes around where cuBLAS peaks on data-centre
    # GPUs (multiples of 256, large enough to fill every SM).
    "shapes": [[4096, 4096, 4096], [8192, 8192, 8192], [16384, 8192, 8192], [8192, 8192, 16384]],
    "warmup": 10,
    "iters": 30,
    "flush_bytes": 0,  # 0: twice the L2 cache (256 MiB if unknown)
    "sustain_s": 10.0,
    "batch_s": 0.1,
    "copy_bytes": 1 << 30,
    "host_bytes": 256 << 20,
    "copy_iters": 30,
    "cpus": None,  # per GPU, the CPUs of its NUMA node
    "numa": None,  # per GPU, its NUMA node (for the detail only)
    "allreduce_min_bytes": 1 << 20,
    "allreduce_max_bytes": 1 << 30,
    "plateau_min_bytes": 256 << 20,
    "allreduce_warmup": 5,
    "allreduce_iters": 20,
    "allreduce_timeout_s": 300,
}

PR_SET_PDEATHSIG = 1


def die_with_parent():
    """Asks Linux to SIGKILL this process when its parent dies."""
    try:
        libc = ctypes.CDLL(None, use_errno=True)
        libc.prctl(PR_SET_PDEATHSIG, signal.SIGKILL, 0, 0, 0)
    except Exception:  # noqa: BLE001 - not Linux: nothing to ask
        pass


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
    except Exception:  # noqa: BLE001
        return None
    if isinstance(v, tuple):
        return ".".join(str(x) for x in v[:3])
    if isinstance(v, int):  # older PyTorch: 2708 is 2.7.8, 21903 is 2.19.3
        if v >= 10000:
            return "%d.%d.%d" % (v // 10000, v // 100 % 100, v % 100)
        return "%d.%d.%d" % (v // 1000, v // 100 % 10, v % 100)
    return str(v)


class Device:
    """One GPU (or, in tests, the CPU standing in for one): where tensors
    go, and how time on it is measured."""

    def __init__(self, torch, kind, index):
        self.torch = torch
        self.kind = kind
        self.index = index
        self.dev = torch.device("cuda", index) if kind == "cuda" else torch.device("cpu")

    def bind(self):
        if self.kind == "cuda":
            self.torch.cuda.set_device(self.index)

    def sync(self):
        if self.kind == "cuda":
            self.torch.cuda.synchronize(self.index)

    def mark(self):
        """A point in the device's stream: a CUDA event, or the wall clock
        after what was queued is done."""
        if self.kind == "cuda":
            e = self.torch.cuda.Event(enable_timing=True)
            e.record()
            return e
        return time.perf_counter()

    def seconds(self, start, end):
        """Time between two marks, after a sync."""
        if self.kind == "cuda":
            return start.elapsed_time(end) / 1e3
        return end - start

    def l2_bytes(self):
        if self.kind != "cuda":
            return 0
        props = self.torch.cuda.get_device_properties(self.index)
        return int(getattr(props, "L2_cache_size", 0) or 0)

    def empty_cache(self):
        if self.kind == "cuda":
            try:
                self.torch.cuda.empty_cache()
            except Exception:  # noqa: BLE001 - a broken context fails the next load too
                pass


def all_at_once(devices, fn):
    """Runs fn(device, barrier) on every device at once, one thread each,
    and returns each one's result or its exception, in device order. The
    barrier lets the threads start their timed phases together."""
    results = [None] * len(devices)
    barrier = threading.Barrier(len(devices))

    def run(i, d):
        try:
            d.bind()
            results[i] = fn(d, barrier)
        except Exception as exc:  # noqa: BLE001 - reported per GPU
            barrier.abort()  # the others must not wait for this one
            results[i] = exc

    threads = [threading.Thread(target=run, args=(i, d), daemon=True) for i, d in enumerate(devices)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    return results


def first_error(results):
    """The first real failure among the threads' results (a broken barrier
    only says another thread failed)."""
    errs = [(i, r) for i, r in enumerate(results) if isinstance(r, Exception)]
    for i, r in errs:
        if not isinstance(r, threading.BrokenBarrierError):
            return "GPU %d: %s" % (i, short_error(r))
    if errs:
        return "GPU %d: %s" % (errs[0][0], short_error(errs[0][1]))
    return None


def gemm_shape(torch, d, dtype, shape, cfg, flush):
    """MAMF-style timing of one shape: TFLOPS from the median iteration,
    each on re-randomised inputs with L2 flushed before it."""
    m, n, k = shape
    a = torch.randn(m, k, device=d.dev, dtype=dtype)
    b = torch.randn(k, n, device=d.dev, dtype=dtype)
    c = torch.empty(m, n, device=d.dev, dtype=dtype)
    for _ in range(cfg["warmup"]):
        torch.matmul(a, b, out=c)
    d.sync()
    marks = []
    for _ in range(cfg["iters"]):
        a.normal_()
        b.normal_()
        if flush is not None:
            flush.zero_()
        s = d.mark()
        torch.matmul(a, b, out=c)
        if d.kind != "cuda":
            d.sync()
        marks.append((s, d.mark()))
    d.sync()
    t = statistics.median(d.seconds(s, e) for s, e in marks)
    del a, b, c
    return 2 * m * n * k / t / 1e12


def gemm_sustained(torch, d, dtype, shape, per_iter_s, cfg):
    """Back-to-back matmuls of one shape for sustain_s seconds, timed in
    batches of about batch_s: the batch rates, in order, and how long the
    run lasted (wall clock, until the device finished)."""
    m, n, k = shape
    pairs = [(torch.randn(m, k, device=d.dev, dtype=dtype), torch.randn(k, n, device=d.dev, dtype=dtype)) for _ in range(2)]
    c = torch.empty(m, n, device=d.dev, dtype=dtype)
    batch = max(1, int(cfg["batch_s"] / max(per_iter_s, 1e-9)))
    flops = 2 * m * n * k * batch
    marks = []
    start = time.perf_counter()
    i = 0
    while time.perf_counter() - start < cfg["sustain_s"]:
        s = d.mark()
        for _ in range(batch):
            a, b = pairs[i % 2]
            torch.matmul(a, b, out=c)
            i += 1
        marks.append((s, d.mark()))
        if d.kind == "cuda" and len(marks) > 2:
            marks[-3][1].synchronize()  # stay at most two batches ahead of the GPU
    d.sync()
    elapsed = time.perf_counter() - start
    rates = [flops / d.seconds(s, e) / 1e12 for s, e in marks]
    del pairs, c
    return rates, elapsed


def gemm(torch, devices, metric, dtype, name, cfg):
    """The sweep then the sustained run, of one dtype, on every GPU at once."""
    shapes = [tuple(int(x) for x in s) for s in cfg["shapes"]]

    def run(d, barrier):
        flush = None
        if d.kind == "cuda":
            size = cfg["flush_bytes"] or max(2 * d.l2_bytes(), 256 << 20)
            flush = torch.empty(size, dtype=torch.uint8, device=d.dev)
        barrier.wait()
        sweep = [gemm_shape(torch, d, dtype, s, cfg, flush) for s in shapes]
        del flush
        best_i = max(range(len(shapes)), key=lambda i: sweep[i])
        m, n, k = shapes[best_i]
        per_iter = 2 * m * n * k / (sweep[best_i] * 1e12)
        barrier.wait()  # every GPU starts its sustained load together
        rates, elapsed = gemm_sustained(torch, d, dtype, shapes[best_i], per_iter, cfg)
        d.empty_cache()
        return {"sweep": sweep, "best": sweep[best_i], "shape": shapes[best_i], "rates": rates, "elapsed": elapsed}

    results = all_at_once(devices, run)
    err = first_error(results)
    if err:
        for d in devices:
            d.empty_cache()
        return {"metric": metric, "error": err}
    best = [r["best"] for r in results]
    sustained = [statistics.median(r["rates"]) for r in results]
    sweep = []
    for i, s in enumerate(shapes):
        sweep.append({"shape": "%dx%dx%d" % s, "value": statistics.median(r["sweep"][i] for r in results)})
    shape = results[0]["shape"]
    elapsed = min(r["elapsed"] for r in results)
    detail = (
        "%s matmul on %d GPU%s at once; sweep of %s (%d warm-up, median of %d, inputs re-randomised%s before each); "
        "best %.1f TFLOPS at %dx%dx%d; sustained %.0fs back to back, median of %d batches"
        % (
            name,
            len(devices),
            "" if len(devices) == 1 else "s",
            ", ".join(p["shape"] for p in sweep),
            cfg["warmup"],
            cfg["iters"],
            " and L2 flushed" if devices[0].kind == "cuda" else "",
            statistics.median(best),
            shape[0],
            shape[1],
            shape[2],
            elapsed,
            statistics.median(len(r["rates"]) for r in results),
        )
    )
    return {
        "metric": metric,
        "value": statistics.median(sustained),
        "per_gpu": sustained,
        "best": statistics.median(best),
        "best_per_gpu": best,
        "sustained_s": elapsed,
        "concurrent": True,
        "sweep": sweep,
        "detail": detail,
    }


def timed_median(d, fn, warmup, iters):
    for _ in range(warmup):
        fn()
    d.sync()
    marks = []
    for _ in range(iters):
        s = d.mark()
        fn()
        if d.kind != "cuda":
            d.sync()
        marks.append((s, d.mark()))
    d.sync()
    return statistics.median(d.seconds(s, e) for s, e in marks)


def device_copy(torch, devices, cfg):
    size = cfg["copy_bytes"]

    def run(d, barrier):
        src = torch.empty(size, dtype=torch.uint8, device=d.dev)
        dst = torch.empty(size, dtype=torch.uint8, device=d.dev)
        src.fill_(1)
        barrier.wait()
        t = timed_median(d, lambda: dst.copy_(src), 5, cfg["copy_iters"])
        del src, dst
        d.empty_cache()
        return 2 * size / t / 1e9

    results = all_at_once(devices, run)
    err = first_error(results)
    if err:
        return {"metric": D2D, "error": err}
    detail = "%d MiB device-to-device copy on %d GPU%s at once, counted read + write (2 x bytes / t), median of %d" % (
        size >> 20,
        len(devices),
        "" if len(devices) == 1 else "s",
        cfg["copy_iters"],
    )
    return {"metric": D2D, "value": statistics.median(results), "per_gpu": results, "concurrent": True, "detail": detail}


def bind_cpus(cfg, i):
    """Binds the calling thread to GPU i's CPUs; says to which NUMA node,
    or why not."""
    cpus = cfg["cpus"][i] if cfg["cpus"] and i < len(cfg["cpus"]) else None
    if not cpus:
        return "not NUMA-pinned (the GPU's CPUs are unknown)"
    try:
        os.sched_setaffinity(0, set(int(c) for c in cpus))  # 0: this thread
    except (OSError, ValueError, AttributeError) as exc:
        return "not NUMA-pinned (%s)" % short_error(exc)
    node = cfg["numa"][i] if cfg["numa"] and i < len(cfg["numa"]) else None
    if node is None or node < 0:
        return "pinned to the GPU's %d CPUs" % len(cpus)
    return "pinned to NUMA node %d" % node


def host_copies(torch, devices, cfg):
    """Host to device and back, one GPU at a time, each from a thread
    bound to the GPU's NUMA node: (h2d, d2h) results."""
    size = cfg["host_bytes"]
    h2d, d2h, where = [], [], []

    def run(d, i):
        where.append(bind_cpus(cfg, i))
        host = torch.empty(size, dtype=torch.uint8, pin_memory=d.kind == "cuda")
        host.fill_(1)  # first touch, on this node
        dev = torch.empty(size, dtype=torch.uint8, device=d.dev)
        h2d.append(size / timed_median(d, lambda: dev.copy_(host, non_blocking=True), 5, cfg["copy_iters"]) / 1e9)
        d2h.append(size / timed_median(d, lambda: host.copy_(dev, non_blocking=True), 5, cfg["copy_iters"]) / 1e9)
        del host, dev
        d.empty_cache()

    for i, d in enumerate(devices):
        box = []

        def one(d=d, i=i):
            try:
                d.bind()
                run(d, i)
            except Exception as exc:  # noqa: BLE001
                box.append(exc)

        t = threading.Thread(target=one, daemon=True)  # its own thread: the binding stays with it
        t.start()
        t.join()
        if box:
            err = "GPU %d: %s" % (i, short_error(box[0]))
            return {"metric": H2D, "error": err}, {"metric": D2H, "error": err}
    pinned = sorted(set(where))
    detail = "%d MiB pinned, non_blocking copy, one GPU at a time, median of %d; %s" % (
        size >> 20,
        cfg["copy_iters"],
        "; ".join(pinned),
    )
    return (
        {"metric": H2D, "value": statistics.median(h2d), "per_gpu": h2d, "detail": "host to device, " + detail},
        {"metric": D2H, "value": statistics.median(d2h), "per_gpu": d2h, "detail": "device to host, " + detail},
    )


def free_port():
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def allreduce_sizes(cfg):
    sizes = []
    size = max(4, int(cfg["allreduce_min_bytes"]) // 4 * 4)
    top = max(size, int(cfg["allreduce_max_bytes"]) // 4 * 4)
    while size < top:
        sizes.append(size)
        size *= 2
    sizes.append(top)
    return sizes


def busbw_of(size, seconds, n):
    algbw = size / seconds / 1e9
    return algbw, algbw * 2 * (n - 1) / n


def allreduce_worker(rank, n, port, cfg, path):
    import datetime

    import torch
    import torch.distributed as dist

    die_with_parent()
    d = Device(torch, cfg["device"], rank)
    d.bind()
    dist.init_process_group(
        "nccl" if d.kind == "cuda" else "gloo",
        init_method="tcp://127.0.0.1:%d" % port,
        rank=rank,
        world_size=n,
        timeout=datetime.timedelta(seconds=cfg["allreduce_timeout_s"]),
    )
    try:
        sizes = allreduce_sizes(cfg)
        # Zeros: repeated sums of anything else overflow to inf (the speed
        # is the same, but a reader of the buffer would wonder).
        buf = torch.zeros(sizes[-1] // 4, dtype=torch.float32, device=d.dev)
        points = []
        for size in sizes:
            x = buf[: size // 4]
            for _ in range(cfg["allreduce_warmup"]):
                dist.all_reduce(x)
            d.sync()
            dist.barrier()
            s = d.mark()
            for _ in range(cfg["allreduce_iters"]):
                dist.all_reduce(x)
            e = d.mark()
            d.sync()
            t = torch.tensor([d.seconds(s, e) / cfg["allreduce_iters"]], dtype=torch.float64, device=d.dev)
            dist.all_reduce(t)  # nccl-tests' default: the ranks' average time
            points.append((size, t.item() / n))
        if rank == 0:
            with open(path, "w") as f:
                json.dump(points, f)
    finally:
        dist.destroy_process_group()


def allreduce(torch, n, cfg):
    import torch.multiprocessing as mp

    try:
        with tempfile.TemporaryDirectory() as tmp:
            path = os.path.join(tmp, "allreduce.json")
            mp.spawn(allreduce_worker, args=(n, free_port(), cfg, path), nprocs=n, join=True)
            with open(path) as f:
                points = json.load(f)
    except Exception as exc:  # noqa: BLE001
        return {"metric": ALLREDUCE, "error": short_error(exc)}
    sweep = []
    for size, t in points:
        algbw, busbw = busbw_of(size, t, n)
        sweep.append({"bytes": size, "time_us": t * 1e6, "algbw": algbw, "busbw": busbw})
    plateau = [p for p in sweep if p["bytes"] >= cfg["plateau_min_bytes"]] or sweep[-1:]
    top = max(plateau, key=lambda p: p["busbw"])
    detail = (
        "torch.distributed %s all_reduce, %d GPUs, float32 %s to %s doubling, timed as nccl-tests: %d warm-up, "
        "%d back to back, time averaged over ranks; busbw = algbw x 2(n-1)/n; plateau %.1f GB/s at %s (algbw %.1f)"
        % (
            "NCCL" if cfg["device"] == "cuda" else "gloo",
            n,
            human_bytes(sweep[0]["bytes"]),
            human_bytes(sweep[-1]["bytes"]),
            cfg["allreduce_warmup"],
            cfg["allreduce_iters"],
            top["busbw"],
            human_bytes(top["bytes"]),
            top["algbw"],
        )
    )
    return {"metric": ALLREDUCE, "value": top["busbw"], "sweep": sweep, "detail": detail}


def human_bytes(b):
    for unit, shift in (("GiB", 30), ("MiB", 20), ("KiB", 10)):
        if b >= 1 << shift and b % (1 << shift) == 0:
            return "%d %s" % (b >> shift, unit)
    return "%d B" % b


def main():
    die_with_parent()
    out = {"tool": "pytorch", "version": None, "cuda": None, "nccl": None, "device": None, "results": []}
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
    kind = out["device"] = cfg["device"]
    if kind == "cuda":
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
    elif kind == "cpu":
        n = max(1, int(cfg["gpus"]))
    else:
        out["error"] = "bad config: device %r" % kind
        emit(out)
        return 2

    devices = [Device(torch, kind, i) for i in range(n)]
    results = out["results"]
    results.append(gemm(torch, devices, BF16, torch.bfloat16, "bf16", cfg))
    results.append(gemm(torch, devices, FP16, torch.float16, "fp16", cfg))
    results.append(device_copy(torch, devices, cfg))
    results.extend(host_copies(torch, devices, cfg))
    if n > 1:
        results.append(allreduce(torch, n, cfg))
    emit(out)
    return 0


if __name__ == "__main__":
    sys.exit(main())
