"""Benchmark interchange_hub against the direct calls, narwhals and the route through pandas.

    python benchmarks/run.py --quick                      # about a minute
    python benchmarks/run.py                              # full sizes (see README.md)
    python benchmarks/run.py --compare benchmarks/baseline.json
    python benchmarks/run.py --compare benchmarks/baseline.json --current results.json
    python benchmarks/run.py --pairs pandas:polars,numpy:torch --sizes 1e3 1e6

Writes results.json, report.md and heatmap.png to --out. Exit status: 0; 1 when
--compare finds a case whose hub ÷ direct ratio grew more than 25% and more than 1 µs
(re-measured up to three times with longer budgets, then measured on this machine with
the baseline's own commit and this one, before it counts), heavy modules are imported by
``import interchange_hub`` or a case of a plugin library (jax, datasets, xarray) raised
an error other than an InterchangeError; 2 for bad arguments.
"""

from __future__ import annotations

import argparse
import os
import signal
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import TYPE_CHECKING, Any

import bench
import report

if TYPE_CHECKING:
    from collections.abc import Callable

HERE = Path(__file__).resolve().parent


def _sizes(values: list[str]) -> list[int]:
    sizes = []
    for value in values:
        for item in value.split(","):
            if item.strip():
                size = int(float(item))
                if size < 1:
                    raise argparse.ArgumentTypeError(f"sizes are positive, got {item!r}")
                sizes.append(size)
    return sizes


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument(
        "--quick", action="store_true", help="small sizes, few repeats (about 1 min)"
    )
    parser.add_argument("--sizes", nargs="+", help="row counts, e.g. 1e3 1e6 (or 1e3,1e6)")
    parser.add_argument("--shapes", help=f"comma-separated subset of {','.join(bench.SHAPES)}")
    parser.add_argument("--pairs", help="SRC:DST,... (default: every installed ordered pair)")
    parser.add_argument("--out", type=Path, default=HERE / "results", help="output folder")
    parser.add_argument("--compare", type=Path, metavar="BASELINE", help="baseline results.json")
    parser.add_argument(
        "--current",
        type=Path,
        metavar="RESULTS",
        help="with --compare: compare this results.json instead of running the benchmark",
    )
    parser.add_argument(
        "--threshold", type=float, default=bench.REGRESSION_THRESHOLD, help="regression limit"
    )
    parser.add_argument(
        "--report-only",
        action="store_true",
        help="print the comparison, but exit 0 on regressions (crashes and heavy imports "
        "still exit 1)",
    )
    parser.add_argument(
        "--absolute",
        action="store_true",
        help="with --compare: compare hub medians instead of hub / direct ratios",
    )
    parser.add_argument("--budget", type=float, help="seconds per measurement (default 0.2)")
    parser.add_argument("--no-memory", action="store_true", help="skip memory measurements")
    parser.add_argument("--no-dispatch", action="store_true", help="skip dispatch overhead")
    parser.add_argument("--no-import", action="store_true", help="skip import time")
    parser.add_argument(
        "--no-recheck",
        action="store_true",
        help="with --compare: do not measure what looks regressed with the baseline's commit",
    )
    args = parser.parse_args(argv)

    settings = bench.Settings.quick() if args.quick else bench.Settings()
    if args.budget is not None:
        settings = bench.Settings(**{**settings.__dict__, "budget_s": args.budget})
    if args.no_memory:
        settings = bench.Settings(**{**settings.__dict__, "memory": False})
    settings = bench.Settings(**{**settings.__dict__, "case_timeout_s": CASE_TIMEOUT_S})
    try:
        sizes = _sizes(args.sizes) if args.sizes else None
        pairs = bench.parse_pairs(args.pairs) if args.pairs else None
        shapes = bench.SHAPES
        if args.shapes:
            shapes = tuple(s.strip() for s in args.shapes.split(",") if s.strip())
            unknown = [s for s in shapes if s not in bench.SHAPES]
            if unknown:
                raise ValueError(f"unknown shapes {unknown}; choose from {bench.SHAPES}")
    except (ValueError, argparse.ArgumentTypeError) as exc:
        parser.error(str(exc))
    if sizes is None:
        sizes = list(bench.QUICK_SIZES if args.quick else bench.FULL_SIZES)
    baseline = bench.load(args.compare) if args.compare else None
    if baseline is not None:
        bench.evaluate(baseline["cases"])

    if args.current is not None:
        if baseline is None:
            parser.error("--current needs --compare BASELINE")
        return _compare(bench.load(args.current), baseline, args)

    started = time.perf_counter()

    def progress(line: str) -> None:
        print(line, file=sys.stderr, flush=True)

    results = bench.run_all(
        sizes,
        settings,
        shapes=shapes,
        pairs=pairs,
        dispatch=not args.no_dispatch,
        imports=not args.no_import,
        progress=progress,
    )
    results["meta"]["args"] = sys.argv[1:] if argv is None else list(argv)
    if baseline is not None:
        _confirm(results, baseline, settings, args, progress)
        if not args.no_recheck:
            _recheck(results, baseline, args, progress)
    args.out.mkdir(parents=True, exist_ok=True)
    bench.save(results, args.out / "results.json")
    (args.out / "report.md").write_text(report.markdown(results))
    report.heatmap(results, args.out / "heatmap.png")
    print("\n".join(report.summary_lines(results)))
    for lib, why in results["meta"].get("skipped_libraries", {}).items():
        print(f"not measured: {lib} ({why})")
    print(f"\nwrote {args.out}/results.json, report.md, heatmap.png")
    print(f"took {time.perf_counter() - started:.1f} s")

    status = 0
    imp = results.get("import", {})
    heavy = sorted({*imp.get("heavy_modules", []), *imp.get("heavy_after_first_use", [])})
    if heavy:
        print(f"FAIL: interchange_hub imported {', '.join(heavy)}", file=sys.stderr)
        status = 1
    errors = [r for r in results["cases"] if r["status"] == "error"]
    if errors:
        print(f"FAIL: {len(errors)} case(s) raised (see report.md)", file=sys.stderr)
        status = 1
    if baseline is not None:
        print()
        regressed = _compare(results, baseline, args)
        if regressed and args.report_only:
            print("(--report-only: the regressions above do not fail this run)")
        elif regressed:
            status = 1
    return status


# Cases that look regressed are measured again, up to three times with a budget that
# doubles each round (a quick run's 10 ms a measurement is noisy on 2 cores), and the
# better of the measurements is kept: a regression must show in every one to count.
CONFIRM_BUDGETS_S = (0.2, 0.4, 0.8)
# One case takes seconds at most (10 million rows); one still running after this hangs.
CASE_TIMEOUT_S = 600.0


def _confirm(
    results: dict[str, Any],
    baseline: dict[str, Any],
    settings: bench.Settings,
    args: argparse.Namespace,
    progress: Callable[[str], None],
) -> None:
    """Measure the cases that look regressed again, keeping each case's better
    measurement (the lower hub ÷ direct ratio, or hub median with ``--absolute``)."""
    for budget in CONFIRM_BUDGETS_S:
        cmp = bench.compare(results, baseline, args.threshold, args.absolute)
        if not cmp.regressions:
            return
        # (the run's sizes, not the re-measured cases': what is timed at the largest)
        sizes = sorted({r["rows"] for r in results["cases"]})
        again = bench.Settings(
            **{
                **settings.__dict__,
                "budget_s": budget,
                "memory": False,
                "scaling_rows": (sizes[0], sizes[-1]) if len(sizes) > 1 else None,
                "largest_rows": sizes[-1],
            }
        )
        cases = [bench.Case(*_pair(r["pair"]), r["shape"], r["rows"]) for r in cmp.regressions]
        progress(f"re-measuring {len(cases)} case(s) that look regressed ({budget} s each) ...")
        fresh = {
            (r["pair"], r["shape"], r["rows"]): r for r in bench.run_matrix(cases, again, progress)
        }
        for i, r in enumerate(results["cases"]):
            new = fresh.get((r["pair"], r["shape"], r["rows"]))
            if new is None or new["status"] != "ok" or _score(new, args) >= _score(r, args):
                continue
            if "memory" in r:  # measured once, by the first run: kept
                new["memory"] = r["memory"]
            results["cases"][i] = new
        bench.evaluate(results["cases"])


# What still looks regressed is measured once more, on this machine, with the code of the
# baseline's commit (a git worktree of meta.commit) and with this one, each in a fresh
# interpreter: a ratio is not the same on every machine (the hub's Python-bound dispatch
# and a direct call's C loop scale differently with the CPU: 2-3x apart between two
# machines of this pool), so a case counts as regressed only when it is also slower, by
# the same rule, than the baseline's own code measured here and now. Noise could clear a
# real regression once, and could flag a case once too (one 1,000-row case's direct
# call, jax's, ran +107% slower in one round): a case is decided by a majority of up to
# three rounds, cleared when two find it no slower, kept when two find it slower (each
# round measures only the cases still undecided).
RECHECK_BUDGET_S = 0.4
RECHECK_ROUNDS = 3
RECHECK_MAJORITY = 2
REPO = HERE.parent


def _recheck(
    results: dict[str, Any],
    baseline: dict[str, Any],
    args: argparse.Namespace,
    progress: Callable[[str], None],
) -> None:
    """Record in ``results["meta"]["recheck"]`` the same-machine comparison of the cases
    that look regressed (``bench.apply_recheck`` reads it). A case is cleared only when
    ``RECHECK_MAJORITY`` of up to ``RECHECK_ROUNDS`` rounds (each the baseline's tree,
    then this one) find it no slower than the baseline's code, and kept as soon as that
    many find it slower; any failure clears nothing."""
    cmp = bench.compare(results, baseline, args.threshold, args.absolute)
    if not cmp.regressions:
        return
    commit = str(baseline["meta"].get("commit") or "")
    record: dict[str, Any] = {"commit": commit, "cases": {}, "error": None}
    results["meta"]["recheck"] = record
    progress(
        f"measuring the {len(cmp.regressions)} case(s) that still look regressed with the "
        f"baseline's commit {commit[:10] or '(none recorded)'} and this one, on this machine ..."
    )
    try:
        if not commit:
            raise RuntimeError("the baseline records no commit")
        if baseline["meta"].get("uncommitted"):
            raise RuntimeError("the baseline was measured with uncommitted changes")
        with tempfile.TemporaryDirectory(prefix="ih-recheck-") as tmp:
            tree = Path(tmp) / "baseline"
            _git("worktree", "prune")
            _git("worktree", "add", "--detach", "--quiet", str(tree), commit)
            try:
                _rounds(cmp.regressions, tree, Path(tmp), args, record, progress)
            finally:
                _remove_worktree(tree)
    except Exception as exc:  # noqa: BLE001 - whatever failed, the comparison stands
        record["cases"], record["error"] = {}, f"{type(exc).__name__}: {exc}"
        progress(f"could not measure the baseline's commit here ({exc}): the comparison stands")


def _rounds(
    rows: list[dict[str, Any]],
    tree: Path,
    tmp: Path,
    args: argparse.Namespace,
    record: dict[str, Any],
    progress: Callable[[str], None],
) -> None:
    candidates = list(rows)
    votes: dict[str, list[bool]] = {bench.case_key(r): [] for r in rows}  # regressed, per round
    for n in range(1, RECHECK_ROUNDS + 1):
        groups: dict[tuple[str, int], set[str]] = {}
        for r in candidates:
            groups.setdefault((r["shape"], r["rows"]), set()).add(r["pair"])
        then = _measure_tree(tree, groups, tmp / f"then-{n}")
        now = _measure_tree(REPO, groups, tmp / f"now-{n}")
        here = bench.compare(now, then, args.threshold, args.absolute)
        regressed = {bench.case_key(r) for r in here.regressions}
        old = {bench.case_key(r): r for r in bench.ok_cases(then)}
        new = {bench.case_key(r): r for r in bench.ok_cases(now)}
        for r in candidates:
            key = bench.case_key(r)
            a, b = old.get(key), new.get(key)
            # Only a case measured both ways, and not slower than the baseline's code,
            # counts as cleared by this round.
            votes[key].append(a is None or b is None or key in regressed)
            record["cases"][key] = {
                "then": None
                if a is None
                else bench.ratio(a["hub"]["median_ns"], a["best_direct_ns"]),
                "now": None
                if b is None
                else bench.ratio(b["hub"]["median_ns"], b["best_direct_ns"]),
                "regressed": votes[key].count(False) < RECHECK_MAJORITY,
                "round": n,
                "rounds_regressed": votes[key].count(True),
                "rounds_cleared": votes[key].count(False),
            }
        candidates = [
            r
            for r in candidates
            if max(votes[bench.case_key(r)].count(v) for v in (True, False)) < RECHECK_MAJORITY
        ]
        if not candidates:
            return
        if n < RECHECK_ROUNDS:
            progress(
                f"  round {n + 1}: {len(candidates)} case(s) found slower than the baseline's "
                "code in one round and not in another"
            )


def _remove_worktree(tree: Path) -> None:
    """Remove the worktree, keeping whatever error is on its way out."""
    for argv in (("worktree", "remove", "--force", str(tree)), ("worktree", "prune")):
        try:
            _git(*argv)
        except (OSError, RuntimeError, subprocess.SubprocessError):
            pass


def _git(*argv: str) -> None:
    done = subprocess.run(
        ["git", "-C", str(REPO), *argv], capture_output=True, text=True, check=False, timeout=120
    )
    if done.returncode != 0:
        raise RuntimeError(f"git {' '.join(argv[:2])}: {done.stderr.strip() or done.returncode}")


def _measure_tree(tree: Path, groups: dict[tuple[str, int], set[str]], out: Path) -> dict[str, Any]:
    """The cases of ``groups`` ((shape, rows) -> pairs) measured by ``tree``'s own
    benchmark and package, in fresh interpreters (each in its own process group, killed
    whole should it hang)."""
    path = [str(tree), *(str(p) for p in sorted((tree / "plugins").glob("*/")))]
    env = {**os.environ, "PYTHONPATH": os.pathsep.join([*path, os.environ.get("PYTHONPATH", "")])}
    cases: list[dict[str, Any]] = []
    for (shape, rows), pairs in sorted(groups.items()):
        folder = out / f"{shape}-{rows}"
        argv = [
            *("--pairs", ",".join(sorted(pairs)), "--sizes", str(rows), "--shapes", shape),
            *("--budget", str(RECHECK_BUDGET_S), "--no-memory", "--no-dispatch", "--no-import"),
            *("--out", str(folder)),
        ]
        proc = subprocess.Popen(
            [sys.executable, str(tree / "benchmarks" / "run.py"), *argv],
            cwd=tree,
            env=env,
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            text=True,
            start_new_session=True,
        )
        try:
            stdout, stderr = proc.communicate(timeout=CASE_TIMEOUT_S)
        except subprocess.TimeoutExpired:
            os.killpg(proc.pid, signal.SIGKILL)
            proc.communicate()
            raise RuntimeError(f"{tree.name}'s benchmark ran past {CASE_TIMEOUT_S:g} s") from None
        if not (folder / "results.json").exists():
            tail = (stderr or stdout).strip().splitlines()[-3:]
            raise RuntimeError(f"{tree.name}'s benchmark wrote no results: {' | '.join(tail)}")
        cases += bench.load(folder / "results.json")["cases"]
    return {"meta": {}, "cases": cases}


def _score(case: dict[str, Any], args: argparse.Namespace) -> float:
    hub = float(case["hub"]["median_ns"])
    direct = case.get("best_direct_ns")
    return hub if args.absolute or not direct else hub / float(direct)


def _pair(text: str) -> tuple[str, str]:
    src, _, dst = text.partition(":")
    return src, dst


def _compare(results: dict[str, Any], baseline: dict[str, Any], args: argparse.Namespace) -> int:
    """Print the comparison with the baseline; 1 if any case regressed."""
    cmp = bench.compare(results, baseline, args.threshold, args.absolute)
    bench.apply_recheck(cmp, results["meta"].get("recheck"))
    loads = (baseline["meta"].get("loadavg"), results["meta"].get("loadavg"))
    print(report.comparison_text(cmp, args.threshold, args.absolute, loads))
    return 1 if cmp.regressions else 0


if __name__ == "__main__":
    sys.exit(main())
