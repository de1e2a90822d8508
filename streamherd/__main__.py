from streamherd.errors import end_at_signals_while_starting

end_at_signals_while_starting()   # before the command's imports

from streamherd.cli import main  # noqa: E402

main()
