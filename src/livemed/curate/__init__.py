"""Curation: harvested documents → validated, grounded cases (Screener → Validator → Controller).

```python
from livemed.curate.chain import Chain, curate_store

chain = Chain(Screener(llm), Validator(llm), Controller(llm), retriever=BM25Retriever(passages))
outcome = await chain(doc)            # Case (status "accepted") or Rejection (stage, reason)
result, funnel = await curate_store(store, chain, limit=100)
```
"""
