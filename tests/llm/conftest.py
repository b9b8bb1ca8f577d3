"""The loopback fake of the OpenAI-style and Gemini servers, for the remote backends' tests."""

from collections.abc import Iterator

import pytest

from tests.llm.test_remote_backends import FakeServer


@pytest.fixture
def server() -> Iterator[FakeServer]:
    fake = FakeServer()
    yield fake
    fake.close()
