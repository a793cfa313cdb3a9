"""The one place that knows swebench 4.x from 5.x: every call into the installed swebench that differs goes here.

Which API is there is read off what imports, never off the version string:

- per-repo spec tables (``constants.MAP_REPO_VERSION_TO_SPECS``, ``test_spec.create_scripts.make_eval_script_list``):
  4.x only. 5.x grades pre-built rows alone (rows that carry ``image``, ``eval_script``, ``log_parser``,
  ``eval_type``), so a classic row's eval script under 5.x is ours (`swe_gym.grading.swebench_classic`);
- ``TestSpec``: 4.x ``swebench.harness.test_spec.test_spec``; 5.x ``swebench.types`` (it names its image, log
  parser and eval type, and ``get_logs_eval`` reads the parser from it);
- log parsers: 5.x ``PARSER_REGISTRY`` by name; 4.x the ``parse_*`` functions of its parser modules by name, and
  ``MAP_REPO_TO_PARSER`` by repo;
- what ``run_evaluation`` does around the eval script: its ``GIT_APPLY_CMDS`` (5.x adds ``--3way`` and resets the
  tree between attempts), and 5.x's ``record_test_exit_code``, which its ``make_test_spec`` applies to every script
  and its ``get_logs_eval`` then checks.

Both lines share ``get_eval_tests_report``, ``get_resolution_status``, ``EvalType``, ``FAIL_ONLY_REPOS`` and the log
markers, which callers take from `harness` directly.
"""

from __future__ import annotations

import functools
import importlib
import importlib.util
import inspect
import pkgutil
import tempfile
from collections.abc import Callable
from types import ModuleType
from typing import Any

from swe_gym.errors import GradingError

SUPPORTED = ">=4.1,<6"
_INSTALL = "pip install 'swe_gym[swebench]'"

RawParser = Callable[[str, Any], dict[str, str]]


@functools.cache
def harness(name: str) -> ModuleType:
    """``swebench.harness.<name>``, or a `GradingError` saying how to get a usable swebench."""
    if importlib.util.find_spec("swebench") is None:
        raise GradingError(f"official SWE-bench grading needs the swebench package: {_INSTALL}")
    grading = importlib.import_module("swebench.harness.grading")
    if not hasattr(grading, "get_eval_tests_report") or not hasattr(grading, "get_resolution_status"):
        raise GradingError(
            f"the installed swebench has no get_eval_tests_report/get_resolution_status; swe_gym grades with "
            f"swebench{SUPPORTED}: {_INSTALL}"
        )
    return importlib.import_module(f"swebench.harness.{name}")


def _types() -> ModuleType | None:
    """5.x's ``swebench.types`` with its image-carrying ``TestSpec``, else None (4.x)."""
    harness("constants")
    try:
        module = importlib.import_module("swebench.types")
    except ImportError:
        return None
    spec = getattr(module, "TestSpec", None)
    return module if spec is not None and "log_parser" in inspect.signature(spec).parameters else None


def spec_tables() -> dict[str, dict[str, dict[str, Any]]] | None:
    """4.x's ``MAP_REPO_VERSION_TO_SPECS`` (the module's own dict), or None where swebench has none (5.x)."""
    return getattr(harness("constants"), "MAP_REPO_VERSION_TO_SPECS", None)


def repo_ext_table() -> dict[str, str]:
    """4.x's ``MAP_REPO_TO_EXT`` (the module's own dict); only called where `spec_tables` is not None."""
    return harness("constants").MAP_REPO_TO_EXT


def make_eval_script_list(instance: dict[str, Any], spec: dict[str, Any], env: str, workdir: str) -> list[str]:
    """4.x's eval script lines for a classic row (only where `spec_tables` is not None)."""
    create = harness("test_spec.create_scripts")
    return create.make_eval_script_list(instance, spec, env, workdir, instance["base_commit"], instance["test_patch"])


def test_spec(
    *,
    instance_id: str,
    repo: str,
    version: str,
    fail_to_pass: list[str],
    pass_to_pass: list[str],
    eval_script_list: list[str],
    image: str,
    log_parser: str,
    eval_type: str,
) -> Any:
    """The installed swebench's ``TestSpec`` (what its parsers and ``get_logs_eval`` take), built without any
    environment script (4.x's would fetch requirement files from GitHub)."""
    types = _types()
    if types is not None:
        return types.TestSpec(
            instance_id=instance_id,
            image=image,
            eval_script_list=eval_script_list,
            repo=repo,
            version=version,
            FAIL_TO_PASS=fail_to_pass,
            PASS_TO_PASS=pass_to_pass,
            log_parser=log_parser,
            eval_type=eval_type,
        )
    ext = repo_ext_table().get(repo, "py")
    return harness("test_spec.test_spec").TestSpec(
        instance_id=instance_id,
        repo=repo,
        version=version,
        repo_script_list=[],
        eval_script_list=eval_script_list,
        env_script_list=[],
        arch="x86_64",
        FAIL_TO_PASS=fail_to_pass,
        PASS_TO_PASS=pass_to_pass,
        language=ext,
        docker_specs={},
        namespace=None,
    )


@functools.cache
def parsers_by_name() -> dict[str, RawParser]:
    """Every log parser of the installed swebench by its name (``parse_log_pytest``, ...)."""
    package = harness("log_parsers")
    registry = getattr(package, "PARSER_REGISTRY", None)
    if registry is not None:
        return dict(registry)
    found: dict[str, RawParser] = {}
    for info in pkgutil.iter_modules(package.__path__):
        module = importlib.import_module(f"{package.__name__}.{info.name}")
        for name, value in vars(module).items():
            if name.startswith("parse_") and inspect.isfunction(value):
                found[name] = value
    return found


def repo_parser(repo: str) -> RawParser | None:
    """The parser swebench assigns ``repo`` (4.x's ``MAP_REPO_TO_PARSER``); None where it has no such map (5.x)."""
    return getattr(harness("log_parsers"), "MAP_REPO_TO_PARSER", {}).get(repo)


def apply_commands() -> list[str]:
    """``run_evaluation.GIT_APPLY_CMDS``, tried in order."""
    return list(harness("run_evaluation").GIT_APPLY_CMDS)


def resets_between_applies() -> bool:
    """Whether ``run_evaluation`` restores a pristine tree before each later apply command (5.x does; 4.x tries
    each on what the last one left). 5.x is told by its image-carrying ``TestSpec``."""
    return _types() is not None


def as_run(script: str) -> str:
    """``script`` as the installed swebench's ``run_instance`` runs it: 5.x's ``make_test_spec`` records the test
    command's exit status after the end marker (``record_test_exit_code``); 4.x runs it as is."""
    utils, types = harness("utils"), _types()
    record = getattr(utils, "record_test_exit_code", None)
    parse = getattr(utils, "parse_eval_script", None)
    if record is None or parse is None or types is None:
        return script
    spec = types.TestSpec(
        instance_id="",
        image="",
        eval_script_list=record(parse(script)),
        repo="",
        version="",
        FAIL_TO_PASS=[],
        PASS_TO_PASS=[],
    )
    return spec.eval_script


def logs_eval(spec: Any, log: str) -> tuple[dict[str, str], bool] | None:
    """5.x's ``get_logs_eval`` on ``log`` (its every rule, the row's parser by name); None under 4.x, whose
    ``get_logs_eval`` takes the parser from the repo alone, so callers apply its rules themselves."""
    if _types() is None:
        return None
    with tempfile.NamedTemporaryFile("w", encoding="utf-8", suffix=".log") as file:
        file.write(log)
        file.flush()
        return harness("grading").get_logs_eval(spec, file.name)
