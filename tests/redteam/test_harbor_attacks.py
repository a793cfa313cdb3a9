"""Attacks on a Harbor task's verifier, by an agent that has read it.

Each is run as an agent would: commands in its own sandbox, then ``submit``, so the real patch extraction, fresh
verifier sandbox and reward read grade it. Two kinds of task:

* the fixture ``slugfix``, an opaque ``test.sh`` (it runs pytest, which imports the agent's ``slugify``, then
  writes ``reward.txt`` by pytest's exit status), graded by `swe_gym.grading.harbor_verifier`. None of the attacks
  fixes the bug, and each would have scored 1.0 on a verifier that ran ``bash /tests/test.sh`` in the agent's
  sandbox and read any reward file. What such a ``test.sh`` cannot be protected from is pinned too;
* a bundled task exported by ``swe-gym export --format harbor`` (textkit), whose ``tests/verify.py`` decides the
  reward itself: the attacks from the package under test (``os._exit(0)``, a ``runtest`` no-op, a reward-writing
  daemon, killing the verifier, a forger that reads ``/tests`` to spare the twins) score 0 graded by swe_gym and
  by the real ``harbor`` CLI (its ``oracle`` agent running each attack as the task's ``solve.sh``), gold 1.
"""

from __future__ import annotations

import shutil
from pathlib import Path

import gymnasium as gym
import pytest

from swe_gym.cli import main
from swe_gym.policies.oracle import apply_patch_command
from swe_gym.tasks import load_bundled
from tests.conftest import IN_CI, TEST_IMAGE, provider_setup, require_docker
from tests.integrations.test_harbor_cli import HARBOR, harbor_rewards

FIXTURES = Path(__file__).resolve().parent.parent / "fixtures" / "harbor"
TASK = "swe-gym-fixtures__slugfix"


def planted(code: str) -> str:
    """An action that appends ``code`` to the module the hidden tests import (it runs inside pytest)."""
    return f"cat >> slugify/__init__.py <<'SWE_GYM_EOF'\n{code}\nSWE_GYM_EOF"


#: A daemon that waits for test.sh's reward and rewrites it; the setsid'd shell outlives pytest.
WATCHER = (
    "import subprocess\n"
    "subprocess.Popen(['bash', '-c', 'while true; do if grep -qx 0 /logs/verifier/reward.txt 2>/dev/null; "
    "then echo 1 > /logs/verifier/reward.txt; exit; fi; done'], start_new_session=True)"
)

#: The reward path made a FIFO whose reader (in a session of its own) swallows test.sh's write.
FIFO = (
    "import os, subprocess\nos.makedirs('/logs/verifier', exist_ok=True)\nos.mkfifo('/logs/verifier/reward.txt')\n"
    "subprocess.Popen(['bash', '-c', 'while true; do cat /logs/verifier/reward.txt > /dev/null; done'], "
    "start_new_session=True)"
)

ATTACKS = {
    # What the agent leaves in its own sandbox never reaches the verifier's.
    "reward planted in the agent's sandbox": [
        "mkdir -p /logs/verifier /tests && echo 1 > /logs/verifier/reward.txt && echo '{\"reward\": 1}' > "
        "/logs/verifier/reward.json && printf 'echo 1 > /logs/verifier/reward.txt\\n' > /tests/test.sh"
    ],
    # The kind the task's tests never name is not read (Harbor itself prefers reward.json).
    "reward.json beside the task's reward.txt": [
        planted(
            "import os\nos.makedirs('/logs/verifier', exist_ok=True)\n"
            "open('/logs/verifier/reward.json', 'w').write('1')"
        )
    ],
    # test.sh's own later write wins over one made at the interpreter's exit.
    "reward written at exit": [
        planted("import atexit\natexit.register(lambda: open('/logs/verifier/reward.txt', 'w').write('1'))")
    ],
    # bash reads a script file as it runs: the verifier runs test.sh's text from memory instead.
    "test.sh rewritten while it runs": [
        planted("open('/tests/test.sh', 'a').write('\\necho 1 > /logs/verifier/reward.txt\\n')")
    ],
    "a watcher daemon rewrites the reward": [planted(WATCHER)],
    # A FIFO where the reward goes, drained by a daemon so test.sh's write does not block: reading it would hang
    # the verifier's runner; it is no regular file, so it holds no reward (and the daemon is an orphan).
    "a FIFO at the reward path": [planted(FIFO)],
    # `python3 -m pytest` puts the work tree first on sys.path: a package named pytest, or a module named like one
    # the runner imports at start-up (the standard library's `re`), would be imported instead and exit 0. Such new
    # top-level modules go back to base (gone) before test.sh runs, as the safe harness's rules say.
    "a pytest package in the work tree": [
        "mkdir -p pytest && touch pytest/__init__.py && echo 'raise SystemExit(0)' > pytest/__main__.py"
    ],
    "a standard-library module in the work tree": ["echo 'raise SystemExit(0)' > re.py"],
    # The work tree is the only way in: the apply refuses paths outside it.
    "a patch that reaches /tests": ["ln -s /tests tests_link && mkdir -p ../tests && echo x > ../tests/test.sh"],
}


@pytest.fixture(scope="module")
def env() -> gym.Env[str, str]:
    config, _ = provider_setup("docker")
    made = gym.make("swe_gym/SWE-v0", tasks=str(FIXTURES / "slugfix"), provider=config, prestart_grading=False)
    yield made
    made.close()


@pytest.mark.parametrize("name", list(ATTACKS))
def test_an_attack_on_the_harbor_verifier_scores_zero_and_is_never_masked(env: gym.Env[str, str], name: str) -> None:
    env.reset(options={"task_id": TASK})
    for action in ATTACKS[name]:
        env.step(action)
    _, reward, terminated, _, info = env.step("submit")
    assert terminated and reward == 0.0 and not info["resolved"], info["report"]
    assert not info["masked"], info["masked_reason"]


@pytest.mark.parametrize("name", ["test.sh rewritten while it runs", "a watcher daemon rewrites the reward"])
def test_what_only_code_can_do_is_named_as_tampering(env: gym.Env[str, str], name: str) -> None:
    env.reset(options={"task_id": TASK})
    for action in ATTACKS[name]:
        env.step(action)
    info = env.step("submit")[4]
    assert info["report"]["tampering"] and info["report"]["control_run"], info["report"]
    assert info["report"]["unresolved_reason"].startswith("tampering: ")


def test_the_gold_solution_still_scores_one_after_the_checks(env: gym.Env[str, str]) -> None:
    """The checks above cost a correct solution nothing (no orphans, /tests untouched): no control run."""
    env.reset(options={"task_id": TASK})
    fix = "import re\n\n\ndef slug(title: str) -> str:\n    return re.sub(r'[^a-z0-9]+', '-', title.lower()).strip('-')"
    env.step(f"cat > slugify/__init__.py <<'SWE_GYM_EOF'\n{fix}\nSWE_GYM_EOF")
    _, reward, _, _, info = env.step("submit")
    assert reward == 1.0 and info["resolved"] and not info["report"]["control_run"], info["report"]


def test_a_second_reward_file_can_only_lower_the_reward(tmp_path: Path) -> None:
    """A task whose files name both reward kinds (here a comment in test.sh) but whose test.sh writes one: code
    under test writes the other. Harbor reads ``reward.json`` first and would give 1.0; the lower one counts."""
    task = tmp_path / "slugfix"
    shutil.copytree(FIXTURES / "slugfix", task)
    script = task / "tests" / "test.sh"
    script.write_text(script.read_text() + "# (Harbor also reads /logs/verifier/reward.json)\n")
    config, _ = provider_setup("docker")
    made = gym.make("swe_gym/SWE-v0", tasks=str(task), provider=config, prestart_grading=False)
    try:
        made.reset(options={"task_id": TASK})
        made.step(
            planted(
                "import os\nos.makedirs('/logs/verifier', exist_ok=True)\n"
                "open('/logs/verifier/reward.json', 'w').write('1')"
            )
        )
        _, reward, terminated, _, info = made.step("submit")
    finally:
        made.close()
    assert terminated and reward == 0.0 and not info["resolved"] and not info["masked"], info["report"]
    assert info["report"]["score_source"].endswith("reward.txt"), info["report"]


def harbor_env(task: Path) -> gym.Env[str, str]:
    config, _ = provider_setup("docker")
    return gym.make("swe_gym/SWE-v0", tasks=str(task), provider=config, prestart_grading=False)


def test_a_shadowing_module_in_a_work_tree_without_git_goes_too() -> None:
    """csv-report has no repository, and its test.sh writes the reward with ``python3 -c "import json ..."`` run in
    the work tree: a ``json.py`` there would write the reward. It goes (the verifier's sandbox gets a base commit of
    its own first, removed before test.sh runs)."""
    fake = "def dump(obj, handle):\n    handle.write('{\"reward\": 1}')\n"
    with harbor_env(FIXTURES / "csv-report") as made:
        made.reset()
        made.step(f"cat > json.py <<'SWE_GYM_EOF'\n{fake}SWE_GYM_EOF")
        _, reward, _, _, info = made.step("submit")
    assert reward == 0.0 and not info["masked"], info["report"]
    assert "json.py" in info["report"]["restore_reasons"], info["report"]


def test_a_module_the_tasks_tests_ask_for_is_not_taken_for_a_shadow(tmp_path: Path) -> None:
    """A task whose tests run ``/app/csv.py`` asks for a file named like a standard module: the tests name it, so
    it is the agent's deliverable and stays."""
    task = shutil.copytree(FIXTURES / "csv-report", tmp_path / "csv-report")
    (task / "tests" / "test.sh").write_text(
        '#!/bin/bash\nif [ "$(python3 /app/csv.py)" = ok ]; then echo 1; else echo 0; fi > /logs/verifier/reward.txt\n'
    )
    with harbor_env(task) as made:
        made.reset()
        made.step("echo 'print(\"ok\")' > csv.py")
        _, reward, _, _, info = made.step("submit")
    assert reward == 1.0 and not info["report"]["restore_reasons"], info["report"]


#: Code under test that kills the verifier's shell and pytest's parent, then writes the reward itself.
KILL_PARENT = (
    "import os, signal, time\nos.kill(os.getppid(), signal.SIGKILL)\ntime.sleep(0.2)\n"
    "os.makedirs('/logs/verifier', exist_ok=True)\nopen('/logs/verifier/reward.txt', 'w').write('1')\nos._exit(0)"
)
#: ... or writes it first and kills its whole process group (test.sh's) at once.
KILL_GROUP = (
    "import os, signal\nos.makedirs('/logs/verifier', exist_ok=True)\n"
    "open('/logs/verifier/reward.txt', 'w').write('1')\nos.killpg(0, signal.SIGKILL)"
)


@pytest.mark.parametrize("code", [KILL_PARENT, KILL_GROUP], ids=["kill test.sh, then write", "write, then kill all"])
def test_code_under_test_that_ends_an_opaque_test_sh_to_write_the_reward_is_caught(
    env: gym.Env[str, str], code: str
) -> None:
    """What outlived its parent is counted, and the reward read once it is gone: tampering."""
    env.reset(options={"task_id": TASK})
    env.step(planted(code))
    _, reward, _, _, info = env.step("submit")
    assert reward == 0.0 and not info["masked"] and info["report"]["tampering"], info["report"]


def test_an_opaque_test_sh_that_trusts_the_exit_status_is_fooled_by_an_early_exit(env: gym.Env[str, str]) -> None:
    """The documented limit (docs/harbor.md): ``os._exit(0)`` inside pytest ends the runner with status 0, nothing
    outlives anything, and slugfix's test.sh itself writes 1. An exported task's verifier (below) is not fooled."""
    env.reset(options={"task_id": TASK})
    env.step(planted("import os\nos._exit(0)"))
    _, reward, _, _, info = env.step("submit")
    assert reward == 1.0 and not info["report"]["tampering"], info["report"]


# --- an exported bundled task ----------------------------------------------------------------------------------

EXPORTED = "swe-gym__textkit-1"


def in_package(code: str, module: str = "textkit/__init__.py") -> str:
    """An action that appends ``code`` to a module of textkit, the package the exported task's tests import."""
    return f"cat >> {module} <<'SWE_GYM_EOF'\n{code}\nSWE_GYM_EOF"


#: A daemon (a session of its own, pytest's output still open) that keeps writing reward 1 in both kinds.
REWARD_DAEMON = (
    "import subprocess\nsubprocess.Popen(['bash', '-c', 'for i in $(seq 3000); do echo 1 > /logs/verifier/reward.txt; "
    "echo 1 > /logs/verifier/reward.json; sleep 0.01; done 2>/dev/null'], start_new_session=True)"
)
#: Every process but PID 1 and itself killed (the verifier among them, were it the same user), then the reward.
KILL_ALL = (
    "import os, signal\nfor pid in os.listdir('/proc'):\n    if pid.isdigit() and int(pid) not in (1, os.getpid()):\n"
    "        try:\n            os.kill(int(pid), signal.SIGKILL)\n        except OSError:\n            pass\n"
    "try:\n    os.makedirs('/logs/verifier', exist_ok=True)\n    open('/logs/verifier/reward.txt', 'w').write('1')\n"
    "except OSError:\n    pass\nos._exit(0)"
)
#: A forger that reads the verifier's plan to learn which definitions are twins in this pass (by the digests of the
#: test files on disk): originals forced to pass, twins to fail, the canary (the last argument) left alone. Where
#: the plan cannot be read, everything but the canary passes.
SPARING_FORGER = """\
import hashlib, json, os, sys
import _pytest.python

_real = _pytest.python.Function.runtest


def _load(path):
    try:
        with open(path) as handle:
            return json.load(handle)
    except OSError:
        return None


def _twinned(plan):
    for each in (plan or {}).get("plans", []):
        for files, twinned in zip(each["files"], each["twinned"]):
            def same(path, entry):
                try:
                    data = open(os.path.join(os.getcwd(), path), "rb").read()
                except OSError:
                    return entry is None
                return entry is not None and hashlib.sha256(data).hexdigest() == entry[0]
            if all(same(path, entry) for path, entry in files.items()):
                return set(twinned)
    return set()


_TWINS = _twinned(_load("/tests/plan.json"))


def runtest(self):
    if str(self.path).endswith(sys.argv[-1].split("/")[-1]):
        return _real(self)
    if self.nodeid in _TWINS:
        raise AssertionError("a twin, made to fail")
    return None


_pytest.python.Function.runtest = runtest"""

EXPORT_ATTACKS = {
    "os._exit(0) at import": [in_package("import os\nos._exit(0)")],
    "os._exit(0) in the tested function": [
        in_package("import os\n\n\ndef slugify(*args, **kwargs):\n    os._exit(0)", "textkit/slug.py")
    ],
    "runtest made a no-op": [in_package("import _pytest.python\n_pytest.python.Function.runtest = lambda self: None")],
    "a daemon writes the reward": [in_package(REWARD_DAEMON)],
    "the verifier killed, the reward written": [in_package(KILL_ALL)],
    "a forger that reads /tests to spare the twins": [in_package(SPARING_FORGER)],
}


@pytest.fixture(scope="module")
def exported(tmp_path_factory: pytest.TempPathFactory) -> Path:
    require_docker()
    out = tmp_path_factory.mktemp("exported")
    args = ["export", "--format", "harbor", "--dataset", "bundled", "--instance-id", EXPORTED, "--out", str(out)]
    assert main([*args, "--image", TEST_IMAGE]) == 0
    return out


@pytest.fixture(scope="module")
def exported_env(exported: Path) -> gym.Env[str, str]:
    with harbor_env(exported) as made:
        yield made


def gold_action() -> str:
    return apply_patch_command(next(t for t in load_bundled() if t.instance_id == EXPORTED).patch)


@pytest.mark.parametrize("name", list(EXPORT_ATTACKS))
def test_an_attack_on_an_exported_task_scores_zero_graded_by_swe_gym(
    exported_env: gym.Env[str, str], name: str
) -> None:
    exported_env.reset(options={"task_id": EXPORTED})
    for action in EXPORT_ATTACKS[name]:
        exported_env.step(action)
    _, reward, terminated, _, info = exported_env.step("submit")
    assert terminated and reward == 0.0 and not info["resolved"], info["report"]
    assert not info["masked"], info["masked_reason"]
    assert "swe_gym verdict: reward 0" in info["report"]["log_tail"], info["report"]["log_tail"]


def test_gold_scores_one_on_an_exported_task_graded_by_swe_gym(exported_env: gym.Env[str, str]) -> None:
    exported_env.reset(options={"task_id": EXPORTED})
    exported_env.step(gold_action())
    _, reward, _, _, info = exported_env.step("submit")
    assert reward == 1.0 and info["resolved"] and not info["report"]["tampering"], info["report"]


def test_the_real_harbor_cli_scores_each_attack_zero_and_gold_one(exported: Path, tmp_path: Path) -> None:
    """One ``harbor run`` with its ``oracle`` agent over copies of the exported task, each copy's ``solve.sh`` one
    attack (the gold copy keeps the gold patch)."""
    if not HARBOR.is_file():
        problem = f"no harbor CLI at {HARBOR} (run .ci/provision_harbor.sh)"
        if IN_CI:
            pytest.fail(f"CI must run the harbor test: {problem}")
        pytest.skip(problem)
    source = exported / EXPORTED
    tasks = tmp_path / "tasks"
    names = {"gold": "gold"} | {name: f"attack-{i}" for i, name in enumerate(EXPORT_ATTACKS)}
    for name, slug in names.items():
        copy = shutil.copytree(source, tasks / slug)
        config = copy / "task.toml"
        config.write_text(config.read_text().replace(f'name = "swe-gym/{EXPORTED}"', f'name = "swe-gym/{slug}"'))
        if name != "gold":
            (copy / "solution" / "solve.sh").write_text(
                "#!/bin/bash\nset -e\ncd /testbed\n" + "\n".join(EXPORT_ATTACKS[name]) + "\n"
            )
    rewards = harbor_rewards(tasks, "oracle", tmp_path / "jobs")
    assert rewards == {slug: 1.0 if name == "gold" else 0.0 for name, slug in names.items()}, names
