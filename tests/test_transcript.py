"""Reading real Claude Code 2.1.328 transcripts (tests/fixtures/transcripts, see docs/claude-code-notes.md)."""

from __future__ import annotations

import json
import os
from pathlib import Path

import msgspec
import pytest

from eventlog.errors import PlaybookError
from playbook.learner.transcript import PLUGIN, PLUGIN_COMMANDS, Message, Transcript, TranscriptError, cited_ids
from playbook.learner.transcript import nothing_to_learn, read_transcript

FIXTURES = Path(__file__).parent / "fixtures" / "transcripts"

# a real record: what Claude Code writes when the API answers 400 (not the model's words)
API_ERROR_RECORD = (
    '{"parentUuid":"c600a24c-a9cb-4a07-99b4-b8f28f34a810","isSidechain":false,"type":"assistant",'
    '"uuid":"49535b96-168c-4738-a1fb-d4a3ec90230a","timestamp":"2026-11-22T01:57:35.736Z","message":{"id":'
    '"6b6227a4-9f69-4e04-be0c-dfe46db5ce3b","model":"<synthetic>","role":"assistant","stop_reason":"stop_sequence",'
    '"type":"message","content":[{"type":"text","text":"API Error: 400 bad request from fake"}]},'
    '"requestId":"req_fake000006","error":"unknown","isApiErrorMessage":true,"apiErrorStatus":400,'
    '"apiErrorType":"invalid_request_error","cwd":"/PROJECT","sessionId":"30bbb718-6015-48aa-8f44-c2be3186caf5",'
    '"version":"2.1.328"}'
)


def fixture(name: str) -> Path:
    return FIXTURES / name


def pairs(transcript: Transcript) -> list[tuple[str, str]]:
    return [(m.role, m.content) for m in transcript.messages]


def user(text: object, **extra: object) -> str:
    return json.dumps({"type": "user", "isSidechain": False, "message": {"role": "user", "content": text}, **extra})


def assistant(blocks: object, **extra: object) -> str:
    record = {"type": "assistant", "isSidechain": False, "message": {"role": "assistant", "content": blocks}}
    return json.dumps({**record, **extra})


def write(path: Path, *lines: str | bytes, newline_at_end: bool = True) -> Path:
    data = b"\n".join(line.encode() if isinstance(line, str) else line for line in lines)
    path.write_bytes(data + (b"\n" if newline_at_end else b""))
    return path


TOOL_USE_RESUMED = [
    ("user", "run echo hi for me"),
    ("assistant", "Let me run a command.\n[tool Bash: echo hi]"),
    ("user", "[tool result: hi]"),
    ("assistant", "The command printed hi. Following [pat-001] and avoiding [mis-002]."),
    ("user", "now cite the playbook"),
    ("assistant", "Here is the answer, following [pat-001] and avoiding [mis-002]."),
    ("user", "third prompt"),
    ("assistant", "Third answer [pref-003]"),
    ("user", "fourth prompt"),
    ("assistant", "Hi there!"),
]


# -- the real transcripts -------------------------------------------------------------


def test_tool_use_and_resumed_prompts():
    transcript = read_transcript(fixture("tool_use_resumed.jsonl"))
    assert (transcript.lines, transcript.broken_lines) == (64, 0)
    assert pairs(transcript) == TOOL_USE_RESUMED
    assert cited_ids(transcript.messages) == ["pat-001", "mis-002", "pref-003"]
    everything = "\n".join(m.content for m in transcript.messages)
    # hook output, reminders, the environment and the system prompt are not conversation
    for absent in ("MARKER", "system-reminder", "Primary working directory", "queue", "stop_hook"):
        assert absent not in everything


def test_accepts_str_paths_and_returns_frozen_structs():
    transcript = read_transcript(str(fixture("interactive.jsonl")))
    assert pairs(transcript) == [("user", "hello interactive"), ("assistant", "Interactive hi [pat-001]")]
    assert transcript.lines == 34 and transcript.broken_lines == 0
    with pytest.raises(AttributeError):
        transcript.lines = 0  # type: ignore[misc]
    with pytest.raises(AttributeError):
        transcript.messages[0].content = "x"  # type: ignore[misc]


def test_compaction_keeps_the_conversation_and_drops_summary_command_and_caveat():
    transcript = read_transcript(fixture("compacted.jsonl"))
    assert pairs(transcript) == [
        ("user", "first question"),
        ("assistant", "Here is the answer, following [pat-001] and avoiding [mis-002]."),
    ]
    assert cited_ids(transcript.messages) == ["pat-001", "mis-002"]
    assert transcript.lines == 48


def test_parent_of_a_subagent():
    transcript = read_transcript(fixture("subagent_parent.jsonl"))
    roles = [m.role for m in transcript.messages]
    assert roles == ["user", "assistant", "user", "assistant"]
    assert transcript.messages[1].content == "[tool Agent: Say hello]"
    result = transcript.messages[2].content
    assert result.startswith("[tool result: [Subagent hand-back]") and result.endswith("]")
    assert transcript.messages[3].content == "The subagent said hello; I used [oth-005]."
    # the subagent's citation came back in a tool result, not in the parent's own words
    assert cited_ids(transcript.messages) == ["oth-005"]


def test_a_subagents_own_transcript_keeps_its_sidechain_records():
    transcript = read_transcript(fixture("subagent_agent.jsonl"))
    assert pairs(transcript) == [("user", "SUBAGENT please say hello"), ("assistant", "hello from the subagent [ctx-004]")]
    assert cited_ids(transcript.messages) == ["ctx-004"]


def test_sidechain_records_inside_a_main_transcript_are_skipped(tmp_path):
    main = fixture("tool_use_resumed.jsonl").read_bytes()
    side = fixture("subagent_agent.jsonl").read_bytes()
    combined = write(tmp_path / "session.jsonl", main + side, newline_at_end=False)
    assert pairs(read_transcript(combined)) == TOOL_USE_RESUMED
    # the same records, in a file that starts with a sidechain record, are a subagent's
    reversed_ = write(tmp_path / "other.jsonl", side + main, newline_at_end=False)
    assert ("assistant", "hello from the subagent [ctx-004]") in pairs(read_transcript(reversed_))


def test_broken_lines_are_counted_and_the_good_ones_kept():
    transcript = read_transcript(fixture("broken.jsonl"))
    assert transcript.broken_lines == 3  # a truncated record, binary junk, an empty line
    assert transcript.lines == 67
    assert pairs(transcript) == TOOL_USE_RESUMED


# -- resuming from a line ----------------------------------------------------------------


def test_reading_from_the_end_yields_nothing_new():
    for name in ("tool_use_resumed.jsonl", "broken.jsonl", "compacted.jsonl"):
        first = read_transcript(fixture(name))
        again = read_transcript(fixture(name), start_line=first.lines)
        assert (again.messages, again.lines, again.broken_lines) == ([], first.lines, 0)


def test_appended_lines_yield_only_the_new_messages(tmp_path):
    lines = fixture("tool_use_resumed.jsonl").read_bytes().split(b"\n")[:-1]
    path = tmp_path / "session.jsonl"
    write(path, *lines[:45])  # the session up to its second resume
    first = read_transcript(path)
    assert first.lines == 45 and pairs(first) == TOOL_USE_RESUMED[:6]
    with path.open("ab") as handle:
        handle.write(b"\n".join(lines[45:]) + b"\n")
    second = read_transcript(path, start_line=first.lines)
    assert second.lines == 64 and second.broken_lines == 0
    assert pairs(second) == TOOL_USE_RESUMED[6:]


def test_a_line_still_being_written_is_left_for_the_next_read(tmp_path):
    path = tmp_path / "session.jsonl"
    prompt, answer = user("a question"), assistant([{"type": "text", "text": "an answer [pat-007]"}])
    write(path, prompt, answer[:20], newline_at_end=False)
    first = read_transcript(path)
    assert (pairs(first), first.lines, first.broken_lines) == ([("user", "a question")], 1, 0)
    with path.open("ab") as handle:
        handle.write(answer[20:].encode() + b"\n")
    second = read_transcript(path, start_line=first.lines)
    assert pairs(second) == [("assistant", "an answer [pat-007]")] and second.lines == 2


def test_a_complete_last_line_without_newline_is_read(tmp_path):
    path = write(tmp_path / "t.jsonl", user("q"), assistant("a [mis-001]"), newline_at_end=False)
    transcript = read_transcript(path)
    assert transcript.lines == 2 and pairs(transcript)[-1] == ("assistant", "a [mis-001]")


def test_start_line_past_the_end_and_empty_files(tmp_path):
    transcript = read_transcript(fixture("interactive.jsonl"), start_line=1000)
    assert (transcript.messages, transcript.lines, transcript.broken_lines) == ([], 34, 0)
    empty = tmp_path / "empty.jsonl"
    empty.write_bytes(b"")
    assert read_transcript(empty) == Transcript(messages=[], lines=0, broken_lines=0)


def test_lines_before_start_are_not_counted_as_broken(tmp_path):
    path = write(tmp_path / "t.jsonl", b"\x00junk", user("q"), "{trunc", assistant("a"))
    assert read_transcript(path).broken_lines == 2
    later = read_transcript(path, start_line=2)
    assert (later.broken_lines, pairs(later)) == (1, [("assistant", "a")])


# -- hostile lines -----------------------------------------------------------------------


def test_huge_line_is_skipped_and_counted(tmp_path):
    huge = user("x" * 2_000_000)
    path = write(tmp_path / "t.jsonl", user("before"), huge, assistant("after"))
    transcript = read_transcript(path)
    assert transcript.lines == 3 and transcript.broken_lines == 1
    assert pairs(transcript) == [("user", "before"), ("assistant", "after")]
    roomy = read_transcript(path, max_line_bytes=3_000_000)
    assert roomy.broken_lines == 0 and len(roomy.messages[0].content) == len("before\n") + 2_000_000
    # a huge line without its newline at the end is still being written
    tail = write(tmp_path / "tail.jsonl", user("before"), huge[:1_500_000], newline_at_end=False)
    assert read_transcript(tail).lines == 1


def test_deeply_nested_and_odd_json_never_raise(tmp_path):
    nested = '{"type":"user","message":{"role":"user","content":' + "[" * 200_000 + "]" * 200_000 + "}}"
    path = write(
        tmp_path / "t.jsonl",
        user("kept"),
        nested,
        "[1, 2, 3]",
        '"a string"',
        "null",
        "   ",
        '{"type":"user","message":"not an object"}',
        '{"type":"assistant","message":{"role":"assistant","content":42}}',
        '{"type":"user","message":{"role":"user","content":[1, null, {"type":"text","text":"odd blocks"}]}}',
        '{"type":"some-future-record","data":{}}',
        b"\xff\xfe{\"type\":\"user\"}",
        assistant("kept too"),
    )
    transcript = read_transcript(path)
    assert transcript.lines == 12
    assert transcript.broken_lines == 8  # all but the two kept, the odd blocks and the unknown type
    assert pairs(transcript) == [("user", "kept\nodd blocks"), ("assistant", "kept too")]


def test_lone_surrogates_from_node_are_read_as_valid_text(tmp_path):
    # Node writes "\ud83d" when it cuts an emoji in half; msgspec alone would reject the line
    path = write(tmp_path / "t.jsonl", '{"type":"user","message":{"role":"user","content":"cut \\ud83d here"}}')
    transcript = read_transcript(path)
    assert transcript.broken_lines == 0
    [message] = transcript.messages
    assert message.content.startswith("cut ") and message.content.endswith(" here")
    message.content.encode("utf-8")  # valid UTF-8


def test_meta_thinking_errors_and_wrappers_are_not_conversation(tmp_path):
    path = write(
        tmp_path / "t.jsonl",
        user("<local-command-caveat>Caveat: ...</local-command-caveat>", isMeta=True),
        user("<command-name>/clear</command-name>\n<command-message>clear</command-message>"),
        user("<local-command-stdout>done</local-command-stdout>"),
        user("the real prompt"),
        assistant([{"type": "thinking", "thinking": "secret [pat-009]", "signature": "x"}, {"type": "text", "text": "visible"}]),
        API_ERROR_RECORD,
        assistant([{"type": "redacted_thinking", "data": "..."}]),
        json.dumps({"type": "system", "subtype": "stop_hook_summary", "content": "[pat-010]"}),
        json.dumps({"type": "summary", "summary": "old [pat-011]"}),
    )
    transcript = read_transcript(path)
    assert pairs(transcript) == [("user", "the real prompt"), ("assistant", "visible")]
    assert cited_ids(transcript.messages) == []
    assert transcript.broken_lines == 0


def test_tool_summaries_are_short(tmp_path):
    long_command = "echo " + "word " * 200
    path = write(
        tmp_path / "t.jsonl",
        assistant([{"type": "tool_use", "id": "t1", "name": "Bash", "input": {"command": long_command}},
                   {"type": "tool_use", "id": "t2", "name": "Read", "input": {"file_path": "/a/b.py"}},
                   {"type": "tool_use", "id": "t3", "name": "Mystery", "input": {"z": 1}}]),
        user([{"type": "tool_result", "tool_use_id": "t1", "content": "y" * 5000},
              {"type": "tool_result", "tool_use_id": "t2", "content": "no such file", "is_error": True},
              {"type": "tool_result", "tool_use_id": "t3", "content": [{"type": "image", "source": {}}]}]),
    )  # fmt: skip
    tool_uses, results = (m.content.split("\n") for m in read_transcript(path).messages)
    assert tool_uses[0].startswith("[tool Bash: echo word word") and len(tool_uses[0]) < 260
    assert tool_uses[1:] == ["[tool Read: /a/b.py]", '[tool Mystery: {"z": 1}]']
    assert results[0].startswith("[tool result: yyy") and "[4,760 chars cut]" in results[0] and len(results[0]) < 300
    assert results[1:] == ["[tool error: no such file]", "[tool result: [image]]"]


# -- paths that cannot be read ----------------------------------------------------------------


def test_directory_is_an_error(tmp_path):
    with pytest.raises(TranscriptError) as caught:
        read_transcript(tmp_path)
    assert isinstance(caught.value, PlaybookError)
    assert str(tmp_path) in str(caught.value) and "\n" not in str(caught.value)


def test_missing_path_is_an_error(tmp_path):
    missing = tmp_path / "nope" / "session.jsonl"
    with pytest.raises(TranscriptError, match="nope/session.jsonl"):
        read_transcript(missing)


def test_unreadable_path_is_an_error(tmp_path, monkeypatch):
    path = write(tmp_path / "t.jsonl", user("q"))
    if hasattr(os, "geteuid") and os.geteuid() != 0:
        path.chmod(0)  # a real permission error where permissions apply
    else:  # root reads everything: fail the open as the kernel would

        def refuse(*args: object, **kwargs: object) -> None:
            raise PermissionError(13, "Permission denied", str(path))

        monkeypatch.setattr("playbook.learner.lines.open", refuse, raising=False)
    try:
        with pytest.raises(TranscriptError, match=r"t\.jsonl: Permission denied"):
            read_transcript(path)
    finally:
        path.chmod(0o600)


# -- cited ids ---------------------------------------------------------------------------------


def test_cited_ids_dedup_in_order_and_only_from_the_assistant():
    messages = [
        Message(role="user", content="the playbook says [pat-999] and [mis-998]"),
        Message(role="assistant", content="I followed [mis-002], then [pat-001] and [mis-002] again."),
        Message(role="assistant", content="Also [pref-003][ctx-004], [oth-005] and legacy [kpt_001]."),
        Message(role="assistant", content="Listed: [pat-010, mis-011]; not ids: [PAT-001] [pat-] [foo-001] [pat-01a] [ctx-004"),
    ]
    assert cited_ids(messages) == ["mis-002", "pat-001", "pref-003", "ctx-004", "oth-005", "kpt_001", "pat-010", "mis-011"]
    assert cited_ids([]) == []


def test_message_structs_encode_as_json():
    transcript = read_transcript(fixture("interactive.jsonl"))
    assert json.loads(msgspec.json.encode(transcript)) == {
        "messages": [
            {"role": "user", "content": "hello interactive"},
            {"role": "assistant", "content": "Interactive hi [pat-001]"},
        ],
        "lines": 34,
        "broken_lines": 0,
        "requested": True,
        "own_commands": [],
    }


# -- sessions with nothing to learn ------------------------------------------------------


def test_a_session_of_only_the_plugins_own_commands_has_nothing_to_learn():
    # Real: `/event-sourced-playbook:show`, then `:why ctx-001` and `:remember ...` resumed in the same session.
    # Each is a command wrapper, then its text as a meta record, then the assistant's work on it.
    transcript = read_transcript(fixture("plugin_commands.jsonl"))
    assert transcript.messages and not transcript.requested
    assert transcript.own_commands == ["show", "why", "remember"]
    assert nothing_to_learn(transcript) == "only the playbook's own slash commands"


def test_a_preference_said_in_one_line_is_a_request(tmp_path):
    transcript = read_transcript(fixture("preference.jsonl"))  # real: "From now on use pathlib instead of os.path"
    assert pairs(transcript)[0] == ("user", "From now on use pathlib instead of os.path")
    assert nothing_to_learn(transcript) is None
    both = write(tmp_path / "both.jsonl", fixture("plugin_commands.jsonl").read_bytes().rstrip(b"\n"),
                 fixture("preference.jsonl").read_bytes().rstrip(b"\n"))
    assert nothing_to_learn(read_transcript(both)) is None
    for name in ("tool_use_resumed.jsonl", "interactive.jsonl", "compacted.jsonl", "subagent_parent.jsonl",
                 "subagent_agent.jsonl", "broken.jsonl"):
        assert nothing_to_learn(read_transcript(fixture(name))) is None, name


def test_a_request_before_the_start_line_still_counts_and_commands_of_others_are_requests(tmp_path):
    show = ("<command-message>event-sourced-playbook:show</command-message>\n"
            "<command-name>/event-sourced-playbook:show</command-name>")
    path = write(tmp_path / "t.jsonl", user("fix the parser"), assistant([{"type": "text", "text": "fixed"}]),
                 user(show), user([{"type": "text", "text": "the playbook ..."}], isMeta=True),
                 assistant([{"type": "text", "text": "Here it is."}]))
    later = read_transcript(path, start_line=2)
    assert later.requested and nothing_to_learn(later) is None
    for command in ("/review-pr", "/other-plugin:show", "/event-sourced-playbook:unknown"):
        other = write(tmp_path / "other.jsonl",
                      user(f"<command-name>{command}</command-name>\n<command-args>12</command-args>"),
                      assistant([{"type": "text", "text": "reviewed"}]))
        assert nothing_to_learn(read_transcript(other)) is None, command
    image = write(tmp_path / "image.jsonl", user([{"type": "image", "source": {}}]),
                  assistant([{"type": "text", "text": "a cat"}]))
    assert nothing_to_learn(read_transcript(image)) is None


def test_a_session_without_a_user_turn_has_no_request(tmp_path):
    path = write(tmp_path / "t.jsonl", user("<local-command-stdout>Compacted</local-command-stdout>"),
                 user([{"type": "tool_result", "tool_use_id": "t1", "content": "hi"}]),
                 assistant([{"type": "text", "text": "done"}]))
    transcript = read_transcript(path)
    assert transcript.messages and nothing_to_learn(transcript) == "no user request in the session"


def test_the_plugins_name_and_commands_are_those_it_ships():
    root = Path(__file__).resolve().parent.parent
    assert json.loads((root / ".claude-plugin" / "plugin.json").read_text())["name"] == PLUGIN
    assert {path.stem for path in (root / "commands").glob("*.md")} == PLUGIN_COMMANDS
