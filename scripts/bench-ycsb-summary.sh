#!/usr/bin/env bash
# Prints the Markdown table of a scripts/bench-ycsb.sh run: per workload, the median over
# the repeats of each client's throughput and p99 latencies, their ratios, and each
# client's own CPU time per operation. Usage: scripts/bench-ycsb-summary.sh OUT
#
# Throughput counts YCSB operations, a read-modify-write as one, for both clients:
# go-ycsb's TOTAL counts the read and the update inside a read-modify-write as two, so
# its read-modify-writes are taken off its TOTAL. Its run time is its "Run finished,
# takes" line. The write column is the workload's write: UPDATE (A, B), INSERT (D and
# the load), READ-MODIFY-WRITE (F).
set -euo pipefail
OUT=$1

median() { sort -g | awk '{v[NR] = $1} END {if (NR == 0) print "-"; else if (NR % 2) print v[(NR + 1) / 2]; else print (v[NR / 2] + v[NR / 2 + 1]) / 2}'; }

# ycsb_field FILE: "ops_per_s p99_read_ms p99_write_ms errors" of one go-ycsb run.
ycsb_fields() {
  awk -v write="$2" '
    function secs(d,   n, u, t) { # a Go duration: 1m2.5s, 950ms, 12.3s
      t = 0
      while (match(d, /^[0-9.]+(h|m|s|ms|us|µs|ns)/)) {
        n = substr(d, 1, RLENGTH); d = substr(d, RLENGTH + 1)
        u = n; sub(/^[0-9.]+/, "", u); sub(/[a-zµ]+$/, "", n)
        t += n * (u == "h" ? 3600 : u == "m" ? 60 : u == "s" ? 1 : u == "ms" ? 1e-3 : u == "ns" ? 1e-9 : 1e-6)
      }
      return t
    }
    /^Run finished, takes/ { took = secs($4) }
    / - Takes\(s\)/ {
      op = $1; count[op] = $6 + 0
      for (i = 1; i <= NF; i++) if ($i == "99th(us):") p99[op] = ($(i + 1) + 0) / 1000
      if (op ~ /_ERROR$/) errors += $6
    }
    END {
      ops = count["TOTAL"] - count["READ_MODIFY_WRITE"]
      printf "%.0f %s %s %d\n", ops / took, ("READ" in p99 ? p99["READ"] : "-"), (write in p99 ? p99[write] : "-"), errors
    }' "$1"
}

# kura_fields FILE WRITE: the same of one kura bench run.
kura_fields() {
  awk -v write="$2" '
    / ops in .* ops\/s/ { for (i = 1; i <= NF; i++) if ($i == "ops/s,") rate = $(i - 1) }
    $1 ~ /^(READ|UPDATE|INSERT|READ-MODIFY-WRITE|SCAN|TOTAL)$/ && NF >= 10 { p99[$1] = $7; if ($1 == "TOTAL") errors = $10 }
    END { printf "%s %s %s %d\n", rate, ("READ" in p99 ? p99["READ"] : "-"), (write in p99 ? p99[write] : "-"), errors }' "$1"
}

# cpu_us_per_op NAME OPS: the client's user+system CPU per operation, in microseconds.
cpu_us_per_op() { awk -v ops="$2" '{printf "%.0f\n", ($1 + $2) / ops * 1e6}' "$OUT/$1.cpu"; }

ratio() { awk -v a="$1" -v b="$2" 'BEGIN {if (a == "-" || b == "-" || b == 0) print "-"; else printf "%.2f\n", a / b}'; }

ops=$(sed -n 's/.* operations=\([0-9]*\).*/\1/p' "$OUT/conditions.txt")
records=$(sed -n 's/.* records=\([0-9]*\).*/\1/p' "$OUT/conditions.txt")
echo "| workload | go-ycsb ops/s | kura bench ops/s | ratio | p99 read ms (go-ycsb / kura bench) | p99 write ms (go-ycsb / kura bench) | errors | client CPU µs/op (go-ycsb / kura bench) |"
echo "|---|---:|---:|---:|---|---|---:|---|"
for w in load a b c f d; do
  case $w in
    load) write=INSERT kwrite=INSERT ;;
    a | b) write=UPDATE kwrite=UPDATE ;;
    d) write=INSERT kwrite=INSERT ;;
    f) write=READ_MODIFY_WRITE kwrite=READ-MODIFY-WRITE ;;
    *) write=none kwrite=none ;;
  esac
  if [ "$w" = load ]; then
    yfiles=("$OUT/go-ycsb-load.txt") kfiles=("$OUT/kura-bench-load.txt") n=$records
  else
    yfiles=("$OUT"/go-ycsb-"$w"-*.txt) kfiles=("$OUT"/kura-bench-"$w"-*.txt) n=$ops
  fi
  [ -e "${yfiles[0]}" ] && [ -e "${kfiles[0]}" ] || continue # a workload not run
  y=$(for f in "${yfiles[@]}"; do ycsb_fields "$f" "$write"; done)
  k=$(for f in "${kfiles[@]}"; do kura_fields "$f" "$kwrite"; done)
  col() { awk -v c="$2" '{print $c}' <<<"$1" | grep -v '^-$' | median; }
  yc=$(for f in "${yfiles[@]}"; do cpu_us_per_op "$(basename "$f" .txt)" "$n"; done | median)
  kc=$(for f in "${kfiles[@]}"; do cpu_us_per_op "$(basename "$f" .txt)" "$n"; done | median)
  yerr=$(awk '{s += $4} END {print s}' <<<"$y") kerr=$(awk '{s += $4} END {print s}' <<<"$k")
  label=$w; [ "$w" = load ] && label="load (once each, go-ycsb first)"
  echo "| $label | $(col "$y" 1) | $(col "$k" 1) | $(ratio "$(col "$y" 1)" "$(col "$k" 1)") |" \
    "$(col "$y" 2) / $(col "$k" 2) | $(col "$y" 3) / $(col "$k" 3) | $yerr / $kerr | $yc / $kc |"
done
