#!/bin/sh
# scripts/cq-latency.awk on made-up `perf script` lines whose answer is known: per label the
# task count, average, p99 (the sorted waits' element int(n * 0.99)) and maximum wait, with the
# waits in a scrambled order, descending, and with repeats; a label with starts and finishes but
# no enqueues (a source's turns) gets 0 tasks. Run with every awk found of mawk, gawk and
# `awk` (the script is meant for all of them). Usage: test_cq_latency.sh [SOURCE_DIR]
set -u
src=${1:-$(dirname "$0")/../..}
script=$src/scripts/cq-latency.awk
tmp=${TMPDIR:-/tmp}/cq-latency-test.$$
trap 'rm -f "$tmp".*' EXIT

# label n order: the waits of n tasks, in microseconds
#   perm  1..n scrambled (i * 7919 mod n + 1; n not a multiple of 7919)
#   desc  n..1
#   dup   5 for the first n - n/100 tasks, then 905 (n/100 of them): the p99 is the last 5
awk 'function line(t, ev, lab, item, rest) { line_on(100, t, ev, lab, item, rest) }
     function line_on(tid, t, ev, lab, item, rest) {
         printf "     cq-worker-0 %d [000] %.6f: %26s: (7f00) label=\"%s\" item=%#x%s\n", tid, t, "swiftqueues:" ev, lab, item, rest
     }
     function tasks(lab, n, order,    i, w, t) {
         for (i = 1; i <= n; i++) {
             if (order == "perm") w = (i * 7919) % n + 1
             else if (order == "desc") w = n - i + 1
             else w = i <= n - int(n / 100) ? 5 : 905
             t = 1000 + (next_item++) * 0.01
             line(t, "task_enqueue", lab, next_item, " prio=1")
             line(t + w / 1e6, "task_start", lab, next_item, " kind=1")
             line(t + w / 1e6 + 2e-6, "task_finish", lab, next_item, "")
         }
     }
     BEGIN {
         next_item = 4096
         tasks("q.perm", 3000, "perm"); tasks("q.desc", 50, "desc"); tasks("q.dup", 1000, "dup")
         line(2000, "task_start", "q.turns", 1, " kind=7")
         line(2000.000010, "task_finish", "q.turns", 1, "")
         # A task that queues another before it ends: its memory (item 2) is reused for the
         # new task, which runs on another thread before the first finishes. The first ran
         # 3 ms, the second 1 ms (the first was lost: paired by address, its finish found no
         # start).
         line_on(100, 3000, "task_enqueue", "r.parent", 2, " prio=1")
         line_on(100, 3000.000010, "task_start", "r.parent", 2, " kind=1")
         line_on(100, 3000.000020, "task_enqueue", "r.child", 2, " prio=1")
         line_on(101, 3000.000030, "task_start", "r.child", 2, " kind=1")
         line_on(101, 3000.001030, "task_finish", "r.child", 2, "")
         line_on(100, 3000.003010, "task_finish", "r.parent", 2, "")
         # Waits without a finish (the recording ended): the label is still shown.
         line_on(102, 4000, "task_enqueue", "q.cut", 3, " prio=1")
         line_on(102, 4000.000040, "task_start", "q.cut", 3, " kind=1")
     }' > "$tmp.in"

# label tasks avg p99 max ran
expected='q.perm 3000 1500.5us 2970.0us 3000.0us 3000
q.desc 50 25.5us 49.0us 50.0us 50
q.dup 1000 14.0us 5.0us 905.0us 1000
q.turns 0 0.0us 0.0us 0.0us 1
r.parent 1 10.0us 10.0us 10.0us 1
r.child 1 10.0us 10.0us 10.0us 1
q.cut 1 40.0us 40.0us 40.0us 0'

status=0
ran=0
seen=
for a in mawk gawk awk; do
    path=$(command -v "$a") || continue
    path=$(readlink -f "$path" 2> /dev/null || echo "$path")
    case " $seen " in *" $path "*) continue ;; esac # awk is often one of the others
    seen="$seen $path"
    ran=$((ran + 1))
    "$a" -f "$script" "$tmp.in" > "$tmp.out" || { echo "$a: cq-latency.awk failed"; status=1; continue; }
    got=$(awk 'NR > 1 { print $1, $2, $3, $4, $5, $6 }' "$tmp.out" | sort)
    want=$(printf '%s\n' "$expected" | sort)
    if [ "$got" != "$want" ]; then
        printf '%s: expected\n%s\ngot\n%s\n' "$a" "$want" "$(cat "$tmp.out")"
        status=1
    else
        echo "$a: ok"
    fi
done
[ $ran -gt 0 ] || { echo "no awk found"; status=1; }
exit $status
