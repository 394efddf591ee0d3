"""Parsers of the CoNLL token files: CoNLL-2003 NER (Casimir) and CoNLL-2005 SRL (AGM).

Tokens are stored flat as unicode arrays; ``offsets`` (sentences + 1,) int64 delimits the
sentences and ``part`` (sentences,) names the split each sentence comes from.
"""

from __future__ import annotations

import gzip
from pathlib import Path

import numpy as np

from structpred.data.tables import lines
from structpred.errors import DataError

CONLL03_PARTS = (("train", "eng.train.gz"), ("testa", "eng.testa.gz"), ("testb", "eng.testb.gz"))


def _sentences(path: Path, ncols: int | None, skip_docstart: bool = False):
    """Yield sentences (lists of field lists) of a blank-line separated column file."""
    sent: list[list[str]] = []
    for no, line in lines(path):
        if not line.strip():
            if sent:
                yield sent
                sent = []
            continue
        f = line.split()
        if skip_docstart and f[0] == "-DOCSTART-":
            continue
        if ncols is not None and len(f) != ncols:
            raise DataError(f"{path}: line {no}: expected {ncols} columns, got {len(f)}")
        sent.append(f)
    if sent:
        yield sent


def parse_conll2003(raw: Path) -> dict[str, np.ndarray]:
    """eng.{train,testa,testb}.gz: ``word POS chunk NER`` per token, IOB1 tags kept as is.

    ``-DOCSTART-`` lines are skipped (the file's shifted separators then do not matter).
    Returns unicode ``words``, ``pos``, ``chunk``, ``tags`` over tokens, ``offsets``, and
    ``part`` in {train, testa, testb}.
    """
    cols: list[list[str]] = [[], [], [], []]
    lengths, part = [], []
    for name, fname in CONLL03_PARTS:
        for sent in _sentences(raw / fname, 4, skip_docstart=True):
            for c in range(4):
                cols[c].extend(t[c] for t in sent)
            lengths.append(len(sent))
            part.append(name)
    out = {k: np.asarray(v, dtype=str) for k, v in zip(("words", "pos", "chunk", "tags"), cols)}
    out["offsets"] = np.r_[0, np.cumsum(lengths)].astype(np.int64)
    out["part"] = np.asarray(part, dtype=str)
    return out


CONLL05_PARTS = (
    ("train", "train", [f"train.{s:02d}" for s in range(2, 22)]),
    ("devel", "devel", ["devel.24"]),
    ("test.wsj", "test.wsj", ["test.wsj"]),
    ("test.brown", "test.brown", ["test.brown"]),
)


def _column_file(path: Path) -> list[list[str]]:
    """Sentences of one CoNLL-2005 column file as lists of whitespace-joined token lines."""
    if not path.is_file():
        raise DataError(f"raw file {path} is missing")
    with gzip.open(path, "rt", encoding="utf-8") as fh:
        text = fh.read()
    sents, cur = [], []
    for line in text.split("\n"):
        s = line.split()
        if s:
            cur.append(s)
        elif cur:
            sents.append(cur)
            cur = []
    if cur:
        sents.append(cur)
    return sents


def _encode(values: dict[str, int]) -> np.ndarray:
    vocab = np.empty(len(values), dtype=object)
    for v, i in values.items():
        vocab[i] = v
    return vocab.astype(str)


def decode(arrays: dict[str, np.ndarray], column: str) -> np.ndarray:
    """The unicode token column ``column`` of a conll2005 view (``<column>_vocab[<column>]``)."""
    return arrays[f"{column}_vocab"][arrays[column]]


SRL_COLUMNS = ("words", "pos", "parse", "ne", "props")


def parse_conll2005(raw: Path) -> dict[str, np.ndarray]:
    """conll05st-release per-section column files, pasted like ``make-trainset.sh``.

    Kept per token: ``words`` (words/), ``pos`` and ``parse`` (synt.cha/: POS tag and
    Charniak full-parse bracket column), ``ne`` (ne/: named-entity brackets), ``props``
    (props/: the target-verb column followed by one argument-bracket column per predicate,
    joined by single spaces). Because fixed-width unicode arrays over the ~1.05 M tokens
    would take ~700 MB, each column is dictionary-encoded: ``<col>`` (tokens,) int64 indexes
    ``<col>_vocab`` (unicode, in order of first occurrence); :func:`decode` gives the
    strings. Plus ``offsets`` and ``part`` in {train, devel, test.wsj, test.brown}.
    Not kept: senses, synt.col2 (Collins parses), targets, null, dev-set.gz/test-set.gz
    (which duplicate the per-section files). Sentence and token counts of the four files
    must agree (DataError naming the file otherwise).
    """
    root = raw / "conll05st-release"
    vocab: dict[str, dict[str, int]] = {c: {} for c in SRL_COLUMNS}
    ids: dict[str, list[int]] = {c: [] for c in SRL_COLUMNS}
    lengths, part = [], []
    for pname, folder, stems in CONLL05_PARTS:
        for stem in stems:
            files = {kind: root / folder / kind / f"{stem}.{kind}.gz"
                     for kind in ("words", "synt.cha", "ne", "props")}
            cols = {kind: _column_file(p) for kind, p in files.items()}
            ref = [len(s) for s in cols["words"]]
            for kind, sents in cols.items():
                if [len(s) for s in sents] != ref:
                    raise DataError(
                        f"{files[kind]}: sentence/token structure differs from {files['words']}"
                    )
            for si, (sw, sc, sn, sp) in enumerate(
                zip(cols["words"], cols["synt.cha"], cols["ne"], cols["props"])
            ):
                for tw, tc, tn, tp in zip(sw, sc, sn, sp):
                    if len(tw) != 1 or len(tc) != 2 or len(tn) != 1 or len(tp) != len(sp[0]):
                        raise DataError(
                            f"{root / folder}/*/{stem}.*.gz: sentence {si + 1}: malformed token "
                            f"{tw} / {tc} / {tn} / {tp}"
                        )
                    for c, v in zip(SRL_COLUMNS, (tw[0], tc[0], tc[1], tn[0], " ".join(tp))):
                        d = vocab[c]
                        ids[c].append(d.setdefault(v, len(d)))
                lengths.append(len(sw))
                part.append(pname)
    out: dict[str, np.ndarray] = {}
    for c in SRL_COLUMNS:
        out[c] = np.asarray(ids[c], dtype=np.int64)
        out[f"{c}_vocab"] = _encode(vocab[c])
    out["offsets"] = np.r_[0, np.cumsum(lengths)].astype(np.int64)
    out["part"] = np.asarray(part, dtype=str)
    return out
