"""The one way to stand between the kubelet and a service it calls: interceptors.

A service is declared by a Protocol (CRIRuntime for the CRI, ManagedContainerd for the
embedded containerd). ``intercept`` wraps an implementation so that every call of a
declared method passes through a chain of interceptors, outermost first; each gets the
service's name, the method, the arguments and a ``proceed`` that makes the call (through
the rest of the chain). Metrics time the call, a trace records it, a drill's fault plan
fails it, and a replay answers it without proceeding at all: four uses, one mechanism.
"""

from __future__ import annotations

import functools
import typing
from collections.abc import Callable, Mapping
from typing import Any, Protocol, TypeVar

T = TypeVar("T")

Proceed = Callable[[], Any]
"""Make the intercepted call (through the interceptors further in)."""


class Interceptor(Protocol):
    """Stands around every call of an intercepted service."""

    def around(self, target: str, method: str, args: tuple[Any, ...], proceed: Proceed) -> Any:
        """Return the call's result: usually ``proceed()``, with something done around it."""


def methods_of(protocol: type) -> frozenset[str]:
    """The public methods a service protocol declares."""
    return frozenset(n for n in dir(protocol) if not n.startswith("_")
                     and callable(getattr(protocol, n, None)))


def result_types(protocol: type) -> Mapping[str, Any]:
    """Each declared method's return type, resolved (for rebuilding recorded answers)."""
    types: dict[str, Any] = {}
    for name in methods_of(protocol):
        hints = typing.get_type_hints(getattr(protocol, name))
        types[name] = hints.get("return", Any)
    return types


class Intercepted:
    """Delegates ``methods`` to ``inner`` through ``chain``; anything else straight to it."""

    def __init__(self, inner: object, chain: tuple[Interceptor, ...], methods: frozenset[str],
                 target: str) -> None:
        self._inner = inner
        self._chain = chain
        self._methods = methods
        self._target = target

    def __getattr__(self, name: str) -> Any:
        if name not in self._methods:
            return getattr(self._inner, name)
        inner, chain, target = self._inner, self._chain, self._target

        def call(*args: Any, **kwargs: Any) -> Any:
            arguments = args + tuple(kwargs.values())

            def step(level: int) -> Any:
                if level == len(chain):
                    return getattr(inner, name)(*args, **kwargs)
                return chain[level].around(target, name, arguments,
                                           functools.partial(step, level + 1))

            return step(0)

        call.__name__ = name
        setattr(self, name, call)  # cache: the next call skips __getattr__
        return call


def intercept(inner: T, protocol: type, *chain: Interceptor, target: str = "runtime") -> T:
    """``inner`` with every call of ``protocol``'s methods passing through ``chain``."""
    if not chain:
        return inner
    wrapped: Any = Intercepted(inner, tuple(chain), methods_of(protocol), target)
    result: T = wrapped
    return result
