"""`RandomPolicy`: seeded random exploration of a Python repository.

It lists directories, finds files, reads the files it has seen in earlier
``ls``/``find``/``grep`` output, greps for words from the issue, inspects git,
runs the tests, now and then appends a comment to a ``.py`` file, and submits
with a fixed probability per step. Useful as a smoke test and a floor baseline.
"""

from __future__ import annotations

import random
import re
import shlex
from typing import Any

from swe_gym.envs.prompt import SUBMIT
from swe_gym.policies.base import PolicyInfo

_SAFE_PATH = re.compile(r"^(?!-)[\w.][\w./+-]*$")
_WORD = re.compile(r"(?<![\\\w])[A-Za-z_][A-Za-z0-9_]{3,}")
_ISSUE = re.compile(r"<issue>\n?(.*?)</issue>", re.DOTALL)
_GREP_HIT = re.compile(r"^(\.?/?[\w./+-]+):\d+:", re.MULTILINE)
_STOPWORDS = frozenset(
    "this that with from have should would could when then there their they them what which while about "
    "into only also does dont doesn than just like some more most other same very even every after before "
    "because being been were will your expected actual return returns none true false self python traceback "
    "file line most recent call last error module".split()
)
#: (command, what its output teaches: "ls:<dir>", "find:f", "find:d", "grep" or "", weight)
_STATIC: tuple[tuple[str, str, float], ...] = (
    ("ls -p", "ls:", 1.0),
    ("ls -la", "", 0.5),
    ("find . -type f -name '*.py' -not -path './.git/*' | sort | head -n 60", "find:f", 1.0),
    ("find . -maxdepth 2 -type d -not -path './.git*' | sort", "find:d", 0.5),
    ("git status --short", "", 0.5),
    ("git diff", "", 0.5),
    ("git log --oneline -n 5", "", 0.3),
    ("python3 -m pytest -q -x 2>&1 | tail -n 40", "", 0.5),
)


class RandomPolicy:
    """Random shell commands for exploring a Python repository; deterministic given ``seed``.

    Args:
        seed: seeds a private `random.Random`; the same seed and observations give the same actions.
        submit_prob: probability of ``submit`` at each step.
    """

    identity = PolicyInfo(name="random")

    def __init__(self, seed: int | None = 0, submit_prob: float = 0.1) -> None:
        if not 0.0 <= submit_prob <= 1.0:
            raise ValueError(f"submit_prob must be in [0, 1], got {submit_prob}")
        self.rng = random.Random(seed)
        self.submit_prob = submit_prob
        self.files: list[str] = []
        self.dirs: list[str] = []
        self.words: list[str] = []
        self._last = ""  # what the previous action's output lists (see _STATIC)

    def reset(self, observation: str, info: dict[str, Any]) -> None:
        self.files, self.dirs, self._last = [], [], ""
        issue = _ISSUE.search(observation)
        words = _WORD.findall(issue.group(1) if issue else observation)
        self.words = list(dict.fromkeys(w for w in words if w.lower() not in _STOPWORDS))[:40]

    def act(self, observation: str, info: dict[str, Any]) -> str:
        self._learn(observation)
        if self.rng.random() < self.submit_prob:
            return SUBMIT
        options = list(_STATIC)
        for d in self.dirs[-20:]:
            options.append((f"ls -p {shlex.quote(d)}", f"ls:{d}", 0.3))
        for word in self.words:
            options.append((f"grep -rn --include='*.py' {shlex.quote(word)} . | head -n 40", "grep", 0.05))
        for path in self.files[-40:]:
            q = shlex.quote(path)
            start = 1 + 20 * self.rng.randrange(6)
            options += [
                (f"cat {q}", "", 0.3),
                (f"sed -n '{start},{start + 40}p' {q}", "", 0.2),
                (f"head -n 30 {q}", "", 0.1),
                (f"wc -l {q}", "", 0.05),
            ]
            if path.endswith(".py"):
                options.append((f"printf '\\n# explored by RandomPolicy\\n' >> {q}", "", 0.01))
        command, teaches, _ = self.rng.choices(options, weights=[w for _, _, w in options])[0]
        self._last = teaches
        return command

    def _learn(self, observation: str) -> None:
        """Remember paths listed by the previous ``ls -p``, ``find`` or ``grep``."""
        kind, _, where = self._last.partition(":")
        lines = [line.strip() for line in observation.splitlines()]
        if kind == "ls":
            for name in lines:
                if name and " " not in name:
                    path = f"{where}/{name}" if where else name
                    self._add(self.dirs if path.endswith("/") else self.files, path.rstrip("/"))
        elif kind == "find":
            for line in lines:
                path = line.removeprefix("./")
                if path and path != ".":
                    self._add(self.dirs if where == "d" else self.files, path)
        elif kind == "grep":
            for path in _GREP_HIT.findall(observation):
                self._add(self.files, path.removeprefix("./"))

    @staticmethod
    def _add(bucket: list[str], path: str) -> None:
        if _SAFE_PATH.match(path) and ".git" not in path.split("/") and path not in bucket:
            bucket.append(path)
