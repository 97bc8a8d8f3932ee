"""Dependency cycles among steps."""

from __future__ import annotations

from collections.abc import Iterator, Mapping, Sequence


def find_cycles(needs: Mapping[str, Sequence[str]]) -> list[list[str]]:
    """Each distinct cycle once, as the path ``[a, b, ..., a]`` starting from its step that
    comes first in ``needs``' order; ``needs`` maps a step to the steps it waits for."""
    order = {step: index for index, step in enumerate(needs)}
    done: set[str] = set()
    cycles: list[list[str]] = []
    seen: set[frozenset[str]] = set()
    for root in needs:
        if root in done:
            continue
        path: list[str] = [root]
        stack: list[Iterator[str]] = [iter(needs[root])]
        while stack:  # depth-first, without recursion (a chain may be long)
            needed = next(stack[-1], None)
            if needed is None:
                done.add(path.pop())
                stack.pop()
            elif needed in path:
                cycle = path[path.index(needed) :]
                if frozenset(cycle) not in seen:
                    seen.add(frozenset(cycle))
                    first = min(range(len(cycle)), key=lambda i: order[cycle[i]])
                    rotated = cycle[first:] + cycle[:first]
                    cycles.append([*rotated, rotated[0]])
            elif needed not in done and needed in needs:
                path.append(needed)
                stack.append(iter(needs[needed]))
    return cycles
