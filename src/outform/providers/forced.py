"""The calls of the forced output tool (`ForcedTool`) as the reply's text, one rule for every
adapter, whole replies and streams alike.

In tool mode the provider defines the reply to be the call: its arguments are the value. A
model may still call the output tool more than once (parallel calls are disabled where the API
has the switch, but not every model or server honours it), and may write text beside the call.

* **Several calls are several values of one reply.** The reply's text is their arguments in
  call order, one per line (`{"a":1}` and `{"a":2}` give `{"a":1}\\n{"a":2}`), so the pipeline
  applies its rule for several values in one reply (docs/pipeline.md): for a root that wants a
  list they are gathered into it; for a root that takes one value the first that validates is
  taken and the others are recorded as lost content. None is ever dropped unsaid.
* **Calls whose arguments are exactly equal are one value**, written once: the same text as
  the provider sent it (for an API that sends an object, Anthropic, Gemini, Bedrock, its JSON
  encoding). Arguments that differ in any character, spacing or key order included, are two
  values.
* **Calls of the forced tool never appear in `Response.tool_calls`**, which holds only the
  calls of the caller's own tools.
* **Text beside a call of the forced tool is not part of the reply** (before, between or
  after the calls): the reply is the call. A whole reply keeps it in `Response.raw`, the body
  as the provider sent it. A reply with no call of the forced tool is its text, as in any
  other mode.

In a stream, the providers send one call after another. The first call's fragments are text as
they arrive. A later call's fragments are held back while they repeat, from its start, an
earlier call that has ended: a call equal to an earlier one adds nothing, and one that differs
goes to the text on a new line the moment it differs (so nothing held back is ever content the
text lacks). Text beside the calls is held back until the reply ends: it is dropped once a call
of the forced tool has come, and is the reply when the reply ends with a stop reason and none
came (a stream cut before its end, without any call, has no text). Fragments of two calls that
interleave are written as they come, so the text is then not JSON, and the reply is asked again.
"""

from __future__ import annotations

from collections.abc import Hashable, Iterable
from dataclasses import dataclass, field
from typing import Final

from outform.providers.base import Delta

SEPARATOR: Final = "\n"
"""Between the arguments of two calls of the forced tool in the reply's text."""


def joined(arguments: Iterable[str]) -> str:
    """The reply's text for the forced tool's calls of a whole reply: their arguments in call
    order, one per line, each text once."""
    seen: list[str] = []
    for text in arguments:
        if text not in seen:
            seen.append(text)
    return SEPARATOR.join(seen)


@dataclass
class _Call:
    parts: list[str] = field(default_factory=list)
    live: bool = False
    """Its fragments go to the text as they arrive (else they are held back)."""
    ended: bool = False
    length: int = 0
    """Characters received (while held back)."""
    repeats: list[str] = field(default_factory=list)
    """While held back: the earlier calls it still repeats from their start (each fragment is
    matched where it falls, so holding a call back costs its length, not its square)."""

    @property
    def text(self) -> str:
        return "".join(self.parts)


class ForcedStream:
    """The forced tool's calls and the text beside them, in a stream: `begin`, `add` and `end`
    each call (named by whatever key the API gives it), pass the text beside them to `prose`,
    and call `finish` when the reply's stop reason arrives; each returns the text deltas to
    emit, in order."""

    def __init__(self) -> None:
        self._calls: dict[Hashable, _Call] = {}
        self._ended: list[str] = []
        """The arguments of the calls that have ended, each text once."""
        self._prose: list[str] = []

    @property
    def seen(self) -> bool:
        """Whether the model has called the forced tool."""
        return bool(self._calls)

    def knows(self, key: Hashable) -> bool:
        return key in self._calls

    def begin(self, key: Hashable) -> list[Delta]:
        """A call of the forced tool starts; the calls before it have ended."""
        if key in self._calls:
            return []
        deltas = [d for other in list(self._calls) for d in self.end(other)]
        self._prose.clear()  # the reply is the call: the text beside it is not part of it
        self._calls[key] = _Call(live=not self._calls, repeats=list(self._ended))
        return deltas

    def add(self, key: Hashable, fragment: str) -> list[Delta]:
        """A fragment of a call's arguments."""
        if not fragment:
            return []
        deltas = self.begin(key)
        call = self._calls[key]
        call.parts.append(fragment)
        if call.live or call.ended:
            return [*deltas, Delta("text", fragment)]
        at = call.length
        call.length += len(fragment)
        call.repeats = [earlier for earlier in call.repeats if earlier.startswith(fragment, at)]
        if call.repeats:
            return deltas
        call.live = True
        return [*deltas, Delta("text", SEPARATOR + call.text)]

    def end(self, key: Hashable) -> list[Delta]:
        """A call's arguments are complete: a held-back call equal to an earlier one is
        dropped, any other is written (on a new line)."""
        call = self._calls.get(key)
        if call is None or call.ended:
            return []
        call.ended = True
        text = call.text
        deltas: list[Delta] = []
        if not call.live:
            if text in self._ended:
                return []
            call.live = True
            deltas.append(Delta("text", SEPARATOR + text))
        if text not in self._ended:
            self._ended.append(text)
        return deltas

    def whole(self, key: Hashable, arguments: str) -> list[Delta]:
        """A call that arrives whole, in one event (Gemini)."""
        return [*self.begin(key), *self.add(key, arguments), *self.end(key)]

    def prose(self, text: str) -> list[Delta]:
        """Text the model wrote outside the calls: held back until the reply ends, dropped
        once the forced tool is called."""
        if text and not self._calls:
            self._prose.append(text)
        return []

    def finish(self) -> list[Delta]:
        """The reply ended with a stop reason: every call has ended; the text held back is the
        reply when the forced tool was not called."""
        deltas = [d for key in list(self._calls) for d in self.end(key)]
        if not self._calls and self._prose:
            deltas.append(Delta("text", "".join(self._prose)))
            self._prose.clear()
        return deltas


__all__ = ["SEPARATOR", "ForcedStream", "joined"]
