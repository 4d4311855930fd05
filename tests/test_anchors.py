"""`playbook anchor` and `playbook verify --anchor`: a rewrite with a recomputed chain is caught and located."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import msgspec
import pytest

from eventlog.decide import ApplyOperations, decide_all
from eventlog.events import Cause, KeyPointAdded
from eventlog.logformat import decode_line, encode_line
from eventlog.registry import record_decoder
from playbook.commands.cli import main
from projections.anchors import ANCHORS_NAME, read_anchors
from projections.repository import LOG_NAME, PlaybookRepository

OLD_LOG = Path(__file__).parent / "fixtures" / "crc32" / LOG_NAME


def add(*texts: str):
    return lambda state: decide_all(state, [ApplyOperations([{"type": "ADD", "text": t, "section": "OTHERS"}
                                                             for t in texts])])


@pytest.fixture
def project(tmp_path, monkeypatch) -> Path:
    monkeypatch.setenv("CLAUDE_PROJECT_DIR", str(tmp_path))
    return tmp_path


@pytest.fixture
def repo(project) -> PlaybookRepository:
    repo = PlaybookRepository(project / ".claude")
    repo.append(add("Run the tests before committing", "Prefer small functions"), Cause(source="test"))
    repo.append(add("Never hand-edit generated files"), Cause(source="test"))
    repo.append(add("Pin the lock file"), Cause(source="test"))
    return repo


def cli(project: Path, capsys, *argv: str) -> tuple[int, str, str]:
    capsys.readouterr()
    code = main(["--project", str(project), *argv])
    captured = capsys.readouterr()
    return code, captured.out, captured.err


def forge(log: Path, old: str, new: str) -> int:
    """Rewrite a key point's text and recompute the whole chain, as someone who can write the log could.
    Returns the line changed."""
    lines = log.read_bytes().splitlines()
    out, running, changed = [], 0, 0
    for number, raw in enumerate(lines, 1):
        record = record_decoder().decode(raw)
        if isinstance(record, KeyPointAdded) and record.text == old:
            record, changed = msgspec.structs.replace(record, text=new), number
        line, running = encode_line(record, running)
        out.append(line)
    log.write_bytes(b"".join(out))
    assert changed
    return changed


@pytest.mark.slow
def test_a_forged_log_with_a_recomputed_chain_passes_verify_but_not_verify_anchor(project, repo, capsys):
    code, out, _err = cli(project, capsys, "anchor")
    assert code == 0 and "anchored line" in out
    assert (project / ".claude" / ANCHORS_NAME).exists()
    repo.append(add("Read the error before retrying"), Cause(source="test"))  # the log grows after the anchor
    assert cli(project, capsys, "verify", "--anchor")[0] == 0

    line = forge(repo.log_path, "Never hand-edit generated files", "Always hand-edit generated files")
    assert cli(project, capsys, "rebuild")[0] == 0
    code, out, _err = cli(project, capsys, "verify")
    assert code == 0, out  # the chain alone does not stop a deliberate rewrite
    code, out, _err = cli(project, capsys, "show")
    assert "Always hand-edit generated files" in out

    code, out, _err = cli(project, capsys, "verify", "--anchor")
    assert code == 1
    assert f"{LOG_NAME}:{line}: line {line} (seq {line}) is not the line that was anchored" in out
    code, out, _err = cli(project, capsys, "verify", "--anchor", "--json")
    problem = json.loads(out)["problems"][0]
    assert code == 1 and problem["line"] == line
    # A new anchor never blesses the rewrite.
    code, _out, err = cli(project, capsys, "anchor")
    assert code == 1 and f"line {line}" in err and "Traceback" not in err


def test_every_anchor_is_checked_and_a_cut_log_is_caught(project, repo, capsys):
    assert cli(project, capsys, "anchor")[0] == 0
    _state, first = repo.current()
    repo.append(add("Check the CI configuration"), Cause(source="test"))
    assert cli(project, capsys, "anchor")[0] == 0
    code, out, _err = cli(project, capsys, "anchor")
    assert code == 0 and "already anchored" in out
    anchors = read_anchors(project / ".claude" / ANCHORS_NAME)
    assert [a.from_line for a in anchors] == [1, anchors[0].line + 1]
    code, out, _err = cli(project, capsys, "verify", "--anchor")
    assert code == 0 and "extends all 2 recorded heads" in out

    with open(repo.log_path, "r+b") as handle:  # back to the first anchor: the second one's lines are gone
        handle.truncate(first.offset)
    code, out, _err = cli(project, capsys, "verify", "--anchor")
    assert code == 1 and "lines were cut" in out and f"line {anchors[1].line}" in out


def test_verify_anchor_without_an_anchor_says_so(project, repo, capsys):
    code, out, _err = cli(project, capsys, "verify", "--anchor")
    assert code == 1 and "no anchor recorded" in out


def test_an_old_crc32_log_is_anchored_and_a_forgery_in_its_crc32_part_is_located(project, capsys):
    claude = project / ".claude"
    claude.mkdir()
    shutil.copy(OLD_LOG, claude / LOG_NAME)
    assert cli(project, capsys, "anchor")[0] == 0
    repo = PlaybookRepository(claude)
    repo.append(add("Split long functions"), Cause(source="test"))
    assert cli(project, capsys, "anchor")[0] == 0
    assert cli(project, capsys, "verify", "--anchor")[0] == 0
    # Rewrite one old line, recompute the CRC-32 part and the SHA-256 part after it.
    lines = repo.log_path.read_bytes().splitlines(keepends=True)
    target = next(n for n, line in enumerate(lines) if b'"text":"' in line)
    record = decode_line(lines[target])
    forged_text = record.text + " (forged)"
    from tests.logtools import encode_crc_line, is_sha_line
    running: object = 0
    out = []
    for number, raw in enumerate(lines):
        rec = decode_line(raw)
        if number == target:
            rec = msgspec.structs.replace(rec, text=forged_text)
        if is_sha_line(raw):
            line, running = encode_line(rec, running)
        else:
            line, running = encode_crc_line(rec, running)
        out.append(line)
    repo.log_path.write_bytes(b"".join(out))
    assert cli(project, capsys, "rebuild")[0] == 0
    assert cli(project, capsys, "verify")[0] == 0
    code, text, _err = cli(project, capsys, "verify", "--anchor")
    assert code == 1 and f":{target + 1}: line {target + 1} " in text


FIRST_SECRET = "Qx7-staging-first-kept"
SECOND_SECRET = "Qx7-staging-second-kept"


def test_anchors_survive_purges_and_anchor_and_purge_work_after_them(project, capsys):
    """The reported sequence: anchor, learn, a secret, purge; then anchor, another secret, purge again."""
    log = project / ".claude" / LOG_NAME
    assert cli(project, capsys, "add", "one")[0] == 0
    assert cli(project, capsys, "anchor")[0] == 0
    assert cli(project, capsys, "add", "two")[0] == 0
    assert cli(project, capsys, "add", f"token {FIRST_SECRET}")[0] == 0
    code, out, err = cli(project, capsys, "purge", "--match", FIRST_SECRET)
    assert code == 0 and "anchored the rewrite" in out, err
    code, out, _err = cli(project, capsys, "verify", "--anchor")
    assert code == 0 and "recorded heads" in out, out

    code, out, err = cli(project, capsys, "anchor")
    assert code == 0 and "already anchored" in out, err  # the purge anchored its new head
    assert cli(project, capsys, "add", "four")[0] == 0
    code, out, err = cli(project, capsys, "anchor")
    assert code == 0 and "anchored line" in out, err
    assert cli(project, capsys, "add", f"token {SECOND_SECRET}")[0] == 0
    code, out, err = cli(project, capsys, "purge", "--match", SECOND_SECRET)
    assert code == 0 and "purged 1 redaction(s)" in out and "anchored the rewrite" in out, err
    code, out, _err = cli(project, capsys, "verify", "--anchor")
    assert code == 0, out
    assert FIRST_SECRET.encode() not in log.read_bytes() and SECOND_SECRET.encode() not in log.read_bytes()

    # Through both purges the anchors still catch a rewrite nobody recorded.
    line = forge(log, "two", "three")
    assert cli(project, capsys, "rebuild")[0] == 0 and cli(project, capsys, "verify")[0] == 0
    code, out, _err = cli(project, capsys, "verify", "--anchor")
    assert code == 1 and f"{LOG_NAME}:{line}: line {line} (seq {line}) is not the line that was anchored" in out
    code, _out, err = cli(project, capsys, "anchor")
    assert code == 1 and f"line {line}" in err


@pytest.mark.parametrize("damage", ["conflict", "garbage", "tags"])
def test_a_damaged_anchors_file_is_one_line_with_the_fix_for_every_command_that_reads_it(project, repo, capsys, damage):
    assert cli(project, capsys, "anchor")[0] == 0
    path = project / ".claude" / ANCHORS_NAME
    kept = path.read_text()
    if damage == "conflict":  # what git leaves when it merged the file as text
        path.write_text(f"<<<<<<< HEAD\n{kept}=======\n{kept}>>>>>>> theirs\n")
    elif damage == "garbage":
        path.write_text(kept + "not an anchor\n")
    else:
        path.write_text(kept.replace('"tags":"', '"tags":"AAAA'))
    for argv in (("verify", "--anchor"), ("anchor",), ("purge", "--match", "generated files")):
        code, out, err = cli(project, capsys, *argv)
        said = (out + err).strip().splitlines()
        assert code == 1 and "Traceback" not in out + err, (argv, out, err)
        [line] = [text for text in said if ANCHORS_NAME in text]
        assert line.count(ANCHORS_NAME) >= 1 and ("git checkout" in line or "conflict" in line), line
    assert "Never hand-edit generated files" in repo.log_path.read_text()  # nothing purged over a damaged file


def test_the_anchors_file_merges_as_the_union_of_both_sides_lines():
    from projections.anchors import merge_files

    base = b"a\nb\n"
    assert merge_files(base, b"a\nb\nours\n", b"a\nb\ntheirs\n") == b"a\nb\nours\ntheirs\n"
    assert merge_files(b"", b"ours\n", b"theirs\nours\n") == b"ours\ntheirs\n"  # added on both sides: no conflict
    assert merge_files(base, b"b\n", b"a\nb\ntheirs\n") == b"b\ntheirs\n"  # a line one side removed stays removed
    assert merge_files(base, b"a\nb", b"a\r\nb\r\n") == b"a\nb\n"
