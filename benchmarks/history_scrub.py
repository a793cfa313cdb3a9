"""Reset cost of hiding the git future on a real-size repository: no scrub, the old refs-only scrub, the new one.

What is compared
----------------
Wall time of the agent's ``provision`` (what ``env.reset`` spends beyond the snapshot) on Docker, for a
SWE-bench-like image: ``/testbed`` holds a generated repository of about 15,000 commits over 3,000 files
(a 25 MB pack), checked out 5,000 commits before its tip, with the future (tags, ``origin/main``, a last
commit that adds a hidden test and the fix) in the object store; and the same as a ``--filter=blob:none``
partial clone (the future's blobs in promisor packs). Methods:

* ``no scrub``: ``scrub_history=False``.
* ``old default``: the refs-only scrub this project shipped before (remotes, refs, tags, reflogs; objects stay,
  so ``git fsck --lost-found`` finds the fix), run in the sandbox after a ``no scrub`` provision.
* ``old "gc"``: that, then ``git gc --prune=now`` (full clone only: in the partial clone it fails, its repack
  asking the removed remote for blobs).
* ``new, first reset``: the default now, with no prepared image yet: the scrub (a new pack of what the base
  reaches) runs once, and the container is committed to ``swe-gym-prepared:<digest>``.
* ``new, cached``: the default now, later resets: a container of the prepared image, nothing run.
* ``new, per reset``: the same scrub run in every reset, as on providers that cannot commit images
  (apptainer, local, opensandbox).

Why it is fair
--------------
Same machine, image and process; methods interleaved in rounds whose order rotates, after one uncounted
warm-up each; the sandbox is closed after each call, untimed. Every ``new`` reset is checked, untimed: the fix
commit must be unreadable.

Run: ``python benchmarks/history_scrub.py [--rounds N] [--json OUT]`` (default N=3; the first run builds the
images, about a minute).
"""

from __future__ import annotations

import hashlib
import io
import random
import subprocess
import sys
import tarfile
import tempfile
from pathlib import Path
from typing import Any

import docker
from bench_common import (
    BenchmarkError,
    Method,
    docker_parser,
    interleave,
    print_table,
    start_docker_benchmark,
    write_json,
)

from swe_gym.sandbox import AsyncSandbox, SandboxSpec, get_provider
from swe_gym.sandbox.loop import run_sync
from swe_gym.tasks import SWETask, provision
from swe_gym.tasks.provision import PREPARED_FROM

COMMITS, FILES, FUTURE = 15_000, 3_000, 5_000
#: On the benchmark images: the digest of this script (rebuilt when it changes), and the base commit.
CONTEXT_LABEL, BASE_LABEL = "swe_gym.benchmark_context", "swe_gym.benchmark_base"
IMAGES = {"full clone": "swe-gym-bench-history:full", "partial clone": "swe-gym-bench-history:partial"}
#: The refs-only scrub that was the default before (the baseline), and its ``"gc"`` addition.
OLD_SCRUB = r"""set -e; cd /testbed
current=$(git symbolic-ref -q HEAD || true)
for remote in $(git remote); do git remote remove "$remote"; done
git for-each-ref --format='%(refname)' | while read -r ref; do
  [ "$ref" = "$current" ] || git update-ref -d "$ref"
done
git reflog expire --expire=now --all
rm -rf .git/logs .git/ORIG_HEAD .git/FETCH_HEAD .git/packed-refs.lock
"""
OLD_GC = OLD_SCRUB + "git gc --quiet --prune=now\n"
GIT = ["git", "-c", "user.name=bench", "-c", "user.email=bench@swe-gym.invalid"]


def _fast_import_stream(seed: int = 7) -> bytes:
    """``COMMITS`` commits touching 1-3 of ``FILES`` word-salad files each (deterministic)."""
    rng = random.Random(seed)
    words = ["".join(rng.choices("abcdefghijklmnopqrstuvwxyz_", k=rng.randint(2, 10))) for _ in range(3000)]

    def line() -> str:
        return "    " + " ".join(rng.choices(words, k=rng.randint(3, 12))) + "\n"

    files = {f"src/pkg{i % 40}/mod{i}.py": [line() for _ in range(rng.randint(20, 200))] for i in range(FILES)}
    paths = list(files)
    out = io.BytesIO()
    for index in range(COMMITS):
        message = f"commit {index}\n".encode()
        out.write(b"commit refs/heads/main\ncommitter bench <bench@swe-gym.invalid> %d +0000\n" % (1.6e9 + index * 60))
        out.write(b"data %d\n%s" % (len(message), message))
        for path in paths if index == 0 else rng.sample(paths, rng.randint(1, 3)):
            lines = files[path]
            if index:
                for _ in range(rng.randint(1, 4)):
                    lines[rng.randrange(len(lines))] = line()
            data = "".join(lines).encode()
            out.write(b"M 100644 inline %s\ndata %d\n%s\n" % (path.encode(), len(data), data))
        out.write(b"\n")
    return out.getvalue()


def _git(cwd: Path, *args: str) -> str:
    return subprocess.run([*GIT, *args], cwd=cwd, check=True, capture_output=True, text=True).stdout.strip()


def _build_repos(root: Path) -> dict[str, Path]:
    """The upstream (bare, deltified, with the fix on top and a tag), a full clone and a partial clone at base."""
    bare = root / "upstream.git"
    _git(root, "init", "-q", "--bare", "-b", "main", str(bare))
    subprocess.run(["git", "fast-import", "--quiet"], cwd=bare, input=_fast_import_stream(), check=True)
    work = root / "work"
    _git(root, "clone", "-q", str(bare), str(work))
    (work / "tests").mkdir()
    (work / "tests" / "test_hidden.py").write_text("def test_hidden():\n    assert 'HIDDEN TEST'\n")
    (work / "src" / "fix.py").write_text("FIX = 'THE FIX'\n")
    _git(work, "add", "-A")
    _git(work, "commit", "-q", "-m", "the fix")
    _git(work, "tag", "v9.9")
    _git(work, "push", "-q", "origin", "main", "v9.9")
    _git(bare, "repack", "-a", "-d", "-f", "-q", "--window=10", "--depth=50")
    _git(bare, "config", "uploadpack.allowFilter", "true")
    base = _git(bare, "rev-parse", f"main~{FUTURE}")
    clones = {"full clone": root / "full", "partial clone": root / "partial"}
    _git(root, "clone", "-q", "--no-local", str(bare), str(clones["full clone"]))
    _git(root, "clone", "-q", "--filter=blob:none", f"file://{bare}", str(clones["partial clone"]))
    for clone in clones.values():
        _git(clone, "checkout", "-q", "-B", "main", base)
    return clones


def _docker_build(tag: str, testbed: Path, labels: dict[str, str]) -> None:
    buffer = io.BytesIO()
    with tarfile.open(fileobj=buffer, mode="w") as archive:
        archive.add(testbed, arcname="testbed")
        dockerfile = b"FROM swe-gym-test:bookworm\nCOPY testbed /testbed\n"
        info = tarfile.TarInfo("Dockerfile")
        info.size = len(dockerfile)
        archive.addfile(info, io.BytesIO(dockerfile))
    buffer.seek(0)
    docker.from_env().images.build(fileobj=buffer, custom_context=True, tag=tag, rm=True, labels=labels)


def ensure_images() -> str:
    """Build both images unless already built from this script's generator; returns the base commit."""
    digest = hashlib.sha256(Path(__file__).read_bytes()).hexdigest()[:16]
    client = docker.from_env()
    try:
        found = [client.images.get(tag) for tag in IMAGES.values()]
        if all(image.labels.get(CONTEXT_LABEL) == digest for image in found):
            return found[0].labels[BASE_LABEL]
    except docker.errors.ImageNotFound:
        pass
    print("building the real-size images (once) ...", flush=True)
    with tempfile.TemporaryDirectory(prefix="swe-gym-bench-history-") as tmp:
        clones = _build_repos(Path(tmp))
        base = _git(clones["full clone"], "rev-parse", "HEAD")
        for name, tag in IMAGES.items():
            _docker_build(tag, clones[name], {CONTEXT_LABEL: digest, BASE_LABEL: base})
    return base


def _task(image: str, base: str) -> SWETask:
    return SWETask(
        instance_id="bench__history-1",
        repo="bench/history",
        problem_statement="benchmark",
        base_commit=base,
        image=image,
        test_cmd="true",
    )


class _NoCommit:
    """Docker without the image-commit capability: the per-reset path of apptainer, local, opensandbox."""

    name = "docker"

    def __init__(self, inner: Any) -> None:
        self.inner = inner
        self.max_concurrent_creates = inner.max_concurrent_creates

    async def create(self, spec: SandboxSpec) -> Any:
        return await self.inner.create(spec)

    async def cleanup(self, **filters: Any) -> list[str]:
        return await self.inner.cleanup(**filters)


def methods_for(image: str, base: str, fix: str, *, old_gc: bool) -> list[Method]:
    provider = get_provider("docker")
    no_commit = _NoCommit(provider)
    task, spec = _task(image, base), SandboxSpec()
    opened: list[AsyncSandbox] = []

    def reset(provider_: Any, scrub: bool, script: str | None = None) -> None:
        sandbox = run_sync(provision(task, provider_, spec, agent=True, scrub_history=scrub))
        opened.append(sandbox)
        if script is not None:
            result = run_sync(sandbox.exec(script, timeout=600))
            if not result.ok:
                raise BenchmarkError(f"baseline scrub failed: {result.output[-500:]}")

    def check_and_close() -> None:
        """Untimed (in a partial clone, a missing object costs a failed fetch from the promisor remote)."""
        if run_sync(opened[-1].exec(f"git cat-file -e {fix}")).ok:
            raise BenchmarkError("the fix is still readable after the new scrub")
        close()

    def close() -> None:
        while opened:
            run_sync(opened.pop().close())

    def drop_prepared() -> None:
        source = docker.from_env().images.get(image).id
        run_sync(provider.cleanup(labels={PREPARED_FROM: source}))

    gc = [Method('old "gc"', lambda: reset(provider, False, OLD_GC), after=close)] if old_gc else []
    return [
        Method("no scrub", lambda: reset(provider, False), after=close),
        Method("old default (refs)", lambda: reset(provider, False, OLD_SCRUB), after=close),
        *gc,
        Method("new, first reset", lambda: reset(provider, True), before=drop_prepared, after=check_and_close),
        Method("new, cached", lambda: reset(provider, True), after=check_and_close),
        Method("new, per reset", lambda: reset(no_commit, True), after=check_and_close),
    ]


def main(argv: list[str] | None = None) -> int:
    parser = docker_parser(__doc__)
    parser.add_argument("--rounds", type=int, default=3, help="timed rounds per method (default 3)")
    args = parser.parse_args(argv)
    if start_docker_benchmark("swe-gym-test:bookworm") is None:
        return 1
    base = ensure_images()
    results: dict[str, Any] = {"base": base}
    for name, image in IMAGES.items():
        fix = subprocess.run(
            ["docker", "run", "--rm", image, "git", "-C", "/testbed", "rev-parse", "refs/remotes/origin/main"],
            capture_output=True,
            text=True,
            check=True,
        ).stdout.strip()
        # In a partial clone the old "gc" fails (its repack needs blobs the removed remote would have sent).
        methods = methods_for(image, base, fix, old_gc=name == "full clone")
        interleave(methods, args.rounds)
        print_table(
            f"{name} ({COMMITS} commits, base {FUTURE} before the tip): provision of the agent's sandbox",
            methods,
            methods[1],
        )
        results[name] = {m.name: m.samples_ms for m in methods}
    write_json(args.json, results)
    return 0


if __name__ == "__main__":
    sys.exit(main())
