"""Word tables, written by hand (no downloads): spelling, synonyms, drugs, weights, stop words, negations.

The word tools that read them are in `common/text.py`; the lexical grader (`grade/lexical.py`) weighs
its words with them.

- `american`: British → American spelling ("diarrhoea" → "diarrhea", "paediatric" → "pediatric").
- `SYNONYMS`: one canonical word per group: brand names → the generic drug ("Lexapro" → escitalopram),
  plurals of abbreviations ("ssris" → "ssri") and a few lay ↔ clinical words ("drowsiness",
  "sleepiness" → "sedation"; "doctor", "provider" → "physician"; "seek", "see" → "consult").
- `DRUGS`: generic drug names (after folding). A drug the criterion names and the response does not is a
  mismatch, not a near miss.
- `GENERIC`: words common to nearly every medical statement ("treatment", "symptoms", "doctor"): they count
  for less than the words that say what a statement is about.
- `STOPWORDS`, `BOILERPLATE`, `NEGATIONS`: what is not a content word of a criterion or a response
  (function words, the rubric's own verbs such as "advises", negation cues; `text.content_words`'
  default), and the cues `text.negated` counts.
- `FUNCTION_WORDS`, `NORMALISED_NEGATIONS`: English function words, and negation cues as normalised text
  spells them ("don't" → "don"): what grounding and the evidence query leave out of a text's words.
"""

from __future__ import annotations


def _split(text: str) -> frozenset[str]:
    return frozenset(text.split())


def _groups(text: str) -> dict[str, str]:
    """`canonical: variant variant ...` lines → {variant: canonical}."""
    table: dict[str, str] = {}
    for line in text.strip().splitlines():
        canonical, _, variants = line.partition(":")
        for variant in variants.split():
            table[variant] = canonical.strip()
    return table


_SPELLING_INFIX = (("oea", "ea"), ("aem", "em"), ("paed", "ped"), ("isation", "ization"))
_SPELLING_SUFFIX = (("ise", "ize"), ("our", "or"), ("tre", "ter"))


def american(word: str) -> str:
    """British spelling folded to American: diarrhoea, haemorrhage, paediatric, oedema, tumour, centre."""
    for old, new in _SPELLING_INFIX:
        if old in word:
            word = word.replace(old, new)
    if word.startswith("oe") and len(word) > 5:
        word = word[1:]
    for old, new in _SPELLING_SUFFIX:
        if word.endswith(old) and len(word) > len(old) + 2:
            return word[: -len(old)] + new
    return word


SYNONYMS = _groups(
    """
    escitalopram: lexapro cipralex
    sertraline: zoloft
    fluoxetine: prozac
    citalopram: celexa
    paroxetine: paxil
    bupropion: wellbutrin zyban
    venlafaxine: effexor
    duloxetine: cymbalta
    trazodone: desyrel
    buspirone: buspar
    alprazolam: xanax
    lorazepam: ativan
    diazepam: valium
    clonazepam: klonopin
    zolpidem: ambien
    hydroxyzine: atarax vistaril
    diphenhydramine: benadryl
    cetirizine: zyrtec
    loratadine: claritin
    fexofenadine: allegra
    doxylamine: unisom
    acetaminophen: paracetamol tylenol
    ibuprofen: advil motrin nurofen
    naproxen: aleve naprosyn
    aspirin: asa
    omeprazole: prilosec
    esomeprazole: nexium
    pantoprazole: protonix
    famotidine: pepcid
    ranitidine: zantac
    loperamide: imodium
    ondansetron: zofran
    metformin: glucophage
    levothyroxine: synthroid levoxyl
    lisinopril: zestril prinivil
    amlodipine: norvasc
    losartan: cozaar
    atorvastatin: lipitor
    simvastatin: zocor
    warfarin: coumadin
    apixaban: eliquis
    rivaroxaban: xarelto
    clopidogrel: plavix
    furosemide: lasix
    hydrochlorothiazide: hctz
    prednisone: deltasone
    amoxicillin: amoxil
    azithromycin: zithromax zpak
    ciprofloxacin: cipro
    levofloxacin: levaquin
    doxycycline: vibramycin doryx
    cephalexin: keflex
    nitrofurantoin: macrobid macrodantin
    metronidazole: flagyl
    clindamycin: cleocin
    sulfamethoxazole: bactrim septra
    fluconazole: diflucan
    acyclovir: zovirax
    valacyclovir: valtrex
    oseltamivir: tamiflu
    ivermectin: stromectol
    permethrin: elimite nix
    tamsulosin: flomax
    finasteride: proscar propecia
    sildenafil: viagra
    tadalafil: cialis
    gabapentin: neurontin
    pregabalin: lyrica
    tramadol: ultram
    oxycodone: oxycontin percocet
    sumatriptan: imitrex
    montelukast: singulair
    albuterol: salbutamol ventolin proair
    methylphenidate: ritalin concerta
    amphetamine: adderall
    isotretinoin: accutane
    medroxyprogesterone: depo-provera
    contraceptive: contraception contraceptives
    sedation: sedative sedating drowsiness drowsy sleepiness sleepy somnolence
    physician: doctor doctors physicians clinician provider providers gp professional professionals
    consult: seek see contact visit consulting
    care: attention evaluation evaluated
    ssri: ssris
    nsaid: nsaids anti-inflammatory
    uti: utis
    std: stds sti stis
    gi: gastrointestinal
    bp: pressure
    """
)

DRUGS = frozenset(
    {value for value in SYNONYMS.values()}
    - {"contraceptive", "sedation", "physician", "consult", "care", "ssri", "nsaid", "uti", "std", "gi", "bp"}
    | _split(
        """
        amitriptyline nortriptyline mirtazapine quetiapine olanzapine risperidone aripiprazole lithium
        lamotrigine valproate carbamazepine topiramate levetiracetam propranolol metoprolol atenolol
        carvedilol spironolactone insulin glipizide sitagliptin empagliflozin semaglutide liraglutide
        penicillin cefuroxime ceftriaxone erythromycin clarithromycin minocycline tetracycline
        trimethoprim vancomycin terbinafine clotrimazole miconazole nystatin hydrocortisone
        dexamethasone methylprednisolone triamcinolone budesonide fluticasone mometasone codeine
        morphine hydrocodone naloxone colchicine allopurinol febuxostat methotrexate hydroxychloroquine
        melatonin mupirocin tretinoin benzoyl minoxidil estradiol progesterone testosterone letrozole
        tamoxifen misoprostol mifepristone heparin enoxaparin dabigatran digoxin nitroglycerin
        """
    )
)

GENERIC = _split(
    """
    treatment treat treated treating treatments therapy symptom symptoms sign signs condition conditions
    cause causes caused causing help helps helpful risk risks use used uses using common commonly
    include includes usually often people person individual individuals physician medical medication
    medications medicine medicines drug drugs health healthcare important effect effects increase
    increased reduce reduced case cases type types time times day days certain several other others
    some many well good known consider considered need needed needs important recommended make
    help however although likely possible possibly generally typically
    """
)


NEGATIONS = _split(
    "not no never avoid avoids avoided avoiding without don't dont doesn't shouldn't mustn't cannot can't "
    "stop stopping neither nor none refrain discontinue allergy allergies allergic"
)
STOPWORDS = _split(
    "a an the and or of to in on for with at by from as is are be been being it its this that these those "
    "your you yours patient patient's their they them he she his her if then than so such any all some "
    "should would could can may might must will shall do does did has have had about into over under very "
    "more most less also only just e.g i.e etc per which who whom what when where how why"
)
BOILERPLATE = _split(
    "response model answer reply assistant mentions mention mentioned mentioning states state stated says "
    "advises advise advised recommends recommend recommended recommending suggests suggest suggested "
    "includes include including explains explain explained notes note tells tell told informs inform "
    "correctly clearly explicitly appropriately identifies identify discusses discuss provides provide "
    "indicates indicate encourages encourage user"
)
FUNCTION_WORDS = _split(
    "a an the and or but if of to in on at by for from with as is are was were be been being am do does did "
    "have has had i you he she it we they me him her us them my your his its our their this that these those "
    "there here so than then very just also any some can could should would will may might must shall "
    "about into over after before up out get got s t"
)
NORMALISED_NEGATIONS = _split(
    "not no never none nor neither without cannot avoid avoids avoided avoiding "
    "don doesn didn isn aren wasn weren won shouldn couldn wouldn mustn haven hasn"
)
