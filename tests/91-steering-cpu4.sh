#!/bin/bash
# steering-cpu4: 90-steering on the machine of four vCPUs: one I/O queue
# for four CPUs, a pinned reader on each, the last vCPU offline and back
# under load.
# boot: cpu4
# The debug lane skips it (CI's budget): 90-steering runs its paths there,
# the matrix its four vCPUs.
# lanes: prod
# timeout: 600
exec bash "$(dirname "$0")/90-steering.sh"
