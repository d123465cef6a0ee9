#!/bin/bash
# dma-limits: the largest request the queue advertises can always be
# DMA-mapped. max_hw_sectors_kb is what MDTS allows, capped by what the DMA
# layer maps at once (dma_opt_mapping_size()): 256 KiB when every mapping
# bounces through swiotlb, as in check.sh's swiotlb=force boot. Requests of
# that size from 2 MiB-aligned buffers backed by transparent huge pages are
# one physically contiguous segment each, which swiotlb cannot map when the
# limit is too large: the request would be retried forever. Data verified.
# timeout: 300
set -euo pipefail
. "$(dirname "$0")/lib.sh"
cd /tmp

dut_load
mdts=$(device_mdts) || fail "could not read MDTS from the device model"
want=$((4 << mdts)) # KiB: QEMU's CAP.MPSMIN is 4 KiB
((mdts > 0 && want <= 1024)) || want=1024 # ssdq's own cap, 1 MiB (nvme's is larger)
forced=0
[[ " $(cat /proc/cmdline) " == *" swiotlb=force "* ]] && forced=1
# IO_TLB_SEGSIZE (128) slots of IO_TLB_SIZE (2 KiB): swiotlb's largest mapping.
((forced && want > 256)) && want=256
maxkb=$(sysq max_hw_sectors_kb)
log "MDTS=$mdts, swiotlb=force: $forced, max_hw_sectors_kb=$maxkb"
if [[ $DUT == ssdq ]]; then
	assert_eq "max_hw_sectors_kb" "$maxkb" "$want"
else
	((maxkb <= want)) || fail "max_hw_sectors_kb $maxkb > $want"
	ok "max_hw_sectors_kb $maxkb <= $want"
fi

# The debug kernel has no THP: there the requests are many small segments
# and only the data is checked.
thp=/sys/kernel/mm/transparent_hugepage/enabled
if [[ -w $thp ]]; then
	old=$(sed -E 's/.*\[([a-z]+)\].*/\1/' "$thp")
	echo always >"$thp"
	trap 'echo "$old" >"$thp"' EXIT
else
	log "no transparent huge pages on this kernel: 2 MiB buffers are not contiguous"
fi
size=$((32 * MiB))
run_fio huge "$size" "$size" --name=huge --filename="$DEV" --direct=1 \
	--ioengine=io_uring --iodepth=4 --rw=write --bs=2m --iomem_align=2m \
	--offset="$REG_INTEGRITY_OFF" --size="$size" --verify=crc32c
