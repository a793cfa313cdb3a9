"""Loading dataset rows: save_to_disk folders, Parquet, JSONL, dataset repo folders, and Hugging Face names offline.

The Hugging Face name path runs for real in a child process whose ``HF_HOME`` is a
temporary folder and whose ``HF_DATASETS_OFFLINE=1``: the cache there is written by
the real ``datasets`` Parquet builder in the layout a first, online
``load_dataset(NAME)`` leaves (``<namespace>___<name>/default/0.0.0/<revision>/``),
which ``load_dataset(NAME)`` then finds offline. (``datasets`` reads these variables
when imported, hence the child process.)
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

from tests.conftest import IN_CI

if IN_CI:  # the dev extra installs datasets; CI must never skip these
    import datasets
else:
    datasets = pytest.importorskip("datasets")

from swe_gym.errors import TaskError
from swe_gym.tasks import load_tasks
from swe_gym.tasks.datasets import is_hub_name, read_rows
from tests.tasks.swebench_rows import LITE, SWE_GYM, VERIFIED

ROOT = Path(__file__).resolve().parents[2]


def verified_rows(n: int = 5) -> list[dict]:
    return [{**VERIFIED, "instance_id": f"astropy__astropy-{12907 + i}"} for i in range(n)]


def test_save_to_disk_folders_load_with_their_splits(tmp_path: Path) -> None:
    single = tmp_path / "verified"
    datasets.Dataset.from_list(verified_rows(3)).save_to_disk(str(single))
    tasks = load_tasks(single)
    assert [t.instance_id for t in tasks] == [f"astropy__astropy-{12907 + i}" for i in range(3)]
    assert tasks[0].image == "swebench/sweb.eval.x86_64.astropy_1776_astropy-12907:latest"
    assert tasks[0].metadata["difficulty"] == VERIFIED["difficulty"]

    gym = tmp_path / "SWE-Gym"  # the folder's name tells the family
    datasets.DatasetDict(
        {"train": datasets.Dataset.from_list([SWE_GYM]), "test": datasets.Dataset.from_list([LITE])}
    ).save_to_disk(str(gym))
    [train] = load_tasks(gym, split="train")
    assert (train.family, train.image) == ("swe-gym", "xingyaoww/sweb.eval.x86_64.getmoto_s_moto-7365:latest")
    assert train.fail_to_pass == SWE_GYM["FAIL_TO_PASS"]
    assert [t.instance_id for t in load_tasks(gym, split="test")] == ["django__django-11099"]
    with pytest.raises(TaskError, match=r"no split 'dev' \(splits: test, train\)"):
        load_tasks(gym, split="dev")


def test_parquet_files_load_with_filters_and_slices(tmp_path: Path) -> None:
    path = tmp_path / "SWE-bench_Verified.parquet"
    datasets.Dataset.from_list(verified_rows(5)).to_parquet(str(path))
    assert len(load_tasks(path)) == 5
    ids = ["astropy__astropy-12911", "astropy__astropy-12908"]
    assert [t.instance_id for t in load_tasks(path, instance_ids=ids)] == sorted(ids)  # source order
    assert [t.instance_id[-2:] for t in load_tasks(str(path), limit=2)] == ["07", "08"]
    assert [t.instance_id[-2:] for t in load_tasks(path, limit=slice(1, None, 2))] == ["08", "10"]
    assert [t.instance_id[-2:] for t in load_tasks(path, instance_ids=ids, limit=1)] == ["08"]
    with pytest.raises(TaskError, match="unknown instance ids: nope"):
        load_tasks(path, instance_ids=["nope"])
    with pytest.raises(TaskError, match=r"no tasks in .* \(limit=0\)"):
        load_tasks(path, limit=0)
    with pytest.raises(TaskError, match="limit must be"):
        load_tasks(path, limit=-1)
    import gymnasium as gym

    import swe_gym  # noqa: F401 - registers the env

    env = gym.make("swe_gym/SWE-v0", tasks=path, split="test", limit=slice(1, 3), provider="docker")
    try:  # the env takes the same selection; nothing starts before reset
        assert [t.instance_id[-2:] for t in env.unwrapped.tasks] == ["08", "09"]
        assert {t.family for t in env.unwrapped.tasks} == {"swebench"}
    finally:
        env.close()


def test_errors_name_the_source_and_the_row(tmp_path: Path) -> None:
    path = tmp_path / "SWE-bench_Lite.parquet"
    bad = {**LITE, "instance_id": "django__django-2", "FAIL_TO_PASS": "not json"}
    datasets.Dataset.from_list([LITE, bad]).to_parquet(str(path))
    with pytest.raises(TaskError, match=rf"{path.name}\[1\]: row 'django__django-2': field 'FAIL_TO_PASS'"):
        load_tasks(path)
    jsonl = tmp_path / "swe-bench_lite.jsonl"
    jsonl.write_text(json.dumps(LITE) + "\n" + json.dumps(LITE) + "\n")
    with pytest.raises(TaskError, match=r"jsonl:2: duplicate instance_id 'django__django-11099' .*first at .*jsonl:1"):
        load_tasks(jsonl)


def test_a_downloaded_dataset_repository_folder_loads(tmp_path: Path) -> None:
    """What ``huggingface-cli download --repo-type dataset NAME --local-dir DIR`` leaves: data/<split>-*.parquet."""
    repo = tmp_path / "SWE-bench_Lite"
    (repo / "data").mkdir(parents=True)
    datasets.Dataset.from_list([LITE]).to_parquet(str(repo / "data" / "test-00000-of-00001.parquet"))
    dev = [{**LITE, "instance_id": f"django__django-{n}"} for n in (11133, 11179)]  # splits share one schema
    datasets.Dataset.from_list(dev).to_parquet(str(repo / "data" / "dev-00000-of-00001.parquet"))
    assert [t.instance_id for t in load_tasks(repo)] == ["django__django-11099"]
    assert len(load_tasks(repo, split="dev")) == 2


def test_missing_libraries_and_files_say_what_to_do(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    folder = tmp_path / "saved"
    datasets.Dataset.from_list([LITE]).save_to_disk(str(folder))
    parquet = tmp_path / "rows.parquet"
    datasets.Dataset.from_list([LITE]).to_parquet(str(parquet))
    with pytest.raises(TaskError, match=r"task file .*missing\.parquet does not exist"):
        load_tasks(tmp_path / "missing.parquet")
    with pytest.raises(TaskError, match="does not exist"):
        load_tasks("not-a-dataset-name")
    monkeypatch.setitem(sys.modules, "datasets", None)  # as if the extra were not installed
    monkeypatch.setitem(sys.modules, "pyarrow.parquet", None)
    with pytest.raises(TaskError, match=r"needs the `datasets` library: pip install 'swe_gym\[datasets\]'"):
        load_tasks("princeton-nlp/SWE-bench_Lite")
    with pytest.raises(TaskError, match=r"dataset folder .*needs the `datasets` library"):
        load_tasks(folder)
    with pytest.raises(TaskError, match=r"rows\.parquet needs pyarrow: pip install 'swe_gym\[datasets\]'"):
        load_tasks(parquet)


def test_hub_names_are_told_from_files() -> None:
    assert is_hub_name("SWE-Gym/SWE-Gym") and is_hub_name("nebius/SWE-rebench")
    assert not is_hub_name("exports/tasks.jsonl") and not is_hub_name("/abs/path") and not is_hub_name("bundled")
    assert read_rows(
        ROOT
        / "swe_gym"
        / "tasks"
        / "bundled"
        / next(p.name for p in (ROOT / "swe_gym" / "tasks" / "bundled").iterdir() if (p / "task.json").is_file())
        / "task.json"
    )[0][1].endswith("task.json[0]")


def _offline_child(tmp_path: Path, script: str) -> subprocess.CompletedProcess[str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith(("HF_", "HUGGINGFACE"))}
    env.update(HF_HOME=str(tmp_path / "hf"), HF_DATASETS_OFFLINE="1", HF_HUB_OFFLINE="1", PYTHONPATH=str(ROOT))
    return subprocess.run(
        [sys.executable, "-c", textwrap.dedent(script)],
        env=env,
        cwd=tmp_path,
        capture_output=True,
        text=True,
        timeout=240,
    )


def test_a_hub_dataset_loads_offline_from_the_cache(tmp_path: Path) -> None:
    rows = tmp_path / "rows.parquet"
    datasets.Dataset.from_list(verified_rows(4)).to_parquet(str(rows))
    result = _offline_child(
        tmp_path,
        f"""
        import json, os
        import datasets
        from datasets.packaged_modules.parquet.parquet import Parquet
        cache = str(datasets.config.HF_DATASETS_CACHE)
        assert datasets.config.HF_HUB_OFFLINE and cache.startswith(os.environ["HF_HOME"])
        # The cache a first, online load_dataset("princeton-nlp/SWE-bench_Verified") leaves behind.
        builder = Parquet(cache_dir="build", dataset_name="SWE-bench_Verified", config_name="default",
                          data_files={{"test": {str(rows)!r}}}, hash="c104f840cc67f8b6eec6f759ebc8b2693d585d4a")
        builder.download_and_prepare(output_dir=os.path.join(cache,
            "princeton-nlp___swe-bench_verified", "default", "0.0.0", builder.hash))
        from swe_gym.tasks import load_tasks
        tasks = load_tasks("princeton-nlp/SWE-bench_Verified", split="test",
                           instance_ids=["astropy__astropy-12909", "astropy__astropy-12910"], limit=slice(1, None))
        print(json.dumps([[t.instance_id, t.family, t.image] for t in tasks]))
        """,
    )
    assert result.returncode == 0, result.stderr[-3000:]
    assert json.loads(result.stdout.splitlines()[-1]) == [
        ["astropy__astropy-12910", "swebench", "swebench/sweb.eval.x86_64.astropy_1776_astropy-12910:latest"]
    ]


def test_a_hub_dataset_missing_offline_says_how_to_get_it(tmp_path: Path) -> None:
    result = _offline_child(
        tmp_path,
        """
        from swe_gym.errors import TaskError
        from swe_gym.tasks import load_tasks
        try:
            load_tasks("SWE-Gym/SWE-Gym", split="train")
        except TaskError as exc:
            print(exc)
        """,
    )
    assert result.returncode == 0, result.stderr[-3000:]
    message = result.stdout
    assert "cannot load Hugging Face dataset 'SWE-Gym/SWE-Gym' (split 'train')" in message
    assert "not in the local cache" in message and "save_to_disk(DIR)" in message
    assert "huggingface-cli download --repo-type dataset SWE-Gym/SWE-Gym" in message and "JSONL" in message
