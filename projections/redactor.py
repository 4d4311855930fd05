"""Scrubbing the texts of one input and saying, once and without the values, what was taken out."""

from __future__ import annotations

from typing import Any

from .scrub import find_secrets, rebuilt, redacted

# How the one line that says what was redacted names each kind.
KIND_NAMES: dict[str, str] = {
    "anthropic-api-key": "Anthropic API key", "google-api-key": "Google API key",
    "aws-access-key": "AWS access key ID", "aws-secret-key": "AWS secret key", "openai-api-key": "OpenAI API key",
    "github-token": "GitHub token", "gitlab-token": "GitLab token", "slack-token": "Slack token",
    "slack-webhook": "Slack webhook", "stripe-key": "Stripe key", "url-password": "password in a URL",
    "bearer-token": "bearer token", "npm-token": "npm token", "pypi-token": "PyPI token",
    "sendgrid-key": "SendGrid key", "twilio-key": "Twilio key", "mailchimp-key": "Mailchimp key",
    "discord-token": "Discord bot token", "telegram-token": "Telegram bot token",
    "square-secret": "Square OAuth secret", "artifactory-token": "Artifactory token",
    "azure-storage-key": "Azure storage key", "private-key": "private key", "jwt": "JWT",
    "secret-assignment": "value of a secret-named setting",
}


class Redactor:
    """Scrubs the texts of one input (a command's argument, a playbook.json) and keeps the kinds it redacted,
    so that what was taken out can be said once, without the values."""

    def __init__(self) -> None:
        self.kinds: list[str] = []

    def text(self, text: str) -> str:
        """`text` scrubbed, its redactions counted."""
        if not isinstance(text, str) or not text:
            return text
        findings = find_secrets(text)
        self.kinds.extend(finding.kind for finding in findings)
        return redacted(text, findings)

    def value(self, value: Any) -> Any:
        """`value` with every string inside it scrubbed and counted, as `scrub_value` does."""
        return rebuilt(value, self.text)

    def in_place(self, value: dict[Any, Any] | list[Any]) -> None:
        """Scrub and count every string inside `value` where it is, keys included: the caller's own dicts and
        lists then say what the log will (a tuple inside is replaced by a scrubbed copy). A dict or list met
        twice (shared) is scrubbed once."""
        stack: list[dict[Any, Any] | list[Any]] = [value]
        seen: set[int] = set()
        while stack:
            container = stack.pop()
            if id(container) in seen:
                continue
            seen.add(id(container))
            if isinstance(container, dict):
                keys = list(container)
                renamed = [self.text(key) if isinstance(key, str) else key for key in keys]
                if renamed != keys:
                    values = list(container.values())
                    container.clear()
                    container.update(zip(renamed, values))
                slots: list[Any] = list(container)
            else:
                slots = list(range(len(container)))
            for slot in slots:
                child = container[slot]
                if isinstance(child, (dict, list)):
                    stack.append(child)
                elif isinstance(child, (str, tuple)):
                    container[slot] = self.value(child)

    def said(self) -> str | None:
        """`redacted 2 secrets (GitHub token, npm token)`, or None when nothing was redacted."""
        if not self.kinds:
            return None
        count = len(self.kinds)
        names = ", ".join(dict.fromkeys(KIND_NAMES.get(kind, kind) for kind in self.kinds))
        return f"redacted {count} secret{'' if count == 1 else 's'} ({names})"
