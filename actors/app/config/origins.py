"""Where each merged setting came from, so that a check's error says it.

Settings are merged from flags, the ``--config`` KubeletConfiguration file and the
``--config-dir`` drop-ins (flags win over both, a drop-in over the file) before they are
checked. A check raises a ConfigError carrying the setting's
KubeletConfiguration ``field`` and the broken ``rule`` in upstream's words; ``Origins``
puts in front of the rule where the value came from: the file and field
(``--config /etc/kubelet.yaml: evictionHard: ...``) when the file set it, the drop-in and
field (``--config-dir /etc/kubelet.conf.d/10-x.conf: evictionHard: ...``) when a drop-in
did, else the flag (``--eviction-hard: ...``). This is the one place that knows; the checks do not.
"""

from __future__ import annotations

import argparse
import contextlib
from collections.abc import Callable, Iterator, Mapping
from typing import TypeVar

from msgspec import Struct

from actors.app.config.kubelet_config import (
    CONFIG,
    CONFIG_DIR,
    DEST_OF_FIELD,
    FIELD_OF_DEST,
    config_error,
)
from runtime.errors import ConfigError, ConfigErrors

T = TypeVar("T")


def flag_names(parser: argparse.ArgumentParser) -> dict[str, str]:
    """Each flag destination's flag, as the user writes it (its first long name)."""
    names: dict[str, str] = {}
    for action in parser._actions:  # argparse has no public list of its flags
        long = [o for o in action.option_strings if o.startswith("--")]
        if long and action.dest not in names:
            names[action.dest] = long[0]
    return names


def invalid(field: str, rule: str) -> ConfigError:
    """A merged setting breaks ``rule`` (upstream's words); Origins says where it came from."""
    return ConfigError(rule, field=field)


class Origins(Struct, frozen=True):
    """Which settings the ``config`` file or a drop-in set (and no flag overrode), which
    the command line set, and each setting's flag; the others have their defaults."""

    config: str
    from_file: frozenset[str]  # flag destinations
    from_flags: frozenset[str]
    flag_of: Mapping[str, str]  # flag destination -> "--flag"
    file_of: Mapping[str, str] = {}  # flag destination -> the file (or drop-in) that set it

    def where(self, dest: str) -> str:
        """The flag that sets ``dest`` (its field when it has none), as an error starts."""
        return self.flag_of.get(dest, FIELD_OF_DEST.get(dest, dest))

    def locate(self, err: ConfigError) -> ConfigError:
        """``err`` saying where its value came from; unchanged if it names no field."""
        if err.field not in DEST_OF_FIELD:
            return err
        # A rule between fields is reported at the one that was set, the field first.
        field = next((f for f in (err.field, *err.related)
                      if DEST_OF_FIELD.get(f) in self.from_file | self.from_flags), err.field)
        dest = DEST_OF_FIELD[field]
        if dest in self.from_file:
            path = self.file_of.get(dest, self.config)
            return config_error(path, field, err.rule,
                                CONFIG if path == self.config else CONFIG_DIR)
        flag = self.flag_of.get(dest, "")
        if flag and f"({flag})" in err.rule:
            # Upstream's "invalid configuration: maxPods (--max-pods) ..." names its flag.
            message = err.rule
        else:
            message = f"{self.where(dest)}: {err.rule}"
        return ConfigError(message, field=field, rule=err.rule)


class Problems:
    """The broken rules found while checking the merged settings: each check runs on and
    what it finds is kept, located by ``origins``; ``raise_found`` then reports them all
    (one as itself, several as ConfigErrors)."""

    def __init__(self, origins: Origins) -> None:
        self.origins = origins
        self.found: list[ConfigError] = []

    @contextlib.contextmanager
    def check(self) -> Iterator[None]:
        """A check runs inside: its ConfigError is kept and the checking goes on."""
        try:
            yield
        except ConfigError as err:
            located = self.origins.locate(err)
            if located is not err:
                located.__cause__ = err
            self.found.append(located)

    def value(self, compute: Callable[[], T]) -> T | None:
        """What ``compute`` checks and makes, or None when it breaks a rule (then kept;
        nothing is built from None: raise_found comes first)."""
        with self.check():
            return compute()
        return None

    def raise_found(self) -> None:
        if len(self.found) == 1:
            raise self.found[0]
        if self.found:
            raise ConfigErrors(tuple(self.found))

