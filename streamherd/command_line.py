"""Commands declared as data: their options (flags, type, default, help, help group), read from
the command line with click's habits, and their help laid out by argparse.

A value-taking option takes the next word whatever it looks like (``-C -1e-3``, ``--classes
-1,0,1``), options and files mix in any order, ``--`` ends the options, and a flag is never
abbreviated. Every mistake is a UsageError: one line, exit 2. argparse (imported only for
``--help``) lays out the help's groups; the left column of each entry is written here, so
that every spelling of an option shows its value's name once (``-b, --bits BITS``).
"""
import shutil
from dataclasses import dataclass, field
from pathlib import Path
from collections.abc import Callable

HELP_FLAGS = ("-h", "--help")
_EXPECTED = {int: "a valid integer, unable to parse string as an integer",
             float: "a valid number, unable to parse string as a number"}


class UsageError(Exception):
    """A mistake on the command line of ``command`` (None: before the command's name)."""

    exit_code = 2

    def __init__(self, message, command=None):
        super().__init__(message)
        self.command = command

    def line(self):
        where = " ".join(filter(None, ("streamherd", self.command)))
        return f"{where}: {self} (see '{where} --help')"


class HelpAsked(Exception):
    """-h or --help: the command's help goes to standard output."""


@dataclass(frozen=True)
class Option:
    """``flags``: every spelling, the first named in messages (``vw``: those of them that are
    Vowpal Wabbit's, shown in the help's group of VW's spellings); ``type``: bool for a switch
    (no value; True when given, else False), else the conversion of its value (int, float,
    str, Path or a function raising ValueError); ``repeatable``: every value is kept, in a list
    (None when the flag is absent); ``expected``: what a bad value should have been, for the
    message; ``show_default``: the help ends with the default (when there is one); ``note``:
    the option is Vowpal Wabbit's and does nothing here but say this note (a harmless VW flag a
    script may carry); ``choices``: the values the shell's completion offers (the value is
    checked where it is used, with its own message)."""

    flags: tuple
    dest: str
    help: str
    type: Callable = str
    metavar: str = ""
    default: object = None
    repeatable: bool = False
    required: bool = False
    vw: tuple = ()
    expected: str = ""
    show_default: bool = True
    note: str = ""
    choices: tuple = ()

    @property
    def switch(self):
        return self.type is bool

    def convert(self, text):
        try:
            return self.type(text)
        except ValueError:
            expected = self.expected or _EXPECTED.get(self.type, "a valid value")
            shown = " / ".join(f"'{f}'" for f in self.flags)
            raise UsageError(f"Invalid value for {shown}: Input should be {expected}") from None

    def described(self):
        """The help text, with the default or [required]."""
        if self.required:
            return f"{self.help} [required]"
        if self.switch or self.default is None or not self.show_default:
            return self.help
        return f"{self.help} [default: {self.default}]"


@dataclass(frozen=True)
class Positional:
    """Positional arguments: ``many`` takes any number (a list), else exactly one."""

    dest: str
    metavar: str
    help: str
    many: bool = True


@dataclass
class Command:
    """A command's name, help and options in help groups (title, options); ``run`` is called
    with the parsed values (attributes named by each option's dest); ``hint``: the message for
    an unknown flag that deserves more than "No such option" (or None); ``clash``: what to add
    to a bad value's message for a flag that means something else in Vowpal Wabbit (or None);
    ``interrupted``: what Ctrl-C or SIGTERM left undone, when the command does not say more
    itself."""

    name: str
    help: str
    groups: list
    run: Callable
    positional: Positional = None
    hint: Callable = field(default=lambda flag: None)
    clash: Callable = field(default=lambda flag: None)
    interrupted: str = "interrupted"

    def __post_init__(self):
        dests = [o.dest for o in self.options] + [self.positional.dest if self.positional
                                                  else "command_line"]
        assert len(set(dests)) == len(dests) and "command_line" not in dests[:-1], dests
        assert "notes" not in dests, dests

    @property
    def options(self):
        return [option for _, options in self.groups for option in options]

    def parse(self, argv):
        """The values of ``argv`` (a SimpleNamespace; ``command_line``: ``argv`` itself;
        ``notes``: those of the options given that do nothing here), or a UsageError, or
        HelpAsked."""
        from types import SimpleNamespace

        try:
            values = read(self.options, self.positional, argv, self.hint, self.clash)
        except UsageError as e:
            e.command = self.name
            raise
        notes = [f"{o.flags[0]} (Vowpal Wabbit's) does nothing here: {o.note}"
                 for o in self.options if o.note and values[o.dest]]
        return SimpleNamespace(**values, command_line=list(argv), notes=notes)

    @property
    def usage(self):
        """The command's synopsis: ``streamherd train [OPTIONS] [FILES]...``."""
        positional = self.positional
        return f"streamherd {self.name} [OPTIONS]" + (
            "" if positional is None else
            f" [{positional.metavar}]..." if positional.many else f" {positional.metavar}")

    def help_text(self, width=None):
        positional = self.positional
        groups = [(title, [(_invocation(o), o.described()) for o in options
                           if set(o.flags) - set(o.vw)]) for title, options in self.groups]
        if positional is not None:
            groups[0][1].insert(0, (positional.metavar, positional.help))
        groups[-1][1].append((", ".join(HELP_FLAGS), "Show this message and exit."))
        spellings = [(_invocation(o, o.vw), f"Accepted; does nothing here: {o.note}" if o.note
                      else "= " + ", ".join(f for f in o.flags if f not in o.vw))
                     for o in self.options if o.vw]
        if spellings:
            groups.append(("Vowpal Wabbit's spellings", spellings))
        return laid_out(self.usage, self.help, groups, width)


def _invocation(option, flags=None):
    """The left column of an option's help entry: its spellings (those of ``flags``, else all
    but VW's), then its value's name once."""
    flags = ", ".join(flags or [f for f in option.flags if f not in option.vw])
    return flags if option.switch else f"{flags} {option.metavar or option.dest.upper()}"


def laid_out(usage, description, groups, width=None):
    """The help: usage, description, then each group's (left column, help) entries, laid out
    by argparse: an entry is an argument whose one spelling (an option's) or metavar (a
    positional's) is the whole left column."""
    import argparse

    width = width or min(shutil.get_terminal_size().columns, 100) - 2
    parser = argparse.ArgumentParser(
        usage=argparse.SUPPRESS, description=description.replace("%", "%%"), add_help=False,
        formatter_class=lambda prog: argparse.HelpFormatter(prog, max_help_position=32,
                                                            width=width))
    for g, (title, entries) in enumerate(groups):
        group = parser.add_argument_group(title)
        for k, (invocation, text) in enumerate(entries):
            text = text.replace("%", "%%")
            if invocation.startswith("-"):
                group.add_argument(invocation, dest=f"entry{g}_{k}", action="store_true",
                                   help=text)
            else:
                group.add_argument(f"entry{g}_{k}", metavar=invocation, help=text)
    return f"Usage: {usage}\n\n{parser.format_help()}"


# the value names of options and arguments that name a file: the shell completes paths there
PATH_METAVARS = ("FILE", "FILES", "MODEL", "TRAIN", "DIR")
SHELLS = ("bash", "zsh", "tcsh")


def completion_script(commands, shell, description=""):
    """The completion script of ``shell`` for ``streamherd``'s ``commands``: every command, its
    flags (each spelling), the values of those that declare ``choices``, and paths where an
    option or argument names a file. shtab writes it from an argparse parser built here from
    the declarations, so a new option completes with no edit."""
    import argparse

    import shtab

    if shell not in SHELLS:
        raise UsageError(f"No completion for the shell '{shell}'; give one of "
                         f"{', '.join(SHELLS)}", "completion")
    parser = argparse.ArgumentParser(prog="streamherd", description=description)
    parser.add_argument("--version", action="version", version="")
    subparsers = parser.add_subparsers(dest="command", metavar="COMMAND")
    for command in commands:
        sub = subparsers.add_parser(command.name, help=_escaped(command.help),
                                    description=_escaped(command.help))
        for option in command.options:
            if option.switch:
                sub.add_argument(*option.flags, dest=option.dest, action="store_true",
                                 help=_escaped(option.help))
                continue
            action = sub.add_argument(*option.flags, dest=option.dest,
                                      metavar=option.metavar or option.dest.upper(),
                                      choices=option.choices or None,
                                      help=_escaped(option.help))
            if option.type is Path or option.metavar in PATH_METAVARS:
                action.complete = shtab.FILE
        positional = command.positional
        if positional is not None:
            action = sub.add_argument(positional.dest, metavar=positional.metavar,
                                      nargs="*" if positional.many else None,
                                      help=_escaped(positional.help))
            if positional.metavar in PATH_METAVARS:
                action.complete = shtab.FILE
    return shtab.complete(parser, shell)


def _escaped(text):
    """``text`` as argparse's help formatting expects it (a literal % doubled)."""
    return text.replace("%", "%%")


def read(options, positional, argv, hint=lambda flag: None, clash=lambda flag: None):
    """dest -> value for ``options`` and ``positional`` from ``argv`` (see the module's
    docstring for the habits); values are converted once every word is read, so that an
    unknown flag is reported before a bad value, and -h before either."""
    by_flag = {flag: option for option in options for flag in option.flags}
    given, words, help_asked = [], [], False
    tokens = list(argv)
    while tokens:
        token = tokens.pop(0)
        if token == "--":
            words.extend(tokens)
            break
        if not token.startswith("-") or token == "-":
            words.append(token)
            continue
        if token.startswith("--"):
            flag, equals, attached = token.partition("=")
            attached = attached if equals else None
        else:
            flag, attached = token[:2], token[2:] or None
        if flag in HELP_FLAGS:
            help_asked = True
            continue
        option = by_flag.get(flag)
        if option is None:
            raise UsageError(hint(flag) or _no_such_option(flag, by_flag))
        if option.switch:
            if attached is not None and token.startswith("--"):
                raise UsageError(f"Option '{flag}' does not take a value.")
            if attached is not None:   # -tq: short switches run together
                tokens.insert(0, "-" + attached)
            given.append((option, True, flag))
            continue
        if attached is None:
            if not tokens:
                raise UsageError(f"Option '{flag}' requires an argument.")
            attached = tokens.pop(0)
        given.append((option, attached, flag))
    if help_asked:
        raise HelpAsked()
    values = {o.dest: None if o.repeatable else False if o.switch else o.default
              for o in options}
    for option, text, flag in given:
        try:
            value = True if option.switch else option.convert(text)
        except UsageError as e:
            meant = clash(flag)
            raise UsageError(f"{e}; {meant}" if meant else str(e)) from None
        if option.repeatable:
            values[option.dest] = [*(values[option.dest] or ()), value]
        else:
            values[option.dest] = value
    for option in options:
        if option.required and values[option.dest] is None:
            shown = " / ".join(f"'{f}'" for f in option.flags)
            raise UsageError(f"Missing option {shown}.")
    if positional is not None:
        if not positional.many and not words:
            raise UsageError(f"Missing argument '{positional.metavar}'.")
        values[positional.dest] = words if positional.many else words.pop(0)
        words = [] if positional.many else words
    if words:
        raise UsageError(f"Got unexpected extra argument(s) ({' '.join(words)})")
    return values


def _no_such_option(flag, by_flag):
    import difflib   # on this error only

    message = f"No such option: {flag}"
    if flag.startswith("--"):
        close = difflib.get_close_matches(flag, [f for f in by_flag if f.startswith("--")])
        if close:
            message += f" (Possible options: {', '.join(sorted(close))})"
    return message
