#!/bin/bash
# bad module parameters: each out-of-range value makes the load fail with
# EINVAL, leaves no /sys/module/<mod>, and logs exactly one "<mod>:" line
# naming the parameter. A good load still works afterwards.
# timeout: 180
# In the debug lane only with SSDQ_DEBUG_FULL=1 (CI's budget): the
# parameters are checked before the module allocates anything.
# debug-lane: full
set -euo pipefail
. "$(dirname "$0")/lib.sh"

if [[ $DUT == ssdq ]]; then
	bad=(io_queues=500 io_queue_depth=1 io_queue_depth=4096 rotational=2 add_random=7
		fault_admin_status=1025 ids=1b36:0010:1af4 ids=1b36:10000
		"ids=1:1,2:2,3:3,4:4,5:5,6:6,7:7,8:8,9:9")
else
	# What the nvme driver rejects (it ignores unknown parameters).
	bad=(io_queue_depth=1 io_queue_depth=4096 poll_queues=abc)
fi
dut_loaded && dut_unload

# Lines every first load of an unsigned out-of-tree module prints.
noise='loading out-of-tree module taints kernel|module verification failed'
i=0
for p in "${bad[@]}"; do
	i=$((i + 1))
	param=${p%%=*}
	kmsg_mark "bad$i"
	if dut_try_load "$p"; then
		fail "$DUT_MOD loaded with $p"
	fi
	err=$(cat "$T_DIR/load.err")
	# EINVAL reads "Invalid parameters" from kmod's insmod, strerror's
	# "Invalid argument" from modprobe.
	grep -Eq 'Invalid (argument|parameters)' <<<"$err" || fail "$p: loader failed, but not with EINVAL: $err"
	ok "$p: load failed with EINVAL"
	assert_absent "/sys/module/$DUT_MOD"
	lines=$(dmesg_since "bad$i" | grep -E "^$DUT_MOD: " | grep -Ev "$noise" || true)
	n=$(grep -c . <<<"$lines" || true)
	[[ $n == 1 ]] || fail "$p: want exactly one '$DUT_MOD:' dmesg line, got $n: $(tr '\n' '|' <<<"$lines")"
	grep -q "$param" <<<"$lines" || fail "$p: dmesg line does not name $param: $lines"
	ok "$p: one dmesg line naming $param: $lines"
	# The expected line must not trip the framework's error-line check.
	allow_dmesg "^$(sed 's/[][\.*^$()+?{}|]/\\&/g' <<<"$lines")\$"
done

dut_load
assert_present "/sys/module/$DUT_MOD"
dd if="$DEV" of=/dev/null bs=4k count=1 iflag=direct status=none || fail "read after good load failed"
ok "good load after bad ones works"
