"""Reading the dependency files g++ writes with -MD, escaped names included."""

from __future__ import annotations

import itertools
import subprocess
from pathlib import Path

import pytest

from brainevent.build.includes import _rules, read_depfile


def _reference_rules(text: str) -> list[list[str]]:
    """Make's reading of a depfile, a character at a time: the model ``_rules`` must match."""
    rules: list[list[str]] = [[]]
    current: list[str] = []

    def end_word() -> None:
        if current:
            rules[-1].append("".join(current))
            current.clear()

    i = 0
    while i < len(text):
        ch = text[i]
        nxt = text[i + 1] if i + 1 < len(text) else ""
        if ch == "\\" and nxt in (" ", "#", "\\", ":"):
            current.append(nxt)
            i += 2
            continue
        if ch == "\\" and nxt in ("\n", "\r"):  # line continuation
            end_word()
            i += 2
            continue
        if ch == "$" and nxt == "$":
            current.append("$")
            i += 2
            continue
        if ch == ":" and (nxt == "" or nxt.isspace()):
            end_word()
            rules[-1].append(":")
        elif ch == "\n":
            end_word()
            rules.append([])
        elif ch.isspace():
            end_word()
        else:
            current.append(ch)
        i += 1
    end_word()
    return [words for words in rules if words]


def _gxx_depfile(tmp_path: Path, headers: list[str]) -> Path:
    for name in headers:
        (tmp_path / name).write_text(f"// {name}\n")
    includes = "".join(f'#include "{name}"\n' for name in headers)
    (tmp_path / "unit.cpp").write_text(includes + "#include <vector>\nint f() { return 1; }\n")
    subprocess.run(
        ["g++", "-std=c++17", "-MD", "-MF", "unit.d", "-c", "unit.cpp", "-o", "unit.o"],
        cwd=tmp_path,
        check=True,
    )
    return tmp_path / "unit.d"


@pytest.mark.host
def test_a_plain_gxx_depfile_lists_every_header(tmp_path: Path) -> None:
    depfile = _gxx_depfile(tmp_path, ["a.h", "b.h"])
    deps = read_depfile(depfile, tmp_path)
    assert deps[0] == str(tmp_path / "unit.cpp")
    assert str(tmp_path / "a.h") in deps and str(tmp_path / "b.h") in deps
    assert any(d.endswith("/vector") for d in deps)  # system headers are listed too
    text = depfile.read_text()
    assert _rules(text) == _reference_rules(text)


@pytest.mark.host
def test_escaped_names_take_the_careful_reader(tmp_path: Path) -> None:
    depfile = _gxx_depfile(tmp_path, ["with space.h", "dollar$sign.h", "hash#mark.h"])
    deps = read_depfile(depfile, tmp_path)
    for name in ("with space.h", "dollar$sign.h", "hash#mark.h"):
        assert str(tmp_path / name) in deps


def test_the_reader_agrees_with_make_character_by_character() -> None:
    # Every text of up to 4 pieces from an alphabet of the characters that matter: colons
    # in and at the end of words, continuations (LF and CR), bare CR, tabs, newlines, escapes
    # (of a space, a hash, a colon, a backslash), dollars single and doubled, lone backslashes.
    pieces = ["a", ":", " ", "\n", "\\\n", "\\\r", "\r", "\t", "/x.h",
              "\\ ", "\\#", "\\:", "\\\\", "\\", "$", "$$"]  # fmt: skip
    checked = 0
    for size in range(1, 5):
        for combo in itertools.product(pieces, repeat=size):
            text = "".join(combo)
            assert _rules(text) == _reference_rules(text), repr(text)
            checked += 1
    assert checked > 60000
