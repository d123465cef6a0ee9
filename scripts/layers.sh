#!/bin/bash
# The driver's layering, checked on the object files: Kbuild lists them from
# the lowest layer up, and a file may use only symbols defined by itself or
# by a file listed before it. So a lower layer never calls (or names) a
# higher one. Documentation/design.rst explains the order.
#
#   scripts/layers.sh [SRCDIR]    (after a build; default: the repo)
set -euo pipefail
. "$(dirname "$0")/common.sh"

src=$(cd "${1:-$SSDQ_REPO}" && pwd -P)
mapfile -t objs < <(grep -oE 'drivers/block/ssdq/[a-z_]+\.o' "$src/Kbuild")
((${#objs[@]})) || die "no objects listed in $src/Kbuild"

declare -A rank owner
for i in "${!objs[@]}"; do
	o=$src/${objs[$i]}
	[[ -f $o ]] || die "${objs[$i]} not built (run make first)"
	rank[${objs[$i]}]=$i
	while read -r sym; do
		owner[$sym]=${objs[$i]}
	done < <(nm --defined-only -g "$o" | awk '{ print $3 }')
done

bad=0
for f in "${objs[@]}"; do
	while read -r sym; do
		g=${owner[$sym]:-}
		[[ -n $g ]] || continue	# the kernel's
		if ((rank[$g] > rank[$f])); then
			echo "layers: ${f%.o}.c uses $sym from ${g%.o}.c, a higher layer" >&2
			bad=$((bad + 1))
		fi
	done < <(nm --undefined-only "$src/$f" | awk '{ print $2 }')
done
((bad == 0)) || { echo "layers: $bad upward references" >&2; exit 1; }
echo "layers: ${#objs[@]} files, no upward references" >&2
