"""A chat-completions response body → a `Completion`, or the error it really is.

Real OpenAI-compatible servers answer in more shapes than the reference API:

- an HTTP 200 whose body is only `{"error": {...}}` (OpenRouter, some proxies): classified by its
  code like the HTTP status it stands for, with the provider's message kept;
- `finish_reason: "error"` or `choices[0].error` (OpenRouter, an error from the provider mid-reply):
  a `TransientModelError` with reason "provider_error";
- no usable text — `content` null or empty, tool calls only, or nothing left once reasoning is taken
  out: a `NoTextError`, "truncated" when `finish_reason` is "length", else "no_text";
- reasoning in `reasoning_content` / `reasoning` fields (vLLM, DeepSeek, OpenRouter) or in
  `<think>…</think>` at the start of `content` (R1-style models served without a reasoning parser):
  kept in `Completion.reasoning`, never in `text`; the raw body keeps the original;
- no `usage` (llama.cpp builds, proxies): tokens are estimated and `usage_estimated` is set.

A reply that has text and `finish_reason: "length"` is a completion (cut short, but with text);
its `finish_reason` stays visible to callers.
"""

from __future__ import annotations

import re
from collections.abc import Callable
from typing import Any

from livemed.models.base import Completion, FatalModelError, NoTextError, TransientModelError
from livemed.models.statuses import body_error

_THINK = re.compile(r"^\s*<think>(.*?)(?:</think>|\Z)", re.DOTALL)
_REASONING_FIELDS = ("reasoning_content", "reasoning")
CHARS_PER_TOKEN = 4


def strip_reasoning(content: str) -> tuple[str, str]:
    """(text, reasoning): a leading `<think>…</think>` block, or an unclosed one that ran to the end,
    moved out of the text."""
    found = _THINK.match(content)
    if found is None:
        return content, ""
    return content[found.end() :], found.group(1).strip()


def as_sent(completion: Completion) -> tuple[str, str]:
    """(content, reasoning sent apart from it) of the first choice exactly as the reply held them: an
    inline `<think>` block, closed or not, stays in the content. A completion without a chat body
    (in-process models): its text and reasoning."""
    choices = completion.raw.get("choices")
    first = choices[0] if isinstance(choices, list) and choices else None
    message = first.get("message") if isinstance(first, dict) else None
    if not isinstance(message, dict):
        return completion.text, completion.reasoning
    fields = [str(message.get(name) or "") for name in _REASONING_FIELDS]
    return _content(message), "\n".join(part for part in fields if part)


def _content(message: dict[str, Any]) -> str:
    """A message's content as text (content parts joined: [{"type": "text", "text": …}, …])."""
    content = message.get("content")
    if isinstance(content, list):
        content = "".join(str(p.get("text") or "") for p in content if isinstance(p, dict))
    return str(content or "")


def estimate_text_tokens(text: str) -> int:
    """About four characters a token, at least one for any text."""
    return (len(text) + CHARS_PER_TOKEN - 1) // CHARS_PER_TOKEN


def parse_chat_completion(
    data: object,
    *,
    model_id: str,
    endpoint: str,
    latency_s: float,
    prompt_estimate: int,
    redact: Callable[[str], str],
) -> Completion:
    """The `Completion` in a chat-completions body; raises the model errors described above.

    The completion's text, reasoning and raw body are the reply's, as it came; `redact` scrubs the
    API key from the text of the errors raised here.
    """
    where = f"{model_id}: reply from {endpoint}"
    if not isinstance(data, dict):
        raise TransientModelError(f"{where}: malformed response (not a JSON object)")
    error = body_error(data, where, redact)
    if error is not None:
        raise error
    choices = data.get("choices")
    if not isinstance(choices, list) or not choices or not all(isinstance(c, dict) for c in choices):
        raise TransientModelError(f"{where}: malformed response (no choices)")
    _raise_choice_error(choices[0], where, redact)
    try:
        parts = [_message_parts(choice) for choice in choices]
    except (AttributeError, TypeError, ValueError):
        raise TransientModelError(f"{where}: malformed response (unexpected shape)") from None
    text, reasoning = parts[0]
    finish = choices[0].get("finish_reason")
    finish_reason = str(finish) if finish is not None else None
    prompt_tokens, completion_tokens, estimated = _usage(data.get("usage"), prompt_estimate, parts)
    completion = Completion(
        text=text,
        finish_reason=finish_reason,
        prompt_tokens=prompt_tokens,
        completion_tokens=completion_tokens,
        usage_estimated=estimated,
        reasoning=reasoning,
        latency_s=latency_s,
        model=model_id,
        raw=data,
        choices=[t for t, _ in parts] if len(parts) > 1 else [],
    )
    if not text.strip():
        raise _no_text(choices[0], where, finish_reason, completion)
    return completion


def _raise_choice_error(choice: dict[str, Any], where: str, redact: Callable[[str], str]) -> None:
    error = choice.get("error")
    if error is None and choice.get("finish_reason") != "error":
        return
    message = "finish_reason error"
    code: object = None
    if isinstance(error, dict):
        message = str(error.get("message") or message)
        code = error.get("code")
    elif error is not None:
        message = str(error)
    text = redact(" ".join(message.split()))[:300]
    suffix = f" (code {code})" if code is not None else ""
    status = code if isinstance(code, int) and 100 <= code < 600 else None
    if status is not None and 400 <= status < 500 and status not in (408, 409, 429):
        raise FatalModelError(
            f"{where}: provider error{suffix}: {text}", status=status, reason="provider_error"
        )
    raise TransientModelError(
        f"{where}: provider error{suffix}: {text}", status=status, reason="provider_error"
    )


def _message_parts(choice: dict[str, Any]) -> tuple[str, str]:
    """(text, reasoning) of one choice."""
    message = choice.get("message") or {}
    text, think = strip_reasoning(_content(message))
    fields = [str(message.get(name) or "") for name in _REASONING_FIELDS]
    reasoning = "\n".join(part for part in (*fields, think) if part)
    return text.strip() if reasoning else text, reasoning


def _usage(usage: object, prompt_estimate: int, parts: list[tuple[str, str]]) -> tuple[int, int, bool]:
    """(prompt tokens, completion tokens, estimated?)."""
    if isinstance(usage, dict) and (usage.get("prompt_tokens") or usage.get("completion_tokens")):
        try:
            return int(usage.get("prompt_tokens") or 0), int(usage.get("completion_tokens") or 0), False
        except (TypeError, ValueError):
            pass
    completion = sum(
        estimate_text_tokens(text) + estimate_text_tokens(reasoning) for text, reasoning in parts
    )
    return prompt_estimate, max(1, completion), True


def _no_text(choice: dict[str, Any], where: str, finish: str | None, completion: Completion) -> NoTextError:
    message = choice.get("message") or {}
    if finish == "length":
        return NoTextError(
            f"{where}: ran out of tokens before any text (finish_reason length)",
            reason="truncated",
            completion=completion,
        )
    if message.get("tool_calls") or message.get("function_call"):
        what = "only tool calls"
    elif completion.reasoning:
        what = "only reasoning"
    elif message.get("content") is None:
        what = "content null"
    else:
        what = "empty content"
    return NoTextError(
        f"{where}: no text in the reply ({what}, finish_reason {finish or 'none'})",
        reason="no_text",
        completion=completion,
    )
