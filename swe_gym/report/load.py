"""Read what a report is made from into a `Run`; the kind of input is told from what it holds.

- a rollout's JSONL (``swe-gym rollout --out``, `TrajectoryRecorder`): one `Trajectory` per line (the schema
  the recorder writes), with its run id, policy, actions, observations, per-step infos, patch and grade report;
- an evaluation run directory (``swe-gym evaluate``: ``RUN_DIR/RUN_ID/`` with ``MODEL.RUN_ID.json`` and
  ``MODEL/ID/{report.json,patch.diff,eval.log}``), or its summary file: one entry per prediction, no
  trajectory; repo and family per instance from the summary's ``swe_gym.repos`` / ``swe_gym.families``
  where it records them;
- a fidelity certificate (``swe-gym validate``): one entry per task, its gold and empty-patch runs.

Fields missing from older files are tolerated (shown as unknown); a file that is none of these, or not
JSON, is a `ConfigError` that says which line or field is wrong.
"""

from __future__ import annotations

import json
import re
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from pydantic import ValidationError

from swe_gym.errors import ConfigError
from swe_gym.grading.report import GradeReport
from swe_gym.jsonl import BadLine, json_document
from swe_gym.report.model import EpisodeRecord, Run, Status, Step
from swe_gym.wrappers.trajectory import StepInfo, Trajectory, read_trajectories

#: What of an evaluation's eval log a page shows (its end: where the test results are).
EVAL_LOG_TAIL_CHARS = 60_000
#: repo and family per instance id, from a task source (``--tasks``); beats what the ids say.
TaskInfo = Mapping[str, tuple[str, str]]

_SAFE = re.compile(r"[^A-Za-z0-9._-]+")


def safe_name(name: str) -> str:
    """A file name made of ``[A-Za-z0-9._-]`` only (instance ids are data, never a path)."""
    cleaned = _SAFE.sub("_", name).strip("._")[:80]
    return cleaned or "episode"


def infer_repo(instance_id: str) -> str:
    """``owner/name`` from a SWE-bench-style id (``django__django-11099``, SWE-smith's
    ``owner__name.abcd1234.rule__x``), else ``unknown``."""
    owner, sep, rest = instance_id.partition("__")
    if not sep or not owner or not rest:
        return "unknown"
    name = re.sub(r"-\d+$", "", rest.split(".", 1)[0])
    return f"{owner}/{name}" if name else "unknown"


def load_run(source: str | Path, tasks: TaskInfo | None = None) -> Run:
    """The `Run` ``source`` holds (a rollout JSONL, an evaluation run directory or summary, a certificate)."""
    path = Path(source)
    if path.is_dir():
        return _evaluation(path, _summaries(path), tasks or {})
    if not path.is_file():
        raise ConfigError(
            f"{path} does not exist: pass a rollout's .jsonl, an evaluation run directory or a certificate"
        )
    if path.suffix == ".jsonl":
        return _rollout(path, tasks or {})
    data = _json_file(path)
    if _is_summary(data):
        return _evaluation(path.parent, [(path, data)], tasks or {})
    if isinstance(data, dict) and isinstance(data.get("instances"), dict) and "summary" in data:
        return _certificate(path, data, tasks or {})
    raise ConfigError(
        f"{path} is neither an evaluation summary (swe-gym evaluate's MODEL.RUN_ID.json) nor a certificate "
        "(swe-gym validate); a rollout's trajectories are a .jsonl file"
    )


def _json_file(path: Path) -> Any:
    try:
        value = json_document(path)
    except OSError as exc:
        raise ConfigError(f"cannot read {path}: {exc}") from None
    if isinstance(value, BadLine):
        raise ConfigError(f"{path} is {value.reason}")
    return value


def _names(tasks: TaskInfo, instance_id: str, repo: str | None = None, family: str | None = None) -> dict[str, str]:
    known = tasks.get(instance_id)
    return {
        "repo": (known[0] if known else None) or repo or infer_repo(instance_id),
        "family": (known[1] if known else None) or family or "unknown",
    }


def _verdict(report: Mapping[str, Any] | None) -> str | None:
    if not report:
        return None
    try:
        return GradeReport.model_validate(report).summary()
    except ValidationError:
        return None


def _text(value: Any) -> str:
    return value if isinstance(value, str) else json.dumps(value, default=str)


# -- rollout --------------------------------------------------------------------------------------


def _rollout(path: Path, tasks: TaskInfo) -> Run:
    records = read_trajectories(path)
    if not records:
        raise ConfigError(f"{path} holds no trajectories (swe-gym rollout --out FILE writes them)")
    episodes = [_episode(number, record, tasks) for number, record in enumerate(records, 1)]
    providers = sorted({e.facts["provider"] for e in episodes if "provider" in e.facts})
    facts = {"input": str(path), "provider": ", ".join(providers) or "unknown"}
    for name, values in (("run id", {e.run_id for e in episodes}), ("policy", {e.policy for e in episodes})):
        facts[name] = ", ".join(sorted(v for v in values if v)) or "unknown"
    return Run(kind="rollout", source=path, title=f"Rollout: {path.name}", facts=facts, episodes=episodes)


def _episode(number: int, record: Trajectory, tasks: TaskInfo) -> EpisodeRecord:
    report = record.report
    instance_id = record.instance_id or "unknown"
    status: Status
    if record.unfinished:
        status = "unfinished"
    elif record.masked:
        status = "masked"
    elif record.resolved:
        status = "resolved"
    elif report and report.get("empty_patch"):
        status = "empty_patch"
    else:
        status = "unresolved"
    steps = []
    for i, action in enumerate(record.actions):
        info = (record.step_infos[i] if i < len(record.step_infos) else None) or StepInfo()
        observation = record.observations[i + 1] if i + 1 < len(record.observations) else ""
        steps.append(
            Step(
                action=_text(action),
                observation=observation,
                reward=record.rewards[i] if i < len(record.rewards) else None,
                **info.model_dump(),
            )
        )
    verdict = _verdict(report)
    reason = None
    if status == "masked":
        reason = record.masked_reason or "masked"
    elif status == "unfinished":
        reason = "the episode was cut off before its end (reset or close)"
    elif status != "resolved":
        reason = record.patch_error or verdict or ("step limit reached" if record.truncated else None)
    facts = {
        "provider": record.provider,
        "seed": None if record.seed is None else str(record.seed),
        "started at": record.started_at,
        "ended by": "submit" if record.terminated else "step limit" if record.truncated else None,
    }
    if record.policy_stats:
        stats = record.policy_stats.items()
        facts["policy stats"] = ", ".join(f"{k}={v}" for k, v in stats if not isinstance(v, dict | list))
    return EpisodeRecord(
        number=number,
        instance_id=instance_id,
        **_names(tasks, instance_id, record.repo, record.family),
        run_id=record.run_id,
        policy=record.policy.label() if record.policy else None,
        status=status,
        reason=reason,
        reward=None if status in ("masked", "unfinished") else record.reward,
        masked_reasons=[record.masked_reason or "masked"] if status == "masked" else [],
        prompt=_text(record.observations[0]) if record.observations else None,
        steps=steps,
        patch=record.patch,
        verdict=verdict,
        report=report,
        reset_s=record.reset_s,
        grade_s=record.grade_s,
        wall_s=record.wall_s,
        facts={k: v for k, v in facts.items() if v},
    )


def _str(value: Any) -> str | None:
    return value if isinstance(value, str) and value else None


def _float(value: Any) -> float | None:
    return float(value) if isinstance(value, int | float) and not isinstance(value, bool) else None


# -- evaluation -----------------------------------------------------------------------------------


def _is_summary(data: Any) -> bool:
    return isinstance(data, dict) and isinstance(data.get("resolved_ids"), list) and "swe_gym" in data


def _summaries(directory: Path) -> list[tuple[Path, dict[str, Any]]]:
    found = []
    for path in sorted(directory.glob("*.json")):
        data = _optional_json(path)
        if data is not None and _is_summary(data):
            found.append((path, data))
    if not found:
        runs = [p.name for p in sorted(directory.iterdir()) if p.is_dir() and any(p.glob("*.json"))][:5]
        hint = f"; it holds runs: pass one of them ({', '.join(runs)})" if runs else ""
        raise ConfigError(
            f"{directory} is no evaluation run directory: no MODEL.RUN_ID.json summary (swe-gym evaluate writes "
            f"one in runs/evaluation/RUN_ID/){hint}"
        )
    return found


def _ids(data: Mapping[str, Any], key: str) -> list[str]:
    value = data.get(key)
    return [v for v in value if isinstance(v, str)] if isinstance(value, list) else []


def _evaluation(directory: Path, summaries: list[tuple[Path, dict[str, Any]]], tasks: TaskInfo) -> Run:
    episodes: list[EpisodeRecord] = []
    facts: dict[str, str] = {"input": str(directory)}
    models = []
    for path, data in summaries:
        extra = data.get("swe_gym") if isinstance(data.get("swe_gym"), dict) else {}
        model = str(extra.get("model_name_or_path") or path.name.split(".", 1)[0])
        models.append(model)
        masked = extra.get("masked") if isinstance(extra.get("masked"), dict) else {}
        errors = extra.get("errors") if isinstance(extra.get("errors"), dict) else {}
        reasons = extra.get("unresolved_reasons") if isinstance(extra.get("unresolved_reasons"), dict) else {}
        uncertified = extra.get("uncertified") if isinstance(extra.get("uncertified"), dict) else {}
        durations = extra.get("durations_s") if isinstance(extra.get("durations_s"), dict) else {}
        # id -> repo / family, where the evaluation recorded them (else --tasks, else the id)
        repos = extra.get("repos") if isinstance(extra.get("repos"), dict) else {}
        families = extra.get("families") if isinstance(extra.get("families"), dict) else {}
        run_id = str(extra.get("run_id") or directory.name)
        status_of: dict[str, Status] = {}
        for iid in _ids(data, "resolved_ids"):
            status_of[iid] = "resolved"
        for iid in _ids(data, "unresolved_ids"):
            status_of[iid] = "unresolved"
        for iid in _ids(data, "empty_patch_ids"):
            status_of[iid] = "empty_patch"
        for iid in _ids(data, "error_ids"):
            status_of[iid] = "masked" if iid in masked else "error"
        if extra.get("uncertified_mode") == "skip":
            for iid in uncertified:
                status_of.setdefault(str(iid), "skipped")
        for iid in sorted(status_of):
            status = status_of[iid]
            where = directory / _dir_name(model) / _dir_name(iid)
            report = _optional_json(where / "report.json")
            reason = {
                "masked": masked.get(iid),
                "error": errors.get(iid),
                "unresolved": reasons.get(iid),
                "skipped": uncertified.get(iid),
            }.get(status)
            grade_s = _float((report or {}).get("duration_s")) or _float(durations.get(iid))
            episodes.append(
                EpisodeRecord(
                    number=len(episodes) + 1,
                    instance_id=iid,
                    **_names(tasks, iid, _str(repos.get(iid)), _str(families.get(iid))),
                    model=model,
                    run_id=run_id,
                    status=status,
                    reason=None if reason is None else str(reason),
                    reward={"resolved": 1.0, "unresolved": 0.0, "empty_patch": 0.0}.get(status),
                    masked_reasons=[str(masked.get(iid) or "masked")] if status == "masked" else [],
                    patch=_optional_text(where / "patch.diff"),
                    verdict=_verdict(report),
                    report=report,
                    eval_log=_optional_text(where / "eval.log", tail=EVAL_LOG_TAIL_CHARS),
                    grade_s=None if status == "skipped" else grade_s,
                    facts={"outputs": str(where)} if where.is_dir() else {},
                )
            )
        facts.update(
            {
                "run id": run_id,
                "harness": str(extra.get("harness", "unknown")),
                "workers": str(extra.get("workers", "unknown")),
                "wall time s": _seconds(extra.get("wall_s")),
                "instances in dataset": str(data.get("total_instances", "unknown")),
                "no prediction": str(len(_ids(data, "incomplete_ids"))),
                "invalid rows": str(len(extra.get("invalid_predictions") or [])),
                "unknown ids": str(len(extra.get("unknown_instance_ids") or [])),
            }
        )
        if extra.get("certificate"):
            facts["certificate"] = f"{extra['certificate']} ({extra.get('uncertified_mode')})"
    facts["model"] = ", ".join(models)
    title = f"Evaluation: {', '.join(models)} / {facts.get('run id', directory.name)}"
    return Run(kind="evaluation", source=directory, title=title, facts=facts, episodes=episodes)


def _dir_name(name: str) -> str:
    """The directory name `evaluate` gives a model or an instance id."""
    name = name.replace("/", "__").replace("\\", "__").replace("\x00", "")
    return name if name not in ("", ".", "..") else f"_{name}"


def _optional_json(path: Path) -> dict[str, Any] | None:
    try:
        value = json_document(path)
    except OSError:
        return None
    return value if isinstance(value, dict) else None


def _optional_text(path: Path, tail: int | None = None) -> str | None:
    try:
        text = path.read_bytes().decode("utf-8", "replace")
    except OSError:
        return None
    if tail is not None and len(text) > tail:
        return f"[... {len(text) - tail} characters before this are not shown ...]\n" + text[-tail:]
    return text


def _seconds(value: Any) -> str:
    number = _float(value)
    return "unknown" if number is None else f"{number:.1f}"


# -- certificate ----------------------------------------------------------------------------------


def _certificate(path: Path, data: dict[str, Any], tasks: TaskInfo) -> Run:
    episodes: list[EpisodeRecord] = []
    for iid, entry in sorted(data["instances"].items()):
        if not isinstance(entry, dict):
            raise ConfigError(f"{path}: instances[{iid!r}] is a {type(entry).__name__}, not an object")
        k = entry.get("k", data.get("k", "?"))
        runs: list[dict[str, str]] = []
        times: list[float] = []
        for kind in ("gold", "empty"):
            for i, run in enumerate(entry.get(f"{kind}_runs") or [], 1):
                if not isinstance(run, dict):
                    continue
                duration = _float(run.get("duration_s"))
                if duration is not None:
                    times.append(duration)
                unexpected = run.get("unexpected") or []
                runs.append(
                    {
                        "patch": kind,
                        "run": str(i),
                        "outcome": str(run.get("outcome", "unknown")),
                        "reason": str(run.get("reason") or ""),
                        "unexpected": ", ".join(map(str, unexpected)) if isinstance(unexpected, list) else "",
                        "seconds": "" if duration is None else f"{duration:.2f}",
                    }
                )
        flaky = {}
        for test, statuses in (entry.get("flaky") or {}).items():
            if isinstance(statuses, dict):
                graded = " (graded)" if statuses.get("graded") else ""
                flaky[str(test)] = f"gold {statuses.get('gold')}, empty {statuses.get('empty')}{graded}"
        problems = [str(p) for p in entry.get("problems") or []]
        facts = {
            "gold resolved": f"{entry.get('gold_resolved', '?')}/{k}",
            "empty unresolved": f"{entry.get('empty_unresolved', '?')}/{k}",
            "image": str(entry.get("image") or "the provider's default"),
            "image digest": str(entry.get("image_digest") or "none"),
        }
        errors = [str(e) for e in entry.get("errors") or []]
        if errors:
            facts["errors"] = "\n".join(errors)
        masked_reasons = [str(r) for r in entry.get("masked_reasons") or []]
        episodes.append(
            EpisodeRecord(
                number=len(episodes) + 1,
                instance_id=str(iid),
                **_names(tasks, str(iid)),
                status="passed" if entry.get("passed") else "failed",
                reason="; ".join(problems) or None,
                masked_reasons=masked_reasons,
                grade_s=sum(times) if times else None,
                grade_times_s=times,
                facts=facts,
                runs=runs,
                flaky=flaky,
                problems=problems,
            )
        )
    summary = data.get("summary") if isinstance(data.get("summary"), dict) else {}
    facts = {
        "input": str(path),
        "dataset": str(data.get("dataset", "unknown")),
        "split": str(data.get("split") or "default"),
        "provider": str(data.get("provider", "unknown")),
        "k": str(data.get("k", "unknown")),
        "harness": str(data.get("harness", "unknown")),
        "created": str(data.get("created", "unknown")),
        "swe_gym version": str(data.get("swe_gym_version", "unknown")),
        "flaky ids": ", ".join(map(str, summary.get("flaky_ids") or [])) or "none",
        "wall time s": _seconds(summary.get("wall_s")),
    }
    return Run(
        kind="certificate",
        source=path,
        title=f"Certificate: {facts['dataset']} on {facts['provider']} (k={facts['k']})",
        facts=facts,
        episodes=episodes,
    )
