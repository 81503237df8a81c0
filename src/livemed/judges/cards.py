"""Validity cards: what the battery measured for one grader configuration, stored as a
`ValidityCard` keyed by the grader's model id, endpoint, prompt hash and settings; and the one line
`scores`, `leaderboard`, `eval` and the report show for the grader they used."""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any

from livemed.judges.meta import MetaTables
from livemed.records import Pair, ValidityCard
from livemed.store import Store

PROBE = "probe:"  # datasets of length-probe pairs: kept out of `judges report`
AGREEMENT_NAMESPACE = "judges_agreement"  # run_state: the last `judges agreement` metrics per grader


def length_probe(pairs: Iterable[Pair]) -> list[Pair]:
    """Each pair with its rejected (worse) response padded with fluent filler (the length-bias probe)."""
    from livemed.judges.rubric_validation import FILLER  # here: `card_line` (scores) needs none of it

    out = []
    for pair in pairs:
        padded = pair.rejected.model_copy(
            update={
                "id": f"{pair.rejected.id}+pad",
                "text": f"{pair.rejected.text}\n\n{FILLER}",
                "operators": [*pair.rejected.operators, "pad_filler"],
            }
        )
        out.append(pair.model_copy(update={"dataset": f"{PROBE}{pair.dataset}", "rejected": padded}))
    return out


def _r(value: float | None) -> float | None:
    return None if value is None else round(value, 4)


def pair_metrics(tables: MetaTables | None, probe: MetaTables | None) -> dict[str, Any]:
    """The pair battery's numbers for a card (None where not measured)."""
    if tables is None:
        return {"pairs": None}
    length_bias = None
    if probe is not None and probe.datasets:
        plain = [tables.datasets[d.removeprefix(PROBE)].majority for d in probe.datasets]
        padded = [s.majority for s in probe.datasets.values()]
        if all(v is not None for v in plain + padded):
            length_bias = sum(plain) / len(plain) - sum(padded) / len(padded)  # type: ignore[arg-type]
    return {
        "pairs": {
            "average": _r(tables.average("majority")),
            "decomposable": _r(tables.family("decomposable", "majority")),
            "atomic": _r(tables.family("atomic", "majority")),
            "datasets": {d: _r(s.majority) for d, s in tables.datasets.items()},
            "tertiles": {t: _r(tables.tertile_mean(t)) for t in ("hard", "medium", "easy")},
            "verdict_variance": _r(tables.verdict_variance()),
            "invalid_share": _r(tables.invalid_share()),
            "position_consistent": _r(tables.average("consistent")),
            "flip_rate": _r(tables.average("flip_rate")),
            "length_bias": _r(length_bias),
            "games": sum(s.games for s in tables.datasets.values()),
        }
    }


def find_card(store: Store, grader: str, settings: dict[str, Any] | None = None) -> ValidityCard | None:
    """The newest card of `grader` whose settings include `settings` (all its cards when None)."""
    wanted = settings or {}
    cards = [
        c
        for c in store.iter(ValidityCard, parent_id=grader)
        if all(c.settings.get(k) == v for k, v in wanted.items() if v is not None)
    ]
    return max(cards, key=lambda c: c.provenance.created_at, default=None)


def _f(value: Any) -> str:
    return "–" if value is None else f"{value:.2f}"


def card_line(store: Store, grader: str, settings: dict[str, Any] | None = None) -> str:
    """One line on the grader's validity: its card's headline numbers, or that it is unvalidated."""
    card = find_card(store, grader, settings)
    if card is None:
        model, _, label = grader.partition("@tpl-")
        how = f"run `livemed judges certify --grader {model}" + (" --grader-template FILE`" if label else "`")
        return f"grader {grader} is unvalidated (no validity card): {how}"
    m = card.metrics
    parts = []
    pairs = m.get("pairs")
    if pairs:
        t = pairs["tertiles"]
        parts.append(
            f"pairwise correctness {_f(pairs['average'])} (hard {_f(t['hard'])} / easy {_f(t['easy'])}), "
            f"invalid share {_f(pairs['invalid_share'])}, "
            f"position-consistent {_f(pairs['position_consistent'])}, "
            f"length bias {_f(pairs['length_bias'])}"
        )
    rubric = m.get("rubric")
    if rubric:
        parts.append(
            f"rubric order accuracy {_f(rubric['order_accuracy'])}, compliance {_f(rubric['compliance'])}"
        )
    agreement = m.get("human_agreement")
    if agreement:
        parts.append(f"human macro-F1 {_f(agreement.get('macro_f1'))}")
    when = card.provenance.created_at.date().isoformat()
    mode = card.settings.get("mode", "")
    template = card.settings.get("grader_template")
    how = f"{when}, {mode}, {card.key}" + (f", grader template {template}" if template else "")
    return f"grader {grader} validity card ({how}): " + "; ".join(parts or ["no measurement"])


FOLDERS = {"pubmedqa": "pubmedqa", "medcalc": "medcalc_bench", "medqa": "medqa"}


def battery_pairs(data: Any, seed: int, per_dataset: int) -> tuple[list[Pair], list[str]]:
    """Up to `per_dataset` pairs from each real dataset under `data` (a folder laid out like
    ../shared/data): one pair per item, or one per tertile for decomposable items, in file order.
    Returns the pairs and a note per dataset that was not found."""
    from pathlib import Path

    from livemed.errors import InputFileError
    from livemed.judges.datasets import dataset
    from livemed.judges.pairs import Balancer, item_pairs

    pairs: list[Pair] = []
    missing = []
    for name, folder in FOLDERS.items():
        path = Path(data) / folder
        if not path.exists():
            missing.append(f"{name}: no {path}")
            continue
        info, taken, balancer = dataset(name), 0, Balancer()
        for item in info.load(path):
            if isinstance(item, InputFileError):
                continue
            seen: set[str | None] = set()
            for pair in item_pairs(item, seed, balancer, info.licence):
                if pair.tertile in seen or taken >= per_dataset:
                    continue
                seen.add(pair.tertile)
                pairs.append(pair)
                taken += 1
            if taken >= per_dataset:
                break
    return pairs, missing
