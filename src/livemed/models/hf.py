"""`hf/PATH`: a local Hugging Face checkpoint run in-process with transformers `generate`, batched.

`hf/./runs/judge/grpo` (a folder from `livemed judges train`), `hf//abs/path` or a hub id already in the
local cache (`hf/meta-llama/Llama-3.1-8B-Instruct`; transformers honours `HF_HUB_OFFLINE`). Needs
`pip install 'livemed[train]'`; torch and transformers are imported on the first call, not before.

- Batching: the calls the engine lets in flight (`max_concurrency` in livemed.toml, default 16 for hf/) are
  gathered into one left-padded `generate` per group of identical sampling settings, run in a worker
  thread so the event loop keeps going.
- Sampling: temperature 0 or unset is greedy; otherwise sampled with `top_p`, seeded with
  `settings.seed` (0 when unset) before each batch. `max_tokens` defaults to `DEFAULT_MAX_TOKENS`.
- Replies read like an OpenAI-compatible server's (`replies.strip_reasoning`): a leading
  `<think>…</think>` goes to `Completion.reasoning`; no text left is a `NoTextError`
  ("truncated" when the token limit was hit, else "no_text"); `finish_reason` is "length" or "stop".
- The endpoint (part of the response-cache key) is `hf:<resolved path>#<fingerprint>`, the fingerprint
  hashing the names, sizes and modification times of the checkpoint's files, so a retrained checkpoint
  at the same path never gets the old checkpoint's cached replies.
- A checkpoint that cannot be loaded is a model-wide `FatalModelError` (the engine stops calling it).
"""

from __future__ import annotations

import asyncio
import hashlib
import threading
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from livemed.config import Config, ModelConfig
from livemed.errors import MissingDependencyError
from livemed.models.base import Completion, FatalModelError, Message, NoTextError, NoTextReason, Settings
from livemed.models.replies import strip_reasoning

DEFAULT_MAX_TOKENS = 512


def fingerprint(path: Path) -> str:
    """A short hash of a checkpoint folder's file names, sizes and modification times."""
    digest = hashlib.sha256()
    for file in sorted(p for p in path.rglob("*") if p.is_file()):
        stat = file.stat()
        digest.update(f"{file.relative_to(path)}\0{stat.st_size}\0{stat.st_mtime_ns}\n".encode())
    return digest.hexdigest()[:12]


@dataclass
class _Request:
    messages: list[Message]
    settings: Settings
    future: asyncio.Future[Completion]


@dataclass
class _Loaded:
    model: Any
    tokenizer: Any
    device: str


def _batch_key(settings: Settings) -> tuple[Any, ...]:
    return (settings.temperature or 0.0, settings.max_tokens, settings.top_p, settings.stop, settings.seed)


@dataclass
class HFModel:
    """One local checkpoint; satisfies the `Model` protocol."""

    name: str
    config: ModelConfig = field(default_factory=ModelConfig)
    _loaded: _Loaded | None = field(default=None, init=False, repr=False)
    _load_lock: threading.Lock = field(default_factory=threading.Lock, init=False, repr=False)
    _pending: list[_Request] = field(default_factory=list, init=False, repr=False)
    _worker: asyncio.Task[None] | None = field(default=None, init=False, repr=False)
    _endpoint: str | None = field(default=None, init=False, repr=False)

    @property
    def id(self) -> str:
        return f"hf/{self.name}"

    @property
    def local_path(self) -> Path | None:
        path = Path(self.name).expanduser()
        return path.resolve() if path.is_dir() else None

    @property
    def endpoint(self) -> str:
        if self._endpoint is None:
            path = self.local_path
            self._endpoint = f"hf:{path}#{fingerprint(path)}" if path else f"hf:{self.name}"
        return self._endpoint

    @property
    def supports_json_schema(self) -> bool:
        return False

    @property
    def batch_size(self) -> int:
        return self.config.max_concurrency

    async def generate(self, messages: list[Message], *, settings: Settings) -> Completion:
        loop = asyncio.get_running_loop()
        request = _Request(list(messages), settings, loop.create_future())
        self._pending.append(request)
        if self._worker is None or self._worker.done() or self._worker.get_loop() is not loop:
            self._worker = loop.create_task(self._drain())
        return await request.future

    async def _drain(self) -> None:
        await asyncio.sleep(0)  # let the calls started in the same loop turn join the first batch
        while self._pending:
            key = _batch_key(self._pending[0].settings)
            batch = [r for r in self._pending if _batch_key(r.settings) == key][: self.batch_size]
            taken = {id(r) for r in batch}
            self._pending = [r for r in self._pending if id(r) not in taken]
            live = [r for r in batch if not r.future.done()]  # the engine may have timed some out
            if not live:
                continue
            try:
                completions = await asyncio.to_thread(self._run_batch, [r.messages for r in live], key)
            except Exception as exc:
                for request in live:
                    if not request.future.done():
                        request.future.set_exception(exc)
                continue
            for request, result in zip(live, completions, strict=True):
                if not request.future.done():
                    if isinstance(result, BaseException):
                        request.future.set_exception(result)
                    else:
                        request.future.set_result(result)

    # ------------------------------------------------------------------ transformers side (worker thread)

    def load(self) -> _Loaded:
        """Load tokenizer and model once (thread-safe); a failure is model-wide."""
        with self._load_lock:
            if self._loaded is None:
                self._loaded = self._load()
            return self._loaded

    def _load(self) -> _Loaded:
        try:
            import torch
            from transformers import AutoModelForCausalLM, AutoTokenizer
        except ImportError:
            raise MissingDependencyError("torch and transformers", "train") from None
        source = str(self.local_path or self.name)
        try:
            tokenizer = AutoTokenizer.from_pretrained(source)
            device = "cuda" if torch.cuda.is_available() else "cpu"
            dtype = torch.bfloat16 if device == "cuda" and torch.cuda.is_bf16_supported() else torch.float32
            model = AutoModelForCausalLM.from_pretrained(source, dtype=dtype).to(device)
        except (OSError, ValueError) as exc:
            raise FatalModelError(f"{self.id}: cannot load the checkpoint: {exc}", model_wide=True) from None
        if tokenizer.chat_template is None:
            raise FatalModelError(f"{self.id}: the tokenizer has no chat template", model_wide=True)
        model.eval()
        tokenizer.padding_side = "left"
        if tokenizer.pad_token is None:
            tokenizer.pad_token = tokenizer.eos_token
        return _Loaded(model, tokenizer, device)

    def _run_batch(
        self, conversations: list[list[Message]], key: tuple[Any, ...]
    ) -> list[Completion | Exception]:
        import torch

        loaded = self.load()
        temperature, max_tokens, top_p, stop, seed = key
        tokenizer = loaded.tokenizer
        prompts = [
            tokenizer.apply_chat_template(c, add_generation_prompt=True, tokenize=False)
            for c in conversations
        ]
        inputs = tokenizer(prompts, return_tensors="pt", padding=True, add_special_tokens=False).to(
            loaded.device
        )
        sampling: dict[str, Any] = {"do_sample": False}
        if temperature > 0:
            sampling = {"do_sample": True, "temperature": temperature, "top_p": top_p or 1.0}
            torch.manual_seed(seed or 0)
        limit = max_tokens or DEFAULT_MAX_TOKENS
        started = time.perf_counter()
        with torch.inference_mode():
            output = loaded.model.generate(
                **inputs,
                max_new_tokens=limit,
                pad_token_id=tokenizer.pad_token_id,
                stop_strings=list(stop) or None,
                tokenizer=tokenizer if stop else None,
                **sampling,
            )
        latency = time.perf_counter() - started
        width = inputs["input_ids"].shape[1]
        prompt_lengths = inputs["attention_mask"].sum(dim=1).tolist()
        return [
            self._completion(tokenizer, row[width:].tolist(), int(n), limit, latency, stop)
            for row, n in zip(output, prompt_lengths, strict=True)
        ]

    def _completion(
        self,
        tokenizer: Any,
        ids: list[int],
        prompt_tokens: int,
        limit: int,
        latency: float,
        stop: tuple[str, ...],
    ) -> Completion | Exception:
        pad, eos = tokenizer.pad_token_id, tokenizer.eos_token_id
        ended = eos in ids
        if ended:
            ids = ids[: ids.index(eos)]
        ids = [i for i in ids if i != pad]
        finish = "stop" if ended or len(ids) < limit else "length"
        decoded = tokenizer.decode(ids, skip_special_tokens=True)
        for end in stop:  # as an OpenAI-compatible server: the stop string is not part of the text
            if end and decoded.endswith(end):
                decoded, finish = decoded[: -len(end)], "stop"
                break
        text, reasoning = strip_reasoning(decoded)
        completion = Completion(
            text=text.strip() if reasoning else text,
            finish_reason=finish,
            prompt_tokens=prompt_tokens,
            completion_tokens=len(ids) + (1 if ended else 0),
            reasoning=reasoning,
            latency_s=latency,
            model=self.id,
        )
        if not completion.text.strip():  # as `replies`: whitespace is no text
            reason: NoTextReason = "truncated" if finish == "length" else "no_text"
            return NoTextError(
                f"{self.id}: the reply has no text ({reason})", reason=reason, completion=completion
            )
        return completion


def hf_model(name: str, *, config: Config | None = None, **_: Any) -> HFModel:
    """The registry's factory for `hf/PATH`: without the `train` extra, one line saying what to install
    (before any call is queued), not a traceback from the first batch."""
    import importlib.util

    missing = [m for m in ("torch", "transformers") if importlib.util.find_spec(m) is None]
    if missing:
        raise MissingDependencyError(missing[0], "train")
    return HFModel(name, (config or Config()).model_settings(f"hf/{name}"))
