#!/bin/sh
#
# count-inside.sh N SOCKET - the critical section of the shared-lock and
# semaphore tests (shared.bats), run as redlock's command: counts itself
# in (key o:cur on the redis-server at SOCKET), keeps the largest count
# seen in o:max, waits (at most 10 s) until N holders have been inside at
# the same time (o:reached), stays a little and counts itself out.  So
# o:max is how many were ever inside at once, and reaching N proves that
# N can be.
n=$1 sock=$2
in='local c = redis.call("INCR", KEYS[1])
if c > tonumber(redis.call("GET", KEYS[2]) or "0") then redis.call("SET", KEYS[2], c) end
return c'
redis-cli -s "$sock" EVAL "$in" 2 o:cur o:max >/dev/null
i=0
while [ "$(redis-cli -s "$sock" GET o:reached)" != 1 ] && [ $i -lt 500 ]; do
	[ "$(redis-cli -s "$sock" GET o:cur)" -ge "$n" ] && redis-cli -s "$sock" SET o:reached 1 >/dev/null
	sleep 0.02
	i=$((i + 1))
done
sleep 0.05
redis-cli -s "$sock" DECR o:cur >/dev/null
