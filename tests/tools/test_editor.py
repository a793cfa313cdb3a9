"""The file editor tool on every isolated provider: each command, its errors, bytes kept, and undo."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import pytest

from swe_gym.sandbox import Sandbox
from swe_gym.sandbox.loop import run_sync
from swe_gym.tools import Editor, EditorError
from tests.conftest import make_sandbox


@pytest.fixture
def box(isolated_provider: str) -> Iterator[Sandbox]:
    sandbox = make_sandbox(isolated_provider)
    yield sandbox
    sandbox.close()


def edit(editor: Editor, **arguments: Any) -> str:
    return run_sync(editor.run(arguments))


def fails(editor: Editor, match: str, **arguments: Any) -> None:
    with pytest.raises(EditorError, match=match):
        edit(editor, **arguments)


def test_every_command_and_its_errors(box: Sandbox) -> None:
    editor = Editor(box.aio)
    assert edit(editor, command="create", path="pkg/a.py", file_text="x = 1\ny = 2\nx = 1\n").startswith("File created")
    assert box.read_file(f"{box.workdir}/pkg/a.py") == b"x = 1\ny = 2\nx = 1\n"  # relative to the repository
    assert "     2\ty = 2" in edit(editor, command="view", path=f"{box.workdir}/pkg/a.py")
    assert edit(editor, command="view", path="pkg/a.py", view_range=[2, -1]).splitlines()[1:] == [
        "     2\ty = 2",
        "     3\tx = 1",
    ]
    assert "./pkg/a.py" in edit(editor, command="view", path=".")
    fails(editor, r"appears 2 times in .*a.py \(lines 1, 3\)", command="str_replace", path="pkg/a.py", old_str="x = 1")
    fails(editor, "does not appear verbatim", command="str_replace", path="pkg/a.py", old_str="z = 9", new_str="")
    assert "y = 3" in edit(editor, command="str_replace", path="pkg/a.py", old_str="y = 2", new_str="y = 3")
    edit(editor, command="insert", path="pkg/a.py", insert_line=0, new_str="# top")
    assert box.read_file(f"{box.workdir}/pkg/a.py") == b"# top\nx = 1\ny = 3\nx = 1\n"
    fails(editor, "outside the file's 4 lines", command="insert", path="pkg/a.py", insert_line=9, new_str="z")
    fails(editor, "already exists", command="create", path="pkg/a.py", file_text="")
    fails(editor, "does not exist", command="view", path="nope.py")
    fails(editor, "not a regular file", command="str_replace", path="pkg", old_str="a")
    fails(editor, "unknown command 'delete'", command="delete", path="pkg/a.py")
    fails(editor, "'path' argument is required", command="view")
    edit(editor, command="undo_edit", path="pkg/a.py")
    edit(editor, command="undo_edit", path="pkg/a.py")
    assert box.read_file(f"{box.workdir}/pkg/a.py") == b"x = 1\ny = 2\nx = 1\n"
    edit(editor, command="undo_edit", path="pkg/a.py")  # the creation itself
    assert box.exec(f"test -e {box.workdir}/pkg/a.py").exit_code == 1
    fails(editor, "no edit of .* to undo", command="undo_edit", path="pkg/a.py")


def test_binary_files_are_edited_byte_for_byte(box: Sandbox) -> None:
    editor = Editor(box.aio)
    path = f"{box.workdir}/blob.bin"
    box.write_file(path, b"\xff\xfe\x00 head \x80\x81 old tail \x00\xff")
    box.exec(f"chmod 755 {path}")
    edit(editor, command="str_replace", path="blob.bin", old_str="old", new_str="new ünïcode")
    assert box.read_file(path) == b"\xff\xfe\x00 head \x80\x81 new \xc3\xbcn\xc3\xafcode tail \x00\xff"
    assert box.exec(f"stat -c %a {path}").output.strip() == "755"  # the mode survives the edit
    fails(editor, "is a binary file", command="view", path="blob.bin")
