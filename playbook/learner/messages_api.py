"""One request to the Messages API (`POST /v1/messages`): the reply's JSON, or the failure as the learner records it.

Over `requests` (which detect-secrets brings already): its CA bundle, proxy settings and timeouts. The learner
asks two questions a cycle and reads only the reply's text blocks and usage, so a model SDK (a second of start-up
and a dozen packages for the plugin to install) is not needed. The call runs in a daemon thread: a cycle cut by
its deadline returns at once, and the process never waits at its exit for a call nobody reads.
"""

from __future__ import annotations

import asyncio
import json
import math
import os
import threading
from typing import Any

import requests
import urllib3

API_VERSION = "2023-06-01"
DEFAULT_BASE_URL = "https://api.anthropic.com"
MAX_REPLY_BYTES = 8 << 20
"""A reply of MAX_TOKENS tokens is tens of kilobytes: an endpoint sending more is not read past this."""
MAX_RETRY_AFTER = 60.0
"""The longest `retry-after` honoured: a proxy asking for hours (or `inf`) would hold the cycle to its deadline."""

# What the Anthropic SDKs call an error of each status, so that the records read the same whichever wrote them.
_STATUS_NAMES = {400: "BadRequestError", 401: "AuthenticationError", 402: "PaymentRequiredError",
                 403: "PermissionDeniedError", 404: "NotFoundError", 408: "RequestTimeoutError", 409: "ConflictError",
                 413: "ContentTooLargeError", 422: "UnprocessableEntityError", 429: "RateLimitError",
                 503: "ServiceUnavailableError", 504: "GatewayTimeoutError", 529: "OverloadedError"}


class CallFailed(Exception):
    """The request got no reply to read: `name` says how (an SDK's error name), `status` is the HTTP status if
    one came back, `retry_after` the seconds the server asked for, `retryable` whether asking again may help."""

    def __init__(self, name: str, status: int | None = None, retry_after: float | None = None,
                 retryable: bool = False) -> None:
        super().__init__(f"{name} (HTTP {status})" if status else name)
        self.name, self.status, self.retry_after, self.retryable = name, status, retry_after, retryable


class ReplyUnreadable(Exception):
    """A 200 whose body is not a JSON object (not JSON, a list, nested deeper than a parser goes)."""


def headers(api_key: str | None, auth_token: str | None) -> dict[str, str]:
    """The request's headers: the key as `x-api-key`, or a token (an OAuth login's) as a bearer."""
    sent = {"anthropic-version": API_VERSION, "content-type": "application/json", "accept": "application/json"}
    # A key read from a file (`export KEY=$(cat key)`) can end in a newline, which no header may hold.
    if api_key and api_key.strip():
        sent["x-api-key"] = api_key.strip()
    elif auth_token and auth_token.strip():
        sent["authorization"] = f"Bearer {auth_token.strip()}"
    return sent


def _retry_after(response: requests.Response) -> float | None:
    try:
        value = float(response.headers["retry-after"])
    except (KeyError, ValueError):
        return None
    return min(max(value, 0.0), MAX_RETRY_AFTER) if math.isfinite(value) else None


def _post(url: str, sent: dict[str, str], body: bytes, timeout: float) -> dict[str, Any]:
    """The blocking request; raises CallFailed or ReplyUnreadable."""
    # requests reads REQUESTS_CA_BUNDLE and CURL_CA_BUNDLE itself; a machine that names its CA bundle the way
    # OpenSSL and httpx read it (SSL_CERT_FILE) is honoured too.
    bundle = os.environ.get("SSL_CERT_FILE") if not os.environ.get("REQUESTS_CA_BUNDLE") else None
    try:
        # No redirect is followed: requests would carry x-api-key to wherever a 3xx points.
        with requests.post(url, data=body, headers=sent, timeout=timeout, verify=bundle or True,
                           stream=True, allow_redirects=False) as response:
            content = response.raw.read(MAX_REPLY_BYTES + 1, decode_content=True)
    except (requests.exceptions.InvalidHeader, UnicodeError):
        # A credential no header can carry (a control or non-Latin-1 character); the error would quote it.
        raise CallFailed("InvalidHeaderError") from None
    except (requests.Timeout, urllib3.exceptions.TimeoutError) as exc:  # the latter while the body is read
        raise CallFailed("APITimeoutError", retryable=True) from exc
    except (requests.RequestException, urllib3.exceptions.HTTPError) as exc:
        raise CallFailed("APIConnectionError", retryable=True) from exc
    if not 200 <= response.status_code < 300:
        status = response.status_code
        name = _STATUS_NAMES.get(status) or ("InternalServerError" if status >= 500 else "APIStatusError")
        raise CallFailed(name, status, _retry_after(response), status in (408, 409, 429) or status >= 500)
    if len(content) > MAX_REPLY_BYTES:
        raise ReplyUnreadable(f"a reply of more than {MAX_REPLY_BYTES >> 20} MiB")
    try:
        reply = json.loads(content)
    except (ValueError, RecursionError) as exc:
        raise ReplyUnreadable(type(exc).__name__) from exc
    if not isinstance(reply, dict):
        raise ReplyUnreadable(f"a JSON {type(reply).__name__}, not an object")
    return reply


async def create(base_url: str | None, sent: dict[str, str], payload: dict[str, Any],
                 timeout: float) -> dict[str, Any]:
    """The reply to one `POST {base_url}/v1/messages` of `payload`. Raises CallFailed or ReplyUnreadable;
    cancelled, it returns at once and the request is left to end on its own."""
    url = (base_url or DEFAULT_BASE_URL).rstrip("/") + "/v1/messages"
    body = json.dumps(payload, ensure_ascii=False).encode("utf-8")
    loop = asyncio.get_running_loop()
    answer: asyncio.Future[dict[str, Any]] = loop.create_future()

    def settle(result: dict[str, Any] | None, error: BaseException | None) -> None:
        if answer.done():
            return  # cancelled meanwhile
        if error is not None:
            answer.set_exception(error)
        else:
            answer.set_result(result or {})

    def run() -> None:
        try:
            result, error = _post(url, sent, body, timeout), None
        except BaseException as exc:  # handed to the awaiting coroutine, whatever it is
            result, error = None, exc
        try:
            loop.call_soon_threadsafe(settle, result, error)
        except RuntimeError:
            pass  # the loop is closed: nobody waits for this reply any more

    threading.Thread(target=run, name="messages-api", daemon=True).start()
    try:
        # requests times each socket wait, not the whole reply: a server that trickles is cut here.
        return await asyncio.wait_for(answer, timeout)
    except asyncio.TimeoutError:
        raise CallFailed("APITimeoutError", retryable=True) from None
