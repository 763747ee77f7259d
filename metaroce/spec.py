"""Spec requirement IDs: where each is defined (docs/spec) and which tests cite it."""
import pathlib
import re

ID_RE = re.compile(r"\bMR-[A-Z]+-\d{3}\b")
# A citation may name several IDs of one prefix: ``MR-HW-020/021`` or a range ``MR-HW-030..033``.
CITE_RE = re.compile(r"\bMR-([A-Z]+)-(\d{3})((?:/\d{3})*)(?:\.\.(\d{3}))?")
# A definition is an ID in bold (``**MR-WIRE-071**``) at the start of a list item or paragraph.
DEF_RE = re.compile(r"\*\*(MR-[A-Z]+-\d{3})\b")


def repo_root():
    here = pathlib.Path(__file__).resolve().parent.parent
    return here if (here / "docs" / "spec").is_dir() else None


def defined_ids(spec_dir):
    """{id: file name} for every requirement defined in ``spec_dir``."""
    out = {}
    for md in sorted(pathlib.Path(spec_dir).glob("*.md")):
        for m in DEF_RE.finditer(md.read_text()):
            out.setdefault(m.group(1), md.name)
    return out


def expand_citations(text):
    """Every ID a text cites, with ``/`` lists and ``..`` ranges expanded."""
    ids = set()
    for m in CITE_RE.finditer(text):
        prefix, first, more, last = m.groups()
        nums = [int(first)] + [int(x) for x in more.split("/") if x]
        if last:
            nums += range(int(first), int(last) + 1)
        ids |= {f"MR-{prefix}-{n:03d}" for n in nums}
    return ids


def cited_ids(test_dir):
    """{id: set of test file names} for every ID cited in ``test_dir``."""
    out = {}
    for py in sorted(pathlib.Path(test_dir).rglob("*.py")):
        for i in expand_citations(py.read_text()):
            out.setdefault(i, set()).add(py.name)
    return out
