"""Mogrifiers of the tag sink (TAGGED_METRICSD_MOGRIFIERS): a stat name matching a pattern is
sent under another name with tags taken from the match, e.g. pattern
``^ratelimit\\.service\\.rate_limit\\.(.*)\\.(.*)\\.total_hits$``, name
``ratelimit.service.rate_limit.total_hits`` and tags ``domain:$1,descriptor:$2``.

As upstream, the pattern is searched anywhere in the name and ``$0``, ``$1``... are the whole
match and its groups (a group that did not take part is empty). Mogrifiers are tried in the
order TAGGED_METRICSD_MOGRIFIERS lists them (upstream: in Go map order) and the first match
wins; the tags keep the order of the ``_TAGS`` setting.
"""

from __future__ import annotations

import re
from collections.abc import Sequence

from handlers.ratelimit.settings import MogrifierSettings

_GROUP = re.compile(r"\$(\d+)")


def _expand(template: str, match: re.Match[str]) -> str:
    return _GROUP.sub(lambda ref: match.group(int(ref.group(1))) or "", template)


class Mogrifier:
    """One mogrifier, from its settings."""

    def __init__(self, settings: MogrifierSettings) -> None:
        self.pattern = re.compile(settings.pattern)
        self.name = settings.name
        self.tags = settings.tags

    def apply(self, name: str) -> tuple[str, list[str]] | None:
        """The new name and ``key:value`` tags, or None when ``name`` does not match."""
        match = self.pattern.search(name)
        if match is None:
            return None
        tags = [f"{key}:{_expand(value, match)}" for key, value in self.tags]
        return _expand(self.name, match), tags


def mogrify(mogrifiers: Sequence[Mogrifier], name: str) -> tuple[str, list[str]]:
    """``name`` through the first matching mogrifier (unchanged and without tags if none)."""
    for mogrifier in mogrifiers:
        result = mogrifier.apply(name)
        if result is not None:
            return result
    return name, []
