#!/bin/sh
#
# critical-section.sh DIR - the critical section of the overlap tests
# (run under the flock(1) oracle of fault_helpers.bash, as redlock's
# command): stays in for about 10 ms and appends "start end fence" (wall
# clock ms, $REDLOCK_FENCE) to DIR/intervals, which assert_no_overlap
# checks: no two intervals overlap, the fences strictly increase.
s=$(date +%s%3N)
sleep 0.01
echo "$s $(date +%s%3N) $REDLOCK_FENCE" >>"$1/intervals"
