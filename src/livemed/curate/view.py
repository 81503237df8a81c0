"""The candidate's view of a case: the one definition of the text a candidate model reads.

Every stage that shows or checks what the candidate sees goes through `candidate_view`: the answer
stage sends it (`answer.ask.candidate_messages`, in a data block), the grader judges the reply
in it (`answer.ask.conversation`), the leak audit compares the advice with it (`curate.leak`),
and the fact-coverage audit checks each rubric criterion's context against it (`rubrics.coverage`).

A case's `view` (recorded on the case when it is curated, `[curate] candidate_view` in livemed.toml,
per source in `[curate.candidate_view_by_source]`) says which text it is:

- `narrative` (the default): the narrative slots by topic under the domain pack's labels
  (`answer_labels`, or `consult_labels` for a derived query), then the query, in the pack's
  `answer_patient` (or `answer_consult`) template. A pack's `[candidate_view] date_slot` shows the
  case's own date when that slot holds no fact (the legal pack's "Date of my question").
- `post`: the asker's own title and post, verbatim (threads only), for sources whose posts are fairer
  to the candidate than any extraction.

An imported case that carries its own conversation (HealthBench) is that conversation, whatever its
`view`.
"""

from __future__ import annotations

import functools
import re

from livemed.domains import DomainPack, medical
from livemed.records import Case


def candidate_view(case: Case, pack: DomainPack | None = None) -> str:
    """The plain text the candidate reads of `case` (for an imported conversation: its turns)."""
    if case.messages:
        return "\n".join(m["content"] for m in case.messages)
    if case.view == "post" and case.post:
        return case.post
    return narrative_message(case, pack)


def audit_text(case: Case, pack: DomainPack | None = None) -> str:
    """The candidate's view without the templates' own words ("Hello doctor", "Medicines I take:"),
    which the lexical audits (leak, fact coverage) do not count as the case's."""
    text = candidate_view(case, pack)
    for label in template_words(pack or medical()):
        text = text.replace(label, " ")
    return text


@functools.cache
def template_words(pack: DomainPack) -> tuple[str, ...]:
    """The templates' own words: their text outside the placeholders, and the slot labels."""
    fixed = [
        line for name in ("answer_patient", "answer_consult") for line in _fixed_lines(pack.prompt(name))
    ]
    labels = (*pack.answer_labels.values(), *pack.consult_labels.values())
    return (*fixed, *(f"{label}:" for label in labels))


def _fixed_lines(template: str) -> list[str]:
    """A template's words outside its placeholders: "Hello doctor, …", "My question:"."""
    return [p.strip() for p in re.split(r"\{[a-z_]+\}", template) if p.strip()]


def post_view(title: str | None, post: str) -> str:
    """The asker's own words as the `post` view shows them: the title, a blank line, the post."""
    return "\n\n".join(part.strip() for part in (title or "", post) if part.strip())


def narrative_message(case: Case, pack: DomainPack | None = None) -> str:
    """The case as a patient's message (or, for a derived query, a clinician's consult): background
    facts by topic, then the question."""
    pack = pack or medical()
    labels = pack.consult_labels if case.query_derived else pack.answer_labels
    lines = []
    for name, label in labels.items():
        facts = [f.strip().rstrip(".").rstrip() for f in slot_facts(case, name, pack) if f.strip()]
        text = "; ".join(f for f in facts if f)
        if text:  # one full stop at the end, none doubled after a fact's own punctuation
            lines.append(f"{label}: {text}{'' if text.endswith(('!', '?')) else '.'}")
    background = "\n".join(lines) + "\n\n" if lines else ""
    template = "answer_consult" if case.query_derived else "answer_patient"
    return pack.render(template, background=background, query=case.query.strip())


def slot_facts(case: Case, name: str, pack: DomainPack) -> list[str]:
    """A slot's facts as the candidate is shown them: the pack's date slot, when empty, shows the
    case's own date (when the question was asked)."""
    facts = case.narrative.slot(name)
    if not facts and name == pack.candidate_view.date_slot:
        return [case.published.date().isoformat()]
    return facts
