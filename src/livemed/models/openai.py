"""`openai/…`, `vllm/…`, `ollama/…`: any OpenAI-compatible chat endpoint, over aiohttp.

OpenAI, vLLM, SGLang, Ollama, llama.cpp server, TGI, LM Studio, OpenRouter and other vendors'
OpenAI-compatible endpoints all speak `POST /chat/completions`. Per model, `livemed.toml` sets the
base URL and the *name* of the environment variable that holds the key:

```toml
[models."openai/gpt-4o-mini"]
api_key_env = "OPENAI_API_KEY"            # the default for openai/…
[models."vllm/Qwen/Qwen2.5-7B-Instruct"]
base_url = "http://gpu-box:8000/v1"       # default http://localhost:8000/v1; key optional
```

`openai/…` models without a `base_url` in livemed.toml honour `$OPENAI_BASE_URL`, as the SDK does
(and `$OPENAI_ORG_ID` / `$OPENAI_PROJECT_ID` become the headers the SDK would send).

The engine owns retries, limits and timeouts. Errors become `TransientModelError` (429 with
Retry-After, 408/409, 5xx, timeouts, connection errors, malformed or truncated bodies) or
`FatalModelError` (other 4xx, a missing key); see `livemed.models.statuses`. Reply bodies are
read by `livemed.models.replies`. The key is read from the environment at call time and sent only to
the endpoint, in the Authorization header. A reply is data: it is stored exactly as it came, never
rewritten. The key is scrubbed (by exact match) from the text of errors, which is where an endpoint
echoes it; a reply that holds it is refused as a failure instead of being stored (see `secret_key`:
placeholders such as `EMPTY` and keys under 8 characters are not secrets and are never scrubbed).
Requests go straight over aiohttp (`livemed.models.http`: one session per model and event loop, a
body livemed builds itself, the bearer key): the official `openai` client's `post()` cost several
times the CPU per call and ~0.8 s of imports at start-up (see docs/benchmarks.md), and status codes
and error bodies are read the way it read them (`Error code: N - <body>` when a body has no message).
"""

from __future__ import annotations

import asyncio
import json
import os
import re
import time
from collections.abc import Mapping
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

import orjson

from livemed.config import Config, ModelConfig
from livemed.jsonl import decode_exact
from livemed.models.base import (
    Completion,
    FatalModelError,
    Message,
    NoTextError,
    NotSentError,
    Settings,
    TransientModelError,
)
from livemed.models.limits import estimate_tokens
from livemed.models.replies import parse_chat_completion
from livemed.models.statuses import classify, error_message, parse_retry_after, retry_after_from_body

__all__ = ["PRESETS", "OpenAICompatibleModel", "parse_retry_after", "response_format"]

PLACEHOLDER_KEY = "EMPTY"
# What local servers take for "no key": not secrets, so never scrubbed from anything.
PLACEHOLDER_KEYS = frozenset({PLACEHOLDER_KEY, "none", "sk-no-key-required", "ollama"})
MIN_SECRET_CHARS = 8
REDACTED = "[redacted]"
_SCHEMA_NAME = re.compile(r"[^A-Za-z0-9_-]")
_PLAIN_KEY = re.compile(r"[A-Za-z0-9_-]+")
BASE_URL_ENV = "OPENAI_BASE_URL"
# Read by the official SDK too: sent as OpenAI-Organization / OpenAI-Project when set.
_HEADER_ENV = {"OpenAI-Organization": "OPENAI_ORG_ID", "OpenAI-Project": "OPENAI_PROJECT_ID"}

if TYPE_CHECKING:
    from livemed.models.http import Transport


@dataclass(frozen=True)
class Preset:
    """Defaults of one provider prefix."""

    base_url: str
    api_key_env: str | None  # None: no key unless the model config names a variable
    json_schema: bool = True
    max_tokens_field: str = "max_tokens"


PRESETS: dict[str, Preset] = {
    "openai": Preset("https://api.openai.com/v1", "OPENAI_API_KEY", max_tokens_field="max_completion_tokens"),
    "vllm": Preset("http://localhost:8000/v1", None),
    "ollama": Preset("http://localhost:11434/v1", None),
}


class OpenAICompatibleModel:
    """One model on one OpenAI-compatible endpoint; satisfies the `Model` protocol."""

    def __init__(self, provider: str, name: str, settings: ModelConfig | None = None) -> None:
        preset = PRESETS[provider]
        self.provider = provider
        self.name = name
        self.config = settings or ModelConfig()
        env_url = os.environ.get(BASE_URL_ENV, "").strip() if provider == "openai" else ""
        # livemed.toml wins over $OPENAI_BASE_URL (as the SDK reads it), which wins over the preset.
        self.base_url_source = "config" if self.config.base_url else BASE_URL_ENV if env_url else "preset"
        configured = self.config.base_url
        urls = [configured] if isinstance(configured, str) else list(configured or [])
        if not urls:
            urls = [env_url or preset.base_url]
        # Several replicas behind one model id: requests are balanced (`Replicas`); the first one names
        # the endpoint (in the response-cache key and in messages), so adding a replica keeps the cache.
        self.base_urls = [url.rstrip("/") for url in urls]
        self.base_url = self.base_urls[0]
        self.api_key_env = self.config.api_key_env or preset.api_key_env
        json_schema = self.config.json_schema
        self._json_schema = preset.json_schema if json_schema is None else json_schema
        official = provider == "openai" and self.base_url == preset.base_url
        self._max_tokens_field = preset.max_tokens_field if official else "max_tokens"
        self._client: Replicas | None = None
        self._secret: str | None = None  # the key, when it is a secret (`secret_key`)
        self._secret_bytes: bytes | None = None  # the secret as it would stand in a body, when it is plain

    # ------------------------------------------------------------------ Model protocol

    @property
    def id(self) -> str:
        return f"{self.provider}/{self.name}"

    @property
    def endpoint(self) -> str:
        return self.base_url

    @property
    def supports_json_schema(self) -> bool:
        return self._json_schema

    @property
    def extra_body(self) -> dict[str, Any]:
        """Provider options sent with every request (part of the response-cache key)."""
        return dict(self.config.extra_body)

    async def generate(self, messages: list[Message], *, settings: Settings) -> Completion:
        from livemed.models.http import Truncated, Unreachable

        client = self._client
        if client is None or client.loop is not asyncio.get_running_loop():
            client = await self._client_for_loop()
        started = time.perf_counter()
        body = orjson.dumps(self.request_body(messages, settings))  # UTF-8, compact: the same JSON value
        replica = client.pick()
        url = self.base_urls[replica]
        try:
            status, headers, raw = await client.post(replica, body)
        except Truncated:
            raise TransientModelError(self._malformed(url)) from None
        except Unreachable as exc:
            client.mark_down(replica)
            cause = self.redact(str(exc))[:200]
            raise TransientModelError(f"{self.id}: cannot reach {url}: {cause}") from None
        if status >= 400:
            raise self._status_error(status, headers, raw, url)
        data = decode_exact(raw)  # orjson where it reads the reply as Python's json would
        if data is None:
            try:
                data = json.loads(raw)
            except ValueError:
                raise TransientModelError(self._malformed(url)) from None
        if self._may_echo_key(raw) and holds_text(data, self._secret or ""):
            raise self._echo_failure(data, url)
        return self.parse_response(data, time.perf_counter() - started, estimate_tokens(messages))

    async def aclose(self) -> None:
        """Close the HTTP connections (the engine's `aclose()` calls this)."""
        client, self._client = self._client, None
        if client is not None and client.loop is asyncio.get_running_loop():
            await client.close()

    # ------------------------------------------------------------------ requests

    def request_body(self, messages: list[Message], settings: Settings) -> dict[str, Any]:
        body: dict[str, Any] = {"model": self.name, "messages": messages}
        optional = {  # in the order OpenAI's own Python client writes them (max tokens before temperature)
            self._max_tokens_field: settings.max_tokens,
            "temperature": settings.temperature,
            "top_p": settings.top_p,
            "seed": settings.seed,
        }
        body.update({k: v for k, v in optional.items() if v is not None})
        if settings.stop:
            body["stop"] = list(settings.stop)
        if settings.n > 1:
            body["n"] = settings.n
        if settings.json_schema is not None and self.supports_json_schema:
            body["response_format"] = response_format(settings.json_schema)
        body.update(self.config.extra_body)
        return body

    def parse_response(self, data: object, latency_s: float, prompt_estimate: int = 0) -> Completion:
        """The completion in a response body, as it came (see `livemed.models.replies`)."""
        return parse_chat_completion(
            data,
            model_id=self.id,
            endpoint=self.base_url,
            latency_s=latency_s,
            prompt_estimate=prompt_estimate,
            redact=self.redact,
        )

    def _echo_failure(self, data: object, url: str) -> TransientModelError | FatalModelError:
        """Why a reply that holds the API key is not stored: an error reply stays its own error (its
        text scrubbed); any other reply is refused, never rewritten."""
        try:
            self.parse_response(data, 0.0)
        except (TransientModelError, FatalModelError) as exc:
            return exc
        except NoTextError:
            pass
        return FatalModelError(
            f"{self.id}: reply from {url} holds the API key (does the endpoint echo requests?); "
            "it is not stored"
        )

    # ------------------------------------------------------------------ client and key

    async def _client_for_loop(self) -> Replicas:
        from livemed.models.http import Transport

        loop = asyncio.get_running_loop()
        if self._client is None or self._client.loop is not loop:
            key = self._api_key()
            self._secret = secret = secret_key(key)
            plain = secret is not None and _PLAIN_KEY.fullmatch(secret) is not None
            self._secret_bytes = secret.encode() if secret and plain else None
            headers = {"Authorization": f"Bearer {key}"}
            headers.update({h: v for h, env in _HEADER_ENV.items() if (v := os.environ.get(env, "").strip())})
            transports = [
                await Transport(
                    f"{base}/chat/completions",
                    headers,
                    concurrency=self.config.max_concurrency,
                    timeout_s=self.config.timeout_s,
                ).start()
                for base in self.base_urls
            ]
            self._client = Replicas(transports)
        return self._client

    def _api_key(self) -> str:
        if self.api_key_env is None:
            return PLACEHOLDER_KEY
        value = os.environ.get(self.api_key_env, "").strip()
        if not value:
            raise NotSentError(
                f"{self.id}: environment variable {self.api_key_env} is not set; set it to the API key, "
                "or name another variable with api_key_env for this model in livemed.toml"
            )
        return value

    def redact(self, text: str) -> str:
        """Error text with the secret key replaced wherever an endpoint echoed it (exact match)."""
        secret = self._secret
        if secret and secret in text:
            return text.replace(secret, REDACTED)
        return text

    def _may_echo_key(self, raw: bytes) -> bool:
        """Whether the secret key may be in a reply body: not when a key of plain characters (which
        JSON writes only as themselves or as \\u escapes) is absent from a body without \\u escapes."""
        if self._secret is None:
            return False
        plain = self._secret_bytes  # None when the key is not of plain characters
        return plain is None or plain in raw or b"\\u" in raw

    def _status_error(
        self, status: int, headers: Mapping[str, str], raw: bytes, url: str | None = None
    ) -> Exception:
        where = f"{self.id}: HTTP {status} from {url or self.base_url}"
        text = raw.decode("utf-8", errors="replace").strip()
        try:
            body: object = json.loads(text)
        except ValueError:
            body = text or None
        retry_after = parse_retry_after(headers)
        if retry_after is None and status == 429:
            retry_after = retry_after_from_body(body)
        hint = f"check the key in ${self.api_key_env}" if self.api_key_env else ""
        message = error_message(body, f"Error code: {status} - {body}", self.redact)
        return classify(status, where, message, retry_after=retry_after, key_hint=hint)

    def _malformed(self, url: str | None = None) -> str:
        return f"{self.id}: malformed/truncated response body from {url or self.base_url} (not complete JSON)"


REPLICA_DOWN_S = 5.0  # a replica that could not be reached gets no request for this long (if others can)


class Replicas:
    """One HTTP transport per base URL of a model; each request goes to the replica with the fewest
    requests in flight (ties in turn), skipping for `REPLICA_DOWN_S` one that could not be reached."""

    def __init__(self, transports: list[Transport]) -> None:
        self.transports = transports
        self.loop = transports[0].loop
        self.in_flight = [0] * len(transports)
        self.sent = [0] * len(transports)
        self.down_until = [0.0] * len(transports)
        self._turn = 0

    def pick(self) -> int:
        n = len(self.transports)
        if n == 1:  # one replica: it, whether or not it was marked down (as below, with no other up)
            return 0
        now = time.monotonic()
        up = [i for i in range(n) if self.down_until[i] <= now] or list(range(n))
        turn, self._turn = self._turn, (self._turn + 1) % n
        return min(up, key=lambda i: (self.in_flight[i], (i - turn) % n))

    def mark_down(self, replica: int) -> None:
        self.down_until[replica] = time.monotonic() + REPLICA_DOWN_S

    async def post(self, replica: int, body: bytes) -> tuple[int, Mapping[str, str], bytes]:
        self.in_flight[replica] += 1
        self.sent[replica] += 1
        try:
            return await self.transports[replica].post(body)
        finally:
            self.in_flight[replica] -= 1

    def is_closed(self) -> bool:
        return all(transport.is_closed() for transport in self.transports)

    async def close(self) -> None:
        for transport in self.transports:
            await transport.close()


def secret_key(key: str) -> str | None:
    """`key` when it is a secret to keep out of messages and the store; None for the well-known
    placeholders and for keys under `MIN_SECRET_CHARS` characters, which are not secrets (scrubbing
    `none` or `1` would rewrite ordinary text)."""
    if len(key) < MIN_SECRET_CHARS or key in PLACEHOLDER_KEYS:
        return None
    return key


def holds_text(data: object, needle: str) -> bool:
    """Whether a string of a JSON value (an object's keys included) contains `needle` (never "")."""
    if not needle:
        return False
    stack = [data]
    while stack:
        value = stack.pop()
        if isinstance(value, str):
            if needle in value:
                return True
        elif isinstance(value, dict):
            stack.extend(value.keys())
            stack.extend(value.values())
        elif isinstance(value, list):
            stack.extend(value)
    return False


def response_format(json_schema: dict[str, Any]) -> dict[str, Any]:
    """`response_format` for a JSON schema given as `{"name": …, "schema": …}` or as a bare schema."""
    if "schema" in json_schema and isinstance(json_schema["schema"], dict):
        name, schema = str(json_schema.get("name") or "output"), json_schema["schema"]
    else:
        name, schema = str(json_schema.get("title") or "output"), json_schema
    safe = _SCHEMA_NAME.sub("_", name)[:64] or "output"
    return {"type": "json_schema", "json_schema": {"name": safe, "schema": schema, "strict": False}}


def openai_model(name: str, *, config: Config | None = None, **_: Any) -> OpenAICompatibleModel:
    """`openai/NAME`: api.openai.com, or any OpenAI-compatible `base_url`; key from $OPENAI_API_KEY."""
    return OpenAICompatibleModel("openai", name, (config or Config()).model_settings(f"openai/{name}"))


def vllm_model(name: str, *, config: Config | None = None, **_: Any) -> OpenAICompatibleModel:
    """`vllm/NAME`: a vLLM (or SGLang, TGI, llama.cpp…) server, default http://localhost:8000/v1."""
    return OpenAICompatibleModel("vllm", name, (config or Config()).model_settings(f"vllm/{name}"))


def ollama_model(name: str, *, config: Config | None = None, **_: Any) -> OpenAICompatibleModel:
    """`ollama/NAME`: a local Ollama server, default http://localhost:11434/v1."""
    return OpenAICompatibleModel("ollama", name, (config or Config()).model_settings(f"ollama/{name}"))
