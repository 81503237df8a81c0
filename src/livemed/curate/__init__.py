"""Curation: harvested documents → validated, grounded cases (Screener → Validator → Controller).

```python
chain = Chain(Screener(llm), Validator(llm), Controller(llm), retriever=BM25Retriever(passages))
outcome = await chain(doc)            # Case (status "accepted") or Rejection (stage, reason)
result, funnel = await curate_store(store, chain, limit=100)
```
"""

from livemed.curate.chain import Chain, Funnel, curate, curate_store, output_ids, pending_docs
from livemed.curate.controller import Controller
from livemed.curate.screener import Screener
from livemed.curate.validator import DEFAULT_CHECKLIST, Validator

__all__ = [
    "DEFAULT_CHECKLIST",
    "Chain",
    "Controller",
    "Funnel",
    "Screener",
    "Validator",
    "curate",
    "curate_store",
    "output_ids",
    "pending_docs",
]
