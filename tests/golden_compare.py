"""Comparing a summary with a golden file, key by key."""

from __future__ import annotations

from typing import Any

#: ``semantics`` keys that state a rule in words: ours are worded our way.
SEMANTICS_TEXT = frozenset(
    {
        "time_field",
        "order_within_stream",
        "session_key",
        "student_key",
        "edit_distance",
        "unusable_workspace",
        "inactive_rule",
    }
)


def differences(ours: Any, theirs: Any, path: str = "") -> list[str]:
    """Where two JSON values differ (paths such as ``sessions[3].runs``), at most one per branch."""
    if isinstance(ours, dict) and isinstance(theirs, dict):
        if list(ours) != list(theirs):
            return [f"{path or '.'}: keys {list(ours)} != {list(theirs)}"]
        return [d for key in theirs for d in differences(ours[key], theirs[key], f"{path}.{key}")]
    if isinstance(ours, list) and isinstance(theirs, list):
        if len(ours) != len(theirs):
            return [f"{path}: {len(ours)} items != {len(theirs)}"]
        return [d for i, (a, b) in enumerate(zip(ours, theirs, strict=True)) for d in differences(a, b, f"{path}[{i}]")]
    if ours != theirs or type(ours) is not type(theirs):
        return [f"{path}: {ours!r} != {theirs!r}"]
    return []


def assert_same_as_golden(summary: dict[str, Any], golden: dict[str, Any]) -> None:
    """Every key of the golden file, in its order, with its value; ``semantics``
    with the same keys, its constants and edit costs equal (the rules in words
    may be worded differently)."""
    ours = {**summary, "semantics": _comparable(summary["semantics"])}
    theirs = {**golden, "semantics": _comparable(golden["semantics"])}
    assert set(summary["semantics"]) == set(golden["semantics"])
    found = differences(ours, theirs)
    assert not found, "\n".join(found[:10])


def _comparable(semantics: dict[str, Any]) -> dict[str, Any]:
    return {key: value for key, value in semantics.items() if key not in SEMANTICS_TEXT}
