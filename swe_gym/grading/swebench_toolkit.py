"""The ``swebench`` toolkit (4.x, imported lazily): eval script, log parsing, verdict of ``toolkit="swebench"`` tasks.

Each of the three jobs is swebench's own code, so a verdict here is the benchmark's verdict:

- eval script: ``make_eval_script_list`` with the repo's ``MAP_REPO_VERSION_TO_SPECS`` entry,
  joined by ``TestSpec.eval_script`` (pre-built rows carry their own script, returned as is);
- log parsing: the parser a row names, else ``MAP_REPO_TO_PARSER[repo]``, given the text between
  the test-output markers and a ``TestSpec``, as ``get_logs_eval`` does;
- verdict: ``get_eval_tests_report`` (fail-only for ``FAIL_ONLY_REPOS``) and ``get_resolution_status``.

Why not ``make_test_spec``: it also builds the environment-image script, which downloads
requirements.txt / environment.yml from GitHub for nine repos (django, sympy, matplotlib, flask,
xarray, pylint, pyvista, sqlfluff, dbt-core), so it fails offline. Grading runs in an image that
already has the environment and needs only the eval script, which is derived offline for every repo.

Why 4.x: swebench 5.x dropped the per-repo spec tables, so it cannot derive a classic row's
eval script at all; 4.x grades both classic rows and pre-built ones (``eval_script`` + ``log_parser``).
"""

from __future__ import annotations

import contextlib
import functools
import importlib
import inspect
import pkgutil
import threading
from collections.abc import Callable, Iterator
from importlib import metadata
from types import ModuleType
from typing import Any

from swe_gym.errors import GradingError, TaskError
from swe_gym.grading.parsers import TestStatus
from swe_gym.grading.report import TestGroup
from swe_gym.tasks.model import SWETask

SUPPORTED = ">=4.1,<5"
_INSTALL = "pip install 'swe_gym[swebench]'"
#: The conda env and repo directory SWE-bench images are built with (``make_test_spec``'s values).
_ENV_NAME = "testbed"

RawParser = Callable[[str, Any], dict[str, str]]


@functools.cache
def swebench_module(name: str) -> ModuleType:
    """``swebench.harness.<name>``, or a `GradingError` saying how to get a usable swebench."""
    try:
        version = metadata.version("swebench")
    except metadata.PackageNotFoundError:
        raise GradingError(f"official SWE-bench grading needs the swebench package: {_INSTALL}") from None
    if not version.startswith("4."):
        raise GradingError(
            f"swebench {version} is installed, but swe_gym grades with swebench{SUPPORTED} (5.x dropped the "
            f"per-repo specs that derive eval scripts): {_INSTALL}"
        )
    return importlib.import_module(f"swebench.harness.{name}")


def _row_spec(task: SWETask) -> tuple[str, dict[str, Any]] | None:
    """A row that carries its own spec (SWE-rebench's ``install_config``, in swebench's format), under a
    version key of its own (a row's spec must never stand for the official one of a repo/version)."""
    config = task.metadata.get("install_config")
    if not (isinstance(config, dict) and config.get("test_cmd")):
        return None
    return f"{task.metadata.get('version', '')}+row:{task.instance_id}", config


_TABLES = threading.Lock()


@contextlib.contextmanager
def _with_row_spec(task: SWETask, own: tuple[str, dict[str, Any]] | None) -> Iterator[None]:
    """swebench's script builders read its module tables, so a row's own spec is in them only while they run
    (and swebench's tables are as shipped before and after, whatever ran meanwhile)."""
    if own is None:
        yield
        return
    constants = swebench_module("constants")
    key, config = own
    specs = {task.repo: {**constants.MAP_REPO_VERSION_TO_SPECS.get(task.repo, {}), key: config}}
    ext = {task.repo: constants.MAP_REPO_TO_EXT.get(task.repo, "py")}  # SWE-rebench's repositories are Python
    with _TABLES, _entries(constants.MAP_REPO_VERSION_TO_SPECS, specs), _entries(constants.MAP_REPO_TO_EXT, ext):
        yield


@contextlib.contextmanager
def _entries(table: dict[str, Any], entries: dict[str, Any]) -> Iterator[None]:
    """``table`` with ``entries`` set while the block runs; each key's earlier value (or absence) back after."""
    missing = object()
    before = {key: table.get(key, missing) for key in entries}
    table.update(entries)
    try:
        yield
    finally:
        for key, value in before.items():
            if value is missing:
                table.pop(key, None)
            else:
                table[key] = value


def _specs(task: SWETask) -> dict[str, Any]:
    """The repo/version entry of ``MAP_REPO_VERSION_TO_SPECS``; a row swebench does not know is the row's fault."""
    version = task.metadata.get("version")
    specs = swebench_module("constants").MAP_REPO_VERSION_TO_SPECS
    spec = specs.get(task.repo, {}).get(str(version))
    if spec is None or "test_cmd" not in spec:  # dbt-labs/dbt-core's specs have no test command
        raise TaskError(
            f"{task.instance_id}: swebench has no test spec for repo {task.repo!r} version {version!r}, so no eval "
            "script can be derived; a pre-built row (with eval_script, log_parser and image) serves instead"
        )
    return spec


def _test_spec(task: SWETask, eval_script_list: list[str] | None = None) -> Any:
    """swebench's ``TestSpec`` for ``task``, built without the env script (which would need GitHub)."""
    constants = swebench_module("constants")
    return swebench_module("test_spec.test_spec").TestSpec(
        instance_id=task.instance_id,
        repo=task.repo,
        version=str(task.metadata.get("version", "")),
        repo_script_list=[],
        eval_script_list=eval_script_list or [],
        env_script_list=[],
        arch="x86_64",
        FAIL_TO_PASS=list(task.fail_to_pass),
        PASS_TO_PASS=list(task.pass_to_pass),
        language=constants.MAP_REPO_TO_EXT.get(task.repo, "py"),
        docker_specs={},
        namespace=None,
    )


def eval_script(task: SWETask) -> str:
    """The row's own eval script, else the official one derived offline from repo, version and test patch.

    It runs in the task's SWE-bench image (conda at /opt/miniconda3, repo at the workdir) and marks the
    test output with ``set -x`` traces on stderr, so it must run with stdout and stderr merged.
    """
    if task.eval.eval_script:
        return task.eval.eval_script
    own = _row_spec(task)
    version, specs = own if own else (str(task.metadata.get("version")), _specs(task))
    if not task.base_commit or not task.test_patch.strip():
        raise TaskError(f"{task.instance_id}: deriving the swebench eval script needs base_commit and test_patch")
    instance = {
        **task.metadata,
        "instance_id": task.instance_id,
        "repo": task.repo,
        "version": version,
        "base_commit": task.base_commit,
        "test_patch": task.test_patch,
        "FAIL_TO_PASS": list(task.fail_to_pass),
        "PASS_TO_PASS": list(task.pass_to_pass),
    }
    with _with_row_spec(task, own):
        lines = swebench_module("test_spec.create_scripts").make_eval_script_list(
            instance, specs, _ENV_NAME, task.workdir, task.base_commit, task.test_patch
        )
    return _test_spec(task, lines).eval_script


def install_command(task: SWETask) -> str | None:
    """The reinstall line the eval script runs (its spec's ``install``), when swebench or the row says it."""
    own = _row_spec(task)
    if own:
        return own[1].get("install")
    if task.eval.eval_script:
        return None
    try:
        return _specs(task).get("install")
    except TaskError:
        return None


@functools.cache
def _parsers_by_name() -> dict[str, RawParser]:
    """Every parser function in ``swebench.harness.log_parsers``, by its name (the names 5.x's registry uses)."""
    package = swebench_module("log_parsers")
    found: dict[str, RawParser] = {}
    for info in pkgutil.iter_modules(package.__path__):
        module = importlib.import_module(f"{package.__name__}.{info.name}")
        for name, value in vars(module).items():
            if name.startswith("parse_") and inspect.isfunction(value):
                found[name] = value
    return found


def _parser(task: SWETask) -> RawParser:
    """The parser the row names (``parse_log_pytest``, ``pytest``, or a dotted path to either), else the repo's.

    SWE-rebench rows name theirs in ``install_config["log_parser"]``.
    """
    config = task.metadata.get("install_config")
    name = task.eval.log_parser or (config.get("log_parser") if isinstance(config, dict) else None)
    if name is None:
        parser = swebench_module("log_parsers").MAP_REPO_TO_PARSER.get(task.repo)
        if parser is None:
            raise TaskError(
                f"{task.instance_id}: swebench has no log parser for repo {task.repo!r}; set the row's log_parser"
            )
        return parser
    known = _parsers_by_name()
    short = name.rsplit(".", 1)[-1]
    for candidate in (short, f"parse_log_{short}"):
        if candidate in known:
            return known[candidate]
    raise TaskError(
        f"{task.instance_id}: log parser {name!r} is not in the installed swebench; known: {', '.join(sorted(known))}"
    )


def parse_log(task: SWETask, log: str) -> dict[str, TestStatus]:
    """Test statuses from a whole eval log, read by swebench's parser as its harness reads them.

    Like ``get_logs_eval``: the parser gets the text between the output markers (the whole log if that
    yields nothing). Without both markers the tests never ran and swebench counts the patch as not
    applied; this returns ``{}`` then, which the caller must treat as unresolved (fail-only repos
    count absent tests as passing).
    """
    constants = swebench_module("constants")
    parser = _parser(task)
    if constants.START_TEST_OUTPUT not in log or constants.END_TEST_OUTPUT not in log:
        return {}
    section = log.split(constants.START_TEST_OUTPUT)[1].split(constants.END_TEST_OUTPUT)[0]
    return _statuses(task, parser(section, _test_spec(task)) or parser(log, _test_spec(task)))


def parse_section(task: SWETask, section: str) -> dict[str, TestStatus]:
    """Test statuses from the test output alone (the grader cut it at its sealed markers).

    Unlike `parse_log` there is no fallback to the whole log: our runner captures stdout and
    stderr through one pipe, in order, so results outside the section were printed by something
    else (e.g. the patch's code while the package was installed).
    """
    return _statuses(task, _parser(task)(section, _test_spec(task)))


def _statuses(task: SWETask, raw: dict[str, str]) -> dict[str, TestStatus]:
    try:
        return {test: TestStatus(value) for test, value in raw.items()}
    except ValueError as exc:
        raise GradingError(f"{task.instance_id}: swebench's parser returned an unknown status ({exc})") from None


def judge(task: SWETask, status: dict[str, TestStatus]) -> tuple[bool, TestGroup, TestGroup]:
    """(resolved, FAIL_TO_PASS, PASS_TO_PASS) by swebench's report; resolved only for ``RESOLVED_FULL``.

    Fail-only repos (``FAIL_ONLY_REPOS``, or a row whose ``eval_type`` says so) count a test as
    failing only when the log says FAILED.
    """
    constants = swebench_module("constants")
    grading = swebench_module("grading")
    fail_only = task.repo in constants.FAIL_ONLY_REPOS or task.metadata.get("eval_type") == "fail_only"
    eval_type = constants.EvalType.FAIL_ONLY if fail_only else constants.EvalType.PASS_AND_FAIL
    gold = {constants.FAIL_TO_PASS: list(task.fail_to_pass), constants.PASS_TO_PASS: list(task.pass_to_pass)}
    report = grading.get_eval_tests_report(
        {test: str(value) for test, value in status.items()}, gold, eval_type=eval_type
    )
    resolved = grading.get_resolution_status(report) == constants.ResolvedStatus.FULL.value
    return resolved, TestGroup(**report[constants.FAIL_TO_PASS]), TestGroup(**report[constants.PASS_TO_PASS])
