"""A Griffe extension for the API reference: tenure's docstrings are prose with a
few reStructuredText habits, which this turns into Markdown before they render.

- ``:class:`~tenure.errors.InvalidInput``` and the other roles become links to the
  object where the site documents it, and plain code where it does not (an
  *optional* cross-reference: never a broken link, never a warning). A ``~``
  shows the last part of the name only; ``func`` and ``meth`` get ``()``. A name
  without a dot is looked up from the docstring's own object outwards.
- A paragraph ending in ``::`` announces an indented literal block: the ``::``
  becomes ``:`` as Sphinx shows it (the block is already a Markdown code block).
- A list that follows its paragraph without a blank line gets one, so that
  Markdown sees a list rather than dashes inside a paragraph.

mkdocs.yml loads it (``extensions:`` of the python handler); nothing in the
package imports it.
"""

from __future__ import annotations

import contextlib
import re
from collections.abc import Iterable
from typing import Any

from griffe import AliasResolutionError, CyclicAliasError, Extension, Object

ROLE = re.compile(r":(?:py:)?(class|func|meth|mod|attr|exc|data|obj):`(~?)([\w.]+)`")
LITERAL_INTRO = re.compile(r"(\S)::$")
LIST_ITEM = re.compile(r"^\s*(?:[-*]|\d+\.)\s")


class SphinxRoles(Extension):
    """Rewrites every docstring of the loaded objects (see the module's docstring)."""

    def on_object(self, *, obj: Object, **kwargs: Any) -> None:
        if obj.docstring is not None:
            obj.docstring.value = markdown(obj.docstring.value, obj)


def markdown(text: str, obj: Object | None = None) -> str:
    """``text`` with its roles, literal-block colons and lists made Markdown."""
    text = ROLE.sub(lambda found: _reference(found, obj), text)
    lines = (LITERAL_INTRO.sub(r"\1:", line) for line in text.split("\n"))
    return "\n".join(_blank_before_lists(lines))


def _reference(found: re.Match[str], obj: Object | None) -> str:
    role, short, target = found.groups()
    shown = target.rsplit(".", 1)[-1] if short else target
    if role in ("func", "meth"):
        shown += "()"
    identifier = _resolve(target, obj)
    return f'<autoref identifier="{identifier}" optional><code>{shown}</code></autoref>'


def _resolve(target: str, obj: Object | None) -> str:
    """The full path of ``target``: as written when it starts with the package,
    else found from ``obj`` outwards (its members, its parent's, …)."""
    if target.startswith("tenure") or obj is None:
        return target
    head = target.split(".", 1)[0]
    scope: Object | None = obj
    while scope is not None:
        with contextlib.suppress(AliasResolutionError, CyclicAliasError):  # look further out
            if head in scope.members:
                return f"{scope.path}.{target}"
        scope = scope.parent
    return target


def _blank_before_lists(lines: Iterable[str]) -> list[str]:
    out: list[str] = []
    in_list = False
    for line in lines:
        if LIST_ITEM.match(line):
            if not in_list and out and out[-1].strip():
                out.append("")
            in_list = True
        elif not line.strip() or not line.startswith(" "):
            in_list = False  # a continuation line is indented; anything else ends the list
        out.append(line)
    return out
