#!/bin/sh
# Installs wrapagent for the current user from this checkout, then starts the demo.
#
# Today's Linux and macOS Pythons (Debian 12, Ubuntu 24.04, Homebrew) refuse
# `pip install` into the system interpreter (PEP 668, "externally-managed-
# environment"), so this never installs there and never passes
# --break-system-packages. In order of preference:
#   pipx, when on PATH:  pipx install .
#   uv, when on PATH:    uv tool install .
#   else:                a private virtualenv in ~/.local/share/wrapagent/venv
#                        ($XDG_DATA_HOME) and a `wrapagent` link in ~/.local/bin
# Run it again to update. `./install.sh --uninstall` removes what the virtualenv
# route created (pipx and uv uninstall their own).
set -eu

usage() {
    cat <<'EOF'
usage: ./install.sh [--with pipx|uv|venv] [--no-demo] [--uninstall]

Install wrapagent for you (never into the system Python), then run `wrapagent demo`.
  --with M      install with pipx, uv or a private virtualenv (default: the first present)
  --no-demo     install only (the demo runs only on a terminal anyway)
  --uninstall   remove the private virtualenv and its ~/.local/bin/wrapagent link
Environment: PYTHON (the interpreter, default python3), XDG_DATA_HOME.
EOF
}

say() { printf 'install.sh: %s\n' "$*" >&2; }
die() { say "$*"; exit 1; }

method=""
demo=1
uninstall=0
while [ $# -gt 0 ]; do
    case "$1" in
        --with) [ $# -ge 2 ] || die "--with needs pipx, uv or venv"; method=$2; shift ;;
        --with=*) method=${1#--with=} ;;
        --no-demo) demo=0 ;;
        --uninstall) uninstall=1 ;;
        -h|--help) usage; exit 0 ;;
        *) usage >&2; exit 2 ;;
    esac
    shift
done

cd "$(dirname "$0")"
[ -n "${HOME:-}" ] || die "HOME is not set"
PY=${PYTHON:-python3}
data_dir=${XDG_DATA_HOME:-$HOME/.local/share}/wrapagent
venv=$data_dir/venv
bin_dir=$HOME/.local/bin
link=$bin_dir/wrapagent

# A link in ~/.local/bin is ours when it points into our private virtualenv.
link_is_ours() {
    [ -L "$link" ] && [ "$(readlink "$link")" = "$venv/bin/wrapagent" ]
}

if [ "$uninstall" -eq 1 ]; then
    if link_is_ours; then rm -f "$link" && say "removed $link"; fi
    if [ -d "$venv" ]; then rm -rf "$venv" && say "removed $venv"; fi
    say "wrapagent's shims, records and configuration stay: \`wrapagent uninstall\` first removes those"
    exit 0
fi

command -v "$PY" >/dev/null 2>&1 || die "no $PY on PATH: install Python 3.9 or newer (or set PYTHON=/path/to/python3)"
"$PY" -c 'import sys; sys.exit(sys.version_info < (3, 9))' \
    || die "$PY is $("$PY" -V 2>&1); wrapagent needs Python 3.9 or newer (set PYTHON=/path/to/python3)"

if [ -z "$method" ]; then
    if command -v pipx >/dev/null 2>&1; then method=pipx
    elif command -v uv >/dev/null 2>&1; then method=uv
    else method=venv
    fi
fi

install_venv() {
    mkdir -p "$data_dir" && chmod 700 "$data_dir"
    if [ ! -x "$venv/bin/python" ] || ! "$venv/bin/python" -c '' 2>/dev/null; then
        rm -rf "$venv"
        say "creating a private virtualenv in $venv"
        if ! "$PY" -m venv "$venv"; then
            rm -rf "$venv"
            die "$PY cannot make a virtualenv; on Debian or Ubuntu: sudo apt install python3-venv, then run ./install.sh again"
        fi
    fi
    say "installing wrapagent into it (pip)"
    "$venv/bin/python" -m pip install --quiet --disable-pip-version-check --upgrade . \
        || die "pip could not install wrapagent into $venv (its message is above)"
    mkdir -p "$bin_dir"
    if [ -e "$link" ] && ! [ -L "$link" ]; then
        say "$link exists and is not a link: left alone; run wrapagent as $venv/bin/wrapagent"
        launcher=$venv/bin/wrapagent
        return
    fi
    ln -sf "$venv/bin/wrapagent" "$link"
    launcher=$link
}

case "$method" in
    pipx)
        say "installing with pipx"
        pipx install --force --python "$PY" . || die "pipx could not install wrapagent; ./install.sh --with venv avoids pipx"
        bin_dir=$(pipx environment --value PIPX_BIN_DIR 2>/dev/null || echo "$bin_dir")
        launcher=$bin_dir/wrapagent ;;
    uv)
        say "installing with uv"
        uv tool install --force --python "$PY" . || die "uv could not install wrapagent; ./install.sh --with venv avoids uv"
        bin_dir=$(uv tool dir --bin 2>/dev/null || echo "$bin_dir")
        launcher=$bin_dir/wrapagent ;;
    venv) install_venv ;;
    *) die "--with takes pipx, uv or venv, not $method" ;;
esac

[ -x "$launcher" ] || die "the install ended without $launcher"
say "installed: $launcher ($("$launcher" --version))"

# Is the launcher what `wrapagent` runs in a new shell?
case ":$PATH:" in
    *":$bin_dir:"*)
        found=$(command -v wrapagent 2>/dev/null || true)
        if [ -n "$found" ] && [ "$found" != "$launcher" ]; then
            say "note: $found comes first on your PATH; it is another wrapagent, not the one just installed"
        fi ;;
    *)
        say "$bin_dir is not on your PATH: add this line to your shell's rc file (~/.bashrc, ~/.zshrc):"
        # shellcheck disable=SC2016 # the rc line is meant literally
        say '    export PATH="$HOME/.local/bin:$PATH"'
        say "until then, run it as $launcher" ;;
esac

if [ "$demo" -eq 1 ]; then
    if [ -t 0 ] && [ -t 1 ]; then
        say "starting the demo: type a message and press Enter; /quit leaves"
        exec "$launcher" demo
    fi
    say "not on a terminal: run \`$launcher demo\` in one to see it work"
fi
