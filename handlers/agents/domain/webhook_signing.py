"""Signing webhook deliveries (Standard Webhooks) and spacing their retries.

A subscription's secret is ``whsec_`` followed by the base64 of :data:`SECRET_BYTES` random
bytes; the HMAC key is those bytes (the base64-decoded part after the prefix). Each attempt
carries three headers:

* ``webhook-id``: the delivery's id (``msg_…``), the same on every retry of one event, so
  that receivers deduplicate by it;
* ``webhook-timestamp``: the attempt's time, in whole seconds since the Unix epoch;
* ``webhook-signature``: ``v1,`` and the base64 of HMAC-SHA256(key,
  ``<webhook-id>.<webhook-timestamp>.<body>``), the body being the exact bytes sent.

Retries back off exponentially with jitter (:func:`retry_delay`).
"""

from __future__ import annotations

import base64
import binascii
import hashlib
import hmac
import random
import secrets

__all__ = [
    "BACKOFF_FACTOR",
    "SECRET_BYTES",
    "SECRET_PREFIX",
    "new_secret",
    "nominal_delay",
    "retry_delay",
    "secret_key",
    "sign",
    "signature_headers",
]

SECRET_PREFIX = "whsec_"
SECRET_BYTES = 24
BACKOFF_FACTOR = 6.0
"""Each retry's nominal delay is this many times the previous one's (until the cap)."""


def new_secret() -> str:
    """A fresh signing secret: ``whsec_`` and the base64 of :data:`SECRET_BYTES` random bytes."""
    return SECRET_PREFIX + base64.b64encode(secrets.token_bytes(SECRET_BYTES)).decode("ascii")


def secret_key(secret: str) -> bytes:
    """The HMAC key of ``secret``: the base64-decoded part after ``whsec_``.

    Raises :class:`ValueError` when ``secret`` is not of that form."""
    if not secret.startswith(SECRET_PREFIX):
        raise ValueError("a webhook secret starts with whsec_")
    try:
        return base64.b64decode(secret[len(SECRET_PREFIX) :], validate=True)
    except binascii.Error:
        raise ValueError("a webhook secret is whsec_ and base64") from None


def sign(secret: str, message_id: str, timestamp: int, body: bytes) -> str:
    """The ``webhook-signature`` value of one attempt: ``v1,<base64 HMAC-SHA256>``."""
    signed = f"{message_id}.{timestamp}.".encode() + body
    digest = hmac.new(secret_key(secret), signed, hashlib.sha256).digest()
    return "v1," + base64.b64encode(digest).decode("ascii")


def signature_headers(secret: str, message_id: str, timestamp: int, body: bytes) -> dict[str, str]:
    """The three Standard Webhooks headers of one attempt."""
    return {
        "webhook-id": message_id,
        "webhook-timestamp": str(timestamp),
        "webhook-signature": sign(secret, message_id, timestamp, body),
    }


def nominal_delay(failures: int, base: float, cap: float) -> float:
    """The longest wait after the ``failures``-th failed attempt (1, 2, …): ``base`` *
    :data:`BACKOFF_FACTOR` ** (failures - 1), at most ``cap``."""
    if failures < 1:
        return 0.0
    exponent = min(failures - 1, 64)  # no float overflow for absurd counts
    return float(min(cap, base * BACKOFF_FACTOR**exponent))


def retry_delay(failures: int, base: float, cap: float, rng: random.Random | None = None) -> float:
    """Seconds to wait before the next attempt after ``failures`` failed ones.

    Jitter is drawn uniformly from the upper half of the nominal delay, [d/2, d]: deliveries
    that failed together (a receiver down) spread out instead of coming back at once, while the
    schedule keeps its span (the whole-range "full jitter" could retry at once every time and
    give up within minutes)."""
    delay = nominal_delay(failures, base, cap)
    draw = (rng or _RANDOM).random()
    return delay / 2 + draw * delay / 2


_RANDOM = random.SystemRandom()
