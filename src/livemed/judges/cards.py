"""Validity cards: what the battery measured for one grader configuration, stored as a
`ValidityCard` keyed by the grader's model id, endpoint, prompt hash and settings, with a verdict
(`livemed.judges.certification`); the battery's pairs (stratified by dataset, calculator and tertile,
seeded); and the one line `scores`, `leaderboard`, `eval` and the report show for the grades they use:
the card of the grader, mode and template that made them, or that the grader is unvalidated."""

from __future__ import annotations

import random
from collections import defaultdict
from collections.abc import Iterable
from dataclasses import dataclass
from itertools import islice
from pathlib import Path
from typing import TYPE_CHECKING, Any

from livemed.records import Grade, Pair, ValidityCard
from livemed.store import Store

if TYPE_CHECKING:
    from livemed.judges.datasets import Item

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


def find_card(store: Store, grader: str, settings: dict[str, Any] | None = None) -> ValidityCard | None:
    """The newest card of `grader` whose settings include `settings` (all its cards when None)."""
    wanted = settings or {}
    cards = [
        c
        for c in store.iter(ValidityCard, parent_id=grader)
        if all(c.settings.get(k) == v for k, v in wanted.items() if v is not None)
    ]
    return max(cards, key=lambda c: c.provenance.created_at, default=None)


MODES_LOOKED_AT = 20  # answers whose grades tell the mode they were made in


def grading_modes(store: Store, grader: str, answer_ids: Iterable[str]) -> set[str]:
    """The modes (`per-criterion`, `batched`) the grader's grades of the first answers were made in."""
    ids = list(dict.fromkeys(islice(answer_ids, MODES_LOOKED_AT)))
    return {
        str(g.provenance.settings.get("mode"))
        for g in store.by_parents(Grade, ids)
        if g.judge == grader and g.provenance.settings.get("mode")
    }


@dataclass(frozen=True)
class CardView:
    """The card that certifies a grader's grades (None: unvalidated) and its one line."""

    grader: str
    card: ValidityCard | None
    line: str

    @property
    def verdict(self) -> str:
        """passed / failed / not enough data; `unvalidated` without a card; `no verdict` for a card
        made before cards had one."""
        if self.card is None:
            return "unvalidated"
        return self.card.verdict or "no verdict"

    @property
    def card_id(self) -> str:
        return self.card.id if self.card is not None else ""


def certify_hint(grader: str, mode: str | None = None) -> str:
    """The command that certifies the grader (in `mode` when it is not the default)."""
    model, _, label = grader.partition("@tpl-")
    extra = (" --mode batched" if mode == "batched" else "") + (" --grader-template FILE" if label else "")
    extra += " --grader-setup healthbench" if label.endswith("-healthbench") else ""
    return f"`livemed judges certify --grader {model}{extra}`"


def card_for(store: Store, grader: str, answer_ids: Iterable[str] = (), mode: str | None = None) -> CardView:
    """The card of `grader` made in the mode its grades of `answer_ids` were made in (or `mode`): a card
    made in another mode does not certify them."""
    modes = {mode} if mode else grading_modes(store, grader, answer_ids)
    if len(modes) > 1:
        line = (
            f"grader {grader} is unvalidated for these grades: they were made in modes "
            f"{' and '.join(sorted(modes))}, and a card certifies one"
        )
        return CardView(grader, None, line)
    made_in = next(iter(modes), None)
    card = find_card(store, grader, {"mode": made_in} if made_in else None)
    latest = store.state_get(AGREEMENT_NAMESPACE, grader)  # the last `judges agreement`, made since too
    if card is None:
        how = f" in mode {made_in}" if made_in else ""
        line = f"grader {grader} is unvalidated (no validity card{how}): run {certify_hint(grader, made_in)}"
        return CardView(grader, None, line + _reviewed_text(latest))
    return CardView(grader, card, _line(card, latest))


def card_line(store: Store, grader: str, answer_ids: Iterable[str] = (), mode: str | None = None) -> str:
    """One line on the validity of the grader's grades (`card_for`)."""
    return card_for(store, grader, answer_ids, mode).line


def _figure_text(name: str, figure: dict[str, Any]) -> str:
    from livemed.judges.certification import shown

    bar = f" vs {figure['best_trivial']} {figure['bar']:.2f}" if figure.get("best_trivial") else ""
    return f"{name} {shown(figure)}{bar} {figure.get('verdict', '')}".rstrip()


def _part_text(label: str, part: dict[str, Any] | None) -> str | None:
    if not part:
        return None
    if "figures" not in part:
        return None
    figures = ", ".join(_figure_text(n, f) for n, f in part["figures"].items())
    return f"{label} {part['verdict'].upper()}: {figures}"


def _reviewed_text(agreement: dict[str, Any] | None) -> str:
    """The reviewers' agreement of a stored `judges agreement` run on the audit labels, or ''."""
    from livemed.judges.reviewed import SOURCE, summary

    if not agreement or agreement.get("source") != SOURCE:
        return ""
    return f"; reviewers' labels ({agreement['measured_at'][:10]}): {summary(agreement)}"


def _line(card: ValidityCard, latest: dict[str, Any] | None = None) -> str:
    m = card.metrics
    when = card.provenance.created_at.date().isoformat()
    template, setup = card.settings.get("grader_template"), card.settings.get("grader_setup")
    how = f"{when}, {card.settings.get('mode', '')}, {card.key}" + (
        f", grader template {template}" if template else ""
    )
    how += f", {setup} grader setup" if setup else ""
    head = f"grader {card.grader} validity card ({how})"
    if not card.verdict:
        again = certify_hint(card.grader, card.settings.get("mode"))
        return f"{head}: made before a card could fail, no verdict: run {again} again"
    parts = [p for p in (_part_text("rubric", m.get("rubric")), _part_text("pairs", m.get("pairs"))) if p]
    if m.get("pairs") is None:
        parts.append("pairs not measured")
    agreement = latest or m.get("human_agreement")
    reviewed = _reviewed_text(agreement)
    if not reviewed and agreement and agreement.get("macro_f1") is not None:
        parts.append(f"human macro-F1 {agreement['macro_f1']:.2f}")
    return f"{head}: {card.verdict.upper()} — " + "; ".join(parts) + reviewed


# The pair battery: every dataset found, items stratified (dataset; calculator for MedCalc) and
# seeded, one pair per item visit, tertiles taken in turn.

FOLDERS = {
    "pubmedqa": "pubmedqa",
    "medcalc": "medcalc_bench",
    "medqa": "medqa",
    "medbullets": "medbullets",
    "pico": "pico",
}
BUNDLED = {"pico"}  # without a folder under --data, the project-made set
NEEDED_PAIRS = 385  # position consistency (per pair) to ±0.05 at 0.5: `certification.needed_n()`


def stratum(item: Item) -> str:
    """The item's stratum: its dataset and group (`datasets.items.item_group`: the MedCalc calculator,
    MedQA's exam step, PubMedQA's gold decision)."""
    from livemed.judges.datasets.items import item_group

    group = item_group(item)
    return f"{item.dataset}:{group}" if group else item.dataset


def stratified(items: list[Item], seed: int) -> list[Item]:
    """The items in a seeded round-robin over their strata (each stratum in a seeded order): any prefix
    is a stratified sample. Items first, so only the items visited are made into pairs (the pairs of a
    whole dataset, `judges.sampling.sample_pairs`'s input, would be built for nothing)."""
    from livemed.judges.sampling import interleave

    groups: dict[str, list[Item]] = defaultdict(list)
    for item in items:
        groups[stratum(item)].append(item)
    return interleave(groups, f"{seed}:battery")


def _pairs_by_tertile(item: Item, seed: int, licence: str) -> dict[str | None, list[Pair]]:
    from livemed.judges.pairs import Balancer, item_pairs

    found: dict[str | None, list[Pair]] = defaultdict(list)
    for pair in item_pairs(item, seed, Balancer(), licence):
        found[pair.tertile].append(pair)
    for pairs in found.values():
        random.Random(f"{seed}:battery:{item.item_id}").shuffle(pairs)
    return found


def take_pairs(items: list[Item], seed: int, licence: str, wanted: int) -> list[Pair]:
    """`wanted` pairs from the stratified items: one per item per pass, the tertile asked for in turn
    (hard, medium, easy; another when the item has none of it), more passes while items have pairs
    left. Items without pairs are passed over."""
    from livemed.judges.pairs import TERTILES

    order = stratified(items, seed)
    pools: dict[str, dict[str | None, list[Pair]]] = {}
    out: list[Pair] = []
    turn = 0
    while len(out) < wanted:
        before = len(out)
        for item in order:
            if len(out) >= wanted:
                break
            pool = pools.get(item.item_id)
            if pool is None:
                pool = pools[item.item_id] = _pairs_by_tertile(item, seed, licence)
            pair = _next_pair(pool, TERTILES[turn % 3])
            if pair is not None:
                out.append(pair)
                turn += 1
        if len(out) == before:
            break  # every item's pairs are taken
    return out


def _next_pair(pool: dict[str | None, list[Pair]], tertile: str) -> Pair | None:
    for key in (tertile, *sorted(pool, key=str)):
        if pool.get(key):
            return pool[key].pop()
    return None


def battery_pairs(data: Path | None, seed: int, per_dataset: int | None) -> tuple[list[Pair], list[str]]:
    """Pairs from each dataset under `data` (a folder laid out like ../shared/data; PICO's bundled set
    when it has no pico/), `per_dataset` each (None: `NEEDED_PAIRS` split over the datasets found).
    Returns the pairs and a note per dataset not found."""
    from livemed.errors import InputFileError
    from livemed.judges.datasets import dataset, licence_of

    found: dict[str, tuple[list[Item], str]] = {}
    missing = []
    for name, folder in FOLDERS.items():
        path = None if data is None else Path(data) / folder
        if path is None or not path.exists():
            if name not in BUNDLED:
                missing.append(f"{name}: no {path}")
                continue
            path = None
        found[name] = (
            [i for i in dataset(name).load(path) if not isinstance(i, InputFileError)],
            licence_of(name, path),
        )
    each = per_dataset or -(-NEEDED_PAIRS // max(1, len(found)))
    pairs = [p for items, licence in found.values() for p in take_pairs(items, seed, licence, each)]
    return pairs, missing


def probe_pairs(pairs: list[Pair], seed: int, size: int) -> list[Pair]:
    """A seeded sample of `size` pairs for the length probe (all when fewer)."""
    if len(pairs) <= size:
        return list(pairs)
    return random.Random(f"{seed}:probe").sample(pairs, size)
