"""Lists of alternatives in a positive criterion: "take paracetamol or ibuprofen", "seek urgent care if
the palpitations come with chest pain, fainting or severe shortness of breath".

The grader requires everything a criterion names unless it says "at least one of" (the packs'
`grader_rules.txt`), so a list whose items are alternatives says so: `at_least_one_of` writes it into
the offline writer's criteria, before a list of short noun phrases joined by "or" that follows a
positive verb ("take", "use", "see") or "with"/"for" of a red-flag list. Never in an avoid, stop or
do-not clause ("do not cool him with cold water or sponging": every item counts), never for a range
("one or two cups", "SPF 30 or higher") or alternative actions ("reduce the codeine or switch to …"),
never inside an example clause ("such as apixaban or rivaroxaban": examples need not be named at all).

`bare_lists` finds, for the lint (`check.bare_or`), the "A, B or C" lists of a positive criterion
that say neither "at least one of" nor "all of"/"each of" (an LLM writer's criteria).
"""

from __future__ import annotations

import re

from livemed.rubrics.phrasing import IMPERATIVES

AT_LEAST = "at least one of"
# The word right before a list of alternatives: a verb that asks for one of them, or "with"/"for" of a
# red-flag list ("come with chest pain, fainting or …", "seek care for chest pain or …").
_LEADS_TEXT = (
    "recommends take taking use using apply applying try trying give giving see seeing ask asking contact "
    "wear wearing start starting prescribing offer offering with for develop develops get gets have has "
    "notice notices experience"
)
_LEADS = frozenset(_LEADS_TEXT.split())
_NEGATED = re.compile(
    r"\b(?:not|never|no|avoid\w*|stop\w*|without|limit\w*|reduce|cut|refrain|don't|don’t)\b", re.IGNORECASE
)
_MARKED = re.compile(r"\b(?:at least one of|any of|either|all of|each of|both)\b", re.IGNORECASE)
# An item is a short noun phrase: none of these words (a clause, an example, a condition) in it.
_NOT_ITEM = re.compile(
    r"\b(?:and|if|when|while|because|as|which|who|that|so|then|such|for example|e\.g\.|including|like"
    r"|they|he|she|it|them)\b|\d",
    re.IGNORECASE,
)
_RANGE_AFTER = re.compile(
    r"^(?:higher|more|less|lower|above|below|sooner|later|so|two|three|four|five|six|\d)\b", re.IGNORECASE
)
_SUBJECTS_TEXT = "they he she it we you i if there this these"
_SUBJECTS = frozenset(_SUBJECTS_TEXT.split())
# A word after "or" that opens a clause, not an item: "or feel very unwell", "or are getting worse".
_CLAUSE_VERBS_TEXT = (
    "feel feels become becomes are is was has have get gets develop develops cannot stop stops notice lose "
    "loses spread spreads seem seems look looks breathe breathes keep keeps sooner later"
)
_CLAUSE_VERBS = frozenset(_CLAUSE_VERBS_TEXT.split())
MAX_ITEM_WORDS = 6
_CLAUSE_END = re.compile(r"[;:.]|,\s+(?:and|but|because|as|which|so|or if)\b|\b(?:and|but)\s+(?=\w+\s)")
_EXAMPLES = re.compile(r"\b(?:such as|for example|for instance|e\.g\.|including|like)\b", re.IGNORECASE)
_PREPOSITION = re.compile(r"^(?:at|in|on|to|from|by|with|for|of|into|after|before)\b", re.IGNORECASE)
_PROHIBITING = ("Advises not", "Advises avoiding", "Advises stopping")


def _item(text: str) -> bool:
    words = text.strip(" ,").split()
    return 0 < len(words) <= MAX_ITEM_WORDS and not _NOT_ITEM.search(text) and not _PREPOSITION.match(text)


def _list_before(clause: str) -> tuple[int | None, int]:
    """The list ending at the end of `clause` (the text before an " or "): where it begins, right after
    a lead word (None where no lead opens it), and how many items it has before the " or "."""
    parts = clause.split(", ")
    items = 0
    for back in range(len(parts) - 1, -1, -1):
        part = parts[back]
        leads = [m for m in re.finditer(r"\b(\w+)\s+", part) if m.group(1).lower() in _LEADS]
        if leads and _item(part[leads[-1].end() :]):
            return sum(len(p) + 2 for p in parts[:back]) + leads[-1].end(), items + 1
        if not _item(part):
            return None, items
        items += 1
    return None, items


def _or_lists(text: str) -> list[tuple[int | None, int, int]]:
    """Each list of alternatives joined by "or" in `text` where every item counts as an alternative:
    (where it begins after its lead word or None, how many items come before the " or ", where the
    " or " is)."""
    found: list[tuple[int | None, int, int]] = []
    for m in re.finditer(r",?\s+or\s+", text):
        after = text[m.end() :]
        nxt = after.split(maxsplit=1)[0].lower().strip(",.;") if after.split() else ""
        if not nxt or _RANGE_AFTER.match(after) or nxt in _SUBJECTS | _CLAUSE_VERBS or nxt in IMPERATIVES:
            continue
        if re.search(r"\d\s*$|\b(?:one|two|three|four|five)\s*$", text[: m.start()], re.IGNORECASE):
            continue  # "one or two cups", "four or five glucose tablets"
        clause_at = max((c.end() for c in _CLAUSE_END.finditer(text, 0, m.start())), default=0)
        clause = text[clause_at : m.start()]
        if _EXAMPLES.search(clause) or (text.startswith(_PROHIBITING) and clause_at == 0):
            continue  # examples need not be named; every item of a prohibition counts
        start, items = _list_before(clause)
        if items < 2 and m.group().startswith(","):
            continue  # "A, or B": two clauses, not a list
        negated = _NEGATED.search(clause if start is None else clause[:start])
        if not negated and items:
            found.append((None if start is None else clause_at + start, items, m.start()))
    return found


def at_least_one_of(text: str) -> str:
    """`text` (a positive criterion) with "at least one of" before each list of alternatives that a
    lead word opens."""
    starts = [start for start, _, _ in _or_lists(text) if start is not None]
    for at in sorted(set(starts), reverse=True):
        if not _MARKED.search(text[max(0, at - 20) : at]):
            text = f"{text[:at]}{AT_LEAST} {text[at:]}"
    return text


def bare_lists(text: str) -> list[str]:
    """The "A, B or C" lists (three items or more) of positive criterion `text` that say neither "at
    least one of" nor "all of"/"each of" (outside example clauses and avoid/stop/do-not clauses, where
    every item counts): the words of each, up to its " or "."""
    if _MARKED.search(text):
        return []
    out = []
    for start, items, at in _or_lists(text):
        if items >= 2:
            begin = start if start is not None else text.rfind(" ", 0, max(0, text.rfind(",", 0, at) - 1))
            out.append(text[max(0, begin) : at].strip())
    return out
