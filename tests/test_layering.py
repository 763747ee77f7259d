"""The golden model never depends on the RTL it judges (DEVELOPERS.md, one source of truth):
no module under models/ imports metaroce.hdl, directly or relatively."""
import ast
from pathlib import Path

MODELS = Path(__file__).resolve().parent.parent / "models"


PACKAGE = ("metaroce", "models")


def _imports(path):
    """Absolute names of every module (and "from" name) that ``path`` imports."""
    tree = ast.parse(path.read_text(), filename=str(path))
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            for alias in node.names:
                yield alias.name
        elif isinstance(node, ast.ImportFrom):
            base = list(PACKAGE[:len(PACKAGE) - node.level + 1]) if node.level else []
            mod = ".".join(base + ([node.module] if node.module else []))
            yield mod
            for alias in node.names:          # "from .. import hdl"
                yield f"{mod}.{alias.name}"


def _is_hdl(name):
    return name == "metaroce.hdl" or name.startswith("metaroce.hdl.")


def test_models_never_import_hdl():
    files = sorted(MODELS.glob("*.py"))
    assert files, MODELS
    bad = [f"{f.name}: {name}" for f in files for name in _imports(f) if _is_hdl(name)]
    assert not bad, "models/ imports hdl/: " + ", ".join(bad)


def test_checker_sees_a_violation(tmp_path):
    # The check itself must be able to fail.
    p = tmp_path / "x.py"
    p.write_text("from ..hdl.parser import Parser\nimport metaroce.hdl.icrc\nfrom .. import hdl\n")
    names = [n for n in _imports(p) if _is_hdl(n)]
    assert set(names) == {"metaroce.hdl.parser", "metaroce.hdl.parser.Parser", "metaroce.hdl.icrc",
                          "metaroce.hdl"}, names
