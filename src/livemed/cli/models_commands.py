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

from livemed.cli import app
from livemed.cli.context import console, state
from livemed.config import Config, ModelConfig

if TYPE_CHECKING:
    from livemed.models import CallFailure, Completion, Engine, Model, Structured

models_app = typer.Typer(help="Check and list the models livemed can call.", no_args_is_help=True)
app.add_typer(models_app, name="models")

CHECK_PROMPT = "Reply with the single word OK."


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
    timeout: float | None = typer.Option(None, "--timeout", help="Seconds per call (default: the config's)."),
) -> None:
    """Send one tiny request (and one JSON-schema request); print latency, usage and what works.

    Nothing is cached or stored: the point is to reach the endpoint now.
    """
    from livemed.models import CallFailure, Engine, get_model

    config = _check_config(state(ctx).config, model_id, timeout)
    model = get_model(model_id, config=config)
    console.print(f"[bold]{escape(model.id)}[/] → {escape(model.endpoint)}{_key_note(model)}")
    engine = Engine(store=None, config=config, cache="off")
    result = asyncio.run(_run_check(engine, model))
    plain = result.plain
    if isinstance(plain, CallFailure):
        console.print(
            f"[red]call failed[/] ({plain.reason}, {plain.attempts} attempt(s)): {escape(plain.detail)}"
        )
        raise typer.Exit(code=1)
    _print_plain(plain)
    _print_structured(model.supports_json_schema, result.structured)


async def _run_check(engine: Engine, model: Model) -> CheckResult:
    from livemed.models import LLM, CallFailure, Message, Settings

    llm = LLM(engine, model, stage="check")
    try:
        plain = await llm.generate(
            [{"role": "user", "content": CHECK_PROMPT}], Settings(temperature=0, max_tokens=16)
        )
        structured = None
        if not isinstance(plain, CallFailure):
            messages: list[Message] = [
                {"role": "user", "content": "Is this a test? Answer ok=true, word 'OK'."}
            ]
            structured = await llm.structured(messages, CheckReply, Settings(temperature=0, max_tokens=64))
        return CheckResult(plain=plain, structured=structured)
    finally:
        await engine.aclose()


def _print_plain(plain: Completion) -> None:
    reply = " ".join(plain.text.split())
    reply = reply if len(reply) <= 60 else reply[:57] + "…"
    console.print(
        f"plain call: [green]ok[/] in {plain.latency_s:.2f} s · {plain.prompt_tokens} prompt + "
        f"{plain.completion_tokens} completion tokens · finish {plain.finish_reason or '?'} · "
        f"reply {escape(repr(reply))}"
    )


def _print_structured(supports_json_schema: bool, structured: Structured[CheckReply] | None) -> None:
    assert structured is not None
    how = "JSON-schema output" if supports_json_schema else "instructed JSON (json_schema = false)"
    if structured.ok and not structured.repaired:
        console.print(f"{how}: [green]works[/] (valid on the first try)")
    elif structured.ok:
        console.print(f"{how}: [yellow]works after one repair[/] (the first reply did not validate)")
    else:
        console.print(f"{how}: [red]does not work[/]: {escape(structured.failure or '')}")
        if supports_json_schema:
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
    from livemed.models.openai import PRESETS
    from livemed.models.registry import OFFLINE, PROVIDERS

    config = state(ctx).config
    providers = Table(title="providers (model ids are provider/name)")
    for column in ("provider", "default endpoint", "key variable", "JSON schema"):
        providers.add_column(column)
    for name in PROVIDERS:
        preset = PRESETS.get(name)
        if preset is not None:
            schema = "yes" if preset.json_schema else "no"
            providers.add_row(name, preset.base_url, preset.api_key_env or "(none needed)", schema)
        elif name == "fake":
            providers.add_row(name, "in-process, scripted (tests, examples)", "-", "yes")
        else:
            providers.add_row(name, "in-process, no LLM (baselines)", "-", "-")
    console.print(providers)
    console.print(_configured_table(config), markup=False)
    if OFFLINE:
        console.print(
            "offline baselines (not LLMs): " + ", ".join(f"offline/{name}" for name in sorted(OFFLINE))
        )
    else:
        console.print("offline baselines: none registered")


def _configured_table(config: Config) -> Table | str:
    if not config.models:
        return 'configured models: none (add [models."provider/name"] sections to livemed.toml)'
    table = Table(title="configured models (livemed.toml \\[models])")
    for column in ("model", "base URL", "key variable", "limits", "price $/Mtok in/out"):
        table.add_column(column, overflow="fold")
    for model_id, settings in sorted(config.models.items()):
        env = settings.api_key_env
        key = f"{env} ({'set' if os.environ.get(env, '').strip() else 'not set'})" if env else "(default)"
        price = config.prices.get(model_id)
        table.add_row(
            model_id,
            settings.base_url or "(default)",
            key,
            _limits_text(settings),
            f"{price.input:g} / {price.output:g}" if price else "-",
        )
    return table


def _limits_text(settings: ModelConfig) -> str:
    parts = [f"{settings.max_concurrency} at once"]
    if settings.requests_per_minute:
        parts.append(f"{settings.requests_per_minute:g} req/min")
    if settings.tokens_per_minute:
        parts.append(f"{settings.tokens_per_minute:g} tok/min")
    parts.append(f"timeout {settings.timeout_s:g} s, {settings.max_retries} retries")
    return ", ".join(parts)
