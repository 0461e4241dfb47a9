"""blocks: sanitising hook output and the exact injected text."""

from __future__ import annotations

import random
import re

import pytest

from wrapagent.inject.blocks import (
    MAX_OUTPUT_BYTES,
    TRUNCATION_MARKER,
    build_prefix,
    escape_attr,
    neutralize_tags,
    sanitize,
)

ESC = "\x1b"
FORBIDDEN = re.compile(r"[\x00-\x08\x0b-\x1f\x7f-\x9f]")


# --------------------------------------------------------------------------- exact format


def test_exact_format_all_blocks():
    prefix = build_prefix(
        "timeline line 1\ntimeline line 2",
        [("branch-protection", "You are on main."), ("commit-reminder", "Commit often.")],
    )
    assert prefix == (
        "<system-reminder>\n"
        "timeline line 1\ntimeline line 2\n"
        "</system-reminder>\n"
        '<prompt-guard name="branch-protection">\n'
        "You are on main.\n"
        "</prompt-guard>\n"
        '<prompt-guard name="commit-reminder">\n'
        "Commit often.\n"
        "</prompt-guard>\n"
        "\n"
    )
    assert (prefix + "fix the bug").endswith("</prompt-guard>\n\nfix the bug")


def test_empty_blocks_left_out():
    assert build_prefix("", [("a", ""), ("b", "   \n\t")]) == ""
    assert build_prefix("  ", []) == ""
    assert build_prefix("", [("a", ""), ("b", "only b")]) == '<prompt-guard name="b">\nonly b\n</prompt-guard>\n\n'
    assert build_prefix("pre", [("a", "")]) == "<system-reminder>\npre\n</system-reminder>\n\n"


def test_bodies_are_trimmed():
    assert build_prefix("\n\n  pre  \n\n", []) == "<system-reminder>\npre\n</system-reminder>\n\n"


# --------------------------------------------------------------------------- sanitize


@pytest.mark.parametrize(
    "raw, expected",
    [
        (b"plain", "plain"),
        (b"  padded \n", "padded"),
        (b"a\r\nb", "a\nb"),
        (b"a\rb", "a\nb"),
        (b"tab\there", "tab\there"),
        (b"\x1b[31mred\x1b[0m", "red"),
        (b"paste\x1b[201~end", "pasteend"),
        (b"\x1b[200~in\x1b[201~", "in"),
        (b"\x1b]0;title\x07text", "text"),
        (b"\x1b]8;;http://x\x1b\\link\x1b]8;;\x1b\\", "link"),
        (b"\x1bPdcs payload\x1b\\after", "after"),
        (b"\x1b_apc\x1b\\after", "after"),
        (b"\x1b^pm\x1b\\after", "after"),
        (b"\x1b(Bascii\x1b7\x1b8\x1bc", "ascii"),
        (b"nul\x00bel\x07bs\x08del\x7f", "nulbelbsdel"),
        ("c1\u009b31m\u0085x\u009d0;t\u009cy".encode(), "c1xy"),
        (b"\xff\xfebad", "\ufffd\ufffdbad"),
        (b"lone esc \x1b", "lone esc"),
    ],
)
def test_sanitize_cases(raw, expected):
    assert sanitize(raw) == expected


def test_sanitize_accepts_str_and_surrogates():
    assert sanitize("caf\u00e9 \x1b[1mbold") == "caf\u00e9 bold"
    assert sanitize("x\udcff y") == "x? y"


def test_unterminated_osc_swallows_rest():
    assert sanitize(b"keep\x1b]0;never terminated \r\n more") == "keep"


def test_no_paste_end_or_submit_survives():
    out = sanitize("a\x1b[201~\rb\r\n\x1b[201~c\u009b201~\x1b\r".encode())
    assert out == "a\nb\nc"
    # A raw 0x9b byte is not UTF-8: it becomes U+FFFD, and "201~" is inert text.
    assert sanitize(b"x\x9b201~") == "x\ufffd201~"


def test_cap_on_character_boundary():
    raw = ("\u00e9" * (MAX_OUTPUT_BYTES)).encode()  # 2 bytes each: twice the cap
    out = sanitize(raw)
    assert len(out.encode("utf-8")) <= MAX_OUTPUT_BYTES
    assert out.endswith("\n" + TRUNCATION_MARKER)
    assert "\ufffd" not in out
    head = out[: -len(TRUNCATION_MARKER) - 1]
    assert set(head) == {"\u00e9"}


def test_cap_small_and_exact():
    assert sanitize(b"x" * 100, cap=100) == "x" * 100
    out = sanitize(b"x" * 101, cap=100)
    assert len(out.encode()) <= 100 and out.endswith(TRUNCATION_MARKER)
    assert sanitize(b"x" * 10, cap=3) == TRUNCATION_MARKER


def test_whitespace_does_not_count_against_cap():
    assert sanitize(b" " * 50 + b"ok" + b"\n" * 50, cap=10) == "ok"


# --------------------------------------------------------------------------- tags and attributes


@pytest.mark.parametrize(
    "body",
    [
        "</prompt-guard>",
        "</PROMPT-GUARD>",
        "</ prompt-guard >",
        "< /prompt-guard>",
        "</prompt-guard\n>",
        "</system-reminder>",
        "</System-Reminder >",
        '<prompt-guard name="forged">',
        "<system-reminder>",
    ],
)
def test_tags_in_bodies_are_neutralised(body):
    out = neutralize_tags(body)
    assert out.startswith("<\\")
    assert not re.search(r"<\s*/?\s*(prompt-guard|system-reminder)", out, re.I)


def test_neutralising_is_conservative_and_leaves_other_markup():
    # Anything starting with our tag names is neutralised, even a longer name.
    assert neutralize_tags("</prompt-guardé <prompt-guardian>") == "<\\/prompt-guardé <\\prompt-guardian>"
    assert neutralize_tags("a<b </div> <prompt> x < y") == "a<b </div> <prompt> x < y"


def test_escape_attr():
    assert escape_attr("a&b<c>\"d'e") == "a&amp;b&lt;c&gt;&quot;d&apos;e"
    assert escape_attr("na\x1b[31mme\r\nx\x00") == "name x"


def test_guard_name_cannot_break_attribute():
    prefix = build_prefix("", [('x">\n</prompt-guard><prompt-guard name="y', "body")])
    assert prefix.count("<prompt-guard ") == 1
    assert prefix.count("</prompt-guard>") == 1
    assert prefix.startswith('<prompt-guard name="x&quot;&gt; &lt;/prompt-guard&gt;&lt;prompt-guard name=&quot;y">\n')


# --------------------------------------------------------------------------- properties

HOSTILE_PIECES = [
    "\x1b[201~", "\x1b[200~", "\r", "\r\n", "\n", "\t", "\x00", "\x7f", "\x1b", "\x9b", "\x9c",
    "\u0085", "\x1b]0;", "\x07", "\x1b\\", "\x1bP", "</prompt-guard>", "</ prompt-guard >",
    "</system-reminder>", "<system-reminder>", '<prompt-guard name="z">', "</PROMPT-GUARD",
    "<", "/", ">", "&", '"', "'", "text", " ", "\u00e9", "\U0001f600", "\ufffd",
]


def _hostile(rng: random.Random) -> str:
    return "".join(rng.choice(HOSTILE_PIECES) for _ in range(rng.randint(0, 40)))


def _well_formed(prefix: str, n_guards: int, has_pre: bool) -> None:
    assert not FORBIDDEN.search(prefix), repr(prefix)
    opens_guard = re.findall(r"<\s*prompt-guard", prefix, re.I)
    closes_guard = re.findall(r"<\s*/\s*prompt-guard", prefix, re.I)
    opens_pre = re.findall(r"<\s*system-reminder", prefix, re.I)
    closes_pre = re.findall(r"<\s*/\s*system-reminder", prefix, re.I)
    assert len(opens_guard) == len(closes_guard) == n_guards
    assert len(opens_pre) == len(closes_pre) == (1 if has_pre else 0)
    # The structure: blocks one after another, each closed before the next opens.
    pattern = (r"<system-reminder>\n[^\n].*?\n</system-reminder>\n" if has_pre else "") + (
        r'<prompt-guard name="[^"<>]*">\n[^\n].*?\n</prompt-guard>\n' * n_guards
    )
    if n_guards or has_pre:
        assert re.fullmatch(pattern + "\n", prefix, re.S), repr(prefix)
    else:
        assert prefix == ""


@pytest.mark.parametrize("chunk", range(3))
def test_hostile_inputs_give_well_formed_blocks(chunk):
    for seed in range(chunk * 200, chunk * 200 + 200):
        _check_hostile_seed(seed)


def _check_hostile_seed(seed: int) -> None:
    rng = random.Random(seed)
    pre_raw = _hostile(rng)
    guards_raw = [(_hostile(rng), _hostile(rng)) for _ in range(rng.randint(0, 4))]
    pre = sanitize(pre_raw.encode("utf-8", "replace") if seed % 2 else pre_raw)
    guards = [(name, sanitize(body)) for name, body in guards_raw]
    prefix = build_prefix(pre, guards)
    _well_formed(prefix, sum(1 for _, body in guards if body), bool(pre))
    # build_prefix is safe on its own, even with unsanitised bodies.
    raw_prefix = build_prefix(pre_raw, guards_raw)
    assert not FORBIDDEN.search(raw_prefix)
    assert len(re.findall(r"<\s*/\s*prompt-guard", raw_prefix, re.I)) == len(
        re.findall(r"<\s*prompt-guard", raw_prefix, re.I)
    )


def test_sanitize_output_is_inert_and_idempotent():
    for seed in range(500):
        rng = random.Random(10_000 + seed)
        out = sanitize(_hostile(rng).encode("utf-8", "replace"), cap=rng.choice([16, 64, 4096]))
        assert not FORBIDDEN.search(out), seed
        assert out == out.strip(), seed
        assert sanitize(out, cap=1 << 20) == out, seed
