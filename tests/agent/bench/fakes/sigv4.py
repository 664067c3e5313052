"""AWS Signature Version 4 checked on the server's side, written here from AWS's description of it (IAM user guide,
"Create a signed AWS API request": the canonical request, the string to sign, the signing key), not with botocore,
so a test of the client's signature does not check botocore against itself."""

from __future__ import annotations

import hashlib
import hmac
import re
from typing import NamedTuple
from urllib.parse import parse_qsl, quote, urlsplit

from tests.agent.bench.fakes.openai_fake import Received

_AUTH = re.compile(r"^AWS4-HMAC-SHA256 Credential=(?P<key>[^/]+)/(?P<date>\d{8})/(?P<region>[^/]+)/(?P<service>[^/]+)"
                   r"/aws4_request, SignedHeaders=(?P<signed>[a-z0-9;-]+), Signature=(?P<signature>[0-9a-f]{64})$")


class Signed(NamedTuple):
    access_key: str
    region: str
    service: str
    signed_headers: tuple[str, ...]


def _hmac(key: bytes, text: str) -> bytes:
    return hmac.new(key, text.encode(), hashlib.sha256).digest()


def verify(request: Received, secret_key: str) -> Signed:
    """What signed ``request``, once its signature is recomputed with ``secret_key`` and found equal.

    Raises:
        AssertionError: no SigV4 authorization, a body that is not the one signed, or a signature that differs.
    """
    headers = {k.lower(): v for k, v in request.headers.items()}
    found = _AUTH.match(headers.get("authorization", ""))
    assert found, f"no SigV4 authorization header: {headers.get('authorization')!r}"
    payload = hashlib.sha256(request.body).hexdigest()
    assert headers.get("x-amz-content-sha256", payload) == payload, "the body is not the one the signature covers"
    signed = found["signed"].split(";")
    assert "host" in signed and "x-amz-date" in signed, signed
    parts = urlsplit(request.path_qs)
    query = "&".join(f"{quote(k, safe='-_.~')}={quote(v, safe='-_.~')}" for k, v in sorted(parse_qsl(parts.query)))
    canonical = "\n".join([request.method, quote(parts.path or "/", safe="/-_.~"), query,
                           "".join(f"{h}:{' '.join(headers[h].split())}\n" for h in signed), ";".join(signed),
                           payload])
    scope = f"{found['date']}/{found['region']}/{found['service']}/aws4_request"
    to_sign = "\n".join(["AWS4-HMAC-SHA256", headers["x-amz-date"], scope,
                         hashlib.sha256(canonical.encode()).hexdigest()])
    key = _hmac(f"AWS4{secret_key}".encode(), found["date"])
    for part in (found["region"], found["service"], "aws4_request"):
        key = _hmac(key, part)
    expected = hmac.new(key, to_sign.encode(), hashlib.sha256).hexdigest()
    assert hmac.compare_digest(expected, found["signature"]), "the signature does not match the request"
    return Signed(found["key"], found["region"], found["service"], tuple(signed))
