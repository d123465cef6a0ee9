#!/bin/bash
# Host side of the persistence test: after poweroff, the pattern the guest
# wrote through the DUT is in the image file byte for byte.
set -euo pipefail
. "$(dirname "$0")/lib.sh"

img=$SSDQ_OUT/ssdq0.img
pat=$(pattern_file pattern.bin "$REG_PERSIST_LEN")
out=$(cmp -n "$REG_PERSIST_LEN" -i "$REG_PERSIST_OFF:0" "$img" "$pat" 2>&1) ||
	fail "post: image differs from pattern at offset $REG_PERSIST_OFF: $out"
ok "image holds the pattern at $REG_PERSIST_OFF"
