"""`livemed models check MODEL` and `livemed models list`."""

from __future__ import annotations

import asyncio
import os
from dataclasses import dataclass
from typing import TYPE_CHECKING

import typer
from pydantic import BaseModel
from rich.markup import escape
from rich.table import Table

from livemed.cli.context import console, state
from livemed.cli.root import app
from livemed.config import Config, ModelConfig

if TYPE_CHECKING:
    from livemed.models import CallFailure, Completion, Engine, Model, Structured

models_app = typer.Typer(help="Check and list the models livemed can call.", no_args_is_help=True)
app.add_typer(models_app, name="models")

CHECK_PROMPT = "Reply with the single word OK."
CHECK_MAX_TOKENS = 1024  # enough for a thinking model to think and still answer


class CheckReply(BaseModel):
    """The tiny schema `models check` asks for to test JSON-schema output."""

    ok: bool
    word: str


@dataclass
class CheckResult:
    plain: Completion | CallFailure
    structured: Structured[CheckReply] | None


@models_app.command("check")
def check(
    ctx: typer.Context,
    model_id: str = typer.Argument(..., metavar="MODEL", help="A model id such as openai/gpt-4o-mini."),
    timeout: float | None = typer.Option(
        None, "--timeout", metavar="SECONDS", help="Seconds per call, e.g. 30 (default: the config's)."
    ),
    max_tokens: int = typer.Option(
        CHECK_MAX_TOKENS,
        "--max-tokens",
        min=1,
        metavar="N",
        help="Completion tokens per call (thinking models need many).",
    ),
) -> None:
    """Send one tiny request (and one structured-output request); print latency, usage and what works.

    Exit 1 when the endpoint cannot be used (the plain call failed). Nothing is cached or stored:
    the point is to reach the endpoint now.
    """
    from livemed.models import CallFailure, Engine, get_model

    config = _check_config(state(ctx).config, model_id, timeout)
    model = get_model(model_id, config=config)
    console.print(f"[bold]{escape(model.id)}[/] → {escape(model.endpoint)}{_key_note(model)}")
    engine = Engine(store=None, config=config, cache="off")
    result = asyncio.run(_run_check(engine, model, max_tokens))
    plain = result.plain
    if isinstance(plain, CallFailure):
        console.print(f"[red]plain call failed[/]{_failure_text(plain)}")
        raise typer.Exit(code=1)
    _print_plain(plain)
    _print_structured(model.supports_json_schema, model.id in engine.schema_refused, result.structured)


def _failure_text(failure: CallFailure) -> str:
    if failure.reason == "truncated":
        return ": ran out of tokens (finish_reason length) — raise --max-tokens"
    tries = f"{failure.attempts} attempt(s)" if failure.attempts else "not sent"
    return f" ({failure.reason}, {tries}): {escape(failure.detail)}"


async def _run_check(engine: Engine, model: Model, max_tokens: int) -> CheckResult:
    from livemed.models import LLM, CallFailure, Message, Settings

    llm = LLM(engine, model, stage="check")
    settings = Settings(temperature=0, max_tokens=max_tokens)
    try:
        plain = await llm.generate([{"role": "user", "content": CHECK_PROMPT}], settings)
        structured = None
        if not isinstance(plain, CallFailure):
            messages: list[Message] = [
                {"role": "user", "content": "Is this a test? Answer ok=true, word 'OK'."}
            ]
            structured = await llm.structured(messages, CheckReply, settings)
        return CheckResult(plain=plain, structured=structured)
    finally:
        await engine.aclose()


def _print_plain(plain: Completion) -> None:
    reply = " ".join(plain.text.split())
    reply = reply if len(reply) <= 60 else reply[:57] + "…"
    estimated = " (estimated: the endpoint sent no usage)" if plain.usage_estimated else ""
    reasoning = f" · {len(plain.reasoning)} characters of reasoning kept apart" if plain.reasoning else ""
    console.print(
        f"plain call: [green]ok[/] in {plain.latency_s:.2f} s · {plain.prompt_tokens} prompt + "
        f"{plain.completion_tokens} completion tokens{estimated} · finish {plain.finish_reason or '?'}"
        f"{reasoning} · reply {escape(repr(reply))}"
    )


def _print_structured(
    supports_json_schema: bool, refused: bool, structured: Structured[CheckReply] | None
) -> None:
    """Which structured-output mode works: the JSON-schema response format, or instructed JSON."""
    assert structured is not None
    if refused:
        console.print("JSON-schema response format: [yellow]refused (400)[/]")
        how = "instructed JSON"
    elif supports_json_schema:
        how = "JSON-schema response format"
    else:
        how = "instructed JSON (json_schema = false)"
    if structured.ok and not structured.repaired:
        console.print(f"{how}: [green]works[/] (valid on the first try)")
    elif structured.ok:
        console.print(f"{how}: [yellow]works after one repair[/] (the first reply did not validate)")
    elif structured.call_failure is not None and structured.call_failure.reason == "truncated":
        console.print(f"{how}: [red]ran out of tokens (finish_reason length) — raise --max-tokens[/]")
    else:
        console.print(f"{how}: [red]does not work[/]: {escape(structured.failure or '')}")
        if supports_json_schema and not refused:
            console.print(
                "  (if the endpoint ignores response_format, set json_schema = false for this model)"
            )


def _check_config(config: Config, model_id: str, timeout: float | None) -> Config:
    """The config with at most one retry (and --timeout) for this model: a check should be quick."""
    settings = config.model_settings(model_id)
    update: dict[str, object] = {"max_retries": min(settings.max_retries, 1)}
    if timeout is not None:
        update["timeout_s"] = timeout
    models = {**config.models, model_id: settings.model_copy(update=update)}
    return config.model_copy(update={"models": models})


def _key_note(model: Model) -> str:
    env = getattr(model, "api_key_env", None)
    if env is None:
        return ""
    return f" (key from ${env}: {'set' if os.environ.get(env, '').strip() else '[red]not set[/]'})"


@models_app.command("list")
def list_models(ctx: typer.Context) -> None:
    """Providers, the models configured in livemed.toml, and the registered offline baselines."""
    from livemed.models.baselines import OFFLINE
    from livemed.models.openai import PRESETS
    from livemed.models.registry import PROVIDERS

    config = state(ctx).config
    providers = Table(title="providers (model ids are provider/name)")
    for column in ("provider", "default endpoint", "key variable", "JSON schema"):
        providers.add_column(column)
    for name in PROVIDERS:
        preset = PRESETS.get(name)
        if preset is not None:
            schema = "yes" if preset.json_schema else "no"
            providers.add_row(
                name, _preset_url(name, preset.base_url), preset.api_key_env or "(none needed)", schema
            )
        elif name == "fake":
            providers.add_row(name, "in-process, scripted (tests, examples)", "-", "yes")
        elif name == "hf":
            providers.add_row(name, "in-process, a local checkpoint (livemed[train])", "-", "no")
        else:
            providers.add_row(name, "in-process, no LLM (baselines)", "-", "-")
    console.print(providers)
    console.print(_configured_table(config), markup=False)
    if OFFLINE:
        from livemed.answer.simulation import SIMULATED

        console.print(
            "offline baselines (not LLMs): " + ", ".join(f"offline/{name}" for name in sorted(OFFLINE))
        )
        console.print(f"simulations among them (for the contamination view): {', '.join(SIMULATED)}")
    else:
        console.print("offline baselines: none registered")
    for line in _offline_elsewhere():
        console.print(line)


def _offline_elsewhere() -> list[str]:
    """The offline ids one command takes besides the baselines: the pair judges and the taxonomy's."""
    from livemed.analysis.taxonomy import HEURISTIC_ID
    from livemed.judges.baselines import BASELINES

    return [
        f"offline pair judges (judges run, judges certify): {', '.join(BASELINES)}",
        f"offline error classifier (taxonomy --classifier): {HEURISTIC_ID}",
    ]


def _configured_table(config: Config) -> Table | str:
    if not config.models:
        return 'configured models: none (add [models."provider/name"] sections to livemed.toml)'
    table = Table(title="configured models (livemed.toml \\[models])")
    for column in ("model", "requests go to", "key variable", "limits", "price $/Mtok in/out"):
        table.add_column(column, overflow="fold")
    for model_id, settings in sorted(config.models.items()):
        env = settings.api_key_env
        key = f"{env} ({'set' if os.environ.get(env, '').strip() else 'not set'})" if env else "(default)"
        price = config.prices.get(model_id)
        table.add_row(
            model_id,
            _endpoint_text(config, model_id),
            key,
            _limits_text(settings),
            f"{price.input:g} / {price.output:g}" if price else "-",
        )
    return table


def _preset_url(provider: str, url: str) -> str:
    from livemed.models.openai import BASE_URL_ENV

    env = os.environ.get(BASE_URL_ENV, "").strip() if provider == "openai" else ""
    return f"{env.rstrip('/')} (from {BASE_URL_ENV})" if env else url


def _endpoint_text(config: Config, model_id: str) -> str:
    """Where the model's requests go, and why when it is not livemed.toml (never the key)."""
    from livemed.errors import LivemedError
    from livemed.models import get_model

    try:
        model = get_model(model_id, config=config)
    except (LivemedError, ValueError, TypeError) as exc:
        return f"(cannot resolve: {exc})"[:120]
    source = getattr(model, "base_url_source", "config")
    note = {"OPENAI_BASE_URL": " (from OPENAI_BASE_URL)", "preset": " (provider default)"}.get(source, "")
    return f"{model.endpoint}{note}"


def _limits_text(settings: ModelConfig) -> str:
    parts = [f"{settings.max_concurrency} at once"]
    if settings.requests_per_minute:
        parts.append(f"{settings.requests_per_minute:g} req/min")
    if settings.tokens_per_minute:
        parts.append(f"{settings.tokens_per_minute:g} tok/min")
    parts.append(f"timeout {settings.timeout_s:g} s, {settings.max_retries} retries")
    return ", ".join(parts)
