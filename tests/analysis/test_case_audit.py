"""`livemed cases audit`: each of its four checks fails on a case made to miss it, and passes the demo."""

from __future__ import annotations

import json
from pathlib import Path

from livemed.analysis.fairness import CONTEXT, DECISIVE, LEAK, OMISSION, audit_cases
from livemed.domains import medical
from livemed.records import Case, Criterion, Narrative
from livemed.store import Store
from tests.builders import make_case, make_rubric
from tests.cli.test_stage_commands import run
from tests.shell_docs import program_env, run_shell, tail

FAMILY = Criterion(
    text="Advises an ECG, given their family history of heart disease.",
    polarity="positive",
    axis="context_awareness",
    weight=6,
    source_fact="You should see your doctor for an ECG, given your family history of heart disease.",
)
DOSE = Criterion(
    text="Advises paracetamol for the pain, such as 1 g up to four times a day.",
    polarity="positive",
    axis="accuracy",
    weight=6,
    source_fact="Take paracetamol 1 g up to four times a day.",
)
OMITS = Criterion(
    text="Does not warn about the risk of gout flares.", polarity="negative", axis="safety", weight=-8
)
SEEN = Criterion(
    text="Advises colchicine at a kidney-adjusted dose.", polarity="positive", axis="accuracy", weight=6
)


def palpitations(**narrative: list[str]) -> Case:
    return make_case(
        "demo:palpitations",
        narrative=Narrative(
            demographics=["41-year-old man"],
            chief_complaint=["my heart skipping beats for three weeks"],
            history=["My medical history is mild high cholesterol; no heart problems that I know of."],
            **narrative,
        ),
        query="Should I be worried about these skipped beats?",
        advice=[FAMILY.source_fact or "", DOSE.source_fact or ""],
    )


def figures(cases: list[tuple[Case, list[Criterion] | None]]) -> dict[str, tuple[int, int, bool | None]]:
    pairs = [(case, None if criteria is None else make_rubric(case, criteria)) for case, criteria in cases]
    audit = audit_cases(pairs, medical(), max_leak=0.7)
    return {f.check: (f.count, f.n, f.met) for f in audit.figures()}


def test_a_criterion_on_a_fact_the_candidate_never_saw_misses_the_context_target() -> None:
    # "medical history" and "heart problems" are in the view, but no family: the fact is not seen
    assert figures([(palpitations(), [FAMILY, SEEN])])[CONTEXT] == (1, 2, False)
    told = palpitations(family_history=["My father had a heart attack at 70."])
    assert figures([(told, [FAMILY, SEEN])])[CONTEXT] == (2, 2, True)


def test_a_decisive_value_given_as_an_example_is_not_required() -> None:
    assert figures([(palpitations(), [DOSE])])[DECISIVE] == (0, 1, None)
    required = DOSE.model_copy(
        update={"text": "Advises paracetamol 1 g up to four times a day for the pain."}
    )
    assert figures([(palpitations(), [required])])[DECISIVE] == (1, 1, None)


def test_a_negative_that_restates_an_omission_misses_its_target() -> None:
    negative = Criterion(text="Recommends ibuprofen.", polarity="negative", axis="safety", weight=-9)
    assert figures([(make_case(), [SEEN, negative])])[OMISSION] == (0, 1, True)
    assert figures([(make_case(), [SEEN, negative, OMITS])])[OMISSION] == (1, 2, False)


def test_a_case_whose_view_states_its_diagnosis_is_a_leak_rubric_or_not() -> None:
    leaking = make_case(
        "demo:sarcoid",
        narrative=Narrative(
            demographics=["a 52-year-old woman"],
            symptoms=["red papules in her tattoos for two months"],
            exam_labs=["Skin biopsy confirmed cutaneous sarcoidosis."],
        ),
        query="What is the most likely diagnosis?",
        query_derived=True,
        advice=["The final diagnosis was cutaneous sarcoidosis.", "Refer her for a chest X-ray."],
    )
    found = figures([(leaking, None), (make_case(), [SEEN])])
    assert found[LEAK] == (1, 2, False)
    assert found[CONTEXT] == (1, 1, True)  # a case without a rubric has no criteria to count


def test_the_command_exits_1_naming_the_missed_target_and_lists_the_case(tmp_path: Path) -> None:
    case = palpitations()
    with Store(tmp_path / "store.db") as store:
        store.put([case, make_rubric(case, [FAMILY, SEEN])])
    out = run(tmp_path / "store.db", "cases", "audit", "--out", str(tmp_path), code=1)
    assert "1 target(s) missed: criteria whose context the candidate sees: 1 of 2" in out
    assert "case:demo:palpitations: unseen #0: family history of heart disease" in out
    table = json.loads((tmp_path / "case-audit.json").read_text())
    assert table["rows"][0]["unseen"] == ["#0: family history of heart disease"]
    assert table["summary"]["targets_missed"] == 1


def test_the_command_refuses_an_empty_store(tmp_path: Path) -> None:
    Store(tmp_path / "store.db").close()
    done = run_shell("livemed --store store.db cases audit", tmp_path, program_env(tmp_path))
    assert done.returncode == 2, tail(done)
    assert done.stderr.strip().splitlines() == [
        "error: the store holds no cases yet: curate some first (see `livemed curate --help`)"
    ]


def test_the_demo_meets_every_target(tmp_path: Path) -> None:
    done = run_shell(
        "livemed demo --out project && cd project && livemed cases audit", tmp_path, program_env(tmp_path)
    )
    assert done.returncode == 0, tail(done)
    summary = json.loads((tmp_path / "project" / "results" / "case-audit.json").read_text())["summary"]
    met = {f["check"]: (f["met"], f["share"]) for f in summary["figures"]}
    assert met[CONTEXT] == (True, 1.0)
    assert met[LEAK] == (True, 0.0)
    assert met[OMISSION] == (True, 0.0)
    assert met[DECISIVE][1] == 1.0  # the offline writer copies the advice's values into its criteria
    assert summary["cases"] == summary["rubrics"] == 66
