"""A Hugging Face `datasets` folder: `data/test.jsonl` (the export's rows) and `README.md`, the dataset
card, whose YAML header names the data files, so `datasets.load_dataset(folder)` loads it as it is (or
after `huggingface-cli upload`). Writing it needs no `datasets`; loading it does."""

from __future__ import annotations

import re
from collections import Counter
from pathlib import Path

from livemed.releases.exports.rows import ROW_FILES, ExportResult, Selection, row_hashes, rows, write_jsonl
from livemed.releases.licences import licence_of

DATA_FILE = ROW_FILES["hf"]
_CC = re.compile(r"\bcc[ -]?(by(?:[ -](?:sa|nc|nd|nc[ -]sa|nc[ -]nd))?)[ -]?(\d\.\d)\b")
_CC_URL = re.compile(r"creativecommons\.org/licenses/(by(?:-(?:sa|nc|nd|nc-sa|nc-nd))?)/(\d\.\d)")


def hf_license(licence: str) -> str | None:
    """The Hugging Face card `license` id of a licence text (e.g. "CC0-1.0 (...)" -> "cc0-1.0"), or
    None when it is not one the Hub names."""
    text = licence.lower()
    if re.search(r"\bcc[ -]?0\b", text) or "publicdomain/zero/1.0" in text:
        return "cc0-1.0"
    if re.match(r"mit\b", text):
        return "mit"
    if found := (_CC.search(text) or _CC_URL.search(text)):
        return f"cc-{found.group(1).replace(' ', '-')}-{found.group(2)}"
    return None


def card_license(selection: Selection) -> str:
    """The card's `license`: the one licence every exported case shares, else `other` (the card's
    table lists each source's licences)."""
    names = {licence_of(item) for item in selection.items}
    return (hf_license(names.pop()) if len(names) == 1 else None) or "other"


def write_hf_export(selection: Selection, out: Path) -> ExportResult:
    (out / "data").mkdir(parents=True, exist_ok=True)
    data = list(rows(selection))
    write_jsonl(out / DATA_FILE, iter(data))
    card = out / "README.md"
    card.write_text(dataset_card(selection), encoding="utf-8")
    return ExportResult(selection, [out / DATA_FILE, card], selection.items, row_hashes(data))


def dataset_card(selection: Selection) -> str:
    """The card: sources with their licences, dates, counts, the release hash, how cases were made."""
    release, chosen = selection.release, selection.items
    per_source = Counter(item.case.source for item in chosen)
    licences: dict[str, Counter[str]] = {}
    for item in chosen:
        licences.setdefault(item.case.source, Counter())[licence_of(item)] += 1
    withheld = sum(selection.restricted.values())
    dates = sorted(item.case.published.date().isoformat() for item in chosen)
    makers = Counter(item.case.provenance.model_id or "unknown" for item in chosen)
    writers = Counter(item.rubric.provenance.model_id or "unknown" for item in chosen)
    lines = [
        "---",
        f"pretty_name: livemed release {release.name}",
        f"license: {card_license(selection)}",
        "tags: [medical, evaluation, rubrics, livemed]",
        "configs:",
        "- config_name: default",
        "  data_files:",
        "  - split: test",
        f"    path: {DATA_FILE}",
        "---",
        f"# livemed release `{release.name}`",
        "",
        f"- Release hash (sha256 over the manifest of every case of the release): `{release.release_hash}`",
        f"- Cases published up to {release.until.isoformat()}; in this export: {len(chosen)}"
        + (f", from {dates[0]} to {dates[-1]}" if dates else ""),
        f"- Embargo: {selection.embargo_days} day(s); cases held back (the newest): {selection.embargoed}",
        f"- Cases exported as ids and links only (their licence does not allow the text): {withheld}",
        "",
        "## Sources and licences",
        "",
        "| source | cases | licences |",
        "|---|---|---|",
    ]
    for source, n in sorted(per_source.items()):
        named = "; ".join(f"{name} ({k})" for name, k in licences[source].most_common())
        lines.append(f"| {source} | {n} | {named} |")
    lines += [
        "",
        "## How the cases were made",
        "",
        "Harvested dated documents were pre-filtered, then curated by a Screener → Validator →",
        "Controller chain (every advice element grounded in the source text); each case got a rubric",
        "of weighted bipolar criteria, checked by a deterministic lint. Curators: "
        + ", ".join(f"{m} ({n})" for m, n in makers.most_common())
        + "; rubric writers: "
        + ", ".join(f"{m} ({n})" for m, n in writers.most_common())
        + ".",
        "",
        "Each row's `content_hash` is the sha256 of the canonical JSON of its case and rubric",
        "(`case_json`, `rubric_json`); `manifest.json` lists them. Made with livemed.",
        "",
    ]
    return "\n".join(lines)
