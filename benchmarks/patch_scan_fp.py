"""False positives of the static patch scan (`swe_gym.grading.patch_scan`) on gold patches: how many real fixes
it would call tampering.

What is measured
----------------
Every gold patch of the given corpora (JSON or JSONL exports of SWE-bench rows, or CSV, with ``instance_id``,
``repo`` and ``patch``; a predictions file's ``model_patch`` is read too, its repo taken from the id), and always
the bundled tasks (``load_tasks("bundled")``) and the Harbor fixture tasks of ``tests/fixtures/harbor`` (their
``solution/solve.sh`` heredocs written as a patch: they have no diff), is read by ``scan_patch(patch, repo)``. A
gold patch is an honest fix, so every flagged row is a false positive (for an agent's predictions, an honest
agent's patch flagged). Printed per corpus: rows, rows with a patch, flagged, the false-positive rate (flagged /
rows with a patch), the scan's time per patch (p50 and max), then each flagged row with its findings.

``--tree DIR[=REPO]`` adds a harsher corpus: every ``.py`` file under DIR (test files and ``tests``/``testing``
folders left out) read as if a patch added it whole, its path relative to DIR's parent (so ``site-packages/sympy``
reads as ``sympy/...``). Library code is not a fix, and whole modules use far more of the flagged APIs than a fix's
few lines; what it flags shows where each rule's edge lies.

Run: ``python benchmarks/patch_scan_fp.py --corpus FILE [FILE ...] [--tree DIR[=REPO] ...] [--json OUT]``
(``--json -`` prints the JSON instead of the table). Exit status 0 whatever it finds.
"""

from __future__ import annotations

import argparse
import csv
import json
import re
import statistics
import sys
import time
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

from bench_common import write_json

from swe_gym.grading.patch_scan import Finding, scan_patch
from swe_gym.tasks import load_tasks

FIXTURES = Path(__file__).resolve().parent.parent / "tests" / "fixtures" / "harbor"


@dataclass
class Row:
    instance_id: str
    repo: str
    patch: str


@dataclass
class Result:
    corpus: str
    rows: int = 0
    with_patch: int = 0
    flagged: list[dict[str, Any]] = field(default_factory=list)
    scan_ms: list[float] = field(default_factory=list)

    @property
    def rate(self) -> float:
        return len(self.flagged) / self.with_patch if self.with_patch else 0.0


def new_file_patch(path: str, text: str) -> str:
    lines = text.split("\n")
    head = f"diff --git a/{path} b/{path}\nnew file mode 100644\n--- /dev/null\n+++ b/{path}\n"
    return head + f"@@ -0,0 +1,{len(lines)} @@\n" + "".join(f"+{line}\n" for line in lines)


def read_corpus(path: Path) -> list[Row]:
    """The rows of a JSON list (or ``{"rows": [...]}``), a JSONL file or a CSV export."""
    text = path.read_text(encoding="utf-8", errors="surrogateescape")
    if path.suffix == ".csv":
        csv.field_size_limit(1 << 30)
        records: list[dict[str, Any]] = list(csv.DictReader(text.splitlines(keepends=True)))
    elif path.suffix == ".jsonl":
        records = [json.loads(line) for line in text.splitlines() if line.strip()]
    else:
        data = json.loads(text)
        records = data.get("rows", data.get("instances", [])) if isinstance(data, dict) else data
        records = [r.get("row", r) for r in records]  # the Hugging Face datasets-server export nests rows
    return [
        Row(str(r.get("instance_id", "")), repo_of(r), str(r.get("patch") or r.get("model_patch") or ""))
        for r in records
    ]


def repo_of(record: dict[str, Any]) -> str:
    """The row's ``repo``, else the one its SWE-bench id names (``django__django-11099``: ``django/django``)."""
    if record.get("repo"):
        return str(record["repo"])
    match = re.match(r"(.+?)__(.+)-\d+$", str(record.get("instance_id", "")))
    return f"{match[1]}/{match[2]}" if match else ""


def bundled_rows() -> list[Row]:
    return [Row(task.instance_id, task.repo, task.patch) for task in load_tasks("bundled")]


def fixture_rows() -> list[Row]:
    """Harbor fixtures: their gold patch, or the files their ``solve.sh`` writes with ``cat > PATH <<'TAG'``."""
    rows = []
    for task in load_tasks(FIXTURES):
        patch = task.patch
        solution = task.metadata.get("harbor", {}).get("solution")
        if not patch and solution:
            script = Path(solution).read_text()
            for path, _tag, body in re.findall(r"cat > (\S+) <<'?(\w+)'?\n(.*?)\n\2\n", script, re.S):
                patch += new_file_patch(path.removeprefix(task.workdir.rstrip("/") + "/"), body)
        rows.append(Row(task.instance_id, task.repo, patch))
    return rows


def tree_rows(spec: str) -> list[Row]:
    directory, _, repo = spec.partition("=")
    root = Path(directory).resolve()
    rows = []
    for path in sorted(root.rglob("*.py")):
        relative = path.relative_to(root.parent).as_posix()
        parts = relative.split("/")
        if {"tests", "testing"} & set(parts) or parts[-1].startswith("test_") or parts[-1] == "conftest.py":
            continue
        text = path.read_text(encoding="utf-8", errors="surrogateescape")
        rows.append(Row(relative, repo, new_file_patch(relative, text)))
    return rows


def measure(corpus: str, rows: list[Row]) -> Result:
    result = Result(corpus, rows=len(rows))
    for row in rows:
        if not row.patch.strip():
            continue
        result.with_patch += 1
        started = time.perf_counter()
        findings: list[Finding] = scan_patch(row.patch, row.repo)
        result.scan_ms.append((time.perf_counter() - started) * 1000.0)
        if findings:
            result.flagged.append(
                {"instance_id": row.instance_id, "repo": row.repo, "findings": [str(f) for f in findings]}
            )
    return result


def summary(result: Result) -> dict[str, Any]:
    fields = {k: v for k, v in asdict(result).items() if k != "scan_ms"}
    p50 = statistics.median(result.scan_ms) if result.scan_ms else 0.0
    return {**fields, "rate": result.rate, "p50_ms": p50, "max_ms": max(result.scan_ms, default=0.0)}


def print_table(results: list[Result]) -> None:
    width = max(len(r.corpus) for r in results) + 2
    print(f"{'corpus':<{width}}{'rows':>6}{'patches':>9}{'flagged':>9}{'FP rate':>9}{'p50 ms':>9}{'max ms':>9}")
    for r in results:
        p50 = statistics.median(r.scan_ms) if r.scan_ms else 0.0
        peak = max(r.scan_ms, default=0.0)
        print(
            f"{r.corpus:<{width}}{r.rows:>6}{r.with_patch:>9}{len(r.flagged):>9}{r.rate:>8.2%}{p50:>9.2f}{peak:>9.1f}"
        )
    for r in results:
        for row in r.flagged:
            print(f"\n{r.corpus}: {row['instance_id']} ({row['repo']})")
            for finding in row["findings"]:
                print(f"  {finding}")


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=(__doc__ or "").split("\n\n", 1)[0])
    parser.add_argument("--corpus", nargs="*", type=Path, default=[], metavar="FILE", help="JSON/JSONL/CSV exports")
    parser.add_argument("--tree", action="append", default=[], metavar="DIR[=REPO]", help="library code, as added")
    parser.add_argument("--json", metavar="OUT", help="also write the results to this JSON file ('-': print only it)")
    args = parser.parse_args(argv)
    corpora = [(path.name, read_corpus(path)) for path in args.corpus]
    corpora += [("bundled", bundled_rows()), ("fixtures (harbor)", fixture_rows())]
    results = [measure(name, rows) for name, rows in corpora]
    if len(results) > 1:
        total = Result("total", rows=sum(r.rows for r in results), with_patch=sum(r.with_patch for r in results))
        total.flagged = [row for r in results for row in r.flagged]
        total.scan_ms = [ms for r in results for ms in r.scan_ms]
        results.append(total)
    for spec in args.tree:
        directory, _, repo = spec.partition("=")
        results.append(measure(f"tree: {Path(directory).name}" + (f" ({repo})" if repo else ""), tree_rows(spec)))
    payload = {"results": [summary(r) for r in results]}
    if args.json == "-":
        print(json.dumps(payload, indent=2))
        return 0
    print_table(results)
    write_json(Path(args.json) if args.json else None, payload)
    return 0


if __name__ == "__main__":
    sys.exit(main())
