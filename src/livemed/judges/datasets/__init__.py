"""Loaders for the benchmarks judge validation builds pairs from. Each takes a path (the dataset's
folder as laid out in `../shared/data`, or its main file) and yields items, or an `InputFileError`
naming file:line for a bad row (the rest load)."""

from __future__ import annotations

from collections.abc import Callable, Iterator
from dataclasses import dataclass
from pathlib import Path

from livemed.errors import InputFileError, UnknownNameError
from livemed.judges.datasets import choice, medcalc, pico, pubmedqa
from livemed.judges.datasets.items import CalcItem, ChoiceItem, Item, PicoItem, item_group
from livemed.records.judging import Family

Loader = Callable[[Path], Iterator[Item | InputFileError]]


@dataclass(frozen=True)
class Dataset:
    name: str
    family: Family
    licence: str
    load: Callable[[Path | None], Iterator[Item | InputFileError]]


def _needs_path(name: str, loader: Loader) -> Callable[[Path | None], Iterator[Item | InputFileError]]:
    def load(path: Path | None) -> Iterator[Item | InputFileError]:
        if path is None:
            raise InputFileError(name, f"--path is required for {name} (its folder or main file)")
        return loader(path)

    return load


PROJECT_PICO = "MIT (project-made spans over PubMedQA abstracts, MIT)"
DATASETS: dict[str, Dataset] = {
    "pubmedqa": Dataset("pubmedqa", "atomic", "MIT", _needs_path("pubmedqa", pubmedqa.load)),
    "medqa": Dataset("medqa", "atomic", "MIT", _needs_path("medqa", choice.load_medqa)),
    "medbullets": Dataset(
        "medbullets",
        "atomic",
        "user-supplied (MedBullets: no licence stated)",
        _needs_path("medbullets", choice.load_medbullets),
    ),
    "medcalc": Dataset(
        "medcalc", "decomposable", "CC BY-SA 4.0 (share-alike)", _needs_path("medcalc", medcalc.load)
    ),
    "pico": Dataset("pico", "decomposable", PROJECT_PICO, pico.load),
}


def dataset(name: str) -> Dataset:
    try:
        return DATASETS[name]
    except KeyError:
        raise UnknownNameError("dataset", name, DATASETS) from None


def licence_of(name: str, path: Path | None) -> str:
    """The licence pairs built from this copy carry (a user's PICO file or EBM-NLP folder is theirs)."""
    if name == "pico" and path is not None:
        return "user-supplied (EBM-NLP: licence unstated)" if path.is_dir() else "user-supplied"
    return dataset(name).licence


__all__ = [
    "DATASETS",
    "CalcItem",
    "ChoiceItem",
    "Dataset",
    "Item",
    "PicoItem",
    "dataset",
    "item_group",
    "licence_of",
]
