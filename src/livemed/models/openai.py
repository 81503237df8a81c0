"""`openai/…`, `vllm/…`, `ollama/…`: any OpenAI-compatible chat endpoint through the official client.

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
(the client itself also reads `$OPENAI_ORG_ID` and `$OPENAI_PROJECT_ID`).

The client's own retries are off (`max_retries=0`): the engine owns retries, limits and timeouts.
Errors become `TransientModelError` (429 with Retry-After, 408/409, 5xx, timeouts, connection
errors, malformed or truncated bodies) or `FatalModelError` (other 4xx, a missing key); see
`livemed.models.statuses`. Reply bodies are read by `livemed.models.replies`. The key is read from the
environment at call time, sent only to the endpoint, and scrubbed from every message and raw body.
Requests go through the client's documented `post()` (its auth, error mapping and HTTP stack) with
a body livemed builds itself, and over aiohttp when available: this costs about a third of the CPU
of `chat.completions.create`, which matters at hundreds of calls per second on a small machine.
"""

from __future__ import annotations

import asyncio
import inspect
import json
import os
import re
import time
from collections.abc import AsyncGenerator
from dataclasses import dataclass
from typing import Any

import openai

from livemed.config import Config, ModelConfig
from livemed.models.base import Completion, FatalModelError, Message, Settings, TransientModelError
from livemed.models.limits import estimate_tokens
from livemed.models.replies import parse_chat_completion
from livemed.models.statuses import classify, error_message, parse_retry_after, retry_after_from_body

__all__ = ["PRESETS", "OpenAICompatibleModel", "parse_retry_after", "response_format"]

PLACEHOLDER_KEY = "EMPTY"
REDACTED = "[redacted]"
_SCHEMA_NAME = re.compile(r"[^A-Za-z0-9_-]")
_POST_TAKES_CONTENT = "content" in inspect.signature(openai.AsyncOpenAI.post).parameters
_JSON: Any = {"headers": {"Content-Type": "application/json"}}
# What aiohttp and httpx raise when a body ends before its Content-Length or final chunk.
_TRUNCATED_BODY = re.compile(
    r"ClientPayloadError|ContentLengthError|TransferEncodingError|IncompleteRead|"
    r"complete message body|not enough data|payload is not completed",
    re.IGNORECASE,
)
BASE_URL_ENV = "OPENAI_BASE_URL"


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
        self.base_url = (self.config.base_url or env_url or preset.base_url).rstrip("/")
        self.api_key_env = self.config.api_key_env or preset.api_key_env
        json_schema = self.config.json_schema
        self._json_schema = preset.json_schema if json_schema is None else json_schema
        official = provider == "openai" and self.base_url == preset.base_url
        self._max_tokens_field = preset.max_tokens_field if official else "max_tokens"
        self._client: openai.AsyncOpenAI | None = None
        self._client_loop: asyncio.AbstractEventLoop | None = None
        self._closer: AsyncGenerator[None, None] | None = None
        self._key: str | None = None

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
        client = await self._client_for_loop()
        started = time.perf_counter()
        body = self.request_body(messages, settings)
        try:
            if _POST_TAKES_CONTENT:  # pre-serialised: the client would deep-copy and re-encode a dict
                data = await client.post(
                    "/chat/completions", cast_to=object, content=json.dumps(body).encode(), options=_JSON
                )
            else:
                data = await client.post("/chat/completions", cast_to=object, body=body)
        except openai.APIStatusError as exc:
            raise self._status_error(exc) from None
        except openai.APIConnectionError as exc:  # includes APITimeoutError
            raise TransientModelError(self._network_message(exc)) from None
        except (openai.APIResponseValidationError, ValueError):
            raise TransientModelError(self._malformed()) from None
        return self.parse_response(data, time.perf_counter() - started, estimate_tokens(messages))

    async def aclose(self) -> None:
        """Close the HTTP connections (the engine's `aclose()` calls this)."""
        closer, self._closer, self._client = self._closer, None, None
        if closer is not None and self._client_loop is asyncio.get_running_loop():
            await closer.aclose()

    # ------------------------------------------------------------------ requests

    def request_body(self, messages: list[Message], settings: Settings) -> dict[str, Any]:
        body: dict[str, Any] = {"model": self.name, "messages": messages}
        optional = {
            "temperature": settings.temperature,
            "top_p": settings.top_p,
            "seed": settings.seed,
            self._max_tokens_field: settings.max_tokens,
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
        """The completion in a response body (see `livemed.models.replies`), key scrubbed from it."""
        raw = self._redact_raw(data) if isinstance(data, dict) else data
        return parse_chat_completion(
            raw,
            model_id=self.id,
            endpoint=self.base_url,
            latency_s=latency_s,
            prompt_estimate=prompt_estimate,
            redact=self.redact,
        )

    # ------------------------------------------------------------------ client and key

    async def _client_for_loop(self) -> openai.AsyncOpenAI:
        loop = asyncio.get_running_loop()
        if self._client is None or self._client_loop is not loop:
            self._key = self._api_key()
            client = openai.AsyncOpenAI(
                api_key=self._key,
                base_url=self.base_url,
                max_retries=0,
                timeout=self.config.timeout_s,
                http_client=_http_client(self.config.max_concurrency),
            )
            self._client, self._client_loop = client, loop
            # The loop closes suspended async generators when it shuts down (asyncio.run does), so
            # a caller that never calls aclose() still leaves no open HTTP session behind.
            self._closer = _close_at_shutdown(client)
            await anext(self._closer)
        return self._client

    def _api_key(self) -> str:
        if self.api_key_env is None:
            return PLACEHOLDER_KEY
        value = os.environ.get(self.api_key_env, "").strip()
        if not value:
            raise FatalModelError(
                f"{self.id}: environment variable {self.api_key_env} is not set; it must hold the API key "
                "(or name another variable with api_key_env for this model in livemed.toml)",
                model_wide=True,
            )
        return value

    def redact(self, text: str) -> str:
        """`text` with the API key replaced, wherever an endpoint might have echoed it."""
        key = self._key
        if key and key != PLACEHOLDER_KEY and key in text:
            return text.replace(key, REDACTED)
        return text

    def _redact_raw(self, data: dict[str, Any]) -> dict[str, Any]:
        key = self._key
        if not key or key == PLACEHOLDER_KEY:
            return data
        dumped = json.dumps(data)
        if key not in dumped:
            return data
        redacted: dict[str, Any] = json.loads(dumped.replace(key, REDACTED))
        return redacted

    def _status_error(self, exc: openai.APIStatusError) -> Exception:
        status = exc.status_code
        where = f"{self.id}: HTTP {status} from {self.base_url}"
        body = exc.body
        retry_after = parse_retry_after(exc.response.headers)
        if retry_after is None and status == 429:
            retry_after = retry_after_from_body(body)
        hint = f"check the key in ${self.api_key_env}" if self.api_key_env else ""
        message = error_message(body, exc.message, self.redact)
        return classify(status, where, message, retry_after=retry_after, key_hint=hint)

    def _malformed(self) -> str:
        return f"{self.id}: malformed/truncated response body from {self.base_url} (not complete JSON)"

    def _network_message(self, exc: openai.APIConnectionError) -> str:
        """Timeouts and connection errors; transports blur the two, so look at the root cause."""
        root: BaseException = exc
        for _ in range(10):  # a bounded walk down the cause chain
            following = root.__cause__ or root.__context__
            if following is None:
                break
            root = following
            if _TRUNCATED_BODY.search(f"{type(root).__name__} {root}"):
                return self._malformed()
            if isinstance(root, OSError) and not isinstance(root, TimeoutError):
                cause = self.redact(str(root) or type(root).__name__)[:200]
                return f"{self.id}: cannot reach {self.base_url}: {cause}"
        if isinstance(exc, openai.APITimeoutError):
            return f"{self.id}: no answer from {self.base_url} in time"
        return f"{self.id}: cannot reach {self.base_url}: {self.redact(str(root))[:200]}"


def response_format(json_schema: dict[str, Any]) -> dict[str, Any]:
    """`response_format` for a JSON schema given as `{"name": …, "schema": …}` or as a bare schema."""
    if "schema" in json_schema and isinstance(json_schema["schema"], dict):
        name, schema = str(json_schema.get("name") or "output"), json_schema["schema"]
    else:
        name, schema = str(json_schema.get("title") or "output"), json_schema
    safe = _SCHEMA_NAME.sub("_", name)[:64] or "output"
    return {"type": "json_schema", "json_schema": {"name": safe, "schema": schema, "strict": False}}


async def _close_at_shutdown(client: openai.AsyncOpenAI) -> AsyncGenerator[None, None]:
    try:
        yield
    finally:
        await client.close()


def _http_client(concurrency: int) -> Any:
    """The client's aiohttp transport when aiohttp is installed (much less CPU per call), else None.

    Its pool keeps one connection alive per allowed concurrent call (the SDK's default keeps 100, so a
    model allowed 512 calls at once would open and close connections all the time)."""
    factory = getattr(openai, "DefaultAioHttpClient", None)
    if factory is None:
        return None
    defaults = getattr(openai, "DEFAULT_CONNECTION_LIMITS", None)
    kwargs: dict[str, Any] = {}
    if defaults is not None:
        connections = max(defaults.max_connections or 0, concurrency)
        kwargs["limits"] = type(defaults)(
            max_connections=connections,
            max_keepalive_connections=max(defaults.max_keepalive_connections or 0, concurrency),
            keepalive_expiry=defaults.keepalive_expiry,
        )
    try:
        return factory(**kwargs)
    except RuntimeError:  # the `aiohttp` extra is missing
        return None


def openai_model(name: str, *, config: Config | None = None, **_: Any) -> OpenAICompatibleModel:
    """`openai/NAME`: api.openai.com, or any OpenAI-compatible `base_url`; key from $OPENAI_API_KEY."""
    return OpenAICompatibleModel("openai", name, (config or Config()).model_settings(f"openai/{name}"))


def vllm_model(name: str, *, config: Config | None = None, **_: Any) -> OpenAICompatibleModel:
    """`vllm/NAME`: a vLLM (or SGLang, TGI, llama.cpp…) server, default http://localhost:8000/v1."""
    return OpenAICompatibleModel("vllm", name, (config or Config()).model_settings(f"vllm/{name}"))


def ollama_model(name: str, *, config: Config | None = None, **_: Any) -> OpenAICompatibleModel:
    """`ollama/NAME`: a local Ollama server, default http://localhost:11434/v1."""
    return OpenAICompatibleModel("ollama", name, (config or Config()).model_settings(f"ollama/{name}"))
