"""Property: extracting the agent's patch and applying it to a fresh base reproduces the tree.

Generated trees mix new, deleted, renamed, modified, binary and non-UTF-8 files.
Runs on the real `local` provider, through the same functions the env uses.
"""

from __future__ import annotations

import hashlib
import io
import json
import tarfile
import time

from hypothesis import HealthCheck, assume, given, settings
from hypothesis import strategies as st

from swe_gym.grading import apply_patch, extract_patch, snapshot
from swe_gym.sandbox import AsyncSandbox, SandboxSpec
from swe_gym.sandbox.loop import run_sync
from tests.conftest import provider_setup

names = st.text(alphabet="abcé_-", min_size=1, max_size=5).filter(lambda n: not n.startswith("-"))
paths = st.tuples(st.lists(names, min_size=1, max_size=2), st.sampled_from(["", ".py", ".bin", ".txt"])).map(
    lambda parts: "/".join(parts[0]) + parts[1]
)
contents = st.one_of(
    st.text(max_size=120).map(lambda s: s.encode("utf-8", "surrogatepass")),
    st.binary(max_size=120),
    st.sampled_from([b"caf\xe9 latin-1\n", b"\x00\x01\x02binary\x00", b"no newline at end", b""]),
)
trees = st.dictionaries(paths, contents, max_size=5)

_COMMIT = (
    "git init -q && git add -A && "
    "GIT_AUTHOR_NAME=t GIT_AUTHOR_EMAIL=t@t GIT_COMMITTER_NAME=t GIT_COMMITTER_EMAIL=t@t "
    "git commit -q --allow-empty -m base"
)
_LISTING = (
    'python3 -c "import os, hashlib, json; print(json.dumps({os.path.relpath(os.path.join(d, f)): '
    "hashlib.sha256(open(os.path.join(d, f), 'rb').read()).hexdigest() for d, ds, fs in os.walk('.') "
    "if not d.startswith('./.git') for f in fs}))\""
)


def _consistent(tree: dict[str, bytes]) -> bool:
    """No path is both a file and a directory."""
    dirs = {"/".join(p.split("/")[:i]) for p in tree for i in range(1, p.count("/") + 1)}
    return not dirs & set(tree)


def _tar(tree: dict[str, bytes]) -> bytes:
    buffer = io.BytesIO()
    with tarfile.open(fileobj=buffer, mode="w") as archive:
        for path, data in tree.items():
            info = tarfile.TarInfo(path)
            info.size, info.mtime = len(data), time.time()  # as an editor would leave it
            archive.addfile(info, io.BytesIO(data))
    return buffer.getvalue()


async def _with_base(base: dict[str, bytes]) -> AsyncSandbox:
    config, _ = provider_setup("local")
    box = await AsyncSandbox.create(SandboxSpec(), config)
    await box.upload_tar(_tar(base))
    result = await box.exec(_COMMIT)
    assert result.exit_code == 0, result.output
    return box


async def _roundtrip(base: dict[str, bytes], new: dict[str, bytes], deleted: list[str]) -> dict[str, str]:
    agent = await _with_base(base)
    try:
        tree = await snapshot(agent)
        if deleted:
            await agent.exec("rm -f -- " + " ".join(f"'{p}'" for p in deleted))
        await agent.upload_tar(_tar({p: d for p, d in new.items() if base.get(p) != d}))
        patch = await extract_patch(agent, tree)
    finally:
        await agent.close()
    fresh = await _with_base(base)
    try:
        method, log = (await apply_patch(fresh, patch)) if patch else ("none", "")
        assert method is not None, log
        return json.loads((await fresh.exec(_LISTING)).output)
    finally:
        await fresh.close()


@settings(max_examples=25, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(data=st.data())
def test_extract_then_apply_reproduces_the_tree(data: st.DataObject) -> None:
    base = data.draw(trees, label="base")
    assume(_consistent(base))
    new: dict[str, bytes] = {}
    for path, content in base.items():
        action = data.draw(st.sampled_from(["keep", "modify", "delete", "rename"]), label=f"action {path}")
        if action == "keep":
            new[path] = content
        elif action == "modify":
            new[path] = data.draw(contents, label=f"new content {path}")
        elif action == "rename":
            new[data.draw(paths, label=f"rename {path}")] = content
    for path, content in data.draw(trees, label="added").items():
        new.setdefault(path, content)
    assume(_consistent(new) and _consistent({**base, **new}))
    deleted = [p for p in base if p not in new]
    listing = run_sync(_roundtrip(base, new, deleted))
    assert listing == {p: hashlib.sha256(d).hexdigest() for p, d in new.items()}
