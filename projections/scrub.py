"""Finding secrets in text and redacting them: `[REDACTED:aws-access-key]` keeps the kind, not the value.

The providers' formats come from detect-secrets' plugins (the patterns of a maintained scanner,
imported, not copied); the few it lacks (Anthropic and Google API keys, whole private key blocks,
test-mode Stripe keys, fine-grained GitHub tokens, npm tokens outside an .npmrc, passwords in URLs of
any scheme, an AWS secret key said without its name) and the rule for values assigned to names like
`*_KEY`, `*_TOKEN`, `*_SECRET` or `password` are added here. Scrubbing is a pure function of the
text: the same text always gives the same redactions, and a scrubbed text scrubs to itself.

It sits in `projections` so that every way text enters the log can use it: the learner, the
commands and the spec's functions above, and the taking in of a hand-edited or legacy playbook.json
(`projections.outside`) here. The detector belongs to no decision: `eventlog.decide` stays free of
it, so replaying or merging a log decides the same events whichever detector wrote it. Importers
load it only when there is a text to scrub: detect-secrets is kept off the SessionStart path.
"""

from __future__ import annotations

import functools
import re
from collections.abc import Callable, Iterator
from typing import Any

import msgspec
from .secret_detectors import (AWSKeyDetector, ArtifactoryDetector, AzureStorageKeyDetector, Base64HighEntropyString,
                               BasicAuthDetector, DiscordBotTokenDetector, GitHubTokenDetector, GitLabTokenDetector,
                               JwtTokenDetector, MailchimpDetector, NpmDetector, OpenAIDetector, PypiTokenDetector,
                               SendGridDetector, SlackDetector, SquareOAuthDetector, StripeDetector,
                               TelegramBotTokenDetector, TwilioKeyDetector)

from .secret_runs import matches

__all__ = ["Finding", "REDACTION", "find_secrets", "rebuilt", "redacted", "scrub", "scrub_value"]

REDACTION = "[REDACTED:{kind}]"
# A redaction already in the text is never taken for a secret (scrubbing is idempotent).
_ALREADY = re.compile(r"\[REDACTED:[a-z0-9-]+\]")


class Finding(msgspec.Struct, frozen=True):
    """One secret in a text: its kind and where it is (`text[start:end]`)."""

    kind: str
    start: int
    end: int


# (kind, pattern, group): the secret is `match.group(group)`. Order matters only for overlaps,
# where the earliest and then the longest match wins.
_RULES: list[tuple[str, re.Pattern[str], int]] = [
    ("anthropic-api-key", re.compile(r"sk-ant-[a-z]{2,8}\d{2}-[A-Za-z0-9_\-]{20,}"), 0),
    ("google-api-key", re.compile(r"AIza[0-9A-Za-z_\-]{35}"), 0),
    ("aws-access-key", AWSKeyDetector.denylist[0], 0),
    ("aws-secret-key", re.compile(AWSKeyDetector.denylist[1].pattern, re.IGNORECASE), 1),
    # detect-secrets wants the secret key quoted; shell exports and credentials files do not quote it
    ("aws-secret-key", re.compile(r"(?i)aws[a-z0-9_\-]{0,20}?(?:secret|key)[a-z0-9_\-]{0,20}\\?[\"']?\s*[=:]\s*\\?[\"']?"
                                  r"([A-Za-z0-9/+]{40})(?![A-Za-z0-9/+])"), 1),
    ("openai-api-key", OpenAIDetector.denylist[0], 0),
    ("openai-api-key", re.compile(r"sk-(?:proj|svcacct|admin)-[A-Za-z0-9_\-]{32,}"), 0),
    ("github-token", GitHubTokenDetector.denylist[0], 0),
    ("github-token", re.compile(r"github_pat_[A-Za-z0-9_]{22,}"), 0),
    *(("gitlab-token", regex, 0) for regex in GitLabTokenDetector.denylist),
    ("slack-token", SlackDetector.denylist[0], 0),
    ("slack-webhook", SlackDetector.denylist[1], 0),
    ("stripe-key", StripeDetector.denylist[0], 0),
    ("stripe-key", re.compile(r"(?:sk|rk)_(?:live|test)_[0-9a-zA-Z]{16,}"), 0),
    ("url-password", BasicAuthDetector.denylist[0], 1),
    ("bearer-token", re.compile(r"(?i)\bbearer\s+(?=[A-Za-z0-9_\-.=+/]*\d)([A-Za-z0-9_\-.=+/]{16,})"), 1),
    ("npm-token", NpmDetector.denylist[0], 0),
    # detect-secrets finds an npm token only in an .npmrc line; a granular token (npm_ and 36 letters and
    # digits) is as recognisable on its own, in prose or a command
    ("npm-token", re.compile(r"(?<![A-Za-z0-9_])npm_[A-Za-z0-9]{36}(?![A-Za-z0-9_])"), 0),
    *(("pypi-token", regex, 0) for regex in PypiTokenDetector.denylist),
    ("sendgrid-key", SendGridDetector.denylist[0], 0),
    *(("twilio-key", regex, 0) for regex in TwilioKeyDetector.denylist),
    ("mailchimp-key", MailchimpDetector.denylist[0], 0),
    ("discord-token", DiscordBotTokenDetector.denylist[0], 0),
    ("telegram-token", TelegramBotTokenDetector.denylist[0], 0),
    ("square-secret", SquareOAuthDetector.denylist[0], 0),
    *(("artifactory-token", regex, 0) for regex in ArtifactoryDetector.denylist),
    ("azure-storage-key", AzureStorageKeyDetector.denylist[0], 0),
]

# detect-secrets' own pattern ends lazily (it validates the parts afterwards), which would leave the
# signature behind; the candidates are validated by its `is_formally_valid` all the same.
_JWT = re.compile(r"eyJ[A-Za-z0-9_\-=]+\.[A-Za-z0-9_\-=]+\.[A-Za-z0-9_\-+/=]*")
_RUNS = {OpenAIDetector.denylist[0]: ("sk-", re.compile(r"[A-Za-z0-9_\-]*")),  # `secret_runs.matches`' start, run
         NpmDetector.denylist[0]: ("//", re.compile(r"[^\n]*")), _JWT: ("eyJ", re.compile(r"[A-Za-z0-9_\-=]*"))}

# A whole private key block: the header, the body (base64, blank space, or the `\n` escapes of a
# JSON string) and the footer when it is there; a block cut short (a truncated tool output) is
# redacted to where its body ends.
_PRIVATE_KEY = re.compile(
    r"-----BEGIN[A-Z0-9 ]{0,30} PRIVATE KEY(?: BLOCK)?-----"
    r"(?:[A-Za-z0-9+/=:,\- \t\r\n]|\\[nrt])*"
    r"(?:-----END[A-Z0-9 ]{0,30} PRIVATE KEY(?: BLOCK)?-----)?"
    r"|PuTTY-User-Key-File-\d:[^\n]*(?:\n[A-Za-z0-9+/=:\- ]+)*"
)

# A password in a URL of any scheme (`postgresql://u:p4ss!@h`, `redis://:pw@h`): detect-secrets' own
# pattern wants a user name and stops at `!`, `$`, `&`, `*`, `+` and the like, which passwords hold.
_URL_PASSWORD = re.compile(
    r"(?i)(?<![a-z0-9+.\-])[a-z][a-z0-9+.\-]{1,30}://[^\s:/?#@\[\]\"'`<>\\]*:([^\s/@\"'`<>\\]+)@(?=[a-z0-9\[])(?!sha\d+:)"
)

# An AWS secret key said without a name (`the key pair AKIA... / wJalr...`): 40 characters of base64,
# counted only beside an access key ID or the words aws or secret, and only when it looks random: both
# cases (a hex digest has one), and lower-case runs too short for the words of an identifier
# (`AmazonEC2ContainerRegistryPowerUser...` averages five letters a run, random base64 under two).
_AWS_SECRET_SHAPE = re.compile(r"(?<![A-Za-z0-9/+=])[A-Za-z0-9/+]{40}(?![A-Za-z0-9/+=])")
_AWS_NEAR = re.compile(r"(?i:aws|secret)|(?<![A-Z0-9])A[KS]IA[0-9A-Z]{16}")
_AWS_WINDOW = 100
_MIN_AWS_SECRET_ENTROPY = 4.0
_LOWER_RUN = re.compile(r"[a-z]+")
_MAX_WORDLIKE_RUN = 4.0

# A value assigned to a name that says it is secret: `AWS_SECRET=...`, `"api_key": "..."`,
# `password: ...`, `--token ...`. The name may be quoted; the value may be quoted, and a value closed by
# its quote is taken whole, punctuation included (`APP_SECRET="f.?ub(Z=|O#_G<"`).
_ASSIGNED = re.compile(
    r"""(?ix)
    (?<![a-z0-9_.\-])(?P<name>[a-z0-9_.\-]{0,40}?(?:passw(?:or)?d|passwd|pwd|secret|token|api[_\-]?key|access[_\-]?key|private[_\-]?key
        |client[_\-]?secret|auth|credentials?|_key|key))
    (?P<nameq>\\?["']?)
    (?P<sep>\s*(?::=|=>|=|:)\s*|\s+(?=\\?["']))
    (?:
        "(?P<q1>[^"\r\n]{6,512})"|'(?P<q2>[^'\r\n]{6,512})'|`(?P<q3>[^`\r\n]{6,512})`
      | \\"(?P<q4>[^"\\\r\n]{6,512})\\"|\\'(?P<q5>[^'\\\r\n]{6,512})\\'
      | (?P<openq>\\?["'`]?)(?P<value>[^\s"'`,;(){}\[\]<>\\]{6,512})
    )
    """
)
_QUOTED = ("q1", "q2", "q3", "q4", "q5")
_PASSWORD_NAME = re.compile(r"(?i)(?:passw(?:or)?d|passwd|pwd|secret)$")
_NOT_A_VALUE = re.compile(
    r"""(?ix)^(?:
        none|null|nil|true|false|undefined|required|optional|string|bytes|str|int|bool|self\..*|cls\..*
        |\*+|x+|\.+|os\.environ.*|process\.env.*|env\..*|getenv.*
        # a reference or a template, not a literal: $VAR, $HOME/.pw, ${VAR:-x}, $(cmd), %(name)s, %VAR%, {{ var }}, <pw>
        |\$(?-i:[A-Z_][A-Z0-9_]*|[a-z_][a-z0-9_]*|[A-Za-z][a-z]+(?:[A-Z][a-z]+)*[0-9]*)(?:[/.:@\-][\w./:@\-]*)?
        |\$\{[^}]*\}[\w./:@\-]*|\$\(.*|%\(?\w*\)?[sdrif]|%\w+%|\{\{.*\}\}|\{%.*%\}|\{[\w.\-]*\}[\w./:@\-]*|<[\w .\-]*>
        # a placeholder word in one case (my_password, YOUR_API_KEY, ExampleToken); a random value mixes cases
        |(?-i:(?:your|my|the|example|dummy|changeme|placeholder|redacted|secret|password|token)[a-z_\-]*
            |(?:YOUR|MY|THE|EXAMPLE|DUMMY|CHANGEME|PLACEHOLDER|REDACTED|SECRET|PASSWORD|TOKEN)[A-Z_\-]*
            |(?:Your|My|The|Example|Dummy|Changeme|Placeholder|Redacted|Secret|Password|Token)(?:[_\-]?[A-Z][a-z]+)*)
    )$"""
)
# An identifier or attribute path (`config.api_key`, `token_v2`): code, not a value. Random tokens
# have digits inside.
_IDENTIFIER = re.compile(r"[A-Za-z_]+\d{0,2}(?:\.[A-Za-z_]+\d{0,2})*")
_ENTROPY = Base64HighEntropyString(limit=3.0)
_MIN_ASSIGNED_ENTROPY = 3.0


# Where a shell or an env file sets a variable: `export db_password=...`, or an upper-case name set with
# a bare `=` (`DB_PASSWORD=...`, `-e DB_PASSWORD=...`), which code formatted as code never writes.
_EXPORTED = re.compile(r"(?:^|[\s;&|(])export\s+$")
# A quoted text that names a place, not a secret: a path or a URL.
_A_PLACE = re.compile(r"(?:(?:~|\.{1,2})?/|[a-z][a-z0-9+.\-]*://)", re.IGNORECASE)


def _quoted(match: re.Match[str]) -> str | None:
    """The group of `match` holding a value closed by its quote (`"..."`, or `\\"...\\"` inside a JSON string)."""
    return next((group for group in _QUOTED if match.group(group) is not None), None)


def _assigned_span(match: re.Match[str]) -> tuple[int, int]:
    return match.span(_quoted(match) or "value")


def _set_by_a_shell(match: re.Match[str], text: str) -> bool:
    """Whether `match` is a variable set in a shell or an env file rather than an assignment in code."""
    if match.group("sep") != "=" or match.group("nameq"):
        return False
    start = match.start("name")
    return match.group("name").isupper() or _EXPORTED.search(text, max(0, start - 40), start) is not None


def _assigned_secret(match: re.Match[str], text: str) -> bool:
    """Whether the value assigned in `match` looks like a secret rather than code or prose."""
    group = _quoted(match)
    quoted = group is not None
    value = match.group(group or "value")
    if _NOT_A_VALUE.match(value) or _ALREADY.search(value):
        return False
    if quoted and (any(c.isspace() for c in value) or _A_PLACE.match(value)):
        return False  # a sentence, a path or a URL in quotes: a message or a setting, not a secret
    name = match.group("name")
    password = _PASSWORD_NAME.search(name) is not None
    if not quoted and not match.group("openq") and _IDENTIFIER.fullmatch(value):
        # Code names a variable here (`password=password`), but a shell's value is a literal: a password of
        # letters alone (`export DB_PASSWORD=hunterhunter`) counts there, a snake_case or dotted name does not.
        if not (password and _set_by_a_shell(match, text) and value.isalnum()):
            return False
    if password:
        # Passwords are often short and plain: any quoted or unquoted literal of 8+ characters that
        # is not code counts.
        return len(value) >= 8
    # Keys and tokens are random: long, mixed letters and digits, high entropy.
    if len(value) < 16 or not re.search(r"\d", value) or not re.search(r"[A-Za-z]", value):
        return False
    return _ENTROPY.calculate_shannon_entropy(value) >= _MIN_ASSIGNED_ENTROPY


def _candidates(text: str) -> Iterator[Finding]:
    for match in _PRIVATE_KEY.finditer(text):
        yield Finding("private-key", match.start(), match.end())
    for kind, regex, group in _RULES:
        for match in matches(regex, text, *_RUNS.get(regex, (None, None))):
            start, end = match.span(group)
            if start < end:
                yield Finding(kind, start, end)
    for match in matches(_JWT, text, *_RUNS[_JWT]):
        if match.group().count(".") >= 2 and JwtTokenDetector.is_formally_valid(match.group()):
            yield Finding("jwt", match.start(), match.end())
    for match in _URL_PASSWORD.finditer(text):
        password = match.group(1)
        if not _NOT_A_VALUE.match(password) and not _ALREADY.search(password):
            yield Finding("url-password", match.start(1), match.end(1))
    for match in _AWS_SECRET_SHAPE.finditer(text):
        if _aws_secret(match, text):
            yield Finding("aws-secret-key", match.start(), match.end())
    position = 0
    while (assigned := _ASSIGNED.search(text, position)) is not None:
        start, end = _assigned_span(assigned)
        if _assigned_secret(assigned, text):
            yield Finding("secret-assignment", start, end)
            position = assigned.end()
        else:
            # `Credentials: API_KEY=...`: a rejected value can be the name of the next assignment
            position = start


def _aws_secret(match: re.Match[str], text: str) -> bool:
    """Whether the 40 characters of `match` are an AWS secret key said without its name."""
    key = match.group()
    runs = _LOWER_RUN.findall(key)
    if not runs or not re.search(r"[A-Z]", key) or sum(map(len, runs)) / len(runs) >= _MAX_WORDLIKE_RUN:
        return False
    if _ENTROPY.calculate_shannon_entropy(key) < _MIN_AWS_SECRET_ENTROPY:
        return False
    before = _AWS_NEAR.search(text, max(0, match.start() - _AWS_WINDOW), match.start())
    return before is not None or _AWS_NEAR.search(text, match.end(), match.end() + _AWS_WINDOW) is not None


def find_secrets(text: str) -> list[Finding]:
    """The secrets in `text`, in order, none overlapping (the earliest, then the longest, wins)."""
    if len(text) <= _REMEMBERED_LENGTH:
        return list(_remembered(text))
    return _found(text)


_REMEMBERED_LENGTH = 4096
"""Texts up to this long (key points, names, settings) are scanned once a process: a save scrubs the whole
playbook again, and its texts are the same from one save to the next."""


@functools.lru_cache(maxsize=8192)
def _remembered(text: str) -> tuple[Finding, ...]:
    return tuple(_found(text))


def _found(text: str) -> list[Finding]:
    found = sorted(_candidates(text), key=lambda f: (f.start, -f.end))
    kept: list[Finding] = []
    for finding in found:
        if kept and finding.start < kept[-1].end:
            if finding.end > kept[-1].end:  # overlapping: one redaction covers both
                kept[-1] = Finding(kept[-1].kind, kept[-1].start, finding.end)
            continue
        kept.append(finding)
    return [f for f in kept if not _ALREADY.fullmatch(text[f.start:f.end])]


def scrub(text: str) -> str:
    """`text` with each secret replaced by `[REDACTED:<kind>]`; text without secrets is returned as it is."""
    if not isinstance(text, str) or not text:
        return text
    return redacted(text, find_secrets(text))


def redacted(text: str, findings: list[Finding]) -> str:
    if not findings:
        return text
    parts: list[str] = []
    position = 0
    for finding in findings:
        parts.append(text[position:finding.start])
        parts.append(REDACTION.format(kind=finding.kind))
        position = finding.end
    parts.append(text[position:])
    return "".join(parts)


def scrub_value(value: Any) -> Any:
    """`value` with every string inside it scrubbed (dicts, lists and tuples are rebuilt, not changed)."""
    return rebuilt(value, scrub)


def rebuilt(value: Any, text: Callable[[str], str]) -> Any:
    """`value` with `text` applied to every string in it, keys included; dicts, lists and tuples are rebuilt.

    Without recursion: a playbook.json written by hand or by a hostile repository can nest deeper than
    the interpreter's stack, and what it holds is recorded all the same (as a skipped entry)."""

    def leaf(item: Any) -> Any:
        return text(item) if isinstance(item, str) else item

    def items(container: Any) -> Iterator[tuple[Any, Any]]:
        if isinstance(container, dict):
            return ((leaf(key), child) for key, child in container.items())
        return ((None, child) for child in container)

    if not isinstance(value, (dict, list, tuple)):
        return leaf(value)
    # each frame: a container, its items not yet visited, its parts rebuilt so far, its key in its parent
    stack: list[tuple[Any, Iterator[tuple[Any, Any]], list[tuple[Any, Any]], Any]] = [(value, items(value), [], None)]
    while True:
        container, pending, parts, key = stack[-1]
        for child_key, child in pending:
            if isinstance(child, (dict, list, tuple)):
                stack.append((child, items(child), [], child_key))
                break
            parts.append((child_key, leaf(child)))
        else:
            stack.pop()
            built: Any = (dict(parts) if isinstance(container, dict)
                          else (list if isinstance(container, list) else tuple)(part for _, part in parts))
            if not stack:
                return built
            stack[-1][2].append((key, built))
