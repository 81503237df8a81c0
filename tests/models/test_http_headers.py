"""The HTTP path's request headers: the session's own, the same on every request."""

from __future__ import annotations

from livemed import __version__
from livemed.models import Completion, Message
from tests.fakes.openai_server import Behavior, FakeOpenAIServer
from tests.models.conftest import MakeEngine

HELLO: list[Message] = [{"role": "user", "content": "Say hello."}]


async def test_every_request_sends_the_same_headers(
    make_engine: MakeEngine, server: FakeOpenAIServer, api_key: str
) -> None:
    engine, model = make_engine()
    server.script(Behavior(text="one"), Behavior(text="two"), Behavior(text="three"))
    for question in ("first", "second", "third"):
        out = await engine.generate(model, [{"role": "user", "content": question}])
        assert isinstance(out, Completion)
    sent = [request.headers for request in server.chat_requests]
    assert len(sent) == 3
    for headers in sent:
        assert headers["content-type"] == "application/json"
        assert headers["user-agent"] == f"livemed/{__version__}"
        assert headers["authorization"] == f"Bearer {api_key}"
    assert sent[0] == {**sent[1], "content-length": sent[0]["content-length"]}
    assert sent[1] == {**sent[2], "content-length": sent[1]["content-length"]}
    assert [request.body["messages"][0]["content"] for request in server.chat_requests if request.body] == [
        "first",
        "second",
        "third",
    ]
