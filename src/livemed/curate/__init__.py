"""Curation: harvested documents → validated, grounded cases (Screener → Validator → Controller);
`view.py` is the one definition of what a candidate reads of a case.

```python
from livemed.curate.chain import Chain, curate_store

chain = Chain(Screener(llm), Validator(llm), Controller(llm), retriever=BM25Retriever(passages))
outcome = await chain(doc)            # Case (status "accepted") or Rejection (stage, reason)
result, funnel = await curate_store(store, chain, limit=100)
```
"""
