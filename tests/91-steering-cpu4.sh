#!/bin/bash
# steering-cpu4: 90-steering on the machine of four vCPUs: one I/O queue
# for four CPUs, a pinned reader on each, the last vCPU offline and back
# under load.
# boot: cpu4
# In the debug lane only with SSDQ_DEBUG_FULL=1 (CI's budget): 90-steering
# runs its paths there, the matrix its four vCPUs.
# debug-lane: full
# timeout: 600
exec bash "$(dirname "$0")/90-steering.sh"
