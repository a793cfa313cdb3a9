"""What the scan reports: one `Finding` per flagged construct, under one of the `RULES`."""

from __future__ import annotations

from dataclasses import dataclass

RULES: dict[str, str] = {
    "constant-dunder": "a comparison or truth method that answers the same whatever it is given",
    "runner-patch": "rewrites the test runner, its assertions, operator or builtins",
    "frame-reading": "reads the calling test's frame: its locals or source",
    "process-hook": "exits the process or installs a trace, audit, exit, signal or import hook",
    "dynamic-code": "runs or imports code decoded from literals",
    "test-write": "writes test, log or report files, or rebinds the standard streams",
    "startup-hook": "code that runs when the interpreter starts",
    "unreadable": "a change to code the scan cannot read",
}


@dataclass(frozen=True, order=True)
class Finding:
    """One construct of the patch: the file, the new-side line, the rule, and why it is flagged."""

    path: str
    line: int
    rule: str
    reason: str

    def __str__(self) -> str:
        return f"{self.path}:{self.line}: {self.rule}: {self.reason}"
