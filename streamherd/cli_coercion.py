"""Plain conversion of command-line values, without pydantic.

typer (0.2x) converts every value given on the command line through a pydantic TypeAdapter, one
built per option at run time: importing pydantic and building the adapters of ``train --algo
nherd-p -b 20 FILE`` took 0.2-0.3 s, a third of a warm start-up, and 10 MB. Every option of
this CLI is a str, int, float, bool, Path or a list of str, for which conversion is one call.
``install`` gives those options that conversion, with pydantic's wording on a bad value; typer
still parses, checks required options, runs callbacks and prints every message. An option of any other type, or a
typer without this hook (before 0.2x, typer used click's own types), keeps typer's conversion.
"""
from pathlib import Path
from typing import Union, get_args, get_origin

_PLAIN = (str, int, float, bool, Path)
_BOOLEANS = {"1": True, "true": True, "yes": True, "on": True, "t": True, "y": True,
             "0": False, "false": False, "no": False, "off": False, "f": False, "n": False}
_WHAT = {int: "a valid integer, unable to parse string as an integer",
         float: "a valid number, unable to parse string as a number",
         bool: "a valid boolean, unable to interpret input"}


def _convert(kind, value, param, ctx):
    try:
        if kind is bool:
            return value if isinstance(value, bool) else _BOOLEANS[str(value).strip().lower()]
        return kind(value)
    except (TypeError, ValueError, KeyError):
        if kind not in _WHAT:
            raise
        from typer._click.exceptions import BadParameter

        raise BadParameter(f"Input should be {_WHAT[kind]}", ctx=ctx, param=param) from None


def _plain(annotation):
    """(element type, is a list) when conversion is one call per value, else None."""
    origin = get_origin(annotation)
    if origin is Union:
        args = [a for a in get_args(annotation) if a is not type(None)]
        return _plain(args[0]) if len(args) == 1 else None
    if origin is list:
        (element,) = get_args(annotation) or (str,)
        return (element, True) if element in _PLAIN else None
    return (annotation, False) if annotation in _PLAIN else None


def install():
    """Plain conversion for every plain option typer builds from now on, in this process."""
    try:
        import typer.core
        from typer._coercion import RuntimeParam

        typers_own = typer.core.build_runtime_param
    except (ImportError, AttributeError):  # a typer without pydantic conversion
        return
    if getattr(typers_own, "plain", False):
        return

    class PlainRuntimeParam(RuntimeParam):
        def _coerce_value(self, value, param, ctx):
            kind, is_list = _plain(self.annotation)
            if is_list:
                values = value if isinstance(value, (list, tuple)) else [value]
                return [_convert(kind, v, param, ctx) for v in values]
            return _convert(kind, value, param, ctx)

    def build_runtime_param(descriptor):
        if (descriptor.file_annotation is None and descriptor.parameter_info.parser is None
                and _plain(descriptor.annotation) is not None):
            return PlainRuntimeParam(parameter_info=descriptor.parameter_info,
                                     annotation=descriptor.annotation)
        return typers_own(descriptor)

    build_runtime_param.plain = True
    # typer.core calls it by this module-level name when a parameter first converts a value
    # (the help option included, which click creates late).
    typer.core.build_runtime_param = build_runtime_param
