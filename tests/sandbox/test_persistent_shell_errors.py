"""The persistent shell's errors read as a stateless action's do (``/bin/bash: line N: ...``), never
naming the command file the runner has the shell source."""

from __future__ import annotations

from tests.conftest import make_sandbox


def test_a_persistent_shell_error_names_bash_not_the_command_file() -> None:
    box = make_sandbox("local")
    try:
        for command in ("no_such_command_x", "echo one; no_such_command_x 2>&1; echo two"):
            stateless = box.exec(command)
            persistent = box.exec(command, shell="persistent")
            assert persistent.output == stateless.output, command
            assert "line 1: no_such_command_x: command not found" in persistent.output
            assert persistent.exit_code == stateless.exit_code and persistent.dropped_bytes == 0
        syntax = box.exec("if then", shell="persistent")
        assert "syntax error near unexpected token" in syntax.output
        assert "swe_gym-shell" not in syntax.output and "command:" not in syntax.output
    finally:
        box.close()
