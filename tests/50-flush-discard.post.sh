#!/bin/bash
# Host side of flush-discard: in the image file, the write-zeroed range is
# zero and the pattern around it is intact.
set -euo pipefail
. "$(dirname "$0")/lib.sh"

img=$SSDQ_OUT/ssdq0.img
pat=$(pattern_file discard-pattern.bin "$REG_DISCARD_LEN")
out=$(cmp -n "$REG_ZERO_LEN" -i "$REG_ZERO_OFF:0" "$img" /dev/zero 2>&1) ||
	fail "post: write-zeroed range not zero in the image: $out"
ok "image: write-zeroed range is zero"
zoff=$((REG_ZERO_OFF - REG_DISCARD_OFF))
after=$((zoff + REG_ZERO_LEN))
out=$(cmp -n $((zoff - 8 * MiB)) -i "$((REG_DISCARD_OFF + 8 * MiB)):$((8 * MiB))" "$img" "$pat" 2>&1) ||
	fail "post: pattern before the zeroed range differs in the image: $out"
out=$(cmp -n $((REG_DISCARD_LEN - after)) -i "$((REG_DISCARD_OFF + after)):$after" "$img" "$pat" 2>&1) ||
	fail "post: pattern after the zeroed range differs in the image: $out"
ok "image: pattern around the zeroed range intact"
