"""`get_model("provider/name")`: the one way to name a model; `bind_model` makes it a stage's model.

Providers are a plain dict of lazy imports; offline baselines are registered by the stages that
define them (one line each in `models.baselines.OFFLINE`). A miss raises a user error with "did you mean".
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from livemed.config import Config
from livemed.errors import ConfigError, UnknownNameError, UserError
from livemed.models.base import Model
from livemed.models.baselines import load_target
from livemed.models.llm import LLM

if TYPE_CHECKING:
    from livemed.models.engine import Engine

# provider -> "module:factory"; a factory is called as factory(name, config=..., **kwargs).
PROVIDERS: dict[str, str] = {
    "openai": "livemed.models.openai:openai_model",
    "vllm": "livemed.models.openai:vllm_model",
    "ollama": "livemed.models.openai:ollama_model",
    "fake": "livemed.models.fake:FakeModel",
    "hf": "livemed.models.hf:hf_model",
    "offline": "livemed.models.baselines:offline_model",
}


def split_model_id(model_id: str) -> tuple[str, str]:
    provider, sep, name = model_id.partition("/")
    if not sep or not provider or not name:
        raise ConfigError(
            f"model ids look like 'provider/name' (e.g. 'openai/gpt-4o-mini'), got {model_id!r}"
        )
    return provider, name


def get_model(model_id: str, *, config: Config | None = None, **kwargs: Any) -> Model:
    """Resolve a `provider/name` id to a Model, using `config` for endpoints and limits."""
    provider, name = split_model_id(model_id)
    if provider not in PROVIDERS:
        raise UnknownNameError("model provider", provider, PROVIDERS)
    factory = load_target(PROVIDERS[provider])
    if provider != "offline":
        kwargs.pop("pack", None)  # only offline baselines read the domain pack; LLMs get it in prompts
    if provider == "fake":
        model: Model = factory(model_id, **kwargs)
    else:
        model = factory(name, config=config or Config(), **kwargs)
    return model


def bind_model(
    model_id: str, engine: Engine, stage: str, need: type, *, config: Config | None = None, **kwargs: Any
) -> Any:
    """The model a stage calls: an offline baseline with the capability `need` (a `UserError` for one
    without it), or an `LLM` bound to `engine` under `stage`. `kwargs` go to `get_model` (`pack=`, a
    baseline's corpus…)."""
    model = get_model(model_id, config=config, **kwargs)
    if model_id.startswith("offline/"):
        if not isinstance(model, need):
            raise UserError(f"{model_id} is a baseline that cannot be used for `{stage}`")
        return model
    return LLM(engine, model, stage=stage)
