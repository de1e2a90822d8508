"""``python -m streamherd`` and the ``streamherd`` console script (pyproject's
[project.scripts]): a signal while the command starts ends it with 128 + n and one line, so
the handler is set before the command line's imports."""
from streamherd.errors import end_at_signals_while_starting


def run():
    end_at_signals_while_starting()   # before the command's imports
    from streamherd.cli import main

    main()


if __name__ == "__main__":
    run()
