"""Device benchmark: cupy <-> torch hand-offs and host <-> device copies through the hub.

Needs a CUDA device, cupy and a CUDA build of torch (``scripts/gpu-check`` runs it)::

    python benchmarks/device.py [--out device.json] [--repeats 9]

Each case times ``ih.convert`` and the direct call a user would write, in alternating
samples; a figure is the median of ``--repeats`` samples after two warm-up calls, with the
device synchronised before and after each sample. Exit status: 0 measured; 1 a check
failed (a wrong result, a plan whose zero-copy claim the buffer addresses contradict, a
host <-> device plan without its device move); 2 skipped: no CUDA device.
"""

from __future__ import annotations

import argparse
import gc
import json
import platform
import statistics
import sys
import time
import traceback
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

import numpy as np

import interchange_hub as ih

if TYPE_CHECKING:
    from collections.abc import Callable

MiB = 1 << 20
HANDOFF_SIZES = (MiB, 1024 * MiB)  # float32 data handed between cupy and torch
HANDOFF_CALLS = 100  # calls per sample: a zero-copy hand-off takes microseconds
COPY_SIZE = 256 * MiB  # float32 data copied between host and device
WARMUP = 2
SKIPPED = 2


@dataclass
class Row:
    case: str
    nbytes: int
    hub_s: float  # median seconds per call
    direct: str  # the direct call it is compared with
    direct_s: float
    zero_copy: bool  # by buffer address (never for host <-> device)
    plan_zero_copy: bool
    device_moves: int  # device-move steps in the hub's plan
    copy: bool  # a host <-> device copy: report GB/s rather than time per call

    @property
    def ratio(self) -> float:
        """hub ÷ direct time: 1.0 is as fast as the direct call, above 1 slower."""
        return self.hub_s / self.direct_s

    def as_dict(self) -> dict[str, Any]:
        row = dict(vars(self), ratio=self.ratio)
        if self.copy:
            row.update(hub_gbps=_gbps(self.nbytes, self.hub_s))
            row.update(direct_gbps=_gbps(self.nbytes, self.direct_s))
        return row


def load_gpu() -> tuple[Any, Any] | str:
    """``(cupy, torch)`` when both see a CUDA device, else why not."""
    try:
        import cupy
        import torch
    except ImportError as e:
        return f"{e.name} is not installed"
    if not torch.cuda.is_available():
        return f"torch {torch.__version__} sees no CUDA device"
    try:
        count = cupy.cuda.runtime.getDeviceCount()
    except (RuntimeError, OSError) as e:  # CUDARuntimeError: no driver or no device
        return f"cupy sees no CUDA device ({e})"
    return (cupy, torch) if count else "cupy sees no CUDA device"


def timed(
    hub: Callable[[], object],
    direct: Callable[[], object],
    sync: Callable[[], None],
    repeats: int,
    number: int = 1,
) -> tuple[float, float]:
    """Median seconds per call of ``hub`` and ``direct``, timed in alternating samples."""
    for _ in range(WARMUP):
        hub()
        direct()
    samples: dict[Callable[[], object], list[float]] = {hub: [], direct: []}
    for _ in range(repeats):
        for call, times in samples.items():
            gc.disable()
            try:
                sync()
                start = time.perf_counter()
                for _ in range(number):
                    call()
                sync()
                times.append((time.perf_counter() - start) / number)
            finally:
                gc.enable()
    return statistics.median(samples[hub]), statistics.median(samples[direct])


class Bench:
    """The cases, measured on the current CUDA device; ``rows`` and ``failures`` collect."""

    def __init__(self, cupy: Any, torch: Any, repeats: int) -> None:
        self.cupy, self.torch, self.repeats = cupy, torch, repeats
        self.rows: list[Row] = []
        self.failures: list[str] = []

    def sync(self) -> None:
        self.torch.cuda.synchronize()
        self.cupy.cuda.Device().synchronize()

    def check(self, ok: bool, what: str) -> None:
        if not ok:
            self.failures.append(what)
            print(f"FAILED: {what}", flush=True)

    def measure(
        self, case: str, obj: Any, to: str, direct: str, call: Callable[[], object], **kw: Any
    ) -> None:
        """Time ``ih.convert(obj, to=to)`` against ``call``; check the plan's claims."""
        number = 1 if kw["copy"] else HANDOFF_CALLS
        hub_s, direct_s = timed(
            lambda: ih.convert(obj, to=to), call, self.sync, self.repeats, number
        )
        plan = ih.plan(obj, to=to)
        row = Row(
            case,
            obj.nbytes,
            hub_s,
            direct,
            direct_s,
            plan_zero_copy=plan.zero_copy,
            device_moves=plan.device_moves,
            **kw,
        )
        self.check(
            row.plan_zero_copy == row.zero_copy,
            f"{case} {_size(row.nbytes)}: the plan "
            f"says zero-copy={plan.zero_copy}, buffer addresses say {row.zero_copy}",
        )
        if row.copy:
            self.check(plan.device_moves >= 1, f"{case}: the plan shows no device move\n{plan}")
        self.rows.append(row)

    def cupy_to_torch(self, nbytes: int) -> None:
        cupy, torch = self.cupy, self.torch
        x = cupy.arange(nbytes // 4, dtype=cupy.float32)
        t = ih.convert(x, to="torch")
        self.check(
            isinstance(t, torch.Tensor)
            and t.is_cuda
            and t.dtype == torch.float32
            and tuple(t.shape) == x.shape
            and t[-1].item() == float(x[-1]),
            f"cupy -> torch {_size(nbytes)}: wrong result {type(t)}",
        )
        self.measure(
            "cupy -> torch",
            x,
            "torch",
            "torch.from_dlpack(x)",
            lambda: torch.from_dlpack(x),
            zero_copy=t.data_ptr() == x.data.ptr,
            copy=False,
        )

    def torch_to_cupy(self, nbytes: int) -> None:
        cupy, torch = self.cupy, self.torch
        t = torch.rand(nbytes // 4, device="cuda", dtype=torch.float32)
        c = ih.convert(t, to="cupy")
        self.check(
            isinstance(c, cupy.ndarray)
            and c.dtype == cupy.float32
            and c.shape == tuple(t.shape)
            and float(c[-1]) == t[-1].item(),
            f"torch -> cupy {_size(nbytes)}: wrong result {type(c)}",
        )
        self.measure(
            "torch -> cupy",
            t,
            "cupy",
            "cupy.from_dlpack(t)",
            lambda: cupy.from_dlpack(t),
            zero_copy=c.data.ptr == t.data_ptr(),
            copy=False,
        )

    def host_device(self, nbytes: int) -> None:
        """host -> device and back: ``ih.convert`` against ``cupy.asarray`` and ``.get()``."""
        cupy = self.cupy
        host = np.random.default_rng(0).random(nbytes // 4, dtype=np.float32)
        print(ih.plan(host, to="cupy"), end="\n\n", flush=True)
        dev = ih.convert(host, to="cupy")
        self.check(
            isinstance(dev, cupy.ndarray) and bool(cupy.array_equal(dev, cupy.asarray(host))),
            f"host -> device: wrong result {type(dev)}",
        )
        self.measure(
            "host -> device",
            host,
            "cupy",
            "cupy.asarray(a)",
            lambda: cupy.asarray(host),
            zero_copy=False,
            copy=True,
        )
        back = ih.convert(dev, to="numpy")
        self.check(
            isinstance(back, np.ndarray) and np.array_equal(back, host),
            f"device -> host: wrong result {type(back)}",
        )
        self.measure("device -> host", dev, "numpy", "x.get()", dev.get, zero_copy=False, copy=True)

    def run(self) -> None:
        """Every case; one that raises is reported as a failure and the others still run."""
        cases = [(f, n) for n in HANDOFF_SIZES for f in (self.cupy_to_torch, self.torch_to_cupy)]
        for case, nbytes in [*cases, (self.host_device, COPY_SIZE)]:
            try:
                case(nbytes)
            except Exception as e:  # noqa: BLE001 - report it, measure the other cases
                traceback.print_exc()
                self.check(False, f"{case.__name__} {_size(nbytes)} raised {type(e).__name__}: {e}")


def table(rows: list[Row]) -> str:
    head = ("case", "size", "hub", "direct call", "direct", "hub/direct", "zero-copy (plan)")
    lines = [head]
    for r in rows:
        verdict = f"{_yes(r.zero_copy)} ({_yes(r.plan_zero_copy)})"
        lines.append(
            (
                r.case,
                _size(r.nbytes),
                _figure(r, r.hub_s),
                r.direct,
                _figure(r, r.direct_s),
                f"{r.ratio:.2f}",
                verdict,
            )
        )
    widths = [max(len(line[i]) for line in lines) for i in range(len(head))]
    return "\n".join(
        "  ".join(c.ljust(w) for c, w in zip(line, widths, strict=True)).rstrip() for line in lines
    )


def environment(cupy: Any, torch: Any, repeats: int) -> dict[str, Any]:
    return {
        "python": platform.python_version(),
        "numpy": np.__version__,
        "cupy": cupy.__version__,
        "torch": torch.__version__,
        "torch_cuda": torch.version.cuda,
        "gpu": torch.cuda.get_device_name(0),
        "interchange_hub": getattr(ih, "__version__", "?"),
        "repeats": repeats,
        "warmup": WARMUP,
        "handoff_calls_per_sample": HANDOFF_CALLS,
    }


def _figure(row: Row, seconds: float) -> str:
    """GB/s for a copy, time per call for a hand-off."""
    return f"{_gbps(row.nbytes, seconds):.1f} GB/s" if row.copy else _time(seconds)


def _gbps(nbytes: int, seconds: float) -> float:
    return nbytes / seconds / 1e9


def _time(seconds: float) -> str:
    return f"{seconds * 1e6:.1f} µs" if seconds < 1e-3 else f"{seconds * 1e3:.2f} ms"


def _size(nbytes: int) -> str:
    return f"{nbytes // MiB} MiB" if nbytes < 1024 * MiB else f"{nbytes // (1024 * MiB)} GiB"


def _yes(flag: bool) -> str:
    return "yes" if flag else "no"


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--out", type=Path, help="also write the results as JSON to this file")
    parser.add_argument("--repeats", type=int, default=9, help="samples per median (default 9)")
    args = parser.parse_args(argv)
    gpu = load_gpu()
    if isinstance(gpu, str):
        print(f"skipped: no CUDA device ({gpu})", flush=True)
        return SKIPPED
    cupy, torch = gpu
    env = environment(cupy, torch, args.repeats)
    print(", ".join(f"{k} {v}" for k, v in env.items()), end="\n\n", flush=True)
    bench = Bench(cupy, torch, args.repeats)
    bench.run()
    rows, failures = bench.rows, bench.failures
    print(table(rows))
    print("\nhub/direct: hub time ÷ direct time (1.00: as fast; copies: direct GB/s ÷ hub GB/s)")
    if args.out:
        result = {"environment": env, "rows": [r.as_dict() for r in rows], "failures": failures}
        args.out.write_text(json.dumps(result, indent=2) + "\n")
        print(f"wrote {args.out}")
    if failures:
        print(f"{len(failures)} check(s) failed:", *failures, sep="\n  ")
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
