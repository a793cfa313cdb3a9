"""The ``swebench`` toolkit (imported lazily): eval script, log parsing, verdict of ``toolkit="swebench"`` tasks.

Works with swebench 4.x and 5.x; what differs between them is read in `swe_gym.grading.swebench_api` alone.

- eval script: a pre-built row's own (``eval_script``), as is. A classic row's (repo, version, test patch):
  under 4.x swebench's ``make_eval_script_list`` with the repo/version entry of ``MAP_REPO_VERSION_TO_SPECS``
  (joined by ``TestSpec.eval_script``); under 5.x, which has no such tables, ours
  (`swe_gym.grading.swebench_classic`: the repository's own runner over the test patch's files);
- log parsing: the parser a row names (``parse_log_pytest``, ``pytest``, or a dotted path to either), else the
  repo's (4.x ``MAP_REPO_TO_PARSER``; 5.x: the classic runner's), given the text between the test-output
  markers and a ``TestSpec``, as ``get_logs_eval`` does;
- verdict: ``get_eval_tests_report`` (fail-only for ``FAIL_ONLY_REPOS`` or a row's ``eval_type``) and
  ``get_resolution_status``, the same in both lines.

Why not 4.x's ``make_test_spec``: it also builds the environment-image script, which downloads
requirements.txt / environment.yml from GitHub for nine repos (django, sympy, matplotlib, flask,
xarray, pylint, pyvista, sqlfluff, dbt-core), so it fails offline. Grading runs in an image that
already has the environment and needs only the eval script.
"""

from __future__ import annotations

import contextlib
import threading
from collections.abc import Iterator
from typing import Any

from swe_gym.errors import GradingError, TaskError
from swe_gym.grading import swebench_api, swebench_classic
from swe_gym.grading.parsers import TestStatus
from swe_gym.grading.report import TestGroup
from swe_gym.tasks.model import SWETask

_TABLES = threading.Lock()


def _own_spec(task: SWETask) -> tuple[str, dict[str, Any]] | None:
    """A row's own spec under a version key of its own (a row's spec must never stand for a repo/version's)."""
    config = swebench_classic.row_spec(task)
    return None if config is None else (f"{task.metadata.get('version', '')}+row:{task.instance_id}", config)


@contextlib.contextmanager
def _with_row_spec(task: SWETask, tables: dict[str, Any], own: tuple[str, dict[str, Any]] | None) -> Iterator[None]:
    """4.x's script builders read its module tables, so a row's own spec is in them only while they run
    (and swebench's tables are as shipped before and after, whatever ran meanwhile)."""
    if own is None:
        yield
        return
    key, config = own
    ext_table = swebench_api.repo_ext_table()
    specs = {task.repo: {**tables.get(task.repo, {}), key: config}}
    ext = {task.repo: ext_table.get(task.repo, "py")}  # SWE-rebench's repositories are Python
    with _TABLES, _entries(tables, specs), _entries(ext_table, ext):
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


def _specs(task: SWETask, tables: dict[str, Any]) -> dict[str, Any]:
    """The repo/version entry of 4.x's tables; a row swebench does not know is the row's fault."""
    version = task.metadata.get("version")
    spec = tables.get(task.repo, {}).get(str(version))
    if spec is None or "test_cmd" not in spec:  # dbt-labs/dbt-core's specs have no test command
        raise TaskError(
            f"{task.instance_id}: swebench has no test spec for repo {task.repo!r} version {version!r}, so no eval "
            "script can be derived; a pre-built row (with eval_script, log_parser and image) serves instead"
        )
    return spec


def _eval_type(task: SWETask) -> str:
    """``fail_only`` for ``FAIL_ONLY_REPOS`` and rows whose ``eval_type`` says so, else ``pass_and_fail``."""
    constants = swebench_api.harness("constants")
    fail_only = task.repo in constants.FAIL_ONLY_REPOS or task.metadata.get("eval_type") == "fail_only"
    return "fail_only" if fail_only else "pass_and_fail"


def test_spec(task: SWETask, eval_script_list: list[str] | None = None) -> Any:
    """The installed swebench's ``TestSpec`` for ``task`` (what its parsers and ``get_logs_eval`` take)."""
    return swebench_api.test_spec(
        instance_id=task.instance_id,
        repo=task.repo,
        version=str(task.metadata.get("version", "")),
        fail_to_pass=list(task.fail_to_pass),
        pass_to_pass=list(task.pass_to_pass),
        eval_script_list=eval_script_list or [],
        image=task.image or "",
        log_parser=_resolve_parser_name(task),
        eval_type=_eval_type(task),
    )


def eval_script(task: SWETask) -> str:
    """The row's own eval script, else a classic row's, derived offline from repo, version and test patch.

    It runs in the task's SWE-bench image (conda at /opt/miniconda3, repo at the workdir) and marks the
    test output with ``set -x`` traces on stderr, so it must run with stdout and stderr merged.
    """
    if task.eval.eval_script:
        return task.eval.eval_script
    tables = swebench_api.spec_tables()
    if tables is None:
        return swebench_classic.eval_script(task)
    own = _own_spec(task)
    version, specs = own if own else (str(task.metadata.get("version")), _specs(task, tables))
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
    with _with_row_spec(task, tables, own):
        lines = swebench_api.make_eval_script_list(instance, specs, swebench_classic.ENV_NAME, task.workdir)
    return test_spec(task, lines).eval_script


def install_command(task: SWETask) -> str | None:
    """The reinstall line the eval script runs (its spec's ``install``), when swebench or the row says it."""
    own = swebench_classic.row_spec(task)
    if own:
        return own.get("install")
    if task.eval.eval_script:
        return None
    tables = swebench_api.spec_tables()
    if tables is None:
        return swebench_classic.install_command(task)
    try:
        return _specs(task, tables).get("install")
    except TaskError:
        return None


def _resolve_parser_name(task: SWETask) -> str:
    """The name of the parser `_parser` picks (5.x's ``TestSpec`` carries it)."""
    named = task.eval.log_parser or _config_parser(task)
    if named is None:
        return swebench_classic.log_parser(task)
    known = swebench_api.parsers_by_name()
    short = named.rsplit(".", 1)[-1]
    return next((c for c in (short, f"parse_log_{short}") if c in known), named)


def _config_parser(task: SWETask) -> str | None:
    config = task.metadata.get("install_config")
    return str(config["log_parser"]) if isinstance(config, dict) and config.get("log_parser") else None


def _parser(task: SWETask) -> swebench_api.RawParser:
    """The parser the row names (``parse_log_pytest``, ``pytest``, or a dotted path to either), else the repo's.

    SWE-rebench rows name theirs in ``install_config["log_parser"]``. The repo's is 4.x's ``MAP_REPO_TO_PARSER``
    entry; 5.x has no such map, so there a classic row gets its repository runner's parser.
    """
    known = swebench_api.parsers_by_name()
    if task.eval.log_parser is None and _config_parser(task) is None:
        parser = swebench_api.repo_parser(task.repo)
        if parser is not None:
            return parser
        if swebench_api.spec_tables() is not None:
            raise TaskError(
                f"{task.instance_id}: swebench has no log parser for repo {task.repo!r}; set the row's log_parser"
            )
    name = _resolve_parser_name(task)
    if name not in known:
        raise TaskError(
            f"{task.instance_id}: log parser {name!r} is not in the installed swebench; "
            f"known: {', '.join(sorted(known))}"
        )
    return known[name]


def parse_log(task: SWETask, log: str) -> dict[str, TestStatus]:
    """Test statuses from a whole eval log, read by swebench's parser as its harness reads them.

    Like ``get_logs_eval``: the parser gets the text between the output markers (the whole log if that
    yields nothing). Without both markers the tests never ran and swebench counts the patch as not
    applied; this returns ``{}`` then, which the caller must treat as unresolved (fail-only repos
    count absent tests as passing).
    """
    constants = swebench_api.harness("constants")
    parser = _parser(task)
    if constants.START_TEST_OUTPUT not in log or constants.END_TEST_OUTPUT not in log:
        return {}
    section = log.split(constants.START_TEST_OUTPUT)[1].split(constants.END_TEST_OUTPUT)[0]
    return _statuses(task, parser(section, test_spec(task)) or parser(log, test_spec(task)))


def parse_section(task: SWETask, section: str) -> dict[str, TestStatus]:
    """Test statuses from the test output alone (the grader cut it at its sealed markers).

    Unlike `parse_log` there is no fallback to the whole log: our runner captures stdout and
    stderr through one pipe, in order, so results outside the section were printed by something
    else (e.g. the patch's code while the package was installed).
    """
    return _statuses(task, _parser(task)(section, test_spec(task)))


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
    constants = swebench_api.harness("constants")
    grading = swebench_api.harness("grading")
    eval_type = constants.EvalType(_eval_type(task))
    gold = {constants.FAIL_TO_PASS: list(task.fail_to_pass), constants.PASS_TO_PASS: list(task.pass_to_pass)}
    report = grading.get_eval_tests_report(
        {test: str(value) for test, value in status.items()}, gold, eval_type=eval_type
    )
    resolved = grading.get_resolution_status(report) == constants.ResolvedStatus.FULL.value
    return resolved, TestGroup(**report[constants.FAIL_TO_PASS]), TestGroup(**report[constants.PASS_TO_PASS])
