#!/usr/bin/env python3
"""suanli-verify: checks the rented GPUs from inside the rental's container.

It reads the GPUs' identity (UUID, name) and health through NVML from
inside the container (the NVIDIA runtime mounts libnvidia-ml.so.1), runs a
short BF16 GEMM on each GPU where the image has PyTorch with CUDA, and
posts the result to the marketplace with the rental's own credential
(SUANLI_VERIFY_URL, SUANLI_VERIFY_TOKEN, set in the container at launch).
The marketplace shows the results on the offer as renter-measured figures
(platform-audited for its own audit rentals).

It needs only Python 3's standard library (PyTorch is optional: without
it the result says the GEMM could not run). On a simulated node there is
no GPU in the container: it says so and reports the GPUs the launcher
named as simulated, measuring nothing.

    suanli-verify              check, measure and post
    suanli-verify --no-post    print the result only
    suanli-verify --seconds 5  GEMM time per GPU (default 3)
"""

import ctypes
import json
import os
import sys
import time
import urllib.error
import urllib.request

VERSION = 1

# NVML return codes (nvml.h).
NVML_SUCCESS = 0
NVML_ERROR_NOT_SUPPORTED = 3
NVML_ERROR_NO_PERMISSION = 4
NVML_ERROR_GPU_IS_LOST = 15
NVML_ERROR_RESET_REQUIRED = 16
NVML_ERROR_UNKNOWN = 999
# Errors that mean the GPU itself is in trouble (not that the query is
# unavailable): the agent's health rule fails a GPU on them too.
FATAL = {NVML_ERROR_GPU_IS_LOST: "GPU is lost", NVML_ERROR_RESET_REQUIRED: "GPU needs a reset", NVML_ERROR_UNKNOWN: "NVML unknown error"}


def log(msg):
    print("suanli-verify: " + msg, file=sys.stderr, flush=True)


class NVML:
    """The few NVML calls the verifier needs, through ctypes."""

    def __init__(self):
        self.lib = ctypes.CDLL("libnvidia-ml.so.1")
        # No other NVML call may follow a failed init.
        rc = self.lib.nvmlInit_v2()
        if rc != NVML_SUCCESS:
            raise OSError("nvmlInit_v2 returned %d" % rc)

    def count(self):
        n = ctypes.c_uint(0)
        rc = self.lib.nvmlDeviceGetCount_v2(ctypes.byref(n))
        if rc != NVML_SUCCESS:
            raise OSError("nvmlDeviceGetCount_v2 returned %d" % rc)
        return n.value

    def handle(self, i):
        h = ctypes.c_void_p()
        return self.lib.nvmlDeviceGetHandleByIndex_v2(ctypes.c_uint(i), ctypes.byref(h)), h

    def string(self, fn, h):
        buf = ctypes.create_string_buffer(96)
        rc = getattr(self.lib, fn)(h, buf, ctypes.c_uint(96))
        return rc, buf.value.decode("utf-8", "replace")

    def gpu(self, i):
        """One GPU's identity and health verdict."""
        rc, h = self.handle(i)
        if rc != NVML_SUCCESS:
            return {"uuid": "", "name": "", "health": "failing", "problems": ["index %d: no handle (NVML %d)" % (i, rc)], "bf16_tflops": None}
        problems = []
        rc, uuid = self.string("nvmlDeviceGetUUID", h)
        if rc != NVML_SUCCESS:
            problems.append("UUID unreadable (NVML %d)" % rc)
        _, name = self.string("nvmlDeviceGetName", h)

        def read(what, rc):
            if rc in FATAL:
                problems.append("%s: %s" % (what, FATAL[rc]))
            return rc == NVML_SUCCESS

        temp = ctypes.c_uint(0)
        if read("temperature", self.lib.nvmlDeviceGetTemperature(h, 0, ctypes.byref(temp))) and temp.value >= 95:
            problems.append("temperature %d °C" % temp.value)
        ecc = ctypes.c_ulonglong(0)
        # Uncorrected (1) errors since the driver loaded (volatile, 0).
        if read("ECC", self.lib.nvmlDeviceGetTotalEccErrors(h, 1, 0, ctypes.byref(ecc))) and ecc.value > 0:
            problems.append("%d uncorrected ECC errors" % ecc.value)
        corr, unc, pending, failure = ctypes.c_uint(0), ctypes.c_uint(0), ctypes.c_uint(0), ctypes.c_uint(0)
        if read("row remapping", self.lib.nvmlDeviceGetRemappedRows(h, ctypes.byref(corr), ctypes.byref(unc), ctypes.byref(pending), ctypes.byref(failure))) and failure.value:
            problems.append("row remapping failed")
        return {"uuid": uuid, "name": name, "health": "failing" if problems else "ok", "problems": problems, "bf16_tflops": None}


def gemm(gpus, seconds):
    """Runs a BF16 GEMM on each GPU (matched to torch's devices by UUID)
    and sets its median TFLOPS; returns what happened."""
    os.environ.setdefault("CUDA_DEVICE_ORDER", "PCI_BUS_ID")
    try:
        import torch  # noqa: PLC0415 (optional)
    except Exception as e:  # noqa: BLE001
        return "not run: no PyTorch in this image (%s)" % type(e).__name__
    if not torch.cuda.is_available():
        return "not run: PyTorch %s sees no CUDA device" % torch.__version__
    devices = {}
    for d in range(torch.cuda.device_count()):
        props = torch.cuda.get_device_properties(d)
        u = str(getattr(props, "uuid", "") or "")
        devices["GPU-" + u if u and not u.startswith("GPU-") else u] = d
    n = 8192
    for i, g in enumerate(gpus):
        d = devices.get(g["uuid"], i if len(devices) == len(gpus) else None)
        if d is None:
            continue
        dev = torch.device("cuda", d)
        a = torch.randn(n, n, device=dev, dtype=torch.bfloat16)
        b = torch.randn(n, n, device=dev, dtype=torch.bfloat16)
        for _ in range(3):
            torch.matmul(a, b)
        torch.cuda.synchronize(dev)
        rates = []
        end = time.monotonic() + seconds
        while time.monotonic() < end or len(rates) < 3:
            start, stop = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
            start.record()
            for _ in range(10):
                torch.matmul(a, b)
            stop.record()
            stop.synchronize()
            ms = start.elapsed_time(stop)
            rates.append(2 * n ** 3 * 10 / (ms / 1e3) / 1e12)
        rates.sort()
        g["bf16_tflops"] = round(rates[len(rates) // 2], 2)
    return "ran"


def collect(seconds):
    """The report: NVML's view of the GPUs, or the simulated identity."""
    try:
        nvml = NVML()
    except OSError as e:
        sim = setting("SUANLI_VERIFY_SIMULATED_UUIDS")
        if sim:
            name = setting("SUANLI_VERIFY_SIMULATED_NAME")
            gpus = [{"uuid": u, "name": name, "health": "unread", "problems": [], "bf16_tflops": None} for u in sim.split(",") if u]
            return {"version": VERSION, "simulated": True, "nvml": "unavailable (%s): a simulated node, whose GPUs are not in this container" % e,
                    "gpus": gpus, "gemm": "not run: simulated GPUs cannot be measured"}
        return {"version": VERSION, "simulated": False, "nvml": "unavailable (%s)" % e, "gpus": [], "gemm": "not run: no GPU"}
    gpus = [nvml.gpu(i) for i in range(nvml.count())]
    try:
        note = gemm(gpus, seconds)
    except Exception as e:  # noqa: BLE001 (a GEMM that fails is reported, not hidden)
        note = "failed: %s" % e
    return {"version": VERSION, "simulated": False, "nvml": "ok", "gpus": gpus, "gemm": note}


def post(report, url, token, patience):
    """Posts the report, retrying while the server is unreachable or the
    rental is still starting (409), for up to patience seconds."""
    body = json.dumps(report).encode()
    deadline = time.monotonic() + patience
    wait = 1.0
    while True:
        req = urllib.request.Request(url, data=body, method="POST", headers={"Content-Type": "application/json", "Authorization": "Bearer " + token})
        try:
            with urllib.request.urlopen(req, timeout=30) as r:
                return r.status, r.read().decode("utf-8", "replace")
        except urllib.error.HTTPError as e:
            status, text = e.code, e.read().decode("utf-8", "replace")
            if status not in (409, 429, 502, 503, 504) or time.monotonic() > deadline:
                return status, text
        except (urllib.error.URLError, OSError) as e:
            if time.monotonic() > deadline:
                return 0, str(e)
        time.sleep(wait)
        wait = min(wait * 2, 15)


def setting(name):
    """A SUANLI_VERIFY_* setting: from the environment, else from the file
    the container's init wrote from the environment the launcher gave it
    (root's only): an SSH command that is no login shell does not get
    that environment."""
    v = os.environ.get(name, "")
    if v:
        return v
    try:
        with open("/.suanli/verify.env", encoding="utf-8") as f:
            for line in f:
                k, _, val = line.rstrip("\n").partition("=")
                if k == name:
                    return val
    except OSError:
        pass
    return ""


def main(argv):
    seconds, send, patience = 3.0, True, 30
    args = list(argv)
    while args:
        a = args.pop(0)
        if a == "--no-post":
            send = False
        elif a == "--seconds" and args:
            seconds = float(args.pop(0))
        elif a == "--at-start":
            # At the container's start the server may not have marked the
            # rental running yet: be patient.
            patience = 300
        else:
            print(__doc__, file=sys.stderr)
            return 2
    report = collect(seconds)
    print(json.dumps(report, indent=2), flush=True)
    if report["simulated"]:
        log("no NVML in this container: the node is simulated; reporting its GPUs as simulated, measuring nothing")
    elif not report["gpus"]:
        log("no NVML in this container (%s): is it running with the rented GPUs?" % report["nvml"])
        return 1
    if not send:
        return 0
    url, token = setting("SUANLI_VERIFY_URL"), setting("SUANLI_VERIFY_TOKEN")
    if not url or not token:
        log("SUANLI_VERIFY_URL and SUANLI_VERIFY_TOKEN are not set (they are in a Suanli rental's environment); not posting")
        return 1
    status, text = post(report, url, token, patience)
    if 200 <= status < 300:
        log("result recorded: " + text.strip())
        return 0
    log("the marketplace refused the result (%s): %s" % (status or "unreachable", text.strip()))
    return 1


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
