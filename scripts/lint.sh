#!/bin/bash
# make lint: checkpatch --strict, sparse (C=2) and a W=1 build over the
# driver sources, the layering of its files (scripts/layers.sh) and the
# documentation's references to them (scripts/docrefs.sh).
# Everything must be clean: any warning fails.
#
#   scripts/lint.sh [SRCDIR]     (default: the repo)
#
# checkpatch.pl and its data files come from Debian's linux-source-6.12
# tarball, extracted once into a cache outside the repo ($SSDQ_CACHE,
# default /var/cache/ssdq or ~/.cache/ssdq). Full output: build/lint.log.
# (The harness's shell scripts: scripts/shellcheck.sh.)
set -euo pipefail
. "$(dirname "$0")/common.sh"

src=$(cd "${1:-$SSDQ_REPO}" && pwd -P)
kdir=$(ssdq_kdir) || die "no 6.12 kernel headers (run: make deps)"
cache=${SSDQ_CACHE:-}
if [[ -z $cache ]]; then
	if mkdir -p /var/cache/ssdq 2>/dev/null && [[ -w /var/cache/ssdq ]]; then
		cache=/var/cache/ssdq
	else
		cache=$HOME/.cache/ssdq
	fi
fi
mkdir -p "$cache" "$SSDQ_BUILD"
log=$SSDQ_BUILD/lint.log
: >"$log"
problems=()

# ---- checkpatch
get_checkpatch() {
	local tarball d=$cache/checkpatch stamp
	tarball=$(ls /usr/src/linux-source-6.12*.tar.xz 2>/dev/null | sort -V | tail -n1)
	[[ -n $tarball ]] || die "linux-source-6.12 not installed (run: make deps)"
	stamp=$(stat -c '%n %s %Y' "$tarball")
	if [[ ! -x $d/checkpatch.pl || $(cat "$d/.stamp" 2>/dev/null) != "$stamp" ]]; then
		note "extracting checkpatch.pl from $tarball (once)"
		local tmp
		tmp=$(mktemp -d "$cache/.cp.XXXXXX")
		# The tarball's top directory is linux-source-6.12/.
		tar -xJf "$tarball" -C "$tmp" --wildcards --strip-components=2 \
			'*/scripts/checkpatch.pl' '*/scripts/spelling.txt' \
			'*/scripts/const_structs.checkpatch'
		rm -rf "$d"
		mv "$tmp" "$d"
		echo "$stamp" >"$d/.stamp"
	fi
	echo "$d/checkpatch.pl"
}

# Generated files (kbuild's *.mod.c) are not ours to lint.
mapfile -t files < <(cd "$src" && { find drivers -name '*.[ch]' ! -name '*.mod.c' 2>/dev/null; find include -name '*.h' 2>/dev/null; } | sort)
if ((${#files[@]} == 0)); then
	problems+=("no driver sources under drivers/ or include/")
else
	cp=$(get_checkpatch)
	# Trace event headers are laid out the kernel's way (TRACE_EVENT(name,
	# then TP_PROTO, TP_STRUCT__entry( ... one per line), which --strict
	# calls misaligned and open-ended, and their field macros expand to
	# field lists and __entry assignments, not expressions; only those
	# checks are off there.
	mapfile -t trace_h < <(printf '%s\n' "${files[@]}" | grep '/trace\.h$' || true)
	mapfile -t files_c < <(printf '%s\n' "${files[@]}" | grep -v '/trace\.h$')
	cp_out=$(cd "$src" && perl "$cp" --strict --no-tree --file --color=never \
		--show-types --summary-file "${files_c[@]}" 2>&1) || true
	if ((${#trace_h[@]})); then
		cp_out+=$'\n'$(cd "$src" && perl "$cp" --strict --no-tree --file --color=never \
			--show-types --summary-file --ignore OPEN_ENDED_LINE,PARENTHESIS_ALIGNMENT,COMPLEX_MACRO,MACRO_ARG_REUSE \
			"${trace_h[@]}" 2>&1) || true
	fi
	echo "$cp_out" >>"$log"
	# Every "total: E errors, W warnings, C checks" must be all zero.
	# (--summary-file prefixes it with the file name.)
	n=$(sed -nE 's/.*total: ([0-9]+) errors, ([0-9]+) warnings, ([0-9]+) checks.*/\1 \2 \3/p' <<<"$cp_out" |
		awk '{ s += $1 + $2 + $3 } END { print s + 0 }')
	t=$(grep -c 'total: [0-9]* errors' <<<"$cp_out" || true)
	if ((t != ${#files[@]})); then
		problems+=("checkpatch did not report on every file ($t of ${#files[@]})")
	elif ((n > 0)); then
		problems+=("checkpatch: $n errors/warnings/checks")
	fi
fi

# ---- sparse (C=2 checks every file) and W=1 in one forced build. Kbuild
# rebuilds the objects because the flags changed; the next plain build
# rebuilds them again.
if ((${#files[@]})); then
	b_rc=0
	b_out=$(make -C "$kdir" M="$src" C=2 W=1 modules 2>&1) || b_rc=$?
	{ echo "=== make C=2 W=1"; echo "$b_out"; } >>"$log"
	if ((b_rc != 0)); then
		problems+=("C=2 W=1 build failed (status $b_rc)")
	fi
	# Only diagnostics about our own files count (headers of the kernel
	# may trip sparse themselves); paths are absolute under $src.
	w=$(grep -E "^$src/.*(warning|error):" <<<"$b_out" | sort -u || true)
	modpost=$(grep -E '^(WARNING|ERROR): modpost' <<<"$b_out" || true)
	nw=$(grep -c . <<<"$w" || true)
	nm=$(grep -c . <<<"$modpost" || true)
	((nw == 0)) || problems+=("sparse/W=1: $nw warnings: $(head -n1 <<<"$w")")
	((nm == 0)) || problems+=("modpost: $(head -n1 <<<"$modpost")")
	# Leave a normal build behind.
	make -C "$kdir" M="$src" modules >/dev/null 2>&1 || true
	# ---- layering: no file calls into one above it (scripts/layers.sh).
	if ((b_rc == 0)); then
		l_rc=0
		l_out=$("$SSDQ_REPO/scripts/layers.sh" "$src" 2>&1) || l_rc=$?
		{ echo "=== layers"; echo "$l_out"; } >>"$log"
		((l_rc == 0)) || problems+=("$(head -n1 <<<"$l_out")")
	fi
fi

# ---- the documentation names only functions and files that exist.
d_rc=0
d_out=$("$SSDQ_REPO/scripts/docrefs.sh" "$src" 2>&1) || d_rc=$?
{ echo "=== docrefs"; echo "$d_out"; } >>"$log"
((d_rc == 0)) || problems+=("$(head -n1 <<<"$d_out")")

if ((${#problems[@]})); then
	printf 'lint: %s\n' "${problems[@]}" >&2
	echo "lint: FAILED (details in ${log#"$SSDQ_REPO"/})" >&2
	# First line on stdout is the short reason for check.sh.
	echo "${problems[0]}"
	exit 1
fi
echo "lint: clean (checkpatch --strict, sparse C=2, W=1, layers, docrefs)" >&2
