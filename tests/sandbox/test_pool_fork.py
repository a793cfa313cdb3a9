"""Forks from the warm pool (`SandboxPool.fork`): the source's changes replayed in sandboxes the pool started, on
every provider (those without `PoolForker` fork anew, through the same call), as copies as faithful and isolated
as a fork into a new sandbox."""

from __future__ import annotations

import asyncio
import sys
from pathlib import Path

import pytest

from swe_gym.sandbox import AsyncSandbox, SandboxSpec, current_run_id
from swe_gym.sandbox import delta as delta_module
from swe_gym.sandbox.loop import run_sync
from swe_gym.sandbox.pool import SandboxPool
from swe_gym.sandbox.protocol import PoolForker
from tests.conftest import kill_from_outside, leftover_sandboxes, provider_setup
from tests.sandbox.test_provider_contract import DAEMON, DAEMON_RUNS

#: Providers whose forks from the pool replay the changes in a pooled sandbox (the others fork anew).
REPLAYING = {"local", "docker"}
#: On an image: a file of the image deleted (a whiteout), a directory of it deleted and made anew (opaque, so the
#: image's other files there must not come back), a symlink of it replaced by a file (written beside, never through
#: the link: its target stays the image's), owners and modes (setuid, sticky) kept, and a file of the image with
#: new metadata only (sent as that metadata).
IMAGE_CHANGES = (
    "rm -f /etc/debian_version && rm -rf /usr/share/doc/bash && mkdir /usr/share/doc/bash "
    "&& echo new > /usr/share/doc/bash/only && rm /usr/bin/awk && echo notalink > /usr/bin/awk "
    "&& echo owned > owned && chmod 4755 owned && mkdir -p sticky && chmod 1777 sticky "
    "&& chmod 640 /etc/issue && touch -d @1000000000 /etc/issue"  # the image's bytes, new metadata: a touch entry
)
#: Where commands are root (docker): owners other than root's, kept as numbers.
OWNERS = "chown 1234:2345 owned && chmod 4755 owned"  # chown clears setuid: mode again
IMAGE_CHECK = (
    "test -e /etc/debian_version || echo gone; ls /usr/share/doc/bash; cat /usr/bin/awk; "
    "test -L /etc/alternatives/awk && echo alternative-kept; stat -c '%a' owned sticky; stat -c '%a %Y' /etc/issue"
)
IMAGE_EXPECTED = ["gone", "only", "notalink", "alternative-kept", "4755", "1777", "640", "1000000000"]


def test_forks_from_the_pool_are_faithful_isolated_copies(isolated_provider: str) -> None:
    """Repository, /tmp, $HOME and (on images) the image's files as the source left them; no process; writes never
    cross between the source and its forks; labels and ids of their own; the pool refills behind."""
    config, image = provider_setup(isolated_provider)
    spec = SandboxSpec(image=image, env={"SWE_GYM_PROBE": "probe"})

    async def scenario() -> None:
        pool = SandboxPool(config, size=3)
        source: AsyncSandbox | None = None
        forks: list[AsyncSandbox] = []
        try:
            pool.prefetch([spec])
            await pool.wait_ready()
            source = await pool.take(spec)
            await asyncio.sleep(0.5)
            await pool.wait_ready()
            changes = "mkdir -p pkg ~/.local/lib && echo repo > pkg/f.txt && echo tmp > /tmp/t && echo lib > "
            changes += f"~/.local/lib/m.py && touch \"$(printf 'odd-\\377')\" && {DAEMON}"  # a name not UTF-8
            assert (await source.exec(changes)).ok
            if image is not None:
                assert (await source.exec(IMAGE_CHANGES)).ok
            if isolated_provider == "docker":
                assert (await source.exec(OWNERS)).ok
            forks = await pool.fork(source, 2, labels={"branch": "b"})
            replayed = isinstance(pool.provider, PoolForker) and isolated_provider in REPLAYING
            assert pool.stats.forked == (2 if replayed else 0)
            assert len({source.id, *(fork.id for fork in forks)}) == 3
            for fork in forks:
                assert fork.spec.labels == {**source.spec.labels, "branch": "b", "forked_from": source.id}
                probe = f'cat pkg/f.txt /tmp/t ~/.local/lib/m.py; echo "$SWE_GYM_PROBE"; {DAEMON_RUNS}; '
                probe += "test -e \"$(printf 'odd-\\377')\" && echo odd"
                assert (await fork.exec(probe)).output.split() == ["repo", "tmp", "lib", "probe", "none", "odd"]
                if image is not None:
                    assert (await fork.exec(IMAGE_CHECK)).output.split() == IMAGE_EXPECTED
                if isolated_provider == "docker":
                    assert (await fork.exec("stat -c %u:%g owned")).output == "1234:2345\n"
            assert (await source.exec(DAEMON_RUNS)).output == "running\n"
            for name, box in (("one", forks[0]), ("two", forks[1]), ("source", source)):
                await box.exec(f"echo {name} > pkg/f.txt; echo {name} > /tmp/t; echo {name} > only-{name}")
            for name, box in (("one", forks[0]), ("two", forks[1]), ("source", source)):
                assert (await box.exec("cat pkg/f.txt /tmp/t; ls only-*")).output.split() == [
                    name,
                    name,
                    f"only-{name}",
                ]
            await asyncio.sleep(0.5)
            await pool.wait_ready()
            assert pool.ready_count(spec) == 3  # refilled in the background
        finally:
            await asyncio.gather(*(box.close() for box in [*forks, *([source] if source else [])]))
            await pool.close()

    run_sync(scenario())
    assert not any(leftover_sandboxes().values())


@pytest.mark.parametrize("provider", ["local", "docker"])
def test_a_pooled_sandbox_that_died_is_never_a_fork(provider: str) -> None:
    """A pooled sandbox killed from outside before the fork: the forks are whole copies all the same, none of them
    the dead one (local asks each target meanwhile; docker's copy goes through each target's runner, so a dead one
    fails the replay)."""
    config, image = provider_setup(provider)
    spec = SandboxSpec(image=image)

    async def start() -> tuple[SandboxPool, AsyncSandbox, AsyncSandbox]:
        pool = SandboxPool(config, size=2)
        pool.prefetch([spec])
        await pool.wait_ready()
        source = await AsyncSandbox.create(spec, pool.provider)
        await source.exec("echo state > f")
        (queue,) = pool._ready.values()
        return pool, source, queue[0][1]

    async def fork(pool: SandboxPool, source: AsyncSandbox) -> list[AsyncSandbox]:
        return await pool.fork(source, 2)

    pool, source, victim = run_sync(start())
    forks: list[AsyncSandbox] = []
    try:
        kill_from_outside(victim)
        forks = run_sync(fork(pool, source))
        assert len(forks) == 2 and victim not in forks
        # local drops the dead one and replays into the other; on docker the failed replay forks both anew
        assert pool.stats.forked == (1 if provider == "local" else 0)
        assert [run_sync(box.read_file("f")) for box in forks] == [b"state\n"] * 2
    finally:
        for box in [*forks, source]:
            run_sync(box.close())
        run_sync(pool.close())
    assert not any(leftover_sandboxes().values())


@pytest.mark.parametrize("provider", ["local", "docker"])
def test_a_short_pool_forks_the_rest_anew_and_a_big_change_forks_anew(
    provider: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    """fork(3) from a pool holding 1: one replayed, two new sandboxes, all alike. A change past the replay's limit
    (docker: content bytes or entries) forks into a new sandbox."""
    config, image = provider_setup(provider)
    spec = SandboxSpec(image=image)

    async def scenario() -> None:
        pool = SandboxPool(config, size=1)
        source = forks = None
        try:
            pool.prefetch([spec])
            await pool.wait_ready()
            source = await AsyncSandbox.create(spec, pool.provider)
            await source.exec("echo state > f")
            forks = await pool.fork(source, 3)
            assert pool.stats.forked == 1 and len(forks) == 3
            assert [(await fork.read_file("f")) for fork in forks] == [b"state\n"] * 3
            if provider == "docker":
                await asyncio.gather(*(fork.close() for fork in forks))
                forks = []
                await asyncio.sleep(0.5)
                await pool.wait_ready()
                for limit, value in (("MAX_DELTA_BYTES", 4), ("MAX_DELTA_ENTRIES", 1)):  # too much to replay
                    monkeypatch.setattr(delta_module, limit, value)
                    forks += await pool.fork(source, 1)
                    assert pool.stats.forked == 1 and (await forks[-1].read_file("f")) == b"state\n"
                    monkeypatch.undo()
                    await asyncio.sleep(0.5)
                    await pool.wait_ready()
        finally:
            await asyncio.gather(*(box.close() for box in [*(forks or []), *([source] if source else [])]))
            await pool.close()

    run_sync(scenario())
    assert not any(leftover_sandboxes().values())


#: A listing of everything under the workdir, /tmp and $HOME: type, mode, size, mtime, link target, content hash.
#: Where the interpreter running swe_gym lives under /tmp (a checkout cloned there): the sandbox sees it bound into
#: its /tmp, which is the host's, not the sandbox's own.
_HOST_IN_TMP = sorted(
    {Path(path).resolve().relative_to("/tmp").parts[0] for path in {sys.prefix, sys.base_prefix}
     if Path(path).resolve().is_relative_to("/tmp")}
)  # fmt: skip
_PRUNE = "".join(f"-path ./{name} -prune -o " for name in _HOST_IN_TMP)
TREE = (
    f"for d in . /tmp ~; do (cd $d && find . {_PRUNE}-printf '%y %m %s %T@ %l %p\\n' | sort "
    f"&& find . {_PRUNE}-type f -exec md5sum {{}} + | sort -k2); done"
)
#: Changes against a saved home: in place with an old mtime (the ctime catches it), deletions, a directory moved
#: (its children keep their ctime, their paths are new), another put where one was, a link replaced by a file.
SAVED_CHANGES = (
    "printf 'ALPHA\\n' > pkg/a.py && touch -d @1000000000 pkg/a.py && rm pkg/sub/b.txt && mv other moved "
    "&& mkdir other && echo fresh > other/new && rm link && echo notalink > link && chmod 600 moved/c.txt "
    "&& echo tmp2 >> /tmp/t && echo home > ~/h"
)


def _same_tree(got: str, expected: str) -> None:
    """``got`` lists what ``expected`` does; a failure names the differing lines (a diff of the whole listing would
    take pytest minutes)."""
    have, want = got.splitlines(), expected.splitlines()
    missing, extra = sorted(set(want) - set(have)), sorted(set(have) - set(want))
    same = have == want  # out of the assert: pytest would diff the lists
    assert same, f"missing {missing[:30]}; extra {extra[:30]}"


def test_local_forks_from_a_saved_home_rewrite_only_what_changed() -> None:
    """A local image (`LocalProvider.commit`: a saved home): its pool's sandboxes start from copies, a fork from the
    pool gets exactly the source's tree (every entry, byte and time) with only its changes written, forks stay
    isolated, and cleanup removes the saved home with the run."""
    config, _ = provider_setup("local")

    async def scenario() -> None:
        pool = SandboxPool(config, size=2)
        provider = pool.provider
        maker = await AsyncSandbox.create(SandboxSpec(), provider)
        source = None
        forks: list[AsyncSandbox] = []
        image = f"swe-gym-test-saved:{current_run_id()}"
        try:
            made = "mkdir -p pkg/sub other && echo alpha > pkg/a.py && echo bravo > pkg/sub/b.txt "
            made += "&& echo charlie > other/c.txt && ln -s pkg/a.py link && echo t > /tmp/t"
            assert (await maker.exec(made)).ok
            await provider.commit(maker.backend, image, {"purpose": "test"})
            info = await provider.image_info(image)
            assert info is not None and info.labels["swe_gym.purpose"] == "test"
            spec = SandboxSpec(image=image)
            pool.prefetch([spec])
            await pool.wait_ready()
            source = await pool.take(spec)
            assert (await source.exec("cat pkg/a.py other/c.txt /tmp/t")).output.split() == ["alpha", "charlie", "t"]
            assert (await source.exec(SAVED_CHANGES)).ok
            await asyncio.sleep(0.5)
            await pool.wait_ready()
            forks = await pool.fork(source, 2)
            assert pool.stats.forked == 2  # both rewritten in the pool's sandboxes, none forked anew
            expected = (await source.exec(TREE)).output
            assert "moved/c.txt" in expected and "ALPHA" not in expected
            for fork in forks:
                _same_tree((await fork.exec(TREE)).output, expected)
            for name, box in (("one", forks[0]), ("two", forks[1]), ("source", source)):
                await box.exec(f"echo {name} > pkg/a.py; rm -rf other; echo {name} > /tmp/t")
            for name, box in (("one", forks[0]), ("two", forks[1]), ("source", source)):
                assert (await box.exec("cat pkg/a.py /tmp/t; ls")).output.split() == [
                    name, name, "link", "moved", "pkg",
                ]  # fmt: skip
            await asyncio.sleep(0.5)
            await pool.wait_ready()
            fork_of_fork = await pool.fork(forks[0], 1)  # a fork is of the image too: forked the same way
            forks += fork_of_fork
            assert pool.stats.forked == 3
            _same_tree((await fork_of_fork[0].exec(TREE)).output, (await forks[0].exec(TREE)).output)
        finally:
            await asyncio.gather(*(box.close() for box in [maker, *forks, *([source] if source else [])]))
            await pool.close()
        removed = await provider.cleanup(run_id=current_run_id(), labels={"purpose": "test"})
        assert removed and await provider.image_info(image) is None

    run_sync(scenario())
    assert not any(leftover_sandboxes().values())


def test_a_local_pool_of_no_image_serves_every_saved_home() -> None:
    """Sandboxes of no image become a saved home's on take (`ImageAdopter`: its files copied in), so one pool
    serves every prepared task; only forking an image makes the pool keep sandboxes of that image."""
    config, _ = provider_setup("local")

    async def scenario() -> None:
        pool = SandboxPool(config, size=2)
        provider = pool.provider
        maker = await AsyncSandbox.create(SandboxSpec(), provider)
        boxes: list[AsyncSandbox] = []
        image = f"swe-gym-test-adopt:{current_run_id()}"
        try:
            assert (await maker.exec("mkdir pkg && echo base > pkg/f && echo t > /tmp/t")).ok
            await provider.commit(maker.backend, image, {"purpose": "adopt-test"})
            pool.prefetch([SandboxSpec()])
            await pool.wait_ready()
            spec = SandboxSpec(image=image)
            box = await pool.take(spec)
            boxes.append(box)
            assert pool.stats.hits == 1 and pool.ready_count(spec) == 0 and box.spec.image == image
            assert (await box.exec("cat pkg/f /tmp/t")).output.split() == ["base", "t"]
            assert (await box.exec("echo mine > pkg/f")).ok
            await pool.wait_ready()
            boxes += await pool.fork(box, 1)  # adopted from the plain pool too; the image's own pool starts
            assert pool.stats.forked == 1
            await asyncio.sleep(0.5)
            await pool.wait_ready()
            assert pool.ready_count(spec) == 2
            boxes += await pool.fork(box, 2)
            assert pool.stats.forked == 3
            for fork in boxes[1:]:
                assert (await fork.exec("cat pkg/f /tmp/t")).output.split() == ["mine", "t"]
        finally:
            await asyncio.gather(*(b.close() for b in [maker, *boxes]))
            await pool.close()
            await provider.cleanup(run_id=current_run_id(), labels={"purpose": "adopt-test"})

    run_sync(scenario())
    assert not any(leftover_sandboxes().values())


#: A directory tree deeper than Python's recursion goes (os.walk, shutil.rmtree and a naive walk recurse).
DEEP = "mkdir -p $(printf 'd/%.0s' $(seq 1200))leaf && echo bottom > $(printf 'd/%.0s' $(seq 1200))leaf/f"


def test_a_tree_deeper_than_python_recurses_forks_and_goes(isolated_provider: str) -> None:
    """A sandbox's commands can make a tree deeper than Python recurses: its forks from the pool are whole copies
    all the same (replayed, or made anew where the replay cannot walk it), and closing leaves nothing behind."""
    config, image = provider_setup(isolated_provider)
    spec = SandboxSpec(image=image)

    async def scenario() -> None:
        pool = SandboxPool(config, size=2)
        source = await AsyncSandbox.create(spec, pool.provider)
        forks: list[AsyncSandbox] = []
        try:
            pool.prefetch([spec])
            await pool.wait_ready()
            assert (await source.exec(DEEP)).ok
            forks = await pool.fork(source, 2)
            for box in forks:
                found = await box.exec("cat $(printf 'd/%.0s' $(seq 1200))leaf/f")
                assert found.output == "bottom\n", found.output[-300:]
        finally:
            await asyncio.gather(*(box.close() for box in [*forks, source]))
            await pool.close()

    run_sync(scenario())
    assert not any(leftover_sandboxes().values())
