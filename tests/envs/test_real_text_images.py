"""Real repositories' non-ASCII text, read and edited by an agent on their own task images (docker).

sympy's pretty printer draws integrals and matrices with box characters; Django's French translations hold
accents; a failing unittest named ``test_café`` prints an emoji in its report. The agent sees each as the
characters they are, and a line copied from the editor's view replaces exactly (the patch holds the result).
The images come from ``.ci/build_django_image.sh`` and ``.ci/build_sympy_image.sh``; without them these
skip, which under CI is a failure.
"""

from __future__ import annotations

import re
from collections.abc import Iterator

import gymnasium as gym
import pytest

import swe_gym  # noqa: F401 - registers the env
from swe_gym.tasks import SWETask
from swe_gym.tools import TOOL_NAMES
from tests.envs.test_real_text import edit, step
from tests.grading.test_real_django import ROW as DJANGO_ROW
from tests.grading.test_real_django import load_row
from tests.grading.test_real_sympy import ROW as SYMPY_ROW

pytestmark = pytest.mark.docker

PYTHON = "/opt/miniconda3/envs/testbed/bin/python"
UNITTEST = '''import unittest


class Unicode(unittest.TestCase):
    def test_café(self):
        """Emoji 🎉 in a description."""
        self.assertEqual("naïve ✓", "naive 🎉")
'''


def episode(task: SWETask) -> Iterator[gym.Env]:
    env = gym.make("swe_gym/SWE-v0", tasks=[task], provider="docker", tools=list(TOOL_NAMES), max_steps=30)
    env.reset(seed=0)
    yield env
    env.close()


@pytest.fixture(scope="module")
def django() -> Iterator[gym.Env]:
    yield from episode(load_row(DJANGO_ROW, ".ci/build_django_image.sh"))


@pytest.fixture(scope="module")
def sympy() -> Iterator[gym.Env]:
    yield from episode(load_row(SYMPY_ROW, ".ci/build_sympy_image.sh"))


def test_sympy_pretty_printing_is_shown_as_drawn(sympy: gym.Env) -> None:
    script = "import sympy as s; x = s.Symbol('x'); s.pprint(s.Integral(s.sqrt(1 / x), x)); s.pprint(s.eye(2) * x)"
    obs = step(sympy, f'{PYTHON} -c "{script}"')
    assert "⌠" in obs and "⌡" in obs and "⎡" in obs and "⎦" in obs, obs
    assert "\\u" not in obs and "\ufffd" not in obs


def test_a_django_translation_is_read_and_edited_with_its_accents(django: gym.Env) -> None:
    po = "django/conf/locale/fr/LC_MESSAGES/django.po"
    found = step(django, f"grep -n -m1 '^msgstr \".*é' {po}")
    number, line = found.rstrip("\n").split(":", 1)
    assert "é" in line, found
    view = step(django, edit("view", po, view_range=[int(number), int(number)]))
    copied = view.rstrip("\n").rsplit("\t", 1)[1]
    assert copied == line
    assert "Edited" in step(django, edit("str_replace", po, old_str=copied, new_str=copied.replace("é", "É")))
    diff = step(django, f"git diff -- {po}")
    assert f"-{line}" in diff and "+" + line.replace("é", "É") in diff


def test_a_failing_test_with_unicode_in_its_name_and_report(django: gym.Env) -> None:
    step(django, "mkdir -p /tmp/unicode_case")
    step(django, edit("create", "/tmp/unicode_case/test_unicode.py", file_text=UNITTEST))
    obs = step(django, f"cd /tmp/unicode_case && {PYTHON} -m unittest -v test_unicode")
    assert re.search(r"test_café \(test_unicode\.Unicode", obs), obs
    assert "Emoji 🎉 in a description." in obs and "'naïve ✓' != 'naive 🎉'" in obs, obs
