"""Terminal modes the child turned on, so they can be turned off when it never could.

A TUI turns on the alternate screen, mouse reporting, focus events, bracketed
paste, kitty keyboard flags, modifyOtherKeys, and hides the cursor; it turns
them off as it exits. Killed (SIGKILL after the kill grace, or any signal it
does not handle), it leaves them on in the user's shell: the screen stays on
the alternate buffer, mouse moves print garbage, pastes arrive wrapped in
`ESC[200~`. The output thread feeds every chunk here; at the end the proxy
writes `reset_sequence()` (only what is still on, so nothing happens for a
tool that cleaned up or never set anything).

Cost per output chunk: one C-level `find` for `ESC[` (none in plain output),
and a few more only when there are escape sequences; no `re` (its import is
start-up time).
"""

PRIVATE_MODES_OFF_BY_DEFAULT = frozenset((
    1,      # application cursor keys
    47, 1047, 1049,  # alternate screen
    1000, 1001, 1002, 1003, 1005, 1006, 1015, 1016,  # mouse reporting and its encodings
    1004,   # focus events
    2004,   # bracketed paste
    2026,   # synchronized output (a terminal would hold the screen back)
))
PRIVATE_MODES_ON_BY_DEFAULT = frozenset((
    7,      # auto-wrap
    25,     # cursor visible
))
_ALT_SCREEN = (1049, 1047, 47)
_INTROS = (b"\x1b[?", b"\x1b[>", b"\x1b[<", b"\x1b[=")
_PARAM_BYTES = frozenset(b"0123456789;:")
_MAX_SEQUENCE = 32
"""An unfinished sequence at a chunk's end is kept (at most this long) and read with the next."""


class ModeTracker:
    """Follows the modes above through the child's output (`feed`), says how to undo them."""

    def __init__(self) -> None:
        self.changed: dict[int, bool] = {}
        """Private mode -> True while it differs from the terminal's default."""
        self.kitty_pushed = 0
        self.kitty_stack: list[int] = []
        """The flags of the kitty keyboard pushes still on the terminal's stack (to push them again)."""
        self.kitty_set = False
        self.kitty_flags = 0
        self.other_keys = False
        self.other_keys_level = 0
        self.tail = b""
        """An unfinished sequence at the end of the last chunk (the caller feeds the next one then)."""

    def feed(self, buf: "bytes | bytearray", end: int) -> None:
        """The child wrote `buf[:end]` (callers may skip a chunk without ESC while `tail` is empty)."""
        if self.tail:
            data = self.tail + bytes(buf[:end])
            self.tail = b""
            end = len(data)
        elif buf.find(b"\x1b", max(0, end - _MAX_SEQUENCE), end) < 0 and buf.find(b"\x1b[", 0, end) < 0:
            return  # plain output (and nothing cut at the end): the common case
        else:
            data = bytes(buf[:end])
        for intro in _INTROS:
            i = data.find(intro)
            while i >= 0:
                i = self._sequence(data, i, intro[2])
                if i < 0:
                    break
                i = data.find(intro, i)
        cut = data.rfind(b"\x1b", max(0, end - _MAX_SEQUENCE))
        if cut >= 0 and _unfinished(data, cut):
            self.tail = data[cut:]

    def _sequence(self, data: bytes, i: int, kind: int) -> int:
        """Read the sequence at `i`; returns where to look next, or -1 (unfinished: at the end)."""
        j = i + 3
        n = len(data)
        while j < n and data[j] in _PARAM_BYTES:
            j += 1
        if j >= n:
            return -1
        final = data[j]
        params = data[i + 3:j]
        if kind == 0x3F and final in (0x68, 0x6C):  # ? … h / l
            on = final == 0x68
            for field in params.split(b";"):
                if not field.isdigit():
                    continue
                mode = int(field)
                if mode in PRIVATE_MODES_OFF_BY_DEFAULT:
                    self.changed[mode] = on
                elif mode in PRIVATE_MODES_ON_BY_DEFAULT:
                    self.changed[mode] = not on
        elif final == 0x75:  # u: kitty keyboard protocol
            first = params.split(b";")[0].split(b":")[0]
            if kind == 0x3E:  # > flags u: push
                self.kitty_pushed += 1
                self.kitty_stack.append(int(first) if first.isdigit() else 0)
            elif kind == 0x3C:  # < n u: pop n
                popped = int(first) if first.isdigit() else 1
                self.kitty_pushed = max(0, self.kitty_pushed - popped)
                del self.kitty_stack[max(0, len(self.kitty_stack) - popped):]
            elif kind == 0x3D:  # = flags ; mode u: set
                self.kitty_set = first.isdigit() and int(first) != 0
                self.kitty_flags = int(first) if self.kitty_set else 0
        elif kind == 0x3E and final == 0x6D:  # > 4 ; n m: xterm modifyOtherKeys
            fields = params.split(b";")
            if fields[0] == b"4":
                self.other_keys = len(fields) > 1 and fields[1].isdigit() and int(fields[1]) > 0
                self.other_keys_level = int(fields[1]) if self.other_keys else 0
        return j + 1

    def reset_sequence(self) -> bytes:
        """What turns off every mode still on: the alternate screen last, so the shell's screen returns."""
        out = []
        if self.kitty_pushed:
            out.append(b"\x1b[<%du" % self.kitty_pushed)
        if self.kitty_set:
            out.append(b"\x1b[=0;1u")
        if self.other_keys:
            out.append(b"\x1b[>4;0m")
        alt, others = self._private_modes(to_default=True)
        return b"".join(out + others + alt)

    def reapply_sequence(self) -> bytes:
        """What turns every mode of `reset_sequence` on again (job control: the tool's screen is back).

        The alternate screen first, so the modes after it, and the tool's
        redraw, land on the tool's screen.
        """
        alt, out = self._private_modes(to_default=False)
        out += [b"\x1b[>%du" % flags for flags in self.kitty_stack]
        if self.kitty_set:
            out.append(b"\x1b[=%d;1u" % self.kitty_flags)
        if self.other_keys:
            out.append(b"\x1b[>4;%dm" % self.other_keys_level)
        return b"".join(alt + out)

    def _private_modes(self, *, to_default: bool) -> tuple[list[bytes], list[bytes]]:
        """(alternate-screen sequences, the others) that set each private mode the tool changed back to the
        terminal's default (`to_default`) or again as the tool had it; each caller orders the two lists."""
        alt, others = [], []
        for mode, differs in sorted(self.changed.items()):
            if not differs:
                continue
            tool_turned_on = mode not in PRIVATE_MODES_ON_BY_DEFAULT
            final = b"l" if tool_turned_on == to_default else b"h"
            (alt if mode in _ALT_SCREEN else others).append(b"\x1b[?%d" % mode + final)
        return alt, others


def _unfinished(data: bytes, i: int) -> bool:
    """Whether the escape sequence starting at `i` runs past the end of `data`."""
    n = len(data)
    if i + 1 >= n:
        return True
    if data[i + 1] != 0x5B:  # not a CSI: ESC + one byte, complete (or not one we track)
        return False
    j = i + 2
    while j < n and not 0x40 <= data[j] <= 0x7E:
        j += 1
    return j >= n
