"""What the test process imports from outside the work tree, read before the patch, checked after the reinstall.

Three doors into the test process open outside the work tree, and this module watches each:

- **Shadowing.** A new top-level module at an import root of the work tree (cwd, ``src/``) is imported
  before an installed one of the same name. The probe lists every top-level name the base environment
  imports from elsewhere (site-packages, the standard library), so `protect` sends such a module back,
  whichever dependency it shadows.
- **Build code.** When the patch changes build inputs, the eval script's reinstall runs the patch's own
  ``setup.py``. It runs before the restore (`harness`), and the environment's site directories, the
  interpreter's ``bin`` directory and every ``.pth`` file are compared with their state before it: only the
  project's own distribution metadata (``<name>.egg-info``, ``<name>-x.dist-info``, ``__editable__`` files,
  ``.egg-link``, path lines in ``easy-install.pth``) and, for a non-editable install, the project's own
  packages may change. Anything else (a ``.pth`` that imports code, a replaced dependency, a console script
  named like the test runner) is tampering.
- **Plugins.** pytest auto-loads every ``pytest11`` entry point of the distributions it sees, the project's own
  (whose metadata the reinstall rewrites, and which the restore keeps) included. The probe lists them, and the
  grader compares that list after the patch and its reinstall with the base's (`BaseEnvironment.plugins_changed`).

The probe runs ``python -I`` in the sandbox before any code of the patch has run there; the listings
after the reinstall are GNU find's, not the possibly patched interpreter's.
"""

from __future__ import annotations

import json
import re
import shlex
from collections.abc import Collection
from dataclasses import dataclass

from swe_gym.grading.protect import normalized_name

#: Lists, for every interpreter the eval's shell finds, its import roots outside the work tree, the
#: top-level names there, the project's own distributions (whose metadata points into the work tree),
#: its bin directory and each .pth file's text. Python 3.5+ (task images are old).
_PROBE = r"""
import json, os, sys
work = os.path.realpath(sys.argv[1])
def inside(p):
    p = os.path.realpath(p or ".")
    return p == work or p.startswith(work + os.sep)
def text(p):
    try:
        with open(p, "rb") as f:
            return f.read(1 << 20).decode("utf-8", "replace")
    except (OSError, ValueError):
        return ""
dirs = [p for p in sys.path if p and os.path.isdir(p) and not inside(p)]
names, own, pth = set(sys.builtin_module_names), set(), {}
for d in dirs:
    try:
        entries = os.listdir(d)
    except OSError:
        continue
    for e in entries:
        full = os.path.join(d, e)
        if e.endswith(".pth"):
            pth[full] = text(full)
            if any(inside(line.strip()) for line in pth[full].splitlines() if line.strip().startswith("/")):
                own.add(e[: -len(".pth")].replace("__editable__.", "").split("-")[0])
        elif e.endswith(".egg-link"):
            if inside(text(full).splitlines()[0] if text(full) else "/"):
                own.add(e[: -len(".egg-link")])
        elif e.endswith(".dist-info") or e.endswith(".egg-info"):
            url = text(os.path.join(full, "direct_url.json"))
            if work in url:
                own.add(e.split("-")[0].rsplit(".", 1)[0])
        elif e.endswith((".py", ".pyc", ".so", ".pyd")) or (os.path.isdir(full) and "." not in e):
            names.add(e.split(".")[0])
for e in os.listdir(work):
    if e.endswith(".egg-info"):
        own.add(e[: -len(".egg-info")].split("-")[0])
roots = dirs + [work] + [l.strip() for t in pth.values() for l in t.splitlines() if inside(l.strip())]
plugins = set()
for d in roots:
    try:
        metas = [os.path.join(d, e) for e in os.listdir(d) if e.endswith((".dist-info", ".egg-info"))]
    except OSError:
        continue
    for meta in metas + [os.path.join(d, "EGG-INFO")]:
        section = None
        for line in text(os.path.join(meta, "entry_points.txt")).splitlines():
            line = line.strip()
            if line.startswith("["):
                section = line.strip("[] ")
            elif section == "pytest11" and "=" in line:
                plugins.add(" = ".join(part.strip() for part in line.split("=", 1)))
print(json.dumps({"dirs": dirs, "bin": os.path.dirname(os.path.realpath(sys.executable)),
                  "names": sorted(names), "own": sorted(own), "pth": pth, "plugins": sorted(plugins)}))
"""
_MARK = "swe_gym-probe:"


def probe_command(workdir: str) -> str:
    """Shell that prints one probe line per distinct ``python3`` / ``python`` on PATH."""
    probe = shlex.quote(_PROBE)
    return (
        'for py in python3 python; do p=$(command -v "$py" 2>/dev/null) || continue; '
        f'printf "%s" {shlex.quote(_MARK)}; "$p" -I -c {probe} {shlex.quote(workdir)} || echo "{{}}"; done'
    )


@dataclass(frozen=True)
class BaseEnvironment:
    """The base environment's import roots outside the work tree, as the probe read them."""

    dirs: tuple[str, ...]
    bins: tuple[str, ...]
    names: frozenset[str]
    own: frozenset[str]  # normalised names of the project's own distributions
    pth: dict[str, str]
    plugins: frozenset[str]  # "name = module" of every pytest11 entry point (what pytest auto-loads)

    @classmethod
    def parse(cls, output: str, repo: str) -> BaseEnvironment:
        dirs: list[str] = []
        bins: list[str] = []
        names: set[str] = set()
        # The repository's own name counts as its own distribution where no metadata says so (old pip).
        own = {normalized_name(repo.rsplit("/", 1)[-1])} if repo else set()
        pth: dict[str, str] = {}
        plugins: set[str] = set()
        for line in output.splitlines():
            if not line.startswith(_MARK):
                continue
            try:
                found = json.loads(line[len(_MARK) :])
            except ValueError:
                continue
            dirs += [d for d in found.get("dirs", []) if d not in dirs]
            bins += [found["bin"]] if found.get("bin") and found["bin"] not in bins else []
            names.update(found.get("names", []))
            own.update(normalized_name(n) for n in found.get("own", []) if n)
            pth.update(found.get("pth", {}))
            plugins.update(found.get("plugins", []))
        return cls(tuple(dirs), tuple(bins), frozenset(names), frozenset(own), pth, frozenset(plugins))

    def plugins_changed(self, now: BaseEnvironment) -> str | None:
        """Tampering where ``now`` (probed after the patch and its reinstall) auto-loads other pytest plugins."""
        added, dropped = sorted(now.plugins - self.plugins), sorted(self.plugins - now.plugins)
        if added:
            return f"the patch registers a pytest plugin that auto-loads ({added[0]!r}): only the base's load"
        if dropped:
            return f"the patch unregisters a pytest plugin the base environment loads ({dropped[0]!r})"
        return None

    def listing_command(self, out: str) -> str:
        """GNU find over the site and bin directories: path, type, size, mtime (NUL-separated)."""
        roots = " ".join(shlex.quote(d) for d in (*self.dirs, *self.bins))
        if not roots:
            return f": > {shlex.quote(out)}"
        return f"find {roots} -printf '%p\\0%y\\0%s\\0%T@\\0' > {shlex.quote(out)} 2>/dev/null || true"


def _entries(listing: bytes) -> dict[str, tuple[bytes, ...]]:
    parts = listing.split(b"\0")
    found = {}
    for i in range(0, len(parts) - 3, 4):
        path, kind, size, mtime = parts[i : i + 4]
        found[path.decode("utf-8", "surrogateescape")] = (kind, b"" if kind == b"d" else size, mtime)
    return found


_META = re.compile(
    r"^(?:__editable___?\.?)?(?P<name>[A-Za-z0-9_.]+?)(?:-[^/]*)?(?:\.(?:egg-info|dist-info|egg-link|pth))?$"
)


def _own_entry(rest: str, own: Collection[str]) -> bool:
    """``rest`` (a path in a site directory) is the project's own metadata, package or editable hook."""
    top, _, below = rest.partition("/")
    if top == "__pycache__":  # bytecode of a top-level module: only the editable finder's is the project's
        top = below
    if not top:  # a new directory: what is in it is judged entry by entry
        return True
    if top == "easy-install.pth":
        return True
    name = top
    if name.startswith("__editable__"):
        name = name.removeprefix("__editable__").lstrip("._")
        name = re.sub(r"_finder\.py$", "", name)
        return any(normalized_name(name).startswith(o) for o in own)
    match = _META.match(top)
    return bool(match) and normalized_name(match.group("name").split(".")[0]) in own


def touches_metadata(paths: Collection[str]) -> bool:
    """Whether a change to ``paths`` (of the work tree) can change the entry points the interpreter sees."""
    return any(
        part.endswith((".egg-info", ".dist-info", ".egg-link")) or part == "EGG-INFO"
        for path in paths
        for part in path.split("/")
    )


def changed_pth(before: bytes, after: bytes) -> list[str]:
    """The ``.pth`` files the reinstall added or changed (their text is checked for start-up code)."""
    old, new = _entries(before), _entries(after)
    return sorted(p for p, fields in new.items() if p.endswith(".pth") and old.get(p) != fields)


def commands_of(test_cmd: str) -> set[str]:
    """The command names a test command line runs (``pytest`` of ``python -m pytest -x``, ``runtests.py``)."""
    found = set()
    for part in re.split(r"[;&|\n]+", test_cmd):
        words = part.split()
        while words and "=" in words[0]:
            words = words[1:]
        if words:
            found.add(words[0].rsplit("/", 1)[-1])
    return found


def verify_reinstall(
    env: BaseEnvironment,
    before: bytes,
    after: bytes,
    pth_after: dict[str, str],
    protected: Collection[str],
) -> str | None:
    """What the reinstall changed outside the project's own distribution, or None.

    ``protected``: command names the eval runs (``pytest``, ``python``): a console script of that name is never
    the project's to write. ``pth_after``: the text of each changed ``.pth`` file after the reinstall.
    """
    old, new = _entries(before), _entries(after)
    changed = sorted(p for p in old.keys() | new.keys() if old.get(p) != new.get(p))
    for path in changed:
        root = next((d for d in (*env.dirs, *env.bins) if path == d or path.startswith(d.rstrip("/") + "/")), None)
        if root is None or path == root:
            continue
        rest = path[len(root.rstrip("/")) + 1 :]
        top = rest.split("/", 1)[0]
        if root in env.bins and root not in env.dirs:
            if top in protected or top.startswith(("python", "pip")):
                return f"the reinstall replaced {path}, a command the tests run"
            continue
        if not _own_entry(rest, env.own):
            return f"the reinstall changed {path}, outside the project's own distribution"
        if top.endswith(".pth") and path in pth_after:
            added = {line for line in pth_after[path].splitlines() if line.strip().startswith("import")}
            added -= {line for line in env.pth.get(path, "").splitlines()}
            if added:
                return f"the reinstall made {path} run code at start-up ({sorted(added)[0][:80]!r})"
    return None
