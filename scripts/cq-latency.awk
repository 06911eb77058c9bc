# cq-latency.awk: per queue label, how long tasks waited (enqueue -> start) and ran
# (start -> finish), from `perf script` output of the swiftqueues:task_enqueue*, task_start
# and task_finish events defined by scripts/cq-probes.py (docs/profiling.md):
#
#   perf script -i perf.data | awk -f scripts/cq-latency.awk
#
# Waits are matched by item address (a task's memory is reused only after it has started, so
# an enqueue is followed by its own start before the address comes back). Runs are matched by
# thread: a task's start and finish come from the thread that runs it, finishes in the reverse
# order of starts (a task may run others inside it, a sync's or a wait's). Not by address: a
# task that queues another before it ends may see its memory reused for the new task, whose
# start and finish then came in between with the same address (the parent's run was lost).
#
# Plain POSIX awk (mawk, Debian's awk, and gawk; no gawk extension such as asort): each label's
# waits are heap-sorted for the p99, O(n log n), so long recordings stay fast.
function us(t) { return t * 1e6 }
# v[1..cnt] ascending (heap sort: in place, no recursion)
function heap_sort(v, cnt,    k, t) {
    for (k = int(cnt / 2); k >= 1; k--) sift_down(v, k, cnt)
    for (k = cnt; k > 1; k--) { t = v[1]; v[1] = v[k]; v[k] = t; sift_down(v, 1, k - 1) }
}
# restores the max-heap order of v[k..cnt] below k
function sift_down(v, k, cnt,    c, t) {
    while ((c = 2 * k) <= cnt) {
        if (c < cnt && v[c + 1] > v[c]) c++
        if (v[k] >= v[c]) return
        t = v[k]; v[k] = v[c]; v[c] = t
        k = c
    }
}
{
    ts = ""; ev = ""; label = ""; item = ""; tid = ""
    for (i = 1; i <= NF; i++) {
        if ($i ~ /^[0-9]+\.[0-9]+:$/ && ts == "") ts = substr($i, 1, length($i) - 1) + 0
        else if ($i ~ /^swiftqueues:/) { ev = $i; sub(/^swiftqueues:/, "", ev); sub(/:$/, "", ev) }
        else if ($i ~ /^item=/) item = substr($i, 6)
        else if ($i ~ /^\[[0-9]+\]$/ && tid == "" && i > 1) tid = $(i - 1)  # comm tid [cpu]
    }
    if (match($0, /label="[^"]*"/)) label = substr($0, RSTART + 7, RLENGTH - 8)
    if (ev ~ /^task_enqueue/) { enq[item] = ts }
    else if (ev == "task_start") {
        d = ++depth[tid]; run_ts[tid, d] = ts; run_label[tid, d] = label
        seen[label] = 1
        if (item in enq) {
            w = us(ts - enq[item]); delete enq[item]
            wn[label]++; ws[label] += w; if (w > wm[label]) wm[label] = w
            wait_list[label, wn[label]] = w
        }
    } else if (ev == "task_finish" && depth[tid] > 0) {
        d = depth[tid]--
        l = run_label[tid, d]
        rn[l]++; rs[l] += us(ts - run_ts[tid, d])
    }
}
END {
    printf "%-24s %8s %10s %10s %10s %8s %10s\n", "queue", "tasks", "wait avg", "wait p99", "wait max", "ran", "run total"
    for (l in seen) {
        n = wn[l]; p99 = 0
        if (n > 0) {
            # p99: this label's waits sorted
            split("", a)
            for (i = 1; i <= n; i++) a[i] = wait_list[l, i]
            heap_sort(a, n)
            p99 = a[int(n * 0.99) > 0 ? int(n * 0.99) : 1]
        }
        printf "%-24s %8d %8.1fus %8.1fus %8.1fus %8d %8.1fms\n", l, n, n ? ws[l] / n : 0, p99, wm[l], rn[l], rs[l] / 1000
    }
}
