#!/usr/bin/env bash
# make lint: the C core's structural checks (docs/design.md §1).
#
#   layers    a file may include the internal headers of its own layer and the layers below it
#             (platform < scheduler < queue < sync < events < io < swift), nothing above, except the
#             exceptions listed below with their reason;
#   atomics   every non-relaxed atomic operation (cq__load/store/xchg/cas/cas_weak/add/sub/or/
#             and/fence with an order other than relaxed) carries a pairing note: a comment on
#             its line, on the lines of the call, or within the 3 lines above, that says
#             "pairs with" (or "paired with", "see ..."); reported as file:line;
#   format    clang-format --dry-run -Werror on Sources/CQueueCore's .c and internal .h files
#             (.clang-format), when clang-format is installed (skipped with a note otherwise).
#             The public headers (include/) are laid out by hand: the umbrella header's order
#             and the commented struct fields read better than the tool makes them.
#
# Exit status: 0 clean, 1 a check failed. Needs bash and awk only (and clang-format for the
# third check).
set -u
cd "$(dirname "$0")/.."
CORE=Sources/CQueueCore
status=0

# ---- 1. include direction -------------------------------------------------------------------
LAYERS="platform scheduler queue sync events io swift"

# Allowed upward includes: "file -> header   reason", one a line. Empty today: the calls that
# must run up the layers go through hooks the higher layer registers (item kinds, the sleep
# bracket, fork hooks, object class methods; docs/design.md §1). Keep it that way; an entry here
# should be a stopgap with its reason.
ALLOWED_UP='
'

rank() {
    local i=0 l
    for l in $LAYERS; do
        if [ "$l" = "$1" ]; then echo $i; return; fi
        i=$((i + 1))
    done
    echo -1
}

layer_fail=0
while IFS= read -r f; do
    rel=${f#$CORE/}
    layer=${rel%%/*}
    r=$(rank "$layer")
    [ "$r" -lt 0 ] && continue
    while IFS= read -r h; do
        hl=${h%%/*}
        hr=$(rank "$hl")
        if [ "$hr" -lt 0 ]; then
            echo "lint: $f: includes \"$h\": not a layer path (include internal headers as \"layer/name_internal.h\")"
            layer_fail=1
        elif [ "$hr" -gt "$r" ]; then
            if ! printf '%s\n' "$ALLOWED_UP" | grep -q "^$rel -> $h "; then
                echo "lint: $f: includes \"$h\": $layer must not include the higher layer $hl (add a hook, or list the exception in scripts/lint.sh with its reason)"
                layer_fail=1
            fi
        fi
    done < <(sed -n 's/^#include "\([^"]*\)".*/\1/p' "$f")
done < <(find "$CORE" -path "$CORE/include" -prune -o \( -name '*.c' -o -name '*.h' \) -print | sort)
# a listed exception that no longer exists is stale: drop it from the list
while IFS= read -r line; do
    [ -z "$line" ] && continue
    src=${line%% -> *}
    rest=${line#* -> }
    hdr=${rest%% *}
    if [ ! -f "$CORE/$src" ] || ! grep -q "^#include \"$hdr\"" "$CORE/$src"; then
        echo "lint: scripts/lint.sh: the exception \"$src -> $hdr\" is gone from the code: remove it"
        layer_fail=1
    fi
done < <(printf '%s\n' "$ALLOWED_UP")
if [ $layer_fail -eq 0 ]; then
    echo "lint: layers ok ($(printf '%s\n' "$ALLOWED_UP" | grep -c ' -> ') listed upward includes)"
else
    status=1
fi

# ---- 2. pairing notes on non-relaxed atomics ---------------------------------------------------
atomics_out=$(find "$CORE" -path "$CORE/include" -prune -o \( -name '*.c' -o -name '*.h' \) \
        ! -name atomic_internal.h -print | sort | xargs awk '
    function note(s) { return s ~ /[Pp]air(s|ed)? with|[Ss]ee / }
    FNR == 1 { delete buf; total_file = FILENAME }
    { buf[FNR] = $0 }
    /^#[ \t]*define/ { next }
    {
        line = $0
        # every operation that starts on this line
        while (match(line, /cq__(load|store|xchg|cas|cas_weak|add|sub|or|and|fence)\(/)) {
            start = RSTART + RLENGTH
            # collect the call up to its closing parenthesis (it may span lines)
            text = substr(line, start); depth = 1; args = ""; ln = FNR; more = 0
            call_lines = buf[FNR]
            for (;;) {
                for (i = 1; i <= length(text); i++) {
                    c = substr(text, i, 1)
                    if (c == "(") depth++
                    else if (c == ")") { depth--; if (depth == 0) break }
                    args = args c
                }
                if (depth == 0) break
                if ((getline nxt) <= 0) break
                buf[FNR] = nxt; more = 1
                call_lines = call_lines "\n" nxt
                text = nxt
            }
            n = split(args, a, ",")
            order = a[n]; gsub(/[ \t]/, "", order)
            if (order != "relaxed" && order ~ /^(acquire|release|acq_rel|seq_cst|consume)$/) {
                ctx = call_lines
                for (k = ln - 3; k < ln; k++) if (k >= 1) ctx = ctx "\n" buf[k]
                gsub(/\n[ \t]*(\*[ \t]*)?/, " ", ctx) # a note may wrap between lines
                if (!note(ctx)) { printf "%s:%d: %s with no pairing note\n", FILENAME, ln, order; bad++ }
                total++
            }
            line = substr(line, start)
            if (more) { $0 = buf[FNR]; line = "" }
        }
    }
    END { printf "TOTAL %d %d\n", total, bad }')
atomics_bad=$(printf '%s\n' "$atomics_out" | awk '/^TOTAL/ { print $3 }')
atomics_total=$(printf '%s\n' "$atomics_out" | awk '/^TOTAL/ { print $2 }')
printf '%s\n' "$atomics_out" | grep -v '^TOTAL' | sed 's/^/lint: /'
if [ "${atomics_bad:-0}" -eq 0 ]; then
    echo "lint: atomics ok ($atomics_total non-relaxed operations, each with a pairing note)"
else
    echo "lint: $atomics_bad of $atomics_total non-relaxed atomic operations have no pairing note"
    status=1
fi

# ---- 3. clang-format ---------------------------------------------------------------------------
if [ -f .clang-format ]; then
    if command -v clang-format > /dev/null; then
        fmt_bad=0
        while IFS= read -r f; do
            if ! clang-format --dry-run -Werror "$f" > /dev/null 2>&1; then
                echo "lint: $f: not clang-formatted (clang-format -i $f)"
                fmt_bad=1
            fi
        done < <(find "$CORE" -path "$CORE/include" -prune -o \( -name '*.c' -o -name '*.h' \) -print | sort)
        if [ $fmt_bad -eq 0 ]; then
            echo "lint: format ok ($(clang-format --version | sed 's/.*version \([0-9.]*\).*/clang-format \1/'))"
        else
            status=1
        fi
    else
        echo "lint: format skipped: clang-format is not installed (apt-get install clang-format)"
    fi
fi

exit $status
