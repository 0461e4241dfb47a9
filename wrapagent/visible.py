"""Text made safe to print: every character that could drive a terminal or hide text is escaped.

A project directory, a tool name, an argument, a hooks file or a log line
is written by whoever made the repository; printed raw, an escape sequence
in it retitles the window, writes the clipboard (OSC 52) or erases what
`sessions list` or the trust review just showed, on every listing. Every
field wrapagent prints goes through here, and so do the trust review's
command texts (a bidi override or a zero-width character could otherwise
make a command read as something else).

Escaped, as `\\xNN`, `\\uNNNN` or `\\UNNNNNNNN`:
- C0 controls (ESC included) and DEL, C1 controls (U+0080-U+009F);
- format characters (Unicode category Cf: zero-width spaces and joiners,
  bidi embeddings, overrides and isolates, the BOM, soft hyphen, tags),
  line and paragraph separators (Zl, Zp);
- surrogates: a byte that was not UTF-8 in a path or argument (Python's
  `surrogateescape`, U+DC80-U+DCFF) is shown as the byte, `\\xNN`; printed
  raw it would also make `print` raise.

Newline and tab are kept where the caller says so (`keep`): a one-line
field escapes them too, so a name cannot add rows to a listing.

A leaf module that imports nothing up front (`unicodedata` only when a
text holds something other than printable ASCII), so the launch path can
use it for a warning.
"""

_INVISIBLE = frozenset({0x061C, 0x200B, 0x200C, 0x200D, 0x200E, 0x200F, 0x2028, 0x2029,
                        0x2060, 0x2061, 0x2062, 0x2063, 0x2064, 0xFEFF}
                       | set(range(0x202A, 0x202F)) | set(range(0x2066, 0x206A)))
"""Escaped even where `unicodedata` is missing or older than the character."""

_CATEGORIES = frozenset({"Cc", "Cf", "Cs", "Zl", "Zp"})


def _escape(ch: str) -> str:
    code = ord(ch)
    if 0xDC80 <= code <= 0xDCFF:  # surrogateescape: the byte that was not UTF-8
        return f"\\x{code - 0xDC00:02x}"
    if code <= 0xFF:
        return f"\\x{code:02x}"
    if code <= 0xFFFF:
        return f"\\u{code:04x}"
    return f"\\U{code:08x}"


def _hidden(ch: str, category: object) -> bool:
    code = ord(ch)
    if code < 0x20 or 0x7F <= code < 0xA0 or code in _INVISIBLE or 0xD800 <= code <= 0xDFFF:
        return True
    if code < 0x80:
        return False
    return category is not None and category(ch) in _CATEGORIES  # type: ignore[operator]


def visible(text: str, keep: str = "\n\t") -> str:
    """`text` with every character that could act on a terminal or hide text escaped.

    `keep` lists the characters left as they are (newline and tab by
    default, for multi-line text such as a hook's command); `field` keeps none.
    """
    if text.isascii() and text.isprintable():
        return text  # the usual case, without a look at each character
    try:
        from unicodedata import category
    except ImportError:  # a Python built without it: the explicit set above still holds
        category = None  # type: ignore[assignment]
    return "".join(ch if ch in keep or not _hidden(ch, category) else _escape(ch) for ch in text)


def field(value: object) -> str:
    """One field of a one-line listing (`str(value)`): newlines and tabs escaped as well."""
    return visible(value if isinstance(value, str) else str(value), keep="")


def data(value: object) -> object:
    """`value` with every string in it (dicts, lists, tuples; not keys) made a visible one-line `field`.

    For a report gathered as data and rendered as text (`doctor`): the
    renderer's own words and colours stay as they are, every value that
    came from outside is inert.
    """
    if isinstance(value, str):
        return field(value)
    if isinstance(value, dict):
        return {k: data(v) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return type(value)(data(v) for v in value)
    return value


def json_text(text: str) -> str:
    """JSON text (`json.dumps(..., ensure_ascii=False)`) with every hidden character as a `\\uXXXX` escape.

    The same document for any JSON reader, but inert on a terminal:
    `json` escapes C0 controls itself, not DEL, C1, bidi or zero-width
    characters, and a lone surrogate (a byte that was not UTF-8) would make
    the write fail. Outside strings JSON text holds only ASCII, and its raw
    newlines are the indentation's: they are kept.
    """
    if text.isascii() and "\x7f" not in text:
        return text
    try:
        from unicodedata import category
    except ImportError:
        category = None  # type: ignore[assignment]
    out = []
    for ch in text:
        if ch == "\n" or not _hidden(ch, category):
            out.append(ch)
        elif ord(ch) > 0xFFFF:  # JSON spells these as a surrogate pair
            code = ord(ch) - 0x10000
            out.append(f"\\u{0xD800 + (code >> 10):04x}\\u{0xDC00 + (code & 0x3FF):04x}")
        else:
            out.append(f"\\u{ord(ch):04x}")
    return "".join(out)
