"""Patches in and out of a sandbox, with git made deaf to the repository's own configuration.

Extraction diffs the working tree against a snapshot taken at reset (a tree
object written with a private index), so the image's own uncommitted state is
never part of the agent's patch and the agent's commits, new files and deletions
all are; ignored files (build output, caches) are not.

The agent controls its repository's ``.git/config``, ``.git/info`` and every
``.gitattributes``: diff prefixes, external diff and textconv drivers, clean
filters, fsmonitor and hook commands would all run or shape our output. So
snapshot and extraction use a private git directory of ours (empty config, no
system or global config, every attribute unset by our own ``info/attributes``,
which outranks the work tree's) that borrows the repository's objects.

Applying checks every path a patch names first: nothing may reach ``.git`` or
leave the repository, whichever tool of the ladder would apply it.
"""

from __future__ import annotations

import re
import shlex

from swe_gym.errors import GradingError, SandboxDiedError, SandboxError
from swe_gym.sandbox import AsyncSandbox

#: Scratch space inside the repository's .git: present on every provider, never in a diff.
SCRATCH = ".git/swe_gym"
_PRIVATE = f"{SCRATCH}/git"

#: Environment of every git command of ours: no system, global or repository configuration.
GIT_ENV = (
    "GIT_CONFIG_NOSYSTEM=1 GIT_CONFIG_GLOBAL=/dev/null HOME=/nonexistent XDG_CONFIG_HOME=/nonexistent "
    "GIT_TERMINAL_PROMPT=0 GIT_OPTIONAL_LOCKS=0"
)
_PRIVATE_GIT = (
    f'export {GIT_ENV} GIT_DIR="$PWD/{_PRIVATE}" GIT_WORK_TREE="$PWD" GIT_INDEX_FILE="$PWD/{_PRIVATE}/index" '
    f'GIT_OBJECT_DIRECTORY="$PWD/{_PRIVATE}/objects" GIT_ALTERNATE_OBJECT_DIRECTORIES="$PWD/.git/objects"; '
    "unset GIT_COMMON_DIR GIT_NAMESPACE GIT_CEILING_DIRECTORIES GIT_CONFIG GIT_CONFIG_PARAMETERS GIT_CONFIG_COUNT; "
)
#: Unset (``!``) every attribute that changes content or diffs, for every path; info/attributes wins.
_NEUTRAL_ATTRIBUTES = "* !text !eol !crlf !filter !diff !merge !ident !working-tree-encoding !binary\n"

_PREPARE = (
    # Everything but the objects (the base tree's) is made anew: a planted commondir, config or
    # alternates file would otherwise steer our git.
    f'p="$PWD/{_PRIVATE}"; mkdir -p "$p"; [ ! -L "$p/objects" ] || rm -f "$p/objects"; '
    'find "$p" -mindepth 1 -maxdepth 1 ! -name objects -exec rm -rf {} +; rm -rf "$p/objects/info"; '
    'mkdir -p "$p/objects" "$p/refs" "$p/info"; '
    'echo \'ref: refs/heads/swe-gym\' > "$p/HEAD"; : > "$p/config"; '
    f"printf '%s' {shlex.quote(_NEUTRAL_ATTRIBUTES)} > \"$p/info/attributes\"; "
    + _PRIVATE_GIT
    # The repository's index spares re-hashing unchanged files; one git cannot read is dropped.
    + 'if [ -f .git/index ]; then cp .git/index "$GIT_INDEX_FILE"; '
    'git ls-files --stage >/dev/null 2>&1 || rm -f "$GIT_INDEX_FILE"; fi; '
)
_SNAPSHOT = "set -e; " + _PREPARE + "git add -A >/dev/null 2>&1; git write-tree"

#: Patches larger than this are refused: real fixes are kilobytes; a diff of megabytes is a build output,
#: a data file or a runaway command left in the work tree. `swe_gym.evaluate` takes no larger prediction.
MAX_PATCH_BYTES = 5 << 20
#: Seconds the extraction of a patch may take (a work tree of millions of files) before it is refused.
PATCH_TIMEOUT_S = 120.0

_TOO_BIG = "swe_gym-too-big"
_DIFF_SIZE = "swe_gym-diff-size"
#: Run for each regular file over the limit (found by ``find``): the first that ``git add -A`` would take
#: (not ignored, not in an embedded repository, not the base's file of that size) is named, and the search
#: ends, before git reads any of them (a sparse 10 GiB file would cost git minutes and its memory).
_FIRST_TOO_BIG = (
    "for f do "
    'd=${f%/*}; inner=; while [ "$d" != . ] && [ -n "$d" ]; do '
    '[ -e "$d/.git" ] && { inner=1; break; }; d=${d%/*}; done; '
    '[ -z "$inner" ] || continue; git check-ignore -q -- "$f" 2>/dev/null && continue; '
    'p=${f#./}; s=$(stat -c %s -- "$f" 2>/dev/null) || s=?; '
    '[ "$(git cat-file -s "$SWE_GYM_BASE:$p" 2>/dev/null)" = "$s" ] && continue; '
    f'printf \'{_TOO_BIG} %s %s\\n\' "$s" "$p"; exit 0; done'
)


def _diff_command(base_tree: str, out: str, max_bytes: int) -> str:
    """The script that writes the agent's diff to ``out``, cut one byte past ``max_bytes`` (so no work tree
    fills the sandbox's disk or our memory with it), and ends by printing its size and git's exit status; or
    that names a file over ``max_bytes`` that git would add, reading none of them."""
    find_big = (
        f"find . -path ./.git -prune -o -name .git -prune -o -type f -size +{max_bytes}c "
        f"-exec sh -c {shlex.quote(_FIRST_TOO_BIG)} sh {{}} + 2>/dev/null | head -n 1"
    )
    diff = (
        "git -c core.quotepath=off diff --binary --full-index --no-color --no-ext-diff --no-textconv "
        f'--no-renames --src-prefix=a/ --dst-prefix=b/ {shlex.quote(base_tree)} "$tree"'
    )
    return (
        f"set -e; {_PREPARE}export SWE_GYM_BASE={shlex.quote(base_tree)}; "
        f'big=$({find_big}); if [ -n "$big" ]; then echo "$big"; exit 0; fi; '
        # What git add cannot read fails it, its error the reason given: a file (which git refuses) or a
        # directory (which git would leave out with a warning) of mode 000.
        f'git add -A >/dev/null 2>"$p/add.log" || {{ cat "$p/add.log"; exit 1; }}; '
        f'if grep "^warning: could not open directory" "$p/add.log"; then exit 1; fi; '
        f"tree=$(git write-tree); rm -f {out} {out}.rc; "
        f'{{ if {diff}; then s=0; else s=$?; fi; echo "$s" > {out}.rc; }} | head -c {max_bytes + 1} > {out}; '
        f'echo "{_DIFF_SIZE} $(wc -c < {out}) $(cat {out}.rc)"'
    )


#: Tried in order until one applies the whole patch; nothing partial is kept. ``patch -u`` reads the
#: patch as a unified diff only (no ed scripts); paths are checked by `unsafe_path` before any of them.
APPLY_LADDER: tuple[tuple[str, str], ...] = (
    ("git apply", f"{GIT_ENV} git apply --verbose --binary {{patch}}"),
    ("git apply --recount", f"{GIT_ENV} git apply --verbose --binary --recount --ignore-whitespace {{patch}}"),
    (
        "patch --fuzz=5",
        "patch --batch -u --fuzz=5 -p1 --no-backup-if-mismatch --dry-run -i {patch} && "
        "patch --batch -u --fuzz=5 -p1 --no-backup-if-mismatch -i {patch}",
    ),
)

_DIFF_HEADER = re.compile(r"^diff --git (\"?a/.+?\"?) (\"?b/.+\"?)$", re.MULTILINE)
#: Header lines from which git apply or GNU patch take a file name (none can be a hunk line).
_NAME_LINE = re.compile(r"^(?:diff --git (?P<git>.+)|Index: (?P<index>.+)|(?:rename|copy) (?:from|to) (?P<move>.+))$")
#: A unified file header: ``---``, ``+++``, then the first hunk (inside a hunk, ``-- x`` is a removed line).
_UNIFIED_HEADER = re.compile(r"^--- ([^\t\n]+).*\n\+\+\+ ([^\t\n]+).*\n@@", re.MULTILINE)


def _unquote(path: str) -> str:
    """A git-quoted path (``"a/\\303\\251"``) as text."""
    if len(path) >= 2 and path[0] == path[-1] == '"':
        raw = path[1:-1].encode("latin-1", "backslashreplace").decode("unicode_escape")
        return raw.encode("latin-1", "replace").decode("utf-8", "replace")
    return path


def patch_paths(patch: str) -> list[str]:
    """Every path a git diff's headers name (old and new side), without the ``a/`` ``b/`` prefixes.

    For display only: what a patch changed is decided from what applying it did (`changes`).
    """
    found: list[str] = []
    for old, new in _DIFF_HEADER.findall(patch):
        for path in (_unquote(old)[2:], _unquote(new)[2:]):
            if path not in found:
                found.append(path)
    return found


def _bad_component(path: str) -> str | None:
    path = path.strip()
    if path == "/dev/null" or not path:
        return None
    if path.startswith("/"):
        return "an absolute path"
    for part in path.split("/"):
        if part == "..":
            return "a '..' component"
        if part.lower().rstrip(". ") == ".git":
            return "the repository's .git directory"
    return None


def unsafe_path(patch: str) -> str | None:
    """Why ``patch`` would write outside the work tree or into ``.git``, or None.

    Checks each name as written and with its first component stripped (``-p1``), in every
    header line either tool reads, so no method of the ladder can be steered there.
    """
    names: list[str] = []
    for line in patch.splitlines():
        match = _NAME_LINE.match(line)
        if match:
            git = match.group("git")
            names += git.split(" ") if git is not None else [match.group("index") or match.group("move")]
    names += [name for pair in _UNIFIED_HEADER.findall(patch) for name in pair]
    for name in names:
        name = _unquote(name.strip())
        stripped = name.split("/", 1)[1] if "/" in name else name
        for candidate in (name, stripped):
            reason = _bad_component(candidate)
            if reason:
                return f"the patch names {name!r}, {reason}"
    return None


async def snapshot(sandbox: AsyncSandbox) -> str:
    """Tree id of the workdir as it is now (tracked and untracked, minus ignored files)."""
    result = await sandbox.exec(_SNAPSHOT, timeout=300)
    tree = result.output.strip().splitlines()[-1] if result.output.strip() else ""
    if result.exit_code != 0 or not re.fullmatch(r"[0-9a-f]{40,64}", tree):
        raise GradingError(
            f"could not snapshot the repository (is {sandbox.workdir} a git checkout?): {result.output[-500:]}"
        )
    return tree


def _mib(size: int) -> str:
    return f"{size / (1 << 20):.1f} MiB"


async def extract_patch(
    sandbox: AsyncSandbox,
    base_tree: str,
    *,
    max_bytes: int = MAX_PATCH_BYTES,
    timeout: float = PATCH_TIMEOUT_S,
) -> str:
    """The agent's changes since ``snapshot``, as a binary-safe git diff with ``a/`` ``b/`` prefixes.

    Binary files are in it as git binary patches; FIFOs, sockets and devices are not (git takes none);
    symbolic links are, as links. Raises `GradingError` saying why when no patch can be read, whatever the
    work tree holds: a file over ``max_bytes`` that the diff would take (refused before git reads it), a
    diff over ``max_bytes``, a file git cannot read, an extraction past ``timeout`` seconds (a tree of
    millions of files), a repository that no longer allows a diff (the agent deleted .git). Only a dead
    sandbox raises otherwise (`SandboxDiedError`).
    """
    out = f"{SCRATCH}/agent.diff"
    result = await sandbox.exec(_diff_command(base_tree, out, max_bytes), timeout=timeout)
    if result.timed_out:
        raise GradingError(
            f"the work tree's diff did not finish within {timeout:g}s, the patch timeout (does the work tree "
            "hold millions of files?)"
        )
    # The script's own last line (what git printed before it is the agent's to shape).
    printed, _, last = result.output.rstrip("\n").rpartition("\n")
    found = re.fullmatch(rf"{_TOO_BIG} (\S+) (.*)", last)
    if found is not None:
        size = f"a file of {_mib(int(found[1]))}" if found[1].isdigit() else "a file"
        raise GradingError(
            f"the work tree holds {found[2]!r}, {size}: over the patch limit of {_mib(max_bytes)} "
            "(delete it, or list it in .gitignore, before submitting)"
        )
    sized = re.fullmatch(rf"{_DIFF_SIZE} (\d+) (\d*)", last)
    if sized is not None and int(sized[1]) > max_bytes:
        raise GradingError(
            f"the work tree's diff is over {_mib(max_bytes)}, the patch limit (are build outputs or data "
            "files left in the work tree? delete them, or list them in .gitignore, before submitting)"
        )
    if result.exit_code != 0 or sized is None or sized[2] != "0":
        raise GradingError(f"could not extract the patch: {(printed if sized else result.output)[-500:]}")
    try:
        data = await sandbox.read_file(out, max_bytes=max_bytes)
    except SandboxDiedError:
        raise
    except SandboxError as exc:  # the file changed under us: a process the agent left running
        raise GradingError(f"could not read the patch: {exc}") from exc
    return data.decode("utf-8", errors="surrogateescape")


async def apply_patch(sandbox: AsyncSandbox, patch: str, name: str = "agent.patch") -> tuple[str | None, str]:
    """Apply ``patch`` with the first method of `APPLY_LADDER` that takes all of it.

    Returns (method or None, the log of the attempts). A patch naming a path in ``.git`` or
    outside the repository is refused before any method runs.
    """
    refused = unsafe_path(patch)
    if refused:
        return None, f"refused: {refused}"
    path = f"{SCRATCH}/{name}"
    await sandbox.write_file(path, patch.encode("utf-8", errors="surrogateescape"))
    attempts = []
    for method, template in APPLY_LADDER:
        result = await sandbox.exec(template.format(patch=shlex.quote(path)), timeout=300)
        attempts.append(f"$ {method} -> exit {result.exit_code}\n{result.output}")
        if result.exit_code == 0:
            return method, "\n".join(attempts)
    return None, "\n".join(attempts)
