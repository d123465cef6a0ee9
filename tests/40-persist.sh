#!/bin/bash
# persistence: a known pattern written with O_DIRECT reads back the same,
# survives rmmod + insmod, and (host post-check 40-persist.post.sh) is in
# the image file at the same offset after poweroff.
# timeout: 300
# In the debug lane only with SSDQ_DEBUG_FULL=1 (CI's budget): load, unbind
# and recovery run its driver paths there.
# debug-lane: full
set -euo pipefail
. "$(dirname "$0")/lib.sh"

pat=$(pattern_file pattern.bin "$REG_PERSIST_LEN")
dut_load
dev_write "$pat" "$DEV" "$REG_PERSIST_OFF" || fail "writing the pattern failed"
sync
ok "wrote $REG_PERSIST_LEN bytes at $REG_PERSIST_OFF (O_DIRECT + fsync)"
dev_cmp "$DEV" "$REG_PERSIST_OFF" "$REG_PERSIST_LEN" "$pat" "read back"

# The sector right before the pattern was never written: must still be 0.
dev_cmp "$DEV" $((REG_PERSIST_OFF - 4096)) 4096 /dev/zero "untouched 4k before the pattern"

dut_unload
dut_load
dev_cmp "$DEV" "$REG_PERSIST_OFF" "$REG_PERSIST_LEN" "$pat" "read back after rmmod+insmod"
