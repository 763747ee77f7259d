"""Every failure of every subcommand is one stderr line and a non-zero exit (MR-CLI-001..003)."""
import pytest

from metaroce import cli
from metaroce.commands import spec as spec_command


def _run_raising(monkeypatch, capsys, exc):
    def run(args):
        raise exc
    monkeypatch.setattr(spec_command, "run", run)
    status = cli.main(["spec"])
    err = capsys.readouterr().err
    return status, err


@pytest.mark.parametrize("exc, status, text", [
    (cli.CliError("no such file: x.toml"), 2, "metaroce spec: error: no such file: x.toml"),
    (ValueError("bad width"), 2, "metaroce spec: error: bad width"),
    (MemoryError(), 2, "metaroce spec: error: out of memory"),
    (KeyboardInterrupt(), 130, "metaroce spec: interrupted"),
])
def test_user_errors_are_one_line(monkeypatch, capsys, exc, status, text):
    """MR-CLI-001, MR-CLI-003."""
    got_status, err = _run_raising(monkeypatch, capsys, exc)
    assert got_status == status
    assert err.splitlines() == [text]


def test_closed_pipe_is_quiet(monkeypatch, capsys):
    """MR-CLI-003: `metaroce ... | head` ends with exit 0 and nothing on stderr."""
    assert _run_raising(monkeypatch, capsys, BrokenPipeError()) == (0, "")


def test_bug_is_one_line_naming_where(monkeypatch, capsys):
    """MR-CLI-002: an unexpected exception gives exit 3 and one line with type, message, file:line."""
    monkeypatch.delenv("METAROCE_DEBUG", raising=False)
    status, err = _run_raising(monkeypatch, capsys, KeyError("slot"))
    assert status == 3
    [line] = err.splitlines()
    assert line.startswith("metaroce spec: internal error: KeyError: 'slot' (test_cli.py:")
    assert "Traceback" not in err


def test_debug_reraises(monkeypatch, capsys):
    """MR-CLI-002: METAROCE_DEBUG=1 lets a developer see the traceback."""
    monkeypatch.setenv("METAROCE_DEBUG", "1")
    with pytest.raises(KeyError):
        _run_raising(monkeypatch, capsys, KeyError("slot"))


def test_bench_bad_argument_is_one_line(capsys):
    """MR-CLI-001 on a real subcommand: argparse's own errors go to stderr with exit 2."""
    with pytest.raises(SystemExit) as e:
        cli.main(["bench", "no-such-bench"])
    assert e.value.code == 2
    err = capsys.readouterr().err
    assert "Traceback" not in err
    assert err.splitlines()[-1].startswith("metaroce bench: error: argument")
