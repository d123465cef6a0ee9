#!/bin/bash
# Runs shellcheck over the harness: scripts/*.sh, scripts/ssdq-stat, tests/*.sh, .ci/run (warnings and
# errors). Part of `make lint`; its own line in `make check`. Prints the
# short reason on stdout when it fails; details in build/shellcheck.log.
set -euo pipefail
. "$(dirname "$0")/common.sh"

command -v shellcheck >/dev/null || die "shellcheck missing (run: make deps)"
mkdir -p "$SSDQ_BUILD"
log=$SSDQ_BUILD/shellcheck.log
cd "$SSDQ_REPO"
mapfile -t files < <(ls scripts/*.sh scripts/ssdq-stat tests/*.sh .ci/run 2>/dev/null)
# -P SCRIPTDIR: follow the `. "$(dirname "$0")/lib.sh"` style sources.
if shellcheck -x -P SCRIPTDIR -S warning "${files[@]}" >"$log" 2>&1; then
	echo "shellcheck: clean (${#files[@]} files)" >&2
	exit 0
fi
n=$(grep -c '^In ' "$log" || true)
first=$(grep -m1 '^In ' "$log" || true)
cat "$log" >&2
echo "$n findings, first: ${first#In }"
exit 1
