"""What model calls cost: the one price table, dated, and the estimate it gives for recorded usage.

Prices are US dollars per million tokens, by model family (the first family name found in
the model's id wins: `claude-sonnet-5-5` is priced as `sonnet`). Cache writes are priced at
the 5-minute rate. A model of no known family has no estimate (None), never a guessed one.
When a backend reports what a call cost (`cost_usd` on the record), that figure is used
instead. To update: change `PRICES` and `PRICES_AS_OF` together.
"""

from __future__ import annotations

from typing import Final, NamedTuple

from eventlog.events import ModelCallRecorded


class Price(NamedTuple):
    """US dollars per million tokens."""

    input: float
    output: float
    cache_write: float
    cache_read: float


PRICES_AS_OF: Final = "2026-11-23"
"""The day the table below was checked against Anthropic's list prices."""

PRICES: Final[dict[str, Price]] = {
    "opus": Price(input=5.00, output=25.00, cache_write=6.25, cache_read=0.50),
    "sonnet": Price(input=3.00, output=15.00, cache_write=3.75, cache_read=0.30),
    "haiku": Price(input=1.00, output=5.00, cache_write=1.25, cache_read=0.10),
}


def price_of(model: str) -> Price | None:
    """The price of `model` by its family, or None when the table has no family it names."""
    lowered = model.lower()
    for family, price in PRICES.items():
        if family in lowered:
            return price
    return None


def estimate(model: str, input_tokens: int, output_tokens: int, cache_write: int = 0,
             cache_read: int = 0) -> float | None:
    """US dollars for these tokens of `model` at the table's prices; None for a model of unknown price."""
    price = price_of(model)
    if price is None:
        return None
    return (input_tokens * price.input + output_tokens * price.output + cache_write * price.cache_write
            + cache_read * price.cache_read) / 1_000_000


def cost_of(call: ModelCallRecorded) -> float | None:
    """What one recorded call cost: the backend's own figure when it gave one, else the table's estimate."""
    if call.cost_usd is not None:
        return call.cost_usd
    return estimate(call.model, call.input_tokens, call.output_tokens, call.cache_creation_input_tokens,
                    call.cache_read_input_tokens)


def total_tokens(call: ModelCallRecorded) -> int:
    """Every token a call counted: input, output, and cache writes and reads."""
    return call.input_tokens + call.output_tokens + call.cache_creation_input_tokens + call.cache_read_input_tokens
