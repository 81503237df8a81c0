"""Releases: hashes stable across stores and exports (canonical serialisation), retirement, diffs, the
embargo, per-source licences, and the JSONL and HealthBench exports."""

from __future__ import annotations

import json
from datetime import date, timedelta
from pathlib import Path
from typing import Any

import pytest

from livemed.errors import UserError
from livemed.records import Case, Release, ReleaseItem, Rubric
from livemed.releases.manifest import canonical, case_hash, release_hash, sha256
from livemed.store import Store
from tests.live.helpers import cli, program, project

UNTIL = "2026-12-31"


def ok(config: Path, *argv: str) -> Any:
    result = cli(config, *argv)
    assert result.exit_code == 0, result.output
    return result


def release(config: Path, name: str) -> Release:
    with Store(config.parent / "livemed.db") as store:
        found = store.get(Release, f"release:{name}")
    assert found is not None
    return found


def jsonl(path: Path) -> list[dict[str, Any]]:
    return [json.loads(line) for line in path.read_text(encoding="utf-8").splitlines()]


def test_the_release_hash_is_the_same_from_another_store_made_at_another_time(
    config: Path, tmp_path: Path
) -> None:
    ok(config, "release", "create", "r1", "--until", UNTIL)
    other = project(tmp_path / "elsewhere", docs=10)  # the same documents, curated again from scratch
    ok(other, "update")
    ok(other, "release", "create", "r1", "--until", UNTIL)
    assert release(config, "r1").release_hash == release(other, "r1").release_hash
    assert release(config, "r1").manifest == release(other, "r1").manifest
    assert len(release(config, "r1").manifest) > 0


def test_the_jsonl_export_recomputes_to_the_release_hash(config: Path, tmp_path: Path) -> None:
    ok(config, "release", "create", "r1", "--until", UNTIL)
    ok(config, "release", "export", "r1", "--format", "jsonl", "--out", str(tmp_path / "out"))
    rows = jsonl(tmp_path / "out" / "cases.jsonl")
    manifest = json.loads((tmp_path / "out" / "manifest.json").read_text(encoding="utf-8"))
    recomputed = {
        row["id"]: sha256(
            canonical({"case": json.loads(row["case_json"]), "rubric": json.loads(row["rubric_json"])})
        )
        for row in rows
    }
    assert recomputed == manifest["hashes"] == release(config, "r1").manifest
    assert release_hash(recomputed) == manifest["release_hash"] == release(config, "r1").release_hash


def test_canonical_serialisation_sorts_keys_and_keeps_text() -> None:
    assert canonical({"b": 1, "a": [1, "é"]}) == '{"a":[1,"é"],"b":1}'


def test_a_retired_case_leaves_later_releases_and_stays_in_earlier_ones(config: Path) -> None:
    ok(config, "release", "create", "r1", "--until", UNTIL)
    victim = sorted(release(config, "r1").manifest)[0]
    ok(config, "release", "retire", victim, "--reason", "answer leaked on a forum")
    ok(config, "release", "create", "r2", "--until", UNTIL)
    assert victim in release(config, "r1").manifest
    assert victim not in release(config, "r2").manifest
    assert release(config, "r2").counts["left out: retired"] == 1
    with Store(config.parent / "livemed.db") as store:  # r1's frozen copy is still there
        assert store.get(ReleaseItem, f"release_item:r1:{victim}") is not None
    shown = ok(config, "release", "diff", "r1", "r2").output
    assert f"- {victim} (retired: answer leaked on a forum)" in shown
    assert "0 added, 1 removed, 0 changed" in shown


def test_a_changed_case_shows_in_the_diff_and_the_old_release_keeps_the_old_text(config: Path) -> None:
    ok(config, "release", "create", "r1", "--until", UNTIL)
    key = sorted(release(config, "r1").manifest)[0]
    with Store(config.parent / "livemed.db") as store:
        case = store.get(Case, key)
        assert case is not None
        old_query = case.query
        store.put([case.model_copy(update={"query": old_query + " Is that urgent?"})])
    ok(config, "release", "create", "r2", "--until", UNTIL)
    assert f"~ {key}" in ok(config, "release", "diff", "r1", "r2").output
    with Store(config.parent / "livemed.db") as store:
        frozen = store.get(ReleaseItem, f"release_item:r1:{key}")
        assert frozen is not None
        assert frozen.case.query == old_query


def test_a_release_name_is_used_once_and_an_unknown_one_is_one_line(config: Path) -> None:
    ok(config, "release", "create", "r1", "--until", UNTIL)
    again = cli(config, "release", "create", "r1", "--until", UNTIL)
    assert "exists already" in str(again.exception)
    assert "no release named 'nope'" in str(cli(config, "release", "show", "nope").exception)


def test_the_until_date_bounds_the_cases(config: Path) -> None:
    with Store(config.parent / "livemed.db") as store:
        dates = sorted(c.published.date() for c in store.iter(Case))
    middle = dates[len(dates) // 2]
    ok(config, "release", "create", "early", "--until", middle.isoformat())
    expected = sum(1 for d in dates if d <= middle)
    assert len(release(config, "early").manifest) == expected < len(dates)


def test_the_embargo_keeps_the_newest_cases_out_of_the_export_and_in_the_store(
    config: Path, tmp_path: Path
) -> None:
    with Store(config.parent / "livemed.db") as store:
        dates = sorted(c.published.date() for c in store.iter(Case))
    until = dates[-1]
    days = (until - dates[len(dates) // 2]).days
    ok(config, "release", "create", "r1", "--until", until.isoformat())
    out = tmp_path / "public"
    shown = ok(
        config, "release", "export", "r1", "--format", "jsonl", "--out", str(out), "--embargo-days", str(days)
    )
    rows = jsonl(out / "cases.jsonl")
    newest_allowed = until - timedelta(days=days)
    assert rows
    assert all(date.fromisoformat(r["published"][:10]) <= newest_allowed for r in rows)
    held = sum(1 for d in dates if d > newest_allowed)
    assert held > 0
    assert len(rows) == len(dates) - held
    assert f"held back by the {days}-day embargo: {held}" in shown.output
    manifest = json.loads((out / "manifest.json").read_text(encoding="utf-8"))
    assert manifest["embargoed"] == held
    assert manifest["release_hash"] == release(config, "r1").release_hash
    assert len(release(config, "r1").manifest) == len(dates)  # the private-latest set stays in the store


def _as_pubmed(config: Path) -> str:
    """One stored case re-sourced as a PubMed abstract (whose licence forbids redistribution)."""
    with Store(config.parent / "livemed.db") as store:
        case = next(iter(store.iter(Case)))
        rubric = store.get(Rubric, f"rubric:{case.id}")
        assert rubric is not None
        moved = case.model_copy(update={"doc_id": "pubmed:12345", "source": "pubmed", "source_id": "12345"})
        store.put([moved, rubric.model_copy(update={"case_id": moved.id})])
        return moved.id


def test_a_pubmed_case_is_exported_as_ids_and_links_unless_the_user_says_otherwise(
    config: Path, tmp_path: Path
) -> None:
    key = _as_pubmed(config)
    ok(config, "release", "create", "r1", "--until", UNTIL)
    shown = ok(config, "release", "export", "r1", "--format", "jsonl", "--out", str(tmp_path / "a")).output
    row = next(r for r in jsonl(tmp_path / "a" / "cases.jsonl") if r["id"] == key)
    assert row["text_included"] is False
    assert row["query"] is None
    assert row["case_json"] is None
    assert row["criteria"] == []
    assert row["advice"] == []
    assert row["source_id"] == "12345"
    assert row["content_hash"] == release(config, "r1").manifest[key]
    assert "ids and links only (publisher copyright" in shown
    others = [r for r in jsonl(tmp_path / "a" / "cases.jsonl") if r["id"] != key]
    assert others
    assert all(r["text_included"] and r["query"] for r in others)
    ok(
        config,
        "release",
        "export",
        "r1",
        "--format",
        "jsonl",
        "--out",
        str(tmp_path / "b"),
        "--include-restricted-text",
    )
    row = next(r for r in jsonl(tmp_path / "b" / "cases.jsonl") if r["id"] == key)
    assert row["text_included"] is True
    assert row["query"]
    hb = ok(
        config, "release", "export", "r1", "--format", "healthbench", "--out", str(tmp_path / "hb")
    ).output
    assert "left out" in hb
    assert len(jsonl(tmp_path / "hb" / "healthbench.jsonl")) == len(others)


def test_the_healthbench_export_imports_back_with_the_same_criteria(config: Path, tmp_path: Path) -> None:
    ok(config, "release", "create", "r1", "--until", UNTIL)
    ok(config, "release", "export", "r1", "--format", "healthbench", "--out", str(tmp_path / "hb"))
    lines = jsonl(tmp_path / "hb" / "healthbench.jsonl")
    with Store(config.parent / "livemed.db") as store:
        rubrics = {r.case_id: r for r in store.iter(Rubric)}
    assert len(lines) == len(release(config, "r1").manifest)
    for line in lines:
        rubric = rubrics[line["prompt_id"]]
        assert [c["criterion"] for c in line["rubrics"]] == [c.text for c in rubric.criteria]


def test_case_hash_changes_with_the_content_only(config: Path) -> None:
    with Store(config.parent / "livemed.db") as store:
        case = next(iter(store.iter(Case)))
        rubric = store.get(Rubric, f"rubric:{case.id}")
    assert rubric is not None
    later = case.model_copy(
        update={"provenance": case.provenance.model_copy(update={"livemed_version": "9"})}
    )
    assert case_hash(later, rubric) == case_hash(case, rubric)
    assert case_hash(case.model_copy(update={"query": "Other?"}), rubric) != case_hash(case, rubric)


def test_verify_recomputes_an_export_and_finds_a_changed_row(config: Path, tmp_path: Path) -> None:
    ok(config, "release", "create", "r1", "--until", UNTIL)
    out = tmp_path / "out"
    ok(config, "release", "export", "r1", "--format", "hf", "--out", str(out))
    good = ok(config, "release", "verify", str(out)).output
    n = len(release(config, "r1").manifest)
    assert f"{n} row(s) match the manifest; {n} rehashed from their content" in good
    data = out / "data" / "test.jsonl"
    lines = data.read_text(encoding="utf-8").splitlines()
    row = json.loads(lines[0])
    case = json.loads(row["case_json"])
    case["query"] += " (edited)"
    row["case_json"] = canonical(case)
    data.write_text("\n".join([json.dumps(row), *lines[1:]]) + "\n", encoding="utf-8")
    bad = cli(config, "release", "verify", str(out))
    assert "2 mismatch(es)" in str(bad.exception)  # the hash, and the query column against the JSON
    assert f"test.jsonl:1 ({row['id']}): its content does not hash" in bad.output
    assert f"test.jsonl:1 ({row['id']}): column 'query' differs" in bad.output


def test_verify_finds_an_edited_visible_column_that_the_hash_does_not_cover(
    config: Path, tmp_path: Path
) -> None:
    ok(config, "release", "create", "r1", "--until", UNTIL)
    out = tmp_path / "out"
    ok(config, "release", "export", "r1", "--format", "jsonl", "--out", str(out))
    data = out / "cases.jsonl"
    lines = data.read_text(encoding="utf-8").splitlines()
    first, second = json.loads(lines[0]), json.loads(lines[1])
    first["advice"][0] += " (edited)"
    second["criteria"][0]["text"] = "Something else entirely."
    data.write_text("\n".join([json.dumps(first), json.dumps(second), *lines[2:]]) + "\n", encoding="utf-8")
    bad = cli(config, "release", "verify", str(out))
    assert bad.exit_code == 1
    assert "2 mismatch(es)" in str(bad.exception)
    assert f"cases.jsonl:1 ({first['id']}): column 'advice' differs" in bad.output
    assert f"cases.jsonl:2 ({second['id']}): column 'criteria' differs" in bad.output
    assert "rehashed" not in bad.output


def test_the_hf_card_names_the_one_licence_every_case_shares_else_other(config: Path, tmp_path: Path) -> None:
    from livemed.releases.exports.hf import hf_license

    ok(config, "release", "create", "r1", "--until", UNTIL)
    ok(config, "release", "export", "r1", "--format", "hf", "--out", str(tmp_path / "a"))
    card = (tmp_path / "a" / "README.md").read_text(encoding="utf-8")
    assert "\nlicense: cc0-1.0\n" in card  # every demo case is CC0-1.0
    _as_pubmed(config)
    ok(config, "release", "create", "r2", "--until", UNTIL)
    ok(config, "release", "export", "r2", "--format", "hf", "--out", str(tmp_path / "b"))
    mixed = (tmp_path / "b" / "README.md").read_text(encoding="utf-8")
    assert "\nlicense: other\n" in mixed
    assert "| pubmed | 1 | publisher copyright" in mixed  # the per-source list
    assert hf_license("CC BY-SA 4.0 (Stack Exchange content)") == "cc-by-sa-4.0"
    assert hf_license("https://creativecommons.org/licenses/by-nc/4.0/") == "cc-by-nc-4.0"
    assert hf_license("MIT (OpenAI HealthBench)") == "mit"
    assert hf_license("publisher copyright") is None


ROWS = {"jsonl": "cases.jsonl", "hf": "data/test.jsonl", "healthbench": "healthbench.jsonl"}
ROWS["inspect"] = "samples.jsonl"


def _edit_first_line(path: Path, edit: Any) -> dict[str, Any]:
    lines = path.read_text(encoding="utf-8").splitlines()
    first: dict[str, Any] = json.loads(lines[0])
    edit(first)
    path.write_text("\n".join([json.dumps(first), *lines[1:]]) + "\n", encoding="utf-8")
    return first


EDITS = {  # a change none of the content checks sees: only the row's own hash in the manifest does
    "jsonl": lambda r: r.update(licence="CC0-1.0 (edited)"),
    "hf": lambda r: r.update(text_included=False),
    "healthbench": lambda r: r["rubrics"][0].update(points=r["rubrics"][0]["points"] + 1),
    "inspect": lambda r: r["criteria"][0].update(text="Something else entirely."),
}


@pytest.mark.parametrize("fmt", sorted(ROWS))
def test_every_export_passes_verify_and_a_changed_row_fails_it_with_one_line(
    config: Path, tmp_path: Path, fmt: str
) -> None:
    ok(config, "release", "create", "r1", "--until", UNTIL)
    out = tmp_path / fmt
    ok(config, "release", "export", "r1", "--format", fmt, "--out", str(out))
    n = len(jsonl(out / ROWS[fmt]))
    assert n > 0
    assert f"{out}: {n} row(s) match the manifest" in " ".join(
        ok(config, "release", "verify", str(out)).output.split()
    )
    changed = _edit_first_line(out / ROWS[fmt], EDITS[fmt])
    bad = cli(config, "release", "verify", str(out))
    assert bad.exit_code == 1
    key = changed.get("id", changed.get("prompt_id"))
    name = Path(ROWS[fmt]).name
    message = str(bad.exception)
    assert "\n" not in message
    assert message == (
        f"{out}: 1 mismatch(es) against its manifest; the first: {name}:1 ({key}): "
        "not the row exported (its row hash is not the manifest's)"
    )


def test_the_manifest_of_a_healthbench_export_lists_only_the_cases_it_carries(
    config: Path, tmp_path: Path
) -> None:
    key = _as_pubmed(config)  # no text to export: no HealthBench example
    ok(config, "release", "create", "r1", "--until", UNTIL)
    out = tmp_path / "hb"
    ok(config, "release", "export", "r1", "--format", "healthbench", "--out", str(out))
    manifest = json.loads((out / "manifest.json").read_text(encoding="utf-8"))
    frozen = release(config, "r1").manifest
    assert key not in manifest["hashes"]
    assert manifest["hashes"] == {k: v for k, v in frozen.items() if k != key}
    assert (manifest["cases"], manifest["left_out"]) == (len(frozen) - 1, 1)
    assert sorted(manifest["row_hashes"]) == sorted(
        line["prompt_id"] for line in jsonl(out / "healthbench.jsonl")
    )
    ok(config, "release", "verify", str(out))


def test_verify_names_a_row_that_is_not_json_and_a_manifest_of_no_known_format(
    config: Path, tmp_path: Path
) -> None:
    ok(config, "release", "create", "r1", "--until", UNTIL)
    out = tmp_path / "out"
    ok(config, "release", "export", "r1", "--format", "jsonl", "--out", str(out))
    data = out / "cases.jsonl"
    lines = data.read_text(encoding="utf-8").splitlines()
    data.write_text("\n".join(["{not json", *lines[1:]]) + "\n", encoding="utf-8")
    bad = program(config, "release", "verify", str(out))
    assert bad.returncode == 1
    last = " ".join(bad.stderr.strip().splitlines()[-1].split())
    assert last.endswith("the first: cases.jsonl:1: not a JSON object")
    manifest = json.loads((out / "manifest.json").read_text(encoding="utf-8"))
    (out / "manifest.json").write_text(json.dumps({**manifest, "format": "csv"}), encoding="utf-8")
    unknown = program(config, "release", "verify", str(out))
    assert unknown.returncode == 2
    assert "format 'csv' is none of livemed's exports" in unknown.stderr
    assert "Traceback" not in unknown.stderr


def test_verify_of_a_file_that_is_not_text_is_one_user_error(config: Path, tmp_path: Path) -> None:
    ok(config, "release", "create", "r1", "--until", UNTIL)
    out = tmp_path / "out"
    ok(config, "release", "export", "r1", "--format", "jsonl", "--out", str(out))
    (out / "cases.jsonl").write_bytes(b"\xff\xfe\x00binary\n")
    bad = cli(config, "release", "verify", str(out))
    assert isinstance(bad.exception, UserError)  # exit 2 through the program, one line
    assert str(bad.exception) == f"{out / 'cases.jsonl'}: not a text file (invalid start byte at byte 0)"
