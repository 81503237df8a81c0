"""The stored judge runs as meta-evaluation tables: verdicts grouped by judge configuration
(`judge · mode`), with the samples whose call failed (`call_failed` rejections of stage `judges`), so
that the tables count what was asked and is missing. What `judges report`, `judges regimes` and the
HTML report read."""

from __future__ import annotations

import re
from collections.abc import Iterable, Iterator

from livemed.judges.cards import PROBE
from livemed.judges.meta import MetaTables, Missing, evaluate
from livemed.judges.run import RunKey, is_certification, run_key, run_labels
from livemed.records import JudgeVerdict, Pair, Rejection
from livemed.store import Store

STAGE = "judges"
_PAIR, _ORDER, _SAMPLE = "\x00pair\x00", "\x00order\x00", "\x00sample\x00"


def load_results(store: Store, judge: str | None, mode: str | None, policy: str) -> dict[str, MetaTables]:
    """Meta-evaluation tables per stored judge configuration (`judge · mode`, and what tells two
    configurations of one judge and mode apart: `run.run_labels`)."""
    by_key: dict[RunKey, list[JudgeVerdict]] = {}
    for verdict in store.iter(JudgeVerdict):
        if (judge and verdict.judge != judge) or (mode and verdict.mode != mode):
            continue
        if verdict.dataset.startswith(PROBE) or is_certification(verdict):  # on the card, not here
            continue
        by_key.setdefault(run_key(verdict), []).append(verdict)
    labels = run_labels({key: found[0] for key, found in by_key.items()})
    grouped = {labels[key]: found for key, found in by_key.items()}
    missing = failed_samples(store, grouped)
    return {
        name: evaluate(v, policy, missing.get(name, ()))  # type: ignore[arg-type]
        for name, v in sorted(grouped.items())
    }


def _id_pattern(template: JudgeVerdict) -> re.Pattern[str] | None:
    """A pattern of the verdict ids of `template`'s configuration: any pair, order and sample (None when
    the id does not name them, e.g. a hash of everything)."""
    shape = template.model_copy(update={"pair_id": _PAIR, "order": _ORDER, "sample": _SAMPLE}).id
    if not all(part in shape for part in (_PAIR, _ORDER, _SAMPLE)):
        return None
    text = re.escape(shape)
    for part, group in (
        (_PAIR, "(?P<pair>.+)"),
        (_ORDER, "(?P<order>original|swapped)"),
        (_SAMPLE, r"(?P<sample>\d+)"),
    ):
        text = text.replace(re.escape(part), group, 1)
    return re.compile(text)


def _failed_ids(store: Store) -> list[str]:
    """The verdict ids of stored failed calls of `judges run` (rejection id `judges:<verdict id>`)."""
    prefix = f"{STAGE}:"
    return [i.removeprefix(prefix) for i in store.ids(Rejection.kind) if i.startswith(f"{prefix}verdict:")]


def failed_samples(store: Store, grouped: dict[str, list[JudgeVerdict]]) -> dict[str, list[Missing]]:
    """Per configuration, its samples whose call failed and that have no verdict since."""
    failed = _failed_ids(store)
    if not failed:
        return {}
    answered = {v.id for verdicts in grouped.values() for v in verdicts}
    found: dict[str, list[tuple[str, str, int]]] = {}
    for name, verdicts in grouped.items():
        pattern = _id_pattern(verdicts[0])
        if pattern is not None:
            found[name] = list(_matches(pattern, (i for i in failed if i not in answered)))
    pairs = _pairs(store, {pair for hits in found.values() for pair, _, _ in hits})
    return {
        name: [Missing(p, pairs[p].dataset, pairs[p].tertile, o, s) for p, o, s in hits if p in pairs]
        for name, hits in found.items()
    }


def _matches(pattern: re.Pattern[str], ids: Iterable[str]) -> Iterator[tuple[str, str, int]]:
    for verdict_id in ids:
        match = pattern.fullmatch(verdict_id)
        if match is not None:
            yield match["pair"], match["order"], int(match["sample"])


def _pairs(store: Store, ids: set[str]) -> dict[str, Pair]:
    return store.get_many(Pair, sorted(ids)) if ids else {}
