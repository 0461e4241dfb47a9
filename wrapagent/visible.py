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
