#!/usr/bin/env bash
# redis-cli's and redis-benchmark's part of kura's client matrix (clients/matrix_test.go
# runs it).
#
# Usage: check.sh ADDR OTHER PREFIX
#
# Runs every check of the matrix with redis-cli (raw output, as a script sees it) against
# the server at ADDR (host:port; OTHER is another node of the same cluster, or ADDR again),
# then redis-benchmark, and prints one line per variant and check, "VARIANT CHECK
# name=value ...", in the canonical form clients/doc.go describes. The variants are
# redis-cli's and redis-benchmark's -2 and -3.
set -u
addr=$1 other=$2 prefix=$3

c() { redis-cli -h "${addr%:*}" -p "${addr##*:}" "$proto" "$@" 2>&1; }
o() { redis-cli -h "${other%:*}" -p "${other##*:}" "$proto" "$@" 2>&1; }

# val prints one reply: redis-cli prints a null as an empty line.
val() { local v; v=$("$@"); if [ -z "$v" ]; then echo nil; elif [[ $v == ERR* || $v == WRONGTYPE* ]]; then echo error; else echo "$v"; fi; }
# ok prints SET's reply (OK, or nil when a condition stopped it).
ok() { val "$@"; }
# list prints an array reply, one element a line, as [a,b,nil].
list() { local out=() l; while IFS= read -r l; do out+=("${l:-nil}"); done < <("$@"); local IFS=,; echo "[${out[*]}]"; }
# map prints a map reply as {f:v,...} sorted by field: redis-cli prints a RESP2 array's
# field and value on alternate lines, and a RESP3 map's as "field value" on one.
map() {
  local lines=() pairs=() i
  while IFS= read -r l; do [ -n "$l" ] && lines+=("$l"); done < <("$@")
  if [ "$proto" = -3 ]; then
    for l in "${lines[@]}"; do pairs+=("${l%% *}:${l#* }"); done
  else
    for ((i = 0; i + 1 < ${#lines[@]}; i += 2)); do pairs+=("${lines[i]}:${lines[i+1]}"); done
  fi
  local IFS=$'\n' sorted; sorted=$(sort <<<"${pairs[*]}"); IFS=,
  echo "{$(tr '\n' ',' <<<"$sorted" | sed 's/,*$//')}"
}
# within prints lo..hi when the reply falls in the range, else the reply.
within() { local v; v=$(val "${@:3}"); if [[ $v =~ ^-?[0-9]+$ ]] && ((v >= $1 && v <= $2)); then echo "$1..$2"; else echo "$v"; fi; }

check_proto() { echo "resp=$(c client info | grep -o 'resp=[0-9]' | cut -d= -f2)"; }

check_strings() {
  local p=$1
  c del "${p}k1" "${p}k2" "${p}k3" "${p}none" >/dev/null
  echo "set=$(ok c set "${p}k1" v1) get=$(val c get "${p}k1") get_other=$(val o get "${p}k1")" \
    "get_missing=$(val c get "${p}none") mset=$(ok c mset "${p}k2" a "${p}k3" b)" \
    "mget=$(list c mget "${p}k1" "${p}k2" "${p}k3" "${p}none") exists=$(val c exists "${p}k1" "${p}k2" "${p}none")" \
    "del=$(val c del "${p}k2" "${p}none") exists_after=$(val c exists "${p}k2")"
}

check_set_options() {
  local p=$1
  c del "${p}k" "${p}none" >/dev/null
  echo "nx=$(ok c set "${p}k" v1 nx) nx_again=$(ok c set "${p}k" v2 nx) xx=$(ok c set "${p}k" v3 xx)" \
    "xx_missing=$(ok c set "${p}none" x xx) get_option=$(val c set "${p}k" v4 get) value=$(val c get "${p}k")"
}

check_hashes() {
  local p=$1 h=${1}h
  c del "$h" "${p}none" >/dev/null
  echo "hset=$(val c hset "$h" f1 v1 f2 v2) hset_update=$(val c hset "$h" f1 x) hget=$(val c hget "$h" f1)" \
    "hget_missing=$(val c hget "$h" nofield) hgetall=$(map c hgetall "$h") hlen=$(val c hlen "$h")" \
    "hdel=$(val c hdel "$h" f2 nofield) hlen_after=$(val c hlen "$h") hgetall_other=$(map o hgetall "$h")" \
    "hgetall_missing=$(map c hgetall "${p}none")"
}

check_ttl() {
  local p=$1 k=${1}k px=${1}px none=${1}none start line
  c del "$k" "$px" "$none" >/dev/null
  line="set_px=$(ok c set "$px" v px 2000)"
  start=$(date +%s%N)
  line+=" pttl=$(within 1 2000 c pttl "$px") set=$(ok c set "$k" v) ttl_none=$(val c ttl "$k")"
  line+=" expire=$(val c expire "$k" 100) ttl=$(within 1 100 c ttl "$k") persist=$(val c persist "$k")"
  line+=" ttl_persisted=$(val c ttl "$k") persist_again=$(val c persist "$k") set_ex=$(ok c set "$k" v ex 50)"
  line+=" ttl_ex=$(within 1 50 c ttl "$k") ttl_missing=$(val c ttl "$none") expire_missing=$(val c expire "$none" 10)"
  local left=$((2300 - ($(date +%s%N) - start) / 1000000))
  ((left > 0)) && sleep "$(printf '%d.%03d' $((left / 1000)) $((left % 1000)))"
  echo "$line expired=$(val c get "$px") ttl_expired=$(val c ttl "$px")"
}

check_scan() {
  local p=$1 args=() i want got cursor=0 reply
  for i in $(seq -w 0 39); do args+=("${p}k$i" v); done
  c mset "${args[@]}" >/dev/null
  c hset "${p}h" f v >/dev/null
  want=$( (for i in $(seq -w 0 39); do echo "${p}k$i"; done; echo "${p}h") | sort)
  # redis-cli 7.0's --scan takes no COUNT: the cursor loop by hand, as a script would.
  while :; do
    reply=$(c scan "$cursor" match "${p}*" count 7)
    cursor=$(head -n 1 <<<"$reply")
    if ! [[ $cursor =~ ^[0-9]+$ ]]; then
      echo "ERROR $reply"
      return
    fi
    got+=$(tail -n +2 <<<"$reply")$'\n'
    [ "$cursor" = 0 ] && break
  done
  got=$(grep . <<<"$got" | sort -u)
  echo "keys=$(grep -c . <<<"$got") same=$([ "$got" == "$want" ] && echo 1 || echo 0)"
}

check_counters() {
  local p=$1 n=${1}n s=${1}s none=${1}none line
  c del "$n" "$s" "$none" >/dev/null
  line="incr=$(val c incr "$n") incr_again=$(val c incr "$n") incrby=$(val c incrby "$n" 10) decr=$(val c decr "$n")"
  line+=" get=$(val c get "$n") get_other=$(val o get "$n")"
  c set "$s" abc >/dev/null
  echo "$line incr_text=$(val c incr "$s") decr_missing=$(val c decr "$none")"
}

# resp writes one command in the protocol, for --pipe.
resp() { printf '*%d\r\n' $#; local a; for a in "$@"; do printf '$%d\r\n%s\r\n' ${#a} "$a"; done; }

check_pipe() {
  local p=$1 k=${1}k n=${1}n h=${1}h none=${1}none out
  c del "$k" "$n" "$h" "$none" >/dev/null
  # --pipe sends the batch without waiting for replies, then counts them.
  out=$( (resp set "$k" v; resp incr "$n"; resp incr "$n"; resp get "$k"; resp hset "$h" f x
    resp hget "$h" f; resp get "$none"; resp del "$k") | c --pipe | tail -n 1)
  echo "pipe=$(tr -d ' ,:' <<<"$out" | sed 's/errors\([0-9]*\)replies\([0-9]*\)/errors:\1,replies:\2/')" \
    "n=$(val c get "$n") hget=$(val c hget "$h" f) k=$(val c get "$k")"
}

# redis-benchmark's own keys are fixed names; its INCR test counts one counter up.
check_benchmark() {
  c del key:__rand_int__ counter:__rand_int__ >/dev/null
  local out tests
  local resp3=()
  [ "$proto" = -3 ] && resp3=(-3) # redis-benchmark has -3 but no -2
  out=$(redis-benchmark -h "${addr%:*}" -p "${addr##*:}" "${resp3[@]}" -n 500 -c 4 -P 5 -t set,get,incr,mset --csv 2>&1) ||
    { echo "ERROR redis-benchmark: $(tr '\n' ' ' <<<"$out")"; return; }
  tests=$(awk -F'"' 'NR > 1 && $4 + 0 > 0 {print $2}' <<<"$out" | cut -d' ' -f1 | paste -sd,)
  local value; value=$(c get key:__rand_int__)
  echo "tests=$tests counter=$(within 500 520 c get counter:__rand_int__) value_len=${#value}"
}

for variant in resp2 resp3; do
  proto=-${variant#resp}
  for check in proto strings set_options hashes ttl scan counters pipe benchmark; do
    line=$("check_$check" "$prefix:$variant:$check:" 2>&1)
    name=$check
    [ "$check" = benchmark ] && name=redis-benchmark
    echo "$variant $name $(tr '\n' ' ' <<<"$line" | sed 's/ *$//')"
  done
done
