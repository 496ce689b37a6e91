"""Logging setup: loguru to stderr, with pod, uid and container as fields on every line."""

from __future__ import annotations

import sys
from typing import Any

from loguru import logger

from actors.app.config.verbosity import VModule

_FORMAT = (
    "<green>{time:HH:mm:ss.SSS}</green> <level>{level:<7}</level> "
    "<cyan>{extra[pod]}</cyan>{extra[uid_short]}{extra[container_tag]} {message}"
)


def _enrich(record: Any) -> None:
    extra = record["extra"]
    extra.setdefault("pod", "")
    extra.setdefault("uid", "")
    extra.setdefault("container", "")
    extra["uid_short"] = f" [{extra['uid'][:8]}]" if extra["uid"] else ""
    extra["container_tag"] = f" {extra['container']}:" if extra["container"] else ""


def configure_logging(level: str = "INFO", json_lines: bool = False,
                      vmodule: tuple[tuple[str, int], ...] = ()) -> None:
    """Send logs to stderr; ``json_lines`` writes one JSON record per line for machines;
    ``vmodule`` (klog's --vmodule) gives matching source files their own verbosity."""
    logger.remove()
    logger.configure(patcher=_enrich)
    levels = VModule(vmodule, level.upper())
    options: dict[str, Any] = {"level": levels.least}
    if vmodule:
        options["filter"] = lambda record: (
            record["level"].no >= logger.level(levels.level_of(record["file"].path)).no)
    if json_lines:
        logger.add(sys.stderr, serialize=True, **options)
    else:
        logger.add(sys.stderr, format=_FORMAT, colorize=None, **options)
