"""Whatever the work tree holds, ``submit`` ends the episode with a verdict: never an exception, never a mask.

Real episodes on the bwrap-isolated local provider and on Docker. A work tree whose patch cannot be read (a file
or a diff over the patch limit, a sparse 10 GiB file, a file still growing, a file or directory git cannot read,
a million files past the patch timeout) ends terminated, unresolved, reward 0.0, with ``info["patch_error"]``
saying why; binary files, a FIFO, a dangling symbolic link and text that is not UTF-8 are graded as the patch
holds them. The same for ``swe-gym evaluate`` with a predictions file whose patches are raw bytes (the served
step: tests/integrations/test_openenv_serve.py).
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import gymnasium as gym
import pytest

import swe_gym  # noqa: F401 - registers the env
from tests.conftest import provider_setup
from tests.test_evaluate import MODEL, TASKS, added_file_patch, run_evaluate

#: Work trees whose patch cannot be read: (the command that makes one, what the patch_error says).
UNREADABLE = {
    "a 60 MiB file": ("head -c 62914560 /dev/urandom > big.bin", "'big.bin', a file of 60.0 MiB: over the patch"),
    "a diff over the limit": (
        "head -c 3000000 /dev/urandom > a.bin && head -c 3000000 /dev/urandom > b.bin",
        "the work tree's diff is over 5.0 MiB",
    ),
    "a sparse 10 GiB file": ("truncate -s 10G sparse.img", "'sparse.img', a file of 10240.0 MiB"),
    "a file growing while the diff runs": (
        "head -c 6000000 /dev/urandom > grow.bin; "
        "(for i in $(seq 300); do head -c 100000 /dev/urandom >> grow.bin; sleep 0.02; done) >/dev/null 2>&1 &",
        "'grow.bin', a file of",
    ),
}
#: Made unreadable by its mode: (the command, a file to probe, the path a patch would name).
MODE_000 = {
    "file": ("echo secret > locked && chmod 000 locked", "locked", "b/locked"),
    "directory": ("mkdir shut && echo x > shut/f && chmod 000 shut", "shut/f", "b/shut/f"),
}


def make_env(provider: str, **options: Any) -> gym.Env:
    config, image = provider_setup(provider)
    return gym.make("swe_gym/SWE-v0", provider=config, image=image, max_steps=5, prestart_grading=False, **options)


@pytest.fixture(scope="module", params=["local", "docker"])
def env(request: pytest.FixtureRequest) -> Iterator[gym.Env]:
    environment = make_env(request.param)
    yield environment
    environment.close()


def submit_after(env: gym.Env, command: str) -> tuple[str, str, dict[str, Any]]:
    """A fresh episode: ``command``, then submit, which must end it unresolved and unmasked without raising;
    what ``command`` printed, the submit's observation and its info."""
    env.reset(options={"task_id": TASKS[0].instance_id})
    printed, _, _, _, info = env.step(command)
    assert info["exit_code"] == 0, printed
    observation, reward, terminated, truncated, info = env.step("submit")
    assert terminated and not truncated and reward == 0.0
    assert not info["masked"] and not info["resolved"]
    return printed, observation, info


def assert_refused(observation: str, info: dict[str, Any], why: str) -> None:
    assert why in (info["patch_error"] or ""), info["patch_error"]
    assert info["patch"] == "" and info["report"]["unresolved_reason"] == info["patch_error"]
    assert info["patch_error"] in observation


@pytest.mark.parametrize("case", list(UNREADABLE))
def test_a_patch_that_cannot_be_read_ends_unresolved_with_the_reason(env: gym.Env, case: str) -> None:
    command, why = UNREADABLE[case]
    _, observation, info = submit_after(env, command)
    assert_refused(observation, info, why)


@pytest.mark.parametrize("case", list(MODE_000))
def test_mode_000_is_a_patch_error_where_the_sandbox_cannot_read_it(env: gym.Env, case: str) -> None:
    """Refused, naming the cause, where the sandbox's user cannot read it (local: no capability overrides the
    mode); in the patch where it can (Docker's root)."""
    make, probe, named = MODE_000[case]
    printed, observation, info = submit_after(env, f"{make}; cat {probe} >/dev/null 2>&1 && echo readable; true")
    if "readable" in printed:
        assert info["patch_error"] is None and named in info["patch"]
    else:
        assert_refused(observation, info, "Permission denied")


def test_binary_files_links_fifos_and_bytes_not_utf8_are_graded_as_the_patch_holds_them(env: gym.Env) -> None:
    """Nothing to refuse: a binary file is a git binary patch, a dangling link a link, a FIFO is left out (and
    hangs nothing), text that is not UTF-8 keeps its bytes; the patch is graded."""
    command = (
        r"printf 'caf\351\000\377' > blob.bin && printf 'caf\351\n' > latin1.txt && mkfifo pipe "
        "&& ln -s /nowhere dangling"
    )
    _, _, info = submit_after(env, command)
    patch = info["patch"].encode("utf-8", "surrogateescape")
    assert info["patch_error"] is None and info["report"]["patch_applied"]
    assert b"diff --git a/blob.bin b/blob.bin" in patch and b"GIT binary patch" in patch
    assert b"+caf\xe9\n" in patch and b"new file mode 120000" in patch and b"+/nowhere" in patch
    assert b"pipe" not in patch


def test_a_million_files_end_at_the_patch_timeout() -> None:
    """One million empty files (hard links: no inode each, so they are made in seconds): reading the patch is
    bounded by ``patch_timeout`` (or, on a machine fast enough to finish first, by the patch limit)."""
    environment = make_env("local", patch_timeout=3, step_timeout=120)
    many = (
        "python3 -c \"import os\nos.mkdir('many')\nfor d in range(16):\n"
        " f = f'many/{d}/0'; os.mkdir(f'many/{d}'); os.close(os.open(f, os.O_CREAT | os.O_WRONLY))\n"
        " for i in range(1, 62500): os.link(f, f'many/{d}/{i}')\""
    )
    try:
        _, observation, info = submit_after(environment, many)
    finally:
        environment.close()
    assert_refused(observation, info, "the work tree's diff")
    assert "did not finish within 3s" in info["patch_error"] or "is over 5.0 MiB" in info["patch_error"]


def test_evaluate_grades_patches_of_raw_bytes(tmp_path: Path) -> None:
    """``swe-gym evaluate`` with a JSONL file whose patches hold raw bytes that are not UTF-8: a diff adding a
    Latin-1 file is graded byte for byte; raw binary data is refused as no diff. Both unresolved, with why."""
    latin1, binary = TASKS[1], TASKS[2]
    patch = added_file_patch("latin1.txt", "caf\udce9").encode("utf-8", "surrogateescape")

    def line(instance_id: str, raw_patch: bytes) -> bytes:
        head = json.dumps({"instance_id": instance_id, "model_name_or_path": MODEL})[:-1].encode()
        return head + b', "model_patch": "' + raw_patch + b'"}\n'

    predictions = tmp_path / "raw.jsonl"
    # JSON escapes for the newlines and the NUL; every byte from 0x80 up is written raw.
    rows = line(latin1.instance_id, patch.replace(b"\n", b"\\n")) + line(binary.instance_id, b"\\u0000\x89PNG\xff\xfe")
    predictions.write_bytes(rows)
    ids = ["--instance-id", latin1.instance_id, binary.instance_id]
    summary, _ = run_evaluate(tmp_path, "--predictions", str(predictions), *ids)
    assert summary["unresolved_ids"] == sorted(ids[1:]) and summary["error_ids"] == []
    ours = summary["swe_gym"]
    assert ours["masked"] == {} and ours["invalid_predictions"] == []
    assert ours["unresolved_reasons"][latin1.instance_id].startswith("not resolved: FAIL_TO_PASS 0/")
    assert "NUL bytes" in ours["unresolved_reasons"][binary.instance_id]
    written = Path(ours["log_dir"]) / MODEL.replace("/", "__") / latin1.instance_id
    assert (written / "patch.diff").read_bytes() == patch
    assert json.loads((written / "report.json").read_text())["patch_applied"]
