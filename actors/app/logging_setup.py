"""Logging setup: loguru to stderr, with pod, uid and container as fields on every line."""

from __future__ import annotations

import sys
from typing import Any

from loguru import logger

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


def configure_logging(level: str = "INFO", json_lines: bool = False) -> None:
    """Send logs to stderr; ``json_lines`` writes one JSON record per line for machines."""
    logger.remove()
    logger.configure(patcher=_enrich)
    if json_lines:
        logger.add(sys.stderr, level=level.upper(), serialize=True)
    else:
        logger.add(sys.stderr, level=level.upper(), format=_FORMAT, colorize=None)
