"""What the command line relies on in typer's private code (pinned in pyproject.toml): these
tests fail when a typer release moves it, before a user sees pydantic's start-up cost again."""
import typer.core

from streamherd import cli_coercion


def test_plain_conversion_hook_applies_to_the_installed_typer():
    cli_coercion.install()
    assert getattr(typer.core.build_runtime_param, "plain", False), (
        "typer.core.build_runtime_param is no longer the hook cli_coercion replaces; adapt "
        "cli_coercion to this typer or lower the typer pin")


def test_plain_conversion_converts_and_reports_like_typer(run_cli):
    proc = run_cli("train", "-b", "x1", "--quiet")
    assert proc.returncode == 2
    assert "Input should be a valid integer" in proc.stderr and "Traceback" not in proc.stderr
