"""Apptainer specifics on the real runtime: SIF resolution and its cache, the writable layer, ordinary users."""

from __future__ import annotations

import json
import os
import pwd
import shutil
import subprocess
import sys
import tempfile
from collections.abc import Iterator
from pathlib import Path

import pytest

from swe_gym.errors import ImageNotFoundError, ProviderUnavailableError
from swe_gym.sandbox import Sandbox, SandboxSpec, get_provider
from swe_gym.sandbox.loop import run_sync
from tests.conftest import TEST_IMAGE, require

TEST_USER = os.environ.get("SWE_GYM_APPTAINER_TEST_USER", "swegymtest")


@pytest.fixture(scope="module")
def test_sif() -> Path:
    """The cached SIF of the test image (built on first use)."""
    require("apptainer")
    return run_sync(get_provider("apptainer").sifs.get(TEST_IMAGE))


@pytest.fixture
def shared_dir() -> Iterator[Path]:
    """A directory every user can read (pytest's tmp_path is private to root)."""
    path = Path(tempfile.mkdtemp(prefix="swe_gym-apptainer-test-"))
    path.chmod(0o755)
    yield path
    shutil.rmtree(path, ignore_errors=True)


def test_missing_runtime_is_a_clear_error() -> None:
    provider = get_provider("apptainer", binary="no-such-apptainer")
    with pytest.raises(ProviderUnavailableError, match="no-such-apptainer is not on PATH"):
        provider.binary  # noqa: B018


def test_missing_images_are_clear_errors(tmp_path: Path) -> None:
    require("apptainer")
    provider = {"type": "apptainer", "cache_dir": str(tmp_path)}
    with pytest.raises(ImageNotFoundError, match="does not exist"):
        Sandbox.create(SandboxSpec(image=str(tmp_path / "nope.sif")), provider)
    # Not on the local daemon, and no registry is reachable: the pull fails with apptainer's reason.
    with pytest.raises(ImageNotFoundError, match="swe-gym-no-such-image"):
        Sandbox.create(SandboxSpec(image="swe-gym-no-such-image:0"), provider)
    assert not list(tmp_path.glob("*.sif")) and not list(tmp_path.glob("*.part-*"))


def test_sif_path_and_sif_dir_are_used_as_given(test_sif: Path, tmp_path: Path) -> None:
    empty_cache = tmp_path / "cache"
    with Sandbox.create(SandboxSpec(image=str(test_sif)), {"type": "apptainer", "cache_dir": str(empty_cache)}) as box:
        assert box.exec("cat /etc/debian_version").ok
    sif_dir = tmp_path / "sifs"
    sif_dir.mkdir()
    (sif_dir / "swe-gym-test_bookworm.sif").symlink_to(test_sif)
    config = {"type": "apptainer", "cache_dir": str(empty_cache), "sif_dir": str(sif_dir)}
    with Sandbox.create(SandboxSpec(image=TEST_IMAGE), config) as box:
        assert box.exec("echo from-sif-dir").output == "from-sif-dir\n"
    assert not empty_cache.exists()  # nothing was built


def test_concurrent_processes_build_a_sif_once(tmp_path: Path) -> None:
    """Two processes asking for the same missing SIF: one builds, the other waits and reuses it."""
    require("apptainer")
    cache = tmp_path / "cache"
    script = (
        "import json, logging, sys; from swe_gym.sandbox import Sandbox, SandboxSpec;"
        "logging.basicConfig(level=logging.INFO, format='%(message)s');"
        f"box = Sandbox.create(SandboxSpec(image={TEST_IMAGE!r}), json.loads(sys.argv[1]));"
        "print(box.exec('echo ready').output.strip()); box.close()"
    )
    lz4 = ["--mksquashfs-args", "-comp lz4"]  # faster to build than the default gzip
    config = json.dumps({"type": "apptainer", "cache_dir": str(cache), "build_options": lz4})
    argv = [sys.executable, "-c", script, config]
    owners = [subprocess.Popen(argv, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True) for _ in range(2)]
    results = [owner.communicate(timeout=600) for owner in owners]
    assert all(owner.returncode == 0 for owner in owners), [err[-2000:] for _, err in results]
    assert [out.strip() for out, _ in results] == ["ready", "ready"]
    assert sum(err.count("building SIF for") for _, err in results) == 1
    assert len(list(cache.glob("*.sif"))) == 1 and not list(cache.glob("*.part-*"))


def test_writable_layer_holds_more_than_the_tmpfs_default_and_goes_with_close(test_sif: Path) -> None:
    box = Sandbox.create(SandboxSpec(image=str(test_sif)), {"type": "apptainer"})
    home = box.aio.backend.home
    with box:
        result = box.exec("head -c 300000000 /dev/zero > big.bin && git init -q . && git add big.bin && du -sm big.bin")
        assert result.ok, result.output
        assert result.output.split()[0] == "287"
        assert (home / "overlay" / "upper").is_dir()  # on disk, not in RAM
    assert not home.exists()


def test_environment_is_clean_and_home_is_private(test_sif: Path) -> None:
    os.environ["SWE_GYM_HOST_SECRET"] = "leak"
    try:
        with Sandbox.create(SandboxSpec(image=str(test_sif), env={"TASK_VAR": "yes"}), {"type": "apptainer"}) as box:
            result = box.exec('echo "${SWE_GYM_HOST_SECRET:-unset} $TASK_VAR"; ls -A "$HOME" | wc -l')
            assert result.output.split() == ["unset", "yes", "0"]
    finally:
        del os.environ["SWE_GYM_HOST_SECRET"]


def test_runs_as_an_ordinary_user(test_sif: Path, shared_dir: Path) -> None:
    require("apptainer")
    try:
        user = pwd.getpwnam(TEST_USER)
    except KeyError:
        pytest.fail(f"no user {TEST_USER} (.ci/provision_apptainer.sh creates it)")
    if os.geteuid() != 0:
        pytest.skip("switching to another user needs root")
    sif = shared_dir / "test.sif"
    shutil.copyfile(test_sif, sif)
    sif.chmod(0o644)
    root = shared_dir / "sandboxes"
    root.mkdir()
    os.chown(root, user.pw_uid, user.pw_gid)
    script = (
        "import sys; from swe_gym.sandbox import Sandbox, SandboxSpec;"
        f"box = Sandbox.create(SandboxSpec(image={str(sif)!r}), {{'type': 'apptainer', 'root': {str(root)!r}}});"
        "print(box.exec('id -u; echo kept > f; cat f; tail -n +3 /proc/net/dev | cut -d: -f1').output); box.close()"
    )
    env = {"PATH": os.environ["PATH"], "HOME": user.pw_dir, "LANG": "C.UTF-8"}
    # CAP_DAC_READ_SEARCH only lets the user read this checkout and its venv wherever CI put them
    # (perhaps under a private directory); apptainer itself runs unprivileged, as uid pw_uid.
    caps = ["--inh-caps=+dac_read_search", "--ambient-caps=+dac_read_search"]
    argv = ["setpriv", f"--reuid={user.pw_uid}", f"--regid={user.pw_gid}", "--init-groups", *caps]
    result = subprocess.run(
        [*argv, sys.executable, "-c", script], capture_output=True, text=True, env=env, cwd="/", timeout=300
    )
    assert result.returncode == 0, result.stderr[-2000:]
    assert result.stdout.split() == [str(user.pw_uid), "kept", "lo"]
    assert not list(root.iterdir())


def test_fork_needs_the_writable_layer_on_disk(test_sif: Path) -> None:
    from swe_gym.errors import ForkNotSupportedError

    with Sandbox.create(SandboxSpec(image=str(test_sif)), {"type": "apptainer", "writable": "tmpfs"}) as box:
        with pytest.raises(ForkNotSupportedError, match="writable='overlay'"):
            box.fork()
