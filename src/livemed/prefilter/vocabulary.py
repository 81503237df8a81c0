"""Medical relevance by vocabulary: ICD-10-CM title words (simple-icd-10-cm) plus the record's MeSH terms.

The term list is built once from every ICD-10-CM title outside the external-cause and
health-status chapters (V-Z), minus generic words ("left", "initial", "head", …), plus a few
clinical words ICD does not use as titles ("diagnosis", "medication", …), the lay words and phrases
patients write on forums ("dizzy", "my period", "threw up", common drug names; matched as written) and
any configured extra terms. Matching is one Aho-Corasick pass (pyahocorasick) over the lowercased text,
on word boundaries, ICD and clinical terms with the usual English endings (-s, -es, -ed, -ing:
"wheezing", "diagnosed"); a document passes with at least `min_hits`
(default 3) distinct terms, where each MeSH descriptor the record carries counts as one.
"""

from __future__ import annotations

import hashlib
import os
import re
import warnings
from functools import lru_cache
from pathlib import Path

import ahocorasick

from livemed.prefilter.base import reject
from livemed.records import Doc, Rejection


def _split(text: str) -> list[str]:
    return text.split()


GENERIC = frozenset(
    _split(
        """
    other unspecified specified with without from into including except following involving affecting
    primarily encounter subsequent initial sequela routine delayed healing elsewhere classified
    undetermined intentional unintentional accidental suspected system process device devices agents
    extension stage organ organs wall damage drugs foreign mechanical external internal central primary
    secondary lesser greater multiple single bilateral abnormal separation breakdown displacement
    procedure assault left right head back hand body side front base area ring index little great open
    closed level effect care loss contact stress hours minutes major current complete first second third
    fourth fifth middle lower upper part parts site sites region type types labor pressure nail cord
    reaction due than used means person place state status problem problems history family related
    certain more less long short high late early means condition conditions abnormalities nonspecific
    findings health services after before during same function functions time times use
        """
    )
)
# Everyday English words that happen to occur in ICD-10-CM titles ("that", "night", "feeling", …).
COMMON_ENGLISH = frozenset(
    _split(
        """
    absence absent acting action active adult adults affect african allied alone altered ambient animal
    animals another applied around arrival aspect attack attacks attempt balance bearing being best between
    biting black blue border boston both branch break breaks bridges brief broken brown buried cannot cause
    caused causes causing center change changes channel children class classic clear closing cloudy cluster
    codes color common complex concern conduct content context contour control correct count cracked created
    crying crystal daily dark decline deep defect defects defined degree delay density desire detail direct
    distant double down drop dynamic earth eastern eaten eating element equal errors event events excess
    exclude exposed extent extreme factor factors failed failure falling false feeding feeling female fibers
    field finding fish floor flying food forced forces forest form forms found free fruits full fully gain
    gender general german given glasgow global grand grey group growth habit hammer hanging hard harmful
    having healed hearing heavy height hidden hole hour human hungry imposed impulse induced inertia infancy
    kissing known lack lacking large larger lasting latent layer layers lead legal length levels life light
    limited line linear linens lines liquids local locked loose lying magnum main male margin margins marine
    marked marker markers mass massive matter mature maximum medical medium memory mention metal metals mild
    minimal minor minus missed mixed mode monster months morning most mother motion movement narrow native
    natural need neglect never night noise none normal north notched noted novel number numbers object only
    opening organic origin outcome outlet output over overlap overuse packing page paints passage passive
    pattern paving percent period phantom phase pillar pillow planned plant plants plastic plate plateau
    plus pointes poor portion position post present prior product profile pure purging raised range rapidly
    rare rate reading reason rebound replaced recent reduced regions regular release removal repair rest
    result
    results return reverse rich rising river role roof root roots round running saddle scale scanty score
    section sector seed seeds segment self senses seventh shape shared shift sick sided signs silent similar
    simple sixth size slight slow small smaller smooth social solid something sound sounds source south
    space spacing spatial special species specific split spot spots stable stated states static stem storm
    strange streak stream struck studies study sudden super support surface suspect systems taken tall
    tearing tension term test that theater their threat three through tight together total trapped tree
    trial trigger triplet true typical unable under undue unequal unknown urban usually utility vacuum
    valley variant various vehicle versus very viable violent visible void wake walking warm water wear
    webbed weeks west western white whole wide widow wild window within words work worries written yellow
    young zero zone
        """
    )
)
CLINICAL = _split(
    """
    diagnosis diagnosed symptom symptoms medication medications prescribed prescription dose dosage
    treatment treated therapy surgery surgical physician doctor clinic hospital patient biopsy
    antibiotic antibiotics ultrasound radiograph scan
    """
)
# How patients say it: words ICD titles do not use, or that the common-English list removes. They are
# matched as written (no inflections); words that are everyday English too ("period", "racing",
# "tired", "sugar") only count inside a phrase.
LAY = _split(
    """
    dizzy dizziness lightheaded faint fainted fainting menstrual cramps clots spotting bleeding bleed
    nausea nauseous vomit vomiting vomited puke diarrhea diarrhoea constipated constipation bloated
    bloating heartburn reflux cough coughing coughed wheeze wheezing breathless sneezing phlegm mucus
    fever feverish chills sweats rash rashes itchy itching hives swollen swelling lump lumps bruise
    bruised bruising soreness ache aches aching headache headaches migraine migraines numbness tingling
    throbbing palpitations fatigue insomnia anxious anxiety panic depressed depression suicidal
    pregnant pregnancy miscarriage contraception menopause perimenopause breastfeeding stomach belly
    bowel bowels urine urinating peeing bladder kidney kidneys liver lungs chest throat tonsils sinus
    sinuses gums toothache earache eyesight blurry blurred vision joints knee knees spine ankle wrist hip
    shoulder muscle muscles tendon ligament sprain sprained fracture fractured infection infected inflamed
    inflammation pus wound stitches scar cholesterol thyroid hormone hormones allergy allergic asthma
    inhaler eczema acne psoriasis diabetes diabetic insulin tablets pills meds medicine medicines
    antidepressant antidepressants steroid steroids vaccine vaccinated doctor doctors gp nurse
    pharmacist ambulance referral specialist dermatologist cardiologist gynaecologist gynecologist
    neurologist x-ray xray mri bloodwork
    ibuprofen paracetamol acetaminophen aspirin tylenol advil naproxen diclofenac codeine tramadol
    morphine gabapentin amoxicillin doxycycline azithromycin ciprofloxacin clindamycin penicillin
    metformin lisinopril amlodipine losartan atorvastatin simvastatin levothyroxine prednisone
    prednisolone warfarin apixaban metoprolol propranolol omeprazole sertraline fluoxetine citalopram
    escitalopram antihistamine cetirizine loratadine salbutamol albuterol methotrexate
    """
)
LAY_PHRASES = (
    "my period",
    "my periods",
    "heavy period",
    "heavy periods",
    "period pain",
    "missed period",
    "heart racing",
    "heart races",
    "heart is racing",
    "heart pounding",
    "heart is pounding",
    "pounding headache",
    "stabbing pain",
    "burning sensation",
    "burning pain",
    "joint pain",
    "threw up",
    "throw up",
    "throwing up",
    "blood sugar",
    "blood sugars",
    "always tired",
    "tired all the time",
    "the er",
    "to the er",
    "emergency room",
    "a e",
    "urgent care",
)
# Words ICD titles use that, in forum text, say nothing medical ("the brake pads", "a car battery").
NOT_MEDICAL = frozenset(
    _split(
        """
    otherwise battery pads brake brakes engine dense temperature transfer block smell bake baked heat
    drain drains draining
        """
    )
)
_WORD = re.compile(r"[a-z][a-z'-]{3,}")
_TOKEN = re.compile(r"[\w'-]+")


@lru_cache(maxsize=1)
def icd10_terms() -> frozenset[str]:
    """Distinct words (4+ letters) of ICD-10-CM titles in chapters A-U, generic words removed.

    Reading the package's tables takes seconds, so the words are kept in the cache folder
    (`livemed.cache_dir`), one file per package version and word lists; a missing or unreadable
    file is made again."""
    path = _terms_file()
    try:
        return frozenset(path.read_text(encoding="utf-8").split())
    except OSError:
        pass
    terms = _read_icd10_terms()
    try:
        path.parent.mkdir(parents=True, exist_ok=True)
        partial = path.with_suffix(f".{os.getpid()}.tmp")
        partial.write_text("\n".join(sorted(terms)) + "\n", encoding="utf-8")
        partial.replace(path)  # atomic: a reader sees the whole file or none
    except OSError:
        pass  # a read-only cache folder: read the tables each time
    return terms


def _terms_file() -> Path:
    from importlib.metadata import version

    from livemed.cache_dir import default_cache_dir

    lists = "\n".join(sorted(GENERIC | COMMON_ENGLISH | NOT_MEDICAL)) + _WORD.pattern
    key = hashlib.sha256(lists.encode()).hexdigest()[:12]
    return default_cache_dir() / "vocabulary" / f"icd10-terms-{version('simple_icd_10_cm')}-{key}.txt"


def _read_icd10_terms() -> frozenset[str]:
    with warnings.catch_warnings():  # the package reads its bundled list with a deprecated API
        warnings.simplefilter("ignore", DeprecationWarning)
        import simple_icd_10_cm as icd

    terms: set[str] = set()
    for code in icd.get_all_codes(False):
        if code[0] in "VWXYZ":
            continue
        terms.update(_WORD.findall(icd.get_description(code).lower()))
    adverbs = {term for term in terms if term.endswith("ly")}  # "properly", "normally": never medical signals
    return frozenset(terms - GENERIC - COMMON_ENGLISH - NOT_MEDICAL - adverbs)


@lru_cache(maxsize=8)
def build_automaton(extra: tuple[str, ...] = ()) -> ahocorasick.Automaton:
    """Keys are " term " and its inflections, space-delimited, so matches fall on word boundaries."""
    automaton = ahocorasick.Automaton()
    inflected = icd10_terms() | set(CLINICAL) | {" ".join(_TOKEN.findall(t.lower())) for t in extra}
    as_written = (set(LAY) | {" ".join(_TOKEN.findall(p)) for p in LAY_PHRASES}) - inflected
    forms = {form: term for term in inflected if term for form in inflections(term)}
    forms.update({term: term for term in as_written})
    for form, term in sorted(forms.items()):
        automaton.add_word(f" {form} ", term)
    automaton.make_automaton()
    return automaton


def inflections(term: str) -> set[str]:
    """The term and its regular forms: -s/-es, -ed, -ing (a final -e dropped: "wheeze" → "wheezing")."""
    stem = term[:-1] if term.endswith("e") else term
    return {term, f"{term}s", f"{term}es", f"{stem}ed", f"{stem}ing"}


def medical_terms(text: str, automaton: ahocorasick.Automaton, enough: int | None = None) -> set[str]:
    """Distinct vocabulary terms in `text` (whole words, plural -s allowed); stops once `enough` are found."""
    padded = f" {' '.join(_TOKEN.findall(text.lower()))} "
    found: set[str] = set()
    for _, term in automaton.iter(padded):
        found.add(term)
        if enough is not None and len(found) >= enough:
            break
    return found


class VocabularyFilter:
    name = "vocabulary"

    def __init__(self, min_hits: int = 3, extra_terms: list[str] | None = None) -> None:
        self.min_hits = min_hits
        self.extra_terms = tuple(extra_terms or ())

    @property
    def automaton(self) -> ahocorasick.Automaton:
        """Built (ICD-10 tables imported) on the first document checked, not when the filter is made:
        a command that checks no document (an update with nothing new) never pays for it."""
        return build_automaton(self.extra_terms)

    def __call__(self, doc: Doc) -> Doc | Rejection:
        mesh = doc.metadata.get("mesh") or []
        mesh_hits = len(mesh) if isinstance(mesh, list) else 0
        needed = max(0, self.min_hits - mesh_hits)
        found = medical_terms(f"{doc.title}\n{doc.text}", self.automaton, enough=needed) if needed else set()
        hits = len(found) + mesh_hits
        if hits < self.min_hits:
            shown = ", ".join(sorted(found)) or "none"
            return reject(doc, "not_medical", f"{hits} medical term(s) ({shown}), need {self.min_hits}")
        return doc
