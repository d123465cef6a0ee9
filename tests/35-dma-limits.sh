#!/bin/bash
# dma-limits: the largest request the queue advertises can always be
# DMA-mapped. max_hw_sectors_kb is what MDTS allows, capped by what the DMA
# layer maps at once (dma_opt_mapping_size()): 252 KiB when every mapping
# bounces through swiotlb, as in check.sh's swiotlb=force boots. Requests of
# that size from 2 MiB-aligned buffers backed by transparent huge pages are
# one physically contiguous segment each, which swiotlb cannot map when the
# limit is too large: the request would be retried forever. Data verified.
# Then buffers that are not page aligned: each request's data starts some
# bytes into a page (512-byte multiples, and dma_alignment multiples that
# are not) and runs into the next pages, so it has several segments. Under
# swiotlb=force every segment is bounced, and the bounce must keep the
# offset in its page (dma_set_min_align_mask) for the PRPs built from the
# mapped segments to describe the data. Writes and their verifying reads,
# for each size and offset; check.sh runs it on 512-byte and 4 KiB LBAs.
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
# IO_TLB_SEGSIZE (128) slots of IO_TLB_SIZE (2 KiB) are swiotlb's largest
# mapping, less the 4 KiB a bounce may need to keep its offset in a
# controller page (the DMA min_align_mask).
((forced && want > 252)) && want=252
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

# Sizes in KiB (LBS multiples only) and each buffer's offset into its page;
# with iodepth 4 the next buffers follow at multiples of the size.
lbs=$(sysq logical_block_size)
dma_mask=$(sysq dma_alignment)
n=0
for c in 1:3584 4:512 4:12 8:3584 12:2052 64:1536 128:4; do
	bs=$((${c%:*} * KiB)) off=${c#*:}
	((bs % lbs == 0)) || continue
	((off & dma_mask)) && fail "offset $off is off dma_alignment $dma_mask"
	size=$((2 * MiB / IO_DIV / bs * bs))
	run_fio "unaligned-$bs-$off" "$size" "$size" --name=unaligned --filename="$DEV" \
		--direct=1 --ioengine=io_uring --iodepth=4 --rw=randwrite --bs="$bs" \
		--iomem_align="$off" --offset=$((REG_INTEGRITY_OFF + 64 * MiB)) --size="$size" \
		--verify=crc32c --verify_fatal=1
	n=$((n + 1))
done
assert_gt "unaligned buffer cases run (LBA size $lbs)" "$n" 3
