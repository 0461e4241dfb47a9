"""The user's input as tokens: keys, pastes, Enter, and what the terminal says on its own.

The injector must tell a typed message from a command, a submit from a
newline, and the user's keys from the terminal's replies to the tool's
queries (cursor position, device attributes, focus, mouse), all from raw
bytes read off the user's terminal. The demo agent reads its input with the
same tokenizer.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

TEXT = "text"            # printable characters (UTF-8 included)
PASTE_START = "paste-start"
PASTE_END = "paste-end"
ENTER = "enter"          # submits (outside a paste)
NEWLINE = "newline"      # inserts a newline: \n, ESC CR, kitty CSI 13;mods u
BACKSPACE = "backspace"
INTERRUPT = "interrupt"  # Ctrl-C: tools clear the composer
ESCAPE = "escape"        # a lone ESC: some tools clear the composer, some keep it (adapter's call)
CONTROL = "control"      # other C0 keys
KEY = "key"              # cursor keys, function keys, alt-keys
REPLY = "reply"          # not the user typing: terminal replies, focus, mouse

_CSI_RE = re.compile(rb"\x1b\[([0-?]*)([ -/]*)([@-~])")
_STRING_INTRO = {ord("]"), ord("P"), ord("_"), ord("^"), ord("X")}  # OSC, DCS, APC, PM, SOS


@dataclass(frozen=True)
class Token:
    kind: str
    data: bytes


def _classify_csi(params: bytes, inter: bytes, final: bytes) -> str:
    """Tell keys from things the terminal says on its own (replies, focus, mouse)."""
    if final == b"~" and params == b"200":
        return PASTE_START
    if final == b"~" and params == b"201":
        return PASTE_END
    if params.startswith(b"<") and final in (b"M", b"m"):
        return REPLY  # SGR mouse report
    if not params and final in (b"I", b"O"):
        return REPLY  # focus in / out
    if final == b"R" and params:
        return REPLY  # cursor position report
    if final == b"c" and params[:1] in (b"?", b">", b"="):
        return REPLY  # device attributes
    if final == b"u" and params.startswith(b"?"):
        return REPLY  # kitty keyboard flags
    if inter == b"$" and final == b"y":
        return REPLY  # DECRPM
    if final == b"t" and params:
        return REPLY  # window/cell size reports
    if final == b"n" and params:
        return REPLY  # device status report
    if final == b"u" and params:
        code, _, mods = params.partition(b";")
        key = code.split(b":")[0]
        if key == b"13":
            mod = mods.split(b":")[0]
            return ENTER if mod in (b"", b"1") else NEWLINE
        if key == b"127":
            return BACKSPACE
        if key in (b"99",) and mods.split(b":")[0] == b"5":
            return INTERRUPT  # Ctrl-C in kitty encoding
        if key == b"27":
            return ESCAPE
        return KEY
    return KEY


def _string_end(data: bytes, start: int) -> int:
    """End (exclusive) of an OSC/DCS/APC string starting at `start`: BEL or ST."""
    i = start + 2
    n = len(data)
    while i < n:
        b = data[i]
        if b == 0x07:
            return i + 1
        if b == 0x1B and i + 1 < n and data[i + 1] == ord("\\"):
            return i + 2
        i += 1
    return n


def tokenize(data: bytes) -> list[Token]:
    """Split one read from the user's terminal into tokens.

    Reads are tokenized on their own: a terminal writes each key, reply or
    paste marker in one piece, and carrying partial sequences across reads
    would delay a lone ESC key.
    """
    out: list[Token] = []
    i, n = 0, len(data)
    while i < n:
        b = data[i]
        if b == 0x1B:
            i = _escape(data, i, out)
            continue
        if b == 0x0D:
            out.append(Token(ENTER, data[i:i + 1]))
        elif b == 0x0A:
            out.append(Token(NEWLINE, data[i:i + 1]))
        elif b in (0x7F, 0x08):
            out.append(Token(BACKSPACE, data[i:i + 1]))
        elif b == 0x03:
            out.append(Token(INTERRUPT, data[i:i + 1]))
        elif b < 0x20:
            out.append(Token(CONTROL, data[i:i + 1]))
        else:
            j = i + 1
            while j < n and data[j] >= 0x20 and data[j] != 0x7F:
                j += 1
            out.append(Token(TEXT, data[i:j]))
            i = j
            continue
        i += 1
    return out


def _escape(data: bytes, i: int, out: list[Token]) -> int:
    n = len(data)
    if i + 1 >= n:
        out.append(Token(ESCAPE, data[i:i + 1]))  # a lone ESC key
        return i + 1
    nxt = data[i + 1]
    if nxt == ord("["):
        m = _CSI_RE.match(data, i)
        if m is None:
            out.append(Token(KEY, data[i:]))
            return n
        if m.group(3) == b"M" and not m.group(1):
            end = min(m.end() + 3, n)  # X10 mouse: ESC [ M + 3 bytes
            out.append(Token(REPLY, data[i:end]))
            return end
        out.append(Token(_classify_csi(m.group(1), m.group(2), m.group(3)), m.group(0)))
        return m.end()
    if nxt in _STRING_INTRO:
        end = _string_end(data, i)
        out.append(Token(REPLY, data[i:end]))
        return end
    if nxt == ord("O") and i + 2 < n:
        out.append(Token(KEY, data[i:i + 3]))
        return i + 3
    if nxt in (0x0D, 0x0A):
        out.append(Token(NEWLINE, data[i:i + 2]))
        return i + 2
    out.append(Token(KEY, data[i:i + 2]))  # Alt+key
    return i + 2


_BLANK = (ENTER, NEWLINE)


def blank_paste(tokens: list[Token], i: int) -> bool:
    """`tokens[i]` starts a paste that holds nothing but blanks and newlines, ending in this read.

    It types no message (see the injector's `_triggers`); a paste cut across reads is taken as one.
    """
    if tokens[i].kind != PASTE_START:
        return False
    for tok in tokens[i + 1:]:
        if tok.kind == PASTE_END:
            return True
        if tok.kind in _BLANK or (tok.kind == TEXT and not tok.data.strip()):
            continue
        return False
    return False
