"""Finding secrets in text and redacting them: `[REDACTED:aws-access-key]` keeps the kind, not the value.

The providers' formats come from detect-secrets' plugins (the patterns of a maintained scanner,
imported, not copied); the few it lacks (Anthropic and Google API keys, whole private key blocks,
test-mode Stripe keys, fine-grained GitHub tokens) and the rule for values assigned to names like
`*_KEY`, `*_TOKEN`, `*_SECRET` or `password` are added here. Scrubbing is a pure function of the
text: the same text always gives the same redactions, and a scrubbed text scrubs to itself.

It sits in `projections` so that every way text enters the log can use it: the learner, the
commands and the spec's functions above, and the taking in of a hand-edited or legacy playbook.json
(`projections.outside`) here. The detector belongs to no decision: `eventlog.decide` stays free of
it, so replaying or merging a log decides the same events whichever detector wrote it. Importers
load it only when there is a text to scrub: detect-secrets is kept off the SessionStart path.
"""

from __future__ import annotations

import re
from collections.abc import Iterator
from typing import Any

import msgspec
from detect_secrets.plugins.artifactory import ArtifactoryDetector
from detect_secrets.plugins.aws import AWSKeyDetector
from detect_secrets.plugins.azure_storage_key import AzureStorageKeyDetector
from detect_secrets.plugins.basic_auth import BasicAuthDetector
from detect_secrets.plugins.discord import DiscordBotTokenDetector
from detect_secrets.plugins.github_token import GitHubTokenDetector
from detect_secrets.plugins.gitlab_token import GitLabTokenDetector
from detect_secrets.plugins.high_entropy_strings import Base64HighEntropyString
from detect_secrets.plugins.jwt import JwtTokenDetector
from detect_secrets.plugins.mailchimp import MailchimpDetector
from detect_secrets.plugins.npm import NpmDetector
from detect_secrets.plugins.openai import OpenAIDetector
from detect_secrets.plugins.pypi_token import PypiTokenDetector
from detect_secrets.plugins.sendgrid import SendGridDetector
from detect_secrets.plugins.slack import SlackDetector
from detect_secrets.plugins.square_oauth import SquareOAuthDetector
from detect_secrets.plugins.stripe import StripeDetector
from detect_secrets.plugins.telegram_token import TelegramBotTokenDetector
from detect_secrets.plugins.twilio import TwilioKeyDetector

__all__ = ["Finding", "REDACTION", "find_secrets", "scrub", "scrub_value"]

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

# A whole private key block: the header, the body (base64, blank space, or the `\n` escapes of a
# JSON string) and the footer when it is there; a block cut short (a truncated tool output) is
# redacted to where its body ends.
_PRIVATE_KEY = re.compile(
    r"-----BEGIN[A-Z0-9 ]{0,30} PRIVATE KEY(?: BLOCK)?-----"
    r"(?:[A-Za-z0-9+/=:,\- \t\r\n]|\\[nrt])*"
    r"(?:-----END[A-Z0-9 ]{0,30} PRIVATE KEY(?: BLOCK)?-----)?"
    r"|PuTTY-User-Key-File-\d:[^\n]*(?:\n[A-Za-z0-9+/=:\- ]+)*"
)

# A value assigned to a name that says it is secret: `AWS_SECRET=...`, `"api_key": "..."`,
# `password: ...`, `--token ...`. The name may be quoted; the value may be quoted.
_ASSIGNED = re.compile(
    r"""(?ix)
    (?<![a-z0-9_.\-])(?P<name>[a-z0-9_.\-]{0,40}?(?:passw(?:or)?d|passwd|pwd|secret|token|api[_\-]?key|access[_\-]?key|private[_\-]?key
        |client[_\-]?secret|auth|credentials?|_key|key))
    (?P<nameq>\\?["']?)
    (?:\s*(?::=|=>|=|:)\s*|\s+(?=\\?["']))
    (?P<q>\\?["'`]?)
    (?P<value>[^\s"'`,;(){}\[\]<>\\]{6,512})
    """
)
_PASSWORD_NAME = re.compile(r"(?i)(?:passw(?:or)?d|passwd|pwd|secret)$")
_NOT_A_VALUE = re.compile(
    r"""(?ix)^(?:
        none|null|nil|true|false|undefined|required|optional|string|bytes|str|int|bool|self\..*|cls\..*
        |\$.*|%.*|\*+|x+|\.+|<.*|\{.*|os\.environ.*|process\.env.*|env\..*|getenv.*
        |(?:your|my|the|example|dummy|changeme|placeholder|redacted|secret|password|token)[a-z_\-]*
    )$"""
)
# An identifier or attribute path (`config.api_key`, `token_v2`): code, not a value. Random tokens
# have digits inside.
_IDENTIFIER = re.compile(r"[A-Za-z_]+\d{0,2}(?:\.[A-Za-z_]+\d{0,2})*")
_ENTROPY = Base64HighEntropyString(limit=3.0)
_MIN_ASSIGNED_ENTROPY = 3.0


def _assigned_secret(match: re.Match[str]) -> bool:
    """Whether the value assigned in `match` looks like a secret rather than code or prose."""
    value = match.group("value")
    if _NOT_A_VALUE.match(value) or _ALREADY.fullmatch(value):
        return False
    if not match.group("q") and _IDENTIFIER.fullmatch(value):
        return False
    name = match.group("name")
    if _PASSWORD_NAME.search(name):
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
        for match in regex.finditer(text):
            start, end = match.span(group)
            if start < end:
                yield Finding(kind, start, end)
    for match in _JWT.finditer(text):
        if match.group().count(".") >= 2 and JwtTokenDetector.is_formally_valid(match.group()):
            yield Finding("jwt", match.start(), match.end())
    position = 0
    while (assigned := _ASSIGNED.search(text, position)) is not None:
        if _assigned_secret(assigned):
            yield Finding("secret-assignment", assigned.start("value"), assigned.end("value"))
            position = assigned.end()
        else:
            # `Credentials: API_KEY=...`: a rejected value can be the name of the next assignment
            position = assigned.start("value")


def find_secrets(text: str) -> list[Finding]:
    """The secrets in `text`, in order, none overlapping (the earliest, then the longest, wins)."""
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
    findings = find_secrets(text)
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
    if isinstance(value, str):
        return scrub(value)
    if isinstance(value, dict):
        return {scrub_value(k) if isinstance(k, str) else k: scrub_value(v) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return type(value)(scrub_value(v) for v in value)
    return value
