"""The detect-secrets detectors the scrubber reads its patterns from, loaded without the rest of detect-secrets.

`import detect_secrets` runs the package's `__init__`, which loads its whole scanner: every plugin, its
filters, and `requests` with urllib3 for the plugins' online verification, 0.15 s of CPU in all. The
scrubber needs only some plugins' class attributes (their patterns) and the entropy formula, and calls no
verification. So the package is entered without its `__init__` (the package module is made from its spec
and run only if anything asks it for a name), and the plugin modules are given a stand-in for `requests`
that imports it if a verification ever runs: `playbook add` and every process that scrubs start 0.1 s
sooner, and the learner, which talks through `requests`, imports it as it would have.
"""

from __future__ import annotations

import importlib.util
import sys
from types import ModuleType
from typing import Any


def _package_without_init(name: str) -> None:
    """Put package `name` in sys.modules with its path set and its `__init__` not yet run: it runs at the first
    name asked of the package itself (`from detect_secrets import SecretsCollection` still works)."""
    if name in sys.modules:
        return
    spec = importlib.util.find_spec(name)
    if spec is None or spec.loader is None or spec.submodule_search_locations is None:
        return  # not installed, or not a package: the imports below say so as they would have
    package = importlib.util.module_from_spec(spec)
    loader = spec.loader

    def run_init(attribute: str) -> Any:
        del package.__dict__["__getattr__"]
        loader.exec_module(package)
        return getattr(package, attribute)

    package.__dict__["__getattr__"] = run_init
    sys.modules[name] = package


class _ImportedOnUse(ModuleType):
    """Stands for a module in the globals of the modules imported meanwhile: the real module is imported at the
    first name asked of it. (`importlib.util.LazyLoader` would not do: Python 3.11's `import` statement reads
    `__spec__` of a module already imported, which makes a lazy module load at once.)"""

    def __getattr__(self, attribute: str) -> Any:
        return getattr(importlib.import_module(self.__name__), attribute)


_package_without_init("detect_secrets")
_requests_later = "requests" not in sys.modules
if _requests_later:
    sys.modules["requests"] = _ImportedOnUse("requests")

from detect_secrets.plugins.artifactory import ArtifactoryDetector  # noqa: E402
from detect_secrets.plugins.aws import AWSKeyDetector  # noqa: E402
from detect_secrets.plugins.azure_storage_key import AzureStorageKeyDetector  # noqa: E402
from detect_secrets.plugins.basic_auth import BasicAuthDetector  # noqa: E402
from detect_secrets.plugins.discord import DiscordBotTokenDetector  # noqa: E402
from detect_secrets.plugins.github_token import GitHubTokenDetector  # noqa: E402
from detect_secrets.plugins.gitlab_token import GitLabTokenDetector  # noqa: E402
from detect_secrets.plugins.high_entropy_strings import Base64HighEntropyString  # noqa: E402
from detect_secrets.plugins.jwt import JwtTokenDetector  # noqa: E402
from detect_secrets.plugins.mailchimp import MailchimpDetector  # noqa: E402
from detect_secrets.plugins.npm import NpmDetector  # noqa: E402
from detect_secrets.plugins.openai import OpenAIDetector  # noqa: E402
from detect_secrets.plugins.pypi_token import PypiTokenDetector  # noqa: E402
from detect_secrets.plugins.sendgrid import SendGridDetector  # noqa: E402
from detect_secrets.plugins.slack import SlackDetector  # noqa: E402
from detect_secrets.plugins.square_oauth import SquareOAuthDetector  # noqa: E402
from detect_secrets.plugins.stripe import StripeDetector  # noqa: E402
from detect_secrets.plugins.telegram_token import TelegramBotTokenDetector  # noqa: E402
from detect_secrets.plugins.twilio import TwilioKeyDetector  # noqa: E402

if _requests_later:  # only those modules hold the stand-in; an `import requests` from now on imports requests
    del sys.modules["requests"]

__all__ = ["ArtifactoryDetector", "AWSKeyDetector", "AzureStorageKeyDetector", "BasicAuthDetector",
           "DiscordBotTokenDetector", "GitHubTokenDetector", "GitLabTokenDetector", "Base64HighEntropyString",
           "JwtTokenDetector", "MailchimpDetector", "NpmDetector", "OpenAIDetector", "PypiTokenDetector",
           "SendGridDetector", "SlackDetector", "SquareOAuthDetector", "StripeDetector", "TelegramBotTokenDetector",
           "TwilioKeyDetector"]
