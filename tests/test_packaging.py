"""Packaging: every package folder is listed, so a non-editable ``pip install .`` imports it all."""
import pathlib
import subprocess
import sys
import tomllib

ROOT = pathlib.Path(__file__).resolve().parents[1]


def test_every_package_folder_is_listed_in_pyproject():
    cfg = tomllib.loads((ROOT / "pyproject.toml").read_text())["tool"]["setuptools"]
    listed = set(cfg["packages"])
    found = set()
    for pkg, folder in cfg["package-dir"].items():
        base = ROOT / folder
        for init in base.rglob("__init__.py"):
            rel = init.parent.relative_to(base)
            found.add(".".join([pkg, *rel.parts]))
    missing = found - listed
    assert not missing, f"add to [tool.setuptools] packages: {sorted(missing)}"


def test_cli_entry_point_runs():
    out = subprocess.run([sys.executable, "-m", "metaroce", "--help"], capture_output=True, text=True)
    assert out.returncode == 0 and "decode" in out.stdout
