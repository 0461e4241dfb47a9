"""The exact text prepended to the first user message, and the sanitising behind it.

Hook and guard output is untrusted text that ends up *inside the user's
composer*: a stray `ESC[201~` would end a bracketed paste early and a `\\r`
would submit it, and a body containing `</prompt-guard>` could close its own
block and forge another one. Everything here exists to make that impossible:

* `sanitize` turns raw output into inert text: no escape sequences, no control
  characters except `\\n` and `\\t`, no invisible (format, bidi, zero-width)
  characters, bounded size, trimmed.
* `build_prefix` assembles the blocks and neutralises any of our own tag names
  inside bodies, so every block has exactly one opening and one closing tag.

The format, byte for byte::

    <system-reminder>
    {pre_session output}
    </system-reminder>
    <prompt-guard name="branch-protection">
    {guard output}
    </prompt-guard>

    {what the user typed}
"""

from __future__ import annotations

import re
TYPE_CHECKING = False  # typing costs ~10 ms to import; annotations are strings
if TYPE_CHECKING:
    from typing import Sequence

MAX_OUTPUT_BYTES = 32 * 1024
TRUNCATION_MARKER = "[… truncated by wrapagent]"

# String-type sequences (OSC, DCS, SOS, PM, APC) run until BEL or ST; an
# unterminated one swallows the rest of the text, as a terminal would.
# 7-bit introducers (ESC ] / ESC P / ESC X / ESC ^ / ESC _) and their 8-bit
# C1 forms (0x9d, 0x90, 0x98, 0x9e, 0x9f). ST is ESC \ or 0x9c.
_STRING_SEQ = r"(?:\x1b[\]PX^_]|[\x90\x98\x9d\x9e\x9f])[^\x07\x1b\x9c]*(?:\x07|\x1b\\|\x9c)?"
# CSI: ESC [ or 0x9b, parameter bytes, intermediate bytes, one final byte.
# Covers bracketed-paste markers ESC[200~ / ESC[201~.
_CSI_SEQ = r"(?:\x1b\[|\x9b)[0-?]*[ -/]*[@-~]"
# Other escape sequences: ESC, optional intermediates (nF, e.g. ESC ( B),
# one final byte (Fp/Fe/Fs, e.g. ESC 7, ESC =, ESC c).
_ESC_SEQ = r"\x1b[ -/]*[0-~]"

_ESCAPES = re.compile(f"{_STRING_SEQ}|{_CSI_SEQ}|{_ESC_SEQ}")
# Everything that can still drive a terminal once sequences are gone:
# C0 except \t and \n, DEL, and the C1 range (0x80-0x9f as code points).
_CONTROLS = re.compile(r"[\x00-\x08\x0b-\x1f\x7f-\x9f]")

# `<` starting one of our own tags, opening or closing, tolerant of the
# whitespace a lenient reader (a model) would accept: `</ prompt-guard >`,
# `< /System-Reminder`. Such a `<` gets a backslash after it (`<\/prompt-guard>`),
# which keeps the text readable and makes it no tag at all. Deliberately broad:
# `<prompt-guardian` is neutralised too, since a lenient reader might not care.
_OUR_TAGS = re.compile(r"<(?=\s*/?\s*(?:prompt-guard|system-reminder))", re.IGNORECASE)

# Invisible code points a reader skips over: every format character (Cf: zero-width
# space/joiners, bidi embeddings/overrides/isolates and marks, soft hyphen, BOM, tag
# characters) plus the other default-ignorable ones (variation selectors, the combining
# grapheme joiner, Hangul fillers, Mongolian selectors). `<\u200b/prompt-guard>` reads
# as a closing tag to a model while no pattern on the raw text sees one.
_IGNORABLE_EXTRA = (
    (0x034F, 0x034F), (0x115F, 0x1160), (0x17B4, 0x17B5), (0x180B, 0x180F), (0x2060, 0x206F),
    (0x3164, 0x3164), (0xFE00, 0xFE0F), (0xFFA0, 0xFFA0), (0xE0000, 0xE0FFF),
)
_LINE_SEPARATORS = {"\u2028": "\n", "\u2029": "\n"}  # a reader breaks the line there: so do we


def drop_invisible(text: str) -> str:
    """`text` without format (Cf) and other default-ignorable characters; U+2028/2029 become `\\n`.

    ASCII text is returned as is without loading `unicodedata`.
    """
    if text.isascii():
        return text
    import unicodedata

    out = []
    for ch in text:
        if ch.isascii():
            out.append(ch)
            continue
        code = ord(ch)
        if unicodedata.category(ch) == "Cf" or any(lo <= code <= hi for lo, hi in _IGNORABLE_EXTRA):
            continue
        out.append(_LINE_SEPARATORS.get(ch, ch))
    return "".join(out)


# Characters NFKC leaves alone that still read as `<`, `/`, `-` or a letter of our tag
# names: `</prompt‐guard>` (U+2010 hyphen), `<⁄prompt-guard>` (fraction slash),
# `‹/prompt-guard›`, Cyrillic or Greek letters shaped like Latin ones (`рrompt`).
_CONFUSABLE = {
    **dict.fromkeys("\u2039\u3008\u27e8\u276c\u276e\u02c2\u1438\u2329", "<"),
    **dict.fromkeys("\u2044\u2215\u29f8\u27cb\u2571", "/"),
    **dict.fromkeys("\u2043\u2212\u02d7\u2796", "-"),
    **dict(zip("\u0430\u0435\u043e\u0440\u0441\u0443\u0455\u0456\u0501\u0261\u0578\u043c\u0442\u0442"
               "\u03bf\u03b1\u03c1\u03c4\u03b9\u03bd\u0391\u0395\u039f\u03a1\u03a4\u039c\u039d\u0405\u0406",
               "aeopcysidgnmttoaptinaeoptmnsi")),
}


def _lookalike(ch: str) -> str:
    """What a lenient reader takes `ch` for in a tag: its NFKC form, case-folded (`＜` → `<`),
    with dashes (any Pd) and the `_CONFUSABLE` shapes taken for what they look like."""
    import unicodedata

    shape = _CONFUSABLE.get(ch) or _CONFUSABLE.get(ch.lower())  # Р (U+0420) as р
    if shape is not None:
        return shape
    if unicodedata.category(ch) == "Pd":
        return "-"
    return unicodedata.normalize("NFKC", ch).casefold()


def strip_terminal_controls(text: str) -> str:
    """Remove escape sequences and control characters; keep `\\n` and `\\t`.

    A lone `\\r` becomes `\\n` (it keeps the line structure of progress-style
    output and can never reach the composer as "submit"); `\\r\\n` becomes `\\n`.
    """
    text = _ESCAPES.sub("", text)
    text = text.replace("\r\n", "\n").replace("\r", "\n")
    return _CONTROLS.sub("", text)


def _cap_utf8(text: str, cap: int) -> str:
    """Cut `text` to at most `cap` bytes of UTF-8, marker included, on a character boundary."""
    data = text.encode("utf-8")
    if len(data) <= cap:
        return text
    room = max(0, cap - len(TRUNCATION_MARKER.encode("utf-8")) - 1)
    # errors="ignore" drops a multi-byte character cut in half at the end.
    head = data[:room].decode("utf-8", errors="ignore").rstrip()
    return f"{head}\n{TRUNCATION_MARKER}" if head else TRUNCATION_MARKER


def sanitize(raw: bytes | str, *, cap: int = MAX_OUTPUT_BYTES) -> str:
    """Raw hook output → inert, bounded, trimmed text ("" when nothing is left).

    Bytes are decoded as UTF-8 with replacement characters, so a hook cannot
    make wrapagent fail by printing binary.
    """
    if isinstance(raw, bytes):
        text = raw.decode("utf-8", errors="replace")
    else:
        # Lone surrogates (from surrogateescape'd input) cannot be encoded later.
        text = raw.encode("utf-8", errors="replace").decode("utf-8")
    text = drop_invisible(strip_terminal_controls(text)).strip()
    return _cap_utf8(text, cap) if text else ""


def neutralize_tags(body: str) -> str:
    """Make any `<prompt-guard` / `</system-reminder` … inside a body not a tag.

    Lookalikes count: fullwidth or small `＜` `﹤`, `／`, letters in other
    widths or scripts whose compatibility form is ASCII (compared NFKC,
    case-folded), and combining marks between the characters.
    """
    if body.isascii():
        return _OUR_TAGS.sub("<\\\\", body)
    import unicodedata

    # A skeleton of the body, one entry per original character (marks dropped),
    # searched for our tags; a hit puts the backslash after the original `<`.
    skeleton: list[str] = []
    origin: list[int] = []
    for index, ch in enumerate(body):
        if not ch.isascii() and unicodedata.category(ch) in ("Mn", "Me"):
            continue
        folded = ch if ch.isascii() else _lookalike(ch)
        skeleton.append(folded)
        origin.extend([index] * len(folded))
    starts = {origin[m.start()] for m in _OUR_TAGS.finditer("".join(skeleton))}
    if not starts:
        return body
    return "".join(ch + "\\" if index in starts else ch for index, ch in enumerate(body))


def escape_attr(value: str) -> str:
    """A guard name as a double-quoted XML attribute value: no controls, no markup."""
    value = drop_invisible(strip_terminal_controls(value)).replace("\n", " ").replace("\t", " ").strip()
    return (
        value.replace("&", "&amp;")
        .replace("<", "&lt;")
        .replace(">", "&gt;")
        .replace('"', "&quot;")
        .replace("'", "&apos;")
    )


def _body(text: str) -> str:
    # Idempotent for already-sanitised text; makes build_prefix safe on its own.
    return neutralize_tags(drop_invisible(strip_terminal_controls(text)).strip())


def build_prefix(pre_session: str, guards: Sequence[tuple[str, str]]) -> str:
    """The blocks followed by a blank line, or "" when every block is empty.

    `prefix + user_text` is the message the agent receives.
    """
    blocks: list[str] = []
    body = _body(pre_session or "")
    if body:
        blocks.append(f"<system-reminder>\n{body}\n</system-reminder>")
    for name, output in guards:
        body = _body(output or "")
        if body:
            blocks.append(f'<prompt-guard name="{escape_attr(name)}">\n{body}\n</prompt-guard>')
    if not blocks:
        return ""
    return "\n".join(blocks) + "\n\n"


_BLOCK = re.compile(r'<system-reminder>\n.*?\n</system-reminder>|<prompt-guard name="[^"]*">\n.*?\n</prompt-guard>',
                    re.DOTALL)
_MIN_CUT_BODY = 256  # bytes: a block cut shorter than this is dropped instead


def cap_prefix(prefix: str, limit: int) -> tuple[str, list[str]]:
    """`prefix` (from `build_prefix`) in at most `limit` bytes of UTF-8; (prefix, notes).

    Blocks are kept in order while they fit; the first one that does not is
    cut (its body ends with TRUNCATION_MARKER) when a useful part of it
    fits, and every later block is dropped. Bodies are neutralised, so our
    closing tags in `prefix` are real ones and the split is exact.
    """
    if len(prefix.encode("utf-8")) <= limit:
        return prefix, []
    blocks = _BLOCK.findall(prefix)
    kept: list[str] = []
    used = 1  # the blank line that ends a prefix ("\n" after the last block's own)
    notes: list[str] = []
    for number, block in enumerate(blocks):
        size = len(block.encode("utf-8")) + 1
        if used + size <= limit:
            kept.append(block)
            used += size
            continue
        head, _, rest = block.partition("\n")
        body, _, tail = rest.rpartition("\n")
        room = limit - used - len(f"{head}\n\n{tail}\n".encode("utf-8"))
        if room >= _MIN_CUT_BODY:
            kept.append(f"{head}\n{_cap_utf8(body, room)}\n{tail}")
            notes.append(f"block {_label(head)} cut to fit")
        else:
            notes.append(f"block {_label(head)} dropped")
        notes.extend(f"block {_label(later.partition(chr(10))[0])} dropped" for later in blocks[number + 1:])
        break
    if not kept:
        return "", notes
    return "\n".join(kept) + "\n\n", notes


def _label(opening: str) -> str:
    """`prompt-guard "name"` or `system-reminder`, from a block's opening tag line."""
    if opening.startswith("<prompt-guard"):
        return "prompt-guard " + opening[len('<prompt-guard name='):-1]
    return "system-reminder"
