"""Judge training: TRL exports of preference pairs, the verifiable reward, SFT/GRPO runs, model cards.

Modules: `exports` (pairs → TRL's SFT and GRPO sets), `reward` (the verdict reward and TRL adapters),
`train` (the stages, with TRL; `livemed[train]`), `model_card`, `tiny` (a tiny random Llama for smoke
runs), `judging` (the pairwise prompt, parser and pairs reader of `livemed.judges` this package uses).
Importing this package imports neither torch nor TRL.
"""
