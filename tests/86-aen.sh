#!/bin/bash
# aen: asynchronous events from the device (Documentation/recovery.rst,
# "Asynchronous events"). The host sets bits of the DUT controller's
# smart_critical_warning through QMP (scripts/qmp-agent.py), as a failing
# drive would: QEMU raises a SMART/health event for each new bit. For each,
# ssdq must count it, read the SMART log (its critical warning is the bits
# set), log one line, send a uevent with SSDQ_AEN and SSDQ_CRITICAL_WARNING,
# and have a request outstanding again. Reading the log is what unmasks the
# type, so the second bit needs the first handled; a reset forgets the
# request and the event configuration, so the third bit, after one, needs
# both sent again. The disk then still reads back what was written.
# timeout: 180
set -euo pipefail
. "$(dirname "$0")/lib.sh"
cd /tmp

[[ $DUT == ssdq ]] || skip "ssdq's asynchronous events (nvme enables notices only, no SMART events)"
dut_load
DBG=/sys/kernel/debug/ssdq/$DISK
allow_dmesg 'SMART/health event|resetting the controller|reset done|ssdq-qmp: '

aen() { kv_get "$DBG/aen" "$1"; }
aen_is() { [[ $(aen "$1") == "$2" ]]; }
# To the host's scripts/qmp-agent.py, through the console (level 2: the
# console shows it under "quiet").
qmp() { echo "<2>ssdq-qmp: $*" >/dev/kmsg; }

# The uevents of the controller (its PCI device), as udev would get them (netlink, the kernel's
# group), one line each; "ready" once listening.
uev=$T_DIR/uevents
: >"$uev"
python3 -c '
import socket, sys
s = socket.socket(socket.AF_NETLINK, socket.SOCK_DGRAM, 15)
s.bind((0, 1))
out = open(sys.argv[1], "a", buffering=1)
out.write("ready\n")
while True:
    parts = s.recv(65536).split(b"\0")
    if any(p.startswith(b"SSDQ_AEN=") for p in parts):
        out.write(" ".join(p.decode(errors="replace") for p in parts if p) + "\n")
' "$uev" &
upid=$!
trap 'kill "$upid" 2>/dev/null || true' EXIT
wait_for 30 "the uevent listener" grep -q '^ready$' "$uev"

wait_for 10 "a request outstanding after the load" aen_is outstanding 1
assert_eq "events at the load" "$(aen smart)/$(aen notices)/$(aen errors)/$(aen other)" 0/0/0/0

# smart_event VALUE N WARNING: set the property to VALUE (one new bit);
# the Nth SMART event must follow, with WARNING in the log.
smart_event() {
	local value=$1 n=$2 warning=$3 line
	kmsg_mark "aen-$n"
	qmp qom-set dut smart_critical_warning "$value"
	wait_for 30 "SMART event $n (smart_critical_warning=$value)" aen_is smart "$n"
	assert_eq "SMART event $n: critical warning read from the log" "$(aen critical_warning)" "$warning"
	wait_for 10 "SMART event $n: one line" eval 'dmesg_since "aen-$n" | grep -q "SMART/health event"'
	line=$(dmesg_since "aen-$n" | grep 'SMART/health event')
	assert_eq "SMART event $n: lines" "$(grep -c . <<<"$line")" 1
	grep -q "critical warning $warning\$" <<<"$line" || fail "SMART event $n: the line does not give the warning $warning: $line"
	ok "SMART event $n: ${line#*: }"
	wait_for 10 "SMART event $n: its uevent" grep -q "SSDQ_CRITICAL_WARNING=$warning" "$uev"
	line=$(grep "SSDQ_CRITICAL_WARNING=$warning" "$uev")
	[[ " $line " == *"/$PCI_DUT "* && " $line " == *" SSDQ_AEN=0x"* ]] ||
		fail "SMART event $n: uevent not from $PCI_DUT or without SSDQ_AEN: $line"
	ok "SMART event $n: uevent $(grep "SSDQ_CRITICAL_WARNING=$warning" "$uev" | grep -o 'SSDQ_AEN=[^ ]*')"
	wait_for 10 "SMART event $n: a request outstanding again" aen_is outstanding 1
}

sent=$(aen sent)
smart_event 0x01 1 0x01
smart_event 0x03 2 0x03
assert_eq "requests sent for two events" "$(aen sent)" $((sent + 2))

# A reset: the controller forgets the request and the configuration.
echo 1 >"/sys/block/$DISK/recovery/reset"
wait_for 10 "a request outstanding after the reset" aen_is outstanding 1
assert_eq "requests sent by the reset" "$(aen sent)" $((sent + 3))
smart_event 0x07 3 0x07

# No new bit, no event; nothing failed on the way.
qmp qom-set dut smart_critical_warning 0
assert_eq "log pages not read, requests failed" "$(aen log_failures)/$(aen failures)" 0/0
assert_eq "other events" "$(aen notices)/$(aen errors)/$(aen other)" 0/0/0

# The disk still works: 1 MiB written and read back byte for byte.
pat=$(pattern_file aen $MiB)
dev_write "$pat" "$DEV" $((REG_INTEGRITY_OFF + 64 * MiB))
dev_cmp "$DEV" $((REG_INTEGRITY_OFF + 64 * MiB)) $MiB "$pat" "1 MiB after the events"
ok "1 MiB after the events reads back"
assert_eq "SMART events in all" "$(aen smart)" 3
