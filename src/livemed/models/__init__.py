"""Models: the only way livemed reaches an LLM.

```python
from livemed.models import Engine, LLM, get_model
async with Engine(store=store, config=config) as engine:       # on exit: cache flushed, connections closed
    judge = LLM(engine, get_model("openai/gpt-4o-mini", config=config), stage="grade")
    completion_or_failure = await judge.generate(messages)
    structured = await judge.structured(messages, Verdict)      # .value or .failure
verdict = await generate_structured(model, messages, Verdict)  # one-off, on a fresh engine
```
Providers: `openai/` (any OpenAI-compatible endpoint), `vllm/`, `ollama/` (`models/openai.py`), `fake/`
(`models/fake.py`), `offline/` (baselines registered in `models/baselines.py`), `hf/` (a local
checkpoint run with transformers, `models/hf.py`; needs `livemed[train]`).
"""

from livemed.models.base import (
    CallFailure,
    Completion,
    FatalModelError,
    Message,
    Model,
    Settings,
    TransientModelError,
)
from livemed.models.engine import Engine
from livemed.models.llm import LLM, generate_structured
from livemed.models.registry import bind_model, get_model
from livemed.models.structured import Structured

__all__ = [
    "LLM",
    "CallFailure",
    "Completion",
    "Engine",
    "FatalModelError",
    "Message",
    "Model",
    "Settings",
    "Structured",
    "TransientModelError",
    "bind_model",
    "generate_structured",
    "get_model",
]
