"""Webhook signing (Standard Webhooks) and the retry schedule, as pure functions."""

from __future__ import annotations

import base64
import hashlib
import hmac
import random

import pytest

from handlers.agents.domain.webhook_signing import (
    BACKOFF_FACTOR,
    SECRET_BYTES,
    new_secret,
    nominal_delay,
    retry_delay,
    secret_key,
    sign,
    signature_headers,
)
from handlers.agents.settings import Settings


def _independent_signature(secret: str, message_id: str, timestamp: int, body: bytes) -> str:
    key = base64.b64decode(secret.removeprefix("whsec_"))
    signed = message_id.encode() + b"." + str(timestamp).encode() + b"." + body
    return "v1," + base64.b64encode(hmac.new(key, signed, hashlib.sha256).digest()).decode()


def test_the_reference_vector_of_the_standard_webhooks_specification() -> None:
    # standard-webhooks/standard-webhooks, the libraries' shared test vector
    secret = "whsec_MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw"
    body = b'{"test": 2432232314}'
    assert sign(secret, "msg_p5jXN8AQM9LWM0D4loKWxJek", 1614265330, body) == (
        "v1,g0hM9SsE+OTPJTGt/tmIKtSyZlE3uFJELVlNIOLJ1OE="
    )


def test_a_signature_is_hmac_sha256_of_id_timestamp_and_body_under_the_decoded_secret() -> None:
    secret = new_secret()
    body = '{"type":"agent_execution.completed","data":{"output":"é"}}'.encode()
    headers = signature_headers(secret, "msg_0123", 1767225600, body)

    assert headers == {
        "webhook-id": "msg_0123",
        "webhook-timestamp": "1767225600",
        "webhook-signature": _independent_signature(secret, "msg_0123", 1767225600, body),
    }
    # any change to what is signed changes the signature
    assert sign(secret, "msg_0124", 1767225600, body) != headers["webhook-signature"]
    assert sign(secret, "msg_0123", 1767225601, body) != headers["webhook-signature"]
    assert sign(secret, "msg_0123", 1767225600, body + b" ") != headers["webhook-signature"]
    assert sign(new_secret(), "msg_0123", 1767225600, body) != headers["webhook-signature"]


def test_secrets_are_whsec_and_the_base64_of_24_random_bytes() -> None:
    secrets = {new_secret() for _ in range(50)}
    assert len(secrets) == 50
    for secret in secrets:
        assert secret.startswith("whsec_")
        assert len(base64.b64decode(secret[6:], validate=True)) == SECRET_BYTES == 24
        assert secret_key(secret) == base64.b64decode(secret[6:])


@pytest.mark.parametrize("secret", ["MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw", "whsec_not base64!"])
def test_a_malformed_secret_is_refused(secret: str) -> None:
    with pytest.raises(ValueError):
        secret_key(secret)


def test_the_nominal_delays_grow_by_the_factor_up_to_the_cap() -> None:
    delays = [nominal_delay(failures, 5.0, 3600.0) for failures in range(1, 9)]
    assert delays == [5.0, 30.0, 180.0, 1080.0, 3600.0, 3600.0, 3600.0, 3600.0]
    assert BACKOFF_FACTOR == 6.0
    assert nominal_delay(0, 5.0, 3600.0) == 0.0
    assert nominal_delay(10_000, 5.0, 3600.0) == 3600.0  # no overflow


def test_each_delay_is_drawn_from_the_upper_half_of_its_nominal_delay() -> None:
    rng = random.Random(7)
    for failures in range(1, 12):
        nominal = nominal_delay(failures, 5.0, 43200.0)
        draws = [retry_delay(failures, 5.0, 43200.0, rng) for _ in range(200)]
        assert all(nominal / 2 <= draw <= nominal for draw in draws)
        assert max(draws) - min(draws) > nominal / 4  # spread, not one fixed value

    class Edges(random.Random):
        def __init__(self, value: float) -> None:
            super().__init__()
            self.value = value

        def random(self) -> float:
            return self.value

    assert retry_delay(2, 5.0, 3600.0, Edges(0.0)) == 15.0
    assert retry_delay(2, 5.0, 3600.0, Edges(1.0)) == 30.0


def test_the_default_schedule_retries_for_at_least_a_day_in_at_most_ten_attempts() -> None:
    settings = Settings.from_env({})
    base, cap = settings.webhook_retry_base_seconds, settings.webhook_retry_cap_seconds
    attempts = settings.webhook_max_attempts
    shortest = sum(nominal_delay(n, base, cap) / 2 for n in range(1, attempts))
    longest = sum(nominal_delay(n, base, cap) for n in range(1, attempts))

    assert (base, cap, attempts, settings.webhook_timeout_seconds) == (5.0, 43200.0, 10, 10.0)
    assert shortest >= 24 * 3600
    assert longest <= 50 * 3600
