"""`{placeholder}` substitution into a hook's shell command: every value one inert word.

Values come from the outside world (a cloned repository's directory name is
`{cwd}`), so wherever a placeholder sits, the shell must see exactly the value
as data and run nothing of it. The right quoting depends on the context, so
`substitute` follows the command's syntax (a scanner, not a full parser):

* unquoted, inside `$(…)`, `(…)`, backticks, unquoted `${…}` words:
  `shlex.quote` semantics (bare when only safe characters, else `'…'`);
* inside `'…'`: the quote is closed, the value quoted, the quote reopened;
* inside `"…"`: backslash escapes (`\\ $ \\` "`), so the value stays inside
  the same double-quoted word (closing and reopening the quote is wrong in
  `"${VAR:-{cwd}}"`, where dash and bash read `'` literally);
* inside `"${…}"`: a nested `"…"` with backslash escapes (a `}` in the value
  cannot end the expansion), and `<(` / `>(` split by `""` there (bash reads
  them as a process substitution's start while it looks for the `}`);
* inside backticks: additionally backslash-escaped once per nesting level, and `<(` / `>(`
  split by an empty quote (`<''(` in a single-quoted value: bash, reading a backtick
  substitution inside `"…"`, took `'{<(` for a process substitution's start);
* arithmetic (`$((…))`, `((…))`, `${x:offset}`, `${a[index]}`): only an
  integer is substituted, anything else is left as the literal placeholder
  (an arithmetic error, not code: both shells run `$(…)` found there);
* here-document bodies: with an unquoted delimiter the value is
  backslash-escaped, with an empty expansion `${0+}` in front of every value
  line that could otherwise end the document or lose its tabs (`<<-`); with
  a quoted delimiter the value goes in verbatim when that is safe, else the
  line's placeholders stay as they are (a line that would end the document,
  or start with its delimiter, which bash reads as its end inside `$(…)`,
  or lose tabs, or that dash would misread: the delimiter's first characters
  followed by a non-ASCII byte; or a value holding \x01, which bash takes
  for its own escape byte there). In an unquoted body, placeholders
  after the first `$(`, `${…}` with an operator, `$((` or backtick are left
  as they are (no quoting is right both inside and outside those).

Not understood: `$'…'`, `case` patterns inside `$(…)`, bash's `[[ x -eq y ]]`
and `let` (which evaluate a quoted word arithmetically).
"""

from __future__ import annotations

TYPE_CHECKING = False  # typing costs ~10 ms to import; annotations are strings
if TYPE_CHECKING:
    from typing import Mapping

_SAFE_WORD = frozenset("abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789_@%+=:,./-")
_SIMPLE_PARAM = r"\$(?:\{(?:[A-Za-z_][A-Za-z0-9_]*|[0-9]+|[@*#?$!0-])\}|[A-Za-z_0-9@*#?$!-])"
_PLACEHOLDER = r"\{([^{}\n]*)\}"
# Patterns are compiled (and cached by `re`) on first use: most commands have no here-document,
# and hook_runner is loaded before the tool starts when pre_run is configured.
_EMPTY_EXPANSIONS = ("${0+}", "${1+}", "${_+}")
"""Expand to nothing in a here-document body, whatever is set; they break a would-be delimiter line."""

# Contexts on the scanner's stack.
U, S, D, C, P, B, A = "U", "S", "D", "C", "P", "B", "A"  # unquoted, '…', "…", $(…), (…), `…`, arithmetic
VU, VD = "VU", "VD"  # ${…} in an unquoted / double-quoted context
VUA, VDA = "VUA", "VDA"  # ${x:offset:length}, arithmetic parts of a ${…}
_CODE = (U, C, P, B)  # where shell code (comments, here-documents, subshells) is parsed


def sq(value: str) -> str:
    """`shlex.quote` semantics without importing shlex: one literal shell word.

    Values made only of safe characters (ULIDs, tool names, most paths) stay
    bare, which keeps the commands in session records readable.
    """
    if value and all(ch in _SAFE_WORD for ch in value):
        return value
    return "'" + value.replace("'", "'\"'\"'") + "'"


def dq(value: str) -> str:
    """The value's text for inside `"…"`: the four characters special there get a backslash."""
    return value.replace("\\", "\\\\").replace("$", "\\$").replace("`", "\\`").replace('"', '\\"')


def _no_process_substitution(text: str) -> str:
    """`<(` and `>(` split by an empty `""`, for a value in `"…"` inside a double-quoted `${…}`.

    bash, looking there for the end of the expansion, reads `<(` as the start of a process
    substitution and wants its `)`: a value `<(` made the whole command a syntax error (nothing
    ran, but the hook failed). `<""(` is the same text in every shell and no such start.
    """
    return text.replace("<(", '<""(').replace(">(", '>""(')


def _no_process_substitution_quoted(text: str) -> str:
    """`<(` and `>(` split by an empty `''`, for a value in `'…'` inside backticks.

    bash, scanning a backtick substitution inside `"…"`, reads `'{<(` as the start of a
    process substitution and wants its `)` (found by the fuzz test: the value `'{v}<(`).
    Inside single quotes `<''(` is the same text in every shell and no such start.
    """
    return text.replace("<(", "<''(").replace(">(", ">''(")


def substitute(template: str, variables: Mapping[str, str]) -> str:
    """Replace `{name}` placeholders with values quoted for where they sit, in one pass.

    One pass: a value that itself contains `{tool}` is not expanded again.
    Unknown placeholders, `${name}` (the shell's own syntax) and `\\{name}`
    are left unchanged. See the module docstring for the quoting per context.
    """
    return _Scanner(template, variables).run()


class _Scanner:
    def __init__(self, template: str, variables: Mapping[str, str]) -> None:
        self.t = template
        self.vars = variables
        self.out: list[str] = []
        self.stack = [U]
        self.heredocs: list[tuple[str, bool, bool]] = []  # (delimiter, strip tabs, quoted)

    def run(self) -> str:
        i, n = 0, len(self.t)
        while i < n:
            i = self.step(i)
        return "".join(self.out)

    def step(self, i: int) -> int:  # noqa: C901 - one place for the shell's lexical rules
        t, n, out, stack = self.t, len(self.t), self.out, self.stack
        ch = t[i]
        ctx = stack[-1]
        if ctx == S:
            if ch == "'":
                stack.pop()
            elif ch == "{":
                end = self.placeholder(i)
                if end:
                    return end
            out.append(ch)
            return i + 1
        if ch == "\\" and i + 1 < n:
            depth = stack.count(B)
            if depth:
                # Nested backticks: `… \`inner\` …` (2**depth - 1 backslashes open, 2**(depth-1) - 1 close).
                run = len(t[i:]) - len(t[i:].lstrip("\\"))
                if t.startswith("`", i + run):
                    if run == 2**depth - 1:
                        stack.append(B)
                    elif ctx == B and depth > 1 and run == 2 ** (depth - 1) - 1:
                        stack.pop()
                    if run in (2**depth - 1, 2 ** (depth - 1) - 1):
                        out.append(t[i : i + run + 1])
                        return i + run + 1
            out.append(t[i : i + 2])
            return i + 2
        if ch == "{" and not (i > 0 and t[i - 1] == "$"):
            end = self.placeholder(i)
            if end:
                return end
        if ctx in _CODE and ch == "#" and (i == 0 or t[i - 1] in " \t\n;&|()"):
            # A comment: copied as is, so an apostrophe in it cannot derail the scanner.
            end = t.find("\n", i)
            end = n if end == -1 else end
            out.append(t[i:end])
            return end
        if ctx in _CODE and t.startswith("<<<", i):  # bash here-string: a word follows
            out.append("<<<")
            return i + 3
        if ctx in _CODE and t.startswith("<<", i):
            end, delimiter, strip_tabs, quoted = _heredoc_operator(t, i)
            if delimiter:
                self.heredocs.append((delimiter, strip_tabs, quoted))
            out.append(t[i:end])
            return end
        if ch == "\n" and self.heredocs and ctx in _CODE:
            out.append(ch)
            i += 1
            for delimiter, strip_tabs, quoted in self.heredocs:
                i = self.heredoc_body(i, delimiter, strip_tabs, quoted)
            self.heredocs.clear()
            return i
        if t.startswith("$((", i) or (ctx in _CODE and t.startswith("((", i)):
            stack.append(A)
            start = i + (3 if ch == "$" else 2)
            out.append(t[i:start])
            return start
        if t.startswith("$(", i):
            stack.append(C)
            out.append("$(")
            return i + 2
        if t.startswith("${", i):
            return self.parameter(i)
        if ch == "`":
            if ctx == B:
                stack.pop()
            else:
                stack.append(B)
        elif ctx == A and t.startswith("))", i):
            stack.pop()
            out.append("))")
            return i + 2
        elif ctx in (VU, VD, VUA, VDA):
            if ch == "}":
                stack.pop()
            elif ch == '"':
                stack.append(D)
            elif ch == "'" and ctx in (VU, VUA):
                stack.append(S)
        elif ctx == D:
            if ch == '"':
                stack.pop()
        elif ch == "'":
            stack.append(S)
        elif ch == '"':
            stack.append(D)
        elif ch == "(":
            stack.append(P)
        elif ch == ")" and ctx in (C, P):
            stack.pop()
        out.append(ch)
        return i + 1

    # -- ${…}

    def parameter(self, i: int) -> int:
        """`${`, its name and subscript copied; the rest is scanned in a V context."""
        t, n = self.t, len(self.t)
        j = i + 2
        if j < n and t[j] in "#!" and j + 1 < n and t[j + 1] != "}":
            j += 1  # ${#name}, ${!name}
        j = _name_end(t, j)
        self.out.append(t[i:j])
        if j < n and t[j] == "[":
            close = t.find("]", j)
            close = n - 1 if close == -1 else close
            # An index is arithmetic: integers only.
            import re

            self.out.append(re.sub(_PLACEHOLDER, lambda m: self.arith_value(m.group(0)), t[j : close + 1]))
            j = close + 1
        quoted = self.stack[-1] in (D, VD, VDA)
        offset = j + 1 < n and t[j] == ":" and t[j + 1] not in "-=?+"
        self.stack.append((VDA if quoted else VUA) if offset else (VD if quoted else VU))
        return j

    # -- placeholders

    def placeholder(self, i: int) -> int:
        """Substitute a known `{name}` at `i`; the index after it, or 0 when it is none."""
        end = self.t.find("}", i + 1)
        if end == -1 or self.t[i + 1 : end] not in self.vars:
            return 0
        value = str(self.vars[self.t[i + 1 : end]])
        if self.arithmetic():
            self.out.append(self.arith_value(self.t[i : end + 1]))
            return end + 1
        ctx = self.stack[-1]
        if ctx == S:
            text = "'" + sq(value) + "'"
        elif ctx == D:
            text = dq(value) if VD not in self.stack else _no_process_substitution(dq(value))
        elif ctx == VD:
            text = '"' + _no_process_substitution(dq(value)) + '"'
        elif ctx == VU:
            # always quoted: a bare `%` or `#` after `${x%` would make another operator (`%%`)
            text = "'" + value.replace("'", "'\"'\"'") + "'"
        else:
            text = sq(value)
        if B in self.stack and ctx not in (D, VD):  # single-quoted (or bare: no `<(` then)
            text = _no_process_substitution_quoted(text)
        self.out.append(_in_backticks(text, self.stack.count(B)))
        return end + 1

    def arith_value(self, token: str) -> str:
        name = token[1:-1]
        if name not in self.vars:
            return token
        value = str(self.vars[name])
        digits = value[1:] if value[:1] in "+-" else value
        return value if digits.isascii() and digits.isdigit() else token

    def arithmetic(self) -> bool:
        """Whether text here is evaluated arithmetically (nearest command context wins)."""
        for ctx in reversed(self.stack):
            if ctx in (A, VUA, VDA):
                return True
            if ctx in (U, C, B):
                return False
        return False

    # -- here-documents

    def heredoc_body(self, i: int, delimiter: str, strip_tabs: bool, quoted: bool) -> int:
        """Copy one here-document body and its delimiter line, placeholders substituted; index after."""
        t, n = self.t, len(self.t)
        blocked = B in self.stack  # backtick rules on top of a body's: not attempted
        while i < n:
            end = i
            while True:  # one logical line: backslash-newline continues it (unquoted delimiter)
                nl = t.find("\n", end)
                nl = n if nl == -1 else nl
                text = t[end:nl]
                end = min(nl + 1, n)
                if quoted or (len(text) - len(text.rstrip("\\"))) % 2 == 0 or end >= n:
                    break
            line = t[i:end]
            i = end
            logical = line.rstrip("\n") if quoted else line.rstrip("\n").replace("\\\n", "")
            if (logical.lstrip("\t") if strip_tabs else logical) == delimiter:
                self.out.append(line)
                break
            if blocked:
                self.out.append(line)
            elif quoted:
                self.out.append(self.literal_line(line, delimiter, strip_tabs))
            else:
                text, blocked = self.expanding_line(line, delimiter, strip_tabs)
                self.out.append(text)
        return i

    def _fill(self, line: str, render) -> tuple[str, bool]:
        """Placeholders of `line` replaced by render(value); (text, whether any was)."""
        import re

        parts: list[str] = []
        found = False
        k = 0
        for match in re.finditer(_PLACEHOLDER, line):
            if match.group(1) in self.vars and not (match.start() > 0 and line[match.start() - 1] in "$\\"):
                parts.append(line[k : match.start()])
                parts.append(render(str(self.vars[match.group(1)])))
                k = match.end()
                found = True
        parts.append(line[k:])
        return "".join(parts), found

    def literal_line(self, line: str, delimiter: str, strip_tabs: bool) -> str:
        """A quoted-delimiter body line: values verbatim, unless that would end the document or lose tabs."""
        text, found = self._fill(line, lambda value: value)
        if not found:
            return line
        # bash (5.2) takes \x01 for its own escape byte when it reads a quoted here-document inside
        # `$(…)`: `\x01\x01` comes out as `\x01`, `\x01\x7f` as `\x7f` (an unquoted body's escaping keeps it).
        safe = "\x01" not in text and _body_safe(line, text, delimiter, strip_tabs)
        return text if safe else line

    def expanding_line(self, line: str, delimiter: str, strip_tabs: bool) -> tuple[str, bool]:
        """An unquoted-delimiter body line; (text, whether the rest of the body must be left alone)."""
        stop = _first_nested(line)
        head, tail = line[:stop], line[stop:]
        guard = next((g for g in _EMPTY_EXPANSIONS if g not in delimiter), "")

        def escaped(value: str, lead: str) -> str:
            value = value.replace("\\", "\\\\").replace("$", "\\$").replace("`", "\\`")
            return lead + value.replace("\n", "\n" + guard) if guard else lead + value

        text, found = self._fill(head, lambda value: escaped(value, ""))
        if found and not _body_safe(line, text + tail, delimiter, strip_tabs):
            text, _ = self._fill(head, lambda value: escaped(value, guard))
            if not guard or not _body_safe(line, text + tail, delimiter, strip_tabs):
                text = head
        return text + tail, stop < len(line)


def _first_nested(line: str) -> int:
    """Index of the first `$(`, `${…}` with an operator, `$[` or backtick in a body line (len when none)."""
    import re

    k = 0
    n = len(line)
    while k < n:
        ch = line[k]
        if ch == "\\":
            k += 2
            continue
        if ch == "`":
            return k
        if ch == "$":
            simple = re.compile(_SIMPLE_PARAM).match(line, k)
            if simple:
                k = simple.end()
                continue
            if k + 1 < n and line[k + 1] in "({[":
                return k
        k += 1
    return n


def _body_safe(template_line: str, text: str, delimiter: str, strip_tabs: bool) -> bool:
    """No line of `text` ends the document, and `<<-` strips no tab that came from a value.

    A line that merely starts with the delimiter counts as ending it: bash
    (5.2) reading a here-document inside `$(…)` ends it at `EOF$(…)` or
    `EOF\\$(…)` and runs the rest as commands, even under a quoted delimiter.
    """
    lines = text.rstrip("\n").split("\n")
    for number, line in enumerate(lines):
        bare = line.lstrip("\t") if strip_tabs else line
        if bare == delimiter or (delimiter and bare.startswith(delimiter)) or _dash_drops_a_byte(bare, delimiter):
            return False
        if strip_tabs:
            tabs = len(line) - len(line.lstrip("\t"))
            own = len(template_line) - len(template_line.lstrip("\t")) if number == 0 else 0
            if tabs > own:
                return False
    return True


def _name_end(t: str, j: int) -> int:
    """Index after the parameter name at `j` (a name, digits, or one special character)."""
    n = len(t)
    if j < n and (t[j].isascii() and (t[j].isalpha() or t[j] == "_")):
        while j < n and t[j].isascii() and (t[j].isalnum() or t[j] == "_"):
            j += 1
    elif j < n and t[j].isascii() and t[j].isdigit():
        while j < n and t[j].isascii() and t[j].isdigit():
            j += 1
    elif j < n and t[j] in "@*#?$!-":
        j += 1
    return j


def _dash_drops_a_byte(line: str, delimiter: str) -> bool:
    """dash (0.5.12) loses the byte after a line's delimiter-prefix when it is not ASCII (`E\\xe9` → `\\xa9`)."""
    k = 0
    while k < min(len(line), len(delimiter)) and line[k] == delimiter[k]:
        k += 1
    return 0 < k < len(line) and not line[k].isascii()


def _heredoc_operator(template: str, i: int) -> tuple[int, str, bool, bool]:
    """Parse `<<[-] WORD` at `i`: (index after it, delimiter with quotes removed, strip tabs, quoted)."""
    n = len(template)
    j = i + 2
    strip_tabs = j < n and template[j] == "-"
    j += 1 if strip_tabs else 0
    while j < n and template[j] in " \t":
        j += 1
    word: list[str] = []
    quoted = False
    while j < n and template[j] not in " \t\n;&|<>()":
        ch = template[j]
        if ch in "'\"":
            quoted = True
            close = template.find(ch, j + 1)
            close = n if close == -1 else close
            word.append(template[j + 1 : close])
            j = close + 1
        elif ch == "\\":
            quoted = True
            word.append(template[j + 1 : j + 2])
            j += 2
        else:
            word.append(ch)
            j += 1
    return min(j, n), "".join(word), strip_tabs, quoted


def _in_backticks(text: str, levels: int) -> str:
    """Inside `…` the shell first undoes backslash escapes and ends at any backtick,
    quotes or not; escape once per nesting level so the quoted value survives."""
    for _ in range(levels):
        text = text.replace("\\", "\\\\").replace("`", "\\`").replace("$", "\\$")
    return text
