#!/bin/bash
# The driver's documentation names only what exists: every ssdq_*()
# function and every driver file (name.c, name.h) that README.md and
# Documentation/*.rst mention must be in drivers/ or include/, one said to
# be in a given file ("io.c: ssdq_queue_rq()") must be defined there, and
# every document must parse (docutils). Run by make lint; a rename that
# leaves a stale reference fails it. testing.rst must list the matrix's
# cases as tests/matrix-cases.sh makes them.
#
#   scripts/docrefs.sh [SRCDIR]    (default: the repo)
set -euo pipefail
. "$(dirname "$0")/common.sh"

src=$(cd "${1:-$SSDQ_REPO}" && pwd -P)
cd "$src"
docs=(README.md Documentation/*.rst)
mapfile -t code < <(find drivers include -name '*.[ch]' ! -name '*.mod.c' | sort)

bad=0
# Functions: "ssdq_name()" in prose or code samples.
while read -r f; do
	grep -qE "\\b$f\\(" "${code[@]}" && continue
	echo "docrefs: $f() is mentioned but not defined: $(grep -lE "\\b$f\\(" "${docs[@]}" | tr '\n' ' ')" >&2
	bad=$((bad + 1))
done < <(grep -ohE '\bssdq_[a-z0-9_]+\(' "${docs[@]}" | tr -d '(' | sort -u)
# Files: "queue.c", "ssdq.h", with or without their directory.
known=$(printf '%s\n' "${code[@]##*/}")
while read -r f; do
	grep -qxF "$f" <<<"$known" && continue
	echo "docrefs: $f is mentioned but is no driver file: $(grep -lwF "$f" "${docs[@]}" | tr '\n' ' ')" >&2
	bad=$((bad + 1))
done < <(grep -ohE '(drivers/block/ssdq/|`)[a-z_]+\.[ch]\b' "${docs[@]}" | sed 's|.*/||; s|`||' | sort -u)
# "file.c: ssdq_name()" (design.rst's walk of one request): defined there.
while read -r ref; do
	f=${ref%%:*}
	fn=${ref##* }
	fn=${fn%(}
	path=$(printf '%s\n' "${code[@]}" | grep -E "/$f\$" | head -n1)
	if [[ -z $path ]] || ! grep -qE "^([a-z].*[ *])?$fn\(" "$path"; then
		echo "docrefs: $fn() is said to be in $f, but is not defined there" >&2
		bad=$((bad + 1))
	fi
done < <(grep -ohE '[a-z_]+\.[ch]: ssdq_[a-z0-9_]+\(' "${docs[@]}" | sort -u)
# testing.rst's list of the combination matrix's cases is the one
# tests/matrix-cases.sh makes (the literal block after "The cases (").
listed=$(awk '/^The cases \(/ { on = 1; next } on && /^  [0-9]/ { print substr($0, 3) }
	on && /^[A-Z]/ { exit }' Documentation/testing.rst)
if [[ $listed != "$(bash tests/matrix-cases.sh)" ]]; then
	echo "docrefs: Documentation/testing.rst's matrix cases differ from what tests/matrix-cases.sh prints" >&2
	bad=$((bad + 1))
fi
# And every document parses: a malformed table or a broken link target
# would hide what it says. (toctree is Sphinx's, not docutils'.)
rst_errors=$(python3 - "${docs[@]:1}" <<'PY'
import io, sys
import docutils.core
for path in sys.argv[1:]:
    err = io.StringIO()
    with open(path) as f:
        docutils.core.publish_doctree(
            f.read(), source_path=path,
            settings_overrides={"warning_stream": err, "report_level": 2})
    for line in err.getvalue().splitlines():
        if "(ERROR" in line or "(WARNING" in line or "(SEVERE" in line:
            if 'directive type "toctree"' not in line:
                print(line)
PY
)
if [[ -n $rst_errors ]]; then
	echo "docrefs: $rst_errors" | head -n5 >&2
	bad=$((bad + $(grep -c . <<<"$rst_errors")))
fi
((bad == 0)) || { echo "docrefs: $bad stale references or malformed documents" >&2; exit 1; }
echo "docrefs: ${#docs[@]} documents parse; every ssdq_*() and driver file they name exists; the matrix's cases are listed" >&2
