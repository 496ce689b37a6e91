"""Go's strconv.ParseBool, as upstream's flags and feature gates read booleans."""

from __future__ import annotations

import argparse


def parse_bool(text: str) -> bool:
    """Go's strconv.ParseBool, as upstream's boolean flags read ``--flag=false``."""
    if text in ("1", "t", "T", "true", "TRUE", "True"):
        return True
    if text in ("0", "f", "F", "false", "FALSE", "False"):
        return False
    raise argparse.ArgumentTypeError(f'"{text}" is not a boolean (true or false)')
