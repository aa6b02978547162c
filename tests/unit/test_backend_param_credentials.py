"""A `backend` flow parameter that carries credentials is refused, with a line that names what carries
them (never the value) and says where credentials belong (the environment)."""

from __future__ import annotations

import pytest

from flows.backend_url import credential_parts, credentials_refusal, public_backend_url

SECRET = "tml-S3CRET-value-42"


@pytest.mark.parametrize("url, part", [
    (f"https://alice:{SECRET}@svc.example:8443/v1", "userinfo"),
    (f"https://{SECRET}@svc.example/v1", "userinfo"),  # a key as the user name alone
    (f"https://svc.example/v1?token={SECRET}", "query parameter 'token'"),
    (f"https://svc.example/v1?region=eu&api_key={SECRET}", "query parameter 'api_key'"),
    (f"https://svc.example/v1?X-Amz-Signature={SECRET}", "query parameter 'X-Amz-Signature'"),
    (f"https://svc.example/v1#access_token={SECRET}", "fragment parameter 'access_token'"),
    (f"https://svc.example/v1?{SECRET}", "a query value"),  # a bare value: flagged, never shown
])
def test_credentials_are_found_and_never_echoed(url, part):
    found = credential_parts(url)
    assert any(entry.startswith(part) for entry in found), found
    refusal = credentials_refusal(url)
    assert refusal is not None and SECRET not in refusal and "S3CRET" not in refusal
    assert "TINKER_API_KEY" in refusal and "environment" in refusal
    assert f"backend={public_backend_url(url)}" in refusal  # the URL to pass instead, credential-free


@pytest.mark.parametrize("url", ["local", "http://127.0.0.1:8000", "https://svc.example:8443/v1/",
                                 "https://svc.example/v1?region=eu-west-1"])
def test_a_url_without_credentials_is_accepted(url):
    assert credential_parts(url) == []
    assert credentials_refusal(url) is None


def test_the_cli_form_of_a_url_passes_the_flow_check():
    """What `python -m flows.run` passes as the parameter (credentials stripped) is never refused."""
    given = f"https://alice:{SECRET}@svc.example:8443/v1?token={SECRET}#frag"
    assert credentials_refusal(given) is not None
    assert credentials_refusal(public_backend_url(given)) is None
