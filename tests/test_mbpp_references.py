"""Every MBPP reference solution passes through the sandbox: 974 full (plus challenge tests), 427 sanitized."""

from __future__ import annotations

from sandbox import entry_points_from


def _items(rows, tests_key="test_list"):
    return [
        {
            "code": r["code"],
            "tests": r[tests_key],
            "setup": r.get("test_setup_code", ""),
            "entry_points": entry_points_from(r["code"], r[tests_key]),
        }
        for r in rows
    ]


def test_all_974_full_references_pass(sb, mbpp_rows):
    assert len(mbpp_rows) == 974
    results = sb.check_many(_items(mbpp_rows))
    failed = [
        (r["task_id"], t.status, t.error_type, t.error_message) for r, t in zip(mbpp_rows, results) if not t.passed
    ]
    assert not failed, failed


def test_challenge_tests_pass(sb, mbpp_rows):
    rows = [r for r in mbpp_rows if r["challenge_test_list"]]
    assert len(rows) == 11
    results = sb.check_many(_items(rows, "challenge_test_list"))
    assert all(t.passed for t in results), [(r["task_id"], t.error_type) for r, t in zip(rows, results)]


def test_all_427_sanitized_references_pass(sb, sanitized_rows):
    assert len(sanitized_rows) == 427
    items = [
        {
            "code": r["code"],
            "tests": r["test_list"],
            "setup": "\n".join(r["test_imports"]),
            "entry_points": entry_points_from(r["code"], r["test_list"]),
        }
        for r in sanitized_rows
    ]
    results = sb.check_many(items)
    failed = [(r["task_id"], t.error_type, t.error_message) for r, t in zip(sanitized_rows, results) if not t.passed]
    assert not failed, failed


def test_every_mbpp_test_is_split_in_the_parent(mbpp_rows):
    # No MBPP test needs the weaker in-sandbox fallback.
    from sandbox import split_test

    inline = [
        t
        for r in mbpp_rows
        for t in r["test_list"]
        if split_test(t, entry_points_from(r["code"], r["test_list"])).inline
    ]
    assert not inline, inline[:5]
