#!/bin/sh
# Checks a Promela model exhaustively with spin (see docs/model-checking.md).
#
#   spin_check.sh CC MODEL.pml WORK_DIR
#
# The model's header lists what to run:
#   " * check: FLAGS"            a configuration (spin -D flags) that must verify: no assertion
#                                violation, no invalid end state, search complete
#   " * mutant: NAME FLAGS: ..." a seeded bug (-DNAME, in the configuration FLAGS) that spin must
#                                report; its counterexample goes to WORK_DIR/NAME.trail.txt
# Exit status: 0 all good; 1 a check failed or a mutant was not caught; 77 (ctest "skipped")
# when spin is not installed.
set -u
CC=$1
MODEL=$2
WORK=$3
if ! command -v spin > /dev/null 2>&1; then
    echo "SKIPPED: spin is not installed (apt-get install spin)"
    exit 77
fi
mkdir -p "$WORK"
cd "$WORK" || exit 1
base=$(basename "$MODEL")
failed=0

# verify NAME FLAGS...: builds and runs pan; leaves its output in NAME.out
verify() {
    name=$1
    shift
    rm -f pan pan.[bchmpt] "$base.trail"
    if ! spin "$@" -a "$MODEL" > "$name.spin.log" 2>&1; then
        cat "$name.spin.log"
        return 2
    fi
    # SAFETY: safety properties only (assertions, end states); COLLAPSE: compressed states;
    # MEMLIM: fail rather than swap
    if ! "$CC" -O1 -w -DSAFETY -DCOLLAPSE -DMEMLIM=1536 -o pan pan.c > "$name.cc.log" 2>&1; then
        cat "$name.cc.log"
        return 2
    fi
    ./pan -m1000000 > "$name.out" 2>&1
    return 0
}

summary() {
    states=$(sed -n 's/^ *\([0-9e.+]*\) states, stored.*/\1/p' "$1.out")
    depth=$(sed -n 's/.*depth reached \([0-9]*\).*/\1/p' "$1.out")
    secs=$(sed -n 's/^pan: elapsed time \([0-9.e+]*\) seconds/\1/p' "$1.out")
    echo "$states states, depth $depth, ${secs:-0} s"
}

checks=$(sed -n 's/^ \* check:[ ]*//p' "$MODEL")
if ! grep -q '^ \* check:' "$MODEL"; then
    checks=""
fi
i=0
# one configuration per line (an empty line: the default configuration)
echo "$checks" | {
    while IFS= read -r flags; do
        i=$((i + 1))
        # shellcheck disable=SC2086
        verify "check$i" $flags || { failed=1; continue; }
        if grep -q 'errors: 0' "check$i.out" && ! grep -q 'max search depth too small' \
                "check$i.out" && ! grep -q 'MEMLIM' "check$i.out"; then
            echo "ok       $base ${flags:-(default)}: $(summary "check$i")"
        else
            echo "FAILED   $base ${flags:-(default)}:"
            cat "check$i.out"
            if [ -f "$base.trail" ]; then
                # shellcheck disable=SC2086
                spin -t -p -g -k "$base.trail" $flags "$MODEL" | head -200
            fi
            failed=1
        fi
    done
    exit $failed
}
failed=$?

grep '^ \* mutant:' "$MODEL" | sed 's/^ \* mutant:[ ]*//' > mutants.list
while IFS= read -r line; do
    spec=${line%%:*}
    what=${line#*: }
    # shellcheck disable=SC2086
    set -- $spec
    name=$1
    shift
    verify "$name" "-D$name" "$@" || { failed=1; continue; }
    if grep -q 'errors: [1-9]' "$name.out"; then
        spin -t -p -g -k "$base.trail" "-D$name" "$@" "$MODEL" > "$name.trail.txt" 2>&1
        echo "caught   $name ($what): $(grep -m1 -o 'assertion violated.*\|invalid end state.*' \
            "$name.out"), counterexample of $(grep -c '^ *[0-9]*:[[:space:]]*proc' "$name.trail.txt") steps"
    else
        echo "MISSED   $name ($what): spin found no violation"
        failed=1
    fi
done < mutants.list
exit $failed
